"""Readable text form of the IR: `kernel.ir()`, WK_DUMP_IR files and internal error messages.

One statement per line (`%12 = add %3 %7 : f32`), nested blocks indented, statements numbered in print order.
Known classes have a specific form (table `_FORMATTERS`); any other Stmt is printed generically from its
OPERANDS/OPERAND_LISTS/BLOCKS and remaining fields, so new node classes print without changes here."""
from __future__ import annotations

import dataclasses
from typing import Callable

from wgkern.ir import nodes as ir

_SKIPPED_FIELDS = frozenset({"loc", "dtype"})


class Namer:
    """Gives each statement a stable `%N` name in the order it is first printed."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def define(self, stmt: ir.Stmt) -> str:
        key = id(stmt)
        if key not in self.names:
            self.names[key] = f"%{len(self.names)}"
        return self.names[key]

    def ref(self, stmt: ir.Stmt | None) -> str:
        if stmt is None:
            return "none"
        name = self.names.get(id(stmt))
        # A reference to a statement not printed (yet): only broken IR has these; make them visible.
        return name if name is not None else f"%?{type(stmt).__name__}@{id(stmt) & 0xFFFF:04x}"


def _dtype_suffix(stmt: ir.Stmt) -> str:
    return f" : {stmt.dtype.name}" if stmt.dtype is not None else ""


def _literal(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _flags(stmt: ir.Stmt, names: tuple[str, ...]) -> str:
    return "".join(f" {name}" for name in names if getattr(stmt, name, False))


def _ptr_text(stmt: ir.GlobalPtr, n: Namer) -> str:
    return f"{stmt.container.name}[{', '.join(n.ref(i) for i in stmt.indices)}]"


_FORMATTERS: dict[type, Callable[[ir.Stmt, Namer], str]] = {
    ir.Const: lambda s, n: f"const {_literal(s.value)}",
    ir.ArgLoad: lambda s, n: f"arg {s.arg_index}",
    ir.UnaryOp: lambda s, n: f"{s.op.value} {n.ref(s.operand)}",
    ir.BinaryOp: lambda s, n: f"{s.op.value} {n.ref(s.lhs)} {n.ref(s.rhs)}",
    ir.TernarySelect: lambda s, n: f"select {n.ref(s.cond)} {n.ref(s.true_value)} {n.ref(s.false_value)}",
    ir.Cast: lambda s, n: f"{'bitcast' if s.bitcast else 'cast'} {n.ref(s.operand)}",
    ir.RandomValue: lambda s, n: f"random site={s.site}",
    ir.Alloca: lambda s, n: f"alloca {s.name!r}" if s.name else "alloca",
    ir.LocalLoad: lambda s, n: f"load {n.ref(s.alloca)}",
    ir.LocalStore: lambda s, n: f"store {n.ref(s.alloca)} <- {n.ref(s.value)}",
    ir.GlobalPtr: lambda s, n: f"ptr {_ptr_text(s, n)}",
    ir.GlobalLoad: lambda s, n: f"gload {n.ref(s.ptr)}",
    ir.GlobalStore: lambda s, n: f"gstore {n.ref(s.ptr)} <- {n.ref(s.value)}",
    ir.AtomicOp: lambda s, n: (f"atomic_{s.op.value} {n.ref(s.ptr)} "
                               + (f"{n.ref(s.expected)} " if s.expected is not None else "") + n.ref(s.value)),
    ir.ShapeOf: lambda s, n: f"shape {s.container.name} axis={s.axis}",
    ir.LoopIndex: lambda s, n: f"loop_index {n.ref(s.loop)}",
    ir.RangeFor: lambda s, n: (f"for {n.ref(s.begin)} .. {n.ref(s.end)}"
                               + _flags(s, ("reversed", "parallel", "serialize"))
                               + (f" block_dim={s.block_dim}" if s.block_dim else "")
                               + (f" name={s.name!r}" if s.name else "")),
    ir.SimtOp: lambda s, n: f"simt {s.op}({', '.join(n.ref(a) for a in s.args)})",
    ir.While: lambda s, n: "while" if s.host_counter is None else f"while (host loop on {s.host_counter.name})",
    ir.Break: lambda s, n: "break",
    ir.Continue: lambda s, n: "continue",
    ir.If: lambda s, n: f"if {n.ref(s.cond)}",
    ir.Return: lambda s, n: "return",
    ir.AssertFail: lambda s, n: f"assert_fail {s.message!r}",
    ir.Print: lambda s, n: "print " + " ".join(repr(piece) + (f" {n.ref(v)}" if k < len(s.values) else "")
                                               for k, (piece, v) in enumerate(zip(s.pieces, [*s.values, None]))),
}

# Statements whose value nobody reads get no `%N =` prefix (their name is still reserved for references).
_NO_VALUE = (ir.LocalStore, ir.GlobalStore, ir.While, ir.Break, ir.Continue, ir.If, ir.Return, ir.Print,
             ir.AssertFail)


def _generic(stmt: ir.Stmt, n: Namer) -> str:
    """`ClassName %a %b [%c, %d] attr=value` for classes without a specific form."""
    parts = [type(stmt).__name__]
    parts += [n.ref(getattr(stmt, name)) for name in stmt.OPERANDS]
    parts += ["[" + ", ".join(n.ref(o) for o in getattr(stmt, name)) + "]" for name in stmt.OPERAND_LISTS]
    structural = set(stmt.OPERANDS) | set(stmt.OPERAND_LISTS) | set(stmt.BLOCKS) | _SKIPPED_FIELDS
    for f in dataclasses.fields(stmt):
        if f.name not in structural:
            value = getattr(stmt, f.name)
            if value is not None and value != "":
                parts.append(f"{f.name}={getattr(value, 'name', value)!r}" if not isinstance(value, (int, float))
                             else f"{f.name}={value}")
    return " ".join(parts)


def describe(stmt: ir.Stmt, namer: Namer | None = None) -> str:
    """One line for `stmt` (no children), e.g. `%3 = add %1 %2 : f32`; used in error messages."""
    n = namer if namer is not None else Namer()
    formatter = _FORMATTERS.get(type(stmt), _generic)
    body = formatter(stmt, n) + _dtype_suffix(stmt)
    if isinstance(stmt, _NO_VALUE):
        return body
    return f"{n.define(stmt)} = {body}"


def _block_lines(block: ir.Block, n: Namer, indent: int, with_locs: bool, out: list[str]) -> None:
    pad = "  " * indent
    for stmt in block.stmts:
        line = pad + describe(stmt, n)
        if with_locs and stmt.loc.lineno > 0:
            line += f"    # {stmt.loc}"
        children = [(name, getattr(stmt, name)) for name in stmt.BLOCKS]
        if not children:
            out.append(line)
            continue
        out.append(line + " {")
        for position, (name, child) in enumerate(children):
            if child is None:
                continue
            if position > 0:
                out.append(f"{pad}}} {name.removesuffix('_block')} {{")
            _block_lines(child, n, indent + 1, with_locs, out)
        out.append(pad + "}")


def format_block(block: ir.Block, namer: Namer | None = None, indent: int = 0, with_locs: bool = False) -> str:
    out: list[str] = []
    _block_lines(block, namer if namer is not None else Namer(), indent, with_locs, out)
    return "\n".join(out)


def _container_line(index: int, slot: ir.ContainerSlot) -> str:
    text = f"  container {index} {slot.name}: {slot.kind} {slot.dtype.name}[ndim={slot.ndim}]"
    if slot.shape is not None:
        text += f" shape={slot.shape}"
    if slot.arg_index is not None:
        text += f" arg={slot.arg_index}"
    if slot.is_grad:
        text += " grad"
    return text


def _type_name(dtype: object) -> str:
    """A scalar dtype's name, or a struct argument's class name (a `@dataclass` or `@data_oriented` type)."""
    return getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or str(dtype)


def _header(kernel: ir.KernelIR | ir.OffloadedKernel, kind: str) -> list[str]:
    args = ", ".join(f"{a.name}: {a.kind}" + (f" {_type_name(a.dtype)}" if a.dtype is not None else "")
                     for a in kernel.args)
    lines = [f"{kind} {kernel.name}({args})"]
    lines += [_container_line(i, slot) for i, slot in enumerate(kernel.containers)]
    if kernel.returns:
        lines.append("  returns " + ", ".join(slot.name for slot in kernel.returns))
    return lines


def format_task(task: ir.Task, namer: Namer, with_locs: bool = False) -> str:
    lines = [f"task {task.name} {task.kind} {{"]
    if task.kind == "range" and task.loop is not None:
        if task.bounds.stmts:
            lines.append("  bounds:")
            lines.append(format_block(task.bounds, namer, 2, with_locs))
        lines.append("  " + describe(task.loop, namer) + " {")
        body = format_block(task.body, namer, 2, with_locs)
        if body:
            lines.append(body)
        lines.append("  }")
    else:
        body = format_block(task.body, namer, 1, with_locs)
        if body:
            lines.append(body)
    lines.append("}")
    return "\n".join(lines)


def format_kernel(kernel: ir.KernelIR | ir.OffloadedKernel, with_locs: bool = False) -> str:
    """The whole kernel (header with args and containers, then body or tasks) as text."""
    namer = Namer()
    if isinstance(kernel, ir.OffloadedKernel):
        lines = _header(kernel, "offloaded")
        lines += [f"host loop: tasks {h.first}..{h.stop - 1} again while {h.counter.name} != 0"
                  for h in kernel.host_loops]
        lines += [format_task(task, namer, with_locs) for task in kernel.tasks]
    else:
        lines = _header(kernel, "kernel")
        lines.append("body {")
        body = format_block(kernel.body, namer, 1, with_locs)
        if body:
            lines.append(body)
        lines.append("}")
    return "\n".join(lines) + "\n"
