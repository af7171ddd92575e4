"""Dense linear algebra at the Tensor level: LAPACK's factorizations (graph/lapack.py's nodes) and their gradients,
written with Tensor ops (triangles, diagonals, products and other factorizations of the same matrices).

Inputs compute in float64 when they are float64, else in float32 (half types are cast back at the end), as the
routines take. Where eigenvalues or singular values repeat (an identity matrix), the gradient terms that divide by
their differences are taken as 0: exact for a loss of the values alone, and otherwise where torch gives inf or NaN."""
from __future__ import annotations
from nbgrad import autograd as F
from nbgrad.dtype import dtypes, least_upper_dtype
from nbgrad.graph import lapack
from nbgrad.helpers import ShapeMismatch


def _matrices(x, op: str, square: bool = True):
  """x as float matrices for a LAPACK routine: float32 or float64 (ints and half types as float32)."""
  if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
    raise ShapeMismatch(f"{op} needs {'square ' if square else ''}matrices (..., {'n, n' if square else 'm, n'}), got shape {x.shape}")
  return x.cast(dtypes.float64 if x.dtype == dtypes.float64 else dtypes.float32)


def _as_input(x, out):
  """A result computed in float32 for a half type, cast back to it."""
  return out.cast(x.dtype) if x.dtype in (dtypes.float16, dtypes.bfloat16) else out


def _factorized(op: str, gradient, *inputs):
  """The node of graph/lapack.py's op on the input tensors; gradient(*inputs, result, grad) takes and gives tensors."""
  return F.custom(getattr(lapack, op), gradient, *inputs)


def _transposed(x): return x.transpose(-1, -2)
def _diagonal(x): return x.diagonal(0, -2, -1)
def _diagonal_matrix(v): return v.unsqueeze(-1) * v.new_ones(v.shape[-1]).diag()


def _reciprocal_where(x, kept):
  """1 / x where kept, 0 elsewhere (no division by the values left out, which may be 0)."""
  return kept.where(1 / kept.where(x, 1.0), 0.0)


def _reciprocal_differences(values):
  """1 / (values[j] - values[i]) at (i, j), 0 where they are equal (the diagonal, repeated values)."""
  differences = values.unsqueeze(-2) - values.unsqueeze(-1)
  return _reciprocal_where(differences, differences != 0)


def inverse(x):
  """The inverses of square matrices (..., n, n); a singular one raises numpy's LinAlgError when computed."""
  return _as_input(x, _factorized("inverse", lambda a, y, g: -(_transposed(y) @ g @ _transposed(y)), _matrices(x, "inverse")))


def det(x):
  """The determinants of square matrices (..., n, n); the gradient is det * inv^T (the matrix must be invertible)."""
  gradient = lambda a, d, g: (g * d).unsqueeze(-1).unsqueeze(-1) * _transposed(inverse(a))
  return _as_input(x, _factorized("determinant", gradient, _matrices(x, "det")))


def slogdet(x):
  """(sign, log |det|) of square matrices (..., n, n): no overflow for big ones; the sign is flat."""
  gradient = lambda a, pairs, g: g[..., 1].unsqueeze(-1).unsqueeze(-1) * _transposed(inverse(a))
  pairs = _factorized("sign_and_log_determinant", gradient, _matrices(x, "slogdet"))
  return _as_input(x, pairs[..., 0]), _as_input(x, pairs[..., 1])


def logdet(x):
  """log det, as torch's: NaN where the determinant is negative, -inf where it is 0."""
  sign, log_magnitude = slogdet(x)
  return (sign < 0).where(float("nan"), log_magnitude)


def solve(x, b):
  """y with x @ y = b: x square matrices (..., n, n), b vectors (of shape x.shape[:-1], or 1-D, as torch's rule says) or
  matrices (..., n, k), batch dims broadcast. A singular x raises numpy's LinAlgError when computed."""
  from nbgrad.tensor import broadcast_shape
  a, b = _matrices(x, "solve"), x._operand_or_number(b)
  vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
  columns = b.unsqueeze(-1) if vector else b
  if columns.ndim < 2 or columns.shape[-2] != a.shape[-1]:
    raise ShapeMismatch(f"solve needs b of shape (..., {a.shape[-1]}) or (..., {a.shape[-1]}, k) for matrices {a.shape}, got {b.shape}")
  dtype = least_upper_dtype(a.dtype, columns.dtype)
  if dtype not in (dtypes.float32, dtypes.float64): dtype = dtypes.float32
  batch = broadcast_shape(a.shape[:-2], columns.shape[:-2])
  a, columns = a.cast(dtype)._broadcast_to(batch + a.shape[-2:]), columns.cast(dtype)._broadcast_to(batch + columns.shape[-2:])

  def gradient(a, b, y, g):
    grad_b = solve(_transposed(a), g)
    return -(grad_b @ _transposed(y)), grad_b
  y = _factorized("solve", gradient, a, columns)
  return y.squeeze(-1) if vector else y


def cholesky(x):
  """The lower factors L of symmetric positive-definite matrices x = L L^T (read from the lower triangle, as numpy's
  and torch's); one that is not positive definite raises numpy's LinAlgError when computed."""
  def gradient(a, lower, g):
    inner = _transposed(lower) @ g.tril()
    inner = inner.tril() - 0.5 * _diagonal_matrix(_diagonal(inner))
    lower_inverse = inverse(lower)
    grad = _transposed(lower_inverse) @ inner @ lower_inverse
    return 0.5 * (grad + _transposed(grad))
  return _as_input(x, _factorized("cholesky", gradient, _matrices(x, "cholesky")))


def eigh(x):
  """(eigenvalues ascending, eigenvectors as columns) of symmetric matrices (read from the lower triangle)."""
  def gradient(a, packed, g):
    values, vectors = packed[..., 0, :], packed[..., 1:, :]
    inner = _diagonal_matrix(g[..., 0, :]) + _reciprocal_differences(values) * (_transposed(vectors) @ g[..., 1:, :])
    grad = vectors @ inner @ _transposed(vectors)
    return 0.5 * (grad + _transposed(grad))
  packed = _factorized("eigh", gradient, _matrices(x, "eigh"))
  return _as_input(x, packed[..., 0, :]), _as_input(x, packed[..., 1:, :])


def svd(x, full_matrices: bool = False):
  """(U, S, Vh) with x = U diag(S) Vh, S descending: the reduced decomposition (full_matrices gives the same for
  square matrices; the full one of others has no gradient and is not computed)."""
  rows, cols = x.shape[-2:] if x.ndim >= 2 else (0, 0)
  if full_matrices and rows != cols: raise NotImplementedError(f"svd with full_matrices of {x.shape} matrices: only the reduced one is computed")

  def gradient(a, packed, g):
    u, s, vh = _transposed(packed[..., :rows]), packed[..., rows], packed[..., rows + 1:]
    grad_u, grad_s, grad_v = _transposed(g[..., :rows]), g[..., rows], _transposed(g[..., rows + 1:])
    v, between = _transposed(vh), _reciprocal_differences(s * s)
    from_u = between * (_transposed(u) @ grad_u - _transposed(grad_u) @ u)
    from_v = between * (vh @ grad_v - _transposed(grad_v) @ v)
    grad = u @ (from_u * s.unsqueeze(-2) + _diagonal_matrix(grad_s) + s.unsqueeze(-1) * from_v) @ vh
    inverse_s = _reciprocal_where(s, s != 0)
    if rows > cols: grad = grad + ((grad_u - u @ (_transposed(u) @ grad_u)) * inverse_s.unsqueeze(-2)) @ vh
    if cols > rows: grad = grad + u @ (inverse_s.unsqueeze(-1) * (_transposed(grad_v) - (_transposed(grad_v) @ v) @ vh))
    return grad
  packed = _factorized("svd", gradient, _matrices(x, "svd", square=False))
  return _as_input(x, _transposed(packed[..., :rows])), _as_input(x, packed[..., rows]), _as_input(x, packed[..., rows + 1:])


def _qr_gradient_of_tall(q, r, grad_q, grad_r):
  """The gradient of A = Q R for A with at least as many rows as columns: (gQ + Q sym(M)) R^-T, with M = R gR^T - gQ^T Q
  and sym(M) its lower triangle mirrored."""
  m = r @ _transposed(grad_r) - _transposed(grad_q) @ q
  below = m.tril(-1)
  return _transposed(solve(r, _transposed(grad_q + q @ (below + _transposed(below) + _diagonal_matrix(_diagonal(m))))))


def qr(x, mode: str = "reduced"):
  """(Q, R) with x = Q R, Q's columns orthonormal and R upper triangular: the reduced decomposition."""
  if mode != "reduced": raise NotImplementedError(f"qr mode {mode!r}: only the reduced decomposition is computed")
  rows = x.shape[-2] if x.ndim >= 2 else 0

  def gradient(a, packed, g):
    q, r = _transposed(packed[..., :rows]), packed[..., rows:]
    grad_q, grad_r = _transposed(g[..., :rows]), g[..., rows:]
    if a.shape[-1] <= rows: return _qr_gradient_of_tall(q, r, grad_q, grad_r)
    # wide: A = [X | Y] with X square, R = [U | V]; X's part as a tall one, Y's from Q
    rest, grad_rest = a[..., rows:], grad_r[..., rows:]
    square = _qr_gradient_of_tall(q, r[..., :rows], grad_q + rest @ _transposed(grad_rest), grad_r[..., :rows])
    return square.cat(q @ grad_rest, dim=-1)
  packed = _factorized("qr", gradient, _matrices(x, "qr", square=False))
  return _as_input(x, _transposed(packed[..., :rows])), _as_input(x, packed[..., rows:])


def pinv(x, rtol=None):
  """The Moore-Penrose pseudo-inverse from the reduced SVD: singular values at most rtol times the largest count as 0
  (rtol by default max(rows, cols) * the float type's epsilon, as numpy's and torch's)."""
  u, s, vh = svd(x)
  if rtol is None: rtol = max(x.shape[-2:]) * (2.0 ** -52 if s.dtype == dtypes.float64 else 2.0 ** -23)
  cutoff = s.max(-1, keepdim=True) * rtol
  inverse_s = _reciprocal_where(s, s > cutoff)
  return _transposed(vh) @ (inverse_s.unsqueeze(-1) * _transposed(u))


def matrix_power(x, n: int):
  """x multiplied by itself n times (the identity for 0, powers of the inverse for negative n), by squaring."""
  from nbgrad.tensor import _check_int
  _check_int("matrix_power n", n, low=None)
  if x.ndim < 2 or x.shape[-1] != x.shape[-2]: raise ShapeMismatch(f"matrix_power needs square matrices (..., n, n), got shape {x.shape}")
  if n < 0: return matrix_power(inverse(x), -n)
  result, square = None, x
  while n:
    if n & 1: result = square if result is None else result @ square
    n >>= 1
    if n: square = square @ square
  if result is None: return x._flat(x.new_ones(x.shape[-1]).diag().expand(x.shape))   # the identity, of gradient 0
  return result * 1 if result is x else result   # x itself is a new tensor, as torch's
