"""wk.init(webgpu_profile="baseline") (backends/wgsl/adapters.py): a wgpu device with WebGPU's default limits and
no optional feature, so what runs under it runs on Metal, D3D12 and in browsers; what needs more raises
DeviceFeatureError naming the feature. Also the shaders' spelling of infinities (never a constant expression,
which WGSL compilers other than naga reject) and WK_DUMP_WGSL."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.wgsl import adapters


def test_the_device_has_webgpus_default_limits_and_no_optional_feature(baseline):
    from wgkern.runtime.program import get_program
    backend = get_program().backend
    limits = backend.device.limits
    compute = ("max-storage-buffer-binding-size", "max-buffer-size", "max-storage-buffers-per-shader-stage",
               "max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup",
               "max-compute-workgroup-size-x", "max-compute-workgroups-per-dimension",
               "max-dynamic-storage-buffers-per-pipeline-layout", "max-uniform-buffer-binding-size",
               "min-storage-buffer-offset-alignment", "max-bind-groups")
    for name in compute:
        assert int(limits[name]) == adapters.WEBGPU_DEFAULT_LIMITS[name], name
    assert backend.max_binding == 128 * 2**20 and backend.max_workgroup_size == 256
    assert not {"shader-f64", "shader-int64", "shader-f16", "shader-float32-atomic", "subgroup"} & set(
        str(f) for f in backend.device.features)


def test_f32_work_runs_and_f32_atomics_fall_back_to_compare_exchange(baseline):
    x = wk.field(wk.f32, shape=1000)
    total = wk.field(wk.f32, shape=())

    @wk.kernel
    def fill_and_sum():
        for i in x:
            x[i] = wk.sqrt(float(i))
            total[None] += 1.0

    fill_and_sum()
    np.testing.assert_allclose(x.to_numpy(), np.sqrt(np.arange(1000, dtype=np.float32)), rtol=2**-23)
    assert total[None] == 1000.0          # integers below 2^24 add exactly in f32


@pytest.mark.parametrize("dtype, feature", [(wk.f64, "shader-f64"), (wk.i64, "shader-int64"),
                                            (wk.f16, "shader-f16")])
def test_a_container_of_a_missing_dtype_names_the_feature(baseline, dtype, feature):
    with pytest.raises(wk.DeviceFeatureError, match=f"needs the device feature\\(s\\) {feature}") as caught:
        wk.field(dtype, shape=4)
    assert caught.value.features == (feature,)


def test_a_kernel_using_f64_names_the_feature_and_the_line(baseline):
    out = wk.field(wk.f32, shape=4)

    @wk.kernel
    def widen():
        for i in out:
            out[i] = wk.f32(wk.f64(i) * 0.5)

    with pytest.raises(wk.DeviceFeatureError, match="f64 needs the device feature 'shader-f64'") as caught:
        widen()
    assert caught.value.lineno is not None


def test_subgroup_operations_name_the_feature(baseline):
    out = wk.field(wk.i32, shape=64)

    @wk.kernel
    def reduce():
        wk.loop_config(block_dim=64)
        for i in out:
            out[i] = wk.simt.subgroup.reduce_add(1)

    with pytest.raises(wk.DeviceFeatureError, match="needs the device feature 'subgroup'"):
        reduce()


def test_a_block_larger_than_the_profile_allows_names_the_limit(baseline):
    out = wk.field(wk.i32, shape=1024)

    @wk.kernel
    def big_block():
        wk.loop_config(block_dim=512)
        for i in out:
            out[i] = i

    with pytest.raises(wk.DeviceFeatureError, match="block_dim=512 is more than the 256 invocations") as caught:
        big_block()
    assert caught.value.features == ("max-compute-invocations-per-workgroup",)


def test_bad_profiles_are_refused():
    with pytest.raises(ValueError, match="webgpu_profile='web': expected None or one of 'baseline'"):
        wk.init(arch=wk.cpu, webgpu_profile="web")
    with pytest.raises(ValueError, match="webgpu_profile='baseline' restricts a wgpu device; wk.init selected cpu"):
        wk.init(arch=wk.cpu, webgpu_profile="baseline")
    wk.reset()


def test_the_environment_variable_sets_the_profile_of_wgsl_devices_only(baseline):
    script = ("import wgkern as wk; from wgkern.runtime.program import get_program\n"
              "wk.init(arch=wk.vulkan); print(get_program().backend.webgpu_profile)\n"
              "wk.init(arch=wk.cpu); print('cpu ok')\n")
    env = dict(os.environ, WK_WEBGPU_PROFILE="baseline")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["baseline", "cpu", "ok"]


def test_infinities_are_built_at_run_time_and_shaders_are_dumped(baseline, tmp_path, monkeypatch):
    monkeypatch.setenv("WK_DUMP_WGSL", str(tmp_path))
    x = wk.field(wk.f32, shape=3)

    @wk.kernel
    def specials():
        x[0] = math.inf
        x[1] = -math.inf
        x[2] = wk.min(x[0], 1.0)

    specials()
    assert list(x.to_numpy()) == [np.inf, -np.inf, 1.0]
    shaders = [p.read_text() for p in tmp_path.glob("wgsl-*.wgsl")]
    assert any("kernel 'specials'" in text for text in shaders)
    for text in shaders:
        # a constant expression with a non-finite value is an error in WGSL (Tint rejects it)
        assert "bitcast<f32>(0x7f800000u)" not in text and "bitcast<f32>(0xff800000u)" not in text
    assert any("wk_f32_bits(0x7f800000u)" in text for text in shaders)
