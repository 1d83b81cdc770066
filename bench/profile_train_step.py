"""cProfile of the compiled MLP training step's host path on CUDA (not a test; a diagnostic).
Usage: python bench/profile_train_step.py"""
import cProfile
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, "bench")
import ember as em  # noqa: E402
from ember import optim  # noqa: E402

from train import build_mlp  # noqa: E402

cfg = {"sizes": [784, 1024, 1024, 10], "batch": 256}
rng = np.random.default_rng(0)
model, _, batch, em_loss, _, _ = build_mlp(cfg, rng)
b = batch()
step = em.compile_train(model, em_loss, optim.AdamW(lr=1e-3, weight_decay=0.01), b, device="cuda")
for _ in range(5):
    step(b)
t0 = time.perf_counter()
for _ in range(50):
    step(b)
print(f"step wall {(time.perf_counter() - t0) / 50 * 1e6:.0f} us; graphs cached {len(step.program.executor._graphs)}, "
      f"sightings {len(step.program.executor._sightings)}")
pr = cProfile.Profile()
pr.enable()
for _ in range(50):
    step(b)
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(22)
