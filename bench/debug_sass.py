"""Variants of the int32 column-max kernel that misbehaves on the H100 (see debug_max.py): run each,
and dump the SASS of the generated one (cuobjdump) for inspection."""
import subprocess
import sys

import numpy as np

sys.path.insert(0, ".")
from cuda.core import LaunchConfig, launch  # noqa: E402
from ember.backends import cuda as cb  # noqa: E402
from ember.codegen.cuda import PRELUDE  # noqa: E402

x = np.array([[-86, -38, -72, -83, 0, -83, -87], [19, -90, -18, -86, -57, 16, -20], [-71, -83, -96, 48, 44, 39, 98],
              [-97, -65, 96, 80, 77, -30, 72], [-54, -3, 9, 45, -66, 73, -25]], np.int32)
BODY = """
extern "C" __global__ void __launch_bounds__(128) kern(int* __restrict__ b0, const int* __restrict__ b1) {
  for (int row_ = (int)blockIdx.x * 128 + threadIdx.x; row_ < 7; row_ += (int)gridDim.x * 128) {
    const int o0 = row_;
    int acc0 = INT_MIN;
    for (int r_ = 0; r_ < 5; r_ += 1) {
      const int r0_0 = r_;
      int v0 = (int)b1[(o0 + 7*r0_0)];
      int v1 = NEG;
      acc0 = MAXF;
    }
    int v2 = (acc0 * -1);
    b0[o0] = (int)(v2);
  }
}
"""
variants = {
    "generated": ("(-1 * v0)", "em_maxi(acc0, v1)"),
    "unary_minus": ("(-v0)", "em_maxi(acc0, v1)"),
    "ternary": ("(-1 * v0)", "(v1 > acc0 ? v1 : acc0)"),
    "max_builtin": ("(-1 * v0)", "max(acc0, v1)"),
    "no_restrict": ("(-1 * v0)", "em_maxi(acc0, v1)"),
    "unroll1": ("(-1 * v0)", "em_maxi(acc0, v1)"),
    "acc64": ("(-1 * v0)", "(int)em_maxi((long long)acc0, (long long)v1)"),
    "opaque": ("(-1 * v0)", "em_maxi(acc0, em_opaque(v1))"),
    "sub_from_zero": ("(0 - v0)", "em_maxi(acc0, v1)"),
}
EXTRA = "__device__ __forceinline__ int em_opaque(int v) { int r; asm volatile(\"mov.b32 %0, %1;\" : \"=r\"(r) : \"r\"(v)); return r; }\n"
dev = cb.device()
s = dev.create_stream()
for name, (neg, mx) in variants.items():
    body = BODY.replace("NEG", neg).replace("MAXF", mx)
    if name == "no_restrict":
        body = body.replace("__restrict__", "")
    if name == "unroll1":
        body = body.replace("for (int r_ = 0;", "#pragma unroll 1\n    for (int r_ = 0;")
    src = PRELUDE + EXTRA + body
    cub = cb.compile_cuda(src, cb.device_arch())
    k = cb.load_kernel(cub, "kern")
    inb, outb = dev.allocate(x.nbytes, stream=s), dev.allocate(28, stream=s)
    from cuda.bindings import driver
    driver.cuMemcpyHtoDAsync(int(inb.handle), x.ctypes.data, x.nbytes, int(s.handle))
    launch(s, LaunchConfig(grid=1, block=128), k, int(outb.handle), int(inb.handle))
    s.sync()
    o = np.empty(7, np.int32)
    driver.cuMemcpyDtoH(o.ctypes.data, int(outb.handle), 28)
    print(f"{name:12} {o.tolist()} {'OK' if np.array_equal(o, x.min(0)) else 'BAD'}")
    if name == "generated":
        open("/tmp/k.cubin", "wb").write(cub)
        sass = subprocess.run(["cuobjdump", "-sass", "/tmp/k.cubin"], capture_output=True, text=True).stdout
        print("\n".join(l for l in sass.splitlines() if "/*0" in l and ("IMNMX" in l or "LDG" in l or "IADD" in l
                                                                           or "VIMNMX" in l or "STG" in l)))
