"""ATen ops that draw random numbers (torch.rand/randn/randint and their *_like forms, bernoulli with a
fixed probability, dropout in training mode), drawn at call time from torch's own generator.

Ember does not reimplement torch's generators: each such op becomes an extra input of the compiled
graph, filled on every call by replaying the same torch op with its recorded arguments (`RandomDraw`).
The wrapper draws them in graph order, which is the order eager PyTorch draws them, so with the same
``torch.manual_seed`` the compiled model sees exactly eager's numbers.

A tensor argument of a random op is replaced by a stand-in of the same shape, strides, dtype and
device: the ops here read only its metadata (rand_like, bernoulli.p), or, for dropout, are replayed on
ones so that the draw yields the scaled mask itself (``dropout(ones) = mask / (1 - p)``) and the graph
computes ``x * noise``. Because the mask is 0 or 1, ``x * (mask * scale)`` equals eager's
``(x * mask) * scale`` and ``x * (mask / (1 - p))`` exactly.

Eager ``nn.Dropout``/``F.dropout`` run ``aten.dropout`` (bernoulli on the CPU, the fused kernel on
CUDA) while torch.export records ``native_dropout`` for them: the replay calls the function the model
called (``node.meta["torch_fn"]``), not the traced op.
"""
from __future__ import annotations

from .registry import UnsupportedOpError

_TORCH_FN_NATIVE = "native_dropout"


class RandomDraw:
    """One random tensor drawn at call time: `op(*args, **kwargs)` with every tensor argument a fresh
    stand-in (see the module docstring); `index` picks an element of a tuple result."""

    def __init__(self, op, args: tuple, kwargs: dict, index: int | None = None):
        self.op, self.args, self.kwargs, self.index = op, args, kwargs, index

    def __call__(self):
        args = tuple(a.make() if isinstance(a, StandIn) else a for a in self.args)
        out = self.op(*args, **self.kwargs)
        return out if self.index is None else out[self.index]

    def __repr__(self) -> str:
        return f"RandomDraw({self.op})"


class StandIn:
    """A tensor with the metadata torch recorded for an FX node, filled with ones."""

    def __init__(self, val):
        self.shape, self.stride = tuple(int(s) for s in val.shape), tuple(int(s) for s in val.stride())
        self.dtype, self.device = val.dtype, val.device

    def make(self):
        import torch
        return torch.empty_strided(self.shape, self.stride, dtype=self.dtype, device=self.device).fill_(1)


def _stand_ins(node, args):
    """The op's arguments with every FX node replaced by a StandIn (nested lists are not expected)."""
    import torch.fx as fx
    out = []
    for a in args:
        if isinstance(a, fx.Node):
            val = a.meta.get("val")
            if val is None or not hasattr(val, "stride"):
                raise UnsupportedOpError(f"random op argument {a.name!r} has no recorded tensor metadata")
            out.append(StandIn(val))
        else:
            out.append(a)
    return tuple(out)


def _draw_as_is(node):
    """rand/randn/randint and the *_like forms, bernoulli.p: the op's result is the random tensor.
    (Their .generator overloads, with an explicit torch.Generator, are refused by the importer.)"""
    return RandomDraw(node.target, _stand_ins(node, node.args), dict(node.kwargs)), "draw"


def _dropout(node):
    """dropout(x, p, train) and native_dropout(x, p, train): the scaled mask drawn by replaying the
    function the model called on ones; the graph multiplies. None (no draw) when eager draws nothing:
    eval mode, p == 0 or an empty tensor (the converter's identity then applies)."""
    import torch
    x, p, train = node.args[0], float(node.args[1]), node.args[2]
    if not train or p == 0 or x.meta["val"].numel() == 0:
        return None
    op, index = node.target, None
    if node.target is torch.ops.aten.native_dropout.default:
        # the function the model called: torch.native_dropout itself, or F.dropout / nn.Dropout, which
        # run aten.dropout eagerly (torch.export records native_dropout for both)
        if str((node.meta.get("torch_fn") or ("", ""))[1]).endswith(_TORCH_FN_NATIVE):
            index = 0
        else:
            op = torch.ops.aten.dropout.default
    draw = RandomDraw(op, (StandIn(x.meta["val"]), p, True), {}, index=index)
    return draw, "scale_and_mask" if node.target is torch.ops.aten.native_dropout.default else "scale"


# packet.overload -> handler(node) -> (RandomDraw, form) or None (nothing drawn). form, how the op's
# value follows from the drawn input `noise` (see `combine`): "draw" (the value is the draw), "scale"
# (x * noise), "scale_and_mask" (native_dropout's pair: x * noise and the keep mask).
RANDOM_OPS = {
    "rand.default": _draw_as_is, "randn.default": _draw_as_is,
    "rand_like.default": _draw_as_is, "randn_like.default": _draw_as_is,
    "randint.default": _draw_as_is, "randint.low": _draw_as_is,
    "randint_like.default": _draw_as_is, "randint_like.low_dtype": _draw_as_is,
    "bernoulli.p": _draw_as_is,
    "dropout.default": _dropout, "feature_dropout.default": _dropout, "native_dropout.default": _dropout,
}


def combine(form: str, x, noise):
    """The graph value of a random op from its input `x` and the drawn `noise` input."""
    if form == "draw":
        return noise
    y = x * noise
    return (y, noise != 0) if form == "scale_and_mask" else y
