"""Mistakes with wk.simt named by message: the CPU refuses every simt call, bad block_dim, bad shared-array shapes
and arguments, shared arrays outside a parallel loop, simt in serial code, bad operands, grad of a simt kernel."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def test_cpu_refuses_every_simt_call():
    wk.init(arch=wk.cpu)
    try:
        x = wk.field(wk.i32, shape=8)

        @wk.kernel
        def uses_subgroup():
            for i in range(8):
                x[i] = wk.simt.subgroup.reduce_add(x[i])

        @wk.kernel
        def uses_shared():
            for i in range(8):
                shared = wk.simt.block.SharedArray(8, wk.i32)
                shared[i] = 1
                x[i] = shared[i]

        with pytest.raises(wk.CompileError, match=r"wk\.simt\.subgroup\.reduce_add\(\) needs a GPU.*wk\.cuda.*"
                                                  r"wk\.vulkan.*not on the CPU backend") as info:
            uses_subgroup()
        assert "x[i] = wk.simt.subgroup.reduce_add(x[i])" in str(info.value)
        with pytest.raises(wk.CompileError, match=r"wk\.simt\.block\.SharedArray needs a GPU") as info:
            uses_shared()
        assert "shared[i] = 1" in str(info.value)
    finally:
        wk.reset()


@pytest.mark.parametrize("value, message", [(0, "out of range"), (-3, "out of range"), (2.5, "compile-time int"),
                                            (True, "compile-time int")])
def test_bad_block_dim_is_an_error(value, message):
    wk.init(arch=wk.cpu)
    try:
        x = wk.field(wk.i32, shape=8)

        @wk.kernel
        def configured():
            wk.loop_config(block_dim=value)
            for i in range(8):
                x[i] = i

        with pytest.raises(wk.CompileError, match=f"block_dim.*{message}") as info:
            configured()
        assert "wk.loop_config(block_dim=value)" in str(info.value)
    finally:
        wk.reset()


@pytest.mark.parametrize("shape", [0, (4, -1), (2.0,), (), "8"])
def test_bad_shared_array_shape_is_an_error(shape):
    wk.init(arch=wk.cpu)
    try:
        x = wk.field(wk.i32, shape=8)

        @wk.kernel
        def bad():
            for i in range(8):
                shared = wk.simt.block.SharedArray(shape, wk.i32)
                x[i] = shared[0]

        @wk.kernel
        def run_time(n: wk.i32):
            for i in range(8):
                shared = wk.simt.block.SharedArray(n, wk.i32)
                x[i] = shared[0]

        for kernel, args in ((bad, ()), (run_time, (4,))):
            with pytest.raises(wk.CompileError, match="SharedArray's shape must be a positive compile-time int") \
                    as info:
                kernel(*args)
            assert "shared = wk.simt.block.SharedArray(" in str(info.value)
    finally:
        wk.reset()


def test_shared_array_arguments_by_keyword(gpu):
    out = wk.field(wk.f32, shape=8)

    @wk.kernel
    def keywords():
        for i in range(8):
            first = wk.simt.block.SharedArray(dtype=wk.f32, shape=8)
            second = wk.simt.block.SharedArray(8, dtype=wk.f32)
            first[i] = 1.0
            second[i] = 2.0
            out[i] = first[i] + second[i]

    @wk.kernel
    def twice():
        for i in range(8):
            shared = wk.simt.block.SharedArray(8, wk.f32, shape=3)
            out[i] = shared[i]

    keywords()
    np.testing.assert_array_equal(out.to_numpy(), np.full(8, 3.0))
    with pytest.raises(wk.CompileError, match=r"SharedArray\(shape, dtype\) takes a shape and a dtype"):
        twice()


def test_shared_array_outside_a_parallel_loop_is_an_error():
    wk.init(arch=wk.cpu)
    try:
        x = wk.field(wk.i32, shape=8)

        @wk.kernel
        def top_level():
            shared = wk.simt.block.SharedArray(8, wk.i32)
            for i in range(8):
                x[i] = shared[i]

        with pytest.raises(wk.CompileError, match="inside a kernel's parallel loop"):
            top_level()
    finally:
        wk.reset()


def test_simt_in_serial_code_is_an_error(gpu):
    x = wk.field(wk.i32, shape=8)

    @wk.kernel
    def serial():
        wk.loop_config(serialize=True)
        for i in range(8):
            x[i] = wk.simt.block.thread_idx()

    with pytest.raises(wk.CompileError, match=r"thread_idx\(\) works on the threads of a parallel loop"):
        serial()


def test_bad_operands_are_errors(gpu):
    x = wk.field(wk.f64, shape=8)
    y = wk.field(wk.f32, shape=8)

    @wk.kernel
    def wide():
        for i in range(8):
            x[i] = wk.simt.subgroup.reduce_add(x[i])

    @wk.kernel
    def float_bits():
        for i in range(8):
            y[i] = wk.simt.subgroup.reduce_xor(y[i])

    @wk.kernel
    def missing():
        for i in range(8):
            y[i] = wk.simt.subgroup.shuffle(y[i])

    with pytest.raises(wk.CompileError, match=r"reduce_add\(\) exchanges 32-bit values.*f64"):
        wide()
    with pytest.raises(wk.CompileError, match=r"reduce_xor\(\) combines integer bits"):
        float_bits()
    with pytest.raises(wk.CompileError, match=r"shuffle\(\) takes \(value, index\); 'index' is missing"):
        missing()


def test_grad_of_a_simt_kernel_is_an_autodiff_error(gpu):
    x = wk.field(wk.f32, shape=64, needs_grad=True)
    y = wk.field(wk.f32, shape=64, needs_grad=True)

    @wk.kernel
    def smooth():
        wk.loop_config(block_dim=64)
        for i in range(64):
            shared = wk.simt.block.SharedArray(64, wk.f32)
            shared[wk.simt.block.thread_idx()] = x[i]
            wk.simt.block.sync()
            y[i] = shared[63 - wk.simt.block.thread_idx()]

    smooth()
    with pytest.raises(wk.AutodiffError, match=r"uses wk\.simt\.block\.thread_idx\(\), which has no derivative") as info:
        smooth.grad()
    assert "shared[wk.simt.block.thread_idx()] = x[i]" in str(info.value)
