"""Canonical forms, printed, for refactors of ember/symbolic that must not change them: random
expressions (with bounds, symbolic bounds, C, JSON, substitutions, free variables, proofs), view
chains drawn like tests/test_view.py's (derandomized), and the kernels of lowered graphs.

    python bench/symbolic_forms.py [N] > before.txt   (then again after the change; diff must be empty)
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from ember import symbolic as sm  # noqa: E402
from ember.demo import decoder_graph  # noqa: E402
from ember.kernel.lower import lower  # noqa: E402
from ember.view import View  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from tests import test_view as tv  # noqa: E402
from tests.test_symbolic import VARS, build, random_tree  # noqa: E402

import graph_build  # noqa: E402

DRAWS = settings(derandomize=True, max_examples=400, database=None, deadline=None,
                 suppress_health_check=list(HealthCheck))


def show(e: sm.Expr) -> str:
    lb, ub = sm.lower_bound(e), sm.upper_bound(e)
    s1 = sm.substitute(e, {"N": 3, "M": 5})
    s2 = sm.substitute(e, {"i": VARS["j"] + 1, "N": VARS["M"] * 2})
    return " | ".join(map(str, (e.key, f"{e.vmin} {e.vmax}", lb.key, ub.key, sm.render_c(e), sm.to_json(e),
                                s1.key, s2.key, sorted(sm.free_vars(e)))))


def expressions(n: int) -> None:
    rng = random.Random(1234)
    for t in range(n):
        tree = random_tree(rng, rng.randint(2, 5))
        try:
            e = build(tree)
        except ZeroDivisionError as ex:
            print("T", t, type(ex).__name__)
            continue
        try:
            print("T", t, show(e))
        except ZeroDivisionError as ex:  # a substitution may divide by zero
            print("T", t, e.key, "ERR", type(ex).__name__)
        if t % 7 == 0:
            a, b = VARS[rng.choice(sorted(VARS))], build(random_tree(rng, 2))
            for f in (sm.prove_le, sm.prove_lt):
                print("P", f(a, b), f(e, b))


@DRAWS
@given(tv.chains())
def const_chains(chain):
    shape, ops = chain
    v = View.contiguous(shape)
    print("V", shape)
    for op in ops:
        v = tv.apply_view(v, op)
        print("  ", op, v.shape, v.index.key, v.valid.key, v.affine_strides())


@DRAWS
@given(tv.sym_chains())
def sym_chains(chain):
    shape, ops = chain
    v = View.contiguous(shape)
    print("W", shape)
    for op in ops:
        v = tv.apply_view(v, op)
        print("  ", op, v.shape, v.index.key, v.valid.key, sm.render_c(v.index))


def kernels() -> None:
    for symbolic in (False, True):
        for k, _ in lower([graph_build.build(2, symbolic).node]).kernels:
            print("K", k)
    y = decoder_graph(np.random.default_rng(0), dim=128, heads=8, kv_heads=4, hidden=344, seq=32)
    for k, _ in lower([y.node]).kernels:
        print("D", k)


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    expressions(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
    const_chains()
    sym_chains()
    kernels()
