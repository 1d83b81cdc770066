"""`em.compile`: the one pipeline, graph -> lower -> (search) -> render -> Program.

Each stage is a plain function of its inputs and the Target (backends/target.py), which is made
once here from the device the user names and passed on; no stage below compares device names.

    target   = get_target(device)                      "cpu", "cuda", "cuda:1", "h100", a Target
    lowered  = lower(nodes, names, target)             kernel/lower.py (split thresholds from the target)
    configs  = search (optional)                       search/driver.py, given `build_program` as a callback
    source   = render(lowered, target, configs)        the target's renderer (codegen/c.py, codegen/cuda.py)
    program  = build_program(lowered, target, ...)     a runtime Program; the target's executor runs it
"""
from __future__ import annotations

from . import symbolic as sm
from .backends.target import DeviceError, Target, get_target
from .kernel import lower as lowering
from .kernel.stats import kernel_bytes, kernel_flops
from .runtime.program import BufferSpec, Launch, Program
from .ops.state import StateWriteSpec
from .tensor import Tensor

SEARCH_MODES = ("none", "fast", "full")


def _outputs(y):
    if isinstance(y, Tensor):
        return [y], None, "single"
    if isinstance(y, dict):
        return list(y.values()), list(y.keys()), "dict"
    if isinstance(y, (list, tuple)) and all(isinstance(t, Tensor) for t in y):
        return list(y), None, "tuple"
    raise TypeError(f"em.compile takes a Tensor, or a list/tuple/dict of Tensors; got {type(y).__name__}")


def _graph_nodes(y) -> list:
    from .graph import toposort
    return toposort([t.node for t in _outputs(y)[0]])


def lower(nodes: list, output_names, target: Target, force=None, local=None, writes: tuple = ()) -> lowering.LoweredGraph:
    """Graph -> kernels (the fusion decision), for `target`."""
    return lowering.lower(nodes, output_names, force=force, local=local, target=target, writes=writes)


def _state_writes(specs) -> tuple[tuple, list]:
    """em.state_write specs -> the lowering's StateWrites and their JSON record (checked per call)."""
    writes, record = [], []
    for w in specs or ():
        if not isinstance(w, StateWriteSpec):
            raise TypeError(f"writes= takes em.state_write(...) items, got {type(w).__name__}")
        writes.append(lowering.StateWrite(w.state.node, w.updated.node, w.axis, w.start, w.extent))
        record.append({"state": w.state.node.arg, "axis": w.axis, "start": sm.to_json(w.start),
                       "extent": sm.to_json(w.extent)})
    states = [r["state"] for r in record]
    if len(set(states)) != len(states):
        raise ValueError(f"writes=: each state may be written once per program, got {states}")
    return tuple(writes), record


def render(lowered: lowering.LoweredGraph, target: Target, configs: list | None = None) -> tuple[str, list]:
    """Kernels -> (source, per-kernel launch config) with the target's renderer."""
    buffer_index = {n: i for i, n in enumerate(lowered.buffers)}
    dim_index = {d: i for i, d in enumerate(lowered.dims)}
    constants = frozenset(n for n, b in lowered.buffers.items() if b.kind == "data")  # weights captured at import
    return target.render_program(lowered.kernels, buffer_index, dim_index, configs, target, constants=constants)


def build_program(lowered: lowering.LoweredGraph, device, output_names, output_kind: str,
                  meta: dict | None = None, configs: list | None = None, load: bool = True) -> Program:
    """Render source for `device` (a Target, or anything get_target takes) from lowered kernels and
    wrap it as a Program. On a target whose device is here the code is compiled and loaded now."""
    target = get_target(device)
    buffers = {n: BufferSpec(b.name, b.dtype, b.shape, b.kind) for n, b in lowered.buffers.items()}
    source, cfgs = render(lowered, target, configs)
    launches = []
    between = dict.fromkeys(range(len(lowered.kernels) + 1), ())
    for at, step in lowered.collectives:
        between[at] += (step,)
    for i, ((k, args), cfg) in enumerate(zip(lowered.kernels, cfgs)):
        launches += [collective_launch(c) for c in between[i]]
        stats = {"bytes": sm.to_json(kernel_bytes(k)), "flops": sm.to_json(kernel_flops(k))}
        launches.append(Launch(k.name, [args[p.name] for p in k.buffers], list(k.dims), stats, cfg,
                               [args[p.name] for p in k.buffers if p.role == "out"]))
    launches += [collective_launch(c) for c in between[len(lowered.kernels)]]
    data = {n: b.node.arg.array for n, b in lowered.buffers.items() if b.kind == "data"}
    meta = dict(meta or {})
    meta["kernels_ir"] = "\n".join(str(k) for k, _ in lowered.kernels)
    p = Program(target.kind, source, launches, buffers, lowered.outputs, lowered.inputs, lowered.dims, data,
                output_names, output_kind, meta, target)
    if target.runnable and load:
        p.executor  # noqa: B018 - compile and load now: a candidate that cannot build fails here
    return p


def collective_launch(c: lowering.CollectiveStep) -> Launch:
    """A collective as a launch: no kernel (its name starts with "@"); the executor runs it between
    the kernels around it (runtime/program.py `Launch.collective`)."""
    stats = {"bytes": sm.to_json(c.nbytes), "flops": sm.to_json(sm.sym(0))}
    return Launch("@" + c.op, [c.src, c.dst], [], stats, {"collective": c.op}, [c.dst])


def compile(y, device=None, search: str = "none", debug: int = 0, **options) -> Program:
    """Compile tensor(s) y into a Program for `device` ("cpu", "cuda", "cuda:N", a preset such as
    "h100", or a Target; default: CUDA if present, else the CPU).

    search: "none" uses the default lowering; "fast"/"full" search for faster equivalent programs
    (every candidate verified against the reference before it is timed); options: time_limit (s),
    example_inputs, progress; cast_inputs=True makes calls convert float inputs wider than the
    graph's (float64 arrays into a float32 graph) instead of refusing them; writes=[em.state_write(...)]
    stores values into state inputs in place (ember/ops/state.py; run with `prog.run(inputs, dims=)`);
    dim_bounds={"P": 4095} plans memory once at the bounds (one CUDA graph for every binding);
    megakernel=True | "auto" (CUDA) runs the program as one persistent kernel, or the faster of that and
    the kernels (docs/megakernel.md); megakernel_options: seed, jitter, trace, workers, per_sm, threads (the
    most a task takes), unroll, l1_reserve, task_smem, fuse, warp_min_grid, free_running, prefetch
    (docs/megakernel.md "Options"), and
    as_kernels=True (the megakernel's task schedules run kernel by kernel: a reference close to it);
    cache=True keeps the compiled program on disk under the graph's structural hash (a new process
    compiling the same graph loads it: ember/runtime/program_cache.py).
    debug: 1 prints the graph, 2 also the kernels (IR), 3 also the source."""
    if search not in SEARCH_MODES:
        raise ValueError(f"search must be one of {SEARCH_MODES}, got {search!r}")
    limit = options.get("time_limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit > 0):
        raise ValueError(f"time_limit must be a positive number of seconds, got {limit!r}")
    if search != "none" and any(n.op == "collective" for n in _graph_nodes(y)):
        raise ValueError("search over a program with collectives (em.all_reduce / em.all_gather) is not supported "
                         "yet (its candidates would have to be timed on every rank at once): compile with search='none'")
    cast_inputs = bool(options.pop("cast_inputs", False))
    writes, record = _state_writes(options.pop("writes", ()))
    bounds = options.pop("dim_bounds", None) or {}
    if any(not isinstance(v, int) or v < 0 for v in bounds.values()):
        raise ValueError(f"dim_bounds takes {{dim name: non-negative int}}, got {bounds}")
    if writes and search != "none":
        raise ValueError("search with state writes (writes=) is not supported yet: compile with search='none'")
    megakernel = options.pop("megakernel", False)
    mk_options = dict(options.pop("megakernel_options", None) or {})
    if megakernel not in (False, True, "auto"):
        raise ValueError(f"megakernel must be False, True or 'auto', got {megakernel!r}")
    if megakernel and search != "none":
        raise ValueError("megakernel= with search= is not supported yet: compile with search='none' "
                         "(megakernel='auto' times the megakernel against the kernel-by-kernel program)")
    ts, names, kind = _outputs(y)
    target = get_target(device)
    nodes = [t.node for t in ts]
    if debug >= 1:
        from .graph import graph_str
        print(graph_str(nodes))
    use_cache = bool(options.pop("cache", False)) and search == "none"
    key = None
    if use_cache:
        from .runtime import program_cache
        roots = nodes + [w.updated for w in writes]
        key = program_cache.program_key(nodes, names, kind, record, [w.updated for w in writes], bounds, target,
                                        [megakernel, sorted(mk_options.items())])
        prog = program_cache.load(key, roots, target)
        if prog is not None:
            prog.from_cache = True
            if target.runnable:
                prog.executor  # noqa: B018 - compiled (NVRTC's cache) and loaded now
            prog.cast_inputs = cast_inputs
            if bounds:
                prog.meta["dim_bounds"] = dict(bounds)
            return prog
    if search != "none":
        if not target.runnable:
            raise DeviceError(f"search={search!r} times candidates on the device, and {target} is a preset "
                              "with no device here: compile with search='none' to generate code only")
        from .search.driver import search_program
        prog = search_program(nodes, target, names, kind, search, build=build_program, **options)
    elif megakernel or mk_options.get("as_kernels"):  # (as_kernels: the task schedules as kernels)
        from .megakernel_choice import build_with_megakernel
        meta = {"writes": record} if record else {}
        if bounds:
            meta["dim_bounds"] = dict(bounds)
        prog = build_with_megakernel(lower(nodes, names, target, writes=writes), target, names, kind, meta,
                                     megakernel, build_program, **mk_options)
    else:
        prog = build_program(lower(nodes, names, target, writes=writes), target, names, kind,
                             meta={"writes": record} if record else None)
    if bounds:
        prog.meta["dim_bounds"] = dict(bounds)
    unknown = sorted(set(bounds) - set(prog.dims))
    if unknown:
        raise ValueError(f"dim_bounds names {unknown}, which are not dimensions of the program ({prog.dims})")
    prog.cast_inputs = cast_inputs
    if key is not None:
        program_cache.store(key, prog, roots)
    if debug >= 2:
        print(prog.meta.get("kernels_ir") or "\n".join(f"{l.kernel}: {l.args}" for l in prog.launches))
    if debug >= 3:
        print(prog.source)
    return prog
