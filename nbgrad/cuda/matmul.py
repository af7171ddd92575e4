"""Matrix products on the GPU: a tiled shared-memory kernel, compiled and cached like every other kernel.

A block of 256 threads computes a 128x128 tile of the output; each thread keeps an 8x8 grid of partial sums
in registers. Its rows come in two runs of 4, and so do its columns: a run is read from shared memory in one
16-byte load, and neighbouring threads read neighbouring runs and write neighbouring output elements. While
a block multiplies one 8-deep slice of the operands out of shared memory, each thread already holds its part
of the next slice in registers. The source is written out in full (no loops over the 8x8 grid or the slice's
depth), so the sums stay in registers and every shared-memory address is a thread's base plus a constant.
A product with fewer such tiles than the GPU has multiprocessors takes 64x64 tiles of 4x4 sums per thread
instead, four times the blocks. Operands are read through (offset, batch, row, column) strides, so transposed
and broadcast operands need no copy."""
from __future__ import annotations
import functools
from dataclasses import dataclass
from nbgrad.dtype import DType
from nbgrad.cuda.compiler import get_kernel
from nbgrad.cuda.device import CudaBackend
from nbgrad.cuda.runtime import SIMULATOR

ALIGNMENT = "" if SIMULATOR else ", alignment=16"   # (the simulator's shared arrays take no alignment)


@dataclass(frozen=True)
class Tiling:
  tile: int         # the output tile's side
  step: int         # the depth of the operand slices in shared memory
  per_thread: int   # sums per thread along each side
  threads: int

  @property
  def side(self) -> int: return self.tile // self.per_thread   # threads along each side of the tile
  @property
  def loads(self) -> int: return self.tile * self.step // self.threads   # elements of each operand's slice a thread loads
  @property
  def a_width(self) -> int: return self.tile + 4   # the A slice's rows padded so that a warp's stores fall in 32 banks
  @property
  def vector(self) -> int: return min(4, self.per_thread)   # a thread's rows (and columns) come in runs of this many

  def spread(self, i: int) -> int:
    """Where a thread's i-th row (or column) lies from its first: runs of vector, the runs side * vector apart."""
    return i // self.vector * self.side * self.vector + i % self.vector


LARGE, SMALL = Tiling(128, 8, 8, 256), Tiling(64, 8, 4, 256)
if SIMULATOR: LARGE, SMALL = Tiling(8, 4, 2, 16), Tiling(4, 4, 1, 16)   # the simulator runs a thread per Python thread


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


def _prefetch(t: Tiling, indent: int) -> str:
  """Each thread's part of the operand slices that start at depth k0, in registers (zero outside the operands)."""
  a_rows, b_depths = t.threads // t.step, t.threads // t.tile   # rows of A, depths of B, per pass of the block's threads
  return _lines(indent, [f"la{r} = a[a_start + {r * a_rows} * a_row + k0 * a_col] "
                         f"if row0 + load_a_row + {r * a_rows} < m and k0 + load_a_depth < k else zero" for r in range(t.loads)] +
                        [f"lb{r} = b[b_start + (k0 + {r * b_depths}) * b_row] "
                         f"if b_in and k0 + load_b_depth + {r * b_depths} < k else zero" for r in range(t.loads)])


def _store(t: Tiling, indent: int) -> str:
  a_rows, b_depths = t.threads // t.step, t.threads // t.tile
  return _lines(indent, [f"slice_a[load_a_depth, load_a_row + {r * a_rows}] = la{r}" for r in range(t.loads)] +
                        [f"slice_b[load_b_depth + {r * b_depths}, load_b_col] = lb{r}" for r in range(t.loads)])


def _multiply(t: Tiling, indent: int) -> str:
  lines = []
  for d in range(t.step):
    lines += [f"fa{i} = slice_a[{d}, ty + {t.spread(i)}]" for i in range(t.per_thread)]
    lines += [f"fb{j} = slice_b[{d}, tx + {t.spread(j)}]" for j in range(t.per_thread)]
    lines += [f"c{i}_{j} += fa{i} * fb{j}" for i in range(t.per_thread) for j in range(t.per_thread)]
  return _lines(indent, lines)


def _write(t: Tiling, indent: int) -> str:
  lines = []
  for i in range(t.per_thread):
    lines += [f"row = row0 + ty + {t.spread(i)}", "if row < m:"]
    lines += [f"  if col0 + tx + {t.spread(j)} < n: out[(z * m + row) * n + col0 + tx + {t.spread(j)}] = c{i}_{j}"
              for j in range(t.per_thread)]
  return _lines(indent, lines)


@functools.lru_cache(maxsize=None)
def _source(dt: DType, t: Tiling) -> str:
  names = dict(t=f"nb_types.{dt.name}", tile=t.tile, step=t.step, side=t.side, a_width=t.a_width, vector=t.vector, alignment=ALIGNMENT)
  sums = _lines(4, [f"c{i}_{j} = zero" for i in range(t.per_thread) for j in range(t.per_thread)])
  return (_HEAD.format(**names) + sums + "\n    k0 = 0\n" + _prefetch(t, 4) + "\n" +
          _BODY.format(step=t.step, store=_store(t, 6), prefetch=_prefetch(t, 6), multiply=_multiply(t, 6), write=_write(t, 4)))


def supports(dt: DType) -> bool: return dt.kind == "f" and dt.itemsize >= 4


def matmul(backend: CudaBackend, out, a, b, dt: DType, batch: int, m: int, n: int, k: int, a_strides, b_strides):
  """out[z, i, j] = sum over d of a[z, i, d] * b[z, d, j]; out is contiguous (batch, m, n), a and b are
  read at offset + z*batch_stride + row*row_stride + column*column_stride ((offset, batch, row, column) strides)."""
  tiles = lambda t: batch * -(-m // t.tile) * -(-n // t.tile)
  t = LARGE if tiles(LARGE) >= backend.multiprocessors else SMALL
  kernel = get_kernel(_source(dt, t), f"matmul_{dt.name}_{t.tile}", backend.folder)
  ints, floats = backend.device_params([batch, m, n, k, *a_strides, *b_strides], [])
  with backend.gpu: kernel.launch(max(1, min(tiles(t), 65535)), t.threads, [out, a, b, ints, floats])
