"""Quantized types (lang/quant.py, frontend/quant.py): values stored through quant.int / fixed / float fields,
in kernels, by atomics and from the host, equal what Taichi 1.7.4's CPU backend gives (its outputs are recorded
below as constants); BitpackedFields and quant_array check their bit budgets by Taichi's messages; shared
exponents; Taichi's quant game of life and a quantized mpm88 run headless."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk

N = 16
INTS = [0, 1, 7, 8, 9, 15, 16, 17, -1, -8, -9, -16, -17, 100, -100, 5]
REALS = [0.0, 0.01, 0.0078125, 0.00390625, 0.0117, -0.0117, 1.99, 2.0, 2.5, -2.0, -2.01, -0.00390625, 0.3, -0.3,
         3.1, -5.0]
FLOATS = [0.0, 1.0, 1.1, 1.015625, 1.0078125, 1.0234375, -3.3, 1e-5, 6e-5, 65504.0, 70000.0, 1e6, 0.1, -0.1,
          3.14159, 2.0 ** -14]

# Taichi 1.7.4 (arch=cpu): the values read back after storing INTS / REALS / FLOATS in a kernel
TAICHI_QI4 = [0, 1, 7, -8, -7, -1, 0, 1, -1, -8, 7, 0, -1, 4, -4, 5]
TAICHI_QU4 = [0, 1, 7, 8, 9, 15, 0, 1, 15, 8, 7, 0, 15, 4, 12, 5]
TAICHI_FIXED8 = [0.0, 0.015625, 0.015625, 0.0, 0.015625, -0.015625, 1.984375, -2.0, -1.5, -2.0, 1.984375, 0.0,
                 0.296875, -0.296875, -0.90625, -1.0]
TAICHI_UFIXED8 = [0.0, 0.0078125, 0.0078125, 0.0078125, 0.0078125, 1.9921875, 1.9921875, 0.0, 0.5, 1.9921875,
                  1.9921875, 1.9921875, 0.296875, 1.9921875, 1.1015625, 1.9921875]
TAICHI_FLOAT5_6 = [0.0, 1.0, 1.09375, 1.03125, 1.0, 1.03125, -3.3125, 0.0, 0.0, 65536.0, 69632.0,
                   0.000232696533203125, 0.099609375, -0.099609375, 3.125, 6.103515625e-05]


def _quant_fields():
    q = wk.types.quant
    a = wk.field(q.int(4, True))
    b = wk.field(q.int(4, False))
    c = wk.field(q.fixed(8, True, max_value=2.0))
    d = wk.field(q.fixed(8, False, max_value=2.0))
    e = wk.field(q.float(exp=5, frac=6, signed=True))
    ints = wk.BitpackedFields(max_num_bits=32)
    ints.place(a, b, c, d)
    floats = wk.BitpackedFields(max_num_bits=32)
    floats.place(e)
    wk.root.dense(wk.i, N).place(ints)
    wk.root.dense(wk.i, N).place(floats)
    return a, b, c, d, e


def test_kernel_stores_round_as_taichi(arch):
    a, b, c, d, e = _quant_fields()
    assert a.dtype == wk.i32 and b.dtype == wk.u32 and c.dtype == wk.f32 and a.shape == (N,)
    iv = wk.field(wk.i32, N)
    fv = wk.field(wk.f32, N)

    @wk.kernel
    def store():
        for i in range(N):
            a[i] = iv[i]
            b[i] = iv[i]
            c[i] = fv[i]
            d[i] = fv[i]
            e[i] = fv[i]

    iv.from_numpy(np.array(INTS, np.int32))
    fv.from_numpy(np.array(REALS, np.float32))
    store()
    assert a.to_numpy().tolist() == TAICHI_QI4
    assert b.to_numpy().tolist() == TAICHI_QU4
    assert c.to_numpy().tolist() == TAICHI_FIXED8
    assert d.to_numpy().tolist() == TAICHI_UFIXED8
    fv.from_numpy(np.array(FLOATS, np.float32))
    store()
    assert e.to_numpy().tolist() == TAICHI_FLOAT5_6


def test_host_writes_round_as_kernel_stores(arch):
    a, b, c, d, e = _quant_fields()
    a.from_numpy(np.array(INTS))
    b.from_numpy(np.array(INTS))
    c.from_numpy(np.array(REALS))
    d.from_numpy(np.array(REALS))
    e.from_numpy(np.array(FLOATS))
    assert a.to_numpy().tolist() == TAICHI_QI4 and b.to_numpy().tolist() == TAICHI_QU4
    assert c.to_numpy().tolist() == TAICHI_FIXED8 and d.to_numpy().tolist() == TAICHI_UFIXED8
    assert e.to_numpy().tolist() == TAICHI_FLOAT5_6
    a[0] = 9                     # Taichi: -7, 0.015625, 1.09375
    c[0] = 0.0117
    e[0] = 1.1
    assert (a[0], c[0], e[0]) == (-7, 0.015625, 1.09375)
    c.fill(2.5)
    assert set(c.to_numpy().tolist()) == {-1.5}


def test_rounding_by_hand():
    wk.init(arch=wk.cpu)
    q = wk.types.quant
    half = wk.field(q.fixed(4, True, scale=0.5))           # steps of 0.5, integers -8..7
    tiny = wk.field(q.fixed(10, False, max_value=1.0))      # steps of 1/1024, integers 0..1023
    i3 = wk.field(q.int(3, True, compute=wk.i16))
    wk.root.dense(wk.i, 6).place(half, tiny, i3)
    assert i3.dtype == wk.i16
    half.from_numpy(np.array([0.25, -0.25, 0.74, 3.75, 4.0, -4.25]))
    assert half.to_numpy().tolist() == [0.5, -0.5, 0.5, -4.0, -4.0, 3.5]     # halves away from zero, then wraps
    tiny.from_numpy(np.array([1 / 2048, 0.999, 1.0, 1.5, 0.0, 3 / 2048]))
    assert tiny.to_numpy().tolist() == [1 / 1024, 1023 / 1024, 0.0, 0.5, 0.0, 2 / 1024]
    i3.from_numpy(np.array([3, 4, -4, -5, 8, 11]))
    assert i3.to_numpy().tolist() == [3, -4, -4, 3, 0, 3]


def test_atomics_wrap_as_taichi(arch):
    a, b, c, d, e = _quant_fields()

    @wk.kernel
    def accumulate():
        for _ in range(5):
            a[3] += 3
            c[3] += 0.5
            b[4] += 5
            d[4] += 0.3          # the addend is rounded to 38 steps first, as Taichi adds the integers
            a[5] -= 2
            wk.atomic_max(b[6], 20)

    @wk.kernel
    def serial_float_sum():
        wk.loop_config(serialize=True)
        for _ in range(3):
            e[6] += 1.1

    accumulate()
    serial_float_sum()
    # Taichi 1.7.4: -1, -1.5, 9, 1.484375, 6 (and 3.3125 for three float additions of 1.1)
    assert (a[3], c[3], b[4], d[4], a[5]) == (-1, -1.5, 9, 1.484375, 6)
    assert b[6] == 4 and e[6] == 3.3125


def test_many_threads_add_into_one_quant_element(arch):
    counter = wk.field(wk.types.quant.int(8, False))
    level = wk.field(wk.types.quant.fixed(6, True, max_value=4.0))
    wk.root.place(counter, level)

    @wk.kernel
    def count(n: wk.i32):
        for _ in range(n):
            counter[None] += 1
            level[None] += 0.125

    count(1000)
    assert counter[None] == 1000 % 256
    # 1000 steps of 0.125 in a 6-bit signed grid of 0.125: 1000 mod 64 = 40, read as signed -24
    assert level[None] == -24 * 0.125


def test_shared_exponent_as_taichi(arch):
    q8 = wk.types.quant.float(exp=5, frac=8, signed=True)
    x = wk.field(q8)
    y = wk.field(q8)
    group = wk.BitpackedFields(max_num_bits=32)
    group.place(x, y, shared_exponent=True)
    wk.root.dense(wk.i, 6).place(group)
    xv = wk.field(wk.f32, 6)
    yv = wk.field(wk.f32, 6)

    @wk.kernel
    def store_both():
        for i in range(6):
            x[i] = xv[i]
            y[i] = yv[i]

    @wk.kernel
    def store_x():
        for i in range(6):
            x[i] = xv[i]

    xv.from_numpy(np.array([1.0, 100.0, 0.1, 3.3, -7.7, 0.001], np.float32))
    yv.from_numpy(np.array([0.013, 1.234, 5.0, 3.3, 0.77, 0.5], np.float32))
    store_both()
    # Taichi 1.7.4: each element's pair keeps 7 bits below the exponent of the larger magnitude
    assert x.to_numpy().tolist() == [1.0, 100.0, 0.125, 3.3125, -7.6875, 0.0]
    assert y.to_numpy().tolist() == [0.015625, 1.0, 5.0, 3.3125, 0.75, 0.5]
    xv.from_numpy(np.array([0.01, 1.0, 100.0, 0.0, 0.5, 4.0], np.float32))
    store_x()          # the exponent follows the new x and the stored y
    assert x.to_numpy().tolist() == [0.010009765625, 1.0, 100.0, 0.0, 0.5, 4.0]
    assert y.to_numpy().tolist() == [0.015625, 1.0, 5.0, 3.3125, 0.75, 0.5]
    x[0] = 1000.0      # host writes share it too: y[0] now has steps of 8
    assert (x[0], y[0]) == (1000.0, 0.0)


def test_bit_budgets_are_checked_as_taichi():
    wk.init(arch=wk.cpu)
    q = wk.types.quant
    group = wk.BitpackedFields(max_num_bits=32)
    with pytest.raises(wk.WkError, match="BitStructType overflows: 40 bits used out of 32"):
        group.place(wk.field(q.int(20)), wk.field(q.int(20)))
    with pytest.raises(wk.WkError, match="BitStructType overflows: 20 bits used out of 16"):
        wk.BitpackedFields(max_num_bits=16).place(wk.field(q.int(20)))
    with pytest.raises(wk.WkError, match="Only a QuantType can be a member of a BitStructType"):
        wk.BitpackedFields().place(wk.field(wk.i32))
    with pytest.raises(wk.WkError, match="must have exactly the same exponent type"):
        wk.BitpackedFields().place(wk.field(q.float(exp=5, frac=8)), wk.field(q.float(exp=6, frac=8)),
                                   shared_exponent=True)
    shared = wk.BitpackedFields(max_num_bits=32)       # the exponent counts once: 5 + 13 + 14 bits
    shared.place(wk.field(q.float(exp=5, frac=13)), wk.field(q.float(exp=5, frac=14)), shared_exponent=True)
    vector = wk.BitpackedFields(max_num_bits=32)
    with pytest.raises(wk.WkError, match="33 bits used out of 32"):
        vector.place(wk.Vector.field(3, dtype=q.fixed(11, max_value=2.0)))
    with pytest.raises(wk.WkError, match="quant_array overflows"):
        wk.root.dense(wk.i, 4).quant_array(wk.i, 4, max_num_bits=32).place(wk.field(q.int(9)))
    with pytest.raises(wk.WkError, match="quant_array nodes hold fields of wk.types.quant types"):
        wk.root.dense(wk.i, 4).quant_array(wk.i, 4, max_num_bits=32).place(wk.field(wk.i32))


def test_quant_vector_fields_and_extension(arch):
    assert wk.is_extension_supported(arch, wk.extension.quant)
    assert wk.is_extension_supported(arch, wk.extension.quant_basic)
    v = wk.Vector.field(2, dtype=wk.types.quant.fixed(10, max_value=2.0))
    wk.BitpackedFields(max_num_bits=32).place(v)
    wk.root.dense(wk.i, 4).bit_struct(num_bits=32).place(v)    # older spelling of BitpackedFields
    assert v.shape == (4,) and v.grad is None

    @wk.kernel
    def fill():
        for i in v:
            v[i] = wk.Vector([0.3 * i, -2.5])

    fill()
    np.testing.assert_array_equal(v.to_numpy(), [[0.0, 1.5], [0.30078125, 1.5], [0.6015625, 1.5], [0.8984375, 1.5]])


def test_quant_game_of_life(arch):
    """Taichi's quant game of life: 1-bit cells in quant arrays of 32 under pointer blocks, evolved with
    `loop_config(bit_vectorize=True)`, checked against numpy."""
    n, bits, n_blocks = 64, 32, 2
    qu1 = wk.types.quant.int(1, False)
    state_a = wk.field(dtype=qu1)
    state_b = wk.field(dtype=qu1)
    block = wk.root.pointer(wk.ij, (n_blocks, n_blocks))
    block.dense(wk.ij, (n // n_blocks, n // (bits * n_blocks))).quant_array(wk.j, bits, max_num_bits=bits) \
        .place(state_a)
    block.dense(wk.ij, (n // n_blocks, n // (bits * n_blocks))).quant_array(wk.j, bits, max_num_bits=bits) \
        .place(state_b)
    assert state_a.shape == (n, n)

    @wk.kernel
    def evolve(src: wk.template(), dst: wk.template()):
        wk.loop_config(bit_vectorize=True)
        for i, j in src:
            if 0 < i < n - 1 and 0 < j < n - 1:
                neighbours = wk.u32(0)
                for di, dj in wk.static([(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]):
                    neighbours += wk.cast(src[i + di, j + dj], wk.u32)
                dst[i, j] = (neighbours == 3) | ((neighbours == 2) & (src[i, j] == 1))

    rng = np.random.default_rng(7)
    board = (rng.random((n, n)) < 0.35).astype(np.uint32)
    board[0, :] = board[-1, :] = board[:, 0] = board[:, -1] = 0

    @wk.kernel
    def load(cells: wk.types.ndarray()):
        for i, j in wk.ndrange(n, n):
            state_a[i, j] = cells[i, j] + 2        # 1-bit cells: the store keeps the low bit
            state_b[i, j] = 0

    load(board.astype(np.int32))
    expected = board.copy()
    for step in range(6):
        src, dst = (state_a, state_b) if step % 2 == 0 else (state_b, state_a)
        evolve(src, dst)
        count = sum(np.roll(np.roll(expected, di, 0), dj, 1) for di in (-1, 0, 1) for dj in (-1, 0, 1)
                    if (di, dj) != (0, 0))
        nxt = ((count == 3) | ((count == 2) & (expected == 1))).astype(np.uint32)
        nxt[0, :] = nxt[-1, :] = nxt[:, 0] = nxt[:, -1] = 0
        expected = nxt
        np.testing.assert_array_equal(dst.to_numpy(), expected)


def test_taichi_bitpacked_field_cases(arch):
    """Cases of Taichi's tests/python/test_bitpacked_fields.py: extreme quant ints, a 32-bit fixed-point field
    under pointer blocks, and a shared exponent over members of different fraction widths beside an int."""
    qi13, qu14, qi5 = wk.types.quant.int(13, True), wk.types.quant.int(14, False), wk.types.quant.int(5, True)
    x, y, z = wk.field(dtype=qi13), wk.field(dtype=qu14), wk.field(dtype=qi5)
    packed = wk.BitpackedFields(max_num_bits=32)
    packed.place(x, y, z)
    wk.root.place(packed)

    @wk.kernel
    def set_val(a: wk.i32, b: wk.i32, c: wk.i32):
        x[None] = a
        y[None] = b
        z[None] = c

    for case in ([2**12 - 1, 2**14 - 1, -(2**3)], [2**11 - 1, 2**13 - 1, -(2**2)], [123, 4567, 8], [10, 31, 11]):
        set_val(*case)
        assert [x[None], y[None], z[None]] == [case[0], case[1], case[2] - 32 * (case[2] > 15)]

    block_size, n = 16, 64
    fixed32 = wk.types.quant.fixed(bits=32, max_value=1024)
    f = wk.field(dtype=fixed32)
    one = wk.BitpackedFields(max_num_bits=32)
    one.place(f)
    wk.root.pointer(wk.i, n // block_size).dense(wk.i, block_size).place(one)
    for i in range(n):
        if i // block_size % 2 == 0:
            f[i] = 0

    @wk.kernel
    def assign():
        for i in f:
            f[i] = wk.cast(i, float)

    assign()
    assert f.to_numpy().tolist() == [float(i) if i // block_size % 2 == 0 else 0.0 for i in range(n)]

    p = wk.field(dtype=wk.types.quant.float(exp=5, frac=10))
    q = wk.field(dtype=wk.types.quant.float(exp=5, frac=13))
    r = wk.field(dtype=wk.types.quant.int(bits=4, signed=False))
    mixed = wk.BitpackedFields(max_num_bits=32)
    mixed.place(p, q, shared_exponent=True)
    mixed.place(r)
    wk.root.dense(wk.i, 12).place(mixed)

    @wk.kernel
    def set_mixed():
        for i in p:
            p[i] = i * 3
            q[i] = i * 2
            r[i] = i

    set_mixed()
    assert p.to_numpy().tolist() == [i * 3 for i in range(12)]
    assert q.to_numpy().tolist() == [i * 2 for i in range(12)]
    assert r.to_numpy().tolist() == list(range(12))
    with pytest.raises(wk.WkError, match="At least 2 fields need to be placed when shared_exponent=True"):
        wk.BitpackedFields().place(wk.field(wk.types.quant.float(exp=5, frac=10)), shared_exponent=True)


@pytest.mark.parametrize("exponent_bits", [5, 8])
def test_taichi_shared_exponent_cases(exponent_bits):
    """Taichi's tests/python/test_custom_float_shared_exp.py (10- and 14-bit unsigned significands)."""
    wk.init(arch=wk.cpu)
    a = wk.field(dtype=wk.types.quant.float(exp=exponent_bits, frac=10, signed=False))
    b = wk.field(dtype=wk.types.quant.float(exp=exponent_bits, frac=14, signed=False))
    wk.root.bit_struct(num_bits=32).place(a, b, shared_exponent=True)

    @wk.kernel
    def store(x: wk.f32, y: wk.f32):
        a[None] = x
        b[None] = y

    a[None] = 10
    assert (a[None], b[None]) == (10.0, 0.0)
    store(3.2, 0.25)
    assert a[None] == pytest.approx(3.2, rel=1e-3) and b[None] == pytest.approx(0.25, rel=2e-2)
    a[None] = 100
    assert a[None] == pytest.approx(100, rel=1e-3) and b[None] == pytest.approx(0.25, rel=1e-2)
    store(1000, 1e-6)                  # flushed to zero below the shared exponent
    assert (a[None], b[None]) == (1000.0, 0.0)
    store(1e-30, 1e-30)
    if exponent_bits == 8:
        assert a[None] == pytest.approx(1e-30, 1e-3) and b[None] == pytest.approx(1e-30, 1e-4)
    else:                              # too few exponent bits: zero
        assert (a[None], b[None]) == (0.0, 0.0)
    store(0, 100)
    for i in range(100):               # borrowing: the exponent follows the larger member
        assert (a[None], b[None]) == (i, 100 - i)
        a[None] += 1
        b[None] -= 1


def _mpm88(quantized: bool, steps: int = 40) -> np.ndarray:
    """Taichi's mpm88 example; `quantized` stores positions as 16-bit fixed point and velocities as 2 x 13-bit
    floats sharing a 6-bit exponent (QuanTaichi's layout), packed by BitpackedFields."""
    n_particles, n_grid = 512, 32
    dx, dt = 1 / n_grid, 2e-4
    p_vol, p_rho = (dx * 0.5) ** 2, 1
    p_mass = p_vol * p_rho
    gravity, bound, stiffness = 9.8, 3, 400
    if quantized:
        x = wk.Vector.field(2, dtype=wk.types.quant.fixed(16, False, max_value=1.0))
        v = wk.Vector.field(2, dtype=wk.types.quant.float(exp=6, frac=13))
        positions = wk.BitpackedFields(max_num_bits=32)
        positions.place(x)
        velocities = wk.BitpackedFields(max_num_bits=32)
        velocities.place(v, shared_exponent=True)
        wk.root.dense(wk.i, n_particles).place(positions, velocities)
    else:
        x = wk.Vector.field(2, dtype=float, shape=n_particles)
        v = wk.Vector.field(2, dtype=float, shape=n_particles)
    C = wk.Matrix.field(2, 2, dtype=float, shape=n_particles)
    J = wk.field(float, n_particles)
    grid_v = wk.Vector.field(2, dtype=float, shape=(n_grid, n_grid))
    grid_m = wk.field(float, (n_grid, n_grid))

    @wk.kernel
    def substep():
        for i, j in grid_m:
            grid_v[i, j] = [0, 0]
            grid_m[i, j] = 0
        for p in x:
            Xp = x[p] / dx
            base = int(Xp - 0.5)
            fx = Xp - base
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
            stress = -dt * 4 * stiffness * p_vol * (J[p] - 1) / dx**2
            affine = wk.Matrix([[stress, 0], [0, stress]]) + p_mass * C[p]
            for i, j in wk.static(wk.ndrange(3, 3)):
                offset = wk.Vector([i, j])
                dpos = (offset - fx) * dx
                weight = w[i].x * w[j].y
                grid_v[base + offset] += weight * (p_mass * v[p] + affine @ dpos)
                grid_m[base + offset] += weight * p_mass
        for i, j in grid_m:
            if grid_m[i, j] > 0:
                grid_v[i, j] /= grid_m[i, j]
            grid_v[i, j].y -= dt * gravity
            if i < bound and grid_v[i, j].x < 0:
                grid_v[i, j].x = 0
            if i > n_grid - bound and grid_v[i, j].x > 0:
                grid_v[i, j].x = 0
            if j < bound and grid_v[i, j].y < 0:
                grid_v[i, j].y = 0
            if j > n_grid - bound and grid_v[i, j].y > 0:
                grid_v[i, j].y = 0
        for p in x:
            Xp = x[p] / dx
            base = int(Xp - 0.5)
            fx = Xp - base
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
            new_v = wk.Vector.zero(float, 2)
            new_C = wk.Matrix.zero(float, 2, 2)
            for i, j in wk.static(wk.ndrange(3, 3)):
                offset = wk.Vector([i, j])
                dpos = (offset - fx) * dx
                weight = w[i].x * w[j].y
                g_v = grid_v[base + offset]
                new_v += weight * g_v
                new_C += 4 * weight * g_v.outer_product(dpos) / dx**2
            v[p] = new_v
            x[p] += dt * v[p]
            J[p] *= 1 + dt * new_C.trace()
            C[p] = new_C

    rng = np.random.default_rng(3)
    x.from_numpy((rng.random((n_particles, 2)) * 0.4 + 0.2).astype(np.float32))
    v.from_numpy(np.tile(np.array([0.0, -1.0], np.float32), (n_particles, 1)))
    J.fill(1)
    for _ in range(steps):
        substep()
    return x.to_numpy()


def test_quant_mpm88_follows_full_precision(arch):
    full = _mpm88(quantized=False)
    quantized = _mpm88(quantized=True)
    steps = quantized * 65536
    np.testing.assert_array_equal(steps, np.round(steps))        # every position is on the 16-bit grid
    assert np.all((quantized > 0.05) & (quantized < 0.95))
    assert np.abs(quantized - full).max() < 2e-4             # the particles moved about 8e-3
    assert np.abs(quantized - full).max() > 0                    # and the rounding did change something
