"""Verification: every candidate runs on fresh random inputs (several seeds) with its outputs
poisoned first, and must match the reference at the tolerances of docs/architecture.md. A rejected candidate is a bug
in a rule or a renderer: the reason is recorded so it can be reproduced."""
from __future__ import annotations

import numpy as np

from .. import graph as g
from .. import symbolic as sm
from ..precision import TF32_TOL
from ..reference import evaluate as ref_evaluate

DEFAULT_DIM = 64  # binding for named dims when no example inputs fix them


def tolerance(dtype, tf32: bool = False) -> float:
    """the bound of docs/architecture.md; TF32's where the output depends on a contraction the user allowed to use
    TF32 (ember/precision.py)."""
    if dtype.name in ("float16", "bfloat16"):
        return 1e-2
    return TF32_TOL if tf32 else 1e-4


def uses_tf32(node) -> bool:
    return any(g.is_tf32(n) for n in g.toposort([node]))


def close(out, ref, dtype, tf32: bool = False) -> str | None:
    """None if out matches ref, else a reason."""
    out = np.asarray(out)
    ref = np.asarray(ref)
    if out.shape != ref.shape:
        return f"shape {out.shape} != {ref.shape}"
    if dtype.is_bool or dtype.is_int:
        return None if np.array_equal(out, ref) else f"{int((out != ref).sum())} elements differ"
    o, r = out.astype(np.float64), ref.astype(np.float64)
    if not np.array_equal(np.isnan(o), np.isnan(r)):
        return f"NaN pattern differs ({int(np.isnan(o).sum())} vs {int(np.isnan(r).sum())})"
    inf = np.isinf(r)
    if not np.array_equal(o[inf], r[inf]):
        return "infinities differ"
    fin = ~(np.isnan(r) | inf)
    if not fin.any():
        return None
    tol = tolerance(dtype, tf32)
    err = float(np.max(np.abs(o[fin] - r[fin])))
    scale = float(np.max(np.abs(r[fin])))
    return None if err <= tol + tol * scale else f"max|out-ref| = {err:.3g} > {tol} + {tol}*{scale:.3g}"


class Oracle:
    """Reference outputs for a fixed graph on `seeds` random input sets (computed once)."""

    def __init__(self, outputs: list, seeds=(0, 1, 2), example_inputs: dict | None = None):
        self.outputs = outputs
        self.inputs = g.inputs_of(outputs)
        self.tf32 = [uses_tf32(o) for o in outputs]
        self.env = self._binding(example_inputs or {})
        self.cases = []
        for s in seeds:
            arrays = self._random(s, example_inputs or {})
            try:
                refs = ref_evaluate(outputs, arrays, self.env)
            except ZeroDivisionError:  # random integers hit an integer divisor: draw them from 1 up
                arrays = self._random(s, example_inputs or {}, nonzero=True)
                refs = ref_evaluate(outputs, arrays, self.env)
            self.cases.append((arrays, [r.astype(o.dtype.np) if o.dtype.is_float else r.astype(o.dtype.np)
                                        for r, o in zip(refs, outputs)]))

    def _binding(self, examples: dict) -> dict:
        env: dict = {}
        for n in self.inputs:
            ex = examples.get(n.arg)
            for e, size in zip(n.shape, getattr(ex, "shape", [None] * len(n.shape))):
                if e.op == "var" and size is not None:
                    env[e.args[0]] = int(size)
        for d in g.symbolic_dims(self.outputs):
            env.setdefault(d, DEFAULT_DIM)
        return env

    def _random(self, seed: int, examples: dict, nonzero: bool = False) -> dict:
        rng = np.random.default_rng(seed)
        out = {}
        for n in self.inputs:
            shape = tuple(int(sm.evaluate(s, self.env)) for s in n.shape)
            ex = examples.get(n.arg)
            if n.dtype.is_float:
                a = rng.standard_normal(shape)
            elif n.dtype.is_bool:
                a = rng.random(shape) < 0.5
            else:
                hi = int(np.max(ex)) + 1 if ex is not None and np.size(ex) else 4
                lo = int(np.min(ex)) if ex is not None and np.size(ex) else 0
                lo = max(lo, 1) if nonzero else lo
                a = rng.integers(lo, max(hi, lo + 1), shape)
            out[n.arg] = np.asarray(a).astype(n.dtype.np)
        return out

    def check(self, program) -> str | None:
        """None if the program matches the reference on every seed (outputs poisoned first)."""
        ex = program.executor
        ex.poison = True
        try:
            for i, (arrays, refs) in enumerate(self.cases):
                outs = program.executor.run(program, arrays, self.env)
                for o, r, node, tf32 in zip(outs, refs, self.outputs, self.tf32):
                    why = close(o, r, node.dtype, tf32)
                    if why:
                        return f"seed {i}: {why}"
        finally:
            ex.poison = False
        return None
