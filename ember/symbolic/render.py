"""Printing: C source (`render_c`, with the floor helpers each backend's prelude defines), the JSON
form used to save graphs (`to_json` / `from_json`), and shapes as text. `render_c` emits plain C
``/`` and ``%`` only where both operands are provably non-negative, and floor helpers otherwise."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from . import bounds as bd
from . import walk
from .arith import mul, prod, sum_of
from .expr import Expr, IntLike, const, sym, var


def _c_add(x: Expr, go: walk.Go, names: Any) -> str:
    parts = []
    for t, k in x.args[1]:
        s = go(t)
        if k == 1:
            parts.append(("+", s))
        elif k == -1:
            parts.append(("-", s))
        elif k < 0:
            parts.append(("-", f"{-k}*{s}"))
        else:
            parts.append(("+", f"{k}*{s}"))
    c = x.args[0]
    if c > 0:
        parts.append(("+", str(c)))
    elif c < 0:
        parts.append(("-", str(-c)))
    out = parts[0][1] if parts[0][0] == "+" else "-" + parts[0][1]
    for sgn, s in parts[1:]:
        out += f" {sgn} {s}"
    return f"({out})"


def _c_divmod(x: Expr, go: walk.Go, names: Any) -> str:
    a, b = x.args
    if bd._range(a)[0] >= 0 and bd._range(b)[0] > 0:
        return f"({go(a)} {'/' if x.op == 'div' else '%'} {go(b)})"
    return f"EM_F{'DIV' if x.op == 'div' else 'MOD'}({go(a)}, {go(b)})"


_C: dict = {
    "const": lambda x, go, n: str(x.args[0]),
    "var": lambda x, go, names: names.get(x.args[0], x.args[0]),
    "add": _c_add,
    "mul": lambda x, go, n: "(" + "*".join(go(f) for f in x.args) + ")",
    "div": _c_divmod,
    "mod": _c_divmod,
    "min": lambda x, go, n: f"EM_MIN({go(x.args[0])}, {go(x.args[1])})",
    "max": lambda x, go, n: f"EM_MAX({go(x.args[0])}, {go(x.args[1])})",
    "lt": lambda x, go, n: f"({go(x.args[0])} < {go(x.args[1])})",
    "and": lambda x, go, n: f"({go(x.args[0])} && {go(x.args[1])})",
    "not": lambda x, go, n: f"(!{go(x.args[0])})",
}


def render_c(e: IntLike, names: Optional[Mapping[str, str]] = None) -> str:
    """C source for e. ``names`` renames variables (e.g. index ``_i0`` -> a loop variable).

    Uses the helpers EM_FDIV / EM_FMOD / EM_MIN / EM_MAX which each backend's prelude defines;
    plain ``/`` and ``%`` where both operands are provably non-negative (then C's truncating
    division is floor division).
    """
    out: str = walk.fold(sym(e), _C, names or {})
    return out


C_HELPERS = """\
#define EM_FDIV(a, b) ((a) / (b) - ((((a) % (b)) != 0) && (((a) < 0) != ((b) < 0))))
#define EM_FMOD(a, b) ((a) % (b) + (((((a) % (b)) != 0) && (((a) < 0) != ((b) < 0))) ? (b) : 0))
#define EM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define EM_MAX(a, b) ((a) > (b) ? (a) : (b))
"""


# ------------------------------------------------------------------------------------------------
# JSON form (for saving graphs)

def _json_var(x: Expr, go: walk.Go, ctx: Any) -> list:
    name, lo, hi = x.args
    return ["var", name, lo, go(sym(hi)) if hi is not None else None]


_JSON: dict = {op: (lambda x, go, n: [x.op] + [go(a) for a in x.args]) for op in ("mul", *walk.BUILD)}
_JSON.update({
    "const": lambda x, go, n: x.args[0],
    "var": _json_var,
    "add": lambda x, go, n: ["add", x.args[0], [[go(t), k] for t, k in x.args[1]]],
})


def to_json(e: IntLike) -> Any:
    return walk.fold(sym(e), _JSON)


def from_json(j: Any) -> Expr:
    """Rebuild through the constructors; canonical forms are fixpoints, so this is the same object."""
    if isinstance(j, int):
        return const(j)
    op = j[0]
    if op == "var":
        return var(j[1], j[2], from_json(j[3]) if j[3] is not None else None)
    if op == "add":
        return sum_of([j[1]] + [mul(from_json(t), k) for t, k in j[2]])
    if op == "mul":
        return prod(from_json(a) for a in j[1:])
    r: Expr = walk.BUILD[op](*(from_json(a) for a in j[1:]))
    return r


def shape_str(shape: Iterable[IntLike]) -> str:
    shape = tuple(shape)
    return "(" + ", ".join(str(sym(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"
