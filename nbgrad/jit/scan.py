"""CPU kernels of the cumulative sum. Input and output are flat buffers seen as (outer, length, inner) and
scanned along the middle axis: one running sum per (outer, inner) position.

A work item is one outer index and a block of up to SCAN_BLOCK inner columns. When inner > 1 the item
walks the length rows adding whole blocks (contiguous, so LLVM vectorizes the adds, and the block of
running sums stays in L1); when inner == 1 it is a plain scalar running sum along contiguous memory."""
from __future__ import annotations
import numpy as np
from numba import njit, prange
from nbgrad.jit import PARALLEL_MIN_ELEMENTS
from nbgrad.jit.compiler import LAUNCH_LOCK, CachedEntry

SCAN_BLOCK = 512   # inner columns per work item: 2 KiB of float32 running sums


@njit(cache=True, nogil=True, error_model="numpy")
def _scan_item(out, x, length, inner, item):
  """Scans one work item. Sums keep the buffer's dtype on the store, so integers wrap."""
  blocks = (inner + SCAN_BLOCK - 1) // SCAN_BLOCK
  outer_index, block = item // blocks, item % blocks
  start = outer_index * length * inner + block * SCAN_BLOCK
  width = min(SCAN_BLOCK, inner - block * SCAN_BLOCK)
  if inner == 1:
    running = x[start]
    out[start] = running
    for i in range(start + 1, start + length):
      running += x[i]
      out[i] = running
    return
  for j in range(start, start + width): out[j] = x[j]
  for row in range(start + inner, start + length * inner, inner):
    for j in range(row, row + width): out[j] = out[j - inner] + x[j]


@CachedEntry
@njit(cache=True, nogil=True, error_model="numpy")
def _scan_serial(out, x, length, inner, items):
  for item in range(items): _scan_item(out, x, length, inner, item)


@CachedEntry
@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def _scan_parallel(out, x, length, inner, items):
  for item in prange(items): _scan_item(out, x, length, inner, item)


def cumulative_sum(out: np.ndarray, x: np.ndarray, outer: int, length: int, inner: int):
  """out = the running sum of x along the middle axis of (outer, length, inner)."""
  if x.size == 0: return
  items = outer * ((inner + SCAN_BLOCK - 1) // SCAN_BLOCK)
  if x.size < PARALLEL_MIN_ELEMENTS or items == 1: _scan_serial(out, x, length, inner, items)
  else:
    with LAUNCH_LOCK: _scan_parallel(out, x, length, inner, items)
