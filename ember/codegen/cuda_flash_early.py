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
it, the L2 prefetch before it (knob `kv_prefetch`, `prefetch_keys_before_wait`), the gather's
mbarrier initialised before it, the early keys; and the K / V operands' layout (`key_strides`,
`contiguous_rows`) those copies rely on.
"""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel import ir
from ..kernel.online import KEY, OnlineForm, key_floor
from .cuda_pdl import wait_line


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


def contiguous_rows(v: ir.Val, fast: str, width: int) -> bool:
    """Whether operand `v` (over KEY and `fast`) stores its key rows back to back: consecutive along
    `fast`, `width` elements from one key to the next."""
    return key_strides(v, fast) == (width, 1)


def _row_spans(f: OnlineForm, qv: list) -> list:
    """[(operand, column var, row width)] of K and V whose key rows lie back to back at indices that
    depend on neither a load nor the query rows `qv` (not declared before the wait): the spans an L2
    prefetch can ask for from the block's indices and the host's dims alone."""
    rowwise = {v for v, _ in qv}
    return [(v, fast, width) for v, fast, width in ((f.k, f.depth_var, f.depth.value), (f.v, f.out_var, f.out_extent.value))
            if not isinstance(v.args[1], ir.Val) and not (sm.free_vars(v.args[1]) & rowwise)
            and contiguous_rows(v, fast, width)]


def prefetch_keys_before_wait(w, f: OnlineForm, qv: list, part: str, parts: int, BN: int) -> None:
    """Knob `kv_prefetch` (1: the block's whole span; n > 1: its first n bytes of K and of V): while
    this kernel waits for the one before it (programmatic dependent
    launch, codegen/cuda_pdl.py), each block asks L2 for the K and V rows its split will read, so
    the cache streams from HBM across the launch gap and the kernel before's tail. The rows are
    the split's from key 0 (exact when no mask floors the keys; a hint otherwise); only the host's
    dims and the block's indices are read before `EM_PDL_WAIT()`. An L2 prefetch is safe even of a
    row an earlier kernel is still writing: L2 is where writes land, so later loads see them."""
    I, e = w.IDX, w.emit
    spans = _row_spans(f, qv)
    e(1, "{  /* this block's K / V rows into L2 before the wait */")
    e(2, f"const {I} pc_ = (kend_ + {parts * BN - 1}) / {parts * BN} * {BN};")
    e(2, f"const {I} p0_ = {part} * pc_, p1_ = (p0_ + pc_ < kend_ ? p0_ + pc_ : kend_);")
    e(2, "if (p1_ > p0_) {")
    cap = int(w.cfg.get("kv_prefetch", 1))  # (1: the whole span; more: at most that many bytes of each)
    for v, fast, width in spans:
        at = w.idx(sm.substitute(v.args[1], {KEY: sm.var("p0_", 0, None), fast: 0}))
        n = f"(unsigned long long)(p1_ - p0_) * {width * v.dtype.itemsize}ull"
        e(3, f"em_prefetch_l2_span({v.args[0]} + ({at}), {n if cap <= 1 else f'({n} < {cap}ull ? {n} : {cap}ull)'});")
    e(2, "}")
    e(1, "}")
    e(1, wait_line(w.cfg, trigger_here=int(w.cfg.get("pdl_late", 0) or 0) not in (2, 3)))


def key_strides(v: ir.Val, fast: str) -> tuple[int, int] | None:
    """(elements from one key to the next, from one column to the next) of operand `v` when its
    index is affine in both with constant strides (the other variables fixed), else None."""
    x, y = sm.var("x_", 0, None), sm.var("y_", 0, None)
    at = lambda a, b: sm.substitute(v.args[1], {KEY: a, fast: b})  # noqa: E731
    step, along = at(x + 1, y) - at(x, y), at(x, y + 1) - at(x, y)
    second = at(x + 2, y + 3) - at(x, y)  # (affine: no product of the two, nothing nonlinear)
    if not (step.is_const and along.is_const and second.is_const) or second.value != 2 * step.value + 3 * along.value:
        return None
    return int(step.value), int(along.value)


def emit_l2_ahead(w, f: OnlineForm, qv: list, first: str, ahead: int) -> None:
    """Knob `l2_ahead` (bytes, with `early_keys`): after the ring's first tiles, before the wait, the
    next `ahead` bytes of the block's K and V rows (from key `first`, to k1_) asked of L2 — the cache
    keeps HBM busy across the kernel before's combine and the launch gap, past what the ring holds.
    A hint: safe whoever writes those rows. Measured slower at every size (gpu-session32-2026-11-27/o/:
    B 1 x 8K D 128 77.7% -> 72.0-61.8 at 32-256 KB), like `kv_prefetch`: off."""
    I, e = w.IDX, w.emit
    spans = _row_spans(f, qv)
    e(1, "{  /* the block's next K / V rows into L2 before the wait */")
    e(2, f"const {I} a0_ = {first};")
    e(2, "if (a0_ < k1_) {")
    for v, fast, width in spans:
        at = w.idx(sm.substitute(v.args[1], {KEY: sm.var("a0_", 0, None), fast: 0}))
        n = f"(unsigned long long)(k1_ - a0_) * {width * v.dtype.itemsize}ull"
        e(3, f"em_prefetch_l2_span({v.args[0]} + ({at}), ({n} < {int(ahead)}ull ? {n} : {int(ahead)}ull));")
    e(2, "}")
    e(1, "}")
