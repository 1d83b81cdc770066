"""`ember generate PATH (--prompt TEXT | --prompt-ids 1,2,3) [...]`: stream a checkpoint's
continuation to stdout; the timing line (prefill and decode tokens/s, compiles) goes to stderr."""
from __future__ import annotations

import sys


def add_parser(sub) -> None:
    g = sub.add_parser("generate", help="generate text with a Hugging Face decoder checkpoint (docs/llm.md)")
    g.add_argument("path", help="checkpoint directory (config.json, *.safetensors, tokenizer.json)")
    src = g.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt", help="prompt text (needs tokenizer.json in the checkpoint)")
    src.add_argument("--prompt-ids", help="prompt token ids, comma-separated")
    g.add_argument("--max-new-tokens", type=int, default=64)
    g.add_argument("--temperature", type=float, default=0.0, help="0 (default): greedy")
    g.add_argument("--top-k", type=int, default=None)
    g.add_argument("--top-p", type=float, default=None)
    g.add_argument("--seed", type=int, default=None)
    g.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if present, else cpu)")
    g.add_argument("--dtype", default=None, help="float32, bfloat16 or float16 (default: the checkpoint's)")
    g.add_argument("--max-seq-len", type=int, default=None)
    g.add_argument("--ids", action="store_true", help="print the new token ids (space-separated), not text")
    g.add_argument("--sharding", choices=["manual", "propagate"], default="manual",
                   help="with --tp: the per-rank graph written out (manual) or split from annotations (propagate)")
    g.add_argument("--tp", type=int, default=1,
                   help="tensor-parallel ranks: spawns N processes, one per GPU (or N CPU processes with --device cpu)")


def run(args) -> int:
    import os
    if args.tp < 1:
        raise ValueError(f"--tp must be >= 1, got {args.tp}")
    if args.tp > 1 and "RANK" not in os.environ:  # the launcher: N ranks of this very command
        from ..distributed import launch_cli
        return launch_cli(args.argv, args.tp, args.device)
    if args.tp == 1 and "RANK" not in os.environ:
        return _generate(args)
    from .. import distributed
    comm = distributed.init()
    try:
        if comm.world != args.tp:
            raise ValueError(f"--tp {args.tp} but the process group has {comm.world} ranks")
        if (args.device or "").startswith("cuda") or (args.device is None and distributed.device() != "cpu"):
            args.device = distributed.device("cuda")  # one GPU per rank
        return _generate(args)
    finally:
        distributed.shutdown()


def _generate(args) -> int:
    from . import load
    if args.prompt_ids is not None:
        try:
            ids = [int(t) for t in args.prompt_ids.replace(" ", "").split(",") if t != ""]
        except ValueError:
            raise ValueError(f"--prompt-ids: expected comma-separated integers, got {args.prompt_ids!r}") from None
    llm = load(args.path, device=args.device, dtype=args.dtype, max_seq_len=args.max_seq_len, sharding=args.sharding)
    if args.prompt is not None:
        if llm.tokenizer is None:
            raise ValueError(f"{args.path}: no tokenizer.json, so --prompt cannot be encoded (use --prompt-ids)")
        ids = llm.tokenizer.encode(args.prompt).ids
    if not args.ids and llm.tokenizer is None:
        raise ValueError(f"{args.path}: no tokenizer.json to decode text with (pass --ids)")
    out: list = []
    shown = ""
    for tok in llm.stream(ids, max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
                          top_p=args.top_p, seed=args.seed):
        out.append(tok)
        if args.ids:
            sys.stdout.write(("" if len(out) == 1 else " ") + str(tok))
        else:  # decode everything so far and print what is new (tokens may merge into one character)
            text = llm.tokenizer.decode(out)
            if text.startswith(shown) and not text.endswith("\ufffd"):
                sys.stdout.write(text[len(shown):])
                shown = text
        sys.stdout.flush()
    if not args.ids:
        text = llm.tokenizer.decode(out)
        sys.stdout.write(text[len(shown):] if text.startswith(shown) else "")
    sys.stdout.write("\n")
    sys.stdout.flush()
    s = llm.last_stats
    pre = s["prefill_tokens"] / s["prefill_s"] if s.get("prefill_s") else 0.0
    dec = s["decode_tokens"] / s["decode_s"] if s.get("decode_s") else 0.0
    print(f"prefill: {s['prefill_tokens']} tokens in {s['prefill_s'] * 1e3:.1f} ms ({pre:.1f} tok/s); decode: "
          f"{s['decode_tokens']} tokens in {s['decode_s'] * 1e3:.1f} ms ({dec:.1f} tok/s); {llm.compile_count} "
          f"compiles ({llm.compile_seconds:.1f} s) on {llm.target.kind}", file=sys.stderr)
    return 0
