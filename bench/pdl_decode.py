"""Programmatic dependent launch and L2 weight prefetch (codegen/cuda_pdl.py) on a Llama-3.2-1B-shaped
decode, A/B in one run: each variant is a fresh process with its own cache directory, so its
programs are rendered and compiled under its own settings.

    python bench/pdl_decode.py --out bench/results/pdl-DATE.json [--variants "0:0,1:0,1:8388608"]

A variant is "EMBER_PDL:EMBER_L2_PREFETCH[:EMBER_STREAM_PROLOGUES]". Each reports decode step ms (one graph replay, host
included) at batch 1 over contexts, batch 8 at context 1024, `LLM.generate` ms/token, and its greedy
tokens (they must equal across variants: PDL changes when kernels start, never what they compute)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def child(ckpt: str, contexts: list, batch8: bool) -> dict:
    import numpy as np

    import ember.llm as L
    from llm import cuda_time, decode_feed
    max_seq = max(contexts) + 64
    llm = L.load(ckpt, device="cuda", max_seq_len=max_seq, max_batch=8 if batch8 else 1)
    t0 = time.perf_counter()
    prog = llm.program("decode", 1)
    res = {"compile_decode_s": time.perf_counter() - t0, "kernels": len(prog.launches),
           "pdl_kernels": sum(1 for l in prog.launches if l.config.get("pdl")), "rows": []}
    prompt = [int(t) for t in np.random.default_rng(0).integers(0, llm.config.vocab, 32)]
    res["tokens"] = llm.generate([prompt], max_new_tokens=24, stop_token_ids=[])[0]
    for b in ([1, 8] if batch8 else [1]):
        prog = llm.program("decode", b)
        for ctx in (contexts if b == 1 else [1024]):
            P = ctx - 1
            feed = decode_feed(llm, b, P)
            ms = cuda_time(lambda: prog.run(feed, dims={"P": P}), 100)
            res["rows"].append({"batch": b, "context": ctx, "step_ms": ms})
    out = llm.generate([list(range(1, 129))], max_new_tokens=128, stop_token_ids=[])
    st = llm.last_stats
    res["generate_ms_per_token"] = st["decode_s"] / max(st["decode_tokens"], 1) * 1e3
    res["generate_tokens"] = len(out[0])
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--variants", default="0:0,1:0,1:8388608,1:33554432")
    ap.add_argument("--contexts", default="128,1024,4096")
    ap.add_argument("--ckpt", default="/tmp/ember-llama1b")
    ap.add_argument("--batch8", action="store_true")
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    contexts = [int(c) for c in args.contexts.split(",")]
    if args.child:
        print("RESULT " + json.dumps(child(args.ckpt, contexts, args.batch8)), flush=True)
        return 0
    import torch

    from llm import LLAMA_1B, write_checkpoint
    if not os.path.exists(os.path.join(args.ckpt, "config.json")):
        write_checkpoint(args.ckpt, LLAMA_1B)
    import cuda.core
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "cuda.core": cuda.core.__version__, "model": "Llama-3.2-1B shapes, random bf16 weights", "variants": []}
    base_cache = os.environ.get("EMBER_CACHE_DIR", "/tmp/ember_cache")
    for v in args.variants.split(","):
        pdl, pre, pro = (v.split(":") + ["0"])[:3]
        env = dict(os.environ, EMBER_PDL=pdl, EMBER_L2_PREFETCH=pre, EMBER_STREAM_PROLOGUES=pro,
                   EMBER_CACHE_DIR=f"{base_cache}-pf{pre}-pro{pro}")
        cmd = [sys.executable, __file__, "--child", "--out", args.out, "--contexts", args.contexts, "--ckpt", args.ckpt]
        r = subprocess.run(cmd + (["--batch8"] if args.batch8 else []), env=env, capture_output=True, text=True, timeout=900)
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
        row = {"pdl": pdl == "1", "l2_prefetch_bytes": int(pre), "stream_prologues": pro == "1"}
        row.update(json.loads(line[0][7:]) if line else {"error": (r.stderr or r.stdout)[-1500:]})
        res["variants"].append(row)
        print(json.dumps(row), flush=True)
    toks = [tuple(v["tokens"]) for v in res["variants"] if "tokens" in v]
    res["tokens_equal_across_variants"] = len(set(toks)) == 1 if toks else None
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print("tokens equal across variants:", res["tokens_equal_across_variants"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
