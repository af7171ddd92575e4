"""Indexed reads as custom graph nodes: advanced indexing and gather read x at positions that index tensors
give, an O(n) loop that a fused loop nest could only express by comparing every index with every position.

x's last dims that no index touches are read whole, as rows (an embedding's vectors): the positions are then flat
indices of rows' first elements into x seen as contiguous, one per row, -1 where an index was out of range (the
row reads 0). The engine computes that tensor from the index tensors and aranges, fused. One index tensor on x's
first dim (x[idx], an embedding lookup) goes in as it is, and the kernel itself counts negative indices from the
end and reads 0 out of range (dim_size >= 0): no second kernel, and a dozen fewer ops to build."""
from __future__ import annotations
from dataclasses import dataclass
from nbgrad.dtype import dtypes
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps
from nbgrad.graph.view import contiguous_strides, prod


@dataclass(frozen=True)
class Take:
  """Row i of out (row elements) is x[offset + positions[i]:][:row], or 0 where positions[i] < 0; x is read from its
  flat buffer. With dim_size >= 0 the positions are indices of rows of a first dim that long instead, which start
  row_step elements apart in the buffer."""
  offset: int
  row: int
  dim_size: int
  row_step: int

  @property
  def name(self) -> str: return f"take_rows_of_{self.row}"

  def run(self, out, x, positions):
    from nbgrad.jit.take import take   # the CPU routine: the graph layer does not load a device's code
    take(out, x, positions, self.offset, self.row, self.dim_size, self.row_step)

  def run_cuda(self, backend, out, x, positions):
    from nbgrad.cuda.gather import take
    take(out, x, positions, self.offset, self.row, self.dim_size, self.row_step)


@dataclass(frozen=True)
class ScatterAdd:
  """The gradient of Take: out (contiguous) is zero plus each row i of grad added at positions[i] >= 0 (rows as
  Take's dim_size says)."""
  row: int
  dim_size: int = -1

  @property
  def name(self) -> str: return f"scatter_add_rows_of_{self.row}"

  def run(self, out, grad, positions):
    from nbgrad.jit.take import scatter_add
    scatter_add(out, grad, positions, self.row, self.dim_size)

  def run_cuda(self, backend, out, grad, positions):
    from nbgrad.cuda.gather import scatter_add
    scatter_add(out, grad, positions, self.row, self.dim_size)


@dataclass(frozen=True)
class ScatterReduce:
  """out = base with each element i of src combined into out[positions[i]] (-1: skipped) by op: "set" (the last one
  stays), "sum", "prod", "amax", "amin" (NaN wins) or "mean" (ints: floored). Without include_self a position that
  elements land on starts from the first of them, not from base's value."""
  op: str
  include_self: bool

  @property
  def name(self) -> str: return f"scatter_{self.op}" + ("" if self.include_self else "_without_self")

  def run(self, out, base, src, positions):
    from nbgrad.jit.take import scatter_reduce
    scatter_reduce(out, base, src, positions, self.op, self.include_self)


def scatter_reduce(base: LazyBuffer, src: LazyBuffer, positions: LazyBuffer, op: str, include_self: bool) -> LazyBuffer:
  return LazyBuffer.load(LoadOps.CUSTOM, base.shape, base.dtype, base.device, arg=ScatterReduce(op, include_self),
                         srcs=(base.in_flat_order(), src.in_flat_order(), positions.in_flat_order()))


def take(x: LazyBuffer, positions: LazyBuffer, row_dims: int, dim_size: int = -1) -> LazyBuffer:
  """The rows of x's last row_dims dims at positions (flat indices into x, -1 for 0; with dim_size >= 0 indices
  of x's first dim), of shape positions.shape + those dims. x is read in place when it is a contiguous window of
  its buffer (a realized tensor, a slice of its first dims), and with dim_size >= 0 also when only its first dim
  steps otherwise, forward, through a buffer computed already (a column of a matrix: benchmark
  indexing_column_gather, m[idx, 1] of a 1M x 16 float32 matrix at 100k indices, copied the column first in 4.25 ms,
  and now reads it in place in 0.35 ms; numpy 0.35). A base not computed yet is copied from instead: computing all
  of it to read one column would cost more than the copy, which computes the column alone."""
  row_shape = x.shape[len(x.shape) - row_dims:]
  window = x.view.strided() if x.base.op is not LoadOps.CONST else None
  if window is not None:
    strides, start = window
    dense = [s == c or n == 1 for s, c, n in zip(strides, contiguous_strides(x.shape), x.shape)]   # per dim
    stepped = dim_size >= 0 and x.base.buffer is not None and strides[0] >= 0 and all(dense[1:])
    if all(dense) or stepped:
      return _take_node(x, start, positions, row_shape, dim_size, strides[0] if stepped and x.shape[0] != 1 else prod(row_shape))
  return _take_node(x.contiguous(), 0, positions, row_shape, dim_size, prod(row_shape))


def _take_node(source: LazyBuffer, offset: int, positions: LazyBuffer, row_shape: tuple, dim_size: int, row_step: int) -> LazyBuffer:
  return LazyBuffer.load(LoadOps.CUSTOM, positions.shape + row_shape, source.dtype, source.device,
                         arg=Take(offset, prod(row_shape), dim_size, row_step), srcs=(source, positions.in_flat_order()))


def scatter_add(grad: LazyBuffer, positions: LazyBuffer, shape: tuple[int, ...], row_dims: int, dim_size: int = -1) -> LazyBuffer:
  """Take's gradient: a tensor of shape where each element sums the grads of the positions that read it. Half
  types add in float32."""
  wide = grad.cast(dtypes.float32) if grad.dtype.itemsize < 4 else grad
  node = LazyBuffer.load(LoadOps.CUSTOM, shape, wide.dtype, grad.device, arg=ScatterAdd(prod(shape[len(shape) - row_dims:]), dim_size),
                         srcs=(wide.in_flat_order(), positions.in_flat_order()))
  return node.cast(grad.dtype)
