// wgkern WGSL helpers: templates the WGSL backend instantiates per type (wgkern/backends/wgsl/codegen.py).
// Each section starts with `//! name`. `$T` is the register type (i32, u32, i64, u64, f16, f32), `$Z`/`$O` its
// zero/one literal, `$NAN`/`$INF` a quiet NaN/+inf of that type. The atomic templates also use `$NAME`, `$BUF`
// (the container global), `$DECODE` (value from `old_bits`) and `$ENCODE` (new bits from `old` and `v`; in
// atomic_half the new f16).
// WGSL functions cannot take storage pointers, so atomic helpers are instantiated per container.

//! floordiv_signed
// Python floor division; x // 0 == 0; MIN // -1 == MIN. Never uses `%` or divides by -1: NVIDIA's Vulkan
// driver got both wrong for negative divisors (H100, driver 580).
fn wk_floordiv_$T(a: $T, b: $T) -> $T {
  if (b == $Z) { return $Z; }
  if (b == -$O) { return $Z - a; }
  let q = a / b;
  let r = a - q * b;
  if ((r != $Z) && ((r < $Z) != (b < $Z))) { return q - $O; }
  return q;
}

//! mod_signed
// Python modulo: the result has the divisor's sign; x % 0 == 0; MIN % -1 == 0.
fn wk_mod_$T(a: $T, b: $T) -> $T {
  if (b == $Z || b == -$O) { return $Z; }
  let r = a - (a / b) * b;
  if ((r != $Z) && ((r < $Z) != (b < $Z))) { return r + b; }
  return r;
}

//! div_float
// IEEE division: Vulkan lets `a / b` be 2.5 ulp off (NVIDIA is), so correct it with the exact residual.
fn wk_div_$T(a: $T, b: $T) -> $T {
  let q = a / b;
  if (q == $Z || !(abs(q) < $INF) || !(abs(b) < $INF)) { return q; }
  let r = fma(-q, b, a);
  return fma(r, $O / b, q);
}

//! round_away
// Round half away from zero (Taichi's round, C's round()); WGSL's round() is half to even, and lavapipe's f64
// one is not even that (3.5 -> 3, 54321987.6 unchanged). floor is exact on every device seen; |x| - floor(|x|)
// is exact. The sign comes back by negation (-0.25 -> -0.0; a multiply by 0 would be folded); NaN and
// infinities fall through unchanged.
fn wk_round_$T(x: $T) -> $T {
  let a = abs(x);
  let f = floor(a);
  let r = f + select($Z, $O, a - f >= $T(0.5));
  return select(select(r, -r, x < $Z), x, x == $Z);
}

//! div_float_native
// The driver's division is already correctly rounded (llvmpipe: the CPU's divide instruction).
fn wk_div_$T(a: $T, b: $T) -> $T {
  return a / b;
}

//! ipow_signed
// Integer power by repeated squaring (wrapping); a negative exponent gives 1 for base 1, +-1 for base -1, else 0.
fn wk_ipow_$T(base: $T, exponent: $T) -> $T {
  if (exponent < $Z) {
    if (base == $O) { return $O; }
    if (base == -$O) { return select($O, -$O, (exponent & $O) != $Z); }
    return $Z;
  }
  var result = $O;
  var b = base;
  var e = exponent;
  loop {
    if (e == $Z) { break; }
    if ((e & $O) != $Z) { result = result * b; }
    b = b * b;
    e = e >> 1u;
  }
  return result;
}

//! ipow_unsigned
fn wk_ipow_$T(base: $T, exponent: $T) -> $T {
  var result = $O;
  var b = base;
  var e = exponent;
  loop {
    if (e == $Z) { break; }
    if ((e & $O) != $Z) { result = result * b; }
    b = b * b;
    e = e >> 1u;
  }
  return result;
}

//! random
// wk_hash of docs/internals.md: mix(mix(mix(mix(a) ^ b) ^ c) ^ d), mix being a 32-bit integer finaliser.
fn wk_hash_mix(x: u32) -> u32 {
  var h = x;
  h = h ^ (h >> 16u);
  h = h * 0x7feb352du;
  h = h ^ (h >> 15u);
  h = h * 0x846ca68bu;
  h = h ^ (h >> 16u);
  return h;
}

fn wk_hash(a: u32, b: u32, c: u32, d: u32) -> u32 {
  return wk_hash_mix(wk_hash_mix(wk_hash_mix(wk_hash_mix(a) ^ b) ^ c) ^ d);
}

//! atomic_cas
// Atomic read-modify-write through a compare-exchange loop on the element's bits; returns the old value.
fn wk_atomic_$NAME(i: i32, v: $T) -> $T {
  var old_bits = atomicLoad(&$BUF[i]);
  var result: $T;
  loop {
    let old = $DECODE;
    let r = atomicCompareExchangeWeak(&$BUF[i], old_bits, $ENCODE);
    if (r.exchanged) {
      result = old;
      break;
    }
    old_bits = r.old_value;
  }
  return result;
}

//! atomic_compare_exchange
// Strong compare-and-swap on a container element ($T: its storage type): atomicCompareExchangeWeak may fail
// spuriously, so it is retried while the element still holds `expected`. Returns the old value.
fn wk_atomic_$NAME(i: i32, expected: $T, desired: $T) -> $T {
  var result: $T;
  loop {
    let r = atomicCompareExchangeWeak(&$BUF[i], expected, desired);
    if (r.exchanged || r.old_value != expected) {
      result = r.old_value;
      break;
    }
  }
  return result;
}

//! atomic_half
// An f16 container touched atomically is stored as u32 words of two halves (element i is half i & 1 of word
// i >> 1, low half first: the same bytes as an array of f16). WGSL has no 16-bit atomics, so a read-modify-write
// of one half (a plain store too) is a compare-exchange loop on its whole word that leaves the other half as it
// finds it. Returns the old value.
fn wk_atomic_$NAME(i: i32, v: f16) -> f16 {
  let w = u32(i) >> 1u;
  let shift = (u32(i) & 1u) * 16u;
  var old_bits = atomicLoad(&$BUF[w]);
  var result: f16;
  loop {
    let old = f16(unpack2x16float(old_bits >> shift).x);
    let half_bits = pack2x16float(vec2<f32>(f32($ENCODE), 0.0f)) & 0xffffu;
    let new_bits = (old_bits & ~(0xffffu << shift)) | (half_bits << shift);
    let r = atomicCompareExchangeWeak(&$BUF[w], old_bits, new_bits);
    if (r.exchanged) {
      result = old;
      break;
    }
    old_bits = r.old_value;
  }
  return result;
}

//! load_half
// A plain read of half i of a container stored as words of two f16 (see atomic_half).
fn wk_load_$NAME(i: i32) -> f16 {
  return f16(unpack2x16float(atomicLoad(&$BUF[u32(i) >> 1u]) >> ((u32(i) & 1u) * 16u)).x);
}
