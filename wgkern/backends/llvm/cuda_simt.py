"""CUDA lowering of `wk.simt` (ir.SimtOp), with the shared arrays of gpu_shared.py: mixed into CudaFunctionEmitter.

Shared arrays are module globals in the shared address space (addrspace 3), addressed through generic
pointers like every other access. Block barriers are `bar.sync` (the voting ones `bar.red`); warp intrinsics
are the nvvm `shfl.sync` / `vote.sync` / `match.sync` ones with the caller's mask. The subgroup is the warp
(32 lanes): its operations run over the warp's live lanes (those the block launched and that have not left the
kernel), found by a `vote.ballot.sync` over the launched lanes, which also waits for every one of them: since
Volta a warp's lanes need not run in step after divergent code (lanes that left a loop early go on alone), so
`activemask` may name only some of the lanes that will make the call, and a shuffle over it reads lanes outside
it. Reductions and scans are shuffle-up scans that only read lanes below the reader (so a partial last warp,
whose live lanes come first, is exact)."""
from __future__ import annotations

import math
from typing import Callable

from wgkern.errors import CompileError
from wgkern.ir import nodes as ir
from wgkern import dtypes as T
from wgkern.passes.analysis import FENCE_OPS, describe_simt_use

from .gpu_shared import SharedArrayLowering
from .types import float_literal, llvm_type

WARP_SIZE = 32
_COMBINE = {"add": ("add", "fadd"), "mul": ("mul", "fmul"), "and": ("and", None), "or": ("or", None),
            "xor": ("xor", None)}
_SHUFFLE_MODES = {"shuffle": "idx", "broadcast": "idx", "shuffle_xor": "bfly", "shuffle_up": "up",
                  "shuffle_down": "down", "shfl_sync": "idx", "shfl_up": "up", "shfl_down": "down",
                  "shfl_xor": "bfly"}


def _identity(op: str, dtype: T.DataType) -> str:
    if dtype.is_float:
        value = {"add": 0.0, "mul": 1.0, "min": math.inf, "max": -math.inf}[op]
        return float_literal(value, dtype)
    signed = dtype.is_signed
    value = {"add": 0, "or": 0, "xor": 0, "mul": 1, "and": -1,
             "min": 2 ** 31 - 1 if signed else -1, "max": -2 ** 31 if signed else 0}[op]
    return str(value)


class CudaSimtLowering(SharedArrayLowering):
    """Needs from the emitter: op, emit, values, value, module, label, branch, cond_branch, start_block; the
    range kernel's %tid and %gid registers.

    The subgroup operations are written once over a few target primitives (`lane`, `active_mask`, `shuffle`,
    `vote`, `wave_barrier`) and the wave's width (`wave_size`, with masks of `mask_type`): amdgpu_simt.py
    overrides those for AMD's waves of 32 or 64 lanes."""

    wave_size = WARP_SIZE
    mask_type = "i32"

    # ---- intrinsics -------------------------------------------------------------------------------------
    def call(self, name: str, ret: str, params: list[tuple[str, str]]) -> str:
        callee = self.module.intrinsic(name, ret, [p[0] for p in params])
        args = ", ".join(f"{ty} {value}" for ty, value in params)
        if ret == "void":
            self.emit(f"call void {callee}({args})")
            return ""
        return self.op(f"call {ret} {callee}({args})")

    def lane(self) -> str:
        return self.call("llvm.nvvm.read.ptx.sreg.laneid", "i32", [])

    def active_mask(self) -> str:
        return self.op('call i32 asm sideeffect "activemask.b32 $0;", "=r"()')

    def subgroup_mask(self) -> str:
        """The lanes a subgroup operation runs over: the warp's lanes that the block launched and that have not
        left the kernel (threads past a range's end leave at once). The ballot over the launched lanes waits
        for every live one of them, so the operation that follows sees the whole warp however its lanes
        diverged before (Quadrants' contract: subgroup operations are called by all the warp's lanes)."""
        lane = self.op("and i32 %tid, 31")
        launched = self.member_mask(self.op(f"sub i32 %ntid, {self.op(f'sub i32 %tid, {lane}')}"))
        return self.vote("ballot", launched, "true")

    def wave_barrier(self) -> str:
        return self.call("llvm.nvvm.bar.warp.sync", "void", [("i32", self.subgroup_mask())])

    def shuffle(self, mode: str, mask: str, value: str, dtype: T.DataType, lane_arg: str) -> str:
        """shfl.sync.<mode> of a 32-bit value (f32 or i32/u32)."""
        clamp = "0" if mode == "up" else "31"
        suffix = "f32" if dtype.is_float else "i32"
        ty = llvm_type(dtype)
        return self.call(f"llvm.nvvm.shfl.sync.{mode}.{suffix}", ty,
                         [("i32", mask), (ty, value), ("i32", lane_arg), ("i32", clamp)])

    def as_i32_flag(self, bit: str) -> str:
        return self.op(f"zext i1 {bit} to i32")

    def nonzero(self, value: str) -> str:
        return self.op(f"icmp ne i32 {value}, 0")

    def member_mask(self, launched: str) -> str:
        """The mask of the warp's first `launched` lanes (all 32 from 32 up): the members of a shuffle that every
        lane the block launched in this warp takes."""
        partial = self.op(f"sub i32 {self.op(f'shl i32 1, {launched}')}, 1")
        return self.op(f"select i1 {self.op(f'icmp uge i32 {launched}, {WARP_SIZE}')}, i32 -1, i32 {partial}")

    def vote(self, kind: str, mask: str, predicate: str) -> str:
        ret = "i32" if kind == "ballot" else "i1"
        return self.call(f"llvm.nvvm.vote.{kind}.sync", ret, [("i32", mask), ("i1", predicate)])

    def combine(self, op: str, dtype: T.DataType, a: str, b: str) -> str:
        ty = llvm_type(dtype)
        if op in ("min", "max"):
            if dtype.is_float:
                return self.call(f"llvm.{'minnum' if op == 'min' else 'maxnum'}.f32", "float",
                                 [("float", a), ("float", b)])
            kind = ("s" if dtype.is_signed else "u") + op
            return self.call(f"llvm.{kind}.i32", "i32", [("i32", a), ("i32", b)])
        integer, floating = _COMBINE[op]
        return self.op(f"{floating if dtype.is_float else integer} {ty} {a}, {b}")

    def visit_SimtOp(self, stmt: ir.SimtOp) -> None:
        group, name = stmt.op.split(".")
        if group == "thread":           # wk.global_thread_idx(): 0 in serial code, as the one thread there
            self.values[stmt] = self.op("add i32 %gid, 0") if self.thread_loop is not None else "0"
            return
        if self.thread_loop is None and stmt.op not in FENCE_OPS:
            raise CompileError(f"{describe_simt_use(stmt)} works on the threads of a parallel loop", stmt.loc)
        args = [self.value(a) for a in stmt.args]
        result = getattr(self, f"simt_{group}")(stmt, name, args)
        if stmt.dtype is not None:
            self.values[stmt] = result

    def simt_block(self, stmt: ir.SimtOp, name: str, args: list[str]) -> str:
        if name == "sync":
            return self.call("llvm.nvvm.barrier0", "void", [])
        if name in ("mem_sync", "mem_fence"):
            return self.call("llvm.nvvm.membar.cta", "void", [])
        if name == "thread_idx":
            return self.op("add i32 %tid, 0")
        if name == "global_thread_idx":
            return self.op("add i32 %gid, 0")
        reduction = {"sync_all_nonzero": "and", "sync_any_nonzero": "or", "sync_count_nonzero": "popc"}[name]
        result = self.call(f"llvm.nvvm.barrier0.{reduction}", "i32", [("i32", args[0])])
        return result if reduction == "popc" else self.as_i32_flag(self.nonzero(result))     # 0 or 1

    def simt_grid(self, stmt: ir.SimtOp, name: str, args: list[str]) -> str:
        return self.call("llvm.nvvm.membar.gl", "void", [])

    def simt_warp(self, stmt: ir.SimtOp, name: str, args: list[str]) -> str:
        if name == "active_mask":
            return self.active_mask()
        if name == "sync":
            return self.call("llvm.nvvm.bar.warp.sync", "void", [("i32", args[0])])
        if name == "ballot":
            return self.vote("ballot", "-1", self.nonzero(args[0]))
        if name in ("all_nonzero", "any_nonzero", "unique"):
            kind = {"all_nonzero": "all", "any_nonzero": "any", "unique": "uni"}[name]
            return self.as_i32_flag(self.vote(kind, args[0], self.nonzero(args[1])))
        if name == "match_any":
            return self.call("llvm.nvvm.match.any.sync.i32", "i32", [("i32", args[0]), ("i32", args[1])])
        if name == "match_all":
            pair = self.call("llvm.nvvm.match.all.sync.i32p", "{i32, i1}", [("i32", args[0]), ("i32", args[1])])
            return self.op(f"extractvalue {{i32, i1}} {pair}, 0")
        mode = _SHUFFLE_MODES[name.rsplit("_", 1)[0]]
        return self.shuffle(mode, args[0], args[1], stmt.dtype, args[2])

    def simt_subgroup(self, stmt: ir.SimtOp, name: str, args: list[str]) -> str:
        if name in ("barrier", "sync"):
            return self.wave_barrier()
        if name in ("memory_barrier", "mem_fence"):
            return self.simt_block(stmt, "mem_fence", args)
        if f"subgroup.{name}" == ir.TILE_SUBGROUP_CHECK:
            # a register tile needs N <= 32 invocations per subgroup: CUDA's warp is always 32 and AMDGPU's wave
            # 32 or 64, known here, so nothing is checked at run time (WGSL's driver-chosen size is, simt.py)
            size = stmt.args[0].value
            if size > self.wave_size:
                raise CompileError(f"wk.simt.Tile{size}x{size} needs a subgroup of {size} invocations; this "
                                   f"target's has {self.wave_size}", stmt.loc)
            return ""
        if name == "group_size":
            return str(self.wave_size)
        if name == "invocation_id":
            return self.lane()
        mask = self.subgroup_mask()
        mty = self.mask_type
        first = self.call(f"llvm.cttz.{mty}", mty, [(mty, mask), ("i1", "true")])
        if mty != "i32":
            first = self.op(f"trunc {mty} {first} to i32")
        if name == "elect":
            return self.as_i32_flag(self.op(f"icmp eq i32 {self.lane()}, {first}"))
        if name == "ballot":            # the wave's lanes, zero-extended to the u64 of Quadrants' ballot
            votes = self.vote("ballot", mask, self.nonzero(args[0]))
            return votes if mty == "i64" else self.op(f"zext {mty} {votes} to i64")
        if name in ("all_true", "any_true"):
            return self.as_i32_flag(self.vote("all" if name == "all_true" else "any", mask, self.nonzero(args[0])))
        if name == "broadcast_first":
            return self.shuffle("idx", mask, args[0], stmt.dtype, first)
        if name == "all_equal":
            dtype = stmt.args[0].dtype
            leader = self.shuffle("idx", mask, args[0], dtype, first)
            same = self.op(f"{'fcmp oeq' if dtype.is_float else 'icmp eq'} {llvm_type(dtype)} {args[0]}, {leader}")
            return self.as_i32_flag(self.vote("all", mask, same))
        if name in _SHUFFLE_MODES:
            return self.shuffle(_SHUFFLE_MODES[name], mask, args[0], stmt.dtype, args[1])
        kind, op = name.split("_")
        dtype = stmt.dtype
        scan = self.inclusive_scan(op, dtype, mask, args[0])
        if kind == "inclusive":
            return scan
        if kind == "exclusive":
            shifted = self.shuffle("up", mask, scan, dtype, "1")
            first_lane = self.op(f"icmp eq i32 {self.lane()}, 0")
            return self.op(f"select i1 {first_lane}, {llvm_type(dtype)} {_identity(op, dtype)}, "
                           f"{llvm_type(dtype)} {shifted}")
        leading = self.call(f"llvm.ctlz.{mty}", mty, [(mty, mask), ("i1", "true")])
        if mty != "i32":
            leading = self.op(f"trunc {mty} {leading} to i32")
        last = self.op(f"sub i32 {self.wave_size - 1}, {leading}")
        return self.shuffle("idx", mask, scan, dtype, last)

    def inclusive_scan(self, op: str, dtype: T.DataType, mask: str, value: str) -> str:
        """Hillis-Steele over the wave: step d adds the value d lanes below, where there is one."""
        lane = self.lane()
        ty = llvm_type(dtype)
        for step in (1 << k for k in range(self.wave_size.bit_length() - 1)):
            below = self.shuffle("up", mask, value, dtype, str(step))
            combined = self.combine(op, dtype, value, below)
            has_below = self.op(f"icmp uge i32 {lane}, {step}")
            value = self.op(f"select i1 {has_below}, {ty} {combined}, {ty} {value}")
        return value

    # ---- register reductions (gpu_codegen.flush_chunk_reductions) ---------------------------------------
    def shuffle_bits(self, mode: str, mask: str, value: str, dtype: T.DataType, lane_arg: str) -> str:
        """`shuffle` of a 32- or 64-bit value of any type: a 64-bit one as two 32-bit shuffles of its halves."""
        if dtype.bits == 32:
            return self.shuffle(mode, mask, value, dtype, lane_arg)
        ty = llvm_type(dtype)
        wide = self.op(f"bitcast {ty} {value} to i64") if dtype.is_float else value
        halves = (self.op(f"trunc i64 {wide} to i32"), self.op(f"trunc i64 {self.op(f'lshr i64 {wide}, 32')} to i32"))
        low, high = (self.op(f"zext i32 {self.shuffle(mode, mask, half, T.u32, lane_arg)} to i64") for half in halves)
        joined = self.op(f"or i64 {self.op(f'shl i64 {high}, 32')}, {low}")
        return self.op(f"bitcast i64 {joined} to {ty}") if dtype.is_float else joined

    def wave_total(self, value: str, dtype: T.DataType, combine: Callable[[str, str], str]) -> tuple[str, str]:
        """(`value` combined over the lanes of this thread's wave, valid in the wave's first lane; whether this
        lane is that one), for code that every thread of the block reaches (a range kernel's end). A shuffle-down
        tree: step d combines the value d lanes up where that lane was launched, so after the steps W/2 ... 1 the
        first lane holds all W. A block's threads fill its waves in order, lane = %tid mod W, so the launched lanes
        of a wave are its first %ntid - (%tid - lane): a partial wave (a block size that is no multiple of W)
        combines only those. The shuffles come from the target (`shuffle`, `member_mask`, `wave_size`)."""
        wave = self.wave_size
        ty = llvm_type(dtype)
        lane = self.op(f"and i32 %tid, {wave - 1}")
        launched = self.op(f"sub i32 %ntid, {self.op(f'sub i32 %tid, {lane}')}")
        mask = self.member_mask(launched)
        step = wave // 2
        while step:
            other = self.shuffle_bits("down", mask, value, dtype, str(step))
            present = self.op(f"icmp ult i32 {self.op(f'add i32 {lane}, {step}')}, {launched}")
            value = self.op(f"select i1 {present}, {ty} {combine(value, other)}, {ty} {value}")
            step //= 2
        return value, self.op(f"icmp eq i32 {lane}, 0")
