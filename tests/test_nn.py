"""ember.nn against torch.nn: every module is given torch's weights (load_state_dict of the torch
module's state_dict) and run on the same random inputs; the Ember graph is evaluated by the numpy
reference. Here: layers one by one, batch norm, dropout, containers, symbolic batch sizes. Attention
and transformers: tests/test_nn_transformer.py; state dicts, parameters, init and module mechanics:
tests/test_nn_mechanics.py."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember as em  # noqa: E402
from ember import nn  # noqa: E402
from tests.conftest import SEEDS, assert_close  # noqa: E402
from tests.nn_checks import compare, pair, randomize  # noqa: E402


# ------------------------------------------------------------------------------------------------
# layers, one by one, against torch.nn

LAYERS = [
    ("Linear", (7, 5), {}, [(3, 7)]),
    ("Linear", (13, 1), {"bias": False}, [(2, 3, 13)]),
    ("Conv1d", (3, 5, 3), dict(stride=2, padding=1), [(2, 3, 11)]),
    ("Conv1d", (4, 4, 2), dict(groups=4, dilation=2, bias=False), [(4, 9)]),  # unbatched
    ("Conv1d", (2, 3, 4), dict(padding="same", dilation=2), [(2, 2, 7)]),  # asymmetric 'same' padding
    ("Conv2d", (4, 6, (3, 2)), dict(stride=(2, 1), padding=1, dilation=(1, 2), groups=2), [(2, 4, 9, 7)]),
    ("Conv2d", (3, 5, 3), dict(padding="same"), [(1, 3, 6, 5)]),
    ("Conv3d", (2, 3, (2, 3, 1)), dict(stride=(1, 2, 1)), [(1, 2, 4, 5, 3)]),
    ("ConvTranspose1d", (3, 4, 3), dict(stride=2, padding=1, output_padding=1), [(2, 3, 5)]),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2), [(2, 4, 5, 3)]),
    ("ConvTranspose2d", (3, 2, (2, 3)), dict(stride=(1, 2), dilation=2, bias=False), [(1, 3, 4, 4)]),
    ("LayerNorm", (7,), {}, [(3, 5, 7)]),
    ("LayerNorm", ((3, 7),), dict(eps=1e-3, bias=False), [(2, 3, 7)]),
    ("LayerNorm", (5,), dict(elementwise_affine=False), [(4, 5)]),
    ("RMSNorm", (7,), {}, [(3, 5, 7)]),
    ("RMSNorm", ((2, 5),), dict(eps=1e-6), [(3, 2, 5)]),
    ("GroupNorm", (3, 6), {}, [(2, 6, 5, 3)]),
    ("GroupNorm", (1, 4), dict(affine=False, eps=1e-3), [(3, 4, 7)]),
    ("MaxPool1d", (3,), dict(stride=2, padding=1), [(2, 3, 10)]),
    ("MaxPool2d", (3,), dict(stride=2, padding=1), [(2, 3, 9, 8)]),
    ("MaxPool2d", ((2, 3),), dict(stride=(2, 1), dilation=(2, 1), ceil_mode=True), [(1, 2, 7, 5)]),
    ("AvgPool1d", (2,), dict(ceil_mode=True), [(2, 3, 7)]),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, count_include_pad=False), [(2, 3, 7, 6)]),
    ("AvgPool2d", (2,), dict(ceil_mode=True), [(1, 2, 5, 7)]),
    ("AdaptiveAvgPool2d", ((3, 2),), {}, [(2, 3, 5, 7)]),
    ("AdaptiveAvgPool2d", (1,), {}, [(2, 3, 4, 6)]),
    ("Flatten", (), {}, [(2, 3, 4, 5)]),
    ("Flatten", (0, 1), {}, [(2, 3, 4)]),
    ("Unflatten", (1, (2, 3)), {}, [(4, 6, 5)]),
]

ACTIVATIONS = [
    ("ReLU", (), {}), ("ReLU6", (), {}), ("GELU", (), {}), ("GELU", (), dict(approximate="tanh")), ("SiLU", (), {}),
    ("Tanh", (), {}), ("Sigmoid", (), {}), ("LeakyReLU", (0.2,), {}), ("Hardswish", (), {}), ("Hardsigmoid", (), {}),
    ("ELU", (0.7,), {}), ("SELU", (), {}), ("Softplus", (), dict(beta=2.0, threshold=5.0)), ("Mish", (), {}),
    ("Softsign", (), {}), ("Hardtanh", (-0.5, 2.0), {}), ("Softmax", (1,), {}), ("LogSoftmax", (-1,), {}),
    ("Identity", (), {}),
]


def _id(case):
    return f"{case[0]}{case[1]}{case[2] if case[2] else ''}".replace(" ", "")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", LAYERS, ids=_id)
def test_layer_matches_torch(case, seed):
    name, args, kwargs, shapes = case
    em_mod, th_mod = pair(name, *args, **kwargs)
    randomize(th_mod, seed)
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(s).astype(np.float32) * 2 for s in shapes]
    compare(em_mod, th_mod, *xs, what=f"{name}{args}")


@pytest.mark.parametrize("case", ACTIVATIONS, ids=_id)
def test_activation_matches_torch(case):
    name, args, kwargs = case
    em_mod, th_mod = pair(name, *args, **kwargs)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 7, 5)) * 4).astype(np.float32)
    compare(em_mod, th_mod, x, what=name)


@pytest.mark.parametrize("seed", SEEDS)
def test_embedding_matches_torch(seed):
    em_mod, th_mod = pair("Embedding", 11, 5, padding_idx=2)
    randomize(th_mod, seed)
    idx = np.random.default_rng(seed).integers(0, 11, (3, 4)).astype(np.int32)
    idx[0, 0] = 2
    compare(em_mod, th_mod, idx)
    fresh = nn.Embedding(11, 5, padding_idx=-1, seed=seed)
    assert np.all(fresh.state_dict()["weight"][10] == 0) and np.any(fresh.state_dict()["weight"][9] != 0)


# ------------------------------------------------------------------------------------------------
# batch norm: eval (running stats), train (batch stats + the running-stat update)

BN_CASES = [("BatchNorm1d", (6, 5)), ("BatchNorm1d", (4, 5, 3)), ("BatchNorm2d", (3, 5, 4, 2))]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name,shape", BN_CASES)
def test_batchnorm_eval_matches_torch(name, shape, seed):
    em_mod, th_mod = pair(name, 5)
    randomize(th_mod, seed)
    em_mod.eval(), th_mod.eval()
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 3 + 1
    compare(em_mod, th_mod, x)
    assert em_mod.buffer_updates() == {}


@pytest.mark.parametrize("momentum", [0.3, None])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name,shape", BN_CASES)
def test_batchnorm_train_step_matches_torch(name, shape, seed, momentum):
    em_mod, th_mod = pair(name, 5, momentum=momentum)
    randomize(th_mod, seed)
    with torch.no_grad():
        th_mod.num_batches_tracked.fill_(3)
    em_mod.load_state_dict(th_mod.state_dict())
    em_mod.train(), th_mod.train()
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 3 + 1
    y = em_mod(em.input("x", shape))
    updates = em_mod.buffer_updates()
    assert list(updates) == ["running_mean", "running_var", "num_batches_tracked"]
    out = em.reference({"y": y, **updates}, x=x)
    with torch.no_grad():
        ref = th_mod(torch.from_numpy(x))  # updates torch's running stats in place
    assert_close(out["y"], ref.numpy(), what="train-mode output")
    em_mod.load_state_dict({k: out[k] for k in updates}, strict=False)
    for k, v in th_mod.state_dict().items():
        assert_close(em_mod.state_dict()[k], v.numpy(), what=k)


def test_batchnorm_without_running_stats_uses_batch_stats():
    em_mod, th_mod = pair("BatchNorm2d", 3, affine=False, track_running_stats=False)
    em_mod.eval(), th_mod.eval()
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    compare(em_mod, th_mod, x)
    assert em_mod.state_dict() == {}


# ------------------------------------------------------------------------------------------------
# dropout

def test_dropout_eval_is_identity_and_train_draws_from_the_step():
    d = nn.Dropout(0.3, seed=5)
    x = em.input("x", (4, 5))
    assert d.eval()(x) is x
    y = d.train()(x)  # the mask: philox(seed, step * 2^32 + flat index), step a graph input
    assert sorted(n.arg for n in em.graph.inputs_of([y.node])) == ["step", "x"]
    xs = np.ones((4, 5), np.float32)
    want = em.dropout(x, 0.3, seed=5, offset=3 << 32)
    np.testing.assert_array_equal(em.reference(y, x=xs, step=np.array(3, np.float32)), em.reference(want, x=xs))
    assert nn.Dropout(0.0)(x) is x
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        nn.Dropout(1.5)


@pytest.mark.parametrize("p", [0.25, 1.0])
def test_dropout_train_with_noise_matches_torch_formula(p):
    rng = np.random.default_rng(0)
    x, u = rng.standard_normal((4, 7)).astype(np.float32), rng.random((4, 7)).astype(np.float32)
    out = em.reference(nn.Dropout(p)(em.input("x", (4, 7)), noise=em.input("u", (4, 7))), x=x, u=u)
    keep = torch.from_numpy(u) >= p
    ref = torch.where(keep, torch.from_numpy(x) / max(1 - p, 1e-30), 0.0)  # torch's rule: scale kept by 1/(1-p)
    assert_close(out, ref.numpy())


# ------------------------------------------------------------------------------------------------
# containers and composites

@pytest.mark.parametrize("seed", SEEDS)
def test_sequential_cnn_matches_torch(seed):
    def build(m):
        return m.Sequential(m.Conv2d(3, 8, 3, padding=1), m.BatchNorm2d(8), m.ReLU(), m.MaxPool2d(2),
                            m.Conv2d(8, 4, 3, stride=2), m.GELU(), m.AdaptiveAvgPool2d((2, 2)), m.Flatten(),
                            m.Dropout(0.5), m.Linear(16, 10))
    em_mod, th_mod = build(nn).eval(), randomize(build(torch.nn), seed).eval()
    x = np.random.default_rng(seed).standard_normal((2, 3, 11, 9)).astype(np.float32)
    compare(em_mod, th_mod, x)
    assert not em_mod[8].training and len(em_mod) == 10 and isinstance(em_mod[-1], nn.Linear)
    assert isinstance(em_mod[1:3], nn.Sequential) and len(em_mod[1:3]) == 2


@pytest.mark.parametrize("seed", SEEDS)
def test_mlp_matches_torch_sequential(seed):
    em_mod = nn.MLP([7, 16, 9, 3], activation="gelu", seed=seed)
    th_mod = torch.nn.Sequential(torch.nn.Linear(7, 16), torch.nn.GELU(), torch.nn.Linear(16, 9), torch.nn.GELU(),
                                 torch.nn.Linear(9, 3))
    randomize(th_mod, seed)
    x = np.random.default_rng(seed).standard_normal((5, 7)).astype(np.float32)
    compare(em_mod, th_mod, x)
    m2 = nn.MLP([4, 3, 2], activation=nn.Tanh, final_activation=True, bias=False)
    assert [type(m).__name__ for m in m2] == ["Linear", "Tanh", "Linear", "Tanh"]
    with pytest.raises(ValueError, match="unknown activation"):
        nn.MLP([2, 2, 2], activation="bogus")


def test_module_list():
    ml = nn.ModuleList([nn.Linear(2, 3), nn.ReLU()])
    ml.append(nn.Linear(3, 1))
    assert len(ml) == 3 and isinstance(ml[-1], nn.Linear) and list(ml.state_dict()) == [
        "0.weight", "0.bias", "2.weight", "2.bias"]
    with pytest.raises(IndexError, match="out of range"):
        ml[3]
    with pytest.raises(TypeError, match="not an ember.nn.Module"):
        ml.append(torch.nn.ReLU())


# ------------------------------------------------------------------------------------------------
# symbolic dims through simple layers

def test_linear_and_layernorm_symbolic_batch():
    em_mod = nn.Sequential(nn.Linear(64, 10), nn.LayerNorm(10), nn.SiLU())
    th_mod = randomize(torch.nn.Sequential(torch.nn.Linear(64, 10), torch.nn.LayerNorm(10), torch.nn.SiLU()), 0)
    em_mod.load_state_dict(th_mod.state_dict())
    y = em_mod(em.input("x", ("B", "T", 64)))
    for shape in [(1, 1, 64), (3, 5, 64)]:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        with torch.no_grad():
            assert_close(em.reference(y, x=x), th_mod(torch.from_numpy(x)).numpy(), what=str(shape))


def test_cnn_symbolic_batch_eval_and_train_step():
    def build(m):
        return m.Sequential(m.Conv2d(3, 4, 3, padding=1), m.BatchNorm2d(4), m.ReLU(), m.AvgPool2d(2), m.Flatten(),
                            m.Linear(64, 5))
    em_mod, th_mod = build(nn), randomize(build(torch.nn), 0)
    em_mod.load_state_dict(th_mod.state_dict())
    rng = np.random.default_rng(0)
    for train in (False, True):
        em_mod.train(train), th_mod.train(train)
        y = em_mod(em.input("x", ("B", 3, 8, 8)))
        updates = em_mod.buffer_updates()
        assert list(updates) == (["1.running_mean", "1.running_var", "1.num_batches_tracked"] if train else [])
        for b in (1 if not train else 2, 5):
            x = rng.standard_normal((b, 3, 8, 8)).astype(np.float32)
            out = em.reference({"y": y, **updates}, x=x)
            before = {k: v.clone() for k, v in th_mod.state_dict().items()}
            with torch.no_grad():
                assert_close(out["y"], th_mod(torch.from_numpy(x)).numpy(), what=f"train={train} B={b}")
            for k in updates:
                assert_close(out[k], th_mod.state_dict()[k].numpy(), what=k)
            th_mod.load_state_dict(before)  # both sizes start from the same running statistics
