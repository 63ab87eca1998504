"""Expression visitors: names, constants, attributes and operators (subscripts live in subscripts.py).

Operators on two compile-time Python values fold in Python; otherwise they emit typed IR (arith.py for scalars,
vectors.py for vectors/matrices). Subscripts of fields and ndarrays evaluate to a `GlobalRef`, loaded only when
its value is needed, so the same code serves loads, stores and atomics."""
from __future__ import annotations

import ast
import operator
import sys
from typing import Any, Callable

import numpy as np

from wgkern.errors import CompileError
from wgkern.frontend import arith, reads, vectors
from wgkern.frontend.scope import Fixed, Static, VectorVar
from wgkern.frontend.buffer_view import BufferViewRef
from wgkern.frontend.texture import Texture, TextureRef
from wgkern.lang.matrix import Matrix, Vector
from wgkern.frontend.values import (AtomicMethod, BoundMethod, GlobalRef, NdarrayRef, StructElement, StructValue,
                                    VectorValue, describe, is_runtime)
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.lang import swizzle
from wgkern.lang import types as T

BINARY_OPS: dict[type, BinaryOpKind] = {
    ast.Add: BinaryOpKind.ADD, ast.Sub: BinaryOpKind.SUB, ast.Mult: BinaryOpKind.MUL, ast.Div: BinaryOpKind.DIV,
    ast.FloorDiv: BinaryOpKind.FLOORDIV, ast.Mod: BinaryOpKind.MOD, ast.Pow: BinaryOpKind.POW,
    ast.BitAnd: BinaryOpKind.BIT_AND, ast.BitOr: BinaryOpKind.BIT_OR, ast.BitXor: BinaryOpKind.BIT_XOR,
    ast.LShift: BinaryOpKind.SHL, ast.RShift: BinaryOpKind.SHR,
}
# Taichi 0.x's atomic methods on a global element (`x[i].atomic_add(v)`), the older spelling of wk.atomic_add
ATOMIC_METHODS: dict[str, AtomicOpKind] = {f"atomic_{op.value}": op for op in (
    AtomicOpKind.ADD, AtomicOpKind.SUB, AtomicOpKind.MIN, AtomicOpKind.MAX, AtomicOpKind.AND, AtomicOpKind.OR,
    AtomicOpKind.XOR)}
PYTHON_BINARY: dict[type, Any] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.MatMult: operator.matmul,
}
COMPARE_OPS: dict[type, BinaryOpKind] = {
    ast.Lt: BinaryOpKind.CMP_LT, ast.LtE: BinaryOpKind.CMP_LE, ast.Gt: BinaryOpKind.CMP_GT,
    ast.GtE: BinaryOpKind.CMP_GE, ast.Eq: BinaryOpKind.CMP_EQ, ast.NotEq: BinaryOpKind.CMP_NE,
}
PYTHON_COMPARE: dict[type, Any] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
    ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
PYTHON_UNARY: dict[type, Any] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_,
}
UNARY_OPS: dict[type, UnaryOpKind] = {
    ast.USub: UnaryOpKind.NEG, ast.Invert: UnaryOpKind.BIT_NOT, ast.Not: UnaryOpKind.LOGICAL_NOT,
}


def _holds_kernel_values(value: Any) -> bool:
    """A tuple or list (nested ones included) with a kernel value among its items: `I = (i, j, k)`."""
    return isinstance(value, (tuple, list)) and any(is_runtime(v) or _holds_kernel_values(v) for v in value)


def _elementwise_with_kernel_values(lhs: Any, rhs: Any) -> bool:
    """An operation that Python would run elementwise (numpy's: a captured wk.Vector or numpy array with a
    tuple) where the tuple holds kernel values, so it is a vector operation in the kernel:
    `(I + grid_offset) * dx` with `I = (i, j, k)`, as in Taichi. (A tuple with a tuple or a number keeps Python's
    meaning: concatenation, repetition.)"""
    return (isinstance(lhs, np.ndarray) and _holds_kernel_values(rhs)) or \
        (isinstance(rhs, np.ndarray) and _holds_kernel_values(lhs))


class ExpressionMixin:
    # ---- leaves --------------------------------------------------------------------------------------------
    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id)

    def visit_Tuple(self, node: ast.Tuple) -> tuple[Any, ...]:
        return tuple(self.visit_elements(node.elts))

    def visit_List(self, node: ast.List) -> list[Any]:
        return list(self.visit_elements(node.elts))

    def rvalue(self, node: ast.expr) -> Any:
        """Evaluate `node` as a value: a global element is loaded right away, so later side effects in the
        same expression (an inlined func writing it) cannot change what was read."""
        value = self.visit(node)
        return self.load_ref(value) if isinstance(value, GlobalRef) else value

    def visit_elements(self, nodes: list[ast.expr]) -> list[Any]:
        out: list[Any] = []
        for element in nodes:
            if isinstance(element, ast.Starred):
                value = self.rvalue(element.value)
                if is_runtime(value) and not isinstance(value, VectorValue):
                    raise CompileError(f"cannot unpack {describe(value)}")
                out.extend(value.elements if isinstance(value, VectorValue) else value)
            else:
                out.append(self.rvalue(element))
        return out

    def visit_Slice(self, node: ast.Slice) -> slice:
        parts = [self.visit(p) if p is not None else None for p in (node.lower, node.upper, node.step)]
        if any(is_runtime(p) for p in parts):
            raise CompileError("slice bounds must be compile-time constants (Quadrants does not support variables "
                               "in slice now, nor does wgkern)")
        return slice(*parts)

    # ---- attributes ---------------------------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> Any:
        var = self.struct_var_of(node.value)
        if var is not None:       # p.m reads one member; p.method is called on the variable itself
            from wgkern.frontend.func_calls import _ByReference
            if node.attr in var.stype.methods:
                return self.struct_attribute(StructValue(var.stype, {}), node.attr, _ByReference(var))
            member = self.struct_member_binding(node)
            return self.read_binding(member)
        base = self.visit(node.value)
        return self.attribute_of(base, node.attr)

    def attribute_of(self, base: Any, attr: str) -> Any:
        method = self.dynamic_method(base, attr)
        if method is not None:
            return method
        if isinstance(base, (StructValue, StructElement)):
            return self.struct_attribute(base, attr)
        if isinstance(base, GlobalRef):
            if attr in ATOMIC_METHODS:
                return AtomicMethod(base, ATOMIC_METHODS[attr])
            if not base.element_shape:
                raise CompileError(f"a scalar element of '{base.label}' has no attribute '{attr}'")
            if self.is_swizzle(attr, base.element_shape):
                if len(attr) == 1:
                    k = swizzle.positions(attr, base.element_shape[0])[0]
                    return GlobalRef(base.slot, base.indices + [self.b.const(k, T.i32)], (),
                                     base.label)
            base = self.load_ref(base)
        if isinstance(base, VectorValue):
            return self.vector_attribute(base, attr)
        if isinstance(base, ir.Stmt):
            raise CompileError(f"a scalar {base.dtype.name} value has no attribute '{attr}'")
        if isinstance(base, NdarrayRef):
            return self.ndarray_attribute(base, attr)
        if isinstance(base, (TextureRef, Texture)):
            return self.texture_attribute(base, attr)
        if isinstance(base, BufferViewRef):
            return self.buffer_view_attribute(base, attr)
        if isinstance(base, np.ndarray) and base.ndim in (1, 2) and base.size and (
                attr in vectors.METHODS or (len(attr) > 1 and self.is_swizzle(attr, base.shape))):
            return self.vector_attribute(self.as_value(base), attr)    # a Python-scope vector's method/swizzle
        if (base is Vector or base is Matrix) and attr in vectors.METHODS and not hasattr(base, attr):
            return BoundMethod(None, attr)       # `wk.Vector.normalized(v)`: the method called on the class
        log = reads.current()
        if log is not None:
            log.attribute(base, attr)
        try:
            value = getattr(base, attr)
        except AttributeError as exc:
            if base is sys.modules["wgkern"] and str(exc).startswith(f"wgkern.{attr}: "):
                raise CompileError(str(exc)) from None      # a Taichi feature wgkern lacks, named as such
            raise CompileError(f"{describe(base)} has no attribute '{attr}'") from None
        if value is None and attr in ("grad", "dual") and self.is_container(base):
            raise CompileError(f"'{base.name}' has no .{attr} (create it with needs_{attr}=True)")
        return value

    def is_container(self, obj: Any) -> bool:
        from wgkern.frontend.frames import is_field
        return is_field(obj)

    @staticmethod
    def is_swizzle(attr: str, shape: tuple[int, ...]) -> bool:
        """Whether `attr` names components of a vector of `shape` (lang/swizzle.py); letters of a swizzle group
        past the vector's size are a CompileError naming the vector's components."""
        return len(shape) == 1 and swizzle.positions(attr, shape[0]) is not None

    def vector_attribute(self, v: VectorValue, attr: str) -> Any:
        if self.is_swizzle(attr, v.shape):
            picked = [v.elements[k] for k in swizzle.positions(attr, v.n)]
            return picked[0] if len(picked) == 1 else VectorValue(picked, len(picked))
        if attr in vectors.METHODS:
            return BoundMethod(v, attr)
        if attr == "n":
            return v.n
        if attr == "m":
            return v.m if v.m else 1
        if attr == "T":
            return vectors.transpose(self.b, v)
        raise CompileError(f"{describe(v)} has no attribute '{attr}'")

    def ndarray_attribute(self, ref: NdarrayRef, attr: str) -> Any:
        if attr == "shape":
            slot = self.ctx.ndarray_slot(ref)
            return tuple(self.b.insert(ir.ShapeOf(container=slot, axis=k, dtype=T.i32)) for k in range(ref.ndim))
        if attr == "grad":
            if ref.is_grad:
                raise CompileError(f"'{ref.name}.grad' has no .grad")
            return NdarrayRef(ref.arg_index, ref.name, ref.dtype, ref.ndim, ref.element_shape, True)
        if attr == "dtype":
            return ref.dtype
        if attr == "ndim":
            return ref.ndim
        if attr == "element_shape":
            return ref.element_shape
        raise CompileError(f"ndarray argument '{ref.name}' has no attribute '{attr}' in kernels")


    # ---- operators ------------------------------------------------------------------------------------------
    def visit_BinOp(self, node: ast.BinOp) -> Any:
        lhs = self.rvalue(node.left)
        rhs = self.rvalue(node.right)
        return self.binary_op(type(node.op), lhs, rhs)

    def binary_op(self, op_type: type, lhs: Any, rhs: Any) -> Any:
        if not is_runtime(lhs) and not is_runtime(rhs) and not _elementwise_with_kernel_values(lhs, rhs):
            return PYTHON_BINARY[op_type](lhs, rhs)
        if op_type is ast.Pow and isinstance(rhs, int) and not isinstance(rhs, bool) and is_runtime(lhs):
            power = self.small_integer_power(self.as_value(lhs), rhs)
            if power is not None:
                return power
        try:
            lhs = self.as_value(lhs)
            rhs = self.as_value(rhs)
        except CompileError as exc:
            # `v * x` with x a field (not x[i]): Python's wording for an operand an operator cannot take
            symbol = arith.BINARY_SYMBOL.get(BINARY_OPS.get(op_type), "@")
            raise CompileError(f"unsupported operand type for '{symbol}': {exc.message}", exc.loc) from None
        if op_type is ast.MatMult:
            return vectors.matmul(self.b, lhs, rhs)
        return self.binary_values(BINARY_OPS[op_type], lhs, rhs)

    def small_integer_power(self, base: Any, exponent: int) -> Any:
        """`x ** n` for a compile-time int |n| <= 8 as multiplications (exact for negative bases, where a
        float pow is not, and cheap to differentiate); negative n on floats as 1 / x**|n|."""
        dtype = base.dtype
        if abs(exponent) > 8 or (exponent < 0 and not dtype.is_float) or dtype.is_bool:
            return None
        if exponent == 0:
            one = self.b.const(1, dtype)
            return vectors.like(base, [one] * len(base.elements)) if isinstance(base, VectorValue) else one
        result: Any = None
        square = base
        remaining = abs(exponent)
        while remaining:
            if remaining & 1:
                result = square if result is None else self.binary_values(BinaryOpKind.MUL, result, square)
            remaining >>= 1
            if remaining:
                square = self.binary_values(BinaryOpKind.MUL, square, square)
        if exponent < 0:
            result = self.binary_values(BinaryOpKind.DIV, 1, result)
        return result

    def binary_values(self, op: BinaryOpKind, lhs: Any, rhs: Any) -> Any:
        lhs = self.as_value(lhs)
        rhs = self.as_value(rhs)
        if op is BinaryOpKind.POW:
            self.check_integer_exponents(lhs, rhs)
        if isinstance(lhs, VectorValue) or isinstance(rhs, VectorValue):
            return vectors.binary(self.b, op, lhs, rhs)
        return arith.binary(self.b, op, lhs, rhs)

    def check_integer_exponents(self, base: Any, exponent: Any) -> None:
        """Under wk.init(debug=True), an integer raised to a negative integer power fails the launch, as in
        Taichi (without debug the result is the truncated quotient, 0 for |base| > 1)."""
        from wgkern.runtime.program import current
        program = current()
        if program is None or not program.options.debug:
            return
        bases = base.elements if isinstance(base, VectorValue) else [base]
        if not all(b.dtype.is_int for b in bases):
            return
        for power in exponent.elements if isinstance(exponent, VectorValue) else [exponent]:
            if not power.dtype.is_signed:
                continue
            negative = arith.binary(self.b, BinaryOpKind.CMP_LT, power, self.b.const(0, power.dtype))
            with self.b.at(self.b.if_(negative).then_block):
                self.b.insert(ir.AssertFail(message="negative exponent in an integer power (pow(int, int))"))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.rvalue(node.operand)
        op_type = type(node.op)
        if not is_runtime(operand):
            return PYTHON_UNARY[op_type](operand)
        value = self.as_value(operand)
        if op_type is ast.UAdd:
            return value
        if op_type is ast.Not and any(e.dtype.is_float for e in
                                      (value.elements if isinstance(value, VectorValue) else [value])):
            raise CompileError(f"`not` needs an integer or bool operand, got {describe(value)}: it takes integral "
                               "inputs only, as in Quadrants (write `x == 0.0`)")
        if isinstance(value, VectorValue):
            return vectors.unary(self.b, UNARY_OPS[op_type], value)     # `not m` is element-wise, as in Taichi
        return arith.unary(self.b, UNARY_OPS[op_type], value)

    def visit_Compare(self, node: ast.Compare) -> Any:
        for op in node.ops:
            if isinstance(op, (ast.Is, ast.IsNot)):
                # as in Taichi and Quadrants: identity is a question about Python objects, asked in wk.static
                name = "is" if isinstance(op, ast.Is) else "is not"
                raise CompileError(f'Operator "{name}" is not supported in kernel code: it compares Python '
                                   f"objects; write wk.static(a {name} b) for a compile-time test, or ==/!= "
                                   "to compare values")
        left = self.rvalue(node.left)
        runtime_parts: list[Any] = []
        for op, right_node in zip(node.ops, node.comparators):
            right = self.rvalue(right_node)
            op_type = type(op)
            if not is_runtime(left) and not is_runtime(right):
                outcome = PYTHON_COMPARE[op_type](left, right)
                if not outcome:
                    return False if not runtime_parts else self.b.const(False, T.u1)
            elif op_type not in COMPARE_OPS:
                raise CompileError(f"'{type(op).__name__}' comparisons need compile-time operands")
            else:
                runtime_parts.append(self.binary_values(COMPARE_OPS[op_type], left, right))
            left = right
        if not runtime_parts:
            return True
        result = runtime_parts[0]
        for part in runtime_parts[1:]:
            result = self.logical_values(BinaryOpKind.BIT_AND, result, part)
        return result

    def logical_values(self, op: BinaryOpKind, lhs: Any, rhs: Any) -> Any:
        lhs = self.as_value(lhs)
        rhs = self.as_value(rhs)
        if isinstance(lhs, VectorValue) or isinstance(rhs, VectorValue):
            xs, ys, shape = vectors.zip_values(lhs, rhs, "and/or")
            return vectors.like(shape, [arith.logical(self.b, op, p, q) for p, q in zip(xs, ys)])
        return arith.logical(self.b, op, lhs, rhs)

    def visit_ListComp(self, node: ast.ListComp) -> list[Any]:
        """`[expr for i in range(3) if ...]`: unrolled at compile time into a list of values (a vector where a
        value is needed, as a list literal); the iterables and conditions must be compile-time."""
        out: list[Any] = []
        self.unroll_comprehension(lambda: self.rvalue(node.elt), node.generators, out)
        return out

    visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> dict[Any, Any]:
        """`{k: v for i in range(n) if ...}`: unrolled at compile time like a list comprehension; the keys must
        be compile-time values (a dict is a compile-time table of kernel values, as a dict display is)."""
        pairs: list[tuple[Any, Any]] = []
        self.unroll_comprehension(lambda: (self.dict_key(node.key), self.rvalue(node.value)), node.generators, pairs)
        return dict(pairs)

    def unroll_comprehension(self, produce: Callable[[], Any], generators: list[ast.comprehension],
                             out: list[Any]) -> None:
        """Append `produce()` to `out` once per combination the `generators` pick, innermost last."""
        if not generators:
            out.append(produce())
            return
        generator = generators[0]
        iterable = self.rvalue(generator.iter)
        if isinstance(iterable, VectorValue):
            items: Any = iterable.elements if not iterable.m else [iterable.row(i) for i in range(iterable.n)]
        elif is_runtime(iterable) or not hasattr(iterable, "__iter__"):
            raise CompileError(f"a comprehension in a kernel loops over compile-time values (range() with constant "
                               f"bounds, a tuple, wk.static(...)), not {describe(iterable)}")
        else:
            items = iterable
        for item in items:
            with self.frame.scope.block():
                self.bind_comprehension_target(generator.target, item)
                conditions = [self.visit(test) for test in generator.ifs]
                if any(is_runtime(c) for c in conditions):
                    raise CompileError("a comprehension's 'if' must be a compile-time condition")
                if all(conditions):
                    self.unroll_comprehension(produce, generators[1:], out)

    def bind_comprehension_target(self, target: ast.expr, item: Any) -> None:
        if isinstance(target, ast.Name):
            self.frame.scope.define(target.id, Fixed(item, "comprehension variable") if is_runtime(item)
                                    else Static(item))
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            parts = self.unpack(item, len(target.elts))
            for element, part in zip(target.elts, parts):
                self.bind_comprehension_target(element, part)
            return
        raise CompileError("a comprehension's loop variable must be a name or a tuple of names")

    def visit_Dict(self, node: ast.Dict) -> dict[Any, Any]:
        """`{"key": value, **other, ...}` with compile-time keys (as wk.Struct({...}) takes); `**` merges another
        dict in order, as in Python."""
        out: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                merged = self.visit(value)
                if not isinstance(merged, dict):
                    raise CompileError(f"'**' in a dict display takes a dict, not {describe(merged)}")
                out.update(merged)
                continue
            out[self.dict_key(key)] = self.rvalue(value)
        return out

    def dict_key(self, node: ast.expr) -> Any:
        key = self.visit(node)
        if is_runtime(key):
            raise CompileError("dict keys in kernel code must be compile-time values")
        return key

    def visit_NamedExpr(self, node: ast.NamedExpr) -> Any:
        """`(name := value)`: assigns, and is the value."""
        value = self.rvalue(node.value)
        self.assign_target(node.target, value)
        return value

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        op = BinaryOpKind.BIT_AND if is_and else BinaryOpKind.BIT_OR
        runtime_parts: list[Any] = []
        value: Any = None
        for position, value_node in enumerate(node.values):
            value = self.rvalue(value_node)
            if is_runtime(value):
                runtime_parts.append(self.as_value(value))
                rest = node.values[position + 1:]
                if (_short_circuit_operators() and not any(isinstance(p, VectorValue) for p in runtime_parts)
                        and any(_reads_or_calls(later) for later in rest)):
                    return self.short_circuit_rest(node.op, runtime_parts, rest)
                continue
            decided = (not value) if is_and else bool(value)
            if decided:       # `False and ...` / `True or ...`: the rest does not matter
                return value if not runtime_parts else self.b.const(not is_and, T.u1)
        if not runtime_parts:
            return value
        if any(isinstance(part, VectorValue) for part in runtime_parts):
            # vectors combine element by element (as in Taichi), every operand evaluated
            truth = [vectors.map_elements(p, lambda e: self.b.cast(e, T.u1)) if isinstance(p, VectorValue)
                     else self.b.cast(p, T.u1) for p in runtime_parts]
            result = truth[0]
            for part in truth[1:]:
                result = self.binary_values(op, result, part)
            return result
        result = self.b.cast(runtime_parts[0], T.u1)
        for part in runtime_parts[1:]:
            result = arith.logical(self.b, op, result, part)
        return result

    def short_circuit_rest(self, op: ast.boolop, parts: list[ir.Stmt], rest: list[ast.expr]) -> ir.Stmt:
        """`a and b` / `a or b` under wk.init(short_circuit_operators=True) (Taichi's option): once the run-time
        operands so far decide the result, the rest (which reads memory or calls something) is not evaluated."""
        is_and = isinstance(op, ast.And)
        combine = BinaryOpKind.BIT_AND if is_and else BinaryOpKind.BIT_OR
        so_far = self.b.cast(parts[0], T.u1)
        for part in parts[1:]:
            so_far = arith.logical(self.b, combine, so_far, part)
        result = self.b.alloca(T.u1, "boolop")
        self.b.store(result, so_far)
        branch = self.b.if_(so_far)
        with self.b.at(branch.then_block if is_and else branch.else_block):
            later = self.visit_BoolOp(ast.BoolOp(op=op, values=rest)) if len(rest) > 1 else self.rvalue(rest[0])
            if isinstance(later, VectorValue):
                raise CompileError("'and'/'or' mixing scalars and vectors cannot short-circuit")
            later = self.as_value(later) if is_runtime(later) else self.b.const(bool(later), T.u1)
            self.b.store(result, self.b.cast(later, T.u1))
        return self.b.load(result)

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.rvalue(node.test)
        if not is_runtime(cond):
            return self.visit(node.body if cond else node.orelse)
        cond = self.as_value(cond)
        if not isinstance(cond, VectorValue) and (_reads_or_calls(node.body) or _reads_or_calls(node.orelse)):
            return self.branching_ifexp(cond, node)
        true_value = self.as_value(self.rvalue(node.body))
        false_value = self.as_value(self.rvalue(node.orelse))
        return self.select_values(cond, true_value, false_value)

    def branching_ifexp(self, cond: ir.Stmt, node: ast.IfExp) -> Any:
        """`a if c else b` whose sides read memory or call something, as Taichi builds it: a real branch, so
        only the taken side runs (`p[i] if 0 <= i < n else 0.0` never reads outside p)."""
        branch = self.b.if_(cond)
        with self.b.at(branch.then_block):
            taken = self.as_value(self.rvalue(node.body))
        with self.b.at(branch.else_block):
            other = self.as_value(self.rvalue(node.orelse))
        shapes = {v.shape for v in (taken, other) if isinstance(v, VectorValue)}
        if len(shapes) > 1:
            raise CompileError(f"the two sides of 'a if c else b' differ: {describe(taken)} and {describe(other)}")
        shape = shapes.pop() if shapes else ()
        count = shape[0] * (shape[1] if len(shape) > 1 else 1) if shape else 1
        dtype = T.promote(taken.dtype, other.dtype)
        results = [ir.Alloca(dtype=dtype, name="ifexp", loc=self.b.loc) for _ in range(count)]
        position = self.b.block.stmts.index(branch)
        self.b.block.stmts[position:position] = results
        for block, value in ((branch.then_block, taken), (branch.else_block, other)):
            with self.b.at(block):
                elements = value.elements if isinstance(value, VectorValue) else [value] * count
                for result, element in zip(results, elements):
                    self.b.store(result, self.b.cast(element, dtype))
        loads = [self.b.load(result) for result in results]
        return VectorValue(loads, shape[0], shape[1] if len(shape) > 1 else 0) if shape else loads[0]

    def select_values(self, cond: Any, a: Any, b: Any) -> Any:
        cond = self.as_value(cond)
        a = self.as_value(a)
        b = self.as_value(b)
        if isinstance(cond, VectorValue) or isinstance(a, VectorValue) or isinstance(b, VectorValue):
            return vectors.select(self.b, cond, a, b)
        return self.b.select(cond, a, b)

    def local_vector_var(self, node: ast.expr) -> VectorVar | None:
        """The local vector variable `v` (or struct-variable member `p.v`) names, else None."""
        if isinstance(node, ast.Name):
            binding = self.frame.scope.lookup(node.id)
            if isinstance(binding, VectorVar):
                return binding
        if isinstance(node, ast.Attribute):
            binding = self.struct_member_binding(node)
            if isinstance(binding, VectorVar):
                return binding
        return None


def _short_circuit_operators() -> bool:
    """Whether the current Program was made with Taichi's `short_circuit_operators=True`."""
    from wgkern.runtime.program import current
    program = current()
    return program is not None and program.options.short_circuit_operators


def _reads_or_calls(node: ast.expr) -> bool:
    """Whether evaluating `node` may read memory or call something (a subscript or a call inside it)."""
    return any(isinstance(inner, (ast.Subscript, ast.Call)) for inner in ast.walk(node))
