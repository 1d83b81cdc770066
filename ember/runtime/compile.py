"""`em.compile`: graph -> kernels -> generated source -> a runnable `Program` on a device."""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel import lower as lowering
from ..kernel.stats import kernel_bytes, kernel_flops
from ..tensor import Tensor
from . import devices
from .program import BufferSpec, Launch, Program

SEARCH_MODES = ("none", "fast", "full")


def _outputs(y):
    if isinstance(y, Tensor):
        return [y], None, "single"
    if isinstance(y, dict):
        return list(y.values()), list(y.keys()), "dict"
    if isinstance(y, (list, tuple)) and all(isinstance(t, Tensor) for t in y):
        return list(y), None, "tuple"
    raise TypeError(f"em.compile takes a Tensor, or a list/tuple/dict of Tensors; got {type(y).__name__}")


def build_program(lowered: lowering.LoweredGraph, device: str, output_names, output_kind: str,
                  meta: dict | None = None, configs: list | None = None) -> Program:
    """Render source for `device` from lowered kernels and wrap it as a Program."""
    buffers = {n: BufferSpec(b.name, b.dtype, b.shape, b.kind) for n, b in lowered.buffers.items()}
    buffer_index = {n: i for i, n in enumerate(buffers)}
    dim_index = {d: i for i, d in enumerate(lowered.dims)}
    if device == "cpu":
        from ..codegen.c import render_program
        source = render_program(lowered.kernels, buffer_index, dim_index, configs=configs)
        cfgs = [{"cfg": c} if c else {} for c in (configs or [None] * len(lowered.kernels))]
    else:
        from ..codegen.cuda import render_program as render_cuda
        source, cfgs = render_cuda(lowered.kernels, configs)
    launches = []
    for (k, args), cfg in zip(lowered.kernels, cfgs):
        stats = {"bytes": sm.to_json(kernel_bytes(k)), "flops": sm.to_json(kernel_flops(k))}
        launches.append(Launch(k.name, [args[p.name] for p in k.buffers], list(k.dims), stats, cfg,
                               [args[p.name] for p in k.buffers if p.role == "out"]))
    data = {n: b.node.arg.array for n, b in lowered.buffers.items() if b.kind == "data"}
    meta = dict(meta or {})
    meta["kernels_ir"] = "\n".join(str(k) for k, _ in lowered.kernels)
    p = Program(device, source, launches, buffers, lowered.outputs, lowered.inputs, lowered.dims, data,
                output_names, output_kind, meta)
    p.executor = devices.executor_for(device)(p)
    return p


def compile(y, device: str | None = None, search: str = "none", debug: int = 0, **options) -> Program:
    """Compile tensor(s) y into a Program for `device` ("cpu", "cuda"; default: CUDA if present).

    search: "none" uses the default lowering; "fast"/"full" search for faster equivalent programs
    (every candidate verified against the reference before it is timed); options: time_limit (s),
    example_inputs, progress; cast_inputs=True makes calls convert float inputs wider than the
    graph's (float64 arrays into a float32 graph) instead of refusing them.
    debug: 1 prints the graph, 2 also the kernels (IR), 3 also the source."""
    if search not in SEARCH_MODES:
        raise ValueError(f"search must be one of {SEARCH_MODES}, got {search!r}")
    cast_inputs = bool(options.pop("cast_inputs", False))
    ts, names, kind = _outputs(y)
    dev = devices.normalize(device)
    nodes = [t.node for t in ts]
    if debug >= 1:
        from ..graph import graph_str
        print(graph_str(nodes))
    if search != "none":
        from ..search.driver import search_program
        prog = search_program(nodes, dev, names, kind, search, **options)
    else:
        prog = build_program(lowering.lower(nodes, names), dev, names, kind)
    prog.cast_inputs = cast_inputs
    if debug >= 2:
        print(prog.meta.get("kernels_ir") or "\n".join(f"{l.kernel}: {l.args}" for l in prog.launches))
    if debug >= 3:
        print(prog.source)
    return prog
