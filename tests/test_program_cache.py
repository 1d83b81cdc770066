"""em.compile(..., cache=True): programs kept on disk under the graph's structural hash."""
import os
import warnings

import numpy as np
import pytest

import ember as em
from ember.cache import CacheWarning


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _graph(scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    x = em.input("x", ("B", 16), em.float32)
    w = em.tensor(rng.standard_normal((16, 8)).astype(np.float32) * scale)
    gamma = em.tensor(np.full(8, 2.0, np.float32))
    folded = (gamma * 3.0 + 1.0).sqrt()  # a constant subgraph: folded into a new constant at lowering
    return ((x @ w) * folded).relu().sum(axis=1), x


def test_second_compile_loads_the_program(cache_dir):
    y, _ = _graph()
    a = em.compile(y, device="cpu", cache=True)
    assert not a.from_cache
    y2, _ = _graph()  # the same graph built again (new Python objects, equal structure)
    b = em.compile(y2, device="cpu", cache=True)
    assert b.from_cache and b.source == a.source
    x = np.random.default_rng(1).standard_normal((5, 16)).astype(np.float32)
    np.testing.assert_array_equal(a(x=x), b(x=x))
    np.testing.assert_allclose(b(x=x), em.reference(y2, x=x), rtol=1e-5, atol=1e-5)
    assert not em.compile(y2, device="cpu").from_cache  # off unless asked for


def test_other_constants_or_outputs_miss(cache_dir):
    y, _ = _graph()
    em.compile(y, device="cpu", cache=True)
    assert not em.compile(_graph(scale=2.0)[0], device="cpu", cache=True).from_cache
    assert not em.compile({"out": _graph()[0]}, device="cpu", cache=True).from_cache
    assert not em.compile(_graph()[0], device="h100", cache=True).from_cache


def test_a_damaged_entry_is_rebuilt(cache_dir):
    y, _ = _graph()
    em.compile(y, device="cpu", cache=True)
    entries = [os.path.join(d, f) for d, _, fs in os.walk(cache_dir) for f in fs if f.endswith(".zip")]
    assert len(entries) == 1
    with open(entries[0], "r+b") as f:
        f.seek(100)
        f.write(b"garbage")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        p = em.compile(_graph()[0], device="cpu", cache=True)
    assert not p.from_cache and any(issubclass(w.category, CacheWarning) for w in seen)
    assert em.compile(_graph()[0], device="cpu", cache=True).from_cache


def test_state_writes_and_bounds_survive_the_cache(cache_dir):
    def build():
        st = em.input("s", (4, 6), em.float32)
        v = em.input("v", (4, 1), em.float32)
        w = em.state_write(st, v * 3.0, 1, "P")
        return em.compile(w.updated.sum(axis=1), device="cpu", writes=[w], dim_bounds={"P": 5}, cache=True)
    build()
    p = build()
    assert p.from_cache and p.state_inputs == ["s"] and p.dim_bounds == {"P": 5}
    s = np.zeros((4, 6), np.float32)
    np.testing.assert_array_equal(p.run({"s": s, "v": np.ones((4, 1), np.float32)}, dims={"P": 2}), 3.0)
    assert (s[:, 2] == 3.0).all() and s.sum() == 12.0


def test_ember_flags_are_part_of_the_key(cache_dir, monkeypatch):
    """An EMBER_* variable switches the compiler's defaults: a program compiled under another setting is not served
    (an A/B across processes under one cache directory got the first side's program); the cache's own location is
    not keyed."""
    y, _ = _graph()
    assert not em.compile(y, device="cpu", cache=True).from_cache
    monkeypatch.setenv("EMBER_WGMMA_KCLUSTER", "0")
    assert not em.compile(_graph()[0], device="cpu", cache=True).from_cache
    assert em.compile(_graph()[0], device="cpu", cache=True).from_cache
    monkeypatch.delenv("EMBER_WGMMA_KCLUSTER")
    assert em.compile(_graph()[0], device="cpu", cache=True).from_cache
