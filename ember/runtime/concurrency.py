"""Which kernels of a program may run at the same time: levels of a dependency order computed from
the memory each launch reads and writes.

A small GEMM leaves most of the GPU idle (fewer tiles than SMs), and a transformer block has several
side by side: the q, k and v projections read the same input and write different buffers. Launch j
depends on an earlier launch i when their memory ranges conflict: j reads or writes what i writes,
or j writes what i reads. Ranges are the buffers' actual byte ranges (temporaries share an arena,
so two buffers of different names may overlap; an output may alias an input), not their names.
Launches whose writes are unknown count as writing every argument: they serialise.

Level of a launch = 1 + the highest level of the launches it depends on (0 without any); the
launches of one level are independent of each other and can run concurrently (the CUDA backend
captures each level as parallel branches of its graph)."""
from __future__ import annotations

from .. import symbolic as sm


def _overlap(a: list, b: list) -> bool:
    return any(s0 < e1 and s1 < e0 for s0, e0 in a for s1, e1 in b)


def launch_levels(accesses: list) -> list:
    """accesses[j] = (reads, writes): lists of (start, end) byte ranges of launch j, in program
    order. Returns the levels: lists of launch indices, in order, each list's launches independent."""
    level: list = []
    for j, (rj, wj) in enumerate(accesses):
        lv = 0
        for i in range(j):
            ri, wi = accesses[i]
            if _overlap(wi, rj) or _overlap(wi, wj) or _overlap(ri, wj):
                lv = max(lv, level[i] + 1)
        level.append(lv)
    out: list = [[] for _ in range(max(level, default=-1) + 1)]
    for j, lv in enumerate(level):
        out[lv].append(j)
    return out


def launch_accesses(program, ptrs: dict, env: dict, launches: list) -> list:
    """(reads, writes) byte ranges of each launch in `launches` (Launch objects of `program`), from
    the pointers `ptrs` (buffer name -> device address) and the dims binding `env`."""
    def rng(name):
        b = program.buffers[name]
        n = int(sm.evaluate(b.size, env)) * b.dtype.itemsize
        return (int(ptrs[name]), int(ptrs[name]) + max(n, 1))

    out = []
    for l in launches:
        writes = set(l.args if l.writes is None else l.writes)
        out.append(([rng(a) for a in l.args if a not in writes], [rng(a) for a in l.args if a in writes]))
    return out
