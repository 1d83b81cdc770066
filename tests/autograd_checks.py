"""Shared machinery of the autograd tests (tests/test_autograd*.py): reference evaluation, the
central-difference check, and the gradient check against PyTorch autograd with its case records.
``torch`` and ``F`` are None without PyTorch; tests that need them carry ``needs_torch``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import ember as em
from ember import graph as g
from ember import symbolic as sm
from tests.conftest import assert_close

try:  # PyTorch is the oracle of the (b) checks, never a dependency of Ember itself
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover
    torch = F = None
else:
    torch.set_num_threads(1)

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch (the oracle)")


def _needed(tensors, arrays: dict) -> dict:
    nodes = [t.node for t in tensors]
    names = {n.arg for n in g.inputs_of(nodes)}
    return {k: v for k, v in arrays.items() if k in names}


def run(tensors, arrays: dict):
    """Reference-evaluate a list of tensors, passing only the inputs the graph reads."""
    tensors = list(tensors)
    return em.reference(tensors, **_needed(tensors, arrays))


def em_dtype(arr: np.ndarray):
    return em.dtypes.as_dtype(arr.dtype)


def numeric_check(fn: Callable, arrays: dict, wrt=None, eps: float = 1e-6, tol: float = 1e-6, seed: int = 0):
    """Analytic gradients of sum(fn(...) * W) from em.grad vs central differences, all on the
    float64 reference."""
    wrt = wrt or [k for k, a in arrays.items() if a.dtype.kind == "f"]
    ins = {k: em.input(k, a.shape, em_dtype(a)) for k, a in arrays.items()}
    out = fn(**ins)
    w = np.random.default_rng(seed + 100).standard_normal(out.shape)
    # (a 0-d weight as a Python float: em.tensor of a 0-d array gives a (1,)-shaped DATA buffer)
    loss = (out.cast(em.float64) * (em.tensor(w, em.float64) if out.ndim else float(w))).sum()
    grads = em.grad(loss, [ins[k] for k in wrt])
    analytic = run(grads, arrays)
    for k, ga in zip(wrt, analytic):
        base = arrays[k]
        num = np.zeros(base.shape)
        for idx in np.ndindex(base.shape):
            vals = []
            for sgn in (1, -1):
                a = base.copy()
                a[idx] += sgn * eps
                vals.append(float(run([loss], {**arrays, k: a})[0]))
            num[idx] = (vals[0] - vals[1]) / (2 * eps)
        assert ga.dtype == base.dtype, f"grad of {k} has dtype {ga.dtype}, param {base.dtype}"
        err = np.max(np.abs(ga - num)) if num.size else 0.0
        assert err <= tol + tol * np.max(np.abs(num), initial=0), f"d/d{k}: max err {err:.3g}\n{ga}\nvs numeric\n{num}"


def rand_array(shape, seed=0, kind="normal"):
    rng = np.random.default_rng(seed)
    if kind == "positive":
        return rng.uniform(0.5, 2.0, shape)
    if kind == "nonzero":
        return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape)
    return rng.standard_normal(shape)


# Forward-op bugs (ember/ops, owned elsewhere) that stop a case before any gradient is taken: name ->
# an xfail mark narrowed to the exception the bug raises, so any other failure still fails. (Empty:
# the concat bug that broke roll and concat_stack was fixed on main, in e35278f.)
OP_BUGS: dict = {}


# ------------------------------------------------------------------------------------------------
# (b) high-level ops against PyTorch autograd: the case records and the check

@dataclass
class Spec:
    shape: tuple
    dtype: str = "float32"
    kind: str = "normal"  # normal | positive | nonzero | unit | prob | index:N


@dataclass
class OpCase:
    name: str
    inputs: dict
    ember: Callable
    torch: Callable
    grad: bool = True
    tol_dtype: str = field(default="float32")
    positional: bool = True  # torch callables here take the inputs positionally (F.mse_loss(a, b))


def make_inputs(case: OpCase, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for name, sp in case.inputs.items():
        kind = sp.kind
        if kind.startswith("index:"):
            out[name] = rng.integers(0, int(kind.split(":")[1]), sp.shape).astype(np.int32)
            continue
        if kind == "positive":
            a = rng.uniform(0.5, 2.0, sp.shape)
        elif kind == "nonzero":
            a = rng.choice([-1.0, 1.0], sp.shape) * rng.uniform(0.3, 2.0, sp.shape)
        elif kind == "unit":
            a = rng.uniform(-0.9, 0.9, sp.shape)
        elif kind == "prob":
            a = rng.uniform(0.05, 0.95, sp.shape)
        else:
            a = rng.standard_normal(sp.shape)
        out[name] = a.astype(em.dtypes.as_dtype(sp.dtype).np)
    return out


def _torch_tensor(a: np.ndarray):
    if a.dtype.kind == "f" or str(a.dtype) == "bfloat16":
        return torch.tensor(a.astype(np.float64), requires_grad=True)
    if a.dtype.kind == "b":
        return torch.tensor(a)
    return torch.tensor(a.astype(np.int64))


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


# What torch keeps outside autograd, so the check must not ask for it: batch norm's running statistics
# as inputs ("native_batch_norm is not differentiable with respect to argument 'running_mean'") and, in
# training, as outputs (torch updates the buffers in place under no_grad). Those outputs' forward values
# and the gradients with respect to every other input are still checked.
_NO_TORCH_GRAD = {  # case name -> (inputs, output positions)
    "batch_norm_inference": (("rm", "rv"), ()),
    "batch_norm_training_running_stats": (("rm", "rv"), (1, 2)),
}


def _rounded(ref: np.ndarray, dtype) -> np.ndarray:
    """The float64 oracle with overflow as in the dtype of Ember's result: an f32 result whose exact
    value rounds past the f32 range is inf (torch in float32 overflows the same way), not a finite
    number. Values in range are kept in float64 (rounding them would only add error)."""
    ref = np.asarray(ref, dtype=np.float64)
    with np.errstate(over="ignore"):
        r = ref.astype(dtype).astype(np.float64)
    return np.where(np.isinf(r) & np.isfinite(ref), r, ref)


def _compiled_on(device: str):
    """run() with the tensors compiled for `device` instead of the reference."""
    def f(tensors, arrays):
        tensors = list(tensors)
        fn = em.compile(tuple(tensors), device=device)
        return [np.asarray(o) for o in fn(**_needed(tensors, arrays))]
    return f


def check_grads_vs_torch(case, seed: int, make=None, device: str | None = None):
    """d(Σ out·W)/d(input) for every float input: Ember (the reference, or compiled for `device`)
    vs torch (float64)."""
    run_ = _compiled_on(device) if device else run
    arrays = (make or make_inputs)(case, seed)
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    ins = {k: em.input(k, a.shape, em_dtype(a)) for k, a in arrays.items()}
    outs = [o for o in as_list(case.ember(**ins)) if o.dtype.is_float]
    rng = np.random.default_rng(1000 + seed)
    ws = [rng.standard_normal(o.shape) for o in outs]
    frozen, frozen_outs = _NO_TORCH_GRAD.get(case.name, ((), ()))
    loss = None
    for k, (o, w) in enumerate(zip(outs, ws)):
        if k in frozen_outs:
            continue
        wt = em.tensor(w.astype(np.float32)) if o.ndim else float(np.float32(w))
        term = (o.cast(em.float32) * wt).sum()
        loss = term if loss is None else loss + term
    fnames = [k for k, a in arrays.items() if (a.dtype.kind == "f" or str(a.dtype) == "bfloat16") and k not in frozen]
    grads = em.grad(loss, [ins[k] for k in fnames])
    got = run_(grads, arrays)

    tt = {k: _torch_tensor(a) for k, a in arrays.items()}
    for k in frozen:
        tt[k] = tt[k].detach()
    tol = getattr(case, "tol_dtype", None) or next(
        (str(a.dtype) for a in arrays.values() if str(a.dtype) in ("float16", "bfloat16")), "float32")
    tout = case.torch(*tt.values()) if getattr(case, "positional", False) else case.torch(**tt)
    touts = [o for o in as_list(tout) if o.is_floating_point()]
    assert len(touts) == len(outs), f"{case.name}: {len(outs)} float outputs vs torch {len(touts)}"
    # forward first, so an op bug is reported as one (not as a gradient bug)
    fwd = run_(outs, arrays)
    for k, (f, t) in enumerate(zip(fwd, touts)):
        assert_close(f, _rounded(t.detach().double().numpy(), f.dtype), tol, f"{case.name} forward output {k}")
    tloss = sum((o.double() * torch.tensor(w.astype(np.float32).astype(np.float64))).sum()
                for k, (o, w) in enumerate(zip(touts, ws)) if k not in frozen_outs)
    tgrads = torch.autograd.grad(tloss, [tt[k] for k in fnames], allow_unused=True)
    for k, gv, tg in zip(fnames, got, tgrads):
        want = np.zeros(arrays[k].shape) if tg is None else _rounded(tg.numpy(), arrays[k].dtype)
        assert gv.dtype == arrays[k].dtype, f"{case.name}: grad of {k} is {gv.dtype}, input {arrays[k].dtype}"
        assert_close(gv, want, tol, f"{case.name}: d/d{k}")




def rot_half_torch(x, cos, sin):
    d = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., d:], x[..., :d]], -1) * sin


def rot_interleaved_torch(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    rot = torch.stack([-x2, x1], -1).reshape(x.shape)
    return x * cos + rot * sin


def tensor_sizes(tensors, env):
    """The element count of every node of the graphs of `tensors`, named dimensions bound by `env`."""
    return [int(sm.evaluate(n.numel, env)) for n in g.toposort([t.node for t in tensors])]
