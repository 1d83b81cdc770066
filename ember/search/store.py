"""Search results on disk: one JSON file per key, written atomically with a checksum (ember/cache.py).
Keys hash everything that changes the answer: the region's structural hash, the dims binding (shapes), the device name, the
search level and the codegen version (cache.CODEGEN_VERSION, part of the directory name)."""
from __future__ import annotations

import hashlib
import json
import os

from .. import cache


def key_of(*parts) -> str:
    return hashlib.sha256("\0".join(str(p) for p in parts).encode()).hexdigest()[:40]


def _path(kind: str, key: str) -> str:
    return os.path.join(cache.cache_dir(f"search-{kind}"), f"{key}.json")


def load(kind: str, key: str) -> dict | None:
    """The stored record, or None (absent, or damaged: then deleted with a warning and searched again)."""
    p = _path(kind, key)
    data = cache.load(p)
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError as e:
        cache.discard(p, f"not valid JSON ({e})")
        return None


def save(kind: str, key: str, value: dict) -> None:
    cache.store(_path(kind, key), json.dumps(value).encode())
