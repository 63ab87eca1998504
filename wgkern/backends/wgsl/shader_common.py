"""What the parts of the WGSL code generator share (codegen.py and its lowering mixins): the pseudo-features
of adapters that change the code emitted, the loop-limit and workgroup constants, container declarations and
element indexing, and two questions about a task's size."""
from __future__ import annotations

from dataclasses import dataclass

from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind
from wgkern.dtypes import DataType


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


# A pseudo-feature of GPU adapters: an innermost range loop with a small body that runs to its end (no break,
# continue or return of its own, no barrier or subgroup operation) runs GPU_UNROLL copies of its body per trip.
# The copies' loads can be in flight together; a GPU's compiler given one copy waits on each in turn. nbody 4096
# on an H200 through NVIDIA's Vulkan driver, by GPU timestamps: 897 GFLOP/s as one copy, 1588 with 4, 1704 with 16.
GPU_UNROLL = "wk-gpu-unroll"


GPU_UNROLL_COPIES = 4


GPU_UNROLL_MAX_STMTS = 64      # larger bodies stay one copy (more code for the driver, little latency to hide)


LLVMPIPE_SERIAL_LANES = 64     # a serial task's workgroup on llvmpipe: a multiple of any SIMD width it uses


LLVMPIPE_UNROLL = 8            # iterations per trip of a serial task's long loops on llvmpipe


# Bodies over this many statements keep one copy on llvmpipe: the 9 copies of an unrolled loop (8 and the
# remainder's) multiply the shader, and llvmpipe's LLVM compile time grows faster than the shader does (its
# coroutine frame pass, superlinear in the basic blocks, each global access a loop over the SIMD lanes). Genesis's
# serial kernel_update_cartesian_space was 94% copies: 1.5 MB of WGSL, still compiling after 5 minutes.
LLVMPIPE_UNROLL_MAX_STMTS = 64


# The statements a task's copies may add on llvmpipe, over all its loops (the first loops in program order get
# them): Genesis's serial kernel_refresh_invweight_and_meaninertia has 49 small innermost loops, which copied
# made 1 MB of WGSL.
LLVMPIPE_COPIES_PER_TASK = LLVMPIPE_UNROLL * LLVMPIPE_UNROLL_MAX_STMTS


LLVMPIPE_FEW_INDICES = 64      # a parallel loop over at most this many indices counts as serial work there


WORKGROUP_SIZE = 256   # NVIDIA (Vulkan) reaches full occupancy only from 256 (measured: 2x saxpy bandwidth vs 64)


# Narrow-int atomics whose result must wrap to 8/16 bits: done with a compare-exchange loop.
_WRAPPING_ATOMIC = frozenset({AtomicOpKind.ADD, AtomicOpKind.SUB})


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


def _few_invocations(task: ir.Task) -> bool:
    """A serial task, or a parallel loop over at most LLVMPIPE_FEW_INDICES compile-time indices."""
    if task.kind == "serial":
        return True
    begin, end = task.loop.begin, task.loop.end
    return isinstance(begin, ir.Const) and isinstance(end, ir.Const) and \
        int(end.value) - int(begin.value) <= LLVMPIPE_FEW_INDICES


def iterations_under(block: ir.Block, limit: int) -> bool:
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
