#define EM_MK_TIMEOUT_NS 600000000000ull
#define EM_MK_EVICT 1
#define EM_MK_BAR0_WHEN_FULL 1
/* megakernel: a task's __syncthreads() is a barrier over the kernel's own threads only. Not
   `bar.sync` (= barrier.sync.aligned, which asks every thread of the block to execute the same
   instruction): barrier 1 is reached by a subset of the block and each warp arrives converged. */
__shared__ unsigned em_task_threads_;
__device__ __forceinline__ void em_task_sync() {
#ifdef EM_MK_BAR0_WHEN_FULL
  if (em_task_threads_ == blockDim.x) { asm volatile("barrier.sync 0;" ::: "memory"); return; }
#endif
  asm volatile("barrier.sync 1, %0;" :: "r"(em_task_threads_) : "memory");
}
#define __syncthreads() em_task_sync()
__device__ __forceinline__ void em_mk_prefetch(const void* p, unsigned long long lo, unsigned long long hi) {
  /* [p + lo, p + hi) into L2, 16-byte aligned (a hint: nothing depends on it) */
  const unsigned long long a = ((unsigned long long)p + lo + 15ull) & ~15ull, e = ((unsigned long long)p + hi) & ~15ull;
  if (e > a) {
#ifdef EM_MK_EVICT  /* (option evict: what the stream asks for stays until read) */
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    asm volatile("{\n\t.reg .u64 g;\n\tcvta.to.global.u64 g, %0;\n\tcp.async.bulk.prefetch.L2.global.L2::cache_hint [g], %1, %2;\n\t}"
                 :: "l"(a), "r"((unsigned)(e - a)), "l"(pol) : "memory");
#else
    asm volatile("{\n\t.reg .u64 g;\n\tcvta.to.global.u64 g, %0;\n\tcp.async.bulk.prefetch.L2.global [g], %1;\n\t}"
                 :: "l"(a), "r"((unsigned)(e - a)) : "memory");
#endif
  }
}
__device__ __forceinline__ uint4 em_mk_ldw(const void* p) {
  /* a weight read once a step: not kept in L1, first to leave L2 (option evict) */
  uint4 r;
  unsigned long long pol;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p), "l"(pol));
  return r;
}



#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define INT_MIN (-2147483647 - 1)
#define LLONG_MIN (-9223372036854775807LL - 1)
#define EM_FDIV(a, b) ((a) / (b) - ((((a) % (b)) != 0) && (((a) < 0) != ((b) < 0))))
#define EM_FMOD(a, b) ((a) % (b) + (((((a) % (b)) != 0) && (((a) < 0) != ((b) < 0))) ? (b) : 0))
#define EM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define EM_MAX(a, b) ((a) > (b) ? (a) : (b))

#define EM_CLAMP(v, lo, hi) ((v) < (lo) ? (lo) : ((v) > (hi) ? (hi) : (v)))
__device__ __forceinline__ float em_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short em_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float em_bf2f(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ __forceinline__ unsigned short em_f2bf(float f) { unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float em_lg2(float x) {
  float r; asm("lg2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  const float f = x - 1.0f;  /* exact near 1 */
  /* log(1 + f) / f = 1 - f/2 + f^2/3 - f^3/4 + f^4/5 - f^5/6 + f^6/7, in Estrin's form (depth 4) */
  const float f2 = f * f;
  const float q = fmaf(f2 * f2, fmaf(f2, 1.0f / 7.0f, fmaf(f, -1.0f / 6.0f, 0.2f)),
                       fmaf(f2, fmaf(f, -0.25f, 1.0f / 3.0f), fmaf(f, -0.5f, 1.0f)));
  return fabsf(f) < 0.0625f ? f * q * 1.4426950408889634f : r;
}
__device__ __forceinline__ float em_rcp(float x) { float r; asm("rcp.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
__device__ __forceinline__ float em_maxf(float a, float b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ double em_maxd(double a, double b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ int em_maxi(int a, int b) { return a > b ? a : b; }
__device__ __forceinline__ long long em_maxi(long long a, long long b) { return a > b ? a : b; }
template <typename T> __device__ __forceinline__ T em_max(T a, T b) { return a > b ? a : b; }
template <> __device__ __forceinline__ float em_max<float>(float a, float b) { return em_maxf(a, b); }
template <> __device__ __forceinline__ double em_max<double>(double a, double b) { return em_maxd(a, b); }
template <typename T, int OP> __device__ __forceinline__ T em_combine(T a, T b) { return OP == 0 ? a + b : em_max<T>(a, b); }
template <typename T, int OP> __device__ __forceinline__ T em_warp_reduce(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = em_combine<T, OP>(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <typename T, int OP, int NW> __device__ __forceinline__ T em_block_reduce(T v, T* sm, T ident) {
  v = em_warp_reduce<T, OP>(v);
  const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
  __syncthreads();  /* the previous reduction has finished reading sm */
  if (l == 0) sm[w] = v;
  __syncthreads();
  v = (l < NW) ? sm[l] : ident;
  return em_warp_reduce<T, OP>(v);  /* every warp reduces the partials: all threads get the result */
}

__device__ __forceinline__ unsigned em_tf32(float x) { unsigned r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r; }
__device__ __forceinline__ void em_split_tf32(float x, unsigned& hi, unsigned& lo) {
  hi = em_tf32(x); lo = em_tf32(x - __uint_as_float(hi));
}
__device__ __forceinline__ void em_mma_tf32(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define EM_GRID_DEPENDENCY() asm volatile("griddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;" ::: "memory")
#define EM_PDL_TRIGGER() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#define EM_PDL_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
__device__ __forceinline__ void em_prefetch_l2_span(const void* p, unsigned long long nbytes) {
  /* warp 0's lanes each ask L2 for a 16-byte-aligned share of [p, p + nbytes) (this block's own rows) */
  const unsigned long long a = (unsigned long long)p;
  if ((threadIdx.x >> 5) != 0 || (a & 15ull) != 0ull) return;
  nbytes &= ~15ull;
  const unsigned long long share = ((nbytes + 31) / 32 + 15ull) & ~15ull, off = (threadIdx.x & 31) * share;
  if (off >= nbytes) return;
  const unsigned long long n = nbytes - off < share ? nbytes - off : share;
  asm volatile("{\n\t.reg .u64 g;\n\tcvta.to.global.u64 g, %0;\n\tcp.async.bulk.prefetch.L2.global [g], %1;\n\t}"
               :: "l"(a + off), "r"((unsigned)n) : "memory");
}
__device__ __forceinline__ void em_prefetch_l2(const void* p, unsigned long long nbytes) {
  /* the first blocks each prefetch one 16-byte-aligned share of [p, p + nbytes) into L2 */
  const unsigned long long a = (unsigned long long)p;
  if (threadIdx.x != 0 || (a & 15ull) != 0ull) return;
  const unsigned nb = gridDim.x < 128u ? gridDim.x : 128u;
  if (blockIdx.x >= nb) return;
  nbytes &= ~15ull;
  const unsigned long long share = ((nbytes + nb - 1) / nb + 15ull) & ~15ull, off = blockIdx.x * share;
  if (off >= nbytes) return;
  const unsigned long long n = nbytes - off < share ? nbytes - off : share;
  asm volatile("{\n\t.reg .u64 g;\n\tcvta.to.global.u64 g, %0;\n\tcp.async.bulk.prefetch.L2.global [g], %1;\n\t}"
               :: "l"(a + off), "r"((unsigned)n) : "memory");
}
#else
#define EM_GRID_DEPENDENCY()
#define EM_PDL_TRIGGER()
#define EM_PDL_WAIT()
__device__ __forceinline__ void em_prefetch_l2_span(const void*, unsigned long long) {}
__device__ __forceinline__ void em_prefetch_l2(const void*, unsigned long long) {}
#endif

static __device__ __forceinline__ float em_philox_uniform(long long seed, long long counter) {
  unsigned long long s = (unsigned long long)seed, n = (unsigned long long)counter;
  unsigned int c0 = (unsigned int)n, c1 = (unsigned int)(n >> 32), c2 = 0u, c3 = 0u;
  unsigned int k0 = (unsigned int)s, k1 = (unsigned int)(s >> 32);
  for (int r = 0; r < 10; ++r) {
    unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    unsigned int t1 = c1, t3 = c3;
    c0 = (unsigned int)(p1 >> 32) ^ t1 ^ k0; c1 = (unsigned int)p1;
    c2 = (unsigned int)(p0 >> 32) ^ t3 ^ k1; c3 = (unsigned int)p0;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  return (float)(c0 >> 8) * 5.9604644775390625e-08f;
}




extern __shared__ __align__(1024) unsigned char em_dyn_smem[];

__shared__ float em_red_float[32];
__shared__ double em_red_double[32];
__shared__ int em_red_int[32];
__shared__ long long em_red_long_long[32];
__shared__ unsigned em_red_unsigned[32];
__shared__ unsigned long long em_red_unsigned_long_long[32];
__shared__ unsigned short em_red_unsigned_short[32];


#ifndef EM_FLASH_HELPERS
#define EM_FLASH_HELPERS
__device__ __forceinline__ void em_cp16(void* smem, const void* gmem, bool pred) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(s), "l"(gmem), "r"(pred ? 16 : 0));
}
__device__ __forceinline__ void em_cp_commit() { asm volatile("cp.async.commit_group;"); }
__device__ __forceinline__ void em_cp_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void em_cp_wait_one() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
__device__ __forceinline__ void em_ldsm4(unsigned* r, const void* p) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
__device__ __forceinline__ void em_ldsm4t(unsigned* r, const void* p) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
__device__ __forceinline__ float em_ex2(float x) { float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
#define EM_MMA16816(T, d, a, b0, b1) \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." T "." T ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))
__device__ __forceinline__ unsigned em_pack_bf16(float lo, float hi) {
  unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}
__device__ __forceinline__ unsigned em_pack_f16(float lo, float hi) {
  unsigned r; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}
#endif



static __device__ __forceinline__ void k0_mul_blk(unsigned short* b0, const int* b1, const unsigned short* __restrict__ b2, const unsigned short* __restrict__ b3, const unsigned em_bid_, const unsigned em_nblk_) {
  

  for (int row_ = em_bid_; row_ < 1; row_ += em_nblk_) {
    float acc0 = 0.0f;
    for (int r_ = (int)threadIdx.x; r_ < 256; r_ += 256) {
      const int r0_2 = r_;
      int v0 = (int)b1[0];
      int v1 = (v0 < 0);
      int v2 = (v0 + 300);
      int v3 = (v1 ? v2 : v0);
      int v4 = (256 * v3);
      int v5 = (int)(r0_2);
      int v6 = (1 * v5);
      int v7 = (v4 + v6);
      float v8 = em_bf2f(b2[EM_CLAMP((long long)(v7), 0LL, (long long)(76800) - 1)]);
      float v9 = (float)(v8);
      float v10 = (v9 * v9);
      acc0 += v10;
    }
    acc0 = em_block_reduce<float, 0, 8>(acc0, em_red_float, (float)0.0f);
    for (int j_ = (int)threadIdx.x * 8; j_ < 256; j_ += 2048) {
      const int o2 = j_;
      const uint4 g0 = em_mk_ldw(&b3[o2]);
      float v11 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
      int v12 = (int)b1[0];
      int v13 = (v12 < 0);
      int v14 = (v12 + 300);
      int v15 = (v13 ? v14 : v12);
      int v16 = (256 * v15);
      int v17 = (int)(o2);
      int v18 = (1 * v17);
      int v19 = (v16 + v18);
      float v20 = em_bf2f(b2[EM_CLAMP((long long)(v19), 0LL, (long long)(76800) - 1)]);
      float v21 = (float)(v20);
      float v22 = (0.00390625f * acc0);
      float v23 = (1e-06f + v22);
      float v24 = sqrtf(v23);
      float v25 = em_rcp(v24);
      float v26 = (v21 * v25);
      float v27 = em_bf2f(em_f2bf((float)(v26)));
      float v28 = (v11 * v27);
      float v29 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
      int v30 = (int)((o2 + 1));
      int v31 = (1 * v30);
      int v32 = (v16 + v31);
      float v33 = em_bf2f(b2[EM_CLAMP((long long)(v32), 0LL, (long long)(76800) - 1)]);
      float v34 = (float)(v33);
      float v35 = (v34 * v25);
      float v36 = em_bf2f(em_f2bf((float)(v35)));
      float v37 = (v29 * v36);
      float v38 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
      int v39 = (int)((o2 + 2));
      int v40 = (1 * v39);
      int v41 = (v16 + v40);
      float v42 = em_bf2f(b2[EM_CLAMP((long long)(v41), 0LL, (long long)(76800) - 1)]);
      float v43 = (float)(v42);
      float v44 = (v43 * v25);
      float v45 = em_bf2f(em_f2bf((float)(v44)));
      float v46 = (v38 * v45);
      float v47 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
      int v48 = (int)((o2 + 3));
      int v49 = (1 * v48);
      int v50 = (v16 + v49);
      float v51 = em_bf2f(b2[EM_CLAMP((long long)(v50), 0LL, (long long)(76800) - 1)]);
      float v52 = (float)(v51);
      float v53 = (v52 * v25);
      float v54 = em_bf2f(em_f2bf((float)(v53)));
      float v55 = (v47 * v54);
      float v56 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
      int v57 = (int)((o2 + 4));
      int v58 = (1 * v57);
      int v59 = (v16 + v58);
      float v60 = em_bf2f(b2[EM_CLAMP((long long)(v59), 0LL, (long long)(76800) - 1)]);
      float v61 = (float)(v60);
      float v62 = (v61 * v25);
      float v63 = em_bf2f(em_f2bf((float)(v62)));
      float v64 = (v56 * v63);
      float v65 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
      int v66 = (int)((o2 + 5));
      int v67 = (1 * v66);
      int v68 = (v16 + v67);
      float v69 = em_bf2f(b2[EM_CLAMP((long long)(v68), 0LL, (long long)(76800) - 1)]);
      float v70 = (float)(v69);
      float v71 = (v70 * v25);
      float v72 = em_bf2f(em_f2bf((float)(v71)));
      float v73 = (v65 * v72);
      float v74 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
      int v75 = (int)((o2 + 6));
      int v76 = (1 * v75);
      int v77 = (v16 + v76);
      float v78 = em_bf2f(b2[EM_CLAMP((long long)(v77), 0LL, (long long)(76800) - 1)]);
      float v79 = (float)(v78);
      float v80 = (v79 * v25);
      float v81 = em_bf2f(em_f2bf((float)(v80)));
      float v82 = (v74 * v81);
      float v83 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
      int v84 = (int)((o2 + 7));
      int v85 = (1 * v84);
      int v86 = (v16 + v85);
      float v87 = em_bf2f(b2[EM_CLAMP((long long)(v86), 0LL, (long long)(76800) - 1)]);
      float v88 = (float)(v87);
      float v89 = (v88 * v25);
      float v90 = em_bf2f(em_f2bf((float)(v89)));
      float v91 = (v83 * v90);
      uint4 o_;
      reinterpret_cast<unsigned short*>(&o_)[0] = em_f2bf(v28);
      reinterpret_cast<unsigned short*>(&o_)[1] = em_f2bf(v37);
      reinterpret_cast<unsigned short*>(&o_)[2] = em_f2bf(v46);
      reinterpret_cast<unsigned short*>(&o_)[3] = em_f2bf(v55);
      reinterpret_cast<unsigned short*>(&o_)[4] = em_f2bf(v64);
      reinterpret_cast<unsigned short*>(&o_)[5] = em_f2bf(v73);
      reinterpret_cast<unsigned short*>(&o_)[6] = em_f2bf(v82);
      reinterpret_cast<unsigned short*>(&o_)[7] = em_f2bf(v91);
      *reinterpret_cast<uint4*>(&b0[o2]) = o_;
    }
  }
}



static __device__ __noinline__ void k0_mul_task(unsigned short* b0, const int* b1, const unsigned short* __restrict__ b2, const unsigned short* __restrict__ b3, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k0_mul_blk(b0, b1, b2, b3, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k1_sum_blk(unsigned short* b0, const unsigned short* b1, const unsigned short* __restrict__ b2, const unsigned em_bid_, const unsigned em_nblk_) {
  

  for (int row_ = em_bid_; row_ < 512; row_ += em_nblk_) {
    const int o2 = row_;
    float acc0 = 0.0f;
    for (int r_ = (int)threadIdx.x * 8; r_ < 256; r_ += 2048) {
      const int r0_3 = r_;
      const uint4 g0 = *reinterpret_cast<const uint4*>(&b1[r0_3]);
      float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
      const uint4 g1 = em_mk_ldw(&b2[(256*o2 + r0_3)]);
      float v1 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[0]);
      float v2 = (v0 * v1);
      float v3 = (float)(v2);
      float v4 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
      float v5 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[1]);
      float v6 = (v4 * v5);
      float v7 = (float)(v6);
      float v8 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
      float v9 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[2]);
      float v10 = (v8 * v9);
      float v11 = (float)(v10);
      float v12 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
      float v13 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[3]);
      float v14 = (v12 * v13);
      float v15 = (float)(v14);
      float v16 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
      float v17 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[4]);
      float v18 = (v16 * v17);
      float v19 = (float)(v18);
      float v20 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
      float v21 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[5]);
      float v22 = (v20 * v21);
      float v23 = (float)(v22);
      float v24 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
      float v25 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[6]);
      float v26 = (v24 * v25);
      float v27 = (float)(v26);
      float v28 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
      float v29 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[7]);
      float v30 = (v28 * v29);
      float v31 = (float)(v30);
      acc0 += v3;
      acc0 += v7;
      acc0 += v11;
      acc0 += v15;
      acc0 += v19;
      acc0 += v23;
      acc0 += v27;
      acc0 += v31;
    }
    acc0 = em_block_reduce<float, 0, 8>(acc0, em_red_float, (float)0.0f);
    if (threadIdx.x == 0) {
      float v32 = em_bf2f(em_f2bf((float)(acc0)));
      b0[o2] = em_f2bf(v32);
    }
  }
}



static __device__ __noinline__ void k1_sum_task(unsigned short* b0, const unsigned short* b1, const unsigned short* __restrict__ b2, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k1_sum_blk(b0, b1, b2, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k2_where_blk(unsigned short* b0, const unsigned short* b1, const long long* __restrict__ em_dims_, const unsigned em_bid_, const unsigned em_nblk_) {
  
  const long long d_P = em_dims_[0];
  const long long n_ = 16;
  for (long long c_ = (long long)em_bid_ * 256 + threadIdx.x; c_ < n_; c_ += (long long)em_nblk_ * 256) {
    long long t_o1 = c_ * 8;
    const long long o3 = t_o1 % 64; t_o1 /= 64;
    const long long o1 = t_o1;
    const uint4 g0 = *reinterpret_cast<const uint4*>(&b1[(64*o1 + o3 + 384)]);
    float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
    float v1 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
    float v2 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
    float v3 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
    float v4 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
    float v5 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
    float v6 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
    float v7 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
    uint4 o_;
    reinterpret_cast<unsigned short*>(&o_)[0] = em_f2bf(v0);
    reinterpret_cast<unsigned short*>(&o_)[1] = em_f2bf(v1);
    reinterpret_cast<unsigned short*>(&o_)[2] = em_f2bf(v2);
    reinterpret_cast<unsigned short*>(&o_)[3] = em_f2bf(v3);
    reinterpret_cast<unsigned short*>(&o_)[4] = em_f2bf(v4);
    reinterpret_cast<unsigned short*>(&o_)[5] = em_f2bf(v5);
    reinterpret_cast<unsigned short*>(&o_)[6] = em_f2bf(v6);
    reinterpret_cast<unsigned short*>(&o_)[7] = em_f2bf(v7);
    *reinterpret_cast<uint4*>(&b0[(64*d_P + 8192*o1 + o3)]) = o_;
  }
}



static __device__ __noinline__ void k2_where_task(unsigned short* b0, const unsigned short* b1, const long long* __restrict__ em_dims_, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k2_where_blk(b0, b1, em_dims_, b_, em_nblk_); }
}

static __device__ __forceinline__ void k3_where_blk(unsigned short* b0, const unsigned short* b1, const int* b2, const float* __restrict__ b3, const float* __restrict__ b4, const long long* __restrict__ em_dims_, const unsigned em_bid_, const unsigned em_nblk_) {
  
  const long long d_P = em_dims_[0];
  const long long n_ = 16;
  for (long long c_ = (long long)em_bid_ * 256 + threadIdx.x; c_ < n_; c_ += (long long)em_nblk_ * 256) {
    long long t_o1 = c_ * 8;
    const long long o3 = t_o1 % 64; t_o1 /= 64;
    const long long o1 = t_o1;
    const uint4 g0 = *reinterpret_cast<const uint4*>(&b1[(64*o1 + o3 + 256)]);
    float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
    int v1 = (int)b2[0];
    int v2 = (v1 < 0);
    int v3 = (v1 + 128);
    int v4 = (v2 ? v3 : v1);
    int v5 = (64 * v4);
    int v6 = (int)(o3);
    int v7 = (1 * v6);
    int v8 = (v5 + v7);
    float v9 = (float)b3[EM_CLAMP((long long)(v8), 0LL, (long long)(8192) - 1)];
    float v10 = em_bf2f(em_f2bf((float)(v9)));
    float v11 = (v0 * v10);
    float v12 = (float)b4[EM_CLAMP((long long)(v8), 0LL, (long long)(8192) - 1)];
    float v13 = em_bf2f(em_f2bf((float)(v12)));
    float v14 = ((31 < o3) ? em_bf2f(b1[(64*o1 + o3 + 224)]) : (float)0);
    int v15 = (int)((o3 < 32));
    float v16 = ((o3 < 32) ? em_bf2f(b1[(64*o1 + o3 + 288)]) : (float)0);
    float v17 = (-1.0f * v16);
    float v18 = (v15 ? v17 : 0.0f);
    float v19 = (v14 + v18);
    float v20 = (v13 * v19);
    float v21 = (v11 + v20);
    float v22 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
    int v23 = (int)((o3 + 1));
    int v24 = (1 * v23);
    int v25 = (v5 + v24);
    float v26 = (float)b3[EM_CLAMP((long long)(v25), 0LL, (long long)(8192) - 1)];
    float v27 = em_bf2f(em_f2bf((float)(v26)));
    float v28 = (v22 * v27);
    float v29 = (float)b4[EM_CLAMP((long long)(v25), 0LL, (long long)(8192) - 1)];
    float v30 = em_bf2f(em_f2bf((float)(v29)));
    float v31 = ((30 < o3) ? em_bf2f(b1[(64*o1 + o3 + 225)]) : (float)0);
    int v32 = (int)((o3 < 31));
    float v33 = ((o3 < 31) ? em_bf2f(b1[(64*o1 + o3 + 289)]) : (float)0);
    float v34 = (-1.0f * v33);
    float v35 = (v32 ? v34 : 0.0f);
    float v36 = (v31 + v35);
    float v37 = (v30 * v36);
    float v38 = (v28 + v37);
    float v39 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
    int v40 = (int)((o3 + 2));
    int v41 = (1 * v40);
    int v42 = (v5 + v41);
    float v43 = (float)b3[EM_CLAMP((long long)(v42), 0LL, (long long)(8192) - 1)];
    float v44 = em_bf2f(em_f2bf((float)(v43)));
    float v45 = (v39 * v44);
    float v46 = (float)b4[EM_CLAMP((long long)(v42), 0LL, (long long)(8192) - 1)];
    float v47 = em_bf2f(em_f2bf((float)(v46)));
    float v48 = ((29 < o3) ? em_bf2f(b1[(64*o1 + o3 + 226)]) : (float)0);
    int v49 = (int)((o3 < 30));
    float v50 = ((o3 < 30) ? em_bf2f(b1[(64*o1 + o3 + 290)]) : (float)0);
    float v51 = (-1.0f * v50);
    float v52 = (v49 ? v51 : 0.0f);
    float v53 = (v48 + v52);
    float v54 = (v47 * v53);
    float v55 = (v45 + v54);
    float v56 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
    int v57 = (int)((o3 + 3));
    int v58 = (1 * v57);
    int v59 = (v5 + v58);
    float v60 = (float)b3[EM_CLAMP((long long)(v59), 0LL, (long long)(8192) - 1)];
    float v61 = em_bf2f(em_f2bf((float)(v60)));
    float v62 = (v56 * v61);
    float v63 = (float)b4[EM_CLAMP((long long)(v59), 0LL, (long long)(8192) - 1)];
    float v64 = em_bf2f(em_f2bf((float)(v63)));
    float v65 = ((28 < o3) ? em_bf2f(b1[(64*o1 + o3 + 227)]) : (float)0);
    int v66 = (int)((o3 < 29));
    float v67 = ((o3 < 29) ? em_bf2f(b1[(64*o1 + o3 + 291)]) : (float)0);
    float v68 = (-1.0f * v67);
    float v69 = (v66 ? v68 : 0.0f);
    float v70 = (v65 + v69);
    float v71 = (v64 * v70);
    float v72 = (v62 + v71);
    float v73 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
    int v74 = (int)((o3 + 4));
    int v75 = (1 * v74);
    int v76 = (v5 + v75);
    float v77 = (float)b3[EM_CLAMP((long long)(v76), 0LL, (long long)(8192) - 1)];
    float v78 = em_bf2f(em_f2bf((float)(v77)));
    float v79 = (v73 * v78);
    float v80 = (float)b4[EM_CLAMP((long long)(v76), 0LL, (long long)(8192) - 1)];
    float v81 = em_bf2f(em_f2bf((float)(v80)));
    float v82 = ((27 < o3) ? em_bf2f(b1[(64*o1 + o3 + 228)]) : (float)0);
    int v83 = (int)((o3 < 28));
    float v84 = ((o3 < 28) ? em_bf2f(b1[(64*o1 + o3 + 292)]) : (float)0);
    float v85 = (-1.0f * v84);
    float v86 = (v83 ? v85 : 0.0f);
    float v87 = (v82 + v86);
    float v88 = (v81 * v87);
    float v89 = (v79 + v88);
    float v90 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
    int v91 = (int)((o3 + 5));
    int v92 = (1 * v91);
    int v93 = (v5 + v92);
    float v94 = (float)b3[EM_CLAMP((long long)(v93), 0LL, (long long)(8192) - 1)];
    float v95 = em_bf2f(em_f2bf((float)(v94)));
    float v96 = (v90 * v95);
    float v97 = (float)b4[EM_CLAMP((long long)(v93), 0LL, (long long)(8192) - 1)];
    float v98 = em_bf2f(em_f2bf((float)(v97)));
    float v99 = ((26 < o3) ? em_bf2f(b1[(64*o1 + o3 + 229)]) : (float)0);
    int v100 = (int)((o3 < 27));
    float v101 = ((o3 < 27) ? em_bf2f(b1[(64*o1 + o3 + 293)]) : (float)0);
    float v102 = (-1.0f * v101);
    float v103 = (v100 ? v102 : 0.0f);
    float v104 = (v99 + v103);
    float v105 = (v98 * v104);
    float v106 = (v96 + v105);
    float v107 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
    int v108 = (int)((o3 + 6));
    int v109 = (1 * v108);
    int v110 = (v5 + v109);
    float v111 = (float)b3[EM_CLAMP((long long)(v110), 0LL, (long long)(8192) - 1)];
    float v112 = em_bf2f(em_f2bf((float)(v111)));
    float v113 = (v107 * v112);
    float v114 = (float)b4[EM_CLAMP((long long)(v110), 0LL, (long long)(8192) - 1)];
    float v115 = em_bf2f(em_f2bf((float)(v114)));
    float v116 = ((25 < o3) ? em_bf2f(b1[(64*o1 + o3 + 230)]) : (float)0);
    int v117 = (int)((o3 < 26));
    float v118 = ((o3 < 26) ? em_bf2f(b1[(64*o1 + o3 + 294)]) : (float)0);
    float v119 = (-1.0f * v118);
    float v120 = (v117 ? v119 : 0.0f);
    float v121 = (v116 + v120);
    float v122 = (v115 * v121);
    float v123 = (v113 + v122);
    float v124 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
    int v125 = (int)((o3 + 7));
    int v126 = (1 * v125);
    int v127 = (v5 + v126);
    float v128 = (float)b3[EM_CLAMP((long long)(v127), 0LL, (long long)(8192) - 1)];
    float v129 = em_bf2f(em_f2bf((float)(v128)));
    float v130 = (v124 * v129);
    float v131 = (float)b4[EM_CLAMP((long long)(v127), 0LL, (long long)(8192) - 1)];
    float v132 = em_bf2f(em_f2bf((float)(v131)));
    float v133 = ((24 < o3) ? em_bf2f(b1[(64*o1 + o3 + 231)]) : (float)0);
    int v134 = (int)((o3 < 25));
    float v135 = ((o3 < 25) ? em_bf2f(b1[(64*o1 + o3 + 295)]) : (float)0);
    float v136 = (-1.0f * v135);
    float v137 = (v134 ? v136 : 0.0f);
    float v138 = (v133 + v137);
    float v139 = (v132 * v138);
    float v140 = (v130 + v139);
    uint4 o_;
    reinterpret_cast<unsigned short*>(&o_)[0] = em_f2bf(v21);
    reinterpret_cast<unsigned short*>(&o_)[1] = em_f2bf(v38);
    reinterpret_cast<unsigned short*>(&o_)[2] = em_f2bf(v55);
    reinterpret_cast<unsigned short*>(&o_)[3] = em_f2bf(v72);
    reinterpret_cast<unsigned short*>(&o_)[4] = em_f2bf(v89);
    reinterpret_cast<unsigned short*>(&o_)[5] = em_f2bf(v106);
    reinterpret_cast<unsigned short*>(&o_)[6] = em_f2bf(v123);
    reinterpret_cast<unsigned short*>(&o_)[7] = em_f2bf(v140);
    *reinterpret_cast<uint4*>(&b0[(64*d_P + 8192*o1 + o3)]) = o_;
  }
}



static __device__ __noinline__ void k3_where_task(unsigned short* b0, const unsigned short* b1, const int* b2, const float* __restrict__ b3, const float* __restrict__ b4, const long long* __restrict__ em_dims_, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k3_where_blk(b0, b1, b2, b3, b4, em_dims_, b_, em_nblk_); }
}

static __device__ __forceinline__ void k4_sum_blk(unsigned short* b0, const int* b1, const float* __restrict__ b2, const unsigned short* b3, const float* __restrict__ b4, const unsigned short* b5, const int* b6, const unsigned short* b7, float* em_ws_, const long long* __restrict__ em_dims_, const unsigned em_bid_, const unsigned em_nblk_) {
  
  const long long d_P = em_dims_[0];
  
  unsigned short* Qs = reinterpret_cast<unsigned short*>(em_dyn_smem);
  unsigned short* ring_ = Qs + 1024;
  float* wm_ = reinterpret_cast<float*>(Qs + 1024);  /* after the loop: [W][16] maxima, sums, rows */
  float* wl_ = wm_ + 64;
  float* wo_ = wl_ + 64;
  float* bm_ = wo_ + 4096;  /* the block's combined triple */
  float* bl_ = bm_ + 16;
  float* bo_ = bl_ + 16;
  const int tid_ = threadIdx.x, warp_ = tid_ >> 5, lane_ = tid_ & 31;
  const unsigned rank_ = 0u;
  long long blk_ = em_bid_ / 1;
  const unsigned split_ = (unsigned)(blk_ % 8); blk_ /= 8;
  const long long grp_ = blk_;  /* this group's partials and arrival counter in em_ws_ */
  const long long o2 = blk_;
  const long long nk_ = (d_P + 1);
  const long long kend_ = nk_;
  long long kbeg_ = kend_;
  for (int r_ = 0; r_ < 2; ++r_) {
    if (!(true)) continue;
    const long long o3 = r_;
    int v0 = (int)(d_P);
    int v1 = (v0 + 0);
    int v2 = (int)b6[0];
    int v3 = (v1 < v2);
    int v4 = (v3 ? v1 : v2);
    const long long f_ = (long long)(v4);
    kbeg_ = f_ < kbeg_ ? f_ : kbeg_;
  }
  kbeg_ = kbeg_ > 0 ? kbeg_ : 0;
  const long long chunk_ = (kend_ - kbeg_ + 255) / 256 * 32;
  const long long k0_ = kbeg_ + (split_ * 1u + rank_) * chunk_, k1_ = (k0_ + chunk_ < kend_ ? k0_ + chunk_ : kend_);
  const long long ntk_ = (k1_ > k0_ ? (k1_ - k0_ + 31) / 32 : 0);  /* this block's key tiles */
  unsigned short* my_ = ring_ + warp_ * 8192;
  if (warp_ + 0 < ntk_) {
    for (int c_ = lane_; c_ < 256; c_ += 32) {
      const int r_ = c_ / 8, ch_ = c_ % 8;
      const long long kr_ = k0_ + (warp_ + 0) * 32 + r_;
      em_cp16(my_ + (0) * 4096 + 0 + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3), b5 + (kr_ < k1_ ? (8*ch_ + 64*kr_ + 8192*o2) : 0), kr_ < k1_);
    }
    for (int c_ = lane_; c_ < 256; c_ += 32) {
      const int r_ = c_ / 8, ch_ = c_ % 8;
      const long long kr_ = k0_ + (warp_ + 0) * 32 + r_;
      em_cp16(my_ + (0) * 4096 + 2048 + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3), b7 + (kr_ < k1_ ? (8*ch_ + 64*kr_ + 8192*o2) : 0), kr_ < k1_);
    }
  }
  em_cp_commit();
  for (int c_ = tid_; c_ < 128; c_ += 128) {
    const int r_ = c_ / 8, ch_ = c_ % 8;
    unsigned short* dst_ = Qs + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3);
    if (r_ < 2) {
      const long long o3 = r_;
      uint4 pk_ = make_uint4(0, 0, 0, 0);
      #pragma unroll
      for (int e_ = 0; e_ < 8; ++e_) {
        const long long r1_5 = ch_ * 8 + e_;
        int v5 = (int)b1[0];
        int v6 = (v5 < 0);
        int v7 = (v5 + 128);
        int v8 = (v6 ? v7 : v5);
        int v9 = (64 * v8);
        int v10 = (int)(r1_5);
        int v11 = (v10 * 1);
        int v12 = (v9 + v11);
        float v13 = (float)b2[EM_CLAMP((long long)(v12), 0LL, (long long)(8192) - 1)];
        float v14 = em_bf2f(em_f2bf((float)(v13)));
        float v15 = em_bf2f(b3[(128*o2 + 64*o3 + r1_5)]);
        float v16 = (v14 * v15);
        float v17 = (float)b4[EM_CLAMP((long long)(v12), 0LL, (long long)(8192) - 1)];
        float v18 = em_bf2f(em_f2bf((float)(v17)));
        int v19 = (int)((r1_5 < 32));
        float v20 = ((r1_5 < 32) ? em_bf2f(b3[(128*o2 + 64*o3 + r1_5 + 32)]) : (float)0);
        float v21 = (-1.0f * v20);
        float v22 = (v19 ? v21 : 0.0f);
        float v23 = ((31 < r1_5) ? em_bf2f(b3[(128*o2 + 64*o3 + r1_5 - 32)]) : (float)0);
        float v24 = (v22 + v23);
        float v25 = (v18 * v24);
        float v26 = (v16 + v25);
        reinterpret_cast<unsigned short*>(&pk_)[e_] = em_f2bf(v26);
      }
      *reinterpret_cast<uint4*>(dst_) = pk_;
    } else { *reinterpret_cast<uint4*>(dst_) = make_uint4(0, 0, 0, 0); }
  }
  asm volatile("cp.async.wait_group 1;" ::: "memory"); __syncthreads();  /* q is in shared memory */
  unsigned qf_[4][4];
  #pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const int r_ = lane_ & 15, ch_ = kk * 2 + (lane_ >> 4);
    em_ldsm4(qf_[kk], Qs + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3));
  }
  float m_[2] = {-INFINITY, -INFINITY}, l_[2] = {0.f, 0.f};
  float o_[8][4];
  #pragma unroll
  for (int n = 0; n < 8; ++n) o_[n][0] = o_[n][1] = o_[n][2] = o_[n][3] = 0.f;
  const int qrow_ = lane_ >> 2;
  int it_ = 0;
  for (long long t_ = warp_; t_ < ntk_; t_ += 4, ++it_) {
    if (t_ + 4 < ntk_) {
      for (int c_ = lane_; c_ < 256; c_ += 32) {
        const int r_ = c_ / 8, ch_ = c_ % 8;
        const long long kr_ = k0_ + (t_ + 4) * 32 + r_;
        em_cp16(my_ + ((it_ + 1) % 2) * 4096 + 0 + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3), b5 + (kr_ < k1_ ? (8*ch_ + 64*kr_ + 8192*o2) : 0), kr_ < k1_);
      }
      for (int c_ = lane_; c_ < 256; c_ += 32) {
        const int r_ = c_ / 8, ch_ = c_ % 8;
        const long long kr_ = k0_ + (t_ + 4) * 32 + r_;
        em_cp16(my_ + ((it_ + 1) % 2) * 4096 + 2048 + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3), b7 + (kr_ < k1_ ? (8*ch_ + 64*kr_ + 8192*o2) : 0), kr_ < k1_);
      }
    }
    em_cp_commit();
    asm volatile("cp.async.wait_group 1;" ::: "memory"); __syncwarp();  /* tile t_ has landed */
    const int slot_ = it_ % 2;
    const unsigned short* Kt = my_ + slot_ * 4096;
    const unsigned short* Vt = Kt + 2048;
    float s_[4][4];
    #pragma unroll
    for (int n = 0; n < 4; ++n) s_[n][0] = s_[n][1] = s_[n][2] = s_[n][3] = 0.f;
    #pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      #pragma unroll
      for (int n2 = 0; n2 < 2; ++n2) {
        unsigned b_[4];
        const int r_ = n2 * 16 + (lane_ & 7) + ((lane_ >> 4) << 3), ch_ = kk * 2 + ((lane_ >> 3) & 1);
        em_ldsm4(b_, Kt + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3));
        EM_MMA16816("bf16", s_[2 * n2], qf_[kk], b_[0], b_[1]);
        EM_MMA16816("bf16", s_[2 * n2 + 1], qf_[kk], b_[2], b_[3]);
      }
    }
    #pragma unroll
    for (int n = 0; n < 4; ++n) {
      #pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int r = qrow_ + ((c >> 1) << 3);
        const long long kj_ = k0_ + t_ * 32 + n * 8 + ((lane_ & 3) << 1) + (c & 1);
        const float acc1 = s_[n][c];
        float x_ = -INFINITY;
        if (kj_ < k1_ && r < 2) {
          const long long o3 = r;
          int v27 = (int)(d_P);
          int v28 = (v27 + 0);
          int v29 = (int)(kj_);
          int v30 = (v28 < v29);
          int v31 = (v30 ? 0 : 1);
          int v32 = (int)b6[0];
          int v33 = (v28 < v32);
          int v34 = (v33 ? v28 : v32);
          int v35 = (v29 < v34);
          int v36 = (v35 ? 0 : 1);
          int v37 = (v31 * v36);
          float v38 = em_bf2f(em_f2bf((float)(acc1)));
          float v39 = (float)(v38);
          float v40 = (v39 * 0.125f);
          float v41 = (v37 ? v40 : (-INFINITY));
          x_ = v41;
        }
        s_[n][c] = x_;
      }
    }
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx_ = m_[h];
      #pragma unroll
      for (int n = 0; n < 4; ++n) mx_ = fmaxf(mx_, fmaxf(s_[n][2 * h], s_[n][2 * h + 1]));
      mx_ = fmaxf(mx_, __shfl_xor_sync(0xffffffffu, mx_, 1));
      mx_ = fmaxf(mx_, __shfl_xor_sync(0xffffffffu, mx_, 2));
      const float mc_ = (mx_ == -INFINITY ? 0.f : mx_) * 1.4426950408889634f;
      const float a_ = em_ex2(fmaf(m_[h], 1.4426950408889634f, -mc_));
      m_[h] = mx_;
      float ls_ = 0.f;
      #pragma unroll
      for (int n = 0; n < 4; ++n) {
        s_[n][2 * h] = em_ex2(fmaf(s_[n][2 * h], 1.4426950408889634f, -mc_));
        s_[n][2 * h + 1] = em_ex2(fmaf(s_[n][2 * h + 1], 1.4426950408889634f, -mc_));
        ls_ += s_[n][2 * h] + s_[n][2 * h + 1];
      }
      l_[h] = l_[h] * a_ + ls_;
      #pragma unroll
      for (int n = 0; n < 8; ++n) { o_[n][2 * h] *= a_; o_[n][2 * h + 1] *= a_; }
    }
    #pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      unsigned pa_[4] = {em_pack_bf16(s_[2 * kk][0], s_[2 * kk][1]), em_pack_bf16(s_[2 * kk][2], s_[2 * kk][3]), em_pack_bf16(s_[2 * kk + 1][0], s_[2 * kk + 1][1]), em_pack_bf16(s_[2 * kk + 1][2], s_[2 * kk + 1][3])};
      #pragma unroll
      for (int n2 = 0; n2 < 4; ++n2) {
        unsigned b_[4];
        const int r_ = kk * 16 + (lane_ & 7) + (((lane_ >> 3) & 1) << 3), ch_ = n2 * 2 + (lane_ >> 4);
        em_ldsm4t(b_, Vt + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3));
        EM_MMA16816("bf16", o_[2 * n2], pa_, b_[0], b_[1]);
        EM_MMA16816("bf16", o_[2 * n2 + 1], pa_, b_[2], b_[3]);
      }
    }
    __syncwarp();  /* this slot is refilled next */
  }
  em_cp_wait_all();
  __syncthreads();  /* every warp is done with the ring: its space holds the triples now */
  #pragma unroll
  for (int h = 0; h < 2; ++h) {
    l_[h] += __shfl_xor_sync(0xffffffffu, l_[h], 1);
    l_[h] += __shfl_xor_sync(0xffffffffu, l_[h], 2);
    const int r = qrow_ + 8 * h;
    if ((lane_ & 3) == 0) { wm_[warp_ * 16 + r] = m_[h]; wl_[warp_ * 16 + r] = l_[h]; }
    #pragma unroll
    for (int n = 0; n < 8; ++n) {
      wo_[(warp_ * 16 + r) * 64 + n * 8 + ((lane_ & 3) << 1)] = o_[n][2 * h];
      wo_[(warp_ * 16 + r) * 64 + n * 8 + ((lane_ & 3) << 1) + 1] = o_[n][2 * h + 1];
    }
  }
  __syncthreads();
  for (int t = tid_; t < 128; t += 128) {
    const int r = t / 64, col = t % 64;
    float M = -INFINITY;
    for (int q = 0; q < 4; ++q) M = fmaxf(M, wm_[q * 16 + r]);
    const float Mc = (M == -INFINITY ? 0.f : M) * 1.4426950408889634f;
    float L = 0.f, O = 0.f;
    for (int q = 0; q < 4; ++q) {
      const float s = em_ex2(fmaf(wm_[q * 16 + r], 1.4426950408889634f, -Mc));
      L += s * wl_[q * 16 + r]; O += s * wo_[(q * 16 + r) * 64 + col];
    }
    bo_[r * 64 + col] = O;
    if (col == 0) { bm_[r] = M; bl_[r] = L; }
  }
  __syncthreads();
  {  /* the outputs spread over the cluster's blocks, each reading every block's triple */
    for (int t = rank_ * 128 + tid_; t < 128; t += 128) {
      const int r = t / 64;
      const long long o4 = t % 64;
      const float M = bm_[r], L = bl_[r], O = bo_[r * 64 + o4];
      float* part_ = em_ws_ + 32 + (grp_ * 8 + split_) * 132;
      part_[r * 64 + o4] = O;
      if (o4 == 0) { part_[128 + r] = M; part_[130 + r] = L; }
    }
  }
  __shared__ unsigned last_;
  __threadfence(); __syncthreads();  /* this block's partials are visible to the device */
  if (tid_ == 0) {
    unsigned* count_ = reinterpret_cast<unsigned*>(em_ws_) + grp_;
    last_ = atomicAdd(count_, 1u) == 7u;
    if (last_) *count_ = 0u;  /* every other block of the group has arrived: none adds again */
  }
  __syncthreads();
  if (!last_) return;
  __threadfence();
  const float* parts_ = em_ws_ + 32 + grp_ * 1056;
  for (int t = tid_; t < 128; t += 128u) {
    const int r = t / 64;
    const long long o4 = t % 64;
    float M = -INFINITY;
    for (int q = 0; q < 8; ++q) M = fmaxf(M, __ldcg(parts_ + q * 132 + 128 + r));
    const float Mc = (M == -INFINITY ? 0.f : M) * 1.4426950408889634f;
    float L = 0.f, O = 0.f;
    for (int q = 0; q < 8; ++q) {
      const float* p_ = parts_ + q * 132;
      const float s = em_ex2(fmaf(__ldcg(p_ + 128 + r), 1.4426950408889634f, -Mc));
      L += s * __ldcg(p_ + 130 + r); O += s * __ldcg(p_ + r * 64 + o4);
    }
    const long long o3 = r;
    const float acc0 = O / L;
    float v42 = em_bf2f(em_f2bf((float)(acc0)));
    b0[(128*o2 + 64*o3 + o4)] = em_f2bf(v42);
  }
}



static __device__ __noinline__ void k4_sum_task(unsigned short* b0, const int* b1, const float* __restrict__ b2, const unsigned short* b3, const float* __restrict__ b4, const unsigned short* b5, const int* b6, const unsigned short* b7, float* em_ws_, const long long* __restrict__ em_dims_, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k4_sum_blk(b0, b1, b2, b3, b4, b5, b6, b7, em_ws_, em_dims_, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k5_sum_blk(unsigned short* b0, const unsigned short* __restrict__ b1, const unsigned short* b2, const unsigned em_bid_, const unsigned em_nblk_) {
  

  for (int row_ = em_bid_; row_ < 256; row_ += em_nblk_) {
    const int o2 = row_;
    float acc0 = 0.0f;
    for (int r_ = (int)threadIdx.x * 8; r_ < 256; r_ += 2048) {
      const int r0_3 = r_;
      const uint4 g0 = em_mk_ldw(&b1[(256*o2 + r0_3)]);
      float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
      const uint4 g1 = *reinterpret_cast<const uint4*>(&b2[r0_3]);
      float v1 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[0]);
      float v2 = (v0 * v1);
      float v3 = (float)(v2);
      float v4 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
      float v5 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[1]);
      float v6 = (v4 * v5);
      float v7 = (float)(v6);
      float v8 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
      float v9 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[2]);
      float v10 = (v8 * v9);
      float v11 = (float)(v10);
      float v12 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
      float v13 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[3]);
      float v14 = (v12 * v13);
      float v15 = (float)(v14);
      float v16 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
      float v17 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[4]);
      float v18 = (v16 * v17);
      float v19 = (float)(v18);
      float v20 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
      float v21 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[5]);
      float v22 = (v20 * v21);
      float v23 = (float)(v22);
      float v24 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
      float v25 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[6]);
      float v26 = (v24 * v25);
      float v27 = (float)(v26);
      float v28 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
      float v29 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[7]);
      float v30 = (v28 * v29);
      float v31 = (float)(v30);
      acc0 += v3;
      acc0 += v7;
      acc0 += v11;
      acc0 += v15;
      acc0 += v19;
      acc0 += v23;
      acc0 += v27;
      acc0 += v31;
    }
    acc0 = em_block_reduce<float, 0, 8>(acc0, em_red_float, (float)0.0f);
    if (threadIdx.x == 0) {
      float v32 = em_bf2f(em_f2bf((float)(acc0)));
      b0[o2] = em_f2bf(v32);
    }
  }
}



static __device__ __noinline__ void k5_sum_task(unsigned short* b0, const unsigned short* __restrict__ b1, const unsigned short* b2, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k5_sum_blk(b0, b1, b2, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k6_mul_blk(unsigned short* b0, const unsigned short* b1, const int* b2, const unsigned short* __restrict__ b3, const unsigned short* __restrict__ b4, const unsigned em_bid_, const unsigned em_nblk_) {
  

  for (int row_ = em_bid_; row_ < 1; row_ += em_nblk_) {
    float acc0 = 0.0f;
    for (int r_ = (int)threadIdx.x * 8; r_ < 256; r_ += 2048) {
      const int r0_2 = r_;
      const uint4 g0 = *reinterpret_cast<const uint4*>(&b1[r0_2]);
      float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
      int v1 = (int)b2[0];
      int v2 = (v1 < 0);
      int v3 = (v1 + 300);
      int v4 = (v2 ? v3 : v1);
      int v5 = (256 * v4);
      int v6 = (int)(r0_2);
      int v7 = (1 * v6);
      int v8 = (v5 + v7);
      float v9 = em_bf2f(b3[EM_CLAMP((long long)(v8), 0LL, (long long)(76800) - 1)]);
      float v10 = (v0 + v9);
      float v11 = (float)(v10);
      float v12 = (v11 * v11);
      float v13 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
      int v14 = (int)((r0_2 + 1));
      int v15 = (1 * v14);
      int v16 = (v5 + v15);
      float v17 = em_bf2f(b3[EM_CLAMP((long long)(v16), 0LL, (long long)(76800) - 1)]);
      float v18 = (v13 + v17);
      float v19 = (float)(v18);
      float v20 = (v19 * v19);
      float v21 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
      int v22 = (int)((r0_2 + 2));
      int v23 = (1 * v22);
      int v24 = (v5 + v23);
      float v25 = em_bf2f(b3[EM_CLAMP((long long)(v24), 0LL, (long long)(76800) - 1)]);
      float v26 = (v21 + v25);
      float v27 = (float)(v26);
      float v28 = (v27 * v27);
      float v29 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
      int v30 = (int)((r0_2 + 3));
      int v31 = (1 * v30);
      int v32 = (v5 + v31);
      float v33 = em_bf2f(b3[EM_CLAMP((long long)(v32), 0LL, (long long)(76800) - 1)]);
      float v34 = (v29 + v33);
      float v35 = (float)(v34);
      float v36 = (v35 * v35);
      float v37 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
      int v38 = (int)((r0_2 + 4));
      int v39 = (1 * v38);
      int v40 = (v5 + v39);
      float v41 = em_bf2f(b3[EM_CLAMP((long long)(v40), 0LL, (long long)(76800) - 1)]);
      float v42 = (v37 + v41);
      float v43 = (float)(v42);
      float v44 = (v43 * v43);
      float v45 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
      int v46 = (int)((r0_2 + 5));
      int v47 = (1 * v46);
      int v48 = (v5 + v47);
      float v49 = em_bf2f(b3[EM_CLAMP((long long)(v48), 0LL, (long long)(76800) - 1)]);
      float v50 = (v45 + v49);
      float v51 = (float)(v50);
      float v52 = (v51 * v51);
      float v53 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
      int v54 = (int)((r0_2 + 6));
      int v55 = (1 * v54);
      int v56 = (v5 + v55);
      float v57 = em_bf2f(b3[EM_CLAMP((long long)(v56), 0LL, (long long)(76800) - 1)]);
      float v58 = (v53 + v57);
      float v59 = (float)(v58);
      float v60 = (v59 * v59);
      float v61 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
      int v62 = (int)((r0_2 + 7));
      int v63 = (1 * v62);
      int v64 = (v5 + v63);
      float v65 = em_bf2f(b3[EM_CLAMP((long long)(v64), 0LL, (long long)(76800) - 1)]);
      float v66 = (v61 + v65);
      float v67 = (float)(v66);
      float v68 = (v67 * v67);
      acc0 += v12;
      acc0 += v20;
      acc0 += v28;
      acc0 += v36;
      acc0 += v44;
      acc0 += v52;
      acc0 += v60;
      acc0 += v68;
    }
    acc0 = em_block_reduce<float, 0, 8>(acc0, em_red_float, (float)0.0f);
    for (int j_ = (int)threadIdx.x * 8; j_ < 256; j_ += 2048) {
      const int o2 = j_;
      const uint4 g1 = *reinterpret_cast<const uint4*>(&b1[o2]);
      float v69 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[0]);
      int v70 = (int)b2[0];
      int v71 = (v70 < 0);
      int v72 = (v70 + 300);
      int v73 = (v71 ? v72 : v70);
      int v74 = (256 * v73);
      int v75 = (int)(o2);
      int v76 = (1 * v75);
      int v77 = (v74 + v76);
      float v78 = em_bf2f(b3[EM_CLAMP((long long)(v77), 0LL, (long long)(76800) - 1)]);
      float v79 = (v69 + v78);
      float v80 = (float)(v79);
      float v81 = (acc0 * 0.00390625f);
      float v82 = (1e-06f + v81);
      float v83 = sqrtf(v82);
      float v84 = em_rcp(v83);
      float v85 = (v80 * v84);
      float v86 = em_bf2f(em_f2bf((float)(v85)));
      const uint4 g2 = em_mk_ldw(&b4[o2]);
      float v87 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[0]);
      float v88 = (v86 * v87);
      float v89 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[1]);
      int v90 = (int)((o2 + 1));
      int v91 = (1 * v90);
      int v92 = (v74 + v91);
      float v93 = em_bf2f(b3[EM_CLAMP((long long)(v92), 0LL, (long long)(76800) - 1)]);
      float v94 = (v89 + v93);
      float v95 = (float)(v94);
      float v96 = (v95 * v84);
      float v97 = em_bf2f(em_f2bf((float)(v96)));
      float v98 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[1]);
      float v99 = (v97 * v98);
      float v100 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[2]);
      int v101 = (int)((o2 + 2));
      int v102 = (1 * v101);
      int v103 = (v74 + v102);
      float v104 = em_bf2f(b3[EM_CLAMP((long long)(v103), 0LL, (long long)(76800) - 1)]);
      float v105 = (v100 + v104);
      float v106 = (float)(v105);
      float v107 = (v106 * v84);
      float v108 = em_bf2f(em_f2bf((float)(v107)));
      float v109 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[2]);
      float v110 = (v108 * v109);
      float v111 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[3]);
      int v112 = (int)((o2 + 3));
      int v113 = (1 * v112);
      int v114 = (v74 + v113);
      float v115 = em_bf2f(b3[EM_CLAMP((long long)(v114), 0LL, (long long)(76800) - 1)]);
      float v116 = (v111 + v115);
      float v117 = (float)(v116);
      float v118 = (v117 * v84);
      float v119 = em_bf2f(em_f2bf((float)(v118)));
      float v120 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[3]);
      float v121 = (v119 * v120);
      float v122 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[4]);
      int v123 = (int)((o2 + 4));
      int v124 = (1 * v123);
      int v125 = (v74 + v124);
      float v126 = em_bf2f(b3[EM_CLAMP((long long)(v125), 0LL, (long long)(76800) - 1)]);
      float v127 = (v122 + v126);
      float v128 = (float)(v127);
      float v129 = (v128 * v84);
      float v130 = em_bf2f(em_f2bf((float)(v129)));
      float v131 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[4]);
      float v132 = (v130 * v131);
      float v133 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[5]);
      int v134 = (int)((o2 + 5));
      int v135 = (1 * v134);
      int v136 = (v74 + v135);
      float v137 = em_bf2f(b3[EM_CLAMP((long long)(v136), 0LL, (long long)(76800) - 1)]);
      float v138 = (v133 + v137);
      float v139 = (float)(v138);
      float v140 = (v139 * v84);
      float v141 = em_bf2f(em_f2bf((float)(v140)));
      float v142 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[5]);
      float v143 = (v141 * v142);
      float v144 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[6]);
      int v145 = (int)((o2 + 6));
      int v146 = (1 * v145);
      int v147 = (v74 + v146);
      float v148 = em_bf2f(b3[EM_CLAMP((long long)(v147), 0LL, (long long)(76800) - 1)]);
      float v149 = (v144 + v148);
      float v150 = (float)(v149);
      float v151 = (v150 * v84);
      float v152 = em_bf2f(em_f2bf((float)(v151)));
      float v153 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[6]);
      float v154 = (v152 * v153);
      float v155 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[7]);
      int v156 = (int)((o2 + 7));
      int v157 = (1 * v156);
      int v158 = (v74 + v157);
      float v159 = em_bf2f(b3[EM_CLAMP((long long)(v158), 0LL, (long long)(76800) - 1)]);
      float v160 = (v155 + v159);
      float v161 = (float)(v160);
      float v162 = (v161 * v84);
      float v163 = em_bf2f(em_f2bf((float)(v162)));
      float v164 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[7]);
      float v165 = (v163 * v164);
      uint4 o_;
      reinterpret_cast<unsigned short*>(&o_)[0] = em_f2bf(v88);
      reinterpret_cast<unsigned short*>(&o_)[1] = em_f2bf(v99);
      reinterpret_cast<unsigned short*>(&o_)[2] = em_f2bf(v110);
      reinterpret_cast<unsigned short*>(&o_)[3] = em_f2bf(v121);
      reinterpret_cast<unsigned short*>(&o_)[4] = em_f2bf(v132);
      reinterpret_cast<unsigned short*>(&o_)[5] = em_f2bf(v143);
      reinterpret_cast<unsigned short*>(&o_)[6] = em_f2bf(v154);
      reinterpret_cast<unsigned short*>(&o_)[7] = em_f2bf(v165);
      *reinterpret_cast<uint4*>(&b0[o2]) = o_;
    }
  }
}



static __device__ __noinline__ void k6_mul_task(unsigned short* b0, const unsigned short* b1, const int* b2, const unsigned short* __restrict__ b3, const unsigned short* __restrict__ b4, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k6_mul_blk(b0, b1, b2, b3, b4, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k7_mul_blk(unsigned short* b0, const unsigned short* __restrict__ b1, const unsigned short* b2, const unsigned short* __restrict__ b3, const unsigned em_bid_, const unsigned em_nblk_) {
  
  const int lane_ = threadIdx.x & 31;
  for (int row_ = (int)em_bid_ * 4 + (threadIdx.x >> 5); row_ < 512; row_ += (int)em_nblk_ * 4) {
    const int o2 = row_;
    uint4 rc0[1];
    float acc0 = 0.0f;
    #pragma unroll
    for (int k_ = 0; k_ < 1; ++k_) {
      const int p_ = ((int)k_ * 32 + lane_) * 8;
      const uint4 g0 = em_mk_ldw(&b1[(256*o2 + p_)]);
      float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
      rc0[k_] = *reinterpret_cast<const uint4*>(&b2[p_]);
      float v1 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[0]);
      float v2 = (v0 * v1);
      float v3 = (float)(v2);
      float v4 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
      float v5 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[1]);
      float v6 = (v4 * v5);
      float v7 = (float)(v6);
      float v8 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
      float v9 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[2]);
      float v10 = (v8 * v9);
      float v11 = (float)(v10);
      float v12 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
      float v13 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[3]);
      float v14 = (v12 * v13);
      float v15 = (float)(v14);
      float v16 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
      float v17 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[4]);
      float v18 = (v16 * v17);
      float v19 = (float)(v18);
      float v20 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
      float v21 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[5]);
      float v22 = (v20 * v21);
      float v23 = (float)(v22);
      float v24 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
      float v25 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[6]);
      float v26 = (v24 * v25);
      float v27 = (float)(v26);
      float v28 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
      float v29 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[7]);
      float v30 = (v28 * v29);
      float v31 = (float)(v30);
      acc0 += v3;
      acc0 += v7;
      acc0 += v11;
      acc0 += v15;
      acc0 += v19;
      acc0 += v23;
      acc0 += v27;
      acc0 += v31;
    }
    acc0 = em_warp_reduce<float, 0>(acc0);
    float acc1 = 0.0f;
    #pragma unroll
    for (int k_ = 0; k_ < 1; ++k_) {
      const int p_ = ((int)k_ * 32 + lane_) * 8;
      const uint4 g1 = em_mk_ldw(&b3[(256*o2 + p_)]);
      float v32 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[0]);
      float v33 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[0]);
      float v34 = (v32 * v33);
      float v35 = (float)(v34);
      float v36 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[1]);
      float v37 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[1]);
      float v38 = (v36 * v37);
      float v39 = (float)(v38);
      float v40 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[2]);
      float v41 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[2]);
      float v42 = (v40 * v41);
      float v43 = (float)(v42);
      float v44 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[3]);
      float v45 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[3]);
      float v46 = (v44 * v45);
      float v47 = (float)(v46);
      float v48 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[4]);
      float v49 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[4]);
      float v50 = (v48 * v49);
      float v51 = (float)(v50);
      float v52 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[5]);
      float v53 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[5]);
      float v54 = (v52 * v53);
      float v55 = (float)(v54);
      float v56 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[6]);
      float v57 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[6]);
      float v58 = (v56 * v57);
      float v59 = (float)(v58);
      float v60 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[7]);
      float v61 = em_bf2f(reinterpret_cast<const unsigned short*>(&rc0[k_])[7]);
      float v62 = (v60 * v61);
      float v63 = (float)(v62);
      acc1 += v35;
      acc1 += v39;
      acc1 += v43;
      acc1 += v47;
      acc1 += v51;
      acc1 += v55;
      acc1 += v59;
      acc1 += v63;
    }
    acc1 = em_warp_reduce<float, 0>(acc1);
    if (lane_ == 0) {
      float v64 = (float)(acc0);
      int v65 = (v64 < 0.0f);
      float v66 = (v64 * -1.0f);
      float v67 = (v65 ? v66 : v64);
      float v68 = (v67 * -1.0f);
      float v69 = (v68 * 1.4426950408889634f);
      float v70 = exp2f(v69);
      float v71 = (v65 ? v70 : 1.0f);
      float v72 = (1.0f + v70);
      float v73 = em_rcp(v72);
      float v74 = (v71 * v73);
      float v75 = (v64 * v74);
      float v76 = em_bf2f(em_f2bf((float)(v75)));
      float v77 = (v76 * acc1);
      b0[o2] = em_f2bf(v77);
    }
  }
}



static __device__ __noinline__ void k7_mul_task(unsigned short* b0, const unsigned short* __restrict__ b1, const unsigned short* b2, const unsigned short* __restrict__ b3, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k7_mul_blk(b0, b1, b2, b3, b_, em_nblk_); }
}

static __device__ __forceinline__ void k8_add_blk(unsigned short* b0, const unsigned short* b1, const unsigned short* __restrict__ b2, const unsigned short* b3, const int* b4, const unsigned short* __restrict__ b5, const unsigned em_bid_, const unsigned em_nblk_) {
  

  for (int row_ = em_bid_; row_ < 256; row_ += em_nblk_) {
    const int o2 = row_;
    float acc0 = 0.0f;
    for (int r_ = (int)threadIdx.x * 8; r_ < 512; r_ += 2048) {
      const int r0_3 = r_;
      const uint4 g0 = *reinterpret_cast<const uint4*>(&b1[r0_3]);
      float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
      const uint4 g1 = em_mk_ldw(&b2[(512*o2 + r0_3)]);
      float v1 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[0]);
      float v2 = (v0 * v1);
      float v3 = (float)(v2);
      float v4 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
      float v5 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[1]);
      float v6 = (v4 * v5);
      float v7 = (float)(v6);
      float v8 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
      float v9 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[2]);
      float v10 = (v8 * v9);
      float v11 = (float)(v10);
      float v12 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
      float v13 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[3]);
      float v14 = (v12 * v13);
      float v15 = (float)(v14);
      float v16 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
      float v17 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[4]);
      float v18 = (v16 * v17);
      float v19 = (float)(v18);
      float v20 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
      float v21 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[5]);
      float v22 = (v20 * v21);
      float v23 = (float)(v22);
      float v24 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
      float v25 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[6]);
      float v26 = (v24 * v25);
      float v27 = (float)(v26);
      float v28 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
      float v29 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[7]);
      float v30 = (v28 * v29);
      float v31 = (float)(v30);
      acc0 += v3;
      acc0 += v7;
      acc0 += v11;
      acc0 += v15;
      acc0 += v19;
      acc0 += v23;
      acc0 += v27;
      acc0 += v31;
    }
    acc0 = em_block_reduce<float, 0, 8>(acc0, em_red_float, (float)0.0f);
    if (threadIdx.x == 0) {
      float v32 = em_bf2f(b3[o2]);
      int v33 = (int)b4[0];
      int v34 = (v33 < 0);
      int v35 = (v33 + 300);
      int v36 = (v34 ? v35 : v33);
      int v37 = (256 * v36);
      int v38 = (int)(o2);
      int v39 = (1 * v38);
      int v40 = (v37 + v39);
      float v41 = em_bf2f(b5[EM_CLAMP((long long)(v40), 0LL, (long long)(76800) - 1)]);
      float v42 = (v32 + v41);
      float v43 = (v42 + acc0);
      b0[o2] = em_f2bf(v43);
    }
  }
}



static __device__ __noinline__ void k8_add_task(unsigned short* b0, const unsigned short* b1, const unsigned short* __restrict__ b2, const unsigned short* b3, const int* b4, const unsigned short* __restrict__ b5, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k8_add_blk(b0, b1, b2, b3, b4, b5, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k9_mul_blk(unsigned short* b0, const unsigned short* b1, const unsigned short* __restrict__ b2, const unsigned em_bid_, const unsigned em_nblk_) {
  

  for (int row_ = em_bid_; row_ < 1; row_ += em_nblk_) {
    float acc0 = 0.0f;
    for (int r_ = (int)threadIdx.x * 8; r_ < 256; r_ += 2048) {
      const int r0_2 = r_;
      const uint4 g0 = *reinterpret_cast<const uint4*>(&b1[r0_2]);
      float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
      float v1 = (float)(v0);
      float v2 = (v1 * v1);
      float v3 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
      float v4 = (float)(v3);
      float v5 = (v4 * v4);
      float v6 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
      float v7 = (float)(v6);
      float v8 = (v7 * v7);
      float v9 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
      float v10 = (float)(v9);
      float v11 = (v10 * v10);
      float v12 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
      float v13 = (float)(v12);
      float v14 = (v13 * v13);
      float v15 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
      float v16 = (float)(v15);
      float v17 = (v16 * v16);
      float v18 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
      float v19 = (float)(v18);
      float v20 = (v19 * v19);
      float v21 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
      float v22 = (float)(v21);
      float v23 = (v22 * v22);
      acc0 += v2;
      acc0 += v5;
      acc0 += v8;
      acc0 += v11;
      acc0 += v14;
      acc0 += v17;
      acc0 += v20;
      acc0 += v23;
    }
    acc0 = em_block_reduce<float, 0, 8>(acc0, em_red_float, (float)0.0f);
    for (int j_ = (int)threadIdx.x * 8; j_ < 256; j_ += 2048) {
      const int o2 = j_;
      const uint4 g1 = *reinterpret_cast<const uint4*>(&b1[o2]);
      float v24 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[0]);
      float v25 = (float)(v24);
      float v26 = (acc0 * 0.00390625f);
      float v27 = (1e-06f + v26);
      float v28 = sqrtf(v27);
      float v29 = em_rcp(v28);
      float v30 = (v25 * v29);
      float v31 = em_bf2f(em_f2bf((float)(v30)));
      const uint4 g2 = em_mk_ldw(&b2[o2]);
      float v32 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[0]);
      float v33 = (v31 * v32);
      float v34 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[1]);
      float v35 = (float)(v34);
      float v36 = (v35 * v29);
      float v37 = em_bf2f(em_f2bf((float)(v36)));
      float v38 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[1]);
      float v39 = (v37 * v38);
      float v40 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[2]);
      float v41 = (float)(v40);
      float v42 = (v41 * v29);
      float v43 = em_bf2f(em_f2bf((float)(v42)));
      float v44 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[2]);
      float v45 = (v43 * v44);
      float v46 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[3]);
      float v47 = (float)(v46);
      float v48 = (v47 * v29);
      float v49 = em_bf2f(em_f2bf((float)(v48)));
      float v50 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[3]);
      float v51 = (v49 * v50);
      float v52 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[4]);
      float v53 = (float)(v52);
      float v54 = (v53 * v29);
      float v55 = em_bf2f(em_f2bf((float)(v54)));
      float v56 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[4]);
      float v57 = (v55 * v56);
      float v58 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[5]);
      float v59 = (float)(v58);
      float v60 = (v59 * v29);
      float v61 = em_bf2f(em_f2bf((float)(v60)));
      float v62 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[5]);
      float v63 = (v61 * v62);
      float v64 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[6]);
      float v65 = (float)(v64);
      float v66 = (v65 * v29);
      float v67 = em_bf2f(em_f2bf((float)(v66)));
      float v68 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[6]);
      float v69 = (v67 * v68);
      float v70 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[7]);
      float v71 = (float)(v70);
      float v72 = (v71 * v29);
      float v73 = em_bf2f(em_f2bf((float)(v72)));
      float v74 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[7]);
      float v75 = (v73 * v74);
      uint4 o_;
      reinterpret_cast<unsigned short*>(&o_)[0] = em_f2bf(v33);
      reinterpret_cast<unsigned short*>(&o_)[1] = em_f2bf(v39);
      reinterpret_cast<unsigned short*>(&o_)[2] = em_f2bf(v45);
      reinterpret_cast<unsigned short*>(&o_)[3] = em_f2bf(v51);
      reinterpret_cast<unsigned short*>(&o_)[4] = em_f2bf(v57);
      reinterpret_cast<unsigned short*>(&o_)[5] = em_f2bf(v63);
      reinterpret_cast<unsigned short*>(&o_)[6] = em_f2bf(v69);
      reinterpret_cast<unsigned short*>(&o_)[7] = em_f2bf(v75);
      *reinterpret_cast<uint4*>(&b0[o2]) = o_;
    }
  }
}



static __device__ __noinline__ void k9_mul_task(unsigned short* b0, const unsigned short* b1, const unsigned short* __restrict__ b2, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k9_mul_blk(b0, b1, b2, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k10_sum_blk(unsigned short* b0, const unsigned short* __restrict__ b1, const unsigned short* b2, const unsigned em_bid_, const unsigned em_nblk_) {
  

  for (int row_ = em_bid_; row_ < 512; row_ += em_nblk_) {
    const int o2 = row_;
    float acc0 = 0.0f;
    for (int r_ = (int)threadIdx.x * 8; r_ < 256; r_ += 2048) {
      const int r0_3 = r_;
      const uint4 g0 = em_mk_ldw(&b1[(256*o2 + r0_3)]);
      float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
      const uint4 g1 = *reinterpret_cast<const uint4*>(&b2[r0_3]);
      float v1 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[0]);
      float v2 = (v0 * v1);
      float v3 = (float)(v2);
      float v4 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
      float v5 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[1]);
      float v6 = (v4 * v5);
      float v7 = (float)(v6);
      float v8 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
      float v9 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[2]);
      float v10 = (v8 * v9);
      float v11 = (float)(v10);
      float v12 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
      float v13 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[3]);
      float v14 = (v12 * v13);
      float v15 = (float)(v14);
      float v16 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
      float v17 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[4]);
      float v18 = (v16 * v17);
      float v19 = (float)(v18);
      float v20 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
      float v21 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[5]);
      float v22 = (v20 * v21);
      float v23 = (float)(v22);
      float v24 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
      float v25 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[6]);
      float v26 = (v24 * v25);
      float v27 = (float)(v26);
      float v28 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
      float v29 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[7]);
      float v30 = (v28 * v29);
      float v31 = (float)(v30);
      acc0 += v3;
      acc0 += v7;
      acc0 += v11;
      acc0 += v15;
      acc0 += v19;
      acc0 += v23;
      acc0 += v27;
      acc0 += v31;
    }
    acc0 = em_block_reduce<float, 0, 8>(acc0, em_red_float, (float)0.0f);
    if (threadIdx.x == 0) {
      float v32 = em_bf2f(em_f2bf((float)(acc0)));
      b0[o2] = em_f2bf(v32);
    }
  }
}



static __device__ __noinline__ void k10_sum_task(unsigned short* b0, const unsigned short* __restrict__ b1, const unsigned short* b2, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k10_sum_blk(b0, b1, b2, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k13_sum_blk(unsigned short* b0, const unsigned short* b1, const unsigned short* b2, const int* b3, const float* __restrict__ b4, const float* __restrict__ b5, const int* b6, const unsigned short* b7, float* em_ws_, const long long* __restrict__ em_dims_, const unsigned em_bid_, const unsigned em_nblk_) {
  
  const long long d_P = em_dims_[0];
  
  unsigned short* Qs = reinterpret_cast<unsigned short*>(em_dyn_smem);
  unsigned short* ring_ = Qs + 1024;
  float* wm_ = reinterpret_cast<float*>(Qs + 1024);  /* after the loop: [W][16] maxima, sums, rows */
  float* wl_ = wm_ + 64;
  float* wo_ = wl_ + 64;
  float* bm_ = wo_ + 4096;  /* the block's combined triple */
  float* bl_ = bm_ + 16;
  float* bo_ = bl_ + 16;
  const int tid_ = threadIdx.x, warp_ = tid_ >> 5, lane_ = tid_ & 31;
  const unsigned rank_ = 0u;
  long long blk_ = em_bid_ / 1;
  const unsigned split_ = (unsigned)(blk_ % 8); blk_ /= 8;
  const long long grp_ = blk_;  /* this group's partials and arrival counter in em_ws_ */
  const long long o2 = blk_;
  const long long nk_ = (d_P + 1);
  const long long kend_ = nk_;
  long long kbeg_ = kend_;
  for (int r_ = 0; r_ < 2; ++r_) {
    if (!(true)) continue;
    const long long o3 = r_;
    int v0 = (int)(d_P);
    int v1 = (v0 + 0);
    int v2 = (int)b6[0];
    int v3 = (v1 < v2);
    int v4 = (v3 ? v1 : v2);
    const long long f_ = (long long)(v4);
    kbeg_ = f_ < kbeg_ ? f_ : kbeg_;
  }
  kbeg_ = kbeg_ > 0 ? kbeg_ : 0;
  const long long chunk_ = (kend_ - kbeg_ + 255) / 256 * 32;
  const long long k0_ = kbeg_ + (split_ * 1u + rank_) * chunk_, k1_ = (k0_ + chunk_ < kend_ ? k0_ + chunk_ : kend_);
  const long long ntk_ = (k1_ > k0_ ? (k1_ - k0_ + 31) / 32 : 0);  /* this block's key tiles */
  unsigned short* my_ = ring_ + warp_ * 8192;
  if (warp_ + 0 < ntk_) {
    for (int c_ = lane_; c_ < 256; c_ += 32) {
      const int r_ = c_ / 8, ch_ = c_ % 8;
      const long long kr_ = k0_ + (warp_ + 0) * 32 + r_;
      em_cp16(my_ + (0) * 4096 + 0 + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3), b1 + (kr_ < k1_ ? (8*ch_ + 64*kr_ + 8192*o2) : 0), kr_ < k1_);
    }
    for (int c_ = lane_; c_ < 256; c_ += 32) {
      const int r_ = c_ / 8, ch_ = c_ % 8;
      const long long kr_ = k0_ + (warp_ + 0) * 32 + r_;
      em_cp16(my_ + (0) * 4096 + 2048 + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3), b7 + (kr_ < k1_ ? (8*ch_ + 64*kr_ + 8192*o2) : 0), kr_ < k1_);
    }
  }
  em_cp_commit();
  for (int c_ = tid_; c_ < 128; c_ += 128) {
    const int r_ = c_ / 8, ch_ = c_ % 8;
    unsigned short* dst_ = Qs + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3);
    if (r_ < 2) {
      const long long o3 = r_;
      uint4 pk_ = make_uint4(0, 0, 0, 0);
      #pragma unroll
      for (int e_ = 0; e_ < 8; ++e_) {
        const long long r1_5 = ch_ * 8 + e_;
        float v5 = em_bf2f(b2[(128*o2 + 64*o3 + r1_5)]);
        int v6 = (int)b3[0];
        int v7 = (v6 < 0);
        int v8 = (v6 + 128);
        int v9 = (v7 ? v8 : v6);
        int v10 = (64 * v9);
        int v11 = (int)(r1_5);
        int v12 = (v11 * 1);
        int v13 = (v10 + v12);
        float v14 = (float)b4[EM_CLAMP((long long)(v13), 0LL, (long long)(8192) - 1)];
        float v15 = em_bf2f(em_f2bf((float)(v14)));
        float v16 = (v5 * v15);
        int v17 = (int)((r1_5 < 32));
        float v18 = ((r1_5 < 32) ? em_bf2f(b2[(128*o2 + 64*o3 + r1_5 + 32)]) : (float)0);
        float v19 = (v18 * -1.0f);
        float v20 = (v17 ? v19 : 0.0f);
        float v21 = ((31 < r1_5) ? em_bf2f(b2[(128*o2 + 64*o3 + r1_5 - 32)]) : (float)0);
        float v22 = (v20 + v21);
        float v23 = (float)b5[EM_CLAMP((long long)(v13), 0LL, (long long)(8192) - 1)];
        float v24 = em_bf2f(em_f2bf((float)(v23)));
        float v25 = (v22 * v24);
        float v26 = (v16 + v25);
        reinterpret_cast<unsigned short*>(&pk_)[e_] = em_f2bf(v26);
      }
      *reinterpret_cast<uint4*>(dst_) = pk_;
    } else { *reinterpret_cast<uint4*>(dst_) = make_uint4(0, 0, 0, 0); }
  }
  asm volatile("cp.async.wait_group 1;" ::: "memory"); __syncthreads();  /* q is in shared memory */
  unsigned qf_[4][4];
  #pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const int r_ = lane_ & 15, ch_ = kk * 2 + (lane_ >> 4);
    em_ldsm4(qf_[kk], Qs + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3));
  }
  float m_[2] = {-INFINITY, -INFINITY}, l_[2] = {0.f, 0.f};
  float o_[8][4];
  #pragma unroll
  for (int n = 0; n < 8; ++n) o_[n][0] = o_[n][1] = o_[n][2] = o_[n][3] = 0.f;
  const int qrow_ = lane_ >> 2;
  int it_ = 0;
  for (long long t_ = warp_; t_ < ntk_; t_ += 4, ++it_) {
    if (t_ + 4 < ntk_) {
      for (int c_ = lane_; c_ < 256; c_ += 32) {
        const int r_ = c_ / 8, ch_ = c_ % 8;
        const long long kr_ = k0_ + (t_ + 4) * 32 + r_;
        em_cp16(my_ + ((it_ + 1) % 2) * 4096 + 0 + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3), b1 + (kr_ < k1_ ? (8*ch_ + 64*kr_ + 8192*o2) : 0), kr_ < k1_);
      }
      for (int c_ = lane_; c_ < 256; c_ += 32) {
        const int r_ = c_ / 8, ch_ = c_ % 8;
        const long long kr_ = k0_ + (t_ + 4) * 32 + r_;
        em_cp16(my_ + ((it_ + 1) % 2) * 4096 + 2048 + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3), b7 + (kr_ < k1_ ? (8*ch_ + 64*kr_ + 8192*o2) : 0), kr_ < k1_);
      }
    }
    em_cp_commit();
    asm volatile("cp.async.wait_group 1;" ::: "memory"); __syncwarp();  /* tile t_ has landed */
    const int slot_ = it_ % 2;
    const unsigned short* Kt = my_ + slot_ * 4096;
    const unsigned short* Vt = Kt + 2048;
    float s_[4][4];
    #pragma unroll
    for (int n = 0; n < 4; ++n) s_[n][0] = s_[n][1] = s_[n][2] = s_[n][3] = 0.f;
    #pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      #pragma unroll
      for (int n2 = 0; n2 < 2; ++n2) {
        unsigned b_[4];
        const int r_ = n2 * 16 + (lane_ & 7) + ((lane_ >> 4) << 3), ch_ = kk * 2 + ((lane_ >> 3) & 1);
        em_ldsm4(b_, Kt + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3));
        EM_MMA16816("bf16", s_[2 * n2], qf_[kk], b_[0], b_[1]);
        EM_MMA16816("bf16", s_[2 * n2 + 1], qf_[kk], b_[2], b_[3]);
      }
    }
    #pragma unroll
    for (int n = 0; n < 4; ++n) {
      #pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int r = qrow_ + ((c >> 1) << 3);
        const long long kj_ = k0_ + t_ * 32 + n * 8 + ((lane_ & 3) << 1) + (c & 1);
        const float acc1 = s_[n][c];
        float x_ = -INFINITY;
        if (kj_ < k1_ && r < 2) {
          const long long o3 = r;
          int v27 = (int)(d_P);
          int v28 = (v27 + 0);
          int v29 = (int)(kj_);
          int v30 = (v28 < v29);
          int v31 = (v30 ? 0 : 1);
          int v32 = (int)b6[0];
          int v33 = (v28 < v32);
          int v34 = (v33 ? v28 : v32);
          int v35 = (v29 < v34);
          int v36 = (v35 ? 0 : 1);
          int v37 = (v31 * v36);
          float v38 = em_bf2f(em_f2bf((float)(acc1)));
          float v39 = (float)(v38);
          float v40 = (v39 * 0.125f);
          float v41 = (v37 ? v40 : (-INFINITY));
          x_ = v41;
        }
        s_[n][c] = x_;
      }
    }
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx_ = m_[h];
      #pragma unroll
      for (int n = 0; n < 4; ++n) mx_ = fmaxf(mx_, fmaxf(s_[n][2 * h], s_[n][2 * h + 1]));
      mx_ = fmaxf(mx_, __shfl_xor_sync(0xffffffffu, mx_, 1));
      mx_ = fmaxf(mx_, __shfl_xor_sync(0xffffffffu, mx_, 2));
      const float mc_ = (mx_ == -INFINITY ? 0.f : mx_) * 1.4426950408889634f;
      const float a_ = em_ex2(fmaf(m_[h], 1.4426950408889634f, -mc_));
      m_[h] = mx_;
      float ls_ = 0.f;
      #pragma unroll
      for (int n = 0; n < 4; ++n) {
        s_[n][2 * h] = em_ex2(fmaf(s_[n][2 * h], 1.4426950408889634f, -mc_));
        s_[n][2 * h + 1] = em_ex2(fmaf(s_[n][2 * h + 1], 1.4426950408889634f, -mc_));
        ls_ += s_[n][2 * h] + s_[n][2 * h + 1];
      }
      l_[h] = l_[h] * a_ + ls_;
      #pragma unroll
      for (int n = 0; n < 8; ++n) { o_[n][2 * h] *= a_; o_[n][2 * h + 1] *= a_; }
    }
    #pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      unsigned pa_[4] = {em_pack_bf16(s_[2 * kk][0], s_[2 * kk][1]), em_pack_bf16(s_[2 * kk][2], s_[2 * kk][3]), em_pack_bf16(s_[2 * kk + 1][0], s_[2 * kk + 1][1]), em_pack_bf16(s_[2 * kk + 1][2], s_[2 * kk + 1][3])};
      #pragma unroll
      for (int n2 = 0; n2 < 4; ++n2) {
        unsigned b_[4];
        const int r_ = kk * 16 + (lane_ & 7) + (((lane_ >> 3) & 1) << 3), ch_ = n2 * 2 + (lane_ >> 4);
        em_ldsm4t(b_, Vt + r_ * 64 + ((ch_ ^ (r_ & 7)) << 3));
        EM_MMA16816("bf16", o_[2 * n2], pa_, b_[0], b_[1]);
        EM_MMA16816("bf16", o_[2 * n2 + 1], pa_, b_[2], b_[3]);
      }
    }
    __syncwarp();  /* this slot is refilled next */
  }
  em_cp_wait_all();
  __syncthreads();  /* every warp is done with the ring: its space holds the triples now */
  #pragma unroll
  for (int h = 0; h < 2; ++h) {
    l_[h] += __shfl_xor_sync(0xffffffffu, l_[h], 1);
    l_[h] += __shfl_xor_sync(0xffffffffu, l_[h], 2);
    const int r = qrow_ + 8 * h;
    if ((lane_ & 3) == 0) { wm_[warp_ * 16 + r] = m_[h]; wl_[warp_ * 16 + r] = l_[h]; }
    #pragma unroll
    for (int n = 0; n < 8; ++n) {
      wo_[(warp_ * 16 + r) * 64 + n * 8 + ((lane_ & 3) << 1)] = o_[n][2 * h];
      wo_[(warp_ * 16 + r) * 64 + n * 8 + ((lane_ & 3) << 1) + 1] = o_[n][2 * h + 1];
    }
  }
  __syncthreads();
  for (int t = tid_; t < 128; t += 128) {
    const int r = t / 64, col = t % 64;
    float M = -INFINITY;
    for (int q = 0; q < 4; ++q) M = fmaxf(M, wm_[q * 16 + r]);
    const float Mc = (M == -INFINITY ? 0.f : M) * 1.4426950408889634f;
    float L = 0.f, O = 0.f;
    for (int q = 0; q < 4; ++q) {
      const float s = em_ex2(fmaf(wm_[q * 16 + r], 1.4426950408889634f, -Mc));
      L += s * wl_[q * 16 + r]; O += s * wo_[(q * 16 + r) * 64 + col];
    }
    bo_[r * 64 + col] = O;
    if (col == 0) { bm_[r] = M; bl_[r] = L; }
  }
  __syncthreads();
  {  /* the outputs spread over the cluster's blocks, each reading every block's triple */
    for (int t = rank_ * 128 + tid_; t < 128; t += 128) {
      const int r = t / 64;
      const long long o4 = t % 64;
      const float M = bm_[r], L = bl_[r], O = bo_[r * 64 + o4];
      float* part_ = em_ws_ + 32 + (grp_ * 8 + split_) * 132;
      part_[r * 64 + o4] = O;
      if (o4 == 0) { part_[128 + r] = M; part_[130 + r] = L; }
    }
  }
  __shared__ unsigned last_;
  __threadfence(); __syncthreads();  /* this block's partials are visible to the device */
  if (tid_ == 0) {
    unsigned* count_ = reinterpret_cast<unsigned*>(em_ws_) + grp_;
    last_ = atomicAdd(count_, 1u) == 7u;
    if (last_) *count_ = 0u;  /* every other block of the group has arrived: none adds again */
  }
  __syncthreads();
  if (!last_) return;
  __threadfence();
  const float* parts_ = em_ws_ + 32 + grp_ * 1056;
  for (int t = tid_; t < 128; t += 128u) {
    const int r = t / 64;
    const long long o4 = t % 64;
    float M = -INFINITY;
    for (int q = 0; q < 8; ++q) M = fmaxf(M, __ldcg(parts_ + q * 132 + 128 + r));
    const float Mc = (M == -INFINITY ? 0.f : M) * 1.4426950408889634f;
    float L = 0.f, O = 0.f;
    for (int q = 0; q < 8; ++q) {
      const float* p_ = parts_ + q * 132;
      const float s = em_ex2(fmaf(__ldcg(p_ + 128 + r), 1.4426950408889634f, -Mc));
      L += s * __ldcg(p_ + 130 + r); O += s * __ldcg(p_ + r * 64 + o4);
    }
    const long long o3 = r;
    const float acc0 = O / L;
    float v42 = em_bf2f(em_f2bf((float)(acc0)));
    b0[(128*o2 + 64*o3 + o4)] = em_f2bf(v42);
  }
}



static __device__ __noinline__ void k13_sum_task(unsigned short* b0, const unsigned short* b1, const unsigned short* b2, const int* b3, const float* __restrict__ b4, const float* __restrict__ b5, const int* b6, const unsigned short* b7, float* em_ws_, const long long* __restrict__ em_dims_, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k13_sum_blk(b0, b1, b2, b3, b4, b5, b6, b7, em_ws_, em_dims_, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k15_mul_blk(unsigned short* b0, const unsigned short* b1, const unsigned short* b2, const unsigned short* __restrict__ b3, const unsigned em_bid_, const unsigned em_nblk_) {
  

  for (int row_ = em_bid_; row_ < 1; row_ += em_nblk_) {
    float acc0 = 0.0f;
    for (int r_ = (int)threadIdx.x * 8; r_ < 256; r_ += 2048) {
      const int r0_2 = r_;
      const uint4 g0 = *reinterpret_cast<const uint4*>(&b1[r0_2]);
      float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
      const uint4 g1 = *reinterpret_cast<const uint4*>(&b2[r0_2]);
      float v1 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[0]);
      float v2 = (v0 + v1);
      float v3 = (float)(v2);
      float v4 = (v3 * v3);
      float v5 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
      float v6 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[1]);
      float v7 = (v5 + v6);
      float v8 = (float)(v7);
      float v9 = (v8 * v8);
      float v10 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
      float v11 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[2]);
      float v12 = (v10 + v11);
      float v13 = (float)(v12);
      float v14 = (v13 * v13);
      float v15 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
      float v16 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[3]);
      float v17 = (v15 + v16);
      float v18 = (float)(v17);
      float v19 = (v18 * v18);
      float v20 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
      float v21 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[4]);
      float v22 = (v20 + v21);
      float v23 = (float)(v22);
      float v24 = (v23 * v23);
      float v25 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
      float v26 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[5]);
      float v27 = (v25 + v26);
      float v28 = (float)(v27);
      float v29 = (v28 * v28);
      float v30 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
      float v31 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[6]);
      float v32 = (v30 + v31);
      float v33 = (float)(v32);
      float v34 = (v33 * v33);
      float v35 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
      float v36 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[7]);
      float v37 = (v35 + v36);
      float v38 = (float)(v37);
      float v39 = (v38 * v38);
      acc0 += v4;
      acc0 += v9;
      acc0 += v14;
      acc0 += v19;
      acc0 += v24;
      acc0 += v29;
      acc0 += v34;
      acc0 += v39;
    }
    acc0 = em_block_reduce<float, 0, 8>(acc0, em_red_float, (float)0.0f);
    for (int j_ = (int)threadIdx.x * 8; j_ < 256; j_ += 2048) {
      const int o2 = j_;
      float v40 = (acc0 * 0.00390625f);
      float v41 = (1e-06f + v40);
      float v42 = sqrtf(v41);
      float v43 = em_rcp(v42);
      const uint4 g2 = *reinterpret_cast<const uint4*>(&b1[o2]);
      float v44 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[0]);
      const uint4 g3 = *reinterpret_cast<const uint4*>(&b2[o2]);
      float v45 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[0]);
      float v46 = (v44 + v45);
      float v47 = (float)(v46);
      float v48 = (v43 * v47);
      float v49 = em_bf2f(em_f2bf((float)(v48)));
      const uint4 g4 = em_mk_ldw(&b3[o2]);
      float v50 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[0]);
      float v51 = (v49 * v50);
      float v52 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[1]);
      float v53 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[1]);
      float v54 = (v52 + v53);
      float v55 = (float)(v54);
      float v56 = (v43 * v55);
      float v57 = em_bf2f(em_f2bf((float)(v56)));
      float v58 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[1]);
      float v59 = (v57 * v58);
      float v60 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[2]);
      float v61 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[2]);
      float v62 = (v60 + v61);
      float v63 = (float)(v62);
      float v64 = (v43 * v63);
      float v65 = em_bf2f(em_f2bf((float)(v64)));
      float v66 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[2]);
      float v67 = (v65 * v66);
      float v68 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[3]);
      float v69 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[3]);
      float v70 = (v68 + v69);
      float v71 = (float)(v70);
      float v72 = (v43 * v71);
      float v73 = em_bf2f(em_f2bf((float)(v72)));
      float v74 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[3]);
      float v75 = (v73 * v74);
      float v76 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[4]);
      float v77 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[4]);
      float v78 = (v76 + v77);
      float v79 = (float)(v78);
      float v80 = (v43 * v79);
      float v81 = em_bf2f(em_f2bf((float)(v80)));
      float v82 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[4]);
      float v83 = (v81 * v82);
      float v84 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[5]);
      float v85 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[5]);
      float v86 = (v84 + v85);
      float v87 = (float)(v86);
      float v88 = (v43 * v87);
      float v89 = em_bf2f(em_f2bf((float)(v88)));
      float v90 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[5]);
      float v91 = (v89 * v90);
      float v92 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[6]);
      float v93 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[6]);
      float v94 = (v92 + v93);
      float v95 = (float)(v94);
      float v96 = (v43 * v95);
      float v97 = em_bf2f(em_f2bf((float)(v96)));
      float v98 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[6]);
      float v99 = (v97 * v98);
      float v100 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[7]);
      float v101 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[7]);
      float v102 = (v100 + v101);
      float v103 = (float)(v102);
      float v104 = (v43 * v103);
      float v105 = em_bf2f(em_f2bf((float)(v104)));
      float v106 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[7]);
      float v107 = (v105 * v106);
      uint4 o_;
      reinterpret_cast<unsigned short*>(&o_)[0] = em_f2bf(v51);
      reinterpret_cast<unsigned short*>(&o_)[1] = em_f2bf(v59);
      reinterpret_cast<unsigned short*>(&o_)[2] = em_f2bf(v67);
      reinterpret_cast<unsigned short*>(&o_)[3] = em_f2bf(v75);
      reinterpret_cast<unsigned short*>(&o_)[4] = em_f2bf(v83);
      reinterpret_cast<unsigned short*>(&o_)[5] = em_f2bf(v91);
      reinterpret_cast<unsigned short*>(&o_)[6] = em_f2bf(v99);
      reinterpret_cast<unsigned short*>(&o_)[7] = em_f2bf(v107);
      *reinterpret_cast<uint4*>(&b0[o2]) = o_;
    }
  }
}



static __device__ __noinline__ void k15_mul_task(unsigned short* b0, const unsigned short* b1, const unsigned short* b2, const unsigned short* __restrict__ b3, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k15_mul_blk(b0, b1, b2, b3, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k17_sum_blk(unsigned short* b0, const unsigned short* b1, const unsigned short* __restrict__ b2, const unsigned em_bid_, const unsigned em_nblk_) {
  

  for (int row_ = em_bid_; row_ < 256; row_ += em_nblk_) {
    const int o2 = row_;
    float acc0 = 0.0f;
    for (int r_ = (int)threadIdx.x * 8; r_ < 512; r_ += 2048) {
      const int r0_3 = r_;
      const uint4 g0 = *reinterpret_cast<const uint4*>(&b1[r0_3]);
      float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
      const uint4 g1 = em_mk_ldw(&b2[(512*o2 + r0_3)]);
      float v1 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[0]);
      float v2 = (v0 * v1);
      float v3 = (float)(v2);
      float v4 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
      float v5 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[1]);
      float v6 = (v4 * v5);
      float v7 = (float)(v6);
      float v8 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
      float v9 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[2]);
      float v10 = (v8 * v9);
      float v11 = (float)(v10);
      float v12 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
      float v13 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[3]);
      float v14 = (v12 * v13);
      float v15 = (float)(v14);
      float v16 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
      float v17 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[4]);
      float v18 = (v16 * v17);
      float v19 = (float)(v18);
      float v20 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
      float v21 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[5]);
      float v22 = (v20 * v21);
      float v23 = (float)(v22);
      float v24 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
      float v25 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[6]);
      float v26 = (v24 * v25);
      float v27 = (float)(v26);
      float v28 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
      float v29 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[7]);
      float v30 = (v28 * v29);
      float v31 = (float)(v30);
      acc0 += v3;
      acc0 += v7;
      acc0 += v11;
      acc0 += v15;
      acc0 += v19;
      acc0 += v23;
      acc0 += v27;
      acc0 += v31;
    }
    acc0 = em_block_reduce<float, 0, 8>(acc0, em_red_float, (float)0.0f);
    if (threadIdx.x == 0) {
      float v32 = em_bf2f(em_f2bf((float)(acc0)));
      b0[o2] = em_f2bf(v32);
    }
  }
}



static __device__ __noinline__ void k17_sum_task(unsigned short* b0, const unsigned short* b1, const unsigned short* __restrict__ b2, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k17_sum_blk(b0, b1, b2, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k18_mul_blk(unsigned short* b0, const unsigned short* b1, const unsigned short* b2, const unsigned short* b3, const unsigned short* __restrict__ b4, const unsigned em_bid_, const unsigned em_nblk_) {
  

  for (int row_ = em_bid_; row_ < 1; row_ += em_nblk_) {
    float acc0 = 0.0f;
    for (int r_ = (int)threadIdx.x * 8; r_ < 256; r_ += 2048) {
      const int r0_1 = r_;
      const uint4 g0 = *reinterpret_cast<const uint4*>(&b1[r0_1]);
      float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
      const uint4 g1 = *reinterpret_cast<const uint4*>(&b2[r0_1]);
      float v1 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[0]);
      float v2 = (v0 + v1);
      const uint4 g2 = *reinterpret_cast<const uint4*>(&b3[r0_1]);
      float v3 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[0]);
      float v4 = (v2 + v3);
      float v5 = (float)(v4);
      float v6 = (v5 * v5);
      float v7 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
      float v8 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[1]);
      float v9 = (v7 + v8);
      float v10 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[1]);
      float v11 = (v9 + v10);
      float v12 = (float)(v11);
      float v13 = (v12 * v12);
      float v14 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
      float v15 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[2]);
      float v16 = (v14 + v15);
      float v17 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[2]);
      float v18 = (v16 + v17);
      float v19 = (float)(v18);
      float v20 = (v19 * v19);
      float v21 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
      float v22 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[3]);
      float v23 = (v21 + v22);
      float v24 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[3]);
      float v25 = (v23 + v24);
      float v26 = (float)(v25);
      float v27 = (v26 * v26);
      float v28 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
      float v29 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[4]);
      float v30 = (v28 + v29);
      float v31 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[4]);
      float v32 = (v30 + v31);
      float v33 = (float)(v32);
      float v34 = (v33 * v33);
      float v35 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
      float v36 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[5]);
      float v37 = (v35 + v36);
      float v38 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[5]);
      float v39 = (v37 + v38);
      float v40 = (float)(v39);
      float v41 = (v40 * v40);
      float v42 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
      float v43 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[6]);
      float v44 = (v42 + v43);
      float v45 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[6]);
      float v46 = (v44 + v45);
      float v47 = (float)(v46);
      float v48 = (v47 * v47);
      float v49 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
      float v50 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[7]);
      float v51 = (v49 + v50);
      float v52 = em_bf2f(reinterpret_cast<const unsigned short*>(&g2)[7]);
      float v53 = (v51 + v52);
      float v54 = (float)(v53);
      float v55 = (v54 * v54);
      acc0 += v6;
      acc0 += v13;
      acc0 += v20;
      acc0 += v27;
      acc0 += v34;
      acc0 += v41;
      acc0 += v48;
      acc0 += v55;
    }
    acc0 = em_block_reduce<float, 0, 8>(acc0, em_red_float, (float)0.0f);
    for (int j_ = (int)threadIdx.x * 8; j_ < 256; j_ += 2048) {
      const int o1 = j_;
      float v56 = (0.00390625f * acc0);
      float v57 = (1e-06f + v56);
      float v58 = sqrtf(v57);
      float v59 = em_rcp(v58);
      const uint4 g3 = *reinterpret_cast<const uint4*>(&b1[o1]);
      float v60 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[0]);
      const uint4 g4 = *reinterpret_cast<const uint4*>(&b2[o1]);
      float v61 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[0]);
      float v62 = (v60 + v61);
      const uint4 g5 = *reinterpret_cast<const uint4*>(&b3[o1]);
      float v63 = em_bf2f(reinterpret_cast<const unsigned short*>(&g5)[0]);
      float v64 = (v62 + v63);
      float v65 = (float)(v64);
      float v66 = (v59 * v65);
      float v67 = em_bf2f(em_f2bf((float)(v66)));
      const uint4 g6 = em_mk_ldw(&b4[o1]);
      float v68 = em_bf2f(reinterpret_cast<const unsigned short*>(&g6)[0]);
      float v69 = (v67 * v68);
      float v70 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[1]);
      float v71 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[1]);
      float v72 = (v70 + v71);
      float v73 = em_bf2f(reinterpret_cast<const unsigned short*>(&g5)[1]);
      float v74 = (v72 + v73);
      float v75 = (float)(v74);
      float v76 = (v59 * v75);
      float v77 = em_bf2f(em_f2bf((float)(v76)));
      float v78 = em_bf2f(reinterpret_cast<const unsigned short*>(&g6)[1]);
      float v79 = (v77 * v78);
      float v80 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[2]);
      float v81 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[2]);
      float v82 = (v80 + v81);
      float v83 = em_bf2f(reinterpret_cast<const unsigned short*>(&g5)[2]);
      float v84 = (v82 + v83);
      float v85 = (float)(v84);
      float v86 = (v59 * v85);
      float v87 = em_bf2f(em_f2bf((float)(v86)));
      float v88 = em_bf2f(reinterpret_cast<const unsigned short*>(&g6)[2]);
      float v89 = (v87 * v88);
      float v90 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[3]);
      float v91 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[3]);
      float v92 = (v90 + v91);
      float v93 = em_bf2f(reinterpret_cast<const unsigned short*>(&g5)[3]);
      float v94 = (v92 + v93);
      float v95 = (float)(v94);
      float v96 = (v59 * v95);
      float v97 = em_bf2f(em_f2bf((float)(v96)));
      float v98 = em_bf2f(reinterpret_cast<const unsigned short*>(&g6)[3]);
      float v99 = (v97 * v98);
      float v100 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[4]);
      float v101 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[4]);
      float v102 = (v100 + v101);
      float v103 = em_bf2f(reinterpret_cast<const unsigned short*>(&g5)[4]);
      float v104 = (v102 + v103);
      float v105 = (float)(v104);
      float v106 = (v59 * v105);
      float v107 = em_bf2f(em_f2bf((float)(v106)));
      float v108 = em_bf2f(reinterpret_cast<const unsigned short*>(&g6)[4]);
      float v109 = (v107 * v108);
      float v110 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[5]);
      float v111 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[5]);
      float v112 = (v110 + v111);
      float v113 = em_bf2f(reinterpret_cast<const unsigned short*>(&g5)[5]);
      float v114 = (v112 + v113);
      float v115 = (float)(v114);
      float v116 = (v59 * v115);
      float v117 = em_bf2f(em_f2bf((float)(v116)));
      float v118 = em_bf2f(reinterpret_cast<const unsigned short*>(&g6)[5]);
      float v119 = (v117 * v118);
      float v120 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[6]);
      float v121 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[6]);
      float v122 = (v120 + v121);
      float v123 = em_bf2f(reinterpret_cast<const unsigned short*>(&g5)[6]);
      float v124 = (v122 + v123);
      float v125 = (float)(v124);
      float v126 = (v59 * v125);
      float v127 = em_bf2f(em_f2bf((float)(v126)));
      float v128 = em_bf2f(reinterpret_cast<const unsigned short*>(&g6)[6]);
      float v129 = (v127 * v128);
      float v130 = em_bf2f(reinterpret_cast<const unsigned short*>(&g3)[7]);
      float v131 = em_bf2f(reinterpret_cast<const unsigned short*>(&g4)[7]);
      float v132 = (v130 + v131);
      float v133 = em_bf2f(reinterpret_cast<const unsigned short*>(&g5)[7]);
      float v134 = (v132 + v133);
      float v135 = (float)(v134);
      float v136 = (v59 * v135);
      float v137 = em_bf2f(em_f2bf((float)(v136)));
      float v138 = em_bf2f(reinterpret_cast<const unsigned short*>(&g6)[7]);
      float v139 = (v137 * v138);
      uint4 o_;
      reinterpret_cast<unsigned short*>(&o_)[0] = em_f2bf(v69);
      reinterpret_cast<unsigned short*>(&o_)[1] = em_f2bf(v79);
      reinterpret_cast<unsigned short*>(&o_)[2] = em_f2bf(v89);
      reinterpret_cast<unsigned short*>(&o_)[3] = em_f2bf(v99);
      reinterpret_cast<unsigned short*>(&o_)[4] = em_f2bf(v109);
      reinterpret_cast<unsigned short*>(&o_)[5] = em_f2bf(v119);
      reinterpret_cast<unsigned short*>(&o_)[6] = em_f2bf(v129);
      reinterpret_cast<unsigned short*>(&o_)[7] = em_f2bf(v139);
      *reinterpret_cast<uint4*>(&b0[o1]) = o_;
    }
  }
}



static __device__ __noinline__ void k18_mul_task(unsigned short* b0, const unsigned short* b1, const unsigned short* b2, const unsigned short* b3, const unsigned short* __restrict__ b4, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k18_mul_blk(b0, b1, b2, b3, b4, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k19_cast_blk(float* b0, const unsigned short* __restrict__ b1, const unsigned short* b2, const unsigned em_bid_, const unsigned em_nblk_) {
  

  for (int row_ = em_bid_; row_ < 300; row_ += em_nblk_) {
    const int o1 = row_;
    float acc0 = 0.0f;
    for (int r_ = (int)threadIdx.x * 8; r_ < 256; r_ += 2048) {
      const int r0_2 = r_;
      const uint4 g0 = em_mk_ldw(&b1[(256*o1 + r0_2)]);
      float v0 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[0]);
      const uint4 g1 = *reinterpret_cast<const uint4*>(&b2[r0_2]);
      float v1 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[0]);
      float v2 = (v0 * v1);
      float v3 = (float)(v2);
      float v4 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[1]);
      float v5 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[1]);
      float v6 = (v4 * v5);
      float v7 = (float)(v6);
      float v8 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[2]);
      float v9 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[2]);
      float v10 = (v8 * v9);
      float v11 = (float)(v10);
      float v12 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[3]);
      float v13 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[3]);
      float v14 = (v12 * v13);
      float v15 = (float)(v14);
      float v16 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[4]);
      float v17 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[4]);
      float v18 = (v16 * v17);
      float v19 = (float)(v18);
      float v20 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[5]);
      float v21 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[5]);
      float v22 = (v20 * v21);
      float v23 = (float)(v22);
      float v24 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[6]);
      float v25 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[6]);
      float v26 = (v24 * v25);
      float v27 = (float)(v26);
      float v28 = em_bf2f(reinterpret_cast<const unsigned short*>(&g0)[7]);
      float v29 = em_bf2f(reinterpret_cast<const unsigned short*>(&g1)[7]);
      float v30 = (v28 * v29);
      float v31 = (float)(v30);
      acc0 += v3;
      acc0 += v7;
      acc0 += v11;
      acc0 += v15;
      acc0 += v19;
      acc0 += v23;
      acc0 += v27;
      acc0 += v31;
    }
    acc0 = em_block_reduce<float, 0, 8>(acc0, em_red_float, (float)0.0f);
    if (threadIdx.x == 0) {
      float v32 = (float)(acc0);
      b0[o1] = (float)(v32);
    }
  }
}



static __device__ __noinline__ void k19_cast_task(float* b0, const unsigned short* __restrict__ b1, const unsigned short* b2, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k19_cast_blk(b0, b1, b2, b_, em_nblk_); em_task_sync(); }
}

static __device__ __forceinline__ void k20_view_blk(int* b0, const float* b1, const unsigned em_bid_, const unsigned em_nblk_) {
  


  for (int row_ = em_bid_; row_ < 1; row_ += em_nblk_) {
    float acc1 = (-INFINITY);
    for (int r_ = (int)threadIdx.x * 4; r_ < 300; r_ += 1024) {
      const int r1_1 = r_;
      const uint4 g0 = *reinterpret_cast<const uint4*>(&b1[r1_1]);
      float v0 = (float)reinterpret_cast<const float*>(&g0)[0];
      float v1 = (float)reinterpret_cast<const float*>(&g0)[1];
      float v2 = (float)reinterpret_cast<const float*>(&g0)[2];
      float v3 = (float)reinterpret_cast<const float*>(&g0)[3];
      acc1 = em_maxf(acc1, v0);
      acc1 = em_maxf(acc1, v1);
      acc1 = em_maxf(acc1, v2);
      acc1 = em_maxf(acc1, v3);
    }
    acc1 = em_block_reduce<float, 1, 8>(acc1, em_red_float, (float)(-INFINITY));
    int acc0 = INT_MIN;
    #pragma unroll 1
    for (int r_ = (int)threadIdx.x * 4; r_ < 300; r_ += 1024) {
      const int r0_1 = r_;
      const uint4 g1 = *reinterpret_cast<const uint4*>(&b1[r0_1]);
      float v4 = (float)reinterpret_cast<const float*>(&g1)[0];
      int v5 = (v4 < acc1);
      int v6 = (acc1 < v4);
      int v7 = (v5 ? 1 : v6);
      int v8 = (v4 < INFINITY);
      int v9 = ((-INFINITY) < v4);
      int v10 = (v8 ? 1 : v9);
      int v11 = (v10 ? 0 : 1);
      int v12 = (v7 ? 1 : v11);
      int v13 = (acc1 < INFINITY);
      int v14 = ((-INFINITY) < acc1);
      int v15 = (v13 ? 1 : v14);
      int v16 = (v15 ? 0 : 1);
      int v17 = (v12 ? 1 : v16);
      int v18 = (v17 ? 0 : 1);
      int v19 = (v11 * v16);
      int v20 = (v18 ? 1 : v19);
      int v21 = (int)(r0_1);
      int v22 = (v20 ? v21 : 300);
      int v23 = (v22 * -1);
      float v24 = (float)reinterpret_cast<const float*>(&g1)[1];
      int v25 = (v24 < acc1);
      int v26 = (acc1 < v24);
      int v27 = (v25 ? 1 : v26);
      int v28 = (v24 < INFINITY);
      int v29 = ((-INFINITY) < v24);
      int v30 = (v28 ? 1 : v29);
      int v31 = (v30 ? 0 : 1);
      int v32 = (v27 ? 1 : v31);
      int v33 = (v32 ? 1 : v16);
      int v34 = (v33 ? 0 : 1);
      int v35 = (v31 * v16);
      int v36 = (v34 ? 1 : v35);
      int v37 = (int)((r0_1 + 1));
      int v38 = (v36 ? v37 : 300);
      int v39 = (v38 * -1);
      float v40 = (float)reinterpret_cast<const float*>(&g1)[2];
      int v41 = (v40 < acc1);
      int v42 = (acc1 < v40);
      int v43 = (v41 ? 1 : v42);
      int v44 = (v40 < INFINITY);
      int v45 = ((-INFINITY) < v40);
      int v46 = (v44 ? 1 : v45);
      int v47 = (v46 ? 0 : 1);
      int v48 = (v43 ? 1 : v47);
      int v49 = (v48 ? 1 : v16);
      int v50 = (v49 ? 0 : 1);
      int v51 = (v47 * v16);
      int v52 = (v50 ? 1 : v51);
      int v53 = (int)((r0_1 + 2));
      int v54 = (v52 ? v53 : 300);
      int v55 = (v54 * -1);
      float v56 = (float)reinterpret_cast<const float*>(&g1)[3];
      int v57 = (v56 < acc1);
      int v58 = (acc1 < v56);
      int v59 = (v57 ? 1 : v58);
      int v60 = (v56 < INFINITY);
      int v61 = ((-INFINITY) < v56);
      int v62 = (v60 ? 1 : v61);
      int v63 = (v62 ? 0 : 1);
      int v64 = (v59 ? 1 : v63);
      int v65 = (v64 ? 1 : v16);
      int v66 = (v65 ? 0 : 1);
      int v67 = (v63 * v16);
      int v68 = (v66 ? 1 : v67);
      int v69 = (int)((r0_1 + 3));
      int v70 = (v68 ? v69 : 300);
      int v71 = (v70 * -1);
      acc0 = em_maxi(acc0, v23);
      acc0 = em_maxi(acc0, v39);
      acc0 = em_maxi(acc0, v55);
      acc0 = em_maxi(acc0, v71);
    }
    acc0 = em_block_reduce<int, 1, 8>(acc0, em_red_int, (int)INT_MIN);
    if (threadIdx.x == 0) {
      int v72 = (-1 * acc0);
      b0[0] = (int)(v72);
    }
  }
}


static __device__ __noinline__ void k20_view_task(int* b0, const float* b1, const unsigned em_first_, const unsigned em_end_, const unsigned em_nblk_, const unsigned em_step_) {
  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) { k20_view_blk(b0, b1, b_, em_nblk_); em_task_sync(); }
}

#undef __syncthreads
#ifndef EM_MK_TIMEOUT_NS
#define EM_MK_TIMEOUT_NS 5000000000ull
#endif
#ifndef EM_MK_SPIN
#define EM_MK_SPIN 64  /* tight polls of a wait before it sleeps between polls (option spin) */
#endif
#ifndef EM_MK_IDLE_NS
#define EM_MK_IDLE_NS 256  /* the idle stream's pause between pieces (option idle_ns) */
#endif
#ifndef EM_MK_SLEEP_NS
#define EM_MK_SLEEP_NS 64  /* (option sleep_ns) */
#endif
__device__ __forceinline__ unsigned long long em_mk_now() {
  unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t;
}
__device__ __forceinline__ unsigned em_mk_hash(unsigned x) {
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16; return x;
}
__device__ __forceinline__ unsigned em_mk_load_acquire(const unsigned* p) {
  unsigned v; asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
__device__ __forceinline__ void em_mk_signal(unsigned* p) {
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(p) : "memory");
}
__device__ __noinline__ void em_mk_hang(const unsigned* c, unsigned need, int worker, int launch) {
  printf("ember megakernel: worker %d waited over %llu ms for launch %d (a counter at %u, needs %u): a hang\n",
         worker, (unsigned long long)(EM_MK_TIMEOUT_NS / 1000000ull), launch, *(volatile const unsigned*)c, need);
  __trap();
}
__device__ __forceinline__ void em_mk_wait(const unsigned* c, unsigned need, int worker, int launch) {
  /* need is (that shard's tasks per run) * (epoch + 1): compared by a signed difference, so it wraps safely */
  for (int spin = 0; spin < EM_MK_SPIN; ++spin)
    if ((int)(em_mk_load_acquire(c) - need) >= 0) return;
  const unsigned long long t0 = em_mk_now();
  while ((int)(em_mk_load_acquire(c) - need) < 0) {
    __nanosleep(EM_MK_SLEEP_NS);
    if (em_mk_now() - t0 > EM_MK_TIMEOUT_NS) em_mk_hang(c, need, worker, launch);
  }
}


__constant__ unsigned em_mk_threads_[21] = {256, 256, 256, 256, 128, 256, 256, 128, 256, 256, 256, 256, 256, 128, 256, 256, 128, 256, 256, 256, 256};

__constant__ unsigned char em_mk_fn_[21] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 3, 4, 12, 6, 13, 8, 14, 15, 16, 17};
__constant__ unsigned em_mk_nb_[21] = {1, 512, 1, 1, 16, 256, 1, 128, 256, 1, 512, 1, 1, 16, 256, 1, 128, 256, 1, 300, 1};
__constant__ unsigned short em_mk_argat_[21] = {0, 4, 7, 9, 14, 23, 26, 31, 35, 41, 44, 47, 49, 54, 63, 66, 70, 74, 77, 82, 85};
__constant__ unsigned short em_mk_args_[87] = {0, 1, 2, 3, 4, 0, 5, 6, 4, 7, 4, 8, 9, 10, 11, 8, 9, 4, 10, 7, 12, 6, 13, 14, 15, 11, 16, 14, 1, 2, 17, 18, 19, 16, 20, 21, 18, 22, 14, 1, 2, 23, 21, 24, 25, 26, 23, 27, 25, 28, 25, 8, 9, 10, 29, 28, 25, 8, 9, 10, 12, 27, 30, 31, 32, 29, 33, 31, 21, 34, 35, 36, 33, 37, 38, 35, 39, 40, 31, 21, 38, 41, 42, 43, 40, 44, 42};

extern "C" __global__ void __launch_bounds__(256, 1) em_megakernel(void* p0, void* p1, void* p2, void* p3, void* p4, void* p5, void* p6, void* p7, void* p8, void* p9, void* p10, void* p11, void* p12, void* p13, void* p14, void* p15, void* p16, void* p17, void* p18, void* p19, void* p20, void* p21, void* p22, void* p23, void* p24, void* p25, void* p26, void* p27, void* p28, void* p29, void* p30, void* p31, void* p32, void* p33, void* p34, void* p35, void* p36, void* p37, void* p38, void* p39, void* p40, void* p41, void* p42, void* p43, void* p44, void* p45, void* p46, void* p47, const long long* __restrict__ em_dims_) {
  const int* em_tab_ = ((const int*)p46);
  unsigned* em_sync_ = ((unsigned*)p47);
  __shared__ unsigned em_epoch_;
  if (threadIdx.x == 0) em_epoch_ = *(volatile unsigned*)(em_sync_ + 0);
  __shared__ void* em_ptr_[48];  /* the buffers' addresses, indexed by the tables' slots */
  if (threadIdx.x == 0) { em_ptr_[0] = p0; em_ptr_[1] = p1; em_ptr_[2] = p2; em_ptr_[3] = p3; em_ptr_[4] = p4; em_ptr_[5] = p5; em_ptr_[6] = p6; em_ptr_[7] = p7; em_ptr_[8] = p8; em_ptr_[9] = p9; em_ptr_[10] = p10; em_ptr_[11] = p11; em_ptr_[12] = p12; em_ptr_[13] = p13; em_ptr_[14] = p14; em_ptr_[15] = p15; em_ptr_[16] = p16; em_ptr_[17] = p17; em_ptr_[18] = p18; em_ptr_[19] = p19; em_ptr_[20] = p20; em_ptr_[21] = p21; em_ptr_[22] = p22; em_ptr_[23] = p23; em_ptr_[24] = p24; em_ptr_[25] = p25; em_ptr_[26] = p26; em_ptr_[27] = p27; em_ptr_[28] = p28; em_ptr_[29] = p29; em_ptr_[30] = p30; em_ptr_[31] = p31; em_ptr_[32] = p32; em_ptr_[33] = p33; em_ptr_[34] = p34; em_ptr_[35] = p35; em_ptr_[36] = p36; em_ptr_[37] = p37; em_ptr_[38] = p38; em_ptr_[39] = p39; em_ptr_[40] = p40; em_ptr_[41] = p41; em_ptr_[42] = p42; em_ptr_[43] = p43; em_ptr_[44] = p44; }
  __syncthreads();
  const unsigned epoch = em_epoch_;
  const int nworkers = (int)gridDim.x, worker = (int)blockIdx.x;
  const int first_task = em_tab_[worker], last_task = em_tab_[worker + 1];
  for (int t = first_task; t < last_task; ++t) {
    const int* row = em_tab_ + (nworkers + 1) + t * 10;
    const int launch = row[0];
    const unsigned first = (unsigned)row[1], end = (unsigned)row[2], step = (unsigned)row[5];
    if (threadIdx.x == 32) {  /* the weight stream: this worker's next bytes of weights asked of L2 */
      const int* pf = (const int*)p45;
      for (int s = pf[1 + t]; s < pf[2 + t]; ++s) {
        const int* q = pf + pf[0] + 3 * s;
        const void* w = 0;
        switch (q[0]) { default: w = em_ptr_[q[0]]; break; }
        if (w) em_mk_prefetch(w, 16ull * (unsigned)q[1], 16ull * (unsigned)q[2]);
      }
    }
    if (threadIdx.x < 32) {  /* warp 0 waits for every shard of every launch this one depends on */
      const int nw = row[3];
      for (int q = threadIdx.x; q < nw * 8; q += 32) {
        const int d = row[6 + 2 * (q / 8)], j = q % 8;
        const unsigned n = (unsigned)row[7 + 2 * (q / 8)];
        const unsigned per = (n + 7u - (unsigned)j) / 8u;  /* tasks of d in shard j */
        if (per) {
          em_mk_wait(em_sync_ + 64 + (d * 8 + j) * 32, per * (epoch + 1u), worker, d);
          /* (acquire, then the block barrier) */
        }
      }
#ifdef EM_MK_JITTER
      if (threadIdx.x == 0) __nanosleep(em_mk_hash((unsigned)t * 2654435761u ^ epoch * 40503u ^ EM_MK_JITTER) % 4096u);
#endif
#ifdef EM_MK_TRACE
      if (threadIdx.x == 0) ((unsigned long long*)p47)[EM_MK_TRACE + 2 * t] = em_mk_now();
#endif
      if (threadIdx.x == 0) em_task_threads_ = em_mk_threads_[launch];
      __syncwarp();  /* the lanes left the spin waits at different times: reconverge before the block barrier */
    }
    __syncthreads();
    if (const int fn_ = em_mk_fn_[launch]) {  /* one case per task function: its buffers and grid from the tables */
      const unsigned nb = em_mk_nb_[launch];
      const unsigned e = end < nb ? end : nb;
      const unsigned short* a_ = em_mk_args_ + em_mk_argat_[launch];
      switch (fn_) {
      case 1: if (first < e) k0_mul_task((unsigned short*)em_ptr_[a_[0]], (const int*)em_ptr_[a_[1]], (const unsigned short*)em_ptr_[a_[2]], (const unsigned short*)em_ptr_[a_[3]], first, e, nb, step); break;
      case 2: if (first < e) k1_sum_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const unsigned short*)em_ptr_[a_[2]], first, e, nb, step); break;
      case 3: if (first < e) k2_where_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], em_dims_, first, e, nb, step); break;
      case 4: if (first < e) k3_where_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const int*)em_ptr_[a_[2]], (const float*)em_ptr_[a_[3]], (const float*)em_ptr_[a_[4]], em_dims_, first, e, nb, step); break;
      case 5: if (threadIdx.x < 128) if (first < e) k4_sum_task((unsigned short*)em_ptr_[a_[0]], (const int*)em_ptr_[a_[1]], (const float*)em_ptr_[a_[2]], (const unsigned short*)em_ptr_[a_[3]], (const float*)em_ptr_[a_[4]], (const unsigned short*)em_ptr_[a_[5]], (const int*)em_ptr_[a_[6]], (const unsigned short*)em_ptr_[a_[7]], (float*)em_ptr_[a_[8]], em_dims_, first, e, nb, step); break;
      case 6: if (first < e) k5_sum_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const unsigned short*)em_ptr_[a_[2]], first, e, nb, step); break;
      case 7: if (first < e) k6_mul_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const int*)em_ptr_[a_[2]], (const unsigned short*)em_ptr_[a_[3]], (const unsigned short*)em_ptr_[a_[4]], first, e, nb, step); break;
      case 8: if (threadIdx.x < 128) if (first < e) k7_mul_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const unsigned short*)em_ptr_[a_[2]], (const unsigned short*)em_ptr_[a_[3]], first, e, nb, step); break;
      case 9: if (first < e) k8_add_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const unsigned short*)em_ptr_[a_[2]], (const unsigned short*)em_ptr_[a_[3]], (const int*)em_ptr_[a_[4]], (const unsigned short*)em_ptr_[a_[5]], first, e, nb, step); break;
      case 10: if (first < e) k9_mul_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const unsigned short*)em_ptr_[a_[2]], first, e, nb, step); break;
      case 11: if (first < e) k10_sum_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const unsigned short*)em_ptr_[a_[2]], first, e, nb, step); break;
      case 12: if (threadIdx.x < 128) if (first < e) k13_sum_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const unsigned short*)em_ptr_[a_[2]], (const int*)em_ptr_[a_[3]], (const float*)em_ptr_[a_[4]], (const float*)em_ptr_[a_[5]], (const int*)em_ptr_[a_[6]], (const unsigned short*)em_ptr_[a_[7]], (float*)em_ptr_[a_[8]], em_dims_, first, e, nb, step); break;
      case 13: if (first < e) k15_mul_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const unsigned short*)em_ptr_[a_[2]], (const unsigned short*)em_ptr_[a_[3]], first, e, nb, step); break;
      case 14: if (first < e) k17_sum_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const unsigned short*)em_ptr_[a_[2]], first, e, nb, step); break;
      case 15: if (first < e) k18_mul_task((unsigned short*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const unsigned short*)em_ptr_[a_[2]], (const unsigned short*)em_ptr_[a_[3]], (const unsigned short*)em_ptr_[a_[4]], first, e, nb, step); break;
      case 16: if (first < e) k19_cast_task((float*)em_ptr_[a_[0]], (const unsigned short*)em_ptr_[a_[1]], (const unsigned short*)em_ptr_[a_[2]], first, e, nb, step); break;
      case 17: if (first < e) k20_view_task((int*)em_ptr_[a_[0]], (const float*)em_ptr_[a_[1]], first, e, nb, step); break;
      default: break;
      }
    } else switch (launch) {

      default: break;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
#ifdef EM_MK_JITTER
      __nanosleep(em_mk_hash((unsigned)t * 40503u ^ epoch * 2654435761u ^ EM_MK_JITTER) % 4096u);
#endif
#ifdef EM_MK_TRACE
      ((unsigned long long*)p47)[EM_MK_TRACE + 2 * t + 1] = em_mk_now();
#endif
      em_mk_signal(em_sync_ + 64 + (launch * 8 + row[4] % 8) * 32);
    }
  }
  if (threadIdx.x == 0) {  /* the last worker out advances the epoch for the next run */
    __threadfence();
    if (atomicAdd(em_sync_ + 32, 1u) == (unsigned)nworkers - 1u) {
      em_sync_[32] = 0u;
      __threadfence();
      atomicAdd(em_sync_ + 0, 1u);
    }
  }
}
