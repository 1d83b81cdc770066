"""CI without a GPU: every CUDA kernel the op suite generates must compile with NVRTC for sm_90
(pip's nvidia-cuda-nvrtc compiles to cubin without a driver) — each kernel in the schedule the
program would use, plus the warp and block mappings of every reduction kernel. Kernels compile one
module each, in parallel threads, through the on-disk cubin cache."""

import pytest

import ember as em
from ember.codegen import cuda as cg
from ember.codegen.cuda_mma import kslice_var
from ember.kernel.lower import lower

pytest.importorskip("cuda.core")
op_cases = pytest.importorskip("tests.op_cases")

from ember.backends.cuda import compile_cuda  # noqa: E402


def _sources(every_alternate: bool = True):
    """{kernel source: case name}. every_alternate=False: the warp / block / cols mappings (the search's
    candidates besides the default) of every other case only — CI's share (-m slow compiles them all)."""
    from ember.kernel.structure import has_locals
    srcs = {}
    for i, case in enumerate(op_cases.CASES):
        ts = {n: em.input(n, s.shape, s.dtype) for n, s in case.inputs.items()}
        y = case.ember(**ts)
        ys = list(y) if isinstance(y, (tuple, list)) else [y]
        local_kernels = [k for k, _ in lower([t.node for t in ys], local=True).kernels if has_locals(k)]
        for k in local_kernels:  # the local lowering's row kernels (rendered in "rowlocal" mode)
            srcs[cg.render_kernel(k)[0]] = case.name + " (local)"
        for k, _ in lower([t.node for t in ys]).kernels:
            cfgs = [cg.default_config(k)]
            if cg.canonical(k).stages and (every_alternate or i % 2 == 0):
                cfgs += [{"mode": m, "threads": 128, "vec": 8} for m in ("warp", "block", "cols")]
            if cg.mma_applicable(cg.canonical(k)):
                mma = {"mode": "mma", "BM": 64, "BN": 64, "BK": 16, "WM": 2, "WN": 2}
                # and the k loop's pipeline knobs: prefetch with two stages; one k variable fastest
                cfgs += [mma, dict(mma, pf=True, stages=2)]
                if kslice_var(cg.contraction_of(cg.canonical(k)), 16) is not None:
                    cfgs.append(dict(mma, kslice=True))
            cached = {"mode": "block", "threads": 32, "vec": 8, "cache": "regs", "cluster": 2}
            for cfg in cfgs + [cached]:
                try:
                    src = cg.render_kernel(k, cfg)[0]
                except cg.UnsupportedKernel:
                    if cfg is cached:  # most kernels have no row cache; clusters need one
                        continue
                    raise
                srcs[src] = case.name
    return srcs


def test_all_op_kernels_compile_for_sm90():
    """Every default kernel of the op suite, its mma and row-cache forms, and half its cases' other row mappings
    (~1430 of ~1900 kernels: the whole set took 124-163 s of CI's 2 cores; test_every_op_kernel_compiles_for_sm90,
    marked slow, compiles all)."""
    from tests.nvrtc_batch import compile_all
    srcs = _sources(every_alternate=False)
    assert len(srcs) > 100
    failures = compile_all(srcs, cg.PRELUDE)  # (a few kernels a module: tests/nvrtc_batch.py)
    assert not failures, "\n".join(failures[:5])


@pytest.mark.slow
def test_every_op_kernel_compiles_for_sm90():
    from tests.nvrtc_batch import compile_all
    failures = compile_all(_sources(), cg.PRELUDE)
    assert not failures, "\n".join(failures[:5])


def test_gemv_over_a_column_major_matrix_takes_vector_cols():
    """x @ W over W [K, N]: lanes on outputs (cols), several per lane where they are contiguous;
    every width renders and compiles."""
    y = em.input("x", (1, 2048), "bfloat16") @ em.input("w", (2048, 8192), "bfloat16")
    (k, _), = lower([y.node]).kernels
    assert cg.default_config(k)["mode"] == "cols"
    for cv in (2, 4, 8):
        src = cg.render_kernel(k, {"mode": "cols", "threads": 256, "cvec": cv})[0]
        assert "reinterpret_cast<const" in src and len(compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")) > 0


def test_reduction_over_a_middle_axis_maps_lanes_to_outputs():
    """A sum over a non-innermost axis reads along the outputs: the default schedule puts lanes on
    outputs (coalesced, cols mode); a last-axis sum keeps lanes on the reduction."""
    x = em.input("x", (6, 4096, 96))
    (k, _), = lower([x.sum(1).node]).kernels
    assert cg.default_config(k)["mode"] == "cols"
    (k, _), = lower([x.sum(2).node]).kernels
    assert cg.default_config(k)["mode"] != "cols"
    src = cg.render_kernel(lower([x.softmax(1).node]).kernels[0][0], {"mode": "cols", "threads": 256})[0]
    assert len(compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")) > 0


def test_cluster_row_kernels_compile():
    """A cluster of blocks sharing one row (distributed shared memory reductions) for the ops that
    cache their row: several cluster sizes, registers and shared memory, every reduction type."""
    x = em.input("x", (37, 4096))
    xi = em.input("xi", (37, 4096), "int32")
    graphs = {"softmax": x.softmax(-1), "layernorm": em.layer_norm(x, 4096), "log_softmax": x.log_softmax(-1),
              "int_max_minus": xi - xi.max(-1, keepdim=True), "f64": (lambda y: y - y.sum(-1, keepdim=True))(x.cast("float64")),
              "argmax (one value per row)": em.argmax(x, -1), "var (one value per row)": em.var(x, -1)}
    n = 0
    for name, y in graphs.items():
        k = lower([y.node]).kernels[-1][0]
        for cfg in ({"cluster": 2, "threads": 256, "cache": "regs"}, {"cluster": 4, "threads": 128, "cache": "smem"},
                    {"cluster": 8, "threads": 128, "cache": "regs"}):
            src, launch = cg.render_kernel(k, dict(cfg, mode="block", vec=8))
            assert "__cluster_dims__" in src and launch["grid"] is not None, name
            assert len(compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")) > 0, name
            n += 1
    assert n == 21


def test_reductions_to_one_value_per_row_read_their_row_once():
    """argmax (a max, then the first index reaching it) and var (a mean, then squared deviations):
    both stages walk the same row, which the default schedule keeps in registers (one global read
    per element instead of two: argmax over 4096-float rows 9% faster on the H100,
    bench/results/knob-sweep-2026-11-22e-rows.json); the first thread stores the row's value."""
    x = em.input("x", (64, 4096))
    for y in (em.argmax(x, -1), em.var(x, -1)):
        k = lower([y.node]).kernels[-1][0]
        cfg = cg.default_config(k)
        assert cfg.get("cache") == "regs", cfg
        src = cg.render_kernel(k, cfg)[0]
        assert src.count("reinterpret_cast<const uint4*>(&b1[") == 1, src
        assert "if (threadIdx.x == 0)" in src
        assert len(compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")) > 0


def test_cluster_knob_is_refused_where_it_has_no_meaning():
    x = em.input("x", (37, 300))
    k = lower([x.softmax(-1).node]).kernels[-1][0]
    for cfg in ({"mode": "warp", "threads": 128, "vec": 8, "cache": "regs", "cluster": 2},
                {"mode": "block", "threads": 128, "vec": 8, "cluster": 2},
                {"mode": "block", "threads": 128, "vec": 8, "cache": "regs", "cluster": 3}):
        with pytest.raises(cg.UnsupportedKernel):
            cg.render_kernel(k, cfg)


def test_a_normalised_embedding_row_keeps_lanes_on_the_row():
    """An embedding lookup feeding a norm (a Llama's first RMSNorm, BERT's embedding LayerNorm)
    gathers each row along the reduction: lanes stay on the row (the token ids are loaded along the
    outputs, but only once per row), and the default schedule renders and compiles."""
    ids, table = em.input("ids", (512,), "int32"), em.input("t", (1000, 2048), "bfloat16")
    e = em.embedding(ids, table).cast("float32")
    y = (e * (e * e).mean(-1, keepdim=True).rsqrt()).cast("bfloat16")
    ks = [k for k, _ in lower([y.node]).kernels if cg.canonical(k).stages]
    assert ks and all(cg.default_config(k)["mode"] != "cols" for k in ks)
    for k in ks:
        src = cg.render_kernel(k, cg.default_config(k))[0]
        assert len(compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")) > 0


def test_a_thread_per_row_keeps_a_short_strided_row_in_registers():
    """Softmax over the 128 channels of an NCHW tensor with 2M pixels: a thread per pixel (lanes along
    the pixels) whose channels, read by three stages, load once into registers (cache "regs"); the
    bias every row reads alike is not cached; the kernel compiles for sm_90a. A 200-channel row
    exceeds THREAD_CACHE_MAX and keeps its three reads."""
    from ember.codegen.cuda_schedule import THREAD_CACHE_MAX
    x, b = em.input("x", (128, 128, 129, 129)), em.input("b", (128, 1, 1))
    k = lower([(em.softmax(x, axis=1) + b).node]).kernels[-1][0]
    cfg = cg.default_config(k)
    assert cfg == {"mode": "thread", "threads": 128, "vec": 1, "cache": "regs"}, cfg
    src, _ = cg.render_kernel(k, cfg)
    assert "unsigned int rc0[128];" in src and "rc1" not in src
    assert compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")
    wide = lower([em.softmax(em.input("x", (16, THREAD_CACHE_MAX + 72, 129, 257)), axis=1).node]).kernels[-1][0]
    assert "cache" not in cg.default_config(wide)


def test_a_softmax_over_a_phase_form_transposed_conv_reads_along_the_pixels():
    """A stride-2 transposed conv runs as phases whose outputs interleave along the pixels
    (`4225*((o3 + 1) % 2) + (o3 + 1) // 2`: two contiguous runs per warp); a softmax over its
    channels must still put lanes on the pixels (KernelBench level-2 91: a warp per pixel reading
    channels 16900 floats apart took 10 of its 10.8 ms)."""
    x, w = em.input("x", (2, 8, 16, 16)), em.input("w", (8, 64, 4, 4))
    y = em.softmax(em.conv_transpose2d(x, w, stride=2, padding=1), axis=1)
    modes = [cg.default_config(k)["mode"] for k, _ in lower([y.node]).kernels if cg.canonical(k).stages
             and cg.contraction_of(cg.canonical(k)) is None]
    assert modes and all(m in ("thread", "cols") for m in modes), modes


def test_independent_reductions_over_one_range_share_a_loop_in_warp_mode():
    """Knob `fuse` (warp mode; off by default, measured no faster in the megakernel): SwiGLU's gate
    and up rows (two sums over the same k, neither reading the other) run as one loop — both rows'
    loads in flight together, unrolled with knob `unroll` like a single stage; a softmax's sum
    reads its max, so those two stay apart."""
    import re
    x = em.input("x", (1, 2048), em.bfloat16)
    wg, wu = (em.input(n, (4096, 2048), em.bfloat16) for n in ("wg", "wu"))
    y = (x @ wg.transpose(0, 1)).cast(em.float32).silu() * (x @ wu.transpose(0, 1)).cast(em.float32)
    t = em.backends.target.get_target("h100")
    ks = [k for k, _ in lower([y.node], target=t).kernels]
    (k,) = [k for k in ks if len(cg.canonical(k).stages) == 2]
    src = cg.render_kernel(k, {"mode": "warp", "threads": 128, "vec": 8, "fuse": 1}, t)[0]
    assert len(re.findall(r"for \(int r_ = ", src)) == 1 and len(compile_cuda(cg.PRELUDE + src, "sm_90a")) > 0
    both = cg.render_kernel(k, {"mode": "warp", "threads": 128, "vec": 8, "fuse": 1, "unroll": 1}, t)[0]
    assert both.count("for (int i_ = 0; i_ < 8; ++i_)") == 1 and "for (int r_ = " not in both
    assert len(compile_cuda(cg.PRELUDE + both, "sm_90a")) > 0
    apart = cg.render_kernel(k, {"mode": "warp", "threads": 128, "vec": 8, "fuse": 0}, t)[0]
    assert len(re.findall(r"for \(int r_ = ", apart)) == 2
    s = em.input("s", (64, 1000), em.float32).softmax(-1)
    (k2, _), = lower([s.node], target=t).kernels
    src2 = cg.render_kernel(k2, {"mode": "warp", "threads": 128, "vec": 4, "fuse": 1}, t)[0]
    assert len(re.findall(r"for \(int r_ = ", src2)) == 2


def test_unroll_knob_unrolls_fixed_trip_reduction_loops():
    """Knob `unroll` (warp / block modes; the megakernel's option `unroll`): a reduction whose every
    lane runs the same number of iterations (k = 2048 over 32 lanes x 8) is one unrolled loop of
    8, all of a lane's loads free to be in flight together; a longer one (k = 8192: 32 iterations)
    unrolled by UNROLL_PART; a ragged k keeps the strided loop."""
    t = em.backends.target.get_target("h100")
    for K, loop, pragma in ((2048, "i_ < 8;", "#pragma unroll\n"), (8192, "i_ < 32;", "#pragma unroll 8\n"), (2000, None, None)):
        x = em.input("x", (1, K), em.bfloat16)
        w = em.input("w", (4096, K), em.bfloat16)
        (k, _), = lower([(x @ w.transpose(0, 1)).node], target=t).kernels
        src = cg.render_kernel(k, {"mode": "warp", "threads": 128, "vec": 8, "unroll": 1}, t)[0]
        assert ("for (int i_ = 0; " + str(loop) in src) == (loop is not None), K
        assert (str(pragma) in src) == (pragma is not None), K
        assert len(compile_cuda(cg.PRELUDE + src, "sm_90a")) > 0


def test_a_norms_weight_loads_with_its_rows_first_pass_before_the_reduction():
    """RMSNorm: the weight, read only after the statistic, loads into registers with the row (the
    row cache's `ahead` group), so its latency overlaps the row's instead of following the block
    reduction; and the kernel compiles."""
    import numpy as np
    x = em.input("x", (1, 2048), em.bfloat16)
    w = em.tensor(np.random.default_rng(0).standard_normal(2048).astype(np.float32)).cast(em.bfloat16)
    xf = x.cast(em.float32)
    y = (xf * ((xf * xf).mean(-1, keepdim=True) + 1e-5).rsqrt()).cast(em.bfloat16) * w
    p = em.compile(y, device="h100")
    src = p.source
    reduce_at = src.find("em_block_reduce<")
    assert 0 < src.find("rc1[k_] = *reinterpret_cast") < reduce_at, src[reduce_at - 1500: reduce_at + 200]
    assert len(compile_cuda(src, "sm_90a")) > 0


def test_decode_attention_asks_for_key_tiles_before_its_rotary_prologue(tmp_path):
    """Flash-decoding whose q is computed (a rotary embedding) issues its first key tiles' copies
    before q's loads, not after them."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import ember.llm as L
    from ember.llm.model import build_step
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=128, intermediate_size=96, num_hidden_layers=1, num_attention_heads=2,
                                   num_key_value_heads=1, vocab_size=97, max_position_embeddings=256)
    transformers.LlamaForCausalLM(cfg).save_pretrained(tmp_path / "m")
    llm = L.load(str(tmp_path / "m"), device="h100", dtype="bfloat16", max_seq_len=128)
    outs, writes = build_step(llm.weights, 1, 1, llm.max_seq_len)
    p = em.compile(outs, device="h100", writes=writes, dim_bounds={"P": 127})
    kernels = [c for c in p.source.split("// ==== ember kernel") if "q is in shared memory" in c]
    assert kernels
    for k in kernels:
        assert "uint4 pk_" in k and 0 < k.find("em_cp16(my_") < k.find("uint4 pk_"), k[:3000]
    assert len(compile_cuda(p.source, "sm_90a")) > 0
