"""Rows of the elementwise primitives: EXP2, LOG2, SIN, SQRT, RECIP, ADD, MUL, MOD, LT, WHERE, CAST, and
the kernel IR's own NEG and (scalar) MAX.

Gradient rules (``g`` is the gradient arriving at the output, ``out`` the op's value):

==========  ===================================================================================
EXP2        g · out · ln2
LOG2        g / (x · ln2)
SIN         g · cos x
SQRT        g / (2 · out)
RECIP       −g · out²
ADD         g, g
MUL         g · b, g · a
MOD         g, −g · trunc(a / b)                     (truncated remainder: a − trunc(a/b)·b)
LT          none (boolean output)
WHERE       where(c, g, 0), where(c, 0, g)           (nothing to the condition)
CAST        g cast back to the source dtype; nothing flows to or from integers and booleans
==========  ===================================================================================

The rules build ordinary graph nodes through the Tensor API, which autograd hands them as `kit`
(the Tensor API is built on the graph, which reads this table, so the table cannot import it).
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from . import GraphError, Primitive, register

LN2 = math.log(2.0)


# ------------------------------------------------------------------------------------------------
# dtype rules

def _float_only(name: str):
    def rule(x: dt.DType) -> dt.DType:
        if not x.is_float:
            raise GraphError(f"{name} needs a floating-point input, got {x.name}")
        return x
    return rule


def _same(a: dt.DType, b: dt.DType) -> dt.DType:
    return a


def _no_bool(name: str):
    def rule(a: dt.DType, b: dt.DType) -> dt.DType:
        if a.is_bool:
            raise GraphError(f"{name} is not defined on bool (use logical ops)")
        return a
    return rule


def _to_bool(a: dt.DType, b: dt.DType) -> dt.DType:
    return dt.bool_


def _select(c: dt.DType, a: dt.DType, b: dt.DType) -> dt.DType:
    if not c.is_bool:
        raise GraphError(f"where: condition must be bool, got {c.name}")
    if a != b:
        raise GraphError(f"where: branch dtypes differ ({a.name} vs {b.name})")
    return a


# ------------------------------------------------------------------------------------------------
# gradient rules

def _unary_vjp(formula):
    """A rule for a unary op: formula(G, X, OUT) -> Tensor, with G the incoming gradient, X the source
    and OUT the op's value (Tensors)."""
    def vjp(n, gn, live, kit):
        x = n.srcs[0]
        if x in live:
            yield x, formula(kit.Tensor(gn), kit.Tensor(x), kit.Tensor(n)).node
    return vjp


def _add_vjp(n, gn, live, kit):
    for s in n.srcs:
        if s in live:
            yield s, gn


def _mul_vjp(n, gn, live, kit):
    Tensor = kit.Tensor
    a, b = n.srcs
    if a in live:
        yield a, (Tensor(gn) * Tensor(b)).node
    if b in live:
        yield b, (Tensor(gn) * Tensor(a)).node


def _mod_vjp(n, gn, live, kit):
    Tensor = kit.Tensor
    a, b = n.srcs
    if a in live:
        yield a, gn
    if b in live:
        q = Tensor(a) * Tensor(b).reciprocal()
        trunc = q - q.fmod(1.0)
        yield b, (-(Tensor(gn) * trunc)).node


def _where_vjp(n, gn, live, kit):
    c, a, b = n.srcs
    zero = kit.full(n.shape, 0.0, n.dtype)
    if a in live:
        yield a, kit.where(kit.Tensor(c), kit.Tensor(gn), zero).node
    if b in live:
        yield b, kit.where(kit.Tensor(c), zero, kit.Tensor(gn)).node


def _cast_vjp(n, gn, live, kit):
    x = n.srcs[0]
    if x in live and x.dtype.is_float:
        yield x, kit.cast_node(gn, x.dtype)


# ------------------------------------------------------------------------------------------------
# numpy forms (the reference interpreter's)

def _np_mod(n, a, b):
    if not n.dtype.is_float and not np.all(b):  # as torch; compiled kernels give 0 (README)
        raise ZeroDivisionError(f"integer division or modulo by zero in {n}")
    return np.fmod(a, b)


def cast_array(x: np.ndarray, to: dt.DType) -> np.ndarray:
    """x converted as a C cast would: floats truncate toward zero into integers, anything non-zero is
    true; floats are returned widened back to float64 (the reference computes floats in float64)."""
    if to.is_int and x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            x = np.trunc(x)
    if to.is_bool:
        return x != 0
    with np.errstate(over="ignore", invalid="ignore"):
        y = x.astype(to.np)
    return y.astype(np.float64) if to.is_float else y


def _np_mul(n, a, b):
    return np.logical_and(a, b) if n.dtype.is_bool else a * b


# ------------------------------------------------------------------------------------------------
# C forms that depend on the dtype

def _c_mod(x: list, ct: str, d: dt.DType, dialect) -> str:
    if d.is_float:
        return f"fmod{'f' if ct == 'float' else ''}({x[0]}, {x[1]})"
    # C's % traps on a zero divisor and on INT_MIN % -1 (SIGFPE on x86): both give 0, as numpy's
    # fmod (the reference) does; x % -1 is 0 anyway
    return f"(({x[1]}) == 0 || ({x[1]}) == -1 ? ({ct})0 : ({x[0]}) % ({x[1]}))"


def _c_cast(x: list, ct: str, d: dt.DType, dialect) -> str:
    if d.is_bool:
        return f"({x[0]} != 0)"
    if d in (dt.float16, dt.bfloat16):
        return dialect.round_through(f"(float)({x[0]})", d)
    return f"({ct})({x[0]})"


# float log2 and 1/x on the GPU go through the SFU's approximations. rcp.approx.f32: 1 ulp,
# subnormals kept, the IEEE special values (no refinement steps or slow-path branch). lg2.approx.f32
# has an absolute error of 2^-22 on [0.5, 2]: relative to a log near 0 that is large, and it undid
# log1p's correction (log(u) * x / (u - 1) needs log(u) accurate relative to u - 1; tests/
# tests/op_cases/tensor_api.py's log1p_tiny caught it on the H100). em_lg2 therefore takes the series of log(1 + f)
# for |x - 1| < 1/16 (7 terms: truncation below 0.2 ulp); elsewhere |log2 x| > 0.087 and the error
# is at most 21 ulp (bench/results/math-accuracy-2026-11-22e.json), orders below the float32
# tolerance of docs/precision.md. log2f is a 10-step dependent polynomial with range handling: in
# Mish's conv epilogue (two logs per element) plain lg2.approx made the kernel 30% faster
# (bench/results/epilogue-approx-2026-11-22e.json), em_lg2 about 25% (0.94 -> 0.70 ms).
_CUDA_LOG2 = {"float": "em_lg2({x0})"}
_CUDA_RECIP = {"float": "em_rcp({x0})"}


# ------------------------------------------------------------------------------------------------
# the rows

EXP2 = register(Primitive(
    "exp2", "unary", 1, dtype=_float_only("exp2"), numpy=lambda n, x: np.exp2(x),
    vjp=_unary_vjp(lambda G, X, OUT: G * OUT * LN2), c="exp2{f}({x0})", cost=4))
LOG2 = register(Primitive(
    "log2", "unary", 1, dtype=_float_only("log2"), numpy=lambda n, x: np.log2(x),
    vjp=_unary_vjp(lambda G, X, OUT: G * X.reciprocal() * (1.0 / LN2)), c="log2{f}({x0})", cuda=_CUDA_LOG2,
    cost=4))
SIN = register(Primitive(
    "sin", "unary", 1, dtype=_float_only("sin"), numpy=lambda n, x: np.sin(x),
    vjp=_unary_vjp(lambda G, X, OUT: G * X.cos()), c="sin{f}({x0})", cost=4))
SQRT = register(Primitive(
    "sqrt", "unary", 1, dtype=_float_only("sqrt"), numpy=lambda n, x: np.sqrt(x),
    vjp=_unary_vjp(lambda G, X, OUT: G * OUT.reciprocal() * 0.5), c="sqrt{f}({x0})", cost=2))
RECIP = register(Primitive(
    "recip", "unary", 1, dtype=_float_only("recip"), numpy=lambda n, x: 1.0 / x,
    vjp=_unary_vjp(lambda G, X, OUT: -(G * (OUT * OUT))), c="(({ct})1 / {x0})", cuda=_CUDA_RECIP, cost=2))

ADD = register(Primitive(
    "add", "binary", 2, dtype=_no_bool("add"), numpy=lambda n, a, b: a + b, vjp=_add_vjp,
    c="({x0} + {x1})", commutative=True))
MUL = register(Primitive(
    "mul", "binary", 2, dtype=_same, numpy=_np_mul, vjp=_mul_vjp, c="({x0} * {x1})", commutative=True))
MOD = register(Primitive(
    "mod", "binary", 2, dtype=_no_bool("mod"), numpy=_np_mod, vjp=_mod_vjp, c=_c_mod))
LT = register(Primitive(
    "lt", "binary", 2, dtype=_to_bool, numpy=lambda n, a, b: a < b, c="({x0} < {x1})"))

WHERE = register(Primitive(
    "where", "select", 3, dtype=_select, numpy=lambda n, c, a, b: np.where(c, a, b), vjp=_where_vjp,
    c="({x0} ? {x1} : {x2})"))
CAST = register(Primitive(
    "cast", "cast", 1, numpy=lambda n, x: cast_array(x, n.dtype), vjp=_cast_vjp, c=_c_cast))

# kernel-IR only: negation (schedules' epilogues) and the scalar max the MAX reduction updates with
NEG = register(Primitive("neg", "unary", 1, numpy=lambda n, x: -x, c="(-{x0})"), graph=False)
MAX2 = register(Primitive("max", "binary", 2, numpy=lambda n, a, b: np.maximum(a, b), c="{max}({x0}, {x1})"),
                graph=False)
