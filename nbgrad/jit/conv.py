"""The CPU direct convolution (2-D), its input gradient and its weight gradient, an image at a time.

Each thread takes a share of the batch. For an image it copies the windows its product reads (im2col) into a
buffer of its own, which stays in the core's cache, and calls single-threaded BLAS on it through the C interface
(nbgrad/jit/blas.py's gemm). Done for the whole batch at once, the columns make a matrix of batch x positions
rows that goes out to memory and back (a 128 x 32 x 24 x 24 batch with a 5x5 kernel: 164 MB, written by one kernel,
read by the product, and written again by the input gradient's product for its col2im kernel to read). With
fewer images than threads, each image's output rows are cut into blocks, and the threads share the blocks.

geometry: (C, H, W, Cout, groups, KH, KW, stride y, stride x, dilation y, dilation x, pad top, pad left, OH, OW);
x is read through its (N, C, H, W) strides and offset, the other operands are contiguous: w (Cout, C/groups,
KH, KW), the output gradient g (N, Cout, OH, OW), and the results."""
from __future__ import annotations
import numpy as np
import numba
from numba import njit, prange
from nbgrad.jit.blas import ROW_MAJOR, NO_TRANSPOSE, TRANSPOSE, OPENBLAS_GEMMS, blas_threads
from nbgrad.jit.compiler import runnable

C, H, W, COUT, GROUPS, KH, KW, SY, SX, DY, DX, PT, PL, OH, OW = range(15)


@njit(nogil=True, cache=True)
def _valid_columns(kx, dx, pl, sx, width, ow):
  """The output columns ox whose input column ox * stride + kx * dilation - pad lies in the image, and that shift."""
  shift = kx * dx - pl
  low = min(ow, max(0, (-shift + sx - 1) // sx))
  return low, max(low, min(ow, (width - 1 - shift) // sx + 1)), shift


# The geometry is read into locals first: numba tells LLVM nothing about aliasing, so a value read from the geometry
# array inside the loops would be read again after every store into the columns.
@njit(nogil=True, cache=True)
def _im2col(cols, x, x_strides, x_offset, n, group, first_row, end_row, geometry):
  """cols[(c, ky, kx), (oy - first_row, ox)] = the input at (n, group's channel c, oy * sy + ky * dy - pt,
  ox * sx + kx * dx - pl) for the output rows oy in [first_row, end_row), 0 in the padding."""
  channels, height, width = geometry[C] // geometry[GROUPS], geometry[H], geometry[W]
  kh, kw, sy, sx, dy, dx, pt, pl = geometry[KH], geometry[KW], geometry[SY], geometry[SX], geometry[DY], geometry[DX], geometry[PT], geometry[PL]
  oh, ow = geometry[OH], geometry[OW]
  stride_n, stride_c, stride_h, stride_w = x_strides[0], x_strides[1], x_strides[2], x_strides[3]
  step = sx * stride_w
  zero = cols.dtype.type(0)
  for c in range(channels):
    channel_start = x_offset + n * stride_n + (group * channels + c) * stride_c
    for ky in range(kh):
      for kx in range(kw):
        row = ((c * kh + ky) * kw + kx) * (end_row - first_row) * ow
        low, high, shift = _valid_columns(kx, dx, pl, sx, width, ow)
        for oy in range(first_row, end_row):
          start, iy = row + (oy - first_row) * ow, oy * sy + ky * dy - pt
          if iy < 0 or iy >= height:
            for ox in range(ow): cols[np.uint64(start + ox)] = zero
            continue
          source = channel_start + iy * stride_h + shift * stride_w
          for ox in range(low): cols[np.uint64(start + ox)] = zero
          if step == 1:
            for ox in range(low, high): cols[np.uint64(start + ox)] = x[np.uint64(source + ox)]
          else:
            for ox in range(low, high): cols[np.uint64(start + ox)] = x[np.uint64(source + ox * step)]
          for ox in range(high, ow): cols[np.uint64(start + ox)] = zero


@njit(nogil=True, cache=True)
def _col2im_add(dx_buffer, cols, n, group, first_row, end_row, geometry):
  """The transpose of _im2col: each column entry added into dx (N, C, H, W, contiguous) where it was read from."""
  channels, height, width = geometry[C] // geometry[GROUPS], geometry[H], geometry[W]
  kh, kw, sy, sx, dy, dx, pt, pl = geometry[KH], geometry[KW], geometry[SY], geometry[SX], geometry[DY], geometry[DX], geometry[PT], geometry[PL]
  oh, ow = geometry[OH], geometry[OW]
  for c in range(channels):
    channel_start = (n * geometry[C] + group * channels + c) * height * width
    for ky in range(kh):
      for kx in range(kw):
        row = ((c * kh + ky) * kw + kx) * (end_row - first_row) * ow
        low, high, shift = _valid_columns(kx, dx, pl, sx, width, ow)
        for oy in range(first_row, end_row):
          iy = oy * sy + ky * dy - pt
          if iy < 0 or iy >= height: continue
          target, start = channel_start + iy * width + shift, row + (oy - first_row) * ow
          if sx == 1:
            for ox in range(low, high): dx_buffer[np.uint64(target + ox)] += cols[np.uint64(start + ox)]
          else:
            for ox in range(low, high): dx_buffer[np.uint64(target + ox * sx)] += cols[np.uint64(start + ox)]


@njit(nogil=True, cache=True)
def _block(item, blocks, oh):
  """Work item item's image and its output rows [first, end): images cut into blocks of rows."""
  n, block = item // blocks, item % blocks
  return n, oh * block // blocks, oh * (block + 1) // blocks


@njit(nogil=True, cache=True)
def _sizes(geometry, blocks):
  """(output channels per group, rows of the columns (C/groups * KH * KW), output positions per channel, the most
  columns a block of output rows has)."""
  depth = geometry[C] // geometry[GROUPS] * geometry[KH] * geometry[KW]
  return geometry[COUT] // geometry[GROUPS], depth, geometry[OH] * geometry[OW], (geometry[OH] + blocks - 1) // blocks * geometry[OW]


@njit(nogil=True, cache=True)
def _output_start(geometry, n, group, first_row):
  """Where the rows from first_row of group's output channels of image n start in an (N, Cout, OH, OW) buffer."""
  return ((n * geometry[COUT] + group * (geometry[COUT] // geometry[GROUPS])) * geometry[OH] + first_row) * geometry[OW]


@njit(parallel=True, nogil=True, cache=True)
def _forward(gemm, out, x, x_strides, x_offset, w, geometry, parts, blocks, one, zero):
  """out (N, Cout, OH, OW) = the convolution of x with w."""
  cout, depth, positions, most_columns = _sizes(geometry, blocks)
  item_size = out.itemsize
  for part in prange(len(parts) - 1):
    cols = np.empty(depth * most_columns, out.dtype)
    for item in range(parts[part], parts[part + 1]):
      n, first, end = _block(item, blocks, geometry[OH])
      count = (end - first) * geometry[OW]
      for group in range(geometry[GROUPS]):
        _im2col(cols, x, x_strides, x_offset, n, group, first, end, geometry)
        target = out.ctypes.data + _output_start(geometry, n, group, first) * item_size
        gemm(ROW_MAJOR, NO_TRANSPOSE, NO_TRANSPOSE, cout, count, depth, one, w.ctypes.data + group * cout * depth * item_size,
             depth, cols.ctypes.data, count, zero, target, positions)


@njit(parallel=True, nogil=True, cache=True)
def _input_grad(gemm, dx, g, w, geometry, parts, blocks, one, zero):
  """dx (N, C, H, W) = the gradient of the convolution's input for output gradient g. With blocks > 1 the blocks
  of an image overlap in its rows, and dx holds one such gradient per part, each from the part's blocks."""
  cout, depth, positions, most_columns = _sizes(geometry, blocks)
  item_size, image = dx.itemsize, geometry[C] * geometry[H] * geometry[W]
  for part in prange(len(parts) - 1):
    cols = np.empty(depth * most_columns, dx.dtype)
    target = dx[part * (dx.size // (len(parts) - 1)):] if blocks > 1 else dx
    if blocks > 1: target[:dx.size // (len(parts) - 1)] = zero
    for item in range(parts[part], parts[part + 1]):
      n, first, end = _block(item, blocks, geometry[OH])
      count = (end - first) * geometry[OW]
      if blocks == 1: target[n * image:(n + 1) * image] = zero
      for group in range(geometry[GROUPS]):
        source = g.ctypes.data + _output_start(geometry, n, group, first) * item_size
        gemm(ROW_MAJOR, TRANSPOSE, NO_TRANSPOSE, depth, count, cout, one, w.ctypes.data + group * cout * depth * item_size, depth,
             source, positions, zero, cols.ctypes.data, count)
        _col2im_add(target, cols, n, group, first, end, geometry)


@njit(parallel=True, nogil=True, cache=True)
def _weight_grad_parts(gemm, partials, x, x_strides, x_offset, g, geometry, parts, blocks, one, zero):
  """partials[part, group] (C/groups * KH * KW, Cout/groups) = the transposed weight gradient of the group from
  the part's work. Transposed, the columns are BLAS's first operand: 128 products of 800x400 @ 400x32 took 30 ms
  where 32x400 @ 400x800 took 46 (single-threaded)."""
  cout, depth, positions, most_columns = _sizes(geometry, blocks)
  item_size, size = partials.itemsize, geometry[COUT] * depth
  for part in prange(len(parts) - 1):
    cols = np.empty(depth * most_columns, partials.dtype)
    partial = partials[part * size:(part + 1) * size]
    partial[:] = zero
    for item in range(parts[part], parts[part + 1]):
      n, first, end = _block(item, blocks, geometry[OH])
      count = (end - first) * geometry[OW]
      for group in range(geometry[GROUPS]):
        _im2col(cols, x, x_strides, x_offset, n, group, first, end, geometry)
        source = g.ctypes.data + _output_start(geometry, n, group, first) * item_size
        gemm(ROW_MAJOR, NO_TRANSPOSE, TRANSPOSE, depth, cout, count, one, cols.ctypes.data, count, source, positions, one,
             partial.ctypes.data + group * cout * depth * item_size, cout)


def _work(batch: int, rows: int) -> tuple[int, int, np.ndarray]:
  """(threads, row blocks per image, the parts' first work items): one block per image when there are images
  for every thread, else as many blocks as it takes (at most one per output row). Smaller blocks, to keep the
  columns within 0.5-2 MB, were no faster (a 1 x 64 x 56 x 56 3x3 layer, 128 x 32 x 24 x 24 5x5, 4 x 128 x 28 x 28)."""
  threads = numba.get_num_threads()
  blocks = 1 if batch >= threads else min(rows, -(-threads // batch))
  items = batch * blocks
  threads = min(threads, items)
  return threads, blocks, np.array([items * p // threads for p in range(threads + 1)], np.int64)


def forward(out, x, x_strides, x_offset, w, geometry, batch):
  _, blocks, parts = _work(batch, int(geometry[OH]))
  with blas_threads(1):
    runnable(_forward)(OPENBLAS_GEMMS[out.dtype], out, x, x_strides, x_offset, w, geometry, parts, blocks, out.dtype.type(1), out.dtype.type(0))


def input_grad(dx, g, w, geometry, batch):
  threads, blocks, parts = _work(batch, int(geometry[OH]))
  target = dx if blocks == 1 else np.empty(threads * dx.size, dx.dtype)
  with blas_threads(1):
    runnable(_input_grad)(OPENBLAS_GEMMS[dx.dtype], target, g, w, geometry, parts, blocks, dx.dtype.type(1), dx.dtype.type(0))
  if blocks > 1: np.sum(target.reshape(threads, dx.size), axis=0, out=dx)


def weight_grad(dw, x, x_strides, x_offset, g, geometry, batch):
  threads, blocks, parts = _work(batch, int(geometry[OH]))
  partials = np.empty(threads * dw.size, dw.dtype)
  with blas_threads(1):
    runnable(_weight_grad_parts)(OPENBLAS_GEMMS[dw.dtype], partials, x, x_strides, x_offset, g, geometry, parts, blocks,
                       dw.dtype.type(1), dw.dtype.type(0))
  groups, cout = geometry[GROUPS], geometry[COUT] // geometry[GROUPS]
  summed = partials.reshape(threads, groups, dw.size // (groups * cout), cout).sum(axis=0)
  dw.reshape(groups, cout, -1)[...] = summed.transpose(0, 2, 1)

