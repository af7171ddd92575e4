"""float32 sin and log2 as glibc's libm computes them (its algorithms and constants, in float64), for randn's
Box-Muller step: tinygrad's reference values come from libm's sinf and log2f, and a libm call in a loop is a scalar
call per element that keeps the loop from vectorizing (16M randn: 112 ms with both calls, 68 with sin inlined, 48
with both). tests/test_random.py checks both bit for bit against libm on every argument Box-Muller can give them.
"""
import numba as nb
import numpy as np
from numba.core import types

from nbgrad.jit.runtime import fma, reinterpret


def _doubles(*hex_literals) -> tuple: return tuple(float.fromhex(h) for h in hex_literals)


_HALF_PI = float.fromhex("0x1.921fb54442d18p0")
_QUADRANTS_TIMES_2_24 = float.fromhex("0x1.45f306dc9c883p23")   # 2/pi * 2^24: the nearest quadrant is in the top bits
_S1, _S2, _S3 = _doubles("-0x1.555545995a603p-3", "0x1.1107605230bc4p-7", "-0x1.994eb3774cf24p-13")
_C1, _C2, _C3, _C4 = _doubles("-0x1.ffffffd0c621cp-2", "0x1.55553e1068f19p-5", "-0x1.6c087e89a359dp-10",
                              "0x1.99343027bf8c3p-16")


@nb.njit(forceinline=True, cache=True)
def sinf_below_120(y):
  """sinf(y) for a float32 |y| < 120: y less the nearest multiple of pi/2, then the sine or the cosine polynomial
  by the quadrant, selected rather than branched to."""
  x = np.float64(y)
  n = (np.int32(x * _QUADRANTS_TIMES_2_24) + np.int32(0x800000)) >> np.int32(24)
  r = fma(-np.float64(n), _HALF_PI, x)
  r2 = r * r
  r3 = r * r2
  r4 = r2 * r2
  sine = (r + r3 * _S1) + (r3 * r2) * (_S2 + r2 * _S3)
  cosine = ((1.0 + r2 * _C1) + r4 * _C2) + (r4 * r2) * (_C3 + r2 * _C4)
  v = sine if (n & np.int32(1)) == 0 else cosine
  return np.float32(-v if (n & np.int32(2)) != 0 else v)


# log2 on [0.7, 1.4) cut into 16 pieces: (1/c, log2(c)) for a point c of each, so that log2(x) = log2(c) +
# log2(x/c) with x/c near 1, where a polynomial of degree 4 is enough
_INVERSE_CENTERS, _LOG2_CENTERS = (np.array(column) for column in zip(*[_doubles(*pair) for pair in (
    ("0x1.661ec79f8f3bep+0", "-0x1.efec65b963019p-2"), ("0x1.571ed4aaf883dp+0", "-0x1.b0b6832d4fca4p-2"),
    ("0x1.49539f0f010b0p+0", "-0x1.7418b0a1fb77bp-2"), ("0x1.3c995b0b80385p+0", "-0x1.39de91a6dcf7bp-2"),
    ("0x1.30d190c8864a5p+0", "-0x1.01d9bf3f2b631p-2"), ("0x1.25e227b0b8ea0p+0", "-0x1.97c1d1b3b7af0p-3"),
    ("0x1.1bb4a4a1a343fp+0", "-0x1.2f9e393af3c9fp-3"), ("0x1.12358f08ae5bap+0", "-0x1.960cbbf788d5cp-4"),
    ("0x1.0953f419900a7p+0", "-0x1.a6f9db6475fcep-5"), ("0x1.0000000000000p+0", "0x0.0p+0"),
    ("0x1.e608cfd9a47acp-1", "0x1.338ca9f24f53dp-4"), ("0x1.ca4b31f026aa0p-1", "0x1.476a9543891bap-3"),
    ("0x1.b2036576afce6p-1", "0x1.e840b4ac4e4d2p-3"), ("0x1.9c2d163a1aa2dp-1", "0x1.40645f0c6651cp-2"),
    ("0x1.886e6037841edp-1", "0x1.88e9c2c1b9ff8p-2"), ("0x1.767dcf5534862p-1", "0x1.ce0a44eb17bccp-2"))]))
_L0, _L1, _L2, _L3 = _doubles("-0x1.712b6f70a7e4dp-2", "0x1.ecabf496832e0p-2", "-0x1.715479ffae3dep-1",
                              "0x1.715475f35c8b8p+0")
_PIECES_START = np.uint32(0x3f330000)   # the bits of 0.69921875, where the first piece starts


@nb.njit(forceinline=True, cache=True)
def log2f_of_normal(x):
  """log2f(x) for a positive normal float32 x: x = 2^k * z with z in [0.7, 1.4), z's piece from its top mantissa
  bits."""
  bits = reinterpret(x, types.uint32)
  offset = np.uint32(bits - _PIECES_START)
  piece = (offset >> np.uint32(19)) & np.uint32(15)
  z = np.float64(reinterpret(np.uint32(bits - (offset & np.uint32(0xff800000))), types.float32))
  k = np.float64(reinterpret(offset, types.int32) >> np.int32(23))
  r = z * _INVERSE_CENTERS[piece] - 1.0
  r2 = r * r
  return np.float32(((_L0 * r2 + (_L1 * r + _L2)) * r2) + (_L3 * r + (_LOG2_CENTERS[piece] + k)))
