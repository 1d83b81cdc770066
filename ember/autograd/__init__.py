"""Reverse-mode autograd as a graph -> graph transform.

``grad(loss, params)`` walks the primitive graph from ``loss`` in reverse topological order and
appends, for every primitive, its vector-Jacobian product as ordinary graph nodes. The gradients live
in the same hash-consed graph as the forward pass, so forward, backward (and an optimizer update, see
optim.py) are compiled and searched together, and shared subexpressions unify.

The vector-Jacobian rule of each primitive is a column of its row in the primitives table
(ember/primitives: ``Primitive.vjp``); this module only drives them. The rules of VIEW and GATHER are
the big ones and live beside it: `unview` (unview.py, with index algebra in indexing.py and the
inversion of an affine index in invert.py) and the scatter-add of gather.py.

Only floating-point nodes carry gradients. A parameter that the loss does not depend on gets a zero
gradient (not an error). Gradients have their parameter's dtype (an f16 parameter gets an f16
gradient), as in PyTorch.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from types import SimpleNamespace

from .. import graph as g
from .. import primitives as P
from ..graph import Node
from ..tensor import Tensor, _as_tensor, full
from .shift import softmax_shifts
from .unview import unview

__all__ = ["GradError", "backward", "grad", "unview"]


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
    # (a softmax's max is a shift its result does not depend on: no gradient reaches it, see shift.py)
    shifts = softmax_shifts(order) - targets
    live: set = set()
    for n in order:
        if n.dtype.is_float and n not in shifts and (n in targets or any(s in live for s in n.srcs)):
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


@functools.cache
def _kit() -> SimpleNamespace:
    """What the table's rules build gradients with: the Tensor API and autograd's view and gather
    inverses (the table sits below both in the pipeline, so they are handed to it, not imported)."""
    from ..tensor import where
    from .gather import gather_vjp
    return SimpleNamespace(Tensor=Tensor, full=full, where=where, cast_node=g.cast_node, unview=unview,
                           gather_vjp=gather_vjp)


def _vjp(n: Node, gn: Node, live: set):
    """(source, gradient for that source) for each live source of n: the primitive's own rule."""
    rule = P.GRAPH[n.op].vjp
    if rule is not None:  # leaves, comparisons and the random primitive pass nothing back
        yield from rule(n, gn, live, _kit())
