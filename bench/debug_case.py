"""Debug one op case on CUDA: run it through the program (graph replay), through direct launches,
kernel by kernel, and print every output next to the reference. Usage: python bench/debug_case.py NAME"""
import sys

import numpy as np

sys.path.insert(0, ".")
import ember as em  # noqa: E402
from tests import op_cases  # noqa: E402

name = sys.argv[1]
case = [c for c in op_cases.CASES if c.name == name][0]
ins = op_cases.make_inputs(case, 0)
ts = {n: em.input(n, s.shape, s.dtype) for n, s in case.inputs.items()}
ys = case.ember(**ts)
ys = tuple(ys) if isinstance(ys, (tuple, list)) else (ys,)
fn = em.compile(ys, device="cuda")
print(fn.source[-3000:])
refs = em.reference(ys, **ins)
print("graph:", [o.tolist() for o in fn(**ins)])
print("ref:  ", [r.tolist() for r in refs])
arrays, env = fn._bind(ins)
ex = fn.executor
ptrs = ex.pointers(fn, arrays, env, {})
from cuda.bindings import driver  # noqa: E402

s = int(ex.stream.handle)
for nm in fn.inputs:
    a = np.ascontiguousarray(arrays[nm])
    driver.cuMemcpyHtoDAsync(ptrs[f"in_{nm}"], a.ctypes.data, a.nbytes, s)
ex.launch_direct(fn, ptrs, env)
ex.stream.sync()
for nm in fn.outputs:
    b = fn.buffers[nm]
    o = np.empty(fn.shape_of(nm, env), b.dtype.np)
    driver.cuMemcpyDtoH(o.ctypes.data, ptrs[nm], o.nbytes)
    print("direct", nm, o.tolist())
back = np.empty_like(arrays[fn.inputs[0]])
driver.cuMemcpyDtoH(back.ctypes.data, ptrs[f"in_{fn.inputs[0]}"], back.nbytes)
print("input round trip equal:", np.array_equal(back, arrays[fn.inputs[0]]))
