"""A program's step as a timeline: every launch (kernel or collective) run once, in order, timed on
its device, written as a Chrome/Perfetto trace (the JSON `traceEvents` format that ui.perfetto.dev
and chrome://tracing open) and summed per kind.

    summary = prog.trace("step.json", dims={"P": 127}, **inputs)
    summary["collective_us"], summary["kernel_us"]

Under tensor parallelism each rank writes its own file with its rank as the process id; the files
concatenate into one timeline (`merge_traces`)."""
from __future__ import annotations

import json


def trace_events(program, spans: list, rank: int = 0) -> list:
    """Chrome trace events for spans [(launch index, start us, duration us)]: kernels on thread 0,
    collectives on thread 1 of process `rank`."""
    ev = [{"name": "process_name", "ph": "M", "pid": rank, "args": {"name": f"rank {rank} ({program.device})"}},
          {"name": "thread_name", "ph": "M", "pid": rank, "tid": 0, "args": {"name": "kernels"}},
          {"name": "thread_name", "ph": "M", "pid": rank, "tid": 1, "args": {"name": "collectives"}}]
    for i, start, dur in spans:
        l = program.launches[i]
        ev.append({"name": l.kernel, "cat": "collective" if l.collective else "kernel", "ph": "X", "pid": rank,
                   "tid": 1 if l.collective else 0, "ts": round(start, 3), "dur": round(dur, 3),
                   "args": {"launch": i, "buffers": list(l.args)}})
    return ev


def summarize(program, spans: list) -> dict:
    coll = sum(d for i, _, d in spans if program.launches[i].collective)
    kern = sum(d for i, _, d in spans if not program.launches[i].collective)
    end = max((s + d for _, s, d in spans), default=0.0)
    return {"launches": len(spans), "kernel_us": kern, "collective_us": coll, "span_us": end,
            "collectives": sum(1 for i, _, _ in spans if program.launches[i].collective)}


def write_trace(path, program, spans: list, rank: int = 0) -> None:
    with open(path, "w") as f:
        json.dump({"traceEvents": trace_events(program, spans, rank), "displayTimeUnit": "ms"}, f)


def merge_traces(paths: list, out) -> None:
    """One timeline of several ranks' trace files."""
    events: list = []
    for p in paths:
        with open(p) as f:
            events += json.load(f)["traceEvents"]
    with open(out, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)
