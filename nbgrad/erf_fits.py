"""Polynomial fits of erf and erfc for the CPU kernels' float32 erf and erfc (nbgrad/jit/runtime.py): each a
polynomial of degree 13 in a variable t on [-1, 1], interpolated at Chebyshev points from the C library's float64 values when nbgrad loads.

- below |x| = 2, erf(x) = x NEAR(t) with t = x^2 / 2 - 1: within 3e-13 relatively;
- from 2 to 4, erfc(x) = MID(t) with t = x - 3: within 7e-11 absolutely (erfc is below 5e-3 there);
- from 2 to 10.5, erfc(x) = exp(-x^2) FAR(t) with t the map of 1/x onto [-1, 1]: within 3e-12 relatively; FAR is
  exp(x^2) erfc(x), slowly varying (1 / (x sqrt(pi)) at large x).

The coefficients are below 1, lowest power first. Degree 13 keeps a kernel's Horner loop short enough for LLVM to
unroll (with 19 coefficients it did not, and the kernel ran 10x slower)."""
import math
import numpy as np
from numpy.polynomial import chebyshev

NEAR_END, MID_END, FAR_END = 2.0, 4.0, 10.5   # past 10.5 float32's erfc is 0


def _fitted(fn, degree: int = 13) -> tuple:
  """The coefficients, lowest power first, of the polynomial of that degree through fn at Chebyshev points of [-1, 1]."""
  return tuple(float(c) for c in chebyshev.cheb2poly(chebyshev.chebinterpolate(lambda t: np.array([fn(v) for v in t]), degree)))


def far_variable(x: float) -> float:
  """1/x for x in [2, 10.5], mapped onto [-1, 1]."""
  return (1 / x - 1 / FAR_END) / (0.5 - 1 / FAR_END) * 2 - 1


def _erfc_scaled(x: float) -> float: return math.erfc(x) * math.exp(x * x)


NEAR = _fitted(lambda t: math.erf(math.sqrt(2 * t + 2)) / math.sqrt(2 * t + 2))
MID = _fitted(lambda t: math.erfc(t + 3))
FAR = _fitted(lambda t: _erfc_scaled(1 / (1 / FAR_END + (t + 1) / 2 * (0.5 - 1 / FAR_END))))
