"""ember.nn against torch.nn: every module is given torch's weights (load_state_dict of the torch
module's state_dict) and run on the same random inputs; the Ember graph is evaluated by the numpy
reference. Also: state_dict keys and errors, parameter naming in the graph, init, symbolic shapes."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember as em
from tests.conftest import SEEDS, assert_close
from ember import graph as g
from ember import nn

torch.set_num_threads(1)


# ------------------------------------------------------------------------------------------------
# helpers

def randomize(module: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Non-default values everywhere (norm weights of 1 and biases of 0 would hide mix-ups)."""
    gen = torch.Generator().manual_seed(1000 + seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
        for name, b in module.named_buffers():
            if name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=gen) + 0.5)
            elif name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=gen))
    return module


def _torch_in(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a.astype(np.int64) if a.dtype.kind in "iu" else a)


def compare(em_mod, th_mod, *arrays, shapes=None, what="", **kw):
    """Load torch's state into the Ember module, check the keys agree, run both, compare."""
    res = em_mod.load_state_dict(th_mod.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert list(em_mod.state_dict()) == list(th_mod.state_dict()), what
    names = [f"x{i}" for i in range(len(arrays))]
    ins = [em.input(n, shapes[i] if shapes else a.shape, em.int32 if a.dtype.kind in "iu" else em.float32)
           for i, (n, a) in enumerate(zip(names, arrays))]
    out = em.reference(em_mod(*ins, **kw), **dict(zip(names, arrays)))
    with torch.no_grad():
        ref = th_mod(*[_torch_in(a) for a in arrays], **kw)
    assert_close(out, ref.numpy(), what=what)
    return out


def pair(name: str, *args, **kwargs):
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


def data_names(y) -> list:
    return [n.arg.name for n in g.toposort([y.node]) if n.op == g.DATA]


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
# attention, decoder block and transformer against a PyTorch reference written out here

def torch_rope(t: int, hd: int, base: float):
    inv = 1.0 / (base ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.outer(torch.arange(t, dtype=torch.float64), inv)
    emb = torch.cat([ang, ang], -1)
    return emb.cos().float(), emb.sin().float()


def rotate_half(x):
    d = x.shape[-1]
    return torch.cat([-x[..., d // 2:], x[..., : d // 2]], -1)


class TorchAttention(torch.nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads=None, head_dim=None, causal=False, rope=False, rope_base=10000.0,
                 bias=False):
        super().__init__()
        self.h, self.hkv = n_heads, n_kv_heads or n_heads
        self.hd = head_dim or dim // n_heads
        self.causal, self.rope, self.base = causal, rope, rope_base
        self.q_proj = torch.nn.Linear(dim, self.h * self.hd, bias=bias)
        self.k_proj = torch.nn.Linear(dim, self.hkv * self.hd, bias=bias)
        self.v_proj = torch.nn.Linear(dim, self.hkv * self.hd, bias=bias)
        self.o_proj = torch.nn.Linear(self.h * self.hd, dim, bias=bias)

    def forward(self, x, attn_mask=None, context=None):
        b, t, _ = x.shape
        src = x if context is None else context
        s = src.shape[1]
        q = self.q_proj(x).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(src).view(b, s, self.hkv, self.hd).transpose(1, 2)
        v = self.v_proj(src).view(b, s, self.hkv, self.hd).transpose(1, 2)
        if self.rope:
            cos, sin = torch_rope(t, self.hd, self.base)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.h // self.hkv, dim=1)
        v = v.repeat_interleave(self.h // self.hkv, dim=1)
        o = TF.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=self.causal)
        return self.o_proj(o.transpose(1, 2).reshape(b, t, self.h * self.hd))


class TorchRMSNorm(torch.nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps, self.weight = eps, torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class TorchSwiGLU(torch.nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = torch.nn.Linear(dim, hidden, bias=False)  # w1
        self.up_proj = torch.nn.Linear(dim, hidden, bias=False)    # w3
        self.down_proj = torch.nn.Linear(hidden, dim, bias=False)  # w2

    def forward(self, x):
        return self.down_proj(TF.silu(self.gate_proj(x)) * self.up_proj(x))


class TorchBlock(torch.nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, hidden, eps=1e-5, base=10000.0):
        super().__init__()
        self.input_layernorm = TorchRMSNorm(dim, eps)
        self.self_attn = TorchAttention(dim, n_heads, n_kv_heads, causal=True, rope=True, rope_base=base)
        self.post_attention_layernorm = TorchRMSNorm(dim, eps)
        self.mlp = TorchSwiGLU(dim, hidden)

    def forward(self, x):
        h = x + self.self_attn(self.input_layernorm(x))
        return h + self.mlp(self.post_attention_layernorm(h))


class TorchTransformer(torch.nn.Module):
    def __init__(self, vocab, dim, n_layers, n_heads, n_kv_heads, hidden, tie=False):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, dim)
        self.layers = torch.nn.ModuleList(TorchBlock(dim, n_heads, n_kv_heads, hidden) for _ in range(n_layers))
        self.norm = TorchRMSNorm(dim, 1e-5)
        self.lm_head = torch.nn.Linear(dim, vocab, bias=False)
        if tie:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, tokens):
        h = self.embed_tokens(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(self.norm(h))


ATTN_CASES = [
    dict(dim=24, n_heads=4, n_kv_heads=2, causal=True, rope=True),           # GQA + RoPE + causal
    dict(dim=20, n_heads=5, causal=False, rope=False, bias=True),             # plain MHA with biases
    dict(dim=16, n_heads=4, n_kv_heads=1, causal=True, rope=True, rope_base=500.0),  # MQA
    dict(dim=12, n_heads=3, n_kv_heads=3, head_dim=6, causal=False, rope=True),  # head_dim != dim/heads
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("cfg", ATTN_CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_attention_matches_torch(cfg, seed):
    em_mod, th_mod = nn.Attention(**cfg), randomize(TorchAttention(**cfg), seed)
    x = np.random.default_rng(seed).standard_normal((2, 7, cfg["dim"])).astype(np.float32)
    compare(em_mod, th_mod, x)


def test_attention_mask_and_cross_attention_match_torch():
    em_mod, th_mod = nn.Attention(12, 4, 2), randomize(TorchAttention(12, 4, 2), 0)
    em_mod.load_state_dict(th_mod.state_dict())
    rng = np.random.default_rng(0)
    x, ctx = rng.standard_normal((2, 5, 12)).astype(np.float32), rng.standard_normal((2, 3, 12)).astype(np.float32)
    mask = rng.random((5, 3)) < 0.6
    mask[:, 0] = True  # every query attends somewhere (an all-masked row is NaN in both)
    out = em.reference(em_mod(em.input("x", x.shape), attn_mask=em.tensor(mask.copy()), context=em.input("c", ctx.shape)),
                       x=x, c=ctx)
    with torch.no_grad():
        ref = th_mod(torch.from_numpy(x), attn_mask=torch.from_numpy(mask), context=torch.from_numpy(ctx))
    assert_close(out, ref.numpy())


@pytest.mark.parametrize("seed", SEEDS)
def test_decoder_block_symbolic_batch_and_sequence(seed):
    em_mod = nn.DecoderBlock(64, n_heads=8, n_kv_heads=2, hidden_dim=96)
    th_mod = randomize(TorchBlock(64, 8, 2, 96), seed)
    em_mod.load_state_dict(th_mod.state_dict())
    y = em_mod(em.input("x", ("B", "T", 64)))  # one graph, run at two sizes
    assert tuple(str(d) for d in y.shape) == ("B", "T", "64")
    rng = np.random.default_rng(seed)
    for b, t in [(2, 7), (3, 4)]:
        x = rng.standard_normal((b, t, 64)).astype(np.float32)
        with torch.no_grad():
            ref = th_mod(torch.from_numpy(x))
        assert_close(em.reference(y, x=x), ref.numpy(), what=f"B={b} T={t}")


@pytest.mark.parametrize("tie", [False, True])
def test_transformer_matches_torch_at_two_sizes(tie):
    em_mod = nn.Transformer(50, 32, n_layers=2, n_heads=4, n_kv_heads=2, hidden_dim=48, tie_embeddings=tie, seed=0)
    th_mod = randomize(TorchTransformer(50, 32, 2, 4, 2, 48, tie=tie), 0)
    assert list(em_mod.state_dict()) == list(th_mod.state_dict())
    assert em_mod.num_parameters() == sum(p.numel() for p in th_mod.parameters())
    assert [n for n, _ in em_mod.named_modules()] == [n for n, _ in th_mod.named_modules()]
    em_mod.load_state_dict(th_mod.state_dict())
    y = em_mod(em.input("tokens", ("B", "T"), em.int32))
    names = data_names(y)
    assert len(names) == len(set(names)), "each parameter is exactly one DATA node"
    expected = {n for n, _ in em_mod.named_parameters()}
    assert set(names) == expected
    if tie:
        assert "lm_head.weight" not in names  # tied: one node, named by its first key
    rng = np.random.default_rng(1)
    for b, t in [(2, 9), (1, 4)]:
        tok = rng.integers(0, 50, (b, t)).astype(np.int32)
        with torch.no_grad():
            ref = th_mod(torch.from_numpy(tok.astype(np.int64)))
        assert_close(em.reference(y, tokens=tok), ref.numpy(), what=f"B={b} T={t} tie={tie}")


def test_llama_hidden_dim_and_validation():
    assert nn.llama_hidden_dim(4096, 256) == 11008  # Llama-2 7B
    with pytest.raises(ValueError, match="multiple of n_kv_heads"):
        nn.Attention(24, 4, 3)
    with pytest.raises(ValueError, match="even head_dim"):
        nn.Attention(15, 5, rope=True)
    with pytest.raises(em.ShapeError, match=r"\(B, T, 24\)"):
        nn.Attention(24, 4)(em.input("x", (2, 3, 25)))


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
