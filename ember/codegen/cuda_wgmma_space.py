"""The `wgmma` schedules the search tries for a kernel (search/space.py): tiles, ring depth, the
persistent tile loop, two blocks per SM, the gathering producers' knobs, the epilogue's paths; each
a variation of the default (codegen/cuda_wgmma_default.py) the measurements left open."""
from __future__ import annotations

import os

from ..kernel.structure import Canon, _size, contraction_of
from .cuda_wgmma import _copies, _smem_bytes, _smem_limit, _staged_rows, im2col_default, promote_slices, slice_elems, wgmma_applicable
from .cuda_wgmma_default import _fit, _ring_staged, default_wgmma_config, k_slices, rs_x3_plans
from .cuda_wgmma_epilogue import SOWN_SLACK, epilogue_loads, own_epilogue_bytes, swide_default
from .cuda_wgmma_feed import GatherOperand
from .cuda_wgmma_im2col import Im2colOperand, im2col_operand
from .cuda_tma import TmaOperand
from .cuda_wgmma_kcluster import KCLUSTER_MIN_SLICES, KCLUSTER_SIZES
from .cuda_wgmma_rs import RS_MAX_REGISTERS, rs_applies, rs_registers
from .cuda_wgmma_staged import staged_bytes


def unrun_knobs_on() -> bool:
    """EMBER_SEARCH_UNRUN_KNOBS=1: the search also tries the knobs whose kernels wait on other blocks and have never run
    on a GPU (`streamk`, `mcast`, built in the forty-ninth session): a protocol bug there hangs rather than fails, and
    the search verifies a candidate by running it. Off until their CUDA tests pass (bench/gpu_session50a.sh PART=1)."""
    return os.environ.get("EMBER_SEARCH_UNRUN_KNOBS", "0") == "1"


def wgmma_configs(c: Canon, level: str, target=None) -> list:
    """The wgmma schedules the search tries for this kernel (none where the mode does not apply)."""
    plan = wgmma_applicable(c)
    if isinstance(plan, str):
        return rs_tiles(c, target.smem_per_block if target is not None else 227 * 1024)
    cp = _copies(plan[0])
    tiles = [(128, 256), (128, 128), (64, 256), (128, 64), (64, 128), (64, 64)]
    if cp == 2:  # tf32x3: the tiles whose ring holds 3 slots (a split lag of one) first
        tiles = [(128, 128), (128, 64), (64, 128), (64, 64), (128, 256), (64, 256)]
    promote = promote_slices(plan[0], _size(contraction_of(c).k).value, {})
    if promote:  # (the folded accumulator: tiles up to 128 wide)
        tiles = [t for t in tiles if t[1] <= 128]
    smem_max = target.smem_per_block if target is not None else 227 * 1024
    out = []
    for BM, BN in (tiles if level == "full" else tiles[:4]):
        if not _fit(plan, BM, BN, 2, smem_max):
            continue
        most = max(s for s in range(2, 9) if _fit(plan, BM, BN, s, smem_max))
        for st in sorted({most, max(2, most - 1), 3} if level == "full" else {most}):
            if _fit(plan, BM, BN, st, smem_max):
                out.append({"mode": "wgmma", "BM": BM, "BN": BN, "stages": st})
    out += wave_tiles(c, plan, smem_max, target)
    if out:  # persistent blocks; the first tile with L2-grouped rasterisation; in the full space more knobs
        out += [dict(cf, persistent=True) for cf in list(out)]
        # two blocks per SM (one's epilogue under the other's main loop), for tiles whose ring fits half
        half = _smem_limit(target, 2)
        for BM, BN in [(64, 128), (64, 64)]:
            fits = [st for st in range(2, 9) if _fit(plan, BM, BN, st, half)]
            if fits:
                out.append({"mode": "wgmma", "BM": BM, "BN": BN, "stages": max(fits), "occupancy": 2})
        out += [dict(out[0], group=gr) for gr in ((8, 16) if level == "full" else (8,))]
        walks = [p for p in plan[1:] if isinstance(p, GatherOperand) and
                 not isinstance(im2col_operand(contraction_of(c), p, slice_elems(plan[0]), None), str)]
        gather = {"im2col": False} if walks and im2col_default() else {}  # (the gather's knobs on a conv im2col copies)
        if any(isinstance(f, GatherOperand) for f in plan[1:]):  # the gather's knobs
            more = [dict(out[0], gunroll=4), {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "producers": 2, "gunroll": 2},
                    {"mode": "wgmma", "BM": 64, "BN": 256, "stages": 4, "producers": 2, "gunroll": 4},
                    {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "producers": 2, "gunroll": 4}]
            for cf in more:  # as many stages as fit, up to the listed ones
                st = max((s for s in range(2, cf["stages"] + 1) if _fit(plan, cf["BM"], cf["BN"], s, smem_max)), default=0)
                if st:
                    out.append(dict(cf, stages=st, **gather))
            if any(isinstance(f, GatherOperand) and f.vector is not None for f in plan[1:]):  # whole chunks: on the
                # first tile and on the default's: rows split per element instead of once a tile (hoist is the
                # default), cp.async copies, both
                d = default_wgmma_config(c, target)
                for base in [out[0]] + ([d] if d != out[0] else []):
                    out += [dict(base, hoist=False, **gather)] + ([dict(base, cpasync=True, **gather), dict(base, cpasync=True, persistent=True, **gather),
                                                                   dict(base, hoist=False, cpasync=True, **gather)] if cp != 2 else [])
                    out += [dict(base, im2col=not im2col_default())] if walks else []  # (the copy engine's walk, or not)
        if _ring_staged(plan):  # the staging ring's depth, and staging inside the slots instead
            out += [dict(out[0], sdepth=d) for d in (2, 4) if staged_bytes(out[0]["BM"] + out[0]["BN"], out[0]["stages"], d, cp) <= smem_max]
            st = max((s for s in range(2, 5) if _smem_bytes(128, 64, s, 2, _staged_rows(*plan, 128, 64)) <= smem_max), default=0)
            if st and cp == 2:  # (tf32x3 only: plain TF32 over an MN-major copy needs the ring)
                out.append({"mode": "wgmma", "BM": 128, "BN": 64, "stages": st, "staged": False})
        elif cp == 2:  # the split's lag (and consumers that release each slot at once, allowing one more)
            st = out[0]["stages"]
            out += [dict(out[0], lag=lg) for lg in range(st - 2) if lg != max(0, st - 2)]
            out += [dict(out[0], overlap=False, lag=st - 1)]
        out += [dict(out[0], group=8, persistent=True)]
        if cp == 1 and not _ring_staged(plan):  # persistent with the staged epilogue in its own buffer (knob `sown`)
            out += own_epilogue_tiles(plan, smem_max, epilogue_loads(c))
        if cp == 1 and not _ring_staged(plan) and not promote:  # the k loop split over a cluster (few tiles)
            out += kcluster_tiles(c, plan, target)
        if not _ring_staged(plan) and not promote and unrun_knobs_on():  # every tile's slices dealt out to the SMs
            out += streamk_tiles(c, plan, smem_max, target)
        if cp == 1 and unrun_knobs_on():  # b's tile shared by two blocks on adjacent row tiles (TMA multicast)
            out += mcast_tiles(plan, smem_max)
        if cp == 1:  # two consumers on alternate 64-row tiles (ping-pong: one's epilogue under the other's products)
            for BN in sorted({out[0]["BN"], 128}):
                if _fit(plan, 64, BN, 2, smem_max):
                    st = max(s for s in range(2, 9) if _fit(plan, 64, BN, s, smem_max))
                    out += [{"mode": "wgmma", "BM": 64, "BN": BN, "stages": st, "pingpong": True, "group": 8}]
        if promote:  # folds twice as often / half as often
            out += [dict(out[0], promote=promote // 2), dict(out[0], promote=promote * 2)]
    if out:  # the epilogue from the registers instead of through shared memory (cuda_wgmma_epilogue.py)
        out += [dict(out[0], sepi=True)]
        if epilogue_loads(c):  # the epilogue's loads paired, or the staged walk 16 bytes a lane
            out += [dict(out[0], epair=True), dict(out[0], swide=not swide_default(c))]
    if level == "full":
        out += [dict(cf, overlap=False) for cf in out[:2]] + [dict(out[0], pair=False)]
    return out + narrow_tiles(c, smem_max) + rs_tiles(c, smem_max) + rs_x3_tiles(c, smem_max)


WAVE_BN = 192  # (a multiple of 64: an MN-major operand's tile is whole 128-byte chunks of rows)


def wave_tiles(c: Canon, plan, smem_max: int, target=None) -> list:
    """Tiles 192 wide where they fill the last wave of blocks better than the default's tile by a tenth of a
    wave: the default's rate table knows 64 / 128 / 256-wide tiles only, and a mid-size GEMM's tile count can
    leave a wave a quarter empty — BERT-base's 3072 -> 768 projection over 4096 tokens is 96 tiles of 128 x 256
    on 132 SMs (0.73 of a wave), 128 of 128 x 192; a Llama-1B prefill's qkv over 512 tokens 96 tiles of
    128 x 128, 128 of 64 x 192 (the contraction suite's GEMMs at 52-71% of cuBLAS, gpu-session47-2026-11-29/e/).
    Searched, untimed."""
    g = contraction_of(c)
    sizes = [_size(x) for x in (g.m, g.n, g.batch)]
    if any(not s.is_const for s in sizes) or promote_slices(plan[0], _size(g.k).value, {}):
        return []
    M, N, B = (s.value for s in sizes)
    sms = target.sm_count if target is not None else 132

    def fill(BM: int, BN: int) -> float:
        tiles = -(-M // BM) * -(-N // BN) * B
        return tiles / (-(-tiles // sms) * sms)
    d = default_wgmma_config(c, target)
    base = fill(int(d["BM"]), int(d["BN"]))
    out = []
    for BM in (128, 64):
        if N > WAVE_BN and fill(BM, WAVE_BN) >= base + 0.1 and _fit(plan, BM, WAVE_BN, 2, smem_max):
            out.append({"mode": "wgmma", "BM": BM, "BN": WAVE_BN, "stages": max(s for s in range(2, 9) if _fit(plan, BM, WAVE_BN, s, smem_max))})
    return out


def kcluster_tiles(c: Canon, plan, target=None) -> list:
    """Knob `cluster` (codegen/cuda_wgmma_kcluster.py) on 128 x 128 and 128 x 256 tiles where they are fewer than the SMs
    and each block keeps KCLUSTER_MIN_SLICES k slices: S = 2 and 4; the sum's loads 1 or 4 runs at a time (`cunroll`: the
    runs a thread sums are 4-16 on these tiles)."""
    g = contraction_of(c)
    sizes = [_size(x) for x in (g.m, g.n, g.batch, g.k)]
    if any(not s.is_const for s in sizes):
        return []
    M, N, B, _ = (s.value for s in sizes)
    sms = target.sm_count if target is not None else 132
    slices = k_slices(g, plan[0])
    out = []
    for BM, BN, st in ((128, 128, 4), (128, 256, 3)):
        tiles = -(-M // BM) * -(-N // BN) * B
        out += [{"mode": "wgmma", "BM": BM, "BN": BN, "stages": st, "cluster": S, **u} for S in KCLUSTER_SIZES
                if tiles < sms and slices >= S * KCLUSTER_MIN_SLICES for u in ({}, {"cunroll": 4})]
    return out


def streamk_tiles(c: Canon, plan, smem_max: int, target=None) -> list:
    """Knob `streamk` (codegen/cuda_wgmma_streamk.py) where the tiles leave the last of at most four waves a tenth
    empty or more at 128 x 128: 128 x 256, 128 x 128 and the default's tile, as many stages as fit (untimed)."""
    g = contraction_of(c)
    sizes = [_size(x) for x in (g.m, g.n, g.batch)]
    if any(not s.is_const for s in sizes):
        return []
    M, N, B = (s.value for s in sizes)
    sms = target.sm_count if target is not None else 132
    tiles = -(-M // 128) * -(-N // 128) * B
    if tiles > 4 * sms or tiles / (-(-tiles // sms) * sms) > 0.9:
        return []
    d = default_wgmma_config(c, target)
    out = []
    for BM, BN in {(128, 256), (128, 128), (int(d["BM"]), int(d["BN"]))}:
        fits = [s for s in range(2, 9) if _fit(plan, BM, BN, s, smem_max)]
        out += [{"mode": "wgmma", "BM": BM, "BN": BN, "stages": max(fits), "streamk": True, "group": 8}] if fits else []
    return sorted(out, key=lambda cf: (-cf["BN"], -cf["BM"]))


def mcast_tiles(plan, smem_max: int) -> list:
    """Knob `mcast` (codegen/cuda_wgmma_mcast.py) where both operands are TMA copies (not im2col walks) and b's rows
    are one run: 128 x 256 at 3 stages (its default's), 128 x 128 at as many as fit (untimed)."""
    kind, pa, pb = plan
    if not all(isinstance(p, TmaOperand) and not isinstance(p, Im2colOperand) for p in (pa, pb)) or pb.r_inner or pb.k_inner:
        return []
    out = []
    for BM, BN in ((128, 256), (128, 128)):
        fits = [s for s in range(2, 9) if _fit(plan, BM, BN, s, smem_max)]
        st = min(max(fits), 3) if BN == 256 else max(fits, default=0)
        out += [{"mode": "wgmma", "BM": BM, "BN": BN, "stages": st, "mcast": True, "group": 8}] if fits else []
    return out


def own_epilogue_tiles(plan, smem_max: int, loads: bool) -> list:
    """Persistent tiles whose staged epilogue has a buffer of its own (knob `sown`): the ring fills with the next
    tile while the consumers walk this one's rows — for short k loops, whose tiles are mostly their store
    (bench/results/gpu-session47-2026-11-29/ README). As many stages as fit beside the buffer; 16 bytes a lane too."""
    # (and staged as the 16-bit outputs themselves, the epilogue computed in the registers first: knob `shalf`, half the
    # buffer; refused by the renderer where the output is not 16-bit runs of 8 columns)
    tiles = [(128, 128, False), (64, 128, False), (64, 64, False), (128, 256, True), (128, 128, True)]
    out = []
    for BM, BN, half in tiles:
        extra = own_epilogue_bytes(BM // 64, BN, half) + SOWN_SLACK
        fits = [st for st in range(2, 9) if _fit(plan, BM, BN, st, smem_max - extra)]
        if fits:
            out.append({"mode": "wgmma", "BM": BM, "BN": BN, "stages": max(fits), "persistent": True, "sown": True,
                        **({"shalf": True} if half else {}), "group": 8})
    return out + ([dict(out[0], swide=True)] if out and not loads else [])


def rs_tiles(c: Canon, smem_max: int) -> list:
    """Knob `rs` where TF32 meets one MN-major operand copied by TMA (an NCHW 1x1 conv's input left as
    stored: codegen/cuda_wgmma_rs.py): that operand on A (swapped where it is B), its fragments from registers."""
    found = rs_plan(c)
    if found is None:
        return []
    swap, plan = found
    base = {"mode": "wgmma", "rs": True, **({"swap": True} if swap else {})}
    out = []
    for BM, BN in ((128, 256), (128, 128), (64, 256), (128, 64)):
        fits = [s for s in range(2, 9) if _fit(plan, BM, BN, s, smem_max, True)]
        if fits:
            out.append(dict(base, BM=BM, BN=BN, stages=max(fits)))
    return out + [dict(cf, persistent=True) for cf in out[:2]]


def rs_plan(c: Canon) -> tuple | None:
    """(swap, plan) putting a TF32 contraction's one MN-major TMA operand on A for the RS form, or None."""
    for swap in (False, True):
        plan = wgmma_applicable(c, gather=False, swap=swap, rs=True)
        if rs_applies(plan, {"rs": True}) and plan[0] == "tf32":
            return swap, plan
    return None


def rs_x3_tiles(c: Canon, smem_max: int) -> list:
    """Knob `rs` at float32 accuracy (tf32x3: A raw, split into registers by the consumers), either operand on A:
    tiles whose accumulators and fragments fit the consumers' registers (codegen/cuda_wgmma_rs.py), 96 wide too
    (a conv's 96 output channels on the columns: the seed-000 conv)."""
    out = []
    promote = promote_slices("tf32x3", _size(contraction_of(c).k).value, {})
    for swap, plan in rs_x3_plans(c):
        base = {"mode": "wgmma", "rs": True, **({"swap": True} if swap else {})}
        tiles = []
        for BM, BN in ((128, 128), (128, 96), (128, 64), (64, 128)):
            fits = [s for s in range(2, 9) if _fit(plan, BM, BN, s, smem_max, True)]
            overlap = rs_registers(BN, True, promote, True) <= RS_MAX_REGISTERS
            if fits and (overlap or rs_registers(BN, False, promote, True) <= RS_MAX_REGISTERS):
                tiles.append(dict(base, BM=BM, BN=BN, stages=max(fits), **({} if overlap else {"overlap": False})))
        out += tiles + [dict(cf, persistent=True) for cf in tiles[:2]]
        if tiles and isinstance(plan[1], GatherOperand) and plan[1].vector is not None:  # A's chunks as cp.async copies
            out += [dict(cf, cpasync=True) for cf in tiles[:2]] + [dict(tiles[0], cpasync=True, persistent=True)]
    return out


def narrow_tiles(c: Canon, smem_max: int) -> list:
    """Knob `swap` where the rows are few (at most 32: a conv with 32 output channels) and the columns
    many: those on the tile's 128 rows, the few on 32 columns, instead of half a 64-row tile. And
    where the columns are the 32 (a channels-last conv's 32 output channels: DenseNet's growth
    rate) and the rows many, the 32-wide tile unswapped (untimed: the search offers it)."""
    g = contraction_of(c)
    M, N = _size(g.m), _size(g.n)
    out = []
    for swap, few, many in ((True, M, N), (False, N, M)):
        plan = wgmma_applicable(c, swap=swap)
        if not (few.is_const and few.value <= 32 and (not many.is_const or many.value >= 1024)) or isinstance(plan, str):
            continue
        fits = [s for s in range(2, 9) if _fit(plan, 128, 32, s, smem_max)]
        base = {"mode": "wgmma", "BM": 128, "BN": 32, "stages": max(fits)} if fits else None
        if base and swap:
            base["swap"] = True
        out += [base, dict(base, persistent=True), dict(base, BM=64)] if base else []
    return out
