"""Flash-decoding's cluster combine gathered into rank 0 (knob `gather` of codegen/cuda_flash_decode.py).

The default combine ends each cluster with two barriers: every block's (max, sum, row) triple
written, a cluster barrier, each block combining a slice of the outputs from every block's shared
memory, and a second barrier so no block leaves while another still reads it. Gathered, the other
blocks write their triples into rank 0's shared memory (`st.shared::cluster`) and arrive on an
mbarrier there, then exit; rank 0 waits on it alone and combines and stores every output. The
cluster barrier that makes rank 0's mbarrier initialisation visible is split: arrived at the start
(before the grid-dependency wait: shared memory only), waited for only before the triples are written.

Measured on the H100 as 16 layers in one graph replay (bench/results/gpu-session32-2026-11-27/a/):
faster in every case — batch 1 x 8K keys, head dim 128 69.5 -> 72.6% of copy bandwidth, 64 56.2 ->
57.5, batch 4 x 8K 81.9 -> 83.4, 32K over one cluster of 8 80.7 -> 92.2 (the splits' 90.5); traced,
the cluster's end 1.5 -> 1.0 us a layer. The default wherever a cluster has no splits.
"""
from __future__ import annotations


def gather_bytes(C: int, R: int, DV: int) -> int:
    """Rank 0's gather area: a (R x DV rows, R maxima, R sums) float triple per block."""
    return C * R * (DV + 2) * 4


def emit_gather_init(w, C: int, T: int, ind: int = 1, arrivals: int | None = None, release: bool = False) -> None:
    """Rank 0's mbarrier (one arrival per thread of the other blocks, or `arrivals`), then the split
    cluster barrier's arrive (its wait comes before the triples are written: emit_gather_combine)."""
    e = w.emit
    e(ind, "__shared__ __align__(8) unsigned long long gbar_;")
    e(ind, "if (rank_ == 0u && tid_ == 0) {")
    e(ind + 1, f'asm volatile("mbarrier.init.shared::cta.b64 [%0], {(C - 1) * T if arrivals is None else arrivals};" :: '
               f'"r"((unsigned)__cvta_generic_to_shared(&gbar_)) : "memory");')
    e(ind + 1, 'asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");')
    e(ind, "}")
    # relaxed: the fence above releases rank 0's initialisation; the other blocks release nothing here
    # (`release`: rank 0's other shared writes before it, knob `steal`'s counter, are published too)
    e(ind, f'asm volatile("barrier.cluster.arrive.{"release" if release else "relaxed"}.aligned;" ::: "memory");'
           '  /* (waited before the gather) */')


def emit_gather_combine(w, f, at_row, store, C: int, R: int, DV: int, c: str, T: int, g_off: int, stamp,
                        waited: bool = False) -> None:
    """After the block's triple is in bm_ / bl_ / bo_: the other blocks send it to rank 0 and exit;
    rank 0 combines the C triples and stores the outputs through `store(w, f, at_row, value, ind)`.
    `waited`: the split cluster barrier was already waited for (knob `steal`, before the loop)."""
    e, I = w.emit, w.IDX
    n = R * (DV + 2)
    e(1, "__syncthreads();  /* the block's triple is complete */")
    if not waited:
        e(1, 'asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");  /* rank 0\'s mbarrier is initialised */')
    e(1, f"float* gs_ = reinterpret_cast<float*>(em_dyn_smem + {g_off});  /* rank 0: block q's triple at q * {n} */")
    e(1, "if (rank_ != 0u) {")
    e(2, f"const unsigned dst_ = em_cluster_addr(gs_ + rank_ * {n}, 0u);")
    e(2, f"for (int t = tid_; t < {n}; t += {T}) {{")
    e(3, f"const float v_ = t < {R * DV} ? bo_[t] : (t < {R * DV + R} ? bm_[t - {R * DV}] : bl_[t - {R * DV + R}]);")
    e(3, 'asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(dst_ + 4u * (unsigned)t), "f"(v_) : "memory");')
    e(2, "}")
    e(2, 'asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: '
         '"r"(em_cluster_addr(&gbar_, 0u)) : "memory");')
    stamp(5, 2)
    stamp(6, 2)
    e(2, "return;")
    e(1, "}")
    e(1, "{  /* rank 0: every other block's triple has landed */")
    e(2, "const unsigned bar_ = (unsigned)__cvta_generic_to_shared(&gbar_);")
    e(2, "unsigned ok_ = 0u;")
    e(2, "while (!ok_)")
    e(3, 'asm volatile("{\\n\\t.reg .pred p;\\n\\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0;\\n\\t'
         'selp.u32 %0, 1, 0, p;\\n\\t}" : "=r"(ok_) : "r"(bar_) : "memory");')
    e(1, "}")
    stamp(5)
    e(1, f"for (int t = tid_; t < {R * DV}; t += {T}) {{")
    e(2, f"const int r = t / {DV};")
    e(2, f"const {I} {f.out_var} = t % {DV};")
    e(2, "float M = bm_[r];")
    e(2, f"for (int q = 1; q < {C}; ++q) M = fmaxf(M, gs_[q * {n} + {R * DV} + r]);")
    e(2, f"const float Mc = (M == -INFINITY ? 0.f : M) * {c};")
    e(2, f"float s = em_ex2(fmaf(bm_[r], {c}, -Mc)), L = s * bl_[r], O = s * bo_[t];")
    e(2, f"for (int q = 1; q < {C}; ++q) {{")
    e(3, f"s = em_ex2(fmaf(gs_[q * {n} + {R * DV} + r], {c}, -Mc));")
    e(3, f"L += s * gs_[q * {n} + {R * DV + R} + r]; O += s * gs_[q * {n} + t];")
    e(2, "}")
    store(w, f, at_row, "O / L", 2)
    e(1, "}")
