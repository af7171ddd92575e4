"""Matrix products on the GPU: a tiled shared-memory kernel, compiled and cached like every other kernel.

A block of 256 threads computes a 128x128 tile of the output; each thread keeps an 8x8 grid of partial sums
in registers. Its rows come in two runs of 4, and so do its columns: a run is read from shared memory in one
16-byte load, and neighbouring threads read neighbouring runs and write neighbouring output elements. While
a block multiplies one 8-deep slice of the operands out of shared memory, each thread already holds its part
of the next slice in registers. The source is written out in full (no loops over the 8x8 grid or the slice's
depth), so the sums stay in registers and every shared-memory address is a thread's base plus a constant.
Operands are read through (offset, batch, row, column) strides, so transposed and broadcast operands need no
copy."""
from __future__ import annotations
import functools
from nbgrad.dtype import DType
from nbgrad.cuda.compiler import get_kernel
from nbgrad.cuda.device import CudaBackend
from nbgrad.cuda.runtime import SIMULATOR

TILE, STEP, PER_THREAD, THREADS = 128, 8, 8, 256   # output tile, k step, outputs per thread per dim, threads
if SIMULATOR: TILE, STEP, PER_THREAD, THREADS = 8, 4, 2, 16   # the simulator runs a thread per Python thread
SIDE = TILE // PER_THREAD   # threads along each side of the tile
LOADS = TILE * STEP // THREADS   # elements of each operand's slice a thread loads
A_WIDTH = TILE + 4   # the A slice's rows padded so that a warp's stores fall in 32 different banks
VECTOR = min(4, PER_THREAD)   # a thread's rows (and columns) come in runs of this many, read from shared memory at once
ALIGNMENT = "" if SIMULATOR else ", alignment=16"   # (the simulator's shared arrays take no alignment)

_HEAD = """def kernel(out, a, b, ip, fp):
  batch, m, n, k = ip[0], ip[1], ip[2], ip[3]
  a_offset, a_batch, a_row, a_col = ip[4], ip[5], ip[6], ip[7]
  b_offset, b_batch, b_row, b_col = ip[8], ip[9], ip[10], ip[11]
  slice_a = cuda.shared.array(({step}, {a_width}), {t}{alignment})
  slice_b = cuda.shared.array(({step}, {tile}), {t}{alignment})
  tid = nb_types.uint32(cuda.threadIdx.x)   # known not negative: shared-memory reads need no wraparound
  tx = tid % {side} * {vector}
  ty = tid // {side} * {vector}
  load_a_depth = tid % {step}
  load_a_row = tid // {step}
  load_b_depth = tid // {tile}
  load_b_col = tid % {tile}
  tiles_m = (m + {tile} - 1) // {tile}
  tiles_n = (n + {tile} - 1) // {tile}
  zero = {t}(0)
  for tile in range(cuda.blockIdx.x, batch * tiles_m * tiles_n, cuda.gridDim.x):
    z = tile // (tiles_m * tiles_n)
    row0 = (tile // tiles_n) % tiles_m * {tile}
    col0 = tile % tiles_n * {tile}
    a_start = a_offset + z * a_batch + (row0 + load_a_row) * a_row + load_a_depth * a_col
    b_start = b_offset + z * b_batch + load_b_depth * b_row + (col0 + load_b_col) * b_col
    b_in = col0 + load_b_col < n
"""

_BODY = """    for k0 in range({step}, k + {step}, {step}):
{store}
      cuda.syncthreads()
{prefetch}
{multiply}
      cuda.syncthreads()
{write}
"""


def _lines(indent: int, lines) -> str: return "\n".join(" " * indent + line for line in lines)


def _prefetch(indent: int) -> str:
  """Each thread's part of the operand slices that start at depth k0, in registers (zero outside the operands)."""
  a_rows = THREADS // STEP   # rows of the A slice loaded per pass of the block's threads
  b_depths = THREADS // TILE
  return _lines(indent, [f"la{r} = a[a_start + {r * a_rows} * a_row + k0 * a_col] "
                         f"if row0 + load_a_row + {r * a_rows} < m and k0 + load_a_depth < k else zero" for r in range(LOADS)] +
                        [f"lb{r} = b[b_start + (k0 + {r * b_depths}) * b_row] "
                         f"if b_in and k0 + load_b_depth + {r * b_depths} < k else zero" for r in range(LOADS)])


def _store(indent: int) -> str:
  a_rows, b_depths = THREADS // STEP, THREADS // TILE
  return _lines(indent, [f"slice_a[load_a_depth, load_a_row + {r * a_rows}] = la{r}" for r in range(LOADS)] +
                        [f"slice_b[load_b_depth + {r * b_depths}, load_b_col] = lb{r}" for r in range(LOADS)])


def _spread(i: int) -> int:
  """Where a thread's i-th row (or column) lies from its first: runs of VECTOR, the runs SIDE * VECTOR apart."""
  return i // VECTOR * SIDE * VECTOR + i % VECTOR


def _multiply(indent: int) -> str:
  lines = []
  for d in range(STEP):
    lines += [f"fa{i} = slice_a[{d}, ty + {_spread(i)}]" for i in range(PER_THREAD)]
    lines += [f"fb{j} = slice_b[{d}, tx + {_spread(j)}]" for j in range(PER_THREAD)]
    lines += [f"c{i}_{j} += fa{i} * fb{j}" for i in range(PER_THREAD) for j in range(PER_THREAD)]
  return _lines(indent, lines)


def _write(indent: int) -> str:
  lines = []
  for i in range(PER_THREAD):
    lines += [f"row = row0 + ty + {_spread(i)}", "if row < m:"]
    lines += [f"  if col0 + tx + {_spread(j)} < n: out[(z * m + row) * n + col0 + tx + {_spread(j)}] = c{i}_{j}"
              for j in range(PER_THREAD)]
  return _lines(indent, lines)


@functools.lru_cache(maxsize=None)
def _source(dt: DType) -> str:
  names = dict(t=f"nb_types.{dt.name}", tile=TILE, step=STEP, side=SIDE, a_width=A_WIDTH, vector=VECTOR, alignment=ALIGNMENT)
  sums = _lines(4, [f"c{i}_{j} = zero" for i in range(PER_THREAD) for j in range(PER_THREAD)])
  return (_HEAD.format(**names) + sums + "\n    k0 = 0\n" + _prefetch(4) + "\n" +
          _BODY.format(step=STEP, store=_store(6), prefetch=_prefetch(6), multiply=_multiply(6), write=_write(4)))


def supports(dt: DType) -> bool: return dt.kind == "f" and dt.itemsize >= 4


def matmul(backend: CudaBackend, out, a, b, dt: DType, batch: int, m: int, n: int, k: int, a_strides, b_strides):
  """out[z, i, j] = sum over d of a[z, i, d] * b[z, d, j]; out is contiguous (batch, m, n), a and b are
  read at offset + z*batch_stride + row*row_stride + column*column_stride ((offset, batch, row, column) strides)."""
  kernel = get_kernel(_source(dt), f"matmul_{dt.name}", backend.folder)
  ints, floats = backend.device_params([batch, m, n, k, *a_strides, *b_strides], [])
  tiles = batch * -(-m // TILE) * -(-n // TILE)
  with backend.gpu: kernel.launch(max(1, min(tiles, 65535)), THREADS, [out, a, b, ints, floats])
