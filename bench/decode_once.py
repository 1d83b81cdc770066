"""Run one decode attention (bf16, batch 1, 8 kv heads x 4 rows, S keys, head dim D) a few times, for
a profiler: ncu --launch-skip 2 --launch-count 1 python bench/decode_once.py [S D]."""
import sys

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import torch  # noqa: E402

from attention import ember_decode_layers  # noqa: E402

S, D = (int(x) for x in (sys.argv[1:3] if len(sys.argv) > 2 else (8192, 128)))
p = ember_decode_layers(1, 1, 8, 4, S, D)
feed = {"q0": torch.randn(1, 8, 4, 1, D, device="cuda").bfloat16(),
        "k0": torch.randn(1, 8, S, D, device="cuda").bfloat16(), "v0": torch.randn(1, 8, S, D, device="cuda").bfloat16()}
for _ in range(4):
    p(**feed)
torch.cuda.synchronize()
