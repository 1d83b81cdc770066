"""How the wgmma mode's producer warpgroup fills the ring (codegen/cuda_wgmma.py).

Each operand is fed one of two ways:

* **tma** — a plain strided load (codegen/cuda_tma.py): one producer thread issues
  `cp.async.bulk.tensor` copies, completing on the slot's `full` mbarrier by bytes;
* **gather** — anything else the kernel IR can compute per element: an implicit-GEMM convolution's
  input (guarded, divided indices), an operand with a prologue, odd strides. The producer
  warpgroups' threads (knob `producers`: 1 or 2 warpgroups) evaluate the operand's value expression per element (Ember's own value renderer: the same
  code the `mma` mode runs), round it to the MMA's input type, and store 16-byte chunks into the
  K-major 128-byte-swizzled layout wgmma reads (chunk c of row r goes to chunk c ^ (r % 8) of the
  row: the layout a TMA copy with SWIZZLE_128B writes). Consecutive threads take consecutive rows,
  so a conv's input, contiguous along output columns, loads coalesced. Each thread then fences its
  writes into the async proxy (`fence.proxy.async.shared::cta`) and arrives on `full`, whose count
  is 128 per producer warpgroup (+1 for the expect_tx arrival when the other operand is copied by
  TMA). Knob `gunroll` keeps that many chunks' loads in flight per thread.

Float32 at float32 accuracy (TF32 not allowed) is kind **tf32x3**: every operand tile has a second,
"lo" copy in the slot (`lo_off` bytes after the first) and the consumers issue three wgmmas per k
step, lo*hi + hi*lo + hi*hi (the `mma` mode's 3xTF32, codegen/cuda_mma.py). Gathered operands
write hi = tf32(x) and lo = tf32(x - hi) directly. A TMA-copied tile lands raw float32 and is
**split** in place by the producer threads: the copy completes on the slot's `landed` barrier (by
bytes), every producer thread rewrites its 16-byte chunks as hi and lo (the layout is untouched:
the split is elementwise), fences and arrives on `full`. The split of slice q runs `lag` slices
after its copy was issued (knob, default stages - 2), so copies stay in flight while earlier slices
are split; lag <= stages - 2 because overlapping consumers hold two slots. An MN-major operand
(TF32 wgmma has no transpose) is copied raw into a **staging** tile at the slot's end (32-row
chunks of BK k-rows, 128-byte swizzled) and the split **transposes** it: each thread reads the 4 k
of one row from 4 staging rows and writes the row's hi and lo chunks K-major.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes as dt
from .. import symbolic as sm
from ..kernel import ir, layout_gemm
from ..kernel.structure import Contraction
from .cuda_tma import SWIZZLE_BYTES, TMA_KINDS, TmaOperand, _affine, _peel, tma_operand
from .cuda_wgmma_gather import emit_hoisted_gather, emit_row_table, hoistable
from .cuda_wgmma_im2col import Im2colOperand, emit_im2col_copy
from .cuda_wgmma_mcast import pair_loop
from .cuda_wgmma_kcluster import tile_loop

KIND_OF = {dt.bfloat16: "bf16", dt.float16: "f16"}
LOAD_BATCH = 16  # chunks whose loads a gathering thread has in flight at once (vector gather; 16 beat 8, 4 and 2
# on four real KernelBench convs, bench/results/gpu-session23-2026-11-26/c/knob-sweep-convs.json)
ROUND = {"bf16": "em_f2bf", "f16": "em_f2h"}  # float -> 16-bit storage, round to nearest even


@dataclass
class GatherOperand:
    val: ir.Val
    rows: list  # the operand's row loops (m or n)
    kind: str
    extent: str  # the kernel's name for the rows' extent ("M_" or "N_")
    kmajor: bool = True  # gathered tiles are always written K-major
    vector: object = None  # the load read as whole 16-byte chunks (vector_chunks), or None


def vector_chunks(g: Contraction, val: ir.Val, kind: str):
    """The operand's load when every 16-byte chunk of the tile (8 consecutive k of one row, 4 of
    float32) is 16 contiguous, aligned bytes of one buffer under one guard: the value is that load
    (16-bit, of the MMA's type, under widening casts; or float32 for TF32, stored raw as a TMA tile
    lands, or split into hi and lo for 3xTF32), the innermost k variable walks it one element at a time over
    an extent of whole chunks, the guard does not depend on that variable, and every other stride and
    the offset are multiples of a chunk. A channels-last convolution's input is such an operand
    (kernel/layout.py): each pixel and filter tap reads its channels as chunks, padding guarded per
    chunk. None otherwise (the producer then evaluates the operand per element)."""
    ld = _peel(val)
    if ld is None or not g.k:
        return None
    if KIND_OF.get(ld.dtype) != kind and not (ld.dtype == dt.float32 and kind in ("tf32", "tf32x3")):
        return None
    kv, ext = g.k[-1]
    epc = 16 // ld.dtype.itemsize
    if not ext.is_const or ext.value % epc:
        return None
    _, index, valid = ld.args
    if kv in sm.free_vars(valid):
        return None
    names = sorted(sm.free_vars(index))
    aff = _affine(index, names)
    if aff is None:  # rows through divisions (a strided transposed conv's phases): term by term
        return ld if _chunk_terms(index, kv, epc) else None
    off, strides = aff
    if strides.get(kv) != 1 or off % epc or any(st % epc for v, st in strides.items() if v != kv):
        return None
    return ld


def _chunk_terms(index, kv: str, epc: int) -> bool:
    """Whether index = kv + terms that are all multiples of epc and free of kv, read off its
    linear form (constant, (term, coefficient) pairs): each other term's coefficient and the
    constant divisible by epc."""
    if getattr(index, "op", None) != "add":
        return False
    const, terms = index.args
    if const % epc:
        return False
    seen = False
    for t, c in terms:
        if getattr(t, "op", None) == "var" and t.args[0] == kv:
            seen, ok = True, c == 1
        else:
            ok = c % epc == 0 and kv not in sm.free_vars(t)
        if not ok:
            return False
    return seen


def gather_kind(g: Contraction, val: ir.Val) -> str | None:
    """The MMA input type a gathered operand is rounded to: its own half type, or the half type
    under widening casts of its load; float32 in TF32 where TF32 is allowed (rounded to nearest)."""
    ld = _peel(val)
    if ld is not None and ld.dtype in KIND_OF:
        return KIND_OF[ld.dtype]
    if val.dtype in KIND_OF:
        return KIND_OF[val.dtype]
    if val.dtype == dt.float32:
        return "tf32" if g.stage.acc.tf32 else "tf32x3"
    return None


def wgmma_plan(g: Contraction, gather: bool = True, rs: bool = False) -> tuple | str:
    """(kind, a feed, b feed) for contraction g, or why the wgmma mode does not apply. An operand
    takes TMA where the copy engine can stage it, else (with `gather`) the producer gathers it.
    rs: TF32's a operand may be MN-major (loaded into registers: codegen/cuda_wgmma_rs.py)."""
    if g.stage.acc.dtype != dt.float32:
        return "an accumulator that is not float32"
    if not g.n or not g.m:
        return "a matrix-vector product (no rows on one side)"
    feeds = []
    for name, val, rows, extent in (("a", g.a, g.m, "M_"), ("b", g.b, g.n, "N_")):
        p = tma_operand(g, val, rows, rs and name == "a")
        if isinstance(p, TmaOperand):
            kind = TMA_KINDS[p.dtype]
            if kind == "tf32" and not g.stage.acc.tf32:  # float32 accuracy: three TF32 products
                kind = "tf32x3"
            if kind == "tf32" and not p.kmajor and not layout_gemm.TF32_STAGE and not (rs and name == "a"):  # no transpose:
                # gather it K-major (tf32x3 copies it raw into a staging tile the split transposes; TF32 too
                # with EMBER_WGMMA_TF32_STAGE=1, both operands then copied: tf32_staged)
                p = "MN-major float32 (TF32 wgmma has no transpose)"
            else:
                feeds.append((kind, p))
                continue
        if not gather:
            return f"operand {name}: {p}"
        kind = gather_kind(g, val)
        if kind is None:
            return f"operand {name}: {val.dtype.name} values without TF32 allowed ({p})"
        feeds.append((kind, GatherOperand(val, rows, kind, extent, vector=vector_chunks(g, val, kind))))
    (ka, pa), (kb, pb) = feeds
    if ka != kb:
        return f"mixed operand types ({ka} x {kb})"
    if ka == "tf32" and any(isinstance(p, TmaOperand) and not p.kmajor for p in ((pb,) if rs else (pa, pb))) and \
            not all(isinstance(p, TmaOperand) and not isinstance(p, Im2colOperand) for p in (pa, pb)):
        return "an MN-major TF32 copy beside a gathered operand (the staging ring takes copies only)"
    return ka, pa, pb


def tf32_staged(plan) -> bool:
    """TF32 (not tf32x3) with an MN-major operand: both copied raw into the staging ring, the
    producer writing them K-major (rounded to TF32; transposed where MN-major) into the slots."""
    kind, pa, pb = plan
    return kind == "tf32" and any(isinstance(p, TmaOperand) and not p.kmajor for p in (pa, pb))


def emit_producer(w, g: Contraction, feeds: list, maps: dict, stages: int, BK: int, slot_bytes: int,
                  group: int, tile_origin, producers: int = 1, unroll: int = 1, lo_off: int = 0,
                  lag: int = 0, cpasync: bool = False, hoist: bool = False, raw: frozenset = frozenset(), S: int = 1) -> None:
    """The producer warpgroups' loop over this block's tiles and k slices. feeds: [(operand, smem
    offset in the slot, rows per tile, origin variable)]; maps: operand -> its tensor map's index.
    producers: warpgroups that gather (128 threads each); unroll: gathered chunks per thread in
    flight (their loads issued together). lo_off > 0: tf32x3, the lo tiles that far after the hi
    ones; TMA tiles are split `lag` slices after their copies were issued. cpasync: whole-chunk
    gathers issue `cp.async` copies (see CPASYNC). hoist: whole-chunk gathers split their rows
    once a tile (codegen/cuda_wgmma_gather.py). raw: ids of tf32x3 operands written as landed (float32, no
    lo tile: the RS form's A, split in the consumers' registers, codegen/cuda_wgmma_rs.py). S: blocks of a cluster
    sharing each tile, this one's k slices kb_..ke_ (knob `cluster`, codegen/cuda_wgmma_kcluster.py)."""
    I = w.IDX
    gathers = [f for f in feeds if isinstance(f[0], GatherOperand)]
    tmas = [f for f in feeds if isinstance(f[0], TmaOperand)]
    split = bool(lo_off and tmas)
    lead = "pt_ == 0"
    threads = 128 * producers
    w.emit(2, "const int pt_ = threadIdx.x;")
    w.emit(2, f"if ({f'pt_ < {threads}' if gathers or split else lead}) {{")
    for p, _, _, _ in tmas:
        w.emit(3, f"const unsigned char* map{maps[id(p)]}_ = em_tma_ + {128 * maps[id(p)]};")
        w.emit(3, f"if ({lead}) em_tma_acquire(map{maps[id(p)]}_);")
    w.emit(3, "int kit_ = 0;  // slices issued so far, over all of this block's tiles: the ring's position")
    if split:
        w.emit(3, "int ksp_ = 0;  // slices split so far")
    mcast = getattr(w, "mcast", False)  # (knob mcast: pair tiles, b's half multicast, codegen/cuda_wgmma_mcast.py)
    w.emit(3, pair_loop(I) if mcast else tile_loop(I, S, getattr(w, "streamk", False)))
    tile_origin(w, g, group, 4)
    tables = {id(p): i for i, (p, _, R, _) in enumerate(gathers) if hoist and hoistable(p, R, threads)}
    for p, _, R, origin in gathers:
        if id(p) in tables:
            emit_row_table(w, p, tables[id(p)], R, origin, threads, 4)
    w.emit(4, "for (int it = kb_; it < ke_; ++it, ++kit_) {")
    w.emit(5, f"const int s = kit_ % {stages}; const em_u32 ph = (kit_ / {stages}) & 1;")
    w.emit(5, f"em_mbar_wait(bars_ + 8 * ({stages} + s), ph ^ 1);")
    w.emit(5, f"const em_u32 full_ = bars_ + 8 * s, slot_ = ring_ + s * {slot_bytes};")
    splits = [f for f in tmas if id(f[0]) not in raw]  # (TMA tiles the producer splits: not the RS form's raw A)
    staging = _staging(splits, 2 * lo_off) if split else {}
    if tmas:
        nbytes = sum(R * SWIZZLE_BYTES for _, _, R, _ in tmas)
        w.emit(5, f"if ({lead}) {{")
        if split:  # the copy completes on `landed`; `full` waits for the split
            w.emit(6, f"const em_u32 landed_ = bars_ + 8 * ({2 * stages} + s);")
        w.emit(6, f"em_mbar_expect_tx({'landed_' if split else 'full_'}, {nbytes});")
        for p, off, R, origin in tmas:
            _emit_tma(w, p, f"slot_ + {staging.get(id(p), off)}", f"map{maps[id(p)]}_", R, origin, BK, 6,
                      "landed_" if split else "full_", g, mc=mcast and origin == "bn_")
        w.emit(5, "}")
    # (tf32x3: only gathers written raw — the RS form's A — may be copies; the split then waits for them)
    cpasync = cpasync and all(not lo_off or id(p) in raw for p, _, _, _ in gathers) and \
        any(p.vector is not None for p, _, _, _ in gathers)
    if cpasync:  # which way this thread filled the slot: asynchronous copies, ordinary stores, or both
        w.emit(5, "bool ca_ = false, st_ = false;")
    for p, off, R, origin in gathers:
        _emit_gather(w, g, p, f"slot_ + {off}", R, origin, BK, 5, threads, unroll, 0 if id(p) in raw else lo_off, cpasync,
                     tables.get(id(p)))
    if split:
        if cpasync:  # (one group of copies a slice: slice ksp_'s are done once at most `lag` later ones are in flight)
            w.emit(5, 'asm volatile("cp.async.commit_group;" ::: "memory");')
        w.emit(5, f"if (kit_ + 1 - ksp_ > {lag}) {{")
        if cpasync:
            w.emit(6, f'asm volatile("cp.async.wait_group {lag};" ::: "memory");')
        _emit_split(w, splits, stages, slot_bytes, lo_off, threads, 6, staging, BK)
        w.emit(5, "}")
    elif cpasync:  # copies only: the barrier counts this thread's arrival once they have landed
        w.emit(5, 'if (ca_ && !st_) asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(full_) : "memory");')
        w.emit(5, "else {")  # (stores too, an operand's pointer misaligned: wait for the copies, then as below)
        w.emit(6, 'if (ca_) asm volatile("cp.async.wait_all;" ::: "memory");')
        w.emit(6, 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')
        w.emit(6, "em_mbar_arrive(full_);")
        w.emit(5, "}")
    elif gathers:  # the threads' ordinary stores, made visible to the tensor cores' async reads
        w.emit(5, 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')
        w.emit(5, "em_mbar_arrive(full_);")
    w.emit(4, "}")
    w.emit(3, "}")
    if split:  # the slices still unsplit
        if cpasync:
            w.emit(3, 'asm volatile("cp.async.wait_all;" ::: "memory");')
        w.emit(3, "while (ksp_ < kit_) {")
        _emit_split(w, splits, stages, slot_bytes, lo_off, threads, 4, staging, BK)
        w.emit(3, "}")
    if cpasync:  # (no thread leaves with its copies still in flight)
        w.emit(3, 'asm volatile("cp.async.wait_all;" ::: "memory");')
    w.emit(2, "}")


def _staging(tmas: list, stage0: int) -> dict:
    """id(operand) -> its staging tile's offset in the slot, for the MN-major ones."""
    out, at = {}, stage0
    for p, _, R, _ in tmas:
        if not p.kmajor:
            out[id(p)] = at
            at += R * SWIZZLE_BYTES
    return out


def _emit_split(w, tmas: list, stages: int, slot_bytes: int, lo_off: int, threads: int, ind: int,
                staging: dict, BK: int) -> None:
    """Slice ksp_'s TMA tiles, landed raw, rewritten as TF32 hi (in place) and lo (lo_off after),
    then released to the consumers (the gathered tiles of the slice were written at issue). An
    MN-major tile, landed in its staging tile, is transposed into the K-major hi and lo tiles."""
    w.emit(ind, f"const int s2_ = ksp_ % {stages};")
    w.emit(ind, f"em_mbar_wait(bars_ + 8 * ({2 * stages} + s2_), (ksp_ / {stages}) & 1);")
    w.emit(ind, f"const em_u32 sl_ = ring_ + s2_ * {slot_bytes};")
    for p, off, R, _ in tmas:
        src = f"sl_ + {staging[id(p)]}" if id(p) in staging else f"sl_ + {off}"
        split_tile(w, p, f"sl_ + {off}", src, R, lo_off, threads, ind, BK)
    w.emit(ind, 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')
    w.emit(ind, "em_mbar_arrive(bars_ + 8 * s2_);")
    w.emit(ind, "++ksp_;")


def split_tile(w, p: TmaOperand, dst: str, src: str, R: int, lo_off: int, threads: int, ind: int, BK: int) -> None:
    """One operand's R x BK tile, landed raw at `src`, written as TF32 hi at `dst` (K-major,
    swizzled) and lo lo_off bytes after: chunk for chunk where the copy was K-major (in place when
    src is dst), transposed from 32-row staging chunks where it was MN-major."""
    chunks = R * SWIZZLE_BYTES // 16
    # lo_off 0: plain TF32 (tf32_staged), one tile rounded to TF32, no lo
    store, copy = ("em_split3_store", "em_split3_copy") if lo_off else ("em_tf32_store", "em_tf32_copy")
    if p.kmajor:
        w.emit(ind, f"for (int q_ = pt_; q_ < {chunks}; q_ += {threads}) "
                    f"{copy}({src} + q_ * 16, {dst} + q_ * 16, {lo_off});")
        return
    # chunk q_: row r (consecutive threads, consecutive rows: one staging row per k, no bank
    # conflicts), k 4c..4c+3; staging row k of 32-row chunk j holds rows 32j.. as 16-byte
    # chunks swizzled by k % 8
    w.emit(ind, f"for (int q_ = pt_; q_ < {chunks}; q_ += {threads}) {{")
    w.emit(ind + 1, f"const int r_ = q_ % {R}, c_ = q_ / {R};")
    w.emit(ind + 1, f"const em_u32 src_ = {src} + (r_ >> 5) * {BK * SWIZZLE_BYTES} + (r_ & 3) * 4;")
    w.emit(ind + 1, "float x_[4];")
    w.emit(ind + 1, "#pragma unroll\n" + "  " * (ind + 1) + "for (int e = 0; e < 4; ++e) {")
    w.emit(ind + 2, "const int k_ = 4 * c_ + e;")
    w.emit(ind + 2, 'asm volatile("ld.shared.f32 %0, [%1];" : "=f"(x_[e]) : '
                    f'"r"(src_ + k_ * {SWIZZLE_BYTES} + ((((r_ & 31) >> 2) ^ (k_ & 7)) << 4)) : "memory");')
    w.emit(ind + 1, "}")
    w.emit(ind + 1, f"{store}({dst} + r_ * {SWIZZLE_BYTES} + ((c_ ^ (r_ & 7)) << 4), {lo_off}, x_);")
    w.emit(ind, "}")


def full_count(feeds: list, producers: int = 1, split: bool = False) -> int:
    """Arrivals that complete a slot's `full` barrier (split: the copies complete `landed`, and
    every producer thread arrives after splitting)."""
    gathers = any(isinstance(f[0], GatherOperand) for f in feeds)
    tmas = any(isinstance(f[0], TmaOperand) for f in feeds)
    if split and tmas:
        return 128 * producers
    return (128 * producers if gathers else 0) + (1 if tmas else 0)


def _emit_tma(w, p: TmaOperand, dst: str, mp: str, R: int, origin: str, BK: int, ind: int,
              bar: str = "full_", g: Contraction | None = None, mc: bool = False) -> None:
    """One operand's tile of slice `it` copied by TMA. mc: this block's half of it (rows, or 128-byte column chunks,
    by its rank mr_ in the pair) multicast to both blocks of the cluster (knob mcast)."""
    if isinstance(p, Im2colOperand):  # (a conv's input: codegen/cuda_wgmma_im2col.py)
        emit_im2col_copy(w, g, p, dst, mp, R, origin, BK, ind, bar)
        return
    bc = [f"(int){v}" for v in p.batch_vars]
    fn = f"em_tma{p.rank}" + ("_mc" if mc else "")
    kc = [f"it * {BK}"]
    if p.k_inner:  # k as two runs: the slice's place in each (a slice never straddles them)
        kc = [f"(it * {BK}) % {p.k_inner}"]
        bc = [f"(it * {BK}) / {p.k_inner}"] + bc
    if p.kmajor:
        rc = [f"(int)({origin} * {R})"]
        if p.r_inner:  # rows as two runs: the tile's first row in each (after k's outer run)
            rc = [f"(int)({origin} * {R}) % {p.r_inner}"]
            bc.insert(1 if p.k_inner else 0, f"(int)({origin} * {R}) / {p.r_inner}")
        if mc:  # (rows [mr_ R / 2, (mr_ + 1) R / 2) of the tile, at their place in it)
            rc = [f"{rc[0]} + mr_ * {R // 2}"] + rc[1:]
            dst = f"{dst} + mr_ * {R // 2 * SWIZZLE_BYTES}"
        coords = kc + rc + bc
        w.emit(ind, f"{fn}({dst}, {mp}, {bar}, {', '.join(coords)});")
    else:  # chunks of 128 bytes of rows (64 half / 32 float32 rows), BK k-rows each
        cr = SWIZZLE_BYTES // p.dtype.itemsize
        coords = [f"(int)({origin} * {R}) + {cr} * j"] + kc + bc
        if p.r_inner:  # rows as two runs: each chunk's place in its run, and the run (after k's outer run)
            rr = f"((int)({origin} * {R}) + {cr} * j)"
            bc.insert(1 if p.k_inner else 0, f"{rr} / {p.r_inner}")
            coords = [f"{rr} % {p.r_inner}"] + kc + bc
        js = f"int j = mr_ * {R // cr // 2}; j < (mr_ + 1) * {R // cr // 2}" if mc else f"int j = 0; j < {R // cr}"
        w.emit(ind, f"for ({js}; ++j) {fn}({dst} + j * {BK * 128}, {mp}, {bar}, {', '.join(coords)});")


def _emit_gather(w, g: Contraction, p: GatherOperand, dst: str, R: int, origin: str, BK: int, ind: int,
                 threads: int = 128, unroll: int = 1, lo_off: int = 0, cpasync: bool = False,
                 table: int | None = None) -> None:
    """The producer threads fill one operand's R x BK tile: 16-byte chunks of EPC consecutive k
    of one row, consecutive threads on consecutive rows; zeros past the rows' or k's end (tf32x3:
    the hi tile and the lo tile lo_off bytes after it). An operand read as whole chunks loads each
    with one vector load where its buffer is 16-byte aligned (a block-uniform branch)."""
    EPC = 16 // (4 if p.kind in ("tf32", "tf32x3") else 2)  # elements per 16-byte chunk
    if p.vector is None:
        _emit_scalar_gather(w, g, p, dst, R, origin, BK, ind, threads, unroll, lo_off, EPC)
        return
    w.emit(ind, f"if ((((em_u64){p.vector.args[0]}) & 15) == 0) {{")
    if table is not None:  # (its rows split once a tile: codegen/cuda_wgmma_gather.py)
        emit_hoisted_gather(w, g, p, table, dst, R, BK, ind + 1, threads, EPC, lo_off, cpasync)
    elif cpasync:
        _emit_cpasync_gather(w, g, p, dst, R, origin, BK, ind + 1, threads, EPC)
    else:
        _emit_vector_gather(w, g, p, dst, R, origin, BK, ind + 1, threads, unroll, EPC, lo_off)
    w.emit(ind, "} else {")
    if cpasync:
        w.emit(ind + 1, "st_ = true;")
    _emit_scalar_gather(w, g, p, dst, R, origin, BK, ind + 1, threads, unroll, lo_off, EPC)
    w.emit(ind, "}")


def _chunk_loop(w, R: int, BK: int, EPC: int, origin: str, threads: int, unroll: int, ind: int) -> None:
    """Opens the loop over the tile's chunks: chunk cc_ of row rr_ (global row gr_) per iteration."""
    if unroll > 1:
        w.emit(ind, f"#pragma unroll {unroll}")
    w.emit(ind, f"for (int q_ = pt_; q_ < {R * (BK // EPC)}; q_ += {threads}) {{")
    w.emit(ind + 1, f"const int rr_ = q_ % {R}, cc_ = q_ / {R};")
    w.emit(ind + 1, f"const {w.IDX} gr_ = {origin} * {R} + rr_;")


def _emit_scalar_gather(w, g: Contraction, p: GatherOperand, dst: str, R: int, origin: str, BK: int, ind: int,
                        threads: int, unroll: int, lo_off: int, EPC: int) -> None:
    """Each chunk's elements evaluated one by one (the operand's value expression), rounded, stored."""
    I = w.IDX
    _chunk_loop(w, R, BK, EPC, origin, threads, unroll, ind)
    w.emit(ind + 1, f"float x_[{EPC}];")
    w.emit(ind + 1, f"#pragma unroll\n{'  ' * (ind + 1)}for (int e = 0; e < {EPC}; ++e) x_[e] = 0.f;")
    w.emit(ind + 1, f"if (gr_ < {p.extent}) {{")
    w.decompose("gr_", p.rows, ind + 2)
    w.emit(ind + 2, f"#pragma unroll\n{'  ' * (ind + 2)}for (int e = 0; e < {EPC}; ++e) {{")
    w.emit(ind + 3, f"const {I} gk_ = ({I})it * {BK} + cc_ * {EPC} + e;")
    w.emit(ind + 3, "if (gk_ < K_) {")
    w.decompose("gk_", g.k, ind + 4)
    w.emitted_groups = {}
    env = w.values([p.val], ind + 4)
    w.emit(ind + 4, f"x_[e] = (float){env[p.val]};")
    w.emit(ind + 3, "}")
    w.emit(ind + 2, "}")
    w.emit(ind + 1, "}")
    at = f"{dst} + rr_ * {SWIZZLE_BYTES} + ((cc_ ^ (rr_ & 7)) << 4)"
    if p.kind == "tf32x3" and lo_off:
        w.emit(ind + 1, f"em_split3_store({at}, {lo_off}, x_);")
        w.emit(ind, "}")
        return
    if p.kind == "tf32x3":  # raw (the RS form's A: split in registers)
        words = [f"__float_as_uint(x_[{i}])" for i in range(4)]
    elif p.kind == "tf32":
        words = [f"em_wg_tf32(x_[{i}])" for i in range(4)]
    else:
        words = [f"((em_u32){ROUND[p.kind]}(x_[{2 * i}]) | ((em_u32){ROUND[p.kind]}(x_[{2 * i + 1}]) << 16))"
                 for i in range(4)]
    w.emit(ind + 1, f"em_st_shared_v4({at}, {', '.join(words)});")
    w.emit(ind, "}")


def _emit_vector_gather(w, g: Contraction, p: GatherOperand, dst: str, R: int, origin: str, BK: int, ind: int,
                        threads: int, unroll: int, EPC: int, lo_off: int = 0) -> None:
    """The tile as whole 16-byte chunks: one guarded vector load per chunk (zeros past the rows' or
    k's end, and where the guard fails: a conv's padding), stored raw into the swizzled layout.
    Each thread issues a batch of loads (knob `gunroll`, default LOAD_BATCH) before it stores any:
    the shared-memory stores are `asm volatile` with a memory clobber, so a load after one cannot
    be hoisted above it, and one chunk at a time the producer waits out an L2 latency per chunk."""
    buf, index, valid = p.vector.args
    total = R * (BK // EPC)
    per = -(-total // threads)
    U = max(1, min(per, unroll if unroll > 1 else LOAD_BATCH))
    ragged = total % (threads * U) != 0
    I = w.IDX
    w.emit(ind, f"for (int q0_ = pt_; q0_ < {total}; q0_ += {threads * U}) {{")
    w.emit(ind + 1, f"uint4 xs_[{U}];")
    w.emit(ind + 1, f"#pragma unroll\n{'  ' * (ind + 1)}for (int u_ = 0; u_ < {U}; ++u_) {{")
    w.emit(ind + 2, f"const int q_ = q0_ + u_ * {threads};")
    w.emit(ind + 2, "xs_[u_] = make_uint4(0u, 0u, 0u, 0u);")
    w.emit(ind + 2, f"const int rr_ = q_ % {R}, cc_ = q_ / {R};")
    w.emit(ind + 2, f"const {I} gr_ = {origin} * {R} + rr_;")
    w.emit(ind + 2, f"const {I} gk_ = ({I})it * {BK} + cc_ * {EPC};")
    cond = f"gr_ < {p.extent} && gk_ < K_" + (f" && q_ < {total}" if ragged else "")
    w.emit(ind + 2, f"if ({cond}) {{")
    w.decompose("gr_", p.rows, ind + 3)
    w.decompose("gk_", g.k, ind + 3)
    load = f"xs_[u_] = *reinterpret_cast<const uint4*>({buf} + ({w.idx(index)}));"
    w.emit(ind + 3, load if valid is sm.ONE else f"if ({w.idx(valid)}) {load}")
    w.emit(ind + 2, "}")
    w.emit(ind + 1, "}")
    w.emit(ind + 1, f"#pragma unroll\n{'  ' * (ind + 1)}for (int u_ = 0; u_ < {U}; ++u_) {{")
    w.emit(ind + 2, f"const int q_ = q0_ + u_ * {threads};")
    if ragged:
        w.emit(ind + 2, f"if (q_ >= {total}) break;")
    w.emit(ind + 2, f"const int rr_ = q_ % {R}, cc_ = q_ / {R};")
    w.emit(ind + 2, "const uint4 x_ = xs_[u_];")
    at = f"{dst} + rr_ * {SWIZZLE_BYTES} + ((cc_ ^ (rr_ & 7)) << 4)"
    if p.kind == "tf32x3" and lo_off:  # hi and lo TF32 parts of the four floats
        w.emit(ind + 2, "const float xf_[4] = {__uint_as_float(x_.x), __uint_as_float(x_.y), "
                        "__uint_as_float(x_.z), __uint_as_float(x_.w)};")
        w.emit(ind + 2, f"em_split3_store({at}, {lo_off}, xf_);")
    else:  # 16-bit, or float32 raw (TF32 wgmma reads the top 19 bits, as of a TMA-landed tile)
        w.emit(ind + 2, f"em_st_shared_v4({at}, x_.x, x_.y, x_.z, x_.w);")
    w.emit(ind + 1, "}")
    w.emit(ind, "}")


# Knob `cpasync` (whole-chunk gathers; tf32x3 only for the RS form's raw A, the rest split in registers): each chunk
# is one `cp.async.cg` of 16 bytes straight into the swizzled slot (zero-filled where its guard
# fails: src-size 0), and the thread's arrival on `full` is `cp.async.mbarrier.arrive.noinc`,
# made when its copies land. The producer then moves on to the next slot at once, so several
# slices' loads are in flight per thread where the register gather waits out each slice's
# latency before its stores. The consumers fence the async proxy after their wait (the copies are
# generic-proxy writes that wgmma reads through the async proxy). Off by default: timed slower on real
# KernelBench 63 (8.37 -> 9.40 ms, bench/results/gpu-session37-2026-11-28/d/). Beside tf32x3's split (a TMA-fed B), the
# copies of a slice are one commit group and the split that releases the slot `lag` slices later waits for it.
# (EMBER_WGMMA_CPASYNC=1: on wherever it applies).
CPASYNC_HELPER = r"""__device__ __forceinline__ void em_cp_async16(em_u32 dst, const void* src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
"""


def _emit_cpasync_gather(w, g: Contraction, p: GatherOperand, dst: str, R: int, origin: str, BK: int, ind: int,
                         threads: int, EPC: int) -> None:
    """The tile's chunks as asynchronous 16-byte copies, zero-filled past the rows' or k's end and
    where the guard fails (the source pointer then the buffer's start: nothing is read)."""
    buf, index, valid = p.vector.args
    I = w.IDX
    w.emit(ind, "ca_ = true;")
    _chunk_loop(w, R, BK, EPC, origin, threads, 1, ind)
    w.emit(ind + 1, f"const {I} gk_ = ({I})it * {BK} + cc_ * {EPC};")
    w.emit(ind + 1, f"const void* src_ = {buf};")
    w.emit(ind + 1, "bool ok_ = false;")
    w.emit(ind + 1, f"if (gr_ < {p.extent} && gk_ < K_) {{")
    w.decompose("gr_", p.rows, ind + 2)
    w.decompose("gk_", g.k, ind + 2)
    w.emit(ind + 2, "ok_ = true;" if valid is sm.ONE else f"ok_ = ({w.idx(valid)});")
    w.emit(ind + 2, f"if (ok_) src_ = {buf} + ({w.idx(index)});")
    w.emit(ind + 1, "}")
    w.emit(ind + 1, f"em_cp_async16({dst} + rr_ * {SWIZZLE_BYTES} + ((cc_ ^ (rr_ & 7)) << 4), src_, ok_);")
    w.emit(ind, "}")
