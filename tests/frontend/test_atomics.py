"""wk.atomic_mul, wk.atomic_exchange and wk.atomic_cas (Taichi 1.7 / Quadrants) in kernels: every op on each
arch and on the reference interpreter, many threads on one element, local variables, vectors, returned old
values, errors, Python scope, the generated code, and the same program under Quadrants."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import wgkern as wk
from wgkern.lang import types as T

SCALAR_DTYPES = [T.i32, T.u32, T.f32, T.i64, T.u64, T.f64]


def _skip_without_device_support(exc: wk.CompileError) -> None:
    if "needs device feature" in str(exc) or "not supported by" in str(exc):
        pytest.skip(str(exc).splitlines()[0])
    raise exc


def every_op_kernel(dtype: T.DataType):
    """data[k] starts at 3; out[k] gets the old value each atomic returns."""
    data = wk.field(dtype, shape=8)
    out = wk.field(dtype, shape=8)

    @wk.kernel
    def run():
        for k in range(1):
            out[0] = wk.atomic_mul(data[0], 5)
            out[1] = wk.atomic_exchange(data[1], 7)
            if wk.static(not dtype.is_float):
                out[2] = wk.atomic_cas(data[2], 3, 9)      # holds 3: swapped
                out[3] = wk.atomic_cas(data[3], 4, 9)      # holds 3: left alone
            out[4] = wk.atomic_mul(data[4], 2)
            out[4] = wk.atomic_mul(data[4], 2)             # the second returns the first's result

    data.fill(3)
    return run, data, out


def check_every_op(run, data, out, dtype: T.DataType) -> None:
    run()
    got_data, got_out = data.to_numpy(), out.to_numpy()
    assert got_data[0] == 15 and got_out[0] == 3
    assert got_data[1] == 7 and got_out[1] == 3
    if not dtype.is_float:
        assert got_data[2] == 9 and got_out[2] == 3
        assert got_data[3] == 3 and got_out[3] == 3
    assert got_data[4] == 12 and got_out[4] == 6
    assert got_data.dtype == dtype.np_dtype


@pytest.mark.parametrize("dtype", SCALAR_DTYPES, ids=str)
def test_every_op_stores_and_returns_the_old_value(arch, dtype: T.DataType) -> None:
    run, data, out = every_op_kernel(dtype)
    try:
        check_every_op(run, data, out, dtype)
    except wk.CompileError as exc:
        _skip_without_device_support(exc)


@pytest.mark.parametrize("dtype", [T.i32, T.u32, T.f32, T.u64, T.i8, T.u16], ids=str)
def test_every_op_on_the_interpreter(fake_program, dtype: T.DataType) -> None:
    check_every_op(*every_op_kernel(dtype), dtype)


def test_narrow_ints_wrap_and_u1(arch) -> None:
    small = wk.field(wk.i8, shape=4)
    flags = wk.field(wk.u1, shape=4)
    out = wk.field(wk.i32, shape=8)

    @wk.kernel
    def run():
        for k in range(1):
            out[0] = wk.atomic_mul(small[0], 100)          # 3 * 100 = 300 wraps to 44 in i8
            out[1] = wk.atomic_exchange(small[1], -5)
            out[2] = wk.atomic_cas(small[2], 3, -7)
            out[3] = wk.cast(wk.atomic_exchange(flags[0], True), wk.i32)
            out[4] = wk.cast(wk.atomic_cas(flags[1], False, True), wk.i32)
            out[5] = wk.cast(wk.atomic_cas(flags[2], True, False), wk.i32)

    small.fill(3)
    run()
    assert small.to_numpy()[:3].tolist() == [44, -5, -7]
    assert flags.to_numpy()[:3].tolist() == [True, True, False]
    assert out.to_numpy()[:6].tolist() == [3, 3, 3, 0, 0, 0]


# ---- many threads on one element ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [T.f32, T.f64], ids=str)
def test_mul_from_4096_threads_matches_the_closed_form(arch, dtype: T.DataType) -> None:
    """The returned old values form the exact chain x, x*v, x*v*v, ... (each product rounded once); the
    final value is v**4096 up to that rounding (with the result unused the CPU multiplies per chunk)."""
    n = 4096
    acc = wk.field(dtype, shape=2)
    old = wk.field(dtype, shape=n)

    @wk.kernel
    def run():
        for t in range(n):
            old[t] = wk.atomic_mul(acc[0], 1.0001)
            wk.atomic_mul(acc[1], 1.0001)

    acc.fill(1.0)
    try:
        run()
    except wk.CompileError as exc:
        _skip_without_device_support(exc)
    factor = dtype.np_dtype.type(1.0001)
    closed = np.exp(n * np.log(np.float64(factor)))
    got = acc.to_numpy()
    tolerance = 1e-3 if dtype == T.f32 else 1e-9
    np.testing.assert_allclose(got, [closed, closed], rtol=tolerance)
    chain = np.sort(old.to_numpy())
    assert chain[0] == 1.0
    np.testing.assert_array_equal(chain[1:], chain[:-1] * factor)     # every step is one rounded product
    assert got[0] == chain[-1] * factor


@pytest.mark.parametrize("dtype", [T.i32, T.u32, T.i64], ids=str)
def test_integer_mul_from_many_threads_hands_out_every_power(arch, dtype: T.DataType) -> None:
    n = dtype.bits - 2
    acc = wk.field(dtype, shape=())
    old = wk.field(dtype, shape=n)

    @wk.kernel
    def run():
        for t in range(n):
            old[t] = wk.atomic_mul(acc[None], 2)

    acc[None] = 1
    try:
        run()
    except wk.CompileError as exc:
        _skip_without_device_support(exc)
    assert acc[None] == 2 ** n
    assert sorted(int(v) for v in old.to_numpy()) == [2 ** k for k in range(n)]


@pytest.mark.parametrize("dtype", [T.i32, T.u32, T.i64], ids=str)
def test_cas_claims_each_slot_exactly_once(arch, dtype: T.DataType) -> None:
    n, slots = 20000, 64
    owner = wk.field(dtype, shape=slots)
    won = wk.field(wk.i32, shape=n)

    @wk.kernel
    def claim():
        for t in range(n):
            if wk.atomic_cas(owner[t % slots], 0, t + 1) == 0:
                won[t] = 1

    try:
        claim()
    except wk.CompileError as exc:
        _skip_without_device_support(exc)
    owners = owner.to_numpy().astype(np.int64) - 1
    assert won.to_numpy().sum() == slots
    np.testing.assert_array_equal(owners % slots, np.arange(slots))
    assert all(won[int(t)] == 1 for t in owners)


def test_cas_retry_loop_builds_an_exact_counter(arch) -> None:
    """The lock-free pattern CAS exists for: read, compute, retry until no other thread wrote in between."""
    n = 3000
    counter = wk.field(wk.u32, shape=())
    total = wk.field(wk.i64, shape=())

    @wk.kernel
    def count():
        for t in range(n):
            done = False
            while not done:
                seen = counter[None]
                if wk.atomic_cas(counter[None], seen, seen + 1) == seen:
                    done = True
            wk.atomic_add(total[None], t)

    count()
    assert counter[None] == n
    assert total[None] == n * (n - 1) // 2


@pytest.mark.parametrize("dtype", [T.i32, T.f32], ids=str)
def test_exchange_chain_links_every_thread_once(arch, dtype: T.DataType) -> None:
    """prev[t] = exchange(last, t): each thread gets its predecessor, so following prev from the final value
    visits every thread once and ends at the initial -1."""
    n = 5000
    last = wk.field(dtype, shape=())
    prev = wk.field(dtype, shape=n)

    @wk.kernel
    def link():
        for t in range(n):
            prev[t] = wk.atomic_exchange(last[None], t)

    last[None] = -1
    link()
    previous = prev.to_numpy().astype(np.int64)
    cursor, seen = int(last[None]), 0
    while cursor != -1:
        cursor = int(previous[cursor])
        seen += 1
        assert seen <= n
    assert seen == n
    assert sorted(previous.tolist() + [int(last[None])]) == list(range(-1, n))


# ---- locals, vectors, returns ---------------------------------------------------------------------------

def local_kernel():
    @wk.kernel
    def run() -> wk.types.vector(8, wk.i32):
        x = 3
        z = wk.atomic_mul(x, 5)
        e = 4
        f = wk.atomic_exchange(e, 11)
        c = 4
        g = wk.atomic_cas(c, 4, 6)
        h = wk.atomic_cas(c, 4, 8)          # c is 6 now: no swap
        v = wk.Vector([1, 2, 3])
        w = wk.atomic_mul(v, wk.Vector([4, 5, 6]))
        q = wk.atomic_exchange(v, 9)
        return wk.Vector([x * 100 + z, e * 100 + f, c * 100 + g * 10 + h, w[2], v[0] + v[2], q[1], 0, 0])

    return run


def test_atomics_on_local_variables(arch) -> None:
    assert local_kernel()().tolist() == [1503, 1104, 646, 3, 18, 10, 0, 0]


def test_atomics_on_local_variables_on_the_interpreter(fake_program) -> None:
    assert local_kernel()().tolist() == [1503, 1104, 646, 3, 18, 10, 0, 0]


def test_local_vector_element_and_parallel_loop_local(arch) -> None:
    """An element of a local vector is a plain update; a top-level local updated in a parallel loop is shared
    by the threads (as Taichi makes it), so its atomic_mul is atomic."""
    out = wk.field(wk.i32, shape=4)

    @wk.kernel
    def run():
        v = wk.Vector([1, 2, 3])
        old = wk.atomic_cas(v[1], 2, 7)
        out[0] = old * 10 + v[1]
        p = 1
        for t in range(20):
            wk.atomic_mul(p, 2)
        out[1] = p

    run()
    assert out.to_numpy()[:2].tolist() == [27, 1 << 20]


def test_vector_and_matrix_fields_are_element_wise(arch) -> None:
    v = wk.Vector.field(3, wk.f32, shape=4)
    m = wk.Matrix.field(2, 2, wk.i32, shape=2)
    out = wk.Vector.field(3, wk.f32, shape=2)
    out_m = wk.Matrix.field(2, 2, wk.i32, shape=1)

    @wk.kernel
    def run():
        for i in range(1):
            out[0] = wk.atomic_mul(v[0], wk.Vector([2.0, 3.0, 4.0]))
            out[1] = wk.atomic_exchange(v[1], 0.5)             # a scalar goes to every component
            out_m[0] = wk.atomic_mul(m[0], 3)

    v.fill(1.5)
    m.fill(2)
    run()
    assert v.to_numpy()[:2].tolist() == [[3.0, 4.5, 6.0], [0.5, 0.5, 0.5]]
    assert out.to_numpy().tolist() == [[1.5, 1.5, 1.5], [1.5, 1.5, 1.5]]
    assert m.to_numpy()[0].tolist() == [[6, 6], [6, 6]] and out_m.to_numpy()[0].tolist() == [[2, 2], [2, 2]]


# ---- errors and Python scope ----------------------------------------------------------------------------

def test_cas_is_integer_only_like_quadrants(arch) -> None:
    f = wk.field(wk.f32, shape=2)
    i = wk.field(wk.i32, shape=2)
    vec = wk.Vector.field(2, wk.i32, shape=2)

    @wk.kernel
    def float_destination():
        wk.atomic_cas(f[0], 1.0, 2.0)

    @wk.kernel
    def float_operand():
        wk.atomic_cas(i[0], 2.5, 3)

    @wk.kernel
    def vector_destination():
        wk.atomic_cas(vec[0], 0, 1)

    @wk.kernel
    def two_arguments():
        wk.atomic_cas(i[0], 1)

    @wk.kernel
    def float_local():
        x = 1.0
        wk.atomic_cas(x, 1.0, 2.0)

    with pytest.raises(wk.CompileError, match="atomic cas needs an integer destination, 'f.*' is f32"):
        float_destination()
    with pytest.raises(wk.CompileError, match="takes integer operands, the expected value is a f32 value"):
        float_operand()
    with pytest.raises(wk.CompileError, match="atomic_cas on a vector/matrix element"):
        vector_destination()
    with pytest.raises(wk.CompileError, match="takes three arguments"):
        two_arguments()
    with pytest.raises(wk.CompileError, match="atomic cas needs an integer destination"):
        float_local()


def test_a_destination_that_is_not_writable_is_named_with_the_atomic(arch) -> None:
    @wk.kernel
    def into_a_list():
        y = wk.Vector([1, 2, 3])
        wk.atomic_min([3, 2, 1], y)

    with pytest.raises(wk.CompileError, match=r"wk\.atomic_min: the destination \(first argument\) must be a "
                       r"writable field/ndarray element or local variable, got a Python list") as caught:
        into_a_list()
    assert "wk.atomic_min([3, 2, 1], y)" in str(caught.value)


def test_python_scope_raises_like_the_other_atomics() -> None:
    for call in (lambda: wk.atomic_mul(1, 2), lambda: wk.atomic_exchange(1, 2), lambda: wk.atomic_cas(1, 2, 3)):
        with pytest.raises(wk.WkError, match=r"wk\.atomic_(mul|exchange|cas) can only be used inside"):
            call()
    assert "Returns the old value" in wk.atomic_cas.__doc__


# ---- generated code -------------------------------------------------------------------------------------

def test_generated_code_uses_the_native_constructs(arch) -> None:
    i = wk.field(wk.i32, shape=4)
    f = wk.field(wk.f32, shape=4)

    @wk.kernel
    def run():
        for t in range(4):
            wk.atomic_cas(i[0], t, t + 1)
            wk.atomic_exchange(i[1], t)
            wk.atomic_mul(f[t % 2], 1.5)

    f.fill(1.0)
    source = run.source(arch)
    if arch in (wk.cpu, wk.cuda):      # LLVM IR
        assert "cmpxchg" in source and "atomicrmw xchg" in source
        assert "fmul" in source       # atomic_mul: a cmpxchg loop around fmul
    else:
        assert "atomicCompareExchangeWeak" in source and "atomicExchange(" in source
        assert "(old * v)" in source
    run()
    assert i[0] == 4 and f[0] == 1.5 ** 2


# ---- the same program under Quadrants -------------------------------------------------------------------

SHARED_PROGRAM = """
import numpy as np
import {module} as ti
ti.init(arch=ti.cpu)
i = ti.field(ti.i32, shape=8)
u = ti.field(ti.u32, shape=4)
f = ti.field(ti.f32, shape=4)
slots = ti.field(ti.i32, shape=16)
won = ti.field(ti.i32, shape=1000)

@ti.kernel
def scalar_ops() -> ti.i32:
    i[0] = 3
    a = ti.atomic_cas(i[0], 3, 7)
    b = ti.atomic_cas(i[0], 3, 9)
    u[0] = 3
    c = ti.atomic_cas(u[0], 3, 4000000)
    i[1] = 2
    d = ti.atomic_exchange(i[1], 5)
    f[0] = 2.0
    e = ti.atomic_exchange(f[0], 3.5)
    return a * 100 + b * 10 + i[0] + d * 1000 + i[1] * 10000 + ti.cast(e * 100000, ti.i32)

@ti.kernel
def local_ops() -> ti.i32:
    x = 5
    a = ti.atomic_cas(x, 5, 8)
    y = 7
    b = ti.atomic_exchange(y, 42)
    return a * 1000 + x * 100 + b + y * 10000

@ti.kernel
def claim():
    for t in range(1000):
        if ti.atomic_cas(slots[t % 16], -1, t) == -1:
            won[t] = 1

@ti.kernel
def product():
    for t in range(4096):
        ti.atomic_mul(f[1], 1.0001)

print(scalar_ops(), u[0], local_ops())
slots.fill(-1)
claim()
print(int(won.to_numpy().sum()), sorted(int(s) % 16 for s in slots.to_numpy()) == list(range(16)))
f[1] = 1.0
product()
print(round(float(f[1]), 3))

@ti.kernel
def float_cas():
    ti.atomic_cas(f[2], 1.0, 2.0)

try:
    float_cas()
    print("float cas accepted")
except Exception as exc:
    print("float cas rejected")
"""


def _run_program(tmp_path, module: str) -> list[str]:
    path = tmp_path / f"program_{module}.py"
    path.write_text(textwrap.dedent(SHARED_PROGRAM.format(module=module)))
    env = {**os.environ, "WK_ARCH": "cpu"}
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if not line.startswith("[Quadrants]")]


def test_same_program_as_quadrants(tmp_path) -> None:
    pytest.importorskip("quadrants")
    ours = _run_program(tmp_path, "wgkern")
    theirs = _run_program(tmp_path, "quadrants")
    assert ours == theirs
    assert ours[0].split() == [str(377 + 2000 + 50000 + 200000), "4000000", str(5000 + 800 + 7 + 420000)]
    assert ours[-1] == "float cas rejected"


