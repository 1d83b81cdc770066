"""Tensor maps for the wgmma kernels' TMA copies (codegen/cuda_wgmma.py), built at launch time.

A kernel in the ``wgmma`` mode takes one extra parameter: the device address of its tensor maps
(128 bytes each, a and b). A map holds the operand's global address, so it is encoded
(`cuTensorMapEncodeTiled`) once per set of buffer pointers, uploaded to device memory, and kept as
long as a captured CUDA graph may replay it. The kernel fences the map in before its first copy
(`fence.proxy.tensormap::generic.acquire`), as required for maps in global memory.
"""
from __future__ import annotations

import ctypes

import numpy as np

SWIZZLE = {128: "CU_TENSOR_MAP_SWIZZLE_128B", "128B": "CU_TENSOR_MAP_SWIZZLE_128B", "64B": "CU_TENSOR_MAP_SWIZZLE_64B",
           "32B": "CU_TENSOR_MAP_SWIZZLE_32B", "none": "CU_TENSOR_MAP_SWIZZLE_NONE"}
TMA_DTYPE = {"bfloat16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", "float16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
             # float32 operands are multiplied in TF32: the copy engine rounds them to nearest on
             # the way in (the tensor core itself would truncate; research/hopper-tensor-cores.md §8)
             "float32": "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32",
             # float32 at float32 accuracy (3xTF32): copied raw, the producer splits it into hi and lo
             "float32_raw": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"}
ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4, "float32_raw": 4}
MAX_MAPS = 256  # pointer sets whose maps are kept (beyond: dropped with the graphs that use them)


class TmaError(ValueError):
    """An operand the copy engine cannot address (a device pointer that is not 16-byte aligned)."""


def dims_of(spec: dict, env: dict) -> list:
    """The map's extents, a symbolic one (a prompt's length) evaluated in `env` (the run's dims)."""
    from .. import symbolic as sm
    return [d if isinstance(d, int) else int(sm.evaluate(sm.from_json(d), env)) for d in spec["dims"]]


def encode(spec: dict, base_ptr: int, env: dict | None = None) -> bytes:
    """The 128 bytes of the tensor map `spec` (a launch config's `tma` entry) over buffer `base_ptr`."""
    from cuda.bindings import driver
    es = ITEMSIZE[spec["dtype"]]
    dims = dims_of(spec, env or {})
    addr = base_ptr + spec["offset"] * es
    if addr % 16:
        raise TmaError(f"a tensor-core operand's device address {addr:#x} is not 16-byte aligned "
                       f"(pass tensors whose data starts on a 16-byte boundary, e.g. .clone())")
    if "im2col" in spec:  # a conv's input walked by the copy engine (codegen/cuda_wgmma_im2col.py)
        return _encode_im2col(spec, addr, dims, es)
    err, tmap = driver.cuTensorMapEncodeTiled(
        getattr(driver.CUtensorMapDataType, TMA_DTYPE[spec["dtype"]]), len(dims), addr,
        [driver.cuuint64_t(max(int(d), 1)) for d in dims], [driver.cuuint64_t(int(s) * es) for s in spec["strides"]],
        [driver.cuuint32_t(int(b)) for b in spec["box"]], [driver.cuuint32_t(1)] * len(spec["dims"]),
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, getattr(driver.CUtensorMapSwizzle, SWIZZLE[128]),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if int(err) != 0:
        raise TmaError(f"cuTensorMapEncodeTiled failed ({err}) for {spec}")
    return ctypes.string_at(tmap.getPtr(), 128)


def _encode_im2col(spec: dict, addr: int, dims: list, es: int) -> bytes:
    from cuda.bindings import driver
    ic = spec["im2col"]
    err, tmap = driver.cuTensorMapEncodeIm2col(
        getattr(driver.CUtensorMapDataType, TMA_DTYPE[spec["dtype"]]), len(dims), addr,
        [driver.cuuint64_t(max(int(d), 1)) for d in dims], [driver.cuuint64_t(int(s) * es) for s in spec["strides"]],
        [int(x) for x in ic["lower"]], [int(x) for x in ic["upper"]], int(ic["channels"]), int(ic["pixels"]),
        [driver.cuuint32_t(int(s)) for s in ic["estrides"]],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(driver.CUtensorMapSwizzle, SWIZZLE[ic.get("swizzle", 128)]),  # (narrow pixels: by their width)
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if int(err) != 0:
        raise TmaError(f"cuTensorMapEncodeIm2col failed ({err}) for {spec}")
    return ctypes.string_at(tmap.getPtr(), 128)


class TensorMaps:
    """The device copies of the maps, per (launch, operand pointers); `upload` puts bytes on the device."""

    def __init__(self, upload):
        self.upload = upload
        self.maps: dict = {}
        self.retired: list = []  # dropped maps, freed at the next drop (a replay may still read them)

    def pointer(self, index: int, specs: list, ptrs: list, env: dict | None = None) -> int:
        env = env or {}
        key = (index, tuple(ptrs[s["param"]] for s in specs), tuple(tuple(dims_of(s, env)) for s in specs))
        buf = self.maps.get(key)
        if buf is None:
            if len(self.maps) >= MAX_MAPS:
                self.retired = list(self.maps.values())
                self.maps.clear()
            raw = b"".join(encode(s, ptrs[s["param"]], env) for s in specs)
            buf = self.maps[key] = self.upload(np.frombuffer(raw, np.uint8))
        return int(buf.handle)

    @property
    def full(self) -> bool:
        return len(self.maps) >= MAX_MAPS
