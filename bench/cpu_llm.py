"""A small Llama decoding on the CPU through ember.llm, against transformers' eager model with its
KV cache, same random weights, same process (issue 24: the CPU LLM decode path).

    python bench/cpu_llm.py [--out bench/results/cpu-llm-DATE.json] [--dtype float32|bfloat16]

Reports decode ms/token (greedy, the generation loop as a user runs it) and prefill ms for a
64-token prompt, and whether the greedy tokens equal transformers'."""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

SHAPES = dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
              num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048, tie_word_embeddings=False)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--new", type=int, default=32)
    args = ap.parse_args()
    import torch
    import transformers

    import ember.llm as L
    from ember.backends.cpu import cpu_identity
    torch.manual_seed(0)
    tdt = getattr(torch, args.dtype)
    m = transformers.LlamaForCausalLM(transformers.LlamaConfig(**SHAPES)).eval().to(tdt)
    n_params = sum(p.numel() for p in m.parameters())
    d = tempfile.mkdtemp(prefix="ember-cpu-llm-")
    m.save_pretrained(d)
    prompt = list(np.random.default_rng(0).integers(0, SHAPES["vocab_size"], args.prompt))
    res = {"machine": cpu_identity(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "transformers": transformers.__version__, "threads": torch.get_num_threads(), "dtype": args.dtype,
           "shapes": SHAPES, "params": n_params, "prompt": args.prompt, "new_tokens": args.new}
    # transformers eager, its own cache: prefill, then one token per forward
    with torch.no_grad():
        ids = torch.tensor([prompt])
        t0 = time.perf_counter()
        out = m(ids, use_cache=True)
        t1 = time.perf_counter()
        past, nxt, hf_tokens, steps = out.past_key_values, int(out.logits[0, -1].argmax()), [], []
        hf_tokens.append(nxt)
        for _ in range(args.new - 1):
            s0 = time.perf_counter()
            out = m(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
            steps.append(time.perf_counter() - s0)
            past, nxt = out.past_key_values, int(out.logits[0, -1].argmax())
            hf_tokens.append(nxt)
    res["torch_eager"] = {"prefill_ms": (t1 - t0) * 1e3, "decode_ms_per_token": float(np.median(steps)) * 1e3}
    t0 = time.perf_counter()
    llm = L.load(d, device="cpu", dtype=args.dtype, max_seq_len=args.prompt + args.new + 8)
    llm.program("prefill", 1), llm.program("decode", 1)
    res["ember_compile_s"] = time.perf_counter() - t0
    llm.generate([prompt], max_new_tokens=4, stop_token_ids=[])  # warm (thread pool, packed weights)
    em_tokens = llm.generate([prompt], max_new_tokens=args.new, stop_token_ids=[])[0]
    st = llm.last_stats
    res["ember"] = {"prefill_ms": st["prefill_s"] * 1e3,
                    "decode_ms_per_token": st["decode_s"] / max(st["decode_tokens"], 1) * 1e3,
                    "decode_kernels": len(llm.program("decode", 1).launches)}
    res["greedy_tokens_equal"] = em_tokens == hf_tokens
    res["equal_prefix"] = next((i for i, (a, b) in enumerate(zip(em_tokens, hf_tokens)) if a != b), len(em_tokens))
    res["decode_speedup_vs_torch"] = res["torch_eager"]["decode_ms_per_token"] / res["ember"]["decode_ms_per_token"]
    res["prefill_speedup_vs_torch"] = res["torch_eager"]["prefill_ms"] / res["ember"]["prefill_ms"]
    print(json.dumps(res, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
