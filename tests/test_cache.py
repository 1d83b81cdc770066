"""The on-disk cache heals its own faults (ember/cache.py): a damaged entry (truncated, empty, garbage)
is detected before use, reported with one warning line and rebuilt; a cache directory that cannot be
written falls back to a temporary one with a warning naming EMBER_CACHE_DIR. Shared libraries are
exercised in fresh interpreters: a truncated .so that reached dlopen would kill the process (SIGBUS),
which must show as a failed test, not a dead pytest."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from ember import cache
from ember.search import store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_DAMAGE = {
    "truncated": lambda b: b[: len(b) // 2],
    "empty": lambda b: b"",
    "garbage": lambda b: np.random.default_rng(len(b)).integers(0, 256, len(b), dtype=np.uint8).tobytes(),
    "one_flipped_byte": lambda b: b[:100] + bytes([b[100] ^ 0x40]) + b[101:],
}


def _damage(path: str, how: str) -> None:
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(_DAMAGE[how](data))


# ------------------------------------------------------------------------------------------------
# entries

def test_store_load_round_trip_is_atomic_and_checked(tmp_path):
    p = str(tmp_path / "e.bin")
    payload = np.random.default_rng(0).integers(0, 256, 3001, dtype=np.uint8).tobytes()
    cache.store(p, payload)
    assert cache.load(p) == payload
    assert os.listdir(tmp_path) == ["e.bin"]  # no temporary file left behind
    assert cache.load(str(tmp_path / "absent")) is None


@pytest.mark.parametrize("how", sorted(_DAMAGE))
def test_damaged_entry_is_reported_deleted_and_missing(tmp_path, how):
    p = str(tmp_path / "e.bin")
    cache.store(p, bytes(range(256)) * 4)
    _damage(p, how)
    with pytest.warns(cache.CacheWarning, match="rebuilding") as rec:
        assert cache.load(p) is None
    assert len(rec) == 1 and "\n" not in str(rec[0].message)
    assert not os.path.exists(p)


# ------------------------------------------------------------------------------------------------
# shared libraries (CPU)

_COMPILE_AND_RUN = """
import sys, warnings
import numpy as np
import ember as em
warnings.simplefilter("always")
x = em.input("x", (5, 7))
fn = em.compile((x * 2.0).softmax(-1), device="cpu")
xv = np.random.default_rng(3).standard_normal((5, 7)).astype(np.float32)
np.testing.assert_allclose(fn(x=xv), em.reference((x * 2.0).softmax(-1), x=xv), rtol=1e-5, atol=1e-6)
print("OK")
"""


def _run_fresh(cache_dir) -> subprocess.CompletedProcess:
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", _COMPILE_AND_RUN], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage"])
def test_damaged_shared_library_is_rebuilt_not_loaded(tmp_path, how):
    first = _run_fresh(tmp_path)
    assert first.returncode == 0 and "OK" in first.stdout, first.stderr[-2000:]
    libs = glob.glob(str(tmp_path / "cpu-*" / "lib_*.so"))
    assert libs
    for lib in libs:
        _damage(lib, how)
    again = _run_fresh(tmp_path)
    # a truncated library that reached dlopen dies with SIGBUS (returncode -7 / 135)
    assert again.returncode == 0, f"returncode {again.returncode}: {again.stderr[-2000:]}"
    assert "OK" in again.stdout
    assert "CacheWarning" in again.stderr and "rebuilding" in again.stderr
    assert all(cache.verify(lib) for lib in libs)  # rebuilt in place
    third = _run_fresh(tmp_path)  # healed: no warning any more
    assert third.returncode == 0 and "CacheWarning" not in third.stderr


def _compile_small(tmp_path):
    import ember as em
    x = em.input("x", (4, 3))
    y = (x + 1.5).exp().sum(-1)
    fn = em.compile(y, device="cpu")
    xv = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(fn(x=xv), em.reference(y, x=xv), rtol=1e-5)


def test_cache_dir_under_a_regular_file_falls_back_with_one_warning(tmp_path, monkeypatch):
    """A path under a regular file cannot be created even by root (chmod does not stop root)."""
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("EMBER_CACHE_DIR", str(blocker / "cache"))
    with pytest.warns(cache.CacheWarning, match="EMBER_CACHE_DIR") as rec:
        _compile_small(tmp_path)
        _compile_small(tmp_path)
    msgs = [str(w.message) for w in rec if issubclass(w.category, cache.CacheWarning)]
    assert len(msgs) == 1 and str(blocker / "cache") in msgs[0], msgs
    d = cache.cache_dir("cpu")
    assert not d.startswith(str(blocker)) and glob.glob(os.path.join(d, "lib_*.so"))


def test_read_only_cache_dir_falls_back(tmp_path, monkeypatch):
    """A directory that refuses writes (simulated at the syscall the cache uses, so the test also
    bites when run as root, for whom chmod does not block writes)."""
    ro = tmp_path / "readonly"
    ro.mkdir()
    real_mkstemp = cache.tempfile.mkstemp

    def refusing_mkstemp(*args, dir=None, **kw):
        if dir is not None and str(dir).startswith(str(ro)):
            raise PermissionError(13, "Permission denied", str(dir))
        return real_mkstemp(*args, dir=dir, **kw)

    monkeypatch.setattr(cache.tempfile, "mkstemp", refusing_mkstemp)
    monkeypatch.setenv("EMBER_CACHE_DIR", str(ro))
    with pytest.warns(cache.CacheWarning, match="EMBER_CACHE_DIR.*writable"):
        d = cache.cache_dir("search-test")
    assert not d.startswith(str(ro))
    store.save("test", "k", {"a": 1})
    assert store.load("test", "k") == {"a": 1}


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores chmod")
def test_chmod_read_only_cache_dir_falls_back(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        monkeypatch.setenv("EMBER_CACHE_DIR", str(ro))
        with pytest.warns(cache.CacheWarning, match="EMBER_CACHE_DIR"):
            _compile_small(tmp_path)
    finally:
        ro.chmod(0o700)


# ------------------------------------------------------------------------------------------------
# cubins and search records

@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_damaged_cubin_is_recompiled(tmp_path, monkeypatch, how):
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_cuda
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    src = 'extern "C" __global__ void k(float* o, const float* a, int n) {\n' \
          '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = 2.0f * a[i] + %d.0f; }\n' % len(how)
    cubin = compile_cuda(src, "sm_90")
    files = glob.glob(str(tmp_path / "cuda-*" / "*.cubin"))
    assert len(files) == 1
    _damage(files[0], how)
    with pytest.warns(cache.CacheWarning, match="rebuilding"):
        again = compile_cuda(src, "sm_90")
    assert again == cubin and again[:4] == b"\x7fELF"
    assert cache.load(files[0]) == cubin


def test_damaged_search_record_is_searched_again(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    key = store.key_of("region", (3, 4), "cpu")
    store.save("kernel", key, {"config": {"BM": 64}, "us": 12.5})
    assert store.load("kernel", key) == {"config": {"BM": 64}, "us": 12.5}
    path = glob.glob(str(tmp_path / "search-kernel-*" / f"{key}.json"))[0]
    _damage(path, "truncated")
    with pytest.warns(cache.CacheWarning):
        assert store.load("kernel", key) is None
    assert not os.path.exists(path)
    # an intact checksum around contents that are not JSON (written by a foreign tool) is refused too
    cache.store(path, b"{not json")
    with pytest.warns(cache.CacheWarning, match="JSON"):
        assert store.load("kernel", key) is None
    store.save("kernel", key, {"us": 1.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.load("kernel", key) == {"us": 1.0}
    assert json.loads(cache.load(path)) == {"us": 1.0}
