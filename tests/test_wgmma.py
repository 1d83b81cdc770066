"""The Hopper wgmma mode (codegen/cuda_wgmma.py): which contractions the copy engine can stage, what
their tensor maps say, that every tile / ring / layout renders and compiles for sm_90a (CI, no GPU),
and on the H100 (mark cuda) that every one of them matches the reference on odd shapes and seeds."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from ember.codegen.cuda_wgmma_space import wgmma_configs
from ember.codegen.cuda_wgmma_feed import GatherOperand
from ember.graph import inputs_of
from ember.kernel.lower import lower


@pytest.fixture(autouse=True)
def _gathered_operands_stay_gathered(monkeypatch):
    """These tests cover the kernel forms themselves, the producer's gathers included (odd k, a
    prologue): kept off the copies that layout_gemm makes of operands TMA cannot take by default
    (tests/test_layout_gemm.py covers those)."""
    monkeypatch.setattr("ember.kernel.layout_gemm.ENABLED", "0")

BF = "bfloat16"


def _kernel(y):
    ks = [k for k, _ in lower([y.node]).kernels if cg.contraction_of(cg.canonical(k)) is not None]
    assert len(ks) == 1
    return ks[0]


def _plan(y):
    return cg.wgmma_applicable(cg.canonical(_kernel(y)))


def test_plain_products_in_any_transposition_take_tma():
    x, w = em.input("x", (4096, 512), BF), em.input("w", (768, 512), BF)
    kind, a, b = _plan(x @ w.T)  # nn.Linear: both K-major
    assert kind == "bf16" and a.kmajor and b.kmajor
    kind, a, b = _plan(x @ em.input("v", (512, 768), BF))  # x @ W: b MN-major (transposed wgmma)
    assert a.kmajor and not b.kmajor and b.dims == [768, 512] and b.strides == [768]
    kind, a, b = _plan(em.input("t", (512, 4096), BF).T @ em.input("v", (512, 768), BF))  # a MN-major too
    assert not a.kmajor and not b.kmajor
    kind, a, b = _plan(em.input("q", (8, 12, 512, 64), "float16") @ em.input("k", (8, 12, 64, 512), "float16"))
    assert kind == "f16" and a.rank == 4 and a.strides == [64, 12 * 512 * 64, 512 * 64]


def test_k_over_two_runs_takes_a_map_dimension_each():
    """Tokens over batch x sequence read from a [batch, feature, sequence] tensor (an attention
    output's layout): k is two runs, the inner one whole slices long, each a dimension of the map;
    the same after split-K turns the two loops into one divided loop."""
    a, g = em.input("a", (32, 512, 256)), em.input("g", (32, 256, 512))
    kind, p, q = _plan(a.permute(0, 2, 1).reshape(8192, 512).T @ g.reshape(8192, 512))
    assert kind == "tf32x3" and p.kmajor and p.k_inner == 256 and p.dims[:3] == [256, 512, 8]
    kind, p, q = _plan(em.input("a", (3, 72, 100), BF).permute(0, 2, 1).reshape(300, 72).T
                       @ em.input("g", (3, 100, 80), BF).reshape(300, 80))
    assert not hasattr(p, "k_inner") or p.k_inner == 0  # (100 is no whole number of 64-long slices: gathered)


def test_rows_over_several_loops_flatten():
    """A linear layer over (batch, tokens, features) reads rows of batch x tokens as one run."""
    kind, a, b = _plan(em.input("x", (4, 1000, 512), BF) @ em.input("w", (768, 512), BF).T)
    assert a.dims == [512, 4000] and a.strides == [512]


def test_rows_over_two_runs_take_a_map_dimension_each():
    """BERT's output projection reads attention's [batch, heads, tokens, head_dim] output as
    (batch x tokens) rows by (heads x head_dim) k: k is two runs (head_dim, heads), the rows two
    (tokens, batch), each a dimension of the map; tiles are whole runs of tokens or inside one."""
    o = em.input("o", (32, 12, 128, 64), BF).permute(0, 2, 1, 3).reshape(4096, 768)
    kind, a, b = _plan(o @ em.input("w", (768, 768), BF).T)
    assert a.kmajor and a.k_inner == 64 and a.r_inner == 128
    assert a.dims == [64, 128, 12, 32] and a.strides == [64, 8192, 98304]
    o = em.input("o", (32, 12, 100, 64), BF).permute(0, 2, 1, 3).reshape(3200, 768)  # no tile fits 100
    assert isinstance(_plan(o @ em.input("w", (768, 768), BF).T)[1], GatherOperand)


def _gqa_scores(b=2, t=96, s=136):
    """Grouped-query attention's scores: 8 query heads over 2 key heads (query head h reads key
    head h // 4, as Hugging Face's repeat_kv expands them)."""
    k = em.input("k", (b, 2, s, 64), BF).reshape(b, 2, 1, s, 64).expand(b, 2, 4, s, 64).reshape(b, 8, s, 64)
    return em.input("q", (b, 8, t, 64), BF) @ k.transpose(-1, -2)


def test_a_batch_loop_read_divided_takes_its_quotient_as_the_coordinate():
    kind, q, k = _plan(_gqa_scores())
    assert q.batch_vars == ["o0", "o1"] and k.batch_vars == ["o0", "(o1 / 4)"] and k.dims == [64, 136, 2, 2]


@pytest.mark.parametrize("why, make", [
    ("16 bytes", lambda: em.input("x", (96, 1001), BF) @ em.input("w", (1001, 96), BF)),
    ("not a plain load", lambda: em.input("x", (128, 256), BF).relu() @ em.input("w", (256, 128), BF)),
    ("guarded", lambda: em.conv2d(em.input("x", (4, 64, 16, 16), BF), em.input("w", (64, 64, 3, 3), BF), padding=1)),
    ("symbolic", lambda: em.input("x", (128, "n"), BF) @ em.input("w", ("n", 128), BF)),
])
def test_what_the_copy_engine_cannot_stage_keeps_the_mma_mode(why, make):
    y = make()
    ks = [k for k, _ in lower([y.node]).kernels if cg.contraction_of(cg.canonical(k)) is not None]
    reasons = [cg.wgmma_applicable(cg.canonical(k), gather=False) for k in ks]
    assert reasons and all(isinstance(r, str) for r in reasons)
    assert any(why.lower() in r.lower() for r in reasons), reasons
    assert all(cg.default_config(k)["mode"] != "wgmma" for k in ks)


def test_a_symbolic_row_count_takes_wgmma_with_its_extent_evaluated_at_launch():
    """A prompt's length as M: the tensor map's row extent is an expression of the named dim (encoded
    per run, backends/cuda_tma.py); a symbolic k or n keeps the mma mode."""
    y = em.input("x", ("n", 256), BF) @ em.input("w", (128, 256), BF).T
    (k, _), = lower([y.node]).kernels
    cfg = cg.default_config(k)
    assert cfg["mode"] == "wgmma"
    src, launch = cg.render_kernel(k, cfg)
    a, b = launch["tma"]
    assert not isinstance(a["dims"][1], int) and b["dims"] == [256, 128]
    from ember.backends.cuda_tma import dims_of
    assert dims_of(a, {"n": 77}) == [256, 77]


def test_operands_tma_cannot_stage_are_gathered_by_the_producer():
    """A conv's input, a prologue, odd strides: the producer warpgroup gathers them (K-major,
    rounded to the MMA's type); float32 without TF32 allowed still has no wgmma form."""
    from ember.codegen.cuda_wgmma_feed import GatherOperand
    conv = em.conv2d(em.input("x", (4, 64, 16, 16), BF), em.input("w", (64, 64, 3, 3), BF), padding=1)
    kind, a, b = _plan(conv)
    assert kind == "bf16" and {type(a).__name__, type(b).__name__} == {"TmaOperand", "GatherOperand"}
    kind, a, b = _plan(em.input("x", (96, 1001), BF) @ em.input("w", (1001, 96), BF))
    assert isinstance(a, GatherOperand) and a.kmajor
    kind, a, b = _plan(em.input("x", (128, 256), BF).relu() @ em.input("w", (256, 128), BF))
    assert isinstance(a, GatherOperand)
    kind, a, b = _plan(em.input("x", (128, 256)) @ em.input("w", (256, 128)))  # float32 accuracy: 3xTF32,
    assert kind == "tf32x3" and not b.kmajor  # the MN-major operand copied raw, transposed by the split
    with em.allow_tf32("matmul"):  # TF32 has no transpose: the MN-major b is gathered K-major
        kind, a, b = _plan(em.input("x", (256, 512)) @ em.input("w", (512, 384)))
        assert kind == "tf32" and isinstance(a, GatherOperand) != isinstance(b, GatherOperand)


def test_tf32_allowed_takes_wgmma_when_both_operands_are_k_major():
    with em.allow_tf32("matmul"):
        kind, a, b = _plan(em.input("x", (256, 512)) @ em.input("w", (384, 512)).T)
        assert kind == "tf32" and a.kmajor and b.kmajor


def _f32_cases():
    """Float32 at float32 accuracy (kind tf32x3): both operands copied by TMA and split by the
    producer (K-major in place, MN-major transposed from staging); gathered ones (odd strides, a
    prologue) beside them; ragged edges; a fused epilogue."""
    return {
        "f32_nt_split": lambda: (em.input("x", (3, 111, 256)) @ em.input("w", (200, 256)).T + em.input("b", (200,))).relu(),
        "f32_nn_one_transposed": lambda: em.input("x", (130, 96)) @ em.input("w", (96, 200)),
        "f32_tn_two_transposed": lambda: em.input("x", (300, 136)).T @ em.input("g", (300, 72)),
        "f32_ragged_gather": lambda: em.input("x", (67, 101)) @ em.input("w", (101, 70)),
        "f32_prologue_gather": lambda: em.input("x", (96, 136)).T.relu() @ em.input("g", (96, 72)),
        "f32_two_run_k": lambda: em.input("a", (3, 40, 64)).permute(0, 2, 1).reshape(192, 40).T
        @ em.input("g", (3, 64, 48)).reshape(192, 48),
        "f32_long_k_folds": lambda: em.input("x", (70, 4100)) @ em.input("w", (90, 4100)).T,
        "f32_conv_chunk_gather": _f32_conv_chunk_gather,
    }


def _f32_conv_chunk_gather():
    """A float32 3x3 conv over a computed activation (channels-last: gathered as whole chunks, split
    into hi and lo by the gathering threads)."""
    rng = np.random.default_rng(6)
    w1 = em.tensor(rng.standard_normal((64, 40, 1, 1)).astype(np.float32) / 6)
    w3 = em.tensor(rng.standard_normal((72, 64, 3, 3)).astype(np.float32) / 24)
    return em.conv2d(em.conv2d(em.input("x", (8, 40, 27, 29)), w1).relu(), w3, padding=1)


def _f32_configs(y):
    lowered = pipeline.lower([y.node], None, pipeline.get_target("h100"))  # (as _build lowers it)
    k = [k for k, _ in lowered.kernels if cg.contraction_of(cg.canonical(k)) is not None][-1]  # (a conv's last)
    cfgs = wgmma_configs(cg.canonical(k), "full")
    lags = [c for c in cfgs if "lag" in c or "sdepth" in c or c.get("staged") is False]
    return cfgs[:6] + [c for c in cfgs if c.get("producers") == 2][:1] + lags + \
        [c for c in cfgs if c.get("occupancy") == 2][:1] + [c for c in cfgs if c.get("overlap") is False][:1] + \
        [c for c in cfgs if "hoist" in c or "im2col" in c]


def test_float32_accuracy_takes_three_tf32_wgmmas_from_hi_and_lo_tiles():
    """tf32x3: the slot holds lo tiles beside the hi ones; three wgmmas per k step; TMA tiles split by
    the producer after landing on their own barrier; the ring fits twice the tiles."""
    k = _kernel(_f32_cases()["f32_nt_split"]())
    kind, a, b = cg.wgmma_applicable(cg.canonical(k))
    assert kind == "tf32x3" and a.kmajor and b.kmajor
    cfg = cg.default_config(k)
    assert cfg["mode"] == "wgmma" and cfg["BM"] * cfg["BN"] <= 128 * 128
    src, _ = cg.render_kernel(k, cfg)
    assert src.count("em_wgmma_tf32_n") >= 4 and "em_split3_copy" in src
    with pytest.raises(cg.UnsupportedKernel, match="lag"):  # overlapping consumers hold two slots
        cg.render_kernel(k, dict(cfg, stages=3, lag=2))
    with pytest.raises(cg.UnsupportedKernel, match="shared memory"):  # 128 x 256 x 4 stages of hi and lo
        cg.render_kernel(k, {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 4})


def test_float32_accuracy_over_long_k_folds_the_accumulator():
    """tf32x3 with K >= PROMOTE_MIN_K restarts its wgmma accumulator every PROMOTE_SLICES slices and
    adds it into a second one (the tensor core's truncating adds drift over a long k loop); the
    second accumulator limits tiles to 128 columns; short k loops keep one accumulator."""
    from ember.codegen.cuda_wgmma import PROMOTE_MIN_K, PROMOTE_SLICES
    long_k = _kernel(em.input("x", (1024, PROMOTE_MIN_K)) @ em.input("w", (1024, PROMOTE_MIN_K)).T)
    cfg = cg.default_config(long_k)
    assert cfg["mode"] == "wgmma" and cfg["BN"] <= 128
    src, _ = cg.render_kernel(long_k, cfg)
    assert "p_[i] += d_[i]" in src and f"% {PROMOTE_SLICES} == 0" in src
    assert all(c["BN"] <= 128 for c in wgmma_configs(cg.canonical(long_k), "full"))
    assert any(c.get("promote") == 2 * PROMOTE_SLICES for c in wgmma_configs(cg.canonical(long_k), "full"))
    with pytest.raises(cg.UnsupportedKernel, match="128 at most"):
        cg.render_kernel(long_k, {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 2})
    short_k = _kernel(em.input("x", (256, 512)) @ em.input("w", (512, 512)).T)
    assert "p_[i] += d_[i]" not in cg.render_kernel(short_k, cg.default_config(short_k))[0]


@pytest.mark.cuda
def test_float32_accuracy_holds_over_a_32k_long_k_loop_on_the_gpu():
    """KernelBench's VanillaRNN layer shape class: inputs in [0, 1), nn.Linear's weights, K = 32768.
    Without the folds the truncating accumulator missed float32's 1e-4 (2.6e-4 on the H100). Split-K
    off: its chunks would shorten the k loop."""
    import dataclasses

    import torch
    K = 32768
    x, w = em.input("x", (256, K)), em.input("w", (320, K))
    t = pipeline.get_target("cuda")
    t = t.replace(split=dataclasses.replace(t.split, k_min=1 << 30, k_long=1 << 30))
    prog = pipeline.build_program(pipeline.lower([(x @ w.T).node], None, t), t, None, "single")
    assert "p_[i] += d_[i]" in prog.source
    for seed in (0, 1):
        g = torch.Generator().manual_seed(seed)
        xs, ws = torch.rand(256, K, generator=g), (torch.rand(320, K, generator=g) * 2 - 1) / K ** 0.5
        out = torch.as_tensor(np.asarray(prog(x=xs.numpy(), w=ws.numpy()), np.float64))
        ref = xs.double() @ ws.double().T
        assert (out - ref).abs().max().item() < 2e-5, seed


def test_mn_major_float32_operands_are_copied_into_a_staging_ring():
    """x.T @ g in float32: both operands MN-major, copied raw into a staging ring of their own and
    transposed into the hi/lo ring by the producer, which meets at a named barrier before refilling."""
    k = _kernel(_f32_cases()["f32_tn_two_transposed"]())
    kind, a, b = cg.wgmma_applicable(cg.canonical(k))
    assert kind == "tf32x3" and not a.kmajor and not b.kmajor
    cfg = {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 2}
    src, launch = cg.render_kernel(k, cfg)
    assert "bar.sync 1, 128" in src and "ld.shared.f32" in src
    assert all(t["dtype"] == "float32_raw" and t["box"][:2] == [32, 32] for t in launch["tma"])
    src2, _ = cg.render_kernel(k, dict(cfg, BN=64, stages=3, staged=False))  # staging inside the slots
    assert "bar.sync 1, 128" not in src2


def test_float32_accuracy_configs_compile_for_sm90a():
    pytest.importorskip("cuda.core")
    from tests.nvrtc_batch import compile_programs
    progs = [(_build(y, cfg, "h100").source, (name, cfg)) for name, make in _f32_cases().items()
             for y in [make()] for cfg in _f32_configs(y)]
    failures = compile_programs(progs)  # (a few kernels a module, in threads: tests/nvrtc_batch.py)
    assert not failures, "\n".join(failures[:3])


@pytest.mark.cuda
@pytest.mark.parametrize("name", list(_f32_cases()))
def test_tf32x3_wgmma_keeps_float32_accuracy_on_the_gpu(name):
    """Every tf32x3 tile / lag / gather knob, outputs poisoned, two seeds: within 1e-5 of the float64
    product relative to its largest value (one TF32 pass is ~1e-3)."""
    y = _f32_cases()[name]()
    for cfg in _f32_configs(y):
        prog = _build(y, cfg, "cuda")
        prog.executor.poison = True
        for seed in (0, 1):
            rng = np.random.default_rng(seed)
            ins = {n.arg: rng.standard_normal([s.value for s in n.shape]).astype(np.float32) for n in inputs_of([y.node])}
            out = np.asarray(prog(**ins), np.float64)
            ref = np.asarray(em.reference([y], **{k: v.astype(np.float64) for k, v in ins.items()})[0], np.float64)
            err = np.abs(out - ref).max() / np.abs(ref).max()
            assert err < 1e-5, f"{name} {cfg} seed {seed}: {err}"


def test_default_tile_follows_the_problem(monkeypatch):
    big = lambda: cg.default_config(_kernel(em.input("x", (4096, 4096), BF) @ em.input("w", (4096, 4096), BF)))
    # (its outputs staged as bf16 in their own buffer, persistent: knob shalf's default, uncapped since the forty-ninth)
    assert big() == {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "group": 8, "persistent": True, "sown": True, "shalf": True}
    monkeypatch.setenv("EMBER_WGMMA_SHALF_MAX_SLICES", "48")  # (a cap under its 64 k slices)
    assert big() == {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "group": 8}
    small = cg.default_config(_kernel(em.input("x", (512, 2048), BF) @ em.input("w", (512, 2048), BF).T))
    assert small["mode"] == "wgmma" and small["BM"] * small["BN"] < 128 * 256
    # a prompt against an LM head: 4 row tiles x 501, rows fastest (each wave reads b's columns once)
    head = cg.default_config(_kernel(em.input("x", (512, 2048), BF) @ em.input("w", (128256, 2048), BF).T))
    assert head["BM"] == 128 and head["group"] == 4


def test_an_output_without_column_pairs_is_stored_through_shared_memory():
    """Columns that pair into one store (an even extent) keep the register epilogue; an odd one (an
    implicit-GEMM conv into NCHW over 65 x 65 pixels) is staged and walked one column per lane."""
    odd = _kernel(em.input("x", (130, 128), BF) @ em.input("w", (77, 128), BF).T)
    src, _ = cg.render_kernel(odd, cg.default_config(odd))
    assert "se_[r_ * " in src and "bar.sync 2," in src
    even = _kernel(em.input("x", (130, 128), BF) @ em.input("w", (78, 128), BF).T)
    assert "se_[" not in cg.render_kernel(even, cg.default_config(even))[0]
    assert "se_[" not in cg.render_kernel(odd, dict(cg.default_config(odd), sepi=False))[0]


def _cases():
    return {
        "linear_bias_relu": lambda: (em.input("x", (3, 333, 512), BF) @ em.input("w", (200, 512), BF).T
                                     + em.input("b", (200,), BF)).relu(),
        "x_at_W_ragged": lambda: em.input("x", (1031, 264), BF) @ em.input("w", (264, 3080), BF),
        "xT_at_W": lambda: em.input("x", (136, 200), BF).T @ em.input("w", (136, 320), BF),
        "batched_f16": lambda: em.input("q", (2, 3, 96, 72), "float16") @ em.input("k", (2, 3, 72, 136), "float16"),
        "f32_out": lambda: (em.input("x", (130, 128), BF) @ em.input("w", (128, 72), BF)).cast("float32") * 0.5,
        # gathered by the producer: a padded, strided conv's input; a prologue; an odd k stride
        "conv_gather": lambda: (em.conv2d(em.input("x", (2, 24, 17, 19), BF), em.input("w", (72, 24, 3, 3), BF),
                                          stride=2, padding=1) + em.input("c", (72, 1, 1), BF)).relu(),
        "prologue_gather": lambda: em.input("x", (100, 136), BF).relu() @ em.input("w", (136, 80), BF),
        "conv_chunk_gather": _conv_chunk_gather,
        "odd_k_gather": lambda: em.input("x", (70, 1001), "float16") @ em.input("w", (1001, 66), "float16"),
        # k over batch x sequence of a [batch, feature, sequence] tensor: two runs, a map dimension each
        # rows over tokens x batch, k over heads x head_dim: attention's output into its projection
        "two_run_rows": lambda: em.input("o", (3, 3, 64, 64), BF).permute(0, 2, 1, 3).reshape(192, 192)
        @ em.input("w", (72, 192), BF).T,
        "gqa_scores": _gqa_scores,
        # an odd column count: no column pairs, the staged epilogue walks across the columns
        "odd_columns_staged": lambda: (em.input("x", (130, 128), BF) @ em.input("w", (77, 128), BF).T).relu(),
        "two_run_k": lambda: em.input("a", (3, 72, 128), BF).permute(0, 2, 1).reshape(384, 72).T
        @ em.input("g", (3, 128, 80), BF).reshape(384, 80),
    }


def _conv_chunk_gather():
    """A 3x3 conv over a computed activation (stored channels-last: its input gathered as 16-byte
    chunks, `vector`), odd spatial extents, constant weights as a model's."""
    rng = np.random.default_rng(5)
    w1 = em.tensor(rng.standard_normal((64, 40, 1, 1)).astype(np.float32) / 6).cast(BF)
    w3 = em.tensor(rng.standard_normal((72, 64, 3, 3)).astype(np.float32) / 24).cast(BF)
    y = em.conv2d(em.input("x", (8, 40, 27, 29), BF), w1).relu()  # (smaller ones stay NCHW: not worth a layout)
    return em.conv2d(y, w3, padding=1).relu()


def _tf32_cases():
    return {
        "tf32_nn_gather": lambda: em.input("x", (130, 96)) @ em.input("w", (96, 200)),
        "tf32_conv_gather": lambda: em.conv2d(em.input("x", (2, 16, 15, 13)), em.input("w", (40, 16, 3, 3)), padding=1),
    }


def _gathers(y) -> bool:
    from ember.codegen.cuda_wgmma_feed import GatherOperand
    plans = [cg.wgmma_applicable(cg.canonical(k)) for k, _ in lower([y.node]).kernels]
    return any(not isinstance(p, str) and any(isinstance(f, GatherOperand) for f in p[1:]) for p in plans)


def _configs(y):
    cfgs = _all_configs()
    return cfgs if _gathers(y) else [c for c in cfgs if c.get("producers", 1) == 1]


def _all_configs():
    return [{"mode": "wgmma", "BM": bm, "BN": bn, "stages": st, "overlap": ov}
            for bm, bn, st, ov in [(128, 256, 4, True), (128, 128, 3, False), (64, 64, 2, True), (64, 192, 5, True)]] + [
        {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "group": 3, "pair": False},
        {"mode": "wgmma", "BM": 128, "BN": 192, "stages": 4, "sepi": True},
        {"mode": "wgmma", "BM": 64, "BN": 256, "stages": 3, "sepi": True, "pair": False},
        {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4, "group": 2, "persistent": True},
        {"mode": "wgmma", "BM": 128, "BN": 64, "stages": 2, "overlap": False, "persistent": True},
        {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4, "occupancy": 2},
        {"mode": "wgmma", "BM": 64, "BN": 64, "stages": 3, "occupancy": 2, "persistent": True},
        {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "producers": 2, "gunroll": 2, "gather": True, "im2col": False},
        {"mode": "wgmma", "BM": 64, "BN": 256, "stages": 3, "producers": 2, "gunroll": 4, "im2col": False},
        {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "cpasync": True, "im2col": False},
        {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 5, "producers": 2, "cpasync": True, "persistent": True, "im2col": False},
        {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "hoist": False, "im2col": False},
        {"mode": "wgmma", "BM": 128, "BN": 64, "stages": 4, "hoist": True, "cpasync": True, "persistent": True, "im2col": False},
        {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "im2col": True},
        {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4, "im2col": True, "persistent": True}]


def _build(y, cfg, device):
    lowered = pipeline.lower([y.node], None, pipeline.get_target(device))
    cfgs = [cfg if not isinstance(cg.wgmma_applicable(cg.canonical(k)), str) else cg.default_config(k)
            for k, _ in lowered.kernels]
    assert any(c is cfg for c in cfgs)
    return pipeline.build_program(lowered, device, None, "single", configs=cfgs)


def test_every_wgmma_config_compiles_for_sm90a():
    pytest.importorskip("cuda.core")
    from tests.nvrtc_batch import compile_programs
    progs = []
    for name, make in _cases().items():
        y = make()
        for cfg in _configs(y):
            prog = _build(y, cfg, "h100")
            assert "wgmma.mma_async" in prog.source and "cp.async.bulk.tensor" in prog.source
            if cfg.get("cpasync") and name == "conv_chunk_gather":  # (its input gathered as whole chunks)
                assert "cp.async.mbarrier.arrive.noinc" in prog.source and "em_cp_async16(" in prog.source
            if "hoist" in cfg and name == "conv_chunk_gather":  # (its rows split once a tile: the default where
                # the producer threads divide the tile's rows, as in the configs that name it)
                assert ("hv0_[j_]" in prog.source or "hv1_[j_]" in prog.source) == cfg["hoist"]
            progs.append((prog.source, (name, cfg)))
    failures = compile_programs(progs)  # (a few kernels a module, in threads: tests/nvrtc_batch.py)
    assert not failures, "\n".join(failures[:3])


def test_search_space_offers_wgmma_tiles():
    k = _kernel(em.input("x", (1024, 1024), BF) @ em.input("w", (1024, 1024), BF))
    fast = wgmma_configs(cg.canonical(k), "fast")
    full = wgmma_configs(cg.canonical(k), "full")
    assert fast and len(full) > len(fast)
    assert all(c["mode"] == "wgmma" for c in full) and any(c.get("overlap") is False for c in full)


def test_gathered_and_tf32_configs_compile_for_sm90a():
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    for make in _tf32_cases().values():
        with em.allow_tf32():
            y = make()
            for cfg in _configs(y)[:3] + [c for c in _configs(y) if c.get("cpasync") or "hoist" in c]:
                assert all(len(c) > 0 for c in compile_kernels(_build(y, cfg, "h100").source, "sm_90a").values())


@pytest.mark.cuda
@pytest.mark.parametrize("name", list(_tf32_cases()))
def test_tf32_wgmma_is_within_tf32_tolerance_on_the_gpu(name):
    from ember.precision import TF32_TOL
    with em.allow_tf32():
        y = _tf32_cases()[name]()
        for cfg in _configs(y)[:4] + [c for c in _configs(y) if c.get("cpasync") or "hoist" in c]:
            prog = _build(y, cfg, "cuda")
            rng = np.random.default_rng(3)
            ins = {n.arg: rng.standard_normal([s.value for s in n.shape]).astype(np.float32) for n in inputs_of([y.node])}
            out = np.asarray(prog(**ins), np.float64)
            ref = np.asarray(em.reference([y], **ins)[0], np.float64)
            err = np.abs(out - ref).max() / np.abs(ref).max()
            assert err < TF32_TOL, f"{name} {cfg}: {err}"


@pytest.mark.cuda
def test_symbolic_m_wgmma_matches_the_reference_on_the_gpu():
    y = (em.input("x", ("n", 320), BF) @ em.input("w", (192, 320), BF).T).relu()
    prog = em.compile(y, device="cuda")
    assert [l.config.get("mode") for l in prog.launches] == ["wgmma"]
    rng = np.random.default_rng(0)
    w = rng.standard_normal((192, 320)).astype(np.float32)
    for n in (1, 63, 64, 200, 513):
        x = rng.standard_normal((n, 320)).astype(np.float32)
        ins = {"x": em.reference(em.tensor(x).cast(BF)), "w": em.reference(em.tensor(w).cast(BF))}
        got = np.asarray(prog(**ins)).astype(np.float32)
        want = np.asarray(em.reference(y, **ins)).astype(np.float32)
        assert np.abs(got - want).max() <= 2e-2 * max(1.0, np.abs(want).max()), n


@pytest.mark.cuda
@pytest.mark.parametrize("name", list(_cases()))
def test_wgmma_matches_the_reference_on_the_gpu(name):
    """Every tile / ring / knob on odd shapes (ragged edges, flattened rows, batches, fused epilogue),
    two seeds, outputs poisoned first; persistent blocks walk several tiles through one ring."""
    y = _cases()[name]()
    for cfg in _configs(y):
        prog = _build(y, cfg, "cuda")
        prog.executor.poison = True
        for seed in (0, 1):
            rng = np.random.default_rng(seed)
            ins = {n.arg: rng.standard_normal([s.value for s in n.shape]).astype(np.float32).astype(n.dtype.np)
                   for n in inputs_of([y.node])}
            out = np.asarray(prog(**ins), np.float32)
            ref = np.asarray(em.reference([y], **ins)[0], np.float32)
            err = np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-6)
            assert err < 2e-2, f"{name} {cfg} seed {seed}: relative error {err}"


def test_a_misaligned_operand_pointer_is_refused_in_one_line():
    """TMA needs 16-byte aligned global addresses: a tensor starting mid-vector is refused with a
    line naming the problem, before the driver is asked."""
    pytest.importorskip("cuda.bindings")
    from ember.backends.cuda_tma import TmaError, encode
    spec = {"param": 0, "dtype": "bfloat16", "offset": 0, "dims": [64, 64], "strides": [64], "box": [64, 64]}
    with pytest.raises(TmaError, match="not 16-byte aligned"):
        encode(spec, 0x10008)
    with pytest.raises(TmaError, match="not 16-byte aligned"):
        encode(dict(spec, offset=3), 0x10000)


def test_a_heavy_epilogue_gets_persistent_tiles_at_most_128_wide():
    """An epilogue of many exp2/log2/recip (mish twice: KernelBench 14) runs long after the k loop; its
    default tile is persistent so the producer loads the next tile meanwhile, and at most 128 wide.
    A light one (ReLU) and one mish (4 of them) keep the 128 x 256 tile."""
    from ember.backends.target import get_target
    from ember.codegen.cuda_wgmma_default import HEAVY_EPILOGUE_TRANSCENDENTALS, transcendental_ops
    h100 = get_target("h100")

    def config(act):
        y = act(em.input("x", (4096, 1024), BF) @ em.input("w", (1024, 4096), BF))
        k = _kernel(y)
        return transcendental_ops(cg.canonical(k)), cg.default_config(k, h100)

    n, heavy = config(lambda t: t.mish().mish())
    assert n >= HEAVY_EPILOGUE_TRANSCENDENTALS
    assert heavy.get("persistent") and heavy["BN"] <= 128 and heavy["stages"] >= 4, heavy
    for act in (lambda t: t.relu(), lambda t: t.mish()):
        n, light = config(act)
        assert n < HEAVY_EPILOGUE_TRANSCENDENTALS
        assert not light.get("persistent") and (light["BM"], light["BN"]) == (128, 256), light
