"""Float32 contraction precision: float32 accuracy unless the user asks for TF32.

By default every float32 contraction (matmul, conv, einsum) keeps float32 accuracy: on tensor cores
the CUDA backend multiplies in three TF32 passes ("3xTF32", see codegen/cuda_mma.py). A user who
accepts TF32's 10-bit mantissa in the products, as PyTorch does by default for convolutions
(`torch.backends.cudnn.allow_tf32`) and on request for matmuls
(`torch.backends.cuda.matmul.allow_tf32`), says so while building the graph:

    with em.allow_tf32("conv"):          # or ("matmul", "conv"), or no argument for both
        y = em.conv2d(x, w)

The contractions built inside are marked in the graph (their SUM carries `TF32Axes`, part of the
structural hash, so a cache never hands a TF32 kernel to a float32 request) and run in one TF32 pass.
Verification then uses the TF32 tolerance below instead of float32's. A mark can only be dropped by
a rewrite, never added: dropping it computes more accurately, not less.
"""
from __future__ import annotations

import contextlib
import contextvars

KINDS = ("matmul", "conv")
# max|out-ref| <= tol + tol*max|ref| for outputs of TF32 contractions: float16's bound, as TF32 has
# float16's 10-bit mantissa. 1e-3 was too tight: a GroupNorm after a TF32 conv measured 2.2e-3 on
# outputs of magnitude 1 on the H100, and cuDNN's own TF32 result 2.1e-3
# (bench/results/kernelbench-cuda-torch-2026-11-21f-tol1e-3.json, problem 12)
TF32_TOL = 1e-2

_allowed: contextvars.ContextVar = contextvars.ContextVar("ember_tf32", default=frozenset())


@contextlib.contextmanager
def allow_tf32(*kinds: str):
    """Contractions of the given kinds ("matmul", "conv"; none given: both) built inside this block
    may round their float32 operands to TF32."""
    kinds = kinds or KINDS
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ValueError(f"allow_tf32: unknown kind {bad[0]!r}; kinds are {KINDS}")
    token = _allowed.set(frozenset(kinds))
    try:
        yield
    finally:
        _allowed.reset(token)


def tf32_allowed(kind: str) -> bool:
    return kind in _allowed.get()
