"""Data-parallel training on the CPU (issue 25): `compile_train(data_parallel=True)` over N gloo ranks
against one process on the global batch, with the gradient all-reduces overlapped with the backward
or not (`CPUExecutor.overlap`), and with one bucket or several.

    python bench/dp_cpu.py --out bench/results/dp-cpu-DATE.json [--ranks 2]

Each rank runs with OMP_NUM_THREADS = cores / ranks; the single process uses every core."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

WIDTH, DEPTH, BATCH, STEPS = 1024, 6, 128, 12


def model():
    import ember.nn as nn
    layers = []
    for i in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH, seed=i), nn.Tanh()]
    return nn.Sequential(*layers, nn.Linear(WIDTH, 10, seed=99))


def run(data_parallel: bool, overlap: bool, bucket: int) -> dict:
    import ember as em
    import ember.optim  # noqa: F401
    import ember.train
    from ember.backends.cpu import CPUExecutor
    from ember.comm import current
    r, W = current().rank, current().world
    CPUExecutor.overlap = overlap
    ember.train.BUCKET_ELEMS = bucket
    rng = np.random.default_rng(0)
    X = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
    Y = rng.standard_normal((BATCH, 10)).astype(np.float32)
    rows = slice(r * BATCH // W, (r + 1) * BATCH // W) if data_parallel else slice(None)

    def loss_fn(m, b):
        return ((m(b["x"]) - b["y"]) ** 2).mean()
    step = em.compile_train(model(), loss_fn, em.optim.SGD(lr=0.01), {"x": X[rows], "y": Y[rows]}, device="cpu",
                            data_parallel=data_parallel)
    for _ in range(2):
        step({"x": X[rows], "y": Y[rows]})
    ts = []
    for _ in range(STEPS):
        current().barrier()
        t0 = time.perf_counter()
        loss = step({"x": X[rows], "y": Y[rows]})
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return {"ms_per_step": 1e3 * ts[len(ts) // 2], "loss": float(loss),
            "collectives": sum(1 for l in step.program.launches if l.collective)}


def worker(args) -> int:
    import ember.distributed as ed
    comm = ed.init()
    rows = []
    for overlap, bucket in ((False, 1 << 30), (False, 1 << 18), (True, 1 << 18)):
        r = run(True, overlap, bucket)
        rows.append({"ranks": comm.world, "overlap": overlap, "bucket_elems": bucket, **r})
    if comm.rank == 0:
        with open(args.part, "w") as f:
            json.dump(rows, f)
    ed.shutdown()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--part", default="/tmp/dp-part.json")
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    from ember.backends.cpu import cpu_identity
    from ember.distributed import launch
    cores = os.cpu_count() or 1
    os.environ["OMP_NUM_THREADS"] = str(max(cores // args.ranks, 1))
    code = launch([sys.executable, os.path.abspath(__file__), "--worker", "--part", args.part], args.ranks, timeout_s=900)
    rows = json.load(open(args.part)) if code == 0 else []
    os.environ["OMP_NUM_THREADS"] = str(cores)
    import subprocess
    single = subprocess.run([sys.executable, "-c", "import sys, json; sys.path.insert(0, %r); import dp_cpu; "
                             "print(json.dumps(dp_cpu.run(False, True, 1 << 30)))" % os.path.dirname(os.path.abspath(__file__))],
                            capture_output=True, text=True, env=dict(os.environ))
    one = json.loads(single.stdout.strip().splitlines()[-1])
    res = {"date": time.strftime("%Y-%m-%d"), "cpu": cpu_identity(), "cores": cores,
           "model": f"MLP {DEPTH}x{WIDTH} tanh, SGD, global batch {BATCH}, float32", "exit": code,
           "single_process": one, "data_parallel": rows}
    print(json.dumps(res, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    return code


if __name__ == "__main__":
    sys.exit(main())
