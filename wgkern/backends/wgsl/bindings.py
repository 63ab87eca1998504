"""How a WGSL kernel binds its containers: the element type each container is declared with (atomic or
plain) and the BindingPlan (one binding per container, or packed: one arena binding per element type).

The arenas themselves (where packed containers live) are arena.py's; codegen.py declares and indexes bindings
as the plan says; runtime.py picks the plan from the device's max_storage_buffers_per_shader_stage."""
from __future__ import annotations

from dataclasses import dataclass

from wgkern.errors import CompileError, DeviceFeatureError, SourceLoc
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind
from wgkern.ir.visitor import walk
from wgkern import dtypes as T
from wgkern.dtypes import DataType
from wgkern.backends.wgsl import ops as wops
from wgkern.backends.wgsl import types as wtypes


# ---- element types -------------------------------------------------------------------------------------

# The "float bits type" of an f16 container touched atomically: stored as u32 words of two halves (WGSL has no
# 16-bit atomics), every access of it in the task a helper on the word (codegen.py, wgsl/helpers.wgsl).
HALF_PAIRS = "f16x2"


def _atomic_element(slot: ir.ContainerSlot, op_kinds: set[AtomicOpKind], features: frozenset[str],
                    loc: SourceLoc, adapter: str) -> tuple[str, str | None]:
    """(element type, float bits type or None) of a container touched atomically."""
    dtype = slot.dtype
    if dtype == T.f16:
        if AtomicOpKind.CAS in op_kinds:
            raise CompileError(f"atomic compare-and-swap on f16 container {slot.name} is not supported by the "
                               "WGSL backend (WGSL has no 16-bit atomics)", loc)
        return "atomic<u32>", HALF_PAIRS
    if dtype.is_bool and op_kinds - wops.BOOL_ATOMIC:
        raise CompileError(f"atomic {sorted(o.value for o in op_kinds)} on u1 container {slot.name}", loc)
    if dtype == T.f32:
        if op_kinds <= wops.NATIVE_F32_ATOMIC and "shader-float32-atomic" in features:
            return "atomic<f32>", None
        return "atomic<u32>", "u32"
    needed = set()
    if dtype.bits == 64:
        needed = {"shader-int64-atomic-all-ops"} if dtype.is_float else \
            {wops.INT64_ATOMIC_FEATURE[o] for o in op_kinds}
        missing = sorted(needed - features)
        if missing:
            raise DeviceFeatureError(f"atomic {'/'.join(sorted(o.value for o in op_kinds))} on {dtype.name} "
                                     f"container {slot.name} needs device feature(s) {', '.join(missing)}, which "
                                     f"adapter '{adapter}' lacks", loc, tuple(missing))
        if dtype.is_float:
            return "atomic<u64>", "u64"
    return f"atomic<{wtypes.storage_type(dtype)}>", None


def collect_atomics(kernel: ir.OffloadedKernel, tasks: list[ir.Task]
                    ) -> dict[int, tuple[set[AtomicOpKind], SourceLoc]]:
    """Slot index -> (atomic op kinds, first loc) over `tasks`."""
    slot_index = {id(slot): k for k, slot in enumerate(kernel.containers)}
    found: dict[int, tuple[set[AtomicOpKind], SourceLoc]] = {}
    for task in tasks:
        for block in (task.bounds, task.body):
            for stmt in walk(block):
                if isinstance(stmt, ir.AtomicOp) and stmt.ptr.container.kind != "shared":
                    k = slot_index[id(stmt.ptr.container)]
                    found.setdefault(k, (set(), stmt.loc))[0].add(stmt.op)
    return found


def slot_element(slot: ir.ContainerSlot, atomics: tuple[set[AtomicOpKind], SourceLoc] | None,
                 features: frozenset[str], adapter: str) -> tuple[str, str | None]:
    """(WGSL element type, float bits type or None) of a container, given its atomic ops (None: plain)."""
    if atomics is None:
        return wtypes.storage_type(slot.dtype), None
    return _atomic_element(slot, atomics[0], features, atomics[1], adapter)


@dataclass(frozen=True, slots=True)
class BindingPlan:
    """Which storage binding each container slot is read through.

    Direct (`packed` False): slot k is binding k + 1, bound whole. Packed: slots with the same (dtype, WGSL
    element type) share one binding, an arena buffer holding all of them, indexed `arena[base_k + index]` with
    `base_k` (in elements) in the launch arguments. In a packed kernel a container's atomic typing is decided
    over all tasks, so every task declares a shared binding with one element type."""
    packed: bool
    slot_binding: tuple[int, ...]          # binding number of each slot (binding 0 is the argument ring)
    slot_element_bytes: tuple[int, ...]    # bytes of one stored element (arena offsets are in elements)
    bindings: int                          # storage bindings used by containers
    # direct plans only: bindings (windows, split.py) of each slot, from slot_binding on, and their bytes
    slot_windows: tuple[int, ...] = ()
    window_bytes: int = 0

    def windows_of(self, slot: int) -> int:
        return self.slot_windows[slot] if self.slot_windows else 1

    def slots_of(self, binding: int) -> list[int]:
        return [k for k, b in enumerate(self.slot_binding) if b == binding]


def binding_plan(kernel: ir.OffloadedKernel, features: frozenset[str], adapter: str, packed: bool,
                 windows: tuple[int, ...] = (), window_bytes: int = 0) -> BindingPlan:
    """`windows`: direct plans only, the bindings of each slot (split.py; empty: one each)."""
    count = len(kernel.containers)
    element_bytes = tuple(wtypes.storage_dtype(slot.dtype).itemsize for slot in kernel.containers)
    if not packed:
        if not any(w > 1 for w in windows):
            return BindingPlan(False, tuple(range(1, count + 1)), element_bytes, count)
        firsts = tuple(1 + sum(windows[:k]) for k in range(count))
        return BindingPlan(False, firsts, element_bytes, sum(windows), tuple(windows), window_bytes)
    atomics = collect_atomics(kernel, kernel.tasks)
    groups: dict[tuple[DataType, str], int] = {}
    bindings = []
    for k, slot in enumerate(kernel.containers):
        element = slot_element(slot, atomics.get(k), frozenset(features), adapter)[0]
        bindings.append(groups.setdefault((slot.dtype, element), len(groups) + 1))
    return BindingPlan(True, tuple(bindings), element_bytes, len(groups))
