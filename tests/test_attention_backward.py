"""Attention's backward with its scores recomputed per key tile (kernel/scores.py,
codegen/cuda_scores.py): the gradient kernels and the row statistics they read stream; no score,
probability or score gradient is stored."""
from __future__ import annotations


import numpy as np
import pytest

import ember as em
from ember.backends.target import get_target
from ember.kernel.lower import lower
from ember.kernel.scores import score_form


def _grads(B, H, L, S, D, causal, dtype="bfloat16", Hkv=None):
    q = em.input("q", (B, H, L, D), dtype)
    k, v = (em.input(n, (B, Hkv or H, S, D), dtype) for n in "kv")
    do = em.input("do", (B, H, L, D), dtype)
    o = em.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=Hkv is not None)
    loss = (o.cast("float32") * do.cast("float32")).sum()
    return em.grad(loss, [q, k, v])


@pytest.mark.parametrize("causal,D", [(True, 64), (False, 128)])
def test_attention_backward_recomputes_its_scores(causal, D):
    """Six kernels, each in streamed-score form: the softmax's max and sum and D = sum P dP (row
    statistics, `max` / `sum` tails), dQ, dK and dV (`mma` tails); nothing of size L x S is stored."""
    t = get_target("h100")
    L, S = 200, 328
    lowered = lower([x.node for x in _grads(1, 2, L, S, D, causal)], target=t)
    forms = [score_form(k) for k, _ in lowered.kernels]
    assert all(f is not None for f in forms) and len(forms) == 6
    assert sorted(f.tail for f in forms) == ["max", "mma", "mma", "mma", "sum", "sum"]
    assert [len(f.scores) for f in forms if f.tail == "mma"].count(2) == 2  # dQ, dK: S and dP
    assert all(t.default_config(k, t)["mode"] == "scores" for k, _ in lowered.kernels)
    temps = [em.symbolic.evaluate(em.symbolic.prod(b.shape), {}) for b in lowered.buffers.values() if b.kind == "temp"]
    assert len(temps) == 3 and max(temps) < L * S  # the three statistics, one value a row


def test_scores_kernels_compile_for_sm90():
    pytest.importorskip("cuda.core")
    p = em.compile(_grads(1, 2, 130, 130, 64, True), device="h100")  # renders and NVRTC-compiles
    assert [l.config.get("mode") for l in p.launches] == ["scores"] * 6


def test_float32_attention_backward_keeps_its_buffers():
    """The tensor-core renderer takes 16-bit operands: float32 attention stays materialised."""
    t = get_target("h100")
    lowered = lower([x.node for x in _grads(1, 2, 64, 64, 64, True, "float32")], target=t)
    assert not any(score_form(k) is not None and t.default_config(k, t)["mode"] == "scores" for k, _ in lowered.kernels)


def test_gqa_attention_backward_streams_and_sums_its_groups():
    """GQA: the kv heads' gradients are computed per query head by scores kernels and summed over
    each group by a kernel of their own."""
    t = get_target("h100")
    lowered = lower([x.node for x in _grads(1, 4, 128, 128, 64, True, Hkv=2)], target=t)
    modes = [t.default_config(k, t)["mode"] for k, _ in lowered.kernels]
    assert modes.count("scores") == 6 and len(modes) == 8


@pytest.mark.cuda
@pytest.mark.parametrize("shape", [(1, 2, 300, 300, 64, True, None), (2, 3, 129, 257, 128, False, None),
                                   (1, 4, 512, 512, 128, True, None), (2, 2, 1000, 1000, 64, True, None),
                                   (1, 4, 200, 200, 64, True, 2)])
def test_cuda_attention_backward_equals_torch(shape):
    import torch
    B, H, L, S, D, causal, Hkv = shape
    p = em.compile(_grads(B, H, L, S, D, causal, Hkv=Hkv), device="cuda")
    assert [l.config.get("mode") for l in p.launches].count("scores") == 6
    torch.manual_seed(0)
    q = torch.randn(B, H, L, D, device="cuda").bfloat16()
    k, v = (torch.randn(B, Hkv or H, S, D, device="cuda").bfloat16() for _ in range(2))
    do = torch.randn(B, H, L, D, device="cuda").bfloat16()
    got = p(q=q, k=k, v=v, do=do)
    fq, fk, fv = (x.double().requires_grad_(True) for x in (q, k, v))
    o = torch.nn.functional.scaled_dot_product_attention(fq, fk, fv, is_causal=causal, enable_gqa=Hkv is not None)
    want = torch.autograd.grad(o, (fq, fk, fv), do.double())
    for g_, w_ in zip(got, want):
        rel = float((g_.double() - w_).abs().max() / w_.abs().max())
        assert np.isfinite(rel) and rel < 2e-2, rel


def test_scores_kernels_skip_causal_tiles_share_tiles_and_hoist_statistics():
    """The renderer's structure on the six kernels of a causal backward: the key loop bounded from
    above (statistics, dQ) or below (dK, dV) by the causal mask; dQ and dK read their tail operand
    from a score's tile; per-row statistics in registers before the key loop, dV's per-key ones
    once per key of a tile."""
    from ember.codegen import cuda as cg
    from ember.kernel.scores import key_bounds
    t = get_target("h100")  # (at 1024 keys the causal mask stays index arithmetic; smaller ones fold to data)
    lowered = lower([x.node for x in _grads(1, 2, 1024, 1024, 64, True)], target=t)
    forms = [score_form(k) for k, _ in lowered.kernels]
    bounds = [key_bounds(f)[:2] for f in forms]
    tails = [f.tail for f in forms]
    mma = [i for i, tl in enumerate(tails) if tl == "mma"]
    assert all(b[0] is not None and b[1] is None for f, b in zip(forms, bounds) if f.tail != "mma")
    dq, dk, dv = mma  # (the lowering's order: dQ, dK, dV)
    assert bounds[dq][0] is not None and bounds[dk][1] is not None and bounds[dv][1] is not None
    src = {i: cg.render_kernel(k, t.default_config(k, t), t)[0] for i, (k, _) in enumerate(lowered.kernels)}
    assert "W_ = B" in src[dq] and "W_ = B" in src[dk] and "W_ = B" not in src[dv]
    assert "rv0_[h] =" in src[dq] and "kv0_[n][c] =" in src[dv] and "kv0_" not in src[dk]
    assert all("exp2f(" not in s for s in src.values())
