"""Schedule spaces: the knobs each kernel can be rendered with, per device.

CUDA knobs (see codegen/cuda.py): the mapping mode (elementwise / thread / warp / block / cols / gemm / mma / wgmma),
threads per block, vector width, whether a row is cached (registers or shared memory), how many blocks
of a cluster share a cached row, the unrolling of a shared-memory row's loops, and for
contractions the tile shape (BM x BN block tile, BK depth, TM x TN register tile) and, for tensor-core
tiles, how the tile loads split k and rows into loop variables (a shared-memory table / packed
registers, or divisions) and the k loop's pipeline (unconditional prefetch, one or two shared-memory
stages, which k variable runs fastest). Illegal or
pointless combinations are filtered by rendering: configs that render to the same source are one
candidate. The CPU renderer has no knobs yet; its search is over structure only.
"""
from __future__ import annotations

from ..codegen import cuda as cg
from ..codegen.cuda_transpose import transpose_form
from ..codegen.cuda_wgmma_space import wgmma_configs
from ..kernel import ir

GEMM_TILES = [  # (BM, BN, BK, TM, TN): threads = (BM/TM)*(BN/TN)
    (64, 64, 16, 4, 4), (128, 128, 8, 8, 8), (128, 64, 16, 8, 4), (64, 128, 16, 4, 8),
    (128, 128, 16, 8, 8), (64, 64, 8, 4, 4), (32, 64, 16, 2, 4), (64, 32, 16, 4, 2),
    (32, 32, 16, 2, 2), (16, 64, 16, 1, 4), (64, 16, 16, 4, 1), (128, 32, 16, 8, 2), (32, 128, 16, 2, 8),
]


MMA_TILES = [  # (BM, BN, BK, WM, WN): threads = 32*WM*WN; warp tiles of 32x32 .. 64x64
    (64, 64, 16, 2, 2), (128, 128, 16, 2, 2), (128, 256, 16, 2, 4), (128, 64, 16, 2, 2),
    (64, 128, 16, 2, 2), (128, 128, 16, 2, 4), (256, 128, 16, 4, 2),
    (64, 256, 16, 1, 4),  # one warp row of 64x64 warp tiles (the default for light 64-channel convs)
    # 2-warp tiles: twice the blocks of 64x64 where a small product leaves SMs idle (a 256-token
    # decoder block's GEMMs: 6-7% faster over the block, bench/results/split-k-2026-11-22f.json)
    (32, 64, 16, 1, 2), (64, 32, 16, 2, 1),
    (64, 64, 32, 2, 2), (128, 64, 32, 4, 1), (256, 64, 16, 4, 1), (32, 128, 16, 1, 4),
]
MMA_FAST = 10  # the first tiles, tried by search="fast"
# rows shared by a cluster of blocks (distributed shared memory), for rows cached whole
CLUSTER_ROWS = [(512, "smem", 2), (256, "smem", 4), (256, "regs", 8)]
CLUSTER_ROWS_FULL = CLUSTER_ROWS + [(1024, "smem", 2), (128, "smem", 8), (512, "regs", 4), (256, "regs", 2)]


def mma_cfg(t) -> dict:
    return dict(zip(("BM", "BN", "BK", "WM", "WN"), t), mode="mma")


def gemm_cfg(t) -> dict:
    return dict(zip(("BM", "BN", "BK", "TM", "TN"), t), mode="gemm")


def cuda_space(k: ir.Kernel, level: str = "fast", target=None) -> list:
    from ..kernel.structure import has_locals
    if has_locals(k):
        from ..codegen.cuda_schedule import flash_config
        first = flash_config(k, target)
        if first is not None and first["mode"] == "decode":  # flash-decoding (codegen/cuda_flash_decode.py)
            from ..codegen.cuda_flash_decode import decode_smem, smem_limit
            from ..kernel.online import online_form
            f = online_form(k)
            D, DV = f.depth.value, f.out_extent.value
            # (the default's products and combine carried over: keys-major, a cluster's combine gathered)
            keep = {x: first[x] for x in ("kt", "gather") if x in first}
            return [first] + [dict({"mode": "decode", "warps": w, "BN": bn, "stages": st, "cluster": c}, **keep)
                              for w in (2, 4, 8) for bn in (16, 32, 64) for st in (2, 3, 4) for c in (1, 4, 8)
                              if decode_smem(w, bn, D, DV, st) <= smem_limit(target)] + \
                [dict(first, gather=g) for g in (0, 1) if "gather" in first and g != first["gather"]] + \
                [dict(first, pipe=1, stages=st) for st in (3, 4) if first.get("kt")  # (codegen/cuda_flash_decode.py)
                 and decode_smem(first["warps"], first["BN"], D, DV, st) <= smem_limit(target)] + \
                [{"mode": "decode", "warps": 4, "BN": bn, "stages": st, "cluster": c, "splits": p}  # keys over P clusters
                 for bn in (16, 32) for st in (2, 4) for c, p in ((8, 2), (4, 4), (2, 8), (1, 16))
                 if decode_smem(4, bn, D, DV, st) <= smem_limit(target)] + \
                [dict(first, kt=kt, affine=af) for kt in (0, 1, 2) for af in (0, 1)  # (codegen/cuda_flash_kt.py)
                 if (kt, af) != (first.get("kt", 0), first.get("affine", 0))]
        if first is not None and first["mode"] == "scores":  # scores recomputed (codegen/cuda_scores.py)
            return [first] + [dict(first, warps=w, BN=bn) for w in (2, 4, 8) for bn in (32, 64)]  # (afrag kept)
        if first is not None:  # a streamed kernel (kernel/online.py): its tile knobs
            return [first] + [{"mode": "flash", "warps": w, "BN": bn} for w in (4, 8) for bn in (32, 64, 128)]
        return [{"mode": "rowlocal", "threads": t} for t in (128, 256, 512)]
    c = cg.canonical(k)
    out = [cg.default_config(k, target)]
    if not c.stages:
        for t in (128, 256, 512):
            for v in (8, 4, 2, 1):
                out.append({"mode": "elementwise", "threads": t, "vec": v})
        # several vectors a thread in flight (codegen/cuda_elementwise.py)
        out += [{"mode": "elementwise", "threads": 256, "vec": 8, "unroll": u} for u in (2, 4)]
        if transpose_form(c) is not None:  # a transposing copy: tiles through shared memory
            out.append({"mode": "transpose", "threads": 256})
        return out
    if cg.contraction_of(c) is not None:
        tiles = GEMM_TILES if level == "full" else GEMM_TILES[:9]
        out += [gemm_cfg(t) for t in tiles]
        if cg.has_wgmma(target):  # Hopper: TMA + wgmma tiles and ring depths (codegen/cuda_wgmma.py)
            out += wgmma_configs(c, level, target)
        if cg.mma_applicable(c):
            out += [mma_cfg(t) for t in (MMA_TILES if level == "full" else MMA_TILES[:MMA_FAST])]
            d = cg.default_config(k, target)
            if d.get("mode") == "mma":  # the implicit-GEMM index splits: table / packed rows or divisions
                out += [dict(d, ktab=a, packrows=b) for a in (False, True) for b in (False, True)]
                # the k loop's pipeline: prefetch, shared-memory stages, which k variable runs fastest
                out += [dict(d, pf=p, stages=st) for p in (False, True) for st in (1, 2)]
                out.append(dict(d, flatk=not d.get("flatk", True)))  # operands walking k contiguously
                out += [dict(d, b_kfast=f) for f in (False, True)]  # the input tile's walk (one is the default)
                if level == "full":
                    out += [dict(d, kslice=True, stages=st) for st in (1, 2)]
    from ..kernel.scan import scan_form, short_sum_form
    if scan_form(c) is not None or short_sum_form(c) is not None:  # warps of scans / short sums (codegen/cuda_scan.py)
        out += [{"mode": "scan", "threads": t, "unroll": u} for t in (128, 256, 512) for u in (4, 8)]
        out += [{"mode": "scan", "threads": 256, "unroll": 8, "gridcap": g} for g in (8, 32)]  # (grid-stride: fewer blocks)
        out += [{"mode": "scan", "threads": 256, "unroll": u, "pvec": 4} for u in (2, 4)]  # 4 positions a lane
    threads = (64, 128, 256, 512, 1024) if level == "full" else (128, 256, 512, 1024)
    for mode in ("warp", "block", "thread"):
        for t in threads:
            if mode == "thread" and t > 256:
                continue
            caches = [False] if mode == "thread" else [False, "regs", "smem"]
            for cache in caches:
                out.append({"mode": mode, "threads": t, "vec": 8, "cache": cache})
    # a thread's short fixed reduction unrolled, its loads in flight together (a pooling window: KernelBench
    # 42's 27 taps ran rolled; codegen/cuda_rows.py knob `unroll`)
    out += [{"mode": "thread", "threads": t, "vec": 8, "cache": False, "unroll": 32} for t in (128, 256)]
    # V neighbouring outputs a thread, their shared window loads issued once (codegen/cuda_strip.py knob `strip`)
    from ..codegen.cuda_strip import strip_plan
    plans = {v: strip_plan(k, c, v) for v in (2, 4, 8)}
    out += [{"mode": "thread", "threads": t, "vec": 1, "strip": v} for v, p in plans.items() if p for t in (128, 256)]
    # ... along the loop with the fewest loads where that is another (a remainder strip; knob `sfewest`)
    out += [{"mode": "thread", "threads": 128, "vec": 1, "strip": v, "sfewest": True} for v, p in plans.items()
            if p and strip_plan(k, c, v, fewest=True) != p]
    # fewer blocks, each thread looping over several outputs (codegen/cuda_thread_window.py knob `gridcap`)
    out += [{"mode": "thread", "threads": 128, "vec": 1, "gridcap": g} for g in (16, 64)]
    # the default thread window with its lanes along the loads' contiguous axis (cuda_walks.loads_walk: a window
    # storing channels-last from NCHW) and, where padded, its taps unguarded where none can fail (knob `interior`)
    from ..kernel.interior import interior_form
    d = cg.default_config(k, target)
    padded = interior_form(c) is not None
    if d.get("mode") == "thread" and not d.get("cache"):
        out += [dict(d, walk="loads")] + ([dict(d, interior=True)] if padded else [])
    if padded:
        out += [{"mode": "thread", "threads": 128, "vec": 1, "interior": True, **({"strip": v} if v else {})}
                for v in (0, 4) if not v or strip_plan(k, c, v)]
    for t, cache, cluster in (CLUSTER_ROWS_FULL if level == "full" else CLUSTER_ROWS):
        out.append({"mode": "block", "threads": t, "vec": 8, "cache": cache, "cluster": cluster})
    if level == "full":
        out += [{"mode": "block", "threads": t, "vec": 8, "cache": "smem", "unroll": u} for t in (512, 1024) for u in (8, 16)]
    out += [{"mode": "cols", "threads": t} for t in ((128, 256, 512, 1024) if cg.columns_contiguous(k, c) else (256,))]
    if cg.columns_contiguous(k, c):  # several consecutive outputs per lane, where they are vectors
        from ..codegen.cuda_schedule import cols_vec_ok
        out += [{"mode": "cols", "threads": t, "cvec": v} for v in (2, 4, 8) if cols_vec_ok(k, c, v) is None
                for t in (256, 512)]
        # each warp its own outputs and the whole reduction (short windows: cuda_rows.py knob `own`)
        out += [{"mode": "cols", "threads": 128, "cvec": v, "own": True} for v in (4, 8) if cols_vec_ok(k, c, v) is None]
        # neighbouring points a lane too (a channels-last depthwise conv's pixels), shared loads once (cuda_strip.py)
        out += [{"mode": "cols", "threads": 128, "cvec": v, "own": True, "pstrip": p} for v in (4, 8)
                if cols_vec_ok(k, c, v) is None for p in (2, 4) if strip_plan(k, c, p, exclude=c.outer[-1][0])]
    return out


def mutate_gemm(cfg: dict, rng) -> dict | None:
    """A neighbour of a gemm tile config: halve or double one tile dimension (kept legal)."""
    c = dict(cfg)
    key = rng.choice(["BM", "BN", "BK", "TM", "TN"])
    c[key] = c[key] * 2 if rng.random() < 0.5 else c[key] // 2
    if c["TM"] < 1 or c["TN"] < 1 or c["BK"] < 4 or c["BM"] % c["TM"] or c["BN"] % c["TN"]:
        return None
    threads = (c["BM"] // c["TM"]) * (c["BN"] // c["TN"])
    smem = 4 * c["BK"] * (c["BM"] + c["BN"] + 8)
    if not 32 <= threads <= 1024 or c["TM"] * c["TN"] > 64 or smem > 48 * 1024 or c["BM"] > 256 or c["BN"] > 256:
        return None
    return c
