"""C renderer: kernel IR -> C11 with OpenMP.

* The outermost run of perfectly nested ``parallel`` loops becomes one ``omp parallel for collapse``
  (guarded by an ``if`` on the amount of work, so tiny kernels don't pay for a thread team); a top-level
  reduction with no parallel loop around it is parallelised with an OpenMP reduction instead.
* Innermost ``reduce`` loops carry ``omp simd reduction`` so gcc may reassociate and vectorise them;
  max uses a declared reduction that propagates NaN like the MAX primitive.
* float16 is stored as ``_Float16`` and bfloat16 as ``uint16_t``; both are computed in float, and a
  cast to either rounds through the narrow type.
* Index arithmetic is ``long long``; named dimensions arrive as ``long long d_<name>`` parameters.
"""
from __future__ import annotations

from .. import dtypes as dt
from .. import primitives as P
from .. import symbolic as sm
from ..kernel import ir
from ..kernel.online import online_form
from ..kernel.structure import has_locals
from . import c_cascade, c_columns, c_gemm, c_guarded, c_online, c_rowcache, c_scan, c_window
from .clike import Dialect, ValueRenderer, acc_identity, compute_type

PRELUDE = r"""
#include <math.h>
#include <stdint.h>
#include <limits.h>
#ifdef EM_LIBMVEC
/* glibc's vector math library: gcc vectorises loops calling these (<= 4 ulp, IEEE special values) */
#pragma omp declare simd notinbranch
float exp2f(float);
#pragma omp declare simd notinbranch
float log2f(float);
#pragma omp declare simd notinbranch
float sinf(float);
#pragma omp declare simd notinbranch
double exp2(double);
#pragma omp declare simd notinbranch
double log2(double);
#pragma omp declare simd notinbranch
double sin(double);
#endif
""" + sm.C_HELPERS + r"""
#define EM_CLAMP(v, lo, hi) ((v) < (lo) ? (lo) : ((v) > (hi) ? (hi) : (v)))
/* a guarded value read unconditionally (its index is always inside the buffer): a select, not a branch */
static inline float em_guard_float(int c, float x) { return c ? x : 0.0f; }
static inline double em_guard_double(int c, double x) { return c ? x : 0.0; }
static inline int em_guard_int(int c, int x) { return c ? x : 0; }
static inline long long em_guard_long_long(int c, long long x) { return c ? x : 0; }
static inline float em_bf2f(uint16_t x) { union { uint32_t u; float f; } c; c.u = ((uint32_t)x) << 16; return c.f; }
static inline uint16_t em_f2bf(float f) {
  union { uint32_t u; float f; } c; c.f = f;
  if ((c.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((c.u >> 16) | 0x40u);  /* quiet NaN */
  c.u += 0x7fffu + ((c.u >> 16) & 1u);  /* round to nearest even */
  return (uint16_t)(c.u >> 16);
}
/* NaN-propagating max without a data-dependent branch (selects, a NaN in makes a + b NaN): the
   short-circuit form mispredicted on random data, a 3x3 max pool ran 2.4 ms instead of 0.7-1.0 */
static inline float em_maxf(float a, float b) { float m = a > b ? a : b; int n = (a != a) | (b != b); return n ? a + b : m; }
static inline double em_maxd(double a, double b) { double m = a > b ? a : b; int n = (a != a) | (b != b); return n ? a + b : m; }
static inline long long em_maxi(long long a, long long b) { return a > b ? a : b; }
#pragma omp declare reduction(emmaxf : float : omp_out = em_maxf(omp_out, omp_in)) initializer(omp_priv = -INFINITY)
#pragma omp declare reduction(emmaxd : double : omp_out = em_maxd(omp_out, omp_in)) initializer(omp_priv = -INFINITY)
""" + P.helpers("static inline")  # the primitives' own helpers (philox)

COLLAPSE_MIN = 512  # parallel iterations that share out evenly over any core count (the innermost stays a plain loop)
OMP_MIN_WORK = 1 << 15  # below this many inner iterations a kernel runs on one thread


def collapsed(nest: list) -> int:
    """How many loops of a parallel nest OpenMP collapses: only as many as make COLLAPSE_MIN
    iterations to share out. A collapsed loop recomputes its indices from one linear counter, which
    kept GCC from vectorising the inner loops: the ResNet-18 stem's BatchNorm + ReLU into a padded
    buffer (64 x 114 x 114, all three collapsed) took 3.5 ms, most of a max pool's worth of time."""
    prod = 1
    for i, lp in enumerate(nest):
        if not lp.extent.is_const:
            return i + 1
        prod *= lp.extent.value
        if prod >= COLLAPSE_MIN:
            return i + 1
    return len(nest)


class CDialect(Dialect):
    restrict = "restrict"
    unconditional_safe_loads = True

    def storage_type(self, d: dt.DType) -> str:
        return {"float16": "_Float16", "bfloat16": "uint16_t", "bool": "unsigned char"}.get(d.name, d.c_name)

    def widen(self, raw: str, d: dt.DType, ct: str) -> str:
        return f"em_bf2f({raw})" if d == dt.bfloat16 else f"({ct}){raw}"

    def narrow(self, val: str, d: dt.DType) -> str:
        return f"em_f2bf({val})" if d == dt.bfloat16 else f"({self.storage_type(d)})({val})"

    def round_through(self, val: str, d: dt.DType) -> str:
        return f"(float)(_Float16)({val})" if d == dt.float16 else f"em_bf2f(em_f2bf({val}))"


C = CDialect()


def _names(k: ir.Kernel) -> dict:
    return {d: f"d_{d}" for d in k.dims}


class _Renderer:
    def __init__(self, k: ir.Kernel, cfg: dict | None = None):
        self.k = k
        self.cfg = cfg if cfg is not None else default_config(k)
        self.names = _names(k)
        self.lines: list = []
        self.vr = ValueRenderer(k, C, self.names, self.emit)
        self.row_fills: dict = {}  # c_rowcache: Update / Store statements that write / read a row cache
        self.row_uses: dict = {}
        self._loop_var = ""
        self.cascaded: set = set()  # float sums flushed into doubles a chunk at a time (c_cascade)
        self.flush_after: dict = {}  # id(loop) -> the cascaded sums to flush after it
        self.chunk_loops: dict = {}  # id(innermost reduce loop) -> the cascaded sums it runs in chunks

    def idx(self, e) -> str:
        return sm.render_c(e, self.names)

    def emit(self, ind: int, s: str) -> None:
        self.lines.append("  " * ind + s)

    # ------------------------------------------------------------------ statements
    def work(self, body) -> sm.Expr:
        total = sm.ZERO
        for s in body:
            if isinstance(s, ir.Loop):
                total = total + s.extent * self.work(s.body)
            elif isinstance(s, (ir.Store, ir.Update)):
                total = total + 1
        return total

    def stmts(self, body, ind: int, top: bool = False, accs: dict | None = None) -> None:
        accs_here = dict(accs or {})
        accs_here.update({s.name: s for s in body if isinstance(s, ir.Acc)})
        decl, fills, uses = c_rowcache.plan(body, len(self.row_fills))
        self.row_fills.update(fills)
        self.row_uses.update(uses)
        casc, after, chunked = c_cascade.plan(body, self.work) if any(isinstance(s, ir.Acc) for s in body) else ({}, {}, {})
        self.flush_after.update(after)
        self.chunk_loops.update(chunked)
        for i, s in enumerate(body):
            if id(s) in decl:  # a per-row array for a value the row's later loop reads again
                rc = decl[id(s)]
                self.emit(ind, f"{compute_type(rc.fill.dtype)} {rc.name}[{rc.extent}];")
            if isinstance(s, ir.Loop):
                self.loop(s, ind, top, accs_here)
                for name in [n for n, last in casc.items() if last == i]:
                    self.emit(ind, c_cascade.finish(name))
                    self.cascaded.discard(name)
            elif isinstance(s, ir.Acc):
                self.emit(ind, f"{compute_type(s.dtype)} {s.name} = {acc_identity(s.op, s.dtype)};")
                if s.name in casc:
                    self.emit(ind, f"double {c_cascade.hi(s.name)} = 0.0;")
                    self.cascaded.add(s.name)
            elif isinstance(s, ir.Local):
                self.vr.locals[s.name] = s.dtype
                self.emit(ind, f"{compute_type(s.dtype)} {s.name}[{s.size}];")
            elif isinstance(s, ir.Update):
                env = self.vr.vals([s.value], ind)
                rc = self.row_fills.get(id(s))
                if rc is not None:
                    self.emit(ind, f"{rc.name}[{self._loop_var}] = {env[rc.fill]};")
                self.emit(ind, self.vr.update(s, env[s.value]))
            elif isinstance(s, ir.Store):
                rc = self.row_uses.get(id(s))
                pre = {rc.use: f"{rc.name}[{self._loop_var}]"} if rc is not None else None
                env = self.vr.vals([s.value], ind, pre)
                self.emit(ind, f"{s.buffer}[{self.idx(s.index)}] = {self.vr.store(s.buffer, env[s.value])};")

    def _reduction_clause(self, loop: ir.Loop, accs: dict) -> str:
        """`reduction(...)` for the accumulators a reduce loop updates (directly or in nested loops)."""
        parts = []
        for s in ir.walk_stmts(loop.body):
            if isinstance(s, ir.Update) and s.name in accs:
                a = accs[s.name]
                ct = compute_type(a.dtype)
                if a.op == "sum":
                    parts.append(f"reduction(+:{s.name})")
                elif ct in ("float", "double"):
                    parts.append(f"reduction(emmax{'f' if ct == 'float' else 'd'}:{s.name})")
                else:
                    parts.append(f"reduction(max:{s.name})")
        return " ".join(dict.fromkeys(parts))

    def loop(self, s: ir.Loop, ind: int, top: bool, accs: dict) -> None:
        v = s.var
        if s.kind == "parallel" and top:
            nest, cur = [s], s
            while len(cur.body) == 1 and isinstance(cur.body[0], ir.Loop) and cur.body[0].kind == "parallel":
                cur = cur.body[0]
                nest.append(cur)
            work = self.idx(self.work([s]))
            n = collapsed(nest)
            col = f" collapse({n})" if n > 1 else ""
            self.emit(ind, f"#pragma omp parallel for{col} schedule(static) if(({work}) >= {OMP_MIN_WORK})")
            for i, lp in enumerate(nest):
                self.emit(ind + i, f"for (long long {lp.var} = 0; {lp.var} < {self.idx(lp.extent)}; {lp.var}++) {{")
            self.stmts(cur.body, ind + len(nest), accs=accs)
            for i in reversed(range(len(nest))):
                self.emit(ind + i, "}")
            return
        if s.kind == "reduce":
            clause = self._reduction_clause(s, accs)
            innermost = not any(isinstance(x, ir.Loop) for x in s.body)
            chunked = self.chunk_loops.get(id(s), [])
            if chunked:
                self._chunked(s, ind, top, accs, clause, chunked)
                return
            if top and clause:
                work = self.idx(self.work([s]))
                highs = sorted({u.name for u in ir.walk_stmts([s]) if isinstance(u, ir.Update) and u.name in self.cascaded})
                clause = " ".join([clause] + [f"reduction(+:{c_cascade.hi(x)})" for x in highs])
                self.emit(ind, f"#pragma omp parallel for {clause} schedule(static) if(({work}) >= {OMP_MIN_WORK})")
            elif innermost and clause:
                self.emit(ind, f"#pragma omp simd {clause}")
        elif s.kind == "parallel" and not any(isinstance(x, ir.Loop) for x in s.body):
            # an innermost parallel loop (its iterations independent by construction): gcc left a
            # softmax's normalising store over a symbolic row (P + T keys) scalar without it
            self.emit(ind, "#pragma omp simd")
        self.emit(ind, f"for (long long {v} = 0; {v} < {self.idx(s.extent)}; {v}++) {{")
        self._loop_var = v  # (the row caches index by the innermost loop's variable)
        self.stmts(s.body, ind + 1, accs=accs)
        self.emit(ind, "}")
        if id(s) in self.flush_after:
            self.emit(ind, c_cascade.flush(self.flush_after[id(s)]))

    def _chunked(self, s: ir.Loop, ind: int, top: bool, accs: dict, clause: str, flushed: list) -> None:
        """An innermost reduce loop of cascaded sums, CHUNK iterations at a time: a float simd loop
        per chunk, its partial flushed into the double after it (c_cascade)."""
        v, n, b = s.var, self.idx(s.extent), c_cascade.CHUNK
        if top:  # a whole-kernel reduction: the chunks shared out, each thread with its own float and double
            highs = " ".join(f"reduction(+:{c_cascade.hi(x)})" for x in flushed)
            self.emit(ind, f"#pragma omp parallel for {clause} {highs} schedule(static) if(({n}) >= {OMP_MIN_WORK})")
        self.emit(ind, f"for (long long {v}_c = 0; {v}_c < {n}; {v}_c += {b}) {{")
        self.emit(ind + 1, f"const long long {v}_e = EM_MIN({v}_c + {b}, {n});")
        self.emit(ind + 1, f"#pragma omp simd {clause}")
        self.emit(ind + 1, f"for (long long {v} = {v}_c; {v} < {v}_e; {v}++) {{")
        self._loop_var = v
        self.stmts(s.body, ind + 2, accs=accs)
        self.emit(ind + 1, "}")
        self.emit(ind + 1, c_cascade.flush(flushed))
        self.emit(ind, "}")

    def render(self) -> str:
        k = self.k
        params = []
        for b in k.buffers:
            const = "const " if b.role == "in" else ""
            params.append(f"{const}{C.storage_type(b.dtype)}* restrict {b.name}")
        params += [f"long long {self.names[d]}" for d in k.dims]
        if self.cfg.get("prepack"):  # this launch's slot of the program's caches (its packed weights)
            params.append("void** restrict em_cache")
        form = self.cfg.get("form")
        g = _contraction(k) if form in ("blocked", "packed") else None
        if form == "packed" and not c_gemm.supports(g):
            g, form = None, "loops"
        if form == "packed":
            self.lines.append(c_gemm.helpers(k.name, self.cfg))
        self.emit(0, f"void {k.name}({', '.join(params)}) {{")
        if g is not None and form == "packed":
            c_gemm.render(self, g, _canon(k).store, self.cfg, OMP_MIN_WORK)
        elif form == "online":
            c_online.render(self, online_form(k), OMP_MIN_WORK)
        elif form == "window" and c_window.applicable(_canon(k)):
            c_window.render(self, _canon(k), self.cfg, OMP_MIN_WORK)
        elif form == "guarded" and c_guarded.applicable(_canon(k)):
            c_guarded.render(self, _canon(k), OMP_MIN_WORK)
        elif form == "scan" and c_scan.applicable(_canon(k)):  # a prefix sum (kernel/scan.py)
            c_scan.render(self, _canon(k), OMP_MIN_WORK)
        elif form == "columns" and not has_locals(k) and c_columns.applicable(_canon(k)):  # a sum down columns
            c_columns.render(self, _canon(k), OMP_MIN_WORK)
        elif g is not None:
            self.contraction(g)
        else:
            self.stmts(k.body, 1, top=True)
        self.emit(0, "}")
        return "\n".join(self.lines)

    def decompose(self, flat: str, loops: list, ind: int) -> None:
        t = f"t_{loops[0][0]}" if loops else None
        if not loops:
            return
        self.emit(ind, f"long long {t} = {flat};")
        for var, ext in reversed(loops[1:]):
            self.emit(ind, f"const long long {var} = {t} % {self.idx(ext)}; {t} /= {self.idx(ext)};")
        self.emit(ind, f"const long long {loops[0][0]} = {t};")

    def contraction(self, g) -> None:
        """out[b, m, n] = epilogue(sum_k a[b, m, k] * b[b, n, k]), with the n loop innermost and
        contiguous-friendly: each (b, m) row keeps NB accumulators over a block of n, so the k loop
        streams a's row once and the j loop over b vectorises."""
        ct = compute_type(g.stage.acc.dtype)
        NB = int(self.cfg.get("nb", 16 if ct == "float" else 8))
        M, N, K, B = (sm.prod(e for _, e in x) for x in (g.m, g.n, g.k, g.batch))
        work = self.idx(B * M * N * K)
        self.emit(1, f"const long long BM_ = {self.idx(B * M)}, N_ = {self.idx(N)}, K_ = {self.idx(K)};")
        self.emit(1, f"#pragma omp parallel for collapse(2) schedule(static) if(({work}) >= {OMP_MIN_WORK})")
        self.emit(1, "for (long long bm_ = 0; bm_ < BM_; bm_++) {")
        self.emit(2, f"for (long long n0_ = 0; n0_ < N_; n0_ += {NB}) {{")
        self.decompose("bm_", g.batch + g.m, 3)
        self.emit(3, f"{ct} acc_[{NB}];")
        self.emit(3, f"for (int j_ = 0; j_ < {NB}; j_++) acc_[j_] = 0;")
        self.emit(3, f"const long long nn_ = N_ - n0_ < {NB} ? N_ - n0_ : {NB};")
        self.emit(3, "for (long long k_ = 0; k_ < K_; k_++) {")
        self.decompose("k_", g.k, 4)
        env = self.vr.vals([g.a], 4)
        self.emit(4, f"const {ct} av_ = ({ct}){env[g.a]};")
        self.emit(4, "#pragma omp simd")
        self.emit(4, "for (long long j_ = 0; j_ < nn_; j_++) {")
        self.decompose("n0_ + j_", g.n, 5)
        env = self.vr.vals([g.b], 5)
        self.emit(5, f"acc_[j_] += av_ * ({ct}){env[g.b]};")
        self.emit(4, "}")
        self.emit(3, "}")
        self.emit(3, "for (long long j_ = 0; j_ < nn_; j_++) {")
        self.decompose("n0_ + j_", g.n, 4)
        self.emit(4, f"const {ct} {g.stage.acc.name} = acc_[j_];")
        st = _canon(self.k).store
        env = self.vr.vals([st.value], 4)
        self.emit(4, f"{st.buffer}[{self.idx(st.index)}] = {self.vr.store(st.buffer, env[st.value])};")
        self.emit(3, "}")
        self.emit(2, "}")
        self.emit(1, "}")


def _canon(k: ir.Kernel):
    from ..kernel.structure import UnsupportedKernel, canonical
    try:
        return canonical(k)
    except UnsupportedKernel:
        return None


def _contraction(k: ir.Kernel):
    """The contraction a kernel computes, when it can be rendered as a blocked loop nest."""
    from ..kernel.structure import contraction_of
    c = _canon(k)
    g = contraction_of(c) if c is not None else None
    return g if g is not None and g.n and g.m else None


# The packed form's thresholds, measured on the 2-core Zen 4 (end to end, packed vs the old forms):
# 32^3 ties (17 us, call overhead), 64^3 packed 30 vs 33-47 us, 128^3 69-76 vs 152-177 us, 1024^3
# 11 ms vs 240 ms; with n = 10 (a 512 -> 10 classifier at batch 64, padded to NR = 32) it lost 8%.
PACKED_MIN_FLOPS = 1 << 18  # multiply-adds (batch * M * N * K)
PACKED_MIN_N = 16
PACKED_M_GUESS = 64  # rows assumed for a contraction whose M is a named dimension
PACKED_HALF_MIN_M = 2  # float16/bfloat16 products with fewer rows keep the forms that stream half bytes


def default_config(k: ir.Kernel, wide: bool = False, bf16: bool = False) -> dict:
    """The CPU schedule without search: large float32 contractions with static shapes take the packed
    GEMM form (`c_gemm.py`) where the CPU has AVX-512 (`wide`; measured there, bench/cpu_gemm.py),
    with bfloat16 panels where the product is bfloat16 and the CPU has AVX-512 BF16 (`bf16`).
    Otherwise contractions whose b operand is contiguous along n use the blocked form (n innermost,
    vectorised); when b is contiguous along k (a linear layer's weight) the plain loops' dot products
    vectorise better."""
    if has_locals(k) and c_online.applicable(online_form(k)):  # a streamed kernel (kernel/online.py)
        return {"form": "online"}
    if not has_locals(k) and c_scan.applicable(_canon(k)):  # a prefix sum: a running sum a block
        return {"form": "scan"}
    g = _contraction(k)
    if wide and c_gemm.supports(g):
        work, N = sm.prod(e for _, e in g.batch + g.m + g.n + g.k), sm.prod(e for _, e in g.n)
        # a named dim (a prompt's length T, a cache's filled length P) counts as PACKED_M_GUESS: the
        # packed form's edges handle any M and N, and a program compiled for every length should not
        # take loops for all of them (a bf16 prefill's attention scores over P + T keys ran at
        # 16 GFLOP/s in the loops: 32 of 127 ms at 256 tokens on the 2-core Zen 4)
        M = sm.prod(e for _, e in g.m)
        guess = {d: PACKED_M_GUESS for d in sm.free_vars(work)}
        if not work.is_const:
            work = sm.const(int(sm.evaluate(work, guess)))
        if not N.is_const:
            N = sm.const(max(int(sm.evaluate(N, guess)), PACKED_MIN_N))
        # a half-precision GEMV streams its weights at half the bytes in the plain forms; packed, its
        # panels would be float32 (measured: a bf16 Llama's decode 2.96 -> 3.44 ms/token packed)
        gemv_half = M.is_const and M.value < PACKED_HALF_MIN_M and c_gemm.half_product(g)
        if work.is_const and work.value >= PACKED_MIN_FLOPS and N.is_const and N.value >= PACKED_MIN_N \
                and not gemv_half:
            # a bfloat16 product on a CPU with AVX-512 BF16 multiplies its pairs in bfloat16 (`bf16`)
            if bf16 and c_gemm.bf16_product(g):
                return dict(c_gemm.BF16_DEFAULT)
            B, M = sm.prod(e for _, e in g.batch), sm.prod(e for _, e in g.m)
            if B.is_const and M.is_const and N.is_const:  # (N: a named one was replaced by its guess)
                if all(e.is_const for _, e in g.n):
                    return c_gemm.choose_tiles(B.value, M.value, N.value)
            return dict(c_gemm.DEFAULT)
    if g is None and c_guarded.applicable(_canon(k)):  # an embedding's gradient (a one-hot contraction)
        return {"form": "guarded"}
    if g is None and c_window.applicable(_canon(k)):  # a depthwise conv, a pooling window
        return {"form": "window", "vb": c_window.VB}
    if g is None and not has_locals(k) and c_columns.applicable(_canon(k)):  # a sum down columns
        return {"form": "columns"}
    if g is None or g.b_k_fastest:
        return {"form": "loops"}
    N = sm.prod(e for _, e in g.n)
    if N.is_const and N.value < 8:
        return {"form": "loops"}
    return {"form": "blocked", "nb": 16}


def space(k: ir.Kernel, bf16: bool = False) -> list:
    """CPU schedule knobs the search may try for a kernel."""
    if has_locals(k) and c_online.applicable(online_form(k)):
        return [{"form": "online"}]
    g = _contraction(k)
    if g is None:
        window = [{"form": "window", "vb": vb} for vb in (16, 64, 256)] if c_window.applicable(_canon(k)) else []
        guarded = [{"form": "guarded"}] if c_guarded.applicable(_canon(k)) else []
        scan = [{"form": "scan"}] if c_scan.applicable(_canon(k)) else []
        columns = [{"form": "columns"}] if not has_locals(k) and c_columns.applicable(_canon(k)) else []
        return [{"form": "loops"}] + window + guarded + scan + columns
    out = [{"form": "loops"}] + [{"form": "blocked", "nb": nb} for nb in (8, 16, 32, 64)]
    if c_gemm.supports(g):
        out += [dict(c_gemm.DEFAULT, mr=mr, nr=nr, kc=kc) for mr, nr in ((8, 32), (6, 32), (12, 32), (4, 64))
                for kc in (256, 384)]
        out += [dict(c_gemm.DEFAULT, nc=nc) for nc in (512, 1024)]  # the B block (L2 on small-M convs)
        # C computed transposed (few columns on the MR side): not a default, it won and lost by shape
        # (512x12x512: 101 vs 138 us; 256x10x1024: 139 vs 158 us, both behind the loops' 108 us)
        out += [dict(c_gemm.DEFAULT, swap=True, nr=nr) for nr in (16, 32)]
        if bf16 and c_gemm.bf16_product(g):
            out += [dict(c_gemm.BF16_DEFAULT, mr=mr, kc=kc) for mr in (8, 12) for kc in (384, 768)]
    return out


def render_kernel(k: ir.Kernel, cfg: dict | None = None) -> str:
    return _Renderer(k, cfg).render()


def render_program(kernels: list, buffer_index: dict, dim_index: dict, name: str = "ember_program",
                   configs: list | None = None) -> str:
    """One translation unit: every kernel, a wrapper ``ember_k<i>(bufs, dims)`` per launch (for
    per-kernel timing) and ``name(bufs, dims)`` running them all in order (one ctypes call per run)."""
    parts = [PRELUDE]
    seen = set()
    for i, (k, _) in enumerate(kernels):
        if k.name not in seen:
            parts.append(render_kernel(k, configs[i] if configs else None))
            seen.add(k.name)
    calls = []
    for i, (k, args) in enumerate(kernels):
        av = [f"({C.storage_type(b.dtype)}*)bufs[{buffer_index[args[b.name]]}]" for b in k.buffers]
        av += [f"dims[{dim_index[d]}]" for d in k.dims]
        if configs and configs[i] and configs[i].get("prepack"):
            av.append(f"caches + {2 * i}")
        parts.append(f"void ember_k{i}(void** bufs, const long long* dims, void** caches) {{ {k.name}({', '.join(av)}); }}")
        calls.append(f"  ember_k{i}(bufs, dims, caches);")
    parts.append(f"void {name}(void** bufs, const long long* dims, void** caches) {{\n" + "\n".join(calls) + "\n}")
    # the caches: two slots per launch (packed weights, the buffer they were packed from), owned by
    # the executor that passes them and freed here when it goes
    parts.append("void ember_free_caches(void** caches, long long n) {\n"
                 "  for (long long i = 0; i < n; i += 2) { free(caches[i]); caches[i] = 0; caches[i + 1] = 0; }\n}")
    return "\n\n".join(parts) + "\n"
