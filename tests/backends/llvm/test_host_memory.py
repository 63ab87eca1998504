"""backends/llvm/host_memory.py: the host's memory as the CPU backend's limit (RAM + swap, a cgroup's limit),
and the OutOfMemoryError of a request beyond it or refused by numpy."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.llvm import cpu as cpu_backend
from wgkern.backends.llvm import host_memory


def _fake_host(monkeypatch, tmp_path, ram: int, swap: int, cgroup: dict[str, str]) -> None:
    monkeypatch.setattr(host_memory, "_meminfo", lambda: {"MemTotal": ram, "SwapTotal": swap})
    monkeypatch.setattr(host_memory, "_CGROUP_ROOT", tmp_path)
    for name, text in cgroup.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)


def test_the_limit_is_ram_and_swap_or_the_cgroups(monkeypatch, tmp_path):
    _fake_host(monkeypatch, tmp_path, 16 << 30, 2 << 30, {})
    assert host_memory.host_memory().limit == 18 << 30
    _fake_host(monkeypatch, tmp_path, 16 << 30, 2 << 30, {"memory.max": "max\n"})    # cgroup v2, unlimited
    assert host_memory.host_memory().limit == 18 << 30
    _fake_host(monkeypatch, tmp_path, 16 << 30, 2 << 30, {"memory.max": f"{4 << 30}\n", "memory.swap.max": "0\n"})
    found = host_memory.host_memory()
    assert found.limit == 4 << 30 and "cgroup" in found.source
    # cgroup v1 (no memory.max), its limit with the machine's swap
    _fake_host(monkeypatch, tmp_path / "v1", 16 << 30, 2 << 30, {"memory/memory.limit_in_bytes": f"{1 << 30}"})
    assert host_memory.host_memory().limit == 3 << 30


def test_a_request_past_the_limit_or_refused_by_numpy_is_an_out_of_memory_error(monkeypatch, tmp_path):
    _fake_host(monkeypatch, tmp_path, 1 << 30, 0, {})
    monkeypatch.setattr(host_memory, "_HOST", None)                  # read again, from the fake host
    host_memory.check_host_request(1 << 29, 1 << 29)                 # exactly the limit: allowed
    with pytest.raises(wk.OutOfMemoryError, match=r"allocating 536870913 bytes .* with 536870912 bytes already "
                                                  r"held .* 1073741824 bytes in all"):
        host_memory.check_host_request((1 << 29) + 1, 1 << 29)
    monkeypatch.setattr(host_memory, "_HOST", None)
    wk.init(arch=wk.cpu)

    def refuse(nbytes: int) -> tuple[np.ndarray, int]:
        raise MemoryError(f"Unable to allocate {nbytes} bytes")

    monkeypatch.setattr(cpu_backend, "aligned_bytes", refuse)
    with pytest.raises(wk.OutOfMemoryError, match=r"field 'x' of shape \(1000\,\) \(4000 bytes\): allocating "
                                                  r"\d+ bytes of host memory failed: Unable to allocate"):
        wk.field(wk.f32, shape=1000, name="x")
    monkeypatch.undo()
    host_memory._HOST = None
    y = wk.field(wk.f32, shape=1000)            # the budget got the refused bytes back
    assert wk.runtime.program.current().backend.budget.used == 4000
    y.fill(1.0)
    assert y.to_numpy().sum() == 1000.0
