"""Typed reads of a graph node's `arg`, whose meaning depends on its op (graph.Node.arg is `object`):
the lowering reads it in several places, and the checks here say once what each op stores there."""
from __future__ import annotations

from typing import cast

from .. import graph as g
from ..symbolic import Expr
from ..view import View


def reduce_axes(n: g.Node) -> tuple[int, ...]:
    """The reduced axes of a SUM or MAX (a tuple, or its TF32Axes subclass: graph.reduce_node)."""
    assert n.op in g.REDUCE, n.op
    return cast("tuple[int, ...]", n.arg)


def view_of(n: g.Node) -> View:
    """The View of a VIEW node."""
    assert isinstance(n.arg, View), n.op
    return n.arg


def iota_expr(n: g.Node) -> Expr:
    """The index expression of an IOTA node."""
    assert isinstance(n.arg, Expr), n.op
    return n.arg


def expands(n: g.Node) -> bool:
    """Whether n holds more elements than any node it reads (through views): a broadcast, or a
    GEMM's product of operands over all of m x n x k. Rule 8 cuts below it instead: a 12-layer BERT
    in bf16 had its first down projection's product cut at the depth limit, a 19 GB buffer written
    by one kernel and summed by another (223 ms for the model against 5 ms eager)."""
    if not n.numel.is_const:
        return False
    sizes = []
    for s in n.srcs:
        while s.op == g.VIEW:
            s = s.srcs[0]
        if not s.numel.is_const:
            return False
        sizes.append(s.numel.value)
    return bool(sizes) and n.numel.value > max(sizes)
