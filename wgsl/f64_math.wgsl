// wgkern software transcendentals, instantiated for f64 (Vulkan has none: lavapipe returns garbage) and for f32
// (Vulkan's are loose). wgkern/backends/wgsl/mathlib.py supplies the Taylor tails `wk_poly_<name>_$T(z)` and
// $EXP_MAX/$EXP_MIN/$TANH_ONE; `$T`, `$Z`, `$O`, `$NAN`, `$INF` are as in helpers.wgsl. Range reduction keeps
// every polynomial argument small (|r| <= ln2/2, pi/4, tan(pi/12)), so results are within ~1-2 ulp of numpy.
// Sections start with `//! name`; mathlib.MATH_DEPENDENCIES lists which sections each function needs.

//! ldexp
// x * 2^n in two steps, so 2^n itself never overflows (n spans -1075..1024 for f64).
fn wk_ldexp_$T(x: $T, n: i32) -> $T {
  let half = n / 2;
  return ldexp(ldexp(x, half), n - half);
}

//! exp
fn wk_exp_$T(x: $T) -> $T {
  if (!(x == x)) { return x; }
  if (x > $T($EXP_MAX)) { return $INF; }
  if (x < $T($EXP_MIN)) { return $Z; }
  // x = k ln2 + r, ln2 split in a 12-bit head (k * head is exact) and a tail
  let k = floor(x * $T(1.4426950408889634) + $T(0.5));   // floor, not round: lavapipe's f64 round is wrong
  let r = fma(-k, $T(3.1946184945309415e-05), fma(-k, $T(0.693115234375), x));   // fmas: see reduce_pio2
  let p = $O + (r + r * r * wk_poly_exp_$T(r));
  return wk_ldexp_$T(p, i32(k));
}

//! frexp
// x = fract 2^exp with fract in [0.5, 1) for finite x > 0 (the builtin frexp; f64 uses frexp_bits instead).
struct WkFrexp_$T {
  fract: $T,
  exp: i32,
}

fn wk_frexp_$T(x: $T) -> WkFrexp_$T {
  let parts = frexp(x);
  return WkFrexp_$T(parts.fract, parts.exp);
}

//! frexp_bits
// frexp from the bits: lavapipe's LLVM aborts the process on a 64-bit frexp ("Cannot emit physreg copy").
struct WkFrexp_$T {
  fract: $T,
  exp: i32,
}

fn wk_frexp_$T(x: $T) -> WkFrexp_$T {
  var scaled = x;
  var bias = 1022;
  if (x < $T(2.2250738585072014e-308)) {   // subnormal: scale into the normal range first
    scaled = x * $T(18014398509481984.0);   // 2^54
    bias = 1022 + 54;
  }
  let bits = bitcast<u64>(scaled);
  let exponent = i32((bits >> 52u) & 0x7fflu) - bias;
  let fract = bitcast<f64>((bits & 0x800ffffffffffffflu) | 0x3fe0000000000000lu);
  return WkFrexp_$T(fract, exponent);
}

//! log
fn wk_log_$T(x: $T) -> $T {
  if (!(x == x) || x < $Z) { return $NAN; }
  if (x == $Z) { return -$INF; }
  if (x == $INF) { return x; }
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s), s = (m - 1) / (m + 1)
  let parts = wk_frexp_$T(x);
  var m = parts.fract;
  var e = parts.exp;
  if (m < $T(0.7071067811865476)) {
    m = m * $T(2.0);
    e = e - 1;
  }
  let s = (m - $O) / (m + $O);
  let s2 = s * s;
  let log_m = $T(2.0) * s + $T(2.0) * s * (s2 * wk_poly_log_$T(s2));
  let fe = $T(e);
  return fma(fe, $T(0.693115234375), fma(fe, $T(3.1946184945309415e-05), log_m));   // fmas: see reduce_pio2
}

//! log2
fn wk_log2_$T(x: $T) -> $T {
  if (!(x == x) || x < $Z) { return $NAN; }
  if (x == $Z) { return -$INF; }
  if (x == $INF) { return x; }
  let parts = wk_frexp_$T(x);
  var m = parts.fract;
  var e = parts.exp;
  if (m < $T(0.7071067811865476)) {
    m = m * $T(2.0);
    e = e - 1;
  }
  let s = (m - $O) / (m + $O);
  let s2 = s * s;
  let log_m = $T(2.0) * s + $T(2.0) * s * (s2 * wk_poly_log_$T(s2));
  return $T(e) + log_m * $T(1.4426950408889634);   // the exponent is exact; only log(m) is scaled
}

//! reduce_pio2
// x = k pi/2 + r with |r| <= pi/4; pi/2 in four parts (8 + 12 + 12 bits + rest, so k times each of the first
// three is exact even where a driver does not fuse fma): accurate for |k| < 2^12 in f32, 2^41 in f64, also
// next to multiples of pi/2. `quadrant` is k mod 4.
struct WkReduced_$T {
  r: $T,
  quadrant: i32,
}

fn wk_reduce_pio2_$T(x: $T) -> WkReduced_$T {
  let k = floor(x * $T(0.6366197723675814) + $T(0.5));   // floor, not round: see exp
  // explicit fmas: written as ((x - k p1) - k p2) - k p3, NVIDIA's Vulkan compiler (H100, driver 580) lost the
  // extra precision when sin, cos and tan shared the reduction (f64 sin 5e4 ulp off)
  let r = fma(-k, $T($PIO2_4), fma(-k, $T($PIO2_3), fma(-k, $T(0.0004837512969970703), fma(-k, $T(1.5703125), x))));
  let quadrant = i32(k - $T(4.0) * floor(k * $T(0.25)));
  return WkReduced_$T(r, quadrant);
}

//! reduce_pio2_wide
// f32 on a device with shader-f64: past |k| = 2^12 the three f32 parts of pi/2 are too short (sin(1e6) would be
// off by 3e-2), so larger arguments are reduced in f64 (exact for |k| < 2^41, |x| < 3e12).
struct WkReduced_$T {
  r: $T,
  quadrant: i32,
}

fn wk_reduce_pio2_$T(x: $T) -> WkReduced_$T {
  if (abs(x) < $T(6000.0)) {
    let k = floor(x * $T(0.6366197723675814) + $T(0.5));
    let r = fma(-k, $T($PIO2_4), fma(-k, $T($PIO2_3), fma(-k, $T(0.0004837512969970703),
                                                    fma(-k, $T(1.5703125), x))));
    return WkReduced_$T(r, i32(k - $T(4.0) * floor(k * $T(0.25))));
  }
  let wide = wk_reduce_pio2_f64(f64(x));
  return WkReduced_$T($T(wide.r), wide.quadrant);
}

//! reduce_pio2_via_f64
// f32 on a CPU adapter with shader-f64: lavapipe executes both sides of every divergent branch under a mask, so
// reduce_pio2_wide's f32 fast path would only add work there; every argument is reduced in f64 instead.
struct WkReduced_$T {
  r: $T,
  quadrant: i32,
}

fn wk_reduce_pio2_$T(x: $T) -> WkReduced_$T {
  let wide = wk_reduce_pio2_f64(f64(x));
  return WkReduced_$T($T(wide.r), wide.quadrant);
}

//! trig_poly
fn wk_sin_poly_$T(r: $T) -> $T {
  let z = r * r;
  return r + r * (z * wk_poly_sin_$T(z));
}

fn wk_cos_poly_$T(r: $T) -> $T {
  let z = r * r;
  return ($O - $T(0.5) * z) + z * z * wk_poly_cos_$T(z);
}

//! sin
// Both polynomials and selects rather than a switch on the quadrant: no divergent branches on GPUs, and half
// the code for a driver to compile (lavapipe compiles a kernel with a few sin/cos calls markedly faster).
fn wk_sin_$T(x: $T) -> $T {
  let red = wk_reduce_pio2_$T(x);
  let s = wk_sin_poly_$T(red.r);
  let c = wk_cos_poly_$T(red.r);
  let v = select(s, c, (red.quadrant & 1) != 0);
  return select(select(v, -v, (red.quadrant & 2) != 0), x, x == $Z);   // x == 0: keeps the sign of -0
}

//! cos
fn wk_cos_$T(x: $T) -> $T {
  let red = wk_reduce_pio2_$T(x);
  let s = wk_sin_poly_$T(red.r);
  let c = wk_cos_poly_$T(red.r);
  let v = select(c, s, (red.quadrant & 1) != 0);
  return select(v, -v, ((red.quadrant + 1) & 2) != 0);
}

//! tan
fn wk_tan_$T(x: $T) -> $T {
  if (x == $Z) { return x; }
  let red = wk_reduce_pio2_$T(x);
  let s = wk_sin_poly_$T(red.r);
  let c = wk_cos_poly_$T(red.r);
  if ((red.quadrant & 1) == 0) { return s / c; }
  return -c / s;
}

//! atan
fn wk_atan_$T(x: $T) -> $T {
  if (!(x == x) || x == $Z) { return x; }
  var a = abs(x);
  let inverted = a > $O;
  if (inverted) { a = $O / a; }
  var offset = $Z;
  if (a > $T(0.2679491924311227)) {    // tan(pi/12): atan(a) = pi/6 + atan((a sqrt3 - 1) / (a + sqrt3))
    a = (a * $T(1.7320508075688772) - $O) / (a + $T(1.7320508075688772));
    offset = $T(0.5235987755982989);
  }
  let z = a * a;
  var r = offset + (a + a * (z * wk_poly_atan_$T(z)));
  if (inverted) { r = $T(1.5707963267948966) - r; }
  return select(r, -r, x < $Z);
}

//! atan2
// numpy/C99 atan2, signed zeros and infinities included.
fn wk_atan2_$T(y: $T, x: $T) -> $T {
  if (!(x == x) || !(y == y)) { return $NAN; }
  let x_negative = x < $Z || (x == $Z && $O / x < $Z);
  let y_negative = y < $Z || (y == $Z && $O / y < $Z);
  let ax = abs(x);
  let ay = abs(y);
  var r: $T;
  if (ax == $INF && ay == $INF) {
    r = $T(0.7853981633974483);
  } else if (ay == $Z) {
    r = $Z;
  } else if (ay <= ax) {
    r = wk_atan_$T(ay / ax);
  } else {
    r = $T(1.5707963267948966) - wk_atan_$T(ax / ay);
  }
  if (x_negative) { r = $T(3.141592653589793) - r; }
  return select(r, -r, y_negative);
}

//! asin
fn wk_asin_$T(x: $T) -> $T {
  if (!(abs(x) <= $O)) { return $NAN; }
  return wk_atan2_$T(x, sqrt(($O - x) * ($O + x)));
}

//! acos
fn wk_acos_$T(x: $T) -> $T {
  if (!(abs(x) <= $O)) { return $NAN; }
  return wk_atan2_$T(sqrt(($O - x) * ($O + x)), x);
}

//! sinh_small
fn wk_sinh_small_$T(a: $T) -> $T {
  let z = a * a;
  return a + a * (z * wk_poly_sinh_$T(z));
}

//! sinh
fn wk_sinh_$T(x: $T) -> $T {
  if (!(x == x) || x == $Z) { return x; }
  let a = abs(x);
  var r: $T;
  if (a < $O) {
    r = wk_sinh_small_$T(a);
  } else if (a < $T(20.0)) {
    let e = wk_exp_$T(a);
    r = $T(0.5) * (e - $O / e);
  } else {
    let h = wk_exp_$T($T(0.5) * a);   // e^a / 2 without overflowing early
    r = ($T(0.5) * h) * h;
  }
  return select(r, -r, x < $Z);
}

//! cosh
fn wk_cosh_$T(x: $T) -> $T {
  if (!(x == x)) { return x; }
  let a = abs(x);
  if (a < $T(20.0)) {
    let e = wk_exp_$T(a);
    return $T(0.5) * (e + $O / e);
  }
  let h = wk_exp_$T($T(0.5) * a);
  return ($T(0.5) * h) * h;
}

//! tanh
fn wk_tanh_$T(x: $T) -> $T {
  if (!(x == x) || x == $Z) { return x; }
  let a = abs(x);
  var r: $T;
  if (a < $O) {
    let s = wk_sinh_small_$T(a);
    r = s / sqrt($O + s * s);
  } else if (a < $T($TANH_ONE)) {
    r = $O - $T(2.0) / (wk_exp_$T($T(2.0) * a) + $O);
  } else {
    r = $O;
  }
  return select(r, -r, x < $Z);
}

//! pow
// C99/numpy power: NaN only for a finite negative base and a non-integral exponent; x^0 == 1 and 1^y == 1
// even for NaN; zero and infinite bases and infinite exponents are exact; small integral exponents by
// squaring; otherwise exp(b log|a|), whose error grows with |b log|a||: ~1 ulp near 1, more for huge results.
fn wk_pow_$T(a: $T, b: $T) -> $T {
  if (b == $Z || a == $O) { return $O; }
  if (!(a == a) || !(b == b)) { return $NAN; }
  let magnitude = abs(a);
  if (abs(b) == $INF) {
    if (magnitude == $O) { return $O; }
    return select($Z, $INF, (magnitude > $O) == (b > $Z));
  }
  let integral = floor(b) == b;
  let half = b * $T(0.5);
  let odd = integral && !(floor(half) == half);
  let negative = a < $Z || (a == $Z && $O / a < $Z);
  if (a < $Z && !integral && magnitude != $INF) { return $NAN; }   // C99: (-inf)^y is +-inf or +-0
  var r: $T;
  if (magnitude == $Z || magnitude == $INF) {
    r = select($Z, $INF, (b > $Z) == (magnitude == $INF));
  } else if (integral && abs(b) <= $T(64.0)) {   // small integral powers by squaring: exact when representable
    var e = i32(abs(b));
    var base = magnitude;
    var product = $O;
    loop {
      if (e == 0) { break; }
      if ((e & 1) != 0) { product = product * base; }
      base = base * base;
      e = e >> 1u;
    }
    r = select(product, $O / product, b < $Z);
  } else {
    r = wk_exp_$T(b * wk_log_$T(magnitude));
  }
  return select(r, -r, negative && odd);
}
