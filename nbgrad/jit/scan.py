"""CPU kernels of the running reductions: the cumulative sum, and (further down) the generic scans.

The cumulative sum: Input and output are flat buffers seen as (outer, length, inner) and
scanned along the middle axis: one running sum per (outer, inner) position.

A work item is one outer index and a block of up to SCAN_BLOCK inner columns. When inner > 1 the item
walks the length rows adding whole blocks (contiguous, so LLVM vectorizes the adds, and the block of
running sums stays in L1); when inner == 1 it is a plain scalar running sum along contiguous memory.
Float sums run in float64 and are rounded once per output, as torch's do: float32 running sums drift (a
million 0.1s summed to 100958.34); integer sums keep their dtype and wrap."""
from __future__ import annotations
import numba
import numpy as np
from numba import njit, prange
from nbgrad.jit import PARALLEL_MIN_ELEMENTS
from nbgrad.jit.compiler import LAUNCH_LOCK, CachedEntry

SCAN_BLOCK = 512   # inner columns per work item: 4 KiB of float64 running sums


ROWS_TOGETHER = 4   # rows (inner == 1) an item scans side by side: their adds overlap instead of waiting in one chain


def work_items(outer: int, inner: int) -> int:
  return (outer + ROWS_TOGETHER - 1) // ROWS_TOGETHER if inner == 1 else outer * ((inner + SCAN_BLOCK - 1) // SCAN_BLOCK)


@njit(cache=True, nogil=True, error_model="numpy")
def _scan_rows(out, x, length, outer, item, sums):
  """Rows ROWS_TOGETHER * item ... of length elements each (inner == 1), four at a time while four are left."""
  first = item * ROWS_TOGETHER
  if first + ROWS_TOGETHER <= outer:
    a, b, c, d = first * length, (first + 1) * length, (first + 2) * length, (first + 3) * length
    sums[0], sums[1], sums[2], sums[3] = x[a], x[b], x[c], x[d]   # the sums take the accumulation dtype
    ra, rb, rc, rd = sums[0], sums[1], sums[2], sums[3]
    out[a], out[b], out[c], out[d] = ra, rb, rc, rd
    for i in range(1, length):
      ra += x[a + i]
      rb += x[b + i]
      rc += x[c + i]
      rd += x[d + i]
      out[a + i], out[b + i], out[c + i], out[d + i] = ra, rb, rc, rd
    return
  for row in range(first, outer):
    start = row * length
    sums[0] = x[start]
    running = sums[0]
    out[start] = running
    for i in range(start + 1, start + length):
      running += x[i]
      out[i] = running


@njit(cache=True, nogil=True, error_model="numpy")
def _scan_item(out, x, outer, length, inner, item, sums):
  """Scans one work item, its running sums in sums (SCAN_BLOCK of them, in the accumulation dtype)."""
  if inner == 1:
    _scan_rows(out, x, length, outer, item, sums)
    return
  blocks = (inner + SCAN_BLOCK - 1) // SCAN_BLOCK
  outer_index, block = item // blocks, item % blocks
  start = outer_index * length * inner + block * SCAN_BLOCK
  width = min(SCAN_BLOCK, inner - block * SCAN_BLOCK)
  for j in range(width):
    sums[j] = x[start + j]
    out[start + j] = sums[j]
  for row in range(start + inner, start + length * inner, inner):
    for j in range(width):
      sums[j] += x[row + j]
      out[row + j] = sums[j]


@CachedEntry
@njit(cache=True, nogil=True, error_model="numpy")
def _scan_serial(out, x, outer, length, inner, items, scratch):
  for item in range(items): _scan_item(out, x, outer, length, inner, item, scratch[0])


@CachedEntry
@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def _scan_parallel(out, x, outer, length, inner, items, scratch):
  for item in prange(items): _scan_item(out, x, outer, length, inner, item, scratch[numba.get_thread_id()])


def cumulative_sum(out: np.ndarray, x: np.ndarray, outer: int, length: int, inner: int):
  """out = the running sum of x along the middle axis of (outer, length, inner)."""
  if x.size == 0: return
  items = work_items(outer, inner)
  serial = x.size < PARALLEL_MIN_ELEMENTS or items == 1
  # a row of running sums for each thread that may run an item
  scratch = np.empty((1 if serial else numba.config.NUMBA_NUM_THREADS, min(SCAN_BLOCK, max(inner, ROWS_TOGETHER))),
                     np.float64 if x.dtype.kind == "f" else x.dtype)
  if serial: _scan_serial(out, x, outer, length, inner, items, scratch)
  else:
    with LAUNCH_LOCK: _scan_parallel(out, x, outer, length, inner, items, scratch)


# The generic scans (graph/scan.py's RunningScan): a work item is one outer index and a block of up to SCAN_BLOCK
# inner columns, walked row by row as above; op is a number, so one compiled loop serves all of them.
SCAN_OPS = {"prod": 0, "recurrence": 1, "argmax": 2, "argmin": 3, "logaddexp": 4}


@njit(cache=True, nogil=True, error_model="numpy")
def _log_add_exp(a, b):
  """log(exp(a) + exp(b)) without overflow; equal infinities (whose difference is NaN) give themselves."""
  if a != a or b != b: return a + b
  top, bottom = (a, b) if a >= b else (b, a)
  if bottom == -np.inf or top == np.inf: return top
  return top + np.log1p(np.exp(bottom - top))


@njit(cache=True, nogil=True, error_model="numpy")
def _running_item(out, x, factors, op, outer, length, inner, item, state, best):
  """One work item of a generic scan: state holds the running values (products, recurrences) or positions, best
  the running extremes. Element (i, j) of the item is at base + i * step + j * column_step: a block of columns
  (inner > 1), or ROWS_TOGETHER rows side by side (inner == 1), whose chains overlap; the op is chosen once per row,
  not per element. Along the rows of 512x1024 float32 (fastest of 15, a row at a time and per-element choice before):
  cumprod 2.0-2.1 -> 0.9-1.4 ms, cummax 2.8 -> 1.8-2.1, logcumsumexp 28-34 -> 6.6-7.0."""
  if inner == 1:
    first = item * ROWS_TOGETHER
    base, step, column_step, width = first * length, 1, length, min(ROWS_TOGETHER, outer - first)
  else:
    blocks = (inner + SCAN_BLOCK - 1) // SCAN_BLOCK
    outer_index, block = item // blocks, item % blocks
    base, step, column_step = outer_index * length * inner + block * SCAN_BLOCK, inner, 1
    width = min(SCAN_BLOCK, inner - block * SCAN_BLOCK)
  for j in range(width):
    at = base + j * column_step
    best[j] = x[at]
    if op == 2 or op == 3: state[j] = 0   # one expression of 0 and a uint64 x[at] would be a float64: 2**64 - 1 became 2**63
    else: state[j] = x[at]
    out[at] = state[j]
  for i in range(1, length):
    row = base + i * step
    if op == 0:
      for j in range(width):
        at = row + j * column_step
        state[j] = state[j] * x[at]
        out[at] = state[j]
    elif op == 1:
      for j in range(width):
        at = row + j * column_step
        state[j] = x[at] + factors[at] * state[j]
        out[at] = state[j]
    elif op == 4:
      for j in range(width):
        at = row + j * column_step
        state[j] = _log_add_exp(state[j], x[at])
        out[at] = state[j]
    else:
      for j in range(width):
        at = row + j * column_step
        value = x[at]
        if value != value or (value >= best[j] if op == 2 else value <= best[j]):
          best[j] = value
          state[j] = i
        out[at] = state[j]


@CachedEntry
@njit(cache=True, nogil=True, error_model="numpy")
def _running_serial(out, x, factors, op, outer, length, inner, items, state, best):
  for item in range(items): _running_item(out, x, factors, op, outer, length, inner, item, state[0], best[0])


@CachedEntry
@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def _running_parallel(out, x, factors, op, outer, length, inner, items, state, best):
  for item in prange(items):
    thread = numba.get_thread_id()
    _running_item(out, x, factors, op, outer, length, inner, item, state[thread], best[thread])


def running_scan(out: np.ndarray, x: np.ndarray, factors, op: str, outer: int, length: int, inner: int):
  """out = the running op of x along the middle axis of (outer, length, inner). Products and recurrences run
  in float64 for floats (rounded once per output, as the sums) and in int64 for ints (which wrap as their dtype)."""
  if x.size == 0: return
  items = work_items(outer, inner)
  threads = 1 if x.size < PARALLEL_MIN_ELEMENTS or items == 1 else numba.config.NUMBA_NUM_THREADS
  extreme = op in ("argmax", "argmin")
  width = min(SCAN_BLOCK, max(inner, ROWS_TOGETHER))
  state = np.empty((threads, width), np.int64 if extreme or x.dtype.kind in "biu" else np.float64)
  best = np.empty((threads, width), x.dtype)
  factors = x if factors is None else factors   # read only by the recurrence
  args = (out, x, factors, SCAN_OPS[op], outer, length, inner, items, state, best)
  if threads == 1: _running_serial(*args)
  else:
    with LAUNCH_LOCK: _running_parallel(*args)
