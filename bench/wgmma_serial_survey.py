"""Which wgmma kernels ptxas serialises (CPU only): every tensor-core kernel of the project's KernelBench problems
(or the real KernelBench's, `--problems third_party/KernelBench --only NAME`), lowered for the H100 at PyTorch's
precision, rendered under its default config (and with `--space`, every config the search would try), compiled by
NVRTC with ptxas -v; prints the kernels whose report says "wgmma.mma_async instructions are serialized" (ptxas
could not prove a wgmma's registers safe to overlap: the consumers then wait for each product before the next).

    python bench/wgmma_serial_survey.py [--levels 1,2,3] [--only 04_] [--space] [--problems kernelbench]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys

ROOT = __file__.rsplit("/bench/", 1)[0]
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", default=os.path.join(ROOT, "kernelbench"))
    ap.add_argument("--levels", default="1,2,3")
    ap.add_argument("--only", default=None)
    ap.add_argument("--space", action="store_true", help="every config of the search's space too")
    a = ap.parse_args()
    import kernelbench as kb

    from ember.backends.cuda_compile import ptxas_report, wgmma_serialized
    from ember.backends.target import get_target
    from ember.codegen import cuda as cg
    from ember.codegen.cuda_wgmma_space import wgmma_configs
    from ember.kernel.lower import lower
    t = get_target("h100")
    paths = sorted(p for lv in a.levels.split(",") for p in glob.glob(os.path.join(a.problems, f"level{lv}", "*.py")))
    if a.only:
        paths = [p for p in paths if any(o in os.path.basename(p) for o in a.only.split(","))]
    seen, bad, n = set(), [], 0
    for p in paths:
        try:
            _, _, graph = kb.problem_graph(p, precision="torch", device="cpu")
            low = lower([o.node if hasattr(o, "node") else o for o in graph.outputs], target=t)
        except Exception as e:  # noqa: BLE001 - a problem that does not lower is reported, the survey goes on
            print(f"{os.path.basename(p)}: not lowered ({type(e).__name__})")
            continue
        for k, _ in low.kernels:
            d = cg.default_config(k, t)
            cfgs = [d] if d.get("mode") == "wgmma" else []
            if a.space and cg.contraction_of(cg.canonical(k)) is not None:
                cfgs += wgmma_configs(cg.canonical(k), "full", t)
            for cfg in cfgs:
                try:
                    src = cg.render_kernel(k, cfg, target=t)[0]
                except Exception:  # noqa: BLE001 - a config the renderer refuses is not compiled
                    continue
                if (src, k.name) in seen:
                    continue
                seen.add((src, k.name))
                n += 1
                if wgmma_serialized(ptxas_report(cg.PRELUDE + "\n" + src)):
                    bad.append((os.path.basename(p), k.name, cfg))
                    print(f"SERIALIZED {os.path.basename(p)} {k.name} {json.dumps(cfg, sort_keys=True)}", flush=True)
    print(f"{n} wgmma kernels compiled, {len(bad)} serialized")


if __name__ == "__main__":
    main()
