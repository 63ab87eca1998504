"""IR statement classes: a structured (tree) IR in which every value is the statement that defines it.

A `Block` holds statements in order; control flow nests blocks (`RangeFor`, `While`, `If`). Operands refer to
earlier statements by identity. Each class lists its operand fields (`OPERANDS`, single statements;
`OPERAND_LISTS`, lists of statements; `OPTIONAL`, the operands that may be None) and block fields (`BLOCKS`) so
generic walkers, clone and the verifier need no per-class code. Kernels before offload are `KernelIR`; after
offload they are `OffloadedKernel`."""
from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Callable, ClassVar, Iterator

from wgkern.errors import UNKNOWN_LOC, SourceLoc
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.dtypes import DataType


@dataclass(eq=False, slots=True, kw_only=True)
class Stmt:
    """Base statement. `dtype` is the result type; None for statements that produce no value."""
    OPERANDS: ClassVar[tuple[str, ...]] = ()
    OPERAND_LISTS: ClassVar[tuple[str, ...]] = ()
    BLOCKS: ClassVar[tuple[str, ...]] = ()
    OPTIONAL: ClassVar[frozenset[str]] = frozenset()     # operands that may be None

    loc: SourceLoc = UNKNOWN_LOC
    dtype: DataType | None = None

    def __init_subclass__(cls) -> None:     # (no super(): slots=True makes a new class, which breaks its cell)
        if getattr(cls.operands, "generated", False) or cls.operands is Stmt.operands:
            cls.operands = _operand_reader(cls.OPERANDS, cls.OPERAND_LISTS)

    def operands(self) -> list[Stmt]:
        """The statement's operands: its OPERANDS fields, then its OPERAND_LISTS' items, the None ones left out
        (a new list at each call). Each class gets its own reader of its fields (_operand_reader): the passes
        ask for operands millions of times while compiling a large kernel."""
        out = [getattr(self, name) for name in self.OPERANDS]
        for name in self.OPERAND_LISTS:
            out.extend(getattr(self, name))
        return [o for o in out if o is not None] if out else out

    def replace_operands(self, mapping: dict[Stmt, Stmt]) -> None:
        """Replace every operand found in `mapping` (identity keys)."""
        for name in self.OPERANDS:
            old = getattr(self, name)
            if old is not None and old in mapping:
                setattr(self, name, mapping[old])
        for name in self.OPERAND_LISTS:
            setattr(self, name, [mapping.get(o, o) for o in getattr(self, name)])

    def blocks(self) -> list[Block] | tuple[()]:
        if not self.BLOCKS:
            return ()
        return [getattr(self, name) for name in self.BLOCKS if getattr(self, name) is not None]

    # Identity hashing and equality (eq=False keeps object's C implementations): SSA uses references.


def _operand_reader(names: tuple[str, ...], lists: tuple[str, ...]) -> Callable[[Stmt], list[Stmt]]:
    """Stmt.operands for a class whose operand fields are `names` and `lists`, reading them with one attrgetter."""
    read = attrgetter(*names) if names else None
    if not names and not lists:
        def operands(self: Stmt) -> list[Stmt]:
            return []
    elif not lists and len(names) == 1:
        def operands(self: Stmt) -> list[Stmt]:
            value = read(self)
            return [] if value is None else [value]
    elif not lists:
        def operands(self: Stmt) -> list[Stmt]:
            out = list(read(self))
            return [o for o in out if o is not None] if None in out else out
    else:
        def operands(self: Stmt) -> list[Stmt]:
            out = [] if read is None else [read(self)] if len(names) == 1 else list(read(self))
            for name in lists:
                out.extend(getattr(self, name))
            return [o for o in out if o is not None] if None in out else out
    operands.generated = True      # type: ignore[attr-defined]
    return operands


@dataclass(eq=False, slots=True)
class Block:
    stmts: list[Stmt] = field(default_factory=list)

    def __iter__(self) -> Iterator[Stmt]:
        return iter(self.stmts)

    def __len__(self) -> int:
        return len(self.stmts)

    def append(self, stmt: Stmt) -> Stmt:
        self.stmts.append(stmt)
        return stmt


# ---- containers ---------------------------------------------------------------------------------------------

@dataclass(eq=False, slots=True, kw_only=True)
class ContainerSlot:
    """One global container a kernel touches. Indices of a GlobalPtr run over `ndim` axes (vector/matrix
    element axes trail the field's own axes). Storage is dense row-major.
    kind: 'field' (bound by closure; `host` is the Field, shape known), 'ndarray' (kernel argument number
    `arg_index`; shape known only at launch), 'temp' (kernel-private scratch made by offload) or 'shared' (a
    `wk.simt.block.SharedArray`: per block, uninitialised, static shape; not among a kernel's `containers`,
    the backend declares it where a task uses it; `loc` is the line that made it). An ndarray's
    `element_shape` is the static extents of its last axes (its vector or matrix elements), the same at every
    launch of the kernel built for it."""
    name: str
    kind: str
    dtype: DataType
    ndim: int
    shape: tuple[int, ...] | None = None
    element_shape: tuple[int, ...] = ()
    arg_index: int | None = None
    host: Any = None
    is_grad: bool = False
    loc: SourceLoc | None = None

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name}: {self.dtype.name}[{self.ndim}]>"


@dataclass(slots=True, kw_only=True)
class ArgSpec:
    """A kernel parameter after specialisation: kind 'scalar' (loaded with ArgLoad), 'ndarray' (its
    containers are slots with this arg_index) or 'template' (folded away by the frontend). A vector, matrix or
    struct parameter is a 'template' whose `components` are the indices of the scalar args (after the
    parameters' own) holding its values in order: its `dtype` is then the element dtype or the struct type."""
    name: str
    kind: str
    dtype: Any = None
    ndim: int | None = None
    element_shape: tuple[int, ...] = ()
    needs_grad: bool = False   # ndarray argument has a .grad (the reverse kernel accumulates into it)
    components: tuple[int, ...] = ()


# ---- values ---------------------------------------------------------------------------------------------------

@dataclass(eq=False, slots=True, kw_only=True)
class Const(Stmt):
    value: int | float | bool


@dataclass(eq=False, slots=True, kw_only=True)
class ArgLoad(Stmt):
    """Value of scalar kernel argument number `arg_index`."""
    arg_index: int


@dataclass(eq=False, slots=True, kw_only=True)
class UnaryOp(Stmt):
    OPERANDS: ClassVar[tuple[str, ...]] = ("operand",)
    op: UnaryOpKind
    operand: Stmt


@dataclass(eq=False, slots=True, kw_only=True)
class BinaryOp(Stmt):
    """Operands have the same dtype; comparisons produce u1, everything else the operands' dtype
    (SHL/SHR: the lhs dtype, rhs any int)."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("lhs", "rhs")
    op: BinaryOpKind
    lhs: Stmt
    rhs: Stmt


@dataclass(eq=False, slots=True, kw_only=True)
class TernarySelect(Stmt):
    OPERANDS: ClassVar[tuple[str, ...]] = ("cond", "true_value", "false_value")
    cond: Stmt
    true_value: Stmt
    false_value: Stmt


@dataclass(eq=False, slots=True, kw_only=True)
class Cast(Stmt):
    """Value conversion to `dtype` (float->int truncates toward zero; to u1 means != 0), or a bit
    reinterpretation when `bitcast` (same width)."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("operand",)
    operand: Stmt
    bitcast: bool = False


@dataclass(eq=False, slots=True, kw_only=True)
class RandomValue(Stmt):
    """wk.random(dtype): uniform in [0, 1) for floats, any bits for ints. Counter-based per thread."""
    site: int = 0


# ---- locals ---------------------------------------------------------------------------------------------------

@dataclass(eq=False, slots=True, kw_only=True)
class Alloca(Stmt):
    """A function-local variable of `dtype`, zero-initialised. Its value is read with LocalLoad."""
    name: str = ""


@dataclass(eq=False, slots=True, kw_only=True)
class LocalLoad(Stmt):
    OPERANDS: ClassVar[tuple[str, ...]] = ("alloca",)
    alloca: Alloca


@dataclass(eq=False, slots=True, kw_only=True)
class LocalStore(Stmt):
    OPERANDS: ClassVar[tuple[str, ...]] = ("alloca", "value")
    alloca: Alloca
    value: Stmt


# ---- globals --------------------------------------------------------------------------------------------------

@dataclass(eq=False, slots=True, kw_only=True)
class GlobalPtr(Stmt):
    """Address of container[indices...]; dtype is the element dtype. Indices are i32."""
    OPERAND_LISTS: ClassVar[tuple[str, ...]] = ("indices",)
    container: ContainerSlot
    indices: list[Stmt]


@dataclass(eq=False, slots=True, kw_only=True)
class GlobalLoad(Stmt):
    OPERANDS: ClassVar[tuple[str, ...]] = ("ptr",)
    ptr: GlobalPtr


@dataclass(eq=False, slots=True, kw_only=True)
class GlobalStore(Stmt):
    OPERANDS: ClassVar[tuple[str, ...]] = ("ptr", "value")
    ptr: GlobalPtr
    value: Stmt


@dataclass(eq=False, slots=True, kw_only=True)
class AtomicOp(Stmt):
    """Atomic read-modify-write of *ptr; the statement's value is the old contents. `expected` is set for
    CAS only (compare-and-swap: `value` is stored where *ptr equals `expected`)."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("ptr", "value", "expected")
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"expected"})
    op: AtomicOpKind
    ptr: GlobalPtr
    value: Stmt
    expected: Stmt | None = None


@dataclass(eq=False, slots=True, kw_only=True)
class ShapeOf(Stmt):
    """Extent of `container` along `axis`, as i32 (the value is known at launch)."""
    container: ContainerSlot
    axis: int


# ---- control flow ---------------------------------------------------------------------------------------------

@dataclass(eq=False, slots=True, kw_only=True)
class RangeFor(Stmt):
    """for index in range(begin, end) (i32 bounds; `reversed` runs end-1 down to begin). `parallel` marks
    the loop offload turned into a task's thread index; its body then runs once per index."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("begin", "end")
    BLOCKS: ClassVar[tuple[str, ...]] = ("body",)
    begin: Stmt
    end: Stmt
    body: Block
    reversed: bool = False
    parallel: bool = False
    serialize: bool = False   # wk.loop_config(serialize=True): keep serial even at top level
    block_dim: int = 0        # wk.loop_config(block_dim=N): threads per block of a parallel loop (0: default)
    name: str = ""


@dataclass(eq=False, slots=True, kw_only=True)
class LoopIndex(Stmt):
    """The current index (i32) of the enclosing RangeFor `loop`."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("loop",)
    loop: RangeFor


@dataclass(eq=False, slots=True, kw_only=True)
class While(Stmt):
    """`while True: body` — leaves only through Break.

    `host_counter` is set on Quadrants' `while wk.graph_do_while(c):` (a do-while whose body ends by testing
    `c[()] == 0` and breaking). At a kernel's top level, offload turns such a loop into a host loop: the body's
    statements become tasks of their own (parallel loops stay parallel) that the launch repeats while the
    0-d container `host_counter` holds a non-zero value (passes/offload.py, runtime/host_loops.py)."""
    BLOCKS: ClassVar[tuple[str, ...]] = ("body",)
    body: Block
    host_counter: ContainerSlot | None = None


@dataclass(eq=False, slots=True, kw_only=True)
class Break(Stmt):
    """Leaves the innermost enclosing RangeFor/While."""


@dataclass(eq=False, slots=True, kw_only=True)
class Continue(Stmt):
    """Skips to the next iteration of the innermost enclosing RangeFor/While."""


@dataclass(eq=False, slots=True, kw_only=True)
class If(Stmt):
    OPERANDS: ClassVar[tuple[str, ...]] = ("cond",)
    BLOCKS: ClassVar[tuple[str, ...]] = ("then_block", "else_block")
    cond: Stmt
    then_block: Block
    else_block: Block


@dataclass(eq=False, slots=True, kw_only=True)
class Return(Stmt):
    """Ends the current task's body for this thread (serial top-level `return` in a kernel)."""


@dataclass(eq=False, slots=True, kw_only=True)
class Print(Stmt):
    """`print(...)` in a kernel: `pieces[0] + str(values[0]) + pieces[1] + ... + pieces[-1]` (len(pieces) ==
    len(values) + 1; `end` included), printed on the host when the thread runs it. Replays (`.grad`) skip it.
    `formats`: a Python format spec per value (f-string `{x:.3f}`), or () when every value prints plainly."""
    OPERAND_LISTS: ClassVar[tuple[str, ...]] = ("values",)
    values: list[Stmt] = field(default_factory=list)
    pieces: tuple[str, ...] = ("",)
    formats: tuple[str, ...] = ()


@dataclass(eq=False, slots=True, kw_only=True)
class AssertFail(Stmt):
    """A failed `assert cond, message` (the frontend puts it under `if not cond`; only with wk.init(debug=True)):
    the backend records it like a failed bounds check, and the launch (CPU) or the next sync (GPUs) raises
    wk.KernelAssertionError with `message` and the assert's line. Replays (`.grad`) skip it.
    `printed_pieces`: the literal pieces of the Print just before it that shows a message formatted with run-time
    values; the error then quotes the text that Print last produced."""
    message: str = ""
    printed_pieces: tuple[str, ...] = ()


@dataclass(eq=False, slots=True, kw_only=True)
class SimtOp(Stmt):
    """A `wk.simt` intrinsic (lang/simt.py): `op` is its qualified name ('block.sync', 'subgroup.reduce_add',
    'warp.shfl_down_i32', ...) and `args` its run-time operands in the API's order; `dtype` is None for the
    barriers and fences. Each one synchronises with, or reads values of, other threads: passes treat it as a
    side effect and an ordering point (never merged, moved, dropped or duplicated; no memory fact survives
    it), and it may run only in a parallel task."""
    OPERAND_LISTS: ClassVar[tuple[str, ...]] = ("args",)
    op: str
    args: list[Stmt] = field(default_factory=list)


# The SimtOp a register tile's creation (wk.simt.Tile16x16.zeros() / .eye()) puts before it, with args [Const N]:
# the tile needs a subgroup of N invocations or more. WGSL checks it at run time (the size is the driver's) and
# records the site for wk.SubgroupSizeError; CUDA's warp and AMDGPU's wave are wide enough at compile time.
TILE_SUBGROUP_CHECK = "subgroup.tile_size_check"


# ---- kernels and tasks ----------------------------------------------------------------------------------------

@dataclass(eq=False, slots=True)
class KernelIR:
    """A specialised kernel before offload: one body, its arguments and the containers it touches."""
    name: str
    args: list[ArgSpec]
    containers: list[ContainerSlot]
    body: Block
    loc: SourceLoc = UNKNOWN_LOC
    returns: tuple[ContainerSlot, ...] = ()   # 'temp' slots of the return value (one per value of a tuple)


@dataclass(eq=False, slots=True)
class Task:
    """One unit a backend launches. kind 'range': `bounds` computes `loop.begin`/`loop.end` (pure: constants,
    arguments, shapes, arithmetic, global loads) and `loop.body` runs once per index in parallel.
    kind 'serial': `body` runs on one thread, `loop` is None and `bounds` is empty."""
    name: str
    kind: str
    bounds: Block
    loop: RangeFor | None
    body: Block
    loc: SourceLoc = UNKNOWN_LOC


@dataclass(eq=False, slots=True)
class OffloadedKernel:
    """A kernel after offload: tasks in launch order, sharing args and containers (incl. 'temp' slots).
    `host_loops`: task ranges the launch repeats (top-level graph_do_while loops; see While), outer loops first."""
    name: str
    args: list[ArgSpec]
    containers: list[ContainerSlot]
    tasks: list[Task]
    loc: SourceLoc = UNKNOWN_LOC
    returns: tuple[ContainerSlot, ...] = ()
    host_loops: tuple["HostLoop", ...] = ()


@dataclass(frozen=True, slots=True)
class HostLoop:
    """Tasks [first, stop) of an OffloadedKernel run as a do-while on the host: again while the 0-d container
    `counter` holds a non-zero value after them."""
    first: int
    stop: int
    counter: ContainerSlot
    loc: SourceLoc = UNKNOWN_LOC


STMT_CLASSES: tuple[type[Stmt], ...] = (
    Const, ArgLoad, UnaryOp, BinaryOp, TernarySelect, Cast, RandomValue, Alloca, LocalLoad, LocalStore,
    GlobalPtr, GlobalLoad, GlobalStore, AtomicOp, ShapeOf, RangeFor, LoopIndex, While, Break, Continue, If,
    Return, Print,
)
# Classes only GPU backends lower (the CPU backend refuses them with the call's line).
SIMT_STMT_CLASSES: tuple[type[Stmt], ...] = (SimtOp,)


# ---- autodiff: adstacks (passes/autodiff creates them; docs/internals.md "Adstacks") ----------------------------

@dataclass(eq=False, slots=True, kw_only=True)
class AdStackAlloca(Stmt):
    """A per-thread stack of primal values (and, for floats, their adjoints) of `dtype`. It is empty at the
    start of each adjoint unit (one parallel index of the task). `capacity` is the static slot count when the
    sizing pre-pass could prove one, else None (sized at launch). `stack_id` numbers the task's stacks."""
    name: str = ""
    capacity: int | None = None
    stack_id: int = 0
    size_expr: Any = None


@dataclass(eq=False, slots=True, kw_only=True)
class AdStackPush(Stmt):
    """Push `value` (and a zero adjoint). Past capacity: sets the overflow flag and writes nothing."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("stack", "value")
    stack: AdStackAlloca
    value: Stmt


@dataclass(eq=False, slots=True, kw_only=True)
class AdStackPop(Stmt):
    OPERANDS: ClassVar[tuple[str, ...]] = ("stack",)
    stack: AdStackAlloca


@dataclass(eq=False, slots=True, kw_only=True)
class AdStackLoadTop(Stmt):
    """Primal value on top (clamped: an empty stack reads slot 0)."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("stack",)
    stack: AdStackAlloca


@dataclass(eq=False, slots=True, kw_only=True)
class AdStackLoadTopAdj(Stmt):
    """Adjoint slot of the top (float stacks only)."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("stack",)
    stack: AdStackAlloca


@dataclass(eq=False, slots=True, kw_only=True)
class AdStackAccAdjoint(Stmt):
    """Add `value` to the top's adjoint slot."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("stack", "value")
    stack: AdStackAlloca
    value: Stmt


@dataclass(eq=False, slots=True, kw_only=True)
class AdStackOverflowed(Stmt):
    """u1: whether a push of this thread has overflowed. While loops of a reverse kernel exit on it, so a
    replay whose pushes were dropped still terminates (the launch then raises AdStackOverflowError)."""


AD_STMT_CLASSES: tuple[type[Stmt], ...] = (
    AdStackAlloca, AdStackPush, AdStackPop, AdStackLoadTop, AdStackLoadTopAdj, AdStackAccAdjoint,
    AdStackOverflowed,
)


# ---- wide memory access (passes/vectorize.py creates them; docs/internals.md "Vectorised memory access") -------

@dataclass(eq=False, slots=True, kw_only=True)
class VectorLoad(Stmt):
    """Elements `index .. index + width - 1` of the 1-d `container`, read at once (`dtype` is the element
    dtype; VectorLane reads one of them). The pass emits it only where those elements are in range and
    `index` is a multiple of `width` (storage is aligned to `width` elements)."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("index",)
    container: ContainerSlot
    index: Stmt
    width: int = 4


@dataclass(eq=False, slots=True, kw_only=True)
class VectorLane(Stmt):
    """Element number `lane` of a VectorLoad."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("vector",)
    vector: VectorLoad
    lane: int


@dataclass(eq=False, slots=True, kw_only=True)
class VectorStore(Stmt):
    """Writes `values` (of the container's dtype) to elements `index .. index + len(values) - 1` of the 1-d
    `container` at once; the same in-range and alignment guarantees as VectorLoad."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("index",)
    OPERAND_LISTS: ClassVar[tuple[str, ...]] = ("values",)
    container: ContainerSlot
    index: Stmt
    values: list[Stmt] = field(default_factory=list)


VECTOR_STMT_CLASSES: tuple[type[Stmt], ...] = (VectorLoad, VectorLane, VectorStore)
