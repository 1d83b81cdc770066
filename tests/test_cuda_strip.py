"""Thread mode's output strips (codegen/cuda_strip.py, knob `strip`): V neighbouring outputs a thread, the
loads they share issued once. Which loop is stripped (CPU), the source rendered and compiled for sm_90a (CI),
and the outputs against the reference on the GPU for depthwise convs and pools in NCHW, odd sizes."""
import numpy as np
import pytest

import ember as em
import ember.symbolic as sm
from ember import pipeline
from ember.codegen import cuda as cg
from ember.codegen.cuda_strip import strip_plan

H100 = pipeline.get_target("h100")


def _windowed(k):
    return [kk for kk, _ in pipeline.lower([k.node], None, H100).kernels if cg.canonical(kk).stages]


def _depthwise(shape, stride=1, padding=1, dilation=1, seed=0):
    N, C, H, W = shape
    w = np.random.default_rng(seed + 7).standard_normal((C, 1, 3, 3)).astype(np.float32)
    b = np.random.default_rng(seed + 8).standard_normal(C).astype(np.float32)
    x = em.input("x", shape)
    return em.conv2d(x, em.tensor(w), em.tensor(b), stride=stride, padding=padding, dilation=dilation, groups=C)


CASES = {
    "depthwise": lambda: _depthwise((2, 5, 20, 13)),
    "depthwise_s2": lambda: _depthwise((1, 3, 24, 17), stride=2),
    "depthwise_d2": lambda: _depthwise((1, 4, 16, 11), padding=2, dilation=2),
    "avgpool": lambda: em.avg_pool2d(em.input("x", (2, 3, 16, 15)), 3, stride=1, padding=1),
    "maxpool_s2": lambda: em.max_pool2d(em.input("x", (2, 3, 16, 18)), 3, stride=2, padding=1),
    # a batch 4 divides and rows 4 do not: knob `sfewest` strips the rows, a remainder of 2 (real KB 82's shape)
    "depthwise_b8": lambda: _depthwise((8, 2, 22, 13)),
}
X_SHAPES = {"depthwise": (2, 5, 20, 13), "depthwise_s2": (1, 3, 24, 17), "depthwise_d2": (1, 4, 16, 11),
            "avgpool": (2, 3, 16, 15), "maxpool_s2": (2, 3, 16, 18), "depthwise_b8": (8, 2, 22, 13)}


def test_strip_runs_along_the_rows_of_a_depthwise_window():
    (k,), = [_windowed(_depthwise((2, 5, 20, 13)))]
    c = cg.canonical(k)
    var, ext = strip_plan(k, c, 4)
    assert ext == 20 and var == c.outer[-2][0]  # the rows (H): W = 13 is not divisible, and rows share 2 of 3
    # 3 divides no extent: the rows again, their last strip the remainder's 2 outputs
    assert strip_plan(k, c, 3) == (c.outer[-2][0], 20)


def test_sfewest_takes_the_rows_a_remainder_where_the_default_takes_the_batch():
    (k,) = _windowed(CASES["depthwise_b8"]())
    c = cg.canonical(k)
    assert strip_plan(k, c, 4) == (c.outer[0][0], 8)  # the batch: 4 divide it, the weights shared
    assert strip_plan(k, c, 4, fewest=True) == (c.outer[-2][0], 22)  # the rows share 2 of 3 taps' rows
    from ember.search.space import cuda_space
    assert {"mode": "thread", "threads": 128, "vec": 1, "strip": 4, "sfewest": True} in cuda_space(k, "fast", H100)


def test_no_strip_where_outputs_share_no_loads():
    x = em.input("x", (64, 32))
    (k,) = _windowed(em.sum(x, axis=1))
    assert strip_plan(k, cg.canonical(k), 4) is None
    with pytest.raises(cg.UnsupportedKernel):
        cg.render_kernel(k, {"mode": "thread", "threads": 128, "vec": 1, "strip": 4}, H100)


def _prog(name, V, device):
    y = CASES[name]()
    lowered = pipeline.lower([y.node], None, pipeline.get_target(device))
    cfgs = []
    fewest = name == "depthwise_b8"
    for k, _ in lowered.kernels:
        c = cg.canonical(k)
        cfgs.append({"mode": "thread", "threads": 128, "vec": 1, "strip": V, **({"sfewest": True} if fewest else {})}
                    if c.stages and strip_plan(k, c, V) else cg.default_config(k, pipeline.get_target(device)))
    if not any(c.get("strip") for c in cfgs):
        assert name.endswith("_s2") and V in (2, 3), name  # stride 2: two outputs share one row of three, under a quarter
        pytest.skip("two strided outputs share too little")
    return y, pipeline.build_program(lowered, device, None, "single", configs=cfgs)


def _plans():
    for name in sorted(CASES):
        for V in (2, 3, 4):  # (3 divides none of the extents: a remainder strip)
            if not (name.endswith("_s2") and V in (2, 3)):  # (two or three strided outputs share too little: no strip)
                yield name, V


def test_strip_renders_and_compiles():
    pytest.importorskip("cuda.core")
    from tests.nvrtc_batch import compile_programs
    progs = [(_prog(name, V, "h100")[1].source, (name, V)) for name, V in _plans()]
    failures = compile_programs(progs)  # (a few kernels a module, in threads: tests/nvrtc_batch.py)
    assert not failures, "\n".join(failures[:3])


def test_the_search_offers_strips():
    from ember.search.space import cuda_space
    (k,) = _windowed(_depthwise((2, 5, 20, 13)))
    assert {"mode": "thread", "threads": 128, "vec": 1, "strip": 4} in cuda_space(k, "fast", H100)


@pytest.mark.cuda
@pytest.mark.parametrize("name,V", list(_plans()))
def test_cuda_strip_equals_the_reference(name, V):
    y, prog = _prog(name, V, "cuda")
    prog.executor.poison = True
    x_shape = X_SHAPES[name]
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal(x_shape).astype(np.float32)
        np.testing.assert_allclose(np.asarray(prog(x=x)), np.asarray(em.reference([y], x=x)[0]), rtol=1e-5, atol=1e-5)


def test_the_default_strips_4_where_4_share_else_2(monkeypatch):
    from ember.codegen import cuda_thread_window
    (k,) = _windowed(_depthwise((2, 5, 20, 13)))
    assert cg.default_config(k, H100)["strip"] == 4
    (k2,) = _windowed(_depthwise((2, 5, 10, 13)))  # rows 10: 4 do not divide them (a last strip of 2)
    assert cg.default_config(k2, H100)["strip"] == 4
    (k3,) = _windowed(_depthwise((2, 5, 6, 7)))  # 4 need at least 8 outputs along a loop, 2 do not
    assert cg.default_config(k3, H100)["strip"] == 2
    monkeypatch.setattr(cuda_thread_window, "THREAD_STRIP", 0)
    assert "strip" not in cg.default_config(k, H100)


# cols mode's `own` form with knob `pstrip`: a channels-last depthwise conv's lanes take 4 channels each and
# P neighbouring pixels (codegen/cuda_strip.py render_cols_strip)
NHWC = (2, 12, 10, 64)


def _depthwise_nhwc(seed=0, pool=False):
    x = em.input("x", NHWC)
    if pool:
        return em.max_pool2d(x.permute(0, 3, 1, 2), 3, stride=1, padding=1).permute(0, 2, 3, 1)
    w = np.random.default_rng(seed + 3).standard_normal((3, 3, 1, NHWC[3])).astype(np.float32)  # stored channels-last
    return em.conv2d(x.permute(0, 3, 1, 2), em.tensor(w).permute(3, 2, 0, 1), padding=1, groups=NHWC[3]).permute(0, 2, 3, 1)


def _cols_prog(y, P, device):
    lowered = pipeline.lower([y.node], None, pipeline.get_target(device))
    cfgs = [{"mode": "cols", "threads": 128, "cvec": 4, "own": True, "pstrip": P} if cg.canonical(k).stages
            else cg.default_config(k, pipeline.get_target(device)) for k, _ in lowered.kernels]
    return pipeline.build_program(lowered, device, None, "single", configs=cfgs)


def test_cols_strip_shares_the_pixels_vector_loads():
    import re
    (k,) = _windowed(_depthwise_nhwc())
    c = cg.canonical(k)
    assert strip_plan(k, c, 4, exclude=c.outer[-1][0])[0] != c.outer[-1][0]
    own = {"mode": "cols", "threads": 128, "cvec": 4, "own": True}
    loads = {P: len(re.findall(r"const uint4 g\d+ =", cg.render_kernel(k, dict(own, pstrip=P) if P > 1 else own, H100)[0]))
             for P in (1, 2, 4)}
    assert loads == {1: 2, 2: 12 + 9, 4: 18 + 9}  # (rolled: 1 input + 1 weight a tap; 2 / 4 rows: 4 / 6 x 3 inputs + 9 weights)
    assert dict(own, pstrip=4) in __import__("ember.search.space", fromlist=["cuda_space"]).cuda_space(k, "fast", H100)


def test_cols_strip_renders_and_compiles():
    pytest.importorskip("cuda.core")
    from tests.nvrtc_batch import compile_programs
    progs = [(_cols_prog(_depthwise_nhwc(pool=pool), P, "h100").source, (pool, P)) for pool in (False, True) for P in (2, 4)]
    failures = compile_programs(progs)
    assert not failures, "\n".join(failures[:3])


@pytest.mark.cuda
@pytest.mark.parametrize("P", [2, 4])
@pytest.mark.parametrize("pool", [False, True])
def test_cuda_cols_strip_equals_the_reference(P, pool):
    y = _depthwise_nhwc(pool=pool)
    prog = _cols_prog(y, P, "cuda")
    prog.executor.poison = True
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal(NHWC).astype(np.float32)
        np.testing.assert_allclose(np.asarray(prog(x=x)), np.asarray(em.reference([y], x=x)[0]), rtol=1e-5, atol=1e-5)


# knob `walk` = "loads" (cuda_walks.loads_walk): a depthwise conv over NCHW storing channels-last (real KernelBench
# 86's, before its pointwise conv) has its channels innermost; walked, its lanes run along the pixels
def _channels_last_depthwise():
    return _depthwise((2, 8, 40, 36)).permute(0, 2, 3, 1)


def test_walk_puts_the_loads_contiguous_axis_innermost():
    from ember.codegen.cuda_walks import loads_walk
    (k,) = _windowed(_channels_last_depthwise())
    c = cg.canonical(k)
    assert sm.sym(c.outer[-1][1]).value == 8  # (the channels, innermost as stored)
    walked = loads_walk(c.outer, [s.update.value for s in c.stages])
    assert walked[-1] == c.outer[-2] and sorted(walked) == sorted(c.outer)  # the pixels' column, a permutation
    (k2,) = _windowed(_depthwise((2, 5, 20, 13)))  # NCHW stored: already walking its loads
    c2 = cg.canonical(k2)
    assert loads_walk(c2.outer, [s.update.value for s in c2.stages]) == c2.outer


def _walk_prog(device):
    y = _channels_last_depthwise()
    target = pipeline.get_target(device)
    lowered = pipeline.lower([y.node], None, target)
    cfgs = [dict(cg.default_config(k, target), walk="loads") if cg.canonical(k).stages else cg.default_config(k, target)
            for k, _ in lowered.kernels]
    return y, pipeline.build_program(lowered, device, None, "single", configs=cfgs)


def test_walk_renders_and_compiles():
    pytest.importorskip("cuda.core")
    from tests.nvrtc_batch import compile_programs
    assert not compile_programs([(_walk_prog("h100")[1].source, "walk")])


@pytest.mark.cuda
def test_cuda_walked_strip_equals_the_reference():
    y, prog = _walk_prog("cuda")
    prog.executor.poison = True
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal((2, 8, 40, 36)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(prog(x=x)), np.asarray(em.reference([y], x=x)[0]), rtol=1e-5, atol=1e-5)
