"""The unsearched wgmma tile (`default_wgmma_config`) and the shared-memory fit every tile is checked by.

Split from codegen/cuda_wgmma.py (the renderer); the search's space (codegen/cuda_wgmma_space.py) and the
schedule's defaults (codegen/cuda_schedule.py) take their tiles from here."""
from __future__ import annotations

import os

from ..kernel import ir
from ..kernel.structure import Canon, _size
from .cuda_tma import TmaOperand
from .cuda_wgmma import (_copies, _smem_bytes, _staged_rows, im2col_default, promote_slices, slice_elems, wgmma_applicable,
                         wgmma_contraction)
from .cuda_wgmma_epilogue import SOWN_SLACK, epilogue_loads, half_stageable, own_epilogue_bytes, plain_cast, row_loads
from .cuda_wgmma_feed import GatherOperand, wgmma_plan
from .cuda_wgmma_im2col import Im2colOperand, im2col_operand
from .cuda_wgmma_kcluster import KCLUSTER_MIN_SLICES, kcluster_default_on, ring_holds_tile
from .cuda_wgmma_rs import rs_applies
from .cuda_wgmma_staged import staged_bytes


def _ring_staged(plan, rs: bool = False) -> bool:
    """The default of knob `staged`: tf32x3 with both operands copied and one of them MN-major (the only
    way for TF32 over an MN-major copy: tf32_staged)."""
    kind, pa, pb = plan
    return not rs and kind in ("tf32x3", "tf32") and isinstance(pa, TmaOperand) and isinstance(pb, TmaOperand) and not (pa.kmajor and pb.kmajor)


def _fit(plan, BM: int, BN: int, stages: int, smem_max: int, rs: bool = False) -> bool:
    kind, pa, pb = plan
    if not all(_rows_tile(p, R) for p, R in ((pa, BM), (pb, BN))):
        return False
    if _ring_staged(plan, rs):  # (with a staging ring of 2 slots at least)
        return staged_bytes(BM + BN, stages, 2, _copies(kind)) <= smem_max
    return _smem_bytes(BM, BN, stages, _copies(kind), _staged_rows(kind, None if rs else pa, pb, BM, BN), rs) <= smem_max


def _rows_tile(p, R: int) -> bool:
    """Whether an R-row tile of operand p is whole runs of its rows or inside one (rows as two
    runs: codegen/cuda_tma.py)."""
    r = getattr(p, "r_inner", 0)
    return not r or r % R == 0 or R % r == 0


SYMBOLIC_M_GUESS = 512  # rows a symbolic M (a prompt) is planned for when choosing the tile


# An epilogue with this many exp2 / log2 / recip / sqrt / sin per output runs long after the k loop,
# with one block per SM and its loads idle: KernelBench's 14 (a TF32 3x3 conv 64 -> 64 then mish
# twice: 8) took 1333 us in the 64 x 256 tile against 707 without the mish. Measured on the H100
# over the whole space (bench/results/gpu-session36-2026-11-28/d/): tiles at most 128 wide and
# persistent (the producer fills the ring with the next tile while the consumers run the
# epilogue), as many stages as fit: 64 x 128 850 us, and 1762 -> 1073 us for 64 -> 128 channels
# (128 x 128); two blocks per SM did as well at 64 rows (796) and worse at 128 (1448)
HEAVY_EPILOGUE_TRANSCENDENTALS = 6


def transcendental_ops(c: Canon) -> int:
    """The multi-function-unit operations (exp2, log2, recip, sqrt, sin) per output of a contraction's epilogue."""
    return sum(1 for v in ir.val_toposort([c.store.value]) if v.op in ("exp2", "log2", "recip", "sqrt", "sin"))


# A k loop of at most this many slices a tile, over more tiles than SMs, runs persistent by default
# (EMBER_WGMMA_SHORT_K_PERSISTENT=0: off). H200, bench/short_k_ab.py (gpu-session47-2026-11-29/g/, h/): bf16
# 1x1 convs over NCHW 256 -> 64 37.9 -> 27.2 us, 64 -> 256 78.9 -> 55.0; x @ W.T 8192 x 4096 x 256 85.4 -> 78.0:
# each block's ring runs into its next tile while its consumers store this one's outputs (the store, not the
# four k slices, is probably most of a tile's time; not profiled). Only where the epilogue loads nothing: knob `swide`'s staged walk
# (the default wherever it loads) needs the ring free after the k loop, not persistent.
SHORT_K_SLICES = 4
SHORT_K_PERSISTENT = os.environ.get("EMBER_WGMMA_SHORT_K_PERSISTENT", "1") == "1"


def k_slices(g, kind: str) -> int:
    """The contraction's k loop in slices of `kind`'s ring slot."""
    return -(-_size(g.k).value // slice_elems(kind))


def default_stages(BM: int, BN: int) -> int:
    """The default tile's ring depth: 128 x 256 at 3 (4 lost 3-18%), 128 x 192 at 5, the rest at 4."""
    return {(128, 256): 3, (128, 192): 5}.get((BM, BN), 4)


def short_k_persistent(c: Canon, g, plan, tiles: int, sms: int, cfg: dict) -> bool:
    """Whether the default tile runs persistent for its short k loop (SHORT_K_SLICES): both operands copied
    by TMA (not gathered, not an im2col walk), 16-bit, more tiles than SMs, an epilogue that loads nothing."""
    if not SHORT_K_PERSISTENT or isinstance(plan, str) or cfg.get("persistent") or tiles <= sms:
        return False
    kind, pa, pb = plan
    if kind not in ("bf16", "f16") or any(not isinstance(p, TmaOperand) or isinstance(p, Im2colOperand) for p in (pa, pb)):
        return False
    return k_slices(g, kind) <= SHORT_K_SLICES and not epilogue_loads(c)


# Knob `shalf` (with `sown`, persistent) by default where the store is a 16-bit output contiguous along runs of 8
# columns and the tiles fill half a wave: each tile's outputs rounded in the registers, staged in a buffer of their
# own past the ring and copied 16 bytes a lane while the producer fills the ring with the next tile. H200,
# bench/short_k_ab.py --envs (gpu-session48-2026-11-29/b/): x @ W.T 8192 x 4096 x 256 79.0 -> 39.9 us (cuBLAS 36.3),
# BERT-base qkv 47.3 -> 35.2, ff1 52.0 -> 36.6, attention scores 19.2 -> 11.9, a Llama-1B prefill's up projection
# 36.7 -> 31.2 and o 16.7 -> 15.3, ResNet-50's 1x1 convs over NCHW 64 -> 256 55.7 -> 24.1 and 256 -> 64 27.0 -> 22.5;
# at 0.73 and 0.48 of a wave (the prefill's qkv, o as 128 x 128) 17.9 -> 17.4, 17.0 -> 16.5. An epilogue computed in
# the registers first measured mixed: BERT's ff1 + bias + GELU 56.6 -> 66.8 us (swide's walk computes it faster), + bias
# 40.2 -> 39.7, 8192 x 4096 x 256 + residual 121.8 -> 105.0, the prefill's o + residual 15.9 -> 16.8. So
# EMBER_WGMMA_SHALF: "cast" (the default) a plain cast of the accumulator only; "columns" also an epilogue that loads
# per column only (a bias); "all" a residual's rows too; "0" off. The search offers the computed form everywhere.
SHALF_MODES = ("0", "cast", "columns", "all")
# EMBER_WGMMA_SHALF_MAX_SLICES caps the k loop it is the default over (0: no cap, the default). Uncapped since timed at
# the large GEMMs on an H200 (gpu-session49-2026-11-29/a/): 4096^3 203.0 -> 188.6 us (cuBLAS 172.9), 8192^3 1753 -> 1704
# (cuBLAS 1598), both layouts.
SHALF_MAX_SLICES = 0


def shalf_max_slices() -> int:
    raw = os.environ.get("EMBER_WGMMA_SHALF_MAX_SLICES", str(SHALF_MAX_SLICES))
    if not raw.isdigit():
        raise ValueError(f"EMBER_WGMMA_SHALF_MAX_SLICES={raw!r}: a count of k slices (0: no cap)")
    return int(raw)


def shalf_mode() -> str:
    mode = os.environ.get("EMBER_WGMMA_SHALF", "cast")
    if mode not in SHALF_MODES:
        raise ValueError(f"EMBER_WGMMA_SHALF={mode!r}: use one of {', '.join(SHALF_MODES)}")
    return mode


def half_staged_default(c: Canon, g, plan, tiles: int, sms: int, cfg: dict, smem_max: int) -> dict | None:
    """The default config made persistent with knob `shalf`'s staged 16-bit outputs (as many stages as fit beside
    the buffer), or None: 16-bit operands both copied by TMA (not an im2col walk: unmeasured), at least half a
    wave of tiles, a k loop of at most shalf_max_slices(), no heavy epilogue, the store half-stageable, and its loads as
    shalf_mode() allows."""
    mode = shalf_mode()
    if mode == "0" or isinstance(plan, str) or cfg.get("rs") or tiles * 2 < sms:
        return None
    kind, pa, pb = plan
    if kind not in ("bf16", "f16") or any(not isinstance(p, TmaOperand) or isinstance(p, Im2colOperand) for p in (pa, pb)):
        return None
    if not half_stageable(c, g) or transcendental_ops(c) >= HEAVY_EPILOGUE_TRANSCENDENTALS:
        return None
    cap = shalf_max_slices()
    if cap and k_slices(g, kind) > cap:
        return None
    if not plain_cast(c, g) and (mode == "cast" or (mode == "columns" and row_loads(c, g))):
        return None
    BM, BN = int(cfg["BM"]), int(cfg["BN"])
    extra = own_epilogue_bytes(BM // 64, BN, True) + SOWN_SLACK
    fits = [s for s in range(2, 9) if _fit(plan, BM, BN, s, smem_max - extra)]
    return dict(cfg, persistent=True, sown=True, shalf=True, stages=max(fits)) if fits else None


# 128 x 192 tiles (5 stages) in the default's rate table, so a GEMM whose 128 x 256 tiles leave the last wave a quarter
# empty takes them where the waves say so. H200, bench/short_k_ab.py --envs (gpu-session49-2026-11-29/b/): BERT-base
# qkv 34.8 -> 28.6 us, ff2 37.4 -> 30.9, a 3x3 conv 128 -> 128 at 28² 35.4 -> 33.7, the rest unchanged.
# EMBER_WGMMA_WAVE192=0: off.
WAVE192_RATE = 0.9


def wave192_on() -> bool:
    return os.environ.get("EMBER_WGMMA_WAVE192", "1") == "1"


# The k loop split over a cluster of 2 blocks (knob `cluster`) in the default where the cost says so, a tile's time
# over S blocks taken as 1 / S of its k loop plus KCLUSTER_SUM_SLICES slices for the sum through distributed shared
# memory, on tiles at most 128 wide. H200 (gpu-session49-2026-11-29/b/): the Llama-1B prefill's down projection (512
# x 2048 over k 8192) 128 x 128 over 2 blocks 36.2 us against 45.0 (128 x 64 whole) and 49.1 (split in 8 through
# memory; cuBLAS 31.8), o 15.3 against 16.8; 128 x 256 over 2 blocks lost (down 50.9, o 21.0), over 4 more so (59.0,
# 27.1): those stay searched. EMBER_WGMMA_KCLUSTER=0: off.
KCLUSTER_DEFAULT_SIZES = (2,)
KCLUSTER_MAX_BN = 128
KCLUSTER_SUM_SLICES = 6  # (fit to the two: down's 0.80 and o's 0.91 of the whole loop's time)

# Ping-pong 64 x 128 (two consumers on alternate tiles, one's epilogue under the other's products) rated in the
# default's table for 16-bit TMA operands: it fills the SMs where 128-row tiles leave them half idle. H200
# (gpu-session49-2026-11-29/b/): the prefill's o 13.4 us against 16.8 (the search found it in the forty-eighth, 1.16x),
# down 38.1 (the cluster's 36.2 wins there), qkv 22.2 against 17.4 (two waves of it: not chosen); BERT's FFN lost with
# it (gpu-session40-2026-11-28/d/: 128 x 256 fills the waves there). EMBER_WGMMA_PINGPONG_DEFAULT=0: off.
PINGPONG_RATE = 0.65


def pingpong_default_on() -> bool:
    return os.environ.get("EMBER_WGMMA_PINGPONG_DEFAULT", "1") == "1"


def default_wgmma_config(c: Canon, target=None, swap: bool = False, rs: bool = False) -> dict:
    """The unsearched wgmma tile: the one with the least estimated time, from each tile's rate
    measured on the H100 at 4096^3 and 8192^3 (bench/results/contractions-2026-11-25-variants.json)
    over the waves of one block per SM (the ring takes the shared memory). 128 x 256 runs 3 stages
    (4 lost 3-18%) in groups of 8 row tiles (L2 reuse of b: +5% at 4096^3, +9% at 8192^3).
    tf32x3 (hi and lo tiles: twice the ring, plus staging for MN-major operands) takes its own
    rates (f32 4096^3 x @ W.T on the H100, bench/results/f32-contractions-2026-11-26.json) over the
    tiles whose ring holds 2 slots, with as many slots as fit. swap, rs: those knobs (cuda_schedule.rs_default)."""
    g = wgmma_contraction(c, swap)
    plan = wgmma_plan(g, rs=rs)
    x3 = not isinstance(plan, str) and plan[0] == "tf32x3"
    Me = _size(g.m)
    M = Me.value if Me.is_const else SYMBOLIC_M_GUESS
    N, B = (_size(x).value for x in (g.n, g.batch))
    sms = target.sm_count if target is not None else 132
    rates = {(128, 256): 1.0, (128, 128): 0.75, (64, 256): 0.6, (128, 64): 0.55, (64, 128): 0.5, (64, 64): 0.4}
    if x3:
        # (64 x 64: 0.64 at 4096^3, but 0.5 by 04_matmul_irregular's 1031 x 2053 x 3136 on the H200,
        # 464 us against 64 x 128's 373 at 5 and 3 waves: gpu-session41-2026-11-28/b/)
        rates = {(128, 256): 1.0, (128, 128): 0.87, (64, 256): 0.77, (64, 128): 0.75, (128, 64): 0.67, (64, 64): 0.5}

    slices = k_slices(g, plan[0]) if not isinstance(plan, str) else 0

    def cost(t, S=1, rate=None):  # (S: the k loop split over a cluster of S blocks, each a 1 / S share plus the sum)
        bm, bn = t
        tiles = -(-M // bm) * -(-N // bn) * B * S
        waves = -(-tiles // sms)
        return waves * bm * bn * (1 / S + (KCLUSTER_SUM_SLICES / slices if S > 1 else 0)) / (rate or rates[t])
    if wave192_on() and not isinstance(plan, str) and plan[0] in ("bf16", "f16"):  # (measured on 16-bit only)
        rates[(128, 192)] = WAVE192_RATE
    smem_max = target.smem_per_block if target is not None else 227 * 1024
    # tiles whose ring holds 2 slots (tf32x3: hi, lo and staging tiles) and whose rows fit the runs
    wide = 256 if isinstance(plan, str) or not promote_slices(plan[0], _size(g.k).value, {}) else 128
    rates = {t: r for t, r in rates.items() if _fit(plan, *t, 2, smem_max, rs) and t[1] <= wide}
    heavy = not x3 and transcendental_ops(c) >= HEAVY_EPILOGUE_TRANSCENDENTALS
    if heavy:  # (an epilogue the loads must hide: see HEAVY_EPILOGUE_TRANSCENDENTALS)
        rates = {t: r for t, r in rates.items() if t[1] <= 128} or rates
    # (also each tile's k loop split over a cluster: KCLUSTER_DEFAULT_SIZES)
    ksplit = kcluster_default_on() and not isinstance(plan, str) and plan[0] in ("bf16", "f16") and not (rs or heavy or swap)
    choices = [(t, S) for t in rates for S in (1,) + (KCLUSTER_DEFAULT_SIZES if ksplit and t[1] <= KCLUSTER_MAX_BN else ())
               if S == 1 or (slices >= S * KCLUSTER_MIN_SLICES and ring_holds_tile(*t, default_stages(*t) * sum(t) * 128))]
    (BM, BN), S = min(choices, key=lambda ts: cost(*ts))
    # (a symbolic M, the swapped form: unmeasured)
    pp = pingpong_default(plan, rs, heavy, smem_max) if Me.is_const and not swap else None
    if pp is not None and cost((64, 128), rate=PINGPONG_RATE) < cost((BM, BN), S):
        return pp
    sk = None if swap else streamk_default(plan, rs, heavy, smem_max)
    if sk is not None and slices:
        t = (sk["BM"], sk["BN"])
        sk_cost = t[0] * t[1] * (-(-M // t[0]) * -(-N // t[1]) * B / sms + STREAMK_FIX_SLICES / slices) / rates[t]
        if sk_cost < cost((BM, BN), S):
            return sk
    cfg = {"mode": "wgmma", "BM": BM, "BN": BN, "stages": default_stages(BM, BN), **({"swap": True} if swap else {}),
           **({"rs": True} if rs else {}), **({"cluster": S} if S > 1 else {})}
    if heavy:
        cfg.update(persistent=True, stages=max(s for s in range(2, 9) if _fit(plan, BM, BN, s, smem_max, rs)))
    if rs and swap:  # persistent, 4 stages where the output's rows (pixels) are contiguous: 35_conv2d_pointwise
        # 101 -> 95 us, real KB 87 4.54 -> 3.73 ms on an H200; unswapped (21_EfficientNetMBConv, channels-last output)
        # it lost, 5.35 -> 6.84 ms (gpu-session43-2026-11-29/rs/, rs2/, d/)
        cfg.update(persistent=True, stages=max(s for s in range(2, 5) if _fit(plan, BM, BN, s, smem_max, True)))
    if x3 or _ring_staged(plan, rs):
        cfg["stages"] = max(s for s in range(2, 5) if _fit(plan, BM, BN, s, smem_max))
        if _ring_staged(plan) and cfg["stages"] == 2:  # consumers holding both slots starve the split:
            cfg["overlap"] = False  # release each at once (x.T @ g 64 -> 67, x @ W 63 -> 66 TFLOP/s)
    mt, nt = -(-M // BM), -(-N // BN)
    if S == 1 and short_k_persistent(c, g, plan, mt * nt * B, sms, cfg):
        cfg["persistent"] = True
    if S == 1 and not heavy and not x3:
        cfg = half_staged_default(c, g, plan, mt * nt * B, sms, cfg, smem_max) or cfg
    # more tiles than SMs: row tiles fastest, in groups of up to 8 — with few row tiles (a prompt's
    # 512 rows against a 128256-row LM head: 4 x 501 tiles) each wave then reads b's columns once
    # where columns-fastest order read all of b once per row tile (4 x 525 MB from HBM)
    return dict(cfg, group=min(8, mt)) if mt > 1 and mt * nt * B > sms else cfg


def pingpong_default(plan, rs: bool, heavy: bool, smem_max: int) -> dict | None:
    """The ping-pong 64 x 128 tile the default rates (PINGPONG_RATE), as many stages as fit, or None: 16-bit operands
    both copied by TMA (not an im2col walk: unmeasured), not the RS form, no heavy epilogue."""
    if not pingpong_default_on() or isinstance(plan, str) or rs or heavy:
        return None
    kind, pa, pb = plan
    if kind not in ("bf16", "f16") or any(not isinstance(p, TmaOperand) or isinstance(p, Im2colOperand) for p in (pa, pb)):
        return None
    fits = [s for s in range(2, 9) if _fit(plan, 64, 128, s, smem_max)]
    return {"mode": "wgmma", "BM": 64, "BN": 128, "stages": max(fits), "pingpong": True, "group": 8} if fits else None


# Stream-K (knob `streamk`, codegen/cuda_wgmma_streamk.py) in the default behind EMBER_WGMMA_STREAMK=1 (an A/B: built
# untimed in the forty-ninth session): 128 x 256 tiles, every SM running tiles x k slices / SMs of them, costed as that
# share plus STREAMK_FIX_SLICES slices for the owner's sum of a partial through L2 (a guess: twice the cluster's 6),
# chosen where it beats the waves of the best whole-tile choice.
STREAMK_FIX_SLICES = 12


def streamk_default(plan, rs: bool, heavy: bool, smem_max: int) -> dict | None:
    """The stream-K tile the default weighs (EMBER_WGMMA_STREAMK=1 only), or None: 16-bit operands both copied by TMA
    (not an im2col walk), not the RS form, no heavy epilogue."""
    if os.environ.get("EMBER_WGMMA_STREAMK", "0") != "1" or isinstance(plan, str) or rs or heavy:
        return None
    kind, pa, pb = plan
    if kind not in ("bf16", "f16") or any(not isinstance(p, TmaOperand) or isinstance(p, Im2colOperand) for p in (pa, pb)):
        return None
    if not _fit(plan, 128, 256, 3, smem_max):
        return None
    return {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "streamk": True, "group": 8}


# tf32x3 over a gathered operand (a float32-accuracy conv's pixels) with few columns: the RS form, the pixels on A,
# their chunks cp.async copies, the split of the other (TMA-fed) operand one slice behind, persistent tiles as
# wide as the columns. The seed-000 conv (100 x 3 x 224^2 -> 96, 11 x 11 stride 4) on an H200: 524 -> 455 us,
# 1.87x -> 2.15x eager float32 (bench/results/gpu-session44-2026-11-29/, c/ and d/): its producer had waited on
# its gathered loads (ncu: L1TEX scoreboard 63% of stalls, tensor pipe 45%); the split's default lag (stages - 2)
# 567 us, lag 1 or 2 472-477, persistent 454-455. EMBER_WGMMA_RS_X3=0: the shared-memory form as before.
RS_X3_MAX_N = 128


def rs_x3_plans(c: Canon):
    """(swap, plan) for each orientation whose tf32x3 plan the RS form takes (A raw, split in registers)."""
    for swap in (False, True):
        plan = wgmma_applicable(c, swap=swap, rs=True)
        if not isinstance(plan, str) and plan[0] == "tf32x3" and rs_applies(plan, {"rs": True}):
            yield swap, plan


def rs_x3_default(c: Canon, target=None) -> dict | None:
    """The RS form's tile for tf32x3 where one operand is gathered as whole chunks (and not an im2col walk) and the
    other is a K-major TMA copy of at most RS_X3_MAX_N rows (else None)."""
    if os.environ.get("EMBER_WGMMA_RS_X3", "1") != "1":
        return None
    smem_max = target.smem_per_block if target is not None else 227 * 1024
    for swap, plan in rs_x3_plans(c):
        g = wgmma_contraction(c, swap)
        _, pa, pb = plan
        N = _size(g.n)
        if not (isinstance(pa, GatherOperand) and pa.vector is not None and isinstance(pb, TmaOperand) and N.is_const
                and N.value <= RS_X3_MAX_N):
            continue
        if im2col_default() and not isinstance(im2col_operand(g, pa, slice_elems("tf32x3"), None), str):
            continue  # (the copy engine's im2col walk takes it in the shared-memory form: RS over it untimed)
        BN = -(-N.value // 32) * 32
        fits = [s for s in range(2, 6) if _fit(plan, 128, BN, s, smem_max, True)]
        if fits:
            return {"mode": "wgmma", "BM": 128, "BN": BN, "stages": max(fits), "rs": True, "cpasync": True, "lag": 1,
                    "persistent": True, **({"swap": True} if swap else {})}
    return None
