"""The gradient of overlapping windows as a custom graph node on the CPU: each input position the sum of the window
elements that lie on it, added by a loop over the windows (jit/window_sums.py) rather than found by each position
through index divisions."""
from __future__ import annotations
from dataclasses import dataclass
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps

MAX_DIMS = 3   # spatial dims the routine takes


@dataclass(frozen=True)
class WindowSums:
  """out (..., *spatial), contiguous, from the window elements grad (..., *kernel, *counts), contiguous (a kernel
  offset's elements of every window together): window o along a dim starts at o * stride, its element k lies
  k * dilation further."""
  spatial: tuple
  counts: tuple
  kernel: tuple
  stride: tuple
  dilation: tuple

  @property
  def name(self) -> str: return "window_sums_" + "x".join(map(str, self.kernel))

  def run(self, out, grad):
    from nbgrad.jit.window_sums import window_sums   # the CPU routine: the graph layer does not load a device's code
    window_sums(out, grad, self.spatial, self.counts, self.kernel, self.stride, self.dilation)


def window_sums(grad: LazyBuffer, input_shape: tuple, kernel: tuple, stride: tuple, dilation: tuple) -> LazyBuffer:
  """grad (..., *counts, *kernel) summed into input_shape (..., *spatial); the routine reads it with the kernel dims
  first, so a computed grad is stored in that order."""
  dims = len(kernel)
  lead = len(grad.shape) - 2 * dims
  arg = WindowSums(tuple(input_shape[-dims:]), tuple(grad.shape[lead:lead + dims]), tuple(kernel), tuple(stride), tuple(dilation))
  kernel_first = grad.permute(tuple(range(lead)) + tuple(range(lead + dims, lead + 2 * dims)) + tuple(range(lead, lead + dims)))
  return LazyBuffer.load(LoadOps.CUSTOM, tuple(input_shape), grad.dtype, grad.device, arg=arg, srcs=(kernel_first.in_flat_order(),))
