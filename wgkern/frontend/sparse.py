"""Kernel code for sparse SNodes (lang/snode.py): writes that activate, struct-for guards, and the intrinsics
`wk.activate`, `wk.deactivate`, `wk.is_active`, `wk.append`, `wk.length`, `wk.rescale_index` with the
dynamic-list methods `x[i].append(v)`, `x[i].length()`, `x[i].deactivate()`.

Every sparse node keeps an i32 activity field (flags over its cells, or a dynamic node's lengths over its
parent's cells); the data below is dense. So: a store or atomic to a field below sparse nodes also sets the flag
of each enclosing cell (and grows an enclosing dynamic list to cover the element); a struct-for over such a field
(or over a node) is the dense loop with its body under `if` every enclosing cell is active; deactivation clears a
flag and zeroes the block below it, so inactive elements read 0."""
from __future__ import annotations

import ast
import itertools
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from wgkern.errors import CompileError
from wgkern.frontend.values import GlobalRef, StructElement, VectorValue, describe, is_runtime
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind
from wgkern.lang import sparse
from wgkern.lang import types as T
from wgkern.lang.snode import SPARSE_KINDS, SNode
from wgkern.lang.structs import StructField

BLOCKED_MAX_ELEMENTS = 4096     # the most elements one thread of a blocked struct-for runs serially

SPARSE_INTRINSICS = frozenset({sparse.activate, sparse.deactivate, sparse.is_active, sparse.append,
                               sparse.length, sparse.rescale_index})


def is_tree_query(callee: Any) -> bool:
    """`x.parent()`, `node.parent(2)`, `v.get_scalar_field(d)` (for `wk.block_local`): compile-time questions
    about the SNode tree and its fields, answered while compiling."""
    owner = getattr(callee, "__self__", None)
    name = getattr(callee, "__name__", "")
    if name == "get_scalar_field":
        return getattr(owner, "is_field", False)
    return name == "parent" and (isinstance(owner, SNode) or getattr(owner, "is_field", False))


@dataclass(frozen=True)
class DynamicList:
    """`x[i]` of a field under a dynamic node, indexed up to the dynamic axis: the list at parent cell i."""
    field: Any
    node: SNode
    indices: tuple[Any, ...]


@dataclass(frozen=True)
class DynamicMethod:
    """`x[i].append` / `.length` / `.deactivate`, waiting for its call."""
    target: DynamicList
    name: str


@dataclass
class ActiveCells:
    """What a struct-for over sparse nodes knows inside its body: the cells its guard found active (keys of
    `cell_key`), and the flag stores of writes to those cells (each a store of 1 over a 1, dropped when the
    body turns out not to deactivate anything: nothing else clears a flag while the loop runs)."""
    keys: set[tuple[SNode, tuple[tuple[ir.Stmt, int], ...]]]
    redundant: list[tuple[ir.Block, ir.GlobalStore]]
    deactivations: int


def cell_key(node: SNode, level: SNode, indices: list[ir.Stmt]) -> tuple[SNode, tuple[tuple[ir.Stmt, int], ...]]:
    """Names the cell of `level` holding element `indices` of `node` by the index statements (identity) and
    divisors that compute it, so accesses through the same index values (r[i, j] and z[i, j]) match."""
    return level, tuple((indices[position], divisor) for position, divisor in node.coordinate_map(level))


class SparseMixin:
    # ---- index arithmetic ------------------------------------------------------------------------------
    def scaled_down(self, index: ir.Stmt, divisor: int) -> ir.Stmt:
        return index if divisor == 1 else self.binary_values(BinaryOpKind.FLOORDIV, index, divisor)

    def cell_of(self, node: SNode, ancestor: SNode, indices: list[ir.Stmt]) -> list[ir.Stmt]:
        """An index in `node`'s coordinates as one in `ancestor`'s (which lies on node's path)."""
        return [self.scaled_down(indices[position], divisor)
                for position, divisor in node.coordinate_map(ancestor)]

    def activity_ptr(self, level: SNode, cell: list[ir.Stmt]) -> ir.GlobalPtr:
        return self.b.global_ptr(self.ctx.field_slot(level.activity), cell)

    def dynamic_position(self, node: SNode, level: SNode, indices: list[ir.Stmt]) -> ir.Stmt:
        """The position along a dynamic level's list of an index in `node`'s coordinates."""
        position = node.axis_order.index(level.dynamic_axis)
        return self.scaled_down(indices[position], node.extents()[level.dynamic_axis] // level.capacity)

    # ---- writes activate -------------------------------------------------------------------------------
    def activate_on_write(self, ref: GlobalRef) -> None:
        host = ref.slot.host
        if host is None or getattr(host, "_place_node", None) is None:
            return
        levels = sparse.sparse_levels(host)
        if levels:
            self.activate_levels(sparse.place_node(host), levels, ref.indices[:len(host.shape)])

    def activate_levels(self, node: SNode, levels: list[SNode], indices: list[ir.Stmt]) -> None:
        for level in levels:
            if level.kind == "dynamic":
                parent = self.cell_of(node, level._parent, indices)
                grown = self.binary_values(BinaryOpKind.ADD, self.dynamic_position(node, level, indices), 1)
                self.b.atomic(AtomicOpKind.MAX, self.activity_ptr(level, parent), grown)
            else:
                store = self.b.global_store(self.activity_ptr(level, self.cell_of(node, level, indices)),
                                            self.b.const(1, T.i32))
                known = self.known_active_cells()
                if known is not None and cell_key(node, level, indices) in known.keys:
                    known.redundant.append((self.b.block, store))

    # ---- what a struct-for's guard established -------------------------------------------------------------
    def known_active_cells(self) -> ActiveCells | None:
        scopes = self.ctx.active_cells
        return scopes[-1] if scopes else None

    @contextmanager
    def struct_for_scope(self) -> Iterator[None]:
        """Around the loop of a struct-for over sparse nodes: its guards record the cells they test
        (`active_condition`), and writes into those cells inside the body skip their flag store, unless the
        body of the outermost such loop deactivates (then a write may have to re-activate its cell)."""
        scopes = self.ctx.active_cells
        outer = scopes[-1] if scopes else None
        scope = ActiveCells(set(outer.keys) if outer else set(), [], self.ctx.deactivations)
        scopes.append(scope)
        try:
            yield
        finally:
            scopes.pop()
        if outer is not None:          # the outermost loop decides: its body spans this one's
            outer.redundant.extend(scope.redundant)
        elif self.ctx.deactivations == scope.deactivations:
            for block, store in scope.redundant:
                block.stmts.remove(store)

    def note_active(self, node: SNode, levels: list[SNode], indices: list[ir.Stmt]) -> None:
        """The guard being built tests these levels' cells at `indices` (in `node`'s coordinates)."""
        known = self.known_active_cells()
        if known is not None:
            known.keys.update(cell_key(node, level, indices) for level in levels if level.kind != "dynamic")

    # ---- struct-for ------------------------------------------------------------------------------------
    def sparse_guard(self, iterable: Any) -> Callable[[list[ir.Stmt]], ir.Stmt] | None:
        """For a struct-for over a field below sparse nodes (or over a node): the condition, given the loop's
        indices, that the element exists. None where every element does."""
        if isinstance(iterable, SNode):
            node = iterable
        elif getattr(iterable, "_place_node", None) is not None:
            node = iterable._place_node
        else:
            return None
        levels = [level for level in node.path() if level.kind in SPARSE_KINDS]
        if not levels:
            return None
        offset = getattr(iterable, "offset", ()) or ()

        def guard(indices: list[ir.Stmt]) -> ir.Stmt:
            if any(offset):
                indices = [self.binary_values(BinaryOpKind.SUB, i, o) if o else i for i, o in zip(indices, offset)]
            return self.active_condition(node, levels, indices)
        return guard

    def dynamic_struct_for(self, loop: ast.For, iterable: Any, dims: list[tuple[Any, Any]], serialize: bool,
                           grouped: bool) -> bool:
        """A struct-for over a field below a dynamic node (`for I in wk.grouped(pid)`): one parallel loop over the
        lists' cells, active ones only, each running serially over its list's length, as Taichi's visits only
        the elements that exist (a flat loop would test every slot of every list: capacity times the cells).
        False, emitting nothing, where the field is not shaped so (its list axis not the last one)."""
        level = self.dynamic_level(iterable)
        if level is None or not self.is_container(iterable) or getattr(iterable, "_place_node", None) is None:
            return False
        node = iterable._place_node
        if node.axis_order[-1] != level.dynamic_axis or node.extents()[level.dynamic_axis] != level.capacity:
            return False
        if len(dims) != len(node.shape) or any(is_runtime(bound) for dim in dims for bound in dim):
            return False
        names = self.loop_target_names(loop.target, 1 if grouped else len(dims))
        above = [lvl for lvl in node.path() if lvl.kind in SPARSE_KINDS and lvl is not level]
        offsets = list(getattr(iterable, "offset", ()) or ()) or [0] * len(dims)
        outer = [int(end) - int(begin) for begin, end in dims[:-1]]
        cells = int(np.prod(outer)) if outer else 1

        def cell_body(index: ir.Stmt) -> None:
            raw: list[ir.Stmt] = [index] * len(outer)
            remaining: Any = index
            for k in range(len(outer) - 1, -1, -1):
                raw[k] = remaining if k == 0 else self.binary_values(BinaryOpKind.MOD, remaining, outer[k])
                if k:
                    remaining = self.binary_values(BinaryOpKind.FLOORDIV, remaining, outer[k])
            first = [*raw, self.b.const(0, T.i32)]      # the list's first slot, in the field's own coordinates
            length = self.b.global_load(self.activity_ptr(level, self.cell_of(node, level._parent, first)))
            length = self.binary_values(BinaryOpKind.MIN, length, level.capacity)
            if above:
                active = self.active_condition(node, above, first)
                length = self.b.select(active, length, self.b.const(0, T.i32))

            def element_body(position: ir.Stmt) -> None:
                values = [*raw, position]
                indices = [self.b.cast(self.as_scalar(v if not o else self.binary_values(BinaryOpKind.ADD, v, o)),
                                       T.i32) for v, o in zip(values, offsets)]
                self.bind_loop_variables(names, [VectorValue(indices, len(indices))] if grouped else indices)
                self.visit_body(loop.body)
            self.emit_range_for(0, length, True, element_body, loop)
        with self.struct_for_scope():
            self.emit_range_for(0, cells, serialize, cell_body, loop)
        return True

    def blocked_struct_for(self, loop: ast.For, iterable: Any, dims: list[tuple[Any, Any]], grouped: bool) -> bool:
        """A parallel struct-for over a field (or node) below pointer/bitmasked nodes, as Taichi runs it: one
        parallel loop over the cells of the deepest sparse node whose cells hold several elements (`block`),
        testing the flags once per cell, each active cell running serially over the elements inside it (testing
        the flags of any sparse nodes further down per element). So the inactive part of a grid costs one flag
        load per cell, not per element. False, emitting nothing, where the flat guarded loop stays: no such
        node, a dynamic node on the path, cells of more than BLOCKED_MAX_ELEMENTS elements (a long serial loop
        per thread), or a loop that does not run in parallel (`break` must keep leaving the whole loop)."""
        node = iterable if isinstance(iterable, SNode) else getattr(iterable, "_place_node", None)
        if node is None or not self.runs_parallel(loop, False):
            return False
        levels = [level for level in node.path() if level.kind in SPARSE_KINDS]
        if any(level.kind == "dynamic" for level in levels) or len(dims) != len(node.shape):
            return False
        if any(is_runtime(bound) for dim in dims for bound in dim) or \
                [int(end) - int(begin) for begin, end in dims] != list(node.shape):
            return False
        blocks = [(level, self.cell_extents(node, level)) for level in levels]
        blocks = [(level, extents) for level, extents in blocks if extents is not None and int(np.prod(extents)) > 1]
        if not blocks or int(np.prod(blocks[-1][1])) > BLOCKED_MAX_ELEMENTS:
            return False
        block, inner = blocks[-1]
        outer_levels = [level for level in levels if level in block.path()]
        inner_levels = [level for level in levels if level not in outer_levels]
        names = self.loop_target_names(loop.target, 1 if grouped else len(dims))
        mapping = {position: k for k, (position, _) in enumerate(node.coordinate_map(block))}

        def cell_body(index: ir.Stmt) -> None:
            cell = self.unflatten(index, list(block.shape))
            active = self.b.if_(self.active_condition(block, outer_levels, cell))
            with self.b.at(active.then_block):
                self.emit_serial_for(int(np.prod(inner)), lambda sub: element_body(cell, sub), loop)

        def element_body(cell: list[ir.Stmt], sub: ir.Stmt) -> None:
            within = self.unflatten(sub, inner)
            raw = [within[p] if p not in mapping else
                   self.binary_values(BinaryOpKind.ADD, self.binary_values(BinaryOpKind.MUL, cell[mapping[p]],
                                                                           inner[p]), within[p])
                   for p in range(len(dims))]
            indices = [self.b.cast(self.as_scalar(v if not int(begin) else
                                                  self.binary_values(BinaryOpKind.ADD, v, int(begin))), T.i32)
                       for v, (begin, _) in zip(raw, dims)]
            bound = [VectorValue(indices, len(indices))] if grouped else indices
            self.note_active(node, outer_levels, raw)         # the element lies in the cell tested above
            if not inner_levels:
                self.bind_loop_variables(names, bound)
                self.visit_body(loop.body)
                return
            branch = self.b.if_(self.active_condition(node, inner_levels, raw))
            with self.b.at(branch.then_block), self.frame.scope.block():
                self.bind_loop_variables(names, bound)
                self.visit_body(loop.body)
        with self.struct_for_scope():
            self.emit_range_for(0, int(np.prod(block.shape)), False, cell_body, loop)
        return True

    def cell_extents(self, node: SNode, level: SNode) -> list[int] | None:
        """Per axis of `node`, how many of its cells lie along that axis inside one cell of `level` (None where
        the extents do not divide)."""
        extents = list(node.shape)
        for k, (position, divisor) in enumerate(node.coordinate_map(level)):
            if divisor * level.shape[k] != node.shape[position]:
                return None
            extents[position] = divisor
        return extents

    def unflatten(self, index: ir.Stmt, extents: list[int]) -> list[ir.Stmt]:
        """A row-major flat index over `extents` as one index per axis."""
        out: list[Any] = [index] * len(extents)
        remaining: Any = index
        for k in range(len(extents) - 1, -1, -1):
            out[k] = remaining if k == 0 else self.binary_values(BinaryOpKind.MOD, remaining, extents[k])
            if k:
                remaining = self.binary_values(BinaryOpKind.FLOORDIV, remaining, extents[k])
        return out

    def active_condition(self, node: SNode, levels: list[SNode], indices: list[ir.Stmt]) -> ir.Stmt:
        self.note_active(node, levels, indices)
        condition: ir.Stmt | None = None
        for level in levels:
            if level.kind == "dynamic":
                length = self.b.global_load(self.activity_ptr(level, self.cell_of(node, level._parent, indices)))
                part = self.binary_values(BinaryOpKind.CMP_LT, self.dynamic_position(node, level, indices), length)
            else:
                flag = self.b.global_load(self.activity_ptr(level, self.cell_of(node, level, indices)))
                part = self.binary_values(BinaryOpKind.CMP_NE, flag, 0)
            condition = part if condition is None else self.logical_values(BinaryOpKind.BIT_AND, condition, part)
        assert condition is not None
        return condition

    # ---- dynamic lists ---------------------------------------------------------------------------------
    def dynamic_level(self, field: Any) -> SNode | None:
        levels = sparse.sparse_levels(field)
        return levels[-1] if levels and levels[-1].kind == "dynamic" else None

    def dynamic_list(self, field: Any, indices: list[Any]) -> DynamicList | None:
        """`x[i]` of a field whose last index is a dynamic node's: the list (None if x[i] is an element)."""
        level = self.dynamic_level(field)
        if level is None or len(indices) != len(field.shape) - 1 or indices == [None]:
            return None
        return DynamicList(field, level, tuple(indices))

    def dynamic_method(self, target: Any, attr: str) -> DynamicMethod | None:
        if attr not in ("append", "length", "deactivate") or not (
                self.is_container(target) or isinstance(target, (DynamicList, StructField))):
            return None
        if isinstance(target, DynamicList):
            return DynamicMethod(target, attr)
        level = self.dynamic_level(target)
        if level is not None and len(target.shape) == 1:       # a list directly below the root: x.append(v)
            return DynamicMethod(DynamicList(target, level, ()), attr)
        return None

    def call_dynamic_method(self, method: DynamicMethod, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if kwargs:
            raise CompileError(f".{method.name}() takes no keyword arguments")
        node, indices = method.target.node, list(method.target.indices)
        if method.name == "append":
            if len(args) != 1:
                raise CompileError(".append(value) takes one value")
            return self.sparse_append(node, indices, args[0], method.target.field)
        if args:
            raise CompileError(f".{method.name}() takes no arguments")
        return self.sparse_call(sparse.length if method.name == "length" else sparse.deactivate, [node, indices], {})

    # ---- intrinsics ------------------------------------------------------------------------------------
    def node_indices(self, value: Any) -> list[ir.Stmt]:
        if value is None:
            return []
        return [self.as_index(v) for v in self.expand_indices([value])]

    def sparse_call(self, callee: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        name = callee.__name__
        if kwargs:
            raise CompileError(f"wk.{name}() takes no keyword arguments")
        if callee is sparse.rescale_index:
            if len(args) != 3:
                raise CompileError("wk.rescale_index(a, b, I) takes 3 arguments")
            return self.rescale(args[0], args[1], args[2])
        expected = 3 if callee is sparse.append else 2
        if len(args) != expected:
            raise CompileError(f"wk.{name}() takes {expected} arguments, got {len(args)}")
        node = self.snode_argument(args[0], name)
        indices = self.node_indices(args[1])
        if callee is sparse.append:
            return self.sparse_append(node, indices, args[2], None)
        if callee is sparse.is_active:
            return self.sparse_is_active(node, indices)
        if callee is sparse.length:
            if node.kind != "dynamic":
                raise CompileError(f"wk.length() takes a dynamic node, not {node!r}")
            self.check_index_count(node._parent, indices, "wk.length()")
            length = self.b.global_load(self.activity_ptr(node, indices))
            return self.binary_values(BinaryOpKind.MIN, length, node.capacity)
        if callee is sparse.activate:
            self.check_index_count(node, indices, "wk.activate()")
            levels = [level for level in node.path() if level.kind in SPARSE_KINDS]
            self.activate_levels(node, levels, indices)
            return None
        return self.sparse_deactivate(node, indices)

    def snode_argument(self, value: Any, name: str) -> SNode:
        if isinstance(value, SNode):
            return value
        if getattr(value, "_place_node", None) is not None:
            return value._place_node
        raise CompileError(f"wk.{name}() takes an SNode (e.g. x.parent(), or a node from wk.root.pointer(...)), "
                           f"got {describe(value)}")

    def check_index_count(self, node: SNode, indices: list[ir.Stmt], what: str) -> None:
        if len(indices) != len(node.shape):
            raise CompileError(f"{what} on {node!r} needs {len(node.shape)} index(es), got {len(indices)}")

    def sparse_is_active(self, node: SNode, indices: list[ir.Stmt]) -> ir.Stmt:
        if node.kind not in ("pointer", "bitmasked"):
            raise CompileError(f"wk.is_active() takes a pointer or bitmasked node, not {node!r}")
        self.check_index_count(node, indices, "wk.is_active()")
        inside: Any = None
        clamped = []
        for index, extent in zip(indices, node.shape):        # outside the node is inactive, never a stray read
            ok = self.logical_values(BinaryOpKind.BIT_AND, self.binary_values(BinaryOpKind.CMP_GE, index, 0),
                                     self.binary_values(BinaryOpKind.CMP_LT, index, extent))
            inside = ok if inside is None else self.logical_values(BinaryOpKind.BIT_AND, inside, ok)
            clamped.append(self.binary_values(BinaryOpKind.MIN, self.binary_values(BinaryOpKind.MAX, index, 0),
                                              extent - 1))
        flag = self.b.global_load(self.activity_ptr(node, clamped))
        active = self.logical_values(BinaryOpKind.BIT_AND, inside, self.binary_values(BinaryOpKind.CMP_NE, flag, 0))
        return self.b.cast(active, T.i32)

    def sparse_append(self, node: SNode, indices: list[Any], value: Any, field: Any) -> ir.Stmt:
        """`wk.append(node, I, v)`: the list's old length, after storing v at that position (when it fits).
        `field`: the (struct) field of `x[i].append(v)`; for `wk.append` the one field placed below the node."""
        if node.kind != "dynamic":
            raise CompileError(f"wk.append() takes a dynamic node, not {node!r}")
        indices = [self.as_index(v) for v in indices] if field is not None else indices
        self.check_index_count(node._parent, indices, "wk.append()")
        if field is None:
            fields = [c for c in sparse.containers_below(node) if getattr(c, "_activity_of", None) is None]
            if len(fields) != 1:
                raise CompileError(f"wk.append() needs exactly one field placed below {node!r}, found "
                                   f"{len(fields)}")
            field = fields[0]
        if sparse.place_node(field).extents() != node.extents():
            raise CompileError(f"wk.append(): '{field.name}' has more axes than the dynamic node {node!r}")
        above = [level for level in node._parent.path() if level.kind in SPARSE_KINDS]
        self.activate_levels(node._parent, above, indices)   # as in Taichi, appending activates the list's cell
        old = self.b.atomic(AtomicOpKind.ADD, self.activity_ptr(node, indices), self.b.const(1, T.i32))
        fits = self.b.if_(self.binary_values(BinaryOpKind.CMP_LT, old, node.capacity))
        with self.b.at(fits.then_block):
            position = node.axis_order.index(node.dynamic_axis)
            element = [*indices[:position], old, *indices[position:]]
            if isinstance(field, StructField):
                self.store_struct(StructElement(field, element, field.name), value)
            else:
                ref = GlobalRef(self.ctx.field_slot(field), element, tuple(field.element_shape), field.name)
                self.store_values(ref, value)
        return old

    def sparse_deactivate(self, node: SNode, indices: list[ir.Stmt]) -> None:
        if node.kind in ("dense", "place"):
            self.check_index_count(node, indices, "wk.deactivate()")
            return          # a dense cell is always active: Taichi's deactivate of one does nothing
        if node.kind not in SPARSE_KINDS:
            raise CompileError(f"wk.deactivate() takes a pointer, bitmasked or dynamic node, not {node!r}")
        anchor = node._parent if node.kind == "dynamic" else node
        self.check_index_count(anchor, indices, "wk.deactivate()")
        self.ctx.deactivations += 1
        self.b.global_store(self.activity_ptr(node, indices), self.b.const(0, T.i32))
        for container in sparse.containers_below(node):
            self.zero_block(anchor, indices, container)
        return None

    def zero_block(self, anchor: SNode, indices: list[ir.Stmt], container: Any) -> None:
        """Store 0 into every element of `container` inside cell `indices` of `anchor` (a serial loop)."""
        target = sparse.coordinate_node(container)
        mine, order = anchor.extents(), list(anchor.extents())
        starts: list[Any] = []
        counts: list[int] = []
        for axis, extent in target.extents().items():
            if axis in mine:
                ratio = extent // mine[axis]
                index = indices[order.index(axis)]
                starts.append(index if ratio == 1 else self.binary_values(BinaryOpKind.MUL, index, ratio))
                counts.append(ratio)
            else:
                starts.append(0)
                counts.append(extent)
        slot = self.ctx.field_slot(container)
        components = list(itertools.product(*(range(n) for n in container.element_shape)))
        total = 1
        for count in counts:
            total *= count
        loop = self.b.range_for(self.b.const(0, T.i32), self.b.const(total, T.i32), serialize=True)
        with self.b.at(loop.body):
            remaining = self.b.loop_index(loop)
            element: list[Any] = [None] * len(counts)
            for k in range(len(counts) - 1, -1, -1):
                part = remaining if k == 0 else self.binary_values(BinaryOpKind.MOD, remaining, counts[k])
                if k:
                    remaining = self.binary_values(BinaryOpKind.FLOORDIV, remaining, counts[k])
                element[k] = self.as_index(self.binary_values(BinaryOpKind.ADD, starts[k], part))
            zero = self.b.const(0, container.dtype)
            for component in components:
                ptr = self.b.global_ptr(slot, element + [self.b.const(c, T.i32) for c in component])
                self.b.global_store(ptr, zero)

    def rescale(self, a: Any, b: Any, index: Any) -> VectorValue:
        source, target = sparse.as_node(a, "wk.rescale_index()"), sparse.as_node(b, "wk.rescale_index()")
        values = self.node_indices(index)
        out = []
        for k, value in enumerate(values):
            have = source.shape[k]
            want = target.shape[k] if k < len(target.shape) else have
            out.append(self.scaled_down(value, have // want) if have >= want
                       else self.binary_values(BinaryOpKind.MUL, value, want // have))
        return VectorValue(out, len(out))
