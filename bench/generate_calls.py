"""LLM.generate called several times in one process (Llama-1B shapes): the first call builds its graphs, later ones replay them.

    python bench/generate_calls.py [--profile-prefill]
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ember.llm as L  # noqa: E402
from llm import LLAMA_1B, write_checkpoint  # noqa: E402
ck = "/tmp/ember-llama1b"
if not os.path.exists(ck + "/config.json"):
    write_checkpoint(ck, LLAMA_1B)
llm = L.load(ck, device="cuda", max_seq_len=1088)
llm.program("prefill", 1)
llm.program("decode", 1)
res = []
for i, plen in enumerate([128, 128, 960, 200]):
    out = llm.generate([list(range(1, plen + 1))], max_new_tokens=64, stop_token_ids=[])
    st = llm.last_stats
    res.append({"call": i, "prompt": plen, "ms_per_token": round(st["decode_s"] / st["decode_tokens"] * 1e3, 3), "prefill_ms": round(st["prefill_s"] * 1e3, 1)})
print(json.dumps(res))

# where a new prompt length's prefill goes: cProfile of one more call (a length not seen before)
if "--profile-prefill" in sys.argv:
    import cProfile
    import io
    import pstats
    pr = cProfile.Profile()
    pr.enable()
    llm.generate([list(range(1, 301))], max_new_tokens=2, stop_token_ids=[])
    pr.disable()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("cumulative").print_stats(40)
    print(buf.getvalue())
