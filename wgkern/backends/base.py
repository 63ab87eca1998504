"""The interface every backend implements: device storage, kernel compilation and launch, sync.

The runtime (launch.py) is the only caller. A backend knows nothing of fields or kernels as the user
sees them: it gets OffloadedKernels to compile and LaunchArgs (raw buffers, shapes, scalar values) to run."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from wgkern.ir.nodes import OffloadedKernel
from wgkern.dtypes import DataType


NO_EXTRA: Mapping[str, Any] = MappingProxyType({})     # a LaunchArgs.extra with nothing in it, shared

# One launch at a time across threads: a launch stages numpy arguments and reads return values through buffers
# its compiled entry owns, so two threads launching one kernel would overwrite each other's (Taichi's and
# Quadrants' launches hold their interpreter lock the same way). Reentrant: a launch may launch (profiler).
# Kernel.__call__ and .grad hold it around the whole launch, so CompiledKernel.launch runs under it; the WGSL
# backend uses it as its own lock (backends/wgsl/runtime.py, Threads), so a launch takes one lock once.
LAUNCH_LOCK = threading.RLock()


@dataclass(slots=True)
class LaunchArgs:
    """Everything one launch needs, indexed like the kernel's `args` and `containers`.
    scalars[i]: Python value of scalar argument i (None for non-scalar args).
    buffers[k]: the backend buffer holding container slot k.  shapes[k]: that slot's full shape
    (vector/matrix element axes included). launch_id: increases by one per launch (random streams).
    seed: wk.init(random_seed=...). bound_cache: set by a launch plan (launch_plan.py) whose launches all
    pass the same buffers and shapes; a backend may keep what it derives from them in this dict. Such a plan
    passes one LaunchArgs to all its launches when the kernel has no scalar parameters (only launch_id
    changes), so a backend must not keep a LaunchArgs past `launch()`."""
    scalars: list[Any]
    buffers: list[Any]
    shapes: list[tuple[int, ...]]
    launch_id: int = 0
    seed: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)     # replaced, never changed in place
    bound_cache: dict[Any, Any] | None = None


@dataclass(slots=True)
class LoopStep:
    """A loop in a kernel's schedule of pieces (runtime/host_loops.py): its `body` (pieces, i.e. CompiledKernels,
    and LoopSteps) runs, then runs again while the 0-d container in slot `counter` (of `dtype`) is non-zero."""
    body: list[Any]
    counter: int
    dtype: Any


class CompiledKernel:
    """A backend's executable form of one OffloadedKernel."""

    kernel: OffloadedKernel

    def launch(self, args: LaunchArgs) -> None:
        """Run every task in order. May return before the work is done (GPU); Backend.sync waits."""
        raise NotImplementedError

    def source(self) -> str:
        """Generated code (LLVM IR / WGSL), for kernel.source(arch)."""
        raise NotImplementedError


class MemoryBudget:
    """`wk.init(device_memory_limit=N)`: the bytes one backend may hold at once in the buffers it allocates
    (containers, kernel temporaries, the adstack heap, runtime buffers); None means no limit but the device's.
    A backend takes bytes as it allocates and gives them back as it releases."""

    def __init__(self, limit: int | None = None):
        if limit is not None and int(limit) <= 0:
            raise ValueError(f"device_memory_limit must be a positive number of bytes, not {limit!r}")
        self.limit = None if limit is None else int(limit)
        self.used = 0

    def take(self, nbytes: int) -> None:
        if self.limit is not None and self.used + nbytes > self.limit:
            from wgkern.errors import OutOfMemoryError
            raise OutOfMemoryError(
                f"allocating {nbytes} bytes would exceed wk.init(device_memory_limit={self.limit}) with {self.used} "
                f"bytes in use. Remedy: release containers (drop their last references, or wk.reset()), use smaller "
                f"shapes, or raise device_memory_limit")
        self.used += nbytes

    def give(self, nbytes: int) -> None:
        self.used = max(0, self.used - nbytes)


def raise_pending(errors: list[Exception | None]) -> None:
    """Raise the errors one wait for the device found, as one error: the first in `errors` (a backend lists them
    in the order that best names the failure: a truncated loop before what it may have caused), with each
    other one as a note. The caller has cleared every flag these errors came from, so each is reported once and
    none is raised again by a later, unrelated wait."""
    found = [error for error in errors if error is not None]
    if not found:
        return
    first = found[0]
    for other in found[1:]:
        first.add_note(f"also found by this wait (and cleared): {type(other).__name__}: {other}")
    raise first


class Backend:
    """One device. Buffers are opaque handles; sizes are in bytes of *device* storage."""

    name: str = "?"

    def storage_dtype(self, dtype: DataType) -> np.dtype:
        """numpy dtype of one element as stored on this device (WGSL widens 8/16-bit ints and bool to 32 bits)."""
        return dtype.np_dtype

    adopts_host_memory = False       # adopt() works: kernels run on host memory (the CPU backend)
    # torch's name for the device whose memory the kernels use, ("cuda", ordinal), where adopt_device() and
    # device_address() let torch tensors and wgkern containers share memory without a copy; None elsewhere
    torch_device: tuple[str, int] | None = None
    # compiles VectorLoad/VectorLane/VectorStore: launch.py runs passes/vectorize.py for it
    wide_memory_access = False

    def missing_features(self, dtype: DataType) -> tuple[str, ...]:
        """Device features `dtype` needs that this device lacks (none: the dtype works here)."""
        return ()

    def supports(self, dtype: DataType) -> bool:
        return not self.missing_features(dtype)

    def check_capacity(self, nbytes: int) -> None:
        """Raise OutOfMemoryError when a buffer of `nbytes` cannot be allocated now (allocate() checks it too;
        containers ask first, so such a request is refused before any other check of its shape)."""

    def allocate(self, nbytes: int) -> Any:
        raise NotImplementedError

    def free(self, buffer: Any) -> None:
        raise NotImplementedError

    def adopt(self, memory: np.ndarray) -> Any:
        """A buffer over existing host memory (a C-contiguous array that outlives the buffer: a CPU torch
        tensor's storage), used without a copy; only where `adopts_host_memory` (the CPU)."""
        raise NotImplementedError(f"{type(self).__name__} runs kernels on device memory; host memory is copied")

    def adopt_device(self, address: int, nbytes: int) -> Any:
        """A buffer over `nbytes` of device memory at `address` that another library allocated (a CUDA torch
        tensor's storage) and keeps alive, used without a copy; only where `torch_device` is set."""
        raise NotImplementedError(f"{type(self).__name__} cannot use another library's device memory")

    def device_address(self, buffer: Any) -> int:
        """The device address of `buffer`'s first byte; only where `torch_device` is set."""
        raise NotImplementedError(f"{type(self).__name__} has no device addresses to share")

    def upload(self, buffer: Any, data: np.ndarray, offset: int = 0) -> None:
        """Copy host bytes into buffer at byte offset (after all earlier launches that use it)."""
        raise NotImplementedError

    def download(self, buffer: Any, nbytes: int, offset: int = 0, out: np.ndarray | None = None) -> np.ndarray:
        """Bytes of buffer[offset:offset+nbytes] as a uint8 array, after all earlier launches finished
        (written into `out[:nbytes]` and returned as that view when `out` is given)."""
        raise NotImplementedError

    def copy(self, dst: Any, src: Any, nbytes: int) -> None:
        raise NotImplementedError

    def host_view(self, buffer: Any, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray | None:
        """A zero-copy numpy view where the buffer lives in host memory (CPU), else None."""
        return None

    def shared_memory_bytes(self) -> int | None:
        """The bytes of block-shared memory (wk.simt.block.SharedArray) one block may use; None where the
        backend has no shared memory (the CPU)."""
        return None

    def compile(self, kernel: OffloadedKernel, origin: str | None = None) -> CompiledKernel:
        """`kernel` compiled for this device. `origin`, where given, names where its IR came from (a key that
        determines the IR: code_records.py), under which a backend may find the code it generated before."""
        raise NotImplementedError

    def device_loops(self, schedule: list[Any]) -> Any | None:
        """Something whose `launch(args)` runs `schedule` (pieces and LoopSteps) with the loops decided on the
        device, without the host reading each trip's counter back, and returns True (False: it ran nothing, the
        host runs the loops); None where the host always runs the loops."""
        return None

    def adstack_threads(self, range_size: int) -> int:
        """How many slice-owning threads a task of `range_size` indices gets (the adstack heap holds one slice
        per such thread)."""
        raise NotImplementedError

    def sync(self) -> None:
        """Wait for all launched work and raise any pending device-side error."""

    def shutdown(self) -> None:
        """Release every device resource."""

    def describe(self) -> str:
        return self.name
