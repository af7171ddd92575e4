"""CPU routine of the concatenation node (graph/concat.py): each source copied into its slot of the output. A big
output is written by all threads, SLOT_GROUP sources per launch, each work item a block of an output row (or of
rows, when they are short) with the pieces of every source of the group that fall in it, so the output is written row
after row. Three 1024x512 pieces stacked on a new last dim (rows of 3): one row per work item 6.0-7.2 ms, a column of
each narrow slot at a time down 5461 rows 1.2 ms (numpy 0.5-0.7, torch 1.3-1.6). Benchmark group
movement, 8 pieces of 1024x512 float32 (medians, one run each way): joined on dim 1, one launch per source writing
its slot of every row took 1.27 ms, this way 1.12 (torch 1.01); joined on dim 0, numpy's copies of the slabs on one
core took 0.96 ms, this way 0.80 (numpy 0.87). In a process that loaded torch first (numba's workqueue threads, each
launch waking them), the dim 1 routine alone took 2.7 ms one launch per source, 1.4 this way."""
from __future__ import annotations
import numpy as np
from numba import njit, prange
from nbgrad.jit.blas import strided_view
from nbgrad.jit.compiler import LAUNCH_LOCK, CachedEntry

COPY_BLOCK = 1 << 14   # elements of an output row one work item writes
SHORT_SLOT = 8         # a source's slot narrower than this is copied a column at a time
SLOT_GROUP = 8         # sources one launch copies: a tuple of this many arrays, so one compile serves every count
# Below this many output elements numpy copies the slots on the calling thread: waking the threads costs 100-150 us
# on a 2-core AMD EPYC VM, what a copy of about a million elements does (two pieces joined on dim 1, serial against
# parallel, including the realize: 64K elements 182-194 against 295-350 us, 1M 447-455 against 468-509, 4M 2235-2571
# against 1289-1512; three 512x512 pieces stacked on a new last dim 664 against 1013).
PARALLEL_COPY_MIN_ELEMENTS = 1 << 20


@CachedEntry
@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def _copy_slots(out, sources, count, rows, out_row, offsets, widths, inner, starts, steps, dim_steps, span_start, span_end):
  """Row r of sources[i] (widths[i] elements, element (j, k) of it at starts[i] + r * steps[i] + j * dim_steps[i] + k
  for k < inner) to out[r * out_row + offsets[i]:][:widths[i]] for i < count, flat arrays of one dtype; the slots of
  the sources together are [span_start, span_end) of each output row."""
  span = span_end - span_start
  blocks = (span + COPY_BLOCK - 1) // COPY_BLOCK
  chunk = max(1, COPY_BLOCK // max(span, 1))   # rows one work item writes: many when the rows are short (stack's)
  for item in prange((rows + chunk - 1) // chunk * blocks):
    first_row = item // blocks * chunk
    begin = span_start + item % blocks * COPY_BLOCK
    end = min(span_end, begin + COPY_BLOCK)
    last_row = min(rows, first_row + chunk)
    for i in range(count):
      source, offset, dim_step, row_step = sources[i], offsets[i], dim_steps[i], steps[i]
      low, high = max(begin, offset), min(end, offset + widths[i])
      if dim_step == inner and high - low < SHORT_SLOT:   # a few elements of each row: walked down the rows
        for j in range(low, high):
          shift = starts[i] - offset + j
          for r in range(first_row, last_row):
            out[np.uint64(r * out_row + j)] = source[np.uint64(shift + r * row_step)]
        continue
      for r in range(first_row, last_row):
        row_start, out_start = starts[i] + r * row_step, r * out_row
        if dim_step == inner:   # the row in order
          shift = row_start - offset
          for j in range(low, high):
            out[np.uint64(out_start + j)] = source[np.uint64(shift + j)]
        else:   # the joined dim read backwards or repeated (a reflect or replicate pad's edge)
          for j in range(low, high):
            along, within = divmod(j - offset, inner)
            out[np.uint64(out_start + j)] = source[np.uint64(row_start + along * dim_step + within)]


def concatenate(out: np.ndarray, sources: tuple, outer: int, sizes: tuple[int, ...], inner: int, windows: tuple):
  """out seen as (outer, sum(sizes), inner) takes source i, seen as (outer, sizes[i], inner), in its slot: element
  (r, j, k) of it is at start + r * row_step + j * dim_step + k in the flat buffer sources[i], windows[i] = (start,
  row_step, dim_step)."""
  if out.size == 0: return   # nothing to copy (a source's window into an empty buffer is no numpy view)
  total = sum(sizes)
  starts = np.cumsum((0,) + sizes)
  if out.size < PARALLEL_COPY_MIN_ELEMENTS:
    slots = out.reshape(outer, total, inner)
    for start, size, source, (first, step, dim_step) in zip(starts, sizes, sources, windows):
      slots[:, start:start + size] = strided_view(source, (outer, size, inner), (step, dim_step, 1), first)
    return
  bits = np.dtype(f"u{out.itemsize}")   # copied as unsigned ints of the same size: every dtype, bit for bit
  flat = [_read_only(source.reshape(-1).view(bits)) for source in sources]
  unused = _read_only(np.empty(0, bits))
  offsets, widths = starts[:-1] * inner, np.array(sizes, np.int64) * inner
  firsts, steps, dim_steps = (np.array(column, np.int64) for column in zip(*windows))
  for first in range(0, len(sources), SLOT_GROUP):
    group = slice(first, first + SLOT_GROUP)
    count = len(flat[group])
    with LAUNCH_LOCK:
      _copy_slots(out.reshape(-1).view(bits), tuple(flat[group] + [unused] * (SLOT_GROUP - count)), count, outer,
                  total * inner, offsets[group], widths[group], inner, firsts[group], steps[group], dim_steps[group],
                  offsets[first], offsets[first + count - 1] + widths[first + count - 1])


def _read_only(array: np.ndarray) -> np.ndarray:
  """A view that cannot be written: the sources' tuple has one numba type whether a buffer is writable or not."""
  view = array.view()
  view.flags.writeable = False
  return view
