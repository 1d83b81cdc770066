"""The primitives table (ember/primitives): every row is complete, and every elementwise row — built
only from what its row says — compiles to C that agrees with its numpy form on random inputs."""
import numpy as np
import pytest

import ember as em
from ember import dtypes as dt
from ember import graph as g
from ember.graph import GraphError
from ember.primitives import ALU, GRAPH, KINDS

ELEMENTWISE = [r for r in GRAPH.values() if r.elementwise and r.kind != "cast"]


def test_rows_are_complete():
    assert set(g.ALL_OPS) == set(GRAPH)
    for row in GRAPH.values():
        assert row.kind in KINDS and row.egraph and row.cost >= 0
        if row.elementwise:
            assert row.numpy is not None and row.c is not None, row.name
            assert ALU[row.name] is row
    for row in ALU.values():
        assert row.c is not None and row.elementwise, row.name
    # the graph's tuples are the table's kinds
    assert set(g.UNARY) == {r.name for r in GRAPH.values() if r.kind == "unary"}
    assert set(g.BINARY) == {r.name for r in GRAPH.values() if r.kind == "binary"}


def _operand_dtype(row) -> dt.DType:
    """The first of float32, int64, int32 that the row's dtype rule accepts."""
    for d in (dt.float32, dt.int64, dt.int32):
        try:
            row.dtype(*([dt.bool_] if row.kind == "select" else []), *[d] * (row.arity - (row.kind == "select")))
            return d
        except GraphError:
            continue
    raise AssertionError(f"{row.name}: no operand dtype accepted")


@pytest.mark.parametrize("name", [r.name for r in ELEMENTWISE])
@pytest.mark.parametrize("seed", [0, 1])
def test_elementwise_row_compiles_to_c_that_matches_its_numpy_form(name, seed):
    row = GRAPH[name]
    d = _operand_dtype(row)
    shape = (3, 37)
    rng = np.random.default_rng(seed)
    names = [f"a{i}" for i in range(row.arity)]
    ts, arrays = [], {}
    for i, n in enumerate(names):
        if row.kind == "select" and i == 0:
            ts.append(em.input(n, shape, em.bool_))
            arrays[n] = rng.random(shape) < 0.5
            continue
        ts.append(em.input(n, shape, d))
        if d.is_float:  # positive and away from 0: every unary op is defined there
            arrays[n] = rng.uniform(0.25, 4.0, shape).astype(d.np)
        else:
            arrays[n] = rng.integers(-2 ** 40 if d == dt.int64 else -1000, 2 ** 40 if d == dt.int64 else 1000,
                                     shape).astype(d.np)
    if row.kind == "unary":
        y = em.Tensor(g.unary(name, ts[0].node))
    elif row.kind == "binary":
        y = em.Tensor(g.binary(name, ts[0].node, ts[1].node))
    else:
        y = em.Tensor(g.where_node(*(t.node for t in ts)))
    got = np.asarray(em.compile(y, device="cpu")(**arrays))
    want = em.reference(y, **arrays)
    assert got.dtype == want.dtype
    if y.dtype.is_float:
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)
    else:
        np.testing.assert_array_equal(got, want)
