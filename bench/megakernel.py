"""The megakernel on the GPU (docs/megakernel.md): correctness, the schedule fuzzer, the timeline and
timings, in one run.

    python bench/megakernel.py --out bench/results/megakernel-DATE.json [--layers 16] [--contexts 128,1024]
        [--fuzz-seeds 10 --fuzz-runs 100] [--fuzz-options JSON] [--trace-dir DIR] [--suite]
        [--options '{"name": megakernel_options, ...}'] [--fold] [--torch]

* check: a decode step of a Llama-3.2-1B-shaped model (random bf16 weights, `--layers` layers) as
  a megakernel against the same megakernel run by one worker (bit-identical expected), against the
  same task schedules launched kernel by kernel and against the default program (close: a task
  function compiled inside the megakernel may contract other products into FMAs than the same
  code compiled as a kernel — measured unequal, max logit difference ~0.04 of ~4, in every run since
  2026-11-26);
* fuzz: megakernels whose tasks are dealt to random workers, compiled with random sleeps, each run
  `--fuzz-runs` times at a moving position: every output bit-identical to the reference;
* time: one step in a CUDA graph (a sync per call) for the default program, the task schedules and
  the megakernel, at each context; the floor from the measured copy bandwidth;
* trace: one traced run at the last context as Perfetto JSON, and each launch's span.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from llm import LLAMA_1B, copy_bandwidth, cuda_time, write_checkpoint  # noqa: E402


def step_programs(llm, variants: dict) -> dict:
    """{name: Program} of the decode step (batch 1) compiled with each em.compile option set."""
    import ember as em
    from ember.llm.model import build_step
    out = {}
    session = llm.target.search_session(llm._uploads)
    with session:
        for name, opts in variants.items():
            opts = dict(opts)
            fold = opts.pop("fold_norms", False)
            outs, writes = build_step(llm.weights, 1, 1, llm.max_seq_len, scale_weights=fold)
            t0 = time.perf_counter()
            target = llm.target.replace(fold_norms=True) if fold else llm.target
            p = em.compile(outs, device=target, writes=writes, dim_bounds={"P": llm.max_seq_len - 1}, **opts)
            p.executor  # noqa: B018
            print(f"{name}: {len(p.launches)} launch(es), {time.perf_counter() - t0:.1f} s "
                  f"{json.dumps({k: v for k, v in p.meta.get('megakernel', {}).items() if k != 'kernels'})}", flush=True)
            out[name] = p
    return out


def device_ms(fn, kernels: int, reps: int = 20) -> float:
    """Median device span of one call (first kernel start to last kernel end, from the profiler's
    CUDA activity: decode_layers_timeline._events): the step without the host's share, which a
    sync per call adds to cuda_time."""
    import tempfile

    from decode_layers_timeline import _events
    with tempfile.NamedTemporaryFile(suffix=".json") as tf:
        ev = _events(fn, reps, tf.name)
    runs = [ev[i * kernels:(i + 1) * kernels] for i in range(len(ev) // kernels)]
    spans = sorted(r[-1]["ts"] + r[-1]["dur"] - r[0]["ts"] for r in runs if r)
    return spans[len(spans) // 2] / 1e3 if spans else float("nan")


def feed(cfg, max_seq: int, P: int, seed: int = 0):
    """Decode-step inputs on the GPU with random caches (each program gets its own clone)."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    f = {"tokens": torch.randint(0, cfg.vocab, (1, 1), generator=g, device="cuda", dtype=torch.int32),
         "positions": torch.full((1, 1), P, dtype=torch.int32, device="cuda"),
         "start": torch.zeros(1, dtype=torch.int32, device="cuda")}
    for i in range(cfg.layers):
        for kv in "kv":
            f[f"{kv}{i}"] = (torch.randn(1, cfg.kv_heads, max_seq, cfg.head_dim, generator=g, device="cuda") * 0.5).to(torch.bfloat16)
    return f


def clone(f):
    return {k: v.clone() for k, v in f.items()}


def run(p, f, P):
    out = p.run(f, dims={"P": P})
    return {k: v.clone() for k, v in out.items()} if isinstance(out, dict) else [o.clone() for o in out]


def same(a, b) -> bool:
    import torch
    if isinstance(a, dict):
        return all(torch.equal(a[k], b[k]) for k in a)
    return all(torch.equal(x, y) for x, y in zip(a, b))


def suite_cases() -> list:
    """The GPU suite's MLP and decoder block (bench/suite.py), kernel by kernel and as a megakernel:
    agreement on random inputs and the graph replay's time (executor.time_program, median us)."""
    import ember as em
    from ember.megakernel_choice import agree, timings
    from suite import decoder_block, mlp
    out = []
    for case in (mlp(64), decoder_block(256, 512, 8, 4)):
        y, ins, _ = case.build(em, np.random.default_rng(0))
        row = {"case": case.name}
        try:
            k = em.compile(y, device="cuda")
            m = em.compile(y, device="cuda", megakernel=True)
            row["agree"] = agree(m, k) or "yes"
            row["megakernel_us"], row["kernels_us"] = timings(m, k)
            row["kernels"] = len(k.launches)
        except Exception as e:  # noqa: BLE001 - recorded: a case the megakernel cannot take
            row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--contexts", default="128,1024")
    ap.add_argument("--fuzz-seeds", type=int, default=10)
    ap.add_argument("--fuzz-runs", type=int, default=100)
    ap.add_argument("--fuzz-layers", type=int, default=2)
    ap.add_argument("--trace-dir", default=None)
    ap.add_argument("--ckpt", default="/tmp/ember-llama1b-mk")
    ap.add_argument("--also-threads", type=int, default=0,
                    help="also time a megakernel whose tasks take at most this many threads (megakernel_options threads)")
    ap.add_argument("--fuzz-threads", type=int, default=0, help="the fuzzer's megakernels with this task-thread cap")
    ap.add_argument("--fuzz-options", default="{}", metavar="JSON", help="megakernel_options of the fuzzer's megakernels")
    ap.add_argument("--rolled", action="store_true",
                    help="also time a megakernel whose row tasks keep their reduction loops rolled (option unroll=False; "
                         "unrolled is the default)")
    ap.add_argument("--options", default="{}", metavar="JSON",
                    help='more megakernels timed beside the default: {"name": megakernel_options}, e.g. {"ps6": {"per_sm": 6}}')
    ap.add_argument("--prefetch", type=int, default=0, help="also time a megakernel whose tasks prefetch this many bytes")
    ap.add_argument("--fold", action="store_true", help="also the kernels and the megakernel with the norms folded (Target.fold_norms)")
    ap.add_argument("--torch", action="store_true", help="also time torch eager and eager + CUDA graph on the same step")
    ap.add_argument("--suite", action="store_true", help="also the GPU suite's MLP and decoder block, kernels vs megakernel")
    args = ap.parse_args()
    import torch

    import ember.llm as L
    from ember.backends.cuda_megakernel import chrome_trace, launch_spans, read_trace
    contexts = [int(c) for c in args.contexts.split(",")]
    max_seq = max(contexts) + 64
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "model": f"Llama-3.2-1B shapes ({args.layers} layers), random bf16 weights, batch 1", "rows": []}
    bw = copy_bandwidth()
    res["copy_bandwidth_GBps"] = bw / 1e9
    results = {}

    def save():
        res.update(results)
        with open(args.out, "w") as fh:
            json.dump(res, fh, indent=1)

    # ---- fuzz on a small model first (fast to compile; a hang shows early)
    cfg_small = dict(LLAMA_1B, num_hidden_layers=args.fuzz_layers)
    write_checkpoint(args.ckpt + "-small", cfg_small)
    small = L.load(args.ckpt + "-small", device="cuda", max_seq_len=max_seq)
    # the reference is the same megakernel run by one worker (every task in program order): the
    # same compiled task code, so bit-identical outputs are expected; the kernels launched one by one
    # are compiled separately, where contraction into FMAs may differ (close, not bit-equal)
    cap = dict({"threads": args.fuzz_threads} if args.fuzz_threads else {}, **json.loads(args.fuzz_options))
    variants = {"reference": {"megakernel": True, "megakernel_options": dict(cap, workers=1)}}
    for s in range(args.fuzz_seeds):
        variants[f"fuzz{s}"] = {"megakernel": True, "megakernel_options": dict(cap, seed=s, jitter=1000 + s)}
    progs = step_programs(small, variants)
    fuzz = {"runs": 0, "mismatches": 0, "seeds": args.fuzz_seeds}
    base_feed = feed(small.config, max_seq, 0)
    for s in range(args.fuzz_seeds):
        p = progs[f"fuzz{s}"]
        for r in range(args.fuzz_runs):
            P = (r * 37 + s * 11) % (max_seq - 1)
            f = clone(base_feed)
            f["positions"].fill_(P)
            want_f = clone(f)
            want = run(progs["reference"], want_f, P)
            got = run(p, f, P)
            fuzz["runs"] += 1
            if not (same(got, want) and same(f, want_f)):
                fuzz["mismatches"] += 1
                if fuzz["mismatches"] <= 3:
                    print(f"fuzz seed {s} run {r} P {P}: MISMATCH", flush=True)
    print(json.dumps(fuzz), flush=True)
    results["fuzz"] = fuzz
    save()
    del progs, small

    # ---- the full model: check and time
    cfg = dict(LLAMA_1B, num_hidden_layers=args.layers)
    w = write_checkpoint(args.ckpt, cfg)
    weight_bytes = 2 * sum(v.numel() for v in w.values())
    if not args.torch:
        del w
    llm = L.load(args.ckpt, device="cuda", max_seq_len=max_seq)
    variants = {"kernels": {}, "task_kernels": {"megakernel_options": {"as_kernels": True}},
                "megakernel": {"megakernel": True},
                "serial": {"megakernel": True, "megakernel_options": {"workers": 1}}}
    if args.trace_dir:
        variants["traced"] = {"megakernel": True, "megakernel_options": {"trace": True}}
    if args.also_threads:
        variants["megakernel_threads"] = {"megakernel": True, "megakernel_options": {"threads": args.also_threads}}
    if args.prefetch:
        variants["megakernel_prefetch"] = {"megakernel": True, "megakernel_options": {"prefetch": args.prefetch}}
    if args.rolled:
        variants["megakernel_rolled"] = {"megakernel": True, "megakernel_options": {"unroll": False}}
    extra = json.loads(args.options)
    for name, o in extra.items():  # ("fold_norms" in an option set: that megakernel over the folded step)
        o = dict(o)
        fold = {"fold_norms": True} if o.pop("fold_norms", False) else {}
        variants[f"megakernel_{name}"] = {"megakernel": True, "megakernel_options": o, **fold}
    folded = ["kernels_fold", "megakernel_fold"] if args.fold else []
    if args.fold:  # the RMSNorms folded into the GEMVs they feed (Target.fold_norms, kernel/recompute.py)
        variants["kernels_fold"] = {"fold_norms": True}
        variants["megakernel_fold"] = {"megakernel": True, "fold_norms": True}
    progs = step_programs(llm, variants)
    c = llm.config
    check = {}
    for P in (5, contexts[-1] - 1):
        f0 = feed(c, max_seq, P, seed=P)
        outs = {n: (run(p, fa := clone(f0), P), fa) for n, p in progs.items()}
        mk, mkf = outs["megakernel"]
        se, sef = outs["serial"]
        tk, tkf = outs["task_kernels"]
        kd, _ = outs["kernels"]
        check[f"P{P}"] = {"megakernel_equals_serial": same(mk, se) and same(mkf, sef),
                          "megakernel_equals_task_kernels": same(mk, tk) and same(mkf, tkf),
                          "logits_max_abs_diff_vs_task_kernels": float((mk["logits"] - tk["logits"]).abs().max()),
                          "next_equal_default": bool(torch.equal(mk["next"], kd["next"])),
                          "logits_max_abs_diff_vs_default": float((mk["logits"] - kd["logits"]).abs().max()),
                          "logit_scale": float(kd["logits"].abs().max())}
        for n in [f"megakernel_{n}" for n in extra] + folded:  # each extra program against the kernels
            o, _ = outs[n]
            check[f"P{P}"][f"{n}_next_equal_default"] = bool(torch.equal(o["next"], kd["next"]))
            check[f"P{P}"][f"{n}_logits_max_abs_diff_vs_default"] = float((o["logits"] - kd["logits"]).abs().max())
        print(json.dumps(check[f"P{P}"]), flush=True)
    results["check"] = check
    save()
    for ctx in contexts:
        P = ctx - 1
        f0 = feed(c, max_seq, P)
        row = {"context": ctx}
        for n in [v for v in ("kernels", "task_kernels", "megakernel", "megakernel_threads", "megakernel_prefetch",
                              "megakernel_rolled")
                  if v in progs] + [f"megakernel_{n}" for n in extra] + folded:
            f = clone(f0)
            row[f"{n}_ms"] = cuda_time(lambda: progs[n].run(f, dims={"P": P}), 50)
            row[f"{n}_device_ms"] = device_ms(lambda: progs[n].run(f, dims={"P": P}), len(progs[n].launches))
        kv_bytes = 2 * c.layers * c.kv_heads * ctx * c.head_dim * 2
        row["floor_ms"] = (weight_bytes + kv_bytes) / bw * 1e3
        if args.torch:
            from llm import TorchLlama, cuda_graph
            from ember.llm.config import parse_config
            tref = TorchLlama(w, cfg, np.asarray(parse_config(cfg).inv_freq, np.float32), max_seq, 1)
            tok = torch.ones(1, 1, dtype=torch.long, device="cuda")
            with torch.no_grad():
                row["torch_eager_ms"] = cuda_time(lambda: tref.step(tok, P), 20)
                row["torch_eager_cudagraph_ms"] = cuda_time(cuda_graph(lambda: tref.step(tok, P)).replay, 50)
            del tref
        row["megakernel_pct_floor"] = 100 * row["floor_ms"] / row["megakernel_ms"]
        row["kernels_pct_floor"] = 100 * row["floor_ms"] / row["kernels_ms"]
        res["rows"].append(row)
        print(json.dumps(row), flush=True)
        save()
    if args.suite:
        results["suite"] = suite_cases()
        save()
    if not args.trace_dir:
        return 0
    # ---- the timeline of one traced run
    P = contexts[-1] - 1
    f = feed(c, max_seq, P)
    tp = progs["traced"]
    for _ in range(3):
        tp.run(f, dims={"P": P})
    rows = read_trace(tp)
    spans = launch_spans(rows)
    total = max(e for _, _, e in spans)
    busy = sum(r[6] - r[5] for r in rows) / 1e3
    workers = tp.meta["megakernel"]["workers"]
    results["timeline"] = {"context": contexts[-1], "span_us": total, "worker_busy_pct": 100 * busy / (total * workers),
                           "launches": [{"kernel": k, "start_us": round(s, 2), "end_us": round(e, 2)} for k, s, e in spans]}
    print(json.dumps({k: v for k, v in results["timeline"].items() if k != "launches"}), flush=True)
    if args.trace_dir:
        os.makedirs(args.trace_dir, exist_ok=True)
        with open(os.path.join(args.trace_dir, f"megakernel-ctx{contexts[-1]}.trace.json"), "w") as fh:
            json.dump(chrome_trace(rows), fh)
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
