"""Serial tasks whose long top-level loops run in chunks on llvmpipe (backends/wgsl/serial_chunks.py): the
serialized loops of a kernel over more iterations than one invocation's loop budget (65535 trips, 8 iterations
a trip where the body is copied) run in order and in full on every arch, and tasks whose loops carry state from
one loop to the next, or leave early, are not chunked (past the budget they are reported: test_codegen.py);
values loaded before the loops from containers the task does not write are read again by every chunk."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.wgsl.serial_chunks import (CHUNK_ITERATIONS, CHUNK_LOOP, MAX_CHUNKS, chunk_dispatches,
                                                chunk_iterations, chunk_loop_source, chunk_pipeline_constants,
                                                chunked_loops)
from wgkern.backends.wgsl.shader_common import LLVMPIPE_UNROLL, LOOP_LIMIT_ITERATIONS
from wgkern.ir import host_eval
from wgkern.runtime import program as program_module

# more iterations than one invocation can run on llvmpipe even with every trip running LLVMPIPE_UNROLL of them
N = LLVMPIPE_UNROLL * LOOP_LIMIT_ITERATIONS + 12345


def _on_llvmpipe() -> bool:
    from wgkern.backends.wgsl.shader_common import LOOP_LIMIT
    return LOOP_LIMIT in getattr(program_module.current().backend, "features", ())


def test_serialized_loops_past_the_loop_budget_run_in_order_and_in_full(arch) -> None:
    """Two serialized loops over N elements (a copy, then a running sum whose every iteration reads the one
    before: a chunk that ran out of order, or before the previous chunk's writes were visible, changes the
    sums), and a third from an argument's offset: integer sums, exact on every arch."""
    src = wk.ndarray(wk.i32, (N,))
    dst = wk.ndarray(wk.i32, (N,))
    tail = wk.ndarray(wk.i32, (N,))

    @wk.kernel
    def running_sums(src: wk.types.ndarray(), dst: wk.types.ndarray(), tail: wk.types.ndarray(), start: wk.i32):
        n = src.shape[0]
        wk.loop_config(serialize=True)
        for i in range(n):
            dst[i] = src[i]
        wk.loop_config(serialize=True)
        for i in range(1, n):
            dst[i] += dst[i - 1]
        wk.loop_config(serialize=True)
        for i in range(start, n):
            tail[i] = dst[i] - dst[start - 1]

    values = (np.arange(N) % 7).astype(np.int32)
    src.from_numpy(values)
    tail.from_numpy(np.full(N, -1, np.int32))
    start = CHUNK_ITERATIONS + 5                # the third loop's chunks start off the chunk grid
    running_sums(src, dst, tail, start)
    want = np.cumsum(values)                    # < 7 N: fits an i32
    np.testing.assert_array_equal(dst.to_numpy(), want)
    got = tail.to_numpy()
    assert (got[:start] == -1).all()
    np.testing.assert_array_equal(got[start:], want[start:] - want[start - 1])
    task = running_sums.last_compiled.offloaded.tasks[0]
    assert len(chunked_loops(task)) == 3
    if _on_llvmpipe():
        assert "wk_chunk_loop == 2u" in running_sums.source(arch)


def test_a_launch_dispatches_each_chunk_of_each_loop_that_runs(arch) -> None:
    """The dispatches of one launch, each named by the loop whose pipeline it runs: one for every chunk, one for
    a loop that runs no iteration, from the bounds the host computes from the launch's arguments and shapes; at
    most MAX_CHUNKS chunks a loop, larger ones past that."""
    out = wk.ndarray(wk.i32, (8,))

    @wk.kernel
    def loops(out: wk.types.ndarray(), a: wk.i32, b: wk.i32):
        wk.loop_config(serialize=True)
        for i in range(a):
            out[i % 8] += 1
        wk.loop_config(serialize=True)
        for i in range(b, a):
            out[i % 8] -= 1

    loops(out, 5, 5)
    task = loops.last_compiled.offloaded.tasks[0]
    chunked = chunked_loops(task)
    assert len(chunked) == 2
    sizes = [chunk_iterations(loop) for loop in chunked]
    assert sizes == [CHUNK_ITERATIONS] * 2
    shapes = host_eval.shapes_by_slot(loops.last_compiled.offloaded.containers, [(8,)])
    assert chunk_dispatches(chunked, sizes, [None, 5, 5], shapes) == [0, 1]
    # 2 CHUNK_ITERATIONS + 1 iterations: three chunks; from 3 on, two (the second one short)
    assert chunk_dispatches(chunked, sizes, [None, 2 * CHUNK_ITERATIONS + 1, 3], shapes) == [0] * 3 + [1] * 2
    assert chunk_dispatches(chunked, sizes, [None, 0, 3], shapes) == [0, 1]
    many = chunk_dispatches(chunked, sizes, [None, 2 ** 31 - 1, 2 ** 31 - 1], shapes)
    assert many == [0] * MAX_CHUNKS + [1]
    np.testing.assert_array_equal(out.to_numpy(), [1] * 5 + [0] * 3)


def test_loops_over_a_batch_run_one_iteration_a_chunk(arch) -> None:
    """A serialized loop over the environments of a batch, each running an inner loop of run-time length (as
    Genesis's solvers on its CPU backend): a chunk is one environment, whose inner loop then has the budget to
    itself; with compile-time inner loops a chunk takes as many environments as fit. Exact sums on every arch."""
    envs, steps = 64, 100_000       # 6.4e6 inner iterations: more than one invocation runs, even 8 a trip
    out = wk.ndarray(wk.i64, (envs,))

    @wk.kernel
    def batch(out: wk.types.ndarray(), n: wk.i32):
        wk.loop_config(serialize=True)
        for e in range(out.shape[0]):
            acc = wk.i64(0)
            for i in range(n):
                acc += (i * (e + 1)) % 7
            out[e] = acc

    @wk.kernel
    def fixed(out: wk.types.ndarray()):
        wk.loop_config(serialize=True)
        for e in range(out.shape[0]):
            acc = wk.i64(0)
            for i in range(99):
                acc += i * e
            out[e] = acc

    batch(out, steps)
    i = np.arange(steps, dtype=np.int64)
    np.testing.assert_array_equal(out.to_numpy(), [((i * (e + 1)) % 7).sum() for e in range(envs)])
    assert [chunk_iterations(loop) for loop in chunked_loops(batch.last_compiled.offloaded.tasks[0])] == [1]
    fixed(out)
    np.testing.assert_array_equal(out.to_numpy(), [4851 * e for e in range(envs)])
    loop = fixed.last_compiled.offloaded.tasks[0].body.stmts[-1]
    assert chunk_iterations(loop) == CHUNK_ITERATIONS // 100     # each environment: itself and 99 inner trips


@pytest.mark.parametrize("n", [0, 5, N])
def test_top_level_stores_run_once_between_their_loops(arch, n: int) -> None:
    """Stores between a task's chunked loops (Genesis's solver resets a counter so between its serialized
    loops) run once, in order with the loops around them, also where a loop runs no iteration."""
    data = wk.ndarray(wk.i32, (max(n, 1),))
    log = wk.ndarray(wk.i32, (3,))

    @wk.kernel
    def staged(data: wk.types.ndarray(), log: wk.types.ndarray(), n: wk.i32):
        log[0] = 7                      # before the first loop: its first chunk
        wk.loop_config(serialize=True)
        for i in range(n):
            log[0] += 1
        log[1] = -1                     # between the loops: the second loop's first chunk, after all of the first
        wk.loop_config(serialize=True)
        for i in range(n):
            log[1] += 1
            data[i] = log[0] + log[1]
        log[2] = 5                      # after the last loop: its last chunk

    log.from_numpy(np.array([100, 100, 100], np.int32))
    staged(data, log, n)
    np.testing.assert_array_equal(log.to_numpy(), [7 + n, n - 1, 5])
    if n:
        np.testing.assert_array_equal(data.to_numpy(), 7 + n + np.arange(n))
    if n == N:
        assert len(chunked_loops(staged.last_compiled.offloaded.tasks[0])) == 2


def test_values_loaded_before_the_loops_are_read_again_by_every_chunk(arch) -> None:
    """Settings read before serialized loops (as Genesis reads `EPS = rigid_info.EPS[None]` and other 0-d
    arrays before its loops over the environments): a 0-d field and an element of an ndarray the task only
    reads, used by every iteration of loops past the budget and by a store after them. Exact integer results
    on every arch; on llvmpipe the loops run in chunks."""
    offset = wk.field(wk.i32, shape=())
    settings = wk.ndarray(wk.i32, (2,))
    src = wk.ndarray(wk.i32, (N,))
    dst = wk.ndarray(wk.i32, (N,))
    log = wk.ndarray(wk.i32, (1,))

    @wk.kernel
    def scaled(settings: wk.types.ndarray(), src: wk.types.ndarray(), dst: wk.types.ndarray(),
               log: wk.types.ndarray()):
        shift = offset[None]
        factor = settings[1]
        n = src.shape[0]
        wk.loop_config(serialize=True)
        for i in range(n):
            dst[i] = src[i] * factor + shift
        wk.loop_config(serialize=True)
        for i in range(1, n):
            dst[i] += dst[i - 1] % 5 - shift
        log[0] = factor - shift         # after the last loop: its last chunk

    offset[None] = 11
    settings.from_numpy(np.array([-4, 3], np.int32))
    values = (np.arange(N) % 7).astype(np.int32)
    src.from_numpy(values)
    scaled(settings, src, dst, log)
    want = values * 3 + 11
    for i in range(1, N):               # each element depends on the one before, as the shader computes it
        want[i] += want[i - 1] % 5 - 11
    np.testing.assert_array_equal(dst.to_numpy(), want)
    assert log.to_numpy()[0] == 3 - 11
    assert len(chunked_loops(scaled.last_compiled.offloaded.tasks[0])) == 2
    if _on_llvmpipe():
        assert "wk_chunk_loop == 1u" in scaled.source(arch)


def test_one_array_read_before_the_loops_and_written_by_them_is_refused_on_llvmpipe(arch) -> None:
    """A launch passing one array as an ndarray read before chunked loops and as one they write: every chunk
    would read what the chunks before it wrote, so on llvmpipe the launch raises, naming both arguments; where
    the task runs in one invocation (the CPU) the value is read once, before the loops."""
    data = wk.ndarray(wk.i32, (N,))
    other = wk.ndarray(wk.i32, (N,))

    @wk.kernel
    def fill(settings: wk.types.ndarray(), data: wk.types.ndarray()):
        start = settings[0]
        wk.loop_config(serialize=True)
        for i in range(data.shape[0]):
            data[i] = start + i

    other.from_numpy(np.full(N, 5, np.int32))
    fill(other, data)                   # two arrays: chunked on llvmpipe, every chunk reads 5
    np.testing.assert_array_equal(data.to_numpy(), 5 + np.arange(N))
    if _on_llvmpipe():
        with pytest.raises(wk.ArgumentError, match=r"kernel fill: ndarray arguments 'settings' and 'data' are the "
                                                   r"same array.*arch=wk.cpu"):
            fill(data, data)
        np.testing.assert_array_equal(data.to_numpy(), 5 + np.arange(N))      # nothing ran
        wk.sync()
    else:
        fill(data, data)
        np.testing.assert_array_equal(data.to_numpy(), 5 + np.arange(N))      # data[0] was 5


@pytest.mark.parametrize("case", ["carried local", "break", "global bound", "written container read before"])
def test_loops_that_depend_on_the_whole_task_are_not_chunked(arch, case: str) -> None:
    """A local carried from one loop to what follows, a loop left by its `break`, a bound read from memory, a
    value read before the loop from a container the loop writes: a chunk could not be run on its own, so the task runs in one invocation (and is reported past the budget,
    test_codegen.py). Each still computes its result on every arch."""
    src = wk.ndarray(wk.i32, (1000,))
    out = wk.ndarray(wk.i32, (2,))
    src.from_numpy(np.arange(1000, dtype=np.int32))

    @wk.kernel
    def carried(src: wk.types.ndarray(), out: wk.types.ndarray()):
        total = 0
        wk.loop_config(serialize=True)
        for i in range(src.shape[0]):
            total += src[i]
        out[0] = total

    @wk.kernel
    def broken(src: wk.types.ndarray(), out: wk.types.ndarray()):
        wk.loop_config(serialize=True)
        for i in range(src.shape[0]):
            out[0] += src[i]
            if src[i] == 500:
                break

    @wk.kernel
    def global_bound(src: wk.types.ndarray(), out: wk.types.ndarray()):
        wk.loop_config(serialize=True)
        for i in range(src[999]):
            out[0] += src[i]

    @wk.kernel
    def written_read_before(src: wk.types.ndarray(), out: wk.types.ndarray()):
        start = out[0] + 1              # a chunk would read what the chunks before it added
        wk.loop_config(serialize=True)
        for i in range(src.shape[0]):
            out[0] += src[i] * start

    kernel, want = {"carried local": (carried, 499500), "break": (broken, 125250),
                    "global bound": (global_bound, 498501),
                    "written container read before": (written_read_before, 499500)}[case]
    kernel(src, out)
    assert out.to_numpy()[0] == want
    assert all(chunked_loops(task) == () for task in kernel.last_compiled.offloaded.tasks)


def test_short_loops_run_in_one_dispatch(arch) -> None:
    """Loops whose bounds are constants within the chunk size need no chunks."""
    out = wk.ndarray(wk.i32, (4,))

    @wk.kernel
    def short(out: wk.types.ndarray()):
        wk.loop_config(serialize=True)
        for i in range(1000):
            out[i % 4] += i

    short(out)
    np.testing.assert_array_equal(out.to_numpy(), [sum(range(k, 1000, 4)) for k in range(4)])
    assert chunked_loops(short.last_compiled.offloaded.tasks[0]) == ()


def test_each_dispatch_runs_one_workgroup_of_its_own_loops_pipeline(arch, monkeypatch) -> None:
    """A serial task shaped like Genesis's rigid solver on its CPU backend with 64 environments: several
    serialized loops over the environments, each with an inner loop of run-time length (one environment a
    chunk) and a long body. Each dispatch is one workgroup of the pipeline made for its loop (the override
    CHUNK_LOOP), so llvmpipe, which runs an `if` as masked code, runs only that loop's code: not every loop's,
    in loop + 1 workgroups, as when the loop came from the workgroup count. Results match numpy's, computed in
    the same order, on every arch."""
    envs, width, loops = 64, 5, 4
    data = wk.ndarray(wk.i32, (envs, width))

    @wk.kernel
    def solver(data: wk.types.ndarray(), n: wk.i32):
        for k in wk.static(range(loops)):
            wk.loop_config(serialize=True)
            for e in range(data.shape[0]):
                for i in range(n):
                    x = data[e, i]
                    for j in wk.static(range(8)):
                        x = (x * (k + 3) + j + e) % 1009
                    data[e, i] = x

    values = np.arange(envs * width, dtype=np.int64).reshape(envs, width) % 101
    data.from_numpy(values.astype(np.int32))
    solver(data, width)
    want = values.copy()
    for k in range(loops):
        for j in range(8):
            want = (want * (k + 3) + j + np.arange(envs)[:, None]) % 1009
    np.testing.assert_array_equal(data.to_numpy(), want)
    task = solver.last_compiled.offloaded.tasks[0]
    chunked = chunked_loops(task)
    assert len(chunked) == loops and [chunk_iterations(loop) for loop in chunked] == [1] * loops
    shapes = host_eval.shapes_by_slot(solver.last_compiled.offloaded.containers, [(envs, width)])
    assert chunk_dispatches(chunked, [1] * loops, [None, width], shapes) == \
        [k for k in range(loops) for _ in range(envs)]
    assert chunk_pipeline_constants(2) == {CHUNK_LOOP: 2}
    assert chunk_loop_source("a\nif (x) {   // chunked loop 0\n  b\n}   // end of chunked loop 0\n"
                             "if (y) {   // chunked loop 1\n  c\n}   // end of chunked loop 1\nd\n", 1) == \
        "a\nif (y) {   // chunked loop 1\n  c\n}   // end of chunked loop 1\nd\n"
    # the text is cut once per task and each loop's source assembled from the pieces; a block whose end line is
    # missing runs to the end of the text
    cut = "a\n// chunked loop 0\nb\n// end of chunked loop 0\nc\n// chunked loop 1\nd"
    assert [chunk_loop_source(cut, k) for k in (0, 1, 2, 0)] == [
        "a\n// chunked loop 0\nb\n// end of chunked loop 0\nc\n", "a\nc\n// chunked loop 1\nd\n", "a\nc\n",
        "a\n// chunked loop 0\nb\n// end of chunked loop 0\nc\n"]
    assert chunk_loop_source("// chunked loop 3\nx", 0) == "\n"
    if _on_llvmpipe():
        source = solver.source(arch)
        assert f"override {CHUNK_LOOP}: u32 = 0u;" in source and "num_workgroups.x - 1u" not in source
        for k in range(loops):          # each pipeline's WGSL holds its own loop's block alone
            own = chunk_loop_source(source, k)
            assert [f"{CHUNK_LOOP} == {j}u" in own for j in range(loops)] == [j == k for j in range(loops)]
            assert len(own) < len(source)
        backend = program_module.current().backend
        recorded = []
        record = backend.commands.dispatch
        pipelines = []
        set_pipeline = backend.commands.set_pipeline
        monkeypatch.setattr(backend.commands, "dispatch", lambda x, y: (recorded.append((x, y)), record(x, y)))
        monkeypatch.setattr(backend.commands, "set_pipeline",
                            lambda pipeline: (pipelines.append(pipeline), set_pipeline(pipeline)))
        data.from_numpy(values.astype(np.int32))
        solver(data, width)
        wk.sync()
        monkeypatch.undo()
        np.testing.assert_array_equal(data.to_numpy(), want)
        assert recorded == [(1, 1)] * (loops * envs)      # was (k + 1, 1) for loop k: loops * envs * 5 / 2 groups
        assert len(pipelines) == loops and len({id(p) for p in pipelines}) == loops
