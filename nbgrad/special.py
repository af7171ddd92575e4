"""Special functions composed from Tensor ops: polygamma (digamma is n = 0), erfinv, the modified Bessel functions
I0 and I1, and the regularized incomplete gamma functions. Each takes a float tensor outside the graph and returns its
values; Tensor's methods put them in the graph with their derivatives (igamma and igammac, of two tensors, do that
here: igamma below).

float32 (and the 16-bit types, through float32) computes in float64 and rounds once: the shifted recurrences and
series below round 10 to 40 times, which float32 would feel; from float64 the float32 results came within half an
ulp of the exact values on the tests' inputs."""
from __future__ import annotations
import functools
import math
from fractions import Fraction
from nbgrad.dtype import dtypes, HALF_FLOATS

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
  exp(|x|) overflows from 709.8 on, I0 only from 713.99; and sqrt(2 pi x) as sqrt(x) sqrt(2 pi): 2 pi x overflowed
  past 2.9e307 (i0e gave 0, i0 nan)."""
  a = x.abs()
  near = a < BESSEL_SERIES_END
  small, large = near.where(a, 0), near.where(BESSEL_SERIES_END, a)
  series = horner((small * 0.5) * (small * 0.5), bessel_series(order)) * (small * 0.5) ** order
  if scaled: series = series * (-small).exp()
  asymptotic = horner(large.reciprocal(), bessel_asymptotic(order)) / (large.sqrt() * math.sqrt(2 * math.pi))
  if not scaled: asymptotic = ((large * 0.5).exp() * asymptotic) * (large * 0.5).exp()
  magnitude = near.where(series, asymptotic)
  return (x < 0).where(-magnitude, magnitude) if order % 2 else magnitude


# ---- the regularized incomplete gamma functions P(a, x) = gamma(a, x) / Gamma(a) and Q(a, x) = 1 - P(a, x)
# A fused kernel has no loops of its own: each way of computing them takes a fixed number of terms, enough over the
# region it serves, every element computes every way and keeps one, and the other of P and Q is 1 minus the one kept
# (the smaller, at most about 1/2). Against mpmath on 4,500 points from a = 1e-5 to 1e5, float64 came within 2e-14
# relatively where P and Q are above 1e-30 and within 2e-13 in the far tails (the rounding of exp's argument there):
# - a > 20 and x / a in TEMME_BAND, around the median, where the others converge slowly: Temme's uniform expansion
# - x <= Q_SERIES_END and a small against x (P near 1): Q as 1 - x^a / Gamma(1 + a) and the rest of P's power series
# - x > Q_SERIES_END and x > a: Q by Legendre's continued fraction for Gamma(a, x)
# - elsewhere (x <= a, or x small with a not): P by the continued fraction for gamma(a, x)
TEMME_START, TEMME_BAND = 20.0, (0.7, 1.3)
Q_SERIES_END = 2.0
STIRLING_START = 10.0   # from it Gamma(a) by Stirling's series, which keeps the digits x^a e^-x / Gamma(a) cancels
Q_SERIES_TERMS, Q_FRACTION_LEVELS, P_FRACTION_LEVELS = 22, 32, 32   # those points needed 20, 24 and 29
EULER_GAMMA = 0.5772156649015329


def _in_pairs(t, coefficients):
  """c0 + c1 t + c2 t^2 + ... (as horner) by Estrin's scheme, pairs of terms combined with t^2, t^4, ...: as many
  operations, but a chain 2 log2(n) deep instead of 2n, which the scheduler keeps in one kernel (it cuts deeper
  chains into kernels of their own, each a compile). The coefficients may be tensors."""
  terms, power = list(coefficients), t
  while len(terms) > 1:
    terms = [terms[i] + power * terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    if len(terms) > 1: power = power * power
  return terms[0]


def _zeta_minus_one(k: int) -> Fraction:
  """zeta(k) - 1 for k >= 2: the terms below 10, and the rest by the Euler-Maclaurin formula (within 1e-28)."""
  b, start = bernoulli(16), 10
  total = sum(Fraction(1, n ** k) for n in range(2, start)) + Fraction(1, (k - 1) * start ** (k - 1)) + Fraction(1, 2 * start ** k)
  rising = Fraction(k)   # k (k + 1) ... (k + 2j - 2)
  for j in range(1, 8):
    total += b[2 * j] / math.factorial(2 * j) * rising / Fraction(start) ** (k + 2 * j - 1)
    rising *= (k + 2 * j - 1) * (k + 2 * j)
  return total


@functools.lru_cache(maxsize=None)
def log_gamma_2p_series(reach: float = 0.2) -> tuple:
  """c_k with log Gamma(2 + a) = sum_{k>=1} c_k a^k for |a| < 1: c_1 = 1 - Euler's gamma, c_k = (-1)^k (zeta(k) - 1) / k;
  as many as reach TINY_PART at a = reach (the series converges for |a| < 2)."""
  return _terms_until_tiny(lambda k: 1 - EULER_GAMMA if k == 0 else (-1) ** (k + 1) * _zeta_minus_one(k + 1) / (k + 1), 0.4, reach)


@functools.lru_cache(maxsize=None)
def log_gamma_star_series() -> tuple:
  """c_m with log(Gamma(a) / (sqrt(2 pi / a) (a / e)^a)) = sum_{m>=1} c_m a^(1 - 2m) (Stirling's series, c_m =
  B_2m / (2m (2m - 1))): as many as reach TINY_PART from a = STIRLING_START on."""
  b = bernoulli(60)
  return _terms_until_tiny(lambda k: b[2 * k + 2] / ((2 * k + 2) * (2 * k + 1)), 1.0, STIRLING_START ** -2)


def _eta(ratio: float) -> float:
  """Temme's eta for x / a = ratio: eta^2 / 2 = ratio - 1 - log(ratio), eta of the sign of ratio - 1."""
  return math.copysign(math.sqrt(2 * (ratio - 1 - math.log(ratio))), ratio - 1)


@functools.lru_cache(maxsize=None)
def temme_coefficients() -> tuple:
  """d[k][n] of Temme's uniform expansion Q(a, x) = erfc(eta sqrt(a / 2)) / 2 + R, R = exp(-a eta^2 / 2) /
  sqrt(2 pi a) sum_k a^-k sum_n d[k][n] eta^n (Temme 1979, DLMF 8.12): the Taylor coefficients of c_0 = 1 / mu -
  1 / eta and c_k = c_{k-1}' / eta + (-1)^k g_k / mu, for mu = x / a - 1 as a series in eta and g_k those of
  Gamma(a) / (sqrt(2 pi / a) (a / e)^a) = sum_k g_k a^-k. Row k keeps its terms up to the last that reaches
  TINY_PART (of d[0][0]) over the band from TEMME_START on; the rows end at the first with none."""
  rows_wanted, terms_wanted = 16, 30
  length = terms_wanted + 2 * rows_wanted + 2   # each row's derivative over eta takes two orders from the next
  mu = [Fraction(0), Fraction(1)]   # from mu mu' = eta (1 + mu), what eta deta = (1 - 1 / lambda) dlambda says
  for k in range(2, length + 2):
    mu.append((mu[k - 1] - sum((k + 1 - i) * mu[i] * mu[k + 1 - i] for i in range(2, k))) / (k + 1))
  inverse = [Fraction(1)]   # eta / mu = sum inverse[n] eta^n
  for n in range(1, length):
    inverse.append(-sum(mu[j + 1] * inverse[n - j] for j in range(1, n + 1)))
  log_star = [Fraction(0)] * rows_wanted   # log of g's series: Stirling's, in 1/a
  b = bernoulli(2 * rows_wanted + 2)
  for m in range(1, rows_wanted // 2 + 1): log_star[2 * m - 1] = b[2 * m] / (2 * m * (2 * m - 1))
  g = [Fraction(1)]   # exp of it, from g' = log_star' g
  for n in range(1, rows_wanted): g.append(sum(j * log_star[j] * g[n - j] for j in range(1, n + 1)) / n)
  c, rows = inverse[1:], []
  eta_end = max(abs(_eta(end)) for end in TEMME_BAND)
  for k in range(rows_wanted):
    if k:   # the 1 / eta terms of c_{k-1}' / eta and of g_k / mu cancel
      c = [(n + 2) * c[n + 2] + (-1) ** k * g[k] * inverse[n + 1] for n in range(len(c) - 2)]
    kept = [n for n in range(terms_wanted) if abs(c[n]) * eta_end ** n / TEMME_START ** k >= TINY_PART / 3]
    if not kept: break
    rows.append(tuple(float(d) for d in c[:kept[-1] + 1]))
  return tuple(rows)


def _log_ratio_excess(a, x, t):
  """phi = lambda - 1 - log(lambda) for lambda = x / a = 1 + t. For |t| < 1/2, where it cancels, from log(1 + t) =
  2 atanh(u) for u = t / (2 + t): phi = t u - 2 u^3 (1/3 + u^2 / 5 + ...); an ulp of log(lambda) is a * 1e-17 in
  the exponent a phi, 1e-12 at a = 1e5."""
  near = t.abs() < 0.5
  s = near.where(t, 0.0)
  u = s / (2 + s)
  square = u * u
  series = s * u - 2 * u * square * _in_pairs(square, _terms_until_tiny(lambda k: Fraction(1, 2 * k + 3), 1 / 3, 1 / 9))
  return near.where(series, t - (x / a).log())


def _log_power_over_gamma(a, x, log_x, phi):
  """log(x^a e^-x / Gamma(a)); from a = STIRLING_START on as log(sqrt(a / (2 pi)) / Gamma*(a)) - a phi, which
  leaves out the cancelling a log(x) - x - log Gamma(a) (each of size a log(a))."""
  large = a >= STIRLING_START
  big = large.where(a, STIRLING_START)
  r = big.reciprocal()
  stirling = (big * (1 / (2 * math.pi))).log() * 0.5 - r * _in_pairs(r * r, log_gamma_star_series()) - big * phi
  return large.where(stirling, a * log_x - x - a.lgamma())


def _p_fraction(a, x):
  """gamma(a, x) x^-a e^x = 1 / (a - a x / (a + 1 + x / (a + 2 - (a + 1) x / (a + 3 + 2 x / (a + 4 - ...))))),
  evaluated from its P_FRACTION_LEVELS-th level up."""
  ax = a * x
  f = a + P_FRACTION_LEVELS
  for k in reversed(range(1, P_FRACTION_LEVELS + 1)):
    m = k // 2
    if k % 2: f = (a + (k - 1)) - (ax + x * m if m else ax) / f
    else: f = (a + (k - 1)) + x * m / f
  return f.reciprocal()


def _q_fraction(a, x):
  """Gamma(a, x) x^-a e^x = 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...))), evaluated
  from its Q_FRACTION_LEVELS-th level up. The fraction below level n tends to n + sqrt(n x) + (x - a) / 2 + 1/4 +
  (4 (x - a)^2 + 8 x - 1) / (32 sqrt(n x)) (from the levels' recurrence, term by term in 1 / sqrt(n)): started
  there, 30 levels reach what 48 did started at level n's own term, at x = 2 and a small."""
  n = Q_FRACTION_LEVELS
  shifted, root_x = x - a, x.sqrt()
  f = root_x * math.sqrt(n) + (n + 0.25) + shifted * 0.5 + (shifted * shifted * 4 + x * 8 - 1) / (root_x * (32 * math.sqrt(n)))
  for n in reversed(range(1, Q_FRACTION_LEVELS + 1)): f = (shifted + (2 * n - 1)) + (a - n) * n / f
  return f.reciprocal()


def _log_gamma_1p(a):
  """log Gamma(1 + a), also for a small a: below 0.2 as the series of log Gamma(2 + a) less log1p(a)."""
  small = a < 0.2
  s = small.where(a, 0.0)
  return small.where(s * _in_pairs(s, log_gamma_2p_series()) - s.log1p(), (1 + small.where(1.0, a)).lgamma())


def _q_series(a, x, log_x):
  """Q for a small x: 1 - x^a / Gamma(1 + a) - x^a / Gamma(a) sum_{n>=1} (-x)^n / (n! (a + n)), the first two as
  -expm1(z) for z = a log(x) - log Gamma(1 + a), which keeps a small Q (a small a) from cancelling."""
  z = a * log_x - _log_gamma_1p(a)
  rest = x * _in_pairs(x, [(-1) ** n / math.factorial(n) / (a + n) for n in range(1, Q_SERIES_TERMS + 1)])
  return -z.expm1() - a * z.exp() * rest


def _temme_tail(a, t, phi):
  """The smaller of P and Q near the median (Q for x >= a): erfc(sqrt(a phi)) / 2 plus R for Q, less R for P."""
  eta = (2 * phi).sqrt()
  eta = (t < 0).where(-eta, eta)
  rows, r = temme_coefficients(), a.reciprocal()
  later = len(rows) // 4   # the first rows hold as many terms as the rest: a kernel (of at most 192 nodes) each
  rest = _in_pairs(r, [_in_pairs(eta, row) for row in rows[later:]]).clone()
  total = _in_pairs(r, [_in_pairs(eta, row) for row in rows[:later]]) + r ** later * rest
  correction = (-(a * phi)).exp() / (a * (2 * math.pi)).sqrt() * total
  return (a * phi).sqrt().erfc() * 0.5 + (t < 0).where(-correction, correction)


def _smaller_tail(a, x):
  """(the smaller of P(a, x) and Q(a, x), roughly, and where it is Q) for finite positive float64 a and x."""
  t = (x - a) / a
  ratio, log_x = x / a, x.log()
  # each way's result in a buffer of its own: kernels of one way each, whose depth the scheduler need not cut into
  # many small kernels (each a compile)
  phi = _log_ratio_excess(a, x, t).clone()
  temme = (a > TEMME_START) & (ratio >= TEMME_BAND[0]) & (ratio <= TEMME_BAND[1])
  near_zero = x <= Q_SERIES_END
  small_a = (x < 0.5).where(-0.4 / log_x, 1.1 * x)   # below it P is above 1/2 or so
  q_series = near_zero & (a < small_a)
  q_fraction = near_zero.logical_not() & (x > a)
  front = _log_power_over_gamma(a, x, log_x, phi).exp().clone()
  fraction = q_fraction.where(front * _q_fraction(a, x).clone(), front * _p_fraction(a, x).clone())
  smaller = temme.where(_temme_tail(a, t, phi).clone(), q_series.where(_q_series(a, x, log_x).clone(), fraction))
  return smaller, temme.where(t >= 0, q_series | q_fraction)


def incomplete_gamma(a, x, upper: bool):
  """P(a, x), or Q(a, x) with upper, for float64 tensors of one shape; at the edges torch's values, in its order of
  cases: nan for a negative a or x, P = 1 for a = 0 (nan at x = 0), 0 for x = 0, 0 for a = inf (nan at x = inf), 1 for
  x = inf, and nan for a NaN left to the computation."""
  inside = (a > 0) & (x > 0) & (a < math.inf) & (x < math.inf)
  # buffers of their own before and after the bulk of the work, whose kernels are then the same for every input
  # dtype and for P and Q: its dozen compiles are paid once
  smaller, is_q = _smaller_tail(inside.where(a, 1.0).clone(), inside.where(x, 1.0).clone())
  smaller, is_q = smaller.clone(), is_q.clone()
  p_value, q_value = is_q.where(1 - smaller, smaller), is_q.where(smaller, 1 - smaller)
  one, zero = (0.0, 1.0) if upper else (1.0, 0.0)   # P's 1 and 0, as the result gives them
  value = inside.where(q_value if upper else p_value, math.nan)
  value = (x == math.inf).where(one, value)
  value = (a == math.inf).where((x == math.inf).where(math.nan, zero), value)
  value = (x == 0).where(zero, value)
  value = (a == 0).where((x > 0).where(one, math.nan), value)
  return ((x < 0) | (a < 0)).where(math.nan, value)


def igamma(a, x, upper: bool):
  """torch.igamma (torch.igammac with upper) at the Tensor level: P(a, x) (Q) of the tensor a and a tensor or number
  x, broadcast and promoted as a binary op (ints give the default float), computed in float64 and rounded once. The
  gradient by x is torch's, x^(a-1) e^-x / Gamma(a) (negated for Q); by a, torch's is not implemented, and backward
  raises NotImplementedError (a RuntimeError) where it needs it."""
  from nbgrad import autograd as F
  a, x = a._broadcasted(x)
  if not dtypes.is_float(a.dtype): a, x = a._float_input(), x._float_input()
  value = incomplete_gamma(a.detach().cast(dtypes.float64), x.detach().cast(dtypes.float64), upper).cast(a.dtype)
  needs_a_gradient, name = bool(a.requires_grad), "igammac" if upper else "igamma"

  def gradient(a, x, result, grad):
    if needs_a_gradient: raise NotImplementedError(f"the derivative of {name} by its first argument (a) is not implemented, as in torch")
    wide = dtypes.float32 if a.dtype in HALF_FLOATS else a.dtype
    a, x = a.cast(wide), x.cast(wide)
    slope = ((a - 1) * x.log() - x - a.lgamma()).exp().cast(grad.dtype)
    return None, grad * (-slope if upper else slope)
  return F.custom(lambda *inputs: value.lazydata, gradient, a, x)
