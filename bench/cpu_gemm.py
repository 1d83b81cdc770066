"""CPU GEMMs: Ember's packed form (codegen/c_gemm.py) against torch (MKL) on the same threads.

Cases: square matmuls, an MLP 784-512-10 at batch 64, a Linear(4096, 4096) at batch 64, two 3x3
convolutions (implicit GEMM). Each is
timed end to end (one call of the compiled program, numpy in and out; torch on tensors that share
the numpy memory), interleaved, median of `--reps`; the previous CPU forms (blocked / loops, what
`default_config(k, wide=False)` picks) are timed too. Writes bench/results/cpu-gemm-<date>.json.

    PYTHONPATH=$PWD python bench/cpu_gemm.py [--reps 15] [--threads 2] [--out PATH]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import time

import numpy as np


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _time(fns: dict, reps: int) -> dict:
    for f in fns.values():
        f()
        f()
    ts: dict = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            ts[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) * 1e3 for k, v in ts.items()}


def _build(y, wide: bool):
    import ember as em
    from ember import pipeline
    from ember.backends.target import get_target
    from ember.codegen import c as cgen
    if wide:
        return em.compile(y, device="cpu")
    target = get_target("cpu")
    lowered = pipeline.lower([y.node], None, target)
    return pipeline.build_program(lowered, target, None, "single",
                                  configs=[cgen.default_config(k, wide=False) for k, _ in lowered.kernels])


def cases():
    import torch

    import ember as em
    rng = np.random.default_rng(0)

    def R(*s):
        return rng.standard_normal(s).astype(np.float32)

    for n in (1024, 2048, 4096):
        x, w = em.input("x", (n, n)), em.input("w", (n, n))
        a, b = R(n, n), R(n, n)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        yield f"matmul {n}^3", 2 * n ** 3, x @ w, {"x": a, "w": b}, lambda ta=ta, tb=tb: ta @ tb

    x = em.input("x", (64, 784))
    w1, b1, w2, b2 = R(512, 784) * 0.05, R(512), R(10, 512) * 0.05, R(10)
    y = (x @ em.tensor(w1).transpose(0, 1) + em.tensor(b1)).relu() @ em.tensor(w2).transpose(0, 1) + em.tensor(b2)
    mlp = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    with torch.no_grad():
        for p, v in zip(mlp.parameters(), (w1, b1, w2, b2)):
            p.copy_(torch.from_numpy(v))
    xa = R(64, 784)
    tx = torch.from_numpy(xa)
    yield "MLP 784-512-10 batch 64", 2 * 64 * (784 * 512 + 512 * 10), y, {"x": xa}, lambda: mlp(tx)

    x = em.input("x", (64, 4096))
    w, b = R(4096, 4096) * 0.02, R(4096)
    y = x @ em.tensor(w).transpose(0, 1) + em.tensor(b)
    lin = torch.nn.Linear(4096, 4096)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(w))
        lin.bias.copy_(torch.from_numpy(b))
    xa = R(64, 4096)
    tx = torch.from_numpy(xa)
    yield "Linear(4096, 4096) batch 64", 2 * 64 * 4096 * 4096, y, {"x": xa}, lambda: lin(tx)

    from ember.ops.conv import conv2d
    for c, hw in ((64, 56), (256, 14)):  # implicit GEMM: the packing loops evaluate the im2col index
        x = em.input("x", (1, c, hw, hw))
        w = R(c, c, 3, 3) * 0.05
        xa = R(1, c, hw, hw)
        tx, tw = torch.from_numpy(xa), torch.from_numpy(w)
        yield (f"conv3x3 {c}->{c} {hw}x{hw} batch 1", 2 * c * c * 9 * hw * hw, conv2d(x, em.tensor(w), padding=1),
               {"x": xa}, lambda tx=tx, tw=tw: torch.nn.functional.conv2d(tx, tw, padding=1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=f"bench/results/cpu-gemm-{datetime.date.today().isoformat()}.json")
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    import ember as em
    torch.set_num_threads(args.threads)
    rows = []
    with torch.no_grad():
        for name, flops, y, ins, tfn in cases():
            # the pre-packed forms only where they finish in seconds (4096^3 ran ~10 s a call in them)
            new, old = _build(y, True), (_build(y, False) if flops < 2e10 else None)
            ref = em.reference(y, **ins)
            for p in (new, old) if old is not None else (new,):
                out = p(**ins)
                assert np.abs(out - ref).max() <= 1e-4 + 1e-4 * np.abs(ref).max(), name
            fns = {"ember": lambda: new(**ins), "torch": tfn}
            if old is not None:
                fns["ember_old_forms"] = lambda: old(**ins)
            t = _time(fns, args.reps if flops < 1e10 else max(3, args.reps // 3))
            t.setdefault("ember_old_forms", float("nan"))
            row = {"case": name, "flops": flops, "packed": "_uk(" in new.source,
                   **{f"{k}_ms": round(v, 4) for k, v in t.items()},
                   **{f"{k}_gflops": round(flops / v / 1e6, 1) for k, v in t.items()},
                   "ratio_torch_over_ember": round(t["torch"] / t["ember"], 3),
                   "ratio_torch_over_old": round(t["torch"] / t["ember_old_forms"], 3)}
            rows.append(row)
            print(f"{name:30s} ember {t['ember']:8.3f} ms {row['ember_gflops']:6.1f} GF/s | old forms "
                  f"{t['ember_old_forms']:8.3f} ms | torch {t['torch']:8.3f} ms {row['torch_gflops']:6.1f} GF/s | "
                  f"torch/ember {row['ratio_torch_over_ember']:.2f}", flush=True)
    res = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "cpu": _cpu_model(), "threads": args.threads, "torch": torch.__version__,
           "torch_blas": "mkl" if torch.backends.mkl.is_available() else "other", "numpy": np.__version__,
           "timing": "end to end per call, interleaved, median", "reps": args.reps, "rows": rows}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
