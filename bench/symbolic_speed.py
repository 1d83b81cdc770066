"""Speed of the symbolic hot path (CPU seconds, best of N fresh processes): building a view-heavy
transformer-like graph (bench/graph_build.py, 16 layers, constant and symbolic shapes), lowering
it, building and lowering the demo decoder block, and 6000 random expressions of
tests/test_symbolic.py. CPU time, not wall time: the numbers stay comparable on a shared machine.

    python bench/symbolic_speed.py [N]
"""
import json
import os
import subprocess
import sys

CHILD = r'''
import json, random, sys, time
sys.setrecursionlimit(10000)
sys.path.insert(0, "bench")
import numpy as np
import graph_build
from ember.demo import decoder_graph
from ember.kernel.lower import lower
from tests.test_symbolic import build, random_tree


def timed(res, name, fn):
    t = time.process_time()
    out = fn()
    res[name] = time.process_time() - t
    return out


def random_expressions(trees):
    for tree in trees:
        try:
            build(tree)
        except ZeroDivisionError:
            pass


res = {}
t0 = time.process_time()
xs = timed(res, "build_tf", lambda: [graph_build.build(16, s) for s in (False, True)])
timed(res, "lower_tf", lambda: [lower([x.node]) for x in xs])
y = timed(res, "build_dec", lambda: decoder_graph(np.random.default_rng(0), dim=256, heads=8, kv_heads=4,
                                                  hidden=688, seq=64))
timed(res, "lower_dec", lambda: lower([y.node]))
rng = random.Random(7)
trees = [random_tree(rng, 5) for _ in range(6000)]
timed(res, "sym_random", lambda: random_expressions(trees))
res["total"] = time.process_time() - t0
print(json.dumps(res))
'''


def main() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = []
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=root)
        if p.returncode:
            sys.exit(p.stderr)
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    print(json.dumps({k: round(min(r[k] for r in runs), 3) for k in runs[0]}))


if __name__ == "__main__":
    main()
