"""The `decode` mode: a kernel in online-softmax form (kernel/online.py) with few query rows (one new
token per sequence, the heads of a GQA group) as flash-decoding: the keys split over the blocks of a
thread-block cluster and over the warps of each block, partial (max, sum, row) triples combined.

* the query rows are every row loop the keys and values do not depend on (a GQA group's heads and
  the new tokens): R <= 16 of them, one 16-row tensor-core tile (rows past R are padding), so each
  key and value row is read from memory once for the whole group;
* block `rank` of a cluster of C takes keys [rank * chunk, (rank + 1) * chunk); its W warps take
  tiles of BN keys in turn, each warp with its own two-slot `cp.async` ring (warp-local waits, no
  block barrier in the loop): S = q k^T and O += P v by `mma.sync` as in flash mode, the kernel's
  own X per score, the online recurrence per row; with knob `kt` (the default; groups of <= 8
  rows) the products run keys-major, the keys as the mma's rows (codegen/cuda_flash_kt.py);
* the warps' triples are combined in shared memory, the blocks' through distributed shared memory
  (each block of the cluster finishing a slice of the outputs), then 1 / l and the store's
  expression. The q tile and each warp's first key tile load together.

Measured (docs/attention.md, thirty-first session): the key stream runs at the copy rate; what is
left at 8K keys is a fixed ~4.8 us a kernel (its start and its combines), not the loop. Knobs that
measured slower stay available: `bulk` / `tma` (a tile's copies as bulk or tensor-map copies),
`affine`; knob `trace` stamps each block's phases for bench/decode_trace.py.
"""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel import ir
from ..kernel.online import KEY, OnlineForm, key_limit, replace
from ..kernel.structure import UnsupportedKernel
from .cuda_pdl import has_pdl, wait_line
from .cuda_flash_early import (contiguous_rows, early_keys_applicable, emit_l2_ahead, key_strides, owns_wait,
                               prefetch_keys_before_wait)
from .cuda_wgmma import WGMMA_HELPERS
from .cuda_flash_direct import direct_bytes, emit_direct_combine
from .cuda_flash_gather import emit_gather_combine, emit_gather_init, gather_bytes
from .cuda_flash_steal import (emit_steal_counter, emit_steal_loop_head, emit_steal_next, emit_steal_range, emit_steal_shift,
                               first_tile, steal_applicable)
from .cuda_flash_kt import (emit_bulk_setup, emit_bulk_tile, emit_bulk_wait, emit_kt_offsets, emit_online_kt, emit_pv_kt,
                            emit_qt_fragments, emit_scores_kt, emit_tma_tile, emit_triples_kt, score_key_row, tma_spec)
from .cuda_flash import (HALF, _operand, emit_key_floor, emit_online_step, emit_pv_mma, emit_q_fragments, emit_scores_mma,
                         q_copied, stage_q_chunk)

ROWS_MAX = 16  # query rows: one tensor-core tile
TRACE_POINTS = ("start", "waited", "q_ready", "keys_done", "block_combined", "cluster_synced", "end")  # knob `trace`
SPLITS = (1, 2, 4, 8, 16, 32, 64)  # knob `splits`: clusters per group of query rows (32, 64: megakernel tasks)


def workspace(groups: sm.Expr, splits: int, R: int, DV: int) -> tuple[int, int]:
    """(bytes of the launch's workspace, float offset of the partials in it): with splits > 1 one
    arrival counter per group (zero; each group's last block resets its own), then per group and
    split R rows of DV partial sums and the rows' maxima and sums (float32). None of it when
    splits is 1. The group count's bound sizes it (a named batch with a range)."""
    if splits == 1:
        return 0, 0
    n = groups.value if groups.is_const else groups.vmax
    if n is None or n == float("inf") or n <= 0:
        raise UnsupportedKernel(f"decode splits: {groups} groups of rows has no bound to size the workspace by")
    head = (int(n) + 31) // 32 * 32
    return 4 * (head + int(n) * splits * R * (DV + 2)), head


def smem_limit(target) -> int:
    return int(getattr(target, "smem_per_block", 0) or 227 * 1024)


def decode_smem(W: int, BN: int, D: int, DV: int, S: int = 2) -> int:
    return 16 * D * 2 + max(W * S * BN * (D + DV) * 2, 4 * (W * 16 * (DV + 2) + 16 * (DV + 2)))


def query_vars(f: OnlineForm) -> list:
    """The row loops k and v do not depend on (the rows that share every key)."""
    kv = {v for x in (f.k, f.v) for v in _vars_of(x)}
    return [(v, e) for v, e in f.rows if v not in kv]


def _vars_of(v: ir.Val) -> set:
    out: set = set()
    for x in ir.val_toposort([v]):
        if x.op == "load" and not isinstance(x.args[1], ir.Val):
            out |= sm.free_vars(x.args[1]) | sm.free_vars(x.args[2])
    return out


def decode_applicable(k: ir.Kernel, f: OnlineForm) -> str | None:
    """None when `decode` mode can render `k`; else why not."""
    if f.q is None or f.k is None or f.depth is None:
        return "decode mode needs the scores' own contraction q . k"
    if f.q.dtype.name not in HALF or f.v.dtype != f.q.dtype:
        return "decode mode reads bf16/f16 keys and values"
    qv = query_vars(f)
    R = sm.prod([e for _, e in qv])
    if not R.is_const or R.value > ROWS_MAX:
        return f"{R} query rows (at most {ROWS_MAX}: flash mode tiles more)"
    for e, what in ((f.depth, "the score depth"), (f.out_extent, "the value width")):
        if not e.is_const or e.value not in (64, 128):
            return f"{what} must be 64 or 128"
    if f.q.dtype != f.k.dtype:
        return "q and k of different dtypes"
    for v, fast, what in ((f.k, f.depth_var, "k"), (f.v, f.out_var, "v")):
        why = _operand(v, fast, what)
        if why:
            return why
    return None


def render_decode(w, f: OnlineForm) -> sm.Expr:
    """Emit the body of kernel `w.k` in decode mode; returns the grid (blocks)."""
    why = decode_applicable(w.k, f)
    if why:
        raise UnsupportedKernel(f"{w.k.name}: {why}")
    cfg = w.cfg
    W, BN, C = int(cfg.get("warps", 4)), int(cfg.get("BN", 32)), int(cfg.get("cluster", 1))
    P = int(cfg.get("splits", 1))  # clusters per group of rows, combined through global memory
    if P not in SPLITS:
        raise UnsupportedKernel(f"decode splits={P} ({', '.join(map(str, SPLITS))})")
    S = int(cfg.get("stages", 2))  # ring slots per warp: S - 1 tiles load ahead of the one computed
    if S not in (2, 3, 4, 5, 6):  # (5 and 6: deeper rings where few warps hold an SM's shared memory)
        raise UnsupportedKernel(f"decode stages={S} (2 to 6)")
    if BN not in (16, 32, 64):
        raise UnsupportedKernel(f"decode BN={BN} (16, 32 or 64)")
    D, DV = f.depth.value, f.out_extent.value
    qv = query_vars(f)
    groups = [(v, e) for v, e in f.rows if (v, e) not in qv]
    R = sm.prod([e for _, e in qv]).value
    # knob `kt`: keys-major products (codegen/cuda_flash_kt.py) for groups of at most 8 rows
    kt = bool(cfg.get("kt")) and R <= 8
    I, e = w.IDX, w.emit
    ty = HALF[f.q.dtype.name]
    c = repr(float(f.c)) + "f"
    # knob `bulk` (keys-major, K and V rows contiguous): each key row one bulk copy on the slot's
    # mbarrier instead of per-lane 16-byte copies; the ring's rows padded by 16 bytes, not swizzled.
    # ~248 instructions a 16-key tile instead of ~343, but measured 2x slower (gpu-session31-2026-11-27/g/:
    # B 1 x 8K D 128 38% of copy bandwidth against 70%): a 256-byte copy per row is too many small
    # bulk operations; a tensor-map copy of the whole tile with a 128-byte swizzle is the form to try
    bulk = kt and bool(cfg.get("bulk")) and contiguous_rows(f.k, f.depth_var, D) and contiguous_rows(f.v, f.out_var, DV)
    pk, pv = (D + 8, DV + 8) if bulk else (D, DV)  # ring row pitches (elements)
    slot = BN * (pk + pv)  # elements of one ring slot
    # knob `tma` (keys-major): each tile's K and V as tensor-map copies of 64-column boxes, 128-byte
    # swizzled (the layout ldmatrix reads without conflicts), issued by one lane on the slot's mbarrier
    specs = None
    if kt and not bulk and cfg.get("tma"):
        names = [b.name for b in w.k.buffers]
        kb = f.keys.value if f.keys.is_const else f.keys.vmax
        kb = int(kb) if kb is not None and kb != float("inf") else None
        specs = [tma_spec(v, fast, groups, kb, width, names.index(v.args[0]), BN)
                 for v, fast, width in ((f.k, f.depth_var, D), (f.v, f.out_var, DV))]
        if not all(specs):  # (the signature already takes the maps: codegen/cuda.py)
            raise UnsupportedKernel(f"{w.k.name}: decode tma: K or V is not an affine 16-byte-strided tensor with bounded keys")
    if specs:
        w.tma = specs
    mbar = bulk or bool(specs)  # (a ring on mbarriers: bulk or tensor-map copies)
    if mbar:  # (em_mbar_init / _expect_tx / _wait, em_tma*)
        w.lines.insert(0, WGMMA_HELPERS)
    ring = W * S * slot * 2  # bytes
    comb = 4 * (W * 16 * (DV + 2) + 16 * (DV + 2))
    w.smem_bytes = 16 * D * 2 + max(ring, comb)
    w.workspace, ws_head = workspace(sm.prod([x for _, x in groups]), P, R, DV)
    # knob `trace`: thread 0 of each block stamps %globaltimer at TRACE_POINTS into the workspace
    # after the partials (bench/decode_trace.py reads them): where a layer's time goes
    trace = bool(cfg.get("trace"))
    tr_off = (w.workspace + 7) // 8 * 8
    if trace:
        ng = sm.prod([x for _, x in groups])
        nb = ng.value if ng.is_const else ng.vmax
        if nb is None or nb == float("inf"):
            raise UnsupportedKernel(f"{w.k.name}: decode trace: the group count has no bound")
        w.workspace = tr_off + int(nb) * P * C * len(TRACE_POINTS) * 8

    def stamp(i: int, ind: int = 1):
        if trace:
            e(ind, f"if (threadIdx.x == 0) {{ unsigned long long t_; asm volatile(\"mov.u64 %0, %globaltimer;\" : \"=l\"(t_)); "
                   f"reinterpret_cast<unsigned long long*>(reinterpret_cast<char*>(em_ws_) + {tr_off})"
                   f"[blockIdx.x * {len(TRACE_POINTS)} + {i}] = t_; }}")
    # knob `gather` (a cluster without splits): the other blocks' triples gathered into rank 0, which
    # alone combines them (codegen/cuda_flash_gather.py): one cluster barrier fewer at the end
    gather = C > 1 and P == 1 and bool(cfg.get("gather"))
    # `gather` 2 (keys-major): each warp's partial straight into rank 0 (codegen/cuda_flash_direct.py)
    direct = gather and kt and int(cfg.get("gather")) == 2
    g_off = (w.smem_bytes + 15) // 16 * 16
    if gather:
        w.smem_bytes = g_off + (direct_bytes(C, W, R, DV) if direct else gather_bytes(C, R, DV))
    if w.smem_bytes > smem_limit(w.target):
        raise UnsupportedKernel(f"decode: {w.smem_bytes} bytes of shared memory for {W} warps x {BN} keys")
    e(1, f"extern __shared__ __align__({1024 if specs else 128}) unsigned char em_dyn_smem[];")
    e(1, "unsigned short* Qs = reinterpret_cast<unsigned short*>(em_dyn_smem);")
    e(1, f"unsigned short* ring_ = Qs + {16 * D};")
    e(1, f"float* wm_ = reinterpret_cast<float*>(Qs + {16 * D});  /* after the loop: [W][16] maxima, sums, rows */")
    e(1, f"float* wl_ = wm_ + {W * 16};")
    e(1, f"float* wo_ = wl_ + {W * 16};")
    e(1, f"float* bm_ = wo_ + {W * 16 * DV};  /* the block's combined triple */")
    e(1, "float* bl_ = bm_ + 16;")
    e(1, "float* bo_ = bl_ + 16;")
    e(1, "const int tid_ = threadIdx.x, warp_ = tid_ >> 5, lane_ = tid_ & 31;")
    e(1, f"const unsigned rank_ = {'em_cluster_rank()' if C > 1 else '0u'};")
    # knob `steal` (codegen/cuda_flash_steal.py): the cluster's tiles one pool interleaved over its
    # warps (warp g: g, g + C*W, ...; "static": all of them so), later tiles from rank 0's counter
    pooled = steal_applicable(cfg, C, P, kt, mbar) and not direct
    steal = pooled and cfg.get("steal") != "static"
    if steal:
        emit_steal_counter(w, C, W, S)
    if gather:  # (shared memory only: before the wait, off the layer's path)
        emit_gather_init(w, C, 32 * W, arrivals=C * 32 * W if direct else None, release=steal)
    # the grid-dependency wait (this renderer's where owns_wait: codegen/cuda.py): here, after the
    # L2 prefetch (knob `kv_prefetch`), or after the first key tiles (knob `early_keys`,
    # codegen/cuda_flash_early.py); `pdl_late` 2: the successor triggered after the key loop instead
    early = bool(cfg.get("early_keys")) and has_pdl(w.target) and early_keys_applicable(f, cfg)
    late = int(cfg.get("pdl_late", 0) or 0)
    late_at_keys = late in (2, 3)  # (3: each warp triggers once its last tiles are asked for)
    wait = wait_line(cfg, trigger_here=not late_at_keys)

    def place_wait():
        stamp(0)
        e(1, wait)
        stamp(1)
    if owns_wait(cfg) and not cfg.get("kv_prefetch") and not early:
        place_wait()
    e(1, f"{I} blk_ = blockIdx.x / {C};")
    if P > 1:
        e(1, f"const unsigned split_ = (unsigned)(blk_ % {P}); blk_ /= {P};")
        e(1, f"const {I} grp_ = blk_;  /* this group's partials and arrival counter in em_ws_ */")
    w.decompose("blk_", groups, 1)
    e(1, f"const {I} nk_ = {w.idx(f.keys)};")
    lim = key_limit(f)
    last = {v: ext - 1 for v, ext in qv}
    if lim is not None and f.query in last:
        e(1, f"{I} kend_ = ({w.idx(last[f.query])}) + ({w.idx(lim[0])}) + 1;")
        e(1, "kend_ = kend_ < nk_ ? kend_ : nk_;")
    else:
        e(1, f"const {I} kend_ = nk_;")
    part = f"(split_ * {C}u + rank_)" if P > 1 else "rank_"
    if cfg.get("kv_prefetch") and has_pdl(w.target):
        prefetch_keys_before_wait(w, f, query_vars(f), part, C * P, BN)
    # keys [kbeg_, kend_) split evenly over the cluster, from the rows' first key (a left-padding
    # mask's start): the same split and tiles wherever the sequence starts in the cache
    emit_key_floor(w, f, _row_decomposition(qv, "r_"), R, "true", 1)
    if pooled:
        emit_steal_range(w, C, W, BN)
    else:
        e(1, f"const {I} chunk_ = (kend_ - kbeg_ + {C * P * BN - 1}) / {C * P * BN} * {BN};")
        e(1, f"const {I} k0_ = kbeg_ + {part} * chunk_, k1_ = (k0_ + chunk_ < kend_ ? k0_ + chunk_ : kend_);")
        e(1, f"const {I} ntk_ = (k1_ > k0_ ? (k1_ - k0_ + {BN - 1}) / {BN} : 0);  /* this block's key tiles */")

    def at_row(r: str, ind: int):  # the query row variables of tile row r
        for var, expr in _row_decomposition(qv, r):
            e(ind, f"const {I} {var} = {expr};")

    strides = [key_strides(v, fast) for v, fast in ((f.k, f.depth_var), (f.v, f.out_var))]
    affine = bool(cfg.get("affine")) and D == DV and all(strides)
    def lane_offsets():
        if not affine:
            return
        # knob `affine` (K and V indexed affinely in the key and the column, constant strides, D = DV):
        # each lane's chunks of a tile — their shared-memory offsets, source offsets from the tile's
        # first key and key rows — computed once here, not per tile (the compiler rebuilt them from
        # the thread index at every tile: ~150 of the loop's ~390 instructions at D 128)
        n = BN * D // 8 // 32
        for i in range(n):
            e(1, f"const int ro{i}_ = (lane_ + {32 * i}) / {D // 8}, co{i}_ = (lane_ + {32 * i}) % {D // 8};")
            e(1, f"const int do{i}_ = em_opaque(ro{i}_ * {D} + ((co{i}_ ^ (ro{i}_ & 7)) << 3));")
            for j, (a, b) in enumerate(strides):
                op = "em_opaque" if I == "int" else ""
                e(1, f"const {I} so{j}{i}_ = {op}(({I})ro{i}_ * {a} + ({I})co{i}_ * {8 * b});")

    kv = sm.var("kr_", 0, None)
    copied = q_copied(f)
    if not copied or early:  # (q computed with loads of its own, or after the wait: the first key tiles are asked for before it)
        e(1, f"unsigned short* my_ = ring_ + warp_ * {S * slot};")
        lane_offsets()
        if mbar:
            emit_bulk_setup(w, W, S, slot, 1, zero=bulk, maps=len(specs or []))
        early_loads = len(w.lines)
        if early:  # (the tiles are inserted at early_loads: before this wait)
            if int(cfg.get("l2_ahead", 0) or 0) > 0 and not pooled:  # (the block's rows past its first tiles)
                emit_l2_ahead(w, f, qv, f"k0_ + {(S - 1) * W * BN}", int(cfg["l2_ahead"]))
            place_wait()
    # q: R rows of 16-byte chunks into a 16-row tile (padding rows zero), then A fragments per warp
    e(1, f"for (int c_ = tid_; c_ < {16 * D // 8}; c_ += {32 * W}) {{")
    e(2, f"const int r_ = c_ / {D // 8}, ch_ = c_ % {D // 8};")
    e(2, f"unsigned short* dst_ = Qs + r_ * {D} + ((ch_ ^ (r_ & 7)) << 3);")
    e(2, f"if (r_ < {R}) {{")
    at_row("r_", 3)
    dvar = sm.var("ch_", 0, None) * 8
    if copied:
        e(3, f"em_cp16(dst_, {f.q.args[0]} + {w.idx(sm.substitute(f.q.args[1], {f.depth_var: dvar}))}, true);")
    else:  # q's own prologue (a rotary embedding), computed here
        e(3, "uint4 pk_ = make_uint4(0, 0, 0, 0);")
        stage_q_chunk(w, f, 3)
        e(3, "*reinterpret_cast<uint4*>(dst_) = pk_;")
    e(2, "} else { *reinterpret_cast<uint4*>(dst_) = make_uint4(0, 0, 0, 0); }")
    e(1, "}")
    if copied:  # (q's own cp.async group, the oldest: the wait below leaves the S - 1 key tiles in flight)
        e(1, "em_cp_commit();")
    if copied and not early:
        e(1, f"unsigned short* my_ = ring_ + warp_ * {S * slot};")
        lane_offsets()
        if mbar:
            emit_bulk_setup(w, W, S, slot, 1, zero=bulk, maps=len(specs or []))
    # the first S - 1 key tiles load while q arrives (inserted here below), or while it is computed
    load_first = early_loads if early or not copied else len(w.lines)
    # (bulk: q's cp.async group is the only one; early: q's the newest; else the S - 1 key tiles' groups stay in flight)
    e(1, f'asm volatile("cp.async.wait_group {0 if mbar or (early and copied) else S - 1};" ::: "memory"); '
         '__syncthreads();  /* q is in shared memory */')
    stamp(2)
    if kt:
        emit_qt_fragments(w, D, 1)
        emit_kt_offsets(w, D, DV, 1, (pk, pv) if bulk else (64, 64) if specs else None, swizzle=not bulk)
    else:
        emit_q_fragments(w, D, "lane_ & 15", 1)

    def load_tile(t: str, s_: str, ind: int):
        """Warp-local copy of key tile `t` into ring slot `s_`."""
        if bulk:
            emit_bulk_tile(w, f, t, s_, ind, BN, S, slot, pk, pv, D, DV)
            return
        if specs:
            emit_tma_tile(w, t, s_, ind, BN, S, slot, specs, D, DV)
            return
        if affine:
            e(ind, f"const {I} kt0_ = k0_ + ({t}) * {BN};")
            e(ind, f"unsigned short* dt_ = my_ + ({s_}) * {slot};")
            for j, v in enumerate((f.k, f.v)):
                fast = (f.depth_var, f.out_var)[j]
                base = w.idx(sm.substitute(v.args[1], {KEY: sm.var("kt0_", 0, None), fast: sm.const(0)}))
                e(ind, f"const auto* st{j}_ = {v.args[0]} + ({base});")
            for i in range(BN * D // 8 // 32):
                e(ind, f"{{ const bool in_ = kt0_ + ro{i}_ < k1_;")
                e(ind + 1, f"em_cp16(dt_ + do{i}_, st0_ + (in_ ? so0{i}_ : 0), in_);")
                e(ind + 1, f"em_cp16(dt_ + {BN * D} + do{i}_, st1_ + (in_ ? so1{i}_ : 0), in_); }}")
            return
        for v, width, off, fast in ((f.k, D, 0, f.depth_var), (f.v, DV, BN * D, f.out_var)):
            e(ind, f"for (int c_ = lane_; c_ < {BN * width // 8}; c_ += 32) {{")
            e(ind + 1, f"const int r_ = c_ / {width // 8}, ch_ = c_ % {width // 8};")
            e(ind + 1, f"const {I} kr_ = k0_ + ({t}) * {BN} + r_;")
            e(ind + 1, f"em_cp16(my_ + ({s_}) * {slot} + {off} + r_ * {width} + ((ch_ ^ (r_ & 7)) << 3), "
                       f"{v.args[0]} + (kr_ < k1_ ? {w.idx(sm.substitute(v.args[1], {KEY: kv, fast: dvar}))} : 0), kr_ < k1_);")
            e(ind, "}")

    e(1, "float m_[2] = {-INFINITY, -INFINITY}, l_[2] = {0.f, 0.f};")
    no = DV // 16 if kt else DV // 8  # output accumulators: 16 columns each keys-major, 8 row-major
    e(1, f"float o_[{no}][4];")
    e(1, "#pragma unroll")
    e(1, f"for (int n = 0; n < {no}; ++n) o_[n][0] = o_[n][1] = o_[n][2] = o_[n][3] = 0.f;")
    e(1, "const int qrow_ = lane_ >> 2;")
    head, tail = w.lines[:load_first], w.lines[load_first:]
    w.lines = head
    for i in range(S - 1):
        e(1, f"if ({first_tile(pooled, i, C, W)} < ntk_) {{")
        load_tile(first_tile(pooled, i, C, W), str(i), 2)
        e(1, "}")
        e(1, "em_cp_commit();")
    w.lines += tail
    # knob `pipe` (keys-major, cp.async ring of >= 3 slots): the next tile's score products issued
    # before this tile's softmax and value products, so the two dependent chains interleave. Measured
    # (gpu-session32-2026-11-27/h/, i/): the B 1 x 8K D 128 loop 10.2 -> 9.8 us, 16 layers 77.8 -> 78.9%,
    # elsewhere within noise or slower (D 64 over 8 warps): off, searched
    pipe = kt and not mbar and S >= 3 and bool(cfg.get("pipe"))
    chains = 2 if int(cfg.get("kt") or 0) == 2 else 1
    if pipe:  # (tile 0's scores before the loop; the ring's S - 1 groups: tile 0 landed at S - 2 pending)
        e(1, f"float s_[{BN // 16}][4];")
        e(1, f'asm volatile("cp.async.wait_group {S - 2};" ::: "memory"); __syncwarp();')
        e(1, "{")
        e(2, "const unsigned short* Kt = my_;")
        emit_scores_kt(w, D, BN, ty, 2, chains=chains, pitch=pk, declare=False)
        e(1, "}")
    e(1, "int it_ = 0;")
    if steal:
        emit_steal_loop_head(w, S, C, W)
        e(1, "for (; t_ < ntk_; ++it_) {")
        emit_steal_next(w, 2)
    else:  # ("static": the warp's tiles C * W apart over the cluster's pool)
        step = C * W if pooled else W
        e(1, f"for ({I} t_ = {'gw_' if pooled else 'warp_'}; t_ < ntk_; t_ += {step}, ++it_) {{")
    nxt = "nt_" if steal else f"t_ + {(S - 1) * (C * W if pooled else W)}"
    e(2, f"if ({nxt} < ntk_) {{")
    load_tile(nxt, f"(it_ + {S - 1}) % {S}", 3)
    e(2, "}" if late != 3 else "} else { EM_PDL_TRIGGER(); }  /* (pdl_late 3: this warp's last tiles are in flight) */")
    if mbar:
        emit_bulk_wait(w, S, 2)
    elif pipe:  # (tile t_ + W has landed: its scores now, computed from whatever the slot holds past the last)
        e(2, "em_cp_commit();")
        e(2, f'asm volatile("cp.async.wait_group {S - 2};" ::: "memory"); __syncwarp();  /* tile t_ + {W} has landed */')
        e(2, f"float sn_[{BN // 16}][4];")
        e(2, "{")
        e(3, f"const unsigned short* Kt = my_ + ((it_ + 1) % {S}) * {slot};")
        emit_scores_kt(w, D, BN, ty, 3, chains=chains, pitch=pk, name="sn_", declare=False)
        e(2, "}")
    else:
        e(2, "em_cp_commit();")
        e(2, f'asm volatile("cp.async.wait_group {S - 1};" ::: "memory"); __syncwarp();  /* tile t_ has landed */')
    e(2, f"const int slot_ = it_ % {S};")
    e(2, f"const unsigned short* Kt = my_ + slot_ * {slot};")
    e(2, f"const unsigned short* Vt = Kt + {BN * pk};")
    if kt:
        if not pipe:
            emit_scores_kt(w, D, BN, ty, 2, chains=chains, pitch=64 if specs else pk, hi=BN * 64 if specs else 64)
    else:
        emit_scores_mma(w, D, BN, ty, 2)
    bufs = {b.name for b in w.k.buffers}
    loc = [x for x in ir.val_toposort([f.x]) if x.op == "load" and x.args[0] not in bufs]
    X = replace(f.x, {ld: f.score for ld in loc})
    # knob `half_rows` (off: measured within noise on the H100, 16.9 -> 17.0 us a layer at 8K keys,
    # bench/results/gpu-session28-2026-11-27/a/): with at most 8 rows, rows 8-15 of the tile are
    # padding — their X and online step not computed
    halves = 1 if R <= 8 and cfg.get("half_rows") and not kt else 2
    e(2, "#pragma unroll")
    e(2, f"for (int n = 0; n < {BN // 16 if kt else BN // 8}; ++n) {{")
    e(3, "#pragma unroll")
    e(3, f"for (int c = 0; c < {2 * halves}; ++c) {{")
    if kt:
        key, row = score_key_row("c")
        e(4, f"const int r = {row};")
        e(4, f"const {I} {KEY} = k0_ + t_ * {BN} + n * 16 + {key};")
    else:
        e(4, "const int r = qrow_ + ((c >> 1) << 3);")
        e(4, f"const {I} {KEY} = k0_ + t_ * {BN} + n * 8 + ((lane_ & 3) << 1) + (c & 1);")
    e(4, f"const float {f.score_acc} = s_[n][c];")
    e(4, "float x_ = -INFINITY;")
    e(4, f"if ({KEY} < k1_ && r < {R}) {{")
    at_row("r", 5)
    env = w.vr.vals([X], 5)
    e(5, f"x_ = {env[X]};")
    e(4, "}")
    e(4, "s_[n][c] = x_;")
    e(3, "}")
    e(2, "}")
    if kt:
        emit_online_kt(w, BN, DV, c, 2)
        emit_pv_kt(w, BN, DV, ty, 2, pitch=64 if specs else pv, hi=BN * 64 if specs else 64)
    else:
        emit_online_step(w, BN, DV, c, 2, halves, lazy=bool(cfg.get("lazy_rescale")))  # (knob: off, within noise)
        emit_pv_mma(w, BN, DV, ty, 2)
    if pipe:
        e(2, "#pragma unroll")
        e(2, f"for (int m = 0; m < {BN // 16}; ++m) {{ s_[m][0] = sn_[m][0]; s_[m][1] = sn_[m][1]; "
             "s_[m][2] = sn_[m][2]; s_[m][3] = sn_[m][3]; }")
    if steal:
        emit_steal_shift(w, S, 2)
    e(2, "__syncwarp();  /* this slot is refilled next */")
    e(1, "}")
    e(1, "em_cp_wait_all();")
    if not direct:
        e(1, "__syncthreads();  /* every warp is done with the ring: its space holds the triples now */")
    if late_at_keys:  # (pdl_late 2: the successor's blocks start as this kernel's combines run; 3: a warp without tiles)
        e(1, "EM_PDL_TRIGGER();")
    stamp(3)
    if direct:
        emit_direct_combine(w, f, at_row, _store_output, C, W, R, DV, c, g_off, stamp)
        stamp(6)
        w.T = 32 * W
        return sm.prod([x for _, x in groups]) * P * C
    # the warps' triples (rows qrow_ and qrow_ + 8; l reduced over the row's four lanes) -> shared memory
    if kt:
        emit_triples_kt(w, DV, 1)
    else:
        e(1, "#pragma unroll")
        e(1, "for (int h = 0; h < 2; ++h) {")
        e(2, "l_[h] += __shfl_xor_sync(0xffffffffu, l_[h], 1);")
        e(2, "l_[h] += __shfl_xor_sync(0xffffffffu, l_[h], 2);")
        e(2, "const int r = qrow_ + 8 * h;")
        e(2, "if ((lane_ & 3) == 0) { wm_[warp_ * 16 + r] = m_[h]; wl_[warp_ * 16 + r] = l_[h]; }")
        e(2, "#pragma unroll")
        e(2, f"for (int n = 0; n < {DV // 8}; ++n) {{")
        e(3, f"wo_[(warp_ * 16 + r) * {DV} + n * 8 + ((lane_ & 3) << 1)] = o_[n][2 * h];")
        e(3, f"wo_[(warp_ * 16 + r) * {DV} + n * 8 + ((lane_ & 3) << 1) + 1] = o_[n][2 * h + 1];")
        e(2, "}")
        e(1, "}")
    e(1, "__syncthreads();")
    e(1, f"for (int t = tid_; t < {R * DV}; t += {32 * W}) {{")
    e(2, f"const int r = t / {DV}, col = t % {DV};")
    e(2, "float M = -INFINITY;")
    e(2, f"for (int q = 0; q < {W}; ++q) M = fmaxf(M, wm_[q * 16 + r]);")
    e(2, f"const float Mc = (M == -INFINITY ? 0.f : M) * {c};")
    e(2, "float L = 0.f, O = 0.f;")
    e(2, f"for (int q = 0; q < {W}; ++q) {{")
    e(3, f"const float s = em_ex2(fmaf(wm_[q * 16 + r], {c}, -Mc));")
    e(3, f"L += s * wl_[q * 16 + r]; O += s * wo_[(q * 16 + r) * {DV} + col];")
    e(2, "}")
    e(2, f"bo_[r * {DV} + col] = O;")
    e(2, "if (col == 0) { bm_[r] = M; bl_[r] = L; }")
    e(1, "}")
    stamp(4)
    if gather:
        emit_gather_combine(w, f, at_row, _store_output, C, R, DV, c, 32 * W, g_off, stamp, waited=steal)
        stamp(6)
        w.T = 32 * W
        return sm.prod([x for _, x in groups]) * P * C
    e(1, "em_cluster_sync();  /* every block's triple is in its shared memory */" if C > 1 else "__syncthreads();")
    stamp(5)
    e(1, "{  /* the outputs spread over the cluster's blocks, each reading every block's triple */")
    e(2, f"for (int t = rank_ * {32 * W} + tid_; t < {R * DV}; t += {C * 32 * W}) {{")
    e(3, f"const int r = t / {DV};")
    e(3, f"const {I} {f.out_var} = t % {DV};")
    if C > 1:
        e(3, "float M = -INFINITY;")
        e(3, f"for (unsigned q = 0; q < {C}; ++q) M = fmaxf(M, em_cluster_ld(bm_ + r, q));")
        e(3, f"const float Mc = (M == -INFINITY ? 0.f : M) * {c};")
        e(3, "float L = 0.f, O = 0.f;")
        e(3, f"for (unsigned q = 0; q < {C}; ++q) {{")
        e(4, f"const float s = em_ex2(fmaf(em_cluster_ld(bm_ + r, q), {c}, -Mc));")
        e(4, f"L += s * em_cluster_ld(bl_ + r, q); O += s * em_cluster_ld(bo_ + r * {DV} + {f.out_var}, q);")
        e(3, "}")
    else:
        e(3, f"const float M = bm_[r], L = bl_[r], O = bo_[r * {DV} + {f.out_var}];")
    if P > 1:  # this cluster's triple of the output: a partial of the group's P
        e(3, f"float* part_ = em_ws_ + {ws_head} + (grp_ * {P} + split_) * {R * (DV + 2)};")
        e(3, f"part_[r * {DV} + {f.out_var}] = O;")
        e(3, f"if ({f.out_var} == 0) {{ part_[{R * DV} + r] = M; part_[{R * DV + R} + r] = L; }}")
    else:
        _store_output(w, f, at_row, "O / L", 3)
    e(2, "}")
    e(1, "}")
    if C > 1:
        e(1, "em_cluster_sync();  /* every block has read the others' shared memory */")
    if P > 1:
        _combine_splits(w, f, at_row, P, C, R, DV, c, ws_head)
    stamp(6)
    w.T = 32 * W
    return sm.prod([x for _, x in groups]) * P * C


def _store_output(w, f: OnlineForm, at_row, value: str, ind: int) -> None:
    """Output element (r, out_var) = `value` through the store's expression."""
    at_row("r", ind)
    w.emit(ind, f"const float {f.out_acc} = {value};")
    w.emitted_groups = {}
    env = w.vr.vals([f.store.value], ind)
    w.emit(ind, f"{f.store.buffer}[{w.idx(f.store.index)}] = {w.vr.store(f.store.buffer, env[f.store.value])};")


def _combine_splits(w, f: OnlineForm, at_row, P: int, C: int, R: int, DV: int, c: str, head: int) -> None:
    """The last of a group's P * C blocks to arrive (a counter per group in em_ws_, reset by it, so
    every replay of a graph starts from zero) combines the P partial triples and stores the outputs:
    no second kernel, and no cluster larger than a GPC holds to fill the SMs at batch 1."""
    e = w.emit
    e(1, "__shared__ unsigned last_;")
    e(1, "__threadfence(); __syncthreads();  /* this block's partials are visible to the device */")
    e(1, "if (tid_ == 0) {")
    e(2, "unsigned* count_ = reinterpret_cast<unsigned*>(em_ws_) + grp_;")
    e(2, f"last_ = atomicAdd(count_, 1u) == {P * C - 1}u;")
    e(2, "if (last_) *count_ = 0u;  /* every other block of the group has arrived: none adds again */")
    e(1, "}")
    e(1, "__syncthreads();")
    e(1, "if (!last_) return;")
    e(1, "__threadfence();")
    e(1, f"const float* parts_ = em_ws_ + {head} + grp_ * {P * R * (DV + 2)};")
    e(1, f"for (int t = tid_; t < {R * DV}; t += blockDim.x) {{")
    e(2, f"const int r = t / {DV};")
    e(2, f"const {w.IDX} {f.out_var} = t % {DV};")
    e(2, "float M = -INFINITY;")
    e(2, f"for (int q = 0; q < {P}; ++q) M = fmaxf(M, __ldcg(parts_ + q * {R * (DV + 2)} + {R * DV} + r));")
    e(2, f"const float Mc = (M == -INFINITY ? 0.f : M) * {c};")
    e(2, "float L = 0.f, O = 0.f;")
    e(2, f"for (int q = 0; q < {P}; ++q) {{")
    e(3, f"const float* p_ = parts_ + q * {R * (DV + 2)};")
    e(3, f"const float s = em_ex2(fmaf(__ldcg(p_ + {R * DV} + r), {c}, -Mc));")
    e(3, f"L += s * __ldcg(p_ + {R * DV + R} + r); O += s * __ldcg(p_ + r * {DV} + {f.out_var});")
    e(2, "}")
    _store_output(w, f, at_row, "O / L", 2)
    e(1, "}")


def _row_decomposition(qv: list, r: str) -> list:
    """[(var, C expression)] of the query row variables of tile row `r` (the last varies fastest)."""
    out, t = [], r
    for i, (var, ext) in enumerate(reversed(qv)):
        if i == len(qv) - 1:
            out.append((var, t))
        else:
            out.append((var, f"({t}) % {ext.value}"))
            t = f"({t}) / {ext.value}"
    return out
