"""The columns form of the C renderer (cfg ``{"form": "columns"}``): a reduction down columns —
`out[o] = sum_r x[r, o]`, a bias's gradient, a sum over a leading axis — where the output's
innermost index is contiguous in memory and the reduced one is not.

The plain loops put the reduction innermost, so each output walks its column with a stride of a
whole row: a cache line read per term, 16x the bytes. A sum over the first axis of an 8192^2 float
array took 665-690 ms on the 2-core Zen 4 (torch 48). Here a block of W contiguous outputs keeps a
row of accumulators, and the reduction runs outside a vectorised, contiguous loop over the block:

    omp parallel for (outer outputs, blocks of W):  acc[0:W] = identity
      for r (the reduction, chunks of CHUNK for a long float sum):
        simd for j < W:  acc[j] op= term(o = block + j, r)
        (after each chunk: hi[j] += acc[j]; acc[j] = 0 — as codegen/c_cascade.py flushes)
      simd for j < W:  store(block + j, acc[j])   (the kernel's epilogue)

Each column's terms are added in the order the loops added them (save the flushes), so a max or an
integer sum is the same value.
"""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel import ir
from ..kernel.structure import Canon
from .clike import acc_identity, compute_type, max_fn

W = 256  # outputs a block keeps accumulators for (1 KB of floats: a row of them stays in L1)
CHUNK = 64  # terms a column adds in float between flushes into its double: a column has no vector
# lanes to split its sum (the loops' `omp simd` reduction had 16), so the chunk is shorter than
# c_cascade's — a float32 variance down 1000 rows was 5x the loops' error with chunks of 1024


def _stride(e: sm.Expr, var: str):
    """e(var + 1) - e(var) when it is a constant, else None."""
    d = sm.step(e, var)
    return d.value if d.is_const else None


def _loads(v: ir.Val) -> list:
    return [x for x in ir.val_toposort([v]) if x.op == "load"]


def applicable(c: Canon | None) -> bool:
    """Reduction stages over outer outputs (a mean, then a variance around it) whose last loop reads
    every load contiguously (or not at all), while some stage's innermost reduce loop reads a load
    with another stride."""
    if c is None or not c.stages or c.inner or not c.outer or not all(st.loops for st in c.stages):
        return False
    o = c.outer[-1][0]
    strided = False
    for st in c.stages:
        loads = _loads(st.update.value)
        if any(isinstance(ld.args[1], ir.Val) for ld in loads):
            return False  # a gather
        if any(_stride(ld.args[1], o) not in (0, 1) for ld in loads):
            return False
        r = st.loops[-1][0]
        strided |= any(_stride(ld.args[1], o) == 1 and _stride(ld.args[1], r) not in (0, 1) for ld in loads)
    return strided and _stride(c.store.index, o) == 1


def _arr(name: str) -> str:
    return f"{name}_c"


def render(r, c: Canon, omp_min_work: int) -> None:
    """The kernel body of the columns form into renderer `r` (codegen/c.py's _Renderer)."""
    e = r.emit
    lead, (o, n_o) = c.outer[:-1], c.outer[-1]
    n = r.idx(n_o)
    work = r.idx(sm.prod(ex for _, ex in c.outer) * sum((sm.prod(ex for _, ex in st.loops) for st in c.stages), sm.ZERO))
    e(1, f"#pragma omp parallel for collapse({len(lead) + 1}) schedule(static) if(({work}) >= {omp_min_work})")
    for i, (v, ex) in enumerate(lead):
        e(1 + i, f"for (long long {v} = 0; {v} < {r.idx(ex)}; {v}++) {{")
    ind = 1 + len(lead)
    e(ind, f"for (long long ob_ = 0; ob_ < {n}; ob_ += {W}) {{")
    ind += 1
    e(ind, f"const long long nb_ = EM_MIN({W}, {n} - ob_);")
    done: list = []  # the stages summed so far: their values per column, for the later stages' terms
    for st in c.stages:
        _stage(r, st, ind, o, done)
        done.append(st)
    e(ind, "#pragma omp simd")
    e(ind, "for (long long j_ = 0; j_ < nb_; j_++) {")
    e(ind + 1, f"const long long {o} = ob_ + j_;")
    _values(r, done, ind + 1)
    envs = r.vr.vals([c.store.value], ind + 1)
    e(ind + 1, f"{c.store.buffer}[{r.idx(c.store.index)}] = {r.vr.store(c.store.buffer, envs[c.store.value])};")
    e(ind, "}")
    e(ind - 1, "}")
    for i in reversed(range(len(lead))):
        e(1 + i, "}")


def _cascades(st) -> bool:
    return st.acc.op == "sum" and compute_type(st.acc.dtype) == "float"


def _values(r, stages: list, ind: int) -> None:
    """The finished stages' values for column j_ (a cascaded sum: its double plus the float left)."""
    for st in stages:
        a, ct = st.acc.name, compute_type(st.acc.dtype)
        total = f"(float)({a}_hi[j_] + (double){_arr(a)}[j_])" if _cascades(st) else f"{_arr(a)}[j_]"
        r.emit(ind, f"const {ct} {a} = {total};")


def _stage(r, st, ind: int, o: str, done: list) -> None:
    e = r.emit
    a, ct = st.acc.name, compute_type(st.acc.dtype)
    cascade = _cascades(st)
    e(ind, f"{ct} {_arr(a)}[{W}];")
    e(ind, f"for (long long j_ = 0; j_ < {W}; j_++) {_arr(a)}[j_] = {acc_identity(st.acc.op, st.acc.dtype)};")
    if cascade:
        e(ind, f"double {a}_hi[{W}];")
        e(ind, f"for (long long j_ = 0; j_ < {W}; j_++) {a}_hi[j_] = 0.0;")
    for i, (v, ex) in enumerate(st.loops[:-1]):
        e(ind + i, f"for (long long {v} = 0; {v} < {r.idx(ex)}; {v}++) {{")
    t = ind + len(st.loops) - 1
    rv, rex = st.loops[-1]
    if cascade:  # the innermost reduce loop a chunk at a time, flushed into the doubles after each
        b = CHUNK
        e(t, f"for (long long {rv}_c = 0; {rv}_c < {r.idx(rex)}; {rv}_c += {b}) {{")
        e(t + 1, f"for (long long {rv} = {rv}_c; {rv} < EM_MIN({rv}_c + {b}, {r.idx(rex)}); {rv}++) {{")
    else:
        e(t, f"for (long long {rv} = 0; {rv} < {r.idx(rex)}; {rv}++) {{")
    j = t + (2 if cascade else 1)
    e(j, "#pragma omp simd")
    e(j, "for (long long j_ = 0; j_ < nb_; j_++) {")
    e(j + 1, f"const long long {o} = ob_ + j_;")
    _values(r, done, j + 1)
    env = r.vr.vals([st.update.value], j + 1)
    val = env[st.update.value]
    upd = f"{_arr(a)}[j_] += {val};" if st.acc.op == "sum" else f"{_arr(a)}[j_] = {max_fn(ct)}({_arr(a)}[j_], {val});"
    e(j + 1, upd)
    e(j, "}")
    e(j - 1, "}")
    if cascade:
        e(t + 1, f"for (long long j_ = 0; j_ < nb_; j_++) {{ {a}_hi[j_] += (double){_arr(a)}[j_]; {_arr(a)}[j_] = 0.0f; }}")
        e(t, "}")
    for i in reversed(range(len(st.loops) - 1)):
        e(ind + i, "}")
