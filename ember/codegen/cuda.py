"""CUDA renderer: kernel IR -> CUDA C for NVRTC (no headers needed).

A kernel of the canonical shape (outer parallel loops, reduction stages, an inner parallel tail; see
kernel/ir.py) maps onto the GPU in one of four *modes*, a schedule knob:

``elementwise``  no stages: all loops flattened; each thread handles `vec` consecutive elements of the
                 innermost dimension per step of a grid-stride loop (16-byte loads/stores where the
                 index is contiguous and aligned).
``thread``       one thread per outer point; stages and tail run serially in the thread.
``warp``         one warp per outer point; lanes stride the reduction (vectorised), shuffles combine;
                 lanes stride the tail. Knobs ``order``, ``rows``: cuda_rows.py `_rows_shared`.
``block``        one block per outer point; threads stride the reduction, warp shuffles + shared
                 memory combine and broadcast; threads stride the tail.
``cols``         32 consecutive outer points per block, one per lane (coalesced when consecutive
                 outer points are adjacent in memory: reductions over a non-innermost axis); the
                 block's warps split the reduction and combine through shared memory. Knobs
                 ``cvec`` (outputs per lane), ``own`` (each warp its own outputs, whole reduction).

float16/bfloat16: 16-bit integers converted with PTX ``cvt`` (round to nearest even); math in float; MAX keeps NaN.
"""
from __future__ import annotations

import re

from .. import dtypes as dt
from .. import primitives as P
from .. import symbolic as sm
from ..kernel import ir
from ..kernel.structure import Canon, Contraction, StageInfo, UnsupportedKernel, _size, canonical, contraction_of  # noqa: F401
from .clike import Dialect, ValueRenderer, acc_identity, compute_type
from .cuda_elementwise import render_elementwise
from .cuda_flash import FLASH_PRELUDE, render_flash
from .cuda_flash_decode import render_decode
from .cuda_scores import SCORES_PRELUDE, render_scores
from .cuda_guarded import render_guarded
from .cuda_scan import render_scan
from .cuda_transpose import render_transpose
from ..kernel.online import online_form
from ..kernel.scores import score_forms
from .cuda_mma import MMA_PRELUDE, mma_applicable, one_pass, render_mma  # noqa: F401 (re-exported)
from .cuda_flash_early import owns_wait
from .cuda_pdl import PDL_PRELUDE, emit_grid_dependency, has_pdl
from .cuda_rows import CLUSTER_HELPERS, RowMappings  # noqa: F401 (re-exported)
from .cuda_wgmma import consumer_warpgroups, render_wgmma, wgmma_applicable, wgmma_contraction  # noqa: F401 (re-exported)

# the schedule's public names, importable from here as before the split (tests, bench/)
from .cuda_schedule import (  # noqa: F401
    MMA_CONV_M64_TILE, MMA_DEFAULT_TILES, MMA_SMALL_TILE, SMEM_CACHE_MAX, RowCachePlan, _lanes_contiguous, _store_vec,
    columns_contiguous, default_config, epilogue_ops, has_clusters, has_tensor_cores, has_wgmma, loads_shared_by_columns,
    row_cache_plan, sm_count, tuning)

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
""" + MMA_PRELUDE + PDL_PRELUDE + P.helpers("static __device__ __forceinline__")  # the primitives' own helpers (philox)

MODES = ("elementwise", "thread", "warp", "block", "cols", "gemm", "mma", "wgmma")

# The zero of each raw load type: `unsigned int{}` is not C++ (a functional cast needs a one-word type).
RAW_ZERO = {"uint4": "uint4{}", "uint2": "uint2{}", "unsigned int": "0u", "unsigned short": "(unsigned short)0"}


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
# rendering


def index_type(k: ir.Kernel) -> str:
    small = all(b.size.is_const and b.size.value < 2 ** 31 - 1024 for b in k.buffers) and not k.dims
    return "int" if small else "long long"


class _KernelWriter(RowMappings):
    def __init__(self, k: ir.Kernel, cfg: dict, target=None):
        self.k = k
        self.cfg = cfg
        self.target = target  # None: the H100 preset's limits
        self.smem_max = tuning(target, "smem_cache_max", SMEM_CACHE_MAX)
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
            if self.cached:  # a thread-mode row cache: one element per step, each cached load its slot
                self.vec_groups.update({v: (tuple(v.args), 0, 1) for v in ir.val_toposort(vals) if v.op == "load" and tuple(v.args) in self.cached})
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
        raw_t = {16: "uint4", 8: "uint2", 4: "unsigned int", 2: "unsigned short"}[nbytes]
        st = CUDA.storage_type(buf.dtype)
        if key in self.cached and name is None:  # row cache: loaded once, read by every stage
            name = self.cached[key]
            if key not in self.cached_loaded:
                load = f"*reinterpret_cast<const {raw_t}*>(&{b}[{self.idx(idx)}])"
                if valid is not sm.ONE:
                    load = f"({self.idx(valid)} ? {load} : {RAW_ZERO[raw_t]})"
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
                load = f"({self.idx(valid)} ? {load} : {RAW_ZERO[raw_t]})"
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
        env = self.vr.vals([v for lane in lanes for v in lane], ind)
        for lane in lanes:
            self.emit(ind, self.vr.update(s.update, env[lane[0]]))

    # ---------------------------------------------------------------- modes
    def signature(self) -> str:
        params = []
        for b in self.k.buffers:
            const = "const " if b.role == "in" else ""
            params.append(f"{const}{CUDA.storage_type(b.dtype)}* __restrict__ {b.name}")
        params += getattr(self, "extra_params", [])
        if self.k.dims:  # read at entry (backends/cuda_dims.py: a graph's nodes stay put when dims change)
            params.append("const long long* __restrict__ em_dims_")
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
        if off > self.smem_max:
            raise UnsupportedKernel(f"local arrays need {off} bytes of shared memory (max {self.smem_max})")
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
        elif mode in ("flash", "decode", "scores"):
            T = 32 * int(self.cfg.get("warps", 4))
            if int(self.cfg.get("splits", 1)) > 1 or (mode == "decode" and self.cfg.get("trace")):
                # partials and arrival counters (launch["workspace"]); decode's knob `trace`: its timestamps
                self.extra_params = ["float* __restrict__ em_ws_"]
            if mode == "decode" and self.cfg.get("tma") and self.cfg.get("kt") and not self.cfg.get("bulk"):
                # K / V tiles by tensor-map copies (codegen/cuda_flash_decode.py knob `tma`): their maps first
                self.extra_params = ["const unsigned char* __restrict__ em_tma_"] + list(getattr(self, "extra_params", []))
        elif mode == "wgmma":  # a producer warpgroup and one consumer warpgroup per 64 rows
            T = 128 * (consumer_warpgroups(self.cfg) + int(self.cfg.get("producers", 1)))
            self.extra_params = ["const unsigned char* __restrict__ em_tma_"]  # the tensor maps
            if self.cfg.get("streamk"):  # (the partial tiles and their flags: codegen/cuda_wgmma_streamk.py)
                self.extra_params.append("float* __restrict__ em_ws_")
        self.cluster = int(self.cfg.get("cluster", 1))
        if mode == "wgmma" and self.cfg.get("mcast"):  # (b's tile shared by a pair: codegen/cuda_wgmma_mcast.py)
            self.cluster = 2 * self.cluster
        if self.cluster > 1 and not has_clusters(self.target):
            raise UnsupportedKernel(f"{self.target} has no thread-block clusters (sm_90 and later)")
        if mode == "mma" and not has_tensor_cores(self.target):
            raise UnsupportedKernel(f"{self.target} has no TF32 tensor cores (sm_80 and later)")
        if mode == "wgmma" and not has_wgmma(self.target):
            raise UnsupportedKernel(f"{self.target} has no wgmma tensor cores (sm_90a)")
        if self.cluster not in (1, 2, 4, 8) and not (mode == "decode" and self.cluster == 16):
            raise UnsupportedKernel(f"cluster of {self.cluster} blocks (1, 2, 4 or 8; 16 for decode)")
        dims = f"__cluster_dims__({self.cluster}, 1, 1) " if self.cluster > 1 else ""
        if self.cluster > 1:
            self.emit(0, CLUSTER_HELPERS)
        # wgmma: one block per SM owns the registers (or two, knob `occupancy`)
        bounds = f"{T}, {int(self.cfg.get('occupancy', 1))}" if mode == "wgmma" else f"{T}"
        self.emit(0, f'extern "C" __global__ void {dims}__launch_bounds__({bounds}) {self.k.name}({self.signature()}) {{')
        pdl = has_pdl(self.target)
        if pdl:  # programmatic dependent launch (codegen/cuda_pdl.py): before anything else runs
            emit_grid_dependency(self, self.cfg, wait=not (mode == "decode" and owns_wait(self.cfg)))
        for i, d in enumerate(self.k.dims):
            self.emit(1, f"const long long {self.names[d]} = em_dims_[{i}];")
        if self.cluster > 1 and mode not in ("block", "decode", "wgmma"):  # (wgmma: its k loop split, cuda_wgmma_kcluster.py)
            raise UnsupportedKernel(f"clusters are for block, decode and wgmma modes, not {mode}")
        if mode == "rowlocal":
            grid = self._rowlocal(T)
        elif mode in ("flash", "decode", "scores"):  # attention streamed (kernel/online.py; its backward: kernel/scores.py)
            form = (score_forms if mode == "scores" else online_form)(self.k)
            if form is None:
                raise UnsupportedKernel(f"{self.k.name}: not in the streamed form {mode} mode renders")
            if not has_tensor_cores(self.target):
                raise UnsupportedKernel(f"{self.target} has no mma.sync tensor cores (sm_80 and later)")
            self.lines[:0] = [FLASH_PRELUDE] + ([SCORES_PRELUDE] if mode == "scores" else [])
            grid = {"flash": render_flash, "decode": render_decode, "scores": render_scores}[mode](self, form)
        elif mode == "gemm":
            grid = self._gemm(c)
            T = self.T
        elif mode == "mma":
            grid = render_mma(self, c)
        elif mode == "wgmma":
            grid = render_wgmma(self, c)
        elif mode == "elementwise":
            grid = render_elementwise(self, c, T, max_vec)
        elif mode in ("block", "warp", "thread"):
            grid = self._rows(c, mode, T, max_vec)
        elif mode == "cols":
            grid = self._cols(c, T)
        elif mode in ("guarded", "scan", "transpose"):  # an embedding's gradient, a prefix sum, a transposing copy
            grid = {"guarded": render_guarded, "scan": render_scan, "transpose": render_transpose}[mode](self, c, T)
        else:
            raise UnsupportedKernel(f"unknown mode {mode!r}")
        self.emit(0, "}")
        if self.cfg.get("gridcap") and mode in ("thread", "warp", "elementwise", "scan"):  # grid-stride loops: at most
            grid = sm.minimum(grid, int(self.cfg["gridcap"]) * sm_count(self.target))  # gridcap blocks an SM
        launch = {"grid": sm.to_json(grid), "block": T, "smem": getattr(self, "smem_bytes", 0), "mode": mode}
        if pdl:
            launch["pdl"] = True
        if getattr(self, "workspace", 0):  # bytes the executor allocates zeroed for this launch
            launch["workspace"] = self.workspace
        if getattr(self, "streamk", False):  # (its blocks wait on each other: all resident, checked at load; its
            launch.update(cooperative=True, per_sm=1, workspace_shared=True)  # workspace one for every such launch)
        if getattr(self, "tma", None) is not None:  # wgmma: its tensor maps (maybe none: all gathered)
            launch["tma"] = self.tma
        return "\n".join(self.lines), launch

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

_RENDERED: dict = {}  # (kernel.key, config or None, target) -> (name, source, launch): the search renders a lot


def _target_key(target) -> tuple | None:
    # (everything the renderers read from a Target: its capabilities as well as its identity)
    return None if target is None else (target.kind, target.preset, target.index, target.arch, target.sm_count,
                                        target.compute_capability, tuple(target.tensor_cores))


def render_kernel(k: ir.Kernel, cfg: dict | None = None, target=None) -> tuple[str, dict]:
    """(source, launch geometry) of kernel `k` under schedule `cfg` (default: `default_config`) for
    `target` (None: the H100 preset). Memoised by structure: a kernel equal to one rendered before
    under another name (a model's repeated layers) is that source renamed."""
    import json
    # (keyed by the config the default resolves to: a default that changed — a benchmark's overlay,
    # an environment switch — is not served the source of the old one)
    cfg = dict(cfg or default_config(k, target))
    key = (k.key, json.dumps(cfg, sort_keys=True), _target_key(target))
    hit = _RENDERED.get(key)
    if hit is not None:  # (the name is a whole identifier in the source)
        name, src, launch = hit
        return (src if name == k.name else re.sub(rf"\b{re.escape(name)}\b", k.name, src)), dict(launch)
    src, launch = _KernelWriter(k, cfg, target).render(
        None if cfg.get("mode") in ("rowlocal", "flash", "decode", "scores") else canonical(k))
    launch["cfg"] = cfg
    if len(_RENDERED) > 20000:
        _RENDERED.clear()
    _RENDERED[key] = (k.name, src, dict(launch))
    return src, dict(launch)


KERNEL_MARK = "// ==== ember kernel "


def render_program(kernels: list, configs: list | None = None, target=None) -> tuple[str, list]:
    """The program's CUDA source (the prelude, then each kernel after a marker line, so the runtime
    can compile and cache every kernel as its own module) and per kernel its launch geometry."""
    parts, launches, seen = [PRELUDE], [], {}
    for i, (k, _) in enumerate(kernels):
        cfg = configs[i] if configs else None
        src, launch = render_kernel(k, cfg, target)
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
