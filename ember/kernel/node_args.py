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
