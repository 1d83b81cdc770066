"""The window form of the C renderer (cfg ``{"form": "window", "vb": 64}``): a short reduction per
output (a depthwise convolution's 3x3 taps, a pooling window), vectorised across the outputs.

The plain loop nest keeps one accumulator per output and runs the few taps innermost, where
nothing vectorises (a 3-trip loop) and gcc's guarded loads branch. Here the innermost output
dimension is cut into blocks of VB outputs with one accumulator each, the taps run outside, and the
innermost loop walks the block's outputs (`omp simd`: a vector of outputs per instruction, the
padding guards as masks):

    omp parallel for (the other outer dims)
      for each block of VB outputs:  acc[0:VB] = identity
        for each tap:  simd for j < VB:  acc[j] = combine(acc[j], value(output ob + j, tap))
        simd for j < VB:  store(output ob + j, acc[j])   (the kernel's epilogue)
"""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel.structure import Canon
from .clike import acc_identity, compute_type

VB = 64  # outputs per block
MAX_TAPS = 64  # reductions longer than this keep the other forms


def applicable(c: Canon | None) -> bool:
    """One short reduction per output of a static length, outputs along a static innermost loop,
    no tail: a depthwise conv, a pooling window."""
    if c is None or len(c.stages) != 1 or c.inner or not c.outer:
        return False
    st = c.stages[0]
    taps = sm.prod(e for _, e in st.loops)
    o, last = c.outer[-1]
    return (bool(st.loops) and taps.is_const and 1 < taps.value <= MAX_TAPS and last.is_const and last.value >= 8
            and st.acc.op in ("sum", "max") and compute_type(st.acc.dtype) in ("float", "double")
            and _walks_outputs(st.update.value, o))


def _walks_outputs(val, o: str) -> bool:
    """Whether some load steps by 1 or 2 elements from one output to the next (a window sliding
    along the outputs, stride 1 or 2), so a vector of outputs reads nearby memory; a reduction over
    a row's last axis (outputs a row apart) keeps the loops, which vectorise along the row."""
    from ..kernel import ir
    for v in ir.val_toposort([val]):
        if v.op == "load" and not isinstance(v.args[1], ir.Val):
            step = sm.step(v.args[1], o)
            if step.is_const and step.value in (1, 2):
                return True
    return False


def render(r, c: Canon, cfg: dict, omp_min_work: int) -> None:
    """The kernel body of the window form into renderer `r` (codegen/c.py's _Renderer)."""
    vb = int(cfg.get("vb", VB))
    # 32-bit indices where every buffer allows: the padding guards then compare 32-bit values, and
    # gcc vectorises their masks with the 32-bit loads (64-bit masks left the loop scalar)
    I = "int" if all(b.size.is_const and b.size.value < 2 ** 31 - 1024 for b in r.k.buffers) and not r.k.dims else "long long"
    st = c.stages[0]
    ct = compute_type(st.acc.dtype)
    acc = st.acc.name
    e = r.emit
    outer, (o, N) = c.outer[:-1], c.outer[-1]
    taps = sm.prod(x for _, x in st.loops)
    work = r.idx(sm.prod(x for _, x in c.outer) * taps)
    if outer:
        col = f" collapse({len(outer)})" if len(outer) > 1 else ""
        e(1, f"#pragma omp parallel for{col} schedule(static) if(({work}) >= {omp_min_work})")
        for i, (v, x) in enumerate(outer):
            e(1 + i, f"for ({I} {v} = 0; {v} < {r.idx(x)}; {v}++) {{")
    else:
        e(1, f"#pragma omp parallel for schedule(static) if(({work}) >= {omp_min_work})")
    ind = 1 + len(outer)
    e(ind, f"for ({I} ob_ = 0; ob_ < {r.idx(N)}; ob_ += {vb}) {{")
    e(ind + 1, f"const {I} nb_ = {r.idx(N)} - ob_ < {vb} ? {r.idx(N)} - ob_ : {vb};")
    e(ind + 1, f"{ct} accv_[{vb}];")
    e(ind + 1, f"for ({I} j_ = 0; j_ < {vb}; j_++) accv_[j_] = {acc_identity(st.acc.op, st.acc.dtype)};")
    for i, (v, x) in enumerate(st.loops):
        e(ind + 1 + i, f"for ({I} {v} = 0; {v} < {r.idx(x)}; {v}++) {{")
    t = ind + 1 + len(st.loops)
    e(t, "#pragma omp simd")
    e(t, f"for ({I} j_ = 0; j_ < nb_; j_++) {{")
    e(t + 1, f"const {I} {o} = ob_ + j_;")
    env = r.vr.vals([st.update.value], t + 1)
    val = env[st.update.value]
    if st.acc.op == "sum":
        e(t + 1, f"accv_[j_] += {val};")
    else:
        e(t + 1, f"accv_[j_] = {'em_maxf' if ct == 'float' else 'em_maxd'}(accv_[j_], {val});")
    e(t, "}")
    for i in reversed(range(len(st.loops))):
        e(ind + 1 + i, "}")
    e(ind + 1, "#pragma omp simd")
    e(ind + 1, f"for ({I} j_ = 0; j_ < nb_; j_++) {{")
    e(ind + 2, f"const {I} {o} = ob_ + j_;")
    e(ind + 2, f"const {ct} {acc} = accv_[j_];")
    env = r.vr.vals([c.store.value], ind + 2)
    e(ind + 2, f"{c.store.buffer}[{r.idx(c.store.index)}] = {r.vr.store(c.store.buffer, env[c.store.value])};")
    e(ind + 1, "}")
    e(ind, "}")
    for i in reversed(range(len(outer))):
        e(1 + i, "}")
