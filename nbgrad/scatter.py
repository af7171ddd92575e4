"""Writes at gathered positions, at the Tensor level: scatter_add, scatter, scatter_reduce and index_add (torch's),
gather's adjoints. Element i of src (the part of it that index covers) lands at self's position
[..., index[..., i, ...], ...] along dim; an index out of range lands nowhere, as gather reads 0 for one.

scatter_add is a ScatterAddRows node (the take's gradient); the other reductions are graph/take.py's ScatterReduce
node, with torch's gradients: the gathered gradient for src (divided by the count for a mean; shared evenly among
the elements equal to a maximum or minimum; the product of the others for a product, exact at zeros), and for self
the gradient where self's value stays in the result."""
from __future__ import annotations
from nbgrad import autograd as F
from nbgrad.dtype import dtypes
from nbgrad.graph.take import scatter_reduce as scatter_reduce_node
from nbgrad.helpers import IndexMismatch

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
  positions = inside.where(flat, -1).cast(dtypes.int32 if x.numel() < 2**31 else dtypes.int64).reshape(index.shape)
  return dim, positions, src.shrink(tuple((0, i) for i in index.shape)).cast(x.dtype)


def scatter_add(x, dim: int, index, src):
  """x with src's elements added at their positions, repeated positions adding up."""
  if x.dtype == dtypes.bool: raise TypeError("scatter_add adds: it needs a number tensor, got bool")
  _, positions, added = _landing(x, dim, index, src, "scatter_add")
  return x + F.ScatterAddRows.apply(added, positions, shape=x.shape, row_dims=0)


def index_add(x, dim: int, index, source, alpha=1):
  """x with alpha * source[..., i, ...] added at [..., index[i], ...] along dim (repeated positions add up)."""
  from nbgrad.tensor import resolve_axis
  index, source = x._operand(index, "index_add index"), x._operand(source, "index_add source")
  dim = resolve_axis(dim, x.ndim)
  if index.ndim != 1 or source.ndim != x.ndim or source.shape[dim] != index.shape[0] or \
     any(a != b for d, (a, b) in enumerate(zip(source.shape, x.shape)) if d != dim):
    raise IndexMismatch(f"index_add needs a 1-D index and a source of self's shape but the index's length along dim {dim}: "
                        f"self {x.shape}, index {index.shape}, source {source.shape}")
  spread = index.reshape(tuple(-1 if d == dim else 1 for d in range(x.ndim))).expand(source.shape)
  return scatter_add(x, dim, spread, source * alpha if alpha != 1 else source)


def scatter(x, dim: int, index, src):
  """x with src's elements (or one number) written at their positions; of a repeated position the last stays."""
  return _reduced(x, dim, index, src, "set", True, "scatter")


def scatter_reduce(x, dim: int, index, src, reduce: str, include_self: bool = True):
  """x with src's elements combined at their positions by reduce ("sum", "prod", "mean", "amax" or "amin"), x's own
  value among them unless include_self is False (a position nothing lands on keeps it either way)."""
  if reduce not in REDUCTIONS: raise ValueError(f"scatter_reduce reduce must be one of {', '.join(REDUCTIONS)}, got {reduce!r}")
  return _reduced(x, dim, index, src, reduce, include_self, "scatter_reduce")


def _reduced(x, dim: int, index, src, op: str, include_self: bool, name: str):
  if x.dtype == dtypes.bool and op not in ("set", "amax", "amin"): raise TypeError(f"{name} {op} needs a number tensor, got bool")
  _, positions, values = _landing(x, dim, index, src, name)
  wide = dtypes.float32 if x.dtype in (dtypes.float16, dtypes.bfloat16) else x.dtype   # the routine computes in float32
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
