"""The offline cache on disk (wk.init(offline_cache=True), the default): compiled code kept between runs.

Entries are keyed by a hash of the generated code they were compiled from (plus the target and the compiler's
versions), so an entry can only be found by a module that is the same text: nothing a kernel's source, its
captured values or wgkern itself changes can make a stale entry match. The CPU backend keeps object code here
(`cpu/`), the CUDA backend PTX (`cuda/`), and passes/ir_cache.py the forward passes' results for every backend
(`ir/`, keyed by the frontend's IR itself). Kernels declared `fastcache=True` also have the frontend's result
kept (`front/`, frontend_cache.py: keyed by what the frontend read) and, under that entry's key, a record of
where their compiled code is (`code/`, backends/code_records.py), found without generating the module; on WGSL
backends that record is the shaders' text (backends/wgsl/shader_records.py), and the drivers keep what they compile
from it in their own caches (Mesa's and NVIDIA's keep them on disk themselves).

Where: wk.init(offline_cache_file_path=...) (Taichi's option), else $WK_CACHE_DIR, else $XDG_CACHE_HOME/wgkern,
else ~/.cache/wgkern. Size: as Taichi's offline cache, at most `offline_cache_max_size_of_files` bytes (100 MiB)
under `offline_cache_cleaning_policy` 'lru' (a hit refreshes an entry's time; 'fifo' does not; 'version' is
'lru' here, since an entry of another version is never found; 'never' keeps everything): past the limit the
oldest entries go until `offline_cache_cleaning_factor` (a quarter) of it is free. A cache that cannot be read
or written is ignored (compiling instead); writes go through a temporary file and a rename, so a concurrent
reader sees a whole entry or none, and every entry starts with a digest of its bytes, so a damaged one reads as
absent (object code is loaded into the process unchecked otherwise). Processes sharing the cache (the actors of
wgkern.distributed on one host) compile each entry once: `building(kind, key)` holds an exclusive lock on the
key's file in `.locks/` while one process compiles, and the others, waiting on it, then find the entry."""
from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

POLICIES = ("never", "version", "lru", "fifo")
LOCKS = ".locks"            # the folder of building()'s lock files
CLEAN_EVERY = 32            # stores between size checks (the first store of a process checks too)


DEFAULT_MAX_BYTES, DEFAULT_POLICY, DEFAULT_FACTOR = 100 << 20, "lru", 0.25     # Taichi's defaults


@dataclass(slots=True)
class Settings:
    """What wk.init configured (Taichi's offline-cache options); `configure` resets what it is not given."""
    root: str | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    policy: str = DEFAULT_POLICY
    factor: float = DEFAULT_FACTOR


_settings = Settings()
_stores = 0


def configure(root: str | None = None, max_bytes: int | None = None, policy: str | None = None,
              factor: float | None = None) -> None:
    global _settings, _stores  # noqa: PLW0603 - one cache per process, configured by each wk.init
    _settings = Settings(root, DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes),
                         policy or DEFAULT_POLICY, DEFAULT_FACTOR if factor is None else float(factor))
    _stores = 0


def cache_root() -> Path:
    root = _settings.root or os.environ.get("WK_CACHE_DIR") or os.path.join(
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
    path = cache_directory(kind) / (key + suffix)
    try:
        stored = path.read_bytes()
    except OSError:
        return None
    data = stored[_DIGEST_BYTES:]
    if hashlib.sha256(data).digest() != stored[:_DIGEST_BYTES]:
        return None
    if _settings.policy in ("lru", "version"):
        try:
            os.utime(path)           # recently used: the last to go
        except OSError:
            pass
    return data


def store(kind: str, key: str, suffix: str, data: bytes) -> None:
    """Keep `data` under `key` (best effort: an unwritable cache is skipped silently)."""
    path = cache_directory(kind) / (key + suffix)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # a name of this writer's own (process and thread), renamed over the entry in one step
        partial = path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")
        try:
            partial.write_bytes(hashlib.sha256(data).digest() + data)
            partial.replace(path)
        finally:
            if partial.exists():
                partial.unlink()
    except OSError:
        return
    global _stores  # noqa: PLW0603
    if _stores % CLEAN_EVERY == 0:
        clean()
    _stores += 1


@contextlib.contextmanager
def building(kind: str, key: str) -> Iterator[None]:
    """Hold the inter-process lock of one entry while it is looked up and, if absent, compiled and stored, so
    that processes asking for the same entry at once compile it once (the others wait, then load it). Best
    effort: where the cache cannot be written or the platform has no `fcntl` (Windows), no lock is taken."""
    try:
        import fcntl
        folder = cache_root() / LOCKS
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / f"{kind}-{key}.lock", "a+b")
    except (ImportError, OSError):
        yield
        return
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        except OSError:
            pass
        try:
            yield
        finally:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            except OSError:
                pass


def clean() -> None:
    """Past the size limit, remove the oldest entries (by modification time) until the cleaning factor of the
    limit is free; nothing under policy 'never'."""
    settings = _settings
    if settings.policy == "never":
        return
    entries = []
    try:
        for folder in cache_root().iterdir():
            if folder.is_dir() and folder.name != LOCKS:      # empty lock files free nothing
                for entry in os.scandir(folder):
                    if entry.is_file():
                        stat = entry.stat()
                        entries.append((stat.st_mtime, stat.st_size, entry.path))
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    if total <= settings.max_bytes:
        return
    goal = settings.max_bytes * (1.0 - settings.factor)
    for _, size, name in sorted(entries):
        if total <= goal:
            break
        try:
            os.remove(name)
            total -= size
        except OSError:
            pass
