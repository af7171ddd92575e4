"""Scalar helpers the generated CPU kernels call. Written in plain arithmetic so LLVM can vectorize
them: numba's libm calls (math.exp, np.sin on float32) are scalar calls that stop vectorization.

Error bounds (float32, measured against float64 numpy on a dense grid): exp2_f32 and exp_f32 within 2 ulp, log_f32
and log2_f32 within 1 ulp (float64 inside), sin_f32 and cos_f32 within 1 ulp over the whole float32 range (their range
reduction and series run in float64, the reduction of arguments from 1e6 on in 64-bit integers). float64 (against
numpy): exp_f64, exp2_f64 and log_f64 within 1 ulp, log2_f64 within 2; against mpmath: log10_f64 within 0.63 ulp, sin_f64
and cos_f64 within 0.74, erf_f64 within 1.1, erfc_f64 within 3 (the C library's 2.4). atan2 (against mpmath, 60000 random points):
float64 within 2 ulp (1 but for 0.025%, 95% correctly rounded; numpy's C library within 1), float32 correctly rounded."""
import math
import platform
import numpy as np
from llvmlite import ir
from llvmlite.binding import get_host_cpu_features
from numba import njit, types
from numba.extending import intrinsic
from numpy.polynomial import chebyshev
from nbgrad import erf_fits, special

JIT = dict(cache=True, error_model="numpy")   # no contraction: see compiler.FLAGS
# The helpers below are forceinline: LLVM inlines every call into the kernel, so loops over them vectorize, and numba
# types and lowers each helper once. numba's own inlining (inline="always") copied the helper's body into the kernel
# and typed it again at every call: a loop of 16 tanh_f64 calls on float64 compiled in 7.9 s so, in 1.8 s forceinline,
# and ran as fast (157 ms on 1M elements, one thread). The LSTM cell tests (fused backward kernels of up to 31 exp
# and tanh calls), empty cache: 102 s -> 61 s.
# Reassociation is allowed only inside the accumulate helpers below, so LLVM can vectorize a reduction
# loop without being free to reorder the arithmetic of the expressions around it ((x-m) - log(s) must
# not become x - (m + log(s))).
REDUCE_JIT = dict(cache=True, fastmath={"reassoc", "nsz"}, error_model="numpy")


def reinterpret_typing(typingctx, value, target):
  """The bits of value read as the number type target. An integer of another width (numba widens
  small-int arithmetic) is first cut or extended to the target's width."""
  to_type = target.instance_type
  def codegen(context, builder, signature, args):
    value, from_type = args[0], signature.args[0]
    if isinstance(from_type, types.Integer) and from_type.bitwidth != to_type.bitwidth:
      width = ir.IntType(to_type.bitwidth)
      value = builder.trunc(value, width) if from_type.bitwidth > to_type.bitwidth else builder.zext(value, width)
    return builder.bitcast(value, context.get_value_type(to_type))
  return to_type(value, target), codegen


reinterpret = intrinsic(reinterpret_typing)   # the CUDA runtime registers the same typing for the GPU


def wrapping_typing(operation: str):
  """int64 `operation` ("add", "sub" or "mul") that wraps around. numba's own marks signed arithmetic as never
  overflowing (LLVM's nsw), and LLVM then folds a < a + b into 0 < b: (A + 1 > A) was True at int64's maximum."""
  def typing(typingctx, a, b):
    if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)): return None

    def codegen(context, builder, signature, args):
      a, b = (context.cast(builder, v, t, types.int64) for v, t in zip(args, signature.args))
      return getattr(builder, operation)(a, b)
    return types.int64(a, b), codegen
  typing.__name__ = typing.__qualname__ = f"wrapping_{operation}"
  return typing


# the CUDA runtime registers the same typings for the GPU
wrapping_add, wrapping_sub, wrapping_mul = (intrinsic(wrapping_typing(op)) for op in ("add", "sub", "mul"))


@intrinsic
def fma(typingctx, a, b, c):
  """Fused multiply-add (one rounding) of three floats of the same type."""
  if not (isinstance(a, types.Float) and a == b == c): return None

  def codegen(context, builder, signature, args): return builder.fma(*args)
  return a(a, b, c), codegen


# The polynomials below take a multiply-add per coefficient: one instruction, and one rounding, where the CPU has
# fused multiply-adds (every x86 since 2013, every 64-bit ARM); elsewhere LLVM's fma would be a call to libm's per
# element, which stops vectorization, so a product and a sum stand in. Each helper computes alike in every kernel
# (what the scheduler's recomputed nodes need), which kernels contracting their own a * b + c would not.
HARDWARE_FMA = platform.machine().lower() in ("aarch64", "arm64") or "+fma" in get_host_cpu_features().flatten().split(",")


@intrinsic
def mul_add(typingctx, a, b, c):
  """a * b + c for floats of one type: fused where the CPU has the instruction."""
  if not (isinstance(a, types.Float) and a == b == c): return None

  def codegen(context, builder, signature, args):
    return builder.fma(*args) if HARDWARE_FMA else builder.fadd(builder.fmul(args[0], args[1]), args[2])
  return a(a, b, c), codegen


# ---- 16-bit floats are stored as their uint16 bits and computed in float32
# float16 converts with the CPU's instructions where it has them (x86's F16C, any 64-bit ARM), in bit arithmetic
# elsewhere. Both give the same bits: numpy's for numbers; a NaN keeps its sign and payload (the instructions would
# set a signaling NaN's quiet bit, so NaNs take their bits from bit arithmetic). Benchmark elementwise half_add,
# 16M float16 x + y: 47.9 -> 10.9 ms median, with the rounding before a store dropped too (torch 17-21, numpy 118-157).
HARDWARE_HALF = platform.machine().lower() in ("aarch64", "arm64") or "+f16c" in get_host_cpu_features().flatten().split(",")


@intrinsic
def _half_to_f32(typingctx, bits):
  def codegen(context, builder, signature, args):
    return builder.fpext(builder.bitcast(builder.trunc(args[0], ir.IntType(16)), ir.HalfType()), ir.FloatType())
  return types.float32(bits), codegen


@intrinsic
def _f32_to_half(typingctx, value):
  def codegen(context, builder, signature, args):
    return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
  return types.uint16(value), codegen


@njit(**JIT)
def soft_f16_to_f32(h):
  h = np.uint32(h)
  sign = (h & np.uint32(0x8000)) << np.uint32(16)
  exponent = (h >> np.uint32(10)) & np.uint32(0x1F)
  mantissa = h & np.uint32(0x3FF)
  normal = sign | ((exponent + np.uint32(112)) << np.uint32(23)) | (mantissa << np.uint32(13))
  special = sign | np.uint32(0x7F800000) | (mantissa << np.uint32(13))
  value = reinterpret(np.uint32(special if exponent == np.uint32(31) else normal), types.float32)
  subnormal = np.float32(mantissa) * np.float32(5.9604644775390625e-08)
  subnormal = -subnormal if sign != np.uint32(0) else subnormal
  return subnormal if exponent == np.uint32(0) else value


@njit(**JIT)
def soft_f32_to_f16(f):
  x = reinterpret(np.float32(f), types.uint32)
  sign = (x >> np.uint32(16)) & np.uint32(0x8000)
  x = x & np.uint32(0x7FFFFFFF)
  normal = (x + np.uint32(0xFFF) + ((x >> np.uint32(13)) & np.uint32(1)) - np.uint32(112 << 23)) >> np.uint32(13)
  subnormal = np.uint32(np.rint(reinterpret(x, types.float32) * np.float32(16777216.0)))
  payload = (x >> np.uint32(13)) & np.uint32(0x3FF)   # a NaN keeps its payload (bitcasts round-trip)
  nan = np.uint32(0x7C00) | (payload if payload != np.uint32(0) else np.uint32(0x200))
  nan = nan if x > np.uint32(0x7F800000) else np.uint32(0x7C00)
  h = normal
  h = subnormal if x < np.uint32(0x38800000) else h
  h = np.uint32(0x7C00) if x >= np.uint32(0x477FF000) else h
  h = nan if x >= np.uint32(0x7F800000) else h
  return np.uint16(sign | h)


@njit(**JIT)
def hard_f16_to_f32(h):
  h = np.uint32(h)
  value = _half_to_f32(h)
  nan = reinterpret(((h & np.uint32(0x8000)) << np.uint32(16)) | np.uint32(0x7F800000) | ((h & np.uint32(0x3FF)) << np.uint32(13)), types.float32)
  return nan if value != value else value


@njit(**JIT)
def hard_f32_to_f16(f):
  x = reinterpret(np.float32(f), types.uint32)
  payload = (x >> np.uint32(13)) & np.uint32(0x3FF)
  nan = ((x >> np.uint32(16)) & np.uint32(0x8000)) | np.uint32(0x7C00) | (payload if payload != np.uint32(0) else np.uint32(0x200))
  return np.uint16(nan) if f != f else _f32_to_half(np.float32(f))


f16_to_f32, f32_to_f16 = (hard_f16_to_f32, hard_f32_to_f16) if HARDWARE_HALF else (soft_f16_to_f32, soft_f32_to_f16)


@njit(**JIT)
def bf16_to_f32(h):
  return reinterpret(np.uint32(h) << np.uint32(16), types.float32)


@njit(**JIT)
def f32_to_bf16(f):
  x = reinterpret(np.float32(f), types.uint32)
  rounded = (x + np.uint32(0x7FFF) + ((x >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
  top = x >> np.uint32(16)
  nan = top if (top & np.uint32(0x7F)) != np.uint32(0) else top | np.uint32(0x40)   # keeps the payload
  return np.uint16(nan if f != f else rounded)


@njit(**JIT)
def f64_to_f32_odd(a):
  """float64 a as float32 rounded to odd (toward zero, then the last bit set when inexact): rounding that on to a
  16-bit float gives what rounding a there directly would. Through plain float32 it could round twice:
  1 + 2^-11 + 2^-40 became 1.0 in float16, not 1.001."""
  f = np.float32(a)
  if a != a or np.float64(f) == a: return f
  bits = reinterpret(f, types.uint32)
  if abs(np.float64(f)) > abs(a): bits = bits - np.uint32(1)   # rounded away from zero: one step back
  return reinterpret(bits | np.uint32(1), types.float32)


@njit(**JIT)
def round_f16(f): return f16_to_f32(f32_to_f16(f))


@njit(**JIT)
def round_bf16(f): return bf16_to_f32(f32_to_bf16(f))


# ---- float32 transcendentals
@njit(**JIT)
def exp2_f32(x):
  tiny = x < np.float32(-126.0)
  xs = np.float32(x + np.float32(64.0)) if tiny else x
  xs = min(max(xs, np.float32(-127.0)), np.float32(128.0))
  k = np.rint(xs)
  f = xs - k
  p = np.float32(0.00015337576830683796)
  p = mul_add(p, f, np.float32(0.0013399860363037684))
  p = mul_add(p, f, np.float32(0.009618519534356884))
  p = mul_add(p, f, np.float32(0.055503289975178886))
  p = mul_add(p, f, np.float32(0.2402264660871389))
  p = mul_add(p, f, np.float32(0.6931472056005106))
  p = mul_add(p, f, np.float32(1.0000000005920204))
  bits = reinterpret(p, types.int32) + (np.int32(k) << np.int32(23))
  r = reinterpret(np.int32(bits), types.float32)
  r = r * np.float32(5.421010862427522e-20) if tiny else r   # underflows to 0 below about -150
  r = np.float32(np.inf) if x >= np.float32(128.0) else r
  return r if x == x else x


@njit(**JIT)
def exp_f32(x):
  """e**x. Not exp2(x * log2 e): that product's rounding grows with x (62 ulps near 88). x = k ln2 + r with
  ln2 in two parts, the first exact in a product with k, so r is exact to a rounding; e**r by its series."""
  xs = min(max(x, np.float32(-104.0)), np.float32(89.0))
  k = np.rint(xs * np.float32(1.4426950408889634))
  r = (xs - k * np.float32(0.693359375)) - k * np.float32(-2.1219444005469057e-4)
  p = np.float32(1.0 / 5040)
  p = mul_add(p, r, np.float32(1.0 / 720))
  p = mul_add(p, r, np.float32(1.0 / 120))
  p = mul_add(p, r, np.float32(1.0 / 24))
  p = mul_add(p, r, np.float32(1.0 / 6))
  p = mul_add(p, r, np.float32(0.5))
  p = mul_add(p, r, np.float32(1.0))
  p = mul_add(p, r, np.float32(1.0))
  # 2**k in two factors, each a normal float for every k here (-150..128): the product rounds once
  half = np.int32(k) >> np.int32(1)
  scale_a = reinterpret(np.int32((half + np.int32(127)) << np.int32(23)), types.float32)
  scale_b = reinterpret(np.int32((np.int32(k) - half + np.int32(127)) << np.int32(23)), types.float32)
  r = p * scale_a * scale_b
  return r if x == x else x


# ---- float64 exponentials and logarithms: numba calls libm's exp and log for each element, which keeps LLVM from
# vectorizing the loop (exp of 2^21 float64, 2 threads: 4.67 ms that way, 1.31 ms this way; numpy 1.75, torch 1.77)
_EXP_SERIES = tuple(1.0 / math.factorial(n) for n in range(13, -1, -1))   # e**r's, highest power first
_ATANH_SERIES = tuple(2.0 / n for n in range(23, 2, -2))   # (2 atanh(s) - 2 s) / s**3's, in powers of s**2
# ln2 in two parts, the first with its low bits zero so that its product with an exponent k is exact; and log2(e)
_LN2_HIGH, _LN2_LOW, _LOG2_E = 6.93147180369123816490e-01, 1.90821492927058770002e-10, 1.4426950408889634


@njit(**JIT, forceinline=True)
def _horner(x, coefficients):
  """The polynomial in x with these coefficients, the highest power's first."""
  p = coefficients[0]
  for c in coefficients[1:]: p = mul_add(p, x, c)
  return p


@njit(**JIT, forceinline=True)
def _two_power_factors(k):
  """2**k for an integer k in -1076..1024 as two factors that are normal floats: a product with them rounds once
  (into a subnormal too), and 2**1024 times a number below 1 stays finite."""
  half = np.int64(k) >> np.int64(1)
  scale_a = reinterpret((half + np.int64(1023)) << np.int64(52), types.float64)
  return scale_a, reinterpret((np.int64(k) - half + np.int64(1023)) << np.int64(52), types.float64)


@njit(**JIT, forceinline=True)
def _exp_f64_reduced(k, r):
  """e**r * 2**k for |r| <= ln2 / 2 (the series to r**13, below a 20th of an ulp) and an integer k in -1076..1024."""
  scale_a, scale_b = _two_power_factors(k)
  return _horner(r, _EXP_SERIES) * scale_a * scale_b


@njit(**JIT)
def exp_f64(x):
  """e**x within an ulp: x = k ln2 + r with ln2 in two parts, the first exact in a product with k."""
  xs = min(max(x, -746.0), 710.0)
  k = np.rint(xs * _LOG2_E)
  r = (xs - k * _LN2_HIGH) - k * _LN2_LOW
  v = _exp_f64_reduced(k, r)
  return v if x == x else x


@njit(**JIT)
def exp2_f64(x):
  xs = min(max(x, -1076.0), 1025.0)
  k = np.rint(xs)
  v = _exp_f64_reduced(k, (xs - k) * 0.6931471805599453)
  return v if x == x else x


# e^r - 1 = r + r^2 E(r) for |r| <= ln2 / 2: E's series to r^11 / 13!, below a 20th of an ulp; highest power first
_EXPM1_SERIES = _EXP_SERIES[:-2]


@njit(**JIT, forceinline=True)
def expm1_f64(x):
  """e^x - 1 within an ulp without losing a small x: x = k ln2 + r (r's rounding error c kept), e^r - 1 = r + tail by
  its series with no leading 1 to cancel, then (2^k - 1) + 2^k r + 2^k tail, where 2^k - 1 is exact for the k that
  matter and the first sum's rounding error is kept;
  past k = 56 the 1 is below the last digit and e^r 2^k is scaled in two factors (no overflow short of inf).
  4M float64, 2 cores: 18 ms as Kahan's (e^x - 1) x / log(e^x), 5 ms so (numpy 4.8 with its vector library)."""
  xs = min(max(x, -40.0), 710.0)   # e^-40 - 1 is -1 in float64; e^710 is inf
  k = np.rint(xs * _LOG2_E)
  high = xs - k * _LN2_HIGH   # exact
  low = k * _LN2_LOW
  r = high - low
  c = (high - r) - low
  tail = r * r * _horner(r, _EXPM1_SERIES)
  tail = tail + c * (1.0 + (r + tail))   # e^r - 1 = r + tail
  scale_a, scale_b = _two_power_factors(k)
  whole = scale_a * scale_b   # 2^k, finite for k <= 1023
  leading, error = _two_sum(whole - 1.0, whole * r)   # the products by 2^k are exact: one rounding that matters
  v = leading + (error + whole * tail) if k <= 56.0 else ((1.0 + (r + tail)) * scale_a) * scale_b - 1.0
  return x if (x != x or x == 0.0) else v   # -0.0 keeps its sign


@njit(**JIT, forceinline=True)
def expm1_f32(x): return np.float32(expm1_f64(np.float64(x)))


# ---- tanh: an odd series below 0.4 (float32) or 0.4/256 (float64), where its first left-out term is under 1e-7 of
# the value (under an ulp in float64); past it from e = e^(-2|x|): (1 - e) / (1 + e) in float32, where 1 - e does not
# cancel from 0.4 on, and -expm1(-2|x|) / (2 + expm1(-2|x|)) in float64. Both branches are computed and one is
# selected, so LLVM vectorizes the loop. (Built as 30 tensor ops it took 300 us to build a graph of 66 nodes.)
@njit(**JIT, forceinline=True)
def tanh_f32(x):
  s = x * x
  t = np.float32(21844.0 / 6081075.0)
  t = mul_add(s, t, np.float32(-1382.0 / 155925.0))
  t = mul_add(s, t, np.float32(62.0 / 2835.0))
  t = mul_add(s, t, np.float32(-17.0 / 315.0))
  t = mul_add(s, t, np.float32(2.0 / 15.0))
  t = mul_add(s, t, np.float32(-1.0 / 3.0))
  series = x * (np.float32(1.0) + s * t)
  e = exp_f32(np.float32(-2.0) * abs(x))
  beyond = (np.float32(1.0) - e) / (np.float32(1.0) + e)
  return series if abs(x) < np.float32(0.4) else (-beyond if x < np.float32(0.0) else beyond)


@njit(**JIT, forceinline=True)
def tanh_f64(x):
  s = x * x
  t = 21844.0 / 6081075.0
  t = mul_add(s, t, -1382.0 / 155925.0)
  t = mul_add(s, t, 62.0 / 2835.0)
  t = mul_add(s, t, -17.0 / 315.0)
  t = mul_add(s, t, 2.0 / 15.0)
  t = mul_add(s, t, -1.0 / 3.0)
  series = x * (1.0 + s * t)
  e = expm1_f64(-2.0 * abs(x))
  beyond = -e / (2.0 + e)
  return series if abs(x) < 0.0015625 else (-beyond if x < 0.0 else beyond)


@njit(**JIT, forceinline=True)
def _log_f64_reduced(x):
  """A float64 x > 0 as 2 ** e * (1 + f), 1 + f in [sqrt(1/2), sqrt(2)) (f exact), with s = f / (2 + f), z = s**2 and
  R = 2 s**2 / 3 + 2 s**4 / 5 + ... (to s**22, below a 20th of an ulp; |s| <= 0.172), so that ln(1 + f) = 2 atanh(s)
  = f - s (f - R): (e, f, s, R)."""
  small = x < 2.2250738585072014e-308
  xs = x * 4503599627370496.0 if small else x   # subnormals scaled by 2**52
  bits = reinterpret(xs, types.int64)
  e = np.float64((bits >> np.int64(52)) - np.int64(1023)) - (52.0 if small else 0.0)
  m = reinterpret((bits & np.int64(0xFFFFFFFFFFFFF)) | np.int64(0x3FF0000000000000), types.float64)
  big = m > 1.4142135623730951
  m = m * 0.5 if big else m
  e = e + 1.0 if big else e
  f = m - 1.0
  s = f / (2.0 + f)
  z = s * s
  return e, f, s, z * _horner(z, _ATANH_SERIES)


@njit(**JIT, forceinline=True)
def _log_f64_parts(x):
  """(e, ln(1 + f)) of _log_f64_reduced, ln(1 + f) as f - s (f - R): the rounding of s only reaches the smaller
  second term."""
  e, f, s, r = _log_f64_reduced(x)
  return e, f - s * (f - r)


@njit(**JIT, forceinline=True)
def _log_f64_special(x, r):
  """r, or IEEE's answer where x is 0, inf, negative or nan."""
  r = -np.inf if x == 0.0 else r
  r = x if x == np.inf else r
  return np.nan if (x < 0.0 or x != x) else r


@njit(**JIT)
def log_f64(x):
  """ln x within an ulp of numpy's, vectorizable (as exp_f64): e ln2 with ln2 in two parts, the first exact in e's
  product (log2 x, e + ln(1 + f) log2 e, is within two)."""
  e, ln_m = _log_f64_parts(x)
  return _log_f64_special(x, e * _LN2_HIGH + (e * _LN2_LOW + ln_m))


@njit(**JIT)
def log2_f64(x):
  e, ln_m = _log_f64_parts(x)
  return _log_f64_special(x, e + ln_m * _LOG2_E)


# log10(2) and 1/ln(10), each as a float and its rounding error, then each as a first part short enough that its
# product with an exponent (log10(2)'s) or with a 21-bit number (1/ln(10)'s) is exact, and the rest
_LOG10_2, _LOG10_2_TAIL = 0.3010299956639812, -2.8037281277851704e-18
_INV_LN10, _INV_LN10_TAIL = 0.4342944819032518, 1.098319650216765e-17


def _split(value: float, tail: float, bits: int) -> tuple:
  exponent = math.frexp(value)[1]
  high = math.ldexp(math.floor(math.ldexp(value, bits - exponent)), exponent - bits)
  return high, (value - high) + tail


_LOG10_2_HIGH, _LOG10_2_LOW = _split(_LOG10_2, _LOG10_2_TAIL, 40)
_INV_LN10_HIGH, _INV_LN10_LOW = _split(_INV_LN10, _INV_LN10_TAIL, 32)


@njit(**JIT, forceinline=True)
def _log10_f64_parts(x):
  """(e, high, low) with ln x = e ln2 + high + low: ln(1 + f) of _log_f64_reduced, as f - (f^2/2 - s (f^2/2 + R)),
  its leading f - f^2/2 cut to 21 bits (high) and all the rest in low."""
  e, f, s, r = _log_f64_reduced(x)
  half_square = 0.5 * f * f
  high = reinterpret(reinterpret(f - half_square, types.int64) & np.int64(-4294967296), types.float64)   # low 32 bits cleared
  low = ((f - high) - half_square) + s * (half_square + r)
  return e, high, low


@njit(**JIT)
def log10_f64(x):
  """log10 x within an ulp, exact at powers of 10 (as numpy's), vectorizable: e log10(2) + ln(1 + f) / ln(10), the
  products of the leading parts exact, their sum's rounding error kept with the small terms, so that it rounds
  once (4M in (0.1, 5), 2 cores: 29 ms with the C library's; numpy 3.7 with its vector library)."""
  e, high, low = _log10_f64_parts(x)
  leading, error = _two_sum(e * _LOG10_2_HIGH, high * _INV_LN10_HIGH)
  rest = error + (e * _LOG10_2_LOW + ((high + low) * _INV_LN10_LOW + low * _INV_LN10_HIGH))
  return _log_f64_special(x, leading + rest)


@njit(**JIT)
def _log_parts(x):
  """A float32 x > 0 as 2 ** e * m, m in [sqrt(1/2), sqrt(2)), and ln m = 2 atanh((m - 1) / (m + 1)) by its series,
  in float64: (e, ln m), from which ln x and log2 x round once (within an ulp; float32 arithmetic gave 4)."""
  small = x < np.float32(1.1754943508222875e-38)
  xs = x * np.float32(8388608.0) if small else x
  bits = reinterpret(xs, types.int32)
  e = np.float64((bits >> np.int32(23)) - np.int32(127)) - (23.0 if small else 0.0)
  m = np.float64(reinterpret(np.int32((bits & np.int32(0x7FFFFF)) | np.int32(0x3F800000)), types.float32))
  big = m > 1.4142135623730951
  m = m * 0.5 if big else m
  e = e + 1.0 if big else e
  t = (m - 1.0) / (m + 1.0)
  t2 = t * t
  series = 2.0 * t * (1.0 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 * (1.0 / 9 + t2 * (1.0 / 11 + t2 / 13))))))
  return e, series


@njit(**JIT)
def pow_f32(a, e):
  """a ** e for a magnitude a > 0, in float64 arithmetic: e * log2(a) keeps its digits, where exp(e * log(a)) in
  float32 lost up to 70 ulps. log2(a) from _log_parts; 2**t as e**(f ln2) 2**n for t = n + f, n = round(t).
  Infinite and NaN a go through as log2(a) = a; selects only, no branches, so that loops over it vectorize."""
  k, ln_m = _log_parts(a)
  x = np.float64(a)
  log2_a = k + ln_m * _LOG2_E if x < np.inf else x
  t = min(max(np.float64(e) * log2_a, -200.0), 200.0)
  n = np.rint(t)
  return np.float32(_exp_f64_reduced(n, (t - n) * 0.6931471805599453))


@njit(**JIT)
def _log_special(x, r):
  """r, or IEEE's answer where x is 0, inf, negative or nan."""
  r = np.float32(-np.inf) if x == np.float32(0.0) else r
  r = x if x == np.float32(np.inf) else r
  return np.float32(np.nan) if (x < np.float32(0.0) or x != x) else r


@njit(**JIT)
def log2_f32(x):
  e, series = _log_parts(x)
  return _log_special(x, np.float32(e + series * _LOG2_E))


@njit(**JIT)
def log_f32(x):
  e, series = _log_parts(x)
  return _log_special(x, np.float32(e * 0.6931471805599453 + series))


@njit(**JIT)
def log10_f32(x):
  """Vectorizable as log_f32; its float64 value is within far less than half a float32 ulp, so powers of 10 come
  out exact."""
  e, series = _log_parts(x)
  return _log_special(x, np.float32(e * 0.30102999566398120 + series * 0.4342944819032518))   # log10 2, 1 / ln 10


# float32's erf and erfc (exact GELU's) in float64 arithmetic LLVM vectorizes, from the polynomials of
# nbgrad/erf_fits.py (highest power first here, for _horner)
_ERF_NEAR, _ERFC_MID, _ERFC_FAR = (tuple(reversed(c)) for c in (erf_fits.NEAR, erf_fits.MID, erf_fits.FAR))
ERF_NEAR_END, ERF_MID_END, ERFC_FIT_END = erf_fits.NEAR_END, erf_fits.MID_END, erf_fits.FAR_END
_far_variable = njit(**JIT, forceinline=True)(erf_fits.far_variable)   # the same arithmetic on a float here


@njit(**JIT, forceinline=True)
def _erf_near(x):   # |x| <= ERF_NEAR_END
  return x * _horner(x * x * 0.5 - 1.0, _ERF_NEAR)


@njit(**JIT, forceinline=True)
def _erfc_far(a):   # a >= ERF_NEAR_END
  return exp_f64(-a * a) * _horner(_far_variable(min(a, ERFC_FIT_END)), _ERFC_FAR)


# every piece is computed and one selected, no branches, and the body inlined into the kernel (LLVM left the call in
# place), so that loops over them vectorize: 16M float32 erf took 218 ms with the C library's, 146 ms as a call,
# 61 ms inlined and 21 ms with MID in place of 1 - erfc's exp form
@njit(**JIT, forceinline=True)
def erf_f32(x):
  v = np.float64(x)
  a = abs(v)
  beyond = 1.0 if a > ERF_MID_END else 1.0 - _horner(a - 3.0, _ERFC_MID)   # NaN stays NaN
  return np.float32(_erf_near(v) if a <= ERF_NEAR_END else (beyond if v > 0 else -beyond))   # and so does -0.0


@njit(**JIT, forceinline=True)
def erfc_f32(x):
  v = np.float64(x)
  near, far = 1.0 - _erf_near(v), _erfc_far(abs(v))
  return np.float32(near if abs(v) <= ERF_NEAR_END else (far if v > 0 else 2.0 - far))


# ---- float64's erf and erfc from nbgrad/erf_fits.py's float64 fits in arithmetic LLVM vectorizes (4M in (0.1, 5),
# 2 cores: 60 ms with the C library's, torch 7). Every piece is computed and one selected.
_ERF64_SMALL = tuple(reversed(erf_fits.ERF64_SMALL))
_ERFC64_CHEBYSHEV = tuple(reversed(erf_fits.ERFC64_CHEBYSHEV))


# LLVM unrolls (and then vectorizes) a loop over up to about 14 coefficients, not one over 19 or more: longer series
# go in pieces of 12
_ERF64_SMALL_PIECES = (_ERF64_SMALL[:11], _ERF64_SMALL[11:])
_ERFC64_PIECES = (_ERFC64_CHEBYSHEV[:12], _ERFC64_CHEBYSHEV[12:-1])


@njit(**JIT, forceinline=True)
def _clenshaw_steps(b1, b2, twice_u, coefficients):
  for c in coefficients: b1, b2 = twice_u * b1 - b2 + c, b1
  return b1, b2


@njit(**JIT, forceinline=True)
def _chebyshev_series(u, pieces, last):
  """A Chebyshev series at u in [-1, 1] by Clenshaw's recurrence: its coefficients, the highest degree's first, are
  those of pieces (two tuples), then last (T0's)."""
  twice = 2.0 * u
  b1, b2 = _clenshaw_steps(0.0, 0.0, twice, pieces[0])
  b1, b2 = _clenshaw_steps(b1, b2, twice, pieces[1])
  return u * b1 - b2 + last


@njit(**JIT, forceinline=True)
def _erf64_near(z):
  """y(z) of erf(x) = x + x y(x^2), in two Horner pieces."""
  p = _horner(z, _ERF64_SMALL_PIECES[0])
  for c in _ERF64_SMALL_PIECES[1]: p = mul_add(p, z, c)
  return p


@njit(**JIT, forceinline=True)
def _erfc_f64_tail(a):
  """erfc(a) for a >= 1 (0 from ERFC64_END on): exp(-a^2) q(a) / a, with a^2 split exactly into high + low (Dekker)
  so that exp(-a^2) loses nothing to its rounding, and 2^k of the exponential applied last, so that a subnormal
  result rounds once."""
  a = min(a, erf_fits.ERFC64_END)
  c = a * 134217729.0   # 2^27 + 1: a's upper 26 bits and the rest
  upper = c - (c - a)
  lower = a - upper
  high = a * a
  low = ((upper * upper - high) + 2.0 * upper * lower) + lower * lower
  k = np.rint(high * -_LOG2_E)
  r = ((-high - k * _LN2_HIGH) - low) - k * _LN2_LOW
  q = _chebyshev_series(erf_fits.ERFC64_U0 - erf_fits.ERFC64_U1 / (a + 3.0), _ERFC64_PIECES, _ERFC64_CHEBYSHEV[-1])
  scale_a, scale_b = _two_power_factors(k)
  return _horner(r, _EXP_SERIES) * q / a * scale_a * scale_b if a < erf_fits.ERFC64_END else 0.0


@njit(**JIT, forceinline=True)   # unforced, LLVM leaves a call of a body this size in place, and the loop unvectorized
def erf_f64(x):
  a = abs(x)
  near = a + a * _erf64_near(a * a)
  r = near if a < 1.0 else 1.0 - _erfc_f64_tail(a)
  return x if x != x else math.copysign(r, x)


@njit(**JIT, forceinline=True)
def erfc_f64(x):
  """1 - erf(x) below |x| = 1, from 1/4 on as 1/2 - ((x - 1/2) + x y), that sum's rounding error kept; 2 - erfc(|x|)
  for x <= -1."""
  a = abs(x)
  y = _erf64_near(a * a)
  s, e = _two_sum(a - 0.5, a * y)
  near = (1.0 - (a + a * y)) if a < 0.25 else (0.5 - s) - e
  tail = _erfc_f64_tail(a)
  r = (near if a < 1.0 else tail) if x >= 0.0 else (1.0 + (a + a * y) if a < 1.0 else 2.0 - tail)
  return x if x != x else r


# ---- float32's lgamma in float64 arithmetic LLVM vectorizes, rounded once: against mpmath on 33000 points (random,
# dense about the roots 1 and 2, the negative roots and the poles, tiny and huge inputs) all correctly rounded.
# 4M float32, 2 cores: in (0, 50) 46 ms with the C library's lgamma per element, 31 ms so (torch 22); in (-50, 50),
# where the C library's is slower, 187 and 31 ms (torch 32); the time goes to the Horner chains, each step waiting
# on the one before. Positive y: from LGAMMA_STIRLING_START on Stirling's series; below, lgamma(y) = lgamma(z) +- the
# log of the product of the factors y - 1 ... z or y ... z - 1 that move y into [2 - LGAMMA_FIT_BELOW,
# 3 - LGAMMA_FIT_BELOW), and lgamma(z) = (z - 2) P(z - 2). Both roots then lie in the window (lgamma's value there is
# z - 2, exact, times P), and near 1, lgamma(y) = (y - 1) P(y - 1) - log(y) has log's relative accuracy. Negative x
# by the reflection lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x), sin(pi x) by its series in the distance of x
# to an integer.
LGAMMA_STIRLING_START, LGAMMA_FIT_BELOW = 8.0, 1.0 / 16


def _lgamma_fit(degree: int = 13) -> tuple:
  """lgamma(2 + t) / t for t in [-LGAMMA_FIT_BELOW, 1 - LGAMMA_FIT_BELOW], as a polynomial in t mapped onto [-1, 1]
  (s = 2 t + 2 LGAMMA_FIT_BELOW - 1): interpolated at Chebyshev points from its power series (within 6e-15 relatively
  against mpmath; from Python's math.lgamma, within 1e-12 near 2, it was 4e-13), highest power first."""
  series = special.log_gamma_2p_series(1.0)
  def quotient(s): return np.polynomial.polynomial.polyval((s + 1.0) / 2 - LGAMMA_FIT_BELOW, series)
  return tuple(reversed(chebyshev.cheb2poly(chebyshev.chebinterpolate(quotient, degree)).tolist()))


_LGAMMA_FIT = _lgamma_fit()
_STIRLING_SERIES = tuple(reversed(special.log_gamma_star_series()))   # in 1/y^2, highest power first
_SIN_PI_SERIES = tuple(reversed(special.SIN_PI_SERIES))   # sin(pi a) / a in a^2, highest power first
_HALF_LOG_TWO_PI, _LOG_PI = 0.5 * math.log(2 * math.pi), math.log(math.pi)


@njit(**JIT, forceinline=True)
def _lgamma_steps(y, stirling_start, fit_below):
  """For y > 0 and the window [2 - fit_below, 3 - fit_below) below stirling_start: (whether y takes Stirling's series,
  t = z - 2 for the z in the window whole steps from y (exact), the log to add to lgamma(z): + log of y - 1 ... z
  or - log of y ... z - 1; for Stirling's series log(y)) and lgamma(y) by Stirling's series (used only where it
  applies)."""
  stirling = y >= stirling_start
  shift = min(max(np.floor(y + fit_below) - 2.0, -2.0), stirling_start - 2.0)   # y - shift is z
  down = 1.0
  for j in range(1, int(stirling_start) - 1): down = down * (y - j if j <= shift else 1.0)
  up = y * (y + 1.0 if shift == -2.0 else 1.0)
  logarithm = log_f64(y if stirling else (down if shift >= 0.0 else up))   # one log for both ways
  r = 1.0 / y
  series = r * _horner(r * r, _STIRLING_SERIES)
  stirling_value = (y - 0.5) * (logarithm - 1.0) + ((_HALF_LOG_TWO_PI - 0.5) + series)
  return stirling, y - (shift + 2.0), logarithm if shift >= 0.0 else -logarithm, stirling_value


@njit(**JIT, forceinline=True)
def _lgamma_positive(y):
  """lgamma(y) for a float64 y > 0 that is a float32, or 1 minus one."""
  stirling, t, logarithm, stirling_value = _lgamma_steps(y, LGAMMA_STIRLING_START, LGAMMA_FIT_BELOW)
  shifted = t * _horner(2.0 * t + (2.0 * LGAMMA_FIT_BELOW - 1.0), _LGAMMA_FIT) + logarithm
  return stirling_value if stirling else shifted


@njit(**JIT, forceinline=True)
def lgamma_f32(x):
  """inf at the poles (0 and the negative integers) and at -inf, as C's."""
  v = np.float64(x)
  y = v if v > 0.0 else 1.0 - v
  positive = _lgamma_positive(y)
  a = abs(v - np.rint(v))
  reflected = (_LOG_PI - log_f64(a * _horner(a * a, _SIN_PI_SERIES))) - positive   # a log, not a division
  r = reflected if v < 0.0 else positive
  return np.float32(np.inf if (v <= 0.0 and v == np.rint(v)) else r)


# ---- float64's lgamma the same way, vectorizable: Stirling's series from LGAMMA64_STIRLING_START on (special.py's
# terms, chosen for that start); below it the window [3/2, 5/2)'s lgamma(z) = (z - 2) Q(z - 2) with Q erf_fits.py's
# Chebyshev fit, and the log of the product of up to 8 factors. The window holds the root 2 inside (float32's,
# [2 - 1/16, 3 - 1/16), cancelled to 50 ulps just below 2 in float64); negative x by the reflection with lgamma(-x)
# (1 - x would round). Against mpmath: within 3 ulps but about the minimum at 1.46 (9, where lgamma(y + 1) - log(y)
# cancels), the relative accuracy kept at the roots 1 and 2; below 0 within 7e-16 absolutely (the value passes
# through zero at the negative roots, where the reflection's two terms cancel). 4M in (0.1, 5), 2 cores: 33 ms with
# the C library's (medians of 9), 22 ms so; torch 37.
LGAMMA64_STIRLING_START, LGAMMA64_FIT_BELOW = special.STIRLING_START, 0.5
_LGAMMA64_CHEBYSHEV = tuple(reversed(erf_fits.LGAMMA64_CHEBYSHEV))
_LGAMMA64_PIECES = (_LGAMMA64_CHEBYSHEV[:12], _LGAMMA64_CHEBYSHEV[12:-1])


@njit(**JIT, forceinline=True)
def _lgamma64_positive(y):
  """lgamma(y) for y > 0, the window [3/2, 5/2)."""
  stirling, t, logarithm, stirling_value = _lgamma_steps(y, LGAMMA64_STIRLING_START, LGAMMA64_FIT_BELOW)
  window = _chebyshev_series(2.0 * t, _LGAMMA64_PIECES, _LGAMMA64_CHEBYSHEV[-1])   # Q(t) = lgamma(2 + t) / t
  return stirling_value if stirling else t * window + logarithm


@njit(**JIT, forceinline=True)
def lgamma_f64(x):
  """inf at the poles (0 and the negative integers) and at +-inf, as C's. Below 0, lgamma(x) = log(pi / |sin(pi x)|)
  - lgamma(-x) - log(-x), the last two logs taken as one; from -1e-150 to 0, lgamma(-x) itself (they differ by 2
  Euler's gamma |x|, and the product in the log would underflow)."""
  y = abs(x)
  positive = _lgamma64_positive(y)
  a = abs(x - np.rint(x))
  reflected = (_LOG_PI - log_f64(a * _horner(a * a, _SIN_PI_SERIES) * y)) - positive
  r = reflected if (x < 0.0 and y >= 1e-150) else positive
  r = np.inf if (x <= 0.0 and x == np.rint(x)) or y == np.inf else r
  return x if x != x else r


# ---- atan2 (and through it atan, asin and acos) in float64 arithmetic LLVM vectorizes; float32 rounds it once.
# 4M asin (2 busy cores) took 60 ms (float32) and 68 ms (float64) with the C library's atan2, a scalar call; 11 and 23 ms so.
ATAN_REDUCED_END = math.sqrt(2.0) - 1.0   # tan(pi/8): atan(t) for t in [0, 1] is taken from atan(u), |u| up to it
_ATAN_SQUARE_END = ATAN_REDUCED_END ** 2


def _atan_fit(degree: int = 10) -> tuple:
  """(atan(u) / u - 1) / u^2 for u^2 in [0, tan(pi/8)^2], as a polynomial in v = u^2 mapped onto [-1, 1]: interpolated
  at Chebyshev points from its power series, highest power first. atan(u) = u + u^3 p(v) is then within an ulp (the
  fit within 0.6 ulp against mpmath), its leading term exact."""
  def correction(v):
    s = (v + 1.0) * (_ATAN_SQUARE_END / 2)
    return sum((-1.0) ** k * s ** (k - 1) / (2 * k + 1) for k in range(60, 0, -1))   # smallest terms first
  return tuple(reversed(chebyshev.cheb2poly(chebyshev.chebinterpolate(correction, degree)).tolist()))


_ATAN_FIT = _atan_fit()
# pi/4, pi/2 and pi in two parts, the second the first's rounding error, so a sum with them rounds once
_QUARTER_PI, _QUARTER_PI_LOW = 0.7853981633974483, 3.061616997868383e-17
_HALF_PI, _HALF_PI_LOW = 1.5707963267948966, 6.123233995736766e-17
_PI, _PI_LOW = 3.141592653589793, 1.2246467991473532e-16


@njit(**JIT, forceinline=True)
def _two_sum(a, b):
  """a + b as the rounded sum and its exact rounding error (Knuth's TwoSum)."""
  s = a + b
  b_part = s - a
  return s, (a - (s - b_part)) + (b - b_part)


@njit(**JIT, forceinline=True)
def _minus(c_high, c_low, high, low):
  """(c_high + c_low) - (high + low) as a high part and a low part, the high one's rounding error kept."""
  s, e = _two_sum(c_high, -high)
  return s, e + (c_low - low)


@njit(**JIT, forceinline=True)
def atan2_f64(y, x):
  """The angle of the point (x, y), C's atan2 at every zero, infinity and NaN: atan(n / d) for n, d the smaller and the
  larger of |x| and |y|, as pi/4 + atan((n - d) / (n + d)) past tan(pi/8), moved to the point's octant. The angle is
  carried as a high and a low part (u and u^3 p(u^2), then each sum with a multiple of pi/4 exact), so it rounds once
  at the end."""
  a, b = abs(y), abs(x)
  steep = a > b
  n, d = b if steep else a, a if steep else b
  huge = d > 1e307   # n + d would overflow
  n, d = n * 0.5 if huge else n, d * 0.5 if huge else d
  both_infinite = a == np.inf and b == np.inf
  folded = n > ATAN_REDUCED_END * d or both_infinite
  u = (n - d if folded else n) / (n + d if folded else d)   # one division, the slowest step
  u = 0.0 if (d == 0.0 or both_infinite) else u
  s = u * u
  high, low = u, u * s * _horner(s * (2.0 / _ATAN_SQUARE_END) - 1.0, _ATAN_FIT)
  if folded: high, low = _minus(_QUARTER_PI, _QUARTER_PI_LOW, -high, -low)
  if steep: high, low = _minus(_HALF_PI, _HALF_PI_LOW, high, low)
  if math.copysign(1.0, x) < 0.0: high, low = _minus(_PI, _PI_LOW, high, low)
  r = math.copysign(high + low, y)
  return x + y if (x != x or y != y) else r


@njit(**JIT, forceinline=True)
def atan2_f32(y, x): return np.float32(atan2_f64(np.float64(y), np.float64(x)))


def _pi_scaled(precision: int) -> int:
  """pi * 2^precision, rounded down, from Machin's formula in integer arithmetic (64 guard bits)."""
  scale = 1 << (precision + 64)

  def arctan_inverse(n: int) -> int:   # arctan(1/n) * scale
    total, term, k, sign = 0, scale // n, 1, 1
    while term:
      total += sign * (term // k)
      term //= n * n
      k, sign = k + 2, -sign
    return total
  return (16 * arctan_inverse(5) - 4 * arctan_inverse(239)) >> 64


def _two_over_pi_words(words: int) -> np.ndarray:
  """0, then the bits of 2/pi after the binary point, 64 to a word (the first word holds bits 1-64)."""
  precision = 64 * words + 64
  bits = (2 << (2 * precision)) // _pi_scaled(precision)   # 2/pi * 2^precision
  return np.array([0] + [(bits >> (precision - 64 * (j + 1))) & ((1 << 64) - 1) for j in range(words)], np.uint64)


# A float32 of magnitude 1e6 or more is m * 2^e with an integer m < 2^24 and -4 <= e <= 104. Its product with 2/pi,
# modulo 4, needs the bits of 2/pi from e - 1 on (those before add multiples of 4, a whole turn) and 96 after. What
# is dropped is below 2^-70 of a quarter turn: it would cost an ulp only for a float32 within about 2^-46 of a
# multiple of pi/2, and with fewer than 2^32 float32 values the nearest are expected near 2^-32
# (tests/test_elementwise.py checks every exponent).
_TWO_OVER_PI = _two_over_pi_words(4)


@njit(**JIT, forceinline=True)
def _quarter_turns_of_large(d):
  """(k, f) with |d| * 2/pi = 4n + k + f, k an integer and |f| <= 1/2, for a float32 value d (held in float64) of
  magnitude 1e6 or more (Payne and Hanek's reduction) in 64-bit integers: the 96 bits of 2/pi the exponent needs
  are cut out of the words by shifts and selects (no table read at a computed index, which vectorizes as a
  gather: sin(x) * cos(y) on 16M took 80 ms that way, 48 ms this way), and their product with the 24-bit m,
  modulo 2^64, is |d| * 2/pi modulo 4 in fixed point with 62 bits after the point."""
  bits = reinterpret(np.float32(abs(d)), types.int32)
  m = np.uint64((bits & np.int32(0x7FFFFF)) | np.int32(0x800000))
  start = np.uint64(((bits >> np.int32(23)) & np.int32(0xFF)) - np.int32(150 + 1 - 63))   # bit e - 1, counted from -63
  word, shift = start >> np.uint64(6), start & np.uint64(63)
  w0 = _TWO_OVER_PI[0] if word == 0 else (_TWO_OVER_PI[1] if word == 1 else _TWO_OVER_PI[2])
  w1 = _TWO_OVER_PI[1] if word == 0 else (_TWO_OVER_PI[2] if word == 1 else _TWO_OVER_PI[3])
  w2 = _TWO_OVER_PI[2] if word == 0 else (_TWO_OVER_PI[3] if word == 1 else _TWO_OVER_PI[4])
  back = np.uint64(63) - shift   # a shift right by 64 - shift, in two steps: by 64 is undefined
  high = (w0 << shift) | ((w1 >> np.uint64(1)) >> back)
  low = ((w1 << shift) | ((w2 >> np.uint64(1)) >> back)) >> np.uint64(32)
  turns = m * high + ((m * low) >> np.uint64(32))   # wraps modulo 2^64: the whole turns drop out
  k = (turns + (np.uint64(1) << np.uint64(61))) >> np.uint64(62)
  return np.float64(k), np.float64(np.int64(turns - (k << np.uint64(62)))) * 2.168404344971009e-19   # 2^-62


# Below this magnitude a float32's angle is reduced by the two-part subtraction of multiples of pi/2
SMALL_ANGLE = 1e6


@njit(**JIT, forceinline=True)
def _small_quarter_turns(d):
  """(k, r): d = k * pi/2 + r with k an integer and |r| <= pi/4, for |d| < SMALL_ANGLE (two-part reduction)."""
  k = np.rint(d * 0.6366197723675814)
  r = (d - k * 1.5707963267341256) - k * 6.077100506506192e-11
  return k, (r if k != 0 else d)   # d itself keeps the sign of -0.0


@njit(**JIT, forceinline=True)
def _sine_of_reduced(k, r, quarter_turns):
  """sin(k * pi/2 + r + quarter_turns * pi/2) for |r| <= pi/4, in float64."""
  r2 = r * r
  s = r * (1.0 + r2 * (-1.0 / 6 + r2 * (1.0 / 120 + r2 * (-1.0 / 5040 + r2 * (1.0 / 362880 + r2 * (-1.0 / 39916800))))))
  c = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24 + r2 * (-1.0 / 720 + r2 * (1.0 / 40320 + r2 * (-1.0 / 3628800 + r2 / 479001600)))))
  q = (np.int64(k) + quarter_turns) & 3
  v = s if (q & 1) == 0 else c
  return -v if q >= 2 else v


@njit(**JIT, forceinline=True)
def _sine_of_shifted(x, quarter_turns):
  """sin(x + quarter_turns * pi / 2) for a float32 x, in float64: x less the nearest multiple of pi/2 (two-part
  reduction below SMALL_ANGLE, Payne and Hanek's past it), the quadrant moved by quarter_turns. cos is the shift by
  one: computed as sin(pi/2 - x) it lost every digit near its zeros. Selects only, no branches: a call of numpy's
  sin for large arguments in a branch kept LLVM from vectorizing every loop over sin or cos (16M cos: 200 -> 52 ms)."""
  d = np.float64(x)
  k, r = _small_quarter_turns(d)
  big_k, big_f = _quarter_turns_of_large(d)
  large, negative = abs(d) >= SMALL_ANGLE, d < 0
  k = (-big_k if negative else big_k) if large else k
  r = (-big_f if negative else big_f) * 1.5707963267948966 if large else r
  v = _sine_of_reduced(k, r, quarter_turns)
  return np.float32(v if abs(d) < np.inf else d - d)   # nan for inf and nan


@njit(**JIT, forceinline=True)
def sin_f32(x): return _sine_of_shifted(x, 0)


@njit(**JIT, forceinline=True)
def cos_f32(x): return _sine_of_shifted(x, 1)


# The small-angle versions are sin_f32 and cos_f32 for |x| < SMALL_ANGLE only (the same bits there), without the
# large-argument reduction that the whole-range versions compute for every element and then mostly discard. A
# kernel runs a block of elements with these while is_large_angle tells whether any argument needs the whole-range
# versions, and runs the block again with those if so (jit/render.py).
@njit(**JIT, forceinline=True)
def sin_f32_small_angle(x):
  k, r = _small_quarter_turns(np.float64(x))
  return np.float32(_sine_of_reduced(k, r, 0))


@njit(**JIT, forceinline=True)
def cos_f32_small_angle(x):
  k, r = _small_quarter_turns(np.float64(x))
  return np.float32(_sine_of_reduced(k, r, 1))


@njit(**JIT, forceinline=True)
def is_large_angle(x): return not abs(np.float64(x)) < SMALL_ANGLE   # inf and nan too


# ---- float64's sine and cosine for |x| < SMALL_ANGLE in float64 arithmetic LLVM vectorizes, within an ulp (0.74
# against mpmath; the C library's 0.52); larger arguments, infinities and NaNs take the C library's (the kernel's
# block runs again with sin_f64 / cos_f64, as for float32). 4M float64 sin in (0.1, 5), 2 cores: 30 ms with the
# C library's for each element, 8 ms so (numpy 60 on one core, torch 12).
def _half_pi_parts(chunk_bits: int = 33, chunks: int = 3) -> tuple:
  """pi/2 as chunks of chunk_bits significant bits each and a last part of a float's 53: k times a chunk is exact for
  |k| < 2^(53 - chunk_bits), and the sum of the four carries pi/2 to about 150 bits."""
  precision = 256
  rest, parts = _pi_scaled(precision) >> 1, []
  for _ in range(chunks):
    drop = rest.bit_length() - chunk_bits
    parts.append(math.ldexp(rest >> drop, drop - precision))
    rest -= (rest >> drop) << drop
  return (*parts, math.ldexp(float(rest), -precision))


_HALF_PI_1, _HALF_PI_2, _HALF_PI_3, _HALF_PI_4 = _half_pi_parts()
# sin(r) = r + r^3 S(r^2), cos(r) = 1 - r^2/2 + r^4 C(r^2): their power series, cut where the next term is below a
# thousandth of an ulp for |r| <= pi/4; highest power first
_SIN_SERIES = tuple((-1.0) ** n / math.factorial(2 * n + 1) for n in range(8, 0, -1))
_COS_SERIES = tuple((-1.0) ** n / math.factorial(2 * n) for n in range(8, 1, -1))


@njit(**JIT, forceinline=True)
def _quarter_turns_f64(x):
  """(k, r_high, r_low): x = k pi/2 + r_high + r_low, |r_high| <= pi/4 (about), for |x| < SMALL_ANGLE. The products
  of k with the first three parts of pi/2 are exact, and the subtractions keep their rounding errors, so r carries
  some 100 good bits even where x is near a multiple of pi/2."""
  k = np.rint(x * 0.6366197723675814)
  a = x - k * _HALF_PI_1   # exact: x and k pi/2 are within a factor of 2
  high, e1 = _two_sum(a, -(k * _HALF_PI_2))
  high, e2 = _two_sum(high, -(k * _HALF_PI_3))
  low = (e1 + e2) - k * _HALF_PI_4
  r = high + low
  return k, r, low - (r - high)


@njit(**JIT, forceinline=True)
def _sine_f64(x, quarter_turns):
  """sin(x + quarter_turns pi/2) for |x| < SMALL_ANGLE: sin or cos of the reduced r = high + low by their series,
  low entering as sin(high + low) = sin(high) + low cos(high), cos(high + low) = cos(high) - low sin(high); the
  cosine's 1 - r^2/2 with its rounding error kept."""
  k, high, low = _quarter_turns_f64(x)
  z = high * high
  sine = high + (low * (1.0 - 0.5 * z) + high * z * _horner(z, _SIN_SERIES))
  half_z = 0.5 * z
  w = 1.0 - half_z
  cosine = w + (((1.0 - w) - half_z) + (z * z * _horner(z, _COS_SERIES) - high * low))
  q = (np.int64(k) + quarter_turns) & 3
  v = sine if (q & 1) == 0 else cosine
  return -v if q >= 2 else v


@njit(**JIT, forceinline=True)
def sin_f64_small_angle(x):
  v = _sine_f64(x, 0)
  return x if x == 0.0 else v   # -0.0 keeps its sign


@njit(**JIT, forceinline=True)
def cos_f64_small_angle(x): return _sine_f64(x, 1)


# the whole-range versions: a branch (a block with a large argument runs them for all its elements, each of which
# gets the bits it gets in any other block)
@njit(**JIT)
def sin_f64(x): return sin_f64_small_angle(x) if abs(x) < SMALL_ANGLE else math.sin(x)


@njit(**JIT)
def cos_f64(x): return cos_f64_small_angle(x) if abs(x) < SMALL_ANGLE else math.cos(x)


# ---- float to integer, as numpy and torch on x86 give it (C leaves it undefined): a NaN or a value out of
# the type's range becomes the type's minimum (int32, int64); smaller ints wrap the int32 value; unsigned types
# above the signed range go through the signed conversion shifted by half the range.
@njit(**JIT)
def float_to_i32(x):
  return np.int32(x) if (x >= -2147483648.0) & (x < 2147483648.0) else np.int32(-2147483648)


@njit(**JIT)
def float_to_i64(x):
  in_range = (x >= -9.223372036854775808e18) & (x < 9.223372036854775808e18)
  return np.int64(x) if in_range else np.int64(-9223372036854775808)


@njit(**JIT)
def float_to_u32(x):
  high = x >= 2147483648.0
  return np.uint32(float_to_i32(x - 2147483648.0 if high else x) ^ (np.int32(-2147483648) if high else np.int32(0)))


@njit(**JIT)
def float_to_u64(x):
  high = x >= 9.223372036854775808e18
  return np.uint64(float_to_i64(x - 9.223372036854775808e18 if high else x) ^ (np.int64(-9223372036854775808) if high else np.int64(0)))


# ---- integer and NaN-aware helpers
# A dividend of magnitude below 2**53 (9007199254740992) divides in float64, truncated: exact (as idiv32's below), and
# about 6x faster than 64-bit integer division (16M int64 // 7: 60 -> 10 ms in a loop of its own; numpy 24-53). The
# bound is written out: the GPU build of these functions sees no module constants.
@njit(**JIT)
def idiv(a, b):
  """Integer division rounding toward zero; 0 where b == 0. Never through abs(), which keeps the minimum of a
  signed type negative; the minimum over -1 wraps rather than trapping."""
  if b == 0: return a - a
  if -9007199254740992.0 < a < 9007199254740992.0: return a - a + np.int64(np.float64(a) / np.float64(b))
  if b == -1: return -a
  q = a // b   # rounds down: one up where the signs differ and b does not divide a
  return q + 1 if (q * b != a) & ((a < 0) != (b < 0)) else q


@njit(**JIT)
def imod(a, b):
  """Remainder of idiv: a - idiv(a, b) * b (sign of a); 0 where b == 0, as numpy's."""
  return a - idiv(a, b) * b if b != 0 else a - a


# Unsigned division apart: mixing an unsigned value with a signed constant (b == -1, q + 1) computes in float64
@njit(**JIT)
def udiv(a, b):
  if b == 0: return a - a
  return a - a + np.uint64(np.float64(a) / np.float64(b)) if a < 9007199254740992.0 else a // b


@njit(**JIT)
def umod(a, b): return a % b if b != 0 else a - a


# Ints of at most 32 bits divide in float64, truncated: exact there (an integer quotient is exactly representable,
# any other lies at least 1/|b| >= 2**-32 of its size from an integer, far past float64's rounding), and float
# division vectorizes where integer division does not (benchmark elementwise_int_floordiv_const, 16M int32 // 7:
# 153 -> 3.4 ms; numpy 11.6, torch 54).
# The quotient is int64, so the minimum over -1 (2**31) wraps when the caller casts it back.
@njit(**JIT)
def idiv32(a, b): return np.int64(np.float64(a) / np.float64(b if b != 0 else 1)) if b != 0 else np.int64(0)


@njit(**JIT)
def imod32(a, b): return np.int64(a) - idiv32(a, b) * np.int64(b) if b != 0 else np.int64(0)


@njit(**JIT)
def gcd_magnitude(a, b):
  """The greatest common divisor of |a| and |b| by Euclid's algorithm (0 for two zeros), in uint64: exact for every
  int, the magnitude of a signed type's minimum too, which the caller's cast wraps back to that minimum (as torch's)."""
  x, y = np.uint64(a), np.uint64(b)
  if a < 0: x = ~x + np.uint64(1)   # the magnitude, negated in two's complement
  if b < 0: y = ~y + np.uint64(1)
  while y != 0: x, y = y, x % y
  return x


# `|` rather than `or`: no branch, so LLVM turns it into a vector select
@njit(**JIT)
def fmax(a, b): return a if ((a > b) | (a != a)) else b


@njit(**JIT)
def fmin(a, b): return a if ((a < b) | (a != a)) else b


# ---- float max/min along a loop: compare order-preserving integer keys (ints compare with vector
# instructions where LLVM will not vectorize a float select), and track NaN separately
@njit(**JIT)
def order_key32(x):
  bits = reinterpret(np.float32(x), types.int32)
  return np.int32(bits ^ ((bits >> np.int32(31)) & np.int32(0x7FFFFFFF)))


@njit(**JIT)
def from_order_key32(key):
  return reinterpret(np.int32(key ^ ((key >> np.int32(31)) & np.int32(0x7FFFFFFF))), types.float32)


@njit(**JIT)
def order_key64(x):
  bits = reinterpret(np.float64(x), types.int64)
  return bits ^ ((bits >> np.int64(63)) & np.int64(0x7FFFFFFFFFFFFFFF))


@njit(**JIT)
def from_order_key64(key):
  return reinterpret(key ^ ((key >> np.int64(63)) & np.int64(0x7FFFFFFFFFFFFFFF)), types.float64)


# ---- accumulate steps of reductions (see REDUCE_JIT)
@njit(**REDUCE_JIT)
def radd(acc, value): return acc + value

