"""Moving bytes between the host and a WGSL device: uploads (a write to a container that recorded launches use is
a copy recorded after them, its bytes carried by the launch-argument ring), device-to-device copies, read-backs
through a reused staging buffer (mapped for reading, with pending work flushed first)."""
from __future__ import annotations

from typing import Any

import numpy as np

from wgkern.backends.wgsl import printing as wprinting
from wgkern.backends.wgsl.buffers import RING_BYTES, RING_UPLOAD_BYTES, STAGING_KEEP_BYTES, WgslBuffer, _serialized


class TransferMixin:
    """WgslBackend's host transfers."""

    @_serialized
    def upload(self, buffer: WgslBuffer, data: np.ndarray, offset: int = 0) -> None:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if raw.size == 0:
            return
        start, end = offset & ~3, -(-(offset + raw.size) // 4) * 4
        if start != offset or end != offset + raw.size:   # copies move whole words: merge with what is there
            words = self.download(buffer, end - start, start) if end <= buffer.capacity else \
                np.zeros(end - start, np.uint8)
            words[offset - start:offset - start + raw.size] = raw
            raw, offset = words, start
        if buffer not in self.pending_buffers:
            self.queue.write_buffer(buffer.buffer, buffer.offset + offset, raw)
            return
        # recorded launches use it: copied in order after them, from the argument ring where the bytes fit (the
        # ring is written before the batch runs, as for launch arguments), else from a buffer of their own
        reserved = -(-raw.size // self.offset_alignment) * self.offset_alignment   # launches' slots stay aligned
        start = self.ring_used
        if raw.size <= RING_UPLOAD_BYTES and start + reserved <= RING_BYTES:
            self.ring_host[start:start + raw.size] = raw.data
            self.ring_used = start + reserved
            self.commands.copy_buffer_to_buffer(self.ring_buffer, start, buffer.buffer, buffer.offset + offset,
                                                raw.size)
        else:
            staged = self.device.create_buffer_with_data(data=raw, usage=self._wgpu.BufferUsage.COPY_SRC)
            self.commands.copy_buffer_to_buffer(staged, 0, buffer.buffer, buffer.offset + offset, raw.size)
            self.keepalive.append(staged)

    @_serialized
    def copy(self, dst: WgslBuffer, src: WgslBuffer, nbytes: int) -> None:
        size = min(-(-nbytes // 4) * 4, dst.capacity, src.capacity)
        if size:
            self.commands.copy_buffer_to_buffer(src.buffer, src.offset, dst.buffer, dst.offset, size)
            self.pending_buffers.update((dst, src))

    def _staging_buffer(self, size: int) -> Any:
        """The kept staging buffer (grown to a power of two), or for a read past STAGING_KEEP_BYTES one of its
        own that _read destroys after use (a read-back of a large container must not hold its size for good)."""
        usage = self._wgpu.BufferUsage
        if size > STAGING_KEEP_BYTES:
            return self.device.create_buffer(size=size, usage=usage.MAP_READ | usage.COPY_DST)
        if self.staging is None or self.staging.size < size:
            capacity = max(256, 1 << (size - 1).bit_length())
            self.staging = self.device.create_buffer(size=capacity, usage=usage.MAP_READ | usage.COPY_DST)
        return self.staging

    @_serialized
    def download(self, buffer: WgslBuffer, nbytes: int, offset: int = 0, out: np.ndarray | None = None) -> np.ndarray:
        """Bytes of the buffer (after all earlier launches); into `out` (uint8, >= nbytes) when given, which
        spares the page faults of a fresh allocation on large read-backs."""
        data = self._read(buffer, nbytes, offset, out)
        self._report_pending()
        return data

    def _read(self, buffer: WgslBuffer, nbytes: int, offset: int = 0, out: np.ndarray | None = None) -> np.ndarray:
        if nbytes <= 0:
            return np.zeros(0, np.uint8)
        start = offset & ~3
        end = min(-(-(offset + nbytes) // 4) * 4, buffer.capacity)
        size = end - start
        # while reverse launches are watched, their overflow flag rides along (one submit and one map, not two)
        flag = bool(self.adstack_watch) and buffer is not self.adstack_flag
        # so does the print buffer's header while kernels that print (or watch loops) have run
        header = self.prints_pending and buffer is not self.print_buffer
        header_bytes = 4 * wprinting.HEADER_WORDS * header
        total = size + 4 * flag + header_bytes
        staging = self._staging_buffer(total)
        commands = self.commands
        commands.copy_buffer_to_buffer(buffer.buffer, buffer.offset + start, staging, 0, size)
        if flag:
            commands.copy_buffer_to_buffer(self.adstack_flag.buffer, self.adstack_flag.offset, staging, size, 4)
        if header:
            commands.copy_buffer_to_buffer(self.print_buffer.buffer, self.print_buffer.offset, staging,
                                           size + 4 * flag, header_bytes)
        self.flush()
        direct = self._map_for_reading(staging, total)
        try:
            mapped = direct.read_mapped(staging, total) if direct is not None else \
                np.frombuffer(staging.read_mapped(0, total, copy=False), np.uint8)
            result = out[:nbytes] if out is not None else np.empty(nbytes, np.uint8)
            np.copyto(result, mapped[offset - start:offset - start + nbytes])
            if flag:
                self.flag_read = int(mapped[size:size + 4].view(np.uint32)[0])
            if header:
                self.print_header_read = mapped[size + 4 * flag:total].view(np.uint32).copy()
        finally:
            if direct is not None:
                direct.unmap(staging)
            else:
                staging.unmap()
            if staging is not self.staging:
                staging.destroy()
        self.unwaited = False
        return result

    def _map_for_reading(self, staging: Any, size: int) -> Any:
        """Map `staging` once the submitted copy into it is done. wgpu-py's READ mode first submits an empty
        command buffer (for maps of buffers written without a later submit); every read-back here maps right
        after submitting its copy, so it asks for READ_NOSYNC, which spares that submit (on lavapipe a submit
        costs a queue-thread round trip). Where wgpu-py does not know that mode, plain READ. wgpu-py's
        map_sync waits for its poll thread to see the map done; polling the device here, blocking, resolves the
        map on this thread instead (lavapipe: a launch + sync round trip 193 -> 170 us). Returns the spinning
        wait (waiting.py) where it mapped the buffer itself, which then reads and unmaps it too; else None."""
        direct = self.wait_idle if hasattr(self.wait_idle, "map_for_reading") else None
        if direct is not None:          # a GPU adapter: map and spin without wgpu-py's poll thread (waiting.py)
            direct.map_for_reading(staging, 0, size)
            return direct
        if self.map_read_mode == "READ_NOSYNC":
            try:
                promise = staging.map_async("READ_NOSYNC", 0, size)
            except (ValueError, KeyError, TypeError, AttributeError):
                self.map_read_mode = self._wgpu.MapMode.READ
            else:
                if self.wait_idle is not None:
                    self.wait_idle()
                promise.sync_wait()
                return None
        staging.map_sync(self.map_read_mode, 0, size)
        return None
