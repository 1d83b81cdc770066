"""Programmatic dependent launch (codegen/cuda_pdl.py) and dims read from device memory
(backends/cuda_dims.py), checked without a GPU: every sm_90 kernel's entry sequence, which graph
edges may be programmatic, each launch's slice of the dims array, and that the kernels compile for
sm_90. (On the H100, tests/test_state.py's bounded-dims tests run the same programs at every
position through one graph, and tests/test_llm.py the decode step.)"""
import math
import re
from types import SimpleNamespace

import ember as em
from ember import symbolic as sm
from ember.backends.cuda_graph import pdl_pair
from ember.codegen import cuda as cg


def _step(device="h100"):
    """q attends to a cache's first P rows plus one new row, which the program writes at slot P."""
    kc, vc = em.input("kc", (2, 3, 19, 8)), em.input("vc", (2, 3, 19, 8))
    q, x = em.input("q", (2, 3, 1, 8)), em.input("x", (2, 3, 1, 8))
    wk, wv = em.state_write(kc, x.exp() * 0.1, 2, "P"), em.state_write(vc, x + 1.0, 2, "P")
    n = sm.sym("P") + 1
    o = ((q @ em.narrow_to(wk.updated, 2, n).transpose(-1, -2)) * (1 / math.sqrt(8))).softmax(-1) \
        @ em.narrow_to(wv.updated, 2, n)
    return em.compile(o, device=device, writes=[wk, wv], dim_bounds={"P": 18})


def test_every_sm90_kernel_triggers_and_waits_before_anything_else():
    prog = _step()
    _, kernels = cg.split_program(prog.source)
    assert kernels and all(l.config.get("pdl") for l in prog.launches)
    for name, src in kernels.items():
        body = src.split(f" {name}(", 1)[1].split(") {", 1)[1].strip().splitlines()
        stmts = [ln.strip() for ln in body if ln.strip() and not ln.strip().startswith(("__shared__", "//", "/*"))]
        assert stmts[0] == "EM_GRID_DEPENDENCY();", (name, stmts[:3])


def test_dims_come_from_device_memory_and_compile():
    from ember.backends.cuda import compile_cuda
    prog = _step()
    prelude, kernels = cg.split_program(prog.source)
    with_dims = [l for l in prog.launches if l.dims]
    assert with_dims
    for l in with_dims:
        src = kernels[l.kernel]
        assert "const long long* __restrict__ em_dims_" in src and not re.search(r"long long d_P[,)]", src)
        assert re.search(r"const long long d_P = em_dims_\[0\];", src)
        compile_cuda(prelude + "\n" + src, "sm_90a")


def test_dims_layout_gives_each_launch_its_own_slice():
    from ember.backends.cuda_dims import DeviceDims
    launches = [SimpleNamespace(dims=["P"], collective=None), SimpleNamespace(dims=[], collective=None),
                SimpleNamespace(dims=["T", "P"], collective=None), SimpleNamespace(dims=["P"], collective="all_reduce")]
    allocated = []

    def alloc(n):
        allocated.append(n)
        return SimpleNamespace(handle=4096)
    d = DeviceDims(SimpleNamespace(launches=launches), alloc)
    assert d.names == ("P", "T", "P") and allocated == [24]
    assert d.pointer(0) == 4096 and d.pointer(2) == 4096 + 8
    empty = DeviceDims(SimpleNamespace(launches=launches[1:2]), alloc)
    assert empty.names == () and len(allocated) == 1
    empty.write({"P": 3}, 0)  # nothing to write: no driver call


def test_programmatic_edges_skip_collectives_waitless_kernels_and_emptied_nodes():
    def L(pdl=True, coll=None):
        return SimpleNamespace(config={"pdl": True} if pdl else {}, collective=coll)
    prog = SimpleNamespace(launches=[L(), L(), L(pdl=False), L(), L(coll="all_reduce"), L(), L()])
    # the first has no predecessor; a kernel without the wait never is a dependent; around a
    # collective the edges stay plain
    assert [pdl_pair(prog, i) for i in range(7)] == [False, True, False, True, False, False, True]
    # a node a bound dim may empty (disabled) keeps plain edges on both sides
    assert [pdl_pair(prog, i, emptied={5}) for i in range(7)][5:] == [False, False]


def test_pdl_only_where_the_target_has_it():
    import dataclasses
    target = dataclasses.replace(em.get_target("h100"), compute_capability=(8, 0))  # (no sm_80 preset)
    prog = _step(target)
    assert not any(l.config.get("pdl") for l in prog.launches)
    assert "EM_GRID_DEPENDENCY();" not in prog.source.split(cg.KERNEL_MARK, 1)[1]
