"""The local lowering mode (intermediates read along one loop of a row kernel kept in kernel-local
arrays: attention scores stay on chip) computes the same values as the reference for every op case,
and fuses attention into a single kernel."""
import numpy as np
import pytest

import ember as em
from ember.kernel.lower import lower
from ember.pipeline import build_program
from tests.conftest import assert_close

op_cases = pytest.importorskip("tests.op_cases")


@pytest.mark.parametrize("case", op_cases.CASES, ids=[c.name for c in op_cases.CASES])
def test_op_local_lowering_cpu(case):
    ts = {n: em.input(n, s.shape, s.dtype) for n, s in case.inputs.items()}
    y = case.ember(**ts)
    ys = tuple(y) if isinstance(y, (tuple, list)) else (y,)
    L = lower([t.node for t in ys], local=True)
    if not any(k.meta.get("locals") for k, _ in L.kernels):
        pytest.skip("no kernel-local arrays in this graph")
    fn = build_program(L, "cpu", None, "tuple")
    fn.executor.poison = True
    ins = op_cases.make_inputs(case, 0)
    for t, o, r in zip(ys, fn(**ins), em.reference(ys, **ins)):
        assert_close(o, r, t.dtype.name, what=case.name)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_is_one_kernel_with_scores_on_chip(causal):
    q, k, v = em.input("q", (2, 4, 9, 16)), em.input("k", (2, 2, 11, 16)), em.input("v", (2, 2, 11, 16))
    y = em.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    L = lower([y.node], local=True)
    assert len(L.kernels) == 1 and not [b for b in L.buffers.values() if b.kind == "temp"]
    fn = build_program(L, "cpu", None, "single")
    rng = np.random.default_rng(0)
    ins = {"q": rng.standard_normal((2, 4, 9, 16)).astype(np.float32),
           "k": rng.standard_normal((2, 2, 11, 16)).astype(np.float32),
           "v": rng.standard_normal((2, 2, 11, 16)).astype(np.float32)}
    assert_close(fn(**ins), em.reference(y, **ins))
