"""Attention as Hugging Face's eager implementations write it (BERT: q/k/v with bias adds and a
padding mask gathered through the token ids; a Llama: GQA, rotary, a causal mask built from
positions, v from a split-K projection) streams in one kernel: on the H100 target (offline) the
attention is one `flash` kernel, and on the CPU with the streaming hook the program equals torch."""
import dataclasses

import pytest

import ember as em
from ember.backends.cpu_target import online_softmax as cpu_stream
from ember.backends.target import get_target

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _bert(seq=128, batch=2):
    cfg = transformers.BertConfig(attn_implementation="eager", num_hidden_layers=1, hidden_size=128,
                                  num_attention_heads=2, intermediate_size=256, vocab_size=500)
    torch.manual_seed(0)
    m = transformers.BertModel(cfg).eval()

    class Last(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, ids, mask):
            return self.m(input_ids=ids, attention_mask=mask).last_hidden_state
    ids = torch.randint(0, 500, (batch, seq), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[1, seq // 2:] = 0  # padding in the second sequence
    return Last().eval(), (ids, mask)


def _llama(seq=256, hidden=512):
    cfg = transformers.LlamaConfig(hidden_size=hidden, num_hidden_layers=1, num_attention_heads=hidden // 64,
                                   num_key_value_heads=hidden // 128, head_dim=64, intermediate_size=2 * hidden,
                                   vocab_size=500, attn_implementation="eager")
    torch.manual_seed(0)
    m = transformers.LlamaForCausalLM(cfg).eval()

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, ids):
            return self.m(input_ids=ids, use_cache=False).logits
    return Logits().eval(), (torch.randint(0, 500, (1, seq), generator=torch.Generator().manual_seed(1)),)


@pytest.mark.parametrize("make", [_bert, _llama])
def test_eager_attention_is_one_flash_kernel_on_the_h100(make):
    model, ins = make()
    model = model.to(torch.bfloat16)
    fn = em.from_torch(model, ins, device="h100", precision="torch")
    modes = [l.config.get("mode") for l in fn.program.launches]
    assert modes.count("flash") == 1, modes


@pytest.mark.parametrize("make", [lambda: _bert(seq=40, batch=2), lambda: _llama(seq=48, hidden=256)])
def test_streamed_eager_attention_equals_torch_on_the_cpu(make):
    model, ins = make()
    host = dataclasses.replace(get_target("cpu"), online_softmax=cpu_stream)
    streamed = em.from_torch(model, ins, device=host)
    plain = em.from_torch(model, ins, device="cpu")
    assert len(streamed.program.launches) < len(plain.program.launches)
    with torch.no_grad():
        want = model(*ins).float()
    got = streamed(*ins).float()
    assert (got - want).abs().max().item() <= 1e-3 * max(1.0, want.abs().max().item())


@pytest.mark.cuda
@pytest.mark.parametrize("make", [_bert, _llama])
def test_flash_eager_attention_matches_torch_on_the_gpu(make):
    """The same models in bf16 on the GPU (BERT with a padded second sequence) against torch's
    float32 model on the same weights."""
    model, ins = make()
    ins = tuple(x.cuda() for x in ins)
    with torch.no_grad():
        want = model.cuda()(*ins).float()
        fn = em.from_torch(model.to(torch.bfloat16), ins, device="cuda", precision="torch")
        assert [l.config.get("mode") for l in fn.program.launches].count("flash") == 1
        got = fn(*ins).float()
    assert (got - want).abs().max().item() <= 5e-2 * max(1.0, want.abs().max().item())


def test_a_decode_step_keeps_q_rotary_inside_its_attention_kernel(tmp_path):
    """The stored-projection retries apply only to attention that does not stream as the default
    partition leaves it: a decode step's attention streams with q's rotary computed inside, so its
    only elementwise kernels are the KV cache writes (over the filled slots P)."""
    from ember.llm.model import build_step
    from ember.llm.runtime import load
    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=97, max_position_embeddings=256)
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(cfg).eval().to(torch.bfloat16).save_pretrained(tmp_path)
    llm = load(tmp_path, device="cpu", max_seq_len=128)
    outs, writes = build_step(llm.weights, 1, 1, 128)
    p = em.compile(outs, device="h100", writes=writes, dim_bounds={"P": 127})
    modes = [l.config.get("mode") for l in p.launches]
    assert modes.count("decode") == 2
    heads = [h for h in p.meta["kernels_ir"].split("\nkernel ") if h.split("(")[0].strip().split()[-1] in
             {l.kernel for l in p.launches if l.config.get("mode") == "elementwise"}]
    assert heads and all("dims(P)" in h.split("\n")[0] for h in heads), [h.split("\n")[0][:120] for h in heads]
