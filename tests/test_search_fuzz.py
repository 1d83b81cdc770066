"""Equivalence fuzzing: random graphs -> e-graph with every rule -> many extracted candidates ->
each one equal to the reference (and a sample compiled for the CPU)."""
import numpy as np
import pytest

import ember as em
from tests.conftest import assert_close

pytest.importorskip("egglog")
from ember.search.egraph import Region  # noqa: E402

UNARY = [lambda t: t.exp(), lambda t: t.sigmoid(), lambda t: t.abs().sqrt(), lambda t: t * 2.5,
         lambda t: t + 1.0, lambda t: -t, lambda t: t.relu(), lambda t: (t * t + 1.0).reciprocal()]
BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b, lambda a, b: em.where(a < b, a, b)]
REDUCE = [lambda t: t.sum(-1, keepdim=True), lambda t: t.max(-1, keepdim=True), lambda t: t.mean(0, keepdim=True),
          lambda t: t.softmax(-1), lambda t: t.exp2().sum(-1, keepdim=True) * 0.5]


def random_graph(rng):
    x, y = em.input("x", (5, 12)), em.input("y", (5, 12))
    pool = [x, y]
    for _ in range(rng.integers(3, 8)):
        k = rng.integers(3)
        if k == 0:
            pool.append(UNARY[rng.integers(len(UNARY))](pool[rng.integers(len(pool))]))
        elif k == 1:
            a, b = pool[rng.integers(len(pool))], pool[rng.integers(len(pool))]
            pool.append(BINARY[rng.integers(len(BINARY))](a, b))
        else:
            pool.append(REDUCE[rng.integers(len(REDUCE))](pool[rng.integers(len(pool))]))
    return pool[-1] + pool[-2] if pool[-2].ndim == pool[-1].ndim else pool[-1]


@pytest.mark.parametrize("seed", range(12))
def test_every_extracted_candidate_equals_the_reference(seed):
    rng = np.random.default_rng(seed)
    y = random_graph(rng)
    region = Region([y.node])
    region.saturate(max_iters=4)
    cands = region.candidates(10, seed=seed)
    assert cands
    used = {n.arg for n in em.graph.inputs_of([y.node])}
    ins = {k: rng.standard_normal((5, 12)).astype(np.float32) for k in used}
    ref = em.reference(y, **ins)
    for i, c in enumerate(cands):
        cu = {n.arg for n in em.graph.inputs_of(list(c))}
        out = em.reference(em.Tensor(c[0]), **{k: v for k, v in ins.items() if k in cu})
        assert_close(out, ref, what=f"seed {seed} candidate {i}")
    c = cands[-1]
    cu = {n.arg for n in em.graph.inputs_of(list(c))}
    from ember.kernel.lower import lower
    from ember.pipeline import build_program
    fn = build_program(lower(c), "cpu", None, "single")
    assert_close(fn(**{k: v for k, v in ins.items() if k in cu}), ref, what=f"seed {seed} compiled")
