"""nbgrad: a lazy, fusing array library with automatic differentiation, compiled with numba."""
import os

# Idle worker threads must not spin: nbgrad alternates numpy's BLAS (matrix products) with numba's parallel
# kernels, and a pool busy-waiting for work takes the cores the other pool needs. Both are read when the
# library starts, so they are set before numpy and numba load (when numpy is imported before nbgrad, its BLAS
# keeps its own setting). Measured here on 2 cores (benchmarks/ group train, min of the SGD step):
# - OpenBLAS spins 2^28 cycles (about 0.1 s) after each product by default: MLP step 51.9 ms, CNN step 148 ms
#   with it, 19.3 ms and 59.6 ms with OPENBLAS_THREAD_TIMEOUT=4 (the shortest, 2^4 cycles).
# - OpenMP workers (numba's thread pool) busy-wait between kernels by default: a 256x512x512 product followed
#   by two small parallel kernels took 47-60 ms a round with them, 2.4-8.8 ms with OMP_WAIT_POLICY=PASSIVE.
# nbgrad's own products run BLAS at one thread where it can set that (nbgrad/jit/blas.py); the BLAS setting
# covers the builds where it cannot. A user's own setting wins.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _openmp_already_loaded() -> bool:
  """Whether an OpenMP runtime is in the process already (torch imported first): it read its wait policy when it
  loaded, and numba's OpenMP thread pool would run on it, its idle workers spinning."""
  try:
    with open("/proc/self/maps") as maps: return any("libgomp" in line or "libiomp" in line for line in maps)
  except OSError:
    return False


# With an OpenMP runtime loaded before nbgrad, numba's parallel kernels run on numba's own thread pool (workqueue),
# whose idle workers sleep. Measured on 2 cores with torch imported first (MLP step, 256 x 784-512-512-10): the
# products took 10.7-11.7 ms a step on the spinning OpenMP workers, 6.5-7.1 ms with workqueue (6.6-6.8 ms without
# torch); with another process busy on one core, a small parallel kernel took 8 ms instead of 0.17 ms.
if "NUMBA_THREADING_LAYER" not in os.environ and _openmp_already_loaded():
  import numba
  numba.config.THREADING_LAYER = "workqueue"

from nbgrad.dtype import dtypes, DType   # noqa: E402  (the settings above come first)
from nbgrad.device import Device   # noqa: E402
from nbgrad.tensor import Tensor   # noqa: E402
from nbgrad.helpers import eager, GlobalCounters, Context, fetch   # noqa: E402
from nbgrad.replay import TinyJit   # noqa: E402
from nbgrad import helpers, nn   # noqa: E402

__all__ = ["Tensor", "Device", "dtypes", "DType", "eager", "GlobalCounters", "Context", "TinyJit", "fetch", "helpers", "nn"]
