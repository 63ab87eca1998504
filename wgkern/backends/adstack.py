"""Adstack storage shared by every backend: stack specs, the heap layout, heap growth, overflow reports.

Each stack of a task has metadata (base, thread_stride, slot_stride, capacity), in units the backend chooses
(bytes on the CPU, u32 words in WGSL), so an element's address is `base + thread * thread_stride + depth *
slot_stride` whatever the layout. The heap holds primals only: within one adjoint unit every push happens in the
replay, before any adjoint accumulates, so an entry's adjoint is only ever live while it is the top, and the
backends keep it in a register (zeroed by push and pop) instead of a heap slot. CPU slices are thread-contiguous
(one slice per worker), GPU slices slot-major (coalesced). New sizes only change the metadata, never the code."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from wgkern.errors import AdStackOverflowError, OutOfMemoryError
from wgkern.ir import nodes as ir

METADATA_FIELDS = 4   # base, thread_stride, slot_stride, capacity


@dataclass(frozen=True, slots=True)
class StackSpec:
    """One stack of one task, as the runtime sees it."""
    task_index: int
    task_name: str
    stack_id: int
    name: str
    dtype: Any
    static_capacity: int | None
    loc: Any
    size_expr: Any = None


def collect_stacks(kernel: ir.OffloadedKernel) -> list[list[StackSpec]]:
    """The stacks of each task, ordered by stack_id (their metadata row)."""
    out: list[list[StackSpec]] = []
    for index, task in enumerate(kernel.tasks):
        specs = []
        for stmt in task.body.stmts:
            if isinstance(stmt, ir.AdStackAlloca):
                specs.append(StackSpec(index, task.name, stmt.stack_id, stmt.name, stmt.dtype, stmt.capacity,
                                       stmt.loc, stmt.size_expr))
        specs.sort(key=lambda s: s.stack_id)
        out.append(specs)
    return out


def number_stacks(kernel: ir.OffloadedKernel) -> None:
    """Give the stacks of each task consecutive ids 0..n-1 (after passes that may have dropped some)."""
    for task in kernel.tasks:
        stacks = [s for s in task.body.stmts if isinstance(s, ir.AdStackAlloca)]
        for number, stack in enumerate(stacks):
            stack.stack_id = number


@dataclass(slots=True)
class TaskStackLayout:
    """Metadata rows (int64, METADATA_FIELDS per stack) and the heap units one task's launch needs."""
    metadata: np.ndarray
    heap_units: int
    capacities: list[int]


def layout_task(specs: list[StackSpec], capacities: list[int], threads: int,
                element_units: Callable[[Any], int], slot_major: bool, alignment: int = 1) -> TaskStackLayout:
    """Lay out the stacks of a task for `threads` slice-owning threads: `capacity` primal slots per stack and
    thread (adjoints live in registers, see the module docstring). Slot-major stacks start on a multiple of
    `alignment` units (CUDA: 8 bytes, so every element is naturally aligned)."""
    metadata = np.zeros((len(specs), METADATA_FIELDS), dtype=np.int64)
    offset = 0
    if slot_major:
        for row, (spec, capacity) in enumerate(zip(specs, capacities)):
            offset = -(-offset // alignment) * alignment
            unit = element_units(spec.dtype)
            metadata[row] = (offset, unit, threads * unit, capacity)
            offset += capacity * threads * unit
        return TaskStackLayout(metadata, offset, list(capacities))
    per_thread = 0
    for row, (spec, capacity) in enumerate(zip(specs, capacities)):
        unit = element_units(spec.dtype)
        metadata[row] = (per_thread, 0, unit, capacity)
        per_thread += capacity * unit
    metadata[:, 1] = per_thread
    return TaskStackLayout(metadata, per_thread * threads, list(capacities))


@dataclass(frozen=True, slots=True, eq=False)
class KernelStackLayout:
    """A kernel's stacks laid out for one launch: every task's metadata rows in task order, flat (the LLVM
    backends' adstack context after its header), and the heap units its largest task needs. `key`: the
    capacities and per-task thread counts it was laid out for."""
    key: tuple[Any, ...]
    rows: np.ndarray
    heap_units: int


def layout_kernel(stacks: list[list[StackSpec]], capacities: list[list[int]] | None, threads: list[int],
                  element_units: Callable[[Any], int], slot_major: bool, alignment: int = 1,
                  last: KernelStackLayout | None = None) -> KernelStackLayout:
    """Lay out every task's stacks (`capacities`: one list per task, None for the static capacities; `threads`:
    each task's slice-owning threads). `last`, the layout of the kernel's previous launch, is returned as it is
    when both are the same, so a loop calling .grad() lays out once and a backend can tell by identity that
    what it derived from the layout (a context already on the device) still holds."""
    key = (tuple(map(tuple, capacities)) if capacities else None, tuple(threads))
    if last is not None and last.key == key:
        return last
    layouts = [layout_task(specs, list(capacities[index]) if capacities else
                           [spec.static_capacity or 32 for spec in specs],
                           threads[index], element_units, slot_major, alignment)
               for index, specs in enumerate(stacks)]
    rows = np.concatenate([layout.metadata.reshape(-1) for layout in layouts]) if layouts else \
        np.zeros(0, np.int64)
    return KernelStackLayout(key, rows, max((layout.heap_units for layout in layouts), default=0))


def element_bytes(dtype: Any) -> int:
    """The LLVM backends' heap unit: an element takes its dtype's bytes."""
    return dtype.nbytes


def stack_bytes_per_thread(specs: list[StackSpec], capacities: list[int], element_units: Callable[[Any], int]) -> int:
    return sum(c * element_units(s.dtype) for s, c in zip(specs, capacities))


class AdStackHeap:
    """One growable heap per backend. Grows by amortised doubling; when the doubled size cannot be
    allocated it retries at the exact size, then raises OutOfMemoryError. `release(old)` is the backend's
    deferred free (after the work using the old heap has completed)."""

    def __init__(self, allocate: Callable[[int], Any], release: Callable[[Any], None]):
        self.allocate = allocate
        self.release = release
        self.buffer: Any = None
        self.nbytes = 0
        self.grows = 0

    def ensure(self, nbytes: int) -> Any:
        if nbytes <= self.nbytes and self.buffer is not None:
            return self.buffer
        wanted = max(nbytes, 2 * self.nbytes) if self.nbytes else nbytes
        buffer = self._try(wanted)
        if buffer is None and wanted != nbytes:
            wanted = nbytes
            buffer = self._try(nbytes)
        if buffer is None:
            raise OutOfMemoryError(
                f"could not allocate the adstack heap: {nbytes} bytes requested. Remedy: lower the loop trip "
                f"counts, pass a smaller wk.init(ad_stack_size=...), or use a device with more memory")
        if self.buffer is not None:
            self.release(self.buffer)
        self.buffer = buffer
        self.nbytes = wanted
        self.grows += 1
        return buffer

    def _try(self, nbytes: int) -> Any:
        try:
            return self.allocate(max(nbytes, 16))
        except (MemoryError, OutOfMemoryError):
            return None
        except Exception as error:  # device allocation errors come in backend-specific types
            if "memory" in str(error).lower() or "size" in str(error).lower():
                return None
            raise

    def drop(self) -> None:
        if self.buffer is not None:
            self.release(self.buffer)
        self.buffer = None
        self.nbytes = 0


def overflow_error(kernel_name: str, spec: StackSpec | None, capacity: int | None) -> AdStackOverflowError:
    """The error of a push past a stack's capacity: raised by the launch, where the capacity is one the user set
    (wk.init(ad_stack_size=N)); stacks sized by wgkern never stop on it (runtime/adstack_regrow.py)."""
    fix = ("It needs more slots than that: pass a larger wk.init(ad_stack_size=N), or leave ad_stack_size unset "
           "so that every stack is sized at launch and grows where no size can be known in advance")
    if spec is None:
        return AdStackOverflowError(f"adstack overflow in a reverse-mode kernel of '{kernel_name}': a stack's "
                                    f"capacity was exceeded. {fix}")
    where = f" (for the variable at {spec.loc})" if getattr(spec.loc, "lineno", 0) else ""
    return AdStackOverflowError(
        f"adstack overflow in kernel '{kernel_name}', task '{spec.task_name}', stack '{spec.name}'{where}: "
        f"capacity {capacity} slots was exceeded. {fix}")


def flag_code(launch_code: int, task_index: int, stack_id: int) -> int:
    """The overflow flag word: (launch_code << 20) | (task << 10) | (stack + 1); 0 means no overflow."""
    return (launch_code << 20) | (task_index << 10) | (stack_id + 1)


def decode_flag(code: int) -> tuple[int, int, int]:
    """(launch_code, task index, stack id) of a nonzero flag word."""
    return code >> 20, (code >> 10) & 0x3FF, (code & 0x3FF) - 1


def overflow_from_flag(code: int, watched: dict[int, tuple[Any, Any]]) -> AdStackOverflowError:
    """The error for a nonzero flag word, given the kernels launched since the flag was last read (kernel code
    -> (compiled kernel with `.stacks` and `.kernel`, the capacities it launched with or None))."""
    kernel_code, task_index, stack_id = decode_flag(code)
    compiled, capacities = watched.get(kernel_code, (None, None))
    spec = capacity = None
    if compiled is not None and task_index < len(compiled.stacks) and \
            0 <= stack_id < len(compiled.stacks[task_index]):
        spec = compiled.stacks[task_index][stack_id]
        capacity = capacities[task_index][stack_id] if capacities else spec.static_capacity
    return overflow_error(compiled.kernel.name if compiled else "?", spec, capacity)
