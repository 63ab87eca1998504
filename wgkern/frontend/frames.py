"""What the builder keeps per function being translated (the kernel or an inlined func): its Frame (scope,
loops, branch depths, return state) and the names found by reading its AST up front (assigned names, names
reduced with `+=` or atomics)."""
from __future__ import annotations

import ast
import types
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from wgkern.frontend import intrinsics, reads
from wgkern.frontend.scope import LocalVar, Scope, StructVar, VectorVar
from wgkern.frontend.source import FunctionSource
from wgkern.frontend.static_eval import closure_values
from wgkern.ir import nodes as ir


@dataclass(eq=False)
class ReturnState:
    """How an inlined func returns. mode 'none' (no return), 'direct' (one return, the last statement: its
    value is used as is) or 'flag' (returns anywhere: result variable + `returned` flag guarding the rest)."""
    mode: str
    annotation: Any = None
    entry_block: ir.Block | None = None
    entry_index: int = 0
    flag: ir.Alloca | None = None
    result: LocalVar | VectorVar | StructVar | None = None
    first_kind: str = ""          # what the first 'return' gave (for the error when a later one differs)
    value: Any = None


@dataclass(eq=False)
class Frame:
    """One function being translated: the kernel itself or an inlined func."""
    src: FunctionSource
    is_kernel: bool
    scope: Scope = field(default_factory=Scope)
    loops: list[str] = field(default_factory=list)     # 'ir' / 'static', innermost last
    loop_branch_depths: list[int] = field(default_factory=list)   # branch_depth when each loop was entered
    branch_depth: int = 0         # run-time `if`s around the statement being translated
    constant_branch_depth: int = 0    # `if`s on a Python constant (not wk.static) around it: see visit_If
    ret: ReturnState | None = None
    assigned: frozenset[str] = frozenset()   # names assigned anywhere in the function
    reduction_names: frozenset[str] = frozenset()   # see reduction_names()

    @property
    def fn(self) -> Callable[..., Any]:
        return self.src.fn

    @property
    def name(self) -> str:
        return getattr(self.src.fn, "__name__", "?")


# A function's tree is parsed once per code object (source.py) and never changed, while a func is inlined at each
# of its calls (hundreds in one of Genesis's kernels): what these functions find in the tree alone is kept per
# tree. Nothing that depends on the function's namespaces (which may change between builds) is kept here.
_PER_TREE: dict[str, weakref.WeakKeyDictionary] = {
    "assigned": weakref.WeakKeyDictionary(), "reduced": weakref.WeakKeyDictionary(),
    "returns": weakref.WeakKeyDictionary()}


def per_tree(kind: str, tree: ast.AST, find: Callable[[], Any]) -> Any:
    """`find()`, computed once per `tree` for each `kind` of finding."""
    found = _PER_TREE[kind].get(tree)
    if found is None:
        found = _PER_TREE[kind][tree] = find()
    return found


def assigned_names(tree: ast.AST) -> frozenset[str]:
    """Names a function assigns anywhere, including through `v[k] = ...` / `v.x = ...` (so a parameter that is
    modified gets a variable of its own)."""
    return per_tree("assigned", tree, lambda: frozenset(_assigned_names(tree)))


def _assigned_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            base = node.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                names.add(base.id)
    return names


_REDUCING_AUGMENTED = (ast.Add, ast.Sub, ast.BitAnd, ast.BitOr, ast.BitXor)


def reduction_names(tree: ast.FunctionDef, fn: Callable[..., Any] | None = None) -> frozenset[str]:
    """Function-scope names (parameters, or assigned by a top-level statement) that a top-level loop updates with
    `+=`, `-=`, `&=`, `|=`, `^=` or `wk.atomic_*(name, ...)`: where that loop runs in parallel (the kernel's own,
    or a func's inlined at the kernel's top level), Taichi makes those updates atomic, so they get a temp slot.
    An atomic is known by its name or, through `fn`'s globals and closure, by what the callee names (`op(s, v)`
    with `op = wk.atomic_add`). What the tree alone says is kept per tree; the callees are looked up in `fn`'s
    namespaces at every call, since those may change between builds (and functions made from one code object
    share a tree but not their closures)."""
    found = per_tree("reduced", tree, lambda: _reductions_in_tree(tree))
    reduced = set(found.certain)
    for callee, name in found.callees:
        if name not in reduced and _names_an_atomic(callee, fn):
            reduced.add(name)
    return frozenset(reduced)


@dataclass(frozen=True, eq=False)
class _TreeReductions:
    """A tree's reductions known from its text (`certain`), and the (callee, name) pairs of calls `callee(name,
    ...)` updating a function-scope name whose callee may name an atomic through the function's namespaces."""
    certain: frozenset[str]
    callees: tuple[tuple[ast.expr, str], ...]


def _reductions_in_tree(tree: ast.FunctionDef) -> _TreeReductions:
    top_assigned: set[str] = {arg.arg for arg in tree.args.args + tree.args.kwonlyargs}
    top_level = list(top_level_statements(tree.body))
    for stmt in top_level:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        top_assigned.add(node.id)
    certain: set[str] = set()
    callees: list[tuple[ast.expr, str]] = []
    for stmt in top_level:
        if not isinstance(stmt, ast.For):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.AugAssign) and isinstance(node.op, _REDUCING_AUGMENTED):
                certain.add(base_name(node.target))
            elif isinstance(node, ast.Call) and node.args:
                name = base_name(node.args[0])
                if name not in top_assigned:
                    continue
                callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if callee.startswith("atomic_"):
                    certain.add(name)
                else:
                    callees.append((node.func, name))
    return _TreeReductions(frozenset(top_assigned & certain), tuple(callees))


def _names_an_atomic(callee: ast.expr, fn: Callable[..., Any] | None) -> bool:
    """Whether a callee spelled `name` or `module.name` is one of the wk.atomic_* functions, looked up in `fn`'s
    closure and globals (a name the function binds itself is not looked up: it is not known before the build)."""
    path: list[str] = []
    while isinstance(callee, ast.Attribute):
        path.append(callee.attr)
        callee = callee.value
    if fn is None or not isinstance(callee, ast.Name):
        return False
    log = reads.current()
    if log is not None:
        log.name(fn, callee.id)
    value = closure_values(fn).get(callee.id, _MISSING)
    if value is _MISSING:
        value = getattr(fn, "__globals__", {}).get(callee.id, _MISSING)
    for attr in reversed(path):     # through modules only (an object's attribute may be a property that runs)
        if log is not None and isinstance(value, types.ModuleType):
            log.attribute(value, attr)
        value = getattr(value, attr, _MISSING) if isinstance(value, types.ModuleType) else _MISSING
    return hashable(value) and value in intrinsics.ATOMICS


_MISSING = object()


def hashable(value: Any) -> bool:
    """Whether `value` can be a dict key (a callee looked up in the intrinsic tables)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


def top_level_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A function's top-level statements, those inside `with wk.stream_parallel():` blocks included."""
    for stmt in body:
        if isinstance(stmt, ast.With):
            yield from top_level_statements(stmt.body)
        else:
            yield stmt


def base_name(node: ast.expr) -> str:
    """`v` for `v`, `v[0]`, `v.x`, `v[i].y`; '' when the chain does not start at a name."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def is_field(obj: Any) -> bool:
    from wgkern.lang.fields import Container
    return isinstance(obj, Container)
