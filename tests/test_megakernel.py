"""The megakernel (docs/megakernel.md) without a GPU: the task graph's dependency analysis against a
serial reference interpreter (the CPU program's kernels run in the orders a simulated megakernel
may finish them, every temporary in memory of its own, outputs bit-identical to program order), the
schedule's static checks and deadlock freedom under random interleavings and random task dealing,
and the generated source compiling with NVRTC. GPU runs: tests/test_megakernel_cuda.py."""
import re

import numpy as np

import pytest

import ember as em
from ember.runtime import megakernel as tg
from ember.runtime.memory import Plan
from ember.runtime.program import Launch


def _launch(args, writes):
    return Launch("k", list(args), [], {}, {"grid": 1, "block": 32}, list(writes))


def test_dependencies_read_after_write_write_after_read_and_write_after_write():
    ls = [_launch(["a", "x"], ["a"]),      # 0: a = f(x)
          _launch(["b", "a"], ["b"]),      # 1: reads a (RAW on 0)
          _launch(["c", "x"], ["c"]),      # 2: independent
          _launch(["a", "c"], ["a"]),      # 3: writes a: WAR on 1, WAW on 0 (implied through 1)
          _launch(["d", "a", "b"], ["d"])]  # 4: RAW on 3 and 1 (1 implied through 3)
    assert tg.dependencies(ls) == [[], [0], [], [1, 2], [3]]


def test_unknown_writes_count_as_writing_every_argument():
    ls = [_launch(["a", "x"], ["a"]), Launch("k", ["y", "x"], [], {}, {"grid": 1, "block": 32}, None),
          _launch(["z", "x"], ["z"])]
    assert tg.dependencies(ls)[1] == [0] and tg.dependencies(ls)[2] == [1]


def test_split_blocks_tiles_the_grid():
    for blocks in (1, 2, 7, 131, 132, 133, 8192):
        for parts in (1, 3, 132):
            r = tg.split_blocks(blocks, parts)
            assert r[0][0] == 0 and r[-1][1] == blocks and all(a[1] == b[0] for a, b in zip(r, r[1:]))
            assert len(r) == min(blocks, parts) and max(b - a for a, b in r) - min(b - a for a, b in r) <= 1


def _mlp_with_branches():
    x = em.input("x", (5, 24))
    w1 = em.tensor(np.random.default_rng(1).standard_normal((24, 40)).astype(np.float32))
    w2 = em.tensor(np.random.default_rng(2).standard_normal((24, 40)).astype(np.float32))
    w3 = em.tensor(np.random.default_rng(3).standard_normal((40, 9)).astype(np.float32))
    h = em.relu(x @ w1) * em.sigmoid(x @ w2)  # two independent branches
    y = em.softmax(h @ w3, axis=-1)
    return x, [y, (h * h).sum(axis=-1)]


def _interpret(program, arrays: dict, env: dict, order: list) -> list:
    """The CPU program's kernels in `order`, every temporary in memory of its own (as in the
    megakernel program, where one launch keeps them all live)."""
    ex = program.executor
    key = program.binding_key(env)
    offsets, at = {}, 0
    for name, b in program.buffers.items():
        if b.kind == "temp":
            offsets[name] = at
            at += -(-int(np.prod(program.shape_of(name, env))) * b.dtype.itemsize // 64) * 64
    saved = program._plans.get(key)
    program._plans[key] = Plan(offsets, max(at, 64), at)
    ex.poison = True  # outputs and temporaries start as NaN: a read before its write shows
    try:
        parr, dims, outs, keep = ex._setup(program, arrays, env)
        ex._arena.fill(0xFF)
        for i in order:
            ex.kernels[i](parr, dims.ctypes.data)
    finally:
        ex.poison = False
        if saved is None:
            program._plans.pop(key, None)
        else:
            program._plans[key] = saved
    return [outs[o].copy() for o in program.outputs]


@pytest.mark.parametrize("seed", range(6))
def test_serial_interpreter_in_simulated_megakernel_orders_matches_program_order(seed):
    x, ys = _mlp_with_branches()
    p = em.compile(ys, device="cpu")
    assert len(p.launches) >= 4
    arrays = {"x": np.random.default_rng(seed).standard_normal((5, 24)).astype(np.float32)}
    want = _interpret(p, arrays, {}, list(range(len(p.launches))))
    grids = [em.symbolic.sym(3)] * len(p.launches)  # three tasks per launch over the workers
    g = tg.build(p.launches, grids, {}, workers=4)
    tg.deal_randomly(g, seed)
    tg.validate(g)
    got = _interpret(p, arrays, {}, tg.start_order(tg.simulate(g, seed=seed, runs=1)))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    ref = p(x=arrays["x"])
    np.testing.assert_allclose(want[0], ref[0], rtol=1e-5, atol=1e-6)


def test_a_missing_dependency_is_caught_by_the_interpreter():
    """The check above can fail: dropping the dependencies lets an order read stale memory."""
    x, ys = _mlp_with_branches()
    p = em.compile(ys, device="cpu")
    arrays = {"x": np.random.default_rng(0).standard_normal((5, 24)).astype(np.float32)}
    want = _interpret(p, arrays, {}, list(range(len(p.launches))))
    got = _interpret(p, arrays, {}, list(reversed(range(len(p.launches)))))
    assert any(not np.array_equal(a, b) for a, b in zip(got, want))


def test_simulate_reports_a_deadlock_in_an_out_of_order_list():
    ls = [_launch(["a", "x"], ["a"]), _launch(["b", "a"], ["b"])]
    g = tg.build(ls, [em.symbolic.sym(1)] * 2, {}, workers=1)
    g.workers = [[(1, 0), (0, 0)]]  # the consumer first on the only worker
    with pytest.raises(AssertionError, match="out of program order"):
        tg.validate(g)
    with pytest.raises(AssertionError, match="deadlock"):
        tg.simulate(g)


def test_cyclic_dealing_tiles_each_launch_with_strided_tasks():
    ls = [_launch(["a", "x"], ["a"]), _launch(["b", "a"], ["b"])]
    g = tg.build(ls, [em.symbolic.sym(10), em.symbolic.sym(2)], {}, workers=3, cyclic=True)
    assert [(t.first, t.end, t.step) for t in g.tasks[0]] == [(0, 10, 3), (1, 10, 3), (2, 10, 3)]
    assert [(t.first, t.end, t.step) for t in g.tasks[1]] == [(0, 1, 1), (1, 2, 1)]  # (no more blocks than workers)
    tg.validate(g)
    tg.simulate(g, seed=0, runs=2)
    rows = g.table()[4:].reshape(-1, g.width)
    assert sorted(r[5] for r in rows) == [1, 1, 3, 3, 3]
    g.tasks[0][2] = tg.Task(0, 2, 8, 3)  # block 8 lost
    with pytest.raises(AssertionError, match="do not tile"):
        tg.validate(g)


def test_homes_put_a_small_task_function_on_the_same_workers_every_time():
    # norm -> GEMV -> rope -> norm -> GEMV: the second norm goes where the first ran, the rest as before
    ls = [_launch(["a", "x"], ["a"]), _launch(["b", "a"], ["b"]), _launch(["c", "b"], ["c"]),
          _launch(["d", "c"], ["d"]), _launch(["e", "d"], ["e"])]
    grids = [em.symbolic.sym(n) for n in (1, 8, 1, 1, 8)]
    plain = tg.build(ls, grids, {}, workers=8)
    g = tg.build(ls, grids, {}, workers=8, homes=["norm", "gemv", "rope", "norm", "gemv"])
    where = lambda graph, launch: [w for w, lst in enumerate(graph.workers) if any(li == launch for li, _ in lst)]  # noqa: E731
    assert where(g, 3) == where(g, 0) == [0] and where(plain, 3) == [2]
    assert all(where(g, i) == where(plain, i) for i in (0, 1, 2, 4))
    tg.validate(g)
    for seed in range(3):
        tg.simulate(g, seed=seed, runs=2)


def test_inlinable_writes_are_one_block_state_writes_read_by_a_later_launch():
    """A KV cache's row written by a one-block launch, read by the attention two launches later (the
    value cache's write between): both writes inline into the attention; not when a launch between
    writes what the writer reads, nor into a one-block reader or one whose grid is not fixed."""
    def L(args, writes, block=128):
        return Launch("k", args, [], config={"block": block}, writes=writes)
    ls = [L(["t1", "x"], ["t1"]), L(["kc", "t1", "pos"], ["kc"]), L(["vc", "t1"], ["vc"]),
          L(["o", "t1", "kc", "vc"], ["o"])]
    states = {"kc", "vc", "x", "pos"}
    assert tg.inlinable_writes(ls, [8, 1, 1, 64], states, [True] * 4) == [(1, 3), (2, 3)]
    assert tg.inlinable_writes(ls, [8, 1, 1, 1], states, [True] * 4) == []  # a one-block reader
    assert tg.inlinable_writes(ls, [8, 1, 1, 64], states, [True, True, True, False]) == []
    between = [ls[0], ls[1], L(["t1"], ["t1"]), ls[3]]  # t1 rewritten before the reader: not movable
    assert tg.inlinable_writes(between, [8, 1, 1, 64], states, [True] * 4) == []
    assert tg.inlinable_writes(ls, [8, 1, 1, 64], {"x", "pos"}, [True] * 4) == []  # kc / vc not states


def test_table_layout():
    ls = [_launch(["a", "x"], ["a"]), _launch(["b", "a"], ["b"]), _launch(["c", "a", "b"], ["c"])]
    g = tg.build(ls, [em.symbolic.sym(5), em.symbolic.sym(2), em.symbolic.sym(1)], {}, workers=3)
    t = g.table()
    starts = t[:4]
    rows = t[4:].reshape(-1, g.width)
    assert list(starts) == [0, 2, 4, 6]  # tasks dealt round-robin: (0, 1) (0, 1) (0, 2)
    assert rows[0][:4].tolist() == [0, 0, 1, 0]
    assert rows[len(rows) - 1][0] == 2 and rows[len(rows) - 1][3] == 1  # launch 2 waits once (1 implies 0)
    assert sum(r[2] - r[1] for r in rows if r[0] == 0) == 5



def _window_segments(arr, t):
    off = int(arr[0])
    return [tuple(int(v) for v in arr[off + 3 * s: off + 3 * s + 3]) for s in range(int(arr[1 + t]), int(arr[2 + t]))]


def test_stream_window_asks_each_workers_next_bytes_once_in_order():
    """Worker 0 runs launch 0's blocks [0, 2) of 4 (w0 bytes [0, 2048)), launch 1 (no weights), launch
    2's blocks [4, 8) of 8 (w1 bytes [4096, 8192)); a 3000-byte window asks 3000 bytes at its first
    task, the next 2048 (launch 0's share, consumed) at its second, nothing more at its third."""
    ls = [_launch(["w0", "x", "y"], ["y"]), _launch(["y", "z"], ["z"]), _launch(["w1", "z", "u"], ["u"])]
    g = tg.build(ls, [em.symbolic.sym(4), em.symbolic.sym(1), em.symbolic.sym(8)], {}, workers=2)
    assert g.workers[0] == [(0, 0), (1, 0), (2, 1)]
    arr = tg.stream_window(g, [[(0, 4096)], [], [(3, 8192)]], 3000)
    assert _window_segments(arr, 0) == [(0, 0, 128), (3, 256, 315)]
    assert _window_segments(arr, 1) == [(3, 315, 443)]
    assert _window_segments(arr, 2) == []
    assert _window_segments(arr, 3) == [(0, 128, 256), (3, 0, 59)]  # worker 1: w0 [2048, 4096), then w1 [0, ...)
    assert _window_segments(arr, 4) == [(3, 59, 187)]


@pytest.mark.parametrize("seed", range(4))
def test_stream_window_covers_each_workers_stream_ahead_of_it(seed):
    """Random launches and windows: per worker the asked bytes are its tasks' slices, in order, never
    twice, and cover [start of task, start + window) of every task (clipped to the stream's end)."""
    rng = np.random.default_rng(seed)
    n = 6
    ls = [_launch([f"w{i}", f"a{i}", f"a{i + 1}"], [f"a{i + 1}"]) for i in range(n)]
    grids = [int(rng.integers(1, 40)) for _ in range(n)]
    weights = [[(i, int(rng.integers(0, 3)) * 16 * int(rng.integers(1, 5000)))] for i in range(n)]
    window = int(rng.integers(1, 200)) * 64
    g = tg.build(ls, [em.symbolic.sym(b) for b in grids], {}, workers=int(rng.integers(1, 9)))
    arr = tg.stream_window(g, weights, window)
    t = 0
    for lst in g.workers:
        slices, starts, pos = [], [], 0
        for li, ti in lst:
            starts.append(pos)
            task, (slot, nbytes) = g.tasks[li][ti], weights[li][0]
            lo, hi = (nbytes * task.first // grids[li]) & ~15, (nbytes * task.end // grids[li]) & ~15
            if hi > lo:
                slices.append((slot, lo, hi))
                pos += hi - lo
        asked = [seg for k in range(len(lst)) for seg in _window_segments(arr, t + k)]
        t += len(lst)
        want, reach = 0, 0
        for a in starts:  # the union of [a, a + window) within [0, pos)
            want += max(0, min(a + window, pos) - max(a, reach))
            reach = max(reach, min(a + window, pos))
        got = sum(16 * (e - s) for _, s, e in asked)
        assert want - 16 * len(asked) <= got <= want, (got, want)
        flat = [(slot, u) for slot, s, e in asked for u in range(s, e)]
        assert len(flat) == len(set(flat))  # nothing asked twice
        order = [(slot, u) for slot, lo, hi in slices for u in range(lo >> 4, hi >> 4)]
        assert flat == [x for x in order if x in set(flat)]  # in the worker's order


def test_idle_stream_asks_the_bytes_past_each_window_once_in_small_pieces():
    """With `idle`, each task's table has its window's segments, then pieces of the next `idle` bytes
    (not asked by an earlier task's idle pieces), each at most IDLE_CHUNK: the worker asks for them
    only while it waits."""
    ls = [_launch(["w0", "x", "y"], ["y"]), _launch(["y", "z"], ["z"]), _launch(["w1", "z", "u"], ["u"])]
    g = tg.build(ls, [em.symbolic.sym(4), em.symbolic.sym(1), em.symbolic.sym(8)], {}, workers=2)
    weights = [[(0, 4096 * 16)], [], [(3, 8192 * 16)]]
    plain = tg.stream_window(g, weights, 3000)
    arr = tg.stream_window(g, weights, 3000, idle=40000)
    off = int(arr[0])
    ntasks = sum(len(lst) for lst in g.workers)
    assert off == 1 + 2 * ntasks + 1

    def segs(a, b):
        return [tuple(int(v) for v in arr[off + 3 * s: off + 3 * s + 3]) for s in range(int(arr[a]), int(arr[b]))]
    for t in range(ntasks):  # the window's segments are the plain table's
        assert segs(1 + 2 * t, 2 + 2 * t) == _window_segments(plain, t)
    idle0 = segs(2, 3)  # worker 0's first task: the 40000 stream bytes past its 3000-byte window
    assert sum(16 * (e - b) for _, b, e in idle0) == 40000 and all(16 * (e - b) <= tg.IDLE_CHUNK for _, b, e in idle0)
    flat = [(slot, u) for t in range(3) for slot, b, e in segs(2 + 2 * t, 3 + 2 * t) for u in range(b, e)]
    assert len(flat) == len(set(flat))  # no piece twice over one worker's tasks


def test_preload_table_takes_each_tasks_first_weight_bytes_within_the_budget():
    """Per task, its weights' first bytes — the budget split between them — in 16-byte units; a
    launch without preloaded weights has no entries."""
    ls = [_launch(["w0", "w1", "x", "y"], ["y"]), _launch(["y", "z"], ["z"]), _launch(["w2", "z", "u"], ["u"])]
    g = tg.build(ls, [em.symbolic.sym(4), em.symbolic.sym(1), em.symbolic.sym(8)], {}, workers=2)
    weights = [[(0, 5, 4096), (1, 6, 8192)], [], [(0, 7, 65536)]]
    arr = tg.preload_table(g, weights, 3000)
    off = int(arr[0])

    def entries(t):
        return [tuple(int(v) for v in arr[off + 4 * s: off + 4 * s + 4]) for s in range(int(arr[1 + t]), int(arr[2 + t]))]
    # worker 0: launch 0 blocks [0, 2) (w0 [0, 2048), w1 [0, 4096): 1488 bytes each), launch 1, launch 2 blocks [4, 8)
    assert g.workers[0] == [(0, 0), (1, 0), (2, 1)]
    assert entries(0) == [(0, 5, 0, 93), (1, 6, 0, 93)]
    assert entries(1) == []
    assert entries(2) == [(0, 7, 32768 // 16, 3000 // 16)]
    assert entries(3) == [(0, 5, 128, 93), (1, 6, 256, 93)]  # worker 1: launch 0 blocks [2, 4)
    with pytest.raises(ValueError, match="preload needs evict"):
        from ember.backends.cuda_megakernel import megakernel_program
        megakernel_program(None, None, preload=4096, evict=False)


# ---------------------------------------------------------------- the generated source (NVRTC, no GPU)

def _tiny_llm(tmp_path, layers=2, hidden=64, vocab=97):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=hidden, intermediate_size=96, num_hidden_layers=layers, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=vocab, max_position_embeddings=256)
    transformers.LlamaForCausalLM(cfg).save_pretrained(tmp_path / "tiny")
    return tmp_path / "tiny"


def _nvrtc():
    pytest.importorskip("cuda.bindings")
    from ember.backends.cuda import compile_cuda
    return compile_cuda


def _measured_off(options: dict):
    """Options measured and left off (docs/megakernel.md): compiled with -m slow only (each ~6 s of CI's 2 cores)."""
    return pytest.param(options, marks=pytest.mark.slow)


@pytest.mark.parametrize("options", [{}, {"jitter": 5, "seed": 2}, {"trace": True}, {"threads": 256}, {"unroll": False},
                                     {"fuse": True}, {"free_running": False}, {"stream": 0}, {"decode_splits": 32},
                                     _measured_off({"fence": True}), _measured_off({"cyclic": True}),
                                     _measured_off({"stream_blocks": 2}), _measured_off({"spin": 100000, "sleep_ns": 0}),
                                     _measured_off({"decode_stages": 3}), {"sticky": False}, {"evict": False, "stream": 65536},
                                     {"compact": False}, {"replicate": True}, _measured_off({"idle": 65536, "idle_ns": 100}),
                                     _measured_off({"preload": 32768}), {"preload": 16384, "replicate": True},
                                     _measured_off({"relaxed_poll": True}), {"inline_writes": True}])
def test_llm_decode_megakernel_compiles(tmp_path, options):
    import ember.llm as L
    compile_cuda = _nvrtc()
    # (a 2100-token vocabulary: the LM head's 269 KB are a weight the stream asks for)
    llm = L.load(_tiny_llm(tmp_path, vocab=2100), device="h100", dtype="bfloat16", max_seq_len=128)
    from ember.llm.model import build_step
    outs, writes = build_step(llm.weights, 1, 1, llm.max_seq_len)
    p = em.compile(outs, device="h100", writes=writes, dim_bounds={"P": 127}, megakernel=True,
                   megakernel_options=options)
    streamed = options.get("stream", 1) != 0  # (on by default: a 32 KB window)
    assert ("the weight stream" in p.source) == streamed and ("mk_pf" in p.buffers) == streamed
    assert ("__threadfence();\n" in p.source.split("em_mk_wait(em_sync_")[-1][:200]) == options.get("fence", False)
    mk = p.meta["megakernel"]
    assert len(p.launches) == 1 and mk["launches"] > 10 and mk["tasks"] >= mk["launches"]
    assert "__cluster_dims__" not in p.source and "em_task_sync" in p.source
    # the default task size gives every task the worker's thread count: no barrier over part of it
    assert mk["uniform_threads"] == ("threads" not in options), mk
    # compact: one case per task function, a launch's buffers and grid from the tables (a replicated
    # producer's consumer keeps a case of its own)
    assert ("em_mk_fn_" in p.source) == options.get("compact", True)
    if options.get("compact", True):
        assert len(re.findall(r"^      case \d+: ", p.source, re.M)) < mk["launches"]
    assert ("em_mk_ldw(&" in p.source or "em_mk_ldw_p(&" in p.source) == options.get("evict", True)
    assert ("em_mk_waiting_" in p.source) == bool(options.get("idle"))
    assert ("#define EM_MK_RELAXED_POLL" in p.source) == bool(options.get("relaxed_poll"))
    assert (mk.get("inlined_writes", 0) > 0) == bool(options.get("inline_writes"))
    assert ("em_mk_ldw_p(&" in p.source) == bool(options.get("preload")) and mk["preload"] == options.get("preload", 0)
    g = p.megakernel_graph
    tg.validate(g)
    tg.simulate(g, seed=1, runs=3)
    assert len(compile_cuda(p.source, "sm_90a")) > 0


def test_llm_decode_megakernel_splits_attention_over_a_workspace(tmp_path):
    """Head dim 64: the decode attention is flash-decoding, whose cluster a task cannot have; as a
    task its blocks are splits of the keys, the last block of a group combining their partials
    through a workspace buffer the megakernel owns (zero at upload, left zero by the kernel)."""
    import ember.llm as L
    compile_cuda = _nvrtc()
    llm = L.load(_tiny_llm(tmp_path, layers=1, hidden=256), device="h100", dtype="bfloat16", max_seq_len=128)
    from ember.llm.model import build_step
    outs, writes = build_step(llm.weights, 1, 1, llm.max_seq_len)
    kernels = em.compile(outs, device="h100", writes=writes, dim_bounds={"P": 127})
    cluster = [l.config["cfg"].get("cluster", 1) for l in kernels.launches if l.config.get("mode") == "decode"]
    assert cluster and cluster[0] > 1
    p = em.compile(outs, device="h100", writes=writes, dim_bounds={"P": 127}, megakernel=True)
    ws = [a for a in p.launches[0].args if a.startswith("mk_ws")]
    assert len(ws) == 1 and "em_ws_" in p.source and "__cluster_dims__" not in p.source
    assert not p.data[ws[0]].any() and p.buffers[ws[0]].kind == "data"
    tg.simulate(p.megakernel_graph, seed=1, runs=2)
    assert len(compile_cuda(p.source, "sm_90a")) > 0


def test_task_smem_and_per_sm_shrink_the_workers_shared_memory(tmp_path):
    """Options `task_smem` / `per_sm`: a task over the cap gets the smaller schedule that fits (the
    decode ring in 16-key tiles, then fewer warps); the worker count is the one asked for. With
    `l1_reserve` the workers per SM are what the tasks allow and tasks are capped so that that much
    of the SM stays L1's (`l1_reserve=0`: the decode task's 32-key ring sets the worker's shared
    memory). Without any of them: PER_SM workers per SM."""
    import ember.llm as L
    compile_cuda = _nvrtc()
    llm = L.load(_tiny_llm(tmp_path, layers=1, hidden=256), device="h100", dtype="bfloat16", max_seq_len=128)
    from ember.llm.model import build_step
    outs, writes = build_step(llm.weights, 1, 1, llm.max_seq_len)

    def build(**o):
        return em.compile(outs, device="h100", writes=writes, dim_bounds={"P": 127}, megakernel=True,
                          megakernel_options=o)
    from ember.megakernel_choice import L1_RESERVE, PER_SM
    assert build().meta["megakernel"]["per_sm"] == PER_SM
    base = build(l1_reserve=0).meta["megakernel"]
    default = build(l1_reserve=L1_RESERVE).meta["megakernel"]  # the same workers, tasks capped so 96 KB stay L1's
    assert default["per_sm"] == base["per_sm"] and default["smem"] < base["smem"]
    assert default["per_sm"] * (default["smem"] + 3 * 1024) <= 228 * 1024 - 96 * 1024
    small = build(task_smem=20 * 1024, per_sm=3)
    mk = small.meta["megakernel"]
    assert mk["smem"] <= 20 * 1024 < base["smem"] and mk["per_sm"] == 3
    assert len(compile_cuda(small.source, "sm_90a")) > 0
    tg.simulate(small.megakernel_graph, seed=3, runs=2)


def test_fit_smem_shrinks_decode_then_row_caches():
    from ember.codegen.cuda_megakernel import _fit_smem

    def accepted(c):  # a stand-in renderer: the decode ring's bytes, a row cache's 40 KB
        if c.get("mode") == "decode":
            return {"smem": c["warps"] * c["BN"] * 256}
        return {"smem": 40 * 1024 if c.get("cache") == "smem" else 0}
    assert _fit_smem({"mode": "decode", "warps": 4, "BN": 32}, accepted, 20 * 1024) == {"mode": "decode", "warps": 4, "BN": 16}
    assert _fit_smem({"mode": "decode", "warps": 4, "BN": 32}, accepted, 10 * 1024) == {"mode": "decode", "warps": 2, "BN": 16}
    assert _fit_smem({"mode": "decode", "warps": 4, "BN": 32}, accepted, 1024) == {"mode": "decode", "warps": 4, "BN": 32}
    assert _fit_smem({"mode": "block", "cache": "smem"}, accepted, 20 * 1024) == {"mode": "block"}


def test_only_tasks_that_share_nothing_run_their_blocks_without_a_barrier():
    """A task function loops over its blocks (one call per task), the kernel's body inlined as a
    block function; a barrier between blocks only where the body shares or synchronises (a warp
    GEMV does not, a block reduction does) or `free_running` is off."""
    import ember.codegen.cuda as cg
    from ember.codegen.cuda_megakernel import _sync_free, task_function
    from ember.kernel.lower import lower
    t = em.backends.target.get_target("h100")
    x, w = em.input("x", (1, 2048), em.bfloat16), em.input("w", (4096, 2048), em.bfloat16)
    (k, _), = lower([(x @ w.transpose(0, 1)).node], target=t).kernels

    def task(mode, free=True):
        src = cg.render_kernel(k, {"mode": mode, "threads": 128, "vec": 8}, t)[0]
        return task_function(k.name, src, 128, [], [False, False, True], free)[1]
    warp, block = task("warp"), task("block")
    call = f"{k.name}_blk(b0, b1, b2, b_, em_nblk_);"
    assert f"static __device__ __noinline__ void {k.name}_task(" in warp and "const unsigned em_first_" in warp
    assert call + " }" in warp and "em_task_sync" not in warp
    assert call + " em_task_sync(); }" in block and call + " em_task_sync(); }" in task("warp", free=False)
    assert not _sync_free("__shared__ float s[4];") and _sync_free("em_warp_reduce<float, 0>(acc0)")


def test_megakernel_refuses_what_it_cannot_run_and_auto_falls_back():
    a, b = em.input("a", (512, 1024), em.bfloat16), em.input("b", (1024, 768), em.bfloat16)
    y = a @ b  # a wgmma GEMM: tensor maps and register reallocation
    with pytest.raises(ValueError, match="cannot be one persistent kernel: kernel .* uses"):
        em.compile(y, device="h100", megakernel=True)
    p = em.compile(y, device="h100", megakernel="auto")
    assert p.meta["megakernel_choice"]["chosen"] == "kernels"
    with pytest.raises(ValueError, match="CUDA only"):
        em.compile(y, device="cpu", megakernel=True)
    with pytest.raises(ValueError, match="megakernel must be"):
        em.compile(y, device="cpu", megakernel="yes")
    with pytest.raises(ValueError, match="decode_splits=48: one of"):
        em.compile(em.input("x", (4, 8)).exp(), device="h100", megakernel=True, megakernel_options={"decode_splits": 48})


def test_auto_without_a_device_keeps_the_kernels():
    from tests.conftest import HAVE_CUDA
    if HAVE_CUDA:
        pytest.skip("a GPU is here: auto measures (tests/test_megakernel_cuda.py)")
    x, ys = _mlp_with_branches()
    p = em.compile(ys, device="h100", megakernel="auto")
    assert p.meta["megakernel_choice"] == {"chosen": "kernels", "why": "auto: no device here to measure on"}


def test_task_functions_lose_restrict_on_activations_only():
    """Data another worker wrote in the same launch must not be read through the non-coherent path:
    only weights keep `const __restrict__`; the blocks' indices are parameters. Each task function
    (noinline: one call per task) loops over its blocks, whose body is a block function inlined."""
    import re
    x, ys = _mlp_with_branches()
    p = em.compile(ys, device="h100", megakernel=True)
    heads = [ln for ln in p.source.splitlines() if ln.startswith("static __device__ __forceinline__ void")]
    tasks = [ln for ln in p.source.splitlines() if ln.startswith("static __device__ __noinline__ void")]
    assert heads and len(tasks) == len(heads)
    assert all("const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_" in t for t in tasks)
    restricted = plain = 0
    for h in heads:
        assert "const unsigned em_bid_, const unsigned em_nblk_" in h
        for param in re.search(r"\((.*)\)", h).group(1).split(", "):
            if param.endswith("em_dims_") or "em_bid_" in param or "em_nblk_" in param:
                continue
            if "__restrict__" in param:
                restricted += 1
                assert param.startswith("const ")
            else:
                plain += 1
    assert restricted and plain  # weights and activations both present
    body = p.source.split("#undef __syncthreads")[0]
    assert "blockIdx.x" not in body.split("static __device__ __forceinline__ void k", 1)[1]


def test_agree_compares_outputs_of_two_programs_on_random_inputs():
    from ember.megakernel_choice import agree, random_inputs
    x, ys = _mlp_with_branches()
    a, b = em.compile(ys, device="cpu"), em.compile(ys, device="cpu")
    assert agree(a, b) is None
    arrays, dims = random_inputs(a, 0)
    assert set(arrays) == {"x"} and arrays["x"].shape == (5, 24) and dims == {}
    other = em.compile([ys[0] * 1.5, ys[1]], device="cpu")
    assert "output 0" in agree(other, a)


def test_as_kernels_launches_the_task_schedules_kernel_by_kernel():
    """megakernel_options={"as_kernels": True} (without megakernel=True) is the reference the GPU
    bench calls task_kernels: the kernels with the megakernel's task schedules (warp-mode GEMVs of at
    most 128 threads, unrolled), not the default program."""
    x = em.input("x", (1, 2048), em.bfloat16)
    w = em.input("w", (4096, 2048), em.bfloat16)
    y = x @ w.transpose(0, 1)
    plain = em.compile(y, device="h100")
    tasks = em.compile(y, device="h100", megakernel_options={"as_kernels": True})
    assert plain.launches[0].config["block"] == 256 and tasks.launches[0].config["block"] == 128
    assert "#pragma unroll" in tasks.source and len(tasks.launches) == len(plain.launches)


def test_auto_candidates_are_each_verified_and_timed(monkeypatch):
    """megakernel="auto" builds AUTO_CANDIDATES, drops one that disagrees with the kernels, and
    keeps the fastest of the rest against the kernels (timings faked: no device here)."""
    import ember.megakernel_choice as mc

    class P:  # a built program's stand-in
        def __init__(self, name):
            self.name, self.meta = name, {}
    kernels, a, b = P("kernels"), P("a"), P("b")
    monkeypatch.setattr(mc, "agree", lambda mk, k: "outputs differ" if mk is a else None)
    monkeypatch.setattr(mc, "timings", lambda mk, k: (90.0 if mk is b else 80.0, 100.0))
    chosen = mc._fastest(kernels, [({}, a), ({"per_sm": 1}, b)])
    assert chosen is b and b.meta["megakernel_choice"]["options"] == {"per_sm": 1}
    assert b.meta["megakernel_choice"]["candidates"][0] == {"options": {}, "rejected": "outputs differ"}
    monkeypatch.setattr(mc, "timings", lambda mk, k: (120.0, 100.0))
    assert mc._fastest(kernels, [({}, b)]) is kernels and kernels.meta["megakernel_choice"]["chosen"] == "kernels"


def test_per_slice_megakernels_launch_one_kernel_per_slice(tmp_path):
    """Option `slices`: the launches in consecutive parts, each a launch of the same persistent
    kernel with its own task table and counters (the waits inside a slice only: the previous slice
    has finished when the next starts); every slice's schedule valid and deadlock-free."""
    import ember.llm as L
    compile_cuda = _nvrtc()
    llm = L.load(_tiny_llm(tmp_path, vocab=2100), device="h100", dtype="bfloat16", max_seq_len=128)
    from ember.llm.model import build_step
    outs, writes = build_step(llm.weights, 1, 1, llm.max_seq_len)
    whole = em.compile(outs, device="h100", writes=writes, dim_bounds={"P": 127}, megakernel=True)
    p = em.compile(outs, device="h100", writes=writes, dim_bounds={"P": 127}, megakernel=True,
                   megakernel_options={"slices": 3})
    n = whole.meta["megakernel"]["launches"]
    assert len(p.launches) == 3 and p.meta["megakernel"]["slices"] == 3 and p.source == whole.source
    assert [l.args[-2:] for l in p.launches] == [[f"mk_tasks{i}", f"mk_sync{i}"] for i in range(3)]
    launched = []
    for g, (a, b) in zip(p.megakernel_graphs, tg.slice_ranges(n, 3)):
        assert g.offset == a and len(g.tasks) == b - a and all(d < len(g.tasks) for ds in g.deps for d in ds)
        tg.validate(g)
        tg.simulate(g, seed=2, runs=2)
        launched += [r[0] for r in g.table(whole.megakernel_graph.width)[len(g.workers) + 1:].reshape(-1, whole.megakernel_graph.width)]
    assert sorted(set(launched)) == list(range(n))  # every launch in exactly one slice, by its program index
    assert len(compile_cuda(p.source, "sm_90a")) > 0
    with pytest.raises(ValueError, match="trace one slice"):
        em.compile(outs, device="h100", writes=writes, dim_bounds={"P": 127}, megakernel=True,
                   megakernel_options={"slices": 2, "trace": True})


def test_replicable_producers_are_one_block_and_read_by_the_next_launch_only():
    def L(args, writes, block=128):
        return Launch("k", list(args), [], {}, {"grid": 1, "block": block}, list(writes))
    ls = [L(["x", "h"], ["h"]),            # 0: one block, h read by 1 only: replicable
          L(["h", "w", "y"], ["y"]),       # 1
          L(["y", "g"], ["g"]),            # 2: g read by 3 and 4: not
          L(["g", "z"], ["z"]),            # 3
          L(["g", "z", "o"], ["o"])]       # 4
    assert tg.replicable(ls, [1, 8, 1, 8, 8], {"h", "y", "g", "z"}) == [(0, 1, "h")]
    assert tg.replicable(ls, [1, 8, 1, 8, 8], {"y", "g", "z"}) == []  # (h an output, not a temporary)
    assert tg.replicable(ls, [2, 8, 1, 8, 8], {"h", "y", "g", "z"}) == []  # (two blocks)


def test_replicated_norms_run_in_their_consumers_tasks(tmp_path):
    """Option `replicate`: each one-block producer read only by the next launch (the RMSNorms before
    the GEMVs) runs at the start of every task of that launch, into the worker's slice of a buffer
    the megakernel owns; the schedule is valid, the source compiles."""
    import ember.llm as L
    compile_cuda = _nvrtc()
    llm = L.load(_tiny_llm(tmp_path, hidden=256), device="h100", dtype="bfloat16", max_seq_len=128)
    from ember.llm.model import build_step
    outs, writes = build_step(llm.weights, 1, 1, llm.max_seq_len)
    whole = em.compile(outs, device="h100", writes=writes, dim_bounds={"P": 127}, megakernel=True)
    p = em.compile(outs, device="h100", writes=writes, dim_bounds={"P": 127}, megakernel=True,
                   megakernel_options={"replicate": True})
    mk = p.meta["megakernel"]
    assert mk["replicated"] >= 2 and mk["launches"] == whole.meta["megakernel"]["launches"] - mk["replicated"]
    reps = [b for b in p.buffers if b.startswith("mk_rep_")]
    assert len(reps) == mk["replicated"] and all(p.buffers[b].kind == "temp" for b in reps)
    assert p.source.count("(size_t)worker * ") >= 2 * mk["replicated"]  # (the producer writes it, the consumer reads it)
    tg.validate(p.megakernel_graph)
    tg.simulate(p.megakernel_graph, seed=4, runs=2)
    assert len(compile_cuda(p.source, "sm_90a")) > 0


def test_stream_blocks_asks_l2_for_the_weights_of_a_later_block():
    """Option `stream_blocks` (task_function's `ahead`): before each block, thread 0 asks L2 for each
    large weight's slice of the block that many blocks later; no ask without such a weight."""
    from ember.codegen.cuda_megakernel import task_function
    chunk = ('extern "C" __global__ void __launch_bounds__(128) k3_sum(float* __restrict__ b0, '
             'const float* __restrict__ b1, const float* __restrict__ b2) {\n  b0[blockIdx.x] = b1[blockIdx.x] * b2[0];\n}\n')
    _, fn, _ = task_function("k3_sum", chunk, 128, [], [False, True, True], True, 3, [0, 1 << 20, 0])
    assert "em_mk_prefetch(b1, 1048576ull * (b_ + 3u * em_step_) / em_nblk_" in fn and "em_mk_prefetch(b2" not in fn
    _, plain, _ = task_function("k3_sum", chunk, 128, [], [False, True, True], True, 3, [0, 0, 0])
    assert "em_mk_prefetch" not in plain
