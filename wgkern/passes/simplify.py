"""Simplify: constant folding, exact algebraic identities, CSE, store-to-load forwarding and dead code removal.

Exists so the frontend and the transforms after it (autodiff, offload) can emit straightforward IR. Every
rewrite is exact under docs/internals.md (folding uses ir/host_eval.py; float ops backends may round
differently are not folded). Memory reads are merged only while no write may intervene; RandomValue and
statements of unknown classes are never merged, moved or dropped, and no memory fact survives an unknown one
(wk.simt's SimtOp relies on this: a barrier is an ordering point). Works on KernelIR and on each task."""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from wgkern.ir import nodes as ir
from wgkern.ir.host_eval import NotFoldable, evaluate_stmt, to_python, to_value
from wgkern.ir.ops import BinaryOpKind, UnaryOpKind
from wgkern.ir.visitor import walk
from wgkern import dtypes as T
from wgkern.passes.analysis import PURE_VALUE_CLASSES, block_writes, has_effects
from wgkern.passes.index_ranges import in_range_ptrs

NAME = "simplify"

_MAX_ROUNDS = 16
_FOLDABLE = (ir.Const, ir.UnaryOp, ir.BinaryOp, ir.Cast, ir.TernarySelect, ir.ShapeOf)
_B = BinaryOpKind


# ---- identities ---------------------------------------------------------------------------------------------
# Each rule gets the statement and the constant values of its operands (None where not constant) and returns
# an existing operand, a (value, dtype) pair for a new constant, or None.

def _is(value: Any, number: int) -> bool:
    return value is not None and not isinstance(value, bool) and value == number


def _all_ones(value: Any, dtype: T.DataType) -> bool:
    return value is not None and dtype.is_int and T.wrap_int(-1, dtype) == value


def _is_negative_zero(value: Any) -> bool:
    """-0.0 of any float dtype (constants of f16/f32 are numpy scalars, not Python floats)."""
    return _is(value, 0) and math.copysign(1.0, float(value)) < 0


Rewrite = Any   # ir.Stmt (an existing value), (value, dtype) for a new constant, or None


def _add(s: ir.BinaryOp, lv: Any, rv: Any) -> Rewrite:
    t = s.dtype
    if t.is_int:
        if _is(rv, 0):
            return s.lhs
        if _is(lv, 0):
            return s.rhs
    elif _is_negative_zero(rv):    # x + (-0.0) == x for every x; x + 0.0 is not (-0.0 + 0.0 == +0.0)
        return s.lhs
    return None


def _sub(s: ir.BinaryOp, lv: Any, rv: Any) -> Rewrite:
    t = s.dtype
    if _is(rv, 0) and (t.is_int or not _is_negative_zero(rv)):   # x - (+0.0) == x
        return s.lhs
    if t.is_int and s.lhs is s.rhs:
        return 0, t
    return None


def _mul(s: ir.BinaryOp, lv: Any, rv: Any) -> Rewrite:
    t = s.dtype
    if _is(rv, 1):
        return s.lhs
    if _is(lv, 1):
        return s.rhs
    if t.is_int and (_is(rv, 0) or _is(lv, 0)):   # floats: 0 * inf is NaN, 0 * -1 is -0
        return 0, t
    return None


def _floordiv(s: ir.BinaryOp, lv: Any, rv: Any) -> Rewrite:
    return s.lhs if s.dtype.is_int and _is(rv, 1) else None


def _div(s: ir.BinaryOp, lv: Any, rv: Any) -> Rewrite:
    return s.lhs if _is(rv, 1) else None


def _mod(s: ir.BinaryOp, lv: Any, rv: Any) -> Rewrite:
    return (0, s.dtype) if s.dtype.is_int and _is(rv, 1) else None


def _idempotent(s: ir.BinaryOp, lv: Any, rv: Any) -> Rewrite:
    return s.lhs if s.lhs is s.rhs else None


def _bit_and(s: ir.BinaryOp, lv: Any, rv: Any) -> Rewrite:
    t = s.dtype
    if s.lhs is s.rhs:
        return s.lhs
    for value, other in ((rv, s.lhs), (lv, s.rhs)):
        if value is None:
            continue
        if t.is_bool:
            return other if value else (False, t)
        if _all_ones(value, t):
            return other
        if value == 0:
            return 0, t
    return None


def _bit_or(s: ir.BinaryOp, lv: Any, rv: Any) -> Rewrite:
    t = s.dtype
    if s.lhs is s.rhs:
        return s.lhs
    for value, other in ((rv, s.lhs), (lv, s.rhs)):
        if value is None:
            continue
        if t.is_bool:
            return (True, t) if value else other
        if value == 0:
            return other
        if _all_ones(value, t):
            return value, t
    return None


def _bit_xor(s: ir.BinaryOp, lv: Any, rv: Any) -> Rewrite:
    t = s.dtype
    if s.lhs is s.rhs:
        return (False if t.is_bool else 0), t
    if rv is not None and not rv:
        return s.lhs
    if lv is not None and not lv:
        return s.rhs
    return None


def _shift(s: ir.BinaryOp, lv: Any, rv: Any) -> Rewrite:
    return s.lhs if _is(rv, 0) else None


def _int_self_compare(result: bool) -> Callable[[ir.BinaryOp, Any, Any], Rewrite]:
    def rule(s: ir.BinaryOp, lv: Any, rv: Any) -> Rewrite:
        if s.lhs is s.rhs and not s.lhs.dtype.is_float:   # NaN != NaN, so ints and bools only
            return result, T.u1
        return None
    return rule


_BINARY_IDENTITIES: dict[BinaryOpKind, Callable[[ir.BinaryOp, Any, Any], Rewrite]] = {
    _B.ADD: _add, _B.SUB: _sub, _B.MUL: _mul, _B.DIV: _div, _B.FLOORDIV: _floordiv, _B.MOD: _mod,
    _B.MIN: _idempotent, _B.MAX: _idempotent,
    _B.BIT_AND: _bit_and, _B.BIT_OR: _bit_or, _B.BIT_XOR: _bit_xor, _B.SHL: _shift, _B.SHR: _shift,
    _B.CMP_EQ: _int_self_compare(True), _B.CMP_LE: _int_self_compare(True), _B.CMP_GE: _int_self_compare(True),
    _B.CMP_NE: _int_self_compare(False), _B.CMP_LT: _int_self_compare(False), _B.CMP_GT: _int_self_compare(False),
}

_INVOLUTIONS = frozenset({UnaryOpKind.NEG, UnaryOpKind.LOGICAL_NOT, UnaryOpKind.BIT_NOT})


def _identity(stmt: ir.Stmt, constants: dict[ir.Stmt, Any]) -> Rewrite:
    if isinstance(stmt, ir.BinaryOp):
        rule = _BINARY_IDENTITIES.get(stmt.op)
        return rule(stmt, constants.get(stmt.lhs), constants.get(stmt.rhs)) if rule is not None else None
    if isinstance(stmt, ir.UnaryOp):
        inner = stmt.operand
        if stmt.op in _INVOLUTIONS and isinstance(inner, ir.UnaryOp) and inner.op is stmt.op:
            return inner.operand
        return None
    if isinstance(stmt, ir.Cast):
        return stmt.operand if stmt.operand.dtype == stmt.dtype else None
    if isinstance(stmt, ir.TernarySelect):
        cond = constants.get(stmt.cond)
        if cond is not None:
            return stmt.true_value if cond else stmt.false_value
        if stmt.true_value is stmt.false_value:
            return stmt.true_value
    return None


# ---- CSE keys -------------------------------------------------------------------------------------------------

def _const_key(value: Any) -> Any:
    return (type(value).__name__, repr(value))    # repr tells -0.0 from 0.0 and keeps NaN equal to itself


def _value_key(stmt: ir.Stmt) -> tuple | None:
    """A key equal for two statements that always compute the same value, or None (never merged)."""
    kind = type(stmt)
    if kind is ir.Const:
        return kind, stmt.dtype, _const_key(stmt.value)
    if kind is ir.ArgLoad:
        return kind, stmt.dtype, stmt.arg_index
    if kind is ir.ShapeOf:
        return kind, id(stmt.container), stmt.axis
    if kind not in _KEYED_BY_OPERANDS:
        return None
    operands = tuple(id(o) for o in stmt.operands())
    if kind is ir.UnaryOp or kind is ir.BinaryOp:
        return kind, stmt.dtype, stmt.op, operands
    if kind is ir.Cast:
        return kind, stmt.dtype, stmt.bitcast, operands
    if kind is ir.GlobalPtr:
        return kind, id(stmt.container), operands
    return kind, stmt.dtype, operands      # TernarySelect, LoopIndex


_KEYED_BY_OPERANDS = frozenset({ir.UnaryOp, ir.BinaryOp, ir.Cast, ir.TernarySelect, ir.LoopIndex, ir.GlobalPtr})


# ---- the forward walk ----------------------------------------------------------------------------------------

_ZERO_INITIALISED = object()   # `_State.locals` marker: the local holds its initial zero


class _State:
    """What is known at a point of the walk: merged pure values (`available`, shared by nested scopes; each
    scope removes its own entries when it ends), the last value of each global address read or written
    (`memory`, keyed by GlobalPtr) and of each local (`locals`, keyed by Alloca)."""

    def __init__(self, available: dict, memory: dict, local_values: dict):
        self.available = available
        self.memory = memory
        self.locals = local_values
        self.added: list[tuple] = []

    def remember(self, key: tuple, stmt: ir.Stmt) -> None:
        self.available[key] = stmt
        self.added.append(key)

    def close(self) -> None:
        for key in self.added:
            del self.available[key]
        self.added = []

    def child(self, loop_body_writes: tuple[set[ir.Stmt], bool] | None = None) -> _State:
        """The state of a nested block: an `if` branch, or (given its (stored locals, writes global memory)
        pair, analysis.block_writes) a loop body."""
        if loop_body_writes is None:
            return _State(self.available, dict(self.memory), dict(self.locals))
        # A loop body runs again after its own writes: keep only what no iteration changes.
        stored, global_effects = loop_body_writes
        memory = {} if global_effects else dict(self.memory)
        local_values = {a: v for a, v in self.locals.items() if a not in stored}
        return _State(self.available, memory, local_values)

    def forget_writes_of(self, stmt: ir.Stmt, writes: Mapping[ir.Block, tuple[set[ir.Stmt], bool]]) -> None:
        """After a statement with blocks (or an unknown one) ran: drop what it may have changed. `writes`: the
        (stored locals, writes global memory) pairs of blocks as they are now (analysis.block_writes)."""
        for block in stmt.blocks():
            stored, effects = writes.get(block) or block_writes(block, writes)
            for alloca in stored:
                self.locals.pop(alloca, None)
            if effects:
                self.memory.clear()
        if type(stmt) not in _KNOWN_CLASSES:   # e.g. autodiff statements: assume they touch what they name
            self.memory.clear()
            for operand in stmt.operands():
                self.locals.pop(operand, None)


_KNOWN_CLASSES = frozenset({
    ir.Const, ir.ArgLoad, ir.UnaryOp, ir.BinaryOp, ir.TernarySelect, ir.Cast, ir.RandomValue, ir.Alloca,
    ir.LocalLoad, ir.LocalStore, ir.GlobalPtr, ir.GlobalLoad, ir.GlobalStore, ir.AtomicOp, ir.ShapeOf,
    ir.LoopIndex, ir.Break, ir.Continue, ir.Return, ir.RangeFor, ir.While, ir.If,
})


class _Simplifier:
    def __init__(self, in_range: set[ir.GlobalPtr]) -> None:
        # a store forwards its value to later loads only where it cannot be out of range (dropped: the load
        # reads 0 there); passes/index_ranges.py decides
        self.in_range = in_range
        self.replaced: dict[ir.Stmt, ir.Stmt] = {}
        self.constants: dict[ir.Stmt, Any] = {}    # Const statement -> its host value
        self.changed = False
        # analysis.block_writes of each block this round has finished (set when run_block ends, nested blocks
        # first, and not changed after within the round), so a statement's writes are not re-read from every
        # enclosing block
        self.writes: dict[ir.Block, tuple[set[ir.Stmt], bool]] = {}
        # analysis.block_writes of every block as the round found it (set by the round's start): what a loop body
        # may write is read when the walk enters the loop, before the body changes, so from this one pass
        # rather than a walk of the body at each loop entry (a walk per level of nesting)
        self.writes_before: dict[ir.Block, tuple[set[ir.Stmt], bool]] = {}

    def replace(self, old: ir.Stmt, new: ir.Stmt) -> None:
        self.replaced[old] = new
        self.changed = True

    def resolve(self, stmt: ir.Stmt) -> ir.Stmt:
        while stmt in self.replaced:
            stmt = self.replaced[stmt]
        return stmt

    def remap_operands(self, stmt: ir.Stmt) -> None:
        for name in stmt.OPERANDS:
            operand = getattr(stmt, name)
            if operand is not None and operand in self.replaced:
                setattr(stmt, name, self.resolve(operand))
        for name in stmt.OPERAND_LISTS:
            setattr(stmt, name, [self.resolve(o) for o in getattr(stmt, name)])

    def new_const(self, value: Any, dtype: T.DataType, like: ir.Stmt) -> ir.Const:
        return ir.Const(value=to_python(value, dtype), dtype=dtype, loc=like.loc)

    def fold(self, stmt: ir.Stmt) -> ir.Stmt | None:
        """A replacement for `stmt`: an existing value, a new Const (to insert in its place), or None."""
        if isinstance(stmt, _FOLDABLE) and not isinstance(stmt, ir.Const):
            constants = self.constants
            operands = stmt.operands()
            if all(o in constants for o in operands):
                env = {o: constants[o] for o in operands}
                try:
                    value = evaluate_stmt(stmt, env, None, {}, exact_only=True)
                except NotFoldable:
                    value = None
                if value is not None:
                    return self.new_const(value, stmt.dtype, stmt)
        rewrite = _identity(stmt, self.constants)
        if isinstance(rewrite, tuple):
            value, dtype = rewrite
            return self.new_const(to_value(value, dtype), dtype, stmt)
        return rewrite

    def run_block(self, block: ir.Block, state: _State) -> None:
        out: list[ir.Stmt] = []
        self.run_stmts(block.stmts, out, state)
        block.stmts = out
        state.close()
        self.writes[block] = block_writes(block, self.writes)

    def run_stmts(self, stmts: list[ir.Stmt], out: list[ir.Stmt], state: _State) -> None:
        for stmt in stmts:
            self.remap_operands(stmt)
            if isinstance(stmt, ir.If) and stmt.cond in self.constants:
                taken = stmt.then_block if self.constants[stmt.cond] else stmt.else_block
                self.changed = True
                self.run_stmts(taken.stmts, out, state)   # inline the branch that always runs
                continue
            if isinstance(stmt, ir.RangeFor) and _empty_range(stmt, self.constants):
                self.changed = True
                continue
            replacement = self.zero_of_fresh_local(stmt, state) if isinstance(stmt, ir.LocalLoad) \
                else self.fold(stmt)
            if replacement is not None and replacement is not stmt:
                self.replace(stmt, replacement)
                if replacement.dtype is not None and isinstance(replacement, ir.Const) \
                        and replacement not in self.constants:
                    stmt = replacement     # a new constant takes the folded statement's place
                else:
                    continue
            if self.merge(stmt, state):
                continue
            if isinstance(stmt, ir.Const):
                self.constants[stmt] = to_value(stmt.value, stmt.dtype)
            out.append(stmt)
            self.track_memory(stmt, state)
            loop_body = stmt.body if isinstance(stmt, (ir.RangeFor, ir.While)) else None
            for child in stmt.blocks():
                self.run_block(child, state.child(self.writes_before[child] if loop_body is child else None))
            state.forget_writes_of(stmt, self.writes)

    def zero_of_fresh_local(self, load: ir.LocalLoad, state: _State) -> ir.Const | None:
        """A load between an Alloca and any store to it reads zero (Allocas zero-initialise each time)."""
        if state.locals.get(load.alloca) is not _ZERO_INITIALISED:
            return None
        dtype = load.dtype
        return self.new_const(to_value(0, dtype), dtype, load)

    def merge(self, stmt: ir.Stmt, state: _State) -> bool:
        """CSE and forwarding: replace `stmt` by an equal value already computed, if any."""
        earlier: ir.Stmt | None = None
        if isinstance(stmt, ir.GlobalLoad):
            earlier = state.memory.get(stmt.ptr)
        elif isinstance(stmt, ir.LocalLoad):
            earlier = state.locals.get(stmt.alloca)
        else:
            key = _value_key(stmt)
            if key is None:
                return False
            earlier = state.available.get(key)
            if earlier is None:
                state.remember(key, stmt)
        if earlier is None or earlier is _ZERO_INITIALISED or earlier.dtype != stmt.dtype:
            return False
        self.replace(stmt, earlier)
        return True

    def track_memory(self, stmt: ir.Stmt, state: _State) -> None:
        if isinstance(stmt, ir.GlobalLoad):
            state.memory[stmt.ptr] = stmt
        elif isinstance(stmt, ir.GlobalStore):
            state.memory.clear()           # another pointer may alias this address
            if stmt.ptr in self.in_range:
                state.memory[stmt.ptr] = stmt.value
        elif isinstance(stmt, ir.AtomicOp):
            state.memory.clear()
        elif isinstance(stmt, ir.LocalLoad):
            state.locals[stmt.alloca] = stmt
        elif isinstance(stmt, ir.LocalStore):
            state.locals[stmt.alloca] = stmt.value
        elif isinstance(stmt, ir.Alloca):
            state.locals[stmt] = _ZERO_INITIALISED


def _empty_range(loop: ir.RangeFor, constants: dict[ir.Stmt, Any]) -> bool:
    begin, end = constants.get(loop.begin), constants.get(loop.end)
    return begin is not None and end is not None and end <= begin


# ---- dead code ------------------------------------------------------------------------------------------------

_DROPPABLE_WHEN_UNUSED = (ir.Const, ir.ArgLoad, ir.ShapeOf, ir.UnaryOp, ir.BinaryOp, ir.TernarySelect, ir.Cast,
                          ir.GlobalPtr, ir.GlobalLoad, ir.LocalLoad, ir.LoopIndex, ir.Alloca)


def _uses_and_unread_allocas(blocks: list[ir.Block], extra_uses: list[ir.Stmt]) -> tuple[dict[ir.Stmt, int],
                                                                                      set[ir.Stmt]]:
    """How many times each statement is used (as an operand, or in `extra_uses`), and the Allocas nothing reads,
    in one walk."""
    uses: dict[ir.Stmt, int] = {}
    for stmt in extra_uses:
        uses[stmt] = uses.get(stmt, 0) + 1
    allocas, read = set(), set()
    for block in blocks:
        for stmt in walk(block):
            operands = stmt.operands()
            for operand in operands:
                uses[operand] = uses.get(operand, 0) + 1
            if isinstance(stmt, ir.Alloca):
                allocas.add(stmt)
            elif isinstance(stmt, ir.LocalLoad):
                read.add(stmt.alloca)
            elif not isinstance(stmt, ir.LocalStore):
                read.update(o for o in operands if isinstance(o, ir.Alloca))  # e.g. autodiff statements
    return uses, allocas - read


def _is_dead(stmt: ir.Stmt, uses: dict[ir.Stmt, int], unread: set[ir.Stmt]) -> bool:
    if isinstance(stmt, _DROPPABLE_WHEN_UNUSED):
        return uses.get(stmt, 0) == 0 or stmt in unread
    if isinstance(stmt, ir.LocalStore):
        return stmt.alloca in unread
    if isinstance(stmt, (ir.If, ir.RangeFor)):
        return not has_effects(stmt)
    if isinstance(stmt, ir.While):
        return len(stmt.body.stmts) == 1 and isinstance(stmt.body.stmts[0], ir.Break)
    return False


# Removing one of these frees nothing the same sweep has not already judged with that removal counted: its
# operands are defined before it in its block or an enclosing one (the verifier's rule), so the reversed sweep
# reaches them after it, with their use counts already lowered; it reads no local (an Alloca is judged unread from
# its loads) and has no effect (an `if` or loop around it was judged by its effects). Removing a LocalLoad, a
# statement with effects or blocks, anything directly in a `while` body (judged dead by what its body holds), or
# anything when the unit has several blocks (swept in order, so an earlier block's statements are judged before a
# later block's removals), may free more: then the sweep runs again. Either way the result is the same, since
# what is dead stays dead after other removals: the sweeps end at the one state with nothing dead.
_REMOVAL_FREES_NOTHING_MORE = frozenset({*PURE_VALUE_CLASSES, ir.GlobalLoad, ir.Alloca})


def _remove_dead(blocks: list[ir.Block], extra_uses: list[ir.Stmt]) -> bool:
    """Remove dead statements until none is left; True when something was removed."""
    removed_any = False
    while True:
        uses, unread = _uses_and_unread_allocas(blocks, extra_uses)
        removed = False
        again = False           # a removal that may make a statement the sweep already kept dead

        def sweep(block: ir.Block, in_while_body: bool) -> None:
            nonlocal removed, again
            kept = []
            for stmt in reversed(block.stmts):
                if _is_dead(stmt, uses, unread):
                    removed = True
                    if in_while_body or type(stmt) not in _REMOVAL_FREES_NOTHING_MORE:
                        again = True
                    for operand in stmt.operands():
                        uses[operand] = uses.get(operand, 0) - 1
                    continue
                kept.append(stmt)
                for child in stmt.blocks():
                    sweep(child, isinstance(stmt, ir.While))
            block.stmts = kept[::-1]

        for block in blocks:
            sweep(block, False)
        removed_any |= removed
        if not again and not (removed and len(blocks) > 1):
            return removed_any


# ---- entry points ---------------------------------------------------------------------------------------------

def _writes_of_every_block(blocks: list[ir.Block]) -> dict[ir.Block, tuple[set[ir.Stmt], bool]]:
    """analysis.block_writes of `blocks` and of every block nested in them, in one pass (inner blocks first)."""
    known: dict[ir.Block, tuple[set[ir.Stmt], bool]] = {}

    def summarise(block: ir.Block) -> None:
        for stmt in block.stmts:
            for child in stmt.blocks():
                summarise(child)
        known[block] = block_writes(block, known)

    for block in blocks:
        summarise(block)
    return known


def _hoist_constants(block: ir.Block) -> None:
    """Move every constant to the top of `block` (constants depend on nothing), so CSE merges equal ones
    from sibling blocks and loops do not rematerialise them."""
    constants: list[ir.Stmt] = []

    def take(inner: ir.Block) -> None:
        kept = []
        for stmt in inner.stmts:
            if isinstance(stmt, ir.Const):
                constants.append(stmt)
                continue
            kept.append(stmt)
            for child in stmt.blocks():
                take(child)
        inner.stmts = kept

    take(block)
    block.stmts = constants + block.stmts


def _simplify_unit(blocks: list[ir.Block], loop: ir.RangeFor | None = None,
                   before: tuple[ir.Block, ...] = ()) -> None:
    """Simplify blocks that form one self-contained unit (a kernel body, or a task's bounds then body).
    `before`: blocks that run first (a task's bounds, for its body), read for index ranges only."""
    for _ in range(_MAX_ROUNDS):
        _hoist_constants(blocks[0])
        simplifier = _Simplifier(in_range_ptrs([*before, *blocks]))
        simplifier.writes_before = _writes_of_every_block(blocks)
        for block in blocks:
            simplifier.run_block(block, _State({}, {}, {}))
            if loop is not None and block is blocks[0]:
                loop.begin = simplifier.resolve(loop.begin)
                loop.end = simplifier.resolve(loop.end)
        extra = [loop.begin, loop.end] if loop is not None else []
        removed = _remove_dead(blocks, extra)
        if not (simplifier.changed or removed):
            return


def simplify_block(block: ir.Block) -> ir.Block:
    """Simplify one self-contained block in place (helper for other passes and tests)."""
    _simplify_unit([block])
    return block


def run(kernel: ir.KernelIR | ir.OffloadedKernel) -> ir.KernelIR | ir.OffloadedKernel:
    if isinstance(kernel, ir.OffloadedKernel):
        for task in kernel.tasks:
            if task.kind == "range":
                _simplify_unit([task.bounds], task.loop)    # bounds and body share nothing
                _simplify_unit([task.body], before=(task.bounds,))
            else:
                _simplify_unit([task.body])
    else:
        _simplify_unit([kernel.body])
    return kernel
