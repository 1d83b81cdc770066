"""ember.llm against transformers: tiny random-weight checkpoints of each supported architecture,
built from their configs and saved to a temp dir (no downloads); Ember's greedy tokens must equal
transformers' greedy `generate` in float32 on the CPU, batches and sharded checkpoints included."""
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

import ember.llm as L  # noqa: E402
from ember.arrays import InputError  # noqa: E402

VOCAB = 97
SMALL = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=256)


def _model(arch: str, **extra):
    kw = dict(SMALL, **extra)
    if arch == "llama":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(**kw))
    if arch == "llama3":  # Llama 3.2 style: llama3 rope scaling, tied embeddings, explicit head_dim
        kw.update(tie_word_embeddings=True, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                          "high_freq_factor": 4.0, "original_max_position_embeddings": 32},
                  rope_theta=500000.0)
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(**kw))
    if arch == "qwen2":
        return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**kw))
    if arch == "qwen3":
        kw.update(head_dim=32)  # not hidden / heads, as in the real Qwen3 models
        return transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**kw))
    if arch == "mistral":
        kw.update(sliding_window=None)
        return transformers.MistralForCausalLM(transformers.MistralConfig(**kw))
    raise AssertionError(arch)


def _save(tmp_path, arch, seed=0, **save_kw):
    torch.manual_seed(seed)
    m = _model(arch).eval()
    with torch.no_grad():  # larger random weights than the init's: distinct logits, no near-ties
        for p in m.parameters():
            if p.ndim == 2:
                p.mul_(2.5)
    d = tmp_path / arch
    m.save_pretrained(d, **save_kw)
    return m, d


def _hf_greedy(m, prompt, n):
    with torch.no_grad():
        out = m.generate(torch.tensor([prompt]), max_new_tokens=n, do_sample=False, eos_token_id=None,
                         pad_token_id=0, attention_mask=torch.ones(1, len(prompt), dtype=torch.long))
    return out[0, len(prompt):].tolist()


PROMPT = [3, 17, 5, 88, 42, 7]


@pytest.mark.parametrize("arch", ["llama", "llama3", "qwen2", "qwen3", "mistral"])
def test_greedy_tokens_equal_transformers(tmp_path, arch):
    m, d = _save(tmp_path, arch)
    llm = L.load(d, device="cpu", max_seq_len=64)
    with torch.no_grad():
        want_logits = m(torch.tensor([PROMPT])).logits[0, -1].numpy()
    np.testing.assert_allclose(llm.logits(PROMPT), want_logits, rtol=1e-4, atol=1e-4)
    got = llm.generate([PROMPT], max_new_tokens=32, stop_token_ids=[])
    assert got[0] == _hf_greedy(m, PROMPT, 32)


def test_one_prefill_and_one_decode_program_serve_every_length(tmp_path):
    m, d = _save(tmp_path, "llama", seed=1)
    llm = L.load(d, device="cpu", max_seq_len=48)
    for prompt in ([5], [9, 1, 4], list(range(10, 30))):
        assert llm.generate([prompt], max_new_tokens=12, stop_token_ids=[])[0] == _hf_greedy(m, prompt, 12)
    assert llm.compile_count == 2


def test_batch_of_different_lengths_equals_each_alone(tmp_path):
    m, d = _save(tmp_path, "qwen2", seed=2)
    llm = L.load(d, device="cpu", max_seq_len=48, max_batch=3)
    prompts = [[4, 8, 15, 16, 23, 42], [1], [50, 60, 70]]
    got = llm.generate(prompts, max_new_tokens=16, stop_token_ids=[])
    assert got == [_hf_greedy(m, p, 16) for p in prompts]
    assert llm.compile_count == 2  # one batch size: one prefill, one decode program


def test_sharded_checkpoint_and_stop_tokens(tmp_path):
    m, d = _save(tmp_path, "llama", seed=3, max_shard_size="40KB")
    assert (d / "model.safetensors.index.json").is_file()
    llm = L.load(d, device="cpu", max_seq_len=48)
    want = _hf_greedy(m, PROMPT, 20)
    assert llm.generate([PROMPT], max_new_tokens=20, stop_token_ids=[])[0] == want
    stop = want[5]
    cut = llm.generate([PROMPT], max_new_tokens=20, stop_token_ids=[stop])[0]
    assert cut == want[:want.index(stop) + 1]  # ends with the stop token, included
    assert list(llm.stream(PROMPT, max_new_tokens=20, stop_token_ids=[stop])) == cut


def test_seeded_sampling(tmp_path):
    _, d = _save(tmp_path, "llama", seed=4)
    llm = L.load(d, device="cpu", max_seq_len=48)
    a = llm.generate([PROMPT], max_new_tokens=16, temperature=1.0, seed=7, stop_token_ids=[])
    b = llm.generate([PROMPT], max_new_tokens=16, temperature=1.0, seed=7, stop_token_ids=[])
    c = llm.generate([PROMPT], max_new_tokens=16, temperature=1.0, seed=8, stop_token_ids=[])
    assert a == b and a != c
    greedy = llm.generate([PROMPT], max_new_tokens=16, stop_token_ids=[])
    assert llm.generate([PROMPT], max_new_tokens=16, temperature=0.7, top_k=1, seed=1, stop_token_ids=[]) == greedy
    assert llm.generate([PROMPT], max_new_tokens=16, temperature=0.7, top_p=1e-6, seed=1, stop_token_ids=[]) == greedy


def test_sampling_filters():
    from ember.llm.sampling import sample
    rng = np.random.default_rng(0)
    logits = np.log(np.array([[0.5, 0.3, 0.15, 0.05]]))
    seen = {int(sample(logits, 1.0, 2, None, rng)[0]) for _ in range(300)}
    assert seen == {0, 1}
    seen = {int(sample(logits, 1.0, None, 0.7, rng)[0]) for _ in range(300)}
    assert seen == {0, 1}  # 0.5 < 0.7, 0.8 >= 0.7: the nucleus is the first two
    counts = np.bincount([int(sample(logits, 1.0, None, None, rng)[0]) for _ in range(4000)], minlength=4) / 4000
    np.testing.assert_allclose(counts, [0.5, 0.3, 0.15, 0.05], atol=0.03)


def _edit_config(d, **changes):
    f = d / "config.json"
    cfg = json.loads(f.read_text())
    cfg.update(changes)
    f.write_text(json.dumps(cfg))


def test_bad_checkpoints_and_inputs_are_one_line_errors(tmp_path):
    _, d = _save(tmp_path, "llama", seed=5, max_shard_size="40KB")
    llm = L.load(d, device="cpu", max_seq_len=16)
    with pytest.raises(InputError, match="exceed max_seq_len 16"):
        llm.generate([list(range(12))], max_new_tokens=8)
    with pytest.raises(InputError, match="token id 97 is outside the vocabulary"):
        llm.generate([[1, 97]], max_new_tokens=2)
    with pytest.raises(ValueError, match="temperature"):
        llm.generate([[1]], temperature=-1.0)
    shards = sorted(p for p in os.listdir(d) if p.endswith(".safetensors"))
    raw = (d / shards[-1]).read_bytes()
    (d / shards[-1]).write_bytes(raw[: len(raw) // 2])
    with pytest.raises(L.CheckpointError, match=shards[-1]):
        L.load(d, device="cpu")
    os.remove(d / shards[-1])
    with pytest.raises(L.CheckpointError, match="is missing"):
        L.load(d, device="cpu")
    _edit_config(d, model_type="gpt2")
    with pytest.raises(L.ConfigError, match="model_type 'gpt2' is not supported"):
        L.load(d, device="cpu")
    _edit_config(d, model_type="llama", rope_parameters={"rope_type": "yarn", "rope_theta": 1e4, "factor": 2.0})
    with pytest.raises(L.ConfigError, match="'yarn'"):
        L.load(d, device="cpu")


def test_missing_tensor_and_mistral_window(tmp_path):
    from safetensors.numpy import load_file, save_file
    _, d = _save(tmp_path, "mistral", seed=6)
    _edit_config(d, sliding_window=8)
    with pytest.raises(L.ConfigError, match="sliding_window 8"):
        L.load(d, device="cpu", max_seq_len=32)
    L.load(d, device="cpu", max_seq_len=8)  # within the window: full attention is exact
    t = load_file(str(d / "model.safetensors"))
    del t["model.layers.1.mlp.up_proj.weight"]
    save_file(t, str(d / "model.safetensors"))
    with pytest.raises(L.CheckpointError, match="'model.layers.1.mlp.up_proj.weight' is missing"):
        L.load(d, device="cpu", max_seq_len=8)


def _word_tokenizer(d):
    from tokenizers import Tokenizer, models, pre_tokenizers
    vocab = {f"w{i}": i for i in range(VOCAB)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(d / "tokenizer.json"))


def test_cli_generate(tmp_path, capsys):
    from ember.cli import main
    m, d = _save(tmp_path, "llama", seed=7)
    want = _hf_greedy(m, PROMPT, 10)
    assert main(["generate", str(d), "--prompt-ids", ",".join(map(str, PROMPT)), "--max-new-tokens", "10",
                 "--ids", "--device", "cpu"]) == 0
    out, err = capsys.readouterr()
    assert out.split() == [str(t) for t in want]
    assert "tok/s" in err and "2 compiles" in err
    assert main(["generate", str(d), "--prompt", "w1 w2", "--device", "cpu"]) == 2  # no tokenizer.json yet
    assert "tokenizer.json" in capsys.readouterr().err
    _word_tokenizer(d)
    assert main(["generate", str(d), "--prompt", " ".join(f"w{t}" for t in PROMPT), "--max-new-tokens", "10",
                 "--device", "cpu"]) == 0
    out, _ = capsys.readouterr()
    assert out.split() == [f"w{t}" for t in want]
    assert main(["generate", str(d), "--prompt-ids", "1,500", "--ids", "--device", "cpu"]) == 2
    assert "outside the vocabulary" in capsys.readouterr().err


@pytest.mark.cuda
@pytest.mark.parametrize("arch", ["llama3", "qwen3"])
def test_cuda_greedy_tokens_equal_transformers(tmp_path, arch):
    m, d = _save(tmp_path, arch, seed=8)
    llm = L.load(d, device="cuda", dtype="float32", max_seq_len=64, max_batch=2)
    prompts = [PROMPT, [9, 2]]
    want = [_hf_greedy(m, p, 32) for p in prompts]
    assert llm.generate(prompts, max_new_tokens=32, stop_token_ids=[]) == want
    assert llm.compile_count == 2
    stop = want[0][6]  # the loop runs a step ahead of the host: the stop must still end it there
    assert llm.generate([PROMPT], max_new_tokens=32, stop_token_ids=[stop])[0] == want[0][:want[0].index(stop) + 1]
    assert list(llm.stream(PROMPT, max_new_tokens=5, stop_token_ids=[])) == want[0][:5]
    assert llm.generate([PROMPT], max_new_tokens=1, stop_token_ids=[])[0] == want[0][:1]


@pytest.mark.cuda
def test_cuda_bfloat16_logits_within_bfloat16_tolerance(tmp_path):
    m, d = _save(tmp_path, "llama", seed=9)
    llm = L.load(d, device="cuda", dtype="bfloat16", max_seq_len=64)
    with torch.no_grad():
        want = m.to(torch.bfloat16)(torch.tensor([PROMPT])).logits[0, -1].float().numpy()
    got = llm.logits(PROMPT)
    cos = float(np.dot(got, want) / (np.linalg.norm(got) * np.linalg.norm(want)))
    assert cos > 0.999 and np.abs(got - want).max() < 0.05 * np.abs(want).max()


def test_continuous_batch_rows_join_and_leave(tmp_path):
    """Sequences joining a running batch between steps (and leaving it) get the tokens they get alone."""
    from ember.llm.continuous import ContinuousBatch
    m, d = _save(tmp_path, "llama", seed=12)
    llm = L.load(d, device="cpu", max_seq_len=64, max_batch=4)
    rng = np.random.default_rng(0)
    jobs = [([int(t) for t in rng.integers(1, 97, rng.integers(1, 7))], int(rng.integers(2, 12))) for _ in range(9)]
    want = [_hf_greedy(m, p, n) for p, n in jobs]
    batch = ContinuousBatch(llm, 4)
    got: dict = {i: [] for i in range(len(jobs))}
    waiting = list(range(len(jobs)))
    steps = 0
    while waiting or batch.active:
        for i in list(waiting):  # join whoever fits, between steps
            p, n = jobs[i]
            if batch.fits(len(p), n):
                got[i].append(batch.join(i, np.array(p), llm.sampling(n, stop_token_ids=[])))
                waiting.remove(i)
        for j in range(batch.size):
            if batch.rows[j] is not None and batch.finished(j):
                batch.leave(j)
        if batch.active:
            for _, key, tok in batch.step():
                got[key].append(tok)
            steps += 1
            for j in range(batch.size):
                if batch.rows[j] is not None and batch.finished(j):
                    batch.leave(j)
    assert [got[i] for i in range(len(jobs))] == want
    assert {k for k in llm._programs if k[0] == "prefill"} == {("prefill", 1)}  # joins prefill one row
    assert {k[1] for k in llm._programs if k[0] == "decode"} <= {1, 2, 4}
