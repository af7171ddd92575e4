"""The CPU's dense linear algebra: numpy.linalg (LAPACK, on OpenBLAS) over a batch of matrices in flat buffers."""
from __future__ import annotations
import numpy as np


def factorized(out: np.ndarray, a: np.ndarray, b, routine):
  """out = routine's op of the batch of matrices in a (graph/lapack.py's Factorized, which says how results are
  packed). A matrix the op has no answer for (a singular one for inv and solve, one not positive definite for
  cholesky) raises numpy's LinAlgError."""
  if out.size == 0: return
  batch, rows, cols = routine.batch, routine.rows, routine.cols
  matrices, k = a.reshape(batch, rows, cols), min(rows, cols)
  try:
    if routine.op in ("inv", "cholesky"): out.reshape(matrices.shape)[...] = (np.linalg.inv if routine.op == "inv" else np.linalg.cholesky)(matrices)
    elif routine.op == "det":
      with np.errstate(over="ignore"): out[...] = np.linalg.det(matrices)   # past the range: inf, as torch's
    elif routine.op == "slogdet":
      pairs = out.reshape(batch, 2)
      pairs[:, 0], pairs[:, 1] = np.linalg.slogdet(matrices)
    elif routine.op == "solve": out.reshape(batch, rows, routine.k)[...] = np.linalg.solve(matrices, b.reshape(batch, rows, routine.k))
    elif routine.op == "eigh":
      packed = out.reshape(batch, rows + 1, rows)
      packed[:, 0], packed[:, 1:] = np.linalg.eigh(matrices)
    elif routine.op == "svd":
      packed = out.reshape(batch, k, rows + 1 + cols)
      u, s, vh = np.linalg.svd(matrices, full_matrices=False)
      packed[:, :, :rows], packed[:, :, rows], packed[:, :, rows + 1:] = np.swapaxes(u, -1, -2), s, vh
    else:
      packed = out.reshape(batch, k, rows + cols)
      q, r = np.linalg.qr(matrices)
      packed[:, :, :rows], packed[:, :, rows:] = np.swapaxes(q, -1, -2), r
  except np.linalg.LinAlgError as error:
    raise np.linalg.LinAlgError(f"{routine.op} of {rows}x{cols} matrices: {error}") from None
