"""wk.graph_do_while in kernels on every available arch: the body repeats until the condition is zero, its
loops run as parallel tasks the host repeats, errors name the condition, and such kernels are not differentiated."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def test_graph_do_while_repeats_its_body_until_the_condition_is_zero(arch):
    # Quadrants' test_graph_do_while: `while wk.graph_do_while(c): body` runs the body, then again while c[()]
    # is non-zero; c may be a parameter or an ndarray held by a @data_oriented object, and loops nest
    n = 16

    @wk.kernel(graph=True)
    def count_down(x: wk.types.ndarray(wk.i32, ndim=1), counter: wk.types.ndarray(wk.i32, ndim=0)):
        while wk.graph_do_while(counter):
            for i in range(x.shape[0]):
                x[i] = x[i] + 1
            for i in range(1):
                counter[()] = counter[()] - 1

    @wk.data_oriented
    class Stepper:
        def __init__(self):
            self.x = wk.ndarray(wk.i32, shape=(n,))
            self.outer = wk.ndarray(wk.i32, shape=())
            self.inner = wk.ndarray(wk.i32, shape=())

        @wk.kernel(graph=True)
        def step(self):
            while wk.graph_do_while(self.outer):
                for _ in range(1):
                    self.inner[()] = 4
                while wk.graph_do_while(self.inner):
                    for i in range(n):
                        self.x[i] = self.x[i] + 1
                    for _ in range(1):
                        self.inner[()] = self.inner[()] - 1
                for _ in range(1):
                    self.outer[()] = self.outer[()] - 1

    def check():
        x = wk.ndarray(wk.i32, shape=(n,))
        counter = wk.ndarray(wk.i32, shape=())
        for start in (5, 1):
            x.fill(0)
            counter[()] = start
            count_down(x, counter)
            assert counter[()] == 0 and x.to_numpy().tolist() == [start] * n
        s = Stepper()
        s.outer[()] = 3
        s.step()
        assert s.outer[()] == 0 and s.x.to_numpy().tolist() == [12] * n

    check()


def test_graph_do_while_errors_name_the_condition(arch):
    @wk.kernel(graph=True)
    def on_a_vector(c: wk.types.ndarray(wk.i32, ndim=1)):
        while wk.graph_do_while(c):
            c[0] = 0

    @wk.kernel(graph=True)
    def with_continue(c: wk.types.ndarray(wk.i32, ndim=0)):
        while wk.graph_do_while(c):
            if c[()] > 3:
                continue
            c[()] = 0

    @wk.kernel(graph=True)
    def unknown_name(c: wk.types.ndarray(wk.i32, ndim=0)):
        while wk.graph_do_while(nonexistent):  # noqa: F821 - the error under test
            c[()] = 0

    c1 = wk.ndarray(wk.i32, shape=(2,))
    c0 = wk.ndarray(wk.i32, shape=())
    with pytest.raises(wk.CompileError, match="0-d integer ndarray or field"):
        on_a_vector(c1)
    with pytest.raises(wk.CompileError, match="'continue' in a wk.graph_do_while loop"):
        with_continue(c0)
    with pytest.raises(wk.CompileError, match=r"name 'nonexistent' is not defined \(the condition of "
                                              r"wk\.graph_do_while\(\) does not resolve to an ndarray kernel "
                                              r"parameter\)"):
        unknown_name(c0)

    qd = wk          # as Quadrants spells it: a graph kernel's construct (without graph=True Quadrants refuses it)

    @wk.kernel
    def not_graph(c: wk.types.ndarray(wk.i32, ndim=0)):
        while qd.graph.do_while(c):
            c[()] = c[()] - 1

    c0.from_numpy(np.array(3, np.int32))
    with pytest.raises(wk.CompileError, match=r"qd\.graph\.do_while\(\) requires @qd\.kernel\(graph=True\): write "
                                              r"@qd\.kernel\(graph=True\) above 'not_graph'"):
        not_graph(c0)
    assert c0.to_numpy() == 3
    with pytest.raises(wk.WkError, match="inside a @wk.kernel"):
        wk.graph_do_while(c0)


def test_graph_do_while_body_loops_run_as_parallel_tasks_the_host_repeats(arch):
    """At a kernel's top level the loop is a host loop, as Quadrants runs it without CUDA graphs: its body's
    outermost loops are parallel tasks, repeated while the counter (here a 0-d field) is non-zero; a local set
    before the loop, one updated in every trip and read after it, and a bare statement in the body all keep
    their serial meaning."""
    n = 64
    x = wk.field(wk.f32, shape=n)
    counter = wk.field(wk.i32, shape=())
    trips = wk.field(wk.i32, shape=())
    total = wk.field(wk.f32, shape=())

    @wk.kernel(graph=True)
    def relax(start: wk.i32):
        counter[None] = start                # runs once, before the loop
        scale = 0.5
        done = 0
        while wk.graph_do_while(counter):
            for i in range(n):
                x[i] = x[i] * scale + 1.0
            done += 1
            counter[None] -= 1
        trips[None] = done
        for i in range(n):
            total[None] += x[i]

    relax(6)
    want = np.zeros(n, np.float32)
    for _ in range(6):
        want = want * 0.5 + 1.0
    np.testing.assert_allclose(x.to_numpy(), want, rtol=1e-6)
    assert counter[None] == 0 and trips[None] == 6
    assert total[None] == pytest.approx(want.sum(), rel=1e-5)
    text = relax.ir()
    assert "host loop: tasks" in text and text.count(" range {") >= 2     # the body's loop is a parallel task


@wk.func
def _block_sums(x: wk.template(), sums: wk.template()):
    """One block of 32 threads per row of x: the row's sum through shared memory (Genesis's cooperative
    solver kernels have this form, inside a wk.graph_do_while body)."""
    wk.loop_config(block_dim=32)
    for i in range(x.shape[0] * 32):
        tid = i % 32
        row = i // 32
        if wk.simt.block.thread_idx() != tid:
            sums[row] = -1.0e30                    # a block of another size than asked for
        shared = wk.simt.block.SharedArray((32,), wk.f32)
        shared[tid] = x[row, tid]
        wk.simt.block.sync()
        if tid == 0:
            total = 0.0
            for k in range(32):
                total += shared[k]
            sums[row] += total
        wk.simt.block.sync()


def test_graph_do_while_body_loops_keep_their_block_dim(gpu):
    """loop_config(block_dim=N) before a loop in a graph_do_while body (written there or in a func inlined
    there) gives that loop blocks of N threads, as at the kernel's top level: cooperative loops sharing a
    SharedArray per block otherwise mix the rows of several blocks."""
    rows = 40
    x = wk.ndarray(wk.f32, shape=(rows, 32))
    sums = wk.ndarray(wk.f32, shape=(rows,))
    counter = wk.ndarray(wk.i32, shape=())

    @wk.kernel(graph=True)
    def repeat_sums(x: wk.types.ndarray(wk.f32, ndim=2), sums: wk.types.ndarray(wk.f32, ndim=1),
                    counter: wk.types.ndarray(wk.i32, ndim=0)):
        while wk.graph_do_while(counter):
            _block_sums(x, sums)
            for _ in range(1):
                counter[()] = counter[()] - 1

    values = np.random.default_rng(7).integers(-8, 8, size=(rows, 32)).astype(np.float32)
    x.from_numpy(values)
    sums.fill(0.0)
    counter[()] = 3
    repeat_sums(x, sums, counter)
    # integer-valued f32 sums of 32 terms below 2^24: exact in any order
    np.testing.assert_array_equal(sums.to_numpy(), 3 * values.sum(axis=1))
    assert "block_dim=32" in repeat_sums.ir()


def test_graph_do_while_body_refuses_a_shared_array_outside_a_loop(gpu):
    counter = wk.ndarray(wk.i32, shape=())

    @wk.kernel(graph=True)
    def bad(counter: wk.types.ndarray(wk.i32, ndim=0)):
        while wk.graph_do_while(counter):
            shared = wk.simt.block.SharedArray((32,), wk.f32)
            for i in range(32):
                shared[i] = 1.0
            for _ in range(1):
                counter[()] = counter[()] - 1

    counter[()] = 1
    with pytest.raises(wk.CompileError, match="SharedArray is made inside a kernel's parallel loop"):
        bad(counter)


def test_graph_do_while_kernels_are_not_differentiated(arch):
    """The trips of a graph_do_while loop depend on a counter the kernel changes, so .grad, Tape and FwdMode
    refuse the kernel (naming the loop's line) instead of differentiating one trip."""
    x = wk.field(wk.f32, shape=4, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)
    counter = wk.field(wk.i32, shape=())

    @wk.kernel(graph=True)
    def repeated():
        counter[None] = 3
        while wk.graph_do_while(counter):
            for i in range(4):
                loss[None] += x[i] * x[i]
            counter[None] -= 1

    repeated()
    with pytest.raises(wk.AutodiffError, match="graph_do_while loop, which has no derivative") as info:
        repeated.grad()
    assert "while wk.graph_do_while(counter):" in str(info.value)
    with pytest.raises(wk.AutodiffError, match="graph_do_while"):
        with wk.ad.Tape(loss=loss):
            repeated()
