"""Every op case of the foundation suite (tests/op_cases/), compiled for the CPU, against the
reference at the tolerances of docs/architecture.md."""
import pytest

import ember as em
from tests.conftest import assert_close

op_cases = pytest.importorskip("tests.op_cases")

SEEDS = (0, 1)


def _outputs(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


@pytest.mark.parametrize("case", op_cases.CASES, ids=[c.name for c in op_cases.CASES])
def test_op_compiled_cpu(case):
    ts = {n: em.input(n, s.shape, s.dtype) for n, s in case.inputs.items()}
    ys = _outputs(case.ember(**ts))
    fn = em.compile(tuple(ys), device="cpu")
    fn.executor.poison = True
    for seed in SEEDS:
        ins = op_cases.make_inputs(case, seed)
        outs = fn(**ins)
        refs = em.reference(tuple(ys), **ins)
        for y, o, r in zip(ys, outs, refs):
            assert_close(o, r, y.dtype.name, what=f"{case.name} seed {seed}")
