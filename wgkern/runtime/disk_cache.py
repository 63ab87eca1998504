"""The offline cache on disk (wk.init(offline_cache=True), the default): compiled code kept between runs.

Entries are keyed by a hash of the generated code they were compiled from (plus the target and the compiler's
versions), so an entry can only be found by a module that is the same text: nothing a kernel's source, its
captured values or wgkern itself changes can make a stale entry match. The CPU backend keeps object code here
(`cpu/`), the CUDA backend PTX (`cuda/`); the frontend and the passes still run on every start (they take a
few ms; the LLVM and NVPTX compiles they spare take tens). WGSL backends rely on their drivers' caches (Mesa's
and NVIDIA's keep compiled shaders on disk themselves).

Where: $WK_CACHE_DIR, else $XDG_CACHE_HOME/wgkern, else ~/.cache/wgkern. A cache that cannot be read or
written is ignored (compiling instead); writes go through a temporary file and a rename, so a concurrent
reader sees a whole entry or none, and every entry starts with a digest of its bytes, so a damaged one reads as
absent (object code is loaded into the process unchecked otherwise)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_root() -> Path:
    root = os.environ.get("WK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "wgkern")
    return Path(root)


def cache_directory(kind: str) -> Path:
    """The folder of one kind of entry ('cpu', 'cuda')."""
    return cache_root() / kind


def cache_key(*parts: str) -> str:
    """A hex digest of `parts` (each one delimited, so ('ab', 'c') and ('a', 'bc') differ)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


_DIGEST_BYTES = 32


def load(kind: str, key: str, suffix: str) -> bytes | None:
    """The stored entry, or None (absent, unreadable or damaged)."""
    try:
        stored = (cache_directory(kind) / (key + suffix)).read_bytes()
    except OSError:
        return None
    data = stored[_DIGEST_BYTES:]
    return data if hashlib.sha256(data).digest() == stored[:_DIGEST_BYTES] else None


def store(kind: str, key: str, suffix: str, data: bytes) -> None:
    """Keep `data` under `key` (best effort: an unwritable cache is skipped silently)."""
    path = cache_directory(kind) / (key + suffix)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(hashlib.sha256(data).digest() + data)
        partial.replace(path)
    except OSError:
        pass
