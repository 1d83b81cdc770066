"""Autograd on whole models against PyTorch autograd: a small Llama-style transformer (static and named
sequence length) and a conv net."""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import ember as em  # noqa: E402
from tests.autograd_checks import rot_half_torch, run, tensor_sizes  # noqa: E402
from tests.conftest import SEEDS, assert_close  # noqa: E402


def _em_block(x, p, i, heads):
    b, s, d = x.shape
    hd = d // heads
    h = em.rms_norm(x, d, p[f"n{i}"], eps=1e-6)
    q, k, v = em.linear(h, p[f"qkv{i}"]).split([d, d, d], -1)
    q, k, v = [t.reshape(b, s, heads, hd).transpose(1, 2) for t in (q, k, v)]
    cos, sin = em.rope_cos_sin(s, hd)
    q, k = em.rotary_embedding(q, cos, sin), em.rotary_embedding(k, cos, sin)
    a = em.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d)
    x = x + em.linear(a, p[f"o{i}"])
    h = em.rms_norm(x, d, p[f"m{i}"], eps=1e-6)
    return x + em.linear(em.linear(h, p[f"up{i}"]).silu(), p[f"down{i}"])


def _torch_block(x, p, i, heads):
    b, s, d = x.shape
    hd = d // heads
    h = F.rms_norm(x, (d,), p[f"n{i}"], eps=1e-6)
    q, k, v = F.linear(h, p[f"qkv{i}"]).split([d, d, d], -1)
    q, k, v = [t.reshape(b, s, heads, hd).transpose(1, 2) for t in (q, k, v)]
    inv = torch.exp(torch.arange(0, hd // 2, dtype=torch.float64) * (-2.0 * math.log(10000.0) / hd))
    ang = torch.arange(s, dtype=torch.float64)[:, None] * inv[None]
    ang = torch.cat([ang, ang], -1)
    q, k = rot_half_torch(q, ang.cos(), ang.sin()), rot_half_torch(k, ang.cos(), ang.sin())
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d)
    x = x + F.linear(a, p[f"o{i}"])
    h = F.rms_norm(x, (d,), p[f"m{i}"], eps=1e-6)
    return x + F.linear(F.silu(F.linear(h, p[f"up{i}"])), p[f"down{i}"])


_D, _V, _HEADS = 16, 23, 2
_TSHAPES = {"emb": (_V, _D)}
for _i in range(2):
    _TSHAPES.update({f"n{_i}": (_D,), f"qkv{_i}": (3 * _D, _D), f"o{_i}": (_D, _D), f"m{_i}": (_D,),
                     f"up{_i}": (3 * _D, _D), f"down{_i}": (_D, 3 * _D)})


def _transformer_grads(seq):
    p = {k: em.input(k, s, em.float32) for k, s in _TSHAPES.items()}
    ids = em.input("ids", (2, seq), em.int32)
    x = em.embedding(ids, p["emb"])
    for i in range(2):
        x = _em_block(x, p, i, _HEADS)
    loss = em.cross_entropy(em.linear(x, p["emb"]).reshape(-1, _V), ids.reshape(-1))
    return em.grad(loss, list(p.values()))


@pytest.mark.parametrize("seed", SEEDS)
def test_transformer_grads_vs_torch(seed):
    rng = np.random.default_rng(seed)
    arrays = {k: (rng.standard_normal(s) * 0.3).astype(np.float32) for k, s in _TSHAPES.items()}
    static, symbolic = _transformer_grads(7), _transformer_grads("S")
    for seq, grads in ((7, static), (7, symbolic), (4, symbolic)):
        arrays["ids"] = rng.integers(0, _V, (2, seq)).astype(np.int32)
        got = run(grads, arrays)
        tp = {k: torch.tensor(a.astype(np.float64), requires_grad=True) for k, a in arrays.items() if k != "ids"}
        ids = torch.tensor(arrays["ids"], dtype=torch.long)
        x = F.embedding(ids, tp["emb"])
        for i in range(2):
            x = _torch_block(x, tp, i, _HEADS)
        tl = F.cross_entropy(F.linear(x, tp["emb"]).reshape(-1, _V), ids.reshape(-1))
        want = torch.autograd.grad(tl, list(tp.values()))
        for k, gv, tg in zip(tp, got, want):
            assert_close(gv, tg.numpy(), "float32", f"S={seq} d/d{k}")
    # the named-dimension gradient graph is as cheap as the static one: no view fell back to
    # enumeration because its index could not be simplified
    assert max(tensor_sizes(symbolic, {"S": 7})) == max(tensor_sizes(static, {}))


@pytest.mark.parametrize("seed", SEEDS)
def test_convnet_grads_vs_torch(seed):
    rng = np.random.default_rng(seed)
    shapes = {"c1": (4, 1, 3, 3), "b1": (4,), "c2": (6, 4, 3, 3), "b2": (6,), "fc": (5, 6 * 3 * 3), "bf": (5,)}
    arrays = {k: (rng.standard_normal(s) * 0.4).astype(np.float32) for k, s in shapes.items()}
    arrays["img"] = rng.standard_normal((3, 1, 13, 13)).astype(np.float32)
    arrays["label"] = rng.integers(0, 5, 3).astype(np.int32)
    p = {k: em.input(k, s, em.float32) for k, s in shapes.items()}
    img, label = em.input("img", (3, 1, 13, 13)), em.input("label", (3,), em.int32)
    h = em.max_pool2d(em.conv2d(img, p["c1"], p["b1"], padding=1).relu(), 2)             # (3, 4, 6, 6)
    h = em.avg_pool2d(em.conv2d(h, p["c2"], p["b2"], stride=1, padding=1).gelu(), 2)     # (3, 6, 3, 3)
    loss = em.cross_entropy(em.linear(h.flatten(1), p["fc"], p["bf"]), label)
    got = run(em.grad(loss, list(p.values())), arrays)
    tp = {k: torch.tensor(arrays[k].astype(np.float64), requires_grad=True) for k in shapes}
    ti = torch.tensor(arrays["img"].astype(np.float64))
    th = F.max_pool2d(F.conv2d(ti, tp["c1"], tp["b1"], padding=1).relu(), 2)
    th = F.avg_pool2d(F.gelu(F.conv2d(th, tp["c2"], tp["b2"], padding=1)), 2)
    tl = F.cross_entropy(F.linear(th.flatten(1), tp["fc"], tp["bf"]), torch.tensor(arrays["label"], dtype=torch.long))
    for k, gv, tg in zip(tp, got, torch.autograd.grad(tl, list(tp.values()))):
        assert_close(gv, tg.numpy(), "float32", f"d/d{k}")
