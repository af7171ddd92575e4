"""CPU routine of the window-sums node (graph/window_sums.py): the gradient of overlapping windows (a pool's with
stride below its kernel, unfold's) added back into the input, each plane on one thread. As a fused kernel each
input element found its windows through a padded and reshaped view, a division per level per element: max_pool2d
3x3 stride 2 of 8x32x64x64 (its windows' gradient into 8x32x66x66) took 10 ms (30 before its constants were built
in), this way 1.0-1.1 (the routine alone, 256 planes)."""
from __future__ import annotations
import numpy as np
from numba import njit, prange
from nbgrad.jit import PARALLEL_MIN_ELEMENTS
from nbgrad.jit.compiler import LAUNCH_LOCK, CachedEntry


@njit(cache=True, nogil=True, error_model="numpy")
def _plane(out, grad, p, spatial, counts, kernel, stride, dilation):
  """Plane p: out[p] (spatial, 3 dims) zeroed, then each window element of grad[p] (*kernel, *counts: a kernel
  offset's elements of every window together) added where it lies, a row of windows at a time (a longer inner loop
  than the kernel's, whose adds land apart), with unsigned indices (no wraparound checks). For the 3x3 stride 2
  windows of 256 planes of 32x32, kernel offsets last and the windows in turn: 4.8 ms, this way 1.0-1.1."""
  n1, n2 = spatial[1], spatial[2]
  plane = spatial[0] * n1 * n2
  taps = kernel[0] * kernel[1] * kernel[2]
  for i in range(plane): out[np.uint64(p * plane + i)] = 0
  first = p * counts[0] * counts[1] * counts[2] * taps
  tap = 0
  for i in range(kernel[0]):
    for j in range(kernel[1]):
      for k in range(kernel[2]):
        for a in range(counts[0]):
          for b in range(counts[1]):
            row = p * plane + ((a * stride[0] + i * dilation[0]) * n1 + b * stride[1] + j * dilation[1]) * n2 + k * dilation[2]
            source = first + ((tap * counts[0] + a) * counts[1] + b) * counts[2]
            for c in range(counts[2]):
              out[np.uint64(row + c * stride[2])] += grad[np.uint64(source + c)]
        tap += 1


@CachedEntry
@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def _window_sums_parallel(out, grad, planes, spatial, counts, kernel, stride, dilation):
  for p in prange(planes): _plane(out, grad, p, spatial, counts, kernel, stride, dilation)


@CachedEntry
@njit(cache=True, nogil=True, error_model="numpy")
def _window_sums_serial(out, grad, planes, spatial, counts, kernel, stride, dilation):
  for p in range(planes): _plane(out, grad, p, spatial, counts, kernel, stride, dilation)


def window_sums(out: np.ndarray, grad: np.ndarray, spatial: tuple, counts: tuple, kernel: tuple, stride: tuple, dilation: tuple):
  """out (planes, *spatial) = the sums of grad (planes, *kernel, *counts), flat buffers; up to 3 spatial dims."""
  lead = 3 - len(spatial)
  spatial, counts, kernel = (1,) * lead + tuple(spatial), (1,) * lead + tuple(counts), (1,) * lead + tuple(kernel)
  stride, dilation = (1,) * lead + tuple(stride), (1,) * lead + tuple(dilation)
  planes = out.size // max(1, spatial[0] * spatial[1] * spatial[2])
  routine = _window_sums_serial if grad.size < PARALLEL_MIN_ELEMENTS or planes == 1 else _window_sums_parallel
  args = tuple(np.array(v, np.int64) for v in (spatial, counts, kernel, stride, dilation))
  with LAUNCH_LOCK: routine(out.reshape(-1), grad.reshape(-1), planes, *args)
