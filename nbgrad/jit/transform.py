"""CPU kernels of the tile custom nodes of nbgrad/linalg.py: the axis transform (a small constant matrix applied
along each of k axes of every tile: Winograd's Bt d B, G g Gt, At m A) and the overlap-add of tiles.

Both work on rows: the last batch dim (the channels, in Winograd's channels-last buffers) is a row of n values
for every tile element, and every loop runs along a row. A loop that stores to one row and reads a few
vectorizes; a loop over whole tiles would store to 36 rows and read 36, more pairs than LLVM checks for
overlap, and would stay scalar. The matrix is data (a plan of the nonzero terms of each value of each stage),
so one compiled kernel serves every matrix, dimension count and layout."""
from __future__ import annotations
import functools
import itertools
import math
import numpy as np
from numba import njit, prange
from nbgrad.jit import PARALLEL_MIN_ELEMENTS
from nbgrad.jit.blas import strided_view
from nbgrad.jit.compiler import LAUNCH_LOCK, runnable

_FLAGS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
ROW_CHUNKS = 64       # parallel chunks of transform work items (each allocates its scratch once)
# tiles of the run dim (the batch dim before the channels: Winograd's last tile count) one transform call walks,
# so the per-call work is spread over that many rows of channels rather than one
RUN_CHUNK = 16
CHANNEL_BLOCK = 32    # channels one overlap-add work item covers
MAX_TERMS = 6         # nonzero entries a matrix row may have


@njit(**_FLAGS)
def _combine(dst, d, dst_run, n, runs, count, a, a_run, c0, o0, c1, o1, c2, o2, c3, o3, c4, o4, c5, o5):
  """For each r of runs: dst[d + r*dst_run:][:n] = c0 * a[o0 + r*a_run:][:n] + c1 * a[o1 + r*a_run:][:n] + ...
  over the first count terms. Offsets are unsigned, so indexing needs no wraparound for negative indices (which
  would keep the loop scalar); strides wrap modulo 2^64, which leaves every offset exact."""
  for r in range(runs):
    dr, ar = np.uint64(d + r * dst_run), np.uint64(r * a_run)
    p0, p1, p2, p3, p4, p5 = o0 + ar, o1 + ar, o2 + ar, o3 + ar, o4 + ar, o5 + ar
    if count == 1:
      for l in range(n): dst[dr + l] = c0 * a[p0 + l]
    elif count == 2:
      for l in range(n): dst[dr + l] = c0 * a[p0 + l] + c1 * a[p1 + l]
    elif count == 3:
      for l in range(n): dst[dr + l] = c0 * a[p0 + l] + c1 * a[p1 + l] + c2 * a[p2 + l]
    elif count == 4:
      for l in range(n): dst[dr + l] = c0 * a[p0 + l] + c1 * a[p1 + l] + c2 * a[p2 + l] + c3 * a[p3 + l]
    elif count == 5:
      for l in range(n): dst[dr + l] = c0 * a[p0 + l] + c1 * a[p1 + l] + c2 * a[p2 + l] + c3 * a[p3 + l] + c4 * a[p4 + l]
    elif count == 6:
      for l in range(n):
        dst[dr + l] = c0 * a[p0 + l] + c1 * a[p1 + l] + c2 * a[p2 + l] + c3 * a[p3 + l] + c4 * a[p4 + l] + c5 * a[p5 + l]
    else:
      for l in range(n): dst[dr + l] = 0


@njit(**_FLAGS)
def _tile_rows(out, x, xb, ob, n, runs, x_run, out_run, counts, coefs, sources, stage_sizes, in_offsets, out_offsets,
               current, following):
  """One work item: runs tiles, a run stride apart; each value of each stage is one _combine of rows of the stage
  before (x for the first, out for the last; current and following are scratch for the stages between, value
  by value, tile by tile)."""
  k, un, block = len(stage_sizes), np.uint64(n), runs * n
  for stage in range(k):
    for o in range(stage_sizes[stage]):
      count = counts[stage, o]
      s0, s1, s2 = sources[stage, o, 0], sources[stage, o, 1], sources[stage, o, 2]
      s3, s4, s5 = sources[stage, o, 3], sources[stage, o, 4], sources[stage, o, 5]
      c0, c1, c2 = coefs[stage, o, 0], coefs[stage, o, 1], coefs[stage, o, 2]
      c3, c4, c5 = coefs[stage, o, 3], coefs[stage, o, 4], coefs[stage, o, 5]
      # explicit calls: an array assigned to a variable costs a reference count, which the threads share
      if stage == 0:
        r0, r1, r2 = _in_row(xb, in_offsets, s0), _in_row(xb, in_offsets, s1), _in_row(xb, in_offsets, s2)
        r3, r4, r5 = _in_row(xb, in_offsets, s3), _in_row(xb, in_offsets, s4), _in_row(xb, in_offsets, s5)
        if stage == k - 1:
          _combine(out, ob + out_offsets[o], out_run, un, runs, count, x, x_run, c0, r0, c1, r1, c2, r2, c3, r3, c4, r4, c5, r5)
        else:
          _combine(following, o * block, n, un, runs, count, x, x_run, c0, r0, c1, r1, c2, r2, c3, r3, c4, r4, c5, r5)
      else:
        r0, r1, r2 = np.uint64(s0 * block), np.uint64(s1 * block), np.uint64(s2 * block)
        r3, r4, r5 = np.uint64(s3 * block), np.uint64(s4 * block), np.uint64(s5 * block)
        if stage == k - 1:
          _combine(out, ob + out_offsets[o], out_run, un, runs, count, current, n, c0, r0, c1, r1, c2, r2, c3, r3, c4, r4, c5, r5)
        else:
          _combine(following, o * block, n, un, runs, count, current, n, c0, r0, c1, r1, c2, r2, c3, r3, c4, r4, c5, r5)
    current, following = following, current


@njit(**_FLAGS)
def _in_row(xb, in_offsets, value): return np.uint64(xb + in_offsets[value])


@njit(**_FLAGS)
def _transform_items(out, x, sizes, divisors, in_strides, out_strides, offset, start, stop, plan, in_offsets, out_offsets):
  """Work items start..stop: item i is an index of the batch dims but the last two and a chunk of at most
  RUN_CHUNK indices of the second last (the run); the tile values are rows along the last dim (contiguous in x
  and out). One pair of scratch buffers serves them all."""
  last = len(sizes) - 1
  run_dim, n, run_size = last - 1, sizes[last], sizes[last - 1]
  chunks = (run_size + RUN_CHUNK - 1) // RUN_CHUNK
  scratch = plan[3].max() * RUN_CHUNK * n
  current, following = np.empty(scratch, x.dtype), np.empty(scratch, x.dtype)
  for item in range(start, stop):
    outer, first = item // chunks, (item % chunks) * RUN_CHUNK
    xb, ob = offset + first * in_strides[run_dim], first * out_strides[run_dim]
    for d in range(run_dim):
      i = (outer // divisors[d]) % sizes[d]
      xb += i * in_strides[d]
      ob += i * out_strides[d]
    _tile_rows(out, x, xb, ob, n, min(RUN_CHUNK, run_size - first), in_strides[run_dim], out_strides[run_dim],
               plan[0], plan[1], plan[2], plan[3], in_offsets, out_offsets, current, following)


@njit(**_FLAGS)
def _transform_serial(out, x, sizes, divisors, in_strides, out_strides, offset, items, plan, in_offsets, out_offsets):
  _transform_items(out, x, sizes, divisors, in_strides, out_strides, offset, 0, items, plan, in_offsets, out_offsets)


@njit(**_FLAGS, parallel=True)
def _transform_parallel(out, x, sizes, divisors, in_strides, out_strides, offset, items, plan, in_offsets, out_offsets):
  chunks = min(items, ROW_CHUNKS)
  for chunk in prange(chunks):
    _transform_items(out, x, sizes, divisors, in_strides, out_strides, offset, chunk * items // chunks,
                     (chunk + 1) * items // chunks, plan, in_offsets, out_offsets)


@functools.lru_cache(maxsize=None)
def _plan(matrix: tuple, k: int, dtype: str) -> tuple:
  """(counts, coefficients, sources, stage sizes): stage s maps values shaped (rows^s, cols, cols^(k-s-1)) to
  (rows^s, rows, cols^(k-s-1)), and value o of stage s sums counts[s, o] terms coefficient * source value."""
  rows, cols = len(matrix), len(matrix[0])
  if any(sum(1 for v in row if v != 0) > MAX_TERMS for row in matrix):
    raise ValueError(f"an axis transform takes matrices of at most {MAX_TERMS} nonzero entries a row")
  stage_sizes = [rows ** (s + 1) * cols ** (k - s - 1) for s in range(k)]
  counts = np.zeros((k, max(stage_sizes)), np.int64)
  coefs = np.zeros((k, max(stage_sizes), MAX_TERMS), dtype)
  sources = np.zeros((k, max(stage_sizes), MAX_TERMS), np.int64)
  for s in range(k):
    after = cols ** (k - s - 1)
    for o in range(stage_sizes[s]):
      lead, a, tail = o // (rows * after), (o // after) % rows, o % after
      for c in range(cols):
        if matrix[a][c] == 0: continue
        coefs[s, o, counts[s, o]], sources[s, o, counts[s, o]] = matrix[a][c], (lead * cols + c) * after + tail
        counts[s, o] += 1
  return counts, coefs, sources, np.array(stage_sizes, np.int64)


def _grid_offsets(sizes: tuple, strides: tuple) -> np.ndarray:
  """The offset of every index of a grid of sizes (row-major) for the given per-dim strides."""
  return np.array([sum(i * s for i, s in zip(index, strides)) for index in itertools.product(*map(range, sizes))], np.int64)


def axis_transform(out: np.ndarray, x: np.ndarray, matrix: tuple, batch_sizes: tuple, in_strides: tuple,
                   out_strides: tuple, tile_in_strides: tuple, tile_out_strides: tuple, offset: int):
  """out[b, a1..ak] = sum over c1..ck of matrix[a1][c1]...matrix[ak][ck] * x[b, c1..ck], for every index b
  of the batch dims; the strides are in elements of the flat buffers out and x. The kernel wants the last batch
  dim contiguous in both: otherwise x is copied that way first, or the result is made that way and copied out
  (Winograd's big transforms never need it; its weight transforms and small cases do)."""
  batch_sizes, in_strides, out_strides = tuple(batch_sizes) or (1,), tuple(in_strides) or (0,), tuple(out_strides) or (0,)
  if math.prod(batch_sizes) == 0: return
  k, rows, cols = len(tile_in_strides), len(matrix), len(matrix[0])
  if in_strides[-1] != 1:
    view = strided_view(x, batch_sizes + (cols,) * k, in_strides + tuple(tile_in_strides), offset)
    x = np.ascontiguousarray(np.moveaxis(view, len(batch_sizes) - 1, -1))        # (*outer batch, *tile, last batch)
    in_strides = tuple(s // x.itemsize for s in np.moveaxis(x, -1, len(batch_sizes) - 1).strides)
    x, offset, tile_in_strides = x.reshape(-1), 0, in_strides[len(batch_sizes):]
    in_strides = in_strides[:len(batch_sizes)]
  if out_strides[-1] != 1:
    shape = batch_sizes[:-1] + (rows,) * k + batch_sizes[-1:]
    result = np.empty(shape, out.dtype)
    strides = tuple(s // result.itemsize for s in np.moveaxis(result, -1, len(batch_sizes) - 1).strides)
    axis_transform(result.reshape(-1), x, matrix, batch_sizes, in_strides, strides[:len(batch_sizes)], tile_in_strides,
                   strides[len(batch_sizes):], offset)
    target = strided_view(out, batch_sizes + (rows,) * k, out_strides + tuple(tile_out_strides), 0, writeable=True)
    np.copyto(target, np.moveaxis(result, -1, len(batch_sizes) - 1))
    return
  kept = [d for d, size in enumerate(batch_sizes) if size != 1 or d == len(batch_sizes) - 1]   # so the run is a real dim
  batch_sizes, in_strides, out_strides = (tuple(seq[d] for d in kept) for seq in (batch_sizes, in_strides, out_strides))
  if len(batch_sizes) == 1:   # a run of one tile
    batch_sizes, in_strides, out_strides = (1,) + batch_sizes, (0,) + in_strides, (0,) + out_strides
  items = math.prod(batch_sizes[:-2]) * -(-batch_sizes[-2] // RUN_CHUNK)
  divisors = [math.prod(batch_sizes[d + 1:-2]) for d in range(len(batch_sizes) - 2)] + [1, 1]   # the outer dims' index steps
  args = (np.array(batch_sizes, np.int64), np.array(divisors, np.int64), np.array(in_strides, np.int64),
          np.array(out_strides, np.int64), offset, items, _plan(tuple(map(tuple, matrix)), k, x.dtype.name),
          _grid_offsets((cols,) * k, tile_in_strides), _grid_offsets((rows,) * k, tile_out_strides))
  with LAUNCH_LOCK:
    if math.prod(batch_sizes) * rows ** k >= PARALLEL_MIN_ELEMENTS and items > 1: runnable(_transform_parallel)(out, x, *args)
    else: _transform_serial(out, x, *args)


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


def overlap_add(out: np.ndarray, x: np.ndarray, batch: int, channels: int, tiles: tuple, tile: tuple, step: int,
                x_strides: tuple, x_offset: int, out_spatial_strides: tuple, out_batch_stride: int):
  """out (N, *S, C) contiguous = the sum of x's tiles (N, C, *tiles, *tile) placed a step apart."""
  out.fill(0)
  if x.size == 0 or out.size == 0: return
  dims = len(tiles)
  if x_strides[1] != 1:   # rows of channels must be contiguous: copy x channels last (not the case Winograd makes)
    view = strided_view(x, (batch, channels, *tiles, *tile), x_strides, x_offset)
    x = np.ascontiguousarray(np.moveaxis(view, 1, -1)).reshape(-1)
    grid = tuple(tiles) + tuple(tile)
    x_strides, x_offset = (x.size // batch, 1, *[math.prod(grid[i + 1:]) * channels for i in range(2 * dims)]), 0
  tile_x = _grid_offsets(tiles, x_strides[2:2 + dims]) + x_offset
  tile_out = _grid_offsets(tiles, tuple(step * s for s in out_spatial_strides))
  element_x, element_out = _grid_offsets(tile, x_strides[2 + dims:]), _grid_offsets(tile, out_spatial_strides)
  blocks = -(-channels // CHANNEL_BLOCK)
  args = (blocks, channels, tile_x, tile_out, element_x, element_out, x_strides[0], out_batch_stride)
  with LAUNCH_LOCK:
    if out.size >= PARALLEL_MIN_ELEMENTS and batch * blocks > 1: runnable(_overlap_add_parallel)(out, x, batch * blocks, *args)
    else: _overlap_add_items(out, x, 0, batch * blocks, *args)
