"""How long does building a view-heavy graph take? (graph construction is on the hot path: every
Tensor op builds nodes, composes views and simplifies index expressions.)

    python bench/graph_build.py [--layers N] [--profile]

Builds a transformer-like stack (linear -> split heads (reshape + permute) -> attention -> merge
heads -> residual -> layer norm, plus a conv-style unfold/pad/slice block per layer) with constant
and with symbolic (B, S) shapes, and prints nodes, view nodes, seconds and microseconds per node.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember as em  # noqa: E402
from ember import graph as g  # noqa: E402


def build(layers: int, symbolic: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    D, H = 64, 4
    Dh = D // H
    B, S = ("B", "S") if symbolic else (2, 12)
    x = em.input("x", (B, S, D), em.float32)

    def w(*shape):
        return em.tensor(rng.standard_normal(shape).astype(np.float32) * 0.05)

    def heads(t):  # (B, S, D) -> (B, H, S, Dh)
        return t.reshape(t.shape[0], t.shape[1], H, Dh).permute(0, 2, 1, 3)

    for _ in range(layers):
        q, k, v = heads(x @ w(D, D)), heads(x @ w(D, D)), heads(x @ w(D, D))
        att = (q @ k.transpose(-1, -2)) * (1.0 / Dh ** 0.5)
        att = em.softmax(att, axis=-1) if hasattr(em, "softmax") else att.exp()
        o = (att @ v).permute(0, 2, 1, 3).reshape(x.shape[0], x.shape[1], D)
        x = em.layer_norm(x + o @ w(D, D), (D,))
        # a conv-like block over the sequence: pad, sliding windows, strided slice, flip
        c = x.permute(0, 2, 1)                                    # (B, D, S)
        c = em.pad(c, (1, 1))                                     # (B, D, S+2)
        win = g.apply_view(c.node, lambda vw: vw.unfold(2, 3))    # (B, D, S, 3)
        c = em.Tensor(win).sum(axis=-1)
        c = c.flip(-1).flip(-1)
        x = x + c.permute(0, 2, 1)
    return x


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=0, help="layers (default: enough for ~2000 nodes)")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    for symbolic in (False, True):
        layers = args.layers or 1
        if not args.layers:  # grow until ~2000 nodes
            per = len(g.toposort([build(1, symbolic, seed=99).node]))
            layers = max(1, round(2000 / per))
        prof = cProfile.Profile() if args.profile else None
        t0, c0 = time.perf_counter(), time.process_time()
        if prof:
            prof.enable()
        y = build(layers, symbolic)
        if prof:
            prof.disable()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        nodes = g.toposort([y.node])
        views = sum(n.op == g.VIEW for n in nodes)
        t1 = time.perf_counter()
        _ = y.node.key  # the structural hash is part of what is timed
        dk = time.perf_counter() - t1
        print(f"{'symbolic' if symbolic else 'constant'} shapes: {layers} layers, {len(nodes)} nodes "
              f"({views} views): build {dt:.3f} s wall, {dc:.3f} s cpu ({1e6 * dc / len(nodes):.0f} us/node), "
              f"key {dk * 1e3:.1f} ms")
        if prof:
            pstats.Stats(prof).sort_stats(os.environ.get("SORT", "cumulative")).print_stats(25)


if __name__ == "__main__":
    main()
