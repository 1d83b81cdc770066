"""The default plan of every contraction kernel of a KernelBench tree for the H100 preset (no GPU
needed): its mode and its wgmma feeds (tma, tma-mn, gather-vec, gather-scalar) per problem, at
torch's precision — the contractions still in `mma` or gathering a float at a time stand out.

    python bench/plan_audit.py kernelbench [substring of the problem path]
    python bench/plan_audit.py third_party/KernelBench/level1 conv

Problems are built at full size on the CPU (their inputs too): choose a subset for large levels.
"""
from __future__ import annotations

import sys

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

from kernelbench_problems import discover, load  # noqa: E402

from ember.backends.target import get_target  # noqa: E402
from ember.codegen import cuda as cg  # noqa: E402
from ember.frontends.importer import export, import_graph  # noqa: E402
from ember.kernel.lower import lower  # noqa: E402


def _feed(f) -> str:
    kind = type(f).__name__
    if kind == "TmaOperand":
        return "tma" if f.kmajor else "tma-mn"
    if kind == "GatherOperand":
        return "gather-vec" if f.vector is not None else "gather-scalar"
    return kind


def plans(path: str, target) -> tuple:
    """(kernel count, [(default mode, plan)] of the problem's contraction kernels)."""
    import torch
    mod = load(path, 1.0)[0]
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs()).eval()
    ig = import_graph(export(model, tuple(mod.get_inputs())), precision="torch")
    ks = lower([t.node for t in ig.outputs if hasattr(t, "node")], target=target).kernels
    rows = []
    for k, _ in ks:
        c = cg.canonical(k)
        if cg.contraction_of(c) is None:
            continue
        plan = cg.wgmma_applicable(c)
        rows.append((cg.default_config(k, target).get("mode"),
                     plan if isinstance(plan, str) else (plan[0], *(_feed(f) for f in plan[1:]))))
    return len(ks), rows


def main():
    root, pattern = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    target = get_target("h100")
    for p in discover(root):
        if pattern not in p["path"]:
            continue
        try:
            n, rows = plans(p["path"], target)
            if rows:
                print(p["name"], n, rows, flush=True)
        except Exception as e:  # noqa: BLE001 - a problem that fails to import or lower is listed
            print(p["name"], "error", type(e).__name__, str(e)[:100], flush=True)


if __name__ == "__main__":
    main()
