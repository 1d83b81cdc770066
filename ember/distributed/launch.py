"""`launch`: start N ranks of an Ember command (what `ember generate --tp N` does), torchrun's way:
each a process with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set. Rank 0's output
is the command's; a rank that fails ends the others."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(cmd: list, world: int, timeout_s: float | None = None) -> int:
    """Run command `cmd` (argv, e.g. [sys.executable, "-m", "ember.cli", "generate", ...]) as `world`
    ranks; returns the first non-zero exit code (0 when all succeed, 124 past `timeout_s`). Ranks
    other than 0 keep quiet unless they fail (their stderr is then printed, prefixed by the rank)."""
    if world < 1:
        raise ValueError(f"the number of ranks must be >= 1, got {world}")
    port = free_port()
    procs, logs = [], []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        log = tempfile.TemporaryFile("w+") if r else None
        logs.append(log)
        procs.append(subprocess.Popen(list(cmd), env=env, stdout=subprocess.DEVNULL if r else None, stderr=log))
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    code = 0
    while any(p.poll() is None for p in procs):
        failed = [p for p in procs if p.poll() not in (None, 0)]
        if failed or (deadline is not None and time.monotonic() > deadline):
            code = failed[0].returncode if failed else 124
            for p in procs:
                if p.poll() is None:
                    p.kill()
            break
        time.sleep(0.05)
    for r, (p, log) in enumerate(zip(procs, logs)):
        p.wait()
        if log is not None:
            log.seek(0)
            err = log.read()
            log.close()
            if p.returncode and err and code != 0:
                sys.stderr.write("".join(f"[rank {r}] {line}\n" for line in err.rstrip().splitlines()[-20:]))
        code = code or p.returncode
    return code


def python_module(module: str, *args) -> list:
    """The command running `python -m module args...` with this interpreter."""
    return [sys.executable, "-m", module, *map(str, args)]


def launch_cli(argv: list, tp: int, device: str | None) -> int:
    """`ember ... --tp N` from a shell: N ranks of the same command line (one GPU each unless
    `device` is "cpu"); refuses more GPU ranks than GPUs in one line."""
    from . import gpu_count
    if device != "cpu" and (device or gpu_count()) and gpu_count() < tp:
        raise ValueError(f"--tp {tp} runs one rank per GPU, and this machine has {gpu_count()} "
                         "(use --device cpu for CPU ranks)")
    return launch([sys.executable, "-m", "ember.cli", *argv], tp)
