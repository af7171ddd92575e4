"""igamma and igammac (the regularized incomplete gamma functions P(a, x) and Q(a, x)) against mpmath for the values
and against torch (CPU) for the special values, dtypes and gradients: every way they are computed and the seams
between them, tiny and huge a, far tails, broadcasting, views, 0-size and 0-d tensors, and bad input."""
import math
import mpmath
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes

INF, NAN = math.inf, math.nan
# (a, x) pairs: each way of computing (a small x; x <= a; x > a; near the median of a large a) and the seams between
# them (x = 2, x = a, x / a = 0.7 and 1.3 from a = 20 on, a = 10 where Gamma(a) turns to Stirling's series), tiny and
# huge a, and tails down to 1e-300
PAIRS = [(1e-300, 0.5), (1e-8, 1e-3), (1e-3, 0.7), (0.01, 1.9), (0.25, 2.0), (0.25, 2.0000001), (0.5, 0.5), (0.5, 30.0),
         (1.0, 1.0), (1.5, 0.2), (2.5, 2.6), (3.0, 1e-5), (7.5, 40.0), (9.9999, 9.0), (10.0, 12.0), (12.0, 3.0),
         (19.9, 19.9), (20.1, 14.07), (20.1, 26.13), (20.1, 20.0), (30.0, 21.0), (30.0, 38.0), (30.0, 0.01), (50.0, 1e-5),
         (100.0, 69.99), (100.0, 130.01), (201.0, 199.0), (1000.0, 1001.0), (1000.0, 650.0), (3000.0, 3500.0),
         (1e4, 7200.0), (1e4, 12800.0), (1e5, 99000.0), (1e5, 100500.0), (2e5, 2.5e5)]


def exact(a: float, x: float, upper: bool) -> float:
  """P(a, x) or Q(a, x) at the float64 inputs, from mpmath at 40 digits (near the median of a huge a, where its
  gammainc gives up, P as x^a e^-x / Gamma(a + 1) 1F1(1; a + 1; x) with more terms allowed, and Q as 1 - P)."""
  with mpmath.workdps(40):
    a, x = mpmath.mpf(a), mpmath.mpf(x)
    try:
      return float(mpmath.gammainc(a, x, mpmath.inf, regularized=True) if upper else mpmath.gammainc(a, 0, x, regularized=True))
    except mpmath.libmp.NoConvergence:
      p = mpmath.exp(a * mpmath.log(x) - x - mpmath.loggamma(a + 1)) * mpmath.hyp1f1(1, a + 1, x, maxterms=10 ** 6)
      return float(1 - p if upper else p)


@pytest.fixture(scope="module")
def references():
  a, x = (np.array(v) for v in zip(*PAIRS))
  return a, x, {upper: np.array([exact(p, q, upper) for p, q in PAIRS]) for upper in (False, True)}


@pytest.mark.parametrize("upper", [False, True], ids=["igamma", "igammac"])
def test_float64_within_1e13_of_mpmath(references, upper):
  """Within 2e-14 relatively where the value is above 1e-30, and within 2e-13 in the far tails, where exp's argument
  is in the hundreds (its rounding alone is 1e-13 there; torch's is no closer)."""
  a, x, expected = references
  got, expected = (Tensor(a).igammac(Tensor(x)) if upper else Tensor(a).igamma(Tensor(x))).numpy(), expected[upper]
  relative = np.abs(got - expected) / np.where(expected == 0, 1.0, expected)   # an underflow to 0 must give 0
  assert (relative[expected > 1e-30] < 2e-14).all(), relative
  assert (relative < 2e-13).all(), relative


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16"])
def test_other_floats_round_the_float64_value_once(references, name):
  """float32 and the 16-bit types compute in float64 and round once: within half an ulp of the exact value."""
  a, x, _ = references
  dtype = getattr(dtypes, name)
  stored = Tensor(np.stack([a, x])).cast(dtype).cast(dtypes.float64).numpy()   # the pairs as the dtype holds them
  a, x = stored[:, ((stored > 0) & (stored < INF)).all(0)]   # those it holds as finite positive numbers
  got = Tensor(a).cast(dtype).igamma(Tensor(x).cast(dtype))
  assert got.dtype == dtype
  expected = np.array([exact(p, q, False) for p, q in zip(a, x)])
  np.testing.assert_array_equal(got.cast(dtypes.float64).numpy(), torch.tensor(expected).to(getattr(torch, name)).double().numpy())


def test_float32_as_torch():
  """torch computes float32 in float32: within a few of its ulps of ours where it is itself accurate."""
  a = np.array([0.5, 1.0, 2.5, 7.5, 12.0, 30.0, 100.0], np.float32)
  x = np.array([0.2, 1.0, 3.0, 5.0, 12.5, 20.0, 120.0], np.float32)
  for ours, theirs in ((Tensor(a).igamma(Tensor(x)), torch.igamma(torch.tensor(a), torch.tensor(x))),
                       (Tensor(a).igammac(Tensor(x)), torch.igammac(torch.tensor(a), torch.tensor(x)))):
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5)


SPECIAL = [NAN, -INF, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, 1e300, INF]


@pytest.mark.parametrize("upper", [False, True], ids=["igamma", "igammac"])
def test_special_values_as_torch(upper):
  """Negative a or x give nan, a = 0 gives P = 1, x = 0 P = 0, a = inf P = 0, x = inf P = 1, and where those meet
  (a = x = 0, a = x = inf) nan, in torch's order of cases (so a NaN meeting x = 0 gives P = 0, as torch's)."""
  a = np.array([p for p in SPECIAL for _ in SPECIAL])
  x = np.array([q for _ in SPECIAL for q in SPECIAL])
  ours = (Tensor(a).igammac(Tensor(x)) if upper else Tensor(a).igamma(Tensor(x))).numpy()
  theirs = (torch.igammac if upper else torch.igamma)(torch.tensor(a), torch.tensor(x)).numpy()
  np.testing.assert_allclose(ours, theirs, rtol=1e-14, atol=0)


def test_tiny_q_of_a_tiny_a_as_mpmath_not_torch():
  """Q(1e-300, x) is about 1e-300 E1(x): torch's is off by a factor of 2 to 4 there (it drops the E1 term), ours
  keeps it."""
  x = np.array([1e-300, 0.5, 1.0])
  got = Tensor(np.full(3, 1e-300)).igammac(Tensor(x)).numpy()
  np.testing.assert_allclose(got, [exact(1e-300, v, True) for v in x], rtol=1e-14)


@pytest.mark.parametrize("upper", [False, True], ids=["igamma", "igammac"])
def test_gradient_by_x_as_torch(upper):
  """torch's x^(a-1) e^-x / Gamma(a) (negated for Q), at its edges too: nan at a = 1, x = 0 (0 times -inf in the
  exponent), inf for a < 1 at x = 0, 0 where Gamma(a) is infinite, nan at a = inf."""
  a = np.array([0.5, 1.0, 2.5, 40.0, 1.0, 0.5, 3.0, 0.0, -1.0, INF, 2.0])
  x = np.array([0.3, 1.0, 2.0, 41.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, INF])
  leaf, reference = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
  weights = np.arange(1.0, len(x) + 1)
  ((Tensor(a).igammac(leaf) if upper else Tensor(a).igamma(leaf)) * Tensor(weights)).sum().backward()
  ((torch.igammac if upper else torch.igamma)(torch.tensor(a), reference) * torch.tensor(weights)).sum().backward()
  np.testing.assert_allclose(leaf.grad.numpy(), reference.grad.numpy(), rtol=1e-12, atol=0)


def test_gradient_by_a_raises_when_backward_needs_it_as_torch():
  a, x = Tensor([1.5, 2.0], requires_grad=True), Tensor([1.0, 3.0], requires_grad=True)
  for op in ("igamma", "igammac"):
    out = getattr(a, op)(x)   # building it is fine: torch raises in backward
    with pytest.raises(NotImplementedError, match=f"derivative of {op} by its first argument"): out.sum().backward()
    with pytest.raises(RuntimeError): getattr(a, op)(x).sum().backward()   # NotImplementedError is a RuntimeError
  a.requires_grad = False
  a.igamma(x).sum().backward()
  assert x.grad is not None and a.grad is None


def test_float32_gradient_and_promotion_as_torch():
  a, x = np.array([0.5, 2.5, 7.0], np.float32), np.array([0.8, 1.5, 9.0], np.float32)
  leaf, reference = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
  out = Tensor(a).igamma(leaf)
  assert out.dtype == dtypes.float32
  out.sum().backward()
  torch.igamma(torch.tensor(a), reference).sum().backward()
  assert leaf.grad.dtype == dtypes.float32
  np.testing.assert_allclose(leaf.grad.numpy(), reference.grad.numpy(), rtol=1e-5)
  assert Tensor(a).igamma(Tensor(x).cast(dtypes.float64)).dtype == dtypes.float64


def test_ints_and_numbers_give_the_default_float():
  """torch refuses ints (and a number for other); here they promote as any float op's inputs do."""
  got = Tensor([1, 2, 3], dtype=dtypes.int32).igamma(Tensor([2, 1, 3], dtype=dtypes.int64))
  assert got.dtype == dtypes.float32
  expected = torch.igamma(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0, 1.0, 3.0])).numpy()
  np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
  np.testing.assert_allclose(Tensor([1.0, 2.0]).igammac(2).numpy(), torch.igammac(torch.tensor([1.0, 2.0]), torch.tensor(2.0)).numpy(), rtol=1e-6)


def test_broadcasting_views_empty_and_0d():
  a, x = np.linspace(0.5, 6.0, 12).reshape(3, 4), np.array([0.3, 1.0, 2.0, 5.0])
  got = Tensor(a).T[::2].igamma(Tensor(x)[1:3].reshape(2, 1))
  expected = torch.igamma(torch.tensor(a).T[::2], torch.tensor(x)[1:3].reshape(2, 1))
  np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-13)
  assert Tensor(np.zeros((0, 3))).igamma(Tensor(np.ones(3))).shape == (0, 3)
  scalar = Tensor(2.0).igammac(Tensor(1.0))
  assert scalar.shape == () and abs(scalar.item() - 2 / math.e) < 1e-7   # Q(2, x) = (1 + x) e^-x
  one_column = Tensor([[2.0], [3.0]]).igamma(Tensor([1.0]))
  assert one_column.shape == (2, 1)


def test_in_place_forms_keep_the_tensor_dtype_as_torch():
  for op in ("igamma_", "igammac_"):
    ours, theirs = Tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    result = getattr(ours, op)(Tensor([1.5, 0.5], dtype=dtypes.float64))
    getattr(theirs, op)(torch.tensor([1.5, 0.5], dtype=torch.float64))
    assert result is ours and ours.dtype == dtypes.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_bad_input_raises_when_built():
  with pytest.raises(ValueError, match=r"shapes \(2,\) and \(3,\) cannot be broadcast"): Tensor([1.0, 2.0]).igamma(Tensor([1.0, 2.0, 3.0]))
  with pytest.raises(TypeError): Tensor([1.0]).igamma("2")
