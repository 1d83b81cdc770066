"""Attention's backward with its scores recomputed per key tile (kernel/scores.py,
codegen/cuda_scores.py): the gradient kernels and the row statistics they read stream; no score,
probability or score gradient is stored."""
from __future__ import annotations


import numpy as np
import pytest

import ember as em
from ember.backends.target import get_target
from ember.kernel.lower import lower
from ember.kernel.scores import score_form, score_forms, shared_scores


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
    forms = [f for k, _ in lowered.kernels for f in (score_forms(k) or [None])]
    assert all(f is not None for f in forms) and len(forms) == 6
    # the three statistics one online kernel; dK and dV one kernel
    assert len(lowered.kernels) == 3
    assert sorted(f.tail for f in forms) == ["max", "mma", "mma", "mma", "sum", "sum"]
    assert [len(f.scores) for f in forms if f.tail == "mma"].count(2) == 2  # dQ, dK: S and dP
    assert all(t.default_config(k, t)["mode"] == "scores" for k, _ in lowered.kernels)
    temps = [em.symbolic.evaluate(em.symbolic.prod(b.shape), {}) for b in lowered.buffers.values() if b.kind == "temp"]
    assert len(temps) == 3 and max(temps) < L * S  # the three statistics, one value a row


def test_scores_kernels_compile_for_sm90():
    pytest.importorskip("cuda.core")
    p = em.compile(_grads(1, 2, 130, 130, 64, True), device="h100")  # renders and NVRTC-compiles
    assert [l.config.get("mode") for l in p.launches] == ["scores"] * 3


def test_dk_and_dv_merge_into_one_kernel_sharing_their_scores():
    """kernel/siblings.py: dK and dV are one kernel with two outputs, its two forms sharing
    Sᵀ = k qᵀ (two distinct products, not three) and both tails reading a score's tile; at head
    dim 128 the row operands' fragments come from shared memory (knob afrag) to leave registers for
    the second accumulator."""
    from ember.codegen import cuda as cg
    t = get_target("h100")
    for D in (64, 128):
        lowered = lower([x.node for x in _grads(1, 2, 1024, 1024, D, True)], target=t)
        (k, args), = [(k, a) for k, a in lowered.kernels if len(score_forms(k)) == 2]
        assert sorted(args[p.name] for p in k.buffers if p.role == "out") == ["out1", "out2"]
        scores, maps = shared_scores(score_forms(k))
        assert len(scores) == 2 and set(maps[1].values()) <= set(maps[0].values())
        cfg = t.default_config(k, t)
        assert cfg.get("afrag", "regs") == ("smem" if D == 128 else "regs")
        src = cg.render_kernel(k, cfg, t)[0]
        assert "W0_ = B" in src and "W1_ = B" in src  # (both tails read a score's tile: no ring of their own)
        assert src.split("__global__")[-1].count("em_ex2(") == 2  # (full and edge tiles: once each)
        assert ("fa_[4]" in src) == (D == 128)


def test_merged_siblings_run_on_the_cpu_as_their_two_bodies():
    """The merge is plain IR (the second body after the first, renamed apart): any backend runs it.
    Two reductions over the same rows, merged with permissive predicates, equal numpy on the CPU."""
    from ember import pipeline
    from ember.kernel.siblings import merge_siblings
    x = em.input("x", (37, 53), "float32")
    y = em.input("y", (37, 53), "float32")
    a, b = (x * 2.0).sum(-1), (y.exp() + x).max(-1)
    t = get_target("cpu")
    lowered = lower([a.node, b.node], target=t)
    assert len(lowered.kernels) == 2
    lowered.kernels = merge_siblings(lowered.kernels, lambda k: True, lambda m: True)
    assert len(lowered.kernels) == 1 and len([p for p in lowered.kernels[0][0].buffers if p.role == "out"]) == 2
    p = pipeline.build_program(lowered, t, None, "tuple")
    rng = np.random.default_rng(0)
    xv, yv = rng.standard_normal((37, 53), np.float32), rng.standard_normal((37, 53), np.float32)
    ga, gb = p(x=xv, y=yv)
    np.testing.assert_allclose(ga, (xv * 2).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(gb, (np.exp(yv) + xv).max(-1), rtol=1e-5)
    # a kernel reading another's output merges only with kernels it does not depend on
    c = (a.unsqueeze(-1) * y).sum(-1) + b
    lowered2 = lower([a.node, c.node, b.node], target=t)
    n = len(lowered2.kernels)
    lowered2.kernels = merge_siblings(lowered2.kernels, lambda k: True, lambda m: True)
    assert len(lowered2.kernels) < n
    ga, gc, gb = pipeline.build_program(lowered2, t, None, "tuple")(x=xv, y=yv)
    want_a, want_b = (xv * 2).sum(-1), (np.exp(yv) + xv).max(-1)
    np.testing.assert_allclose(gc, (want_a[:, None] * yv).sum(-1) + want_b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gb, want_b, rtol=1e-5)


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
    assert modes.count("scores") == 3 and len(modes) == 5  # (the statistics one kernel, dK and dV one)


@pytest.mark.cuda
@pytest.mark.parametrize("shape", [(1, 2, 300, 300, 64, True, None), (2, 3, 129, 257, 128, False, None),
                                   (1, 4, 512, 512, 128, True, None), (2, 2, 1000, 1000, 64, True, None),
                                   (1, 4, 200, 200, 64, True, 2)])
def test_cuda_attention_backward_equals_torch(shape):
    import torch
    B, H, L, S, D, causal, Hkv = shape
    p = em.compile(_grads(B, H, L, S, D, causal, Hkv=Hkv), device="cuda")
    assert [l.config.get("mode") for l in p.launches].count("scores") == 3
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


@pytest.mark.cuda
@pytest.mark.parametrize("shape", [(1, 2, 300, 300, 64, True), (2, 2, 257, 257, 128, True)])
def test_cuda_attention_forward_and_backward_in_one_program_equal_torch(shape):
    """o and the gradients from one program: o merged with dQ (both over the query rows)."""
    import torch
    B, H, L, S, D, causal = shape
    q, k, v = (em.input(n, (B, H, L, D), "bfloat16") for n in "qkv")
    do = em.input("do", (B, H, L, D), "bfloat16")
    o = em.scaled_dot_product_attention(q, k, v, is_causal=causal)
    grads = em.grad((o.cast("float32") * do.cast("float32")).sum(), [q, k, v])
    p = em.compile((o, *grads), device="cuda")
    assert [l.config.get("mode") for l in p.launches] == ["scores"] * 3
    torch.manual_seed(1)
    ins = {n: torch.randn(B, H, L, D, device="cuda").bfloat16() for n in ("q", "k", "v", "do")}
    got = p(**ins)
    fq, fk, fv = (ins[n].double().requires_grad_(True) for n in "qkv")
    fo = torch.nn.functional.scaled_dot_product_attention(fq, fk, fv, is_causal=causal)
    want = (fo,) + torch.autograd.grad(fo, (fq, fk, fv), ins["do"].double())
    for g_, w_ in zip(got, want):
        rel = float((g_.double() - w_.detach()).abs().max() / w_.detach().abs().max())
        assert np.isfinite(rel) and rel < 2e-2, rel


def _unmerged(t):
    """Target `t` without the merges of kernel/siblings.py (its hook without `siblings`, `stat_chains`)."""
    import dataclasses
    base = t.online_softmax

    def hook(k, form, target=None):
        return base(k, form, target)
    hook.prologues, hook.scores = base.prologues, base.scores
    return dataclasses.replace(t, online_softmax=hook)


def test_scores_kernels_skip_causal_tiles_share_tiles_and_hoist_statistics():
    """The renderer's structure on the six kernels of a causal backward left apart: the key loop
    bounded from above (statistics, dQ) or below (dK, dV) by the causal mask; dQ and dK read their
    tail operand from a score's tile; per-row statistics in registers before the key loop, dV's
    per-key ones once per key of a tile. Merged (the default), the same bounds on each form."""
    from ember.codegen import cuda as cg
    from ember.kernel.scores import key_bounds
    t = get_target("h100")  # (at 1024 keys the causal mask stays index arithmetic; smaller ones fold to data)
    apart = _unmerged(t)
    lowered = lower([x.node for x in _grads(1, 2, 1024, 1024, 64, True)], target=apart)
    forms = [score_form(k) for k, _ in lowered.kernels]
    assert len(forms) == 6 and all(f is not None for f in forms)
    bounds = [key_bounds(f)[:2] for f in forms]
    mma = [i for i, f in enumerate(forms) if f.tail == "mma"]
    assert all(b[0] is not None and b[1] is None for f, b in zip(forms, bounds) if f.tail != "mma")
    dq, dk, dv = mma  # (the lowering's order: dQ, dK, dV)
    assert bounds[dq][0] is not None and bounds[dk][1] is not None and bounds[dv][1] is not None
    src = [cg.render_kernel(k, apart.default_config(k, apart), apart)[0] for k, _ in lowered.kernels]
    assert "W0_ = B" in src[dq] and "W0_ = B" in src[dk] and "W0_ = B" not in src[dv]
    assert "rv0_[h] =" in src[dq] and "kv0_[n][c] =" in src[dv] and "kv0_" not in src[dk]
    merged = lower([x.node for x in _grads(1, 2, 1024, 1024, 128, True)], target=t)
    stats, mq, mkv = [score_forms(k) for k, _ in merged.kernels]
    assert [f.tail for f in stats] == ["max", "sum", "sum"] and [f.tail for f in mkv] == ["mma", "mma"]
    assert all(key_bounds(f)[0] is not None and key_bounds(f)[1] is None for f in stats + mq)
    assert all(key_bounds(f)[1] is not None for f in mkv)
    src += [cg.render_kernel(k, t.default_config(k, t), t)[0] for k, _ in merged.kernels]
    assert all("exp2f(" not in s for s in src)


def test_merged_backward_kernels_are_plain_ir_any_backend_runs():
    """The CUDA lowering's merged kernels (the statistics chain, dK with dV) are plain kernel IR: the
    CPU backend runs them as written (each statistic stored, then read at its own row) and the
    gradients equal torch autograd's in float64 (float16 operands, odd length, causal)."""
    torch = pytest.importorskip("torch")
    from ember import pipeline
    B, H, L, D = 1, 2, 70, 64
    lowered = lower([x.node for x in _grads(B, H, L, L, D, True, dtype="float16")], target=get_target("h100"))
    assert [len(score_forms(k)) for k, _ in lowered.kernels] == [3, 1, 2]
    p = pipeline.build_program(lowered, get_target("cpu"), None, "tuple")
    for seed in range(2):
        rng = np.random.default_rng(seed)
        q, k, v, do = (rng.standard_normal((B, H, L, D)).astype(np.float16) for _ in range(4))
        got = p(q=q, k=k, v=v, do=do)
        fq, fk, fv = (torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (q, k, v))
        o = torch.nn.functional.scaled_dot_product_attention(fq, fk, fv, is_causal=True)
        want = torch.autograd.grad(o, (fq, fk, fv), torch.tensor(do, dtype=torch.float64))
        for g_, w_ in zip(got, want):
            assert float(np.abs(np.asarray(g_, np.float64) - w_.numpy()).max() / np.abs(w_.numpy()).max()) < 2e-3


def test_forward_and_backward_in_one_program_merge_the_output_with_dq():
    """A training-shaped program (o and the gradients): o = P v is a streamed-score kernel too (the
    softmax's statistics are stored), merged with dQ (both over the query rows, sharing S and
    reading v's tile); three kernels, run by the CPU backend as written, equal to torch."""
    torch = pytest.importorskip("torch")
    from ember import pipeline
    B, H, L, D = 1, 2, 70, 64
    q, k, v = (em.input(n, (B, H, L, D), "float16") for n in "qkv")
    do = em.input("do", (B, H, L, D), "float16")
    o = em.scaled_dot_product_attention(q, k, v, is_causal=True)
    grads = em.grad((o.cast("float32") * do.cast("float32")).sum(), [q, k, v])
    lowered = lower([x.node for x in (o, *grads)], target=get_target("h100"))
    assert sorted(len(score_forms(k_)) for k_, _ in lowered.kernels) == [2, 2, 3]
    p = pipeline.build_program(lowered, get_target("cpu"), None, "tuple")
    rng = np.random.default_rng(0)
    qv, kv, vv, dov = (rng.standard_normal((B, H, L, D)).astype(np.float16) for _ in range(4))
    got = p(q=qv, k=kv, v=vv, do=dov)
    fq, fk, fv = (torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (qv, kv, vv))
    fo = torch.nn.functional.scaled_dot_product_attention(fq, fk, fv, is_causal=True)
    want = (fo,) + torch.autograd.grad(fo, (fq, fk, fv), torch.tensor(dov, dtype=torch.float64))
    for g_, w_ in zip(got, want):
        w_ = w_.detach().numpy()
        assert float(np.abs(np.asarray(g_, np.float64) - w_).max() / np.abs(w_).max()) < 2e-3


def test_sibling_merges_refuse_what_they_cannot_keep_right():
    """merge(): different row loops do not merge, and in a chain the second kernel may read the
    first's output only at the row being computed; online_stats refuses a sum that is not of
    exp2(c (X - max)) (here a plain sum of the scores after the max)."""
    import dataclasses

    from ember.kernel import ir
    from ember.kernel.siblings import merge
    from ember.kernel.scores import online_stats
    t = get_target("h100")
    x = em.input("x", (37, 53), "float32")
    a = lower([(x * 2.0).sum(-1).node], target=t).kernels[0]
    b = lower([(x * 3.0).sum(0).node], target=t).kernels[0]  # (rows over the other axis: 53, not 37)
    assert merge(a, b) is None
    # a chain whose second kernel reads the first's output at another row: refused
    k1, args1 = a
    out = next(p.name for p in k1.buffers if p.role == "out")
    body, rows = k1.body, []
    while len(body) == 1 and isinstance(body[0], ir.Loop):
        rows.append(body[0])
        body = body[0].body
    var = rows[0].var
    shifted = ir.load("b1", em.symbolic.sym(0), em.symbolic.sym(1), em.float32)  # (row 0, whatever the row)
    reader = ir.Kernel("k9", (ir.BufferParam("b0", em.float32, em.symbolic.sym(37), "out"),
                              ir.BufferParam("b1", em.float32, em.symbolic.sym(37), "in")), (),
                       (ir.Loop(var, rows[0].extent, "parallel",
                                (ir.Store("b0", em.symbolic.index_var(var, rows[0].extent), shifted),)),), {})
    assert merge((k1, args1), (reader, {"b0": "o9", "b1": args1[out]}), chain=True) is None
    same_row = dataclasses.replace(reader, body=(ir.Loop(var, rows[0].extent, "parallel", (ir.Store(
        "b0", em.symbolic.index_var(var, rows[0].extent),
        ir.load("b1", em.symbolic.index_var(var, rows[0].extent), em.symbolic.sym(1), em.float32)),)),))
    assert merge((k1, args1), (same_row, {"b0": "o9", "b1": args1[out]}), chain=True) is not None
    # online_stats: the merged statistics of the backward accept; a sum that is not exp2(c (X - m)) does not
    lowered = lower([x_.node for x_ in _grads(1, 2, 70, 70, 64, True, dtype="float16")], target=t)
    forms = score_forms(lowered.kernels[0][0])
    assert online_stats(forms) is not None
    bad = dataclasses.replace(forms[1], x=forms[0].x)  # (a sum of the max's X itself)
    assert online_stats((forms[0], bad)) is None
