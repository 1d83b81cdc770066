"""Shared by the wgmma knob tests (test_wgmma_kcluster.py, test_wgmma_streamk.py): x @ W.T in bf16 with an optional
bias + ReLU and residual epilogue, its program under one config for the contraction, and random inputs for it."""
import numpy as np

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg

BF = em.dtypes.bfloat16.np


def gemm(M, N, K, epi=""):
    """epi: "bias" (+ ReLU), "res" (a residual), "mn" (both operands MN-major: x.T @ w, a weight gradient's layout)."""
    if "mn" in epi:
        y = em.input("x", (K, M), "bfloat16").T @ em.input("w", (K, N), "bfloat16")
    else:
        y = em.input("x", (M, K), "bfloat16") @ em.input("w", (N, K), "bfloat16").T
    if "bias" in epi:
        y = em.relu(y + em.input("b", (N,), "bfloat16"))
    if "res" in epi:
        y = y + em.input("r", (M, N), "bfloat16")
    return y


def program(shape, cfg, device):
    """(graph, program): `cfg` on the contraction, the default on every other kernel."""
    y = gemm(*shape)
    t = pipeline.get_target(device)
    lowered = pipeline.lower([y.node], None, t)
    cfgs = [cfg if cg.contraction_of(cg.canonical(k)) is not None else cg.default_config(k, t) for k, _ in lowered.kernels]
    return y, pipeline.build_program(lowered, device, None, "single", configs=cfgs, load=device == "cuda")


def feed(M, N, K, epi, seed):
    rng = np.random.default_rng(seed)
    mn = "mn" in epi
    ins = {"x": rng.standard_normal((K, M) if mn else (M, K)).astype(BF), "w": (rng.standard_normal((K, N) if mn else (N, K)) / 8).astype(BF)}
    if "bias" in epi:
        ins["b"] = rng.standard_normal(N).astype(BF)
    if "res" in epi:
        ins["r"] = rng.standard_normal((M, N)).astype(BF)
    return ins


def assert_matches(out, ref):
    out, ref = np.asarray(out).astype(np.float32), np.asarray(ref).astype(np.float32)
    np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2 * max(1.0, float(np.abs(ref).max())))


def plain_only(graphs: dict, name: str, cfg: dict) -> bool:
    """Whether a config applies to a graph: `shalf`'s default form takes a plain cast's store (no epilogue but "mn")."""
    return not (cfg.get("shalf") and graphs[name][3] not in ("", "mn"))


def assert_all_compile(graphs: dict, configs: list) -> None:
    """Every (graph, config) pair that applies, rendered for the H100 preset and compiled with NVRTC in one batch."""
    from tests.nvrtc_batch import compile_programs
    progs = [(program(graphs[name], cfg, "h100")[1].source, (name, i)) for name in graphs for i, cfg in enumerate(configs)
             if plain_only(graphs, name, cfg)]
    failures = compile_programs(progs)
    assert not failures, "\n".join(failures[:3])


def assert_equals_the_reference(shape, cfg, launches: int = 1) -> None:
    """On the GPU: the program under `cfg` against the reference, two seeds, each called `launches` times."""
    y, prog = program(shape, cfg, "cuda")
    prog.executor.poison = True
    M, N, K, epi = shape
    for seed in (0, 1):
        ins = feed(M, N, K, epi, seed)
        ref = em.reference([y], **ins)[0]
        for _ in range(launches):
            assert_matches(prog(**ins), ref)
