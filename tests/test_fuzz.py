"""The random-graph fuzzer (ember/testing/fuzz*.py, bench/fuzz_gpu.py) at CI size: small graphs
compiled for the CPU against em.reference (and torch's float64 oracle against em.reference), the
generator's determinism and reach, the checker's power to see wrong answers, and NVRTC compiles of
realistic graphs' CUDA kernels (no GPU needed)."""
import collections
import os

import numpy as np
import pytest

from ember.testing.fuzz import FAMILIES, check, compare, generate, magnitudes, tolerance
from ember.testing.fuzz_ops import OPS
from ember.testing.fuzz_run import build_ember, make_inputs, reference_oracle, run_one

# Known Ember faults the fuzzer found, left to their owners (docs/fuzzing.md): padding a reduction's
# size-1 output axis fails kernel verification (KernelVerifyError "load guard ... outside their
# scope"); a row cache over float32 and 16-bit buffers asks for a 32-byte vector (KeyError: 32 in
# codegen/cuda.py). The runs below skip seeds that hit them.
KNOWN: tuple = ()  # messages of known Ember faults a run may skip (none open)


def test_small_graphs_match_the_reference_on_the_cpu():
    outcomes = collections.Counter()
    for seed in range(30):
        r = run_one(seed, "small", "cpu")
        if r["outcome"] == "error" and any(k in r.get("error", "") for k in KNOWN):
            outcomes["known"] += 1
            continue
        outcomes[r["outcome"]] += 1
        assert r["outcome"] in ("ok", "unsupported"), f"seed {seed}: {r}\n{r.get('program', '')}"
    assert outcomes["ok"] >= 25, outcomes


def test_generator_is_deterministic_per_seed():
    for mode in ("small", "realistic"):
        texts = [generate(s, mode).text() for s in range(8)]
        assert texts == [generate(s, mode).text() for s in range(8)]
        assert len({t.split("\n", 1)[1] for t in texts}) == 8  # different seeds, different programs
    p = generate(5, "small")
    a, b = make_inputs(p), make_inputs(p)
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_generator_reaches_every_op_and_family():
    ops, families = collections.Counter(), collections.Counter()
    size1 = 0
    for s in range(150):
        p = generate(s, "small")
        families[p.family] += 1
        ops.update(st.op for st in p.steps)
        size1 += any(st.op in ("sum", "max", "mean", "min", "logsumexp") and
                     any(p.vars[st.args[0]].shape[a] == 1 for a in st.params["axes"]) for st in p.steps)
    assert set(OPS) <= set(ops), f"never drawn: {set(OPS) - set(ops)}"
    assert set(FAMILIES) <= set(families)
    assert size1 >= 5  # reductions over size-1 axes (the issue-18 miscompile's shape) are drawn


def test_realistic_graphs_respect_the_size_caps():
    from ember.testing.fuzz import LIMITS
    lim = LIMITS["realistic"]
    for s in range(60):
        p = generate(s, "realistic")
        for st in p.steps:
            v = p.vars[st.out]
            cap = lim.operand if st.op == "input" else lim.elems
            assert v.numel <= cap, (s, st.text())


def _reference_run(seed):
    p = generate(seed, "small")
    ins = make_inputs(p)
    refs, maxabs = reference_oracle(p, ins)
    import ember as em
    vals = build_ember(p)
    prog = em.compile([vals[o] for o in p.outputs], device="cpu")
    outs = prog(**ins)
    return p, list(outs if isinstance(outs, (list, tuple)) else [outs]), refs, maxabs


def test_checker_accepts_float32_rounding_and_rejects_wrong_answers():
    p, outs, refs, maxabs = _reference_run(3)
    assert all(c.ok for c in check(p, outs, refs, maxabs))
    o = p.outputs[0]
    out = np.asarray(outs[0], dtype=np.float64)
    flat = out.reshape(-1)
    mag = magnitudes(p, maxabs)[o]
    scale = max(mag, float(np.abs(flat).max()))
    bad = [out * 256 + (out == 0),  # issue 18: a value counted once per thread of a block
           np.where(np.arange(flat.size).reshape(out.shape) == flat.size // 2, out + 0.05 * scale + 1e-3, out),
           np.roll(out, 1) if out.size > 1 and np.ptp(out) > 0 else out + 0.05 * scale + 1e-3,  # wrong index
           np.full_like(out, np.nan)]  # an output never written (poisoned)
    for b in bad:
        r = check(p, [b] + outs[1:], refs, maxabs)
        assert not r[0].ok, (p.text(), r[0])


def test_compare_rules():
    ref = np.linspace(-1, 1, 101)
    assert compare(ref + 1e-4, ref, 2e-3)[0]
    assert not compare(ref + 1e-2, ref, 2e-3)[0]
    assert not compare(ref[:100], ref, 2e-3)[0]  # shapes
    r = ref.copy()
    r[3] = np.inf
    assert not compare(ref, r, 2e-3)[0]  # infinities in place
    idx = np.arange(10)
    assert compare(idx, idx, 0.0, exact=True)[0] and not compare(idx + (idx == 4), idx, 0.0, exact=True)[0]
    # the scale the output was computed from widens the bound: a small difference of large values
    assert not compare(ref * 0 + 1e-3, ref * 0, 2e-3)[0]
    assert compare(ref * 0 + 1e-3, ref * 0, 2e-3, scale=1.0)[0]


def test_tolerance_grows_with_accumulation_and_coarse_types():
    p = generate(0, "small")
    v = next(iter(p.vars.values()))
    base = tolerance(v)
    v2 = type(v)(**{**v.__dict__, "acc": 1 << 26})
    v3 = type(v)(**{**v.__dict__, "prec": "bfloat16"})
    assert base < tolerance(v2) < 0.01 and tolerance(v3) > 10 * base


def test_torch_oracle_agrees_with_the_reference():
    pytest.importorskip("torch")
    from ember.testing.fuzz_run import cross_check
    for seed in range(40, 52):
        p = generate(seed, "small")
        try:
            build_ember(p)
        except NotImplementedError:
            continue
        assert cross_check(p, make_inputs(p)) == "", p.text()


def test_realistic_graphs_compile_for_sm90():
    pytest.importorskip("cuda.core")
    from ember.testing.fuzz_run import compile_cuda_only
    n = int(os.environ.get("EMBER_FUZZ_COMPILE", "20"))
    results = [compile_cuda_only(s, "realistic") for s in range(n)]
    failed = [r for r in results if r["outcome"] == "error" and not any(k in r["error"] for k in KNOWN)]
    assert not failed, failed[0]
    modes = {t for r in results for t in r.get("coverage", [])}
    assert {"mode:mma", "mode:elementwise", "splitk"} <= modes, modes
