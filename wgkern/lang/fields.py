"""Host handles of global data: `wk.field` and `wk.ndarray` and their storage (element access from Python is
lang/host_access.py, a mixin of Container).

Attribute contract the frontend relies on (docs/internals.md):
  .dtype / .element_type / .shape / .element_shape / .grad / .dual / .name / .is_field
Storage comes from the current Program's backend; where the backend has a host view (CPU) every host access is
a numpy operation on that view (zero-copy). Every host write bumps `.generation` (the sizer's caches key on it)."""
from __future__ import annotations

import itertools
import linecache
import math
import operator
import os
import re
import sys
import weakref
from typing import Any

import numpy as np

from wgkern.errors import CompileValueError, DeviceFeatureError, DtypeError, OutOfMemoryError, ShapeError, WkError
from wgkern.lang.types import VECTOR_TYPE_MAKERS, DataType, VectorType, to_dtype
from wgkern.lang.scalar_component import ScalarComponent
from wgkern.lang.host_access import HostAccess

_MAX_ELEMENTS = 2**31 - 1   # index arithmetic is i32 (docs/internals.md)

# What lang/snode.py (placement, a layer above the containers) registers: "implicit", the place node
# `x.snode` reports for a field made with a shape (a dense node of that shape under wk.root).
PLACE_NODE_MAKERS: dict[str, Any] = {}


def _free_buffer(backend: Any, buffer: Any) -> None:
    try:
        backend.free(buffer)
    except Exception:  # noqa: BLE001 - freeing during interpreter shutdown or after a device loss
        pass


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# `name = <...>field(` or `name = <...>ndarray(` (optionally `self.name`, optionally annotated)
_ASSIGNED_NAME = re.compile(r"^\s*(?:self\.)?([A-Za-z_]\w*)\s*(?::[^=]*)?=\s*[\w.]*(?:field|ndarray)\(")
# `name = factory()`: a call without arguments, the whole statement
_ASSIGNED_FACTORY_CALL = re.compile(r"^\s*(?:self\.)?([A-Za-z_]\w*)\s*(?::[^=]*)?=\s*[\w.]+\(\s*\)\s*(?:#.*)?$")


def _caller_variable_name() -> str:
    """`x = wk.field(...)` in user code -> 'x' (for messages), found from the first frame outside wgkern;
    '' when the line is not a plain single assignment. When that frame is a lambda (difftaichi's
    `scalar = lambda: ti.field(dtype=real)`, then `x = scalar()`), the lambda's caller names the field."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return ""
    if frame.f_code.co_name == "<lambda>" and frame.f_back is not None:
        caller = frame.f_back
        match = _ASSIGNED_FACTORY_CALL.match(linecache.getline(caller.f_code.co_filename, caller.f_lineno))
        return match.group(1) if match else ""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    statements = line.split(";")
    if len(statements) > 1:          # `x = wk.field(...); n = wk.field(...)`: the statement making this call
        column = _call_column(frame)
        if column is None:
            return ""
        start = 0
        for statement in statements:
            if start <= column < start + len(statement):
                match = _ASSIGNED_NAME.match(statement)
                return match.group(1) if match else ""
            start += len(statement) + 1
        return ""
    match = _ASSIGNED_NAME.match(line)
    return match.group(1) if match else ""


def _call_column(frame: Any) -> int | None:
    """Column of the instruction `frame` is executing (Python 3.11+), else None."""
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is None:
        return None
    for index, position in enumerate(positions()):
        if index == frame.f_lasti // 2:
            return position[2]
    return None


def _normalise_shape(shape: Any, kind_name: str) -> tuple[int, ...]:
    if shape is None:
        raise ValueError("wgkern has no SNode placement: pass shape= (an int, a tuple, or () for a 0-d field)")
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise ShapeError(f"{shape!r} is not a valid shape for {kind_name}: shape must be an int or a tuple of "
                         "ints") from None
    if any(d < 0 for d in dims):
        raise ShapeError(f"{dims} is not a valid shape for {kind_name}: an extent is negative")
    return dims


def _split_dtype(dtype: Any) -> tuple[DataType, VectorType | None]:
    if isinstance(dtype, VectorType):
        return dtype.dtype, dtype
    try:
        return to_dtype(dtype), None
    except TypeError:
        raise TypeError(f"unsupported dtype {dtype!r}: use wk.f32, wk.i32, ..., or wk.types.vector(n, dtype)") \
            from None


_container_uids = itertools.count(1)




class Flag:
    """A yes/no answer read as an attribute (`x.has_grad`) or called (Quadrants' `x.has_grad()`)."""

    __slots__ = ("value",)

    def __init__(self, value: bool):
        self.value = bool(value)

    def __bool__(self) -> bool:
        return self.value

    def __call__(self) -> bool:
        return self.value

    def __eq__(self, other: Any) -> bool:
        return self.value == bool(other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return repr(self.value)


class Container(HostAccess):
    """Common part of Field and Ndarray: one dense row-major buffer of shape `shape + element_shape`."""
    is_field: bool = False
    kind_name: str = "container"
    _is_staging = False      # a numpy argument's device copy (launch.py)
    _adopted = False         # uses another library's memory (host_memory=, lang/torch_arguments.py)
    _names = 0
    offset: tuple[int, ...] = ()     # a field's index of its first element per axis (wk.field(offset=...))
    quant: Any = None                # a field of a wk.types.quant type: every write rounds (lang/quant.py)
    quant_group: Any = None          # its shared-exponent group (BitpackedFields.place(shared_exponent=True))
    layout: tuple[int, ...] | None = None   # wk.tensor(layout=...)'s axis order; None: identity (lang/tensor.py)

    def __init__(self, dtype: Any, shape: Any, element_type: Any = None, name: str = "", *,
                 needs_grad: bool = False, needs_dual: bool = False, host_memory: np.ndarray | None = None,
                 device_address: int | None = None):
        """`host_memory`: a C-contiguous array of the container's full shape and storage dtype whose memory the
        container uses without a copy (backend.adopt; lang/torch_arguments.py passes a CPU torch tensor's).
        `device_address`: the same for device memory of the backend's `torch_device` (a CUDA tensor's), which
        its owner keeps alive while the container is used (backend.adopt_device)."""
        from wgkern.runtime.program import get_program
        if element_type is None:
            dtype, element_type = _split_dtype(dtype)
        self.dtype: DataType = dtype
        self.shape: tuple[int, ...] = _normalise_shape(shape, self.kind_name)
        self.element_type: VectorType | None = element_type
        self.element_shape: tuple[int, ...] = element_type.element_shape if element_type is not None else ()
        self._grad: Container | None = None
        self.dual: Container | None = None
        if not name:
            Container._names += 1
            name = _caller_variable_name() or f"{self.kind_name}{Container._names}"
        self.name = name
        self.generation = 0
        self.uid = next(_container_uids)     # never reused (unlike id()): part of the sizer's cache tokens
        self.full_shape: tuple[int, ...] = self.shape + self.element_shape
        self.size = math.prod(self.full_shape)
        if (needs_grad or needs_dual) and not dtype.is_float:
            raise DtypeError(f"{self.kind_name} '{name}': dtype {dtype!r} is not supported for field with "
                             "`needs_grad=True` or `needs_dual=True`: gradients need a float dtype")
        program = get_program()
        if self.is_field and dtype.is_float and not name.endswith((".grad", ".dual")):
            needs_grad = needs_grad or program.lazy_grad      # after wk.root.lazy_grad(), as in Taichi
            needs_dual = needs_dual or program.lazy_dual      # after wk.root.lazy_dual()
        backend = program.backend
        missing = backend.missing_features(dtype)
        if missing:
            raise DeviceFeatureError(f"{self.kind_name} '{name}': {dtype!r} needs the device feature(s) "
                                     f"{', '.join(missing)}, which {program.arch!r} ({program.description}) lacks",
                                     features=missing)
        self.program = program
        self.storage_dtype: np.dtype = np.dtype(backend.storage_dtype(dtype))
        self._same_storage = self.storage_dtype == dtype.np_dtype
        self.nbytes = self.size * self.storage_dtype.itemsize
        alloc = max(-(-self.nbytes // 4) * 4, 4)       # never a zero-size buffer; 4-byte multiple for WGSL
        try:
            backend.check_capacity(alloc)          # a request no device could meet is named as such first
            if self.size > _MAX_ELEMENTS:
                raise ShapeError(f"{self.full_shape} is not a valid shape for {self.kind_name} '{name}': it has "
                                 f"{self.size} elements; at most 2^31-1 are supported")
            if host_memory is not None:
                self.buffer = backend.adopt(host_memory)
            elif device_address is not None:
                self.buffer = backend.adopt_device(device_address, alloc)
            else:
                self.buffer = backend.allocate(alloc)
        except OutOfMemoryError as exc:
            raise OutOfMemoryError(f"{self.kind_name} '{name}' of shape {self.full_shape} ({alloc} bytes): "
                                   f"{exc}") from None
        self._finalizer = weakref.finalize(self, _free_buffer, backend, self.buffer)
        # kept through interpreter exit: exit hooks (wgkern's final sync, a program's atexit handler reading a
        # field) still use it, and a GPU queue must not see it destroyed under pending work
        self._finalizer.atexit = False
        self._view: np.ndarray | None = backend.host_view(self.buffer, self.storage_dtype, self.full_shape)
        self._exports: list[weakref.ref[np.ndarray]] = []
        # its memory belongs to another library, which may write it
        self._adopted = host_memory is not None or device_address is not None
        program.containers.add(self)
        program.unmaterialized = True       # materialised before the next launch or host access (materialization.py)
        if needs_grad:
            self._grad = type(self)(dtype, self.shape, element_type, f"{name}.grad")
        if needs_dual:
            self.dual = type(self)(dtype, self.shape, element_type, f"{name}.dual")

    grad_rebinds = 0     # counts `.grad` assignments after construction (launch_plan.py checks it)

    @property
    def grad(self) -> "Container | None":
        """The adjoint container, or None."""
        return self._grad

    @grad.setter
    def grad(self, value: "Container | None") -> None:
        self._grad = value
        Container.grad_rebinds += 1

    # ---- lifetime ---------------------------------------------------------------------------------------

    def _release(self, backend_alive: bool) -> None:
        """Called by Program.shutdown: the backend frees everything itself, so only detach the finalizer."""
        if not backend_alive:
            self._finalizer.detach()
        self._view = None
        self.buffer = None

    def _check(self) -> None:
        from wgkern.runtime.program import check_alive
        check_alive(self.program, f"{self.kind_name} '{self.name}'")

    @property
    def dlpack_live(self) -> bool:
        """True while a DLPack export of this container may still be in use (its memory can change behind
        wgkern's back, so nothing keyed on `generation` may be cached)."""
        if self._adopted:
            return True
        self._exports = [ref for ref in self._exports if ref() is not None]
        return bool(self._exports)

    def mark_written(self) -> None:
        self.generation += 1

    # ---- whole-container access -------------------------------------------------------------------------

    def _host_ready(self, write: bool = False) -> np.ndarray | None:
        """Check the handle is live and wait for launched work where needed; returns the host view or None.
        Reads always wait (and so raise pending device errors, API.md); writes wait only when they go
        through a host view, since a backend orders its uploads after earlier launches itself."""
        self._check()
        if self.program.unmaterialized:
            from wgkern.runtime.materialization import materialize_if_needed
            materialize_if_needed(self.program)
        self._materialize()
        view = self._view
        if not write or view is not None:
            self.program.before_host_access()
        return view

    def _add_dual(self) -> None:
        """Give a float field without a `.dual` one of its shape (wk.root.lazy_dual())."""
        if self.dual is None and self.dtype.is_float and self._adjoint_of is None:
            self.dual = Field(self.dtype, self.shape, self.element_type, f"{self.name}.dual")
            self.dual.offset = self.offset

    def _materialize(self) -> None:
        """A Taichi-style `.grad` placeholder takes its field's shape at first use (Field overrides)."""

    def _download_all(self) -> np.ndarray:
        if not self.nbytes:
            return np.zeros(self.full_shape, self.storage_dtype)
        raw = self.program.backend.download(self.buffer, self.nbytes, 0)
        return np.frombuffer(raw, dtype=self.storage_dtype, count=self.size).reshape(self.full_shape)

    def __copy__(self) -> Container:
        """copy.copy: the same container (a shallow copy shares the memory, as Taichi documents)."""
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Container:
        """copy.deepcopy: a new container of the same kind, dtype and shape holding a copy of the contents."""
        out = type(self)(self.dtype, self.shape, self.element_type, f"{self.name} (copy)",
                         needs_grad=self.grad is not None, needs_dual=self.dual is not None)
        out.offset = self.offset
        out.copy_from(self)
        memo[id(self)] = out
        return out


    # ---- element access ---------------------------------------------------------------------------------


    # ---- DLPack (only where the backend has a host view) -------------------------------------------------


    # ---- conveniences -----------------------------------------------------------------------------------

    @property
    def has_grad(self) -> Flag:
        """`x.has_grad` / Quadrants' `x.has_grad()`: whether x has a `.grad` container (needs_grad=True)."""
        return Flag(getattr(self, "grad", None) is not None)

    @property
    def has_dual(self) -> Flag:
        """`x.has_dual` / Quadrants' `x.has_dual()`: whether x has a `.dual` container (needs_dual=True)."""
        return Flag(getattr(self, "dual", None) is not None)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def n(self) -> int | None:
        return self.element_type.n if self.element_type is not None else None

    @property
    def m(self) -> int | None:
        """Columns of a matrix element; 1 for a vector element (as Taichi's `Vector.field(...).m`)."""
        return (self.element_type.m or 1) if self.element_type is not None else None


    def __repr__(self) -> str:
        element = repr(self.element_type) if self.element_type is not None else repr(self.dtype)
        return f"<wk.{self.kind_name} {self.name}: {element}, shape={self.shape}>"


class Field(Container):
    """`wk.field`: a global container, bound into kernels by closure."""
    is_field = True
    kind_name = "field"
    _in_kernel = False        # set when a compiled kernel binds it (launch.py): its shape is final
    _adjoint_of: Field | None = None    # the field whose `.grad` / `.dual` placeholder this is (see field())
    _place_node: Any = None             # the SNode it was placed under (lang/snode.py), if any
    _activity_of: Any = None            # the sparse SNode whose activity this internal field holds

    @property
    def snode(self) -> Any:
        """Taichi's `x.snode`: the field's place node (for a field made with a shape, a dense node of it)."""
        if self._place_node is None:
            return PLACE_NODE_MAKERS["implicit"](self.shape)
        return self._place_node

    def parent(self, n: int = 1) -> Any:
        """Taichi's `x.parent()`: the node the field was placed under (`n` levels up)."""
        return self.snode.parent(n)

    def fill(self, value: Any) -> None:
        """Set every element to `value`; under sparse nodes only the active elements, as in Taichi (the place
        node fills those, lang/snode.py)."""
        if self._place_node is None or not self._place_node.fill_field(self, value):
            self._fill_raw(value)

    def from_numpy(self, array: Any) -> None:
        """Copy an array in; under sparse nodes only into the active elements, as in Taichi."""
        active = self._place_node.active_elements(self) if self._place_node is not None else None
        if active is None:
            return super().from_numpy(array)
        data = np.asarray(array)
        if data.shape != self.full_shape and data.shape in (self._numpy_shape(True), self._numpy_shape(False)):
            data = data.reshape(self.full_shape)
        if data.shape != self.full_shape:
            raise ValueError(f"field '{self.name}' has shape {self.full_shape}; from_numpy got an array of shape "
                             f"{data.shape}")
        self._write_active(active, data)

    def _write_active(self, active: np.ndarray, values: np.ndarray) -> None:
        current = self.to_numpy()
        mask = active.reshape(active.shape + (1,) * len(self.element_shape))
        super().from_numpy(np.where(mask, values, current))

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        if self._place_node is not None:
            index = self._element_index(key)
            self._place_node.activate_for_host_write(self, index[:len(self.shape)])

    def __str__(self) -> str:
        """`print(field)` on the host prints its values (Taichi prints `field.to_numpy()`)."""
        if self.unplaced_adjoint:
            return repr(self)
        return str(self.to_numpy())

    def _raw_numpy(self) -> np.ndarray:
        """The stored values in the compute dtype (lang/quant.py's shared-exponent rounding reads them)."""
        return self.to_numpy().reshape(self.full_shape)

    def _store_raw(self, data: np.ndarray) -> None:
        """Write values as they are, without the quantized type's rounding."""
        self._host_ready(write=True)
        self._write_all(data, raw=True)

    def get_scalar_field(self, *indices: int) -> ScalarComponent:
        """Taichi's `v.get_scalar_field(i)` / `m.get_scalar_field(i, j)`: one component of a vector/matrix field,
        which Taichi can place on its own (`block.dense(ij, 16).place(v.get_scalar_field(0))`)."""
        if len(indices) != len(self.element_shape) or not all(
                isinstance(i, (int, np.integer)) and 0 <= i < n for i, n in zip(indices, self.element_shape)):
            raise WkError(f"get_scalar_field{indices!r}: field '{self.name}' has elements of shape "
                          f"{self.element_shape}; give one index per element axis")
        return ScalarComponent(self, tuple(int(i) for i in indices))

    def _add_grad(self) -> None:
        """Give a float field without a `.grad` one of its shape (wk.root.lazy_grad())."""
        if self.grad is None and self.dtype.is_float and self._adjoint_of is None:
            self.grad = Field(self.dtype, self.shape, self.element_type, f"{self.name}.grad")
            self.grad.offset = self.offset

    def _add_dual(self) -> None:
        """Give a float field without a `.dual` one of its shape (wk.root.lazy_dual())."""
        if self.dual is None and self.dtype.is_float and self._adjoint_of is None:
            self.dual = Field(self.dtype, self.shape, self.element_type, f"{self.name}.dual")
            self.dual.offset = self.offset

    def _materialize(self) -> None:
        """The `.grad` placeholder of a field declared without a shape: placed like its field, when it is first
        used (a kernel, a `.grad()` launch, host access) unless the program placed it itself (`place(x.grad)`).
        Pending @wk.layout functions (lang/legacy.py) run first: they place fields."""
        if self.program.pending_layouts:
            self.program.run_pending_layouts()
        owner = self._adjoint_of
        if owner is not None and self.shape != owner.shape:
            self._place(owner.shape)

    @property
    def unplaced_adjoint(self) -> bool:
        """A `.grad` placeholder not used or placed yet (no storage of its own yet)."""
        owner = self._adjoint_of
        return owner is not None and self.shape != owner.shape

    def _place(self, shape: tuple[int, ...]) -> None:
        """`wk.root.dense(...).place(field)` (lang/snode.py): give a field declared without a shape its shape,
        re-allocating its (still unused) storage."""
        shape = tuple(shape)
        if shape == self.shape:
            return
        if self.shape != ():
            raise WkError(f"field '{self.name}' already has shape {self.shape}; place() only shapes fields "
                          "declared without one")
        if self._in_kernel:
            raise WkError(f"field '{self.name}' is already used by a kernel: place() it before the first launch")
        self._finalizer()                       # frees the old buffer now
        self.program.containers.discard(self)
        dual_placeholder = self.dual if self.dual is not None and self.dual._adjoint_of is self else None
        needs_grad, needs_dual = self.grad is not None, self.dual is not None and dual_placeholder is None
        old_finalizer = self._finalizer
        try:
            Container.__init__(self, self.dtype, shape, self.element_type, self.name, needs_grad=needs_grad,
                               needs_dual=needs_dual)
        except Exception:
            # too large (OutOfMemoryError) or refused: the field stays declared without a shape, with storage
            # of its own, rather than keeping the freed buffer (a later read or launch would use it)
            if self._finalizer is not old_finalizer:
                self._finalizer()               # what was allocated before the failure
            self.program.containers.discard(self)
            Container.__init__(self, self.dtype, (), self.element_type, self.name, needs_grad=needs_grad,
                               needs_dual=needs_dual)
            raise
        if dual_placeholder is not None:        # kept: `place(x, x.dual)` names it, or it takes shape when used
            self.dual = dual_placeholder


class Ndarray(Container):
    """`wk.ndarray`: a container passed to kernels as an argument (`wk.types.ndarray()` parameters)."""
    is_field = False
    kind_name = "ndarray"

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):                  # Quadrants' data[8:24]: a wk.BufferView of a 1-D ndarray
            from wgkern.lang.buffer_view import ndarray_slice
            return ndarray_slice(self, key)
        return super().__getitem__(key)


class _FieldKind(type):
    """`isinstance(x, wk.ScalarField)` / `wk.MatrixField` (Taichi's class names): fields of scalar elements
    (and one component of a vector field, `v.get_scalar_field(i)`), and of vector/matrix elements."""

    def __instancecheck__(cls, obj: Any) -> bool:
        if isinstance(obj, ScalarComponent):
            return not cls._vector_elements
        return isinstance(obj, Field) and bool(obj.element_shape) == cls._vector_elements


class ScalarField(metaclass=_FieldKind):
    _vector_elements = False


class MatrixField(metaclass=_FieldKind):
    _vector_elements = True


class _NdarrayKind(type):
    """`isinstance(a, wk.ScalarNdarray)` / `wk.VectorNdarray` / `wk.MatrixNdarray` (Taichi's class names)."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Ndarray) and len(obj.element_shape) == cls._element_rank


class ScalarNdarray(metaclass=_NdarrayKind):
    _element_rank = 0


class VectorNdarray(metaclass=_NdarrayKind):
    _element_rank = 1


class MatrixNdarray(metaclass=_NdarrayKind):
    _element_rank = 2


def field(dtype: Any, shape: Any = None, needs_grad: bool = False, needs_dual: bool = False, name: str = "",
          offset: Any = None, **unknown: Any) -> Field:
    """`wk.field(dtype or wk.types.vector(...), shape, needs_grad=False, needs_dual=False, name='', offset=None)`.
    `offset` (one int per axis) is the index of the first element: kernels, loops over the field and host
    indexing use indices from offset to offset + shape - 1; to_numpy()/from_numpy() arrays start at element 0.
    A vector or matrix field also takes Quadrants' `layout=wk.Layout.AOS / SOA` (lang/layout.py)."""
    if "layout" in unknown and isinstance(dtype, VectorType):
        from wgkern.lang.layout import check_layout
        check_layout(unknown.pop("layout"), "wk.field")
    if unknown:
        raise TypeError(f"wk.field() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    from wgkern.lang import quant
    qtype = quant.quant_of_dtype(dtype)
    if qtype is not None:          # a wk.types.quant type: a field of its compute dtype whose writes round
        if needs_grad or needs_dual:
            raise TypeError("fields of quantized types have no gradients (needs_grad/needs_dual)")
        dtype = quant.compute_dtype(dtype)
    out = Field(dtype, () if shape is None else shape, name=name, needs_grad=needs_grad, needs_dual=needs_dual)
    out.quant = qtype
    if shape is None and out.grad is None and out.dtype.is_float and qtype is None:
        # declared without a shape, to be placed (wk.root.dense(...).place(x)): as in Taichi, `x.grad` exists
        # and can be placed too (`place(x, x.grad)`, `lazy_grad()`); it takes x's shape when first used
        out.grad = Field(out.dtype, (), out.element_type, f"{out.name}.grad")
        out.grad._adjoint_of = out
    if shape is None and out.dual is None and out.dtype.is_float and qtype is None:
        # `x.dual` likewise (`place(x, x.dual)`, forward mode); it has storage once placed or first used
        out.dual = Field(out.dtype, (), out.element_type, f"{out.name}.dual")
        out.dual._adjoint_of = out
    if offset is not None:
        offsets = (offset,) if isinstance(offset, int) else tuple(offset)
        if len(offsets) != len(out.shape) or not all(isinstance(o, int) for o in offsets):
            # a ValueError, and Quadrants' compile error with its phrases
            why = ("shape cannot be None when offset is set" if shape is None else
                   "The dimensionality of shape and offset must be the same")
            raise CompileValueError(f"wk.field(offset={offset!r}): give one integer per axis of the shape "
                                    f"{out.shape if shape is not None else None} ({why})")
        for container in (out, out.grad, out.dual):
            if container is not None:
                container.offset = offsets
    return out


def ndarray(dtype: Any, shape: Any, needs_grad: bool = False, name: str = "") -> Ndarray:
    """`wk.ndarray(dtype or wk.types.vector(...), shape, needs_grad=False)`."""
    return Ndarray(dtype, shape, name=name, needs_grad=needs_grad)


VECTOR_TYPE_MAKERS["field"] = field      # `vec3.field(shape)` (lang/types.py VectorType.field)
