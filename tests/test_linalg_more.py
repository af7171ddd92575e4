"""qr(mode="r") and lu_solve's left= and adjoint= against torch.linalg (CPU): values, gradients (and the refusal of
one where torch refuses it), batches, broadcasting, views, 0-size batches, 1 x 1 matrices, dtypes and bad input."""
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes
from against_torch import grads_match

rng = np.random.default_rng(0)


def well_conditioned(shape):
  return rng.standard_normal(shape) + shape[-1] * np.eye(shape[-1])


# ---- qr(mode="r"): R alone, Q empty
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 3, 2), (1, 1)], ids=str)
def test_qr_r_alone_as_torch(shape):
  values = rng.standard_normal(shape)
  q, r = Tensor(values).qr(mode="r")
  expected_q, expected_r = torch.linalg.qr(torch.tensor(values), mode="r")
  assert q.shape == tuple(expected_q.shape) == (0,) and q.dtype == dtypes.float64
  assert r.shape == tuple(expected_r.shape)
  np.testing.assert_allclose(r.numpy(), expected_r.numpy(), atol=1e-12)
  np.testing.assert_allclose(r.numpy(), Tensor(values).qr()[1].numpy(), atol=0)   # the reduced decomposition's R


def test_qr_r_alone_has_no_gradient_as_torch():
  t, reference = Tensor(rng.standard_normal((3, 2)), requires_grad=True), torch.tensor(rng.standard_normal((3, 2)), requires_grad=True)
  with pytest.raises(RuntimeError, match="depends on Q"): torch.linalg.qr(reference, mode="r")[1].sum().backward()
  with pytest.raises(RuntimeError, match="mode='r' has no gradient"): t.qr(mode="r")[1].sum().backward()


@pytest.mark.parametrize("name", ["float32", "float16", "int32"])
def test_qr_r_alone_of_other_dtypes(name):
  values = well_conditioned((3, 3))
  q, r = Tensor(values).cast(getattr(dtypes, name)).qr(mode="r")
  result = dtypes.float32 if name == "int32" else getattr(dtypes, name)
  assert q.dtype == r.dtype == result and q.shape == (0,)
  reference = values.astype(np.int32) if name == "int32" else values
  expected = torch.linalg.qr(torch.tensor(reference.astype(np.float64)), mode="r")[1].numpy()
  np.testing.assert_allclose(r.cast(dtypes.float64).numpy(), expected, rtol=2e-2 if name == "float16" else 1e-5, atol=1e-2)


def test_qr_refuses_an_unknown_mode_and_a_vector():
  with pytest.raises(ValueError, match="qr mode must be 'reduced', 'complete' or 'r', got 'full'"): Tensor.zeros(3, 2).qr(mode="full")
  with pytest.raises(ValueError, match=r"matrices \(\.\.\., m, n\)"): Tensor.zeros(3).qr(mode="r")


# ---- lu_solve(b, LU, pivots, left=, adjoint=): A X = b, A^T X = b, X A = b, X A^T = b
MODES = [(True, False), (True, True), (False, False), (False, True)]
MODE_IDS = ["left", "left_adjoint", "right", "right_adjoint"]


def b_shape(left: bool, batch, n=4, k=3):
  return batch + ((n, k) if left else (k, n))


@pytest.mark.parametrize("batch", [(), (2,), (0,)], ids=str)
@pytest.mark.parametrize("left, adjoint", MODES, ids=MODE_IDS)
def test_lu_solve_through_lu_factor_as_torch(left, adjoint, batch):
  """The gradients reach A through lu_factor and b directly; b broadcasts against A's batch."""
  a, b = well_conditioned(batch + (4, 4)), rng.standard_normal(b_shape(left, (2,) + batch if batch else batch))
  grads_match(lambda a, b: b.lu_solve(*a.lu_factor(), left=left, adjoint=adjoint),
              lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, left=left, adjoint=adjoint), a, b)


@pytest.mark.parametrize("left, adjoint", MODES, ids=MODE_IDS)
def test_lu_solve_gradient_to_the_packed_factors_as_torch(left, adjoint):
  """With the factors a leaf: the gradient of L below the diagonal and of U on and above it, in one matrix, as torch's."""
  factors, pivots = torch.linalg.lu_factor(torch.tensor(well_conditioned((2, 4, 4))))
  b = rng.standard_normal(b_shape(left, (2,)))
  grads_match(lambda lu, b: b.lu_solve(lu, Tensor(pivots.numpy()), left=left, adjoint=adjoint),
              lambda lu, b: torch.linalg.lu_solve(lu, pivots, b, left=left, adjoint=adjoint), factors.numpy(), b)


@pytest.mark.parametrize("left, adjoint", MODES, ids=MODE_IDS)
def test_lu_solve_of_views_and_1x1_matrices(left, adjoint):
  a, b = well_conditioned((4, 4)), rng.standard_normal((3, 4))
  b_view = (lambda t: t.T) if left else (lambda t: t)   # b (4, 3) as a transposed view where it is left
  grads_match(lambda a, b: b_view(b).lu_solve(*a.T.lu_factor(), left=left, adjoint=adjoint),
              lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a.mT), b_view(b), left=left, adjoint=adjoint), a, b)
  grads_match(lambda a, b: b.lu_solve(*a.lu_factor(), left=left, adjoint=adjoint),
              lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, left=left, adjoint=adjoint), np.array([[2.0]]), np.array([[3.0]]))


@pytest.mark.parametrize("name", ["float32", "float16", "int32"])
def test_lu_solve_modes_of_other_dtypes(name):
  a, b = well_conditioned((3, 3)), rng.standard_normal((3, 3))
  dtype = getattr(dtypes, name)
  factors, pivots = Tensor(a).cast(dtype).lu_factor()
  result = dtypes.float32 if name == "int32" else dtype
  reference_a = torch.tensor(a.astype(np.int32).astype(np.float64) if name == "int32" else a)
  for left, adjoint in MODES:
    got = Tensor(b).cast(dtype).lu_solve(factors, pivots, left=left, adjoint=adjoint)
    reference_b = torch.tensor(b.astype(np.int32).astype(np.float64) if name == "int32" else b)
    expected = torch.linalg.lu_solve(*torch.linalg.lu_factor(reference_a), reference_b, left=left, adjoint=adjoint)
    assert got.dtype == result
    np.testing.assert_allclose(got.cast(dtypes.float64).numpy(), expected.numpy(), rtol=3e-2 if name == "float16" else 1e-5, atol=1e-2)


def test_lu_solve_refuses_misshapen_b_when_built():
  factors, pivots = Tensor.eye(3).lu_factor()
  with pytest.raises(ValueError, match=r"lu_solve needs b of shape \(\.\.\., 3, k\) for matrices \(3, 3\), got \(2, 3\)"):
    Tensor.zeros(2, 3).lu_solve(factors, pivots)
  with pytest.raises(ValueError, match=r"lu_solve needs b of shape \(\.\.\., k, 3\) for matrices \(3, 3\), got \(3, 2\)"):
    Tensor.zeros(3, 2).lu_solve(factors, pivots, left=False)
  with pytest.raises(ValueError, match="pivots of shape"): Tensor.zeros(3, 3).lu_solve(factors, Tensor([1, 2]), adjoint=True)
  with pytest.raises(TypeError): Tensor.zeros(3, 3).lu_solve(factors, pivots, True)   # left and adjoint are keywords, as torch's
