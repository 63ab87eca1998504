"""The structured IR: statement classes (nodes), op enums (ops), builder, visitor, clone, printer, verifier.

Re-exports the names passes and backends use most; importing it loads no backend (no llvmlite/wgpu)."""
from __future__ import annotations

from wgkern.ir.builder import IRBuilder
from wgkern.ir.clone import clone_block, clone_stmt
from wgkern.ir.nodes import (Alloca, ArgLoad, ArgSpec, AtomicOp, BinaryOp, Block, Break, Cast, Const,
                             ContainerSlot, Continue, GlobalLoad, GlobalPtr, GlobalStore, If, KernelIR,
                             LocalLoad, LocalStore, LoopIndex, OffloadedKernel, RandomValue, RangeFor, Return,
                             ShapeOf, Stmt, Task, TernarySelect, UnaryOp, While)
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.ir.printer import format_block, format_kernel
from wgkern.ir.verifier import verify

clone = clone_block   # DESIGN.md spells it `ir.clone(block, value_map)`

__all__ = [
    "Alloca", "ArgLoad", "ArgSpec", "AtomicOp", "AtomicOpKind", "BinaryOp", "BinaryOpKind", "Block", "Break",
    "Cast", "Const", "ContainerSlot", "Continue", "GlobalLoad", "GlobalPtr", "GlobalStore", "IRBuilder", "If",
    "KernelIR", "LocalLoad", "LocalStore", "LoopIndex", "OffloadedKernel", "RandomValue", "RangeFor", "Return",
    "ShapeOf", "Stmt", "Task", "TernarySelect", "UnaryOp", "UnaryOpKind", "While", "clone", "clone_block",
    "clone_stmt", "format_block", "format_kernel", "verify",
]
