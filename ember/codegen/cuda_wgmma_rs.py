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
"""
from __future__ import annotations

from .cuda_tma import TmaOperand
from .cuda_wgmma_im2col import Im2colOperand

RS_HELPER = r"""#ifndef EM_RS_HELPER
#define EM_RS_HELPER
// one float of an MN-major shared tile as a TF32 operand register (round to nearest, ties away)
__device__ __forceinline__ em_u32 em_lds_tf32(em_u32 addr) {
  float x; asm volatile("ld.shared.f32 %0, [%1];" : "=f"(x) : "r"(addr) : "memory");
  em_u32 r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r;
}
#endif"""


def rs_applies(plan, cfg: dict) -> bool:
    """Knob `rs` on a TF32 plan whose a operand is an MN-major TMA copy and whose b is K-major."""
    if not cfg.get("rs") or isinstance(plan, str):
        return False
    kind, pa, pb = plan
    return kind == "tf32" and rs_operand(pa) and not (isinstance(pb, TmaOperand) and not pb.kmajor)


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


def emit_rs_offsets(w, BK: int, overlap: bool, ind: int) -> None:
    """Each consumer thread's four fragment offsets into an A slot (fixed: see the module's note),
    and its fragment registers (two sets with `overlap`)."""
    w.emit(ind, "em_u32 rso_[4];")
    w.emit(ind, "#pragma unroll\n    for (int f = 0; f < 4; ++f) {")
    w.emit(ind + 1, "const int m = cw_ * 64 + (tid_ >> 5) * 16 + ((tid_ & 31) >> 2) + 8 * (f & 1), kq = (tid_ & 3) + 4 * (f >> 1);")
    w.emit(ind + 1, f"rso_[f] = (em_u32)((m >> 5) * {BK * 128} + kq * 128 + ((((m & 31) >> 2) ^ kq) << 4) + (m & 3) * 4);")
    w.emit(ind, "}")
    for s in range(2 if overlap else 1):
        w.emit(ind, f"em_u32 ra{s}_[{BK // 8}][4];")


def emit_rs_slice(w, fname: str, BK: int, db: str, overlap: bool, ind: int) -> None:
    """One k slice: the fragments loaded (the set of the slice's parity with `overlap`), the fence, the
    wgmmas. db: B's descriptor expression in `kk`."""
    def body(s: int, i: int) -> None:
        w.emit(i, f"#pragma unroll\n      for (int kk = 0; kk < {BK // 8}; ++kk) {{")
        w.emit(i + 1, "#pragma unroll\n        for (int f = 0; f < 4; ++f) "
                      f"ra{s}_[kk][f] = em_lds_tf32(sA_ + rso_[f] + kk * 1024);")
        w.emit(i, "}")
        w.emit(i, "em_wg_fence();")
        w.emit(i, f"#pragma unroll\n      for (int kk = 0; kk < {BK // 8}; ++kk) {fname}(d_, ra{s}_[kk], {db});")
    if not overlap:
        body(0, ind)
        return
    w.emit(ind, "if (it & 1) {")
    body(1, ind + 1)
    w.emit(ind, "} else {")
    body(0, ind + 1)
    w.emit(ind, "}")
