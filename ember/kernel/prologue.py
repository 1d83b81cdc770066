"""GEMM operands computed by a cheap prologue, materialised where the target's tensor cores want
their operands staged by the copy engine.

Rule 4 (kernel/builder.py) inlines a producer of at most RECOMPUTE_LIMIT operations into the
contraction that reads it: a LayerNorm's `x̂ · γ + β` (cast to bf16) becomes the prologue of the
q/k/v and FFN GEMMs. On Hopper an operand computed per element cannot be copied by TMA, so such a
GEMM runs in the `mma.sync` mode (a 12-layer BERT-base in bf16: its qkv and FFN GEMMs at 175-270 us
each, 50-60 TFLOP/s) where a plain load would run in `wgmma`. Written once (a bf16 4096 x 768
activation is 6 MB, a few microseconds) and read by TMA, the GEMM runs several times faster. The
lowering forces these operands into buffers when the target has `wgmma` (kernel/lower.py): large
static GEMMs only (a decode step's rows and a prompt's symbolic length keep their prologues: a
GEMV reads its operand from L2 either way). It runs after the partition, on
the contractions that are kernels of their own, and the partition is redone with them forced.

On by default since it ran on the H100 (2026-11-26, bench/results/gpu-session19-2026-11-26/): the
CUDA suite passes with it; a 12-layer BERT-base bf16 (batch 32 x 128) 6.90 -> 5.18 ms (172 -> 144
kernels; 0.57x -> 0.67x torch.compile); the gpt6x512 training step unchanged (26.7 / 26.9 ms).
`EMBER_STAGE_PROLOGUES=0` turns it off."""
from __future__ import annotations

import os

from .. import graph as g
from .contraction import broadcast_product, is_gemm_shaped, product_operands

MIN_OPERAND = 1 << 18  # elements an operand must hold (a decode step's rows are far below)


def staged_operands(roots: list, target, M: set, streamed=frozenset()) -> frozenset:
    """Elementwise producers inlined (not in the partition M) as an operand of a large GEMM-shaped
    contraction outside the streamed attention kernels (`streamed`: their nodes; P stays on chip),
    on a target whose tensor cores include `wgmma`."""
    if os.environ.get("EMBER_STAGE_PROLOGUES", "1") != "1":
        return frozenset()
    if target is None or "wgmma" not in getattr(target, "tensor_cores", ()):
        return frozenset()
    out = set()
    for n in g.toposort(roots):
        # an explicit copy (a same-type cast: only kernel/layout.py makes one) exists for a GEMM to
        # read it through TMA, whatever became of that GEMM: split over k, its product is a view of
        # the chunks and no longer reads as GEMM-shaped, and the copy was inlined back into it
        if n.op == g.CAST and n.dtype == n.srcs[0].dtype and n not in M and n not in streamed and n.numel.is_const:
            out.add(n)
        if n in streamed or not n.numel.is_const:
            continue
        ops = product_operands(n) if is_gemm_shaped(n) else _split_gemm_operands(n)
        for op in ops or ():
            while op.op == g.VIEW:
                op = op.srcs[0]
            base = op
            while base.op == g.CAST:
                base = base.srcs[0]
            # (the operand as the GEMM reads it, its cast included: a bf16 buffer is what TMA copies)
            # (a cast of a reduction: a split-K projection's float32 sum read as bf16 by attention's
            # PV product is stored as bf16 by the sum's kernel)
            # (or an explicit copy, a same-type cast: a stem conv's input padded to 8 channels and
            # stored channels-last, kernel/layout.py)
            computed = base.op in g.ELEMENTWISE or (base.op in g.REDUCE and op is not base) or \
                (op.op == g.CAST and op.dtype == op.srcs[0].dtype)
            copy = op.op == g.CAST and op.dtype == op.srcs[0].dtype  # placed by kernel/layout.py: always stored
            if op not in M and computed and op.numel.is_const and (copy or op.numel.value >= MIN_OPERAND):
                out.add(op)
    return frozenset(out)


SPLIT = os.environ.get("EMBER_STAGE_SPLIT_PROLOGUES", "1")


def _split_gemm_operands(n: g.Node) -> tuple | None:
    """The operands of a GEMM split over k (kernel/split.py: the sum reads its product through a view
    cutting k into parts, so it no longer reads as GEMM-shaped): a product of two operands each
    broadcast along some axis of the product, along different axes. On by default
    (EMBER_STAGE_SPLIT_PROLOGUES=0: off): an MLP's last layer, 1024 x 1000 over 4096 split in parts,
    had gathered its ReLU'd input a float at a time in `mma`; the project's 01_mlp 1.46 -> 1.59x eager
    on the H100 (bench/results/gpu-session36-2026-11-28/b/)."""
    if SPLIT != "1" or n.op != g.SUM or n.srcs[0].op != g.VIEW:
        return None
    x = n.srcs[0].srcs[0]
    while x.op == g.CAST:
        x = x.srcs[0]
    if x.op != g.MUL or x.srcs[0] is x.srcs[1] or not broadcast_product(x):
        return None
    return x.srcs[0], x.srcs[1]
