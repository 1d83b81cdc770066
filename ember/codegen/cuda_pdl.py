"""Programmatic dependent launch (sm_90): a kernel's blocks start while the kernel before it drains.

In a CUDA graph every kernel normally starts only after the previous one has finished and the
launch machinery has run: ~2-5 us of an idle GPU per kernel, which a decode step of ~170 small
kernels pays ~170 times. With programmatic dependent launch the graph's kernel→kernel edges are
*programmatic* (backends/cuda_graph.py): the next kernel is launched as soon as every block of the
current one has executed `griddepcontrol.launch_dependents`, and its blocks wait in
`griddepcontrol.wait` until the current kernel has completed and its writes are visible.

Every kernel Ember renders for sm_90 begins with both instructions, before anything else runs:

* trigger first: the next kernel may launch once all of this kernel's blocks have *started* (so
  its waiting blocks never take a slot this kernel still needs: it has none left to place);
* wait before any load or store: nothing is read before the kernels before it have written it,
  nothing is written that they may still read, and no block exits early before the wait, so a
  kernel's completion still implies its predecessors' (the chain stays transitive).

**A late trigger** (cfg `pdl_late`, set by the CUDA Target's program pass `early_keys`,
backends/cuda_target.py): the kernel triggers only *after* its wait (or, `pdl_late` 2 in decode
attention, after its key loop). Its successor's blocks then start only once this kernel's have all
passed their wait — every kernel before this one has completed and its writes are visible — so the
successor may read, before its own wait, any buffer this kernel does not write: decode attention
fills its first key tiles from the cache while the kernel before it still runs (knob `early_keys`,
codegen/cuda_flash_decode.py), instead of paying the cache's first-load latency after the wait.

Without the launch attribute / programmatic edge both instructions are no-ops, so the same cubin
serves a direct launch, a plain graph and a PDL graph.

While it waits, a block may already pull the program's *constants* into L2 (weights: never written
by any kernel, so reading them early is safe): `cp.async.bulk.prefetch.L2` of the first bytes of
each constant operand the kernel streams (read at affine indices, not gathered), split over the
first blocks of the grid, meant to keep HBM busy across the launch gap. The byte budget is a
schedule knob (`prefetch`, set per program by the CUDA Target from which operands are constants;
`EMBER_L2_PREFETCH` bytes). It is off by default: on a Llama-1B decode step it measured slower (8 MiB
+2%, 32 MiB +7%; bench/results/pdl-h100-2026-11-26a.json)."""
from __future__ import annotations

from ..kernel import ir

PDL_PRELUDE = r"""
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define EM_GRID_DEPENDENCY() asm volatile("griddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;" ::: "memory")
#define EM_PDL_TRIGGER() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#define EM_PDL_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#define EM_GRID_DEPENDENCY_LATE() asm volatile("griddepcontrol.wait;\n\tgriddepcontrol.launch_dependents;" ::: "memory")
__device__ __forceinline__ void em_prefetch_l2_span(const void* p, unsigned long long nbytes) {
  /* warp 0's lanes each ask L2 for a 16-byte-aligned share of [p, p + nbytes) (this block's own rows) */
  const unsigned long long a = (unsigned long long)p;
  if ((threadIdx.x >> 5) != 0 || (a & 15ull) != 0ull) return;
  nbytes &= ~15ull;
  const unsigned long long share = ((nbytes + 31) / 32 + 15ull) & ~15ull, off = (threadIdx.x & 31) * share;
  if (off >= nbytes) return;
  const unsigned long long n = nbytes - off < share ? nbytes - off : share;
  asm volatile("{\n\t.reg .u64 g;\n\tcvta.to.global.u64 g, %0;\n\tcp.async.bulk.prefetch.L2.global [g], %1;\n\t}"
               :: "l"(a + off), "r"((unsigned)n) : "memory");
}
__device__ __forceinline__ void em_prefetch_l2(const void* p, unsigned long long nbytes) {
  /* the first blocks each prefetch one 16-byte-aligned share of [p, p + nbytes) into L2 */
  const unsigned long long a = (unsigned long long)p;
  if (threadIdx.x != 0 || (a & 15ull) != 0ull) return;
  const unsigned nb = gridDim.x < 128u ? gridDim.x : 128u;
  if (blockIdx.x >= nb) return;
  nbytes &= ~15ull;
  const unsigned long long share = ((nbytes + nb - 1) / nb + 15ull) & ~15ull, off = blockIdx.x * share;
  if (off >= nbytes) return;
  const unsigned long long n = nbytes - off < share ? nbytes - off : share;
  asm volatile("{\n\t.reg .u64 g;\n\tcvta.to.global.u64 g, %0;\n\tcp.async.bulk.prefetch.L2.global [g], %1;\n\t}"
               :: "l"(a + off), "r"((unsigned)n) : "memory");
}
#else
#define EM_GRID_DEPENDENCY()
#define EM_PDL_TRIGGER()
#define EM_PDL_WAIT()
#define EM_GRID_DEPENDENCY_LATE()
__device__ __forceinline__ void em_prefetch_l2_span(const void*, unsigned long long) {}
__device__ __forceinline__ void em_prefetch_l2(const void*, unsigned long long) {}
#endif
"""

# modes whose operands are read straight from global memory (the tensor-core modes stage theirs
# through their own TMA / cp.async pipelines)
PREFETCH_MODES = ("elementwise", "thread", "warp", "block", "cols")


def has_pdl(target) -> bool:
    """Whether kernels for `target` can take part in programmatic dependent launch (sm_90+)."""
    return target is None or (target.compute_capability or (0, 0)) >= (9, 0)


def streamed_constants(k: ir.Kernel, constants: set) -> list:
    """(name, bytes) of the kernel's input buffers that are program constants read only at affine
    indices (streamed, not gathered: an embedding table read at token ids is not worth a prefetch)."""
    gathered = {x.args[0] for x in ir.loads_of(k) if isinstance(x.args[1], ir.Val)}
    out = []
    for b in k.buffers:
        if b.role == "in" and b.name in constants and b.name not in gathered:
            if b.size.is_const:
                out.append((b.name, int(b.size) * b.dtype.itemsize))
    return out


def emit_grid_dependency(w, cfg: dict, wait: bool = True) -> None:
    """The kernel body's first lines: the constants' L2 prefetch (cfg `prefetch`: [[param, bytes]]),
    then the PDL trigger and wait. `wait=False`: the trigger only — the renderer emits the wait
    itself (`EM_PDL_WAIT()`) after the L2 prefetches it can compute from the block's indices alone
    (decode attention's own keys, knob `kv_prefetch`): until the wait it may read nothing the kernels
    before it write (the dims array is the host's), and no block may exit before it."""
    for name, nbytes in cfg.get("prefetch", ()):
        w.emit(1, f"em_prefetch_l2({name}, {int(nbytes)}ull);")
    if wait:
        w.emit(1, "EM_GRID_DEPENDENCY_LATE();" if cfg.get("pdl_late") else "EM_GRID_DEPENDENCY();")
    elif not cfg.get("pdl_late"):
        w.emit(1, "EM_PDL_TRIGGER();")


def wait_line(cfg: dict, trigger_here: bool = True) -> str:
    """The grid-dependency wait a renderer places itself (emit_grid_dependency's `wait=False`), with
    the trigger after it where cfg `pdl_late` asks (and `trigger_here`: not placed later still)."""
    return "EM_PDL_WAIT(); EM_PDL_TRIGGER();" if cfg.get("pdl_late") and trigger_here else "EM_PDL_WAIT();"
