"""`ember demo`: compile an MLP and a small Llama-style decoder on the default device, check both
against the reference, and print what was built and how fast it runs."""
from __future__ import annotations

import time

import numpy as np

from . import dtypes as dt


def _w(rng, *shape, scale=None):
    scale = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def mlp_graph(rng, batch="B"):
    import ember as em
    x = em.input("x", (batch, 784))
    w1, b1 = em.tensor(_w(rng, 512, 784), name="fc1.weight"), em.tensor(_w(rng, 512), name="fc1.bias")
    w2, b2 = em.tensor(_w(rng, 10, 512), name="fc2.weight"), em.tensor(_w(rng, 10), name="fc2.bias")
    return em.linear(em.linear(x, w1, b1).relu(), w2, b2).log_softmax(-1)


def decoder_graph(rng, vocab=256, dim=128, heads=4, kv_heads=2, hidden=344, seq="T"):
    """Embedding -> RMSNorm -> causal GQA attention with RoPE -> residual -> RMSNorm -> SwiGLU ->
    residual -> RMSNorm -> logits."""
    import ember as em
    hd = dim // heads
    ids = em.input("ids", (1, seq), dt.int32)
    emb = em.tensor(_w(rng, vocab, dim, scale=1.0), name="embed")
    h = em.embedding(ids, emb)  # (1, T, dim)
    n1 = em.rms_norm(h, dim, em.tensor(1 + 0.1 * _w(rng, dim, scale=1.0), name="norm1"), eps=1e-5)
    q = em.linear(n1, em.tensor(_w(rng, heads * hd, dim), name="wq"))
    k = em.linear(n1, em.tensor(_w(rng, kv_heads * hd, dim), name="wk"))
    v = em.linear(n1, em.tensor(_w(rng, kv_heads * hd, dim), name="wv"))
    q = q.reshape(1, seq, heads, hd).transpose(1, 2)
    k = k.reshape(1, seq, kv_heads, hd).transpose(1, 2)
    v = v.reshape(1, seq, kv_heads, hd).transpose(1, 2)
    cos, sin = em.rope_cos_sin(seq, hd)
    q, k = em.rotary_embedding(q, cos, sin), em.rotary_embedding(k, cos, sin)
    a = em.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    h = h + em.linear(a.transpose(1, 2).reshape(1, seq, dim), em.tensor(_w(rng, dim, dim), name="wo"))
    n2 = em.rms_norm(h, dim, em.tensor(1 + 0.1 * _w(rng, dim, scale=1.0), name="norm2"), eps=1e-5)
    gate = em.linear(n2, em.tensor(_w(rng, hidden, dim), name="w1"))
    up = em.linear(n2, em.tensor(_w(rng, hidden, dim), name="w3"))
    h = h + em.linear(em.silu(gate) * up, em.tensor(_w(rng, dim, hidden), name="w2"))
    return em.linear(em.rms_norm(h, dim, eps=1e-5), emb)  # tied embeddings


def _check(name: str, y, fn, inputs: dict) -> bool:
    import ember as em
    out = fn(**inputs)
    ref = em.reference(y, **inputs)
    err = float(np.max(np.abs(out.astype(np.float64) - ref.astype(np.float64))))
    scale = float(np.max(np.abs(ref)))
    ok = err <= 1e-4 + 1e-4 * scale
    print(f"  {name}: output {out.shape} {out.dtype}, max|out-ref| = {err:.2e} -> {'OK' if ok else 'MISMATCH'}")
    return ok


def run(device: str | None = None, search: str = "none") -> int:
    import ember as em
    dev = em.get_target(device)
    print(f"Ember {em.__version__} demo on {dev}")
    rng = np.random.default_rng(0)
    ok = True
    for title, y, inputs in [
        ("MLP 784-512-10 (batch 64)", mlp_graph(rng), {"x": rng.standard_normal((64, 784)).astype(np.float32)}),
        ("Llama-style decoder (dim 128, 4 heads / 2 kv heads, seq 32)", decoder_graph(rng),
         {"ids": rng.integers(0, 256, (1, 32)).astype(np.int32)}),
    ]:
        print(f"\n== {title}")
        t0 = time.perf_counter()
        fn = em.compile(y, device=dev, search=search)
        print(f"  compiled in {time.perf_counter() - t0:.2f} s: {len(fn.launches)} kernels")
        ok &= _check("check vs reference", y, fn, inputs)
        fn.profile(**inputs)
        print("\n".join("  " + line for line in fn.report().splitlines()))
    print("\nall outputs match the reference" if ok else "\nSOME OUTPUTS DO NOT MATCH THE REFERENCE")
    return 0 if ok else 1
