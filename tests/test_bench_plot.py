"""Bar charts of benchmark results (wgkern/bench_plot.py, `python -m wgkern bench --plot`): bar lengths follow
the values (scaled per unit), each toolkit has its colour, failures are written out, and the CLI writes one PNG
per arch that a PNG reader reads back."""
from __future__ import annotations

import re

import numpy as np
import pytest

from wgkern.__main__ import main
from wgkern.bench_report import BenchResult
from wgkern.bench_plot import BAR_HEIGHT, FAILED, TOOLKIT_COLORS, chart_path, render_chart, write_chart
from wgkern.png import read_png


def _header(toolkit: str, **extra) -> dict:
    return {"toolkit": toolkit, "arch": "cpu", "device": "test device", "python": "3.11.7", "date": "2026-11-28",
            "version": "1.0", **extra}


def _runs() -> list:
    wgkern = [BenchResult("saxpy", 10.0, "GB/s", "higher", 5.0, 5),
              BenchResult("nbody", 40.0, "GFLOP/s", "higher", 7.0, 5),
              BenchResult("compile", 200.0, "ms", "lower", 200.0, 5),
              BenchResult("sizing_hit", 3.0, "us/launch", "lower", 6.0, 5)]
    peer = [BenchResult("saxpy", 5.0, "GB/s", "higher", 10.0, 5),
            BenchResult("nbody", None, "", "", None, 0, error="RuntimeError: no device"),
            BenchResult("compile", 50.0, "ms", "lower", 50.0, 5)]
    return [(_header("wgkern"), wgkern), (_header("quadrants"), peer)]


def _bar_runs(image: np.ndarray, color: np.ndarray) -> list[int]:
    """Lengths of the bars of `color`, top to bottom: the longest run of that colour in each bar's rows."""
    match = (np.abs(image - color) < 1e-6).all(axis=-1)
    lengths, row = [], 0
    while row < image.shape[0]:
        if match[row].any():
            lengths.append(int(match[row].sum()))
            rows = match[row:row + BAR_HEIGHT].any(axis=1)
            assert rows.all(), f"a bar at row {row} is not {BAR_HEIGHT} rows high"
            row += BAR_HEIGHT
        else:
            row += 1
    return lengths


def test_bars_of_several_toolkits_are_scaled_per_benchmark():
    image = render_chart(_runs())
    ours, peers = (_bar_runs(image, c) for c in TOOLKIT_COLORS[:2])
    # the legend swatch (BAR_HEIGHT square) comes first in each colour; then, for wgkern: saxpy, nbody, compile,
    # sizing_hit, and for the peer saxpy and compile (its nbody failed)
    assert ours[0] == peers[0] == BAR_HEIGHT
    saxpy, nbody, compile_, sizing_hit = ours[1:]
    peer_saxpy, peer_compile = peers[1:]
    # each benchmark's largest bar spans the whole bar area; the others are value / largest of their benchmark,
    # rounded to whole pixels (hence the tolerance of 1 pixel)
    span = saxpy
    assert nbody == span and sizing_hit == span and compile_ == span
    assert abs(peer_saxpy - span * 5.0 / 10.0) <= 1
    assert abs(peer_compile - span * 50.0 / 200.0) <= 1


def test_bars_of_one_toolkit_are_scaled_per_unit():
    header, results = _runs()[0]
    results = results + [BenchResult("sizing_reducer", 2.5, "GB/s", "higher", 1.0, 5),
                         BenchResult("import", 50.0, "ms", "lower", 50.0, 5)]
    saxpy, nbody, compile_, sizing_hit, reducer, import_ = _bar_runs(render_chart([(header, results)]),
                                                                     TOOLKIT_COLORS[0])[1:]
    # GB/s: saxpy 10 is the largest, the reducer's 2.5 a quarter; ms: compile 200 the largest, import 50 a
    # quarter; nbody and sizing_hit are alone in their units (whole pixels: a tolerance of 1)
    span = saxpy
    assert nbody == span and compile_ == span and sizing_hit == span
    assert abs(reducer - span / 4) <= 1 and abs(import_ - span / 4) <= 1


def test_a_failed_benchmark_is_written_not_drawn():
    image = render_chart(_runs())
    red = (np.abs(image - FAILED) < 0.05).all(axis=-1)
    assert red.sum() > 50                                   # the "FAILED: RuntimeError ..." text
    assert len(_bar_runs(image, TOOLKIT_COLORS[1])) == 3     # swatch + saxpy + compile, no nbody bar


def test_render_chart_needs_results():
    with pytest.raises(ValueError, match="at least one toolkit"):
        render_chart([])


def test_chart_path_is_a_file_or_a_folder(tmp_path):
    assert chart_path(tmp_path / "a" / "c.png", "cpu") == tmp_path / "a" / "c.png"
    assert (tmp_path / "a").is_dir()
    assert chart_path(tmp_path / "charts", "vulkan") == tmp_path / "charts" / "bench-vulkan.png"
    assert (tmp_path / "charts").is_dir()


def test_written_chart_reads_back(tmp_path):
    path = write_chart(_runs(), tmp_path)
    assert path == tmp_path / "bench-cpu.png"
    pixels = read_png(str(path))
    expected = np.clip(render_chart(_runs()) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    assert pixels[..., :3].shape == expected.shape and (pixels[..., :3] == expected).all()


def test_cli_bench_plot_writes_one_chart_per_arch(arch, tmp_path, capsys):
    name = arch.value
    code = main(["bench", "--arch", name, "--only", "idle_sync,sizing_hit", "--reps", "5",
                 "--plot", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    path = tmp_path / f"bench-{name}.png"
    assert f"chart: {path}" in out
    image = read_png(str(path))[..., :3].astype(np.float32) / 255.0
    color = np.round(TOOLKIT_COLORS[0] * 255.0) / 255.0
    assert len(_bar_runs(image, color)) == 3                   # the legend swatch and two bars


def test_cli_plots_a_saved_run_from_json(tmp_path, capsys):
    import json
    from dataclasses import asdict

    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({header["toolkit"]: {**header, "results": [asdict(r) for r in results]}
                                 for header, results in _runs()}))
    assert main(["bench", "--plot", str(tmp_path / "out"), "--from-json", str(saved)]) == 0
    path = tmp_path / "out" / "bench-cpu.png"
    assert f"chart: {path}" in capsys.readouterr().out
    expected = np.clip(render_chart(_runs()) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    assert (read_png(str(path))[..., :3] == expected).all()


def test_cli_from_json_errors_name_the_problem(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--from-json", str(tmp_path / "run.json")])
    assert "argument --from-json: needs --plot" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main(["bench", "--plot", str(tmp_path), "--from-json", str(bad)]) == 1
    assert re.search(r"bad\.json: not a results file written by `python -m wgkern bench --json`",
                     capsys.readouterr().err)


def test_cli_plot_target_is_a_png_or_a_folder(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--plot", str(tmp_path / "chart.jpg"), "--from-json", "run.json"])
    assert "argument --plot: expected a .png file or a folder, got" in capsys.readouterr().err
