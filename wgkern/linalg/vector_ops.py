"""Device-side vector algebra for the matrix-free Krylov solvers in matrixfree.py, written as wgkern kernels.

Owns the workspace of a solve (fields shaped like the unknown, a scalar field holding the solver's running
scalars, an i32 state field, the partial sums of dot products) and the blocked dot product: one thread per
`BLOCK` consecutive elements (row-major order of the field's indices) writes its partial sum, then one thread
adds the partials in order. No atomics, so a dot product gives the same bits on every run, and f64 needs no
64-bit atomics on WGSL. Scalars never leave the device during an iteration; the host reads the state field only
to decide whether to stop."""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

from wgkern.lang import math as wm
from wgkern.lang.fields import Field, field
from wgkern.lang.kernel import func, kernel
from wgkern.lang.matrix import Vector
from wgkern.lang.types import i32, template

BLOCK = 256

# Slots of the scalar field `s` (solver dtype) shared by CG and BiCGSTAB.
TOL, RR, RR_NEW, DOT_A, DOT_B, ALPHA, BETA, OMEGA, RHO, RHO_OLD = range(10)
SCALAR_SLOTS = 10

# Slots of the i32 state field.
STATUS, ITERATIONS = range(2)
STATE_SLOTS = 2

# Dot products a kernel can compute in one pass over the blocks (rows of the partial sums).
PARTIAL_ROWS = 2

# Values of state[STATUS].
RUNNING, CONVERGED, BROKE_DOWN = range(3)


@dataclass(frozen=True)
class Layout:
    """What the kernels need to visit a field's elements as one flat range: element count, row-major strides,
    index offsets (wk.field(offset=...)), the shape, and the number of blocks of BLOCK elements."""
    count: int
    strides: tuple[int, ...]
    offsets: tuple[int, ...]
    shape: tuple[int, ...]
    blocks: int

    @classmethod
    def of(cls, container: Field) -> Layout:
        shape = tuple(container.shape)
        strides = tuple(math.prod(shape[axis + 1:]) for axis in range(len(shape)))
        offsets = tuple(container.offset) if container.offset else (0,) * len(shape)
        count = math.prod(shape)
        return cls(count, strides, offsets, shape, (count + BLOCK - 1) // BLOCK)

    def as_template(self) -> tuple[Any, ...]:
        """The layout as nested tuples of ints, the form kernels take it in (a compile-time template value):
        (count, strides, offsets, shape, blocks)."""
        return (self.count, self.strides, self.offsets, self.shape, self.blocks)


@func
def index_of(k, layout):
    """The field index of the k-th element in row-major order."""
    return Vector([(k // layout[1][axis]) % layout[3][axis] + layout[2][axis]
                      for axis in wm.static(range(len(layout[3])))])


@func
def element_dot(a, b, index):
    """a[index] . b[index]: the product of scalars, the sum of the component products of vectors/matrices."""
    if wm.static(len(a.element_shape) > 0):
        return (a[index] * b[index]).sum()
    else:
        return a[index] * b[index]


@func
def block_dot(a, b, block, layout):
    """Sum over the elements of block number `block` of a[I] * b[I] (vectors and matrices: all components)."""
    partial = wm.cast(0, a.dtype)
    for k in range(block * BLOCK, wm.min(block * BLOCK + BLOCK, layout[0])):
        index = index_of(k, layout)
        partial += element_dot(a, b, index)
    return partial


@func
def sum_partials(partials, row, layout):
    """The sum, in block order, of the partial sums partials[row * blocks + block]. Call it from a nested
    scope (under an `if`): a loop at a kernel's top level would run in parallel."""
    total = wm.cast(0, partials.dtype)
    for block in range(layout[4]):
        total += partials[row * layout[4] + block]
    return total


@kernel
def dot_into(a: template(), b: template(), partials: template(), s: template(), slot: template(),
             state: template(), layout: template()):
    """s[slot] = a . b, skipped once the solve has stopped (state[STATUS] != RUNNING)."""
    for block in range(layout[4]):
        if state[STATUS] == RUNNING:
            partials[block] = block_dot(a, b, block, layout)
    if state[STATUS] == RUNNING:
        s[slot] = sum_partials(partials, 0, layout)


@dataclass
class Workspace:
    """The fields one solve needs, shaped like the unknown: `vectors` by name, `s` the scalar slots (solver
    dtype), `state` (i32), `partials` (PARTIAL_ROWS rows of per-block sums). Reused by every solve of the same
    shape, element type and offset."""
    vectors: dict[str, Field]
    s: Field
    state: Field
    partials: Field
    layout: Layout


# One cache per Program (a weak key: the workspaces go with the program they were allocated in). Reusing
# the fields keeps the kernels compiled for them: template kernels are compiled per container.
_workspaces: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], Workspace]] = weakref.WeakKeyDictionary()


def workspace(like: Field, names: tuple[str, ...]) -> Workspace:
    """The workspace of vectors `names` shaped like `like`, from the cache of like's program."""
    layout = Layout.of(like)
    element_type = like.element_type if like.element_type is not None else like.dtype   # None: scalars
    key = (names, element_type, layout.shape, layout.offsets)
    cache = _workspaces.setdefault(like.program, {})
    found = cache.get(key)
    if found is None:
        offset = layout.offsets if like.offset else None
        vectors = {name: field(element_type, shape=layout.shape, offset=offset, name=f"linalg {name}")
                   for name in names}
        found = Workspace(vectors, field(like.dtype, shape=SCALAR_SLOTS, name="linalg scalars"),
                          field(i32, shape=STATE_SLOTS, name="linalg state"),
                          field(like.dtype, shape=PARTIAL_ROWS * layout.blocks, name="linalg partial sums"), layout)
        cache[key] = found
    return found
