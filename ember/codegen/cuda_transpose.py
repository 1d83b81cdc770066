"""The transpose mode of the CUDA renderer (cfg ``{"mode": "transpose", "threads": 256}``) for
elementwise kernels whose store walks one loop variable contiguously while a load walks another
(an NCHW -> NHWC copy, kernel/layout.py's channels-last copies): in the elementwise mode a warp's
32 consecutive stores read 32 lines of the strided source, one element each.

Here a block takes a 32 x 32 tile of the two variables (every other loop variable fixed): it
computes the value with the load's variable running over the warp's lanes (that load coalesced),
keeps it in shared memory, and stores it with the store's variable over the lanes (the store
coalesced). 32 x 33 floats of shared memory (a padded row: the column reads hit 32 banks).

    for tile (rest, j0, l0):                      lanes tx, rows ty of 8 warps
      tile_[ty + 8i][tx] = value(j = j0 + tx, l = l0 + ty + 8i)
      sync
      out[index(j = j0 + ty + 8i, l = l0 + tx)] = tile_[tx][ty + 8i]
      sync

Not yet timed on a GPU: the default takes it only with EMBER_TRANSPOSE_COPIES=1; the search tries
it wherever it applies (and verifies it like any candidate)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from .. import symbolic as sm
from ..kernel import ir
from ..kernel.structure import Canon, UnsupportedKernel
from .clike import compute_type

TILE = 32
ENABLED = os.environ.get("EMBER_TRANSPOSE_COPIES", "0")


@dataclass
class TransposeForm:
    j: str  # the variable a load walks contiguously (the tile's lanes when computing)
    l: str  # the store's contiguous variable, innermost (the lanes when storing)
    rest: list  # the other loop variables [(var, extent)], outermost first


def elementwise_config(c: Canon) -> dict:
    """The unsearched schedule of an elementwise kernel: transpose mode for a transposing one where
    EMBER_TRANSPOSE_COPIES=1, else the elementwise mode."""
    if ENABLED == "1" and transpose_form(c) is not None:
        return {"mode": "transpose", "threads": TILE * 8}
    return {"mode": "elementwise", "threads": 256, "vec": 8}


def transpose_form(c: Canon | None) -> TransposeForm | None:
    """The form of an elementwise kernel with static loops whose store is contiguous along its
    innermost variable l and some load contiguous along another variable j (strided along l), both
    at least TILE long; else None."""
    if c is None or c.stages or c.inner or len(c.outer) < 2:
        return None
    if any(not e.is_const for _, e in c.outer):
        return None
    l, le = c.outer[-1]
    if le.value < TILE or not _unit(c.store.index, l):
        return None
    loads = [v for v in ir.val_toposort([c.store.value]) if v.op == "load" and not isinstance(v.args[1], ir.Val)]
    for j, je in c.outer[:-1]:
        if je.value < TILE:
            continue
        if any(_unit(v.args[1], j) and not _unit(v.args[1], l) for v in loads):
            return TransposeForm(j, l, [(v, e) for v, e in c.outer if v not in (j, l)])
    return None


def _unit(index: sm.Expr, var: str) -> bool:
    s = sm.step(index, var)
    return s.is_const and s.value == 1


def render_transpose(r, c: Canon, T: int):
    """The kernel body into CUDA renderer `r`; returns the grid."""
    f = transpose_form(c)
    if f is None or c.store.buffer in r.vr.locals:
        raise UnsupportedKernel(f"{r.k.name}: not a transposing elementwise kernel")
    if T != TILE * 8:
        raise UnsupportedKernel(f"transpose mode runs {TILE * 8} threads a block, not {T}")
    ext = dict(c.outer)
    J, L = ext[f.j].value, ext[f.l].value
    tj, tl = -(-J // TILE), -(-L // TILE)
    rest = sm.prod(e for _, e in f.rest)
    I = r.IDX
    ct = compute_type(c.store.value.dtype)
    e = r.emit
    e(1, f"__shared__ {ct} tile_[{TILE}][{TILE + 1}];")
    e(1, "const int tx_ = threadIdx.x & 31, ty_ = threadIdx.x >> 5;")
    e(1, f"const {I} ntiles_ = ({I}){r.idx(rest)} * {tj * tl};")
    e(1, f"for ({I} b_ = blockIdx.x; b_ < ntiles_; b_ += gridDim.x) {{")
    e(2, f"const {I} j0_ = (b_ % {tj}) * {TILE}, l0_ = ((b_ / {tj}) % {tl}) * {TILE};")
    r.decompose(f"b_ / {tj * tl}", f.rest, 2)
    e(2, "#pragma unroll")
    e(2, f"for (int i_ = 0; i_ < {TILE}; i_ += 8) {{")
    e(3, f"const {I} {f.j} = j0_ + tx_, {f.l} = l0_ + ty_ + i_;")
    e(3, f"if ({f.j} < {J} && {f.l} < {L}) {{")
    r.emitted_groups, r._ind = {}, 4
    env = r.vr.vals([c.store.value], 4)
    e(4, f"tile_[ty_ + i_][tx_] = ({ct})({env[c.store.value]});")
    e(3, "}")
    e(2, "}")
    e(2, "__syncthreads();")
    e(2, "#pragma unroll")
    e(2, f"for (int i_ = 0; i_ < {TILE}; i_ += 8) {{")
    e(3, f"const {I} {f.j} = j0_ + ty_ + i_, {f.l} = l0_ + tx_;")
    e(3, f"if ({f.j} < {J} && {f.l} < {L}) {{")
    st = c.store
    e(4, f"{st.buffer}[{r.idx(st.index)}] = {r.vr.store(st.buffer, 'tile_[tx_][ty_ + i_]')};")
    e(3, "}")
    e(2, "}")
    e(2, "__syncthreads();")
    e(1, "}")
    return sm.minimum(rest * (tj * tl), 2 ** 31 - 1)
