"""Compile errors about wk.static and about values, each checked by message and source line: static reads of
field values, an ndarray argument's axis count, starred targets, vector transpose, identity comparison outside
static, negative and too many element indices, Quadrants' phrases."""
from __future__ import annotations

import numpy as np
from tests.frontend.helpers import FakeField, build, of_type, run, wk
from tests.frontend.error_checks import check, compile_error

from wgkern.ir import nodes as ir

x = FakeField(wk.f32, 8, "x")
grid = FakeField(wk.f32, (4, 4), "grid")
ix = FakeField(wk.i32, 8, "ix")


def test_static_cannot_read_field_values():
    flag = FakeField(wk.i32, (), "flag")

    @wk.kernel
    def k():
        if wk.static(flag[None] > 0):  # err-static-field
            x[0] = 1.0

    check(compile_error(k), "wk.static() cannot read container 'flag': its values are run-time data",
          "if wk.static(flag[None] > 0):  # err-static-field")


def test_static_sees_an_ndarray_argument_s_axis_count_only():
    @wk.kernel
    def k(a: wk.types.ndarray(dtype=wk.f32, ndim=2)):
        for d in wk.static(range(len(a.shape))):
            x[d] = a.shape[d]
        for i in wk.static(range(a.shape[0])):  # err-static-extent
            x[i] = 1.0

    check(compile_error(k, (wk.f32, 2, ())), "the length of axis 0 of ndarray 'a' is known only at run time",
          "for i in wk.static(range(a.shape[0])):  # err-static-extent")


def test_starred_assignment_target():
    @wk.kernel
    def k():
        a, *rest = (1, 2, 3)  # err-starred
        x[0] = a

    check(compile_error(k), "starred assignment targets (a, *b = ...) are not supported",
          "a, *rest = (1, 2, 3)  # err-starred")


def test_vector_transpose_names_the_replacements():
    @wk.kernel
    def k():
        d = wk.Vector([1.0, 2.0])
        m = d @ d.transpose()  # err-vectranspose

    check(compile_error(k), "write `a @ b.transpose()` as a.outer_product(b)",
          "m = d @ d.transpose()  # err-vectranspose")
    check(compile_error(k), "(`transpose()` cannot apply to a vector. If you want something like "
          "`a @ b.transpose()`, write `a.outer_product(b)` instead.)", "m = d @ d.transpose()  # err-vectranspose")


def test_identity_comparison_outside_static():
    # Taichi and Quadrants refuse `is` in kernel code: it would compare Python objects, not values
    @wk.kernel
    def k():
        a = x is grid  # err-is
        x[0] = a

    @wk.kernel
    def k_not():
        x[0] = x is not grid  # err-is-not

    @wk.kernel
    def k_static():
        x[0] = wk.static(x is not grid)

    check(compile_error(k), 'Operator "is" is not supported in kernel code', "a = x is grid  # err-is")
    check(compile_error(k_not), 'write wk.static(a is not b) for a compile-time test',
          "x[0] = x is not grid  # err-is-not")
    assert of_type(build(k_static), ir.GlobalStore)


def test_negative_vector_indices():
    # Taichi and Quadrants refuse them (a field's offset indices are another matter: see test_offset)
    @wk.kernel
    def k(i: wk.i32):
        v = wk.Vector([i, i + 1, i + 2])
        ix[0] = v[:-1].sum()  # err-negslice

    @wk.kernel
    def k_index(i: wk.i32):
        m = wk.Matrix([[i, 1], [2, 3]])
        ix[0] = m[1, -1]  # err-negindex

    @wk.kernel
    def k_reversed(i: wk.i32):
        v = wk.Vector([i, i + 1, i + 2])
        ix[0] = v[::-1][0]

    check(compile_error(k, wk.i32), "Negative indices are not supported in Quadrants kernels, nor in Taichi's or "
          "wgkern's: slice(None, -1, None) in an index of a 3 vector/matrix", "ix[0] = v[:-1].sum()  # err-negslice")
    check(compile_error(k_index, wk.i32), "-1 in an index of a 2x2 vector/matrix; count from 0 (0..1)",
          "ix[0] = m[1, -1]  # err-negindex")
    assert run(build(k_reversed, wk.i32), {"ix": np.zeros(8, np.int32)}, [5])["ix"][0] == 7


def test_too_many_element_indices_name_the_expected_count():
    vx = FakeField(wk.types.vector(3, wk.f32), 4, "vx")

    @wk.kernel
    def local():
        v = wk.Vector([1.0, 2.0, 3.0])
        x[0] = v[0, 0]  # err-vec2

    @wk.kernel
    def element():
        x[0] = vx[1][0, 0]  # err-elem2

    check(compile_error(local), "a vector of 3 elements takes 1 index, got 2 (Expected 1 indices, got 2)",
          "x[0] = v[0, 0]  # err-vec2")
    check(compile_error(element), "elements of 'vx' have shape (3,); got 2 indices (Expected 1 indices, got 2)",
          "x[0] = vx[1][0, 0]  # err-elem2")


def test_errors_carry_quadrants_phrases():
    # ported pytest.raises(match=...) tests look for these phrases; wgkern's own wording comes first
    @wk.kernel
    def ndrange_triple():
        for i in wk.ndrange((1, 2, 3)):  # err-nd3
            x[0] = i

    @wk.kernel
    def ndrange_float():
        for i in wk.ndrange((1.5, 4)):  # err-ndf
            x[0] = i

    @wk.kernel
    def return_in_loop() -> wk.i32:
        for i in range(4):
            return i  # err-ret

    @wk.kernel
    def no_return() -> wk.i32:  # err-noret
        x[0] = 1.0

    @wk.kernel
    def bit_not_float(a: wk.f32):
        x[0] = ~a  # err-bnot

    @wk.kernel
    def static_runtime(a: wk.f32):
        if wk.static(a > 0.5):  # err-srt
            x[0] = 1.0

    @wk.kernel
    def slice_runtime(i: wk.i32):
        v = wk.Vector([1.0, 2.0, 3.0])
        x[0] = v[i:].sum()  # err-vslice

    @wk.kernel
    def atomic_on_list():
        wk.atomic_min([1.0, 2.0], 0.5)  # err-atl

    check(compile_error(ndrange_triple), "Every argument of ndrange should be a scalar or a tuple/list like "
          "(begin, end)", "for i in wk.ndrange((1, 2, 3)):  # err-nd3")
    check(compile_error(ndrange_float), "Every argument of ndrange should be an integer scalar or a tuple/list of "
          "(int, int)", "for i in wk.ndrange((1.5, 4)):  # err-ndf")
    check(compile_error(return_in_loop), "Return inside non-static if/for is not supported", "return i  # err-ret")
    check(compile_error(no_return), "Kernel has a return type but does not have a return statement",
          "def no_return() -> wk.i32:  # err-noret")
    check(compile_error(bit_not_float, wk.f32), "takes integral inputs only", "x[0] = ~a  # err-bnot")
    check(compile_error(static_runtime, wk.f32), "must be compile-time constants", "if wk.static(a > 0.5):")
    check(compile_error(slice_runtime, wk.i32), "Quadrants does not support variables in slice now",
          "x[0] = v[i:].sum()  # err-vslice")
    check(compile_error(atomic_on_list), "cannot use a non-writable target as the first operand of atomic_min",
          "wk.atomic_min([1.0, 2.0], 0.5)  # err-atl")
