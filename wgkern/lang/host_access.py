"""Host-side access to a field's or ndarray's elements: to_numpy / from_numpy / fill / copy_from, indexing
(`x[i, j]` read and written from Python, integers wrapped to the dtype), torch and DLPack exchange, len, iteration
and numpy's array protocol. A mixin of lang/fields.py's Container, which owns the storage."""
from __future__ import annotations

import math
import operator
import weakref
from typing import Any

import numpy as np

from wgkern.errors import BoundsCheckError, CompileError, WkError
from wgkern.lang.types import to_dtype
from wgkern.lang.host_matrix import container_element


static_reads_refused = 0     # > 0 while wk.static(...) evaluates (frontend/static_eval.py)


class HostAccess:
    """Element access from Python, shared by fields and ndarrays (lang/fields.py Container)."""

    def to_numpy(self, dtype: Any = None, keep_dims: bool = False, as_vector: bool | None = None) -> np.ndarray:
        """A new numpy array holding the current contents, of shape `shape + element_shape`; as in Taichi,
        `keep_dims=True` gives a field's vector elements their column axis (n, 1), and without it a field's
        matrix of one column loses that axis (n, 1) -> (n,). `as_vector=True` is Taichi 0.x's spelling of that
        same layout (vector components last)."""
        if as_vector is not None and not as_vector:
            raise WkError(f"{self.name}.to_numpy(as_vector=False) is not available: to_numpy() gives a vector "
                          "field's components last (np.moveaxis(a, -1, 0) moves them first)")
        view = self._host_ready()
        target = self.dtype.np_dtype if dtype is None else np.dtype(to_dtype(dtype).np_dtype)
        data = view if view is not None else self._download_all()
        if data.dtype == target:
            out = data.copy() if view is not None else np.array(data)
        elif target == np.bool_:
            out = data != 0
        else:
            out = data.astype(target)
        return out.reshape(self._numpy_shape(keep_dims))

    def _numpy_shape(self, keep_dims: bool) -> tuple[int, ...]:
        element = self.element_shape
        if not self.is_field:
            return self.full_shape
        if keep_dims and len(element) == 1:
            element = element + (1,)
        elif not keep_dims and len(element) == 2 and element[1] == 1:
            element = element[:1]
        return self.shape + element

    def _wrap_integers(self, value: Any) -> Any:
        """Integers given for an integer container wrap to its dtype (-128 stored into a u8 is 128), as in
        Taichi; done before any wider storage type sees them, which would otherwise keep the sign bits."""
        data = np.asarray(value)
        target = self.dtype.np_dtype
        if data.dtype.kind in "iu" and target.kind in "iu" and data.dtype != target:
            return data.astype(target)
        return value

    def _write_all(self, data: np.ndarray, raw: bool = False) -> None:
        if self.quant is not None and not raw:       # the values the quantized type holds (lang/quant.py)
            from wgkern.lang import quant
            if self.quant_group is None:
                return self._write_all(quant.host_quantize(self.quant, data), raw=True)
            self._write_all(np.asarray(data).astype(self.dtype.np_dtype), raw=True)
            return self.quant_group.requantize_host()
        view = self._view
        data = self._wrap_integers(data)
        if view is not None:
            np.copyto(view, data, casting="unsafe")
        else:
            staged = np.asarray(data).astype(self.storage_dtype, copy=False)
            if staged.shape != self.full_shape:
                staged = np.broadcast_to(staged, self.full_shape)
            if self.nbytes:
                flat = np.ascontiguousarray(staged).reshape(-1)
                self.program.backend.upload(self.buffer, flat.view(np.uint8), 0)
        self.generation += 1

    def from_numpy(self, array: Any) -> None:
        """Copy a numpy array (or anything np.asarray accepts) of shape `shape + element_shape` in, casting
        to the container's dtype."""
        self._host_ready(write=True)
        data = np.asarray(array)
        row_vector = self.shape + (1,) + self.element_shape if len(self.element_shape) == 1 else None
        if data.shape != self.full_shape and data.shape in (self._numpy_shape(True), self._numpy_shape(False),
                                                            row_vector):
            data = data.reshape(self.full_shape)        # a vector's (n, 1) / (1, n), a one-column matrix's (n,)
        if data.shape != self.full_shape:
            raise ValueError(f"{self.kind_name} '{self.name}' has shape {self.full_shape}; from_numpy got an "
                             f"array of shape {data.shape}")
        if self.dtype.is_bool:
            data = data != 0
        self._write_all(data)

    def fill(self, value: Any) -> None:
        """Set every element (every component, for vector/matrix elements) to `value`."""
        self._fill_raw(value)

    def _fill_raw(self, value: Any) -> None:
        self._host_ready(write=True)
        data = np.asarray(value)
        if data.dtype.kind not in "biuf":
            raise TypeError(f"{self.kind_name} '{self.name}'.fill() takes a number (or one element), not "
                            f"{type(value).__name__} {value!r}")
        if data.shape not in ((), self.element_shape):
            raise ValueError(f"fill value of shape {data.shape} does not match element shape {self.element_shape}")
        if self.dtype.is_bool:
            data = data != 0
        self._write_all(data)

    def copy_from(self, other: HostAccess) -> None:
        """Copy another container of the same shape into this one (device to device; through the host, converting
        the values, when the dtypes differ, as Taichi's copy_from converts them)."""
        self._host_ready(write=True)
        if not isinstance(other, HostAccess):
            raise TypeError(f"copy_from expects a wk.field or wk.ndarray, got {type(other).__name__}")
        other._check()
        if other.full_shape != self.full_shape:
            raise ValueError(f"copy_from: {other.name} is {other.dtype!r}{list(other.full_shape)}, "
                             f"{self.name} is {self.dtype!r}{list(self.full_shape)}")
        if other.dtype != self.dtype or (self.quant is not None and other.quant != self.quant):
            self.from_numpy(other.to_numpy().astype(self.dtype.np_dtype))
            return
        if self._view is not None and other._view is not None:
            np.copyto(self._view, other._view)
        elif self.nbytes:
            self.program.backend.copy(self.buffer, other.buffer, self.nbytes)
        self.generation += 1

    def _element_index(self, key: Any) -> tuple[int, ...]:
        """Host index -> tuple of ints over the container axes (or over all axes, element axes included)."""
        if key is None or (isinstance(key, tuple) and not key):
            if self.shape:
                raise IndexError(f"{self.kind_name} '{self.name}' has shape {self.shape}: index it with "
                                 f"{len(self.shape)} integers, not [None]")
            return ()
        if isinstance(key, np.ndarray) and key.ndim == 1 and key.dtype.kind in "iu":
            key = tuple(key.tolist())           # an index vector (`for I in wk.grouped(...)`: x[I])
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) != len(self.shape) and len(key) != len(self.full_shape):
            raise IndexError(f"{self.kind_name} '{self.name}' of shape {self.shape} indexed with {len(key)} "
                             f"indices ({len(self.shape)}d {self.kind_name} indexed with {len(key)}d indices)"
                             + (" (use [None] for a 0-d container)" if not self.shape else ""))
        index = []
        offset = self.offset
        for axis, (k, extent) in enumerate(zip(key, self.full_shape)):
            try:
                i = operator.index(k)
            except TypeError:
                raise IndexError(f"index {k!r} of {self.kind_name} '{self.name}' is not an integer "
                                 "(slices are not supported; use to_numpy())") from None
            first = offset[axis] if axis < len(offset) else 0
            if not first <= i < first + extent:
                span = f"extent {extent}" if not first else f"indices {first} to {first + extent - 1}"
                raise BoundsCheckError(f"index {i} out of range for axis {axis} of {self.kind_name} "
                                       f"'{self.name}' ({span})")
            index.append(i - first)
        return tuple(index)

    def _element_span(self, index: tuple[int, ...]) -> tuple[int, int, tuple[int, ...]]:
        """(first element offset, element count, result shape) of a normalised index."""
        strides = []
        stride = 1
        for extent in reversed(self.full_shape):
            strides.append(stride)
            stride *= extent
        strides.reverse()
        offset = sum(i * s for i, s in zip(index, strides))
        rest = self.full_shape[len(index):]
        return offset, math.prod(rest), rest

    def _to_python(self, value: Any) -> Any:
        if self.dtype.is_bool:
            return bool(value)
        return value.item() if hasattr(value, "item") else value

    def __getitem__(self, key: Any) -> Any:
        if static_reads_refused:
            raise CompileError(f"wk.static() cannot read {self.kind_name} '{self.name}': its values are run-time "
                               "data (a compiled kernel would keep a stale copy); read it without wk.static, or "
                               "pass the value as a kernel argument (wk.template() for a compile-time constant)")
        view = self._host_ready()
        index = self._element_index(key)
        if view is not None:
            value = view[index]
        else:
            offset, count, rest = self._element_span(index)
            itemsize = self.storage_dtype.itemsize
            raw = self.program.backend.download(self.buffer, count * itemsize, offset * itemsize)
            value = np.frombuffer(raw, dtype=self.storage_dtype, count=count).reshape(rest)
        if isinstance(value, np.ndarray) and value.ndim:
            value = value.astype(self.dtype.np_dtype) if self.dtype.is_bool or not self._same_storage \
                else value.copy()
            return container_element(value, self, index) if self.element_shape else value
        return self._to_python(value[()] if isinstance(value, np.ndarray) else value)

    def __setitem__(self, key: Any, value: Any) -> None:
        view = self._host_ready(write=True)
        index = self._element_index(key)
        if self.dtype.is_bool:
            value = np.asarray(value) != 0
        elif self.quant is not None:
            from wgkern.lang import quant
            value = np.asarray(value).astype(self.dtype.np_dtype) if self.quant_group is not None \
                else quant.host_quantize(self.quant, value)
        else:
            value = self._wrap_integers(value)
        if view is not None:
            try:
                view[index] = value
            except (ValueError, TypeError) as exc:
                raise ValueError(f"cannot store {value!r} into {self.kind_name} '{self.name}'"
                                 f"{list(index)}: {exc}") from None
        else:
            offset, count, rest = self._element_span(index)
            data = np.broadcast_to(np.asarray(value), rest).astype(self.storage_dtype)
            itemsize = self.storage_dtype.itemsize
            self.program.backend.upload(self.buffer, np.ascontiguousarray(data).reshape(-1).view(np.uint8),
                                        offset * itemsize)
        self.generation += 1
        if self.quant_group is not None:
            self.quant_group.requantize_host()

    def to_torch(self, device: Any = None, keep_dims: bool = False, *, copy: bool | None = True) -> Any:
        """Taichi's and Quadrants' `x.to_torch(device=None, copy=True)`: a new tensor holding the contents;
        `copy=False` a tensor sharing the container's memory (CPU only, else ValueError), `copy=None` that where
        possible, else a copy (lang/torch_interop.py)."""
        from wgkern.lang.torch_interop import container_to_torch
        return container_to_torch(self, device, keep_dims, copy)

    def _unwrap(self) -> HostAccess:
        """Quadrants' `qd.Tensor(x)._unwrap()`: the field or ndarray itself (wgkern's containers are their own
        Tensor wrappers, lang/tensor.py)."""
        return self

    def from_torch(self, tensor: Any) -> None:
        """Taichi's `x.from_torch(t)`: copy a torch tensor (on any device) in, as from_numpy does."""
        self.from_numpy(tensor.detach().cpu().numpy())

    def __dlpack__(self, **kwargs: Any) -> Any:
        view = self._host_ready()
        if view is None:
            raise BufferError(f"{self.kind_name} '{self.name}' lives in device memory on "
                              f"{self.program.arch!r}; there is no zero-copy export (use to_numpy())")
        export = view.view()
        self._exports.append(weakref.ref(export))
        self.generation += 1      # the consumer may write through the export
        return export.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        if self._view is None:
            raise BufferError(f"{self.kind_name} '{self.name}' has no host view to export")
        return (1, 0)             # kDLCPU

    def to_dlpack(self) -> Any:
        """Taichi's `x.to_dlpack()`: a DLPack capsule of the data (zero-copy, where __dlpack__ allows it)."""
        return self.__dlpack__()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError(f"0-d {self.kind_name} '{self.name}' has no len()")
        return self.shape[0]

    def __iter__(self) -> Any:
        """Python-scope iteration goes over a 1-D container's elements; a 2-D one has no rows to give (its
        elements take all indices at once), so it is a TypeError rather than an empty loop."""
        if len(self.shape) != 1:
            raise TypeError(f"{self.kind_name} '{self.name}' of shape {self.shape}: Python iteration goes over the "
                            "elements of a 1-D container only; use to_numpy(), or `for I in wk.grouped(x)` in a "
                            "kernel")
        for i in range(self.shape[0]):
            yield self[i]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """np.asarray(x): the contents (to_numpy()), whatever the number of axes."""
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype, copy=False)
