"""The `ember` command line."""
from __future__ import annotations

import argparse
import os
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="ember", description="Ember: a search-based deep-learning compiler")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="compile and check an MLP and a small decoder on the default device")
    d.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if present, else cpu)")
    d.add_argument("--search", default="none", choices=["none", "fast", "full"])
    b = sub.add_parser("bench", help="run a benchmark suite (see bench/)")
    b.add_argument("suite", help="cpu | gpu | kernelbench PATH")
    b.add_argument("rest", nargs=argparse.REMAINDER)
    i = sub.add_parser("inspect", help="print a saved graph or program")
    i.add_argument("path")
    c = sub.add_parser("compile", help="compile a saved graph (em.save_graph) into a program file")
    c.add_argument("graph", help="a graph JSON written by em.save_graph")
    c.add_argument("-o", "--out", required=True, help="program file to write (load with em.Program.load)")
    c.add_argument("--device", default=None, help="cpu, cuda, cuda:N, or a preset (h100: code for sm_90, no GPU needed)")
    c.add_argument("--search", default="none", choices=["none", "fast", "full"])
    c.add_argument("--time-limit", type=float, default=None, help="search time limit (s)")
    e = sub.add_parser("export", help="write a program (a saved graph or program file) as a loadable directory")
    e.add_argument("input", help="a graph JSON (em.save_graph) or a program file (Program.save)")
    e.add_argument("-o", "--out", required=True, help="directory to write (load with ember.export.load)")
    e.add_argument("--device", default=None, help="cpu, cuda, or a preset (h100: cubins for sm_90a, no GPU needed)")
    from .llm.command import add_parser as add_generate
    from .serve.command import add_parser as add_serve
    add_generate(sub)
    add_serve(sub)
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # (what `generate --tp N` hands its ranks)
    try:
        return _run(args)
    except Exception as e:  # noqa: BLE001 - only the errors a user causes print as one line
        from .arrays import InputError
        from .backends.target import DeviceError
        from .llm import CheckpointError, ConfigError
        from .export import ExportError
        from .comm import CommError
        from .backends.nccl import NCCLError
        if isinstance(e, (DeviceError, ExportError, CommError, NCCLError)) or (args.cmd in ("generate", "serve") and isinstance(
                e, (InputError, CheckpointError, ConfigError, ValueError, FileNotFoundError))):
            print(f"ember: error: {e}", file=sys.stderr)
            return 2
        raise


def _run(args) -> int:
    if args.cmd == "demo":
        from .demo import run
        return run(args.device, args.search)
    if args.cmd == "bench":
        import os
        import runpy
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        script = os.path.join(here, "bench", "kernelbench.py" if args.suite == "kernelbench" else "run.py")
        if not os.path.exists(script):
            print("bench/ is part of the source checkout; run from a clone of the repository", file=sys.stderr)
            return 2
        sys.argv = [script, *args.rest] if args.suite == "kernelbench" else [script, args.suite, *args.rest]
        runpy.run_path(script, run_name="__main__")
        return 0
    if args.cmd == "inspect":
        return _inspect(args.path)
    if args.cmd == "compile":
        return _compile(args)
    if args.cmd == "export":
        return _export(args)
    if args.cmd == "generate":
        from .llm.command import run
        return run(args)
    if args.cmd == "serve":
        from .serve.command import run as serve
        return serve(args)
    return 2


def _compile(args) -> int:
    import time

    import ember as em
    outs = em.load_graph(args.graph)
    t0 = time.perf_counter()
    opts = {"time_limit": args.time_limit} if args.search != "none" and args.time_limit else {}
    prog = em.compile(outs, device=args.device, search=args.search, **opts)
    prog.save(args.out)
    print(f"compiled {len(outs)} output(s) into {len(prog.launches)} kernel(s) for {prog.device} "
          f"in {time.perf_counter() - t0:.2f} s -> {args.out}")
    if prog.meta.get("search"):
        print("search: " + prog.meta["search"])
    return 0


def _export(args) -> int:
    import zipfile

    import ember as em

    from .export import export
    from .runtime.program import Program
    if zipfile.is_zipfile(args.input):
        prog = Program.load(args.input, device=args.device)
    else:
        prog = em.compile(em.load_graph(args.input), device=args.device)
    export(prog, args.out)
    print(f"exported {len(prog.launches)} kernel(s) for {prog.device} -> {args.out}")
    return 0


def _inspect(path: str) -> int:
    import zipfile
    if zipfile.is_zipfile(path):
        import json

        from .backends.target import available, default_preset
        from .runtime.program import Program
        with zipfile.ZipFile(path) as z:
            kind = json.loads(z.read("program.json")).get("device", "cpu")
        # printing needs no device: without one, the program is read for its kind's preset
        prog = Program.load(path, device=kind if available(kind) else default_preset(kind).preset)
        print(prog.report())
        print(prog.source)
        return 0
    from . import graph
    outs = graph.load(path)
    print(graph.graph_str(list(outs.values())))
    return 0


if __name__ == "__main__":
    code = main()
    if "RANK" in os.environ:  # a rank of `generate/serve --tp N`: no interpreter teardown
        from .distributed import exit_rank
        exit_rank(code or 0)
    sys.exit(code)
