"""The linters CI runs, as tests (so the README's one test command runs them): ruff over the
repository (pyproject.toml's [tool.ruff]) and mypy over the modules pyproject.toml's [tool.mypy]
lists. Each is skipped where its package is not installed (it is in the test extras)."""
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run(module: str, *args: str) -> subprocess.CompletedProcess:
    pytest.importorskip(module)
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_ruff_is_clean():
    r = _run("ruff", "check", "--no-cache", ".")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_mypy_is_clean_on_the_typed_modules():
    r = _run("mypy", "--no-incremental")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
