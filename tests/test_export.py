"""`ember export`: a program as a directory (plan, source, safetensors weights, built kernels,
manifest of hashes) that loads in a fresh process; tampering, a newer format and a wrong target are
one-line errors."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ember as em
from ember.export import ExportError, export, load

pytest.importorskip("safetensors")


def _prog(device):
    x = em.input("x", ("B", 16), em.float32)
    w = em.tensor(np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32))
    b = em.tensor(np.random.default_rng(1).standard_normal(8).astype(em.bfloat16.np))
    y = ((x @ w) + b.cast(em.float32)).relu()
    return em.compile(y, device=device), y


def test_export_loads_in_a_fresh_process(tmp_path):
    prog, y = _prog("cpu")
    out = export(prog, str(tmp_path / "mlp"))
    manifest = json.loads(open(os.path.join(out, "manifest.json")).read())
    assert set(manifest["sha256"]) == {"program.json", "source.txt", "weights.safetensors", "kernels/program.so"}
    x = np.random.default_rng(2).standard_normal((3, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code = ("import numpy as np, sys; from ember.export import load; p = load(sys.argv[1]); "
            "np.save(sys.argv[2], p(x=np.load(sys.argv[3])))")
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path / "fresh-cache"))  # nothing cached: the exported library
    r = subprocess.run([sys.executable, "-c", code, out, str(tmp_path / "y.npy"), str(tmp_path / "x.npy")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "torch" not in r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), em.reference(y, x=x), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(load(out)(x=x), prog(x=x))


def test_bad_exports_are_one_line_errors(tmp_path):
    prog, _ = _prog("cpu")
    out = export(prog, str(tmp_path / "a"))
    with open(os.path.join(out, "weights.safetensors"), "r+b") as f:
        f.seek(-4, 2)
        f.write(b"\0\0\0\1")
    with pytest.raises(ExportError, match="weights.safetensors does not match its sha256"):
        load(out)
    out = export(prog, str(tmp_path / "b"))
    mf = os.path.join(out, "manifest.json")
    m = json.loads(open(mf).read())
    m["version"] = 99
    open(mf, "w").write(json.dumps(m))
    with pytest.raises(ExportError, match="newer than this Ember reads"):
        load(out)
    with pytest.raises(ExportError, match="no manifest.json"):
        load(str(tmp_path))


def test_cuda_export_holds_cubins_and_refuses_the_cpu(tmp_path):
    pytest.importorskip("cuda.core")
    prog, _ = _prog("h100")  # rendered and NVRTC-compiled for sm_90a without a GPU
    out = export(prog, str(tmp_path / "gpu"))
    cubins = [f for f in os.listdir(os.path.join(out, "kernels")) if f.endswith(".cubin")]
    assert cubins and all("sm_90a" in f for f in cubins)
    with pytest.raises(ExportError, match="exported for a cuda target, asked to load on cpu"):
        load(out, device="cpu")
    p = load(out, device="h100")
    assert p.prebuilt["sm_90a"] and p.device == "cuda"


def test_cli_export(tmp_path, capsys):
    from ember.cli import main
    prog, y = _prog("cpu")
    prog.save(tmp_path / "p.ember")
    assert main(["export", str(tmp_path / "p.ember"), "-o", str(tmp_path / "out")]) == 0
    x = np.ones((2, 16), np.float32)
    np.testing.assert_allclose(load(str(tmp_path / "out"))(x=x), em.reference(y, x=x), rtol=1e-5, atol=1e-5)
    em.save_graph(tmp_path / "g.json", y)
    assert main(["export", str(tmp_path / "g.json"), "-o", str(tmp_path / "out2"), "--device", "cpu"]) == 0
    assert "exported" in capsys.readouterr().out
