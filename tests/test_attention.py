"""Attention streamed in one pass (kernel/online.py): the online-softmax form is recognised where its
algebra holds and nowhere else; streamed kernels equal the reference (CPU form in CI, the flash
tensor-core kernel on the GPU); the CUDA lowering makes one flash kernel per attention and its
source compiles for sm_90 without a GPU."""
import dataclasses
import math

import numpy as np
import pytest

import ember as em
from ember.backends.cpu_target import online_softmax as cpu_stream
from ember.backends.target import get_target
from ember.kernel import ir
from ember.kernel.lower import lower
from ember.kernel.online import KEY, key_limit, online_form
from ember.tensor import where
from tests.conftest import assert_close

HALF = {"bfloat16": em.bfloat16, "float16": em.float16, "float32": em.float32}


def _sdpa(B, H, Hkv, L, S, D, dtype, causal):
    q = em.input("q", (B, H, L, D), dtype)
    k = em.input("k", (B, Hkv, S, D), dtype)
    v = em.input("v", (B, Hkv, S, D), dtype)
    return em.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=H != Hkv)


def _forms(y, local=True):
    L = lower([y.node], local=local)
    return [online_form(k) for k, _ in L.kernels if k.meta.get("locals")]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_has_the_online_form(dtype, causal):
    # (300 x 300: a causal mask over fewer positions is folded into a constant table: no bound to read)
    forms = _forms(_sdpa(1, 2, 1, 300, 300, 16, HALF[dtype], causal))
    assert len(forms) == 1 and forms[0] is not None
    f = forms[0]
    assert f.keys.value == 300 and f.depth.value == 16 and f.out_extent.value == 16
    assert math.isclose(f.c, 1 / math.log(2))  # exp(x) = exp2(x log2 e)
    assert (f.p_dtype is None) == (dtype == "float32")  # P is rounded to v's dtype before P @ V
    lim = key_limit(f)
    assert (lim is not None) == causal
    if causal:
        assert lim[0].is_const and lim[0].value == 0  # key <= query (top-left aligned)


def _attention_like(x, v, shift="max", c=1.0, norm="sum"):
    """softmax-weighted sums that differ from attention's algebra in one step each."""
    m = x.max(-1, keepdim=True) if shift == "max" else x.mean(-1, keepdim=True)
    e = (x - m).exp() if c == 1.0 else ((x - m) * c).exp()
    z = e.sum(-1, keepdim=True)
    p = e / (z + x) if norm == "plus_x" else e / z
    return p @ v


@pytest.mark.parametrize("variant", [dict(shift="mean"), dict(c=-1.0), dict(norm="plus_x")])
def test_other_algebra_is_not_streamed(variant):
    """A shift that is not the max, a negative multiplier, a normaliser that depends on the key: the
    online recurrence does not hold, and no kernel takes the form (nor the CUDA lowering's flash)."""
    x = em.input("x", (3, 5, 12), em.bfloat16)
    v = em.input("v", (3, 12, 64), em.bfloat16)
    y = _attention_like(x, v, **variant)
    assert not any(_forms(y))
    modes = [l.config.get("mode") for l in em.compile(y, device="h100").launches]
    assert "flash" not in modes


def test_plain_softmax_weighted_sum_is_streamed():
    """Not an attention: any max-shifted exp2 sum normalising a contraction over the same axis."""
    x = em.input("x", (3, 5, 12), em.float32)
    v = em.input("v", (3, 12, 7), em.float32)
    y = _attention_like(x, v)
    (f,) = _forms(y)
    assert f is not None and f.product is None
    rng = np.random.default_rng(1)
    _run_streamed(y, {"x": rng.standard_normal((3, 5, 12)).astype(np.float32),
                      "v": rng.standard_normal((3, 12, 7)).astype(np.float32)}, "float32")


def _run_streamed(y, inputs, dtype):
    host = dataclasses.replace(get_target("cpu"), online_softmax=cpu_stream)
    p = em.compile(y, device=host)
    assert len(p.launches) == 1
    got = p(**inputs)
    assert_close(got, em.reference(y, **inputs), dtype, what="streamed attention")


@pytest.mark.parametrize("seed", range(6))
def test_streamed_attention_equals_the_reference_on_random_shapes(seed):
    """The rewrite's equivalence, fuzzed: random batch, heads (GQA), lengths (not multiples of
    anything), head dims, dtypes and masks; the CPU renders the online form (codegen/c_online.py)."""
    rng = np.random.default_rng(seed)
    B, Hkv = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    H = Hkv * int(rng.integers(1, 4))
    L, S, D = int(rng.integers(1, 40)), int(rng.integers(1, 60)), int(rng.choice([8, 16, 24, 64]))
    dtype = ["float32", "bfloat16", "float16"][seed % 3]
    causal = bool(seed % 2) and L <= S
    y = _sdpa(B, H, Hkv, L, S, D, HALF[dtype], causal)
    ins = {n: rng.standard_normal(shape).astype(np.float32) for n, shape in
           (("q", (B, H, L, D)), ("k", (B, Hkv, S, D)), ("v", (B, Hkv, S, D)))}
    ins = {n: em.reference(em.tensor(a).cast(HALF[dtype])) for n, a in ins.items()}
    _run_streamed(y, ins, dtype)


def test_streamed_attention_with_an_offset_mask_and_loads_in_x():
    """A mask read from a buffer and an index bound with a symbolic offset (a KV cache's P)."""
    rng = np.random.default_rng(3)
    q = em.input("q", (2, 7, 16), em.float32)
    k = em.input("k", (2, "S", 16), em.float32)
    v = em.input("v", (2, "S", 16), em.float32)
    keep = em.input("keep", (2, 1, "S"), em.bool_)
    S = k.node.shape[1]
    s = (q @ k.transpose(-1, -2)) * 0.25
    key = em.iota((7, S), 1)
    query = em.iota((7, S), 0) + _scalar(S - 7)  # query i sits at slot S - 7 + i
    s = where((key <= query) & keep, s, -math.inf)
    y = s.softmax(-1) @ v
    f = _forms(y, local=True)
    # (symbolic key lengths take the streaming mode only; the local mode needs a static row)
    host = dataclasses.replace(get_target("cpu"), online_softmax=cpu_stream)
    p = em.compile(y, device=host)
    assert len(p.launches) == 1 and not f
    for n in (9, 20):
        ins = {"q": rng.standard_normal((2, 7, 16)).astype(np.float32),
               "k": rng.standard_normal((2, n, 16)).astype(np.float32),
               "v": rng.standard_normal((2, n, 16)).astype(np.float32),
               "keep": rng.random((2, 1, n)) < 0.8}
        ins["keep"][..., n - 7:] = True  # (every query may see at least itself)
        assert_close(p(**ins), em.reference(y, **ins), "float32", what=f"S={n}")


def _scalar(e):
    """A 0-d int32 tensor holding a symbolic expression (a named dimension's value)."""
    from ember import graph as g
    from ember.tensor import Tensor
    return Tensor(g.iota_node((), e, em.int32))


def test_key_limit_reads_the_offset():
    q = em.input("q", (1, 5, 8), em.float32)
    k = em.input("k", (1, "S", 8), em.float32)
    S = k.node.shape[1]
    s = q @ k.transpose(-1, -2)
    key, query = em.iota((5, S), 1), em.iota((5, S), 0)
    for mask, off in (((key <= query + 3), 3), ((key < query + _scalar(S - 4)), "S"), ((key >= query), None)):
        y = where(mask, s, -math.inf).softmax(-1) @ k
        host = dataclasses.replace(get_target("cpu"), online_softmax=cpu_stream)
        L = lower([y.node], target=host)
        (f,) = [online_form(kk) for kk, _ in L.kernels if kk.meta.get("locals")]
        lim = key_limit(f)
        if off is None:
            assert lim is None
        else:
            want = em.symbolic.sym(off) if isinstance(off, int) else k.node.shape[1] - 5
            assert lim[0] == want


def test_cuda_lowering_streams_attention_as_one_flash_kernel():
    y = _sdpa(1, 4, 2, 300, 300, 64, em.bfloat16, True)
    p = em.compile(y, device="h100")  # renders and NVRTC-compiles for sm_90 without a GPU
    assert [l.config.get("mode") for l in p.launches] == ["flash"]
    # float32 stays three kernels (the flash kernel's products are 16-bit)
    y32 = _sdpa(1, 4, 2, 300, 300, 64, em.float32, True)
    assert "flash" not in [l.config.get("mode") for l in em.compile(y32, device="h100").launches]


def _masked_sdpa(B, H, L, S, D, dtype, kind):
    """SDPA with torch's attn_mask: a bool padding mask [B, 1, L, S] or an additive one, and rows 0
    and L - 1 of batch 0 allowed no key (torch outputs zeros there)."""
    q = em.input("q", (B, H, L, D), dtype)
    k, v = (em.input(n, (B, H, S, D), dtype) for n in "kv")
    m = em.input("m", (B, 1, L, S), em.bool_ if kind == "bool" else dtype)
    return em.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=kind == "causal+bool" and L == S)


def _mask_values(rng, B, L, S, kind):
    keep = rng.random((B, 1, L, S)) < 0.7
    keep[0, 0, 0] = keep[0, 0, L - 1] = False
    return keep if kind != "additive" else np.where(keep, rng.standard_normal(keep.shape), -np.inf)


@pytest.mark.parametrize("kind", ["bool", "additive"])
def test_sdpa_with_a_mask_streams_as_one_flash_kernel(kind):
    """The "row has a key" guard is read from the mask alone (a max over it, at the mask's own
    shape), so the softmax and the product stay in online form: a mask reduction and one flash kernel
    instead of the scores in memory."""
    y = _masked_sdpa(2, 4, 200, 300, 64, em.bfloat16, kind)
    p = em.compile(y, device="h100")
    assert [l.config.get("mode") for l in p.launches][-1] == "flash" and len(p.launches) == 2


def _decode_graph(B, Hkv, G, S, D):
    q = em.input("q", (B, Hkv, G, 1, D), em.bfloat16)
    k = em.input("k", (B, Hkv, S, D), em.bfloat16)
    v = em.input("v", (B, Hkv, S, D), em.bfloat16)
    s = (q @ k.unsqueeze(2).transpose(-1, -2)).cast(em.float32) * (1.0 / math.sqrt(D))
    return s.softmax(-1).cast(em.bfloat16) @ v.unsqueeze(2)


def _compiles(y, cfgs, target=None):
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_cuda
    from ember.codegen import cuda as cg
    target = target or get_target("h100")
    (k, _), = lower([y.node], target=target).kernels
    for cfg in cfgs:
        src = cg.render_kernel(k, cfg, target)[0]
        assert len(compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")) > 0, cfg
    return k


def test_flash_variants_compile_for_sm90():
    y = _sdpa(2, 2, 2, 100, 130, 128, em.float16, False)
    k = _compiles(y, [{"mode": "flash", "warps": w, "BN": bn} for w, bn in ((4, 32), (8, 128), (4, 64))])
    assert get_target("h100").default_config(k, get_target("h100"))["mode"] == "flash"


def test_decode_attention_takes_flash_decoding_and_compiles():
    """One query row per head group (GQA rows sharing their kv head): the keys split over a cluster."""
    y = _decode_graph(1, 8, 4, 8192, 64)
    k = _compiles(y, [{"mode": "decode", "warps": w, "BN": bn, "cluster": c, "stages": st}
                      for w, bn, c, st in ((4, 32, 16, 2), (2, 16, 1, 4), (8, 16, 4, 3))])
    cfg = get_target("h100").default_config(k, get_target("h100"))
    assert cfg["mode"] == "decode" and cfg["cluster"] == 8


def test_decode_splits_combine_through_a_workspace(monkeypatch):
    """Knob `splits`: P clusters per group of rows, the last block to arrive combining the partials;
    the launch asks the executor for the counters and partials, sized by the group count's bound."""
    from ember.codegen import cuda as cg
    from ember.codegen.cuda_flash_decode import workspace
    t = get_target("h100")
    y = _decode_graph(1, 8, 4, 8192, 128)
    k = _compiles(y, [{"mode": "decode", "warps": 4, "BN": 16, "cluster": c, "stages": 4, "splits": p}
                      for c, p in ((8, 2), (1, 16), (4, 4))])
    src, launch = cg.render_kernel(k, {"mode": "decode", "warps": 4, "BN": 16, "cluster": 8, "stages": 4, "splits": 2}, t)
    assert "em_ws_" in src and "atomicAdd" in src
    assert launch["workspace"] == workspace(em.symbolic.sym(8), 2, 4, 128)[0] == 4 * (32 + 8 * 2 * 4 * 130)
    assert em.symbolic.evaluate(em.symbolic.from_json(launch["grid"]), {}) == 8 * 2 * 8
    src1, launch1 = cg.render_kernel(k, {"mode": "decode", "warps": 4, "BN": 16, "cluster": 8, "stages": 4}, t)
    assert "em_ws_" not in src1 and "workspace" not in launch1
    with pytest.raises(cg.UnsupportedKernel, match="splits=3"):
        cg.render_kernel(k, {"mode": "decode", "warps": 4, "BN": 16, "cluster": 8, "stages": 4, "splits": 3}, t)
    # a batch with no bound cannot size the workspace: refused in one line, and splits=1 still renders
    B = em.symbolic.dim("B")
    q = em.input("q", (B, 8, 4, 1, 128), em.bfloat16)
    kk, vv = (em.input(n, (B, 8, 512, 128), em.bfloat16) for n in "kv")
    yb = ((q @ kk.unsqueeze(2).transpose(-1, -2)).cast(em.float32) * 0.08).softmax(-1).cast(em.bfloat16) @ vv.unsqueeze(2)
    (kb, _), = lower([yb.node], target=t).kernels
    with pytest.raises(cg.UnsupportedKernel, match="no bound"):
        cg.render_kernel(kb, {"mode": "decode", "warps": 4, "BN": 16, "cluster": 8, "stages": 4, "splits": 2}, t)
    assert "em_ws_" not in cg.render_kernel(kb, {"mode": "decode", "warps": 4, "BN": 16, "cluster": 8, "stages": 4}, t)[0]
    # the default gathers a cluster's combine into rank 0, one cluster of 8 even at 32K; without the
    # gather it splits a long cache over few groups (16 blocks a group), not an 8K one
    from ember.codegen import cuda_schedule
    (k32, _), = lower([_decode_graph(1, 8, 4, 32768, 128).node], target=t).kernels
    assert t.default_config(k32, t) == {"mode": "decode", "warps": 4, "BN": 16, "stages": 4, "cluster": 8, "kt": 1, "gather": 1}
    monkeypatch.setattr(cuda_schedule, "DECODE_GATHER", False)
    assert t.default_config(k32, t) == {"mode": "decode", "warps": 4, "BN": 16, "stages": 4, "cluster": 2, "splits": 8, "kt": 1}
    assert "splits" not in t.default_config(k, t)


def test_streamed_kernel_ir_names_the_key_axis():
    f = _forms(_sdpa(1, 1, 1, 4, 6, 8, em.float32, False))[0]
    assert KEY in str(f.k.args[1]) and KEY in str(f.v.args[1]) and KEY not in str(f.q.args[1])
    assert any(x.op == "acc" for x in ir.val_toposort([f.store.value]))


@pytest.mark.cuda
@pytest.mark.parametrize("shape", [(1, 2, 2, 300, 300, 64, "bfloat16", True), (2, 4, 4, 100, 130, 128, "float16", False),
                                   (1, 8, 2, 129, 129, 128, "bfloat16", True), (1, 2, 2, 17, 1000, 64, "bfloat16", False)])
def test_cuda_flash_attention_equals_torch(shape):
    import torch
    B, H, Hkv, L, S, D, dtn, causal = shape
    y = _sdpa(B, H, Hkv, L, S, D, HALF[dtn], causal)
    p = em.compile(y, device="cuda")
    assert [l.config.get("mode") for l in p.launches] == ["flash"]
    torch.manual_seed(0)
    tdt = getattr(torch, dtn)
    q, k, v = (torch.randn(B, h, n, D, device="cuda").to(tdt) for h, n in ((H, L), (Hkv, S), (Hkv, S)))
    got = p(q=q, k=k, v=v).double()
    g = H // Hkv
    want = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double().repeat_interleave(g, 1), v.double().repeat_interleave(g, 1), is_causal=causal)
    assert float((got - want).abs().max()) < (2e-2 if dtn == "bfloat16" else 4e-3)


@pytest.mark.cuda
@pytest.mark.parametrize("kind,D", [("bool", 64), ("additive", 128), ("bool", 128)])
def test_cuda_masked_sdpa_equals_torch(kind, D):
    import torch
    B, H, L, S = 2, 4, 130, 257
    p = em.compile(_masked_sdpa(B, H, L, S, D, em.bfloat16, kind), device="cuda")
    assert "flash" in [l.config.get("mode") for l in p.launches]
    rng = np.random.default_rng(3)
    torch.manual_seed(3)
    q, k, v = (torch.randn(B, H, n, D, device="cuda").bfloat16() for n in (L, S, S))
    m = torch.as_tensor(_mask_values(rng, B, L, S, kind), device="cuda")
    m = m if kind == "bool" else m.bfloat16()
    got = p(q=q, k=k, v=v, m=m).double()
    want = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=m if kind == "bool" else m.double())
    want = torch.nan_to_num(want, nan=0.0)  # (the math backend's fully masked rows: Ember and torch's fused kernels give 0)
    assert float(got[0, :, 0].abs().max()) == 0.0 and float(got[0, :, L - 1].abs().max()) == 0.0
    assert float((got - want).abs().max()) < 2e-2


@pytest.mark.cuda
@pytest.mark.parametrize("shape", [(1, 8, 4, 1000, 64), (2, 2, 3, 4097, 128), (1, 1, 1, 33, 64)])
def test_cuda_decode_attention_equals_torch(shape):
    import torch
    B, Hkv, G, S, D = shape
    p = em.compile(_decode_graph(B, Hkv, G, S, D), device="cuda")
    assert [l.config.get("mode") for l in p.launches] == ["decode"]
    torch.manual_seed(1)
    q = torch.randn(B, Hkv, G, 1, D, device="cuda").bfloat16()
    k, v = (torch.randn(B, Hkv, S, D, device="cuda").bfloat16() for _ in range(2))
    got = p(q=q, k=k, v=v).double()
    s = (q.double() @ k.double().unsqueeze(2).transpose(-1, -2)) / math.sqrt(D)
    want = s.softmax(-1) @ v.double().unsqueeze(2)
    assert float((got - want).abs().max()) < 2e-2


def test_decode_half_rows_skips_the_padding_rows_online_step():
    """Knob `half_rows`: a group of at most 8 rows computes the first half of each thread's rows
    only (rows 8-15 of the tile padding, their P set to 0); compiles for sm_90a."""
    from ember.codegen import cuda as cg
    t = get_target("h100")
    y = _decode_graph(1, 8, 4, 8192, 128)
    cfg = {"mode": "decode", "warps": 4, "BN": 16, "cluster": 8, "stages": 4, "half_rows": 1}
    k = _compiles(y, [cfg])
    src = cg.render_kernel(k, cfg, t)[0]
    assert "for (int h = 0; h < 1; ++h)" in src and "padding rows: P = 0" in src
    assert "for (int h = 0; h < 2; ++h) {\n      float mx_" not in src
    plain = cg.render_kernel(k, dict(cfg, half_rows=0), t)[0]
    assert "padding rows: P = 0" not in plain and "for (int h = 0; h < 1; ++h)" not in plain
    lazy = dict(cfg, lazy_rescale=1)  # (knob lazy_rescale: the rows rescaled only when the max moved)
    assert "if (a_ != 1.f)" in cg.render_kernel(k, lazy, t)[0] and "if (a_ != 1.f)" not in src
    _compiles(y, [lazy])


def test_decode_kv_prefetch_asks_l2_for_its_rows_before_the_wait():
    """Knob `kv_prefetch`: the trigger first, then each block's own K / V rows (contiguous per key)
    asked of L2, then the wait — nothing but the block's indices and the dims read before it."""
    from ember.codegen import cuda as cg
    t = get_target("h100")
    y = _decode_graph(1, 8, 4, 8192, 128)
    cfgs = [{"mode": "decode", "warps": 4, "BN": 16, "cluster": c, "stages": 4, "splits": p, "kv_prefetch": 1}
            for c, p in ((8, 1), (2, 8))]
    k = _compiles(y, cfgs)
    src = cg.render_kernel(k, cfgs[0], t)[0]
    body = src.split("__global__")[-1]
    head = body[:body.index("EM_PDL_WAIT();")]
    assert "EM_PDL_TRIGGER();" in head and "EM_GRID_DEPENDENCY" not in body
    assert head.count("em_prefetch_l2_span(") == 2 and "em_cp16" not in head and "kbeg_" not in head
    plain = cg.render_kernel(k, dict(cfgs[0], kv_prefetch=0), t)[0]
    assert "EM_GRID_DEPENDENCY();" in plain and "em_prefetch_l2_span(" not in plain.split("__global__")[-1]


@pytest.mark.cuda
@pytest.mark.parametrize("cluster,splits,kv_prefetch,half_rows", [(8, 2, 0, 0), (1, 16, 0, 1), (4, 4, 1, 0), (2, 8, 0, 1),
                                                                   (8, 1, 1, 1)])
def test_cuda_decode_splits_equal_torch_on_every_call(cluster, splits, kv_prefetch, half_rows):
    """(the cases with half_rows also take lazy_rescale)"""
    """The partials combined by the last block to arrive; its counter reset for the next call (a
    second and third call on new inputs must be right too: a counter left at P * C would leave the
    outputs unwritten)."""
    import torch
    from ember import pipeline
    B, Hkv, G, S, D = 2, 8, 4, 3001, 128
    target = pipeline.get_target("cuda")
    lowered = pipeline.lower([_decode_graph(B, Hkv, G, S, D).node], None, target)
    cfg = {"mode": "decode", "warps": 4, "BN": 16, "stages": 4, "cluster": cluster, "splits": splits,
           "kv_prefetch": kv_prefetch, "half_rows": half_rows, "lazy_rescale": half_rows}
    p = pipeline.build_program(lowered, target, None, "single", configs=[cfg])
    assert bool(p.launches[0].config.get("workspace")) == (splits > 1)
    for seed in range(3):
        torch.manual_seed(seed)
        q = torch.randn(B, Hkv, G, 1, D, device="cuda").bfloat16()
        k, v = (torch.randn(B, Hkv, S, D, device="cuda").bfloat16() for _ in range(2))
        got = p(q=q, k=k, v=v).double()
        s = (q.double() @ k.double().unsqueeze(2).transpose(-1, -2)) / math.sqrt(D)
        want = s.softmax(-1) @ v.double().unsqueeze(2)
        assert float((got - want).abs().max()) < 2e-2, seed


@pytest.mark.cuda
def test_cuda_llm_prefill_streams_attention(tmp_path):
    """A bf16 Llama with head dim 64: the prefill program's attention is one flash kernel per layer,
    and the logits match transformers' in bfloat16."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import ember.llm as L
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=97, max_position_embeddings=512)
    m = transformers.LlamaForCausalLM(cfg).eval()
    m.save_pretrained(tmp_path / "m")
    llm = L.load(tmp_path / "m", device="cuda", dtype="bfloat16", max_seq_len=256)
    prompt = [int(t) for t in np.random.default_rng(0).integers(1, 97, 150)]
    got = llm.logits(prompt)
    modes = [l.config.get("mode") for l in llm.program("prefill", 1).launches]
    assert modes.count("flash") == 2
    with torch.no_grad():
        want = m.to(torch.bfloat16)(torch.tensor([prompt])).logits[0, -1].float().numpy()
    cos = float(np.dot(got, want) / (np.linalg.norm(got) * np.linalg.norm(want)))
    assert cos > 0.999 and np.abs(got - want).max() < 0.05 * np.abs(want).max()


def test_streamlined_scores_drop_the_rounding_and_fold_the_scale():
    """The flash kernel's exact=False rewrites of X: bf16(acc) * 0.125 under a causal mask becomes
    acc under the same mask, the 0.125 moved into the exp2 multiplier; exact_scores keeps both."""
    from ember.codegen import cuda as cg
    from ember.codegen.cuda_flash import streamlined
    from ember.kernel.online import replace
    t = get_target("h100")
    y = _sdpa(1, 2, 2, 300, 300, 64, em.bfloat16, True)
    (k, _), = lower([y.node], target=t).kernels
    f = online_form(k)
    bufs = {b.name for b in k.buffers}
    loc = [x for x in ir.val_toposort([f.x]) if x.op == "load" and x.args[0] not in bufs]
    X = replace(f.x, {ld: f.score for ld in loc})
    Xs, kmul = streamlined(X, f.score)
    assert kmul == 0.125 and Xs.op == "where" and Xs.args[1] == f.score
    assert not any(v.op == "cast" for v in ir.val_toposort([Xs]))
    fast = cg.render_kernel(k, {"mode": "flash", "warps": 4, "BN": 64}, t)[0]
    exact = cg.render_kernel(k, {"mode": "flash", "warps": 4, "BN": 64, "exact_scores": True}, t)[0]
    rounded = f"em_f2bf((float)({f.score_acc}))"  # the score rounded to bf16
    assert rounded in exact and rounded not in fast
    assert repr(1.4426950408889634 * 0.125) in fast and repr(1.4426950408889634 * 0.125) not in exact


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_streamed_attention_computes_a_rotary_q_itself(dtype):
    """q's prologue (a rotary embedding) is computed where the kernel stages q, not stored first: the
    streamed kernel is the only kernel, and it equals the reference."""
    from ember.ops.attention import rope_cos_sin, rotary_embedding
    B, H, L, D = 1, 2, 37, 16
    q = em.input("q", (B, H, L, D), HALF[dtype])
    k = em.input("k", (B, H, L, D), HALF[dtype])
    v = em.input("v", (B, H, L, D), HALF[dtype])
    cos, sin = rope_cos_sin(L, D, dtype=HALF[dtype])
    y = em.scaled_dot_product_attention(rotary_embedding(q, cos, sin), k, v, is_causal=True)
    host = dataclasses.replace(get_target("cpu"), online_softmax=cpu_stream)
    L_ = lower([y.node], target=host)
    forms = [online_form(kk) for kk, _ in L_.kernels if kk.meta.get("locals")]
    assert len(forms) == 1 and forms[0] is not None and forms[0].q.op != "load"
    rng = np.random.default_rng(0)
    ins = {n: em.reference(em.tensor(rng.standard_normal((B, H, L, D)).astype(np.float32)).cast(HALF[dtype]))
           for n in "qkv"}
    _run_streamed(y, ins, dtype)
    # and the CUDA renderers stage it: it compiles for sm_90
    if dtype == "bfloat16":
        y2 = em.scaled_dot_product_attention(rotary_embedding(em.input("q", (1, 2, 300, 64), em.bfloat16),
                                                              *rope_cos_sin(300, 64, dtype=em.bfloat16)),
                                             em.input("k", (1, 2, 300, 64), em.bfloat16),
                                             em.input("v", (1, 2, 300, 64), em.bfloat16), is_causal=True)
        h100 = get_target("h100")

        def hook(k, f, t=None):
            return h100.online_softmax(k, f, t)
        hook.prologues = True  # (off by default on CUDA: computed q has not run on a GPU yet)
        k = _compiles(y2, [{"mode": "flash", "warps": 4, "BN": 64}], dataclasses.replace(h100, online_softmax=hook))
        assert online_form(k).q.op != "load"
