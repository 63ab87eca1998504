"""Range checks of global accesses in WGSL: the same rule as the LLVM backends (backends/llvm/bounds.py).

An access that passes/index_ranges.py cannot prove inside its container gets `let inside = ...`: its flat
element offset lies in [0, element count). The access goes to that offset clamped to the container's last
element (memory.py), so a read of an arena binding stays in the container's own slot and a load is issued
without waiting for the test, which then selects 0 where it fails; a store or atomic runs under `if (inside)`.
The clamp is one `min` on the address's dependency chain where selecting the offset by the test put the whole
test there (on an H200, serial shaders are latency-bound: Genesis's spent a third of their time in checks).
WebGPU's robust buffer access alone would not do: it only keeps an access inside the bound buffer, and a packed
kernel binds an arena holding many containers (arena.py); on Vulkan without robustBufferAccess2 naga clamps the
index (`Restrict`), so a write past the end overwrites the last element.
WGSL integers are 32-bit, so the offset of a multi-axis access is computed in i32; to keep that sum from
wrapping, each index term `index * stride` must lie within +-(2^31 - 1) / ndim, else the access counts as
out of range. The LLVM backends compute the offset in 64 bits instead; the two differ only for accesses with
indices beyond that bound on several axes whose terms cancel. debug=True keeps its per-axis check (codegen)."""
from __future__ import annotations

import math

from wgkern.ir import nodes as ir

I32_MAX = (1 << 31) - 1


class BoundsLowering:
    """Mixin for codegen.WgslCodegen: the `inside` bit of an unproven access and the guarded forms."""

    def range_guard(self, stmt: ir.GlobalPtr, offset: str) -> str:
        """Emit `let inside = ...;` for `stmt`, whose flat offset (`self._flat_offset(stmt)`) is the value
        `offset`; returns the name. What depends on the launch arguments alone (strides, the element count,
        the per-axis bounds) is a task invariant (codegen.invariant), computed once per invocation. Where the
        last axes' indices are proven inside their axes (a vector or matrix component), the test is on the
        offset over the other axes against their element count (passes/index_ranges.py gives the argument):
        the same expression for every component read at one index, which the driver computes once."""
        slot = stmt.container
        ndim = len(stmt.indices) - self.trailing_in_range.get(stmt, 0)
        if ndim < len(stmt.indices):
            offset = self._flat_offset(stmt, ndim)
        conditions = []
        if ndim >= 2:
            for axis, index in enumerate(stmt.indices[:ndim]):
                factors = self._strides(slot, axis, ndim)
                if slot.shape is not None or not factors:
                    stride = math.prod(slot.shape[axis + 1:ndim]) if slot.shape is not None else 1
                    bound = I32_MAX // (ndim * max(stride, 1))
                    if isinstance(index, ir.Const) and abs(int(index.value)) <= bound:
                        continue
                    conditions.append(f"bitcast<u32>({self.value(index)} + {bound}i) <= {2 * bound}u")
                else:
                    bound = self.invariant(f"{I32_MAX // ndim}u / u32({' * '.join(factors)})", "wk_bound")
                    term_ok = f"bitcast<u32>({self.value(index)} + bitcast<i32>({bound})) <= 2u * {bound}"
                    if isinstance(index, ir.Const):     # a vector component, a fixed row: one test per task
                        if int(index.value) == 0:      # 0 * stride is no term at all
                            continue
                        term_ok = self.invariant(term_ok, "wk_term_ok")
                    conditions.append(term_ok)
        conditions.append(f"bitcast<u32>({offset}) < {self._element_count(slot, ndim)}")
        if len(conditions) > 1:     # one line each, to keep the shader readable
            names = [self.fresh("term_ok") for _ in conditions[:-1]]
            for name, condition in zip(names, conditions):
                self.emit(f"let {name} = {condition};")
                self.declare_local(name, "bool")
            conditions = [*names, conditions[-1]]
        inside = self.fresh("inside")
        self.emit(f"let {inside} = ({') && ('.join(conditions)});")
        self.declare_local(inside, "bool")
        self.guards[stmt] = inside
        return inside

    def masked(self, condition: str | None) -> str | None:
        """`condition` and the lane mask of masked lanes (codegen.py, _emit_range_main), either may be None."""
        mask = self.lane_mask
        if mask is None or condition is None:
            return condition if mask is None else mask
        return f"({mask} && {condition})"

    def guarded_value(self, stmt: ir.Stmt, ptr: ir.GlobalPtr, register_type: str, zero: str, expr: str) -> None:
        """`stmt`'s value is `expr` (an atomic or a load through `ptr`) where ptr is inside, else `zero`; an
        atomic runs only there (and only in an active lane)."""
        inside = self.masked(self.guards.get(ptr))
        if inside is None:
            self.let(stmt, expr)
            return
        name = self.fresh()
        self.emit(f"var {name}: {register_type} = {zero};")
        self.emit(f"if ({inside}) {{ {name} = {expr}; }}")
        self.names[stmt] = name

    def guarded_statement(self, ptr: ir.GlobalPtr, line: str) -> None:
        """`line` (a store or an atomic whose result is unused) only where `ptr` is inside (and only in an active
        lane)."""
        inside = self.masked(self.guards.get(ptr))
        self.emit(line if inside is None else f"if ({inside}) {{ {line} }}")
