"""`ember serve PATH [--host] [--port] [--device] [--dtype] [--max-batch] [--max-queue] [--max-seq-len]`."""
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
    if args.max_batch < 1 or args.max_queue < 1:
        raise ValueError("--max-batch and --max-queue must be at least 1")
    llm = load(args.path, device=args.device, dtype=args.dtype, max_seq_len=args.max_seq_len, max_batch=args.max_batch)
    app = make_app(llm, name, max_batch=args.max_batch, max_queue=args.max_queue, timeout_s=args.timeout)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0
