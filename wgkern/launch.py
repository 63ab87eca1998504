"""The launch sequence of one kernel call: specialise -> cached compile -> bind -> launch -> bump generations
-> copy numpy arguments back -> read the return value.

Everything that does not change between launches of one compiled variant (static buffers, temps, which slots
come from which argument, which containers get written) is computed once into a CompiledEntry, so the per-launch
Python path is a few list operations. Compilation itself lives in frontend/, passes/ and backends/."""
from __future__ import annotations

import contextlib
import gc
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from wgkern.backends.base import LaunchArgs
from wgkern.errors import ArgumentError, WkError
from wgkern.lang import kernel as kernel_module
from wgkern.lang.fields import Container, Ndarray
from wgkern.passes.analysis import written_slots
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk
from wgkern import disk_cache, launch_plan
from wgkern.runtime import grad_guard
from wgkern.passes.autodiff.unit_guard import UNIT_STATE_KIND
from wgkern.runtime.adstack_regrow import WatchedReverseKernel, needs_watch
from wgkern.runtime.stack_capacities import launch_capacities, plan_capacities
from wgkern.runtime import program as program_module
from wgkern.lang.arguments import Specialisation, specialise
from wgkern.lang.param_rules import NDARRAY, SCALAR
from wgkern.runtime.program import Program
from wgkern.runtime.materialization import materialize_if_needed


FORWARD_MODE_KEY = "forward mode"    # kernel_cache key part of forward-mode variants (False/True: forward/.grad)
VALIDATION_KEY = "validation"        # key part of forward variants that check the access rule across a tape


@dataclass(slots=True)
class ReturnSlot:
    """Where a kernel's return value lands and how to give it back to Python."""
    index: int                  # slot index in kernel.containers
    dtype: Any                  # DataType
    count: int
    element_shape: tuple[int, ...] | None   # set when the kernel is annotated to return a vector/matrix


@dataclass(slots=True)
class CompiledEntry:
    """One compiled variant of a kernel plus its precomputed binding plan."""
    kernel_ir: Any               # ir.nodes.KernelIR
    offloaded: Any               # ir.nodes.OffloadedKernel
    compiled: Any                # backends.base.CompiledKernel
    arg_specs: list[Any]
    static_buffers: list[Any]    # per slot: buffer for fields/temps, None for argument slots
    static_shapes: list[Any]
    argument_slots: list[tuple[int, int, bool]]    # (slot index, argument index, is_grad)
    scalar_args: list[int]       # argument indices passed through LaunchArgs.scalars
    written_fields: list[Container]
    written_args: list[tuple[int, bool]]           # (argument index, is_grad)
    numpy_args: list[int]        # argument indices that are numpy arrays for this variant
    temps: list[Any] = field(default_factory=list)
    returns: list[ReturnSlot] = field(default_factory=list)    # one per returned value
    returns_tuple: bool = False                                # annotated to return a tuple
    returns_struct: Any = None                                 # the StructType a kernel returns (its leaves)
    no_scalars: list[None] = field(default_factory=list)     # LaunchArgs.scalars when there are none
    bound_sources: list[Any] = field(default_factory=list)    # forward: containers deciding trip counts
    launch_extra: dict[str, Any] | None = None                # LaunchArgs.extra (reverse: adstack capacities)
    capacity_plan: Any = None                                 # reverse: stacks sized at each launch
    uses_random: bool = False                                 # the kernel draws wk.random() numbers
    tuple_struct_parts: list[Any] | None = None   # a tuple return with struct parts: each part's annotation
    origin: str | None = None    # what determines the forward IR (frontend_cache.Forward.origin), where known


# ---- compile ------------------------------------------------------------------------------------------------

def build_kernel_ir(kernel: Any, spec: Specialisation) -> Any:
    """Frontend step (tests replace this to feed hand-built IR)."""
    from wgkern.frontend import build_kernel
    return build_kernel(kernel, spec.arg_specs, spec.template_values)


def _compile_entry(program: Program, kernel: Any, spec: Specialisation, reverse: bool,
                   forward_mode: bool = False, validation: bool = False) -> CompiledEntry:
    from wgkern import frontend_cache
    from wgkern.passes import pipeline

    derived = reverse or forward_mode
    if derived:
        _refuse_sparse_matrix_builders(kernel, spec)
    forward = program.kernel_cache.get((kernel, spec.key, False)) if derived else None
    if forward is not None:
        kernel_ir, forward_offloaded, origin = forward.kernel_ir, forward.offloaded, forward.origin
    else:
        # the frontend and the forward passes (their results from the offline cache where it has them)
        kernel_ir, forward_offloaded, origin = frontend_cache.forward(kernel, spec, program,
                                                                      lambda: build_kernel_ir(kernel, spec))
    if derived:
        # The reverse (or forward-mode) pipeline starts from the forward kernel's offloaded IR: the one already
        # compiled for this specialisation, if any (autodiff copies every task it transforms, so the forward
        # IR is left as it is).
        stages = pipeline.REVERSE_FROM_FORWARD if reverse else pipeline.FORWARD_MODE_FROM_FORWARD
        offloaded = pipeline.run_pipeline(stages, forward_offloaded, after=len(pipeline.FORWARD))
        if reverse:
            from wgkern.passes.autodiff.checks import check_global_access_rule
            check_global_access_rule(forward_offloaded, offloaded)
    else:
        offloaded = forward_offloaded
    if validation:
        from wgkern.passes.autodiff.access_marks import mark_accesses
        offloaded = mark_accesses(offloaded, lambda slot: _access_mark(program, slot))
    if reverse:
        grad_guard.check_adstack_support(offloaded, program.backend)
    if offloaded.host_loops:
        from wgkern.runtime.host_loops import HostLoopKernel
        compiled = HostLoopKernel(program.backend, offloaded)
    elif reverse and needs_watch(offloaded, program.options.ad_stack_size):
        compiled = WatchedReverseKernel(program, offloaded)
    else:
        for_backend = _for_backend(program, offloaded, reverse, forward_mode)
        code_origin = None
        if origin is not None and not validation:     # validation's marks depend on the program's containers
            code_origin = disk_cache.cache_key(origin, "reverse" if reverse else "forward mode" if forward_mode
                                               else "forward", str(_wide_access(program)))
        compiled = program.backend.compile(for_backend, code_origin)
    program.stats.kernel_compiles += 1
    entry = _binding_plan(program, kernel, spec, kernel_ir, offloaded, compiled)
    entry.origin = origin
    entry.uses_random = any(isinstance(s, ir.RandomValue) for task in offloaded.tasks for s in walk(task.body))
    if not reverse:
        entry.bound_sources = grad_guard.bound_sources(offloaded)
    else:
        options = program.options
        plan = plan_capacities(offloaded, options.ad_stack_size, options.default_ad_stack_size, True)
        if plan.has_stacks:
            entry.launch_extra = {"adstack_capacities": plan.static_capacities()}
            if plan.dynamic:
                entry.capacity_plan = plan
    return entry


def _for_backend(program: Program, offloaded: Any, reverse: bool, forward_mode: bool) -> Any:
    """What the backend compiles: `offloaded` with the atomics no two threads race on demoted
    (passes/demote_atomics.py), then with its element-wise range tasks reading and writing several elements at
    a time (passes/vectorize.py), where the backend lowers wide accesses and WK_VECTORIZE is not 0."""
    from wgkern.passes import pipeline
    done = len(pipeline.REVERSE if reverse else pipeline.FORWARD_MODE if forward_mode else pipeline.FORWARD)
    offloaded = pipeline.run_pipeline(pipeline.DEMOTE, offloaded, after=done)
    if not _wide_access(program):
        return offloaded
    return pipeline.run_pipeline(pipeline.WIDE_ACCESS, offloaded, after=done + len(pipeline.DEMOTE))


def _wide_access(program: Program) -> bool:
    from wgkern.passes import pipeline
    return program.backend.wide_memory_access and os.environ.get(pipeline.WIDE_ACCESS_ENV, "1") != "0"


def _refuse_sparse_matrix_builders(kernel: Any, spec: Specialisation) -> None:
    """A reverse (or forward-mode) kernel cannot differentiate triplet appends (Taichi refuses them too)."""
    from wgkern.errors import AutodiffError
    from wgkern.lang.param_rules import SPARSE_MATRIX_BUILDER
    for rule, (kind, _) in zip(spec.rules, spec.parts):
        if kind == SPARSE_MATRIX_BUILDER:
            raise AutodiffError(f"kernel '{kernel.name}' takes the sparse matrix builder '{rule.name}'; "
                                "kernels that append triplets have no .grad() (differentiate the kernels "
                                "that compute the values instead)")


def _binding_plan(program: Program, kernel: Any, spec: Specialisation, kernel_ir: Any, offloaded: Any,
                  compiled: Any) -> CompiledEntry:
    backend = program.backend
    written = written_slots(offloaded)
    buffers: list[Any] = []
    shapes: list[Any] = []
    argument_slots: list[tuple[int, int, bool]] = []
    written_fields: list[Container] = []
    written_args: list[tuple[int, bool]] = []
    temps: list[Any] = []
    found: dict[int, ReturnSlot] = {}
    element_shapes = _return_element_shapes(kernel, len(offloaded.returns))
    for index, slot in enumerate(offloaded.containers):
        if slot.kind == "field":
            host = slot.host
            if not isinstance(host, Container) or host.program is not program:
                name = getattr(host, "name", slot.name)
                raise ArgumentError(f"kernel '{kernel.name}' uses field '{name}', which was created before the "
                                    "last wk.reset()/wk.init(); create it again")
            host._in_kernel = True
            buffers.append(host.buffer)
            shapes.append(host.full_shape)
            if slot in written:
                written_fields.append(host)
        elif slot.kind == "ndarray":
            buffers.append(None)
            shapes.append(None)
            argument_slots.append((index, slot.arg_index, slot.is_grad))
            if slot in written and (slot.arg_index, slot.is_grad) not in written_args:
                written_args.append((slot.arg_index, slot.is_grad))
        elif slot.kind == UNIT_STATE_KIND:          # bound by WatchedReverseKernel at each launch
            buffers.append(None)
            shapes.append(None)
        elif slot.kind == "temp":
            shape = tuple(slot.shape or (1,))
            storage = np.dtype(backend.storage_dtype(slot.dtype))
            nbytes = max(-(-math.prod(shape) * storage.itemsize // 4) * 4, 4)
            buffer = backend.allocate(nbytes)
            backend.upload(buffer, np.zeros(nbytes, np.uint8), 0)   # temps start zeroed (internals.md)
            temps.append(buffer)
            buffers.append(buffer)
            shapes.append(shape)
            for k, returned in enumerate(offloaded.returns):
                if slot is returned:
                    found[k] = ReturnSlot(index, slot.dtype, math.prod(shape), element_shapes[k])
        else:
            raise WkError(f"kernel '{kernel.name}': unknown container slot kind {slot.kind!r}")
    scalar_args = [i for i, s in enumerate(spec.arg_specs) if s.kind == SCALAR]
    numpy_args = [i for i, v in enumerate(spec.values) if isinstance(v, np.ndarray)
                  and spec.arg_specs[i].kind == NDARRAY]
    returns = [found[k] for k in range(len(offloaded.returns))]
    struct = _returned_struct(kernel) if returns else None
    entry = CompiledEntry(kernel_ir, offloaded, compiled, spec.arg_specs, buffers, shapes, argument_slots,
                          scalar_args, written_fields, written_args, numpy_args, temps, returns,
                          struct is None and (len(offloaded.returns) > 1 or _returns_tuple(kernel)),
                          struct, [None] * len(spec.arg_specs))
    if entry.returns_tuple:
        entry.tuple_struct_parts = _tuple_struct_parts(kernel)
    return entry


def _return_annotation(kernel: Any) -> Any:
    from wgkern.lang.param_rules import _resolve_annotation
    return _resolve_annotation(kernel, kernel.signature.return_annotation)


def _returns_tuple(kernel: Any) -> bool:
    from wgkern.frontend.statements import return_annotation_parts
    return return_annotation_parts(_return_annotation(kernel)) is not None


def _tuple_struct_parts(kernel: Any) -> list[Any] | None:
    """The parts of a tuple return annotation when one of them is a struct (its leaves are returned one by
    one and regrouped on the host), else None."""
    from wgkern.frontend.statements import return_annotation_parts
    from wgkern.lang.structs import StructType
    parts = return_annotation_parts(_return_annotation(kernel))
    return parts if parts and any(isinstance(part, StructType) for part in parts) else None


def _returned_struct(kernel: Any) -> Any:
    from wgkern.lang.structs import StructType
    annotation = _return_annotation(kernel)
    return annotation if isinstance(annotation, StructType) else None


def _return_element_shapes(kernel: Any, count: int) -> list[tuple[int, ...] | None]:
    """Per returned value: its vector/matrix shape, or None for a scalar."""
    from wgkern.frontend.statements import return_annotation_parts
    from wgkern.lang.types import VectorType
    if not count:
        return []
    from wgkern.lang.structs import StructType, leaf_types
    annotation = _return_annotation(kernel)
    if isinstance(annotation, StructType):
        parts = leaf_types(annotation)
    else:
        parts = return_annotation_parts(annotation) or [annotation]
        parts = [leaf for part in parts for leaf in (leaf_types(part) if isinstance(part, StructType) else [part])]
    return [part.element_shape if isinstance(part, VectorType) else None for part in parts]


def _access_mark(program: Program, slot: Any) -> Any:
    """The i32 field holding the access marks of field `slot.host` (one per element and component)."""
    from wgkern.lang.fields import Field
    from wgkern.dtypes import i32
    mark = program.access_marks.get(id(slot.host))
    if mark is None or mark.full_shape != tuple(slot.shape):    # (a new field where a released one was)
        mark = Field(i32, slot.shape, name=f"{slot.name}.access_mark")
        program.access_marks[id(slot.host)] = mark
    return mark


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a kernel compiles. A compile allocates hundreds of thousands
    of objects (AST walks, IR statements, most of them garbage by its end), and the collector, run every few
    hundred allocations, then also collects the whole heap each time enough objects have survived: in a program
    holding millions of objects (Genesis with torch) each full collection takes a tenth of a second or more, and
    they took 1.4 s of CPU inside the compiles of a Genesis scene's build. Paused, what a compile leaves is
    collected at the collector's usual pace after it. A collector the program paused itself stays paused."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def get_entry(program: Program, kernel: Any, spec: Specialisation, reverse: bool,
              forward_mode: bool = False, validation: bool = False) -> CompiledEntry:
    cache_key = (kernel, spec.key, FORWARD_MODE_KEY if forward_mode else VALIDATION_KEY if validation else reverse)
    entry = program.kernel_cache.get(cache_key)
    if entry is None:
        started = time.perf_counter()
        with collector_paused():
            entry = _compile_entry(program, kernel, spec, reverse, forward_mode, validation)
        program.compile_seconds += time.perf_counter() - started
        program.kernel_cache[cache_key] = entry
    else:
        program.stats.cache_hits += 1
    return entry


# ---- launch -------------------------------------------------------------------------------------------------

def _stage_numpy(program: Program, index: int, array: np.ndarray, spec: Any) -> Ndarray:
    """Copy a numpy argument into a reusable device ndarray (one per argument position, dtype and shape)."""
    key = (index, array.dtype.str, array.shape)
    staged = program.staging.get(key)
    if staged is None:
        from wgkern.lang.types import VectorType, from_numpy_dtype
        dtype = from_numpy_dtype(array.dtype)
        element = None
        shape = array.shape
        if spec.element_shape:
            n, m = (spec.element_shape + (0,))[:2]
            element = VectorType(n, m, dtype)
            shape = array.shape[:array.ndim - len(spec.element_shape)]
        staged = Ndarray(element if element is not None else dtype, shape, name=f"{spec.name} (numpy)")
        staged._is_staging = True
        program.staging[key] = staged
    staged._host_ready(write=True)
    staged._write_all(array)
    return staged


def launch_kernel(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any], reverse: bool) -> Any:
    """Kernel.__call__ / Kernel.grad: see the module docstring. This is the per-launch hot path."""
    program = program_module._current or program_module.get_program()
    if program.profiler is not None and not program.profiler.timing:    # wgkern/profiler.py
        return program.profiler.time(kernel.name + ("_grad" if reverse else ""),
                                     lambda: launch_kernel(kernel, args, kwargs, reverse), program.sync)
    if program.unmaterialized:                 # new containers or @wk.layout functions (materialization.py)
        materialize_if_needed(program)
    plain = not reverse and program.tape is None and program.fwd_mode is None
    if plain and program.launch_plans:         # the same argument objects as a launch before (launch_plan.py)
        result = launch_plan.launch(kernel, args, kwargs, program)
        if result is not launch_plan.MISS:
            return result
    spec = specialise(kernel, args, kwargs, program)
    if reverse:
        forward = program.kernel_cache.get((kernel, spec.key, False)) \
            or program.kernel_cache.get((kernel, spec.key, VALIDATION_KEY))
        if forward is not None and forward.bound_sources:
            grad_guard.check(kernel.name, program.bound_records.get((kernel, spec.key)), forward.bound_sources,
                             spec.values)
    elif program.tape is not None:
        program.tape.append((kernel, args, kwargs))
    forward_mode = not reverse and program.fwd_mode is not None       # inside wk.ad.FwdMode
    # Tape(validation=True): launches the tape records and replays mark and check (not those inside a
    # grad_replaced function, whose gradient is custom, nor @no_grad kernels, whose reads are never replayed)
    validation = (program.tape_validation and not reverse and not forward_mode and program.tape is not None
                  and not getattr(kernel, "no_grad", False))
    entry = program.kernel_cache.get((kernel, spec.key, FORWARD_MODE_KEY if forward_mode
                                      else VALIDATION_KEY if validation else reverse))
    if entry is None:
        entry = get_entry(program, kernel, spec, reverse, forward_mode, validation)
    else:
        program.stats.cache_hits += 1
    kernel.last_compiled = entry
    values = spec.values
    staged: list[tuple[int, np.ndarray, Ndarray]] = []
    for index in entry.numpy_args:
        device_copy = _stage_numpy(program, index, values[index], entry.arg_specs[index])
        staged.append((index, values[index], device_copy))
        values[index] = device_copy
    buffers = entry.static_buffers
    shapes = entry.static_shapes
    if entry.argument_slots:
        buffers = list(buffers)
        shapes = list(shapes)
        for slot_index, arg_index, is_grad in entry.argument_slots:
            container = values[arg_index]
            if is_grad:
                container = container.grad
                if container is None:
                    raise ArgumentError(f"kernel '{kernel.name}', parameter '{entry.arg_specs[arg_index].name}': "
                                        "the kernel uses .grad but the ndarray has needs_grad=False")
            buffers[slot_index] = container.buffer
            shapes[slot_index] = container.full_shape
    if entry.scalar_args:
        scalars: list[Any] = [None] * len(values)
        for index in entry.scalar_args:
            scalars[index] = values[index]
    else:
        scalars = entry.no_scalars
    program.launch_counter += 1
    launch_id = program.launch_counter
    if entry.uses_random:
        # `.grad` replays the forward launch's random numbers: same (seed, launch, thread, site, counter).
        if reverse:
            launch_id = program.random_launch_ids.get((kernel, spec.key), launch_id)
        else:
            program.random_launch_ids[(kernel, spec.key)] = launch_id
    launch_args = LaunchArgs(scalars, buffers, shapes, launch_id, program.options.random_seed)
    if entry.capacity_plan is not None:
        capacities = launch_capacities(entry.capacity_plan, entry.offloaded, launch_args, program.backend, values,
                                       program)
        launch_args.extra = {"adstack_capacities": capacities}
    elif entry.launch_extra is not None:
        launch_args.extra = entry.launch_extra
    launch_plan.launch_and_mark_written(program, entry, launch_args, entry.written_fields, entry.written_args, values)
    if plain:
        launch_plan.remember(kernel, args, kwargs, program, spec, entry, buffers, shapes)
    for index, user_array, device_copy in staged:
        if (index, False) in entry.written_args:
            np.copyto(user_array, device_copy.to_numpy())
    if entry.bound_sources:
        program.bound_records[(kernel, spec.key)] = grad_guard.snapshot(
            entry.bound_sources, values, {index: user_array for index, user_array, _ in staged} if staged else None,
            [arg.name for arg in entry.arg_specs] if staged else None)
    if entry.returns:
        return _read_return(program, entry)
    return None


def _read_return(program: Program, entry: CompiledEntry) -> Any:
    program.sync()
    values = [_read_value(program, entry, returns) for returns in entry.returns]
    if entry.returns_struct is not None:
        from wgkern.lang.structs import from_leaves
        return from_leaves(entry.returns_struct, iter(values))
    if entry.tuple_struct_parts is not None:
        from wgkern.lang.structs import StructType, from_leaves
        leaves = iter(values)
        return tuple(from_leaves(part, leaves) if isinstance(part, StructType) else next(leaves)
                     for part in entry.tuple_struct_parts)
    return tuple(values) if entry.returns_tuple else values[0]


def _read_value(program: Program, entry: CompiledEntry, returns: ReturnSlot) -> Any:
    storage = np.dtype(program.backend.storage_dtype(returns.dtype))
    raw = program.backend.download(entry.static_buffers[returns.index], returns.count * storage.itemsize, 0)
    data = np.frombuffer(raw, dtype=storage, count=returns.count)
    if storage != returns.dtype.np_dtype:
        data = data != 0 if returns.dtype.is_bool else data.astype(returns.dtype.np_dtype)
    if returns.element_shape is not None and math.prod(returns.element_shape) == returns.count:
        from wgkern.lang.host_matrix import host_matrix      # a vector/matrix with Taichi's methods (.x, .norm())
        return host_matrix(data.reshape(returns.element_shape).copy())
    items = [int(v) if returns.dtype.is_bool else v.item() for v in data]       # u1 as 0/1, as Taichi returns it
    return items[0] if returns.count == 1 else tuple(items)


# ---- introspection ------------------------------------------------------------------------------------------

def _entry_for_introspection(kernel: Any) -> CompiledEntry:
    entry = kernel.last_compiled
    program = program_module.get_program()
    if entry is not None and any(e is entry for e in program.kernel_cache.values()):
        return entry
    if kernel.params:
        raise WkError(f"kernel '{kernel.name}' takes arguments: call it once so wgkern knows which "
                      "specialisation to show")
    spec = specialise(kernel, (), {}, program)
    entry = get_entry(program, kernel, spec, False)
    kernel.last_compiled = entry
    return entry


def kernel_ir_text(kernel: Any) -> str:
    """`kernel.ir()`: the offloaded IR of the most recent specialisation, as text."""
    from wgkern.ir import printer
    entry = _entry_for_introspection(kernel)
    return printer.format_kernel(entry.offloaded)


def kernel_source(kernel: Any, arch: Any = None) -> str:
    """`kernel.source(arch)`: generated LLVM IR / WGSL of the most recent specialisation on the current arch."""
    from wgkern.runtime.arch import Arch, parse_arch
    program = program_module.get_program()
    wanted = parse_arch(arch)
    if wanted in (Arch.gpu, Arch.webgpu) and program.arch.is_wgpu:
        wanted = program.arch          # the generic wgpu arches name whichever wgpu API is running
    if wanted is not None and wanted != program.arch:
        raise WkError(f"kernel.source({wanted!r}): the current program runs on {program.arch!r}; call "
                      f"wk.init(arch={wanted!r}) first")
    return _entry_for_introspection(kernel).compiled.source()


kernel_module.install_launcher(sys.modules[__name__])
