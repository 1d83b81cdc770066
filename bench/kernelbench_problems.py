"""The KernelBench runner's problems (bench/kernelbench.py): finding them under a directory, loading one
as a fresh module with its sizes scaled, shrunk or set, and drawing a seeded sample per level."""
from __future__ import annotations

import importlib.util
import os
import re

def discover(path: str, level: int | None = None) -> list:
    """Problem files under path (or path itself), sorted, each with its level (from a `levelN`
    folder in its path, else 0)."""
    if os.path.isfile(path):
        files = [path]
    else:
        files = []
        for root, dirs, names in os.walk(path):
            dirs.sort()
            files += [os.path.join(root, n) for n in sorted(names)
                      if n.endswith(".py") and not n.startswith("_")]
    out = []
    for f in files:
        m = re.search(r"level[_-]?(\d+)", os.path.relpath(f, path if os.path.isdir(path) else os.path.dirname(f)))
        lv = int(m.group(1)) if m else 0
        if level is None or lv == level:
            out.append({"path": f, "level": lv, "name": os.path.splitext(os.path.basename(f))[0]})
    return out


SHRINK_FROM = 64  # --shrink divides the problem's integer constants from this size up (kernel sizes stay)


def load(path: str, scale: float, overrides: dict | None = None, shrink: float = 1.0):
    """Import a problem file as a fresh module; apply --scale to its SCALABLE sizes, --shrink to every
    integer constant it defines from SHRINK_FROM up (a GPU-sized suite made CPU-sized without
    per-problem lists: batch, channels, widths and lengths shrink, kernel sizes and strides stay), and
    --set's overrides to the size constants it defines (a recurrent problem at fewer steps)."""
    name = "kb_" + re.sub(r"\W", "_", os.path.abspath(path))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for need in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(mod, need):
            raise ValueError(f"{path} defines no {need}")
    sizes = {}
    if scale != 1.0:
        scalable = getattr(mod, "SCALABLE", {"batch_size": 1})
        for k, lo in dict(scalable).items():
            if isinstance(getattr(mod, k, None), int):
                v = max(int(lo), int(round(getattr(mod, k) * scale)))
                setattr(mod, k, v)
                sizes[k] = v
    if shrink != 1.0:
        def shrunk(v: int) -> int:
            return max(8, int(round(v / shrink))) if v >= SHRINK_FROM else v
        for k, v in list(vars(mod).items()):
            if k.startswith("_") or k in sizes:
                continue
            if type(v) is int and v >= SHRINK_FROM:
                sizes[k] = shrunk(v)
            elif type(v) in (tuple, list) and v and all(type(e) is int for e in v) and max(v) >= SHRINK_FROM:
                sizes[k] = type(v)(shrunk(e) for e in v)  # an input_shape, a list of layer widths
            else:
                continue
            setattr(mod, k, sizes[k])
    for k, v in (overrides or {}).items():
        if isinstance(getattr(mod, k, None), int):
            setattr(mod, k, v)
            sizes[k] = v
    return mod, sizes


def sample_problems(probs: list, n: int, seed: int) -> list:
    """n problems per level drawn without replacement by a seeded generator, in file order."""
    import random
    rng = random.Random(seed)
    out = []
    for lv in sorted({q["level"] for q in probs}):
        group = [q for q in probs if q["level"] == lv]
        out += rng.sample(group, min(n, len(group)))
    return sorted(out, key=lambda q: (q["level"], q["name"]))
