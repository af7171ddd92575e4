"""Concatenation of many tensors as a custom graph node: each source is copied into its slot of the output.
As a fused kernel (a sum of padded sources) every output element tests every source, and a kernel reading a few
hundred sources took minutes to compile; the copies cost one pass over the data whatever their number."""
from __future__ import annotations
import math
from dataclasses import dataclass
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps

# cat of up to this many tensors is one fused kernel (a sum of padded pieces, fused with their producers); more are
# copied into their slots: stacking 600 rows as padded pieces took 55 s to compile, and the copies 1 ms
CAT_FUSED_MAX = 8


@dataclass(frozen=True)
class Concatenate:
  """out (outer, sum(sizes), inner), contiguous, holds source i (outer, sizes[i], inner) in its slot."""
  outer: int
  sizes: tuple[int, ...]
  inner: int

  @property
  def name(self) -> str: return f"concat_{len(self.sizes)}"

  def run(self, out, *sources):
    from nbgrad.jit.concat import concatenate   # the CPU routine: the graph layer does not load a device's code
    concatenate(out, sources, self.outer, self.sizes, self.inner)

  def run_cuda(self, backend, out, *sources):
    from nbgrad.cuda.gather import concatenate
    concatenate(out, sources, self.outer, self.sizes, self.inner)


def concatenate(pieces: list[LazyBuffer], dim: int) -> LazyBuffer:
  """The pieces (one dtype, equal shapes but in dim) joined along dim."""
  first = pieces[0]
  shape = first.shape[:dim] + (sum(p.shape[dim] for p in pieces),) + first.shape[dim + 1:]
  arg = Concatenate(math.prod(first.shape[:dim]), tuple(p.shape[dim] for p in pieces), math.prod(first.shape[dim + 1:]))
  return LazyBuffer.load(LoadOps.CUSTOM, shape, first.dtype, first.device, arg=arg, srcs=tuple(p.in_flat_order() for p in pieces))
