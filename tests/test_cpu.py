"""em.compile(..., device="cpu"): end-to-end programs against the reference."""
import os

import numpy as np
import pytest

import ember as em
from ember.backends.cpu import CompileError
from ember.runtime.memory import plan_memory
from tests.conftest import assert_close


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def check(y, seeds=(0, 1), dtype="float32", **shapes):
    fn = em.compile(y, device="cpu")
    for s in seeds:
        ins = {k: rnd(*v, seed=s + i) for i, (k, v) in enumerate(shapes.items())}
        assert_close(fn(**ins), em.reference(y, **ins), dtype)
    return fn


def test_mlp_matches_reference():
    x = em.input("x", ("B", 19))
    w1, w2 = em.tensor(rnd(19, 33)), em.tensor(rnd(33, 7, seed=3))
    y = ((x @ w1).relu() @ w2).softmax(-1)
    check(y, x=(5, 19))


def test_symbolic_dims_rebind_without_recompiling():
    x = em.input("x", ("B", "T", 8))
    y = (x * 2).sum(-1).softmax(-1)
    fn = em.compile(y, device="cpu")
    lib = fn.executor.lib
    for b, t in [(1, 1), (3, 5), (17, 2)]:
        xv = rnd(b, t, 8, seed=b)
        assert_close(fn(x=xv), em.reference(y, x=xv))
    assert fn.executor.lib is lib and len(fn._plans) == 3


def test_input_errors_are_clear():
    x = em.input("x", ("B", 8))
    fn = em.compile(x.sum(1), device="cpu")
    with pytest.raises(em.InputError, match="missing input"):
        fn()
    with pytest.raises(em.InputError, match="shape"):
        fn(x=rnd(3, 9))
    with pytest.raises(em.InputError, match="unexpected"):
        fn(x=rnd(3, 8), y=rnd(3, 8))


def test_save_and_load_roundtrip(tmp_path):
    x = em.input("x", ("B", 11))
    w = em.tensor(rnd(11, 4), name="w")
    y = (x @ w).tanh()
    fn = em.compile(y, device="cpu")
    p = tmp_path / "prog.ember"
    fn.save(p)
    g = em.Program.load(p)
    xv = rnd(6, 11, seed=9)
    np.testing.assert_array_equal(g(x=xv), fn(x=xv))


def test_multiple_outputs_tuple_dict_and_copies():
    x = em.input("x", (4, 6))
    s, m = x.sum(1), x.max(1)
    fn = em.compile((s, m, x, s), device="cpu")
    xv = rnd(4, 6)
    out = fn(x=xv)
    assert isinstance(out, tuple) and len(out) == 4
    assert_close(out[0], xv.sum(1))
    assert_close(out[1], xv.max(1))
    np.testing.assert_array_equal(out[2], xv)
    np.testing.assert_array_equal(out[3], out[0])
    d = em.compile({"total": s, "peak": m}, device="cpu")(x=xv)
    assert set(d) == {"total", "peak"}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_io(dtype):
    x = em.input("x", (5, 40), dtype)
    y = em.layer_norm(x, 40) * 3 + x
    fn = em.compile(y, device="cpu")
    xv = rnd(5, 40).astype(em.dtypes.as_dtype(dtype).np)
    out = fn(x=xv)
    assert out.dtype == em.dtypes.as_dtype(dtype).np
    assert_close(out, em.reference(y, x=xv), dtype)


def test_integer_bool_and_gather_outputs():
    x = em.input("x", (6, 9))
    ids = em.input("ids", (4,), em.int32)
    table = em.tensor(rnd(10, 3))
    fn = em.compile((x.argmax(1), x > 0, em.embedding(ids, table)), device="cpu")
    xv, iv = rnd(6, 9), np.array([0, 9, 3, 3], np.int32)
    am, pos, emb = fn(x=xv, ids=iv)
    np.testing.assert_array_equal(am, xv.argmax(1))
    np.testing.assert_array_equal(pos, xv > 0)
    assert_close(emb, table.node.arg.array[iv])


def test_poisoned_outputs_are_fully_written():
    x = em.input("x", (3, 7, 5))
    y = x.permute(2, 0, 1).pad((1, 2)) * 2
    fn = em.compile(y, device="cpu")
    fn.executor.poison = True
    xv = rnd(3, 7, 5)
    assert_close(fn(x=xv), em.reference(y, x=xv))


def test_memory_planner_reuses_space():
    sizes = {"a": 100, "b": 100, "c": 100}
    plan = plan_memory(sizes, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    assert plan.offsets["a"] == plan.offsets["c"] != plan.offsets["b"]
    assert plan.arena_bytes < plan.naive_bytes


def test_program_reports_kernels_and_memory():
    x = em.input("x", (64, 128))
    y = (x.softmax(-1) @ em.tensor(rnd(128, 32))).sum(0)
    fn = em.compile(y, device="cpu")
    fn.profile(x=rnd(64, 128))
    rep = fn.report()
    assert "kernel" in rep and "memory:" in rep and "us" in rep


def test_compile_error_names_saved_source(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    import ember.codegen.c as cgen
    monkeypatch.setattr(cgen, "PRELUDE", cgen.PRELUDE + "\nthis is not C;\n")
    x = em.input("x", (3,))
    with pytest.raises(CompileError) as e:
        em.compile(x + 1, device="cpu")
    path = str(e.value).split("source saved to ")[1].split(")")[0]
    assert os.path.exists(path) and "this is not C" in open(path).read()


def test_cli_compile_and_inspect(tmp_path, capsys):
    from ember.cli import main
    x = em.input("x", ("B", 5))
    y = (x * 2).softmax(-1)
    g = tmp_path / "g.json"
    em.save_graph(g, {"y": y})
    out = tmp_path / "p.ember"
    assert main(["compile", str(g), "-o", str(out), "--device", "cpu"]) == 0
    prog = em.Program.load(out)
    xv = rnd(3, 5)
    assert_close(prog(x=xv)["y"], em.reference(y, x=xv))
    assert main(["inspect", str(out)]) == 0
    assert "kernel" in capsys.readouterr().out


def test_debug_levels_and_dot(capsys):
    x = em.input("x", (3, 4))
    y = x.softmax(-1)
    em.compile(y, device="cpu", debug=3)
    out = capsys.readouterr().out
    assert "input()" in out and "for o0 in parallel" in out and "void k0_" in out
    dot = em.graph.to_dot([y.node])
    assert dot.startswith("digraph ember") and "->" in dot


def test_integer_remainder_by_zero_or_minus_one_does_not_trap():
    """C's % traps (SIGFPE) on a zero divisor and on INT_MIN % -1: the kernels give 0 there instead
    of killing the process (the reference, like torch, raises ZeroDivisionError on a zero divisor)."""
    a = em.input("a", (6,), "int32")
    b = em.input("b", (6,), "int32")
    y = (a.fmod(b), a % b, a // b)
    fn = em.compile(y, device="cpu")
    av = np.array([5, -7, -2 ** 31, 9, 2 ** 31 - 1, 0], np.int32)
    bv = np.array([0, 0, -1, -1, 3, 0], np.int32)
    with pytest.raises(ZeroDivisionError):
        em.reference(y, a=av, b=bv)
    zero = bv == 0
    for got, ref in zip(fn(a=av, b=bv), em.reference(y, a=av, b=np.where(zero, 1, bv).astype(np.int32))):
        np.testing.assert_array_equal(got[zero], 0)
        np.testing.assert_array_equal(got[[3, 4]], ref[[3, 4]])
    assert fn(a=av, b=bv)[0][2] == 0  # INT_MIN fmod -1


@pytest.mark.parametrize("case", ["depthwise3x3", "depthwise5x5_stride2", "maxpool3x3_s2", "avgpool2x2"])
def test_window_form_vectorises_short_reductions_across_outputs(case):
    """Depthwise convolutions and pooling windows take the window form (codegen/c_window.py): the
    taps outside, a block of outputs innermost; odd sizes leave a partial last block, padding
    guards become masks. Against the reference, two seeds."""
    from ember.codegen import c as cgen
    from ember.kernel.lower import lower
    shapes = {"depthwise3x3": (2, 12, 19, 23), "depthwise5x5_stride2": (1, 8, 21, 37),
              "maxpool3x3_s2": (2, 6, 33, 35), "avgpool2x2": (1, 5, 18, 70)}
    x = em.input("x", shapes[case])
    C = shapes[case][1]
    if case == "depthwise3x3":
        y = em.conv2d(x, em.input("w", (C, 1, 3, 3)), padding=1, groups=C)
    elif case == "depthwise5x5_stride2":
        y = em.conv2d(x, em.input("w", (C, 1, 5, 5)), padding=2, stride=2, groups=C)
    elif case == "maxpool3x3_s2":
        y = em.max_pool2d(x, 3, 2, 1)
    else:
        y = em.avg_pool2d(x, 2, 2)
    assert any(cgen.default_config(k)["form"] == "window" for k, _ in lower([y.node]).kernels)
    fn = em.compile(y, device="cpu")
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        feed = {"x": rng.standard_normal(shapes[case]).astype(np.float32)}
        if "depthwise" in case:
            feed["w"] = rng.standard_normal((C, 1, 5 if "5x5" in case else 3, 5 if "5x5" in case else 3)).astype(np.float32)
        np.testing.assert_allclose(fn(**feed), em.reference(y, **feed), rtol=1e-5, atol=1e-5)
