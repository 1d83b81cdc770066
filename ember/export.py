"""`ember export`: a compiled program as one directory that loads in a fresh process without the
graph, the search, torch or (where its kernels were built for this machine) a compiler.

    OUT/manifest.json        format, version, Ember version, target, hashes of everything below
    OUT/program.json         the launch plan: kernels' launches and configs, buffers, inputs, dims
    OUT/source.txt           the generated C or CUDA source
    OUT/weights.safetensors  the program's constant arrays
    OUT/kernels/             CUDA: one cubin per kernel for the target's arch; CPU: the shared
                             library with the compiler and CPU it was built by

`load(OUT, device=None)` checks the manifest (a newer format, a file whose sha256 differs from the
manifest's, or a device of another kind than the target is one `ExportError` line) and returns the
Program; its executor uses the exported kernels (a CPU library only on the CPU and compiler that
built it: otherwise the source is compiled again)."""
from __future__ import annotations

import hashlib
import json
import os
import time

import numpy as np

from .runtime.program import Program

FORMAT, VERSION = "ember-export", 1


class ExportError(ValueError):
    """An export that cannot be loaded (the message names the file or field)."""


def _sha(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def export(prog: Program, out: str) -> str:
    """Write `prog` (compiled for any target; kernels are built here, NVRTC needs no GPU) to `out`."""
    from safetensors.numpy import save_file

    import ember
    target = prog.target
    if target is None:
        raise ExportError("the program has no target to build its kernels for")
    os.makedirs(os.path.join(out, "kernels"), exist_ok=True)
    meta = prog.to_plan()
    meta.pop("source")  # (its own file)
    with open(os.path.join(out, "program.json"), "w") as f:
        json.dump(meta, f)
    with open(os.path.join(out, "source.txt"), "w") as f:
        f.write(prog.source)
    weights = {n: np.ascontiguousarray(a) for n, a in prog.data.items()}
    save_file(weights, os.path.join(out, "weights.safetensors"))
    kernels = {}
    if target.kind == "cuda":
        from .backends.cuda import compile_kernels
        for name, cubin in compile_kernels(prog.source, target.arch).items():
            fn = f"{name or 'program'}.{target.arch}.cubin"
            with open(os.path.join(out, "kernels", fn), "wb") as f:
                f.write(cubin)
            kernels[fn] = {"kernel": name, "arch": target.arch}
    elif target.kind == "cpu":
        from .backends.cpu import built_library
        lib = built_library(prog.source)
        with open(os.path.join(out, "kernels", "program.so"), "wb") as f:
            f.write(lib["so"])
        kernels["program.so"] = {"identity": lib["identity"], "flags": lib["flags"]}
    files = ["program.json", "source.txt", "weights.safetensors"] + [f"kernels/{k}" for k in kernels]
    manifest = {"format": FORMAT, "version": VERSION, "ember": ember.__version__, "created": time.strftime("%Y-%m-%d"),
                "target": {"kind": target.kind, "preset": target.preset, "arch": target.arch},
                "kernels": kernels, "sha256": {fn: _sha(os.path.join(out, fn)) for fn in files}}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return out


def load(path: str, device=None) -> Program:
    from safetensors.numpy import load_file
    mf = os.path.join(path, "manifest.json")
    if not os.path.isfile(mf):
        raise ExportError(f"{path}: no manifest.json (not an Ember export)")
    try:
        manifest = json.loads(open(mf).read())
    except json.JSONDecodeError:
        raise ExportError(f"{mf}: not valid JSON") from None
    if manifest.get("format") != FORMAT:
        raise ExportError(f"{mf}: format {manifest.get('format')!r} is not {FORMAT!r}")
    if not isinstance(manifest.get("version"), int) or manifest["version"] > VERSION:
        raise ExportError(f"{mf}: format version {manifest.get('version')} is newer than this Ember reads ({VERSION})")
    for fn, want in manifest.get("sha256", {}).items():
        p = os.path.join(path, fn)
        if not os.path.isfile(p):
            raise ExportError(f"{path}: {fn} is missing")
        if _sha(p) != want:
            raise ExportError(f"{path}: {fn} does not match its sha256 in manifest.json (modified or damaged)")
    kind = manifest["target"]["kind"]
    from .backends.target import get_target
    target = get_target(device if device is not None else kind)
    if target.kind != kind:
        raise ExportError(f"{path}: exported for a {kind} target, asked to load on {target.kind}")
    meta = json.loads(open(os.path.join(path, "program.json")).read())
    with open(os.path.join(path, "source.txt")) as f:
        meta["source"] = f.read()
    weights = load_file(os.path.join(path, "weights.safetensors"))
    missing = [b["name"] for b in meta["buffers"] if b["kind"] == "data" and b["name"] not in weights]
    if missing:
        raise ExportError(f"{path}: weights.safetensors has no tensor {missing[0]!r}")
    prog = Program.from_plan(meta, target, weights, load_now=False)
    prebuilt: dict = {}
    for fn, info in manifest.get("kernels", {}).items():
        with open(os.path.join(path, "kernels", fn), "rb") as f:
            raw = f.read()
        if kind == "cuda":
            prebuilt.setdefault(info["arch"], {})[info["kernel"]] = raw
        else:
            prebuilt["cpu"] = {"so": raw, "identity": info["identity"], "flags": info["flags"]}
    prog.prebuilt = prebuilt
    if target.runnable:
        prog.executor  # noqa: B018 - load the kernels now: errors surface here
    return prog
