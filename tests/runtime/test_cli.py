"""`python -m wgkern info|bench|demo` (wgkern/__main__.py, wgkern/bench*.py, demos/) as smoke tests."""
from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import wgkern as wk
from wgkern.__main__ import main
from wgkern.bench import main as bench_main


def _read_png(path) -> np.ndarray:
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        length, tag = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        assert zlib.crc32(tag + body) & 0xFFFFFFFF == struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        if tag == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif tag == b"IDAT":
            idat += body
        pos += 12 + length
    width, height = size
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * 4)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(height, width, 4)


def test_info(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "wk.init() would pick" in out and "cpu" in out


def test_demo_list(capsys):
    assert main(["demo", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "heat" in listed and "particles" in listed and "mpm" in listed


@pytest.mark.parametrize("name", ["heat", "particles", "mpm"])
def test_demo_headless(arch, name, tmp_path, capsys):
    out = tmp_path / f"{name}.png"
    assert main(["demo", name, "--headless", "--out", str(out), "--arch", arch.value, "--steps", "30"]) == 0
    image = _read_png(out)
    assert image.shape == (256, 384, 4)
    assert image[..., 1].max() > 100 and image[..., 1].min() < 50      # something bright on a dark plate
    wk.reset()


def test_bench_json(tmp_path, capsys):
    path = tmp_path / "new folder" / "bench.json"        # its folder is created
    code = main(["bench", "--arch", "cpu", "--only", "launch_overhead", "--reps", "5", "--json", str(path)])
    assert code == 0, capsys.readouterr().out
    report = json.loads(path.read_text())["wgkern"]
    assert report["arch"] == "cpu"
    (row,) = report["results"]
    assert row["name"] == "launch_overhead" and row["unit"] == "us/launch" and row["value"] > 0
    assert "launch_overhead" in capsys.readouterr().out


def test_bench_rounds_keep_each_benchmarks_best(tmp_path, capsys):
    path = tmp_path / "bench.json"
    code = main(["bench", "--arch", "cpu", "--only", "launch_overhead,idle_sync", "--reps", "5", "--rounds", "2",
                 "--json", str(path)])
    assert code == 0, capsys.readouterr().out
    report = json.loads(path.read_text())["wgkern"]
    assert report["rounds"] == 2 and [r["name"] for r in report["results"]] == ["launch_overhead", "idle_sync"]
    assert "best of 2 alternating rounds" in capsys.readouterr().out


def test_bench_better_round_and_unknown_names():
    from wgkern.bench_report import BenchResult, _better
    fast = BenchResult("x", 1.0, "ms", "lower", 1.0, 5)
    slow = BenchResult("x", 2.0, "ms", "lower", 2.0, 5)
    failed = BenchResult("x", None, "", "", None, 0, error="boom")
    assert _better(slow, fast) is fast and _better(fast, slow) is fast
    assert _better(failed, slow) is slow and _better(slow, failed) is slow and _better(None, failed) is failed
    wide = BenchResult("y", 9.0, "GB/s", "higher", 1.0, 5)
    narrow = BenchResult("y", 3.0, "GB/s", "higher", 3.0, 5)
    assert _better(narrow, wide) is wide
    with pytest.raises(ValueError, match="unknown benchmark.*nope.*saxpy"):
        bench_main(arch="cpu", only="nope")


@pytest.mark.parametrize("argv, message", [
    (["bench", "--only", "saxpy,nope"], "argument --only: unknown benchmark.*nope; choose from: saxpy, "),
    (["bench", "--reps", "3"], "argument --reps: must be at least 5, got 3"),
    (["bench", "--reps", "many"], "argument --reps: expected an integer, got 'many'"),
    (["bench", "--rounds", "0"], "argument --rounds: must be at least 1"),
    (["bench", "--arch", "nope"], "argument --arch: unknown arch 'nope'; expected one of: cpu, "),
    (["demo", "nope"], "argument NAME: invalid choice: 'nope' \\(choose from 'aim', 'heat', 'mpm', 'particles', 'sweep'\\)"),
    (["demo", "heat", "--steps", "0"], "argument --steps: must be at least 1, got 0"),
    (["demo", "sweep", "--sweep", "1"], "argument --sweep: must be at least 2, got 1"),
    (["demo", "heat", "--actors", "2"], "argument --actors: the heat demo does not take it"),
    (["fuzz", "--seeds", "-1"], "argument --seeds: must be at least 1, got -1"),
    (["demo", "--all", "--out", "x.png"], "argument --out: not allowed with --all"),
    (["demo", "heat", "--all"], "argument --all: not allowed with argument NAME"),
])
def test_bad_options_are_usage_errors_naming_the_option(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert re.search(message, capsys.readouterr().err)


def test_help_lists_the_benchmark_and_demo_names():
    for command, names in (("bench", ["saxpy", "launch_overhead", "adstack", "import"]),
                           ("demo", ["aim", "heat", "mpm", "particles"])):
        result = subprocess.run([sys.executable, "-m", "wgkern", command, "--help"], capture_output=True, text=True)
        assert result.returncode == 0
        text = " ".join(result.stdout.split())
        assert all(name in text for name in names), (command, text)


def test_demo_list_gives_whole_first_paragraphs(capsys):
    assert main(["demo", "--list"]) == 0
    listed = " ".join(capsys.readouterr().out.split())
    assert "atomic particle-to-grid scatter. Rendered to a PNG." in listed


def test_an_unavailable_arch_is_one_line_not_a_traceback():
    # wk.cuda on a machine without the NVIDIA driver (the CI machine), or an arch no machine here has
    arch = "amdgpu"
    result = subprocess.run([sys.executable, "-m", "wgkern", "demo", "heat", "--headless", "--arch", arch],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("python -m wgkern demo: ArchUnavailableError: ")


def test_module_entry_point():
    result = subprocess.run([sys.executable, "-m", "wgkern", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "info" in result.stdout and "bench" in result.stdout


def test_bench_records_toolkit_versions_as_text():
    from types import SimpleNamespace

    from wgkern.bench import _version_text
    assert _version_text(SimpleNamespace(__version__=(1, 3, 3))) == "1.3.3"        # Quadrants' form
    assert _version_text(SimpleNamespace(__version__="0.1.0")) == "0.1.0"
    assert _version_text(SimpleNamespace()) == ""
