"""`wk.simt` calls in kernel code: each intrinsic becomes one `ir.SimtOp` (operands cast to the types the op
takes, the result typed as Taichi types it), `SharedArray(shape, dtype)` a 'shared' container slot indexed
like a field, and `loop_config(block_dim=N)` is checked here; the register tiles' syntax comes with TileMixin
(frontend/tiles.py). Which arch lowers what is the backends' business
(the CPU backend refuses every simt op but wk.global_thread_idx(), naming its line)."""
from __future__ import annotations

from typing import Any

import numpy as np

from wgkern.errors import CompileError
from wgkern.frontend.tiles import TileMixin
from wgkern.frontend.values import VectorValue, describe, is_runtime
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind
from wgkern.lang import types as T
from wgkern.lang.simt import SIMT_CALLS
from wgkern.lang.simt._intrinsic import params_of
from wgkern.lang.simt.block import SharedArray
from wgkern.frontend.shared_arrays import SharedArrayRef

# Ops whose result is i32; the others return their first operand's dtype (f32 / i32 for the warp's _f32 / _i32
# shuffles) or, in _NO_RESULT, nothing.
_I32_RESULT = frozenset({
    "block.thread_idx", "block.global_thread_idx", "block.sync_all_nonzero", "block.sync_any_nonzero",
    "block.sync_count_nonzero", "subgroup.elect", "subgroup.all_true", "subgroup.any_true", "subgroup.all_equal",
    "subgroup.group_size", "subgroup.invocation_id", "warp.all_nonzero", "warp.any_nonzero", "warp.unique",
    "warp.ballot", "warp.match_any", "warp.match_all", "warp.active_mask", "thread.global_thread_idx",
})
_NO_RESULT = frozenset({"block.sync", "block.mem_sync", "block.mem_fence", "grid.memfence", "grid.mem_fence",
                        "subgroup.barrier", "subgroup.memory_barrier", "subgroup.sync", "subgroup.mem_fence",
                        "warp.sync"})
# Operands by parameter name: the dtype each is cast to (None: the value's own 32-bit dtype).
_OPERAND_DTYPES: dict[str, T.DataType | None] = {
    "predicate": T.i32, "cond": T.i32, "index": T.i32, "offset": T.i32, "mask": T.u32, "value": None,
    "val": None,
}
# Ops whose value operand is an integer only (bitwise combinations).
_INT_ONLY = frozenset(f"subgroup.{kind}_{op}" for kind in ("reduce", "inclusive", "exclusive")
                      for op in ("and", "or", "xor"))
SUBGROUP_VALUE_DTYPES = (T.i32, T.u32, T.f32)
# Quadrants' sized subgroup operations, op(value, log2_size): over each group of 2**log2_size consecutive
# invocations, unrolled here into the subgroup's shuffles. "down": a shuffle_down tree, the result on the group's
# first invocation; "all": a shuffle_xor butterfly, the result on all of them; "inclusive" / "exclusive": a
# shuffle_up (Hillis-Steele) scan that stays in the group; "vote": the butterfly over i32(value != 0).
# Taichi's unsized forms (reduce_add(v), all_true(c), inclusive_add(v), ...) stay whole-subgroup operations.
_COMBINE = {"add": BinaryOpKind.ADD, "mul": BinaryOpKind.MUL, "min": BinaryOpKind.MIN, "max": BinaryOpKind.MAX,
            "and": BinaryOpKind.BIT_AND, "or": BinaryOpKind.BIT_OR, "xor": BinaryOpKind.BIT_XOR}
_SIZED: dict[str, tuple[str, str]] = {
    **{f"subgroup.reduce_{k}": ("down", k) for k in ("add", "min", "max")},
    **{f"subgroup.reduce_all_{k}": ("all", k) for k in ("add", "min", "max")},
    **{f"subgroup.inclusive_{k}": ("inclusive", k) for k in _COMBINE},
    **{f"subgroup.exclusive_{k}": ("exclusive", k) for k in _COMBINE},
    "subgroup.all_true": ("vote", "and"), "subgroup.any_true": ("vote", "or"), "subgroup.all_equal": ("equal", "and"),
}
# The value the sized exclusive scans give a group's first invocation (min / max take it as an argument, or in
# the _tiled spelling get the type's largest / smallest value).
_EXCLUSIVE_IDENTITY = {"add": 0, "mul": 1, "or": 0, "xor": 0, "and": -1}
# Quadrants 1.3's names of the sized forms: op_tiled(value, log2_size) is op(value, log2_size).
_TILED = {f"{op}_tiled": op for op in _SIZED}
# segmented_reduce_<op>_tiled(value, head_flag, log2_size): an inclusive scan within each group that restarts at
# every invocation whose head_flag is nonzero (the group's first is always a start).
_SEGMENTED = {f"subgroup.segmented_reduce_{k}_tiled": k for k in ("add", "min", "max")}


def extreme(dtype: T.DataType, largest: bool) -> Any:
    """The largest (or smallest) value of a 32-bit subgroup dtype: infinities for f32."""
    if dtype.is_float:
        return float("inf") if largest else float("-inf")
    if dtype.is_signed:
        return 2 ** 31 - 1 if largest else -2 ** 31
    return 2 ** 32 - 1 if largest else 0


class SimtMixin(TileMixin):
    def checked_block_dim(self, value: Any) -> int:
        """N of loop_config(block_dim=N): a compile-time int from 1 up; each GPU backend checks it against its
        own limit (the adapter's invocations per workgroup, CUDA's 1024), the CPU backend ignores it."""
        if is_runtime(value) or isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise CompileError(f"block_dim must be a compile-time int, got {describe(value)}")
        value = int(value)
        if value < 1:
            raise CompileError(f"block_dim={value} is out of range: a block has at least 1 thread")
        return value

    def simt_call(self, callee: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if callee is SharedArray:
            return self.shared_array(args, kwargs)
        op = SIMT_CALLS[callee]
        if op in _SIZED and len(args) + len(kwargs) >= 2:
            return self.sized_subgroup_op(op, args, kwargs)
        if op in _TILED:
            if "predicate" in kwargs:          # the tiled votes name their value 'predicate'
                kwargs["value"] = kwargs.pop("predicate")
            return self.sized_subgroup_op(_TILED[op], args, kwargs, spelled=op)
        if op in _SEGMENTED:
            return self.segmented_subgroup_op(op, args, kwargs)
        params = params_of(callee)
        values = list(args)
        for name in params[len(values):]:
            if name not in kwargs:
                raise CompileError(f"wk.simt.{op}() takes ({', '.join(params)}); '{name}' is missing")
            values.append(kwargs.pop(name))
        if kwargs or len(values) != len(params):
            raise CompileError(f"wk.simt.{op}() takes ({', '.join(params)}), got {len(args)} positional "
                               f"argument(s){' and ' + ', '.join(kwargs) if kwargs else ''}")
        operands = [self.simt_operand(op, name, value) for name, value in zip(params, values)]
        if op in _NO_RESULT:
            dtype = None
        elif op in _I32_RESULT:
            dtype = T.i32
        elif op == "subgroup.ballot":
            dtype = T.u64
        elif op.endswith("_i32"):
            dtype = T.i32
        elif op.endswith("_f32"):
            dtype = T.f32
        else:
            dtype = operands[0].dtype
        return self.b.insert(ir.SimtOp(op=op, args=operands, dtype=dtype))

    def sized_subgroup_op(self, op: str, args: list[Any], kwargs: dict[str, Any], spelled: str = "") -> ir.Stmt:
        """op(value, log2_size) of _SIZED (exclusive_min/max: (value, log2_size, identity), or without the identity
        where `spelled` is the _tiled name the call used). 2**log2_size must not exceed the subgroup's size
        (group_size(); 8 on lavapipe)."""
        shape, name = _SIZED[op]
        needs_identity = shape == "exclusive" and name in ("min", "max") and not spelled
        names = ("value", "log2_size") + (("identity",) if needs_identity else ())
        op = spelled or op
        values = dict(zip(names, args))
        if len(args) > len(names) or set(kwargs) - set(names) or set(kwargs) & set(values) \
                or len(values) + len(kwargs) != len(names):
            raise CompileError(f"wk.simt.{op}() takes ({', '.join(names)})")
        values.update(kwargs)
        size = self.log2_size(op, values["log2_size"])
        b = self.b
        kind = _COMBINE[name]
        if shape in ("vote", "equal"):
            value = self.simt_operand(op, "value", values["value"])
            if shape == "equal":      # compare with the group's first invocation's value
                base = b.binary(BinaryOpKind.BIT_AND, self.subgroup_lane(), b.const(-(1 << size), T.i32))
                value = b.binary(BinaryOpKind.CMP_EQ, value, self.shuffle("shuffle", value, base))
            value = b.cast(b.binary(BinaryOpKind.CMP_NE, value, b.const(0, value.dtype)), T.i32)
            shape = "all"
        else:
            value = self.simt_operand(op, "value", values["value"])
        if name in ("and", "or", "xor") and not value.dtype.is_int:
            raise CompileError(f"wk.simt.{op}() combines integer bits, got {value.dtype.name}")
        if shape in ("inclusive", "exclusive"):
            in_group = b.binary(BinaryOpKind.BIT_AND, self.subgroup_lane(), b.const((1 << size) - 1, T.i32))
            if shape == "exclusive":     # shift by one invocation, the identity on each group's first
                if "identity" in values:
                    identity = b.cast(self.as_scalar(self.as_value(values["identity"])), value.dtype)
                elif name in ("min", "max"):
                    identity = b.const(extreme(value.dtype, largest=name == "min"), value.dtype)
                else:
                    identity = b.cast(b.const(_EXCLUSIVE_IDENTITY[name], T.i32), value.dtype)
                first = b.binary(BinaryOpKind.CMP_EQ, in_group, b.const(0, T.i32))
                value = b.select(first, identity, self.shuffle("shuffle_up", value, b.const(1, T.i32)))
            for step in range(size):
                partner = self.shuffle("shuffle_up", value, b.const(1 << step, T.i32))
                inside = b.binary(BinaryOpKind.CMP_GE, in_group, b.const(1 << step, T.i32))
                value = b.select(inside, b.binary(kind, value, partner), value)
            return value
        for step in range(size):
            if shape == "down":      # halving distances: the group's first invocation gathers all
                partner = self.shuffle("shuffle_down", value, b.const(1 << (size - 1 - step), T.i32))
            else:                    # butterfly: every invocation ends with the whole group's value
                partner = self.shuffle("shuffle_xor", value, b.const(1 << step, T.u32))
            value = b.binary(kind, value, partner)
        return value

    def log2_size(self, op: str, size: Any) -> int:
        if is_runtime(size) or isinstance(size, bool) or not isinstance(size, (int, np.integer)) \
                or not 0 <= size <= 7:
            raise CompileError(f"wk.simt.{op}(): log2_size must be a compile-time int from 0 to 7 (groups of up to "
                               f"128 invocations), got {describe(size)}")
        return int(size)

    def segmented_subgroup_op(self, op: str, args: list[Any], kwargs: dict[str, Any]) -> ir.Stmt:
        """segmented_reduce_<add|min|max>_tiled(value, head_flag, log2_size): each invocation combines the values
        from its segment's start (the nearest invocation at or below it in its group whose head_flag is nonzero,
        else the group's first) up to itself. The start is found by a max-scan of the head positions in the group,
        then a scan whose step d takes the invocation d below only where the start is at least d below."""
        names = ("value", "head_flag", "log2_size")
        values = dict(zip(names, args))
        if len(args) > len(names) or set(kwargs) - set(names) or set(kwargs) & set(values) \
                or len(values) + len(kwargs) != len(names):
            raise CompileError(f"wk.simt.{op}() takes ({', '.join(names)})")
        values.update(kwargs)
        size = self.log2_size(op, values["log2_size"])
        value = self.simt_operand(op, "value", values["value"])
        head = self.simt_operand(op, "predicate", values["head_flag"])
        b = self.b
        in_group = b.binary(BinaryOpKind.BIT_AND, self.subgroup_lane(), b.const((1 << size) - 1, T.i32))
        start = b.select(b.binary(BinaryOpKind.CMP_NE, head, b.const(0, T.i32)), in_group, b.const(0, T.i32))
        for step in range(size):       # the largest head position at or below each invocation, in its group
            partner = self.shuffle("shuffle_up", start, b.const(1 << step, T.i32))
            inside = b.binary(BinaryOpKind.CMP_GE, in_group, b.const(1 << step, T.i32))
            start = b.select(inside, b.binary(BinaryOpKind.MAX, start, partner), start)
        distance = b.binary(BinaryOpKind.SUB, in_group, start)
        kind = _COMBINE[_SEGMENTED[op]]
        for step in range(size):
            partner = self.shuffle("shuffle_up", value, b.const(1 << step, T.i32))
            reach = b.binary(BinaryOpKind.CMP_GE, distance, b.const(1 << step, T.i32))
            value = b.select(reach, b.binary(kind, value, partner), value)
        return value

    def subgroup_lane(self) -> ir.Stmt:
        return self.b.insert(ir.SimtOp(op="subgroup.invocation_id", args=[], dtype=T.i32))

    def shuffle(self, name: str, value: ir.Stmt, lane: ir.Stmt) -> ir.Stmt:
        return self.b.insert(ir.SimtOp(op=f"subgroup.{name}", args=[value, lane], dtype=value.dtype))

    def simt_operand(self, op: str, name: str, value: Any) -> ir.Stmt:
        scalar = self.as_value(value)
        if isinstance(scalar, VectorValue):
            raise CompileError(f"wk.simt.{op}() takes a scalar '{name}', got {describe(scalar)}")
        scalar = self.as_scalar(scalar)
        wanted = _OPERAND_DTYPES[name]
        if op.endswith("_i32") and name == "val":
            wanted = T.i32
        elif op.endswith("_f32") and name == "val":
            wanted = T.f32
        if wanted is not None:
            if wanted.is_int and scalar.dtype.is_float:
                raise CompileError(f"wk.simt.{op}(): '{name}' must be an integer, got {scalar.dtype.name}")
            return self.b.cast(scalar, wanted)
        if scalar.dtype.is_bool or (scalar.dtype.is_int and scalar.dtype.bits < 32):
            scalar = self.b.cast(scalar, T.i32)
        if scalar.dtype not in SUBGROUP_VALUE_DTYPES:
            raise CompileError(f"wk.simt.{op}() exchanges 32-bit values (i32, u32, f32), got {scalar.dtype.name}")
        if op in _INT_ONLY and not scalar.dtype.is_int:
            raise CompileError(f"wk.simt.{op}() combines integer bits, got {scalar.dtype.name}")
        return scalar

    def shared_array(self, args: list[Any], kwargs: dict[str, Any]) -> SharedArrayRef:
        names = ("shape", "dtype")
        values = dict(zip(names, args))
        if len(args) > 2 or any(name in values for name in kwargs) or set(kwargs) - set(names) \
                or len(values) + len(kwargs) != 2:
            raise CompileError("wk.simt.block.SharedArray(shape, dtype) takes a shape and a dtype")
        values.update(kwargs)
        shape, dtype = values["shape"], values["dtype"]
        if isinstance(shape, int) and not isinstance(shape, bool):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or not shape or any(
                is_runtime(n) or isinstance(n, bool) or not isinstance(n, int) or n <= 0 for n in shape):
            raise CompileError(f"SharedArray's shape must be a positive compile-time int or tuple of them, got "
                               f"{shape!r}")
        if isinstance(dtype, T.VectorType):
            element_shape, scalar = dtype.element_shape, dtype.dtype
        else:
            element_shape, scalar = (), self.as_dtype(dtype)
        if self.at_parallel_level():
            raise CompileError("SharedArray is made inside a kernel's parallel loop (a block's threads share it)")
        self.ctx.shared_arrays += 1
        full = tuple(int(n) for n in shape) + element_shape
        line = self.b.loc.lineno if self.b.loc is not None else 0
        slot = ir.ContainerSlot(name=f"SharedArray{self.ctx.shared_arrays}@{line}", kind="shared", dtype=scalar,
                                ndim=len(full), shape=full, loc=self.b.loc)
        return SharedArrayRef(slot, tuple(int(n) for n in shape), element_shape)
