"""Tensor-core contractions: the ``mma`` mode of the CUDA renderer.

The same contraction kernels as the ``gemm`` mode (kernel/structure.py's `Contraction`: a sum over k
of a(m, k) * b(k, n), with any prologue inside a and b and any epilogue in the store), computed with
warp-level ``mma.sync.m16n8k8`` TF32 tensor-core instructions (sm_80+):

* BM x BN block tile, WM x WN warps, each warp a (BM/WM) x (BN/WN) tile of 16 x 8 MMA tiles;
* BK-deep slices of a and b go global -> registers -> shared memory, and the next slice's global
  loads are issued before the current slice is multiplied (register prefetch), so their latency
  hides behind the tensor-core work;
* float32 operands are split into a TF32 high part and a TF32 remainder and multiplied as
  hi*hi + hi*lo + lo*hi ("3xTF32"), which keeps float32 accuracy (the dropped lo*lo term is below
  float32's rounding); float16 / bfloat16 operands are exact in TF32 and take one MMA.

Shared memory rows are padded by 8 floats so the fragment reads (lane = 4*row + k) hit 32 distinct
banks. The accumulator fragment of lane l holds rows l/4 and l/4 + 8, columns 2*(l%4) and +1.
"""
from __future__ import annotations

import os

from .. import dtypes as dt
from .. import symbolic as sm
from ..kernel import ir
from ..kernel.structure import Canon, UnsupportedKernel, _size, contraction_of
from .clike import compute_type

MMA_PRELUDE = r"""
__device__ __forceinline__ unsigned em_tf32(float x) { unsigned r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r; }
__device__ __forceinline__ void em_split_tf32(float x, unsigned& hi, unsigned& lo) {
  hi = em_tf32(x); lo = em_tf32(x - __uint_as_float(hi));
}
__device__ __forceinline__ void em_mma_tf32(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
"""

EXACT_IN_TF32 = (dt.float16, dt.bfloat16)  # 10 / 7 mantissa bits: TF32 (10) holds them exactly


def mma_applicable(c: Canon) -> bool:
    g = contraction_of(c)
    return g is not None and g.stage.acc.op == "sum" and compute_type(g.stage.acc.dtype) == "float" \
        and all(v.dtype.is_float and v.dtype != dt.float64 for v in (g.a, g.b))


def _exact_in_tf32(g) -> bool:
    return all(v.dtype in EXACT_IN_TF32 for v in (g.a, g.b))


def one_pass(g) -> bool:
    """Whether one TF32 product suffices: half-precision operands (exact in TF32) or the user
    allowed TF32 (ember/precision.py); else three keep float32 accuracy."""
    return bool(g.stage.acc.tf32) or _exact_in_tf32(g)


def _passes(g) -> int:
    return 1 if one_pass(g) else 3


KTAB_MAX_BYTES = 16 * 1024  # shared memory the k-split table may take
# the tiles' shared memory on the H100 (227 KB per block, less the k table); a Target's: tuning["mma_smem_max"]
MMA_SMEM_MAX = 200 * 1024


def _k_table(kloops: list, K, static_smem: int):
    """Bit fields (shift, mask) packing the k loop variables into one unsigned per k, or None when a
    table does not pay (one k variable: no divisions) or does not fit (K unknown or large, fields
    over 32 bits, static shared memory over 48 KB with the tiles)."""
    if len(kloops) < 2 or not K.is_const or 4 * K.value > KTAB_MAX_BYTES or static_smem + 4 * K.value > 48 * 1024:
        return None
    return _bit_fields(kloops)


def _divides(loops: list) -> bool:
    """Whether splitting a flat index into these loop variables needs a real division (some inner
    extent is not a power of two)."""
    return any(not (e.is_const and e.value & (e.value - 1) == 0) for _, e in loops[1:])


def _bit_fields(loops: list):
    """(shift, mask) per loop variable packing all of them into 32 bits (the last variable lowest),
    or None if an extent is unknown or they do not fit."""
    fields, sh = [], 0
    for _, ext in reversed(loops):
        if not ext.is_const:
            return None
        bits = max(1, (ext.value - 1).bit_length())
        fields.append((sh, (1 << bits) - 1))
        sh += bits
    return None if sh > 32 else list(reversed(fields))


def kslice_var(g, BK: int):
    """The k variable to walk fastest under `kslice`: the longest one whose extent BK divides (so a
    BK slice never crosses it), or None. With a single k variable there is nothing to gain."""
    fits = [(e.value, v) for v, e in g.k if e.is_const and e.value % BK == 0]
    return max(fits)[1] if len(g.k) > 1 and fits else None


FLAT_K = "gk_"  # the kernel's flat k index (k0_ + the element's offset in the slice)


def _splits(e, name: str) -> bool:
    """Whether expression `e` divides or takes a remainder of something that involves `name`
    (an add node's args hold (term, coefficient) pairs: every nested Expr is searched)."""
    if isinstance(e, (tuple, list)):
        return any(_splits(a, name) for a in e)
    if not isinstance(e, sm.Expr) or e.is_const:
        return False
    if e.op in ("div", "mod") and name in sm.free_vars(e):
        return True
    return any(_splits(a, name) for a in e.args)


def flat_k(g, val):
    """Operand `val` with its k variables written through the one flat k index (FLAT_K), where every
    load index and guard of it then simplifies to a form without a division of that index: the
    operand walks k contiguously (a conv's OIHW weights over (channel, ky, kx)). Such an operand
    needs no k split per element and can take vector loads along k. None where a division is left
    (a conv's input: its k walk jumps by rows and planes) or with one k variable (nothing to gain)."""
    if len(g.k) < 2:
        return None
    K = _size(g.k)
    gk = sm.var(FLAT_K, 0, K.value - 1 if K.is_const else None)
    m, stride = {}, sm.ONE
    for i, (v, e) in reversed(list(enumerate(g.k))):
        q = gk if stride is sm.ONE else sm.floordiv(gk, stride)
        m[v] = q if i == 0 else sm.mod(q, e)
        stride = stride * e
    fv = ir.substitute(val, m)
    for x in ir.val_toposort([fv]):
        exprs = [x.args[1], x.args[2]] if x.op == "load" else [x.args[0]] if x.op == "index" else []
        if any(_splits(e, FLAT_K) for e in exprs):
            return None
    return fv


def render_mma(w, c: Canon):
    """Emit the kernel body into writer `w` (codegen/cuda.py's _KernelWriter); returns the grid."""
    g = contraction_of(c)
    if g is None or not mma_applicable(c):
        raise UnsupportedKernel(f"{w.k.name}: not a float contraction (mma mode)")
    cfg = w.cfg
    BM, BN, BK, WM, WN = (int(cfg[x]) for x in ("BM", "BN", "BK", "WM", "WN"))
    NT = 32 * WM * WN
    MT, NTW = BM // WM, BN // WN
    if BM % WM or BN % WN or MT % 16 or NTW % 8 or BK % 8 or NT > 1024:
        raise UnsupportedKernel(f"mma tile {cfg} is not a whole number of 16x8x8 MMA tiles per warp")
    MI, NI = MT // 16, NTW // 8
    if (BM * BK) % NT or (BN * BK) % NT:
        raise UnsupportedKernel(f"mma tile {cfg}: the {NT} threads do not split the tile loads evenly")
    w.T = NT
    I = w.IDX
    K = _size(g.k)
    passes = _passes(g)
    round_tf32 = passes == 1 and not _exact_in_tf32(g)
    stages = int(cfg.get("stages", 1))
    if stages not in (1, 2):
        raise UnsupportedKernel(f"mma stages={stages} (1 or 2 shared-memory buffers)")
    tile_bytes = 4 * BK * (BM + BN + 16)
    smem = stages * tile_bytes
    smem_max = MMA_SMEM_MAX if w.target is None else w.target.tuning.get("mma_smem_max", MMA_SMEM_MAX)
    if smem > smem_max:
        raise UnsupportedKernel(f"mma tile {cfg} needs {smem} bytes of shared memory (max {smem_max})")
    # buffer s of stage s: As(s)[k][m], Bs(s)[k][n]; over 48 KB the tiles go to dynamic shared memory
    dynamic = smem > 48 * 1024 or stages > 1
    if dynamic:
        w.smem_bytes = smem
        w.emit(1, "extern __shared__ __align__(16) unsigned char em_dyn_smem[];")
        w.emit(1, f"float (*As_)[{BK}][{BM} + 8] = reinterpret_cast<float (*)[{BK}][{BM} + 8]>(em_dyn_smem);")
        w.emit(1, f"float (*Bs_)[{BK}][{BN} + 8] = reinterpret_cast<float (*)[{BK}][{BN} + 8]>"
                  f"(em_dyn_smem + {stages * 4 * BK * (BM + 8)});")
    else:
        w.emit(1, f"__shared__ float As_[1][{BK}][{BM} + 8];")
        w.emit(1, f"__shared__ float Bs_[1][{BK}][{BN} + 8];")
    w.tile_origin(g, BM, BN)
    w.emit(1, "const int tid_ = threadIdx.x, lane_ = tid_ & 31, warp_ = tid_ >> 5;")
    w.emit(1, f"const int wm_ = (warp_ / {WN}) * {MT}, wn_ = (warp_ % {WN}) * {NTW};")
    w.emit(1, "const int g_ = lane_ >> 2, t_ = lane_ & 3;")
    w.emit(1, f"float acc_[{MI}][{NI}][4];")
    w.emit(1, f"#pragma unroll\n  for (int i = 0; i < {MI}; ++i)\n    #pragma unroll\n    for (int j = 0; j < {NI}; ++j)\n"
              f"      #pragma unroll\n      for (int r = 0; r < 4; ++r) acc_[i][j][r] = 0.f;")
    # An operand's tile loads go unguarded (and may take vector loads) where its tiles never cross
    # its edges: rows a multiple of its block tile, k of BK. Per operand: (256 x 512) @ (512 x 1344)
    # in 64 x 128 tiles keeps vector loads on a's side though 1344 is no multiple of 128.
    k_whole = K.is_const and K.value % BK == 0

    def aligned(R, BR: int) -> bool:
        return k_whole and R.is_const and R.value % BR == 0
    # knob `rvec`: a vector along k is one row's, so ragged rows (a tile past the last row: the real
    # KernelBench's 71, 514 x 1026 outputs a image) still take vector loads, the whole vector under
    # the row's guard (scalar loads otherwise: 7.29 ms there against 4.24 for 78's 512 x 1024 with
    # 2.3x the k). On by default since measured: 71 7.31 -> 2.20 ms on an H100 (EMBER_MMA_RAGGED_VECTOR=0: off).
    rvec = bool(cfg.get("rvec", os.environ.get("EMBER_MMA_RAGGED_VECTOR", "1") == "1"))
    # `kslice`: walk k with one k variable (`cvar`, whose extent BK divides) fastest, the others fixed
    # over a slice. The sum's order changes, not its terms. A slice's other k variables are then one
    # division per slice instead of a split per element (a 3x3 conv: the channel inner, the filter
    # tap fixed per slice, as CUTLASS's implicit GEMM walks NHWC). A search knob only: on NCHW convs
    # the taps of one channel then no longer share L1 lines (1.6x slower; conv3d 8% faster).
    cvar = kslice_var(g, BK) if cfg.get("kslice", False) else None
    if cfg.get("kslice", False) and cvar is None:
        raise UnsupportedKernel(f"kslice needs two or more k variables, one with an extent that {BK} divides (k: {g.k})")
    # An operand that walks k contiguously is loaded through the flat k index (`flatk`, default on):
    # no k split per element, and vector loads along k where the rows align.
    flat = {}
    if cvar is None and cfg.get("flatk", True):
        for name, val in (("As", g.a), ("Bs", g.b)):
            fv = flat_k(g, val)
            if fv is not None:
                flat[name] = fv
    loads = []

    def walk(kfast: bool, k_loops: list, rows: list, BR: int) -> tuple:
        """The loop the lanes of a vector load run along, and the vector width (1: scalar loads)."""
        lane_loops = ([kv for kv in g.k if kv[0] == cvar] if cvar else k_loops) if kfast else rows
        inner_ext = lane_loops[-1][1] if lane_loops else sm.ONE
        whole = aligned(_size(rows), BR) or (rvec and kfast and k_whole)  # (rvec: guarded per row)
        VL = 4 if (whole and (BK if kfast else BR) % 4 == 0 and inner_ext.is_const and inner_ext.value % 4 == 0
                   and (BR * BK) % (NT * 4) == 0) else 1
        return lane_loops, VL

    for name, val, rows, BR, kfast in (("As", g.a, g.m, BM, g.a_k_fastest), ("Bs", g.b, g.n, BN, g.b_k_fastest)):
        val = flat.get(name, val)
        k_loops = [(FLAT_K, K)] if name in flat else g.k
        # knobs "a_kfast" / "b_kfast": whether a tile's loads walk along k or along the rows. By
        # default the way the operand's memory runs, except an implicit-GEMM operand (several k
        # variables, not flat) whose k walk gets no vector loads (a strided conv's input): it walks
        # its rows, so that (NT a multiple of the tile's rows) a thread keeps one row, split once,
        # for the whole k loop. Dilated 3x5 conv 2x, VGG 2.2x faster on the H100
        # (bench/results/knob-sweep-2026-11-22-bkfast.json).
        if kfast and name not in flat and len(g.k) > 1 and walk(True, k_loops, rows, BR)[1] == 1:
            kfast = False
        kfast = bool(cfg.get("a_kfast" if name == "As" else "b_kfast", kfast))
        lane_loops, VL = walk(kfast, k_loops, rows, BR)
        loads.append((name, val, rows, BR, kfast, VL, lane_loops, "bm_" if name == "As" else "bn_",
                      "M_" if name == "As" else "N_"))
        w.emit(1, f"float r{name}_[{BR * BK // NT}];")

    def unpack(word, loops, fields, ind):
        for (v, _), (sh, mask) in zip(loops, fields):
            w.emit(ind, f"const {I} {v} = ({I})(({word} >> {sh}) & {mask}u);")

    def split_rows(name, rows, ind):
        if name in hoisted:
            arr, fields = hoisted[name]
            unpack(f"{arr}[i_]", rows, fields, ind)
        else:
            w.decompose("gr_", rows, ind)

    def split_k(name, ind):
        if name in flat:  # its loads index by gk_ itself
            return
        if cvar is not None:
            for v, _ in g.k:
                w.emit(ind, f"const {I} {v} = " + ("c0_ + kk_;" if v == cvar else f"kv_{v};"))
            return
        if ktab is None:
            w.decompose("gk_", g.k, ind)
            return
        w.emit(ind, "const unsigned pk_ = ktab_[gk_];")
        unpack("pk_", g.k, ktab, ind)

    def index_math(name, BR, kfast, VL, bidx, ind, k0):
        w.emit(ind, f"const int e_ = tid_ + i_ * {NT};")
        if kfast:
            w.emit(ind, f"const int rr_ = e_ / {BK // VL}, kk_ = (e_ % {BK // VL}) * {VL};")
        else:
            w.emit(ind, f"const int rr_ = (e_ % {BR // VL}) * {VL}, kk_ = e_ / {BR // VL};")
        w.emit(ind, f"const {I} gr_ = {bidx} * {BR} + rr_, gk_ = {k0} + kk_;")

    def load_regs(k0: str, ind: int):
        if cvar is not None:  # the slice's fixed k variables, and where the fast one starts
            w.emit(ind, "{")
            ext = dict(g.k)[cvar]
            w.emit(ind, f"const {I} c0_ = {k0} % {w.idx(ext)};")
            w.decompose(f"{k0} / {w.idx(ext)}", [(f"kv_{v}", e) for v, e in g.k if v != cvar], ind)
        for name, val, rows, BR, kfast, VL, lane_loops, bidx, lim in loads:
            w.emit(ind, f"#pragma unroll\n{'  ' * ind}for (int i_ = 0; i_ < {BR * BK // (NT * VL)}; ++i_) {{")
            index_math(name, BR, kfast, VL, bidx, ind + 1, k0)
            if VL > 1:
                guard = not aligned(_size(rows), BR)  # (rvec: a ragged tile's rows past the last read as zeros)
                j = ind + 1
                if guard:
                    for l in range(VL):
                        w.emit(ind + 1, f"r{name}_[i_ * {VL} + {l}] = 0.f;")
                    w.emit(ind + 1, f"if (gr_ < {lim}) {{")
                    j = ind + 2
                split_rows(name, rows, j)
                split_k(name, j)
                w.emitted_groups = {}
                lanes = w.lanes([val], lane_loops[-1][0], VL)
                w._ind = j
                env = w.vr.vals([v for lane in lanes for v in lane], j)
                for l, lane in enumerate(lanes):
                    w.emit(j, f"r{name}_[i_ * {VL} + {l}] = (float){env[lane[0]]};")
                if guard:
                    w.emit(ind + 1, "}")
            else:
                w.emit(ind + 1, "float x_ = 0.f;")
                w.emit(ind + 1, f"if (gr_ < {lim} && gk_ < K_) {{")
                split_rows(name, rows, ind + 2)
                split_k(name, ind + 2)
                env = w.values([val], ind + 2)
                w.emit(ind + 2, f"x_ = (float){env[val]};")
                w.emit(ind + 1, "}")
                w.emit(ind + 1, f"r{name}_[i_] = x_;")
            w.emit(ind, "}")
        if cvar is not None:
            w.emit(ind, "}")

    def store_regs(ind: int, buf: str):
        for name, val, rows, BR, kfast, VL, lane_loops, bidx, lim in loads:
            w.emit(ind, f"#pragma unroll\n{'  ' * ind}for (int i_ = 0; i_ < {BR * BK // (NT * VL)}; ++i_) {{")
            index_math(name, BR, kfast, VL, bidx, ind + 1, "0")
            for l in range(VL):
                dst = f"{name}_[{buf}][kk_ + {l}][rr_]" if kfast else f"{name}_[{buf}][kk_][rr_ + {l}]"
                src = f"r{name}_[i_ * {VL} + {l}]"
                # one TF32 pass on float32 operands: round to nearest once here, as cuBLAS/cuDNN do
                # (the MMA itself would truncate the low mantissa bits: a bias toward zero)
                w.emit(ind + 1, f"{dst} = {f'__uint_as_float(em_tf32({src}))' if round_tf32 else src};")
            w.emit(ind, "}")

    # The tile loads' index arithmetic, not the MMAs, bounds an implicit-GEMM conv: every element
    # splits its row into (image, y, x) and its k into (channel, ky, kx) with divisions. Rows are
    # fixed per thread across the k loop, so they are split once, before it; k is split by a table
    # in shared memory built once per block (bit fields: shifts and masks instead of divisions).
    # knobs "ktab" / "packrows". The table is the default where the k split divides by a non-power
    # of two (a 3x3 conv: 2-4% faster; powers of two are shifts, cheaper than a shared-memory read).
    # Packed rows are off by default: they lost 1-4% on three of four convs measured
    # (bench/results/variants-conv-2026-11-21d.json).
    ktab = _k_table(g.k, K, 0 if dynamic else smem) \
        if cvar is None and len(flat) < 2 and cfg.get("ktab", _divides(g.k)) else None
    if ktab is not None:
        w.emit(1, f"__shared__ unsigned ktab_[{K.value}];")
        w.emit(1, f"for (int t0_ = threadIdx.x; t0_ < {K.value}; t0_ += {NT}) {{")
        w.decompose("t0_", g.k, 2)
        w.emit(2, "ktab_[t0_] = " + " | ".join(f"((unsigned){v} << {sh})" for (v, _), (sh, _) in zip(g.k, ktab)) + ";")
        w.emit(1, "}")
    hoisted = {}
    for name, val, rows, BR, kfast, VL, lane_loops, bidx, lim in loads:
        fields = _bit_fields(rows) if cfg.get("packrows", False) else None
        if len(rows) > 1 and fields is not None:  # one register per load: the row's fields packed
            it = BR * BK // (NT * VL)
            hoisted[name] = (f"rv{name}_", fields)
            w.emit(1, f"unsigned rv{name}_[{it}];")
            w.emit(1, f"#pragma unroll\n  for (int i_ = 0; i_ < {it}; ++i_) {{")
            index_math(name, BR, kfast, VL, bidx, 2, "0")
            w.emit(2, "{")
            w.decompose("gr_", rows, 3)
            w.emit(3, f"rv{name}_[i_] = " + " | ".join(f"((unsigned){v} << {sh})" for (v, _), (sh, _) in zip(rows, fields)) + ";")
            w.emit(2, "}")
            w.emit(1, "}")
    if ktab is not None:
        w.emit(1, "__syncthreads();")

    # The k loop. `pf` issues the next slice's global loads unconditionally (the last iteration
    # reloads its own slice, in bounds and unused), so the loads and the MMAs share one basic block
    # and ptxas can interleave them; behind `if (more_)` they ran as a clump before the MMAs, which
    # waited (bench/results/ncu-conv-2026-11-22.txt). `stages` = 2 double-buffers shared memory:
    # the next slice is stored into the other buffer while this one is read, one barrier per slice.
    pf = bool(cfg.get("pf", False))
    cur = "s_" if stages == 2 else "0"
    load_regs("(" + I + ")0", 1)
    store_regs(1, "0")
    w.emit(1, "__syncthreads();")
    if stages == 2:
        w.emit(1, "int s_ = 0;")
    w.emit(1, f"for ({I} k0_ = 0; k0_ < K_; k0_ += {BK}) {{")
    w.emit(2, f"const bool more_ = k0_ + {BK} < K_;")
    if pf:
        w.emit(2, f"const {I} kn_ = more_ ? k0_ + {BK} : k0_;")
        load_regs("kn_", 2)
    else:
        w.emit(2, "if (more_) {")
        load_regs(f"(k0_ + {BK})", 3)
        w.emit(2, "}")
    w.emit(2, f"#pragma unroll\n    for (int ks_ = 0; ks_ < {BK}; ks_ += 8) {{")
    w.emit(3, f"unsigned ah_[{MI}][4], bh_[{NI}][2];")
    if passes == 3:
        w.emit(3, f"unsigned al_[{MI}][4], bl_[{NI}][2];")
    for mi in range(MI):
        for r in range(4):
            src = f"As_[{cur}][ks_ + t_ + {4 * (r >> 1)}][wm_ + {mi * 16 + 8 * (r & 1)} + g_]"
            w.emit(3, f"em_split_tf32({src}, ah_[{mi}][{r}], al_[{mi}][{r}]);" if passes == 3
                   else f"ah_[{mi}][{r}] = __float_as_uint({src});")
    for ni in range(NI):
        for r in range(2):
            src = f"Bs_[{cur}][ks_ + t_ + {4 * r}][wn_ + {ni * 8} + g_]"
            w.emit(3, f"em_split_tf32({src}, bh_[{ni}][{r}], bl_[{ni}][{r}]);" if passes == 3
                   else f"bh_[{ni}][{r}] = __float_as_uint({src});")
    w.emit(3, f"#pragma unroll\n      for (int i = 0; i < {MI}; ++i)\n        #pragma unroll\n        for (int j = 0; j < {NI}; ++j) {{")
    if passes == 3:  # small terms first
        w.emit(5, "em_mma_tf32(acc_[i][j], al_[i], bh_[j]);")
        w.emit(5, "em_mma_tf32(acc_[i][j], ah_[i], bl_[j]);")
    w.emit(5, "em_mma_tf32(acc_[i][j], ah_[i], bh_[j]);")
    w.emit(4, "}")
    w.emit(2, "}")
    if stages == 2:
        if not pf:
            w.emit(2, "if (more_) {")
        store_regs(3 if not pf else 2, "s_ ^ 1")
        if not pf:
            w.emit(2, "}")
        w.emit(2, "s_ ^= 1;")
        w.emit(2, "__syncthreads();")
    else:
        w.emit(2, "__syncthreads();")
        if not pf:
            w.emit(2, "if (more_) {")
        store_regs(3 if not pf else 2, "0")
        w.emit(3 if not pf else 2, "__syncthreads();")
        if not pf:
            w.emit(2, "}")
    w.emit(1, "}")
    # epilogue: the store's value per output element
    w.emit(1, f"#pragma unroll\n  for (int i = 0; i < {MI}; ++i) {{")
    w.emit(2, f"#pragma unroll\n    for (int j = 0; j < {NI}; ++j) {{")
    w.emit(3, "#pragma unroll\n      for (int r = 0; r < 4; ++r) {")
    w.emit(4, f"const {I} gm_ = bm_ * {BM} + wm_ + i * 16 + g_ + (r >> 1) * 8, "
              f"gn_ = bn_ * {BN} + wn_ + j * 8 + 2 * t_ + (r & 1);")
    w.emit(4, "if (gm_ < M_ && gn_ < N_) {")
    w.decompose("gm_", g.m, 5)
    w.decompose("gn_", g.n, 5)
    w.emit(5, f"const float {g.stage.acc.name} = acc_[i][j][r];")
    w.store(c.store, None, 1, 5)
    w.emit(4, "}")
    w.emit(3, "}")
    w.emit(2, "}")
    w.emit(1, "}")
    return w.tile_grid(g, BM, BN)

