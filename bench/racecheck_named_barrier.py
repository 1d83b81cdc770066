"""Does compute-sanitizer's racecheck understand a named barrier over part of a block? A correct
kernel: 256 threads, the first 128 exchange values through shared memory across
`bar.sync 1, 128` (the megakernel's task barrier), the rest wait at `bar.sync 0` after them. Run
under racecheck: any hazard it reports here is the tool's, not the program's. A second kernel does
the same exchange across `__syncthreads()` as the control; a third takes the count from a register
loaded from shared memory, twice in a loop, as the megakernel's task barrier does; `mixed_tasks`
copies the megakernel's pattern that racecheck flagged (256- and 128-thread tasks in one 256-thread
worker, an 8-warp block reduction through one shared array, warp 0's divergent spin waits): written
in the seventeenth session, not yet run under racecheck.

    compute-sanitizer --tool racecheck python3 bench/racecheck_named_barrier.py"""
import numpy as np
from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch

SRC = r"""
extern "C" __global__ void named(float* out) {
  __shared__ float s[128];
  if (threadIdx.x < 128) {
    s[threadIdx.x] = (float)threadIdx.x;
    asm volatile("bar.sync 1, 128;" ::: "memory");
    out[threadIdx.x] = s[127 - threadIdx.x];
  }
  __syncthreads();
}
extern "C" __global__ void named_reg(float* out) {
  /* as the megakernel does it: the count in a register, read from shared memory written before a full barrier */
  __shared__ float s[128];
  __shared__ unsigned n;
  for (int rep = 0; rep < 2; ++rep) {
    if (threadIdx.x == 0) n = 128;
    __syncthreads();
    if (threadIdx.x < 128) {
      s[threadIdx.x] = (float)(threadIdx.x + rep);
      asm volatile("bar.sync 1, %0;" :: "r"(n) : "memory");
      out[threadIdx.x] = s[127 - threadIdx.x] - rep;
      asm volatile("bar.sync 1, %0;" :: "r"(n) : "memory");
    }
    __syncthreads();
  }
}
extern "C" __global__ void named_mixed(float* out) {
  /* barrier 1 reused with different counts (128, 256, 64 threads), as successive tasks of different sizes do */
  __shared__ float s[256];
  __shared__ unsigned n;
  const unsigned counts[3] = {128u, 256u, 64u};
  for (int rep = 0; rep < 3; ++rep) {
    if (threadIdx.x == 0) n = counts[rep];
    __syncthreads();
    const unsigned m = n;
    if (threadIdx.x < m) {
      s[threadIdx.x] = (float)(threadIdx.x + rep);
      asm volatile("bar.sync 1, %0;" :: "r"(m) : "memory");
      out[threadIdx.x] = s[m - 1 - threadIdx.x] - rep;
      asm volatile("bar.sync 1, %0;" :: "r"(m) : "memory");
    }
    __syncthreads();
  }
}
__shared__ float s_file[256];
__shared__ unsigned n_file;
static __device__ __noinline__ void task(float* out, int rep) {
  /* the exchange inside a noinline function, on file-scope shared memory, as the megakernel's tasks */
  s_file[threadIdx.x] = (float)(threadIdx.x + rep);
  asm volatile("bar.sync 1, %0;" :: "r"(n_file) : "memory");
  out[threadIdx.x] = s_file[n_file - 1 - threadIdx.x] - rep;
  asm volatile("bar.sync 1, %0;" :: "r"(n_file) : "memory");
}
extern "C" __global__ void named_call(float* out) {
  const unsigned counts[3] = {128u, 256u, 64u};
  for (int rep = 0; rep < 3; ++rep) {
    if (threadIdx.x == 0) n_file = counts[rep];
    __syncthreads();
    if (threadIdx.x < n_file) task(out, rep);
    __syncthreads();
  }
}
/* the megakernel's pattern (docs/megakernel.md): a 256-thread worker runs tasks of 256 threads with an
   8-warp block reduction through a shared array, and tasks of 128 threads (the others waiting at the
   worker's barrier); warp 0 spins on a flag, diverged, before each task, then reconverges */
__shared__ float red_[8];
__shared__ unsigned nt_;
__device__ __forceinline__ void tsync() { asm volatile("barrier.sync 1, %0;" :: "r"(nt_) : "memory"); }
static __device__ __noinline__ float block_sum(float v, int nw) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
  tsync();
  if (l == 0) red_[w] = v;
  tsync();
  v = (l < nw) ? red_[l] : 0.f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
extern "C" __global__ void mixed_tasks(float* out, const unsigned* flag) {
  for (int t = 0; t < 6; ++t) {
    const unsigned n = (t % 3 == 1) ? 128u : 256u;
    if (threadIdx.x < 32) {
      for (int q = threadIdx.x; q < 4; q += 32)  /* lanes wait on different words (divergent) */
        while (((volatile const unsigned*)flag)[q] != 1u) {}
      if (threadIdx.x == 0) nt_ = n;
      __syncwarp();
    }
    __syncthreads();
    if (threadIdx.x < n) {
      const float s = block_sum((float)(threadIdx.x + t), (int)(n / 32));
      if (threadIdx.x == 0) out[t] = s;
      tsync();
    }
    __syncthreads();
  }
}
extern "C" __global__ void full(float* out) {
  __shared__ float s[256];
  s[threadIdx.x] = (float)threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[255 - threadIdx.x];
}
"""


def main():
    dev = Device()
    dev.set_current()
    st = dev.create_stream()
    mod = Program(SRC, code_type="c++", options=ProgramOptions(arch=f"sm_{dev.arch}")).compile("cubin")
    buf = dev.allocate(256 * 4, stream=st)
    flag = dev.allocate(16, stream=st)
    from cuda.bindings import driver
    driver.cuMemsetD32(int(flag.handle), 1, 4)
    for name in ("named", "named_reg", "named_mixed", "named_call", "full", "mixed_tasks"):
        args = (int(buf.handle), int(flag.handle)) if name == "mixed_tasks" else (int(buf.handle),)
        launch(st, LaunchConfig(grid=1, block=256), mod.get_kernel(name), *args)
        st.sync()
        host = np.empty(256, np.float32)
        from cuda.bindings import driver
        driver.cuMemcpyDtoH(host.ctypes.data, int(buf.handle), host.nbytes)
        if name == "mixed_tasks":  # task t sums threadIdx.x + t over its n threads
            want = np.array([sum(range(n)) + t * n for t, n in enumerate((256, 128, 256, 256, 128, 256))], np.float32)
            print(name, "correct" if np.array_equal(host[:6], want) else f"WRONG {host[:6]}", flush=True)
            continue
        n = {"full": 256, "named_mixed": 64, "named_call": 64}.get(name, 128)
        print(name, "correct" if np.array_equal(host[:n], np.arange(n - 1, -1, -1, dtype=np.float32)) else "WRONG", flush=True)


if __name__ == "__main__":
    main()
