"""A window's interior (kernel/interior.py, knob `interior`): the condition under which no guard of any tap
can fail, checked exact against every tap on random output points (CPU); the guarded and unguarded bodies
rendered and compiled for sm_90a (CI); outputs against the reference on the GPU, odd sizes, pools and convs."""
import itertools

import numpy as np
import pytest

import ember as em
import ember.symbolic as sm
from ember import pipeline
from ember.codegen import cuda as cg
from ember.kernel.interior import _guards, interior_form
from ember.ops.conv import _pool

H100 = pipeline.get_target("h100")


def _depthwise(shape, padding, dilation=1, stride=1):
    C = shape[1]
    w = np.random.default_rng(3).standard_normal((C, 1, 3, 3)).astype(np.float32)
    return em.conv2d(em.input("x", shape), em.tensor(w), None, padding=padding, dilation=dilation, stride=stride, groups=C)


CASES = {  # name: (graph, input shape)
    "maxpool1d_dilated": (lambda: em.max_pool1d(em.input("x", (3, 5, 3001)), 8, stride=1, padding=4, dilation=3), (3, 5, 3001)),
    "maxpool3d_strided": (lambda: _pool(em.input("x", (1, 1, 165, 167, 163)), 3, 2, 1, 3, False, 3, "max"),
                          (1, 1, 165, 167, 163)),  # (enough outputs for thread mode)
    "avgpool2d": (lambda: em.avg_pool2d(em.input("x", (2, 3, 67, 65)), 3, stride=1, padding=1), (2, 3, 67, 65)),
    "avgpool2d_no_pad_count": (lambda: em.avg_pool2d(em.input("x", (2, 3, 67, 65)), 3, stride=1, padding=1,
                                                     count_include_pad=False), (2, 3, 67, 65)),
    "depthwise_d2": (lambda: _depthwise((2, 4, 61, 59), padding=2, dilation=2), (2, 4, 61, 59)),
}


def _kernels(name, target=H100):
    y = CASES[name][0]()
    return y, [k for k, _ in pipeline.lower([y.node], None, target).kernels if cg.canonical(k).stages]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_interior_condition_is_exact(name):
    _, ks = _kernels(name)
    for k in ks:
        c = cg.canonical(k)
        form = interior_form(c)
        if form is None:
            continue
        guards = _guards([s.update.value for s in c.stages] + [c.store.value])
        taps = [(v, sm.sym(e).value) for s in c.stages for v, e in s.loops]
        rng = np.random.default_rng(0)
        inside = 0
        for _ in range(300):
            p = {v: int(rng.integers(0, sm.sym(e).value)) for v, e in c.outer}
            every = all(sm.evaluate(g, {**p, **dict(zip([v for v, _ in taps], t))})
                        for t in itertools.product(*(range(n) for _, n in taps)) for g in guards)
            assert bool(sm.evaluate(form[0], p)) == every, (name, p)
            inside += every
        assert 0 < inside < 300  # (both branches reached by the points drawn)


def test_no_interior_without_guards():
    (k,) = [kk for kk, _ in pipeline.lower([em.input("x", (64, 32)).sum(axis=1).node], None, H100).kernels]
    assert interior_form(cg.canonical(k)) is None


def _configs(name, target):
    y, ks = _kernels(name, target)
    lowered = pipeline.lower([y.node], None, target)
    out = []
    for k, _ in lowered.kernels:
        d = cg.default_config(k, target)
        out.append(dict(d, interior=True) if d.get("mode") == "thread" and interior_form(cg.canonical(k)) else d)
    return y, lowered, out


def test_interior_renders_two_bodies_and_compiles():
    pytest.importorskip("cuda.core")
    from tests.nvrtc_batch import compile_programs
    progs = []
    for name in sorted(CASES):
        y, lowered, cfgs = _configs(name, H100)
        assert any(c.get("interior") for c in cfgs), name
        prog = pipeline.build_program(lowered, "h100", None, "single", configs=cfgs)
        assert "} else {" in prog.source
        progs.append((prog.source, name))
    failures = compile_programs(progs)
    assert not failures, "\n".join(failures[:3])


@pytest.mark.cuda
@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_interior_equals_the_reference(name):
    target = pipeline.get_target("cuda")
    y, lowered, cfgs = _configs(name, target)
    prog = pipeline.build_program(lowered, "cuda", None, "single", configs=cfgs)
    prog.executor.poison = True
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal(CASES[name][1]).astype(np.float32)
        np.testing.assert_allclose(np.asarray(prog(x=x)), np.asarray(em.reference([y], x=x)[0]), rtol=1e-5, atol=1e-5)
