"""What a kernel must cost at least: bytes it must move (each buffer parameter touched once) and
arithmetic operations it performs (ALU ops per statement x iterations). Used for the roofline
fraction in reports and benchmarks."""
from __future__ import annotations

from .. import symbolic as sm
from . import ir

_FREE = ("load", "const", "index", "acc", "cast", "where")


def kernel_bytes(k: ir.Kernel) -> sm.Expr:
    return sm.sum_of(b.size * b.dtype.itemsize for b in k.buffers)


def kernel_flops(k: ir.Kernel) -> sm.Expr:
    total = sm.ZERO

    def go(body, mult):
        nonlocal total
        for s in body:
            if isinstance(s, ir.Loop):
                go(s.body, mult * s.extent)
            elif isinstance(s, (ir.Update, ir.Store)):
                ops = sum(1 for v in ir.val_toposort([s.value]) if v.op not in _FREE)
                ops += 1 if isinstance(s, ir.Update) else 0
                total = total + mult * ops

    go(k.body, sm.ONE)
    return total
