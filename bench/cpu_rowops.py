"""Row operations on the CPU (issue 24: "row ops kept >= 2x"): softmax and layer norm over the last
axis at the issue's 4096 x 4096 and the suite's 512 x 1024, Ember against torch eager with the same
threads, interleaved, min of 3 medians.

    python bench/cpu_rowops.py --out bench/results/cpu-rowops-DATE.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

from cpu_gemm import _cpu_model  # noqa: E402


def timed(f, reps: int = 15) -> float:
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import torch

    import ember as em
    torch.set_num_threads(args.threads)
    rows = []
    for R, C in ((4096, 4096), (512, 1024)):
        x = em.input("x", (R, C))
        xa = np.random.default_rng(0).standard_normal((R, C)).astype(np.float32)
        tx = torch.from_numpy(xa)
        for name, y, ref in (("softmax", x.softmax(-1), lambda: torch.softmax(tx, -1)),
                             ("layernorm", em.layer_norm(x, (C,)), lambda: torch.nn.functional.layer_norm(tx, (C,)))):
            p = em.compile(y, device="cpu")
            err = float(np.abs(p(x=xa) - ref().numpy()).max())
            te, tb = [], []
            for _ in range(3):
                te.append(timed(ref))
                tb.append(timed(lambda p=p: p(x=xa)))
            row = {"case": f"{name} {R}x{C}", "eager_ms": min(te), "ember_ms": min(tb), "speedup": min(te) / min(tb),
                   "max_abs_err": err}
            rows.append(row)
            print(f"{row['case']:22s} eager {row['eager_ms']:8.3f} ms  ember {row['ember_ms']:8.3f} ms  "
                  f"{row['speedup']:5.2f}x", flush=True)
    doc = {"cpu": _cpu_model(), "threads": args.threads, "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
