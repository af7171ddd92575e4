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


def matmul(out: np.ndarray, a: np.ndarray, b: np.ndarray):
  """out (..., M, N) = a (..., M, K) @ b (..., K, N); the batch dims may broadcast (stride 0)."""
  if out.size == 0: return
  np.matmul(blas_readable(a), blas_readable(b), out=out)
