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
