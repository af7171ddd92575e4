"""Running reductions as custom graph nodes: O(n) scans that a fused loop nest cannot express. A node reads
contiguous buffers and fills its own; a device runs it through the descriptor's run."""
from __future__ import annotations
import math
from dataclasses import dataclass
from nbgrad.dtype import index_dtype
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


@dataclass(frozen=True)
class RunningScan:
  """Along the middle axis of a flat buffer seen as (outer, length, inner): op "prod" gives the running product,
  "logaddexp" the running log(exp(a) + exp(b)),
  "argmax" and "argmin" the int32 position of the running maximum or minimum (the last of equal ones; a NaN
  wins, and so does any later NaN, as in torch), and "recurrence" out[i] = x[i] + factors[i] * out[i - 1] (a
  second source, the factors)."""
  op: str
  outer: int
  length: int
  inner: int

  @property
  def name(self) -> str: return f"scan_{self.op}_{self.outer}_{self.length}_{self.inner}"

  def run(self, out, x, factors=None):
    from nbgrad.jit.scan import running_scan
    running_scan(out, x, factors, self.op, self.outer, self.length, self.inner)


def running(x: LazyBuffer, axis: int, op: str, factors: LazyBuffer = None) -> LazyBuffer:
  """The running op of x along axis (see RunningScan): in x's dtype, positions (index_dtype) for argmax and argmin."""
  x = x.in_flat_order()
  scan = RunningScan(op, math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1:]))
  dtype = index_dtype(x.shape[axis]) if op in ("argmax", "argmin") else x.dtype
  srcs = (x,) if factors is None else (x, factors.in_flat_order())
  return LazyBuffer.load(LoadOps.CUSTOM, x.shape, dtype, x.device, arg=scan, srcs=srcs)
