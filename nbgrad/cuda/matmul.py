"""Matrix products on the GPU: a tiled shared-memory kernel, compiled and cached like every other kernel.

A block of 256 threads computes a 128x128 tile of the output; each thread keeps an 8x8 grid of partial sums
in registers, its rows and columns 16 apart so that neighbouring threads read neighbouring shared-memory
words and write neighbouring output elements. Operands are read through (offset, batch, row, column)
strides, so transposed and broadcast operands need no copy."""
from __future__ import annotations
from nbgrad.dtype import DType
from nbgrad.cuda.compiler import get_kernel
from nbgrad.cuda.device import CudaBackend
from nbgrad.cuda.runtime import SIMULATOR

TILE, STEP, PER_THREAD, THREADS = 128, 8, 8, 256   # output tile, k step, outputs per thread per dim, threads
if SIMULATOR: TILE, STEP, PER_THREAD, THREADS = 8, 4, 2, 16   # the simulator runs a thread per Python thread
SIDE = TILE // PER_THREAD   # threads along each side of the tile

_SOURCE = """def kernel(out, a, b, ip, fp):
  batch = ip[0]
  m = ip[1]
  n = ip[2]
  k = ip[3]
  tile_a = cuda.shared.array(({step}, {tile}), {t})
  tile_b = cuda.shared.array(({step}, {tile}), {t})
  acc = cuda.local.array(({per}, {per}), {t})
  frag_a = cuda.local.array({per}, {t})
  frag_b = cuda.local.array({per}, {t})
  tid = cuda.threadIdx.x
  tx = tid % {side}
  ty = tid // {side}
  tiles_m = (m + {tile} - 1) // {tile}
  tiles_n = (n + {tile} - 1) // {tile}
  for tile in range(cuda.blockIdx.x, batch * tiles_m * tiles_n, cuda.gridDim.x):
    z = tile // (tiles_m * tiles_n)
    row0 = (tile // tiles_n) % tiles_m * {tile}
    col0 = tile % tiles_n * {tile}
    a_base = ip[4] + z * ip[5]
    b_base = ip[8] + z * ip[9]
    for i in range({per}):
      for j in range({per}):
        acc[i, j] = 0
    for k0 in range(0, k, {step}):
      for r in range({loads}):
        e = tid + r * {threads}
        row = row0 + e // {step}
        depth = k0 + e % {step}
        tile_a[e % {step}, e // {step}] = a[a_base + row * ip[6] + depth * ip[7]] if row < m and depth < k else 0
        depth = k0 + e // {tile}
        col = col0 + e % {tile}
        tile_b[e // {tile}, e % {tile}] = b[b_base + depth * ip[10] + col * ip[11]] if depth < k and col < n else 0
      cuda.syncthreads()
      for kk in range({step}):
        for i in range({per}):
          frag_a[i] = tile_a[kk, ty + i * {side}]
        for j in range({per}):
          frag_b[j] = tile_b[kk, tx + j * {side}]
        for i in range({per}):
          for j in range({per}):
            acc[i, j] += frag_a[i] * frag_b[j]
      cuda.syncthreads()
    for i in range({per}):
      row = row0 + ty + i * {side}
      if row < m:
        for j in range({per}):
          col = col0 + tx + j * {side}
          if col < n:
            out[(z * m + row) * n + col] = acc[i, j]
"""


def supports(dt: DType) -> bool: return dt.kind == "f" and dt.itemsize >= 4


def matmul(backend: CudaBackend, out, a, b, dt: DType, batch: int, m: int, n: int, k: int, a_strides, b_strides):
  """out[z, i, j] = sum over d of a[z, i, d] * b[z, d, j]; out is contiguous (batch, m, n), a and b are
  read at offset + z*batch_stride + row*row_stride + column*column_stride ((offset, batch, row, column) strides)."""
  source = _SOURCE.format(t=f"nb_types.{dt.name}", tile=TILE, step=STEP, per=PER_THREAD, side=SIDE, threads=THREADS,
                          loads=TILE * STEP // THREADS)
  kernel = get_kernel(source, f"matmul_{dt.name}", backend.folder)
  ints, floats = backend.device_params([batch, m, n, k, *a_strides, *b_strides], [])
  tiles = batch * -(-m // TILE) * -(-n // TILE)
  with backend.gpu: kernel.launch(max(1, min(tiles, 65535)), THREADS, [out, a, b, ints, floats])
