"""The CPU direct convolution (2-D), its input gradient and its weight gradient, an image at a time.

Each thread takes a share of the batch. For an image it copies the windows its product reads (im2col) into a
buffer of its own, which stays in the core's cache, and calls single-threaded BLAS on it through the C interface
(nbgrad/jit/blas.py's gemm). Done for the whole batch at once, the columns make a matrix of batch x positions
rows that goes out to memory and back (a 128 x 32 x 24 x 24 batch with a 5x5 kernel: 164 MB, written by one kernel,
read by the product, and written again by the input gradient's product for its col2im kernel to read).

geometry: (C, H, W, Cout, groups, KH, KW, stride y, stride x, dilation y, dilation x, pad top, pad left, OH, OW);
x is read through its (N, C, H, W) strides and offset, the other operands are contiguous: w (Cout, C/groups,
KH, KW), the output gradient g (N, Cout, OH, OW), and the results."""
from __future__ import annotations
import numpy as np
import numba
from numba import njit, prange
from nbgrad.jit.blas import ROW_MAJOR, NO_TRANSPOSE, TRANSPOSE, OPENBLAS_GEMMS, blas_threads

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
def _im2col(cols, x, x_strides, x_offset, n, group, geometry):
  """cols[(c, ky, kx), (oy, ox)] = the input at (n, group's channel c, oy * sy + ky * dy - pt, ox * sx + kx * dx - pl),
  0 in the padding."""
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
        row = ((c * kh + ky) * kw + kx) * oh * ow
        low, high, shift = _valid_columns(kx, dx, pl, sx, width, ow)
        for oy in range(oh):
          start, iy = row + oy * ow, oy * sy + ky * dy - pt
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
def _col2im_add(dx_buffer, cols, n, group, geometry):
  """The transpose of _im2col: each column entry added into dx (N, C, H, W, contiguous) where it was read from."""
  channels, height, width = geometry[C] // geometry[GROUPS], geometry[H], geometry[W]
  kh, kw, sy, sx, dy, dx, pt, pl = geometry[KH], geometry[KW], geometry[SY], geometry[SX], geometry[DY], geometry[DX], geometry[PT], geometry[PL]
  oh, ow = geometry[OH], geometry[OW]
  for c in range(channels):
    channel_start = (n * geometry[C] + group * channels + c) * height * width
    for ky in range(kh):
      for kx in range(kw):
        row = ((c * kh + ky) * kw + kx) * oh * ow
        low, high, shift = _valid_columns(kx, dx, pl, sx, width, ow)
        for oy in range(oh):
          iy = oy * sy + ky * dy - pt
          if iy < 0 or iy >= height: continue
          target, start = channel_start + iy * width + shift, row + oy * ow
          if sx == 1:
            for ox in range(low, high): dx_buffer[np.uint64(target + ox)] += cols[np.uint64(start + ox)]
          else:
            for ox in range(low, high): dx_buffer[np.uint64(target + ox * sx)] += cols[np.uint64(start + ox)]


def _parts(batch: int, threads: int) -> np.ndarray:
  return np.array([batch * p // threads for p in range(threads + 1)], np.int64)


@njit(parallel=True, nogil=True, cache=True)
def _forward(gemm, out, x, x_strides, x_offset, w, geometry, parts, one, zero):
  """out (N, Cout, OH, OW) = the convolution of x with w."""
  channels, cout = geometry[C] // geometry[GROUPS], geometry[COUT] // geometry[GROUPS]
  depth, positions, item = channels * geometry[KH] * geometry[KW], geometry[OH] * geometry[OW], out.itemsize
  for part in prange(len(parts) - 1):
    cols = np.empty(depth * positions, out.dtype)
    for n in range(parts[part], parts[part + 1]):
      for group in range(geometry[GROUPS]):
        _im2col(cols, x, x_strides, x_offset, n, group, geometry)
        gemm(ROW_MAJOR, NO_TRANSPOSE, NO_TRANSPOSE, cout, positions, depth, one, w.ctypes.data + group * cout * depth * item,
             depth, cols.ctypes.data, positions, zero, out.ctypes.data + (n * geometry[COUT] + group * cout) * positions * item, positions)


@njit(parallel=True, nogil=True, cache=True)
def _input_grad(gemm, dx, g, w, geometry, parts, one, zero):
  """dx (N, C, H, W) = the gradient of the convolution's input for output gradient g."""
  channels, cout = geometry[C] // geometry[GROUPS], geometry[COUT] // geometry[GROUPS]
  depth, positions, item = channels * geometry[KH] * geometry[KW], geometry[OH] * geometry[OW], dx.itemsize
  image = geometry[C] * geometry[H] * geometry[W]
  for part in prange(len(parts) - 1):
    cols = np.empty(depth * positions, dx.dtype)
    for n in range(parts[part], parts[part + 1]):
      dx[n * image:(n + 1) * image] = zero
      for group in range(geometry[GROUPS]):
        gemm(ROW_MAJOR, TRANSPOSE, NO_TRANSPOSE, depth, positions, cout, one, w.ctypes.data + group * cout * depth * item, depth,
             g.ctypes.data + (n * geometry[COUT] + group * cout) * positions * item, positions, zero, cols.ctypes.data, positions)
        _col2im_add(dx, cols, n, group, geometry)


@njit(parallel=True, nogil=True, cache=True)
def _weight_grad_parts(gemm, partials, x, x_strides, x_offset, g, geometry, parts, one, zero):
  """partials[part, group] (C/groups * KH * KW, Cout/groups) = the transposed weight gradient of the group from
  the part's images. Transposed, the columns are BLAS's first operand: 128 products of 800x400 @ 400x32 took 30 ms
  where 32x400 @ 400x800 took 46 (single-threaded)."""
  channels, cout = geometry[C] // geometry[GROUPS], geometry[COUT] // geometry[GROUPS]
  depth, positions, item = channels * geometry[KH] * geometry[KW], geometry[OH] * geometry[OW], partials.itemsize
  size = geometry[COUT] * depth
  for part in prange(len(parts) - 1):
    cols = np.empty(depth * positions, partials.dtype)
    partial = partials[part * size:(part + 1) * size]
    partial[:] = zero
    for n in range(parts[part], parts[part + 1]):
      for group in range(geometry[GROUPS]):
        _im2col(cols, x, x_strides, x_offset, n, group, geometry)
        gemm(ROW_MAJOR, NO_TRANSPOSE, TRANSPOSE, depth, cout, positions, one, cols.ctypes.data, positions,
             g.ctypes.data + (n * geometry[COUT] + group * cout) * positions * item, positions, one,
             partial.ctypes.data + group * cout * depth * item, cout)

def run(routine, out: np.ndarray, *args):
  """routine(gemm, out, *args, parts, 1, 0): the batch (out's first dim, or args' last) in one part per thread,
  BLAS single-threaded meanwhile."""
  batch = args[-1]
  dtype = out.dtype
  with blas_threads(1):
    routine(OPENBLAS_GEMMS[dtype], out, *args[:-1], _parts(batch, numba.get_num_threads()), dtype.type(1), dtype.type(0))


def forward(out, x, x_strides, x_offset, w, geometry, batch): run(_forward, out, x, x_strides, x_offset, w, geometry, batch)
def input_grad(dx, g, w, geometry, batch): run(_input_grad, dx, g, w, geometry, batch)


def weight_grad(dw, x, x_strides, x_offset, g, geometry, batch):
  threads = min(numba.get_num_threads(), batch)
  partials = np.empty(threads * dw.size, dw.dtype)
  with blas_threads(1):
    _weight_grad_parts(OPENBLAS_GEMMS[dw.dtype], partials, x, x_strides, x_offset, g, geometry, _parts(batch, threads),
                       dw.dtype.type(1), dw.dtype.type(0))
  groups, cout = geometry[GROUPS], geometry[COUT] // geometry[GROUPS]
  summed = partials.reshape(threads, groups, dw.size // (groups * cout), cout).sum(axis=0)
  dw.reshape(groups, cout, -1)[...] = summed.transpose(0, 2, 1)
