"""CUDA graphs that follow a program's bounded named dimensions without a recapture.

A decode step's cache length P changes every call. Captured per binding, its graph would be new
every step and the step would run as ~200 direct launches (~12 ms from Python on the H100,
bench/results/llm-2026-11-25.json). A program compiled with `dim_bounds` has one memory plan for
every binding within the bounds (runtime/program.py), so its pointers stay put; this graph is
built node by node (cuda.core's explicit graph API), and a call with new dims updates only the
kernel nodes whose grid (or tensor maps) follow a bounded dim (`ExecutableKernelNode.update`),
disabling a node whose grid is empty, before the replay; the dims themselves are read by the kernels
from device memory (backends/cuda_dims.py), written before the replay. Consecutive kernels are joined by programmatic edges
(programmatic dependent launch, codegen/cuda_pdl.py) except around a node that may be disabled.

A collective step (backends/nccl.py) is NCCL's work captured from a stream into a child graph and
embedded between the kernel nodes; its element count is fixed at capture, so a program whose
collectives' sizes follow a bounded dim is captured per binding instead (`static_collectives`)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from .. import dtypes as dt
from .. import symbolic as sm


@dataclass
class Collective:
    """A collective step ready to enqueue: `call(stream_handle)` (a raw CUstream, captured when the
    stream is capturing)."""
    kind: str
    src: int
    dst: int
    count: int  # elements each rank sends
    dtype: dt.DType
    comm: object  # nccl.NCCLComm (None when count is 0)

    def __call__(self, stream: int) -> None:
        self.comm.run(self.kind, self.src, self.dst, self.count, self.dtype, stream)


def issue(stream, cfg, k, args) -> None:
    """Enqueue one item of CUDAExecutor._launch_args on a cuda.core Stream or GraphBuilder: a kernel
    launch, or (cfg None) a collective."""
    if cfg is None:
        k(int((stream.stream if hasattr(stream, "begin_building") else stream).handle))
    else:
        from cuda.core import launch
        launch(stream, cfg, k, *args)


def launch_config(l, grid: int, direct: bool = False):
    """The LaunchConfig of launch l with `grid` blocks. A megakernel launched directly is
    cooperative (the driver refuses a grid whose blocks cannot all be resident at once instead of
    letting it hang); cuda.core's graph nodes cannot be (NotImplementedError in cuda.core 1.2), so
    in graphs co-residency rests on the occupancy check made at load (check_coresident)."""
    from cuda.core import LaunchConfig
    return LaunchConfig(grid=grid, block=int(l.config["block"]), shmem_size=int(l.config.get("smem", 0)),
                        is_cooperative=bool(direct and l.config.get("cooperative")))


def check_coresident(kernel, l, sms: int | None = None) -> None:
    """A persistent kernel's workers wait on each other, so all of them must be resident at once:
    the occupancy the compiled kernel actually gets (registers, shared memory) must hold the
    workers per SM it was scheduled for (docs/megakernel.md), and a constant grid must fit the
    device's `sms` SMs at that occupancy (a stream-K GEMM compiled for more SMs than this GPU has)."""
    from .target import DeviceError
    per_sm = int(l.config.get("per_sm", 1))
    got = kernel.occupancy.max_active_blocks_per_multiprocessor(int(l.config["block"]), int(l.config.get("smem", 0)))
    grid = l.config.get("grid")
    if sms and isinstance(grid, int) and grid > sms * max(got, 1):
        raise DeviceError(f"{l.kernel}: {grid} blocks that wait on each other, but this GPU holds {sms} x {got} at once: "
                          "compile it for this device")
    if got < per_sm:
        a = kernel.attributes
        raise DeviceError(f"megakernel {l.kernel}: scheduled for {per_sm} workers per SM of {l.config['block']} threads, "
                          f"but the compiled kernel fits only {got} ({a.num_regs} registers, {a.shared_size_bytes} B static + "
                          f"{l.config.get('smem', 0)} B dynamic shared memory, {a.local_size_bytes} B local): they could not "
                          "all be resident, and a persistent kernel would hang")


def pdl_enabled() -> bool:
    """Programmatic dependent launch between a graph's kernels (codegen/cuda_pdl.py); EMBER_PDL=0
    turns it off."""
    return os.environ.get("EMBER_PDL", "1") != "0"


def pdl_pair(program, i: int, emptied=()) -> bool:
    """Whether launch i may start while launch i-1 drains: both kernels (not collectives), i
    rendered with the grid-dependency wait, neither with a grid that a bound dim may empty (a
    disabled node must keep plain edges)."""
    if i == 0:
        return False
    a, b = program.launches[i - 1], program.launches[i]
    return bool(not a.collective and not b.collective and b.config.get("pdl") and i not in emptied
                and i - 1 not in emptied)


def may_empty(grid, bounded: set) -> bool:
    """Whether a grid following a bounded dim can be 0 blocks: a decode step's cache length P from 0
    can; a named batch B (at least 1) times 64 cannot, and its node keeps its programmatic edges
    (the batch-invariant decode program, whose every grid follows B, lost them all: ~0.37 ms a step)."""
    from ..symbolic.assume import _vars
    grid = sm.sym(grid)
    if not bounded & sm.free_vars(grid):
        return False
    # a plain named dim (sm.dim) may be bound to 0; a var declared with a range (sm.var("B", 1, 8))
    # keeps it: the grid at each bounded dim's least binding
    least = {n: (v.args[1] if v.args[2] is not None else 0) for n, v in _vars(grid, {}).items() if n in bounded}
    return sm.substitute(grid, least).vmin <= 0


def programmatic_edges(gd, nodes: list, pairs: list) -> int:
    """Turn the plain edge nodes[i-1] -> nodes[i] into a programmatic one wherever pairs[i]; returns
    how many were turned (a driver that refuses keeps the plain edges)."""
    from cuda.bindings import driver as d
    idx = [i for i, ok in enumerate(pairs) if ok]
    if not idx:
        return 0

    def node(h):
        return h if isinstance(h, d.CUgraphNode) else d.CUgraphNode(int(h))
    graph = gd.handle if isinstance(gd.handle, d.CUgraph) else d.CUgraph(int(gd.handle))
    frm, to = [node(nodes[i - 1].handle) for i in idx], [node(nodes[i].handle) for i in idx]
    edge = d.CUgraphEdgeData()
    edge.type = d.CUgraphDependencyType.CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC
    edge.from_port = d.CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC
    edge.to_port = 0
    (err,) = d.cuGraphRemoveDependencies(graph, frm, to, None, len(idx))
    if err != d.CUresult.CUDA_SUCCESS:
        return 0
    (err,) = d.cuGraphAddDependencies(graph, frm, to, [edge] * len(idx), len(idx))
    if err != d.CUresult.CUDA_SUCCESS:  # put the plain edges back
        (err2,) = d.cuGraphAddDependencies(graph, frm, to, None, len(idx))
        if err2 != d.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"CUDA error {err2} restoring graph edges")
        return 0
    return len(idx)


def programmatic(cfg):
    """A LaunchConfig like cfg whose launch may overlap the previous kernel in its stream (PDL)."""
    from cuda.core import LaunchConfig
    return LaunchConfig(grid=cfg.grid, block=cfg.block, shmem_size=cfg.shmem_size, programmatic_stream_serialization=True)


def static_collectives(program) -> bool:
    """Whether no collective's size depends on a bounded dim (so a DynamicGraph can hold them)."""
    bounded = set(program.dim_bounds)
    return not any(bounded & set().union(*(sm.free_vars(s) for s in program.buffers[l.args[0]].shape))
                   for l in program.launches if l.collective)


def dynamic_launches(program) -> list:
    """Indices of the launches whose grid or tensor maps depend on a bounded dimension (dims
    themselves are read from device memory: backends/cuda_dims.py)."""
    bounded = set(program.dim_bounds)
    out = []
    for i, l in enumerate(program.launches):
        if l.collective:  # (fixed at capture: see static_collectives)
            continue
        grid_vars = sm.free_vars(sm.from_json(l.config["grid"]))
        if bounded & grid_vars or (_symbolic_maps(l) and bounded & set(l.dims)):
            out.append(i)
    return out


def _symbolic_maps(l) -> bool:
    """Whether launch l's tensor maps depend on the run's dims (a symbolic extent: a prompt's length);
    a decode kernel's maps over the cache's bounded keys do not."""
    return any(not isinstance(d, int) for spec in (l.config.get("tma") or ()) for d in spec["dims"])


class DynamicGraph:
    def __init__(self, executor, program, ptrs: dict, env: dict):
        from cuda.core.graph import GraphDefinition
        self.ex, self.program, self.ptrs = executor, program, ptrs
        self.dynamic = dynamic_launches(program)
        self.grids = executor.grids  # (parsed once per program)
        self.last: dict = {}  # dynamic launch -> (grid, dims values) its node holds
        self.programmatic = 0  # edges turned programmatic (codegen/cuda_pdl.py)
        gd = GraphDefinition()
        nodes, prev, live = [], None, []
        for i, k in enumerate(executor.kernels):
            if k is None:  # a collective: NCCL's captured work as a child graph
                node = (gd if prev is None else prev).embed(self._capture(program.launches[i], env))
                nodes.append(node)
                live.append(True)
                prev = node
                continue
            cfg, args, ok = self._launch(i, env)
            node = gd.launch(cfg, k, *args) if prev is None else prev.launch(cfg, k, *args)
            nodes.append(node)
            live.append(ok)
            prev = node
        if pdl_enabled():
            bounded = set(program.dim_bounds)
            emptied = {i for i in self.dynamic if may_empty(self.grids[i], bounded)}  # nodes that may be disabled
            self.programmatic = programmatic_edges(gd, nodes, [pdl_pair(program, i, emptied) for i in range(len(nodes))])
        self.graph = gd.instantiate()
        self.nodes = [self.graph[n] for n in nodes]
        for n, ok in zip(self.nodes, live):
            if not ok:
                n.disable()
        self.live = live
        self.graph.upload(executor.stream)
        self.env = dict(env)
        self.last = {i: self._state(i, env) for i in self.dynamic}

    def _state(self, i: int, env: dict) -> tuple:
        """What launch i's node holds under env: its grid, and for a TMA launch the dims its tensor
        maps are built from (other kernels read dims from device memory: a decode step's new
        position updates no node unless a grid changes)."""
        l = self.program.launches[i]
        return int(sm.evaluate(self.grids[i], env)), tuple(env[d] for d in l.dims) if _symbolic_maps(l) else ()

    def _capture(self, l, env: dict):
        """The collective step l as a graph definition, captured from a stream."""
        call = self.ex.collective(self.program, l, self.ptrs, env)
        gb = self.ex.stream.create_graph_builder()
        gb.begin_building()
        if call.count:
            call(int(gb.stream.handle))
        gb.end_building()
        return gb.graph_definition

    def _launch(self, i: int, env: dict, grid: int | None = None):
        """(config, args, whether it runs) of launch i under env; an empty grid keeps a 1-block
        config (the node is disabled)."""
        l = self.program.launches[i]
        grid = int(sm.evaluate(self.grids[i], env)) if grid is None else grid
        cfg = launch_config(l, max(grid, 1))
        return cfg, self.ex._args(i, l, self.ptrs, env), grid > 0

    def apply(self, env: dict):
        """Update the nodes that read the dims to `env`; returns the executable graph."""
        if env != self.env:
            for i in self.dynamic:
                now = self._state(i, env)
                if self.last.get(i) == now:  # (a kernel whose dims did not change value)
                    continue
                self.last[i] = now
                cfg, args, ok = self._launch(i, env, now[0])
                n = self.nodes[i]
                n.update(config=cfg, kernel=self.ex.kernels[i], args=args)
                if ok != self.live[i]:
                    n.enable() if ok else n.disable()
                    self.live[i] = ok
            self.env = dict(env)
        return self.graph
