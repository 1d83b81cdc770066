"""GPU fuzzer: random graphs compiled by Ember and checked against a float64 oracle, in parallel.

    python bench/fuzz_gpu.py --count 12000 --time-budget 450 --workers 15 --out bench/results/fuzz.json
    python bench/fuzz_gpu.py --replay 1234            # one seed again: its program, outcome, error
    python bench/fuzz_gpu.py --device cpu --count 50  # locally, small graphs against em.reference

Seeds start..start+count-1 are handed to W worker processes (each with its own CUDA context; NVRTC
compiles are the bottleneck, so they run in parallel processes). In the default "mix" mode one seed
in ten is a small graph checked against numpy's em.reference *and* against the torch float64
oracle (which verifies that oracle), the others realistic graphs checked against torch in float64
on the GPU. A worker that hangs on one graph (HANG_S) is killed and replaced, its seed recorded as
"hang"; a worker that dies (or whose CUDA context an error poisoned) is replaced, its seed recorded
as "crash" / "error". The run stops handing out seeds at --time-budget and writes the JSON: device,
driver and versions, counts (graphs, ok, wrong, errors, unsupported...), coverage of kernel modes
and lowering paths, and for every wrong or failing graph its seed, program text and error, to
replay with --replay SEED (docs/fuzzing.md). The exit status is 1 when anything was wrong.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import json
import multiprocessing as mp
import os
import platform
import queue
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

HANG_S = 180.0  # one graph running longer than this is a hang (normal: well under 10 s)
SMALL_EVERY = 10  # mix mode: seeds divisible by this are small graphs (double-oracle checked)
KEEP_FAILURES = 300  # failing graphs recorded in full (all are counted)


def seed_mode(seed: int, mode: str) -> str:
    if mode != "mix":
        return mode
    return "small" if seed % SMALL_EVERY == 0 else "realistic"


def device_info(device: str) -> dict:
    info = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        import numpy
        info["numpy"] = numpy.__version__
        import torch
        info["torch"] = torch.__version__
    except ImportError:
        pass
    if device == "cuda":
        try:
            import cuda.core
            from cuda.bindings import driver
            from ember.backends.cuda import device as cuda_device
            from ember.backends.cuda import nvrtc_version
            dev = cuda_device()
            info["device"] = dev.name
            info["arch"] = f"sm_{dev.arch}"
            _, v = driver.cuDriverGetVersion()
            info["driver_cuda"] = f"{v // 1000}.{v % 1000 // 10}"
            info["nvrtc"] = nvrtc_version()
            info["cuda.core"] = cuda.core.__version__
        except Exception as e:  # noqa: BLE001 - informational
            info["device_error"] = str(e)[:200]
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20, check=False)
            info["nvidia_smi"] = smi.stdout.strip()
        except Exception:  # noqa: BLE001
            pass
    else:
        info["device"] = platform.processor() or platform.machine()
    return info


def _fatal_cuda(res: dict) -> bool:
    """A CUDA error that leaves the context unusable: the worker must restart."""
    e = res.get("error", "")
    return res.get("outcome") == "error" and res.get("stage") in ("run", "inputs", "oracle") and "CUDA" in e


def take_seed(next_seed, end: int) -> int | None:
    """The next seed of the run (a shared counter: a queue prefilled with every seed kept the
    parent from exiting, its feeder thread blocked on the unread rest)."""
    with next_seed.get_lock():
        seed = next_seed.value
        if seed >= end:
            return None
        next_seed.value = seed + 1
        return seed


def worker(wid: int, device: str, mode: str, compile_only: bool, next_seed, end: int, results, stop) -> None:
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    from ember.testing.fuzz_run import compile_cuda_only, run_one
    if device == "cuda" and not compile_only:
        import torch
        torch.cuda.init()
    results.put(("hello", wid, device_info(device) if wid == 0 else None))
    while not stop.is_set():
        seed = take_seed(next_seed, end)
        if seed is None:
            break
        results.put(("start", wid, seed, time.time()))
        m = seed_mode(seed, mode)
        res = compile_cuda_only(seed, m) if compile_only else run_one(seed, m, device)
        results.put(("done", wid, res))
        if _fatal_cuda(res):
            break
        if device == "cuda" and not compile_only:
            import torch
            torch.cuda.empty_cache()  # the oracle's float64 tensors: give them back between graphs


class Run:
    def __init__(self, args):
        self.args = args
        self.t0 = time.time()
        self.counts: collections.Counter = collections.Counter()
        self.coverage: collections.Counter = collections.Counter()
        self.kernels = 0
        self.failures: list = []
        self.unsupported: collections.Counter = collections.Counter()
        self.info: dict = {}
        self.compile_s = self.run_s = self.check_s = 0.0
        self.closest: list = []  # (err / bound, seed) of the passing graphs nearest their bound

    def add(self, res: dict) -> None:
        out = res["outcome"]
        self.counts["graphs"] += 1
        self.counts[out] += 1
        self.counts[f"graphs_{res.get('mode', '?')}"] += 1
        self.coverage.update(res.get("coverage", []))
        self.kernels += int(res.get("kernels", 0))
        t = res.get("times", {})
        self.compile_s += t.get("compile", res.get("seconds", 0.0))
        self.run_s += t.get("run", 0.0)
        self.check_s += t.get("check", 0.0)
        if out == "ok" and res.get("err_ratio"):
            self.closest = sorted(self.closest + [(round(res["err_ratio"], 4), res["seed"])], reverse=True)[:5]
        if out == "unsupported":
            self.unsupported[res.get("error", "")[:160]] += 1
        elif out != "ok" and len(self.failures) < KEEP_FAILURES:
            self.failures.append(res)
        if out not in ("ok", "unsupported"):
            print(f"  seed {res['seed']} ({res.get('mode')}): {out} {res.get('stage', '')} "
                  f"{res.get('why') or res.get('error', '')}"[:400], flush=True)

    def summary(self) -> dict:
        el = time.time() - self.t0
        n = self.counts["graphs"]
        a = self.args
        return {
            "what": "ember GPU fuzzer (bench/fuzz_gpu.py): random graphs vs a float64 oracle",
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "commit": _git_commit(),
            "args": {"count": a.count, "start": a.start, "workers": a.workers, "time_budget": a.time_budget,
                     "mode": a.mode, "device": a.device, "compile_only": a.compile_only},
            "env": self.info,
            "elapsed_s": round(el, 1),
            "graphs_per_s": round(n / el, 2) if el else 0.0,
            "counts": dict(self.counts),
            "wrong": self.counts["wrong"],
            "kernels": self.kernels,
            "coverage": dict(sorted(self.coverage.items())),
            "seconds_in_workers": {"compile": round(self.compile_s, 1), "run": round(self.run_s, 1),
                                   "check": round(self.check_s, 1)},
            "closest_passes": [{"err_over_bound": r, "seed": sd} for r, sd in self.closest],
            "unsupported": dict(self.unsupported.most_common(50)),
            "failures": self.failures,
        }

    def write(self) -> None:
        if not self.args.out:
            return
        tmp = self.args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.summary(), f, indent=1)
        os.replace(tmp, self.args.out)


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False,
                              timeout=10).stdout.strip()
    except Exception:  # noqa: BLE001
        return ""


def run_parallel(args) -> dict:
    ctx = mp.get_context("spawn")  # CUDA contexts do not survive fork
    results, stop = ctx.Queue(), ctx.Event()
    next_seed, end = ctx.Value("q", args.start), args.start + args.count
    run = Run(args)
    procs: dict = {}
    inflight: dict = {}  # wid -> (seed, start time)

    def spawn(wid: int) -> None:
        p = ctx.Process(target=worker, daemon=True,
                        args=(wid, args.device, args.mode, args.compile_only, next_seed, end, results, stop))
        p.start()
        procs[wid] = p

    for w in range(args.workers):
        spawn(w)
    last_write = last_print = time.time()
    deadline = run.t0 + args.time_budget
    state = {"done": 0}

    def handle(msg) -> None:
        kind, wid = msg[0], msg[1]
        if kind == "hello" and msg[2]:
            run.info = msg[2]
            print("device:", json.dumps(msg[2]), flush=True)
        elif kind == "start":
            inflight[wid] = (msg[2], msg[3])
        elif kind == "done":
            inflight.pop(wid, None)
            run.add(msg[2])
            state["done"] += 1

    def drain(wait: float) -> None:
        """Handle every message already sent (a worker that exited may still have some in the pipe)."""
        t_end = time.time() + wait
        while True:
            try:
                handle(results.get(timeout=max(0.0, t_end - time.time())))
            except queue.Empty:
                return

    while True:
        now = time.time()
        if now >= deadline and not stop.is_set():
            print(f"time budget reached after {state['done']} graphs: finishing the graphs in flight", flush=True)
            stop.set()
        drain(0.5)
        for wid, p in list(procs.items()):  # hangs and deaths: record the seed, replace the worker
            cur = inflight.get(wid)
            hung = cur is not None and time.time() - cur[1] > HANG_S
            if hung or not p.is_alive():
                if hung:
                    p.kill()
                p.join(timeout=5)
                drain(1.0)  # its last messages: the graph it finished, if it did
                cur = inflight.get(wid)
                if cur is not None:
                    mode = seed_mode(cur[0], args.mode)
                    run.add({"seed": cur[0], "mode": mode, "outcome": "hang" if hung else "crash",
                             "error": f"worker exit code {p.exitcode}"})
                    state["done"] += 1
                    inflight.pop(wid, None)
                procs.pop(wid)
                if not stop.is_set() and next_seed.value < end:
                    spawn(wid)
        done_seeds = state["done"]
        if time.time() - last_print > 15:
            el = time.time() - run.t0
            print(f"[{el:6.0f} s] {done_seeds} graphs ({done_seeds / el:.1f}/s): "
                  f"{dict(run.counts)}", flush=True)
            last_print = time.time()
        if time.time() - last_write > 30:
            run.write()
            last_write = time.time()
        if done_seeds >= args.count or not procs or (stop.is_set() and not inflight) or \
                (next_seed.value >= end and not inflight and not any(p.is_alive() for p in procs.values())):
            break
        if stop.is_set() and time.time() > deadline + HANG_S:
            break
    stop.set()
    for p in procs.values():
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
    run.write()
    return run.summary()


def replay(args) -> int:
    from ember.testing.fuzz_run import compile_cuda_only, run_one
    mode = seed_mode(args.replay, args.mode)
    res = compile_cuda_only(args.replay, mode) if args.compile_only else run_one(args.replay, mode, args.device)
    print(res.get("program", ""))
    shown = {k: v for k, v in res.items() if k != "program"}
    print(json.dumps(shown, indent=1))
    return 0 if res["outcome"] in ("ok", "unsupported") else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=1000, help="seeds to run (start .. start+count-1)")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--time-budget", type=float, default=480.0, help="seconds; then no new graphs start")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--mode", choices=("mix", "small", "realistic"), default=None,
                    help="graph sizes (default: mix on cuda, small on cpu)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--compile-only", action="store_true",
                    help="only lower, render CUDA and compile with NVRTC (no GPU needed): a throughput probe")
    ap.add_argument("--out", default="", help="JSON results (rewritten every 30 s while running)")
    ap.add_argument("--replay", type=int, default=None, help="run one seed in this process and print it")
    args = ap.parse_args(argv)
    if args.mode is None:
        args.mode = "mix" if args.device == "cuda" and not args.compile_only else \
            ("realistic" if args.compile_only else "small")
    if args.device == "cuda" and not args.compile_only:
        from ember.testing.fuzz_run import cuda_available
        if not cuda_available():
            print("error: --device cuda but no CUDA GPU is available (use --device cpu or --compile-only)")
            return 2
    if args.replay is not None:
        return replay(args)
    s = run_parallel(args)
    print(json.dumps({k: s[k] for k in ("elapsed_s", "graphs_per_s", "counts", "kernels", "coverage")}, indent=1))
    bad = sum(s["counts"].get(k, 0) for k in ("wrong", "error", "hang", "crash", "oracle_mismatch"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
