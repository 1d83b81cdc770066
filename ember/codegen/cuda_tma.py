"""Which contraction operands the Hopper copy engine (TMA) can stage, and the tensor map each needs.

A TMA copy moves a box of a strided tensor of up to 5 dimensions from global to shared memory,
zero-filling whatever falls outside the tensor, and writes it in the 128-byte swizzled layout that
`wgmma` reads (codegen/cuda_wgmma.py). It copies raw elements: the operand must be one load of a
buffer, through widening casts only, whose index is affine in the loop variables, with

* k (the summed variables) flattening into one run and the operand's rows (its m or n variables)
  into another; one of the two is unit-stride (K-major: k is; MN-major: the rows are). k may also
  be two runs, an inner one whose length is a multiple of a slice (BK) and an outer one (tokens
  over batch x sequence read from a [batch, feature, sequence] tensor): a further dimension of
  the map, a slice's coordinates split between the two. The rows of a K-major operand may be two
  runs the same way (attention's output [batch, heads, tokens, head_dim] read as tokens x
  (heads, head_dim) by the output projection: rows batch x tokens, k heads x head_dim): the
  inner run's length and the tile's row count must divide one another, so a tile is whole inner
  runs or lies inside one (the kernel's plan checks that, codegen/cuda_wgmma.py);
* every other stride a multiple of 16 bytes, the base offset too;
* the batch variables it reads as further dimensions (at most three).

A matmul and a linear layer in any transposition, batched matmuls and attention's products fit;
an implicit-GEMM convolution's input (its k walk jumps by rows and planes) and an operand computed
by a prologue do not: the producer gathers those (codegen/cuda_wgmma_feed.py).

The plan's tensor maps are described in the launch config (`tma`: per operand the kernel parameter
it reads, offset, dims, strides, box, element type); backends/cuda_tma.py encodes them against the
buffers' device pointers at launch time (the pointers are only known then).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .. import dtypes as dt
from .. import symbolic as sm
from ..kernel import ir, layout_gemm
from ..kernel.structure import Contraction

# bf16 / f16 MN-major rows as two runs, copied by TMA (EMBER_WGMMA_MN_RUNS16=0: gathered, as before; A/B runs)
MN_RUNS_16 = os.environ.get("EMBER_WGMMA_MN_RUNS16", "1") == "1"
SWIZZLE_BYTES = 128  # one swizzled shared-memory row: 64 bf16/f16 or 32 f32 of k (K-major)
TMA_KINDS = {dt.bfloat16: "bf16", dt.float16: "f16", dt.float32: "tf32"}


@dataclass
class TmaOperand:
    buffer: str
    dtype: dt.DType
    kmajor: bool  # k unit-stride (else the rows are)
    offset: int  # elements from the buffer's start
    dims: list  # extents, innermost first: [K, R] (K-major) or [R, K], then batch extents
    strides: list  # element strides of dims[1:]
    batch_vars: list  # C expressions of the batch loops the operand reads, after the k and row dims
    k_inner: int = 0  # k as two runs: the inner run's length (dims[2] is then the outer run)
    r_inner: int = 0  # rows as two runs (K-major only): the inner run's length (the outer one is
    # the dimension after k's outer run)

    @property
    def rank(self) -> int:
        return len(self.dims)


def _peel(v: ir.Val):
    """The load under widening casts, or None."""
    while v.op == "cast":
        inner = v.args[0]
        if not (v.dtype == dt.float32 or v.dtype == inner.dtype):
            return None
        v = inner
    return v if v.op == "load" and not isinstance(v.args[1], ir.Val) else None


def _affine(e: sm.Expr, names: list):
    """(offset, {var: stride}) when e is exactly offset + sum(stride * var) with constant integers."""
    zero = {n: sm.ZERO for n in names}
    off = sm.substitute(e, zero)
    if not off.is_const:
        return None
    strides, rebuilt = {}, off
    for n in names:
        x = sm.var(n, 0, None)
        step = sm.substitute(e, dict(zero, **{n: x + 1})) - sm.substitute(e, dict(zero, **{n: x}))
        if not step.is_const:
            return None
        strides[n] = int(step.value)
        rebuilt = rebuilt + sm.var(n, 0, None) * int(step.value)
    probe = {n: sm.var(n, 0, None) for n in names}
    if not (sm.substitute(e, probe) - rebuilt).is_const or (sm.substitute(e, probe) - rebuilt).value != 0:
        return None
    return int(off.value), strides


def _flatten(loops: list, strides: dict):
    """(extent, stride) of loops (outermost first) that walk one evenly strided run, else None. The
    outermost loop's extent may be symbolic (a prompt's length): the run's extent is then an Expr,
    evaluated when the tensor map is encoded (backends/cuda_tma.py)."""
    if not loops or any(not e.is_const for _, e in loops[1:]):
        return None
    run, stride = 1, strides[loops[-1][0]]
    for v, e in reversed(loops):
        if strides[v] != stride * run:
            return None
        run = run * e.value if e.is_const else sm.sym(e) * run
    return run, stride


def tma_operand(g: Contraction, val: ir.Val, rows: list, mn_runs: bool = False) -> TmaOperand | str:
    """The TMA plan of operand `val` (rows: its m or n loops), or why there is none. mn_runs: float32
    MN-major rows may be two runs (an operand the RS form loads: codegen/cuda_wgmma_rs.py)."""
    ld = _peel(val)
    if ld is None:
        return "not a plain load (a prologue or an indirect index)"
    buf, index, valid = ld.args
    if not (valid.is_const and valid.value == 1):
        return "a guarded load (padding)"
    if ld.dtype not in TMA_KINDS:
        return f"{ld.dtype.name} elements"
    names = [v for v, _ in g.batch + rows + g.k]
    if not sm.free_vars(index) <= set(names):
        return "an index over other variables"
    # a k loop the index divides (v // c, v % c: a split-K chunk over batch x sequence) as two loops
    kloops, index = _split_divided(g.k, index)
    rows, index = _split_divided(rows, index)  # (rows over batch x tokens of a 4-D tensor, likewise)
    # a batch loop read divided (grouped-query attention: query head h reads key head h // 4) as two
    # loops, the one the index ignores dropped below (stride 0)
    batch, index = _split_divided(g.batch, index)
    names = [v for v, _ in batch + rows + kloops]
    aff = _affine(index, names)
    if aff is None:
        return "a non-affine index"
    off, strides = aff
    es = ld.dtype.itemsize
    k, r = _flatten(kloops, strides), _flatten(rows, strides)
    ko = ro = None
    if k is None:  # two runs: an inner one of whole slices, and an outer one
        k, ko = _two_runs(kloops, strides, SWIZZLE_BYTES // es)
    if r is None and k is not None and k[1] == 1:  # K-major rows as two runs
        r, ro = _two_runs(rows, strides, 1, symbolic_outer=True)
        if r is not None and r[0] % 64 and 64 % r[0]:  # (no 64-row tile is whole runs or inside one)
            r = None
    elif r is None and k is not None and (((layout_gemm.TF32_STAGE or mn_runs) and ld.dtype == dt.float32)
                                          or (MN_RUNS_16 and ld.dtype != dt.float32)):  # MN-major rows as two
        # runs (a 1x1 conv over NCHW: n outside, h w inside), each 128-byte chunk of rows inside one (TF32's staging
        # ring, the RS form; bf16 / f16 straight into wgmma's transposed operand: the contraction suite's ResNet 1x1
        # conv over NCHW had its pixels gathered a scalar at a time, 75 us against cuDNN's 22, gpu-session47 e/)
        r, ro = _two_runs(rows, strides, SWIZZLE_BYTES // es)
        if r is not None and r[1] != 1:
            r = None
    if k is None or r is None:
        return "k or the rows do not walk one strided run"
    if k[1] == 1:
        kmajor, dims, outer = True, [k[0], r[0]], [r[1]]
    elif r[1] == 1:
        kmajor, dims, outer = False, [r[0], k[0]], [k[1]]
    else:
        return "neither k nor the rows are unit-stride"
    for run in (ko, ro):
        if run is not None:
            dims.append(run[0])
            outer.append(run[1])
    bvars = [(v, e) for v, e in batch if strides[v] != 0]
    if len(bvars) > 5 - len(dims) or any(not e.is_const for _, e in bvars):
        return "more dimensions than the copy engine's five"
    dims += [e.value for _, e in bvars]
    outer += [strides[v] for v, _ in bvars]
    if any(s <= 0 or (s * es) % 16 for s in outer) or (off * es) % 16 or off < 0:
        return "a stride or offset that is not a multiple of 16 bytes"
    if any(isinstance(d, int) and d >= 2 ** 32 for d in dims) or any(s * es >= 2 ** 40 for s in outer):
        return "a dimension beyond the copy engine's range"
    return TmaOperand(buf, ld.dtype, kmajor, off, dims, outer, [_coordinate(v, batch) for v, _ in bvars], k[0] if ko is not None else 0,
                      r[0] if ro is not None else 0)


def _divisors(e, v: str, out: set) -> set:
    """Constants c of the `v // c` and `v % c` in e."""
    if isinstance(e, tuple):
        for a in e:
            _divisors(a, v, out)
    elif isinstance(e, sm.Expr):
        if e.op in ("div", "mod") and isinstance(e.args[0], sm.Expr) and e.args[0].op == "var" \
                and sm.free_vars(e.args[0]) == {v} and isinstance(e.args[1], sm.Expr) and e.args[1].is_const:
            out.add(int(e.args[1].value))
        _divisors(e.args, v, out)
    return out


def _split_divided(loops: list, index):
    """(loops, index) with each k loop v that the index reads only as v // c and v % c (one c
    dividing its extent) replaced by loops v__hi (extent / c) and v__lo (c), outer first: the same
    flat order, an affine index."""
    out = []
    for v, ext in loops:
        cs = _divisors(index, v, set())
        if len(cs) == 1 and ext.is_const and ext.value % next(iter(cs)) == 0 and ext.value > next(iter(cs)):
            c = cs.pop()
            hi, lo = sm.var(f"{v}__hi", 0, ext.value // c - 1), sm.var(f"{v}__lo", 0, c - 1)
            index = sm.substitute(index, {v: hi * c + lo})
            out += [(f"{v}__hi", sm.const(ext.value // c)), (f"{v}__lo", sm.const(c))]
        else:
            out.append((v, ext))
    return out, index


def _coordinate(v: str, loops: list) -> str:
    """The C expression of loop v in the kernel's own variables: a loop _split_divided made
    (v__hi, v__lo of extent c) is v / c or v % c."""
    if v.endswith("__hi") or v.endswith("__lo"):
        base, c = v[:-4], dict(loops)[v[:-4] + "__lo"].value
        return f"({base} / {c})" if v.endswith("__hi") else f"({base} % {c})"
    return v


def _two_runs(loops: list, strides: dict, slice_len: int, symbolic_outer: bool = False):
    """k loops (or rows) as (inner run, outer run), each (extent, stride), the inner run's extent a
    multiple of `slice_len` (a slice never straddles the two); (None, None) when no split point gives
    that. symbolic_outer: the outermost loop's extent may be symbolic (rows over a prompt's length)."""
    if len(loops) < 2 or any(not e.is_const for _, e in loops[1 if symbolic_outer else 0:]):
        return None, None
    for cut in range(len(loops) - 1, 0, -1):
        inner, outer = _flatten(loops[cut:], strides), _flatten(loops[:cut], strides)
        if inner is not None and outer is not None and inner[0] % slice_len == 0:
            return inner, outer
    return None, None


def launch_spec(p: TmaOperand, param: int, box: list, raw: bool = False) -> dict:
    """The launch config's description of one tensor map (JSON: ints and strings). raw: float32
    copied as it is (3xTF32 splits it), where a plain float32 map has the copy engine round to TF32."""
    return {"param": param, "dtype": p.dtype.name + ("_raw" if raw and p.dtype == dt.float32 else ""), "offset": p.offset,
            "dims": [d if isinstance(d, int) else sm.to_json(d) for d in p.dims],  # (a symbolic M: JSON)
            "strides": list(p.strides), "box": list(box)}
