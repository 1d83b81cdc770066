"""Compiled programs kept on disk under the structural hash of what was compiled, so that compiling
the same graph again in a new process skips lowering and rendering (the LLM runtime's prefill and
decode programs: 7.6 + 3.2 s from NVRTC's cache alone on the H100, bench/results/llm-2026-11-25c.json).

Opt in with `em.compile(..., cache=True)`: a cached program is what the same Ember source made for
the same graph, but not what a test that patches the lowering or the renderer would get, so the
default stays off. The key hashes every output's structural node key (constants by content),
the output names and packing, the state writes and dim bounds, the target's identity, the text
of every Ember source file (any change to the compiler is a new key) and the EMBER_* environment
variables in force (they switch the compiler's defaults: an A/B across processes under one cache
directory was served the first side's program, `ember_env`). An entry holds the program
without its constant arrays: an array that is one of the graph's own constants is named by its
content hash and taken from the graph on load; a folded constant (made by the lowering) is stored."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import zipfile

from .. import cache
from .. import graph as g
from .program import Program


@functools.lru_cache(maxsize=1)
def source_stamp() -> str:
    """sha256 over the text of every Ember source file (read once per process)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for d, subdirs, files in os.walk(root):
        subdirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                p = os.path.join(d, f)
                h.update(os.path.relpath(p, root).encode())
                with open(p, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()


# (where the cache lives, not what the compiler makes)
_ENV_NOT_KEYED = ("EMBER_CACHE_DIR",)


def ember_env() -> list:
    """The EMBER_* environment variables that are set, as sorted (name, value) pairs (all but _ENV_NOT_KEYED: a
    variable that does not change the program only costs a recompile)."""
    return sorted((k, v) for k, v in os.environ.items() if k.startswith("EMBER_") and k not in _ENV_NOT_KEYED)


def program_key(nodes: list, names, kind: str, writes: list, updated: list, bounds: dict, target,
                megakernel=False) -> str:
    ident = target.identity_of(target) if getattr(target, "identity_of", None) else ""
    parts = {"megakernel": megakernel, "nodes": [n.key for n in nodes], "names": names, "kind": kind, "writes": writes,
             "updated": [n.key for n in updated], "bounds": bounds, "stamp": source_stamp(), "env": ember_env(),
             "target": [target.kind, target.preset, target.arch, target.sm_count, ident,
                        bool(getattr(target, "fold_norms", False))]}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:40]


def _path(key: str) -> str:
    return os.path.join(cache.cache_dir("programs"), key + ".zip")


def _graph_constants(nodes: list) -> dict:
    """{content hash: array} of the graph's constants."""
    return {n.arg.sha: n.arg.array for n in g.toposort(nodes) if n.op == g.DATA}


def store(key: str, prog: Program, nodes: list) -> None:
    own = {id(a): sha for sha, a in _graph_constants(nodes).items()}
    refs, inline = {}, {}
    for name, arr in prog.data.items():
        if id(arr) in own:
            refs[name] = own[id(arr)]
        else:
            inline[name] = arr
    skeleton = Program(prog.device, prog.source, prog.launches, prog.buffers, prog.outputs, prog.inputs, prog.dims,
                       inline, prog.output_names, prog.output_kind, dict(prog.meta, data_refs=refs), None)
    cache.store(_path(key), skeleton.to_bytes())


def load(key: str, nodes: list, target) -> Program | None:
    payload = cache.load(_path(key))
    if payload is None:
        return None
    try:
        p = Program.from_bytes(payload, target, data_optional=True)
    except (KeyError, ValueError, zipfile.BadZipFile, json.JSONDecodeError):
        cache.discard(_path(key), "not a readable program")
        return None
    refs = p.meta.get("data_refs", {})
    consts = _graph_constants(nodes)
    if any(sha not in consts for sha in refs.values()):
        return None
    for name, sha in refs.items():
        p.data[name] = consts[sha]
    p.meta.pop("data_refs", None)
    missing = [n for n, b in p.buffers.items() if b.kind == "data" and n not in p.data]
    if missing:
        return None
    return p
