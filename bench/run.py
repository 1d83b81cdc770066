"""Benchmark runner: `python bench/run.py gpu|cpu [--search none|fast] [--no-compile] [--only SUBSTR]`.

Every case is checked against PyTorch first (a wrong result is reported, never timed as a win), then
timed in one process on one device: Ember (the whole program replayed as one CUDA graph on the GPU;
one call on the CPU), PyTorch eager, torch.compile and PyTorch under CUDA graphs. Each time is the
median of repeated runs after warm-up. The floor is bytes / measured copy bandwidth, and for
compute cases (contractions) at least FLOPs / measured matmul peak. The bandwidth is the faster of
a large copy's (DRAM) and a copy of the case's own bytes, by torch or by Ember (a CPU case of a few
MB runs from cache, faster than DRAM); both ceilings are the best of their timed runs, not the
median. (Measured against DRAM and the matmul peak for every case, the CPU suite printed floor%
above 100: the peak is a library GEMM's rate, 29 GFLOP/s on the 2-core VM, below what a row sum's
additions reach.) A measured floor is not a hard bound: a case that still beats it is flagged with
"!" in the table and `above_floor` in the JSON, never clamped. Results go to
bench/results/<suite>-<date>.json and a table is printed.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import ember as em  # noqa: E402

import suite  # noqa: E402


def to_torch(a: np.ndarray, device: str):
    import torch
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).to(device)
    return torch.from_numpy(np.ascontiguousarray(a)).to(device)


def time_torch(fn, device: str, reps: int = 30, inner: int = 5, best: bool = False) -> float:
    """Median time (us) of `reps` runs of `inner` calls; with best, the fastest run: for a ceiling
    (copy bandwidth, matmul peak), which noise from other processes can only make look lower."""
    import torch
    fn()
    if device == "cuda":
        torch.cuda.synchronize()
        ts = []
        for _ in range(reps):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(inner):
                fn()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1) * 1e3 / inner)
    else:
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            ts.append((time.perf_counter() - t0) * 1e6 / inner)
    ts.sort()
    return ts[0] if best else ts[len(ts) // 2]


_BANDWIDTHS: dict = {}


def copy_bandwidth(device: str, nbytes: int | None = None) -> float:
    """Bytes/s of a device-to-device copy (read + write counted): a large one (memory bandwidth) by
    default, else one moving about `nbytes` in all (rounded to a power of two; measured once), the
    faster of torch's copy and an Ember-compiled one."""
    import torch
    if nbytes is None:
        n = (1 << 28) if device == "cuda" else (1 << 25)
    else:
        n = 1 << max(10, (max(nbytes // 8, 1) - 1).bit_length())  # floats per side: half the traffic
    key = (device, n)
    if key not in _BANDWIDTHS:
        x = torch.ones(n, dtype=torch.float32, device=device)
        y = torch.empty_like(x)
        us = time_torch(lambda: y.copy_(x), device, reps=20, inner=3, best=True)
        if nbytes is not None:  # and Ember's own copy (same threads and runtime as the cases)
            copy = em.compile(em.input("x", (n,)) * 2.0, device=device)
            us = min(us, copy.benchmark(x=x if device == "cuda" else x.numpy()))
        _BANDWIDTHS[key] = 2 * n * 4 / (us * 1e-6)
    return _BANDWIDTHS[key]


def floor_cell(rec: dict) -> str:
    """The table's floor% column: flagged with "!" when the case beat its measured floor."""
    if "frac_of_floor" not in rec:
        return f"{'-':>7}"
    return f"{100 * rec['frac_of_floor']:6.1f}%" + ("!" if rec.get("above_floor") else "")


def matmul_peak(device: str, dtype: str) -> float:
    """FLOP/s of a large matrix product through PyTorch (the vendor library): the compute ceiling.
    float32 is measured with TF32 off, i.e. on CUDA cores, as Ember's float32 contractions run."""
    import torch
    n = 8192 if device == "cuda" else 1024
    td = getattr(torch, dtype)
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(n, n, device=device).to(td)
    b = torch.randn(n, n, device=device).to(td)
    us = time_torch(lambda: a @ b, device, reps=10, inner=2, best=True)
    return 2 * n ** 3 / (us * 1e-6)


def cuda_graph_fn(fn):
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def versions(device: str) -> dict:
    import torch
    v = {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
         "ember": em.__version__}
    if device == "cuda":
        import cuda.core
        from ember.backends.cuda import nvrtc_version
        v.update({"cuda.core": cuda.core.__version__, "nvrtc": nvrtc_version(),
                  "torch_cuda": torch.version.cuda})
        try:
            import subprocess
            v["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                         capture_output=True, text=True).stdout.strip()
        except OSError:
            pass
    else:
        v["gcc"] = __import__("ember.backends.cpu", fromlist=["x"]).compiler_identity()
        v["torch_threads"] = torch.get_num_threads()
    return v


def device_name(device: str) -> str:
    if device == "cuda":
        import torch
        return torch.cuda.get_device_name(0)
    from ember.backends.cpu import cpu_identity
    return f"{cpu_identity().split('|')[0]} ({os.cpu_count()} cores)"


PEAKS: dict = {}
SEARCH_TIME = 60.0


def run_case(case, device: str, search: str, with_compile: bool, bw: float) -> dict:
    import torch
    rng = np.random.default_rng(0)
    y, ins, tf = case.build(em, rng)
    tins = {k: to_torch(v, device) for k, v in ins.items()}
    rec: dict = {"name": case.name, "kind": case.kind, "dtype": case.dtype}
    t0 = time.perf_counter()
    opts = {"time_limit": SEARCH_TIME, "progress": False} if search != "none" else {}
    fn = em.compile(y, device=device, search=search, **opts)
    if search != "none":
        rec["search"] = fn.meta.get("search")
        rec["rejections"] = fn.meta.get("rejections", [])[:10]
    rec["compile_s"] = round(time.perf_counter() - t0, 2)
    rec["kernels"] = len(fn.launches)
    ref = tf(**tins)
    out = fn(**(tins if device == "cuda" else ins))
    out = out.float().cpu().numpy() if hasattr(out, "cpu") else np.asarray(out, np.float64)
    r = ref.float().cpu().numpy()
    tol = 1e-2 if case.dtype in ("bfloat16", "float16") else 1e-4
    err = float(np.max(np.abs(out - r)))
    scale = float(np.max(np.abs(r)))
    rec["max_abs_err"], rec["correct"] = err, bool(err <= tol + tol * scale * (10 if case.kind == "compute" else 1))
    if not rec["correct"]:
        print(f"  !! {case.name}: WRONG (max err {err:.3g}, scale {scale:.3g}) -- not timed", flush=True)
        return rec
    rec["ember_us"] = fn.benchmark(**(tins if device == "cuda" else ins))
    call_in = tins if device == "cuda" else ins
    rec["call_us"] = time_torch(lambda: fn(**call_in), "cpu", reps=20, inner=3)  # host wall time of one call
    call = lambda: tf(**tins)  # noqa: E731
    rec["eager_us"] = time_torch(call, device)
    if device == "cuda":
        rec["cudagraph_us"] = time_torch(cuda_graph_fn(call), device)
    if with_compile:
        try:
            cf = torch.compile(tf)
            cf(**tins)
            rec["compile_us"] = time_torch(lambda: cf(**tins), device)
        except Exception as e:  # torch.compile unavailable in this environment: say so
            rec["compile_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    nbytes = sum(v.nbytes for v in ins.values()) + int(np.prod(r.shape)) * np.dtype(
        "float32" if case.dtype == "float32" else "uint16").itemsize
    rec["bytes"], rec["flops"] = nbytes, case.flops
    peak = PEAKS.get(case.dtype) or PEAKS["float32"]
    bw = max(bw, copy_bandwidth(device, nbytes))  # a working set that fits in cache moves faster
    # the compute term only for contractions: the measured peak is a library GEMM's rate, not the
    # machine's; on the 2-core VM it is 29 GFLOP/s, below what a row sum's additions reach
    floor = max(nbytes / bw, case.flops / peak if case.kind == "compute" else 0.0) * 1e6
    rec["floor_us"], rec["floor_bandwidth_GBps"] = floor, bw / 1e9
    rec["frac_of_floor"] = floor / rec["ember_us"]
    rec["above_floor"] = rec["frac_of_floor"] > 1.0
    for b in ("eager", "compile", "cudagraph"):
        if f"{b}_us" in rec:
            rec[f"speedup_vs_{b}"] = rec[f"{b}_us"] / rec["ember_us"]
    return rec


def table(recs: list) -> str:
    hdr = f"{'case':<44} {'ok':>3} {'kern':>4} {'ember us':>10} {'eager':>9} {'compile':>9} {'graphs':>9} {'vs eager':>8} {'vs comp':>8} {'floor%':>7}"
    lines = [hdr, "-" * len(hdr)]
    for r in recs:
        def f(k, fmt="{:9.1f}"):
            return fmt.format(r[k]) if k in r else f"{'-':>9}"
        lines.append(f"{r['name'][:44]:<44} {'y' if r.get('correct') else 'N':>3} {r.get('kernels', 0):>4} "
                     f"{f('ember_us', '{:10.1f}')} {f('eager_us')} {f('compile_us')} {f('cudagraph_us')} "
                     f"{f('speedup_vs_eager', '{:8.2f}')} {f('speedup_vs_compile', '{:8.2f}')} "
                     f"{floor_cell(r)}" if 'frac_of_floor' in r else
                     f"{r['name'][:44]:<44} {'y' if r.get('correct') else 'N':>3}")
    if any(r.get("above_floor") for r in recs):
        lines.append("! faster than the floor: a measured copy of the same bytes (or the measured matmul "
                     "peak) is not a hard bound (timing noise, or a better access pattern than torch's copy)")
    good = [r for r in recs if "speedup_vs_eager" in r]
    if good:
        gm = float(np.exp(np.mean([np.log(r["speedup_vs_eager"]) for r in good])))
        lines.append(f"geomean speedup vs eager over {len(good)} cases: {gm:.2f}x")
        comp = [r for r in good if "speedup_vs_compile" in r]
        if comp:
            gc = float(np.exp(np.mean([np.log(r["speedup_vs_compile"]) for r in comp])))
            lines.append(f"geomean speedup vs torch.compile over {len(comp)} cases: {gc:.2f}x")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("suite", choices=["gpu", "cpu"])
    p.add_argument("--search", default="none")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile baselines")
    p.add_argument("--only", default=None)
    p.add_argument("--out", default=None)
    p.add_argument("--search-time", type=float, default=60.0, help="search time limit per case (s)")
    p.add_argument("--models", action="store_true", help="cpu: also the real-models section (bench/cpu_models.py)")
    a = p.parse_args(argv)
    global SEARCH_TIME
    SEARCH_TIME = a.search_time
    device = "cuda" if a.suite == "gpu" else "cpu"
    cases = suite.gpu_cases() if device == "cuda" else suite.cpu_cases()
    if a.only:
        cases = [c for c in cases if any(s in c.name for s in a.only.split(","))]
    bw = copy_bandwidth(device)
    PEAKS["float32"] = matmul_peak(device, "float32")
    if device == "cuda":
        PEAKS["bfloat16"] = PEAKS["float16"] = matmul_peak(device, "bfloat16")
    print(f"{device_name(device)}: measured copy bandwidth {bw / 1e9:.0f} GB/s, matmul peak "
          + ", ".join(f"{k} {v / 1e12:.1f} TFLOP/s" for k, v in PEAKS.items()), flush=True)
    recs = []
    for c in cases:
        print(f"- {c.name}", flush=True)
        try:
            recs.append(run_case(c, device, a.search, not a.no_compile, bw))
        except Exception as e:
            import traceback
            traceback.print_exc()
            recs.append({"name": c.name, "error": f"{type(e).__name__}: {e}"})
    res = {"suite": a.suite, "device": device_name(device), "date": datetime.datetime.now().isoformat(timespec="seconds"),
           "search": a.search, "copy_bandwidth_GBps": bw / 1e9,
           "matmul_peak_TFLOPs": {k: v / 1e12 for k, v in PEAKS.items()}, "versions": versions(device), "cases": recs}
    if a.models and device == "cpu":  # ResNet-18, a MiniLM-shaped encoder, the MLP against torch eager
        sys.path.insert(0, HERE)
        import cpu_models
        res["models"] = cpu_models.measure()
        res["models_cpu"] = cpu_models._cpu_model()
    out = a.out or os.path.join(HERE, "results", f"{a.suite}-{a.search}-{datetime.date.today()}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(table(recs))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
