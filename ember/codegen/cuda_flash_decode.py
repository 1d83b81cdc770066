"""The `decode` mode: a kernel in online-softmax form (kernel/online.py) with few query rows (one new
token per sequence, the heads of a GQA group) as flash-decoding: the keys split over the blocks of a
thread-block cluster and over the warps of each block, partial (max, sum, row) triples combined.

* the query rows are every row loop the keys and values do not depend on (a GQA group's heads and
  the new tokens): R of them, all held by every warp (q in registers, D / 32 elements per lane), so
  each key and value row is read from memory once for the whole group;
* block `rank` of a cluster of C takes keys [rank * chunk, (rank + 1) * chunk), its W warps take
  groups of U keys in turn: U rows of k and v loaded at once (lanes across the head dimension,
  4- or 8-byte loads), the R x U scores reduced across the warp by shuffles, the kernel's own X per
  score, then the online recurrence per row (one rescale per U keys);
* the warps' triples are combined in shared memory, the blocks' through distributed shared memory
  by rank 0 of the cluster, which applies 1 / l and the store's expression.

Bandwidth, not arithmetic, bounds it: it is written to keep U * W rows of k and v in flight per SM.
"""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel import ir
from ..kernel.online import KEY, OnlineForm, key_limit, replace
from ..kernel.structure import UnsupportedKernel
from .cuda_flash import HALF, _operand

ROWS_MAX = 16  # query rows one kernel holds in registers


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
    for v, fast, what in ((f.q, f.depth_var, "q"), (f.k, f.depth_var, "k"), (f.v, f.out_var, "v")):
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
    W, U, C = int(cfg.get("warps", 8)), int(cfg.get("unroll", 4)), int(cfg.get("cluster", 1))
    D, DV = f.depth.value, f.out_extent.value
    EL, EV = D // 32, DV // 32
    qv = query_vars(f)
    groups = [(v, e) for v, e in f.rows if (v, e) not in qv]
    R = sm.prod([e for _, e in qv]).value
    I = w.IDX
    e = w.emit
    c = repr(float(f.c)) + "f"
    st = w.vr.d.storage_type(f.k.dtype)
    pair = {2: "unsigned int", 4: "uint2"}
    smem = 4 * (W * R * (DV + 2) + R * (DV + 2))
    w.smem_bytes = smem
    e(1, "extern __shared__ __align__(16) unsigned char em_dyn_smem[];")
    e(1, "float* wm_ = reinterpret_cast<float*>(em_dyn_smem);  /* [W][R] maxima, [W][R] sums, [W][R][DV] rows */")
    e(1, f"float* wl_ = wm_ + {W * R};")
    e(1, f"float* wo_ = wl_ + {W * R};")
    e(1, f"float* bm_ = wo_ + {W * R * DV};  /* the block's combined triple: [R], [R], [R][DV] */")
    e(1, f"float* bl_ = bm_ + {R};")
    e(1, f"float* bo_ = bl_ + {R};")
    e(1, "const int tid_ = threadIdx.x, warp_ = tid_ >> 5, lane_ = tid_ & 31;")
    e(1, f"const unsigned rank_ = {'em_cluster_rank()' if C > 1 else '0u'};")
    e(1, f"{I} blk_ = blockIdx.x / {C};")
    w.decompose("blk_", groups, 1)
    e(1, f"const {I} nk_ = {w.idx(f.keys)};")
    lim = key_limit(f)
    last = {v: ext - 1 for v, ext in qv}
    if lim is not None and f.query in last:
        e(1, f"{I} kend_ = ({w.idx(last[f.query])}) + ({w.idx(lim[0])}) + 1;")
        e(1, "kend_ = kend_ < nk_ ? kend_ : nk_;")
    else:
        e(1, f"const {I} kend_ = nk_;")
    e(1, f"const {I} chunk_ = (kend_ + {C * U - 1}) / {C * U} * {U};")
    e(1, f"const {I} k0_ = rank_ * chunk_, k1_ = (k0_ + chunk_ < kend_ ? k0_ + chunk_ : kend_);")

    def at_row(r: str, ind: int):
        """Declare the query row variables of row index `r` (a C expression)."""
        t, rest = r, qv[1:]
        for i, (var, ext) in enumerate(reversed(qv)):
            if i == len(qv) - 1:
                e(ind, f"const {I} {var} = {t};")
            else:
                e(ind, f"const {I} {var} = ({t}) % {ext.value};")
                t = f"({t}) / {ext.value}"
        del rest

    # q in registers: q_[r][i] = q(row r, depth lane * EL + i)
    e(1, f"float q_[{R}][{EL}];")
    e(1, "#pragma unroll")
    e(1, f"for (int r = 0; r < {R}; ++r) {{")
    at_row("r", 2)
    dv = sm.var("lane_", 0, None) * EL
    e(2, f"const {pair[EL]} qq_ = *reinterpret_cast<const {pair[EL]}*>(&{f.q.args[0]}[{w.idx(sm.substitute(f.q.args[1], {f.depth_var: dv}))}]);")
    e(2, "#pragma unroll")
    e(2, f"for (int i = 0; i < {EL}; ++i) q_[r][i] = {w.vr.d.widen(f'reinterpret_cast<const {st}*>(&qq_)[i]', f.q.dtype, 'float')};")
    e(1, "}")
    e(1, f"float m_[{R}], l_[{R}], o_[{R}][{EV}];")
    e(1, "#pragma unroll")
    e(1, f"for (int r = 0; r < {R}; ++r) {{ m_[r] = -INFINITY; l_[r] = 0.f; for (int i = 0; i < {EV}; ++i) o_[r][i] = 0.f; }}")
    e(1, f"for ({I} j0_ = k0_ + warp_ * {U}; j0_ < k1_; j0_ += {W * U}) {{")
    e(2, f"{pair[EL]} kk_[{U}]; {pair[EV]} vv_[{U}];")
    kvar = sm.var("kr_", 0, None)
    e(2, "#pragma unroll")
    e(2, f"for (int u = 0; u < {U}; ++u) {{")
    e(3, f"const {I} kr_ = j0_ + u < k1_ ? j0_ + u : k1_ - 1;  /* (a clamped row: its score is masked) */")
    e(3, f"kk_[u] = *reinterpret_cast<const {pair[EL]}*>(&{f.k.args[0]}[{w.idx(sm.substitute(f.k.args[1], {KEY: kvar, f.depth_var: dv}))}]);")
    dvv = sm.var("lane_", 0, None) * EV
    e(3, f"vv_[u] = *reinterpret_cast<const {pair[EV]}*>(&{f.v.args[0]}[{w.idx(sm.substitute(f.v.args[1], {KEY: kvar, f.out_var: dvv}))}]);")
    e(2, "}")
    e(2, f"float x_[{R}][{U}];")
    bufs = {b.name for b in w.k.buffers}
    loc = [x for x in ir.val_toposort([f.x]) if x.op == "load" and x.args[0] not in bufs]
    X = replace(f.x, {ld: f.score for ld in loc})
    e(2, "#pragma unroll")
    e(2, f"for (int u = 0; u < {U}; ++u) {{")
    e(3, "#pragma unroll")
    e(3, f"for (int r = 0; r < {R}; ++r) {{")
    e(4, "float s_ = 0.f;")
    e(4, "#pragma unroll")
    e(4, f"for (int i = 0; i < {EL}; ++i) s_ += q_[r][i] * "
         f"{w.vr.d.widen(f'reinterpret_cast<const {st}*>(&kk_[u])[i]', f.k.dtype, 'float')};")
    e(4, "#pragma unroll")
    e(4, "for (int o = 16; o > 0; o >>= 1) s_ += __shfl_xor_sync(0xffffffffu, s_, o);")
    e(4, f"const {I} {KEY} = j0_ + u;")
    e(4, f"const float {f.score_acc} = s_;")
    e(4, "float x = -INFINITY;")
    e(4, f"if ({KEY} < k1_) {{")
    at_row("r", 5)
    env = w.vr.vals([X], 5)
    e(5, f"x = {env[X]};")
    e(4, "}")
    e(4, "x_[r][u] = x;")
    e(3, "}")
    e(2, "}")
    e(2, "#pragma unroll")
    e(2, f"for (int r = 0; r < {R}; ++r) {{")
    e(3, "float mx_ = m_[r];")
    e(3, "#pragma unroll")
    e(3, f"for (int u = 0; u < {U}; ++u) mx_ = fmaxf(mx_, x_[r][u]);")
    e(3, f"const float mc_ = (mx_ == -INFINITY ? 0.f : mx_) * {c};")
    e(3, f"const float a_ = em_ex2(fmaf(m_[r], {c}, -mc_));")
    e(3, "m_[r] = mx_; l_[r] *= a_;")
    e(3, "#pragma unroll")
    e(3, f"for (int i = 0; i < {EV}; ++i) o_[r][i] *= a_;")
    e(3, "#pragma unroll")
    e(3, f"for (int u = 0; u < {U}; ++u) {{")
    p = f"em_ex2(fmaf(x_[r][u], {c}, -mc_))"
    if f.p_dtype is not None:
        p = w.vr.d.round_through(p, f.p_dtype)
    e(4, f"const float p_ = {p};")
    e(4, "l_[r] += p_;")
    e(4, "#pragma unroll")
    e(4, f"for (int i = 0; i < {EV}; ++i) o_[r][i] += p_ * "
         f"{w.vr.d.widen(f'reinterpret_cast<const {st}*>(&vv_[u])[i]', f.v.dtype, 'float')};")
    e(3, "}")
    e(2, "}")
    e(1, "}")
    # the warps' triples -> the block's
    e(1, "#pragma unroll")
    e(1, f"for (int r = 0; r < {R}; ++r) {{")
    e(2, f"if (lane_ == 0) {{ wm_[warp_ * {R} + r] = m_[r]; wl_[warp_ * {R} + r] = l_[r]; }}")
    e(2, "#pragma unroll")
    e(2, f"for (int i = 0; i < {EV}; ++i) wo_[(warp_ * {R} + r) * {DV} + lane_ * {EV} + i] = o_[r][i];")
    e(1, "}")
    e(1, "__syncthreads();")
    e(1, f"for (int t = tid_; t < {R * DV}; t += {32 * W}) {{")
    e(2, f"const int r = t / {DV}, col = t % {DV};")
    e(2, "float M = -INFINITY;")
    e(2, f"for (int q = 0; q < {W}; ++q) M = fmaxf(M, wm_[q * {R} + r]);")
    e(2, f"const float Mc = (M == -INFINITY ? 0.f : M) * {c};")
    e(2, "float L = 0.f, O = 0.f;")
    e(2, f"for (int q = 0; q < {W}; ++q) {{")
    e(3, f"const float s = em_ex2(fmaf(wm_[q * {R} + r], {c}, -Mc));")
    e(3, f"L += s * wl_[q * {R} + r]; O += s * wo_[(q * {R} + r) * {DV} + col];")
    e(2, "}")
    e(2, f"bo_[r * {DV} + col] = O;")
    e(2, "if (col == 0) { bm_[r] = M; bl_[r] = L; }")
    e(1, "}")
    if C > 1:
        e(1, "em_cluster_sync();  /* every block's triple is in its shared memory */")
    else:
        e(1, "__syncthreads();")
    e(1, "if (rank_ == 0) {")
    e(2, f"for (int t = tid_; t < {R * DV}; t += {32 * W}) {{")
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
        e(3, f"const float L = bl_[r], O = bo_[r * {DV} + {f.out_var}];")
    at_row("r", 3)
    e(3, f"const float {f.out_acc} = O / L;")
    w.emitted_groups = {}
    env = w.vr.vals([f.store.value], 3)
    e(3, f"{f.store.buffer}[{w.idx(f.store.index)}] = {w.vr.store(f.store.buffer, env[f.store.value])};")
    e(2, "}")
    e(1, "}")
    if C > 1:
        e(1, "em_cluster_sync();  /* rank 0 has read the others' shared memory */")
    w.T = 32 * W
    return sm.prod([x for _, x in groups]) * C
