"""The CPU's dense linear algebra: numpy.linalg (LAPACK's LU factorization, on OpenBLAS) over a batch of matrices
in flat buffers."""
from __future__ import annotations
import numpy as np


def factorized(out: np.ndarray, a: np.ndarray, b, routine):
  """out = routine's op of the batch of n x n matrices in a (graph/lapack.py's Factorized). A singular matrix raises
  numpy's LinAlgError where there is no answer (inv, solve), naming the op and the matrices' size."""
  if out.size == 0: return
  matrices = a.reshape(routine.batch, routine.n, routine.n)
  try:
    if routine.op == "inv": out.reshape(matrices.shape)[...] = np.linalg.inv(matrices)
    elif routine.op == "det":
      with np.errstate(over="ignore"): out[...] = np.linalg.det(matrices)   # past the range: inf, as torch's
    elif routine.op == "solve": out.reshape(routine.batch, routine.n, routine.k)[...] = np.linalg.solve(matrices, b.reshape(routine.batch, routine.n, routine.k))
    else:
      pairs = out.reshape(routine.batch, 2)
      pairs[:, 0], pairs[:, 1] = np.linalg.slogdet(matrices)
  except np.linalg.LinAlgError as error:
    raise np.linalg.LinAlgError(f"{routine.op} of {routine.n}x{routine.n} matrices: {error} (one of them has no inverse)") from None
