"""gpu_driver.py, the helpers cuda_driver and hip_driver share, without a GPU: libraries that are missing, functions
a library lacks, the per-ordinal bindings and their release, the probe that never raises, and the launch's `extra`
array read back from memory."""
from __future__ import annotations

import ctypes
import platform
import threading

import pytest

from wgkern.backends.llvm import gpu_driver
from wgkern.errors import OutOfMemoryError, WkError


class BindError(WkError):
    pass


def test_a_missing_library_is_named_with_the_loaders_reason():
    lib, reason = gpu_driver.open_library(["libwk-no-such-library.so.1", "libwk-neither.so"], "the X library was "
                                          "not found")
    assert lib is None
    assert reason.startswith("the X library was not found (") and "libwk-no-such-library.so.1" in reason
    assert "libwk-neither" not in reason                      # the first loader error only


def test_functions_get_their_c_types_and_a_missing_one_raises_by_name():
    lib = ctypes.pythonapi                                    # the interpreter's own C functions
    gpu_driver.type_functions(lib, {"Py_GetVersion": [], "Py_IsInitialized": []}, {"Py_GetVersion": ctypes.c_char_p},
                              lambda name: BindError(f"no {name}"))
    assert lib.Py_GetVersion().decode().startswith(platform.python_version())
    assert lib.Py_IsInitialized.restype is ctypes.c_int and lib.Py_IsInitialized() == 1
    with pytest.raises(BindError, match="^no wkNoSuchFunction$"):
        gpu_driver.type_functions(lib, {"wkNoSuchFunction": []}, {}, lambda name: BindError(f"no {name}"))


class Binding:
    def __init__(self, lib, ordinal):
        if ordinal > 1:
            raise BindError(f"no device {ordinal}")
        self.lib, self.ordinal, self.released = lib, ordinal, False
        self.info = f"device {ordinal}"


def test_one_binding_per_ordinal_until_released():
    drivers, lock, loads = {}, threading.Lock(), []

    def load():
        loads.append(1)
        return "the library", ""

    def driver(ordinal):
        return gpu_driver.bound_driver(drivers, lock, ordinal, load, Binding, BindError)

    first = driver(0)
    assert driver(0) is first and driver(1) is not first and len(loads) == 2
    first.released = True
    assert driver(0) is not first and drivers[0].lib == "the library" and len(loads) == 3
    assert gpu_driver.probe_device(driver, 1) == ("device 1", "")
    assert gpu_driver.probe_device(driver, 2) == (None, "no device 2")


def test_a_missing_library_raises_the_drivers_error_and_the_probe_says_why():
    def driver(ordinal):
        return gpu_driver.bound_driver({}, threading.Lock(), ordinal, lambda: (None, "no library here"), Binding,
                                       BindError)

    with pytest.raises(BindError, match="^no library here$"):
        driver(0)
    assert gpu_driver.probe_device(driver, 0) == (None, "no library here")

    def broken(ordinal):
        raise OSError("the library crashed")

    assert gpu_driver.probe_device(broken, 0) == (None, "OSError: the library crashed")


def test_out_of_memory_names_the_api_the_bytes_and_the_remedy():
    error = gpu_driver.out_of_memory("HIP", 1 << 31, 100, 1000)
    assert isinstance(error, OutOfMemoryError)
    assert str(error).startswith("HIP could not allocate 2147483648 bytes (100 of 1000 bytes free on the device). "
                                 "Remedy: release containers")


def test_the_launch_extra_array_points_at_the_argument_block_and_its_size():
    params = ctypes.create_string_buffer(b"\x01\x02\x03", 3)
    size = ctypes.c_size_t(3)
    extra = gpu_driver.launch_extra(params, size, (1, 2, 3))
    assert extra[0] == 1 and extra[2] == 2 and extra[4] == 3
    assert ctypes.string_at(extra[1], ctypes.c_size_t.from_address(extra[3]).value) == b"\x01\x02\x03"
    assert gpu_driver.launch_extra(params, size, (1, 2, 0))[4] is None      # CUDA's end marker is 0 (NULL)
