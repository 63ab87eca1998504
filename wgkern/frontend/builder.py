"""FunctionBuilder: walks a kernel's Python AST and emits IR through IRBuilder.

Owns the central `visit()` (sets the IR builder's location from every node and turns any failure into a located
CompileError, Triton-style), frames (one per kernel / inlined func), value conversion and global references.
Expressions, calls, statements and loops live in their own mixin modules."""
from __future__ import annotations

import ast
import itertools
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from wgkern.errors import CompileError, CompileValueError, InternalCompilerError, WkError
from wgkern.frontend import arith, call_trace, reads
from wgkern.frontend.assignments import AssignmentMixin
from wgkern.frontend.atomic_calls import AtomicMixin
from wgkern.frontend.builtin_calls import BuiltinCallMixin
from wgkern.frontend.calls import CallMixin
from wgkern.frontend.expressions import ExpressionMixin
from wgkern.frontend.func_calls import FuncCallMixin
from wgkern.frontend.graph_regions import GraphRegionMixin
from wgkern.frontend.loops import LoopMixin, StaticExit
from wgkern.frontend.print_calls import PrintMixin
from wgkern.frontend.quant import QuantMixin
from wgkern.frontend.sparse import SparseMixin
from wgkern.frontend.sparse_matrix import SparseMatrixMixin
from wgkern.frontend.simt import SimtMixin
from wgkern.frontend.scope import Fixed, GlobalVar, LocalVar, Static, StructVar, VectorVar
from wgkern.frontend.source import FunctionSource, parse_function
from wgkern.frontend.static_eval import closure_values
from wgkern.frontend.statements import StatementMixin
from wgkern.frontend.subscripts import SubscriptMixin
from wgkern.frontend.structs import StructMixin
from wgkern.frontend.buffer_view import BufferViewMixin
from wgkern.frontend.texture import TextureMixin
from wgkern.frontend.values import (DataclassView, GlobalRef, NdarrayRef, ObjectView, VectorValue, describe,
                                    is_python_number, python_number_dtype)
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import BinaryOpKind
from wgkern.lang import types as T
from wgkern.lang.kernel import COMPILING, Func
from wgkern.lang.structs import StructType
from wgkern.lang.argument_holdings import dataclass_ndarray_members, is_dataclass_value, object_ndarray_members
from wgkern.frontend.frames import Frame, assigned_names, reduction_names

UNSUPPORTED = {
    "ClassDef": "class definitions", "FunctionDef": "nested function definitions",
    "AsyncFunctionDef": "async functions", "Try": "try/except", "TryStar": "try/except*",
    "AsyncWith": "'async with'", "AsyncFor": "'async for'", "Raise": "'raise'", "Delete": "'del'",
    "Nonlocal": "'nonlocal'", "Import": "'import'", "ImportFrom": "'import'",
    "Lambda": "lambda",
    "SetComp": "set comprehensions", "Yield": "'yield'",
    "YieldFrom": "'yield from'", "Await": "'await'", "Match": "'match'",
    "JoinedStr": "f-strings", "Set": "set displays",
}
STATIC_ONLY = {"Lambda", "SetComp", "Set"}


def unsupported_message(node: ast.AST) -> str:
    kind = type(node).__name__
    what = UNSUPPORTED.get(kind, f"'{kind}' syntax")
    hint = " (use them inside wk.static(...))" if kind in STATIC_ONLY else \
        " (except as arguments of print())" if kind == "JoinedStr" else ""
    return f"{what} {'are' if what.endswith('s') else 'is'} not supported inside kernels{hint} (Unsupported node " \
           f'"{kind}")'


def contains_return(node: ast.AST) -> bool:
    return any(isinstance(child, ast.Return) for child in ast.walk(node))


class BuildContext:
    """Per-kernel state shared by all frames: container slots, func call stack, random sites."""

    def __init__(self, kernel: Any, arg_specs: list[ir.ArgSpec], template_values: dict[int, Any]):
        self.kernel = kernel
        self.arg_specs = arg_specs
        self.template_values = template_values
        self.slots: list[ir.ContainerSlot] = []
        self.field_slots: dict[int, ir.ContainerSlot] = {}
        self.ndarray_slots: dict[tuple[int, bool], ir.ContainerSlot] = {}
        self.sources: dict[Any, FunctionSource] = {}
        self.func_stack: list[Any] = []
        self.enclosed_func_calls = 0       # funcs being inlined from inside a run-time loop or `if`
        self.plain_funcs: dict[Any, Func] = {}
        self.random_sites = 0
        self.serialize_next_loop = False
        self.block_dim_next_loop = 0       # wk.loop_config(block_dim=N) / wk.block_dim(N) before a loop
        self.shared_arrays = 0             # wk.simt.block.SharedArray slots made so far (their names)
        self.return_slots: tuple[ir.ContainerSlot, ...] = ()
        self.active_cells: list[Any] = []  # frontend/sparse.py's ActiveCells of the struct-fors being built
        self.deactivations = 0             # wk.deactivate calls compiled so far (frontend/sparse.py)

    def source_of(self, fn: Callable[..., Any]) -> FunctionSource:
        if fn not in self.sources:
            log = reads.current()
            if log is not None:
                log.source(fn)
            self.sources[fn] = parse_function(fn)
        return self.sources[fn]

    def plain_func(self, fn: Callable[..., Any]) -> Func:
        """An undecorated Python function (or lambda) called from kernel code, inlined as a wk.func is."""
        if fn not in self.plain_funcs:
            self.plain_funcs[fn] = Func(fn)
        return self.plain_funcs[fn]

    def field_slot(self, host: Any) -> ir.ContainerSlot:
        slot = self.field_slots.get(id(host))
        if slot is None:
            getattr(host, "_materialize", lambda: None)()
            shape = tuple(host.shape) + tuple(host.element_shape)
            slot = ir.ContainerSlot(name=host.name or f"field{len(self.field_slots)}", kind="field",
                                    dtype=host.dtype, ndim=len(shape), shape=shape, host=host)
            self.field_slots[id(host)] = slot
            self.slots.append(slot)
        return slot

    def ndarray_slot(self, ref: NdarrayRef) -> ir.ContainerSlot:
        key = (ref.arg_index, ref.is_grad)
        slot = self.ndarray_slots.get(key)
        if slot is None:
            slot = ir.ContainerSlot(name=ref.name + (".grad" if ref.is_grad else ""), kind="ndarray",
                                    dtype=ref.dtype, ndim=ref.ndim + len(ref.element_shape),
                                    element_shape=tuple(ref.element_shape), arg_index=ref.arg_index,
                                    is_grad=ref.is_grad)
            self.ndarray_slots[key] = slot
            self.slots.append(slot)
        return slot

    def next_random_site(self) -> int:
        self.random_sites += 1
        return self.random_sites


class FunctionBuilder(ExpressionMixin, SubscriptMixin, CallMixin, BuiltinCallMixin, FuncCallMixin, AtomicMixin,
                      PrintMixin, SimtMixin, StatementMixin, AssignmentMixin, StructMixin, LoopMixin, SparseMixin,
                      SparseMatrixMixin, TextureMixin, QuantMixin, BufferViewMixin, GraphRegionMixin):
    def __init__(self, ctx: BuildContext):
        self.ctx = ctx
        self.b = IRBuilder()
        self.root_block = self.b.block     # the kernel body: a RangeFor placed here runs in parallel
        # blocks whose RangeFors run in parallel: the kernel body and the bodies of top-level graph_do_while
        # loops (offload makes those bodies' statements top-level tasks, repeated by the host)
        self.parallel_blocks: list[ir.Block] = [self.root_block]
        self.frame: Frame = None  # type: ignore[assignment]  # set by build()

    def at_parallel_level(self) -> bool:
        """Whether a RangeFor emitted now runs in parallel: the builder is at the kernel's top level (a func
        inlined there included), or directly in the body of a graph_do_while loop that is."""
        block = self.b.block
        return any(block is parallel for parallel in self.parallel_blocks)

    # ---- the central visit --------------------------------------------------------------------------------
    def visit(self, node: ast.AST) -> Any:
        loc = self.frame.src.loc(node) if hasattr(node, "lineno") else self.b.loc
        saved = self.b.loc
        self.b.loc = loc
        try:
            method = getattr(self, "visit_" + type(node).__name__, None)
            if method is None:
                raise CompileError(unsupported_message(node))
            return method(node)
        except CompileError as exc:
            if exc.loc is None:
                raise type(exc)(exc.message, loc) from None
            raise
        except WkError:
            raise
        except RecursionError:
            raise CompileError("kernel code nests too deeply to compile", loc) from None
        except Exception as exc:  # any other failure while translating this node is reported at it
            raise CompileError(f"{type(exc).__name__}: {exc}", loc) from None
        finally:
            self.b.loc = saved

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        kind = "kernel" if self.frame.is_kernel else "func"
        raise CompileError(f"Function definition is not allowed in '{self.frame.src.decorator_module}.{kind}': "
                           f"{unsupported_message(node)}; define '{node.name}' outside as a func")

    def visit_body(self, stmts: list[ast.stmt]) -> bool | StaticExit:
        """Visit statements in order; after one that may `return` from a func, guard the rest. True when the
        statements certainly returned (a `return` reached with no run-time condition: the rest is never
        compiled, so a `wk.static_assert` after `if wk.static(...): return ...` does not fire); a StaticExit
        when they reached a `break`/`continue` of an unrolled wk.static loop with no run-time condition."""
        for k, stmt in enumerate(stmts):
            ended = self.visit(stmt)
            if isinstance(stmt, ast.Return):
                return True      # the rest is unreachable
            if isinstance(stmt, (ast.If, ast.With, ast.For, ast.Break, ast.Continue)) and ended:
                return ended     # the rest is unreachable (or skipped, for this unrolled iteration)
            rest = stmts[k + 1:]
            # in a loop the check is needed even with nothing after it: the loop itself must be left
            if (rest or self.in_runtime_loop()) and self.may_have_returned(stmt):
                self.guard_after_return(lambda: self.visit_body(rest))
                return False
        return False

    def may_have_returned(self, stmt: ast.AST) -> bool:
        ret = self.frame.ret
        return ret is not None and ret.mode == "flag" and contains_return(stmt)

    def guard_after_return(self, rest: Callable[[], None]) -> None:
        """Inside a loop: `if returned: break`; else run the rest under `if not returned`."""
        from wgkern.frontend import arith, intrinsics
        from wgkern.ir.ops import UnaryOpKind
        flag = self.b.load(self.frame.ret.flag)
        if self.in_runtime_loop():
            branch = self.b.if_(flag)
            with self.b.at(branch.then_block):
                self.b.insert(ir.Break())
            rest()
            return
        branch = self.b.if_(arith.unary(self.b, UnaryOpKind.LOGICAL_NOT, flag))
        with self.b.at(branch.then_block):
            rest()

    def in_runtime_loop(self) -> bool:
        """Inside an IR loop of the current function ('ir' or 'parallel'; unrolled loops do not count)."""
        return any(kind != "static" for kind in self.frame.loops)

    # ---- names -------------------------------------------------------------------------------------------
    def lookup(self, name: str) -> Any:
        binding = self.frame.scope.lookup(name)
        if isinstance(binding, GlobalVar):
            return self.global_var_ref(binding)     # loaded where used as a value; also a store/atomic target
        if binding is not None:
            return self.read_binding(binding)
        return self.resolve_python_name(name)

    def read_binding(self, binding: Any) -> Any:
        if isinstance(binding, LocalVar):
            return self.b.load(binding.alloca)
        if isinstance(binding, VectorVar):
            return VectorValue([self.b.load(a) for a in binding.allocas], binding.n, binding.m)
        if isinstance(binding, GlobalVar):
            return self.load_ref(self.global_var_ref(binding))
        if isinstance(binding, StructVar):
            return self.read_struct_var(binding)
        return binding.value

    def global_var_ref(self, binding: GlobalVar) -> GlobalRef:
        if binding.ref is not None:
            return binding.ref
        if binding.element_shape:
            return GlobalRef(binding.slot, [], binding.element_shape, binding.slot.name)
        return GlobalRef(binding.slot, [self.b.const(0, T.i32)], (), binding.slot.name)

    def resolve_python_name(self, name: str) -> Any:
        fn = self.frame.fn
        log = reads.current()
        if log is not None:
            log.name(fn, name)
        found, value = reads.python_name(fn, name)    # the look-up a warm start replays (frontend_cache.py)
        if found:
            if isinstance(value, types.GeneratorType):
                raise CompileValueError(f"'{name}' is a generator, which kernels cannot read (the first compile "
                                        "would consume it): Cannot store generators in variables, inside kernels "
                                        f"or functions; make it a tuple: {name} = tuple(...)")
            return value
        if name in self.frame.scope.expired:
            raise CompileError(f"name '{name}' is not defined here: it was first assigned inside an if/loop "
                               "body, and such variables are local to that body (assign it before the block)")
        raise CompileError(f"name '{name}' is not defined")

    # ---- values ------------------------------------------------------------------------------------------
    def const(self, value: Any) -> ir.Stmt:
        dtype = python_number_dtype(value)
        return self.b.const(value.item() if isinstance(value, np.generic) else value, dtype)

    def as_value(self, value: Any) -> ir.Stmt | VectorValue:
        """A runtime value (scalar statement or VectorValue) from anything usable as one."""
        if isinstance(value, (ir.Stmt, VectorValue)):
            return value
        if isinstance(value, GlobalRef):
            return self.load_ref(value)
        if is_python_number(value):
            return self.const(value)
        if isinstance(value, (list, tuple)) and value:
            # `x[i] = [a, b]`, `m = [[a, b], [c, d]] @ v`: a list literal where a value is needed is a vector
            # (a list of rows: a matrix), as in Taichi
            is_matrix = all(isinstance(row, (list, tuple)) for row in value)
            return self.construct_from_lists(is_matrix, [value], {})
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf":
            return self.const(value[()])         # a 0-d numpy array is its one number
        if isinstance(value, np.ndarray) and value.ndim in (1, 2) and value.size > 0:
            elements = [self.const(v) for v in value.reshape(-1).tolist()]
            from wgkern.frontend.vectors import unify_dtype
            return VectorValue(unify_dtype(self.b, elements), value.shape[0],
                               value.shape[1] if value.ndim == 2 else 0)
        raise CompileError(f"expected a number or vector here, got {describe(value)}")

    def as_scalar(self, value: Any) -> ir.Stmt:
        out = self.as_value(value)
        if isinstance(out, VectorValue):
            raise CompileError(f"expected a scalar here, got {describe(out)}")
        return out

    def as_dtype(self, obj: Any) -> T.DataType:
        """A dtype argument (`wk.f32`, `float`, `np.float32`, a vector type's element dtype)."""
        if isinstance(obj, T.VectorType):
            return obj.dtype
        try:
            return T.to_dtype(obj)
        except TypeError:
            raise CompileError(f"expected a dtype, got {describe(obj)}") from None

    # ---- global data -------------------------------------------------------------------------------------
    def container_ref(self, container: Any, indices: list[Any], label: str = "") -> GlobalRef:
        """container[indices] for a field or ndarray argument; checks the index count. `label` names the
        container in messages as the user wrote it."""
        if isinstance(container, NdarrayRef):
            slot = self.ctx.ndarray_slot(container)
            own_ndim = container.ndim
            element_shape = container.element_shape
            label = label or container.name
        else:
            if not getattr(container, "is_field", True):
                raise CompileError(f"ndarray '{label or container.name}' must be passed to the kernel as an "
                                   "argument (annotate it with wk.types.ndarray())")
            slot = self.ctx.field_slot(container)
            own_ndim = len(container.shape)
            element_shape = tuple(container.element_shape)
            label = label or container.name or slot.name
        if indices == [None]:
            indices = []
        if len(indices) == own_ndim + len(element_shape) and element_shape:
            element_shape = ()
        elif len(indices) != own_ndim:
            need = "x[None]" if own_ndim == 0 else f"{own_ndim} index(es)"
            raise CompileError(f"'{label}' has {own_ndim} dimension(s) and must be indexed with {need}, "
                               f"got {len(indices)}")
        converted = [self.as_index(i) for i in indices]
        clamp = isinstance(container, NdarrayRef) and container.clamp
        if clamp:
            extents = [self.b.insert(ir.ShapeOf(container=slot, axis=axis, dtype=T.i32)) for axis in range(own_ndim)]
            converted = [self.clamp_index(i, n) for i, n in zip(converted[:own_ndim], extents)] \
                + self.clamp_element_indices(converted[own_ndim:], tuple(container.element_shape))
        offset = getattr(container, "offset", ())
        for axis, first in enumerate(offset):      # a field with wk.field(offset=...): element 0 is `first`
            if first:
                converted[axis] = arith.binary(self.b, BinaryOpKind.SUB, converted[axis], self.b.const(first, T.i32))
        return GlobalRef(slot, converted, element_shape, label, clamp)

    def clamp_index(self, index: ir.Stmt, extent: ir.Stmt) -> ir.Stmt:
        """min(max(index, 0), extent - 1): Taichi's boundary="clamp" access."""
        last = self.b.binary(BinaryOpKind.SUB, extent, self.b.const(1, T.i32))
        return self.b.binary(BinaryOpKind.MIN, self.b.binary(BinaryOpKind.MAX, index, self.b.const(0, T.i32)), last)

    def clamp_element_indices(self, indices: list[ir.Stmt], element_shape: tuple[int, ...]) -> list[ir.Stmt]:
        """Element indices under boundary="clamp": as Quadrants clamps them, a full (row, column) pair is
        clamped as one row-major position into the matrix, so m[1, 2] of a 2x2 element is m[1, 1]."""
        if len(indices) < 2:
            return [self.clamp_index(i, self.b.const(n, T.i32)) for i, n in zip(indices, element_shape)]
        columns = self.b.const(element_shape[1], T.i32)
        flat = self.b.binary(BinaryOpKind.ADD, self.b.binary(BinaryOpKind.MUL, indices[0], columns), indices[1])
        flat = self.clamp_index(flat, self.b.const(element_shape[0] * element_shape[1], T.i32))
        return [self.b.binary(BinaryOpKind.FLOORDIV, flat, columns), self.b.binary(BinaryOpKind.MOD, flat, columns)]

    def as_index(self, value: Any) -> ir.Stmt:
        index = self.as_scalar(value)
        if index.dtype.is_float:
            raise CompileError(f"indices must be integers, got {index.dtype.name} (use wk.cast(i, wk.i32))")
        return self.b.cast(index, T.i32)

    def element_ptrs(self, ref: GlobalRef) -> list[ir.GlobalPtr]:
        ranges = [range(n) for n in ref.element_shape]
        return [self.b.global_ptr(ref.slot, ref.indices + [self.b.const(k, T.i32) for k in combo])
                for combo in itertools.product(*ranges)]

    def load_ref(self, ref: GlobalRef) -> ir.Stmt | VectorValue:
        loads = [self.b.global_load(ptr) for ptr in self.element_ptrs(ref)]
        if self.frame.scope.gradient_stopped(ref.slot):
            loads = [self.stopped(load) for load in loads]
        if not ref.element_shape:
            return loads[0]
        n = ref.element_shape[0]
        m = ref.element_shape[1] if len(ref.element_shape) > 1 else 0
        return VectorValue(loads, n, m)

    def store_ref(self, ref: GlobalRef, value: Any) -> None:
        """ref = value; a field below sparse nodes has the element's cells activated (frontend/sparse.py)."""
        self.store_values(ref, value)
        self.activate_on_write(ref)

    def store_values(self, ref: GlobalRef, value: Any) -> None:
        if getattr(ref.slot.host, "quant", None) is not None:     # a quantized type's field: stores round
            return self.store_quant(ref, value)
        for ptr, element in self.stored_elements(ref, value):
            self.b.global_store(ptr, element)

    def stored_elements(self, ref: GlobalRef, value: Any) -> list[tuple[Any, Any]]:
        """(pointer, value) per component of `ref = value`: a vector of the element's shape goes component by
        component, a scalar to every component."""
        value = self.as_value(value)
        ptrs = self.element_ptrs(ref)
        if isinstance(value, VectorValue):
            if value.shape != ref.element_shape:
                raise CompileError(f"cannot store {describe(value)} into '{ref.label}' whose elements have "
                                   f"shape {ref.element_shape}")
            return list(zip(ptrs, value.elements))
        return [(ptr, value) for ptr in ptrs]

    # ---- entry -------------------------------------------------------------------------------------------
    def build(self) -> ir.KernelIR:
        kernel = self.ctx.kernel
        src = self.ctx.source_of(kernel.fn)
        self.frame = Frame(src, is_kernel=True, assigned=assigned_names(src.tree),
                           reduction_names=reduction_names(src.tree, kernel.fn))
        self.b.loc = src.def_loc
        if getattr(kernel, "checkpoints", False):
            raise CompileError(f"kernel '{kernel.name}' is declared @kernel(checkpoints=True): pausable graph "
                               "kernels (Quadrants' qd.checkpoint) are not available", src.def_loc)
        params = list(kernel.signature.parameters.values())
        if len(params) > len(self.ctx.arg_specs):
            raise InternalCompilerError(f"kernel '{kernel.name}' has {len(params)} parameters but "
                                        f"{len(self.ctx.arg_specs)} argument specs", src.def_loc)
        for index, (param, spec) in enumerate(zip(params, self.ctx.arg_specs)):
            self.bind_kernel_arg(index, param.name, spec)
        COMPILING.inliners.append(self.call_func_from_python)
        try:
            self.visit_body(src.tree.body)
        finally:
            COMPILING.inliners.pop()
        if self.has_return_annotation() and not self.ctx.return_slots:
            raise CompileError(f"kernel '{kernel.name}' has a return type but no 'return' statement gives a "
                               "value (Kernel has a return type but does not have a return statement)", src.def_loc)
        return ir.KernelIR(kernel.name, list(self.ctx.arg_specs), self.ctx.slots, self.b.block, src.def_loc,
                           self.ctx.return_slots)

    def bind_kernel_arg(self, index: int, name: str, spec: ir.ArgSpec) -> None:
        scope = self.frame.scope
        if spec.kind == "sparse_matrix_builder":
            self.bind_sparse_matrix_arg(name, spec)
            return
        if spec.kind == "texture":
            self.bind_texture_arg(name, spec)
            return
        if spec.kind == "buffer_view":
            self.bind_buffer_view_arg(name, spec)
            return
        if spec.components and is_dataclass_value(self.ctx.template_values.get(index)):
            scope.define(name, Static(self.dataclass_view(self.ctx.template_values[index], spec)))
            return
        if spec.components and index in self.ctx.template_values:     # an object holding ndarrays
            value = self.ctx.template_values[index]
            specs = self.ctx.arg_specs
            refs = {path: NdarrayRef(k, specs[k].name, specs[k].dtype, int(specs[k].ndim or 0),
                                     tuple(specs[k].element_shape))
                    for k, (path, _) in zip(spec.components, object_ndarray_members(value))}
            scope.define(name, Static(ObjectView.of(value, refs, ())))
            return
        if spec.components:
            self.bind_component_arg(name, spec)
            return
        if spec.kind == "scalar":
            value = self.b.insert(ir.ArgLoad(arg_index=index, dtype=spec.dtype))
            if name in self.frame.assigned:       # a variable (a temp slot if the parallel loop reduces into it)
                scope.define(name, self.new_variable(name, value, spec.dtype))
            else:
                scope.define(name, Fixed(value, "kernel argument"))
        elif spec.kind == "ndarray":
            dtype = spec.dtype
            element_shape = tuple(spec.element_shape)
            if isinstance(dtype, T.VectorType):
                element_shape = dtype.element_shape
                dtype = dtype.dtype
            annotation = self.resolve_annotation(getattr(self.ctx.kernel.fn, "__annotations__", {}).get(name))
            clamp = isinstance(annotation, T.NdarrayType) and annotation.boundary == "clamp"
            scope.define(name, Static(NdarrayRef(index, name, dtype, int(spec.ndim or 0), element_shape,
                                                 clamp=clamp)))
        elif spec.kind == "template":
            value = self.ctx.template_values.get(index)
            if isinstance(value, np.ndarray) and isinstance(spec.dtype, T.DataType) and value.ndim in (1, 2):
                # a vector/matrix-annotated argument: its value is baked in as constants of the declared dtype
                vector = VectorValue([self.b.const(v, spec.dtype) for v in value.reshape(-1).tolist()],
                                     value.shape[0], value.shape[1] if value.ndim == 2 else 0)
                if name in self.frame.assigned:
                    scope.define(name, self.new_variable(name, vector))
                else:
                    scope.define(name, Fixed(vector, "kernel argument"))
            else:
                scope.define(name, Static(value))
        else:
            raise InternalCompilerError(f"unknown argument kind {spec.kind!r} for '{name}'", self.b.loc)

    def dataclass_view(self, value: Any, spec: ir.ArgSpec) -> DataclassView:
        """A dataclass argument as kernel code sees it: its ndarray members are the ndarray arguments listed in
        `spec.components` (in dataclass_ndarray_members' order), its other members compile-time values."""
        specs = self.ctx.arg_specs
        refs: dict[tuple[str, ...], NdarrayRef] = {}
        for k, (path, _, _) in zip(spec.components, dataclass_ndarray_members(value)):
            element_shape = tuple(specs[k].element_shape)
            refs[path] = NdarrayRef(k, specs[k].name, specs[k].dtype, int(specs[k].ndim or 0), element_shape)
        return DataclassView.of(value, refs, ())

    def bind_component_arg(self, name: str, spec: ir.ArgSpec) -> None:
        """A vector/matrix or struct parameter, passed as one scalar argument per component."""
        specs = self.ctx.arg_specs
        loads = iter([self.b.insert(ir.ArgLoad(arg_index=k, dtype=specs[k].dtype)) for k in spec.components])
        if isinstance(spec.dtype, StructType):
            self.frame.scope.define(name, self.new_struct_var(name, self.struct_from(spec.dtype, loads)))
            return
        shape = tuple(spec.element_shape)
        vector = VectorValue(list(loads), shape[0], shape[1] if len(shape) > 1 else 0)
        if name in self.frame.assigned:
            self.frame.scope.define(name, self.new_variable(name, vector))
        else:
            self.frame.scope.define(name, Fixed(vector, "kernel argument"))

    def resolve_annotation(self, annotation: Any, fn: Any = None) -> Any:
        """Annotations may be strings (`from __future__ import annotations`): evaluate them in the globals of the
        function they annotate (`fn`; by default the one being built)."""
        if not isinstance(annotation, str):
            return T.called_annotation(annotation)
        fn = self.frame.fn if fn is None else fn
        namespace = dict(getattr(fn, "__globals__", {}))
        namespace.update(closure_values(fn))
        log = reads.current()
        calls_python = False
        if log is not None:
            try:
                calls_python = log.expression(ast.parse(annotation, mode="eval"), fn, lambda name: False, namespace)
            except SyntaxError:
                pass                              # eval reports it
        try:
            if calls_python:
                code = compile(annotation, "<annotation>", "eval")
                with call_trace.traced(log, code):
                    return T.called_annotation(eval(code, namespace))  # noqa: S307 - the user's own annotation
            return T.called_annotation(eval(annotation, namespace))  # noqa: S307 - the user's own annotation
        except Exception as exc:
            raise CompileError(f"cannot evaluate the annotation {annotation!r}: {exc}") from None
