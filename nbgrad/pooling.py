"""Pooling as torch.nn.functional pools, at the Tensor level: the sliding pools with padding, ceil_mode,
count_include_pad, divisor_override and return_indices, the adaptive pools, and max_unpool. A pool covers the last
len(kernel) dims of its input (1-D, 2-D, 3-D...), whatever dims come before them. Windows are laid out as
Tensor._windows lays them out, (..., *out, *kernel), so max and mean reduce their trailing dims alike."""
from __future__ import annotations
import functools
import math
from typing import NamedTuple, Optional
import numpy as np
from nbgrad.dtype import dtypes, HALF_FLOATS, least_upper_float
from nbgrad.helpers import ShapeMismatch


NOWHERE = dtypes.max(dtypes.int64)   # the flat position of a padding element: past every input element's


class PoolGeometry(NamedTuple):
  """Where a sliding pool's windows lie along each pooled dim."""
  kernel: tuple
  stride: tuple
  dilation: tuple
  padding: tuple
  out_size: tuple


def per_dim(name: str, value, count: int, low: int) -> tuple[int, ...]:
  """value (an int, or one per pooled dim) as count ints, each at least low."""
  from nbgrad.tensor import _is_int
  values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * count
  if len(values) != count or not all(_is_int(v) and v >= low for v in values):
    raise ValueError(f"{name} {value} must be {count} int(s) of at least {low}")
  return tuple(map(int, values))


def pooled_sizes(x, count: int, op: str) -> tuple[int, ...]:
  """The sizes of x's last count dims, which a pool needs present and not empty (as torch does)."""
  if count > x.ndim: raise ValueError(f"{op} over {count} dim(s) needs at least {count} dims, got {x.shape}")
  sizes = x.shape[x.ndim - count:]
  if 0 in sizes: raise ValueError(f"{op} needs non-empty pooled dims, got {x.shape}")
  return sizes


def geometry_of(x, dims: Optional[int], kernel_size, stride, dilation, padding, ceil_mode: bool) -> PoolGeometry:
  """torch's rules: padding at most half the kernel; along each dim floor (ceil with ceil_mode) of
  (size + 2 padding - dilation (kernel - 1) - 1) / stride, plus 1, windows, less a last ceil_mode window that would
  start in the right padding. dims None: an int kernel_size pools 2 dims, a sequence len(kernel_size)."""
  kernel, stride, dilation = x._pool_args(kernel_size, stride, dilation, dims)
  if dims is not None and len(kernel) != dims: raise ValueError(f"a {dims}-D pool needs {dims} kernel size(s), got {kernel_size}")
  padding = per_dim("padding", padding, len(kernel), 0)
  if any(p > k // 2 for p, k in zip(padding, kernel)):
    raise ValueError(f"padding {padding} must be at most half the kernel size {kernel}")
  out_size = []
  for n, k, s, d, p in zip(pooled_sizes(x, len(kernel), "pooling"), kernel, stride, dilation, padding):
    span = n + 2 * p - d * (k - 1) - 1
    size = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (size - 1) * s >= n + p: size -= 1
    out_size.append(size)
  if any(size < 1 for size in out_size):
    raise ValueError(f"pooling {x.shape} with kernel {kernel}, stride {stride}, dilation {dilation} and padding {padding} "
                     f"gives the output size {tuple(out_size)}, below 1")
  return PoolGeometry(kernel, stride, dilation, padding, tuple(out_size))


def padded_windows(x, geometry: PoolGeometry, value):
  """(..., *out, *kernel): the windows over x padded with value, on the right also up to the end of a last
  ceil_mode window."""
  dims = len(geometry.kernel)
  pads = []
  for n, k, s, d, p, o in zip(x.shape[x.ndim - dims:], *geometry):
    last_end = (o - 1) * s + d * (k - 1) + 1   # counted from the start of the left padding
    pads.append((p, max(p, last_end - n - p)))
  return x.pad((None,) * (x.ndim - dims) + tuple(pads), value)._windows(geometry.kernel, geometry.stride, geometry.dilation)


def plane_positions(x, dims: int):
  """Each element's flat position in its plane of the last dims dims (int64, torch's indices), shape x.shape[-dims:]."""
  plane = x.shape[x.ndim - dims:]
  return type(x).arange(math.prod(plane), dtype=dtypes.int64, device=x.device).reshape(plane)


def window_maxima(windows, positions, dims: int, return_indices: bool):
  """The maximum of each window (windows (..., *out, *window), padded with the dtype's minimum), and with
  return_indices the flat position of its first maximum, torch's choice at ties: positions (*out, *window) grow along
  a window's elements in order, and a padding element's is NOWHERE, past all others. A nan is a maximum, as
  max passes it on. The values' gradient is max's: shared evenly among a window's maxima."""
  axes = tuple(range(-dims, 0))
  values = windows.max(axes)
  if not return_indices: return values
  at_max = (windows == values.reshape(values.shape + (1,) * dims)) | (windows != windows)
  return values, at_max.where(positions, NOWHERE).min(axes)


def max_pool(x, dims: Optional[int], kernel_size, stride=None, dilation=1, padding=0, ceil_mode=False, return_indices=False):
  geometry = geometry_of(x, dims, kernel_size, stride, dilation, padding, ceil_mode)
  dims, lowest = len(geometry.kernel), dtypes.min(x.dtype)   # padding never wins
  positions = padded_windows(plane_positions(x, dims), geometry, NOWHERE) if return_indices else None
  return window_maxima(padded_windows(x, geometry, lowest), positions, dims, return_indices)


def avg_pool(x, dims: Optional[int], kernel_size, stride=None, dilation=1, padding=0, ceil_mode=False,
             count_include_pad=True, divisor_override=None):
  geometry = geometry_of(x, dims, kernel_size, stride, dilation, padding, ceil_mode)
  axes = tuple(range(-len(geometry.kernel), 0))
  windows = padded_windows(x, geometry, 0)
  if divisor_override is not None:
    from nbgrad.tensor import _is_int
    if not _is_int(divisor_override) or divisor_override == 0: raise ValueError(f"divisor_override must be a nonzero int, got {divisor_override!r}")
    return windows.sum(axes) / int(divisor_override)
  counts = window_counts(x.shape[x.ndim - len(axes):], geometry, count_include_pad)
  if (counts == math.prod(geometry.kernel)).all(): return windows.mean(axes)
  return divided(windows.sum(axes), counts)


def window_counts(sizes: tuple, geometry: PoolGeometry, count_include_pad: bool) -> np.ndarray:
  """How many elements each window averages, shape out_size: those in the input and, with count_include_pad, those in
  its padding, never those past the padding (only a last ceil_mode window reaches there)."""
  per_dim = []
  for n, k, s, d, p, o in zip(sizes, *geometry):
    taps = np.arange(o)[:, None] * s - p + np.arange(k) * d   # each window element's position in the input
    low, high = (-p, n + p) if count_include_pad else (0, n)
    per_dim.append(((taps >= low) & (taps < high)).sum(1))
  return functools.reduce(np.multiply.outer, per_dim)


def divided(total, counts: np.ndarray):
  """total over per-window counts, in total's float dtype (float32 for an int total, as mean)."""
  return total / type(total)(counts, dtype=least_upper_float(total.dtype), device=total.device)


# ---- adaptive pools: window i of o along a dim of size n covers [floor(i n / o), ceil((i + 1) n / o)), torch's rule
def adaptive_sizes(x, output_size, dims: Optional[int], op: str) -> tuple[tuple, tuple]:
  """(pooled input sizes, output sizes). output_size is an int (for dims dims, 2 when dims is None) or one entry per
  pooled dim, None keeping that dim's size."""
  count = len(output_size) if isinstance(output_size, (tuple, list)) else dims or 2
  if dims is not None and count != dims: raise ValueError(f"{op} needs {dims} output size(s), got {output_size}")
  in_size = pooled_sizes(x, count, op)
  if isinstance(output_size, (tuple, list)): output_size = tuple(n if o is None else o for n, o in zip(in_size, output_size))
  return in_size, per_dim(f"{op} output_size", output_size, count, 1)


def adaptive_spans(n: int, o: int) -> tuple[np.ndarray, np.ndarray]:
  i = np.arange(o)
  return i * n // o, -(-(i + 1) * n // o)


def adaptive_windows(x, in_size: tuple, out_size: tuple, fill):
  """(..., *out, *longest): each window's elements gathered, the shorter windows padded with fill."""
  dims, lead = len(out_size), x.ndim - len(out_size)
  for j, (n, o) in enumerate(zip(in_size, out_size)):
    starts, ends = adaptive_spans(n, o)
    taps = starts[:, None] + np.arange((ends - starts).max())
    inside = taps < ends[:, None]
    index = type(x)(np.minimum(taps, n - 1).astype(np.int32), device=x.device)
    x = x[(slice(None),) * (lead + 2 * j) + (index,)]   # dim j, at lead + 2 j, becomes (o, longest)
    x = type(x)(inside, device=x.device).reshape(inside.shape + (1,) * (dims - j - 1)).where(x, fill)
  return x.permute(*range(lead), *range(lead, lead + 2 * dims, 2), *range(lead + 1, lead + 2 * dims, 2))


def adaptive_avg_pool(x, output_size, dims: Optional[int]):
  in_size, out_size = adaptive_sizes(x, output_size, dims, "adaptive_avg_pool")
  if all(n % o == 0 for n, o in zip(in_size, out_size)):
    return avg_pool(x, len(out_size), tuple(n // o for n, o in zip(in_size, out_size)))
  # each pooled dim summed over its windows as a product with a 0/1 matrix (the last dim first: it needs no
  # transposed copy); (8, 32, 32, 32) to 7x7: gathered windows 1.9 ms, this way 0.55 (with the gradient 3.5 and 1.0)
  wide = dtypes.float32 if x.dtype in HALF_FLOATS else least_upper_float(x.dtype)
  total, lengths = x.cast(wide), []
  for axis, n, o in reversed(list(zip(range(x.ndim - len(out_size), x.ndim), in_size, out_size))):
    starts, ends = adaptive_spans(n, o)
    member = (np.arange(n)[:, None] >= starts) & (np.arange(n)[:, None] < ends)   # (n, o): window i holds element k
    rows = total.movedim(axis, -1)
    summed = rows.reshape(math.prod(rows.shape[:-1]), n) @ type(x)(member, dtype=wide, device=x.device)
    total = summed.reshape(rows.shape[:-1] + (o,)).movedim(-1, axis)
    lengths.insert(0, ends - starts)
  return divided(total, functools.reduce(np.multiply.outer, lengths)).cast(least_upper_float(x.dtype))

def adaptive_max_pool(x, output_size, dims: Optional[int], return_indices: bool):
  in_size, out_size = adaptive_sizes(x, output_size, dims, "adaptive_max_pool")
  if all(n % o == 0 for n, o in zip(in_size, out_size)):
    return max_pool(x, len(out_size), tuple(n // o for n, o in zip(in_size, out_size)), return_indices=return_indices)
  positions = adaptive_windows(plane_positions(x, len(in_size)), in_size, out_size, NOWHERE) if return_indices else None
  return window_maxima(adaptive_windows(x, in_size, out_size, dtypes.min(x.dtype)), positions, len(out_size), return_indices)


def max_unpool(x, indices, dims: Optional[int], kernel_size, stride=None, padding=0, output_size=None):
  """x's values written at indices (flat positions in each output plane, as max_pool's return_indices gives), zeros
  elsewhere. The output size along a dim is (size - 1) stride - 2 padding + kernel, or output_size's (its last
  entries, one per pooled dim), which torch allows within a stride of that."""
  indices = x._operand(indices, "max_unpool indices")
  kernel, stride, _ = x._pool_args(kernel_size, stride, 1, dims)
  if dims is not None and len(kernel) != dims: raise ValueError(f"a {dims}-D unpool needs {dims} kernel size(s), got {kernel_size}")
  dims = len(kernel)
  padding = per_dim("padding", padding, dims, 0)
  if indices.shape != x.shape: raise ShapeMismatch(f"max_unpool needs indices of the input's shape {x.shape}, got {indices.shape}")
  if not dtypes.is_int(indices.dtype): raise TypeError(f"max_unpool indices must be an int tensor, got {indices.dtype}")
  sizes = pooled_sizes(x, dims, "max_unpool")
  default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip(sizes, stride, padding, kernel))
  size = default
  if output_size is not None:
    size = per_dim("max_unpool output_size", tuple(output_size)[-dims:], dims, 1)
    if not all(d - s < o < d + s for o, d, s in zip(size, default, stride)):
      raise ValueError(f"max_unpool output_size {output_size} must end in {dims} size(s), each within a stride {stride} of {default}")
  lead = x.shape[:x.ndim - dims]
  plane = type(x).zeros(*lead, math.prod(size), dtype=x.dtype, device=x.device)
  return plane.scatter(-1, indices.reshape(*lead, -1), x.reshape(*lead, -1)).reshape(*lead, *size)
