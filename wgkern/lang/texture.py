"""Taichi's textures (`wk.Texture`, `wk.Format`, `wk.types.texture` / `wk.types.rw_texture`), emulated on an
ndarray: a texture's texels live in one f32 `wk.ndarray` of shape (*shape, channels), so every backend runs them.

Owns the format table (channel count and how a format rounds what is written to it), the host side of a texture
(from_field / from_ndarray / from_image / to_image) and the argument annotations. The kernel side (sample_lod,
fetch, load, store lowered to loads, stores and arithmetic) lives in frontend/texture.py; lang/arguments.py
passes a texture argument's texel ndarray as an ndarray argument."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from wgkern.errors import WkError
from wgkern.lang import types as T


class Format(enum.Enum):
    """`wk.Format` (Taichi's `ti.Format`): a texture's texel format."""
    r8 = "r8"
    r8u = "r8u"
    r8i = "r8i"
    rg8 = "rg8"
    rg8u = "rg8u"
    rg8i = "rg8i"
    rgba8 = "rgba8"
    rgba8u = "rgba8u"
    rgba8i = "rgba8i"
    r16 = "r16"
    r16u = "r16u"
    r16i = "r16i"
    r16f = "r16f"
    rg16 = "rg16"
    rg16u = "rg16u"
    rg16i = "rg16i"
    rg16f = "rg16f"
    rgb16 = "rgb16"
    rgb16u = "rgb16u"
    rgb16i = "rgb16i"
    rgb16f = "rgb16f"
    rgba16 = "rgba16"
    rgba16u = "rgba16u"
    rgba16i = "rgba16i"
    rgba16f = "rgba16f"
    r32u = "r32u"
    r32i = "r32i"
    r32f = "r32f"
    rg32u = "rg32u"
    rg32i = "rg32i"
    rg32f = "rg32f"
    rgb32u = "rgb32u"
    rgb32i = "rgb32i"
    rgb32f = "rgb32f"
    rgba32u = "rgba32u"
    rgba32i = "rgba32i"
    rgba32f = "rgba32f"


class Encoding(enum.Enum):
    """How a format keeps a written value: the rounding a store applies before the f32 is kept."""
    FLOAT = "float"      # 32-bit float: kept as written
    HALF = "half"        # 16-bit float: rounded to the nearest f16 (ties to even; past 65504 an infinity)
    UNORM = "unorm"      # normalised unsigned: clamped to [0, 1], rounded to a multiple of 1 / (2^bits - 1)
    UINT = "uint"        # unsigned integer: truncated toward zero, clamped to [0, 2^bits - 1]
    SINT = "sint"        # signed integer: truncated toward zero, clamped to [-2^(bits-1), 2^(bits-1) - 1]


@dataclass(frozen=True)
class FormatInfo:
    """One format's facts: Taichi's channel dtype, its channel count and how it keeps values."""
    dtype: T.DataType
    channels: int
    encoding: Encoding
    bits: int

    @property
    def value_range(self) -> tuple[float, float] | None:
        """The closed range a stored channel is clamped to (None: not clamped)."""
        if self.encoding is Encoding.UNORM:
            return (0.0, 1.0)
        if self.encoding is Encoding.UINT:
            return (0.0, float(2 ** self.bits - 1))
        if self.encoding is Encoding.SINT:
            return (float(-2 ** (self.bits - 1)), float(2 ** (self.bits - 1) - 1))
        return None


def _format_table() -> dict[Format, FormatInfo]:
    """Built from the names: channels from the leading letters, bits from the number, the suffix says the kind
    (none: unorm for 8/16 bits, float for 32; u: unsigned; i: signed; f: float), as Taichi's FORMAT2TY_CH."""
    table: dict[Format, FormatInfo] = {}
    unsigned = {8: T.u8, 16: T.u16, 32: T.u32}
    signed = {8: T.i8, 16: T.i16, 32: T.i32}
    for fmt in Format:
        name = fmt.value
        letters = name.rstrip("0123456789uif")
        rest = name[len(letters):]
        suffix = rest[-1] if rest[-1] in "uif" else ""
        bits = int(rest.rstrip("uif"))
        if suffix == "f":
            info = FormatInfo(T.f32 if bits == 32 else T.f16, len(letters),
                              Encoding.FLOAT if bits == 32 else Encoding.HALF, bits)
        elif suffix == "i":
            info = FormatInfo(signed[bits], len(letters), Encoding.SINT, bits)
        elif suffix == "u":
            info = FormatInfo(unsigned[bits], len(letters), Encoding.UINT, bits)
        else:
            info = FormatInfo(unsigned[bits], len(letters), Encoding.UNORM, bits)
        table[fmt] = info
    return table


FORMATS: dict[Format, FormatInfo] = _format_table()
# (channel dtype, channel count) -> format: Taichi's older `Texture(dtype, num_channels, shape)` spelling
_BY_DTYPE_CHANNELS: dict[tuple[T.DataType, int], Format] = {}
for _fmt, _info in FORMATS.items():
    _BY_DTYPE_CHANNELS.setdefault((_info.dtype, _info.channels), _fmt)
_BY_DTYPE_CHANNELS[(T.f32, 1)] = Format.r32f          # f32 channels are 32-bit float formats, never unorm
_BY_DTYPE_CHANNELS[(T.u8, 4)] = Format.rgba8
_BY_DTYPE_CHANNELS[(T.u8, 1)] = Format.r8
_BY_DTYPE_CHANNELS[(T.u8, 2)] = Format.rg8


def format_of(dtype: Any, num_channels: int) -> Format:
    """The format Taichi names by (channel dtype, channel count)."""
    key = (T.to_dtype(dtype), int(num_channels))
    if key not in _BY_DTYPE_CHANNELS:
        raise WkError(f"no texture format has {num_channels} channel(s) of {key[0]!r}")
    return _BY_DTYPE_CHANNELS[key]


def quantise(fmt: Format, values: np.ndarray) -> np.ndarray:
    """What a texture of format `fmt` keeps when `values` (f32 channel values) are written to it."""
    info = FORMATS[fmt]
    data = np.asarray(values, dtype=np.float32)
    if info.encoding is Encoding.HALF:
        with np.errstate(over="ignore"):          # past 65504: an infinity, as the format keeps it
            return data.astype(np.float16).astype(np.float32)
    if info.encoding is Encoding.UNORM:
        scale = np.float32(2 ** info.bits - 1)
        return (np.floor(np.clip(data, 0.0, 1.0) * scale + 0.5) / scale).astype(np.float32)
    if info.encoding in (Encoding.UINT, Encoding.SINT):
        low, high = info.value_range
        return np.clip(np.trunc(data), low, high).astype(np.float32)
    return data


class Texture:
    """`wk.Texture(fmt, shape)` (Taichi's `ti.Texture`; the older `Texture(dtype, num_channels, shape)` works
    too): a 1-, 2- or 3-D image whose texels kernels read through `wk.types.texture(...)` parameters
    (`sample_lod`, `fetch`) and write through `wk.types.rw_texture(...)` ones (`load`, `store`)."""

    def __init__(self, fmt: Any = None, arr_shape: Any = None, *args: Any, dtype: Any = None,
                 num_channels: int | None = None, **kwargs: Any):
        if "shape" in kwargs:
            arr_shape = kwargs.pop("shape")
        if kwargs:
            raise TypeError(f"wk.Texture() got unexpected keyword argument(s) {', '.join(kwargs)}")
        if not isinstance(fmt, Format) and fmt is not None and dtype is None:
            # Texture(dtype, num_channels, shape)
            if args:
                dtype, num_channels, arr_shape = fmt, arr_shape, args[0]
            else:
                raise TypeError("wk.Texture(fmt, shape) takes a wk.Format (or Texture(dtype, num_channels, shape))")
            fmt = None
        elif args:
            raise TypeError("wk.Texture(fmt, shape) takes two arguments")
        if fmt is None:
            if dtype is None or num_channels is None:
                raise TypeError("wk.Texture() needs a format: Texture(wk.Format.rgba8, shape)")
            fmt = format_of(dtype, num_channels)
        if not isinstance(fmt, Format):
            raise TypeError(f"wk.Texture(): the format must be a wk.Format, got {fmt!r}")
        shape = (int(arr_shape),) if isinstance(arr_shape, (int, np.integer)) else tuple(int(n) for n in arr_shape)
        if not 1 <= len(shape) <= 3 or any(n <= 0 for n in shape):
            raise WkError(f"a texture has 1, 2 or 3 dimensions of positive size, got shape {shape}")
        info = FORMATS[fmt]
        self.fmt = fmt
        self.dtype = info.dtype
        self.num_channels = info.channels
        self.num_dims = len(shape)
        self.shape = shape
        from wgkern.lang.fields import Ndarray
        self._texels = Ndarray(T.f32, shape + (info.channels,), name="texture texels")

    def __repr__(self) -> str:
        return f"<wk.Texture {self.fmt.name} {'x'.join(map(str, self.shape))}>"

    # ---- host transfers -----------------------------------------------------------------------------------
    def to_numpy(self) -> np.ndarray:
        """The texels as float32 of shape (*shape, num_channels) (unorm formats in [0, 1])."""
        return self._texels.to_numpy()

    def from_numpy(self, array: Any) -> None:
        """Write texels from an array of shape `shape` (one channel) or (*shape, c): its first channels are
        written (channels it lacks become 0), rounded as the format keeps them."""
        data = np.asarray(array, dtype=np.float32)
        if data.shape == self.shape:
            data = data[..., None]
        if data.shape[:-1] != self.shape or data.ndim != self.num_dims + 1:
            raise WkError(f"texture of shape {self.shape} cannot be written from an array of shape {data.shape}")
        texels = np.zeros(self.shape + (self.num_channels,), np.float32)
        count = min(self.num_channels, data.shape[-1])
        texels[..., :count] = data[..., :count]
        self._texels.from_numpy(quantise(self.fmt, texels))

    def from_field(self, field: Any) -> None:
        """Copy a field of the texture's shape in (a scalar field fills channel 0; a vector field its first
        channels)."""
        if not getattr(field, "is_field", False):
            raise WkError(f"Texture.from_field() takes a field, got {type(field).__name__}")
        self._from_container(field, "field")

    def from_ndarray(self, ndarray: Any) -> None:
        """Copy a wk.ndarray (or numpy array) of the texture's shape in, as from_field does."""
        if isinstance(ndarray, np.ndarray):
            return self.from_numpy(ndarray)
        if getattr(ndarray, "is_field", True) or not hasattr(ndarray, "to_numpy"):
            raise WkError(f"Texture.from_ndarray() takes a wk.ndarray, got {type(ndarray).__name__}")
        self._from_container(ndarray, "ndarray")

    def _from_container(self, container: Any, kind: str) -> None:
        if tuple(container.shape) != self.shape or len(container.element_shape) > 1:
            raise WkError(f"Texture.from_{kind}(): the texture has shape {self.shape}, the {kind} "
                          f"'{container.name}' has shape {tuple(container.shape)}"
                          + (" with matrix elements" if len(container.element_shape) > 1 else ""))
        self.from_numpy(container.to_numpy())

    def from_image(self, image: Any) -> None:
        """Load a picture (a PIL image, or an (height, width, 3 or 4) uint8 array) into a 2-D texture of its size
        (width, height), as Taichi does: its RGB divided by 255 fill the first channels and alpha is 0. The
        orientation is Taichi's too (it rotates the picture a quarter turn counter-clockwise): texel (i, j) is the
        pixel in column width-1-i counted from the left and row j counted from the top."""
        self._check_image("from_image")
        if hasattr(image, "convert") and hasattr(image, "size"):
            image = image.convert("RGB")
        rows = np.asarray(image)
        if rows.ndim != 3 or rows.shape[2] not in (3, 4):
            raise WkError(f"Texture.from_image() takes an RGB picture, got an array of shape {rows.shape}")
        if (rows.shape[1], rows.shape[0]) != self.shape:
            raise WkError(f"Texture.from_image(): the picture is {rows.shape[1]}x{rows.shape[0]}, the texture "
                          f"{self.shape[0]}x{self.shape[1]}")
        texels = np.zeros(self.shape + (4,), np.float32)
        texels[..., :3] = rows[:, :, :3].transpose(1, 0, 2)[::-1].astype(np.float32) / 255.0
        self.from_numpy(texels)

    def to_image(self) -> Any:
        """The texture as a PIL RGB image (Taichi's to_image; needs Pillow): each channel times 255, rounded; the
        inverse of from_image."""
        self._check_image("to_image")
        try:
            import PIL.Image
        except ImportError:
            raise WkError("Texture.to_image() needs Pillow (pip install pillow); Texture.to_numpy() gives the "
                          "texels as an array") from None
        texels = self.to_numpy()
        rgb = np.zeros(self.shape + (3,), np.float32)
        count = min(3, self.num_channels)
        rgb[..., :count] = texels[..., :count]
        pixels = np.clip(np.floor(rgb * 255.0 + 0.5), 0, 255).astype(np.uint8)
        return PIL.Image.fromarray(np.ascontiguousarray(pixels[::-1].transpose(1, 0, 2)), "RGB")

    def _check_image(self, method: str) -> None:
        if self.num_dims != 2:
            raise WkError(f"Texture.{method}() needs a 2-D texture; this one has {self.num_dims} dimension(s)")


class TextureType:
    """`wk.types.texture(num_dimensions=2)`: a sampled (read-only) texture parameter: `sample_lod`, `fetch`."""

    def __init__(self, num_dimensions: int = 2):
        self.num_dimensions = _checked_dims(num_dimensions)

    def __repr__(self) -> str:
        return f"wk.types.texture(num_dimensions={self.num_dimensions})"


class RWTextureType:
    """`wk.types.rw_texture(num_dimensions=2, fmt=wk.Format.r32f, lod=0)`: a storage texture parameter:
    `load`, `store`. The older `num_channels=` / `channel_format=` spelling names the format too."""

    def __init__(self, num_dimensions: int = 2, num_channels: int | None = None, channel_format: Any = None,
                 lod: int = 0, fmt: Format | None = None):
        self.num_dimensions = _checked_dims(num_dimensions)
        if fmt is None:
            if num_channels is None or channel_format is None:
                raise WkError("wk.types.rw_texture() needs the texture's format: fmt=wk.Format...")
            fmt = format_of(channel_format, num_channels)
        if not isinstance(fmt, Format):
            raise WkError(f"wk.types.rw_texture(): fmt must be a wk.Format, got {fmt!r}")
        self.fmt = fmt
        self.num_channels = FORMATS[fmt].channels
        self.channel_format = FORMATS[fmt].dtype
        self.lod = int(lod)
        if self.lod != 0:
            raise WkError("wk.types.rw_texture(): textures have one level of detail here; use lod=0")

    def __repr__(self) -> str:
        return f"wk.types.rw_texture(num_dimensions={self.num_dimensions}, fmt=wk.Format.{self.fmt.name})"


class TextureAccess(enum.Enum):
    """What kernel code may do with a texture parameter: its annotation's kind (ANY: unannotated)."""
    SAMPLED = "texture"          # sample_lod, fetch
    STORAGE = "rw_texture"       # load, store
    ANY = "any"


@dataclass(frozen=True)
class TextureArg:
    """A texture argument's compile-time part (the kernel is compiled once per distinct one): dimensions,
    format and access. Its texels are passed as an ndarray argument, so textures of other sizes share it."""
    num_dims: int
    fmt: Format
    access: TextureAccess

    @property
    def name(self) -> str:
        """How IR dumps spell the argument (`rgba8 2-D texture`)."""
        return f"{self.fmt.name} {self.num_dims}-D {self.access.value}"


def texture_argument(where: str, annotation: Any, value: Any) -> TextureArg:
    """Check a kernel argument given to a texture parameter (ArgumentError naming it, `where`)."""
    from wgkern.errors import ArgumentError
    if annotation is TextureType or annotation is RWTextureType:
        raise ArgumentError(f"{where}: annotate texture parameters with a call, "
                            f"wk.types.{'texture' if annotation is TextureType else 'rw_texture'}(num_dimensions=...)")
    if not isinstance(value, Texture):
        raise ArgumentError(f"{where} expects a wk.Texture, got {type(value).__name__}")
    if annotation is None:
        return TextureArg(value.num_dims, value.fmt, TextureAccess.ANY)
    if annotation.num_dimensions != value.num_dims:
        raise ArgumentError(f"{where} is annotated with num_dimensions={annotation.num_dimensions}, got a "
                            f"{value.num_dims}-D texture of shape {value.shape}")
    if isinstance(annotation, RWTextureType):
        if annotation.fmt is not value.fmt:
            raise ArgumentError(f"{where} is annotated with fmt=wk.Format.{annotation.fmt.name}, got a texture of "
                                f"format wk.Format.{value.fmt.name}")
        return TextureArg(value.num_dims, value.fmt, TextureAccess.STORAGE)
    return TextureArg(value.num_dims, value.fmt, TextureAccess.SAMPLED)


def _checked_dims(num_dimensions: Any) -> int:
    if not isinstance(num_dimensions, (int, np.integer)) or not 1 <= int(num_dimensions) <= 3:
        raise WkError(f"a texture has 1, 2 or 3 dimensions, got num_dimensions={num_dimensions!r}")
    return int(num_dimensions)


texture = TextureType
rw_texture = RWTextureType
