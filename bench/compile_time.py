"""Compile time of a transformer block with search="fast" (not a test): cold (empty caches, a fresh
process) and from the cache (a second fresh process on the same cache directory). The block is the
demo's Llama-style decoder (embedding, RMSNorm, GQA attention with RoPE, SwiGLU, tied logits).
Usage: python bench/compile_time.py [--device cuda|cpu] [--seq 256] [--dim 512] [--out FILE]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, sys, time
import numpy as np
import ember as em
from ember.demo import decoder_graph
dev, seq, dim = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
y = decoder_graph(np.random.default_rng(0), dim=dim, heads=8, kv_heads=4, hidden=int(dim * 8 / 3) // 8 * 8, seq=seq)
ids = np.random.default_rng(1).integers(0, 256, (1, seq)).astype(np.int32)
t0 = time.perf_counter()
fn = em.compile(y, device=dev, search="fast", example_inputs={"ids": ids}, progress=False)
t = time.perf_counter() - t0
out = fn(ids=ids)
ref = em.reference(y, ids=ids)
err = float(np.max(np.abs(out.astype(np.float64) - ref)))
print(json.dumps({"compile_s": round(t, 3), "kernels": len(fn.launches), "max_abs_err": err,
                  "search": fn.meta.get("search")}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--out")
    a = ap.parse_args()
    env = dict(os.environ, EMBER_CACHE_DIR=tempfile.mkdtemp(prefix="ember_ct_"))
    res = {"device": a.device, "seq": a.seq, "dim": a.dim, "date": time.strftime("%Y-%m-%d"), "runs": []}
    if a.device == "cuda":
        try:
            import torch
            res["gpu"] = torch.cuda.get_device_name()
        except Exception:
            pass
    for label in ("cold", "cached"):
        p = subprocess.run([sys.executable, "-c", CHILD, a.device, str(a.seq), str(a.dim)], env=env,
                           capture_output=True, text=True)
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        rec = json.loads(line[-1]) if line else {"error": p.stderr[-2000:]}
        rec["run"] = label
        print(json.dumps(rec))
        res["runs"].append(rec)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
