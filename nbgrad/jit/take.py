"""CPU kernels of indexed reads (graph/take.py): take copies rows of elements from positions, scatter_add sums a
gradient back into them. Take only moves bits, so every buffer goes in as unsigned integers of its item size: four
compiled element types serve all dtypes."""
from __future__ import annotations
import numpy as np
from numba import njit, prange
from nbgrad.jit import PARALLEL_MIN_ELEMENTS
from nbgrad.jit.compiler import LAUNCH_LOCK, CachedEntry

TAKE_BLOCK = 4096   # elements per work item of the parallel take


@njit(cache=True, nogil=True)
def _take_rows(out, x, positions, offset, row, first, last):
  """Rows first..last-1. Plain loops, one call per block of rows, and single elements apart: slices, a call per
  row (numba counts references to its array arguments) or the row loop made 100k rows of one element take 1-4 ms
  instead of 0.33."""
  if row == 1:
    for i in range(first, last):
      p = positions[i]
      if p >= 0: out[i] = x[offset + p]
      else: out[i] = 0   # apart: `x[...] if p >= 0 else 0` unifies uint64 with int as float64, losing bits
    return
  for i in range(first, last):
    p, start = positions[i], i * row
    if p >= 0:
      source = offset + p
      for j in range(row): out[start + j] = x[source + j]
    else:
      for j in range(row): out[start + j] = 0


@CachedEntry
@njit(cache=True, nogil=True)
def _take_serial(out, x, positions, offset, row):
  _take_rows(out, x, positions, offset, row, 0, positions.size)


@CachedEntry
@njit(cache=True, nogil=True, parallel=True)
def _take_parallel(out, x, positions, offset, row, block):
  for first in prange((positions.size + block - 1) // block):
    _take_rows(out, x, positions, offset, row, first * block, min(positions.size, (first + 1) * block))


@CachedEntry
@njit(cache=True, nogil=True)
def _scatter_add(out, grad, positions, row):
  # serial: two positions may name one row, and numba's CPU threads have no atomic add
  out[:] = 0
  for i in range(positions.size):
    p, start = positions[i], i * row
    if p >= 0:
      for j in range(row): out[p + j] += grad[start + j]


def _bits(buffer: np.ndarray) -> np.ndarray: return buffer.view(np.dtype(f"u{buffer.itemsize}"))


def take(out: np.ndarray, x: np.ndarray, positions: np.ndarray, offset: int, row: int):
  """out (positions.size rows of row elements) = the rows of x starting at offset + positions, 0 where < 0."""
  if out.size == 0: return
  if out.size < PARALLEL_MIN_ELEMENTS: _take_serial(_bits(out), _bits(x), positions, offset, row)
  else:
    block = max(1, TAKE_BLOCK // row)
    with LAUNCH_LOCK: _take_parallel(_bits(out), _bits(x), positions, offset, row, block)


def scatter_add(out: np.ndarray, grad: np.ndarray, positions: np.ndarray, row: int):
  """out = zeros, then each row i of grad added at out[positions[i]:positions[i] + row] (skipped where < 0)."""
  if out.size: _scatter_add(out, grad, positions, row)
