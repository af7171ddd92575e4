"""The cumulative sum as a custom graph node: an O(n) scan that a fused loop nest cannot express. The
node reads one contiguous buffer and fills its own; a device runs it through the descriptor's run."""
from __future__ import annotations
import math
from dataclasses import dataclass
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps


@dataclass(frozen=True)
class CumulativeSum:
  """The running sum along the middle axis of a flat buffer seen as (outer, length, inner)."""
  outer: int
  length: int
  inner: int

  @property
  def name(self) -> str: return f"scan_sum_{self.outer}_{self.length}_{self.inner}"

  def run(self, out, x):
    from nbgrad.jit.scan import cumulative_sum   # the CPU routine: the graph layer does not load a device's code
    cumulative_sum(out, x, self.outer, self.length, self.inner)


def cumsum(x: LazyBuffer, axis: int) -> LazyBuffer:
  """The running sum of x along axis, in x's dtype."""
  x = x.in_flat_order()
  scan = CumulativeSum(math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1:]))
  return LazyBuffer.load(LoadOps.CUSTOM, x.shape, x.dtype, x.device, arg=scan, srcs=(x,))
