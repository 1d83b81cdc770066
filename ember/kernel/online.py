"""Online softmax: when a row kernel's softmax-weighted contraction may run in one streaming pass.

The algebra (docs/attention.md). For scores x_j over an axis j, a positive constant c, and values v_j,

    max-then-sum:   m = max_j x_j,  l = sum_j exp2(c (x_j - m)),  o = sum_j v_j exp2(c (x_j - m)) / l

equals the *online* recurrence over chunks J_1, J_2, ... of j (any chunking; m_0 = -inf, l_0 = o_0 = 0)

    m_t = max(m_{t-1}, max_{j in J_t} x_j)
    a_t = exp2(c (m_{t-1} - m_t))                              (the rescale of what came before)
    l_t = a_t l_{t-1} + sum_{j in J_t} exp2(c (x_j - m_t))
    o_t = a_t o_{t-1} + sum_{j in J_t} v_j exp2(c (x_j - m_t))      and o = o_T / l_T,

because exp2(c (x - m)) = exp2(c (x - m')) exp2(c (m' - m)) for any m' (the max is only a shift that
keeps exp2 in range) and the normaliser 1/l does not depend on j, so it leaves the sum (rounding
differs: P is rounded before the normalisation, not after, within the dtype's tolerance).
The same split with the chunks computed side by side and combined afterwards is flash-decoding.

`online_form(kernel)` recognises that algebra in the kernel IR of a row kernel with kernel-local
arrays (kernel/builder.py's local mode): a local of scores, each a contraction over its own axis
(q . k_j); a max stage and a sum stage over the scores' axis whose sum is exactly
exp2(c (X_j - max)) for the max stage's X; a local P_j = exp2(c (X_j - max)) / l (possibly rounded
through a narrower dtype); and a tail contraction sum_j P_j v_j. It returns the pieces a renderer
needs (the flash kernel of codegen/cuda_flash.py streams keys through shared memory and never
stores a score); None when any condition fails. Nothing here names attention: any graph with that
algebra matches, and one that differs in any step (a different shift than the max, a non-constant
or negative c, a normaliser depending on j) does not.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import symbolic as sm
from . import ir

KEY = "kj_"  # the canonical name of the streamed (key) axis in the returned values


@dataclass(frozen=True)
class OnlineForm:
    rows: tuple  # ((var, extent), ...): the kernel's outer parallel loops
    query: str | None  # the row variable the score operand q varies along (the tile's rows), if any
    keys: sm.Expr  # extent of the streamed axis
    # the scores' own contraction (None when X reads its scores from memory: a plain softmax @ v)
    depth: sm.Expr | None  # extent of the score contraction (q . k)
    depth_var: str | None
    q: ir.Val | None  # score operands: q over (rows, depth_var), k over (KEY, depth_var)
    k: ir.Val | None
    product: ir.Val | None  # the contraction's summand (q * k with its casts) over (rows, KEY, depth_var)
    score: ir.Val | None  # the contraction's value as the scores' local holds it, over acc `score_acc`
    score_acc: str | None
    x: ir.Val  # the shifted quantity X (over rows, KEY and `score`'s acc): the max stage's value
    c: float  # the exp2 multiplier (> 0)
    p_dtype: object  # dtype P is rounded through before the P.V contraction (None: not rounded)
    v: ir.Val  # the value operand over (KEY, out_var)
    out_var: str
    out_extent: sm.Expr
    out_acc: str  # the tail's accumulator, read by `store`
    store: ir.Store  # the output store (its value over out_acc, rows and out_var)
    accum: object  # accumulation dtype of the tail


def _peel_casts(v: ir.Val) -> tuple:
    """(innermost value, [cast dtypes outermost first])."""
    casts = []
    while v.op == "cast":
        casts.append(v.dtype)
        v = v.args[0]
    return v, casts


def replace(v: ir.Val, mapping: dict, memo: dict | None = None) -> ir.Val:
    """`v` with the values in `mapping` replaced (structurally; loads keep their index)."""
    memo = {} if memo is None else memo
    if v in mapping:
        return mapping[v]
    r = memo.get(v)
    if r is not None:
        return r
    if v.srcs:
        r = ir.Val(v.op, tuple(replace(a, mapping, memo) if isinstance(a, ir.Val) else a for a in v.args), v.dtype)
    else:
        r = v
    memo[v] = r
    return r


def _rename(v: ir.Val, old: str, new: str, extent) -> ir.Val:
    return ir.substitute(v, {old: sm.index_var(new, extent)})


def _loads(v: ir.Val) -> list:
    return [x for x in ir.val_toposort([v]) if x.op == "load"]


def _vars(v: ir.Val) -> set:
    out: set = set()
    for x in ir.val_toposort([v]):
        if x.op == "load":
            out |= sm.free_vars(x.args[2])
            if not isinstance(x.args[1], ir.Val):
                out |= sm.free_vars(x.args[1])
        elif x.op == "index":
            out |= sm.free_vars(x.args[0])
    return out


def _reads_local(v: ir.Val, locals_: set) -> set:
    return {x.args[0] for x in _loads(v) if x.args[0] in locals_}


def _single_reduce(body: tuple, i: int):
    """(Acc, var, extent, Update, next index) for `Acc; Loop reduce(one Update)` at body[i]."""
    if i + 1 >= len(body) or not isinstance(body[i], ir.Acc) or not isinstance(body[i + 1], ir.Loop):
        return None
    a, lp = body[i], body[i + 1]
    if lp.kind != "reduce" or len(lp.body) != 1 or not isinstance(lp.body[0], ir.Update):
        return None
    u = lp.body[0]
    if u.name != a.name or u.op != a.op:
        return None
    return a, lp.var, lp.extent, u, i + 2


def _commuted(v: ir.Val, op: str):
    """The two operands of a commutative op, both orders."""
    if v.op != op:
        return []
    a, b = v.args
    return [(a, b), (b, a)]


def _shift_of(e: ir.Val, m_acc: str):
    """(c, X) when e == exp2(c * (X - m)) with m the accumulator `m_acc`, in the orders the
    builder writes it (mul/add operands either way, -m as m * -1)."""
    if e.op != "exp2":
        return None
    for cv, diff in _commuted(e.args[0], "mul"):
        if cv.op != "const" or not isinstance(cv.args[0], float) or not cv.args[0] > 0:
            continue
        for neg, x in _commuted(diff, "add"):
            for mv, minus in _commuted(neg, "mul"):
                if mv.op == "acc" and mv.args[0] == m_acc and minus.op == "const" and minus.args[0] == -1.0:
                    return cv.args[0], x
    return None


def _score_local(fill, locals_: set, row_vars: set):
    """(q, k, summand, score value, its acc, depth var, depth, local) for the scores' local
    `for l: Acc s; for r reduce: s += q * k; loc[l] = f(s)`, or None."""
    if not (isinstance(fill, ir.Loop) and fill.kind == "parallel" and len(fill.body) == 3):
        return None
    red = _single_reduce(fill.body, 0)
    st = fill.body[2]
    if red is None or not isinstance(st, ir.Store) or st.buffer not in locals_:
        return None
    s_acc, dvar, depth, s_upd, _ = red
    if s_acc.op != "sum" or sm.free_vars(st.index) != {fill.var}:
        return None
    prod, _ = _peel_casts(s_upd.value)
    if prod.op != "mul":
        return None
    # k: a load along the keys; q: any value that does not vary with the key (a load, or q's own
    # prologue such as a rotary embedding, computed where the kernel stages q)
    qk = [(a, b) for a, b in _commuted(prod, "mul") if fill.var not in _vars(a) and fill.var in _vars(b)
          and _peel_casts(b)[0].op == "load" and not _reads_local(a, locals_)]
    if not qk or _reads_local(st.value, locals_) or _vars(st.value) - row_vars:
        return None
    q, kk = qk[0]
    return q, _peel_casts(kk)[0], s_upd.value, st.value, s_acc.name, dvar, depth, st.buffer


def online_form(k: ir.Kernel) -> OnlineForm | None:
    """The online-softmax pieces of local-mode kernel `k` (module docstring), or None."""
    body, rows = k.body, []
    while len(body) == 1 and isinstance(body[0], ir.Loop) and body[0].kind == "parallel":
        rows.append((body[0].var, body[0].extent))
        body = body[0].body
    items = [s for s in body if not isinstance(s, ir.Local)]
    locals_ = {s.name for s in body if isinstance(s, ir.Local)}
    if (len(locals_), len(items)) == (1, 6):  # scores read from memory: no contraction of their own
        items = [None] + items
    elif (len(locals_), len(items)) != (2, 7):
        return None
    row_vars = {v for v, _ in rows}
    sc = _score_local(items[0], locals_, row_vars) if items[0] is not None else (None,) * 8
    if sc is None:
        return None
    q, kk, s_upd_value, score, s_acc_name, dvar, depth, score_local = sc
    keys = items[0].extent if items[0] is not None else None
    # 2. the max stage: m = max_j X_j, X reading the scores at j
    red = _single_reduce(tuple(items), 1)
    if red is None or red[0].op != "max":
        return None
    m_acc, mvar, mext, m_upd, _ = red
    keys = mext if keys is None else keys
    if mext != keys:
        return None
    x = m_upd.value
    # 3. the sum stage: l = sum_j exp2(c (X_j - m))
    red = _single_reduce(tuple(items), 3)
    if red is None or red[0].op != "sum":
        return None
    l_acc, lvar, lext, l_upd, _ = red
    sh = _shift_of(l_upd.value, m_acc.name)
    if lext != keys or sh is None:
        return None
    c, xl = sh
    X = _rename(x, mvar, KEY, keys)
    if _rename(xl, lvar, KEY, keys) != X:
        return None
    # 4. P_j = exp2(c (X_j - m)) * recip(l), possibly rounded
    pfill = items[5]
    if not (isinstance(pfill, ir.Loop) and pfill.kind == "parallel" and len(pfill.body) == 1
            and isinstance(pfill.body[0], ir.Store) and pfill.body[0].buffer in locals_ - {score_local}
            and pfill.extent == keys):
        return None
    p_local = pfill.body[0].buffer
    pv, casts = _peel_casts(pfill.body[0].value)
    p_dtype = casts[-1] if len(casts) == 2 and casts[0] == pv.dtype else (None if not casts else False)
    if p_dtype is False:
        return None
    ok = False
    for e, r in _commuted(pv, "mul"):
        if r.op == "recip" and r.args[0].op == "acc" and r.args[0].args[0] == l_acc.name:
            sh = _shift_of(e, m_acc.name)
            if sh is not None and sh[0] == c and _rename(sh[1], pfill.var, KEY, keys) == X:
                ok = True
    if not ok:
        return None
    # 5. the tail: for e: Acc o; for j reduce: o += P_j * v_{j,e}; out[..] = F(o)
    tail = items[6]
    if not (isinstance(tail, ir.Loop) and tail.kind == "parallel" and len(tail.body) == 3):
        return None
    red = _single_reduce(tail.body, 0)
    ost = tail.body[2]
    if red is None or red[0].op != "sum" or not isinstance(ost, ir.Store) or ost.buffer in locals_:
        return None
    o_acc, ovar, oext, o_upd, _ = red
    if oext != keys:
        return None
    prod, _ = _peel_casts(o_upd.value)
    pv_pair = None
    for a, b in _commuted(prod, "mul"):
        pa, pc = _peel_casts(a)
        if pa.op == "load" and pa.args[0] == p_local and b.op == "load" and b.args[0] not in locals_:
            pv_pair = (pc, b)
    if pv_pair is None:
        return None
    pc, v = pv_pair
    if (p_dtype is None and pc) or (p_dtype is not None and pc[-1:] != [p_dtype]):
        return None
    # X reads only the scores (at KEY), buffers and indices; F reads the tail's accumulator
    if _reads_local(X, locals_) != ({score_local} if score_local else set()):
        return None
    for ld in _loads(X):
        if ld.args[0] == score_local and ld.args[1] != sm.index_var(KEY, keys):
            return None
    if _reads_local(ost.value, locals_):
        return None
    if q is None or kk is None or s_upd_value is None or items[0] is None:  # scores read from memory
        kq = prod_ = None
        query = [r for r, _ in rows]
    else:
        if q.dtype != kk.dtype or q.dtype != v.dtype:
            return None
        # the row loop the score operand q runs along (the flash kernel's tile rows)
        query = [r for r, _ in rows if r in _vars(q) and r not in _vars(kk) and r not in _vars(v)]
        # the longest of them (a symbolic length first) makes the tiles' rows
        ext = dict(rows)
        query.sort(key=lambda r: (not ext[r].is_const, ext[r].value if ext[r].is_const else 0))
        kq, prod_ = _rename(kk, items[0].var, KEY, keys), _rename(s_upd_value, items[0].var, KEY, keys)
    return OnlineForm(rows=tuple(rows), query=query[-1] if query else None, keys=keys, depth=depth, depth_var=dvar, q=q,
                      k=kq, product=prod_,
                      score=score, score_acc=s_acc_name, x=X, c=c,
                      p_dtype=p_dtype, v=_rename(v, ovar, KEY, keys), out_var=tail.var, out_extent=tail.extent,
                      out_acc=o_acc.name, store=ost, accum=o_acc.dtype)


def key_limit(f: OnlineForm) -> tuple | None:
    """(off, conjunct): X is -inf wherever KEY > query + off, read from a `where(cond, x, -inf)` whose
    condition has a conjunct (the bool value returned) meaning KEY <= query + off; None when X has no
    such bound."""
    mask = _score_mask(f)
    if mask is None or f.query is None:
        return None
    return next(((off, c) for kind, off, c in mask_bounds(mask, f.query) if kind == "upper"), None)


def mask_bounds(mask: ir.Val, query: str):
    """Yields (kind, off, conjunct) for the conjuncts of boolean `mask` that bound the key by the
    query row: "upper" when the conjunct means KEY <= query + off, "lower" for KEY >= query + off
    (off free of both)."""
    qv, kv = sm.var("_q", 0, None), sm.var("_k", 0, None)  # unbounded: differences cancel exactly

    def index_of(v: ir.Val):  # an integer value built from indices and constants, as an Expr
        while v.op == "cast" and not v.dtype.is_float:
            v = v.args[0]
        if v.op == "index":
            return v.args[0]
        if v.op == "const" and isinstance(v.args[0], int) and not isinstance(v.args[0], bool):
            return sm.sym(v.args[0])
        if v.op in ("add", "mul") and not v.dtype.is_float:
            a, b = (index_of(s) for s in v.args)
            if a is not None and b is not None:
                return a + b if v.op == "add" else a * b
        return None

    def relations(mask: ir.Val):  # yields (u, w) meaning u <= w
        for c in _conjuncts(mask):
            if _negated_lt(c):
                a, b = (index_of(s) for s in c.args[0].args)  # not (a < b): b <= a
                if a is not None and b is not None:
                    yield b, a, c
            elif c.op == "lt":
                a, b = (index_of(s) for s in c.args)  # a < b: a <= b - 1
                if a is not None and b is not None:
                    yield a, b - 1, c

    for u, w, cond in relations(mask):
        diff = sm.substitute(sm.sym(u) - sm.sym(w), {KEY: kv, query: qv})
        dk = sm.substitute(diff, {"_k": kv + 1}) - diff
        dq = sm.substitute(diff, {"_q": qv + 1}) - diff
        if not (dk.is_const and dq.is_const and dk.value == -dq.value and abs(dk.value) == 1):
            continue
        rest = sm.substitute(diff, {"_k": sm.ZERO, "_q": sm.ZERO})
        if sm.free_vars(rest) & {"_k", "_q", KEY, query}:
            continue
        if dk.value == 1:
            yield "upper", -rest, cond  # KEY - query + rest <= 0
        else:
            yield "lower", rest, cond  # query - KEY + rest <= 0


def key_floor(f: OnlineForm) -> ir.Val | None:
    """F: X is -inf wherever KEY < F, read from a `where(cond, x, -inf)` whose condition has a
    conjunct `not (KEY < F)` (`KEY >= F`) with F free of KEY — a left-padding mask's first slot
    (`start[b]`), possibly min'd with the query's own slot. F may load (the start is data) and may
    vary with the rows; a kernel starts its key loop at F's least value over the rows it owns,
    so its key tiles are aligned to where the row's keys begin, not to slot 0: the same keys in the
    same tiles whatever slot the sequence starts at (batch-invariant serving, docs/serving.md)."""
    mask = _score_mask(f)
    if mask is None:
        return None

    def is_key(v: ir.Val) -> bool:
        while v.op == "cast" and not v.dtype.is_float:
            v = v.args[0]
        return v.op == "index" and sm.free_vars(v.args[0]) == {KEY} and _unit(v.args[0])

    for c in _conjuncts(mask):
        if _negated_lt(c):
            a, b = c.args[0].args  # not (a < b): a >= b
            if is_key(a) and KEY not in _vars(b):
                return b
    return None


def _score_mask(f: OnlineForm) -> ir.Val | None:
    """cond when X is `where(cond, x, -inf)` (through casts) and the form has a query axis."""
    x = f.x
    if f.query is None:
        return None
    while x.op == "cast":
        x = x.args[0]
    if x.op != "where" or not (x.args[2].op == "const" and x.args[2].args[0] == float("-inf")):
        return None
    return x.args[0]


def _conjuncts(c: ir.Val):
    """The terms of a boolean conjunction (`where(a, b, False)` or a boolean product), flattened."""
    if (c.op == "where" and c.args[2].op == "const" and c.args[2].args[0] is False) or (c.op == "mul" and c.dtype.is_bool):
        yield from _conjuncts(c.args[0])
        yield from _conjuncts(c.args[1])
    else:
        yield c


def _negated_lt(c: ir.Val) -> bool:
    """c is `not (a < b)`, written `where(a < b, False, True)`."""
    return (c.op == "where" and c.args[0].op == "lt" and c.args[1].op == "const" and c.args[1].args[0] is False
            and c.args[2].op == "const" and c.args[2].args[0] is True)


def _unit(e) -> bool:
    """e is KEY itself (an index expression equal to the key variable)."""
    kv = sm.var("_k", 0, None)
    d = sm.substitute(sm.sym(e), {KEY: kv})
    step, at0 = sm.substitute(d, {"_k": kv + 1}) - d, sm.substitute(d, {"_k": sm.ZERO})
    return step.is_const and step.value == 1 and at0.is_const and at0.value == 0
