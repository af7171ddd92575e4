"""The CPU backend: kernels rendered as numba source, compiled, cached and run on numpy buffers."""
from __future__ import annotations
import numpy as np
from nbgrad.graph.schedule import Kernel
from nbgrad.graph.view import prod
from nbgrad.jit.compiler import get_kernel, COMPILE_LOCK
from nbgrad.jit.render import Renderer

# Below this many loop iterations a kernel runs serially: threads would cost more than they save,
# and a serial compile is about four times cheaper than a parallel one.
PARALLEL_MIN_ELEMENTS = 1 << 17

_EMPTY_INTS, _EMPTY_FLOATS = np.zeros(0, np.int64), np.zeros(0, np.float64)


def _as_kernel_array(buffer: np.ndarray) -> np.ndarray:
  """numba has no float16: such buffers go in as their uint16 bits."""
  return buffer.view(np.uint16) if buffer.dtype == np.float16 else buffer


def run_kernel(kernel: Kernel, out: np.ndarray, inputs: list[np.ndarray]):
  parallel = prod(kernel.loop_shape) >= PARALLEL_MIN_ELEMENTS
  renderer = Renderer(kernel, parallel)
  body = renderer.render("kernel")
  compiled = get_kernel(body, parallel, kernel.name)
  int_params = np.array(renderer.int_params, np.int64) if renderer.int_params else _EMPTY_INTS
  float_params = np.array(renderer.float_params, np.float64) if renderer.float_params else _EMPTY_FLOATS
  with COMPILE_LOCK:   # numba's workqueue threading layer must not run two parallel kernels at once
    compiled(_as_kernel_array(out), *[_as_kernel_array(b) for b in inputs], int_params, float_params)
