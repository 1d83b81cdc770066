"""The KernelBench-style runner (bench/kernelbench.py) on tiny problems in a temporary directory:
discovery by level, correctness over seeds, timing against eager, the JSON it writes, unsupported
ops reported (not skipped), degenerate problems flagged, --scale, and the `ember bench kernelbench`
entry point. CPU only; shapes are tiny so the test stays fast."""
from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest

pytest.importorskip("torch")  # (bench/kernelbench.py and every problem here are PyTorch programs)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import kernelbench as kb  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

PROBLEMS = {
    "level1/1_gelu.py": '''
        import torch, torch.nn as nn, torch.nn.functional as F
        batch_size, dim = 64, 48
        SCALABLE = {"batch_size": 2}
        class Model(nn.Module):
            def forward(self, x):
                return F.gelu(x)
        def get_inputs():
            return [torch.randn(batch_size, dim)]
        def get_init_inputs():
            return []
        ''',
    "level1/2_sort.py": '''
        import torch, torch.nn as nn
        class Model(nn.Module):
            def forward(self, x):
                return torch.sort(x, dim=-1).values
        def get_inputs():
            return [torch.randn(4, 8)]
        def get_init_inputs():
            return []
        ''',
    "level2/1_linear_bn_relu.py": '''
        import torch, torch.nn as nn
        batch_size, fin, fout = 16, 12, 10
        class Model(nn.Module):
            def __init__(self, fin, fout):
                super().__init__()
                self.lin = nn.Linear(fin, fout)
                self.bn = nn.BatchNorm1d(fout)
            def forward(self, x):
                return torch.relu(self.bn(self.lin(x)))
        def get_inputs():
            return [torch.rand(batch_size, fin) * 3]
        def get_init_inputs():
            return [fin, fout]
        ''',
    "level2/2_constant_output.py": '''
        import torch, torch.nn as nn
        class Model(nn.Module):
            def forward(self, x):
                return torch.softmax(x, dim=1).sum(dim=1)
        def get_inputs():
            return [torch.randn(8, 5)]
        def get_init_inputs():
            return []
        ''',
}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("kb")
    for rel, src in PROBLEMS.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    (root / "level1" / "_helper.py").write_text("X = 1\n")  # underscore files are not problems
    return root


def test_discover_levels(suite):
    probs = kb.discover(str(suite))
    assert [(p["level"], p["name"]) for p in probs] == [(1, "1_gelu"), (1, "2_sort"), (2, "1_linear_bn_relu"),
                                                        (2, "2_constant_output")]
    assert [p["name"] for p in kb.discover(str(suite), level=2)] == ["1_linear_bn_relu", "2_constant_output"]


def test_compare_criterion():
    import torch
    ref = torch.tensor([1.0, -100.0])
    assert kb.compare(ref + 0.005, ref, 1e-4)["ok"]  # 0.005 <= 1e-4 + 1e-4 * 100
    assert not kb.compare(ref + 0.02, ref, 1e-4)["ok"]
    assert not kb.compare(torch.tensor([float("nan"), -100.0]), ref, 1e-4)["ok"]
    assert not kb.compare(torch.tensor([float("inf"), -100.0]), ref, 1e-4)["ok"]
    assert "shape" in kb.compare(ref[:1], ref, 1e-4)["reason"]


def test_runner_writes_json(suite, tmp_path):
    out = tmp_path / "res.json"
    assert kb.main([str(suite), "--device", "cpu", "--seeds", "3", "--trials", "3", "--warmup", "1",
                    "--no-compile", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    recs = {r["name"]: r for r in res["problems"]}
    assert set(recs) == {"1_gelu", "2_sort", "1_linear_bn_relu", "2_constant_output"}
    g = recs["1_gelu"]
    assert g["status"] == "correct" and len(g["trials"]) == 3 and all(t["ok"] for t in g["trials"])
    assert g["reference"] == "float64" and g["ember_ms"] > 0 and g["eager_ms"] > 0 and g["speedup_vs_eager"] > 0
    assert g["ember_timing"]["trials"] == 3
    s = recs["2_sort"]
    assert s["status"] == "unsupported" and "aten.sort" in s["error"]
    bn = recs["1_linear_bn_relu"]
    assert bn["status"] == "correct" and bn["training_mode"] is True
    const = recs["2_constant_output"]
    assert any("degenerate" in f for f in const.get("flags", []))
    summ = res["summary"]
    assert summ["1"]["problems"] == 2 and summ["1"]["unsupported"] == 1 and summ["1"]["correct"] == 1
    assert summ["all"]["problems"] == 4
    for k in ("fast_0", "fast_1_vs_eager", "fast_1.5_vs_eager", "geomean_vs_eager", "fast_1_vs_compile"):
        assert k in summ["all"]
    assert summ["all"]["fast_0"] == pytest.approx(3 / 4)
    assert res["environment"]["torch"]


def test_runner_with_compile_baseline_and_scale(suite, tmp_path):
    out = tmp_path / "res.json"
    assert kb.main([str(suite), "--device", "cpu", "--seeds", "2", "--trials", "2", "--warmup", "1",
                    "--only", "gelu", "--scale", "0.5", "--out", str(out)]) == 0
    r = json.loads(out.read_text())["problems"][0]
    assert r["scaled_sizes"] == {"batch_size": 32}
    assert r["status"] == "correct"
    assert "compile_ms" in r or "compile_error" in r or "compile_baseline_error" in r


def test_ember_cli_forwards_to_runner(suite, tmp_path):
    from ember.cli import main
    out = tmp_path / "cli.json"
    with pytest.raises(SystemExit) as e:
        main(["bench", "kernelbench", str(suite), "--device", "cpu", "--seeds", "2", "--no-timing",
              "--level", "2", "--out", str(out)])
    assert e.value.code == 0
    res = json.loads(out.read_text())
    assert [r["status"] for r in res["problems"]] == ["correct", "correct"]


def test_our_suite_is_well_formed():
    """Every problem of kernelbench/ loads, builds its model and inputs at a tiny scale, and the
    levels have the advertised sizes."""
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernelbench")
    probs = kb.discover(root)
    counts = {lv: sum(p["level"] == lv for p in probs) for lv in (1, 2, 3)}
    assert counts[1] >= 30 and counts[2] >= 20 and counts[3] >= 8, counts
    import torch
    for p in probs:
        mod, sizes = kb.load(p["path"], 0.01)
        model = mod.Model(*mod.get_init_inputs())
        xs = mod.get_inputs()
        assert all(isinstance(x, torch.Tensor) for x in xs), p["name"]
        assert isinstance(model, torch.nn.Module)


def test_timing_protocol_catches_replayed_outputs():
    """An implementation that memoises its output per input pointer passes a check on its first
    call but fails the post-timing check: the timer refills the same tensors with new content."""
    import torch
    cache = {}

    def cheat(x):
        if x.data_ptr() not in cache:
            cache[x.data_ptr()] = x * 2
        return cache[x.data_ptr()]

    pool = [[torch.rand(6)], [torch.rand(6)]]
    refs = [(p[0] * 2,) for p in pool]
    for trials in (2, 3, 4):
        cache.clear()
        live = [pool[0][0].clone()]
        _, last = kb.Timer("cpu", 1, trials, False).run(cheat, live, pool)
        assert len(last) == 2 and {k for _, k in last} == {0, 1}
        assert not all(kb.compare(out, refs[k], 1e-4)["ok"] for out, k in last)
        honest = kb.Timer("cpu", 1, trials, False).run(lambda x: x * 2, live, pool)[1]
        assert all(kb.compare(out, refs[k], 1e-4)["ok"] for out, k in honest)


@pytest.mark.cuda
def test_runner_on_cuda(suite, tmp_path):
    out = tmp_path / "cuda.json"
    assert kb.main([str(suite), "--device", "cuda", "--seeds", "3", "--trials", "5", "--warmup", "2",
                    "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    recs = {r["name"]: r for r in res["problems"]}
    assert recs["1_gelu"]["status"] == "correct" and recs["1_gelu"]["ember_ms"] > 0
    assert recs["2_sort"]["status"] == "unsupported"
    assert res["environment"]["gpu"]


def test_sample_resume_and_chunked_compare(suite, tmp_path, monkeypatch):
    """--sample draws per level with a seed (the same draw every time), --resume keeps what an
    earlier call measured and runs the rest, and the float64 comparison works a chunk at a time
    (outputs of GBs) with the same verdicts."""
    probs = kb.discover(str(suite))
    s1 = kb.sample_problems(probs, 1, 0)
    assert [p["level"] for p in s1] == [1, 2] and s1 == kb.sample_problems(probs, 1, 0)
    assert len(kb.sample_problems(probs, 5, 0)) == 4
    out = tmp_path / "res.json"
    args = [str(suite), "--device", "cpu", "--seeds", "2", "--no-timing", "--out", str(out)]
    assert kb.main(args + ["--level", "2", "--only", "1_linear"]) == 0
    assert kb.main(args + ["--level", "2", "--resume"]) == 0
    names = [r["name"] for r in json.loads(out.read_text())["problems"]]
    assert names == ["1_linear_bn_relu", "2_constant_output"]
    # --level with --sample: that level's part of the all-levels draw (a seed where drawing from
    # level 2 alone would pick another problem)
    level2 = [p for p in probs if p["level"] == 2]
    seed = next(sd for sd in range(50) if kb.sample_problems(level2, 1, sd) != kb.sample_problems(probs, 1, sd)[1:])
    drawn = tmp_path / "drawn.json"
    assert kb.main(args[:-1] + [str(drawn), "--sample", "1", "--sample-seed", str(seed), "--level", "2"]) == 0
    assert [r["name"] for r in json.loads(drawn.read_text())["problems"]] == [kb.sample_problems(probs, 1, seed)[1]["name"]]
    import torch
    monkeypatch.setattr(kb, "COMPARE_CHUNK", 3)
    ref = torch.arange(10, dtype=torch.float32) - 5
    assert kb.compare(ref + 5e-4, ref, 1e-4)["ok"]
    bad = ref.clone()
    bad[8] += 0.01
    c = kb.compare(bad, ref, 1e-4)
    assert not c["ok"] and "max|out-ref|" in c["reason"]
    bad[8] = float("nan")
    assert not kb.compare(bad, ref, 1e-4)["ok"]


def test_the_vendored_kernelbench_is_whole():
    """third_party/KernelBench holds levels 1-3 as published (100 / 100 / 50 problems)."""
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "third_party", "KernelBench")
    probs = kb.discover(root)
    assert {lv: sum(p["level"] == lv for p in probs) for lv in (1, 2, 3)} == {1: 100, 2: 100, 3: 50}


def test_dropout_problems_draw_alike_and_shrink_divides_sizes(tmp_path):
    """A model that draws (dropout in training mode) is checked with the same draws in the
    reference, Ember and eager (the generator state replayed), flagged stochastic, and timed without
    the post-timing replay check; --shrink divides integer sizes (and tuples of them) from 64 up."""
    src = '''
        import torch, torch.nn as nn
        batch_size, features, input_shape, kernel = 128, 96, (64, 3), 3
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(features, features)
                self.drop = nn.Dropout(0.3)
            def forward(self, x):
                return torch.softmax(self.drop(self.lin(x)), dim=1) * kernel
        def get_inputs():
            return [torch.randn(batch_size, features)]
        def get_init_inputs():
            return []
        '''
    (tmp_path / "level2").mkdir()
    (tmp_path / "level2" / "1_drop.py").write_text(textwrap.dedent(src))
    out = tmp_path / "res.json"
    assert kb.main([str(tmp_path), "--device", "cpu", "--seeds", "2", "--trials", "2", "--warmup", "1", "--no-compile",
                    "--shrink", "4", "--out", str(out)]) == 0
    r = json.loads(out.read_text())["problems"][0]
    assert r["scaled_sizes"] == {"batch_size": 32, "features": 24, "input_shape": [16, 3]}
    assert r["status"] == "correct" and r["stochastic"] is True and r["max_abs_err"] < 1e-6, r
    assert r["ember_ms"] > 0


def test_precision_fallback_reruns_a_tf32_failure_at_float32(suite, tmp_path, monkeypatch):
    """--precision-fallback: a problem that failed with TF32 contractions is compiled again at float32
    accuracy; the record keeps the TF32 attempt, is flagged, and the summary counts it."""
    real, calls = kb.run_problem, []

    def tf32_fails(prob, args, timer):
        calls.append(args.ember_precision)
        rec = real(prob, args, timer)
        if args.ember_precision == "tf32":  # (the CPU computes exactly: the TF32 failure is simulated)
            rec.update(status="incorrect", tf32_contractions=3, max_abs_err=0.5, error="output 0: too far")
        return rec
    monkeypatch.setattr(kb, "run_problem", tf32_fails)
    out = tmp_path / "res.json"
    assert kb.main([str(suite), "--device", "cpu", "--seeds", "2", "--trials", "2", "--warmup", "1", "--no-compile",
                    "--only", "1_gelu", "--ember-precision", "tf32", "--precision-fallback", "--out", str(out)]) == 0
    assert calls == ["tf32", "float32"]
    res = json.loads(out.read_text())
    (r,) = res["problems"]
    assert r["status"] == "correct" and r["tolerance"] == 1e-4 and r["ember_ms"] > 0
    assert r["precision_fallback"]["max_abs_err"] == 0.5 and r["precision_fallback"]["tf32_contractions"] == 3
    assert any("float32 accuracy" in f for f in r["flags"])
    assert res["summary"]["all"]["precision_fallback"] == 1
    calls.clear()  # without the flag the failure stands
    assert kb.main([str(suite), "--device", "cpu", "--seeds", "2", "--no-timing", "--only", "1_gelu",
                    "--ember-precision", "tf32", "--out", str(out)]) == 0
    assert calls == ["tf32"] and json.loads(out.read_text())["problems"][0]["status"] == "incorrect"
