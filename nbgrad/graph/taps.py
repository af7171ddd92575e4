"""Weighted taps along one axis as a custom graph node: out[..., i, ...] = the sum over t of weights[t, i] *
x[..., taps[t, i], ...], for small tables (T, m) of taps (-1: none) and weights that the kernel reads. Linear,
cubic and antialiased resampling are such sums. As graph ops they were an index_select (its read positions computed
for every output element along the last axis) and a multiply-and-sum of its T copies of the output."""
from __future__ import annotations
from dataclasses import dataclass
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps
from nbgrad.graph.view import prod


@dataclass(frozen=True)
class AxisTaps:
  """x (flat, contiguous) seen as (outer, n, inner) and out as (outer, m, inner), outer from their sizes; taps and
  weights flat (count, m)."""
  n: int
  m: int
  inner: int
  count: int

  @property
  def name(self) -> str: return f"axis_taps_{self.count}_of_{self.n}_to_{self.m}"

  def run(self, out, x, taps, weights):
    from nbgrad.jit.taps import axis_taps   # the CPU routine
    axis_taps(out, x, taps, weights, self.n, self.m, self.inner, self.count)

  def run_cuda(self, backend, out, x, taps, weights):
    from nbgrad.cuda.gather import axis_taps
    axis_taps(out, x, taps, weights, self.n, self.m, self.inner, self.count)


def axis_taps(x: LazyBuffer, taps: LazyBuffer, weights: LazyBuffer, axis: int) -> LazyBuffer:
  """The node of x's axis resampled by the (T, m) tables taps (int64) and weights (x's dtype, float32 or float64)."""
  count, m = taps.shape
  arg = AxisTaps(x.shape[axis], m, prod(x.shape[axis + 1:]), count)
  return LazyBuffer.load(LoadOps.CUSTOM, x.shape[:axis] + (m,) + x.shape[axis + 1:], x.dtype, x.device, arg=arg,
                         srcs=(x.in_flat_order(), taps.in_flat_order(), weights.in_flat_order()))
