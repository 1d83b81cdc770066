"""The guarded-rows form of the C renderer (cfg ``{"form": "guarded"}``): a sum whose terms are
`where(cond, x, 0)` with `cond` blind to some output dims — an embedding's gradient, the one-hot
contraction `dW[v, c] = sum_i (ids[i] == v ? g[i, c] : 0)` that autograd makes of a gather.

The plain loops test the condition once per (v, c, i): V x C x M compares, and read g down a
column. Here the outputs the condition reads (v) are the parallel loop, a row of accumulators
covers the others (c), and the reduction (i) runs between: each i tests the condition once and,
where it holds, adds x's row to the accumulators (a vectorised, contiguous loop):

    omp parallel for v:  acc[0:C] = 0
      for i:  if cond(v, i):  simd for c:  acc[c] += x(c, i)
      simd for c:  store(v, c, acc[c])   (the kernel's epilogue)

V x M compares and M x C adds (each i matches one v). The terms skipped are exact zeros, so the
sums are the plain loops' (save the sign of a zero). Measured on the 2-core Zen 4: a 2-layer LM's
embedding gradient (64 x 64 x 512 lookups) 1.17 ms in the loops.
"""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel.guarded import applicable, guarded_form  # noqa: F401 (applicable re-exported)
from ..kernel.structure import Canon
from .clike import compute_type

def render(r, c: Canon, omp_min_work: int) -> None:
    """The kernel body of the guarded form into renderer `r` (codegen/c.py's _Renderer)."""
    cond, x, guard, rows = guarded_form(c)
    st = c.stages[0]
    ct = compute_type(st.acc.dtype)
    e = r.emit
    n = sm.prod(ex for _, ex in rows).value
    work = r.idx(sm.prod(ex for _, ex in c.outer) * sm.prod(ex for _, ex in st.loops))
    col = f" collapse({len(guard)})" if len(guard) > 1 else ""
    e(1, f"#pragma omp parallel for{col} schedule(static) if(({work}) >= {omp_min_work})")
    for i, (v, ex) in enumerate(guard):
        e(1 + i, f"for (long long {v} = 0; {v} < {r.idx(ex)}; {v}++) {{")
    ind = 1 + len(guard)
    e(ind, f"{ct} accr_[{n}];")
    e(ind, f"for (long long j_ = 0; j_ < {n}; j_++) accr_[j_] = 0;")
    for i, (v, ex) in enumerate(st.loops):
        e(ind + i, f"for (long long {v} = 0; {v} < {r.idx(ex)}; {v}++) {{")
    t = ind + len(st.loops)
    env = r.vr.vals([cond], t)
    e(t, f"if (!({env[cond]})) continue;")
    e(t, "#pragma omp simd")
    e(t, f"for (long long j_ = 0; j_ < {n}; j_++) {{")
    r.decompose("j_", rows, t + 1)
    envx = r.vr.vals([x], t + 1, env)
    e(t + 1, f"accr_[j_] += {envx[x]};")
    e(t, "}")
    for i in reversed(range(len(st.loops))):
        e(ind + i, "}")
    e(ind, "#pragma omp simd")
    e(ind, f"for (long long j_ = 0; j_ < {n}; j_++) {{")
    r.decompose("j_", rows, ind + 1)
    e(ind + 1, f"const {ct} {st.acc.name} = accr_[j_];")
    envs = r.vr.vals([c.store.value], ind + 1)
    e(ind + 1, f"{c.store.buffer}[{r.idx(c.store.index)}] = {r.vr.store(c.store.buffer, envs[c.store.value])};")
    e(ind, "}")
    for i in reversed(range(len(guard))):
        e(1 + i, "}")
