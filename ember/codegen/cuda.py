"""CUDA renderer: kernel IR -> CUDA C for NVRTC (no headers needed).

A kernel of the canonical shape (outer parallel loops, reduction stages, an inner parallel tail; see
kernel/ir.py) maps onto the GPU in one of four *modes*, a schedule knob:

``elementwise``  no stages: all loops flattened; each thread handles `vec` consecutive elements of the
                 innermost dimension per step of a grid-stride loop (16-byte loads/stores where the
                 index is contiguous and aligned).
``thread``       one thread per outer point; stages and tail run serially in the thread.
``warp``         one warp per outer point; lanes stride the reduction (vectorised), warp shuffles
                 combine; lanes stride the tail.
``block``        one block per outer point; threads stride the reduction, warp shuffles + shared
                 memory combine and broadcast; threads stride the tail.
``cols``         32 consecutive outer points per block, one per lane (coalesced when consecutive
                 outer points are adjacent in memory: reductions over a non-innermost axis); the
                 block's warps split the reduction and combine through shared memory.

float16/bfloat16 are stored as 16-bit integers and converted with PTX ``cvt`` (round to nearest
even); arithmetic runs in float; MAX propagates NaN like the primitive.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes as dt
from .. import primitives as P
from .. import symbolic as sm
from ..kernel import ir
from ..kernel.structure import (Canon, Contraction, StageInfo, UnsupportedKernel, _size, canonical,  # noqa: F401
                                contraction_of)
from .clike import Dialect, ValueRenderer, acc_identity, compute_type
from .cuda_mma import MMA_PRELUDE, mma_applicable, one_pass, render_mma

PRELUDE = r"""
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define INT_MIN (-2147483647 - 1)
#define LLONG_MIN (-9223372036854775807LL - 1)
""" + sm.C_HELPERS + r"""
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
""" + MMA_PRELUDE + P.helpers("static __device__ __forceinline__")  # the primitives' own helpers (philox)

# Thread-block clusters (sm_90): emitted only into kernels that use them, guarded against repeats
CLUSTER_HELPERS = r"""#ifndef EM_CLUSTER_HELPERS
#define EM_CLUSTER_HELPERS
__device__ __forceinline__ unsigned em_cluster_rank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ void em_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned em_cluster_addr(const void* p, unsigned rank) {
  unsigned a, r;
  asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
__device__ __forceinline__ float em_cluster_ld(const float* p, unsigned rank) {
  float v; asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(em_cluster_addr(p, rank)) : "memory"); return v;
}
__device__ __forceinline__ double em_cluster_ld(const double* p, unsigned rank) {
  double v; asm volatile("ld.shared::cluster.f64 %0, [%1];" : "=d"(v) : "r"(em_cluster_addr(p, rank)) : "memory"); return v;
}
__device__ __forceinline__ int em_cluster_ld(const int* p, unsigned rank) {
  int v; asm volatile("ld.shared::cluster.s32 %0, [%1];" : "=r"(v) : "r"(em_cluster_addr(p, rank)) : "memory"); return v;
}
__device__ __forceinline__ long long em_cluster_ld(const long long* p, unsigned rank) {
  long long v; asm volatile("ld.shared::cluster.s64 %0, [%1];" : "=l"(v) : "r"(em_cluster_addr(p, rank)) : "memory"); return v;
}
#endif"""

MODES = ("elementwise", "thread", "warp", "block", "cols", "gemm", "mma")


class CudaDialect(Dialect):
    name = "cuda"  # float log2 and 1/x take the SFU forms of their primitives' rows (ember/primitives)
    restrict = "__restrict__"

    def storage_type(self, d: dt.DType) -> str:
        return {"float16": "unsigned short", "bfloat16": "unsigned short", "bool": "unsigned char"}.get(d.name, d.c_name)

    def widen(self, raw: str, d: dt.DType, ct: str) -> str:
        if d == dt.float16:
            return f"em_h2f({raw})"
        if d == dt.bfloat16:
            return f"em_bf2f({raw})"
        return f"({ct}){raw}"

    def narrow(self, val: str, d: dt.DType) -> str:
        if d == dt.float16:
            return f"em_f2h({val})"
        if d == dt.bfloat16:
            return f"em_f2bf({val})"
        return f"({self.storage_type(d)})({val})"

    def round_through(self, val: str, d: dt.DType) -> str:
        return f"em_h2f(em_f2h({val}))" if d == dt.float16 else f"em_bf2f(em_f2bf({val}))"


CUDA = CudaDialect()



# ------------------------------------------------------------------------------------------------
# vectorisation analysis


def _lanes_contiguous(e: sm.Expr, var: str, vec: int) -> bool:
    """e(var + l) == e(var) + l for l < vec, and e(var) is a multiple of vec when var is."""
    base = sm.substitute(e, {var: sm.var("_q", 0, None) * vec})
    if (base % vec) is not sm.ZERO:
        return False
    x = sm.var(var, 0, None)
    e0 = sm.substitute(e, {var: x})
    return all(sm.substitute(e, {var: x + l}) - e0 is sm.const(l) for l in range(1, vec))


def _store_vec(k: ir.Kernel, st: ir.Store, loops: list, max_vec: int) -> int:
    """Largest vec (power of two, 16 bytes max) for which the innermost loop splits evenly and the
    store is contiguous and aligned."""
    if not loops:
        return 1
    var, ext = loops[-1]
    if not ext.is_const:
        return 1
    item = k.buffer(st.buffer).dtype.itemsize
    vec = max_vec
    while vec > 1:
        if ext.value % vec == 0 and vec * item <= 16 and _lanes_contiguous(st.index, var, vec):
            return vec
        vec //= 2
    return 1


def _reduce_vec(k: ir.Kernel, stage: StageInfo, max_vec: int) -> int:
    if not stage.loops:
        return 1
    var, ext = stage.loops[-1]
    if not ext.is_const:
        return 1
    vec = max_vec
    while vec > 1:
        if ext.value % vec == 0:
            loads = [v for v in ir.val_toposort([stage.update.value]) if v.op == "load" and not isinstance(v.args[1], ir.Val)]
            if any(_lanes_contiguous(v.args[1], var, vec) and v.dtype.itemsize * vec <= 16 for v in loads):
                return vec
        vec //= 2
    return 1


# ------------------------------------------------------------------------------------------------
# rendering


def index_type(k: ir.Kernel) -> str:
    sizes = [b.size for b in k.buffers]
    if all(s.is_const and s.value < 2 ** 31 - 1024 for s in sizes) and not k.dims:
        return "int"
    return "long long"


class _KernelWriter:
    def __init__(self, k: ir.Kernel, cfg: dict):
        self.k = k
        self.cfg = cfg
        self.names = {d: f"d_{d}" for d in k.dims}
        self.lines: list = []
        self.IDX = index_type(k)
        self.vr = ValueRenderer(k, CUDA, self.names, self.emit, self._load_hook)
        self.vec_groups: dict = {}  # lane load Val -> (group key, lane)
        self.emitted_groups: dict = {}
        self.cached: dict = {}  # row-cache group key -> register array name
        self.cached_loaded: set = set()
        self.cache_in_smem = False  # whether self.cached's slots are in shared memory
        self.gid = 0

    def emit(self, ind: int, s: str) -> None:
        self.lines.append("  " * ind + s)

    def idx(self, e) -> str:
        return sm.render_c(e, self.names)

    def decompose(self, flat: str, loops: list, ind: int) -> None:
        if not loops:
            return
        if len(loops) == 1:
            self.emit(ind, f"const {self.IDX} {loops[0][0]} = {flat};")
            return
        t = f"t_{loops[0][0]}"
        self.emit(ind, f"{self.IDX} {t} = {flat};")
        for var, ext in reversed(loops[1:]):
            e = self.idx(ext)
            self.emit(ind, f"const {self.IDX} {var} = {t} % {e}; {t} /= {e};")
        self.emit(ind, f"const {self.IDX} {loops[0][0]} = {t};")

    # ---------------------------------------------------------------- vector lanes
    def lanes(self, vals: list, var: str | None, vec: int) -> list:
        """For each lane l < vec, the values with `var` replaced by var + l; registers vector loads."""
        if vec == 1 or var is None:
            return [vals]
        out = []
        for l in range(vec):
            m = {var: sm.var(var, 0, None) + l} if l else {}
            memo: dict = {}
            out.append([ir.substitute(v, m, memo) if l else v for v in vals])
        # group contiguous loads across lanes
        base_loads = {v for v in ir.val_toposort(vals) if v.op == "load" and not isinstance(v.args[1], ir.Val)}
        for v in base_loads:
            b, idx, valid = v.args
            if self.k.buffer(b).dtype.itemsize * vec > 16 or vec * self.k.buffer(b).dtype.itemsize < 4:
                continue
            if not _lanes_contiguous(idx, var, vec):
                continue
            if any(sm.substitute(valid, {var: sm.var(var, 0, None) + l}) is not valid for l in range(1, vec)):
                continue
            key = (b, idx, valid)
            for l in range(vec):
                lv = ir.substitute(v, {var: sm.var(var, 0, None) + l}, {}) if l else v
                self.vec_groups[lv] = (key, l, vec)
        return out

    def _load_hook(self, v: ir.Val, env: dict):
        g = self.vec_groups.get(v)
        if g is None:
            return None
        key, lane, vec = g
        b, idx, valid = key
        buf = self.k.buffer(b)
        name = self.emitted_groups.get(key)
        nbytes = buf.dtype.itemsize * vec
        raw_t = {16: "uint4", 8: "uint2", 4: "unsigned int"}[nbytes]
        st = CUDA.storage_type(buf.dtype)
        if key in self.cached and name is None:  # row cache: loaded once, read by every stage
            name = self.cached[key]
            if key not in self.cached_loaded:
                load = f"*reinterpret_cast<const {raw_t}*>(&{b}[{self.idx(idx)}])"
                if valid is not sm.ONE:
                    load = f"({self.idx(valid)} ? {load} : {raw_t}{{}})"
                if self.cache_in_smem:
                    # a shared-memory cache: the loading stage computes from the register and only
                    # later stages read the slot back. Re-reading the slot just stored (uint4 store,
                    # int32 loads) let NVRTC 13.0 hoist the read above the store: the previous row's
                    # values (wrong int32 row maxima, bench/debug_cluster.py on the H100).
                    reg = f"g{self.gid}"
                    self.gid += 1
                    self.emit(self._ind, f"const {raw_t} {reg} = {load};")
                    self.emit(self._ind, f"{name} = {reg};")
                    self.emitted_groups[key] = name = reg
                else:
                    self.emit(self._ind, f"{name} = {load};")
                self.cached_loaded.add(key)
        elif name is None:
            name = f"g{self.gid}"
            self.gid += 1
            load = f"*reinterpret_cast<const {raw_t}*>(&{b}[{self.idx(idx)}])"
            if valid is not sm.ONE:
                load = f"({self.idx(valid)} ? {load} : {raw_t}{{}})"
            self.emit(self._ind, f"const {raw_t} {name} = {load};")
            self.emitted_groups[key] = name
        ct = compute_type(v.dtype)
        elem = f"reinterpret_cast<const {st}*>(&{name})[{lane}]"
        return CUDA.widen(elem, buf.dtype, ct)

    def values(self, roots: list, ind: int) -> dict:
        self._ind = ind
        return self.vr.vals(roots, ind)

    def store(self, st: ir.Store, var: str | None, vec: int, ind: int) -> None:
        self.emitted_groups = {}  # vector loads are declared per statement scope
        lanes = self.lanes([st.value], var, vec)
        self._ind = ind
        env = self.vr.vals([v for lane in lanes for v in lane], ind)
        if st.buffer in self.vr.locals:
            self.emit(ind, f"{st.buffer}[{self.idx(st.index)}] = {env[st.value]};")
            return
        buf = self.k.buffer(st.buffer)
        if vec > 1:
            st_t = CUDA.storage_type(buf.dtype)
            nbytes = buf.dtype.itemsize * vec
            raw_t = {16: "uint4", 8: "uint2", 4: "unsigned int", 2: "unsigned short"}[nbytes]
            self.emit(ind, f"{raw_t} o_;")
            for l, lane in enumerate(lanes):
                self.emit(ind, f"reinterpret_cast<{st_t}*>(&o_)[{l}] = {self.vr.store(st.buffer, env[lane[0]])};")
            self.emit(ind, f"*reinterpret_cast<{raw_t}*>(&{st.buffer}[{self.idx(st.index)}]) = o_;")
        else:
            self.emit(ind, f"{st.buffer}[{self.idx(st.index)}] = {self.vr.store(st.buffer, env[st.value])};")

    def update(self, s: StageInfo, var: str | None, vec: int, ind: int) -> None:
        self.emitted_groups = {}
        lanes = self.lanes([s.update.value], var, vec)
        self._ind = ind
        self._ind = ind
        env = self.vr.vals([v for lane in lanes for v in lane], ind)
        for lane in lanes:
            self.emit(ind, self.vr.update(s.update, env[lane[0]]))

    # ---------------------------------------------------------------- modes
    def signature(self) -> str:
        params = []
        for b in self.k.buffers:
            const = "const " if b.role == "in" else ""
            params.append(f"{const}{CUDA.storage_type(b.dtype)}* __restrict__ {b.name}")
        params += [f"long long {self.names[d]}" for d in self.k.dims]
        return ", ".join(params)

    def _serial_stage(self, s: StageInfo, ind: int) -> None:
        """A reduction run by one thread: plain loops around the update."""
        ct = compute_type(s.acc.dtype)
        self.emit(ind, f"{ct} {s.acc.name} = {acc_identity(s.acc.op, s.acc.dtype)};")
        for k, (var, ext) in enumerate(s.loops):
            self.emit(ind + k, f"for ({self.IDX} {var} = 0; {var} < {self.idx(ext)}; {var}++) {{")
        self.update(s, None, 1, ind + len(s.loops))
        for k in reversed(range(len(s.loops))):
            self.emit(ind + k, "}")

    def _rowlocal(self, T: int):
        """One block per outer point. Kernel-local arrays live in shared memory: threads fill a local
        (each entry with its own serial reduction, if any), the block synchronises, stages reduce over
        the locals across the block, and the tail's elements (each with serial reductions over the
        locals, e.g. P·V) are spread over the threads."""
        from ..kernel.structure import LocalItem, local_canonical
        lc = local_canonical(self.k)
        I = self.IDX
        off, ptrs = 0, []
        for it in lc.items:
            if isinstance(it, LocalItem):
                ct = compute_type(it.local.dtype)
                ptrs.append(f"{ct}* {it.local.name} = reinterpret_cast<{ct}*>(em_dyn_smem + {off});")
                self.vr.locals[it.local.name] = it.local.dtype
                off += (it.local.size * it.local.dtype.itemsize + 15) // 16 * 16
        if off > SMEM_CACHE_MAX:
            raise UnsupportedKernel(f"local arrays need {off} bytes of shared memory (max {SMEM_CACHE_MAX})")
        self.smem_bytes = off
        self.emit(1, "extern __shared__ __align__(16) unsigned char em_dyn_smem[];")
        for p in ptrs:
            self.emit(1, p)
        cts = sorted({compute_type(it.acc.dtype) for it in lc.items if isinstance(it, StageInfo)})
        for ct in cts:
            self.emit(1, f"__shared__ {ct} em_red_{ct.replace(' ', '_')}[32];")
        nrows = _size(lc.outer)
        self.emit(1, f"for ({I} row_ = blockIdx.x; row_ < {self.idx(nrows)}; row_ += gridDim.x) {{")
        self.decompose("row_", lc.outer, 2)
        self.emit(2, "__syncthreads();  /* the previous row's readers of the locals are done */")
        for it in lc.items:
            if isinstance(it, LocalItem):
                self.emit(2, f"for ({I} {it.var} = threadIdx.x; {it.var} < {it.local.size}; {it.var} += {T}) {{")
                if it.inner is not None:
                    self._serial_stage(it.inner, 3)
                self.store(it.store, None, 1, 3)
                self.emit(2, "}")
                self.emit(2, "__syncthreads();")
            else:
                ct = compute_type(it.acc.dtype)
                op = 0 if it.acc.op == "sum" else 1
                self.emit(2, f"{ct} {it.acc.name} = {acc_identity(it.acc.op, it.acc.dtype)};")
                self._stage_loop(it, f"({I})threadIdx.x", str(T), 1, 2)
                self.emit(2, f"{it.acc.name} = em_block_reduce<{ct}, {op}, {T // 32}>({it.acc.name}, "
                             f"em_red_{ct.replace(' ', '_')}, ({ct}){acc_identity(it.acc.op, it.acc.dtype)});")
        if lc.inner:
            self.emit(2, f"for ({I} j_ = threadIdx.x; j_ < {self.idx(_size(lc.inner))}; j_ += {T}) {{")
            self.decompose("j_", lc.inner, 3)
            for st in lc.tail_stages:
                self._serial_stage(st, 3)
            self.store(lc.store, None, 1, 3)
            self.emit(2, "}")
        else:
            self.emit(2, "if (threadIdx.x == 0) {")
            for st in lc.tail_stages:
                self._serial_stage(st, 3)
            self.store(lc.store, None, 1, 3)
            self.emit(2, "}")
        self.emit(1, "}")
        return sm.minimum(nrows, 2 ** 31 - 1)

    def render(self, c: Canon) -> tuple[str, dict]:
        mode, T = self.cfg["mode"], int(self.cfg.get("threads", 256))
        max_vec = int(self.cfg.get("vec", 8))
        if mode == "gemm":
            T = (int(self.cfg["BM"]) // int(self.cfg["TM"])) * (int(self.cfg["BN"]) // int(self.cfg["TN"]))
        elif mode == "mma":
            T = 32 * int(self.cfg["WM"]) * int(self.cfg["WN"])
        self.cluster = int(self.cfg.get("cluster", 1))
        if self.cluster not in (1, 2, 4, 8):
            raise UnsupportedKernel(f"cluster of {self.cluster} blocks (1, 2, 4 or 8)")
        dims = f"__cluster_dims__({self.cluster}, 1, 1) " if self.cluster > 1 else ""
        if self.cluster > 1:
            self.emit(0, CLUSTER_HELPERS)
        self.emit(0, f'extern "C" __global__ void {dims}__launch_bounds__({T}) {self.k.name}({self.signature()}) {{')
        if self.cluster > 1 and mode != "block":
            raise UnsupportedKernel(f"clusters are for block mode, not {mode}")
        if mode == "rowlocal":
            grid = self._rowlocal(T)
        elif mode == "gemm":
            grid = self._gemm(c)
            T = self.T
        elif mode == "mma":
            grid = render_mma(self, c)
        elif mode == "elementwise":
            grid = self._elementwise(c, T, max_vec)
        elif mode in ("block", "warp", "thread"):
            grid = self._rows(c, mode, T, max_vec)
        elif mode == "cols":
            grid = self._cols(c, T)
        else:
            raise UnsupportedKernel(f"unknown mode {mode!r}")
        self.emit(0, "}")
        return "\n".join(self.lines), {"grid": sm.to_json(grid), "block": T, "smem": getattr(self, "smem_bytes", 0),
                                        "mode": mode}

    def _elementwise(self, c: Canon, T: int, max_vec: int):
        if c.stages:
            raise UnsupportedKernel("elementwise mode on a kernel with reductions")
        vec = _store_vec(self.k, c.store, c.outer, max_vec)
        total = _size(c.outer)
        n = total // vec
        I = self.IDX
        self.emit(1, f"const {I} n_ = {self.idx(n)};")
        self.emit(1, f"for ({I} c_ = ({I})blockIdx.x * {T} + threadIdx.x; c_ < n_; c_ += ({I})gridDim.x * {T}) {{")
        self.decompose(f"c_ * {vec}" if vec > 1 else "c_", c.outer, 2)
        self.store(c.store, c.outer[-1][0] if c.outer else None, vec, 2)
        self.emit(1, "}")
        return sm.minimum((n + (T - 1)) // T, 2 ** 31 - 1)

    def _gemm(self, c: Canon):
        """Shared-memory tiled contraction: each block computes a BM x BN tile of one batch entry;
        BK-deep slices of a and b are staged through shared memory (zero-filled past the edges); each
        thread accumulates a TM x TN register tile; the epilogue (the store's value) runs per output."""
        g = contraction_of(c)
        if g is None:
            raise UnsupportedKernel(f"{self.k.name}: not a contraction")
        cfg = self.cfg
        BM, BN, BK, TM, TN = (int(cfg[x]) for x in ("BM", "BN", "BK", "TM", "TN"))
        NT = (BM // TM) * (BN // TN)
        self.T = NT
        I = self.IDX
        M, N, K = _size(g.m), _size(g.n), _size(g.k)
        ct = compute_type(g.stage.acc.dtype)
        self.emit(1, f"__shared__ {ct} As[{BK}][{BM} + 4];")
        self.emit(1, f"__shared__ {ct} Bs[{BK}][{BN} + 4];")
        self.tile_origin(g, BM, BN)
        self.emit(1, "const int tid_ = threadIdx.x;")
        self.emit(1, f"const int tx_ = tid_ % {BN // TN}, ty_ = tid_ / {BN // TN};")
        self.emit(1, f"{ct} acc_[{TM}][{TN}];")
        self.emit(1, f"#pragma unroll\n  for (int i = 0; i < {TM}; ++i)\n    #pragma unroll\n    for (int j = 0; j < {TN}; ++j) acc_[i][j] = 0;")
        self.emit(1, f"for ({I} k0_ = 0; k0_ < K_; k0_ += {BK}) {{")
        aligned = all(e.is_const for e in (M, N, K)) and M.value % BM == 0 and N.value % BN == 0 and K.value % BK == 0
        for name, val, rows, BR, kfast in (("As", g.a, g.m, BM, g.a_k_fastest), ("Bs", g.b, g.n, BN, g.b_k_fastest)):
            bidx = "bm_" if name == "As" else "bn_"
            lim = "M_" if name == "As" else "N_"
            fast_len = BK if kfast else BR
            lane_loops = g.k if kfast else rows
            # VL consecutive elements per thread need the innermost variable to step VL times inside
            # its own extent (a conv's kw of 3 does not: kw+1.. would run into the next kh row)
            inner_ext = lane_loops[-1][1] if lane_loops else sm.ONE
            VL = 4 if (aligned and fast_len % 4 == 0 and inner_ext.is_const and inner_ext.value % 4 == 0) else 1
            self.emit(2, f"for (int e_ = tid_; e_ < {BR * BK // VL}; e_ += {NT}) {{")
            if kfast:
                self.emit(3, f"const int rr_ = e_ / {BK // VL}, kk_ = (e_ % {BK // VL}) * {VL};")
            else:
                self.emit(3, f"const int rr_ = (e_ % {BR // VL}) * {VL}, kk_ = e_ / {BR // VL};")
            self.emit(3, f"const {I} gr_ = {bidx} * {BR} + rr_, gk_ = k0_ + kk_;")
            if VL > 1:  # static, tile-divisible shapes: no bounds checks; VL consecutive elements per thread
                self.decompose("gr_", rows, 3)
                self.decompose("gk_", g.k, 3)
                lane_var = lane_loops[-1][0]
                self.emitted_groups = {}
                lanes = self.lanes([val], lane_var, VL)
                self._ind = 3
                env = self.vr.vals([v for lane in lanes for v in lane], 3)
                for l, lane in enumerate(lanes):
                    dst = f"{name}[kk_ + {l}][rr_]" if kfast else f"{name}[kk_][rr_ + {l}]"
                    self.emit(3, f"{dst} = ({ct}){env[lane[0]]};")
            else:
                self.emit(3, f"{ct} x_ = 0;")
                self.emit(3, f"if (gr_ < {lim} && gk_ < K_) {{")
                self.decompose("gr_", rows, 4)
                self.decompose("gk_", g.k, 4)
                env = self.values([val], 4)
                self.emit(4, f"x_ = ({ct}){env[val]};")
                self.emit(3, "}")
                self.emit(3, f"{name}[kk_][rr_] = x_;")
            self.emit(2, "}")
        self.emit(2, "__syncthreads();")
        self.emit(2, f"#pragma unroll\n    for (int kk_ = 0; kk_ < {BK}; ++kk_) {{")
        self.emit(3, f"{ct} a_[{TM}], b_[{TN}];")
        self.emit(3, f"#pragma unroll\n      for (int i = 0; i < {TM}; ++i) a_[i] = As[kk_][ty_ * {TM} + i];")
        self.emit(3, f"#pragma unroll\n      for (int j = 0; j < {TN}; ++j) b_[j] = Bs[kk_][tx_ + j * {BN // TN}];")
        self.emit(3, f"#pragma unroll\n      for (int i = 0; i < {TM}; ++i)\n        #pragma unroll\n        "
                     f"for (int j = 0; j < {TN}; ++j) acc_[i][j] += a_[i] * b_[j];")
        self.emit(2, "}")
        self.emit(2, "__syncthreads();")
        self.emit(1, "}")
        self.emit(1, f"#pragma unroll\n  for (int i = 0; i < {TM}; ++i) {{")
        self.emit(2, f"#pragma unroll\n    for (int j = 0; j < {TN}; ++j) {{")
        self.emit(3, f"const {I} gm_ = bm_ * {BM} + ty_ * {TM} + i, gn_ = bn_ * {BN} + tx_ + j * {BN // TN};")
        self.emit(3, "if (gm_ < M_ && gn_ < N_) {")
        self.decompose("gm_", g.m, 4)
        self.decompose("gn_", g.n, 4)
        self.emit(4, f"const {ct} {g.stage.acc.name} = acc_[i][j];")
        self.store(c.store, None, 1, 4)
        self.emit(3, "}")
        self.emit(2, "}")
        self.emit(1, "}")
        return self.tile_grid(g, BM, BN)

    def tile_origin(self, g: Contraction, BM: int, BN: int) -> None:
        """M_, N_, K_ and the BM x BN output tile (bm_, bn_) and batch entry of this block."""
        I = self.IDX
        M, N, K = _size(g.m), _size(g.n), _size(g.k)
        self.emit(1, f"const {I} M_ = {self.idx(M)}, N_ = {self.idx(N)}, K_ = {self.idx(K)};")
        self.emit(1, f"const {I} mt_ = (M_ + {BM - 1}) / {BM}, nt_ = (N_ + {BN - 1}) / {BN};")
        self.emit(1, f"{I} blk_ = blockIdx.x;")
        self.emit(1, f"const {I} bn_ = blk_ % nt_; blk_ /= nt_;")
        self.emit(1, f"const {I} bm_ = blk_ % mt_; blk_ /= mt_;")
        self.decompose("blk_", g.batch, 1)

    @staticmethod
    def tile_grid(g: Contraction, BM: int, BN: int):
        M, N, B = _size(g.m), _size(g.n), _size(g.batch)
        return sm.minimum(((M + (BM - 1)) // BM) * ((N + (BN - 1)) // BN) * B, 2 ** 31 - 1)

    def _stage_loop(self, s: StageInfo, start: str, step: str, vec: int, ind: int) -> None:
        I = self.IDX
        R = _size(s.loops)
        lv = s.loops[-1][0] if s.loops else None
        if not s.loops:
            # a reduction over size-1 axes is one update: only the thread that would take
            # iteration 0 of the loop applies it, or the threads' combine (a sum) counts it once
            # per thread (a sum of a keepdim sum over 256 threads was 256x too large on the H100)
            self.emit(ind, f"if (({start}) == 0) {{")
            self.update(s, None, 1, ind + 1)
            self.emit(ind, "}")
            return
        if s.acc.op == "max" and not s.acc.dtype.is_float:
            # NVRTC 13.0 (the H100 image's) miscompiles a fully unrolled int32 max over negated loads
            # (bench/debug_sass.py: every unrolled variant wrong, `unroll 1` right); keep it rolled
            self.emit(ind, "#pragma unroll 1")
        self.emit(ind, f"for ({I} r_ = {start}; r_ < {self.idx(R)}; r_ += {step}) {{")
        self.decompose("r_", s.loops, ind + 1)
        self.update(s, lv, vec, ind + 1)
        self.emit(ind, "}")

    def _rows_cached(self, c: Canon, mode: str, T: int, plan: RowCachePlan):
        I = self.IDX
        c = plan.canon
        nrows = _size(c.outer)
        C = self.cluster
        step = T * C if mode == "block" else 32  # positions p_ advance by the threads on one row
        if self.cfg.get("cache") == "smem":
            self.emit(1, "extern __shared__ __align__(16) unsigned char em_dyn_smem[];")
        if mode == "block":
            for ct in sorted({compute_type(s.acc.dtype) for s in c.stages}):
                self.emit(1, f"__shared__ {ct} em_red_{ct.replace(' ', '_')}[32];")
                if C > 1:
                    self.emit(1, f"__shared__ {ct} em_cl_{ct.replace(' ', '_')}[{2 * len(c.stages)}];")
        if mode == "block" and C > 1:
            # a cluster of C blocks shares each row: block r of the cluster takes lanes r*T .. r*T+T-1;
            # partial reductions meet through distributed shared memory (slots double-buffered by row)
            self.emit(1, "const unsigned crank_ = em_cluster_rank();")
            self.emit(1, "int par_ = 0;")
            self.emit(1, f"for ({I} row_ = blockIdx.x / {C}; row_ < {self.idx(nrows)}; row_ += gridDim.x / {C}) {{")
            lane, grid = f"(crank_ * {T} + threadIdx.x)", sm.minimum(nrows, (2 ** 31 - 1) // C) * C
        elif mode == "block":
            self.emit(1, f"for ({I} row_ = blockIdx.x; row_ < {self.idx(nrows)}; row_ += gridDim.x) {{")
            lane, grid = "threadIdx.x", sm.minimum(nrows, 2 ** 31 - 1)
        else:
            W = T // 32
            self.emit(1, "const int lane_ = threadIdx.x & 31;")
            self.emit(1, f"for ({I} row_ = ({I})blockIdx.x * {W} + (threadIdx.x >> 5); row_ < {self.idx(nrows)}; "
                         f"row_ += ({I})gridDim.x * {W}) {{")
            lane, grid = "lane_", sm.minimum((nrows + (W - 1)) // W, 2 ** 31 - 1)
        ind = 2
        self.decompose("row_", c.outer, ind)
        in_smem = self.cache_in_smem = self.cfg.get("cache") == "smem"
        off = 0
        for i, key in enumerate(plan.groups):
            nbytes = self.k.buffer(key[0]).dtype.itemsize * plan.vec
            raw_t = {16: "uint4", 8: "uint2", 4: "unsigned int"}[nbytes]
            if in_smem:  # each thread re-reads only the slots it wrote: no barrier needed
                if mode == "block":  # this block's share of the row
                    slot = f"k_ * {T} + threadIdx.x"
                    per = nbytes * plan.k * T
                else:  # each warp of the block has its own slab
                    slot = f"((threadIdx.x >> 5) * {plan.k} + k_) * 32 + {lane}"
                    per = nbytes * plan.k * step * (T // 32)
                self.cached[key] = f"reinterpret_cast<{raw_t}*>(em_dyn_smem + {off})[{slot}]"
                off += per
            else:
                self.cached[key] = f"rc{i}[k_]"
                self.emit(ind, f"{raw_t} rc{i}[{plan.k}];")
        if off > SMEM_CACHE_MAX:
            raise UnsupportedKernel(f"row cache needs {off} bytes of shared memory (max {SMEM_CACHE_MAX})")
        self.smem_bytes = off
        self.cached_loaded = set()
        # a row cached in shared memory has many steps per thread: unrolled by the "unroll" knob
        unroll = f"#pragma unroll {int(self.cfg.get('unroll', 4))}" if in_smem else "#pragma unroll"
        head = (f"{unroll}\n" + "  " * ind + f"for (int k_ = 0; k_ < {plan.k}; ++k_) {{")
        pos = f"const {I} p_ = (({I})k_ * {step} + {lane}) * {plan.vec};"
        for si, s in enumerate(c.stages):
            ct = compute_type(s.acc.dtype)
            op = 0 if s.acc.op == "sum" else 1
            self.emit(ind, f"{ct} {s.acc.name} = {acc_identity(s.acc.op, s.acc.dtype)};")
            self.emit(ind, head)
            self.emit(ind + 1, pos)
            self.update(s, "p_", plan.vec, ind + 1)
            self.emit(ind, "}")
            if mode == "block":
                self.emit(ind, f"{s.acc.name} = em_block_reduce<{ct}, {op}, {T // 32}>({s.acc.name}, "
                               f"em_red_{ct.replace(' ', '_')}, ({ct}){acc_identity(s.acc.op, s.acc.dtype)});")
                if C > 1:  # every block combines the C partials in rank order: identical results
                    slot = f"em_cl_{ct.replace(' ', '_')}[par_ * {len(c.stages)} + {si}]"
                    self.emit(ind, f"if (threadIdx.x == 0) {slot} = {s.acc.name};")
                    self.emit(ind, "em_cluster_sync();")
                    self.emit(ind, f"{s.acc.name} = em_cluster_ld(&{slot}, 0);")
                    self.emit(ind, f"#pragma unroll\n{'  ' * ind}for (unsigned r_ = 1; r_ < {C}; ++r_) "
                                   f"{s.acc.name} = em_combine<{ct}, {op}>({s.acc.name}, em_cluster_ld(&{slot}, r_));")
            else:
                self.emit(ind, f"{s.acc.name} = em_warp_reduce<{ct}, {op}>({s.acc.name});")
        if c.inner:
            self.emit(ind, head)
            self.emit(ind + 1, pos)
            self.store(c.store, "p_", plan.vec, ind + 1)
            self.emit(ind, "}")
        else:  # one value per row: every thread holds it after the reduction, the row's first stores
            self.emit(ind, f"if ({lane} == 0) {{")
            self.store(c.store, None, 1, ind + 1)
            self.emit(ind, "}")
        if C > 1 and mode == "block":
            self.emit(ind, "par_ ^= 1;")
        self.emit(1, "}")
        if C > 1 and mode == "block":
            self.emit(1, "em_cluster_sync();  /* no block leaves while the others may read its slots */")
        self.cached = {}
        self.cache_in_smem = False
        return grid

    def _cols(self, c: Canon, T: int):
        """Lane x of warp y: outer point 32*g + x, reduction steps y, y + W, ... (W warps); partial
        results meet in shared memory. Lanes past the last point compute on a clamped point and
        store nothing, so every thread reaches the barriers."""
        if T % 32 or not 32 <= T <= 1024:
            raise UnsupportedKernel("cols mode needs 32..1024 threads, a multiple of 32")
        if not c.stages:
            raise UnsupportedKernel("cols mode is for kernels with reductions")
        I, W = self.IDX, T // 32
        nrows = _size(c.outer)
        types = sorted({compute_type(s.acc.dtype) for s in c.stages})
        for ct in types:
            self.emit(1, f"__shared__ {ct} em_col_{ct.replace(' ', '_')}[{W}][33];")
        self.emit(1, "const int lane_ = threadIdx.x & 31, wy_ = threadIdx.x >> 5;")
        self.emit(1, f"const {I} nrows_ = {self.idx(nrows)};")
        self.emit(1, f"for ({I} g_ = blockIdx.x; g_ * 32 < nrows_; g_ += gridDim.x) {{")
        self.emit(2, "const bool live_ = g_ * 32 + lane_ < nrows_;")
        self.emit(2, f"const {I} row_ = live_ ? g_ * 32 + lane_ : nrows_ - 1;")
        self.decompose("row_", c.outer, 2)
        for s in c.stages:
            ct = compute_type(s.acc.dtype)
            op = 0 if s.acc.op == "sum" else 1
            smem = f"em_col_{ct.replace(' ', '_')}"
            self.emit(2, f"{ct} {s.acc.name} = {acc_identity(s.acc.op, s.acc.dtype)};")
            self._stage_loop(s, "wy_", str(W), 1, 2)
            self.emit(2, f"{smem}[wy_][lane_] = {s.acc.name};")
            self.emit(2, "__syncthreads();")
            self.emit(2, "if (wy_ == 0) {")
            self.emit(3, f"for (int y_ = 1; y_ < {W}; y_++) {s.acc.name} = em_combine<{ct}, {op}>({s.acc.name}, {smem}[y_][lane_]);")
            self.emit(3, f"{smem}[0][lane_] = {s.acc.name};")
            self.emit(2, "}")
            self.emit(2, "__syncthreads();")
            self.emit(2, f"{s.acc.name} = {smem}[0][lane_];")
            self.emit(2, "__syncthreads();  /* all have read the result before the next stage reuses it */")
        if c.inner:
            self.emit(2, f"for ({I} j_ = wy_; j_ < {self.idx(_size(c.inner))}; j_ += {W}) {{")
            self.decompose("j_", c.inner, 3)
            self.emit(3, "if (live_) {")
            self.store(c.store, None, 1, 4)
            self.emit(3, "}")
            self.emit(2, "}")
        else:
            self.emit(2, "if (wy_ == 0 && live_) {")
            self.store(c.store, None, 1, 3)
            self.emit(2, "}")
        self.emit(1, "}")
        return sm.minimum((nrows + 31) // 32, 2 ** 31 - 1)

    def _rows(self, c: Canon, mode: str, T: int, max_vec: int):
        if self.cluster > 1 and not (mode == "block" and self.cfg.get("cache")):
            raise UnsupportedKernel("a cluster shares a cached row: block mode with a row cache only")
        if self.cfg.get("cache") and mode in ("block", "warp"):
            plan = row_cache_plan(self.k, c, T * self.cluster if mode == "block" else 32, max_vec,
                                  in_smem=self.cfg.get("cache") == "smem")
            if plan is not None:
                return self._rows_cached(c, mode, T, plan)
            if self.cluster > 1:
                raise UnsupportedKernel(f"no row cache for {T} x {self.cluster} threads")
        I = self.IDX
        nrows = _size(c.outer)
        if mode == "block":
            W = T // 32
            if T % 32 or T < 32:
                raise UnsupportedKernel("block mode needs a multiple of 32 threads")
            for ct in sorted({compute_type(s.acc.dtype) for s in c.stages}):
                self.emit(1, f"__shared__ {ct} em_red_{ct.replace(' ', '_')}[32];")
            self.emit(1, f"for ({I} row_ = blockIdx.x; row_ < {self.idx(nrows)}; row_ += gridDim.x) {{")
            lane_start, lane_step, ind = "({})threadIdx.x".format(I), T, 2
            grid = sm.minimum(nrows, 2 ** 31 - 1)
        elif mode == "warp":
            W = T // 32
            self.emit(1, "const int lane_ = threadIdx.x & 31;")
            self.emit(1, f"for ({I} row_ = ({I})blockIdx.x * {W} + (threadIdx.x >> 5); row_ < {self.idx(nrows)}; "
                         f"row_ += ({I})gridDim.x * {W}) {{")
            lane_start, lane_step, ind = f"({I})lane_", 32, 2
            grid = sm.minimum((nrows + (W - 1)) // W, 2 ** 31 - 1)
        else:
            self.emit(1, f"for ({I} row_ = ({I})blockIdx.x * {T} + threadIdx.x; row_ < {self.idx(nrows)}; "
                         f"row_ += ({I})gridDim.x * {T}) {{")
            lane_start, lane_step, ind = "0", 1, 2
            grid = sm.minimum((nrows + (T - 1)) // T, 2 ** 31 - 1)
        self.decompose("row_", c.outer, ind)
        for s in c.stages:
            ct = compute_type(s.acc.dtype)
            op = 0 if s.acc.op == "sum" else 1
            self.emit(ind, f"{ct} {s.acc.name} = {acc_identity(s.acc.op, s.acc.dtype)};")
            vec = _reduce_vec(self.k, s, max_vec) if mode != "thread" else 1
            start = f"{lane_start} * {vec}" if vec > 1 else lane_start
            self._stage_loop(s, start, f"{lane_step * vec}", vec, ind)
            if mode == "block":
                self.emit(ind, f"{s.acc.name} = em_block_reduce<{ct}, {op}, {T // 32}>({s.acc.name}, "
                               f"em_red_{ct.replace(' ', '_')}, ({ct}){acc_identity(s.acc.op, s.acc.dtype)});")
            elif mode == "warp":
                self.emit(ind, f"{s.acc.name} = em_warp_reduce<{ct}, {op}>({s.acc.name});")
        if c.inner:
            vec = _store_vec(self.k, c.store, c.inner, max_vec) if mode != "thread" else 1
            start = f"{lane_start} * {vec}" if vec > 1 else lane_start
            self.emit(ind, f"for ({I} j_ = {start}; j_ < {self.idx(_size(c.inner))}; j_ += {lane_step * vec}) {{")
            self.decompose("j_", c.inner, ind + 1)
            self.store(c.store, c.inner[-1][0], vec, ind + 1)
            self.emit(ind, "}")
        else:
            guard = {"block": "threadIdx.x == 0", "warp": "lane_ == 0", "thread": None}[mode]
            if guard:
                self.emit(ind, f"if ({guard}) {{")
                self.store(c.store, None, 1, ind + 1)
                self.emit(ind, "}")
            else:
                self.store(c.store, None, 1, ind)
        self.emit(1, "}")
        return grid


# ------------------------------------------------------------------------------------------------
# row cache: one read of the row for every stage


@dataclass
class RowCachePlan:
    n: int  # row length shared by every stage and the tail
    vec: int
    k: int  # unrolled steps per thread
    canon: Canon  # stages and tail rewritten over the shared position variable p_
    groups: list  # (buffer, index, valid) loaded once per row
    regs: int  # 32-bit registers per thread holding the cache


SMEM_CACHE_MAX = 200 * 1024  # bytes of dynamic shared memory a cached row may use (H100: 227 KB per block)


def row_cache_plan(k: ir.Kernel, c: Canon, T: int, max_vec: int, max_regs: int = 32,
                   in_smem: bool = False) -> RowCachePlan | None:
    """Whether every stage and the tail walk the same row (one loop of the same static length), and the
    loads they share fit in registers: then the row is read from memory once instead of once per stage
    (softmax: 3 reads -> 1). A kernel with one value per row (argmax: a max, then the first index
    reaching it) has no tail loop: its stages share the row and one thread stores."""
    if not c.stages or len(c.inner) > 1 or any(len(st.loops) != 1 for st in c.stages):
        return None
    n = c.inner[0][1] if c.inner else c.stages[0].loops[0][1]
    if not n.is_const or any(st.loops[0][1] is not n for st in c.stages):
        return None
    N = n.value
    P = sm.index_var("p_", N)
    stages = []
    for st in c.stages:
        v = ir.substitute(st.update.value, {st.loops[0][0]: P}, {})
        stages.append(StageInfo(st.acc, [("p_", n)], ir.Update(st.update.name, st.update.op, v)))
    if c.inner:
        o = c.inner[0][0]
        store = ir.Store(c.store.buffer, sm.substitute(c.store.index, {o: P}), ir.substitute(c.store.value, {o: P}, {}))
    else:
        store = c.store
    canon = Canon(c.outer, stages, [("p_", n)] if c.inner else [], store)
    uses: dict = {}
    for stmt_val in [st.update.value for st in stages] + [store.value]:
        for v in ir.val_toposort([stmt_val]):
            if v.op == "load" and not isinstance(v.args[1], ir.Val) and "p_" in sm.free_vars(v.args[1]):
                uses.setdefault(v.args, set()).add(id(stmt_val))
    shared = [key for key, u in uses.items() if len(u) >= 2]
    if not shared:
        return None
    if c.inner:
        vec = _store_vec(k, store, [("p_", n)], max_vec)
    else:  # the widest load of every shared group that divides the row (16 bytes at most)
        vec = max_vec
        while vec > 1 and (N % vec or any(k.buffer(key[0]).dtype.itemsize * vec > 16 for key in shared)):
            vec //= 2
    while vec > 1 and not all(_lanes_contiguous(key[1], "p_", vec) and key[2] is sm.ONE for key in shared):
        vec //= 2
    if vec == 1 or N % (T * vec):
        return None
    steps = N // (T * vec)
    regs = sum(-(-(k.buffer(key[0]).dtype.itemsize * vec) // 4) for key in shared) * steps
    if in_smem:
        if regs * 4 * T > SMEM_CACHE_MAX:
            return None
    elif steps > 32 or regs > max_regs:
        return None
    return RowCachePlan(N, vec, steps, canon, shared, regs)


CLUSTER_ROW_BYTES = 96 * 1024  # a cached row above this is shared by a cluster of 2 blocks


def _cached_threads(k: ir.Kernel, c: Canon, max_vec: int) -> tuple | None:
    """(threads, "regs" | "smem", cluster): registers while a row's cache stays small (<= 16 per
    thread at 256 threads, where the rest of the kernel has room), else dynamic shared memory; a row
    that would fill most of an SM's shared memory is split over a cluster of two blocks, so that
    two half-rows' loads, reductions and stores overlap on each SM (softmax over 32768 floats:
    0.75-0.78 -> 0.83-0.84 of the copy floor, bench/results/variants-2026-11-21*.json)."""
    if row_cache_plan(k, c, 256, max_vec, max_regs=16) is not None:
        return 256, "regs", 1
    for T in (512, 1024):
        plan = row_cache_plan(k, c, T, max_vec, in_smem=True)
        if plan is not None:
            if plan.regs * 4 * T > CLUSTER_ROW_BYTES and row_cache_plan(k, c, 1024, max_vec, in_smem=True):
                return 512, "smem", 2
            return T, "smem", 1
    return None


# ------------------------------------------------------------------------------------------------
# schedules


def _unit_stride(e: sm.Expr, var: str) -> bool:
    x = sm.var(var, 0, None)
    return sm.substitute(e, {var: x + 1}) - sm.substitute(e, {var: x}) is sm.ONE


def columns_contiguous(k: ir.Kernel, c: Canon) -> bool:
    """Whether the reductions read memory along the outer points rather than along the reduction:
    some stage load is contiguous in the innermost outer variable and none in the innermost
    reduction variable (a sum over a middle axis). Lanes should then take outer points (cols mode)."""
    if not c.outer or any(not s.loops for s in c.stages):
        return False
    o = c.outer[-1][0]
    along_rows = along_red = False
    for s in c.stages:
        rv = s.loops[-1][0]
        for v in ir.val_toposort([s.update.value]):
            if v.op == "load" and not isinstance(v.args[1], ir.Val):
                along_rows |= _unit_stride(v.args[1], o)
                along_red |= _unit_stride(v.args[1], rv)
    return along_rows and not along_red


def loads_shared_by_columns(c: Canon) -> bool:
    """Whether no stage load depends on the innermost outer variable: neighbouring outputs read the
    same values (a scan's masked sums), so one thread per output gets every load as a broadcast and
    a warp per output would only add shuffles."""
    if not c.outer or any(not s.loops for s in c.stages):
        return False
    o, ext = c.outer[-1]
    if not (ext.is_const and ext.value >= 32):
        return False
    for s in c.stages:
        for v in ir.val_toposort([s.update.value]):
            if v.op == "load" and not isinstance(v.args[1], ir.Val) and o in sm.free_vars(v.args[1]):
                return False
    return True


# (BM, BN, BK, WM, WN) and the TFLOP/s each reached on a float32 4096^3 product on the H100
# (bench/results/variants-2026-11-21.json): warp tiles of 64x64 reuse each fragment most
# 32 x 128 (one warp row): not timed on 4096^3; its rate is set from a conv with 32 output channels
# (bench/results/variants-conv-2026-11-21d.json: 3.1x the 64x64 tile's useful TFLOP/s there), so the
# model takes it only where M <= 32 would leave most of a taller tile empty
MMA_SMALL_TILE = (64, 64, 16, 2, 2)
MMA_DEFAULT_TILES = [((128, 256, 16, 2, 4), 63.6), ((128, 128, 16, 2, 2), 61.8), ((128, 64, 16, 2, 2), 54.3),
                     ((64, 128, 16, 2, 2), 55.0), (MMA_SMALL_TILE, 47.9), ((32, 128, 16, 1, 4), 36.0)]
# 64x128's rate is set between 64x64's and 128x128's from whole problems, not from the 4096^3 GEMM:
# convs with 64 output channels ran 11-14% faster in it than in 64x64, a 2048x1024x8192 product 11%
# faster than in 128x64 (bench/results/knob-sweep-2026-11-22.json)
GPU_SMS = 132  # H100 SXM


def _default_mma_tile(M, N, K, B) -> dict:
    """The tile with the least estimated time: the padded work over the tile's rate, divided by how
    much of the last wave is busy (a 1024^3 product in 128x256 tiles would leave three quarters of
    the H100 idle). A 4-warp block shares its SM with another (two slots per SM). With K <= 64 the
    product is bound by writing C, and the smallest tile spreads that best. Symbolic sizes get the
    first tile."""
    pick = MMA_DEFAULT_TILES[0][0]
    if all(e.is_const for e in (M, N, K, B)):
        if K.value <= 64:
            pick = MMA_SMALL_TILE
        else:
            def cost(entry):
                (bm, bn, _, wm, wn), rate = entry
                tiles = -(-M.value // bm) * -(-N.value // bn) * B.value
                slots = GPU_SMS * (2 if wm * wn <= 4 else 1)
                busy = tiles / (-(-tiles // slots) * slots)
                return tiles * bm * bn / rate / busy
            pick = min(MMA_DEFAULT_TILES, key=cost)[0]
    return dict(zip(("BM", "BN", "BK", "WM", "WN"), pick), mode="mma")


# A conv with at most 64 output channels (M) fills a 64-row tile; 64 x 256 in one warp row gives each
# of its 4 warps a 64x64 warp tile (the best fragment reuse) where 64 x 128 in 2 x 2 warps gives 32x64.
# Measured on the H100 (bench/results/conv-m64-tile-2026-11-22e.json, default against default with
# the rule off, one machine): conv + ReLU + bias 8-10% faster, conv + BN + ReLU 13-17%, conv +
# HardSwish + avgpool 10-14%, conv + min + tanh 11%. Its 252 registers leave 2 blocks per SM: an
# epilogue of many operations (two Mish, ~60 per element) then runs latency-bound and lost 70%
# (knob-sweep-2026-11-22e-tiles.json), so the tile is taken only under a light epilogue; and with
# fewer than 4 tiles per SM the last partial wave costs more than the tile saves (the ResNet blocks'
# 392-tile convs: 10-15% slower with it).
MMA_CONV_M64_TILE = (64, 256, 16, 1, 4)
LIGHT_EPILOGUE_OPS = 12


def epilogue_ops(c: Canon) -> int:
    """ALU operations per output element in a contraction kernel's store (its epilogue)."""
    return sum(1 for v in ir.val_toposort([c.store.value]) if v.op not in ("load", "const", "acc", "index"))


def _conv_m64_tile(g: Contraction, c: Canon, cfg: dict) -> dict:
    M, N, B = _size(g.m), _size(g.n), _size(g.batch)
    if (len(g.k) > 1 and one_pass(g) and all(e.is_const for e in (M, N, B)) and 32 < M.value <= 64
            and (cfg["BM"], cfg["BN"]) == (64, 128) and -(-N.value // 256) * B.value >= 4 * GPU_SMS
            and epilogue_ops(c) <= LIGHT_EPILOGUE_OPS):
        return dict(cfg, **dict(zip(("BM", "BN", "BK", "WM", "WN"), MMA_CONV_M64_TILE)))
    return cfg


def _mma_pipeline(g: Contraction, cfg: dict) -> dict:
    """The k loop's default knobs (codegen/cuda_mma.py), as measured on whole KernelBench problems
    (bench/results/knob-sweep-2026-11-22*.json):

    * a plain GEMM (one k variable) in the 8-warp 128x256 tile whose tiles divide it prefetches
      unconditionally (`pf`): 3-14% on the square, batched, MLP and linear-chain GEMMs. In 64x64
      tiles it lost (the GRU loop 20%, K = 32 11%), and with ragged edges 23% (guarded loads);
    * an implicit-GEMM conv (several k variables) in one TF32 pass (ember/precision.py, or half
      operands) double-buffers shared memory (`stages`): AlexNet's stem 19%, the MobileNet blocks
      14%, the rest within 2% except transposed convs (2-5% slower). In three passes (float32
      accuracy) it lost: transposed convs 26%, MobileNet 12%."""
    M, N, K = (_size(x) for x in (g.m, g.n, g.k))
    if len(g.k) > 1:
        return dict(cfg, stages=2) if one_pass(g) else cfg
    if all(e.is_const for e in (M, N, K)) and M.value % cfg["BM"] == 0 and N.value % cfg["BN"] == 0 \
            and K.value % cfg["BK"] == 0 and cfg["BM"] * cfg["BN"] >= 128 * 256:
        return dict(cfg, pf=True)
    return cfg


def default_config(k: ir.Kernel) -> dict:
    """The unsearched schedule: elementwise for maps; block/warp/thread by reduction length."""
    from ..kernel.structure import has_locals
    if has_locals(k):
        return {"mode": "rowlocal", "threads": 256}
    c = canonical(k)
    if not c.stages:
        return {"mode": "elementwise", "threads": 256, "vec": 8}
    g = contraction_of(c)
    if g is not None:
        M, N, K = (_size(x) for x in (g.m, g.n, g.k))
        big = lambda e, n: (not e.is_const) or e.value >= n  # noqa: E731
        if big(M, 32) and big(N, 32) and big(K, 8):
            if mma_applicable(c):  # tensor cores (TF32; 3 passes keep float32 accuracy)
                return _mma_pipeline(g, _conv_m64_tile(g, c, _default_mma_tile(M, N, K, _size(g.batch))))
            return {"mode": "gemm", "BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4}
        # a conv with few output channels (LeNet's second, 16 x 409600 x 150): tensor cores with a
        # partly empty 32-row tile beat a warp per output (1.8 ms on the H100) by far
        if mma_applicable(c) and big(M, 8) and big(N, 8) and big(K, 8) and big(M * N, 1 << 16):
            return _mma_pipeline(g, _default_mma_tile(M, N, K, _size(g.batch)))
    R = max((_size(s.loops) for s in c.stages), key=lambda e: e.vmax if e.is_const else 1 << 40)
    r = R.value if R.is_const else 1 << 20
    rows = _size(c.outer)
    nrows = rows.value if rows.is_const else 1 << 20
    if r >= 16 and columns_contiguous(k, c):
        # enough threads in flight to cover memory latency: ~2^19 across the GPU
        w = 1
        while w < 32 and nrows * w < (1 << 19) and r >= 16 * w:
            w *= 2
        return {"mode": "cols", "threads": 32 * w} if w > 1 else {"mode": "thread", "threads": 128, "vec": 1}
    if r <= 1024 and nrows >= (1 << 16) and loads_shared_by_columns(c):
        return {"mode": "thread", "threads": 128, "vec": 1}
    if r <= 1024 and row_cache_plan(k, c, 32, 8) is not None and nrows >= 512:
        return {"mode": "warp", "threads": 128, "vec": 8, "cache": "regs"}
    if r >= 256:
        t = _cached_threads(k, c, 8)
        if t is not None:
            cfg = {"mode": "block", "threads": t[0], "vec": 8, "cache": t[1]}
            return dict(cfg, cluster=t[2]) if t[2] > 1 else cfg
    if r >= 2048 or (r >= 256 and nrows < 1024):
        return {"mode": "block", "threads": 512 if r >= 16384 else 256, "vec": 8}
    if r >= 32:
        return {"mode": "warp", "threads": 128, "vec": 8}
    return {"mode": "thread", "threads": 128, "vec": 1}


_RENDERED: dict = {}  # (id(kernel), config) -> (kernel, source, launch): the search renders a lot


def render_kernel(k: ir.Kernel, cfg: dict | None = None) -> tuple[str, dict]:
    import json
    cfg = dict(cfg or default_config(k))
    key = (id(k), json.dumps(cfg, sort_keys=True))
    hit = _RENDERED.get(key)
    if hit is not None and hit[0] is k:
        return hit[1], dict(hit[2])
    src, launch = _KernelWriter(k, cfg).render(None if cfg.get("mode") == "rowlocal" else canonical(k))
    launch["cfg"] = cfg
    if len(_RENDERED) > 20000:
        _RENDERED.clear()
    _RENDERED[key] = (k, src, launch)
    return src, dict(launch)


KERNEL_MARK = "// ==== ember kernel "


def render_program(kernels: list, configs: list | None = None) -> tuple[str, list]:
    """The program's CUDA source (the prelude, then each kernel after a marker line, so the runtime
    can compile and cache every kernel as its own module) and per kernel its launch geometry."""
    parts, launches, seen = [PRELUDE], [], {}
    for i, (k, _) in enumerate(kernels):
        cfg = configs[i] if configs else None
        src, launch = render_kernel(k, cfg)
        if k.name in seen and seen[k.name] != src:
            raise ValueError(f"two different kernels named {k.name}")
        if k.name not in seen:
            parts.append(f"{KERNEL_MARK}{k.name}\n{src}")
            seen[k.name] = src
        launches.append(launch)
    return "\n\n".join(parts) + "\n", launches


def split_program(source: str) -> tuple[str, dict]:
    """(prelude, {kernel name: kernel source}) of a program rendered by render_program."""
    chunks = source.split(KERNEL_MARK)
    out = {}
    for ch in chunks[1:]:
        name, _, body = ch.partition("\n")
        out[name.strip()] = body
    return chunks[0], out
