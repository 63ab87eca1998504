"""wk.field / wk.ndarray conversions on the host: to_torch / from_torch (through a stand-in for torch), numpy
conversion and Python iteration, requests no memory can meet, host indices of the wrong length. Runs on every
real arch."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


class _StubTensor:
    """Just the torch.Tensor surface that to_torch / from_torch use (torch itself is not a test dependency)."""

    def __init__(self, array: np.ndarray, device: str = "cpu"):
        self.array, self.device = array, device

    def to(self, device: str) -> _StubTensor:
        return _StubTensor(self.array, device)

    def detach(self) -> _StubTensor:
        return self

    def cpu(self) -> _StubTensor:
        return _StubTensor(self.array, "cpu")

    def numpy(self) -> np.ndarray:
        return self.array


def test_to_torch_and_from_torch(arch, monkeypatch):
    import sys
    import types
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(from_numpy=_StubTensor))
    v = wk.Vector.field(2, wk.f32, shape=3)
    v.from_numpy(np.arange(6, dtype=np.float32).reshape(3, 2))
    t = v.to_torch(device="cuda:0")
    assert t.device == "cuda:0" and t.array.shape == (3, 2) and t.array[2, 1] == 5.0
    a = wk.ndarray(wk.i32, shape=4)
    a.from_torch(_StubTensor(np.array([4, 3, 2, 1]), "cuda:0"))
    assert list(a.to_numpy()) == [4, 3, 2, 1] and a.to_torch().device == "cpu"
    s = wk.Struct.field({"m": wk.f32, "p": wk.math.vec2}, shape=2)
    s.from_torch({"m": _StubTensor(np.array([1.0, 2.0])), "p": _StubTensor(np.ones((2, 2)))})
    out = s.to_torch()
    assert list(out["m"].array) == [1.0, 2.0] and out["p"].array.sum() == 4.0


def test_to_torch_without_torch_says_what_to_install(arch, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "torch", None)          # an import of torch now raises ImportError
    v = wk.field(wk.f32, shape=3)
    with pytest.raises(wk.WkError, match=r"field 'v'\.to_torch\(\) needs PyTorch \(pip install torch"):
        v.to_torch()


def test_numpy_conversion_and_python_iteration(arch):
    # np.asarray(x) is x.to_numpy() for any number of axes; Python iteration covers 1-D containers only (a 2-D
    # field used to iterate as empty)
    y = wk.field(wk.i32, shape=(2, 3))
    y[1, 2] = 7
    np.testing.assert_array_equal(np.asarray(y), y.to_numpy())
    assert np.array(wk.Vector.field(2, wk.f32, shape=4), dtype=np.float64).shape == (4, 2)
    a = wk.ndarray(wk.f32, shape=3)
    a[1] = 2.5
    assert list(a) == [0.0, 2.5, 0.0]
    with pytest.raises(TypeError, match=r"of shape \(2, 3\): Python iteration goes over the elements of a 1-D"):
        list(y)


def test_a_request_no_memory_can_meet_is_an_out_of_memory_error(arch):
    """A field or ndarray of 10^13 bytes is refused as wk.OutOfMemoryError naming it, its shape and its bytes
    (not a numpy MemoryError, an overcommitted buffer that kills the process when touched, or the element-count
    limit), and the program keeps working. On the CPU the limit is the host's memory (RAM + swap, or the
    cgroup's limit), held containers included; on WGSL the device's binding size."""
    with pytest.raises(wk.OutOfMemoryError, match=r"field 'huge' of shape \(1000000, 2500000\) "
                                                  r"\(10000000000000 bytes\)"):
        wk.field(wk.f32, shape=(10 ** 6, 2_500_000), name="huge")
    with pytest.raises(wk.OutOfMemoryError, match=r"ndarray 'grid' of shape \(100000, 100000, 250\) "
                                                  r"\(10000000000000 bytes\)"):
        wk.ndarray(wk.types.vector(250, wk.f32), shape=(10 ** 5, 10 ** 5), name="grid")
    if arch == wk.cpu:
        from wgkern.backends.llvm.host_memory import host_memory
        limit = host_memory().limit
        with pytest.raises(wk.OutOfMemoryError, match=f"'past_ram' .*would exceed .*{limit} bytes in all"):
            wk.field(wk.u8, shape=limit + 1, name="past_ram")
        # fields that each fit (their pages untouched) until together they would not: the one past it fails
        chunk = min(2 ** 31 - 1, limit // 16)                          # f64 elements
        held = []
        with pytest.raises(wk.OutOfMemoryError, match="'chunk' .* bytes already held by wgkern would exceed") \
                as info:
            for _ in range(limit // (8 * chunk) + 2):
                held.append(wk.field(wk.f64, shape=chunk, name="chunk"))
        assert f"with {8 * chunk * len(held)} bytes already held" in str(info.value)
        held.clear()
    small = wk.field(wk.f32, shape=4)
    small.fill(2.0)
    assert small.to_numpy().tolist() == [2.0] * 4


def test_host_indices_of_the_wrong_length_name_both_counts(arch):
    x = wk.ndarray(wk.f32, shape=(4, 4))
    with pytest.raises(wk.QuadrantsIndexError, match=r"ndarray 'x' of shape \(4, 4\) indexed with 1 indices "
                                                      r"\(2d ndarray indexed with 1d indices\)"):
        x[0]
    with pytest.raises(IndexError, match=r"2d ndarray indexed with 3d indices"):
        x[0, 0, 0]
