"""Shared test configuration: seeds, tolerances (docs/architecture.md), the cuda marker's skip."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from ember.backends.target import available  # noqa: E402

try:  # property tests: a fixed example sequence in CI (a failure reproduces from the same commit);
    # random exploration elsewhere (EMBER_FUZZ_EXAMPLES widens it)
    from hypothesis import settings as _hyp_settings
    _hyp_settings.register_profile("ci", derandomize=True, print_blob=True)
    if os.environ.get("CI"):
        _hyp_settings.load_profile("ci")
except ImportError:  # pragma: no cover
    pass

HAVE_CUDA = available("cuda")


def pytest_collection_modifyitems(config, items):
    if HAVE_CUDA:
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


SEEDS = (0, 1, 2)


def tolerance(dtype_name: str) -> float:
    return 1e-2 if dtype_name in ("float16", "bfloat16") else 1e-4


def assert_close(out, ref, dtype_name: str = "float32", what: str = "", scale: float = 1.0):
    """docs/architecture.md: max|out - ref| <= tol + tol * max|ref| (tol 1e-4 f32, 1e-2 f16/bf16); NaN never passes
    unless the reference has NaN at the same place. `scale` widens tol for the rare op that needs it
    (each such use says why)."""
    out = np.asarray(out, dtype=np.float64) if np.asarray(out).dtype.kind != "b" else np.asarray(out)
    ref = np.asarray(ref, dtype=np.float64) if np.asarray(ref).dtype.kind != "b" else np.asarray(ref)
    assert out.shape == ref.shape, f"{what}: shape {out.shape} != reference {ref.shape}"
    if ref.dtype.kind == "b" or out.dtype.kind == "b":
        assert np.array_equal(out, ref), f"{what}: boolean outputs differ"
        return
    nan_ref, nan_out = np.isnan(ref), np.isnan(out)
    assert np.array_equal(nan_ref, nan_out), f"{what}: NaN pattern differs ({nan_out.sum()} vs {nan_ref.sum()})"
    inf_ref = np.isinf(ref)
    assert np.array_equal(out[inf_ref], ref[inf_ref]), f"{what}: infinities differ"
    fin = ~(nan_ref | inf_ref)
    if not fin.any():
        return
    tol = tolerance(dtype_name) * scale
    err = np.max(np.abs(out[fin] - ref[fin]))
    scale = np.max(np.abs(ref[fin]))
    assert err <= tol + tol * scale, f"{what}: max|out-ref| = {err:.3g} > {tol} + {tol}*{scale:.3g}"
