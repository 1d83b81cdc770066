"""Where Ember keeps compiled artifacts and search results on disk, and how an entry is written and
read so that a damaged cache heals instead of crashing the process.

The location is ``$EMBER_CACHE_DIR`` when set (CI points it inside the checkout), else
``~/.cache/ember``. Every entry is keyed by a structural hash of what produced it.

Faults this module turns into one warning line and a rebuild:

- A torn or damaged entry (a crash mid-write elsewhere, a full disk, a truncated copy, garbage):
  every entry ends with a trailer holding the sha256 of its contents (`seal`), and is published with
  one ``os.replace`` of a finished temporary file (`store`, `publish`), so a reader sees a whole entry
  or none. `verify`/`load` check the trailer before anything uses the file: a truncated shared library
  is caught before dlopen maps it (mapping pages past the end of a short file is what raises SIGBUS).
  A bad entry is deleted, reported with a `CacheWarning`, and the caller rebuilds it.
- A cache directory that cannot be written (read-only, a path under a regular file, no permission):
  `cache_dir` probes it once per process and falls back to a temporary directory, with one warning
  that names ``EMBER_CACHE_DIR``.

The trailer leaves the payload untouched at the front of the file: an ELF shared library loads with
trailing bytes after its last section, so a cached ``.so`` is dlopen-ed in place.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import warnings

# Bump when generated code (or the entry format) changes meaning; part of every cache directory name.
# 2: entries carry a sha256 trailer (entries written before are ignored, not reported as damaged).
# 3: the CPU's packed GEMM form (stored search records from before never tried it).
CODEGEN_VERSION = "3"

_MAGIC = b"\n#ember-sha256:"
_TRAILER_LEN = len(_MAGIC) + 64 + 1  # magic, hex digest, newline


class CacheWarning(UserWarning):
    """A cache entry was damaged and is rebuilt, or the cache directory could not be written."""


# ------------------------------------------------------------------------------------------------
# directories

_DIRS: dict = {}  # (configured root, kind) -> directory in use (the configured one or a fallback)
_LOCK = threading.Lock()


def configured_root() -> str:
    """$EMBER_CACHE_DIR, else ~/.cache/ember (what `cache_dir` uses unless it cannot be written)."""
    return os.environ.get("EMBER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "ember")


def cache_dir(kind: str) -> str:
    """The directory for entries of `kind`, created and known writable (checked once per process)."""
    want = configured_root()
    key = (want, kind)
    d = _DIRS.get(key)
    if d is not None and os.path.isdir(d):  # (re-probed if removed meanwhile)
        return d
    with _LOCK:
        d = _DIRS.get(key)
        if d is None or not os.path.isdir(d):
            sub = f"{kind}-v{CODEGEN_VERSION}"
            d = os.path.join(want, sub)
            problem = _unwritable(d)
            if problem is not None:
                d = os.path.join(_fallback_root(), sub)
                os.makedirs(d, exist_ok=True)
                if not any(k[0] == want for k in _DIRS):  # one warning per configured root
                    warnings.warn(f"ember: cache directory {want} cannot be written ({problem}); caching in "
                                  f"{os.path.dirname(d)} for this process (set EMBER_CACHE_DIR to a writable "
                                  "directory)", CacheWarning, stacklevel=3)
            _DIRS[key] = d
    return d


def _unwritable(d: str) -> str | None:
    """Why files cannot be created in `d` (None if they can). A real write, not os.access: root
    passes access checks that a read-only mount still refuses."""
    try:
        os.makedirs(d, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=d, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
        return None
    except OSError as e:
        return f"{type(e).__name__}: {e.strerror or e}"


def _fallback_root() -> str:
    """A per-user directory under the system temporary directory (shared by this user's processes),
    or a fresh private one if that cannot be written either."""
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    d = os.path.join(tempfile.gettempdir(), f"ember-cache-{uid}")
    if _unwritable(d) is None:
        return d
    return tempfile.mkdtemp(prefix="ember-cache-")


# ------------------------------------------------------------------------------------------------
# entries

def _trailer(payload_hash: str) -> bytes:
    return _MAGIC + payload_hash.encode() + b"\n"


def seal(path: str) -> None:
    """Append the sha256 trailer to a finished (not yet published) file, e.g. a compiler's output."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    with open(path, "ab") as f:
        f.write(_trailer(h.hexdigest()))


def publish(tmp: str, path: str) -> None:
    """Seal `tmp` and move it to `path` in one step (readers see the old entry, none, or this one)."""
    seal(tmp)
    os.replace(tmp, path)


def store(path: str, payload: bytes) -> None:
    """Write an entry atomically: a temporary file in the same directory, sealed, then os.replace."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.write(_trailer(hashlib.sha256(payload).hexdigest()))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(path: str) -> bytes | None:
    """The payload of the entry at `path`; None when there is none or it was damaged (then it is
    deleted and a CacheWarning says so: the caller rebuilds it)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        return _discard(path, f"unreadable ({type(e).__name__}: {e.strerror or e})")
    payload, why = _check(data)
    if why is not None:
        return _discard(path, why)
    return payload


def verify(path: str) -> bool:
    """Whether an intact entry exists at `path` (a damaged one is deleted and reported)."""
    return load(path) is not None


def discard(path: str, why: str) -> None:
    """Report and delete an entry that verified but could not be used (e.g. invalid JSON inside)."""
    _discard(path, why)


def _check(data: bytes) -> tuple[bytes, str | None]:
    if len(data) < _TRAILER_LEN or not data[-_TRAILER_LEN:].startswith(_MAGIC):
        return b"", f"truncated or not an Ember cache entry ({len(data)} bytes, no checksum trailer)"
    payload, want = data[:-_TRAILER_LEN], data[-_TRAILER_LEN + len(_MAGIC):-1].decode("ascii", "replace")
    if hashlib.sha256(payload).hexdigest() != want:
        return b"", "contents do not match their sha256 (damaged or truncated)"
    return payload, None


def _discard(path: str, why: str) -> None:
    warnings.warn(f"ember: cache entry {path} is {why}: rebuilding it", CacheWarning, stacklevel=3)
    try:
        os.unlink(path)
    except OSError:
        pass  # a read-only cache: the rebuilt entry then cannot replace it either; the caller still rebuilds
    return None
