"""Reverse launches whose adstacks can overflow: grow the stacks and re-run only the units that overflowed.

A stack no size expression bounds (a `while` loop, a bound computed inside the loop) starts at
`default_ad_stack_size` slots. Its task's units are guarded (passes/autodiff/unit_guard.py): a unit whose
replay overflowed writes no adjoint and marks itself in the unit-state container. After such a task runs, the
launch waits for it and reads the overflow flag; on overflow it doubles the growable stacks of that task and
re-runs the task with the selector set to the mark, so only the marked units run again (each either finishes,
clearing its mark, or marks itself for the next round). The capacity that sufficed is remembered, so later
launches start there and the steady state re-runs nothing. Later tasks of the kernel only run once the task
before them is complete, so the kernel is compiled in pieces that cut around each growable task, as host loops
are (runtime/host_loops.py).

With `wk.init(ad_stack_size=N)` the user has set the capacity: nothing grows, and an overflow raises
`AdStackOverflowError` at the launch that overflowed (the launch waits for its work), naming the kernel, the
stack's line and the capacity. The same error ends the growth when memory runs out."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from wgkern.backends.adstack import StackSpec, collect_stacks
from wgkern.backends.base import CompiledKernel, LaunchArgs
from wgkern.errors import AdStackOverflowError, OutOfMemoryError
from wgkern.ir import host_eval
from wgkern.ir import nodes as ir
from wgkern.passes.autodiff.unit_guard import HEADER_WORDS, UNIT_STATE_KIND
from wgkern.sizing.evaluator import flat_index

_IDLE_HEADER = np.array([0, 1], dtype=np.int32)     # selector 0: every unit runs; an overflowed one writes 1


def needs_watch(kernel: ir.OffloadedKernel, ad_stack_size: int) -> bool:
    """Whether a reverse kernel's launches must be watched for overflow: it has a growable stack, or the user
    capped every stack (then an overflow is an error raised at the launch)."""
    stacks = collect_stacks(kernel)
    if not any(stacks):
        return False
    return ad_stack_size > 0 or any(_growable(spec) for specs in stacks for spec in specs)


def _growable(spec: StackSpec) -> bool:
    return spec.static_capacity is None and spec.size_expr is None


class UnitStates:
    """The unit-state container every guarded task of one backend shares: one i32 word per unit after the
    header, all zero (header [0, 1]) between launches; grown by replacement when a task has more units."""

    def __init__(self, backend: Any):
        self.backend = backend
        self.buffer: Any = None
        self.words = 0

    def ensure(self, units: int) -> Any:
        words = units + HEADER_WORDS
        if self.buffer is None or words > self.words:
            words = max(words, 2 * self.words, 64)
            buffer = self.backend.allocate(words * 4)
            self.backend.upload(buffer, np.zeros(words, np.int32))
            self.backend.upload(buffer, _IDLE_HEADER)
            if self.buffer is not None:
                self.backend.sync()
                self.backend.free(self.buffer)
            self.buffer, self.words = buffer, words
        return self.buffer

    def select(self, selector: int) -> None:
        """The next launch runs only the units marked `selector`; those that overflow again mark selector+1."""
        self.backend.upload(self.buffer, np.array([selector, selector + 1], dtype=np.int32))

    def idle(self, units: int | None = None) -> None:
        """Back to [0, 1, 0, ...]: after re-runs that finished (every mark cleared), or, given `units`, after a
        failure that may have left marks on the first `units` units. Marks exist only within the buffer (a
        capped launch never grows it to its units, and a mark past its end was an out-of-range store, dropped)."""
        if units is not None:
            self.backend.upload(self.buffer, np.zeros(min(units + HEADER_WORDS, self.words), np.int32))
        self.backend.upload(self.buffer, _IDLE_HEADER)


@dataclass(slots=True)
class _Piece:
    first: int                      # index of its first task in the whole kernel
    compiled: CompiledKernel
    growable: list[int]             # stack ids of the piece's one task that grow (empty: launch as usual)


class WatchedReverseKernel(CompiledKernel):
    """Stands where the backend's CompiledKernel of a reverse kernel would (the launch path does not change)."""

    def __init__(self, program: Any, kernel: ir.OffloadedKernel):
        self.kernel = kernel
        self.program = program
        self.backend = backend = program.backend
        self.capped = program.options.ad_stack_size > 0
        self.stacks = collect_stacks(kernel)
        self.state_slot = next((k for k, slot in enumerate(kernel.containers) if slot.kind == UNIT_STATE_KIND),
                               None)
        growing = {t: [s.stack_id for s in specs if _growable(s)] for t, specs in enumerate(self.stacks)}
        growing = {t: ids for t, ids in growing.items() if ids}
        cuts = sorted({0, len(kernel.tasks)} | set(growing) | {t + 1 for t in growing})
        self.pieces: list[_Piece] = []
        for first, stop in zip(cuts, cuts[1:]):
            part = kernel if (first, stop) == (0, len(kernel.tasks)) else ir.OffloadedKernel(
                kernel.name, kernel.args, kernel.containers, kernel.tasks[first:stop], kernel.loc, kernel.returns)
            self.pieces.append(_Piece(first, backend.compile(part), growing.get(first, [])))
        self.grown: dict[tuple[int, int], int] = {}     # (task, stack id) -> the capacity that sufficed

    def source(self) -> str:
        return "\n".join(piece.compiled.source() for piece in self.pieces)

    def launch(self, args: LaunchArgs) -> None:
        capacities = args.extra.get("adstack_capacities") or [
            [spec.static_capacity or self.program.options.default_ad_stack_size for spec in specs]
            for specs in self.stacks]
        if self.state_slot is not None:
            states = _unit_states(self.program)
            args.buffers[self.state_slot] = states.ensure(1)
            args.shapes[self.state_slot] = (states.words,)
        self.backend.sync()          # earlier launches' errors are theirs, not this launch's overflow
        for piece in self.pieces:
            stop = piece.first + len(piece.compiled.kernel.tasks)
            caps = [list(row) for row in capacities[piece.first:stop]]
            if piece.growable and not self.capped:
                self._launch_growing(piece, args, caps)
            else:
                self._launch_once(piece, args, caps)

    def _piece_args(self, args: LaunchArgs, caps: list[list[int]]) -> LaunchArgs:
        extra = dict(args.extra)
        extra["adstack_capacities"] = caps
        return LaunchArgs(args.scalars, args.buffers, args.shapes, args.launch_id, args.seed, extra)

    def _launch_once(self, piece: _Piece, args: LaunchArgs, caps: list[list[int]]) -> None:
        piece.compiled.launch(self._piece_args(args, caps))
        if not self.capped:
            return
        try:
            self.backend.sync()
        except AdStackOverflowError:
            if piece.growable:
                _unit_states(self.program).idle(self._units(piece, args))
            raise

    def _launch_growing(self, piece: _Piece, args: LaunchArgs, caps: list[list[int]]) -> None:
        task = piece.first
        row = caps[0]
        for stack_id in piece.growable:
            row[stack_id] = max(row[stack_id], self.grown.get((task, stack_id), 0))
        units = self._units(piece, args)
        states = _unit_states(self.program)
        buffer = states.ensure(units)
        if args.buffers[self.state_slot] is not buffer:
            args.buffers[self.state_slot] = buffer
            args.shapes[self.state_slot] = (states.words,)
        selector = 0
        while True:
            try:
                piece.compiled.launch(self._piece_args(args, caps))
                self.backend.sync()
                break
            except AdStackOverflowError:
                selector += 1
                states.select(selector)
                self.program.stats.adstack_reruns += 1
                for stack_id in piece.growable:
                    row[stack_id] *= 2
            except OutOfMemoryError as error:
                states.idle(units)
                raise self._out_of_memory(task, piece, row) from error
            except BaseException:
                states.idle(units)
                raise
        if selector:
            states.idle()
            for stack_id in piece.growable:
                self.grown[(task, stack_id)] = row[stack_id]

    def _units(self, piece: _Piece, args: LaunchArgs) -> int:
        """The number of units (parallel indices) of the piece's task at this launch; bounds that read memory
        are read back."""
        task = piece.compiled.kernel.tasks[0]
        if task.kind != "range":
            return 1
        containers = self.kernel.containers
        shapes = host_eval.shapes_by_slot(containers, args.shapes)
        index = {id(slot): k for k, slot in enumerate(containers)}

        def read(slot: ir.ContainerSlot, indices: list[int]) -> Any:
            k = index[id(slot)]
            storage = np.dtype(self.backend.storage_dtype(slot.dtype))
            offset = flat_index(slot, indices, tuple(args.shapes[k])) * storage.itemsize
            return np.frombuffer(self.backend.download(args.buffers[k], storage.itemsize, offset), storage)[0]

        begin, end = host_eval.evaluate_bounds(task, args.scalars, shapes, read)
        return max(end - begin, 0)

    def _out_of_memory(self, task: int, piece: _Piece, row: list[int]) -> AdStackOverflowError:
        spec = self.stacks[task][piece.growable[0]]
        where = f" at {spec.loc}" if getattr(spec.loc, "lineno", 0) else ""
        return AdStackOverflowError(
            f"kernel '{self.kernel.name}': the adstack of the loop{where} needs more than {row[spec.stack_id] // 2} "
            f"slots per parallel index, and {row[spec.stack_id]} do not fit in the device's memory. Remedy: fewer "
            "loop trips per index, or a device with more memory")


def _unit_states(program: Any) -> UnitStates:
    states = getattr(program, "unit_states", None)
    if states is None or states.backend is not program.backend:
        states = UnitStates(program.backend)
        program.unit_states = states
    return states
