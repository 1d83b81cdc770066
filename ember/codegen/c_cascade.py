"""Cascaded float sums in C: a long float32 sum flushed into a double a chunk at a time.

A sum the C renderer emits as plain loops accumulates sequentially: `omp simd` gives each vector
lane its own partial, but a lane still adds n / 16 terms one after another, and the reduce loops
outside the innermost add its result into the same float once per iteration. Over a GroupNorm
group of 78,608 elements (the real KernelBench's level-2 61) the variance came out 5.6e-4 off in
relative terms — 1000x PyTorch's error on its own outputs. The CUDA backend does not have this
problem (a thread sums a few hundred terms, then a tree).

Here the innermost reduce loop stays a float `omp simd` loop; after the outermost loop of the nest
that runs at most NEST updates, or after each CHUNK iterations of a longer innermost loop
(strip-mined), the float accumulator is added into a double beside it and reset, and the sum is the double (plus what is
left) rounded once at the end. The
error is then that of a CHUNK / lanes term float sum, whatever n is; the cost is one double add a
chunk. Applies to float (float32, and float16 / bfloat16 computed in float) sums over at least
MIN_TERMS terms whose every update sits directly in an innermost reduce loop and whose value is not
read before the sum is complete.
"""
from __future__ import annotations

from ..kernel import ir
from .clike import compute_type

MIN_TERMS = 4096  # shorter sums stay single floats (their error is already a few ulps)
CHUNK = 2048  # iterations of a strip-mined innermost loop between flushes (at most 128 a vector lane)
NEST = 256  # a loop nest of at most this many updates is flushed after as a whole (its sum is float's
# own: 1156-term nests — a GroupNorm's 34 x 34 rows of 34 — left a variance 4.6e-6 off; 34 terms 1e-7)


def hi(name: str) -> str:
    return f"{name}_hi"


def _eligible(acc: ir.Acc, loops: list, work) -> bool:
    if acc.op != "sum" or compute_type(acc.dtype) != "float" or not loops:
        return False
    terms = sum((work([lp]) for lp in loops[1:]), work([loops[0]]))
    if terms.is_const and terms.value < MIN_TERMS:
        return False
    for lp in loops:
        for s in ir.walk_stmts([lp]):
            if isinstance(s, ir.Loop) and any(isinstance(u, ir.Update) and u.name == acc.name for u in s.body):
                if s.kind != "reduce" or any(isinstance(x, ir.Loop) for x in s.body):
                    return False  # an update outside an innermost reduce loop
            if any(ir.reads_acc(v, acc.name) for v in ir.stmt_vals(s)):
                return False  # read while it is being summed
    return True


def _updates(loop: ir.Loop, name: str) -> bool:
    return any(isinstance(u, ir.Update) and u.name == name for u in ir.walk_stmts([loop]))


def plan(body, work) -> tuple:
    """For the float sums declared in `body` that cascade: ({acc: index in `body` of the last loop
    that updates it}, {id(loop): accs to flush after that loop}, {id(innermost loop): accs it runs
    a chunk at a time}). A sum is flushed after the outermost loop of its nest that runs at most
    NEST updates, or after an innermost loop of at most CHUNK; a longer innermost loop runs in
    chunks of CHUNK, flushed after each.
    `work(loops)` counts the updates a loop nest runs (the renderer's)."""
    last: dict = {}
    after: dict = {}
    chunked: dict = {}

    def place(loop: ir.Loop, name: str) -> None:
        w = work([loop])
        if w.is_const and w.value <= NEST:
            after.setdefault(id(loop), []).append(name)
            return
        subs = [x for x in loop.body if isinstance(x, ir.Loop) and _updates(x, name)]
        if not subs:  # innermost: flushed after it when it is short enough, else strip-mined
            (after if w.is_const and w.value <= CHUNK else chunked).setdefault(id(loop), []).append(name)
        for x in subs:
            place(x, name)

    for s in body:
        if not isinstance(s, ir.Acc):
            continue
        idx = [i for i, x in enumerate(body) if isinstance(x, ir.Loop) and _updates(x, s.name)]
        if idx and _eligible(s, [body[i] for i in idx], work):
            last[s.name] = idx[-1]
            for i in idx:
                place(body[i], s.name)
    return last, after, chunked


def flush(names: list) -> str:
    return " ".join(f"{hi(n)} += (double){n}; {n} = 0.0f;" for n in names)


def finish(name: str) -> str:
    return f"{name} = (float)({hi(name)} + (double){name});"
