"""The CPU's dense linear algebra over a batch of matrices in flat buffers: numpy.linalg (LAPACK, on OpenBLAS) for
the factorizations it has, small numba loops for those it lacks (LU, triangular solves), and the matrix exponential
by scaling and squaring a Pade approximant."""
from __future__ import annotations
import math
import numpy as np
from numba import njit

PADE_DEGREE = 13
PADE_NORM_LIMIT = 5.371920351148152   # the largest 1-norm where that approximant's error stays below float64's rounding


def factorized(out: np.ndarray, a: np.ndarray, b, routine):
  """out = routine's op of the batch of matrices in a (graph/lapack.py's Factorized, which says how results are
  packed). A matrix the op has no answer for (a singular one for inv, solve and lu_factor, one not positive
  definite for cholesky) raises numpy's LinAlgError."""
  if out.size == 0: return
  batch, rows, cols = routine.batch, routine.rows, routine.cols
  try:
    if routine.op == "permutation": _permutation(out.reshape(batch, rows), a.reshape(batch, cols), rows, cols)
    elif routine.op.startswith("solve_"):
      _triangular_solve(out.reshape(batch, rows, routine.k), a.reshape(batch, rows, rows), b.reshape(batch, rows, routine.k),
                        routine.op == "solve_upper", routine.unit)
    elif routine.op in ("lu", "lu_factor"): _lu(out.reshape(batch, rows, cols + 1), a.reshape(batch, rows, cols), routine.op == "lu_factor")
    else: _lapack(out, a.reshape(batch, rows, cols), b, routine)
  except np.linalg.LinAlgError as error:
    raise np.linalg.LinAlgError(f"{routine.op} of {rows}x{cols} matrices: {error}") from None


def _lapack(out: np.ndarray, matrices: np.ndarray, b, routine):
  """The ops numpy.linalg computes (or, for exp, composes)."""
  batch, rows, cols = matrices.shape
  k = min(rows, cols)
  # A NaN spreads through the whole of a matrix's inverse or solution, and makes no Cholesky factor, as torch's: LAPACK
  # left some entries finite
  with_nan = np.isnan(matrices).any(axis=(1, 2)) if routine.op in ("inv", "solve", "cholesky") else None
  if routine.op == "cholesky" and with_nan.any(): raise np.linalg.LinAlgError("a matrix holds NaN: it is not positive definite")
  if routine.op in ("inv", "cholesky"): out.reshape(matrices.shape)[...] = (np.linalg.inv if routine.op == "inv" else np.linalg.cholesky)(matrices)
  elif routine.op == "inv_or_infinite": _inverse_or_infinite(out.reshape(matrices.shape), matrices)
  elif routine.op == "det":
    with np.errstate(over="ignore"): out[...] = np.linalg.det(matrices)   # past the range: inf, as torch's
  elif routine.op == "slogdet":
    pairs = out.reshape(batch, 2)
    pairs[:, 0], pairs[:, 1] = np.linalg.slogdet(matrices)
  elif routine.op == "solve": out.reshape(batch, rows, routine.k)[...] = np.linalg.solve(matrices, b.reshape(batch, rows, routine.k))
  elif routine.op == "eigh":
    packed = out.reshape(batch, rows + 1, rows)
    packed[:, 0], packed[:, 1:] = np.linalg.eigh(matrices)
  elif routine.op == "exp": out.reshape(matrices.shape)[...] = _exponential(matrices.astype(np.float64))
  elif routine.op == "svd":
    packed = out.reshape(batch, k, rows + 1 + cols)
    u, s, vh = np.linalg.svd(matrices, full_matrices=False)
    packed[:, :, :rows], packed[:, :, rows], packed[:, :, rows + 1:] = np.swapaxes(u, -1, -2), s, vh
  elif routine.op == "svd_full":
    packed = out.reshape(batch, rows * rows + k + cols * cols)
    u, s, vh = np.linalg.svd(matrices, full_matrices=True)
    packed[:, :rows * rows], packed[:, rows * rows:rows * rows + k], packed[:, rows * rows + k:] = u.reshape(batch, -1), s, vh.reshape(batch, -1)
  else:
    complete = routine.op == "qr_complete"
    packed = out.reshape(batch, rows if complete else k, rows + cols)
    q, r = np.linalg.qr(matrices, mode="complete" if complete else "reduced")
    packed[:, :, :rows], packed[:, :, rows:] = np.swapaxes(q, -1, -2), r
  if routine.op in ("inv", "solve"): out.reshape(batch, -1)[with_nan] = np.nan


def _inverse_or_infinite(out: np.ndarray, matrices: np.ndarray):
  """out = the inverses of matrices, a singular one's from its LU factors by substitution, which divides by the zeros
  on U's diagonal into infs and NaNs (as torch's gradients that solve with a singular matrix) rather than raising."""
  try:
    out[...] = np.linalg.inv(matrices)
    return
  except np.linalg.LinAlgError: pass
  n = matrices.shape[-1]
  for i, matrix in enumerate(matrices):
    try: out[i] = np.linalg.inv(matrix)
    except np.linalg.LinAlgError:
      packed = np.empty((1, n, n + 1), matrix.dtype)
      _lu(packed, matrix[None], False)
      order = np.empty((1, n), np.int32)
      _permutation(order, packed[:, :, n].astype(np.int32), n, n)
      permuted = np.eye(n, dtype=matrix.dtype)[order[0]][None]   # P^T, so that L U X = P^T
      lower = np.empty_like(permuted)
      _triangular_solve(lower, packed[:, :, :n], permuted, False, True)
      _triangular_solve(out[i:i + 1], packed[:, :, :n], lower, True, False)


def _pade_coefficients(degree: int) -> list[float]:
  """The coefficients of the numerator p of exp's [degree/degree] Pade approximant p(x) / p(-x), lowest power first."""
  top = math.factorial(2 * degree)
  return [math.factorial(2 * degree - j) * math.factorial(degree) / (top * math.factorial(j) * math.factorial(degree - j)) for j in range(degree + 1)]


def _exponential(matrices: np.ndarray) -> np.ndarray:
  """exp of each float64 matrix: scaled by 2^-s until its 1-norm is at most PADE_NORM_LIMIT, the approximant, then
  squared s times. A matrix with an inf or NaN gives NaNs."""
  n = matrices.shape[-1]
  finite = np.isfinite(matrices).all(axis=(-2, -1))
  norms = np.where(finite, np.abs(matrices).sum(-2).max(-1, initial=0.0), 0.0)
  with np.errstate(divide="ignore"): squarings = np.maximum(0, np.ceil(np.log2(norms / PADE_NORM_LIMIT))).astype(np.int64)
  scaled = np.where(finite[:, None, None], matrices, 0.0) / np.exp2(squarings)[:, None, None]
  c = _pade_coefficients(PADE_DEGREE)
  identity = np.eye(n)
  powers = {2: scaled @ scaled}
  powers[4] = powers[2] @ powers[2]
  powers[6] = powers[4] @ powers[2]
  # p(A) = even + odd, p(-A) = even - odd, each split Horner-wise in A^6 to use only the three powers above
  odd = scaled @ (powers[6] @ (c[13] * powers[6] + c[11] * powers[4] + c[9] * powers[2])
                  + c[7] * powers[6] + c[5] * powers[4] + c[3] * powers[2] + c[1] * identity)
  even = powers[6] @ (c[12] * powers[6] + c[10] * powers[4] + c[8] * powers[2]) + c[6] * powers[6] + c[4] * powers[4] + c[2] * powers[2] + c[0] * identity
  result = np.linalg.solve(even - odd, even + odd)
  for step in range(int(squarings.max(initial=0))):
    result = np.where((step < squarings)[:, None, None], result @ result, result)
  return np.where(finite[:, None, None], result, np.nan)


@njit(cache=True, nogil=True, error_model="numpy")
def _lu(out, a, check):
  """The LU factorization with partial pivoting of each matrix a[i] (rows x cols) in out[i, :, :cols] (L below the
  diagonal, U on and above it) and its 1-based pivots in out[i, :k, cols]: row j swapped with row pivot - 1 at step j,
  the pivot the first largest magnitude in column j, as LAPACK's getrf picks."""
  batch, rows, cols = a.shape
  for i in range(batch):
    lu = out[i, :, :cols]
    lu[:, :] = a[i]
    out[i, :, cols] = 0   # the pivot column's rows past the pivots
    for j in range(min(rows, cols)):
      pivot = j
      for r in range(j + 1, rows):
        if abs(lu[r, j]) > abs(lu[pivot, j]): pivot = r
      out[i, j, cols] = pivot + 1
      for c in range(cols):
        lu[j, c], lu[pivot, c] = lu[pivot, c], lu[j, c]
      if lu[j, j] == 0:
        if check: raise np.linalg.LinAlgError("U has a zero on its diagonal (the matrix is singular)")
        continue   # as getrf: the column below stays, nothing is eliminated with a zero pivot
      for r in range(j + 1, rows):
        lu[r, j] /= lu[j, j]
        for c in range(j + 1, cols):
          lu[r, c] -= lu[r, j] * lu[j, c]


@njit(cache=True, nogil=True, error_model="numpy")
def _triangular_solve(out, a, b, upper, unit):
  """out[i] = X with T X = b[i], T a[i]'s upper or lower triangle (ones on its diagonal when unit), by substitution:
  a zero on the diagonal gives infs and NaNs, as torch's solve does."""
  batch, n, k = out.shape
  for i in range(batch):
    out[i] = b[i]
    for step in range(n):
      row = n - 1 - step if upper else step
      first, last = (row + 1, n) if upper else (0, row)
      for j in range(first, last):
        for c in range(k):
          out[i, row, c] -= a[i, row, j] * out[i, j, c]
      if not unit:
        for c in range(k):
          out[i, row, c] /= a[i, row, row]


@njit(cache=True, nogil=True, error_model="numpy")
def _permutation(out, pivots, rows, k):
  """out[i] = 0 .. rows - 1 with row j swapped with row pivots[i, j] - 1 for j = 0 .. k - 1 in turn."""
  for i in range(out.shape[0]):
    for r in range(rows): out[i, r] = r
    for j in range(k):
      pivot = pivots[i, j] - 1
      if pivot < 0 or pivot >= rows: raise ValueError("lu pivots out of range: each must be 1 .. the number of rows")
      out[i, j], out[i, pivot] = out[i, pivot], out[i, j]
