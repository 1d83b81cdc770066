"""Train a small character-level transformer language model on a bundled text, then sample from it.

    python examples/train_char_transformer.py --device cpu --steps 500

The model is ember.nn.Transformer (Llama-style decoder blocks: RMSNorm, causal attention with RoPE,
SwiGLU). Forward, backward and the AdamW update are one compiled program (em.compile_train); the text
is ember/data/lighthouse.txt, a ~5 KB story written for Ember.
"""
from __future__ import annotations

import argparse
import math
import sys
import time

import ember as em
import numpy as np
from ember import data, nn, optim


def schedule(k: int, base: float, total: int, warmup: int = 30) -> float:
    if k <= warmup:
        return base * k / warmup
    return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (k - warmup) / max(total - warmup, 1))))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--search", default="none", choices=["none", "fast", "full"])
    ap.add_argument("--sample", type=int, default=300, help="characters to generate after training")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    text = data.text()
    chars, index = data.char_vocab(text)
    ids = np.array([index[c] for c in text], np.int32)
    vocab, T, B = len(chars), args.seq, args.batch
    split = int(0.9 * len(ids))
    train_ids, val_ids = ids[:split], ids[split:]
    print(f"{len(text)} characters, vocabulary of {vocab}; training on {split}, validating on {len(ids) - split}")

    rng = np.random.default_rng(args.seed)

    def batch(src):
        starts = rng.integers(0, len(src) - T - 1, B)
        return {"x": np.stack([src[s:s + T] for s in starts]), "y": np.stack([src[s + 1:s + T + 1] for s in starts])}

    def loss_fn(m, b):
        logits = m(b["x"])
        return em.cross_entropy(logits.reshape(B * T, vocab), b["y"].reshape(B * T))

    model = nn.Transformer(vocab, args.dim, args.layers, args.heads, seed=args.seed)
    print(f"model: {args.layers} layers, dim {args.dim}, {args.heads} heads, "
          f"{sum(p.size for p in model.parameters())} parameters")
    t0 = time.perf_counter()
    step = em.compile_train(model, loss_fn, optim.AdamW(weight_decay=0.01), batch(train_ids),
                            device=args.device, search=args.search)
    print(f"compiled the training step for {step.program.device} in {time.perf_counter() - t0:.1f} s "
          f"({len(step.program.launches)} kernels)")

    t0, avg = time.perf_counter(), None
    for k in range(1, args.steps + 1):
        loss = step(batch(train_ids), lr=schedule(k, args.lr, args.steps))
        avg = loss if avg is None else 0.95 * avg + 0.05 * loss
        if k % 5 == 0 or k == args.steps:
            done = k / args.steps
            bar = "#" * int(30 * done) + "-" * (30 - int(30 * done))
            rate = k / (time.perf_counter() - t0)
            sys.stdout.write(f"\r[{bar}] step {k}/{args.steps}  loss {avg:.3f}  {rate:.1f} steps/s")
            sys.stdout.flush()
    print()

    # evaluate and sample with the trained weights: write them back, compile the forward pass alone
    step.write_back()
    model.eval()
    tokens = em.input("tokens", ("B", T), em.int32)
    logits = model(tokens)
    forward = em.compile(logits, device=args.device)
    vb = [batch(val_ids) for _ in range(8)]
    val = []
    for b in vb:
        lg = np.asarray(forward(tokens=b["x"]), np.float64).reshape(-1, vocab)
        lg -= lg.max(-1, keepdims=True)
        logp = lg - np.log(np.exp(lg).sum(-1, keepdims=True))
        val.append(-np.mean(logp[np.arange(len(lg)), b["y"].reshape(-1)]))
    print(f"validation loss {np.mean(val):.3f} (uniform guessing: {math.log(vocab):.3f})")

    if args.sample:
        ctx = list(ids[:T])
        out = []
        for _ in range(args.sample):
            lg = np.asarray(forward(tokens=np.array([ctx[-T:]], np.int32)), np.float64)[0, -1] / 0.8
            p = np.exp(lg - lg.max())
            nxt = int(rng.choice(vocab, p=p / p.sum()))
            ctx.append(nxt)
            out.append(chars[nxt])
        print("--- sample (prompt: the first", T, "characters) ---")
        print("".join(chars[i] for i in ids[:T]) + "".join(out))


if __name__ == "__main__":
    main()
