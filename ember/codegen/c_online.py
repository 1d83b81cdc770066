"""The CPU's `online` form: a kernel in online-softmax form (kernel/online.py) as one pass over the
keys per row, scores never stored.

Per point of the row loops (OpenMP over them): the running max m, sum l and a row of Dv output
accumulators; per key, the score q . k_j (a vectorised dot product), the kernel's own X (scale,
mask, casts), and when X raises the max, the rescale exp2(c (m_old - m)) of l and the row; then
P = exp2(c (X - m)) (rounded through P's dtype when the graph rounds it) added into l and, times
v_j, into the row (a vectorised axpy). A key X masks out (-inf) adds nothing and is skipped; with a
causal-style bound (`key_limit`) the loop stops at the row's last key. Finally O / l goes through
the store's expression (the epilogue).
"""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel import ir
from ..kernel.online import KEY, OnlineForm, key_limit, replace
from .clike import compute_type

ROW_MAX = 4096  # output accumulators a row keeps on the stack


def applicable(f: OnlineForm | None) -> bool:
    return f is not None and f.out_extent.is_const and f.out_extent.value <= ROW_MAX


def render(r, f: OnlineForm, omp_min_work: int) -> None:
    """Emit kernel `r.k`'s body (r: codegen/c.py's renderer) in the online form."""
    e, idx = r.emit, r.idx
    DV = f.out_extent.value
    ct = compute_type(f.accum)
    work = idx(sm.prod([x for _, x in f.rows]) * f.keys * ((f.depth if f.depth is not None else sm.ONE) + f.out_extent))
    col = f" collapse({len(f.rows)})" if len(f.rows) > 1 else ""
    e(1, f"#pragma omp parallel for{col} schedule(dynamic, 1) if(({work}) >= {omp_min_work})")
    for i, (var, ext) in enumerate(f.rows):
        e(1 + i, f"for (long long {var} = 0; {var} < {idx(ext)}; {var}++) {{")
    ind = 1 + len(f.rows)
    e(ind, f"{ct} m_ = -INFINITY, l_ = 0;")
    e(ind, f"{ct} o_[{DV}];")
    e(ind, f"for (int e_ = 0; e_ < {DV}; e_++) o_[e_] = 0;")
    lim = key_limit(f)
    if lim is not None:
        e(ind, f"long long kend_ = {f.query} + ({idx(lim[0])}) + 1;")
        e(ind, f"if (kend_ > {idx(f.keys)}) kend_ = {idx(f.keys)};")
    else:
        e(ind, f"const long long kend_ = {idx(f.keys)};")
    e(ind, f"for (long long {KEY} = 0; {KEY} < kend_; {KEY}++) {{")
    i2 = ind + 1
    X = f.x
    if f.product is not None:  # the score's own contraction q . k_j
        e(i2, f"{ct} {f.score_acc} = 0;")
        e(i2, f"#pragma omp simd reduction(+:{f.score_acc})")
        e(i2, f"for (long long {f.depth_var} = 0; {f.depth_var} < {idx(f.depth)}; {f.depth_var}++) {{")
        env = r.vr.vals([f.product], i2 + 1)
        e(i2 + 1, f"{f.score_acc} += {env[f.product]};")
        e(i2, "}")
        bufs = {b.name for b in r.k.buffers}
        loc = [x for x in ir.val_toposort([f.x]) if x.op == "load" and x.args[0] not in bufs]
        X = replace(f.x, {ld: f.score for ld in loc})
    env = r.vr.vals([X], i2)
    e(i2, f"const {ct} x_ = {env[X]};")
    e(i2, "if (x_ == -INFINITY) continue;  /* adds exp2(-inf) = 0 */")
    c = repr(float(f.c))
    e(i2, "if (x_ > m_) {")
    e(i2 + 1, f"const {ct} a_ = exp2f((m_ - x_) * {c}f);")
    e(i2 + 1, "l_ *= a_;")
    e(i2 + 1, "#pragma omp simd")
    e(i2 + 1, f"for (int e_ = 0; e_ < {DV}; e_++) o_[e_] *= a_;")
    e(i2 + 1, "m_ = x_;")
    e(i2, "}")
    p = f"exp2f((x_ - m_) * {c}f)"
    if f.p_dtype is not None:
        p = r.vr.d.round_through(p, f.p_dtype)
    e(i2, f"const {ct} p_ = {p};")
    e(i2, "l_ += p_;")
    e(i2, "#pragma omp simd")
    e(i2, f"for (long long {f.out_var} = 0; {f.out_var} < {DV}; {f.out_var}++) {{")
    env = r.vr.vals([f.v], i2 + 1)
    e(i2 + 1, f"o_[{f.out_var}] += p_ * {env[f.v]};")
    e(i2, "}")
    e(ind, "}")
    e(ind, f"const {ct} il_ = 1 / l_;")
    e(ind, f"for (long long {f.out_var} = 0; {f.out_var} < {DV}; {f.out_var}++) {{")
    e(ind + 1, f"const {ct} {f.out_acc} = o_[{f.out_var}] * il_;")
    env = r.vr.vals([f.store.value], ind + 1)
    e(ind + 1, f"{f.store.buffer}[{idx(f.store.index)}] = {r.vr.store(f.store.buffer, env[f.store.value])};")
    e(ind, "}")
    for i in reversed(range(len(f.rows))):
        e(1 + i, "}")
