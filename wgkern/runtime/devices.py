"""Device indices: which physical device `wk.init(arch=..., device=i)` runs on, and the numbered list that
`python -m wgkern info` prints.

An index counts the devices of one arch: for wk.cuda (and wk.amdgpu) the driver's ordinal, so CUDA itself
applies CUDA_VISIBLE_DEVICES (HIP its HIP_VISIBLE_DEVICES); for a wgpu arch the adapters of that arch, best kind
first (discrete, integrated, then CPU adapters such as lavapipe) in wgpu's order within a kind; for wk.cpu only 0.
A wgpu arch honours CUDA_VISIBLE_DEVICES the way a CUDA program does: NVIDIA adapters not listed are hidden and
the listed ones come in the listed order; adapters of other vendors are not affected. An entry is matched to an
adapter by its PCI bus id or UUID where wgpu's adapter info reports one; where it does not (wgpu 0.x reports
neither), an integer entry `k` is the k-th NVIDIA adapter in wgpu's order (the PCI bus order of Vulkan's
drivers, the order CUDA uses under CUDA_DEVICE_ORDER=PCI_BUS_ID, and its default order on hosts of one GPU
model) and an entry that is not an integer is an error naming the variable."""
from __future__ import annotations

import operator
import os
from typing import Any, Sequence

NVIDIA_VENDOR_ID = 0x10DE
_ID_KEYS = ("pci_bus_id", "device_pci_bus_id", "uuid", "device_uuid")


def check_index(device: Any) -> int | None:
    """`device` as given to wk.init: None (the default device) or a non-negative int; else a ValueError."""
    if device is None:
        return None
    try:
        index = operator.index(device)          # ints and numpy integers; not floats or strings
    except TypeError:
        index = -1
    if isinstance(device, bool) or index < 0:
        raise ValueError(f"wk.init(device={device!r}): expected a device index, an int >= 0 "
                         "(`python -m wgkern info` lists the devices with their indices)")
    return index


def out_of_range(arch_name: str, device: int, names: Sequence[str], why: str = "") -> ValueError:
    """The error for an index past the devices of an arch, listing those found."""
    count = len(names)
    listed = "; ".join(f"{i}: {name}" for i, name in enumerate(names)) or "none"
    plural = "device" if count == 1 else "devices"
    return ValueError(f"wk.init(arch={arch_name}, device={device}): {arch_name} has {count} {plural} here "
                      f"(indices from 0: {listed}){why}")


def cpu_device(device: int | None) -> None:
    """wk.cpu has one device, index 0: the host's cores (threads are set by cpu_max_num_threads)."""
    if device not in (None, 0):
        raise out_of_range("wk.cpu", device, ["the host CPU (all cores, one device)"])


def _visible_entries(environ: Any = None) -> list[str] | None:
    """CUDA_VISIBLE_DEVICES split into entries (None when unset); as in CUDA, parsing stops at the first entry
    that is empty."""
    value = (os.environ if environ is None else environ).get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    entries = []
    for entry in value.split(","):
        entry = entry.strip()
        if not entry:
            break
        entries.append(entry)
    return entries


def _is_nvidia(adapter: Any) -> bool:
    return _info(adapter).get("vendor_id") == NVIDIA_VENDOR_ID


def _info(adapter: Any) -> dict:
    info = getattr(adapter, "info", None)
    if info is None and hasattr(adapter, "handle"):
        info = getattr(adapter.handle, "info", None)
    return dict(info or {})


def _identifiers(adapter: Any) -> set[str]:
    """The PCI bus ids and UUIDs the adapter reports, normalised for comparison (lower case, no 'gpu-')."""
    info = _info(adapter)
    return {_normal(str(info[key])) for key in _ID_KEYS if info.get(key)}


def _normal(entry: str) -> str:
    entry = entry.strip().lower()
    return entry.removeprefix("gpu-")


def apply_cuda_visible(adapters: Sequence[Any], environ: Any = None) -> list[Any]:
    """The adapters a CUDA program would see under CUDA_VISIBLE_DEVICES (see the module docstring): the
    non-NVIDIA ones unchanged, then the NVIDIA ones listed, in the listed order. Raises ValueError for an entry
    that names no adapter it can be matched to."""
    entries = _visible_entries(environ)
    if entries is None:
        return list(adapters)
    nvidia = [a for a in adapters if _is_nvidia(a)]
    others = [a for a in adapters if not _is_nvidia(a)]
    chosen: list[Any] = []
    for entry in entries:
        by_id = [a for a in nvidia if _normal(entry) in _identifiers(a)]
        if by_id:
            match = by_id[0]
        elif entry.isdigit() or (entry.startswith("-") and entry[1:].isdigit()):
            k = int(entry)
            if k < 0 or k >= len(nvidia):
                break                 # CUDA ignores this entry and every one after it
            match = nvidia[k]
        elif any(_identifiers(a) for a in nvidia):
            break                     # ids are reported and none matches: CUDA stops here too
        else:
            raise ValueError(f"CUDA_VISIBLE_DEVICES={','.join(entries)!r}: the entry {entry!r} is not an index, and wgpu's adapters report no PCI bus id or "
                             "UUID to match it against; use indices (0,1,...) for the wgpu arches")
        if match not in chosen:
            chosen.append(match)
    return others + chosen


def pick(arch_name: str, pool: Sequence[Any], device: int | None, describe: Any = str) -> Any:
    """The `device`-th entry of `pool` (the first when device is None), or ValueError listing the pool."""
    index = 0 if device is None else device
    if index < len(pool):
        return pool[index]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    why = f" (CUDA_VISIBLE_DEVICES={visible!r} hides the NVIDIA adapters it does not list)" if visible is not None else ""
    raise out_of_range(arch_name, index, [describe(a) for a in pool], why)
