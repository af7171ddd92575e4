"""The CPU kernel of the axis transform (nbgrad/linalg.py's AxisTransform): a small constant matrix applied
along each of k axes of every tile. The source is specialized on the matrix: its entries are literals, zero
terms are left out and products by +-1 are plain adds, so LLVM sees straight-line scalar code over
registers (a 6x6 tile of Winograd's Bt costs about 150 adds instead of 2 x 216 multiply-adds).

A work item is one index of the batch dims but the last (found by one division per dim) and walks the
last batch dim's tiles."""
from __future__ import annotations
import functools
import itertools
import math
import numpy as np
from numba import njit, prange
from nbgrad.jit import PARALLEL_MIN_ELEMENTS
from nbgrad.jit.compiler import get_kernel, LAUNCH_LOCK

ROW_MIN = 8       # the row path needs rows of at least one vector
ROW_CHUNKS = 64   # parallel chunks of work items (each allocates its scratch once)


def _term(coefficient: float, name: str, literal) -> str:
  if coefficient == 1: return f"+ {name}"
  if coefficient == -1: return f"- {name}"
  return f"+ {literal(coefficient)} * {name}"


def _render(matrix: tuple, k: int, literal) -> str:
  """The kernel body: out tile = matrix applied along each of the k tile axes of the input tile."""
  rows, cols = len(matrix), len(matrix[0])
  tile_args = ", ".join(f"s{a}" for a in range(k)) + ", " + ", ".join(f"t{a}" for a in range(k))
  lines = [f"def kernel(out, x, sizes, divisors, in_strides, out_strides, offset, outer_count, {tile_args}):",
           "  last = len(sizes) - 1",
           "  for outer in prange(outer_count):",
           "    x_base, out_base = offset, 0",
           "    for d in range(last):",
           "      i = (outer // divisors[d]) % sizes[d]",
           "      x_base += i * in_strides[d]",
           "      out_base += i * out_strides[d]",
           "    for j in range(sizes[last]):",
           "      xb, ob = x_base + j * in_strides[last], out_base + j * out_strides[last]"]
  # stage a: values indexed by (rows for axes < a, cols for axes >= a); stage 0 is the loaded tile
  for index in itertools.product(range(cols), repeat=k):
    position = " + ".join(f"{i} * s{a}" for a, i in enumerate(index))
    lines.append(f"      v0_{'_'.join(map(str, index))} = x[xb + {position}]")
  for axis in range(k):
    shapes = [range(rows)] * (axis + 1) + [range(cols)] * (k - axis - 1)
    for index in itertools.product(*shapes):
      terms = []
      for c in range(cols):
        coefficient = matrix[index[axis]][c]
        if coefficient == 0: continue
        source = index[:axis] + (c,) + index[axis + 1:]
        terms.append(_term(coefficient, f"v{axis}_{'_'.join(map(str, source))}", literal))
      expression = " ".join(terms).removeprefix("+ ") if terms else literal(0.0)
      if expression.startswith("- "): expression = "-" + expression[2:]
      lines.append(f"      v{axis + 1}_{'_'.join(map(str, index))} = {expression}")
  for index in itertools.product(range(rows), repeat=k):
    position = " + ".join(f"{i} * t{a}" for a, i in enumerate(index))
    lines.append(f"      out[ob + {position}] = v{k}_{'_'.join(map(str, index))}")
  return "\n".join(lines) + "\n"


_FLAGS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})


@njit(**_FLAGS)
def _combine(dst, d, n, count, a, c0, o0, c1, o1, c2, o2, c3, o3, c4, o4, c5, o5):
  """dst[d:d+n] = c0 * a[o0:o0+n] + c1 * a[o1:o1+n] + ... over the first count terms: one loop with one store
  stream and a few loads, which LLVM vectorizes. Offsets are unsigned, so indexing needs no wraparound for
  negative indices (which would keep the loop scalar)."""
  if count == 1:
    for l in range(n): dst[d + l] = c0 * a[o0 + l]
  elif count == 2:
    for l in range(n): dst[d + l] = c0 * a[o0 + l] + c1 * a[o1 + l]
  elif count == 3:
    for l in range(n): dst[d + l] = c0 * a[o0 + l] + c1 * a[o1 + l] + c2 * a[o2 + l]
  elif count == 4:
    for l in range(n): dst[d + l] = c0 * a[o0 + l] + c1 * a[o1 + l] + c2 * a[o2 + l] + c3 * a[o3 + l]
  elif count == 5:
    for l in range(n): dst[d + l] = c0 * a[o0 + l] + c1 * a[o1 + l] + c2 * a[o2 + l] + c3 * a[o3 + l] + c4 * a[o4 + l]
  elif count == 6:
    for l in range(n):
      dst[d + l] = c0 * a[o0 + l] + c1 * a[o1 + l] + c2 * a[o2 + l] + c3 * a[o3 + l] + c4 * a[o4 + l] + c5 * a[o5 + l]
  else:
    for l in range(n): dst[d + l] = 0


@njit(**_FLAGS)
def _tile_rows(out, x, xb, ob, n, counts, coefs, sources, stage_sizes, in_offsets, out_offsets, current, following):
  """One work item of the row path: every value of the tile is a row of n (the last batch dim, contiguous in x
  and out), and each value of each stage is one _combine of rows of the stage before (current and following
  are scratch for the stages)."""
  k, un = len(stage_sizes), np.uint64(n)
  for stage in range(k):
    for o in range(stage_sizes[stage]):
      count = counts[stage, o]
      t1, t2, t3, t4, t5 = min(1, count - 1), min(2, count - 1), min(3, count - 1), min(4, count - 1), min(5, count - 1)
      r0 = _row(stage, sources[stage, o, 0], xb, n, in_offsets)
      r1, r2 = _row(stage, sources[stage, o, t1], xb, n, in_offsets), _row(stage, sources[stage, o, t2], xb, n, in_offsets)
      r3, r4 = _row(stage, sources[stage, o, t3], xb, n, in_offsets), _row(stage, sources[stage, o, t4], xb, n, in_offsets)
      r5 = _row(stage, sources[stage, o, t5], xb, n, in_offsets)
      c0, c1, c2 = coefs[stage, o, 0], coefs[stage, o, t1], coefs[stage, o, t2]
      c3, c4, c5 = coefs[stage, o, t3], coefs[stage, o, t4], coefs[stage, o, t5]
      # explicit calls: an array assigned to a variable costs a reference count, which the threads share
      if stage == 0 and stage == k - 1:
        _combine(out, np.uint64(ob + out_offsets[o]), un, count, x, c0, r0, c1, r1, c2, r2, c3, r3, c4, r4, c5, r5)
      elif stage == 0:
        _combine(following, np.uint64(o * n), un, count, x, c0, r0, c1, r1, c2, r2, c3, r3, c4, r4, c5, r5)
      elif stage == k - 1:
        _combine(out, np.uint64(ob + out_offsets[o]), un, count, current, c0, r0, c1, r1, c2, r2, c3, r3, c4, r4, c5, r5)
      else:
        _combine(following, np.uint64(o * n), un, count, current, c0, r0, c1, r1, c2, r2, c3, r3, c4, r4, c5, r5)
    current, following = following, current


@njit(**_FLAGS)
def _row(stage, value, xb, n, in_offsets):
  """Where value's row starts: in x for the first stage, else in the scratch of the stage before."""
  return np.uint64(xb + in_offsets[value]) if stage == 0 else np.uint64(value * n)


@njit(**_FLAGS)
def _row_chunk(out, x, sizes, divisors, in_strides, out_strides, offset, start, stop, plan, in_offsets, out_offsets):
  """The work items start..stop of the row path, with one pair of scratch buffers."""
  last, n = len(sizes) - 1, sizes[len(sizes) - 1]
  current, following = np.empty(plan[3].max() * n, x.dtype), np.empty(plan[3].max() * n, x.dtype)
  for outer in range(start, stop):
    xb, ob = offset, 0
    for d in range(last):
      i = (outer // divisors[d]) % sizes[d]
      xb += i * in_strides[d]
      ob += i * out_strides[d]
    _tile_rows(out, x, xb, ob, n, plan[0], plan[1], plan[2], plan[3], in_offsets, out_offsets, current, following)


@njit(**_FLAGS)
def _rows_serial(out, x, sizes, divisors, in_strides, out_strides, offset, outer_count, plan, in_offsets, out_offsets):
  _row_chunk(out, x, sizes, divisors, in_strides, out_strides, offset, 0, outer_count, plan, in_offsets, out_offsets)


@njit(**_FLAGS, parallel=True)
def _rows_parallel(out, x, sizes, divisors, in_strides, out_strides, offset, outer_count, plan, in_offsets, out_offsets):
  chunks = min(outer_count, ROW_CHUNKS)
  for chunk in prange(chunks):
    _row_chunk(out, x, sizes, divisors, in_strides, out_strides, offset, chunk * outer_count // chunks,
               (chunk + 1) * outer_count // chunks, plan, in_offsets, out_offsets)


@functools.lru_cache(maxsize=None)
def _row_plan(matrix: tuple, k: int, dtype: str) -> tuple:
  """(counts, coefficients, sources, stage sizes): for stage s and value o, the nonzero terms that make it
  from the values of stage s - 1, in the order _stages lists the values."""
  rows, cols = len(matrix), len(matrix[0])
  assert all(sum(1 for v in row if v != 0) <= 6 for row in matrix), "a row of more than 6 terms"
  stage_sizes = [rows ** (s + 1) * cols ** (k - s - 1) for s in range(k)]
  counts = np.zeros((k, max(stage_sizes)), np.int64)
  coefs = np.zeros((k, max(stage_sizes), 6), dtype)
  sources = np.zeros((k, max(stage_sizes), 6), np.int64)
  for s in range(k):
    after = cols ** (k - s - 1)
    for o in range(stage_sizes[s]):
      lead, a, tail = o // (rows * after), (o // after) % rows, o % after
      for c in range(cols):
        if matrix[a][c] == 0: continue
        coefs[s, o, counts[s, o]], sources[s, o, counts[s, o]] = matrix[a][c], (lead * cols + c) * after + tail
        counts[s, o] += 1
  return counts, coefs, sources, np.array(stage_sizes, np.int64)


@njit(**_FLAGS)
def _overlap_add_items(out, x, first, stop, blocks, channels, tile_x, tile_out, element_x, element_out, x_batch, out_batch):
  """Work items first..stop: item (n, channel block) adds every tile element's row of channels of image n.
  Items touch disjoint channels or images, so they run in parallel without races."""
  for item in range(first, stop):
    n, c0 = item // blocks, (item % blocks) * CHANNEL_BLOCK
    width = np.uint64(min(CHANNEL_BLOCK, channels - c0))
    for t in range(len(tile_x)):
      xt, ot = n * x_batch + tile_x[t] + c0, n * out_batch + tile_out[t] + c0
      for e in range(len(element_x)):
        xo, oo = np.uint64(xt + element_x[e]), np.uint64(ot + element_out[e])
        for l in range(width): out[oo + l] += x[xo + l]


@njit(**_FLAGS, parallel=True)
def _overlap_add_parallel(out, x, items, blocks, channels, tile_x, tile_out, element_x, element_out, x_batch, out_batch):
  for item in prange(items):
    _overlap_add_items(out, x, item, item + 1, blocks, channels, tile_x, tile_out, element_x, element_out, x_batch, out_batch)


CHANNEL_BLOCK = 32   # channels one overlap-add work item covers


def overlap_add(out: np.ndarray, x: np.ndarray, batch: int, channels: int, tiles: tuple, tile: tuple, step: int,
                x_strides: tuple, x_offset: int, out_spatial_strides: tuple, out_batch_stride: int):
  """out (N, *S, C) contiguous = the sum of x's tiles (N, C, *tiles, *tile) placed a step apart."""
  out.fill(0)
  if x.size == 0 or out.size == 0: return
  dims = len(tiles)
  if x_strides[1] != 1:   # rows of channels must be contiguous: copy x channels last (not the case Winograd makes)
    from nbgrad.jit.blas import strided_view
    view = strided_view(x, (batch, channels, *tiles, *tile), x_strides, x_offset)
    x = np.ascontiguousarray(np.moveaxis(view, 1, -1)).reshape(-1)
    grid = tuple(tiles) + tuple(tile)
    x_strides, x_offset = (x.size // batch, 1, *[math.prod(grid[i + 1:]) * channels for i in range(2 * dims)]), 0
  tile_x = _tile_offsets_grid(tiles, x_strides[2:2 + dims]) + x_offset
  tile_out = _tile_offsets_grid(tiles, tuple(step * s for s in out_spatial_strides))
  element_x, element_out = _tile_offsets_grid(tile, x_strides[2 + dims:]), _tile_offsets_grid(tile, out_spatial_strides)
  blocks = -(-channels // CHANNEL_BLOCK)
  args = (blocks, channels, tile_x, tile_out, element_x, element_out, x_strides[0], out_batch_stride)
  with LAUNCH_LOCK:
    if out.size >= PARALLEL_MIN_ELEMENTS and batch * blocks > 1: _overlap_add_parallel(out, x, batch * blocks, *args)
    else: _overlap_add_items(out, x, 0, batch * blocks, *args)


def _tile_offsets_grid(sizes: tuple, strides: tuple) -> np.ndarray:
  """The offset of every index of a grid of sizes (row-major) for the given per-dim strides."""
  return np.array([sum(i * s for i, s in zip(index, strides)) for index in itertools.product(*map(range, sizes))], np.int64)


def _literal_for(dtype: np.dtype):
  """Constants in the buffers' own precision (a bare Python float would make numba compute in float64)."""
  name = np.dtype(dtype).name
  return lambda value: f"np.{name}({float(value)!r})"


def axis_transform(out: np.ndarray, x: np.ndarray, matrix: tuple, batch_sizes: tuple, in_strides: tuple,
                   out_strides: tuple, tile_in_strides: tuple, tile_out_strides: tuple, offset: int):
  """out[b, a1..ak] = sum over c1..ck of matrix[a1][c1]...matrix[ak][ck] * x[b, c1..ck], for every index b
  of the batch dims; the strides are in elements of the flat buffers out and x."""
  batch_sizes = tuple(batch_sizes) or (1,)
  in_strides, out_strides = tuple(in_strides) or (0,), tuple(out_strides) or (0,)
  tiles = int(np.prod(batch_sizes))
  if tiles == 0: return
  k = len(tile_in_strides)
  divisors = [int(np.prod(batch_sizes[d + 1:-1])) for d in range(len(batch_sizes) - 1)] + [1]   # the outer dims' index steps
  parallel = tiles * len(matrix) ** k >= PARALLEL_MIN_ELEMENTS and tiles // batch_sizes[-1] > 1
  arrays = (np.array(batch_sizes, np.int64), np.array(divisors, np.int64), np.array(in_strides, np.int64),
            np.array(out_strides, np.int64), offset, tiles // batch_sizes[-1])
  if in_strides[-1] == 1 and out_strides[-1] == 1 and batch_sizes[-1] >= ROW_MIN:
    with LAUNCH_LOCK:
      (_rows_parallel if parallel else _rows_serial)(out, x, *arrays, _row_plan(matrix, k, x.dtype.name),
                                                      _tile_offsets_grid((len(matrix[0]),) * k, tile_in_strides), _tile_offsets_grid((len(matrix),) * k, tile_out_strides))
    return
  kernel = get_kernel(_render(matrix, k, _literal_for(x.dtype)), parallel, f"axis_transform_{len(matrix)}x{len(matrix[0])}_{k}d")
  with LAUNCH_LOCK: kernel(out, x, *arrays, *tile_in_strides, *tile_out_strides)
