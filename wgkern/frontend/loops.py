"""For loops: `range` (with a compile-time step), `wk.ndrange` and struct-for over a field/ndarray (one RangeFor
over the product of the extents, indices recovered with // and %), and `wk.static(...)` loops (unrolled; their
items may be runtime variables, `wk.static(enumerate((i, j)))`).

`wk.loop_config(serialize=True)` marks the next RangeFor; `wk.loop_config(block_dim=N)` sets the threads per
block of the next parallel one. Assigning to a loop variable in the loop's body rebinds
the name for the rest of the iteration (as in Python); the loop's counter is unchanged."""
from __future__ import annotations

import ast
import builtins
import enum
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from wgkern.errors import CompileError
from wgkern.frontend import arith, static_eval
from wgkern.frontend.scope import Fixed, Static
from wgkern.frontend.texture import Texture, TextureRef, closure_texture_error
from wgkern.frontend.values import NdarrayRef, VectorValue, describe, is_runtime
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind
from wgkern.lang import math as wm
from wgkern.lang import types as T
from wgkern.lang.snode import SNode


class StaticExit(enum.Enum):
    """A `break` / `continue` of an unrolled wk.static loop reached with no run-time condition: unrolling stops,
    or goes on with the next item, at compile time (as in Taichi)."""
    BREAK = "break"
    CONTINUE = "continue"


def leaves_early(loop: ast.For) -> bool:
    """Whether a `break` of this loop or a `return` appears in its body."""
    def visit(nodes: list[ast.stmt], nested: bool) -> bool:
        for stmt in nodes:
            if isinstance(stmt, ast.Return) or (isinstance(stmt, ast.Break) and not nested):
                return True
            inner_loop = isinstance(stmt, (ast.For, ast.While))
            for field in ("body", "orelse"):
                if visit(getattr(stmt, field, []) or [], nested or inner_loop):
                    return True
        return False
    return visit(loop.body, False)


class LoopMixin:
    @contextmanager
    def in_loop(self, kind: str) -> Iterator[None]:
        self.frame.loops.append(kind)
        self.frame.loop_branch_depths.append(self.frame.branch_depth)
        try:
            yield
        finally:
            self.frame.loops.pop()
            self.frame.loop_branch_depths.pop()

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            raise CompileError("for/else is not supported inside kernels")
        serialize = self.ctx.serialize_next_loop
        self.ctx.serialize_next_loop = False
        self.loop_block_dim, self.ctx.block_dim_next_loop = self.ctx.block_dim_next_loop, 0
        iter_node = self.chosen_iterable(node.iter)
        if isinstance(iter_node, ast.Call):
            callee = self.visit(iter_node.func)
            if callee is builtins.range:
                return self.range_loop(node, iter_node, serialize)
            if callee is wm.ndrange:
                dims, order = self.ndrange_call(iter_node)
                self.check_ndrange_targets(node.target, len(dims))
                return self.product_loop(node, dims, serialize, order=order)
            if callee is wm.static:
                if len(iter_node.args) != 1 or iter_node.keywords:
                    raise CompileError("wk.static() in a for loop takes one iterable")
                self.check_static_loop_iterable(iter_node.args[0])
                iterable = static_eval.evaluate(iter_node.args[0], self.frame.fn, self.frame.scope,
                                                self.frame.src.filename, runtime_operands=True)
                return self.static_loop(node, iterable)
            if callee is wm.grouped:
                if len(iter_node.args) != 1 or iter_node.keywords:
                    raise CompileError("wk.grouped() takes one field, ndarray or wk.ndrange(...)")
                inner = iter_node.args[0]
                order = None
                if isinstance(inner, ast.Call) and self.visit(inner.func) is wm.ndrange:
                    dims, order = self.ndrange_call(inner)
                    guard = None
                else:
                    iterable = self.visit(inner)
                    dims = self.container_dims(iterable, zero_d=True)
                    if dims is None:
                        raise CompileError(f"wk.grouped() loops over a field, an ndarray or wk.ndrange(...), "
                                           f"not {describe(iterable)}")
                    self.check_fresh_loop_variables(node.target)
                    guard = self.sparse_guard(iterable)
                    if guard is not None and self.dynamic_struct_for(node, iterable, dims, serialize, True):
                        return None
                    if guard is not None and not serialize and self.blocked_struct_for(node, iterable, dims, True):
                        return None
                return self.product_loop(node, dims, serialize, grouped=True, guard=guard, order=order)
        iterable = self.visit(iter_node)
        dims = self.container_dims(iterable)
        if dims is not None:
            self.check_fresh_loop_variables(node.target)
            guard = self.sparse_guard(iterable)
            if guard is not None and self.dynamic_struct_for(node, iterable, dims, serialize, False):
                return None
            if guard is not None and not serialize and self.blocked_struct_for(node, iterable, dims, False):
                return None
            return self.product_loop(node, dims, serialize, guard=guard)
        if isinstance(iterable, (range, tuple, list)) and not is_runtime(iterable):
            raise CompileError(f"looping over a Python {type(iterable).__name__} needs wk.static(...) "
                               "(it is unrolled at compile time)")
        raise CompileError(f"cannot loop over {describe(iterable)}; use range(), wk.ndrange(), a field, an "
                           "ndarray or wk.static(...)")

    def chosen_iterable(self, iter_node: ast.expr) -> ast.expr:
        """The iterable a loop runs over: `for i in A if wk.static(c) else B` picks A or B at compile time (as
        Taichi and Quadrants do), so the chosen side is compiled as if written alone (`range(n)` stays a
        run-time loop, `wk.static(range(k))` is unrolled)."""
        while isinstance(iter_node, ast.IfExp):
            cond = self.rvalue(iter_node.test)
            if is_runtime(cond):
                raise CompileError("a loop over 'A if c else B' needs a compile-time condition (wk.static(c)); "
                                   "the two sides are different loops")
            iter_node = iter_node.body if cond else iter_node.orelse
        return iter_node

    def container_dims(self, iterable: Any, zero_d: bool = False) -> list[tuple[Any, Any]] | None:
        """(begin, end) of each index axis of a field or ndarray; None for anything else. `zero_d`: a 0-d field
        has no axes (`wk.grouped(x)` runs once, with an empty index vector, as in Taichi)."""
        if isinstance(iterable, NdarrayRef):
            slot = self.ctx.ndarray_slot(iterable)
            return [(0, self.b.insert(ir.ShapeOf(container=slot, axis=k, dtype=T.i32)))
                    for k in range(iterable.ndim)]
        if isinstance(iterable, TextureRef):
            return self.texture_loop_dims(iterable)
        if isinstance(iterable, Texture):
            raise closure_texture_error(iterable)
        from wgkern.lang.structs import StructField
        if isinstance(iterable, SNode):      # a struct-for over a node visits its (active) cells
            return [(0, n) for n in iterable.shape]
        if isinstance(iterable, StructField) or self.is_container(iterable):
            if not iterable.shape and not zero_d:
                raise CompileError(f"cannot loop over the 0-d field '{iterable.name}' (access it as "
                                   f"{iterable.name}[None])")
            offset = getattr(iterable, "offset", ()) or (0,) * len(iterable.shape)
            return [(int(first), int(first) + int(n)) for first, n in zip(offset, iterable.shape)]
        return None

    # ---- targets --------------------------------------------------------------------------------------------
    def loop_target_names(self, target: ast.expr, count: int) -> list[str]:
        elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        for element in elements:
            if not isinstance(element, ast.Name):
                raise CompileError("loop variables must be plain names")
        if len(elements) != count:
            raise CompileError(f"this loop has {count} index(es) but {len(elements)} loop variable(s)")
        return [e.id for e in elements]

    def check_fresh_loop_variables(self, target: ast.expr) -> None:
        """The variable of a range loop or a loop over a field / ndarray must be a new name, as in Quadrants: the
        loop's variable lives in the loop, so `i = 0; for i in range(n): ...` would leave the outer `i` at 0
        after the loop, unlike Python. `_` (a name nobody reads) may be reused: `for _ in ...` nests."""
        for element in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]:
            name = element.id if isinstance(element, ast.Name) else "_"
            if name != "_" and self.frame.scope.lookup(name) is not None:
                raise CompileError(f"Variable '{name}' is already declared in the outer scope and cannot be "
                                   "used as loop variable (a loop variable lives in its loop only, so the outer "
                                   f"'{name}' would not see its values; use another name)")

    def check_ndrange_targets(self, target: ast.expr, count: int) -> None:
        """A `for ... in wk.ndrange(...)` loop names one variable per dimension (Quadrants' message included)."""
        elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        if count and len(elements) != count:
            raise CompileError(f"wk.ndrange() here has {count} dimension(s) but the loop has {len(elements)} loop "
                               "variable(s): Ndrange for loop with number of the loop variables not equal to the "
                               "dimension of the ndrange is not supported (use wk.grouped(wk.ndrange(...)) for one "
                               "index vector)")

    def bind_loop_variables(self, names: list[str], values: list[Any]) -> None:
        for name, value in zip(names, values):
            self.frame.scope.define(name, Fixed(value, "loop variable"))

    def runs_parallel(self, node: ast.For, serialize: bool) -> bool:
        """Whether a loop emitted here (by emit_range_for) runs in parallel."""
        if not self.at_parallel_level() or serialize:
            return False
        if self.frame.constant_branch_depth:
            return False              # under an `if` on a Python constant (visit_If): serial, as in Taichi
        # a func's loop inlined at the kernel's top level would run in parallel, where break/return cannot
        # work: it runs serially instead
        return self.frame.is_kernel or not leaves_early(node)

    def emit_range_for(self, begin: Any, end: Any, serialize: bool, body: Callable[[ir.Stmt], None],
                       node: ast.For) -> None:
        parallel = self.runs_parallel(node, serialize)
        serialize = serialize or (self.at_parallel_level() and not parallel)
        loop = self.b.range_for(self.as_loop_bound(begin), self.as_loop_bound(end), serialize=serialize)
        if parallel:        # the threads per block loop_config(block_dim=N) asked for (the first loop it reaches)
            loop.block_dim, self.loop_block_dim = getattr(self, "loop_block_dim", 0), 0
        with self.b.at(loop.body), self.frame.scope.block(), self.in_loop("parallel" if parallel else "ir"):
            body(self.b.loop_index(loop))

    def emit_serial_for(self, count: int, body: Callable[[ir.Stmt], None], node: ast.For) -> None:
        """A serial loop over 0..count inside a parallel loop that carries the user's loop body (a blocked
        struct-for's elements): `break` there is still refused, as in the parallel loop itself."""
        loop = self.b.range_for(self.b.const(0, T.i32), self.b.const(count, T.i32), serialize=True)
        with self.b.at(loop.body), self.frame.scope.block(), self.in_loop("parallel"):
            body(self.b.loop_index(loop))

    def as_loop_bound(self, value: Any) -> ir.Stmt:
        bound = self.as_scalar(value)
        if not (bound.dtype.is_int or bound.dtype.is_bool):
            raise CompileError(f"loop bounds must be integers, got {bound.dtype.name}")
        return bound

    # ---- range ---------------------------------------------------------------------------------------------
    def range_loop(self, node: ast.For, call: ast.Call, serialize: bool) -> None:
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise CompileError("range() takes 1 to 3 positional arguments")
        args = [self.visit(a) for a in call.args]
        names = self.loop_target_names(node.target, 1)
        self.check_fresh_loop_variables(node.target)
        begin, end, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3
                                                                    else 1)
        if is_runtime(step) or not isinstance(step, int) or step == 0:
            raise CompileError("the step of range() in a kernel must be a non-zero compile-time integer")

        def body(index: ir.Stmt) -> None:
            value = index
            if step != 1:
                begin_value = self.as_loop_bound(begin)
                scaled = arith.binary(self.b, BinaryOpKind.MUL, index, self.b.const(step, T.i32))
                value = arith.binary(self.b, BinaryOpKind.ADD, begin_value, scaled)
            self.bind_loop_variables(names, [value])
            self.visit_body(node.body)
        if step == 1:
            self.emit_range_for(begin, end, serialize, body, node)
            return
        # trip count = ceil((end - begin) / step), computed with floor division (<= 0 runs nothing)
        magnitude = abs(step)
        span = self.binary_values(BinaryOpKind.SUB, end, begin) if step > 0 else \
            self.binary_values(BinaryOpKind.SUB, begin, end)
        padded = self.binary_values(BinaryOpKind.ADD, span, magnitude - 1)
        trips = self.binary_values(BinaryOpKind.FLOORDIV, padded, magnitude)
        self.emit_range_for(0, trips, serialize, body, node)

    # ---- ndrange / struct-for -----------------------------------------------------------------------------
    def ndrange_call(self, call: ast.Call) -> tuple[list[tuple[Any, Any]], tuple[int, ...]]:
        """The (begin, end) of each dimension of `wk.ndrange(...)` and its nesting order (`axes=`, compile-time)."""
        dims = [self.ndrange_dim(arg) for arg in self.visit_elements(call.args)]
        axes = None
        for keyword in call.keywords:
            if keyword.arg != "axes":
                raise CompileError(f"wk.ndrange() takes dimensions and axes=, not {keyword.arg or '**'}=")
            axes = self.visit(keyword.value)
            if is_runtime(axes) or (isinstance(axes, (tuple, list)) and any(is_runtime(a) for a in axes)):
                raise CompileError("wk.ndrange(axes=...) must be a compile-time permutation")
        try:
            return dims, wm.ndrange_axes(axes, len(dims))
        except (TypeError, ValueError) as exc:
            raise CompileError(str(exc)) from None

    def ndrange_dim(self, value: Any) -> tuple[Any, Any]:
        if isinstance(value, (tuple, list)):
            if len(value) != 2:
                raise CompileError(f"wk.ndrange() dimensions are n or (begin, end), got {value!r} (Every argument "
                                   "of ndrange should be a scalar or a tuple/list like (begin, end))")
            begin, end = value
        else:
            begin, end = 0, value
        for bound in (begin, end):
            if isinstance(bound, (float, np.floating)):
                raise CompileError(f"wk.ndrange() bounds must be integers, got {bound!r} (Every argument of "
                                   "ndrange should be an integer scalar or a tuple/list of (int, int))")
        return begin, end

    def product_loop(self, node: ast.For, dims: list[tuple[Any, Any]], serialize: bool,
                     grouped: bool = False, guard: Callable[[list[ir.Stmt]], ir.Stmt] | None = None,
                     order: tuple[int, ...] | None = None) -> None:
        """One loop over the product of `dims`; `grouped`: the one loop variable is the index vector. `guard`
        (a struct-for below sparse nodes): the body runs only where it holds. `order`: the axes from outermost
        to innermost (the last varies fastest along the flat index); None: 0, 1, ..."""
        if grouped:
            names = self.loop_target_names(node.target, 1)
        else:
            names = self.loop_target_names(node.target, len(dims)) if dims else []
        extents: list[Any] = []
        for begin, end in dims:
            if not is_runtime(begin) and not is_runtime(end):
                extents.append(max(int(end) - int(begin), 0))
            else:
                span = self.binary_values(BinaryOpKind.SUB, self.as_loop_bound(end), self.as_loop_bound(begin))
                extents.append(self.binary_values(BinaryOpKind.MAX, span, 0))
        total: Any = 1
        for extent in extents:
            total = extent if total == 1 and not is_runtime(total) else \
                (total * extent if not is_runtime(total) and not is_runtime(extent)
                 else self.binary_values(BinaryOpKind.MUL, total, extent))

        def body(index: ir.Stmt) -> None:
            values: list[Any] = [None] * len(dims)
            remaining: Any = index
            nesting = order or range(len(dims))
            for level in range(len(dims) - 1, -1, -1):
                k = nesting[level]
                if level == 0:
                    part = remaining
                else:
                    part = self.binary_values(BinaryOpKind.MOD, remaining, extents[k])
                    remaining = self.binary_values(BinaryOpKind.FLOORDIV, remaining, extents[k])
                begin = dims[k][0]
                values[k] = part if (not is_runtime(begin) and begin == 0) else \
                    self.binary_values(BinaryOpKind.ADD, part, begin)
            indices = [self.b.cast(self.as_scalar(v), T.i32) for v in values]
            bound = [VectorValue(indices, len(indices))] if grouped else indices
            self.bind_loop_variables(names, bound)
            if guard is None:
                self.visit_body(node.body)
                return
            branch = self.b.if_(guard(indices))
            with self.b.at(branch.then_block), self.frame.scope.block():
                self.bind_loop_variables(names, bound)    # bound in the body's own block (rebindable there)
                self.visit_body(node.body)
        if guard is None:
            self.emit_range_for(0, total, serialize, body, node)
            return
        with self.struct_for_scope():
            self.emit_range_for(0, total, serialize, body, node)

    # ---- wk.static ---------------------------------------------------------------------------------------
    def check_static_loop_iterable(self, inner: ast.expr) -> None:
        """`wk.static(wk.static(...))` and `wk.static(wk.grouped(x))` of a field or ndarray are errors, as in
        Quadrants and Taichi (the latter would unroll over every cell, active or not, of a container whose
        shape a launch may not know)."""
        if not isinstance(inner, ast.Call):
            return
        callee = self.visit(inner.func)
        if callee is wm.static:
            raise CompileError("wk.static(wk.static(...)): 'qd.static' cannot be nested; one wk.static() unrolls")
        if callee is wm.grouped and len(inner.args) == 1:
            grouped_over = static_eval.evaluate(inner.args[0], self.frame.fn, self.frame.scope,
                                                self.frame.src.filename, runtime_operands=True)
            if hasattr(grouped_over, "shape") and not isinstance(grouped_over, (range, tuple, list)):
                what = getattr(grouped_over, "name", type(grouped_over).__name__)
                raise CompileError(f"wk.static(wk.grouped({what})): Only 'qd.ndrange' is allowed "
                                   "in 'qd.static(qd.grouped(...))'; loop over a field or ndarray with "
                                   "wk.grouped(x) (a parallel loop) or unroll wk.static(wk.grouped(wk.ndrange("
                                   "*x.shape)))")

    def static_loop(self, node: ast.For, iterable: Any) -> bool:
        """True when the unrolled body certainly returned (see visit_body)."""
        try:
            items = list(iterable)
        except TypeError:
            raise CompileError(f"wk.static() loop over {describe(iterable)}, which is not iterable") from None
        return self.unroll(node, items, 0)

    def unroll(self, node: ast.For, items: list[Any], start: int) -> bool:
        for k in range(start, len(items)):
            with self.frame.scope.block(), self.in_loop("static"):
                self.bind_static_target(node.target, items[k])
                ended = self.visit_body(node.body)
            if ended is True:
                return True
            if ended is StaticExit.BREAK:
                return False
            if k + 1 < len(items) and self.may_have_returned(node):
                self.guard_after_return(lambda: self.unroll(node, items, k + 1))
                return False
        return False

    def bind_static_target(self, target: ast.expr, item: Any) -> None:
        """Bind the loop variables to one item. A runtime name among the items (`wk.static(enumerate((i, j)))`)
        binds the loop variable to that same variable, as in Taichi: reads see its current value, and an
        assignment to the loop variable writes the variable itself; other runtime values are fixed ones."""
        if isinstance(target, ast.Name):
            if isinstance(item, static_eval.RuntimeOperand):
                self.frame.scope.define(target.id, item.binding)
            elif is_runtime(item):
                self.frame.scope.define(target.id, Fixed(item, "loop variable"))
            else:
                self.frame.scope.define(target.id, Static(item))
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(item, static_eval.RuntimeOperand) or is_runtime(item):
                value = self.read_binding(item.binding) if isinstance(item, static_eval.RuntimeOperand) else item
                for element, part in zip(target.elts, self.unpack(value, len(target.elts))):
                    self.bind_static_target(element, part)
                return
            try:
                parts = list(item)
            except TypeError:
                raise CompileError(f"cannot unpack {describe(item)} into loop variables") from None
            if len(parts) != len(target.elts):
                raise CompileError(f"cannot unpack {len(parts)} values into {len(target.elts)} loop variables")
            for element, part in zip(target.elts, parts):
                self.bind_static_target(element, part)
            return
        raise CompileError("loop variables must be plain names")
