"""The e-graph's term language: the egglog sort `H` whose constructors mirror the graph's node kinds,
and the table function ``reduced(shape, axes)`` (the shape of a reduction's result, filled from
Python). Views, reduction axes, shapes and leaves are opaque integer ids into Python-side tables
(egraph.py), so rules move them around without building index arithmetic. Rules (rules.py) and
the e-graph (egraph.py) both build on this module; neither imports the other's internals."""
from __future__ import annotations

from typing import Any

_H = None


def egglog_sort() -> Any:
    """The egglog sort and table function (defined once, lazily: egglog is only needed to search)."""
    global _H
    if _H is not None:
        return _H
    from egglog import Expr, StringLike, f64Like, function, i64, i64Like

    class H(Expr):
        @classmethod
        def leaf(cls, i: i64Like) -> "H": ...

        @classmethod
        def scalar(cls, v: f64Like, shape: i64Like, dtype: StringLike) -> "H": ...

        @classmethod
        def unary(cls, op: StringLike, x: "H") -> "H": ...

        @classmethod
        def binary(cls, op: StringLike, a: "H", b: "H") -> "H": ...

        @classmethod
        def where(cls, c: "H", a: "H", b: "H") -> "H": ...

        @classmethod
        def reduce(cls, op: StringLike, axes: i64Like, x: "H") -> "H": ...

        @classmethod
        def view(cls, v: i64Like, x: "H") -> "H": ...

        @classmethod
        def gather(cls, d: "H", i: "H") -> "H": ...

        @classmethod
        def cast(cls, dtype: StringLike, x: "H") -> "H": ...

        @classmethod
        def mat(cls, x: "H") -> "H": ...

    @function
    def reduced(shape: i64Like, axes: i64Like) -> i64: ...

    _H = (H, reduced)
    return _H
