"""`ember serve PATH [--host] [--port] [--device] [--dtype] [--max-batch] [--max-queue] [--max-seq-len] [--tp N]
[--batch-invariant]`."""
from __future__ import annotations

import os


def add_parser(sub) -> None:
    s = sub.add_parser("serve", help="serve a Hugging Face decoder checkpoint over an OpenAI-compatible HTTP API")
    s.add_argument("path", help="checkpoint directory (config.json, *.safetensors, tokenizer.json), or a program "
                                "(a Program.save file or an `ember export` directory, served at POST /v1/run)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if present, else cpu)")
    s.add_argument("--dtype", default=None, help="float32, bfloat16 or float16 (default: the checkpoint's)")
    s.add_argument("--max-batch", type=int, default=8, help="requests run together in one batch")
    s.add_argument("--max-queue", type=int, default=64, help="requests waiting beyond it get 429")
    s.add_argument("--max-seq-len", type=int, default=None)
    s.add_argument("--model-name", default=None, help="the model id clients send (default: the directory name)")
    s.add_argument("--timeout", type=float, default=600.0, help="seconds a request may take")
    s.add_argument("--tp", type=int, default=1, help="tensor-parallel ranks (one GPU each, or CPU processes "
                                                     "with --device cpu); rank 0 serves")
    s.add_argument("--batch-invariant", choices=["auto", "on", "off"], default="auto",
                   help="one decode program for every batch size, so each answer equals its single-request run "
                        "bit for bit (docs/serving.md); auto: on whenever requests can share a batch (--max-batch > 1)")
    s.add_argument("--sharding", choices=["manual", "propagate"], default="manual", help="with --tp (docs/distributed.md)")


def run(args) -> int:
    import uvicorn
    name = args.model_name or os.path.basename(os.path.normpath(args.path))
    exported = os.path.isfile(os.path.join(args.path, "manifest.json"))
    if os.path.isfile(args.path) or exported:  # a saved or exported program: POST /v1/run
        from ..export import load as load_export
        from ..runtime.program import Program
        from .programs import make_program_app
        prog = load_export(args.path, args.device) if exported else Program.load(args.path, device=args.device)
        app = make_program_app(prog, name)
        uvicorn.run(app, host=args.host, port=args.port, log_level="info")
        return 0
    from ..llm import load
    from .app import make_app
    if args.max_batch < 1 or args.max_queue < 1 or args.tp < 1:
        raise ValueError("--max-batch, --max-queue and --tp must be at least 1")
    if args.tp > 1 and "RANK" not in os.environ:  # the launcher: N ranks of this very command
        from ..distributed import launch_cli
        return launch_cli(args.argv, args.tp, args.device)
    comm = None
    if args.tp > 1:
        from .. import distributed
        comm = distributed.init(timeout_s=30 * 24 * 3600.0)  # (the other ranks wait on rank 0 while it is idle)
        if comm.world != args.tp:
            raise ValueError(f"--tp {args.tp} but the process group has {comm.world} ranks")
        if args.device != "cpu":
            args.device = distributed.device(None if args.device is None else "cuda")
    try:
        llm = load(args.path, device=args.device, dtype=args.dtype, max_seq_len=args.max_seq_len,
                   max_batch=args.max_batch, sharding=args.sharding,
                   batch_invariant=args.batch_invariant == "on" or (args.batch_invariant == "auto" and args.max_batch > 1))
        batch = None
        if comm is not None:
            from .ranks import MirroredBatch, follow
            if comm.rank:
                follow(llm, args.max_batch, comm)
                return 0
            batch = MirroredBatch(llm, args.max_batch, comm)
        app = make_app(llm, name, max_batch=args.max_batch, max_queue=args.max_queue, timeout_s=args.timeout,
                       batch=batch)
        uvicorn.run(app, host=args.host, port=args.port, log_level="info")
        return 0
    finally:
        if comm is not None:
            from .. import distributed
            distributed.shutdown()
