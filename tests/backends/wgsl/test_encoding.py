"""The batch recorder (backends/wgsl/encoding.py): its direct wgpu-native calls give the results of wgpu-py's
public API, a batch wgpu rejects raises DeviceCommandError naming its kernels, and the backend stays usable."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.wgsl.encoding import NativeCommands, PublicCommands, command_recorder

RECORDERS = [NativeCommands, PublicCommands]


@pytest.fixture
def backend():
    try:
        wk.init(arch=wk.vulkan, offline_cache=False)
    except wk.ArchUnavailableError as exc:
        pytest.skip(str(exc))
    yield wk.runtime.program.current().backend
    wk.reset()


def _use(backend, recorder: type) -> None:
    backend.flush()
    if recorder is NativeCommands and not isinstance(command_recorder(backend.device), NativeCommands):
        pytest.skip("this wgpu-py has no native call path")
    backend.commands = recorder(backend.device)


@pytest.mark.parametrize("recorder", RECORDERS, ids=["native", "public"])
def test_launches_copies_and_timers_give_the_same_results(backend, recorder) -> None:
    """Launches, a host write to a container with pending work (a copy between passes), a device copy, a
    read-back and a timed block, each through one recorder: every value as computed on the host."""
    _use(backend, recorder)
    x = wk.field(wk.f32, shape=1000)
    y = wk.field(wk.f32, shape=1000)

    @wk.kernel
    def axpy(a: wk.f32):
        for i in x:
            y[i] = a * x[i] + y[i]

    values = np.linspace(-1.0, 1.0, 1000, dtype=np.float32)
    x.from_numpy(values)
    y.fill(0.0)
    expected = np.zeros(1000, np.float32)
    for a in (1.0, 2.0, -0.5):
        axpy(a)
        expected = np.float32(a) * values + expected
    x.from_numpy(values * 2)                 # x has pending launches: copied in order after them
    axpy(1.0)
    expected = values * 2 + expected
    y.copy_from(x)
    axpy(3.0)
    expected = np.float32(3.0) * (values * 2) + values * 2
    np.testing.assert_array_equal(y.to_numpy(), expected)
    if backend.supports_gpu_timer:
        with backend.gpu_timer() as elapsed:
            axpy(1.0)
        assert elapsed.seconds > 0 and elapsed.passes == 1
        np.testing.assert_array_equal(y.to_numpy(), expected + values * 2)


@pytest.mark.parametrize("recorder", RECORDERS, ids=["native", "public"])
def test_a_rejected_dispatch_names_its_kernel_and_the_backend_stays_usable(backend, recorder) -> None:
    _use(backend, recorder)
    z = wk.field(wk.f32, shape=4)

    @wk.kernel
    def too_wide():
        for i in z:
            z[i] += 1.0

    @wk.kernel
    def fine():
        for i in z:
            z[i] += 10.0

    too_wide()
    fine()
    wk.sync()
    (task,) = too_wide.last_compiled.compiled.tasks
    sizer = task.groups
    task.groups = lambda scalars, shapes: (70000, 1, True)     # past the 65535 workgroups a dimension allows
    fine()
    too_wide()
    with pytest.raises(wk.DeviceCommandError, match=r"(?s)2 launches .*kernels: 'fine', 'too_wide'.*did not run.*65535"):
        wk.sync()
    task.groups = sizer
    np.testing.assert_array_equal(z.to_numpy(), np.full(4, 11.0, np.float32))    # the rejected batch did not run
    too_wide()
    fine()
    np.testing.assert_array_equal(z.to_numpy(), np.full(4, 22.0, np.float32))
    wk.sync()                                            # nothing left to report


def test_the_backend_records_through_wgpu_native_where_wgpu_py_allows_it(backend) -> None:
    from wgpu.backends.wgpu_native import _api
    assert hasattr(_api.lib, "wgpuCommandEncoderFinish")     # wgpu-py 0.32's binding has the native calls
    assert isinstance(backend.commands, NativeCommands)


def test_wgpu_py_internals_that_differ_select_the_public_api(backend, monkeypatch) -> None:
    from wgpu.backends.wgpu_native import _api
    real_new = _api.ffi.new

    def new_without(ctype, *args):
        if ctype == "WGPUPassTimestampWrites *":
            return real_new("WGPUNoSuchStruct *")          # the CDefError of a header without the type
        return real_new(ctype, *args)
    monkeypatch.setattr(_api.ffi, "new", new_without)
    assert type(command_recorder(backend.device)) is PublicCommands

    class Device:                                  # a device object without wgpu-py's native handle
        queue = backend.device.queue
    assert type(command_recorder(Device())) is PublicCommands
