"""Targets (ember/backends/target.py): the registry and its presets, device errors, and that the
lowering and the CUDA schedules read their numbers from the Target they are given."""
import ast
import os

import numpy as np
import pytest

import ember as em
from ember.backends import cuda_target
from ember.backends import target as tg
from ember.codegen import cuda as cg
from ember.kernel.lower import lower
from ember.kernel.structure import UnsupportedKernel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def no_gpu(monkeypatch):
    """As if the machine had no CUDA driver (the check is the one place that asks the driver)."""
    monkeypatch.setattr(cuda_target, "cuda_probe", lambda: (False, "test: libcuda.so not found"))
    monkeypatch.setattr(tg, "_DETECTED", {})


def _matmul(m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    a = em.input("a", (m, k), em.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    return a, em.tensor(w), w


# ------------------------------------------------------------------------------------------------
# registry and presets


def test_names_resolve_to_targets():
    cpu = em.get_target("cpu")
    assert cpu.kind == "cpu" and not cpu.device_memory
    h100 = em.get_target("h100")
    assert (h100.kind, h100.arch, h100.compute_capability, h100.sm_count) == ("cuda", "sm_90a", (9, 0), 132)
    assert h100.smem_per_block == 227 * 1024 and h100.device_memory and "mma.sync.tf32" in h100.tensor_cores
    assert h100.split.tiles_few == 132 and h100.tuning["smem_cache_max"] == 200 * 1024
    assert em.get_target(h100) is h100 and em.get_target("H100 ") is h100
    assert {"cpu", "cuda"} <= set(tg.kinds()) and {"h100", "host-cpu"} <= set(tg.presets())


@pytest.mark.parametrize("name", ["tpu", "cuda:x", "cpu:zero", ""])
def test_unknown_device_names_fail_in_one_line(name):
    with pytest.raises(em.DeviceError, match="unknown device") as e:
        em.get_target(name)
    assert "\n" not in str(e.value) and "cpu" in str(e.value)


def test_device_values_override_the_preset_and_the_split_follows_the_sm_count():
    pcie = tg.with_device_values(em.get_target("h100"), sm_count=114, smem_per_block=None)
    assert pcie.sm_count == 114 and pcie.split.tiles_few == 114 and pcie.present
    assert pcie.smem_per_block == 227 * 1024  # a value the driver did not give keeps the preset's


def test_a_registered_backend_is_found_by_name():
    fake = em.get_target("host-cpu").replace(kind="cpu", preset="tiny-cpu", sm_count=2)
    tg.register_preset("tiny-cpu", fake)
    try:
        assert em.get_target("tiny-cpu") is fake
        x = em.input("x", (5, 7), em.float32)
        fn = em.compile(x.exp().sum(1), device="tiny-cpu")
        xs = np.random.default_rng(3).standard_normal((5, 7)).astype(np.float32)
        np.testing.assert_allclose(fn(x=xs), np.exp(xs.astype(np.float64)).sum(1), rtol=1e-5)
    finally:
        tg._PRESETS.pop("tiny-cpu")


# ------------------------------------------------------------------------------------------------
# no GPU: one-line errors


def test_cuda_without_a_driver_is_one_clear_error(no_gpu):
    with pytest.raises(em.DeviceError) as e:
        em.get_target("cuda")
    msg = str(e.value)
    assert msg.startswith("device 'cuda' requested but no CUDA driver/GPU was found") and "\n" not in msg
    assert "libcuda.so not found" in msg
    x = em.input("x", (3,), em.float32)
    with pytest.raises(em.DeviceError, match="cuda:1"):
        em.compile(x + 1.0, device="cuda:1")
    assert em.get_target(None).kind == "cpu"  # the default falls back to the CPU


def test_cli_reports_a_missing_gpu_in_one_line(no_gpu, tmp_path, capsys):
    from ember.cli import main
    x = em.input("x", (4, 3), em.float32)
    em.save_graph(tmp_path / "g.json", x.relu())
    rc = main(["compile", str(tmp_path / "g.json"), "-o", str(tmp_path / "p.zip"), "--device", "cuda"])
    err = capsys.readouterr().err
    assert rc == 2 and not (tmp_path / "p.zip").exists()
    assert err.strip().splitlines() == [err.strip()] and err.startswith("ember: error: device 'cuda' requested")
    assert main(["demo", "--device", "cuda"]) == 2


def test_a_preset_compiles_without_its_device(no_gpu, tmp_path):
    """CI renders (and NVRTC-compiles) for sm_90 without a GPU; running such a program needs one."""
    a, w, _ = _matmul(37, 64, 45)
    fn = em.compile((a @ w).relu(), device="h100")
    assert fn.device == "cuda" and fn.target is em.get_target("h100") and "__global__" in fn.source
    assert all("grid" in l.config or "cfg" in l.config for l in fn.launches)
    fn.save(tmp_path / "p.zip")
    with pytest.raises(em.DeviceError, match="no CUDA driver"):
        fn(a=np.zeros((37, 64), np.float32))
    with pytest.raises(em.DeviceError, match="no CUDA driver"):
        em.Program.load(tmp_path / "p.zip")
    loaded = em.Program.load(tmp_path / "p.zip", device="h100")
    assert loaded.source == fn.source and loaded.target is fn.target
    with pytest.raises(em.DeviceError, match="no CUDA driver"):
        loaded(a=np.zeros((37, 64), np.float32))
    from ember.cli import main
    assert main(["inspect", str(tmp_path / "p.zip")]) == 0  # printing a program needs no GPU
    with pytest.raises(em.DeviceError, match="preset with no device"):
        em.compile((a @ w).relu(), device="h100", search="fast")
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    assert compile_kernels(fn.source, fn.target.arch)


def test_kernels_differing_only_in_name_compile_once(monkeypatch):
    """An unrolled recurrence repeats its step's kernels over other buffers: NVRTC sees each distinct
    body once (under one symbol), and every kernel still gets a module holding that symbol."""
    pytest.importorskip("cuda.core")
    from ember.backends import cuda_compile as cb
    from ember.codegen.cuda import split_program
    from ember.frontends.aten import recurrent
    rng = np.random.default_rng(0)
    x, h = [em.input(f"x{t}", (3, 4)) for t in range(8)], em.input("h", (3, 16))  # (a later layer's steps)
    w = tuple(em.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((48, 4), (48, 16), (48,), (48,)))
    outs, h = recurrent._gru_direction(x, h, w, False)  # eight steps: a product and a cell each
    fn = em.compile(em.stack(outs, 0), device="h100")
    _, kernels = split_program(fn.source)
    seen = []
    real = cb.compile_cuda
    monkeypatch.setattr(cb, "compile_cuda", lambda src, arch: seen.append(src) or real(src, arch))
    cubins = cb.compile_kernels(fn.source, fn.target.arch)
    assert set(cubins) == set(kernels) and len(kernels) >= 4
    assert len(seen) == len(set(seen)) <= len(kernels) // 3
    assert all(cb.KERNEL_SYMBOL.encode() in c for c in cubins.values())
    monkeypatch.setenv("EMBER_KEEP_KERNEL_NAMES", "1")  # for a profiler: every kernel its own name and module
    named = cb.compile_kernels(fn.source, fn.target.arch)
    assert set(named) == set(kernels) and all(n.encode() in c and cb.KERNEL_SYMBOL.encode() not in c for n, c in named.items())
    assert cb.kernel_symbol("k3_add") == "k3_add"


# ------------------------------------------------------------------------------------------------
# the stages read the Target


def test_a_long_k_loop_over_a_second_mostly_empty_wave_splits():
    """A weight gradient (1376 x 512 outputs, 172 tiles: one full wave and a 40-tile second one on
    132 SMs) over 8192 tokens splits k in 8; the same product over 2048 tokens does not, nor does one
    with three waves of tiles."""
    h100 = em.get_target("h100")
    for k, n, kernels in ((8192, 512, 2), (2048, 512, 1), (8192, 1376, 1)):
        y = em.input("x", (k, 1376)).T @ em.input("g", (k, n))
        assert len(lower([y.node], target=h100).kernels) == kernels, (k, n)


def test_split_k_threshold_comes_from_the_target():
    """(640 x 2048) @ (2048 x 768) is 120 output tiles of 64 x 64: fewer than the H100's 132 SMs, so
    k is split; on a target with 100 SMs it is not. Both compute the product (checked on the CPU)."""
    a, w, wn = _matmul(640, 2048, 768)
    y = a @ w
    h100 = em.get_target("h100")
    few_sms = h100.replace(sm_count=100, split=h100.split.__class__(tiles_few=100))
    assert len(lower([y.node], target=h100).kernels) == 2
    assert len(lower([y.node], target=few_sms).kernels) == 1
    cpu = em.get_target("cpu")
    xs = np.random.default_rng(1).standard_normal((640, 2048)).astype(np.float32)
    ref = xs.astype(np.float64) @ wn.astype(np.float64)
    for t in (cpu, cpu.replace(split=h100.split.__class__(tiles_few=100))):
        out = em.compile(y, device=t)(a=xs)
        assert np.max(np.abs(out - ref)) <= 1e-4 + 1e-4 * np.max(np.abs(ref))


def test_the_search_split_rule_reads_the_targets_policy():
    """The e-graph's split-reduction rule proposes a split of a 8192-long row sum under the H100's
    search thresholds (>= 4096), and none under a policy asking for 2**20."""
    from ember.kernel.split import SplitPolicy
    from ember.search import rules as rl
    x = em.input("x", (4, 8192), em.float32)
    y = x.sum(1)
    rule = next(r for r in rl.RULES if r.name == "split-reduction")
    assert len(rule.expand([y.node], em.get_target("h100").split)) == 1
    assert rule.expand([y.node], SplitPolicy(search_min_len=1 << 20)) == []


def test_cuda_schedules_read_the_targets_shared_memory():
    """A softmax over 32768 floats caches its row in shared memory on the H100 (cluster of 2); a GPU
    with 64 KB per block has no room for it, and an mma tile that fits the H100 does not fit there."""
    x = em.input("x", (1024, 32768), em.float32)
    k = lower([x.softmax(-1).node]).kernels[-1][0]
    h100 = em.get_target("h100")
    small = tg.with_device_values(h100, smem_per_block=64 * 1024, tuning=cuda_target._tuning(64 * 1024))
    big_cfg = cg.default_config(k, h100)
    assert big_cfg.get("cache") == "smem" and big_cfg.get("cluster") == 2
    assert cg.default_config(k) == big_cfg  # no target: the H100 preset
    assert cg.default_config(k, small).get("cache") != "smem"
    a, w, _ = _matmul(1024, 512, 1024)
    (mk, _), = lower([(a @ w).node]).kernels
    tile = {"mode": "mma", "BM": 128, "BN": 256, "BK": 32, "WM": 2, "WN": 4, "stages": 2}
    assert "__global__" in cg.render_kernel(mk, tile, h100)[0]
    with pytest.raises(UnsupportedKernel, match="shared memory"):
        cg.render_kernel(mk, tile, small)


def test_cuda_schedules_follow_the_targets_features():
    """A float32 GEMM takes wgmma (tf32x3) on the H100, mma.sync on the A100, CUDA-core tiles on a GPU
    without TF32 tensor cores (sm_75, which refuses the mma mode); one without clusters (sm_80)
    caches a wide row in one block and refuses the cluster knob."""
    h100 = em.get_target("h100")
    turing = tg.with_device_values(h100, arch="sm_75", compute_capability=(7, 5), tensor_cores=())
    ampere = tg.with_device_values(h100, arch="sm_80", compute_capability=(8, 0), tensor_cores=("mma.sync.tf32",))
    a, w, _ = _matmul(1024, 512, 1024)
    (mk, _), = lower([(a @ w).node]).kernels
    assert cg.default_config(mk, h100)["mode"] == "wgmma" and cg.default_config(mk, ampere)["mode"] == "mma"
    assert cg.default_config(mk, turing)["mode"] == "gemm"
    assert "__global__" in cg.render_kernel(mk, None, turing)[0]
    with pytest.raises(UnsupportedKernel, match="tensor cores"):
        cg.render_kernel(mk, {"mode": "mma", "BM": 64, "BN": 64, "BK": 16, "WM": 2, "WN": 2}, turing)
    x = em.input("x", (1024, 32768), em.float32)
    k = lower([x.softmax(-1).node]).kernels[-1][0]
    cfg = cg.default_config(k, ampere)
    assert cfg.get("cache") == "smem" and cfg.get("cluster", 1) == 1
    assert "__global__" in cg.render_kernel(k, cfg, ampere)[0]
    with pytest.raises(UnsupportedKernel, match="clusters"):
        cg.render_kernel(k, cg.default_config(k, h100), ampere)


def test_mma_tile_model_reads_the_sm_count():
    """The tile choice divides by how busy the last wave keeps the SMs: with the SM count changed the
    model sees other waves. Its choice on the H100 preset is the one without a target."""
    from ember import symbolic as sm
    from ember.codegen.cuda_schedule import _default_mma_tile
    M, N, K, B = (sm.const(v) for v in (1024, 1024, 1024, 1))
    h100 = em.get_target("h100")
    assert _default_mma_tile(M, N, K, B, h100) == _default_mma_tile(M, N, K, B)
    picks = {tuple(_default_mma_tile(M, N, K, B, h100.replace(sm_count=s)).items()) for s in (8, 16, 64, 132, 264)}
    assert len(picks) > 1


# ------------------------------------------------------------------------------------------------
# import direction of the pipeline's parts


def _imports(path: str) -> set:
    with open(os.path.join(ROOT, path)) as f:
        tree = ast.parse(f.read())
    out = set()
    pkg = os.path.dirname(path).replace("/", ".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = pkg
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            mod = (base + "." + node.module if node.module else base) if node.level else node.module
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


@pytest.mark.parametrize("path,forbidden", [
    ("ember/runtime/program.py", ("ember.backends", "ember.search", "ember.pipeline", "ember.codegen")),
    ("ember/runtime/memory.py", ("ember.backends", "ember.search", "ember.pipeline")),
    ("ember/runtime/concurrency.py", ("ember.backends", "ember.search", "ember.pipeline")),
    ("ember/search/driver.py", ("ember.runtime", "ember.backends", "ember.codegen", "ember.pipeline")),
    ("ember/search/schedule.py", ("ember.runtime", "ember.backends", "ember.codegen", "ember.pipeline")),
    ("ember/train.py", ("ember.nn", "ember.runtime", "ember.pipeline")),
    ("ember/kernel/lower.py", ("ember.backends", "ember.codegen", "ember.runtime")),
    ("ember/kernel/partition.py", ("ember.backends", "ember.codegen", "ember.runtime")),
    ("ember/kernel/builder.py", ("ember.backends", "ember.codegen", "ember.runtime")),
    ("ember/kernel/split.py", ("ember.backends", "ember.codegen", "ember.runtime")),
])
def test_no_import_loops_through_the_pipeline(path, forbidden):
    bad = sorted(m for m in _imports(path) if m.startswith(forbidden))
    assert not bad, f"{path} imports {bad}"
