"""The registry of op cases: every high-level op of the Tensor API, as an Ember function and the
equivalent PyTorch function over the same named inputs.

Later stages reuse this registry (the compiled CPU and CUDA backends, the autograd gradient tests),
so a case says only *what* to compute; the test files decide how to check it.

* Shapes are odd on purpose (1, primes 3/5/7/13, non-multiples of 8 and 32) so tiling and
  vectorisation bugs cannot hide behind friendly sizes.
* Weights are graph inputs too (``w``, ``b``…), so gradients can be taken with respect to them.
* ``make_inputs(case, seed)`` gives fresh random arrays, never zeros; the same (case, seed) always
  gives the same arrays.
* Torch functions receive tensors of the spec's dtype, or float64 where a test upcasts floats for a
  fairer oracle (``OpCase.upcast``); integer inputs stay int32 (call ``.long()`` where torch wants it).

The cases live in one module per op family (tests/op_cases/<family>.py); this package concatenates
them in a fixed order, so test ids and their order stay stable.
"""
from __future__ import annotations

from tests.op_cases import (attention, contractions, elementwise, indexing, losses, normalization, precision,
                            random_numbers, reductions, special_values, tensor_api)
from tests.op_cases.registry import OpCase, S, Spec, make_inputs

__all__ = ["CASES", "CASES_BY_NAME", "OpCase", "S", "Spec", "make_inputs"]

CASES: list = [case for family in (elementwise, reductions, contractions, normalization, indexing, attention, losses,
                                   precision, tensor_api, special_values, random_numbers)
               for case in family.CASES]


def _check_unique() -> None:
    seen = set()
    for c in CASES:
        if c.name in seen:
            raise ValueError(f"duplicate op case name {c.name!r}")
        seen.add(c.name)


_check_unique()
CASES_BY_NAME = {c.name: c for c in CASES}
