"""Speed of the symbolic hot path (CPU seconds, best of N fresh processes): building a view-heavy
transformer-like graph (bench/graph_build.py, 16 layers, constant and symbolic shapes), lowering
it, building and lowering the demo decoder block, and 6000 random expressions of tests/test_symbolic.py.

    python bench/symbolic_speed.py [N]
"""
import subprocess, sys, json, os
CHILD = r'''
import sys, time, random, json
sys.setrecursionlimit(10000)
sys.path.insert(0, "bench")
import numpy as np
t0 = time.process_time()
import graph_build
from ember.kernel.lower import lower
from ember.demo import decoder_graph
from ember import symbolic as sm
res = {}
t = time.process_time(); xs = [graph_build.build(16, s) for s in (False, True)]; res["build_tf"] = time.process_time() - t
t = time.process_time(); [lower([x.node]) for x in xs]; res["lower_tf"] = time.process_time() - t
t = time.process_time(); y = decoder_graph(np.random.default_rng(0), dim=256, heads=8, kv_heads=4, hidden=688, seq=64); res["build_dec"] = time.process_time() - t
t = time.process_time(); lower([y.node]); res["lower_dec"] = time.process_time() - t
from tests.test_symbolic import random_tree, build
rng = random.Random(7); trees = [random_tree(rng, 5) for _ in range(6000)]
t = time.process_time()
for tr in trees:
    try: build(tr)
    except ZeroDivisionError: pass
res["sym_random"] = time.process_time() - t
res["total"] = time.process_time() - t0
print(json.dumps(res))
'''
runs = []
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=root)
    if p.returncode: print(p.stderr); sys.exit(1)
    runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
best = {k: round(min(r[k] for r in runs), 3) for k in runs[0]}
print(json.dumps(best))
