"""The public Tensor API contract: building a lazy graph, evaluating it with em.reference, symbolic
dimensions bound from the inputs at call time, and clear errors (naming the problem) for bad input."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import ember as em
from tests.conftest import SEEDS, assert_close

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------------------------------------
# the contract from the package docstring

@pytest.mark.parametrize("batch", [4, 1, 7])
def test_contract_symbolic_batch(batch):
    w_np = _rand((8, 5), seed=1)
    x = em.input("x", ("B", 8), em.float32)
    w = em.tensor(w_np)
    y = (x @ w).relu().sum(axis=1)
    assert y.shape[0] == x.shape[0] and not isinstance(y.shape[0], int)  # still symbolic: "B"
    xs = np.random.default_rng(batch).random((batch, 8)).astype(np.float32)
    out = em.reference(y, x=xs)
    assert out.shape == (batch,) and out.dtype == np.float32
    assert_close(out, np.maximum(xs.astype(np.float64) @ w_np, 0).sum(axis=1), "float32", "contract")


def test_one_graph_many_batch_sizes():
    """The same graph is evaluated at several batch sizes; each output follows its own input."""
    x = em.input("x", ("B", 3))
    y = x.softmax(-1) * x.mean(0, keepdim=True)
    outs = {}
    for b in (1, 2, 5):
        xs = _rand((b, 3), seed=b)
        outs[b] = em.reference(y, x=xs)
        ref = torch.from_numpy(xs).double()
        assert_close(outs[b], (ref.softmax(-1) * ref.mean(0, keepdim=True)).numpy(), "float32", f"B={b}")
    assert {b: o.shape for b, o in outs.items()} == {1: (1, 3), 2: (2, 3), 5: (5, 3)}


def test_nothing_runs_until_evaluated():
    x = em.input("x", (3,))
    y = (x + 1).log()
    assert isinstance(y, em.Tensor) and y.shape == (3,) and y.dtype == em.float32
    with pytest.raises(TypeError, match="no truth value"):
        bool(y > 0)
    # log of a negative number is NaN when evaluated, never an error at build time
    assert np.isnan(em.reference(y, x=np.array([-5.0, 0.0, 1.0], np.float32))[0])


def test_multiple_outputs_list_tuple_dict():
    x = em.input("x", (2, 3))
    a = x * 2
    b = x.sum(1)
    xs = _rand((2, 3))
    lst = em.reference([a, b], x=xs)
    tup = em.reference((a, b), x=xs)
    dct = em.reference({"a": a, "b": b}, x=xs)
    assert isinstance(tup, tuple) and len(lst) == 2 and set(dct) == {"a", "b"}
    for got in (lst, tup, (dct["a"], dct["b"])):
        assert_close(got[0], xs.astype(np.float64) * 2)
        assert_close(got[1], xs.astype(np.float64).sum(1))


def test_output_dtypes_are_the_graph_dtypes():
    x = em.input("x", (4,))
    outs = em.reference([x.half(), x.bfloat16(), x.int(), x > 0, x.cast(em.float64)], x=_rand((4,)) * 10)
    assert [o.dtype for o in outs] == [np.float16, ml_dtypes.bfloat16, np.int32, np.bool_, np.float64]


def test_inputs_accept_torch_tensors_and_lists():
    x = em.input("x", (2, 3))
    y = x * 3 - 1
    xs = _rand((2, 3))
    ref = xs.astype(np.float64) * 3 - 1
    assert_close(em.reference(y, x=torch.from_numpy(xs)), ref)
    assert_close(em.reference(y, x=xs.tolist()), ref)
    xb = em.input("xb", (2, 3), em.bfloat16)
    tb = torch.from_numpy(xs).to(torch.bfloat16)
    assert_close(em.reference(xb * 2, xb=tb), (tb.double() * 2).numpy(), "bfloat16")


def test_constants_from_numpy_and_torch():
    a64 = np.arange(6, dtype=np.float64).reshape(2, 3) / 7
    assert em.tensor(a64).dtype == em.float32  # like torch.tensor: Python floats become the default float
    assert em.tensor(np.arange(3, dtype=np.int64)).dtype == em.int64
    assert em.tensor(torch.ones(2, dtype=torch.bfloat16)).dtype == em.bfloat16
    x = em.input("x", (2, 3))
    out = em.reference(x + em.tensor(a64) + em.tensor(torch.full((3,), 0.5)), x=np.ones((2, 3), np.float32))
    assert_close(out, 1 + a64.astype(np.float32) + 0.5)


# ------------------------------------------------------------------------------------------------
# symbolic dimensions through the ops: one graph, several bindings, each checked against torch

_SYMBOLIC = [
    ("mean_var", {"x": ("B", "T")}, lambda x: (x.mean(0), x.var(1), x.std()), lambda x: (x.mean(0), x.var(1), x.std())),
    ("softmax_logsumexp_cumsum", {"x": ("B", "T")}, lambda x: (x.softmax(1), x.logsumexp(0), x.cumsum(1)),
     lambda x: (x.softmax(1), x.logsumexp(0), x.cumsum(1))),
    ("argmax_argmin", {"x": ("B", "T")}, lambda x: (x.argmax(1), x.argmin()), lambda x: (x.argmax(1), x.argmin())),
    ("matmul_linear", {"a": ("B", "T", 4), "w": (3, 4)}, lambda a, w: (em.linear(a, w), a.transpose(1, 2) @ a),
     lambda a, w: (F.linear(a, w), a.transpose(1, 2) @ a)),
    ("norms", {"x": ("B", 4, "T")},
     lambda x: (em.layer_norm(x, "T"), em.group_norm(x, 2), em.batch_norm(x, None, None, training=True)),
     lambda x: (F.layer_norm(x, (x.shape[-1],)), F.group_norm(x, 2), F.batch_norm(x, None, None, training=True))),
    ("slices_pad_flip", {"x": ("B", "T")}, lambda x: (x[1:, :-1], x[:, ::2], x[:, -1], em.pad(x, (1, 2), value=3.0),
                                                     x.flip(1)),
     lambda x: (x[1:, :-1], x[:, ::2], x[:, -1], F.pad(x, (1, 2), value=3.0), x.flip(1))),
    ("concat_reshape", {"a": ("B", "T"), "b": (2, "T")}, lambda a, b: (em.concat([a, b], 0).reshape(-1, 1),
                                                                         a.unsqueeze(1).expand("B", 3, "T").sum(1)),
     lambda a, b: (torch.cat([a, b], 0).reshape(-1, 1), a.unsqueeze(1).expand(-1, 3, -1).sum(1))),
    ("attention_kv_len", {"q": ("B", 2, 3, 4), "k": ("B", 2, "T", 4), "v": ("B", 2, "T", 4)},
     lambda q, k, v: em.scaled_dot_product_attention(q, k, v),
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v)),
    ("attention_causal_seq", {"q": (1, 2, "T", 4), "k": (1, 2, "T", 4), "v": (1, 2, "T", 4)},
     lambda q, k, v: em.scaled_dot_product_attention(q, k, v, is_causal=True),
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
    ("conv1d_batch_and_length", {"x": ("B", 2, "T"), "w": (3, 2, 2)}, lambda x, w: em.conv1d(x, w, padding=1),
     lambda x, w: F.conv1d(x, w, padding=1)),
    ("arange_tril", {"x": ("B", "T")}, lambda x: (x + em.arange("T").cast(em.float32), x.tril()),
     lambda x: (x + torch.arange(x.shape[1]), x.tril())),
]


@pytest.mark.parametrize("name,shapes,fe,ft", _SYMBOLIC, ids=[s[0] for s in _SYMBOLIC])
def test_symbolic_dims_match_torch(name, shapes, fe, ft):
    ins = {k: em.input(k, s) for k, s in shapes.items()}
    ys = fe(**ins)
    ys = ys if isinstance(ys, tuple) else (ys,)
    for seed, (b, t) in zip(SEEDS, [(3, 5), (1, 7), (4, 2)]):
        rng = np.random.default_rng(seed)
        arrs = {k: rng.standard_normal(tuple({"B": b, "T": t}.get(d, d) for d in s)).astype(np.float32)
                for k, s in shapes.items()}
        outs = em.reference(list(ys), **arrs)
        refs = ft(**{k: torch.from_numpy(a).double() for k, a in arrs.items()})
        refs = refs if isinstance(refs, tuple) else (refs,)
        for i, (o, r) in enumerate(zip(outs, refs)):
            r = r.numpy()
            if r.dtype.kind in "iu":
                assert o.shape == r.shape and np.array_equal(o, r), f"{name} B={b} T={t} output {i}"
            else:
                assert_close(o, r, "float32", f"{name} B={b} T={t} output {i}")


def test_rope_tables_with_symbolic_length_and_offset():
    x = em.input("x", (1, "T", 6))
    y = em.rotary_embedding(x, *em.rope_cos_sin("T", 6, offset="P"))
    p = em.input("p", ("P",))  # binds P through an input's shape (e.g. a KV cache)
    for t, off in ((5, 0), (3, 4)):
        xs = _rand((1, t, 6), seed=t)
        out = em.reference([y, p.sum()], x=xs, p=np.ones((off,), np.float32))[0]
        inv = 1.0 / (10000.0 ** (np.arange(0, 6, 2) / 6))
        ang = np.outer(np.arange(off, off + t), inv)
        ang = np.concatenate([ang, ang], -1)
        xd = xs.astype(np.float64)
        rot = np.concatenate([-xd[..., 3:], xd[..., :3]], -1)
        assert_close(out, xd * np.cos(ang) + rot * np.sin(ang), "float32", f"T={t} P={off}")


# ------------------------------------------------------------------------------------------------
# errors: each names the problem

def _raises(exc, *fragments):
    """pytest.raises whose message must contain every fragment (literally)."""
    return pytest.raises(exc, match="(?s)" + "".join(f"(?=.*{re.escape(f)})" for f in fragments))


def test_shape_mismatch_names_both_shapes():
    x, y = em.input("x", (3, 5)), em.input("y", (4, 5))
    with _raises(em.ShapeError, "(3, 5)", "(4, 5)"):
        x + y
    with _raises(em.ShapeError, "(3, 5)", "(4, 5)"):
        x @ y
    with _raises(em.ShapeError, "(3, 5)", "(4, 5)"):
        em.where(x > 0, x, y)
    with _raises(em.ShapeError, "(3, 5)", "(4, 5)"):
        em.concat([x, y], 1)
    with _raises(em.ShapeError, "(3, 5)", "(4, 4)"):
        x.reshape(4, 4)
    with _raises(em.ShapeError, "(3, 5)", "(5, 3)"):
        x.broadcast_to((5, 3))
    with _raises(em.ShapeError, "5", "(3, 4)"):
        em.linear(x, em.input("w", (3, 4)))
    with _raises(em.ShapeError, "'i'", "3", "4"):
        em.einsum("ij,ij->i", x, y)
    with _raises(em.ShapeError, "B", "D"):
        em.input("b", ("B", 5)) + em.input("d", ("D", 5))


def test_op_shape_errors_name_the_op():
    with _raises(em.ShapeError, "conv2d", "(1, 3, 2, 2)"):
        em.conv2d(em.input("a", (1, 3, 2, 2)), em.input("w", (2, 3, 3, 3)))
    with _raises(em.ShapeError, "conv", "3", "(2, 4, 3, 3)"):
        em.conv2d(em.input("a", (1, 3, 5, 5)), em.input("w", (2, 4, 3, 3)))
    with _raises(em.ShapeError, "max_pool2d", "(1, 3, 2, 2)"):
        em.max_pool2d(em.input("a", (1, 3, 2, 2)), 3)
    with _raises(ValueError, "max_pool1d", "padding"):
        em.max_pool1d(em.input("a", (1, 3, 7)), 3, padding=2)
    with _raises(ValueError, "conv_transpose2d", "output_padding"):
        em.conv_transpose2d(em.input("a", (1, 3, 4, 4)), em.input("w", (3, 2, 3, 3)), stride=2, output_padding=2)
    with _raises(em.ShapeError, "layer_norm", "(4,)", "(3, 5)"):
        em.layer_norm(em.input("x", (3, 5)), 4)
    with _raises(em.ShapeError, "layer_norm", "weight", "(3,)", "(4,)"):
        em.layer_norm(em.input("x", (2, 3, 4)), 4, em.input("w", (3,)))
    with _raises(em.ShapeError, "batch_norm", "running_mean", "(4,)", "(3,)"):
        em.batch_norm(em.input("x", (2, 3, 4)), em.input("m", (4,)), em.input("v", (4,)))
    with _raises(em.ShapeError, "group_norm", "6", "4"):
        em.group_norm(em.input("x", (2, 6, 3)), 4)
    with _raises(em.ShapeError, "attention", "4", "5"):
        em.scaled_dot_product_attention(em.input("q", (1, 2, 3, 4)), em.input("k", (1, 2, 3, 5)),
                                        em.input("v", (1, 2, 3, 5)))
    with _raises(em.ShapeError, "gather", "(3, 9)", "(5, 7)"):
        em.input("x", (5, 7)).gather(0, em.input("i", (3, 9), em.int32))


@pytest.mark.parametrize("build,fragments", [
    (lambda x: x.sum(2), ("axis 2", "rank 2")),
    (lambda x: x.mean((0, -3)), ("-3", "rank 2")),
    (lambda x: x.softmax(5), ("5", "rank 2")),
    (lambda x: x.argmax(2), ("2", "rank 2")),
    (lambda x: x.transpose(0, 2), ("2", "rank 2")),
    (lambda x: x.unsqueeze(4), ("4", "rank 2")),
    (lambda x: x.cumsum(-3), ("-3", "rank 2")),
    (lambda x: x.flip(3), ("3", "rank 2")),
], ids=["sum", "mean", "softmax", "argmax", "transpose", "unsqueeze", "cumsum", "flip"])
def test_bad_axis(build, fragments):
    with _raises(IndexError, *fragments):
        build(em.input("x", (3, 5)))


def test_bad_permutation_and_index():
    x = em.input("x", (3, 5))
    with _raises(em.ShapeError, "(0, 0)"):
        x.permute(0, 0)
    with _raises(IndexError, "index 3", "size 3"):
        x[3]
    with _raises(IndexError, "too many indices"):
        x[1, 2, 3]


def test_wrong_dtype_errors():
    x, i = em.input("x", (3, 5)), em.input("i", (3,), em.int32)
    with _raises(TypeError, "bool", "float32"):
        ~x
    with _raises(TypeError, "bool", "float32"):
        x & x
    with _raises(TypeError, "mean", "int32"):
        i.mean()
    with _raises(TypeError, "integers", "float32"):
        x.gather(0, x)
    with _raises(TypeError, "integers", "float32"):
        em.embedding(x, x)
    with _raises(TypeError, "bool"):
        (x > 0) - (x > 1)
    with _raises(TypeError, "float8"):
        x.cast("float8")
    with _raises(TypeError, "str"):
        x + "a"


def test_reference_missing_and_extra_inputs():
    x, y = em.input("x", (3,)), em.input("y", (3,))
    g = x + y
    ones = np.ones(3, np.float32)
    with _raises(em.InputError, "missing", "'y'", "['x', 'y']"):
        em.reference(g, x=ones)
    with _raises(em.InputError, "unexpected", "'z'", "['x', 'y']"):
        em.reference(g, x=ones, y=ones, z=ones)


def test_reference_bad_input_shapes_and_dtypes():
    x = em.input("x", (3, 5))
    with _raises(em.InputError, "'x'", "(3, 5)", "(3, 4)"):
        em.reference(x + 1, x=np.ones((3, 4), np.float32))
    with _raises(em.InputError, "'x'", "rank 2", "(3,)"):
        em.reference(x + 1, x=np.ones((3,), np.float32))
    i = em.input("i", (3,), em.int32)
    with _raises(em.InputError, "'i'", "float32", "int32"):
        em.reference(i + 1, i=np.ones((3,), np.float32))
    b = em.input("b", ("B", 5))
    c = em.input("c", ("B", 5))
    with _raises(em.InputError, "'B'", "3", "4", "'c'"):
        em.reference(b + c, b=np.ones((3, 5), np.float32), c=np.ones((4, 5), np.float32))
    with pytest.raises(TypeError, match="Tensor"):
        em.reference(3)


def test_reference_unbound_symbolic_dim():
    x = em.input("x", (3,))
    y = x.sum() + em.arange("N").cast(em.float32)  # N is fixed by no input
    with _raises(Exception, "N", "not fixed"):
        em.reference(y, x=np.ones(3, np.float32))


def test_bad_input_declarations():
    with _raises(em.GraphError, "'1x'"):
        em.input("1x", (3,))
    with _raises(em.GraphError, "negative", "-1"):
        em.input("x", (-1,))
    with _raises(em.GraphError, "'_B'"):
        em.input("x", ("_B",))
    with _raises(TypeError, "float8"):
        em.input("x", (3,), "float8")


def test_out_of_range_indices_fail_loudly():
    """An index past its axis must not silently read a neighbouring row."""
    w = em.input("w", (4, 3))
    ws = np.arange(12, dtype=np.float32).reshape(4, 3)
    i = em.input("i", (2,), em.int32)
    with pytest.raises(IndexError):
        em.reference(w.index_select(1, i), w=ws, i=np.array([0, 3], np.int32))
    j = em.input("j", (4, 1), em.int32)
    with pytest.raises(IndexError):
        em.reference(w.gather(1, j), w=ws, j=np.array([[0], [3], [1], [2]], np.int32))
    with pytest.raises(IndexError):
        em.reference(em.embedding(i, w), w=ws, i=np.array([1, 4], np.int32))
    # in range (negative counts from the end) works
    out = em.reference(w.index_select(1, i), w=ws, i=np.array([0, -1], np.int32))
    assert np.array_equal(out, ws[:, [0, 2]])


def test_lazy_tensor_misuse():
    x = em.input("x", ("B", 3))
    with pytest.raises(TypeError, match="iterated"):
        list(x)
    with _raises(TypeError, "symbolic", "B"):
        len(x)
    with _raises(em.ShapeError, "static", "B"):
        x.chunk(2, 0)


def test_torch_positional_order_is_loud_or_right():
    """Where Ember's signature differs from torch's, a torch-style positional call fails clearly
    rather than meaning something else."""
    x = em.input("x", (3, 5))
    with _raises(TypeError, "pad", "mode"):
        em.pad(x, (1, 1), "constant", 0.0)  # torch: F.pad(x, pad, mode, value)
    q = em.input("q", (1, 2, 3, 4))
    with _raises(NotImplementedError, "dropout"):
        em.scaled_dot_product_attention(q, q, q, None, 0.1)
    with _raises(TypeError, "unbiased", "correction"):
        x.var(1, True, correction=0)


def test_einsum_errors():
    a = em.input("a", (3, 4))
    with _raises(ValueError, "'k'", "no operand"):
        em.einsum("ij->ik", a)
    with _raises(em.ShapeError, "'i'", "3", "4"):
        em.einsum("ii->i", a)


def test_reductions_over_empty_axes_match_torch():
    z = em.input("z", (0, 3))
    x = em.input("x", (2, 3))  # keeps every output dependent on an input
    xs, zs = _rand((2, 3)), np.zeros((0, 3), np.float32)
    outs = em.reference([z.sum(0) + x[0], z.mean(0) + x[0], z.prod(0) * x[0] + z.sum(0), z.logsumexp(0) + x[0],
                         z.var(0) + x[0]], z=zs, x=xs)
    tz, tx = torch.from_numpy(zs).double(), torch.from_numpy(xs).double()
    refs = [tz.sum(0) + tx[0], tz.mean(0) + tx[0], tz.prod(0) * tx[0], tz.logsumexp(0) + tx[0], tz.var(0) + tx[0]]
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert_close(o, r.numpy(), "float32", f"output {i}")


def test_expand_minus_one_on_a_new_dimension():
    x = em.input("x", (3,))
    with _raises(em.ShapeError, "-1", "leading"):
        x.expand(-1, 3)  # torch refuses too; -1 used to pick up the wrong dimension's size
    assert x.expand(2, -1).shape == (2, 3)
