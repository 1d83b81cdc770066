"""CI's NVRTC checks in fewer compiles: many generated kernels compiled as a few modules.

Each NVRTC call parses the prelude and starts ptxas again; for the op suite's ~1900 small kernels
that overhead was most of the test's time (a random 80: 12.1 s one module each, 7.3 s as modules of
20). Kernels are renamed apart (ek<i>_), joined GROUP to a module, and compiled in threads; a module
that fails is compiled again one kernel at a time, so a failure still names its own kernel (and two
kernels that only clash with each other, helpers defined twice, pass as they would alone).
"""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor

GROUP = 24
_ENTRY = re.compile(r"__global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(")


def _renamed(src: str, i: int) -> str:
    names = _ENTRY.findall(src)
    for n in names:
        src = re.sub(rf"\b{re.escape(n)}\b", f"ek{i}_{n}", src)
    return src


def compile_all(sources: dict, prelude: str, arch: str = "sm_90a") -> list:
    """[why] for each kernel source (keys; values: a label) that NVRTC rejects, prelude before it."""
    import cuda.core  # noqa: F401  (imported before the threads start)

    from ember.backends.cuda import compile_cuda
    items = list(dict.fromkeys(sources))
    groups = [items[i:i + GROUP] for i in range(0, len(items), GROUP)]

    def one(src):
        try:
            compile_cuda(prelude + "\n" + src, arch)
            return None
        except Exception as e:  # noqa: BLE001 - reported with the kernel's label
            return f"{sources[src]}: {str(e)[:500]}"

    def group(g):
        try:
            compile_cuda(prelude + "\n" + "\n".join(_renamed(s, i) for i, s in enumerate(g)), arch)
            return []
        except Exception:  # noqa: BLE001 - each member alone names the failure
            return [why for why in map(one, g) if why]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return [why for whys in pool.map(group, groups) for why in whys]


def compile_programs(programs: list, arch: str = "sm_90a") -> list:
    """[why] for each kernel NVRTC rejects among rendered programs [(source, label)]: their kernels
    (codegen/cuda.py split_program) compiled together by prelude."""
    from ember.codegen.cuda import split_program
    by_prelude: dict = {}
    for source, label in programs:
        prelude, kernels = split_program(source)
        for name, body in kernels.items():
            by_prelude.setdefault(prelude, {}).setdefault(body, f"{label} {name}")
    return [why for prelude, srcs in by_prelude.items() for why in compile_all(srcs, prelude, arch)]
