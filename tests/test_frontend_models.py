"""The PyTorch frontend on whole models and at its boundary: small networks through em.from_torch and
torch.compile(backend="ember"), dtypes and structures at the call boundary, errors, the documented op
table, and the CUDA calling paths (skipped without a GPU)."""
from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")  # (the whole module needs PyTorch: skipped without it)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import ember as em  # noqa: E402
from ember.frontends.pytorch import TorchImportError, UnsupportedOpError  # noqa: E402
from tests.conftest import SEEDS  # noqa: E402
from tests.frontend_checks import IDX, R, Fn, _cmp, check, inputs  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


# ------------------------------------------------------------------------------------------------
# small networks

class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(1, 6, 5, padding=2), nn.Conv2d(6, 16, 5)
        self.f1, self.f2, self.f3 = nn.Linear(16 * 5 * 5, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = x.flatten(1)
        return self.f3(F.relu(self.f2(F.relu(self.f1(x)))))


class ResBlock(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(x + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))


class MobileBlock(nn.Module):
    def __init__(self, c=8, e=3):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(c, c * e, 1, bias=False), nn.BatchNorm2d(c * e), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(c * e, c * e, 3, padding=1, groups=c * e, bias=False), nn.BatchNorm2d(c * e), nn.ReLU6())
        self.project = nn.Sequential(nn.Conv2d(c * e, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return x + self.project(self.dw(self.expand(x)))


class Block(nn.Module):
    """Pre-norm transformer block: causal SDPA + GELU MLP."""

    def __init__(self, d=16, h=4):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        return x + self.mlp(self.ln2(x))


class GRULoop(nn.Module):
    def __init__(self, i=6, h=10, steps=4):
        super().__init__()
        self.cell, self.out, self.steps = nn.GRUCell(i, h), nn.Linear(h, 3), steps

    def forward(self, x, h):
        for t in range(self.steps):
            h = self.cell(x[:, t], h)
        return self.out(h)


NETWORKS = {
    "mlp": (lambda: nn.Sequential(nn.Linear(20, 33), nn.ReLU(), nn.Linear(33, 17), nn.Tanh(), nn.Linear(17, 5)), [R(7, 20)]),
    "lenet": (LeNet, [R(3, 1, 28, 28)]),
    "resblock_train": (ResBlock, [R(2, 8, 7, 6)]),
    "resblock_eval": (lambda: ResBlock().eval(), [R(2, 8, 7, 6)]),
    "mobile_block": (MobileBlock, [R(2, 8, 6, 5)]),
    "transformer_block": (Block, [R(2, 9, 16)]),
    "gru_loop": (GRULoop, [R(3, 4, 6), R(3, 10)]),
}


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_networks_from_torch(name):
    make, specs = NETWORKS[name]
    torch.manual_seed(0)
    check(make(), specs, what=name)


@pytest.mark.parametrize("name", ["mlp", "lenet", "resblock_train", "transformer_block", "gru_loop"])
def test_networks_torch_compile(name):
    make, specs = NETWORKS[name]
    torch.manual_seed(0)
    model = make()
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="ember", options={"device": "cpu"})
    for s in SEEDS[:2]:
        xs = inputs(specs, s)
        with torch.no_grad():
            _cmp(compiled(*xs), eager(*xs), f"torch.compile {name} seed {s}")
    for (n, b), (_, b2) in zip(model.named_buffers(), eager.named_buffers()):
        _cmp(b.float(), b2.float(), f"buffer {n}")


def test_torch_compile_new_batch_size_recompiles():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 5), nn.Softmax(-1))
    compiled = torch.compile(model, backend="ember", options={"device": "cpu"})
    for b in (3, 4, 6):
        x = torch.rand(b, 8)
        with torch.no_grad():
            _cmp(compiled(x), model(x), f"batch {b}")


# ------------------------------------------------------------------------------------------------
# the boundary: dtypes, structures, reference, errors

def test_int64_inputs_are_narrowed_and_outputs_restored():
    f = Fn(lambda m, i, x: (x[i].sum(-1), i * 2, x.argmax(-1)))
    fn = check(f, [IDX(6, 4), R(6, 3)])
    out = fn(torch.tensor([0, 5, 2, 1]), torch.rand(6, 3))
    assert out[1].dtype == torch.int64 and out[2].dtype == torch.int64
    big = torch.tensor([0, 2 ** 40, 1, 1])
    with pytest.raises(TorchImportError, match="int32"):
        fn(big, torch.rand(6, 3))


def test_dict_and_nested_outputs_and_kwargs():
    class M(nn.Module):
        def forward(self, x, y=None):
            return {"sum": x + y, "pair": (x.relu(), [y * 2])}
    x, y = torch.rand(3, 4), torch.rand(3, 4)
    fn = em.from_torch(M(), (x,), device="cpu", example_kwargs={"y": y})
    out = fn(x, y=y)
    _cmp(out["sum"], x + y, "sum")
    _cmp(out["pair"][1][0], y * 2, "pair")


def test_identity_and_constant_outputs():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("c", torch.arange(4.0))

        def forward(self, x):
            return x, self.c * 1, x.shape[0]
    x = torch.rand(3, 4)
    fn = em.from_torch(M(), (x,), device="cpu")
    a, c, n = fn(x)
    _cmp(a, x, "identity")
    _cmp(c, torch.arange(4.0), "constant")
    assert n == 3


def test_reference_matches_compiled():
    torch.manual_seed(0)
    m = LeNet()
    x = torch.rand(2, 1, 28, 28)
    fn = em.from_torch(m, (x,), device="cpu")
    _cmp(fn(x), fn.reference(x), "compiled vs reference")


def test_shape_and_dtype_mismatch_errors():
    fn = em.from_torch(nn.Linear(4, 2), (torch.rand(3, 4),), device="cpu")
    with pytest.raises(TorchImportError, match=r"shape \(5, 4\).*\(3, 4\)"):
        fn(torch.rand(5, 4))
    with pytest.raises(TorchImportError, match="dtype torch.float64"):
        fn(torch.rand(3, 4, dtype=torch.float64))


def test_scalar_inputs_are_baked_in():
    fn = em.from_torch(Fn(lambda m, x, s: x * s), (torch.rand(2, 3), 2.5), device="cpu")
    x = torch.rand(2, 3)
    _cmp(fn(x, 2.5), x * 2.5, "scalar")
    with pytest.raises(TorchImportError, match="baked in"):
        fn(x, 3.0)


class _Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        return torch.linalg.qr(self.lin(x))[0]


def test_unsupported_op_error_names_op_node_and_source():
    with pytest.raises(UnsupportedOpError) as e:
        em.from_torch(_Unsupported(), (torch.rand(6, 6),), device="cpu")
    msg = str(e.value)
    assert "aten.linalg_qr" in msg and "node" in msg
    assert "test_frontend_models.py" in msg and "torch.linalg.qr" in msg


def test_unsupported_inside_submodule_names_module():
    class Inner(nn.Module):
        def forward(self, x):
            return torch.sort(x, -1).values
    model = nn.Sequential(nn.Linear(4, 4), Inner())
    with pytest.raises(UnsupportedOpError, match=r"aten\.sort.*module 1 \(Inner\)"):
        em.from_torch(model, (torch.rand(2, 4),), device="cpu")


def test_eval_dropout_is_identity_and_undrawable_random_ops_are_clear_errors():
    with pytest.raises(UnsupportedOpError, match=r"aten\.bernoulli\.default.*random numbers"):
        em.from_torch(lambda x: torch.bernoulli(x), (torch.rand(2, 4),), device="cpu")
    check(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.3)).eval(), [R(2, 4)])
    check(nn.Sequential(nn.Linear(4, 4), nn.AlphaDropout(0.3)).eval(), [R(2, 4)])
    check(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.0)).train(), [R(2, 4)], train=True)  # p=0: the identity
    check(nn.Sequential(nn.Linear(4, 4), nn.RReLU()).eval(), [R(2, 4)])  # eval RReLU: a fixed slope


def test_data_dependent_shapes_are_refused_with_a_reason():
    with pytest.raises(UnsupportedOpError, match="masked_select.*depends on the data"):
        em.from_torch(Fn(lambda m, x: x.masked_select(x > 0.5)), (torch.rand(7),), device="cpu")


def test_max_pool_indices_are_a_clear_error():
    with pytest.raises(UnsupportedOpError, match="indices"):
        em.from_torch(Fn(lambda m, x: F.max_pool2d(x, 2, return_indices=True)), (torch.rand(1, 1, 4, 4),), device="cpu")


def test_export_failure_is_a_clear_error():
    class DataDependent(nn.Module):
        def forward(self, x):
            return x[x > 0]
    with pytest.raises((TorchImportError, UnsupportedOpError)):
        em.from_torch(DataDependent(), (torch.rand(5),), device="cpu")


def test_supported_ops_table_is_documented():
    """docs/torch_frontend.md lists every converter and every refused op by its ATen key."""
    import os
    import re
    from ember.frontends.pytorch import refused_ops, supported_ops
    doc = open(os.path.join(os.path.dirname(__file__), "..", "docs", "torch_frontend.md")).read()
    listed = set(re.findall(r"`([A-Za-z_0-9]+\.[A-Za-z_0-9]+)`", doc))
    missing = (set(supported_ops()) | set(refused_ops())) - listed
    assert not missing, f"not in docs/torch_frontend.md: {sorted(missing)}"


# ------------------------------------------------------------------------------------------------
# CUDA (skipped without a GPU): torch CUDA tensors in, CUDA tensors out, buffers written back

@pytest.mark.cuda
def test_cuda_from_torch_zero_copy_and_training_batchnorm():
    torch.manual_seed(0)
    model = ResBlock().cuda()
    eager = copy.deepcopy(model)
    fn = em.from_torch(model, (torch.randn(2, 8, 7, 6, device="cuda"),), device="cuda")
    for s in SEEDS:
        x = torch.randn(2, 8, 7, 6, device="cuda")
        with torch.no_grad():
            out, ref = fn(x), eager(x)
        assert out.is_cuda and out.dtype == torch.float32
        _cmp(out.cpu(), ref.cpu(), f"cuda resblock seed {s}")
    for (n, b), (_, b2) in zip(model.named_buffers(), eager.named_buffers()):
        assert b.is_cuda
        _cmp(b.float().cpu(), b2.float().cpu(), f"buffer {n}")


@pytest.mark.cuda
def test_cuda_int64_indices_and_torch_compile():
    torch.manual_seed(0)
    emb = nn.Embedding(50, 16).cuda()
    f = Fn(lambda m, i, x: (m.emb(i).sum(1) + x, (m.emb(i) * x[:, None]).argmax(-1)), emb=emb)
    i, x = torch.randint(0, 50, (4, 7), device="cuda"), torch.randn(4, 16, device="cuda")
    fn = em.from_torch(f, (i, x), device="cuda")
    with torch.no_grad():
        out, ref = fn(i, x), f(i, x)
    assert out[1].dtype == torch.int64 and out[1].is_cuda
    _cmp([o.cpu() for o in out], [r.cpu() for r in ref], "cuda embedding")
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32)).cuda()
    compiled = torch.compile(model, backend="ember")
    with torch.no_grad():
        _cmp(compiled(x).cpu(), model(x).cpu(), "cuda torch.compile")


@pytest.mark.cuda
@pytest.mark.parametrize("case", ["one_kernel", "several_kernels", "same_output_twice"])
def test_cuda_fast_call_path_matches_torch_and_falls_back(case):
    """The per-call fast path (positional CUDA tensors straight to the launch; one-kernel programs
    launched directly, not as a graph) gives torch's results on fresh inputs, with results kept alive
    (new output pointers each call), and leaves anything unusual to the general path: wrong shapes
    still raise, non-contiguous inputs and inputs that require grad still work."""
    torch.manual_seed(0)
    fns = {"one_kernel": lambda m, x, w: torch.relu(x * w) + 1.0,
           "several_kernels": lambda m, x, w: torch.softmax(x @ w.T, -1).sum(0),
           "same_output_twice": lambda m, x, w: (torch.tanh(x - w), torch.tanh(x - w), x.sum(1))}
    f = Fn(fns[case])
    shape = (37, 70)
    x0, w0 = torch.randn(*shape, device="cuda"), torch.randn(*shape, device="cuda")
    fn = em.from_torch(f, (x0, w0), device="cuda")
    kept = []
    with torch.no_grad():
        for s in SEEDS:
            g = torch.Generator(device="cuda").manual_seed(s)
            x, w = (torch.randn(*shape, device="cuda", generator=g) for _ in range(2))
            out = fn(x, w)
            kept.append((out, f(x, w)))
        assert fn._fast is not None, "this import should take the fast path"
        for i, (out, ref) in enumerate(kept):
            _cmp([o.cpu() for o in out] if isinstance(out, tuple) else out.cpu(),
                 [r.cpu() for r in ref] if isinstance(ref, tuple) else ref.cpu(), f"{case} call {i}")
        xt = torch.randn(shape[1], shape[0], device="cuda").T  # non-contiguous: general path
        out, ref = fn(xt, w0), f(xt, w0)
        _cmp([o.cpu() for o in out] if isinstance(out, tuple) else out.cpu(),
             [r.cpu() for r in ref] if isinstance(ref, tuple) else ref.cpu(), f"{case} non-contiguous")
        with pytest.raises(TorchImportError, match="shape"):
            fn(torch.randn(5, 70, device="cuda"), w0)
    xg = x0.clone().requires_grad_(True)
    out = fn(xg, w0)  # general path (it warns once per process that outputs carry no grad)
    with torch.no_grad():
        ref = f(x0, w0)
    _cmp([o.cpu() for o in out] if isinstance(out, tuple) else out.cpu(),
         [r.cpu() for r in ref] if isinstance(ref, tuple) else ref.cpu(), f"{case} requires_grad")


@pytest.mark.cuda
def test_cuda_outputs_like_an_input_or_not_from_fresh_threads():
    """Outputs of an input's shape and dtype are allocated with torch.empty_like, others with
    torch.empty: both must give torch's results, also from threads that never touched CUDA before."""
    import threading
    f = Fn(lambda m, x, w: (torch.sigmoid(x) * w, (x * w).sum(1)))
    x0, w0 = torch.randn(33, 65, device="cuda"), torch.randn(33, 65, device="cuda")
    fn = em.from_torch(f, (x0, w0), device="cuda")
    results = {}

    def work(seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        x, w = (torch.randn(33, 65, device="cuda", generator=g) for _ in range(2))
        with torch.no_grad():
            results[seed] = (fn(x, w), f(x, w))
        torch.cuda.synchronize()

    threads = [threading.Thread(target=work, args=(s,)) for s in SEEDS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted(SEEDS)
    for s, (out, ref) in results.items():
        assert out[0].is_contiguous() and out[0].shape == ref[0].shape
        _cmp([o.cpu() for o in out], [r.cpu() for r in ref], f"thread seed {s}")


class _StatefulRNNCell(nn.Module):
    """KernelBench's VanillaRNN pattern: the hidden state a plain tensor attribute (no buffer),
    reassigned in forward; with `h0` the state restarts from it."""

    def __init__(self):
        super().__init__()
        self.hidden = torch.randn(3, 6)
        self.i2h, self.h2o = nn.Linear(5 + 6, 6), nn.Linear(6, 4)

    def forward(self, x, h0=None):
        if h0 is not None:
            self.hidden.copy_(h0)
        self.hidden = torch.tanh(self.i2h(torch.cat((x, self.hidden), dim=1)))
        return self.h2o(self.hidden)


@pytest.mark.parametrize("with_h0", [True, False])
def test_a_tensor_attribute_reassigned_in_forward_is_state(with_h0):
    """torch.export refuses a plain tensor attribute mutated in forward; the importer registers
    it as a buffer and retries, so the state carries from call to call as in eager."""
    torch.manual_seed(0)
    model = _StatefulRNNCell()
    eager = copy.deepcopy(model)
    args = lambda: (torch.randn(3, 5),) + ((torch.randn(3, 6),) if with_h0 else ())
    xs = args()
    fn = em.from_torch(model, xs, device="cpu")
    for step in range(3):
        xs = args()
        with torch.no_grad():
            _cmp(fn(*xs), eager(*xs), f"step {step}")


def test_a_tensor_attribute_only_read_stays_a_constant():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.rand(4)

        def forward(self, x):
            return x * self.scale

    model = Scaled()
    x = torch.randn(2, 4)
    fn = em.from_torch(model, (x,), device="cpu")
    assert "scale" not in dict(model.named_buffers()) and isinstance(vars(model)["scale"], torch.Tensor)
    _cmp(fn(x), model(x), "scaled")
