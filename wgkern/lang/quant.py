"""Taichi's quantized types (`wk.types.quant.int / fixed / float`), `wk.BitpackedFields` and quant arrays,
emulated at full width: a quantized field is an ordinary field of the type's compute dtype (i32 / u32 / f32 by
default), and every store gives it the value the quantized type would hold (wrapped, rounded to the fixed-point
grid, or to the float's mantissa and exponent range), so programs compute what Taichi computes; no memory is
saved. Owns the types, the bit-budget checks and the host-side (numpy) rounding (fields placed bit-packed,
`wk.BitpackedFields` and `snode.bit_struct`, are lang/snode.py); the same rounding applied to
kernel stores lives in frontend/quant.py."""
from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np

from wgkern.errors import WkError
from wgkern.lang import types as T

# (unsigned bits type, mantissa bits, exponent bias) of each float width the compute dtype may have
FLOAT_LAYOUT = {32: (np.uint32, 23, 127), 64: (np.uint64, 52, 1023)}


@dataclass(frozen=True)
class QuantInt:
    """`quant.int(bits, signed)`: two's complement integers of `bits` bits; stores wrap."""
    bits: int
    signed: bool
    compute: T.DataType

    @property
    def name(self) -> str:
        return f"q{'i' if self.signed else 'u'}{self.bits}"


@dataclass(frozen=True)
class QuantFixed:
    """`quant.fixed(bits, signed, max_value | scale)`: integers of `bits` bits times `scale`; a store rounds to
    the nearest step (halves away from zero) and wraps the integer as quant.int does."""
    bits: int
    signed: bool
    compute: T.DataType
    scale: float

    @property
    def name(self) -> str:
        return f"qfx{self.bits}"


@dataclass(frozen=True)
class QuantFloat:
    """`quant.float(exp, frac, signed)`: `exp` exponent bits (bias 2^(exp-1) - 1, no subnormals: smaller
    magnitudes store as 0, larger exponents wrap) and `frac` fraction bits, one of which is the sign when
    signed; a store rounds the mantissa to the nearest (halves away from zero)."""
    exp: int
    frac: int
    signed: bool
    compute: T.DataType

    @property
    def bits(self) -> int:
        return self.exp + self.frac

    @property
    def mantissa_bits(self) -> int:
        return self.frac - 1 if self.signed else self.frac

    @property
    def bias(self) -> int:
        return 2 ** (self.exp - 1) - 1

    @property
    def name(self) -> str:
        return f"qfl(e{self.exp}, f{self.frac})"


QuantType = (QuantInt, QuantFixed, QuantFloat)


def _check_bits(kind: str, bits: Any, most: int = 32) -> int:
    if not isinstance(bits, (int, np.integer)) or isinstance(bits, bool) or not 1 <= bits <= most:
        raise WkError(f"quant.{kind}: bits must be an int in 1..{most}, got {bits!r}")
    return builtins.int(bits)


def _compute(compute: Any, default: T.DataType, want_float: bool) -> T.DataType:
    dtype = default if compute is None else T.to_dtype(compute)
    if dtype.is_float != want_float or dtype.is_bool:
        raise WkError(f"compute={dtype!r}: a quantized {'float' if want_float else 'integer'} type computes in "
                      f"{'a float' if want_float else 'an integer'} dtype")
    if want_float and dtype.bits not in FLOAT_LAYOUT:
        raise WkError(f"compute={dtype!r}: quantized real types compute in f32 or f64")
    return dtype


class quant:  # noqa: N801 - namespace mirroring `ti.types.quant`
    """`wk.types.quant.int / fixed / float` (Taichi's names and defaults)."""

    @staticmethod
    def int(bits: int, signed: bool = True, compute: Any = None) -> QuantInt:  # noqa: A003 - Taichi's name
        bits = _check_bits("int", bits, 64)
        default = T.DEFAULT_INT if signed else (T.u64 if T.DEFAULT_INT.bits == 64 else T.u32)
        dtype = _compute(compute, default, want_float=False)
        if bits > dtype.bits:
            raise WkError(f"quant.int({bits}) does not fit its compute type {dtype!r}")
        return QuantInt(bits, bool(signed), dtype)

    @staticmethod
    def fixed(bits: int, signed: bool = True, max_value: float = 1.0, compute: Any = None,
              scale: float | None = None) -> QuantFixed:
        bits = _check_bits("fixed", bits)
        if scale is None:
            scale = max_value / 2 ** (bits - 1) if signed else max_value / 2 ** bits
        if not scale > 0:
            raise WkError(f"quant.fixed: the scale must be positive, got {scale!r}")
        return QuantFixed(bits, bool(signed), _compute(compute, T.DEFAULT_FLOAT, want_float=True), float(scale))

    @staticmethod
    def float(exp: int, frac: int, signed: bool = True, compute: Any = None) -> QuantFloat:  # noqa: A003
        exp = _check_bits("float exponent", exp, 8)
        frac = _check_bits("float fraction", frac)
        dtype = _compute(compute, T.DEFAULT_FLOAT, want_float=True)
        if (frac - 1 if signed else frac) > FLOAT_LAYOUT[dtype.bits][1] or (signed and frac < 2):
            raise WkError(f"quant.float(exp={exp}, frac={frac}): the fraction does not fit {dtype!r}")
        return QuantFloat(exp, frac, bool(signed), dtype)


# ---- host-side rounding (from_numpy, fill, x[i] = v); frontend/quant.py does the same in kernels ------------

def _wrap(values: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    """int64 values wrapped to `bits` bits (sign-extended when signed)."""
    mask = np.int64((1 << bits) - 1) if bits < 64 else np.int64(-1)
    kept = values & mask
    if signed and bits < 64:
        sign = np.int64(1 << (bits - 1))
        kept = (kept ^ sign) - sign
    return kept


def host_quantize(qtype: Any, values: Any) -> np.ndarray:
    """The values `qtype` stores for `values`, in its compute dtype."""
    target = qtype.compute.np_dtype
    data = np.asarray(values)
    if isinstance(qtype, QuantInt):
        if data.dtype.kind == "f":
            data = np.trunc(data)
        wrapped = _wrap(data.astype(np.int64), qtype.bits, qtype.signed)
        return wrapped.astype(target)
    data = data.astype(target)
    if isinstance(qtype, QuantFixed):
        steps = data * target.type(1.0 / qtype.scale)
        with np.errstate(invalid="ignore"):
            rounded = np.trunc(steps + np.copysign(target.type(0.5), steps)).astype(np.int64)
        if qtype.signed:
            rounded = _wrap(rounded, qtype.bits, True)
        else:   # a negative step count stores as all ones (Taichi's CPU backend)
            rounded = np.where(rounded < 0, (1 << qtype.bits) - 1, _wrap(rounded, qtype.bits, False))
        return (rounded.astype(target) * target.type(qtype.scale)).astype(target)
    return _host_round_float(qtype, data)


def _host_round_float(qtype: QuantFloat, data: np.ndarray) -> np.ndarray:
    bits_type, mantissa, bias = FLOAT_LAYOUT[qtype.compute.bits]
    one = bits_type(1)
    dropped = mantissa - qtype.mantissa_bits
    magnitude = np.abs(data).view(bits_type)
    if dropped:
        magnitude = magnitude + (one << bits_type(dropped - 1))             # round halves away from zero
        magnitude = magnitude & ~((one << bits_type(dropped)) - one)
    exponent = (magnitude >> bits_type(mantissa)).astype(np.int64) - bias + qtype.bias
    fraction = magnitude & ((one << bits_type(mantissa)) - one)
    wrapped = exponent & ((1 << qtype.exp) - 1)
    zero = (exponent <= 0) | (wrapped == 0)
    rebuilt = ((wrapped - qtype.bias + bias).astype(bits_type) << bits_type(mantissa)) | fraction
    out = np.where(zero, bits_type(0), rebuilt).view(qtype.compute.np_dtype)
    if qtype.signed:
        out = np.where(np.signbit(data), -out, out)
    return out


def shared_exponent_of(qtype: QuantFloat, values: list[np.ndarray]) -> np.ndarray:
    """Per element, the exponent E of the largest magnitude among `values` (2^E <= |v| < 2^(E+1)), clamped to
    what the group's exponent bits can hold."""
    bits_type, mantissa, bias = FLOAT_LAYOUT[qtype.compute.bits]
    largest = np.max([(np.abs(v).view(bits_type) >> bits_type(mantissa)).astype(np.int64) for v in values],
                     axis=0)
    return np.clip(largest - bias, 1 - qtype.bias, 2 ** qtype.exp - 1 - qtype.bias)


def host_round_shared(qtype: QuantFloat, value: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """`value` as a signed integer of `mantissa_bits` bits times 2^(exponent + 1 - mantissa_bits)."""
    target = qtype.compute.np_dtype
    steps = np.ldexp(value.astype(np.float64), (qtype.mantissa_bits - 1 - exponent).astype(np.int64))
    rounded = np.trunc(steps + np.copysign(0.5, steps))
    most = 2 ** qtype.mantissa_bits - 1
    rounded = np.clip(rounded, -most if qtype.signed else 0, most)
    return np.ldexp(rounded, (exponent + 1 - qtype.mantissa_bits).astype(np.int64)).astype(target)


# ---- placement ---------------------------------------------------------------------------------------------

def quant_of(field: Any) -> Any:
    return getattr(field, "quant", None)


class SharedExponent:
    """The quant.float fields of one `place(..., shared_exponent=True)`: per element, one exponent for all."""

    def __init__(self, fields: list[Any]) -> None:
        self.fields = fields
        self.qtype: QuantFloat = fields[0].quant

    def members(self) -> list[tuple[Any, int]]:
        """(field, component) for every scalar member, in order."""
        out = []
        for field in self.fields:
            count = int(np.prod(field.element_shape)) if field.element_shape else 1
            out.extend((field, c) for c in range(count))
        return out

    def requantize_host(self) -> None:
        """Round every element of every member on the host (after a host write to one of them)."""
        arrays = {id(field): field._raw_numpy() for field in self.fields}
        values = []
        for field, component in self.members():
            data = arrays[id(field)]
            values.append(data.reshape(field.shape + (-1,))[..., component] if field.element_shape else data)
        exponent = shared_exponent_of(self.qtype, values)
        for field in self.fields:
            rounded = np.empty(field.full_shape, self.qtype.compute.np_dtype)
            flat = rounded.reshape(field.shape + (-1,)) if field.element_shape else rounded
            data = arrays[id(field)]
            source = data.reshape(field.shape + (-1,)) if field.element_shape else data
            if field.element_shape:
                for c in range(flat.shape[-1]):
                    flat[..., c] = host_round_shared(field.quant, source[..., c], exponent)
            else:
                rounded[...] = host_round_shared(field.quant, source, exponent)
            field._store_raw(rounded)


def check_quant_array(node: Any, field: Any) -> None:
    """A field placed under `quant_array(axes, n, max_num_bits)`: quantized, and n of it fit the bits."""
    count, max_num_bits = node.quant_array_bits
    qtype = quant_of(field)
    if qtype is None:
        raise WkError(f"quant_array nodes hold fields of wk.types.quant types; '{field.name}' is "
                      f"{field.dtype!r}")
    if count * qtype.bits > max_num_bits:
        raise WkError(f"quant_array overflows: {count} elements of {qtype.bits} bits need {count * qtype.bits} "
                      f"bits, more than max_num_bits={max_num_bits}")


def quant_of_dtype(dtype: Any) -> Any:
    """The quantized type `dtype` is, or None."""
    return dtype if isinstance(dtype, QuantType) else None


def compute_dtype(dtype: Any) -> Any:
    """The dtype a field of `dtype` is stored in: a quantized type's compute dtype, else `dtype` itself."""
    return dtype.compute if isinstance(dtype, QuantType) else dtype


def quant_vector_field(make: Any, dtype: Any, **options: Any) -> Any:
    """`wk.Vector.field(n, dtype=<quant type>)` / `wk.Matrix.field`: a vector field of the compute dtype whose
    components round as the quantized type (`make(dtype)` builds the field of the given scalar dtype)."""
    if options.get("needs_grad") or options.get("needs_dual"):
        raise TypeError("fields of quantized types have no gradients (needs_grad/needs_dual)")
    out = make(dtype.compute)
    out.grad = None
    out.dual = None
    out.quant = dtype
    return out
