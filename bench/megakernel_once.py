"""Run one Llama-1B-shaped decode step as a megakernel a few times, for a profiler:

    EMBER_NVRTC_LINEINFO=1 ncu --clock-control none --section WarpStateStats --section SourceCounters \\
        -k em_megakernel --launch-skip 2 --launch-count 1 -o mk python bench/megakernel_once.py [OPTIONS_JSON]
    ncu -i mk.ncu-rep --page source --csv --print-source sass > mk_sass.csv
    python bench/megakernel_stalls.py mk_sass.csv     # warp stall samples per task function

OPTIONS_JSON: megakernel_options (default {}); context 1024 (EMBER_MK_CONTEXT)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

import ember.llm as L  # noqa: E402
from llm import LLAMA_1B, write_checkpoint  # noqa: E402
from megakernel import feed, step_programs  # noqa: E402

opts = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
P = int(os.environ.get("EMBER_MK_CONTEXT", "1024"))
ckpt = "/tmp/ember-llama1b-mk"
write_checkpoint(ckpt, dict(LLAMA_1B))
llm = L.load(ckpt, device="cuda", max_seq_len=P + 64)
p = step_programs(llm, {"megakernel": {"megakernel": True, "megakernel_options": opts}})["megakernel"]
f = feed(llm.config, P + 64, P)
for _ in range(4):
    p.run(f, dims={"P": P})
torch.cuda.synchronize()
print("ran", flush=True)
