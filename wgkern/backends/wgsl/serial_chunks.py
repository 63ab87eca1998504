"""LOOP_LIMIT (shader_common.py): a serial task's long top-level loops run in chunks, one dispatch per chunk, so
that llvmpipe's budget of LOOP_LIMIT_ITERATIONS loop iterations per invocation bounds one chunk instead of the
whole loop (a serialized loop over the 400000 vertices of a mesh ran out of it). Owns which serial tasks run so
(chunked_loops), the dispatches of one launch of such a task (chunk_dispatches) and the chunk's bounds in the
shader (chunk_bounds); task_mains.py and control_flow.py emit them.

Dispatches run in order, each seeing the previous one's writes, so the chunks keep the loop's serial order. A
dispatch is one workgroup of the task's pipeline for its top-level loop number `loop`: the shader's override
CHUNK_LOOP, set per pipeline (chunk_pipeline_constants), selects the loop's code, so the driver compiles that loop
alone. llvmpipe runs an `if` as masked straight-line code rather than a jump, so a shader selecting its loop at
run time (from the workgroup count, as it did) ran every loop's code, masked off, in every workgroup of every
chunk: with 64 environments Genesis's rigid-solver shaders (up to 19 chunked loops, several hundred KB of WGSL
each) spent 2-4 ms a dispatch on code that had no effect. Which chunk, a word of the print buffer says
(printing.CHUNK_WORD): the chunk reads it and leaves the next chunk's number there, 0 after the loop's last, so
every loop starts from 0 and the host only counts the dispatches. A chunk of an innermost loop is CHUNK_ITERATIONS
iterations; one of a loop holding loops (Genesis's loops over the environments of a batch, serialized on its CPU
backend) shares them with the inner loops' iterations where those have compile-time bounds, else is one iteration,
whose inner loops then have the budget to themselves (chunk_iterations); past MAX_CHUNKS chunks a chunk takes the
loop's count / MAX_CHUNKS iterations (more than the budget may allow: the loop-limit probe still reports that). A
task qualifies when nothing but its loops has an effect, so every dispatch can compute the rest again: its
top-level statements are loops, values computed from constants, arguments and shapes (HOST_VALUES, integer-typed
where they bound a loop, so the host counts the same trips as the shader), loads from containers the task never
writes (Genesis reads its 0-d settings, `EPS = rigid_info.EPS[None]`, before its serialized loops; every dispatch
reads the same value again) and stores of such values (each runs once, in the first chunk of the loop after it or
the last chunk of the last loop: store_phases), and each loop runs forward, cannot be left early (no break,
continue or return of its own, no return in it) and draws no random numbers (the generator's counter is per
invocation). Two ndarray slots are one array where a launch passes the same ndarray twice, so a launch whose array
read that way is also one the task writes is refused (reread_aliases, alias_error)."""
from __future__ import annotations

import functools
from typing import Any, Sequence

from wgkern.errors import ArgumentError, format_located
from wgkern.ir import host_eval
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk
from wgkern.passes.analysis import has_loop, leaves_loop_body
from wgkern.backends.wgsl.shader_common import LOOP_LIMIT_ITERATIONS, iterations_under

# Iterations of an innermost loop per dispatch: half the budget, leaving the rest to the loop-limit probe and to loops the
# driver runs inside WGSL built-ins and helpers (each iteration of a chunked loop is one trip, or less where the
# loop runs several iterations per trip, control_flow.py).
CHUNK_ITERATIONS = LOOP_LIMIT_ITERATIONS // 2

MAX_CHUNKS = 4096        # chunks (dispatches) of one loop per launch, at most

CHUNK_LOOP = "wk_chunk_loop"    # the WGSL override naming the loop whose chunks a pipeline runs
# the comments ending the lines that open and close chunked loop n's block in a task's WGSL (chunk_loop_source)
LOOP_BEGIN, LOOP_END = "// chunked loop ", "// end of chunked loop "

HOST_VALUES = (ir.Const, ir.ArgLoad, ir.ShapeOf, ir.UnaryOp, ir.BinaryOp, ir.Cast, ir.TernarySelect)


def chunked_loops(task: ir.Task) -> tuple[ir.RangeFor, ...]:
    """The top-level loops of `task` when it runs in chunks (the module's docstring says when), else ()."""
    if task.kind != "serial":
        return ()
    loops = tuple(stmt for stmt in task.body.stmts if isinstance(stmt, ir.RangeFor))
    if not loops:
        return ()
    written = _written_slots(task)
    if any(not (isinstance(stmt, (ir.RangeFor, ir.GlobalPtr, ir.GlobalStore, *HOST_VALUES))
                or isinstance(stmt, ir.GlobalLoad) and stmt.ptr.container not in written)
           for stmt in task.body.stmts):
        return ()
    for loop in loops:
        if loop.reversed or leaves_loop_body(loop.body.stmts) or \
                any(isinstance(stmt, (ir.Return, ir.RandomValue)) for stmt in walk(loop.body)) or \
                not (_counted_on_host(loop.begin) and _counted_on_host(loop.end)):
            return ()
    if all(iterations_under(ir.Block([loop]), LOOP_LIMIT_ITERATIONS // 2) for loop in loops):
        return ()                       # short loops: one dispatch runs them all
    return loops


def _written_slots(task: ir.Task) -> set[ir.ContainerSlot]:
    """The containers a task's stores and atomics write."""
    return {stmt.ptr.container for stmt in walk(task.body) if isinstance(stmt, (ir.GlobalStore, ir.AtomicOp))}


def reread_aliases(task: ir.Task, containers: Sequence[ir.ContainerSlot]) -> tuple[tuple[int, int], ...]:
    """For a task with chunked loops: the pairs (read, written) of positions in `containers` of an ndarray that a
    top-level load reads (again in every dispatch) and another ndarray the task writes. A launch that passes one
    array as both would have later dispatches read what earlier ones wrote (alias_error)."""
    read = {stmt.ptr.container for stmt in task.body.stmts if isinstance(stmt, ir.GlobalLoad)}
    written = _written_slots(task)
    position = {id(slot): k for k, slot in enumerate(containers)}
    return tuple((position[id(a)], position[id(b)]) for a in read if a.kind == "ndarray"
                 for b in written if b.kind == "ndarray" and b is not a and a.dtype == b.dtype)


def alias_error(kernel: str, task: ir.Task, containers: Sequence[ir.ContainerSlot], read: int,
                written: int) -> ArgumentError:
    """The error of a launch that passes one array as ndarrays `read` and `written` of a reread_aliases pair."""
    a, b = containers[read], containers[written]
    return ArgumentError(format_located(
        f"kernel {kernel}: ndarray arguments {a.name!r} and {b.name!r} are the same array. On lavapipe the "
        f"serialized loops of this code run in chunks, one dispatch each, and each dispatch reads {a.name!r} again "
        f"before the loops, which write {b.name!r}; pass separate arrays, or run it with arch=wk.cpu", task.loc))


def store_phases(task: ir.Task) -> dict[ir.GlobalStore, tuple[int, bool]]:
    """The dispatch that runs each top-level store of a task with chunked loops: (loop, True) for the first
    chunk of the loop after it, (loop, False) for the last chunk of the task's last loop where none follows."""
    phases: dict[ir.GlobalStore, tuple[int, bool]] = {}
    waiting: list[ir.GlobalStore] = []
    number = -1
    for stmt in task.body.stmts:
        if isinstance(stmt, ir.GlobalStore):
            waiting.append(stmt)
        elif isinstance(stmt, ir.RangeFor):
            number += 1
            phases.update((store, (number, True)) for store in waiting)
            waiting = []
    phases.update((store, (number, False)) for store in waiting)
    return phases


def _counted_on_host(bound: ir.Stmt) -> bool:
    """Whether `bound` and the values it is computed from are HOST_VALUES of integer (or bool) types."""
    pending, seen = [bound], set()
    while pending:
        stmt = pending.pop()
        if stmt in seen:
            continue
        seen.add(stmt)
        if not isinstance(stmt, HOST_VALUES) or stmt.dtype.is_float:
            return False
        pending.extend(stmt.operands())
    return True


def chunk_iterations(loop: ir.RangeFor) -> int:
    """The iterations of a chunk of `loop` while it has at most MAX_CHUNKS chunks: CHUNK_ITERATIONS shared by the
    iterations and their inner loops where these have compile-time bounds, else 1."""
    if not has_loop(loop.body):
        return CHUNK_ITERATIONS
    if not iterations_under(loop.body, CHUNK_ITERATIONS):
        return 1
    low, high = 0, CHUNK_ITERATIONS          # the inner loops' iterations per iteration: in (low, high]
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if iterations_under(loop.body, middle) else (middle, high)
    return max(1, CHUNK_ITERATIONS // (1 + high))


def chunk_pipeline_constants(loop: int) -> dict[str, int]:
    """The override constants of the pipeline that runs the chunks of a task's chunked loop number `loop`."""
    return {CHUNK_LOOP: loop}


def chunk_loop_source(wgsl: str, loop: int) -> str:
    """The WGSL of the pipeline that runs chunked loop number `loop` of a task: the task's `wgsl` without the
    other chunked loops' blocks (between their LOOP_BEGIN and LOOP_END lines), which that pipeline never runs, so
    that naga and the driver handle the code of one loop, not of all of them, in each of the task's pipelines."""
    return "".join(text for number, text in _loop_segments(wgsl) if number is None or number == str(loop)) or "\n"


@functools.lru_cache(maxsize=4)
def _loop_segments(wgsl: str) -> tuple[tuple[str | None, str], ...]:
    """`wgsl` cut into (number, text): the blocks of chunked loops (from a LOOP_BEGIN line to the LOOP_END line of
    the same number; the number as written) and the text around them (None), each line ending in a newline. A
    task's pipelines ask for each of its loops in turn: the text is cut once."""
    segments: list[tuple[str | None, str]] = []
    kept: list[str] = []
    block: list[str] = []
    skipping = None                     # the LOOP_END line of the block being cut out, and its number
    for line in wgsl.splitlines():
        if skipping is not None:
            block.append(line)
            if line.endswith(skipping[0]):
                segments.append((skipping[1], "\n".join(block) + "\n"))
                block, skipping = [], None
            continue
        at = line.rfind(LOOP_BEGIN)
        if at >= 0:
            number = line[at + len(LOOP_BEGIN):]
            if kept:
                segments.append((None, "\n".join(kept) + "\n"))
                kept = []
            block, skipping = [line], (LOOP_END + number, number)
            continue
        kept.append(line)
    if block:                           # a block without its end line: to the end of the text
        segments.append((skipping[1], "\n".join(block) + "\n"))
    if kept:
        segments.append((None, "\n".join(kept) + "\n"))
    return tuple(segments)


def chunk_dispatches(loops: Sequence[ir.RangeFor], sizes: Sequence[int], scalars: Sequence[Any],
                     shapes: dict[ir.ContainerSlot, Sequence[int]]) -> list[int]:
    """The dispatches one launch of a task with chunked `loops` makes, in order, each as the number of the loop
    whose pipeline it runs (one workgroup): one for every chunk of every loop, one for a loop that runs no
    iteration. `sizes`: each loop's chunk_iterations."""
    dispatches = []
    for number, (loop, base) in enumerate(zip(loops, sizes)):
        count = int(host_eval.evaluate_pure(loop.end, scalars, shapes)) - \
            int(host_eval.evaluate_pure(loop.begin, scalars, shapes))
        size = max(base, -(-count // MAX_CHUNKS))
        # a loop that runs no iteration still gets its chunk: the task's stores around it run there
        dispatches.extend([number] * max(1, -(-count // size)))
    return dispatches


def chunk_bounds(base: int, begin: str, end: str, chunk: str, name: str) -> tuple[list[tuple[str, str]], str]:
    """The WGSL `let`s, (name, expression), of chunk `chunk` (a u32 expression) of a loop over [begin, end) (i32
    expressions; chunk 0 of an empty loop runs nothing) whose chunk_iterations are `base`, the third and fourth of them its first and end
    index, computed in u32 as chunk_dispatches does (the trip count may not fit in an i32); and the expression of
    the chunk after it, 0 after the last."""
    count, size, first = f"{name}_count", f"{name}_size", f"{name}_begin"
    last = f"{end} <= {first} || bitcast<u32>({end}) - bitcast<u32>({first}) <= {size}"
    return ([(count, f"bitcast<u32>({end}) - bitcast<u32>({begin})"),
             (size, f"max({base}u, {count} / {MAX_CHUNKS}u + select(0u, 1u, {count} % {MAX_CHUNKS}u != 0u))"),
             (first, f"bitcast<i32>(bitcast<u32>({begin}) + {chunk} * {size})"),
             (f"{name}_end", f"select({end}, bitcast<i32>(bitcast<u32>({first}) + {size}), !({last}))")],
            f"select({chunk} + 1u, 0u, {last})")
