"""Decode attention's first key tiles before its grid-dependency wait (knob `early_keys`,
codegen/cuda_flash_early.py) and the kernel before it triggering late (`pdl_late`,
codegen/cuda_pdl.py), set together by the CUDA Target's program pass (backends/cuda_target.py
`_with_early_keys`) only where the kernel before writes neither K nor V."""
import math

import pytest

import ember as em
from ember import pipeline
from ember.backends.target import get_target


def _layers(N, S, D, B=1, Hkv=8, G=4, chain=False, cache_by_matmul=False):
    """N decode attentions in program order; `chain`: each layer's q adds the previous layer's output
    (the kernel before writes what this one reads, though not its cache); `cache_by_matmul`: each
    layer's K is a matmul's output (the kernel before writes the cache)."""
    outs, prev = [], None
    for i in range(N):
        q = em.input(f"q{i}", (B, Hkv, G, 1, D), em.bfloat16)
        if chain and prev is not None:
            q = q + prev
        if cache_by_matmul:
            a = em.input(f"a{i}", (B * Hkv * S, 32), em.bfloat16)
            w = em.input(f"w{i}", (32, D), em.bfloat16)
            k = (a @ w).reshape((B, Hkv, S, D))
        else:
            k = em.input(f"k{i}", (B, Hkv, S, D), em.bfloat16)
        v = em.input(f"v{i}", (B, Hkv, S, D), em.bfloat16)
        s = (q @ k.unsqueeze(2).transpose(-1, -2)).cast(em.float32) * (1.0 / math.sqrt(D))
        prev = s.softmax(-1).cast(em.bfloat16) @ v.unsqueeze(2)
        outs.append(prev)
    return outs


def _cfgs(outs, target, configs=None, early=None):
    lowered = pipeline.lower([o.node for o in outs], None, target)
    if early is not None:
        configs = [dict(target.default_config(k, target), early_keys=early) for k, _ in lowered.kernels]
    src, launches = pipeline.render(lowered, target, configs)
    return lowered, src, [l["cfg"] for l in launches]


@pytest.mark.parametrize("chain", [False, True])
def test_early_keys_where_the_kernel_before_leaves_the_cache_alone(chain, monkeypatch):
    """Every decode attention after the first gets `early_keys` and its kernel before `pdl_late`
    (even when that kernel writes this one's q: only K and V are read early); the key tiles' copies
    come before the wait and q's after it; EMBER_DECODE_EARLY=0 turns the pass off."""
    from ember.codegen.cuda import split_program
    t = get_target("h100")
    _, src, cfgs = _cfgs(_layers(3, 3001, 128, chain=chain), t)
    assert [c["mode"] for c in cfgs] == ["decode"] * 3
    assert [c.get("early_keys") for c in cfgs] == [None, 1, 1]
    assert [c.get("pdl_late") for c in cfgs] == [2, 2, None]  # (the default: a decode before triggers after its keys)
    _, kernels = split_program(src)
    first, second = list(kernels.values())[:2]
    body = second.split("__global__")[-1]
    wait = body.index("EM_PDL_WAIT();")
    assert wait < body.index("for (int t_ = warp_") < body.index("EM_PDL_TRIGGER();")
    assert body.index("em_cp16(my_") < wait < body.index("unsigned short* dst_ = Qs") < body.index("q is in shared memory")
    assert chain or "cp.async.wait_group 0;\" ::: \"memory\"); __syncthreads();  /* q is in shared memory" in body
    head = first.split("__global__")[-1]  # (the first: no early keys; it triggers after its wait)
    assert head.index("EM_PDL_WAIT();") < head.index("em_cp16(")
    _, src1, cfgs1 = _cfgs(_layers(3, 3001, 128, chain=chain), t, None, early=1)
    assert [c.get("pdl_late") for c in cfgs1] == [1, 1, None] and "EM_PDL_WAIT(); EM_PDL_TRIGGER();" in src1
    monkeypatch.setenv("EMBER_DECODE_EARLY", "0")
    _, src0, cfgs0 = _cfgs(_layers(3, 3001, 128, chain=chain), t)
    assert all("early_keys" not in c and "pdl_late" not in c for c in cfgs0)
    assert "EM_PDL_TRIGGER();" in src0 and "EM_PDL_WAIT(); EM_PDL_TRIGGER();" not in src0


def test_no_early_keys_where_the_kernel_before_writes_the_cache():
    """A cache that the kernel just before writes (a matmul's output) is read after the wait, and that
    kernel keeps its early trigger; a decode config's own `early_keys` 0 keeps it off; mode 2 makes a
    decode attention before trigger after its key loop instead."""
    t = get_target("h100")
    lowered, _, cfgs = _cfgs(_layers(2, 1000, 64, cache_by_matmul=True), t)
    modes = [c["mode"] for c in cfgs]
    assert modes.count("decode") == 2 and modes[0] != "decode"
    for i, c in enumerate(cfgs):
        if c["mode"] == "decode":
            assert "early_keys" not in c and "pdl_late" not in cfgs[i - 1], (i, cfgs)
    outs = _layers(3, 3001, 128)
    lowered = pipeline.lower([o.node for o in outs], None, t)
    base = [dict(t.default_config(k, t)) for k, _ in lowered.kernels]
    _, _, off = _cfgs(outs, t, [dict(c, early_keys=0) for c in base])
    assert all("early_keys" not in c and "pdl_late" not in c for c in off)
    _, src2, two = _cfgs(outs, t, [dict(c, early_keys=2) for c in base])
    assert [c.get("pdl_late") for c in two] == [2, 2, None]
    from ember.codegen.cuda import split_program
    first = list(split_program(src2)[1].values())[0].split("__global__")[-1]
    assert first.index("EM_PDL_WAIT();") < first.index("for (int t_ = warp_") < first.index("EM_PDL_TRIGGER();") \
        < first.index("every warp is done with the ring") + 200


def test_l2_ahead_asks_for_the_rows_past_the_ring_before_the_wait():
    """Knob `l2_ahead` (with the early keys): each block's next rows of K and V, past its ring's first
    tiles, asked of L2 before the wait; not on a kernel without the early keys."""
    from ember.codegen.cuda import split_program
    t = get_target("h100")
    outs = _layers(3, 3001, 128)
    lowered = pipeline.lower([o.node for o in outs], None, t)
    _, src, _ = _cfgs(outs, t, [dict(t.default_config(k, t), l2_ahead=65536) for k, _ in lowered.kernels])
    first, second, _ = [b.split("__global__")[-1] for b in split_program(src)[1].values()]
    assert "em_prefetch_l2_span" not in first and second.count("em_prefetch_l2_span") == 2
    assert second.index("em_prefetch_l2_span") < second.index("EM_PDL_WAIT();") and "65536ull" in second


def test_early_keys_kernels_compile_for_sm90():
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_cuda
    from ember.codegen.cuda import split_program
    t = get_target("h100")
    for D, chain, mode in ((128, False, 1), (64, True, 2), (128, True, 3)):
        outs = _layers(3, 3001, D, chain=chain)
        lowered = pipeline.lower([o.node for o in outs], None, t)
        base = [dict(t.default_config(k, t), early_keys=mode, stages=6 if D == 64 else 4) for k, _ in lowered.kernels]
        src, _ = pipeline.render(lowered, t, base)
        prelude, kernels = split_program(src)
        for body in kernels.values():
            assert len(compile_cuda(prelude + "\n" + body, "sm_90a")) > 0


@pytest.mark.cuda
@pytest.mark.parametrize("D,chain,mode,stages,cluster,gather,steal,l2", [
    (128, False, 1, 4, 8, 1, 0, 0), (128, True, 2, 4, 8, 1, 0, 65536), (64, True, 1, 6, 8, 0, 0, 0),
    (128, True, 2, 2, 4, 1, 0, 0), (64, False, 2, 4, 2, 1, 0, 32768), (128, False, 3, 6, 8, 1, 0, 0),
    (64, True, 3, 2, 4, 0, 0, 0), (128, True, 2, 4, 8, 1, 1, 0), (64, False, 3, 3, 4, 1, 1, 0)])
def test_cuda_decode_early_keys_equal_torch(D, chain, mode, stages, cluster, gather, steal, l2):
    """Three decode attentions in one graph replay with early keys (and each layer's q from the layer
    before, where `chain`) against float64 attention of each layer's actual inputs, odd key counts,
    several seeds and replays."""
    import torch
    B, Hkv, G, S, N = 2, 4, 3, 3001, 3
    target = pipeline.get_target("cuda")
    outs = _layers(N, S, D, B=B, Hkv=Hkv, G=G, chain=chain)
    lowered = pipeline.lower([o.node for o in outs], None, target)
    cfg = {"mode": "decode", "warps": 4, "BN": 16 if D == 128 else 32, "stages": stages, "cluster": cluster, "kt": 1,
           "gather": gather, "early_keys": mode, "steal": steal, "l2_ahead": l2}
    p = pipeline.build_program(lowered, target, None, "tuple", configs=[dict(cfg) for _ in lowered.kernels])
    assert [l.config["cfg"].get("early_keys") for l in p.launches] == [None, 1, 1]
    for seed in range(3):
        torch.manual_seed(seed)
        qs = [torch.randn(B, Hkv, G, 1, D, device="cuda").bfloat16() for _ in range(N)]
        ks = [torch.randn(B, Hkv, S, D, device="cuda").bfloat16() for _ in range(N)]
        vs = [torch.randn(B, Hkv, S, D, device="cuda").bfloat16() for _ in range(N)]
        feed = {**{f"q{i}": qs[i] for i in range(N)}, **{f"k{i}": ks[i] for i in range(N)}, **{f"v{i}": vs[i] for i in range(N)}}
        for _ in range(2):
            got = p(**feed)
            prev = None
            for i in range(N):
                q = qs[i] if prev is None or not chain else (qs[i] + prev)
                s = (q.double() @ ks[i].double().unsqueeze(2).transpose(-1, -2)) / math.sqrt(D)
                want = s.softmax(-1) @ vs[i].double().unsqueeze(2)
                assert float((got[i].double() - want).abs().max()) < 2e-2, (seed, i)
                prev = got[i]


def test_megakernel_tasks_drop_the_early_keys_and_the_pdl_macros():
    """A megakernel's decode tasks wait for their counters before their bodies run: the program pass's
    `early_keys` / `pdl_late` are dropped and no grid-dependency macro is left in the task code."""
    import ember as em
    p = em.compile(tuple(_layers(3, 1000, 64)), device="h100", megakernel=True)
    assert len(p.launches) == 1
    code = p.source  # (the prelude defines the macros; a call ends in ";")
    assert "cp.async.wait_group" in code
    assert not any(m in code for m in ("EM_PDL_WAIT();", "EM_GRID_DEPENDENCY_LATE();", "EM_PDL_TRIGGER();", "EM_GRID_DEPENDENCY();"))
    kernels = em.compile(tuple(_layers(3, 1000, 64)), device="h100")  # (the kernels: the calls are there)
    assert "EM_PDL_WAIT();" in kernels.source and "EM_PDL_TRIGGER();" in kernels.source
