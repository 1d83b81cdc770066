"""The wgmma producer's im2col copies (codegen/cuda_wgmma_im2col.py).

The copy engine's im2col walk is emulated here as the PTX ISA describes it (5.5.4: a filter base
stepping by the traversal stride inside the bounding box, wrapping to the next row of pixels and the
next image, each pixel read at base + offsets, zero outside the tensor) and compared, element by
element, with what the gather it replaces reads (the load's index under its guard) for every row of
several tiles and every k slice: convs with padding, strides, dilation, no padding, a ragged last
tile, a kernel whose filter rows are a split batch. The GPU runs them in test_wgmma.py's CUDA cases
(`im2col` configs) and tests/test_cuda.py-style checks against the reference.
"""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember import symbolic as sm
from ember.codegen import cuda as cg
from ember.codegen.cuda_wgmma_feed import GatherOperand, wgmma_plan
from ember.codegen.cuda_wgmma_im2col import Im2colOperand, im2col_operand


BF = em.bfloat16


def _convs():
    rng = np.random.default_rng(1)

    def chain(cin, cout, shape, k=(3, 3), **kw):  # the second conv reads the first's channels-last output
        w1 = em.tensor(rng.standard_normal((cin, shape[1], 1, 1)).astype(np.float32) / 6).cast(BF)
        w3 = em.tensor(rng.standard_normal((cout, cin) + k).astype(np.float32) / 24).cast(BF)
        return em.conv2d(em.conv2d(em.input("x", shape, BF), w1).relu(), w3, **kw)
    def chain3d(cin, cout, shape, **kw):  # (3-D convs stay NCDHW in kernel/layout.py: a channels-last input given)
        w3 = em.tensor(rng.standard_normal((cout, cin, 3, 3, 3)).astype(np.float32) / 24).cast(BF)
        return em.conv3d(em.input("x", shape[:1] + shape[2:] + (cin,), BF).permute(0, 4, 1, 2, 3), w3, **kw)

    def chain1d(cin, cout, shape, **kw):
        w1 = em.tensor(rng.standard_normal((cin, shape[1], 1)).astype(np.float32) / 6).cast(BF)
        w3 = em.tensor(rng.standard_normal((cout, cin, 3)).astype(np.float32) / 24).cast(BF)
        return em.conv1d(em.conv1d(em.input("x", shape, BF), w1).relu(), w3, **kw)
    def conv3d_f32(cin, cout, shape, **kw):  # TF32, its channels-last input copied from the NCDHW one
        with em.allow_tf32():
            w = em.tensor(rng.standard_normal((cout, cin, 3, 3, 3)).astype(np.float32) / 24)
            return em.conv3d(em.input("x", shape), w, **kw)

    def stem(cin, cout, shape, k, **kw):  # a channels-last graph input of cin channels
        w = em.tensor(rng.standard_normal((cout, cin, k, k)).astype(np.float32) / 24).cast(BF)
        return em.conv2d(em.input("x", shape[:1] + shape[1:] + (cin,), BF).permute(0, 3, 1, 2), w, **kw)
    return {
        "pad1": lambda: chain(64, 72, (8, 40, 27, 29), padding=1),
        "stride2": lambda: chain(64, 64, (8, 40, 29, 31), padding=1, stride=2),
        "dilation2": lambda: chain(128, 64, (4, 40, 25, 24), padding=2, dilation=2),
        "valid": lambda: chain(64, 64, (8, 40, 26, 27)),
        "asymmetric": lambda: chain(64, 64, (8, 40, 27, 22), k=(5, 3), padding=(2, 0)),
        "conv3d": lambda: chain3d(64, 48, (2, 24, 9, 12, 13), padding=1),
        "conv3d_stride2": lambda: chain3d(64, 64, (2, 24, 11, 12, 13), padding=(1, 0, 1), stride=2),
        "conv1d": lambda: chain1d(128, 64, (8, 40, 301), padding=2, dilation=2),
        # a stem: 8 bf16 channels, one 16-byte chunk a pixel (the narrow copies), 7x7 stride 2
        "stem8": lambda: stem(8, 64, (4, 37, 41), k=7, stride=2, padding=3),
        # narrow pixels of 32 and 64 bytes (swizzled by their width): 16 bf16 channels; a TF32 3-D conv
        # over 16 float32 channels (KernelBench 38's class)
        "narrow32": lambda: stem(16, 64, (4, 29, 31), k=3, padding=1),
        "conv3d_tf32_16": lambda: conv3d_f32(16, 32, (2, 16, 9, 12, 13), padding=1),
    }


def _gathers(y, dtype):
    lowered = pipeline.lower([y.node], None, pipeline.get_target("h100"))
    for k, _ in lowered.kernels:
        g = cg.contraction_of(cg.canonical(k))
        if g is None:
            continue
        plan = wgmma_plan(g)
        if isinstance(plan, str):
            continue
        for p in plan[1:]:
            if isinstance(p, GatherOperand) and p.vector is not None:
                yield k, g, p


def _walk(op: Im2colOperand, first: int, R: int, offs: list):
    """The element offsets (or None: zero-filled) the copy engine reads for pixels first..first+R of
    a tile at channel 0, emulated: the filter base and image from the tile's first row, stepping the
    innermost coordinate by its traversal stride and wrapping at the bounding box's upper corner to
    the next coordinate (then the image), as PTX describes; each pixel read at base + offsets."""
    S, C, E, N = op.spatial, op.dims[0], op.dims[1:-1], op.dims[-1]
    outs = [(E[i] - 1 + op.upper[i] + op.pad[i]) // op.tstride[i] + 1 for i in range(S)]
    x, rest = [], first
    for i in range(S):
        rest, o = divmod(rest, outs[i])
        x.append(o * op.tstride[i] - op.pad[i])
    n, units, out = rest, [C * int(np.prod(E[:i])) for i in range(S + 1)], []
    for _ in range(R):
        at = [x[i] + offs[i] for i in range(S)]
        inside = all(0 <= at[i] < E[i] for i in range(S)) and n < N
        out.append(op.offset + n * units[S] + sum(at[i] * units[i] for i in range(S)) if inside else None)
        for i in range(S):  # the innermost coordinate steps; past its box it wraps and the next steps
            x[i] += op.tstride[i]
            if x[i] <= E[i] - 1 + op.upper[i]:
                break
            x[i] = -op.pad[i]
        else:
            n += 1
    return out


def _split(flat: int, loops: list) -> dict:
    env = {}
    for v, e in reversed(loops):
        flat, env[v] = divmod(flat, int(e.value) if hasattr(e, "value") else int(e))
    return env


@pytest.mark.parametrize("name", sorted(_convs()))
def test_im2col_walk_reads_what_the_gather_reads(name):
    y = _convs()[name]()
    seen = 0
    for k, g, p in _gathers(y, "bf16"):
        BK = 32 if p.kind in ("tf32", "tf32x3") else 64
        op = im2col_operand(g, p, BK, {b.name: int(b.size) for b in k.buffers})
        assert isinstance(op, Im2colOperand), (name, op)
        seen += 1
        buf, index, valid = p.vector.args
        M = int(np.prod([int(e.value) if hasattr(e, "value") else e for _, e in p.rows]))
        K = int(np.prod([int(e.value) if hasattr(e, "value") else e for _, e in g.k]))
        batches = [dict()] if not g.batch else [_split(b, g.batch) for b in
                                                range(int(np.prod([int(e.value) if hasattr(e, "value") else e for _, e in g.batch])))]
        R = 128
        for env_b in batches:
            for tile in sorted({0, 1, (M - 1) // R}):
                chunk = op.dims[0] if op.narrow else BK  # (narrow: a copy per 16-byte pixel, BK // C a slice)
                for kf in range(0, K, chunk):
                    envk = dict(env_b, **_split(kf, g.k))
                    walk = _walk(op, tile * R, R, [sum(c * envk[v] for v, c in t.items()) for t in op.taps])
                    for r in range(R):
                        m = tile * R + r
                        if m >= M:
                            break
                        env = dict(envk, **_split(m, p.rows))
                        ok = bool(sm.evaluate(valid, env))
                        want = int(sm.evaluate(index, env)) - envk[g.k[-1][0]] if ok else None
                        assert walk[r] == want, (name, env_b, tile, kf, r, walk[r], want)
    assert seen


def test_im2col_refuses_what_it_cannot_walk():
    """A conv over 40 channels (not a whole 64-element slice of bf16 k): stays a gather."""
    rng = np.random.default_rng(2)
    w3 = em.tensor(rng.standard_normal((64, 40, 3, 3)).astype(np.float32) / 24).cast(BF)
    w1 = em.tensor(rng.standard_normal((40, 24, 1, 1)).astype(np.float32) / 6).cast(BF)
    y = em.conv2d(em.conv2d(em.input("x", (8, 24, 27, 29), BF), w1).relu(), w3, padding=1)
    for k, g, p in _gathers(y, "bf16"):
        assert isinstance(im2col_operand(g, p, 64, {b.name: int(b.size) for b in k.buffers}), str)


def _seed_like(tf32: bool):
    """The seed-000 conv's shape class, smaller: 3 float32 channels (padded to 4: one 16-byte pixel, the
    narrow copies), 11x11 stride 4 padding 2; float32 accuracy (tf32x3) or TF32."""
    import contextlib
    rng = np.random.default_rng(3)
    with (em.allow_tf32() if tf32 else contextlib.nullcontext()):
        w = em.tensor(rng.standard_normal((40, 3, 11, 11)).astype(np.float32) / 20)
        return em.conv2d(em.input("x", (3, 3, 61, 67)), w, stride=4, padding=2)


@pytest.mark.parametrize("tf32", [False, True], ids=["tf32x3", "tf32"])
def test_narrow_im2col_takes_the_seed_conv(tf32, monkeypatch):
    monkeypatch.setenv("EMBER_CONV_PHASES", "0")  # (by default rewrite 0a reads it over its stride's phases instead)
    y = _seed_like(tf32)
    lowered = pipeline.lower([y.node], None, pipeline.get_target("h100"))
    ops = [im2col_operand(g, p, 32, {b.name: int(b.size) for b in k.buffers}) for k, g, p in _gathers(y, "")]
    assert ops and all(isinstance(o, Im2colOperand) and o.narrow and o.tstride == (4, 4) for o in ops), ops
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    cfgs = [{"mode": "wgmma", "BM": 128, "BN": 64, "stages": 3, "im2col": True}
            if not isinstance(cg.wgmma_applicable(cg.canonical(k)), str) else cg.default_config(k) for k, _ in lowered.kernels]
    prog = pipeline.build_program(lowered, "h100", None, "single", configs=cfgs)
    assert "em_gdesc_x(" in prog.source and "in_ ? (int)" in prog.source
    assert all(len(c) > 0 for c in compile_kernels(prog.source, "sm_90a").values())


@pytest.mark.cuda
@pytest.mark.parametrize("tf32", [False, True], ids=["tf32x3", "tf32"])
def test_narrow_im2col_seed_conv_on_the_gpu(tf32, monkeypatch):
    """The narrow copies (unswizzled 16-byte pixels, a copy per filter tap) against the float64
    reference: float32 accuracy within 1e-5, TF32 within its tolerance (rewrite 0a off: the narrow
    copies still serve the strided convs it leaves alone)."""
    from ember.precision import TF32_TOL
    monkeypatch.setenv("EMBER_CONV_PHASES", "0")
    y = _seed_like(tf32)
    for cfg in ({"mode": "wgmma", "BM": 128, "BN": 64, "stages": 3, "im2col": True},
                {"mode": "wgmma", "BM": 64, "BN": 64, "stages": 4, "im2col": True, "persistent": True}):
        prog = _build(y, cfg, "cuda")
        assert "em_gdesc_x(" in prog.source
        prog.executor.poison = True
        for seed in (0, 1):
            x = np.random.default_rng(seed).standard_normal((3, 3, 61, 67)).astype(np.float32)
            out = np.asarray(prog(x=x), np.float64)
            ref = np.asarray(em.reference([y], x=x.astype(np.float64))[0], np.float64)
            err = np.abs(out - ref).max() / np.abs(ref).max()
            assert err < (TF32_TOL if tf32 else 1e-5), f"{cfg} seed {seed}: {err}"


@pytest.mark.parametrize("name", ["pad1", "stride2", "stem8", "narrow32", "conv3d_tf32_16"])
def test_im2col_configs_compile_for_sm90a(name):
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    y = _convs()[name]()
    lowered = pipeline.lower([y.node], None, pipeline.get_target("h100"))
    for cfg in ({"mode": "wgmma", "BM": 128, "BN": 64, "stages": 4, "im2col": True},
                {"mode": "wgmma", "BM": 64, "BN": 64, "stages": 4, "im2col": True, "persistent": True}):
        cfgs = [cfg if not isinstance(cg.wgmma_applicable(cg.canonical(k)), str) else cg.default_config(k)
                for k, _ in lowered.kernels]
        prog = pipeline.build_program(lowered, "h100", None, "single", configs=cfgs)
        assert "em_tma_im2col4(" in prog.source and ".im2col.mbarrier" in prog.source
        assert any("im2col" in (s or {}) for l in prog.launches for s in (l.config.get("tma") or ()))
        assert all(len(c) > 0 for c in compile_kernels(prog.source, "sm_90a").values())


def _build(y, cfg, device):
    lowered = pipeline.lower([y.node], None, pipeline.get_target(device))
    cfgs = [cfg if not isinstance(cg.wgmma_applicable(cg.canonical(k)), str) else cg.default_config(k)
            for k, _ in lowered.kernels]
    return pipeline.build_program(lowered, device, None, "single", configs=cfgs)


@pytest.mark.cuda
@pytest.mark.parametrize("name", sorted(_convs()))
def test_im2col_conv_equals_the_gather_on_the_gpu(name):
    """The same tile fed by the copy engine's walk and by the producer's gather: the same bytes in the
    slots, so the same outputs bit for bit; and both near the reference (bf16 products)."""
    from ember.graph import inputs_of
    y = _convs()[name]()
    base = {"mode": "wgmma", "BM": 128, "BN": 64, "stages": 4}
    gather = _build(y, dict(base, im2col=False), "cuda")
    for cfg in (dict(base, im2col=True), {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4, "im2col": True, "persistent": True}):
        prog = _build(y, cfg, "cuda")
        assert "em_tma_im2col4(" in prog.source
        prog.executor.poison = True
        for seed in (0, 1):
            rng = np.random.default_rng(seed)
            ins = {n.arg: rng.standard_normal([s.value for s in n.shape]).astype(np.float32).astype(BF.np)
                   for n in inputs_of([y.node])}
            out = np.asarray(prog(**ins), np.float32)
            ref = np.asarray(em.reference([y], **ins)[0], np.float32)
            err = np.abs(out - ref).max() / np.abs(ref).max()
            assert err < 2e-2, f"{name} {cfg} seed {seed}: {err}"
            if cfg["BM"] == base["BM"]:
                assert np.array_equal(out, np.asarray(gather(**ins), np.float32)), f"{name} {cfg} seed {seed}"


def test_a_second_producer_warpgroup_with_nothing_to_gather_is_refused():
    """Two producer warpgroups asked for, the conv's input copied by im2col: nothing is left to gather,
    so the config is refused as for any GEMM both of whose operands TMA copies (a run on the H200 had
    dropped the warpgroup while the launch kept 384 threads: a third warpgroup consumed rows that do
    not exist)."""
    from ember.kernel.structure import UnsupportedKernel
    y = _convs()["pad1"]()
    with pytest.raises(UnsupportedKernel, match="nothing to gather"):
        _build(y, {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4, "producers": 2, "im2col": True}, "h100")


def test_search_space_offers_im2col_where_the_walk_applies():
    from ember.codegen.cuda_wgmma_space import wgmma_configs
    for name, want in (("pad1", True), ("stride2", True)):
        lowered = pipeline.lower([_convs()[name]().node], None, pipeline.get_target("h100"))
        offered = [c for k, _ in lowered.kernels if cg.contraction_of(cg.canonical(k)) is not None
                   for c in wgmma_configs(cg.canonical(k), "full") if "im2col" in c]
        assert bool(offered) == want, name  # (the knob flipped from its default: off, or on under EMBER_WGMMA_IM2COL=0)
    rng = np.random.default_rng(2)  # 40 channels: no whole 64-element slice, no im2col config
    w3 = em.tensor(rng.standard_normal((64, 40, 3, 3)).astype(np.float32) / 24).cast(BF)
    w1 = em.tensor(rng.standard_normal((40, 24, 1, 1)).astype(np.float32) / 6).cast(BF)
    y = em.conv2d(em.conv2d(em.input("x", (8, 24, 27, 29), BF), w1).relu(), w3, padding=1)
    lowered = pipeline.lower([y.node], None, pipeline.get_target("h100"))
    assert not [c for k, _ in lowered.kernels if cg.contraction_of(cg.canonical(k)) is not None
                for c in wgmma_configs(cg.canonical(k), "full") if "im2col" in c]
