"""ember.nn's module mechanics: parameters in the graph, load_state_dict (errors, prefixes, dtypes),
init (torch's bounds, determinism), train/eval modes, copying and pickling, shape errors."""
import math

import numpy as np
import pytest

import ember as em
from ember import nn
from tests.conftest import assert_close
from tests.nn_checks import data_names, needs_torch, torch


# ------------------------------------------------------------------------------------------------
# parameters in the graph

def test_equal_parameters_stay_distinct_named_nodes():
    m = nn.Sequential(nn.Linear(4, 4, bias=False), nn.Linear(4, 4, bias=False))
    w = np.eye(4, dtype=np.float32)
    m.load_state_dict({"0.weight": w, "1.weight": w})
    y = m(em.input("x", (2, 4)))
    assert sorted(data_names(y)) == ["0.weight", "1.weight"]
    # a submodule called alone names its parameters relative to itself
    assert data_names(m[1](em.input("x", (2, 4)))) == ["weight"]
    # the graph keeps the values it was built with; assigning new values builds new nodes
    x = np.ones((2, 4), np.float32)
    m[0].weight = 2 * w
    assert np.array_equal(em.reference(y, x=x), x)
    assert np.array_equal(em.reference(m(em.input("x", (2, 4))), x=x), 2 * x)


def test_parameter_arrays_are_read_only_copies():
    a = np.ones((3, 2), np.float32)
    lin = nn.Linear(2, 3)
    lin.weight = a
    a[0, 0] = 5.0
    assert lin.state_dict()["weight"][0, 0] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        lin.state_dict()["weight"][0, 0] = 7.0
    with pytest.raises(TypeError, match="lazy Ember Tensor"):
        lin.weight = em.input("w", (3, 2))


# ------------------------------------------------------------------------------------------------
# load_state_dict

def test_load_state_dict_errors_name_the_keys():
    m = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    sd = {k: v.copy() for k, v in m.state_dict().items()}
    before = {k: v.copy() for k, v in sd.items()}

    bad = dict(sd)
    del bad["1.bias"]
    bad["2.weight"] = np.zeros(4, np.float32)
    bad["0.weight"] = np.zeros((4, 2), np.float32)
    bad["0.bias"] = np.full(4, 9.0, np.float32)
    with pytest.raises(nn.StateDictError) as e:
        m.load_state_dict(bad)
    msg = str(e.value)
    assert "missing key(s): ['1.bias']" in msg
    assert "unexpected key(s): ['2.weight']" in msg
    assert "0.weight: checkpoint has shape (4, 2), the module expects (4, 3)" in msg
    for k, v in m.state_dict().items():  # nothing was loaded
        assert np.array_equal(v, before[k]), k

    # strict=False: missing/unexpected are reported, not raised; shapes are still checked
    partial = {"0.bias": np.full(4, 9.0, np.float32), "extra": np.zeros(1)}
    res = m.load_state_dict(partial, strict=False)
    assert res.missing_keys == ["0.weight", "1.weight", "1.bias"] and res.unexpected_keys == ["extra"]
    assert np.all(m.state_dict()["0.bias"] == 9.0)
    with pytest.raises(nn.StateDictError, match="shape mismatch"):
        m.load_state_dict({"0.bias": np.zeros(5)}, strict=False)


def test_load_state_dict_prefix_hint_and_bad_values():
    m = nn.Sequential(nn.Linear(3, 4))
    sd = {"model." + k: v for k, v in m.state_dict().items()}
    with pytest.raises(nn.StateDictError, match=r"removing the prefix 'model\.'"):
        m.load_state_dict(sd)
    with pytest.raises(TypeError, match=r"state_dict\['0.weight'\]"):
        m.load_state_dict({"0.weight": "nonsense", "0.bias": np.zeros(4)})
    with pytest.raises(TypeError, match="mapping"):
        m.load_state_dict([np.zeros(3)])


@needs_torch
def test_load_state_dict_from_torch_casts_dtypes():
    th = torch.nn.Linear(3, 2).to(torch.bfloat16)
    m = nn.Linear(3, 2)
    m.load_state_dict(th.state_dict())  # bf16 torch tensors into float32 parameters
    assert m.state_dict()["weight"].dtype == np.float32
    assert np.array_equal(m.state_dict()["weight"], th.weight.float().detach().numpy())
    m.to(em.bfloat16)
    assert m.get_parameter("weight").dtype == em.bfloat16
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    out = em.reference(m(em.input("x", (4, 3), em.bfloat16)), x=x)
    assert out.dtype == em.bfloat16.np
    with torch.no_grad():
        ref = th(torch.from_numpy(x).to(torch.bfloat16)).float().numpy()
    assert_close(out.astype(np.float32), ref, "bfloat16")


# ------------------------------------------------------------------------------------------------
# init, modes, module mechanics

@needs_torch
@pytest.mark.parametrize("ctor", [
    lambda m: m.Linear(400, 300),
    lambda m: m.Conv2d(6, 8, 3, groups=2),
    lambda m: m.ConvTranspose2d(4, 6, (3, 5), groups=2),
    lambda m: m.Conv1d(5, 7, 4),
], ids=["Linear", "Conv2d", "ConvTranspose2d", "Conv1d"])
def test_init_follows_torch_bounds(ctor):
    em_mod, th_mod = ctor(nn), ctor(torch.nn)
    fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(th_mod.weight)
    bound = 1 / math.sqrt(fan_in)
    for name, p in em_mod.state_dict().items():
        assert p.shape == tuple(th_mod.state_dict()[name].shape)
        assert np.abs(p).max() <= bound, name
        if p.size >= 50:  # enough draws that U(-bound, bound) must come near its bound
            assert np.abs(p).max() > 0.8 * bound, name
    w = em_mod.state_dict()["weight"]
    if w.size > 1000:
        assert abs(w.std() - bound / math.sqrt(3)) < 0.03 * bound and abs(w.mean()) < 0.03 * bound


def test_init_is_deterministic():
    a, b, c = nn.Transformer(30, 16, 1, 2, seed=5), nn.Transformer(30, 16, 1, 2, seed=5), nn.Transformer(30, 16, 1, 2, seed=6)
    for k, v in a.state_dict().items():
        assert np.array_equal(v, b.state_dict()[k]), k
    assert not np.array_equal(a.state_dict()["lm_head.weight"], c.state_dict()["lm_head.weight"])
    nn.manual_seed(3)
    w1 = nn.Linear(4, 4).state_dict()["weight"]
    nn.manual_seed(3)
    assert np.array_equal(w1, nn.Linear(4, 4).state_dict()["weight"])
    e = nn.Embedding(200, 50, seed=0).state_dict()["weight"]
    assert abs(e.std() - 1) < 0.03 and abs(e.mean()) < 0.03  # N(0, 1), as torch


def test_train_eval_and_module_mechanics():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.1), nn.BatchNorm1d(2)))
    assert all(x.training for x in m.modules())
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert m[1][1].training
    assert [n for n, _ in m.named_buffers()] == ["1.1.running_mean", "1.1.running_var", "1.1.num_batches_tracked"]
    assert m.get_submodule("1.1") is m[1][1] and m.get_parameter("0.bias").shape == (2,)
    assert "BatchNorm1d(2, eps=1e-05" in repr(m)

    class NoInit(nn.Module):
        def __init__(self):
            self.lin = nn.Linear(2, 2)
    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        NoInit()

    class Custom(nn.Module):  # a user module written the torch way
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(np.full(3, 2.0, np.float32))
            self.register_buffer("shift", np.ones(3, np.float32))
            self.register_buffer("cache", np.zeros(3, np.float32), persistent=False)

        def forward(self, x):
            return x * self.scale + self.shift + self.cache
    c = Custom()
    assert list(c.state_dict()) == ["scale", "shift"]
    assert [n for n, _ in c.named_buffers()] == ["shift", "cache"]
    assert np.array_equal(em.reference(c(em.input("x", (3,))), x=np.ones(3, np.float32)), [3, 3, 3])
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        c.nope


def test_modules_copy_and_pickle_after_building_graphs():
    import copy
    import pickle
    m = nn.Transformer(20, 8, 1, 2, tie_embeddings=True, seed=0)
    m.train()
    tok = em.input("tok", (1, 3), em.int32)
    y = m(tok)  # parameters now cache graph nodes, which refuse to pickle
    for clone in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert clone.get_parameter("lm_head.weight") is clone.get_parameter("embed_tokens.weight")  # still tied
        t = np.array([[1, 5, 7]], np.int32)
        assert np.array_equal(em.reference(clone(tok), tok=t), em.reference(y, tok=t))


def test_shape_errors_are_clear():
    with pytest.raises(em.ShapeError, match="input features 5 do not match weight"):
        nn.Linear(4, 3)(em.input("x", (2, 5)))
    with pytest.raises(em.ShapeError, match="input has 4 channels, expected 3"):
        nn.Conv2d(3, 2, 3)(em.input("x", (1, 4, 5, 5)))
    with pytest.raises(em.ShapeError, match="rank 4"):
        nn.BatchNorm2d(3)(em.input("x", (2, 3)))
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(NotImplementedError, match="padding_mode"):
        nn.Conv2d(3, 4, 3, padding_mode="reflect")
    with pytest.raises(TypeError, match="integer indices"):
        nn.Embedding(5, 2)(em.input("i", (3,)))
