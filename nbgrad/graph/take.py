"""Indexed reads as custom graph nodes: advanced indexing and gather read x at positions that index tensors
give, an O(n) loop that a fused loop nest could only express by comparing every index with every position.

x's last dims that no index touches are read whole, as rows (an embedding's vectors): the positions are then flat
indices of rows' first elements into x seen as contiguous, one per row, -1 where an index was out of range (the
row reads 0). The engine computes that tensor from the index tensors and aranges, fused. One index tensor on x's
first dim (x[idx], an embedding lookup) goes in as it is, and the kernel itself counts negative indices from the
end and reads 0 out of range (dim_size >= 0): no second kernel, and a dozen fewer ops to build. So do one index
tensor on a later dim (x[:, idx]: the same rows in each group of the dims before it) and a gather's index (the next
rows in each group), take_along's."""
from __future__ import annotations
from dataclasses import dataclass
from nbgrad.dtype import dtypes
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps
from nbgrad.graph.view import contiguous_strides, prod


@dataclass(frozen=True)
class Rows:
  """Which rows of row elements a take's positions name in a flat buffer. With dim_size < 0 a position is the flat
  index of its row's first element (-1: none). With dim_size >= 0 it is an index into a dim that long whose rows
  start row_step elements apart (counted from the end when negative, if wrap; out of range: none). There are then
  groups groups of that dim (the dims before it), group_step elements apart, and the positions name rows in each:
  the same ones (shared: x[:, idx]) or the next ones (a gather); and consecutive positions of a group are lanes of
  rows, each lane's rows row elements after the last one's (a gather along a dim with dims after it)."""
  row: int
  dim_size: int = -1
  row_step: int = 0
  groups: int = 1
  group_step: int = 0
  lanes: int = 1
  shared: bool = True
  wrap: bool = True

  def scalars(self) -> tuple: return (self.row, self.dim_size, self.row_step, self.groups, self.group_step, self.lanes, self.shared, self.wrap)

  def along(self) -> str:
    return "" if self.groups == 1 and self.lanes == 1 else f"_in_{self.groups}_groups" + (f"_of_{self.lanes}_lanes" if self.lanes > 1 else "")


@dataclass(frozen=True)
class Take:
  """out is the rows of x that positions name (Rows), read from x's flat buffer from offset on; a position that
  names none reads zeros."""
  offset: int
  rows: Rows

  @property
  def name(self) -> str: return f"take_rows_of_{self.rows.row}{self.rows.along()}"

  def run(self, out, x, positions):
    from nbgrad.jit.take import take   # the CPU routine: the graph layer does not load a device's code
    take(out, x, positions, self.offset, self.rows.scalars())

  def run_cuda(self, backend, out, x, positions):
    from nbgrad.cuda.gather import take
    take(out, x, positions, self.offset, self.rows.scalars())


@dataclass(frozen=True)
class ScatterAdd:
  """The gradient of Take: out (contiguous) is zero plus each row of grad added to the row its position names."""
  rows: Rows

  @property
  def name(self) -> str: return f"scatter_add_rows_of_{self.rows.row}{self.rows.along()}"

  def run(self, out, grad, positions):
    from nbgrad.jit.take import scatter_add
    scatter_add(out, grad, positions, self.rows.scalars())

  def run_cuda(self, backend, out, grad, positions):
    from nbgrad.cuda.gather import scatter_add
    scatter_add(out, grad, positions, self.rows.scalars())


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
  row = prod(row_shape)
  if (window := _window(x)) is not None:
    strides, start, dense = window
    if dim_size >= 0 and x.base.buffer is not None and strides[0] >= 0 and all(dense[1:]) and x.shape[0] != 1:
      return _take_node(x, start, positions, positions.shape + row_shape, Rows(row, dim_size, strides[0]))
    if all(dense): return _take_node(x, start, positions, positions.shape + row_shape, Rows(row, dim_size, row))
  return _take_node(x.contiguous(), 0, positions, positions.shape + row_shape, Rows(row, dim_size, row))


def _rows_along(shape: tuple[int, ...], axis: int, shared: bool, wrap: bool) -> Rows:
  """The Rows of indices along axis of a tensor of shape: shared, one index tensor's rows in every group of the dims
  before axis (x[:, idx], index_select); else an index of the tensor's shape but along axis, one element each
  (gather)."""
  groups, size, inner = prod(shape[:axis]), shape[axis], prod(shape[axis + 1:])
  if shared: return Rows(inner, size, inner, groups, size * inner, 1, True, wrap)
  return Rows(1, size, inner, groups, size * inner, inner, False, wrap)


def take_along(x: LazyBuffer, index: LazyBuffer, axis: int, shared: bool, wrap: bool) -> LazyBuffer:
  """x's rows along axis at index (_rows_along's Rows): of shape x.shape[:axis] + index.shape + x.shape[axis + 1:]
  when shared, else index's shape."""
  shape = x.shape[:axis] + index.shape + x.shape[axis + 1:] if shared else index.shape
  rows = _rows_along(x.shape, axis, shared, wrap)
  if (window := _window(x)) is not None and all(window[2]): return _take_node(x, window[1], index, shape, rows)
  return _take_node(x.contiguous(), 0, index, shape, rows)


def _window(x: LazyBuffer):
  """(strides, start, whether each dim is dense) of x as one strided window of its base, or None."""
  if x.base.op is LoadOps.CONST or (window := x.view.strided()) is None: return None
  strides, start = window
  return strides, start, [s == c or n == 1 for s, c, n in zip(strides, contiguous_strides(x.shape), x.shape)]


def _take_node(source: LazyBuffer, offset: int, positions: LazyBuffer, shape: tuple, rows: Rows) -> LazyBuffer:
  return LazyBuffer.load(LoadOps.CUSTOM, shape, source.dtype, source.device, arg=Take(offset, rows), srcs=(source, positions.in_flat_order()))


def scatter_add(grad: LazyBuffer, positions: LazyBuffer, shape: tuple[int, ...], row_dims: int, dim_size: int = -1) -> LazyBuffer:
  """Take's gradient: a tensor of shape where each element sums the grads of the positions that read it."""
  row = prod(shape[len(shape) - row_dims:])
  return scatter_add_rows(grad, positions, shape, Rows(row, dim_size, row))


def scatter_add_rows(grad: LazyBuffer, positions: LazyBuffer, shape: tuple[int, ...], rows: Rows) -> LazyBuffer:
  """Each row of grad added into zeros of shape (contiguous) at the row its position names. Half types add in
  float32."""
  wide = grad.cast(dtypes.float32) if grad.dtype.itemsize < 4 else grad
  node = LazyBuffer.load(LoadOps.CUSTOM, shape, wide.dtype, grad.device, arg=ScatterAdd(rows), srcs=(wide.in_flat_order(), positions.in_flat_order()))
  return node.cast(grad.dtype)
