"""Static facts the runtime needs to keep gradients honest.

`loop_bound_slots`: containers whose contents decide a loop's trip count (a `.grad` launched after they changed
would replay a different loop than the forward did, so the runtime refuses it). `check_global_access_rule`:
Taichi's global data access rule (no read the reverse pass replays of a global element the same launch
overwrites later), checked at every reverse compile for the cases decidable at compile time.
`check_adjoint_reads`: a kernel that reads an adjoint (`x.grad[j]`) its own reverse kernel accumulates into
cannot be differentiated."""
from __future__ import annotations

from wgkern.errors import AutodiffError, GlobalAccessRuleError
from wgkern.ir import nodes as ir
from wgkern.passes.analysis import describe_simt_use, first_simt_use


def _walk(block: ir.Block):
    for stmt in block.stmts:
        yield stmt
        for child in stmt.blocks():
            yield from _walk(child)


def _task_blocks(kernel: ir.OffloadedKernel) -> list[ir.Block]:
    return [ir.Block(task.bounds.stmts + task.body.stmts) for task in kernel.tasks]


def loop_bound_slots(kernel: ir.OffloadedKernel) -> set[ir.ContainerSlot]:
    """Containers read (through arithmetic, local variables and kernel temporaries) by range bounds or
    while-loop exits."""
    temp_writes: dict[ir.ContainerSlot, list[ir.Stmt]] = {}
    local_stores: dict[ir.Alloca, list[ir.Stmt]] = {}
    roots: list[ir.Stmt] = []
    for task in kernel.tasks:
        stmts = list(task.bounds.stmts) + list(_walk(task.body))
        if task.loop is not None:
            roots += [task.loop.begin, task.loop.end]
        for stmt in stmts:
            if isinstance(stmt, ir.LocalStore):
                local_stores.setdefault(stmt.alloca, []).append(stmt.value)
            elif isinstance(stmt, (ir.GlobalStore, ir.AtomicOp)) and stmt.ptr.container.kind == "temp":
                temp_writes.setdefault(stmt.ptr.container, []).append(stmt.value)
            elif isinstance(stmt, ir.RangeFor):
                roots += [stmt.begin, stmt.end]
            elif isinstance(stmt, ir.While):
                roots += _exit_conditions(stmt.body)
    slots: set[ir.ContainerSlot] = set()
    seen: set[ir.Stmt] = set()
    while roots:
        value = roots.pop()
        if value in seen:
            continue
        seen.add(value)
        if isinstance(value, ir.GlobalLoad):
            slot = value.ptr.container
            if slot.kind == "temp":
                roots.extend(temp_writes.get(slot, []))
            else:
                slots.add(slot)
        if isinstance(value, ir.LocalLoad):
            roots.extend(local_stores.get(value.alloca, []))
        roots.extend(o for o in value.operands() if not isinstance(o, (ir.RangeFor, ir.Alloca)))
    return slots


def _exit_conditions(block: ir.Block) -> list[ir.Stmt]:
    """Conditions of the branches that lead to a `break` of the loop owning `block` (not of nested loops)."""
    conditions: list[ir.Stmt] = []
    for stmt in block.stmts:
        if isinstance(stmt, ir.If):
            inner = _exit_conditions(stmt.then_block) + _exit_conditions(stmt.else_block)
            breaks = any(isinstance(s, ir.Break) for s in stmt.then_block.stmts + stmt.else_block.stmts)
            if inner or breaks:
                conditions.append(stmt.cond)
                conditions.extend(inner)
    return conditions


def check_global_access_rule(kernel: ir.OffloadedKernel, grad_kernel: ir.OffloadedKernel) -> None:
    """Raise AutodiffError where a launch of `kernel` reads a global element that the same launch overwrites
    later and `grad_kernel` (its reverse kernel) replays that read, so it would see the later value: a store at
    the same index values later in the same task (not in the other branch of an `if` that no loop repeats), or
    a store to the same container in a later task. Reads the reverse kernel does not replay (their values no
    derivative needs) break nothing and are let through."""
    replayed = _replayed_reads(grad_kernel)
    read_by_earlier_tasks: dict[ir.ContainerSlot, ir.Stmt] = {}
    for task in kernel.tasks:
        loads: dict[tuple[int, tuple[int, ...]], list[tuple[ir.Stmt, tuple]]] = {}
        for stmt, path in _walk_with_paths(task.body, ()):
            if isinstance(stmt, ir.GlobalLoad) and stmt.ptr.container.kind != "temp":
                if _read_key(stmt) in replayed:
                    loads.setdefault(_element(stmt.ptr), []).append((stmt, path))
            elif isinstance(stmt, (ir.GlobalStore, ir.AtomicOp)) and stmt.ptr.container.kind != "temp":
                reader = next((load for load, load_path in loads.get(_element(stmt.ptr), ())
                               if not _exclusive(load_path, path)), None)
                reader = reader or read_by_earlier_tasks.get(stmt.ptr.container)
                if reader is not None:
                    raise GlobalAccessRuleError(
                        f"global data access rule violated: '{stmt.ptr.container.name}' is overwritten here "
                        f"after the same launch read it (at {reader.loc}); the reverse pass would replay that "
                        f"read with the new value. Split the kernel or keep the old value in another field",
                        stmt.loc)
        for stmt in _walk(task.body):
            if isinstance(stmt, ir.GlobalLoad) and stmt.ptr.container.kind != "temp" \
                    and _read_key(stmt) in replayed:
                read_by_earlier_tasks.setdefault(stmt.ptr.container, stmt)


def _read_key(load: ir.GlobalLoad) -> tuple:
    """A forward load and the reverse kernel's replay of it share their container and source location (the
    transform copies statements with their loc); two loads of one container on one line share a key, which can
    only make the check stricter."""
    loc = load.loc
    return id(load.ptr.container), None if loc is None else (loc.filename, loc.lineno, loc.col)


def _replayed_reads(grad_kernel: ir.OffloadedKernel) -> set[tuple]:
    return {_read_key(stmt) for block in _task_blocks(grad_kernel) for stmt in _walk(block)
            if isinstance(stmt, ir.GlobalLoad)}


def _walk_with_paths(block: ir.Block, path: tuple):
    """Statements with the chain of blocks that encloses each: ('if', if, branch) and ('loop', stmt) entries."""
    for stmt in block.stmts:
        yield stmt, path
        for branch, child in enumerate(stmt.blocks()):
            entry = ("if", stmt, branch) if isinstance(stmt, ir.If) else ("loop", stmt)
            yield from _walk_with_paths(child, path + (entry,))


def _exclusive(first: tuple, second: tuple) -> bool:
    """Whether two statements can never both run in one thread: they sit in different branches of one `if`
    that no loop around it (inside the task) runs again."""
    for a, b in zip(first, second):
        if a[0] == "loop" and a == b:
            return False
        if a != b:
            return a[0] == "if" and b[0] == "if" and a[1] is b[1]
    return False


def _element(ptr: ir.GlobalPtr) -> tuple[int, tuple[int, ...]]:
    return id(ptr.container), tuple(id(i) for i in ptr.indices)


def _container_key(slot: ir.ContainerSlot) -> tuple:
    """Identity of a container across a kernel and its grad kernel (fields: the host field, which for `x.grad`
    read in user code is the same object the reverse kernel accumulates into; ndarrays: the argument, or its
    .grad)."""
    if slot.kind == "field":
        return ("field", id(slot.host))
    if slot.kind == "ndarray":
        return ("ndarray", slot.arg_index, slot.is_grad)
    return ("temp", id(slot))


def check_adjoint_reads(kernel: ir.OffloadedKernel, grad_kernel: ir.OffloadedKernel,
                        adjoints: list[ir.ContainerSlot]) -> None:
    """Raise AutodiffError where `kernel` reads one of the adjoint containers `adjoints` (x.grad) that
    `grad_kernel` accumulates into: the replayed read would see adjoints other iterations (or threads) already
    added, so the gradient would depend on the order of execution. Reading an adjoint nothing accumulates into
    is a constant, and allowed."""
    adjoint_keys = {_container_key(slot) for slot in adjoints if slot.kind != "temp"}
    written = {_container_key(stmt.ptr.container) for block in _task_blocks(grad_kernel) for stmt in _walk(block)
               if isinstance(stmt, (ir.GlobalStore, ir.AtomicOp))} & adjoint_keys
    if not written:
        return
    for block in _task_blocks(kernel):
        for stmt in _walk(block):
            if isinstance(stmt, ir.GlobalLoad) and _container_key(stmt.ptr.container) in written:
                raise AutodiffError(
                    f"cannot differentiate through a read of the gradient '{stmt.ptr.container.name}': the "
                    f"reverse kernel accumulates into it while replaying that read. Read it in a kernel "
                    f"that is not differentiated, or copy it into another field first", stmt.loc)


def refuse_simt(kernel: ir.OffloadedKernel) -> None:
    """A kernel that uses wk.simt has no derivative here: its barriers, shared arrays and cross-thread
    exchanges would need their own adjoints (Taichi and Quadrants do not differentiate them either)."""
    for task in kernel.tasks:
        found = first_simt_use(task.body, ignored=frozenset())
        if found is not None:
            raise AutodiffError(f"kernel '{kernel.name}' uses {describe_simt_use(found)}, which has no derivative: "
                                "wk.simt kernels cannot be differentiated (.grad, wk.ad.Tape, wk.ad.FwdMode)",
                                found.loc)


def refuse_host_loops(kernel: ir.OffloadedKernel) -> None:
    """A `while wk.graph_do_while(c):` loop repeats as long as a counter the kernel itself changes says so:
    the reverse kernel could not replay its trips from the counter's final value, so it is refused rather than
    differentiated through one trip (Quadrants' graph kernels have no derivative either)."""
    loops = [h.loc for h in kernel.host_loops]
    loops += [stmt.loc for task in kernel.tasks for stmt in _walk(task.body)
              if isinstance(stmt, ir.While) and stmt.host_counter is not None]
    if loops:
        raise AutodiffError(f"kernel '{kernel.name}' has a wk.graph_do_while loop, which has no derivative: "
                            "graph kernels cannot be differentiated (.grad, wk.ad.Tape, wk.ad.FwdMode)", loops[0])


def refuse_non_differentiable(kernel: ir.OffloadedKernel) -> None:
    """The kernel features autodiff refuses, each with an AutodiffError at its line."""
    refuse_simt(kernel)
    refuse_host_loops(kernel)
