"""Bar charts of benchmark results: `python -m wgkern bench --plot F.png` (or a folder).

Owns the chart's layout: one PNG per arch, one group of bars per benchmark, one bar per toolkit (wgkern, and the
peer of `--compare`), each labelled with its value and unit. With several toolkits a bar's length is its value
over the largest value in its group, so each group compares the toolkits; with one toolkit it is the value over
the largest value of the same unit in the chart (benchmarks report different units, and bars of different units
do not compare). Drawn with the package's own rasteriser, font and PNG writer (raster.py, font.py, png.py); the
results come from bench.py as (header, results) pairs, one per toolkit (`bench_report.load_json` reads a saved run)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from wgkern.font import text_size
from wgkern.png import write_png
from wgkern.raster import draw_text, fill_rect

WIDTH = 960
MARGIN = 24
TITLE_SIZE = 20         # multiples of font.EM_ROWS (10) stay crisp
TEXT_SIZE = 20
SMALL_SIZE = 10
NAME_COLUMN = 130       # toolkit names left of the bars
VALUE_COLUMN = 230      # room right of the longest bar for its value
BAR_HEIGHT = 18
BAR_GAP = 4
GROUP_GAP = 14
BACKGROUND = np.array([1.0, 1.0, 1.0], np.float32)
INK = np.array([0.1, 0.1, 0.12], np.float32)
MUTED = np.array([0.42, 0.42, 0.46], np.float32)
FAILED = np.array([0.75, 0.1, 0.1], np.float32)
TOOLKIT_COLORS = [np.array(c, np.float32) for c in ((0.16, 0.42, 0.78), (0.93, 0.55, 0.13), (0.3, 0.65, 0.3))]

Run = tuple[dict[str, Any], Sequence[Any]]     # (header, [BenchResult, ...]) of one toolkit


def chart_path(target: str | Path, arch: str) -> Path:
    """Where the chart of `arch` goes: `target` itself when it names a .png file, else `bench-<arch>.png` in the
    folder `target` (created if missing)."""
    target = Path(target)
    if target.suffix.lower() == ".png":
        target.parent.mkdir(parents=True, exist_ok=True)
        return target
    target.mkdir(parents=True, exist_ok=True)
    return target / f"bench-{arch}.png"


def _value_text(value: float, unit: str) -> str:
    digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2 if abs(value) >= 1 else 3
    return f"{value:.{digits}f} {unit}"


def _title(runs: Sequence[Run]) -> tuple[str, str]:
    first = runs[0][0]
    title = f"python -m wgkern bench --arch {first.get('arch', '?')}"
    facts = [str(first.get("device", "?"))]
    facts += [f"{h.get('toolkit', '?')} {h['version']}" for h, _ in runs if h.get("version")]
    facts += [f"Python {first['python']}"] if first.get("python") else []
    facts += [first["date"]] if first.get("date") else []
    rounds = first.get("rounds", 1)
    facts += [f"best of {rounds} alternating rounds"] if rounds > 1 else []
    return title, ", ".join(facts)


def render_chart(runs: Sequence[Run]) -> np.ndarray:
    """The chart of one arch as (H, W, 3) float RGB rows from the top: one group per benchmark (in the order of
    the first toolkit's results, then any only the others ran), one bar per toolkit that ran it."""
    if not runs:
        raise ValueError("render_chart needs the results of at least one toolkit")
    toolkits = [header.get("toolkit", f"toolkit {k}") for k, (header, _) in enumerate(runs)]
    by_name: dict[str, dict[int, Any]] = {}
    for k, (_, results) in enumerate(runs):
        for result in results:
            by_name.setdefault(result.name, {})[k] = result
    per_group = len(runs) > 1
    largest: dict[str, float] = {}          # the scale of each group (several toolkits) or unit (one toolkit)
    for name, group in by_name.items():
        for r in group.values():
            if not r.error and r.value is not None:
                key = name if per_group else r.unit
                largest[key] = max(largest.get(key, 0.0), abs(float(r.value)))

    title, facts = _title(runs)
    line = text_size("Ag", TEXT_SIZE)[1]
    top = MARGIN + text_size(title, TITLE_SIZE)[1] + text_size(facts or " ", SMALL_SIZE)[1] + GROUP_GAP
    legend_height = line + GROUP_GAP
    groups_height = sum(line + len(g) * (BAR_HEIGHT + BAR_GAP) + GROUP_GAP for g in by_name.values())
    height = top + legend_height + groups_height + MARGIN
    canvas = np.empty((height, WIDTH, 3), np.float32)
    canvas[:] = BACKGROUND

    draw_text(canvas, title, MARGIN, MARGIN, TITLE_SIZE, INK)
    draw_text(canvas, facts, MARGIN, MARGIN + text_size(title, TITLE_SIZE)[1], SMALL_SIZE, MUTED)
    left = MARGIN
    for k, name in enumerate(toolkits):
        fill_rect(canvas, left, top + 1, BAR_HEIGHT, BAR_HEIGHT, TOOLKIT_COLORS[k % len(TOOLKIT_COLORS)])
        left += BAR_HEIGHT + 6 + draw_text(canvas, name, left + BAR_HEIGHT + 6, top, TEXT_SIZE, INK)[0] + 24
    scale_note = "bar length: value / largest value of its benchmark" if per_group else \
        "bar length: value / largest value of the same unit"
    draw_text(canvas, scale_note, left, top + 5, SMALL_SIZE, MUTED)
    y = top + legend_height

    bar_left = MARGIN + NAME_COLUMN
    bar_span = WIDTH - MARGIN - VALUE_COLUMN - bar_left
    for name, group in by_name.items():
        better = next((r.better for r in group.values() if r.better), "")
        unit = next((r.unit for r in group.values() if r.unit), "")
        label = name + (f"  ({unit}, {better} is better)" if unit and better else "")
        y += draw_text(canvas, label, MARGIN, y, TEXT_SIZE, INK)[1]
        for k in sorted(group):
            r = group[k]
            draw_text(canvas, toolkits[k], MARGIN + 8, y + (BAR_HEIGHT - 10) // 2 - 1, SMALL_SIZE, MUTED)
            if r.error or r.value is None:
                message = "FAILED: " + (r.error.splitlines()[0] if r.error else "no value")
                draw_text(canvas, message[:110], bar_left, y + (BAR_HEIGHT - 10) // 2, SMALL_SIZE, FAILED)
            else:
                value = float(r.value)
                scale = largest.get(name if per_group else r.unit) or 1.0
                length = max(int(round(bar_span * abs(value) / scale)), 1)
                fill_rect(canvas, bar_left, y, length, BAR_HEIGHT, TOOLKIT_COLORS[k % len(TOOLKIT_COLORS)])
                draw_text(canvas, _value_text(value, r.unit), bar_left + length + 8, y - 1, TEXT_SIZE, INK)
            y += BAR_HEIGHT + BAR_GAP
        y += GROUP_GAP
    return canvas


def write_chart(runs: Sequence[Run], target: str | Path) -> Path:
    """Draw the chart of one arch's run and write it as a PNG at `chart_path(target, arch)`; returns the path."""
    path = chart_path(target, str(runs[0][0].get("arch", "unknown")) if runs else "unknown")
    pixels = np.clip(render_chart(runs) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    write_png(str(path), pixels)
    return path
