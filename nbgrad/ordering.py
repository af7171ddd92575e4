"""Ops that order, rank, count and bin values, at the Tensor level: sorting and what it picks (top-k, k-th values,
modes, medians, quantiles), searches in sorted rows, and the distinct values, nonzero positions and histograms."""
from __future__ import annotations
import math
from typing import Any, NamedTuple, Optional
import numpy as np
from nbgrad.dtype import dtypes, HALF_FLOATS, least_upper_dtype
from nbgrad.graph.sort import argsort as argsort_node, searchsorted as searchsorted_node
from nbgrad.helpers import ShapeMismatch


class ValuesIndices(NamedTuple):
  """A (values, indices) result, as torch names it: r.values and r.indices, and a tuple still (v, i = r)."""
  values: Any
  indices: Any


def argsort(x, dim: int = -1, descending: bool = False, stable: bool = True):
  """The int32 positions along dim that put the values in ascending (descending) order, as torch's argsort. The sort
  is stable whatever stable says (equal values keep their order), and NaN sorts above inf, as in torch."""
  return _first_in_order(x, dim, descending, None)


def _first_in_order(x, dim: int, descending: bool, k: Optional[int]):
  from nbgrad.tensor import resolve_axis
  dim = resolve_axis(dim, x.ndim)   # a 0-d tensor has axes 0 and -1
  if x.ndim == 0: return _first_in_order(x.reshape(1), 0, descending, k).reshape(())
  return type(x)(argsort_node(x.lazydata, dim, descending, k), device=x.device)._cut_from(x)._after_op()


def sort(x, dim: int = -1, descending: bool = False, stable: bool = True):
  """(values, indices) of the values along dim in order (torch's sort); the values pass the gradient back."""
  indices = x.argsort(dim, descending)
  return (x.gather(dim, indices) if x.ndim else x * 1), indices


def mode(x, dim: int = -1, keepdim: bool = False):
  """(values, int32 indices) of the most frequent value along dim, as torch's mode: the smallest of equally frequent
  ones, at its last position (NaNs each count once). The counts are found here; the values pass the gradient back."""
  from nbgrad.tensor import resolve_axis
  dim = resolve_axis(dim, x.ndim)
  at_least_1d = x if x.ndim else x.reshape(1)
  if at_least_1d.shape[dim] == 0: raise ValueError(f"mode of an empty dim {dim} of shape {x.shape}")
  rows = np.moveaxis(at_least_1d.numpy(), dim, -1)
  order = np.argsort(rows, axis=-1, kind="stable")   # equal values keep their order: a run ends at its last position
  ordered = np.take_along_axis(rows, order, -1)
  n = rows.shape[-1]
  position = np.arange(n)
  starts = np.concatenate([np.ones(rows.shape[:-1] + (1,), bool), ordered[..., 1:] != ordered[..., :-1]], -1)
  ends = np.concatenate([starts[..., 1:], np.ones(rows.shape[:-1] + (1,), bool)], -1)
  run_start = np.maximum.accumulate(np.where(starts, position, 0), -1)
  run_end = np.flip(np.minimum.accumulate(np.flip(np.where(ends, position, n), -1), -1), -1)
  most = np.argmax(run_end - run_start, -1)[..., None]   # the first longest run: the smallest value
  picked = np.take_along_axis(order, np.take_along_axis(run_end, most, -1), -1)
  indices = type(x)(np.moveaxis(picked, -1, dim).astype(np.int32), device=x.device)
  values = at_least_1d.gather(dim, indices)
  if not x.ndim: return values.reshape(()), indices.reshape(())
  return (values, indices) if keepdim else (values.squeeze(dim), indices.squeeze(dim))


def topk(x, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
  """(values, indices) of the k largest (smallest) values along dim, in order (torch's topk)."""
  from nbgrad.tensor import _check_int, resolve_axis
  _check_int("topk k", k)
  dim = resolve_axis(dim, x.ndim)
  size = x.shape[dim] if x.ndim else 1
  if k > size: raise ValueError(f"topk k={k} is more than the {size} elements along dim {dim} of {x.shape}")
  if x.ndim == 0: return x * 1, x.argsort()   # k is 0 or 1; torch gives the value either way
  indices = _first_in_order(x, dim, largest, k)
  return x.gather(dim, indices), indices


def kthvalue(x, k: int, dim: int = -1, keepdim: bool = False):
  """(values, int32 indices) of the k-th smallest values along dim (torch's kthvalue; k counts from 1)."""
  from nbgrad.tensor import _check_int, resolve_axis
  _check_int("kthvalue k", k, low=1)
  dim = resolve_axis(dim, x.ndim)
  at_least_1d = x if x.ndim else x.reshape(1)
  if k > at_least_1d.shape[dim]:
    raise ValueError(f"kthvalue k={k} is more than the {at_least_1d.shape[dim]} elements along dim {dim} of {x.shape}")
  values, order = at_least_1d.sort(dim)
  picked = tuple(t.shrink(tuple((k - 1, k) if d == dim else None for d in range(at_least_1d.ndim))) for t in (values, order))
  if not x.ndim: return tuple(t.reshape(()) for t in picked)
  return picked if keepdim else tuple(t.squeeze(dim) for t in picked)


def median(x, dim: Optional[int] = None, keepdim: bool = False):
  """torch's median: the lower of the two middle values, NaN where the values hold one. Over all elements (no
  dim) the value; along dim (values, int32 indices), whose values pass the gradient back."""
  return _middle(x, dim, keepdim, skip_nan=False)


def nanmedian(x, dim: Optional[int] = None, keepdim: bool = False):
  """median of the values that are not NaN (NaN where all are)."""
  return _middle(x, dim, keepdim, skip_nan=True)


def _middle(x, dim, keepdim: bool, skip_nan: bool):
  from nbgrad.tensor import resolve_axis
  if dim is None:
    value = _middle(x.flatten(), 0, False, skip_nan)[0]
    if x.requires_grad: value = _shared_among_ties(x, value)
    return value.reshape((1,) * x.ndim) if keepdim else value
  dim = resolve_axis(dim, x.ndim)
  if x.ndim == 0: return tuple(t.reshape(()) for t in _middle(x.reshape(1), 0, keepdim, skip_nan))
  n = x.shape[dim]
  if n == 0: raise ValueError(f"median of an empty dim: dim {dim} of shape {x.shape}")
  values, order = x.sort(dim)
  counted = n - x.isnan().sum(dim, keepdim=True)   # NaNs sort last: the first of them is at position counted
  position = ((counted - 1) // 2).maximum(0) if skip_nan else (counted < n).where(counted, (n - 1) // 2)
  picked = values.gather(dim, position), order.gather(dim, position)
  return picked if keepdim else tuple(t.squeeze(dim) for t in picked)


def _shared_among_ties(x, value):
  """value, one of x's elements, with its gradient shared evenly among the elements equal to it (NaN among the
  NaNs), as torch's median of all elements shares it."""
  from nbgrad.autograd import custom
  kept, given = value.detach(), x.detach()
  ties = (given == kept) | (given.isnan() & kept.isnan())
  return custom(lambda _: kept.lazydata, lambda x, result, grad: (None if x is None else grad * ties.cast(grad.dtype) / ties.sum().cast(grad.dtype),), x)


def quantile(x, q, dim: Optional[int] = None, keepdim: bool = False, interpolation: str = "linear"):
  """torch's quantile: the q-th quantiles (q a number or a 1-D list or tensor of them, in [0, 1]) of the values along
  dim (of all of them without one), between the sorted values at rank q * (n - 1) as interpolation says ("linear",
  "lower", "higher", "midpoint" or "nearest"); NaN where the values hold one. Several q give a first dim of them."""
  return _quantile(x, q, dim, keepdim, interpolation, skip_nan=False)


def nanquantile(x, q, dim: Optional[int] = None, keepdim: bool = False, interpolation: str = "linear"):
  """quantile of the values that are not NaN (NaN where all are)."""
  return _quantile(x, q, dim, keepdim, interpolation, skip_nan=True)


def _quantile(x, q, dim, keepdim: bool, interpolation: str, skip_nan: bool):
  from nbgrad.tensor import Tensor, resolve_axis
  if not dtypes.is_float(x.dtype): raise TypeError(f"quantile needs a float tensor, got {x.dtype}")
  if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
    raise ValueError(f"quantile interpolation must be linear, lower, higher, midpoint or nearest, got {interpolation!r}")
  qs = np.asarray(q.numpy() if isinstance(q, Tensor) else q, dtype=np.float64)
  if qs.ndim > 1 or not ((qs >= 0) & (qs <= 1)).all(): raise ValueError(f"quantile q must be in [0, 1], one number or a 1-D list, got {q!r}")
  samples, axis = (x.reshape(-1), 0) if dim is None else (x if x.ndim else x.reshape(1), resolve_axis(dim, x.ndim))
  n = samples.shape[axis]
  if n == 0: raise ValueError(f"quantile of no values: shape {x.shape}")
  values = samples.sort(axis)[0]
  nans = samples.isnan().sum(axis, keepdim=True)
  counted = n - nans if skip_nan else Tensor.full(nans.shape, n, dtype=dtypes.int32, device=x.device)
  results = []
  rank_dtype = least_upper_dtype(x.dtype, dtypes.float32)   # torch's: q * (n - 1) in the values' dtype (float32 at least)
  for fraction in qs.reshape(-1).tolist():
    rank = (counted - 1).maximum(0).cast(rank_dtype) * fraction
    low, high = rank.floor(), rank.ceil()
    lower, upper = values.gather(axis, low.cast(dtypes.int32)), values.gather(axis, high.cast(dtypes.int32))
    # torch's lerp (from upper's side for weights of 1/2 and more): (lower + upper) / 2 overflowed between two
    # values near the dtype's largest
    out = {"linear": lambda: lower.lerp(upper, (rank - low).cast(x.dtype)), "lower": lambda: lower,
           "higher": lambda: upper, "midpoint": lambda: lower.lerp(upper, 0.5),
           "nearest": lambda: values.gather(axis, rank.round().cast(dtypes.int32))}[interpolation]()
    out = (counted == 0).where(math.nan, out) if skip_nan else (nans > 0).where(math.nan, out)
    if dim is None: out = out.reshape((1,) * x.ndim if keepdim else ())
    elif not keepdim: out = out.squeeze(axis) if x.ndim else out.reshape(())
    results.append(out)
  return results[0] if qs.ndim == 0 else Tensor.stack(*results) if results else Tensor.zeros((0,) + x.shape, dtype=x.dtype)


def searchsorted(x, values, right: bool = False, side: Optional[str] = None):
  """For sorted rows x (..., M), the int32 positions where values (..., K) would go to keep each row sorted:
  before equal elements (right, side="right": after them), NaN sorting last, as torch's and numpy's searchsorted.
  A 1-D x serves values of any shape. A binary search in the values' common dtype (graph/sort.py's node)."""
  if not isinstance(right, (bool, np.bool_)): raise TypeError(f"searchsorted right must be a bool, got {right!r}")
  if side is not None:
    if side not in ("left", "right"): raise ValueError(f"searchsorted side must be 'left' or 'right', got {side!r}")
    if right and side == "left": raise ValueError("searchsorted got side='left' and right=True, which contradict each other")
    right = side == "right"
  right = bool(right)
  values = x._operand_or_number(values)
  if x.ndim == 0: raise ValueError("searchsorted needs a sorted sequence of at least 1 dim, got a 0-d tensor")
  if x.ndim > 1 and (values.ndim != x.ndim or values.shape[:-1] != x.shape[:-1]):
    raise ShapeMismatch(f"searchsorted of {values.shape} values in rows {x.shape}: the leading dims must match")
  x._check_same_device(values)
  common = least_upper_dtype(x.dtype, values.dtype)
  if common in HALF_FLOATS: common = dtypes.float32   # stored as bits: searched as float32
  if common == dtypes.bool: common = dtypes.int8
  length, row_count = x.shape[-1], math.prod(x.shape[:-1])
  rows = x.reshape(row_count, length)
  points = values.reshape(row_count, values.shape[-1] if x.ndim > 1 else values.numel())
  found = searchsorted_node(rows.cast(common).lazydata, points.cast(common).lazydata, right)
  return type(x)(found, device=x.device).reshape(values.shape)._cut_from(x, values)._after_op()


def bucketize(x, boundaries, right: bool = False):
  """torch's bucketize: the index of the bucket each value falls in, boundaries[i - 1] < v <= boundaries[i]
  (right: boundaries[i - 1] <= v < boundaries[i]), for sorted 1-D boundaries."""
  boundaries = x._operand(boundaries, "bucketize boundaries")
  if boundaries.ndim != 1: raise ShapeMismatch(f"bucketize needs 1-D boundaries, got shape {boundaries.shape}")
  return boundaries.searchsorted(x, right=right)


def nonzero(x, as_tuple: bool = False):
  """torch's nonzero: the int32 indices of the nonzero elements, as rows (n, ndim), or with as_tuple one 1-D tensor
  per dim. Its size depends on the values: they are computed here."""
  from nbgrad.tensor import Tensor
  values = x.numpy()   # bfloat16 comes out as float32: the same zeros
  if x.ndim == 0:   # as torch: one row of no index if the value is nonzero, else none (as a tuple: position 0)
    count = int(values != 0)
    return (Tensor(np.zeros(count, np.int32), device=x.device),) if as_tuple else Tensor(np.zeros((count, 0), np.int32), device=x.device)
  found = np.nonzero(values)
  if as_tuple: return tuple(Tensor(i.astype(np.int32), device=x.device) for i in found)
  return Tensor(np.stack(found, axis=-1).astype(np.int32), device=x.device)


def unique(x, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None):  # noqa: A002
  """torch's unique: the distinct values (or, along dim, distinct slices) in ascending order, with the int32 index
  of each element's value (return_inverse) and how often each appears (return_counts). Computed here."""
  from nbgrad.tensor import Tensor, resolve_axis
  axis = None if dim is None else resolve_axis(dim, x.ndim)
  found = np.unique(x.numpy(), return_inverse=return_inverse, return_counts=return_counts, axis=axis)   # only what is asked
  values, *rest = found if isinstance(found, tuple) else (found,)
  out = [Tensor(values, dtype=x.dtype, device=x.device)]
  if return_inverse: out.append(Tensor(rest.pop(0).astype(np.int32).reshape(x.shape if axis is None else -1), device=x.device))
  if return_counts: out.append(Tensor(rest.pop(0).astype(np.int32), device=x.device))
  return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(x, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None):
  """torch's unique_consecutive: each run of equal values (or, along dim, equal slices) once, in order, with the int32
  run of each element (return_inverse) and the runs' lengths (return_counts). Computed here."""
  from nbgrad.tensor import Tensor, resolve_axis
  axis = None if dim is None else resolve_axis(dim, x.ndim)
  values = x.numpy().reshape(-1) if axis is None else np.moveaxis(x.numpy(), axis, 0)
  rows = values.reshape(len(values), math.prod(values.shape[1:]))
  starts = np.concatenate([[True], (rows[1:] != rows[:-1]).any(axis=1)]) if len(values) else np.zeros(0, bool)
  kept = values[starts] if axis is None else np.moveaxis(values[starts], 0, axis)
  out = [Tensor(np.ascontiguousarray(kept), dtype=x.dtype, device=x.device)]
  run = np.cumsum(starts) - 1
  if return_inverse: out.append(Tensor(run.astype(np.int32).reshape(x.shape if axis is None else -1), device=x.device))
  if return_counts: out.append(Tensor(np.diff(np.flatnonzero(np.append(starts, True))).astype(np.int32), device=x.device))
  return out[0] if len(out) == 1 else tuple(out)


def histc(x, bins: int = 100, min: float = 0, max: float = 0):  # noqa: A002
  """torch's histc: counts of the values in bins equal parts of [min, max] (the last part closed), NaN and values
  outside left out; min == max (the default) takes the values' own range, widened by 1 each way if they are all
  equal (computed here). A range that is not finite raises ValueError."""
  from nbgrad.tensor import _check_int
  _check_int("histc bins", bins, low=1)
  floats = x._float_input()
  low, high = float(min), float(max)
  if not (math.isfinite(low) and math.isfinite(high)): raise ValueError(f"histc range [{low}, {high}] is not finite")
  if low == high:
    low, high = _value_range(floats, (0.0, 0.0))
    if low == high: low, high = low - 1, high + 1
  if low > high: raise ValueError(f"histc needs min <= max, got {low} and {high}")
  inside = (floats >= low) & (floats <= high)   # NaN compares false: left out
  place = ((floats - low) * (bins / (high - low))).floor().minimum(bins - 1)
  where = inside.where(place, -1).cast(dtypes.int32).reshape(-1)
  return type(x).zeros(bins, dtype=floats.dtype, device=x.device).scatter_add(0, where, floats.ones_like().reshape(-1))


def _value_range(x, empty: tuple[float, float]) -> tuple[float, float]:
  """The lowest and highest value, read here (empty when there is none); ValueError, as numpy's and torch's, when
  that range is not finite (a NaN or an infinity among the values)."""
  held = x.numpy().reshape(-1)
  if not held.size: return empty
  low, high = float(held.min()), float(held.max())
  if not (math.isfinite(low) and math.isfinite(high)): raise ValueError(f"the range of the values, [{low}, {high}], is not finite")
  return low, high


def histogram(x, bins=100, range=None, weight=None, density: bool = False):  # noqa: A002
  """(counts, edges) as torch's and numpy's histogram of a float tensor: bins equal parts of range (the values' own,
  widened by 0.5 each way if they are all equal) or the given increasing edges; a part holds its left edge, the last
  its right one too; NaN and values outside are left out. weight adds weights instead of ones; density divides the
  counts by their total and the parts' widths."""
  from nbgrad.tensor import Tensor, _check_int
  if not dtypes.is_float(x.dtype): raise TypeError(f"histogram needs a float tensor, got {x.dtype}")
  if isinstance(bins, (Tensor, list, tuple, np.ndarray)):
    edges = (bins if isinstance(bins, Tensor) else Tensor(np.asarray(bins), device=x.device)).cast(x.dtype)
    if edges.ndim != 1 or edges.shape[0] < 2: raise ValueError(f"histogram bin edges must be 1-D with at least 2 edges, got shape {edges.shape}")
  else:
    _check_int("histogram bins", bins, low=1)
    low, high = (float(range[0]), float(range[1])) if range is not None else _value_range(x, (0.0, 1.0))
    if low > high: raise ValueError(f"histogram range must be increasing, got {range}")
    if low == high: low, high = low - 0.5, high + 0.5
    edges = Tensor.linspace(low, high, bins + 1, dtype=x.dtype, device=x.device)
  count = edges.shape[0] - 1
  place = edges.searchsorted(x, right=True) - 1
  place = (x == edges[-1]).where(count - 1, place)   # the last part is closed on the right
  place = ((place >= 0) & (place < count)).where(place, -1).reshape(-1)   # outside, or NaN (searched past the end): nowhere
  added = x.ones_like() if weight is None else x._operand(weight, "histogram weight").cast(x.dtype)
  if added.shape != x.shape: raise ShapeMismatch(f"histogram weight of shape {added.shape} does not match {x.shape}")
  hist = Tensor.zeros(count, dtype=x.dtype, device=x.device).scatter_add(0, place, added.reshape(-1))
  if density: hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
  return hist, edges


def bincount(x, weights=None, minlength: int = 0):
  """torch's bincount of a 1-D tensor of ints >= 0: how often each value from 0 on appears (int32), or the sum of
  the weights at its positions (with the weights' gradient). The length is max + 1 at least: computed here."""
  from nbgrad.tensor import Tensor, _check_int
  _check_int("bincount minlength", minlength)
  if x.ndim != 1 or not dtypes.is_int(x.dtype): raise ValueError(f"bincount needs a 1-D int tensor, got shape {x.shape} of {x.dtype}")
  values = x.numpy()
  if values.size and values.min() < 0: raise ValueError(f"bincount needs values >= 0, got {values.min()}")
  length = max(minlength, int(values.max()) + 1 if values.size else 0)
  if weights is None: return Tensor.zeros(length, dtype=dtypes.int32, device=x.device).scatter_add(0, x, x.ones_like(dtype=dtypes.int32))
  weights = x._operand(weights, "bincount weights")
  if weights.shape != x.shape: raise ShapeMismatch(f"bincount weights of shape {weights.shape} do not match {x.shape}")
  weights = weights._float_input()
  return Tensor.zeros(length, dtype=weights.dtype, device=x.device).scatter_add(0, x, weights)
