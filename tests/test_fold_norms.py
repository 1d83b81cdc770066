"""Target.fold_norms (kernel/recompute.py): a few-row contraction recomputes the RMSNorm of its
operand, with the norm's 1 / rms taken out of the product so the statistic and the product run as
one loop — one kernel where there were two, outputs equal to the reference within tolerance, an
LLM's greedy tokens unchanged. Off by default (not yet measured faster on the GPU)."""
import numpy as np
import pytest

import ember as em
from ember.backends.target import get_target
from ember.kernel import ir
from ember.kernel.recompute import split_invariant_factor
from ember import symbolic as sm


def _rms_linear(M, K, N, dtype, seed):
    rng = np.random.default_rng(seed)
    x = em.input("x", (M, K), dtype)
    g = em.tensor((1 + 0.1 * rng.standard_normal(K)).astype(np.float32)).cast(dtype)
    w = em.tensor((rng.standard_normal((N, K)) * 0.05).astype(np.float32)).cast(dtype)
    xf = x.cast(em.float32)
    r = (xf * xf).mean(axis=-1, keepdim=True) + 1e-5
    y = ((xf * r.rsqrt()).cast(dtype) * g) @ w.transpose(0, 1)
    return y, rng.standard_normal((M, K)).astype(np.float32)


@pytest.mark.parametrize("dtype,M,K,N,seed", [(em.float32, 1, 256, 300, 0), (em.float32, 3, 200, 129, 1),
                                              (em.bfloat16, 1, 256, 300, 2), (em.bfloat16, 2, 320, 77, 3)])
def test_folded_norm_is_one_kernel_and_matches_the_reference(dtype, M, K, N, seed):
    y, xin = _rms_linear(M, K, N, dtype, seed)
    ref = em.reference(y, x=xin)
    plain = em.compile(y, device="cpu", cast_inputs=True)
    folded = em.compile(y, device=get_target("cpu").replace(fold_norms=True), cast_inputs=True)
    assert len(folded.launches) == len(plain.launches) - 1
    tol = 1e-5 if dtype == em.float32 else 2e-2  # (bf16: the normalised value is no longer rounded)
    got = np.asarray(folded(x=xin), np.float64)
    assert np.abs(got - ref).max() <= tol * np.abs(ref).max()


def test_split_invariant_factor_takes_out_only_a_statistic_the_whole_update_waits_for():
    f32 = em.float32
    k = sm.index_var("r0_0", 64)
    x = ir.load("x", k, sm.ONE, f32)
    w = ir.load("w", k * 3, sm.ONE, f32)
    stat = ir.alu("recip", f32, ir.acc("acc1", f32))
    rest, scale = split_invariant_factor(ir.alu("mul", f32, ir.alu("mul", f32, x, stat), w), {"r0_0"}, f32)
    assert scale is stat and {v.op for v in ir.val_toposort([rest])} == {"load", "mul"}
    # a softmax's exp(s - max) reads a statistic inside the loop: left as it is (kernel/online.py's form)
    p = ir.alu("exp2", f32, ir.alu("sub", f32, x, ir.acc("acc0", f32)))
    assert split_invariant_factor(ir.alu("mul", f32, ir.alu("mul", f32, p, stat), w), {"r0_0"}, f32) is None
    assert split_invariant_factor(ir.alu("mul", f32, x, w), {"r0_0"}, f32) is None  # (no statistic)


def _tiny_llm(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=97, max_position_embeddings=256)
    transformers.LlamaForCausalLM(cfg).save_pretrained(tmp_path / "tiny")
    return tmp_path / "tiny"


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_llm_decode_with_folded_norms_gives_the_same_tokens(tmp_path, device):
    import ember.llm as L
    d = _tiny_llm(tmp_path)
    a = L.load(d, device=device, dtype="float32", max_seq_len=64)
    b = L.load(d, device=get_target(device).replace(fold_norms=True), dtype="float32", max_seq_len=64)
    for prompt in ([5], [3, 17, 5, 88, 42, 7]):
        assert b.generate([prompt], max_new_tokens=12, stop_token_ids=[]) == \
            a.generate([prompt], max_new_tokens=12, stop_token_ids=[])
    assert len(b.program("decode", 1).launches) < len(a.program("decode", 1).launches)


def test_folded_decode_step_compiles_for_the_h100(tmp_path):
    pytest.importorskip("cuda.bindings")
    import ember.llm as L
    from ember.backends.cuda import compile_cuda
    from ember.llm.model import build_step
    llm = L.load(_tiny_llm(tmp_path), device="h100", dtype="bfloat16", max_seq_len=128)
    outs, writes = build_step(llm.weights, 1, 1, llm.max_seq_len)
    t = llm.target.replace(fold_norms=True)
    p = em.compile(outs, device=t, writes=writes, dim_bounds={"P": 127})
    base = em.compile(outs, device=llm.target, writes=writes, dim_bounds={"P": 127})
    assert len(p.launches) <= len(base.launches) - 2 * 2  # (two norms a layer)
    assert len(compile_cuda(p.source, "sm_90a")) > 0


def test_scaled_weights_leave_the_folded_gemvs_only_x_and_their_weights(tmp_path):
    """With the norms' weights multiplied into qkv / gate / up (build_step's scale_weights, which the
    LLM runtime sets with Target.fold_norms), a folded GEMV reads the residual stream and its
    matrix, not the norm's weight; the step's logits stay within float32 rounding of the plain one."""
    import numpy as np
    import ember.llm as L
    from ember.llm.model import build_step
    llm = L.load(_tiny_llm(tmp_path), device="cpu", dtype="float32", max_seq_len=64)
    t = get_target("h100").replace(fold_norms=True)
    outs, writes = build_step(llm.weights, 1, 1, llm.max_seq_len, scale_weights=True)
    p = em.compile(outs, device=t, writes=writes, dim_bounds={"P": 63})
    qkv = p.launches[1]  # (the embedding, then the first layer's q/k/v GEMV)
    assert len(qkv.args) == 3, qkv.args
    feeds = []
    for sw in (False, True):
        o, w = build_step(llm.weights, 1, 1, llm.max_seq_len, scale_weights=sw)
        prog = em.compile(o, device="cpu", writes=w, dim_bounds={"P": 63})
        rng = np.random.default_rng(0)
        feed = {"tokens": np.array([[5]], np.int32), "positions": np.array([[3]], np.int32), "start": np.zeros(1, np.int32)}
        for i in range(len(llm.weights.layers)):
            for kv in "kv":
                feed[f"{kv}{i}"] = rng.standard_normal((1, llm.weights.kv_heads, 64, llm.config.head_dim)).astype(np.float32)
        feeds.append(np.asarray(prog.run(feed, dims={"P": 3})["logits"]))
    np.testing.assert_allclose(feeds[1], feeds[0], rtol=1e-4, atol=1e-4)


def test_a_folded_decode_gemv_is_one_warp_mode_loop():
    """At a Llama-1B q/k/v shape the folded kernel is a warp-per-row GEMV whose statistic and
    product share one loop (knob `fuse`): no wait for the statistic before the weights load."""
    from ember.codegen import cuda as cg
    from ember.kernel.lower import lower
    t = get_target("h100").replace(fold_norms=True)
    y, _ = _rms_linear(1, 2048, 3072, em.bfloat16, 0)
    (k, _), = lower([y.node], target=t).kernels
    cfg = t.default_config(k, t)
    assert cfg["mode"] == "warp" and cfg.get("fuse")
    src = cg.render_kernel(k, cfg, t)[0]
    assert src.count("for (int r_ = ") == 1 and src.count("em_warp_reduce") == 2


@pytest.mark.cuda
@pytest.mark.parametrize("dtype,M", [(em.bfloat16, 1), (em.float32, 3)])
def test_cuda_folded_norm_matches_the_reference(dtype, M):
    y, xin = _rms_linear(M, 2048, 3072, dtype, 5)
    ref = em.reference(y, x=xin)
    folded = em.compile(y, device=get_target("cuda").replace(fold_norms=True), cast_inputs=True)
    got = np.asarray(folded(x=xin), np.float64)
    tol = 1e-4 if dtype == em.float32 else 2e-2
    assert np.abs(got - ref).max() <= tol * np.abs(ref).max()
