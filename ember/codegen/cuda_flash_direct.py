"""Flash-decoding's combine with every warp's partial sent straight to rank 0 (knob `gather` 2).

Traced on the H100 (docs/attention.md "The layer's phases"), a batch-1 layer at 8K keys spends ~1.8
us after its key loop: the warps' triples through shared memory between two block barriers, the
block's triple combined, then the gathered cluster combine (codegen/cuda_flash_gather.py). Here each
warp, as soon as its own keys are done, writes its (max, sum, output row) triple from its registers
into its own slot of rank 0's shared memory (`st.shared::cluster`; keys-major accumulators, knob
`kt`) and arrives on rank 0's mbarrier; the warps of the other blocks then exit. Rank 0 waits for all
C x W arrivals and combines the C x W partials in two steps: per row, one warp reduces the maxima
and sums over the partials (shuffles) into scale factors; then each output is one dot product of a
row's factors with the partials' values. No block barrier before the cluster's, no second combine.

Measured on the H100 (bench/results/gpu-session32-2026-11-27/f/): correct, and slower — keys done to
outputs stored 2.0 us against the gather's 0.7 + 1.1 (rank 0 waits for the cluster's slowest warp
and sums 32 partials an output); 16 layers B 1 x 8K D 128 75.6-76.2% against 77.6-77.9, the Llama-1B
step 1.094 ms against 1.076. Off (EMBER_DECODE_DIRECT=1 makes it the default, for A/B runs).
"""
from __future__ import annotations


def direct_bytes(C: int, W: int, R: int, DV: int) -> int:
    """Rank 0's area: C * W triples (R x DV rows, R maxima, R sums), R x C * W factors, R sums."""
    return C * W * R * (DV + 2) * 4 + R * C * W * 4 + R * 4


def emit_direct_combine(w, f, at_row, store, C: int, W: int, R: int, DV: int, c: str, g_off: int, stamp) -> None:
    """After the key loop (the ring drained): each warp's triple into rank 0's slot rank_ * W + warp_,
    an arrival on rank 0's mbarrier (`gbar_`, emit_gather_init with C * 32 * W arrivals), then rank
    0 alone combines and stores every output through `store(w, f, at_row, value, ind)`."""
    e = w.emit
    n, CW, T = R * (DV + 2), C * W, 32 * W
    e(1, 'asm volatile("barrier.cluster.wait.acquire;" ::: "memory");  /* rank 0\'s mbarrier is initialised */')
    e(1, f"float* gs_ = reinterpret_cast<float*>(em_dyn_smem + {g_off});  /* rank 0: partial q's triple at q * {n} */")
    e(1, f"const unsigned mine_ = em_cluster_addr(gs_ + (rank_ * {W}u + (unsigned)warp_) * {n}u, 0u);")
    e(1, "#pragma unroll")
    e(1, "for (int h = 0; h < 2; ++h) {")
    for x in (4, 8, 16):
        e(2, f"l_[h] += __shfl_xor_sync(0xffffffffu, l_[h], {x});")
    e(2, "const int r = ((lane_ & 3) << 1) + h;  /* (keys-major: this lane's rows are the tile's columns) */")
    e(2, f"if (r < {R}) {{")
    e(3, "if ((lane_ >> 2) == 0) {")
    e(4, f'asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(mine_ + 4u * ({R * DV} + r)), "f"(m_[h]) : "memory");')
    e(4, f'asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(mine_ + 4u * ({R * DV + R} + r)), "f"(l_[h]) : "memory");')
    e(3, "}")
    e(3, "#pragma unroll")
    e(3, f"for (int q = 0; q < {DV // 16}; ++q) {{")
    e(4, f"const unsigned at_ = mine_ + 4u * (r * {DV} + q * 16 + (lane_ >> 2));")
    e(4, 'asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(at_), "f"(o_[q][h]) : "memory");')
    e(4, 'asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(at_ + 32u), "f"(o_[q][h + 2]) : "memory");')
    e(3, "}")
    e(2, "}")
    e(1, "}")
    e(1, 'asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: '
         '"r"(em_cluster_addr(&gbar_, 0u)) : "memory");')
    stamp(4)
    e(1, "if (rank_ != 0u) {")
    stamp(5, 2)
    stamp(6, 2)
    e(2, "return;")
    e(1, "}")
    e(1, "{  /* rank 0: every warp's triple has landed */")
    e(2, "const unsigned bar_ = (unsigned)__cvta_generic_to_shared(&gbar_);")
    e(2, "unsigned ok_ = 0u;")
    e(2, "while (!ok_)")
    e(3, 'asm volatile("{\\n\\t.reg .pred p;\\n\\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0;\\n\\t'
         'selp.u32 %0, 1, 0, p;\\n\\t}" : "=r"(ok_) : "r"(bar_) : "memory");')
    e(1, "}")
    stamp(5)
    e(1, f"float* sc_ = gs_ + {CW * n};  /* [R][C * W] each partial's factor exp2((m_q - M) c) */")
    e(1, f"float* lv_ = sc_ + {R * CW};  /* [R] the row's sum */")
    e(1, f"for (int r = warp_; r < {R}; r += {W}) {{  /* a warp a row: its partials over the lanes */")
    e(2, "float mx_ = -INFINITY;")
    e(2, f"for (int q = lane_; q < {CW}; q += 32) mx_ = fmaxf(mx_, gs_[q * {n} + {R * DV} + r]);")
    for x in (16, 8, 4, 2, 1):
        e(2, f"mx_ = fmaxf(mx_, __shfl_xor_sync(0xffffffffu, mx_, {x}));")
    e(2, f"const float Mc = (mx_ == -INFINITY ? 0.f : mx_) * {c};")
    e(2, "float L = 0.f;")
    e(2, f"for (int q = lane_; q < {CW}; q += 32) {{")
    e(3, f"const float s = em_ex2(fmaf(gs_[q * {n} + {R * DV} + r], {c}, -Mc));")
    e(3, f"sc_[r * {CW} + q] = s; L += s * gs_[q * {n} + {R * DV + R} + r];")
    e(2, "}")
    for x in (16, 8, 4, 2, 1):
        e(2, f"L += __shfl_xor_sync(0xffffffffu, L, {x});")
    e(2, "if (lane_ == 0) lv_[r] = L;")
    e(1, "}")
    e(1, "__syncthreads();")
    e(1, f"for (int t = tid_; t < {R * DV}; t += {T}) {{")
    e(2, f"const int r = t / {DV};")
    e(2, f"const {w.IDX} {f.out_var} = t % {DV};")
    e(2, "float O = 0.f;")
    e(2, "#pragma unroll 8")
    e(2, f"for (int q = 0; q < {CW}; ++q) O = fmaf(sc_[r * {CW} + q], gs_[q * {n} + t], O);")
    store(w, f, at_row, "O / lv_[r]", 2)
    e(1, "}")
