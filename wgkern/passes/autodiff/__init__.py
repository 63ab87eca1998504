"""Reverse-mode autodiff: OffloadedKernel -> its `.grad` kernel (DESIGN.md "Reverse-mode autodiff").

Per task, in this order: lower loop control (loop_control.py), store-to-load forwarding (forwarding.py), trip
counters for while loops, activity and needed analysis (activity.py), promotion of needed carried locals to
adstacks (stack_promotion.py), the adjoint (make_adjoint.py), static stack sizing (adstack_sizing.py).
The grad kernel runs the tasks in reverse order, after replaying the serial tasks that compute temporaries."""
from __future__ import annotations

from dataclasses import dataclass

from wgkern.errors import AutodiffError, InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.clone import clone_block
from wgkern.ir.ops import AtomicOpKind
from wgkern import dtypes as T
from wgkern.passes.adstack_sizing import size_stacks, size_task_stacks
from wgkern.passes.autodiff.checks import refuse_non_differentiable
from wgkern.passes.autodiff.activity import active_values, needed_values, roots_of
from wgkern.passes.autodiff.backup import Positions, insert_value_stacks, is_stale
from wgkern.passes.autodiff.checks import check_adjoint_reads
from wgkern.passes.autodiff.derivative_cache import choose_cached, insert_cached_derivatives
from wgkern.passes.autodiff.derived_slots import DerivedSlots
from wgkern.passes.autodiff.forwarding import forward_locals
from wgkern.passes.autodiff.loop_control import LoopControlLowering
from wgkern.passes.autodiff.make_adjoint import AdjointEmitter
from wgkern.passes.autodiff.stack_promotion import promote_to_stacks
from wgkern.passes.autodiff.unit_guard import growable_stacks, guard_units, unit_state_slot

NAME = "autodiff"


def _walk(block: ir.Block):
    for stmt in block.stmts:
        yield stmt
        for child in stmt.blocks():
            yield from _walk(child)


def _add_trip_counters(body: ir.Block) -> dict[ir.While, ir.Alloca]:
    """Count the iterations of every While and record the count once per execution of the loop."""
    trips: dict[ir.While, ir.Alloca] = {}
    head = IRBuilder(ir.Block())

    def visit(block: ir.Block) -> None:
        out: list[ir.Stmt] = []
        for stmt in block.stmts:
            for child in stmt.blocks():
                visit(child)
            if not isinstance(stmt, ir.While):
                out.append(stmt)
                continue
            b = IRBuilder(ir.Block(), stmt.loc)
            counter = b.alloca(T.i32, "trip_counter")
            b.store(counter, b.const(0, T.i32))
            out.extend(b.block.stmts)
            out.append(stmt)
            step = IRBuilder(stmt.body, stmt.loc)
            step.store(counter, step.add(step.load(counter), step.const(1, T.i32)))
            with head.located(stmt.loc):
                trip = head.alloca(T.i32, "trip_count")
            after = IRBuilder(ir.Block(), stmt.loc)
            after.store(trip, after.load(counter))
            out.extend(after.block.stmts)
            trips[stmt] = trip
        block.stmts = out

    visit(body)
    body.stmts[0:0] = head.block.stmts
    return trips


def _plain_slots(body: ir.Block, unit_loop: ir.RangeFor | None, active: set[ir.Stmt],
                 grad_slot: DerivedSlots) -> set[ir.ContainerSlot]:
    """Adjoint containers every access of which is at the unit's own parallel index: no atomics needed."""
    if unit_loop is None:
        return set()
    plain: dict[ir.ContainerSlot, bool] = {}
    for stmt in _walk(body):
        if isinstance(stmt, (ir.GlobalLoad, ir.GlobalStore, ir.AtomicOp)):
            slot = grad_slot(stmt.ptr.container)
            if slot is None:
                continue
            indices = stmt.ptr.indices
            at_own_index = (len(indices) == 1 and isinstance(indices[0], ir.LoopIndex)
                            and indices[0].loop is unit_loop)
            plain[slot] = plain.get(slot, True) and at_own_index
    return {slot for slot, ok in plain.items() if ok}


@dataclass(slots=True)
class UnitAdjoint:
    """What differentiate_unit made of a unit body: `sweep_start` is the first statement of the adjoint sweep
    (None when the sweep is empty); everything before it (stack declarations aside) is the replay."""
    sweep_start: ir.Stmt | None


def differentiate_unit(body: ir.Block, unit_loop: ir.RangeFor | None, grad_slot: DerivedSlots
                       ) -> UnitAdjoint | None:
    """Rewrite `body` in place into replay + adjoint. Returns None when nothing in it carries a gradient."""
    lowering = LoopControlLowering().run_body(body, unit_loop)
    forward_locals(body)
    trips = _add_trip_counters(body)

    def has_adjoint(slot: ir.ContainerSlot) -> bool:
        return grad_slot(slot) is not None

    _check_atomics(body, has_adjoint)
    active = active_values(body, has_adjoint)
    if not active and not any(isinstance(s, (ir.GlobalStore,)) and has_adjoint(s.ptr.container)
                              for s in _walk(body)):
        return None
    skip = {check for check in lowering.exit_checks.values() if check is not None}
    needed, cached = choose_cached(body, active, has_adjoint, skip, set(trips.values()))
    stacks = promote_to_stacks(body, needed.stacked)
    trip_stacks = {loop: stacks[alloca] for loop, alloca in trips.items()}
    active = active_values(body, has_adjoint)
    derivative_inputs = insert_cached_derivatives(body, cached)
    saved = _save_stale_values(body, active, has_adjoint, skip, len(stacks), derivative_inputs,
                               lowering.exit_checks)
    plain = _plain_slots(body, unit_loop, active, grad_slot)
    sweep_start = AdjointEmitter(body, unit_loop, active, grad_slot, plain, lowering.exit_checks, trip_stacks,
                                 saved, derivative_inputs).run()
    _check_pushes_precede_adjoints(body)
    size_stacks(body)
    return UnitAdjoint(sweep_start)


# Atomics with a reverse-mode rule (make_adjoint.py reverse_AtomicOp). The others are integer-only (and, or,
# xor, cas) or have none (mul: the product's order across threads is unknown; exchange: which thread's value
# ended up stored, and which old value each thread got, is not recorded).
_DIFFERENTIABLE_ATOMICS = frozenset({AtomicOpKind.ADD, AtomicOpKind.SUB, AtomicOpKind.MIN, AtomicOpKind.MAX})


def _check_atomics(body: ir.Block, has_adjoint) -> None:
    """An atomic without a gradient rule on a container that has an adjoint would leave that adjoint wrong."""
    for stmt in _walk(body):
        if isinstance(stmt, ir.AtomicOp) and stmt.op not in _DIFFERENTIABLE_ATOMICS \
                and has_adjoint(stmt.ptr.container):
            raise AutodiffError(f"wk.atomic_{stmt.op.value} on '{stmt.ptr.container.name}', which has a gradient, "
                                "cannot be differentiated: only atomic add/sub/min/max (and +=, -=) have gradient "
                                "rules", stmt.loc)


def _check_pushes_precede_adjoints(body: ir.Block) -> None:
    """The backends keep a stack's top adjoint in a register (backends/adstack.py), which is exact only if
    every push of the unit runs before any adjoint reaches a stack: the replay is emitted whole before the
    adjoint sweep, so it holds by construction; this guards the construction."""
    sweep_started = False
    for stmt in _walk(body):
        if isinstance(stmt, (ir.AdStackAccAdjoint, ir.AdStackLoadTopAdj)):
            sweep_started = True
        elif sweep_started and isinstance(stmt, ir.AdStackPush):
            raise InternalCompilerError("adstack push after the adjoint sweep started", stmt.loc)


def _save_stale_values(body: ir.Block, active: set[ir.Stmt], has_adjoint, skip: set[ir.If], first_id: int,
                       derivative_inputs: dict[ir.Stmt, ir.Stmt], exit_checks: dict[ir.While, ir.If]
                       ) -> dict[ir.Stmt, ir.AdStackAlloca]:
    """Values the reverse pass needs but cannot recompute exactly get a stack of their own (backup.py), and
    so do the values saved for cached derivatives (derivative_cache.py)."""
    positions = Positions.of(body)
    top_level = set(body.stmts)
    stale: set[ir.Stmt] = set(derivative_inputs.values())
    for user in _walk(body):
        for value in roots_of(user, active, has_adjoint, skip, set(), set(derivative_inputs)):
            if value not in top_level and value not in stale and is_stale(value, user, top_level, positions, stale):
                stale.add(value)
    return insert_value_stacks(body, stale, first_id, exit_checks) if stale else {}


def _clone_task(task: ir.Task) -> ir.Task:
    value_map: dict[ir.Stmt, ir.Stmt] = {}
    if task.kind == "serial":
        return ir.Task(task.name, task.kind, ir.Block(), None, clone_block(task.body, value_map), task.loc)
    holder = clone_block(ir.Block(task.bounds.stmts + [task.loop]), value_map)
    loop = holder.stmts[-1]
    return ir.Task(task.name, task.kind, ir.Block(holder.stmts[:-1]), loop, loop.body, task.loc)


def _writes_temp(stmt: ir.Stmt) -> bool:
    return isinstance(stmt, (ir.GlobalStore, ir.AtomicOp)) and stmt.ptr.container.kind == "temp"


def _temp_replay(task: ir.Task) -> ir.Task | None:
    """A copy of a task keeping only its writes to kernel temporaries (stores and accumulations): the grad
    kernel has temporaries of its own, and the replay of later tasks reads them."""
    if not any(_writes_temp(s) for s in _walk(task.body)):
        return None
    copy = _clone_task(task)

    def strip(block: ir.Block) -> None:
        kept = []
        for stmt in block.stmts:
            if isinstance(stmt, (ir.GlobalStore, ir.AtomicOp)) and not _writes_temp(stmt):
                continue
            for child in stmt.blocks():
                strip(child)
            kept.append(stmt)
        block.stmts = kept

    strip(copy.body)
    copy.name = task.name + "_replay"
    return copy


def make_grad_kernel(kernel: ir.OffloadedKernel) -> ir.OffloadedKernel:
    grad_slot = DerivedSlots(kernel, "grad")
    tasks: list[ir.Task] = []
    for task in kernel.tasks:
        replay = _temp_replay(task)
        if replay is not None:
            tasks.append(replay)
    unit_state: ir.ContainerSlot | None = None
    for task in reversed(kernel.tasks):
        grad_task = _clone_task(task)
        unit = differentiate_unit(grad_task.body, grad_task.loop, grad_slot)
        if unit is not None:
            grad_task.name = task.name + "_grad"
            size_task_stacks(grad_task)     # launch-time SizeExprs for stacks the static pre-pass cannot size
            if growable_stacks(grad_task):  # the rest grow at launch: guard the units for re-runs
                unit_state = unit_state or unit_state_slot()
                guard_units(grad_task, unit_state, unit.sweep_start)
            tasks.append(grad_task)
    containers = grad_slot.containers + ([unit_state] if unit_state is not None else [])
    grad_kernel = ir.OffloadedKernel(kernel.name + "_grad", kernel.args, containers, tasks, kernel.loc,
                                     kernel.returns)
    check_adjoint_reads(kernel, grad_kernel, [slot for slot in grad_slot.by_primal.values() if slot is not None])
    return grad_kernel


def run(kernel: ir.OffloadedKernel) -> ir.OffloadedKernel:
    if not isinstance(kernel, ir.OffloadedKernel):
        raise AutodiffError("autodiff runs on offloaded kernels", kernel.loc)
    refuse_non_differentiable(kernel)
    return make_grad_kernel(kernel)
