"""The contraction suite on the GPU: Ember's tensor-core kernels against cuBLAS (torch.matmul on the
same tensors, same process), each case checked against a float32 reference first.

Per case: the default schedule, optional forced schedules (--variants: every wgmma tile / ring depth
the search offers, and the pre-wgmma `mma` mode), cuBLAS; TFLOP/s, % of cuBLAS and relative error.
Timing: CUDA events around 20 calls (graph replays), median of 7, interleaved with cuBLAS.

    python bench/contractions.py --out bench/results/contractions-DATE.json [--variants] [--quick]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])

import ember as em  # noqa: E402
from ember import pipeline  # noqa: E402
from ember.codegen import cuda as cg  # noqa: E402
from ember.codegen.cuda_wgmma_space import wgmma_configs  # noqa: E402

BF = "bfloat16"


def cases(quick: bool):
    """(name, ember graph builder, torch fn, input shapes, dtype). Layout names: nt = x @ W.T (nn.Linear),
    nn = x @ W."""
    out = [
        ("gemm 4096^3 nt", (4096, 4096, 4096), "nt", BF),
        ("gemm 4096^3 nn", (4096, 4096, 4096), "nn", BF),
        ("gemm 8192^3 nt", (8192, 8192, 8192), "nt", BF),
        ("gemm 8192^3 nn", (8192, 8192, 8192), "nn", BF),
        ("gemm 4096^3 f16 nt", (4096, 4096, 4096), "nt", "float16"),
        ("gemm 4096^3 tf32 nt", (4096, 4096, 4096), "nt", "float32"),
        ("gemm 4096^3 tf32 nn", (4096, 4096, 4096), "nn", "float32"),  # (W [K, N]: MN-major for TF32)
        ("ragged 1031x3080x2056 nn", (1031, 3080, 2056), "nn", BF),
        ("short-k 8192x4096x256 nt", (8192, 4096, 256), "nt", BF),
        ("llama1b prefill512 qkv 2048->3072", (512, 3072, 2048), "nt", BF),
        ("llama1b prefill512 o 2048->2048", (512, 2048, 2048), "nt", BF),
        ("llama1b prefill512 up 2048->8192", (512, 8192, 2048), "nt", BF),
        ("llama1b prefill512 down 8192->2048", (512, 2048, 8192), "nt", BF),
        ("bert-base b32x128 qkv 768->2304", (4096, 2304, 768), "nt", BF),
        ("bert-base b32x128 ff1 768->3072", (4096, 3072, 768), "nt", BF),
        ("bert-base b32x128 ff2 3072->768", (4096, 768, 3072), "nt", BF),
        ("bert-base attn scores 384x128x128x64", (128, 128, 64, 384), "bt", BF),
        ("resnet50 b32 conv3x3 64->64 56x56", (32, 64, 56, 56, 64, 3, 1, 1), "conv", BF),
        ("resnet50 b32 conv3x3 128->128 28x28", (32, 128, 28, 28, 128, 3, 1, 1), "conv", BF),
        ("resnet50 b32 conv3x3 256->256 14x14", (32, 256, 14, 14, 256, 3, 1, 1), "conv", BF),
        ("resnet50 b32 conv1x1 256->64 56x56", (32, 256, 56, 56, 64, 1, 1, 0), "conv", BF),
        # short k loops over NCHW graph inputs (their tile time probably the store: gpu-session47-2026-11-29/g/, h/)
        ("resnet50 b32 conv1x1 64->256 56x56", (32, 64, 56, 56, 256, 1, 1, 0), "conv", BF),
        ("resnet50 b32 conv1x1 512->128 28x28", (32, 512, 28, 28, 128, 1, 1, 0), "conv", BF),
        ("resnet50 b32 stem 7x7/2 3->64 224", (32, 3, 224, 224, 64, 7, 2, 3), "conv", BF),
        ("vgg b16 conv3x3 256->256 56x56", (16, 256, 56, 56, 256, 3, 1, 1), "conv", BF),
        ("conv3x3 64->128 56x56 b32 tf32", (32, 64, 56, 56, 128, 3, 1, 1), "conv", "float32"),
        ("gemv 1x2048 @ 2048x8192 nn (x @ W)", (1, 8192, 2048), "nn", BF),
        # matrices past the 50 MB L2 (a decode step's weights are read from HBM)
        ("gemv-hbm 1x2048 @ 65536x2048 nt (Linear)", (1, 65536, 2048), "nt", BF),
        ("gemv-hbm 1x4096 @ 32768x4096 nt (Linear)", (1, 32768, 4096), "nt", BF),
        ("gemv-hbm 1x8192 @ 16384x8192 nt (Linear)", (1, 16384, 8192), "nt", BF),
        ("gemv-hbm 1x2048 @ 2048x65536 nn (x @ W)", (1, 65536, 2048), "nn", BF),
        ("gemv-hbm 1x16384 @ 16384x8192 nn (x @ W)", (1, 8192, 16384), "nn", BF),
        ("gemv 1x2048 @ 8192x2048 nt (Linear)", (1, 8192, 2048), "nt", BF),
        ("gemv 1x8192 @ 8192x2048 nn (x @ W)", (1, 2048, 8192), "nn", BF),
        ("gemv 1x8192 @ 2048x8192 nt (Linear)", (1, 2048, 8192), "nt", BF),
    ]
    return out[:6] if quick else out


def build(shape, layout, dtype):
    import torch
    if layout == "conv":
        Nb, C, H, W, O, k, st, pd = shape
        x, w = em.input("x", (Nb, C, H, W), dtype), em.input("w", (O, C, k, k), dtype)
        y = em.conv2d(x, w, stride=st, padding=pd)
        tdt = getattr(torch, dtype)
        ins = {"x": torch.randn(Nb, C, H, W, device="cuda").to(tdt), "w": (torch.randn(O, C, k, k, device="cuda") / (C * k * k) ** 0.5).to(tdt)}
        OH = (H + 2 * pd - k) // st + 1
        return y, ins, lambda: torch.nn.functional.conv2d(ins["x"], ins["w"], stride=st, padding=pd), 2 * Nb * O * OH * OH * C * k * k
    if layout == "bt":
        M, N, K, B = shape
        q, k = em.input("q", (B, M, K), dtype), em.input("k", (B, N, K), dtype)
        y = q @ k.transpose(1, 2)
        tdt = getattr(torch, dtype)
        ins = {"q": torch.randn(B, M, K, device="cuda").to(tdt), "k": torch.randn(B, N, K, device="cuda").to(tdt)}
        return y, ins, lambda: torch.matmul(ins["q"], ins["k"].transpose(1, 2)), 2 * M * N * K * B
    M, N, K = shape
    layout, *epi = layout.split("+")  # (an epilogue: "nt+bias", "nt+bias+gelu", "nt+res")
    x = em.input("x", (M, K), dtype)
    w = em.input("w", (N, K) if layout == "nt" else (K, N), dtype)
    y = x @ (w.T if layout == "nt" else w)
    tdt = getattr(torch, dtype)
    ins = {"x": torch.randn(M, K, device="cuda").to(tdt), "w": torch.randn(*w.shape, device="cuda").to(tdt)}
    mm = (lambda: torch.matmul(ins["x"], ins["w"].T)) if layout == "nt" else (lambda: torch.matmul(ins["x"], ins["w"]))
    fn = mm
    for e in epi:
        if e == "bias":
            y = y + em.input("b", (N,), dtype)
            ins["b"] = torch.randn(N, device="cuda").to(tdt)
            fn = (lambda f: lambda: f() + ins["b"])(fn)
        elif e == "res":
            y = y + em.input("r", (M, N), dtype)
            ins["r"] = torch.randn(M, N, device="cuda").to(tdt)
            fn = (lambda f: lambda: f() + ins["r"])(fn)
        elif e == "gelu":
            y = em.gelu(y)
            fn = (lambda f: lambda: torch.nn.functional.gelu(f()))(fn)
        else:
            raise ValueError(f"unknown epilogue {e!r} in layout")
    return y, ins, fn, 2 * M * N * K


def program(y, cfg):
    target = pipeline.get_target("cuda")
    lowered = pipeline.lower([y.node], None, target)
    cfgs = []
    for k, _ in lowered.kernels:
        c = cg.canonical(k)
        d = cg.default_config(k, target)
        if cfg is not None and cg.contraction_of(c) is not None:
            if cfg == "mma":  # the pre-wgmma default: the tile model of the mma mode
                from ember.codegen.cuda_schedule import _default_mma_tile, _mma_pipeline
                from ember.kernel.structure import _size
                g = cg.contraction_of(c)
                M, N, K, B = (_size(x) for x in (g.m, g.n, g.k, g.batch))
                d = _mma_pipeline(g, _default_mma_tile(M, N, K, B, target))
            elif cfg.get("mode") == "wgmma" and isinstance(cg.wgmma_applicable(c), str):
                return None
            else:
                d = dict(cfg)
        cfgs.append(d)
    return pipeline.build_program(lowered, target, None, "single", configs=cfgs), cfgs


def timed(fn, reps=7, inner=20):
    import torch
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(reps):
        s.record()
        for _ in range(inner):
            fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1000 / inner)
    return statistics.median(out)


def graph_timed(fn, reps=7, inner=20):
    """Device time per call of a torch function replayed as a CUDA graph (no host launch cost)."""
    import torch
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        fn()
    torch.cuda.current_stream().wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return timed(g.replay, reps, inner)


DEVICE_TIME = False  # --device-time: Ember as its own graph replay (prog.benchmark), cuBLAS as a torch graph


def run_case(name, shape, layout, dtype, variants: bool, knobs: bool = False) -> dict:
    import torch
    ctx = em.allow_tf32() if dtype == "float32" else _null()
    with ctx:
        y, ins, ref_fn, flops = build(shape, layout, dtype)
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = dtype == "float32"
        ref = ref_fn().float()
        exact = None
        row = {"case": name, "shape": list(shape), "layout": layout, "dtype": dtype, "variants": []}
        todo = [("default", None)]
        if variants:
            target = pipeline.get_target("cuda")
            kern = [k for k, _ in pipeline.lower([y.node], None, target).kernels if cg.contraction_of(cg.canonical(k))]
            todo += [(json.dumps({k: v for k, v in c.items() if k != "mode"}, sort_keys=True), c)
                     for c in wgmma_configs(cg.canonical(kern[0]), "full", target)]
            todo.append(("mma (before)", "mma"))
        elif knobs:  # the default with each of its knobs flipped, and the fast space's tiles persistent
            target = pipeline.get_target("cuda")
            kern = [k for k, _ in pipeline.lower([y.node], None, target).kernels if cg.contraction_of(cg.canonical(k))]
            d = cg.default_config(kern[0], target)
            if d.get("mode") == "wgmma":
                flips = [dict(d, persistent=True), dict(d, group=0 if d.get("group") else 8),
                         dict(d, group=0 if d.get("group") else 8, persistent=True)]
                flips += [dict(c, persistent=True) for c in wgmma_configs(cg.canonical(kern[0]), "fast", target)
                          if "group" not in c and "persistent" not in c and "occupancy" not in c]
                flips += [c for c in wgmma_configs(cg.canonical(kern[0]), "fast", target) if c.get("occupancy") == 2]
                flips += [dict(c, persistent=True) for c in flips if c.get("occupancy") == 2][:2]
                todo += [(json.dumps({k: v for k, v in c.items() if k != "mode"}, sort_keys=True), c) for c in flips]
            elif not isinstance(cg.wgmma_applicable(cg.canonical(kern[0])), str):  # gathered operands (convs)
                flips = wgmma_configs(cg.canonical(kern[0]), "fast", target)
                todo += [(json.dumps({k: v for k, v in c.items() if k != "mode"}, sort_keys=True), c) for c in flips]
            else:  # a GEMV: the row mappings
                flips = [{"mode": "cols", "threads": t} for t in (128, 256, 512, 1024)]
                flips += [{"mode": "cols", "threads": t, "cvec": v} for t in (128, 256, 512) for v in (2, 4, 8)]
                flips += [{"mode": m, "threads": 256, "vec": 8} for m in ("block", "warp")]
                todo += [(json.dumps(c, sort_keys=True), c) for c in flips if c != d]
        for label, cfg in todo:
            t0 = time.time()
            try:
                built = program(y, cfg)
                if built is None:
                    continue
                prog, cfgs = built
                fn = lambda: prog(**ins)  # noqa: E731
                out = fn().float()
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported, not fatal
                row["variants"].append({"label": label, "error": f"{type(e).__name__}: {str(e)[:300]}"})
                print(f"  {name} {label}: FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            if exact is None:  # float32 reference of the same inputs (TF32 off)
                torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
                a, b = list(ins.values())
                if layout == "conv":
                    exact = torch.nn.functional.conv2d(a.float(), b.float(), stride=shape[6], padding=shape[7])
                elif layout == "bt":
                    exact = torch.matmul(a.float(), b.float().transpose(1, 2))
                elif layout == "nt":
                    exact = a.float() @ b.float().T
                else:
                    exact = a.float() @ b.float()
                scale = exact.abs().max().item()
                row["cublas_err"] = (ref - exact).abs().max().item() / scale
                torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = dtype == "float32"
            err = (out - exact).abs().max().item() / scale
            if DEVICE_TIME:
                us = prog.benchmark(reps=7, **ins)
                cub = graph_timed(ref_fn)
            else:
                us = timed(fn)
                cub = timed(ref_fn)
            nbytes = sum(t.numel() * t.element_size() for t in ins.values()) + out.numel() * ref.element_size()
            v = {"label": label, "configs": cfgs, "us": us, "tflops": flops / us / 1e6, "cublas_us": cub,
                 "gbs": nbytes / us / 1e3, "cublas_gbs": nbytes / cub / 1e3,
                 "cublas_tflops": flops / cub / 1e6, "pct_cublas": 100 * cub / us, "err": err,
                 "ok": err <= max(4 * row["cublas_err"], 2e-2), "build_s": time.time() - t0}
            row["variants"].append(v)
            rate = f"{v['gbs']:7.0f} GB/s  cuBLAS {v['cublas_gbs']:7.0f}" if shape[0] == 1 and layout != "conv" else \
                f"{v['tflops']:7.1f} TF/s  cuBLAS {v['cublas_tflops']:7.1f}"
            print(f"  {name:38s} {label[:60]:60s} {rate}  "
                  f"{v['pct_cublas']:5.1f}%  err {err:.2e} {'ok' if v['ok'] else 'WRONG'}", flush=True)
        torch.backends.cuda.matmul.allow_tf32 = old
    return row


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--variants", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--knobs", action="store_true", help="the default with its knobs flipped, per case")
    ap.add_argument("--only", default=None, help="comma-separated substrings of the case names to run")
    ap.add_argument("--device-time", action="store_true", help="time graph replays (no per-call host cost)")
    args = ap.parse_args()
    global DEVICE_TIME
    DEVICE_TIME = args.device_time
    import torch

    import cuda.core
    rows = []
    for name, shape, layout, dtype in cases(args.quick):
        if args.only and not any(o in name for o in args.only.split(",")):
            continue
        rows.append(run_case(name, shape, layout, dtype, args.variants, args.knobs))
    doc = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "torch": torch.__version__, "cuda.core": cuda.core.__version__, "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
