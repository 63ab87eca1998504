"""Each dynamic loop-bound shape, end to end: Python kernel -> grad IR -> SizeExpr -> capacity at launch, on the
CPU reducer and the WGSL reducer. Capacities are checked exactly against closed forms, and for soundness
against the pushes the reference interpreter really makes."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
import wgkern.lang.math as wm
from wgkern.frontend import build_kernel
from wgkern.ir import nodes as ir
from wgkern.lang import types as T
from wgkern.lang.kernel import Kernel
from wgkern.passes.pipeline import FORWARD, run_pipeline
from wgkern.sizing import capacities_for_launch
from wgkern.sizing import expr as E

from ..passes.autodiff.helpers import FakeField
from .helpers import collect_stacks, container_arrays, grad_of, measured_pushes, stacks_of

NDARRAY_F32 = ir.ArgSpec(name="a", kind="ndarray", dtype=T.f32, ndim=1, needs_grad=True)


def compile_grad(fn, arg_specs=()) -> ir.OffloadedKernel:
    return grad_of(run_pipeline(FORWARD, build_kernel(Kernel(fn), list(arg_specs), {})))


def check(grad: ir.OffloadedKernel, arrays: list[np.ndarray], make_context, expected: int, scalars=()) -> None:
    (stack,) = stacks_of(grad)
    assert stack.capacity is None and stack.size_expr is not None
    context = make_context(grad.containers, arrays, scalars)
    (specs,) = [s for s in collect_stacks(grad) if s]
    (capacity,) = capacities_for_launch(specs, context)
    assert capacity == expected
    assert capacity >= max(measured_pushes(grad, arrays, scalars).values())


def test_field_bound_range_n_of_i(make_context):
    x, n, y = FakeField(T.f32, 5, True, "x"), FakeField(T.i32, 5, False, "n"), FakeField(T.f32, 5, True, "y")
    n.data[:] = [0, 4, -2, 9, 3]

    def kernel():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wm.abs(v)
            y[i] = v
    grad = compile_grad(kernel)
    assert "n[i]" in str(stacks_of(grad)[0].size_expr)
    check(grad, container_arrays(grad), make_context, 1 + 9)


def test_ndarray_shape_bound(make_context):
    def kernel(a: wk.types.ndarray(dtype=wk.f32, ndim=1), b: wk.types.ndarray(dtype=wk.f32, ndim=1)):
        for i in range(4):
            v = a[i]
            for j in range(b.shape[0]):
                v = wm.abs(v) * b[j]
            a[i] = v
    specs = [NDARRAY_F32, ir.ArgSpec(name="b", kind="ndarray", dtype=T.f32, ndim=1)]
    grad = compile_grad(kernel, specs)
    arrays = [np.ones(4, np.float32), np.ones(7, np.float32), np.zeros(4, np.float32)]
    check(grad, arrays, make_context, 1 + 7)


def test_range_lo_hi(make_context):
    x, lo, hi = FakeField(T.f32, 4, True, "x"), FakeField(T.i32, 4, False, "lo"), FakeField(T.i32, 4, False, "hi")
    lo.data[:] = [0, 5, 2, 7]
    hi.data[:] = [3, 4, 9, 20]

    def kernel():
        for i in x:
            v = x[i]
            for _ in range(lo[i], hi[i]):
                v = wm.abs(v)
            x[i] = v
    grad = compile_grad(kernel)
    check(grad, container_arrays(grad), make_context, 1 + 13)


def test_range_of_parallel_index(make_context):
    x = FakeField(T.f32, 6, True, "x")

    def kernel():
        for i in x:
            v = x[i]
            for _ in range(i):
                v = wm.abs(v)
            x[i] = v
    grad = compile_grad(kernel)
    check(grad, container_arrays(grad), make_context, 1 + 5)


def test_scalar_argument_bound(make_context):
    def kernel(a: wk.types.ndarray(dtype=wk.f32, ndim=1), n: wk.i32):
        for i in a:
            v = a[i]
            for _ in range(n):
                v = wm.abs(v)
            a[i] = v
    grad = compile_grad(kernel, [NDARRAY_F32, ir.ArgSpec(name="n", kind="scalar", dtype=T.i32)])
    assert E.ScalarArg(1) in set(E.walk(stacks_of(grad)[0].size_expr))
    arrays = [np.ones(3, np.float32), np.zeros(3, np.float32)]
    check(grad, arrays, make_context, 1 + 11, scalars=[None, 11])


def test_nested_dependent_bounds(make_context):
    x, n = FakeField(T.f32, 6, True, "x"), FakeField(T.i32, 6, False, "n")
    n.data[:] = [0, 3, 5, 2, 6, 1]

    def kernel():
        for i in x:
            v = x[i]
            for j in range(n[i]):
                for _ in range(j, n[j]):
                    v = wm.abs(v)
            x[i] = v
    grad = compile_grad(kernel)
    nv = n.data.astype(int)
    expected = max(1 + max(nv[i], 0) * max([max(nv[j] - j, 0) for j in range(nv[i])], default=0)
                   for i in range(6))
    check(grad, container_arrays(grad), make_context, expected)


def test_two_push_sites_add(make_context):
    x, n, m = FakeField(T.f32, 3, True, "x"), FakeField(T.i32, 3, False, "n"), FakeField(T.i32, 3, False, "m")
    n.data[:] = [1, 4, 2]
    m.data[:] = [5, 0, 3]

    def kernel():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wm.abs(v)
            for _ in range(m[i]):
                for _ in range(2):
                    v = wm.abs(v)
            x[i] = v
    grad = compile_grad(kernel)
    expected = max(1 + n.data[i] + 2 * m.data[i] for i in range(3))
    check(grad, container_arrays(grad), make_context, int(expected))


def test_while_loop_uses_default(make_context):
    x = FakeField(T.f32, 2, True, "x")

    def kernel():
        for i in x:
            v = x[i]
            while v < 10.0:
                v = v * 2.0 + wm.abs(v)
            x[i] = v
    grad = compile_grad(kernel)
    dynamic = [s for s in stacks_of(grad) if s.capacity is None]
    assert dynamic and all(s.size_expr is None for s in dynamic)
    context = make_context(grad.containers, container_arrays(grad))
    for specs in collect_stacks(grad):
        capacities = capacities_for_launch(specs, context)
        for spec, capacity in zip(specs, capacities):
            assert capacity == (spec.static_capacity or context.default_ad_stack_size)


def test_unreduced_shape_longer_than_tripwire_gets_a_sound_bound():
    from wgkern.sizing.evaluator import TRIPWIRE

    from .helpers import host_context
    size = TRIPWIRE + 1
    x, lo = FakeField(T.f32, size, True, "x"), FakeField(T.i32, size + 1, False, "lo")
    n = FakeField(T.i32, size, False, "n")

    def kernel():
        for i in x:
            v = x[i]
            for j in range(lo[i], lo[i + 1]):
                for _ in range(n[j]):
                    v = wm.abs(v)
            x[i] = v
    grad = compile_grad(kernel)
    (specs,) = [s for s in collect_stacks(grad) if s]
    arrays = container_arrays(grad)
    lo.data[:] = np.arange(size + 1) // 2          # j runs over [i // 2, (i + 1) // 2): one value at odd i
    n.data[:] = 0
    n.data[[3, size - 2]] = [5, 7]
    context = host_context(grad, arrays)
    # exactly 1 + max(n) = 8 pushes at most. The interval bound (never an error) loses the link between
    # lo[i] and lo[i + 1]: a trip count of at most max(lo) - min(lo) = size // 2 times max(n): sound, loose
    (capacity,) = capacities_for_launch(specs, context)
    assert 8 <= capacity <= 1 + (size // 2) * 7


def test_size_expr_is_printed_in_kernel_ir():
    from wgkern.ir import printer
    x, n = FakeField(T.f32, 3, True, "x"), FakeField(T.i32, 3, False, "n")

    def kernel():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wm.abs(v)
            x[i] = v
    text = printer.format_kernel(compile_grad(kernel))
    assert "size_expr=max(max_{i in 0..3} ((1 + max(n[i], 0))), 1)" in text


# ---- shapes the sizer used to leave to default_ad_stack_size -------------------------------------------------
# Each kernel pushes |v| once per trip plus once before the loop (abs reads v): capacity = 1 + trips.

def _abs_chain_grad(kernel) -> ir.OffloadedKernel:
    grad = compile_grad(kernel)
    (stack,) = stacks_of(grad)
    assert stack.capacity is None and stack.size_expr is not None, "left to default_ad_stack_size"
    return grad


def test_two_d_struct_for_reads_the_bound_at_both_coordinates(make_context):
    x, n = FakeField(T.f32, (3, 4), True, "x"), FakeField(T.i32, (3, 4), False, "n")
    n.data[:] = np.arange(12).reshape(3, 4) * 5 % 7 - 1

    def kernel():
        for i, j in x:
            v = x[i, j]
            for _ in range(n[i, j]):
                v = wm.abs(v)
            x[i, j] = v
    grad = _abs_chain_grad(kernel)
    assert "n[(i // 4), (i - (4 * (i // 4)))]" in str(stacks_of(grad)[0].size_expr)
    check(grad, container_arrays(grad), make_context, 1 + int(n.data.max()))


def test_ndrange_with_begin_end_pairs_reads_only_its_box(make_context):
    x, n = FakeField(T.f32, (5, 5), True, "x"), FakeField(T.i32, (5, 5), False, "n")
    n.data[:] = 50                          # outside the box: must not count
    n.data[1:4, 2:4] = np.arange(6).reshape(3, 2)

    def kernel():
        for i, j in wk.ndrange((1, 4), (2, 4)):
            v = x[i, j]
            for _ in range(n[i, j]):
                v = wm.abs(v)
            x[i, j] = v
    grad = _abs_chain_grad(kernel)
    check(grad, container_arrays(grad), make_context, 1 + 5)


def test_modulo_index_and_step_ranges(make_context):
    x, n = FakeField(T.f32, 6, True, "x"), FakeField(T.i32, 6, False, "n")
    n.data[:] = [3, -4, 9, 0, 7, 2]

    def kernel():
        for i in x:
            v = x[i]
            for _ in range(1, n[(i + 1) % 6], 2):       # ceil((n - 1) / 2) trips, 0 when n <= 1
                v = wm.abs(v)
            for _ in range(n[i], -3, -3):               # ceil((n + 3) / 3) trips
                v = wm.abs(v)
            x[i] = v
    trips = [max(0, -(-(n.data[(i + 1) % 6] - 1) // 2)) + max(0, -(-(n.data[i] + 3) // 3)) for i in range(6)]
    grad = _abs_chain_grad(kernel)
    check(grad, container_arrays(grad), make_context, 1 + max(trips))


def test_min_clamp_and_locals_set_in_branches(make_context):
    x, n = FakeField(T.f32, 5, True, "x"), FakeField(T.i32, 5, False, "n")
    n.data[:] = [2, 11, -3, 6, 4]

    def kernel():
        for i in x:
            v = x[i]
            m = wk.min(n[i], 8)
            if v > 0.5:
                m = m + 3
            for _ in range(wk.math.clamp(m, 0, 10)):
                v = wm.abs(v)
            x[i] = v
    # the local is min(n, 8) or min(n, 8) + 3 whichever branch ran: bounded by min(max(n) + 3, 10) = 10
    grad = _abs_chain_grad(kernel)
    check(grad, container_arrays(grad), make_context, 1 + 10)


def test_untranslatable_index_bounds_by_the_whole_axis(make_context):
    x, n, k = FakeField(T.f32, 4, True, "x"), FakeField(T.i32, 8, False, "n"), FakeField(T.i32, 4, False, "k")
    n.data[:] = [1, 2, 3, 12, 5, 6, 7, 8]
    k.data[:] = [0, 1, 2, 6]

    def kernel():
        for i in x:
            v = x[i]
            for _ in range(n[k[i] & 7]):                 # & is outside the grammar: any index of n
                v = wm.abs(v)
            x[i] = v
    grad = _abs_chain_grad(kernel)
    check(grad, container_arrays(grad), make_context, 1 + 12)


def test_func_locals_and_triangular_loops(make_context):
    x, n = FakeField(T.f32, 4, True, "x"), FakeField(T.i32, 4, False, "n")
    n.data[:] = [3, 5, 1, 4]

    @wk.func
    def chain(v, count):
        m = count - 1
        for j in range(m + 1):
            for _ in range(j):
                v = wm.abs(v)
        return v

    def kernel():
        for i in x:
            x[i] = chain(x[i], n[i])
    # per-level maxima: n trips of a loop of at most n - 1 trips (the exact need is n (n - 1) / 2)
    grad = _abs_chain_grad(kernel)
    check(grad, container_arrays(grad), make_context, 1 + 5 * 4)


def test_while_loops_and_self_dependent_locals_stay_unsized():
    x, n = FakeField(T.f32, 4, True, "x"), FakeField(T.i32, 4, False, "n")

    def with_while():
        for i in x:
            v = x[i]
            m = n[i]
            while m > 0:
                v = wm.abs(v)
                m -= 1
            x[i] = v

    def with_doubling_bound():
        for i in x:
            v = x[i]
            m = 1
            for _ in range(n[i]):
                m = m * 2 + 1                   # not an accumulation m +/- c: no range without iterating
                for _ in range(m):
                    v = wm.abs(v)
            x[i] = v
    assert all(s.size_expr is None for s in stacks_of(compile_grad(with_while)))
    assert any(s.size_expr is None for s in stacks_of(compile_grad(with_doubling_bound)))


def test_loop_carried_accumulations_are_bounded_by_their_increments(make_context):
    x, n = FakeField(T.f32, 4, True, "x"), FakeField(T.i32, 4, False, "n")
    n.data[:] = [3, 6, -1, 2]

    def kernel():
        for i in x:
            v = x[i]
            m = n[i] - 4
            for j in range(n[i]):
                m += 2
                if j % 2 == 0:
                    m -= 1
                for _ in range(m):
                    v = wm.abs(v)
            x[i] = v
    grad = compile_grad(kernel)
    stacks = [s for s in stacks_of(grad) if s.size_expr is not None]
    assert len(stacks) == len(stacks_of(grad))
    context = make_context(grad.containers, container_arrays(grad))
    specs = [spec for task in collect_stacks(grad) for spec in task]
    capacities = dict(zip([spec.name for spec in specs], capacities_for_launch(specs, context)))
    measured = measured_pushes(grad, container_arrays(grad), [])
    for stack in stacks_of(grad):
        assert capacities[stack.name] >= measured.get(id(stack), 0)
    # the f32 stack: 1 + n trips of an inner loop bounded by max(n - 4, 0) + 2 n (every +2 counted, the -1 not)
    assert capacities["v"] == 1 + 6 * (6 - 4 + 2 * 6)


def test_two_d_ndarray_loop_divides_by_its_shape(make_context):
    def kernel(a: wk.types.ndarray(dtype=wk.f32, ndim=2), b: wk.types.ndarray(dtype=wk.i32, ndim=2)):
        for i, j in a:
            v = a[i, j]
            for _ in range(b[i, j]):
                v = wm.abs(v)
            a[i, j] = v
    specs = [ir.ArgSpec(name="a", kind="ndarray", dtype=T.f32, ndim=2, needs_grad=True),
             ir.ArgSpec(name="b", kind="ndarray", dtype=T.i32, ndim=2)]
    grad = compile_grad(kernel, specs)
    bound = np.full((5, 7), 90, np.int32)                   # b is larger than a: its extra cells never count
    bound[:3, :4] = np.arange(12).reshape(3, 4) % 5
    bound[2, 3] = 8
    by_name = {"a": np.ones((3, 4), np.float32), "b": bound, "a.grad": np.zeros((3, 4), np.float32)}
    check(grad, [by_name[c.name] for c in grad.containers], make_context, 1 + 8)


def test_select_float_indices_and_locals_of_ended_loops(make_context):
    x, n, k = FakeField(T.f32, 4, True, "x"), FakeField(T.i32, 6, False, "n"), FakeField(T.i32, 6, False, "k")
    x.data[:] = [0.1, 0.9, 0.4, 0.7]
    n.data[:] = [2, 5, 1, 3, 4, 6]
    k.data[:] = [1, -2, 4, 0, 2, 3]

    def kernel():
        for i in x:
            v = x[i]
            for _ in range(wk.select(v > 0.5, n[i], k[i] + 1)):    # either operand
                v = wm.abs(v)
            for _ in range(n[int(v * 3)]):                         # any index of n
                v = wm.abs(v)
            m = 0
            for j in range(n[i]):
                m = k[j] + j                                       # the last store of a loop that has ended
            for _ in range(m):
                v = wm.abs(v)
            x[i] = v
    grad = _abs_chain_grad(kernel)
    # max over i of 1 + max(n[i], k[i] + 1) + max(n) + max(k[j] + j for j < n[i]): at i = 1, 1 + 5 + 6 + 6
    check(grad, container_arrays(grad), make_context, 1 + 5 + 6 + 6)


def test_a_local_stored_in_an_earlier_iteration_is_not_read_with_the_current_index(make_context):
    """`m = j` at the end of an iteration is read as j - 1 by the next one: taken as the current j, the inner
    loop's j - m trips would be 0 where 1 is made."""
    x, n = FakeField(T.f32, 2, True, "x"), FakeField(T.i32, 2, False, "n")
    n.data[:] = [5, 3]

    def kernel():
        for i in x:
            v = x[i]
            m = n[i]
            for j in range(n[i]):
                for _ in range(j - m):
                    v = wm.abs(v)
                m = j
            x[i] = v
    grad = compile_grad(kernel)
    arrays = container_arrays(grad)
    context = make_context(grad.containers, arrays)
    specs = [spec for task in collect_stacks(grad) for spec in task]
    capacities = dict(zip([spec.name for spec in specs], capacities_for_launch(specs, context)))
    measured = measured_pushes(grad, arrays, [])
    assert measured[id(next(s for s in stacks_of(grad) if s.name == "v"))] == 1 + 4
    for stack in stacks_of(grad):
        assert stack.size_expr is not None and capacities[stack.name] >= measured.get(id(stack), 0)


def test_random_kernels_are_sized_soundly(tmp_path):
    """Random kernels of the shapes above (random_kernels.py) on random bounds: every stack the sizer gives an
    expression gets a capacity at least the pushes the interpreter counts; nearly all of them get one (the
    rest bound a loop by a local the loop itself increments, which stays on default_ad_stack_size)."""
    from .helpers import host_context
    from .random_kernels import write_module
    module = write_module(tmp_path, seed=11, count=100)
    rng = np.random.default_rng(11)
    sized = unsized = 0
    for kernel in module.KERNELS:
        module.n.data[:] = rng.integers(-2, 5, 6)
        module.k.data[:] = rng.integers(-3, 9, 6)
        module.x.data[:] = rng.random(6)
        module.x2.data[:] = rng.random((3, 4))
        grad = compile_grad(kernel)
        arrays = container_arrays(grad)
        specs = [spec for task in collect_stacks(grad) for spec in task]
        capacities = dict(zip([spec.stack_id for spec in specs],
                              capacities_for_launch(specs, host_context(grad, arrays))))
        measured = measured_pushes(grad, arrays, [])
        for stack in stacks_of(grad):
            if stack.capacity is None and stack.size_expr is None:
                unsized += 1
                continue
            sized += 1
            assert capacities[stack.stack_id] >= measured.get(id(stack), 0), (kernel.__name__, stack.size_expr)
    assert sized >= 70 and unsized <= sized // 10, (sized, unsized)


@wk.func
def _rounds(v, extra):
    count = extra + _ROUNDS_FIELD[None]            # a 0-d field and a parameter that is a scalar argument
    for _ in range(count):
        v = wm.abs(v)
    return v


_ROUNDS_FIELD = FakeField(T.i32, (), False, "rounds")


def test_funcs_read_zero_d_fields_and_scalar_arguments(make_context):
    _ROUNDS_FIELD.data[...] = 4

    def kernel(a: wk.types.ndarray(dtype=wk.f32, ndim=1), extra: wk.i32):
        for i in a:
            a[i] = _rounds(a[i], extra)
    grad = compile_grad(kernel, [NDARRAY_F32, ir.ArgSpec(name="extra", kind="scalar", dtype=T.i32)])
    arrays = {"a": np.ones(3, np.float32), "a.grad": np.zeros(3, np.float32), "rounds": _ROUNDS_FIELD.data}
    check(grad, [arrays[c.name] for c in grad.containers], make_context, 1 + 7, scalars=[None, 3])


def test_cross_product_past_the_reducer_limit_is_bounded_soundly(make_context):
    from wgkern.sizing.reducers import MAX_POINTS
    size, extent = 512, 256
    x = FakeField(T.f32, size, True, "x")
    n, m, p = (FakeField(T.i32, extent, False, name) for name in "nmp")
    rng = np.random.default_rng(3)
    for table in (n, m, p):
        table.data[:] = rng.integers(0, 3, extent)
        table.data[0] = extent - 1

    def kernel():
        for i in x:
            v = x[i]
            for j in range(n[i % extent]):
                for k in range(m[j]):
                    for _ in range(p[k]):
                        v = wm.abs(v)
            x[i] = v
    grad = compile_grad(kernel)
    # the job's axes: i (512) and j, k, the inner loop's variable (255 each): over MAX_POINTS
    assert size * (extent - 1) ** 3 > MAX_POINTS
    arrays = container_arrays(grad)
    context = make_context(grad.containers, arrays)
    (specs,) = [s for s in collect_stacks(grad) if s]
    (capacity,) = capacities_for_launch(specs, context)
    # the interval bound never exceeds 1 + the product of the tables' maxima
    assert max(measured_pushes(grad, arrays, ()).values()) <= capacity <= 1 + (extent - 1) ** 3
