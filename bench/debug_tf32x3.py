"""Debug the tf32x3 split path on the GPU: variants of the split helper on a K-major x @ W.T."""
import sys

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
import numpy as np  # noqa: E402

import ember as em  # noqa: E402
from ember import pipeline  # noqa: E402
from ember.codegen import cuda as cg  # noqa: E402
from ember.codegen import cuda_wgmma as cw  # noqa: E402

BASE = cw.WGMMA_HELPERS
i0 = BASE.index("__device__ __forceinline__ void em_split3_chunk")
i1 = BASE.index("__device__ __forceinline__ void em_wg_fence")
HEAD = """__device__ __forceinline__ void em_split3_chunk(em_u32 a, em_u32 lo_off) {
  float x0, x1, x2, x3;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(x0), "=f"(x1), "=f"(x2), "=f"(x3) : "r"(a) : "memory");
"""
VARIANTS = {
    "current": BASE[i0:i1],
    "lo_only": HEAD + """  em_st_shared_v4(a + lo_off, em_wg_tf32(x0 - __uint_as_float(em_wg_tf32(x0))), em_wg_tf32(x1 - __uint_as_float(em_wg_tf32(x1))),
                  em_wg_tf32(x2 - __uint_as_float(em_wg_tf32(x2))), em_wg_tf32(x3 - __uint_as_float(em_wg_tf32(x3))));
}
""",
    "mask": HEAD + """  const em_u32 h0 = __float_as_uint(x0) & 0xFFFFE000u, h1 = __float_as_uint(x1) & 0xFFFFE000u, h2 = __float_as_uint(x2) & 0xFFFFE000u, h3 = __float_as_uint(x3) & 0xFFFFE000u;
  em_st_shared_v4(a, h0, h1, h2, h3);
  em_st_shared_v4(a + lo_off, __float_as_uint(x0 - __uint_as_float(h0)), __float_as_uint(x1 - __uint_as_float(h1)), __float_as_uint(x2 - __uint_as_float(h2)), __float_as_uint(x3 - __uint_as_float(h3)));
}
""",
    "lo_one": HEAD + """  em_st_shared_v4(a + lo_off, 0x3f800000u, 0x3f800000u, 0x3f800000u, 0x3f800000u);
}
""",
    "hi_zero": HEAD + """  em_st_shared_v4(a, 0u, 0u, 0u, 0u);
  em_st_shared_v4(a + lo_off, 0u, 0u, 0u, 0u);
}
""",
}


def main():
    M, N, K = 256, 256, 256
    x, w = em.input("x", (M, K)), em.input("w", (N, K))
    y = x @ w.T
    target = pipeline.get_target("cuda")
    rng = np.random.default_rng(0)
    ins_r = {"x": rng.standard_normal((M, K)).astype(np.float32), "w": rng.standard_normal((N, K)).astype(np.float32)}
    ins_c = {"x": np.full((M, K), 1 + 2.0 ** -12, np.float32), "w": np.ones((N, K), np.float32)}
    for name, body in VARIANTS.items():
        cw.WGMMA_HELPERS = BASE[:i0] + body + BASE[i1:]
        cg._RENDERED.clear()
        for cfg in ({"mode": "wgmma", "BM": 128, "BN": 128, "stages": 3}, {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 3, "lag": 0},
                    {"mode": "wgmma", "BM": 64, "BN": 64, "stages": 4, "overlap": False, "lag": 3}):
            lowered = pipeline.lower([y.node], None, target)
            cfgs = [dict(cfg) if cg.contraction_of(cg.canonical(k)) else cg.default_config(k, target) for k, _ in lowered.kernels]
            prog = pipeline.build_program(lowered, target, None, "single", configs=cfgs)
            assert body in prog.source
            out_c = np.asarray(prog(**ins_c), np.float64)
            out_r = np.asarray(prog(**ins_r), np.float64)
            ref = ins_r["x"].astype(np.float64) @ ins_r["w"].astype(np.float64).T
            err = np.abs(out_r - ref).max() / np.abs(ref).max()
            print(f"{name:9s} {str({k: v for k, v in cfg.items() if k != 'mode'}):55s} const: {out_c.mean():.9f} "
                  f"(exact {K * (1 + 2.0 ** -12):.9f}, 1xTF32 {K:.1f})  random err {err:.2e}  kernels {[c['mode'] for c in cfgs]}", flush=True)


if __name__ == "__main__":
    main()
