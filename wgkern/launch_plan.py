"""Launch plans: a kernel called again with the same argument objects reuses what its last such launch worked out.

Programs such as Genesis launch kernels whose arguments are the same frozen dataclass values (hundreds of ndarray
members in all) and configuration objects at every step, with only a few scalars changing. Checking them
(arguments.specialise), flattening them into buffer and shape lists and packing those (the backend) costs far more
than the launch itself. So after a forward launch, launch.py hands its outcome to `remember`, which keeps
a LaunchPlan under the kernel, the call's form (positional count, keyword names) and the identity of every
argument that is not a scalar parameter's: the compiled entry, the full buffer and shape lists, the containers the
kernel writes and those its loop bounds read.

A plan is used only while nothing it depends on can have changed, and `launch` re-reads only what can:
- each scalar argument's value (checked and converted as specialise does);
- the attribute bindings of the template objects passed and of the objects their holdings search reads
  (lang/argument_holdings.py: @data_oriented and dataclass attributes, theirs, ...): the same names bound to the
  same objects mean the same holdings, checked as flat lists of names and ids (a solver object reaches a dozen
  others, hundreds of attributes in all), and the members of dataclass values that are compared by template key.
  The objects of @data_oriented classes are compared only when an attribute of one was assigned since the plan's
  last check (lang/rebinds.py counts the assignments; Genesis assigns none during a step);
- whether any container's `.grad` was rebound since (Container.grad_rebinds);
- the argument objects themselves: a plan is dropped when one of them is collected (a weak-reference callback), so
  an id in a key always names the object the plan was built from. Plain immutable values (numbers, strings, None)
  are held instead.
Anything else falls back to the full launch path, which builds a new plan. Plans live on the Program, so wk.reset()
drops them. Launches under a Tape, in forward mode, under Tape validation, with numpy or torch arguments (copied or
wrapped per call), with vector/struct values or with dynamically sized adstacks never get a plan."""
from __future__ import annotations

import enum
import operator
import weakref
from dataclasses import dataclass
from typing import Any, Callable

from wgkern.backends.base import NO_EXTRA, LaunchArgs
from wgkern.lang.fields import Container
from wgkern.lang.argument_cache import DATACLASS_ARGUMENTS, HashedTuple
from wgkern.lang.argument_checks import _scalar_value, template_key
from wgkern.lang.argument_holdings import searched_objects
from wgkern.lang.param_rules import DATACLASS, NDARRAY, OBJECT, SCALAR, TEMPLATE
from wgkern.lang.rebinds import Rebinds, is_watched

MISS = object()                  # `launch`: no usable plan; take the full path
MAX_PLANS_PER_FORM = 64          # a kernel called with ever new argument objects does not grow the table forever
_HELD = (int, float, bool, str, bytes, complex, type(None), enum.Enum)   # held, not weakly referenced
_GENERATION = operator.attrgetter("generation")
_PLANNED_KINDS = frozenset((SCALAR, NDARRAY, TEMPLATE, DATACLASS, OBJECT))


@dataclass(slots=True)
class _CallForm:
    """One way of calling a kernel (positional count, keyword names): which call positions are scalar
    parameters (value re-read at each launch) and which identify the plan (all the others)."""
    pick: Callable[[tuple[Any, ...]], Any] | None     # call values -> the identifying ones (None: there are none)
    scalars: list[tuple[int, int, Any]]        # (call position, parameter index, ParamRule)
    plans: dict[tuple[int, ...], "LaunchPlan"]


@dataclass(slots=True, eq=False)
class LaunchPlan:
    entry: Any                       # launch.CompiledEntry
    record_key: Any                  # (kernel, Specialisation key), its hash kept: bound records, random ids
    held: list[Any]                  # weak references to (or the values of) the identifying arguments
    scalar_count: int                # len(LaunchArgs.scalars)
    buffers: list[Any]
    shapes: list[Any]
    # The containers whose generation each launch bumps (written) and records (bound: deciding trip counts): held
    # where they are dataclass members or fields, named by (call position, use its .grad) where they are
    # arguments (a plan must not keep its arguments alive).
    written: list[Container]
    written_at: list[tuple[int, bool]]
    bound: list[Container]
    bound_at: list[tuple[int, bool]]
    # the arguments that are template objects of unwatched classes: (position, attribute names, their ids)
    objects: list[tuple[int, tuple[Any, ...], tuple[int, ...]]]
    # the objects the holdings search reads below those: (weak reference, attribute names, their ids); a live
    # reference proves that an id in its holder's ids still names it
    searched: list[tuple[weakref.ref, tuple[Any, ...], tuple[int, ...]]]
    keyed: list[Any]                 # argument_cache._Keyed members of dataclass values, compared by key
    grad_rebinds: int
    bound_cache: dict[Any, Any]
    # `objects` and `searched` for the objects whose attribute assignments are counted (lang/rebinds.py): compared
    # only when Rebinds.count moved from `rebinds`, the count when they were last found the same. (A watched
    # searched object can only be collected once its holder rebound the attribute holding it, which the count
    # shows.)
    watched_objects: list[tuple[int, tuple[Any, ...], tuple[int, ...]]]
    watched_searched: list[tuple[weakref.ref, tuple[Any, ...], tuple[int, ...]]]
    rebinds: int
    checks: bool = True              # whether any of objects, searched, keyed and the watched lists is not empty
    # a kernel without scalar parameters: the LaunchArgs every launch through the plan passes, its launch_id set
    arguments: LaunchArgs | None = None


def launch_and_mark_written(program: Any, entry: Any, arguments: LaunchArgs, written: Any,
                            written_at: Any, values: Any) -> None:
    """Launch a compiled entry and bump the generation of every container it may write: the fields in `written`,
    then the arguments at `written_at` ((position in `values`, whether its .grad is written))."""
    entry.compiled.launch(arguments)
    program.pending_work = True
    program.stats.launches += 1
    for container in written:
        container.generation += 1
    for position, is_grad in written_at:
        container = values[position]
        (container.grad if is_grad else container).generation += 1


def _form_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return (len(args), tuple(kwargs)) if kwargs else len(args)


def launch(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any], program: Any) -> Any:
    """Launch through a plan and return the kernel's result, or MISS."""
    forms = program.launch_plans.get(kernel)
    if forms is None:
        return MISS
    form = forms.get((len(args), tuple(kwargs)) if kwargs else len(args))    # _form_key, inlined
    if form is None:
        return MISS
    call = args + tuple(kwargs.values()) if kwargs else args
    plan = form.plans.get(tuple(map(id, form.pick(call))) if form.pick is not None else ())
    if plan is None or plan.grad_rebinds != Container.grad_rebinds or (plan.checks and not _still_valid(plan, call)):
        return MISS
    entry = plan.entry
    program.launch_counter += 1
    launch_id = program.launch_counter
    arguments = plan.arguments
    if arguments is None:
        scalars: list[Any] = [None] * plan.scalar_count
        for position, index, rule in form.scalars:
            value = call[position]
            dtype = rule.dtype
            scalars[index] = value if type(value) is float and dtype.kind == "f" else \
                _scalar_value(kernel, rule, dtype, value)
        arguments = LaunchArgs(scalars, plan.buffers, plan.shapes, launch_id, program.options.random_seed,
                               entry.launch_extra or NO_EXTRA, plan.bound_cache)
    else:
        arguments.launch_id = launch_id
    if entry.uses_random:
        program.random_launch_ids[plan.record_key] = launch_id
    program.stats.cache_hits += 1
    kernel.last_compiled = entry
    launch_and_mark_written(program, entry, arguments, plan.written, plan.written_at, call)
    if plan.bound or plan.bound_at:
        bound = plan.bound
        if plan.bound_at:
            bound = bound + [c for c in (call[p].grad if g else call[p] for p, g in plan.bound_at) if c is not None]
        program.bound_records[plan.record_key] = list(zip(bound, map(_GENERATION, bound)))
    if entry.returns:
        from wgkern.launch import _read_return
        return _read_return(program, entry)
    return None


def _still_valid(plan: LaunchPlan, call: tuple[Any, ...]) -> bool:
    """Whether nothing `plan` depends on changed (`launch` compares grad_rebinds first, and calls this only for
    a plan with `checks`)."""
    if plan.grad_rebinds != Container.grad_rebinds:
        return False
    if not _same_attributes(plan.objects, plan.searched, call):
        return False
    if plan.rebinds != Rebinds.count:
        if not _same_attributes(plan.watched_objects, plan.watched_searched, call):
            return False
        plan.rebinds = Rebinds.count
    for keyed in plan.keyed:
        key = template_key(keyed.item)
        if key is not keyed.key and key != keyed.key:
            return False
    return True


def _same_attributes(objects: list[tuple[int, tuple[Any, ...], tuple[int, ...]]],
                     searched: list[tuple[weakref.ref, tuple[Any, ...], tuple[int, ...]]], call: tuple[Any, ...]) -> bool:
    """Whether the arguments at the positions of `objects` and the live objects of `searched` still bind the
    same attribute names to the same objects."""
    for position, names, ids in objects:
        attributes = call[position].__dict__
        if tuple(map(id, attributes.values())) != ids or tuple(attributes) != names:
            return False
    for reference, names, ids in searched:
        held = reference()
        if held is None:
            return False
        attributes = held.__dict__
        if tuple(map(id, attributes.values())) != ids or tuple(attributes) != names:
            return False
    return True


def remember(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any], program: Any, spec: Any, entry: Any,
             buffers: list[Any], shapes: list[Any]) -> None:
    """After a full forward launch (no tape, forward mode or validation): keep a plan for the same call, if the
    call is one a plan can stand for (see the module docstring)."""
    rules = spec.rules
    if entry.numpy_args or entry.capacity_plan is not None or len(args) + len(kwargs) != len(rules):
        return
    names = [rule.name for rule in rules]
    order = list(range(len(args))) + [names.index(name) if name in names else -1 for name in kwargs]
    if -1 in order[len(args):] or len(set(order)) != len(order):
        return
    call = args + tuple(kwargs.values()) if kwargs else args
    values = spec.values
    scalars: list[tuple[int, int, Any]] = []
    identifying: list[int] = []
    objects: list[tuple[int, tuple[Any, ...], tuple[int, ...]]] = []
    searched: dict[int, Any] = {}
    keyed: list[Any] = []
    for position, index in enumerate(order):
        rule, (kind, part), value = rules[index], spec.parts[index], call[position]
        if kind not in _PLANNED_KINDS:
            return
        if rule.kind == SCALAR:
            scalars.append((position, index, rule))
            continue
        if kind == SCALAR or (kind == NDARRAY and values[index] is not value):
            return            # an unannotated number (a new object per call), a torch tensor (wrapped per call)
        identifying.append(position)
        if kind == DATACLASS:
            cached = DATACLASS_ARGUMENTS.entries.get((id(spec.rules[index]), id(value)))
            if cached is None or not cached.found.frozen or cached.part is not part:
                return        # checked afresh at every launch (a numpy member, a mutable dataclass)
            keyed.extend(cached.found.keyed)
        elif kind in (TEMPLATE, OBJECT) and not isinstance(value, (Container,) + _HELD):
            attributes = getattr(value, "__dict__", None)
            if not isinstance(attributes, dict) or type(value).__module__.startswith("wgkern."):
                return        # a tuple, a list, an object without attributes of its own: checked every launch
            objects.append((position, tuple(attributes), tuple(map(id, attributes.values()))))
            for item in searched_objects(value):
                searched.setdefault(id(item), item)
    snapshots: list[tuple[weakref.ref, tuple[Any, ...], tuple[int, ...]]] = []
    checked = {id(call[position]) for position, _, _ in objects}     # arguments: their attributes are checked
    for item in searched.values():
        if id(item) in checked:
            continue
        try:
            reference = weakref.ref(item)
        except TypeError:
            return            # an object the search reads that cannot be weakly referenced: checked every launch
        attributes = item.__dict__
        snapshots.append((reference, tuple(attributes), tuple(map(id, attributes.values()))))
    held: list[Any] = []
    form_key = _form_key(args, kwargs)
    forms = program.launch_plans.setdefault(kernel, {})
    form = forms.get(form_key)
    if form is None:
        pick = operator.itemgetter(*identifying) if len(identifying) > 1 else \
            (lambda call, at=identifying[0]: (call[at],)) if identifying else None
        form = forms[form_key] = _CallForm(pick, scalars, {})
    key = tuple(map(id, form.pick(call))) if form.pick is not None else ()
    if len(form.plans) >= MAX_PLANS_PER_FORM:
        form.plans.clear()
    plans = form.plans

    def forget(_: Any, plans: dict[Any, Any] = plans, key: tuple[int, ...] = key) -> None:
        plans.pop(key, None)

    for position in identifying:
        value = call[position]
        if isinstance(value, _HELD):
            held.append(value)
            continue
        try:
            held.append(weakref.ref(value, forget))
        except TypeError:
            return            # neither held nor weakly referable: its id could name another object later
    written, written_at = list(entry.written_fields), []
    for arg_index, is_grad in entry.written_args:
        if arg_index < len(rules):
            written_at.append((order.index(arg_index), is_grad))
        else:                           # a dataclass member
            container = values[arg_index]
            written.append(container.grad if is_grad else container)
    bound, bound_at = [], []
    for source in entry.bound_sources:
        if source.slot_kind == "field":
            bound.append(source.host)
        elif source.arg_index < len(rules):
            bound_at.append((order.index(source.arg_index), source.is_grad))
        else:
            container = values[source.arg_index]
            container = container.grad if source.is_grad else container
            if container is not None:
                bound.append(container)
    objects, watched_objects = _split_watched(objects, [call[position] for position, _, _ in objects])
    snapshots, watched_snapshots = _split_watched(snapshots, [reference() for reference, _, _ in snapshots])
    plan = plans[key] = LaunchPlan(entry, HashedTuple((kernel, spec.key)), held, len(values), buffers, shapes,
                                   written, written_at, bound, bound_at, objects, snapshots, keyed,
                                   Container.grad_rebinds, {}, watched_objects, watched_snapshots, Rebinds.count,
                                   bool(objects or snapshots or keyed or watched_objects or watched_snapshots))
    if not scalars:
        plan.arguments = LaunchArgs([None] * len(values), buffers, shapes, 0, program.options.random_seed,
                                    entry.launch_extra or NO_EXTRA, plan.bound_cache)


def _split_watched(entries: list[Any], items: list[Any]) -> tuple[list[Any], list[Any]]:
    """`entries` in two lists: those whose item (the same position in `items`) is not of a watched class
    (lang/rebinds.py), and those whose item is."""
    unwatched, watched = [], []
    for entry, item in zip(entries, items):
        (watched if is_watched(type(item)) else unwatched).append(entry)
    return unwatched, watched
