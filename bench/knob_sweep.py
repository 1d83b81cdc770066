"""Schedule knobs laid over the default schedule of every tensor-core kernel (or, with an overlay's
"_on" key, every kernel of that default mode; with a "_split" key, the split pass's constants, e.g.
{"_split": {"K_CHUNK_MIN": 128}}) of whole KernelBench problems, timed side by side (one
process, one device; not a test).

    python bench/knob_sweep.py kernelbench/level1/02_matmul_rectangular.py ... \
        --knobs '[{"pf": true}, {"stages": 2}, {"BM": 64, "BN": 128, "WM": 2, "WN": 2}]' --precision torch

For each problem: the default program and one program per overlay (the default config of each mma
kernel updated with the overlay's keys; other kernels keep theirs) are compiled, checked against
the PyTorch module (max abs error within the KernelBench runner's tolerance) and timed with CUDA
events (median). This is how a default-schedule choice is measured on the problems it affects
before it is made."""
from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from ember.codegen import cuda as cg  # noqa: E402
from ember.frontends import pytorch as fe  # noqa: E402
from ember.precision import TF32_TOL  # noqa: E402

import kernelbench as kb  # noqa: E402
from run import time_torch, versions  # noqa: E402

DEFAULT = cg.default_config


def with_overlay(overlay):
    """Default configs with `overlay` laid over those of mode overlay["_on"] ("mma" when absent;
    "*": every kernel)."""
    overlay = dict(overlay or {})
    on = overlay.pop("_on", "mma")

    def cfg(k, target=None):
        d = DEFAULT(k, target)
        if not overlay or not (on == "*" or d.get("mode") == on):
            return d
        o = dict(d, **overlay)
        try:  # a kernel that cannot take the overlay keeps its default (not the whole model's variant lost)
            cg.render_kernel(k, o, target=target)
        except cg.UnsupportedKernel:
            return d
        return o
    return cfg


# the split pass's constants by their names before targets (kernel/split.py), and their SplitPolicy fields
SPLIT_FIELDS = {"SPLIT_MIN_LEN": "min_len", "SPLIT_MAX_OUT": "max_out", "CHUNKS": "chunks", "MIN_CHUNK": "min_chunk",
                "TILE": "tile", "TILES_FEW": "tiles_few", "TILES_WANTED": "tiles_wanted", "K_SPLIT_MIN": "k_min",
                "K_CHUNK_MIN": "k_chunk_min"}


def set_split_constants(values: dict) -> dict:
    """Set the split pass's thresholds (the CUDA target's SplitPolicy, kernel/split.py: when a reduction
    or contraction is split, and into how many chunks) for one variant; returns the previous values,
    to restore. Names: SplitPolicy's fields or the old constant names (SPLIT_FIELDS)."""
    import dataclasses

    from ember.backends import target as tg
    from ember.kernel.split import SplitPolicy
    fields = {SPLIT_FIELDS.get(k, k): v for k, v in values.items()}
    unknown = [k for k in fields if k not in {f.name for f in dataclasses.fields(SplitPolicy)}]
    if unknown:
        raise SystemExit(f"SplitPolicy (kernel/split.py) has no field(s) {unknown}")
    t = tg.get_target("cuda")
    old = {k: getattr(t.split, k) for k in fields}
    tg.set_target("cuda", t.replace(split=dataclasses.replace(t.split, **fields)))
    return old


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--knobs", default="[]", help="JSON list of overlays")
    ap.add_argument("--precision", default="float32", choices=list(fe.PRECISIONS))
    ap.add_argument("--out")
    a = ap.parse_args()
    overlays = [None] + json.loads(a.knobs)
    rows = []
    for path in a.paths:
        model, xs, graph = kb.problem_graph(path, a.precision)
        # Ember's copies start from the module as exported: a forward that reassigns its state (an RNN's
        # `self.hidden = ...`, real KernelBench 33) leaves eager's model unlike the graph
        pristine = copy.deepcopy(model)
        with torch.no_grad():
            flags = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
            torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
            ref = model(*xs)  # the reference in strict float32; eager is timed with PyTorch's defaults
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags
            eager_us = time_torch(lambda: model(*xs), "cuda")
        tol = TF32_TOL if a.precision != "float32" else 1e-4
        row = {"problem": os.path.basename(path), "eager_us": eager_us, "variants": []}
        for ov in overlays:
            ov_cfg = dict(ov or {})
            restore = set_split_constants(ov_cfg.pop("_split", {}))
            cg.default_config = with_overlay(ov_cfg)
            rec = {"overlay": ov}
            try:
                with torch.no_grad():
                    fn = fe.TorchFunction(copy.deepcopy(pristine), graph, "cuda", "none")
                    outs, refs = fn(*xs), ref
                    outs, refs = (outs, refs) if isinstance(refs, (tuple, list)) else ((outs,), (refs,))
                    err = max(float((o.float() - r.float()).abs().max()) for o, r in zip(outs, refs))
                    scale = max(float(r.float().abs().max()) for r in refs)
                    rec["max_abs_err"] = err
                    rec["correct"] = err <= tol * (1 + scale)
                    if rec["correct"]:
                        rec["us"] = time_torch(lambda: fn(*xs), "cuda")
                    rec["configs"] = [l.config.get("cfg") for l in fn.program.launches]
            except Exception as e:  # an overlay a kernel cannot take is a result, not a crash
                rec["error"] = f"{type(e).__name__}: {str(e)[:200]}"
            finally:
                cg.default_config = DEFAULT
                set_split_constants(restore)
            row["variants"].append(rec)
            t = f"{rec['us']:9.1f} us {eager_us / rec['us']:.2f}x eager" if "us" in rec else rec.get("error", f"WRONG {rec.get('max_abs_err')}")
            print(f"{row['problem'][:34]:34s} {json.dumps(ov)[:60]:60s} {t}", flush=True)
        rows.append(row)
        torch.cuda.empty_cache()
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "date": str(datetime.date.today()),
                       "versions": versions("cuda"), "precision": a.precision, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
