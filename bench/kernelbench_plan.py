"""Plan a KernelBench directory for a GPU target without a GPU: import every problem and compile it
for the target offline (NVRTC), recording what would fail and what each plan looks like.

    python bench/kernelbench_plan.py third_party/KernelBench --target h100 --out /tmp/plan.json [--level 1]

Per problem: status (`planned`, `unsupported`, `import_error`, `compile_error`, `too_big`, `timeout`),
import and compile seconds, the number of kernels and the kernels' kinds (`wgmma`, `mma`, GEMV, ...
as the launch configs name them). It runs nothing on a device, so it finds the frontend's and the
lowering's failures before device time is spent; correctness and speed are `bench/kernelbench.py`'s.
Problems whose inputs or weights exceed `--max-gb` on the host are not planned (status `too_big`).
"""
from __future__ import annotations

import argparse
import collections
import copy
import json
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import torch  # noqa: E402
from kernelbench import _short, discover, load  # noqa: E402
from ember.frontends import pytorch as fe  # noqa: E402


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def input_bytes(mod) -> int:
    """bytes of one input set, measured on the meta device (nothing allocated)."""
    with torch.device("meta"):
        xs = mod.get_inputs()
    return sum(x.numel() * x.element_size() for x in xs if isinstance(x, torch.Tensor))


def kernel_kinds(program) -> dict:
    kinds: collections.Counter = collections.Counter()
    for launch in program.launches:
        cfg = getattr(launch, "config", None) or {}
        kinds[str(cfg.get("mode") or "other")] += 1
    return dict(kinds)


def plan_problem(prob: dict, args) -> dict:
    rec = {"name": prob["name"], "level": prob["level"], "status": "?"}
    try:
        mod, _ = load(prob["path"], 1.0)
        nbytes = input_bytes(mod)
        rec["input_mb"] = round(nbytes / 2 ** 20, 1)
        if nbytes > args.max_gb * 2 ** 30:
            rec["status"] = "too_big"
            return rec
        torch.manual_seed(42)
        model = mod.Model(*mod.get_init_inputs())
        wbytes = sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
        rec["weights_mb"] = round(wbytes / 2 ** 20, 1)
        if wbytes > args.max_gb * 2 ** 30:  # (the export copies them: a 6 GB MLP does not fit 24 GB)
            rec["status"] = "too_big"
            return rec
        torch.manual_seed(1)
        xs = mod.get_inputs()
    except Exception as e:  # noqa: BLE001
        rec.update(status="load_error", error=f"{type(e).__name__}: {_short(e)}")
        return rec
    try:
        t0 = time.perf_counter()
        with torch.no_grad():
            graph = fe.import_graph(fe.export(copy.deepcopy(model), tuple(xs)), precision=args.ember_precision)
        rec["import_s"] = round(time.perf_counter() - t0, 2)
    except fe.UnsupportedOpError as e:
        rec.update(status="unsupported", error=_short(e))
        return rec
    except _Timeout:
        raise
    except Exception as e:  # noqa: BLE001
        if "_Timeout" in str(e):  # (raised inside torch's decomposition, which wraps it)
            raise _Timeout() from e
        rec.update(status="import_error", error=f"{type(e).__name__}: {_short(e)}")
        return rec
    try:
        t0 = time.perf_counter()
        fn = fe.TorchFunction(model, graph, args.target, "none")
        rec["compile_s"] = round(time.perf_counter() - t0, 2)
        if fn.program is not None:
            rec["kernels"] = len(fn.program.launches)
            rec["kinds"] = kernel_kinds(fn.program)
        rec["status"] = "planned"
    except _Timeout:
        raise
    except Exception as e:  # noqa: BLE001
        rec.update(status="compile_error", error=f"{type(e).__name__}: {_short(e)}")
    return rec


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("path")
    p.add_argument("--target", default="h100")
    p.add_argument("--level", type=int, default=None)
    p.add_argument("--only", default=None)
    p.add_argument("--ember-precision", default="float32", choices=list(fe.PRECISIONS))
    p.add_argument("--max-gb", type=float, default=2.0)
    p.add_argument("--timeout", type=int, default=300, help="seconds per problem")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    probs = [q for q in discover(args.path, args.level) if args.only is None or args.only in q["name"]]
    recs = []
    if args.out and os.path.exists(args.out):
        with open(args.out) as f:
            recs = json.load(f)["problems"]
    done = {(r["level"], r["name"]) for r in recs}
    signal.signal(signal.SIGALRM, _alarm)
    for prob in probs:
        if (prob["level"], prob["name"]) in done:
            continue
        t0 = time.perf_counter()
        signal.alarm(args.timeout)
        try:
            rec = plan_problem(prob, args)
        except _Timeout:
            rec = {"name": prob["name"], "level": prob["level"], "status": "timeout"}
        finally:
            signal.alarm(0)
        rec["wall_s"] = round(time.perf_counter() - t0, 1)
        recs.append(rec)
        print(f"L{rec['level']} {rec['name'][:48]:48s} {rec['status']:13s} {rec.get('kernels', ''):>4} "
              f"{rec['wall_s']:6.1f}s {rec.get('kinds', '')} {rec.get('error', '')[:160]}", flush=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"target": args.target, "problems": recs}, f, indent=1)
    counts = collections.Counter(r["status"] for r in recs)
    print(dict(counts))


if __name__ == "__main__":
    main()
