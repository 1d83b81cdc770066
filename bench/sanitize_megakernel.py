"""compute-sanitizer over the megakernel (issue 22, item 3): a 2-layer Llama-shaped decode step
(hidden 256, 4 heads, 2 kv heads, random bf16 weights) as one persistent kernel, run for a few
positions; the sanitizer's exit status and report say whether shared memory raced (racecheck), a
barrier was misused (synccheck) or an access left its buffer (memcheck). Outputs are checked
against the same megakernel run by one worker.

    EMBER_MK_TIMEOUT_S=600 compute-sanitizer --tool racecheck python3 bench/sanitize_megakernel.py

(the watchdog's 5 s would fire under the sanitizer's slowdown: EMBER_MK_TIMEOUT_S raises it;
EMBER_MK_SAN_OPTIONS='{"per_sm": 1, "threads": 256}' sanitizes another form)
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])

import numpy as np  # noqa: E402


def main() -> int:
    import torch
    import transformers

    import ember as em
    import ember.llm as L
    from ember.llm.model import build_step
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=300, max_position_embeddings=256)
    d = os.path.join(tempfile.mkdtemp(), "tiny")
    transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(d)
    llm = L.load(d, device="cuda", dtype="bfloat16", max_seq_len=128)
    progs = {}
    extra = {"threads": int(os.environ["EMBER_MK_SAN_THREADS"])} if os.environ.get("EMBER_MK_SAN_THREADS") else {}
    extra.update(json.loads(os.environ.get("EMBER_MK_SAN_OPTIONS", "{}")))  # (megakernel_options as JSON)
    for name, opts in (("mk", dict(extra)), ("serial", dict(extra, workers=1))):
        outs, writes = build_step(llm.weights, 1, 1, llm.max_seq_len)
        progs[name] = em.compile(outs, device="cuda", writes=writes, dim_bounds={"P": 127}, megakernel=True,
                                 megakernel_options=opts)
    print({k: v for k, v in progs["mk"].meta["megakernel"].items() if k != "kernels"}, flush=True)
    if os.environ.get("OUT"):  # the source, to read the sanitizer's line numbers against (EMBER_NVRTC_LINEINFO=1)
        with open(os.path.join(os.environ["OUT"], "megakernel-sanitized.cu"), "w") as f:
            f.write(progs["mk"].source)
    rng = np.random.default_rng(0)
    bad = 0
    for P in (0, 5, 40, 100):
        feed = {"tokens": np.array([[7]], np.int32), "positions": np.array([[P]], np.int32), "start": np.zeros(1, np.int32)}
        for i in range(2):
            for kv in "kv":
                feed[f"{kv}{i}"] = rng.standard_normal((1, 2, 128, 64)).astype(np.float32).astype(
                    __import__("ml_dtypes").bfloat16)
        a = {k: v.copy() for k, v in feed.items()}
        b = {k: v.copy() for k, v in feed.items()}
        oa, ob = progs["mk"].run(a, dims={"P": P}), progs["serial"].run(b, dims={"P": P})
        same = all(np.array_equal(np.asarray(oa[k]), np.asarray(ob[k])) for k in oa) and \
            all(np.array_equal(a[k], b[k]) for k in a)
        print(f"P {P}: {'equal' if same else 'DIFFERENT'}", flush=True)
        bad += not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
