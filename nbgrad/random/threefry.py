"""threefry2x32 (20 rounds) counter-based generator, bit-exact with tinygrad 0.9.0.

A draw of ``n`` words at ``counter`` for ``seed`` (all uint32, wrap-around arithmetic):

    h = ceil(n / 2)
    c1[i] = counter + i   (i in [0, h)),   c2[i] = c1[i] + h
    k = (0, seed ^ 0x1BD11BDA, seed)
    x0 = c1 + k[2],  x1 = c2 + k[0]
    for g in 0..4:
        for r in ROT[g % 2]:  x0 = x0 + x1;  x1 = x0 ^ rotl32(x1, r)
        x0 += k[g % 3];  x1 += k[(g + 1) % 3] + g + 1
    bits = concat(x0, x1)[:n]

Word ``i < h`` of the draw is ``x0`` of pair ``i``; word ``h + i`` is ``x1`` of pair ``i``.
The uniform value of a word is ``float32(bits >> 8) / 2**24``.

The numba kernels come in a serial and a parallel (prange over blocks of pairs) variant; both
compute every word from its own counter alone, so they give identical bits. The public wrappers
pick the parallel one when the draw is large.

numba promotes uint32 arithmetic to 64 bits, so every intermediate is cast back to np.uint32.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np
from nbgrad.jit.compiler import CachedEntry, LAUNCH_LOCK
from nbgrad.jit.runtime import fma
from nbgrad.random.libm import log2f_of_normal, sinf_below_120

__all__ = [
    "PARALLEL_THRESHOLD", "BLOCK_PAIRS",
    "threefry_bits", "uniform_float32", "normal_float32",
    "rand_numpy", "randn_numpy", "uniform_numpy", "randint_numpy", "normal_numpy",
    "kaiming_uniform_numpy", "Threefry",
]

PARALLEL_THRESHOLD = 65536   # words (or outputs); above this the prange variant is used
BLOCK_PAIRS = 16384          # pairs of words per parallel block

_MASK32 = 0xFFFFFFFF
_KS_PARITY = 0x1BD11BDA


# --------------------------------------------------------------------------------------------
# core block function
# --------------------------------------------------------------------------------------------

@nb.njit(forceinline=True, cache=True)
def _rotl(x, r):
    # x, r: uint32; result uint32
    return np.uint32((x << r) | (x >> (np.uint32(32) - r)))


@nb.njit(forceinline=True, cache=True)
def _mix(x0, x1, r):
    x0 = np.uint32(x0 + x1)
    x1 = np.uint32(x0 ^ _rotl(x1, np.uint32(r)))
    return x0, x1


@nb.njit(forceinline=True, cache=True)
def _group(x0, x1, r0, r1, r2, r3, key0, key1):
    """Four mixes with rotations r0..r3, then the key injection (key0 into x0, key1 into x1)."""
    x0, x1 = _mix(x0, x1, r0)
    x0, x1 = _mix(x0, x1, r1)
    x0, x1 = _mix(x0, x1, r2)
    x0, x1 = _mix(x0, x1, r3)
    return np.uint32(x0 + key0), np.uint32(x1 + key1)


@nb.njit(forceinline=True, cache=True)
def _threefry_pair(c1, c2, k0, k1, k2):
    """One threefry2x32-20 block on counters (c1, c2) with keys (k0, k1, k2); all uint32. Group g injects
    k[g % 3] and k[(g + 1) % 3] + g + 1; even groups rotate by 13, 15, 26, 6 and odd ones by 17, 29, 16, 24."""
    x0, x1 = np.uint32(c1 + k2), np.uint32(c2 + k0)
    x0, x1 = _group(x0, x1, 13, 15, 26, 6, k0, np.uint32(k1 + np.uint32(1)))
    x0, x1 = _group(x0, x1, 17, 29, 16, 24, k1, np.uint32(k2 + np.uint32(2)))
    x0, x1 = _group(x0, x1, 13, 15, 26, 6, k2, np.uint32(k0 + np.uint32(3)))
    x0, x1 = _group(x0, x1, 17, 29, 16, 24, k0, np.uint32(k1 + np.uint32(4)))
    x0, x1 = _group(x0, x1, 13, 15, 26, 6, k1, np.uint32(k2 + np.uint32(5)))
    return x0, x1


@nb.njit(forceinline=True, cache=True)
def _to_unit(b):
    # float32(bits >> 8) / 2**24 (exact: a 24-bit integer times a power of two)
    return np.float32(np.uint32(b >> np.uint32(8))) * np.float32(5.9604644775390625e-08)


@nb.njit(forceinline=True, cache=True)
def _box_muller(u0, u1):
    # tinygrad 0.9.0: cos(2*pi*u0) and sqrt(-2 * log(1 - u1)), all float32, with
    # cos(x) = sin(pi/2 - x) and log(x) = log2(x) * ln(2); its C compiler contracts
    # pi/2 - u0 * 2pi into one fused multiply-add, which the reference values need.
    c = sinf_below_120(fma(-u0, np.float32(6.283185307179586), np.float32(1.5707963267948966)))
    lg = log2f_of_normal(np.float32(1.0) - u1) * np.float32(0.6931471805599453)
    return np.float32(c), np.float32(math.sqrt(lg * np.float32(-2.0)))


# --------------------------------------------------------------------------------------------
# kernels. A draw of n words has h = ceil(n/2) pairs; the first nf = n // 2 pairs keep both words
# (word i and word h + i), and for odd n the last pair (i = h - 1) keeps only its x0.
# The block loops index from 0 into sliced outputs so that numba's index arithmetic stays
# provably non-negative and LLVM vectorizes them.
# --------------------------------------------------------------------------------------------

@nb.njit(forceinline=True, cache=True)
def _bits_block(k0, k1, k2, c0, hh, m, o0, o1):
    for j in range(m):
        c1 = np.uint32(c0 + np.uint32(j))
        x0, x1 = _threefry_pair(c1, np.uint32(c1 + hh), k0, k1, k2)
        o0[j] = x0
        o1[j] = x1


@nb.njit(forceinline=True, cache=True)
def _uniform_block(k0, k1, k2, c0, hh, m, scale, shift, o0, o1):
    # fma(scale, u, shift) is u itself for scale = 1, shift = 0
    for j in range(m):
        c1 = np.uint32(c0 + np.uint32(j))
        x0, x1 = _threefry_pair(c1, np.uint32(c1 + hh), k0, k1, k2)
        o0[j] = fma(scale, _to_unit(x0), shift)
        o1[j] = fma(scale, _to_unit(x1), shift)


@nb.njit(forceinline=True, cache=True)
def _normal_block(k0, k1, k2, c0, hh, m, affine, std, mean, o):
    # one rand draw of 2n words: h = n, u[0][i] = word i = x0 of pair i, u[1][i] = word n+i = x1
    for j in range(m):
        c1 = np.uint32(c0 + np.uint32(j))
        x0, x1 = _threefry_pair(c1, np.uint32(c1 + hh), k0, k1, k2)
        c, s = _box_muller(_to_unit(x0), _to_unit(x1))
        # std * randn + mean as tinygrad's kernel computes it: (std * cos) * sqrt + mean, contracted
        o[j] = fma(np.float32(std * c), s, mean) if affine else np.float32(c * s)


@nb.njit(cache=True)
def _keys(seed):
    k2 = np.uint32(seed)
    return np.uint32(0), np.uint32(k2 ^ np.uint32(_KS_PARITY)), k2


@nb.njit(cache=True)
def _last_pair_x0(seed, counter, h):
    # x0 of pair h - 1 (the kept word of the unpaired last pair of an odd draw)
    k0, k1, k2 = _keys(seed)
    c1 = np.uint32(np.uint32(counter) + np.uint32(h - 1))
    x0, x1 = _threefry_pair(c1, np.uint32(c1 + np.uint32(h)), k0, k1, k2)
    return x0


@CachedEntry
@nb.njit(cache=True)
def _bits_serial(seed, counter, n, out):
    k0, k1, k2 = _keys(seed)
    h = (n + 1) // 2
    nf = n // 2
    _bits_block(k0, k1, k2, np.uint32(counter), np.uint32(h), nf, out[:nf], out[h:h + nf])
    if n % 2:
        out[h - 1] = _last_pair_x0(seed, counter, h)


@CachedEntry
@nb.njit(cache=True, parallel=True)
def _bits_parallel(seed, counter, n, out):
    k0, k1, k2 = _keys(seed)
    h = (n + 1) // 2
    nf = n // 2
    ctr = np.uint32(counter)
    hh = np.uint32(h)
    nblk = (nf + BLOCK_PAIRS - 1) // BLOCK_PAIRS
    for b in nb.prange(nblk):
        p0 = b * BLOCK_PAIRS
        p1 = min(p0 + BLOCK_PAIRS, nf)
        _bits_block(k0, k1, k2, np.uint32(ctr + np.uint32(p0)), hh, p1 - p0,
                    out[p0:p1], out[h + p0:h + p1])
    if n % 2:
        out[h - 1] = _last_pair_x0(seed, counter, h)


@CachedEntry
@nb.njit(cache=True)
def _uniform_serial(seed, counter, n, scale, shift, out):
    k0, k1, k2 = _keys(seed)
    h = (n + 1) // 2
    nf = n // 2
    _uniform_block(k0, k1, k2, np.uint32(counter), np.uint32(h), nf, scale, shift,
                   out[:nf], out[h:h + nf])
    if n % 2:
        out[h - 1] = fma(scale, _to_unit(_last_pair_x0(seed, counter, h)), shift)


@CachedEntry
@nb.njit(cache=True, parallel=True)
def _uniform_parallel(seed, counter, n, scale, shift, out):
    k0, k1, k2 = _keys(seed)
    h = (n + 1) // 2
    nf = n // 2
    ctr = np.uint32(counter)
    hh = np.uint32(h)
    nblk = (nf + BLOCK_PAIRS - 1) // BLOCK_PAIRS
    for b in nb.prange(nblk):
        p0 = b * BLOCK_PAIRS
        p1 = min(p0 + BLOCK_PAIRS, nf)
        _uniform_block(k0, k1, k2, np.uint32(ctr + np.uint32(p0)), hh, p1 - p0, scale, shift,
                       out[p0:p1], out[h + p0:h + p1])
    if n % 2:
        out[h - 1] = fma(scale, _to_unit(_last_pair_x0(seed, counter, h)), shift)


@CachedEntry
@nb.njit(cache=True)
def _normal_serial(seed, counter, n, affine, std, mean, out):
    k0, k1, k2 = _keys(seed)
    _normal_block(k0, k1, k2, np.uint32(counter), np.uint32(n), n, affine, std, mean, out[:n])


@CachedEntry
@nb.njit(cache=True, parallel=True)
def _normal_parallel(seed, counter, n, affine, std, mean, out):
    k0, k1, k2 = _keys(seed)
    ctr = np.uint32(counter)
    hh = np.uint32(n)
    nblk = (n + BLOCK_PAIRS - 1) // BLOCK_PAIRS
    for b in nb.prange(nblk):
        p0 = b * BLOCK_PAIRS
        p1 = min(p0 + BLOCK_PAIRS, n)
        _normal_block(k0, k1, k2, np.uint32(ctr + np.uint32(p0)), hh, p1 - p0, affine, std, mean,
                      out[p0:p1])


# --------------------------------------------------------------------------------------------
# public entry points
# --------------------------------------------------------------------------------------------

def _check(seed, counter, n):
    n = int(n)
    if n < 0:
        raise ValueError(f"number of values must be >= 0, got {n}")
    if n >= 2 ** 32:
        raise ValueError(f"a single draw holds at most 2**32 - 1 values, got {n}")
    return int(seed) & _MASK32, int(counter) & _MASK32, n


def _out_array(out, n, dtype, name):
    if out is None:
        return np.empty(n, dtype=dtype)
    if not isinstance(out, np.ndarray) or out.dtype != dtype or out.ndim != 1 or out.shape[0] < n:
        raise ValueError(f"{name}: out must be a 1-d {np.dtype(dtype).name} array of at least {n} "
                         f"elements, got {getattr(out, 'dtype', type(out))} {getattr(out, 'shape', '')}")
    return out


def threefry_bits(seed: int, counter: int, n: int, out: np.ndarray | None = None,
                  parallel: bool | None = None) -> np.ndarray:
    """The n uint32 words of one draw at ``counter``. Returns ``out`` (allocated when None)."""
    seed, counter, n = _check(seed, counter, n)
    out = _out_array(out, n, np.uint32, "threefry_bits")
    if n:
        use_par = n > PARALLEL_THRESHOLD if parallel is None else parallel
        with LAUNCH_LOCK: (_bits_parallel if use_par else _bits_serial)(seed, counter, n, out)
    return out


def uniform_float32(seed: int, counter: int, n: int, out: np.ndarray | None = None, *,
                    low: float = 0.0, high: float = 1.0, parallel: bool | None = None) -> np.ndarray:
    """``rand(n)`` at ``counter``: u = float32(bits >> 8) / 2**24 written into out[:n]; returns out.

    With ``low``/``high`` it writes tinygrad's float32 ``uniform``: fma(float32(high - low), u,
    float32(low)) in one rounding (the defaults give u exactly). The draw consumes n counter
    values (the caller advances its counter by n)."""
    seed, counter, n = _check(seed, counter, n)
    out = _out_array(out, n, np.float32, "uniform_float32")
    if n:
        use_par = n > PARALLEL_THRESHOLD if parallel is None else parallel
        with LAUNCH_LOCK:
            (_uniform_parallel if use_par else _uniform_serial)(seed, counter, n, np.float32(high - low), np.float32(low), out)
    return out


def normal_float32(seed: int, counter: int, n: int, out: np.ndarray | None = None, *,
                   mean: float = 0.0, std: float = 1.0, parallel: bool | None = None) -> np.ndarray:
    """``randn(n)`` at ``counter`` (float32): Box-Muller on u = rand(2, n), one draw of 2n words:
    out[i] = cos(2*pi*u[0][i]) * sqrt(-2*log(1 - u[1][i])); returns out.

    With ``mean``/``std`` other than (0, 1) it writes tinygrad's float32 ``normal``:
    fma(float32(std * cos), sqrt, float32(mean)), the order tinygrad's kernel computes it in. The draw
    consumes 2n counter values."""
    seed, counter, n = _check(seed, counter, n)
    if 2 * n >= 2 ** 32:
        raise ValueError(f"a single draw holds at most 2**32 - 1 values, got 2*{n}")
    out = _out_array(out, n, np.float32, "normal_float32")
    if n:
        use_par = n > PARALLEL_THRESHOLD if parallel is None else parallel
        affine = not (mean == 0.0 and std == 1.0)
        with LAUNCH_LOCK:
            (_normal_parallel if use_par else _normal_serial)(seed, counter, n, affine, np.float32(std), np.float32(mean), out)
    return out


@CachedEntry
@nb.njit(cache=True)
def _fma_array(a, x, b, out):
    for i in range(x.size):
        out[i] = fma(a, x[i], b)


# --------------------------------------------------------------------------------------------
# distributions at the numpy level (tinygrad 0.9.0 semantics); each takes the generator state
# (seed, counter) and returns the values. The caller advances its counter by the words drawn:
# prod(shape) for rand / uniform / randint / kaiming_uniform, 2 * prod(shape) for randn / normal
# (``Threefry`` below does this bookkeeping).
# --------------------------------------------------------------------------------------------

def _shape(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    return shape


def _cast(x: np.ndarray, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        # float -> int truncates toward zero, as the C cast does
        return np.trunc(x).astype(dtype)
    return x.astype(dtype)


def rand_numpy(seed: int, counter: int, shape, dtype=np.float32) -> np.ndarray:
    """tinygrad ``rand(*shape, dtype=dtype)``: the float32 draw, reshaped, cast to dtype.
    Consumes prod(shape) counter values."""
    shape = _shape(shape)
    n = math.prod(shape)
    return _cast(uniform_float32(seed, counter, n).reshape(shape), dtype)


def randn_numpy(seed: int, counter: int, shape, dtype=np.float32) -> np.ndarray:
    """tinygrad ``randn``: float32 Box-Muller, cast to dtype. Consumes 2*prod(shape) counter values."""
    shape = _shape(shape)
    n = math.prod(shape)
    return _cast(normal_float32(seed, counter, n).reshape(shape), dtype)


def uniform_numpy(seed: int, counter: int, shape, low=0.0, high=1.0, dtype=np.float32) -> np.ndarray:
    """tinygrad ``uniform``: ((high - low) * rand(shape)).cast(dtype) + low, rand in float32.
    For float32 the multiply-add is one fma (as tinygrad's compiled kernel does); for other
    dtypes the float32 product is cast to dtype and low is added in dtype."""
    shape = _shape(shape)
    n = math.prod(shape)
    dt = np.dtype(dtype)
    if dt == np.float32:
        return uniform_float32(seed, counter, n, low=low, high=high).reshape(shape)
    scaled = _cast(np.float32(high - low) * uniform_float32(seed, counter, n).reshape(shape), dt)
    if dt.kind in "iu":
        return (scaled + np.asarray(low, dtype=dt)).astype(dt)
    return (scaled + dt.type(low)).astype(dt)


def randint_numpy(seed: int, counter: int, shape, low=0, high=10, dtype=np.int32) -> np.ndarray:
    """tinygrad ``randint``: ``uniform`` with an integer dtype."""
    if not isinstance(low, (int, np.integer)) or isinstance(low, bool) or \
       not isinstance(high, (int, np.integer)) or isinstance(high, bool):
        raise TypeError(f"low={low!r} and high={high!r} must be integers")
    if np.dtype(dtype).kind not in "iu":
        raise TypeError(f"dtype={np.dtype(dtype).name} must be int")
    return uniform_numpy(seed, counter, shape, low, high, dtype)


def normal_numpy(seed: int, counter: int, shape, mean=0.0, std=1.0, dtype=np.float32) -> np.ndarray:
    """tinygrad ``normal``: std * randn(shape, dtype) + mean as one fma (float32 and float64;
    float16 rounds a float32 fma). Consumes 2*prod(shape) counter values."""
    shape = _shape(shape)
    n = math.prod(shape)
    dt = np.dtype(dtype)
    if dt == np.float32:
        return normal_float32(seed, counter, n, mean=mean, std=std).reshape(shape)
    r = randn_numpy(seed, counter, (n,), dt)
    if mean == 0.0 and std == 1.0:
        return r.reshape(shape)
    work = np.float64 if dt == np.float64 else np.float32
    out = np.empty(n, dtype=work)
    _fma_array(work(std), r.astype(work), work(mean), out)
    return _cast(out, dt).reshape(shape)


def kaiming_uniform_numpy(seed: int, counter: int, shape, a: float = 0.01, dtype=np.float32) -> np.ndarray:
    """tinygrad ``kaiming_uniform``: uniform(low=-bound, high=bound) with
    bound = sqrt(3) * sqrt(2 / (1 + a**2)) / sqrt(prod(shape[1:]))."""
    shape = _shape(shape)
    bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(math.prod(shape[1:]))
    return uniform_numpy(seed, counter, shape, -bound, bound, dtype)


class Threefry:
    """Generator state (seed, counter) with the tinygrad draw order: each call advances the
    counter by the number of words its draw consumed (uint32 wrap-around)."""

    def __init__(self, seed: int = 0, counter: int = 0):
        self.seed = int(seed) & _MASK32
        self.counter = int(counter) & _MASK32

    def manual_seed(self, seed: int = 0) -> None:
        self.seed, self.counter = int(seed) & _MASK32, 0

    def _take(self, n: int) -> int:
        c = self.counter
        self.counter = (c + n) & _MASK32
        return c

    def bits(self, n: int) -> np.ndarray:
        return threefry_bits(self.seed, self._take(n), n)

    def rand(self, *shape, dtype=np.float32) -> np.ndarray:
        shape = _shape(shape)
        return rand_numpy(self.seed, self._take(math.prod(shape)), shape, dtype)

    def randn(self, *shape, dtype=np.float32) -> np.ndarray:
        shape = _shape(shape)
        return randn_numpy(self.seed, self._take(2 * math.prod(shape)), shape, dtype)

    def uniform(self, *shape, low=0.0, high=1.0, dtype=np.float32) -> np.ndarray:
        shape = _shape(shape)
        return uniform_numpy(self.seed, self._take(math.prod(shape)), shape, low, high, dtype)

    def randint(self, *shape, low=0, high=10, dtype=np.int32) -> np.ndarray:
        shape = _shape(shape)
        r = randint_numpy(self.seed, self.counter, shape, low, high, dtype)   # checks first
        self._take(math.prod(shape))
        return r

    def normal(self, *shape, mean=0.0, std=1.0, dtype=np.float32) -> np.ndarray:
        shape = _shape(shape)
        return normal_numpy(self.seed, self._take(2 * math.prod(shape)), shape, mean, std, dtype)

    def kaiming_uniform(self, *shape, a: float = 0.01, dtype=np.float32) -> np.ndarray:
        shape = _shape(shape)
        return kaiming_uniform_numpy(self.seed, self._take(math.prod(shape)), shape, a, dtype)
