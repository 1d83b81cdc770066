"""Decode attention's first key tiles loaded before its grid-dependency wait (knob `early_keys`).

Traced on the H100 (bench/decode_trace.py, bench/results/gpu-session32-2026-11-27/a/): at 8K keys,
batch 1, head dim 128 a layer is ~15.5 us, of which the key loop is 10.2 (the cache streams at the
copy rate) and ~1.8 us pass between the grid-dependency wait and q in shared memory — the first
loads' latency, paid after the kernel before has completed, with HBM idle.

With `early_keys` each warp asks for its first S - 1 key tiles (`cp.async` into its ring) *before*
`EM_PDL_WAIT()`, then loads q after it. That is only safe where nothing still running writes the
cache: the kernel before must trigger its successor late (cfg `pdl_late`, codegen/cuda_pdl.py), so
every kernel before *it* has completed when this one's blocks start, and must itself write neither
K nor V. The CUDA Target's program pass (backends/cuda_target.py `_with_early_keys`) checks both by
buffer name over the launch order and sets the two knobs together; the renderer alone cannot know.

Also here: which decode schedules place the wait themselves (`owns_wait`): the trace's stamps around
it, the L2 prefetch before it, the gather's mbarrier initialised before it, the early keys.
"""
from __future__ import annotations

from ..kernel import ir
from ..kernel.online import OnlineForm, key_floor


def owns_wait(cfg: dict) -> bool:
    """Whether decode attention under `cfg` emits its grid-dependency wait itself (codegen/cuda.py
    then emits only the trigger, or nothing under `pdl_late`)."""
    return bool(cfg.get("kv_prefetch") or cfg.get("trace") or cfg.get("gather") or cfg.get("early_keys")
                or int(cfg.get("pdl_late", 0) or 0) in (2, 3))


def early_keys_applicable(f: OnlineForm, cfg: dict) -> bool:
    """Whether the first key tiles can be asked for before the wait: their rows computed from the
    block's indices and the host's dims alone (no mask floor read from memory, no gathered cache
    rows), plain `cp.async` copies (not the bulk / tensor-map rings), no L2 prefetch there already."""
    if cfg.get("bulk") or cfg.get("tma") or cfg.get("kv_prefetch"):
        return False
    if key_floor(f) is not None:
        return False
    return all(not isinstance(v.args[1], ir.Val) for v in (f.k, f.v))
