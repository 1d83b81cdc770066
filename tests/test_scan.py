"""Prefix sums as scans (kernel/scan.py, codegen/cuda_scan.py): the masked sums cumsum is built from
are recognised as inclusive scans and rendered as warp shuffle scans on CUDA; masked sums that are
not prefix sums are left to the other forms. The CUDA cases run on the GPU (mark cuda); the
renderer's source is compiled with NVRTC in CI by tests/test_cuda_compile.py (the op suite's
cumsum cases take the scan mode by default)."""
import numpy as np
import pytest

import ember as em
from ember.codegen import cuda as cg
from ember.kernel.lower import lower
from ember.kernel.scan import scan_form
from ember.kernel.structure import canonical
from tests.conftest import assert_close


def _modes(y):
    return [cg.default_config(k)["mode"] for k, _ in lower([y.node]).kernels]


@pytest.mark.parametrize("shape,axis", [((4096, 8192), 1), ((3, 1111), -1), ((5, 100, 7), 1), ((7, 5), 0),
                                        ((13,), 0), ((33 * 32 + 5,), 0), ((2, 3, 64), 2)])
def test_cumsum_runs_its_masked_sums_as_scans(shape, axis):
    x = em.input("x", shape, "float32")
    kernels = [k for k, _ in lower([x.cumsum(axis).node]).kernels]
    scans = [scan_form(canonical(k)) is not None for k in kernels]
    # a level: its block totals summed, its masked sums a scan; the output's kernel is one
    assert scans[-1] and sum(scans) == (len(kernels) + 1) // 2
    assert all(cg.default_config(k)["mode"] == "scan" for k, s in zip(kernels, scans) if s)


def _masked(x, mask_of, term_of=None):
    """sum_j where(mask(j, i), term(x[j], i), 0) over the last axis."""
    n = x.node.shape[-1].value
    sq = list(x.node.shape) + [n]
    xj = x.unsqueeze(-2).broadcast_to(sq)
    i, j = em.iota(sq, -2), em.iota(sq, -1)
    term = xj if term_of is None else term_of(xj, i)
    return em.where(mask_of(i, j), term, 0).sum(-1)


@pytest.mark.parametrize("name,mask_of,term_of,is_scan", [
    ("inclusive", lambda i, j: j <= i, None, True),
    ("exclusive", lambda i, j: j < i, None, False),  # r < l: the prefix before, not a scan of this form
    ("suffix", lambda i, j: j >= i, None, True),  # cumsum's gradient
    ("strict_suffix", lambda i, j: j > i, None, False),
    ("term_reads_position", lambda i, j: j <= i, lambda xj, i: xj * i.cast("float32"), False),
    ("band", lambda i, j: (j <= i) & (j + 4 > i), None, False),
])
def test_scan_form_only_takes_prefix_sums(name, mask_of, term_of, is_scan):
    x = em.input("x", (6, 24), "float32")
    y = _masked(x, mask_of, term_of)
    (k, _), = lower([y.node]).kernels
    assert (scan_form(canonical(k)) is not None) == is_scan, name
    # and whatever form it takes, the CPU agrees with the reference
    xs = np.random.default_rng(0).standard_normal((6, 24)).astype(np.float32)
    out = em.compile(y, device="cpu")(x=xs)
    assert_close(out, em.reference([y], x=xs)[0], "float32", what=name)


def test_a_flipped_cumsum_scans_too():
    from ember.ops.movement import flip
    x = em.input("x", (64, 4000), "float32")
    (k, _) = lower([flip(flip(x, [1]).cumsum(1), [1]).node]).kernels[-1]
    f = scan_form(canonical(k))
    assert f is not None and f.reverse


@pytest.mark.parametrize("kind,shift,reverse", [("exclusive", 1, False), ("reverse", 4001 % 32, True), ("cumsum", 0, False)])
def test_the_real_kernelbench_cumsums_end_in_a_scan(kind, shift, reverse):
    # (a ragged axis: the flipped one's blocks start 4001 % 32 in; half precision widened in the sum)
    x = em.input("x", (64, 4001), "bfloat16")
    (k, _) = lower([_graph(x, 1, kind).node]).kernels[-1]
    f = scan_form(canonical(k))
    assert f is not None and (f.shift, f.reverse) == (shift, reverse)


def _graph(x, axis, kind):
    from ember.ops.movement import flip
    if kind == "reverse":  # the real KernelBench's 91_cumsum_reverse
        return flip(flip(x, [axis]).cumsum(axis), [axis])
    if kind == "exclusive":  # its 92_cumsum_exclusive (axis 1): zeros, then the scan of x[:, :-1]
        return em.concat([x[:, :1] * 0, x[:, :-1].cumsum(1)], 1)
    return x.cumsum(axis)


def _ref(xs, axis, kind):
    xs = xs.astype(np.float64)
    if kind == "reverse":
        return np.flip(np.cumsum(np.flip(xs, axis), axis), axis)
    if kind == "exclusive":
        return np.concatenate([xs[:, :1] * 0, np.cumsum(xs[:, :-1], 1)], 1)
    return np.cumsum(xs, axis=axis)


CUDA_CASES = [((37, 8191), -1, "float32", "cumsum"), ((4096, 8192), 1, "float32", "cumsum"),
              ((5, 1000, 7), 1, "float32", "cumsum"), ((3, 40), 0, "float32", "cumsum"),
              ((9, 4099), 1, "bfloat16", "cumsum"), ((11, 777), -1, "int32", "cumsum"), ((2, 31), 1, "float32", "cumsum"),
              ((33, 4096), 1, "float32", "reverse"), ((6, 1000), 1, "float32", "reverse"), ((5, 4001), 1, "bfloat16", "reverse"),
              ((33, 4096), 1, "float32", "exclusive"), ((7, 1001), 1, "float32", "exclusive"),
              ((7, 31), 1, "float32", "exclusive")]


@pytest.mark.cuda
@pytest.mark.parametrize("shape,axis,dtype,kind", CUDA_CASES, ids=[f"{k}-{s}-{a}-{d}" for s, a, d, k in CUDA_CASES])
def test_cuda_cumsum_scans_equal_the_reference(shape, axis, dtype, kind):
    x = em.input("x", shape, dtype)
    fn = em.compile(_graph(x, axis, kind), device="cuda")
    fn.executor.poison = True
    assert any(l.config.get("mode") == "scan" for l in fn.launches)
    for seed in (0, 1, 2):
        rng = np.random.default_rng(seed)
        xs = rng.integers(-9, 10, shape).astype(np.int32) if dtype == "int32" else \
            rng.standard_normal(shape).astype(em.dtypes.bfloat16.np if dtype == "bfloat16" else np.float32)
        ref = _ref(xs, axis, kind)
        out = np.asarray(fn(x=xs))
        if dtype == "int32":
            assert np.array_equal(out, ref.astype(np.int64)), f"{shape} seed {seed}"
        else:
            # a prefix of n terms: its rounding grows with sqrt(n) at most like a tree's
            assert_close(out, ref, dtype, what=f"{kind} {shape} seed {seed}", scale=max(1.0, np.sqrt(shape[axis]) / 8))


def test_short_contiguous_row_sums_take_the_warp_layout():
    from ember.kernel.scan import short_sum_form
    assert _modes(em.input("x", (70000, 20), "float32").sum(-1)) == ["scan"]
    assert _modes(em.input("x", (70000, 64), "float32").sum(-1)) != ["scan"]  # (rows longer than a warp)
    x = em.input("x", (24, 70000), "float32")
    (k, _), = lower([x.sum(0).node]).kernels
    assert short_sum_form(canonical(k)) is None  # read across rows: not along the lanes
    (k, _), = lower([em.input("x", (9, 32), "float32").sum(-1).node]).kernels
    assert short_sum_form(canonical(k)) is not None
    from ember.ops.movement import flip  # a flipped axis reads downwards: still one line a warp
    (k, _), = lower([flip(em.input("x", (9, 32), "float32"), [1]).sum(-1).node]).kernels
    assert short_sum_form(canonical(k)) is not None


SUM_CASES = [((70000, 20), "float32"), ((65537, 32), "bfloat16"), ((66000, 17), "int32")]


@pytest.mark.cuda
@pytest.mark.parametrize("shape,dtype", SUM_CASES, ids=[f"{s}-{d}" for s, d in SUM_CASES])
def test_cuda_short_sums_equal_the_reference(shape, dtype):
    x = em.input("x", shape, dtype)
    y = x.sum(-1) * 2
    fn = em.compile(y, device="cuda")
    fn.executor.poison = True
    assert [l.config.get("mode") for l in fn.launches] == ["scan"]
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        xs = rng.integers(-9, 10, shape).astype(np.int32) if dtype == "int32" else \
            rng.standard_normal(shape).astype(em.dtypes.bfloat16.np if dtype == "bfloat16" else np.float32)
        ref = xs.astype(np.float64).sum(-1) * 2
        out = np.asarray(fn(x=xs))
        if dtype == "int32":
            assert np.array_equal(out, ref.astype(np.int64))
        else:
            assert_close(out, ref, dtype, what=f"{shape} seed {seed}")


CPU_CASES = [((37, 1111), 1, "float32", "cumsum"), ((5, 100, 7), 1, "float32", "cumsum"), ((6, 1001), 1, "float32", "reverse"),
             ((6, 1001), 1, "float32", "exclusive"), ((11, 777), -1, "int32", "cumsum"), ((3, 40), 0, "float32", "cumsum"),
             ((4, 300), 1, "bfloat16", "reverse")]


@pytest.mark.parametrize("shape,axis,dtype,kind", CPU_CASES, ids=[f"{k}-{s}-{a}-{d}" for s, a, d, k in CPU_CASES])
def test_cpu_scan_form_equals_the_reference(shape, axis, dtype, kind):
    from ember.codegen import c as cc
    x = em.input("x", shape, dtype)
    y = _graph(x, axis, kind)
    forms = [cc.default_config(k)["form"] for k, _ in lower([y.node]).kernels]
    assert forms[-1] == "scan"  # a running sum a block (codegen/c_scan.py)
    fn = em.compile(y, device="cpu")
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        xs = rng.integers(-9, 10, shape).astype(np.int32) if dtype == "int32" else \
            rng.standard_normal(shape).astype(em.dtypes.bfloat16.np if dtype == "bfloat16" else np.float32)
        out = np.asarray(fn(x=xs))
        ref = em.reference([y], x=xs)[0]
        if dtype == "int32":
            assert np.array_equal(out, ref)
        else:
            assert_close(out, ref, dtype, what=f"{kind} {shape} seed {seed}")


def _torch_graph(xt, kind):
    import torch
    if kind == "reverse":
        return xt.flip(1).cumsum(1).flip(1)
    if kind == "exclusive":
        return torch.cat([xt[:, :1] * 0, xt[:, :-1].cumsum(1)], 1)
    return xt.cumsum(1)


def _gradient_case(shape, kind, device):
    """x's gradient of sum(cumsum-kind(x) * w): suffix sums (kernel/scan.py), against torch's."""
    torch = pytest.importorskip("torch")
    x, w = em.input("x", shape, "float32"), em.input("w", shape, "float32")
    gx, = em.grad((_graph(x, 1, kind) * w).sum(), [x])
    kernels = [k for k, _ in lower([gx.node]).kernels]
    assert any(getattr(scan_form(canonical(k)), "suffix", False) for k in kernels)
    fn = em.compile(gx, device=device)
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        xs, ws = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        xt = torch.from_numpy(xs).double().requires_grad_()
        (_torch_graph(xt, kind) * torch.from_numpy(ws).double()).sum().backward()
        assert_close(np.asarray(fn(w=ws)), xt.grad.numpy(), "float32", what=f"{kind} {shape} seed {seed}",
                     scale=max(1.0, np.sqrt(shape[1]) / 8))


GRAD_CASES = [((6, 1001), "cumsum"), ((6, 1001), "reverse"), ((5, 4096), "exclusive"), ((3, 40), "reverse")]


@pytest.mark.parametrize("shape,kind", GRAD_CASES, ids=[f"{k}-{s}" for s, k in GRAD_CASES])
def test_cpu_cumsum_gradients_run_suffix_scans(shape, kind):
    _gradient_case(shape, kind, "cpu")


@pytest.mark.cuda
@pytest.mark.parametrize("shape,kind", GRAD_CASES + [((64, 8192), "cumsum")], ids=[f"{k}-{s}" for s, k in GRAD_CASES + [((64, 8192), "cumsum")]])
def test_cuda_cumsum_gradients_run_suffix_scans(shape, kind):
    _gradient_case(shape, kind, "cuda")


@pytest.mark.parametrize("seed", range(12))
def test_scan_forms_fuzzed_on_the_cpu(seed):
    """Random shapes, axes, flips, exclusive forms and dtypes: every kernel the recognizer takes
    runs as a running sum (codegen/c_scan.py) and the program equals the float64 reference."""
    from ember.ops.movement import flip
    rng = np.random.default_rng(100 + seed)
    nd = int(rng.integers(1, 4))
    shape = tuple(int(rng.integers(1, 9)) for _ in range(nd))
    axis = int(rng.integers(0, nd))
    shape = shape[:axis] + (int(rng.choice([2, 31, 32, 33, 65, 100, 1000, 1025])),) + shape[axis + 1:]
    dtype = str(rng.choice(["float32", "int32", "bfloat16"]))
    kind = str(rng.choice(["cumsum", "reverse", "exclusive", "flip_in"]))
    x = em.input("x", shape, dtype)
    if kind == "reverse":
        y = flip(flip(x, [axis]).cumsum(axis), [axis])
    elif kind == "exclusive":
        n = shape[axis]
        y = em.concat([x.narrow(axis, 0, 1) * 0, x.narrow(axis, 0, n - 1).cumsum(axis)], axis)
    elif kind == "flip_in":
        y = flip(x, [axis]).cumsum(axis)
    else:
        y = x.cumsum(axis)
    from ember.codegen import c as cc
    what = f"{kind} {shape} axis {axis} {dtype}"
    if shape[axis] > 2 or kind != "exclusive":  # (an exclusive scan of one term is no masked sum)
        assert any(cc.default_config(k)["form"] == "scan" for k, _ in lower([y.node]).kernels), what
    fn = em.compile(y, device="cpu")
    xs = rng.integers(-9, 10, shape).astype(np.int32) if dtype == "int32" else \
        rng.standard_normal(shape).astype(em.dtypes.bfloat16.np if dtype == "bfloat16" else np.float32)
    out, ref = np.asarray(fn(x=xs)), em.reference([y], x=xs)[0]
    if dtype == "int32":
        assert np.array_equal(out, ref), what
    else:
        assert_close(out, ref, dtype, what=what, scale=max(1.0, np.sqrt(shape[axis]) / 8))


def test_scans_compile_as_megakernel_tasks():
    """The scan and short-sum kernels as tasks of one persistent kernel (docs/megakernel.md): the
    source compiles with NVRTC for sm_90a (their output is checked on the GPU below)."""
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_cuda
    x = em.input("x", (64, 4096), "float32")
    p = em.compile((x.cumsum(1) * 2.0).exp(), device="h100", megakernel=True)
    assert len(p.launches) == 1 and p.meta["megakernel"]["launches"] >= 3
    assert len(compile_cuda(p.source, "sm_90a")) > 0


@pytest.mark.cuda
@pytest.mark.parametrize("kind", ["cumsum", "exclusive", "reverse"])
def test_cuda_megakernel_scans_equal_the_kernels(kind):
    x = em.input("x", (37, 4099), "float32")
    y = _graph(x, 1, kind) * 2.0
    xs = np.random.default_rng(3).standard_normal((37, 4099)).astype(np.float32)
    kernels = np.asarray(em.compile(y, device="cuda")(x=xs))
    mega = np.asarray(em.compile(y, device="cuda", megakernel=True)(x=xs))
    assert_close(mega, kernels, "float32", what=kind)
    assert_close(mega, _ref(xs, 1, kind) * 2.0, "float32", what=kind, scale=8.0)


def _nonfinite_case(device):
    """An infinity or NaN inside a block: positions before it keep their sums, it and those after
    follow IEEE (the block's running total before it is the inclusive scan shifted, not a
    difference that turned inf into NaN for the whole block)."""
    x = em.input("x", (3, 2000), "float32")
    fn = em.compile(x.cumsum(1), device=device)
    xs = np.random.default_rng(0).standard_normal((3, 2000)).astype(np.float32)
    xs[0, 40], xs[1, 1000], xs[2, 5], xs[2, 1500] = np.inf, np.nan, -np.inf, np.inf
    ref = np.cumsum(xs.astype(np.float64), 1)
    out = np.asarray(fn(x=xs))
    assert np.array_equal(np.isnan(out), np.isnan(ref)) and np.array_equal(np.isinf(out), np.isinf(ref))
    assert np.array_equal(np.sign(out[np.isinf(out)]), np.sign(ref[np.isinf(ref)]))
    fin = np.isfinite(ref)
    assert_close(out[fin], ref[fin], "float32", scale=4.0)


def test_cpu_cumsum_keeps_ieee_infinities_and_nans():
    _nonfinite_case("cpu")


@pytest.mark.cuda
def test_cuda_cumsum_keeps_ieee_infinities_and_nans():
    _nonfinite_case("cuda")


def _cumprod_case(device, shape, axis, dtype):
    torch = pytest.importorskip("torch")
    x = em.input("x", shape, dtype)
    fn = em.compile(x.cumprod(axis), device=device)
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        xs = (1 + 0.3 * rng.standard_normal(shape)).astype(np.float32)
        xs.flat[rng.integers(0, xs.size, 3)] = [0.0, -2.0, np.inf]
        xs = xs.astype(em.dtypes.bfloat16.np) if dtype == "bfloat16" else xs
        ref = torch.cumprod(torch.from_numpy(xs.astype(np.float64)), axis).numpy()
        out = np.asarray(fn(x=xs)).astype(np.float64)
        assert np.array_equal(np.isnan(out), np.isnan(ref)) and np.array_equal(np.isinf(out), np.isinf(ref))
        fin = np.isfinite(ref)
        assert_close(out[fin], ref[fin], dtype, what=f"{shape} seed {seed}")


CUMPROD_CASES = [((5, 1000), 1, "float32"), ((4, 3, 70), 1, "float32"), ((6, 300), 1, "bfloat16")]


@pytest.mark.parametrize("shape,axis,dtype", CUMPROD_CASES, ids=[f"{s}-{a}-{d}" for s, a, d in CUMPROD_CASES])
def test_cpu_cumprod_equals_torch(shape, axis, dtype):
    _cumprod_case("cpu", shape, axis, dtype)


@pytest.mark.cuda
@pytest.mark.parametrize("shape,axis,dtype", CUMPROD_CASES, ids=[f"{s}-{a}-{d}" for s, a, d in CUMPROD_CASES])
def test_cuda_cumprod_equals_torch(shape, axis, dtype):
    _cumprod_case("cuda", shape, axis, dtype)


@pytest.mark.parametrize("shape", [(32768, 32768), (5, 1000), (4, 3, 70)])
def test_cumprod_scans_both_terms_in_one_kernel(shape):
    """cumprod's output kernel holds two masked sums (log-magnitudes and negatives): both run as
    scans in the same lanes. As plain loops (warp mode) the real KernelBench's 90_cumprod took 329 ms
    on the H100, eager 4.7 (bench/results/gpu-session35-2026-11-28/a/)."""
    x = em.input("x", shape, "float32")
    kernels = [k for k, _ in lower([x.cumprod(1).node]).kernels]
    f = scan_form(canonical(kernels[-1]))
    assert f is not None and len(f.terms()) == 2
    assert cg.default_config(kernels[-1])["mode"] == "scan"
    assert all(cg.default_config(k)["mode"] in ("scan", "warp") for k in kernels)
    # log2|x| is recomputed where the sums read it, not stored (rule 4's scan exception)
    assert not any(k.name.endswith("log2") for k in kernels)


@pytest.mark.parametrize("seed", [0, 1])
def test_cpu_two_scans_in_one_kernel_equal_the_reference(seed):
    """Two cumsums over the same axis meet in one output kernel: a two-term scan (the C form keeps
    a running sum each)."""
    rng = np.random.default_rng(seed)
    x = em.input("x", (5, 1000 + seed * 37), "float32")
    y = x.cumsum(1) * 2 + (x * 3).exp().cumsum(1)
    kernels = [k for k, _ in lower([y.node]).kernels]
    assert len(scan_form(canonical(kernels[-1])).terms()) == 2
    a = rng.standard_normal((5, 1000 + seed * 37))
    a = (a * 0.3).astype(np.float32)
    out = np.asarray(em.compile(y, device="cpu")(x=a))
    ref = np.cumsum(a.astype(np.float64), 1) * 2 + np.cumsum(np.exp(3 * a.astype(np.float64)), 1)
    assert_close(out, ref, "float32")


def test_cumprod_of_integers_is_refused_with_a_clear_error():
    with pytest.raises(TypeError, match="cumprod of .*int32.*floating-point"):
        em.input("x", (4, 5), "int32").cumprod(1)


def test_torch_cumprod_imports():
    torch = pytest.importorskip("torch")

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.cumprod(x, dim=1) + torch.cumsum(x, 1)

    xs = torch.rand(4, 300) + 0.5
    fn = em.from_torch(M(), (xs,), device="cpu")
    assert_close(np.asarray(fn(xs)), (torch.cumprod(xs.double(), 1) + torch.cumsum(xs.double(), 1)).numpy(), "float32")


def test_cpu_bf16_cumsum_is_rounded_once():
    """bf16 cumsum sums in float32 and rounds each output once (as torch's kernels): its block totals
    were stored in bf16, an extra rounding a level (thousands of ulps near zero crossings)."""
    shape = (4, 8192)  # three levels of blocks
    x = em.input("x", shape, "bfloat16")
    fn = em.compile(x.cumsum(1), device="cpu")
    for seed in (0, 1):
        xs = np.random.default_rng(seed).standard_normal(shape).astype(em.dtypes.bfloat16.np)
        out = np.asarray(fn(x=xs)).astype(np.float64)
        ref = np.cumsum(xs.astype(np.float64), 1)
        ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(ref), 1e-30))) - 7)
        bound = ulp + 1e-5 * np.abs(ref).max()  # one rounding, and float32's own summation error
        assert np.all(np.abs(out - ref) <= bound), f"seed {seed}: {np.max(np.abs(out - ref) / bound):.1f}x the bound"


@pytest.mark.cuda
@pytest.mark.parametrize("kind", ["inclusive", "exclusive"])
def test_cuda_scans_under_a_capped_grid_equal_the_reference(kind):
    # knob `gridcap` 1: 132 blocks loop over every segment of every level (codegen/cuda.py)
    from ember import pipeline
    shape = (37, 5000)
    x = em.input("x", shape, "float32")
    y = _graph(x, 1, kind)
    lowered = pipeline.lower([y.node], None, pipeline.get_target("cuda"))
    cfgs = [dict(c, gridcap=1) if c.get("mode") == "scan" else c
            for c in (cg.default_config(k, pipeline.get_target("cuda")) for k, _ in lowered.kernels)]
    assert any(c.get("gridcap") for c in cfgs)
    fn = pipeline.build_program(lowered, "cuda", None, "single", configs=cfgs)
    fn.executor.poison = True
    for seed in (0, 1):
        xs = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        assert_close(np.asarray(fn(x=xs)), _ref(xs, 1, kind), "float32", what=f"{kind} seed {seed}", scale=9.0)


def test_a_capped_scan_grid_renders_at_most_its_cap():
    from ember import pipeline
    t = pipeline.get_target("h100")
    (k, _), *_ = [kk for kk in lower([em.input("x", (4096, 8192), "float32").cumsum(1).node]).kernels
                  if cg.default_config(kk[0], t)["mode"] == "scan"]
    cfg = cg.default_config(k, t)
    assert cg.render_kernel(k, cfg, t)[1]["grid"] > t.sm_count
    assert cg.render_kernel(k, dict(cfg, gridcap=1), t)[1]["grid"] == t.sm_count


# knob `pvec`: 4 positions a lane (codegen/cuda_scan.py _render_pvec): whole blocks of a forward scan only
PVEC_CASES = [((37, 4096), "float32", "cumsum"), ((8, 2048), "bfloat16", "cumsum"), ((6, 1024), "int32", "cumsum"),
              ((12, 2048), "float32", "cumprod"), ((9, 4096), "float32", "masked")]


def _pvec_graph(shape, dtype, kind):
    x = em.input("x", shape, dtype)
    if kind == "cumprod":
        return x.cumprod(1)
    if kind == "masked":  # the real KernelBench's 93_masked_cumsum: x * mask, then the scan
        return (x * (x > 0).cast("float32")).cumsum(1)
    return x.cumsum(1)


def _pvec_configs(y, target):
    from ember import pipeline
    lowered = pipeline.lower([y.node], None, target)
    cfgs = []
    for k, _ in lowered.kernels:
        d = cg.default_config(k, target)
        if d.get("mode") == "scan" and scan_form(canonical(k)) is not None:
            try:
                cg.render_kernel(k, dict(d, pvec=4), target)
                d = dict(d, pvec=4)
            except cg.UnsupportedKernel:
                pass
        cfgs.append(d)
    return lowered, cfgs


def test_pvec_renders_vector_loads_and_stores_and_compiles():
    pytest.importorskip("cuda.core")
    from ember import pipeline
    from tests.nvrtc_batch import compile_programs
    t = pipeline.get_target("h100")
    progs = []
    for shape, dtype, kind in PVEC_CASES:
        lowered, cfgs = _pvec_configs(_pvec_graph(shape, dtype, kind), t)
        assert any(c.get("pvec") for c in cfgs), kind
        prog = pipeline.build_program(lowered, "h100", None, "single", configs=cfgs)
        if dtype == "float32" and kind == "cumsum":
            assert "uint4 o_" in prog.source and "const uint4 g" in prog.source
        progs.append((prog.source, (shape, dtype, kind)))
    failures = compile_programs(progs)
    assert not failures, "\n".join(failures[:3])


def test_pvec_refuses_a_ragged_axis():
    from ember import pipeline
    t = pipeline.get_target("h100")
    (k, _) = lower([em.input("x", (5, 4001), "float32").cumsum(1).node]).kernels[-1]
    assert "pvec" not in cg.default_config(k, t)
    with pytest.raises(cg.UnsupportedKernel):
        cg.render_kernel(k, dict(cg.default_config(k, t), pvec=4), t)


def test_pvec_is_the_default_where_it_renders(monkeypatch):
    from ember import pipeline
    from ember.codegen import cuda_scan, cuda_schedule
    t = pipeline.get_target("h100")
    scans = [k for k, _ in lower([em.input("x", (37, 4096), "float32").cumsum(1).node]).kernels
             if cg.default_config(k, t)["mode"] == "scan" and scan_form(canonical(k)) is not None]
    assert any(cg.default_config(k, t).get("pvec") == 4 for k in scans)  # (the positions' level at least)
    assert all(("pvec" in cg.default_config(k, t)) == cuda_scan.pvec_applicable(canonical(k), 4) for k in scans)
    monkeypatch.setattr(cuda_schedule, "SCAN_PVEC", False)
    assert all("pvec" not in cg.default_config(k, t) for k in scans)


def _signed_with_zeros(rng, shape):
    """Cumprod's terms with negatives and a zero in every other row: its log-magnitude scan holds -inf from
    the zero on, which a prefix taken by subtraction (-inf - -inf) turned into NaN (real KB 90, gpu-session47 b/)."""
    x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    rows = np.arange(0, shape[0], 2)
    x[rows, rng.integers(0, shape[1], len(rows))] = 0.0
    return x


@pytest.mark.cuda
@pytest.mark.parametrize("shape,dtype,kind", PVEC_CASES)
def test_cuda_pvec_scans_equal_the_reference(shape, dtype, kind):
    from ember import pipeline
    y = _pvec_graph(shape, dtype, kind)
    lowered, cfgs = _pvec_configs(y, pipeline.get_target("cuda"))
    fn = pipeline.build_program(lowered, "cuda", None, "single", configs=cfgs)
    fn.executor.poison = True
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        xs = rng.integers(-9, 10, shape).astype(np.int32) if dtype == "int32" else \
            (_signed_with_zeros(rng, shape) if kind == "cumprod" else rng.standard_normal(shape)).astype(
                em.dtypes.bfloat16.np if dtype == "bfloat16" else np.float32)
        ref = np.asarray(em.reference([y], x=xs)[0]).astype(np.float64)
        out = np.asarray(fn(x=xs)).astype(np.float64)
        if dtype == "int32":
            assert np.array_equal(out, ref)
        else:
            np.testing.assert_allclose(out, ref, rtol=2e-2 if dtype == "bfloat16" else 1e-4,
                                       atol=(2e-2 if dtype == "bfloat16" else 1e-4) * max(1.0, float(np.abs(ref).max())))
