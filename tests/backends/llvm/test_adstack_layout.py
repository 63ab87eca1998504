"""The LLVM backends' reverse launches reuse their adstack layout: a launch with the capacities and thread
counts of the kernel's previous one keeps its layout (backends/adstack.py layout_kernel) and the context already
written (on CUDA: no upload, which would wait for the stream), and any change lays the heap out anew. Results
are checked against the reference interpreter at every launch."""
from __future__ import annotations

import numpy as np

from wgkern.backends.adstack import collect_stacks, element_bytes, layout_kernel, layout_task
from wgkern.lang import types as T
from wgkern.runtime import program as program_module

from ..wgsl._kernels import relaunch_counted_stacks, stack_kernel


def test_layout_kernel_returns_the_last_layout_for_the_same_capacities_and_threads() -> None:
    stacks = collect_stacks(stack_kernel(T.f64, 8))
    first = layout_kernel(stacks, [[4]], [96], element_bytes, slot_major=True, alignment=8)
    assert layout_kernel(stacks, [[4]], [96], element_bytes, True, 8, last=first) is first
    wider = layout_kernel(stacks, [[4]], [128], element_bytes, True, 8, last=first)
    deeper = layout_kernel(stacks, [[9]], [96], element_bytes, True, 8, last=first)
    assert wider is not first and deeper is not first
    for laid, capacity, threads in ((first, 4, 96), (wider, 4, 128), (deeper, 9, 96)):
        want = layout_task(stacks[0], [capacity], threads, element_bytes, slot_major=True, alignment=8)
        np.testing.assert_array_equal(laid.rows, want.metadata.reshape(-1))
        assert laid.heap_units == want.heap_units == capacity * threads * 8
    static = layout_kernel(stacks, None, [96], element_bytes, True, 8)
    assert static.rows[-1] == 32 and layout_kernel(stacks, None, [96], element_bytes, True, 8, last=static) is static


def test_a_reverse_launch_reuses_the_layout_and_context_only_while_nothing_changed(llvm, monkeypatch) -> None:
    """Launches over 300, 300, 5000, 300 indices, then with a larger capacity: the repeated launch keeps the
    layout and writes no context; a new thread count (CUDA's blocks) or capacity lays out and writes anew."""
    backend = program_module.get_program().backend
    uploads = []
    driver = getattr(backend, "driver", None)
    if driver is not None:
        upload = driver.upload
        monkeypatch.setattr(driver, "upload", lambda pointer, *rest: (uploads.append(pointer), upload(pointer, *rest)))
    found = relaunch_counted_stacks(backend, lambda compiled: (
        compiled.stack_layout,
        uploads.count(compiled.context.address) if driver is not None else compiled.adstack_context.written))
    layouts, written = [layout for layout, _ in found], [mark for _, mark in found]
    assert layouts[1] is layouts[0] and layouts[4] is not layouts[3]
    assert layouts[4].heap_units > layouts[3].heap_units
    if driver is not None:        # CUDA: the blocks follow the range, so 5000 indices need their own layout
        assert layouts[2] is not layouts[0] and layouts[3] is not layouts[2]
        assert written == [1, 1, 2, 3, 4]              # the second launch uploaded nothing
    else:                         # CPU: one slice per worker whatever the range
        assert layouts[2] is layouts[0] and layouts[3] is layouts[0]
        assert written[1] is written[0] and written[4] is not written[0]
