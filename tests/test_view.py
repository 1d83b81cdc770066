"""ember.view against numpy: every movement op, random chains of them, and the simplifications
that keep composed views cheap (contiguous stays contiguous, reshapes of reshapes fold to strides)."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ember import symbolic as sm
from ember.reference import eval_view
from ember.view import View, ViewError

SETTINGS = settings(max_examples=int(os.environ.get("EMBER_FUZZ_EXAMPLES", "300")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------------------------------
# numpy versions of each op (the oracle)

def np_unfold(a: np.ndarray, axis: int, size: int, step: int, dilation: int) -> np.ndarray:
    n = a.shape[axis]
    windows = (n - (dilation * (size - 1) + 1)) // step + 1
    idx = np.arange(windows)[:, None] * step + np.arange(size)[None, :] * dilation
    return np.take(a, idx, axis=axis)


def np_dilate(a: np.ndarray, axis: int, factor: int) -> np.ndarray:
    n = a.shape[axis]
    shape = list(a.shape)
    shape[axis] = (n - 1) * factor + 1 if n else 0
    out = np.zeros(shape, a.dtype)
    sl = [slice(None)] * a.ndim
    sl[axis] = slice(None, None, factor)
    out[tuple(sl)] = a
    return out


def apply_np(a: np.ndarray, op: tuple, env: dict) -> np.ndarray:
    ev = lambda x: int(sm.evaluate(x, env))  # noqa: E731
    name = op[0]
    if name == "reshape":
        return a.reshape([ev(s) for s in op[1]])
    if name == "permute":
        return a.transpose(op[1])
    if name == "expand":
        return np.broadcast_to(a, [ev(s) for s in op[1]])
    if name == "slice":
        _, axis, start, stop, step = op
        sl = [slice(None)] * a.ndim
        sl[axis] = slice(ev(start), ev(stop), step)
        return a[tuple(sl)]
    if name == "pad":
        return np.pad(a, [(ev(b), ev(c)) for b, c in op[1]])
    if name == "flip":
        return np.flip(a, op[1]) if op[1] else a
    if name == "unfold":
        return np_unfold(a, *op[1:])
    if name == "dilate":
        return np_dilate(a, *op[1:])
    raise AssertionError(name)


def apply_view(v: View, op: tuple) -> View:
    name = op[0]
    if name == "reshape":
        return v.reshape(op[1])
    if name == "permute":
        return v.permute(op[1])
    if name == "expand":
        return v.expand(op[1])
    if name == "slice":
        return v.slice(*op[1:])
    if name == "pad":
        return v.pad(op[1])
    if name == "flip":
        return v.flip(op[1])
    if name == "unfold":
        return v.unfold(*op[1:])
    if name == "dilate":
        return v.dilate(*op[1:])
    raise AssertionError(name)


def check_view(v: View, want: np.ndarray, base: np.ndarray, env: dict, what: str) -> None:
    got = eval_view(base, v, env)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != numpy {want.shape}\n{v}"
    assert np.array_equal(got, want), f"{what}: values differ\n{v}\ngot\n{got}\nwant\n{want}"


# ------------------------------------------------------------------------------------------------
# random chains on constant shapes

def _factorizations(n: int, draw) -> list:
    """A random list of dims whose product is n (n >= 1)."""
    dims = []
    while n > 1:
        divs = [d for d in range(2, n + 1) if n % d == 0]
        d = draw(st.sampled_from(divs))
        dims.append(d)
        n //= d
    if draw(st.booleans()):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    perm = draw(st.permutations(dims)) if dims else dims
    return list(perm) or [1]


@st.composite
def op_for(draw, shape: tuple):
    nd = len(shape)
    numel = math.prod(shape)
    kinds = ["reshape", "permute", "slice", "pad", "flip", "unfold", "dilate", "expand"]
    kind = draw(st.sampled_from(kinds))
    if kind == "reshape":
        if numel == 0:
            new = list(shape)
            new = draw(st.permutations(new))
            return ("reshape", tuple(new))
        return ("reshape", tuple(_factorizations(numel, draw)))
    if kind == "permute":
        return ("permute", tuple(draw(st.permutations(range(nd)))))
    if kind == "expand":
        ones = [d for d in range(nd) if shape[d] == 1]
        if not ones:
            return ("flip", ())
        new = list(shape)
        for d in ones:
            new[d] = draw(st.integers(1, 3))
        return ("expand", tuple(new))
    axis = draw(st.integers(0, nd - 1))
    n = shape[axis]
    if kind == "slice":
        start = draw(st.integers(0, n))
        stop = draw(st.integers(start, n))
        return ("slice", axis, start, stop, draw(st.integers(1, 3)))
    if kind == "pad":
        return ("pad", tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nd)))
    if kind == "flip":
        return ("flip", tuple(sorted(draw(st.sets(st.integers(0, nd - 1))))))
    if kind == "unfold":
        if n < 1:
            return ("flip", (axis,))
        dilation = draw(st.integers(1, 2))
        size = draw(st.integers(1, max(1, (n - 1) // dilation + 1)))
        return ("unfold", axis, size, draw(st.integers(1, 3)), dilation)
    if n < 1:
        return ("flip", (axis,))
    return ("dilate", axis, draw(st.integers(1, 3)))


@st.composite
def chains(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    ops, cur = [], shape
    for _ in range(draw(st.integers(1, 7))):
        op = draw(op_for(cur))
        new = apply_np(np.zeros(cur, np.int8), op, {}).shape
        if math.prod(new) > 3000 or len(new) > 6:
            continue
        ops.append(op)
        cur = new
    return shape, ops


@SETTINGS
@given(chains())
def test_random_chains_match_numpy(chain):
    shape, ops = chain
    base = np.arange(1, math.prod(shape) + 1, dtype=np.int64).reshape(shape)  # never 0: padding is visible
    v, a = View.contiguous(shape), base
    check_view(v, a, base, {}, "contiguous")
    for n, op in enumerate(ops):
        v, a = apply_view(v, op), apply_np(a, op, {})
        check_view(v, a, base, {}, f"after {ops[:n + 1]}")
        assert all(s.is_const for s in v.shape)
        # an affine view's strides must reproduce its index
        aff = v.affine_strides()
        if aff is not None:
            off, strides = aff
            assert v.index is sm.sum_of([off] + [s * iv for s, iv in zip(strides, _ivars(v))])


def _ivars(v: View):
    return [sm.index_var(f"_i{d}", s) for d, s in enumerate(v.shape)]


# ------------------------------------------------------------------------------------------------
# random chains on symbolic shapes (B, S), checked for several bindings

B, S = sm.dim("B"), sm.dim("S")


@st.composite
def sym_chains(draw):
    shape = draw(st.sampled_from([(B, S), (B, S, 3), (2, S, B), (S, 4), (B, 1, S)]))
    ops, cur = [], tuple(sm.sym(s) for s in shape)
    for _ in range(draw(st.integers(1, 6))):
        nd = len(cur)
        kind = draw(st.sampled_from(["merge", "split", "permute", "slice", "pad", "flip", "dilate", "expand",
                                     "unfold"]))
        axis = draw(st.integers(0, nd - 1))
        n = cur[axis]
        op = None
        if kind == "merge" and nd > 1 and axis < nd - 1:
            op = ("reshape", cur[:axis] + (cur[axis] * cur[axis + 1],) + cur[axis + 2:])
        elif kind == "split":
            # split a product of dims back into its factors, or a constant into two factors
            if n.op == "mul":
                op = ("reshape", cur[:axis] + tuple(n.args) + cur[axis + 1:])
            elif n.op == "add" and not n.args[0] and len(n.args[1]) == 1 and n.args[1][0][0].op != "add":
                t, k = n.args[1][0]
                op = ("reshape", cur[:axis] + (sm.const(k), t) + cur[axis + 1:])
            elif n.is_const and n.value % 2 == 0 and n.value > 2:
                op = ("reshape", cur[:axis] + (sm.const(2), sm.const(n.value // 2)) + cur[axis + 1:])
        elif kind == "permute":
            op = ("permute", tuple(draw(st.permutations(range(nd)))))
        elif kind == "slice":
            if n.is_const:
                start = draw(st.integers(0, n.value))
                op = ("slice", axis, sm.const(start), sm.const(draw(st.integers(start, n.value))),
                      draw(st.integers(1, 3)))
            else:  # drop the first element: [1, n)
                op = ("slice", axis, sm.ONE, n, draw(st.integers(1, 2)))
                if n.vmin < 1:
                    op = None
        elif kind == "pad":
            op = ("pad", tuple((draw(st.integers(0, 2)), draw(st.integers(0, 1))) for _ in range(nd)))
        elif kind == "flip":
            op = ("flip", (axis,))
        elif kind == "dilate" and n.vmin >= 1:
            op = ("dilate", axis, draw(st.integers(2, 3)))
        elif kind == "expand" and n is sm.ONE:
            op = ("expand", cur[:axis] + (draw(st.sampled_from([B, S, sm.const(3)])),) + cur[axis + 1:])
        elif kind == "unfold" and n.is_const and n.value >= 2:
            op = ("unfold", axis, 2, 1, 1)
        if op is None:
            continue
        ops.append(op)
        cur = apply_view(View.contiguous(cur), op).shape
    return shape, ops


@SETTINGS
@given(sym_chains(), st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=1, max_size=3))
def test_random_symbolic_chains_match_numpy(chain, bindings):
    shape, ops = chain
    v = View.contiguous(shape)
    views = [v]
    for op in ops:
        v = apply_view(v, op)
        views.append(v)
    for b, s in bindings:
        env = {"B": b, "S": s}
        dims = tuple(int(sm.evaluate(sm.sym(x), env)) for x in shape)
        base = np.arange(1, math.prod(dims) + 1, dtype=np.int64).reshape(dims)
        a = base
        for n, op in enumerate(ops):
            a = apply_np(a, op, env)
            check_view(views[n + 1], a, base, env, f"B={b} S={s} after {ops[:n + 1]}")


# ------------------------------------------------------------------------------------------------
# each op, directly

def test_each_op_against_numpy():
    base = np.arange(1, 2 * 3 * 4 + 1).reshape(2, 3, 4)
    v = View.contiguous((2, 3, 4))
    cases = [
        (("reshape", (6, 4)), base.reshape(6, 4)),
        (("reshape", (4, 3, 2)), base.reshape(4, 3, 2)),
        (("permute", (2, 0, 1)), base.transpose(2, 0, 1)),
        (("slice", 2, 1, 4, 2), base[:, :, 1:4:2]),
        (("slice", 1, 0, 0, 1), base[:, 0:0, :]),
        (("pad", ((1, 0), (0, 2), (1, 1))), np.pad(base, ((1, 0), (0, 2), (1, 1)))),
        (("flip", (0, 2)), base[::-1, :, ::-1]),
        (("unfold", 2, 2, 1, 1), np_unfold(base, 2, 2, 1, 1)),
        (("unfold", 2, 2, 1, 2), np_unfold(base, 2, 2, 1, 2)),
        (("dilate", 1, 3), np_dilate(base, 1, 3)),
    ]
    for op, want in cases:
        check_view(apply_view(v, op), want, base, {}, str(op))
    one = View.contiguous((2, 1, 4))
    b1 = np.arange(1, 9).reshape(2, 1, 4)
    check_view(one.expand((2, 5, 4)), np.broadcast_to(b1, (2, 5, 4)), b1, {}, "expand")


def test_dilate_matches_zero_insertion():
    base = np.arange(1, 6)
    got = eval_view(base, View.contiguous((5,)).dilate(0, 2), {})
    assert got.tolist() == [1, 0, 2, 0, 3, 0, 4, 0, 5]


def test_zero_size_views():
    base = np.zeros((3, 0))
    v = View.contiguous((3, 0)).reshape((0, 3))
    assert eval_view(base, v, {}).shape == (0, 3)
    v = View.contiguous((2, 3)).slice(1, 1, 1).reshape((0, 5))
    assert v.shape == (sm.ZERO, sm.const(5))
    assert eval_view(np.ones((2, 3)), v, {}).shape == (0, 5)


# ------------------------------------------------------------------------------------------------
# simplification of composed views

def _idx(shape, strides, offset=0):
    iv = [sm.index_var(f"_i{d}", s) for d, s in enumerate(shape)]
    return sm.sum_of([offset] + [st_ * i for st_, i in zip(strides, iv)])


@pytest.mark.parametrize("shapes", [
    [(24,), (2, 3, 4), (6, 4), (4, 6), (2, 2, 2, 3), (24,)],
    [(8,), (2, 2, 2), (4, 2), (2, 4), (8, 1), (1, 8)],
    [(6, 10), (3, 2, 5, 2), (60,), (12, 5)],
])
def test_reshape_chains_of_contiguous_stay_contiguous(shapes):
    v = View.contiguous(shapes[0])
    for s in shapes[1:]:
        v = v.reshape(s)
        assert v.is_contiguous(), f"{shapes[0]} -> ... -> {s}: {v}"


def test_reshape_chain_through_a_permuted_view_composes():
    """Reshape of a permuted view stays a view; reshaping back and permuting back is the identity."""
    v = View.contiguous((2, 3, 4)).permute((1, 0, 2))   # (3, 2, 4), not contiguous
    w = v.reshape((3, 8))
    assert isinstance(w, View) and w.valid is sm.ONE
    assert w.affine_strides() == (sm.ZERO, (sm.const(4), sm.ONE)) or w.affine_strides() is None
    back = w.reshape((3, 2, 4))
    assert back.index is v.index
    assert back.permute((1, 0, 2)).is_contiguous()
    # a merge that the permutation makes impossible is not affine, but still exact
    merged = View.contiguous((2, 3)).permute((1, 0)).reshape((6,))
    assert merged.affine_strides() is None
    assert eval_view(np.arange(6), merged, {}).tolist() == [0, 3, 1, 4, 2, 5]


def test_permute_then_inverse_is_contiguous():
    v = View.contiguous((2, 3, 4, 5)).permute((3, 1, 0, 2))
    inv = [0] * 4
    for k, o in enumerate((3, 1, 0, 2)):
        inv[o] = k
    assert v.permute(inv).is_contiguous()


def test_symbolic_reshape_roundtrip_is_plain_strides():
    v = View.contiguous((B, S)).reshape((B * S,))
    assert v.is_contiguous()
    w = v.reshape((B, S))
    assert w.is_contiguous()
    assert w.affine_strides() == (sm.ZERO, (S, sm.ONE))
    H = sm.dim("H")
    for shape in [(B, S * H), (B * S, H), (B * S * H,)]:
        x = View.contiguous((B, S, H)).reshape(shape)
        assert x.is_contiguous(), x
        assert x.reshape((B, S, H)).is_contiguous()


def test_symbolic_permuted_reshape_roundtrip_folds():
    H = sm.dim("H")
    v = View.contiguous((B, S, H)).permute((1, 0, 2))            # (S, B, H)
    assert v.reshape((S, B * H)).reshape((S, B, H)).index is v.index
    # merging dims that stay adjacent in memory is affine, with symbolic strides
    w = View.contiguous((B, S, H)).permute((2, 0, 1)).reshape((H, B * S))
    assert w.affine_strides() == (sm.ZERO, (sm.ONE, H))


def test_symbolic_pad_reshape_roundtrip_folds():
    v = View.contiguous((B, S)).pad(((0, 0), (1, 1)))
    w = v.reshape((B * (S + 2),)).reshape((B, S + 2))
    assert w.index is v.index and w.valid is v.valid


def test_slice_then_reshape_roundtrip_folds():
    v = View.contiguous((4, 6)).slice(1, 0, 6, 2)   # (4, 3) with strides (6, 2)
    assert v.affine_strides() == (sm.ZERO, (sm.const(6), sm.const(2)))
    assert v.reshape((12,)).reshape((4, 3)).index is v.index
    u = View.contiguous((4, 6)).slice(1, 1, 5, 1)   # offset 1
    assert u.affine_strides() == (sm.ONE, (sm.const(6), sm.ONE))


def test_affine_strides():
    assert View.contiguous((2, 3, 4)).affine_strides() == (sm.ZERO, (sm.const(12), sm.const(4), sm.ONE))
    v = View.contiguous((2, 3, 4)).permute((2, 0, 1))
    assert v.affine_strides() == (sm.ZERO, (sm.ONE, sm.const(12), sm.const(4)))
    f = View.contiguous((3, 4)).flip((1,))
    assert f.affine_strides() == (sm.const(3), (sm.const(4), sm.const(-1)))
    e = View.contiguous((3, 1)).expand((3, 5))
    assert e.affine_strides() == (sm.ZERO, (sm.ONE, sm.ZERO))
    u = View.contiguous((10,)).unfold(0, 3, 2)
    assert u.affine_strides() == (sm.ZERO, (sm.const(2), sm.ONE))
    assert View.contiguous((B, S)).permute((1, 0)).affine_strides() == (sm.ZERO, (sm.ONE, S))
    # pad is affine in its index (the mask is separate); dilate is not
    p = View.contiguous((3,)).pad(((1, 0),))
    assert p.affine_strides() == (sm.const(-1), (sm.ONE,))
    assert View.contiguous((3,)).dilate(0, 2).affine_strides() is None


def test_pad_masks_combine():
    """Padding twice on an axis keeps one lower and one upper bound on the index."""
    v = View.contiguous((5,)).pad(((1, 1),)).pad(((2, 0),))
    assert v.valid is sm.logical_and(sm.ge(sm.index_var("_i0", 9), 3), sm.lt(sm.index_var("_i0", 9), 8))
    # slicing away the padding makes the mask vanish
    w = View.contiguous((5,)).pad(((2, 2),)).slice(0, 2, 7)
    assert w.valid is sm.ONE and w.is_contiguous()


def test_errors():
    v = View.contiguous((2, 3))
    with pytest.raises(ViewError, match="6 elements"):
        v.reshape((4, 2))
    with pytest.raises(ViewError, match="not a permutation"):
        v.permute((0, 0))
    with pytest.raises(ViewError, match="dimension 1 is 3"):
        v.expand((2, 4))
    with pytest.raises(ViewError, match="step"):
        v.slice(0, 0, 2, 0)
    with pytest.raises(ViewError, match="reads index -1"):
        v.slice(1, -1, 2)
    with pytest.raises(ViewError, match="reads index 3"):
        v.slice(1, 1, 4)
    assert v.slice(1, 0, 4, 2).shape[1] is sm.const(2)       # stop past the end, but no read past it
    assert v.slice(1, 3, 3).shape[1] is sm.ZERO              # empty slices at the end are fine
    with pytest.raises(ViewError, match="negative"):
        View.contiguous((B,)).slice(0, -1, B)
    with pytest.raises(ViewError, match="negative padding"):
        v.pad(((0, -1), (0, 0)))
    with pytest.raises(ViewError, match="does not fit"):
        v.unfold(1, 4)


def test_flipped_reshape_roundtrip_folds():
    """A flipped coordinate (n - 1 - i) divides and reduces like i does, so reshapes of a flipped view
    fold back (uses floor((-y-1)/d) == -floor(y/d) - 1)."""
    v = View.contiguous((4, 6)).flip((0,))
    assert v.reshape((24,)).reshape((4, 6)).index is v.index
    f = View.contiguous((4, 6)).flip((0, 1))
    assert f.reshape((24,)).is_contiguous() is False
    assert f.reshape((24,)).affine_strides() == (sm.const(23), (sm.const(-1),))
    s = View.contiguous((B, S)).flip((1,))
    assert s.reshape((B * S,)).reshape((B, S)).index is s.index
    both = View.contiguous((B, S)).flip((0, 1)).reshape((B * S,))
    assert both.affine_strides() == (B * S - 1, (sm.const(-1),))
