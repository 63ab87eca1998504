"""IR task -> WGSL text: one compute shader per task of an OffloadedKernel.

Owns statement lowering (an ir.IRVisitor), container declarations (element types and the binding plan come
from bindings.py: one binding per container, or packed arenas), the launch-argument struct layout shared with
the runtime, and helper instantiation. Op spellings live in ops.py,
dtype spellings and casts in types.py, hand-written helper templates in the top-level wgsl/ folder."""
from __future__ import annotations

import math
import re
import string
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from wgkern.errors import CompileError, DeviceFeatureError, InternalCompilerError, SourceLoc, WkError
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind
from wgkern.ir.visitor import IRVisitor, walk
from wgkern import dtypes as T
from wgkern.dtypes import DataType
from wgkern.resources import wgsl_source
from wgkern.backends.adstack import METADATA_FIELDS, collect_stacks
from wgkern.passes.analysis import first_simt_use, has_loop, leaves_loop_body
from wgkern.backends.reductions import COMBINE, ChunkReduction, chunk_reductions, identity
from wgkern.backends.wgsl import exact, mathlib
from wgkern.backends.wgsl.bindings import HALF_PAIRS, BindingPlan, binding_plan, collect_atomics, slot_element
from wgkern.backends.wgsl.adstack import AdStackLowering, metadata_rows
from wgkern.backends.wgsl.simt import SimtLowering, barrier_only_simt
from wgkern.backends.wgsl.bounds import BoundsLowering
from wgkern.backends.wgsl.split import SplitLowering
from wgkern.backends.wgsl.wide_access import WideAccessLowering, wide_slot_indices
from wgkern.passes.index_ranges import in_range_ptrs
from wgkern.backends.wgsl.printing import (LOOP_LIMIT_WORD, PRINT_NAME, PrintLowering, needs_print_buffer,
                                          record_bounds_site)
from wgkern.backends.wgsl import ops as wops
from wgkern.backends.wgsl import types as wtypes

# A pseudo-feature the backend adds where `a / b` may be the driver's own division: it is correctly rounded
# (llvmpipe), or wk.init(fast_math=True) (the default, as in Taichi) allows its ulps of error (Vulkan permits 2.5;
# the CPU backend's fast math lets LLVM use reciprocals alike). Otherwise `div_float` corrects the quotient with
# its exact residual, which costs a second division and two fmas (nbody on an H100 spends most of its time there).
NATIVE_DIVISION = "wk-native-division"
# A pseudo-feature of CPU adapters (lavapipe), which execute both sides of every divergent branch under a mask:
# code generated for them avoids rarely taken branches whose work would be done by every invocation anyway.
MASKED_BRANCHES = "wk-masked-branches"
# A pseudo-feature of NVIDIA's Vulkan driver (580 on an H100): an integer sum of bools converted to 0/1, such as
# int(p) + 2 * int(q) with p = c1 & c2 and q = c1 | c2, loses the q term for every input (the driver's rewrite
# of 0/1 arithmetic; docs/benchmarks.md). Code for it converts a bool to an integer through a bit-field extract
# of an all-ones mask, a spelling the driver does not rewrite (measured; select, casts, countOneBits, shifts
# and negated masks all gave the wrong sum).
OPAQUE_BOOL_INTS = "wk-opaque-bool-ints"
# A pseudo-feature of llvmpipe (lavapipe): its shaders end every loop of an invocation once the invocation's
# loops have run about LOOP_LIMIT_ITERATIONS iterations together (Mesa's LP_MAX_TGSI_LOOP_ITERATIONS: one budget
# per invocation that each iteration of a loop the driver did not unroll spends), silently. Code for it ends each
# index of a task with loops by a probe: a loop of two iterations whose bound the driver's compiler cannot know.
# The budget only shrinks, so a probe cut short means some loop of that index was cut short too, and the task's
# site goes to the print buffer (LoopLimitError at the next wait).
LOOP_LIMIT = "wk-loop-limit"
LOOP_LIMIT_ITERATIONS = 65535
LLVMPIPE_SERIAL_LANES = 64     # a serial task's workgroup on llvmpipe: a multiple of any SIMD width it uses
LLVMPIPE_UNROLL = 8            # iterations per trip of a serial task's long loops on llvmpipe
LLVMPIPE_FEW_INDICES = 64      # a parallel loop over at most this many indices counts as serial work there
WORKGROUP_SIZE = 256   # NVIDIA (Vulkan) reaches full occupancy only from 256 (measured: 2x saxpy bandwidth vs 64)


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
# Narrow-int atomics whose result must wrap to 8/16 bits: done with a compare-exchange loop.
_WRAPPING_ATOMIC = frozenset({AtomicOpKind.ADD, AtomicOpKind.SUB})


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

@dataclass(slots=True)
class ContainerDecl:
    """How one container is declared in a task: element type, and how to read/write it (atomic or plain)."""
    name: str
    binding: int
    dtype: DataType
    element: str                 # WGSL element type in array<...>
    atomic: bool = False
    bits_type: str | None = None  # atomic<u32>/<u64> holding float bits (compare-exchange loop), or HALF_PAIRS
    base: str | None = None       # packed binding: the arena offset (i32 expression) added to every index
    windows: int = 1              # bindings of a container larger than one (split.py), from `binding` on
    shift: int = 0                # log2 of the elements per window
    lanes: int = 0                # declared as array<vec4<element>> in this task (wide_access.py), else 0


def _element_index(ref: str) -> str:
    """The index expression of an element reference `name[index]` (visit_GlobalPtr's form)."""
    return ref[ref.index("[") + 1:-1]


# ---- the visitor ------------------------------------------------------------------------------------------

@dataclass(slots=True)
class TaskShader:
    """One task's WGSL module and what the runtime needs to dispatch it."""
    task: ir.Task
    wgsl: str
    workgroup_size: int
    containers: tuple[int, ...] = ()     # slot indices the shader declares


def _few_invocations(task: ir.Task) -> bool:
    """A serial task, or a parallel loop over at most LLVMPIPE_FEW_INDICES compile-time indices."""
    if task.kind == "serial":
        return True
    begin, end = task.loop.begin, task.loop.end
    return isinstance(begin, ir.Const) and isinstance(end, ir.Const) and \
        int(end.value) - int(begin.value) <= LLVMPIPE_FEW_INDICES


def _iterations_under(block: ir.Block, limit: int) -> bool:
    """Whether every loop in `block` has compile-time bounds and all of them together run at most `limit`
    iterations (nested loops multiply; both sides of a branch count)."""
    def count(block: ir.Block) -> int | None:
        total = 0
        for stmt in block.stmts:
            if isinstance(stmt, ir.While):
                return None
            inner = 0
            for child in stmt.blocks():
                nested = count(child)
                if nested is None:
                    return None
                inner += nested
            if isinstance(stmt, ir.RangeFor):
                if not (isinstance(stmt.begin, ir.Const) and isinstance(stmt.end, ir.Const)):
                    return None
                trips = max(int(stmt.end.value) - int(stmt.begin.value), 0)
                total += trips * (1 + inner)
            else:
                total += inner
            if total > limit:
                return None
        return total
    return count(block) is not None


class WgslCodegen(AdStackLowering, PrintLowering, SimtLowering, BoundsLowering, SplitLowering, WideAccessLowering,
                  IRVisitor):
    """Lowers the tasks of one OffloadedKernel. `features` are the device's feature names; `adapter` names the
    adapter for error messages. Missing dtype features raise CompileError at the statement's loc."""

    def __init__(self, kernel: ir.OffloadedKernel, features: frozenset[str] | set[str], adapter: str = "?",
                 adstack_code: int = 1, plan: BindingPlan | None = None,
                 print_sites: list[Any] | None = None, bounds_sites: list[Any] | None = None,
                 loop_limit_sites: list[Any] | None = None, max_workgroup_size: int = 1024,
                 max_workgroup_storage: int = 16384):
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
        text = "".join(head) + "\n" + "".join(self.helpers.values()) + "\n" + "\n".join(self.lines) + "\n"
        workgroup = self.block_size if task.kind == "range" else 1
        used = tuple(sorted(k for k in self.decls if k >= 0))
        return TaskShader(task, text, workgroup, used)

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
        self.in_range = in_range_ptrs((task.bounds, task.body))     # accesses that need no check
        self.guards: dict[ir.GlobalPtr, str] = {}                   # the others -> their `inside` bit (bounds.py)
        self.split_ptrs: dict[ir.GlobalPtr, tuple[str, str]] = {}   # accesses to windows -> (window, index)
        self.uses_simt = task.kind == "range" and first_simt_use(task.body) is not None
        self.lane_mask: str | None = None      # masked lanes: the condition under which side effects happen
        self.block_size = self._block_size(task)
        self.shared: dict[int, ir.ContainerSlot] = {}        # negative decl keys of the task's shared arrays
        self.uses_subgroup_ids = False
        # loops whose iterations provably stay far under the limit need no watching (nbody's range(4096))
        self.watch_loops = LOOP_LIMIT in self.features and not _iterations_under(task.body,
                                                                                   LOOP_LIMIT_ITERATIONS // 2)
        self.probe_site = 0                    # LOOP_LIMIT: the task's site (1-based), once a probe is emitted
        self.task_index = next(k for k, t in enumerate(self.kernel.tasks) if t is task)
        self.stack_row_base = self.first_rows[self.task_index]
        # packed: typed over the whole kernel (tasks share each arena binding); else per task
        self.atomic_ops = self.kernel_atomics if self.kernel_atomics is not None else \
            collect_atomics(self.kernel, [task])
        self.wide_bindings = {self.plan.slot_binding[k] for k in wide_slot_indices(task, self.slot_index)}

    # ---- emission helpers -----------------------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    def fresh(self, prefix: str = "v") -> str:
        """A new name `prefix` + counter, never one WGSL predeclares or reserves (`i32`, `f16`, `u64`, ...: the
        loop indices' prefix `i` reaches them)."""
        self.counter += 1
        name = f"{prefix}{self.counter}"
        return self.fresh(prefix) if name in WGSL_SCALAR_NAMES else name

    def let(self, stmt: ir.Stmt, expr: str) -> str:
        name = self.fresh()
        self.emit(f"let {name} = {expr};")
        self.names[stmt] = name
        return name

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

    def _block_size(self, task: ir.Task) -> int:
        """The range task's workgroup size: loop_config(block_dim=N), else the device's default
        (default_workgroup_size)."""
        if task.kind != "range" or not task.loop.block_dim:
            return self.workgroup_size
        if task.loop.block_dim > self.max_workgroup_size:
            raise DeviceFeatureError(f"kernel '{self.kernel.name}': block_dim={task.loop.block_dim} is more than "
                                     f"the {self.max_workgroup_size} invocations per workgroup adapter "
                                     f"'{self.adapter}' allows", task.loop.loc,
                                     ("max-compute-invocations-per-workgroup",))
        return task.loop.block_dim

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

    # ---- task entry functions -------------------------------------------------------------------------------
    def _emit_range_main(self, task: ir.Task) -> None:
        loop = task.loop
        if loop is None:
            raise InternalCompilerError("range task without a loop", task.loc)
        size = self.block_size
        self.lines.append("// true when the dispatch has one invocation per index (set per pipeline by the runtime)")
        self.lines.append("override wk_flat: bool = false;")
        self.lines.append("")
        self.lines.append(f"@compute @workgroup_size({size})")
        self.lines.append("fn main(@builtin(workgroup_id) wk_workgroup_id: vec3<u32>,")
        self.lines.append("        @builtin(num_workgroups) wk_num_workgroups: vec3<u32>,")
        signature_end = len(self.lines)
        self.lines.append("        @builtin(local_invocation_index) wk_local_index: u32) {")
        self.emit("// bounds")
        self.visit_block(task.bounds)
        self.emit(f"let wk_begin = {self.value(loop.begin)};")
        self.emit(f"let wk_end = {self.value(loop.end)};")
        self.emit("if (wk_end <= wk_begin) { return; }")
        self.emit("// grid-stride loop over the range (the dispatch may be capped or folded into 2-D); one pass if wk_flat")
        self.emit("let wk_count = bitcast<u32>(wk_end) - bitcast<u32>(wk_begin);")
        self.emit(f"let wk_stride = wk_num_workgroups.x * wk_num_workgroups.y * {size}u;")
        self.emit("let wk_group = wk_workgroup_id.y * wk_num_workgroups.x + wk_workgroup_id.x;")
        if self.uses_simt:
            # wk.simt: the loop runs over whole blocks, so every invocation of a workgroup takes the same trips
            # and index i is thread (i - begin) % block_dim; in a partial last block the invocations past the
            # end skip the body (docs/simt.md)
            self.emit(f"var wk_base = wk_group * {size}u;")
        else:
            self.emit(f"var wk_k = wk_group * {size}u + wk_local_index;")
        if self.stacks[self.task_index]:
            self.emit("let wk_slice = wk_k;   // this thread's adstack slice")
        if not self.uses_simt:
            self._declare_reduction_registers(task)
        self.emit("loop {")
        self.indent += 1
        position = "wk_k"
        if self.uses_simt:
            self.emit("if (wk_base >= wk_count) { break; }")
            self.emit("let wk_k = wk_base + wk_local_index;")
            if self._whole_blocks(loop, size):
                # every block is full: no per-invocation bounds test, so barriers and subgroup operations in
                # the body stay in uniform control flow, as WGSL requires
                self.emit("{")
            elif barrier_only_simt(task.body):
                # masked lanes: the invocations past the end of a partial block run the body on the last index
                # with every side effect masked off, so its barriers stay in uniform control flow (WGSL's rule;
                # Tint enforces it) and they take part in them as CUDA's threads would
                self.emit("let wk_active = wk_k < wk_count;   // false: a masked lane past the end of the range")
                self.emit("let wk_kc = select(wk_count - 1u, wk_k, wk_active);")
                self.emit("{")
                self.lane_mask, position = "wk_active", "wk_kc"
            else:
                self.emit("if (wk_k < wk_count) {")
            self.indent += 1
        else:
            self.emit("if (wk_k >= wk_count) { break; }")
        index = self.fresh("i")
        if loop.reversed:
            self.emit(f"let {index} = wk_end - 1i - bitcast<i32>({position});")
        else:
            self.emit(f"let {index} = wk_begin + bitcast<i32>({position});")
        self.loop_vars = {loop: index}
        self.emit(f"let wk_thread = bitcast<u32>({index});")
        self._emit_rng_counter(task.body)
        if self.stacks[self.task_index]:
            self.emit("var wk_overflowed = false;   // a push of this index overflowed (while loops exit on it)")
        self.visit_block(task.body)
        self.lane_mask = None
        if self.uses_simt:
            self.indent -= 1
            self.emit("}")
        step = "wk_base" if self.uses_simt else "wk_k"
        self.emit("continuing {")
        self.indent += 1
        self._emit_loop_limit_probe()
        self.indent -= 1
        self.emit(f"  let wk_left = wk_count - {step};")
        self.emit(f"  {step} = {step} + wk_stride;")
        self.emit("  break if wk_flat || wk_left <= wk_stride;")
        self.emit("}")
        self.indent -= 1
        self.emit("}")
        self._flush_reduction_registers()
        self.lines.append("}")
        if self.uses_subgroup_ids:
            self.lines[signature_end:signature_end] = [
                "        @builtin(subgroup_size) wk_subgroup_size: u32,",
                "        @builtin(subgroup_invocation_id) wk_subgroup_id: u32,"]

    def _whole_blocks(self, loop: ir.RangeFor, size: int) -> bool:
        """The range's bounds are constants whose difference is a multiple of the workgroup size."""
        bounds = [b.value if isinstance(b, ir.Const) else None for b in (loop.begin, loop.end)]
        if None in bounds:
            return False
        count = int(bounds[1]) - int(bounds[0])
        return count > 0 and count % size == 0

    def _declare_reduction_registers(self, task: ir.Task) -> None:
        """Registers for the task's register reductions (backends/reductions.py) of 32- and 64-bit values,
        one per invocation, starting from the op's identity. Not on CPU adapters: lavapipe runs a workgroup
        barrier by switching between coroutines of invocations (a sum over 2^20 f32 took 20x longer), while
        its atomics on one address are cheap."""
        if MASKED_BRANCHES in self.features:
            return
        self.reductions = {atomic: reduction for atomic, reduction in chunk_reductions(task).items()
                           if reduction.dtype.bits >= 32}
        for reduction in dict.fromkeys(self.reductions.values()):
            name = f"wk_red{len(self.reduction_registers)}"
            self.reduction_registers[reduction] = name
            start = wtypes.literal(identity(reduction.op, reduction.dtype), reduction.dtype)
            self.emit(f"var {name}: {wtypes.register_type(reduction.dtype)} = {start};   // register reduction")

    def _combine(self, reduction: ChunkReduction, a: str, b: str) -> str:
        spelling = wops.lookup(wops.WGSL_BINARY[COMBINE[reduction.op]], reduction.dtype)
        return self._spell(spelling, "reduction", reduction.dtype, reduction.dtype, reduction.ptr.loc, a=a, b=b)

    def _flush_reduction_registers(self) -> None:
        """After the invocation's last index: a tree reduction of each register over the workgroup (in
        workgroup memory), then one atomic per workgroup. Every invocation gets here: the bounds are the
        same for the whole dispatch, the grid-stride loop ends in structured control flow, and a `return`
        in the parallel body only ends its index."""
        if not self.reduction_registers:
            return
        names = [(reduction, name, f"wk_wg{k}") for k, (reduction, name) in
                 enumerate(self.reduction_registers.items())]
        for reduction, _, shared in names:
            self.helpers[shared] = (f"var<workgroup> {shared}: array<{wtypes.register_type(reduction.dtype)}, "
                                    f"{self.block_size}>;\n")
        self.emit("// register reductions: combine over the workgroup, then one atomic per workgroup")
        for _, name, shared in names:
            self.emit(f"{shared}[wk_local_index] = {name};")
        self.emit("workgroupBarrier();")
        # a block of any size: halves of the next power of two, each lane's partner inside the block
        size = self.block_size
        top = 1 << (size - 1).bit_length()
        partner = "" if top == size else f" && wk_local_index + wk_half < {size}u"
        self.emit(f"for (var wk_half = {top // 2}u; wk_half > 0u; wk_half = wk_half >> 1u) {{")
        self.emit(f"  if (wk_local_index < wk_half{partner}) {{")
        for reduction, _, shared in names:
            combined = self._combine(reduction, f"{shared}[wk_local_index]", f"{shared}[wk_local_index + wk_half]")
            self.emit(f"    {shared}[wk_local_index] = {combined};")
        self.emit("  }")
        self.emit("  workgroupBarrier();")
        self.emit("}")
        self.emit("if (wk_local_index == 0u) {")
        self.indent += 1
        for reduction, _, shared in names:
            self.visit(reduction.ptr)        # constant indices: the address is valid here
            self.per_window(reduction.ptr, None, lambda: self.guarded_statement(
                reduction.ptr, f"let {self.fresh()} = {self._atomic_expr(reduction.op, reduction.ptr, f'{shared}[0]')};"))
        self.indent -= 1
        self.emit("}")

    def _emit_serial_main(self, task: ir.Task) -> None:
        # num_workgroups: the loop-limit probe's and exact.hide's run-time constants
        builtins = ["@builtin(num_workgroups) wk_num_workgroups: vec3<u32>"]
        if LOOP_LIMIT in self.features:
            # llvmpipe runs a one-invocation workgroup in a SIMD vector whose other lanes are masked off, yet a
            # `while` whose exit reads memory (`if c[None] == 0: break`) kept those lanes looping until the
            # driver's loop budget ran out (65535 trips of masked work, and a false LoopLimitError). Real
            # invocations that return at once leave no such lanes: LLVMPIPE_SERIAL_LANES covers any SIMD width.
            self.lines.append(f"@compute @workgroup_size({LLVMPIPE_SERIAL_LANES})")
            builtins.append("@builtin(local_invocation_index) wk_local_index: u32")
        else:
            self.lines.append("@compute @workgroup_size(1)")
        self.lines.append(f"fn main({', '.join(builtins)}) {{")
        if LOOP_LIMIT in self.features:
            self.emit("if (wk_local_index != 0u) { return; }   // one invocation runs the task (_emit_serial_main)")
        self.loop_vars = {}
        self.emit("let wk_thread = 0u;")
        if self.stacks[self.task_index]:
            self.emit("let wk_slice = 0u;")
            self.emit("var wk_overflowed = false;")
        self._emit_rng_counter(task.body)
        self.visit_block(task.body)
        if not self._ends_in_return(task.body):
            self._emit_loop_limit_probe()
        self.lines.append("}")

    def _emit_loop_limit_probe(self) -> None:
        """LOOP_LIMIT, where an index's work ends (the grid-stride loop's continuing block, a serial task's end
        and its returns): a loop of wk_num_workgroups.z + 1 = 2 iterations. The driver's compiler cannot know
        that bound, so the loop is neither unrolled nor folded and spends llvmpipe's loop budget; ending after
        one iteration means the budget ran out in this invocation, and every loop of it that was still running
        then was cut short. The test is at the top: with it at the bottom (a do-while), lavapipe ran the second
        iteration even with the budget spent. (A task whose loops all end within the budget by construction
        gets no probe.)"""
        if not self.watch_loops:
            return
        if not self.probe_site:
            loops = [stmt for stmt in walk(self.task.body) if isinstance(stmt, (ir.RangeFor, ir.While))]
            lines = sorted({stmt.loc.lineno for stmt in loops if stmt.loc is not None and stmt.loc.lineno})
            self.loop_limit_sites.append((self.kernel.name, loops[0].loc if loops else self.task.loc, lines))
            self.probe_site = len(self.loop_limit_sites)
        probe = self.fresh("wk_probe")
        self.emit(f"var {probe} = 0u;   // LOOP_LIMIT: did llvmpipe's loop budget run out? (_emit_loop_limit_probe)")
        self.emit(f"loop {{ if ({probe} > wk_num_workgroups.z) {{ break; }} {probe} = {probe} + 1u; }}")
        # the first task cut short since the last wait names the error (the earliest launch's: the later ones
        # may only have run into it on its truncated results); a compare-exchange from 0, with no retry loop
        # (the budget is spent, so a loop here would end at once) and a store if it failed spuriously
        first, word = self.fresh("wk_first"), f"&{PRINT_NAME}[{LOOP_LIMIT_WORD}]"
        self.emit(f"if ({probe} <= wk_num_workgroups.z) {{")
        self.emit(f"  let {first} = atomicCompareExchangeWeak({word}, 0u, {self.probe_site}u);")
        self.emit(f"  if (!{first}.exchanged && {first}.old_value == 0u) {{ atomicStore({word}, {self.probe_site}u); }}")
        self.emit("}")

    @staticmethod
    def _ends_in_return(block: ir.Block) -> bool:
        return bool(block.stmts) and isinstance(block.stmts[-1], ir.Return)

    def _emit_rng_counter(self, body: ir.Block) -> None:
        if any(isinstance(stmt, ir.RandomValue) for stmt in walk(body)):
            self.use_helper("random")
            self.emit("var wk_rng_counter = 0u;")

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

    # ---- globals --------------------------------------------------------------------------------------------
    def _extent(self, slot: ir.ContainerSlot, axis: int) -> str:
        if slot.shape is not None:
            return wtypes.literal(slot.shape[axis], T.i32)
        return f"wk_params.{self.layout.shape_member[(self.slot_index[id(slot)], axis)]}"

    def _strides(self, slot: ir.ContainerSlot, axis: int) -> list[str]:
        """Row-major stride of `axis` as factors: one constant for static shapes, extents from the launch
        arguments for ndarrays."""
        if slot.shape is not None:
            product = math.prod(slot.shape[axis + 1:slot.ndim])
            return [] if product == 1 else [wtypes.literal(product, T.i32)]
        return [self._extent(slot, k) for k in range(axis + 1, slot.ndim)]

    def _flat_offset(self, stmt: ir.GlobalPtr) -> str:
        terms = [" * ".join([self.value(index), *self._strides(stmt.container, axis)])
                 for axis, index in enumerate(stmt.indices)]
        return " + ".join(terms) if terms else "0i"

    def visit_GlobalPtr(self, stmt: ir.GlobalPtr) -> None:
        decl = self.container(stmt.container, stmt.loc)
        offset_expr = self._flat_offset(stmt)
        if self.bounds_sites is not None and stmt.indices and stmt not in self.in_range:
            # debug=True: an index outside its axis records the site, and the access is dropped (bounds.py)
            self.bounds_sites.append((self.kernel.name, stmt))
            inside = " && ".join(f"(bitcast<u32>({self.value(index)}) < bitcast<u32>("
                                 f"{self._extent(stmt.container, axis)}))" for axis, index in enumerate(stmt.indices))
            ok = self.fresh("inside")
            self.emit(f"let {ok} = {inside};")
            failed = f"!{ok}" if self.lane_mask is None else f"{self.lane_mask} && !{ok}"
            self.emit(f"if ({failed}) {{ {record_bounds_site(len(self.bounds_sites))} }}")
            offset_expr = f"select(0i, {offset_expr}, {ok})"
            self.guards[stmt] = ok
        elif stmt not in self.in_range:
            offset_expr = f"select(0i, {offset_expr}, {self.range_guard(stmt)})"     # bounds.py
        offset = self.let(stmt, offset_expr)
        self.names[stmt] = self.element_ref(decl, f"{decl.base} + {offset}" if decl.base else offset)
        if decl.windows > 1:
            self.split_offset(stmt, decl, offset)

    def visit_AssertFail(self, stmt: ir.AssertFail) -> None:
        """debug=True only: recorded like a failed bounds check; the runtime raises it at the next sync."""
        self.bounds_sites.append((self.kernel.name, stmt))
        record = record_bounds_site(len(self.bounds_sites))
        self.emit(record if self.lane_mask is None else f"if ({self.lane_mask}) {{ {record} }}")

    def visit_GlobalLoad(self, stmt: ir.GlobalLoad) -> None:
        decl = self.decls[self.slot_key(stmt.ptr.container)]
        ref = self.value(stmt.ptr)
        if decl.bits_type == HALF_PAIRS:
            loaded = f"wk_load_{self._half_helper('load_half', decl)}({_element_index(ref)})"
        else:
            loaded = self._decode(decl, f"atomicLoad(&{ref})" if decl.atomic else ref)
        inside = self.guards.get(stmt.ptr)     # out of range: element 0 was read, the value is 0
        self.let(stmt, loaded if inside is None else f"select({wtypes.literal(0, decl.dtype)}, {loaded}, {inside})")

    def _half_helper(self, template: str, decl: ContainerDecl, op: AtomicOpKind | None = None) -> str:
        """The name (after `wk_load_`/`wk_atomic_`) of a HALF_PAIRS helper of `decl`: a plain load, or an
        atomic `op` (None: a plain store, which must not race with the other half's atomics either)."""
        name = f"{op.value if op is not None else 'store'}_{decl.name}" if template == "atomic_half" else decl.name
        encode = "v" if op is None or op is AtomicOpKind.EXCHANGE else wops.WGSL_ATOMIC_COMBINE[op]
        self.use_helper(template, T.f16, NAME=name, BUF=decl.name, ENCODE=encode)
        return name

    def _encode(self, decl: ContainerDecl, value: str) -> str:
        """A register value as the container stores it."""
        if decl.dtype.is_bool:
            return f"select(0u, 1u, {value})"
        if decl.bits_type is not None:
            return f"bitcast<{decl.bits_type}>({value})"
        return value

    def _decode(self, decl: ContainerDecl, stored: str) -> str:
        """A stored element as a register value."""
        if decl.bits_type is not None:
            stored = f"bitcast<{wtypes.register_type(decl.dtype)}>({stored})"
        if decl.dtype.is_bool:
            stored = f"({stored} != 0u)"
        return stored

    def visit_GlobalStore(self, stmt: ir.GlobalStore) -> None:
        decl = self.decls[self.slot_key(stmt.ptr.container)]
        if decl.bits_type == HALF_PAIRS:
            helper = self._half_helper("atomic_half", decl)
            self.guarded_statement(stmt.ptr, f"_ = wk_atomic_{helper}({_element_index(self.value(stmt.ptr))}, "
                                             f"{self.value(stmt.value)});")
            return
        ref, value = self.value(stmt.ptr), self._encode(decl, self.value(stmt.value))
        self.guarded_statement(stmt.ptr, f"atomicStore(&{ref}, {value});" if decl.atomic else f"{ref} = {value};")

    def visit_AtomicOp(self, stmt: ir.AtomicOp) -> None:
        decl = self.decls[self.slot_key(stmt.ptr.container)]
        ref, value = self.value(stmt.ptr), self.value(stmt.value)
        index = ref[ref.index("[") + 1:-1]
        dtype = decl.dtype
        if stmt.op is AtomicOpKind.CAS:
            helper_name = f"cas_{decl.name}"
            self.use_helper("atomic_compare_exchange", wtypes.storage_type(dtype), NAME=helper_name, BUF=decl.name)
            expected = self._encode(decl, self.value(stmt.expected))
            self.guarded_value(stmt, stmt.ptr, wtypes.register_type(dtype), wtypes.literal(0, dtype),
                               self._decode(decl, f"wk_atomic_{helper_name}({index}, {expected}, "
                                                  f"{self._encode(decl, value)})"))
            return
        reduction = self.reductions.get(stmt)
        if reduction is not None:          # accumulate in the invocation's register (flushed at the end)
            register = self.reduction_registers[reduction]
            self.emit(f"{register} = {self._combine(reduction, register, value)};")
            self.names[stmt] = wtypes.literal(0, dtype)     # unused: only unused atomics are reductions
            return
        self.guarded_value(stmt, stmt.ptr, wtypes.register_type(dtype), wtypes.literal(0, dtype),
                           self._atomic_expr(stmt.op, stmt.ptr, value))

    def _atomic_expr(self, op: AtomicOpKind, ptr: ir.GlobalPtr, value: str) -> str:
        """The old value of an atomic `op` (not CAS) of register value `value` on the element `ptr` names."""
        decl = self.decls[self.slot_key(ptr.container)]
        ref = self.value(ptr)
        index = ref[ref.index("[") + 1:-1]
        dtype = decl.dtype
        if decl.bits_type == HALF_PAIRS:
            return f"wk_atomic_{self._half_helper('atomic_half', decl, op)}({index}, {value})"
        builtin = wops.WGSL_ATOMIC_BUILTIN.get(op)
        native = builtin is not None and (decl.bits_type is None or op in wops.BITWISE_ATOMIC) \
            and not (dtype.is_int and dtype.bits < 32 and op in _WRAPPING_ATOMIC)
        if native:
            return self._decode(decl, f"{builtin}(&{ref}, {self._encode(decl, value)})")
        # compare-exchange loop: float bits, a narrow int whose sum must wrap to its own width, or an op with no
        # builtin (mul)
        combine = wops.WGSL_ATOMIC_COMBINE[op]
        if decl.bits_type is not None:
            reg = wtypes.register_type(dtype)
            decode, encode = f"bitcast<{reg}>(old_bits)", f"bitcast<{decl.bits_type}>({combine})"
        else:
            decode, encode = "old_bits", wtypes.wrap_narrow(combine, dtype)
        helper_name = f"{op.value}_{decl.name}"
        self.use_helper("atomic_cas", dtype, NAME=helper_name, BUF=decl.name, DECODE=decode, ENCODE=encode)
        return f"wk_atomic_{helper_name}({index}, {value})"

    def visit_ShapeOf(self, stmt: ir.ShapeOf) -> None:
        self.names[stmt] = self._extent(stmt.container, stmt.axis)

    # ---- control flow -------------------------------------------------------------------------------------
    def _block(self, block: ir.Block) -> None:
        self.indent += 1
        self.visit_block(block)
        self.indent -= 1

    def visit_RangeFor(self, stmt: ir.RangeFor) -> None:
        begin, end = self.value(stmt.begin), self.value(stmt.end)
        index = self.fresh("i")
        self.loop_vars[stmt] = index
        self.loop_depth += 1
        if stmt.reversed:      # decrement first: no overflow at either end, `continue` needs no continuing
            self.emit(f"var {index} = {end};")
            self.emit("loop {")
            self.emit(f"  if ({index} <= {begin}) {{ break; }}")
            self.emit(f"  {index} = {index} - 1i;")
            self._block(stmt.body)
            self.emit("}")
        elif self._unrolls_for_llvmpipe(stmt):
            self._emit_unrolled_range(stmt, index, begin, end)
        else:
            self.emit(f"var {index} = {begin};")
            self.emit("loop {")
            self.emit(f"  if ({index} >= {end}) {{ break; }}")
            self._block(stmt.body)
            self.emit(f"  continuing {{ {index} = {index} + 1i; }}")
            self.emit("}")
        self.loop_depth -= 1

    def _unrolls_for_llvmpipe(self, stmt: ir.RangeFor) -> bool:
        """LOOP_LIMIT: the loops of a serial task, or of a parallel loop over a few indices (Taichi's serial
        idiom `for _ in range(1):`), run in one invocation, whose loops llvmpipe ends after 65535 iterations
        together. An innermost loop of such a task that may run long and that leaves its body only at the end
        (no break, continue or return of its own) runs LLVMPIPE_UNROLL iterations per trip instead, which
        multiplies what fits in that budget by as much. Data-parallel tasks keep their loops as they are (their indices share
        the work, and copies of a body cost lavapipe JIT time)."""
        return (self.watch_loops and _few_invocations(self.task)
                and not _iterations_under(ir.Block([stmt]), LOOP_LIMIT_ITERATIONS // 2)
                and not leaves_loop_body(stmt.body.stmts) and not has_loop(stmt.body))

    def _emit_unrolled_range(self, stmt: ir.RangeFor, index: str, begin: str, end: str) -> None:
        """`for index in range(begin, end)` with LLVMPIPE_UNROLL copies of the body per trip while that many
        indices remain (the count is taken unsigned: no overflow near the ends of i32), one copy otherwise."""
        self.emit(f"var {index} = {begin};")
        self.emit("loop {")
        self.indent += 1
        self.emit(f"if ({index} >= {end}) {{ break; }}")
        self.emit(f"if (bitcast<u32>({end}) - bitcast<u32>({index}) >= {LLVMPIPE_UNROLL}u) {{   "
                  "// LOOP_LIMIT: several iterations per trip (_unrolls_for_llvmpipe)")
        for step in range(LLVMPIPE_UNROLL):
            self._emit_body_copy(stmt, f"{index} + {step}i")
        self.emit(f"  {index} = {index} + {LLVMPIPE_UNROLL}i;")
        self.emit("} else {")
        self._emit_body_copy(stmt, index)
        self.emit(f"  {index} = {index} + 1i;")
        self.emit("}")
        self.indent -= 1
        self.emit("}")

    def _emit_body_copy(self, stmt: ir.RangeFor, index_expr: str) -> None:
        """One copy of a loop body, in its own scope, with the loop index bound to `index_expr`."""
        self.indent += 1
        self.emit("{")
        copy_index = self.fresh("i")
        self.emit(f"  let {copy_index} = {index_expr};")
        self.loop_vars[stmt] = copy_index
        self._block(stmt.body)
        self.emit("}")
        self.indent -= 1

    def visit_LoopIndex(self, stmt: ir.LoopIndex) -> None:
        index = self.loop_vars.get(stmt.loop)
        if index is None:
            raise InternalCompilerError("LoopIndex outside its loop", stmt.loc)
        self.let(stmt, index)

    def visit_While(self, stmt: ir.While) -> None:
        self.loop_depth += 1
        self.emit("loop {")
        if self.watch_loops and _few_invocations(self.task) and not has_loop(stmt.body):
            # LOOP_LIMIT, as _unrolls_for_llvmpipe: LLVMPIPE_UNROLL iterations per trip. A `while` has no index,
            # so its `break` leaves from any copy and its `continue` starts the next iteration at the top.
            self.emit(f"// LOOP_LIMIT: {LLVMPIPE_UNROLL} iterations per trip (visit_While)")
            for _ in range(LLVMPIPE_UNROLL):
                self.indent += 1
                self.emit("{")
                self._block(stmt.body)
                self.emit("}")
                self.indent -= 1
        else:
            self._block(stmt.body)
        self.emit("}")
        self.loop_depth -= 1

    def visit_Break(self, stmt: ir.Break) -> None:
        if self.task.kind == "range" and not self.loop_depth:
            raise CompileError("break out of a parallel loop is not supported", stmt.loc)
        self.emit("break;")

    def visit_Continue(self, stmt: ir.Continue) -> None:
        self.emit("continue;")

    def visit_If(self, stmt: ir.If) -> None:
        self.emit(f"if ({self.value(stmt.cond)}) {{")
        self._block(stmt.then_block)
        if stmt.else_block.stmts:
            self.emit("} else {")
            self._block(stmt.else_block)
        self.emit("}")

    def visit_Return(self, stmt: ir.Return) -> None:
        if self.task.kind == "range":
            if self.loop_depth:
                raise CompileError("return inside a loop of a parallel loop body is not supported", stmt.loc)
            self.emit("continue;  // return: this index is done")
        else:
            self._emit_loop_limit_probe()
            self.emit("return;")


def _constant(stmt: ir.Stmt) -> float | None:
    """A float constant operand's value (exact.hide spells a hidden constant from it), else None."""
    return float(stmt.value) if isinstance(stmt, ir.Const) and stmt.dtype.is_float else None
