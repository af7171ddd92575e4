"""The CPU backend: kernels rendered as numba source, compiled, cached and run on numpy buffers."""
from __future__ import annotations
from typing import Optional
import numba
import numpy as np
from nbgrad.graph.schedule import Kernel, structure_key
from nbgrad.graph.view import prod
from nbgrad.helpers import TimedChoice
from nbgrad.jit.compiler import CompiledKernel, get_kernel, finish_builds, LAUNCH_LOCK
from nbgrad.jit.render import Renderer

# Below this many loop iterations a kernel runs serially, without a parallel build: a parallel compile costs about
# four times a serial one, and threads cannot pay for themselves on less work. Above it both builds run, and for
# an elementwise kernel the faster one is kept (TimedChoice). numba's workqueue pool (nbgrad/__init__.py picks it when torch
# is imported first) wakes sleeping workers for each launch while the calling thread only waits: about 50 us a
# launch, so it takes more work to pay there. relu(x+y) on it (numba functions, 2-core Xeon) took 2^16 16 us serial
# vs 78 parallel, 2^20 222 vs 363, 2^22 3036 vs 2377.
PARALLEL_MIN_ELEMENTS = 1 << 21 if numba.config.THREADING_LAYER == "workqueue" else 1 << 16

__all__ = ["run_kernel", "finish_builds"]

_EMPTY_INTS, _EMPTY_FLOATS = np.zeros(0, np.int64), np.zeros(0, np.float64)


def _as_kernel_array(buffer: np.ndarray) -> np.ndarray:
  """numba has no float16: such buffers go in as their uint16 bits."""
  return buffer.view(np.uint16) if buffer.dtype == np.float16 else buffer


# After this many launches of one parallel kernel, a build with its integer parameters (sizes, strides, bounds)
# written in as constants compiles in the background and takes over: LLVM then folds the index arithmetic
# (a pooling view's division by 2 becomes a shift) and vectorizes more. In the CNN training step (benchmarks/
# group train; medians, both builds interleaved in one process): col2im sum 0.99 -> 0.61 ms, relu and max-pool
# backward 1.36 -> 0.80 ms, max-pool tie count 0.99 -> 0.56 ms; the step 17.3 -> 14.3 ms. A kernel run this often
# is worth one more compile; most kernels of the test suite run a few times and never get one.
SPECIALIZE_AFTER = 16


class _Rendered:
  """A kernel structure's compiled kernel and parameter arrays, kept so a kernel seen before is not rendered
  again (rendering costs more than running a small kernel); for a parallel kernel also its launch count, its
  build with constant parameters once launched SPECIALIZE_AFTER times, and its choice between running serially
  or in parallel."""
  __slots__ = ("parallel", "compiled", "int_params", "float_params", "launches", "specialized", "choice")

  def __init__(self, kernel: Kernel, parallel: bool):
    renderer = Renderer(kernel, parallel)
    self.parallel = parallel
    self.compiled = get_kernel(renderer.render("kernel"), parallel, kernel.name)
    self.int_params = np.array(renderer.int_params, np.int64) if renderer.int_params else _EMPTY_INTS
    self.float_params = np.array(renderer.float_params, np.float64) if renderer.float_params else _EMPTY_FLOATS
    self.launches = 0
    self.specialized: Optional[CompiledKernel] = None
    self.choice = TimedChoice(2) if parallel else None   # a parallel build's: run serially (0) or in parallel (1)

  def launch(self, kernel: Kernel, arrays: list[np.ndarray]):
    build = self.fastest(kernel, arrays) if self.parallel else self.compiled
    with LAUNCH_LOCK: build(*arrays, self.int_params, self.float_params)

  def fastest(self, kernel: Kernel, arrays: list[np.ndarray]) -> CompiledKernel:
    """The parallel build to launch: the specialized one when it is ready, else the generic one."""
    if self.specialized is None:
      self.launches += 1
      if self.launches < SPECIALIZE_AFTER: return self.compiled
      self.specialized = get_kernel(Renderer(kernel, True, constants=True).render("kernel"), True, kernel.name)
      if not self.specialized.on_disk(): self.specialized.build_in_background(*arrays, self.int_params, self.float_params)
    return self.specialized if self.specialized.ready or self.specialized.background is None else self.compiled


_rendered_cache: dict[tuple, _Rendered] = {}
RENDERED_CACHE_LIMIT = 4096


def _rendered(kernel: Kernel, parallel: bool) -> _Rendered:
  key = (structure_key(kernel), parallel)
  found = _rendered_cache.get(key)
  if found is None:
    if len(_rendered_cache) >= RENDERED_CACHE_LIMIT: _rendered_cache.clear()
    found = _rendered_cache[key] = _Rendered(kernel, parallel)
  return found


def run_kernel(kernel: Kernel, out: np.ndarray, inputs: list[np.ndarray]):
  """Runs a kernel. A big kernel runs serially until its parallel build is ready (in the disk cache, or compiled
  on a background thread meanwhile), so a first call never waits for a parallel compile. Then an elementwise
  kernel's two builds take turns on its next launches, timed, and the faster one runs from then on; a reduce keeps
  the parallel build, which sums in another order than the serial one: chosen by a clock, its bits would be too."""
  arrays = [_as_kernel_array(out)] + [_as_kernel_array(b) for b in inputs]
  if prod(kernel.loop_shape) < PARALLEL_MIN_ELEMENTS:
    _rendered(kernel, parallel=False).launch(kernel, arrays)
    return
  parallel = _rendered(kernel, parallel=True)
  if not (parallel.compiled.ready or parallel.compiled.on_disk()):
    _rendered(kernel, parallel=False).launch(kernel, arrays)
    parallel.compiled.build_in_background(*arrays, parallel.int_params, parallel.float_params)
  elif kernel.stages:
    parallel.launch(kernel, arrays)
  else:
    parallel.choice.run(lambda: _rendered(kernel, parallel=False).launch(kernel, arrays), lambda: parallel.launch(kernel, arrays))
