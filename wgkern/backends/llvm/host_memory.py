"""How much memory the host can give the CPU backend, and the error for a request beyond it.

The CPU backend's containers are host memory (numpy), limited by the machine, not by a default of wgkern's:
physical RAM plus swap, or less where the process runs under a cgroup memory limit (a container). A request
beyond that, together with what the backend already holds, can never be met: Linux's overcommit would hand
out the pages and kill the process when they are touched, so it is refused up front as `OutOfMemoryError`
naming the bytes asked for and the limit. `wk.init(device_memory_limit=N)` adds a limit of the user's own
(backends/base.MemoryBudget)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from wgkern.errors import OutOfMemoryError

_CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True, slots=True)
class HostMemory:
    """`limit` bytes in all (None: unknown), and where that figure comes from, for messages."""
    limit: int | None
    source: str


def _meminfo() -> dict[str, int]:
    """/proc/meminfo's fields in bytes (Linux; empty elsewhere)."""
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return {}
    fields = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            fields[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return fields


def _cgroup_bytes(*names: str) -> int | None:
    """The first numeric value among cgroup limit files (v2's memory.max, v1's memory.limit_in_bytes); None
    when there is none or it says 'max' (v1 writes a huge number for no limit, which min() then ignores)."""
    for name in names:
        try:
            value = (_CGROUP_ROOT / name).read_text().strip()
        except OSError:
            continue
        if value.isdigit():
            return int(value)
    return None


def host_memory() -> HostMemory:
    """RAM + swap of this machine, capped by the cgroup's memory (+ swap) limit when there is one."""
    info = _meminfo()
    ram = info.get("MemTotal")
    if ram is None:
        try:
            ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            return HostMemory(None, "unknown")
    swap = info.get("SwapTotal", 0)
    limit, source = ram + swap, f"this machine's RAM ({ram} bytes) + swap ({swap} bytes)"
    cgroup = _cgroup_bytes("memory.max", "memory/memory.limit_in_bytes")
    if cgroup is not None:
        cgroup_swap = _cgroup_bytes("memory.swap.max")
        cgroup_total = cgroup + (cgroup_swap if cgroup_swap is not None else swap)
        if cgroup_total < limit:
            limit, source = cgroup_total, f"this process's cgroup memory limit ({cgroup} bytes) + swap"
    return HostMemory(limit, source)


_HOST: HostMemory | None = None


def check_host_request(nbytes: int, held: int) -> None:
    """Raise OutOfMemoryError when `nbytes` more, with `held` bytes already in use by the backend, exceed what
    the host can ever give (host_memory(), read once per process)."""
    global _HOST
    if _HOST is None:
        _HOST = host_memory()
    limit = _HOST.limit
    if limit is not None and nbytes + held > limit:
        raise OutOfMemoryError(
            f"allocating {nbytes} bytes of host memory with {held} bytes already held by wgkern would exceed "
            f"{_HOST.source}, {limit} bytes in all. Remedy: smaller shapes, fewer containers, or release some "
            "(drop their last references, or wk.reset())")


def refused_allocation(nbytes: int, error: MemoryError) -> OutOfMemoryError:
    """numpy's MemoryError for a host allocation, as wgkern's OutOfMemoryError naming the bytes."""
    return OutOfMemoryError(f"allocating {nbytes} bytes of host memory failed: {error}")
