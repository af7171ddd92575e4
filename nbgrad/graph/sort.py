"""Sorting's custom graph nodes, which no fused loop nest expresses: the sorting permutation (a stable sort along an
axis: the node reads one contiguous buffer and fills its own with the int32 positions along the axis that order it),
and the binary search of values in sorted rows."""
from __future__ import annotations
import math
from dataclasses import dataclass
from typing import Optional
from nbgrad.dtype import DType, index_dtype
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps


@dataclass(frozen=True)
class ArgSort:
  """The first k positions of the order of each run along the middle axis of a flat buffer seen as (outer, length,
  inner)."""
  dtype: DType
  outer: int
  length: int
  inner: int
  descending: bool
  k: int

  @property
  def name(self) -> str:
    return f"argsort_{self.outer}_{self.length}_{self.inner}" + ("_descending" if self.descending else "") + \
      (f"_first_{self.k}" if self.k < self.length else "")

  def run(self, out, x):
    from nbgrad.jit.sort import stable_argsort   # the CPU routine: the graph layer does not load a device's code
    stable_argsort(out, x, self.dtype, self.outer, self.length, self.inner, self.descending, self.k)


def argsort(x: LazyBuffer, axis: int, descending: bool, k: Optional[int] = None) -> LazyBuffer:
  """The positions along axis that put x in ascending (descending) order, equal values in the order they come;
  with k, the first k of them. int32, or int64 along an axis too long for int32."""
  if x.shape[axis] >= 1 << 32: raise ValueError(f"a sort orders fewer than 2**32 values a row, got {x.shape[axis]} along axis {axis} of {x.shape}")
  x = x.in_flat_order()
  k = x.shape[axis] if k is None else k
  order = ArgSort(x.dtype, math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1:]), descending, k)
  shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
  return LazyBuffer.load(LoadOps.CUSTOM, shape, index_dtype(x.shape[axis]), x.device, arg=order, srcs=(x,))


@dataclass(frozen=True)
class SearchSorted:
  """The positions at which each of the (rows, count) values would go in the sorted rows (rows, length) of the same
  row: before equal elements, or after them (right); NaN above every number."""
  rows: int
  length: int
  count: int
  right: bool

  @property
  def name(self) -> str: return f"searchsorted_{self.rows}_{self.length}_{self.count}" + ("_right" if self.right else "")

  def run(self, out, sequence, values):
    from nbgrad.jit.sort import binary_search   # the CPU routine
    binary_search(out.reshape(self.rows, self.count), sequence.reshape(self.rows, self.length), values.reshape(self.rows, self.count), self.right)


def searchsorted(sequence: LazyBuffer, values: LazyBuffer, right: bool) -> LazyBuffer:
  """The positions (int32, or int64 past its range) of values (rows, count) in the sorted rows of sequence (rows,
  length), both of one dtype."""
  sequence, values = sequence.in_flat_order(), values.in_flat_order()
  (rows, length), count = sequence.shape, values.shape[1]
  search = SearchSorted(rows, length, count, right)
  return LazyBuffer.load(LoadOps.CUSTOM, values.shape, index_dtype(length), values.device, arg=search, srcs=(sequence, values))
