"""AMDGPU lowering of `wk.simt` (ir.SimtOp): cuda_simt.py's operations over AMD's wave primitives, mixed into
AmdgpuFunctionEmitter.

The subgroup is the wave: 64 lanes on gfx90a, 32 on gfx1100 (the target's `wave_size`), so `group_size()` is 64
or 32 and reductions and scans run over the whole wave. The primitives cuda_simt.py's operations are written
over are spelled here: the lane is `mbcnt.lo/hi` of an all-ones mask, the active mask `ballot(true)`, a shuffle
`ds.bpermute` from a computed source lane (keeping the lane's own value where CUDA's `shfl.sync` clamps), a vote
a `ballot` compared with the active mask. `wk.simt.warp` keeps CUDA's 32-lane warp and 32-bit masks: on a wave64
processor each half of the wave is one warp (lanes 0-31 and 32-63), its masks and shuffles confined to the
half. `match_any` / `match_all`, which AMD has no instruction for, compare with each of the warp's 32 lanes.
Block barriers are `s.barrier` between workgroup fences; the voting ones count the participating threads and
those with a nonzero value in an LDS word (`wk_vote`)."""
from __future__ import annotations

from wgkern import dtypes as T
from wgkern.ir import nodes as ir

from .cuda_simt import WARP_SIZE, CudaSimtLowering
from .types import llvm_type

_VOTE_WORD = "@wk_vote"
_VOTED = 1 << 16            # a thread adds 1 (it took part) plus _VOTED when its value is nonzero: <= 1024 each


class AmdgpuSimtLowering(CudaSimtLowering):
    """CudaSimtLowering with AMD's primitives; the emitter's target supplies the wave's width."""

    @property
    def wave_size(self) -> int:
        return self.module.target.wave_size

    @property
    def mask_type(self) -> str:
        return f"i{self.wave_size}"

    # ---- primitives -------------------------------------------------------------------------------------
    def lane(self) -> str:
        low = self.call("llvm.amdgcn.mbcnt.lo", "i32", [("i32", "-1"), ("i32", "0")])
        if self.wave_size == 32:
            return low
        return self.call("llvm.amdgcn.mbcnt.hi", "i32", [("i32", "-1"), ("i32", low)])

    def ballot(self, predicate: str) -> str:
        """The wave's lanes where `predicate` holds, as a mask_type; inactive lanes are 0."""
        return self.call(f"llvm.amdgcn.ballot.{self.mask_type}", self.mask_type, [("i1", predicate)])

    def active_mask(self) -> str:
        return self.ballot("true")

    def subgroup_mask(self) -> str:
        """A wave runs in lockstep under its exec mask: the active lanes are the ones making the call."""
        return self.active_mask()

    def wave_barrier(self) -> str:
        return self.call("llvm.amdgcn.wave.barrier", "void", [])

    def member_mask(self, launched: str) -> str:
        """ds_bpermute takes no mask: the wave's EXEC mask holds the lanes that run."""
        return "-1"

    def half(self, wave_mask: str) -> str:
        """The 32 bits of a wave64 mask that belong to this lane's warp (its half of the wave)."""
        shift = self.op(f"zext i32 {self.op(f'and i32 {self.lane()}, 32')} to i64")
        return self.op(f"trunc i64 {self.op(f'lshr i64 {wave_mask}, {shift}')} to i32")

    def shuffle(self, mode: str, mask: str, value: str, dtype: T.DataType, lane_arg: str,
                width: int | None = None) -> str:
        """`value` of another lane within this lane's group of `width` lanes (the wave by default): `idx` reads
        lane `lane_arg` mod width, `up` / `down` / `bfly` read lane - d, lane + d, lane ^ d, and a lane whose
        source falls outside the group keeps its own value (CUDA's clamp)."""
        width = width or self.wave_size
        lane = self.lane()
        local = lane if width == self.wave_size else self.op(f"and i32 {lane}, {width - 1}")
        if mode == "idx":
            source = self.op(f"and i32 {lane_arg}, {width - 1}")
        else:
            spelled = {"up": "sub", "down": "add", "bfly": "xor"}[mode]
            moved = self.op(f"{spelled} i32 {local}, {lane_arg}")
            inside = self.op(f"icmp uge i32 {local}, {lane_arg}" if mode == "up" else
                             f"icmp ult i32 {moved}, {width}")
            source = self.op(f"select i1 {inside}, i32 {moved}, i32 {local}")
        if width != self.wave_size:
            source = self.op(f"or i32 {source}, {self.op(f'and i32 {lane}, {-width}')}")
        ty = llvm_type(dtype)
        bits = self.op(f"bitcast {ty} {value} to i32") if dtype.is_float else value
        address = self.op(f"shl i32 {source}, 2")
        moved = self.call("llvm.amdgcn.ds.bpermute", "i32", [("i32", address), ("i32", bits)])
        return self.op(f"bitcast i32 {moved} to {ty}") if dtype.is_float else moved

    def vote(self, kind: str, mask: str, predicate: str, warp: bool = False) -> str:
        """ballot (a mask) or all / any / uni (an i1) over the lanes of `mask` that are active. `warp`: over this
        lane's 32-lane warp, with a 32-bit mask."""
        votes, active = self.ballot(predicate), self.active_mask()
        ty = self.mask_type
        if warp and self.wave_size != WARP_SIZE:
            votes, active, ty = self.half(votes), self.half(active), "i32"
        if kind == "ballot":
            return votes
        among = self.op(f"and {ty} {mask}, {active}")
        chosen = self.op(f"and {ty} {votes}, {among}")
        if kind == "any":
            return self.op(f"icmp ne {ty} {chosen}, 0")
        every = self.op(f"icmp eq {ty} {chosen}, {among}")
        if kind == "all":
            return every
        return self.op(f"or i1 {every}, {self.op(f'icmp eq {ty} {chosen}, 0')}")        # uni

    # ---- groups -----------------------------------------------------------------------------------------
    def block_barrier(self) -> None:
        self.emit('fence syncscope("workgroup") release')
        self.call("llvm.amdgcn.s.barrier", "void", [])
        self.emit('fence syncscope("workgroup") acquire')

    def simt_block(self, stmt: ir.SimtOp, name: str, args: list[str]) -> str:
        if name == "sync":
            self.block_barrier()
            return ""
        if name in ("mem_sync", "mem_fence"):
            self.emit('fence syncscope("workgroup") seq_cst')
            return ""
        if name == "thread_idx":
            return self.op("add i32 %tid, 0")
        if name == "global_thread_idx":
            return self.op("add i32 %gid, 0")
        return self.voting_barrier(name, args[0])

    def voting_barrier(self, name: str, value: str) -> str:
        """sync_all/any/count_nonzero: a barrier that also counts, in the LDS word, the threads that reach it
        and those whose value is nonzero. Barriers around the reset keep the previous call's readers and this
        call's adders apart."""
        self.module.helpers[_VOTE_WORD] = f"{_VOTE_WORD} = internal addrspace(3) global i32 undef, align 4"
        self.block_barrier()
        reset, counting = self.label("vote.reset"), self.label("vote.count")
        self.cond_branch(self.op("icmp eq i32 %tid, 0"), reset, counting)
        self.start_block(reset)
        self.emit(f"store i32 0, ptr addrspace(3) {_VOTE_WORD}, align 4")
        self.branch(counting)
        self.start_block(counting)
        self.block_barrier()
        share = self.op(f"select i1 {self.nonzero(value)}, i32 {_VOTED + 1}, i32 1")
        self.emit(f'atomicrmw add ptr addrspace(3) {_VOTE_WORD}, i32 {share} syncscope("workgroup") monotonic, '
                  "align 4")
        self.block_barrier()
        word = self.op(f"load i32, ptr addrspace(3) {_VOTE_WORD}, align 4")
        nonzero = self.op(f"lshr i32 {word}, 16")
        if name == "sync_count_nonzero":
            return nonzero
        if name == "sync_any_nonzero":
            return self.as_i32_flag(self.op(f"icmp ne i32 {nonzero}, 0"))
        return self.as_i32_flag(self.op(f"icmp eq i32 {nonzero}, {self.op(f'and i32 {word}, {_VOTED - 1}')}"))

    def simt_grid(self, stmt: ir.SimtOp, name: str, args: list[str]) -> str:
        self.emit('fence syncscope("agent") seq_cst')
        return ""

    def simt_warp(self, stmt: ir.SimtOp, name: str, args: list[str]) -> str:
        """CUDA's warp operations on 32-lane warps (a wave32 processor's wave, or half a wave64)."""
        if name == "active_mask":
            active = self.active_mask()
            return active if self.wave_size == WARP_SIZE else self.half(active)
        if name == "sync":
            return self.wave_barrier()
        if name == "ballot":
            return self.vote("ballot", "-1", self.nonzero(args[0]), warp=True)
        if name in ("all_nonzero", "any_nonzero", "unique"):
            kind = {"all_nonzero": "all", "any_nonzero": "any", "unique": "uni"}[name]
            return self.as_i32_flag(self.vote(kind, args[0], self.nonzero(args[1]), warp=True))
        if name in ("match_any", "match_all"):
            return self.match(name, args[0], args[1])
        mode = {"shfl_sync": "idx", "shfl_up": "up", "shfl_down": "down", "shfl_xor": "bfly"}[name.rsplit("_", 1)[0]]
        return self.shuffle(mode, args[0], args[1], stmt.dtype, args[2], width=WARP_SIZE)

    def match(self, name: str, mask: str, value: str) -> str:
        """match_any: the lanes of `mask` whose value equals this lane's; match_all: `mask` where all of its lanes
        hold the same value, else 0."""
        same = "0"
        for other in range(WARP_SIZE):
            theirs = self.shuffle("idx", mask, value, T.i32, str(other), width=WARP_SIZE)
            bit = self.op(f"select i1 {self.op(f'icmp eq i32 {theirs}, {value}')}, i32 {1 << other}, i32 0")
            same = bit if same == "0" else self.op(f"or i32 {same}, {bit}")
        active = self.active_mask()
        among = self.op(f"and i32 {mask}, {active if self.wave_size == WARP_SIZE else self.half(active)}")
        same = self.op(f"and i32 {same}, {among}")
        if name == "match_any":
            return same
        return self.op(f"select i1 {self.op(f'icmp eq i32 {same}, {among}')}, i32 {mask}, i32 0")
