"""GPU kernels of the indexed reads, the weighted taps along an axis and the concatenation (graph/take.py,
graph/taps.py, graph/concat.py), one thread per element with grid-stride loops. take and the concatenation only move
bits, so buffers go in as unsigned integers of their item size, as on the CPU (jit/take.py); the scatter-add sums with
atomic adds, since two positions may name one element."""
import numpy as np
from numba import cuda
from nbgrad.cuda.device import THREADS, MAX_BLOCKS
from nbgrad.cuda.runtime import device_function
from nbgrad.jit import take as cpu_take


def _blocks(n: int) -> int: return max(1, min(-(-n // THREADS), MAX_BLOCKS))


def _bits(buffer): return buffer.view(np.dtype(f"u{buffer.dtype.itemsize}"))


# where row i starts, or -1 to read zeros. numba's disk cache of the kernels below does not see a change to it in
# jit/take.py: a change there needs this file touched too
_row_start = device_function(cpu_take, "_row_start", globals())


@cuda.jit(device=True, inline=True)
def _source(positions, e, row, dim_size, row_step, groups, group_step, lanes, shared, wrap):
  """Where element e of a take (graph/take.py's Rows) reads x, before the offset, or -1 for a zero."""
  r = e // row
  count = positions.size if shared else positions.size // groups
  group = r // count
  i = r - group * count
  p = _row_start(positions, i if shared else r, row_step, dim_size, wrap)
  return group * group_step + p + (i % lanes) * row + e - r * row if p >= 0 else -1


@cuda.jit(cache=True)
def _take_kernel(out, x, positions, offset, row, dim_size, row_step, groups, group_step, lanes, shared, wrap):
  for e in range(cuda.grid(1), out.size, cuda.gridsize(1)):
    at = _source(positions, e, row, dim_size, row_step, groups, group_step, lanes, shared, wrap)
    if at >= 0: out[e] = x[offset + at]
    else: out[e] = 0


@cuda.jit(cache=True)
def _zero_kernel(out):
  for e in range(cuda.grid(1), out.size, cuda.gridsize(1)): out[e] = 0


@cuda.jit(cache=True)
def _scatter_add_kernel(out, grad, positions, row, dim_size, row_step, groups, group_step, lanes, shared, wrap):
  for e in range(cuda.grid(1), grad.size, cuda.gridsize(1)):
    at = _source(positions, e, row, dim_size, row_step, groups, group_step, lanes, shared, wrap)
    if at >= 0: cuda.atomic.add(out, at, grad[e])


@cuda.jit(cache=True)
def _taps_kernel(out, x, taps, weights, n, m, inner, count):
  for e in range(cuda.grid(1), out.size, cuda.gridsize(1)):
    item = e // inner
    o, i, r = item // m, item % m, e - item * inner
    total = -(weights[0] - weights[0])   # -0 of the weights' type: adding to it leaves a -0 as it is
    for t in range(i, count * m, m):
      if taps[t] >= 0: total += weights[t] * x[(o * n + taps[t]) * inner + r]
    out[e] = total


@cuda.jit(cache=True)
def _slot_kernel(out, source, slot_start, slot_size, total_size, count, inner, first, step, dim_step):
  """The count elements of source seen as rows of slot_size, element (j, k) of row r (k < inner) at first + r * step
  + j * dim_step + k, go into out seen as (rows, total_size) at column slot_start."""
  for e in range(cuda.grid(1), count, cuda.gridsize(1)):
    outer = e // slot_size
    along = (e - outer * slot_size) // inner
    within = e - outer * slot_size - along * inner
    out[outer * total_size + slot_start + e - outer * slot_size] = source[first + outer * step + along * dim_step + within]


def _rows_arguments(rows: tuple) -> tuple:
  row, dim_size, row_step, groups, group_step, lanes, shared, wrap = rows
  return tuple(np.int64(v) for v in (row, dim_size, row_step, groups, group_step, lanes)) + (bool(shared), bool(wrap))


def take(out, x, positions, offset: int, rows: tuple):
  if out.size:
    _take_kernel[_blocks(out.size), THREADS](_bits(out), _bits(x), positions, np.int64(offset), *_rows_arguments(rows))


def scatter_add(out, grad, positions, rows: tuple):
  if out.size == 0: return
  _zero_kernel[_blocks(out.size), THREADS](out)
  if grad.size: _scatter_add_kernel[_blocks(grad.size), THREADS](out, grad, positions, *_rows_arguments(rows))


def axis_taps(out, x, taps, weights, n: int, m: int, inner: int, count: int):
  if out.size:
    _taps_kernel[_blocks(out.size), THREADS](out, x, taps, weights, np.int64(n), np.int64(m), np.int64(inner), np.int64(count))


def concatenate(out, sources, outer: int, sizes: tuple, inner: int, windows: tuple):
  start = 0
  for size, source, (first, step, dim_step) in zip(sizes, sources, windows):
    count = outer * size * inner
    if count:
      _slot_kernel[_blocks(count), THREADS](_bits(out), _bits(source), np.int64(start * inner), np.int64(size * inner),
                                            np.int64(sum(sizes) * inner), np.int64(count), np.int64(inner), np.int64(first),
                                            np.int64(step), np.int64(dim_step))
    start += size
