"""Reading tensors at positions other than their own elements, as torch.nn.functional does: im2col and its adjoint
col2im (every sliding block as a column), interpolate (whole dims resampled), grid_sample (a read at arbitrary
points) and affine_grid (the points of an affine map). A resampled value is a weighted sum of the taps around its
point, read by a gather. When the points follow from shapes alone (interpolate), the taps and weights are numpy
arrays computed as torch computes them; when they come from a grid tensor (grid_sample), they are tensors, and the
grid gets its gradient through the weights."""
from __future__ import annotations
import math
from typing import Optional
import numpy as np
from nbgrad import autograd as F, pooling
from nbgrad.dtype import dtypes, HALF_FLOATS, least_upper_dtype, least_upper_float
from nbgrad.helpers import ShapeMismatch
from nbgrad.indexing import read_positions


# ---- im2col and col2im: F.unfold and F.fold
class WindowSums(F.Windows):
  """The adjoint of Windows (col2im): (..., *out, *kernel) -> (..., *spatial), each position the sum of the window
  elements that lie on it. Its forward is Windows' backward, its backward Windows' forward."""
  def forward(self, windows, input_shape, kernel, stride, dilation):
    self.input_shape, self.args = input_shape, (kernel, stride, dilation)
    return super().backward(windows)
  def backward(self, grad): return super().forward(grad, *self.args)


def block_geometry(kernel_size, dilation, padding, stride) -> tuple[tuple, tuple, tuple, tuple]:
  """(kernel, dilation, padding, stride), one entry per spatial dim: an int kernel_size is a 2-D kernel."""
  dims = len(kernel_size) if isinstance(kernel_size, (tuple, list)) else 2
  return (pooling.per_dim("kernel_size", kernel_size, dims, 1), pooling.per_dim("dilation", dilation, dims, 1),
          pooling.per_dim("padding", padding, dims, 0), pooling.per_dim("stride", stride, dims, 1))


def block_counts(spatial: tuple, kernel, dilation, padding, stride, op: str) -> tuple[int, ...]:
  """How many blocks fit along each spatial dim (torch's rule), at least one each."""
  counts = tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, d, p, s in zip(spatial, kernel, dilation, padding, stride))
  if any(c < 1 for c in counts):
    raise ValueError(f"{op} of spatial size {spatial} with kernel {kernel}, dilation {dilation}, padding {padding} and "
                     f"stride {stride} gives {counts} blocks; each dim needs at least one")
  return counts


def im2col(x, kernel_size, dilation, padding, stride):
  kernel, dilation, padding, stride = block_geometry(kernel_size, dilation, padding, stride)
  dims = len(kernel)
  if x.ndim not in (dims + 1, dims + 2):
    raise ValueError(f"im2col with the {dims}-D kernel {kernel} needs (N, C, *spatial) or (C, *spatial) of {dims} spatial "
                     f"dims, got {x.shape}")
  if x.ndim == dims + 1: return im2col(x.unsqueeze(0), kernel, dilation, padding, stride).squeeze(0)
  batch, channels = x.shape[:2]
  counts = block_counts(x.shape[2:], kernel, dilation, padding, stride, "im2col")
  windows = x.pad((None, None) + tuple((p, p) for p in padding))._windows(kernel, stride, dilation)   # (N, C, *counts, *kernel)
  windows = windows.permute(0, 1, *range(2 + dims, 2 + 2 * dims), *range(2, 2 + dims))
  return windows.reshape(batch, channels * math.prod(kernel), math.prod(counts))


def col2im(columns, output_size, kernel_size, dilation, padding, stride):
  kernel, dilation, padding, stride = block_geometry(kernel_size, dilation, padding, stride)
  dims = len(kernel)
  size = pooling.per_dim("col2im output_size", output_size, dims, 1)
  if columns.ndim not in (2, 3):
    raise ValueError(f"col2im needs columns (N, C * kernel elements, blocks) or (C * kernel elements, blocks), got {columns.shape}")
  if columns.ndim == 2: return col2im(columns.unsqueeze(0), size, kernel, dilation, padding, stride).squeeze(0)
  batch, rows, blocks = columns.shape
  taps = math.prod(kernel)
  if rows % taps: raise ValueError(f"col2im columns {columns.shape}: dim 1 must be a multiple of the {taps} elements of kernel {kernel}")
  counts = block_counts(size, kernel, dilation, padding, stride, "col2im")
  if blocks != math.prod(counts):
    raise ValueError(f"col2im columns {columns.shape} hold {blocks} blocks, but output size {size} with kernel {kernel}, dilation "
                     f"{dilation}, padding {padding} and stride {stride} has {counts}, {math.prod(counts)} blocks")
  channels = rows // taps
  windows = columns.reshape(batch, channels, *kernel, *counts).permute(0, 1, *range(2 + dims, 2 + 2 * dims), *range(2, 2 + dims))
  padded_size = tuple(n + 2 * p for n, p in zip(size, padding))
  summed = WindowSums.apply(windows, input_shape=(batch, channels, *padded_size), kernel=kernel, stride=stride, dilation=dilation)
  return summed.shrink(((0, batch), (0, channels)) + tuple((p, p + n) for n, p in zip(size, padding)))


# ---- interpolate: whole dims resampled, the taps and weights computed as torch's upsampling kernels compute them
INTERPOLATE_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear", "bicubic", "area")
ALIGNABLE_MODES = ("linear", "bilinear", "trilinear", "bicubic")
CUBIC_A = -0.75   # torch's (and Keys') cubic convolution parameter


def cubic_weights(t):
  """The cubic convolution weights of the taps at -1, 0, 1, 2 for a point t in [0, 1] past tap 0, in torch's order
  of operations; t a numpy array or a Tensor."""
  def near(s): return ((CUBIC_A + 2) * s - (CUBIC_A + 3)) * s * s + 1   # a tap at most 1 away
  def far(s): return ((CUBIC_A * s - 5 * CUBIC_A) * s + 8 * CUBIC_A) * s - 4 * CUBIC_A   # a tap 1 to 2 away
  return far(t + 1), near(t), near(1 - t), far((1 - t) + 1)


def output_sizes(x, size, scale_factor, recompute_scale_factor) -> tuple[tuple, tuple]:
  """(the sizes of the resampled last dims, each one's scale factor or None). From scale_factor as torch takes it:
  floor(size * factor), the factor itself mapping positions unless recompute_scale_factor; a single factor scales
  the dims after (N, C)."""
  from nbgrad.tensor import _check_int
  if (size is None) == (scale_factor is None):
    raise ValueError(f"interpolate needs exactly one of size and scale_factor, got size={size!r} and scale_factor={scale_factor!r}")
  if size is not None:
    sizes = tuple(size) if isinstance(size, (tuple, list)) else (size,)
    for m in sizes: _check_int("interpolate size", m, low=1)
    if len(sizes) > x.ndim: raise ValueError(f"interpolate to {sizes} needs at least {len(sizes)} dims, got shape {x.shape}")
    return tuple(map(int, sizes)), (None,) * len(sizes)
  if isinstance(scale_factor, (tuple, list)): factors = tuple(scale_factor)
  elif x.ndim < 3: raise ValueError(f"a single interpolate scale_factor scales the dims after (N, C), and {x.shape} has none")
  else: factors = (scale_factor,) * (x.ndim - 2)
  if not all(isinstance(f, (int, float, np.integer, np.floating)) and not isinstance(f, bool) and 0 < f < math.inf for f in factors):
    raise ValueError(f"interpolate scale_factor {scale_factor!r} must be positive finite number(s)")
  if len(factors) > x.ndim: raise ValueError(f"interpolate by {factors} needs at least {len(factors)} dims, got shape {x.shape}")
  scaled = x.shape[x.ndim - len(factors):]
  sizes = tuple(math.floor(float(n) * float(f)) for n, f in zip(scaled, factors))
  if any(m < 1 for m in sizes):
    raise ValueError(f"interpolate of {x.shape} by scale_factor {scale_factor!r} gives the sizes {sizes}; each must be at least 1")
  return sizes, (None,) * len(sizes) if recompute_scale_factor else tuple(map(float, factors))


def half_pixel_sources(scale, m: int, position_type):
  """scale (i + 1/2) - 1/2 for the output elements i, rounded once, as torch's compiled kernel fuses the multiply
  and the add in float32 (nearest-exact's ties depend on it)."""
  centres = np.arange(m) + 0.5
  if position_type == np.float32: return (np.float64(scale) * centres - 0.5).astype(np.float32)   # exact in float64
  return scale * centres - 0.5


def axis_taps(n: int, m: int, factor: Optional[float], mode: str, align_corners: bool, position_type):
  """(taps (m, T) int64, weights (m, T) or None for nearest modes): where each of m outputs reads a dim of n."""
  # torch's scale: 1 / factor when given, else n / m, in the input's float type; and its floor is floorf, of the
  # position rounded to float32 even for float64
  scale = position_type(1.0 / factor) if factor else position_type(n) / position_type(m)
  if mode == "nearest":
    source = np.floor((np.arange(m, dtype=position_type) * scale).astype(np.float32))
    return np.minimum(source, n - 1).astype(np.int64)[:, None], None
  if mode == "nearest-exact":
    source = np.maximum(half_pixel_sources(scale, m, position_type), 0)
    return np.minimum(np.floor((source + position_type(0.5)).astype(np.float32)), n - 1).astype(np.int64)[:, None], None
  if align_corners: source = np.arange(m, dtype=position_type) * (position_type(n - 1) / position_type(m - 1) if m > 1 else position_type(0))
  else: source = half_pixel_sources(scale, m, position_type)
  if mode != "bicubic": source = np.maximum(source, 0)   # cubic taps reach past the first element and clamp there
  low = np.minimum(np.floor(source.astype(np.float32)), n - 1)
  fraction = np.clip(source - low, 0, 1).astype(position_type)
  low = low.astype(np.int64)
  if mode == "bicubic": return np.clip(low[:, None] + np.arange(-1, 3), 0, n - 1), np.stack(cubic_weights(fraction), axis=1)
  return np.stack([low, low + (low < n - 1)], axis=1), np.stack([1 - fraction, fraction], axis=1)


# mode -> its filter's width in input samples at scale 1 (torch takes bilinear and bicubic; the other linear modes
# are the same filter over 1 or 3 dims)
ANTIALIAS_MODES = {"linear": 2, "bilinear": 2, "trilinear": 2, "bicubic": 4}
ANTIALIAS_CUBIC_A = -0.5   # torch's (and PIL's) antialiasing cubic, not interpolation's -0.75


def antialias_filter(mode: str, t: np.ndarray) -> np.ndarray:
  t = np.abs(t)
  if mode != "bicubic": return np.where(t < 1, 1 - t, 0).astype(t.dtype)
  a = ANTIALIAS_CUBIC_A
  near = ((a + 2) * t - (a + 3)) * t * t + 1
  far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
  return np.where(t < 1, near, np.where(t < 2, far, 0)).astype(t.dtype)


def antialias_taps(n: int, m: int, factor: Optional[float], mode: str, align_corners: bool, position_type):
  """torch's antialiased taps: a downscale by s widens the filter to s input samples on each side of the output's
  centre (stretched by s), each output's weights normalized to sum to 1. (taps (m, T), weights (m, T)), T the widest
  window; the windows narrower than that padded with zero weights."""
  if align_corners: scale = position_type(n - 1) / position_type(m - 1) if m > 1 else position_type(0)
  else: scale = position_type(1.0 / factor) if factor else position_type(n) / position_type(m)
  support = position_type(ANTIALIAS_MODES[mode] * 0.5) * (scale if scale >= 1 else position_type(1))
  stretch = position_type(1) / scale if scale >= 1 else position_type(1)
  centres = scale * (np.arange(m, dtype=position_type) + position_type(0.5))
  low = np.maximum(np.trunc(centres - support + position_type(0.5)), 0).astype(np.int64)
  count = np.minimum(np.trunc(centres + support + position_type(0.5)).astype(np.int64), n) - low
  offsets = np.arange(max(int(count.max()), 1))
  inside = offsets < count[:, None]
  distance = ((offsets + low[:, None]).astype(position_type) - centres[:, None] + position_type(0.5)) * stretch
  weights = np.where(inside, antialias_filter(mode, distance), 0).astype(position_type)
  totals = weights.sum(axis=1, keepdims=True)
  weights = np.where(totals != 0, weights / np.where(totals != 0, totals, 1), weights).astype(position_type)
  return np.where(inside, low[:, None] + offsets, low[:, None]).clip(0, n - 1), weights


def resample_axis(x, axis: int, taps: np.ndarray, weights: Optional[np.ndarray]):
  """x read at taps (m, T) along axis and, with weights, their weighted sum (a tap of -1 adds nothing; floats of
  32 or 64 bits): axis becomes m long. Without weights (nearest), a float32 or float64 x is read as taps of weight 1
  too, whose sum from -0 is each value exactly; other dtypes by index_select."""
  if weights is None:
    if x.dtype not in (dtypes.float32, dtypes.float64): return x.index_select(axis, type(x)(taps.reshape(-1), device=x.device))
    weights = np.ones(taps.shape)

  def table(taps: np.ndarray, weights: np.ndarray):   # laid out (T, m), as the kernel walks them
    return (type(x)(np.ascontiguousarray(taps.T, np.int64), device=x.device).lazydata,
            type(x)(np.ascontiguousarray(weights.T, x.dtype.np), device=x.device).lazydata)
  return F.AxisTaps.apply(x, *map(type(x), table(taps, weights)), axis=axis, adjoint=lambda: table(*adjoint_taps(taps, weights, x.shape[axis])))


def adjoint_taps(taps: np.ndarray, weights: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
  """The transposed table of taps (m, T) into n inputs: for each input, the outputs that read it, with their
  weights, in output order (rows padded with taps of -1)."""
  m, count = taps.shape
  read = taps.reshape(-1) >= 0
  sources, readers, w = taps.reshape(-1)[read], np.repeat(np.arange(m), count)[read], weights.reshape(-1)[read]
  order = np.argsort(sources, kind="stable")
  fan_in = np.bincount(sources, minlength=n)
  slots = np.arange(sources.size) - np.repeat(np.cumsum(fan_in) - fan_in, fan_in)
  width = max(int(fan_in.max(initial=0)), 1)
  adjoint_taps, adjoint_weights = np.full((n, width), -1, np.int64), np.zeros((n, width), weights.dtype)
  adjoint_taps[sources[order], slots], adjoint_weights[sources[order], slots] = readers[order], w[order]
  return adjoint_taps, adjoint_weights


def interpolate(x, size, mode: str, align_corners, scale_factor, recompute_scale_factor, antialias=False):
  if mode not in INTERPOLATE_MODES: raise ValueError(f"interpolate mode must be one of {', '.join(INTERPOLATE_MODES)}, got {mode!r}")
  if antialias and mode not in ANTIALIAS_MODES:
    raise ValueError(f"interpolate's antialias is an option of the modes {', '.join(ANTIALIAS_MODES)}, not of {mode!r}")
  if align_corners and mode not in ALIGNABLE_MODES:
    raise ValueError(f"align_corners is an option of the modes {', '.join(ALIGNABLE_MODES)}, not of {mode!r}")
  sizes, factors = output_sizes(x, size, scale_factor, recompute_scale_factor)
  named_dims = {"bilinear": 2, "trilinear": 3}.get(mode)
  if named_dims and len(sizes) != named_dims: raise ValueError(f"{mode} interpolation resamples {named_dims} dims, got sizes {sizes}")
  first = x.ndim - len(sizes)
  for axis, (n, m) in enumerate(zip(x.shape[first:], sizes), first):
    if n == 0 and m != 0: raise ValueError(f"interpolate cannot resample dim {axis} of {x.shape}: it has no elements")
  # resampled a dim at a time from the last, as torch's kernels weigh the last dim's taps innermost (and the last
  # dim's pass, without rows to vectorize, then reads and writes the fewest elements). An integer image keeps its
  # dtype, rounded to it after each dim (torch's uint8 kernels round so, in fixed point: their values can differ by 1)
  rounds = not mode.startswith("nearest") and dtypes.is_int(x.dtype)
  if mode == "area":   # torch's: adaptive average pooling
    if sizes == x.shape[first:]: return x.clone()
    pooled = pooling.adaptive_avg_pool(x, sizes, len(sizes))
    return _rounded_into(pooled, x.dtype) if rounds else pooled
  out = x if mode.startswith("nearest") else x._float_input()
  half = out.dtype in HALF_FLOATS
  if half: out = out.cast(dtypes.float32)   # summed in float32 and rounded to the type once, at the end, as torch's
  position_type = np.float64 if out.dtype == dtypes.float64 else np.float32
  steps = list(zip(range(first, x.ndim), sizes, factors))
  for axis, m, factor in reversed(steps):
    n = out.shape[axis]
    # torch's 2-D nearest kernel maps the points of a dim kept or doubled by sizes alone, whatever the factor
    if mode == "nearest" and len(sizes) == 2 and m in (n, 2 * n): factor = None
    # torch copies a dim whose size stays, except where a given factor moves the points (nearest and cubic)
    if m == n and (factor is None or mode in ALIGNABLE_MODES[:3]): continue
    taps = antialias_taps if antialias else axis_taps
    out = resample_axis(out._float_input() if rounds else out, axis, *taps(n, m, factor, mode, bool(align_corners), position_type))
    if rounds: out = _rounded_into(out, x.dtype)
  if half: out = out.cast(x.dtype)
  return out if out is not x else x.clone()


def _rounded_into(x, dtype):
  """Float values rounded to the nearest integer (halves up) and clamped into an integer dtype's range."""
  return (x + 0.5).floor().clip(dtypes.min(dtype), dtypes.max(dtype)).cast(dtype)


# ---- grid_sample and affine_grid: reads at points given as a tensor
GRID_MODES = ("bilinear", "nearest", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")


def unnormalized(g, n: int, align_corners: bool):
  """Grid coordinates (-1 to 1) as positions along a dim of n elements: -1 and 1 at the centres of the end elements
  with align_corners, at their outer edges without."""
  return (g + 1) * ((n - 1) / 2) if align_corners else (g + 1) * (n / 2) - 0.5


def padded(c, n: int, padding_mode: str, align_corners: bool):
  """Positions brought into [0, n - 1] as torch's padding modes do: "zeros" leaves them (a tap outside reads 0),
  "border" clips them, "reflection" mirrors them at the end elements' centres (align_corners) or outer edges, then
  clips. The gradient is 0 on and past a border, as torch's."""
  if padding_mode == "zeros": return c
  if padding_mode == "reflection": c = reflected(c, *((0.0, 2 * (n - 1)) if align_corners else (-0.5, 2 * n)))
  last = n - 1
  return (c > 0).where((c < last).where(c, last), 0)


def reflected(c, low: float, twice_span: int):
  """c mirrored into [low, low + twice_span / 2]: its distance from low, folded."""
  if twice_span == 0: return c   # one element with align_corners: the clip that follows puts every point on it
  offset = c - low
  distance = (offset < 0).where(-offset, offset)   # |offset|, with torch's derivative +1 at 0
  extra = distance - (distance / twice_span).trunc() * twice_span
  return (extra > twice_span - extra).where(twice_span - extra, extra) + low


def point_taps(c, n: int, mode: str, padding_mode: str, align_corners: bool):
  """(positions, weights) of the taps around positions c along a dim of n elements, the taps along a new last dim;
  positions are whole floats, maybe outside the dim."""
  Tensor = type(c)
  if mode == "bicubic":   # the padding moves each tap, not the point (torch's)
    low = c.floor()
    offsets = Tensor.arange(-1, 3, dtype=c.dtype, device=c.device)
    return padded(low.detach().unsqueeze(-1) + offsets, n, padding_mode, align_corners), Tensor.stack(*cubic_weights(c - low), dim=-1)
  c = padded(c, n, padding_mode, align_corners)
  if mode == "nearest":   # weight 1 wherever the point is: flat, so the grid's gradient is 0, as torch's
    return c.round().unsqueeze(-1), c._flat(c.ones_like()).unsqueeze(-1)
  low = c.floor()
  above = c - low
  return low.unsqueeze(-1) + Tensor.arange(2, dtype=c.dtype, device=c.device), Tensor.stack(1 - above, above, dim=-1)


def read_taps(x, taps: list):
  """The weighted sum of x (N, C, *spatial) over the taps of every spatial dim combined, (N, C, *out): taps holds a
  (positions, weights) pair per spatial dim, each (N, *out, T). Positions outside x read 0."""
  Tensor = type(x)
  batch, channels, sizes = x.shape[0], x.shape[1], x.shape[2:]
  dims = len(sizes)
  row, inside, weight = None, None, None
  for d, ((positions, weights), n) in enumerate(zip(taps, sizes)):
    def spread(t): return t.reshape(t.shape[:-1] + (1,) * d + t.shape[-1:] + (1,) * (dims - 1 - d))   # (N, *out, *taps)
    positions = spread(positions)
    index = positions.clip(0, n - 1).cast(dtypes.int64)
    within = (positions >= 0) & (positions < n)
    row = index if row is None else row * n + index
    inside = within if inside is None else inside & within
    weight = spread(weights) if weight is None else weight * spread(weights)
  row = row + Tensor.arange(batch, dtype=dtypes.int64, device=x.device).reshape((batch,) + (1,) * (row.ndim - 1)) * math.prod(sizes)
  pixels = x.permute(0, *range(2, 2 + dims), 1)   # channels last: a point's channels are one row
  values = read_positions(pixels, row * channels, inside, row_dims=1)   # (N, *out, *taps, C)
  out = (values * weight.unsqueeze(-1)).sum(tuple(range(-1 - dims, -1)))
  return out.permute(0, out.ndim - 1, *range(1, out.ndim - 1))


def grid_sample(x, grid, mode: str, padding_mode: str, align_corners):
  grid = x._operand(grid, "grid_sample grid")
  if mode not in GRID_MODES: raise ValueError(f"grid_sample mode must be one of {', '.join(GRID_MODES)}, got {mode!r}")
  if padding_mode not in PADDING_MODES: raise ValueError(f"grid_sample padding_mode must be one of {', '.join(PADDING_MODES)}, got {padding_mode!r}")
  if x.ndim not in (4, 5): raise ValueError(f"grid_sample needs an input (N, C, H, W) or (N, C, D, H, W), got {x.shape}")
  dims = x.ndim - 2
  if grid.ndim != x.ndim or grid.shape[0] != x.shape[0] or grid.shape[-1] != dims:
    raise ShapeMismatch(f"grid_sample of an input {x.shape} needs a grid of {x.ndim} dims, ({x.shape[0]}, *out, {dims}), got {grid.shape}")
  if mode == "bicubic" and dims != 2: raise ValueError(f"grid_sample's bicubic mode takes a 4-D input, got {x.shape}")
  if 0 in x.shape[2:]: raise ValueError(f"grid_sample needs non-empty spatial dims, got an input {x.shape}")
  dtype = least_upper_float(least_upper_dtype(x.dtype, grid.dtype))
  x, grid = x.cast(dtype), grid.cast(dtype)
  # the grid's last dim lists x (along the last spatial dim) first
  return read_taps(x, [point_taps(unnormalized(grid.select(-1, dims - 1 - d), n, bool(align_corners)), n, mode, padding_mode,
                                  bool(align_corners)) for d, n in enumerate(x.shape[2:])])


def normalized_positions(n: int, align_corners: bool) -> np.ndarray:
  """The n grid coordinates of a dim's elements: -1 to 1 at their centres with align_corners, the centres of n
  equal cells spanning -1 to 1 without; 0 for one element."""
  if n == 1: return np.zeros(1)
  ends = np.linspace(-1.0, 1.0, n)
  return ends if align_corners else ends * ((n - 1) / n)


def affine_grid(theta, size, align_corners):
  from nbgrad.tensor import _is_int
  size = tuple(size)
  if len(size) not in (4, 5) or not all(_is_int(s) and s > 0 for s in size):
    raise ValueError(f"affine_grid size must be (N, C, H, W) or (N, C, D, H, W) of positive ints, got {size}")
  dims = len(size) - 2
  if theta.shape != (size[0], dims, dims + 1):
    raise ShapeMismatch(f"affine_grid of size {size} needs theta of shape ({size[0]}, {dims}, {dims + 1}), got {theta.shape}")
  theta = theta._float_input()
  spatial = size[2:]
  axes = np.meshgrid(*[normalized_positions(n, bool(align_corners)) for n in spatial], indexing="ij")
  base = np.stack([*axes[::-1], np.ones(spatial)], axis=-1).reshape(-1, dims + 1)   # (x, y, (z,) 1) per point
  points = type(theta)(base, dtype=theta.dtype, device=theta.device).matmul(theta.transpose(-1, -2))
  return points.reshape(size[0], *spatial, dims)
