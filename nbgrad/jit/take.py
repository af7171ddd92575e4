"""CPU kernels of indexed reads (graph/take.py): take copies rows of elements from positions, scatter_add sums a
gradient back into them. Take only moves bits, so every buffer goes in as unsigned integers of its item size: four
compiled element types serve all dtypes."""
from __future__ import annotations
import math
import time
import numpy as np
from numba import njit, prange
from nbgrad.jit import PARALLEL_MIN_ELEMENTS
from nbgrad.jit.compiler import LAUNCH_LOCK, CachedEntry

TAKE_BLOCK = 4096   # elements per work item of the parallel take
FEW_POSITIONS = 16   # groups of fewer positions each are read as one (_in_fewer_groups)


@njit(cache=True, nogil=True, forceinline=True)
def _row_start(positions, i, row_step, dim_size, wrap) -> int:
  """Where the row of position i starts in x's flat buffer (before its group's start), or -1 to read zeros:
  positions[i] itself, or with dim_size >= 0 the index of a row of a dim that long (rows row_step elements apart),
  counted from its end when negative if wrap."""
  p = np.int64(positions[i])
  if dim_size < 0: return p
  if wrap: p += dim_size if p < 0 else 0
  return p * row_step if np.uint64(p) < np.uint64(dim_size) else -1   # one unsigned comparison: selects, no branches


@njit(cache=True, nogil=True, forceinline=True)
def _group_count(positions, rows) -> int:
  """How many positions a group of graph/take.py's Rows has: all of them where the groups share them."""
  return positions.size if rows[6] else positions.size // rows[3]


@njit(cache=True, nogil=True, forceinline=True)
def _group_starts(rows, group, count):
  """Where a group (of count positions) has its rows start in the flat buffer read (before a take's offset), its
  positions start, and its rows start among the take's (its gradient's)."""
  return group * rows[4], np.uint64(0 if rows[6] else group * count), np.uint64(group * count)


@njit(cache=True, nogil=True, forceinline=True)
def _take_rows(out, x, positions, offset, rows, group, count, first, last, lanes):
  """Rows first..last-1 of a group (graph/take.py's Rows, in rows' order). Plain loops, one call per block of rows,
  and single elements apart: slices, a call per row (numba counts references to its array arguments) or the row
  loop made 100k rows of one element take 1-4 ms instead of 0.33. Indices are unsigned: without a check for
  negative ones LLVM vectorizes the loops. lanes is passed apart, a constant 1 where the caller knows it: its
  modulo then folds away (a gather of 1M elements in rows of 1024: 3.7 -> 2.8 ms)."""
  row, dim_size, row_step, _, _, _, _, wrap = rows
  base, at, done = _group_starts(rows, group, count)
  base, lanes = offset + base, np.uint64(lanes)
  if row == 1:   # rows exist here (take() sees to it), so the first one can stand in for a zero's read
    for i in range(np.uint64(first), np.uint64(last)):
      p = _row_start(positions, at + i, row_step, dim_size, wrap)
      value = x[np.uint64(base + max(p, 0)) + i % lanes]
      # a select rather than a branch, so LLVM vectorizes the loop (100k of 1M: 166 -> 105 us); value ^ value is a
      # zero of value's type, where a literal 0 would unify uint64 with int as float64, losing bits
      out[done + i] = value if p >= 0 else value ^ value
    return
  width = np.uint64(row)
  for i in range(np.uint64(first), np.uint64(last)):
    p, start = _row_start(positions, at + i, row_step, dim_size, wrap), (done + i) * width
    if p >= 0:
      source = np.uint64(base + p) + i % lanes * width
      for j in range(width): out[start + j] = x[source + j]
    else:
      for j in range(width): out[start + j] = 0


@CachedEntry
@njit(cache=True, nogil=True)
def _row_starts(starts, positions, rows, count):
  """Where the row each position of the first starts.size // count groups (of count positions) reads starts in x's
  flat buffer, its group's start and its lane's place counted in, or -1: the positions of Rows with dim_size -1 and
  no lanes."""
  row, dim_size, row_step, _, _, lanes, _, wrap = rows
  for group in range(starts.size // max(count, 1)):
    base, at, done = _group_starts(rows, group, count)
    for j in range(count):
      p = _row_start(positions, at + j, row_step, dim_size, wrap)
      starts[done + j] = base + p + j % lanes * row if p >= 0 else -1


@njit(cache=True, nogil=True, forceinline=True)
def _take_block(out, x, positions, offset, rows, group, count, first, last):
  if rows[5] == 1: _take_rows(out, x, positions, offset, rows, group, count, first, last, 1)
  else: _take_rows(out, x, positions, offset, rows, group, count, first, last, rows[5])


@CachedEntry
@njit(cache=True, nogil=True)
def _take_serial(out, x, positions, offset, rows):
  count = _group_count(positions, rows)   # once: a division, in a loop over groups of a single position each
  for group in range(rows[3]): _take_block(out, x, positions, offset, rows, group, count, 0, count)


@CachedEntry
@njit(cache=True, nogil=True, parallel=True)
def _take_parallel(out, x, positions, offset, rows, block):
  count = _group_count(positions, rows)
  blocks = (count + block - 1) // block
  for item in prange(rows[3] * blocks):
    group, first = divmod(np.int64(item), blocks)   # prange's index may be unsigned: int64 keeps it an int
    _take_block(out, x, positions, offset, rows, group, count, first * block, min(count, (first + 1) * block))


@njit(cache=True, nogil=True, forceinline=True)
def _scatter_add_group(out, grad, positions, rows, group, count, lanes):
  """The rows of a group added into out (unsigned indices, and lanes passed apart, as in _take_rows)."""
  row, dim_size, row_step, _, _, _, _, wrap = rows
  (base, at, done), lanes = _group_starts(rows, group, count), np.uint64(lanes)
  if row == 1:   # single elements: no row loop around each (131k of 512k: 239 -> 141 us)
    for i in range(np.uint64(count)):
      p = _row_start(positions, at + i, row_step, dim_size, wrap)
      if p >= 0: out[np.uint64(base + p) + i % lanes] += grad[done + i]
    return
  width = np.uint64(row)
  for i in range(np.uint64(count)):
    p, start = _row_start(positions, at + i, row_step, dim_size, wrap), (done + i) * width
    if p >= 0:
      target = np.uint64(base + p) + i % lanes * width
      for j in range(width): out[target + j] += grad[start + j]


@CachedEntry
@njit(cache=True, nogil=True)
def _scatter_add(out, grad, positions, rows):
  # serial: two positions may name one row, and numba's CPU threads have no atomic add
  out[:] = 0
  count = _group_count(positions, rows)
  for group in range(rows[3]):
    if rows[5] == 1: _scatter_add_group(out, grad, positions, rows, group, count, 1)
    else: _scatter_add_group(out, grad, positions, rows, group, count, rows[5])


SCATTER_OPS = {"set": 0, "sum": 1, "prod": 2, "amax": 3, "amin": 4, "mean": 5}


@CachedEntry
@njit(cache=True, nogil=True)
def _scatter_reduce(out, base, src, positions, op, include_self, floats, counts):
  """Serial, as _scatter_add: two elements may land on one position. counts: how many values each position holds,
  kept for a mean and where base's value is left out (else empty: filling it cost more than the scatter)."""
  out[:] = base
  counted = counts.size > 0
  if counted: counts[:] = 1 if include_self else 0
  for i in range(positions.size):
    p = positions[i]
    if p < 0: continue
    value = src[i]
    if op == 0 or (counted and counts[p] == 0): out[p] = value
    elif op == 1 or op == 5: out[p] += value
    elif op == 2: out[p] *= value
    elif op == 3: out[p] = value if value > out[p] or value != value else out[p]
    elif op == 4: out[p] = value if value < out[p] or value != value else out[p]
    if counted: counts[p] += 1
  if op == 5:
    for p in range(out.size):
      if counts[p] > 1: out[p] = out[p] / counts[p] if floats else out[p] // counts[p]


def scatter_reduce(out: np.ndarray, base: np.ndarray, src: np.ndarray, positions: np.ndarray, op: str, include_self: bool):
  """out = base with src combined in at positions (graph/take.py's ScatterReduce)."""
  counts = np.empty(out.size if op == "mean" or not include_self else 0, np.int64)
  if out.size: _scatter_reduce(out, base, src, positions, SCATTER_OPS[op], include_self, out.dtype.kind == "f", counts)


def _bits(buffer: np.ndarray) -> np.ndarray: return buffer.view(np.dtype(f"u{buffer.itemsize}"))


class TimedChoice:
  """The faster of several ways to run a take of one size (serially or in parallel), found by timing each on the
  first calls and kept from then on: which one wins depends on the machine and the size (on a 2-core AMD EPYC VM,
  100k single elements of 1M: 128 us serially, 213 in parallel; 8192 rows of 256: 419 and 265). A take's time does
  not depend much on what runs around it; products and fused kernels chosen this way made the parallel kernels
  after them slower (see jit/__init__.py and jit/blas.py)."""
  __slots__ = ("best_times", "calls", "chosen")
  # Timed calls of each way, in a row: the fastest of them counts, so one call slowed by another process does not
  # decide. In a row rather than taking turns, since a way's speed depends on where the ways before it left the
  # data: x[100k indices] took 128 us serially after serial calls and 296 after parallel ones, which then won.
  TRIALS = 3

  def __init__(self, ways: int):
    self.best_times, self.calls, self.chosen = [math.inf] * ways, 0, None

  def next_way(self) -> int:
    """The way to run the next call: each in turn for TRIALS calls while timing, then the fastest."""
    return self.chosen if self.chosen is not None else self.calls // self.TRIALS

  def timed(self, way: int, seconds: float):
    self.best_times[way] = min(self.best_times[way], seconds)
    self.calls += 1
    if self.calls >= self.TRIALS * len(self.best_times): self.chosen = self.best_times.index(min(self.best_times))

  def run(self, *ways):
    """Calls one of ways (functions of no arguments, in this choice's order): the next to time, or the chosen one."""
    way = self.next_way()
    if self.chosen is not None: return ways[way]()
    start = time.perf_counter()
    result = ways[way]()
    self.timed(way, time.perf_counter() - start)
    return result


_take_choices: dict[tuple, TimedChoice] = {}   # by (size, row, itemsize): serially (0) or in parallel (1)
TAKE_CHOICES_LIMIT = 4096


def take_choice(size: int, row: int, itemsize: int) -> TimedChoice:
  key = (size, row, itemsize)
  if key not in _take_choices:
    if len(_take_choices) >= TAKE_CHOICES_LIMIT: _take_choices.clear()
    _take_choices[key] = TimedChoice(2)
  return _take_choices[key]


def take(out: np.ndarray, x: np.ndarray, positions: np.ndarray, offset: int, rows: tuple):
  """out = the rows of x that positions name (graph/take.py's Rows, as a tuple), from offset on; zeros where a
  position names none."""
  if out.size == 0: return
  if x.size == 0 or rows[1] == 0:   # no rows: every position reads a zero
    out[:] = 0
    return
  positions, rows = _in_fewer_groups(positions, rows)
  out_bits, x_bits, row = _bits(out), _bits(x), rows[0]

  def serially(): _take_serial(out_bits, x_bits, positions, offset, rows)

  def in_parallel():
    with LAUNCH_LOCK: _take_parallel(out_bits, x_bits, positions, offset, rows, max(1, TAKE_BLOCK // row))
  if out.size < PARALLEL_MIN_ELEMENTS: serially()
  else: take_choice(out.size, row, out.itemsize).run(serially, in_parallel)


def scatter_add(out: np.ndarray, grad: np.ndarray, positions: np.ndarray, rows: tuple):
  """out = zeros, then each row of grad added to the row of out its position names (skipped where it names none)."""
  if out.size: _scatter_add(out, grad, *_in_fewer_groups(positions, rows))


def _in_fewer_groups(positions: np.ndarray, rows: tuple) -> tuple:
  """positions and rows to read the same elements in fewer groups, where that pays: groups of few positions each
  (a label of each row) as one group of flat row starts, each group's start and lane counted in (gather of 1024
  rows' labels: 20 -> 1.6 us; a loop over the positions of each group costs about 20 ns to start); the positions
  the groups share (x[:, idx]) as flat row starts, each found once rather than again in every group (x[:, idx] of
  a 1024x1024 float32 matrix, 512 columns: 693 -> 358 us on one thread)."""
  groups, shared = rows[3], rows[6]
  if groups <= 1: return positions, rows
  count = positions.size if shared else positions.size // groups
  if count >= FEW_POSITIONS and not shared: return positions, rows
  # filled in place: an array a numba function returns costs its first call in a process about 50 ms
  starts = np.empty(count * (groups if count < FEW_POSITIONS else 1), np.int64)
  _row_starts(starts, positions, rows, count)
  if count < FEW_POSITIONS: return starts, (rows[0], -1, 0, 1, 0, 1, True, rows[7])
  return starts, (rows[0], -1) + rows[2:]
