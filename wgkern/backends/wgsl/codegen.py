"""IR task -> WGSL text: one compute shader per task of an OffloadedKernel.

Owns statement lowering (an ir.IRVisitor), container declarations (element types and the binding plan come
from bindings.py: one binding per container, or packed arenas), the launch-argument struct layout shared with
the runtime, and helper instantiation. Op spellings live in ops.py,
dtype spellings and casts in types.py, hand-written helper templates in the top-level wgsl/ folder."""
from __future__ import annotations

import re
import string
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from wgkern.errors import CompileError, DeviceFeatureError, InternalCompilerError, SourceLoc, WkError
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind
from wgkern.ir.visitor import IRVisitor, walk
from wgkern import dtypes as T
from wgkern.dtypes import DataType
from wgkern.resources import wgsl_source
from wgkern.backends.adstack import METADATA_FIELDS, collect_stacks
from wgkern.passes.analysis import first_simt_use
from wgkern.backends.reductions import ChunkReduction
from wgkern.backends.wgsl import exact, mathlib
from wgkern.backends.wgsl.bindings import BindingPlan, binding_plan, collect_atomics, slot_element
from wgkern.backends.wgsl.adstack import AdStackLowering, metadata_rows
from wgkern.backends.wgsl.simt import SimtLowering
from wgkern.backends.wgsl.bounds import BoundsLowering
from wgkern.backends.wgsl.split import SplitLowering
from wgkern.backends.wgsl.wide_access import WideAccessLowering, wide_slot_indices
from wgkern.passes.index_ranges import index_facts
from wgkern.backends.wgsl.printing import PrintLowering, needs_print_buffer
from wgkern.backends.wgsl import ops as wops
from wgkern.backends.wgsl import types as wtypes
from wgkern.backends.wgsl.shader_common import (ContainerDecl, iterations_under, LOOP_LIMIT, LOOP_LIMIT_ITERATIONS,
                                                MASKED_BRANCHES, NATIVE_DIVISION, OPAQUE_BOOL_INTS, WORKGROUP_SIZE)
from wgkern.backends.wgsl.memory import MemoryLowering
from wgkern.backends.wgsl.task_mains import TaskMainLowering, site_declaration
from wgkern.backends.wgsl.control_flow import ControlFlowLowering
from wgkern.backends.wgsl.outlining import OutlineLowering


def default_workgroup_size(max_invocations: int) -> int:
    """Invocations per workgroup of range tasks without loop_config(block_dim=...): WORKGROUP_SIZE where the
    device allows it (`max_invocations`: the smaller of max_compute_invocations_per_workgroup and
    max_compute_workgroup_size_x), else the largest power of two within the limit (128 on Dawn's
    compatibility mode)."""
    if max_invocations >= WORKGROUP_SIZE:
        return WORKGROUP_SIZE
    return 1 << (max(int(max_invocations), 1).bit_length() - 1)
_NAN32 = wtypes.f32_from_bits("0x7fc00000u")
_INF32 = wtypes.f32_from_bits("0x7f800000u")
# Ops computed in f64 for f16/f32 operands when the device has shader-f64.
_VIA_F64 = {BinaryOpKind.POW: wops.Spelling("{T}(wk_pow_f64(f64({a}), f64({b})))", ("math_pow",),
                                            helper_type="f64")}


@lru_cache(maxsize=None)
def helper_templates(filename: str) -> dict[str, string.Template]:
    """Sections `//! name` of a shipped wgsl/ file, as string.Templates (read once; the files are constants)."""
    sections: dict[str, string.Template] = {}
    for chunk in re.split(r"^//! ", wgsl_source(filename), flags=re.M)[1:]:
        name, _, body = chunk.partition("\n")
        sections[name.strip()] = string.Template(body.strip() + "\n")
    return sections


def _power_of_two_divisor(stmt: ir.BinaryOp) -> int | None:
    """k for `a // 2^k` or `a % 2^k` (k >= 1) on a signed integer of at most 32 bits (stored as i32 here), whose
    Python semantics are exactly `a >> k` and `a & (2^k - 1)`; None for anything else."""
    if stmt.op not in (BinaryOpKind.FLOORDIV, BinaryOpKind.MOD) or not isinstance(stmt.rhs, ir.Const):
        return None
    dtype = stmt.lhs.dtype
    value = stmt.rhs.value
    if dtype.kind != "i" or dtype.bits > 32 or not isinstance(value, int) or value < 2 or value & (value - 1):
        return None
    return value.bit_length() - 1


# ---- launch arguments -------------------------------------------------------------------------------------

# Scalar type names WGSL predeclares (i32, u32, f32, f16) or reserves (i8, u64, f64, ...): not usable as names.
WGSL_SCALAR_NAMES = frozenset(f"{kind}{bits}" for kind in "iuf" for bits in (8, 16, 32, 64, 128))


@dataclass(frozen=True, slots=True)
class ParamsLayout:
    """The per-launch struct (launch_id, seed, scalar args, ndarray shapes) read from the argument ring.
    `pack` packs (launch_id, seed, *scalars in scalar_args order, *shape values in shape_axes order)."""
    members: tuple[tuple[str, str], ...]
    arg_member: dict[int, str]
    shape_member: dict[tuple[int, int], str]
    scalar_args: tuple[int, ...]
    shape_axes: tuple[tuple[int, int], ...]
    pack: struct.Struct
    size: int
    stack_words: int = 0    # adstack metadata words (u32) after the shapes, from a 16-aligned offset
    base_member: dict[int, str] | None = None   # packed binding: slot -> its element offset in the arena

    def wgsl_struct(self) -> str:
        members = list(self.members)
        if self.stack_words:    # a uniform array's stride is 16 bytes: four words per element
            members.append(("stack_meta", f"array<vec4<u32>, {-(-self.stack_words // 4)}>"))
        body = "".join(f"  {name}: {wgsl_type},\n" for name, wgsl_type in members)
        return f"struct WkParams {{\n{body}}}\n"


def params_layout(kernel: ir.OffloadedKernel, packed: bool = False) -> ParamsLayout:
    """64-bit scalars first (8-aligned at offset 8), then 32-bit ones, then i32 shapes, then (packed binding)
    one i32 arena base per container: no padding inside; adstack metadata words last, from a 16-byte
    boundary. The struct is a uniform buffer (uniform loads are scalar on every driver; from a storage buffer
    lavapipe loads a launch argument once per invocation, which cost saxpy ~20% there)."""
    members: list[tuple[str, str]] = [("launch_id", "u32"), ("seed", "u32")]
    codes = ["I", "I"]
    scalars = [(i, a) for i, a in enumerate(kernel.args) if a.kind == "scalar" and a.dtype is not None]
    scalars.sort(key=lambda pair: -struct.calcsize(wtypes.PARAM_TYPE[pair[1].dtype][1]))
    arg_member: dict[int, str] = {}
    for index, arg in scalars:
        wgsl_type, code = wtypes.PARAM_TYPE[arg.dtype]
        arg_member[index] = f"a{index}_{_identifier(arg.name)}"
        members.append((arg_member[index], wgsl_type))
        codes.append(code)
    shape_member: dict[tuple[int, int], str] = {}
    for slot_index, slot in enumerate(kernel.containers):
        if slot.shape is None:
            for axis in range(slot.ndim):
                shape_member[(slot_index, axis)] = f"shape{slot_index}_{axis}"
                members.append((shape_member[(slot_index, axis)], "i32"))
                codes.append("i")
    base_member: dict[int, str] | None = None
    if packed:
        base_member = {k: f"base{k}" for k in range(len(kernel.containers))}
        members.extend((name, "i32") for name in base_member.values())
        codes.extend("i" * len(base_member))
    stack_words = sum(len(specs) for specs in collect_stacks(kernel)) * METADATA_FIELDS
    align = 8 if any(struct.calcsize(c) == 8 for c in codes) else 4
    raw = struct.calcsize("<" + "".join(codes))
    if stack_words:     # array<vec4<u32>> starts 16-aligned and rounds the struct up to 16 bytes
        codes.append("x" * (-raw % 16) + "I" * stack_words)
        align = 16
        raw = struct.calcsize("<" + "".join(codes))
    size = -(-raw // align) * align
    fmt = "<" + "".join(codes) + "x" * (size - raw)
    return ParamsLayout(tuple(members), arg_member, shape_member, tuple(i for i, _ in scalars),
                        tuple(shape_member), struct.Struct(fmt), size, stack_words, base_member)


def _identifier(name: str) -> str:
    return re.sub(r"\W", "_", name)[:24] or "v"


# ---- container declarations -----------------------------------------------------------------------------


# ---- the visitor ------------------------------------------------------------------------------------------

@dataclass(slots=True)
class TaskShader:
    """One task's WGSL module and what the runtime needs to dispatch it."""
    task: ir.Task
    wgsl: str
    workgroup_size: int
    containers: tuple[int, ...] = ()     # slot indices the shader declares
    chunked_loops: tuple[ir.RangeFor, ...] = ()     # a serial task's loops run in chunks (serial_chunks.py)
    loop_site: int = 0          # LOOP_LIMIT: its number in the backend's loop_limit_sites (1-based), 0: none


class WgslCodegen(TaskMainLowering, ControlFlowLowering, MemoryLowering, AdStackLowering, PrintLowering, SimtLowering,
                  BoundsLowering, SplitLowering, WideAccessLowering, OutlineLowering, IRVisitor):
    """Lowers the tasks of one OffloadedKernel. `features` are the device's feature names; `adapter` names the
    adapter for error messages. Missing dtype features raise CompileError at the statement's loc."""

    def __init__(self, kernel: ir.OffloadedKernel, features: frozenset[str] | set[str], adapter: str = "?",
                 adstack_code: int = 1, plan: BindingPlan | None = None,
                 print_sites: list[Any] | None = None, bounds_sites: list[Any] | None = None,
                 loop_limit_sites: list[Any] | None = None, max_workgroup_size: int = 1024,
                 max_workgroup_storage: int = 16384, tile_sites: list[Any] | None = None):
        self.kernel = kernel
        self.max_workgroup_size = max_workgroup_size    # the adapter's invocations per workgroup
        self.workgroup_size = default_workgroup_size(max_workgroup_size)    # range tasks without block_dim
        self.max_workgroup_storage = max_workgroup_storage   # and bytes of workgroup memory (shared arrays)
        # print(): sites go to the backend's table (printing.py); the buffer is the binding after the stacks'.
        # debug=True (bounds_sites given): every global access is checked and a failure recorded in that buffer
        self.print_sites = print_sites if print_sites is not None else []
        self.bounds_sites = bounds_sites
        # LOOP_LIMIT: (kernel name, first loop's loc, loop lines) per probed task; site k + 1 is written when
        # task k's probe finds llvmpipe's loop budget spent
        self.loop_limit_sites = loop_limit_sites if loop_limit_sites is not None else []
        # (kernel name, loc, N) per register tile's creation (ir.TILE_SUBGROUP_CHECK); site k + 1 is written with
        # the subgroup size when a subgroup of fewer than N invocations makes tile k (simt.py)
        self.tile_sites = tile_sites if tile_sites is not None else []
        self.adstack_code = adstack_code
        self.stacks, self.first_rows = metadata_rows(kernel)
        self.features = frozenset(features)
        self.adapter = adapter
        self.plan = plan or binding_plan(kernel, self.features, adapter, packed=False)
        self.layout = params_layout(kernel, self.plan.packed)
        self.kernel_atomics = collect_atomics(kernel, kernel.tasks) if self.plan.packed else None
        self.slot_index = {id(slot): k for k, slot in enumerate(kernel.containers)}
        self.print_binding = self.plan.bindings + 1 + (2 if any(self.stacks) else 0)

    # ---- entry points -------------------------------------------------------------------------------------
    def generate(self) -> list[TaskShader]:
        return [self.task_shader(task) for task in self.kernel.tasks]

    def task_shader(self, task: ir.Task) -> TaskShader:
        self._reset(task)
        if task.kind == "range":
            self._emit_range_main(task)
        elif task.kind == "serial":
            self._emit_serial_main(task)
        else:
            raise InternalCompilerError(f"unknown task kind {task.kind!r}", task.loc)
        head = [f"// wgkern kernel '{self.kernel.name}', task '{task.name}' ({task.kind})\n"]
        if self.uses_f16:
            head.append("enable f16;\n")
        head.append("\n" + self.layout.wgsl_struct())
        head.append(wtypes.F32_BITS_HELPER)
        head.append("@group(0) @binding(0) var<uniform> wk_params: WkParams;\n")
        declared = {decl.binding: decl for k, decl in self.decls.items() if k >= 0}
        for k, decl in self.decls.items():
            if k < 0:       # a block's shared array (simt.py)
                head.append(self.shared_declaration(decl.name, self.shared[k], decl.element))
        self.check_shared_bytes(list(self.shared.values()), self.max_workgroup_storage)
        for binding, decl in sorted(declared.items()):
            if decl.windows > 1:
                head.append(self.window_declarations(decl))
                continue
            what = f"arena of {decl.dtype.name} containers" if decl.base is not None else decl.dtype.name
            element = f"vec4<{decl.element}>" if decl.lanes else decl.element
            head.append(f"@group(0) @binding({binding}) var<storage, read_write> {decl.name}: "
                        f"array<{element}>;  // {what}\n")
        if self.stacks[self.task_index]:
            head.append(self.adstack_declarations(self.plan.bindings + 1))
        if needs_print_buffer([task], self.bounds_sites is not None, LOOP_LIMIT in self.features):
            head.append(self.print_declaration())
        if self.probe_site:
            head.append(site_declaration(self.probe_site))
        text = "".join(head) + "\n" + "".join(self.helpers.values()) + "\n" + self.outlined_functions() + "\n" + \
            "\n".join(self.lines) + "\n"
        workgroup = self.block_size if task.kind == "range" else 1
        used = tuple(sorted(k for k in self.decls if k >= 0))
        return TaskShader(task, text, workgroup, used, tuple(self.chunked), self.probe_site)

    def _reset(self, task: ir.Task) -> None:
        self.lines: list[str] = []
        self.indent = 1
        self.names: dict[ir.Stmt, str] = {}
        self.counter = 0
        self.helpers: dict[str, str] = {}
        self.decls: dict[int, ContainerDecl] = {}
        self.uses_f16 = False
        self.hidden_operands = 0        # exact.hide sites so far
        self.loop_depth = 0
        self.loop_vars: dict[ir.RangeFor, str] = {}
        self.reductions: dict[ir.AtomicOp, ChunkReduction] = {}     # register reductions (range tasks)
        self.reduction_registers: dict[ChunkReduction, str] = {}
        self.task = task
        # accesses -> how many of their last axes are proven inside (passes/index_ranges.py); all: no check
        # and the integer values that are >= 0 by construction (a floor division or modulo of two is WGSL's)
        self.trailing_in_range, self.nonnegative = index_facts((task.bounds, task.body))
        self.in_range = {ptr for ptr, count in self.trailing_in_range.items() if count == len(ptr.indices)}
        self.guards: dict[ir.GlobalPtr, str] = {}                   # the others -> their `inside` bit (bounds.py)
        self.invariants: dict[str, str] = {}       # launch-argument expressions -> their names (invariant())
        self.split_ptrs: dict[ir.GlobalPtr, tuple[str, str]] = {}   # accesses to windows -> (window, index)
        self.uses_simt = task.kind == "range" and first_simt_use(task.body) is not None
        self.lane_mask: str | None = None      # masked lanes: the condition under which side effects happen
        self.block_size = self._block_size(task)
        self.shared: dict[int, ir.ContainerSlot] = {}        # negative decl keys of the task's shared arrays
        self.uses_subgroup_ids = False
        # loops whose iterations provably stay far under the limit need no watching (nbody's range(4096))
        self.watch_loops = LOOP_LIMIT in self.features and not iterations_under(task.body,
                                                                                   LOOP_LIMIT_ITERATIONS // 2)
        self.probe_site = 0                    # LOOP_LIMIT: the task's site (1-based), once a probe is emitted
        self.llvmpipe_copies = 0               # LOOP_LIMIT: statements the task's loop copies added so far
        self.chunked: dict[ir.RangeFor, int] = {}   # LOOP_LIMIT: a serial task's loops run in chunks, numbered
        self.task_index = next(k for k, t in enumerate(self.kernel.tasks) if t is task)
        self.stack_row_base = self.first_rows[self.task_index]
        # packed: typed over the whole kernel (tasks share each arena binding); else per task
        self.atomic_ops = self.kernel_atomics if self.kernel_atomics is not None else \
            collect_atomics(self.kernel, [task])
        self.wide_bindings = {self.plan.slot_binding[k] for k in wide_slot_indices(task, self.slot_index)}
        self.reset_outlining(task.kind == "serial" and not self.stacks[self.task_index])     # outlining.py

    # ---- emission helpers -----------------------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)
        stripped = line.lstrip()
        if stripped.startswith(("let ", "var ")):
            self.note_declaration(stripped)

    def fresh(self, prefix: str = "v") -> str:
        """A new name `prefix` + counter, never one WGSL predeclares or reserves (`i32`, `f16`, `u64`, ...: the
        loop indices' prefix `i` reaches them)."""
        self.counter += 1
        name = f"{prefix}{self.counter}"
        return self.fresh(prefix) if name in WGSL_SCALAR_NAMES else name

    def let(self, stmt: ir.Stmt, expr: str, wgsl_type: str | None = None) -> str:
        """`let` a new name be `expr`, `stmt`'s value; its WGSL type is `wgsl_type`, else for the statements
        whose values are their dtype's register type (_REGISTER_VALUES) that type (outlining.py reads it)."""
        name = self.fresh()
        self.emit(f"let {name} = {expr};")
        self.names[stmt] = name
        if wgsl_type is None and isinstance(stmt, _REGISTER_VALUES):
            wgsl_type = wtypes.register_type(stmt.dtype)
        if wgsl_type is not None:
            self.declare_local(name, wgsl_type)
        return name

    def invariant(self, expr: str, prefix: str = "wk_inv") -> str:
        """A name for `expr`, a value of the launch arguments alone (an ndarray's stride, element count or
        range-check bound), the same in every invocation: `emit_invariants` computes it once at the top of the
        task's entry point, however many accesses use it. A shader with one copy of such an expression per
        access was ~2 MB of WGSL for one of Genesis's serial kernels (a u32 division per access), which naga
        and lavapipe's LLVM then spend minutes on."""
        name = self.invariants.get(expr)
        if name is None:
            name = self.invariants[expr] = self.fresh(prefix)
        return name

    def emit_invariants(self, at: int) -> None:
        """Insert the `let` of every `invariant()` into the lines at `at` (the first line of an entry point's
        body); they read only wk_params, so any order of the lets is valid."""
        self.lines[at:at] = [f"  let {name} = {expr};" for expr, name in self.invariants.items()]

    def value(self, stmt: ir.Stmt) -> str:
        try:
            return self.names[stmt]
        except KeyError:
            raise InternalCompilerError(f"{type(stmt).__name__} used before it is defined in this task",
                                        stmt.loc) from None

    def require(self, dtype: DataType, loc: SourceLoc) -> None:
        feature = wtypes.REQUIRED_FEATURE.get(dtype)
        if feature is not None and feature not in self.features:
            raise DeviceFeatureError(f"{dtype.name} needs the device feature '{feature}', which adapter "
                                     f"'{self.adapter}' lacks", loc, (feature,))
        if dtype == T.f16:
            self.uses_f16 = True

    def use_helper(self, name: str, dtype: DataType | str | None = None, **extra: str) -> None:
        """Instantiate helper template `name` for `dtype` (a DataType or a register type name): a section of
        wgsl/helpers.wgsl, or `math_<fn>` with its dependencies from wgsl/f64_math.wgsl (mathlib.py)."""
        reg = dtype if isinstance(dtype, str) else (wtypes.register_type(dtype) if dtype is not None else "")
        if name.startswith("math_"):
            for part in mathlib.MATH_DEPENDENCIES[name[5:]]:
                key = f"{part}:{reg}"
                if key in self.helpers:
                    continue
                section = self._math_section(part, reg)
                if (part, reg) == mathlib.WIDE_REDUCTION[:2] and "shader-f64" in self.features:
                    wide_key = f"{part}:f64"
                    if wide_key not in self.helpers:
                        self.helpers[wide_key] = self._instantiate("f64_math.wgsl", self._math_section(part, "f64"),
                                                                   "f64", mathlib.MATH_CONSTANTS["f64"])
                    section = mathlib.WIDE_REDUCTION_UNBRANCHED if MASKED_BRANCHES in self.features else \
                        mathlib.WIDE_REDUCTION[2]
                self.helpers[key] = mathlib.polynomial(part[5:], reg) if part.startswith("poly_") else \
                    self._instantiate("f64_math.wgsl", section, reg, mathlib.MATH_CONSTANTS[reg])
            return
        key = f"{name}:{reg}:{extra.get('NAME', '')}"
        if key not in self.helpers:
            section = name
            if name == "div_float" and NATIVE_DIVISION in self.features:
                section = "div_float_native"
            self.helpers[key] = self._instantiate("helpers.wgsl", section, reg, extra)

    def _math_section(self, part: str, reg: str) -> str:
        if "shader-int64" not in self.features:
            return part
        return mathlib.SECTION_FOR.get((part, reg), part)

    @staticmethod
    def _instantiate(filename: str, name: str, reg: str, extra: dict[str, str]) -> str:
        template = helper_templates(filename).get(name)
        if template is None:
            raise InternalCompilerError(f"missing WGSL helper template {name!r} in wgsl/{filename}")
        nan = _NAN32 if reg == "f32" else f"{reg}({_NAN32})"
        inf = _INF32 if reg == "f32" else f"{reg}({_INF32})"
        return template.substitute(T=reg, Z=f"{reg}(0)", O=f"{reg}(1)", NAN=nan, INF=inf, **extra) + "\n"


    def slot_key(self, slot: ir.ContainerSlot) -> int:
        """The decl key of a container: its slot index, or a negative number for a block's shared array."""
        if slot.kind == "shared":
            for k, known in self.shared.items():
                if known is slot:
                    return k
            return -1 - len(self.shared)
        return self.slot_index[id(slot)]

    def shared_decl(self, slot: ir.ContainerSlot, loc: SourceLoc) -> ContainerDecl:
        k = self.slot_key(slot)
        decl = self.decls.get(k)
        if decl is None:
            self.require(slot.dtype, loc)
            ops = {s.op for s in walk(self.task.body) if isinstance(s, ir.AtomicOp) and s.ptr.container is slot}
            atomics = (ops, loc) if ops else None
            # workgroup memory: floats go through compare-exchange on their bits
            features = self.features - {"shader-float32-atomic"}
            element, bits = slot_element(slot, atomics, features, self.adapter)
            decl = ContainerDecl(f"wk_shared{-k}", -1, slot.dtype, element, bool(ops), bits, None)
            self.decls[k] = decl
            self.shared[k] = slot
        return decl

    def container(self, slot: ir.ContainerSlot, loc: SourceLoc) -> ContainerDecl:
        if slot.kind == "shared":
            return self.shared_decl(slot, loc)
        k = self.slot_index.get(id(slot))
        if k is None:
            raise InternalCompilerError(f"container {slot.name} is not in kernel {self.kernel.name}", loc)
        decl = self.decls.get(k)
        if decl is None:
            self.require(slot.dtype, loc)
            binding = self.plan.slot_binding[k]
            element, bits = slot_element(slot, self.atomic_ops.get(k), self.features, self.adapter)
            if self.plan.packed:
                name, base = f"wk_arena{binding}", f"wk_params.{self.layout.base_member[k]}"
            else:
                name, base = f"c{k}_{_identifier(slot.name)}", None
            decl = ContainerDecl(name, binding, slot.dtype, element, k in self.atomic_ops, bits, base)
            decl.windows = self.plan.windows_of(k)
            if decl.windows > 1:
                decl.shift = (self.plan.window_bytes // self.plan.slot_element_bytes[k]).bit_length() - 1
            else:
                decl.lanes = self.wide_element(binding, element, decl.atomic, bits)
            self.decls[k] = decl
        return decl


    # ---- visitor ----------------------------------------------------------------------------------------
    def visit(self, stmt: ir.Stmt) -> object:
        if stmt.dtype is not None:
            self.require(stmt.dtype, stmt.loc)
        try:
            ptr = getattr(stmt, "ptr", None) if self.split_ptrs else None
            if ptr is not None and ptr in self.split_ptrs and stmt not in self.reductions:
                return self.per_window(ptr, stmt, lambda: super(WgslCodegen, self).visit(stmt))
            return super().visit(stmt)
        except WkError:
            raise
        except Exception as exc:  # a bug here: name the statement
            raise InternalCompilerError(f"WGSL codegen failed on {type(stmt).__name__}: {exc!r}", stmt.loc) from exc

    def visit_Const(self, stmt: ir.Const) -> None:
        self.names[stmt] = wtypes.literal(stmt.value, stmt.dtype)

    def visit_ArgLoad(self, stmt: ir.ArgLoad) -> None:
        member = self.layout.arg_member.get(stmt.arg_index)
        if member is None:
            raise InternalCompilerError(f"argument {stmt.arg_index} is not a scalar argument", stmt.loc)
        expr = f"wk_params.{member}"
        if stmt.dtype.is_bool:
            expr = f"({expr} != 0u)"
        elif stmt.dtype == T.f16:
            expr = f"f16({expr})"
        self.let(stmt, expr)

    def _spell(self, spelling: wops.Spelling | None, what: str, dtype: DataType, result: DataType,
               loc: SourceLoc, **operands: str) -> str:
        if spelling is None:
            raise InternalCompilerError(f"{what} is not defined for {dtype.name}", loc)
        for helper in spelling.helpers:
            self.use_helper(helper, spelling.helper_type or dtype)
        reg = wtypes.register_type(dtype)
        mask = f"{max(dtype.bits, 1) - 1}u"
        expr = spelling.expr.format(T=reg, Z=wtypes.zero(dtype), O=wtypes.one(dtype), M=mask, **operands)
        return wtypes.wrap_narrow(expr, result) if spelling.wraps else expr

    def visit_UnaryOp(self, stmt: ir.UnaryOp) -> None:
        dtype = stmt.operand.dtype
        spelling = wops.lookup(wops.WGSL_UNARY[stmt.op], dtype)
        self.let(stmt, self._spell(spelling, f"unary {stmt.op.value}", dtype, stmt.dtype, stmt.loc,
                                   a=self.value(stmt.operand)))

    def visit_BinaryOp(self, stmt: ir.BinaryOp) -> None:
        dtype = stmt.lhs.dtype
        spelling = wops.lookup(wops.WGSL_BINARY[stmt.op], dtype)
        if stmt.op in _VIA_F64 and dtype in (T.f16, T.f32) and "shader-f64" in self.features:
            spelling = _VIA_F64[stmt.op]   # f32 exp(b log a) loses |b log a| ulps; f64 keeps it under one
        rhs = self.value(stmt.rhs)
        if stmt.op in (BinaryOpKind.SHL, BinaryOpKind.SHR) and isinstance(stmt.rhs, ir.Const) \
                and stmt.rhs.dtype.bits == 64:
            rhs = f"{int(stmt.rhs.value) & 63}u"    # naga cannot cast a 64-bit literal to u32 (the spelling's u32())
        if stmt.rhs.dtype != dtype and stmt.op.value not in ("shl", "shr"):
            raise InternalCompilerError(f"binary {stmt.op.value} on {dtype.name} and {stmt.rhs.dtype.name}",
                                        stmt.loc)
        shift = _power_of_two_divisor(stmt)
        if shift is not None:     # floor division / modulo by 2^k: the arithmetic shift / the low k bits
            a = self.value(stmt.lhs)
            self.let(stmt, f"({a} >> {shift}u)" if stmt.op is BinaryOpKind.FLOORDIV else f"({a} & {(1 << shift) - 1})")
            return
        if stmt.op in (BinaryOpKind.FLOORDIV, BinaryOpKind.MOD) and dtype == T.i32 \
                and stmt.lhs in self.nonnegative and stmt.rhs in self.nonnegative:
            # both >= 0 (an ndrange's index decomposed by extents): Python's result is the unsigned one,
            # truncating with x // 0 == x % 0 == 0, which the u32 spelling writes without the floor helpers
            spelling = wops.lookup(wops.WGSL_BINARY[stmt.op], T.u32)
        lhs = self.value(stmt.lhs)
        hide_lhs, hide_rhs = exact.hidden_operands(stmt, exact.STRICT_FLOATS in self.features)
        if hide_lhs:      # operands the driver's algebra would rewrite (exact.py)
            self.hidden_operands += 1
            lhs = exact.hide(lhs, dtype, self.hidden_operands, _constant(stmt.lhs))
        if hide_rhs:
            self.hidden_operands += 1
            rhs = exact.hide(rhs, dtype, self.hidden_operands, _constant(stmt.rhs))
        self.let(stmt, self._spell(spelling, f"binary {stmt.op.value}", dtype, stmt.dtype, stmt.loc, a=lhs, b=rhs))

    def visit_TernarySelect(self, stmt: ir.TernarySelect) -> None:
        self.let(stmt, f"select({self.value(stmt.false_value)}, {self.value(stmt.true_value)}, "
                       f"{self.value(stmt.cond)})")

    def visit_Cast(self, stmt: ir.Cast) -> None:
        src, dst, x = stmt.operand.dtype, stmt.dtype, self.value(stmt.operand)
        if stmt.bitcast:
            if src.bits != dst.bits:
                raise InternalCompilerError(f"bitcast {src.name} -> {dst.name} changes width", stmt.loc)
            self.let(stmt, wtypes.bitcast(x, src, dst))
            return
        if src.is_bool and dst.is_int and OPAQUE_BOOL_INTS in self.features:
            self.let(stmt, wtypes.cast(f"extractBits(select(0u, 0xffffffffu, {x}), 0u, 1u)", T.u32, dst)[0])
            return
        expr, helper = wtypes.cast(x, src, dst)
        if helper is not None:
            self.helpers.setdefault(helper[0], helper[1] + "\n")
        self.let(stmt, expr)

    def visit_RandomValue(self, stmt: ir.RandomValue) -> None:
        hashed = self.fresh("h")
        self.emit(f"let {hashed} = wk_hash(wk_params.seed, wk_params.launch_id, wk_thread, "
                  f"({stmt.site & 0xFFFFFFFF}u << 20u) ^ wk_rng_counter);")
        self.emit("wk_rng_counter = wk_rng_counter + 1u;")
        dtype = stmt.dtype
        if dtype == T.f64:
            expr = f"f64({hashed} >> 8u) * 5.9604644775390625e-8lf"
        elif dtype.is_float:
            expr = f"f32({hashed} >> 8u) * 5.9604644775390625e-8f"
            expr = expr if dtype == T.f32 else f"f16({expr})"
        else:
            expr = wtypes.cast(hashed, T.u32, dtype)[0]
        self.let(stmt, expr)

    # ---- locals ---------------------------------------------------------------------------------------------
    def visit_Alloca(self, stmt: ir.Alloca) -> None:
        name = self.fresh("l") + (f"_{_identifier(stmt.name)}" if stmt.name else "")
        self.emit(f"var {name}: {wtypes.register_type(stmt.dtype)} = {wtypes.zero(stmt.dtype)};")
        self.names[stmt] = name

    def visit_LocalLoad(self, stmt: ir.LocalLoad) -> None:
        self.let(stmt, self.value(stmt.alloca))

    def visit_LocalStore(self, stmt: ir.LocalStore) -> None:
        self.emit(f"{self.value(stmt.alloca)} = {self.value(stmt.value)};")


# statements whose WGSL value (codegen's `let`) has their dtype's register type
_REGISTER_VALUES = (ir.ArgLoad, ir.UnaryOp, ir.BinaryOp, ir.TernarySelect, ir.Cast, ir.LocalLoad, ir.GlobalLoad,
                    ir.LoopIndex)


def _constant(stmt: ir.Stmt) -> float | None:
    """A float constant operand's value (exact.hide spells a hidden constant from it), else None."""
    return float(stmt.value) if isinstance(stmt, ir.Const) and stmt.dtype.is_float else None
