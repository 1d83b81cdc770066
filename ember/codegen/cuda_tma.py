"""Which contraction operands the Hopper copy engine (TMA) can stage, and the tensor map each needs.

A TMA copy moves a box of a strided tensor of up to 5 dimensions from global to shared memory,
zero-filling whatever falls outside the tensor, and writes it in the 128-byte swizzled layout that
`wgmma` reads (codegen/cuda_wgmma.py). It copies raw elements: the operand must be one load of a
buffer, through widening casts only, whose index is affine in the loop variables, with

* k (the summed variables) flattening into one run and the operand's rows (its m or n variables)
  into another; one of the two is unit-stride (K-major: k is; MN-major: the rows are);
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

from dataclasses import dataclass

from .. import dtypes as dt
from .. import symbolic as sm
from ..kernel import ir
from ..kernel.structure import Contraction

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
    batch_vars: list  # the batch loop variables the operand reads, in dims[2:] order

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


def tma_operand(g: Contraction, val: ir.Val, rows: list) -> TmaOperand | str:
    """The TMA plan of operand `val` (rows: its m or n loops), or why there is none."""
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
    aff = _affine(index, names)
    if aff is None:
        return "a non-affine index"
    off, strides = aff
    k, r = _flatten(g.k, strides), _flatten(rows, strides)
    if k is None or r is None:
        return "k or the rows do not walk one strided run"
    es = ld.dtype.itemsize
    if k[1] == 1:
        kmajor, dims, outer = True, [k[0], r[0]], [r[1]]
    elif r[1] == 1:
        kmajor, dims, outer = False, [r[0], k[0]], [k[1]]
    else:
        return "neither k nor the rows are unit-stride"
    bvars = [(v, e) for v, e in g.batch if strides[v] != 0]
    if len(bvars) > 3 or any(not e.is_const for _, e in bvars):
        return "more than three batch dimensions"
    dims += [e.value for _, e in bvars]
    outer += [strides[v] for v, _ in bvars]
    if any(s <= 0 or (s * es) % 16 for s in outer) or (off * es) % 16 or off < 0:
        return "a stride or offset that is not a multiple of 16 bytes"
    if any(isinstance(d, int) and d >= 2 ** 32 for d in dims) or any(s * es >= 2 ** 40 for s in outer):
        return "a dimension beyond the copy engine's range"
    return TmaOperand(buf, ld.dtype, kmajor, off, dims, outer, [v for v, _ in bvars])


def launch_spec(p: TmaOperand, param: int, box: list, raw: bool = False) -> dict:
    """The launch config's description of one tensor map (JSON: ints and strings). raw: float32
    copied as it is (3xTF32 splits it), where a plain float32 map has the copy engine round to TF32."""
    return {"param": param, "dtype": p.dtype.name + ("_raw" if raw and p.dtype == dt.float32 else ""), "offset": p.offset,
            "dims": [d if isinstance(d, int) else sm.to_json(d) for d in p.dims],  # (a symbolic M: JSON)
            "strides": list(p.strides), "box": list(box)}
