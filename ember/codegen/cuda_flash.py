"""The `flash` mode: a kernel in online-softmax form (kernel/online.py) as one tensor-core kernel that
streams the keys through shared memory and never stores a score.

Each block owns BM = 16 * warps rows of the `query` loop (for one point of the other row loops) and
walks the keys in tiles of BN:

* q (BM x D) is copied once into shared memory and held in registers as mma A fragments; the
  key and value tiles (BN x D, BN x Dv) arrive by `cp.async` into a two-slot ring (the next tile
  loads while this one computes), 16-byte chunks XOR-swizzled by row so `ldmatrix` reads them
  without bank conflicts;
* S = q k^T by `mma.sync.m16n8k16` (bf16/f16, float32 accumulation), each warp 16 rows x BN keys;
* every score goes through the kernel's own X (the max stage's value: scale, mask, casts, any
  loads it makes), evaluated per element by the shared value renderer; keys past the end read -inf;
* the online recurrence (kernel/online.py) per row: running max m, rescale a = exp2(c (m_old - m)),
  P = exp2(c (X - m)) rounded to the operands' dtype, running sum l (per thread, reduced over the
  row's four lanes at the end);
* O += P v by `mma.sync` with P's accumulators re-packed as A fragments (no shared memory) and v
  read by `ldmatrix.trans`;
* O / l goes through the kernel's store expression (its epilogue: casts, any fused elementwise).

When X is -inf beyond key = query + off (a causal or sliding mask written with index comparisons),
each block stops at its last row's bound: a causal attention does half the tiles. Blocks are issued
longest first.
"""
from __future__ import annotations

from .. import dtypes as dt
from .. import symbolic as sm
from ..kernel import ir
from ..kernel.online import KEY, OnlineForm, key_floor, key_limit, replace
from ..kernel.structure import UnsupportedKernel

FLASH_PRELUDE = r"""
#ifndef EM_FLASH_HELPERS
#define EM_FLASH_HELPERS
__device__ __forceinline__ void em_cp16(void* smem, const void* gmem, bool pred) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(s), "l"(gmem), "r"(pred ? 16 : 0));
}
__device__ __forceinline__ void em_cp_commit() { asm volatile("cp.async.commit_group;"); }
__device__ __forceinline__ void em_cp_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void em_cp_wait_one() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
__device__ __forceinline__ void em_ldsm4(unsigned* r, const void* p) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
__device__ __forceinline__ void em_ldsm4t(unsigned* r, const void* p) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
__device__ __forceinline__ void em_bulk(void* smem, const void* gmem, unsigned bytes, unsigned bar) {
  /* one bulk copy (no per-lane chunks) completing on the mbarrier at shared address bar */
  asm volatile("{\n\t.reg .u64 g;\n\tcvta.to.global.u64 g, %1;\n\t"
               "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [g], %2, [%3];\n\t}"
               :: "r"((unsigned)__cvta_generic_to_shared(smem)), "l"(gmem), "r"(bytes), "r"(bar) : "memory");
}
__device__ __forceinline__ int em_opaque(int x) {  /* a value kept in a register, not recomputed where used */
  asm volatile("" : "+r"(x)); return x;
}
__device__ __forceinline__ unsigned em_movt(unsigned a) {  /* an 8x8 b16 fragment transposed across the warp */
  unsigned r; asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(a)); return r;
}
__device__ __forceinline__ float em_ex2(float x) { float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
#define EM_MMA16816(T, d, a, b0, b1) \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." T "." T ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))
__device__ __forceinline__ unsigned em_pack_bf16(float lo, float hi) {
  unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}
__device__ __forceinline__ unsigned em_pack_f16(float lo, float hi) {
  unsigned r; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}
#endif
"""

HALF = {"bfloat16": "bf16", "float16": "f16"}


def _step(e: sm.Expr, var: str) -> sm.Expr:
    x = sm.var(var + "_s", 0, None)
    return sm.substitute(e, {var: x + 1}) - sm.substitute(e, {var: x})


def _aligned(e: sm.Expr, n: int) -> bool:
    r = sm.sym(e) % n
    return r.is_const and r.value == 0


def _operand(v: ir.Val, fast: str, what: str) -> str | None:
    """Why operand load `v` cannot be copied as 16-byte chunks along `fast`, or None."""
    if v.op != "load" or isinstance(v.args[1], ir.Val) or v.args[2] is not sm.ONE:
        return f"{what} is not a plain load"
    idx = v.args[1]
    st = _step(idx, fast)
    if not (st.is_const and st.value == 1):
        return f"{what} is not contiguous along its inner axis"
    if not _aligned(sm.substitute(idx, {fast: sm.ZERO}), 8):
        return f"{what}'s rows are not 16-byte aligned"
    return None


def flash_applicable(k: ir.Kernel, f: OnlineForm) -> str | None:
    """None when `flash` mode can render `k` (in online form `f`); else why not."""
    if f.q is None or f.k is None or f.depth is None:
        return "flash mode needs the scores' own contraction q . k (scores read from memory are not tiled)"
    if f.q.dtype.name not in HALF or f.p_dtype != f.q.dtype:
        return "flash mode needs bf16/f16 q, k, v and P rounded to that dtype"
    if f.accum != dt.float32:
        return "flash mode accumulates in float32"
    for e, what in ((f.depth, "the score depth"), (f.out_extent, "the value width")):
        if not e.is_const or e.value % 64 or e.value > 128:
            return f"{what} must be 64 or 128"
    if f.query is None:
        return "no row loop that q alone varies along (every row reads its own keys)"
    L = dict(f.rows)[f.query]
    if L.is_const and L.value < 16:  # (one decode row: a 64-row tile would be 1/64 used; flash-decoding is not here yet)
        return f"{L.value} query rows: too few for a 16-row tensor-core tile per warp"
    if f.q.dtype != f.k.dtype:
        return "q and k of different dtypes"
    for v, fast, what in ((f.k, f.depth_var, "k"), (f.v, f.out_var, "v")):
        why = _operand(v, fast, what)
        if why:
            return why
    return None


def q_copied(f: OnlineForm) -> bool:
    """Whether q is a plain load the copy path can stage (else the kernel computes it per element)."""
    return _operand(f.q, f.depth_var, "q") is None


def stage_q_chunk(w, f: OnlineForm, ind: int) -> None:
    """Emit the computation of 8 consecutive q elements (depth ch_ * 8 + e) into uint4 `pk_`, the row
    variables in scope: q's own expression (its prologue), rounded to q's dtype."""
    I, e = w.IDX, w.emit
    e(ind, "#pragma unroll")
    e(ind, "for (int e_ = 0; e_ < 8; ++e_) {")
    e(ind + 1, f"const {I} {f.depth_var} = ch_ * 8 + e_;")
    w.emitted_groups = {}
    env = w.vr.vals([f.q], ind + 1)
    e(ind + 1, f"reinterpret_cast<unsigned short*>(&pk_)[e_] = {w.vr.d.narrow(env[f.q], f.q.dtype)};")
    e(ind, "}")


def _is_const(v: ir.Val) -> bool:
    return v.op == "const" and isinstance(v.args[0], float)


def streamlined(X: ir.Val, score: ir.Val) -> tuple:
    """(X', k): X with two rewrites that hold in real arithmetic (exact=False, within the 16-bit
    dtype's rounding, the flash kernel's knob `exact_scores` turns them off):

    * a score rounded to bf16/f16 and widened back (torch's q @ kT returns bf16) is used unrounded,
      as torch's own flash kernels do;
    * a positive constant scale of the score leaves X and moves into the exp2 multiplier c:
      max_j (k s_j) = k max_j s_j and exp2(c (k s - k m)) = exp2((c k)(s - m)) for k > 0; a mask's
      -inf stays -inf.

    Two to three fewer operations per score, which at head dim 64 is a fifth of the kernel's ALU work."""
    memo: dict = {}

    def unround(v):  # the score's path computed in float32: its roundings to half and back dropped
        if v in memo:
            return memo[v]
        if not v.srcs or score not in ir.val_toposort([v]):
            r = v
        elif v.op == "cast" and (v.dtype.name in HALF or v.args[0].dtype.name in HALF) and v.dtype.is_float \
                and v.args[0].dtype.is_float:
            r = unround(v.args[0])  # a narrowing or widening of the score path: gone
        else:
            r = ir.Val(v.op, tuple(unround(a) if isinstance(a, ir.Val) else a for a in v.args),
                       dt.float32 if v.dtype.name in HALF else v.dtype)
        memo[v] = r
        return r
    X = unround(X)
    # then a positive constant factor on the score's only path
    body = X
    while body.op == "cast":
        body = body.args[0]
    inner = body.args[1] if body.op == "where" and _is_const(body.args[2]) and body.args[2].args[0] == float("-inf") \
        else body
    for a, k in ((inner.args, inner.args[::-1]) if inner.op == "mul" else ()):  # (an additive mask: no factor)
        if _is_const(k) and k.args[0] > 0 and a.dtype == dt.float32:
            return replace(X, {inner: a}), float(k.args[0])
    return X, 1.0


def emit_scores_mma(w, D: int, BN: int, ty: str, ind: int, out: str = "s_", frag: str = "qf_", tile: str = "Kt",
                    frag_smem: str | None = None) -> None:
    """out[BN/8][4] = this warp's 16 rows (A fragments `frag`; or, `frag_smem`, read by ldmatrix
    from that shared-memory tile of 16-row-per-warp rows at each k step: registers freed for the
    accumulators) x the key tile at `tile`, by mma.sync."""
    e = w.emit
    e(ind, f"float {out}[{BN // 8}][4];")
    e(ind, "#pragma unroll")
    e(ind, f"for (int n = 0; n < {BN // 8}; ++n) {out}[n][0] = {out}[n][1] = {out}[n][2] = {out}[n][3] = 0.f;")
    e(ind, "#pragma unroll")
    e(ind, f"for (int kk = 0; kk < {D // 16}; ++kk) {{")
    if frag_smem is not None:
        e(ind + 1, "unsigned fa_[4];")
        e(ind + 1, "{")
        e(ind + 2, "const int r_ = warp_ * 16 + (lane_ & 15), ch_ = kk * 2 + (lane_ >> 4);")
        e(ind + 2, f"em_ldsm4(fa_, {frag_smem} + r_ * {D} + ((ch_ ^ (r_ & 7)) << 3));")
        e(ind + 1, "}")
        frag = "fa_"
    a = f"{frag}[kk]" if frag_smem is None else frag
    e(ind + 1, "#pragma unroll")
    e(ind + 1, f"for (int n2 = 0; n2 < {BN // 16}; ++n2) {{")
    e(ind + 2, "unsigned b_[4];")
    e(ind + 2, "const int r_ = n2 * 16 + (lane_ & 7) + ((lane_ >> 4) << 3), ch_ = kk * 2 + ((lane_ >> 3) & 1);")
    e(ind + 2, f"em_ldsm4(b_, {tile} + r_ * {D} + ((ch_ ^ (r_ & 7)) << 3));")
    e(ind + 2, f'EM_MMA16816("{ty}", {out}[2 * n2], {a}, b_[0], b_[1]);')
    e(ind + 2, f'EM_MMA16816("{ty}", {out}[2 * n2 + 1], {a}, b_[2], b_[3]);')
    e(ind + 1, "}")
    e(ind, "}")


def emit_running_max(w, x: str, BN: int, c: str, scale: str, ind: int) -> None:
    """Inside a loop over a thread's rows h: m_[h] raised to the max of the tile's values x[n][2h..2h+1]
    over the row's four lanes; `mc_` the new max times c (0 for a row with nothing yet) and `scale`
    = exp2(c (m_old - m_new)), the factor every running sum of the row is rescaled by."""
    e = w.emit
    e(ind, "float mx_ = m_[h];")
    e(ind, "#pragma unroll")
    e(ind, f"for (int n = 0; n < {BN // 8}; ++n) mx_ = fmaxf(mx_, fmaxf({x}[n][2 * h], {x}[n][2 * h + 1]));")
    e(ind, "mx_ = fmaxf(mx_, __shfl_xor_sync(0xffffffffu, mx_, 1));")
    e(ind, "mx_ = fmaxf(mx_, __shfl_xor_sync(0xffffffffu, mx_, 2));")
    e(ind, f"const float mc_ = (mx_ == -INFINITY ? 0.f : mx_) * {c};")
    e(ind, f"const float {scale} = em_ex2(fmaf(m_[h], {c}, -mc_));")
    e(ind, "m_[h] = mx_;")


def emit_online_step(w, BN: int, DV: int, c: str, ind: int, halves: int = 2, lazy: bool = False) -> None:
    """The online recurrence over the tile's scores s_ (X already applied) for the thread's two rows:
    running max m_, rescale of l_ and o_, s_ <- P = exp2(c (X - m)) (one FMA and ex2.approx).
    `halves=1`: rows 8-15 of the tile are padding (a decode group of at most 8 rows): only the first
    row of each thread is computed, the second's P set to 0. `lazy`: the output rows are rescaled
    only when the running max moved (a_ != 1: after the first tiles, seldom)."""
    e = w.emit
    if halves == 1:
        e(ind, "#pragma unroll")
        e(ind, f"for (int n = 0; n < {BN // 8}; ++n) s_[n][2] = s_[n][3] = 0.f;  /* (padding rows: P = 0) */")
    e(ind, "#pragma unroll")
    e(ind, f"for (int h = 0; h < {halves}; ++h) {{")
    emit_running_max(w, "s_", BN, c, "a_", ind + 1)
    e(ind + 1, "float ls_ = 0.f;")
    e(ind + 1, "#pragma unroll")
    e(ind + 1, f"for (int n = 0; n < {BN // 8}; ++n) {{")
    e(ind + 2, f"s_[n][2 * h] = em_ex2(fmaf(s_[n][2 * h], {c}, -mc_));")
    e(ind + 2, f"s_[n][2 * h + 1] = em_ex2(fmaf(s_[n][2 * h + 1], {c}, -mc_));")
    e(ind + 2, "ls_ += s_[n][2 * h] + s_[n][2 * h + 1];")
    e(ind + 1, "}")
    e(ind + 1, "l_[h] = l_[h] * a_ + ls_;")
    e(ind + 1, "#pragma unroll")
    rescale = f"for (int n = 0; n < {DV // 8}; ++n) {{ o_[n][2 * h] *= a_; o_[n][2 * h + 1] *= a_; }}"
    if lazy:
        e(ind + 1, f"if (a_ != 1.f) {{ {rescale} }}")
    else:
        e(ind + 1, rescale)
    e(ind, "}")


def emit_pv_mma(w, BN: int, DV: int, ty: str, ind: int, x: str = "s_", tile: str = "Vt", acc: str = "o_") -> None:
    """`acc` += P v: P re-packed from the accumulators `x` as A fragments, the value tile at `tile`
    by ldmatrix.trans."""
    e = w.emit
    pack = "em_pack_bf16" if ty == "bf16" else "em_pack_f16"
    e(ind, "#pragma unroll")
    e(ind, f"for (int kk = 0; kk < {BN // 16}; ++kk) {{")
    e(ind + 1, f"unsigned pa_[4] = {{{pack}({x}[2 * kk][0], {x}[2 * kk][1]), {pack}({x}[2 * kk][2], {x}[2 * kk][3]), "
               f"{pack}({x}[2 * kk + 1][0], {x}[2 * kk + 1][1]), {pack}({x}[2 * kk + 1][2], {x}[2 * kk + 1][3])}};")
    e(ind + 1, "#pragma unroll")
    e(ind + 1, f"for (int n2 = 0; n2 < {DV // 16}; ++n2) {{")
    e(ind + 2, "unsigned b_[4];")
    e(ind + 2, "const int r_ = kk * 16 + (lane_ & 7) + (((lane_ >> 3) & 1) << 3), ch_ = n2 * 2 + (lane_ >> 4);")
    e(ind + 2, f"em_ldsm4t(b_, {tile} + r_ * {DV} + ((ch_ ^ (r_ & 7)) << 3));")
    e(ind + 2, f'EM_MMA16816("{ty}", {acc}[2 * n2], pa_, b_[0], b_[1]);')
    e(ind + 2, f'EM_MMA16816("{ty}", {acc}[2 * n2 + 1], pa_, b_[2], b_[3]);')
    e(ind + 1, "}")
    e(ind, "}")


def emit_q_fragments(w, D: int, row: str, ind: int) -> None:
    """qf_[D/16][4]: this warp's 16 q rows (starting at smem row `row`) as mma A fragments."""
    e = w.emit
    e(ind, f"unsigned qf_[{D // 16}][4];")
    e(ind, "#pragma unroll")
    e(ind, f"for (int kk = 0; kk < {D // 16}; ++kk) {{")
    e(ind + 1, f"const int r_ = {row}, ch_ = kk * 2 + (lane_ >> 4);")
    e(ind + 1, f"em_ldsm4(qf_[kk], Qs + r_ * {D} + ((ch_ ^ (r_ & 7)) << 3));")
    e(ind, "}")


def render_flash(w, f: OnlineForm) -> sm.Expr:
    """Emit the body of kernel `w.k` in flash mode; returns the grid (blocks)."""
    cfg = w.cfg
    warps, BN = int(cfg.get("warps", 4)), int(cfg.get("BN", 64))
    BM = 16 * warps
    why = flash_applicable(w.k, f)
    if why:
        raise UnsupportedKernel(f"{w.k.name}: {why}")
    if BN % 16 or BN not in (32, 64, 128):
        raise UnsupportedKernel(f"flash BN={BN} (32, 64 or 128)")
    D, DV = f.depth.value, f.out_extent.value
    T = 32 * warps
    I = w.IDX
    ty = HALF[f.q.dtype.name]
    smem = 2 * (BM * D + 2 * BN * D + 2 * BN * DV)
    w.smem_bytes = smem
    e = w.emit
    rows = dict(f.rows)
    L = rows[f.query]
    batch = [(v, x) for v, x in f.rows if v != f.query]
    ntq = (L + (BM - 1)) // BM
    e(1, "extern __shared__ __align__(128) unsigned char em_dyn_smem[];")
    e(1, "unsigned short* Qs = reinterpret_cast<unsigned short*>(em_dyn_smem);")
    e(1, f"unsigned short* Ks = Qs + {BM * D};")
    e(1, f"unsigned short* Vs = Ks + {2 * BN * D};")
    e(1, "const int tid_ = threadIdx.x, warp_ = tid_ >> 5, lane_ = tid_ & 31;")
    e(1, f"{I} blk_ = blockIdx.x;")
    e(1, f"const {I} ntq_ = {w.idx(ntq)};")
    e(1, f"const {I} q0_ = (ntq_ - 1 - blk_ % ntq_) * {BM}; blk_ /= ntq_;  /* longest blocks first */")
    w.decompose("blk_", batch, 1)
    e(1, f"const {I} nq_ = {w.idx(L)}, nk_ = {w.idx(f.keys)};")
    qv, kv = sm.var("qi_", 0, None), sm.var("kr_", 0, None)

    def addr(v: ir.Val, subs: dict) -> str:
        return w.idx(sm.substitute(v.args[1], subs))

    dvar = sm.var("ch_", 0, None) * 8
    # q tile: copied, or computed (q's own prologue, e.g. a rotary embedding) chunk by chunk
    e(1, f"for (int c_ = tid_; c_ < {BM * D // 8}; c_ += {T}) {{")
    e(2, f"const int r_ = c_ / {D // 8}, ch_ = c_ % {D // 8};")
    e(2, f"const {I} qi_ = q0_ + r_;")
    if q_copied(f):
        e(2, f"em_cp16(Qs + r_ * {D} + ((ch_ ^ (r_ & 7)) << 3), "
             f"{f.q.args[0]} + (qi_ < nq_ ? {addr(f.q, {f.query: qv, f.depth_var: dvar})} : 0), qi_ < nq_);")
    else:
        e(2, "uint4 pk_ = make_uint4(0, 0, 0, 0);")
        e(2, "if (qi_ < nq_) {")
        e(3, f"const {I} {f.query} = qi_;")
        stage_q_chunk(w, f, 3)
        e(2, "}")
        e(2, f"*reinterpret_cast<uint4*>(Qs + r_ * {D} + ((ch_ ^ (r_ & 7)) << 3)) = pk_;")
    e(1, "}")
    # keys this block needs
    lim = key_limit(f)
    if lim is not None:
        e(1, f"const {I} qlast_ = (q0_ + {BM - 1} < nq_ ? q0_ + {BM - 1} : nq_ - 1);")
        e(1, f"{I} kend_ = qlast_ + ({w.idx(lim[0])}) + 1;")
        e(1, "kend_ = kend_ < nk_ ? kend_ : nk_; kend_ = kend_ > 0 ? kend_ : 0;")
        # keys every row of the block may see: tiles wholly below them need no mask
        e(1, f"const {I} kfull_ = q0_ + ({w.idx(lim[0])}) + 1;")
    else:
        e(1, f"const {I} kend_ = nk_;")
        e(1, f"const {I} kfull_ = nk_;")
    # the first key any row of the block may see (a left-padding mask's start): the key tiles start
    # there, so a sequence's keys fall in the same tiles whatever slot it starts at
    emit_key_floor(w, f, [(f.query, "q0_ + r_")], BM, "q0_ + r_ < nq_", 1)
    e(1, f"const {I} ntk_ = (kend_ > kbeg_ ? (kend_ - kbeg_ + {BN - 1}) / {BN} : 0);")

    def load_kv(tile: str, slot: str, ind: int):
        for v, width, base, fast in ((f.k, D, "Ks", f.depth_var), (f.v, DV, "Vs", f.out_var)):
            e(ind, f"for (int c_ = tid_; c_ < {BN * width // 8}; c_ += {T}) {{")
            e(ind + 1, f"const int r_ = c_ / {width // 8}, ch_ = c_ % {width // 8};")
            e(ind + 1, f"const {I} kr_ = kbeg_ + ({tile}) * {BN} + r_;")
            e(ind + 1, f"em_cp16({base} + ({slot}) * {BN * width} + r_ * {width} + ((ch_ ^ (r_ & 7)) << 3), "
                       f"{v.args[0]} + (kr_ < nk_ ? {addr(v, {KEY: kv, fast: dvar})} : 0), kr_ < nk_);")
            e(ind, "}")

    e(1, "if (ntk_ > 0) {")
    load_kv("0", "0", 2)
    e(1, "}")
    e(1, "em_cp_commit(); em_cp_wait_all(); __syncthreads();")
    emit_q_fragments(w, D, "warp_ * 16 + (lane_ & 15)", 1)
    e(1, "float m_[2] = {-INFINITY, -INFINITY}, l_[2] = {0.f, 0.f};")
    e(1, f"float o_[{DV // 8}][4];")
    e(1, "#pragma unroll")
    e(1, f"for (int n = 0; n < {DV // 8}; ++n) o_[n][0] = o_[n][1] = o_[n][2] = o_[n][3] = 0.f;")
    e(1, f"const {I} qrow_ = q0_ + warp_ * 16 + (lane_ >> 2);")
    e(1, f"for ({I} t_ = 0; t_ < ntk_; ++t_) {{")
    e(2, "if (t_ + 1 < ntk_) {")
    load_kv("t_ + 1", "(t_ + 1) & 1", 3)
    e(2, "}")
    e(2, "em_cp_commit();")
    e(2, f"const unsigned short* Kt = Ks + (t_ & 1) * {BN * D};")
    e(2, f"const unsigned short* Vt = Vs + (t_ & 1) * {BN * DV};")
    emit_scores_mma(w, D, BN, ty, 2)
    # X per score: masked (edge and diagonal tiles) and, where the key bound holds for every row of
    # the block and X' (X with that bound's conjunct true) reads no buffer, unmasked
    bufs = {b.name for b in w.k.buffers}
    loc_loads = [x for x in ir.val_toposort([f.x]) if x.op == "load" and x.args[0] not in bufs]
    X = replace(f.x, {ld: f.score for ld in loc_loads})
    cmul = 1.0
    if not bool(cfg.get("exact_scores", False)):
        X, cmul = streamlined(X, f.score)
    X_full = replace(X, {lim[1]: ir.const(True, dt.bool_)}) if lim is not None else X
    full_ok = not any(x.op == "load" for x in ir.val_toposort([X_full]))
    reads = any(x.op == "load" for x in ir.val_toposort([X]))

    def scores(Xv, guarded: bool, ind: int):
        e(ind, "#pragma unroll")
        e(ind, f"for (int n = 0; n < {BN // 8}; ++n) {{")
        e(ind + 1, "#pragma unroll")
        e(ind + 1, "for (int c = 0; c < 4; ++c) {")
        e(ind + 2, f"const {I} {f.query} = qrow_ + ((c >> 1) << 3);")
        e(ind + 2, f"const {I} {KEY} = kbeg_ + t_ * {BN} + n * 8 + ((lane_ & 3) << 1) + (c & 1);")
        e(ind + 2, f"const float {f.score_acc} = s_[n][c];")
        e(ind + 2, "float x_ = -INFINITY;")
        cond = [f"{KEY} < kend_"] if guarded else []
        if reads or not guarded:
            cond += [f"{f.query} < nq_"] if guarded else []
        e(ind + 2, f"if ({' && '.join(cond) or 'true'}) {{")
        env = w.vr.vals([Xv], ind + 3)
        e(ind + 3, f"x_ = {env[Xv]};")
        e(ind + 2, "}")
        e(ind + 2, "s_[n][c] = x_;")
        e(ind + 1, "}")
        e(ind, "}")

    if full_ok:
        e(2, f"if (kbeg_ + (t_ + 1) * {BN} <= kfull_ && kbeg_ + (t_ + 1) * {BN} <= nk_) {{")
        scores(X_full, False, 3)
        e(2, "} else {")
        scores(X, True, 3)
        e(2, "}")
    else:
        scores(X, True, 2)
    # online recurrence (exp2 as one FMA and ex2.approx: P is rounded to 16 bits next)
    c = repr(float(f.c) * cmul) + "f"
    emit_online_step(w, BN, DV, c, 2)
    emit_pv_mma(w, BN, DV, ty, 2)
    e(2, "em_cp_wait_all(); __syncthreads();")
    e(1, "}")
    # epilogue: O / l through the store's expression
    e(1, "#pragma unroll")
    e(1, "for (int h = 0; h < 2; ++h) {")
    e(2, "l_[h] += __shfl_xor_sync(0xffffffffu, l_[h], 1);")
    e(2, "l_[h] += __shfl_xor_sync(0xffffffffu, l_[h], 2);")
    e(2, "l_[h] = 1.f / l_[h];")
    e(1, "}")
    e(1, "#pragma unroll")
    e(1, f"for (int n = 0; n < {DV // 8}; ++n) {{")
    e(2, "#pragma unroll")
    e(2, "for (int c = 0; c < 4; ++c) {")
    e(3, f"const {I} {f.query} = qrow_ + ((c >> 1) << 3);")
    e(3, f"const {I} {f.out_var} = n * 8 + ((lane_ & 3) << 1) + (c & 1);")
    e(3, f"if ({f.query} < nq_) {{")
    e(4, f"const float {f.out_acc} = o_[n][c] * l_[c >> 1];")
    w.emitted_groups = {}
    env = w.vr.vals([f.store.value], 4)
    e(4, f"{f.store.buffer}[{w.idx(f.store.index)}] = {w.vr.store(f.store.buffer, env[f.store.value])};")
    e(3, "}")
    e(2, "}")
    e(1, "}")
    w.T = T
    return sm.minimum(ntq * sm.prod([x for _, x in batch]), 2 ** 31 - 1)


def emit_key_floor(w, f: OnlineForm, row_vars: list, rows: int, live: str, ind: int) -> None:
    """Declare `kbeg_`: the least first key (kernel/online.py key_floor) over the block's `rows`
    rows (`r_` from 0; `row_vars` [(var, C expression of r_)], `live` which r_ are real rows), 0 when
    the mask has no floor; at most kend_."""
    I = w.IDX
    flo = key_floor(f)
    if flo is None:
        w.emit(ind, f"const {I} kbeg_ = 0;")
        return
    w.emit(ind, f"{I} kbeg_ = kend_;")
    w.emit(ind, f"for (int r_ = 0; r_ < {rows}; ++r_) {{")
    w.emit(ind + 1, f"if (!({live})) continue;")
    for var, expr in row_vars:
        w.emit(ind + 1, f"const {I} {var} = {expr};")
    env = w.vr.vals([flo], ind + 1)
    w.emit(ind + 1, f"const {I} f_ = ({I})({env[flo]});")
    w.emit(ind + 1, "kbeg_ = f_ < kbeg_ ? f_ : kbeg_;")
    w.emit(ind, "}")
    w.emit(ind, "kbeg_ = kbeg_ > 0 ? kbeg_ : 0;")
