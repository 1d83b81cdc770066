"""Running one fuzz program: build it with Ember and as its oracle, compile, run, check, classify.

`run_one(seed, mode, device)` is what bench/fuzz_gpu.py's workers and tests/test_fuzz.py call. The
oracle is numpy's `em.reference` (float64) in small mode and torch in float64 (on the GPU when there
is one) at realistic sizes; in small mode torch's float64 evaluation is also checked against
`em.reference` (`cross_check`), so the torch oracle used at realistic sizes is itself verified.

Outcomes: "ok", "wrong" (an output outside tolerance, or two runs of the same program that differ
bit for bit: a race), "unsupported" (Ember refuses the program: NotImplementedError,
UnsupportedKernel), "error" (anything else Ember raised: a compiler fault too), "oracle_mismatch"
(torch and em.reference disagree: a fault of the fuzzer or of the reference).
"""
from __future__ import annotations

import time
import traceback

import numpy as np

from .fuzz import FuzzProgram, check, compare, generate, magnitudes
from .fuzz_ops import OPS, build_ember

LOCAL_SHARE = 0.15  # graphs lowered with kernel-local arrays (the GPU's rowlocal mode)
PRESET = "h100"  # compile-only runs: the H100's values, with or without a GPU here (where Targets exist)
CROSS_RTOL = 1e-5  # torch float64 vs em.reference: only Ember's own float32-accurate approximations differ
# ... and, through a cast or a 16-bit output, a value on a rounding boundary can round either way: 2 ulps
ULP = {"float32": 2.0 ** -23, "bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}


def uses_local(prog: FuzzProgram) -> bool:
    return bool(np.random.default_rng([prog.seed, 99]).random() < LOCAL_SHARE)


def _target(device: str | None):
    """The Target of `device`; None (the default thresholds) for the generator's device-free count."""
    from ..backends.target import get_target
    return None if device is None else get_target(device)


def lowered(prog: FuzzProgram, local: bool = False, device: str | None = None):
    """The program's kernels as em.compile lowers them for `device`; with no device (the generator's
    kernel count), the default split thresholds, so a seed's program is the same on every machine."""
    from ..kernel.lower import lower
    vals = build_ember(prog)
    nodes, names = [vals[o].node for o in prog.outputs], list(prog.outputs)
    return lower(nodes, names, local=local, target=_target(device))


def cuda_available() -> bool:
    from ..backends.cuda_target import cuda_available as available
    return available()


# ------------------------------------------------------------------------------------------------
# inputs and oracles


def make_inputs(prog: FuzzProgram, torch_device: str | None = None) -> dict:
    """Uniform(-scale, scale) data per input, drawn from the seed: numpy arrays, or torch tensors
    generated on `torch_device` (realistic sizes on the GPU: no host work, no copies)."""
    out = {}
    for i, s in enumerate(prog.inputs):
        shape, dtype, scale = s.params["shape"], s.params["dtype"], s.params["scale"]
        if torch_device is None:
            from .. import dtypes as dt
            rng = np.random.default_rng([prog.seed, i, 7])
            a = (np.asarray(rng.random(shape, dtype=np.float32)) * 2 - 1) * np.float32(scale)
            out[s.out] = np.asarray(a.astype(dt.BY_NAME[dtype].np))
        else:
            import torch
            g = torch.Generator(device=torch_device).manual_seed(prog.seed * 1009 + i)
            t = torch.rand(shape, generator=g, device=torch_device, dtype=torch.float32) * 2 - 1
            out[s.out] = (t * scale).to(getattr(torch, dtype)).contiguous()
    return out


def _round_output(prog: FuzzProgram, name: str, x, torch_mod=None):
    d = prog.vars[name].dtype
    if d in ("bfloat16", "float16"):
        return x.to(getattr(torch_mod, d)).to(torch_mod.float64)
    return x


def torch_oracle(prog: FuzzProgram, inputs: dict, device: str | None = None) -> tuple[dict, dict]:
    """Every value of the program in float64 with torch (numpy inputs are moved to `device`), and
    the max |finite value| of each."""
    import torch
    import torch.nn.functional as F
    vals: dict = {}
    for s in prog.steps:
        if s.op == "input":
            x = inputs[s.out]
            if isinstance(x, np.ndarray):
                x = torch.from_numpy(np.asarray(x, dtype=np.float64)).to(device or "cpu")
            vals[s.out] = x.to(torch.float64)
        else:
            vals[s.out] = OPS[s.op].torch(torch, F, *[vals[a] for a in s.args], **s.params)
    for o in prog.outputs:
        vals[o] = _round_output(prog, o, vals[o], torch)
    names = [n for n in vals if vals[n].is_floating_point() and vals[n].numel()]
    stats = [torch.nan_to_num(vals[n].abs(), nan=0.0, posinf=0.0).max() for n in names]
    for s in prog.steps:  # the smallest standard deviation each layer_norm divides by
        if s.op == "layer_norm":
            x, n = vals[s.args[0]], s.params["n"]
            names.append(f"{s.out}:sigma")
            stats.append((x.var(dim=tuple(range(x.ndim - n, x.ndim)), unbiased=False).min() + 1e-5).sqrt())
    maxabs = dict(zip(names, torch.stack(stats).tolist())) if stats else {}
    return vals, maxabs


def reference_oracle(prog: FuzzProgram, inputs: dict) -> tuple[dict, dict]:
    """Every value of the program with numpy's em.reference (float64), and their max |finite value|."""
    import ember as em
    vals = build_ember(prog)
    names = [s.out for s in prog.steps if s.op != "input"]
    refs = em.reference([vals[n] for n in names], **{s.out: inputs[s.out] for s in prog.inputs})
    out = dict(zip(names, refs))
    out.update({s.out: inputs[s.out] for s in prog.inputs})
    maxabs = {}
    for n, a in out.items():
        a = np.asarray(a, dtype=np.float64)
        fin = np.abs(a[np.isfinite(a)])
        maxabs[n] = float(fin.max()) if fin.size else 0.0
    for s in prog.steps:  # the smallest standard deviation each layer_norm divides by
        if s.op == "layer_norm":
            x, n = np.asarray(out[s.args[0]], dtype=np.float64), s.params["n"]
            maxabs[f"{s.out}:sigma"] = float(np.sqrt(x.var(axis=tuple(range(x.ndim - n, x.ndim))).min() + 1e-5))
    return out, maxabs


def cross_check(prog: FuzzProgram, inputs: dict, device: str | None = None) -> str:
    """'' if torch's float64 evaluation agrees with em.reference on every output, else why not."""
    t_vals, _ = torch_oracle(prog, inputs, device)
    r_vals, r_max = reference_oracle(prog, inputs)
    mag = magnitudes(prog, r_max)
    for o in prog.outputs:
        rtol = CROSS_RTOL + 2 * ULP.get(prog.vars[o].prec, 0.0)
        ok, _, _, why = compare(t_vals[o].cpu().numpy(), r_vals[o], rtol, mag[o],
                                      exact=prog.vars[o].dtype.startswith("int"))
        if not ok:
            return f"{o}: torch vs em.reference: {why}"
    return ""


# ------------------------------------------------------------------------------------------------
# coverage: which lowering paths and kernel modes a program used


def split_tags(nodes: list, device: str | None = None) -> set:
    """'splitk' / 'split_reduce' when kernel/split.py splits a contraction / a long reduction."""
    from .. import graph as g
    from ..kernel.contraction import is_gemm_shaped
    from ..kernel.split import DEFAULT_POLICY, _split
    target = _target(device)
    policy = target.split if target is not None else DEFAULT_POLICY
    return {"splitk" if is_gemm_shaped(n) else "split_reduce"
            for n in g.toposort(nodes) if n.op in g.REDUCE and _split(n, policy) is not None}


def config_tags(cfgs: list) -> set:
    tags = set()
    for c in cfgs:
        if not c:
            continue
        tags.add(f"mode:{c.get('mode')}")
        if int(c.get("cluster", 1)) > 1:
            tags.add("cluster")
        if "cache" in c:
            tags.add(f"cache:{c['cache']}")
    return tags


def coverage(prog: FuzzProgram, low, program, device: str, local: bool) -> list:
    if device == "cuda":
        cfgs = [l.config.get("cfg", {}) for l in program.launches]
    else:  # what the GPU would run: the CUDA schedule of the same kernels
        from ..codegen.cuda import default_config
        cfgs = []
        for k, _ in low.kernels:
            try:
                cfgs.append(default_config(k))
            except Exception:  # noqa: BLE001 - coverage only
                pass
    vals = build_ember(prog)
    tags = config_tags(cfgs) | split_tags([vals[o].node for o in prog.outputs], device)
    tags |= {f"family:{prog.family}", f"kernels:{len(low.kernels)}"}
    tags |= {f"dtype:{prog.vars[o].prec}" for o in prog.outputs}
    if local:
        tags.add("local")
    return sorted(tags)


# ------------------------------------------------------------------------------------------------
# one program end to end


def _unsupported(e: BaseException) -> bool:
    from ..kernel.structure import UnsupportedKernel
    return isinstance(e, (NotImplementedError, UnsupportedKernel))


def _short(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f" at {tb[-1].filename.rsplit('/', 2)[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}{where}"


def compile_program(prog: FuzzProgram, device: str, local: bool):
    """em.compile's default path (search='none'), with the local lowering when `local`."""
    from ..pipeline import build_program
    low = lowered(prog, local, device)
    return low, build_program(low, device, list(prog.outputs), "tuple")


def run_one(seed: int, mode: str = "small", device: str = "cpu", oracle: str | None = None,
            cross: bool | None = None) -> dict:
    """Generate, compile, run and check the program of `seed`. oracle: 'reference' (numpy) or
    'torch' (float64, on the GPU when device is cuda); default: reference in small mode, torch at
    realistic sizes. cross: also check torch against em.reference (default: in small mode when
    torch is importable)."""
    res: dict = {"seed": seed, "mode": mode}
    t0 = time.perf_counter()
    try:
        prog = generate(seed, mode)
    except Exception as e:  # noqa: BLE001 - a generator fault is reported, not fatal
        return dict(res, outcome="error", stage="generate", error=_short(e))
    res.update(family=prog.family, program=prog.text())
    oracle = oracle or ("reference" if mode == "small" else "torch")
    local = uses_local(prog)
    stage = "compile"
    try:
        low, program = compile_program(prog, device, local)
        res["kernels"] = len(low.kernels)
        res["coverage"] = coverage(prog, low, program, device, local)
        t1 = time.perf_counter()
        if hasattr(program.executor, "poison"):
            program.executor.poison = True  # outputs start as NaN: an unwritten element shows
        stage = "inputs"
        torch_dev = "cuda" if (device == "cuda" and oracle == "torch") else None
        inputs = make_inputs(prog, torch_dev)
        stage = "run"
        outs = list(program(**inputs))
        if device == "cuda":  # a second run (a captured graph): bitwise the same, or a race
            again = list(program(**inputs))
            for o, a, name in zip(outs, again, prog.outputs):
                same, err, _, _ = compare(a, o, 0.0, exact=True)
                if not same:
                    return dict(res, outcome="wrong", stage="rerun", output=name, max_err=err,
                                why="two runs of the program differ (a race or uninitialised memory)")
        t2 = time.perf_counter()
        stage = "oracle"
        if oracle == "torch":
            refs, maxabs = torch_oracle(prog, inputs, "cuda" if device == "cuda" else None)
        else:
            refs, maxabs = reference_oracle(prog, inputs)
        checks = check(prog, outs, refs, maxabs)
        if cross if cross is not None else (mode == "small" and _have_torch()):
            stage = "cross_check"
            why = cross_check(prog, inputs, "cuda" if device == "cuda" else None)
            if why:
                return dict(res, outcome="oracle_mismatch", why=why)
    except Exception as e:  # noqa: BLE001 - classified
        return dict(res, outcome="unsupported" if _unsupported(e) else "error", stage=stage, error=_short(e))
    res["times"] = {"compile": round(t1 - t0, 4), "run": round(t2 - t1, 4), "check": round(time.perf_counter() - t2, 4)}
    bad = [c for c in checks if not c.ok]
    res["err_ratio"] = max((c.err / c.bound if c.bound else c.err) for c in checks) if checks else 0.0
    if bad:
        c = bad[0]
        return dict(res, outcome="wrong", output=c.name, err=c.err, bound=c.bound, why=c.why)
    return dict(res, outcome="ok")


def _have_torch() -> bool:
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def compile_cuda_only(seed: int, mode: str = "realistic", arch: str = "sm_90a") -> dict:
    """Generate the program of `seed`, lower it, render its CUDA and compile every kernel with NVRTC
    (no GPU needed): CI's check that the fuzzer's realistic shapes at least compile. Returns the
    seed, kernel count, coverage tags and seconds, or the error."""
    from ..backends.cuda import compile_cuda
    from ..codegen.cuda import render_program, split_program
    t0 = time.perf_counter()
    res: dict = {"seed": seed, "mode": mode}
    try:
        prog = generate(seed, mode)
        res["program"] = prog.text()
        local = uses_local(prog)
        low = lowered(prog, local, PRESET)
        source, launches = render_program(low.kernels)
        prelude, kernels = split_program(source)
        for src in kernels.values():
            compile_cuda(prelude + "\n" + src, arch)
        vals = build_ember(prog)
        tags = config_tags([l.get("cfg", {}) for l in launches])
        tags |= split_tags([vals[o].node for o in prog.outputs], PRESET)
        res.update(outcome="ok", kernels=len(low.kernels), coverage=sorted(tags))
    except Exception as e:  # noqa: BLE001 - classified
        res.update(outcome="unsupported" if _unsupported(e) else "error", error=_short(e))
    res["seconds"] = round(time.perf_counter() - t0, 3)
    return res
