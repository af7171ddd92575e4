"""Writes at gathered positions, at the Tensor level: scatter_add, scatter, scatter_reduce and index_add (torch's),
gather's adjoints. Element i of src (the part of it that index covers) lands at self's position
[..., index[..., i, ...], ...] along dim; an index out of range lands nowhere, as gather reads 0 for one.

scatter_add is a ScatterAddRows node (the take's gradient); the other reductions are graph/take.py's ScatterReduce
node, with torch's gradients: the gathered gradient for src (divided by the count for a mean; shared evenly among
the elements equal to a maximum or minimum; the product of the others for a product, exact at zeros), and for self
the gradient where self's value stays in the result."""
from __future__ import annotations
import numpy as np
from nbgrad import autograd as F
from nbgrad.dtype import check_storable, dtypes, HALF_FLOATS, index_dtype
from nbgrad.graph.take import scatter_reduce as scatter_reduce_node
from nbgrad.helpers import IndexMismatch, ShapeMismatch

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _landing(x, dim: int, index, src, name: str):
  """(dim, flat int positions in x (-1: nowhere), the part of src that index covers in x's dtype), checked as torch
  checks: index has x's dims and fits in src, and in x outside dim."""
  index = x._operand(index, f"{name} index")
  src = x._operand(src, f"{name} src") if not isinstance(src, (int, float, bool)) else type(x).full(index.shape, src, dtype=x.dtype, device=x.device)
  if not dtypes.is_int(index.dtype): raise IndexError(f"{name} index must be an int tensor, got {index.dtype}")
  if not index.ndim == src.ndim == x.ndim: raise IndexMismatch(f"{name} needs self, index and src of one rank, got {x.shape}, {index.shape} and {src.shape}")
  from nbgrad.tensor import resolve_axis
  dim = resolve_axis(dim, x.ndim)
  if x.ndim and (any(i > s for i, s in zip(index.shape, src.shape)) or any(i > s for d, (i, s) in enumerate(zip(index.shape, x.shape)) if d != dim)):
    raise IndexMismatch(f"{name} index {index.shape} must fit in src {src.shape}, and in self {x.shape} outside dim {dim}")
  flat, inside = x.reshape(x.shape or (1,))._positions_along(dim, index.reshape(index.shape or (1,)))
  positions = inside.where(flat, -1).cast(index_dtype(x.numel())).reshape(index.shape)
  return dim, positions, src.shrink(tuple((0, i) for i in index.shape)).cast(x.dtype)


def scatter_add(x, dim: int, index, src):
  """x with src's elements added at their positions, repeated positions adding up."""
  if x.dtype == dtypes.bool: raise TypeError("scatter_add adds: it needs a number tensor, got bool")
  _, positions, added = _landing(x, dim, index, src, "scatter_add")
  return x + F.ScatterAddRows.apply(added, positions, shape=x.shape, row_dims=0)


def _index_checked(x, dim: int, index, source, name: str):
  """(dim, index, source) for the index_ ops, checked as torch checks them: a 1-D index of the slices along dim that
  source (self's shape but the index's length along dim) goes to."""
  from nbgrad.tensor import resolve_axis
  index, source = x._operand(index, f"{name} index"), x._operand(source, f"{name} source")
  dim = resolve_axis(dim, x.ndim)
  if index.ndim != 1 or source.ndim != x.ndim or source.shape[dim] != index.shape[0] or \
     any(a != b for d, (a, b) in enumerate(zip(source.shape, x.shape)) if d != dim):
    raise IndexMismatch(f"{name} needs a 1-D index and a source of self's shape but the index's length along dim {dim}: "
                        f"self {x.shape}, index {index.shape}, source {source.shape}")
  return dim, index, source


def _as_vector(op):
  """op for a 0-d self (and 0-d index and source) too, as torch takes them: done on them as 1-element vectors."""
  def on_vectors(x, dim, index, source, *args):
    if x.ndim: return op(x, dim, index, source, *args)
    index, source = (x._operand(t, f"{op.__name__} {name}") for t, name in ((index, "index"), (source, "source")))
    vector = lambda t: t.reshape(1) if t.ndim == 0 else t
    return op(x.reshape(1), dim, vector(index), vector(source), *args).reshape(())
  return on_vectors


def _index_along(x, dim: int, index, source, name: str):
  """(dim, index spread over source's shape, source) for the index_ ops that land element by element."""
  dim, index, source = _index_checked(x, dim, index, source, name)
  return dim, index.reshape(tuple(-1 if d == dim else 1 for d in range(x.ndim))).expand(source.shape), source


@_as_vector
def index_add(x, dim: int, index, source, alpha=1):
  """x with alpha * source[..., i, ...] added at [..., index[i], ...] along dim (repeated positions add up): whole
  slices at a time, rows of the tensors with dim moved first (an index out of range adds nothing)."""
  if x.dtype == dtypes.bool: raise TypeError("index_add adds: it needs a number tensor, got bool")
  dim, index, source = _index_checked(x, dim, index, source, "index_add")
  size, row = x.shape[dim], x.numel() // max(x.shape[dim], 1)
  if not dtypes.is_int(index.dtype): raise IndexError(f"index_add index must be an int tensor, got {index.dtype}")
  positions = ((index >= 0) & (index < size)).where(index.cast(index_dtype(x.numel())) * row, -1)   # in range before the cast
  rows = (source * alpha if alpha != 1 else source).cast(x.dtype).movedim(dim, 0)
  added = F.ScatterAddRows.apply(rows, positions, shape=(size,) + rows.shape[1:], row_dims=x.ndim - 1)
  return x + added.movedim(0, dim)


@_as_vector
def index_reduce(x, dim: int, index, source, reduce: str, include_self: bool = True):
  """x with source[..., i, ...] combined into [..., index[i], ...] along dim by reduce ("prod", "mean", "amax" or
  "amin"), as scatter_reduce combines (torch's index_reduce)."""
  if reduce not in REDUCTIONS[1:]: raise ValueError(f"index_reduce reduce must be one of {', '.join(REDUCTIONS[1:])}, got {reduce!r}")
  return scatter_reduce(x, *_index_along(x, dim, index, source, "index_reduce"), reduce, include_self)


@_as_vector
def index_copy(x, dim: int, index, source):
  """x with source[..., i, ...] written at [..., index[i], ...] along dim."""
  return scatter(x, *_index_along(x, dim, index, source, "index_copy"))


def index_fill(x, dim: int, index, value):
  """x with value at the slices [..., index[i], ...] along dim (a negative index counts from the end); a tensor
  value (0-d) gets the gradient of the slices."""
  from nbgrad.tensor import resolve_axis
  index = x._operand(index, "index_fill index")
  if index.ndim > 1 or not dtypes.is_int(index.dtype): raise IndexError(f"index_fill needs a 1-D int index, got shape {index.shape} of {index.dtype}")
  dim = resolve_axis(dim, x.ndim)
  size = x.shape[dim] if x.ndim else 1
  wrapped = (index < 0).where(index + size, index).reshape(1, -1)
  filled = (type(x).arange(size, device=x.device).reshape(-1, 1) == wrapped).any(1)
  filled = filled.reshape((size,) + (1,) * (x.ndim - dim - 1)) if x.ndim else filled.reshape(())
  if isinstance(value, type(x)):
    if value.ndim: raise ValueError(f"index_fill value must be a number or a 0-d tensor, got shape {value.shape}")
    value = value.cast(x.dtype)
  else: check_storable(value, x.dtype, "index_fill value")
  return filled.where(value, x).cast(x.dtype)


def put(x, index, source, accumulate: bool = False):
  """x with source's elements at the flat positions index (torch's put; negative positions count from the end),
  added up when accumulate, else one of a repeated position's kept."""
  index, source = x._operand(index, "put index"), x._operand(source, "put source")
  if not dtypes.is_int(index.dtype): raise IndexError(f"put index must be an int tensor, got {index.dtype}")
  if index.numel() != source.numel(): raise ShapeMismatch(f"put needs as many source elements as indices, got {source.shape} and {index.shape}")
  positions = (index < 0).where(index + x.numel(), index).flatten()
  write = scatter_add if accumulate else scatter
  return write(x.flatten(), 0, positions, source.flatten()).reshape(x.shape)


def index_put(x, indices, values, accumulate: bool = False):
  """x with values (broadcast) at x[indices] (torch's index_put: what t[indices] = values writes, out of place and
  with gradients), added up when accumulate. An index tensor's position out of range writes nothing, as scatter's:
  the positions are read as x[indices] reads (0 out of range) from the positions less numel, then numel added back."""
  n = x.numel()
  shifted = (type(x).arange(n, device=x.device) - n).reshape(x.shape)
  positions = shifted[tuple(indices) if isinstance(indices, (list, tuple)) else indices] + n
  values = x._operand(values, "index_put values") if not isinstance(values, (bool, int, float)) else type(x).full((), values, dtype=x.dtype, device=x.device)
  return put(x, positions, values.expand(positions.shape), accumulate)


def into_view(x, src, view, name: str):
  """x with src written where view (a function of a tensor: a slice, a diagonal) takes x's elements."""
  positions = view(type(x).arange(x.numel(), device=x.device).reshape(x.shape))
  src = x._operand(src, f"{name} src")
  if src.shape != positions.shape: raise ShapeMismatch(f"{name} needs src of shape {positions.shape}, got {src.shape}")
  return put(x, positions, src)


def masked_scatter(x, mask, source):
  """x with source's elements, in order, at the positions where mask (broadcast to x) is True (torch's masked_scatter).
  How many are taken depends on the mask's values: it is read here."""
  mask, source = x._operand(mask, "masked_scatter mask"), x._operand(source, "masked_scatter source")
  if mask.dtype != dtypes.bool: raise TypeError(f"masked_scatter needs a bool mask, got {mask.dtype}")
  from nbgrad.tensor import broadcast_shape
  if broadcast_shape(mask.shape, x.shape) != x.shape: raise IndexMismatch(f"masked_scatter mask {mask.shape} does not broadcast to {x.shape}")
  taken = np.flatnonzero(np.broadcast_to(mask.numpy(), x.shape))
  if source.numel() < taken.size: raise ShapeMismatch(f"masked_scatter needs {taken.size} source elements, got {source.numel()}")
  return put(x, type(x)(taken.astype(np.int32), device=x.device), source.flatten()[:taken.size])


def scatter(x, dim: int, index, src, reduce=None):
  """x with src's elements (or one number) written at their positions; of a repeated position the last stays.
  torch's reduce "add" or "multiply" combines them with x's values instead (scatter_reduce's "sum" and "prod")."""
  if reduce is None: return _reduced(x, dim, index, src, "set", True, "scatter")
  if reduce not in ("add", "multiply"): raise ValueError(f"scatter reduce must be 'add' or 'multiply', got {reduce!r}")
  return _reduced(x, dim, index, src, "sum" if reduce == "add" else "prod", True, "scatter")


def scatter_reduce(x, dim: int, index, src, reduce: str, include_self: bool = True):
  """x with src's elements combined at their positions by reduce ("sum", "prod", "mean", "amax" or "amin"), x's own
  value among them unless include_self is False (a position nothing lands on keeps it either way)."""
  if reduce not in REDUCTIONS: raise ValueError(f"scatter_reduce reduce must be one of {', '.join(REDUCTIONS)}, got {reduce!r}")
  return _reduced(x, dim, index, src, reduce, include_self, "scatter_reduce")


def _reduced(x, dim: int, index, src, op: str, include_self: bool, name: str):
  if x.dtype == dtypes.bool and op not in ("set", "amax", "amin"): raise TypeError(f"{name} {op} needs a number tensor, got bool")
  _, positions, values = _landing(x, dim, index, src, name)
  wide = dtypes.float32 if x.dtype in HALF_FLOATS else x.dtype   # the routine computes in float32
  make = lambda base, part, where: scatter_reduce_node(base, part, where, op, include_self)

  def gradient(base, part, where, result, grad):
    at = lambda t: F.Take.apply(t, where, row_dims=0)   # t's values at the positions (0 for one landing nowhere)
    landed = F.ScatterAddRows.apply(part.ones_like(), where, shape=base.shape, row_dims=0)   # how many land on each
    kept = (landed == 0).where(grad, 0.0)   # where self's value stays alone
    if op in ("set", "sum"): return (grad if op == "sum" and include_self else kept), at(grad), None
    if op == "mean":
      share = grad / (landed + include_self).maximum(1)
      return (share if include_self else kept), at(share), None
    if op in ("amax", "amin"):
      def same(a, b): return (a == b) | ((a != a) & (b != b))
      from_self = same(base, result) if include_self else landed == 0
      from_part = same(part, at(result)) & (where >= 0)
      ties = from_self + F.ScatterAddRows.apply(from_part.cast(base.dtype), where, shape=base.shape, row_dims=0)
      share = grad / ties.maximum(1)
      return from_self.where(share, 0.0), from_part.where(at(share), 0.0), None
    zeros = F.ScatterAddRows.apply((part == 0).cast(base.dtype), where, shape=base.shape, row_dims=0) + ((base == 0) & include_self)
    nonzero = type(base)(scatter_reduce_node(((base == 0) | (not include_self)).where(1.0, base).lazydata,
                                             (part == 0).where(1.0, part).lazydata, where.lazydata, "prod", True))
    def others(value, zeros, nonzero, result):   # the product of the other elements of a value's group
      return (value == 0).where((zeros == 1).where(nonzero, 0.0), (zeros == 0).where(result / value, 0.0))
    grad_self = grad * others(base, zeros, nonzero, result) if include_self else kept
    return grad_self, at(grad) * others(part, at(zeros), at(nonzero), at(result)), None

  out = F.custom(make, gradient, x.cast(wide), values.cast(wide), positions)
  return out.cast(x.dtype)
