"""Batch-invariant serving (docs/serving.md): a sequence's logits must not depend on the batch it
runs in nor on the cache slot it starts at.

Two mechanisms, each tested: the attention kernels start their key loops at the mask's first
allowed key (kernel/online.py `key_floor`), so a sequence prefilled at slots [P - L, P) sees its
keys in the same tiles as one prefilled at [0, L); and `LLM(batch_invariant=True)` compiles one
decode program over a named batch size, whose kernels' schedules cannot follow the row count.
On the CPU: the analysis, the generated CUDA source (compiled by NVRTC), one decode program for
every row count. On the GPU: bf16 logits bit-identical between batched and single runs."""
import math

import numpy as np
import pytest

import ember as em
from ember import symbolic as sm
from ember.codegen import cuda as cg
from ember.graph import iota_node
from ember.kernel.online import key_floor

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import ember.llm as L  # noqa: E402
from ember.llm.continuous import ContinuousBatch  # noqa: E402


def _attention(floor: bool, causal: bool = True):
    """One query row per sequence over a cache of P + 1 keys, sequence b's keys from start[b]."""
    B, H, D, n = 3, 2, 64, sm.dim("P") + 1
    q, k, v = (em.input(x, (B, H, 1, D), em.bfloat16) if x == "q" else em.input(x, (B, H, n, D), em.bfloat16)
               for x in "qkv")
    start = em.input("start", (B,), em.int32)
    key = em.iota((B, 1, 1, n), 3)
    slot = em.iota((B, 1, 1, n), 2) + em.Tensor(iota_node((), sm.dim("P"), em.int32))
    allowed = key <= slot if causal else None
    if floor:
        allowed = allowed & (key >= start.reshape(B, 1, 1, 1).minimum(slot))
    s = (q @ k.transpose(-1, -2)).cast(em.float32) * (1 / math.sqrt(D))
    p = (s if allowed is None else em.where(allowed, s, -math.inf)).softmax(-1).cast(em.bfloat16)
    return p @ v


def _streamed_source(y) -> str:
    """The CUDA source of the one streamed (decode or flash mode) kernel y compiles to on the H100."""
    p = em.compile(y, device="h100", dim_bounds={"P": 63})
    _, kernels = cg.split_program(p.source)
    srcs = [kernels[launch.kernel] for launch in p.launches if launch.config.get("mode") in ("decode", "flash")]
    assert len(srcs) == 1, [launch.config.get("mode") for launch in p.launches]
    return srcs[0]


def test_no_floor_without_a_lower_bound():
    for causal in (True, False):
        assert "const long long kbeg_ = 0;" in _streamed_source(_attention(floor=False, causal=causal))


def test_key_floor_finds_the_bound_in_the_mask():
    from ember.kernel import ir
    from ember.kernel.online import KEY, OnlineForm
    start = ir.load("start", sm.var("b", 0, None), sm.ONE, em.int32)
    key = ir.index(sm.var(KEY, 0, None), em.int32)
    x = ir.alu("where", em.float32, ir.alu("where", em.bool, ir.alu("lt", em.bool, key, start),
                                           ir.const(False, em.bool), ir.const(True, em.bool)),
               ir.const(1.0, em.float32), ir.const(float("-inf"), em.float32))
    f = OnlineForm(rows=(), query="q", keys=sm.sym(8), depth=None, depth_var=None, q=None, k=None, product=None,
                   score=None, score_acc=None, x=x, c=1.0, p_dtype=None, v=None, out_var="o", out_extent=sm.sym(1),
                   out_acc="a", store=None, accum=None)
    assert key_floor(f) is start
    flipped = ir.alu("where", em.float32, ir.alu("lt", em.bool, key, start), ir.const(1.0, em.float32),
                     ir.const(float("-inf"), em.float32))  # key < start: an upper bound, no floor
    assert key_floor(OnlineForm(**{**f.__dict__, "x": flipped})) is None


def _tiny(tmp_path, seed=0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, head_dim=64, vocab_size=512, max_position_embeddings=256)
    m = transformers.LlamaForCausalLM(cfg).eval()
    d = tmp_path / "tiny"
    m.save_pretrained(d)
    return d


def test_decode_and_prefill_kernels_start_at_the_rows_first_key(tmp_path):
    """The LLM step's attention kernels for the H100 (compiled offline): both loops start at kbeg_,
    the least first key of the block's rows, computed from the `start` input."""
    from ember.backends.cuda import compile_cuda
    from ember.llm.model import build_step
    llm = L.load(_tiny(tmp_path), device="cpu", dtype="bfloat16", max_seq_len=128)
    seen = set()
    for batch, T, bounds in ((sm.var("B", 1, 8), 1, {"P": 127, "B": 8}), (1, "T", None)):
        outs, writes = build_step(llm.weights, batch, T, 128)
        p = em.compile(outs, device="h100", writes=writes, dim_bounds=bounds, cache=False)
        prelude, kernels = cg.split_program(p.source)
        for launch in p.launches:
            mode = launch.config.get("mode")
            if batch != 1 and launch.config["cfg"].get("rows"):  # the projections: GEMVs shared by the rows
                assert launch.config["cfg"]["mode"] == "warp" and "accs_[8]" in kernels[launch.kernel]
                assert len(compile_cuda(prelude + "\n" + kernels[launch.kernel], "sm_90a")) > 0
                seen.add("rows")
            if mode in ("decode", "flash"):
                src = kernels[launch.kernel]
                assert "kbeg_ = f_ < kbeg_ ? f_ : kbeg_;" in src  # the least first key over the block's rows
                assert ("k0_ = kbeg_ + rank_ * chunk_" if mode == "decode" else "const long long kr_ = kbeg_ + ") in src
                assert len(compile_cuda(prelude + "\n" + src, "sm_90a")) > 0
                seen.add(mode)
    assert seen == {"decode", "flash", "rows"}


def test_one_decode_program_serves_every_row_count(tmp_path):
    d = _tiny(tmp_path)
    llm = L.load(d, device="cpu", max_seq_len=64, max_batch=4, batch_invariant=True)
    ref = L.load(d, device="cpu", max_seq_len=64, max_batch=4)
    rng = np.random.default_rng(1)
    prompts = [[int(t) for t in rng.integers(0, 512, rng.integers(3, 9))] for _ in range(3)]
    for n in (1, 3):  # batches of 1 and 3 rows: one decode program over the named batch size
        got = llm.generate(prompts[:n], max_new_tokens=8, stop_token_ids=[])
        assert got == ref.generate(prompts[:n], max_new_tokens=8, stop_token_ids=[])
    assert sorted(k for k in llm._programs if k[0] == "decode") == [("decode", "B")]
    assert set(llm._programs[("decode", "B")].dim_bounds) == {"B", "P"}


def _run(llm, jobs, steps):
    """Drive a ContinuousBatch: jobs [(step at which it joins, prompt)]; returns each job's logits
    per step (float32 host arrays, bitwise)."""
    cb = ContinuousBatch(llm, llm.max_batch)
    params = llm.sampling(max_new_tokens=steps + 1, stop_token_ids=[])
    logits = {i: [] for i in range(len(jobs))}
    where = {}
    for t in range(steps):
        for i, (at, prompt) in enumerate(jobs):
            if at == t:
                j = cb.join(i, np.array(prompt), params)
                where[i] = cb.rows.index(next(r for r in cb.rows if r is not None and r.key == i))
                assert j is not None
        p = cb.launch()
        host = p.out["logits"].float().cpu().numpy() if hasattr(p.out["logits"], "cpu") else np.asarray(p.out["logits"])
        cb.collect(p)
        for i, j in where.items():
            logits[i].append(host[j].copy())
    return logits


@pytest.mark.cuda
def test_cuda_bfloat16_batched_logits_equal_single_runs_bitwise(tmp_path):
    """Sequences join a running bf16 batch at other slots and row counts than when alone; every
    step's logits must be the same bits as the sequence's single-request run."""
    d = _tiny(tmp_path, seed=3)
    llm = L.load(d, device="cuda", dtype="bfloat16", max_seq_len=128, max_batch=4, batch_invariant=True)
    rng = np.random.default_rng(2)
    prompts = [[int(t) for t in rng.integers(0, 512, n)] for n in (19, 6, 11, 3)]
    together = _run(llm, [(0, prompts[0]), (2, prompts[1]), (5, prompts[2]), (9, prompts[3])], 24)
    for i, prompt in enumerate(prompts):
        at = [0, 2, 5, 9][i]
        alone = _run(llm, [(0, prompt)], 24 - at)[0]
        assert len(together[i]) == len(alone)
        for step, (a, b) in enumerate(zip(together[i], alone)):
            assert np.array_equal(a, b), (i, step, float(np.abs(a - b).max()))
