"""inverse, det, slogdet, logdet and solve against torch.linalg (CPU, float64): values and gradients, batches and
broadcasting, views, every float dtype, ints, and singular or misshapen matrices."""
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes
from against_torch import grads_match

rng = np.random.default_rng(0)
pytestmark = pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")


def well_conditioned(shape):
  """Random matrices plus n on the diagonal: far from singular, so float32 keeps most of its digits."""
  n = shape[-1]
  return rng.standard_normal(shape) + n * np.eye(n)


OPS = {
  "inverse": (lambda t: t.inverse(), torch.linalg.inv),
  "det": (lambda t: t.det(), torch.linalg.det),
  "slogdet_sign": (lambda t: t.slogdet()[0], lambda t: torch.linalg.slogdet(t)[0]),
  "slogdet_log": (lambda t: t.slogdet()[1], lambda t: torch.linalg.slogdet(t)[1]),
  "logdet": (lambda t: t.logdet(), torch.logdet),
}


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 3, 3), (1, 1), (5, 5)], ids=str)
@pytest.mark.parametrize("op", list(OPS))
def test_factorizations_and_gradients_as_torch(op, shape):
  ours_fn, torch_fn = OPS[op]
  values = well_conditioned(shape)
  if op == "slogdet_sign": values[..., 0, :] *= -1   # negative determinants too
  ours, theirs = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  out, expected = ours_fn(ours), torch_fn(theirs)
  assert out.shape == tuple(expected.shape) and out.dtype == dtypes.float64
  np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
  if op == "slogdet_sign": return   # flat: no gradient
  weights = rng.standard_normal(tuple(expected.shape))
  (out * Tensor(weights)).sum().backward()
  (expected * torch.tensor(weights)).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("a_shape,b_shape", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3)), ((2, 3, 3), (3, 4)),
                                             ((1, 3, 3), (4, 3, 1)), ((4, 4), (2, 5, 4, 2))], ids=str)
def test_solve_and_its_gradients_as_torch(a_shape, b_shape):
  a, b = well_conditioned(a_shape), rng.standard_normal(b_shape)
  ours_a, ours_b = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  theirs_a, theirs_b = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
  out, expected = ours_a.solve(ours_b), torch.linalg.solve(theirs_a, theirs_b)
  assert out.shape == tuple(expected.shape)
  np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
  weights = rng.standard_normal(tuple(expected.shape))
  (out * Tensor(weights)).sum().backward()
  (expected * torch.tensor(weights)).sum().backward()
  np.testing.assert_allclose(ours_a.grad.numpy(), theirs_a.grad.numpy(), rtol=1e-9, atol=1e-12)
  np.testing.assert_allclose(ours_b.grad.numpy(), theirs_b.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "int32"])
def test_other_dtypes_compute_in_float32(name):
  values = np.array([[4.0, 1.0], [2.0, 3.0]])
  t = Tensor(values).cast(getattr(dtypes, name))
  result_dtype = dtypes.float32 if name == "int32" else getattr(dtypes, name)
  tolerance = {"float32": 1e-6, "float16": 1e-3, "bfloat16": 1e-2, "int32": 1e-6}[name]
  assert t.inverse().dtype == t.det().dtype == result_dtype
  np.testing.assert_allclose(t.inverse().cast(dtypes.float64).numpy(), np.linalg.inv(values), rtol=tolerance)
  np.testing.assert_allclose(t.det().cast(dtypes.float64).numpy(), 10.0, rtol=tolerance)
  np.testing.assert_allclose(t.solve(Tensor([1.0, 2.0])).numpy(), np.linalg.solve(values, [1.0, 2.0]), rtol=tolerance)


def test_views_empty_batches_and_big_determinants():
  values = well_conditioned((3, 3))
  np.testing.assert_allclose(Tensor(values).T.inverse().numpy(), np.linalg.inv(values.T), rtol=1e-12)
  np.testing.assert_allclose(Tensor(values)[::-1].det().numpy(), np.linalg.det(values[::-1]), rtol=1e-12)
  assert Tensor.zeros(0, 3, 3).inverse().shape == (0, 3, 3) and Tensor.zeros(2, 0, 0).det().tolist() == [1.0, 1.0]
  big = np.eye(200) * 100.0   # det = 1e400: past float64, slogdet keeps it
  sign, log = Tensor(big).slogdet()
  assert sign.item() == 1.0 and abs(log.item() - 200 * np.log(100.0)) < 1e-9
  assert Tensor(big).det().item() == np.inf


def test_singular_and_misshapen_matrices_raise():
  singular = Tensor([[1.0, 2.0], [2.0, 4.0]])
  assert singular.det().item() == 0.0 and singular.logdet().item() == -np.inf
  with pytest.raises(np.linalg.LinAlgError, match="inv of 2x2 matrices"): singular.inverse().numpy()
  with pytest.raises(np.linalg.LinAlgError, match="solve"): singular.solve(Tensor([1.0, 1.0])).numpy()
  assert np.isnan(Tensor([[0.0, 1.0], [1.0, 0.0]]).logdet().item())   # det -1
  with pytest.raises(ValueError, match="square matrices"): Tensor.zeros(2, 3).inverse()
  with pytest.raises(ValueError, match="square matrices"): Tensor.zeros(3).det()
  with pytest.raises(ValueError, match="solve needs b"): Tensor.eye(3).solve(Tensor.zeros(2))


@pytest.mark.parametrize("op", ["slogdet", "logdet", "qr"])
def test_gradients_at_singular_matrices_are_infinite_as_torch(op):
  # a batch of a singular matrix and an invertible one: infs and NaNs for the first (where, depends on the order of
  # the substitutions), the exact gradient for the second
  values = np.stack([[[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 0.0]] if op == "qr" else
                     [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], well_conditioned((3, 3))])
  losses = {"slogdet": (lambda t: t.slogdet()[1], lambda t: torch.linalg.slogdet(t)[1]),
            "logdet": (lambda t: t.logdet(), lambda t: torch.logdet(t)),
            "qr": (lambda t: sum(part.sum() for part in t.qr()), lambda t: sum(part.sum() for part in torch.linalg.qr(t)))}[op]
  ours, theirs = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  losses[0](ours).sum().backward()
  losses[1](theirs).sum().backward()
  expected = theirs.grad.numpy()
  assert not np.isfinite(expected[0]).all() and not np.isfinite(ours.grad.numpy()[0]).all()
  np.testing.assert_allclose(ours.grad.numpy()[1], expected[1], rtol=1e-9)


# ---- cholesky, eigh, svd, qr: losses that do not depend on the sign each vector may take
def symmetric_positive(shape):
  m = rng.standard_normal(shape)
  return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def matches_torch(ours_loss, torch_loss, values, tol=1e-9):
  ours, theirs = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  out, expected = ours_loss(ours), torch_loss(theirs)
  np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=tol, atol=1e-12)
  out.sum().backward()
  expected.sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=tol, atol=1e-11)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (1, 1)], ids=str)
def test_cholesky_as_torch(shape):
  weights = rng.standard_normal(shape)
  matches_torch(lambda t: t.cholesky() * Tensor(weights), lambda t: torch.linalg.cholesky(t) * torch.tensor(weights), symmetric_positive(shape))


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)], ids=str)
def test_eigh_as_torch(shape):
  weights, scales = rng.standard_normal(shape), rng.standard_normal(shape[-1])
  def loss(values, vectors, lib):   # V diag(c) V^T and the values: the same whichever sign each vector takes
    return (vectors * lib(scales)) @ vectors.transpose(-1, -2) * lib(weights) + values.unsqueeze(-1)
  matches_torch(lambda t: loss(*t.eigh(), Tensor), lambda t: loss(*torch.linalg.eigh(t), torch.tensor), symmetric_positive(shape))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 4, 2)], ids=str)
def test_svd_as_torch(shape):
  rows, cols = shape[-2:]
  weights, scales = rng.standard_normal(shape), rng.standard_normal(min(rows, cols))
  def loss(u, s, v, lib):   # U diag(c s) V^T and the values: the same whichever sign each pair of vectors takes
    return ((u * (lib(scales) * s).unsqueeze(-2)) @ v.transpose(-2, -1)) * lib(weights) + s.sum(-1, keepdim=True).unsqueeze(-1)
  matches_torch(lambda t: loss(*t.svd(), Tensor), lambda t: loss(*t.svd(), torch.tensor), rng.standard_normal(shape))   # torch's Tensor.svd: V


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 4, 2)], ids=str)
def test_qr_as_torch(shape):
  rows, cols = shape[-2:]
  k = min(rows, cols)
  wq, wr = rng.standard_normal(shape[:-2] + (rows, k)), rng.standard_normal(shape[:-2] + (k, cols))
  matches_torch(lambda t: (lambda q, r: (q * Tensor(wq)).sum() + (r * Tensor(wr)).sum())(*t.qr()),
                lambda t: (lambda q, r: (q * torch.tensor(wq)).sum() + (r * torch.tensor(wr)).sum())(*torch.linalg.qr(t)), rng.standard_normal(shape))


def test_repeated_values_give_the_values_finite_gradients():
  """An identity matrix's singular values and eigenvalues all repeat: a loss of the values alone still has its
  gradient (the terms dividing by their differences drop out)."""
  for values in (lambda t: t.svd()[1], lambda t: t.eigh()[0]):
    t = Tensor(np.eye(3), requires_grad=True)
    values(t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), np.eye(3), atol=1e-12)


def test_a_nan_spreads_through_inverses_and_solutions_and_makes_no_cholesky_factor_as_torch():
  """LAPACK left some entries of such a matrix's inverse finite; the other matrices of the batch are unaffected."""
  a = np.stack([np.array([[np.nan, 1.0], [0.0, 1.0]]), np.array([[2.0, 1.0], [1.0, 3.0]])])
  b = np.ones((2, 2, 1))
  for ours, theirs in [(Tensor(a).inverse(), torch.linalg.inv(torch.tensor(a))),
                       (Tensor(a).solve(Tensor(b)), torch.linalg.solve(torch.tensor(a), torch.tensor(b)))]:
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
  with pytest.raises(np.linalg.LinAlgError, match="NaN"): Tensor(a).cholesky().numpy()


def test_factorizations_refuse_and_raise():
  with pytest.raises(np.linalg.LinAlgError, match="cholesky"): Tensor([[1.0, 2.0], [2.0, 1.0]]).cholesky().numpy()
  with pytest.raises(ValueError, match="square matrices"): Tensor.zeros(2, 3).eigh()
  with pytest.raises(ValueError, match=r"matrices \(\.\.\., m, n\)"): Tensor.zeros(3).svd()
  with pytest.raises(ValueError, match="'reduced', 'complete' or 'r'"): Tensor.zeros(3, 2).qr(mode="full")
  u, s, v = Tensor(np.eye(2, dtype=np.float32)).cast(dtypes.float16).svd()
  assert u.dtype == s.dtype == v.dtype == dtypes.float16 and s.tolist() == [1.0, 1.0]


@pytest.mark.filterwarnings("ignore::UserWarning")   # torch's: its Tensor.cholesky is deprecated
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4)], ids=str)
def test_svd_without_vectors_and_cholesky_upper_as_torch_s_tensor_methods(shape):
  """compute_uv=False: the values and U, V of zeros (m x m, n x n), as torch's; cholesky(upper=True) is L^T."""
  values = rng.standard_normal(shape)
  got, expected = Tensor(values).svd(compute_uv=False), torch.tensor(values).svd(compute_uv=False)
  for a, b in zip(got, expected): np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)
  square = values[..., :3, :3] @ np.swapaxes(values[..., :3, :3], -1, -2) + 3 * np.eye(3)
  np.testing.assert_allclose(Tensor(square).cholesky(upper=True).numpy(), torch.tensor(square).cholesky(upper=True).numpy(), atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 4, 4)], ids=str)
def test_pinv_as_torch(shape):
  weights = rng.standard_normal(shape[:-2] + shape[-2:][::-1])
  matches_torch(lambda t: t.pinv() * Tensor(weights), lambda t: torch.linalg.pinv(t) * torch.tensor(weights), rng.standard_normal(shape))
  rank_one = np.outer([1.0, 2.0, 3.0], [1.0, -1.0])   # a singular value below the cutoff counts as 0
  np.testing.assert_allclose(Tensor(rank_one).pinv().numpy(), np.linalg.pinv(rank_one), atol=1e-12)


@pytest.mark.parametrize("name", ["repeated_values", "orthogonal", "scaled_orthogonal_wide", "rank_deficient_tall"])
def test_pinv_and_lstsq_gradients_with_repeated_singular_values_as_torch(name):
  """The pseudo-inverse's own gradient, which the SVD's (its terms for repeated singular values left out) missed."""
  q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
  values = {"repeated_values": np.diag([2.0, 2.0, 5.0]), "orthogonal": q, "scaled_orthogonal_wide": 3 * q[:3],
            "rank_deficient_tall": np.outer(rng.standard_normal(5), rng.standard_normal(3))}[name]
  weights = rng.standard_normal(values.shape[::-1])
  matches_torch(lambda t: t.pinv() * Tensor(weights), lambda t: torch.linalg.pinv(t) * torch.tensor(weights), values)
  if name != "rank_deficient_tall":   # torch's gelsy solves a rank-deficient system otherwise (not the least-norm solution)
    b = rng.standard_normal((values.shape[0], 2))
    matches_torch(lambda t: t.lstsq(Tensor(b)).solution, lambda t: torch.linalg.lstsq(t, torch.tensor(b)).solution, values)


@pytest.mark.parametrize("n", [0, 1, 2, 5, -1, -3])
def test_matrix_power_as_torch(n):
  values = well_conditioned((2, 3, 3)) / 3
  matches_torch(lambda t: t.matrix_power(n), lambda t: torch.linalg.matrix_power(t, n), values)
  with pytest.raises(ValueError, match="square"): Tensor.zeros(2, 3).matrix_power(2)


# ---- solves through factors, lstsq, matrix_exp, norms: every output against torch's, and the gradients of a weighted
# sum of the float ones to every input
def lower_factor(shape):
  return np.linalg.cholesky(symmetric_positive(shape))


SOLVES = {
  "lu": (lambda a: tuple(a.lu()), lambda a: tuple(torch.linalg.lu(a)), [(4, 4)]),
  "lu_factor": (lambda a: tuple(a.lu_factor()), lambda a: tuple(torch.linalg.lu_factor(a)), [(4, 4)]),
  "lu_solve": (lambda a, b: b.lu_solve(*a.lu_factor()), lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b), [(4, 4), (4, 2)]),
  "solve_triangular_upper": (lambda a, b: a.solve_triangular(b, upper=True), lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), [(4, 4), (4, 2)]),
  "solve_triangular_lower_unit": (lambda a, b: a.solve_triangular(b, upper=False, unitriangular=True),
                                  lambda a, b: torch.linalg.solve_triangular(a, b, upper=False, unitriangular=True), [(4, 4), (4, 2)]),
  "solve_triangular_right": (lambda a, b: a.solve_triangular(b, upper=False, left=False),
                             lambda a, b: torch.linalg.solve_triangular(a, b, upper=False, left=False), [(4, 4), (2, 4)]),
  "triangular_solve_transposed": (lambda a, b: tuple(b.triangular_solve(a, transpose=True)),
                                  lambda a, b: tuple(torch.triangular_solve(b, a, transpose=True)), [(4, 4), (4, 2)]),
  "cholesky_solve": (lambda l, b: b.cholesky_solve(l), lambda l, b: torch.cholesky_solve(b, l), ["factor", (4, 2)]),
  "cholesky_solve_upper": (lambda l, b: b.cholesky_solve(l.transpose(-1, -2), upper=True),
                           lambda l, b: torch.cholesky_solve(b, l.mT, upper=True), ["factor", (4, 2)]),
  "cholesky_inverse": (lambda l: l.cholesky_inverse(), torch.cholesky_inverse, ["factor"]),
  "cholesky_inverse_upper": (lambda l: l.transpose(-1, -2).cholesky_inverse(upper=True), lambda l: torch.cholesky_inverse(l.mT, upper=True), ["factor"]),
  "matrix_exp": (lambda a: a.matrix_exp(), torch.linalg.matrix_exp, [(4, 4)]),
  "lstsq": (lambda a, b: a.lstsq(b).solution, lambda a, b: torch.linalg.lstsq(a, b).solution, [(6, 4), (6, 2)]),
  "lstsq_wide": (lambda a, b: a.transpose(-1, -2).lstsq(b).solution, lambda a, b: torch.linalg.lstsq(a.mT, b).solution, [(6, 4), (4, 2)]),
  "pinverse": (lambda a: a.pinverse(), torch.pinverse, [(6, 4)]),
  "svdvals": (lambda a: a.svdvals(), torch.linalg.svdvals, [(6, 4)]),
  "eigvalsh": (lambda a: a.eigvalsh(), torch.linalg.eigvalsh, ["factor"]),
}


@pytest.mark.parametrize("batch", [(), (2,), (0,), (2, 1)], ids=str)
@pytest.mark.parametrize("op", list(SOLVES))
def test_solves_and_matrix_functions_as_torch(op, batch):
  """Batches (empty ones too) of the table's shapes; the first input broadcasts against the second's batch (but for
  lstsq, where torch has b no more dims than A)."""
  ours_fn, torch_fn, shapes = SOLVES[op]
  second_batch = batch if op.startswith("lstsq") else batch[:1] + batch
  arrays = [lower_factor(batch + (4, 4)) if shape == "factor" else well_conditioned(batch + shape) if shape == (4, 4) else
            rng.standard_normal((batch if i == 0 else second_batch) + shape) for i, shape in enumerate(shapes)]
  grads_match(ours_fn, torch_fn, *arrays)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 2), (1, 1)], ids=str)
def test_lu_of_any_shape_as_torch(shape):
  grads_match(lambda a: tuple(a.lu()), lambda a: tuple(torch.linalg.lu(a)), rng.standard_normal(shape))
  grads_match(lambda a: tuple(a.lu_factor()), lambda a: tuple(torch.linalg.lu_factor(a)), rng.standard_normal(shape))


@pytest.mark.parametrize("scale", [1e-3, 1.0, 30.0])
def test_matrix_exp_of_small_and_large_norms_as_torch(scale):
  """Large norms take several squarings; the relative error grows with them, as torch's does."""
  values = rng.standard_normal((2, 4, 4)) * scale
  grads_match(lambda a: a.matrix_exp(), torch.linalg.matrix_exp, values, tol=1e-9 * max(1.0, scale))
  assert Tensor(np.zeros((3, 3))).matrix_exp().tolist() == np.eye(3).tolist()
  assert np.isnan(Tensor([[np.inf, 0.0], [0.0, 1.0]]).matrix_exp().numpy()).all()


def test_lstsq_vectors_ranks_and_rank_deficient_matrices():
  a, b = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5))
  grads_match(lambda a, b: a.lstsq(b).solution, lambda a, b: torch.linalg.lstsq(a, b).solution, a, b)
  result = Tensor(a).lstsq(Tensor(b))
  assert result.rank.tolist() == [3, 3] and result.rank.dtype == dtypes.int64 and result.residuals.shape == (0,)
  rank_one = np.outer([1.0, 2.0, 3.0, 4.0], [1.0, -1.0])   # the least-norm solution, as torch's gelsy gives
  solution = Tensor(rank_one).lstsq(Tensor([1.0, 0.0, 2.0, 1.0]).cast(dtypes.float64))
  np.testing.assert_allclose(solution.solution.numpy(), np.linalg.lstsq(rank_one, [1.0, 0.0, 2.0, 1.0], rcond=None)[0], atol=1e-12)
  assert solution.rank.item() == 1


MATRIX_NORMS = ["fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("ord", MATRIX_NORMS, ids=str)
def test_matrix_norm_as_torch(ord, keepdim):
  values = rng.standard_normal((3, 2, 4))
  grads_match(lambda t: t.matrix_norm(ord, keepdim=keepdim), lambda t: torch.linalg.matrix_norm(t, ord, keepdim=keepdim), values)
  grads_match(lambda t: t.matrix_norm(ord, dim=(2, 0), keepdim=keepdim), lambda t: torch.linalg.matrix_norm(t, ord, dim=(2, 0), keepdim=keepdim), values)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0)], ids=str)
def test_matrix_norms_of_empty_matrices_as_torch(shape):
  """The largest of no sums or singular values is 0, the smallest an IndexError, as torch's."""
  for ord in MATRIX_NORMS:
    try: expected = torch.linalg.matrix_norm(torch.zeros(shape), ord).numpy()
    except IndexError:
      with pytest.raises(IndexError, match="smallest"): Tensor(np.zeros(shape)).matrix_norm(ord)
      continue
    np.testing.assert_array_equal(Tensor(np.zeros(shape)).matrix_norm(ord).numpy(), expected)


def test_norms_over_dim_empty_take_every_dim_as_torch():
  values = np.array([[3.0, 4.0], [0.0, 12.0]])
  for dim in ((), []):
    grads_match(lambda t: t.vector_norm(dim=dim), lambda t: torch.linalg.vector_norm(t, dim=dim), values)
    grads_match(lambda t: t.norm(dim=dim), lambda t: t.norm(dim=dim), values)
  with pytest.raises(ValueError, match="at least 2 dims"): Tensor([3.0, 4.0]).renorm(2, 0, 1.0)


@pytest.mark.parametrize("ord", [2, 1, np.inf, -np.inf, 0, 3.5], ids=str)
def test_vector_norm_as_torch(ord):
  values = rng.standard_normal((3, 4))
  grads_match(lambda t: t.vector_norm(ord), lambda t: torch.linalg.vector_norm(t, ord), values)
  grads_match(lambda t: t.vector_norm(ord, dim=1, keepdim=True), lambda t: torch.linalg.vector_norm(t, ord, dim=1, keepdim=True), values)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)], ids=str)
def test_full_svd_and_complete_qr_of_rectangles(shape):
  """The extra vectors are any orthonormal basis of their space (they differ from torch's by one), and get no
  gradient from svd, as torch's; the complete QR of tall matrices has none at all."""
  rows, cols = shape
  k, values = min(shape), rng.standard_normal(shape)
  u, s, v = Tensor(values).svd(some=False)
  assert u.shape == (rows, rows) and v.shape == (cols, cols)
  np.testing.assert_allclose(u.numpy().T @ u.numpy(), np.eye(rows), atol=1e-12)
  np.testing.assert_allclose(v.numpy().T @ v.numpy(), np.eye(cols), atol=1e-12)
  np.testing.assert_allclose((u.numpy()[:, :k] * s.numpy()) @ v.numpy()[:, :k].T, values, atol=1e-12)
  scales = rng.standard_normal(k)
  def loss(u, s, v, lib): return ((u[:, :k] * (lib(scales) * s)) @ v[:, :k].T).square().sum() + u.sum() * 0 + v.sum() * 0
  matches_torch(lambda t: loss(*t.svd(some=False), Tensor), lambda t: loss(*t.svd(some=False), torch.tensor), values)
  q, r = Tensor(values).qr(mode="complete")
  expected_q, expected_r = torch.linalg.qr(torch.tensor(values), mode="complete")
  np.testing.assert_allclose(q.numpy(), expected_q.numpy(), atol=1e-12)
  np.testing.assert_allclose(r.numpy(), expected_r.numpy(), atol=1e-12)
  t = Tensor(values, requires_grad=True)
  if rows > cols:
    with pytest.raises(NotImplementedError, match="no gradient"): t.qr(mode="complete")[1].sum().backward()
  else: matches_torch(lambda t: t.qr(mode="complete")[0] * 2, lambda t: torch.linalg.qr(t, mode="complete")[0] * 2, values)


@pytest.mark.parametrize("name", ["float32", "int32", "float16"])
def test_new_ops_in_other_dtypes(name):
  values = well_conditioned((3, 3))
  t, reference = Tensor(values).cast(getattr(dtypes, name)), torch.tensor(values if name != "int32" else values.astype(np.int32).astype(np.float64))
  result_dtype = dtypes.float32 if name == "int32" else getattr(dtypes, name)
  tolerance = {"float32": 1e-5, "float16": 1e-2, "int32": 1e-5}[name]
  results = {"lu_factor": (t.lu_factor()[0], torch.linalg.lu_factor(reference)[0]), "matrix_exp": (t.matrix_exp(), torch.linalg.matrix_exp(reference)),
             "solve_triangular": (t.solve_triangular(t, upper=True), torch.linalg.solve_triangular(reference, reference, upper=True)),
             "matrix_norm": (t.matrix_norm(2), torch.linalg.matrix_norm(reference, 2)), "vector_norm": (t.vector_norm(), torch.linalg.vector_norm(reference))}
  for ours, theirs in results.values():
    assert ours.dtype == result_dtype
    np.testing.assert_allclose(ours.cast(dtypes.float64).numpy(), theirs.numpy(), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("op", ["lu_solve", "solve_triangular_right", "cholesky_solve", "matrix_exp", "lstsq"])
def test_float32_gradients_as_torch(op):
  ours_fn, torch_fn, shapes = SOLVES[op]
  arrays = [lower_factor((4, 4)) if shape == "factor" else well_conditioned(shape) if shape == (4, 4) else rng.standard_normal(shape) for shape in shapes]
  grads_match(ours_fn, torch_fn, *[a.astype(np.float32) for a in arrays], tol=1e-4)


def test_views_and_one_by_one_matrices():
  values, b = well_conditioned((4, 4)), rng.standard_normal((2, 4))
  grads_match(lambda a, b: b.T.lu_solve(*a.T.lu_factor()), lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a.mT), b.mT), values, b)
  grads_match(lambda a, b: a[::2, 1:3].solve_triangular(b[:, 1::2].T, upper=True),
                    lambda a, b: torch.linalg.solve_triangular(a[::2, 1:3], b[:, 1::2].mT, upper=True), values, b)
  grads_match(lambda a: a.T.matrix_exp(), lambda a: torch.linalg.matrix_exp(a.mT), values)
  for op in ("lu", "matrix_exp", "cholesky_inverse"):
    grads_match(lambda a: getattr(a, op)(), {"lu": torch.linalg.lu, "matrix_exp": torch.linalg.matrix_exp, "cholesky_inverse": torch.cholesky_inverse}[op], np.array([[2.0]]))


def test_bad_input_raises_when_built():
  with pytest.raises(ValueError, match=r"solve_triangular needs b of shape \(\.\.\., 3, k\) for matrices \(3, 3\), got \(2, 2\)"):
    Tensor.eye(3).solve_triangular(Tensor.zeros(2, 2), upper=True)
  with pytest.raises(ValueError, match=r"\(\.\.\., k, 3\)"): Tensor.eye(3).solve_triangular(Tensor.zeros(3, 2), upper=True, left=False)
  with pytest.raises(ValueError, match="square matrices"): Tensor.zeros(2, 3).solve_triangular(Tensor.zeros(2, 2), upper=True)
  with pytest.raises(ValueError, match="lstsq needs b"): Tensor.zeros(4, 3).lstsq(Tensor.zeros(3))
  with pytest.raises(ValueError, match="pivots of shape"): Tensor.zeros(3, 2).lu_solve(Tensor.eye(3), Tensor([1, 2]))
  with pytest.raises(ValueError, match=r"matrices \(\.\.\., m, n\)"): Tensor.zeros(3).lu()
  with pytest.raises(ValueError, match="square matrices"): Tensor.zeros(2, 3).matrix_exp()
  with pytest.raises(ValueError, match="cholesky_solve needs b"): Tensor.zeros(2).cholesky_solve(Tensor.eye(3))
  with pytest.raises(ValueError, match="matrix_norm ord"): Tensor.eye(3).matrix_norm(3)
  with pytest.raises(ValueError, match="two distinct dims"): Tensor.eye(3).matrix_norm(dim=(1, -1))
  with pytest.raises(ValueError, match="vector_norm ord"): Tensor.eye(3).vector_norm("fro")
  with pytest.raises(NotImplementedError, match="complex"): Tensor.eye(3).eig()
  with pytest.raises(NotImplementedError, match="complex"): Tensor.eye(3).eigvals()
  with pytest.raises(np.linalg.LinAlgError, match="lu_factor"): Tensor.zeros(2, 2).lu_factor()[0].numpy()
  with pytest.raises(ValueError, match="pivots out of range"): Tensor.eye(2).lu_solve(Tensor.eye(2), Tensor([3, 2])).numpy()
  p, l, u = Tensor.zeros(2, 2).lu()   # lu gives the factors of a singular matrix, as torch's
  assert p.tolist() == l.tolist() == [[1.0, 0.0], [0.0, 1.0]] and u.tolist() == [[0.0, 0.0], [0.0, 0.0]]
  singular, ones = [[0.0, 0.0], [0.0, 1.0]], [[1.0], [1.0]]   # a zero on the diagonal: inf, as torch's
  np.testing.assert_array_equal(Tensor(singular).solve_triangular(Tensor(ones), upper=True).numpy(),
                                torch.linalg.solve_triangular(torch.tensor(singular), torch.tensor(ones), upper=True).numpy())


@pytest.mark.parametrize("matrix", [[[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
                                    [[0.0, 0.0], [0.0, 0.0]], [[2.0, 1.0], [1.0, 3.0]], [[5.0]]], ids=["rank1", "rank2", "zero", "invertible", "1x1"])
def test_det_gradient_is_the_cofactor_matrix_also_where_singular(matrix):
  """d det / dA is the matrix of cofactors (the transposed adjugate): det * inv^T raised where A is singular."""
  a = np.array(matrix)
  n = a.shape[0]
  minors = lambda i, j: np.delete(np.delete(a, i, 0), j, 1)
  cofactors = np.array([[(-1) ** (i + j) * (np.linalg.det(minors(i, j)) if n > 1 else 1.0) for j in range(n)] for i in range(n)])
  t = Tensor(a, requires_grad=True)
  t.det().backward()
  np.testing.assert_allclose(t.grad.numpy(), cofactors, atol=1e-12)


@pytest.mark.filterwarnings("ignore::UserWarning")   # torch's: its Tensor.qr(some) is deprecated
def test_torch_keyword_arguments_of_the_factorizations():
  """solve(left=False), eigh and eigvalsh UPLO, pinv atol and hermitian, lstsq driver, qr(some), lu(pivot): values and
  gradients as torch's, and torch's refusals."""
  a, b, s = rng.standard_normal((3, 3)), rng.standard_normal((2, 3)), rng.standard_normal((3, 3))
  symmetric, weights = s + s.T, rng.standard_normal((3, 3))
  grads_match(lambda t: t.solve(Tensor(b), left=False), lambda t: torch.linalg.solve(t, torch.tensor(b), left=False), a)
  grads_match(lambda t: t.eigvalsh(UPLO="U"), lambda t: torch.linalg.eigvalsh(t, UPLO="U"), s)
  np.testing.assert_allclose(Tensor(s).eigh(UPLO="U")[0].numpy(), torch.linalg.eigh(torch.tensor(s), UPLO="U")[0].numpy(), atol=1e-12)
  small = np.diag([1.0, 1e-3, 1e-8])
  for kwargs in ({"atol": 1e-4}, {"atol": 1e-4, "rtol": 1e-2}):
    np.testing.assert_allclose(Tensor(small).pinv(**kwargs).numpy(), torch.linalg.pinv(torch.tensor(small), **kwargs).numpy(), rtol=1e-12)
  np.testing.assert_allclose(Tensor(s).pinv(hermitian=True).numpy(), torch.linalg.pinv(torch.tensor(s), hermitian=True).numpy(), rtol=1e-10)
  grads_match(lambda t: t.pinv(hermitian=True) * Tensor(weights), lambda t: torch.linalg.pinv(t, hermitian=True) * torch.tensor(weights), symmetric)
  np.testing.assert_allclose(Tensor(a).lstsq(Tensor(b.T), driver="gelsd").solution.numpy(),
                             torch.linalg.lstsq(torch.tensor(a), torch.tensor(b.T), driver="gelsd").solution.numpy(), rtol=1e-10)
  tall = rng.standard_normal((4, 2))
  for ours, theirs in [(Tensor(tall).qr(some=False), torch.tensor(tall).qr(some=False)), (Tensor(tall).qr(False), torch.tensor(tall).qr(False))]:
    assert [t.shape for t in ours] == [tuple(t.shape) for t in theirs]
  assert len(Tensor(a).lu(pivot=True)) == 3 and len(Tensor(a).lu_factor(pivot=True)) == 2
  with pytest.raises(RuntimeError, match="without pivoting"): Tensor(a).lu(pivot=False)
  with pytest.raises(ValueError, match="UPLO"): Tensor(a).eigh(UPLO="X")
  with pytest.raises(ValueError, match="driver"): Tensor(a).lstsq(Tensor(b.T), driver="qr")
  with pytest.raises(ValueError, match="left=False"): Tensor(a).solve(Tensor(b[0]), left=False)


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_outputs_of_each_driver_as_torch(driver):
  """residuals (for more rows than columns, and full rank but with gels), rank (not with gels) and singular values
  (gelsd, gelss), batched; a rank-deficient batch gets no residuals but from gels, as torch's."""
  full, b = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))
  deficient = full.copy()
  deficient[1, :, 2] = deficient[1, :, 1]
  for a in (full, deficient):
    if driver == "gels" and a is deficient: continue   # torch's gels assumes full rank (its solution is not the least-norm one)
    ours, theirs = Tensor(a).lstsq(Tensor(b), driver=driver), torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for got, expected in zip(ours, theirs):
      assert got.shape == tuple(expected.shape)
      np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-9, atol=1e-12)


def test_pinv_tolerances_and_uplo_cases_as_torch():
  a = np.diag([3.0, 1.0, 1e-20])
  for atol in (-1.0, 0.5, np.array(0.5), np.array([0.5, 2.0])):
    matrices = a if np.ndim(atol) < 1 else np.stack([a, a])
    theirs = torch.linalg.pinv(torch.tensor(matrices), atol=torch.tensor(atol) if isinstance(atol, np.ndarray) else atol)
    np.testing.assert_allclose(Tensor(matrices).pinv(atol=Tensor(atol) if isinstance(atol, np.ndarray) else atol).numpy(), theirs.numpy())
  s = rng.standard_normal((3, 3))
  np.testing.assert_allclose(Tensor(s).eigvalsh(UPLO="u").numpy(), torch.linalg.eigvalsh(torch.tensor(s), UPLO="u").numpy(), atol=1e-12)


@pytest.mark.parametrize("ord", [2, -2])
def test_matrix_norm_2_shares_the_gradient_of_tied_singular_values_as_torch(ord):
  grads_match(lambda t: t.matrix_norm(ord), lambda t: torch.linalg.matrix_norm(t, ord), np.eye(3))
