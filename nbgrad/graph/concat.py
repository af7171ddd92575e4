"""Concatenation of many tensors as a custom graph node: each source is copied into its slot of the output.
As a fused kernel (a sum of padded sources) every output element tests every source, and a kernel reading a few
hundred sources took minutes to compile; the copies cost one pass over the data whatever their number. A source
that is a window of a buffer whose dims past the joined one lie in order (x[:, 3:] of a matrix, roll's pieces, the
flipped or repeated edges of a reflect or replicate pad) is read there, not copied first."""
from __future__ import annotations
import math
from dataclasses import dataclass
from typing import Optional
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps
from nbgrad.graph.view import contiguous_strides

# cat of up to this many tensors is one fused kernel (a sum of padded pieces, fused with their producers); more are
# copied into their slots: stacking 600 rows as padded pieces took 55 s to compile, and the copies 1 ms
CAT_FUSED_MAX = 8
# and on the CPU fewer are copied too when the pieces times the elements reach this: the fused kernel computes every
# piece at every element and keeps one (two 1024x512 pieces of x * 2 + 1 joined on dim 1: 1.37 ms fused, 0.50 copied
# into their slots; of exp 2.69 and 0.71, one thread). Below it the copies' kernel launches cost more.
CAT_COPY_MIN_WORK = 1 << 18
OUT_OF_ORDER_MAX = 1 << 16   # elements of a piece read in place with its joined dim backwards or repeated


def copied_apart(pieces: int, elements: int, device: str) -> bool:
  """Whether computed pieces (elements in all) are joined faster computed by kernels of their own and copied into
  their slots than fused (CAT_COPY_MIN_WORK; measured on the CPU only, and GPUs keep the fused kernel)."""
  from nbgrad.device import is_cpu
  return is_cpu(device) and pieces * elements >= CAT_COPY_MIN_WORK


@dataclass(frozen=True)
class Concatenate:
  """out (outer, sum(sizes), inner), contiguous, holds source i (outer, sizes[i], inner) in its slot: element (r, j, k)
  of source i is at start + r * row_step + j * dim_step + k of its buffer, windows[i] = (start, row_step, dim_step)."""
  outer: int
  sizes: tuple[int, ...]
  inner: int
  windows: tuple[tuple[int, int], ...]

  @property
  def name(self) -> str: return f"concat_{len(self.sizes)}"

  def run(self, out, *sources):
    from nbgrad.jit.concat import concatenate   # the CPU routine: the graph layer does not load a device's code
    concatenate(out, sources, self.outer, self.sizes, self.inner, self.windows)

  def run_cuda(self, backend, out, *sources):
    from nbgrad.cuda.gather import concatenate
    concatenate(out, sources, self.outer, self.sizes, self.inner, self.windows)


def concatenate(pieces: list[LazyBuffer], dim: int) -> LazyBuffer:
  """The pieces (one dtype, equal shapes but in dim) joined along dim."""
  first = pieces[0]
  shape = first.shape[:dim] + (sum(p.shape[dim] for p in pieces),) + first.shape[dim + 1:]
  read = [_rows_in_place(p, dim) or _rows_in_place(p.in_flat_order(), dim) for p in pieces]
  arg = Concatenate(math.prod(first.shape[:dim]), tuple(p.shape[dim] for p in pieces), math.prod(first.shape[dim + 1:]),
                    tuple(window for _, window in read))
  return LazyBuffer.load(LoadOps.CUSTOM, shape, first.dtype, first.device, arg=arg, srcs=tuple(base for base, _ in read))


def _rows_in_place(piece: LazyBuffer, dim: int) -> Optional[tuple[LazyBuffer, tuple[int, int, int]]]:
  """piece's base and (start, row step, dim step) of its elements there, when its dims after dim lie in order, dim
  steps by any amount (backwards after a flip, 0 when expanded) and the rows (its dims before dim as one) a fixed
  step apart; None otherwise."""
  if piece.base.op is LoadOps.CONST or (window := piece.view.strided()) is None: return None
  strides, start = window
  inner = contiguous_strides(piece.shape[dim:])
  in_order = all(s == c for s, c, n in zip(strides[dim + 1:], inner[1:], piece.shape[dim + 1:]) if n != 1)
  rows = [(s, n) for s, n in zip(strides[:dim], piece.shape[:dim]) if n != 1]
  if not in_order or any(outer != step * n for (outer, _), (step, n) in zip(rows, rows[1:])): return None
  dim_step = strides[dim] if piece.shape[dim] != 1 else inner[0]
  # a joined dim read backwards or repeated costs a division per element: a big piece is copied out first (the
  # flip of a (256, 256, 32) block: 1.5 ms that way, 4.3 read in place)
  if dim_step != inner[0] and piece.size > OUT_OF_ORDER_MAX: return None
  return piece.base, (start, rows[-1][0] if rows else 0, dim_step)
