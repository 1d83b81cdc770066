"""The scan form of the C renderer (cfg ``{"form": "scan"}``) for the prefix sums of kernel/scan.py:
each block of n positions is one running sum (n adds), the kernel's own store (its epilogue)
written at each position as the sum reaches it:

    omp parallel for block:  run = 0
      for p < n:  run += x(r = p);  store(position of p, acc = run)

The plain loops do n adds an output (a masked sum over the whole block) and read every term n
times. A block's first positions before the axis (a shifted axis: an exclusive cumsum's block -1)
read their terms at position 0, as the CUDA form does (codegen/cuda_scan.py)."""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel.scan import scan_form
from ..kernel.structure import Canon
from .clike import compute_type


def applicable(c: Canon | None) -> bool:
    return scan_form(c) is not None


def render(r, c: Canon, omp_min_work: int) -> None:
    """The kernel body of the scan form into renderer `r` (codegen/c.py's _Renderer)."""
    f = scan_form(c)
    terms = f.terms()  # (a kernel may scan several terms side by side: a running sum each)
    ct = [compute_type(acc.dtype) for _, _, acc in terms]
    n, ext, shift = f.n, f.extent.value, f.shift
    first = -1 if shift else 0
    q = (ext - 1 - shift) // n - first + 1
    loops = [("scan_s_", sm.const(q)) if v == f.var else (v, e) for v, e in c.outer]
    nseg = sm.prod(e for _, e in loops)
    e = r.emit
    work = r.idx(nseg * n)
    e(1, f"#pragma omp parallel for schedule(static) if(({work}) >= {omp_min_work})")
    e(1, f"for (long long s_ = 0; s_ < {r.idx(nseg)}; s_++) {{")
    r.decompose("s_", loops, 2)
    for k, t in enumerate(ct):
        e(2, f"{t} run{k}_ = 0;")
    e(2, f"for (long long p_ = 0; p_ < {n}; p_++) {{")
    e(3, "{")  # the term: read at a position inside the axis (the same at every position of the block)
    e(4, f"long long {f.var} = (scan_s_ + {first}) * {n} + {shift} + p_;")
    e(4, f"{f.var} = {f.var} < 0 ? 0 : ({f.var} > {ext - 1} ? {ext - 1} : {f.var});")
    for rv in dict.fromkeys(rv for rv, _, _ in terms):
        e(4, f"const long long {rv} = {f'{n - 1} - p_' if f.suffix else 'p_'};")
    env = r.vr.vals([x for _, x, _ in terms], 4)
    for k, (_, x, _) in enumerate(terms):
        e(4, f"run{k}_ += {env[x]};")
    e(3, "}")
    pos = f"{n - 1} - p_" if f.reverse != f.suffix else "p_"  # (a suffix sum reads its terms backwards)
    e(3, f"const long long {f.var} = (scan_s_ + {first}) * {n} + {shift} + {pos};")
    e(3, f"if ({f.var} >= 0 && {f.var} < {ext}) {{")
    for k, (_, _, acc) in enumerate(terms):
        e(4, f"const {ct[k]} {acc.name} = run{k}_;")
    envs = r.vr.vals([c.store.value], 4)
    e(4, f"{c.store.buffer}[{r.idx(c.store.index)}] = {r.vr.store(c.store.buffer, envs[c.store.value])};")
    e(3, "}")
    e(2, "}")
    e(1, "}")
