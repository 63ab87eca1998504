"""Stores to fields of quantized types (lang/quant.py) in kernels: the value a store writes is rounded, in IR,
to what the quantized type holds (quant.int wraps, quant.fixed rounds to its grid and wraps, quant.float rounds
its mantissa and exponent; a shared-exponent group re-rounds every member of the element). Loads stay plain
loads, as the storage is the full-width compute dtype. The same rounding on the host is lang/quant.py's.

Atomics: on quant.int and quant.fixed (whose addend is first rounded to the grid, as Taichi adds the
integers), an atomic add or sub is followed by a second atomic add of what wrapping takes off, so concurrent
updates give the wrapped exact sum (an integer mul is followed by a compare-and-swap that wraps the product); on
quant.float, and a quant.fixed mul, they are a load, the op and a rounded store, as Taichi demotes them (not
atomic)."""
from __future__ import annotations

from typing import Any

from wgkern.errors import CompileError
from wgkern.frontend.values import GlobalRef, VectorValue
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.lang import quant as Q
from wgkern.lang import types as T

_BITS_TYPE = {32: (T.u32, T.i32), 64: (T.u64, T.i64)}
_SIGNED_OF = {T.u8: T.i8, T.u16: T.i16, T.u32: T.i32, T.u64: T.i64}
_RING_OPS = (AtomicOpKind.ADD, AtomicOpKind.SUB, AtomicOpKind.MUL)   # ops the bits' wraparound commutes with


class QuantMixin:
    """Kernel-builder methods for quantized fields (mixed into frontend/builder.py's FunctionBuilder)."""

    # ---- rounding one value ----------------------------------------------------------------------------
    def wrap_bits(self, value: ir.Stmt, bits: int, signed: bool) -> ir.Stmt:
        """An integer wrapped to `bits` bits (sign-extended when signed), in its own dtype."""
        b = self.b
        width = value.dtype.bits
        if bits >= width:
            return value
        if signed:
            work = value if value.dtype.is_signed else b.bitcast(value, _SIGNED_OF[value.dtype])
            shift = b.const(width - bits, work.dtype)
            wrapped = b.binary(BinaryOpKind.SHR, b.binary(BinaryOpKind.SHL, work, shift), shift)
            return wrapped if work is value else b.bitcast(wrapped, value.dtype)
        return b.binary(BinaryOpKind.BIT_AND, value, b.const((1 << bits) - 1, value.dtype))

    def quantize(self, qtype: Any, value: ir.Stmt, modular: bool = False) -> ir.Stmt:
        """What a field of `qtype` holds after storing `value` (in the compute dtype). `modular`: an unsigned
        fixed-point value below 0 wraps modulo its range (atomic arithmetic) instead of storing all ones."""
        value = self.b.cast(value, qtype.compute)
        if isinstance(qtype, Q.QuantInt):
            return self.wrap_bits(value, qtype.bits, qtype.signed)
        if isinstance(qtype, Q.QuantFixed):
            return self.quantize_fixed(qtype, value, modular)
        return self.quantize_float(qtype, value)

    def quantize_fixed(self, qtype: Q.QuantFixed, value: ir.Stmt, modular: bool) -> ir.Stmt:
        b = self.b
        compute = qtype.compute
        steps = b.unary(UnaryOpKind.ROUND, b.binary(BinaryOpKind.MUL, value, b.const(1.0 / qtype.scale, compute)))
        count = b.cast(steps, T.i64 if compute.bits == 64 else T.i32)
        if qtype.signed:
            kept = self.wrap_bits(count, qtype.bits, True)
        else:
            kept = self.wrap_bits(count, qtype.bits, False)
            if not modular:        # a negative step count stores as all ones (Taichi's CPU backend)
                negative = b.binary(BinaryOpKind.CMP_LT, count, b.const(0, count.dtype))
                kept = b.select(negative, b.const((1 << qtype.bits) - 1, count.dtype), kept)
            if qtype.bits == count.dtype.bits:       # all the bits: read them as unsigned
                kept = b.bitcast(kept, _BITS_TYPE[count.dtype.bits][0])
        return b.binary(BinaryOpKind.MUL, b.cast(kept, compute), b.const(qtype.scale, compute))

    def quantize_float(self, qtype: Q.QuantFloat, value: ir.Stmt) -> ir.Stmt:
        b = self.b
        compute = qtype.compute
        bits_type, int_type = _BITS_TYPE[compute.bits]
        _, mantissa, bias = Q.FLOAT_LAYOUT[compute.bits]
        sign_bit = 1 << (compute.bits - 1)
        raw = b.bitcast(value, bits_type)
        magnitude = b.binary(BinaryOpKind.BIT_AND, raw, b.const(sign_bit - 1, bits_type))
        dropped = mantissa - qtype.mantissa_bits
        if dropped:       # round halves away from zero; a carry moves into the exponent
            magnitude = b.binary(BinaryOpKind.ADD, magnitude, b.const(1 << (dropped - 1), bits_type))
            magnitude = b.binary(BinaryOpKind.BIT_AND, magnitude,
                                 b.const((sign_bit - 1) & ~((1 << dropped) - 1), bits_type))
        field = b.cast(b.binary(BinaryOpKind.SHR, magnitude, b.const(mantissa, bits_type)), int_type)
        exponent = b.binary(BinaryOpKind.ADD, field, b.const(qtype.bias - bias, int_type))
        wrapped = b.binary(BinaryOpKind.BIT_AND, exponent, b.const((1 << qtype.exp) - 1, int_type))
        zero = b.binary(BinaryOpKind.BIT_OR, b.binary(BinaryOpKind.CMP_LE, exponent, b.const(0, int_type)),
                        b.binary(BinaryOpKind.CMP_EQ, wrapped, b.const(0, int_type)))
        rebuilt_field = b.cast(b.binary(BinaryOpKind.ADD, wrapped, b.const(bias - qtype.bias, int_type)), bits_type)
        fraction = b.binary(BinaryOpKind.BIT_AND, magnitude, b.const((1 << mantissa) - 1, bits_type))
        rebuilt = b.binary(BinaryOpKind.BIT_OR, b.binary(BinaryOpKind.SHL, rebuilt_field,
                                                          b.const(mantissa, bits_type)), fraction)
        rebuilt = b.select(zero, b.const(0, bits_type), rebuilt)
        if qtype.signed:
            rebuilt = b.binary(BinaryOpKind.BIT_OR, rebuilt,
                               b.binary(BinaryOpKind.BIT_AND, raw, b.const(sign_bit, bits_type)))
        return b.bitcast(rebuilt, compute)

    # ---- shared exponents ------------------------------------------------------------------------------
    def power_of_two(self, exponent: ir.Stmt, compute: T.DataType) -> ir.Stmt:
        """2^exponent (an int in the normal range of `compute`) built from its bits."""
        b = self.b
        bits_type, int_type = _BITS_TYPE[compute.bits]
        _, mantissa, bias = Q.FLOAT_LAYOUT[compute.bits]
        field = b.cast(b.binary(BinaryOpKind.ADD, b.cast(exponent, int_type), b.const(bias, int_type)), bits_type)
        return b.bitcast(b.binary(BinaryOpKind.SHL, field, b.const(mantissa, bits_type)), compute)

    def exponent_of(self, value: ir.Stmt) -> ir.Stmt:
        """The unbiased exponent field of a float (i32; -bias for 0)."""
        b = self.b
        bits_type, _ = _BITS_TYPE[value.dtype.bits]
        _, mantissa, bias = Q.FLOAT_LAYOUT[value.dtype.bits]
        magnitude = b.binary(BinaryOpKind.BIT_AND, b.bitcast(value, bits_type),
                             b.const((1 << (value.dtype.bits - 1)) - 1, bits_type))
        field = b.cast(b.binary(BinaryOpKind.SHR, magnitude, b.const(mantissa, bits_type)), T.i32)
        return b.binary(BinaryOpKind.SUB, field, b.const(bias, T.i32))

    def store_shared(self, group: Q.SharedExponent, targets: list[tuple[ir.GlobalPtr, ir.Stmt]]) -> None:
        """Store `targets` ((pointer, value) into members of `group`, all at one element), giving every member
        of that element the exponent of the largest magnitude."""
        b = self.b
        qtype = group.qtype
        compute = qtype.compute
        prefix = targets[0][0].indices[:len(group.fields[0].shape)]
        written = {(ptr.container.host.uid, tuple(i.value for i in ptr.indices[len(prefix):]))
                   for ptr, _ in targets if all(isinstance(i, ir.Const) for i in ptr.indices[len(prefix):])}
        others = []
        for field, component in group.members():
            element = self.component_indices(field, component)
            if (field.uid, element) in written:
                continue
            ptr = b.global_ptr(self.ctx.field_slot(field), prefix + [b.const(k, T.i32) for k in element])
            others.append((ptr, b.global_load(ptr)))
        values = [(ptr, b.cast(value, compute)) for ptr, value in targets]
        exponent = None
        for _, value in others + values:
            this = self.exponent_of(value)
            exponent = this if exponent is None else b.binary(BinaryOpKind.MAX, exponent, this)
        exponent = b.binary(BinaryOpKind.MAX, exponent, b.const(1 - qtype.bias, T.i32))
        exponent = b.binary(BinaryOpKind.MIN, exponent, b.const(2 ** qtype.exp - 1 - qtype.bias, T.i32))
        for ptr, value in others + values:       # the written members last: a dynamic index may repeat one
            member = ptr.container.host.quant     # members may differ in fraction bits
            p = member.mantissa_bits
            up = self.power_of_two(b.binary(BinaryOpKind.SUB, b.const(p - 1, T.i32), exponent), compute)
            down = self.power_of_two(b.binary(BinaryOpKind.SUB, exponent, b.const(p - 1, T.i32)), compute)
            most = b.const(2 ** p - 1, compute)
            least = b.const(-(2 ** p - 1) if member.signed else 0, compute)
            steps = b.unary(UnaryOpKind.ROUND, b.binary(BinaryOpKind.MUL, value, up))
            steps = b.binary(BinaryOpKind.MIN, b.binary(BinaryOpKind.MAX, steps, least), most)
            b.global_store(ptr, b.binary(BinaryOpKind.MUL, steps, down))

    @staticmethod
    def component_indices(field: Any, component: int) -> tuple[int, ...]:
        if not field.element_shape:
            return ()
        if len(field.element_shape) == 1:
            return (component,)
        return divmod(component, field.element_shape[1])

    # ---- stores and atomics ----------------------------------------------------------------------------
    def store_quant(self, ref: GlobalRef, value: Any) -> None:
        """ref = value for a field of a quantized type."""
        host = ref.slot.host
        pairs = [(ptr, self.as_scalar(element)) for ptr, element in self.stored_elements(ref, value)]
        if host.quant_group is not None:
            self.store_shared(host.quant_group, pairs)
            return
        for ptr, element in pairs:
            self.b.global_store(ptr, self.quantize(host.quant, element))

    def quant_atomic(self, op: AtomicOpKind, ref: GlobalRef, value: Any, expected: Any) -> Any:
        """An atomic on a field of a quantized type; returns the old value(s)."""
        qtype = ref.slot.host.quant
        ptrs = self.element_ptrs(ref)
        value = self.as_value(value)
        values = list(value.elements) if isinstance(value, VectorValue) else [self.as_scalar(value)] * len(ptrs)
        if len(values) != len(ptrs):
            raise CompileError(f"atomic on '{ref.label}' with a value of another shape")
        if isinstance(qtype, Q.QuantFloat) or (isinstance(qtype, Q.QuantFixed) and op is AtomicOpKind.MUL):
            olds = [self.b.global_load(ptr) for ptr in ptrs]       # a plain read-modify-write, as Taichi's
            news = [self.atomic_update(op, old, v, expected) for old, v in zip(olds, values)]
            if ref.slot.host.quant_group is not None:
                self.store_shared(ref.slot.host.quant_group, list(zip(ptrs, news)))
            else:
                for ptr, new in zip(ptrs, news):
                    self.b.global_store(ptr, self.quantize(qtype, new))
        else:
            olds = [self.quant_atomic_one(qtype, op, ptr, v, expected) for ptr, v in zip(ptrs, values)]
        self.activate_on_write(ref)
        if not ref.element_shape:
            return olds[0]
        return VectorValue(olds, ref.element_shape[0], ref.element_shape[1] if len(ref.element_shape) > 1 else 0)

    def quant_atomic_one(self, qtype: Any, op: AtomicOpKind, ptr: ir.GlobalPtr, value: ir.Stmt,
                         expected: Any) -> ir.Stmt:
        b = self.b
        operand = self.quantize(qtype, value, modular=True)
        if op is AtomicOpKind.CAS:
            return b.atomic(op, ptr, operand, self.quantize(qtype, self.as_scalar(expected)))
        old = b.atomic(op, ptr, operand)
        if op not in _RING_OPS:
            return old
        combine = intrinsic_binary(op)
        before = self.quantize(qtype, old, modular=True)
        if op is AtomicOpKind.MUL:     # wrap the product unless another thread has changed the element since
            raw = b.binary(combine, old, operand)
            b.atomic(AtomicOpKind.CAS, ptr, self.quantize(qtype, raw, modular=True), raw)
            return before
        # add what wrapping this thread's own step takes off (a multiple of the range): the element may be out
        # of range while other threads' corrections are pending, but these corrections telescope, so once all
        # have landed it holds the wrapped exact sum (sums of grid values are exact in the compute dtype)
        stepped = b.binary(combine, before, operand)
        b.atomic(AtomicOpKind.ADD, ptr, b.binary(BinaryOpKind.SUB, self.quantize(qtype, stepped, modular=True),
                                                 stepped))
        return before


def intrinsic_binary(op: AtomicOpKind) -> BinaryOpKind:
    from wgkern.frontend import intrinsics
    return intrinsics.ATOMIC_AS_BINARY[op]
