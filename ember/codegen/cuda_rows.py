"""The CUDA renderer's row mappings (a mixin of codegen/cuda.py's kernel writer): one thread, warp
or block per output row (`thread`, `warp`, `block`), 32 outputs per block (`cols`), and rows read
once into a row cache (registers or shared memory, split over a cluster of blocks when wide). The
modes and their knobs are described in codegen/cuda.py; when each is chosen, in cuda_schedule.py."""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel import ir
from ..kernel.interior import interior_form
from ..kernel.structure import Canon, StageInfo, UnsupportedKernel, _size
from .clike import acc_identity, compute_type
from .cuda_strip import emit_lane_stores, render_cols_strip, render_strip
from .cuda_walks import loads_walk
from .cuda_schedule import THREAD_CACHE_MAX, RowCachePlan, _reduce_vec, _store_vec, cols_vec_ok, row_cache_plan

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


class RowMappings:
    """Needs of the host class: k, cfg, target, IDX, cluster, smem_max, emit, idx, decompose, update, store."""

    def _stage_loop(self, s: StageInfo, start: str, step: str, vec: int, ind: int, also: tuple = ()) -> None:
        """Stage s's reduction loop over its lane's share; `also`: stages over the same loops updated
        in the same iterations (knob `fuse`: their loads in flight together)."""
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
        trips = R.value // int(step) if R.is_const and str(step).isdigit() and R.value % int(step) == 0 else 0
        if self.cfg.get("unroll") and 1 < trips and all(g.acc.dtype.is_float for g in (s, *also)):
            # knob `unroll`: every lane runs the same fixed number of iterations, unrolled, so all of
            # its loads can be in flight at once (a megakernel's few warps per SM hide less latency);
            # a longer loop by UNROLL_PART (nvcc's own choice was 4: the down projection's K = 8192)
            part = int(self.cfg["unroll"]) if int(self.cfg["unroll"]) > 1 else UNROLL_PART  # (a knob value > 1: that)
            self.emit(ind, "#pragma unroll" if trips <= UNROLL_MAX else f"#pragma unroll {part}")
            self.emit(ind, f"for (int i_ = 0; i_ < {trips}; ++i_) {{")
            self.emit(ind + 1, f"const {I} r_ = {start} + i_ * {step};")
        else:
            self.emit(ind, f"for ({I} r_ = {start}; r_ < {self.idx(R)}; r_ += {step}) {{")
        self.decompose("r_", s.loops, ind + 1)
        for g in (s, *also):
            self.update(g, lv, vec, ind + 1)
        self.emit(ind, "}")

    def _rows_cached(self, c: Canon, mode: str, T: int, plan: RowCachePlan):
        I = self.IDX
        c = plan.canon
        nrows = _size(c.outer)
        C = self.cluster
        step = T * C if mode == "block" else 1 if mode == "thread" else 32  # positions p_ advance by the threads on one row
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
        elif mode == "thread":  # the whole row in one thread's registers
            self.emit(1, f"for ({I} row_ = ({I})blockIdx.x * {T} + threadIdx.x; row_ < {self.idx(nrows)}; "
                         f"row_ += ({I})gridDim.x * {T}) {{")
            lane, grid = "0", sm.minimum((nrows + (T - 1)) // T, 2 ** 31 - 1)
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
            raw_t = {16: "uint4", 8: "uint2", 4: "unsigned int", 2: "unsigned short"}[nbytes]
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
        if off > self.smem_max:
            raise UnsupportedKernel(f"row cache needs {off} bytes of shared memory (max {self.smem_max})")
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
            if si == 0:
                self._load_ahead(plan, ind + 1)
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
            elif mode == "warp":
                self.emit(ind, f"{s.acc.name} = em_warp_reduce<{ct}, {op}>({s.acc.name});")
        if c.inner:
            self.emit(ind, head)
            self.emit(ind + 1, pos)
            self.store(c.store, "p_", plan.vec, ind + 1)
            self.emit(ind, "}")
        elif mode == "thread":
            self.store(c.store, None, 1, ind)
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

    def _load_ahead(self, plan: RowCachePlan, ind: int) -> None:
        """The tail's own groups (plan.ahead) into their registers, in the first stage's loop."""
        for key in plan.ahead:
            if key in self.cached_loaded:
                continue
            b, idx, _ = key
            raw_t = {16: "uint4", 8: "uint2", 4: "unsigned int", 2: "unsigned short"}[self.k.buffer(b).dtype.itemsize * plan.vec]
            self.emit(ind, f"{self.cached[key]} = *reinterpret_cast<const {raw_t}*>(&{b}[{self.idx(idx)}]);")
            self.cached_loaded.add(key)

    def _cols(self, c: Canon, T: int):
        """Lane x of warp y: outer point 32*g + x, reduction steps y, y + W, ... (W warps); partial
        results meet in shared memory. Lanes past the last point compute on a clamped point and
        store nothing, so every thread reaches the barriers. Knob `cvec` > 1: each lane takes that
        many consecutive points (vector loads along them, one accumulator each)."""
        if T % 32 or not 32 <= T <= 1024:
            raise UnsupportedKernel("cols mode needs 32..1024 threads, a multiple of 32")
        if not c.stages:
            raise UnsupportedKernel("cols mode is for kernels with reductions")
        cv = int(self.cfg.get("cvec", 1))
        if cv > 1:
            return self._cols_vec(c, T, cv)
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

    def _cols_vec(self, c: Canon, T: int, cv: int):
        """cols mode with `cv` consecutive outer points per lane (a GEMV x @ W over W [K, N]: each
        lane reads cv outputs' weights with one vector load per reduction step)."""
        why = cols_vec_ok(self.k, c, cv)
        if why is not None:
            raise UnsupportedKernel(f"cols cvec={cv}: {why}")
        o = c.outer[-1][0]
        s = c.stages[0]
        acc = next((x for x in ir.val_toposort([c.store.value]) if x.op == "acc" and x.args[0] == s.acc.name), None)
        I, W = self.IDX, T // 32
        ct = compute_type(s.acc.dtype)
        op = 0 if s.acc.op == "sum" else 1
        nrows = _size(c.outer)
        if self.cfg.get("own"):
            return self._cols_own(c, T, cv, s, acc)
        smem = f"em_colv_{ct.replace(' ', '_')}"
        self.emit(1, f"__shared__ {ct} {smem}[{W}][{32 * cv + 1}];")
        self.emit(1, "const int lane_ = threadIdx.x & 31, wy_ = threadIdx.x >> 5;")
        self.emit(1, f"const {I} nrows_ = {self.idx(nrows)};")
        self.emit(1, f"for ({I} g_ = blockIdx.x; g_ * {32 * cv} < nrows_; g_ += gridDim.x) {{")
        self.emit(2, f"const bool live_ = g_ * {32 * cv} + lane_ * {cv} < nrows_;")
        self.emit(2, f"const {I} row_ = live_ ? g_ * {32 * cv} + lane_ * {cv} : nrows_ - {cv};")
        self.decompose("row_", c.outer, 2)
        names = [f"{s.acc.name}_{j}" for j in range(cv)]
        for n in names:
            self.emit(2, f"{ct} {n} = {acc_identity(s.acc.op, s.acc.dtype)};")
        R = _size(s.loops)
        self.emit(2, f"for ({I} r_ = wy_; r_ < {self.idx(R)}; r_ += {W}) {{")
        self.decompose("r_", s.loops, 3)
        self._lane_updates(s, o, names, 3)
        self.emit(2, "}")
        for j, n in enumerate(names):
            self.emit(2, f"{smem}[wy_][lane_ * {cv} + {j}] = {n};")
        self.emit(2, "__syncthreads();")
        self.emit(2, "if (wy_ == 0) {")
        for j, n in enumerate(names):
            self.emit(3, f"for (int y_ = 1; y_ < {W}; y_++) {n} = em_combine<{ct}, {op}>({n}, {smem}[y_][lane_ * {cv} + {j}]);")
        self.emit(3, "if (live_) {")
        for j, n in enumerate(names):
            value, idx = self._point_store(c, o, acc, j, n, 4)
            self.emit(4, f"{c.store.buffer}[{self.idx(idx)}] = {value};")
        self.emit(3, "}")
        self.emit(2, "}")
        self.emit(2, "__syncthreads();  /* the partials are read before the next group reuses them */")
        self.emit(1, "}")
        return sm.minimum((nrows + 32 * cv - 1) // (32 * cv), 2 ** 31 - 1)

    def _lane_updates(self, s, o: str, names: list, ind: int) -> None:
        """Stage s's update of each lane's accumulator (names[l] for outer point o + l), its loads
        grouped into vector loads where contiguous along o."""
        self.emitted_groups = {}
        lanes = self.lanes([s.update.value], o, len(names))
        self._ind = ind
        env = self.vr.vals([v for lane in lanes for v in lane], ind)
        for n, lane in zip(names, lanes):
            self.emit(ind, self.vr.update(ir.Update(n, s.update.op, s.update.value), env[lane[0]]))

    def _point_store(self, c: Canon, o: str, acc, j: int, n: str, ind: int) -> tuple:
        """(the store's value at outer point o + j with its accumulator bound to n, as stored; its index)."""
        m = {o: sm.var(o, 0, None) + j} if j else {}
        memo = {acc: ir.Val("acc", (n,), acc.dtype)} if acc is not None else {}
        val = ir.substitute(c.store.value, m, memo)
        self.emitted_groups = {}
        self._ind = ind
        venv = self.vr.vals([val], ind)
        return self.vr.store(c.store.buffer, venv[val]), (sm.substitute(c.store.index, m) if m else c.store.index)

    def _cols_own(self, c: Canon, T: int, cv: int, s, acc):
        """Knob `own`: each warp its own `cv` x 32 outer points and the whole reduction (a short one:
        a pooling window over channels-last pixels, 9 taps of 16-byte loads), no partials in shared
        memory and no barrier, the lane's `cv` outputs one vector store where they are contiguous."""
        if int(self.cfg.get("pstrip", 1)) > 1:  # neighbouring points a lane too, their shared loads once
            return render_cols_strip(self, c, T, cv, int(self.cfg["pstrip"]), acc)
        I, W, o = self.IDX, T // 32, c.outer[-1][0]
        nrows = _size(c.outer)
        self.emit(1, "const int lane_ = threadIdx.x & 31;")
        self.emit(1, f"const {I} nrows_ = {self.idx(nrows)};")
        self.emit(1, f"for ({I} g_ = ({I})blockIdx.x * {W} + (threadIdx.x >> 5); g_ * {32 * cv} < nrows_; g_ += ({I})gridDim.x * {W}) {{")
        self.emit(2, f"const {I} row_ = g_ * {32 * cv} + lane_ * {cv};")
        self.emit(2, "if (row_ < nrows_) {")  # (the innermost outer extent is a multiple of cv: all in or all out)
        self.decompose("row_", c.outer, 3)
        names = [f"{s.acc.name}_{j}" for j in range(cv)]
        for n in names:
            self.emit(3, f"{compute_type(s.acc.dtype)} {n} = {acc_identity(s.acc.op, s.acc.dtype)};")
        R = _size(s.loops)
        # a window's taps all in flight; an integer max rolled (NVRTC 13.0 miscompiles it unrolled: _stage_loop)
        unroll = " 1" if s.acc.op == "max" and not s.acc.dtype.is_float else "" if R.is_const and R.value <= 32 else " 4"
        self.emit(3, f"#pragma unroll{unroll}\n      for ({I} r_ = 0; r_ < {self.idx(R)}; r_ += 1) {{")
        self.decompose("r_", s.loops, 4)
        self._lane_updates(s, o, names, 4)
        self.emit(3, "}")
        emit_lane_stores(self, c, acc, o, names, {}, 3)
        self.emit(2, "}")
        self.emit(1, "}")
        return sm.minimum((nrows + 32 * cv * W - 1) // (32 * cv * W), 2 ** 31 - 1)

    def _rows(self, c: Canon, mode: str, T: int, max_vec: int):
        if mode == "thread" and int(self.cfg.get("strip", 1)) > 1:  # V outputs a thread sharing their loads
            return render_strip(self, c, T, int(self.cfg["strip"]))
        if self.cluster > 1 and not (mode == "block" and self.cfg.get("cache")):
            raise UnsupportedKernel("a cluster shares a cached row: block mode with a row cache only")
        if self.cfg.get("cache") == "regs" and mode == "thread":
            plan = row_cache_plan(self.k, c, 1, 1, max_regs=THREAD_CACHE_MAX, scalar=True, target=self.target)
            if plan is not None:
                return self._rows_cached(c, mode, T, plan)
        if self.cfg.get("cache") and mode in ("block", "warp"):
            plan = row_cache_plan(self.k, c, T * self.cluster if mode == "block" else 32, max_vec,
                                  in_smem=self.cfg.get("cache") == "smem", target=self.target)
            if plan is not None:
                return self._rows_cached(c, mode, T, plan)
            if self.cluster > 1:
                raise UnsupportedKernel(f"no row cache for {T} x {self.cluster} threads")
        if mode == "warp" and self.cfg.get("rows"):
            return self._rows_shared(c, T, max_vec, int(self.cfg["rows"]))
        I = self.IDX
        nrows = _size(c.outer)
        if mode == "block":
            W = T // 32
            if T % 32 or T < 32:
                raise UnsupportedKernel("block mode needs a multiple of 32 threads")
            for ct in sorted({compute_type(s.acc.dtype) for s in c.stages}):
                self.emit(1, f"__shared__ {ct} em_red_{ct.replace(' ', '_')}[32];")
            self.emit(1, f"for ({I} row_ = blockIdx.x; row_ < {self.idx(nrows)}; row_ += gridDim.x) {{")
            lane_start, lane_step, ind = f"({I})threadIdx.x", T, 2
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
        walk = loads_walk(c.outer, [s.update.value for s in c.stages]) if mode == "thread" and self.cfg.get("walk") == "loads" \
            else c.outer  # (knob `walk`: lanes along the loads' contiguous axis)
        self.decompose("row_", shared_order(self.k, c) if self.cfg.get("order") == "shared" else walk, ind)
        form = interior_form(c) if mode == "thread" and self.cfg.get("interior") and not c.inner else None

        def body(c: Canon, ind: int):  # (the stages' loops and the store, of the canon given)
            fuse = mode == "warp" and self.cfg.get("fuse", FUSE_STAGES)
            for group in (_fused_stages(self.k, c.stages, max_vec) if fuse else [[s] for s in c.stages]):
                s = group[0]
                vec = _reduce_vec(self.k, s, max_vec) if mode != "thread" else 1
                start = f"{lane_start} * {vec}" if vec > 1 else lane_start
                for g in group:
                    self.emit(ind, f"{compute_type(g.acc.dtype)} {g.acc.name} = {acc_identity(g.acc.op, g.acc.dtype)};")
                # (several: independent reductions over the same range in one loop, their loads in flight together)
                self._stage_loop(s, start, f"{lane_step * vec}", vec, ind, tuple(group[1:]))
                for s in group:
                    self._combine(s, mode, T, ind)
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

        if form is None:
            body(c, ind)
        else:  # knob `interior`: where no guard can fail (kernel/interior.py) the taps run unguarded
            self.emit(ind, f"if ({self.idx(form[0])}) {{")
            body(form[1], ind + 1)
            self.emit(ind, "} else {")
            body(c, ind + 1)
            self.emit(ind, "}")
        self.emit(1, "}")
        return grid

    def _combine(self, s: StageInfo, mode: str, T: int, ind: int) -> None:
        """A stage's accumulator combined over the block's / warp's threads."""
        ct = compute_type(s.acc.dtype)
        op = 0 if s.acc.op == "sum" else 1
        if mode == "block":
            self.emit(ind, f"{s.acc.name} = em_block_reduce<{ct}, {op}, {T // 32}>({s.acc.name}, "
                           f"em_red_{ct.replace(' ', '_')}, ({ct}){acc_identity(s.acc.op, s.acc.dtype)});")
        elif mode == "warp":
            self.emit(ind, f"{s.acc.name} = em_warp_reduce<{ct}, {op}>({s.acc.name});")

    def _rows_shared(self, c: Canon, T: int, max_vec: int, RB: int):
        """Warp mode where a warp owns one point of the loops the largest operand depends on (a
        weight row) and every point of the other outer loops (the rows sharing it), `RB` rows at a
        time: the weight chunk a lane loads serves RB accumulators. Each output's order is the
        plain warp mode's (a lane's chunks in turn, then the warp's shuffle tree), whatever the
        number of rows."""
        if len(c.stages) != 1 or c.inner:
            raise UnsupportedKernel("shared rows: one reduction stage, no inner loops")
        I, W = self.IDX, T // 32
        s = c.stages[0]
        order = shared_order(self.k, c)
        reads = _shared_reads(self.k, c)
        groups = [lp for lp in order if lp[0] in reads]
        rows = [lp for lp in order if lp[0] not in reads]
        ng, nr = _size(groups), _size(rows)
        ct = compute_type(s.acc.dtype)
        ident = acc_identity(s.acc.op, s.acc.dtype)
        vec = _reduce_vec(self.k, s, max_vec)
        R = _size(s.loops)
        lv = s.loops[-1][0] if s.loops else None
        if not s.loops:
            raise UnsupportedKernel("shared rows: a reduction loop")
        self.emit(1, "const int lane_ = threadIdx.x & 31;")
        self.emit(1, f"{ct} accs1_;")
        self.emit(1, f"for ({I} g_ = ({I})blockIdx.x * {W} + (threadIdx.x >> 5); g_ < {self.idx(ng)}; "
                     f"g_ += ({I})gridDim.x * {W}) {{")
        self.decompose("g_", groups, 2)
        op = 0 if s.acc.op == "sum" else 1
        start = f"({I})lane_ * {vec}" if vec > 1 else f"({I})lane_"

        def r_loop(ind: int, j: str | None):  # one row (j None: mr_ in scope) or row j_ of RB
            self.emit(ind, f"for ({I} r_ = {start}; r_ < {self.idx(R)}; r_ += {32 * vec}) {{")
            self.decompose("r_", s.loops, ind + 1)
            if j is None:
                self.update(s, lv, vec, ind + 1)
            else:
                self.emit(ind + 1, "#pragma unroll")
                self.emit(ind + 1, f"for (int j_ = 0; j_ < {RB}; ++j_) {{")
                self.emit(ind + 2, f"const {I} mr_ = m0_ + j_;")
                self.decompose("mr_", rows, ind + 2)
                self.emit(ind + 2, f"{ct} {s.acc.name} = accs_[j_];")
                self.update(s, lv, vec, ind + 2)
                self.emit(ind + 2, f"accs_[j_] = {s.acc.name};")
                self.emit(ind + 1, "}")
            self.emit(ind, "}")

        def finish(ind: int, value: str):
            self.emit(ind, f"const {ct} {s.acc.name} = em_warp_reduce<{ct}, {op}>({value});")
            self.decompose("mr_", rows, ind)
            self.emit(ind, "if (lane_ == 0) {")
            self.store(c.store, None, 1, ind + 1)
            self.emit(ind, "}")

        # RB whole rows: unrolled, the weight chunk loaded once for all of them; fewer (the last
        # rows, a batch of one): a row at a time, as plain warp mode. The same order either way.
        self.emit(2, f"for ({I} m0_ = 0; m0_ < {self.idx(nr)}; m0_ += {RB}) {{")
        self.emit(3, f"if ({self.idx(nr)} - m0_ >= {RB}) {{")
        self.emit(4, f"{ct} accs_[{RB}];")
        self.emit(4, "#pragma unroll")
        self.emit(4, f"for (int j_ = 0; j_ < {RB}; ++j_) accs_[j_] = {ident};")
        r_loop(4, "j_")
        self.emit(4, "#pragma unroll")
        self.emit(4, f"for (int j_ = 0; j_ < {RB}; ++j_) {{")
        self.emit(5, f"const {I} mr_ = m0_ + j_;")
        finish(5, "accs_[j_]")
        self.emit(4, "}")
        self.emit(3, "} else {")
        self.emit(4, f"for ({I} mr_ = m0_; mr_ < {self.idx(nr)}; ++mr_) {{")
        self.emit(5, "{")
        self.decompose("mr_", rows, 6)
        self.emit(6, f"{ct} {s.acc.name} = {ident};")
        r_loop(6, None)
        self.emit(6, f"accs1_ = {s.acc.name};")
        self.emit(5, "}")
        finish(5, "accs1_")
        self.emit(4, "}")
        self.emit(3, "}")
        self.emit(2, "}")
        self.emit(1, "}")
        return sm.minimum((ng + (W - 1)) // W, 2 ** 31 - 1)


def _shared_reads(k, c: Canon) -> set:
    """The outer loop variables the largest operand's index depends on."""
    loads = [v for s in c.stages for v in ir.val_toposort([s.update.value])
             if v.op == "load" and not isinstance(v.args[1], ir.Val)]
    size = {b.name: sm.sym(b.size).vmax for b in k.buffers}
    if not loads:
        return {lp[0] for lp in c.outer}
    big = max(loads, key=lambda v: size.get(v.args[0], 0))
    return sm.free_vars(big.args[1]) & {lp[0] for lp in c.outer}


def shared_order(k, c: Canon) -> list:
    """c.outer with the loops the largest operand does not depend on varying fastest: neighbouring
    warps (or threads) compute the outputs that read the same rows of it (a weight row shared by a
    decode step's rows is read from memory once, then from L1)."""
    reads = _shared_reads(k, c)
    return [lp for lp in c.outer if lp[0] in reads] + [lp for lp in c.outer if lp[0] not in reads]


UNROLL_MAX = 16  # knob `unroll`: fixed trip counts up to this are unrolled
UNROLL_PART = 8  # ... longer ones by this much (8 iterations' loads a lane in flight: 79 registers, no spill)

# knob `fuse` (warp mode): off by default — the Llama-1B megakernel's SwiGLU GEMV tasks with both
# rows in one loop made the step slower (2.49 -> 2.74 ms, the task kernels one by one 1.32 -> 1.39:
# bench/results/gpu-session27-2026-11-27/i/: a rolled loop); through the unrolled loop no faster
# (1.797 against 1.795 ms of device time, gpu-session28-2026-11-27/f/)
FUSE_STAGES = 0


def _fused_stages(k: ir.Kernel, stages: list, max_vec: int) -> list:
    """`stages` in groups run by one loop (warp mode, knob `fuse`): consecutive reductions
    over loops of the same extents and vector width, none reading another's accumulator (SwiGLU's
    gate and up rows: both rows' loads in flight at once instead of one row's, then the other's).
    Each later stage's loop variables are renamed to the first's."""
    groups: list = []
    for s in stages:
        g = groups[-1] if groups else None
        if g is not None and s.loops and g[0].loops and [e for _, e in s.loops] == [e for _, e in g[0].loops] \
                and (s.acc.op != "max" or s.acc.dtype.is_float) and (g[0].acc.op != "max" or g[0].acc.dtype.is_float) \
                and _reduce_vec(k, s, max_vec) == _reduce_vec(k, g[0], max_vec) \
                and not ({x.args[0] for x in ir.val_toposort([s.update.value]) if x.op == "acc"} & {h.acc.name for h in g}):
            sub = {v: sm.index_var(v0, e) for (v, e), (v0, _) in zip(s.loops, g[0].loops)}
            upd = ir.Update(s.update.name, s.update.op, ir.substitute(s.update.value, sub))
            g.append(StageInfo(s.acc, g[0].loops, upd))
        else:
            groups.append([s])
    return groups
