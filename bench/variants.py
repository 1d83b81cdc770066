"""Schedule variants of single-kernel cases, timed side by side on the GPU (one process, one device).

`python bench/variants.py [--out FILE] [--only SUBSTR]`: for each case, the default schedule and a
list of explicit kernel configs (codegen/cuda.py's knobs) are compiled, checked against PyTorch and
timed through the torch call path (CUDA events around calls, as bench/kernelbench.py times), next to
PyTorch eager. This is how the default schedules' choices are measured before they are made: the
JSON records every variant's time and fraction of the copy floor.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import ember as em  # noqa: E402

import suite  # noqa: E402
from run import copy_bandwidth, device_name, time_torch, to_torch, versions  # noqa: E402


def relu(rows, cols):
    def build(em, rng):
        x = em.input("x", (rows, cols))
        return x.relu(), {"x": suite._f(rng, rows, cols)}, lambda x: x.relu()
    return suite.Case(f"relu_{rows}x{cols}", "memory", build, flops=rows * cols)


def linear_relu(m, n, k):
    def build(em, rng):
        x, w, b = em.input("x", (m, k)), em.input("w", (n, k)), em.input("b", (n,))
        ins = {"x": suite._f(rng, m, k), "w": suite._f(rng, n, k, scale=k ** -0.5), "b": suite._f(rng, n)}

        def tf(x, w, b):
            import torch
            return torch.nn.functional.linear(x, w, b).relu()
        return em.linear(x, w, b).relu(), ins, tf
    return suite.Case(f"linear_relu_{m}x{n}x{k}", "compute", build, flops=2 * m * n * k)


def conv(name, xshape, wshape, **kw):
    """A convolution case (transposed with transposed=True, nd from the input's rank)."""
    nd = len(xshape) - 2

    def build(em, rng):
        from ember.ops import conv as C
        x, w = em.input("x", xshape), em.input("w", wshape)
        ins = {"x": suite._f(rng, *xshape), "w": suite._f(rng, *wshape, scale=0.1)}
        tr = kw.get("transposed", False)
        if tr:
            y = C._conv_transpose(x, w, None, kw.get("stride", 1), kw.get("padding", 0), 0, 1, 1, nd)
        else:
            y = C._conv(x, w, None, kw.get("stride", 1), kw.get("padding", 0), 1, 1, nd)

        def tf(x, w):
            import torch.nn.functional as F
            f = getattr(F, f"conv_transpose{nd}d" if tr else f"conv{nd}d")
            return f(x, w, stride=kw.get("stride", 1), padding=kw.get("padding", 0))
        return y, ins, tf
    # every (input point, tap) pair is one multiply-add: exact for a transposed conv, and for a conv
    # whose output has the input's spatial size (the stride-1 "same" cases below)
    flops = 2 * int(np.prod(wshape)) * xshape[0] * int(np.prod(xshape[2:]))
    return suite.Case(name, "compute", build, flops=flops)


def _idx_knobs(tile):
    return [dict(_mma(*tile), ktab=a, packrows=b) for a in (False, True) for b in (False, True)]


def _ew(t, items, vec=8):
    return {"mode": "elementwise", "threads": t, "vec": vec, "items": items}


def _block(t, cache, cluster=1):
    c = {"mode": "block", "threads": t, "vec": 8, "cache": cache}
    if cluster > 1:
        c["cluster"] = cluster
    return c


def _mma(bm, bn, bk, wm, wn):
    return {"mode": "mma", "BM": bm, "BN": bn, "BK": bk, "WM": wm, "WN": wn}


def _pipe_knobs(tile):
    """The k loop's knobs (codegen/cuda_mma.py): `kslice` (one k variable fastest, the rest fixed per
    slice), unconditional prefetch (`pf`), two shared-memory stages."""
    kws = ({}, {"pf": True}, {"stages": 2}, {"kslice": True}, {"kslice": True, "pf": True},
           {"kslice": True, "stages": 2}, {"kslice": True, "pf": True, "stages": 2})
    return [dict(_mma(*tile), **kw) for kw in kws]


def _unrolled(t, cluster, unroll):
    return dict(_block(t, "smem", cluster), unroll=unroll)


WIDE_ROW_VARIANTS = [_block(512, "smem"), _block(1024, "smem"), _block(512, "smem", 2), _block(256, "smem", 4),
                     _unrolled(512, 2, 2), _unrolled(512, 2, 8), _unrolled(512, 2, 16), _unrolled(512, 1, 8),
                     _unrolled(512, 1, 16), _unrolled(1024, 1, 8), _unrolled(256, 4, 8), _unrolled(1024, 2, 8)]
MMA_TILES = [(128, 128, 16, 2, 4), (128, 64, 16, 2, 2), (64, 64, 16, 2, 2), (128, 256, 16, 2, 4),
             (256, 128, 16, 4, 2), (128, 128, 16, 2, 2), (64, 128, 16, 1, 2), (128, 64, 16, 2, 1),
             (64, 256, 16, 1, 4), (256, 64, 16, 4, 1), (128, 256, 16, 4, 4), (64, 128, 16, 2, 2)]
MMA_VARIANTS = [_mma(*t) for t in MMA_TILES]


def pipe_cases():
    """Convolutions and GEMMs for the k-loop pipeline knobs (run with --tf32 for PyTorch's conv precision)."""
    return [
        (conv("conv2d_3x3_32x64x128x128_o128", (32, 64, 128, 128), (128, 64, 3, 3), padding=1),
         _pipe_knobs((128, 256, 16, 2, 4)) + _pipe_knobs((128, 128, 16, 2, 2))),
        (conv("conv2d_3x3_32x64x128x128_o64", (32, 64, 128, 128), (64, 64, 3, 3), padding=1),
         _pipe_knobs((64, 64, 16, 2, 2)) + _pipe_knobs((64, 128, 16, 2, 2)) + _pipe_knobs((64, 256, 16, 2, 4))),
        (conv("conv2d_3x3_32x128x32x32_o128", (32, 128, 32, 32), (128, 128, 3, 3), padding=1),
         _pipe_knobs((128, 128, 16, 2, 2)) + _pipe_knobs((64, 64, 16, 2, 2))),
        (conv("conv3d_8x16x32x64x64_o32", (8, 16, 32, 64, 64), (32, 16, 3, 3, 3), padding=1),
         _pipe_knobs((32, 128, 16, 1, 4)) + _pipe_knobs((64, 64, 16, 2, 2))),
        (conv("conv2d_1x1_32x256x64x64_o256", (32, 256, 64, 64), (256, 256, 1, 1)),
         _pipe_knobs((128, 256, 16, 2, 4)) + _pipe_knobs((128, 128, 16, 2, 2))),
        (linear_relu(2048, 4096, 4096), _pipe_knobs((128, 256, 16, 2, 4)) + _pipe_knobs((128, 128, 16, 2, 2))),
        (suite.matmul(1031, 3079, 2053), _pipe_knobs((128, 128, 16, 2, 2))),
    ]


def cases():
    return [
        (conv("conv2d_3x3_32x64x128x128_o128", (32, 64, 128, 128), (128, 64, 3, 3), padding=1),
         _idx_knobs((128, 256, 16, 2, 4)) + _idx_knobs((128, 128, 16, 2, 2))),
        (conv("conv3d_8x16x32x64x64_o32", (8, 16, 32, 64, 64), (32, 16, 3, 3, 3), padding=1),
         _idx_knobs((64, 64, 16, 2, 2)) + _idx_knobs((32, 64, 16, 1, 2)) + _idx_knobs((32, 128, 16, 1, 4))),
        (conv("convT2d_32x64x64x64_o32_k4s2", (32, 64, 64, 64), (64, 32, 4, 4), stride=2, padding=1, transposed=True),
         _idx_knobs((128, 256, 16, 2, 4)) + _idx_knobs((128, 128, 16, 2, 2))),
        (conv("convT3d_4x32x16x32x32_o16_k3s2", (4, 32, 16, 32, 32), (32, 16, 3, 3, 3), stride=2, padding=1,
              transposed=True), _idx_knobs((128, 64, 16, 2, 2)) + _idx_knobs((128, 128, 16, 2, 2))),
        (suite.layernorm(1024, 32768), WIDE_ROW_VARIANTS),
        (suite.softmax(1024, 32768), WIDE_ROW_VARIANTS),
        (linear_relu(2048, 4096, 4096), []),
        (suite.matmul(1024, 1024, 1024), []),
        (suite.matmul(2048, 1024, 8192), []),
        (suite.matmul(32768, 64, 2048), []),
        (suite.matmul(8192, 8192, 32), []),
    ]


def run_variant(y, cfg, tins, ref, bw, nbytes, case, tol=1e-4):
    from ember.codegen import cuda as cg
    from ember.kernel import lower as lowering
    from ember.pipeline import build_program
    lowered = lowering.lower([y.node])
    if len(lowered.kernels) != 1 and cfg is not None and cfg.get("mode") != "mma":
        return {"cfg": cfg, "error": f"{len(lowered.kernels)} kernels (variants are for one)"}
    # several kernels: the config is for the contraction, the rest keep their defaults
    cfgs = [cfg if cfg is not None and (len(lowered.kernels) == 1 or cg.mma_applicable(cg.canonical(k)))
            else cg.default_config(k) for k, _ in lowered.kernels]
    try:
        fn = em.compile(y, device="cuda") if cfg is None else build_program(
            lowered, "cuda", None, "single", configs=cfgs)
        out = fn(**tins)
    except Exception as e:
        return {"cfg": cfg, "error": f"{type(e).__name__}: {str(e)[:300]}"}
    err = float((out.float() - ref.float()).abs().max())
    scale = float(ref.float().abs().max())
    rec = {"cfg": cfg if cfg is not None else [l.config.get("cfg") for l in fn.launches], "default": cfg is None,
           "max_abs_err": err, "correct": bool(err <= tol * (1 + 10 * scale))}
    if rec["correct"]:
        us = time_torch(lambda: fn(**tins), "cuda", reps=30, inner=5)
        rec["us"] = us
        if case.kind == "memory":
            rec["frac_of_floor"] = nbytes / bw * 1e6 / us
        rec["tflops"] = case.flops / us * 1e-6
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "results", f"variants-{datetime.date.today()}.json"))
    ap.add_argument("--only", default=None)
    ap.add_argument("--pipe", action="store_true", help="the k-loop pipeline cases (pipe_cases)")
    ap.add_argument("--tf32", action="store_true",
                    help="contractions built under em.allow_tf32 (checked at TF32's tolerance; eager keeps "
                         "PyTorch's defaults: TF32 convs, float32 matmuls)")
    args = ap.parse_args(argv)
    import torch
    from ember.precision import TF32_TOL
    bw = copy_bandwidth("cuda")
    res = {"suite": "variants", "device": device_name("cuda"), "date": str(datetime.date.today()),
           "versions": versions("cuda"), "copy_bandwidth_GBps": bw / 1e9, "tf32": args.tf32, "cases": []}
    for case, cfgs in (pipe_cases() if args.pipe else cases()):
        if args.only and args.only not in case.name:
            continue
        with em.allow_tf32("conv", "matmul") if args.tf32 else contextlib.nullcontext():
            y, ins, tf = case.build(em, np.random.default_rng(0))
        tins = {k: to_torch(v, "cuda") for k, v in ins.items()}
        flags = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
        ref = tf(**tins)  # the reference in strict float32; eager is timed with PyTorch's defaults
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags
        nbytes = sum(v.nbytes for v in ins.values()) + ref.numel() * ref.element_size()
        rec = {"name": case.name, "eager_us": time_torch(lambda: tf(**tins), "cuda"), "variants": []}
        for cfg in [None] + cfgs:
            v = run_variant(y, cfg, tins, ref, bw, nbytes, case, TF32_TOL if args.tf32 else 1e-4)
            rec["variants"].append(v)
            t = f"{v['us']:9.1f} us  {v.get('frac_of_floor', 0):.2f} floor  {v['tflops']:6.1f} TF  " \
                f"{rec['eager_us'] / v['us']:.2f}x eager" \
                if "us" in v else v.get("error", f"WRONG err {v.get('max_abs_err')}")
            print(f"{case.name:32s} {json.dumps(v['cfg'], sort_keys=True)[:90]:90s} {t}", flush=True)
        res["cases"].append(rec)
        torch.cuda.empty_cache()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
