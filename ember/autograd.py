"""Reverse-mode autograd as a graph -> graph transform.

``grad(loss, params)`` walks the primitive graph from ``loss`` in reverse topological order and
appends, for every primitive, its vector-Jacobian product as ordinary graph nodes. The gradients live
in the same hash-consed graph as the forward pass, so forward, backward (and an optimizer update, see
optim.py) are compiled and searched together, and shared subexpressions unify.

Rules (``g`` is the gradient arriving at a node's output, ``out`` the node's value):

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
SUM         g broadcast back over the reduced axes
MAX         g split evenly among the positions equal to the max (as torch's amax)
CAST        g cast back to the source dtype; nothing flows to or from integers and booleans
GATHER      a scatter-add, built from a one-hot contraction (see `_gather_vjp` for the cost)
VIEW        "un-viewing": see `unview` below
==========  ===================================================================================

Only floating-point nodes carry gradients. A parameter that the loss does not depend on gets a zero
gradient (not an error). Gradients have their parameter's dtype (an f16 parameter gets an f16
gradient), as in PyTorch.

Un-viewing (the gradient of a VIEW w.r.t. its source). A View maps each output coordinate ``i`` to a
flat source position ``index(i)`` when ``valid(i)``. The source gradient at flat position ``j`` is the
sum of ``g[i]`` over every valid ``i`` with ``index(i) == j``. `unview` builds that sum exactly for any
View, as a new View over ``g`` (plus reductions), in four steps:

1. *Broadcast axes* (index and validity ignore the coordinate; expand): sum ``g`` over them first.
2. *Validity-pinned axes* (the coordinate only appears in the validity, which allows a contiguous
   range of values, e.g. a dilation's ``i % f == 0`` after a split): slice ``g`` to that range.
3. *Splits and merges*: where the index divides a coordinate by a constant or a named dimension
   (a reshape of a permuted view produces ``i // B`` and ``i % B``), reshape ``g`` to split that
   axis — padding it with zeros when the divisor does not divide the extent, merging adjacent axes
   first when the division reads them as one flat index — so the index becomes affine in the new
   axes. Moves are chosen greedily on the cost of step 4. With named dimensions the index is first
   re-simplified (`_resimplify`) where the canonical simplifier stops short.
4. *Inversion*: every axis whose coordinate enters the index linearly with a constant non-zero
   stride is a candidate for a *chain*: a set of axes whose positions an offset determines uniquely,
   recovered by floor division and remainder (a negative stride by flipping). A chain is the
   largest-extent subset whose strides each exceed the span of the smaller ones; the remaining axes
   are *enumerated*. Preferably the index is written as Σ stride_d · c_d(i) over the source axes,
   each coordinate ``c_d`` provably inside its axis wherever the view is valid, and each source axis
   is solved on its own (this keeps slices, pads, unfolds and permutes as clean per-axis index
   expressions); otherwise one chain is solved against the flat offset. The result is a view of
   ``g`` with shape ``source shape + enumerated extents``, whose index solves for the chain
   coordinates and whose validity checks the solution (in range, zero remainder, original
   validity), followed by a sum over the enumerated axes.

Cost: (source elements) × (product of enumerated extents). Permute, reshape, reshape of a permuted
view, slice, pad, flip, dilate: nothing is enumerated — the result is a single view (permute ->
inverse permute, slice -> pad, pad -> slice, flip -> flip, dilate -> strided slice). Expand: a sum
over the broadcast axes. Unfold (sliding windows, convolution): the kernel axes are enumerated, i.e.
col2im as a sum over kernel offsets, cost N·K. Anything else falls back on enumerating every axis:
the validity becomes the equality mask ``j == index(i)`` — a one-hot contraction over the index
expression, cost N·M for a view of M elements over N. It is always correct, only slower.
"""
from __future__ import annotations

import itertools
import math
from typing import Sequence

from . import graph as g
from . import symbolic as sm
from .graph import Node
from .symbolic import Expr, sym
from .tensor import Tensor, _as_tensor, full, iota, where
from .view import View, index_name, row_major_strides

__all__ = ["grad", "unview"]

LN2 = math.log(2.0)


class GradError(ValueError):
    """A gradient that cannot be taken (non-scalar loss without grad_output, integer parameter, …)."""


# ------------------------------------------------------------------------------------------------
# the public entry point

def grad(loss: Tensor, params: Sequence[Tensor], grad_output=None) -> list[Tensor]:
    """Gradients of ``loss`` with respect to each of ``params``, as Tensors in the same graph.

    ``loss`` must be a 0-d floating-point tensor, unless ``grad_output`` (the upstream gradient, of
    loss's shape; a scalar is broadcast) is given, in which case the result is the vector-Jacobian
    product. ``params`` may be inputs, constants (DATA) or any intermediate tensor of the graph.
    """
    if isinstance(params, Tensor):
        raise TypeError("grad expects a list of parameters; wrap a single tensor in [ ]")
    if not isinstance(loss, Tensor):
        raise TypeError(f"loss must be an Ember Tensor, got {type(loss).__name__}")
    if not loss.dtype.is_float:
        raise GradError(f"loss must be floating point, got {loss.dtype.name}")
    params = list(params)
    for k, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"param {k} is a {type(p).__name__}, not an Ember Tensor")
        if not p.dtype.is_float:
            raise GradError(f"param {k} ({p!r}) is {p.dtype.name}: only floating-point tensors have gradients")
    if grad_output is None:
        if loss.ndim != 0:
            raise GradError(f"loss has shape {loss.shape}: grad needs a scalar (0-d) loss, or pass grad_output")
        seed = Tensor(g.const_node(1.0, loss.dtype))
    else:
        seed = _as_tensor(grad_output, loss.dtype)
        if seed.dtype != loss.dtype:
            seed = seed.cast(loss.dtype)
        if seed.ndim == 0 and loss.ndim:
            seed = seed.broadcast_to(loss.node.shape)
        if seed.node.shape != loss.node.shape:
            raise GradError(f"grad_output has shape {seed.shape}, loss has shape {loss.shape}")
    grads = backward(loss.node, seed.node, [p.node for p in params])
    out = []
    for p in params:
        gn = grads.get(p.node)
        out.append(Tensor(gn) if gn is not None else full(p.node.shape, 0.0, p.dtype))
    return out


def backward(root: Node, seed: Node, wrt: Sequence[Node]) -> dict:
    """{node: gradient node} for every node of ``wrt`` that ``root`` depends on (node level)."""
    order = g.toposort([root])
    targets = set(wrt)
    # only float nodes on a path from a target to the root carry gradients
    live: set = set()
    for n in order:
        if n.dtype.is_float and (n in targets or any(s in live for s in n.srcs)):
            live.add(n)
    pending: dict = {root: [seed]} if root in live else {}
    done: dict = {}
    for n in reversed(order):
        parts = pending.pop(n, None)
        if parts is None:
            continue
        gn = parts[0]
        for p in parts[1:]:
            gn = g.binary(g.ADD, gn, p)
        if n in targets:
            done[n] = gn
        for src, gs in _vjp(n, gn, live):
            if gs.shape != src.shape or gs.dtype != src.dtype:  # pragma: no cover - internal invariant
                raise AssertionError(f"vjp of {n.op} gave {gs} for source {src}")
            pending.setdefault(src, []).append(gs)
    return done


# ------------------------------------------------------------------------------------------------
# vector-Jacobian products, one per primitive

def _vjp(n: Node, gn: Node, live: set):
    """(source, gradient for that source) for each live source of n."""
    op, srcs = n.op, n.srcs
    if op in g.LEAVES or op == g.LT:
        return
    G, out = Tensor(gn), Tensor(n)
    if op == g.WHERE:
        c, a, b = srcs
        zero = full(n.shape, 0.0, n.dtype)
        if a in live:
            yield a, where(Tensor(c), G, zero).node
        if b in live:
            yield b, where(Tensor(c), zero, G).node
        return
    if op == g.GATHER:
        data, index = srcs
        if data in live:
            yield data, _gather_vjp(gn, data, index)
        return
    x = srcs[0]
    if op == g.ADD:
        for s in srcs:
            if s in live:
                yield s, gn
        return
    if op == g.MUL:
        a, b = srcs
        if a in live:
            yield a, (G * Tensor(b)).node
        if b in live:
            yield b, (G * Tensor(a)).node
        return
    if op == g.MOD:
        a, b = srcs
        if a in live:
            yield a, gn
        if b in live:
            q = Tensor(a) * Tensor(b).reciprocal()
            trunc = q - q.fmod(1.0)
            yield b, (-(G * trunc)).node
        return
    if x not in live:
        return
    X = Tensor(x)
    if op == g.EXP2:
        yield x, (G * out * LN2).node
    elif op == g.LOG2:
        yield x, (G * X.reciprocal() * (1.0 / LN2)).node
    elif op == g.SIN:
        yield x, (G * X.cos()).node
    elif op == g.SQRT:
        yield x, (G * out.reciprocal() * 0.5).node
    elif op == g.RECIP:
        yield x, (-(G * (out * out))).node
    elif op == g.SUM:
        yield x, G.broadcast_to(x.shape).node
    elif op == g.MAX:
        # every position equal to the max shares g evenly (torch's amax). x <= max always, so
        # "not x < max" is the equality test (NaN maxima mark every position, as NaN poisons anyway)
        hit = ~(X < out.broadcast_to(x.shape))
        count = hit.cast(n.dtype).sum(n.arg, keepdim=True)
        share = (G * count.reciprocal()).broadcast_to(x.shape)
        yield x, where(hit, share, full(x.shape, 0.0, x.dtype)).node
    elif op == g.CAST:
        if x.dtype.is_float:
            yield x, g.cast_node(gn, x.dtype)
    elif op == g.VIEW:
        yield x, unview(gn, n.arg, x.shape)
    else:  # pragma: no cover
        raise GradError(f"no gradient rule for primitive {op}")


# ------------------------------------------------------------------------------------------------
# views over nodes

def _remap(node: Node, shape: Sequence, coords: Sequence[Expr], extra_valid: Expr = sm.ONE) -> Node:
    """A view of ``node`` with ``shape`` whose element at the new coordinates is ``node[coords]``
    (each coordinate an expression of the new index variables), or 0 where ``extra_valid`` is false.
    Composes with node's own view when node is a VIEW, so chains stay one view."""
    base, v = g.current_view(node)
    m = {index_name(d): c for d, c in enumerate(coords)}
    idx = sm.substitute(v.index, m)
    valid = sm.logical_and(sm.substitute(v.valid, m), extra_valid)
    return g.view_node(base, View(tuple(sym(s) for s in shape), idx, valid))


def _unflatten(flat: Expr, shape: Sequence[Expr]) -> list[Expr]:
    return [(flat // st) if d == 0 else (flat // st) % s
            for d, (s, st) in enumerate(zip(shape, row_major_strides(shape)))]


def _var(d: int, extent) -> Expr:
    return sm.index_var(index_name(d), extent)


def _index_names(e: Expr) -> set:
    return {v for v in sm.free_vars(e) if v.startswith("_i")}


def _estimate(e: Expr) -> float:
    """A number for an extent, for cost comparisons only (named dims count as 64)."""
    if e.is_const:
        return float(e.value)
    return float(sm.evaluate(e, {v: 64 for v in sm.free_vars(e)}))


# ------------------------------------------------------------------------------------------------
# un-viewing

class _Pending:
    """grad_source_flat[j] = sum over i in ``shape`` with valid(i) and index(i) == j of node[i]."""

    __slots__ = ("node", "shape", "index", "valid")

    def __init__(self, node: Node, shape: list, index: Expr, valid: Expr):
        self.node, self.shape, self.index, self.valid = node, list(shape), index, valid

    def names(self) -> tuple[set, set]:
        return _index_names(self.index), _index_names(self.valid)


def _factor_list(t: Expr) -> list:
    return list(t.args) if t.op == "mul" else [t]


def _exact_quotient(t: Expr, k: int, b: Expr) -> Expr | None:
    """(k·t) / b when a symbolic divisor b = kb·(product) divides it structurally, else None."""
    if b.op == "add" and b.args[0] == 0 and len(b.args[1]) == 1:
        (tb, kb), = b.args[1]
    else:
        tb, kb = b, 1
    if k % kb:
        return None
    rest = _factor_list(t)
    for f in _factor_list(tb):
        if f not in rest:
            return None
        rest.remove(f)
    return sm.prod(rest) * (k // kb)


def _index_coefficients(e: Expr) -> dict:
    """{index variable v: the coefficient expression of v} for the terms of e linear in v."""
    out: dict = {}
    for t, k in (e.args[1] if e.op == "add" else (() if e.is_const else ((e, 1),))):
        fs = _factor_list(t)
        idx = [f for f in fs if f.op == "var" and f.args[0].startswith("_i")]
        if len(idx) != 1:
            continue
        v = idx[0]
        rest = list(fs)
        rest.remove(v)
        out[v] = out.get(v, sm.ZERO) + sm.prod(rest) * k
    return out


def _const_multiple(coef: Expr, b: Expr, exact: bool = True) -> int | None:
    """m if coef == m·b for an integer m (both linear in named dimensions), else None. With
    exact=False, coef may also differ from m·b by a plain number."""
    b_terms = b.args[1] if b.op == "add" else ((b, 1),)
    c_terms = dict(coef.args[1]) if coef.op == "add" else ({} if coef.is_const else {coef: 1})
    t0, k0 = b_terms[0]
    if t0 not in c_terms or c_terms[t0] % k0:
        return None
    m = c_terms[t0] // k0
    left = coef - b * m
    return m if m and (left is sm.ZERO or (not exact and left.is_const)) else None


def _index_free(e: Expr) -> Expr:
    """The terms of e that contain no index variable."""
    if e.op != "add":
        return e if not _index_names(e) else sm.ZERO
    return sm.sum_of([e.args[0]] + [t * k for t, k in e.args[1] if not _index_names(t)])


def _bound(e: Expr, upper: bool) -> Expr | None:
    """A symbolic bound of a linear expression whose terms are products of non-negative factors:
    index variables are replaced by 0 or by their (possibly symbolic) largest value; named
    dimensions stay. None when a factor could be negative."""
    c0, terms = (e.args[0], e.args[1]) if e.op == "add" else ((e.value, ()) if e.is_const else (0, ((e, 1),)))
    out = sm.const(c0)
    for t, k in terms:
        factors = _factor_list(t)
        if any(f.vmin < 0 for f in factors):
            return None
        high = upper == (k > 0)
        val = sm.ONE
        for f in factors:
            if f.op == "var" and f.args[0].startswith("_i"):
                hi = f.args[2]
                if high and hi is None:
                    return None
                val = val * (sym(hi) if high else sm.ZERO)
            elif f.op in ("var", "const"):
                val = val * f
            else:
                return None
        out = out + val * k
    return out


def _within(a: Expr, b: Expr, atoms: Sequence[Expr] = ()) -> bool:
    """0 <= a < b for every value of the index variables (b symbolic) where every atom is >= 0."""
    lo, hi = _bound(a, False), _bound(a, True)
    lower = (lo is not None and sm.prove_le(0, lo)) or any(sm.prove_le(t, a) for t in atoms)
    upper = (hi is not None and sm.prove_lt(hi, b)) or any(sm.prove_le(t, b - 1 - a) for t in atoms)
    return lower and upper


def _split_multiples(a: Expr, b: Expr) -> tuple[Expr, Expr]:
    """(quot, rest) with a == quot·b + rest, quot holding the exact multiples of a symbolic divisor b."""
    quot, rest = sm.ZERO, a
    terms = dict(a.args[1]) if a.op == "add" else ({} if a.is_const else {a: 1})
    for t, k in terms.items():
        q = _exact_quotient(t, k, b)
        if q is not None:
            quot, rest = quot + q, rest - t * k
    for v, coef in _index_coefficients(rest).items():  # (S+1)·i spread over S·i + i
        m = _const_multiple(coef, b)
        if m is not None:
            quot, rest = quot + v * m, rest - v * coef
    m = _const_multiple(_index_free(rest), b, exact=False)  # (3S + 3 + r) // (3S + 3)
    if m is not None:
        quot, rest = quot + m, rest - b * m
    return quot, rest


def _nested_div(x: Expr):
    """(a, c, m) when x is (a // c) // m or (a // c) % m with c a constant > 1 and m symbolic (> 0)."""
    inner, m = x.args
    if inner.op != "div" or m.is_const or m.vmin <= 0:
        return None
    a, c = inner.args
    return (a, c.value, m) if c.is_const and c.value > 1 else None


def _resimplify(e: Expr, atoms: Sequence[Expr] = ()) -> Expr:
    """Rebuild e, splitting exact multiples out of floor divisions and modulos by *symbolic* divisors,
    (128·S·i + r) // (128·S) -> i + r // (128·S), and dropping them when the remainder is provably in
    [0, divisor) — from variable bounds that may be symbolic, or from ``atoms`` (expressions known
    to be >= 0, e.g. the validity's conjuncts: only sound where e matters only when those hold). The
    canonical simplifier does neither for scaled symbolic divisors, so reshapes over named dimensions
    would otherwise keep div/mod terms that hide their affine structure from the un-viewing analysis."""
    memo: dict = {}

    def go(x: Expr) -> Expr:
        r = memo.get(x)
        if r is not None:
            return r
        op = x.op
        if op in ("const", "var"):
            r = x
        elif op == "add":
            r = sm.const(x.args[0])
            for t, k in x.args[1]:
                r = r + go(t) * k
        elif op == "mul":
            r = sm.prod(go(f) for f in x.args)
        elif op in ("div", "mod") and _nested_div(x) is not None:
            # the simplifier writes x // (c·m) as (x // c) // m and x % (c·m) as c·((x // c) % m) + x % c;
            # both are read here as one division by the scaled divisor c·m, which the rules below handle
            a0, c, m = _nested_div(x)
            a, b = go(a0), sm.const(c) * go(m)
            quot, rest = _split_multiples(a, b)
            if _within(rest, b, atoms):
                r = quot if op == "div" else rest // c
            else:
                r = quot + rest // b if op == "div" else (rest % b) // c
        elif op in ("div", "mod"):
            a, b = go(x.args[0]), go(x.args[1])
            quot, rest = _split_multiples(a, b) if not b.is_const else (sm.ZERO, a)
            if not b.is_const and _within(rest, b, atoms):
                r = quot if op == "div" else rest
            else:
                r = quot + rest // b if op == "div" else rest % b
        elif op == "min":
            r = sm.minimum(go(x.args[0]), go(x.args[1]))
        elif op == "max":
            r = sm.maximum(go(x.args[0]), go(x.args[1]))
        elif op == "lt":
            r = sm.lt(go(x.args[0]), go(x.args[1]))
        elif op == "and":
            r = sm.logical_and(go(x.args[0]), go(x.args[1]))
        elif op == "not":
            r = sm.logical_not(go(x.args[0]))
        else:  # pragma: no cover
            r = x
        memo[x] = r
        return r

    return go(e)


def _normalize(p: _Pending) -> _Pending | None:
    """Steps 1-2 of the module docstring, plus dropping unit axes. None: the gradient is zero."""
    if any(not s.is_const for s in p.shape):
        # the index is read only where the validity holds, so its conjuncts may be assumed there
        p = _Pending(p.node, p.shape, _resimplify(p.index, _atoms(p.valid)), _resimplify(p.valid))
    sub = {index_name(d): 0 for d, s in enumerate(p.shape) if s is sm.ONE}
    if sub:
        p = _Pending(p.node, p.shape, sm.substitute(p.index, sub), sm.substitute(p.valid, sub))
    if p.valid is sm.ZERO:
        return None
    in_index, in_valid = p.names()
    bcast = [d for d, s in enumerate(p.shape) if s is not sm.ONE and index_name(d) not in in_index | in_valid]
    if bcast:
        node = g.reduce_node(g.SUM, p.node, bcast)
        p = _Pending(node, [sm.ONE if d in bcast else s for d, s in enumerate(p.shape)], p.index, p.valid)
    # axes seen only by the validity: keep the contiguous range of values it allows
    for d, s in enumerate(p.shape):
        name = index_name(d)
        if s is sm.ONE or name in in_index or name not in in_valid or not s.is_const or s.value > 256:
            continue
        allowed = [a for a in range(s.value) if sm.substitute(p.valid, {name: a}) is not sm.ZERO]
        if not allowed:
            return None
        lo, hi = allowed[0], allowed[-1] + 1
        if hi - lo == s.value or allowed != list(range(lo, hi)):
            continue
        shape = list(p.shape)
        shape[d] = sym(hi - lo)
        coords = [_var(k, shape[k]) for k in range(len(shape))]
        coords[d] = coords[d] + lo
        node = _remap(p.node, shape, coords)
        m = {name: coords[d]}
        return _normalize(_Pending(node, shape, sm.substitute(p.index, m), sm.substitute(p.valid, m)))
    return p


def _divmods(p: _Pending) -> list[tuple[Expr, Expr]]:
    """(numerator, divisor) of every floor division and modulo in the index and validity."""
    found, seen, stack = [], set(), [p.index, p.valid]
    while stack:
        e = stack.pop()
        if e in seen or e.op in ("const", "var"):
            continue
        seen.add(e)
        if e.op == "add":
            stack.extend(t for t, _ in e.args[1])
            continue
        stack.extend(e.args)
        if e.op in ("div", "mod"):
            found.append((e.args[0], e.args[1]))
    return found


def _axis_terms(num: Expr, ndim: int) -> dict:
    """{axis: coefficient} of the index variables in a linear numerator."""
    terms = dict(num.args[1]) if num.op == "add" else {num: 1}
    return {int(t.args[0][2:]): k for t, k in terms.items()
            if t.op == "var" and t.args[0].startswith("_i") and int(t.args[0][2:]) < ndim}


def _split_candidates(p: _Pending) -> list[tuple[int, Expr]]:
    """(axis, divisor) pairs: the index or validity divides that axis's coordinate by the divisor."""
    found = set()
    for num, c in _divmods(p):
        for d, k in _axis_terms(num, len(p.shape)).items():
            n = p.shape[d]
            if c.is_const:
                cd = c.value // math.gcd(c.value, abs(k))
                if cd > 1 and (not n.is_const or cd < n.value):
                    found.add((d, sym(cd)))  # padded to a multiple of cd when it does not divide n
            elif k == 1 and n is not c and _divide(n, c) is not None:
                found.add((d, c))
    return sorted(found, key=lambda dc: (dc[0], dc[1].key))


def _merge_candidates(p: _Pending) -> list[tuple[int, int]]:
    """Runs of adjacent axes [a, b] that a division's numerator reads as one row-major flat index
    (a reshape of a reshape): merging them first lets a split cut them where the division does."""
    found = set()
    for num, _ in _divmods(p):
        terms = _axis_terms(num, len(p.shape))
        if len(terms) < 2:
            continue
        a, b = min(terms), max(terms)
        if sorted(terms) != list(range(a, b + 1)):
            continue
        w = terms[b]
        if all(terms[d] is not None and sm.sym(terms[d]) is sm.prod([w] + p.shape[d + 1:b + 1]) for d in terms):
            found.add((a, b))
    return sorted(found)


def _merge(p: _Pending, a: int, b: int) -> _Pending:
    run = p.shape[a:b + 1]
    n = sm.prod(run)
    new_shape = p.shape[:a] + [n] + p.shape[b + 1:]
    node = g.apply_view(p.node, lambda v: v.reshape(new_shape))
    k = _var(a, n)
    m = {index_name(d): (k // st) % s if d > a else k // st
         for d, s, st in zip(range(a, b + 1), run, row_major_strides(run))}
    m |= {index_name(d): _var(d - (b - a), p.shape[d]) for d in range(b + 1, len(p.shape))}
    return _Pending(node, new_shape, sm.substitute(p.index, m), sm.substitute(p.valid, m))


def _split(p: _Pending, d: int, c: Expr) -> _Pending:
    """Replace axis d (extent n) by (ceil(n / c), c); pads the gradient with zeros if c ∤ n."""
    n = p.shape[d]
    node, shape = p.node, list(p.shape)
    q = _divide(n, c)
    padded = q is None  # only for constant divisors (see _split_candidates)
    if padded:
        q = (n + (c - 1)) // c
    if padded:
        shape[d] = q * c
        coords = [_var(k, shape[k]) for k in range(len(shape))]
        node = _remap(node, shape, coords, sm.lt(coords[d], n))
    new_shape = shape[:d] + [q, c] + shape[d + 1:]
    node = g.apply_view(node, lambda v: v.reshape(new_shape)) if node.shape != tuple(new_shape) else node
    m = {index_name(k): _var(k + 1, shape[k]) for k in range(d + 1, len(shape))}
    qd = _var(d, q) * c + _var(d + 1, c)
    m[index_name(d)] = qd
    valid = sm.substitute(p.valid, m)
    if padded:
        valid = sm.logical_and(valid, sm.lt(qd, n))
    return _Pending(node, new_shape, sm.substitute(p.index, m), valid)


def _abs(st: Expr) -> Expr:
    return st if st.vmin > 0 else -st


def _best_chain(cands: list, shape: list) -> tuple[list, list]:
    """Split candidate (axis, stride) pairs into (chain, rest): the chain is the subset of largest total
    extent whose positions a sum ``r = Σ |stride|·i`` determines uniquely — sorted by |stride|, each
    |stride| exceeds the span of the smaller ones — returned sorted by |stride| descending."""
    def ok(chain) -> bool:
        span = sm.ZERO
        for d, st in sorted(chain, key=lambda ds: _estimate(_abs(ds[1]))):
            if not sm.prove_lt(span, _abs(st)):
                return False
            span = span + _abs(st) * (shape[d] - 1)
        return True

    ext = {d: _estimate(shape[d]) for d, _ in cands}
    if len(cands) <= 12:
        subsets = [ch for r in range(len(cands) + 1) for ch in itertools.combinations(cands, r)]
        subsets.sort(key=lambda ch: -math.prod(ext[d] for d, _ in ch))
        best = next(list(ch) for ch in subsets if ok(ch))
    else:  # greedy: smallest strides first, enumerate whatever breaks uniqueness
        best = []
        for cand in sorted(cands, key=lambda ds: _estimate(_abs(ds[1]))):
            if ok(best + [cand]):
                best.append(cand)
    chosen = {d for d, _ in best}
    best.sort(key=lambda ds: -_estimate(_abs(ds[1])))
    return best, [c for c in cands if c[0] not in chosen]


def _linear_axes(p: _Pending) -> tuple[dict, list]:
    """({axis: stride} for axes entering the index linearly with a constant non-zero stride,
    [other non-unit axes])."""
    in_index, _ = p.names()
    lin, other = {}, []
    for d, s in enumerate(p.shape):
        if s is sm.ONE:
            continue
        name = index_name(d)
        if name not in in_index:
            other.append(d)
            continue
        stride = sm.substitute(p.index, {name: 1}) - sm.substitute(p.index, {name: 0})
        rest = p.index - stride * _var(d, s)
        if _index_names(stride) or name in _index_names(rest) or not (stride.vmin > 0 or stride.vmax < 0):
            other.append(d)
        else:
            lin[d] = stride
    return lin, other


def _atoms(valid: Expr) -> list[Expr]:
    """Lower bounds ``B - A - 1 >= 0`` from the ``A < B`` conjuncts of a validity expression."""
    out, stack = [], [valid]
    while stack:
        e = stack.pop()
        if e.op == "and":
            stack.extend(e.args)
        elif e.op == "lt":
            out.append(e.args[1] - e.args[0] - 1)
    return out


def _in_range(c: Expr, hi: Expr, atoms: list) -> bool:
    """Whether 0 <= c <= hi wherever the validity holds (from bounds, or from one of its atoms)."""
    lower = sm.prove_le(0, c) or any(sm.prove_le(a, c) for a in atoms)
    upper = sm.prove_le(c, hi) or any(sm.prove_le(c, hi - a) for a in atoms)
    return lower and upper


def _divide(a: Expr, b: Expr) -> Expr | None:
    """a / b if b divides every term of a exactly (structurally), else None."""
    if b.is_const:
        if a.is_const:
            return sym(a.value // b.value) if a.value % b.value == 0 else None
        b_val = b.value
        c0, terms = (a.args[0], a.args[1]) if a.op == "add" else (0, ((a, 1),))
        if c0 % b_val or any(k % b_val for _, k in terms):
            return None
        return sm.sum_of([c0 // b_val] + [t * (k // b_val) for t, k in terms])
    if b.op == "add" and (b.args[0] != 0 or len(b.args[1]) > 1):  # a sum such as S - 1
        m = _const_multiple(a, b)
        return sym(m) if m is not None else None
    if a.is_const or (a.op == "add" and a.args[0] != 0):
        return None
    out = sm.ZERO
    for t, k in (a.args[1] if a.op == "add" else ((a, 1),)):
        q = _exact_quotient(t, k, b)
        if q is None:
            return None
        out = out + q
    return out


class _Plan:
    """How to invert: cost, and either one flat chain or one chain per source axis."""

    def __init__(self, cost: float, enum: list, chain=None, per_axis=None):
        self.cost, self.enum, self.chain, self.per_axis = cost, enum, chain, per_axis


def _plan_flat(p: _Pending, lin: dict, other: list, src_shape: tuple) -> _Plan:
    chain, rest = _best_chain(list(lin.items()), p.shape)
    enum = sorted(other + [d for d, _ in rest])
    cost = _estimate(sm.prod(src_shape)) * math.prod(_estimate(p.shape[d]) for d in enum)
    return _Plan(cost, enum, chain=chain)


def _plan_per_axis(p: _Pending, lin: dict, other: list, src_shape: tuple) -> _Plan | None:
    """Write index = Σ_d stride_d · c_d(i) with each source coordinate c_d an affine expression of the
    view axes that stays in [0, X_d) wherever the view is valid; then ``index(i) == j`` exactly when
    every ``c_d(i)`` equals j's coordinate, and each source axis is inverted on its own. This keeps
    slices, pads, unfolds and permutes as clean per-axis index expressions."""
    if any(index_name(d) in _index_names(p.index) for d in other):
        return None  # a non-linear axis in the index
    strides = row_major_strides(src_shape)
    axes = [d for d, s in enumerate(src_shape) if s is not sm.ONE]
    if not axes:
        return None
    assign: dict = {d: [] for d in range(len(src_shape))}
    for k, st in lin.items():
        for d in axes:
            coef = _divide(st, strides[d])
            if coef is not None:
                assign[d].append((k, coef))
                break
        else:
            return None
    # distribute the offset: symbolic terms by the same divisibility, the constant by digits
    off = sm.substitute(p.index, {index_name(d): 0 for d in range(len(p.shape))})
    const, terms = (off.args[0], dict(off.args[1])) if off.op == "add" else ((off.value, {}) if off.is_const else (0, {off: 1}))
    offs: dict = {d: sm.ZERO for d in range(len(src_shape))}
    for t, k in terms.items():
        for d in axes:
            coef = _divide(t * k, strides[d])
            if coef is not None:
                offs[d] = offs[d] + coef
                break
        else:
            return None
    if not all(strides[d].is_const for d in axes):
        if const:
            return None
    atoms = _atoms(p.valid)
    rem = const
    for d in reversed(range(len(src_shape))):
        var_part = sm.sum_of(_var(k, p.shape[k]) * coef for k, coef in assign[d])
        if src_shape[d] is sm.ONE:
            if not sm.prove_le(0, var_part) or not sm.prove_le(var_part, 0):
                return None
            continue
        st, X = strides[d].value if strides[d].is_const else None, src_shape[d]
        if st is None or rem % st:
            if rem:
                return None
            choices = [0]
        else:
            base = rem // st
            choices = [base] if d == axes[0] else (
                [base % X.value + t * X.value for t in (0, -1, 1, -2)] if X.is_const else [base])
        for o in choices:
            if _in_range(offs[d] + o + var_part, X - 1, atoms):
                offs[d] = offs[d] + o
                rem -= o * (st or 0)
                break
        else:
            return None
    if rem:
        return None
    per_axis, enum = {}, list(other)
    for d in axes:
        chain, rest = _best_chain(assign[d], p.shape)
        per_axis[d] = (offs[d], chain, rest)
        enum += [k for k, _ in rest]
    cost = _estimate(sm.prod(src_shape)) * math.prod(_estimate(p.shape[k]) for k in enum)
    return _Plan(cost, sorted(enum), per_axis=per_axis)


def _plan(p: _Pending, src_shape: tuple) -> _Plan:
    lin, other = _linear_axes(p)
    flat = _plan_flat(p, lin, other, src_shape)
    per = _plan_per_axis(p, lin, other, src_shape)
    return per if per is not None and per.cost <= flat.cost else flat


def _solve(r: Expr, chain: list, shape: list, coords: dict) -> Expr:
    """Solve r == Σ stride_k · i_k for the chain axes (r already has the flipped axes' constant
    removed); sets coords and returns the validity of the solution."""
    ok = sm.ge(r, 0)
    for k, st in chain:
        a = _abs(st)
        q = r // a
        r = r % a
        ok = sm.logical_and(ok, sm.lt(q, shape[k]))
        coords[k] = q if st.vmin > 0 else shape[k] - 1 - q
    return sm.logical_and(ok, sm.eq(r, 0))


def _invert(p: _Pending, plan: _Plan, src_shape: tuple) -> Node:
    """Step 4: the source gradient as a view of p.node (plus a sum over enumerated axes)."""
    nsrc = len(src_shape)
    src_vars = [_var(d, s) for d, s in enumerate(src_shape)]
    coords: dict = {d: sm.ZERO for d, s in enumerate(p.shape) if s is sm.ONE}
    for t, k in enumerate(plan.enum):
        coords[k] = _var(nsrc + t, p.shape[k])

    def flipped(chain) -> Expr:  # what the chain contributes at its zero point
        return sm.sum_of(st * (p.shape[k] - 1) for k, st in chain if st.vmax < 0)

    if plan.chain is not None:
        j = sm.sum_of(v * st for v, st in zip(src_vars, row_major_strides(src_shape)))
        chain_zero = {index_name(k): 0 for k, _ in plan.chain}
        base = sm.substitute(p.index, {index_name(k): c for k, c in coords.items()} | chain_zero)
        ok = _solve(j - base - flipped(plan.chain), plan.chain, p.shape, coords)
    else:
        ok = sm.ONE
        for d in range(nsrc):
            if d not in plan.per_axis:
                continue
            off, chain, rest = plan.per_axis[d]
            r = src_vars[d] - off - sm.sum_of(coef * coords[k] for k, coef in rest) - flipped(chain)
            ok = sm.logical_and(ok, _solve(r, chain, p.shape, coords))
    ok = sm.logical_and(ok, sm.substitute(p.valid, {index_name(k): c for k, c in coords.items()}))
    out_shape = list(src_shape) + [p.shape[k] for k in plan.enum]
    node = _remap(p.node, out_shape, [coords[k] for k in range(len(p.shape))], ok)
    if plan.enum:
        node = g.reduce_node(g.SUM, node, range(nsrc, nsrc + len(plan.enum)))
        node = g.apply_view(node, lambda v: v.reshape(src_shape))
    return node


def unview(gn: Node, view: View, src_shape: Sequence, *, max_splits: int = 8, force_fallback: bool = False) -> Node:
    """Gradient w.r.t. a VIEW's source (shape ``src_shape``) given ``gn``, the gradient of the view.

    ``force_fallback`` skips the analysis and enumerates every axis (the one-hot contraction); tests
    use it to check the analysis against the always-correct construction."""
    src_shape = tuple(sym(s) for s in src_shape)
    zero = full(src_shape, 0.0, gn.dtype).node
    if any(s is sm.ZERO for s in src_shape) or any(s is sm.ZERO for s in view.shape):
        return zero
    p = _Pending(gn, list(view.shape), view.index, view.valid)
    if force_fallback:
        enum = [d for d, s in enumerate(p.shape) if s is not sm.ONE]
        return _invert(p, _Plan(0.0, enum, chain=[]), src_shape)
    p = _normalize(p)
    if p is None:
        return zero
    plan = _plan(p, src_shape)
    for _ in range(max_splits):
        if not plan.enum:
            break
        best = None
        moves = [(p, d, c) for d, c in _split_candidates(p)]
        for a, b in _merge_candidates(p):  # a merge helps only together with a split after it
            merged = _merge(p, a, b)
            moves += [(merged, d, c) for d, c in _split_candidates(merged)]
        for base, d, c in moves:
            q = _normalize(_split(base, d, c))
            if q is None:
                return zero
            qplan = _plan(q, src_shape)
            if qplan.cost < plan.cost and (best is None or qplan.cost < best[1].cost):
                best = (q, qplan)
        if best is None:
            break
        p, plan = best
    return _invert(p, plan, src_shape)


# ------------------------------------------------------------------------------------------------
# gather

def _decompose(n: Node):
    """The integer tensor n as (expr, [(node_k, c_k)]): n == expr(indices) + sum_k c_k * node_k, with
    expr symbolic (from IOTA, integer constants, and arithmetic and views of them) and node_k the
    data-dependent parts (each of n's shape). Anything unrecognised is one opaque term."""
    if n.op == g.IOTA:
        return n.arg, []
    if n.op == g.CONST and n.dtype.is_int:
        return sym(n.arg), []
    if n.op == g.CAST and n.dtype.is_int and n.srcs[0].dtype.is_int:
        return _decompose(n.srcs[0])
    if n.op == g.ADD:
        ea, ta = _decompose(n.srcs[0])
        eb, tb = _decompose(n.srcs[1])
        return ea + eb, ta + tb
    if n.op == g.MUL and n.dtype.is_int:
        ea, ta = _decompose(n.srcs[0])
        eb, tb = _decompose(n.srcs[1])
        if not ta and not tb:
            return ea * eb, []
        if not ta and ea.is_const:
            return eb * ea, [(t, c * ea.value) for t, c in tb]
        if not tb and eb.is_const:
            return ea * eb, [(t, c * eb.value) for t, c in ta]
    if n.op == g.VIEW and n.arg.valid is sm.ONE:
        src, v = n.srcs[0], n.arg
        e, terms = _decompose(src)
        coords = _unflatten(v.index, src.shape)
        e = sm.substitute(e, {index_name(d): c for d, c in enumerate(coords)})
        return e, [(_remap(t, v.shape, coords), c) for t, c in terms]
    return sm.ZERO, [(n, 1)]


def _gather_vjp(gn: Node, data: Node, index: Node) -> Node:
    """Scatter-add of gn into data's flat positions, from primitives (there is no scatter).

    The index is split as ``expr + c·T`` (expr symbolic, T data-dependent). A static index map (no
    T) is a view: un-viewed exactly, like any VIEW. Otherwise with ``0 <= expr < c`` (an embedding
    or index_select: T the row, expr the column) the flat position is ``q·c + expr`` with
    ``q == T``: a one-hot H[i, q] = g[i]·(T[i] == q) over the Q = ceil(N / c) rows, then the
    static map (i, q) -> q·c + expr(i) un-viewed — for an embedding this sums H over the lookups,
    the contraction one_hotᵀ @ g, cost M·Q (M = elements of the index). Anything else is the plain
    one-hot contraction over all N source elements: cost M·N."""
    expr, terms = _decompose(index)
    numel = data.numel
    if not terms:
        return unview(gn, View(index.shape, expr, sm.ONE), data.shape)
    coefs = [c for _, c in terms]
    c = math.gcd(*coefs) if all(c > 0 for c in coefs) else 1
    if c > 1 and expr.vmin >= 0 and expr.vmax < c and numel.is_const:
        T = None
        for t, k in terms:
            part = Tensor(t) if k == c else Tensor(t) * (k // c)
            T = part if T is None else T + part
        rows = sm.sym(-(-numel.value // c))
    else:
        T, expr, c, rows = Tensor(index), sm.ZERO, 1, numel
    shape = tuple(index.shape) + (rows,)
    hit = T.unsqueeze(-1).broadcast_to(shape) == iota(shape, -1).cast(T.dtype)
    H = where(hit, Tensor(gn).unsqueeze(-1).broadcast_to(shape), full(shape, 0.0, gn.dtype))
    flat = _var(len(index.shape), rows) * c + expr
    out = unview(H.node, View(shape, flat, sm.ONE), (numel,))
    return g.apply_view(out, lambda v: v.reshape(data.shape)) if data.shape != (numel,) else out
