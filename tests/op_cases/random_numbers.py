"""Op cases: counter-based random numbers (the PHILOX primitive) and dropout."""
from __future__ import annotations

import ember as em
import numpy as np

from tests.op_cases.registry import S, case_adder, torch

CASES: list = []
_add = case_adder(CASES)

# counter-based random numbers (the PHILOX primitive): the oracle is the Philox4x32-10 of
# ember/primitives/random.py, itself checked against Random123's known-answer vectors (tests/test_random.py)


def _t_rand(shape, seed, offset=0, dtype=None):
    """rand's samples as a torch tensor (float32 unless dtype says otherwise)."""
    from ember.primitives.random import philox_uniform
    n = int(np.prod(shape))
    u = torch.from_numpy(philox_uniform(seed, offset + np.arange(n, dtype=np.int64)).reshape(shape))
    return u.to(dtype or torch.float32)


def _t_dropout(x, p, seed, offset=0):
    keep = _t_rand(tuple(x.shape), seed, offset).float() >= torch.tensor(p, dtype=torch.float32)
    return torch.where(keep, x * (1.0 / (1.0 - p)), torch.zeros((), dtype=x.dtype))


_add("rand_seeds_offsets", {"x": S(5, 13)},
     lambda x: (x + em.rand((5, 13), seed=3), em.rand((3, 1, 7), seed=-9, offset=2**33 + 5),
                em.rand((17,), seed=2**40 + 1, dtype=em.float64)),
     lambda x: (x + _t_rand((5, 13), 3), _t_rand((3, 1, 7), -9, 2**33 + 5), _t_rand((17,), 2**40 + 1, dtype=torch.float64)))
_add("dropout_p03", {"x": S(7, 33)}, lambda x: em.dropout(x, 0.3, seed=11), lambda x: _t_dropout(x, 0.3, 11))
_add("dropout_offset_3d", {"x": S(2, 5, 9)}, lambda x: x.dropout(0.5, seed=123456789012, offset=1000).exp(),
     lambda x: _t_dropout(x, 0.5, 123456789012, 1000).exp())
_add("dropout_f16", {"x": S(5, 13, dtype="float16")}, lambda x: em.dropout(x, 0.25, seed=5),
     lambda x: _t_dropout(x, 0.25, 5), tags=("f16",))
_add("dropout_after_matmul", {"x": S(5, 7), "w": S(7, 3)}, lambda x, w: em.dropout(x @ w, 0.5, seed=2).sum(1),
     lambda x, w: _t_dropout(x @ w, 0.5, 2).sum(1))
