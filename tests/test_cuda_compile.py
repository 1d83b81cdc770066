"""CI without a GPU: every CUDA kernel the op suite generates must compile with NVRTC for sm_90
(pip's nvidia-cuda-nvrtc compiles to cubin without a driver), in every schedule mode it supports."""
import pytest

import ember as em
from ember.codegen import cuda as cg
from ember.kernel.lower import lower

pytest.importorskip("cuda.core")
op_cases = pytest.importorskip("tests.op_cases")

from ember.backends.cuda import compile_cuda  # noqa: E402


def _kernels(case):
    ts = {n: em.input(n, s.shape, s.dtype) for n, s in case.inputs.items()}
    y = case.ember(**ts)
    ys = list(y) if isinstance(y, (tuple, list)) else [y]
    return lower([t.node for t in ys]).kernels


def _modes(k):
    c = cg.canonical(k)
    if not c.stages:
        return [{"mode": "elementwise", "threads": 256, "vec": 8}]
    return [{"mode": m, "threads": 128, "vec": 8} for m in ("thread", "warp", "block")]


def test_all_op_kernels_compile_for_sm90():
    """One NVRTC module per mode over all op cases (batched: NVRTC costs ~0.1 s per module)."""
    by_mode: dict = {}
    for case in op_cases.CASES:
        for k, args in _kernels(case):
            for cfg in _modes(k):
                by_mode.setdefault(cfg["mode"], {})[k.key] = (k, cfg)
    assert by_mode, "no kernels generated"
    for mode, ks in by_mode.items():
        parts, seen = [cg.PRELUDE], set()
        for i, (k, cfg) in enumerate(ks.values()):
            kk = type(k)(f"{k.name}_{i}", k.buffers, k.dims, k.body)
            src, _ = cg.render_kernel(kk, cfg)
            parts.append(src)
        cubin = compile_cuda("\n\n".join(parts), "sm_90")
        assert len(cubin) > 1000, mode
