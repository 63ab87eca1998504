"""IR -> SizeExpr for the adstacks of one task that the structural pre-pass could not size.

Capacity = max over the task's parallel index of the sum over push sites of the product of the trip counts
`max(end - begin, 0)` of the loops between the push and the unit's entry. Each trip count is maximised over
every variable but the parallel index (enclosing serial loops' indices and the fresh variables translate.py
gives values with no exact form): per-level maxima, sound, loose on triangular loops. A push inside a while
loop, or a bound translate.py cannot express or bound, gives None: the runtime then uses
`default_ad_stack_size`, with overflow detection as the safety net (docs/sizing.md lists both)."""
from __future__ import annotations

from wgkern.ir import nodes as ir
from wgkern.sizing import expr as E
from wgkern.sizing.local_values import local_values
from wgkern.sizing.translate import OutOfGrammar, Translator, where_of


def _push_chains(body: ir.Block) -> dict[ir.AdStackAlloca, list[list[ir.Stmt]]]:
    """For each stack, the chain of enclosing loops (outermost first) of each of its push sites."""
    chains: dict[ir.AdStackAlloca, list[list[ir.Stmt]]] = {}

    def visit(block: ir.Block, loops: list[ir.Stmt]) -> None:
        for stmt in block.stmts:
            if isinstance(stmt, ir.AdStackAlloca):
                chains.setdefault(stmt, [])
            elif isinstance(stmt, ir.AdStackPush):
                chains.setdefault(stmt.stack, []).append(list(loops))
            inner = loops + [stmt] if isinstance(stmt, (ir.RangeFor, ir.While)) else loops
            for child in stmt.blocks():
                visit(child, inner)

    visit(body, [])
    return chains


def push_site_count(chain: list[ir.Stmt], translate: Translator) -> E.SizeExpr:
    """Product of per-level maxima of the trip counts of `chain` (raises OutOfGrammar): each level's trip
    count is maximised over every variable but the unit's index (Translator.close)."""
    keep = {translate.parallel} if translate.parallel is not None else set()
    total: E.SizeExpr = E.Const(1)
    for loop in chain:
        if not isinstance(loop, ir.RangeFor):
            raise OutOfGrammar("while loop")
        trips = E.trip_count(translate(loop.begin), translate(loop.end))
        total = E.mul(total, translate.close(trips, keep))
    return total


def task_size_exprs(task: ir.Task) -> dict[ir.AdStackAlloca, E.SizeExpr | None]:
    """A SizeExpr (or None: out of grammar) for every stack of `task` whose `capacity` is None."""
    chains = _push_chains(task.body)
    env: dict[ir.RangeFor, E.BoundVar] = {}
    parallel: E.BoundVar | None = None
    if task.loop is not None:
        parallel = E.BoundVar("i")
        env[task.loop] = parallel
    for number, loop in enumerate(s for s in _walk_loops(task.body)):
        env[loop] = E.BoundVar(f"j{number}")
    translate = Translator(env, local_values(task.body), parallel)
    out: dict[ir.AdStackAlloca, E.SizeExpr | None] = {}
    for stack, sites in chains.items():
        if stack.capacity is not None:
            continue
        try:
            per_unit: E.SizeExpr = E.Const(0)
            for chain in sites:
                per_unit = E.add(per_unit, push_site_count(chain, translate))
            if parallel is not None and parallel in E.free_vars(per_unit):
                begin, end = Translator({})(task.loop.begin), Translator({})(task.loop.end)
                per_unit = E.MaxOverRange(parallel, begin, end, per_unit, where_of(task.loop.loc))
            out[stack] = E.maximum(per_unit, E.Const(1))
        except OutOfGrammar:
            out[stack] = None
    return out


def _walk_loops(block: ir.Block):
    for stmt in block.stmts:
        if isinstance(stmt, ir.RangeFor):
            yield stmt
        for child in stmt.blocks():
            yield from _walk_loops(child)
