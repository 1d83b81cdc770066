"""Which project KernelBench problems an environment flag changes, CPU only: each problem lowered for the
H100 at PyTorch's precision (device "cpu" tensors, as the frontend traces them), its kernels' names and
default CUDA configs, once without the flags and once per flag (a child process each: many flags are
read when their module is imported). Prints the problems whose kernels or configs differ, so a device
script times only those.

    python bench/flag_survey.py EMBER_WGMMA_TF32_STAGE=1 [EMBER_X=0 ...] [--levels 1,2,3] [--only 35_]
        [--problems third_party/KernelBench]  (the real KernelBench; the project's kernelbench/ by default)

The real KernelBench's problems allocate their inputs and weights as CPU tensors: a whole level of it in
one process is killed for memory on a 24 GB machine; pass a name filter (`--levels 1 --only conv`).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys

ROOT = __file__.rsplit("/bench/", 1)[0]


def _plans(paths: list) -> dict:
    """{problem: [kernel name + its default config]} in this process's environment."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import kernelbench as kb

    from ember.backends.target import get_target
    from ember.codegen import cuda as cg
    from ember.kernel.lower import lower
    t = get_target("h100")
    out = {}
    for p in paths:
        try:
            _, _, graph = kb.problem_graph(p, precision="torch", device="cpu")
            low = lower([o.node if hasattr(o, "node") else o for o in graph.outputs], target=t)
            out[os.path.basename(p)] = [f"{k.name} {json.dumps(cg.default_config(k, t), sort_keys=True)}" for k, _ in low.kernels]
        except Exception as e:  # noqa: BLE001 - a problem that does not lower is reported as such
            out[os.path.basename(p)] = [f"error {type(e).__name__}: {str(e)[:120]}"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("flags", nargs="*", help="NAME=VALUE settings, each surveyed alone against none")
    ap.add_argument("--levels", default="1,2,3")
    ap.add_argument("--only", default=None, help="comma-separated substrings of problem file names")
    ap.add_argument("--problems", default="kernelbench", help="the folder holding level1/ level2/ level3/")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    paths = sorted(p for lv in args.levels.split(",") for p in glob.glob(os.path.join(ROOT, args.problems, f"level{lv}/*.py")))
    if args.only:
        paths = [p for p in paths if any(o in os.path.basename(p) for o in args.only.split(","))]
    if args.child:
        json.dump(_plans(paths), open(args.child, "w"))
        return
    runs = {}
    for flag in [None] + args.flags:
        env = dict(os.environ)
        if flag:
            name, _, value = flag.partition("=")
            env[name] = value
        dump = f"/tmp/flag_survey_{os.getpid()}_{len(runs)}.json"
        subprocess.run([sys.executable, __file__, "--levels", args.levels, "--problems", args.problems,
                        *(["--only", args.only] if args.only else []),
                        "--child", dump], env=env, check=True, stderr=subprocess.DEVNULL)
        runs[flag] = json.load(open(dump))
        os.remove(dump)
    base = runs.pop(None)
    for name in base:
        changed = [f"{flag}({len(base[name])}->{len(r[name])} kernels)" for flag, r in runs.items() if r[name] != base[name]]
        if changed:
            print(name, changed, flush=True)
            for flag, r in runs.items():
                for line in sorted(set(r[name]) - set(base[name]))[:4]:
                    print(f"   {flag}: {line[:160]}")


if __name__ == "__main__":
    main()
