"""The transpose mode (codegen/cuda_transpose.py): elementwise kernels whose store and one load are
contiguous along different loop variables, tiled through shared memory. Which kernels take the form
(CPU), their sources compiled by NVRTC for sm_90a (CI), and their results against torch on ragged
shapes on the H100 (mark cuda)."""
import pytest

import ember as em
from ember.backends.target import get_target
from ember.codegen import cuda as cg
from ember.codegen import cuda_transpose as tr
from ember.kernel.lower import lower

H100 = get_target("h100")
CASES = [((32, 256, 64, 64), (0, 2, 3, 1), "float32"), ((7, 33, 45), (0, 2, 1), "bfloat16"),
         ((3, 70, 5, 97), (0, 3, 2, 1), "float32"), ((129, 257), (1, 0), "float16")]


def _kernel(shape, perm, dtype):
    x = em.input("x", shape, dtype)
    y = x.permute(*perm) * 2 + 1
    ks = [k for k, _ in lower([y.node], target=H100).kernels]
    assert len(ks) == 1
    return y, ks[0]


@pytest.mark.parametrize("shape,perm,dtype", CASES)
def test_transposing_copies_take_the_form(shape, perm, dtype):
    _, k = _kernel(shape, perm, dtype)
    f = tr.transpose_form(cg.canonical(k))
    assert f is not None and f.l == cg.canonical(k).outer[-1][0]


def test_plain_and_short_copies_do_not():
    x = em.input("x", (64, 128))
    assert tr.transpose_form(cg.canonical(lower([(x * 2).node], target=H100).kernels[0][0])) is None  # no transpose
    x = em.input("x", (100, 3, 50, 50))  # three channels: the elementwise mode's reads coalesce anyway
    k = lower([(x.permute(0, 2, 3, 1) + 1).node], target=H100).kernels[0][0]
    assert tr.transpose_form(cg.canonical(k)) is None


def test_the_default_takes_it_only_when_asked(monkeypatch):
    _, k = _kernel(*CASES[0])
    assert cg.default_config(k)["mode"] == "elementwise"
    monkeypatch.setattr(tr, "ENABLED", "1")
    assert cg.default_config(k)["mode"] == "transpose"


def test_transpose_sources_compile_for_sm90():
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_cuda
    for case in CASES:
        _, k = _kernel(*case)
        src = cg.render_kernel(k, {"mode": "transpose", "threads": 256})[0]
        assert len(compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")) > 0


@pytest.mark.cuda
@pytest.mark.parametrize("shape,perm,dtype", CASES)
def test_cuda_transpose_mode_equals_numpy(shape, perm, dtype):
    import torch
    from ember import pipeline
    target = pipeline.get_target("cuda")
    y, _ = _kernel(shape, perm, dtype)
    lowered = pipeline.lower([y.node], None, target)
    p = pipeline.build_program(lowered, target, None, "single", configs=[{"mode": "transpose", "threads": 256}])
    tdt = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    for seed in range(2):
        torch.manual_seed(seed)
        x = torch.randn(*shape, device="cuda").to(tdt)
        want = x.float().permute(*perm) * 2 + 1
        got = p(x=x).float()
        assert got.shape == want.shape
        assert float((got - want).abs().max()) <= (1e-6 if dtype == "float32" else 2e-2 * float(want.abs().max()))
