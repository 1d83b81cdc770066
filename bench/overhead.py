"""Per-call host overhead of compiled programs on CUDA (not a test): wall time per call of small
programs from PyTorch (em.from_torch) and from Ember tensors, against PyTorch eager, and a cProfile
of the Ember call path. Usage: python bench/overhead.py [--out FILE]"""
import argparse
import cProfile
import io
import json
import pstats
import time

import ember as em
import torch


def wall_us(fn, n=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    a = ap.parse_args()
    torch.manual_seed(0)
    x = torch.randn(1024, 1024, device="cuda")
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "rows": []}

    class Act(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) * 2 + 1

    class Norm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = torch.nn.LayerNorm(1024)

        def forward(self, x):
            return self.ln(x).relu()

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = torch.nn.Linear(1024, 256), torch.nn.Linear(256, 10)

        def forward(self, x):
            return self.l2(self.l1(x).relu())

    for name, mod in (("relu*2+1", Act()), ("layernorm+relu", Norm()), ("mlp", MLP())):
        mod = mod.cuda().eval()
        with torch.no_grad():
            fn = em.from_torch(mod, (x,), device="cuda")
            row = {"case": name, "eager_us": wall_us(lambda: mod(x)), "ember_us": wall_us(lambda: fn(x)),
                   "kernels": len(fn.program.launches)}
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                mod(x)
            row["torch_graph_us"] = wall_us(g.replay)
            row["ember_gpu_us"] = fn.program.benchmark(x=x)
            prog = fn.program
            row["program_call_us"] = wall_us(lambda: prog(x=x))
            kept = []
            row["ember_kept_outputs_us"] = wall_us(lambda: kept.append(fn(x)) or (len(kept) > 64 and kept.clear()), 500)
        print(json.dumps(row))
        res["rows"].append(row)
        if name == "relu*2+1":
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(2000):
                fn(x)
            pr.disable()
            s = io.StringIO()
            pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
            res["profile"] = s.getvalue()
            print(s.getvalue())
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
