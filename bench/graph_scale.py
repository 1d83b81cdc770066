"""Does compilation scale with graph size? (issue 18, item 12: an unrolled 6-layer x 512-step GRU
from torch.export did not finish importing in 150 s.)

    python bench/graph_scale.py [--sizes 1000,10000,100000] [--torch STEPS] [--gcc] [--profile STAGE]

Builds an unrolled recurrence of about N primitive nodes with Ember's tensor API (a tanh RNN cell
h = tanh(h @ W + x[t]), one kernel per step: the shape of any unrolled RNN, LSTM or GRU) and times
each stage: build (graph construction), hash (the structural sha256 of the whole graph, recomputed
from scratch), lower (partition + kernel IR), plan (memory planning of the temporaries), render (C
source). --gcc also compiles the C (gcc time grows with the source; it is not Ember's code).
--torch STEPS also imports an unrolled 2-layer GRU of STEPS steps through torch.export + from_torch's
importer and times the same stages on it. Every stage should grow about linearly: the last column
is microseconds per node.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember as em  # noqa: E402
from ember import graph as g  # noqa: E402
from ember.codegen.c import render_program  # noqa: E402
from ember.kernel import lower as lowering  # noqa: E402
from ember.runtime.memory import plan_memory  # noqa: E402

NODES_PER_STEP = 19  # of the RNN cell below (checked at run time)


def rnn_chain(steps: int, hidden: int = 16, batch: int = 4):
    rng = np.random.default_rng(0)
    xs = em.input("xs", (steps, batch, hidden), em.float32)
    w = em.tensor(rng.standard_normal((hidden, hidden)).astype(np.float32) * 0.1)
    h = em.input("h0", (batch, hidden), em.float32)
    for t in range(steps):
        h = (h @ w + xs[t]).tanh()
    return [h.node]


def torch_gru(steps: int, layers: int = 2, hidden: int = 16, batch: int = 2):
    """An unrolled GRU (GRUCell per layer per step, Python loop) through torch.export and the importer."""
    import torch
    from ember.frontends.pytorch import export, import_graph

    class Unrolled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cells = torch.nn.ModuleList(torch.nn.GRUCell(hidden, hidden) for _ in range(layers))

        def forward(self, x):
            hs = [x.new_zeros(x.shape[1], hidden) for _ in self.cells]
            for t in range(x.shape[0]):
                inp = x[t]
                for i, cell in enumerate(self.cells):
                    hs[i] = cell(inp, hs[i])
                    inp = hs[i]
            return inp

    x = torch.randn(steps, batch, hidden)
    t0 = time.perf_counter()
    with torch.no_grad():
        ep = export(Unrolled().eval(), (x,), None)
    t1 = time.perf_counter()
    graph = import_graph(ep)
    t2 = time.perf_counter()
    outs = [o.node for o in graph.outputs if isinstance(o, em.Tensor)]
    return outs, {"export": t1 - t0, "import": t2 - t1}


def rehash(outputs: list) -> float:
    """Seconds to recompute every node's structural hash from scratch."""
    order = g.toposort(outputs)
    for n in order:
        n._key = None
    t = time.perf_counter()
    for o in outputs:
        _ = o.key
    return time.perf_counter() - t


def plan(lowered) -> tuple:
    """Memory plan of the temporaries, as Program.plan makes it (static shapes)."""
    temps = {n for n, b in lowered.buffers.items() if b.kind == "temp"}
    life: dict = {}
    for i, (k, args) in enumerate(lowered.kernels):
        for p in k.buffers:
            b = args[p.name]
            if b in temps:
                f, e = life.get(b, (i, i))
                life[b] = (min(f, i), max(e, i))
    sizes = {n: int(lowered.buffers[n].size.value) * lowered.buffers[n].dtype.itemsize for n in temps}
    return plan_memory(sizes, {t: life.get(t, (0, 0)) for t in temps}), len(temps)


def stages(outputs: list, times: dict, gcc: bool, profile: str | None) -> dict:
    def timed(name, fn):
        prof = cProfile.Profile() if profile == name else None
        t = time.perf_counter()
        if prof:
            prof.enable()
        out = fn()
        if prof:
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
        times[name] = time.perf_counter() - t
        return out

    times["hash"] = rehash(outputs)
    lowered = timed("lower", lambda: lowering.lower(outputs))
    _, n_temps = timed("plan", lambda: plan(lowered))
    index = {n: i for i, n in enumerate(lowered.buffers)}
    source = timed("render", lambda: render_program(lowered.kernels, index, {d: i for i, d in enumerate(lowered.dims)}))
    if gcc:
        from ember.backends.cpu import compile_c
        timed("gcc", lambda: compile_c(source))
    times["kernels"] = len(lowered.kernels)
    return times


def report(label: str, nodes: int, times: dict) -> None:
    total = sum(v for k, v in times.items() if k not in ("kernels", "gcc", "export"))
    cols = " ".join(f"{k} {v:.2f}s" for k, v in times.items() if k != "kernels")
    print(f"{label:>16}: {nodes:>7} nodes, {times['kernels']:>5} kernels | {cols} | total {total:.1f} s "
          f"({1e6 * total / nodes:.0f} us/node)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000", help="target node counts of the RNN chain")
    ap.add_argument("--torch", type=int, default=0, help="also import an unrolled 2-layer GRU of this many steps")
    ap.add_argument("--gcc", action="store_true", help="also compile the C source with gcc")
    ap.add_argument("--profile", default=None, help="profile one stage (build, lower, plan, render)")
    args = ap.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        steps = max(1, size // NODES_PER_STEP)
        times: dict = {}
        t = time.perf_counter()
        outputs = rnn_chain(steps)
        times["build"] = time.perf_counter() - t
        nodes = len(g.toposort(outputs))
        report(f"rnn x{steps}", nodes, stages(outputs, times, args.gcc, args.profile))
    if args.torch:
        outputs, times = torch_gru(args.torch)
        nodes = len(g.toposort(outputs))
        report(f"torch gru x{args.torch}", nodes, stages(outputs, times, args.gcc, args.profile))


if __name__ == "__main__":
    main()
