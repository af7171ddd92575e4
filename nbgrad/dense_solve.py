"""Solving through factors at the Tensor level: triangular solves, the LU factorization with partial pivoting and its
solves, and solves with Cholesky factors, with torch's gradients (graph/lapack.py's nodes, as in dense.py)."""
from __future__ import annotations
from collections import namedtuple
from nbgrad import autograd as F
from nbgrad.dense import _as_input, _matrices, _paired, _transposed
from nbgrad.dtype import dtypes
from nbgrad.graph import lapack
from nbgrad.helpers import ShapeMismatch
from nbgrad.linalg import matrix_transpose

TriangularSolution = namedtuple("TriangularSolution", "solution cloned_coefficient")
LUFactorization = namedtuple("LUFactorization", "LU pivots")
PLU = namedtuple("PLU", "P L U")


def _triangular(a, b, upper: bool, unit: bool):
  """X with T X = b for T the upper or lower triangle of a (ones on its diagonal when unit): float matrices of one
  type and batch shape. The gradient of a falls on T's triangle alone, as torch's."""
  def gradient(t, columns, x, g):
    grad_b = _triangular(_transposed(t), g, not upper, unit)
    grad_t = -(grad_b @ _transposed(x))
    return (grad_t.triu(1 if unit else 0) if upper else grad_t.tril(-1 if unit else 0)), grad_b
  return F.custom(lambda t, columns: lapack.triangular_solve(t, columns, upper, unit), gradient, a, b)


def solve_triangular(x, b, upper: bool, left: bool = True, unitriangular: bool = False):
  """torch.linalg.solve_triangular: X with T X = b (or X T = b where not left) for T the upper or lower triangle of
  the square matrices x (ones on its diagonal with unitriangular), batch dims broadcast."""
  a, b, result = _paired(x, x._operand_or_number(b), "solve_triangular", -2 if left else -1)
  if left: return _triangular(a, b, upper, unitriangular).cast(result)
  return _transposed(_triangular(_transposed(a), _transposed(b), not upper, unitriangular)).cast(result)


def triangular_solve(b, x, upper: bool = True, transpose: bool = False, unitriangular: bool = False):
  """torch.triangular_solve: (X with T X = b, or T^T X = b with transpose, for T x's upper or lower triangle, a copy of
  x to the batch shape of X)."""
  x = b._operand_or_number(x)
  coefficient = _transposed(x) if transpose and x.ndim >= 2 else x
  solution = solve_triangular(coefficient, b, upper=upper != transpose, unitriangular=unitriangular)
  return TriangularSolution(solution, x.clone().expand(solution.shape[:-2] + x.shape[-2:]))


def _row_order(pivots, rows: int):
  """The order LAPACK's 1-based pivots (..., k) swap rows 0 .. rows - 1 into (int32, no gradient)."""
  from nbgrad.tensor import Tensor
  return Tensor(lapack.permutation(pivots.cast(dtypes.int32).detach().lazydata, rows))


def _permutation_matrix(order, dtype):
  """P with P[order[i], i] = 1: P^T A has row i of A's row order[i]."""
  from nbgrad.tensor import Tensor
  rows = order.shape[-1]
  return (Tensor.arange(rows, device=order.device).unsqueeze(-1) == order.unsqueeze(-2)).cast(dtype)


def _lu_parts(packed, rows: int, cols: int):
  """(P, L, U) from graph/lapack.py's lu packing: L rows x k with ones on its diagonal, U k x cols."""
  from nbgrad.tensor import Tensor
  k = min(rows, cols)
  factors, order = packed[..., :cols], _row_order(packed[..., :k, cols], rows)
  lower = factors[..., :k].tril(-1) + Tensor.eye(rows, k, dtype=packed.dtype, device=packed.device)
  return _permutation_matrix(order, packed.dtype), lower, factors[..., :k, :].triu()


def _lu_gradient(a, packed, g):
  """The gradient of A = P L U from the gradient of the packed factors (L's below the diagonal, U's on and above).
  With L = [L1; L2] and U = [U1 | U2] (L1, U1 square), gA = P [L1^-T phi U1^-T | L1^-T gU2], stacked over
  gL2 U1^-T for more rows than columns, where phi = the strictly lower part of L1^T gL1 - gU2 U2^T plus the upper
  part of gU1 U1^T - L2^T gL2 (the terms of L2 and U2 where they exist)."""
  rows, cols = a.shape[-2:]
  k = min(rows, cols)
  permutation, lower, upper = _lu_parts(packed, rows, cols)
  grad = g[..., :cols]
  grad_lower, grad_upper = grad[..., :k].tril(-1), grad[..., :k, :].triu()
  lower_square, upper_square = lower[..., :k, :], upper[..., :k]
  from_lower = _transposed(lower_square) @ grad_lower[..., :k, :]
  from_upper = grad_upper[..., :k] @ _transposed(upper_square)
  if cols > k: from_lower = from_lower - grad_upper[..., k:] @ _transposed(upper[..., k:])
  if rows > k: from_upper = from_upper - _transposed(lower[..., k:, :]) @ grad_lower[..., k:, :]
  core = _triangular(_transposed(lower_square), from_lower.tril(-1) + from_upper.triu(), upper=True, unit=True)
  if rows > k: core = core.cat(grad_lower[..., k:, :], dim=-2)
  core = _transposed(_triangular(upper_square, _transposed(core), upper=True, unit=False))
  if cols > k: core = core.cat(_triangular(_transposed(lower_square), grad_upper[..., k:], upper=True, unit=True), dim=-1)
  return permutation @ core


def _pivoting(pivot: bool, op: str):
  if not pivot: raise RuntimeError(f"{op} without pivoting is not implemented on the CPU (as torch's)")


def lu_factor(x, pivot: bool = True):
  """torch.linalg.lu_factor: (LU, pivots) of matrices (..., m, n) by partial pivoting, L below the diagonal of LU
  (its unit diagonal left out) and U on and above it, pivots int32 and 1-based as LAPACK's. A zero on U's diagonal
  raises numpy's LinAlgError when computed (lu gives those factors)."""
  _pivoting(pivot, "lu_factor")
  a = _matrices(x, "lu_factor", square=False)
  rows, cols = a.shape[-2:]
  packed = F.custom(lapack.lu_factor, _lu_gradient, a)
  return LUFactorization(_as_input(x, packed[..., :cols]), packed[..., :min(rows, cols), cols].cast(dtypes.int32))


def lu(x, pivot: bool = True):
  """torch.linalg.lu: (P, L, U) with x = P L U for matrices (..., m, n): P a permutation, L m x k lower triangular with
  ones on its diagonal and U k x n upper triangular (k = min(m, n)), by partial pivoting."""
  _pivoting(pivot, "lu")
  a = _matrices(x, "lu", square=False)
  return PLU(*(_as_input(x, part) for part in _lu_parts(F.custom(lapack.lu, _lu_gradient, a), *a.shape[-2:])))


def lu_solve(b, factors, pivots, *, left: bool = True, adjoint: bool = False):
  """torch.lu_solve and torch.linalg.lu_solve: X with A X = b (A^T X = b with adjoint; X A = b or X A^T = b where
  not left, b then (..., k, n)), for A's LU factorization (factors, pivots) from lu_factor, batch dims broadcast."""
  factors, pivots = b._operand_or_number(factors), b._operand_or_number(pivots)
  n = factors.shape[-1]
  if pivots.shape != factors.shape[:-1]:
    raise ShapeMismatch(f"lu_solve needs pivots of shape {factors.shape[:-1]} for factors {factors.shape}, got {pivots.shape}")
  a, columns, result = _paired(factors, b, "lu_solve", -2 if left else -1)
  # X A = b is A^T X^T = b^T, and X A^T = b is A X^T = b^T: each is a solve with A or with A^T
  columns = columns if left else _transposed(columns)
  permutation = _permutation_matrix(_row_order(pivots, n), columns.dtype)
  if adjoint == left:   # A^T = U^T L^T P^T: X = P L^-T U^-T b
    transposed = _transposed(a)
    solved = permutation @ _triangular(transposed, _triangular(transposed, columns, upper=False, unit=False), upper=True, unit=True)
  else:   # A = P L U: X = U^-1 L^-1 P^T b
    solved = _triangular(a, _triangular(a, _transposed(permutation) @ columns, upper=False, unit=True), upper=True, unit=False)
  return (solved if left else _transposed(solved)).cast(result)


def _cholesky_solved(factor, columns, upper: bool):
  """The lazy X with A X = columns, A = L L^T from the lower factor L (or U^T U from the upper U)."""
  first, second = (matrix_transpose(factor), factor) if upper else (factor, matrix_transpose(factor))
  return lapack.triangular_solve(second, lapack.triangular_solve(first, columns, False, False), True, False)


def cholesky_solve(b, factor, upper: bool = False):
  """torch.cholesky_solve: X with A X = b for A = L L^T given its lower factor L (or A = U^T U given U, with upper),
  batch dims broadcast. As torch's, the factor's gradient is that of the whole matrix given, both triangles."""
  factor = b._operand_or_number(factor)
  a, columns, result = _paired(factor, b, "cholesky_solve")

  def gradient(factor, columns, x, g):
    grad_b = cholesky_solve(g, factor, upper)
    both = grad_b @ _transposed(x)
    both = both + _transposed(both)
    return (-(factor @ both) if upper else -(both @ factor)), grad_b
  return F.custom(lambda factor, columns: _cholesky_solved(factor, columns, upper), gradient, a, columns).cast(result)


def cholesky_inverse(factor, upper: bool = False):
  """torch.cholesky_inverse: the inverse of A = L L^T given its lower factor L (or of U^T U given U, with upper)."""
  from nbgrad.tensor import Tensor
  _matrices(factor, "cholesky_inverse")   # its shape checked under its own name
  identity = Tensor.eye(factor.shape[-1], dtype=factor.dtype, device=factor.device)
  return cholesky_solve(identity, factor, upper)
