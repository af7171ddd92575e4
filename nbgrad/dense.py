"""Dense linear algebra at the Tensor level: LAPACK's factorizations (graph/lapack.py's nodes) and their gradients,
written with Tensor ops (triangles, diagonals, products and other factorizations of the same matrices).

Inputs compute in float64 when they are float64, else in float32 (half types are cast back at the end), as the
routines take. Where eigenvalues or singular values repeat (an identity matrix), the gradient terms that divide by
their differences are taken as 0: exact for a loss of the values alone, and otherwise where torch gives inf or NaN."""
from __future__ import annotations
import math
from collections import namedtuple
from nbgrad import autograd as F
from nbgrad.dtype import dtypes, HALF_FLOATS, least_upper_dtype
from nbgrad.graph import lapack
from nbgrad.helpers import ShapeMismatch


def _matrices(x, op: str, square: bool = True):
  """x as float matrices for a LAPACK routine: float32 or float64 (ints and half types as float32)."""
  if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
    raise ShapeMismatch(f"{op} needs {'square ' if square else ''}matrices (..., {'n, n' if square else 'm, n'}), got shape {x.shape}")
  return x.cast(dtypes.float64 if x.dtype == dtypes.float64 else dtypes.float32)


def _as_input(x, out):
  """A result computed in float32 for a half type, cast back to it."""
  return out.cast(x.dtype) if x.dtype in HALF_FLOATS else out


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


def _inverse_gradient(a, y, g): return -(_transposed(y) @ g @ _transposed(y))


def inverse(x):
  """The inverses of square matrices (..., n, n); a singular one raises numpy's LinAlgError when computed."""
  return _as_input(x, _factorized("inverse", _inverse_gradient, _matrices(x, "inverse")))


def det(x):
  """The determinants of square matrices (..., n, n). The gradient is the transposed adjugate, from the SVD
  U diag(S) V^T: det(U) det(V^T) U diag(c) V^T, c_i the product of the other singular values. That is det * inv^T
  where the matrix is invertible, and finite where it is singular (inv^T raised there)."""
  def gradient(a, d, g):
    u, values, vh = svd(a)
    ones = values[..., :1].ones_like()
    before = ones.cat(values[..., :-1], dim=-1).cumprod(-1)   # the products of the values before each and after it
    after = values[..., 1:].cat(ones, dim=-1).flip(-1).cumprod(-1).flip(-1)
    sign = det(u) * det(vh)
    return (g * sign).unsqueeze(-1).unsqueeze(-1) * ((u * (before * after).unsqueeze(-2)) @ vh)
  return _as_input(x, _factorized("determinant", gradient, _matrices(x, "det")))


def slogdet(x):
  """(sign, log |det|) of square matrices (..., n, n): no overflow for big ones; the sign is flat."""
  # a singular matrix's log |det| is -inf, its gradient infinite: infs and NaNs there, as torch's, not an error
  def gradient(a, pairs, g): return g[..., 1].unsqueeze(-1).unsqueeze(-1) * _transposed(_factorized("inverse_or_infinite", _inverse_gradient, a))
  pairs = _factorized("sign_and_log_determinant", gradient, _matrices(x, "slogdet"))
  return _as_input(x, pairs[..., 0]), _as_input(x, pairs[..., 1])


def logdet(x):
  """log det, as torch's: NaN where the determinant is negative, -inf where it is 0."""
  sign, log_magnitude = slogdet(x)
  return (sign < 0).where(float("nan"), log_magnitude)


def _float_types(*inputs):
  """The float type inputs compute in (float64 if any is, else float32) and the one their results take (half types
  come back, ints give float32)."""
  dtype = least_upper_dtype(*(t.dtype for t in inputs))
  result = dtype if dtype in (dtypes.float16, dtypes.bfloat16, dtypes.float64) else dtypes.float32
  return (dtypes.float64 if dtype == dtypes.float64 else dtypes.float32), result


def _paired(x, b, op: str, columns_dim: int = -2):
  """x square matrices (..., n, n) and b matrices (..., n, k) (with n at columns_dim) as float matrices of one type,
  batch dims broadcast, and the dtype their results take."""
  from nbgrad.tensor import broadcast_shape
  a = _matrices(x, op)
  if b.ndim < 2 or b.shape[columns_dim] != a.shape[-1]:
    dims = f"(..., {a.shape[-1]}, k)" if columns_dim == -2 else f"(..., k, {a.shape[-1]})"
    raise ShapeMismatch(f"{op} needs b of shape {dims} for matrices {x.shape}, got {b.shape}")
  compute, result = _float_types(x, b)
  batch = broadcast_shape(a.shape[:-2], b.shape[:-2])
  return a.cast(compute)._broadcast_to(batch + a.shape[-2:]), b.cast(compute)._broadcast_to(batch + b.shape[-2:]), result


def _as_columns(x, b, op: str):
  """b as matrices of columns for x's matrices (..., m, n), and whether it was vectors: b 1-D or of shape x.shape[:-1],
  as torch's rule says."""
  b = x._operand_or_number(b)
  vector = b.ndim == 1 or (b.ndim == x.ndim - 1 and b.shape == x.shape[:-1])
  columns = b.unsqueeze(-1) if vector else b
  if x.ndim >= 2 and (columns.ndim < 2 or columns.shape[-2] != x.shape[-2]):
    raise ShapeMismatch(f"{op} needs b of shape (..., {x.shape[-2]}) or (..., {x.shape[-2]}, k) for matrices {x.shape}, got {b.shape}")
  return columns, vector


def solve(x, b, left: bool = True):
  """y with x @ y = b: x square matrices (..., n, n), b vectors (of shape x.shape[:-1], or 1-D, as torch's rule says) or
  matrices (..., n, k), batch dims broadcast; with left=False, y @ x = b for matrices b (..., k, n). A singular x raises
  numpy's LinAlgError when computed."""
  if not left:
    b = x._operand_or_number(b)
    if b.ndim < 2: raise ShapeMismatch(f"solve with left=False needs b of shape (..., k, n) for matrices {x.shape}, got {b.shape}")
    return _transposed(solve(_transposed(x), _transposed(b)))
  columns, vector = _as_columns(x, b, "solve")
  a, columns, result = _paired(x, columns, "solve")

  def gradient(a, b, y, g):
    grad_b = solve(_transposed(a), g)
    return -(grad_b @ _transposed(y)), grad_b
  y = _factorized("solve", gradient, a, columns).cast(result)
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


def _triangle_read(x, uplo: str):
  """x, or its transpose where the routines (which read the lower triangle) are to read the upper one (UPLO "U")."""
  if not isinstance(uplo, str) or uplo.upper() not in ("L", "U"): raise ValueError(f"UPLO must be 'L' or 'U', got {uplo!r}")
  return x if uplo.upper() == "L" else _transposed(x)


def eigh(x, uplo: str = "L"):
  """(eigenvalues ascending, eigenvectors as columns) of symmetric matrices, read from the lower triangle (the upper
  with uplo "U")."""
  if uplo != "L": return eigh(_triangle_read(x, uplo), "L")
  def gradient(a, packed, g):
    values, vectors = packed[..., 0, :], packed[..., 1:, :]
    inner = _diagonal_matrix(g[..., 0, :]) + _reciprocal_differences(values) * (_transposed(vectors) @ g[..., 1:, :])
    grad = vectors @ inner @ _transposed(vectors)
    return 0.5 * (grad + _transposed(grad))
  packed = _factorized("eigh", gradient, _matrices(x, "eigh"))
  return _as_input(x, packed[..., 0, :]), _as_input(x, packed[..., 1:, :])


def _svd_gradient(u, s, vh, grad_u, grad_s, grad_vh):
  """The gradient of the reduced decomposition A = U diag(S) Vh from those of its three parts."""
  rows, cols = u.shape[-2], vh.shape[-1]
  grad_v, v, between = _transposed(grad_vh), _transposed(vh), _reciprocal_differences(s * s)
  from_u = between * (_transposed(u) @ grad_u - _transposed(grad_u) @ u)
  from_v = between * (vh @ grad_v - _transposed(grad_v) @ v)
  grad = u @ (from_u * s.unsqueeze(-2) + _diagonal_matrix(grad_s) + s.unsqueeze(-1) * from_v) @ vh
  inverse_s = _reciprocal_where(s, s != 0)
  if rows > cols: grad = grad + ((grad_u - u @ (_transposed(u) @ grad_u)) * inverse_s.unsqueeze(-2)) @ vh
  if cols > rows: grad = grad + u @ (inverse_s.unsqueeze(-1) * (_transposed(grad_v) - (_transposed(grad_v) @ v) @ vh))
  return grad


def _full_svd_parts(packed, rows, cols):
  """U (rows x rows), S and Vh (cols x cols) of graph/lapack.py's svd_full packing."""
  k, batch = min(rows, cols), packed.shape[:-1]
  u, s, vh = packed[..., :rows * rows], packed[..., rows * rows:rows * rows + k], packed[..., rows * rows + k:]
  return u.reshape(batch + (rows, rows)), s, vh.reshape(batch + (cols, cols))


def svd(x, full_matrices: bool = False):
  """(U, S, Vh) with x = U diag(S) Vh, S descending: the reduced decomposition, or with full_matrices the full one
  (U rows x rows, Vh cols x cols), whose extra vectors get no gradient, as torch's (any basis of their space would do)."""
  a = _matrices(x, "svd", square=False)
  rows, cols = a.shape[-2:]
  k = min(rows, cols)
  if full_matrices and rows != cols:
    def full_gradient(a, packed, g):
      u, s, vh = _full_svd_parts(packed, rows, cols)
      grad_u, grad_s, grad_vh = _full_svd_parts(g, rows, cols)
      return _svd_gradient(u[..., :k], s, vh[..., :k, :], grad_u[..., :k], grad_s, grad_vh[..., :k, :])
    return tuple(_as_input(x, part) for part in _full_svd_parts(_factorized("svd_full", full_gradient, a), rows, cols))

  def gradient(a, packed, g):
    parts = _transposed(packed[..., :rows]), packed[..., rows], packed[..., rows + 1:]
    return _svd_gradient(*parts, _transposed(g[..., :rows]), g[..., rows], g[..., rows + 1:])
  packed = _factorized("svd", gradient, a)
  return _as_input(x, _transposed(packed[..., :rows])), _as_input(x, packed[..., rows]), _as_input(x, packed[..., rows + 1:])


def _qr_gradient_of_tall(q, r, grad_q, grad_r):
  """The gradient of A = Q R for A with at least as many rows as columns: (gQ + Q sym(M)) R^-T, with M = R gR^T - gQ^T Q
  and sym(M) its lower triangle mirrored."""
  from nbgrad.dense_solve import _triangular
  m = r @ _transposed(grad_r) - _transposed(grad_q) @ q
  below = m.tril(-1)
  # by substitution with R: a zero on its diagonal (a rank-deficient A) gives infs and NaNs, as torch's, not an error
  return _transposed(_triangular(r, _transposed(grad_q + q @ (below + _transposed(below) + _diagonal_matrix(_diagonal(m)))), upper=True, unit=False))


def qr(x, mode: str = "reduced"):
  """(Q, R) with x = Q R, Q's columns orthonormal and R upper triangular: the reduced decomposition, or with mode
  "complete" Q square (rows x rows), which has no gradient for matrices of more rows than columns (as torch's), or
  with mode "r" R alone, Q empty (shape (0,)), and no gradient (it would need Q, as torch says)."""
  if mode not in ("reduced", "complete", "r"): raise ValueError(f"qr mode must be 'reduced', 'complete' or 'r', got {mode!r}")
  a = _matrices(x, "qr", square=False)
  rows, cols = a.shape[-2:]
  if mode == "complete" and rows > cols:
    def no_gradient(a, packed, g):
      raise NotImplementedError(f"the complete QR decomposition of {rows}x{cols} matrices (more rows than columns) has no gradient, as torch's")
    packed = _factorized("qr_complete", no_gradient, a)
    return _as_input(x, _transposed(packed[..., :rows])), _as_input(x, packed[..., rows:])
  if mode == "r":
    def r_alone_gradient(a, packed, g):
      raise RuntimeError("qr with mode='r' has no gradient: it depends on Q, which that mode does not keep (as torch's); use mode='reduced'")
    r = _as_input(x, _factorized("qr", r_alone_gradient, a)[..., rows:])
    return r.new_zeros(0), r

  def gradient(a, packed, g):
    q, r = _transposed(packed[..., :rows]), packed[..., rows:]
    grad_q, grad_r = _transposed(g[..., :rows]), g[..., rows:]
    if a.shape[-1] <= rows: return _qr_gradient_of_tall(q, r, grad_q, grad_r)
    # wide: A = [X | Y] with X square, R = [U | V]; X's part as a tall one, Y's from Q
    rest, grad_rest = a[..., rows:], grad_r[..., rows:]
    square = _qr_gradient_of_tall(q, r[..., :rows], grad_q + rest @ _transposed(grad_rest), grad_r[..., :rows])
    return square.cat(q @ grad_rest, dim=-1)
  packed = _factorized("qr", gradient, a)
  return _as_input(x, _transposed(packed[..., :rows])), _as_input(x, packed[..., rows:])


def _kept_singular_values(s, shape, rtol=None, atol=None):
  """Where the singular values s count as nonzero: above atol and above rtol times the largest (rtol by default
  max(rows, cols) * the float type's epsilon, as numpy's and torch's, or 0 where atol above 0 is given, as torch's)."""
  default = max(shape[-2:]) * (2.0 ** -52 if s.dtype == dtypes.float64 else 2.0 ** -23)
  if atol is None: return s > s.max(-1, keepdim=True) * (default if rtol is None else rtol)
  atol = s._operand_or_number(atol).cast(s.dtype).unsqueeze(-1)   # a number, or one per matrix
  return s > (s.max(-1, keepdim=True) * ((atol > 0).where(0.0, default) if rtol is None else rtol)).maximum(atol)


def _pseudo_inverse(a, rtol=None, atol=None, values=None):
  """The pseudo-inverse of float matrices a from their reduced SVD, singular values at most atol or rtol times the
  largest counted as 0, and which ones count; values: other matrices whose pseudo-inverse a gets, as if it were a
  (pinv's hermitian a read from one triangle). Its gradient is the pseudo-inverse's own (Golub and Pereyra's
  differential, which holds while the rank stays): -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A). Through the
  SVD's gradient, whose terms for repeated singular values are left out, pinv(diag(2, 2, 5))'s gradient came out
  wrong."""
  m = (a if values is None else values).detach()
  u, s, vh = svd(m)
  kept = _kept_singular_values(s, a.shape, rtol, atol)
  p = _transposed(vh) @ (_reciprocal_where(s, kept).unsqueeze(-1) * _transposed(u))

  def gradient(_, p, g):
    pt, gt = _transposed(p), _transposed(g)
    return -(pt @ g @ pt) + (gt - m @ (p @ gt)) @ (p @ pt) + (pt @ p) @ (gt - (gt @ p) @ m)
  return F.custom(lambda _: p.lazydata, gradient, a), kept, s


def pinv(x, rtol=None, atol=None, hermitian: bool = False):
  """The Moore-Penrose pseudo-inverse from the reduced SVD: singular values at most atol or rtol times the largest
  count as 0 (rtol by default max(rows, cols) * the float type's epsilon, as numpy's and torch's). hermitian: x is
  symmetric and read from its lower triangle, as torch's (whose gradient is then the plain one's)."""
  a = _matrices(x, "pinv", square=hermitian)
  return _as_input(x, _pseudo_inverse(a, rtol, atol, a.tril() + _transposed(a.tril(-1)) if hermitian else None)[0])


def pinverse(x, rcond: float = 1e-15):
  """torch.pinverse: pinv with singular values at most rcond times the largest counted as 0."""
  return pinv(x, rcond)


LeastSquares = namedtuple("LeastSquares", "solution residuals rank singular_values")


LSTSQ_DRIVERS = (None, "gels", "gelsy", "gelsd", "gelss")


def lstsq(x, b, rcond=None, driver=None):
  """torch.linalg.lstsq: the least-squares solutions X of x X = b of least norm (x (..., m, n), b (..., m, k) or
  vectors (..., m), batch dims broadcast) from the pseudo-inverse, and x's ranks (int64; singular values above rcond
  times the largest count, rcond by default max(m, n) * epsilon). Every driver gives that least-norm solution; the
  other outputs are the driver's, as torch's: residuals (the squared errors of each column, for more rows than
  columns, and with "gelsd" and "gelss" only when every matrix has full rank, which is computed to tell) with
  "gels", "gelsd" and "gelss"; singular_values with "gelsd" and "gelss"; no rank with "gels". The default on the
  CPU, "gelsy", gives the ranks alone."""
  if driver not in LSTSQ_DRIVERS: raise ValueError(f"lstsq driver must be one of {LSTSQ_DRIVERS}, got {driver!r}")
  columns, vector = _as_columns(x, b, "lstsq")
  compute, result = _float_types(x, columns)
  a, columns = _matrices(x, "lstsq", square=False).cast(compute), columns.cast(compute)
  inverse, kept, values = _pseudo_inverse(a, rcond)
  solution = inverse @ columns
  empty, rank = kept.new_zeros(0).cast(result), kept.cast(dtypes.int64).sum(-1)
  rows, cols = a.shape[-2:]
  residuals = empty
  if driver in ("gels", "gelsd", "gelss") and rows > cols and (driver == "gels" or (rank.numpy() == cols).all()):
    residuals = (a @ solution - columns).square().sum(-2).cast(result)
  singular_values = values.cast(result) if driver in ("gelsd", "gelss") else empty
  if driver == "gels": rank = empty.cast(dtypes.int64)
  solution = solution.cast(result)
  return LeastSquares(solution.squeeze(-1) if vector else solution, residuals, rank, singular_values)


def eigvalsh(x, uplo: str = "L"):
  """The eigenvalues (ascending) of symmetric matrices (read from the lower triangle, or the upper with uplo "U"), with
  eigh's gradient."""
  return eigh(x, uplo)[0]


def svdvals(x):
  """The singular values (descending) of matrices (..., m, n), with svd's gradient."""
  return svd(x)[1]


def eig(x):
  """Not computed: a general real matrix's eigenvalues and eigenvectors may be complex, which nbgrad cannot hold."""
  raise NotImplementedError(f"eig and eigvals of {x.shape} matrices: their results may be complex, and nbgrad has no complex dtype "
                            "(eigh and eigvalsh give those of symmetric matrices)")


def matrix_exp(x):
  """The matrix exponentials of square matrices (..., n, n), by scaling and squaring a Pade approximant; the gradient
  in direction G is the top right block of exp([[x^T, G], [0, x^T]])."""
  def gradient(a, y, g):
    n, transposed = a.shape[-1], _transposed(a)
    block = transposed.cat(g, dim=-1).cat(g.zeros_like().cat(transposed, dim=-1), dim=-2)
    return matrix_exp(block)[..., :n, n:]
  return _as_input(x, _factorized("exp", gradient, _matrices(x, "matrix_exp")))


def _as_float(x): return x if dtypes.is_float(x.dtype) else x.cast(dtypes.float32)


def vector_norm(x, ord=2, dim=None, keepdim: bool = False):
  """torch.linalg.vector_norm: the ord-norm of the elements over dim (all of them by default); ints count as float32."""
  if isinstance(ord, str): raise ValueError(f"vector_norm ord must be a number (2, 1, inf, -inf, 0 or another), got {ord!r}")
  return _as_float(x).norm(ord, dim, keepdim)


def matrix_norm(x, ord="fro", dim=(-2, -1), keepdim: bool = False):
  """torch.linalg.matrix_norm over the two dims dim: ord "fro", "nuc" (the sum of the singular values), 2 and -2 (the
  largest and smallest), inf and -inf (the largest and smallest sum of a row's magnitudes), 1 and -1 (of a column's)."""
  from nbgrad.tensor import resolve_axis
  if x.ndim < 2: raise ShapeMismatch(f"matrix_norm needs matrices (..., m, n), got shape {x.shape}")
  if len(dim) != 2 or resolve_axis(dim[0], x.ndim) == resolve_axis(dim[1], x.ndim): raise ValueError(f"matrix_norm needs two distinct dims, got {dim}")
  rows, cols = resolve_axis(dim[0], x.ndim), resolve_axis(dim[1], x.ndim)
  x, kept_shape = _as_float(x), tuple(1 if d in (rows, cols) else n for d, n in enumerate(x.shape))
  if ord == "fro": return x.norm("fro", (rows, cols), keepdim)
  sizes = (x.shape[rows], x.shape[cols])
  if ord in (1, -1, math.inf, -math.inf):
    summed, extreme = (rows, cols) if ord in (1, -1) else (cols, rows)
    sums = x.abs().sum(summed, keepdim=True)
    if x.shape[extreme] == 0: norm = _extreme_of_none(ord, x, sizes, kept_shape)
    else: norm = sums.max(extreme, keepdim=True) if ord > 0 else sums.min(extreme, keepdim=True)
  elif ord in (2, -2) and 0 in sizes: norm = _extreme_of_none(ord, x, sizes, kept_shape)
  elif ord in ("nuc", 2, -2):
    s = svdvals(x.permute([d for d in range(x.ndim) if d not in (rows, cols)] + [rows, cols]))
    # the largest or smallest as a max or min, whose gradient tied values share evenly (as torch's), not a pick of one
    norm = (s.sum(-1) if ord == "nuc" else s.max(-1) if ord == 2 else s.min(-1)).reshape(kept_shape)
  else: raise ValueError(f"matrix_norm ord must be 'fro', 'nuc', 2, -2, 1, -1, inf or -inf, got {ord!r}")
  return norm if keepdim else norm.reshape(tuple(n for d, n in enumerate(x.shape) if d not in (rows, cols)))


def _extreme_of_none(ord, x, sizes, shape):
  """torch's matrix norm where there are no sums (or singular values) to pick from: the largest is 0, the smallest an
  IndexError."""
  if ord < 0: raise IndexError(f"matrix_norm ord={ord} is the smallest of no values for matrices of {sizes[0]} x {sizes[1]}")
  return x.new_zeros(shape)


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
