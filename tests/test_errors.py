"""Errors a user can hit: one line naming the problem, never an internal traceback (issue 18, item 10),
and the module structure of `ember/ops` (no import loops)."""
from __future__ import annotations

import ast
import pathlib

import ember


def _ops_imports() -> dict:
    """Sibling imports of each module of ember/ops, deferred (function-level) ones included."""
    root = pathlib.Path(ember.__file__).parent / "ops"
    names = {p.stem for p in root.glob("*.py")} - {"__init__"}
    edges = {}
    for n in names:
        tree = ast.parse((root / f"{n}.py").read_text())
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module in names:
                    deps.add(node.module)
                elif node.module is None:
                    deps |= {a.name for a in node.names if a.name in names}
        edges[n] = deps
    return edges


def test_ops_modules_have_no_import_loop():
    edges = _ops_imports()
    assert "movement" in edges["conv"]  # the walk sees imports at all
    state: dict = {}

    def visit(n, path):
        if state.get(n) == "done":
            return
        assert state.get(n) != "open", f"import loop in ember/ops: {' -> '.join(path + [n])}"
        state[n] = "open"
        for d in sorted(edges[n]):
            visit(d, path + [n])
        state[n] = "done"

    for n in sorted(edges):
        visit(n, [])


# --------------------------------------------------------------------------- float64 inputs
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import ember as em  # noqa: E402
from ember.arrays import InputError  # noqa: E402


def _affine():
    x = em.input("x", (3, 5))
    return x, x * 2.0 + 1.0


def test_float64_input_to_a_float32_program_is_refused_in_one_line():
    _, y = _affine()
    fn = em.compile(y, device="cpu")
    x64 = np.random.default_rng(0).standard_normal((3, 5))
    with pytest.raises(InputError) as e:
        fn(x=x64)
    msg = str(e.value)
    assert "\n" not in msg and "'x'" in msg and "float64" in msg and "float32" in msg and "cast_inputs" in msg


@pytest.mark.parametrize("seed", [0, 1])
def test_cast_inputs_converts_and_survives_save_load(tmp_path, seed):
    _, y = _affine()
    fn = em.compile(y, device="cpu", cast_inputs=True)
    x64 = np.random.default_rng(seed).standard_normal((3, 5))
    want = em.reference(y, x=x64.astype(np.float32)).astype(np.float32)
    np.testing.assert_allclose(fn(x=x64), want, rtol=1e-6)
    fn.save(tmp_path / "p.ember")
    again = em.Program.load(tmp_path / "p.ember")
    assert again.cast_inputs
    np.testing.assert_allclose(again(x=x64), want, rtol=1e-6)


def test_narrower_and_integer_inputs_still_convert():
    """Widening (float16 -> float32) and integer data into a float graph lose nothing: accepted."""
    _, y = _affine()
    fn = em.compile(y, device="cpu")
    x16 = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float16)
    np.testing.assert_allclose(fn(x=x16), x16.astype(np.float32) * 2 + 1, rtol=1e-6)
    xi = np.arange(15, dtype=np.int32).reshape(3, 5)
    np.testing.assert_allclose(fn(x=xi), xi * 2.0 + 1.0)


def test_reference_keeps_converting_float64():
    """The reference is the oracle (float64 inside): it still accepts float64 data."""
    _, y = _affine()
    x64 = np.random.default_rng(3).standard_normal((3, 5))
    np.testing.assert_allclose(em.reference(y, x=x64), x64.astype(np.float32).astype(np.float64) * 2 + 1)


# --------------------------------------------------------------------------- integer division by zero


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("op", ["floordiv", "mod", "fmod", "rfloordiv"])
def test_integer_division_by_a_constant_zero_is_refused_at_build_time(op):
    x = em.input("x", (5,), em.int32)
    build = {"floordiv": lambda: x // 0, "mod": lambda: x % 0, "fmod": lambda: x.fmod(0),
             "rfloordiv": lambda: 7 // em.tensor(np.array([1, 0, 2], np.int32))}[op]
    with pytest.raises(ZeroDivisionError, match="integer division or modulo by zero"):
        build()


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("op", ["floordiv", "mod"])
def test_reference_raises_on_a_zero_integer_divisor_like_torch(seed, op):
    torch = _torch()
    rng = np.random.default_rng(seed)
    xv = rng.integers(-50, 50, 7).astype(np.int32)
    dv = rng.integers(1, 9, 7).astype(np.int32) * rng.choice([-1, 1], 7).astype(np.int32)
    x, d = em.input("x", (7,), em.int32), em.input("d", (7,), em.int32)
    y = x // d if op == "floordiv" else x % d
    tf = (lambda a, b: a // b) if op == "floordiv" else (lambda a, b: a % b)
    np.testing.assert_array_equal(em.reference(y, x=xv, d=dv), tf(torch.tensor(xv), torch.tensor(dv)).numpy())
    dv[rng.integers(7)] = 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        tf(torch.tensor(xv), torch.tensor(dv))
    with pytest.raises(ZeroDivisionError, match="integer division or modulo by zero"):
        em.reference(y, x=xv, d=dv)


def test_float_division_by_zero_still_gives_inf_and_nan():
    x = em.input("x", (3,), em.float32)
    out = em.reference(x // 0.0, x=np.array([1.0, -1.0, 0.0], np.float32))
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2])


def test_compiled_integer_division_by_zero_gives_zero():
    """Documented: a compiled kernel cannot raise cheaply; a zero divisor in the data gives 0."""
    x, d = em.input("x", (4,), em.int32), em.input("d", (4,), em.int32)
    fn = em.compile({"q": x // d, "r": x % d}, device="cpu")
    out = fn(x=np.array([5, 6, -7, 8], np.int32), d=np.array([2, 0, 2, 0], np.int32))
    np.testing.assert_array_equal(out["q"], [2, 0, -4, 0])
    np.testing.assert_array_equal(out["r"], [1, 0, 1, 0])


# --------------------------------------------------------------------------- max over an empty axis
@pytest.mark.parametrize("what, build", [
    ("max", lambda z: z.max(0)), ("max", lambda z: z.max()), ("min", lambda z: z.min(dim=0)),
    ("argmax", lambda z: z.argmax(0)), ("argmin", lambda z: z.argmin()), ("max", lambda z: z.amax(0)),
])
def test_max_over_an_empty_axis_is_refused_like_torch(what, build):
    torch = _torch()
    z = em.input("z", (0, 3))
    with pytest.raises(em.ShapeError) as e:
        build(z)
    msg = str(e.value)
    assert msg.startswith(f"{what}(): expected reduction dim 0 to have non-zero size") and "\n" not in msg
    with pytest.raises((RuntimeError, IndexError)):
        build(torch.zeros(0, 3))


def test_max_over_a_non_empty_axis_of_an_empty_tensor_is_empty():
    z = em.input("z", (0, 3))
    assert z.max(1).shape == (0,) and z.argmax(1).shape == (0,)
    x = em.input("x", (2, 3))  # logsumexp over an empty axis stays -inf, as torch (it uses MAX inside)
    out = em.reference(z.logsumexp(0) + x[0], z=np.zeros((0, 3), np.float32), x=np.ones((2, 3), np.float32))
    assert np.all(out == -np.inf)


# --------------------------------------------------------------------------- sums beyond float32's range
@pytest.mark.parametrize("shape, axis", [((3 * 2**24 + 1,), None), ((2, 2**24 + 3), 1)])
def test_sum_longer_than_float32_counts_is_exact(shape, axis):
    """A float32 accumulator adding ones stops at 2**24: sums longer than that are split so no
    accumulator adds more terms, and the chunks are added in float64 (issue 18 item 10)."""
    x = em.input("x", shape)
    fn = em.compile(x.sum(axis), device="cpu")
    out = np.asarray(fn(x=np.ones(shape, np.float32)))
    assert np.all(out == np.float32(shape[-1])), (out, shape[-1])


def test_long_float32_sum_is_split_into_bounded_chunks():
    from ember import graph as g
    from ember.kernel.split import F32_EXACT_TERMS, split_long_reductions
    for L in (10**12, 5 * 2**24 + 11, 2**24 + 1):
        x = em.input("x", (L,))
        (out,) = split_long_reductions([x.sum().node])
        sums = [n for n in g.toposort([out]) if n.op == g.SUM]
        for s in sums:
            terms = int(np.prod([s.srcs[0].shape[a].value for a in s.arg]))
            assert terms <= F32_EXACT_TERMS or s.dtype == em.float64, (L, s, terms)
        assert any(s.dtype == em.float64 for s in sums), L
    x = em.input("x", (3, 1000))  # short: left as it was
    node = x.sum(1).node
    assert split_long_reductions([node]) == [node]


def test_split_sum_renders_for_cuda():
    """The float64 sum of the chunks compiles with NVRTC (no GPU needed)."""
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_cuda
    from ember.codegen import cuda as cg
    from ember.kernel.lower import lower
    x = em.input("x", (5 * 2**24 + 11,))
    sources = [cg.render_kernel(k)[0] for k, _ in lower([x.sum().node]).kernels]
    assert any("double" in src for src in sources)  # the chunks' float64 sum
    for src in sources:
        assert len(compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")) > 0


# --------------------------------------------------------------------------- bench messages
def test_bench_table_flags_a_case_faster_than_its_floor():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "bench" / "run.py"
    spec = importlib.util.spec_from_file_location("bench_run_for_test", path)
    run = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(run)
    except ImportError as e:  # bench/suite.py needs torch
        pytest.skip(str(e))
    base = {"correct": True, "kernels": 1, "ember_us": 10.0, "eager_us": 12.0, "speedup_vs_eager": 1.2}
    recs = [dict(base, name="under", frac_of_floor=0.5, above_floor=False),
            dict(base, name="over", frac_of_floor=1.3, above_floor=True)]
    text = run.table(recs)
    under, over = (next(line for line in text.splitlines() if line.startswith(n)) for n in ("under", "over"))
    assert under.rstrip().endswith("50.0%") and over.rstrip().endswith("130.0%!")
    assert "! faster than the floor" in text
