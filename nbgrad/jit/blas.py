"""The CPU matrix product: numpy's matmul, which calls its bundled BLAS, on views of the flat buffers.
An operand laid out row- or column-major is read in place (a transpose costs nothing); any other
layout is copied first, since numpy's fallback loop for such strides is many times slower than BLAS."""
from __future__ import annotations
import numpy as np
from numpy.lib.stride_tricks import as_strided


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
    np.matmul(blas_readable(a), blas_readable(b), out=out)
    return
  piece = k // pieces
  np.matmul(blas_readable(_k_pieces(a, pieces, piece, -1)), blas_readable(_k_pieces(b, pieces, piece, -2))).sum(axis=-3, out=out)
  if pieces * piece < k:
    out += np.matmul(blas_readable(a[..., pieces * piece:]), blas_readable(b[..., pieces * piece:, :]))


def _k_pieces(x: np.ndarray, pieces: int, piece: int, k_axis: int) -> np.ndarray:
  """x (..., rows, cols) as (..., pieces, rows, cols) with its K axis (k_axis) cut into pieces of `piece`."""
  shape, strides = list(x.shape), list(x.strides)
  shape[k_axis] = piece
  return as_strided(x, tuple(shape[:-2]) + (pieces,) + tuple(shape[-2:]),
                    tuple(strides[:-2]) + (strides[k_axis] * piece,) + tuple(strides[-2:]), writeable=False)
