"""The CPU argument block (backends/llvm/layout.py): the split packers a launch plan uses (the container part
packed once, the header and scalars around it) give the same bytes as the one-call packer, with and without the
debug header and an adstack context."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.base import LaunchArgs
from wgkern.backends.llvm.layout import build_layout
from wgkern.runtime.program import get_program

field = None


@pytest.fixture(params=[False, True], ids=["release", "debug"])
def cpu(request: pytest.FixtureRequest):
    global field
    wk.init(arch=wk.cpu, debug=request.param)
    field = wk.field(wk.f32, shape=(3, 2))
    yield
    wk.reset()


@wk.kernel
def mixed(values: wk.types.ndarray(dtype=wk.f32, ndim=2), scale: wk.f32, shift: wk.i32, flag: wk.u1,
          wide: wk.u64):
    for i, j in values:
        values[i, j] = values[i, j] * scale + shift + wk.cast(flag, wk.f32) + wk.cast(wide % 7, wk.f32)
    for i, j in field:
        field[i, j] = scale


def _launch_args(values) -> tuple[object, LaunchArgs]:
    mixed(values, 2.0, -3, True, 2**63 + 5)
    mixed(values, 2.0, -3, True, 2**63 + 5)
    (form,) = get_program().launch_plans[mixed].values()
    (plan,) = form.plans.values()
    scalars = [None] * plan.scalar_count
    scalars[1:5] = [1.5, -(2**31), False, 2**64 - 1]
    return plan.entry.offloaded, LaunchArgs(scalars, plan.buffers, plan.shapes, 12345, 99)


@pytest.mark.parametrize("debug_addresses", [None, (1 << 40, (1 << 40) + 64)])
@pytest.mark.parametrize("adstack_context", [None, 1 << 41])
def test_split_packers_give_the_one_call_block(cpu, debug_addresses, adstack_context):
    kernel, arguments = _launch_args(wk.ndarray(wk.f32, (4, 5)))
    layout = build_layout(kernel, debug_addresses, adstack_context)
    whole = layout.pack(arguments)
    assert len(whole) == layout.size
    assert layout.pack_around(arguments, layout.pack_containers(arguments)) == whole


def test_planned_launches_pack_the_same_arguments(cpu):
    values = wk.ndarray(wk.f32, (4, 5))
    values.fill(1.0)
    mixed(values, 2.0, -3, True, 12)      # the full path
    mixed(values, 2.0, -3, True, 12)      # the plan: 1 * 2 - 3 + 1 + 5, then that * 2 - 3 + 1 + 5
    np.testing.assert_array_equal(values.to_numpy(), np.full((4, 5), 13.0, np.float32))
    np.testing.assert_array_equal(field.to_numpy(), np.full((3, 2), 2.0, np.float32))
