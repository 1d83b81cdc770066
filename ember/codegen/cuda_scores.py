"""The `scores` mode: a kernel in streamed-score form (kernel/scores.py) — attention's backward and
its row statistics with the scores recomputed on the tensor cores, never stored.

Each block owns BM = 16 * warps rows of the `query` loop (for one point of the other row loops) and
walks the keys in tiles of BN, as the flash kernel (codegen/cuda_flash.py) does:

* each score's row operand (BM x D: q and dO for dQ, k and v for dK) is copied once into shared
  memory and held as mma A fragments; the key operands' tiles (and the tail operand w's) arrive by
  `cp.async` into a two-slot ring, 16-byte chunks XOR-swizzled by row for `ldmatrix`;
* per tile, each score by `mma.sync.m16n8k16` (float32 accumulation), then the kernel's own per-key
  value X per element — whatever the graph computes from the scores, per-row and per-key loads
  (P from the softmax's statistics, dS = P (dP - D)) — by the shared value renderer;
* the tail: `mma` packs X into A fragments and accumulates X · w (w by `ldmatrix.trans`); `max` /
  `sum` reduce X per row (per thread, then over the row's four lanes);
* the store's expression per output.

Keys past the end contribute the tail's identity (0 to a product or a sum, -inf to a max).
"""
from __future__ import annotations

from .. import dtypes as dt
from .. import symbolic as sm
from ..kernel import ir
from ..kernel.online import replace
from ..kernel.scores import KEY, ScoreForm, key_bounds, online_stats, shared_scores, stat_reads, unified_x
from ..kernel.structure import UnsupportedKernel
from .cuda_flash import HALF, _operand, emit_pv_mma, emit_running_max, emit_scores_mma

IDENTITY = {"mma": "0.f", "sum": "0.f", "max": "-INFINITY"}


def scores_applicable(k: ir.Kernel, f: ScoreForm) -> str | None:
    """None when `scores` mode can render `k` (in streamed-score form `f`); else why not."""
    ty = f.scores[0].a.dtype
    if ty.name not in HALF:
        return "scores mode reads bf16/f16 score operands"
    if any(s.a.dtype != ty or s.b.dtype != ty for s in f.scores) or (f.w is not None and f.w.dtype != ty):
        return "score and tail operands of different dtypes"
    if f.accum.name != "float32":
        return "scores mode accumulates in float32"
    for s in f.scores:
        if not s.depth.is_const or s.depth.value not in (64, 128):
            return "a score depth must be 64 or 128"
        for v, what in ((s.a, "a row operand"), (s.b, "a key operand")):
            why = _operand(v, s.depth_var, what)
            if why:
                return why
    if f.tail == "mma":
        if not f.out_extent.is_const or f.out_extent.value not in (64, 128):
            return "the tail's width must be 64 or 128"
        why = _operand(f.w, f.out_var, "the tail operand")
        if why:
            return why
    L = dict(f.rows)[f.query]
    if L.is_const and L.value < 16:
        return f"{L.value} rows: too few for a 16-row tensor-core tile per warp"
    return None


def shared_tail(f: ScoreForm, scores: tuple | None = None) -> int | None:
    """The score (of `scores`, default f's own) whose key operand is the tail operand itself (dQ = dS
    k after S = q kᵀ; dK = dSᵀ q after Sᵀ = k qᵀ): the tail reads that score's tile, no second copy."""
    if f.tail != "mma":
        return None
    for i, s in enumerate(f.scores if scores is None else scores):
        if s.b.args[0] == f.w.args[0] and s.depth == f.out_extent and \
                sm.substitute(s.b.args[1], {s.depth_var: sm.var("_d", 0, None)}) == \
                sm.substitute(f.w.args[1], {f.out_var: sm.var("_d", 0, None)}):
            return i
    return None


def _forms(f) -> tuple:
    return f if isinstance(f, tuple) else (f,)


def scores_smem(f, warps: int, BN: int, stages: int = 2) -> int:
    """Shared memory of a kernel in form `f` (a ScoreForm, or a merged kernel's tuple of them)."""
    forms = _forms(f)
    scores, _ = shared_scores(forms)
    BM = 16 * warps
    n = sum(BM * s.depth.value + stages * BN * s.depth.value for s in scores)
    own = sum(stages * BN * g.out_extent.value for g in forms if g.tail == "mma" and shared_tail(g, scores) is None)
    return 2 * (n + own)


def render_scores(w, f) -> sm.Expr:
    """Emit the body of kernel `w.k` in scores mode (`f`: its ScoreForm, or a merged kernel's tuple
    of them — kernel/siblings.py: the scores they share computed once, a tail and an output each);
    returns the grid (blocks)."""
    forms = _forms(f)
    for g in forms:
        why = scores_applicable(w.k, g)
        if why:
            raise UnsupportedKernel(f"{w.k.name}: {why}")
    f = forms[0]
    scores, maps = shared_scores(forms)
    warps, BN = int(w.cfg.get("warps", 4)), int(w.cfg.get("BN", 64))
    if BN not in (32, 64, 128) or warps not in (2, 4, 8):
        raise UnsupportedKernel(f"scores warps={warps} BN={BN} (2, 4 or 8 warps; 32, 64 or 128 keys)")
    BM, T, I, e = 16 * warps, 32 * warps, w.IDX, w.emit
    ty = HALF[scores[0].a.dtype.name]
    Ds = [s.depth.value for s in scores]
    DVs = [g.out_extent.value if g.tail == "mma" else 0 for g in forms]
    S = int(w.cfg.get("stages", 2))  # ring slots: S - 1 tiles load while one computes
    if S not in (2, 3, 4):
        raise UnsupportedKernel(f"scores stages={S} (2, 3 or 4)")
    w.smem_bytes = scores_smem(forms, warps, BN, S)
    rows = dict(f.rows)
    L = rows[f.query]
    batch = [(v, x) for v, x in f.rows if v != f.query]
    ntq = (L + (BM - 1)) // BM
    e(1, "extern __shared__ __align__(128) unsigned char em_dyn_smem[];")
    off = 0
    for i, D in enumerate(Ds):  # row operands, then the key operands' rings, then the tails' own rings
        e(1, f"unsigned short* A{i}_ = reinterpret_cast<unsigned short*>(em_dyn_smem) + {off};")
        off += BM * D
    for i, D in enumerate(Ds):
        e(1, f"unsigned short* B{i}_ = reinterpret_cast<unsigned short*>(em_dyn_smem) + {off};")
        off += S * BN * D
    own = []  # (ring, tail operand, width, its variable) of tails that share no score's tile
    for t, g in enumerate(forms):
        if not DVs[t]:
            continue
        sh = shared_tail(g, scores)
        if sh is None:
            e(1, f"unsigned short* W{t}_ = reinterpret_cast<unsigned short*>(em_dyn_smem) + {off};")
            own.append((f"W{t}_", g.w, DVs[t], g.out_var))
            off += S * BN * DVs[t]
        else:
            e(1, f"unsigned short* W{t}_ = B{sh}_;")
    e(1, "const int tid_ = threadIdx.x, warp_ = tid_ >> 5, lane_ = tid_ & 31;")
    e(1, f"{I} blk_ = blockIdx.x;")
    e(1, f"const {I} ntq_ = {w.idx(ntq)};")
    bounds = [key_bounds(g) for g in forms]  # (a causal mask: the tiles a block's rows see)
    if any(b[:2] != bounds[0][:2] for b in bounds):
        raise UnsupportedKernel(f"{w.k.name}: merged outputs with different key bounds")
    upper, lower, _ = bounds[0]
    first = "(ntq_ - 1 - blk_ % ntq_)" if upper is not None else "(blk_ % ntq_)"  # longest blocks first
    e(1, f"const {I} q0_ = {first} * {BM}; blk_ /= ntq_;")
    w.decompose("blk_", batch, 1)
    e(1, f"const {I} nq_ = {w.idx(L)}, nk_ = {w.idx(f.keys)};")
    dvar = sm.var("ch_", 0, None) * 8

    def copy(dst: str, v: ir.Val, subs: dict, ok: str, ind: int):
        e(ind, f"em_cp16({dst}, {v.args[0]} + ({ok} ? {w.idx(sm.substitute(v.args[1], subs))} : 0), {ok});")

    for i, (s, D) in enumerate(zip(scores, Ds)):
        e(1, f"for (int c_ = tid_; c_ < {BM * D // 8}; c_ += {T}) {{")
        e(2, f"const int r_ = c_ / {D // 8}, ch_ = c_ % {D // 8};")
        e(2, f"const {I} qi_ = q0_ + r_;")
        copy(f"A{i}_ + r_ * {D} + ((ch_ ^ (r_ & 7)) << 3)", s.a,
             {f.query: sm.var("qi_", 0, None), s.depth_var: dvar}, "qi_ < nq_", 2)
        e(1, "}")
    if upper is not None:  # X is the identity past KEY = query + upper: stop at the last row's bound
        e(1, f"const {I} qlast_ = (q0_ + {BM - 1} < nq_ ? q0_ + {BM - 1} : nq_ - 1);")
        e(1, f"{I} kend_ = qlast_ + ({w.idx(upper)}) + 1;")
        e(1, "kend_ = kend_ < nk_ ? kend_ : nk_; kend_ = kend_ > 0 ? kend_ : 0;")
    else:
        e(1, f"const {I} kend_ = nk_;")
    if lower is not None:  # ... and before KEY = query + lower: start at the first row's
        e(1, f"{I} kbeg_ = q0_ + ({w.idx(lower)});")
        e(1, "kbeg_ = kbeg_ > 0 ? kbeg_ : 0;")
    else:
        e(1, f"const {I} kbeg_ = 0;")
    e(1, f"const {I} ntk_ = (kend_ > kbeg_ ? (kend_ - kbeg_ + {BN - 1}) / {BN} : 0);")
    kv = sm.var("kr_", 0, None)

    def load_tile(t: str, slot: str, ind: int):
        ops = [(f"B{i}_", s.b, D, s.depth_var) for i, (s, D) in enumerate(zip(scores, Ds))] + own
        for base, v, width, fast in ops:
            e(ind, f"for (int c_ = tid_; c_ < {BN * width // 8}; c_ += {T}) {{")
            e(ind + 1, f"const int r_ = c_ / {width // 8}, ch_ = c_ % {width // 8};")
            e(ind + 1, f"const {I} kr_ = kbeg_ + ({t}) * {BN} + r_;")
            copy(f"{base} + ({slot}) * {BN * width} + r_ * {width} + ((ch_ ^ (r_ & 7)) << 3)", v,
                 {KEY: kv, fast: dvar}, "kr_ < nk_", ind + 1)
            e(ind, "}")

    for i in range(S - 1):  # the first S - 1 tiles (a commit group each, empty past the end)
        e(1, f"if ({i} < ntk_) {{")
        load_tile(str(i), str(i), 2)
        e(1, "}")
        e(1, "em_cp_commit();")
    e(1, f'asm volatile("cp.async.wait_group {S - 2};" ::: "memory"); __syncthreads();  /* the rows and tile 0 */')
    afrag = w.cfg.get("afrag", "regs")  # the row operands' A fragments: held in registers, or read per tile
    if afrag not in ("regs", "smem"):
        raise UnsupportedKernel(f"scores afrag={afrag!r} ('regs' or 'smem')")
    for i, D in enumerate(Ds):
        if afrag == "smem":
            continue
        e(1, f"unsigned af{i}_[{D // 16}][4];")
        e(1, "#pragma unroll")
        e(1, f"for (int kk = 0; kk < {D // 16}; ++kk) {{")
        e(2, "const int r_ = warp_ * 16 + (lane_ & 15), ch_ = kk * 2 + (lane_ >> 4);")
        e(2, f"em_ldsm4(af{i}_[kk], A{i}_ + r_ * {D} + ((ch_ ^ (r_ & 7)) << 3));")
        e(1, "}")
    ost = online_stats(forms) if stat_reads(forms) else None  # (a chain of statistics: one pass, online)
    if ost is None and stat_reads(forms):
        raise UnsupportedKernel(f"{w.k.name}: statistics reading each other, not a max-shifted exp2 chain")
    if ost is not None:  # per score: the max's X (its running max m_), then each sum's factor G
        raw = [ost.x0] + [G for _, G in ost.parts]
        idents = ["-INFINITY"] + ["0.f"] * len(ost.parts)
        e(1, "float m_[2] = {-INFINITY, -INFINITY};")
        for t in range(1, len(forms)):
            e(1, f"float r{t}_[2] = {{0.f, 0.f}};")
    else:
        raw = [unified_x(g.x, m, scores) for g, m in zip(forms, maps)]
        idents = [IDENTITY[g.tail] for g in forms]
        for t in range(len(forms)):
            if DVs[t]:
                e(1, f"float o{t}_[{DVs[t] // 8}][4];")
                e(1, "#pragma unroll")
                e(1, f"for (int n = 0; n < {DVs[t] // 8}; ++n) o{t}_[n][0] = o{t}_[n][1] = o{t}_[n][2] = o{t}_[n][3] = 0.f;")
            else:
                e(1, f"float r{t}_[2] = {{{idents[t]}, {idents[t]}}};")
    e(1, f"const {I} qrow_ = q0_ + warp_ * 16 + (lane_ >> 2);")
    accs = {sc.acc for sc in scores}
    Xs = _hoisted(w, forms, [_fast_x(x, accs) for x in raw], [b[2] for b in bounds], 1)
    e(1, f"for ({I} t_ = 0; t_ < ntk_; ++t_) {{")
    e(2, "if (t_ > 0) {  /* tile t_ has landed; every warp is done with the slot refilled below */")
    e(3, f'asm volatile("cp.async.wait_group {S - 2};" ::: "memory"); __syncthreads();')
    e(2, "}")
    e(2, f"if (t_ + {S - 1} < ntk_) {{")
    load_tile(f"t_ + {S - 1}", f"(t_ + {S - 1}) % {S}", 3)
    e(2, "}")
    e(2, "em_cp_commit();")
    e(2, f"const int slot_ = (int)(t_ % {S});")
    Xs = _per_key(w, forms, Xs, BN, 2)
    for i, D in enumerate(Ds):
        e(2, f"const unsigned short* Bt{i}_ = B{i}_ + slot_ * {BN * D};")
        emit_scores_mma(w, D, BN, ty, 2, out=f"s{i}_", frag=f"af{i}_", tile=f"Bt{i}_",
                        frag_smem=f"A{i}_" if afrag == "smem" else None)
    # each output's X per score (out of range: its tail's identity): output t's into s<t>_ (a score
    # array every X has read by then), or an array of its own past the scores. On a tile wholly
    # inside the mask's bounds and the rows and keys X' (X with those conjuncts true) runs
    # unguarded: straight-line code, so the rows' statistics load once per row, not per score
    unit = [ost is not None and t > 0 and _is_one(raw[t]) for t in range(len(forms))]  # (nothing to store)
    dests, n = [], 0
    for t in range(len(forms)):
        dests.append(None if unit[t] else f"s{n}_" if n < len(scores) else f"x{n}_")
        if not unit[t] and n >= len(scores):
            e(2, f"float x{n}_[{BN // 8}][4];")
        n += 0 if unit[t] else 1
    full = [f"q0_ + {BM} <= nq_", f"kbeg_ + (t_ + 1) * {BN} <= nk_"]
    if upper is not None:
        full.append(f"kbeg_ + (t_ + 1) * {BN} - 1 <= q0_ + ({w.idx(upper)})")
    if lower is not None:
        full.append(f"kbeg_ + t_ * {BN} >= q0_ + {BM - 1} + ({w.idx(lower)})")
    e(2, f"if ({' && '.join(full)}) {{")
    _emit_x(w, forms, scores, maps, [x[1] for x in Xs], dests, BN, idents, None, 3)
    e(2, "} else {")
    _emit_x(w, forms, scores, maps, [x[0] for x in Xs], dests, BN, idents, f"{KEY} < nk_ && {f.query} < nq_", 3)
    e(2, "}")
    if ost is not None:
        _emit_online_stats(w, ost, dests, BN)
    for t, g in enumerate(forms):
        if ost is not None:
            break
        if DVs[t]:
            e(2, f"const unsigned short* Wt{t}_ = W{t}_ + slot_ * {BN * DVs[t]};")
            emit_pv_mma(w, BN, DVs[t], ty, 2, x=dests[t], tile=f"Wt{t}_", acc=f"o{t}_")
        else:
            op = "fmaxf" if g.tail == "max" else "em_add_"
            e(2, "#pragma unroll")
            e(2, "for (int h = 0; h < 2; ++h) {")
            e(3, "#pragma unroll")
            e(3, f"for (int n = 0; n < {BN // 8}; ++n) r{t}_[h] = {op}(r{t}_[h], {op}({dests[t]}[n][2 * h], {dests[t]}[n][2 * h + 1]));")
            e(2, "}")
    e(1, "}")
    e(1, "em_cp_wait_all();")
    if ost is not None:
        _store_online_stats(w, forms, ost)
    for t, g in enumerate(forms):
        if ost is not None:
            break
        if DVs[t]:  # epilogue: the accumulators through the store's expression
            e(1, "#pragma unroll")
            e(1, f"for (int n = 0; n < {DVs[t] // 8}; ++n) {{")
            e(2, "#pragma unroll")
            e(2, "for (int c = 0; c < 4; ++c) {")
            e(3, f"const {I} {g.query} = qrow_ + ((c >> 1) << 3);")
            e(3, f"const {I} {g.out_var} = n * 8 + ((lane_ & 3) << 1) + (c & 1);")
            e(3, f"if ({g.query} < nq_) {{")
            e(4, f"const float {g.out_acc} = o{t}_[n][c];")
            _store(w, g, 4)
            e(3, "}")
            e(2, "}")
            e(1, "}")
        else:
            op = "fmaxf" if g.tail == "max" else "em_add_"
            e(1, "#pragma unroll")
            e(1, "for (int h = 0; h < 2; ++h) {")
            e(2, f"r{t}_[h] = {op}(r{t}_[h], __shfl_xor_sync(0xffffffffu, r{t}_[h], 1));")
            e(2, f"r{t}_[h] = {op}(r{t}_[h], __shfl_xor_sync(0xffffffffu, r{t}_[h], 2));")
            e(2, f"const {I} {g.query} = qrow_ + 8 * h;")
            e(2, f"if ((lane_ & 3) == 0 && {g.query} < nq_) {{")
            e(3, f"const float {g.out_acc} = r{t}_[h];")
            _store(w, g, 3)
            e(2, "}")
            e(1, "}")
    w.T = T
    return sm.minimum(ntq * sm.prod([x for _, x in batch]), 2 ** 31 - 1)


def _is_one(v: ir.Val) -> bool:
    return v.op == "const" and v.args[0] == 1.0


def _emit_online_stats(w, ost, dests: list, BN: int) -> None:
    """The chain's online step per tile (dests[0]: the max's X per score, dests[i]: sum i's G or
    None for 1): the running max m_ over the row's four lanes, every sum rescaled by
    exp2(c (m_old - m_new)), then sum i += exp2(c (X - m_new)) G_i — the flash kernel's recurrence."""
    e, c = w.emit, repr(float(ost.c)) + "f"
    x = dests[0]
    e(2, "#pragma unroll")
    e(2, "for (int h = 0; h < 2; ++h) {")
    emit_running_max(w, x, BN, c, "al_", 3)
    for i in range(1, len(dests)):
        e(3, f"r{i}_[h] *= al_;")
    e(3, "#pragma unroll")
    e(3, f"for (int n = 0; n < {BN // 8}; ++n) {{")
    e(4, "#pragma unroll")
    e(4, "for (int j = 0; j < 2; ++j) {")
    e(5, f"const float p_ = em_ex2(fmaf({x}[n][2 * h + j], {c}, -mc_));")
    for i in range(1, len(dests)):
        e(5, f"r{i}_[h] += p_;" if dests[i] is None else f"r{i}_[h] = fmaf(p_, {dests[i]}[n][2 * h + j], r{i}_[h]);")
    e(4, "}")
    e(3, "}")
    e(2, "}")


def _store_online_stats(w, forms: tuple, ost) -> None:
    """The chain's outputs: the max, then each sum times its row factor R_i (reading the statistics
    before it: em_stat<j>), over the row's four lanes."""
    I, e = w.IDX, w.emit
    f = forms[0]
    e(1, "#pragma unroll")
    e(1, "for (int h = 0; h < 2; ++h) {")
    for i in range(1, len(forms)):
        e(2, f"r{i}_[h] += __shfl_xor_sync(0xffffffffu, r{i}_[h], 1);")
        e(2, f"r{i}_[h] += __shfl_xor_sync(0xffffffffu, r{i}_[h], 2);")
    e(2, f"const {I} {f.query} = qrow_ + 8 * h;")
    e(2, f"if ((lane_ & 3) == 0 && {f.query} < nq_) {{")
    e(3, "const float em_stat0 = m_[h];")
    for i, (R, _) in enumerate(ost.parts, 1):
        w.emitted_groups = {}
        env = w.vr.vals([R], 3)
        e(3, f"const float em_stat{i} = ({env[R]}) * r{i}_[h];")
    for i, g in enumerate(forms):
        e(3, "{")
        e(4, f"const float {g.out_acc} = em_stat{i};")
        _store(w, g, 4)
        e(3, "}")
    e(2, "}")
    e(1, "}")


def _invariants(X: ir.Val, others: list, allowed: set) -> list:
    """The largest parts of X (and of `others`) that read only the variables `allowed` and no
    score: values worth a register instead of a computation per score."""
    memo: dict = {}

    def within(v: ir.Val) -> bool:
        if v in memo:
            return memo[v]
        if v.op in ("const", "acc"):
            r = v.op == "const"
        elif v.op == "load":
            r = not isinstance(v.args[1], ir.Val) and (sm.free_vars(v.args[1]) | sm.free_vars(v.args[2])) <= allowed
        elif v.op == "index":
            r = sm.free_vars(v.args[0]) <= allowed
        else:
            r = all(within(a) for a in v.srcs)
        memo[v] = r
        return r

    tops: list = []
    seen: set = set()

    def collect(v: ir.Val):
        if v in seen:
            return
        seen.add(v)
        if v.op not in ("const", "index") and within(v):
            tops.append(v)
            return
        for a in v.srcs:
            collect(a)
    for x in [X] + others:
        collect(x)
    return tops


def _hoisted(w, forms: tuple, Xs: list, conjuncts: list, ind: int) -> list:
    """[(X, X on a full tile)] per form with the parts of the Xs that vary with the row alone — the
    softmax's statistics, their reciprocals and products — computed once per row before the key
    loop (registers rv<i>_[2]: a thread's two rows) instead of at every score."""
    f = forms[0]
    row_vars = {v for v, _ in f.rows}
    fulls = [replace(X, {c: ir.const(True, dt.bool_) for c in cs}) for X, cs in zip(Xs, conjuncts)]
    tops = _invariants(Xs[0], list(Xs[1:]) + fulls, row_vars)
    if not tops:
        return list(zip(Xs, fulls))
    I, e = w.IDX, w.emit
    for i, v in enumerate(tops):
        e(ind, f"float rv{i}_[2];")
    e(ind, "#pragma unroll")
    e(ind, "for (int h = 0; h < 2; ++h) {")
    e(ind + 1, f"const {I} {f.query} = qrow_ + 8 * h;")
    for i in range(len(tops)):
        e(ind + 1, f"rv{i}_[h] = 0.f;")
    e(ind + 1, f"if ({f.query} < nq_) {{")
    w.emitted_groups = {}
    env = w.vr.vals(tops, ind + 2)
    for i, v in enumerate(tops):
        e(ind + 2, f"rv{i}_[h] = {env[v]};")
    e(ind + 1, "}")
    e(ind, "}")
    regs = {v: ir.Val("acc", (f"rv{i}_[c >> 1]",), v.dtype) for i, v in enumerate(tops)}
    return [(replace(X, regs), replace(Xf, regs)) for X, Xf in zip(Xs, fulls)]


# registers a tile's per-key values may take (knob `key_regs`): dV's two (m, 1/l) at 64 keys; dK's
# three took it to 241 registers at head dim 64 (3 -> 2 blocks an SM) and spilled at 128
KEY_REGS = 32


def _per_key(w, forms: tuple, Xs: list, BN: int, ind: int) -> list:
    """[(X, X_full)] per form with the parts that vary with the key alone — the statistics of a
    kernel whose rows are the keys (dK, dV read the softmax's statistics by the streamed query
    index) — computed once per key of the tile (registers kv<i>_[BN/8][2]: a thread's keys), before
    the score MMAs so their loads overlap them, instead of at each of the key's two rows."""
    f = forms[0]
    allowed = {v for v, _ in f.rows if v != f.query} | {KEY}
    flat = [x for pair in Xs for x in pair]
    tops = _invariants(flat[0], flat[1:], allowed)
    if not tops or len(tops) * BN // 4 > int(w.cfg.get("key_regs", KEY_REGS)):
        return Xs
    I, e = w.IDX, w.emit
    for i in range(len(tops)):
        e(ind, f"float kv{i}_[{BN // 8}][2];")
    e(ind, "#pragma unroll")
    e(ind, f"for (int n = 0; n < {BN // 8}; ++n) {{")
    e(ind + 1, "#pragma unroll")
    e(ind + 1, "for (int c = 0; c < 2; ++c) {")
    e(ind + 2, f"const {I} {KEY} = kbeg_ + t_ * {BN} + n * 8 + ((lane_ & 3) << 1) + c;")
    for i in range(len(tops)):
        e(ind + 2, f"kv{i}_[n][c] = 0.f;")
    e(ind + 2, f"if ({KEY} < nk_) {{")
    w.emitted_groups = {}
    start = len(w.lines)
    env = w.vr.vals(tops, ind + 3)
    for i, v in enumerate(tops):
        e(ind + 3, f"kv{i}_[n][c] = {env[v]};")
    w.lines[start:] = [ln.replace("exp2f(", "em_ex2(") for ln in w.lines[start:]]
    e(ind + 2, "}")
    e(ind + 1, "}")
    e(ind, "}")
    regs = {v: ir.Val("acc", (f"kv{i}_[n][c & 1]",), v.dtype) for i, v in enumerate(tops)}
    return [(replace(X, regs), replace(Xf, regs)) for X, Xf in Xs]


def _emit_x(w, forms: tuple, scores: tuple, maps: tuple, Xs: list, dests: list, BN: int, idents: list, guard: str | None,
            ind: int) -> None:
    """dests[t][n][c] = output t's X at each score of the tile (where `guard` fails: its tail's
    identity); every X reads the scores before any is overwritten."""
    f = forms[0]
    I, e = w.IDX, w.emit
    e(ind, "#pragma unroll")
    e(ind, f"for (int n = 0; n < {BN // 8}; ++n) {{")
    e(ind + 1, "#pragma unroll")
    e(ind + 1, "for (int c = 0; c < 4; ++c) {")
    e(ind + 2, f"const {I} {f.query} = qrow_ + ((c >> 1) << 3);")
    e(ind + 2, f"const {I} {KEY} = kbeg_ + t_ * {BN} + n * 8 + ((lane_ & 3) << 1) + (c & 1);")
    for u in sorted({u for m in maps for u in m.values()}):
        e(ind + 2, f"const float {scores[u].acc} = s{u}_[n][c];")
    w.emitted_groups = {}
    start = len(w.lines)
    live = [t for t, d in enumerate(dests) if d is not None]  # (None: a factor of 1, nothing to store)
    if guard:
        for t in live:
            e(ind + 2, f"float x{t}v_ = {idents[t]};")
        e(ind + 2, f"if ({guard}) {{")
        env = w.vr.vals([Xs[t] for t in live], ind + 3)
        for t in live:
            e(ind + 3, f"x{t}v_ = {env[Xs[t]]};")
        e(ind + 2, "}")
    else:
        env = w.vr.vals([Xs[t] for t in live], ind + 2)
        for t in live:
            e(ind + 2, f"const float x{t}v_ = {env[Xs[t]]};")
    # exp2 as one ex2.approx (the flash kernel's): its result is rounded to 16 bits or summed in float32
    w.lines[start:] = [ln.replace("exp2f(", "em_ex2(") for ln in w.lines[start:]]
    for t in live:
        e(ind + 2, f"{dests[t]}[n][c] = x{t}v_;")
    e(ind + 1, "}")
    e(ind, "}")


def _fast_x(X: ir.Val, accs: set) -> ir.Val:
    """X with each score (accumulators `accs`) used unrounded where the graph rounds it to 16 bits
    (torch's q @ kᵀ returns bf16; its own flash kernels keep the float32 accumulator, as the flash
    kernel's `streamlined` does; every value is computed in float32 here): two conversions fewer
    per score."""
    memo: dict = {}

    def go(v: ir.Val) -> ir.Val:
        if v in memo:
            return memo[v]
        r = v
        inner = v.args[0] if v.op == "cast" else None
        while inner is not None and inner.op == "cast" and inner.dtype.name == "float32":
            inner = inner.args[0]
        if v.op == "cast" and v.dtype.name in HALF and v.args[0].op == "acc" and v.args[0].args[0] in accs:
            r = v.args[0]
        elif v.op == "cast" and v.dtype.name in HALF and inner is not None and inner.op == "cast" \
                and inner.dtype == v.dtype:  # rounded to the same 16 bits already (exact)
            r = go(inner)
        elif v.srcs:
            r = ir.Val(v.op, tuple(go(a) if isinstance(a, ir.Val) else a for a in v.args), v.dtype)
            r = _folded_scale(r)
        memo[v] = r
        return r
    return go(X)


def _scalar(v: ir.Val) -> float | None:
    return float(v.args[0]) if v.op == "const" and isinstance(v.args[0], float) else None


def _folded_scale(v: ir.Val) -> ir.Val:
    """c1 * (c2 * x) as (c1 c2) * x, and 1 * x as x, in float32 products: autograd's exp2 leaves
    ln 2 * log2 e on every score (one rounding of a float32 product apart)."""
    if v.op != "mul" or v.dtype.name != "float32":
        return v
    for c, x in (v.args, v.args[::-1]):
        k = _scalar(c)
        if k is None:
            continue
        if x.op == "mul" and x.dtype == v.dtype:
            for c2, y in (x.args, x.args[::-1]):
                k2 = _scalar(c2)
                if k2 is not None:
                    k, x = k * k2, y
                    break
        if abs(k - 1.0) < 1e-12:
            return x
        return ir.Val("mul", (ir.const(k, v.dtype), x), v.dtype)
    return v


SCORES_PRELUDE = "__device__ __forceinline__ float em_add_(float a, float b) { return a + b; }"


def _store(w, f: ScoreForm, ind: int) -> None:
    w.emitted_groups = {}
    env = w.vr.vals([f.store.value], ind)
    w.emit(ind, f"{f.store.buffer}[{w.idx(f.store.index)}] = {w.vr.store(f.store.buffer, env[f.store.value])};")
