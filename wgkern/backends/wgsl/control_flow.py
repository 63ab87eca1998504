"""WGSL for control flow: blocks, range loops (unrolled for llvmpipe where that pays), while loops with the loop
limit, break, continue, if, return."""
from __future__ import annotations

from wgkern.errors import CompileError, InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk
from wgkern.passes.analysis import first_simt_use, has_loop, leaves_loop_body
from wgkern.backends.wgsl.shader_common import (GPU_UNROLL, GPU_UNROLL_COPIES, GPU_UNROLL_MAX_STMTS,
                                                LLVMPIPE_COPIES_PER_TASK, LLVMPIPE_UNROLL, LLVMPIPE_UNROLL_MAX_STMTS,
                                                LOOP_LIMIT_ITERATIONS,
                                                _few_invocations, iterations_under)
from wgkern.backends.wgsl.printing import CHUNK_WORD, PRINT_NAME
from wgkern.backends.wgsl.serial_chunks import CHUNK_LOOP, LOOP_BEGIN, LOOP_END, chunk_bounds, chunk_iterations


class ControlFlowLowering:
    """WgslCodegen's rules for control flow."""

    # ---- control flow -------------------------------------------------------------------------------------
    def _block(self, block: ir.Block) -> None:
        self.indent += 1
        start, declared = len(self.lines), len(self.local_order)
        self.visit_block(block)
        self.outline_block(start, declared, block)          # a large block becomes a function (outlining.py)
        self.indent -= 1

    def visit_RangeFor(self, stmt: ir.RangeFor) -> None:
        begin, end = self.value(stmt.begin), self.value(stmt.end)
        number = self.chunked.get(stmt)
        if number is not None:      # a chunked loop of a serial task (serial_chunks.py): this dispatch's chunk
            self.emit(f"if ({CHUNK_LOOP} == {number}u) {{   {LOOP_BEGIN}{number}")
            self.indent += 1
            lets, following = chunk_bounds(chunk_iterations(stmt), begin, end, "wk_chunk", self.fresh("wk_chunk"))
            for (name, value), wgsl_type in zip(lets, ("u32", "u32", "i32", "i32")):
                self.emit(f"let {name} = {value};")
                self.declare_local(name, wgsl_type)
            self.chunk_number = number          # the functions made from its blocks go with its code
            self._emit_range(stmt, lets[2][0], lets[3][0])
            self.chunk_number = None
            self.emit(f"atomicStore(&{PRINT_NAME}[{CHUNK_WORD}], {following});   // the next dispatch's chunk")
            self.emit(f"wk_last_chunk = {following} == 0u;")
            self.indent -= 1
            self.emit(f"}}   {LOOP_END}{number}")
            return
        self._emit_range(stmt, begin, end)

    def _emit_range(self, stmt: ir.RangeFor, begin: str, end: str) -> None:
        index = self.fresh("i")
        self.loop_vars[stmt] = index
        self.loop_depth += 1
        self.declare_local(index, "i32", mutable=True)
        if stmt.reversed:      # decrement first: no overflow at either end, `continue` needs no continuing
            self.emit(f"var {index} = {end};")
            self.emit("loop {")
            self.emit(f"  if ({index} <= {begin}) {{ break; }}")
            self.emit(f"  {index} = {index} - 1i;")
            self._block(stmt.body)
            self.emit("}")
        elif self._unrolls_for_llvmpipe(stmt):
            self._emit_unrolled_range(stmt, index, begin, end, LLVMPIPE_UNROLL,
                                      "LOOP_LIMIT: several iterations per trip (_unrolls_for_llvmpipe)")
        elif self._unrolls_for_gpu(stmt):
            self._emit_unrolled_range(stmt, index, begin, end, GPU_UNROLL_COPIES,
                                      "GPU_UNROLL: loads of several iterations in flight (_unrolls_for_gpu)")
        else:
            self.emit(f"var {index} = {begin};")
            self.emit("loop {")
            self.emit(f"  if ({index} >= {end}) {{ break; }}")
            self._block(stmt.body)
            self.emit(f"  continuing {{ {index} = {index} + 1i; }}")
            self.emit("}")
        self.loop_depth -= 1

    def _unrolls_for_llvmpipe(self, stmt: ir.RangeFor) -> bool:
        """LOOP_LIMIT: the loops of a serial task, or of a parallel loop over a few indices (Taichi's serial
        idiom `for _ in range(1):`), run in one invocation, whose loops llvmpipe ends after 65535 iterations
        together. An innermost loop of such a task that may run long and that leaves its body only at the end
        (no break, continue or return of its own) runs LLVMPIPE_UNROLL iterations per trip instead, which
        multiplies what fits in that budget by as much. Data-parallel tasks keep their loops as they are (their indices share
        the work, and copies of a body cost lavapipe JIT time), and so do bodies of more than
        LLVMPIPE_UNROLL_MAX_STMTS statements (their copies would cost more compile time than their trips) and
        the loops after the task's copies have added LLVMPIPE_COPIES_PER_TASK statements."""
        return (self.watch_loops and _few_invocations(self.task)
                and not iterations_under(ir.Block([stmt]), LOOP_LIMIT_ITERATIONS // 2)
                and not leaves_loop_body(stmt.body.stmts) and not has_loop(stmt.body)
                and self._take_copies(stmt.body))

    def _take_copies(self, body: ir.Block) -> bool:
        """LOOP_LIMIT: whether `body` gets LLVMPIPE_UNROLL copies: it is at most LLVMPIPE_UNROLL_MAX_STMTS
        statements, and the task's copies so far leave room for these within LLVMPIPE_COPIES_PER_TASK."""
        size = sum(1 for _ in walk(body))
        added = LLVMPIPE_UNROLL * size
        if size > LLVMPIPE_UNROLL_MAX_STMTS or self.llvmpipe_copies + added > LLVMPIPE_COPIES_PER_TASK:
            return False
        self.llvmpipe_copies += added
        return True

    def _unrolls_for_gpu(self, stmt: ir.RangeFor) -> bool:
        """GPU_UNROLL (shader_common.py): an innermost loop that runs to its end, with a body of at most
        GPU_UNROLL_MAX_STMTS statements and no barrier or subgroup operation (copies of those would sit under
        the copies' branch), that may run more than twice GPU_UNROLL_COPIES iterations."""
        return (GPU_UNROLL in self.features and not has_loop(stmt.body)
                and not leaves_loop_body(stmt.body.stmts) and first_simt_use(stmt.body) is None
                and sum(1 for _ in walk(stmt.body)) <= GPU_UNROLL_MAX_STMTS
                and not iterations_under(ir.Block([stmt]), 2 * GPU_UNROLL_COPIES))

    def _emit_unrolled_range(self, stmt: ir.RangeFor, index: str, begin: str, end: str, copies: int,
                             why: str) -> None:
        """`for index in range(begin, end)` with `copies` copies of the body per trip while that many indices
        remain (the count is taken unsigned: no overflow near the ends of i32), one copy otherwise."""
        self.emit(f"var {index} = {begin};")
        self.declare_local(index, "i32", mutable=True)
        self.emit("loop {")
        self.indent += 1
        self.emit(f"if ({index} >= {end}) {{ break; }}")
        self.emit(f"if (bitcast<u32>({end}) - bitcast<u32>({index}) >= {copies}u) {{   // {why}")
        for step in range(copies):
            self._emit_body_copy(stmt, f"{index} + {step}i")
        self.emit(f"  {index} = {index} + {copies}i;")
        self.emit("} else {")
        self._emit_body_copy(stmt, index)
        self.emit(f"  {index} = {index} + 1i;")
        self.emit("}")
        self.indent -= 1
        self.emit("}")

    def _emit_body_copy(self, stmt: ir.RangeFor, index_expr: str) -> None:
        """One copy of a loop body, in its own scope, with the loop index bound to `index_expr`."""
        self.indent += 1
        self.emit("{")
        copy_index = self.fresh("i")
        self.emit(f"  let {copy_index} = {index_expr};")
        self.declare_local(copy_index, "i32")
        self.loop_vars[stmt] = copy_index
        self._block(stmt.body)
        self.emit("}")
        self.indent -= 1

    def visit_LoopIndex(self, stmt: ir.LoopIndex) -> None:
        index = self.loop_vars.get(stmt.loop)
        if index is None:
            raise InternalCompilerError("LoopIndex outside its loop", stmt.loc)
        self.let(stmt, index)

    def visit_While(self, stmt: ir.While) -> None:
        self.loop_depth += 1
        self.emit("loop {")
        if self.watch_loops and _few_invocations(self.task) and not has_loop(stmt.body) and \
                self._take_copies(stmt.body):
            # LOOP_LIMIT, as _unrolls_for_llvmpipe: LLVMPIPE_UNROLL iterations per trip. A `while` has no index,
            # so its `break` leaves from any copy and its `continue` starts the next iteration at the top.
            self.emit(f"// LOOP_LIMIT: {LLVMPIPE_UNROLL} iterations per trip (visit_While)")
            for _ in range(LLVMPIPE_UNROLL):
                self.indent += 1
                self.emit("{")
                self._block(stmt.body)
                self.emit("}")
                self.indent -= 1
        else:
            self._block(stmt.body)
        self.emit("}")
        self.loop_depth -= 1

    def visit_Break(self, stmt: ir.Break) -> None:
        if self.task.kind == "range" and not self.loop_depth:
            raise CompileError("break out of a parallel loop is not supported", stmt.loc)
        self.emit("break;")

    def visit_Continue(self, stmt: ir.Continue) -> None:
        self.emit("continue;")

    def visit_If(self, stmt: ir.If) -> None:
        self.emit(f"if ({self.value(stmt.cond)}) {{")
        self._block(stmt.then_block)
        if stmt.else_block.stmts:
            self.emit("} else {")
            self._block(stmt.else_block)
        self.emit("}")

    def visit_Return(self, stmt: ir.Return) -> None:
        if self.task.kind == "range":
            if self.loop_depth:
                raise CompileError("return inside a loop of a parallel loop body is not supported", stmt.loc)
            self.emit("continue;  // return: this index is done")
        else:
            self._emit_loop_limit_probe()
            self.emit("return;")

