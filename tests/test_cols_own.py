"""cols mode's knob `own` (codegen/cuda_rows.py): each warp its own 32 x cvec outputs and the whole
short reduction, no partials in shared memory, the lane's outputs one vector store where contiguous.
A pooling window over channels-last pixels is the case it is for (ResNet-50's max pool). Rendered and
compiled here; run against the reference on the GPU (marked cuda)."""
import numpy as np
import pytest

import ember as em
from ember.codegen import cuda as cg
from ember.codegen.cuda_walks import cols_vec_ok, columns_contiguous
from ember.kernel.lower import lower
from ember.ops import conv as C
from tests.conftest import assert_close

POOLS = {"max": lambda t: C.max_pool2d(t, 3, 2, 1), "avg": lambda t: C.avg_pool2d(t, 3, 2, 1),
         "max-odd": lambda t: C.max_pool2d(t, 2, 1, 0)}


def _pool(kind, dtype, shape=(2, 15, 17, 40)):
    """The pool of a channels-last tensor (NHWC in, NHWC out: the channels innermost on both sides)."""
    x = em.input("x", shape, dtype)
    return x, POOLS[kind](x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)


def _reduction_kernel(y):
    ks = [k for k, _ in lower([y.node]).kernels if cg.canonical(k).stages]
    assert len(ks) == 1
    return ks[0]


def _own(cv):
    return {"mode": "cols", "threads": 128, "cvec": cv, "own": True}


@pytest.mark.parametrize("kind", sorted(POOLS))
@pytest.mark.parametrize("dtype,cv", [("bfloat16", 8), ("bfloat16", 4), ("float32", 4), ("float32", 2)])
def test_own_walks_the_window_in_vectors_and_stores_once(kind, dtype, cv):
    _, y = _pool(kind, dtype)
    k = _reduction_kernel(y)
    c = cg.canonical(k)
    assert columns_contiguous(k, c) and cols_vec_ok(k, c, cv) is None
    src = cg.render_kernel(k, _own(cv))[0]
    raw = {16: "uint4", 8: "uint2", 4: "unsigned int"}[cv * (2 if dtype == "bfloat16" else 4)]
    assert "__syncthreads" not in src and "__shared__" not in src  # (no partials to combine)
    assert f"{raw} o_;" in src and f"*reinterpret_cast<{raw}*>(&b0[" in src  # (one store of the lane's outputs)
    assert "#pragma unroll\n" in src  # (the 9 or 4 taps all in flight)


def test_own_stores_one_by_one_where_the_outputs_do_not_pack():
    """bf16 loads of 8 columns, float32 outputs: 32 bytes a lane, stored one output at a time."""
    x = em.input("x", (6, 5, 64), "bfloat16")
    k = _reduction_kernel(x.cast("float32").sum(1))
    src = cg.render_kernel(k, _own(8))[0]
    assert "o_;" not in src and "*reinterpret_cast<const uint4*>" in src


def test_the_default_takes_own_unless_told_not_to(monkeypatch):
    _, y = _pool("max", "bfloat16", (2, 64, 64, 64))
    k = _reduction_kernel(y)
    assert cg.default_config(k) == _own(8)
    monkeypatch.setenv("EMBER_COLS_OWN", "0")
    assert not cg.default_config(k).get("own")


def test_own_is_in_the_search_space():
    from ember.search.space import cuda_space
    _, y = _pool("max", "bfloat16")
    assert any(cfg.get("own") for cfg in cuda_space(_reduction_kernel(y), "fast"))


def test_own_compiles_for_sm90a():
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_cuda
    for kind, dtype, cv in (("avg", "bfloat16", 8), ("avg", "bfloat16", 2), ("max", "bfloat16", 2), ("max", "float32", 4)):
        _, y = _pool(kind, dtype)
        src = cg.render_kernel(_reduction_kernel(y), _own(cv))[0]
        assert len(compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")) > 0


@pytest.mark.cuda
@pytest.mark.parametrize("kind", sorted(POOLS))
@pytest.mark.parametrize("dtype,cv", [("bfloat16", 8), ("bfloat16", 2), ("float32", 4)])
def test_own_matches_the_reference(kind, dtype, cv):
    """Odd pixels, 40 channels (a partial last warp group), outputs poisoned, two seeds."""
    from ember.pipeline import build_program, get_target
    x, y = _pool(kind, dtype)
    lowered = lower([y.node])
    cfgs = [_own(cv) if cg.canonical(k).stages else cg.default_config(k) for k, _ in lowered.kernels]
    fn = build_program(lowered, get_target("cuda"), None, "single", configs=cfgs)
    fn.executor.poison = True
    for seed in (0, 1):
        v = np.random.default_rng(seed).standard_normal((2, 15, 17, 40)).astype(em.dtypes.as_dtype(dtype).np)
        assert_close(fn(x=v), em.reference(y, x=v), dtype, what=f"{kind} pool seed {seed}")


def test_an_integer_max_window_stays_rolled():
    """NVRTC 13.0 miscompiles a fully unrolled int32 max over negated loads (cuda_rows.py _stage_loop)."""
    _, y = _pool("max", "int32")
    src = cg.render_kernel(_reduction_kernel(y), _own(4))[0]
    assert "#pragma unroll 1\n" in src
