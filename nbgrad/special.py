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
from nbgrad import erf_fits
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
  cot = ((0.5 - fraction.abs()) * math.pi).sin() / (fraction * math.pi).sin()
  reflected = value * (-1) ** n - horner(cot, cot_derivative(n)) * math.pi ** (n + 1)
  pole = (x <= 0) & (x == x.floor())
  if n == 0: at_pole = (x == 0).where(-x.reciprocal(), math.nan)
  else: at_pole = math.inf * (-1) ** (n + 1)
  return pole.where(at_pole, negative.where(reflected, value))


# ---- erfinv
# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single precision: polynomials in
# w - 2.5 (w < 5) and sqrt(w) - 3 (w to 16) for w = -log(1 - x^2), within 4e-7 there
GILES_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                 -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)
GILES_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844, 0.00134934322,
              0.000100950558, -0.000200214257)
GILES_END = 16.0   # past it (float64's 1 - |x| below 1e-7) Giles' tail drifts, to 12% at the last float64 below 1


def _far_tail_guess(q):
  """erfinv(1 - q) for a tiny q from erfc(y) ~ exp(-y^2) / (y sqrt(pi)) (1 - 1/(2y^2) + 3/(4y^4)), solved for y
  by two fixed-point steps: within 1e-4."""
  log_q = q.log()
  y = (-log_q).sqrt()
  for _ in range(2):
    correction = (1 + (-0.5 + 0.75 / (y * y)) / (y * y)).log()
    y = (correction - log_q - (y * math.sqrt(math.pi)).log()).sqrt()
  return y


def _fitted_erf_and_erfc(y):
  """erf(y) for y below 2 and erfc(y) for y >= 0, from nbgrad/erf_fits.py's polynomials: within 3e-12 relatively,
  all Tensor arithmetic (one fused kernel, no calls to the C library's erf)."""
  near = y * horner(y * y * 0.5 - 1, erf_fits.NEAR)
  far = (-(y * y)).exp() * horner(erf_fits.far_variable(y.maximum(erf_fits.NEAR_END).minimum(erf_fits.FAR_END)), erf_fits.FAR)
  return near, (y <= erf_fits.NEAR_END).where(1 - near, far)


def _halley_step(y, a, fitted: bool):
  """One Halley step toward erf(y) = a for a in [0, 1): y - u / (1 + y u), u = (erf(y) - a) / erf'(y). From 0.5 on
  erf(y) - a is taken as (1 - a) - erfc(y), where 1 - a is exact and erfc keeps the digits 1 - erf loses. With
  fitted, erf and erfc are the fitted polynomials (enough for results rounded to float32), else the C library's."""
  erf, erfc = _fitted_erf_and_erfc(y) if fitted else (y.erf(), y.erfc())
  residual = (a >= 0.5).where((1 - a) - erfc, erf - a)
  u = residual / ((-(y * y)).exp() * (2 / math.sqrt(math.pi)))
  return y - u / (1 + y * u)


def erfinv(x):
  """The y with erf(y) = x: Giles' approximation (or the far tail's guess) and two Halley steps in float64, within
  1e-15. A float32 (or 16-bit) x, whose 1 - |x| is never small enough for the far tail, takes one Halley step from
  Giles' guess with the fitted erf, within 3e-12 before its rounding: 4M float32 took 550 ms with two steps through
  the C library's erf, 100 ms so."""
  if x.dtype == dtypes.float64: return _erfinv(x, fitted=False)
  return _erfinv(x.cast(dtypes.float64), fitted=True).cast(x.dtype)


def _erfinv(x, fitted: bool):
  a = x.abs()
  inside = a < 1
  a_inside = inside.where(a, 0.5)   # the formulas see |x| < 1 only
  w = -((1 - a_inside) * (1 + a_inside)).log()
  central, far = w < 5, w >= GILES_END
  guess = central.where(horner(central.where(w, 2.5) - 2.5, GILES_CENTRAL),
                        horner(central.where(5, far.where(5, w)).sqrt() - 3, GILES_TAIL)) * a_inside
  if fitted: return _signed(x, a, inside, _halley_step(guess, a_inside, True))   # one step cubes Giles' 4e-7
  y = far.where(_far_tail_guess(far.where(1 - a_inside, 1e-20)), guess)
  for _ in range(2): y = _halley_step(y, a_inside, False)
  return _signed(x, a, inside, y)


def _signed(x, a, inside, y):
  """erfinv(x) from y = erfinv(|x|) for |x| < 1: inf at 1, nan past it, and x itself at +-0."""
  magnitude = inside.where(y, (a == 1).where(math.inf, math.nan))
  return (a == 0).where(x, (x < 0).where(-magnitude, magnitude))   # x itself at 0 keeps -0


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
