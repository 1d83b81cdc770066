"""Float32 contractions at float32 accuracy on the H100: the `mma` mode's 3xTF32 (mma.sync) against
the `wgmma` mode's tf32x3 (codegen/cuda_wgmma.py: TMA or gathered hi/lo tiles, three wgmmas per k
step), cuBLAS float32 (TF32 off) and cuBLAS TF32 for scale, in one process. Layouts: nt = x @ W.T
(nn.Linear forward), nn = x @ W (its input gradient), tn = x.T @ g (its weight gradient: both
operands MN-major, the shapes issue 20's training step spends its time in). Error: max |out - exact|
over max |exact|, exact computed in float64.

    python bench/f32_contractions.py [--variants] [--only SUBSTR,...] [--out F.json] [--overlays '[{"BM": 128, ...}]']
"""
from __future__ import annotations

import argparse
import json
import sys
import time

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import ember as em  # noqa: E402
from ember import pipeline  # noqa: E402
from ember.codegen import cuda as cg  # noqa: E402
from ember.codegen.cuda_wgmma_space import wgmma_configs  # noqa: E402

CASES = [  # (name, M, N, K, layout)
    ("f32 4096^3 nt", 4096, 4096, 4096, "nt"),
    ("f32 4096^3 nn", 4096, 4096, 4096, "nn"),
    ("f32 4096^3 tn", 4096, 4096, 4096, "tn"),
    ("gpt6x512 fwd up 8192x1376x512 nt", 8192, 1376, 512, "nt"),
    ("gpt6x512 fwd qkv 8192x1536x512 nt", 8192, 1536, 512, "nt"),
    ("gpt6x512 dX 8192x512x1376 nn", 8192, 512, 1376, "nn"),
    ("gpt6x512 dW 1376x512x8192 tn", 1376, 512, 8192, "tn"),
    ("gpt6x512 dW 512x512x8192 tn", 512, 512, 8192, "tn"),
    ("ragged 1031x3079x2053 nn", 1031, 3079, 2053, "nn"),
    # KernelBench's VanillaRNN / ShallowWideMLP layers: inputs in [0, 1), nn.Linear's uniform weights
    ("kb rnn i2h 256x16384x32768 ntu", 256, 16384, 32768, "ntu"),
    ("kb rnn h2o 256x8192x16384 ntu", 256, 8192, 16384, "ntu"),
    ("long k 256x256x65536 ntu", 256, 256, 65536, "ntu"),
]


def build(M, N, K, layout):
    import torch
    if layout in ("nt", "ntu"):
        x, w = em.input("x", (M, K)), em.input("w", (N, K))
        y = x @ w.T
        ins = {"x": torch.randn(M, K, device="cuda"), "w": torch.randn(N, K, device="cuda")}
        if layout == "ntu":
            ins = {"x": torch.rand(M, K, device="cuda"), "w": (torch.rand(N, K, device="cuda") * 2 - 1) / K ** 0.5}
        return y, ins, lambda a, b: a @ b.T
    if layout == "nn":
        x, w = em.input("x", (M, K)), em.input("w", (K, N))
        ins = {"x": torch.randn(M, K, device="cuda"), "w": torch.randn(K, N, device="cuda")}
        return x @ w, ins, lambda a, b: a @ b
    x, w = em.input("x", (K, M)), em.input("w", (K, N))
    ins = {"x": torch.randn(K, M, device="cuda"), "w": torch.randn(K, N, device="cuda")}
    return x.T @ w, ins, lambda a, b: a.T @ b


PROMOTE = False  # --promote: the accumulator fold's variants
OVERLAYS: list = []  # --overlays: wgmma configs timed after the default
LONG_CHUNKS = None  # --long-chunks: the split-K policy's chunks for long k loops (kernel/split.py)


def _target():
    import dataclasses
    t = pipeline.get_target("cuda")
    return t if LONG_CHUNKS is None else t.replace(split=dataclasses.replace(t.split, long_chunks=LONG_CHUNKS))


def program(y, cfg):
    """The program with every contraction kernel under `cfg` ("default", "mma", or a wgmma config);
    None where the config does not apply."""
    target = _target()
    lowered = pipeline.lower([y.node], None, target)
    cfgs = []
    for k, _ in lowered.kernels:
        c = cg.canonical(k)
        d = cg.default_config(k, target)
        if cg.contraction_of(c) is not None and cfg != "default":
            if cfg == "mma":
                from ember.codegen.cuda_schedule import _default_mma_tile, _mma_pipeline
                from ember.kernel.structure import _size
                g = cg.contraction_of(c)
                d = _mma_pipeline(g, _default_mma_tile(*(_size(x) for x in (g.m, g.n, g.k, g.batch)), target))
            elif cfg == "wgmma":
                from ember.codegen.cuda_wgmma_default import default_wgmma_config
                if isinstance(cg.wgmma_applicable(c), str):
                    return None
                d = default_wgmma_config(c, target)
            else:
                if isinstance(cg.wgmma_applicable(c), str):
                    return None
                d = dict(cfg)
        cfgs.append(d)
    return pipeline.build_program(lowered, target, None, "single", configs=cfgs), cfgs


def run(name, M, N, K, layout, variants: bool) -> dict:
    import torch

    from contractions import graph_timed
    y, ins, tfn = build(M, N, K, layout)
    a, b = ins["x"], ins["w"]
    exact = tfn(a.double(), b.double())
    scale = exact.abs().max().item()
    flops = 2 * M * N * K
    row = {"case": name, "shape": [M, N, K], "layout": layout, "variants": []}
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        us = graph_timed(lambda: tfn(a, b))
        err = (tfn(a, b).double() - exact).abs().max().item() / scale
        row["cublas_tf32" if tf32 else "cublas_f32"] = {"us": us, "tflops": flops / us / 1e6, "err": err}
    torch.backends.cuda.matmul.allow_tf32 = False
    cub = row["cublas_f32"]["us"]
    print(f"{name}: cuBLAS f32 {row['cublas_f32']['tflops']:.1f} TF/s (err {row['cublas_f32']['err']:.1e}), "
          f"TF32 {row['cublas_tf32']['tflops']:.1f} (err {row['cublas_tf32']['err']:.1e})", flush=True)
    todo = ["mma", "default", "wgmma"] + [dict(o, mode="wgmma") for o in OVERLAYS]
    mma_err = None
    if PROMOTE:  # the accumulator's folds (codegen/cuda_wgmma.py PROMOTE_SLICES), and none on the widest tile
        from ember.codegen.cuda_wgmma_default import default_wgmma_config
        target = _target()
        ks = [k for k, _ in pipeline.lower([y.node], None, target).kernels if cg.contraction_of(cg.canonical(k))]
        d = default_wgmma_config(cg.canonical(ks[0]), target)
        todo += [dict(d, promote=p) for p in (0, 2, 4, 8, 16)]
        todo += [{"mode": "wgmma", "BM": 128, "BN": 256, "stages": 2, "promote": 0, "overlap": False}]
    if variants:
        target = _target()
        ks = [k for k, _ in pipeline.lower([y.node], None, target).kernels if cg.contraction_of(cg.canonical(k))]
        todo += wgmma_configs(cg.canonical(ks[0]), "full", target)[:40]
    for cfg in todo:
        label = cfg if isinstance(cfg, str) else json.dumps({k: v for k, v in cfg.items() if k != "mode"}, sort_keys=True)
        t0 = time.time()
        try:
            built = program(y, cfg)
            if built is None:
                continue
            prog, cfgs = built
            prog.executor.poison = True
            out = prog(**ins)
            torch.cuda.synchronize()
            err = (out.double() - exact).abs().max().item() / scale
            us = prog.benchmark(reps=7, **ins)
        except Exception as e:  # noqa: BLE001 - a variant that fails is reported, not fatal
            row["variants"].append({"label": label, "error": f"{type(e).__name__}: {str(e)[:400]}"})
            print(f"  {label:60s} FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        modes = sorted({c.get("mode") for c in cfgs})
        if cfg == "mma":
            mma_err = err
        # float32 accuracy: within twice the mma mode's 3xTF32 error (one TF32 pass is ~10x worse)
        v = {"label": label, "configs": cfgs, "us": us, "tflops": flops / us / 1e6, "vs_cublas_f32": cub / us,
             "err": err, "ok": mma_err is not None and err <= 2 * mma_err + 1e-7, "build_s": time.time() - t0}
        row["variants"].append(v)
        print(f"  {label[:60]:60s} {'/'.join(modes):14s} {v['tflops']:7.1f} TF/s  {v['vs_cublas_f32']:5.2f}x cuBLAS f32  "
              f"err {err:.1e} {'ok' if v['ok'] else 'WRONG'}", flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--variants", action="store_true")
    ap.add_argument("--only", default=None)
    ap.add_argument("--long-chunks", type=int, default=None)
    ap.add_argument("--promote", action="store_true")
    ap.add_argument("--overlays", default=None, help="JSON list of whole wgmma configs (without mode) also timed")
    args = ap.parse_args()
    global LONG_CHUNKS, PROMOTE
    PROMOTE = args.promote
    OVERLAYS[:] = json.loads(args.overlays) if args.overlays else []
    LONG_CHUNKS = args.long_chunks
    import torch

    import cuda.core
    rows = []
    for name, M, N, K, layout in CASES:
        if args.only and not any(o in name for o in args.only.split(",")):
            continue
        rows.append(run(name, M, N, K, layout, args.variants))
        if args.out:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "cuda.core": cuda.core.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S"),
                       "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
