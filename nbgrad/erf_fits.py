"""Polynomial fits of erf and erfc for the CPU kernels' float32 erf and erfc (nbgrad/jit/runtime.py), and (at the
end) float64's. float32's: each a
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


# ---- float64's erf and erfc (nbgrad/jit/runtime.py), from mpmath at 160 bits once (the C library's float64 values
# carry too little for them):
# - below |x| = 1, erf(x) = x + x y(x^2) with y the power series of erf(x)/x - 1 to x^42 (its next term below 1e-22);
# - from 1 to ERFC64_END, erfc(x) = exp(-x^2) q(x) / x for q = x exp(x^2) erfc(x) (from 0.43 to 1/sqrt(pi)), a
#   Chebyshev series in u = ERFC64_U0 - ERFC64_U1 / (x + 3), the map onto [-1, 1] of (x - 3) / (x + 3), interpolated at
#   23 Chebyshev points (its last coefficient 7e-20).
ERFC64_END = 27.3   # erfc is 0 in float64 from 27.23 on
ERF64_SMALL = (0.1283791670955126, -0.37612638903183754, 0.11283791670955126, -0.026866170645131252, 0.005223977625442188,
               -0.0008548327023450853, 0.00012055332981789664, -1.492565035840625e-05, 1.6462114365889248e-06,
               -1.6365844691234924e-07, 1.4807192815879218e-08, -1.2290555301717928e-09, 9.422759064650411e-11,
               -6.7113668551641105e-12, 4.4632242632864775e-13, -2.7835162072109215e-14, 1.6342614095367152e-15,
               -9.063970842808673e-17, 4.763348040515068e-18, -2.3784598852774293e-19, 1.131218725924631e-20,
               -5.136209054585811e-22)   # lowest power first
ERFC64_U0, ERFC64_U1 = 1.3041825095057034, 9.216730038022813
ERFC64_CHEBYSHEV = (0.5237265413983582, 0.060234453904952495, -0.026366639029051585, 0.007617960109980626,
                    -0.0016341986086829856, 0.00026046888330925893, -2.8161667123745904e-05, 1.2801723044409301e-06,
                    1.6535837112741796e-07, -3.188121630807501e-08, 3.569384478363914e-10, 4.4121190231525264e-10,
                    -2.916846565228794e-11, -6.124333195288104e-12, 6.958283524927629e-13, 9.952238792479824e-14,
                    -1.4407065484663585e-14, -2.003459122405904e-15, 2.8524535191361085e-16, 4.8407739257875474e-17,
                    -5.2248580760089225e-18, -1.2937223718057906e-18, 7.401455119011557e-20)   # T0 first

# ---- float64's lgamma (nbgrad/jit/runtime.py): lgamma(2 + t) / t for t in [-1/2, 1/2] as a Chebyshev series in u = 2 t,
# interpolated at 21 Chebyshev points from mpmath at 160 bits (its last coefficient 6e-20). The module's name is
# older than this fit.
LGAMMA64_CHEBYSHEV = (0.41418612492156676, 0.16322170068760064, -0.008658972394126285, 0.0006727515726001485,
                      -6.139556963628233e-05, 6.110065797003576e-06, -6.410003033826223e-07, 6.962242692768951e-08,
                      -7.747248733788217e-09, 8.774075140687239e-10, -1.0070266869830198e-10, 1.1678602130652374e-11,
                      -1.3656871334744932e-12, 1.6079351149711517e-13, -1.903950108848594e-14, 2.265376876760527e-15,
                      -2.706656812971969e-16, 3.245660579555409e-17, -3.904470926390326e-18, 4.709414381115293e-19,
                      -5.61337488468885e-20)   # T0 first
