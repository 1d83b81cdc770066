"""The lazy Tensor: a handle on a graph node, with NumPy/PyTorch-style operators.

Nothing runs when a Tensor op is called: it builds primitive nodes (graph.py). Broadcasting, type
promotion and every high-level op are compositions of those primitives. This package holds

* core.py: the class (shape, dtype, casts, broadcasting, arithmetic, comparison and logic operators),
  operand promotion and broadcasting, `where`, and the constants the operators build (`tensor`, `full`);
* creation.py: the other constructors (`input`, `zeros`, `ones`, `arange`, `iota`, ...);
* elementwise.py: elementwise math (exp, log, abs, floor, isinf, ...) and `opmath`;
* power.py: `pow` and `**`.

elementwise.py and power.py attach their methods with `@tensor_method`, as the other op families in
`ember/ops/` do; importing this package attaches them.
"""
from .core import (ShapeError, Tensor, _METHOD_REGISTRY, _as_tensor, _divide_rounded, _dims_out, _float,
                   _has_known_zero, _is_scalar, _need_bool, _no_bool, _operands, _ordered, _promote_tensors,
                   broadcast_shapes, full, full_like, isnan, normalize_axis, tensor, tensor_method, where)
from .creation import arange, input, iota, ones, ones_like, zeros, zeros_like
from .elementwise import _HALF, LN2, LOG2E, opmath
from .power import _int_pow, _is_integral, pow

__all__ = [  # every name ember.tensor had before it became a package (some private: ember/ops imports them)
    "ShapeError", "Tensor", "_METHOD_REGISTRY", "_as_tensor", "_divide_rounded", "_dims_out", "_float",
    "_has_known_zero", "_is_scalar", "_need_bool", "_no_bool", "_operands", "_ordered", "_promote_tensors",
    "broadcast_shapes", "full", "full_like", "isnan", "normalize_axis", "tensor", "tensor_method", "where",
    "arange", "input", "iota", "ones", "ones_like", "zeros", "zeros_like",
    "_HALF", "LN2", "LOG2E", "opmath", "_int_pow", "_is_integral", "pow",
]
