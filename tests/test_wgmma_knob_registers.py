"""ptxas's own report on the forty-ninth session's wgmma knobs (stream-K, b multicast, the cluster's unrolled sum): no
local-memory spills and no serialized wgmma (ptxas serialises a kernel's wgmmas where it cannot prove their registers
safe to overlap: C7520, the RS form's lesson in the forty-fourth session) — a regression either way would cost more than
the knob gains, and it shows here before any GPU run."""
import re

import pytest

from ember import pipeline
from ember.codegen import cuda as cg
from tests.wgmma_knob_cases import gemm

H100 = pipeline.get_target("h100")
CONFIGS = [{"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "streamk": True, "group": 8},
           {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "streamk": True, "sown": True, "shalf": True},
           {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "mcast": True, "persistent": True, "sown": True, "shalf": True},
           {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "cluster": 2, "cunroll": 8}]


@pytest.mark.parametrize("i", range(len(CONFIGS)))
def test_no_spills_and_no_serialized_wgmma(i):
    pytest.importorskip("cuda.core")
    from ember.backends.cuda_compile import ptxas_report, wgmma_serialized
    (k, _), = pipeline.lower([gemm(512, 3072, 2048).node], None, H100).kernels
    report = ptxas_report(cg.PRELUDE + "\n" + cg.render_kernel(k, CONFIGS[i], H100)[0])
    assert not wgmma_serialized(report), report[-600:]
    assert re.findall(r"(\d+) bytes spill stores", report) == ["0"], report[-600:]
