"""Hashes of the CUDA source and launch config of every kernel Ember's default lowering makes for the
GPU suite and the KernelBench problems (H100 numbers, no GPU needed): an A/B check that a refactor
left the generated programs alone. Run it from the root of each tree and diff the outputs:

    python bench/render_hashes.py > /tmp/new.txt
    (cd OLD_TREE && python /path/to/bench/render_hashes.py > /tmp/old.txt); diff /tmp/old.txt /tmp/new.txt
"""
import hashlib
import os
import sys

import numpy as np

sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "bench")]  # the tree it is run from

import ember as em  # noqa: E402
import kernelbench as kb  # noqa: E402
import suite  # noqa: E402
from ember.codegen import cuda as cg  # noqa: E402
from ember.kernel.lower import lower  # noqa: E402


def digest(nodes) -> str:
    h, kernels = hashlib.sha256(), lower(nodes).kernels
    for k, _ in kernels:
        cfg = cg.default_config(k)
        h.update(repr(cfg).encode())
        h.update(cg.render_kernel(k, cfg)[0].encode())
    return f"{len(kernels)} {h.hexdigest()[:16]}"


def main():
    for case in suite.gpu_cases():
        y = case.build(em, np.random.default_rng(0))[0]
        ys = y if isinstance(y, (list, tuple)) else [y]
        print("suite", case.name, digest([t.node for t in ys]), flush=True)
    for prob in kb.discover("kernelbench"):
        try:
            _, _, graph = kb.problem_graph(prob["path"], precision="torch", device="cpu")
            print("kernelbench", prob["name"], digest([o.node for o in graph.outputs if hasattr(o, "node")]), flush=True)
        except Exception as e:  # noqa: BLE001 - a problem that does not import is listed, not fatal
            print("kernelbench", prob["name"], "ERROR", type(e).__name__, flush=True)


if __name__ == "__main__":
    main()
