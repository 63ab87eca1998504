"""The targets of the benchmark suite (issue #20 of the project's tracker) and the table that sets each figure
beside its target and its floor or peer.

A target applies to a benchmark on one kind of device: 'cpu' (the LLVM CPU backend), 'cuda', 'wgpu-cpu' (a
WGSL arch on a CPU adapter: lavapipe) or 'wgpu-gpu' (a WGSL arch on a real GPU). It bounds one of: the ratio
of wgkern's value to the peer toolkit's (`--compare`), the ratio to the floor the bench measured for the same
work (bench_floors.py), the ratio of saxpy's wall-clock time to its GPU time, or the value itself."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True, slots=True)
class Target:
    benchmark: str
    device: str          # 'cpu', 'cuda', 'wgpu-cpu' or 'wgpu-gpu'
    against: str         # 'peer', 'floor', 'device_time' (wall / GPU time), 'value' or 'device_value' (by GPU time)
    bound: float
    at_most: bool        # the ratio (or value) must be <= bound; else >= bound
    item: int            # the item of issue #20 that sets it

    def text(self) -> str:
        what = {"peer": "x peer", "floor": "x floor", "device_time": "x GPU time", "value": "",
                "device_value": " by GPU time"}[self.against]
        return f"{'<=' if self.at_most else '>='} {self.bound:g}{what} (#20.{self.item})"


TARGETS = (
    Target("saxpy", "cuda", "device_value", 4000.0, False, 1),
    Target("saxpy", "wgpu-gpu", "device_value", 4000.0, False, 1),
    Target("saxpy", "wgpu-gpu", "device_time", 1.1, True, 2),
    Target("nbody", "cuda", "peer", 1.0, False, 3),
    Target("nbody", "wgpu-gpu", "value", 800.0, False, 3),
    Target("adstack", "cpu", "peer", 0.8, True, 5),
    Target("compile", "cuda", "peer", 0.8, True, 6),
    Target("launch_overhead", "wgpu-cpu", "floor", 1.15, True, 7),
    Target("compile", "wgpu-cpu", "floor", 1.2, True, 7),
)


def device_kind(header: dict[str, Any]) -> str:
    """The target device class of a run's header (bench.run_all records 'arch' and 'adapter_type')."""
    arch = str(header.get("arch", ""))
    if arch in ("cpu", "cuda"):
        return arch
    return "wgpu-cpu" if header.get("adapter_type") == "CPU" else "wgpu-gpu"


def _number(value: float, unit: str) -> str:
    return f"{value:.4g} {unit}".strip()


def target_rows(runs: Sequence[tuple[dict[str, Any], Sequence[Any]]]) -> list[tuple[str, ...]]:
    """(benchmark, wgkern, peer or floor, ratio, target, met) per wgkern figure, as text."""
    header, results = runs[0]
    kind = device_kind(header)
    peers = {}
    peer_name = ""
    if len(runs) > 1:
        peer_name = runs[1][0].get("toolkit", "peer")
        peers = {r.name: r for r in runs[1][1] if not r.error and r.value is not None}
    rows = []
    for r in results:
        if r.error or r.value is None:
            rows.append((r.name, "FAILED", "", "", "", ""))
            continue
        targets = [t for t in TARGETS if t.benchmark == r.name and t.device == kind]
        other, ratio = "-", None
        peer = peers.get(r.name)
        if getattr(r, "floor", None):
            other = f"{r.floor_name or 'floor'} {_number(r.floor, r.unit)}"
            ratio = r.value / r.floor
        if peer is not None and (ratio is None or any(t.against == "peer" for t in targets)):
            other = f"{peer_name} {_number(peer.value, peer.unit)}"
            ratio = r.value / peer.value if peer.value else None
        if not targets:
            rows.append((r.name, _number(r.value, r.unit), other, f"{ratio:.2f}x" if ratio else "-",
                         "none on this device", ""))
            continue
        for t in targets:
            measured = {"peer": r.value / peer.value if peer is not None and peer.value else None,
                        "floor": r.value / r.floor if getattr(r, "floor", None) else None,
                        "device_time": r.value / r.device_value if getattr(r, "device_value", None) else None,
                        "value": r.value, "device_value": getattr(r, "device_value", None)}[t.against]
            if t.against == "device_time" and measured is not None:
                measured = 1.0 / measured       # saxpy's values are GB/s: wall time / GPU time = GPU / wall GB/s
            if measured is None:
                met, shown = f"not measured (needs {'--compare' if t.against == 'peer' else t.against})", "-"
            else:
                met = "yes" if (measured <= t.bound if t.at_most else measured >= t.bound) else "no"
                shown = _number(measured, r.unit) if "value" in t.against else f"{measured:.2f}x"
            rows.append((r.name, _number(r.value, r.unit), other, shown, t.text(), met))
    return rows


def format_targets(runs: Sequence[tuple[dict[str, Any], Sequence[Any]]]) -> str:
    """The targets table of one bench run (wgkern's run first, then the peer's if any)."""
    header = runs[0][0]
    columns = ("benchmark", "wgkern", "peer / floor", "ratio", "target", "met")
    rows = [columns, *target_rows(runs)]
    widths = [max(len(row[k]) for row in rows) for k in range(len(columns))]
    lines = [f"targets on {header.get('arch', '?')} ({device_kind(header)}): wgkern / peer or floor"]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)
