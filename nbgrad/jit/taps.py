"""CPU kernel of the weighted taps along an axis (graph/taps.py): every loop runs along contiguous memory. Along the
last axis a work item is an output row (o, all of m), built tap by tap across it; otherwise it is the row of inner
elements at (o, i), the weighted rows of x its taps name added in turn. Unsigned offsets keep wraparound checks out
of the loops (along the last axis, 1.6M outputs of 2 taps each: 3.4 ms with signed ones, a tap loop inside each
output, 1.3 this way)."""
from __future__ import annotations
import numpy as np
from numba import njit, prange
from nbgrad.jit import PARALLEL_MIN_ELEMENTS
from nbgrad.jit.compiler import LAUNCH_LOCK, runnable

_FLAGS = dict(cache=True, nogil=True, error_model="numpy")
TAPS_BLOCK = 4096   # output elements per parallel work item


@njit(**_FLAGS)
def _items(out, x, taps, weights, first, last, n, m, inner, count):
  """Work items first..last-1; each output is the sum of its weighted taps in order, a tap of -1 left out. The sums
  start from -0, which adding leaves every value as it is (a -0 too, which a start from +0 turns into +0)."""
  if inner == 1:
    for o in range(first, last):
      source, target = np.uint64(o * n), np.uint64(o * m)
      for i in range(np.uint64(m)): out[target + i] = -0.0
      for t in range(count):
        row = np.uint64(t * m)
        for i in range(np.uint64(m)):
          if taps[row + i] >= 0: out[target + i] += weights[row + i] * x[source + np.uint64(taps[row + i])]
    return
  o, i = first // m, first % m   # stepped along: a division an item costs more than a short row
  width = np.uint64(inner)
  for item in range(first, last):
    target = np.uint64(item * inner)
    for r in range(width): out[target + r] = -0.0
    for t in range(i, count * m, m):
      if taps[t] < 0: continue
      w, source = weights[t], np.uint64((o * n + taps[t]) * inner)
      for r in range(width): out[target + r] += w * x[source + r]
    i += 1
    if i == m: o, i = o + 1, 0


@njit(**_FLAGS, parallel=True)
def _items_parallel(out, x, taps, weights, items, block, n, m, inner, count):
  for b in prange((items + block - 1) // block):
    _items(out, x, taps, weights, b * block, min(items, (b + 1) * block), n, m, inner, count)


def axis_taps(out: np.ndarray, x: np.ndarray, taps: np.ndarray, weights: np.ndarray, n: int, m: int, inner: int, count: int):
  """out (outer, m, inner) = the weighted taps of x (outer, n, inner), by tables (count, m); all flat, contiguous."""
  if out.size == 0: return
  per_item = m if inner == 1 else inner
  items, block = out.size // per_item, max(1, TAPS_BLOCK // per_item)
  with LAUNCH_LOCK:
    if out.size >= PARALLEL_MIN_ELEMENTS and items > block: runnable(_items_parallel)(out, x, taps, weights, items, block, n, m, inner, count)
    else: _items(out, x, taps, weights, 0, items, n, m, inner, count)
