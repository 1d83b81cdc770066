"""Streamed score contractions: the kernels of attention's backward (and of its row statistics) with
their scores recomputed per key tile instead of stored.

A *score* is a short contraction S(row, key) = sum_d a(row, d) b(key, d) over a depth of 64 or 128
(q kᵀ, dO vᵀ; with rows and keys swapped, k qᵀ and v dOᵀ). Stored, each is B·H·L² values written
once and read by every kernel that uses it — the materialised attention backward moves ~13 such
arrays; recomputed, a kernel reads only the operands (B·H·L·D each) and does the multiply-adds
again on the tensor cores. With the row statistics (the softmax's max and sum, the rows' sums of P·dP)
as buffers of their own kernels, the partition already builds such kernels in the streaming local
mode (kernel/lower.py StreamRoots): one or two score locals filled per key, maybe a local G per key
combining them with per-row and per-key loads, and a tail that is either

* `mma`: out(row, e) = F(sum_key cast(G(key)) · w(key, e)) — dQ = dS k, dK = dSᵀ q, dV = Pᵀ dO — or
* `max` / `sum`: out(row) = F(reduce_key X(key)) — the statistics m, l and D.

`score_form(kernel)` recognises that shape in the kernel IR (no attention pattern: any kernel of
this shape, whatever G computes) and returns it with the key loops renamed to KEY and every read
of a local at KEY replaced by its value, so a renderer (codegen/cuda_scores.py) evaluates G and X
per score from the score accumulators.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import symbolic as sm
from . import ir
from .online import KEY, _loads, _peel_casts, _rename, _score_local, _shift_of, _single_reduce, _vars, mask_bounds, replace


@dataclass(frozen=True)
class Score:
    a: ir.Val  # the row operand over (rows, depth_var): staged once per block
    b: ir.Val  # the key operand over (KEY, depth_var): streamed in tiles
    depth_var: str
    depth: sm.Expr
    acc: str  # the accumulator the score's value reads (the renderer defines it per score)


@dataclass(frozen=True)
class ScoreForm:
    rows: tuple  # ((var, extent), ...): the kernel's outer parallel loops
    query: str  # the row variable every row operand varies along (the tile's rows)
    keys: sm.Expr  # extent of the streamed axis
    scores: tuple  # Score, one or two
    tail: str  # "mma" | "max" | "sum"
    x: ir.Val  # per (row, KEY): the tail's operand (mma: G rounded to w's dtype) or reduced value
    w: ir.Val | None  # mma: the tail operand over (KEY, out_var)
    out_var: str | None
    out_extent: sm.Expr | None
    out_acc: str  # the tail's accumulator, read by `store`
    store: ir.Store
    accum: object  # accumulation dtype of the tail


def _fill(item, locals_: set):
    """(local, var, extent, value) for `for l parallel: loc[l] = value`, or None."""
    if not (isinstance(item, ir.Loop) and item.kind == "parallel" and len(item.body) == 1
            and isinstance(item.body[0], ir.Store) and item.body[0].buffer in locals_):
        return None
    st = item.body[0]
    if sm.free_vars(st.index) != {item.var}:
        return None
    return st.buffer, item.var, item.extent, st.value


def _at_key(v: ir.Val, var: str, keys, values: dict, locals_: set) -> ir.Val | None:
    """v (over loop var `var`) with `var` renamed KEY and each local read at KEY replaced by that
    local's value; None when a local is read elsewhere or is not known."""
    v = _rename(v, var, KEY, keys)
    at = sm.index_var(KEY, keys)
    subs = {}
    for ld in _loads(v):
        if ld.args[0] in locals_:
            if ld.args[0] not in values or ld.args[1] != at:
                return None
            subs[ld] = values[ld.args[0]]
    return replace(v, subs)


def score_form(k: ir.Kernel) -> ScoreForm | None:
    """The streamed-score pieces of local-mode kernel `k` (module docstring), or None."""
    forms = score_forms(k)
    return forms[0] if forms is not None and len(forms) == 1 else None


def score_forms(k: ir.Kernel) -> tuple | None:
    """The streamed-score forms of kernel `k`, one per output: a kernel of one, or siblings merged
    (kernel/siblings.py: their row bodies one after the other, each a form of its own over the same
    rows and keys); None when any part is not in the form."""
    body, rows = k.body, []
    while len(body) == 1 and isinstance(body[0], ir.Loop) and body[0].kind == "parallel":
        rows.append((body[0].var, body[0].extent))
        body = body[0].body
    locals_ = {s.name for s in body if isinstance(s, ir.Local)}
    items = [s for s in body if not isinstance(s, ir.Local)]
    forms, i = [], 0
    while i < len(items):
        got = _segment(items, i, tuple(rows), locals_)
        if got is None:
            return None
        f, i = got
        forms.append(f)
    if not forms or any(f.keys != forms[0].keys or f.query != forms[0].query for f in forms):
        return None
    return tuple(forms)


def _segment(items: list, i: int, rows: tuple, locals_: set) -> tuple | None:
    """(ScoreForm, the index after it) for the form starting at items[i]: its scores, its per-key
    values G, its tail."""
    row_vars = {v for v, _ in rows}
    scores: list = []
    values: dict = {}
    keys = None
    while i < len(items) and len(scores) < 2:
        sc = _score_local(items[i], locals_, row_vars)
        if sc is None:
            break
        a, b, _, value, acc, dvar, depth, name = sc
        if keys is not None and items[i].extent != keys:
            return None
        keys = items[i].extent
        a, b = _peel_casts(a)[0], _peel_casts(b)[0]
        if a.op != "load" or b.op != "load" or a.dtype != b.dtype:
            return None
        scores.append(Score(a, _rename(b, items[i].var, KEY, keys), dvar, depth, acc))
        values[name] = value
        i += 1
    if not scores:
        return None
    while i < len(items) and (fl := _fill(items[i], locals_)) is not None:  # G: a value per key
        name, var, ext, value = fl
        g = _at_key(value, var, keys, values, locals_) if ext == keys else None
        if g is None:
            return None
        values[name] = g
        i += 1
    if i + 3 <= len(items) and (red := _single_reduce(tuple(items[i:i + 3]), 0)) is not None:
        # a statistic: out = F(reduce_key X)
        st = items[i + 2]
        if red[0].op not in ("max", "sum") or red[2] != keys or not isinstance(st, ir.Store):
            return None
        acc, var, _, upd, _ = red
        x = _at_key(upd.value, var, keys, values, locals_)
        if x is None or st.buffer in locals_ or any(ld.args[0] in locals_ for ld in _loads(st.value)):
            return None
        f = _checked(ScoreForm(rows, "", keys, tuple(scores), acc.op, x, None, None, None, acc.name, st, acc.dtype))
        return (f, i + 3) if f is not None else None
    if i >= len(items) or not (isinstance(items[i], ir.Loop) and items[i].kind == "parallel" and len(items[i].body) == 3):
        return None
    tail = items[i]
    red = _single_reduce(tail.body, 0)
    st = tail.body[2]
    if red is None or red[0].op != "sum" or red[2] != keys or not isinstance(st, ir.Store) or st.buffer in locals_:
        return None
    acc, var, _, upd, _ = red
    prod, _ = _peel_casts(upd.value)
    if prod.op != "mul":
        return None
    for p, w in (prod.args, prod.args[::-1]):
        w0 = _peel_casts(w)[0]
        if w0.op == "load" and w0.args[0] not in locals_ and any(ld.args[0] in locals_ for ld in _loads(p)) \
                and p.dtype == w0.dtype and w is w0:
            x = _at_key(p, var, keys, values, locals_)
            if x is None or any(ld.args[0] in locals_ for ld in _loads(st.value)):
                return None
            f = _checked(ScoreForm(rows, "", keys, tuple(scores), "mma", x, _rename(w0, var, KEY, keys),
                                   tail.var, tail.extent, acc.name, st, acc.dtype))
            return (f, i + 1) if f is not None else None
    return None


def _score_key(s: Score) -> tuple:
    d = sm.var("_d", 0, None)
    at = lambda v: (v.args[0], sm.substitute(v.args[1], {s.depth_var: d}))  # noqa: E731
    return at(s.a), at(s.b), s.depth


def shared_scores(forms: tuple) -> tuple:
    """(the distinct scores of `forms`, per form {its score's accumulator: index among them}): the
    products several outputs of a merged kernel read are computed once."""
    keys: dict = {}
    scores: list = []
    maps = []
    for f in forms:
        m = {}
        for s in f.scores:
            key = _score_key(s)
            if key not in keys:
                keys[key] = len(scores)
                scores.append(s)
            m[s.acc] = keys[key]
        maps.append(m)
    return tuple(scores), tuple(maps)


def unified_x(X: ir.Val, m: dict, scores: tuple) -> ir.Val:
    """X reading each score by the accumulator of the distinct score it equals (`shared_scores`): a
    merged kernel's outputs then share every value computed from the scores, not only the products."""
    subs = {v: ir.Val("acc", (scores[m[v.args[0]]].acc,), v.dtype) for v in ir.val_toposort([X])
            if v.op == "acc" and v.args[0] in m and scores[m[v.args[0]]].acc != v.args[0]}
    return replace(X, subs) if subs else X


@dataclass(frozen=True)
class OnlineStats:
    """A chain of row statistics over the same scores, merged (kernel/siblings.py, `chain`): the max
    m = max_key X0, then sums out_i = R_i · sum_key exp2(c (X0 - m)) · G_i whose per-row factors R_i
    may read the statistics before them (the softmax's sum l = sum exp2(c (X0 - m)); autograd's
    D = -(1/l)² sum exp2(c (X0 - m)) dP). One pass computes them all, online: a running max, each
    sum rescaled by exp2(c (m_old - m_new)) when it grows — the flash kernel's algebra."""
    c: float
    x0: ir.Val  # the max's X, per score (accumulators unified)
    parts: tuple  # per later form: (R, G); R reads a statistic j before it as acc `em_stat<j>`


def _factors(v: ir.Val) -> list:
    if v.op == "mul" and v.dtype.name == "float32":
        return _factors(v.args[0]) + _factors(v.args[1])
    return [v]


def _product(fs: list, like: ir.Val) -> ir.Val:
    out = None
    for f in fs:
        out = f if out is None else ir.Val("mul", (out, f), like.dtype)
    return out if out is not None else ir.const(1.0, like.dtype)


def stat_reads(forms: tuple) -> bool:
    """Whether a form reads a statistic an earlier form of the same kernel stores."""
    outs = {f.store.buffer for f in forms}
    return any(ld.args[0] in outs for f in forms for ld in _loads(f.x))


def online_stats(forms: tuple) -> OnlineStats | None:
    """`forms` (a merged chain: a max, then sums) as an OnlineStats, or None."""
    if len(forms) < 2 or forms[0].tail != "max" or any(f.tail != "sum" for f in forms[1:]):
        return None
    if any(f.store.value != ir.acc(f.out_acc, f.store.value.dtype) for f in forms):
        return None
    scores, maps = shared_scores(forms)
    stat = {}  # (buffer, index) of each statistic -> its acc
    for j, f in enumerate(forms):
        stat[(f.store.buffer, f.store.index)] = ir.acc(f"em_stat{j}", f.accum)
    x0 = unified_x(forms[0].x, maps[0], scores)
    scale, parts = None, []
    for i, f in enumerate(forms[1:], 1):
        x = unified_x(f.x, maps[i], scores)
        subs = {}
        for ld in _loads(x):
            key = (ld.args[0], ld.args[1])
            if any(ld.args[0] == g.store.buffer for g in forms):
                if key not in stat or int(stat[key].args[0][len("em_stat"):]) >= i:
                    return None
                subs[ld] = stat[key]
        x = replace(x, subs)
        shift, R, G = None, [], []
        for fac in _factors(x):
            sh = _shift_of(fac, "em_stat0")
            accs = {v.args[0] for v in ir.val_toposort([fac]) if v.op == "acc"}
            if sh is not None and shift is None:
                shift = sh
            elif KEY not in _vars(fac) and not (accs & {sc.acc for sc in scores}):
                R.append(fac)
            elif not any(a.startswith("em_stat") for a in accs):
                G.append(fac)
            else:
                return None
        if shift is None or shift[1] != x0 or (scale is not None and shift[0] != scale):
            return None
        scale = shift[0]
        parts.append((_product(R, x), _product(G, x)))
    return OnlineStats(float(scale), x0, tuple(parts)) if scale is not None else None


def _checked(f: ScoreForm) -> ScoreForm | None:
    """f with its query row chosen (the row loop every row operand varies along and no key operand
    does, the longest), or None when there is none."""
    ext = dict(f.rows)
    keyed = set().union(*(_vars(s.b) for s in f.scores)) | (_vars(f.w) if f.w is not None else set())
    cands = [r for r, _ in f.rows if all(r in _vars(s.a) for s in f.scores) and r not in keyed]
    if not cands:
        return None
    cands.sort(key=lambda r: (not ext[r].is_const, ext[r].value if ext[r].is_const else 0))
    return ScoreForm(f.rows, cands[-1], f.keys, f.scores, f.tail, f.x, f.w, f.out_var, f.out_extent, f.out_acc,
                     f.store, f.accum)


def _const(v: ir.Val, test) -> bool:
    return v.op == "const" and isinstance(v.args[0], (int, float)) and not isinstance(v.args[0], bool) and test(v.args[0])


def _neg_inf_when(v: ir.Val) -> list:
    """Conditions whose falsity makes v -inf: `where(c, x, -inf)` through sums, positive scalings
    and casts."""
    v = _peel_casts(v)[0]
    if v.op == "where" and _const(v.args[2], lambda x: x == float("-inf")):
        return [v.args[0]]
    if v.op == "add":
        return _neg_inf_when(v.args[0]) + _neg_inf_when(v.args[1])
    if v.op == "mul":
        for a, b in (v.args, v.args[::-1]):
            if _const(b, lambda x: x > 0):
                return _neg_inf_when(a)
    return []


def _zero_when(v: ir.Val) -> list:
    """Conditions whose falsity makes v 0: `where(c, x, 0)`, a factor that is, exp2 of -inf."""
    v = _peel_casts(v)[0]
    if v.op == "where" and _const(v.args[2], lambda x: x == 0):
        return [v.args[0]]
    if v.op == "mul":
        return _zero_when(v.args[0]) + _zero_when(v.args[1])
    if v.op == "exp2":
        return _neg_inf_when(v.args[0])
    return []


def key_bounds(f: ScoreForm) -> tuple:
    """(upper, lower, conjuncts): offsets such that X is the tail's identity (0 for a product or a
    sum, -inf for a max) wherever KEY > query + upper or KEY < query + lower (None: no such bound),
    read from the index comparisons of the masks X applies — a causal mask bounds dQ's keys from
    above and dK's / dV's (rows and keys swapped) from below, so a block skips the tiles it would
    add nothing from — and the mask conjuncts that say so (true on a tile wholly inside the bounds)."""
    conds = _neg_inf_when(f.x) if f.tail == "max" else _zero_when(f.x)
    upper = lower = None
    used = []
    for c in conds:
        for kind, off, conj in mask_bounds(c, f.query):
            if kind == "upper" and upper is None:
                upper = off
                used.append(conj)
            elif kind == "lower" and lower is None:
                lower = off
                used.append(conj)
    return upper, lower, tuple(used)
