"""wk.field / wk.ndarray host API: shapes, dtypes, grads, numpy round trips, indexing, generations, DLPack,
stale handles after wk.reset(). Runs on the fake backend (host-view and device-like) and every real arch."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.errors import ShapeError


def test_scalar_field_attributes(fake_program):
    x = wk.field(wk.f32, shape=16, needs_grad=True, name="x")
    assert x.shape == (16,) and x.dtype == wk.f32 and x.is_field
    assert x.element_shape == () and x.element_type is None
    assert x.grad is not None and x.grad.shape == (16,) and x.grad.name == "x.grad"
    assert x.dual is None
    assert np.array_equal(x.to_numpy(), np.zeros(16, np.float32))
    assert x.to_numpy().dtype == np.float32


def test_vector_and_matrix_fields(fake_program):
    v = wk.field(wk.types.vector(3, wk.f32), shape=(4, 5))
    assert v.shape == (4, 5) and v.element_shape == (3,) and v.n == 3
    assert v.to_numpy().shape == (4, 5, 3)
    m = wk.Matrix.field(2, 3, wk.f64, shape=7)
    assert m.to_numpy().shape == (7, 2, 3) and m.to_numpy().dtype == np.float64
    w = wk.Vector.field(2, wk.i32, shape=3)
    w[1] = (5, 6)
    assert isinstance(w[1], np.ndarray) and w[1].tolist() == [5, 6]
    assert w[1, 1] == 6
    w[2, 0] = 9
    assert w.to_numpy().tolist() == [[0, 0], [5, 6], [9, 0]]


@pytest.mark.parametrize("dtype", [wk.f32, wk.f64, wk.i8, wk.i16, wk.i32, wk.i64, wk.u8, wk.u16, wk.u32,
                                   wk.u64, wk.u1])
def test_numpy_round_trip_every_dtype(fake_program, dtype):
    a = wk.field(dtype, shape=(3, 4))
    rng = np.random.default_rng(1)
    data = (rng.random((3, 4)) * 100).astype(dtype.np_dtype)
    a.from_numpy(data)
    out = a.to_numpy()
    assert out.dtype == dtype.np_dtype
    assert np.array_equal(out, data)
    assert a[2, 3] == data[2, 3].item()
    assert type(a[0, 0]) is type(data[0, 0].item())


def test_zero_d_field(fake_program):
    y = wk.field(wk.f32, shape=())
    assert y.shape == ()
    y[None] = 2.5
    assert y[None] == 2.5
    y.fill(1.5)
    assert y[None] == 1.5
    y.from_numpy(np.array(4.0))
    assert y.to_numpy() == 4.0
    assert y.to_numpy().shape == ()
    with pytest.raises(IndexError):
        y[0]
    x = wk.field(wk.f32, shape=3)
    with pytest.raises(IndexError, match="index it with 1"):
        x[None]


def test_indexing_errors(fake_program):
    x = wk.field(wk.i32, shape=(2, 3), name="grid")
    with pytest.raises(IndexError, match="out of range"):
        x[2, 0]
    with pytest.raises(IndexError):
        x[-1, 0]
    with pytest.raises(IndexError):
        x[0]
    with pytest.raises(IndexError, match="not an integer"):
        x[0, 1:2]
    x[np.int64(1), np.int32(2)] = 7
    assert x[1, 2] == 7


def test_fill_copy_from_and_shape_checks(fake_program):
    a = wk.field(wk.f32, shape=5)
    b = wk.field(wk.f32, shape=5)
    a.fill(3)
    assert a.to_numpy().tolist() == [3.0] * 5
    b.copy_from(a)
    assert b.to_numpy().tolist() == [3.0] * 5
    with pytest.raises(ValueError, match="shape"):
        a.from_numpy(np.zeros(4))
    with pytest.raises(ValueError):
        b.copy_from(wk.field(wk.f32, shape=4))
    v = wk.Vector.field(3, wk.f32, shape=2)
    v.fill((1, 2, 3))
    assert v.to_numpy().tolist() == [[1, 2, 3], [1, 2, 3]]
    with pytest.raises(TypeError, match="field 'a'.fill\\(\\) takes a number \\(or one element\\), not str 'abc'"):
        a.fill("abc")


def test_from_numpy_casts(fake_program):
    a = wk.field(wk.i32, shape=3)
    a.from_numpy(np.array([1.9, -2.5, 3.0]))
    assert a.to_numpy().tolist() == [1, -2, 3]
    a.from_numpy([4, 5, 6])
    assert a.to_numpy().tolist() == [4, 5, 6]
    b = wk.field(wk.u1, shape=3)
    b.from_numpy([0, 2, 1])
    assert b.to_numpy().tolist() == [False, True, True]
    assert b[1] is True


def test_to_numpy_is_a_copy(fake_program):
    a = wk.field(wk.f32, shape=3)
    out = a.to_numpy()
    out[:] = 7
    assert a.to_numpy().tolist() == [0, 0, 0]


def test_generation_bumped_by_every_host_write(fake_program):
    a = wk.field(wk.f32, shape=4)
    b = wk.field(wk.f32, shape=4)
    seen = [a.generation]
    for write in (lambda: a.from_numpy(np.ones(4)), lambda: a.fill(2), lambda: a.copy_from(b),
                  lambda: a.__setitem__(1, 5.0)):
        write()
        assert a.generation > seen[-1]
        seen.append(a.generation)
    before = a.generation
    a.to_numpy()
    a[0]
    assert a.generation == before
    assert b.generation == 0


def test_ndarray_host_api(fake_program):
    arr = wk.ndarray(wk.f32, shape=(2, 3), needs_grad=True)
    assert not arr.is_field and arr.grad is not None and not arr.grad.is_field
    arr.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert arr[1, 2] == 5.0
    arr[0, 0] = -1
    assert arr.to_numpy()[0, 0] == -1
    vec = wk.ndarray(wk.types.vector(2, wk.i32), shape=4)
    assert vec.shape == (4,) and vec.to_numpy().shape == (4, 2)


def test_needs_grad_requires_float(fake_program):
    with pytest.raises(TypeError, match="float"):
        wk.field(wk.i32, shape=3, needs_grad=True)


@pytest.mark.parametrize("option", ["needs_grad", "needs_dual"])
def test_gradient_of_integer_dtype_is_refused(arch, option):
    """Scalar, vector and matrix integer dtypes; the error is a TypeError and, as Quadrants raises, a
    RuntimeError, with Quadrants' key phrase and the field's name."""
    for dtype in (int, wk.math.ivec3, wk.types.matrix(2, 3, int)):
        with pytest.raises(RuntimeError, match=rf"field 'grads': dtype .* is not supported for field with "
                                               rf"`needs_grad=True` or `needs_dual=True`: gradients need a float"):
            grads = wk.field(dtype, shape=1, **{option: True})  # noqa: F841 - named for the message
    with pytest.raises(TypeError, match="is not supported for field with"):
        wk.field(wk.u8, shape=2, **{option: True})
    assert wk.field(wk.f32, shape=2, **{option: True}).shape == (2,)


@pytest.mark.parametrize("make", [wk.field, wk.ndarray])
def test_a_shape_that_is_not_one_names_itself(arch, make):
    """Not ints, a negative extent, or more than 2^31-1 elements: a ShapeError (a WkError and a ValueError) with
    Quadrants' phrase; an extent of 0 gives an empty container."""
    kind = make.__name__
    for shape, why in ((1.5, "shape must be an int or a tuple of ints"),
                       ((1, 0.5), "shape must be an int or a tuple of ints"),
                       ((2, -1), "an extent is negative")):
        with pytest.raises(ShapeError, match=rf"is not a valid shape for {kind}: {why}"):
            make(wk.i32, shape=shape)
    for shape in (2**31, (1, 2**31)):
        # a device whose largest buffer is smaller than the request refuses it first (containers ask the device
        # before checking the element count): lavapipe's limit is 2^31-1 bytes
        with pytest.raises((ShapeError, wk.OutOfMemoryError),
                           match=rf"is not a valid shape for {kind} '.*': it has 2147483648 elements; at most "
                                 r"2\^31-1 are supported|exceeds this device's max_buffer_size") as caught:
            make(wk.u8, shape=shape)
        assert arch != wk.cpu or isinstance(caught.value, ShapeError)
    with pytest.raises(ValueError, match=rf"\(3, -2\) is not a valid shape for {kind}"):
        make(wk.i32, shape=(3, -2))
    assert make(wk.i32, shape=(1, 0)).to_numpy().shape == (1, 0)


def test_bad_shapes_and_dtypes(fake_program):
    with pytest.raises(ValueError):
        wk.field(wk.f32, shape=-1)
    with pytest.raises(ValueError):
        wk.field(wk.f32, shape=(2, -1))
    assert wk.field(wk.f32, shape=None).shape == ()          # declared without a shape: placed later
    with pytest.raises(TypeError):
        wk.field("not a dtype", shape=3)
    assert wk.field(float, shape=2).dtype == wk.f32
    assert wk.field(np.int64, shape=2).dtype == wk.i64
    empty = wk.field(wk.f32, shape=0)
    assert empty.to_numpy().shape == (0,)


def test_stale_container_after_reset(fake_program):
    a = wk.field(wk.f32, shape=3, name="old")
    wk.reset()
    with pytest.raises(wk.ArgumentError, match="old"):
        a.to_numpy()
    with pytest.raises(wk.ArgumentError):
        a[0] = 1.0


def test_dlpack_only_with_host_view(fake_program):
    a = wk.field(wk.f32, shape=4)
    a.fill(1.5)
    if fake_program.backend.host_views:
        before = a.generation
        view = np.from_dlpack(a)
        assert view.tolist() == [1.5] * 4
        assert a.dlpack_live and a.generation > before
        view[0] = 9            # zero-copy: the container sees it
        assert a[0] == 9.0
        del view
        assert not a.dlpack_live
    else:
        with pytest.raises(BufferError):
            a.__dlpack__()


def test_buffers_freed_on_gc_and_reset(fake_program):
    backend = fake_program.backend
    a = wk.field(wk.f32, shape=8)
    live = len(backend.live)
    del a
    import gc
    gc.collect()
    assert len(backend.live) == live - 1
    wk.field(wk.f32, shape=8)
    wk.reset()
    assert backend.shut


def test_real_arch_round_trip(arch):
    v = wk.Vector.field(3, wk.f32, shape=(5,), needs_grad=True)
    data = np.arange(15, dtype=np.float32).reshape(5, 3)
    v.from_numpy(data)
    assert np.array_equal(v.to_numpy(), data)
    assert v[4].tolist() == [12, 13, 14]
    v[0] = 1
    assert v[0].tolist() == [1, 1, 1]
    b = wk.field(wk.u8, shape=3)
    b.from_numpy(np.array([1, 255, 7], np.uint8))
    assert b.to_numpy().tolist() == [1, 255, 7] and b[1] == 255
    z = wk.ndarray(wk.i16, shape=(2, 2))
    z.fill(-3)
    assert z.to_numpy().tolist() == [[-3, -3], [-3, -3]]
    assert v.grad.to_numpy().sum() == 0


def test_names_come_from_the_assignment(fake_program):
    temperature = wk.field(wk.f32, shape=3, needs_grad=True)
    assert temperature.name == "temperature" and temperature.grad.name == "temperature.grad"
    pair = (wk.field(wk.f32, shape=1), wk.ndarray(wk.f32, shape=1))
    assert pair[0].name.startswith("field") and pair[1].name.startswith("ndarray")
    assert wk.field(wk.f32, shape=1, name="given").name == "given"
    x = wk.field(wk.f32, shape=2); n = wk.field(wk.i32, shape=2)  # noqa: E702 - two statements on one line
    assert (x.name, n.name) == ("x", "n")


def test_fields_made_by_a_lambda_factory_take_the_callers_name(fake_program):
    """difftaichi declares `scalar = lambda: ti.field(dtype=real)` and then `loss = scalar()`; messages (a host
    index outside a field, for one) name 'loss', not a generated name."""
    scalar = lambda: wk.field(dtype=wk.f32)                 # noqa: E731 - the idiom under test
    vec = lambda: wk.Vector.field(2, dtype=wk.f32, shape=3)  # noqa: E731
    loss = scalar()
    velocity = vec()  # a trailing comment
    pair = (scalar(), vec())
    x, v = vec(), vec()
    assert (loss.name, velocity.name, loss.grad.name) == ("loss", "velocity", "loss.grad")
    assert all(f.name.startswith("field") for f in (*pair, x, v))       # not a single assignment: generated
    with pytest.raises(wk.BoundsCheckError, match="axis 0 of field 'velocity' \\(extent 3\\)"):
        velocity[5]


def test_vector_and_matrix_ndarrays(arch):
    a = wk.Vector.ndarray(3, wk.f32, shape=4)
    m = wk.Matrix.ndarray(2, 2, wk.f32, shape=2, needs_grad=True)
    assert a.shape == (4,) and a.to_numpy().shape == (4, 3) and m.grad is not None

    @wk.kernel
    def fill(a: wk.types.ndarray(), m: wk.types.ndarray()):
        for i in a:
            a[i] = wk.Vector([i, 2 * i, 3 * i])
        for i in m:
            m[i] = wk.Matrix.identity(wk.f32, 2) * i

    fill(a, m)
    np.testing.assert_array_equal(a.to_numpy()[3], [3, 6, 9])
    np.testing.assert_array_equal(m.to_numpy()[1], np.eye(2))


def test_fields_with_an_index_offset(arch):
    c = wk.field(wk.f32, shape=(4, 3), offset=(-2, -1), needs_grad=True)
    v = wk.Vector.field(2, wk.f32, shape=5, offset=10)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def fill():
        for i, j in c:                        # loops run over the offset indices
            c[i, j] = i * 10 + j
        for I in wk.grouped(v):
            v[I] = wk.Vector([I[0], 1.0])
        c[-2, -1] += v[14].x

    @wk.kernel
    def energy():
        for i, j in c:
            loss[None] += c[i, j] ** 2

    fill()
    i, j = np.meshgrid(np.arange(-2, 2), np.arange(-1, 2), indexing="ij")
    want = (i * 10 + j).astype(np.float32)
    want[0, 0] += 14
    np.testing.assert_array_equal(c.to_numpy(), want)      # to_numpy starts at element 0
    assert c[1, 1] == 11.0 and v[12].tolist() == [12.0, 1.0]
    c[0, 0] = 5.0
    with pytest.raises(IndexError, match="index 2 out of range for axis 0 of field 'c' \\(indices -2 to 1\\)"):
        c[2, 0]
    # also the AssertionError Quadrants' test_debug expects of host accesses out of bounds, reading or writing
    for bad in ((-3, 0), (0, 2)):
        with pytest.raises(AssertionError, match="out of range") as info:
            c[bad] = 1.0
        assert isinstance(info.value, wk.BoundsCheckError)
        with pytest.raises(AssertionError, match="out of range"):
            c[bad]
    with wk.ad.Tape(loss=loss):
        energy()
    assert c.grad[0, 0] == 10.0 and c.grad.to_numpy()[2, 1] == 10.0
    with pytest.raises(ValueError, match="one integer per axis"):
        wk.field(wk.f32, shape=(4, 3), offset=(1,))
    # also Quadrants' compile error, with its phrases
    with pytest.raises(wk.CompileError, match="The dimensionality of shape and offset must be the same"):
        wk.Matrix.field(3, 3, wk.i32, shape=(32, 16, 8), offset=(32, 16))
    with pytest.raises(wk.CompileError, match="shape cannot be None when offset is set"):
        wk.Vector.field(3, wk.f32, shape=None, offset=(3,))


def test_grad_of_a_field_placed_later(arch):
    """A float field declared without a shape has a `.grad`, as in Taichi: placed explicitly with the field,
    by `lazy_grad()`, or (used by a `.grad` launch first) taking the field's shape then."""
    x, y = wk.field(wk.f32), wk.field(wk.f32)
    wk.root.dense(wk.i, 4).place(x, x.grad, y, y.grad)

    @wk.kernel
    def square():
        for i in x:
            y[i] = x[i] ** 2

    x.from_numpy(np.arange(4, dtype=np.float32))
    square()
    y.grad.fill(1)
    square.grad()
    assert x.grad.to_numpy().tolist() == [0.0, 2.0, 4.0, 6.0]
    v, loss, w = wk.Vector.field(2, dtype=wk.f32), wk.field(wk.f32), wk.field(wk.f32)
    wk.root.dense(wk.i, 3).place(v, w)
    wk.root.place(loss)
    shaped = wk.field(wk.f32, shape=5)
    wk.root.lazy_grad()           # as in Taichi: every float field, made before or after, has a .grad
    assert v.grad.shape == (3,) and loss.grad.shape == () and shaped.grad.shape == (5,)

    @wk.kernel
    def energy():
        for i in v:
            loss[None] += v[i].norm_sqr() + w[i]

    v.from_numpy(np.arange(6, dtype=np.float32).reshape(3, 2))
    with wk.ad.Tape(loss=loss):
        energy()
    assert loss[None] == 55.0 and v.grad.to_numpy().ravel().tolist() == [0, 2, 4, 6, 8, 10]
    assert w.grad.to_numpy().tolist() == [1.0, 1.0, 1.0]
    assert wk.field(wk.i32).grad is None and wk.field(wk.f32, shape=3).grad.shape == (3,)
    assert wk.field(wk.i32, shape=3).grad is None


def test_print_shows_values_like_taichi(fake_program, capsys):
    x = wk.field(wk.f32, shape=3)
    x.from_numpy(np.array([1.0, 2.5, -3.0], np.float32))
    v = wk.Vector.field(2, wk.i32, shape=2)
    s = wk.Struct.field({"a": wk.f32}, shape=2)
    print(x)
    print(v)
    print(s)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == str(np.array([1.0, 2.5, -3.0], np.float32))
    assert out[1:3] == str(np.zeros((2, 2), np.int32)).splitlines()
    assert out[3].startswith("{'a': array([0., 0.]")
    assert repr(x).startswith("<wk.field ")        # repr still names the container


def test_to_numpy_keep_dims_as_taichi(fake_program):
    """keep_dims=True: a vector element keeps its column axis; without it a one-column matrix loses it. Either
    layout goes back in through from_numpy."""
    v = wk.Vector.field(3, wk.f32, shape=(2, 2))
    m = wk.Matrix.field(2, 1, wk.f32, shape=3)
    x = wk.field(wk.f32, shape=3)
    assert v.to_numpy(keep_dims=True).shape == (2, 2, 3, 1) and v.to_numpy().shape == (2, 2, 3)
    assert m.to_numpy(keep_dims=True).shape == (3, 2, 1) and m.to_numpy().shape == (3, 2)
    assert x.to_numpy(keep_dims=True).shape == (3,)
    m.from_numpy(np.arange(6, dtype=np.float32).reshape(3, 2))
    v.from_numpy(np.ones((2, 2, 3, 1), np.float32))
    assert m[1, 1, 0] == 3.0 and v.to_numpy().sum() == 12.0


def test_numpy_integers_index_fields(fake_program):
    x = wk.field(wk.f32, shape=5)
    x[np.int64(1)] = 3.0
    assert x[np.argmax(x.to_numpy())] == 3.0 and x[np.int32(1)] == 3.0


def test_vector_field_m_and_copy_from_other_dtype(fake_program):
    assert wk.Vector.field(3, wk.f32, shape=2).m == 1          # as in Taichi: a vector is one column
    assert wk.Matrix.field(2, 3, wk.f32, shape=2).m == 3
    assert wk.field(wk.f32, shape=2).m is None
    counts = wk.field(wk.i32, shape=(2, 3))
    counts.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3))
    weights = wk.field(wk.f32, shape=(2, 3))
    weights.copy_from(counts)                                  # converts, as Taichi's copy_from does
    assert weights.to_numpy().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    with pytest.raises(ValueError):
        weights.copy_from(wk.field(wk.i32, shape=(3, 2)))


def test_lazy_dual_gives_every_float_field_a_dual(arch):
    x = wk.field(wk.f32)
    y = wk.field(wk.f32)
    n = wk.field(wk.i32)
    wk.root.dense(wk.i, 4).place(x, y, n)
    wk.root.lazy_dual()
    later = wk.field(wk.f32, shape=4)
    assert x.dual is not None and y.dual is not None and later.dual is not None and n.dual is None

    @wk.kernel
    def square():
        for i in x:
            y[i] = x[i] * x[i]

    x.from_numpy(np.arange(4, dtype=np.float32))
    with wk.ad.FwdMode(loss=y, param=x, seed=[1.0, 1.0, 1.0, 1.0]):
        square()
    assert y.dual.to_numpy().tolist() == [0.0, 2.0, 4.0, 6.0]


def test_host_integer_writes_wrap_to_the_dtype(arch):
    # Taichi stores -128 into a u8 as 128 (host indexing, fill and from_numpy alike); a wider storage type
    # on the device must not keep the sign bits, or a kernel's cast to i32 reads -128.
    a = wk.field(wk.u8, shape=3)
    out = wk.field(wk.i32, shape=3)

    @wk.kernel
    def widen():
        for i in range(3):
            out[i] = wk.cast(a[i], wk.i32)

    a[0] = -128
    a.from_numpy(np.array([-128, -1, 300]))
    a[0] = -128
    widen()
    assert out.to_numpy().tolist() == [128, 255, 44]
    a.fill(-2)
    widen()
    assert out.to_numpy().tolist() == [254, 254, 254]


def test_vector_from_numpy_takes_column_and_row_layouts(arch):
    # Quadrants' test_numpy_io: a vector field takes (..., n), (..., n, 1) and (..., 1, n) arrays.
    vec = wk.Vector.field(3, wk.i32, shape=(2, 4))
    for shape in [(2, 4, 3), (2, 4, 3, 1), (2, 4, 1, 3)]:
        data = np.arange(24, dtype=np.int32).reshape(shape)
        vec.from_numpy(data)
        assert np.array_equal(vec.to_numpy(), data.reshape(2, 4, 3))
    with pytest.raises(ValueError, match="shape"):
        vec.from_numpy(np.zeros((2, 4, 3, 2), np.int32))


def test_has_grad_has_dual_and_to_dlpack(arch):
    # Taichi's container properties (Quadrants' test_api lists them on every field and ndarray class).
    x = wk.field(wk.f32, shape=4, needs_grad=True, needs_dual=True)
    y = wk.ndarray(wk.f32, shape=3)
    assert x.has_grad and x.has_dual and not y.has_grad and not y.has_dual
    assert x.has_grad() and x.has_dual() and not y.has_grad() and not y.has_dual()     # Quadrants calls them
    x.fill(2.0)
    if arch == wk.cpu:
        assert type(x.to_dlpack()).__name__ == "PyCapsule"


def test_fields_stay_usable_in_exit_hooks(arch, tmp_path):
    """A program's atexit handler registered before its fields exist runs after Python's weakref finalizers:
    reading a field there must still work (on Vulkan a freed buffer under pending work aborted the process)."""
    import subprocess
    import sys
    script = tmp_path / "exit_hook.py"
    script.write_text(
        "import atexit\n"
        "import wgkern as wk\n"
        "atexit.register(lambda: print('at exit', y.to_numpy().tolist()))\n"
        f"wk.init(arch=wk.{arch.value})\n"
        "y = wk.field(wk.f32, shape=4)\n"
        "@wk.kernel\n"
        "def k():\n"
        "    for i in y:\n"
        "        y[i] = i * 2\n"
        "k()\n")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "at exit [0.0, 2.0, 4.0, 6.0]" in result.stdout
