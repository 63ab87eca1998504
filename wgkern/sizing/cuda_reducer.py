"""The CUDA max-reducer: the raw maximum of a contiguous slice of a 32-bit integer container, on the device.

The sizer peels most loop bounds (`for _ in range(n[i])` over a parallel `i`) into such slices (reducers.py:
`PreparedJob.raw`); each one is a PTX kernel launch (grid-stride per-thread maxima, one u32 atomic max per
thread, over order-preserving keys: a signed value is biased by 2^31), all of a round's jobs before one
read-back. Jobs of other shapes come back as None and the caller evaluates them on the host, from a read-back
of the container. The kernel is compiled once per backend (`SliceMaxKernel`)."""
from __future__ import annotations

import ctypes
import struct
from typing import Any, Callable

import numpy as np

from wgkern.sizing.reducers import PreparedJob

THREADS = 256
MAX_BLOCKS_PER_SM = 8

_KERNEL_IR = r"""
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x() nounwind readnone
declare i32 @llvm.umax.i32(i32, i32)

; params: data (ptr), count (i64), bias (i32: 0x80000000 for signed data, else 0), out (ptr to one u32 key)
define void @wk_slice_max(ptr byval([32 x i8]) align 8 %p) nounwind {
entry:
  %data = load ptr, ptr %p, align 8
  %count_at = getelementptr inbounds i8, ptr %p, i64 8
  %count = load i64, ptr %count_at, align 8
  %bias_at = getelementptr inbounds i8, ptr %p, i64 16
  %bias = load i32, ptr %bias_at, align 4
  %out_at = getelementptr inbounds i8, ptr %p, i64 24
  %out = load ptr, ptr %out_at, align 8
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %nctaid = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %base = mul i32 %ctaid, %ntid
  %gid32 = add i32 %base, %tid
  %gid = zext i32 %gid32 to i64
  %ntid64 = zext i32 %ntid to i64
  %nctaid64 = zext i32 %nctaid to i64
  %stride = mul i64 %ntid64, %nctaid64
  br label %loop
loop:
  %i = phi i64 [%gid, %entry], [%next, %body]
  %acc = phi i32 [0, %entry], [%best, %body]
  %more = icmp slt i64 %i, %count
  br i1 %more, label %body, label %done
body:
  %at = getelementptr inbounds i32, ptr %data, i64 %i
  %value = load i32, ptr %at, align 4
  %key = xor i32 %value, %bias
  %best = call i32 @llvm.umax.i32(i32 %acc, i32 %key)
  %next = add i64 %i, %stride
  br label %loop
done:
  %old = atomicrmw umax ptr %out, i32 %acc monotonic, align 4
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @wk_slice_max, !"kernel", i32 1}
"""


class SliceMaxKernel:
    """The compiled slice-max kernel of one CudaBackend."""

    def __init__(self, backend: Any):
        from wgkern.backends.llvm import ptx
        self.backend = backend
        code, _ = ptx.compile_ptx(_KERNEL_IR, backend.arch)
        self.module = backend.driver.load_module(code)
        self.function = backend.driver.function(self.module, "wk_slice_max")
        self.blocks_cap = max(1, backend.info.multiprocessors * MAX_BLOCKS_PER_SM)


class CudaSliceReducer:
    """ReducerBackend on a CUDA device: peeled slice jobs of i32/u32 containers on the device, the rest None.
    `address_of(slot)` gives the device address of a container's first element."""
    name = "cuda"
    gathers_reads = False

    def __init__(self, kernel: SliceMaxKernel, address_of: Callable[[Any], int],
                 shape: Callable[[Any], tuple[int, ...]]):
        self.kernel = kernel
        self.address_of = address_of
        self.shape = shape
        self.dispatches = 0

    def read_ok(self, dtype: Any) -> bool:
        return dtype.is_int and dtype.bits <= 32

    def _slice(self, job: PreparedJob) -> tuple[int, int, int] | None:
        """(device address of the slice, its length, key bias), or None when the device cannot do the job."""
        raw = job.raw
        if raw is None or not hasattr(raw, "slot") or raw.dtype is None or raw.dtype.bits != 32 \
                or not raw.dtype.is_int or len(job.extents) != 1:
            return None
        shape = tuple(self.shape(raw.slot))
        if len(shape) != 1 or job.lo[0] < 0 or job.lo[0] + job.extents[0] > shape[0]:
            return None            # the host evaluates it (and raises the SizingError where out of bounds)
        bias = 0x8000_0000 if raw.dtype.is_signed else 0
        return self.address_of(raw.slot) + 4 * job.lo[0], job.extents[0], bias

    def run(self, jobs: list[PreparedJob]) -> list[int | None]:
        results: list[int | None] = [None] * len(jobs)
        launches = []
        for index, job in enumerate(jobs):
            if job.closed_form is not None:
                results[index] = job.closed_form
                continue
            found = self._slice(job)
            if found is not None:
                launches.append((index, job, *found))
        if not launches:
            return results
        backend = self.kernel.backend
        driver = backend.driver
        out = backend.allocate(4 * len(launches))          # zeroed: key 0 is the smallest value
        try:
            params = ctypes.create_string_buffer(32)
            size = ctypes.c_size_t(32)
            extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(params), 2, ctypes.addressof(size), 0)
            for number, (_, _, address, count, bias) in enumerate(launches):
                struct.pack_into("<QqIxxxxQ", params, 0, address, count, bias, out.address + 4 * number)
                blocks = max(1, min(-(-count // THREADS), self.kernel.blocks_cap))
                driver.check(driver.lib.cuLaunchKernel(self.kernel.function, blocks, 1, 1, THREADS, 1, 1, 0,
                                                       None, None, extra), "cuLaunchKernel (sizing reducer)")
            self.dispatches += len(launches)
            keys = np.zeros(len(launches), np.uint32)
            driver.download(keys.ctypes.data, out.address, keys.nbytes)
        finally:
            backend.free(out)
        for key, (index, job, _, _, bias) in zip(keys, launches):
            value = int(key ^ np.uint32(bias))
            if bias:
                value = int(np.uint32(value).view(np.int32))
            results[index] = job.finish(value)
        return results
