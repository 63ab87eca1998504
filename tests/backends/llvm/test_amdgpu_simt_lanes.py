"""The values amdgpu_simt.py's lowering computes, lane by lane: the LLVM instructions it emits for each wave
operation are evaluated on a wave of 64 (gfx90a) or 32 (gfx1100) lanes, with AMD's intrinsics (mbcnt.lo/hi,
ballot, ds.bpermute) modelled from AMD's ISA manuals, and compared with numpy models of the operations. A read
from an inactive lane gives a poison value, so a result that depends on one shows up. Nothing here runs on AMD
hardware: this checks the lowering's logic, and test_amdgpu_simt.py that it compiles to the intended
instructions."""
from __future__ import annotations

import re
import struct
from types import SimpleNamespace

import numpy as np
import pytest

from wgkern import dtypes as T
from wgkern.backends.llvm.amdgpu_codegen import AmdgpuFunctionEmitter
from wgkern.backends.llvm.amdgpu_simt import AmdgpuSimtLowering
from wgkern.backends.llvm.ops import BINARY
from wgkern.backends.reductions import COMBINE
from wgkern.ir.ops import AtomicOpKind

POISON = 0x7EADBEEF
_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or,
           "xor": np.bitwise_xor, "shl": np.left_shift, "lshr": np.right_shift}
_COMPARE = {"eq": np.equal, "ne": np.not_equal, "ult": np.less, "ule": np.less_equal, "ugt": np.greater,
            "uge": np.greater_equal, "slt": np.less, "sle": np.less_equal, "sgt": np.greater, "sge": np.greater_equal}


def _bits(ty: str) -> int:
    return 1 if ty == "i1" else int(ty[1:])


def _signed(x: np.ndarray, bits: int) -> np.ndarray:
    x = x.astype(np.int64) if bits < 64 else x.view(np.int64)
    return np.where(x >= 1 << (bits - 1), x - (1 << bits), x) if bits < 64 else x


class WaveEmulator(AmdgpuSimtLowering):
    """The lowering with `op` evaluating each instruction on every lane at once (integers as uint64 arrays
    kept to their width, floats as float32 arrays) instead of writing it out."""

    def __init__(self, wave: int, active: int):
        self.module = SimpleNamespace(target=SimpleNamespace(wave_size=wave), helpers={},
                                      intrinsic=lambda name, ret, params: f"@{name}")
        self.wave, self.lanes = wave, np.arange(wave, dtype=np.uint64)
        self.active = self.lanes < active
        self.env: dict[str, np.ndarray] = {}

    def emit(self, text: str) -> None:          # barriers and fences: no value in one wave
        assert text.startswith(("call void @llvm.amdgcn.wave.barrier", "fence")), text

    def set(self, value, dtype: T.DataType) -> str:
        name = f"%in{len(self.env)}"
        self.env[name] = np.asarray(value, np.float32) if dtype.is_float else \
            (np.asarray(value, np.int64) & 0xFFFFFFFF).astype(np.uint64)
        return name

    def operand(self, ty: str, token: str) -> np.ndarray:
        if token.startswith("%"):
            return self.env[token]
        if ty == "float":
            return np.full(self.wave, struct.unpack("<d", struct.pack("<Q", int(token, 16)))[0], np.float32)
        value = {"true": 1, "false": 0}.get(token)
        value = int(token) if value is None else value
        return np.full(self.wave, value & ((1 << _bits(ty)) - 1), np.uint64)

    def op(self, text: str, hint: str = "t") -> str:
        name = f"%v{len(self.env)}"
        self.env[name] = self.evaluate(text)
        return name

    def evaluate(self, text: str) -> np.ndarray:
        if m := re.fullmatch(r"(add|sub|mul|and|or|xor|shl|lshr) (i\d+) (\S+), (\S+)", text):
            kind, ty, a, b = m.groups()
            with np.errstate(over="ignore"):
                out = _BINARY[kind](self.operand(ty, a), self.operand(ty, b))
            return out & np.uint64((1 << _bits(ty)) - 1) if _bits(ty) < 64 else out
        if m := re.fullmatch(r"(fadd|fmul) float (\S+), (\S+)", text):
            a, b = self.operand("float", m[2]), self.operand("float", m[3])
            with np.errstate(over="ignore", invalid="ignore"):      # lanes holding poison
                return (a + b if m[1] == "fadd" else a * b).astype(np.float32)
        if m := re.fullmatch(r"icmp (\w+) (i\d+) (\S+), (\S+)", text):
            pred, ty, a, b = m.groups()
            a, b = self.operand(ty, a), self.operand(ty, b)
            if pred[0] == "s":
                a, b = _signed(a, _bits(ty)), _signed(b, _bits(ty))
            return _COMPARE[pred](a, b).astype(np.uint64)
        if m := re.fullmatch(r"fcmp oeq float (\S+), (\S+)", text):
            return (self.operand("float", m[1]) == self.operand("float", m[2])).astype(np.uint64)
        if m := re.fullmatch(r"select i1 (\S+), (\S+) (\S+), (\S+) (\S+)", text):
            return np.where(self.operand("i1", m[1]) != 0, self.operand(m[2], m[3]), self.operand(m[4], m[5]))
        if m := re.fullmatch(r"(zext|trunc|bitcast) (\S+) (\S+) to (\S+)", text):
            kind, source, value, target = m.groups()
            value = self.operand(source, value)
            if kind == "bitcast":
                return value.astype(np.float32).view(np.uint32).astype(np.uint64) if source == "float" else \
                    value.astype(np.uint32).view(np.float32)
            return value & np.uint64((1 << _bits(target)) - 1) if _bits(target) < 64 else value
        if m := re.fullmatch(r"call (\S+) @([\w.]+)\((.*)\)", text):
            args = [self.operand(*arg.split(" ")) for arg in m[3].split(", ")] if m[3] else []
            return self.intrinsic_value(m[2], args)
        raise AssertionError(f"the emulator has no model of {text!r}")

    def intrinsic_value(self, name: str, args: list[np.ndarray]) -> np.ndarray:
        lanes = self.lanes
        if name in ("llvm.amdgcn.mbcnt.lo", "llvm.amdgcn.mbcnt.hi"):    # set bits of the mask below the lane
            below = np.minimum(lanes, 32) if name.endswith("lo") else np.maximum(lanes.astype(np.int64) - 32, 0)
            bits = [int(m) & ((1 << int(k)) - 1) for m, k in zip(args[0], below)]
            return np.array([bin(b).count("1") for b in bits], np.uint64) + args[1]
        if name.startswith("llvm.amdgcn.ballot"):
            mask = sum(1 << int(lane) for lane in lanes if self.active[lane] and args[0][lane])
            return np.full(self.wave, mask, np.uint64)
        if name == "llvm.amdgcn.ds.bpermute":        # byte address / 4, mod the wave; inactive lanes: poison
            source = (args[0] >> np.uint64(2)) % np.uint64(self.wave)
            return np.where(self.active[source], args[1][source], np.uint64(POISON))
        if m := re.fullmatch(r"llvm\.(cttz|ctlz)\.i(\d+)", name):
            bits = int(m[2])
            count = [(int(v) & -int(v)).bit_length() - 1 if m[1] == "cttz" else bits - int(v).bit_length()
                     for v in args[0]]
            return np.array(count, np.uint64)
        if m := re.fullmatch(r"llvm\.([su])(min|max)\.i32", name):
            a, b = (_signed(x, 32) for x in args) if m[1] == "s" else args
            return (np.minimum(a, b) if m[2] == "min" else np.maximum(a, b)).astype(np.int64).astype(np.uint64) \
                & np.uint64(0xFFFFFFFF)
        if m := re.fullmatch(r"llvm\.(minnum|maxnum)\.f32", name):
            return (np.minimum if m[1] == "minnum" else np.maximum)(*args)
        raise AssertionError(f"the emulator has no model of {name}")

    def value_of(self, result: str, dtype: T.DataType) -> np.ndarray:
        value = self.env[result] if result.startswith("%") else self.operand("i32", result)
        return value if dtype.is_float else _signed(value, 32) if dtype.is_signed else value


def run(wave: int, active: int, group: str, name: str, values, dtype: T.DataType, *extra: str) -> np.ndarray:
    """The op's result on each lane of a wave whose first `active` lanes run."""
    emulator = WaveEmulator(wave, active)
    source = emulator.set(values, dtype)
    stmt = SimpleNamespace(dtype=dtype, args=[SimpleNamespace(dtype=dtype)])
    result_dtype = T.i32 if name in ("elect", "all_true", "any_true", "all_equal", "group_size",
                                     "invocation_id") else T.u64 if name == "ballot" else dtype
    if group == "warp":
        args = [] if name == "active_mask" else [source] if name == "ballot" else [str(extra[0]), source, *extra[1:]]
        result = emulator.simt_warp(stmt, name, args)
        result_dtype = dtype if name.startswith("shfl") else T.u32
    else:
        result = getattr(emulator, f"simt_{group}")(stmt, name, [source, *extra])
    return emulator.value_of(result, result_dtype)[:active]


WAVES = [(64, 64), (64, 40), (32, 32), (32, 19)]           # (wave size, active lanes first): full and partial
_IDENTITY = {"add": 0, "mul": 1, "and": -1, "or": 0, "xor": 0, "min": 2 ** 31 - 1, "max": -2 ** 31}
_REDUCE = {"add": np.add, "mul": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
           "min": np.minimum, "max": np.maximum}


# every op on i32; and / or / xor take ints only
SCANNED = [(op, T.i32) for op in _REDUCE] + [(op, T.f32) for op in ("add", "mul", "min", "max")]


def values_for(op: str, count: int, dtype: T.DataType) -> np.ndarray:
    """Small integers: every partial sum and product is exact in f32 (|x| <= 3 over 64 lanes: sums below 2**8,
    products of 1s, 2s and -1s below 2**24 with at most 23 factors of 2 set), so results compare exactly."""
    rng = np.random.default_rng(count)
    if op == "mul":
        values = rng.choice([1, 1, 1, -1, 2], size=count)
        values[np.cumsum(values == 2) > 20] = 1
    else:
        values = rng.integers(-3, 4, size=count)
    return values.astype(np.float32 if dtype.is_float else np.int64)


@pytest.mark.parametrize("wave,active", WAVES)
@pytest.mark.parametrize("op,dtype", SCANNED, ids=[f"{op}-{dtype.name}" for op, dtype in SCANNED])
def test_reductions_and_scans_match_numpy(wave, active, op, dtype):
    values = values_for(op, active, dtype)
    lanes = np.concatenate([values, np.full(wave - active, 99, values.dtype)])    # inactive lanes' own values
    inclusive = _REDUCE[op].accumulate(values)
    identity = np.float32({"min": np.inf, "max": -np.inf}.get(op, _IDENTITY[op])) if dtype.is_float \
        else _IDENTITY[op]
    np.testing.assert_array_equal(run(wave, active, "subgroup", f"reduce_{op}", lanes, dtype),
                                  np.full(active, inclusive[-1]))
    np.testing.assert_array_equal(run(wave, active, "subgroup", f"inclusive_{op}", lanes, dtype), inclusive)
    np.testing.assert_array_equal(run(wave, active, "subgroup", f"exclusive_{op}", lanes, dtype),
                                  np.concatenate([[identity], inclusive[:-1]]))


@pytest.mark.parametrize("wave,active", WAVES)
def test_shuffles_votes_and_ids_match_numpy(wave, active):
    rng = np.random.default_rng(wave + active)
    v = rng.integers(-50, 50, size=wave)
    lane = np.arange(active)
    sub = lambda name, *extra, dtype=T.i32: run(wave, active, "subgroup", name, v, dtype, *extra)  # noqa: E731
    np.testing.assert_array_equal(sub("shuffle", "5"), np.full(active, v[5]))
    np.testing.assert_array_equal(sub("broadcast", "3"), np.full(active, v[3]))
    np.testing.assert_array_equal(sub("shuffle_up", "3"), np.where(lane >= 3, v[lane - 3], v[lane]))
    down = sub("shuffle_down", "2")
    inside = lane + 2 < active                       # past the active lanes: unspecified
    np.testing.assert_array_equal(down[inside], v[np.minimum(lane + 2, wave - 1)][inside])
    xor = sub("shuffle_xor", "5")
    np.testing.assert_array_equal(xor[(lane ^ 5) < active], v[lane ^ 5][(lane ^ 5) < active])
    np.testing.assert_array_equal(sub("broadcast_first"), np.full(active, v[0]))
    np.testing.assert_array_equal(sub("elect"), (lane == 0).astype(int))
    np.testing.assert_array_equal(sub("invocation_id"), lane)
    assert (sub("group_size") == wave).all()
    ballot = sum(1 << k for k in range(active) if v[k] != 0)
    assert (sub("ballot") == ballot).all()
    assert (sub("all_true") == int((v[:active] != 0).all())).all()
    assert (sub("any_true") == int((v[:active] != 0).any())).all()
    assert (sub("all_equal") == 0).all()
    same = run(wave, active, "subgroup", "all_equal", np.full(wave, 7), T.i32)
    assert (same == 1).all()
    assert (run(wave, active, "subgroup", "all_true", np.concatenate([np.ones(active), np.zeros(wave - active)]),
                T.i32) == 1).all()                   # inactive lanes do not vote


@pytest.mark.parametrize("wave,active", WAVES)
def test_warp_operations_work_on_32_lane_warps(wave, active):
    """wk.simt.warp keeps CUDA's 32-lane warps: on wave64 each half of the wave is one, with its own masks."""
    rng = np.random.default_rng(active)
    v = rng.integers(0, 4, size=wave)
    lane = np.arange(active)
    local, base = lane % 32, lane - lane % 32
    full = 0xFFFFFFFF
    warp = lambda name, *extra, dtype=T.i32: run(wave, active, "warp", name, v, dtype, *extra)  # noqa: E731
    np.testing.assert_array_equal(warp("shfl_sync_i32", full, "35"), v[base + 3])
    np.testing.assert_array_equal(warp("shfl_up_i32", full, "2"), np.where(local >= 2, v[lane - 2], v[lane]))
    down = warp("shfl_down_i32", full, "1")
    source = np.where(local + 1 < 32, lane + 1, lane)
    np.testing.assert_array_equal(down[source < active], v[source][source < active])
    xor = warp("shfl_xor_i32", full, "16")
    np.testing.assert_array_equal(xor[(lane ^ 16) < active], v[lane ^ 16][(lane ^ 16) < active])
    halves = [[k for k in range(h, min(h + 32, active))] for h in range(0, active, 32)]
    ballot = [sum(1 << (k % 32) for k in half if v[k] != 0) for half in halves]
    np.testing.assert_array_equal(warp("ballot"), np.array(ballot)[lane // 32])
    active_masks = np.array([sum(1 << (k % 32) for k in half) for half in halves])[lane // 32]
    np.testing.assert_array_equal(warp("active_mask"), active_masks)
    mask = 0x0F0F0F0F                                 # a vote over some lanes of each warp
    chosen = [[k for k in half if (mask >> (k % 32)) & 1] for half in halves]
    expect_all = np.array([int(all(v[k] != 0 for k in c)) for c in chosen])[lane // 32]
    expect_any = np.array([int(any(v[k] != 0 for k in c)) for c in chosen])[lane // 32]
    np.testing.assert_array_equal(warp("all_nonzero", mask), expect_all)
    np.testing.assert_array_equal(warp("any_nonzero", mask), expect_any)
    np.testing.assert_array_equal(warp("unique", mask), np.maximum(expect_all, 1 - expect_any))
    matches = np.array([sum(1 << (k % 32) for k in halves[i // 32] if v[k] == v[i]) for i in lane])
    np.testing.assert_array_equal(warp("match_any", full), matches)
    uniform = run(wave, active, "warp", "match_all", np.full(wave, 5), T.i32, full)
    np.testing.assert_array_equal(uniform, np.full(active, full))
    uniform_halves = np.array([int(len({int(v[k]) for k in half}) == 1) for half in halves])[lane // 32]
    np.testing.assert_array_equal(warp("match_all", full), uniform_halves * full)


class FlushEmulator(WaveEmulator, AmdgpuFunctionEmitter):
    """The emulator with the code generator's own op spellings (`apply`), for the register-reduction flush: the
    threads of wave `index` of a block of `block` threads (the lanes past the block's end not launched)."""

    def __init__(self, wave: int, block: int, index: int):
        super().__init__(wave, min(block - index * wave, wave))
        self.module.float_flags = ""
        self.target = SimpleNamespace(approximate_f32_intrinsics=frozenset())
        self.env["%tid"] = self.lanes + np.uint64(index * wave)
        self.env["%ntid"] = np.full(wave, block, np.uint64)
        self.calls: list[str] = []

    def intrinsic_value(self, name: str, args: list[np.ndarray]) -> np.ndarray:
        self.calls.append(name)
        return super().intrinsic_value(name, args)


# (wave size, threads per block, which wave of the block): full waves, a partial last wave (a block size that is
# no multiple of the wave), and a block of one partial wave
FLUSHED = [(64, 256, 1), (64, 100, 1), (64, 40, 0), (32, 256, 3), (32, 83, 2), (32, 7, 0)]
FLUSH_OPS = [(op, dtype) for op in ("add", "min", "max") for dtype in (T.i32, T.f32)]


@pytest.mark.parametrize("wave,block,index", FLUSHED)
@pytest.mark.parametrize("op,dtype", FLUSH_OPS, ids=[f"{op}-{dtype.name}" for op, dtype in FLUSH_OPS])
def test_register_reductions_combine_the_launched_lanes_into_the_first(wave, block, index, op, dtype):
    """gpu_codegen.flush_chunk_reductions' combine (wave_total, with the ops the flush applies): the wave's
    first lane holds the reduction of exactly its launched lanes' registers, and only it applies the atomic."""
    emulator = FlushEmulator(wave, block, index)
    launched = int(emulator.active.sum())
    values = values_for(op, launched, dtype)
    spelling = BINARY[dtype.kind].get(COMBINE[{"add": AtomicOpKind.ADD, "min": AtomicOpKind.MIN,
                                                "max": AtomicOpKind.MAX}[op]])
    source = emulator.set(np.concatenate([values, np.full(wave - launched, 99, values.dtype)]), dtype)
    total, first = emulator.wave_total(source, dtype, lambda a, b: emulator.apply(spelling, None, dtype, [a, b]))
    assert emulator.value_of(total, dtype)[0] == _REDUCE[op].reduce(values)
    np.testing.assert_array_equal(emulator.value_of(first, T.u32)[:launched], np.arange(launched) == 0)
    steps = wave.bit_length() - 1
    assert emulator.calls.count("llvm.amdgcn.ds.bpermute") == steps
