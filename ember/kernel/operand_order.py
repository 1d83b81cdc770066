"""One order for the operands of a kernel's commutative operations, chosen from the kernel's structure
alone (not from which buffers it reads).

The graph orders a commutative op's operands by a local, name-free structure (graph.Node.skey, since
the twenty-eighth session; by the full structural hashes before), but operands whose local structure
ties fall back to the full hashes, which differ from one step of an unrolled recurrence to the next
(each step reads other buffers): the same cell
came out as `b1 + b2` in one step and `b2 + b1` in the next, its buffers numbered in another order,
so two kernels computing the same function of their arguments had different sources — rendered,
compiled by NVRTC and cached once each (a 6-layer, 64-step GRU: 809 distinct sources of 1678
kernels). Here every add and mul takes its operands in the order of a digest of their structure
that leaves out buffer names (loads are keyed by dtype, index and guard); the builder then numbers
the buffers by first use, so such kernels become equal under renaming — one rendering, one module
(backends/cuda.py `compile_kernels`).

Only elementwise kernels are reordered: pattern matchers over reductions (the online softmax of
kernel/online.py, the CPU's row cache) read their operands in the graph's order. A recurrence's
products repeat in at most two orders (weights first or not), its elementwise steps in many.

Operands whose digests tie keep their order: where they differ only in which buffers they read, the
text is the same either way. IEEE addition and multiplication are commutative, so the order changes
no result.
"""
from __future__ import annotations

import hashlib

from .. import primitives as P
from . import ir

COMMUTATIVE = frozenset(name for name, row in P.ALU.items() if getattr(row, "commutative", False))


def ordered(body: tuple) -> tuple:
    """`body` (kernel statements) with every commutative op's operands in digest order."""
    digest: dict = {}
    rebuilt: dict = {}

    def dg(v: ir.Val) -> bytes:
        d = digest.get(v)
        if d is None:
            parts: tuple[str, ...]
            if v.op == "load":
                _, idx, valid = v.args
                parts = ("load", v.dtype.name, dg(idx).hex() if isinstance(idx, ir.Val) else str(idx), str(valid))
            else:
                subs = [dg(a).hex() if isinstance(a, ir.Val) else repr(a) for a in v.args]
                if v.op in COMMUTATIVE:
                    subs.sort()
                parts = (v.op, v.dtype.name, *subs)
            d = digest[v] = hashlib.blake2b("\0".join(parts).encode(), digest_size=12).digest()
        return d

    def rv(v: ir.Val) -> ir.Val:
        r = rebuilt.get(v)
        if r is None:
            if v.op == "load" and isinstance(v.args[1], ir.Val):
                r = ir.Val("load", (v.args[0], rv(v.args[1]), v.args[2]), v.dtype)
            elif v.op != "load" and v.srcs:
                args = tuple(rv(a) if isinstance(a, ir.Val) else a for a in v.args)
                if v.op in COMMUTATIVE and len(args) == 2 and all(isinstance(a, ir.Val) for a in args) \
                        and dg(args[1]) < dg(args[0]):
                    args = (args[1], args[0])
                r = ir.Val(v.op, args, v.dtype)
            else:
                r = v
            rebuilt[v] = r
        return r

    return ir.map_stmts(body, rv)
