"""Graph kernels' do_while loops decided on the device (backends/llvm/cuda_graphs.py) give what the host loop gives,
on every available arch: counters of every integer type, nested loops, trip counts from the data, relaunches with
the same and with changed arguments. On CUDA the kernel is one CUDA graph, built once while its arguments stay the
same; WK_CUDA_GRAPH_LOOPS=0 keeps the host loop."""

import numpy as np
import pytest

import wgkern as wk
from wgkern.runtime.host_loops import HostLoopKernel


def _host_loop_kernel(kernel) -> HostLoopKernel:
    compiled = kernel.last_compiled.compiled
    assert isinstance(compiled, HostLoopKernel)
    return compiled


def _counting_kernel():
    """A new graph kernel adding 1 to every x[i] per trip, for as many trips as the counter says."""
    @wk.kernel(graph=True)
    def count(x: wk.types.ndarray(wk.i32, ndim=1), counter: wk.types.ndarray(wk.i32, ndim=0)):
        while wk.graph_do_while(counter):
            for i in range(x.shape[0]):
                x[i] += 1
            for _ in range(1):
                counter[()] -= 1
    return count


@pytest.mark.parametrize("dtype", ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"])
def test_do_while_counter_of_each_type_stops_the_loop(arch, dtype):
    # the loop halves a counter starting at 40 until it reaches 0: 40 -> 20 -> 10 -> 5 -> 2 -> 1 -> 0, six trips
    wk_type = getattr(wk, dtype)
    if not wk.runtime.program.current().backend.supports(wk_type):
        pytest.skip(f"{dtype} is not supported on {arch}")

    @wk.kernel(graph=True)
    def run(counter: wk.types.ndarray(wk_type, ndim=0), trips: wk.types.ndarray(wk.i32, ndim=1)):
        while wk.graph_do_while(counter):
            for i in range(trips.shape[0]):
                trips[i] += 1
            for _ in range(1):
                counter[()] = counter[()] // 2

    counter = wk.ndarray(wk_type, shape=())
    trips = wk.ndarray(wk.i32, shape=(100,))
    for launch in range(1, 4):
        counter[()] = 40
        run(counter, trips)
        assert np.all(trips.to_numpy() == launch * 6)
        assert counter[()] == 0


def test_nested_do_while_loops_and_a_first_trip_that_always_runs(arch):
    # outer runs 3 trips; each runs the inner loop, whose counter is set to the outer counter's value times 2, so
    # the inner loop runs 6, 4, 2 trips; a do-while's body runs once even when its counter starts at 0 (the
    # counters stop at 0)
    @wk.kernel(graph=True)
    def nested(outer: wk.types.ndarray(wk.i32, ndim=0), inner: wk.types.ndarray(wk.i32, ndim=0),
               log: wk.types.ndarray(wk.i32, ndim=1)):
        while wk.graph_do_while(outer):
            for _ in range(1):
                inner[()] = outer[()] * 2
            while wk.graph_do_while(inner):
                for _ in range(1):
                    log[0] += 1
                    inner[()] = max(inner[()] - 1, 0)
            for _ in range(1):
                log[1] += 1
                outer[()] = max(outer[()] - 1, 0)

    outer, inner = wk.ndarray(wk.i32, shape=()), wk.ndarray(wk.i32, shape=())
    log = wk.ndarray(wk.i32, shape=(2,))
    outer[()] = 3
    nested(outer, inner, log)
    assert log.to_numpy().tolist() == [6 + 4 + 2, 3]
    outer[()] = 0          # the body runs once: the inner loop runs once (its counter 0 after the first trip)
    nested(outer, inner, log)
    assert log.to_numpy().tolist() == [12 + 1, 4]
    assert outer[()] == 0


def test_do_while_relaunch_with_changed_arguments(arch):
    # a scalar, a new array and a new shape change what the tasks are passed: each launch gives the sum it should
    @wk.kernel(graph=True)
    def fill(x: wk.types.ndarray(wk.f32, ndim=1), counter: wk.types.ndarray(wk.i32, ndim=0), step: wk.f32):
        while wk.graph_do_while(counter):
            for i in range(x.shape[0]):
                x[i] += step
            for _ in range(1):
                counter[()] -= 1

    counter = wk.ndarray(wk.i32, shape=())
    for n, step, trips in ((8, 0.5, 3), (8, 0.5, 3), (8, 2.0, 2), (1000, 0.25, 4), (8, 0.5, 1)):
        x = wk.ndarray(wk.f32, shape=(n,))
        counter[()] = trips
        fill(x, counter, step)
        np.testing.assert_array_equal(x.to_numpy(), np.full(n, step * trips, np.float32))   # exact in f32


def test_cuda_runs_the_kernel_as_one_graph_built_once_per_arguments(arch):
    if arch != wk.cuda:
        pytest.skip("CUDA graphs are the CUDA backend's")

    count = _counting_kernel()
    x, counter = wk.ndarray(wk.i32, shape=(64,)), wk.ndarray(wk.i32, shape=())
    for _ in range(5):
        counter[()] = 7
        count(x, counter)
    assert np.all(x.to_numpy() == 35)
    graph = _host_loop_kernel(count).device_loops
    assert graph is not None and graph.builds == 1
    other = wk.ndarray(wk.i32, shape=(64,))
    counter[()] = 2
    count(other, counter)
    assert np.all(other.to_numpy() == 2) and graph.builds == 2


def test_wk_cuda_graph_loops_0_keeps_the_host_loop(arch, monkeypatch):
    monkeypatch.setenv("WK_CUDA_GRAPH_LOOPS", "0")

    count = _counting_kernel()
    x, counter = wk.ndarray(wk.i32, shape=(4,)), wk.ndarray(wk.i32, shape=())
    counter[()] = 3
    count(x, counter)
    assert np.all(x.to_numpy() == 3)
    assert _host_loop_kernel(count).device_loops is None


def test_do_while_random_numbers_differ_between_launches(arch):
    # each launch draws new numbers (the launch id seeds them): two launches of 256 uniform draws agreeing
    # everywhere has probability ~2^-5888
    @wk.kernel(graph=True)
    def draw(x: wk.types.ndarray(wk.f32, ndim=1), counter: wk.types.ndarray(wk.i32, ndim=0)):
        while wk.graph_do_while(counter):
            for i in range(x.shape[0]):
                x[i] = wk.random()
            for _ in range(1):
                counter[()] -= 1

    x, counter = wk.ndarray(wk.f32, shape=(256,)), wk.ndarray(wk.i32, shape=())
    draws = []
    for _ in range(2):
        counter[()] = 2
        draw(x, counter)
        draws.append(x.to_numpy())
    assert np.all((draws[0] >= 0) & (draws[0] < 1)) and np.any(draws[0] != draws[1])


def _refuse_graphs(arch, monkeypatch) -> None:
    """On CUDA, make the driver refuse every graph built (skip elsewhere)."""
    if arch != wk.cuda:
        pytest.skip("CUDA graphs are the CUDA backend's")
    from wgkern.backends.llvm import cuda_graphs
    from wgkern.backends.llvm.cuda_driver import CudaError

    def refuse(self, *args):
        raise CudaError("cuGraphInstantiate failed: CUDA_ERROR_NOT_SUPPORTED")
    monkeypatch.setattr(cuda_graphs.LoopGraph, "_build", refuse)


def test_cuda_keeps_the_host_loop_where_the_driver_refuses_the_graph(arch, monkeypatch):
    _refuse_graphs(arch, monkeypatch)
    count = _counting_kernel()
    x, counter = wk.ndarray(wk.i32, shape=(16,)), wk.ndarray(wk.i32, shape=())
    for _ in range(2):
        counter[()] = 3
        count(x, counter)
    assert np.all(x.to_numpy() == 6)
    assert "NOT_SUPPORTED" in _host_loop_kernel(count).device_loops.refused


def _three_task_kernel():
    """A new kernel of three tasks: x += step, then y = 2x, then total = sum(y) (exact in f32 for the values used)."""
    @wk.kernel
    def three(x: wk.types.ndarray(wk.f32, ndim=1), y: wk.types.ndarray(wk.f32, ndim=1),
              total: wk.types.ndarray(wk.f32, ndim=0), step: wk.f32):
        for i in range(x.shape[0]):
            x[i] += step
        for i in range(x.shape[0]):
            y[i] = 2.0 * x[i]
        for i in range(y.shape[0]):
            total[()] += y[i]
    return three


def _repeat_graph(kernel):
    return kernel.last_compiled.compiled.repeat_graph


def test_kernel_of_several_tasks_relaunched_with_same_and_changed_arguments(arch):
    # nine launches with the same arguments, then a changed scalar, a new array and a new shape, each launched
    # again: every launch gives what the three tasks compute (on CUDA the repeated ones run as one graph)
    three = _three_task_kernel()
    plan = [(8, 0.5)] * 9 + [(8, 2.0)] * 4 + [(16, 2.0)] * 4 + [(5, 0.25)] * 4
    arrays: dict = {}
    for n, step in plan:
        x, y, total = arrays.setdefault(n, (wk.ndarray(wk.f32, shape=(n,)), wk.ndarray(wk.f32, shape=(n,)),
                                            wk.ndarray(wk.f32, shape=())))
        before_x, before_total = x.to_numpy(), float(total[()])
        three(x, y, total, step)
        expect_x = before_x + np.float32(step)
        np.testing.assert_array_equal(x.to_numpy(), expect_x)
        np.testing.assert_array_equal(y.to_numpy(), 2 * expect_x)
        assert float(total[()]) == before_total + float(np.sum(2 * expect_x, dtype=np.float64))


def test_cuda_builds_the_graph_of_a_repeated_launch_once_per_arguments(arch):
    if arch != wk.cuda:
        pytest.skip("CUDA graphs are the CUDA backend's")
    from wgkern.backends.llvm.cuda_graphs import RepeatGraph

    three = _three_task_kernel()
    x, y, total = wk.ndarray(wk.f32, shape=(64,)), wk.ndarray(wk.f32, shape=(64,)), wk.ndarray(wk.f32, shape=())
    for launch in range(1, RepeatGraph.REPEATS):
        three(x, y, total, 1.0)
        assert _repeat_graph(three).graph is None          # not yet repeated often enough: launched per task
    for launch in range(RepeatGraph.REPEATS, 10):
        three(x, y, total, 1.0)
    repeated = _repeat_graph(three)
    assert repeated.graph.builds == 1 and repeated.graph.launches == 10 - RepeatGraph.REPEATS
    three(x, y, total, 3.0)                                # other arguments: per task, the graph kept
    assert repeated.graph.builds == 1
    for _ in range(RepeatGraph.REPEATS):
        three(x, y, total, 3.0)
    assert repeated.graph.builds == 2
    assert np.all(x.to_numpy() == 9 + 3 * (1 + RepeatGraph.REPEATS))


def test_cuda_one_task_kernels_and_wk_cuda_graphs_0_launch_per_task(arch, monkeypatch):
    if arch != wk.cuda:
        pytest.skip("CUDA graphs are the CUDA backend's")

    @wk.kernel
    def one(x: wk.types.ndarray(wk.f32, ndim=1)):
        for i in range(x.shape[0]):
            x[i] += 1.0
    x = wk.ndarray(wk.f32, shape=(8,))
    one(x)
    assert _repeat_graph(one) is None
    monkeypatch.setenv("WK_CUDA_GRAPHS", "0")
    three = _three_task_kernel()
    y, total = wk.ndarray(wk.f32, shape=(8,)), wk.ndarray(wk.f32, shape=())
    for _ in range(5):
        three(x, y, total, 1.0)
    assert _repeat_graph(three) is None and np.all(x.to_numpy() == 6)


def test_repeated_kernel_draws_new_random_numbers_every_launch(arch):
    # two tasks drawing 256 uniform numbers each; six launches with the same arguments (on CUDA the last ones
    # are one graph): no two consecutive launches agree (probability ~2^-5888 each)
    @wk.kernel
    def draw(x: wk.types.ndarray(wk.f32, ndim=1), y: wk.types.ndarray(wk.f32, ndim=1)):
        for i in range(x.shape[0]):
            x[i] = wk.random()
        for i in range(y.shape[0]):
            y[i] = wk.random()

    x, y = wk.ndarray(wk.f32, shape=(256,)), wk.ndarray(wk.f32, shape=(256,))
    draws = []
    for _ in range(6):
        draw(x, y)
        draws.append(np.concatenate([x.to_numpy(), y.to_numpy()]))
    for before, after in zip(draws, draws[1:]):
        assert np.all((after >= 0) & (after < 1)) and np.any(before != after)


def test_cuda_launches_per_task_where_the_driver_refuses_the_repeat_graph(arch, monkeypatch):
    _refuse_graphs(arch, monkeypatch)
    three = _three_task_kernel()
    x, y, total = wk.ndarray(wk.f32, shape=(8,)), wk.ndarray(wk.f32, shape=(8,)), wk.ndarray(wk.f32, shape=())
    for _ in range(6):
        three(x, y, total, 1.0)
    assert np.all(x.to_numpy() == 6) and "NOT_SUPPORTED" in _repeat_graph(three).graph.refused
