"""KernelBench-style runner: Ember against PyTorch eager and torch.compile on a directory of problems.

    python bench/kernelbench.py kernelbench/ --device cuda --seeds 5 [--search none|fast] [--level 1]
    ember bench kernelbench kernelbench/ --device cpu --scale 0.1

A problem is one Python file defining `Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`
(KernelBench's format; any directory of such files works; `levelN/` folders give the level). For each
problem:

1. Load, `torch.manual_seed(42)`, `Model(*get_init_inputs())`. The model stays in the mode its
   constructor left it in (KernelBench never calls .eval(): BatchNorm uses batch statistics).
2. Import into Ember (`torch.export` -> Ember graph; an op Ember cannot import is reported with its
   name and location, status "unsupported") and compile (`em.compile`, search as asked).
3. Correctness on `--seeds` input sets (`torch.manual_seed(seed_i)`, fresh `get_inputs()` each): the
   reference is the model in float64 (weights and floating inputs upcast; float32 eager with TF32 off
   if float64 is impossible). Pass: same shape, no NaN/Inf where the reference is finite, and
   max|out - ref| <= tol + tol * max|ref| with tol 1e-4 (float32) or 1e-2 (float16/bfloat16), the
   global bound of docs/architecture.md. The reference runs first and its outputs stay alive while Ember runs
   on the same inputs, with Ember's output buffers poisoned (0xFF) before each run. PyTorch eager's
   own error against the same reference is recorded for context. torch's generator state is
   restored before each of the three runs, so a model that draws (dropout in training mode) draws
   the same numbers in all of them; such a model is flagged `stochastic` and its outputs after
   timing (new draws every call) are not compared.
4. Timing (correct problems only), for Ember, eager and torch.compile under one protocol: warm-up,
   then per trial the inputs are refilled in place from alternating input sets (so an output can
   never be replayed from an earlier call: the content changes under the same pointers), the L2
   cache is flushed (CUDA, 256 MB write), the device synchronised, then CUDA events on the current
   stream around one call; the median is reported. Ember queues its work on torch's current stream,
   so the events bracket it; the wall time with a device-wide synchronise is recorded as well and a
   disagreement is flagged. After timing, the outputs of the last two trials
   (two different input sets) are checked against the references of the sets they were computed
   from, so a replayed output fails. On the CPU the host clock is used.
5. Metrics per level: fast_p = fraction of *all* problems of the level that are correct and faster
   than the baseline by more than p (p = 0, 1, 1.5), and the geometric-mean speedup over the correct
   problems, against eager and against torch.compile. Speedups over 10x are flagged for review, as
   are problems whose reference output does not change with the inputs.

JSON goes to bench/results/kernelbench-<device>-<date>.json (or --out) and a table is printed.
`--scale s` multiplies a problem's size constants listed in its optional `SCALABLE` dict
({name: minimum}, default {"batch_size": 1}) by s, for running a GPU-sized suite on a CPU.
`--shrink f` divides every integer size constant (and tuple or list of them) a problem defines from 64 up
by f: a CPU correctness survey of the real KernelBench (`--no-timing`); a problem the smaller sizes
break in PyTorch itself (a hard-coded classifier width) reports a load or import error.
"""
from __future__ import annotations

import argparse
import copy
import datetime
import gc
import json
import math
import os
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
# Two OpenMP runtimes share this process (PyTorch's and the one Ember's C code links): with the
# default spin-waiting, idle threads of one steal the cores of the other and CPU timings turn
# into scheduler noise. Passive waiting must be chosen before either runtime loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
from ember import graph as em_graph  # noqa: E402
from ember.frontends import pytorch as fe  # noqa: E402
from ember.precision import TF32_TOL  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402

sys.path.insert(0, HERE)
from kernelbench_problems import SHRINK_FROM, discover, load, sample_problems  # noqa: E402,F401 - (re-exported)
from kernelbench_report import environment, geomean, summarize, table  # noqa: E402,F401 - (re-exported)

TOL = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
PRECISIONS = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
REVIEW_SPEEDUP = 10.0
COMPARE_CHUNK = 1 << 26  # elements compared in float64 at a time
BIG_INPUTS = 2 << 30  # bytes of one input set above which the reference is float32 eager (TF32 off), not float64


# ------------------------------------------------------------------------------------------------
# problems

def _to(x, device, precision):
    if isinstance(x, torch.Tensor):
        x = x.to(device)
        if precision is not None and x.is_floating_point():
            x = x.to(precision)
    return x


def make_inputs(mod, seed: int, device: str, precision):
    torch.manual_seed(seed)
    return [_to(x, device, precision) for x in mod.get_inputs()]


def problem_graph(path: str, precision: str = "float32", device: str = "cuda"):
    """A problem file's module (seed 42), its first input set on `device` and its Ember graph: what
    the one-problem tools (kernel_vs_host, profile_problem, knob_sweep) start from."""
    mod, _ = load(path, 1.0)
    torch.manual_seed(42)
    model = mod.Model(*mod.get_init_inputs()).to(device)
    xs = make_inputs(mod, 1, device, torch.float32)
    with torch.no_grad():
        graph = fe.import_graph(fe.export(copy.deepcopy(model), tuple(xs)), precision=precision)
    return model, xs, graph


def trial_seeds(n: int) -> list:
    g = torch.Generator().manual_seed(42)
    return [int(s) for s in torch.randint(0, 2 ** 31 - 1, (n,), generator=g)]


# ------------------------------------------------------------------------------------------------
# correctness

def flat_tensors(out) -> list:
    leaves, _ = tree_flatten(out)
    return [x for x in leaves if isinstance(x, torch.Tensor)]


def compare(out, ref, tol: float) -> dict:
    """the criterion of docs/architecture.md on every output tensor; the worst one is reported."""
    outs, refs = flat_tensors(out), flat_tensors(ref)
    if len(outs) != len(refs):
        return {"ok": False, "reason": f"{len(outs)} output tensors, reference has {len(refs)}"}
    worst = {"ok": True, "max_abs_err": 0.0, "max_abs_ref": 0.0}
    for i, (o, r) in enumerate(zip(outs, refs)):
        if tuple(o.shape) != tuple(r.shape):
            return {"ok": False, "reason": f"output {i}: shape {tuple(o.shape)}, reference {tuple(r.shape)}"}
        if o.dtype == torch.bool:
            if not torch.equal(o.to(r.device), r):
                return {"ok": False, "reason": f"output {i}: boolean values differ"}
            continue
        err = mref = 0.0
        any_finite = False
        of, rf = o.detach().reshape(-1), r.detach().reshape(-1)
        for c0 in range(0, max(rf.numel(), 1), COMPARE_CHUNK):  # in float64, a chunk at a time (outputs of GBs)
            o64 = of[c0:c0 + COMPARE_CHUNK].to(device=rf.device, dtype=torch.float64)
            r64 = rf[c0:c0 + COMPARE_CHUNK].to(torch.float64)
            fin = torch.isfinite(r64)
            if not bool(fin.all()):
                if not torch.equal(torch.isnan(o64), torch.isnan(r64)) or not torch.equal(o64[torch.isinf(r64)], r64[torch.isinf(r64)]):
                    return {"ok": False, "reason": f"output {i}: non-finite values differ from the reference"}
            if not bool(torch.isfinite(o64[fin]).all()):
                return {"ok": False, "reason": f"output {i}: NaN/Inf where the reference is finite"}
            if fin.any():
                any_finite = True
                err = max(err, float((o64[fin] - r64[fin]).abs().max()))
                mref = max(mref, float(r64[fin].abs().max()))
            del o64, r64, fin
        if not any_finite:
            continue
        ok = err <= tol + tol * mref
        if not ok or err > worst["max_abs_err"]:
            worst = {"ok": bool(ok and worst["ok"]), "max_abs_err": err, "max_abs_ref": mref}
            if not ok:
                worst["reason"] = f"output {i}: max|out-ref| = {err:.3g} > {tol} + {tol}*{mref:.3g}"
                return worst
    return worst


def reference_model(model):
    """float64 copy of the model (weights upcast exactly), or None when that fails."""
    try:
        return copy.deepcopy(model).to(torch.float64)
    except Exception:  # noqa: BLE001
        return None


def run_reference(ref_model, model, xs):
    """float64 reference outputs, else float32 eager with TF32 off. Returns (outputs, kind)."""
    if ref_model is not None:
        try:
            x64 = [x.to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in xs]
            return ref_model(*x64), "float64"
        except Exception:  # noqa: BLE001 - e.g. an op without a float64 kernel: fall back
            pass
    flags = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        return copy.deepcopy(model)(*xs), "eager-no-tf32"
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags


def _rng_state(device: str):
    """torch's generator state: restored before the reference, Ember and eager each run, so a model
    that draws (dropout in training mode) draws the same numbers in all three — Ember draws from
    torch's generator at call time, as eager does."""
    return torch.get_rng_state(), (torch.cuda.get_rng_state() if device == "cuda" else None)


def _set_rng_state(state) -> None:
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state(state[1])


def _poison(fn, on: bool):
    prog = getattr(fn, "program", None)
    if prog is not None and prog.executor is not None and hasattr(prog.executor, "poison"):
        prog.executor.poison = on


# ------------------------------------------------------------------------------------------------
# timing

class Timer:
    def __init__(self, device: str, warmup: int, trials: int, flush: bool):
        self.device, self.warmup, self.trials = device, warmup, trials
        self.flush_buf = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda") \
            if device == "cuda" and flush else None

    def sync(self):
        if self.device == "cuda":
            torch.cuda.synchronize()

    def run(self, call, live: list, pool: list):
        """Median time of `call(*live)`; before every call the tensors of `live` are refilled from
        the next input set of `pool` (same pointers, new content). Returns the times (ms) and the
        outputs of the last two trials with the index of the input set each came from: they saw
        different contents, so an output replayed from an earlier call fails at least one check."""
        def refill(k):
            src = pool[k % len(pool)]
            for d, s in zip(live, src):
                if isinstance(d, torch.Tensor):
                    d.copy_(s)
            return k % len(pool)

        for w in range(self.warmup):
            refill(w)
            call(*live)
        self.sync()
        ev, wall, last = [], [], []
        for t in range(self.trials):
            k = refill(t)
            if len(last) == 2:
                last.pop(0)  # free an old output before the next call
            if self.flush_buf is not None:
                self.flush_buf.fill_(t)
            self.sync()
            if self.device == "cuda":
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                h0 = time.perf_counter()
                e0.record()
                out = call(*live)
                e1.record()
                torch.cuda.synchronize()  # device-wide: work on any stream has finished
                wall.append((time.perf_counter() - h0) * 1e3)
                ev.append(e0.elapsed_time(e1))
            else:
                h0 = time.perf_counter()
                out = call(*live)
                wall.append((time.perf_counter() - h0) * 1e3)
            if t >= self.trials - 2:
                last.append((out, k))
            del out
        times = ev if ev else wall
        res = {"ms": float(np.median(times)), "mean_ms": float(np.mean(times)), "min_ms": float(np.min(times)),
               "max_ms": float(np.max(times)), "std_ms": float(np.std(times)), "wall_ms": float(np.median(wall)),
               "trials": self.trials}
        return res, last


# ------------------------------------------------------------------------------------------------
# one problem

def run_problem(prob: dict, args, timer: Timer) -> dict:
    rec = {"name": prob["name"], "level": prob["level"], "path": os.path.relpath(prob["path"]), "status": "?"}
    device = args.device
    precision = PRECISIONS[args.precision]
    tol = TOL[str(precision).split(".")[1]]
    rec["tolerance"] = tol
    try:
        mod, sizes = load(prob["path"], args.scale, dict(args.set or []), args.shrink)
        if sizes:
            rec["scaled_sizes"] = sizes
        torch.manual_seed(42)
        model = mod.Model(*mod.get_init_inputs()).to(device)
        if precision != torch.float32:
            model = model.to(precision)
    except Exception as e:  # noqa: BLE001
        rec.update(status="load_error", error=f"{type(e).__name__}: {e}")
        return rec
    rec["training_mode"] = bool(model.training)
    seeds = trial_seeds(args.seeds)
    # ---------------------------------------------------------------- import + compile
    ember_model = copy.deepcopy(model)
    xs0 = make_inputs(mod, seeds[0], device, precision)
    big = sum(x.numel() * x.element_size() for x in xs0 if isinstance(x, torch.Tensor)) > BIG_INPUTS
    try:
        t0 = time.perf_counter()
        with torch.no_grad():
            ep = fe.export(ember_model, tuple(xs0))
            graph = fe.import_graph(ep, precision=args.ember_precision)
        rec["import_s"] = round(time.perf_counter() - t0, 3)
        n_tf32 = sum(em_graph.is_tf32(n) for n in em_graph.toposort([o.node for o in graph.outputs if hasattr(o, "node")]))
        if n_tf32:  # contractions the user let use TF32: TF32's tolerance for float32 outputs
            rec["tf32_contractions"] = n_tf32
            if precision == torch.float32:
                tol = rec["tolerance"] = TF32_TOL
    except fe.UnsupportedOpError as e:
        rec.update(status="unsupported", error=str(e))
        return rec
    except Exception as e:  # noqa: BLE001
        rec.update(status="import_error", error=f"{type(e).__name__}: {e}")
        return rec
    xs0 = ep = None  # noqa: F841 - (GBs on the largest problems)
    try:
        t0 = time.perf_counter()
        opts = {"time_limit": args.search_time, "progress": False} if args.search != "none" else {}
        fn = fe.TorchFunction(ember_model, graph, device, args.search, **opts)
        rec["compile_s"] = round(time.perf_counter() - t0, 3)
        if fn.program is not None:
            rec["kernels"] = len(fn.program.launches)
    except Exception as e:  # noqa: BLE001
        rec.update(status="compile_error", error=f"{type(e).__name__}: {_short(e)}")
        if args.verbose:
            traceback.print_exc()
        return rec
    # ---------------------------------------------------------------- correctness
    ref_model = None if big else reference_model(model)  # (float64 copies of GBs of inputs would not fit)
    eager_model = copy.deepcopy(model)
    pool, refs, trials = [], [], []
    try:
        with torch.no_grad():
            for i, s in enumerate(seeds):
                xs = make_inputs(mod, s, device, precision)
                rng = _rng_state(device)
                ref, kind = run_reference(ref_model, model, xs)
                rec["reference"] = kind
                _poison(fn, True)
                _set_rng_state(rng)
                out = fn(*xs)
                _poison(fn, False)
                c = compare(out, ref, tol)
                c["seed"] = s
                trials.append(c)
                if i == 0:
                    _set_rng_state(rng)
                    try:
                        first = eager_model(*xs)
                    except Exception as e:  # noqa: BLE001 - eager's own failure (an op torch lacks for the dtype) is not Ember's
                        rec["eager_error"] = f"{type(e).__name__}: {_short(e, 200)}"
                    else:
                        e = compare(first, ref, tol)
                        rec["eager_max_abs_err"] = e.get("max_abs_err")
                        rec["eager_within_tol"] = e["ok"]
                        if not compare(eager_model(*xs), first, tol)["ok"]:  # the generator moved on: it draws
                            rec["stochastic"] = True
                        del first
                if i == 1:
                    r0 = refs[0]
                    same = compare(ref, r0, tol)
                    if same["ok"]:
                        rec.setdefault("flags", []).append("output does not depend on the inputs (degenerate)")
                if len(pool) < 2:
                    pool.append(xs)
                    refs.append(tuple(r.to(torch.float32) if r.is_floating_point() else r for r in flat_tensors(ref)))
                del out, ref
    except Exception as e:  # noqa: BLE001
        rec.update(status="runtime_error", error=f"{type(e).__name__}: {_short(e)}", trials=trials)
        if args.verbose:
            traceback.print_exc()
        return rec
    rec["trials"] = trials
    rec["max_abs_err"] = max(t.get("max_abs_err", math.inf) for t in trials)
    if not all(t["ok"] for t in trials):
        rec["status"] = "incorrect"
        rec["error"] = next(t["reason"] for t in trials if not t["ok"])
        if rec.get("eager_within_tol") is False:  # (TF32 over a deep network: eager fails it as well)
            rec.setdefault("flags", []).append(
                f"PyTorch eager's own error {rec['eager_max_abs_err']:.3g} is outside the tolerance too")
        return rec
    rec["status"] = "correct"
    if args.no_timing:
        return rec
    # ---------------------------------------------------------------- timing
    live = [x.clone() if isinstance(x, torch.Tensor) else x for x in pool[0]]
    impls = [("ember", fn), ("eager", eager_model)]
    if not args.no_compile:
        try:
            torch._dynamo.reset()
            impls.append(("compile", torch.compile(copy.deepcopy(model), mode=args.compile_mode)))
        except Exception as e:  # noqa: BLE001
            rec["compile_baseline_error"] = f"{type(e).__name__}: {_short(e)}"
    for name, call in impls:
        try:
            with torch.no_grad():
                t, last = timer.run(call, live, pool)
                post = {"ok": True}
                # (a model that draws numbers draws new ones every timed call: its outputs cannot be
                # checked against the seeded references; the seeded runs above checked it)
                for out, k in ([] if rec.get("stochastic") else last):
                    post = compare(out, refs[k], tol)
                    if not post["ok"]:
                        break
                del last
        except Exception as e:  # noqa: BLE001
            rec[f"{name}_error"] = f"{type(e).__name__}: {_short(e)}"
            if name == "ember":
                rec["status"] = "runtime_error"
                return rec
            continue
        rec[f"{name}_ms"] = t["ms"]
        rec[f"{name}_timing"] = t
        if name == "ember":
            if not post["ok"]:
                rec["status"] = "incorrect"
                rec["error"] = "after timing: " + post.get("reason", "")
                return rec
            if device == "cuda" and t["wall_ms"] > 1.5 * t["ms"] + 0.05:
                rec.setdefault("flags", []).append(
                    f"wall time {t['wall_ms']:.3f} ms (device-wide sync) exceeds event time {t['ms']:.3f} ms")
        elif not post["ok"]:
            rec.setdefault("flags", []).append(f"{name} baseline output after timing: {post.get('reason')}")
    for b in ("eager", "compile"):
        if f"{b}_ms" in rec:
            rec[f"speedup_vs_{b}"] = rec[f"{b}_ms"] / rec["ember_ms"]
            if rec[f"speedup_vs_{b}"] > REVIEW_SPEEDUP:
                rec.setdefault("flags", []).append(f"speedup vs {b} over {REVIEW_SPEEDUP:g}x: review")
    return rec


def with_float32_fallback(prob: dict, args, timer: Timer, tf32_rec: dict) -> dict:
    """A problem outside the tolerance with TF32 contractions (PyTorch's own choice under
    --ember-precision torch: cuDNN convs in TF32; over a deep network in training mode eager fails it
    as well) compiled again at float32 accuracy (3xTF32) and checked at float32's tolerance. What a
    user who needs the answer right does; the record keeps the TF32 attempt and is flagged."""
    rec = run_problem(prob, argparse.Namespace(**{**vars(args), "ember_precision": "float32"}), timer)
    rec["precision_fallback"] = {k: tf32_rec.get(k) for k in
                                 ("tf32_contractions", "max_abs_err", "error", "eager_max_abs_err", "eager_within_tol")}
    e = tf32_rec.get("eager_max_abs_err")  # (None where eager itself errored or was not checked)
    rec.setdefault("flags", []).append(
        f"TF32 ({args.ember_precision}) was {tf32_rec.get('max_abs_err', 0):.3g} off (eager "
        f"{'not measured' if e is None else format(e, '.3g')}): Ember ran it at float32 accuracy (--precision-fallback)")
    return rec


def _size_override(text: str) -> tuple:
    name, eq, value = text.partition("=")
    if not eq or not name.isidentifier() or not value.lstrip("-").isdigit():
        raise argparse.ArgumentTypeError(f"--set takes NAME=INT, got {text!r}")
    return name, int(value)


def _short(e: Exception, n: int = 600) -> str:
    s = str(e)
    return s if len(s) <= n else s[:n] + " ..."


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("path", help="a directory of problem files (levelN/ subfolders), or one file")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cuda", "cpu"])
    p.add_argument("--seeds", type=int, default=5, help="correctness input sets per problem (default 5)")
    p.add_argument("--search", default="none", choices=["none", "fast", "full"])
    p.add_argument("--search-time", type=float, default=60.0, help="search time limit per problem (s)")
    p.add_argument("--level", type=int, default=None)
    p.add_argument("--only", default=None, help="run problems whose name contains this (comma-separated: any of these)")
    p.add_argument("--scale", type=float, default=1.0, help="multiply SCALABLE sizes (for CPU runs)")
    p.add_argument("--shrink", type=float, default=1.0, help="divide every integer size constant of a problem "
                   f"from {SHRINK_FROM} up by this (a correctness survey of a GPU-sized suite on a CPU)")
    p.add_argument("--set", action="append", type=_size_override, metavar="NAME=INT",
                   help="set a size constant the problems define (e.g. seq_len=64); recorded as scaled_sizes")
    p.add_argument("--precision", default="fp32", choices=sorted(PRECISIONS))
    p.add_argument("--trials", type=int, default=None, help="timed calls, at least 2 (default 100 on CUDA, 10 on CPU)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up calls (default 5 on CUDA, 2 on CPU)")
    p.add_argument("--no-l2-flush", action="store_true")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    p.add_argument("--compile-mode", default=None, help="torch.compile mode (default: inductor default)")
    p.add_argument("--no-tf32", action="store_true", help="baselines in strict float32 (PyTorch's default "
                   "lets cuDNN convolutions use TF32)")
    p.add_argument("--ember-precision", default="float32", choices=list(fe.PRECISIONS),
                   help="Ember's float32 contractions: float32 accuracy (default), TF32, or as PyTorch's "
                   "current TF32 flags have them ('torch': convs in TF32 like cuDNN, matmuls not); problems "
                   f"with TF32 contractions are checked at tol {TF32_TOL:g}")
    p.add_argument("--precision-fallback", action="store_true",
                   help="a problem that fails with TF32 contractions is compiled again at float32 accuracy "
                   "(3xTF32) and checked at float32's tolerance; the record is flagged and keeps the TF32 error")
    p.add_argument("--no-timing", action="store_true", help="correctness only")
    p.add_argument("--out", default=None)
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--sample", type=int, default=None,
                   help="draw this many problems per level at random (seed --sample-seed; the draw is recorded)")
    p.add_argument("--sample-seed", type=int, default=0)
    p.add_argument("--time-budget", type=float, default=None,
                   help="start no new problem after this many seconds (the JSON stays partial)")
    p.add_argument("--resume", action="store_true", help="keep the problems already in --out and run the rest")
    args = p.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda but torch sees no GPU")
    if args.no_tf32:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    trials = max(2, args.trials or (100 if args.device == "cuda" else 10))
    warmup = args.warmup if args.warmup is not None else (5 if args.device == "cuda" else 2)
    timer = Timer(args.device, warmup, trials, not args.no_l2_flush)
    probs = discover(args.path)
    if args.sample is not None:  # drawn from every level, then filtered: `--level 3` keeps the same draw
        probs = sample_problems(probs, args.sample, args.sample_seed)
    if args.level is not None:
        probs = [q for q in probs if q["level"] == args.level]
    if args.only:
        probs = [q for q in probs if any(o in q["name"] for o in args.only.split(","))]
    if not probs:
        print(f"no problem files under {args.path}", file=sys.stderr)
        return 2
    recs = []
    if args.resume and args.out and os.path.exists(args.out):
        with open(args.out) as f:
            recs = json.load(f)["problems"]
    done = {(r["level"], r["name"]) for r in recs}
    started = time.perf_counter()
    cut = False
    for i, prob in enumerate(probs):
        if (prob["level"], prob["name"]) in done:
            continue
        if args.time_budget is not None and time.perf_counter() - started > args.time_budget:
            cut = True
            print(f"time budget of {args.time_budget:g} s spent: {len(probs) - i} problems not started", flush=True)
            break
        t0 = time.perf_counter()
        print(f"[{i + 1}/{len(probs)}] level {prob['level']} {prob['name']} ...", end=" ", flush=True)
        rec = run_problem(prob, args, timer)
        if args.precision_fallback and rec["status"] == "incorrect" and rec.get("tf32_contractions"):
            rec = with_float32_fallback(prob, args, timer, rec)
        rec["wall_s"] = round(time.perf_counter() - t0, 2)
        sp = f" x{rec['speedup_vs_eager']:.2f} vs eager" if rec.get("speedup_vs_eager") else ""
        print(f"{rec['status']}{sp} ({rec['wall_s']} s)", flush=True)
        recs.append(rec)
        _write(args, recs, trials, warmup, partial=True)  # a run cut short still leaves its results
        gc.collect()
        if args.device == "cuda":
            torch.cuda.empty_cache()
    out, summary = _write(args, recs, trials, warmup, partial=cut)
    print()
    print(table(recs, summary))
    print(f"\nresults: {out}")
    return 0


def _write(args, recs, trials, warmup, partial: bool):
    summary = summarize(recs)
    result = {"suite": os.path.abspath(args.path), "date": datetime.datetime.now().isoformat(timespec="seconds"),
              "device": args.device, "environment": environment(args.device),
              "args": {k: v for k, v in vars(args).items()}, "trials": trials, "warmup": warmup,
              "tolerance_rule": "max|out-ref| <= tol + tol*max|ref| vs a float64 reference; tol 1e-4 f32, 1e-2 f16/bf16, "
                                f"{TF32_TOL:g} for f32 outputs of problems Ember ran with TF32 contractions (--ember-precision)",
              "problems": recs, "summary": summary, "partial": partial}
    out = args.out or os.path.join(HERE, "results", f"kernelbench-{args.device}-{datetime.date.today()}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=1, default=str)
    return out, summary


if __name__ == "__main__":
    sys.exit(main())
