"""The CPU backend: kernels rendered as numba source, compiled, cached and run on numpy buffers."""
from __future__ import annotations
import numpy as np
from nbgrad.graph.schedule import Kernel, structure_key
from nbgrad.graph.view import prod
from nbgrad.jit.compiler import get_kernel, finish_builds, LAUNCH_LOCK
from nbgrad.jit.render import Renderer

# Below this many loop iterations a kernel runs serially. Measured for relu(x*y+z) (float32, 2 cores,
# per call): 2^14 589 us serial vs 563 us parallel, 2^16 757 vs 673, 2^18 1184 vs 904, 2^20 3268 vs 1730.
# Threads start paying at about 2^16, and a serial compile is about four times cheaper than a parallel one.
PARALLEL_MIN_ELEMENTS = 1 << 16

__all__ = ["run_kernel", "finish_builds"]

_EMPTY_INTS, _EMPTY_FLOATS = np.zeros(0, np.int64), np.zeros(0, np.float64)


def _as_kernel_array(buffer: np.ndarray) -> np.ndarray:
  """numba has no float16: such buffers go in as their uint16 bits."""
  return buffer.view(np.uint16) if buffer.dtype == np.float16 else buffer


_rendered_cache: dict[tuple, tuple] = {}
RENDERED_CACHE_LIMIT = 4096


def _rendered(kernel: Kernel, parallel: bool):
  """The compiled kernel and its parameter arrays; kept per kernel structure, so a kernel seen before is
  not rendered again (rendering costs more than running a small kernel)."""
  key = (structure_key(kernel), parallel)
  found = _rendered_cache.get(key)
  if found is None:
    renderer = Renderer(kernel, parallel)
    compiled = get_kernel(renderer.render("kernel"), parallel, kernel.name)
    int_params = np.array(renderer.int_params, np.int64) if renderer.int_params else _EMPTY_INTS
    float_params = np.array(renderer.float_params, np.float64) if renderer.float_params else _EMPTY_FLOATS
    if len(_rendered_cache) >= RENDERED_CACHE_LIMIT: _rendered_cache.clear()
    found = _rendered_cache[key] = (compiled, int_params, float_params)
  return found


def run_kernel(kernel: Kernel, out: np.ndarray, inputs: list[np.ndarray]):
  """Runs a kernel. A big kernel runs its parallel build once that is ready (or in the disk cache);
  until then the serial build runs and the parallel one compiles on a background thread, so a first
  call never waits for a parallel compile."""
  arrays = [_as_kernel_array(out)] + [_as_kernel_array(b) for b in inputs]
  if prod(kernel.loop_shape) >= PARALLEL_MIN_ELEMENTS:
    parallel, int_params, float_params = _rendered(kernel, parallel=True)
    if parallel.ready or parallel.on_disk():
      with LAUNCH_LOCK: parallel(*arrays, int_params, float_params)
      return
    serial, serial_ints, serial_floats = _rendered(kernel, parallel=False)
    with LAUNCH_LOCK: serial(*arrays, serial_ints, serial_floats)
    parallel.build_in_background(*arrays, int_params, float_params)
    return
  serial, int_params, float_params = _rendered(kernel, parallel=False)
  with LAUNCH_LOCK: serial(*arrays, int_params, float_params)

