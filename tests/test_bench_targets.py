"""The bench's targets table (wgkern/bench_targets.py) and floors (wgkern/bench_floors.py): each figure beside
its issue-#20 target and its peer or floor, the ratio and whether the target is met."""
from __future__ import annotations

import math

import pytest

import wgkern as wk
from wgkern import bench_workloads
from wgkern.bench_report import BenchResult
from wgkern.bench_targets import device_kind, format_targets, target_rows


def _result(name: str, value: float, unit: str = "ms", better: str = "lower", **extra) -> BenchResult:
    return BenchResult(name, value, unit, better, value, 5, **extra)


def test_a_peer_ratio_is_checked_against_the_target() -> None:
    runs = [({"toolkit": "wgkern", "arch": "cpu"}, [_result("adstack", 7.0), _result("import", 90.0)]),
            ({"toolkit": "quadrants", "arch": "cpu"}, [_result("adstack", 10.0), _result("import", 300.0)])]
    rows = {row[0]: row for row in target_rows(runs)}
    assert rows["adstack"][2:] == ("quadrants 10 ms", "0.70x", "<= 0.8x peer (#20.5)", "yes")
    assert rows["import"][2:] == ("quadrants 300 ms", "0.30x", "none on this device", "")
    runs[0][1][0] = _result("adstack", 9.0)
    assert target_rows(runs)[0][3:] == ("0.90x", "<= 0.8x peer (#20.5)", "no")


def test_floors_apply_on_lavapipe_and_a_missing_peer_is_named() -> None:
    header = {"toolkit": "wgkern", "arch": "vulkan", "adapter_type": "CPU"}
    assert device_kind(header) == "wgpu-cpu" and device_kind({"arch": "vulkan", "adapter_type": "GPU"}) == "wgpu-gpu"
    results = [_result("launch_overhead", 46.0, "us/launch", floor=40.0, floor_name="raw wgpu"),
               _result("compile", 50.0, floor=40.0, floor_name="driver JIT"),
               _result("saxpy", 3000.0, "GB/s", "higher", device_value=3500.0)]
    rows = target_rows([(header, results)])
    assert rows[0][2:] == ("raw wgpu 40 us/launch", "1.15x", "<= 1.15x floor (#20.7)", "yes")
    assert rows[1][2:] == ("driver JIT 40 ms", "1.25x", "<= 1.2x floor (#20.7)", "no")
    assert rows[2][4:] == ("none on this device", "")
    gpu_rows = target_rows([({"arch": "vulkan", "adapter_type": "GPU"}, results)])
    assert gpu_rows[2][3:] == ("3500 GB/s", ">= 4000 by GPU time (#20.1)", "no")
    assert gpu_rows[3][3:] == ("1.17x", "<= 1.1x GPU time (#20.2)", "no")
    cuda = target_rows([({"arch": "cuda"}, [_result("nbody", 800.0, "GFLOP/s", "higher")])])
    assert cuda[0][3:] == ("-", ">= 1x peer (#20.3)", "not measured (needs --compare)")
    assert "FAILED" in format_targets([(header, [BenchResult("compile", None, "", "", None, 0, error="E")])])


def test_lavapipe_floors_are_measured_in_the_same_run(arch) -> None:
    if arch != wk.vulkan or bench_workloads._on_gpu(wk):
        pytest.skip("the floors apply to lavapipe (a WGSL arch on a CPU adapter)")
    launch = bench_workloads.bench_launch_overhead(wk, 5)
    compile_ = bench_workloads.bench_compile(wk, 5)
    for result in (launch, compile_):
        assert result.floor is not None and math.isfinite(result.floor) and result.floor > 0
    # the floor does the same dispatches with less work around them: a floor far above wgkern's figure
    # would mean it measured something else (the two are timed on a shared machine, so only a wide margin holds)
    assert launch.floor < 3 * launch.value
    assert compile_.floor < 3 * compile_.value


def test_launch_sync_is_measured_beside_its_floor_on_wgsl_arches(arch) -> None:
    result = bench_workloads.bench_launch_sync(wk, 5)
    assert result.name == "launch_sync" and result.unit == "us" and result.value > 0
    if arch != wk.vulkan:
        assert result.floor is None               # no raw-wgpu floor off the WGSL arches
        return
    assert result.floor is not None and 0 < result.floor < 3 * result.value
    assert "own work" in result.detail
    launch = bench_workloads.bench_launch_overhead(wk, 5)
    assert f"above raw wgpu's {launch.floor * 1e3:.0f}" in launch.detail
