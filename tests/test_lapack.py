"""inverse, det, slogdet, logdet and solve against torch.linalg (CPU, float64): values and gradients, batches and
broadcasting, views, every float dtype, ints, and singular or misshapen matrices."""
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes

rng = np.random.default_rng(0)


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
  def loss(u, s, vh, lib):   # U diag(c s) Vh and the values: the same whichever sign each pair of vectors takes
    return ((u * (lib(scales) * s).unsqueeze(-2)) @ vh) * lib(weights) + s.sum(-1, keepdim=True).unsqueeze(-1)
  matches_torch(lambda t: loss(*t.svd(), Tensor), lambda t: loss(*torch.linalg.svd(t, full_matrices=False), torch.tensor), rng.standard_normal(shape))


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


def test_factorizations_refuse_and_raise():
  with pytest.raises(np.linalg.LinAlgError, match="cholesky"): Tensor([[1.0, 2.0], [2.0, 1.0]]).cholesky().numpy()
  with pytest.raises(ValueError, match="square matrices"): Tensor.zeros(2, 3).eigh()
  with pytest.raises(ValueError, match=r"matrices \(\.\.\., m, n\)"): Tensor.zeros(3).svd()
  with pytest.raises(NotImplementedError, match="full_matrices"): Tensor.zeros(3, 2).svd(full_matrices=True)
  with pytest.raises(NotImplementedError, match="reduced"): Tensor.zeros(3, 2).qr(mode="complete")
  u, s, vh = Tensor(np.eye(2, dtype=np.float32)).cast(dtypes.float16).svd()
  assert u.dtype == s.dtype == vh.dtype == dtypes.float16 and s.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 4, 4)], ids=str)
def test_pinv_as_torch(shape):
  weights = rng.standard_normal(shape[:-2] + shape[-2:][::-1])
  matches_torch(lambda t: t.pinv() * Tensor(weights), lambda t: torch.linalg.pinv(t) * torch.tensor(weights), rng.standard_normal(shape))
  rank_one = np.outer([1.0, 2.0, 3.0], [1.0, -1.0])   # a singular value below the cutoff counts as 0
  np.testing.assert_allclose(Tensor(rank_one).pinv().numpy(), np.linalg.pinv(rank_one), atol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 5, -1, -3])
def test_matrix_power_as_torch(n):
  values = well_conditioned((2, 3, 3)) / 3
  matches_torch(lambda t: t.matrix_power(n), lambda t: torch.linalg.matrix_power(t, n), values)
  with pytest.raises(ValueError, match="square"): Tensor.zeros(2, 3).matrix_power(2)
