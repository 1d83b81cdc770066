"""The `wgmma` kernel's epilogue: the fused store expression (bias, activation, residual, cast) of
each accumulator, written either straight from the registers or through shared memory.

A consumer warpgroup holds its 64 x BN float32 accumulators in the `wgmma` fragment layout: a
warp's lanes own 8 rows x 4 column pairs, so a store from the registers writes 16 bytes of each of
8 rows per instruction (half of each 32-byte sector), and a fused residual is read the same way.
For memory-bound products (a ResNet 1x1 conv over 64 channels into 256, whose 51 MB output and
51 MB residual dwarf its 64-deep k loop; BERT's and a Llama prefill's projections at 768-2048 deep)
that costs more than the math. The staged epilogue writes the fragments to shared memory (the
ring, idle once the k loop is done), and then each warp walks whole rows: consecutive lanes on
consecutive column pairs, 128 contiguous bytes per store instruction and per residual load.

A knob (`sepi`), off by default: measured on the H100 as whole models in one run
(bench/results/gpu-session22-2026-11-26/f/), staged against the register path, ResNet-50 b32 bf16
3.92 / 3.88 against 3.46 ms, the Llama-1B prefill 4.51 / 4.47 against 4.33, BERT-base 3.23 / 3.23
against 3.36; the models' linear layers alone within noise either way (`e/gemm-tiles-sepi.json`).
The search offers it (search/space.py); it applies where the ring is free after the k loop (not
`persistent`: the producer fills the ring with the next tile's slices during the epilogue) and
holds every consumer's tile. What the measurement suggests is left: the
fragment writes' 2-way bank conflicts, the extra barrier, and the lost overlap of one warpgroup's
stores with the other's math; a TMA store of a bf16 tile would halve the shared-memory traffic.
"""
from __future__ import annotations

import os

from .. import symbolic as sm
from ..kernel import ir
from ..kernel.structure import Canon, UnsupportedKernel
from .clike import _lanes_contiguous

PAD = 4  # floats of padding per staged row (spreads a fragment store's 8 rows over the banks)


def staged_epilogue(cfg: dict, BM: int, BN: int, ring_bytes: int, unpaired: bool = False) -> bool:
    """Whether the epilogue goes through shared memory: knob `sepi`, where the ring is free after the
    k loop (not persistent: no next tile's slices land there) and holds every consumer's tile; each
    block stages in its own ring, so two blocks per SM (`occupancy` 2) may too (since the thirty-ninth
    session; untimed there). Off by default, but on where the register path would write half sectors
    (`unpaired`, unpaired_columns) or knob `swide` walks 16 bytes a lane. Knob `sown`: in a buffer of its
    own after the ring (own_epilogue_bytes), persistent or not, and staged whatever `sepi` says."""
    if cfg.get("sown"):
        return True
    fits = (BM // 64) * 64 * (BN + PAD) * 4 <= ring_bytes
    free = not cfg.get("persistent", False)
    default = unpaired or os.environ.get("EMBER_WGMMA_SEPI", "0") == "1"  # (=1: staged by default, for A/Bs)
    return fits and free and bool(cfg.get("sepi", default))


def own_epilogue_bytes(consumers: int, BN: int, half: bool = False) -> int:
    """Knob `sown`'s buffer: each consumer warpgroup's 64 staged rows of BN + PAD floats (`shalf`: BN + HPAD
    16-bit outputs)."""
    return consumers * 64 * ((BN + HPAD) * 2 if half else (BN + PAD) * 4)


HPAD = 8  # 16-bit outputs of padding per half-staged row (16 bytes: rows stay 16-byte aligned)
# shared memory `sown` leaves free below the limit: the static barriers count against it too, and ring and buffer
# together could fill the rest exactly
SOWN_SLACK = 1024


def half_staging(w, c: Canon, g, cfg: dict) -> bool:
    """Knob `shalf` (with `sown`): the tile staged as its 16-bit outputs, not float32 accumulators — the store's
    value computed from each fragment in the registers (a plain cast of the accumulator, or an epilogue: bias,
    activation, residual), rounded to the output's type and staged, so each lane then copies 16 bytes of it
    straight to memory; half the shared memory (a 128 x 256 tile's buffer fits beside 3 stages). Raises where
    it does not apply."""
    if not cfg.get("shalf"):
        return False
    buf = w.k.buffer(c.store.buffer)
    if not (cfg.get("sown") and c.store.value.dtype == buf.dtype and half_stageable(c, g)):
        raise UnsupportedKernel("wgmma knob shalf: with sown, a store of the accumulator (or an epilogue of it) into a "
                                "16-bit output contiguous along whole runs of 8 columns")
    return True


def half_stageable(c: Canon, g) -> bool:
    """Whether the store takes knob `shalf`: a 16-bit float value of the accumulator, contiguous along whole runs of
    8 columns (the output buffer's type is checked where the kernel is rendered) — of the innermost column, or, for a
    plain cast (copied as it lies: no value computed at column + 1), of the columns flattened (an NCHW conv's 28 x 28
    pixels: merged_runs)."""
    v, acc = c.store.value, _acc_val(c, g)
    var, ext = g.n[-1]
    if acc is None or v.dtype.itemsize != 2 or not v.dtype.is_float:
        return False
    return (ext.is_const and ext.value % 8 == 0 and _lanes_contiguous(c.store.index, var, 8)) or (
        plain_cast(c, g) and merged_runs(c, g, 8))


def merged_runs(c: Canon, g, vec: int) -> bool:
    """Whether the output is contiguous along the column variables flattened (each one's stride the product of the
    extents inside it), their product a multiple of `vec`, and the rest of the index a multiple of `vec`: a run of
    `vec` flat columns starting at a multiple of `vec` is one aligned vector in memory."""
    if len(g.n) < 2 or not all(e.is_const for _, e in g.n):
        return False
    total = 1
    for _, e in g.n:
        total *= e.value
    if total % vec:
        return False
    idx, inner = c.store.index, 1
    for var, ext in reversed(g.n):
        x = sm.var(var, 0, None)
        if sm.substitute(idx, {var: x + 1}) - sm.substitute(idx, {var: x}) is not sm.const(inner):
            return False
        inner *= ext.value
    rest = sm.substitute(idx, {var: sm.const(0) for var, _ in g.n})
    return (rest % vec) is sm.ZERO


def plain_cast(c: Canon, g) -> bool:
    """Whether the store's value is the accumulator cast to the output's type, nothing else."""
    v = c.store.value
    return v.op == "cast" and v.args[0] is _acc_val(c, g)


def row_loads(c: Canon, g) -> bool:
    """Whether the store's value loads anything that varies with the row (a residual), not only with the column (a
    bias, a per-channel scale)."""
    rows = {var for var, _ in g.m}
    return any(v.op == "load" and rows & set(sm.free_vars(v.args[1]) if len(v.args) > 1 else ())
               for v in ir.val_toposort([c.store.value]))


def unpaired_columns(c: Canon, g, pair: bool) -> bool:
    """Whether the output is contiguous along its columns but no two columns pair into one store (an
    odd extent: an implicit-GEMM conv into NCHW whose columns are 65 x 65 pixels), so the register
    epilogue writes half sectors. Measured on the H100 (KernelBench level-2 91 and 5, phase-form
    transposed convs into NCHW), staged against the register epilogue: 5.14 -> 4.46 and 8.02 ->
    6.73 ms (bench/results/gpu-session24-2026-11-26/d/); one column per lane instead of the staged
    walk's column pairs measured 3-4% slower (`e/`)."""
    x = sm.var(g.n[-1][0], 0, None)
    step = sm.substitute(c.store.index, {g.n[-1][0]: x + 1}) - sm.substitute(c.store.index, {g.n[-1][0]: x})
    return not pair and step is sm.ONE


def _emit_fragments(w, BN: int, P: int, pair_t: str, base: str, value: str) -> None:
    """A consumer warpgroup's accumulator fragments into its staged rows (P elements a row of `base`): each lane's
    column pairs as one `pair_t` store of `value` ({a}, {b}: the pair's accumulators); then the warpgroup's barrier."""
    w.emit(2, "{")
    w.emit(3, "const int wq_ = tid_ / 32, l_ = tid_ % 32;")
    w.emit(3, "#pragma unroll\n      for (int h = 0; h < 2; ++h) {")
    pair = value.format(a="d_[4 * j + 2 * h]", b="d_[4 * j + 2 * h + 1]")
    w.emit(4, f"#pragma unroll\n        for (int j = 0; j < {BN // 8}; ++j) *reinterpret_cast<{pair_t}*>("
              f"&{base}[(wq_ * 16 + l_ / 4 + 8 * h) * {P} + 8 * j + 2 * (l_ % 4)]) = {pair};")
    w.emit(3, "}")
    w.emit(2, "}")
    w.emit(2, 'asm volatile("bar.sync %0, 128;" :: "r"(3 + cw_) : "memory");')  # (this warpgroup's tile staged)


def _emit_half_staged(w, c: Canon, g, BM: int, BN: int, own: int) -> None:
    """Knob `shalf`: each warpgroup's fragments converted to the 16-bit output (a plain cast) or their store's value
    computed in the registers (an epilogue: _emit_computed_fragments) and staged in its own rows (after its previous
    tile's walk), then its rows walked 8 outputs (16 bytes) a lane, copied as they lie."""
    I, P = w.IDX, BN + HPAD
    narrow = "em_f2h" if w.k.buffer(c.store.buffer).dtype.name == "float16" else "em_f2bf"
    w.emit(2, 'asm volatile("bar.sync %0, 128;" :: "r"(3 + cw_) : "memory");')
    w.emit(2, f"unsigned short* const sh_ = reinterpret_cast<unsigned short*>(em_dyn_smem + (ring_ - "
              f"(em_u32)__cvta_generic_to_shared(em_dyn_smem)) + {own}) + cw_ * {64 * P};")
    if plain_cast(c, g):
        _emit_fragments(w, BN, P, "unsigned", "sh_", "(unsigned){n}({a}) | ((unsigned){n}({b}) << 16)".replace("{n}", narrow))
    else:
        _emit_computed_fragments(w, c, g, BM, BN, P)
    cv = BN // 8
    w.emit(2, f"for (int i_ = tid_; i_ < {64 * cv}; i_ += 128) {{")
    w.emit(3, f"const int r_ = i_ / {cv}, cv_ = i_ % {cv};")
    w.emit(3, f"const {I} gm_ = bm_ * {BM} + cw_ * 64 + r_;")
    w.emit(3, f"const {I} gn_ = bn_ * {BN} + 8 * cv_;")
    w.emit(3, "if (gm_ < M_ && gn_ < N_) {")  # (N_ is a multiple of 8: a run is all in or all out)
    w.decompose("gm_", g.m, 4)
    w.decompose("gn_", g.n, 4)
    w.emit(4, f"*reinterpret_cast<uint4*>(&{c.store.buffer}[{w.idx(c.store.index)}]) = "
              f"*reinterpret_cast<const uint4*>(&sh_[r_ * {P} + 8 * cv_]);")
    w.emit(3, "}")
    w.emit(2, "}")


def _emit_computed_fragments(w, c: Canon, g, BM: int, BN: int, P: int) -> None:
    """Knob `shalf` over an epilogue: the register epilogue's column pairs (their loads in the fragment layout, as
    emit_register_epilogue reads them) written as packed 16-bit pairs into the staged rows instead of memory; rows
    and columns past the output left unwritten (the walk never copies them). Then the warpgroup's barrier."""
    def pair(ind: int) -> None:
        w.emit(ind, f"const {w.IDX} gn_ = bn_ * {BN} + 8 * j + 2 * (l_ % 4);")
        w.emit(ind, "if (gn_ < N_) {")
        w.decompose("gn_", g.n, ind + 1)
        w.emit(ind + 1, "const float accl_ = d_[4 * j + 2 * h], acch_ = d_[4 * j + 2 * h + 1];")
        _pair_store(w, c, g, ind + 1, dest=f"sh_[(wq_ * 16 + l_ / 4 + 8 * h) * {P} + 8 * j + 2 * (l_ % 4)]")
        w.emit(ind, "}")
    w.emit(2, "{")
    _fragment_rows(w, g, BM, BN, 3, pair)
    w.emit(2, "}")
    w.emit(2, 'asm volatile("bar.sync %0, 128;" :: "r"(3 + cw_) : "memory");')  # (this warpgroup's tile staged)


def _fragment_rows(w, g, BM: int, BN: int, ind: int, body) -> None:
    """The loops over a consumer's accumulator fragments: rows gm_ (decomposed; past the output skipped), column groups
    j; body(indent) emits each j's column pair (d_[4 j + 2 h], d_[4 j + 2 h + 1])."""
    w.emit(ind, "const int wq_ = tid_ / 32, l_ = tid_ % 32;")
    w.emit(ind, "#pragma unroll\n" + "  " * ind + "for (int h = 0; h < 2; ++h) {")
    w.emit(ind + 1, f"const {w.IDX} gm_ = bm_ * {BM} + cw_ * 64 + wq_ * 16 + l_ / 4 + 8 * h;")
    w.emit(ind + 1, "if (gm_ < M_) {")
    w.decompose("gm_", g.m, ind + 2)
    w.emit(ind + 2, "#pragma unroll\n" + "  " * (ind + 2) + f"for (int j = 0; j < {BN // 8}; ++j) {{")
    body(ind + 3)
    w.emit(ind + 2, "}")
    w.emit(ind + 1, "}")
    w.emit(ind, "}")


def emit_staged_epilogue(w, c: Canon, g, BM: int, BN: int, pair: bool, wide: int = 0, own: int | None = None,
                         half: bool = False) -> None:
    """Fragments to shared memory (after every consumer's last wgmma: the ring is then free), then
    rows walked with consecutive lanes on consecutive column pairs (two stores each where they do not
    pair), or, `wide` (wide_lanes), on consecutive runs of that many columns: one 16-byte store each.
    own: knob `sown`, the buffer that many bytes past the ring's start — each warpgroup's rows its own, so
    only the warpgroup waits (its previous tile's walk done) before writing them."""
    if half:
        _emit_half_staged(w, c, g, BM, BN, own)
        return
    P = BN + PAD
    NC = BM // 64
    if own is None:
        w.emit(2, f'asm volatile("bar.sync 2, {128 * NC};" ::: "memory");')  # (every consumer is past its k loop)
    else:  # (this warpgroup's walk of its previous tile is done before its rows are overwritten)
        w.emit(2, 'asm volatile("bar.sync %0, 128;" :: "r"(3 + cw_) : "memory");')
    w.emit(2, f"float* const se_ = reinterpret_cast<float*>(em_dyn_smem + (ring_ - (em_u32)__cvta_generic_to_shared("
              f"em_dyn_smem)){f' + {own}' if own else ''}) + cw_ * {64 * P};")
    _emit_fragments(w, BN, P, "float2", "se_", "make_float2({a}, {b})")
    if wide:
        _emit_wide_walk(w, c, g, BM, BN, wide, int(w.cfg.get("swunroll", 4)))
        return
    emit_pair_walk(w, c, g, BM, BN, pair, "tid_", 64, 128, "cw_ * 64", "se_")


def emit_pair_walk(w, c: Canon, g, BM: int, BN: int, pair: bool, thread: str, rows: int, threads: int, row0: str,
                   base: str) -> None:
    """`rows` staged rows of the tile (from tile row `row0`; at `base` + (r - row0) * (BN + PAD)) walked by `threads`
    threads (this one `thread`), consecutive threads on consecutive column pairs, each through the store's value."""
    I, P, cp = w.IDX, BN + PAD, BN // 2
    w.emit(2, f"for (int i_ = {thread}; i_ < {rows * cp}; i_ += {threads}) {{")
    w.emit(3, f"const int r_ = i_ / {cp}, cp_ = i_ % {cp};")
    w.emit(3, f"const {I} gm_ = bm_ * {BM} + {row0} + r_;")
    w.emit(3, "if (gm_ < M_) {")
    w.decompose("gm_", g.m, 4)
    w.emit(4, f"const float2 v_ = *reinterpret_cast<const float2*>(&{base}[r_ * {P} + 2 * cp_]);")
    _emit_column_pair(w, c, g, f"bn_ * {BN} + 2 * cp_", "v_.x", "v_.y", "r ? v_.y : v_.x", pair, 4)
    w.emit(3, "}")
    w.emit(2, "}")


def swide_default(c: Canon) -> bool:
    """Knob `swide`'s default: on where the store's value loads anything (EMBER_WGMMA_SWIDE=0: off)."""
    return os.environ.get("EMBER_WGMMA_SWIDE", "1") == "1" and epilogue_loads(c)


def wide_lanes(w, c: Canon, g, cfg: dict) -> int:
    """Knob `swide` (the staged epilogue's walk 16 bytes of output per lane): the lanes a thread stores
    at once (8 bf16 / f16, 4 float32), 0 where off or where the output is not contiguous over whole
    runs of that many columns. A column pair per lane spends about 45 instructions per pair on a
    BatchNorm + residual epilogue (ResNet-50's residual 1x1 convs: issue-bound, ncu in
    bench/results/gpu-session38-2026-11-28/h/); 16 bytes a lane load the per-column operands and the
    residual as vectors too (the writer's vector-load groups). On by default where the store's value
    loads anything (ResNet-50 bf16 2.35 -> 1.93 ms, BERT 3.03 -> 2.70 on an H200,
    bench/results/gpu-session39-2026-11-28/); EMBER_WGMMA_SWIDE=0 turns it off."""
    if not cfg.get("swide", swide_default(c)) or _acc_val(c, g) is None:
        return 0
    var, ext = g.n[-1]
    item = w.k.buffer(c.store.buffer).dtype.itemsize
    vec = 16 // item if item in (2, 4) else 0
    ok = vec and ext.is_const and ext.value % vec == 0 and _lanes_contiguous(c.store.index, var, vec)
    return vec if ok else 0


def _emit_wide_walk(w, c: Canon, g, BM: int, BN: int, vec: int, unroll: int = 4) -> None:
    """The staged tile's rows walked `vec` columns per lane: the accumulators as float4 reads of the
    staged row, the store's value per lane (its loads grouped into vector loads where contiguous),
    one 16-byte store. `unroll` runs per step, each in its own scope, all computed before any is
    stored: a load is not held behind an earlier run's store (NVRTC keeps loads below stores through
    a cast pointer), so the steps' loads are in flight together."""
    I, P = w.IDX, BN + PAD
    var = g.n[-1][0]
    acc = _acc_val(c, g)
    cv = BN // vec
    steps = 64 * cv // 128
    U = next(u for u in (unroll, 4, 2, 1) if u >= 1 and steps % u == 0)
    buf = w.k.buffer(c.store.buffer)
    st_t = _storage_type(buf.dtype)
    # the lanes' contiguous loads registered as vector loads (codegen/cuda.py's groups, 16 bytes at most):
    # float32 operands of a 16-bit output as two groups of 4 lanes, 16-bit ones as one of 8
    if vec == 8:
        w.lanes([c.store.value], var, 4)
        w.lanes([ir.substitute(c.store.value, {var: sm.var(var, 0, None) + 4}, {})], var, 4)
    w.lanes([c.store.value], var, vec)
    w.emit(2, f"for (int i0_ = tid_; i0_ < {64 * cv}; i0_ += {128 * U}) {{")
    w.emit(3, f"uint4 {', '.join(f'o{u}_' for u in range(U))};")
    w.emit(3, f"{I} {', '.join(f'x{u}_ = -1' for u in range(U))};")
    for u in range(U):
        w.emit(3, "{")
        w.emit(4, f"const int i_ = i0_ + {128 * u}, r_ = i_ / {cv}, cv_ = i_ % {cv};")
        w.emit(4, f"const {I} gm_ = bm_ * {BM} + cw_ * 64 + r_;")
        w.emit(4, f"const {I} gn_ = bn_ * {BN} + {vec} * cv_;")
        w.emit(4, "if (gm_ < M_ && gn_ < N_) {")  # (N_ is a multiple of vec: a run is all in or all out)
        w.decompose("gm_", g.m, 5)
        w.decompose("gn_", g.n, 5)
        w.emit(5, f"float sv_[{vec}];")
        for q in range(vec // 4):
            w.emit(5, f"*reinterpret_cast<float4*>(&sv_[{4 * q}]) = *reinterpret_cast<const float4*>(&se_[r_ * {P} + {vec} * cv_ + {4 * q}]);")
        lanes = [ir.substitute(c.store.value, {var: sm.var(var, 0, None) + l} if l else {},
                               {acc: ir.Val("acc", (f"sv_[{l}]",), acc.dtype)}) for l in range(vec)]
        w.emitted_groups = {}
        w._ind = 5
        env = w.vr.vals(lanes, 5)
        for l, v in enumerate(lanes):
            w.emit(5, f"reinterpret_cast<{st_t}*>(&o{u}_)[{l}] = {w.vr.store(c.store.buffer, env[v])};")
        w.emit(5, f"x{u}_ = {w.idx(c.store.index)};")
        w.emit(4, "}")
        w.emit(3, "}")
    for u in range(U):
        w.emit(3, f"if (x{u}_ >= 0) *reinterpret_cast<uint4*>(&{c.store.buffer}[x{u}_]) = o{u}_;")
    w.emit(2, "}")


def emit_register_epilogue(w, c: Canon, g, BM: int, BN: int, pair: bool) -> None:
    """The store's value per accumulator register, from the fragment layout."""
    _fragment_rows(w, g, BM, BN, 2, lambda ind: _emit_column_pair(
        w, c, g, f"bn_ * {BN} + 8 * j + 2 * (l_ % 4)", "d_[4 * j + 2 * h]", "d_[4 * j + 2 * h + 1]", "d_[4 * j + 2 * h + r]",
        pair, ind))


def pair_loads_default() -> bool:
    """Knob `epair`'s default (EMBER_WGMMA_EPAIR): the pair store's loads of adjacent columns (a
    per-column scale and shift, a residual) as one 8- or 4-byte load each instead of two. ResNet-50's
    residual 1x1 convs spent 68% of their epilogue's issue slots waiting on L1 (ncu, H200,
    bench/results/gpu-session38-2026-11-28/h/): six scalar loads per column pair, four of them the
    BatchNorm's per-column parameters. Unmeasured: off until timed."""
    return os.environ.get("EMBER_WGMMA_EPAIR", "0") == "1"


def epilogue_loads(c: Canon) -> bool:
    """Whether the store's value reads anything (a per-column scale or bias, a residual): where the
    epilogue load knobs (`epair`, `swide`) apply."""
    return any(v.op == "load" for v in ir.val_toposort([c.store.value]))


def _acc_val(c: Canon, g):
    return next((x for x in ir.val_toposort([c.store.value]) if x.op == "acc" and x.args[0] == g.stage.acc.name), None)


def pairable(w, c: Canon, g) -> bool:
    """Whether an accumulator pair (columns n, n+1 of one row) is one aligned 2-element store: the
    innermost n variable has an even extent and the store walks it contiguously."""
    var, ext = g.n[-1]
    item = w.k.buffer(c.store.buffer).dtype.itemsize
    return (ext.is_const and ext.value % 2 == 0 and item in (2, 4) and _acc_val(c, g) is not None
            and _lanes_contiguous(c.store.index, var, 2))


def _pair_store(w, c: Canon, g, ind: int, dest: str | None = None) -> None:
    """The store of columns n (accl_) and n+1 (acch_): the store's value twice, the second with the
    innermost n variable advanced by one, packed into one 4- or 8-byte write (to `dest`: knob `shalf`'s
    staged row, else the output)."""
    var = g.n[-1][0]
    acc = _acc_val(c, g)
    lo = ir.substitute(c.store.value, {}, {acc: ir.Val("acc", ("accl_",), acc.dtype)})
    hi = ir.substitute(c.store.value, {var: sm.var(var, 0, None) + 1}, {acc: ir.Val("acc", ("acch_",), acc.dtype)})
    if w.cfg.get("epair", pair_loads_default()):  # a load of columns n and n + 1 that are adjacent: one vector load
        w.lanes([lo], var, 2)  # (registers the pairs with the writer's vector-load hook, codegen/cuda.py)
    w.emitted_groups = {}
    w._ind = ind
    env = w.vr.vals([lo, hi], ind)
    buf = w.k.buffer(c.store.buffer)
    st_t = _storage_type(buf.dtype)
    raw_t = "unsigned int" if buf.dtype.itemsize == 2 else "uint2"
    w.emit(ind, f"{raw_t} o_;")
    w.emit(ind, f"reinterpret_cast<{st_t}*>(&o_)[0] = {w.vr.store(c.store.buffer, env[lo])};")
    w.emit(ind, f"reinterpret_cast<{st_t}*>(&o_)[1] = {w.vr.store(c.store.buffer, env[hi])};")
    w.emit(ind, f"*reinterpret_cast<{raw_t}*>(&{dest or f'{c.store.buffer}[{w.idx(c.store.index)}]'}) = o_;")


def _emit_column_pair(w, c: Canon, g, col: str, lo: str, hi: str, one: str, pair: bool, ind: int) -> None:
    """The store of columns `col` and col + 1 of row gm_ (values `lo`, `hi`; `one`: column col + r's
    value): one 2-element store where pairable, else each column on its own (both guarded by the
    column count)."""
    I = w.IDX
    if pair:  # adjacent columns: one 2-element store
        w.emit(ind, f"const {I} gn_ = {col};")
        w.emit(ind, "if (gn_ < N_) {")
        w.decompose("gn_", g.n, ind + 1)
        w.emit(ind + 1, f"const float accl_ = {lo}, acch_ = {hi};")
        _pair_store(w, c, g, ind + 1)
        w.emit(ind, "}")
        return
    w.emit(ind, "#pragma unroll\n" + "  " * ind + "for (int r = 0; r < 2; ++r) {")
    w.emit(ind + 1, f"const {I} gn_ = {col} + r;")
    w.emit(ind + 1, "if (gn_ < N_) {")
    w.decompose("gn_", g.n, ind + 2)
    w.emit(ind + 2, f"const float {g.stage.acc.name} = {one};")
    w.store(c.store, None, 1, ind + 2)
    w.emit(ind + 1, "}")
    w.emit(ind, "}")


def _storage_type(d) -> str:
    return {"float16": "unsigned short", "bfloat16": "unsigned short"}.get(d.name, d.c_name)
