"""Special functions composed from Tensor ops: polygamma (digamma is n = 0), erfinv and the modified Bessel
functions I0 and I1. Each takes a float tensor outside the graph and returns its values; Tensor's methods put them
in the graph with their derivatives.

float32 (and the 16-bit types, through float32) computes in float64 and rounds once: the shifted recurrences and
series below round 10 to 40 times, which float32 would feel; from float64 the float32 results came within half an
ulp of the exact values on the tests' inputs."""
from __future__ import annotations
import functools
import math
from fractions import Fraction
from nbgrad.dtype import dtypes

TINY_PART = 2.0 ** -56   # a series stops where its next term is below this part of its first (1/8 ulp in float64)


def in_float64(fn):
  """fn computed in float64 and rounded once to the input's dtype."""
  @functools.wraps(fn)
  def computed(x, *args):
    if x.dtype == dtypes.float64: return fn(x, *args)
    return fn(x.cast(dtypes.float64), *args).cast(x.dtype)
  return computed


def horner(t, coefficients):
  """c0 + c1 t + c2 t^2 + ... for a tensor t and Python numbers c."""
  total = coefficients[-1]
  for c in reversed(coefficients[:-1]): total = c + t * total
  return total


# ---- polygamma: psi^(n)(x), the n-th derivative of digamma
@functools.lru_cache(maxsize=None)
def bernoulli(count: int) -> tuple:
  """B_0 .. B_count as exact fractions, from sum_{j<=m} C(m+1, j) B_j = 0."""
  numbers = [Fraction(1)]
  for m in range(1, count + 1): numbers.append(-sum(math.comb(m + 1, j) * numbers[j] for j in range(m)) / (m + 1))
  return tuple(numbers)


@functools.lru_cache(maxsize=None)
def asymptotic_series(n: int) -> tuple:
  """(start, coefficients): from y = start on, psi^(n)(y) for n >= 1 is (-1)^(n+1) (n-1)! r^n (1 + n r / 2 +
  sum_k c_k r^2k) with r = 1/y; for n = 0 it is log(y) - r / 2 - sum_k c_k r^2k. Higher n needs a larger start,
  where the terms fall as fast."""
  start = 10
  while True:
    b, coefficients = bernoulli(60), []
    for k in range(1, 30):
      c = b[2 * k] / (2 * k) if n == 0 else b[2 * k] * math.comb(2 * k + n - 1, 2 * k)
      if abs(c) / start ** (2 * k) < TINY_PART: return start, tuple(float(c) for c in coefficients)
      coefficients.append(c)
    start += 5


def _asymptotic(n: int, y):
  """psi^(n)(y) for y at the series' start or beyond."""
  coefficients = asymptotic_series(n)[1]
  r = y.reciprocal()
  tail = horner(r * r, (0.0,) + coefficients)
  if n == 0: return y.log() - r * 0.5 - tail
  return (r ** n) * ((-1) ** (n + 1) * math.factorial(n - 1)) * (1 + r * (n / 2) + tail)


def _shifted(n: int, x):
  """psi^(n)(x) for x >= 0: psi^(n)(x) = psi^(n)(x + K) - (-1)^n n! sum_{k<K} (x + k)^-(n+1) moves x below the
  series' start past it."""
  start = asymptotic_series(n)[0]
  near = x < start
  steps = 0.0
  for k in reversed(range(start)): steps = steps + (x + k).reciprocal() ** (n + 1)   # the smallest terms first
  far = _asymptotic(n, near.where(x + start, x))
  return near.where(far - steps * ((-1) ** n * math.factorial(n)), far)


@functools.lru_cache(maxsize=None)
def cot_derivative(n: int) -> tuple:
  """The coefficients (lowest first) of the polynomial P_n with d^n/du^n cot(u) = P_n(cot(u)):
  P_0 = c and P_{k+1} = -(1 + c^2) P_k'(c)."""
  p = (0, 1)
  for _ in range(n):
    slope = [i * p[i] for i in range(1, len(p))] + [0, 0]
    p = tuple(-(slope[i] + (slope[i - 2] if i >= 2 else 0)) for i in range(len(slope)))
  return tuple(float(c) for c in p)


# sin(pi t) for |t| <= 1/2 by its power series, to t^27 (the next term below 1e-22): in Tensor arithmetic, where
# float64's sin is a call into the C library that keeps the kernel's loop from vectorizing. digamma of 4M float32
# (2 busy cores) took 117-122 ms with it, 32-36 ms so (trigamma 82-100 / 26).
SIN_PI_SERIES = tuple((-1) ** k * math.pi ** (2 * k + 1) / math.factorial(2 * k + 1) for k in range(14))


def _sin_pi(t): return t * horner(t * t, SIN_PI_SERIES)


@in_float64
def polygamma(x, n: int):
  """psi^(n)(x). Below 0 by the reflection formula differentiated n times,
  psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x)), with cot(pi x) of x's signed distance f to the
  nearest integer: pi x would lose the digits of a large x. At the poles (0, the negative integers) digamma is
  torch's: -inf at +0, inf at -0, nan below 0; the higher derivatives are their one-sided limit, inf times the
  sign of (-1)^(n+1). -inf is a pole too; inf gives the limit, inf for digamma and 0 above."""
  negative = x < 0
  value = _shifted(n, negative.where(1 - x, x))
  fraction = x - x.round()   # cos(pi f) as sin(pi (1/2 - |f|)): exact near |f| = 1/2, where cot crosses 0
  cot = _sin_pi(0.5 - fraction.abs()) / _sin_pi(fraction)
  reflected = value * (-1) ** n - horner(cot, cot_derivative(n)) * math.pi ** (n + 1)
  pole = (x <= 0) & (x == x.floor())
  if n == 0: at_pole = (x == 0).where(-x.reciprocal(), math.nan)
  else: at_pole = math.inf * (-1) ** (n + 1)
  return pole.where(at_pole, negative.where(reflected, value))


# ---- erfinv
# Wichura's algorithm AS 241 (PPND16, Applied Statistics 37, 1988): the standard normal quantile as rational
# functions of degree 7 in three ranges, within about 1e-16; erfinv(a) = quantile((1 + a) / 2) / sqrt(2).
# Each range: (numerator, denominator) coefficients, the lowest power first.
CENTRAL_END, TAIL_SPLIT = 0.85, 5.0   # |x| up to 0.85: the central ratio in 0.180625 - (x/2)^2; then r = sqrt(-log((1-|x|)/2))
QUANTILE_CENTRAL = ((3.3871328727963666080e0, 1.3314166789178437745e+2, 1.9715909503065514427e+3, 1.3731693765509461125e+4,
                     4.5921953931549871457e+4, 6.7265770927008700853e+4, 3.3430575583588128105e+4, 2.5090809287301226727e+3),
                    (1.0, 4.2313330701600911252e+1, 6.8718700749205790830e+2, 5.3941960214247511077e+3, 2.1213794301586595867e+4,
                     3.9307895800092710610e+4, 2.8729085735721942674e+4, 5.2264952788528545610e+3))
QUANTILE_NEAR_TAIL = ((1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0, 3.64784832476320460504e0,
                       1.27045825245236838258e0, 2.41780725177450611770e-1, 2.27238449892691845833e-2, 7.74545014278341407640e-4),
                      (1.0, 2.05319162663775882187e0, 1.67638483018380384940e0, 6.89767334985100004550e-1, 1.48103976427480074590e-1,
                       1.51986665636164571966e-2, 5.47593808499534494600e-4, 1.05075007164441684324e-9))
QUANTILE_FAR_TAIL = ((6.65790464350110377720e0, 5.46378491116411436990e0, 1.78482653991729133580e0, 2.96560571828504891230e-1,
                      2.65321895265761230930e-2, 1.24266094738807843860e-3, 2.71155556874348757815e-5, 2.01033439929228813265e-7),
                     (1.0, 5.99832206555887937690e-1, 1.36929880922735805310e-1, 1.48753612908506148525e-2, 7.86869131145613259100e-4,
                      1.84631831751005468180e-5, 1.42151175831644588870e-7, 2.04426310338993978564e-15))


def _ratio(t, coefficients):
  numerator, denominator = coefficients
  return horner(t, numerator) / horner(t, denominator)


def erfinv(x):
  """The y with erf(y) = x, from AS 241 in float64 (within 4 ulp; float32 and the 16-bit types round that once),
  and for float64 one Halley step through the C library's erf and erfc, which brings it within an ulp (against
  mpmath: float32 within half an ulp, float64 within one). 4M values, as Giles' approximation and Halley steps / so
  (2 busy cores): float32 97-102 / 29-30 ms, float64 590-630 / 90-175 ms."""
  if x.dtype == dtypes.float64: return _erfinv(x, refined=True)
  return _erfinv(x.cast(dtypes.float64), refined=False).cast(x.dtype)


def _erfinv(x, refined: bool):
  a = x.abs()
  inside = a < 1
  a_inside = inside.where(a, 0.5)   # the formulas see |x| < 1 only
  y = _quantile_guess(a_inside)
  if refined: y = _halley_step(y.clone(), a_inside)   # the guess's kernel vectorizes; with erf's calls in it, it would not
  magnitude = inside.where(y, (a == 1).where(math.inf, math.nan))   # inf at 1, nan past it
  return (a == 0).where(x, (x < 0).where(-magnitude, magnitude))   # x itself at 0 keeps -0


def _quantile_guess(a):
  """erfinv(a) for a in [0, 1) by AS 241. 1 - a is exact where the tails use it (a > 0.85), and the central range
  multiplies a itself, so the subnormals keep their digits."""
  central = a.minimum(CENTRAL_END)
  central_value = central * _ratio(0.180625 - central * central * 0.25, QUANTILE_CENTRAL) * (0.5 * math.sqrt(0.5))
  r = (-((1 - a.maximum(CENTRAL_END)) * 0.5).log()).sqrt()
  tail_value = (r <= TAIL_SPLIT).where(_ratio(r.minimum(TAIL_SPLIT) - 1.6, QUANTILE_NEAR_TAIL),
                                       _ratio(r.maximum(TAIL_SPLIT) - TAIL_SPLIT, QUANTILE_FAR_TAIL)) * math.sqrt(0.5)
  return (a <= CENTRAL_END).where(central_value, tail_value)


def _halley_step(y, a):
  """One Halley step toward erf(y) = a for a in [0, 1): y - u / (1 + y u), u = (erf(y) - a) / erf'(y). From 0.5 on
  erf(y) - a is taken as (1 - a) - erfc(y), where 1 - a is exact and erfc keeps the digits 1 - erf loses."""
  residual = (a >= 0.5).where((1 - a) - y.erfc(), y.erf() - a)
  u = residual / ((-(y * y)).exp() * (2 / math.sqrt(math.pi)))
  return y - u / (1 + y * u)


# ---- modified Bessel functions of the first kind, I0 and I1
BESSEL_SERIES_END = 20.0   # below it the power series (36 terms), from it the asymptotic one (27 terms)


def _terms_until_tiny(term, first: float, at: float) -> tuple:
  """term(0), term(1), ... up to the first whose size at `at` (term * at^k) is below TINY_PART of first."""
  terms = []
  while not terms or abs(terms[-1]) * at ** (len(terms) - 1) >= TINY_PART * first: terms.append(term(len(terms)))
  return tuple(float(t) for t in terms)


@functools.lru_cache(maxsize=None)
def bessel_series(order: int) -> tuple:
  """I_order(x) = (x/2)^order sum_k t^k / (k! (k + order)!) for t = x^2/4: the coefficients."""
  t = BESSEL_SERIES_END ** 2 / 4
  first = math.exp(BESSEL_SERIES_END) / math.sqrt(2 * math.pi * BESSEL_SERIES_END) / (BESSEL_SERIES_END / 2) ** order
  return _terms_until_tiny(lambda k: Fraction(1, math.factorial(k) * math.factorial(k + order)), first, t)


@functools.lru_cache(maxsize=None)
def bessel_asymptotic(order: int) -> tuple:
  """I_order(x) ~ exp(x) / sqrt(2 pi x) sum_k (-1)^k a_k / x^k, a_k = prod_{j<=k} (4 order^2 - (2j-1)^2) / (k! 8^k):
  the coefficients (-1)^k a_k."""
  def term(k):
    return math.prod(Fraction((2 * j - 1) ** 2 - 4 * order * order, 8 * j) for j in range(1, k + 1))
  return _terms_until_tiny(term, 1.0, 1 / BESSEL_SERIES_END)


@in_float64
def bessel(x, order: int, scaled: bool):
  """I_order(x) (times exp(-|x|) when scaled, torch's i0e and i1e). The asymptotic exp(|x|) is taken as two halves:
  exp(|x|) overflows from 709.8 on, I0 only from 713.99."""
  a = x.abs()
  near = a < BESSEL_SERIES_END
  small, large = near.where(a, 0), near.where(BESSEL_SERIES_END, a)
  series = horner((small * 0.5) * (small * 0.5), bessel_series(order)) * (small * 0.5) ** order
  if scaled: series = series * (-small).exp()
  asymptotic = horner(large.reciprocal(), bessel_asymptotic(order)) / (large * (2 * math.pi)).sqrt()
  if not scaled: asymptotic = ((large * 0.5).exp() * asymptotic) * (large * 0.5).exp()
  magnitude = near.where(series, asymptotic)
  return (x < 0).where(-magnitude, magnitude) if order % 2 else magnitude
