"""The Tensor class: shape, dtype, casts, broadcasting and the arithmetic, comparison and logic
operators, with the operand handling they share (promotion, broadcasting, `where`) and the constants
they build (`tensor`, `full`). The elementwise math methods attach themselves from elementwise.py,
`**` from power.py, the other op families from `ember/ops/` (all with `@tensor_method`).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from ..dtypes import DType
from ..graph import Node
from ..symbolic import Expr, sym


class ShapeError(ValueError):
    """Shapes that do not fit together (the message names both)."""


def normalize_axis(a: int, n: int) -> int:
    """The non-negative axis that `a` (possibly negative, numpy style) names in a tensor of rank `n`;
    a rank-0 tensor accepts 0 and -1. Shared by every op in `ops/` that takes an axis."""
    if not -n <= a < max(n, 1):
        raise IndexError(f"axis {a} out of range for a tensor of rank {n}")
    return a % n if n else 0


def _dims_out(shape: Sequence[Expr]) -> tuple:
    return tuple(s.value if s.is_const else s for s in shape)


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating))


class Tensor:
    """A lazily built tensor. ``em.reference(t, **inputs)`` or ``em.compile`` evaluate it."""

    __slots__ = ("node",)
    __array_priority__ = 1000  # numpy scalars on the left defer to our operators

    def __init__(self, node: Node):
        if not isinstance(node, Node):
            raise TypeError(f"Tensor wraps a graph Node, got {type(node).__name__}")
        self.node = node

    # ------------------------------------------------------------------ basic properties
    @property
    def shape(self) -> tuple:
        return _dims_out(self.node.shape)

    @property
    def dtype(self) -> DType:
        return self.node.dtype

    @property
    def ndim(self) -> int:
        return self.node.ndim

    def dim(self) -> int:
        return self.node.ndim

    def size(self, axis: int | None = None):
        return self.shape if axis is None else self.shape[axis]

    @property
    def numel(self):
        n = self.node.numel
        return n.value if n.is_const else n

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of a 0-d tensor")
        s = self.node.shape[0]
        if not s.is_const:
            raise TypeError(f"len() of a tensor whose first dimension is symbolic ({s})")
        return s.value

    def __repr__(self) -> str:
        return f"Tensor({sm.shape_str(self.node.shape)}, {self.dtype.name}, op={self.node.op})"

    def __bool__(self):
        raise TypeError("a lazy Ember tensor has no truth value; evaluate it with em.reference or em.compile")

    __hash__ = object.__hash__

    def __iter__(self):
        raise TypeError("a lazy Ember tensor cannot be iterated; index it or use split/unbind")

    # ------------------------------------------------------------------ conversions
    def cast(self, dtype) -> "Tensor":
        return Tensor(g.cast_node(self.node, dt.as_dtype(dtype)))

    def astype(self, dtype) -> "Tensor":
        return self.cast(dtype)

    def to(self, dtype) -> "Tensor":
        return self.cast(dtype)

    def float(self) -> "Tensor":
        return self.cast(dt.float32)

    def half(self) -> "Tensor":
        return self.cast(dt.float16)

    def bfloat16(self) -> "Tensor":
        return self.cast(dt.bfloat16)

    def int(self) -> "Tensor":
        return self.cast(dt.int32)

    def bool(self) -> "Tensor":
        return self.cast(dt.bool_)

    def contiguous(self) -> "Tensor":
        """Semantically the identity: the compiler decides what to materialise."""
        return self

    def detach(self) -> "Tensor":
        return self

    # ------------------------------------------------------------------ broadcasting
    def broadcast_to(self, shape: Sequence) -> "Tensor":
        shape = tuple(sym(s) for s in shape)
        if len(shape) < self.ndim:
            raise ShapeError(f"cannot broadcast {sm.shape_str(self.node.shape)} to {sm.shape_str(shape)}")
        x = self
        if len(shape) > self.ndim:
            x = x.reshape((1,) * (len(shape) - self.ndim) + tuple(self.node.shape))
        if x.node.shape == shape:
            return x
        for s, t in zip(x.node.shape, shape):
            if s is not t and s is not sm.ONE:
                raise ShapeError(f"cannot broadcast {sm.shape_str(self.node.shape)} to {sm.shape_str(shape)}")
        return Tensor(g.apply_view(x.node, lambda v: v.expand(shape)))

    # ------------------------------------------------------------------ elementwise building blocks
    def _unary(self, op: str) -> "Tensor":
        return Tensor(g.unary(op, _float(self).node))

    def _binary(self, op: str, other, reverse: bool = False) -> "Tensor":
        a, b = _operands(self, other)
        if reverse:
            a, b = b, a
        return Tensor(g.binary(op, a.node, b.node))

    # ------------------------------------------------------------------ primitives
    def exp2(self) -> "Tensor":
        return self._unary(g.EXP2)

    def log2(self) -> "Tensor":
        return self._unary(g.LOG2)

    def sin(self) -> "Tensor":
        return self._unary(g.SIN)

    def sqrt(self) -> "Tensor":
        return self._unary(g.SQRT)

    def reciprocal(self) -> "Tensor":
        return self._unary(g.RECIP)

    def __add__(self, o) -> "Tensor":
        if self.dtype.is_bool and (isinstance(o, Tensor) and o.dtype.is_bool or isinstance(o, bool)):
            return self | o
        return self._binary(g.ADD, o)

    def __radd__(self, o) -> "Tensor":
        return self._binary(g.ADD, o, reverse=True)

    def __mul__(self, o) -> "Tensor":
        return self._binary(g.MUL, o)

    def __rmul__(self, o) -> "Tensor":
        return self._binary(g.MUL, o, reverse=True)

    def fmod(self, o) -> "Tensor":
        """Truncated remainder (sign of the dividend), like C fmod and torch.fmod. Integer // and %
        are built on it, so it refuses a divisor known to be zero when the graph is built."""
        a, b = _operands(self, o)
        _no_bool("fmod", a)
        if not a.dtype.is_float and _has_known_zero(b.node):
            raise ZeroDivisionError("integer division or modulo by zero (the divisor is a constant holding 0)")
        return Tensor(g.binary(g.MOD, a.node, b.node))

    def __lt__(self, o) -> "Tensor":
        return self._binary(g.LT, o)

    def where(self, a, b) -> "Tensor":
        """self ? a : b (self is the condition)."""
        return where(self, a, b)

    # ------------------------------------------------------------------ arithmetic compositions
    def __neg__(self) -> "Tensor":
        _no_bool("negation", self)
        return self * -1

    def __sub__(self, o) -> "Tensor":
        a, b = _operands(self, o)
        _no_bool("subtraction", a)
        return a + (-b)

    def __rsub__(self, o) -> "Tensor":
        a, b = _operands(self, o)
        _no_bool("subtraction", a)
        return b + (-a)

    def __truediv__(self, o) -> "Tensor":
        if _is_scalar(o) and float(o) != 0 and math.isfinite(float(o)):
            return _float(self) * (1.0 / float(o))  # within an ulp of a true division
        a, b = _operands(_float(self), _float(o))
        return a * b.reciprocal()

    def __rtruediv__(self, o) -> "Tensor":
        a, b = _operands(_float(self), o)
        return b * a.reciprocal()

    def __floordiv__(self, o) -> "Tensor":
        """Floor division, like Python // and torch.floor_divide (integers stay integers)."""
        return _divide_rounded(*_operands(self, o), "floor")

    def __rfloordiv__(self, o) -> "Tensor":
        a, b = _operands(self, o)
        return _divide_rounded(b, a, "floor")

    def __mod__(self, o) -> "Tensor":
        """Floored remainder (sign of the divisor), like Python % and torch.remainder."""
        a, b = _operands(self, o)
        r = a.fmod(b)
        fix = (r != 0) & ((r < 0) != (b < 0))
        return where(fix, r + b, r)

    def __rmod__(self, o) -> "Tensor":
        a, b = _operands(self, o)
        return b % a

    def remainder(self, o) -> "Tensor":
        return self % o

    # ** and its reflection (__pow__, __rpow__) attach themselves from power.py, beside pow()

    def __matmul__(self, o) -> "Tensor":
        return self.matmul(o)

    def __rmatmul__(self, o) -> "Tensor":
        return _as_tensor(o, self.dtype).matmul(self)

    # ------------------------------------------------------------------ comparisons (bool results)
    def __gt__(self, o) -> "Tensor":
        return self._binary(g.LT, o, reverse=True)

    def __le__(self, o) -> "Tensor":
        a, b = _operands(self, o)
        return _ordered(~(b < a), a, b, o)

    def __ge__(self, o) -> "Tensor":
        a, b = _operands(self, o)
        return _ordered(~(a < b), a, b, o)

    def __eq__(self, o) -> "Tensor":  # type: ignore[override]
        return ~(self != o)

    def __ne__(self, o) -> "Tensor":  # type: ignore[override]
        # NaN != NaN is true: lt(a,b) | lt(b,a) is false for NaN, so test self-equality explicitly
        a, b = _operands(self, o)
        ne = (a < b) | (b < a)
        if a.dtype.is_float:
            ne = ne | isnan(a) | isnan(b)
        return ne

    def eq(self, o) -> "Tensor":
        return self == o

    def ne(self, o) -> "Tensor":
        return self != o

    def lt(self, o) -> "Tensor":
        return self < o

    def le(self, o) -> "Tensor":
        return self <= o

    def gt(self, o) -> "Tensor":
        return self > o

    def ge(self, o) -> "Tensor":
        return self >= o

    def isnan(self) -> "Tensor":
        return isnan(self)

    # ------------------------------------------------------------------ logic on bools
    def __invert__(self) -> "Tensor":
        if not self.dtype.is_bool:
            raise TypeError(f"~ (logical not) needs a bool tensor, got {self.dtype.name}")
        return where(self, False, True)

    def __and__(self, o) -> "Tensor":
        a, b = _operands(self, o)
        _need_bool("&", a)
        return a * b

    def __rand__(self, o) -> "Tensor":
        return self & o

    def __or__(self, o) -> "Tensor":
        a, b = _operands(self, o)
        _need_bool("|", a)
        return where(a, True, b)

    def __ror__(self, o) -> "Tensor":
        return self | o

    def __xor__(self, o) -> "Tensor":
        a, b = _operands(self, o)
        _need_bool("^", a)
        return a != b

    def logical_not(self) -> "Tensor":
        return ~self.bool()

    def logical_and(self, o) -> "Tensor":
        return self.bool() & _as_tensor(o, dt.bool_).bool()

    def logical_or(self, o) -> "Tensor":
        return self.bool() | _as_tensor(o, dt.bool_).bool()


# ------------------------------------------------------------------------------------------------
# operand handling

def _ordered(r: Tensor, a: Tensor, b: Tensor, o) -> Tensor:
    """r, but false where a or b is NaN (IEEE: every ordered comparison with NaN is false)."""
    if not a.dtype.is_float:
        return r
    nan = isnan(a)
    if not (_is_scalar(o) and not math.isnan(float(o))):  # a number operand is never NaN
        nan = nan | isnan(b)
    return r & ~nan


def _no_bool(what: str, x: Tensor) -> None:
    if x.dtype.is_bool:
        raise TypeError(f"{what} is not defined for bool tensors")


def _need_bool(what: str, x: Tensor) -> None:
    if not x.dtype.is_bool:
        raise TypeError(f"{what} needs bool tensors, got {x.dtype.name}")


def _divide_rounded(a: Tensor, b: Tensor, mode: str) -> Tensor:
    """a / b rounded toward -inf ("floor") or toward 0 ("trunc"), as torch.div(rounding_mode=...).

    Ember divides by multiplying with a reciprocal, which can land an exact quotient an ulp below
    an integer (floor(7 * (1/7)) could be 0). So, as PyTorch's CPU kernel does: the truncated
    remainder is taken first, (a - fmod(a, b)) / b is then an integer up to rounding, and the
    rounding is undone by snapping to the nearest integer. Integers divide through float64: exact
    for int32 (and int64 up to 2**53); a zero divisor gives a / b for floats (+-inf, NaN) and 0 for
    integers (PyTorch raises: so do the graph builder, for a constant divisor holding 0 (fmod), and
    the reference, for a zero divisor in the data; a compiled kernel cannot raise and gives 0)."""
    _no_bool("division", a)  # a and b share one dtype (_operands)
    work = a.dtype if a.dtype.is_float else dt.float64
    A, B, mod = a.cast(work), b.cast(work), a.fmod(b).cast(work)
    q = (A - mod) / B  # an integer up to the reciprocal's rounding
    if mode == "floor":
        q = where((mod != 0) & ((B < 0) != (mod < 0)), q - 1, q)
    elif mode != "trunc":
        raise ValueError(f"rounding mode {mode!r} (floor or trunc)")
    f = q.floor()
    q = where(q - f > 0.5, f + 1, f)
    if a.dtype.is_float:
        return where(B == 0, A / B, q).cast(a.dtype)
    return where(B == 0, 0, q).cast(a.dtype)


def _has_known_zero(n: Node) -> bool:
    """Whether n is a constant (a scalar, possibly broadcast, or a data array read whole) holding 0."""
    while n.op == g.VIEW and n.srcs[0].op == g.CONST:
        n = n.srcs[0]
    if n.op == g.CONST:
        return n.arg == 0
    return n.op == g.DATA and bool((n.arg.array == 0).any())


def _float(x) -> Tensor:
    x = _as_tensor(x, dt.default_float)
    return x if x.dtype.is_float else x.cast(dt.default_float)


def _as_tensor(x, dtype: DType | None = None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if _is_scalar(x):
        d = dtype or dt.scalar_dtype(x)
        return Tensor(g.const_node(x, d))
    if isinstance(x, np.ndarray):
        return tensor(x)
    raise TypeError(f"expected an Ember Tensor or a number, got {type(x).__name__}")


def broadcast_shapes(*shapes: Sequence) -> tuple:
    shapes = [tuple(sym(s) for s in sh) for sh in shapes]
    n = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(n, 0, -1):
        dim = sm.ONE
        for s in shapes:
            if k > len(s):
                continue
            d = s[-k]
            if d is sm.ONE:
                continue
            if dim is sm.ONE:
                dim = d
            elif d is not dim:
                raise ShapeError("shapes " + " and ".join(sm.shape_str(s) for s in shapes) +
                                 f" do not broadcast (dimension -{k}: {dim} vs {d})")
        out.append(dim)
    return tuple(out)


def _promote_tensors(a: Tensor, b: Tensor) -> DType:
    """PyTorch's rule: a 0-d tensor beside a dimensioned one only decides the dtype when it is of a
    higher category (bool < int < float); within one category the dimensioned tensor's dtype wins
    (float16 (3,) * float32 0-d -> float16)."""
    if (a.ndim == 0) != (b.ndim == 0) and a.dtype.kind == b.dtype.kind:
        return b.dtype if a.ndim == 0 else a.dtype
    return dt.promote(a.dtype, b.dtype)


def _operands(a, b) -> tuple[Tensor, Tensor]:
    """Promote and broadcast two operands (at least one a Tensor) to one dtype and shape."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        d = _promote_tensors(a, b)
    elif isinstance(a, Tensor):
        if not _is_scalar(b):
            b = _as_tensor(b)
            return _operands(a, b)
        d = dt.promote_with_scalar(a.dtype, b)
    elif isinstance(b, Tensor):
        if not _is_scalar(a):
            return _operands(_as_tensor(a), b)
        d = dt.promote_with_scalar(b.dtype, a)
    else:
        raise TypeError("at least one operand must be a Tensor")
    a, b = _as_tensor(a, d).cast(d), _as_tensor(b, d).cast(d)
    shape = broadcast_shapes(a.node.shape, b.node.shape)
    return a.broadcast_to(shape), b.broadcast_to(shape)


def isnan(x: Tensor) -> Tensor:
    if not x.dtype.is_float:
        return full_like(x, False, dt.bool_)
    # NaN is the only value that is neither < +inf nor > -inf (every other float is one or both)
    return ~((x < math.inf) | (x > -math.inf))


def where(cond, a, b) -> Tensor:
    """Elementwise select with broadcasting and promotion of a and b."""
    c = _as_tensor(cond, dt.bool_)
    if not c.dtype.is_bool:
        c = c != 0
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        d = dt.promote(dt.scalar_dtype(a), dt.scalar_dtype(b))
        a, b = _as_tensor(a, d), _as_tensor(b, d)
    a, b = _operands(a, b)
    shape = broadcast_shapes(c.node.shape, a.node.shape)
    c, a, b = c.broadcast_to(shape), a.broadcast_to(shape), b.broadcast_to(shape)
    return Tensor(g.where_node(c.node, a.node, b.node))


# ------------------------------------------------------------------------------------------------
# the constants the operators build (the other constructors: creation.py)

def tensor(data, dtype=None, name: str = "") -> Tensor:
    """A constant (e.g. a parameter) from an array-like. Python scalars become scalar constants."""
    if isinstance(data, Tensor):
        return data if dtype is None else data.cast(dtype)
    if _is_scalar(data):
        d = dt.as_dtype(dtype) if dtype is not None else dt.scalar_dtype(data)
        return Tensor(g.const_node(data, d))
    if hasattr(data, "detach") and hasattr(data, "numpy"):  # a torch tensor
        data = data.detach().cpu()
        if str(data.dtype) == "torch.bfloat16":
            import ml_dtypes
            data = data.float().numpy().astype(ml_dtypes.bfloat16)
        else:
            data = data.numpy()
    arr = np.asarray(data)
    if dtype is None:
        if arr.dtype == np.float64:
            d = dt.float32  # like torch.tensor: Python floats become the default float
        elif arr.dtype.kind in "iu" and arr.dtype != np.int32:
            d = dt.int64 if arr.dtype.itemsize == 8 else dt.int32
        else:
            d = dt.as_dtype(arr.dtype)
    else:
        d = dt.as_dtype(dtype)
    return Tensor(g.data_node(arr, name, d))


def full(shape: Sequence, value, dtype=None) -> Tensor:
    d = dt.as_dtype(dtype) if dtype is not None else dt.scalar_dtype(value)
    c = Tensor(g.const_node(value, d))
    return c.broadcast_to(tuple(sym(s) for s in shape))


def full_like(x: Tensor, value, dtype=None) -> Tensor:
    return full(x.node.shape, value, dtype if dtype is not None else x.dtype)


_METHOD_REGISTRY: dict = {}


def tensor_method(fn=None, *, name: str | None = None):
    """Attach a function defined in ember/ops/*, tensor/elementwise.py or tensor/power.py as a Tensor
    method (first argument is the tensor)."""
    def deco(f):
        nm = name or f.__name__
        setattr(Tensor, nm, f)
        _METHOD_REGISTRY[nm] = f
        return f
    return deco(fn) if fn is not None else deco
