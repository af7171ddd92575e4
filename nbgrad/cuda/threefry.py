"""threefry2x32 on the GPU: the CPU generator's block function (nbgrad/random/threefry.py) compiled as device
functions, so a draw made on the GPU has the CPU's bits. Uniform draws run here; normal draws, whose float
math would have to match the CPU's libm to the bit, are made on the host and copied."""
import numpy as np
from numba import cuda
from nbgrad.random import threefry as cpu_threefry
from nbgrad.cuda.device import THREADS, MAX_BLOCKS
from nbgrad.cuda.runtime import SIMULATOR, device_function

_KS_PARITY = cpu_threefry._KS_PARITY

if SIMULATOR:   # the simulator has no cuda.fma; float32 products are exact in float64
  def fma(a, b, c): return np.float32(np.float64(a) * np.float64(b) + np.float64(c))
else:
  @cuda.jit(device=True)
  def fma(a, b, c): return cuda.fma(a, b, c)


_rotl = device_function(cpu_threefry, "_rotl", globals())
_mix = device_function(cpu_threefry, "_mix", globals())
_group = device_function(cpu_threefry, "_group", globals())
_threefry_pair = device_function(cpu_threefry, "_threefry_pair", globals())
_to_unit = device_function(cpu_threefry, "_to_unit", globals())
_keys = device_function(cpu_threefry, "_keys", globals())


@cuda.jit(cache=True)
def _uniform_kernel(out, seed, counter, n, scale, shift):
  """Word i < h of the draw is x0 of pair i, word h + i its x1 (h = ceil(n / 2)), as on the CPU."""
  k0, k1, k2 = _keys(seed)
  h = (n + 1) // 2
  for i in range(cuda.grid(1), h, cuda.gridsize(1)):
    c1 = np.uint32(counter + i)
    x0, x1 = _threefry_pair(c1, np.uint32(c1 + np.uint32(h)), k0, k1, k2)
    out[i] = fma(scale, _to_unit(x0), shift)
    if h + i < n: out[h + i] = fma(scale, _to_unit(x1), shift)


def uniform_float32(backend, out, seed: int, counter: int, n: int, low: float, high: float):
  """rand (or tinygrad's float32 uniform) of n values at counter into the device array out."""
  blocks = max(1, min(-(-n // (2 * THREADS)), MAX_BLOCKS))
  with backend.gpu:
    _uniform_kernel[blocks, THREADS](out, np.uint32(seed), np.uint32(counter), np.int64(n), np.float32(high - low), np.float32(low))
