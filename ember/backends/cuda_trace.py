"""One CUDA step as a timeline for Program.trace (runtime/trace.py): each launch — kernel or NCCL
collective — issued on the executor's stream between timing events, so a span is that launch's time
on the GPU in sequence (a collective's span includes waiting for the other ranks)."""
from __future__ import annotations

from .cuda_graph import issue


def trace(ex, program, arrays: dict, env: dict) -> list:
    """[(launch index, start us, duration us)] after a warm-up run of the whole program."""
    from cuda.core import EventOptions
    opts = EventOptions(timing_enabled=True)
    ptrs = ex._prepare(program, arrays, env)
    items = ex._launch_args(program, ptrs, env, with_launch=True)
    index = {id(l): i for i, l in enumerate(program.launches)}
    marks = [ex.stream.record(options=opts)]
    for cfg, k, args, _ in items:
        issue(ex.stream, cfg, k, args)
        marks.append(ex.stream.record(options=opts))
    marks[-1].sync()
    t = [(m - marks[0]) * 1e3 for m in marks]
    return [(index[id(it[3])], t[j], t[j + 1] - t[j]) for j, it in enumerate(items)]
