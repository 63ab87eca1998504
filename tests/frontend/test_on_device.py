"""The frontend's IR through the whole pipeline on every available arch (small kernels, numpy references)."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


@wk.func
def first_divisor(n) -> wk.i32:
    for d in range(2, n):
        if n % d == 0:
            return d
    return n


def test_funcs_loops_and_ints(arch):
    out = wk.field(wk.i32, shape=16)

    @wk.kernel
    def k(offset: wk.i32):
        for i in out:
            v = i + offset
            out[i] = first_divisor(v) * 100 + v // 3 - v % 4 + (v << 1) - (v >> 1)

    k(2)
    v = np.arange(16) + 2
    divisors = [next((d for d in range(2, n) if n % d == 0), n) for n in v]
    expected = np.array(divisors) * 100 + v // 3 - v % 4 + (v << 1) - (v >> 1)
    assert out.to_numpy().tolist() == expected.tolist()


def test_ndrange_vectors_and_reduction(arch):
    pos = wk.Vector.field(3, wk.f32, shape=(4, 5))

    @wk.kernel
    def fill(scale: wk.f32):
        for i, j in wk.ndrange(4, (0, 5)):
            pos[i, j] = wk.math.vec3(i, j, 1.0) * scale

    @wk.kernel
    def total() -> wk.f32:
        s = 0.0
        for i, j in pos:
            s += pos[i, j].dot(wk.math.vec3(1.0, 1.0, 1.0))
        return s

    fill(2.0)
    ii, jj = np.meshgrid(np.arange(4), np.arange(5), indexing="ij")
    expected = np.stack([ii, jj, np.ones_like(ii)], axis=-1) * 2.0
    assert np.allclose(pos.to_numpy(), expected)
    assert abs(total() - expected.sum()) < 1e-3


def test_while_static_and_select(arch):
    out = wk.field(wk.f32, shape=8)

    @wk.kernel
    def k(n: wk.i32):
        for i in out:
            steps = 0
            v = wk.cast(i, wk.f32)
            while v < n:
                v = v * 2.0 + 1.0
                steps += 1
            acc = 0.0
            for p in wk.static(range(1, 4)):
                acc += v ** p
            out[i] = wk.select(steps % 2 == 0, acc, -acc) if i > 0 else 0.0

    k(20)
    expected = []
    for i in range(8):
        v, steps = float(i), 0
        while v < 20:
            v, steps = v * 2 + 1, steps + 1
        acc = v + v ** 2 + v ** 3
        expected.append(0.0 if i == 0 else (acc if steps % 2 == 0 else -acc))
    assert np.allclose(out.to_numpy(), expected)


def test_ndarray_argument_and_atomics(arch):
    hist = wk.field(wk.i32, shape=4)

    @wk.kernel
    def k(a: wk.types.ndarray()):
        for i in a:
            hist[a[i] % 4] += 1
            wk.atomic_max(hist[3], 0)

    data = np.arange(10, dtype=np.int32)
    k(data)
    assert hist.to_numpy().tolist() == np.bincount(data % 4, minlength=4).tolist()


def test_grouped_loops_and_list_literals(arch):
    """Two Taichi idioms: `for I in wk.grouped(f)` and `v[i] = [a, b]`."""
    f = wk.field(wk.f32, shape=(6, 5))
    v = wk.Vector.field(2, wk.f32, shape=(6, 5))

    @wk.kernel
    def k():
        for I in wk.grouped(f):
            f[I] = I[0] * 10.0 + I[1]
            v[I] = [I.x, f[I] * 2]

    k()
    i, j = np.meshgrid(np.arange(6), np.arange(5), indexing="ij")
    np.testing.assert_array_equal(f.to_numpy(), i * 10.0 + j)
    np.testing.assert_array_equal(v.to_numpy(), np.stack([i, (i * 10.0 + j) * 2], axis=-1))


def test_grouped_over_a_zero_d_field_runs_once(arch):
    """As in Taichi: the index vector is empty and `x[I]` is `x[None]`; a plain `for i in x` stays an error."""
    x = wk.field(wk.f32, shape=())
    count = wk.field(wk.i32, shape=())

    @wk.kernel
    def k():
        for I in wk.grouped(x):
            x[I] += 2.0
            count[None] += 1

    k()
    k()
    assert x[None] == 4.0 and count[None] == 2


def test_operator_module_functions_in_kernels(arch):
    """`operator.add(a, b)` (a program passing `ops=operator.sub` around) applies the operator it names, to
    scalars, vectors and matrices."""
    import operator
    m = wk.Matrix([[1, 2], [3, 4]])
    out = wk.Matrix.field(2, 2, wk.i32, shape=4)
    s = wk.field(wk.f32, shape=2)

    @wk.kernel
    def run(ops: wk.template(), k: wk.i32):
        out[0] = ops(m, out[3])
        out[1] = operator.matmul(m, m)
        out[2] = operator.mul(m, k)
        s[0] = operator.truediv(k, 4)
        s[1] = operator.pow(k, 2)

    out[3] = [[10, 20], [30, 40]]
    run(operator.sub, 3)
    assert out.to_numpy()[0].tolist() == [[-9, -18], [-27, -36]]
    assert out.to_numpy()[1].tolist() == [[7, 10], [15, 22]]
    assert out.to_numpy()[2].tolist() == [[3, 6], [9, 12]]
    assert s.to_numpy().tolist() == [0.75, 9.0]


def test_bit_cast_reads_the_bits_as_another_dtype(arch):
    backend = wk.runtime.program.current().backend
    wide = getattr(backend, "features", None) is None or {"shader-f64", "shader-int64"} <= set(backend.features)
    words = wk.field(wk.i32, shape=3)
    floats = wk.field(wk.f32, shape=2)
    doubles = wk.field(wk.u64, shape=1)

    @wk.kernel
    def narrow():
        words[0] = wk.bit_cast(1.0, wk.i32)
        words[1] = wk.bit_cast(-2.5, wk.i32)
        words[2] = wk.cast(wk.bit_cast(wk.bit_cast(0.75, wk.u32), wk.f32) * 4.0, wk.i32)
        floats[0] = wk.bit_cast(0x40490FDB, wk.f32)
        floats[1] = wk.bit_cast(wk.bit_cast(floats[0], wk.i32) + 1, wk.f32)

    narrow()
    np.testing.assert_array_equal(words.to_numpy(), np.array([1.0, -2.5], np.float32).view(np.int32).tolist() + [3])
    np.testing.assert_array_equal(floats.to_numpy(), [np.float32(np.pi), np.nextafter(np.float32(np.pi), 4)])
    if wide:
        @wk.kernel
        def wide_cast():
            doubles[0] = wk.bit_cast(wk.cast(1.0, wk.f64), wk.u64)

        wide_cast()
        assert doubles[0] == np.float64(1.0).view(np.uint64)
    assert wk.bit_cast(1.0, wk.i32) == 0x3F800000 and wk.bit_cast(0x3F800000, wk.f32) == 1.0


def test_bit_cast_refuses_a_change_of_width(arch):
    words = wk.field(wk.i64, shape=1)

    @wk.kernel
    def widen():
        words[0] = wk.bit_cast(1.0, wk.i64)

    with pytest.raises(wk.CompileError, match="bit_cast from f32 to i64 changes the width"):
        widen()
    with pytest.raises(wk.WkError, match="changes the width"):
        wk.bit_cast(np.float32(1.0), wk.i64)


def test_memory_hints_are_checked_and_change_nothing(arch):
    x = wk.field(wk.f32, shape=8)
    y = wk.field(wk.f32, shape=8)

    @wk.kernel
    def hinted():
        wk.block_local(x)
        wk.cache_read_only(x, y)
        for i in x:
            y[i] = x[i] + 1

    x.fill(2.0)
    hinted()
    np.testing.assert_array_equal(y.to_numpy(), np.full(8, 3.0))

    @wk.kernel
    def not_a_field():
        wk.block_local(3)

    with pytest.raises(wk.CompileError, match="'block_local' takes fields"):
        not_a_field()
    with pytest.raises(wk.WkError, match="only be used inside a @wk.kernel"):
        wk.block_local(x)


def test_loop_unique_is_a_hint_that_returns_its_value(arch):
    # Taichi's / Quadrants' loop_unique (imported from wk.lang.misc, as from taichi.lang.misc; test_loop_unique)
    from wgkern.lang.misc import get_host_arch_list, loop_unique
    x = wk.field(wk.i32, shape=8)
    y = wk.field(wk.i32, shape=16)

    @wk.kernel
    def scatter():
        for i in x:
            a = loop_unique(x[i])
            y[a] += 1
            y[wk.lang.misc.loop_unique(x[i] + 8, covers=[y])] += 2

    x.from_numpy(np.array([3, 1, 4, 0, 5, 2, 7, 6], np.int32))
    scatter()
    assert y.to_numpy().tolist() == [1] * 8 + [2] * 8
    assert get_host_arch_list() == [wk.cpu]

    @wk.kernel
    def wrong():
        for i in x:
            y[loop_unique(x[i], [y], 3)] += 1

    with pytest.raises(wk.CompileError, match="loop_unique\\(val, covers=None\\)"):
        wrong()


def test_taichi_features_that_are_not_available_say_what_to_use():
    with pytest.raises(AttributeError, match="ti.aot .*not available"):
        wk.aot
    assert not hasattr(wk, "Mesh")


def test_a_kernel_reaching_for_a_missing_taichi_feature_gets_its_name_and_why(arch):
    x = wk.field(wk.i32, shape=4)

    @wk.kernel
    def addresses():
        for i in x:
            x[i] = wk.get_addr(x, i)

    with pytest.raises(wk.CompileError, match=r"ti.get_addr \(the memory address of a field element\) is not "
                                              r"available"):
        addresses()
    with pytest.raises(AttributeError, match="get_addr .*not available"):
        wk.get_addr

    with pytest.raises(wk.WkError, match="hash.* nodes are not available"):
        wk.root.hash(wk.i, 8)


def test_64_bit_shifts_by_constants_and_values(arch):
    a = wk.field(wk.i64, shape=4)
    u = wk.field(wk.u64, shape=4)
    s = wk.field(wk.i64, shape=4)

    @wk.kernel
    def k():
        for i in a:
            a[i] = ((wk.cast(i, wk.i64) + (1 << 20)) << 12) + (wk.cast(i, wk.i64) << s[i])
            u[i] = (wk.cast(-1, wk.u64) >> 1) >> s[i]

    s.from_numpy(np.arange(4))
    k()
    i = np.arange(4, dtype=np.int64)
    assert a.to_numpy().tolist() == (((i + (1 << 20)) << 12) + (i << i)).tolist()
    assert u.to_numpy().tolist() == [(2 ** 63 - 1) >> int(k) for k in range(4)]


def test_reductions_in_func_loops_and_into_arguments_are_atomic(arch):
    """A func's loop inlined at the kernel's top level runs in parallel, so `s += ...` into the func's own
    variable (or parameter), like a kernel argument's, is atomic (it raced on GPUs)."""
    f = wk.field(wk.f32, shape=4096)

    @wk.func
    def total() -> wk.f32:
        s = 0.0
        for i in range(4096):
            s += f[i]
        return s

    @wk.func
    def total_from(s, n) -> wk.f32:
        for i in range(n):
            s += f[i]
        return s

    @wk.kernel
    def sums(start: wk.f32) -> wk.f32:
        for i in range(4096):
            start += f[i]
        return total() + total_from(1.0, 100) + start

    f.from_numpy((np.arange(4096) % 7).astype(np.float32))
    want = (np.arange(4096) % 7).sum()
    assert sums(0.5) == want + 1.0 + (np.arange(100) % 7).sum() + want + 0.5


def test_min_max_ignore_a_nan_operand(arch):
    """As Taichi's (IEEE minNum/maxNum): flux limiters computing 0/0 in flat regions rely on it. The
    gradient goes to the operand that is the result."""
    r = wk.field(wk.f32, shape=6)
    atomic = wk.field(wk.f32, shape=2)
    x = wk.field(wk.f32, shape=2, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def k(nan: wk.f32):
        r[0] = max(0.0, nan)
        r[1] = min(nan, 2.0)
        r[2] = wk.max(nan, 0.5)
        r[3] = wk.min(2.5, nan)
        r[4] = wk.max(nan, nan)
        r[5] = wk.min(wk.max(nan, 1.0), 3.0)
        wk.atomic_min(atomic[0], nan)
        wk.atomic_max(atomic[1], nan)

    @wk.kernel
    def limited(nan: wk.f32):
        for i in x:
            loss[None] += wk.max(x[i] * 3.0, nan) + wk.min(nan, x[i] * x[i])

    atomic.from_numpy(np.array([1.0, -1.0], np.float32))
    k(float("nan"))
    got = r.to_numpy()
    assert got[[0, 1, 2, 3, 5]].tolist() == [0.0, 2.0, 0.5, 2.5, 1.0] and np.isnan(got[4])
    assert atomic.to_numpy().tolist() == [1.0, -1.0]
    x.from_numpy(np.array([1.0, 2.0], np.float32))
    with wk.ad.Tape(loss=loss):
        limited(float("nan"))
    assert x.grad.to_numpy().tolist() == [3.0 + 2.0, 3.0 + 4.0]


def test_comprehensions_walrus_vector_logic_lists_and_starred_ndrange(arch):
    """Python forms Taichi programs use in kernels: list comprehensions over compile-time ranges (unrolled),
    `:=`, `and`/`or` on vectors (element by element), a list of run-time numbers as a vector variable whose
    elements are reassigned under a run-time `if`, and `wk.ndrange(*shape)`."""
    p = wk.Vector.field(2, wk.f32, shape=1)
    q = wk.Vector.field(2, wk.i32, shape=1)
    x = wk.Vector.field(3, wk.f32, shape=2)
    a = wk.field(wk.f32, shape=2)
    b = wk.field(wk.i32, shape=2)
    shape = np.array([2, 3])
    g = wk.field(wk.i32, shape=(2, 3))

    @wk.kernel
    def k():
        c = p[0] < 0 and p[0] > -2 or p[0] > 1
        q[0] = c
        x[0] = wk.Vector([wk.cast(i, wk.f32) for i in range(3)])
        x[1] = wk.Matrix.cols([wk.Vector([i, i + 1.0, 0.0]) for i in range(3)])[1, :] + wk.Vector(
            [j * 1.0 for j in range(3) if j != 1] + [7.0])
        a[0] = (t := a[1] + 1.0)
        a[1] = t * 2
        for I in wk.grouped(wk.ndrange(*shape)):
            g[I] = I[0] * 10 + I[1]

    @wk.kernel
    def swap(c: wk.i32) -> wk.i32:
        v = [b[0], b[1]]
        if c < 0:
            tmp = v[0]
            v[0] = v[1]
            v[1] = tmp
        return v[0] * 10 + v[1]

    p[0] = [-1.0, 0.5]
    k()
    b.from_numpy(np.array([1, 2], np.int32))
    assert q[0].tolist() == [1, 0]
    assert x.to_numpy().tolist() == [[0, 1, 2], [1, 4, 10]]
    assert a.to_numpy().tolist() == [1.0, 2.0]
    assert g.to_numpy().tolist() == [[0, 1, 2], [10, 11, 12]]
    assert swap(1) == 12 and swap(-1) == 21


def test_conditional_expression_reading_memory_runs_only_the_taken_side(arch):
    """`p[t, i] if 0 <= i < n else 0.0` (Taichi builds it as a branch): the guarded read never happens out of
    range (debug=True would report it), for scalars and vectors."""
    wk.init(arch=arch, debug=True)
    p = wk.field(wk.f32, shape=(2, 8))
    out = wk.field(wk.f32, shape=8)
    v = wk.Vector.field(2, wk.f32, shape=8)

    @wk.func
    def neighbour(t, i):
        return p[t, i] if 0 <= i < 8 else 0.0

    @wk.kernel
    def k(t: wk.i32):
        for i in range(8):
            out[i] = neighbour(t, i - 1) + neighbour(t, i + 1)
            v[i] = wk.Vector([p[t, i], 1]) if i % 2 == 0 else wk.Vector([2.0, 3.0])

    p.fill(1.0)
    k(0)
    assert out.to_numpy().tolist() == [1, 2, 2, 2, 2, 2, 2, 1] and v.to_numpy()[:2].tolist() == [[1, 1], [2, 3]]


def test_python_scope_vector_assigned_to_a_local_is_a_variable(arch):
    """`pos = cam` with `cam` a Python-scope wk.Vector (or a matrix) makes a local variable, as in Taichi:
    updates under a run-time `if` are kept (they were lost: a compile-time binding was shadowed)."""
    cam = wk.Vector([1.0, 2.0, 3.0])
    m0 = wk.Matrix([[1.0, 2.0], [3.0, 4.0]])
    out = wk.field(wk.f32, shape=3)

    @wk.kernel
    def k():
        pos = cam
        m = m0
        if out[1] == 0:
            pos = pos + 10.0
            m[0, 0] += 1.0
        out[0] = pos[0]
        out[2] = m[0, 0]
        for d in wk.static(range(3)):
            out[1] += cam[d]

    k()
    assert out.to_numpy().tolist() == [11.0, 6.0, 2.0]


def test_fill_inside_kernels(arch):
    """`x.fill(value)` in kernel code (Taichi allows it) loops over fields and ndarray arguments."""
    x = wk.field(wk.f32, shape=4)
    v = wk.Vector.field(2, wk.f32, shape=(2, 3))

    @wk.kernel
    def k(a: wk.f32, arr: wk.types.ndarray()):
        x.fill(3)
        v.fill(a)
        arr.fill(7)
        for i in range(2):
            x[i] += 1

    arr = np.zeros(3, np.float32)
    k(2.5, arr)
    assert x.to_numpy().tolist() == [4, 4, 3, 3] and (v.to_numpy() == 2.5).all() and arr.tolist() == [7, 7, 7]


def test_swizzles_and_methods_of_python_scope_vectors_bit_shr_and_copies(arch):
    """`vf[i].xyz = ...` writes components of a field element; a Python-scope vector's methods and swizzles
    work in kernels (`v.norm()`, `v.yx`) and on the host (`v.xyz`, `v.xy = ...`); wk.bit_shr is a logical shift;
    copy.deepcopy copies a container, copy.copy is the container itself."""
    import copy
    vf = wk.Vector.field(4, wk.f32, shape=2)
    v = wk.math.vec3(1, 2, 2)
    shifted = wk.field(wk.i32, shape=2)

    @wk.kernel
    def k(a: wk.i32) -> wk.f32:
        for i in vf:
            vf[i].xyz = 5, 6, 7
            vf[i].wx += wk.Vector([1.0, 2.0])
            vf[i].zy = v.yx
        shifted[0] = wk.bit_shr(a, 1)
        shifted[1] = wk.bit_shr(wk.i64(-8), 60)
        return v.norm() + v.xz.sum()

    assert k(-7) == 6.0
    assert vf.to_numpy().tolist() == [[7, 1, 2, 1]] * 2
    assert shifted.to_numpy().tolist() == [2147483644, 15] and wk.bit_shr(-7, 1) == 2147483644
    host = wk.math.vec4(1, 2, 3, 4)
    host.xy = [9, 8]
    assert host.xyz.tolist() == [9, 8, 3] and host.wx.tolist() == [4, 9] and host.rgb.tolist() == [9, 8, 3]
    b = wk.ndarray(wk.f32, shape=4)
    b.fill(2)
    deep = copy.deepcopy(b)
    deep.fill(5)
    assert copy.copy(b) is b and b.to_numpy().tolist() == [2] * 4 and deep.to_numpy().tolist() == [5] * 4


def test_static_grouped_ndrange_gives_index_vectors(arch):
    """taichi_elements' stencils: `for offset in wk.static(wk.grouped(wk.ndrange(3, 3)))` unrolls over
    compile-time integer vectors (`offset.cast(float)`, `base + offset`, `offset[d]`, `x[offset]`), as Taichi's."""
    x = wk.field(wk.f32, shape=(4, 4))
    w = wk.field(wk.f32, shape=(4, 4))

    @wk.kernel
    def k(base_i: wk.i32):
        base = wk.Vector([base_i, 0])
        for offset in wk.static(wk.grouped(wk.ndrange(3, 3))):
            x[base + offset] += offset.cast(float).sum() + 0.5
            w[offset] = [10.0, 20.0, 30.0][offset[0]] + offset[1]

    k(1)
    expected = np.zeros((4, 4), np.float32)
    expected[1:4, 0:3] = np.add.outer(np.arange(3), np.arange(3)) + 0.5
    np.testing.assert_array_equal(x.to_numpy(), expected)
    np.testing.assert_array_equal(w.to_numpy()[:3, :3], np.add.outer([10.0, 20.0, 30.0], np.arange(3)))
    # host side: vectors too, with cast, usable as an index
    for I in wk.grouped(wk.ndrange(2, 2)):
        assert I.cast(float).dtype == np.float32
        w[I] = I.sum()
    np.testing.assert_array_equal(w.to_numpy()[:2, :2], [[0, 1], [1, 2]])


def test_dict_comprehensions_and_double_star_build_compile_time_tables(arch):
    """`{k: v for ...}` and `{**a, k: v}` in kernels (Quadrants' test_ast_refactor): compile-time keys, run-time or
    compile-time values, looked up with compile-time keys; a missing key is a compile error naming it."""
    data = wk.field(wk.i32, shape=8)
    data.from_numpy(np.arange(8, dtype=np.int32) * 3)

    @wk.kernel
    def squares(n: wk.template()) -> wk.i32:
        table = {i: i * i for i in range(n) if i % 3 if i % 2}
        reads = {i: data[i] for i in range(4)}
        merged = {0: 100, **reads, 5: -1}
        total = 0
        for i in wk.static(range(n)):
            if wk.static(i in table):
                total += table[i]
        return total + merged[0] + merged[3] + merged[5]

    @wk.kernel
    def missing(m: wk.template()) -> wk.i32:
        table = {i: i * i for i in range(5) if i % 2}
        return table[m]

    assert squares(10) == 1 + 25 + 49 + 0 + 9 - 1
    assert missing(3) == 9
    with pytest.raises(wk.CompileError, match="cannot index .* with 2"):
        missing(2)


def test_double_star_in_a_dict_display_takes_a_dict():
    @wk.kernel
    def k() -> wk.i32:
        a = 3
        b = {1: 2, **a}
        return b[1]

    with pytest.raises(wk.CompileError, match=r"'\*\*' in a dict display takes a dict, not "):
        k()
