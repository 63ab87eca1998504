"""Large blocks of a serial task's WGSL moved into functions of their own.

naga's WGSL front end resolves the type of each new expression of a function by walking every expression of
that function made before it, so its time grows with the square of a function's expression count. A serial
task (one invocation runs the kernel's loops) with every `qd.func` inlined can be one function of megabytes:
Genesis's collision detection is 3.6 MB of WGSL, of which naga spent 0.9 s of 1.1 s in that walk. So once a
block (a loop's or an `if`'s body) of a serial task has been emitted, if it has OUTLINE_LINES lines or more it
is moved into a function `wk_part<N>` and replaced by a call; blocks are emitted inner first, so a large block's
large sub-blocks are functions already. Drivers inline the calls again (lavapipe's NIR does before anything
else), so the code that runs is the same.

The function takes what the block reads of the enclosing function: each value (`let`) as a parameter of its
type, each variable (`var`) as a `ptr<function, T>` (its uses become `(*name)`, `&name` becomes `&(*name)`,
which is the pointer); the launch-argument expressions computed once at the top of the entry point
(codegen.invariant) are computed again at the top of the function (they read only `wk_params` and one another).
Names keep their spelling, so the block's text moves unchanged but for those uses. A block stays where it is
when it can leave the function early (a `return`, or a `break` or `continue` of a loop outside it) or when it
reads a local whose WGSL type the code generator did not record (`declare_local`). In a task whose loops run in
chunks (serial_chunks.py) the functions of chunked loop n sit between that loop's markers, so the pipeline of
another loop leaves them out with the loop's code."""
from __future__ import annotations

import os
import re

from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk
from wgkern.passes.analysis import leaves_loop_body
from wgkern.backends.wgsl.serial_chunks import LOOP_BEGIN, LOOP_END

# lines a block of a serial task must have to become a function (WK_OUTLINE_LINES=1: every block that can,
# which the tests use to check the mechanism on every kernel)
OUTLINE_LINES = int(os.environ.get("WK_OUTLINE_LINES", "300"))

_IDENTIFIER = re.compile(r"(?<![.\w])[A-Za-z_]\w*")    # not a member (`wk_params.x`)


class OutlineLowering:
    """WgslCodegen's bookkeeping of the locals it declares, and the moving of large blocks into functions."""

    def reset_outlining(self, enabled: bool) -> None:
        self.outlining = enabled
        self.local_order: dict[str, int] = {}        # every local of the entry point, in declaration order
        self.local_types: dict[str, tuple[str, bool]] = {}    # those with a known type: (type, is a var)
        self.outlined: list[tuple[int | None, str]] = []      # (chunked loop number or None, function text)
        self.chunk_number: int | None = None         # the chunked loop being emitted (serial_chunks.py)
        self.invariant_reads: dict[str, list[str]] = {}      # an invariant's expression -> the names it reads

    def note_declaration(self, line: str) -> None:
        """Record a `let` or `var` the entry point declares (called by emit for each such line)."""
        name, _, rest = line[4:].partition(" ")
        if name.endswith(":"):                       # `let name: type = ...`, `var name: type;`
            name = name[:-1]
            self.local_types[name] = (rest.partition(" = ")[0].rstrip("; "), line[0] == "v")
        self.local_order.setdefault(name, len(self.local_order))

    def declare_local(self, name: str, wgsl_type: str, mutable: bool = False) -> None:
        """`name`, a local of the entry point (a parameter, or declared by an emitted line without a type), has
        type `wgsl_type`: a block that reads it may become a function."""
        if name not in self.local_order:
            self.local_order[name] = len(self.local_order)
        self.local_types[name] = (wgsl_type, mutable)

    def outline_block(self, start: int, declared_before: int, block: ir.Block) -> None:
        """The block whose lines are self.lines[start:], emitted after `declared_before` locals had been
        declared, becomes a function where the module docstring says so."""
        lines = self.lines
        if not self.outlining or len(lines) - start < OUTLINE_LINES or not self._stays_inside(block):
            return
        body = lines[start:]
        text = "\n".join(body)
        names = set(_IDENTIFIER.findall(text))
        if "return" in names:
            return
        order, types = self.local_order, self.local_types
        outer = sorted((name for name in names if order.get(name, declared_before) < declared_before),
                       key=order.__getitem__)
        if any(name not in types for name in outer):
            return
        invariants = self._invariants_read(names)
        pointers = [name for name in outer if types[name][1]]
        if pointers:
            spelled = re.compile(r"(?<![.\w])(" + "|".join(pointers) + r")(?!\w)")
            text = spelled.sub(r"(*\1)", text)
        function = self.fresh("wk_part")
        parameters = ", ".join(f"{name}: ptr<function, {types[name][0]}>" if name in pointers else
                               f"{name}: {types[name][0]}" for name in outer)
        head = [f"fn {function}({parameters}) {{"] + [f"  let {name} = {expr};" for name, expr in invariants]
        self.outlined.append((self.chunk_number, "\n".join(head) + "\n" + text + "\n}\n"))
        arguments = ", ".join(f"&{name}" if name in pointers else name for name in outer)
        lines[start:] = ["  " * self.indent + f"{function}({arguments});"]

    def _invariants_read(self, names: set[str]) -> list[tuple[str, str]]:
        """(name, expression) of the invariants (codegen.invariant) that `names` read, with those their
        expressions read (an invariant may read earlier ones), in the order the entry point computes them."""
        needed = set(names)
        read = self.invariant_reads
        for expr, name in reversed(self.invariants.items()):
            if name in needed:
                if expr not in read:
                    read[expr] = _IDENTIFIER.findall(expr)
                needed.update(read[expr])
        return [(name, expr) for expr, name in self.invariants.items() if name in needed]

    @staticmethod
    def _stays_inside(block: ir.Block) -> bool:
        """Whether control never leaves `block` but at its end: no return in it, no break or continue of a loop
        around it."""
        return not leaves_loop_body(block.stmts) and not any(isinstance(stmt, ir.Return) for stmt in walk(block))

    def outlined_functions(self) -> str:
        """The functions made from blocks, those of chunked loop n between that loop's markers."""
        parts = []
        for number, function in self.outlined:
            if number is None:
                parts.append(function)
            else:
                parts.append(f"{LOOP_BEGIN}{number}\n{function}{LOOP_END}{number}\n")
        return "\n".join(parts)
