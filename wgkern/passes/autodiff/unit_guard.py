"""Guards that let the runtime grow an adstack and re-run only the adjoint units that overflowed it.

A stack that neither the structural pass nor the sizer can bound (a `while` loop, a bound computed inside the
loop) starts at `default_ad_stack_size` slots and grows at launch (runtime/adstack_regrow.py). For that, each
adjoint unit of a task with such a stack is guarded so that a unit whose replay overflowed commits nothing and
says so, and a re-run launch runs only those units:

    <AdStackAllocas>                       stay first: they reset each stack (and the overflow register) per unit
    selector = state[0]                    0: every unit runs (an ordinary launch)
    runs = true
    if selector != 0: runs = state[2 + unit] == selector
    if runs:
        <replay>
        if overflowed: state[2 + unit] = state[1]      the unit wrote no adjoint: mark it for the next round
        else:
            <adjoint sweep>
            if selector != 0: state[2 + unit] = 0      re-run and done: leave the state all-zero again

`state` is one i32 container of the grad kernel (kind UNIT_STATE) that the runtime binds at launch: word 0 is
the selector, word 1 the mark an overflowed unit writes, then one word per unit (the unit is the task's parallel
index minus its begin; a serial task is unit 0). Between launches it holds [0, 1, 0, 0, ...], so an ordinary
launch reads one uniform word per unit and writes nothing unless a push overflowed. Within a unit the replay
runs whole before the adjoint sweep (make_adjoint.py), so a unit that overflowed has added nothing to any
adjoint: a re-run can never count a gradient twice, and every overflowed unit is marked, so none is lost."""
from __future__ import annotations

from wgkern.errors import InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.clone import clone_block
from wgkern.ir.ops import BinaryOpKind
from wgkern import dtypes as T

UNIT_STATE_KIND = "unit_state"
HEADER_WORDS = 2          # selector, mark


def growable_stacks(task: ir.Task) -> list[ir.AdStackAlloca]:
    """The stacks of `task` with neither a static capacity nor a launch-time size expression."""
    return [s for s in task.body.stmts
            if isinstance(s, ir.AdStackAlloca) and s.capacity is None and s.size_expr is None]


def unit_state_slot() -> ir.ContainerSlot:
    """The grad kernel's unit-state container (shape known at launch, bound by the runtime)."""
    return ir.ContainerSlot(name="adstack unit state", kind=UNIT_STATE_KIND, dtype=T.i32, ndim=1)


def guard_units(task: ir.Task, state: ir.ContainerSlot, sweep_start: ir.Stmt | None) -> None:
    """Rewrite the unit body of `task` (replay + adjoint sweep, as make_adjoint.py emits it) as the module
    docstring shows. `sweep_start` is the sweep's first top-level statement (None: the sweep is empty)."""
    body = task.body.stmts
    allocas = [s for s in body if isinstance(s, ir.AdStackAlloca)]
    rest = [s for s in body if not isinstance(s, ir.AdStackAlloca)]
    replay, sweep = _split(rest, sweep_start)
    loc = task.loc
    b = IRBuilder(ir.Block(), loc)
    zero = b.const(0, T.i32)
    selector = b.global_load(b.global_ptr(state, [zero]))
    runs = b.alloca(T.u1, "unit_runs")
    b.store(runs, b.const(True, T.u1))
    rerun = b.binary(BinaryOpKind.CMP_NE, selector, zero)
    check = b.if_(rerun)
    with b.at(check.then_block):
        mine = b.global_load(b.global_ptr(state, [_state_index(b, task)]))
        b.store(runs, b.binary(BinaryOpKind.CMP_EQ, mine, selector))
    guarded = b.if_(b.load(runs))
    guarded.then_block.stmts.extend(replay)
    with b.at(guarded.then_block):
        outcome = b.if_(b.insert(ir.AdStackOverflowed(dtype=T.u1)))
        with b.at(outcome.then_block):
            mark = b.global_load(b.global_ptr(state, [b.const(1, T.i32)]))
            b.global_store(b.global_ptr(state, [_state_index(b, task)]), mark)
        outcome.else_block.stmts.extend(sweep)
        with b.at(outcome.else_block):
            done = b.if_(rerun)
            with b.at(done.then_block):
                b.global_store(b.global_ptr(state, [_state_index(b, task)]), b.const(0, T.i32))
    task.body.stmts = allocas + b.block.stmts


def _split(stmts: list[ir.Stmt], sweep_start: ir.Stmt | None) -> tuple[list[ir.Stmt], list[ir.Stmt]]:
    if sweep_start is None:
        return stmts, []
    if sweep_start not in stmts:
        raise InternalCompilerError("the adjoint sweep does not start at the unit's top level", sweep_start.loc)
    at = stmts.index(sweep_start)
    return stmts[:at], stmts[at:]


def _state_index(b: IRBuilder, task: ir.Task) -> ir.Stmt:
    """HEADER_WORDS + this unit's number, computed where it is needed (the re-run and overflow paths only):
    the parallel index minus the task's begin, whose pure bounds statements are copied here."""
    header = b.const(HEADER_WORDS, T.i32)
    if task.kind != "range" or task.loop is None:
        return header
    begin = task.loop.begin
    if isinstance(begin, ir.Const):
        offset = b.const(HEADER_WORDS - int(begin.value), T.i32)
        return b.add(b.loop_index(task.loop), offset)
    value_map: dict[ir.Stmt, ir.Stmt] = {}
    b.block.stmts.extend(clone_block(task.bounds, value_map).stmts)
    unit = b.sub(b.loop_index(task.loop), value_map[begin])
    return b.add(unit, header)
