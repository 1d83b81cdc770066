"""The megakernel on a real GPU (marked cuda: skipped where there is none): outputs bit-identical to
the same task schedules launched kernel by kernel, across runs, schedules and injected delays; an
LLM's greedy tokens equal to the kernel-by-kernel program's; `megakernel="auto"` records its choice."""
import numpy as np
import pytest

import ember as em
from tests.conftest import assert_close

pytestmark = pytest.mark.cuda
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _mlp(seed=0):
    rng = np.random.default_rng(seed)
    x = em.input("x", (7, 96))
    w1, w2 = em.tensor(rng.standard_normal((96, 130)).astype(np.float32)), em.tensor(rng.standard_normal((130, 33)).astype(np.float32))
    return em.softmax(em.relu(x @ w1) @ w2, axis=-1), {"x": rng.standard_normal((7, 96)).astype(np.float32)}


@pytest.mark.parametrize("options", [{}, {"seed": 3, "jitter": 7}, {"workers": 5, "seed": 1}, {"prefetch": 4096},
                                     {"seed": 4, "jitter": 9, "fence": True}, {"stream": 0},
                                     {"cyclic": True, "workers": 3}, {"slices": 2, "seed": 5, "jitter": 3},
                                     {"sticky": False, "jitter": 11}, {"compact": False, "seed": 6, "jitter": 13},
                                     {"evict": False, "stream": 65536}, {"idle": 65536, "seed": 7, "jitter": 17},
                                     {"preload": 16384, "seed": 8, "jitter": 19}, {"preload": 32768},
                                     {"relaxed_poll": True, "seed": 9, "jitter": 23}])
def test_megakernel_equals_its_serial_run_bit_for_bit_and_its_kernels_closely(options):
    """One worker runs every task in program order: the same task code, so any schedule must give
    its bits. The kernels launched one by one are compiled apart (FMA contraction may differ)."""
    y, ins = _mlp()
    serial = em.compile(y, device="cuda", megakernel=True, megakernel_options={"workers": 1})
    ref = em.compile(y, device="cuda", megakernel_options={"as_kernels": True})
    mk = em.compile(y, device="cuda", megakernel=True, megakernel_options=options)
    assert len(mk.launches) == options.get("slices", 1) and all(l.config["mode"] == "megakernel" for l in mk.launches)
    want = serial(**ins)
    # (the project's float32 tolerance: a 128-thread task's contraction into FMAs differed by 2.2e-5
    # relative in one of 231 outputs from the kernels', bench/results/gpu-session17d-2026-11-26/)
    assert_close(want, ref(**ins), "float32")
    for _ in range(20):  # the counters carry over from run to run (epochs)
        np.testing.assert_array_equal(mk(**ins), want)


def _tiny_llm(tmp_path, hidden=64, vocab=97):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=hidden, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=vocab, max_position_embeddings=256)
    m = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in m.parameters():
            if p.ndim == 2:
                p.mul_(2.5)
    m.save_pretrained(tmp_path / "tiny")
    return tmp_path / "tiny"


@pytest.mark.parametrize("dtype,hidden,options", [("float32", 64, {}), ("bfloat16", 64, {}), ("bfloat16", 256, {}),
                                                  ("bfloat16", 256, {"stream": 65536}), ("bfloat16", 256, {"decode_splits": 32}),
                                                  ("bfloat16", 256, {"slices": 3}), ("bfloat16", 256, {"replicate": True}),
                                                  ("float32", 64, {"replicate": True, "slices": 2}),
                                                  ("bfloat16", 256, {"stream_blocks": 2}),
                                                  ("bfloat16", 256, {"inline_writes": True}),
                                                  ("float32", 64, {"inline_writes": True, "seed": 4, "jitter": 5}),
                                                  ("bfloat16", 256, {"preload": 16384})])
def test_llm_decode_as_a_megakernel_gives_the_same_tokens(tmp_path, dtype, hidden, options):
    """(hidden 256: head dim 64, so the attention is flash-decoding — in the megakernel its cluster's
    blocks are splits combined through a workspace the megakernel owns; with a 2100-token vocabulary
    the LM head is a weight the stream asks L2 for; with 32 splits most of a short cache's splits
    hold no key)"""
    import ember.llm as L
    d = _tiny_llm(tmp_path, hidden, 2100 if any(k.startswith("stream") for k in options) else 97)
    a = L.load(d, device="cuda", dtype=dtype, max_seq_len=96)
    b = L.load(d, device="cuda", dtype=dtype, max_seq_len=96, megakernel=True, megakernel_options=options)
    assert b.program("decode", 1).meta["megakernel_choice"]["chosen"] == "megakernel"
    for prompt in ([5], [3, 17, 5, 88, 42, 7]):
        assert b.generate([prompt], max_new_tokens=40, stop_token_ids=[]) == \
            a.generate([prompt], max_new_tokens=40, stop_token_ids=[])


def test_auto_records_its_choice():
    y, ins = _mlp(1)
    p = em.compile(y, device="cuda", megakernel="auto")
    choice = p.meta["megakernel_choice"]
    assert choice["chosen"] in ("megakernel", "kernels") and choice["kernels_us"] > 0
    from ember.megakernel_choice import AUTO_CANDIDATES
    assert [c["options"] for c in choice["candidates"]] == list(AUTO_CANDIDATES)
    assert all(c.get("megakernel_us", 0) > 0 or c.get("rejected") for c in choice["candidates"])
    np.testing.assert_allclose(p(**ins), em.compile(y, device="cuda")(**ins), rtol=1e-5, atol=1e-6)
