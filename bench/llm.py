"""Llama-3.2-1B-shaped decode and prefill through ember.llm on the GPU, against PyTorch (a functional
Llama step with a static KV cache: eager, eager under a CUDA graph, torch.compile), same run, same
random weights written to a local checkpoint. Also checks Ember's logits against the torch step.

    python bench/llm.py --out bench/results/llm-DATE.json [--contexts 128,1024,4096] [--batches 1,8]

Reports decode ms/token (steady state: the same position replayed, one CUDA graph per step; and the
real generation loop, a new position every step), prefill tokens/s for a 512-token prompt, compile
times, and % of the bandwidth floor (weights + KV bytes read per step / measured copy bandwidth)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

LLAMA_1B = dict(model_type="llama", hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                num_key_value_heads=8, head_dim=64, intermediate_size=8192, vocab_size=128256,
                tie_word_embeddings=True, rms_norm_eps=1e-5, max_position_embeddings=131072,
                rope_theta=500000.0, torch_dtype="bfloat16", bos_token_id=128000, eos_token_id=128001,
                rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_position_embeddings": 8192}, hidden_act="silu")


def write_checkpoint(path: str, cfg: dict, seed: int = 0) -> dict:
    import torch
    from safetensors.torch import save_file
    os.makedirs(path, exist_ok=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"  # (the VM builds sources without a GPU)
    g = torch.Generator(device=dev).manual_seed(seed)
    E, F, D = cfg["hidden_size"], cfg["intermediate_size"], cfg["head_dim"]
    Hq, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]

    def r(*shape, std=0.02):
        return (torch.randn(*shape, generator=g, device=dev, dtype=torch.float32) * std).to(torch.bfloat16)

    t = {"model.embed_tokens.weight": r(cfg["vocab_size"], E), "model.norm.weight": 1 + r(E, std=0.1)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t.update({p + "input_layernorm.weight": 1 + r(E, std=0.1), p + "post_attention_layernorm.weight": 1 + r(E, std=0.1),
                  p + "self_attn.q_proj.weight": r(Hq * D, E), p + "self_attn.k_proj.weight": r(Hkv * D, E),
                  p + "self_attn.v_proj.weight": r(Hkv * D, E), p + "self_attn.o_proj.weight": r(E, Hq * D),
                  p + "mlp.gate_proj.weight": r(F, E), p + "mlp.up_proj.weight": r(F, E), p + "mlp.down_proj.weight": r(E, F)})
    save_file({k: v.cpu().contiguous() for k, v in t.items()}, os.path.join(path, "model.safetensors"))
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f)
    return t


class TorchLlama:
    """The same math as transformers' eager Llama (RMSNorm in float32, weight after the cast, rotary
    from float32 tables, softmax in float32), one functional step over a static cache."""

    def __init__(self, w: dict, cfg: dict, inv_freq: np.ndarray, max_seq: int, batch: int):
        import torch
        self.torch, self.w, self.cfg = torch, w, cfg
        self.L, self.D = cfg["num_hidden_layers"], cfg["head_dim"]
        self.Hq, self.Hkv, self.eps = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["rms_norm_eps"]
        ang = torch.arange(max_seq, device="cuda", dtype=torch.float32)[:, None] * torch.tensor(inv_freq, device="cuda")[None]
        ang = torch.cat([ang, ang], -1)
        self.cos, self.sin = ang.cos(), ang.sin()
        self.kc = [torch.zeros(batch, self.Hkv, max_seq, self.D, dtype=torch.bfloat16, device="cuda") for _ in range(self.L)]
        self.vc = [torch.zeros_like(self.kc[0]) for _ in range(self.L)]

    def _rms(self, x, w):
        xf = x.float()
        return w * (xf * self.torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)

    def _rot(self, x, cos, sin):
        h = x.shape[-1] // 2
        return x * cos + self.torch.cat([-x[..., h:], x[..., :h]], -1) * sin

    def step(self, tokens, pos: int):
        """tokens (B, T) at slots [pos, pos + T): logits of the last token (B, V) float32."""
        torch, w = self.torch, self.w
        B, T = tokens.shape
        x = self.embed(tokens)
        cos = self.cos[pos:pos + T].to(x.dtype)[None, None]
        sin = self.sin[pos:pos + T].to(x.dtype)[None, None]
        n = pos + T
        mask = torch.ones(T, n, dtype=torch.bool, device="cuda").tril(pos)
        G = self.Hq // self.Hkv
        for i in range(self.L):
            p = f"model.layers.{i}."
            h = self._rms(x, w[p + "input_layernorm.weight"])
            q = (h @ w[p + "self_attn.q_proj.weight"].T).view(B, T, self.Hq, self.D).transpose(1, 2)
            k = (h @ w[p + "self_attn.k_proj.weight"].T).view(B, T, self.Hkv, self.D).transpose(1, 2)
            v = (h @ w[p + "self_attn.v_proj.weight"].T).view(B, T, self.Hkv, self.D).transpose(1, 2)
            q, k = self._rot(q, cos, sin), self._rot(k, cos, sin)
            self.kc[i][:, :, pos:n] = k
            self.vc[i][:, :, pos:n] = v
            K = self.kc[i][:, :, :n].repeat_interleave(G, 1)
            V = self.vc[i][:, :, :n].repeat_interleave(G, 1)
            s = (q @ K.transpose(-1, -2)).float() * (self.D ** -0.5)
            s = s.masked_fill(~mask, float("-inf"))
            o = (s.softmax(-1).to(x.dtype) @ V).transpose(1, 2).reshape(B, T, self.Hq * self.D)
            x = x + self.reduce(o @ w[p + "self_attn.o_proj.weight"].T)
            h = self._rms(x, w[p + "post_attention_layernorm.weight"])
            g = h @ w[p + "mlp.gate_proj.weight"].T
            u = h @ w[p + "mlp.up_proj.weight"].T
            x = x + self.reduce((torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T)
        x = self._rms(x[:, -1], w["model.norm.weight"])
        return self.gather((x @ w["model.embed_tokens.weight"].T).float())

    def embed(self, tokens):
        return self.w["model.embed_tokens.weight"][tokens]

    def reduce(self, y):  # a row-parallel product made whole (bench/tp.py: over the ranks)
        return y

    def gather(self, logits):  # vocab-parallel logits made whole
        return logits


def cuda_time(fn, reps: int) -> float:
    """Median ms per call of fn (each call synchronised: host overhead included, as a user sees it)."""
    import torch
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def decode_feed(llm, b: int, P: int) -> dict:
    """Inputs of a decode step at batch b, position P: torch tensors on the GPU, the LLM's own caches."""
    import torch
    feed = {"tokens": torch.ones(b, 1, dtype=torch.int32, device="cuda"),
            "positions": torch.full((b, 1), P, dtype=torch.int32, device="cuda"),
            "start": torch.zeros(b, dtype=torch.int32, device="cuda")}
    caches = llm._cache()
    for i in range(llm.config.layers):
        feed[f"k{i}"], feed[f"v{i}"] = caches[2 * i][:b], caches[2 * i + 1][:b]
    return feed


def cuda_graph(fn):
    """fn captured as a torch CUDA graph (after one warm-up call on a side stream, as torch asks)."""
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr):
        fn()
    return gr


def copy_bandwidth() -> float:
    import torch
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    ms = cuda_time(lambda: b.copy_(a), 20)
    return 2 * a.numel() / (ms * 1e-3)  # bytes read + written per second


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--contexts", default="128,1024,4096")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--prefill", type=int, default=512)
    ap.add_argument("--ckpt", default="/tmp/ember-llama1b")
    ap.add_argument("--skip-torch-compile", action="store_true")
    ap.add_argument("--batch-invariant", action="store_true", help="one decode program over a named batch size")
    args = ap.parse_args()
    import torch

    import ember.llm as L
    from ember.llm.config import parse_config
    contexts = [int(c) for c in args.contexts.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    max_seq = max(contexts) + 64
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "model": "Llama-3.2-1B shapes, random bf16 weights", "max_seq_len": max_seq, "rows": []}
    t0 = time.perf_counter()
    w = write_checkpoint(args.ckpt, LLAMA_1B)
    print(f"checkpoint written in {time.perf_counter() - t0:.1f} s", flush=True)
    bw = copy_bandwidth()
    res["copy_bandwidth_GBps"] = bw / 1e9
    cfg = parse_config(LLAMA_1B)
    n_params = sum(v.numel() for v in w.values())
    weight_bytes = 2 * n_params
    t0 = time.perf_counter()
    llm = L.load(args.ckpt, device="cuda", max_seq_len=max_seq, max_batch=max(batches), verbose=True,
                 batch_invariant=args.batch_invariant)
    res["batch_invariant"] = args.batch_invariant
    res["load_s"] = time.perf_counter() - t0
    compile_s = {}
    for b in batches:
        for kind in ("prefill", "decode"):
            t0 = time.perf_counter()
            prog = llm.program(kind, b)
            compile_s[f"{kind}_b{b}"] = {"s": time.perf_counter() - t0, "kernels": len(prog.launches)}
    res["compile"] = compile_s
    print(json.dumps(compile_s), flush=True)
    # correctness: Ember's prefill + greedy steps against the torch step (same bf16 weights)
    ref = TorchLlama(w, LLAMA_1B, np.asarray(cfg.inv_freq, np.float32), max_seq, 1)
    prompt = list(np.random.default_rng(0).integers(0, cfg.vocab, 32))
    with torch.no_grad():
        want = ref.step(torch.tensor([prompt], device="cuda"), 0)[0].cpu().numpy()
    got = llm.logits(prompt)
    cos = float(np.dot(got, want) / (np.linalg.norm(got) * np.linalg.norm(want)))
    res["check"] = {"prefill_logits_max_abs_diff": float(np.abs(got - want).max()), "cosine": cos,
                    "argmax_equal": bool(got.argmax() == want.argmax()), "logit_scale": float(np.abs(want).max())}
    toks = llm.generate([prompt], max_new_tokens=16, stop_token_ids=[])[0]
    with torch.no_grad():
        t_ref, pos, nxt = [], 0, None
        x = torch.tensor([prompt], device="cuda")
        for _ in range(16):
            lg = ref.step(x, pos)
            pos += x.shape[1]
            nxt = int(lg[0].argmax())
            t_ref.append(nxt)
            x = torch.tensor([[nxt]], device="cuda")
    res["check"]["greedy_16_equal_prefix"] = next((i for i, (a, b) in enumerate(zip(toks, t_ref)) if a != b), 16)
    print(json.dumps(res["check"]), flush=True)
    del ref
    # decode
    for b in batches:
        tref = TorchLlama(w, LLAMA_1B, np.asarray(cfg.inv_freq, np.float32), max_seq, b)
        prog = llm.program("decode", b)
        for ctx in contexts:
            P = ctx - 1
            feed = decode_feed(llm, b, P)
            steady = cuda_time(lambda: prog.run(feed, dims={"P": P}), 50)
            pos = [P - 32]

            def moving():
                feed["positions"].fill_(pos[0])
                prog.run(feed, dims={"P": pos[0]})
                pos[0] += 1
            loop = cuda_time(moving, 30)
            kv_bytes = 2 * cfg.layers * b * cfg.kv_heads * ctx * cfg.head_dim * 2
            # every weight is read once per step (the tied embedding as the lm head; its gather is one row)
            floor_ms = (weight_bytes + kv_bytes) / bw * 1e3
            tok = torch.ones(b, 1, dtype=torch.long, device="cuda")
            with torch.no_grad():
                eager = cuda_time(lambda: tref.step(tok, P), 20)
                graphed = cuda_time(cuda_graph(lambda: tref.step(tok, P)).replay, 50)
                comp = None
                if not args.skip_torch_compile:
                    try:
                        f = torch.compile(lambda t: tref.step(t, P), mode="reduce-overhead", fullgraph=False)
                        for _ in range(3):
                            f(tok)
                        comp = cuda_time(lambda: f(tok), 50)
                    except Exception as e:  # noqa: BLE001
                        comp = f"failed: {type(e).__name__}: {str(e)[:120]}"
            row = {"batch": b, "context": ctx, "ember_graph_ms": steady, "ember_loop_ms": loop, "torch_eager_ms": eager,
                   "torch_eager_cudagraph_ms": graphed, "torch_compile_ms": comp, "floor_ms": floor_ms,
                   "ember_pct_floor": 100 * floor_ms / steady}
            res["rows"].append(row)
            print(json.dumps(row), flush=True)
        del tref
    # where a decode step's time goes: every kernel timed alone at context 1024 (numpy inputs)
    res["profile"] = {}
    import ml_dtypes
    for b in batches:
        prog = llm.program("decode", b)
        P = min(1023, max_seq - 1)
        feed = {"tokens": np.ones((b, 1), np.int32), "positions": np.full((b, 1), P, np.int32),
                "start": np.zeros(b, np.int32)}
        for i in range(cfg.layers):
            for kv in "kv":
                feed[f"{kv}{i}"] = np.zeros((b, cfg.kv_heads, max_seq, cfg.head_dim), ml_dtypes.bfloat16)
        times = prog.profile(reps=5, dims={"P": P}, **feed)
        report = prog.report()
        with open(os.path.join(os.path.dirname(args.out), f"llm-decode-profile-b{b}.txt"), "w") as f:
            f.write(report + "\n\n" + prog.meta.get("kernels_ir", ""))
        by = {}
        for l, t in zip(prog.launches, times):
            by.setdefault(l.kernel.split("_", 1)[1], []).append(t)
        top = sorted(((sum(v), k, len(v)) for k, v in by.items()), reverse=True)[:8]
        res["profile"][f"b{b}"] = {"kernel_sum_us": sum(times), "kernels": len(times),
                                   "by_root_op": [{"op": k, "count": n, "us": t} for t, k, n in top]}
        print(json.dumps(res["profile"][f"b{b}"]), flush=True)
    # the generation loop as a user runs it (host sampling, one sync per token)
    out = llm.generate([list(range(1, 129))], max_new_tokens=64, stop_token_ids=[])
    st = llm.last_stats
    res["generate_b1"] = {"new_tokens": len(out[0]), "decode_ms_per_token": st["decode_s"] / max(st["decode_tokens"], 1) * 1e3,
                          "prefill_ms": st["prefill_s"] * 1e3, "compile_count": llm.compile_count}
    print(json.dumps(res["generate_b1"]), flush=True)
    # ... and at context ~1024 (the point): a 960-token prompt, 64 new tokens (positions 960-1023)
    if max_seq >= 1024:
        rng = np.random.default_rng(2)
        out = llm.generate([[int(t) for t in rng.integers(0, cfg.vocab, 960)]], max_new_tokens=64, stop_token_ids=[])
        st = llm.last_stats
        res["generate_b1_ctx1024"] = {"prompt_tokens": 960, "new_tokens": len(out[0]),
                                      "decode_ms_per_token": st["decode_s"] / max(st["decode_tokens"], 1) * 1e3}
        print(json.dumps(res["generate_b1_ctx1024"]), flush=True)
    # compile again in a fresh process: what the on-disk cache (EMBER_CACHE_DIR) saves
    import subprocess
    code = ("import time, ember.llm as L; llm = L.load(%r, device='cuda', max_seq_len=%d); t = time.perf_counter(); "
            "llm.program('prefill', 1); a = time.perf_counter() - t; t = time.perf_counter(); llm.program('decode', 1); "
            "print('WARM', a, time.perf_counter() - t)") % (args.ckpt, max_seq)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("WARM")]
    res["compile_warm_process"] = {"prefill_b1_s": float(line[0].split()[1]), "decode_b1_s": float(line[0].split()[2])} \
        if line else {"error": (r.stderr or "")[-300:]}
    print(json.dumps(res["compile_warm_process"]), flush=True)
    # prefill
    T = args.prefill
    prompt = list(np.random.default_rng(1).integers(0, cfg.vocab, T))
    pre = llm.program("prefill", 1)
    caches = llm._cache()
    feed = {"tokens": torch.tensor([prompt], dtype=torch.int32, device="cuda"),
            "positions": torch.arange(T, dtype=torch.int32, device="cuda")[None],
            "start": torch.zeros(1, dtype=torch.int32, device="cuda")}
    for i in range(cfg.layers):
        feed[f"k{i}"], feed[f"v{i}"] = caches[2 * i][:1], caches[2 * i + 1][:1]
    em_ms = cuda_time(lambda: pre.run(feed, dims={"P": 0}), 10)
    npfeed = {"tokens": np.array([prompt], np.int32), "positions": np.arange(T, dtype=np.int32)[None],
              "start": np.zeros(1, np.int32)}
    for i in range(cfg.layers):
        for kv in "kv":
            npfeed[f"{kv}{i}"] = np.zeros((1, cfg.kv_heads, max_seq, cfg.head_dim), ml_dtypes.bfloat16)
    times = pre.profile(reps=3, dims={"P": 0}, **npfeed)
    with open(os.path.join(os.path.dirname(args.out), "llm-prefill-profile.txt"), "w") as f:
        f.write(pre.report() + "\n\n" + pre.meta.get("kernels_ir", ""))
    top = sorted(zip(times, (l.kernel for l in pre.launches)), reverse=True)[:12]
    res["prefill_profile"] = {"kernel_sum_us": sum(times), "top": [{"kernel": k, "us": t} for t, k in top]}
    print(json.dumps(res["prefill_profile"]), flush=True)
    tref = TorchLlama(w, LLAMA_1B, np.asarray(cfg.inv_freq, np.float32), max_seq, 1)
    with torch.no_grad():
        ptok = torch.tensor([prompt], device="cuda")
        t_ms = cuda_time(lambda: tref.step(ptok, 0), 10)
    res["prefill"] = {"tokens": T, "ember_ms": em_ms, "ember_tok_s": T / em_ms * 1e3, "torch_eager_ms": t_ms,
                      "torch_eager_tok_s": T / t_ms * 1e3, "kernels": len(pre.launches)}
    print(json.dumps(res["prefill"]), flush=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
