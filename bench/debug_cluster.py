"""Debug: an int32 row max (x - max(x)) under row-cache schedules with and without clusters; prints,
per config, the max error and for wrong rows the computed max next to each cluster rank's partial."""
import sys

import numpy as np

sys.path.insert(0, ".")
import ember as em  # noqa: E402
from ember.codegen import cuda as cg  # noqa: E402
from ember.kernel.lower import lower  # noqa: E402
from ember.pipeline import build_program  # noqa: E402

for dtype in ("int32", "float32"):
    x = em.input("x", (67, 8192), dtype)
    y = x - x.max(-1, keepdim=True)
    L = lower([y.node])
    v = (np.random.default_rng(0).standard_normal((67, 8192)) * 3).astype(dtype)
    for cfg in ({"threads": 512, "cache": "smem"}, {"threads": 1024, "cache": "smem"},
                {"threads": 512, "cache": "smem", "cluster": 2}, {"threads": 256, "cache": "regs", "cluster": 2},
                {"threads": 128, "cache": "smem", "cluster": 4}, {"threads": 512, "cache": "smem", "unroll": 1},
                {"threads": 256, "cache": "regs"}, {"threads": 128, "cache": "smem", "mode": "warp"}):
        cfg = dict({"mode": "block", "vec": 8}, **cfg)
        fn = build_program(L, "cuda", None, "single", configs=[cfg])
        out = np.asarray(fn(x=v))
        ref = v - v.max(-1, keepdims=True)
        bad = np.nonzero(np.abs(out - ref).max(-1) > 0)[0]
        line = f"{dtype} {cfg}: wrong rows {len(bad)}"
        if len(bad):
            r = bad[0]
            got = (v[r] - out[r])[0]
            C = cfg.get("cluster", 1) if cfg["mode"] == "block" else 1
            parts = [v[r].reshape(-1, C * cfg["threads"], 4)[:, q * cfg["threads"]:(q + 1) * cfg["threads"]].max() for q in range(C)]
            line += f"; row {r}: max {got} vs true {v[r].max()}; per rank {parts}"
        print(line, flush=True)
    if dtype == "int32":
        print(cg.render_kernel(L.kernels[0][0], {"mode": "block", "threads": 512, "vec": 8, "cache": "smem", "cluster": 2})[0][-2500:])
