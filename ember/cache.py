"""Where Ember keeps compiled artifacts and search results on disk.

The location is ``$EMBER_CACHE_DIR`` when set (CI points it inside the checkout), else
``~/.cache/ember``. Every entry is keyed by a structural hash of what produced it.
"""
from __future__ import annotations

import os

CODEGEN_VERSION = "1"  # bump when generated code changes meaning; part of every cache key


def root() -> str:
    d = os.environ.get("EMBER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "ember")
    os.makedirs(d, exist_ok=True)
    return d


def cache_dir(kind: str) -> str:
    d = os.path.join(root(), f"{kind}-v{CODEGEN_VERSION}")
    os.makedirs(d, exist_ok=True)
    return d
