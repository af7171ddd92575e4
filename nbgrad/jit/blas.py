"""The CPU matrix product: numpy's matmul, which calls its bundled BLAS, on views of the flat buffers.
An operand laid out row- or column-major is read in place (a transpose costs nothing); any other
layout is copied first, since numpy's fallback loop for such strides is many times slower than BLAS.

A big product is cut into one part per thread, each run by single-threaded BLAS on a thread of its own. BLAS's
own threads wait for each other by spinning, and when other processes hold the cores each threaded call waits
for the scheduler (benchmarks/ group train-busy-core, medians: with one of the 2 cores busy the CNN step took
25.8 ms with BLAS's threads, 17.2 ms in parts, torch 23.2-28.0; with both busy 57.7 ms against 19.6 ms). On an
idle machine the parts cost a little: group train, MLP step 11.2 and 10.8 ms before, 12.2 and 12.5 ms after
(torch 5.7-6.9 ms in the same runs)."""
from __future__ import annotations
import ctypes
import glob
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Optional
import numba
import numpy as np
from numpy.lib.stride_tricks import as_strided
from nbgrad.jit.compiler import LAUNCH_LOCK


def strided_view(buffer: np.ndarray, shape: tuple, strides: tuple, offset: int, writeable=False) -> np.ndarray:
  """The elements of a flat buffer at offset + sum(index * strides) as an array of shape (no copy)."""
  itemsize = buffer.itemsize
  return as_strided(buffer[offset:], shape, tuple(s * itemsize for s in strides), writeable=writeable)


def blas_readable(matrices: np.ndarray) -> np.ndarray:
  """matrices (..., rows, cols) as BLAS can read each matrix: row- or column-major, else a contiguous copy.
  The stride of a size-1 dim is never used, so it is set to what BLAS expects of it."""
  rows, cols = matrices.shape[-2:]
  row_stride, col_stride = matrices.strides[-2:]
  item = matrices.itemsize
  if cols == 1 or col_stride == item:
    leading = cols * item if rows == 1 else row_stride
    if leading >= cols * item: return _restrided(matrices, leading, item)
  if rows == 1 or row_stride == item:
    leading = rows * item if cols == 1 else col_stride
    if leading >= rows * item: return _restrided(matrices, item, leading)
  return np.ascontiguousarray(matrices)


def _restrided(matrices: np.ndarray, row_stride: int, col_stride: int) -> np.ndarray:
  return as_strided(matrices, strides=matrices.strides[:-2] + (row_stride, col_stride), writeable=False)


# A product whose inner size K dwarfs its output (a convolution's weight gradient over many positions) is cut
# along K into this many pieces at most, run as one batched product and summed: BLAS spreads a single product
# over threads by its output, not by K. (32, 21632) @ (21632, 9) float32: 0.51 ms whole, 0.20 ms in 32 pieces.
K_PIECES = 32
K_PIECE_MIN = 512


def matmul(out: np.ndarray, a: np.ndarray, b: np.ndarray):
  """out (..., M, N) = a (..., M, K) @ b (..., K, N); the batch dims may broadcast (stride 0)."""
  if out.size == 0: return
  m, k = a.shape[-2:]
  n = b.shape[-1]
  pieces = min(K_PIECES, k // K_PIECE_MIN)
  if pieces < 2 or k < 16 * max(m, n):
    _product(out, blas_readable(a), blas_readable(b))
    return
  piece = k // pieces
  products = np.empty(out.shape[:-2] + (pieces, m, n), out.dtype)
  _product(products, blas_readable(_k_pieces(a, pieces, piece, -1)), blas_readable(_k_pieces(b, pieces, piece, -2)))
  products.sum(axis=-3, out=out)
  if pieces * piece < k:
    _product(products[..., 0, :, :], blas_readable(a[..., pieces * piece:]), blas_readable(b[..., pieces * piece:, :]))
    out += products[..., 0, :, :]


def _k_pieces(x: np.ndarray, pieces: int, piece: int, k_axis: int) -> np.ndarray:
  """x (..., rows, cols) as (..., pieces, rows, cols) with its K axis (k_axis) cut into pieces of `piece`."""
  shape, strides = list(x.shape), list(x.strides)
  shape[k_axis] = piece
  return as_strided(x, tuple(shape[:-2]) + (pieces,) + tuple(shape[-2:]),
                    tuple(strides[:-2]) + (strides[k_axis] * piece,) + tuple(strides[-2:]), writeable=False)


def _openblas_thread_count() -> Optional[tuple]:
  """The (get, set) thread-count functions of the OpenBLAS bundled with numpy, or None (another BLAS)."""
  package = os.path.dirname(np.__file__)
  for path in glob.glob(os.path.join(package + ".libs", "*openblas*")) + glob.glob(os.path.join(package, ".dylibs", "*openblas*")):
    try: library = ctypes.CDLL(path)
    except OSError: continue
    for name in ("scipy_openblas_{}_num_threads64_", "scipy_openblas_{}_num_threads", "openblas_{}_num_threads64_", "openblas_{}_num_threads"):
      get, set_ = getattr(library, name.format("get"), None), getattr(library, name.format("set"), None)
      if get is not None and set_ is not None: return get, set_
  return None


_BLAS_THREADS = _openblas_thread_count()
# Below this many multiply-adds a product runs whole on the calling thread (a part's hand-over costs ~50 us)
SPLIT_MIN_MULTIPLY_ADDS = 1 << 21
_workers: Optional[ThreadPoolExecutor] = None


def _product(out: np.ndarray, a: np.ndarray, b: np.ndarray):
  """np.matmul(a, b, out=out), in parts on numba's thread count when BLAS's threads can be set to one meanwhile."""
  global _workers
  parts = numba.get_num_threads()
  if _BLAS_THREADS is None or parts == 1:
    np.matmul(a, b, out=out)
    return
  get, set_ = _BLAS_THREADS
  with LAUNCH_LOCK:   # products from several Python threads take turns, so each sets back the count it found
    before = get()
    set_(1)
    try:
      jobs = _split(out, a, b, parts) if out.size * a.shape[-1] >= SPLIT_MIN_MULTIPLY_ADDS else [(out, a, b)]
      if _workers is None: _workers = ThreadPoolExecutor(numba.config.NUMBA_NUM_THREADS - 1, thread_name_prefix="nbgrad-blas")
      waiting = [_workers.submit(np.matmul, x, y, out=o) for o, x, y in jobs[1:]]
      np.matmul(jobs[0][1], jobs[0][2], out=jobs[0][0])
      for job in waiting: job.result()
    finally:
      set_(before)


def _split(out: np.ndarray, a: np.ndarray, b: np.ndarray, parts: int) -> list[tuple]:
  """(out, a, b), all of one rank, cut into parts products: along the first batch dim when it has a part for
  each, else along the rows (of out and a) or the columns (of out and b). Each part's BLAS call packs all of the
  operand it does not cut, so the cut goes across the longer side of out: the copies of the shorter operand
  are the smaller (64x288 @ 288x3872: 1.04 ms cut along the columns, 1.26 ms along the rows)."""
  rows, columns = out.shape[-2], out.shape[-1]
  if out.ndim > 2 and out.shape[0] >= parts: axis, cut_a, cut_b = 0, True, True
  elif rows >= 16 * parts and (rows >= columns or columns < 16 * parts): axis, cut_a, cut_b = out.ndim - 2, True, False
  elif columns >= 16 * parts: axis, cut_a, cut_b = out.ndim - 1, False, True
  else: return [(out, a, b)]
  size, jobs = out.shape[axis], []
  for part in range(parts):
    window = (slice(None),) * axis + (slice(size * part // parts, size * (part + 1) // parts),)
    jobs.append((out[window], a[window] if cut_a else a, b[window] if cut_b else b))
  return jobs
