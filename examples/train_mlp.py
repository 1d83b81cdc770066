"""Train an MLP on a synthetic classification task with Ember's compiled training step.

    python examples/train_mlp.py --device cpu --steps 300

Forward, backward and the AdamW update are one compiled program (em.compile_train); the learning
rate follows a warm-up + cosine schedule passed in at every call without recompiling.
"""
from __future__ import annotations

import argparse
import math
import sys
import time

import ember as em
import numpy as np
from ember import nn, optim


def blobs(n: int, dim: int, classes: int, seed: int):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((classes, dim)) * 2.0
    y = rng.integers(0, classes, n)
    x = centres[y] + rng.standard_normal((n, dim)) * 3.0  # overlapping classes: not trivially separable
    return x.astype(np.float32), y.astype(np.int32)


def schedule(k: int, base: float, total: int, warmup: int = 20) -> float:
    if k <= warmup:
        return base * k / warmup
    return base * 0.5 * (1 + math.cos(math.pi * (k - warmup) / max(total - warmup, 1)))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--search", default="none", choices=["none", "fast", "full"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    dim, classes = 32, 10
    x, y = blobs(20000, dim, classes, args.seed)
    xtest, ytest = x[-2000:], y[-2000:]
    x, y = x[:-2000], y[:-2000]
    model = nn.MLP([dim, args.hidden, args.hidden, classes], activation="gelu", seed=args.seed)

    t0 = time.perf_counter()
    step = em.compile_train(model, lambda m, b: em.cross_entropy(m(b["x"]), b["y"]),
                            optim.AdamW(weight_decay=0.01), {"x": x[:args.batch], "y": y[:args.batch]},
                            device=args.device, search=args.search)
    print(f"compiled the training step for {step.program.device} in {time.perf_counter() - t0:.1f} s "
          f"({len(step.program.launches)} kernels)")

    rng = np.random.default_rng(args.seed + 1)
    order = rng.permutation(len(x))
    t0, pos, avg = time.perf_counter(), 0, None
    for k in range(1, args.steps + 1):
        if pos + args.batch > len(order):
            order, pos = rng.permutation(len(x)), 0
        idx = order[pos:pos + args.batch]
        pos += args.batch
        loss = step({"x": x[idx], "y": y[idx]}, lr=schedule(k, args.lr, args.steps))
        avg = loss if avg is None else 0.95 * avg + 0.05 * loss
        if k % 10 == 0 or k == args.steps:
            done = k / args.steps
            bar = "#" * int(30 * done) + "-" * (30 - int(30 * done))
            rate = k / (time.perf_counter() - t0)
            sys.stdout.write(f"\r[{bar}] step {k}/{args.steps}  loss {avg:.4f}  {rate:.0f} steps/s")
            sys.stdout.flush()
    print()

    step.write_back()  # the trained weights into the module, then an inference program
    model.eval()
    xin = em.input("x", ("B", dim))
    predict = em.compile(model(xin).argmax(-1), device=args.device)
    acc = float(np.mean(predict(x=xtest) == ytest))
    print(f"test accuracy {acc:.3f} ({len(xtest)} held-out samples, {classes} classes)")


if __name__ == "__main__":
    main()
