"""wgmma's A operand from registers (the `RS` form, knob `rs`): TF32 over an MN-major A without a copy.

TF32 wgmma reads its shared-memory operands K-major only (no transpose bit). An operand whose rows, not
its k, are innermost — an NCHW 1x1 conv's pixels (35_conv2d_pointwise: out^T = X^T W^T with `swap`), the
W of a TF32 `x @ W` with `swap` — was therefore copied K-major by a kernel of its own first
(kernel/layout_gemm.py) or transposed through the staging ring (tf32_staged), each a pass over the
operand. In the RS form TMA stages A's tile as it lies (MN-major: 128-byte swizzled chunks of 32 rows by
BK k, codegen/cuda_wgmma_feed.py's _emit_tma) and every consumer thread loads its own fragment from it:
per k8 step four floats, (row g, k t), (g + 8, t), (g, t + 4), (g + 8, t + 4) of its warp's 16 rows
(g = lane / 4, t = lane % 4: the register layout of PTX's wgmma A fragment for .tf32), rounded to TF32
(cvt.rna). B stays K-major in shared memory (its descriptor as in the SS form).

Address of (row m, k) in an MN-major chunk: chunk m / 32 (BK * 128 bytes each), k-row k (128 bytes), 16-byte
unit ((m % 32) / 4) XOR (k % 8) (the 128-byte swizzle), float m % 4. k % 8 is t + 4q for the fragment's q,
so each thread's four offsets are fixed; a k8 step adds 1024 bytes.

The fragment registers are live until the wgmma group reading them completes (wait_group): with
`overlap` (one group left in flight) two register sets alternate by the slice's parity.

**tf32x3** (float32 accuracy) takes the same form where A is an MN-major copy, a K-major copy or gathered
(a conv's pixels, swapped onto the rows): A's tile is left as it landed (no lo tile, no split by the
producer: raw float32) and each consumer thread splits its own fragment, hi = rna(x), lo = rna(x - hi),
issuing lo·B_hi + hi·B_lo + hi·B_hi per k8 step; B keeps its hi and lo tiles. A is then read from shared
memory once a slice instead of three times, and the producer writes a quarter of what it did for A (the
seed-000 conv's 128 x 256 SS tile spent ~2/3 of its tensor time's worth of shared-memory traffic on that).
In a K-major tile (row m: 128 bytes, 16-byte unit (k / 4) XOR (m % 8)) the fragment's k = 8 kk + t + 4q sits
in unit 2 kk + q XOR g (m % 8 is g for both of the thread's rows): conflict-free, four 4-byte loads.
"""
from __future__ import annotations

from .cuda_tma import TmaOperand
from .cuda_wgmma_feed import GatherOperand
from .cuda_wgmma_im2col import Im2colOperand

RS_HELPER = r"""#ifndef EM_RS_HELPER
#define EM_RS_HELPER
// one float of an MN-major shared tile as a TF32 operand register (round to nearest, ties away)
__device__ __forceinline__ em_u32 em_lds_tf32(em_u32 addr) {
  float x; asm volatile("ld.shared.f32 %0, [%1];" : "=f"(x) : "r"(addr) : "memory");
  em_u32 r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r;
}
// one raw float32 of a shared tile as tf32x3's two operand registers: hi = rna(x), lo = rna(x - hi)
__device__ __forceinline__ void em_lds_split3(em_u32 addr, em_u32& hi, em_u32& lo) {
  float x; asm volatile("ld.shared.f32 %0, [%1];" : "=f"(x) : "r"(addr) : "memory");
  asm volatile("cvt.rna.tf32.f32 %0, %1;" : "=r"(hi) : "f"(x));
  const float r = x - __uint_as_float(hi);
  asm volatile("cvt.rna.tf32.f32 %0, %1;" : "=r"(lo) : "f"(r));
}
#endif"""


# The producer warpgroup's (gathering, splitting tf32x3's B) and the consumers' registers per thread, by consumer
# warpgroups: 168 each at launch with two (384 threads; 128 x (168 - 72) frees what 256 x (216 - 168) takes).
# Without them ptxas serialised the consumers' wgmmas (C7520) in every such kernel whose fragments alternate
RS_REGS = {1: (72, 240), 2: (72, 216)}
RS_MAX_REGISTERS = 160  # accumulators and fragments (rs_registers) a consumer may hold beside its addressing


def rs_applies(plan, cfg: dict) -> bool:
    """Knob `rs` on a TF32 plan whose a operand is an MN-major TMA copy, or a tf32x3 plan whose a is any
    copy or gather but an im2col tile; b K-major either way."""
    if not cfg.get("rs") or isinstance(plan, str):
        return False
    kind, pa, pb = plan
    if isinstance(pb, TmaOperand) and not pb.kmajor:
        return False
    if kind == "tf32":
        return rs_operand(pa)
    return kind == "tf32x3" and (rs_operand(pa) or rs_kmajor(pa))


def rs_kmajor(p) -> bool:
    """An A tile the RS form reads K-major: a K-major TMA copy (not im2col) or a gathered operand."""
    return (isinstance(p, TmaOperand) and p.kmajor and not isinstance(p, Im2colOperand)) or isinstance(p, GatherOperand)


def rs_registers(BN: int, overlap: bool, promote: int, x3: bool) -> int:
    """Consumer registers the accumulators and fragments take (tf32x3: hi and lo sets of 16)."""
    return BN // 2 * (2 if promote else 1) + 16 * (2 if x3 else 1) * (2 if overlap else 1)


def rs_operand(p) -> bool:
    """An operand the RS form loads into registers: a plain MN-major TMA copy (not an im2col tile)."""
    return isinstance(p, TmaOperand) and not p.kmajor and not isinstance(p, Im2colOperand)


def wgmma_rs_fn(n: int) -> tuple[str, str]:
    """(name, source) of one m64n{n}k8 TF32 wgmma with A's fragment from four registers, B from a
    shared-memory descriptor."""
    name = f"em_wgmma_rs_tf32_n{n}"
    h = n // 2
    regs = ", ".join(f"%{i}" for i in range(h))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(h))
    src = (f"#ifndef EM_{name.upper()}\n#define EM_{name.upper()}\n"
           f"__device__ __forceinline__ void {name}(float* d, const em_u32* a, em_u64 db) {{\n"
           f'  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{h + 5}, 0;\\n"\n'
           f'    "wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 {{{regs}}}, '
           f'{{%{h}, %{h + 1}, %{h + 2}, %{h + 3}}}, %{h + 4}, p, 1, 1;\\n}}\\n"\n'
           f'    : {outs}\n    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));\n}}\n#endif')
    return name, src


def emit_rs_offsets(w, BK: int, overlap: bool, ind: int, kmajor: bool = False, x3: bool = False) -> None:
    """Each consumer thread's four fragment offsets into an A slot (fixed: see the module's note; K-major:
    the row's start and the float within the unit, the unit XORed per k step), and its fragment registers
    (two sets with `overlap`; tf32x3: a lo set beside each)."""
    w.emit(ind, "em_u32 rso_[4];")
    if kmajor:
        w.emit(ind, "const int rg_ = (tid_ & 31) >> 2;")
    w.emit(ind, "#pragma unroll\n    for (int f = 0; f < 4; ++f) {")
    w.emit(ind + 1, "const int m = cw_ * 64 + (tid_ >> 5) * 16 + ((tid_ & 31) >> 2) + 8 * (f & 1), kq = (tid_ & 3) + 4 * (f >> 1);")
    if kmajor:
        w.emit(ind + 1, "rso_[f] = (em_u32)(m * 128 + (tid_ & 3) * 4);")
    else:
        w.emit(ind + 1, f"rso_[f] = (em_u32)((m >> 5) * {BK * 128} + kq * 128 + ((((m & 31) >> 2) ^ kq) << 4) + (m & 3) * 4);")
    w.emit(ind, "}")
    for s in range(2 if overlap else 1):
        w.emit(ind, f"em_u32 ra{s}_[{BK // 8}][4];" + (f" em_u32 rl{s}_[{BK // 8}][4];" if x3 else ""))


def emit_rs_slice(w, fname: str, BK: int, db: str, overlap: bool, ind: int, kmajor: bool = False, lo_off: int = 0) -> None:
    """One k slice: the fragments loaded (the set of the slice's parity with `overlap`), the fence, the
    wgmmas. db: B's descriptor expression in `kk`. lo_off > 0: tf32x3, B's lo tile that far after its hi
    one, A split in registers (lo·hi + hi·lo + hi·hi, the SS form's order)."""
    at = "sA_ + rso_[f] + (((2 * kk + (f >> 1)) ^ rg_) << 4)" if kmajor else "sA_ + rso_[f] + kk * 1024"

    def body(s: int, i: int) -> None:
        w.emit(i, f"#pragma unroll\n      for (int kk = 0; kk < {BK // 8}; ++kk) {{")
        w.emit(i + 1, "#pragma unroll\n        for (int f = 0; f < 4; ++f) " +
               (f"em_lds_split3({at}, ra{s}_[kk][f], rl{s}_[kk][f]);" if lo_off else f"ra{s}_[kk][f] = em_lds_tf32({at});"))
        w.emit(i, "}")
        w.emit(i, "em_wg_fence();")
        if lo_off:
            dlo = db.replace("sB_", f"sB_ + {lo_off}")
            w.emit(i, f"#pragma unroll\n      for (int kk = 0; kk < {BK // 8}; ++kk) {{ {fname}(d_, rl{s}_[kk], {db}); "
                      f"{fname}(d_, ra{s}_[kk], {dlo}); {fname}(d_, ra{s}_[kk], {db}); }}")
            return
        w.emit(i, f"#pragma unroll\n      for (int kk = 0; kk < {BK // 8}; ++kk) {fname}(d_, ra{s}_[kk], {db});")
    if not overlap:
        body(0, ind)
        return
    w.emit(ind, "if (it & 1) {")
    body(1, ind + 1)
    w.emit(ind, "} else {")
    body(0, ind + 1)
    w.emit(ind, "}")
