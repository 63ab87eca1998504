"""Statement visitors: with, if/while, break/continue, return (and a kernel's return value), expression
statements, pass, assert.

Assignments live in assignments.py; loops over ranges, ndrange, containers and wk.static in loops.py; func
inlining in func_calls.py."""
from __future__ import annotations

import ast
import re
from typing import Any, Iterator

from wgkern.errors import CompileError
from wgkern.frontend import arith, stream_parallel
from wgkern.frontend.graph_regions import module_prefix, spelling
from wgkern.frontend.loops import StaticExit
from wgkern.lang.structs import StructType, leaf_types
from wgkern.frontend.values import (GlobalRef, NdarrayRef, StructElement, StructValue, VectorValue, describe,
                                    is_runtime)
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind, UnaryOpKind
from wgkern.lang import math as wm
from wgkern.lang import types as T
from wgkern.frontend.assignments import VarElements, is_static_call
from wgkern.frontend.expressions import _short_circuit_operators


def return_annotation_parts(annotation: Any) -> list[Any] | None:
    """The value annotations of a tuple return (`-> tuple[wk.f32, wk.i32]`, `-> (wk.f32, wk.i32)`,
    `-> typing.Tuple[...]`), else None."""
    import typing
    if isinstance(annotation, tuple):
        return list(annotation)
    if typing.get_origin(annotation) is tuple:
        parts = list(typing.get_args(annotation))
        if not parts or parts[-1] is Ellipsis:
            raise CompileError(f"a kernel's tuple return annotation must list each value's type, got {annotation!r}")
        return parts
    return None


def nested_and(node: ast.If) -> ast.If | None:
    """`if a and b: body` (no else, no wk.static in the test) as `if a: (if b: body)`, for short-circuit
    operators: the same evaluation (b only where a holds, body where both do), but with body inside b's branch,
    so passes/simplify.py reuses there what b read and computed (a neighbour's position, its distance) instead of
    reading it again behind the alloca that a short-circuit value goes through (expressions.py). None for other
    statements."""
    test = node.test
    if not isinstance(test, ast.BoolOp) or not isinstance(test.op, ast.And) or node.orelse:
        return None
    if any(is_static_call(part) for part in ast.walk(test)):
        return None
    rest = test.values[1:]
    inner_test = rest[0] if len(rest) == 1 else ast.copy_location(ast.BoolOp(op=ast.And(), values=rest), test)
    inner = ast.copy_location(ast.If(test=inner_test, body=node.body, orelse=[]), node)
    return ast.copy_location(ast.If(test=test.values[0], body=[inner], orelse=[]), node)


_PRINTF_FIELD = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)(?:hh|h|ll|l|z)?([diouxXeEfFgGcs%])")


def runtime_message(msg: ast.expr) -> ast.Call | None:
    """An assert message that formats values (Taichi's `assert c, "x = %d" % x`, an f-string, `"{}".format(x)`),
    as the print() call that shows it; None for a plain message. A printf field becomes an f-string field with
    the same spec (print() reads printf's conversions); `%s` prints the value as print() would."""
    from wgkern.frontend.print_calls import is_str_format
    if isinstance(msg, ast.JoinedStr) or is_str_format(msg):
        text = msg
    elif isinstance(msg, ast.BinOp) and isinstance(msg.op, ast.Mod) and isinstance(msg.left, ast.Constant) \
            and isinstance(msg.left.value, str):
        values = list(msg.right.elts) if isinstance(msg.right, ast.Tuple) else [msg.right]
        parts: list[ast.expr] = []
        position = 0
        for field in _PRINTF_FIELD.finditer(msg.left.value):
            literal = msg.left.value[position:field.start()]
            position = field.end()
            if field.group(2) == "%":
                parts.append(ast.Constant(literal + "%"))
                continue
            if not values:
                raise CompileError(f"the assert message {msg.left.value!r} has more fields than values")
            spec = "" if field.group(2) == "s" else field.group(1) + field.group(2)
            parts += [ast.Constant(literal),
                      ast.FormattedValue(values.pop(0), -1, ast.JoinedStr([ast.Constant(spec)]) if spec else None)]
        if values:
            raise CompileError(f"the assert message {msg.left.value!r} has fewer fields than values")
        parts.append(ast.Constant(msg.left.value[position:]))
        text = ast.JoinedStr([p for p in parts if not (isinstance(p, ast.Constant) and p.value == "")])
    else:
        return None
    call = ast.Call(func=ast.Name("print", ast.Load()), args=[text], keywords=[])
    return ast.fix_missing_locations(ast.copy_location(call, msg))


class StatementMixin:


    # ---- control flow ----------------------------------------------------------------------------------------
    def visit_With(self, node: ast.With) -> bool:
        """`with wk.stream_parallel():` (Quadrants) around top-level loops: the body as written (its loops stay
        top-level, so parallel). `with wk.graph.parallel_context():` / `with wk.graph.parallel():` regions and
        sections: frontend/graph_regions.py. No other context manager has a meaning in kernels."""
        stream_parallel.check_with(self, node)
        for item in node.items:
            context = item.context_expr
            callee = self.visit(context.func) if isinstance(context, ast.Call) else None
            kind = self.graph_region_kind(context, callee)
            if kind is not None:
                return self.visit_graph_region(node, kind)
            if callee is not wm.stream_parallel or item.optional_vars is not None or context.args \
                    or context.keywords:
                why = ("it only supports qd.stream_parallel() and qd.graph regions" if isinstance(context, ast.Call)
                       else "it requires a call expression")     # Quadrants' phrases
                raise CompileError(f"'with' is not supported inside kernels, except `with wk.stream_parallel():` "
                                   f"({why})")
        return self.visit_body(node.body)

    def visit_If(self, node: ast.If) -> bool:
        """True when a compile-time branch was taken that certainly returns (see visit_body)."""
        nested = nested_and(node) if _short_circuit_operators() else None
        if nested is not None:
            return self.visit_If(nested)
        cond = self.visit(node.test)
        if not is_runtime(cond):
            # a compile-time branch is spliced in place: names it assigns stay visible after it
            if any(is_static_call(part) for part in ast.walk(node.test)):
                return self.visit_body(node.body if cond else node.orelse)
            # Taichi makes an `if` on a Python constant (no wk.static) a real branch, so a loop in it is not
            # a kernel's outermost loop: it runs serially (break works, updates of outer variables do not race)
            self.frame.constant_branch_depth += 1
            try:
                return self.visit_body(node.body if cond else node.orelse)
            finally:
                self.frame.constant_branch_depth -= 1
        cond = self.as_value(cond)
        if isinstance(cond, VectorValue):
            raise CompileError("an 'if' condition must be a scalar, got a vector (use .all()/.any() or "
                               "compare components)")
        branch = self.b.if_(cond)
        self.frame.branch_depth += 1
        try:
            with self.b.at(branch.then_block), self.frame.scope.block():
                self.visit_body(node.body)
            with self.b.at(branch.else_block), self.frame.scope.block():
                self.visit_body(node.orelse)
        finally:
            self.frame.branch_depth -= 1
        return False

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise CompileError("while/else is not supported inside kernels")
        self.ctx.serialize_next_loop = False
        self.ctx.block_dim_next_loop = 0
        if isinstance(node.test, ast.Call) and self.visit(node.test.func) is wm.graph_do_while:
            self.graph_do_while_loop(node)
            return
        loop = self.b.while_()
        with self.b.at(loop.body), self.frame.scope.block(), self.in_loop("ir"):
            cond = self.visit(node.test)
            never_runs = not is_runtime(cond) and not cond
            if is_runtime(cond):
                exit_branch = self.b.if_(arith.unary(self.b, UnaryOpKind.LOGICAL_NOT, self.as_scalar(cond)))
                with self.b.at(exit_branch.then_block):
                    self.b.insert(ir.Break())
            if not never_runs:
                self.visit_body(node.body)
        if never_runs:
            self.b.block.stmts.remove(loop)

    def graph_do_while_loop(self, node: ast.While) -> None:
        """Quadrants' `while wk.graph_do_while(c): body`: a do-while loop, the body first, then `c[()] != 0`
        decides whether it runs again. The While is marked with its counter: at the kernel's top level (or
        directly in another such loop) offload makes it a host loop, whose body's outermost loops run as
        parallel tasks, as Quadrants' host-side fallback of a CUDA graph does; elsewhere it stays a loop in
        kernel code."""
        test = node.test
        if not getattr(self.ctx.kernel, "graph", False):
            # as in Quadrants: the loop runs its body's loops as host-repeated tasks, a graph kernel's construct
            prefix = module_prefix(test.func)
            raise CompileError(f"{spelling(test.func)}() requires @{prefix}.kernel(graph=True): write "
                               f"@{prefix}.kernel(graph=True) above '{self.ctx.kernel.name}'")
        if len(test.args) != 1 or test.keywords:
            raise CompileError("wk.graph_do_while(c) takes one argument: a 0-d integer ndarray or field")
        unresolved = f"the condition of {spelling(test.func)}() does not resolve to an ndarray kernel parameter"
        try:
            counter = self.visit(test.args[0])
        except CompileError as exc:           # an unknown name or attribute: say what the condition must be
            raise CompileError(f"{exc.message} ({unresolved})", exc.loc) from None
        if not _zero_d_integer_container(counter):
            raise CompileError(f"wk.graph_do_while(c) takes a 0-d integer ndarray or field, not {describe(counter)} "
                               f"({unresolved} or field)")
        for inner in _statements_of_this_loop(node.body):
            if isinstance(inner, ast.Continue):
                raise CompileError("'continue' in a wk.graph_do_while loop would skip its condition; use an 'if'")
        read = ast.Subscript(value=test.args[0], slice=ast.Tuple(elts=[], ctx=ast.Load()), ctx=ast.Load())
        ast.copy_location(read, test)
        ast.fix_missing_locations(read)
        loop = self.b.while_()
        top_level = self.at_parallel_level()
        if top_level:           # its body's loops run in parallel, as the kernel's own do (offload)
            self.parallel_blocks.append(loop.body)
        try:
            with self.b.at(loop.body), self.frame.scope.block(), self.in_loop("ir"):
                self.visit_body(node.body)
                value = self.as_scalar(self.rvalue(read))
                done = arith.binary(self.b, BinaryOpKind.CMP_EQ, value, self.b.const(0, value.dtype))
                with self.b.at(self.b.if_(done).then_block):
                    self.b.insert(ir.Break())
        finally:
            if top_level:
                self.parallel_blocks.pop()
        if isinstance(value, ir.GlobalLoad):
            loop.host_counter = value.ptr.container     # at top level, offload makes it a host loop

    def visit_Break(self, node: ast.Break) -> StaticExit | None:
        if self.check_loop_control("break"):
            return StaticExit.BREAK
        self.b.insert(ir.Break())
        return None

    def visit_Continue(self, node: ast.Continue) -> StaticExit | None:
        if self.check_loop_control("continue"):
            return StaticExit.CONTINUE
        self.b.insert(ir.Continue())
        return None

    def check_loop_control(self, what: str) -> bool:
        """True when `what` leaves an unrolled wk.static loop (decided at compile time)."""
        loops = self.frame.loops
        if not loops:
            raise CompileError(f"'{what}' outside a loop")
        if loops[-1] == "static":
            if self.frame.branch_depth > self.frame.loop_branch_depths[-1]:
                raise CompileError(f"'{what}' of a wk.static loop under a run-time 'if' is not supported: You are "
                                   f"trying to `{what}` a static `for` loop, which is unrolled at compile time; "
                                   "make the condition wk.static(...)")
            return True
        if loops[-1] == "parallel" and what == "break":
            raise CompileError("Cannot break in the outermost loop: 'break' is not allowed in a kernel's outermost "
                               "(parallel) loop; put the loop "
                               "inside another one, or run it serially with wk.loop_config(serialize=True)")
        return False

    def visit_Return(self, node: ast.Return) -> None:
        if not self.frame.is_kernel:
            self.func_return(node)
            return
        if self.in_runtime_loop() or self.frame.branch_depth > 0:
            raise CompileError("Return inside non-static if/for is not supported: "
                               "'return' inside a run-time if/for/while of a kernel is not supported (only at "
                               "the top level or under wk.static conditions and loops; use a flag, or move the "
                               "logic into a wk.func)")
        value = None if node.value is None else self.visit(node.value)
        if value is None and not self.has_return_annotation():
            return
        self.store_kernel_return(value)

    def has_return_annotation(self) -> bool:
        annotation = self.ctx.kernel.signature.return_annotation
        if isinstance(annotation, str):
            return annotation != "None"
        return not any(annotation is none for none in (self.ctx.kernel.signature.empty, None, type(None)))

    def store_kernel_return(self, value: Any) -> None:
        kernel = self.ctx.kernel
        annotation = kernel.signature.return_annotation
        if value is None:
            raise CompileError(f"kernel '{kernel.name}' is annotated to return {annotation!r} but returns "
                               "nothing here")
        if not self.has_return_annotation():
            raise CompileError(f"kernel '{kernel.name}' returns a value but has no return type annotation "
                               "(write e.g. 'def k() -> wk.f32:')")
        annotation = self.resolve_annotation(annotation)
        parts = return_annotation_parts(annotation)
        if isinstance(annotation, StructType):
            annotations, values = leaf_types(annotation), self.struct_leaves(annotation, value)
            parts = annotations
        elif parts is None:
            annotations, values = [annotation], [value]
        else:
            values = list(value) if isinstance(value, (tuple, list)) else [value]
            if len(values) != len(parts):
                raise CompileError(f"kernel '{kernel.name}' is annotated to return {len(parts)} values but "
                                   f"returns {len(values) if isinstance(value, (tuple, list)) else describe(value)}")
            annotations, flat_values = [], []
            for part, part_value in zip(parts, values):
                if isinstance(part, StructType):    # a struct among the values: its leaves, regrouped on the host
                    annotations += leaf_types(part)
                    flat_values += self.struct_leaves(part, part_value)
                else:
                    annotations.append(part)
                    flat_values.append(part_value)
            values = flat_values
        slots = []
        for k, (part, part_value) in enumerate(zip(annotations, values)):
            dtype = self.as_dtype(part)
            part_value = self.as_value(part_value)
            elements = part_value.elements if isinstance(part_value, VectorValue) else [part_value]
            expected = part.size if isinstance(part, T.VectorType) else 1
            if len(elements) != expected:
                raise CompileError(f"kernel '{kernel.name}' is annotated to return {part!r} but returns "
                                   f"{describe(part_value)}")
            slot = ir.ContainerSlot(name=f"__return{k}__" if parts else "__return__", kind="temp", dtype=dtype,
                                    ndim=1, shape=(len(elements),))
            self.ctx.slots.append(slot)
            slots.append(slot)
            for j, element in enumerate(elements):
                ptr = self.b.global_ptr(slot, [self.b.const(j, T.i32)])
                self.b.global_store(ptr, self.cast_to(element, dtype))
        self.ctx.return_slots = tuple(slots)

    def struct_leaves(self, stype: StructType, value: Any) -> list[Any]:
        """The leaf values (lang/structs.py leaf_types order) of a struct value returned as `stype`."""
        if isinstance(value, StructElement):
            value = self.load_struct(value)
        if not isinstance(value, StructValue) or value.stype is not stype:
            raise CompileError(f"kernel '{self.ctx.kernel.name}' is annotated to return {stype!r} but returns "
                               f"{describe(value)}")
        leaves: list[Any] = []
        for name, dtype in stype.members.items():
            member = value.members.get(name)
            if isinstance(dtype, StructType):
                leaves.extend(self.struct_leaves(dtype, member))
            else:
                leaves.append(0 if member is None else member)
        return leaves

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):
            return          # docstrings and bare constants
        if self.fill_local_vector(node.value):
            return
        self.visit(node.value)

    def fill_local_vector(self, call: ast.expr) -> bool:
        """`m.fill(v)` on a local vector or matrix variable, or on a vector element of a field (`x[i].v.fill(v)`;
        Taichi's in-place method): every component is set to the scalar v. False when the statement is
        something else."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "fill"):
            return False
        var = self.local_vector_var(call.func.value)
        place: Any = None
        if var is None and isinstance(call.func.value, (ast.Subscript, ast.Attribute)):
            try:
                place = self.target_place(call.func.value)     # `x[i].v.fill(a)`: a vector element in memory
            except CompileError:
                return False
            if not (isinstance(place, GlobalRef) and place.element_shape):
                return False
        elif var is None:
            return False
        if len(call.args) != 1 or call.keywords:
            raise CompileError("fill() takes one value")
        value = self.as_value(self.visit(call.args[0]))
        if isinstance(value, VectorValue):
            raise CompileError(f"fill() takes a scalar, got {describe(value)}")
        if place is not None:
            self.store_ref(place, self.cast_to(value, place.slot.dtype))
            return True
        shape = (var.n, var.m) if var.m else (var.n,)
        self.write_place(VarElements(var, list(range(len(var.allocas))), shape), value)
        return True

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Assert(self, node: ast.Assert) -> None:
        """`assert cond[, message]`: checked under wk.init(debug=True) (as in Taichi); otherwise the condition is
        still evaluated, for the side effects of the funcs it calls (as in Taichi), and not checked. A
        compile-time condition is checked now; the message must be a compile-time value."""
        from wgkern.runtime.program import current
        program = current()
        if program is None or not program.options.debug:
            self.visit(node.test)
            return
        message = ""
        printed = runtime_message(node.msg) if node.msg is not None else None
        if printed is not None:
            message = f"{ast.unparse(node.msg)} (printed above)"
        elif node.msg is not None:
            text = self.visit(node.msg)
            if is_runtime(text):
                raise CompileError("an assert's message must be a string, or a string formatted with '%', an "
                                   "f-string or str.format()")
            message = str(text)
        cond = self.visit(node.test)
        if not is_runtime(cond):
            if cond:
                return None
            # `assert False, "unreachable"` fails when it runs (it may sit under a run-time branch), as in Taichi
            self.fail_assertion(message or ast.unparse(node.test), printed)
            return None
        cond = self.as_scalar(cond)
        branch = self.b.if_(arith.unary(self.b, UnaryOpKind.LOGICAL_NOT, cond))
        with self.b.at(branch.then_block):
            self.fail_assertion(message or ast.unparse(node.test), printed)
        return None

    def fail_assertion(self, message: str, printed: ast.Call | None) -> None:
        """The statements of a failing assert where the builder stands: its message printed with its run-time
        values (shown as the assertion is raised, and quoted by the error), then ir.AssertFail."""
        block = self.b.block
        pieces: tuple[str, ...] = ()
        if printed is not None:
            self.print_call(printed)
            pieces = next((s.pieces for s in reversed(block.stmts) if isinstance(s, ir.Print)), ())
        self.b.insert(ir.AssertFail(message=message, printed_pieces=pieces))


def _statements_of_this_loop(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of a loop body outside the loops nested in it (where a `continue` belongs to this loop)."""
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
            continue
        pending.extend(ast.iter_child_nodes(node))


def _zero_d_integer_container(value: Any) -> bool:
    """A 0-d ndarray argument or field of integers (the condition of wk.graph_do_while)."""
    if isinstance(value, NdarrayRef):
        return value.ndim == 0 and not value.element_shape and value.dtype.is_int
    if getattr(value, "is_field", False):
        return tuple(value.shape) == () and not value.element_shape and value.dtype.is_int
    return False
