"""Kernel print() text: format specs read as Taichi reads them (printf's conversions and defaults)."""
from __future__ import annotations

import wgkern as wk
from wgkern.ir.printing import format_constant, format_value


def test_format_specs_follow_printf_conversions_and_defaults():
    assert format_value(1.0, wk.f32, ".1") == "1.0"             # no conversion: %.1f, not Python's 1e+00
    assert format_value(3.5, wk.f64, "10") == "  3.500000"
    assert format_value(3, wk.i32, ".10d") == "0000000003"      # an integer's precision is its least digits
    assert format_value(-5, wk.i32, "6.3d") == "  -005"
    assert format_value(7, wk.i32, "i") == format_value(7, wk.u32, "u") == "7"
    assert format_value(2, wk.i32, ".1") == "2"
    assert format_value(123.4, wk.f32, ".3G") == "123"
    assert format_constant(3, ".4d") == "0003" and format_constant(2.5, ".2") == "2.50"


def test_kernel_print_applies_taichi_format_specs(arch, capsys):
    a = wk.field(wk.f32, shape=2)
    z = wk.Matrix.field(2, 2, wk.i32, shape=())

    @wk.kernel
    def show():
        a[0] = 1.0
        print(f"{a[0]:.1} {z[None]:.2d}")
        print("{:i} {:.1} {:.10d} {:.2}".format(1, 2, 3, a[0]))

    show()
    wk.sync()
    assert capsys.readouterr().out == "1.0 [[00, 00], [00, 00]]\n1 2 0000000003 1.00\n"
