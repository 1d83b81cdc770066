"""The scan mode of the CUDA renderer (cfg ``{"mode": "scan", "threads": T, "unroll": U}``) for the
prefix sums of kernel/scan.py: a warp per block of n <= 32 positions, lane l loading the term at
position l, a shuffle scan (log2 n steps) giving every lane its inclusive prefix, then the kernel's
own store (its epilogue: the block's running total before it, cumsum's other levels) at position l.
Each warp takes U blocks at a time, their loads issued before any shuffle, so a warp has U loads in
flight. The loops it replaces read every term n times and did n adds per output (the H100, cumsum
over 4096 x 8192: 0.48 ms against eager's 0.24, bench/results/kernelbench-cuda-torch-2026-11-27.json)."""
from __future__ import annotations

import os

from .. import symbolic as sm
from ..kernel import ir
from ..kernel.scan import scan_form, short_sum_form
from ..kernel.structure import Canon, UnsupportedKernel
from .clike import compute_type


# knob `pvec` 4 the default wherever it renders (0: off; A/B runs)
SCAN_PVEC = os.environ.get("EMBER_SCAN_PVEC", "1") == "1"


def _blocks(c: Canon, f):
    """(the loops with the scanned variable's block count as `scan_s_`, block -1's offset, ragged)."""
    n, ext, shift = f.n, f.extent.value, f.shift
    first = -1 if shift else 0  # a shifted axis: block -1 holds its positions before the shift
    q = (ext - 1 - shift) // n - first + 1
    ragged = bool(shift) or (q * n != ext)  # blocks past either end: those positions are not stored
    return [("scan_s_", sm.const(q)) if v == f.var else (v, e) for v, e in c.outer], first, ragged


def pvec_applicable(c: Canon, P: int) -> bool:
    """Whether knob `pvec` = P renders (_render_pvec): see _pvec_fits."""
    f = scan_form(c)
    if f is None or f.var is None:
        return False
    loops, _, ragged = _blocks(c, f)
    return _pvec_fits(f, loops, ragged, P)


def _pvec_fits(f, loops: list, ragged: bool, P: int) -> bool:
    """Whole blocks of a forward scan, P dividing them into a power-of-two number of lanes that divides a warp,
    and whole warps of blocks."""
    n = f.n
    G = n // P
    nseg = sm.sym(sm.prod(e for _, e in loops))
    return not (ragged or f.shift or f.reverse or f.suffix or n % P or G < 1 or G & (G - 1) or 32 % G
                or not nseg.is_const or nseg.value % (32 // G))


def render_scan(r, c: Canon, T: int):
    """The kernel body into CUDA renderer `r`; returns the grid. A short sum (kernel/scan.py
    short_sum_form) runs the same way and stores its last lane's prefix: the total."""
    f = scan_form(c) or short_sum_form(c)
    U = int(r.cfg.get("unroll", 4))
    ct = [compute_type(acc.dtype) for _, _, acc in f.terms()]  # a register array a stage
    n = f.n
    warps = T // 32
    if f.var is None:
        return _render(r, c, f, ct, n, warps, U, c.outer, 0, 0, False)
    # the blocks: every output variable but the position's, which splits as n * s + l
    loops, first, ragged = _blocks(c, f)
    P = int(r.cfg.get("pvec", 1))
    if P > 1:
        if not _pvec_fits(f, loops, ragged, P):
            raise UnsupportedKernel(f"pvec {P}: whole blocks of a forward scan, {P} dividing them, whole warps of blocks")
        return _render_pvec(r, c, f, ct, n, warps, U, loops, P)
    return _render(r, c, f, ct, n, warps, U, loops, first, f.extent.value, ragged)


def _render_pvec(r, c, f, ct: list, n: int, warps: int, U: int, loops: list, P: int):
    """Knob `pvec` = P: each lane holds P consecutive positions of a block (16-byte loads of float32
    terms where they are contiguous), a block of n spread over n / P lanes, so a warp scans 32 P
    positions of P * 32 / n neighbouring blocks at a time: a lane's running sum over its P, a shuffle
    scan of the lanes' totals within the block's lanes, their exclusive prefix added back. The
    store's block-level terms (cumsum's other levels) are the same for a lane's P positions. H200,
    gpu-session47 b/: real KernelBench 89's cumsum 4.98 -> 3.55 ms, 93's masked cumsum 6.01 -> 4.29; the
    default wherever it renders (cuda_schedule, EMBER_SCAN_PVEC)."""
    G = n // P  # lanes a block
    nseg = sm.sym(sm.prod(e for _, e in loops))
    S = 32 // G  # blocks a warp at a time
    block = sm.var("scan_s_", 0, dict(loops)["scan_s_"].value - 1)
    I, e = r.IDX, r.emit
    terms = f.terms()
    nunit = nseg.value // S
    e(1, "const int lane_ = threadIdx.x & 31;")
    e(1, f"const int lq_ = lane_ & {G - 1};")
    e(1, f"const {I} nunit_ = {nunit};")
    e(1, f"for ({I} w0_ = (({I})blockIdx.x * {warps} + (threadIdx.x >> 5)) * {U}; w0_ < nunit_; "
         f"w0_ += ({I})gridDim.x * {warps * U}) {{")
    for k, t in enumerate(ct):
        e(2, f"{t} v{k}_[{U}][{P}] = {{}};")
    seg = f"(w0_ + {{u}}) * {S} + (lane_ >> {G.bit_length() - 1})"
    for u in range(U):
        e(2, f"if (w0_ + {u} < nunit_) {{")
        r.decompose(seg.format(u=u), loops, 3)
        for rv in dict.fromkeys(rv for rv, _, _ in terms):
            e(3, f"const {I} {rv} = lq_ * {P};")
        r.emitted_groups, r._ind = {}, 3
        # (a term reads the block, not the position in it: the block's first position stands for it)
        start = {f.var: block * n}
        lanes = [r.lanes([ir.substitute(x, start, {})], rv, P) for rv, x, _ in terms]  # [term][position][0]
        env = r.vr.vals([v for tl in lanes for lane in tl for v in lane], 3)
        for k, tl in enumerate(lanes):
            for i in range(P):
                e(3, f"v{k}_[{u}][{i}] = ({ct[k]})({env[tl[i][0]]});")
        e(2, "}")
    for u in range(U):
        for k, t in enumerate(ct):
            for i in range(1, P):
                e(2, f"v{k}_[{u}][{i}] += v{k}_[{u}][{i - 1}];")
            e(2, f"{{ {t} tot_ = v{k}_[{u}][{P - 1}];")
            d = 1
            while d < G:
                e(3, f"{{ const {t} s_ = __shfl_up_sync(0xffffffffu, tot_, {d}); if (lq_ >= {d}) tot_ += s_; }}")
                d *= 2
            # the exclusive prefix is the lane before's inclusive one, shuffled, not tot_ minus the lane's own:
            # cumprod's log-magnitude terms are -inf at a zero, and -inf - -inf is NaN (real KB 90, gpu-session47 b/)
            e(3, f"{t} ex_ = __shfl_up_sync(0xffffffffu, tot_, 1); if (lq_ == 0) ex_ = 0;")
            for i in range(P):
                e(3, f"v{k}_[{u}][{i}] += ex_;")
            e(2, "}")
    # stores: position lq_ * P + i of the lane's block, packed into one vector where contiguous and aligned
    st = c.store
    pos = [block * n + sm.var("lq_", 0, G - 1) * P + i for i in range(P)]
    index = [sm.substitute(st.index, {f.var: p}) for p in pos]
    buf = r.k.buffer(st.buffer)
    nbytes = buf.dtype.itemsize * P
    packed = st.buffer not in r.vr.locals and not buf.dtype.is_bool and nbytes in (4, 8, 16) \
        and (index[0] % P) is sm.ZERO and all(index[i] - index[0] is sm.const(i) for i in range(P))
    raw_t = {16: "uint4", 8: "uint2", 4: "unsigned int"}.get(nbytes)
    for u in range(U):
        e(2, f"if (w0_ + {u} < nunit_) {{")
        r.decompose(seg.format(u=u), loops, 3)
        if packed:
            e(3, f"{raw_t} o_;")
        vals = []
        for i in range(P):  # (the P values in one pass: the block-level terms they share render once)
            for k, (_, _, acc) in enumerate(terms):
                e(3, f"const {ct[k]} {acc.name}_{i} = v{k}_[{u}][{i}];")
            memo = {ir.acc(acc.name, acc.dtype): ir.acc(f"{acc.name}_{i}", acc.dtype) for _, _, acc in terms}
            vals.append(ir.substitute(st.value, {f.var: pos[i]}, memo))
        r.emitted_groups, r._ind = {}, 3
        env = r.vr.vals(vals, 3)
        for i, val in enumerate(vals):
            value = r.vr.store(st.buffer, env[val])
            if packed:
                e(3, f"reinterpret_cast<{r.vr.d.storage_type(buf.dtype)}*>(&o_)[{i}] = {value};")
            else:
                e(3, f"{st.buffer}[{r.idx(index[i])}] = {value};")
        if packed:
            e(3, f"*reinterpret_cast<{raw_t}*>(&{st.buffer}[{r.idx(index[0])}]) = o_;")
        e(2, "}")
    e(1, "}")
    return sm.minimum((nunit + (warps * U - 1)) // (warps * U), 2 ** 31 - 1)


def _render(r, c, f, ct: list, n: int, warps: int, U: int, loops: list, first: int, ext: int, ragged: bool):
    shift = f.shift
    nseg = sm.prod(e for _, e in loops)
    I = r.IDX
    e = r.emit
    e(1, "const int lane_ = threadIdx.x & 31;")
    e(1, f"const {I} nseg_ = {r.idx(nseg)};")
    e(1, f"const {I} step_ = ({I})gridDim.x * {warps * U};")
    e(1, f"for ({I} s0_ = (({I})blockIdx.x * {warps} + (threadIdx.x >> 5)) * {U}; s0_ < nseg_; s0_ += step_) {{")
    terms = f.terms()
    for k, t in enumerate(ct):
        e(2, f"{t} v{k}_[{U}];")
    e(2, "#pragma unroll")
    e(2, f"for (int u_ = 0; u_ < {U}; ++u_) {{")
    for k in range(len(ct)):
        e(3, f"v{k}_[u_] = 0;")
    e(3, f"if (s0_ + u_ < nseg_ && lane_ < {n}) {{")
    r.decompose("s0_ + u_", loops, 4)
    if f.var is not None:  # (the term is the same at every position of a block: read it at one inside the axis)
        e(4, f"const {I} {f.var} = EM_CLAMP(({I})(scan_s_ + {first}) * {n} + {shift} + lane_, ({I})0, ({I}){ext - 1});")
    for rv in dict.fromkeys(rv for rv, _, _ in terms):  # (stages may share their reduce variable's name)
        e(4, f"const {I} {rv} = {f'{n - 1} - lane_' if f.suffix else 'lane_'};")
    r.emitted_groups, r._ind = {}, 4
    env = r.vr.vals([x for _, x, _ in terms], 4)
    for k, (_, x, _) in enumerate(terms):
        e(4, f"v{k}_[u_] = ({ct[k]})({env[x]});")
    e(3, "}")
    e(2, "}")
    # Hillis-Steele over the lanes: after the step of distance d every lane holds the sum of the 2d
    # terms up to it; lanes past n hold zeros and only ever feed lanes past them
    width = 1 << (n - 1).bit_length()
    e(2, "#pragma unroll")
    e(2, f"for (int d_ = 1; d_ < {width}; d_ <<= 1) {{")
    e(3, "#pragma unroll")
    e(3, f"for (int u_ = 0; u_ < {U}; ++u_) {{")
    for k, t in enumerate(ct):
        e(4, f"const {t} t{k}_ = __shfl_up_sync(0xffffffffu, v{k}_[u_], d_);")
        e(4, f"if (lane_ >= d_) v{k}_[u_] += t{k}_;")
    e(3, "}")
    e(2, "}")
    e(2, "#pragma unroll")
    e(2, f"for (int u_ = 0; u_ < {U}; ++u_) {{")
    if f.var is None:  # a short sum: the last lane's prefix is the total
        e(3, f"if (s0_ + u_ < nseg_ && lane_ == {n - 1}) {{")
        r.decompose("s0_ + u_", loops, 4)
        for k, (_, _, acc) in enumerate(terms):
            e(4, f"const {ct[k]} {acc.name} = v{k}_[u_];")
        r.store(c.store, None, 1, 4)
        e(3, "}")
        e(2, "}")
        e(1, "}")
        return sm.minimum((nseg + (warps * U - 1)) // (warps * U), 2 ** 31 - 1)
    e(3, f"if (s0_ + u_ < nseg_ && lane_ < {n}) {{")
    r.decompose("s0_ + u_", loops, 4)
    # lane p holds the sum from the block's first term read: position p, or n - 1 - p when the
    # lanes read the terms backwards (a suffix sum) or the bound runs backwards (a flipped axis)
    pos = f"{n - 1} - lane_" if f.reverse != f.suffix else "lane_"
    e(4, f"const {I} {f.var} = ({I})(scan_s_ + {first}) * {n} + {shift} + {pos};")
    for k, (_, _, acc) in enumerate(terms):
        e(4, f"const {ct[k]} {acc.name} = v{k}_[u_];")
    if ragged:
        e(4, f"if ({f.var} >= 0 && {f.var} < {ext}) {{")
    # the store's expression sees the position as n * block + lane, not as an opaque name, so its
    # block-level terms (the running total before the block: cumsum's other levels) simplify to the block
    lane = sm.var("lane_", 0, n - 1)
    seg = dict(loops).get("scan_s_")
    at = (sm.var("scan_s_", 0, seg.value - 1) + first) * n + shift + ((n - 1) - lane if f.reverse != f.suffix else lane)
    st = c.store
    r.store(ir.Store(st.buffer, sm.substitute(st.index, {f.var: at}), ir.substitute(st.value, {f.var: at}, {})),
            None, 1, 5 if ragged else 4)
    if ragged:
        e(4, "}")
    e(3, "}")
    e(2, "}")
    e(1, "}")
    per_block = warps * U
    return sm.minimum((nseg + (per_block - 1)) // per_block, 2 ** 31 - 1)
