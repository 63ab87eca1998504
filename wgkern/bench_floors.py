"""The floors of `python -m wgkern bench` on the WGSL arches: what the same work costs wgpu itself.

Each returns a callable doing the floor's work once (None off the WGSL arches): the bench times it in
alternation with wgkern's own repetitions (`paired_medians`), so a machine whose speed drifts moves both alike.
`launch_floor`: the launch-overhead workload's dispatches recorded straight into wgpu (one compute pass,
the kernel's own pipeline and bind group, set once as the kernel's arguments never change, one ring upload,
one submit, the wait sync() uses: the batching wgkern's launches get) through encoding.NativeCommands, the
cheapest calls wgpu-py allows, so the ratio wgkern / floor counts wgkern's own per-launch work alone. With one
launch it is the floor of one launch followed by a sync.
`compile_floor`: the driver's compile of the same WGSL (a new shader module and compute pipeline per task,
as the kernel's first launch made them) and one dispatch of it: lavapipe runs its LLVM JIT of a compute
shader at the first dispatch.
Both take a kernel wgkern already launched (its compiled state gives the WGSL, pipelines and buffers)."""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def _wgsl_backend() -> Any | None:
    from wgkern.runtime import program
    backend = program.get_program().backend
    return backend if hasattr(backend, "pipeline_layout") and hasattr(backend, "device") else None


def paired_medians(run: Callable[[], None], floor: Callable[[], None], reps: int) -> tuple[float, float]:
    """(median seconds of `run`, of `floor`), timed alternately after one warm-up of each."""
    run_samples, floor_samples = [], []
    for rep in range(reps + 1):
        start = time.perf_counter()
        run()
        elapsed = time.perf_counter() - start
        floor_start = time.perf_counter()
        floor()
        floor_elapsed = time.perf_counter() - floor_start
        if rep:
            run_samples.append(elapsed)
            floor_samples.append(floor_elapsed)
    return statistics.median(run_samples), statistics.median(floor_samples)


def launch_floor(kernel: Any, field: Any, launches: int) -> Callable[[], None] | None:
    """`launches` dispatches of `kernel` (no arguments, one container `field`, launched once already) recorded
    directly into wgpu, submitted and waited for."""
    backend = _wgsl_backend()
    if backend is None:
        return None
    import wgpu
    from wgkern.backends.wgsl.encoding import command_recorder
    compiled = kernel.last_compiled.compiled
    device, queue = backend.device, backend.queue
    stride, params_size = compiled.stride, compiled.params_size
    # a kernel whose arguments never change needs one argument slot and one bind per pass (what wgkern records)
    slots = 1 if compiled.fixed_arguments else launches
    ring = device.create_buffer(size=stride * slots, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
    buffer = field.buffer
    backend.pipeline_layout(compiled.plan.bindings + compiled.runtime_bindings)
    layout = backend.layouts[compiled.plan.bindings + compiled.runtime_bindings][0]
    bind_group = device.create_bind_group(layout=layout, entries=[
        {"binding": 0, "resource": {"buffer": ring, "offset": 0, "size": params_size}},
        {"binding": 1, "resource": {"buffer": buffer.buffer, "offset": buffer.offset, "size": buffer.capacity}}])
    (task,) = compiled.tasks
    groups = task.groups([], [tuple(field.shape)])
    pipeline = task.flat if groups[2] else task.pipeline(False)
    ring_host = bytearray(stride * slots)
    commands = command_recorder(device)
    poll = backend.wait_idle          # the wait sync() uses (backends/wgsl/waiting.py)

    def run() -> None:
        commands.begin_pass()
        commands.set_pipeline(pipeline)
        for k in range(launches):
            if k < slots:
                commands.set_bind_group(bind_group, k * stride)
            commands.dispatch(groups[0], groups[1])
        commands.submit(queue, ring, ring_host, len(ring_host))
        if poll is not None:
            poll()
        else:
            queue.on_submitted_work_done_sync()
    backend.sync()
    return run


def compile_floor(kernels: list[Any], scalars: list[Any]) -> Callable[[], None] | None:
    """The driver making a new shader module and compute pipeline of each task shader of `kernels[0]` (its
    WGSL, pipeline layout and `wk_flat` constant as wgkern made them; the caller may replace the kernel
    between calls), and running it once on the kernel's containers: lavapipe compiles a compute shader to
    machine code at its first dispatch, not when the pipeline is made. `scalars`: the launch's arguments."""
    backend = _wgsl_backend()
    if backend is None:
        return None
    device, queue = backend.device, backend.queue
    poll = backend.wait_idle          # the wait sync() uses (backends/wgsl/waiting.py)

    def run() -> None:
        entry = kernels[0].last_compiled
        compiled = entry.compiled
        layout = backend.pipeline_layout(compiled.plan.bindings + compiled.runtime_bindings)
        bound = (*entry.static_buffers, *((backend.print_target(),) if compiled.has_prints else ()))
        bind_group = backend.bind_group((compiled.params_size, compiled.windows, *bound))
        encoder = device.create_command_encoder()
        compute_pass = encoder.begin_compute_pass()
        compute_pass.set_bind_group(0, bind_group, [0])     # the argument ring as the last launch left it
        for task in compiled.tasks:
            wgsl = task.shader.wgsl
            stage: dict[str, Any] = {"module": device.create_shader_module(code=wgsl), "entry_point": "main"}
            groups = task.groups(scalars, entry.static_shapes)
            if groups is None:
                continue
            if "override wk_flat" in wgsl and groups[2]:
                stage["constants"] = {"wk_flat": 1}
            compute_pass.set_pipeline(device.create_compute_pipeline(layout=layout, compute=stage))
            compute_pass.dispatch_workgroups(groups[0], groups[1])
        compute_pass.end()
        queue.submit([encoder.finish()])
        if poll is not None:
            poll()
        else:
            queue.on_submitted_work_done_sync()
    return run
