"""Load test of `ember serve` on loopback: N concurrent streaming clients against a random-weight
Llama; throughput, time to first token and inter-token latency (p50 / p99), and the count of
requests lost or wrong (every answer's tokens must equal a single-request greedy run).

    python bench/serve_load.py [--clients 1,4,16] [--requests 32] [--max-tokens 24] [--device cpu]
                               [--shape small|1b] [--torch-baseline N] [--out bench/results/serve-load-DATE.json]

`--shape 1b` serves Llama-3.2-1B shapes in bf16 (random weights written by bench/llm.py's
`write_checkpoint`; a CUDA device); `--torch-baseline N` also times transformers' eager `generate`
serving the first N requests one at a time (greedy, bf16) for comparison."""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

SHAPES = dict(hidden_size=256, intermediate_size=768, num_hidden_layers=4, num_attention_heads=8,
              num_key_value_heads=4, vocab_size=4096, max_position_embeddings=512, tie_word_embeddings=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=24)
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=None)
    ap.add_argument("--shape", default="small", choices=["small", "1b"])
    ap.add_argument("--max-seq-len", type=int, default=128)
    ap.add_argument("--dtype", default="bfloat16", help="--shape 1b: the weights' dtype")
    ap.add_argument("--batch-invariant", action="store_true", help="LLM(batch_invariant=True): one decode program "
                    "over a named batch size")
    ap.add_argument("--torch-baseline", type=int, default=0, metavar="N",
                    help="also time transformers' eager generate on the first N requests, one at a time")
    args = ap.parse_args()
    T0 = time.perf_counter()
    import httpx
    import torch
    import transformers
    import uvicorn

    import ember.llm as L
    from ember.serve import make_app
    torch.manual_seed(0)
    d = tempfile.mkdtemp(prefix="ember-serve-load-")
    shapes = SHAPES
    if args.shape == "1b":
        import importlib.util
        spec = importlib.util.spec_from_file_location("bench_llm", os.path.join(os.path.dirname(os.path.abspath(__file__)), "llm.py"))
        bl = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bl)
        shapes = dict(bl.LLAMA_1B, max_position_embeddings=2048)
        bl.write_checkpoint(d, shapes)
        llm = L.load(d, device=args.device, dtype=args.dtype, max_seq_len=args.max_seq_len, max_batch=args.max_batch,
                     batch_invariant=args.batch_invariant)
    else:
        transformers.LlamaForCausalLM(transformers.LlamaConfig(**SHAPES)).save_pretrained(d)
        llm = L.load(d, device=args.device, max_seq_len=args.max_seq_len, max_batch=args.max_batch,
                     batch_invariant=args.batch_invariant)
    print(f"loaded in {time.perf_counter() - T0:.1f} s", file=sys.stderr, flush=True)
    rng = np.random.default_rng(0)
    jobs = [[int(t) for t in rng.integers(0, shapes["vocab_size"], rng.integers(4, 33))] for _ in range(args.requests)]
    want = [llm.generate([p], max_new_tokens=args.max_tokens, stop_token_ids=[])[0] for p in jobs]
    print(f"single-request answers at {time.perf_counter() - T0:.1f} s", file=sys.stderr, flush=True)
    res = {"date": time.strftime("%Y-%m-%d"), "device": args.device, "dtype": str(llm.dtype), "shapes": shapes, "requests": args.requests,
           "max_tokens": args.max_tokens, "max_batch": args.max_batch, "batch_invariant": args.batch_invariant, "runs": []}
    if args.device.startswith("cuda"):
        res["gpu"] = torch.cuda.get_device_name()
    if args.torch_baseline:
        n = args.torch_baseline
        res["torch_eager_one_at_a_time"] = torch_baseline(d, jobs[:n], args.max_tokens, want[:n])
        print(f"torch baseline at {time.perf_counter() - T0:.1f} s", file=sys.stderr, flush=True)
        print(json.dumps(res["torch_eager_one_at_a_time"]), flush=True)
    with socket_port() as port:
        server = uvicorn.Server(uvicorn.Config(make_app(llm, "load", max_batch=args.max_batch, max_queue=4 * args.requests),
                                               host="127.0.0.1", port=port, log_level="warning"))
        th = threading.Thread(target=server.run, daemon=True)
        th.start()
        while not server.started:
            if not th.is_alive():
                raise SystemExit("the server did not start (see its log above)")
            time.sleep(0.05)
        print(f"server up at {time.perf_counter() - T0:.1f} s", file=sys.stderr, flush=True)
        for n in [int(c) for c in args.clients.split(",")]:
            ttft, itl, wrong, lost, tokens = [], [], 0, 0, 0
            todo = list(range(args.requests))
            lock = threading.Lock()

            def client():
                nonlocal wrong, lost, tokens
                with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600) as c:
                    while True:
                        with lock:
                            if not todo:
                                return
                            i = todo.pop()
                        t0, last, got = time.perf_counter(), None, []
                        try:
                            with c.stream("POST", "/v1/completions", json={"prompt": jobs[i], "max_tokens": args.max_tokens,
                                                                            "stream": True, "stop_token_ids": []}) as r:
                                for line in r.iter_lines():
                                    if not line.startswith("data: ") or line == "data: [DONE]":
                                        continue
                                    ids = json.loads(line[6:])["choices"][0].get("token_ids", [])
                                    now = time.perf_counter()
                                    for _ in ids:
                                        (ttft if last is None else itl).append(now - (t0 if last is None else last))
                                        last = now
                                    got += ids
                        except httpx.HTTPError:
                            with lock:
                                lost += 1
                            continue
                        with lock:
                            tokens += len(got)
                            wrong += got != want[i]
            t0 = time.perf_counter()
            threads = [threading.Thread(target=client) for _ in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
            row = {"clients": n, "wall_s": wall, "tokens_per_s": tokens / wall, "lost": lost, "wrong": wrong,
                   "ttft_p50_ms": 1e3 * float(np.percentile(ttft, 50)), "ttft_p99_ms": 1e3 * float(np.percentile(ttft, 99)),
                   "itl_p50_ms": 1e3 * float(np.percentile(itl, 50)), "itl_p99_ms": 1e3 * float(np.percentile(itl, 99))}
            res["runs"].append(row)
            print(json.dumps(row), flush=True)
        server.should_exit = True
        th.join(60)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    return 0


def torch_baseline(path: str, jobs: list, max_tokens: int, want: list) -> dict:
    """transformers' eager greedy `generate`, bf16 on the GPU, serving the requests one at a time."""
    import torch
    import transformers
    m = transformers.LlamaForCausalLM.from_pretrained(path, torch_dtype=torch.bfloat16).cuda().eval()
    tokens, same, t0 = 0, 0, time.perf_counter()
    with torch.no_grad():
        for p, w in zip(jobs, want):
            out = m.generate(torch.tensor([p], device="cuda"), max_new_tokens=max_tokens, min_new_tokens=max_tokens,
                             do_sample=False, eos_token_id=None, pad_token_id=0,
                             attention_mask=torch.ones(1, len(p), dtype=torch.long, device="cuda"))
            new = out[0, len(p):].tolist()
            tokens += len(new)
            same += new == w
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "tokens_per_s": tokens / wall, "requests": len(jobs),
            "equal_to_ember_greedy": same}  # (bf16 rounding differs: near-ties may pick other tokens)


class socket_port:
    def __enter__(self) -> int:
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    sys.exit(main())
