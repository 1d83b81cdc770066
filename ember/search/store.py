"""Search results on disk: one JSON file per key, written atomically. Keys hash everything that
changes the answer: the region's structural hash, the dims binding (shapes), the device name, the
search level and the codegen version (cache.CODEGEN_VERSION, part of the directory name)."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile

from .. import cache


def key_of(*parts) -> str:
    return hashlib.sha256("\0".join(str(p) for p in parts).encode()).hexdigest()[:40]


def _path(kind: str, key: str) -> str:
    return os.path.join(cache.cache_dir(f"search-{kind}"), f"{key}.json")


def load(kind: str, key: str) -> dict | None:
    try:
        with open(_path(kind, key)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def save(kind: str, key: str, value: dict) -> None:
    p = _path(kind, key)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(p))
    with os.fdopen(fd, "w") as f:
        json.dump(value, f)
    os.replace(tmp, p)
