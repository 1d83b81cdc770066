"""Contractions: matmul is a broadcast multiply followed by a sum-reduce; einsum and linear are
permutes and reshapes around the same pattern. The compiler recognises the pattern; nothing here is a
special kernel."""
from __future__ import annotations

import re

from .. import dtypes as dt
from .. import symbolic as sm
from ..tensor import ShapeError, Tensor, broadcast_shapes, tensor_method

__all__ = ["matmul", "bmm", "dot", "outer", "linear", "einsum"]


@tensor_method
def matmul(a: Tensor, b) -> Tensor:
    from ..tensor import _as_tensor
    b = _as_tensor(b, a.dtype)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("matmul needs tensors of rank >= 1 (use * for scalars)")
    d = dt.promote(a.dtype, b.dtype)
    a, b = a.cast(d), b.cast(d)
    squeeze_m, squeeze_n = a.ndim == 1, b.ndim == 1
    if squeeze_m:
        a = a.unsqueeze(0)
    if squeeze_n:
        b = b.unsqueeze(-1)
    (m, k), (k2, n) = a.node.shape[-2:], b.node.shape[-2:]
    if k is not k2:
        raise ShapeError(f"matmul: inner dimensions differ, {sm.shape_str(a.node.shape)} @ {sm.shape_str(b.node.shape)}")
    batch = broadcast_shapes(a.node.shape[:-2], b.node.shape[:-2])
    a3 = a.unsqueeze(-2).broadcast_to(batch + (m, n, k))            # (..., M, N, K): a[..., m, k]
    b3 = b.transpose(-1, -2).unsqueeze(-3).broadcast_to(batch + (m, n, k))  # b[..., k, n]
    out = (a3 * b3).sum(-1)
    if squeeze_n:
        out = out.squeeze(-1)
    if squeeze_m:
        out = out.squeeze(-2 if not squeeze_n else -1)
    return out


def bmm(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim != 3 or b.ndim != 3:
        raise ShapeError(f"bmm needs 3-D tensors, got {a.shape} and {b.shape}")
    return matmul(a, b)


def dot(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"dot needs 1-D tensors, got {a.shape} and {b.shape}")
    return (a * b).sum()


def outer(a: Tensor, b: Tensor) -> Tensor:
    return a.unsqueeze(-1) * b.unsqueeze(0)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias, with weight of shape (out_features, in_features) as in torch."""
    if weight.ndim != 2:
        raise ShapeError(f"linear weight must be 2-D (out, in), got {weight.shape}")
    if x.node.shape[-1] is not weight.node.shape[1]:
        raise ShapeError(f"linear: input features {x.shape[-1]} do not match weight {weight.shape} (out, in)")
    y = matmul(x, weight.transpose(0, 1))
    return y if bias is None else y + bias


def einsum(spec: str, *operands: Tensor) -> Tensor:
    """Contractions in Einstein notation ("bhqd,bhkd->bhqk"; '...' allowed). Each operand is permuted
    into one shared index space, multiplied with broadcasting, and summed over the dropped indices."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    spec = spec.replace(" ", "")
    if "->" in spec:
        lhs, out = spec.split("->")
    else:
        lhs, out = spec, None
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum {spec!r} names {len(ins)} operands, got {len(operands)}")
    # expand ellipses into fresh upper-case letters
    ell_rank = 0
    for term, op in zip(ins, operands):
        if "..." in term:
            ell_rank = max(ell_rank, op.ndim - len(term.replace("...", "")))
    ell = "".join(chr(ord("A") + i) for i in range(ell_rank))
    terms = []
    for term, op in zip(ins, operands):
        if "..." in term:
            k = op.ndim - len(term.replace("...", ""))
            term = term.replace("...", ell[ell_rank - k:])
        if not re.fullmatch(r"[a-zA-Z]*", term):
            raise ValueError(f"einsum: bad subscripts {term!r}")
        if len(term) != op.ndim:
            raise ShapeError(f"einsum: subscripts {term!r} do not match operand of rank {op.ndim}")
        if len(set(term)) != len(term):
            raise NotImplementedError(f"einsum: repeated index within one operand ({term!r}) is not supported")
        terms.append(term)
    if out is None:
        counts: dict = {}
        for t in terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    letters = list(out) + sorted({c for t in terms for c in t} - set(out))
    sizes: dict = {}
    aligned = []
    for t, op in zip(terms, operands):
        for c, s in zip(t, op.node.shape):
            if s is not sm.ONE:
                if c in sizes and sizes[c] is not s:
                    raise ShapeError(f"einsum: index {c!r} has sizes {sizes[c]} and {s}")
                sizes[c] = s
        present = [c for c in letters if c in t]
        x = op.permute([t.index(c) for c in present])
        x = x.reshape([x.node.shape[present.index(c)] if c in present else 1 for c in letters])
        aligned.append(x)
    prod = aligned[0]
    for x in aligned[1:]:
        prod = prod * x
    prod = prod.broadcast_to([sizes.get(c, sm.ONE) for c in letters])
    red = tuple(range(len(out), len(letters)))
    return prod.sum(red) if red else prod
