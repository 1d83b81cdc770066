"""compute-sanitizer over the wgmma kernels (issue 19, item 5): one small program per operand layout
and knob family, run once each; the sanitizer's exit status and report say whether any access was
out of bounds (memcheck) or raced in shared memory (racecheck).

    compute-sanitizer --tool memcheck python3 bench/sanitize_wgmma.py
"""
import sys

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])

import numpy as np  # noqa: E402

import ember as em  # noqa: E402
from ember import pipeline  # noqa: E402
from ember.codegen import cuda as cg  # noqa: E402
from ember.graph import inputs_of  # noqa: E402

BF = "bfloat16"
CASES = [
    (lambda: (em.input("x", (3, 70, 128), BF) @ em.input("w", (136, 128), BF).T + em.input("b", (136,), BF)).relu(),
     {"BM": 128, "BN": 256, "stages": 3, "group": 8}),
    (lambda: em.input("x", (130, 200), BF) @ em.input("w", (200, 264), BF), {"BM": 128, "BN": 128, "stages": 4, "persistent": True}),
    (lambda: em.input("x", (136, 72), BF).T @ em.input("w", (136, 192), BF), {"BM": 64, "BN": 64, "stages": 2, "overlap": False}),
    (lambda: em.input("q", (2, 3, 96, 72), "float16") @ em.input("k", (2, 3, 72, 136), "float16"), {"BM": 128, "BN": 64, "stages": 3}),
    # gathered operands: a padded strided conv's input (two producer warpgroups), a prologue
    (lambda: em.conv2d(em.input("x", (2, 24, 17, 19), BF), em.input("w", (72, 24, 3, 3), BF), stride=2, padding=1),
     {"BM": 128, "BN": 128, "stages": 3, "producers": 2, "gunroll": 2}),
    (lambda: em.input("x", (100, 136), BF).relu() @ em.input("w", (136, 80), BF), {"BM": 64, "BN": 128, "stages": 4, "occupancy": 2}),
    # float32 at float32 accuracy (tf32x3): K-major split in place (lag 1), one operand transposed
    # through the staging ring, both transposed (consumers releasing at once), a gathered prologue
    (lambda: (em.input("x", (3, 70, 128)) @ em.input("w", (136, 128)).T + em.input("b", (136,))).relu(),
     {"BM": 128, "BN": 128, "stages": 3}),
    (lambda: em.input("x", (130, 200)) @ em.input("w", (200, 264)), {"BM": 128, "BN": 128, "stages": 2, "persistent": True}),
    (lambda: em.input("x", (300, 136)).T @ em.input("w", (300, 72)), {"BM": 128, "BN": 64, "stages": 2, "overlap": False, "sdepth": 4}),
    (lambda: em.input("x", (96, 136)).T.relu() @ em.input("w", (96, 72)), {"BM": 64, "BN": 64, "stages": 3}),
    # the forty-ninth session's defaults: the k loop split over a cluster (partial tiles through distributed shared
    # memory; a loading epilogue walks each rank's rows), ping-pong consumers, outputs staged as 16-bit (shalf)
    (lambda: em.input("x", (200, 1000), BF) @ em.input("w", (300, 1000), BF).T, {"BM": 128, "BN": 128, "stages": 4, "cluster": 2}),
    (lambda: (em.input("x", (130, 1536), BF) @ em.input("w", (264, 1536), BF).T + em.input("b", (264,), BF)).relu()
     + em.input("r", (130, 264), BF), {"BM": 128, "BN": 256, "stages": 3, "cluster": 4}),
    (lambda: em.input("x", (200, 1000), BF) @ em.input("w", (600, 1000), BF).T,
     {"BM": 128, "BN": 256, "stages": 3, "cluster": 2, "cunroll": 4}),
    (lambda: em.input("x", (333, 200), BF) @ em.input("w", (520, 200), BF).T, {"BM": 64, "BN": 128, "stages": 6, "pingpong": True, "group": 8}),
    # b multicast to a pair of blocks (an odd count of row tiles: the last pair's second block past the rows)
    (lambda: em.input("x", (300, 1000), BF) @ em.input("w", (600, 1000), BF).T, {"BM": 128, "BN": 256, "stages": 3, "mcast": True}),
    # stream-K: few tiles, each split over several blocks through the workspace (flags raised and lowered)
    (lambda: em.input("x", (256, 2048), BF) @ em.input("w", (520, 2048), BF).T, {"BM": 128, "BN": 128, "stages": 4, "streamk": True}),
    (lambda: em.input("x", (300, 256), BF) @ em.input("w", (1000, 256), BF).T,
     {"BM": 128, "BN": 128, "stages": 4, "persistent": True, "sown": True, "shalf": True}),
]
bad = 0
for make, knobs in CASES:
    y = make()
    lowered = pipeline.lower([y.node], None, pipeline.get_target("cuda"))
    cfgs = [dict(knobs, mode="wgmma") if not isinstance(cg.wgmma_applicable(cg.canonical(k)), str) else cg.default_config(k)
            for k, _ in lowered.kernels]
    prog = pipeline.build_program(lowered, "cuda", None, "single", configs=cfgs)
    rng = np.random.default_rng(0)
    ins = {n.arg: rng.standard_normal([s.value for s in n.shape]).astype(np.float32).astype(n.dtype.np) for n in inputs_of([y.node])}
    out = np.asarray(prog(**ins), np.float32)
    ref = np.asarray(em.reference([y], **ins)[0], np.float32)
    err = np.abs(out - ref).max() / np.abs(ref).max()
    bad += err > (1e-5 if all(n.dtype.name == "float32" for n in inputs_of([y.node])) else 2e-2)
    print(knobs, "relative error", err, flush=True)
sys.exit(1 if bad else 0)
