"""Recording and submitting a batch of launches: one command encoder, its compute passes, copies between them,
then one argument-ring write and one submit, made through wgpu-native directly where wgpu-py allows it.

wgpu-py's public methods build descriptor structs, wrap every handle in a Python object (which logs and counts
it) and wrap each native call in error capture: on this project's 2-core machine (lavapipe) a one-dispatch
batch's encode, argument write and submit cost 35-60 us through `NativeCommands` against 100-190 us through the
public API (docs/benchmarks.md, "The launch path on lavapipe"). `NativeCommands` calls wgpu-native through
wgpu-py's cffi library with descriptors made once; calls that can fail (end of a pass, copies, resolves, the
ring write, finish, submit) go through wgpu-py's error capture (`_api.libf`), so a rejected command raises
wgpu-py's GPUValidationError (the backend reports it as DeviceCommandError); the encoding calls' errors are
recorded by wgpu-native on the encoder and raised at finish. Where wgpu-py's internals are not what this module expects,
`PublicCommands` does the same through the public API (`command_recorder` picks).
Objects the native calls reference must stay alive until the batch is submitted: the backend's pipeline and
bind-group caches hold them, and what it drops while a batch is open goes to its keepalive list. The native
encoder, pass and command-buffer handles are released here, after the submit or a failed one (the command
buffer of a finish that raised is not returned by wgpu-py's capture, so that one handle is not released)."""
from __future__ import annotations

from typing import Any


class PublicCommands:
    """A batch's commands through wgpu-py's public API. `open`: a command encoder exists (something was
    recorded since the last submit); `compute_pass` is not None while a compute pass is open in it (an
    attribute, not a property: the launch path reads it at every launch)."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.encoder: Any = None
        self.compute_pass: Any = None

    @property
    def open(self) -> bool:
        return self.encoder is not None

    def begin_pass(self, timestamp_writes: tuple[Any, int, int] | None = None) -> None:
        """Open a compute pass; `timestamp_writes`: (query set, index at its beginning, index at its end)."""
        if self.encoder is None:
            self.encoder = self.device.create_command_encoder()
        if timestamp_writes is None:
            self.compute_pass = self.encoder.begin_compute_pass()
        else:
            query_set, begin, end = timestamp_writes
            self.compute_pass = self.encoder.begin_compute_pass(timestamp_writes={
                "query_set": query_set, "beginning_of_pass_write_index": begin, "end_of_pass_write_index": end})

    def end_pass(self) -> None:
        if self.compute_pass is not None:
            compute_pass, self.compute_pass = self.compute_pass, None
            compute_pass.end()

    def set_pipeline(self, pipeline: Any) -> None:
        self.compute_pass.set_pipeline(pipeline)

    def set_bind_group(self, bind_group: Any, offset: int) -> None:
        self.compute_pass.set_bind_group(0, bind_group, [offset])

    def dispatch(self, x: int, y: int) -> None:
        self.compute_pass.dispatch_workgroups(x, y)

    def _encoder_outside_pass(self) -> Any:
        self.end_pass()
        if self.encoder is None:
            self.encoder = self.device.create_command_encoder()
        return self.encoder

    def copy_buffer_to_buffer(self, source: Any, source_offset: int, destination: Any, destination_offset: int,
                              size: int) -> None:
        """A copy in order after what is recorded (the open pass is ended first)."""
        self._encoder_outside_pass().copy_buffer_to_buffer(source, source_offset, destination, destination_offset,
                                                           size)

    def resolve_query_set(self, query_set: Any, first: int, count: int, destination: Any, offset: int) -> None:
        self._encoder_outside_pass().resolve_query_set(query_set, first, count, destination, offset)

    def submit(self, queue: Any, ring: Any, ring_host: bytearray, ring_bytes: int) -> None:
        """End the pass, write the first `ring_bytes` of `ring_host` into the wgpu buffer `ring` (queue order
        puts the write before the commands), finish and submit. With nothing recorded, nothing happens. The
        batch is closed even when wgpu rejects it (its GPUError propagates)."""
        encoder, compute_pass = self.encoder, self.compute_pass
        self.encoder = self.compute_pass = None
        if encoder is None:
            return
        if compute_pass is not None:
            compute_pass.end()
        if ring_bytes:
            queue.write_buffer(ring, 0, memoryview(ring_host)[:ring_bytes])
        queue.submit([encoder.finish()])

    def discard(self) -> None:
        """Drop what is recorded, unsubmitted (after an error: the next launch starts a new batch)."""
        self.encoder = self.compute_pass = None


class NativeCommands(PublicCommands):
    """The same through wgpu-native's C functions (raises ImportError or AttributeError where wgpu-py's
    internals differ: `command_recorder` then uses PublicCommands)."""

    def __init__(self, device: Any) -> None:
        super().__init__(device)
        from wgpu.backends.wgpu_native import _api
        lib, ffi, captured = _api.lib, _api.ffi, _api.libf
        self._device = device._internal
        self._create_encoder = lib.wgpuDeviceCreateCommandEncoder
        self._begin_pass = lib.wgpuCommandEncoderBeginComputePass
        self._set_pipeline = lib.wgpuComputePassEncoderSetPipeline
        self._set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
        self._dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
        self._end_pass = captured.wgpuComputePassEncoderEnd
        self._copy = captured.wgpuCommandEncoderCopyBufferToBuffer
        self._resolve = captured.wgpuCommandEncoderResolveQuerySet
        self._write_buffer = captured.wgpuQueueWriteBuffer
        self._finish = captured.wgpuCommandEncoderFinish
        self._submit = captured.wgpuQueueSubmit
        self._release_pass = lib.wgpuComputePassEncoderRelease
        self._release_encoder = lib.wgpuCommandEncoderRelease
        self._release_commands = lib.wgpuCommandBufferRelease
        self._null = ffi.NULL
        self._ffi = ffi
        # descriptors made once (zeroed: no label, no chained struct), the dynamic offset, the submit's array
        self._encoder_descriptor = ffi.new("WGPUCommandEncoderDescriptor *")
        self._pass_descriptor = ffi.new("WGPUComputePassDescriptor *")
        self._timed_pass_descriptor = ffi.new("WGPUComputePassDescriptor *")
        self._timestamp_writes = ffi.new("WGPUPassTimestampWrites *")
        self._timed_pass_descriptor.timestampWrites = self._timestamp_writes
        self._commands_descriptor = ffi.new("WGPUCommandBufferDescriptor *")
        self._offset = ffi.new("uint32_t[1]")
        self._command_buffers = ffi.new("WGPUCommandBuffer[1]")
        self._ring_host: Any = None
        self._ring_pointer: Any = None
        self._passes: list[Any] = []      # handles of this batch's passes, released after the submit

    def begin_pass(self, timestamp_writes: tuple[Any, int, int] | None = None) -> None:
        if self.encoder is None:
            self.encoder = self._create_encoder(self._device, self._encoder_descriptor)
        descriptor = self._pass_descriptor
        if timestamp_writes is not None:
            query_set, begin, end = timestamp_writes
            self._timestamp_writes.querySet = query_set._internal
            self._timestamp_writes.beginningOfPassWriteIndex = begin
            self._timestamp_writes.endOfPassWriteIndex = end
            descriptor = self._timed_pass_descriptor
        self.compute_pass = self._begin_pass(self.encoder, descriptor)
        self._passes.append(self.compute_pass)

    def end_pass(self) -> None:
        if self.compute_pass is not None:
            compute_pass, self.compute_pass = self.compute_pass, None
            self._end_pass(compute_pass)

    def set_pipeline(self, pipeline: Any) -> None:
        self._set_pipeline(self.compute_pass, pipeline._internal)

    def set_bind_group(self, bind_group: Any, offset: int) -> None:
        self._offset[0] = offset
        self._set_bind_group(self.compute_pass, 0, bind_group._internal, 1, self._offset)

    def dispatch(self, x: int, y: int) -> None:
        self._dispatch(self.compute_pass, x, y, 1)

    def _encoder_outside_pass(self) -> Any:
        self.end_pass()
        if self.encoder is None:
            self.encoder = self._create_encoder(self._device, self._encoder_descriptor)
        return self.encoder

    def copy_buffer_to_buffer(self, source: Any, source_offset: int, destination: Any, destination_offset: int,
                              size: int) -> None:
        if source_offset % 4 or destination_offset % 4 or size % 4:
            raise ValueError(f"buffer copies move whole words: offsets {source_offset} and {destination_offset}, "
                             f"size {size}")
        self._copy(self._encoder_outside_pass(), source._internal, source_offset, destination._internal,
                   destination_offset, size)

    def resolve_query_set(self, query_set: Any, first: int, count: int, destination: Any, offset: int) -> None:
        self._resolve(self._encoder_outside_pass(), query_set._internal, first, count, destination._internal,
                      offset)

    def submit(self, queue: Any, ring: Any, ring_host: bytearray, ring_bytes: int) -> None:
        encoder, compute_pass = self.encoder, self.compute_pass
        if encoder is None:
            return
        commands = None
        try:
            if compute_pass is not None:
                self.compute_pass = None
                self._end_pass(compute_pass)
            if ring_bytes:
                if self._ring_host is not ring_host:      # the backend's ring lives as long as it does
                    self._ring_host, self._ring_pointer = ring_host, self._ffi.from_buffer(ring_host)
                self._write_buffer(queue._internal, ring._internal, 0, self._ring_pointer, ring_bytes)
            commands = self._finish(encoder, self._commands_descriptor)
            self._command_buffers[0] = commands
            self._submit(queue._internal, 1, self._command_buffers)
        finally:
            self._release(commands)

    def _release(self, commands: Any) -> None:
        """Release the batch's native handles (wgpu-native keeps what submitted work still uses)."""
        if commands is not None:
            self._release_commands(commands)
        for compute_pass in self._passes:
            self._release_pass(compute_pass)
        self._passes.clear()
        encoder, self.encoder, self.compute_pass = self.encoder, None, None
        if encoder is not None:
            self._release_encoder(encoder)

    def discard(self) -> None:
        self._release(None)


def command_recorder(device: Any) -> PublicCommands:
    """NativeCommands for a wgpu-py device, or PublicCommands where wgpu-py's internals differ (a missing module,
    function or handle, or a C type its cffi definitions lack)."""
    try:
        return NativeCommands(device)
    except (ImportError, AttributeError, TypeError):
        return PublicCommands(device)
    except Exception as exc:                       # noqa: BLE001 - cffi's CDefError, without importing cffi
        if type(exc).__name__ == "CDefError":
            return PublicCommands(device)
        raise
