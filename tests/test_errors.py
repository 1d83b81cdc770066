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
