"""LOOP_LIMIT (shader_common.py): a serial task's long top-level loops run in chunks, one dispatch per chunk, so
that llvmpipe's budget of LOOP_LIMIT_ITERATIONS loop iterations per invocation bounds one chunk instead of the
whole loop (a serialized loop over the 400000 vertices of a mesh ran out of it). Owns which serial tasks run so
(chunked_loops), the dispatches of one launch of such a task (chunk_dispatches) and the chunk's bounds in the
shader (chunk_bounds); task_mains.py and control_flow.py emit them.

Dispatches run in order, each seeing the previous one's writes, so the chunks keep the loop's serial order. A
dispatch names its chunk by its size: dispatch (loop + 1, chunk + 1) runs chunk `chunk` of the task's top-level
loop number `loop`, in its last workgroup; the others return at once. A task qualifies when nothing but its loops
has an effect, so every dispatch can compute the rest again: its top-level statements are loops and values
computed from constants, arguments and shapes (HOST_VALUES, integer-typed where they bound a loop, so the host
counts the same trips as the shader), and each loop runs forward, holds no loop, cannot be left early (no break,
continue or return), and draws no random numbers (the generator's counter is per invocation)."""
from __future__ import annotations

from typing import Any, Sequence

from wgkern.ir import host_eval
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk
from wgkern.passes.analysis import has_loop, leaves_loop_body
from wgkern.backends.wgsl.shader_common import LOOP_LIMIT_ITERATIONS, _iterations_under

# Iterations of one loop per dispatch: half the budget, leaving the rest to the loop-limit probe and to loops the
# driver runs inside WGSL built-ins and helpers (each iteration of a chunked loop is one trip, or less where the
# loop runs several iterations per trip, control_flow.py).
CHUNK_ITERATIONS = LOOP_LIMIT_ITERATIONS // 2

HOST_VALUES = (ir.Const, ir.ArgLoad, ir.ShapeOf, ir.UnaryOp, ir.BinaryOp, ir.Cast, ir.TernarySelect)


def chunked_loops(task: ir.Task) -> tuple[ir.RangeFor, ...]:
    """The top-level loops of `task` when it runs in chunks (the module's docstring says when), else ()."""
    if task.kind != "serial":
        return ()
    loops = tuple(stmt for stmt in task.body.stmts if isinstance(stmt, ir.RangeFor))
    if not loops or any(not isinstance(stmt, (ir.RangeFor, *HOST_VALUES)) for stmt in task.body.stmts):
        return ()
    for loop in loops:
        if loop.reversed or has_loop(loop.body) or leaves_loop_body(loop.body.stmts) or \
                any(isinstance(stmt, (ir.Return, ir.RandomValue)) for stmt in walk(loop.body)) or \
                not (_counted_on_host(loop.begin) and _counted_on_host(loop.end)):
            return ()
    if all(_iterations_under(ir.Block([loop]), CHUNK_ITERATIONS) for loop in loops):
        return ()                       # short loops: one dispatch runs them all
    return loops


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


def chunk_dispatches(loops: Sequence[ir.RangeFor], scalars: Sequence[Any],
                     shapes: dict[ir.ContainerSlot, Sequence[int]]) -> list[tuple[int, int]]:
    """The workgroup counts (x, y) of the dispatches one launch of a task with chunked `loops` makes, in order:
    (loop + 1, chunk + 1) for every chunk of every loop that runs at least one iteration."""
    dispatches = []
    for number, loop in enumerate(loops):
        begin = int(host_eval.evaluate_pure(loop.begin, scalars, shapes))
        end = int(host_eval.evaluate_pure(loop.end, scalars, shapes))
        chunks = -(-(end - begin) // CHUNK_ITERATIONS) if end > begin else 0
        dispatches.extend((number + 1, chunk + 1) for chunk in range(chunks))
    return dispatches


def chunk_bounds(begin: str, end: str, chunk: str) -> tuple[str, str]:
    """WGSL expressions of the first and end index of chunk `chunk` (a u32 expression) of a loop over
    [begin, end) (i32 expressions), in u32 arithmetic, as the trip count may not fit in an i32."""
    first = f"bitcast<i32>(bitcast<u32>({begin}) + {chunk} * {CHUNK_ITERATIONS}u)"
    last = (f"select({end}, {first} + {CHUNK_ITERATIONS}i, "
            f"bitcast<u32>({end}) - bitcast<u32>({first}) > {CHUNK_ITERATIONS}u)")
    return first, last
