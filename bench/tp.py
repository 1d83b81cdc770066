"""Tensor-parallel decode on several GPUs (issue 25): Ember's `ember.llm` at TP 1 and TP N against
PyTorch on the same ranks and the same random bf16 weights — a functional Llama step sharded the
same Megatron way with torch.distributed NCCL all-reduces (eager, and under a CUDA graph), and
transformers' own tensor parallelism (`from_pretrained(tp_plan="auto")`: DTensor) generating.

    python bench/tp.py --out bench/results/tp-DATE.json [--tp 1,2] [--models 1b,8b]

The driver launches each configuration as ranks (ember.distributed.launch) that write part files;
it checks that every TP degree's greedy tokens equal TP 1's, and writes one JSON: decode ms/token
(steady state at a fixed position, and the generation loop), % of the aggregate bandwidth floor
(weights / ranks + KV bytes read per rank per step over one GPU's measured copy bandwidth), the
collective time per step (`--trace`: one step launch by launch, `Program.trace`, a Perfetto trace per
rank next to the part files)."""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from llm import LLAMA_1B, TorchLlama, copy_bandwidth, cuda_graph, cuda_time, write_checkpoint  # noqa: E402

# Llama-3.1-8B's layer shapes; `--layers-8b` of its 32 layers (the device session's time: the full
# depth scales the decode time by about 32 / layers, the collective count likewise)
LLAMA_8B = dict(LLAMA_1B, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                intermediate_size=14336)  # (tied, as the checkpoint writer writes no separate LM head)
MODELS = {"1b": LLAMA_1B, "8b": LLAMA_8B}
PROMPT = [int(t) for t in np.random.default_rng(0).integers(0, 128000, 32)]


def shard(w: dict, cfg: dict, rank: int, world: int) -> dict:
    """Megatron's split of the torch weights (as ember/llm/model.py splits its own)."""
    D, Hq, Hkv = cfg["head_dim"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    F, V = cfg["intermediate_size"], cfg["vocab_size"]
    out = {}
    for k, v in w.items():
        if k.endswith(("q_proj.weight",)):
            n = Hq * D // world
            out[k] = v[rank * n:(rank + 1) * n]
        elif k.endswith(("k_proj.weight", "v_proj.weight")):
            n = Hkv * D // world
            out[k] = v[rank * n:(rank + 1) * n]
        elif k.endswith("o_proj.weight"):
            n = Hq * D // world
            out[k] = v[:, rank * n:(rank + 1) * n].contiguous()
        elif k.endswith(("gate_proj.weight", "up_proj.weight")):
            out[k] = v[rank * F // world:(rank + 1) * F // world]
        elif k.endswith("down_proj.weight"):
            out[k] = v[:, rank * F // world:(rank + 1) * F // world].contiguous()
        elif k in ("model.embed_tokens.weight", "lm_head.weight"):
            n = -(-V // world)
            out[k] = v[rank * n:(rank + 1) * n]
        else:
            out[k] = v
    return out


class TorchTP(TorchLlama):
    """The functional torch step on one rank's shard: NCCL all-reduces after o and down, the
    embedding and logits vocab-parallel."""

    def __init__(self, w, cfg, inv_freq, max_seq, batch, rank, world):
        import torch.distributed as dist
        self.dist, self.rank, self.world = dist, rank, world
        local = dict(cfg, num_attention_heads=cfg["num_attention_heads"] // world,
                     num_key_value_heads=cfg["num_key_value_heads"] // world)
        super().__init__(shard(w, cfg, rank, world), local, inv_freq, max_seq, batch)
        self.vocab = -(-cfg["vocab_size"] // world)

    def embed(self, tokens):
        local = tokens - self.rank * self.vocab
        mine = (local >= 0) & (local < self.vocab)
        x = self.w["model.embed_tokens.weight"][local.clamp(0, self.vocab - 1)] * mine[..., None]
        return self.reduce(x)

    def reduce(self, y):
        self.dist.all_reduce(y)
        return y

    def gather(self, logits):
        import torch
        parts = [torch.empty_like(logits) for _ in range(self.world)]
        self.dist.all_gather(parts, logits)
        return torch.cat(parts, -1)


def worker(args) -> int:
    import torch

    import ember.distributed as ed
    import ember.llm as L
    from ember.llm.config import parse_config
    comm = ed.init()
    rank, world = comm.rank, comm.world
    torch.cuda.set_device(rank)
    cfg_d = dict(MODELS[args.model])
    if args.model == "8b":
        cfg_d["num_hidden_layers"] = args.layers_8b
    ckpt = f"/tmp/ember-tp-{args.model}"
    w = write_checkpoint(ckpt, cfg_d) if rank == 0 and not os.path.exists(os.path.join(ckpt, "config.json")) else None
    comm.barrier()
    if w is None:
        from safetensors.torch import load_file
        w = {k: v.to(f"cuda:{rank}") for k, v in load_file(os.path.join(ckpt, "model.safetensors")).items()}
    cfg = parse_config(cfg_d)
    max_seq = max(args.contexts) + 128
    row = {"model": args.model, "layers": cfg.layers, "tp": world, "rank": rank, "sharding": args.sharding}
    t0 = time.perf_counter()
    llm = L.load(ckpt, device=f"cuda:{rank}", max_seq_len=max_seq, max_batch=1, sharding=args.sharding)
    prog = llm.program("decode", 1)
    llm.program("prefill", 1)
    row["load_compile_s"] = time.perf_counter() - t0
    row["kernels"] = sum(1 for l in prog.launches if not l.collective)
    row["collectives"] = sum(1 for l in prog.launches if l.collective)
    row["greedy"] = llm.generate([PROMPT], max_new_tokens=16, stop_token_ids=[])[0]
    logits = llm.logits(PROMPT)
    if rank == 0:  # the driver compares every TP degree's prefill logits with TP 1's
        np.save(os.path.join(args.parts, f"{args.model}-tp{world}-logits.npy"), logits)
    llm.generate([PROMPT], max_new_tokens=64, stop_token_ids=[])
    s = llm.last_stats
    row["generate_ms_per_token"] = 1e3 * s["decode_s"] / max(s["decode_tokens"], 1)
    caches = llm._cache()
    bw = copy_bandwidth()
    row["copy_bandwidth_GBps"] = bw / 1e9
    n_params = sum(v.numel() for v in shard(w, cfg_d, rank, world).values())
    tw = TorchTP(w, cfg_d, np.asarray(cfg.inv_freq, np.float32), max_seq, 1, rank, world) if world > 1 else \
        TorchLlama(w, cfg_d, np.asarray(cfg.inv_freq, np.float32), max_seq, 1)
    row["contexts"] = []
    for ctx in args.contexts:
        P = ctx - 1
        feed = {"tokens": torch.ones(1, 1, dtype=torch.int32, device="cuda"),
                "positions": torch.full((1, 1), P, dtype=torch.int32, device="cuda"),
                "start": torch.zeros(1, dtype=torch.int32, device="cuda")}
        for i in range(cfg.layers):
            feed[f"k{i}"], feed[f"v{i}"] = caches[2 * i][:1], caches[2 * i + 1][:1]
        steady = cuda_time(lambda: prog.run(feed, dims={"P": P}), 50)
        pos = [P - 40]

        def moving():  # a new position every call: the decode graph's P-reading nodes updated
            feed["positions"].fill_(pos[0])
            prog.run(feed, dims={"P": pos[0]})
            pos[0] += 1
        loop = cuda_time(moving, 30)
        kv = 2 * cfg.layers * (cfg.kv_heads // world) * ctx * cfg.head_dim * 2
        floor = (2 * n_params + kv) / bw * 1e3
        c = {"context": ctx, "ember_ms": steady, "ember_moving_ms": loop, "floor_ms": floor, "ember_pct_floor": 100 * floor / steady}
        tok = torch.ones(1, 1, dtype=torch.long, device="cuda")
        with torch.no_grad():
            c["torch_eager_ms"] = cuda_time(lambda: tw.step(tok, P), 20)
            try:
                c["torch_cudagraph_ms"] = cuda_time(cuda_graph(lambda: tw.step(tok, P)).replay, 50)
            except Exception as e:  # noqa: BLE001
                c["torch_cudagraph_ms"] = f"failed: {type(e).__name__}: {str(e)[:160]}"
        row["contexts"].append(c)
        print(json.dumps({"rank": rank, **c}), flush=True)
    if args.trace:  # one step launch by launch on the GPU: collective time per step (a Perfetto trace per rank)
        feed["positions"].fill_(127)
        try:
            path = os.path.join(args.parts, f"{args.model}-tp{world}-rank{rank}.trace.json")
            row["trace"] = prog.trace(path, dims={"P": 127}, **feed)
        except Exception as e:  # noqa: BLE001
            row["trace"] = f"failed: {type(e).__name__}: {str(e)[:160]}"
    tw = None  # (its caches freed before transformers loads)
    if args.hf:
        try:
            import transformers
            kw = {"tp_plan": "auto"} if world > 1 else {"device_map": f"cuda:{rank}"}
            m = transformers.AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.bfloat16, **kw).eval()
            x = torch.tensor([PROMPT], device=f"cuda:{rank}")
            with torch.no_grad():
                m.generate(x, max_new_tokens=4, do_sample=False, pad_token_id=0)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                out = m.generate(x, max_new_tokens=65, min_new_tokens=65, do_sample=False, pad_token_id=0)
                torch.cuda.synchronize()
                t_long = time.perf_counter() - t0
                t0 = time.perf_counter()
                m.generate(x, max_new_tokens=1, do_sample=False, pad_token_id=0)
                torch.cuda.synchronize()
                t_one = time.perf_counter() - t0
            row["hf_generate_ms_per_token"] = 1e3 * (t_long - t_one) / 64
            row["hf_greedy16"] = out[0, len(PROMPT):len(PROMPT) + 16].tolist()
        except Exception as e:  # noqa: BLE001
            row["hf_generate_ms_per_token"] = f"failed: {type(e).__name__}: {str(e)[:200]}"
    with open(os.path.join(args.parts, f"{args.model}-tp{world}-rank{rank}.json"), "w") as f:
        json.dump(row, f)
    ed.shutdown()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--tp", default="1,2")
    ap.add_argument("--models", default="1b,8b")
    ap.add_argument("--contexts", default="128,1024")
    ap.add_argument("--layers-8b", type=int, default=8)
    ap.add_argument("--hf", action="store_true", help="also time transformers' tp_plan='auto' generate")
    ap.add_argument("--sharding", default="manual", choices=["manual", "propagate"],
                    help="the LLM's per-rank graph written out or split from annotations")
    ap.add_argument("--trace", action="store_true", help="trace one decode step per rank (Program.trace)")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--model", default="1b")
    ap.add_argument("--parts", default="/tmp/tp-parts")
    args = ap.parse_args()
    args.contexts = [int(c) for c in str(args.contexts).split(",")]
    if args.worker:
        return worker(args)
    import torch

    from ember.distributed import launch
    os.makedirs(args.parts, exist_ok=True)
    res = {"device": torch.cuda.get_device_name(), "gpus": torch.cuda.device_count(), "date": time.strftime("%Y-%m-%d"),
           "torch": torch.__version__, "runs": []}
    for model in args.models.split(","):
        for tp in [int(t) for t in args.tp.split(",")]:
            if tp > torch.cuda.device_count():
                continue
            t0 = time.perf_counter()
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--model", model, "--parts", args.parts,
                   "--sharding", args.sharding,
                   "--contexts", ",".join(map(str, args.contexts)), "--layers-8b", str(args.layers_8b)]
            code = launch(cmd + (["--hf"] if args.hf else []) + (["--trace"] if args.trace else []), tp,
                          timeout_s=420)
            print(f"{model} tp{tp}: exit {code} in {time.perf_counter() - t0:.0f} s", flush=True)
            merge(res, args)  # (after every configuration: a run cut short keeps what it measured)
    merge(res, args)
    for r in res["runs"]:
        if r["rank"] == 0:
            print(json.dumps({k: v for k, v in r.items() if k not in ("greedy", "hf_greedy16")}))
    return 0


def merge(res: dict, args) -> None:
    """The part files of every rank (this run's and earlier ones' in args.parts) into res, checked
    against TP 1, written to args.out."""
    res["runs"] = []
    for f in sorted(glob.glob(os.path.join(args.parts, "*-rank*.json"))):
        if not f.endswith(".trace.json"):  # (--trace's Perfetto files sit beside the parts)
            res["runs"].append(json.load(open(f)))
    base = {r["model"]: r["greedy"] for r in res["runs"] if r["tp"] == 1 and r["rank"] == 0}
    for r in res["runs"]:
        r["greedy_equals_tp1"] = r["greedy"] == base.get(r["model"])
        one = os.path.join(args.parts, f"{r['model']}-tp1-logits.npy")
        mine = os.path.join(args.parts, f"{r['model']}-tp{r['tp']}-logits.npy")
        if r["rank"] == 0 and os.path.exists(one) and os.path.exists(mine):
            a, b = np.load(one), np.load(mine)
            r["logits_vs_tp1"] = {"max_abs_diff": float(np.abs(a - b).max()), "scale": float(np.abs(a).max()),
                                  "cosine": float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))),
                                  "argmax_equal": bool(a.argmax() == b.argmax())}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
