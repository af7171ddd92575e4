"""The CPU sort: a stable radix sort of unsigned keys whose order is the order the sort wants.

Keys come from the values' bits (the buffer seen as signed ints of its width): an int's own value, an unsigned
int's with its top bit flipped (which shifts it down by half its range, signed), and a float's magnitude bits,
negated for negative values, so that -0.0 and 0.0 are one key, with every NaN above inf (torch's and numpy's
order). Descending order is the keys' bitwise complement, so equal values keep their order both ways. The signed
key's top bit flipped makes it unsigned, of the values' width.

Sort (a row per work item, rows in parallel; one long row with every thread on each pass): least significant byte
first, each pass a count of the 256 digits and a stable scatter of items, each 32 bits of key above a position; a
pass whose digit is the same everywhere is skipped. Rows of up to INSERTION_MAX elements sort by insertion, and a
topk of up to SELECT_MAX values keeps them in order as the row streams by; a topk of one long row gathers the keys
under a bound from a sample, in parallel, and sorts only those. Benchmark group sort: 1M float32 values in 18.6 ms
(numpy's stable sort 118, torch's 150), the rows of a 1024x1024 matrix in 11 (numpy 48, torch 35).

searchsorted: a branch-free binary search, values in lockstep groups, groups in parallel."""
from __future__ import annotations
import numba
import numpy as np
from numba import njit, prange
from nbgrad.dtype import DType
from nbgrad.jit import PARALLEL_MIN_ELEMENTS
from nbgrad.jit.compiler import LAUNCH_LOCK, CachedEntry

INSERTION_MAX = 16
SELECT_MAX = 64
SIGNED, UNSIGNED, FLOAT = 0, 1, 2
INFINITY_BITS = {"float16": 0x7C00, "bfloat16": 0x7F80, "float32": 0x7F800000, "float64": 0x7FF0000000000000}
DIGIT, ONE, LOW = np.uint64(255), np.uint64(1), np.uint64(0xFFFFFFFF)   # unsigned: indices need no negative check


@njit(cache=True, nogil=True, forceinline=True)
def _key(bits, kind, sign, infinity, descending):
  """The order key of a value from its bits, an unsigned int of the values' width whose unsigned order is the sort's;
  sign has the bits from the width's top bit up set."""
  b = np.int64(bits)
  if kind == FLOAT:
    magnitude = b & ~sign
    key = ~sign if magnitude > infinity else (magnitude if b >= 0 else -magnitude)
  elif kind == UNSIGNED: key = b ^ sign
  else: key = b
  if descending: key = ~key
  return np.uint64(key ^ sign) & ~(np.uint64(sign) << ONE)   # signed order to unsigned: the top bit flipped


@njit(cache=True, nogil=True, forceinline=True)
def _byte(key, byte):
  return (np.uint64(key) >> np.uint64(8 * byte)) & DIGIT


# The radix passes move items: 32 bits of a key (all of a key of up to 4 bytes; a key of 8 sorts by its low half,
# then stably by its high half) above the 32-bit position of its value. One array of items is scattered where a
# key array and a position array were (1M float32: 10.7 -> 7.4 ms a sort, on one thread).
@njit(cache=True, nogil=True, forceinline=True)
def _item(key, half, position):
  return (((np.uint64(key) >> np.uint64(32 * half)) & LOW) << np.uint64(32)) | np.uint64(position)


@njit(cache=True, nogil=True, forceinline=True)
def _count_digits(counts, items, first_byte, begin, end):
  """counts[byte, digit] += how many of items[begin:end] have that digit at first_byte + byte of their keys: every
  byte in one read."""
  for i in range(begin, end):
    item = items[i]
    for byte in range(len(counts)): counts[byte, _byte(item, 4 + first_byte + byte)] += ONE


@njit(cache=True, nogil=True, forceinline=True)
def _scatter(source, target, starts, byte, begin, end):
  """One radix pass over source[begin:end]: each item to the next place of its digit."""
  for i in range(begin, end):
    item = source[i]
    digit = _byte(item, 4 + byte)
    place = starts[digit]
    starts[digit] = place + ONE
    target[place] = item


@njit(cache=True, nogil=True, forceinline=True)
def _exclusive_sums(counts):
  total = np.uint64(0)
  for digit in range(len(counts)):
    count = counts[digit]
    counts[digit] = total
    total += count


@njit(cache=True, nogil=True, forceinline=True)
def _passes(items, spare, width):
  """items sorted stably by the low width bytes of their keys, with spare as room: the sorted items, and the other."""
  counts = np.zeros((width, 256), np.uint64)
  _count_digits(counts, items, 0, 0, len(items))
  for byte in range(width):
    starts = counts[byte]
    if starts.max() == len(items): continue   # one digit everywhere: this byte orders nothing
    _exclusive_sums(starts)
    _scatter(items, spare, starts, byte, 0, len(items))
    items, spare = spare, items
  return items, spare


@njit(cache=True, nogil=True)
def _sorted_items(keys, rows, width):
  """Items whose positions (low halves) put keys in stable order, in one of the two rows given as room."""
  n = len(keys)
  items, spare = rows[0][:n], rows[1][:n]
  if n <= INSERTION_MAX:   # by insertion, keys compared whole
    for i in range(n):
      key, j = keys[i], i
      while j > 0 and keys[items[j - 1]] > key:
        items[j] = items[j - 1]
        j -= 1
      items[j] = i
    return items
  for i in range(n): items[i] = _item(keys[i], 0, i)
  items, spare = _passes(items, spare, min(width, 4))
  if width == 8:
    for i in range(n):
      at = items[i] & LOW
      items[i] = _item(keys[at], 1, at)
    items, spare = _passes(items, spare, 4)
  return items


@njit(cache=True, nogil=True)
def _sort_row(bits, order, rows, width, kind, infinity, descending):
  """order = the positions of the len(order) first values of a row (bits, strided) in a stable sort, with four rows
  of room. Up to SELECT_MAX of them (topk) are kept in order as the row streams by, each value compared with the
  last kept one and inserted only when it comes before (the top 10 of each row of 1024: 16 -> 1.2 ms); up to a
  quarter of the row, those up to the k-th value are picked and sorted (the top 1000 of 1M: 18 -> 2.5 ms); else
  the whole row sorts."""
  n, k = len(bits), len(order)
  sign = np.int64(-1) << (8 * width - 1)
  if 0 < k <= SELECT_MAX and k < n:
    kept_keys, kept = rows[0], rows[1]
    count = 0
    for i in range(n):
      key = _key(bits[i], kind, sign, infinity, descending)
      if count == k and key >= kept_keys[k - 1]: continue   # a later equal value comes after: stable
      j = min(count, k - 1)
      while j > 0 and kept_keys[j - 1] > key:
        kept_keys[j], kept[j] = kept_keys[j - 1], kept[j - 1]
        j -= 1
      kept_keys[j], kept[j] = key, i
      count = min(count + 1, k)
    for i in range(k): order[i] = kept[i]
    return
  keys = rows[3][:n]
  for i in range(n): keys[i] = _key(bits[i], kind, sign, infinity, descending)
  if k <= n // 4:   # a topk of more: the k-th key found digit by digit, and only the keys up to it sorted
    kth, before = _kth_key(keys, k, rows[2], width)
    chosen, positions, ties = rows[2], keys, k - before   # positions overwrite the keys already read
    count = 0
    for i in range(n):
      key = keys[i]
      if key < kth or (key == kth and ties > 0):
        ties -= key == kth
        chosen[count], positions[count] = key, i
        count += 1
    in_order = _sorted_items(chosen[:k], rows, width)
    for i in range(k): order[i] = positions[in_order[i] & LOW]
    return
  items = _sorted_items(keys, rows, width)
  for i in range(k): order[i] = items[i] & LOW


@njit(cache=True, nogil=True)
def _kth_key(keys, k, candidates, width):
  """The k-th smallest of keys, and how many keys are smaller: the most significant byte first, each pass counting
  the digits of the keys that share the digits found so far (copied into candidates) and keeping the digit in
  which the k-th falls."""
  source, count, rank, before = keys, len(keys), k, 0
  counts = np.empty(256, np.int64)
  for byte in range(width - 1, -1, -1):
    counts[:] = 0
    for i in range(count): counts[_byte(source[i], byte)] += 1
    digit, below = 0, 0
    while below + counts[digit] < rank:
      below += counts[digit]
      digit += 1
    rank, before = rank - below, before + below
    kept = 0
    for i in range(count):   # candidates may be source: kept <= i, so nothing is overwritten before it is read
      if _byte(source[i], byte) == digit:
        candidates[kept] = source[i]
        kept += 1
    source, count = candidates, kept
  return source[0], before


@CachedEntry
@njit(cache=True, nogil=True)
def _sort_serial(bits, out, width, kind, infinity, descending, scratch):
  for row in range(bits.shape[0] * bits.shape[2]):
    outer, inner = divmod(row, bits.shape[2])
    _sort_row(bits[outer, :, inner], out[outer, :, inner], scratch[0], width, kind, infinity, descending)


@CachedEntry
@njit(cache=True, nogil=True, parallel=True)
def _sort_parallel(bits, out, width, kind, infinity, descending, scratch):
  for item in prange(bits.shape[0] * bits.shape[2]):
    outer, inner = divmod(np.int64(item), bits.shape[2])   # prange's index may be unsigned: int64 keeps it an int
    _sort_row(bits[outer, :, inner], out[outer, :, inner], scratch[numba.get_thread_id()], width, kind, infinity, descending)


# One long row sorts on every thread: each radix pass counts the digits of each thread's part of the row, then
# scatters the parts, the places for each digit given to the parts one after the other, so that equal keys keep
# their order.
@CachedEntry
@njit(cache=True, nogil=True, parallel=True)
def _items_in_parallel(bits, keys, items, width, kind, infinity, descending):
  """items = the row's first items; keys = its order keys, where it has room for them (keys of 8 bytes)."""
  sign = np.int64(-1) << (8 * width - 1)
  for i in prange(len(bits)):
    key = _key(bits[i], kind, sign, infinity, descending)
    if len(keys): keys[i] = key
    items[i] = _item(key, 0, i)


@CachedEntry
@njit(cache=True, nogil=True, parallel=True)
def _high_halves_in_parallel(keys, items):
  for i in prange(len(items)):
    at = items[i] & LOW
    items[i] = _item(keys[at], 1, at)


@CachedEntry
@njit(cache=True, nogil=True, parallel=True)
def _count_parts(items, counts, byte):
  """counts[part, 0] = the counts of the digits at byte in each part of items."""
  n, parts = len(items), counts.shape[0]
  for part in prange(parts):
    counts[part] = 0
    _count_digits(counts[part], items, byte, part * n // parts, (part + 1) * n // parts)


@CachedEntry
@njit(cache=True, nogil=True, parallel=True)
def _scatter_parts(source, target, starts, byte):
  n, parts = len(source), starts.shape[0]
  for part in prange(parts):
    _scatter(source, target, starts[part], byte, part * n // parts, (part + 1) * n // parts)


def _passes_in_parallel(items: np.ndarray, spare: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
  """_passes on every thread."""
  parts = numba.config.NUMBA_NUM_THREADS
  counts = np.empty((parts, 1, 256), np.uint64)
  for byte in range(width):
    _count_parts(items, counts, byte)
    digit_major = counts[:, 0].T   # (256, parts): a digit's places are its parts' in row order
    if digit_major.sum(1).max() == len(items): continue   # one digit everywhere: this byte orders nothing
    starts = np.ascontiguousarray((np.cumsum(digit_major) - digit_major.ravel()).reshape(256, parts).T)
    _scatter_parts(items, spare, starts, byte)
    items, spare = spare, items
  return items, spare


def _sort_long_row(bits: np.ndarray, out: np.ndarray, width: int, kind: int, infinity: int, descending: bool):
  """out = the first len(out) positions of a stable sort of one long row (bits), on every thread."""
  n = len(bits)
  items, spare = np.empty((2, n), np.uint64)
  keys = np.empty(n if width == 8 else 0, np.uint64)
  _items_in_parallel(bits, keys, items, width, kind, infinity, descending)
  items, spare = _passes_in_parallel(items, spare, min(width, 4))
  if width == 8:
    _high_halves_in_parallel(keys, items)
    items, spare = _passes_in_parallel(items, spare, 4)
  out[:] = items[:len(out)] & LOW


# A topk of one long row: a strided sample of SAMPLE keys gives a bound that about SAMPLE_MARGIN times k keys (and
# SAMPLE_SLACK sample steps more) lie under; the threads gather the keys up to it, each from its part of the row,
# and only those are sorted (benchmark sort_topk_1000_of_1m: 5.9-6.0 ms selecting digit by digit on one thread,
# 2.1-2.3 ms so; torch 3.4-5.4).
SAMPLED_SELECT_MIN = 1 << 16
SAMPLE = 8192
SAMPLE_MARGIN, SAMPLE_SLACK = 1.25, 32


@CachedEntry
@njit(cache=True, nogil=True, parallel=True)
def _select_sampled(bits, order, width, kind, infinity, descending, parts):
  """order = the first len(order) positions of a stable sort of one long row (bits), gathered under a sampled bound;
  where fewer than k keys lie under it, or a part finds more than it has room for, the row's serial selection."""
  n, k = len(bits), len(order)
  sign = np.int64(-1) << (8 * width - 1)
  step = max(1, n // SAMPLE)
  sample = np.empty(n // step, np.uint64)
  for i in range(len(sample)): sample[i] = _key(bits[i * step], kind, sign, infinity, descending)
  rank = min(len(sample), int(k / step * SAMPLE_MARGIN) + SAMPLE_SLACK)
  bound, _ = _kth_key(sample, rank, np.empty(len(sample), np.uint64), width)
  room = 2 * (rank * step + step)   # what all parts together expect, twice: a part may hold every candidate
  keys, positions, counts = np.empty((parts, room), np.uint64), np.empty((parts, room), np.int64), np.zeros(parts, np.int64)
  for part in prange(parts):
    count = 0
    for i in range(part * n // parts, (part + 1) * n // parts):
      key = _key(bits[i], kind, sign, infinity, descending)
      if key <= bound:
        if count < room:
          keys[part, count], positions[part, count] = key, i
        count += 1
    counts[part] = count
  total = counts.sum()
  if total < k or counts.max() > room:
    _sort_row(bits, order, np.empty((4, n), np.uint64), width, kind, infinity, descending)
    return
  chosen, chosen_positions, start = np.empty(total, np.uint64), np.empty(total, np.int64), 0
  for part in range(parts):   # parts in row order: equal keys keep their positions' order
    chosen[start:start + counts[part]] = keys[part, :counts[part]]
    chosen_positions[start:start + counts[part]] = positions[part, :counts[part]]
    start += counts[part]
  in_order = _sorted_items(chosen, np.empty((2, total), np.uint64), width)
  for i in range(k): order[i] = chosen_positions[in_order[i] & LOW]


# Rows of this many values or more sort on every thread, one row at a time, where there are fewer rows than threads.
LONG_ROW = 1 << 16


def stable_argsort(out: np.ndarray, x: np.ndarray, dtype: DType, outer: int, length: int, inner: int, descending: bool, k: int):
  """out (outer, k, inner) = the first k positions along the middle axis of (outer, length, inner) that order x
  (values of dtype) there."""
  if out.size == 0: return
  width = x.itemsize
  bits = x.view(np.dtype(f"int{8 * width}")).reshape(outer, length, inner)
  kind = FLOAT if dtype.kind == "f" else UNSIGNED if dtype.kind == "u" else SIGNED
  args = (width, kind, INFINITY_BITS.get(dtype.name, 0), descending)
  rows, threads = outer * inner, numba.config.NUMBA_NUM_THREADS
  if rows == 1 and length >= SAMPLED_SELECT_MIN and 0 < k <= length // 16:
    with LAUNCH_LOCK: _select_sampled(bits.reshape(length), out.reshape(k), *args, threads)
    return
  if rows < threads and length >= LONG_ROW and k > length // 4:
    with LAUNCH_LOCK:
      for row in range(rows):
        outer_at, inner_at = divmod(row, inner)
        _sort_long_row(np.ascontiguousarray(bits[outer_at, :, inner_at]), out.reshape(outer, k, inner)[outer_at, :, inner_at], *args)
    return
  room = k if 0 < k <= SELECT_MAX and k < length else length   # a streaming topk keeps k keys and positions (_sort_row)
  scratch = np.empty((1 if x.size < PARALLEL_MIN_ELEMENTS or rows == 1 else threads, 4, room), np.uint64)
  if len(scratch) == 1: _sort_serial(bits, out.reshape(outer, k, inner), *args, scratch)
  else:
    with LAUNCH_LOCK: _sort_parallel(bits, out.reshape(outer, k, inner), *args, scratch)


# Values are searched GROUP at a time, in lockstep: the halving of a row is the same for every value (it
# depends on the length alone), so each step reads the GROUP values' next elements one after the other, and those
# reads, each a likely cache miss in a long row, overlap rather than wait for each other (100k float32 values among
# 1M, one thread: 24 ms one at a time, 8.6 ms in groups of 8, 6.8 in groups of 16).
GROUP = 16


@njit(cache=True, nogil=True, forceinline=True)
def _before(element, value, right):
  """Whether element comes before value in a sorted row (right: or equals it); NaN after every number. Written
  with & and | rather than branches, so that its use stays a select."""
  value_nan = value != value
  number = (element < value) | (right & (element == value))
  return (~value_nan & number) | (value_nan & (right | (element == element)))


@njit(cache=True, nogil=True)
def _positions(out, row, values, right):
  """out[i] = how many elements of the sorted row come before values[i] (right: or equal it), for up to GROUP
  values. The range halves without a branch: each comparison picks the next start (a select the CPU need not
  predict). The starts are an array of its own (one passed in, which the compiler could not tell apart from out,
  made a search 2-3x slower)."""
  n = len(row)
  if n == 0:
    out[:] = 0
    return
  starts = np.zeros(len(values), np.int64)
  while n > 1:
    half = n >> 1
    for j in range(len(values)):
      start = starts[j]
      starts[j] = start + half if _before(row[start + half], values[j], right) else start
    n -= half
  for j in range(len(values)): out[j] = starts[j] + _before(row[starts[j]], values[j], right)


@CachedEntry
@njit(cache=True, nogil=True)
def _search_serial(out, sequence, values, right):
  for row in range(values.shape[0]):
    for first in range(0, values.shape[1], GROUP):
      last = min(first + GROUP, values.shape[1])
      _positions(out[row][first:last], sequence[row], values[row][first:last], right)


@CachedEntry
@njit(cache=True, nogil=True, parallel=True)
def _search_parallel(out, sequence, values, right):
  groups = -(-values.shape[1] // GROUP)
  for item in prange(values.shape[0] * groups):
    row, group = divmod(np.int64(item), groups)
    first, last = group * GROUP, min((group + 1) * GROUP, values.shape[1])
    _positions(out[row][first:last], sequence[row], values[row][first:last], right)


def binary_search(out: np.ndarray, sequence: np.ndarray, values: np.ndarray, right: bool):
  """out (rows, count) = the positions of values (rows, count) in the sorted rows of sequence (rows, length)."""
  if out.size == 0: return
  if values.size < PARALLEL_MIN_ELEMENTS // 16:   # a search is ~20 reads
    _search_serial(out, sequence, values, right)
  else:
    with LAUNCH_LOCK: _search_parallel(out, sequence, values, right)
