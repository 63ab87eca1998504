"""The flat u32 bytecode of a reducer job body, which wgsl/max_reducer.wgsl (and any device reducer) interprets.

Postfix stack code over i32 values; every arithmetic step is checked and sets a flag bit instead of wrapping.
Reads are bounds-checked per axis (INDEX) and flattened row-major with the shapes known at launch, so the
device only ever loads in-bounds words. An inner MaxOverRange is `begin end GUARD k skip body ENDGUARD`:
points whose axis-k coordinate is outside [begin, end) get 0 (when none is inside GUARD pushes 0 and jumps to
`skip`); ENDGUARD clamps the body at 0 and restores the enclosing guard mask (nesting <= MAX_GUARDS).
Fused forms keep the interpreter loop short: READ_VAR k extent binding signed (`c[v_k]` of a 1-D container), CLAMP0 (`max(x, 0)`).
FLOORDIV d replaces the top by floor(top / d) for a constant d >= 1 (it cannot overflow).
A read's `signed` word is 1 for signed data, 0 for unsigned; for a device that stores 8- and 16-bit integers at
their own width (`native_widths`: CUDA) it also carries the element width, `signed | WIDTH_8 or WIDTH_16`
(no flag: 32-bit words, the only width WGSL storage has).
Words: op | imm0 | imm1..."""
from __future__ import annotations

from typing import Any, Callable

from wgkern.sizing import expr as E
from wgkern.sizing.reducers import PreparedJob

(OP_CONST, OP_VAR, OP_READ, OP_INDEX, OP_ADD, OP_SUB, OP_MUL, OP_MAX, OP_GUARD, OP_CLAMP0, OP_READ_VAR,
 OP_ENDGUARD, OP_FLOORDIV) = range(1, 14)
OPERAND_WORDS = {OP_CONST: 1, OP_VAR: 1, OP_READ: 2, OP_INDEX: 1, OP_ADD: 0, OP_SUB: 0, OP_MUL: 0, OP_MAX: 0,
                 OP_GUARD: 2, OP_CLAMP0: 0, OP_READ_VAR: 4, OP_ENDGUARD: 0, OP_FLOORDIV: 1}
STACK_EFFECT = {OP_CONST: 1, OP_VAR: 1, OP_READ: 0, OP_INDEX: 0, OP_ADD: -1, OP_SUB: -1, OP_MUL: -1, OP_MAX: -1,
                OP_GUARD: -2, OP_CLAMP0: 0, OP_READ_VAR: 1, OP_ENDGUARD: 0, OP_FLOORDIV: 0}
_BINARY_OPS = {E.Add: OP_ADD, E.Sub: OP_SUB, E.Mul: OP_MUL, E.Max: OP_MAX}

# Flag bits a device reducer ORs into a job's flag word (any of them: host fallback).
FLAG_OVERFLOW, FLAG_OUT_OF_BOUNDS, FLAG_UNSIGNED_RANGE = 1, 2, 4
WIDTH_8, WIDTH_16 = 2, 4          # element width bits of a read's `signed` word (native_widths only)
MAX_STACK = 16
MAX_GUARDS = 8
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


class NotEncodable(Exception):
    """The job cannot run on the device as is (a constant beyond i32, too deep, too many containers)."""


class Encoder:
    """Encodes one prepared job; `binding(slot)` gives the data binding a container is read through."""

    def __init__(self, job: PreparedJob, binding: Callable[[Any], int], shape: Callable[[Any], tuple[int, ...]],
                 native_widths: bool = False):
        self.native_widths = native_widths
        self.axes = {axis.var: k for k, axis in enumerate(job.job.axes)}
        self.binding = binding
        self.shape = shape
        self.words: list[int] = []
        self.guards = 0

    def emit(self, op: int, *operands: int) -> None:
        self.words.append(op)
        self.words.extend(v & 0xFFFFFFFF for v in operands)

    def const(self, value: int) -> None:
        if not I32_MIN <= value <= I32_MAX:
            raise NotEncodable(f"constant {value} does not fit i32")
        self.emit(OP_CONST, value)

    def node(self, node: E.SizeExpr) -> None:
        if isinstance(node, E.Const):
            self.const(node.value)
        elif isinstance(node, E.BoundVar):
            self.emit(OP_VAR, self.axes[node])
        elif isinstance(node, E._Read):
            self.read(node)
        elif isinstance(node, E.MaxOverRange):
            self.node(node.begin)
            self.node(node.end)
            guard = len(self.words)
            self.emit(OP_GUARD, self.axes[node.var], 0)
            self.guards += 1
            if self.guards > MAX_GUARDS:
                raise NotEncodable("inner reductions nested too deep")
            self.node(node.body)
            self.guards -= 1
            self.emit(OP_ENDGUARD)
            self.words[guard + 2] = len(self.words)
        elif isinstance(node, E.FloorDiv):
            if not E.positive_const(node.rhs):
                raise NotEncodable("division by a non-constant")
            self.node(node.lhs)
            if not node.rhs.value <= I32_MAX:
                raise NotEncodable(f"divisor {node.rhs.value} does not fit i32")
            self.emit(OP_FLOORDIV, node.rhs.value)
        elif isinstance(node, E.Max) and node.rhs == E.Const(0):
            self.node(node.lhs)
            self.emit(OP_CLAMP0)
        elif type(node) in _BINARY_OPS:
            self.node(node.lhs)
            self.node(node.rhs)
            self.emit(_BINARY_OPS[type(node)])
        else:
            raise NotEncodable(type(node).__name__)

    def read(self, node: E._Read) -> None:
        shape = tuple(self.shape(node.slot))
        if node.dtype is None or node.dtype.bits > 32 or not node.dtype.is_int:
            raise NotEncodable("read wider than 32 bits")
        signed = 1 if node.dtype.is_signed else 0
        if self.native_widths and node.dtype.bits < 32:
            signed |= WIDTH_8 if node.dtype.bits == 8 else WIDTH_16
        if len(shape) == 1 and isinstance(node.index[0], E.BoundVar):
            self.emit(OP_READ_VAR, self.axes[node.index[0]], shape[0], self.binding(node.slot), signed)
            return
        for axis, (index, extent) in enumerate(zip(node.index, shape)):
            if axis > 0:
                self.const(extent)
                self.emit(OP_MUL)
            self.node(index)
            self.emit(OP_INDEX, extent)
            if axis > 0:
                self.emit(OP_ADD)
        if not shape:
            self.const(0)
        self.emit(OP_READ, self.binding(node.slot), signed)


def max_stack_depth(words: list[int]) -> int:
    """Deepest stack the code reaches (straight-line upper bound; GUARD's skip path pushes one value)."""
    depth = best = 0
    pc = 0
    while pc < len(words):
        op = words[pc]
        depth += STACK_EFFECT[op]
        best = max(best, depth + (1 if op == OP_GUARD else 0))
        pc += 1 + OPERAND_WORDS[op]
    return best


def encode(job: PreparedJob, binding: Callable[[Any], int], shape: Callable[[Any], tuple[int, ...]],
           native_widths: bool = False) -> list[int]:
    """Bytecode of `job.job.body` (its axes numbered in job order); raises NotEncodable."""
    encoder = Encoder(job, binding, shape, native_widths)
    encoder.node(job.job.body)
    if max_stack_depth(encoder.words) > MAX_STACK:
        raise NotEncodable("expression too deep for the device stack")
    return encoder.words


def disassemble(words: list[int]) -> list[str]:
    """Readable listing (debugging and tests)."""
    names = {v: k[3:].lower() for k, v in globals().items() if k.startswith("OP_")}
    out, pc = [], 0
    while pc < len(words):
        op = words[pc]
        count = OPERAND_WORDS[op]
        out.append(f"{pc}: {names[op]} {' '.join(str(w) for w in words[pc + 1:pc + 1 + count])}".rstrip())
        pc += 1 + count
    return out
