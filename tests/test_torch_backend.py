"""torch.compile(model, backend="ember") is found whatever the import order: through the
torch_dynamo_backends entry point (pyproject.toml) and through ember's own registration when torch's
Dynamo loads after ember. Each order runs in a fresh interpreter (registration is process state)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHECK = """
m = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh())
x = torch.randn(3, 5)
c = torch.compile(m, backend="ember", options={"device": "cpu"})
with torch.no_grad():
    want, got = m(x), c(x)
assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
from torch._dynamo.backends import registry
print("backend:", registry._COMPILER_FNS["ember"].__module__)
"""


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


@pytest.mark.parametrize("order", ["ember_first", "torch_first", "torch_dynamo_first"])
def test_backend_registered_in_any_import_order(order):
    head = {"ember_first": "import ember\nimport torch\n",
            "torch_first": "import torch\nimport ember\n",
            "torch_dynamo_first": "import torch\nimport torch._dynamo\nimport ember\n"}[order]
    out = _run(head + _CHECK)
    assert "backend: ember.frontends.dynamo" in out


def test_entry_point_loads_the_backend_without_importing_ember():
    """The entry point pyproject.toml declares is what torch's registry loads (entry_points is
    patched to the declared group, so this checks the checkout, not whichever copy is installed)."""
    out = _run(textwrap.dedent('''
        import importlib.metadata as md, sys, tomllib, unittest.mock as um
        group = tomllib.load(open("pyproject.toml", "rb"))["project"]["entry-points"]["torch_dynamo_backends"]
        eps = md.EntryPoints([md.EntryPoint(name=k, value=v, group="torch_dynamo_backends") for k, v in group.items()])
        import torch
        from torch._dynamo.backends import registry
        assert "ember" not in sys.modules
        with um.patch("importlib.metadata.entry_points",
                      lambda group=None, **kw: eps if group == "torch_dynamo_backends" else md.EntryPoints([])):
            fn = registry.lookup_backend("ember")
        assert "ember" in sys.modules
    ''') + _CHECK)
    assert "backend: ember.frontends.dynamo" in out
