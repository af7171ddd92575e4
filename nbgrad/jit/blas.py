"""The CPU matrix product: numpy's matmul, which calls its bundled BLAS, on views of the flat buffers.
An operand laid out row- or column-major is read in place (a transpose costs nothing); any other
layout is copied first, since numpy's fallback loop for such strides is many times slower than BLAS.

A big product runs on BLAS's own threads while no other process wants the cores. Else it is cut into one part per
thread, each run by single-threaded BLAS: BLAS's threads wait for each other by spinning, and with the cores held
by other processes each threaded call waits for the scheduler (benchmarks/ group train-busy-core). Parts cut along
the batch always run on numba's threads (BLAS's C interface called from a parallel numba function), other parts on
a worker thread beside the calling one (_product says why)."""
from __future__ import annotations
import contextlib
import ctypes
import glob
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional
import numba
import numpy as np
from numba import njit, prange
from numpy.lib.stride_tricks import as_strided
from nbgrad.jit.compiler import LAUNCH_LOCK, CachedEntry


def strided_view(buffer: np.ndarray, shape: tuple, strides: tuple, offset: int, writeable=False) -> np.ndarray:
  """The elements of a flat buffer at offset + sum(index * strides) as an array of shape (no copy). Built with
  numpy's array constructor, which checks the view stays in the buffer: as_strided took 7.5 us, this 1 us."""
  if 0 in shape: return np.empty(shape, buffer.dtype)   # no element: the window's offset may lie past an empty buffer's end
  itemsize = buffer.itemsize
  view = np.ndarray(shape, buffer.dtype, buffer, offset * itemsize, tuple(s * itemsize for s in strides))
  if not writeable: view.flags.writeable = False
  return view


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
  if matrices.strides[-2:] == (row_stride, col_stride): return matrices
  return as_strided(matrices, strides=matrices.strides[:-2] + (row_stride, col_stride), writeable=False)


# A product whose inner size K dwarfs its output (a convolution's weight gradient over many positions) is cut
# along K into this many pieces at most, run as one batched product and summed: BLAS spreads a single product
# over threads by its output, not by K. Only a product big enough for parts (PARTS_MIN_MULTIPLY_ADDS) is cut
# (float32, min of 7x20 calls): (32, 86528) @ (86528, 9) 2.24-2.49 ms whole, 1.60-1.62 in 32 pieces; but
# (32, 21632) @ (21632, 9) 0.33-0.45 ms whole, 0.56 in pieces.
K_PIECES = 32
K_PIECE_MIN = 512


def matmul(out: np.ndarray, a: np.ndarray, b: np.ndarray):
  """out (..., M, N) = a (..., M, K) @ b (..., K, N); the batch dims may broadcast (stride 0)."""
  if out.size == 0: return
  m, k = a.shape[-2:]
  n = b.shape[-1]
  pieces = min(K_PIECES, k // K_PIECE_MIN)
  if pieces < 2 or k < 16 * max(m, n) or out.size * k < PARTS_MIN_MULTIPLY_ADDS:
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


def _openblas() -> Optional[tuple]:
  """The OpenBLAS bundled with numpy: (its get and set thread-count functions, its sgemm and dgemm through the
  C interface), or None (another BLAS)."""
  package = os.path.dirname(np.__file__)
  for path in glob.glob(os.path.join(package + ".libs", "*openblas*")) + glob.glob(os.path.join(package, ".dylibs", "*openblas*")):
    try: library = ctypes.CDLL(path)
    except OSError: continue
    for prefix, suffix, integer in (("scipy_", "64_", ctypes.c_int64), ("", "64_", ctypes.c_int64),
                                    ("scipy_", "", ctypes.c_int), ("", "", ctypes.c_int)):
      names = [f"{prefix}openblas_get_num_threads{suffix}", f"{prefix}openblas_set_num_threads{suffix}",
               f"{prefix}cblas_sgemm{suffix}", f"{prefix}cblas_dgemm{suffix}"]
      if not all(hasattr(library, name) for name in names): continue
      # operand addresses are passed as integers of a pointer's size: numba calls the functions with them
      def gemm(name, scalar):
        return ctypes.CFUNCTYPE(None, *[integer] * 6, scalar, ctypes.c_size_t, integer, ctypes.c_size_t, integer, scalar,
                                ctypes.c_size_t, integer)((name, library))
      return getattr(library, names[0]), getattr(library, names[1]), \
        {np.dtype(np.float32): gemm(names[2], ctypes.c_float), np.dtype(np.float64): gemm(names[3], ctypes.c_double)}
  return None


_OPENBLAS = _openblas()
OPENBLAS_GEMMS = {} if _OPENBLAS is None else _OPENBLAS[2]   # dtype -> its gemm through the C interface
# Below this many multiply-adds a product runs whole on the calling thread. A thread asleep takes 50-150 us to wake
# on a 2-core AMD EPYC VM, so threads pay only for products of a few hundred us (one thread's time, against the
# product's time with all threads, min of 7x20 calls): 128x128 @ 128x128 49 against 159-169 us on BLAS's threads,
# 256x256 @ 256x64 97-101 against 65-115; in parts on worker threads 64x512 @ 512x256 207-254 against 252-276,
# 64x512 @ 512x512 405-455 against 347-372; 16 of 64x64 @ 64x64 on numba's threads 131-148 against 261-275, 48 of
# them 342-353 against 403-468, 32 of 64x128 @ 128x64 438-463 against 362-374.
SPLIT_MIN_MULTIPLY_ADDS = 1 << 22   # on BLAS's own threads
PARTS_MIN_MULTIPLY_ADDS = 1 << 24   # in parts on worker threads or numba's
# OpenBLAS computes a product of up to 4 * 65536 multiply-adds on one thread whatever its thread count (a product of
# 16x64 @ 64x64 took as long at 1 and 2 threads, 64x64 @ 64x128 21.8 against 17.8 us), so one that small skips setting
# the count (7 us of a 1x1024 @ 1024x1 product's 21)
ONE_THREAD_MULTIPLY_ADDS = 4 * 65536
ROW_MAJOR, NO_TRANSPOSE, TRANSPOSE = 101, 111, 112   # the C interface's constants
_workers: Optional[ThreadPoolExecutor] = None


@CachedEntry
@njit(parallel=True, nogil=True, cache=True)
def _batched_gemm(gemm, layout, batch, strides, addresses, parts, one, zero):
  """out[i] = a[i] @ b[i] for each index i of the batch dims (sizes `batch`), the matrices dealt in turn to `parts`
  threads of numba's pool. layout: (transpose a, transpose b, M, N, K, lda, ldb, ldc); strides (3, batch dims):
  a's, b's and out's in bytes (0 along a broadcast dim); addresses: their first matrices'."""
  count = 1
  for size in batch: count *= size
  for part in prange(parts):
    for matrix in range(part * count // parts, (part + 1) * count // parts):
      a, b, out, rest = addresses[0], addresses[1], addresses[2], matrix
      for dim in range(len(batch) - 1, -1, -1):
        index = rest % batch[dim]
        rest //= batch[dim]
        a, b, out = a + index * strides[0, dim], b + index * strides[1, dim], out + index * strides[2, dim]
      gemm(ROW_MAJOR, layout[0], layout[1], layout[2], layout[3], layout[4], one, a, layout[5], b, layout[6], zero, out, layout[7])


def _product(out: np.ndarray, a: np.ndarray, b: np.ndarray):
  """np.matmul(a, b, out=out), a big one on parts threads. Parts cut along the batch run on numba's threads, where
  nbgrad's parallel kernels run: on a thread of their own they waited for numba's workers, which spin for a while
  after each kernel when torch's OpenMP runtime is loaded first (Winograd's 36 x 3136x64 @ 64x64 took 13.5 ms after
  its input transform that way, 5.2 ms on numba's threads). One matrix runs on BLAS's threads when the cores are
  free: in the MLP training step under TinyJit (medians of steps interleaved in one process) 5.4-7.0 ms, against
  8.1-9.2 ms cut into parts, each packing the whole operand it does not cut. With another process busy on a core,
  the same step took 13.2-13.9 ms on BLAS's threads and 9.3-11.0 ms in parts, so then the parts run on a worker
  thread beside the calling one (on numba's threads the MLP step took the same time, the CNN step 3-6% more)."""
  work = out.size * a.shape[-1]
  parts = 1 if _OPENBLAS is None or work <= ONE_THREAD_MULTIPLY_ADDS else numba.get_num_threads()
  if parts == 1:
    np.matmul(a, b, out=out)
    return
  with blas_threads(1):
    batched = out.ndim > 2 and math.prod(out.shape[:-2]) >= parts   # a part of the matrices for each thread
    if work < SPLIT_MIN_MULTIPLY_ADDS or a.shape[-1] == 0 or out.strides[-1] != out.itemsize or \
       (batched and work < PARTS_MIN_MULTIPLY_ADDS): np.matmul(a, b, out=out)
    elif batched: _on_numba_threads(out, a, b, parts)
    elif min(out.shape[-2], a.shape[-1]) >= BLAS_THREADS_MIN_SIDE and not _cores_busy_elsewhere(parts):
      _OPENBLAS[1](parts)
      np.matmul(a, b, out=out)
    elif work >= PARTS_MIN_MULTIPLY_ADDS and len(jobs := _split(out, a, b, parts)) > 1: _on_worker_threads(jobs)
    else: np.matmul(a, b, out=out)


@contextlib.contextmanager
def blas_threads(count: int):
  """OpenBLAS at count threads meanwhile. Callers from several Python threads take turns, so each sets back the
  count it found."""
  get, set_, _ = _OPENBLAS
  with LAUNCH_LOCK:
    before = get()
    set_(count)
    try: yield
    finally: set_(before)


_CORES = os.cpu_count() or 1
# A fixed rule rather than timing: timing each product shape's two ways on its first calls and keeping the faster
# was tried, and on a 2-core AMD EPYC VM the CNN training step took 4-9% longer in three of four interleaved runs
# (and its choices changed from run to run). A product's own time does not show what its BLAS threads, spinning
# after it, cost the parallel kernels that follow.
BLAS_THREADS_MIN_SIDE = 128
BUSY_CHECK_INTERVAL_S = 0.05   # how long a look at the other processes' demand for cores is trusted
_busy_checked_at, _busy_seen, _busy = -1.0, True, True


def _cores_busy_elsewhere(parts: int) -> bool:
  """Whether other processes want more cores than parts threads leave free, in two looks in a row (a thread of
  another process waking for a moment must not switch the products' threads): Linux's count of runnable threads
  (/proc/loadavg) less this process's own (BLAS's workers yield for a while after a product, and count). Where
  these counts cannot be read, True."""
  global _busy_checked_at, _busy_seen, _busy
  now = time.perf_counter()
  if now - _busy_checked_at < BUSY_CHECK_INTERVAL_S: return _busy
  _busy_checked_at = now
  try:
    with open("/proc/loadavg", "rb") as loadavg: runnable = int(loadavg.read().split()[3].split(b"/")[0])
    seen = runnable - _own_runnable_threads() > _CORES - parts
  except (OSError, ValueError, IndexError):
    seen = True
  _busy = seen if seen == _busy_seen else _busy
  _busy_seen = seen
  return _busy


def _own_runnable_threads() -> int:
  count = 0
  for thread in os.listdir("/proc/self/task"):
    try:
      with open(f"/proc/self/task/{thread}/stat", "rb") as stat: fields = stat.read()
    except OSError:
      continue   # the thread ended
    count += fields[fields.rindex(b")") + 2:].startswith(b"R")
  return count


def _on_numba_threads(out: np.ndarray, a: np.ndarray, b: np.ndarray, parts: int):
  """out = a @ b, its matrices (a batch of them) shared among parts threads of numba's pool."""
  def layout(x):   # BLAS reads each operand row- or column-major (blas_readable), out is row-major
    rows, cols = (s // x.itemsize for s in x.strides[-2:])
    return (NO_TRANSPOSE, rows) if cols == 1 else (TRANSPOSE, cols)
  (trans_a, lda), (trans_b, ldb) = layout(a), layout(b)
  m, n, k = out.shape[-2], out.shape[-1], a.shape[-1]
  ldc = out.strides[-2] // out.itemsize if m > 1 else max(n, 1)   # a single row's stride is never used
  batch = out.shape[:-2]
  strides = [[st if size != 1 else 0 for size, st in zip(x.shape[:-2], x.strides[:-2])] for x in (a, b, out)]
  _batched_gemm(OPENBLAS_GEMMS[out.dtype], np.array([trans_a, trans_b, m, n, k, lda, ldb, ldc], np.int64),
                np.array(batch, np.int64), np.array(strides, np.int64).reshape(3, len(batch)),
                np.array([a.ctypes.data, b.ctypes.data, out.ctypes.data], np.int64), parts, out.dtype.type(1), out.dtype.type(0))


def _forget_workers():
  """A forked child has none of the parent's worker threads: it starts a pool of its own (it waited forever for
  the parent's)."""
  global _workers
  _workers = None


os.register_at_fork(after_in_child=_forget_workers)


def _on_worker_threads(jobs: list[tuple]):
  global _workers
  if _workers is None:
    _workers = ThreadPoolExecutor(numba.config.NUMBA_NUM_THREADS - 1, thread_name_prefix="nbgrad-blas")
  waiting = [_workers.submit(np.matmul, x, y, out=o) for o, x, y in jobs[1:]]
  np.matmul(jobs[0][1], jobs[0][2], out=jobs[0][0])
  for job in waiting: job.result()


def _split(out: np.ndarray, a: np.ndarray, b: np.ndarray, parts: int) -> list[tuple]:
  """(out, a, b), all of one rank, cut into parts products: along the rows (of out and a) or the columns (of out
  and b). Each part's BLAS call packs all of the operand it does not cut, so the cut goes across the longer side of
  out: the copies of the shorter operand are the smaller (64x288 @ 288x3872: 1.04 ms cut along the columns, 1.26 ms
  along the rows)."""
  rows, columns = out.shape[-2], out.shape[-1]
  if rows >= 16 * parts and (rows >= columns or columns < 16 * parts): axis, cut_a, cut_b = out.ndim - 2, True, False
  elif columns >= 16 * parts: axis, cut_a, cut_b = out.ndim - 1, False, True
  else: return [(out, a, b)]
  size, jobs = out.shape[axis], []
  for part in range(parts):
    window = (slice(None),) * axis + (slice(size * part // parts, size * (part + 1) // parts),)
    jobs.append((out[window], a[window] if cut_a else a, b[window] if cut_b else b))
  return jobs
