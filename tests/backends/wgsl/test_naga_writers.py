"""The WGSL the backend writes under webgpu_profile="baseline", translated to MSL and HLSL by naga's writers (the
naga that wgpu uses on Metal and D3D12) through tools/check_wgsl/naga.mjs, as .ci/check-wgsl does for every shader
of the suite; and that check's own behaviour: it names the file and gives naga's message, it tries each value of
a bool override (the runtime makes a pipeline for each), and a shader using f64 never reaches the MSL writer.

The tests that run naga.mjs need `npm install` in tools/check_wgsl (.ci/check-wgsl runs it before the suite) and
are skipped without it."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import wgkern as wk

TOOLS = Path(__file__).resolve().parents[3] / "tools" / "check_wgsl"
NODE = TOOLS / "node_modules" / ".bin" / "node"
SUMMARY = re.compile(r"check_wgsl naga [\d.]+: (\d+) shaders, (\d+) translated to MSL and HLSL, (\d+) rejected")


@pytest.fixture
def run_naga():
    """naga.mjs over a folder: (exit status, output, (shaders, translated, rejected))."""
    if not (NODE.exists() and (TOOLS / "node_modules" / "naga-wasm").is_dir()):
        pytest.skip("naga-wasm is not installed: run `npm install` in tools/check_wgsl (.ci/check-wgsl does)")

    def run(folder: Path) -> tuple[int, str, tuple[int, int, int]]:
        result = subprocess.run([str(NODE), str(TOOLS / "naga.mjs"), str(folder)], capture_output=True, text=True,
                                timeout=120)
        summary = SUMMARY.search(result.stdout)
        assert summary, result.stdout + result.stderr
        return result.returncode, result.stdout, tuple(int(n) for n in summary.groups())
    return run


SHADER_HEAD = "@group(0) @binding(0) var<storage, read_write> a: array<f32>;\n"


def write_shader(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.wgsl"
    path.write_text(SHADER_HEAD + body)
    return path


def test_baseline_kernels_translate_to_msl_and_hlsl(run_naga, baseline, tmp_path, monkeypatch):
    """Range and serial tasks, math with run-time infinities, f32 atomics by compare-exchange, a while loop, and a
    reverse pass through a dynamic loop (adstacks): every shader is translated, with wk_flat true and false."""
    monkeypatch.setenv("WK_DUMP_WGSL", str(tmp_path))
    n = 64
    x = wk.field(wk.f32, shape=n, needs_grad=True)
    y = wk.field(wk.f32, shape=n, needs_grad=True)
    trips = wk.field(wk.i32, shape=n)
    total = wk.field(wk.f32, shape=())
    grid = wk.field(wk.i32, shape=(8, 8))

    @wk.kernel
    def naga_math():
        for i in x:
            v = x[i]
            y[i] = wk.exp(v) + wk.log(v + 1.0) + wk.pow(v + 0.5, 1.5) + wk.atan2(v, 2.0)
            total[None] += v

    @wk.kernel
    def naga_serial_while():
        k = 0
        while k < 8:
            grid[k, 7 - k] = k
            k += 1

    @wk.kernel
    def naga_dynamic_loop():
        for i in x:
            v = x[i]
            for _ in range(trips[i]):
                v = wk.sin(v) * 0.9 + 0.05
            y[i] = v

    xs = np.linspace(0.0, 1.0, n, dtype=np.float32)
    x.from_numpy(xs)
    trips.from_numpy(np.arange(n, dtype=np.int32) % 5)
    naga_math()
    naga_serial_while()
    naga_dynamic_loop()
    y.grad.fill(1.0)
    naga_dynamic_loop.grad()
    # f32 sums of 64 values in [0, 1] in any order: each of 63 additions rounds by at most 2^-24 of a partial sum
    # below 64, so the total is within 63 * 64 * 2^-24 < 2.5e-4 of the exact sum
    assert abs(total[None] - float(xs.astype(np.float64).sum())) < 2.5e-4
    assert (np.diag(grid.to_numpy()[:, ::-1]) == np.arange(8)).all()

    shaders = sorted(tmp_path.glob("wgsl-*.wgsl"))
    texts = [p.read_text() for p in shaders]
    for name in ("naga_math", "naga_serial_while", "naga_dynamic_loop"):
        assert any(f"kernel '{name}'" in t for t in texts), name
    assert any("override wk_flat" in t for t in texts)
    status, output, (count, translated, rejected) = run_naga(tmp_path)
    assert (status, count, translated, rejected) == (0, len(shaders), len(shaders), 0), output


def test_f64_is_refused_by_the_profile_and_its_shader_never_written(baseline, tmp_path, monkeypatch):
    dump = tmp_path / "dump"
    monkeypatch.setenv("WK_DUMP_WGSL", str(dump))
    out = wk.field(wk.f32, shape=4)

    @wk.kernel
    def naga_widen():
        for i in out:
            out[i] = wk.f32(wk.f64(i) * 0.5)

    with pytest.raises(wk.DeviceFeatureError, match="f64 needs the device feature 'shader-f64'"):
        naga_widen()
    assert not any("naga_widen" in p.read_text() for p in dump.glob("*.wgsl"))


def test_a_shader_using_f64_never_reaches_the_msl_writer(run_naga, tmp_path):
    # a shader with f64 in a folder of shaders anyway (a run outside the profile): refused before naga's writers,
    # whose MSL writer panics on f64 (Metal has none); f64 in a comment or a name is no use of it
    hand = tmp_path
    write_shader(hand, "typed", "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>)"
                 " { a[g.x] = f32(f64(a[g.x]) * 0.5); }\n")
    write_shader(hand, "suffixed", "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>)"
                 " { let h = 0.5lf; a[g.x] = f32(h); }\n")
    write_shader(hand, "mentioned", "// widens to f64 on the CPU: 0.5lf\nfn to_f64_later(v: f32) -> f32 { return v; }\n"
                 "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>)"
                 " { a[g.x] = to_f64_later(a[g.x]); }\n")
    status, output, counts = run_naga(hand)
    assert (status, counts) == (1, (3, 1, 2)), output
    for name in ("typed", "suffixed"):
        assert re.search(rf"REJECTED \S*{name}\.wgsl \(profile\): uses f64 \(device feature shader-f64\), which "
                         r"webgpu_profile=\"baseline\" leaves out: never sent to naga's MSL writer", output), output
    assert "mentioned" not in output


@pytest.mark.parametrize("source, feature", [
    ("var<workgroup> w: atomic<f32>;\n", "atomic<f32>"),
    ("fn wide(v: i64) -> i64 { return v; }\n", "64-bit integers"),
    ("enable f16;\nfn half(v: f16) -> f16 { return v; }\n", "f16"),
    ("fn total(v: f32) -> f32 { return subgroupAdd(v); }\n", "subgroup operations"),
    ("enable clip_distances;\n", "an enable directive"),
])
def test_other_types_the_profile_leaves_out_are_refused(run_naga, tmp_path, source, feature):
    write_shader(tmp_path, "outside", source + "@compute @workgroup_size(1) fn main() { a[0] = 1.0; }\n")
    status, output, counts = run_naga(tmp_path)
    assert (status, counts) == (1, (1, 0, 1)), output
    assert re.search(rf"REJECTED \S*outside\.wgsl \(profile\): uses {re.escape(feature)}", output), output


def test_a_rejection_names_the_file_and_gives_nagas_message(run_naga, tmp_path):
    write_shader(tmp_path, "good", "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>)"
                 " { a[g.x] = 2.0 * a[g.x]; }\n")
    write_shader(tmp_path, "mistyped", "@compute @workgroup_size(64)\nfn main() {\n  let y: i32 = a[0];\n}\n")
    status, output, counts = run_naga(tmp_path)
    assert (status, counts) == (1, (2, 1, 1)), output
    # naga's report: the message, then the line of the source it points at (line 4: after SHADER_HEAD's line)
    assert re.search(r"REJECTED \S*mistyped\.wgsl \(parse\): error: the type of `y` is expected to be `i32`, but got "
                     r"`f32`\n.*wgsl:4:", output), output
    assert "good.wgsl" not in output


def test_each_value_of_a_bool_override_is_translated(run_naga, tmp_path):
    # const_assert sees the override's value once it is a constant, as in each pipeline wgpu makes from the module
    write_shader(tmp_path, "flat_only_false", "override wk_flat: bool = false;\nconst_assert !wk_flat;\n"
                 "@compute @workgroup_size(1) fn main() { a[0] = 1.0; }\n")
    status, output, counts = run_naga(tmp_path)
    assert (status, counts) == (1, (1, 0, 1)), output
    assert re.search(r"flat_only_false\.wgsl \(parse, wk_flat=true\): error: `const_assert` failure", output), output
    assert "wk_flat=false" not in output


def test_an_override_without_a_value_is_a_rejection(run_naga, tmp_path):
    write_shader(tmp_path, "open", "override count: u32;\n"
                 "@compute @workgroup_size(1) fn main() { a[0] = f32(count); }\n")
    status, output, counts = run_naga(tmp_path)
    assert (status, counts) == (1, (1, 0, 1)), output
    assert "open.wgsl (overrides): an override the check cannot give a value: override count: u32;" in output


def test_a_folder_without_shaders_is_a_failure(run_naga, tmp_path):
    result = subprocess.run([str(NODE), str(TOOLS / "naga.mjs"), str(tmp_path)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1
    assert f"check_wgsl naga: no .wgsl file in {tmp_path}" in result.stdout
