"""Optimizers as graph transforms, against torch.optim step for step.

The Ember step (forward, autograd, update) is built once as a graph; each step runs it on the numpy
reference and feeds the new parameters and optimizer state back in, with the learning rate following a
schedule through a runtime input. PyTorch runs the same model with torch.optim in float32. After 10
steps the parameters must agree to 1e-5 relative.
"""
from __future__ import annotations

import numpy as np
import pytest

try:  # PyTorch is the oracle of the step-for-step checks; the rest runs without it
    import torch
except ImportError:  # pragma: no cover
    torch = None

import ember as em
from ember import graph as g
from ember import optim
from ember.train import make_train_step

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch (the oracle)")

SHAPES = {"w1": (5, 6), "b1": (6,), "w2": (6, 3), "b2": (3,)}


def _init(seed=0):
    rng = np.random.default_rng(seed)
    params = {k: (rng.standard_normal(s) * 0.5).astype(np.float32) for k, s in SHAPES.items()}
    x = rng.standard_normal((7, 5)).astype(np.float32)
    y = rng.standard_normal((7, 3)).astype(np.float32)
    return params, x, y


def _em_model(p, x):
    return (x @ p["w1"] + p["b1"]).tanh() @ p["w2"] + p["b2"]


def _torch_model(p, x):
    return torch.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def _schedule(k: int, base: float) -> float:
    return base * (0.5 + 0.5 * np.cos(np.pi * k / 12))  # changes every step


def _rel_close(got, want, what):
    want = np.asarray(want, np.float64)
    err = np.max(np.abs(np.asarray(got, np.float64) - want))
    assert err <= 1e-5 * max(np.max(np.abs(want)), 1e-3), f"{what}: max err {err:.3g} vs max|ref| {np.max(np.abs(want)):.3g}"


CONFIGS = [
    ("sgd", lambda: optim.SGD(), lambda ps: torch.optim.SGD(ps, lr=0.1), 0.1),
    ("sgd_momentum", lambda: optim.SGD(momentum=0.9), lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9), 0.05),
    ("sgd_nesterov_wd", lambda: optim.SGD(momentum=0.9, nesterov=True, weight_decay=0.01),
     lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01), 0.05),
    ("sgd_dampening_wd", lambda: optim.SGD(momentum=0.8, dampening=0.3, weight_decay=0.1),
     lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.1), 0.05),
    ("adamw", lambda: optim.AdamW(), lambda ps: torch.optim.AdamW(ps, lr=1e-2), 1e-2),
    ("adamw_amsgrad_betas", lambda: optim.AdamW(betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1, amsgrad=True),
     lambda ps: torch.optim.AdamW(ps, lr=3e-3, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1, amsgrad=True), 3e-3),
    ("adam", lambda: optim.Adam(), lambda ps: torch.optim.Adam(ps, lr=1e-2), 1e-2),
    ("adam_l2", lambda: optim.Adam(weight_decay=0.05), lambda ps: torch.optim.Adam(ps, lr=1e-2, weight_decay=0.05), 1e-2),
]


@needs_torch
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name,make_em,make_torch,base_lr", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_optimizer_matches_torch(name, make_em, make_torch, base_lr, seed):
    params, x, y = _init(seed)
    opt = make_em()
    # the graph, built once: params, state, data, lr and step are all inputs
    p_t = {k: em.input(k, a.shape, em.float32) for k, a in params.items()}
    xs, ys = em.input("x", x.shape, em.float32), em.input("y_true", y.shape, em.float32)
    loss = em.mse_loss(_em_model(p_t, xs), ys)
    grads = dict(zip(p_t, em.grad(loss, list(p_t.values()))))
    s_t = opt.state_inputs(p_t)
    lr, step = em.input("lr", (), em.float32), em.input("step", (), em.float32)
    new_p, new_s = opt.update(p_t, grads, s_t, lr, step)
    outputs = {**{f"p_{k}": v for k, v in new_p.items()}, **{f"s_{k}": v for k, v in new_s.items()}}

    cur_p = dict(params)
    cur_s = opt.init_state(params)
    tp = {k: torch.nn.Parameter(torch.tensor(a)) for k, a in params.items()}
    topt = make_torch(list(tp.values()))
    for k in range(1, 11):
        lr_k = _schedule(k, base_lr)
        feed = {**cur_p, **{optim.input_name(key): a for key, a in cur_s.items()}, "x": x, "y_true": y,
                "lr": np.float32(lr_k), "step": np.float32(k)}
        read = {n.arg for n in g.inputs_of([t.node for t in outputs.values()])}  # plain SGD ignores "step"
        outs = em.reference(outputs, **{key: a for key, a in feed.items() if key in read})
        cur_p = {key: outs[f"p_{key}"] for key in params}
        cur_s = {key: outs[f"s_{key}"] for key in cur_s}
        for group in topt.param_groups:
            group["lr"] = lr_k
        topt.zero_grad()
        torch.nn.functional.mse_loss(_torch_model(tp, torch.tensor(x)), torch.tensor(y)).backward()
        topt.step()
    for key in params:
        assert cur_p[key].dtype == np.float32
        _rel_close(cur_p[key], tp[key].detach().numpy(), f"{name}: {key} after 10 steps")
    # the optimizer state too (the same quantities torch keeps)
    for key, arr in cur_s.items():
        pname, slot = key.split(".", 1)
        _rel_close(arr, topt.state[tp[pname]][slot].numpy(), f"{name}: state {key}")


def test_lr_and_step_are_inputs_not_constants():
    p = {"w": em.input("w", (3,), em.float32)}
    gr = {"w": em.input("g", (3,), em.float32)}
    opt = optim.AdamW()
    new_p, new_s = opt.update(p, gr, opt.state_inputs(p), em.input("lr", ()), em.input("step", ()))
    nodes = g.toposort([t.node for t in list(new_p.values()) + list(new_s.values())])
    names = {n.arg for n in nodes if n.op == g.INPUT}
    assert {"lr", "step", "w", "g", "w_exp_avg", "w_exp_avg_sq"} <= names
    assert not any(n.op == g.DATA for n in nodes)


def test_half_precision_params_keep_dtypes():
    p16 = np.array([0.5, -1.0, 2.0], np.float16)
    p = {"w": em.input("w", (3,), em.float16)}
    gr = {"w": em.input("g", (3,), em.float16)}
    opt = optim.AdamW(weight_decay=0.0)
    s = opt.state_inputs(p)
    new_p, new_s = opt.update(p, gr, s, 0.1, 1)
    assert new_p["w"].dtype == em.float16 and all(t.dtype == em.float16 for t in new_s.values())
    grads = np.array([0.1, -0.2, 0.3], np.float16)
    out = em.reference(new_p["w"], w=p16, g=grads, w_exp_avg=np.zeros(3, np.float16), w_exp_avg_sq=np.zeros(3, np.float16))
    assert out.dtype == np.float16
    # the first Adam step moves every weight by lr against the gradient's sign
    np.testing.assert_allclose(out.astype(np.float32), p16.astype(np.float32) - 0.1 * np.sign(grads), atol=2e-3)


def test_optimizer_errors():
    p = {"w": em.input("w", (3,), em.float32)}
    opt = optim.SGD(momentum=0.9)
    with pytest.raises(KeyError, match="no gradient"):
        opt.update(p, {}, opt.state_inputs(p), 0.1, 1)
    with pytest.raises(KeyError, match="state"):
        opt.update(p, {"w": p["w"]}, {}, 0.1, 1)
    with pytest.raises(ValueError, match="shape"):
        opt.update(p, {"w": em.input("g", (4,))}, opt.state_inputs(p), 0.1, 1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(nesterov=True)


# ------------------------------------------------------------------------------------------------
# the whole step as one graph (ember/train.py)

@needs_torch
def test_make_train_step_matches_torch_and_learns():
    params, _, _ = _init(3)
    rng = np.random.default_rng(7)
    batches = [(rng.standard_normal((7, 5)).astype(np.float32), rng.integers(0, 3, 7).astype(np.int32))
               for _ in range(12)]

    def model(p, b):
        return _em_model(p, b["x"])

    def loss_fn(logits, b):
        return em.cross_entropy(logits, b["label"])

    step = make_train_step(model, loss_fn, params, optim.AdamW(weight_decay=0.05),
                           batch={"x": ((7, 5), em.float32), "label": ((7,), em.int32)})
    assert set(step.feedback) == set(step.outputs) - {"loss"}
    feed = step.initial_feed(params)
    tp = {k: torch.nn.Parameter(torch.tensor(a)) for k, a in params.items()}
    topt = torch.optim.AdamW(list(tp.values()), lr=1e-2, weight_decay=0.05)
    losses = []
    for k, (xb, lb) in enumerate(batches, start=1):
        lr_k = _schedule(k, 5e-2)
        loss, feed = step.run_reference(feed, {"x": xb, "label": lb}, lr=lr_k, step=k)
        for group in topt.param_groups:
            group["lr"] = lr_k
        topt.zero_grad()
        tl = torch.nn.functional.cross_entropy(_torch_model(tp, torch.tensor(xb)), torch.tensor(lb, dtype=torch.long))
        tl.backward()
        topt.step()
        _rel_close(loss, tl.item(), f"loss at step {k}")
        losses.append(float(loss))
    final = step.params_from_feed(feed)
    for key in params:
        _rel_close(final[key], tp[key].detach().numpy(), f"{key} after {len(batches)} steps")


def test_train_step_fits_a_fixed_batch():
    params, x, y = _init(4)
    step = make_train_step(lambda p, b: _em_model(p, b["x"]), lambda out, b: em.mse_loss(out, b["y_true"]), params,
                           optim.SGD(momentum=0.9), batch={"x": (x.shape, em.float32), "y_true": (y.shape, em.float32)})
    feed = step.initial_feed(params)
    losses = []
    for k in range(1, 41):
        loss, feed = step.run_reference(feed, {"x": x, "y_true": y}, lr=0.05, step=k)
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0], losses


def test_train_step_name_collisions():
    params = {"x": np.zeros((2,), np.float32)}
    with pytest.raises(ValueError, match="used twice"):
        make_train_step(lambda p, b: (p["x"] * b["x"]).sum(), None, params, optim.SGD(),
                        batch={"x": ((2,), em.float32)})
