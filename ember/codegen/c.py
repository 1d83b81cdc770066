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
from .. import symbolic as sm
from ..kernel import ir

PRELUDE = r"""
#include <math.h>
#include <stdint.h>
#include <limits.h>
""" + sm.C_HELPERS + r"""
#define EM_CLAMP(v, lo, hi) ((v) < (lo) ? (lo) : ((v) > (hi) ? (hi) : (v)))
static inline float em_bf2f(uint16_t x) { union { uint32_t u; float f; } c; c.u = ((uint32_t)x) << 16; return c.f; }
static inline uint16_t em_f2bf(float f) {
  union { uint32_t u; float f; } c; c.f = f;
  if ((c.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((c.u >> 16) | 0x40u);  /* quiet NaN */
  c.u += 0x7fffu + ((c.u >> 16) & 1u);  /* round to nearest even */
  return (uint16_t)(c.u >> 16);
}
static inline float em_maxf(float a, float b) { return (a > b || a != a) ? a : b; }
static inline double em_maxd(double a, double b) { return (a > b || a != a) ? a : b; }
static inline long long em_maxi(long long a, long long b) { return a > b ? a : b; }
#pragma omp declare reduction(emmaxf : float : omp_out = em_maxf(omp_out, omp_in)) initializer(omp_priv = -INFINITY)
#pragma omp declare reduction(emmaxd : double : omp_out = em_maxd(omp_out, omp_in)) initializer(omp_priv = -INFINITY)
"""

OMP_MIN_WORK = 1 << 15  # below this many inner iterations a kernel runs on one thread


def storage_type(d: dt.DType) -> str:
    return {"float16": "_Float16", "bfloat16": "uint16_t", "bool": "unsigned char"}.get(d.name, d.c_name)


def compute_type(d: dt.DType) -> str:
    if d.is_float:
        return "double" if d == dt.float64 else "float"
    if d.is_bool:
        return "int"
    return d.c_name


def _lit(value, d: dt.DType) -> str:
    if d.is_float:
        v = float(value)
        if v != v:
            return "NAN"
        if v in (float("inf"), float("-inf")):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        s = repr(v)
        return s if d == dt.float64 else s + "f"
    if d.is_bool:
        return "1" if value else "0"
    return f"{int(value)}LL" if d == dt.int64 else str(int(value))


def _names(k: ir.Kernel) -> dict:
    return {d: f"d_{d}" for d in k.dims}


class _Renderer:
    def __init__(self, k: ir.Kernel):
        self.k = k
        self.names = _names(k)
        self.bufs = {b.name: b for b in k.buffers}
        self.lines: list = []
        self.tmp = 0

    def idx(self, e) -> str:
        return sm.render_c(e, self.names)

    def emit(self, ind: int, s: str) -> None:
        self.lines.append("  " * ind + s)

    # ------------------------------------------------------------------ values
    def vals(self, roots: list, ind: int) -> dict:
        """Emit temporaries for the value DAG under `roots`; returns Val -> C expression."""
        out: dict = {}
        for v in ir.val_toposort(roots):
            e = self.val_expr(v, out)
            if v.op in ("const", "acc"):
                out[v] = e
                continue
            t = f"v{self.tmp}"
            self.tmp += 1
            self.emit(ind, f"{compute_type(v.dtype)} {t} = {e};")
            out[v] = t
        return out

    def val_expr(self, v: ir.Val, env: dict) -> str:
        op, a, d = v.op, v.args, v.dtype
        ct = compute_type(d)
        if op == "const":
            return _lit(a[0], d)
        if op == "acc":
            return a[0]
        if op == "index":
            return f"({ct})({self.idx(a[0])})"
        if op == "load":
            buf, index, valid = a
            b = self.bufs[buf]
            if isinstance(index, ir.Val):
                i = f"EM_CLAMP((long long)({env[index]}), 0LL, {self.idx(b.size)} - 1)"
            else:
                i = self.idx(index)
            raw = f"{buf}[{i}]"
            if b.dtype == dt.bfloat16:
                raw = f"em_bf2f({raw})"
            else:
                raw = f"({ct}){raw}"
            if valid is sm.ONE:
                return raw
            return f"({self.idx(valid)} ? {raw} : ({ct})0)"
        x = [env[s] for s in v.srcs]
        if op == "exp2":
            return f"exp2{'f' if ct == 'float' else ''}({x[0]})"
        if op == "log2":
            return f"log2{'f' if ct == 'float' else ''}({x[0]})"
        if op == "sin":
            return f"sin{'f' if ct == 'float' else ''}({x[0]})"
        if op == "sqrt":
            return f"sqrt{'f' if ct == 'float' else ''}({x[0]})"
        if op == "recip":
            return f"(({ct})1 / {x[0]})"
        if op == "neg":
            return f"(-{x[0]})"
        if op == "add":
            return f"({x[0]} + {x[1]})"
        if op == "mul":
            return f"({x[0]} * {x[1]})"
        if op == "mod":
            if d.is_float:
                return f"fmod{'f' if ct == 'float' else ''}({x[0]}, {x[1]})"
            return f"({x[0]} % {x[1]})"
        if op == "lt":
            return f"({x[0]} < {x[1]})"
        if op == "max":
            return f"em_max{'f' if ct == 'float' else 'd' if ct == 'double' else 'i'}({x[0]}, {x[1]})"
        if op == "where":
            return f"({x[0]} ? {x[1]} : {x[2]})"
        if op == "cast":
            src = v.srcs[0].dtype
            if d.is_bool:
                return f"({x[0]} != 0)"
            if d == dt.float16:
                return f"(float)(_Float16)({x[0]})"
            if d == dt.bfloat16:
                return f"em_bf2f(em_f2bf((float)({x[0]})))"
            if src.is_bool:
                return f"({ct})({x[0]})"
            return f"({ct})({x[0]})"
        raise AssertionError(op)  # pragma: no cover

    def store_expr(self, buf: str, val: str) -> str:
        b = self.bufs[buf]
        if b.dtype == dt.bfloat16:
            return f"em_f2bf({val})"
        if b.dtype.is_bool:
            return f"(unsigned char)(({val}) != 0)"
        return f"({storage_type(b.dtype)})({val})"

    # ------------------------------------------------------------------ statements
    def work(self, body) -> sm.Expr:
        total = sm.ZERO
        for s in body:
            if isinstance(s, ir.Loop):
                total = total + s.extent * self.work(s.body)
            elif isinstance(s, (ir.Store, ir.Update)):
                total = total + 1
        return total

    def acc_identity(self, s: ir.Acc) -> str:
        if s.op == "sum":
            return _lit(0, s.dtype)
        if s.dtype.is_float:
            return "(-INFINITY)"
        return {"int32": "INT_MIN", "int64": "LLONG_MIN"}.get(s.dtype.name, "0")

    def stmts(self, body, ind: int, top: bool = False, accs: dict | None = None) -> None:
        accs_here = dict(accs or {})
        accs_here.update({s.name: s for s in body if isinstance(s, ir.Acc)})
        for s in body:
            if isinstance(s, ir.Loop):
                self.loop(s, ind, top, accs_here)
            elif isinstance(s, ir.Acc):
                self.emit(ind, f"{compute_type(s.dtype)} {s.name} = {self.acc_identity(s)};")
            elif isinstance(s, ir.Update):
                env = self.vals([s.value], ind)
                v = env[s.value]
                if s.op == "sum":
                    self.emit(ind, f"{s.name} += {v};")
                else:
                    ct = compute_type(s.value.dtype)
                    fn = "em_maxf" if ct == "float" else "em_maxd" if ct == "double" else "em_maxi"
                    self.emit(ind, f"{s.name} = {fn}({s.name}, {v});")
            elif isinstance(s, ir.Store):
                env = self.vals([s.value], ind)
                self.emit(ind, f"{s.buffer}[{self.idx(s.index)}] = {self.store_expr(s.buffer, env[s.value])};")

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
            col = f" collapse({len(nest)})" if len(nest) > 1 else ""
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
            if top and clause:
                work = self.idx(self.work([s]))
                self.emit(ind, f"#pragma omp parallel for {clause} schedule(static) if(({work}) >= {OMP_MIN_WORK})")
            elif innermost and clause:
                self.emit(ind, f"#pragma omp simd {clause}")
        self.emit(ind, f"for (long long {v} = 0; {v} < {self.idx(s.extent)}; {v}++) {{")
        self.stmts(s.body, ind + 1, accs=accs)
        self.emit(ind, "}")

    def render(self) -> str:
        k = self.k
        params = []
        for b in k.buffers:
            const = "const " if b.role == "in" else ""
            params.append(f"{const}{storage_type(b.dtype)}* restrict {b.name}")
        params += [f"long long {self.names[d]}" for d in k.dims]
        self.emit(0, f"void {k.name}({', '.join(params)}) {{")
        self.stmts(k.body, 1, top=True)
        self.emit(0, "}")
        return "\n".join(self.lines)


def render_kernel(k: ir.Kernel) -> str:
    return _Renderer(k).render()


def render_program(kernels: list, buffer_index: dict, dim_index: dict, name: str = "ember_program") -> str:
    """One translation unit: every kernel, a wrapper ``ember_k<i>(bufs, dims)`` per launch (for
    per-kernel timing) and ``name(bufs, dims)`` running them all in order (one ctypes call per run)."""
    parts = [PRELUDE]
    seen = set()
    for k, _ in kernels:
        if k.name not in seen:
            parts.append(render_kernel(k))
            seen.add(k.name)
    calls = []
    for i, (k, args) in enumerate(kernels):
        av = [f"({storage_type(b.dtype)}*)bufs[{buffer_index[args[b.name]]}]" for b in k.buffers]
        av += [f"dims[{dim_index[d]}]" for d in k.dims]
        parts.append(f"void ember_k{i}(void** bufs, const long long* dims) {{ {k.name}({', '.join(av)}); }}")
        calls.append(f"  ember_k{i}(bufs, dims);")
    parts.append(f"void {name}(void** bufs, const long long* dims) {{\n" + "\n".join(calls) + "\n}")
    return "\n\n".join(parts) + "\n"
