"""The CUDA backend on a real GPU (marked cuda: skipped where there is none)."""
import numpy as np
import pytest

import ember as em
from ember.ops import conv as C
from ember.codegen import cuda as cg
from ember.kernel.lower import lower
from tests.conftest import assert_close

pytestmark = pytest.mark.cuda


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _cases():
    try:
        from tests import op_cases
        return op_cases.CASES
    except ImportError:
        return []


@pytest.mark.parametrize("case", _cases(), ids=[c.name for c in _cases()])
def test_op_suite_on_cuda(case):
    from tests import op_cases
    ts = {n: em.input(n, s.shape, s.dtype) for n, s in case.inputs.items()}
    y = case.ember(**ts)
    ys = tuple(y) if isinstance(y, (tuple, list)) else (y,)
    fn = em.compile(ys, device="cuda")
    fn.executor.poison = True
    for seed in (0, 1):
        ins = op_cases.make_inputs(case, seed)
        for t, o, r in zip(ys, fn(**ins), em.reference(ys, **ins)):
            assert_close(o, r, t.dtype.name, what=f"{case.name} seed {seed}")


@pytest.mark.parametrize("mode", ["thread", "warp", "block", "cols", "block-regs", "block-smem", "warp-regs", "warp-smem", "gemm", "mma"])
@pytest.mark.parametrize("graph", ["softmax", "layernorm", "matmul_bias_gelu", "max", "argmax", "bf16_gemv",
                                   "matmul_aligned", "sum_middle", "softmax_middle", "int_max_sub",
                                   "sum_of_keepdim_sum"])
def test_every_reduction_mode_is_correct(mode, graph):
    from ember.pipeline import build_program
    dtype = {"bf16_gemv": "bfloat16", "int_max_sub": "int32"}.get(graph, "float32")
    rows, cols, n_out = (256, 128, 64) if graph == "matmul_aligned" else (37, 300, 65)
    x = em.input("x", (rows, cols), dtype)
    w = em.input("w", (cols, n_out), dtype)
    y = {"softmax": lambda: x.softmax(-1), "layernorm": lambda: em.layer_norm(x, 300),
         "matmul_bias_gelu": lambda: em.gelu(x @ w + 1.0), "max": lambda: x.max(-1),
         "argmax": lambda: x.argmax(-1), "bf16_gemv": lambda: x[:1] @ w,
         "matmul_aligned": lambda: em.linear(x, w.T) * 2.0,
         "sum_middle": lambda: x.reshape(37, 3, 100).sum(1) * 2.0,
         "softmax_middle": lambda: x.reshape(37, 3, 100).softmax(1),
         "int_max_sub": lambda: x - x.max(-1, keepdim=True),
         # a reduction over a size-1 axis is a stage without loops (once summed per thread)
         "sum_of_keepdim_sum": lambda: x.sum(-1, keepdim=True).mean(-1) + x.max(-1, keepdim=True).sum(-1)}[graph]()
    L = lower([y.node])
    base = mode.split("-")[0]
    cfgs = []
    for k, _ in L.kernels:
        c = cg.canonical(k)
        if base == "mma":
            if not cg.mma_applicable(c):
                pytest.skip("not a float contraction")
            cfgs.append(MMA_TILES[1] if graph == "matmul_aligned" else MMA_TILES[0])
        elif base == "gemm":
            if cg.contraction_of(c) is None:
                pytest.skip("not a contraction")
            cfgs.append({"mode": "gemm", "BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4} if graph == "matmul_aligned"
                        else {"mode": "gemm", "BM": 32, "BN": 64, "BK": 8, "TM": 2, "TN": 4})
        elif c.stages:
            cfgs.append({"mode": base, "threads": 128, "vec": 8, "cache": mode.split("-")[1] if "-" in mode else False})
        else:
            cfgs.append(cg.default_config(k))
    fn = build_program(L, "cuda", None, "single", configs=cfgs)
    fn.executor.poison = True
    ins = {"x": (rnd(rows, cols) * 5).astype(em.dtypes.as_dtype(dtype).np),
           "w": rnd(cols, n_out, seed=1).astype(em.dtypes.as_dtype(dtype).np)}
    ins = {k: v for k, v in ins.items() if k in fn.inputs}
    assert_close(fn(**ins), em.reference(y, **ins), dtype, what=f"{graph}/{mode}")


def test_symbolic_dims_and_graph_replay():
    x = em.input("x", ("B", 64))
    y = (x.softmax(-1) * 3).sum(-1)
    fn = em.compile(y, device="cuda")
    for b in (1, 7, 300, 7):
        xv = rnd(b, 64, seed=b)
        assert_close(fn(x=xv), em.reference(y, x=xv))
    assert len(fn.executor._graphs) == 3


def test_independent_kernels_run_as_parallel_graph_branches(monkeypatch):
    """Three projections of one input (independent kernels) are captured as parallel branches of
    the program's graph (opt-in: CUDAExecutor.concurrent); replayed with new values in the same
    buffers, every result stays right."""
    from ember.backends.cuda import CUDAExecutor
    from ember.runtime.concurrency import launch_accesses, launch_levels
    monkeypatch.setattr(CUDAExecutor, "concurrent", True)
    x = em.input("x", (64, 96))
    ws = [em.tensor(rnd(96, 80, seed=s)) for s in (1, 2, 3)]
    q, k, v = ((x @ w).relu() for w in ws)
    y = (q * k + v).softmax(-1)
    fn = em.compile(y, device="cuda")
    for seed in range(4):  # numpy inputs land in the same device buffers: graph replays from the second
        xv = rnd(64, 96, seed=10 + seed)
        assert_close(fn(x=xv), em.reference(y, x=xv), what=f"seed {seed}")
    assert fn.executor._graphs
    ptrs = fn.executor._prepare(fn, fn._bind({"x": rnd(64, 96)})[0], {})
    levels = launch_levels(launch_accesses(fn, ptrs, {}, fn.launches))
    assert max(len(lv) for lv in levels) >= 2, f"no independent launches found: {levels}"


def test_torch_cuda_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    x = em.input("x", (16, 33))
    y = em.gelu(x) + 1
    fn = em.compile(y, device="cuda")
    xt = torch.randn(16, 33, device="cuda")
    out = fn(x=xt)
    assert isinstance(out, torch.Tensor) and out.is_cuda
    assert_close(out.cpu().numpy(), em.reference(y, x=xt.cpu().numpy()))


@pytest.mark.parametrize("kernels", ["one", "several"])
def test_torch_outputs_written_in_place_across_pointer_sets(kernels):
    """Outputs go straight into torch-allocated tensors: results kept alive (new pointers each call)
    and results dropped (pointers repeat, the graph is captured on the second sighting) are both right;
    a one-kernel program launches new pointer sets from a plan made once."""
    torch = pytest.importorskip("torch")
    x = em.input("x", (37, 130))
    w = em.input("w", (130,))
    y = (x * w).softmax(-1) + x.sum(-1, keepdim=True)
    if kernels == "several":
        y = y + y.sum(0, keepdim=True)
    fn = em.compile(y, device="cuda")
    assert (len(fn.launches) == 1) == (kernels == "one")
    kept = []
    for seed in range(6):
        g = torch.Generator(device="cuda").manual_seed(seed)
        xt = torch.randn(37, 130, device="cuda", generator=g)
        wt = torch.randn(130, device="cuda", generator=g)
        out = fn(x=xt, w=wt)
        kept.append((out, xt, wt))
    for out, xt, wt in kept:
        assert_close(out.cpu().numpy(), em.reference(y, x=xt.cpu().numpy(), w=wt.cpu().numpy()))
    xt = torch.randn(37, 130, device="cuda")
    for i in range(4):  # results dropped: the same pointers come back
        wt = torch.full((130,), float(i), device="cuda")
        got = fn(x=xt, w=wt).cpu().numpy()
        assert_close(got, em.reference(y, x=xt.cpu().numpy(), w=wt.cpu().numpy()))
    assert fn.executor._graphs, "a repeated pointer set should be replayed as a CUDA graph"
    assert bool(fn.executor._direct) == (kernels == "one"), "new pointer sets of one kernel: a planned launch"
    mixed = fn(x=xt, w=rnd(130))  # torch and numpy inputs mixed: torch out
    assert isinstance(mixed, torch.Tensor) and mixed.is_cuda


def test_save_load_on_cuda(tmp_path):
    x = em.input("x", ("B", 40))
    w = em.tensor(rnd(40, 8))
    y = (x @ w).relu()
    fn = em.compile(y, device="cuda")
    fn.save(tmp_path / "p.ember")
    g = em.Program.load(tmp_path / "p.ember")
    xv = rnd(5, 40)
    np.testing.assert_array_equal(g(x=xv), fn(x=xv))


def test_demo_models_on_cuda():
    from ember.demo import decoder_graph, mlp_graph
    rng = np.random.default_rng(0)
    for y, ins in [(mlp_graph(rng), {"x": rnd(64, 784)}),
                   (decoder_graph(rng), {"ids": rng.integers(0, 256, (1, 32)).astype(np.int32)})]:
        fn = em.compile(y, device="cuda")
        assert_close(fn(**ins), em.reference(y, **ins))


def test_search_on_cuda_is_verified_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    a, b = em.input("a", (96, 200)), em.input("b", (200, 130))
    y = em.gelu(a @ b + 1.0).softmax(-1)
    fn = em.compile(y, device="cuda", search="fast", time_limit=30, progress=False)
    av, bv = rnd(96, 200, seed=3), rnd(200, 130, seed=4)
    assert_close(fn(a=av, b=bv), em.reference(y, a=av, b=bv))
    assert "schedules" in fn.meta["search"]
    again = em.compile(y, device="cuda", search="fast", time_limit=30, progress=False)
    assert "from cache" in again.meta["search"]


MMA_TILES = [{"mode": "mma", "BM": 64, "BN": 64, "BK": 16, "WM": 2, "WN": 2},
             {"mode": "mma", "BM": 128, "BN": 128, "BK": 16, "WM": 2, "WN": 4},
             {"mode": "mma", "BM": 64, "BN": 128, "BK": 32, "WM": 1, "WN": 4},
             {"mode": "mma", "BM": 128, "BN": 256, "BK": 16, "WM": 2, "WN": 4},
             {"mode": "mma", "BM": 128, "BN": 128, "BK": 16, "WM": 2, "WN": 2},
             {"mode": "mma", "BM": 32, "BN": 128, "BK": 16, "WM": 1, "WN": 4},
             {"mode": "mma", "BM": 64, "BN": 256, "BK": 16, "WM": 1, "WN": 4, "stages": 2}]


@pytest.mark.parametrize("tile", MMA_TILES[3:])
@pytest.mark.parametrize("shape", [(300, 200, 520), (256, 256, 512)])
def test_mma_default_tiles_on_ragged_and_aligned_shapes(tile, shape):
    """The default picker's 64x64-warp tiles: ragged edges (zero-filled slices, guarded epilogue)
    and tile-divisible shapes (vector loads), against the reference."""
    from ember.pipeline import build_program
    m, k, n = shape
    x, w = em.input("x", (m, k)), em.input("w", (n, k))
    y = em.linear(x, w).relu()
    L = lower([y.node])
    fn = build_program(L, "cuda", None, "single", configs=[tile])
    fn.executor.poison = True
    for seed in (0, 1):
        ins = {"x": rnd(m, k, seed=seed), "w": rnd(n, k, seed=seed + 5)}
        assert_close(fn(**ins), em.reference(y, **ins), what=f"{tile} {shape}")


@pytest.mark.parametrize("cluster,threads,cache", [(2, 256, "regs"), (4, 128, "smem"), (8, 64, "regs"),
                                                   (2, 512, "smem")])
@pytest.mark.parametrize("graph", ["softmax", "layernorm", "int_max", "rms_bf16", "argmax_ties", "var"])
def test_cluster_shares_a_row_across_blocks(cluster, threads, cache, graph):
    """Rows split over a cluster of blocks whose partial reductions meet in distributed shared
    memory: 67 rows (more than one row per cluster for some, odd counts), every stage combined in
    rank order (bitwise equal in every block), against the reference over seeds. argmax and var
    have one value per row (stages share the cached row; the first thread of the first block
    stores); argmax's rows hold many ties (the first index must win)."""
    from ember.pipeline import build_program
    dtype = {"int_max": "int32", "rms_bf16": "bfloat16"}.get(graph, "float32")
    x = em.input("x", (67, 8192), dtype)
    y = {"softmax": lambda: x.softmax(-1), "layernorm": lambda: em.layer_norm(x, 8192),
         "int_max": lambda: x - x.max(-1, keepdim=True), "rms_bf16": lambda: em.rms_norm(x, 8192),
         "argmax_ties": lambda: em.argmax(x.floor(), -1), "var": lambda: em.var(x, -1)}[graph]()
    L = lower([y.node])
    cfgs = []
    for k, _ in L.kernels:
        cfgs.append({"mode": "block", "threads": threads, "vec": 8, "cache": cache, "cluster": cluster}
                    if cg.canonical(k).stages else cg.default_config(k))
    fn = build_program(L, "cuda", None, "single", configs=cfgs)
    assert any(l.config.get("cfg", {}).get("cluster") == cluster for l in fn.launches)
    fn.executor.poison = True
    for seed in (0, 1, 2):
        v = rnd(67, 8192, seed=seed) * 3
        v = v.astype(np.int32) if dtype == "int32" else v.astype(em.dtypes.as_dtype(dtype).np)
        assert_close(fn(x=v), em.reference(y, x=v), dtype, what=f"{graph} cluster {cluster}")


def test_row_cached_in_exactly_48kb_of_dynamic_shared_memory():
    """Three 4096-float rows cached in shared memory take 48 KB of dynamic shared memory, and the
    block reduction's static array puts the kernel just past the 48 KB a kernel gets without opting
    in: the launch failed with CUDA_ERROR_INVALID_VALUE (KernelBench's linear + residual + LayerNorm)
    until every kernel with dynamic shared memory opted in."""
    from ember.pipeline import build_program
    x, r, z = (em.input(n, (5, 4096)) for n in "xrz")
    y = em.layer_norm(x + r * z, 4096).relu()
    L = lower([y.node])
    cfg = {"mode": "block", "threads": 512, "vec": 8, "cache": "smem"}
    fn = build_program(L, "cuda", None, "single", configs=[cfg])
    assert fn.launches[0].config["smem"] == 48 * 1024
    fn.executor.poison = True
    for seed in (0, 1):
        ins = {n: rnd(5, 4096, seed=seed + i) for i, n in enumerate("xrz")}
        assert_close(fn(**ins), em.reference(y, **ins))


@pytest.mark.parametrize("tile", [(64, 64, 16, 4, 4), (32, 64, 16, 2, 4)] + MMA_TILES)
def test_gemm_conv_with_tile_divisible_shapes(tile):
    """A 3x3 conv as an implicit GEMM whose M, N, K divide the tiles (K = 16*3*3 = 144 = 9*16): the
    innermost k variable (kw, extent 3) must not take 4-wide vector steps."""
    from ember.pipeline import build_program
    x, w = em.input("x", (4, 16, 8, 8)), em.input("w", (64, 16, 3, 3))
    y = em.conv2d(x, w, padding=1)
    L = lower([y.node])
    tile = tile if isinstance(tile, dict) else dict(zip(("BM", "BN", "BK", "TM", "TN"), tile), mode="gemm")
    cfgs = [tile if cg.contraction_of(cg.canonical(k)) else cg.default_config(k) for k, _ in L.kernels]
    fn = build_program(L, "cuda", None, "single", configs=cfgs)
    fn.executor.poison = True
    ins = {"x": rnd(4, 16, 8, 8), "w": rnd(64, 16, 3, 3, seed=1)}
    assert_close(fn(**ins), em.reference(y, **ins))


_CONV_GRAPHS = {  # name -> (inputs, builder): ragged sizes, the k-split table and packed rows in play
    "conv2d_ragged": ({"x": (3, 7, 19, 23), "w": (37, 7, 3, 3)}, lambda x, w: em.conv2d(x, w, padding=1)),
    "conv2d_stride_dil": ({"x": (2, 5, 21, 30), "w": (33, 5, 3, 5)},
                          lambda x, w: em.conv2d(x, w, stride=(1, 2), padding=2, dilation=(2, 1))),
    "conv3d": ({"x": (2, 4, 9, 10, 11), "w": (32, 4, 3, 3, 3)}, lambda x, w: C.conv3d(x, w, padding=1)),
    "conv_transpose2d_phases": ({"x": (3, 8, 13, 11), "w": (8, 40, 4, 4)},
                                lambda x, w: em.conv_transpose2d(x, w, stride=2, padding=1)),
    "conv_transpose3d_phases": ({"x": (2, 6, 5, 6, 7), "w": (6, 33, 3, 3, 3)},
                                lambda x, w: C._conv_transpose(x, w, None, 2, 1, 1, 1, 1, 3)),
    # few output channels (LeNet's second conv): tensor cores with a partly empty 32-row tile
    "conv2d_16_channels": ({"x": (17, 6, 36, 35), "w": (16, 6, 5, 5)}, lambda x, w: em.conv2d(x, w)),
    # many small batched products (Mamba2's chunk states), ragged: tensor cores by default
    "batched_small_products": ({"x": (300, 64, 61), "w": (300, 64, 19)}, lambda x, w: em.einsum("zlp,zln->zpn", x, w)),
    # 32 input channels: `kslice` can walk the channel fastest (BK = 16 divides 32)
    "conv2d_32_in": ({"x": (3, 32, 13, 17), "w": (40, 32, 3, 3)}, lambda x, w: em.conv2d(x, w, padding=1)),
    # tiles that divide it: the weights' 16-byte loads through the flat k index, unguarded
    "conv2d_aligned": ({"x": (2, 16, 8, 16), "w": (64, 16, 3, 3)}, lambda x, w: em.conv2d(x, w, padding=1)),
    # a GEMM over a (6, 10) block of k: both operands through the flat k index, no k table
    # a channels-last input over ragged rows (3 x 13 x 17 pixels): 16-byte loads along the channels
    # under each row's guard (`rvec`, the default; scalar loads with it off)
    "conv2d_nhwc_ragged": ({"x": (3, 13, 17, 32), "w": (40, 32, 3, 3)},
                           lambda x, w: em.conv2d(x.permute(0, 3, 1, 2), w, padding=1)),
    "gemm_two_k": ({"x": (37, 6, 10), "w": (6, 10, 45)},
                   lambda x, w: (x.reshape(37, 6, 10, 1) * w.reshape(1, 6, 10, 45)).sum((1, 2))),
}
_MMA64 = {"mode": "mma", "BM": 64, "BN": 64, "BK": 16, "WM": 2, "WN": 2}


@pytest.mark.parametrize("tile", [{"mode": "mma", "BM": 64, "BN": 64, "BK": 16, "WM": 2, "WN": 2},
                                  {"mode": "mma", "BM": 128, "BN": 256, "BK": 16, "WM": 2, "WN": 4},
                                  {"mode": "mma", "BM": 32, "BN": 128, "BK": 16, "WM": 1, "WN": 4,
                                   "ktab": True, "packrows": True},
                                  {"mode": "mma", "BM": 64, "BN": 64, "BK": 16, "WM": 2, "WN": 2,
                                   "ktab": False, "packrows": True}, None,
                                  dict(_MMA64, stages=2), dict(_MMA64, pf=True),
                                  dict(_MMA64, kslice=True, pf=True, stages=2), dict(_MMA64, flatk=False),
                                  dict(_MMA64, a_kfast=True, b_kfast=True), dict(_MMA64, rvec=False),
                                  {"mode": "mma", "BM": 32, "BN": 128, "BK": 16, "WM": 1, "WN": 4, "stages": 2, "rvec": True}],
                         ids=["mma64", "mma128x256", "mma32x128-table-packed", "mma64-packed", "default",
                              "mma64-2stages", "mma64-prefetch", "mma64-kslice-pf-2stages", "mma64-no-flatk",
                              "mma64-k-walks", "mma64-scalar-ragged", "mma32x128-rvec-2stages"])
@pytest.mark.parametrize("graph", sorted(_CONV_GRAPHS))
def test_convs_as_implicit_gemm_on_cuda(graph, tile):
    """Convolutions (and transposed ones, as one conv over phases) through the tensor-core implicit
    GEMM: the k split by a shared-memory table, each thread's rows split once into packed fields."""
    from ember.codegen.cuda_mma import kslice_var
    from ember.pipeline import build_program
    shapes, build = _CONV_GRAPHS[graph]
    xs = {n: em.input(n, s) for n, s in shapes.items()}
    y = build(**xs)
    L = lower([y.node])
    if tile and tile.get("kslice") and not any(
            cg.mma_applicable(cg.canonical(k)) and kslice_var(cg.contraction_of(cg.canonical(k)), 16)
            for k, _ in L.kernels):
        pytest.skip("no k variable that a 16-deep slice divides")
    cfgs = [tile if tile and cg.mma_applicable(cg.canonical(k)) else cg.default_config(k) for k, _ in L.kernels]
    assert any(c.get("mode") in ("mma", "wgmma") for c in cfgs), "the conv should be a tensor-core kernel"
    fn = build_program(L, "cuda", None, "single", configs=cfgs)
    fn.executor.poison = True
    for seed in (0, 1):
        ins = {n: rnd(*s, seed=seed * 7 + i) for i, (n, s) in enumerate(shapes.items())}
        assert_close(fn(**ins), em.reference(y, **ins), what=f"{graph} seed {seed}")


@pytest.mark.parametrize("knobs", [{"pf": True}, {"stages": 2}, {"pf": True, "stages": 2}, {"rvec": False}],
                         ids=["prefetch", "2stages", "prefetch-2stages", "ragged-scalar"])
@pytest.mark.parametrize("shape", [(128, 256, 64), (131, 257, 75), (131, 257, 64)], ids=["aligned", "ragged", "ragged-rows"])
def test_matmul_pipeline_knobs_on_cuda(shape, knobs):
    """The mma k loop's pipeline knobs on a plain GEMM, with tiles that divide it (the unguarded,
    vectorised loads; the prefetch of the last slice reloads it) and with ragged edges (guarded)."""
    from ember.pipeline import build_program
    m, n, k = shape
    a, b = em.input("a", (m, k)), em.input("b", (k, n))
    y = (a @ b).relu()
    L = lower([y.node])
    cfgs = [dict(_MMA64, **knobs) if cg.mma_applicable(cg.canonical(kk)) else cg.default_config(kk) for kk, _ in L.kernels]
    fn = build_program(L, "cuda", None, "single", configs=cfgs)
    fn.executor.poison = True
    for seed in (0, 1, 2):
        ins = {"a": rnd(m, k, seed=seed), "b": rnd(k, n, seed=seed + 5)}
        assert_close(fn(**ins), em.reference(y, **ins), what=f"{shape} {knobs} seed {seed}")


@pytest.mark.parametrize("causal", [False, True])
def test_attention_with_scores_on_chip_on_cuda(causal):
    """The local lowering's one-kernel attention (scores and probabilities in shared memory)."""
    from ember.pipeline import build_program
    q, k, v = em.input("q", (2, 4, 33, 32)), em.input("k", (2, 2, 47, 32)), em.input("v", (2, 2, 47, 32))
    y = em.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    L = lower([y.node], local=True)
    assert len(L.kernels) == 1
    fn = build_program(L, "cuda", None, "single")
    fn.executor.poison = True
    ins = {"q": rnd(2, 4, 33, 32), "k": rnd(2, 2, 47, 32, seed=1), "v": rnd(2, 2, 47, 32, seed=2)}
    assert_close(fn(**ins), em.reference(y, **ins))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_tensor_core_matmul_keeps_accuracy(dtype):
    """Tensor-core (mma) contractions: float32 through 3xTF32 stays within float32 tolerance over a
    long K; half types are exact in TF32."""
    x = em.input("x", (192, 4096), dtype)
    w = em.input("w", (4096, 160), dtype)
    y = x @ w
    fn = em.compile(y, device="cuda")
    assert any(l.config.get("mode") in ("mma", "wgmma") for l in fn.launches)
    np_dt = em.dtypes.as_dtype(dtype).np
    for seed in (0, 1):
        ins = {"x": rnd(192, 4096, seed=seed).astype(np_dt), "w": rnd(4096, 160, seed=seed + 7).astype(np_dt)}
        assert_close(fn(**ins), em.reference(y, **ins), dtype)


@pytest.mark.parametrize("kind", ["matmul", "conv"])
def test_tf32_on_request_is_one_pass_within_tf32_tolerance(kind):
    """em.allow_tf32: the contraction runs in one TF32 pass. Its error stays within TF32's bound and
    is larger than the default's (which keeps float32 accuracy), so the pass count really changed."""
    from ember.precision import TF32_TOL
    shapes = {"matmul": {"x": (96, 2048), "w": (2048, 72)}, "conv": {"x": (2, 48, 19, 23), "w": (40, 48, 3, 3)}}[kind]

    def build(x, w):
        return x @ w if kind == "matmul" else em.conv2d(x, w, padding=1)

    errs = []
    for tf32 in (False, True):
        xs = {n: em.input(n, s) for n, s in shapes.items()}
        if tf32:
            with em.allow_tf32(kind):
                y = build(**xs)
        else:
            y = build(**xs)
        fn = em.compile(y, device="cuda")
        assert any(l.config.get("mode") in ("mma", "wgmma") for l in fn.launches)
        ins = {n: rnd(*s, seed=i + 3) for i, (n, s) in enumerate(shapes.items())}
        out, ref = np.asarray(fn(**ins), np.float64), np.asarray(em.reference(y, **ins), np.float64)
        err, scale = float(np.max(np.abs(out - ref))), float(np.max(np.abs(ref)))
        tol = TF32_TOL if tf32 else 1e-4
        assert err <= tol + tol * scale, f"tf32={tf32}: {err:.3g} > {tol} + {tol}*{scale:.3g}"
        errs.append(err)
    assert errs[1] > 4 * errs[0], f"TF32 error {errs[1]:.3g} vs float32-accurate {errs[0]:.3g}"


def test_split_k_contraction_on_cuda():
    """Split-K (kernel/split.py): a batched partial GEMM over chunks of k, then the chunks' sum with
    the epilogue; float32 and TF32 on request."""
    from ember.precision import TF32_TOL
    for tf32 in (False, True):
        x, w, b = em.input("x", (32, 16384)), em.input("w", (16384, 40)), em.input("b", (40,))
        if tf32:
            with em.allow_tf32("matmul"):
                y = ((x @ w) + b).relu()
        else:
            y = ((x @ w) + b).relu()
        fn = em.compile(y, device="cuda")
        assert len(fn.launches) == 2 and fn.launches[0].config.get("mode") == "mma"
        fn.executor.poison = True
        ins = {"x": rnd(32, 16384, seed=1), "w": rnd(16384, 40, seed=2), "b": rnd(40, seed=3)}
        out, ref = np.asarray(fn(**ins), np.float64), np.asarray(em.reference(y, **ins), np.float64)
        tol = TF32_TOL if tf32 else 1e-4
        assert np.max(np.abs(out - ref)) <= tol + tol * np.max(np.abs(ref))


@pytest.mark.parametrize("cv", [2, 4, 8])
def test_cols_mode_with_several_outputs_per_lane(cv):
    """x @ W over W [K, N] in cols mode with `cvec` consecutive outputs per lane (vector loads of
    W's row segments, one accumulator each), a fused bias + cast epilogue, odd K and a partial last
    group of lanes."""
    from ember.pipeline import build_program, get_target, lower as plower
    x, w, b = em.input("x", (1, 333), "bfloat16"), em.input("w", (333, 200), "bfloat16"), em.input("b", (200,), "float32")
    y = ((x @ w).cast("float32") + b).relu()
    lowered = plower([y.node], None, get_target("cuda"))
    cfgs = [{"mode": "cols", "threads": 128, "cvec": cv} if cg.canonical(k).stages else cg.default_config(k)
            for k, _ in lowered.kernels]
    fn = build_program(lowered, "cuda", None, "single", configs=cfgs)
    fn.executor.poison = True
    for seed in (0, 1):
        ins = {"x": rnd(1, 333, seed=seed).astype(em.dtypes.bfloat16.np), "w": rnd(333, 200, seed=seed + 3).astype(em.dtypes.bfloat16.np),
               "b": rnd(200, seed=seed + 5)}
        assert_close(fn(**ins), em.reference(y, **ins), "bfloat16")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_softmax_over_channels_cached_per_thread(dtype):
    """A softmax over the channels of an NCHW tensor (40 of them, odd pixels) with a thread per pixel
    and the pixel's channels kept in registers: read once, equal to the reference (outputs poisoned)."""
    from ember.pipeline import build_program
    x = em.input("x", (3, 40, 37, 45), dtype)
    y = (em.softmax(x, axis=1) * 2.0).sigmoid()
    L = lower([y.node])
    cfg = {"mode": "thread", "threads": 128, "vec": 1, "cache": "regs"}
    fn = build_program(L, "cuda", None, "single", configs=[cfg if cg.canonical(k).stages else cg.default_config(k)
                                                            for k, _ in L.kernels])
    assert "rc0[" in fn.source
    fn.executor.poison = True
    for seed in (0, 1):
        v = (rnd(3, 40, 37, 45, seed=seed) * 4).astype(em.dtypes.as_dtype(dtype).np)
        assert_close(fn(x=v), em.reference(y, x=v), dtype, what=f"softmax over channels seed {seed}")
