"""Cases run as ranks by tests/test_distributed.py (ember.distributed.launch, gloo on the CPU): each
rank checks its own results and exits non-zero on a mismatch. Usage: python tests/distributed_cases.py CASE"""
import sys

import numpy as np

import ember as em
import ember.nn  # noqa: F401
import ember.optim  # noqa: F401
import ember.distributed as ed


def collectives(comm, device="cpu"):
    """Programs with all-reduces and all-gathers (float32, bfloat16, odd shapes, several seeds) on the
    CPU (or each rank's GPU: NCCL) and in the reference, against numpy over every rank's inputs."""
    r, W = comm.rank, comm.world
    device = device if device == "cpu" else f"cuda:{r}"
    for seed, (m, k, n) in enumerate([(5, 8, 6), (3, 14, 1), (7, 6, 9)]):
        rng = np.random.default_rng(seed)
        A = rng.standard_normal((m, k * W)).astype(np.float32)
        B = rng.standard_normal((k * W, n)).astype(np.float32)
        mine = slice(r * k, (r + 1) * k)
        for dtype, tol in ((em.float32, 1e-4), (em.bfloat16, 0.15)):
            x = em.input("x", (m, k), dtype)
            h = em.all_reduce(x @ em.tensor(B[mine]).cast(dtype))  # row-parallel
            y0 = em.all_gather(h.cast(em.float32) + float(r), -1)  # ranks' columns side by side
            y1 = em.all_gather(h.cast(em.float32).sum(-1, keepdim=True), 0)  # rows stacked
            xs = A[:, mine].astype(dtype.np)
            full = A.astype(dtype.np).astype(np.float32) @ B.astype(dtype.np).astype(np.float32)
            want0 = np.concatenate([full + q for q in range(W)], -1)
            want1 = np.concatenate([full.sum(-1, keepdims=True)] * W, 0)
            prog = em.compile({"y0": y0, "y1": y1}, device=device)
            got = prog(x=xs)
            ref = em.reference({"y0": y0, "y1": y1}, x=xs)
            for name, want in (("y0", want0), ("y1", want1)):
                for what, v in (("program", got[name]), ("reference", ref[name])):
                    err = np.abs(v - want).max() / max(1.0, np.abs(want).max())
                    assert v.shape == want.shape and err < tol, (seed, dtype.name, name, what, err)
    s = prog.trace(x=xs)  # every rank together; the collectives' spans include waiting for the others
    assert s["collectives"] == 3 and s["collective_us"] > 0, s  # one all-reduce, two all-gathers


def gradients(comm):
    """The collectives' gradient rules: a column- then row-parallel MLP's shard gradients are the
    shards of the unsharded MLP's gradients (reference, float64)."""
    r, W = comm.rank, comm.world
    rng = np.random.default_rng(3)
    X = rng.standard_normal((4, 6))
    W1 = rng.standard_normal((6, 4 * W))  # columns split
    W2 = rng.standard_normal((4 * W, 5))  # rows split
    cols = slice(r * 4, (r + 1) * 4)
    x = em.input("x", (4, 6), em.float64)
    w1, w2 = em.input("w1", (6, 4), em.float64), em.input("w2", (4, 5), em.float64)
    y = em.all_reduce((x @ w1).relu() @ w2)
    z = em.all_gather(y * 0.5, -1)  # each rank's copy of y, side by side
    loss = (z * z).sum()
    g1, g2 = em.grad(loss, [w1, w2])
    got1, got2 = em.reference([g1, g2], x=X, w1=W1[:, cols], w2=W2[cols])
    # unsharded: loss = W * sum((0.5 y)^2), y = relu(X W1) W2; only this rank's copy's slice of
    # the gathered gradient flows back (all_gather's rule), and all_reduce passes it through
    h = np.maximum(X @ W1, 0)
    yy = h @ W2
    dy = 2 * 0.25 * yy
    d2 = h.T @ dy
    d1 = X.T @ ((dy @ W2.T) * (X @ W1 > 0))
    assert np.allclose(got2, d2[cols]) and np.allclose(got1, d1[:, cols]), "sharded gradients"


def train(comm):
    """Data-parallel compile_train: each rank steps on its half of the global batch; losses and
    parameters equal single-process training on the whole batch."""
    r, W = comm.rank, comm.world
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8 * W, 5)).astype(np.float32)
    Y = rng.standard_normal((8 * W, 3)).astype(np.float32)

    def make():
        return em.nn.Sequential(em.nn.Linear(5, 7, seed=1), em.nn.Tanh(), em.nn.Linear(7, 3, seed=2))

    def loss_fn(m, b):
        return ((m(b["x"]) - b["y"]) ** 2).mean()

    mine = slice(r * 8, (r + 1) * 8)
    dp = em.compile_train(make(), loss_fn, em.optim.AdamW(lr=0.05), {"x": X[mine], "y": Y[mine]}, device="cpu",
                          data_parallel=True)
    one = em.compile_train(make(), loss_fn, em.optim.AdamW(lr=0.05), {"x": X, "y": Y}, device="cpu")
    for _ in range(4):
        a = dp({"x": X[mine], "y": Y[mine]})
        b = one({"x": X, "y": Y})
        assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), ("loss", a, b)
    pa, pb = dp.parameters(), one.parameters()
    for k in pb:
        assert np.allclose(pa[k], pb[k], atol=1e-5), ("parameter", k)
    from ember import train as train_module
    train_module.BUCKET_ELEMS = 16  # one all-reduce per parameter or two, overlapped with the backward
    dp = em.compile_train(make(), loss_fn, em.optim.AdamW(lr=0.05), {"x": X[mine], "y": Y[mine]}, device="cpu",
                          data_parallel=True)
    assert sum(1 for l in dp.program.launches if l.collective) >= 4
    one = em.compile_train(make(), loss_fn, em.optim.AdamW(lr=0.05), {"x": X, "y": Y}, device="cpu")
    for _ in range(3):
        a, b = dp({"x": X[mine], "y": Y[mine]}), one({"x": X, "y": Y})
        assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), ("bucketed loss", a, b)


def sharding(comm):
    """ember.sharding: annotated global graphs -> each rank's graph; every output equals the global
    graph's (reference and compiled), and Megatron's MLP needs exactly one all-reduce."""
    from ember.graph import inputs_of
    from ember.sharding import shard_graph
    r, W = comm.rank, comm.world
    rng = np.random.default_rng(5)
    X = rng.standard_normal((6, 8))
    x = em.input("x", (6, 8), em.float64)
    w1, w2 = em.tensor(rng.standard_normal((12, 8))), em.tensor(rng.standard_normal((8, 12)))
    b, gamma = em.tensor(rng.standard_normal(8)), em.tensor(rng.standard_normal(8) + 1)
    table = em.tensor(rng.standard_normal((10, 8)))
    ids = em.input("ids", (6,), em.int32)
    IDS = rng.integers(0, 10, 6).astype(np.int32)
    wq, wk, wv, wo = (em.tensor(rng.standard_normal((8, 8))) for _ in range(4))
    mlp = (x @ w1.T).gelu() @ w2.T + b

    def heads(w):  # (6, 8) -> (2 heads, 6, 4): a reshape splitting the split axis
        return (x @ w.T).reshape(6, 2, 4).transpose(0, 1)
    q, k, v = heads(wq), heads(wk), heads(wv)
    causal = em.tensor(np.tril(np.ones((6, 6), bool)))
    att = em.where(causal, (q @ k.transpose(-1, -2)) * 0.5, -np.inf).softmax(-1) @ v
    block = x + att.transpose(0, 1).reshape(6, 8) @ wo.T  # heads merged back, row-parallel o
    cases = [
        ("mlp", [mlp], {w1.node: 0, w2.node: 1}, 1),
        ("mlp+softmax+layernorm", [mlp.softmax(-1), (mlp * gamma).amax(-1)], {w1.node: 0, w2.node: 1, gamma.node: 0}, None),
        ("split input rows", [(x * 2.0).sum(0), x.amax(0), x.T @ x], {x.node: 0}, None),
        ("split input columns", [x.softmax(-1), (x @ w1.T)], {x.node: 1}, None),
        ("embedding, vocab split", [table[ids] * 3.0], {table.node: 0}, 1),
        ("embedding, width split", [table[ids].sum(-1)], {table.node: 1}, None),
        ("attention, q split only", [att], {wq.node: 0}, None),
        ("attention block, Megatron", [block], {wq.node: 0, wk.node: 0, wv.node: 0, wo.node: 1}, 1),
    ]
    from ember import symbolic as sm
    from ember.ops.state import narrow_to, state_write
    cache = em.input("cache", (2, 10, 4), em.float64)  # (heads, slots, head dim): a KV cache split by heads
    wr = state_write(cache, heads(wk), 1, "P")
    seen = narrow_to(wr.updated, 1, sm.dim("P") + 6)
    cases += [
        ("kv cache write, heads split", [(seen * 2.0).sum(-1), wr.updated], {wk.node: 0, cache.node: 0}, None),
        ("pads of a split tensor", [em.pad(x, (1, 2)) * 1.5, em.pad(x, (0, 0, 2, 0)).sum(0)], {x.node: 1}, None),
    ]
    arrays = {"x": X, "ids": IDS, "cache": rng.standard_normal((2, 10, 4))}
    for name, outs, specs, count in cases:
        nodes = [o.node for o in outs]
        glob = {n.arg: n for n in inputs_of(nodes)}
        want = em.reference(outs, {"P": 3}, **{k: arrays[k] for k in glob})
        local, _, n = shard_graph(nodes, specs, r, W)
        feed = {}
        for k, node in glob.items():  # a split input is fed this rank's block
            a = arrays[k]
            if node in specs:
                ax, size = specs[node], a.shape[specs[node]] // W
                a = np.take(a, np.arange(r * size, (r + 1) * size), axis=ax)
            feed[k] = a
        ts = [em.Tensor(m) for m in local]
        compiled = em.compile(ts, device="cpu")
        got = em.reference(ts, {"P": 3}, **feed)
        prog = compiled.run(feed, dims={"P": 3} if "P" in compiled.dims else None)
        for o, a, c in zip(want, got, prog):
            assert a.shape == o.shape and np.allclose(a, o) and np.allclose(c, o), (name, np.abs(a - o).max())
        assert count is None or n == count, (name, n)


def llm(comm, arch="llama", sharding="manual", path="/tmp/ember-dist-llm"):
    """A tiny checkpoint of `arch` split over the ranks (`sharding`: written out or propagated):
    greedy tokens for a batch of two prompts of different lengths equal transformers' for each alone,
    and the propagated programs have the written-out ones' collectives."""
    import torch
    import transformers

    import ember.llm as L
    path = f"{path}-{arch}"
    kw = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=98, max_position_embeddings=256)
    torch.manual_seed(11)
    if arch == "qwen3":
        m = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(head_dim=32, **kw))
    elif arch == "qwen2":
        m = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**kw))
    else:
        m = transformers.LlamaForCausalLM(transformers.LlamaConfig(**kw))
    m.eval()
    with torch.no_grad():
        for p in m.parameters():
            if p.ndim == 2:
                p.mul_(2.5)
    if comm.rank == 0:
        m.save_pretrained(path)
    comm.barrier()
    prompts = [[3, 17, 5, 88, 42, 7], [9, 2, 61]]
    want = []
    for pr in prompts:
        with torch.no_grad():
            out = m.generate(torch.tensor([pr]), max_new_tokens=8, do_sample=False, eos_token_id=None,
                             pad_token_id=0, attention_mask=torch.ones(1, len(pr), dtype=torch.long))
        want.append(out[0, len(pr):].tolist())
    model = L.load(path, device="cpu", max_seq_len=64, max_batch=2, sharding=sharding)
    got = model.generate(prompts, max_new_tokens=8, stop_token_ids=[])
    assert got == want, (arch, sharding, got, want)
    # unseeded sampling: every rank draws the same tokens (rank 0's seed), or the caches would diverge
    sampled = model.generate(prompts, max_new_tokens=6, temperature=1.0, stop_token_ids=[])
    mine = np.array(sum(sampled, []), np.int64)
    assert (comm.all_gather(mine[None]) == mine[None]).all(), "ranks sampled different tokens"
    n = sum(1 for l in model.program("decode", 2).launches if l.collective)
    assert n == 2 * 2 + 2, n  # one all-reduce after o and after down per layer, the embedding's, the logits' gather


def fuzz_sharding(comm, count="60"):
    """Random fuzzer programs (ember/testing/fuzz.py: contractions, reductions, views, elementwise
    chains) with random inputs split along random axes: each rank's graph (ember.sharding) gives the
    global graph's values, in the reference and (every third) compiled."""
    from ember.graph import inputs_of
    from ember.sharding import shard_graph
    from ember.testing.fuzz import generate
    from ember.testing.fuzz_ops import build_ember
    from ember.testing.fuzz_run import make_inputs
    r, W = comm.rank, comm.world
    checked = collectives = 0
    for seed in range(int(count)):
        prog = generate(1000 + seed, "small")
        vals = build_ember(prog)
        outs = [vals[o] for o in prog.outputs]
        arrays = make_inputs(prog)
        rng = np.random.default_rng(seed)
        specs = {}
        for s in prog.inputs:  # the same draws on every rank
            axes = [d for d, n in enumerate(s.params["shape"]) if n % W == 0 and n >= W]
            if axes and rng.random() < 0.7:
                specs[vals[s.out].node] = int(rng.choice(axes))
        want = em.reference(outs, **arrays)
        local, _, n = shard_graph(outs, specs, r, W)
        feed = {}
        for node in inputs_of(local):
            a = arrays[node.arg]
            g = vals[node.arg].node
            if g in specs:
                ax, size = specs[g], a.shape[specs[g]] // W
                a = np.take(a, np.arange(r * size, (r + 1) * size), axis=ax)
            feed[node.arg] = a
        ts = [em.Tensor(m) for m in local]
        results = [("reference", em.reference(ts, **feed))]
        if seed % 3 == 0:
            results.append(("compiled", em.compile(ts, device="cpu")(**feed)))
        for what, got in results:
            got = got if isinstance(got, (list, tuple)) else [got]
            for name, a, b in zip(prog.outputs, got, want):
                a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
                tol = 2e-2 if b.dtype.itemsize == 2 else 1e-4
                scale = max(1.0, float(np.abs(b64[np.isfinite(b64)]).max(initial=0)))
                ok = a64.shape == b64.shape and np.allclose(a64, b64, rtol=tol, atol=tol * scale, equal_nan=True)
                assert ok, (seed, what, name, specs and {k.arg: v for k, v in specs.items()}, n)
        checked += bool(specs)
        collectives += n
    assert checked >= int(count) // 2, checked  # (most programs get at least one split input)
    if r == 0:
        print(f"fuzz_sharding: {count} programs, {checked} sharded, {collectives} collectives inserted")


if __name__ == "__main__":
    comm = ed.init()
    try:
        globals()[sys.argv[1]](comm, *sys.argv[2:])
    except BaseException:
        import traceback
        traceback.print_exc()
        ed.exit_rank(1)
    ed.shutdown()
    print(f"rank {comm.rank}: {sys.argv[1]} ok")
    ed.exit_rank(0)
