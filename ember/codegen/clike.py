"""What the C and CUDA renderers share: rendering a kernel-IR value DAG as C expressions.

A `Dialect` supplies the few things that differ — storage types of narrow floats, how a stored value
is widened to the compute type and narrowed back, the restrict keyword. Values are computed in float
for float32/float16/bfloat16 (double for float64), so a cast to a narrow float rounds through the
narrow type explicitly.
"""
from __future__ import annotations

from .. import dtypes as dt
from .. import primitives as P
from .. import symbolic as sm
from ..kernel import ir


class Dialect:
    name = "c"  # which of a primitive's forms applies (ember/primitives: Primitive.render)
    restrict = "restrict"
    # a guarded load whose index stays inside its buffer for every iteration is read unconditionally
    # and selected (`em_guard`), which leaves no masked load or branch in the loop (C: gcc vectorises)
    unconditional_safe_loads = False

    def storage_type(self, d: dt.DType) -> str:
        raise NotImplementedError

    def widen(self, raw: str, d: dt.DType, ct: str) -> str:
        """A stored element of dtype d as a compute-type expression."""
        raise NotImplementedError

    def narrow(self, val: str, d: dt.DType) -> str:
        """A compute-type value as the storage type of d (rounding to nearest even)."""
        raise NotImplementedError

    def round_through(self, val: str, d: dt.DType) -> str:
        """A compute-type value rounded to the precision of narrow float d, still in compute type."""
        raise NotImplementedError


def compute_type(d: dt.DType) -> str:
    if d.is_float:
        return "double" if d == dt.float64 else "float"
    if d.is_bool:
        return "int"
    return d.c_name


def literal(value, d: dt.DType) -> str:
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


def max_fn(ct: str) -> str:
    return "em_maxf" if ct == "float" else "em_maxd" if ct == "double" else "em_maxi"


def _inside(index, size) -> bool:
    """Whether a static-bounds index expression stays within [0, size) for every loop iteration."""
    try:
        return size.is_const and index.vmin is not None and index.vmax is not None \
            and index.vmin >= 0 and index.vmax < size.value
    except (AttributeError, TypeError):
        return False


def acc_identity(op: str, d: dt.DType) -> str:
    if op == "sum":
        return literal(0, d)
    if d.is_float:
        return "(-INFINITY)"
    return {"int32": "INT_MIN", "int64": "LLONG_MIN"}.get(d.name, "0")


class ValueRenderer:
    """Emits temporaries for value DAGs. `load_hook(v, env)` may replace how a load is rendered
    (the CUDA renderer uses it for vector loads)."""

    def __init__(self, k: ir.Kernel, dialect: Dialect, names: dict, emit, load_hook=None):
        self.k = k
        self.d = dialect
        self.names = names
        self.bufs = {b.name: b for b in k.buffers}
        self.emit = emit
        self.tmp = 0
        self.load_hook = load_hook
        self.locals: dict = {}  # kernel-local arrays: name -> dtype (held in the compute type)

    def idx(self, e) -> str:
        return sm.render_c(e, self.names)

    def vals(self, roots: list, ind: int, env: dict | None = None) -> dict:
        env = dict(env or {})
        for v in ir.val_toposort(roots):
            if v in env:
                continue
            e = self.expr(v, env)
            if v.op in ("const", "acc"):
                env[v] = e
                continue
            t = f"v{self.tmp}"
            self.tmp += 1
            self.emit(ind, f"{compute_type(v.dtype)} {t} = {e};")
            env[v] = t
        return env

    def load(self, v: ir.Val, env: dict) -> str:
        buf, index, valid = v.args
        if buf in self.locals:
            return f"{buf}[{self.idx(index)}]"
        b = self.bufs[buf]
        ct = compute_type(v.dtype)
        if isinstance(index, ir.Val):  # gather: clamp so a bad index cannot read out of bounds
            i = f"EM_CLAMP((long long)({env[index]}), 0LL, (long long)({self.idx(b.size)}) - 1)"
        else:
            i = self.idx(index)
        raw = self.d.widen(f"{buf}[{i}]", b.dtype, ct)
        if valid is sm.ONE:
            return raw
        if self.d.unconditional_safe_loads and not isinstance(index, ir.Val) and _inside(index, b.size):
            return f"em_guard_{ct.replace(' ', '_')}({self.idx(valid)}, {raw})"
        return f"({self.idx(valid)} ? {raw} : ({ct})0)"

    def expr(self, v: ir.Val, env: dict) -> str:
        op, a, d = v.op, v.args, v.dtype
        ct = compute_type(d)
        if op == "const":
            return literal(a[0], d)
        if op == "acc":
            return a[0]
        if op == "index":
            return f"({ct})({self.idx(a[0])})"
        if op == "load":
            if self.load_hook is not None:
                r = self.load_hook(v, env)
                if r is not None:
                    return r
            return self.load(v, env)
        # an arithmetic op: its row in the primitives table says how to write it
        return P.ALU[op].render(self.d.name, [env[s] for s in v.srcs], ct, d, self.d)

    def store(self, buf: str, val: str) -> str:
        if buf in self.locals:
            return val
        b = self.bufs[buf]
        if b.dtype.is_bool:
            return f"(unsigned char)(({val}) != 0)"
        return self.d.narrow(val, b.dtype)

    def update(self, s: ir.Update, v: str) -> str:
        if s.op == "sum":
            return f"{s.name} += {v};"
        return f"{s.name} = {max_fn(compute_type(s.value.dtype))}({s.name}, {v});"


def _lanes_contiguous(e: sm.Expr, var: str, vec: int) -> bool:
    """e(var + l) == e(var) + l for l < vec, and e(var) is a multiple of vec when var is."""
    base = sm.substitute(e, {var: sm.var("_q", 0, None) * vec})
    if (base % vec) is not sm.ZERO:
        return False
    x = sm.var(var, 0, None)
    e0 = sm.substitute(e, {var: x})
    return all(sm.substitute(e, {var: x + l}) - e0 is sm.const(l) for l in range(1, vec))
