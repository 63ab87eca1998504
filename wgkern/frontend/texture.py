"""Kernel side of texture parameters (`wk.types.texture` / `wk.types.rw_texture`): `tex.sample_lod(uv, lod)`,
`tex.fetch(ij, lod)`, `tex.load(ij)`, `tex.store(ij, v)`, `tex.shape` and `for i, j in tex`.

A texture arrives as its texel ndarray (f32, shape (*shape, channels); lang/texture.py), so every method lowers
here to ordinary loads, stores and arithmetic and no backend knows about textures. Sampling follows Taichi's
Vulkan sampler: bilinear (linear in each axis) with texel centres at (i + 0.5) / size and the repeat address
mode; one level of detail, so `lod` selects nothing. Channels a format lacks read as (0, 0, 0, 1), reads outside
the texture give 0 in the stored channels, stores outside it are dropped, and a store rounds as the format keeps
values (unorm: to a multiple of 1 / (2^bits - 1); integer formats: truncated and clamped; f16 formats: to the
nearest f16, computed in f32)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from wgkern.errors import CompileError
from wgkern.frontend import arith
from wgkern.frontend.scope import Static
from wgkern.frontend.values import NdarrayRef, VectorValue, describe
from wgkern.ir import nodes as ir
from wgkern.ir.ops import BinaryOpKind, UnaryOpKind
from wgkern.lang import types as T
from wgkern.lang.texture import FORMATS, Encoding, Format, Texture, TextureAccess, TextureArg

SAMPLED_METHODS = ("sample_lod", "fetch")
STORAGE_METHODS = ("load", "store")
MISSING_CHANNELS = (0.0, 0.0, 0.0, 1.0)      # what a format without a channel reads there (Vulkan's rule)
HOST_CONSTANTS = ("shape", "num_dims", "num_channels", "fmt", "dtype")


@dataclass(eq=False)
class TextureRef:
    """A texture parameter as kernel code sees it: its texel ndarray and what the annotation allows."""
    name: str
    texels: NdarrayRef
    num_dims: int
    fmt: Format
    access: TextureAccess

    @property
    def channels(self) -> int:
        return FORMATS[self.fmt].channels


@dataclass(frozen=True)
class TextureMethod:
    """`tex.sample_lod` and friends, waiting for their call."""
    texture: TextureRef
    name: str


def closure_texture_error(texture: Texture) -> CompileError:
    return CompileError(f"{texture!r} reaches kernel code as a compile-time value (by closure or a wk.template() "
                        "parameter); textures are kernel arguments: pass it to a parameter "
                        f"annotated wk.types.texture(num_dimensions={texture.num_dims}) (sample_lod, fetch) or "
                        f"wk.types.rw_texture(num_dimensions={texture.num_dims}, fmt=wk.Format.{texture.fmt.name}) "
                        "(load, store)")


class TextureMixin:
    """FunctionBuilder methods for texture parameters (the builder binds them; attribute access, calls and
    struct-for loops dispatch to them)."""

    def bind_texture_arg(self, name: str, spec: ir.ArgSpec) -> None:
        info: TextureArg = spec.dtype
        index = spec.components[0]
        texels = NdarrayRef(index, self.ctx.arg_specs[index].name, T.f32, info.num_dims + 1)
        self.frame.scope.define(name, Static(TextureRef(name, texels, info.num_dims, info.fmt, info.access)))

    def texture_attribute(self, texture: TextureRef | Texture, attr: str) -> Any:
        if isinstance(texture, Texture):
            if attr in HOST_CONSTANTS:           # a captured texture's shape and format are compile-time values
                return getattr(texture, attr)
            raise closure_texture_error(texture)
        if attr in SAMPLED_METHODS or attr in STORAGE_METHODS:
            return TextureMethod(texture, attr)
        if attr == "shape":
            return tuple(self.texture_extent(texture, axis) for axis in range(texture.num_dims))
        raise CompileError(f"texture '{texture.name}' has no attribute '{attr}' (textures have sample_lod, fetch, "
                           "load, store and shape)")

    def texture_loop_dims(self, texture: TextureRef) -> list[tuple[Any, Any]]:
        """`for i, j in tex`: one loop index per texture axis."""
        return [(0, self.texture_extent(texture, axis)) for axis in range(texture.num_dims)]

    def texture_extent(self, texture: TextureRef, axis: int) -> ir.Stmt:
        slot = self.ctx.ndarray_slot(texture.texels)
        return self.b.insert(ir.ShapeOf(container=slot, axis=axis, dtype=T.i32))

    # ---- calls ---------------------------------------------------------------------------------------------
    def call_texture_method(self, method: TextureMethod, args: list[Any], kwargs: dict[str, Any]) -> Any:
        texture, name = method.texture, method.name
        self.check_texture_access(texture, name)
        params = {"sample_lod": ("uv", "lod"), "fetch": ("index", "lod"), "load": ("index",),
                  "store": ("index", "value")}[name]
        values = dict(zip(params, args))
        if len(args) > len(params):
            raise CompileError(f"{texture.name}.{name}() takes {len(params)} arguments ({', '.join(params)}), got "
                               f"{len(args)}")
        for key, value in kwargs.items():
            if key not in params or key in values:
                raise CompileError(f"{texture.name}.{name}() got an unexpected argument '{key}'")
            values[key] = value
        required = [p for p in params if p != "lod"]
        missing = [p for p in required if p not in values]
        if missing:
            raise CompileError(f"{texture.name}.{name}() needs {', '.join(missing)}: "
                               f"{texture.name}.{name}({', '.join(params)})")
        if "lod" in values:
            self.as_scalar(values["lod"])          # one level of detail: evaluated, selects nothing
        if name == "sample_lod":
            return self.texture_sample(texture, values["uv"])
        if name == "store":
            self.texture_store(texture, values["index"], values["value"])
            return None
        return self.texture_read(texture, values["index"], name)

    def check_texture_access(self, texture: TextureRef, name: str) -> None:
        dims = texture.num_dims
        if texture.access is TextureAccess.SAMPLED and name in STORAGE_METHODS:
            raise CompileError(f"texture '{texture.name}' is read-only (annotated wk.types.texture(...)), it has "
                               f"no {name}(); annotate it wk.types.rw_texture(num_dimensions={dims}, "
                               f"fmt=wk.Format.{texture.fmt.name}) to {name} texels")
        if texture.access is TextureAccess.STORAGE and name in SAMPLED_METHODS:
            raise CompileError(f"texture '{texture.name}' is a storage texture (annotated wk.types.rw_texture(...))"
                               f", it has no {name}(); use {texture.name}.load(ij), or annotate it "
                               f"wk.types.texture(num_dimensions={dims}) to sample it")

    def texture_coordinates(self, texture: TextureRef, value: Any, what: str, method: str) -> list[ir.Stmt]:
        """The components of a coordinate argument: a vector of num_dims (a scalar for 1-D textures)."""
        value = self.as_value(value)
        elements = value.elements if isinstance(value, VectorValue) and not value.is_matrix else [value]
        if (isinstance(value, VectorValue) and value.is_matrix) or len(elements) != texture.num_dims or (
                texture.num_dims > 1 and not isinstance(value, VectorValue)):
            raise CompileError(f"texture '{texture.name}' has {texture.num_dims} dimension(s): {method}() takes "
                               f"{what} of {texture.num_dims} component(s), got {describe(value)}")
        return elements

    def texture_indices(self, texture: TextureRef, value: Any, method: str) -> list[ir.Stmt]:
        elements = self.texture_coordinates(texture, value, "a texel index", method)
        for element in elements:
            if not element.dtype.is_int:
                raise CompileError(f"{texture.name}.{method}() takes integer texel indices, got "
                                   f"{describe(element)}; use wk.cast(ij, wk.i32)")
        return [self.b.cast(element, T.i32) for element in elements]

    # ---- reads -----------------------------------------------------------------------------------------------
    def texel(self, texture: TextureRef, indices: list[ir.Stmt]) -> list[ir.Stmt]:
        """The stored channels of the texel at in-range `indices`."""
        slot = self.ctx.ndarray_slot(texture.texels)
        return [self.b.global_load(self.b.global_ptr(slot, indices + [self.b.const(channel, T.i32)]))
                for channel in range(texture.channels)]

    def as_rgba(self, channels: list[ir.Stmt]) -> VectorValue:
        padding = [self.b.const(value, T.f32) for value in MISSING_CHANNELS[len(channels):]]
        return VectorValue(list(channels) + padding, 4)

    def in_bounds(self, texture: TextureRef, indices: list[ir.Stmt]) -> tuple[ir.Stmt, list[ir.Stmt]]:
        """Whether `indices` lie inside the texture, and the indices clamped to it (always safe to address)."""
        b = self.b
        zero = b.const(0, T.i32)
        inside = b.const(True, T.u1)
        clamped = []
        for axis, index in enumerate(indices):
            extent = self.texture_extent(texture, axis)
            above = b.binary(BinaryOpKind.CMP_GE, index, zero)
            below = b.binary(BinaryOpKind.CMP_LT, index, extent)
            inside = b.binary(BinaryOpKind.BIT_AND, inside, b.binary(BinaryOpKind.BIT_AND, above, below))
            last = b.binary(BinaryOpKind.SUB, extent, b.const(1, T.i32))
            clamped.append(b.binary(BinaryOpKind.MIN, b.binary(BinaryOpKind.MAX, index, zero), last))
        return inside, clamped

    def texture_read(self, texture: TextureRef, index: Any, method: str) -> VectorValue:
        """fetch / load: the texel at integer `index` (zeros outside the texture)."""
        indices = self.texture_indices(texture, index, method)
        inside, clamped = self.in_bounds(texture, indices)
        zero = self.b.const(0.0, T.f32)
        channels = [self.b.select(inside, value, zero) for value in self.texel(texture, clamped)]
        return self.as_rgba(channels)

    def texture_sample(self, texture: TextureRef, uv: Any) -> VectorValue:
        """Bilinear (trilinear in 3-D, linear in 1-D) filtering at normalised `uv`, repeat addressing."""
        b = self.b
        coords = [self.b.cast(c, T.f32) for c in self.texture_coordinates(texture, uv, "uv", "sample_lod")]
        one_f = b.const(1.0, T.f32)
        taps: list[tuple[tuple[ir.Stmt, ir.Stmt], tuple[ir.Stmt, ir.Stmt]]] = []   # per axis: (i0, i1), (w0, w1)
        for axis, coord in enumerate(coords):
            extent = self.texture_extent(texture, axis)
            position = b.sub(b.mul(coord, b.cast(extent, T.f32)), b.const(0.5, T.f32))
            lower = b.unary(UnaryOpKind.FLOOR, position)
            weight = b.sub(position, lower)
            first = b.cast(lower, T.i32)
            second = b.add(first, b.const(1, T.i32))
            wrap = (arith.binary(b, BinaryOpKind.MOD, first, extent), arith.binary(b, BinaryOpKind.MOD, second, extent))
            taps.append((wrap, (b.sub(one_f, weight), weight)))
        total = [b.const(0.0, T.f32) for _ in range(texture.channels)]
        for corner in itertools.product((0, 1), repeat=texture.num_dims):
            indices = [taps[axis][0][side] for axis, side in enumerate(corner)]
            weight = taps[0][1][corner[0]]
            for axis in range(1, texture.num_dims):
                weight = b.mul(weight, taps[axis][1][corner[axis]])
            total = [b.add(acc, b.mul(weight, value)) for acc, value in zip(total, self.texel(texture, indices))]
        return self.as_rgba(total)

    # ---- stores ----------------------------------------------------------------------------------------------
    def texture_store(self, texture: TextureRef, index: Any, value: Any) -> None:
        indices = self.texture_indices(texture, index, "store")
        value = self.as_value(value)
        elements = value.elements if isinstance(value, VectorValue) and not value.is_matrix else [value]
        if (isinstance(value, VectorValue) and value.is_matrix) or len(elements) < texture.channels:
            raise CompileError(f"{texture.name}.store(ij, value) takes a vector of at least {texture.channels} "
                               f"component(s) (wk.Format.{texture.fmt.name} has {texture.channels} channel(s)), "
                               f"got {describe(value)}")
        channels = [self.texel_value(texture.fmt, self.b.cast(e, T.f32)) for e in elements[:texture.channels]]
        inside, _ = self.in_bounds(texture, indices)
        slot = self.ctx.ndarray_slot(texture.texels)
        branch = self.b.if_(inside)
        with self.b.at(branch.then_block):
            for channel, element in enumerate(channels):
                self.b.global_store(self.b.global_ptr(slot, indices + [self.b.const(channel, T.i32)]), element)

    def texel_value(self, fmt: Format, value: ir.Stmt) -> ir.Stmt:
        """What a texel of format `fmt` keeps of the f32 `value` (lang/texture.py's quantise, on the device)."""
        b = self.b
        info = FORMATS[fmt]
        value_range = info.value_range
        if info.encoding is Encoding.HALF:
            return self.half_rounded(value)
        if value_range is None:
            return value
        if info.encoding in (Encoding.UINT, Encoding.SINT):
            negative = b.binary(BinaryOpKind.CMP_LT, value, b.const(0.0, T.f32))
            value = b.select(negative, b.unary(UnaryOpKind.CEIL, value), b.unary(UnaryOpKind.FLOOR, value))
        low, high = (b.const(bound, T.f32) for bound in value_range)
        value = b.binary(BinaryOpKind.MIN, b.binary(BinaryOpKind.MAX, value, low), high)
        if info.encoding is Encoding.UNORM:
            scale = b.const(float(2 ** info.bits - 1), T.f32)
            rounded = b.unary(UnaryOpKind.FLOOR, b.add(b.mul(value, scale), b.const(0.5, T.f32)))
            value = b.div(rounded, scale)
        return value

    def half_rounded(self, value: ir.Stmt) -> ir.Stmt:
        """The f16 nearest to an f32 (ties to even; past 65504 an infinity), in f32 arithmetic: not every device
        has f16. Dividing by the f16 spacing at the value (2^(e-11) for value = m * 2^e, 2^-24 below the
        normal range; a power of two, so exact) leaves an integer to round."""
        b = self.b
        _, exponent = arith.frexp(b, value)
        spacing_exponent = b.binary(BinaryOpKind.MAX, b.sub(exponent, b.const(11, T.i32)), b.const(-24, T.i32))
        biased = b.cast(b.add(spacing_exponent, b.const(127, T.i32)), T.u32)
        spacing = b.bitcast(b.binary(BinaryOpKind.SHL, biased, b.const(23, T.u32)), T.f32)
        scaled = b.div(value, spacing)
        nearest = b.unary(UnaryOpKind.FLOOR, b.add(scaled, b.const(0.5, T.f32)))
        tie = b.binary(BinaryOpKind.CMP_EQ, b.sub(nearest, scaled), b.const(0.5, T.f32))
        half_of_it = b.unary(UnaryOpKind.FLOOR, b.mul(nearest, b.const(0.5, T.f32)))
        odd = b.binary(BinaryOpKind.CMP_NE, b.mul(half_of_it, b.const(2.0, T.f32)), nearest)
        nearest = b.select(b.binary(BinaryOpKind.BIT_AND, tie, odd), b.sub(nearest, b.const(1.0, T.f32)), nearest)
        rounded = b.mul(nearest, spacing)
        infinity = b.bitcast(b.const(0x7F800000, T.u32), T.f32)
        signed_infinity = b.select(b.binary(BinaryOpKind.CMP_LT, rounded, b.const(0.0, T.f32)), b.neg(infinity),
                                   infinity)
        too_large = b.binary(BinaryOpKind.CMP_GT, b.unary(UnaryOpKind.ABS, rounded), b.const(65504.0, T.f32))
        return b.select(too_large, signed_infinity, rounded)
