"""The public exception hierarchy (API.md "Errors") and the source location every error can carry.

Every layer raises these; this module imports nothing from wgkern so any layer may use it."""
from __future__ import annotations

import linecache
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """Where an IR statement came from in user code (1-based line, 0-based column)."""
    filename: str
    lineno: int
    col: int = 0
    source_line: str | None = None

    def text(self) -> str:
        line = self.source_line
        if line is None:
            line = linecache.getline(self.filename, self.lineno).rstrip("\n")
        return line

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}:{self.col + 1}"


UNKNOWN_LOC = SourceLoc("<wgkern>", 0, 0, "")


def format_located(message: str, loc: SourceLoc | None) -> str:
    """'file:line:col: message' followed by the source line and a caret under the column."""
    if loc is None or loc.lineno <= 0:
        return message
    line = loc.text()
    out = f"{loc}: {message}"
    if line:
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        caret = " " * max(loc.col - indent, 0) + "^"
        out += f"\n    {stripped}\n    {caret}"
    return out


class WkError(Exception):
    """Base class of every error wgkern raises on purpose."""


class CompileError(WkError, SyntaxError):
    """Unsupported or invalid kernel code. Carries .filename, .lineno, .offset and .loc."""

    def __init__(self, message: str, loc: SourceLoc | None = None):
        self.loc = loc
        self.message = message
        full = format_located(message, loc)
        WkError.__init__(self, full)
        self.msg = full
        self.args = (full,)
        if loc is not None:
            self.filename = loc.filename
            self.lineno = loc.lineno
            self.offset = loc.col + 1
            self.text = loc.text()
        else:
            self.filename = None
            self.lineno = None
            self.offset = None
            self.text = None

    def __str__(self) -> str:
        return self.msg


class CompileValueError(CompileError, ValueError):
    """Kernel code reads a Python value that cannot take part in a compile (a generator: the first compile
    would consume it), or a matrix operation gets a matrix of the wrong shape (`m.trace()` of a non-square
    one), in a kernel or in Python scope alike. Also a ValueError, as Quadrants raises for the first; Quadrants
    raises its compilation error for the second in both scopes."""


class DeviceFeatureError(CompileError):
    """Kernel code or data that needs a device feature (f64, int64, subgroups, ...) or a larger device limit
    (workgroup size) than the selected device has. `.features`: the names of the missing features / limits."""

    def __init__(self, message: str, loc: SourceLoc | None = None, features: tuple[str, ...] = ()):
        super().__init__(message, loc)
        self.features = features


class AutodiffError(CompileError):
    """A kernel (or part of one) that cannot be differentiated exactly."""


class InternalCompilerError(WkError):
    """A bug in wgkern itself; names the location of the statement being processed."""

    def __init__(self, message: str, loc: SourceLoc | None = None):
        self.loc = loc
        super().__init__(format_located("internal compiler error: " + message, loc))


class ArgumentError(WkError, TypeError, ValueError):
    """A kernel was called with an argument of the wrong kind, dtype, ndim, shape or count. Also a ValueError:
    Quadrants raises that for an ndarray of the wrong ndim or element type, TypeError for a wrong dtype."""


class CallError(ArgumentError, CompileError):
    """A kernel called with arguments that do not bind to its parameters (too many, missing, unknown or given
    twice): an ArgumentError, and a CompileError as well, as Quadrants raises a syntax error for it."""


class DtypeError(WkError, TypeError, RuntimeError):
    """A container created with a dtype its options cannot take (needs_grad / needs_dual on an integer dtype).
    Also a RuntimeError, as Quadrants raises for it."""


class ShapeError(WkError, ValueError):
    """A field or ndarray created with a shape that is not one: not ints, a negative extent, or more elements than
    an index can address. Also a ValueError."""


class AdStackOverflowError(WkError, RuntimeError):
    """A reverse-mode kernel pushed past an adstack's capacity."""


class BoundsCheckError(WkError, IndexError, AssertionError, RuntimeError):
    """wk.init(debug=True): a global access indexed outside its container (raised after the launch on the CPU,
    at the next sync or read-back on GPUs; nothing outside the container was read or written); also a host
    index (`x[i]` in Python) outside a field or ndarray, checked always. Also an AssertionError and a
    RuntimeError, as Taichi's out-of-bound check raises one that is both."""


class KernelAssertionError(WkError, AssertionError, RuntimeError):
    """wk.init(debug=True): an `assert` in a kernel failed (raised after the launch on the CPU, at the next sync
    or read-back on GPUs), naming the kernel, the message and the assert's line. Also a RuntimeError, as
    Taichi's TaichiAssertionError is."""


class GlobalAccessRuleError(AutodiffError, KernelAssertionError):
    """A differentiated kernel reads a global element that the same launch overwrites later, and its reverse
    kernel replays that read (Taichi's global data access rule). Found when the reverse kernel is compiled, so an
    AutodiffError naming both lines; also an
    AssertionError, as Taichi's and Quadrants' run-time check raises one."""


class LoopLimitError(WkError, RuntimeError):
    """A kernel on lavapipe (Mesa's llvmpipe Vulkan driver) ran into the driver's loop limit: llvmpipe ends
    the loops of a shader invocation once they have run 65535 iterations together (loops it unrolls do not
    count), so the kernel's results are truncated. Raised at the next sync or read-back, naming the kernel
    and the loop that was cut short."""


class SubgroupSizeError(WkError, RuntimeError):
    """A register tile (wk.simt.Tile16x16 / Tile32x32) ran on a WGSL adapter whose subgroups have fewer than the
    tile's N invocations (lavapipe: 8), so its rows had nowhere to live and the launch's results are wrong.
    Raised at the next sync or read-back, naming the kernel, the tile's line, N and the subgroup size that ran."""


class SizingError(WkError, RuntimeError):
    """A loop bound is too large (or not representable) to size an adstack."""


class OutOfMemoryError(WkError, MemoryError):
    """A device allocation failed."""


class ArchUnavailableError(WkError, RuntimeError):
    """The requested arch is not available on this machine or not built yet."""


class DeviceCommandError(WkError, RuntimeError):
    """wgpu rejected the commands recorded for a batch of launches (names the batch's kernels); none of them ran."""


class DeviceLostError(WkError, RuntimeError):
    """The device went away; call wk.reset() and wk.init() again."""


class NotInitializedError(WkError, RuntimeError):
    """An operation needs wk.init() first."""


class LinalgError(WkError, RuntimeError):
    """A wk.linalg misuse: a builder overflowed max_num_triplets, shapes of sparse operands differ, a solver
    was asked to solve before factorizing or after its factorization failed (Taichi raises TaichiRuntimeError
    for the misuses)."""
