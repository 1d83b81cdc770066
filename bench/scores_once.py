"""Run attention's causal bf16 backward once in `scores` mode (for a profiler: ncu -k regex:k3_view)."""
import sys

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import torch  # noqa: E402

from scores_profile import grads  # noqa: E402

import ember as em  # noqa: E402,F401

B, H, L, D = (int(x) for x in (sys.argv[1:5] if len(sys.argv) > 4 else (4, 16, 1024, 64)))
p = em.compile(grads(B, H, L, D), device="cuda")
ins = {n: torch.randn(B, H, L, D, device="cuda").bfloat16() for n in ("q", "k", "v", "do")}
p(**ins)
torch.cuda.synchronize()
