"""Contractions: matmul is a broadcast multiply followed by a sum-reduce; einsum and linear are
permutes and reshapes around the same pattern. The compiler recognises the pattern; nothing here is a
special kernel."""
from __future__ import annotations

import re

from .. import dtypes as dt
from .. import symbolic as sm
from ..tensor import ShapeError, Tensor, broadcast_shapes, tensor_method
from .reduce import contract

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
    out = contract(a3 * b3, -1, "matmul")
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
    return contract(a * b, None, "matmul")


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


def _diagonal(x: Tensor, p: int, q: int) -> Tensor:
    """x with its axes p < q (of equal static size n) replaced by their diagonal, moved last: a view
    (the n*n plane read with stride n + 1)."""
    n = x.node.shape[p]
    if not n.is_const:
        raise NotImplementedError(f"einsum: a repeated index over the symbolic dimension {n}")
    x = x.movedim(q, -1).movedim(p, -1)  # p < q: moving q first leaves p in place
    x = x.reshape(list(x.node.shape[:-2]) + [n.value * n.value])
    from .movement import _slice_axis
    return _slice_axis(x, x.ndim - 1, 0, n.value * n.value, n.value + 1)


def einsum(spec: str, *operands: Tensor) -> Tensor:
    """Contractions in Einstein notation ("bhqd,bhkd->bhqk"; '...' allowed; an index repeated within
    one operand takes its diagonal, as in "ii->i"). Each operand is permuted into one shared index
    space, multiplied with broadcasting, and summed over the dropped indices."""
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
    # expand ellipses into letters the spec does not use
    ell_rank = 0
    for term, op in zip(ins, operands):
        if "..." in term:
            ell_rank = max(ell_rank, op.ndim - len(term.replace("...", "")))
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in spec]
    if ell_rank > len(free):
        raise ValueError(f"einsum {spec!r}: not enough unused letters for {ell_rank} broadcast dimensions")
    ell = "".join(free[:ell_rank])
    terms, ops = [], []
    for term, op in zip(ins, operands):
        if "..." in term:
            k = op.ndim - len(term.replace("...", ""))
            if k < 0:
                raise ShapeError(f"einsum: subscripts {term!r} do not match operand of rank {op.ndim}")
            term = term.replace("...", ell[ell_rank - k:] if k else "")
        if not re.fullmatch(r"[a-zA-Z]*", term):
            raise ValueError(f"einsum: bad subscripts {term!r}")
        if len(term) != op.ndim:
            raise ShapeError(f"einsum: subscripts {term!r} do not match operand of rank {op.ndim}")
        while len(set(term)) != len(term):
            c = next(ch for ch in term if term.count(ch) > 1)
            p, q = term.index(c), term.index(c, term.index(c) + 1)
            if op.node.shape[p] is not op.node.shape[q]:
                raise ShapeError(f"einsum: repeated index {c!r} in {term!r} spans sizes "
                                 f"{op.node.shape[p]} and {op.node.shape[q]}")
            op = _diagonal(op, p, q)
            term = term[:p] + term[p + 1:q] + term[q + 1:] + c
        terms.append(term)
        ops.append(op)
    operands = ops
    if out is None:
        counts: dict = {}
        for t in ins:
            for c in t.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    else:
        out = out.replace("...", ell)
        if not re.fullmatch(r"[a-zA-Z]*", out) or len(set(out)) != len(out):
            raise ValueError(f"einsum {spec!r}: bad output subscripts {out!r}")
        missing = [c for c in out if not any(c in t for t in terms)]
        if missing:
            raise ValueError(f"einsum {spec!r}: output index {missing[0]!r} appears in no operand")
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
    return contract(prod, red, "matmul") if red else prod
