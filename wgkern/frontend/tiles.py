"""Kernel syntax of Quadrants' register tiles (lang/simt/tile.py): slices of a 2-D or 3-D field, ndarray or shared
array (`a[r0:r1, c0:c1]`, `a[b, r0:r1, c0:c1]`, a column `a[r0:r1, c]`), loaded into a tile with `t[:] = slice`,
stored with `slice = t`, and `t -= wk.outer(u, v)`. Each becomes a call of one of the tile's @wk.func methods
(`load_rows`, `store_rows`, `column_value`, `subtract_outer`); a slice is only a description of its bounds until
then, and a slice used anywhere else is a CompileError. Each call that makes a tile (`Tile16x16.zeros()`, `.eye()`)
is preceded by the check that the subgroup holds the tile's rows (ir.TILE_SUBGROUP_CHECK)."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from wgkern.errors import CompileError
from wgkern.frontend.scope import StructVar
from wgkern.frontend.values import NdarrayRef, StructValue, describe
from wgkern.frontend.shared_arrays import SharedArrayRef
from wgkern.ir import nodes as ir
from wgkern.lang import types as T
from wgkern.lang.simt import tile as tiles

_SLICE_FORMS = "a[r0:r1, c0:c1], a[b, r0:r1, c0:c1], a[r0:r1, c] or a[b, r0:r1, c]"


@dataclass(eq=False)
class TileSlice:
    """A tile slice of `source`: rows [row_start, row_stop) and columns [col_start, col_stop) or the column `col`,
    after the index `batch` of a 3-D source (None for a 2-D one)."""
    source: Any
    label: str
    batch: Any
    row_start: Any
    row_stop: Any
    col_start: Any = None
    col_stop: Any = None
    col: Any = None

    @property
    def is_column(self) -> bool:
        return self.col_start is None


class TileMixin:
    def is_tile_source(self, base: Any) -> bool:
        return isinstance(base, (NdarrayRef, SharedArrayRef)) or self.is_container(base)

    def tile_slice(self, base: Any, elements: list[ast.expr], label: str) -> TileSlice:
        """`base[elements]` where some element is a slice: one of the tile slice forms."""
        kinds = [isinstance(e, ast.Slice) for e in elements]
        if kinds not in ([True, True], [False, True, True], [True, False], [False, True, False]):
            raise CompileError(f"slicing '{label}' in a kernel makes a tile slice: {_SLICE_FORMS}")
        batch = self.rvalue(elements[0]) if not kinds[0] else None
        rows = elements[1] if batch is not None else elements[0]
        row_start, row_stop = self.slice_bounds(rows, "row", label)
        last = elements[-1]
        if isinstance(last, ast.Slice):
            col_start, col_stop = self.slice_bounds(last, "column", label)
            return TileSlice(base, label, batch, row_start, row_stop, col_start, col_stop)
        return TileSlice(base, label, batch, row_start, row_stop, col=self.rvalue(last))

    def slice_bounds(self, node: ast.Slice, what: str, label: str) -> tuple[Any, Any]:
        if node.lower is None or node.upper is None or node.step is not None:
            raise CompileError(f"a tile slice of '{label}' needs both {what} bounds and no step ({what} "
                               "start:stop)")
        return self.rvalue(node.lower), self.rvalue(node.upper)

    # ---- statements -------------------------------------------------------------------------------------------
    def tile_assignment(self, target: ast.expr, value: Any) -> bool:
        """`t[:] = a[r0:r1, c0:c1]` (load) or `a[r0:r1, c0:c1] = t` (store); False for other assignments."""
        if not isinstance(target, ast.Subscript):
            return False
        tile = self.tile_variable(target.value)
        if tile is not None and isinstance(target.slice, ast.Slice):
            if target.slice.lower is not None or target.slice.upper is not None or target.slice.step is not None:
                raise CompileError(f"a tile is loaded whole: {ast.unparse(target.value)}[:] = {_SLICE_FORMS}")
            if not isinstance(value, TileSlice) or value.is_column:
                raise CompileError(f"{ast.unparse(target.value)}[:] loads a tile from a slice a[r0:r1, c0:c1] "
                                   f"(or a[b, r0:r1, c0:c1]), not {describe(value)}")
            self.call_tile_method(tile, "load_rows", value.source, value.batch, value.row_start, value.row_stop,
                                  value.col_start, value.col_stop)
            return True
        if isinstance(value, StructValue) and tiles.is_tile_type(value.stype):
            place = self.visit(target)
            if not isinstance(place, TileSlice) or place.is_column:
                raise CompileError(f"a tile is stored into a slice a[r0:r1, c0:c1] (or a[b, r0:r1, c0:c1]), not "
                                   f"{ast.unparse(target)}")
            self.call_tile_method(value, "store_rows", place.source, place.batch, place.row_start, place.row_stop,
                                  place.col_start, place.col_stop)
            return True
        return False

    def tile_update(self, node: ast.AugAssign) -> bool:
        """`t -= wk.outer(u, v)`; False where the target is not a tile variable."""
        tile = self.tile_variable(node.target)
        if tile is None:
            return False
        update = self.rvalue(node.value)
        if not isinstance(node.op, ast.Sub) or not isinstance(update, tiles.OuterProduct):
            raise CompileError(f"a tile takes `{ast.unparse(node.target)} -= wk.outer(u, v)` as its one update, "
                               f"not {type(node.op).__name__.lower()} {describe(update)}")
        u = self.tile_operand(tile, update.u)
        v = u if update.v is update.u else self.tile_operand(tile, update.v)
        self.call_tile_method(tile, "subtract_outer", u, v)
        return True

    def outer_product(self, node: ast.Call) -> tiles.OuterProduct:
        if len(node.args) != 2 or node.keywords:
            raise CompileError("wk.outer(u, v) takes two values (one per invocation) or column slices a[r0:r1, c]")
        u_node, v_node = node.args
        u = self.rvalue(u_node)
        same = isinstance(u_node, ast.Name) and isinstance(v_node, ast.Name) and u_node.id == v_node.id
        return tiles.OuterProduct(u, u if same else self.rvalue(v_node))

    def tile_operand(self, tile: StructVar, value: Any) -> Any:
        """One value per invocation: a column slice is read (0 past its rows), anything else taken as it is."""
        if isinstance(value, TileSlice):
            if not value.is_column:
                raise CompileError(f"wk.outer(...) takes a column a[r0:r1, c] of '{value.label}', not a block")
            return self.call_tile_method(tile, "column_value", value.source, value.batch, value.row_start,
                                         value.row_stop, value.col)
        return value

    def check_tile_subgroup(self, callee: Any) -> None:
        """Before `callee` when it makes a tile (`wk.simt.Tile16x16.zeros()` / `.eye()`): an ir.SimtOp that checks
        the subgroup has the tile's N invocations, at the line of this call (the line an error names)."""
        size = tiles.tile_size_made_by(callee)
        if size is not None:
            self.b.insert(ir.SimtOp(op=ir.TILE_SUBGROUP_CHECK, args=[self.b.const(size, T.i32)], dtype=None))

    # ---- helpers ----------------------------------------------------------------------------------------------
    def tile_variable(self, node: ast.expr) -> StructVar | None:
        """The tile variable `node` names, else None."""
        var = self.struct_var_of(node)
        return var if var is not None and tiles.is_tile_type(var.stype) else None

    def call_tile_method(self, tile: StructVar | StructValue, name: str, *args: Any) -> Any:
        from wgkern.frontend.func_calls import _ByReference
        method = tile.stype.methods[name]
        receiver = _ByReference(tile) if isinstance(tile, StructVar) else tile
        bound = method.signature.bind(receiver, *args)
        bound.apply_defaults()
        return self.inline(method, bound.arguments)
