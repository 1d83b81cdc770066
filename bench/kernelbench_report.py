"""The KernelBench runner's metrics and report (bench/kernelbench.py): fast_p and geometric-mean
speedups per level, the printed table, the environment recorded with the results."""
from __future__ import annotations

import os
import platform

import numpy as np
import torch

import ember as em

def geomean(xs: list) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return float(np.exp(np.mean(np.log(xs)))) if xs else None


def summarize(recs: list) -> dict:
    out = {}
    levels = sorted({r["level"] for r in recs})
    for lv in levels + ["all"]:
        rs = [r for r in recs if lv == "all" or r["level"] == lv]
        n = len(rs)
        s = {"problems": n,
             "imported": sum(r["status"] not in ("load_error", "unsupported", "import_error") for r in rs),
             "unsupported": sum(r["status"] == "unsupported" for r in rs),
             "correct": sum(r["status"] == "correct" for r in rs),
             "precision_fallback": sum("precision_fallback" in r for r in rs)}
        s["fast_0"] = s["correct"] / n if n else 0.0
        for b in ("eager", "compile"):
            sp = [r.get(f"speedup_vs_{b}") for r in rs if r["status"] == "correct" and r.get(f"speedup_vs_{b}")]
            s[f"timed_vs_{b}"] = len(sp)
            for p in (1.0, 1.5):
                s[f"fast_{p:g}_vs_{b}"] = sum(x > p for x in sp) / n if n else 0.0
            s[f"geomean_vs_{b}"] = geomean(sp)
        out[str(lv)] = s
    return out


def table(recs: list, summary: dict) -> str:
    hdr = (f"{'problem':<40} {'lvl':>3} {'status':<12} {'kern':>4} {'max err':>9} {'ember ms':>10} {'eager ms':>10} "
           f"{'compile ms':>10} {'x eager':>8} {'x comp':>8}")
    lines = [hdr, "-" * len(hdr)]

    def f(r, k, fmt):
        return fmt.format(r[k]) if r.get(k) is not None else f"{'-':>{len(fmt.format(0.0))}}"
    for r in recs:
        lines.append(f"{r['name'][:40]:<40} {r['level']:>3} {r['status']:<12} {r.get('kernels', '-'):>4} "
                     f"{f(r, 'max_abs_err', '{:9.2e}')} {f(r, 'ember_ms', '{:10.3f}')} {f(r, 'eager_ms', '{:10.3f}')} "
                     f"{f(r, 'compile_ms', '{:10.3f}')} {f(r, 'speedup_vs_eager', '{:8.2f}')} {f(r, 'speedup_vs_compile', '{:8.2f}')}")
        if r.get("error") and r["status"] != "correct":
            lines.append(f"    {r['error'][:220]}")
        for fl in r.get("flags", []):
            lines.append(f"    flag: {fl}")
    lines.append("")
    lines.append(f"{'level':<6} {'n':>3} {'import':>6} {'correct':>7} {'fast_1 eager':>12} {'fast_1.5 eager':>14} "
                 f"{'geo eager':>9} {'fast_1 comp':>11} {'fast_1.5 comp':>13} {'geo comp':>8}")
    for lv, s in summary.items():
        def g(k):
            return f"{s[k]:.2f}x" if s.get(k) else "-"
        lines.append(f"{lv:<6} {s['problems']:>3} {s['imported']:>6} {s['correct']:>7} {s['fast_1_vs_eager']:>12.2f} "
                     f"{s['fast_1.5_vs_eager']:>14.2f} {g('geomean_vs_eager'):>9} {s['fast_1_vs_compile']:>11.2f} "
                     f"{s['fast_1.5_vs_compile']:>13.2f} {g('geomean_vs_compile'):>8}")
    return "\n".join(lines)


def environment(device: str) -> dict:
    v = {"python": platform.python_version(), "torch": torch.__version__, "ember": em.__version__,
         "numpy": np.__version__, "platform": platform.platform()}
    if device == "cuda":
        v["gpu"] = torch.cuda.get_device_name(0)
        v["torch_cuda"] = torch.version.cuda
    else:
        v["cpu_count"] = os.cpu_count()
        v["torch_threads"] = torch.get_num_threads()
    v["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY")
    v["tf32_matmul"] = bool(torch.backends.cuda.matmul.allow_tf32)
    v["tf32_cudnn"] = bool(torch.backends.cudnn.allow_tf32)
    return v
