"""The packed GEMM form of the C renderer (cfg ``{"form": "packed", mr, nr, mc, kc, nc}``).

A BLIS-style nest over a contraction recognised by `kernel.structure.contraction_of`
(out[batch, m, n] = epilogue(sum_k a[batch, m, k] * b[batch, n, k])):

    omp parallel: split the batch, else C along the dim with more tiles, in whole MR x NR tiles
      for batch: for jc (NC): for pc (KC):
        pack b[jc:+nc, pc:+kc] -> NR-wide micro-panels, k-major, zero-padded
        for ic (MC):
          pack a[ic:+mc, pc:+kc] -> MR-tall micro-panels, k-major, zero-padded
          for jr (NR): for ir (MR):
            micro-kernel: MR x NR/16 vector accumulators (gcc vector extensions: one zmm each with
            AVX-512, split by gcc on narrower machines), k loop unrolled 4; the tile is added to the
            partial sums of earlier k blocks (a per-thread scratch when K > KC) and stored to them
            on the last k block, the kernel's store expression runs over it per output element

The packing loops read the operands through the kernel's own value DAGs (any layout, transposition,
stride, alignment, prologue); the epilogue is the kernel's store, so bias, activations, scales and
casts are whatever the IR has after the reduction. Measured on a 2-core Zen 4 (docs: the probe in
shared/research/cpu-gemm-probe.md; `bench/cpu_gemm.py`).
"""
from __future__ import annotations

import dataclasses

from .. import dtypes as dt
from .. import symbolic as sm
from ..symbolic.assume import conjuncts as sm_atoms
from .cuda_mma import FLAT_K, flat_k

VEC = 16  # float lanes per vector register of the micro-kernel
KB = 16  # k block of the packing loops of an operand stored k-fastest (a Linear's weight)
DEFAULT = {"form": "packed", "mr": 8, "nr": 32, "mc": 192, "kc": 384, "nc": 2048}
# the bfloat16 micro-kernel's: 12 x 32 (24 accumulators) and k blocks of 768 (the same bytes as 384
# float32s) measured best on the 2-core Zen 4: 1024^3 270 -> 321 GFLOP/s, 512x2048x8192 359 -> 377
# (torch's oneDNN bf16: 410 / 403; the float32-panel kernel: 192 / 204)
BF16_DEFAULT = dict(DEFAULT, bf16=True, mr=12, kc=768)

# The float32 micro-tile for a static shape: each candidate costs its padded work (whole MR x NR
# tiles) at its rate, in GFLOP/s of padded multiply-adds measured on ResNet-18's convolutions on the
# 2-core Zen 4 (`bench/cpu_tiles.py`: 8x32 172-178 over N = 3136 ... 49; C transposed 14x32 176-191,
# 10x32 168-185, 7x32 166-172). The default keeps unless another saves 10% (the rates are close; the
# padding decides: 196 outputs take 14-row tiles instead of 7 x 32 columns, 49 take 10-row tiles
# instead of 2 x 32). C computed transposed (`swap`) stores each tile column-strided, so it is a
# candidate only while the output fits well inside L2 (a 56x56x64 conv's 800 KB output ran at
# 126 against 172 GFLOP/s transposed).
TILE_CHOICES = (({}, 175.0), ({"swap": True, "mr": 7}, 170.0), ({"swap": True, "mr": 10}, 178.0),
                ({"swap": True, "mr": 14}, 185.0))
TILE_SWITCH_GAIN = 0.9
SWAP_MAX_OUT_BYTES = 256 << 10


def choose_tiles(B: int, M: int, N: int) -> dict:
    """The float32 packed config for batch B of an M x N output (static sizes)."""
    def cost(opt: dict, rate: float) -> float:
        cfg = dict(DEFAULT, **opt)
        rows, cols = (N, M) if cfg.get("swap") else (M, N)
        return B * -(-rows // cfg["mr"]) * cfg["mr"] * -(-cols // cfg["nr"]) * cfg["nr"] / rate
    base = cost(*TILE_CHOICES[0])
    best, best_t = {}, base
    for opt, rate in TILE_CHOICES[1:]:
        if opt.get("swap") and B * M * N * 4 > SWAP_MAX_OUT_BYTES:
            continue
        t = cost(opt, rate)
        if t < TILE_SWITCH_GAIN * base and t < best_t:
            best, best_t = opt, t
    return dict(DEFAULT, **best)


def supports(g) -> bool:
    """Float32 accumulation of a product of floats (operands of any float dtype, read into float32
    panels; a float16/bfloat16 product is then exact in float32 instead of rounded first, as on
    the tensor cores)."""
    if g is None or g.stage.acc.dtype != dt.float32:
        return False
    v = g.stage.update.value
    while v.op == "cast":
        if v.dtype != dt.float32:
            return False
        v = v.args[0]
    return v.op == "mul" and v.dtype in (dt.float32, dt.float16, dt.bfloat16)


def half_product(g) -> bool:
    """Whether the product's operands are float16 / bfloat16."""
    v = g.stage.update.value
    while v.op == "cast":
        v = v.args[0]
    return v.dtype in (dt.float16, dt.bfloat16)


def _cfg(cfg: dict) -> tuple:
    mr, nr = int(cfg.get("mr", 8)), int(cfg.get("nr", 32))
    assert nr % VEC == 0 and mr >= 1, cfg
    mc = max(mr, int(cfg.get("mc", 192)) // mr * mr)
    nc = max(nr, int(cfg.get("nc", 2048)) // nr * nr)
    return mr, nr, mc, int(cfg.get("kc", 384)), nc


def bf16_product(g) -> bool:
    """Whether the product's operands are bfloat16 (AVX-512 BF16 can multiply them in pairs)."""
    v = g.stage.update.value
    while v.op == "cast":
        v = v.args[0]
    return v.dtype == dt.bfloat16


def helpers(name: str, cfg: dict) -> str:
    """The micro-kernel and the per-thread buffer allocator of kernel `name` (before its function)."""
    mr, nr, _, _, _ = _cfg(cfg)
    nv = nr // VEC
    if cfg.get("bf16"):
        return _helpers_bf16(name, mr, nr)
    L = ["#include <stdio.h>", "#include <stdlib.h>", "#include <omp.h>",
         f"typedef float em_v{VEC} __attribute__((vector_size({4 * VEC})));"] + _allocator(name) + [
         f"static inline __attribute__((always_inline)) void {name}_uk(long long kc, const float* restrict Ap, "
         "const float* restrict Bp, float* restrict T, int acc) {"]
    for i in range(mr):
        L.append("  " + " ".join(f"em_v{VEC} c{i}_{v} = {{0}};" for v in range(nv)))
    L += ["  #pragma GCC unroll 4", "  for (long long k = 0; k < kc; k++) {"]
    for v in range(nv):
        L.append(f"    const em_v{VEC} b{v} = *(const em_v{VEC}*)(Bp + k * {nr} + {VEC * v});")
    for i in range(mr):
        L.append(f"    {{ const float a = Ap[k * {mr} + {i}]; " + " ".join(f"c{i}_{v} += a * b{v};" for v in range(nv)) + " }")
    L.append("  }")
    for i in range(mr):
        for v in range(nv):
            p = f"*(em_v{VEC}*)(T + {i * nr + VEC * v})"
            L.append(f"  if (acc) c{i}_{v} += {p}; {p} = c{i}_{v};")
    L.append("}")
    return "\n".join(L)


def _allocator(name: str) -> list:
    # (no error channel out of a kernel: stop with a message rather than write through NULL)
    return [f"static float* {name}_buf(int which, size_t n) {{",
            "  static _Thread_local float* p[3]; static _Thread_local size_t cap[3];",
            "  if (cap[which] < n) {",
            "    free(p[which]); p[which] = (float*)aligned_alloc(64, (n * 4 + 63) / 64 * 64); cap[which] = n;",
            f'    if (!p[which]) {{ fprintf(stderr, "ember: {name}: cannot allocate %zu bytes of GEMM buffers\\n", n * 4); abort(); }}',
            "  }",
            "  return p[which];", "}"]


def _helpers_bf16(name: str, mr: int, nr: int) -> str:
    """The bfloat16 micro-kernel (cfg bf16, on CPUs with AVX-512 BF16): panels of bfloat16 pairs
    (k, k + 1) interleaved, `vdpbf16ps` multiplying a pair of A's row by 16 pairs of B's columns into
    float32 accumulators: twice the products per instruction of the float32 FMA kernel, and half
    the panel bytes. The pair's products are exact in float32; the instruction adds them with one
    rounding each and flushes denormals (bfloat16 inputs below 1e-38 count as zero)."""
    nv = nr // VEC
    L = ["#include <stdio.h>", "#include <stdlib.h>", "#include <omp.h>", "#include <immintrin.h>"] + _allocator(name)
    L.append(f"static inline __attribute__((always_inline)) void {name}_uk(long long kc, const unsigned short* restrict Ap, "
             "const unsigned short* restrict Bp, float* restrict T, int acc) {")
    for i in range(mr):
        L.append("  " + " ".join(f"__m512 c{i}_{v} = _mm512_setzero_ps();" for v in range(nv)))
    L += ["  const long long np = (kc + 1) / 2;", "  #pragma GCC unroll 2", "  for (long long p = 0; p < np; p++) {"]
    for v in range(nv):
        L.append(f"    const __m512bh b{v} = (__m512bh)_mm512_load_si512((const void*)(Bp + p * {2 * nr} + {2 * VEC * v}));")
    for i in range(mr):
        L.append(f"    {{ const __m512bh a = (__m512bh)_mm512_set1_epi32(*(const int*)(Ap + p * {2 * mr} + {2 * i})); "
                 + " ".join(f"c{i}_{v} = _mm512_dpbf16_ps(c{i}_{v}, a, b{v});" for v in range(nv)) + " }")
    L.append("  }")
    for i in range(mr):
        for v in range(nv):
            p = f"T + {i * nr + VEC * v}"
            L.append(f"  if (acc) c{i}_{v} = _mm512_add_ps(c{i}_{v}, _mm512_load_ps({p})); _mm512_store_ps({p}, c{i}_{v});")
    L.append("}")
    return "\n".join(L)


def _min(a: str, b: str) -> str:
    return f"({a} < {b} ? {a} : {b})"


def _pack(r, g, val, rows: list, k: list, k_fastest: bool, R: int, count: str, start: str, dst: str, ind: int,
          kcmax: int, half: bool = False) -> None:
    """dst[(i / R) * kc_ * R + kk * R + i % R] = val(row start + i, k pc_ + kk) for i < count, zero-padded
    to whole micro-panels of R rows. With `half` (the bfloat16 kernel) the panels hold bfloat16 pairs:
    dst[(i / R) * kcp_ * R + (kk / 2) * 2R + (i % R) * 2 + kk % 2], kcp_ = kc_ rounded up to even, the
    odd tail's pair half zero.

    The index arithmetic is kept out of the element loop: an operand that walks k contiguously (a
    Linear's or a conv's OIHW weight) reads through the flat k index itself where its index then has
    no division (`flat_k`: no split of k into (channel, ky, kx) per element); an operand whose rows
    are contiguous (a conv's input, the im2col side) has each panel's rows split once, before its k
    loop, into per-row arrays. Measured on the 2-core Zen 4: ResNet-18's 512-channel convs packed
    their 2.4M-element weight with three divisions per element."""
    e = r.emit
    flat = flat_k(g, val) if len(k) > 1 else None
    # k split into its variables once per k block (a table shared by every panel) where each row
    # walks k element by element and the flat index does not serve (a strided conv's input)
    ktab = k_fastest and flat is None and len(k) > 1
    if ktab:
        for v, _ in k:
            e(ind, f"long long kv_{v}[{kcmax}];")
        e(ind, "for (long long kk_ = 0; kk_ < kc_; kk_++) {")
        r.decompose("pc_ + kk_", k, ind + 1)
        for v, _ in k:
            e(ind + 1, f"kv_{v}[kk_] = {v};")
        e(ind, "}")
    e(ind, f"for (long long p_ = 0; p_ < {count}; p_ += {R}) {{")
    e(ind + 1, f"const long long w_ = {_min(str(R), f'{count} - p_')};")
    if half:
        e(ind + 1, f"unsigned short* restrict d_ = {dst} + p_ * kcp_;")
    else:
        e(ind + 1, f"float* restrict d_ = {dst} + p_ * kc_;")

    def at(kk: str, q: str) -> str:
        return f"d_[({kk} >> 1) * {2 * R} + ({q}) * 2 + ({kk} & 1)]" if half else f"d_[{kk} * {R} + {q}]"
    zero = "0" if half else "0.f"
    kend = "kcp_" if half else "kc_"

    def split_k(i2: int) -> None:
        if flat is not None:
            e(i2, f"const long long {FLAT_K} = pc_ + kk_;")
        elif ktab:
            for v, _ in k:
                e(i2, f"const long long {v} = kv_{v}[kk_];")
        else:
            r.decompose("pc_ + kk_", k, i2)

    def value(i2: int, v=None) -> None:
        v = v if v is not None else flat if flat is not None else val
        env = r.vr.vals([v], i2)
        x = f"(float)({env[v]})"
        e(i2, f"{at('kk_', 'q_')} = {'em_f2bf(' + x + ')' if half else x};")

    if k_fastest:  # each row walks k contiguously; k in blocks of KB so the panel's block stays in L1
        e(ind + 1, f"for (long long kb_ = 0; kb_ < kc_; kb_ += {KB}) {{")
        e(ind + 2, f"const long long ke_ = {_min(f'kb_ + {KB}', 'kc_')};")
        e(ind + 2, "for (long long q_ = 0; q_ < w_; q_++) {")
        r.decompose(f"{start} + p_ + q_", rows, ind + 3)
        e(ind + 3, "for (long long kk_ = kb_; kk_ < ke_; kk_++) {")
        split_k(ind + 4)
        value(ind + 4)
        e(ind + 3, "}")
        e(ind + 2, "}")
        e(ind + 1, "}")
        if half:  # an odd k block: the last pair's second half
            e(ind + 1, f"if (kc_ & 1) for (long long q_ = 0; q_ < w_; q_++) {at('kc_', 'q_')} = 0;")
        e(ind + 1, f"for (long long q_ = w_; q_ < {R}; q_++) for (long long kk_ = 0; kk_ < {kend}; kk_++) "
                   f"{at('kk_', 'q_')} = {zero};")
    else:  # the rows are contiguous: copy k-row by k-row, the panel's rows split once
        split_rows = len(rows) > 1
        if split_rows:
            for v, _ in rows:
                e(ind + 1, f"long long rv_{v}[{R}];")
            e(ind + 1, "for (long long q_ = 0; q_ < w_; q_++) {")
            r.decompose(f"{start} + p_ + q_", rows, ind + 2)
            for v, _ in rows:
                e(ind + 2, f"rv_{v}[q_] = {v};")
            e(ind + 1, "}")
        e(ind + 1, "for (long long kk_ = 0; kk_ < kc_; kk_++) {")
        split_k(ind + 2)
        last, ext = rows[-1]
        if split_rows and ext.is_const:
            # runs of the panel's rows within one innermost row (a conv's output row): the other row
            # variables fixed over the run and the innermost one stepping by 1, so the run's loads
            # are contiguous vectors instead of gathers (ResNet-18's 64-channel 3x3 conv: its
            # im2col packing took 0.6 of its 2.1 ms as gathers)
            e(ind + 2, "for (long long q0_ = 0; q0_ < w_; ) {")
            e(ind + 3, f"const long long n_ = {_min('w_ - q0_', f'{ext.value} - rv_{last}[q0_]')};")
            for v, _ in rows[:-1]:
                e(ind + 3, f"const long long {v} = rv_{v}[q0_];")
            e(ind + 3, f"const long long l0_ = rv_{last}[q0_] - q0_;")
            v = flat if flat is not None else val
            window = _guard_window(v, last, r.idx)
            if window is None:
                spans = [("q0_", "q0_ + n_", v)]
            else:  # the padding's guards hold on one span of the run: read it unguarded
                lo, hi = window  # (bounds folded one statement each: nested EM_MIN macros grow 2^n)
                e(ind + 3, "long long wl_ = -(1LL << 60), wh_ = 1LL << 60;")
                for b in lo:
                    e(ind + 3, f"wl_ = EM_MAX(wl_, {b});")
                for b in hi:
                    e(ind + 3, f"wh_ = EM_MIN(wh_, {b});")
                e(ind + 3, "const long long e_ = q0_ + n_, g0_ = EM_MIN(e_, EM_MAX(q0_, wl_ - l0_)), "
                           "g1_ = EM_MAX(g0_, EM_MIN(e_, wh_ - l0_));")
                spans = [("q0_", "g0_", v), ("g0_", "g1_", _unguarded(v)), ("g1_", "e_", v)]
            for a, b, sv in spans:
                e(ind + 3, "#pragma omp simd")
                e(ind + 3, f"for (long long q_ = {a}; q_ < {b}; q_++) {{")
                e(ind + 4, f"const long long {last} = l0_ + q_;")
                value(ind + 4, sv)
                e(ind + 3, "}")
            e(ind + 3, "q0_ += n_;")
            e(ind + 2, "}")
        else:
            e(ind + 2, "#pragma omp simd")
            e(ind + 2, "for (long long q_ = 0; q_ < w_; q_++) {")
            if split_rows:
                for v, _ in rows:
                    e(ind + 3, f"const long long {v} = rv_{v}[q_];")
            else:
                r.decompose(f"{start} + p_ + q_", rows, ind + 3)
            value(ind + 3)
            e(ind + 2, "}")
        e(ind + 2, f"for (long long q_ = w_; q_ < {R}; q_++) {at('kk_', 'q_')} = {zero};")
        e(ind + 1, "}")
        if half:  # an odd k block: the last pair's second half
            e(ind + 1, f"if (kc_ & 1) for (long long q_ = 0; q_ < {R}; q_++) {at('kc_', 'q_')} = 0;")
    e(ind, "}")


FLAT_N = "fn_"


def _through_flat_n(g, store, N):
    """(index, value) of the epilogue's store read through the flat column index FLAT_N, where
    that leaves no division in them: a conv's output `12544*o2 + 112*o3 + o4` is `12544*o2 + fn_`
    (the columns' split into (o3, o4) per element cost ResNet-18's stem ~0.2 of its 1.9 ms on the
    2-core Zen 4). (None, None) otherwise."""
    from ..kernel import ir
    if len(g.n) < 2:
        return None, None
    t = sm.index_var(FLAT_N, N)
    mapping, rest = {}, t
    for var, ext in reversed(g.n[1:]):
        mapping[var] = rest % ext
        rest = rest // ext
    mapping[g.n[0][0]] = rest
    index = sm.substitute(store.index, mapping)
    value = ir.substitute(store.value, mapping)
    exprs = [index] + [x.args[1] for x in _loads(value) if not isinstance(x.args[1], ir.Val)] + \
        [x.args[2] for x in _loads(value)] + [x.args[0] for x in ir.val_toposort([value]) if x.op == "index"]
    if any(_divides(x) for x in exprs):
        return None, None
    return index, value


def _divides(e) -> bool:
    """Whether expression e has a floor division or a modulus in it."""
    from ..symbolic.walk import children
    return e.op in ("div", "mod") or any(_divides(c) for c in children(e))


def _guard_window(val, var: str, render):
    """([lo], [hi]) as C expressions: the values of loop variable `var` for which every load guard
    of `val` holds (max(lo) <= var < min(hi)), the other variables fixed; None when some guard is not
    a conjunction of comparisons linear in `var` (or there is none). A conv's zero padding guards
    its input `0 < 2*o4 + r - 2 && ... < 227`: inside the window the loads need no test."""
    atoms: dict = {}  # (each distinct atom once: a prologue's loads repeat their guard)
    for x in _loads(val):
        valid = x.args[2]
        if valid is not sm.ONE:
            atoms.update(dict.fromkeys(sm_atoms(valid)))
    if not atoms or any(a.op != "lt" for a in atoms):
        return None
    lo, hi = [], []
    for a in atoms:
        d = a.args[0] - a.args[1]  # the atom is d < 0
        d0 = sm.substitute(d, {var: 0})
        coef = sm.substitute(d, {var: 1}) - d0
        if not coef.is_const or var in {n for n in sm.free_vars(d0)} \
                or sm.substitute(d, {var: 7}) is not d0 + 7 * coef.value:
            return None
        c = coef.value
        rest = render(d0)
        if c > 0:  # c*var + d0 < 0  <=>  var < floor((-d0 - 1) / c) + 1
            hi.append(f"EM_FDIV(-({rest}) - 1, {c}LL) + 1")
        elif c < 0:  # var > d0 / -c  <=>  var >= floor(d0 / -c) + 1
            lo.append(f"EM_FDIV({rest}, {-c}LL) + 1")
        else:  # not on var: the whole run or none of it
            hi.append(f"(({rest}) < 0 ? (1LL << 60) : -(1LL << 60))")
    return lo, hi


def _unguarded(val):
    """`val` with every load read unconditionally (used only where its guards are known to hold)."""
    from ..kernel import ir
    memo: dict = {}

    def go(v):
        r = memo.get(v)
        if r is None:
            if v.op == "load":
                r = ir.Val("load", (v.args[0], go(v.args[1]) if isinstance(v.args[1], ir.Val) else v.args[1], sm.ONE),
                           v.dtype)
            elif v.srcs:
                r = ir.Val(v.op, tuple(go(a) if isinstance(a, ir.Val) else a for a in v.args), v.dtype)
            else:
                r = v
            memo[v] = r
        return r
    return go(val)


def _walk_k(val, k: list, k_fastest: bool) -> bool:
    """Whether an operand's packing walks k per row (else k-row by k-row, the rows vectorised): k
    where memory runs along it for at least a k block; a conv's input whose k runs only a kernel
    row (7 for the stem) packs along its rows even when they are strided (the stem's stride 2:
    4.4 -> 2.6 ms on the 2-core Zen 4), with the writes then contiguous."""
    from ..kernel.structure import _first_load_index, _unit_run
    if not k_fastest:
        return False
    e = _first_load_index(val)
    return e is None or _unit_run(e, k) >= KB


def _loads(val) -> list:
    from ..kernel import ir
    return [x for x in ir.val_toposort([val]) if x.op == "load"]


def _const_buffer(val) -> str:
    return _loads(val)[0].args[0]


def prepack_side(g, const_params: set) -> str | None:
    """Which operand of contraction g ("a" or "b") reads only the program's constants (weights
    captured at import) and can be packed once per program instead of on every call: its rows and
    k of static size, no batch or dimension dependence. None when neither can."""
    from .. import symbolic as _sm
    if g is None or not supports(g):
        return None
    if not all(e.is_const for _, e in g.k):
        return None
    batch = {v for v, _ in g.batch}
    for side, val, rows in (("a", g.a, g.m), ("b", g.b, g.n)):
        # only this side's panels need static sizes: a projection over a prompt's named length T
        # keeps its weights packed once (they were repacked on every call: 2.3 against 1.25 ms for a
        # bf16 256 x 1536 x 512 down projection on the 2-core Zen 4)
        if not all(e.is_const for _, e in rows):
            continue
        loads = _loads(val)
        if not loads or any(x.args[0] not in const_params for x in loads):
            continue
        used = set()
        for x in loads:
            if not isinstance(x.args[1], type(x)):
                used |= _sm.free_vars(x.args[1]) | _sm.free_vars(x.args[2])
        if used & batch or used - {v for v, _ in rows + g.k}:  # (nothing but its own rows and k)
            continue
        return side
    return None


def render(r, g, store, cfg: dict, omp_min_work: int) -> None:
    """The kernel body (inside its function) of contraction g with store `store` as its epilogue.
    `r` is the C renderer (emit, idx, decompose, vr)."""
    mr, nr, mc, kc, nc = _cfg(cfg)
    name, e = r.k.name, r.emit
    half = bool(cfg.get("bf16"))  # bfloat16 panels and the vdpbf16ps micro-kernel
    if half:
        assert kc % 2 == 0, cfg  # (every k block but the last starts on a pair)
    el = "unsigned short" if half else "float"
    kp = "kcp_" if half else "kc_"  # a panel's k extent in the buffers
    kcp = "const long long kcp_ = (kc_ + 1) & ~1LL;" if half else None
    if cfg.get("swap"):  # compute C transposed: n (a few outputs, e.g. a classifier's 10) takes the MR side
        g = dataclasses.replace(g, a=g.b, b=g.a, m=g.n, n=g.m, a_k_fastest=g.b_k_fastest, b_k_fastest=g.a_k_fastest)
    M, N, K, B = (sm.prod(x for _, x in loops) for loops in (g.m, g.n, g.k, g.batch))
    e(1, f"const long long BT_ = {r.idx(B)}, M_ = {r.idx(M)}, N_ = {r.idx(N)}, K_ = {r.idx(K)};")
    e(1, f"const long long tM_ = (M_ + {mr - 1}) / {mr}, tN_ = (N_ + {nr - 1}) / {nr};")
    pre = cfg.get("prepack")  # "a" / "b": that operand is the program's constant (weights): packed once
    if pre:
        side = (g.a, g.m, g.a_k_fastest, mr, M) if pre == "a" else (g.b, g.n, g.b_k_fastest, nr, N)
        val, rows, kf, R, Rn = side
        pad = -(-Rn.value // R) * R
        src = _const_buffer(val)
        e(1, f"{el}* restrict Pre_ = ({el}*)em_cache[0];")
        e(1, f"if (!Pre_ || em_cache[1] != (const void*){src}) {{  /* first call, or other weights */")
        e(2, "free(Pre_);")
        nbytes = pad * (K.value + 1) * 2 if half else pad * K.value * 4
        e(2, f"Pre_ = ({el}*)aligned_alloc(64, ((size_t){nbytes} + 63) / 64 * 64);")
        e(2, f'if (!Pre_) {{ fprintf(stderr, "ember: {name}: cannot allocate its packed weights\\n"); abort(); }}')
        e(2, f"for (long long pc_ = 0; pc_ < K_; pc_ += {kc}) {{")
        e(3, f"const long long kc_ = {_min(str(kc), 'K_ - pc_')};")
        if kcp:
            e(3, kcp)
        _pack(r, g, val, rows, g.k, _walk_k(val, g.k, kf), R, r.idx(Rn), "0", f"Pre_ + pc_ * {pad}", 3, kc, half)
        e(2, "}")
        e(2, f"em_cache[0] = Pre_; em_cache[1] = (void*){src};")
        e(1, "}")
    e(1, f"#pragma omp parallel if(({r.idx(B * M * N * K)}) >= {omp_min_work})")
    e(1, "{")
    e(2, "const long long T_ = omp_get_num_threads(), th_ = omp_get_thread_num();")
    e(2, "long long b0_ = 0, b1_ = BT_, m0_ = 0, m1_ = M_, n0_ = 0, n1_ = N_;")
    e(2, "if (BT_ >= T_) { b0_ = BT_ * th_ / T_; b1_ = BT_ * (th_ + 1) / T_; }")
    e(2, f"else if (tN_ >= tM_) {{ n0_ = tN_ * th_ / T_ * {nr}; n1_ = tN_ * (th_ + 1) / T_ * {nr}; if (n1_ > N_) n1_ = N_; }}")
    e(2, f"else {{ m0_ = tM_ * th_ / T_ * {mr}; m1_ = tM_ * (th_ + 1) / T_ * {mr}; if (m1_ > M_) m1_ = M_; }}")
    e(2, "if (b0_ < b1_ && m0_ < m1_ && n0_ < n1_) {")
    e(3, f"{el}* restrict Ap_ = ({el}*){name}_buf(0, (size_t){mc * (kc + 1)});")
    e(3, f"{el}* restrict Bp_ = ({el}*){name}_buf(1, (size_t){nc * (kc + 1)});")
    e(3, f"const long long ncmax_ = {_min(str(nc), 'n1_ - n0_')}, tn_ = (ncmax_ + {nr - 1}) / {nr};")
    e(3, f"float* restrict S_ = K_ > {kc} ? {name}_buf(2, (size_t)((m1_ - m0_ + {mr - 1}) / {mr} * tn_ * {mr * nr})) : 0;")
    e(3, f"float T0_[{mr * nr}] __attribute__((aligned(64)));")
    e(3, "for (long long bb_ = b0_; bb_ < b1_; bb_++) {")
    r.decompose("bb_", g.batch, 4)
    e(4, f"for (long long jc_ = n0_; jc_ < n1_; jc_ += {nc}) {{")
    e(5, f"const long long bn_ = {_min(str(nc), 'n1_ - jc_')};")
    e(5, f"for (long long pc_ = 0; pc_ < K_; pc_ += {kc}) {{")
    e(6, f"const long long kc_ = {_min(str(kc), 'K_ - pc_')};")
    if kcp:
        e(6, kcp)
    if pre == "b":  # the constant operand's panels for this block, packed once
        e(6, f"const {el}* restrict Bb_ = Pre_ + pc_ * {pad} + jc_ * {kp};")
    else:
        _pack(r, g, g.b, g.n, g.k, _walk_k(g.b, g.k, g.b_k_fastest), nr, "bn_", "jc_", "Bp_", 6, kc, half)
        e(6, f"const {el}* restrict Bb_ = Bp_;")
    e(6, f"for (long long ic_ = m0_; ic_ < m1_; ic_ += {mc}) {{")
    e(7, f"const long long an_ = {_min(str(mc), 'm1_ - ic_')};")
    if pre == "a":
        e(7, f"const {el}* restrict Ab_ = Pre_ + pc_ * {pad} + ic_ * {kp};")
    else:
        _pack(r, g, g.a, g.m, g.k, _walk_k(g.a, g.k, g.a_k_fastest), mr, "an_", "ic_", "Ap_", 7, kc, half)
        e(7, f"const {el}* restrict Ab_ = Ap_;")
    e(7, f"for (long long jr_ = 0; jr_ < bn_; jr_ += {nr}) for (long long ir_ = 0; ir_ < an_; ir_ += {mr}) {{")
    e(8, f"float* restrict tp_ = S_ ? S_ + ((ic_ - m0_ + ir_) / {mr} * tn_ + jr_ / {nr}) * {mr * nr} : T0_;")
    e(8, f"{name}_uk(kc_, Ab_ + ir_ * {kp}, Bb_ + jr_ * {kp}, tp_, pc_ > 0);")
    e(8, "if (pc_ + kc_ >= K_) {")
    e(9, f"const long long mr_ = {_min(str(mr), 'an_ - ir_')}, nr_ = {_min(str(nr), 'bn_ - jr_')};")
    e(9, "for (long long i_ = 0; i_ < mr_; i_++) {")
    r.decompose("ic_ + ir_ + i_", g.m, 10)
    e(10, "#pragma omp simd")
    e(10, "for (long long j_ = 0; j_ < nr_; j_++) {")
    index, value = _through_flat_n(g, store, N)
    if index is None:
        r.decompose("jc_ + jr_ + j_", g.n, 11)
        index, value = store.index, store.value
    else:
        e(11, f"const long long {FLAT_N} = jc_ + jr_ + j_;")
    e(11, f"const float {g.stage.acc.name} = tp_[i_ * {nr} + j_];")
    env = r.vr.vals([value], 11)
    e(11, f"{store.buffer}[{r.idx(index)}] = {r.vr.store(store.buffer, env[value])};")
    for ind in (10, 9, 8, 7, 6, 5, 4, 3, 2, 1):
        e(ind, "}")
