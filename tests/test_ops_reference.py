"""Every op case (tests/op_cases/) through the numpy reference, against PyTorch on the same arrays.

The torch oracle runs in float64 on the (already rounded) inputs wherever the case allows it
(``OpCase.upcast``), so the comparison measures Ember's error, not torch's. Ember's result is rounded
only through its own output dtype. The output dtype is checked against torch run natively (Ember
narrows torch's int64 results to int32 by design, so those two count as the same).
"""
from __future__ import annotations

import numpy as np
import pytest

import ember as em
from tests.conftest import SEEDS, assert_close
from tests.op_cases import CASES, make_inputs

torch = pytest.importorskip("torch")

# Cases that cannot match torch, with the honest reason. Keep this list short and explained.
XFAIL: dict = {}


def _to_torch(arr: np.ndarray, upcast: bool):
    if arr.dtype.name == "bfloat16":
        t = torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16)
    else:
        t = torch.from_numpy(np.array(arr))  # a copy; np.ascontiguousarray would make 0-d arrays 1-d
    if upcast and t.is_floating_point():
        t = t.double()
    return t


def _as_tuple(y):
    return tuple(y) if isinstance(y, (tuple, list)) else (y,)


def _torch_np(t) -> np.ndarray:
    t = t.detach()
    if t.is_floating_point():
        t = t.double()
    return t.numpy()


_SAME_DTYPE = {"torch.int64": "int32", "torch.int32": "int32", "torch.bool": "bool", "torch.float16": "float16",
               "torch.bfloat16": "bfloat16", "torch.float32": "float32", "torch.float64": "float64"}


def _params():
    out = []
    for c in CASES:
        marks = [pytest.mark.xfail(reason=XFAIL[c.name], strict=True)] if c.name in XFAIL else []
        out.append(pytest.param(c, id=c.name, marks=marks))
    return out


def _build(case):
    xs = {k: em.input(k, s.shape, s.dtype) for k, s in case.inputs.items()}
    return _as_tuple(case.ember(**xs))


@pytest.mark.parametrize("case", _params())
def test_op_matches_torch(case):
    ys = _build(case)
    for seed in SEEDS:
        arrays = make_inputs(case, seed)
        outs = _as_tuple(em.reference(list(ys), **arrays))
        with torch.no_grad():
            refs = _as_tuple(case.torch(**{k: _to_torch(a, case.upcast) for k, a in arrays.items()}))
        assert len(outs) == len(refs), f"{case.name}: {len(outs)} outputs, torch gives {len(refs)}"
        for i, (y, out, ref) in enumerate(zip(ys, outs, refs)):
            what = f"{case.name} seed {seed} output {i}"
            assert out.dtype == y.dtype.np, f"{what}: reference returned {out.dtype}, graph says {y.dtype.name}"
            ref = _torch_np(ref)
            if y.dtype.is_float:
                assert_close(out, ref, y.dtype.name, what, scale=case.atol_scale)
            else:
                assert out.shape == ref.shape, f"{what}: shape {out.shape} != torch {ref.shape}"
                assert np.array_equal(out, ref.astype(out.dtype)) and np.array_equal(out.astype(ref.dtype), ref), \
                    f"{what}: {y.dtype.name} values differ at {np.argwhere(out != ref)[:5].tolist()}"


@pytest.mark.parametrize("case", _params())
def test_op_dtype_matches_torch(case):
    """The output dtype is torch's on the same input dtypes (int64 results count as int32)."""
    ys = _build(case)
    arrays = make_inputs(case, 0)
    with torch.no_grad():
        try:
            refs = _as_tuple(case.torch(**{k: _to_torch(a, False) for k, a in arrays.items()}))
        except (RuntimeError, NotImplementedError) as e:  # an op torch lacks for half types on CPU
            if "not implemented" not in str(e).lower():
                raise
            pytest.skip(f"torch cannot run this case natively on CPU: {e}")
    for i, (y, r) in enumerate(zip(ys, refs)):
        assert y.dtype.name == _SAME_DTYPE[str(r.dtype)], \
            f"{case.name} output {i}: Ember gives {y.dtype.name}, torch gives {r.dtype}"
        assert tuple(y.shape) == tuple(r.shape), f"{case.name} output {i}: shape {y.shape} != torch {tuple(r.shape)}"


def test_registry_is_large_and_named():
    assert len(CASES) >= 150
    assert len({c.name for c in CASES}) == len(CASES)
    for c in CASES:
        for name, spec in c.inputs.items():
            assert name.isidentifier(), f"{c.name}: input name {name!r}"
            assert all(isinstance(s, int) and s >= 1 for s in spec.shape), f"{c.name}: shape {spec.shape}"


@pytest.mark.parametrize("case", [c for c in CASES if any(s.kind in ("normal", "positive", "unit")
                                                          for s in c.inputs.values())][:1] + CASES[::17],
                         ids=lambda c: c.name)
def test_make_inputs_fresh_nonzero_deterministic(case):
    a0, a0b, a1 = make_inputs(case, 0), make_inputs(case, 0), make_inputs(case, 1)
    for k, spec in case.inputs.items():
        assert a0[k].shape == tuple(spec.shape) and a0[k].dtype == em.dtypes.as_dtype(spec.dtype).np
        assert np.array_equal(a0[k], a0b[k])
        if spec.kind in ("normal", "positive", "unit"):
            assert np.all(a0[k] != 0), f"{case.name}: input {k} has zeros"
            if a0[k].size > 1:
                assert not np.array_equal(a0[k], a1[k]), f"{case.name}: seeds 0 and 1 give the same {k}"
