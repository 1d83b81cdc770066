"""TF32 on request (ember/precision.py): marks on contractions, their place in the structural hash and
in saved graphs, the lowering's accumulator flag, one MMA pass in the CUDA source, the frontend's
`precision` option, and the verification tolerance. Numerics on the GPU: test_cuda.py."""
import numpy as np
import pytest

import ember as em
from ember import graph as g
from ember.codegen import cuda as cg
from ember.kernel.lower import lower
from ember.search.oracle import Oracle, close, tolerance
from ember.kernel import ir
from tests.conftest import assert_close


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _sums(t):
    return [n for n in g.toposort([t.node]) if n.op == g.SUM]


def _conv_and_matmul():
    x, w = em.input("x", (2, 5, 11, 9)), em.input("w", (7, 5, 3, 3))
    m = em.input("m", (99, 13))
    y = em.conv2d(x, w, padding=1)
    z = y.reshape(2, 7, 99) @ m
    return y, z


@pytest.mark.parametrize("kinds,conv,matmul", [((), True, True), (("conv",), True, False),
                                              (("matmul",), False, True)])
def test_allow_tf32_marks_only_the_asked_kinds(kinds, conv, matmul):
    with em.allow_tf32(*kinds):
        y, z = _conv_and_matmul()
    conv_sum = _sums(y)
    mm_sum = [n for n in _sums(z) if n not in conv_sum]
    assert [g.is_tf32(n) for n in conv_sum] == [conv]
    assert [g.is_tf32(n) for n in mm_sum] == [matmul]


def test_no_marks_outside_the_block_and_marks_change_the_key():
    y0, z0 = _conv_and_matmul()
    assert not any(g.is_tf32(n) for n in _sums(z0))
    with em.allow_tf32():
        y1, z1 = _conv_and_matmul()
    assert y0.node is not y1.node and y0.node.key != y1.node.key
    assert y1.node.srcs[0].arg == y0.node.srcs[0].arg  # same axes, read as a tuple everywhere
    y2, _ = _conv_and_matmul()
    assert y2.node is y0.node  # interning keeps the unmarked graph apart from the marked one


def test_plain_sums_and_other_dtypes_are_never_marked():
    with em.allow_tf32():
        x = em.input("x", (4, 6))
        assert not any(g.is_tf32(n) for n in _sums(x.sum(1)))
        h = em.input("h", (4, 6), "float16")
        assert not any(g.is_tf32(n) for n in _sums(h @ em.input("k", (6, 3), "float16")))


def test_unknown_kind_is_an_error():
    with pytest.raises(ValueError, match="unknown kind 'attention'"):
        with em.allow_tf32("attention"):
            pass


def test_marks_survive_save_and_load(tmp_path):
    with em.allow_tf32("conv"):
        y, _ = _conv_and_matmul()
    path = tmp_path / "g.json"
    g.save(path, {"y": y.node})
    back = g.load(path)["y"]
    assert back is y.node


def test_lowering_flags_the_accumulator_and_cuda_renders_one_pass():
    x, w = em.input("x", (2, 32, 17, 17)), em.input("w", (64, 32, 3, 3))
    srcs = []
    for tf32 in (False, True):
        if tf32:
            with em.allow_tf32("conv"):
                y = em.conv2d(x, w)
        else:
            y = em.conv2d(x, w)
        (k, _), = lower([y.node]).kernels
        assert ("(tf32 products)" in ir.print_kernel(k)) == tf32
        cfg = cg.default_config(k)
        assert cfg["mode"] == "mma"
        body = cg.render_kernel(k, cfg)[0]
        srcs.append(body.count("em_mma_tf32("))
        assert ("em_tf32(" in body) == tf32  # operands rounded once, into shared memory
        try:
            from ember.backends.cuda import compile_cuda
        except ImportError:
            continue
        assert compile_cuda(cg.PRELUDE + "\n" + body, "sm_90a")
    assert srcs[0] == 3 * srcs[1] and srcs[1] >= 1  # 3xTF32 for float32 accuracy, one pass on request


def test_cpu_results_stay_exact_under_tf32_marks():
    """The mark permits TF32; the CPU backend computes in float32 regardless."""
    with em.allow_tf32():
        y, z = _conv_and_matmul()
    fn = em.compile([y, z], device="cpu")
    ins = {"x": rnd(2, 5, 11, 9), "w": rnd(7, 5, 3, 3, seed=1), "m": rnd(99, 13, seed=2)}
    for out, ref in zip(fn(**ins), em.reference([y, z], **ins)):
        assert_close(out, ref)


def test_oracle_uses_the_tf32_tolerance_only_where_marked():
    ref = np.full((8,), 2.0, np.float32)
    off = ref + np.float32(5e-3)  # within TF32's bound (1e-2 + 1e-2*2), not float32's
    assert close(off, ref, em.float32) is not None
    assert close(off, ref, em.float32, tf32=True) is None
    assert tolerance(em.float16, tf32=True) == 1e-2
    with em.allow_tf32():
        _, z = _conv_and_matmul()
    y_plain, _ = _conv_and_matmul()
    assert Oracle([z.node, y_plain.node], seeds=(0,)).tf32 == [True, False]


torch = pytest.importorskip("torch")


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_from_torch_precision_follows_torch_flags():
    from ember.frontends import pytorch as fe

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.lin = torch.nn.Linear(4 * 6 * 6, 5)

        def forward(self, x):
            return self.lin(self.conv(x).flatten(1))

    def marks(precision):
        fn = em.from_torch(M().eval(), (torch.randn(2, 3, 8, 8),), device="cpu", precision=precision)
        out = fn.graph.outputs[0]
        sums = [n for n in g.toposort([out.node]) if n.op == g.SUM and len(n.srcs[0].shape) > 4]
        lin = [n for n in g.toposort([out.node]) if n.op == g.SUM and n not in sums]
        return [g.is_tf32(n) for n in sums], [g.is_tf32(n) for n in lin]

    assert marks("float32") == ([False], [False])
    assert marks("tf32") == ([True], [True])
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = True, False
        assert marks("torch") == ([True], [False])
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = False, True
        assert marks("torch") == ([False], [True])
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
    with pytest.raises(ValueError, match="precision must be one of"):
        fe.tf32_kinds("bf16")


def test_egraph_round_trip_keeps_marks_apart():
    """A plain and a TF32-marked sum over the same axes in one e-graph region decode as they came
    in: the axes table must not conflate the two (equal as tuples)."""
    pytest.importorskip("egglog")
    from ember.search.egraph import Region
    a, b = em.input("a", (6, 40)), em.input("b", (40, 5))
    plain = a @ b
    with em.allow_tf32("matmul"):
        marked = a @ b
    for outs in ([plain.node, marked.node], [marked.node, plain.node]):
        region = Region(outs, rules=[])
        for cand in region.candidates(2):
            assert [any(g.is_tf32(n) for n in g.toposort([o])) for o in cand] == \
                   [any(g.is_tf32(n) for n in g.toposort([o])) for o in outs]
