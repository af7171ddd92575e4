"""Special functions against torch (CPU) and, where torch's float64 is itself loose (its trigamma is good to 1e-9),
mpmath: erfc, erfinv, lgamma, digamma, polygamma, mvlgamma, i0, i0e, i1 and i1e. Values for each float dtype,
ints, special values and views, and gradients."""
import math
import mpmath
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes

INF, NAN = math.inf, math.nan
NEAR_POLES = [-4.5, -2.7, -0.3, 1e-5, 0.5, 1.5, 3.7, 9.9, 10.1, 30.0, 1e6]
BESSEL = [-30.0, -5.0, -0.1, 0.0, 1e-5, 0.7, 3.0, 19.9, 20.1, 80.0]


def mpmath_polygamma(n):
  def values(t):
    at_zero = (-1) ** (n + 1) * INF
    exact = [float(mpmath.polygamma(n, v)) if v != 0 else at_zero for v in t.flatten().tolist()]
    return torch.tensor(exact, dtype=torch.float64).reshape(t.shape)
  return values


# name -> (ours, torch's, the inputs of the value tests, float64 reference when torch's is not within 1e-13)
FUNCTIONS = {
  "erfc": (lambda t: t.erfc(), torch.erfc, [-3.0, -0.5, 0.0, 0.3, 1.5, 4.0, 9.5, 26.0], None),
  "erfinv": (lambda t: t.erfinv(), torch.erfinv, [-0.999999, -0.7, -1e-8, 0.0, 0.2, 0.5, 0.9, 0.99999999], None),
  "lgamma": (lambda t: t.lgamma(), torch.lgamma, [-4.5, -2.7, -0.3, 1e-5, 0.5, 1.5, 3.0, 3.7, 30.0, 1e6], None),
  "digamma": (lambda t: t.digamma(), torch.digamma, NEAR_POLES, None),
  "polygamma1": (lambda t: t.polygamma(1), lambda t: torch.polygamma(1, t), NEAR_POLES, mpmath_polygamma(1)),
  "polygamma2": (lambda t: t.polygamma(2), lambda t: torch.polygamma(2, t), NEAR_POLES, mpmath_polygamma(2)),
  "polygamma5": (lambda t: t.polygamma(5), lambda t: torch.polygamma(5, t), NEAR_POLES, mpmath_polygamma(5)),
  "mvlgamma1": (lambda t: t.mvlgamma(1), lambda t: torch.mvlgamma(t, 1), [0.3, 1.1, 2.0, 3.7, 30.0], None),
  "mvlgamma3": (lambda t: t.mvlgamma(3), lambda t: torch.mvlgamma(t, 3), [1.1, 1.5, 2.0, 3.7, 30.0], None),
  "i0": (lambda t: t.i0(), torch.i0, BESSEL, None),
  "i0e": (lambda t: t.i0e(), torch.special.i0e, BESSEL, None),
  "i1": (lambda t: t.i1(), torch.special.i1, BESSEL, None),
  "i1e": (lambda t: t.i1e(), torch.special.i1e, BESSEL, None),
}
# float64's tolerance; digamma's and the polygammas' sums lose a few ulps more than a single libm call, and near
# digamma's zero at 1.46 its terms of size 2 cancel (psi(1.5) is 0.036): it is within 1e-15 there, as torch's
RTOL64 = {"digamma": 1e-14, "polygamma1": 1e-14, "polygamma2": 1e-14, "polygamma5": 1e-14}
ATOL64 = {"digamma": 1e-15}
TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
ULP = {"float64": 2 ** -52, "float32": 2 ** -23, "float16": 2 ** -10, "bfloat16": 2 ** -7}
SMALLEST = {"float64": 1e-320, "float32": 1e-44, "float16": 2 ** -24, "bfloat16": 1e-40}


def reference(name, values: np.ndarray) -> np.ndarray:
  """The float64 values of the function at the given float64 inputs."""
  _, theirs, _, exact = FUNCTIONS[name]
  return (exact or theirs)(torch.tensor(values, dtype=torch.float64)).numpy()


def rounded(values: np.ndarray, name: str) -> np.ndarray:
  """float64 values rounded once to the dtype and back: what computing in float64 and rounding gives."""
  return torch.tensor(values).to(TORCH_DTYPES[name]).double().numpy()


# float64 and float32 for each function; the 16-bit types and ints, which go through float32 the same way for every
# function, for one of each kind (compiles are slow)
ONE_OF_EACH_KIND = ["erfc", "erfinv", "lgamma", "digamma", "polygamma2", "mvlgamma3", "i0", "i1e"]
DTYPE_ROWS = [(name, dtype) for name in FUNCTIONS for dtype in ("float64", "float32")] + \
             [(name, dtype) for name in ONE_OF_EACH_KIND for dtype in ("float16", "bfloat16")]


@pytest.mark.parametrize("name,dtype", DTYPE_ROWS)
def test_values_within_an_ulp_or_two_of_float64(name, dtype):
  t = Tensor(np.array(FUNCTIONS[name][2])).cast(getattr(dtypes, dtype))
  stored = t.cast(dtypes.float64).numpy()   # the inputs as the dtype holds them
  got = FUNCTIONS[name][0](t)
  assert got.dtype == getattr(dtypes, dtype)
  expected = reference(name, stored)
  rtol, atol = (RTOL64.get(name, 1e-13), ATOL64.get(name, SMALLEST[dtype])) if dtype == "float64" else (2 * ULP[dtype], SMALLEST[dtype])
  if dtype in ("float16", "bfloat16"): expected = rounded(expected, dtype)   # 16-bit types compute in float32 and round once
  np.testing.assert_allclose(got.cast(dtypes.float64).numpy(), expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", ONE_OF_EACH_KIND)
def test_ints_compute_in_float32(name):
  values = [-1, 0, 1] if name == "erfinv" else [0, 1, 2, 3, 7, 10]
  got = FUNCTIONS[name][0](Tensor(values, dtype=dtypes.int32))
  assert got.dtype == dtypes.float32
  expected = rounded(reference(name, np.array(values, dtype=np.float64)), "float32")
  np.testing.assert_allclose(got.numpy(), expected, rtol=2 * ULP["float32"], atol=SMALLEST["float32"])


SPECIAL = np.array([0.0, -0.0, -1.0, -2.0, 1e-300, 1e-30, 1e17, 1e300, 1e308, -1.7e308, INF, -INF, NAN])
# where torch's value is an accident of its formula, the limit instead: its trigamma's sin(pi x) is not 0 at the
# negative integers (6.6e32 at -1; nan at -1.7e308, an integer too), and its zeta gives nan at inf and at -inf for
# trigamma
NOT_AS_TORCH = {"polygamma1": {-1.0: INF, -2.0: INF, -1.7e308: INF, -INF: INF}, "polygamma2": {INF: 0.0}, "polygamma5": {INF: 0.0}}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_special_values_as_torch(name):
  ours, theirs = FUNCTIONS[name][:2]
  values = np.linspace(0.9, 0.999999, 12) if name == "erfinv" else SPECIAL   # erfinv's special values are below
  got = ours(Tensor(values)).numpy()
  expected = theirs(torch.tensor(values)).numpy()
  for x, value in NOT_AS_TORCH.get(name, {}).items(): expected[values == x] = value
  np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0)


def test_erfinv_and_erfc_at_their_ends():
  x = np.array([1.0, -1.0, 1.5, -2.0, 0.0, -0.0, 1 - 2 ** -53, -1 + 2 ** -53, 5e-324, NAN])
  got = Tensor(x).erfinv().numpy()
  np.testing.assert_allclose(got, torch.erfinv(torch.tensor(x)).numpy(), rtol=1e-15, atol=0)
  assert np.signbit(got[5]) and not np.signbit(got[4])
  x = np.array([10.0, 26.5, 27.2, 40.0, -10.0])   # far below 1 - erf's last digit, into the subnormals
  np.testing.assert_allclose(Tensor(x).erfc().numpy(), torch.erfc(torch.tensor(x)).numpy(), rtol=1e-15, atol=0)
  exact = float(mpmath.erfc(10))
  assert abs(Tensor([10.0], dtype=dtypes.float64).erfc().item() - exact) <= np.spacing(exact)


def test_float64_erf_and_erfc_within_an_ulp_or_three_of_mpmath():
  """nbgrad's own float64 erf and erfc (a series below 1, exp(-x^2) times a Chebyshev fit beyond): erf within 1.1 ulp,
  erfc within 3 (the C library's: 0.9 and 2.4), over random points, the ends of the pieces and far into erfc's
  subnormals; their special values as torch's."""
  mpmath.mp.prec = 120
  rng = np.random.default_rng(24)
  x = np.concatenate([rng.uniform(-6, 6, 1500), rng.uniform(-1.05, 1.05, 1000), rng.uniform(-27.3, 27.3, 600),
                      10.0 ** rng.uniform(-300, 0, 200), [0.25, np.nextafter(0.25, 0), 1.0, np.nextafter(1.0, 0), 5.9, 26.5, 27.2, 5e-324]])
  for name, limit in (("erf", 1.1), ("erfc", 3.0)):
    got = getattr(Tensor(x), name)().numpy()
    exact = [getattr(mpmath, name)(v) for v in x.tolist()]
    ulps = [abs(float((g - e) / float(np.spacing(abs(float(e)))))) if float(e) != 0 else abs(g) / 5e-324 for g, e in zip(got.tolist(), exact)]
    assert max(ulps) <= limit, f"{name}({x[int(np.argmax(ulps))]!r}) is {max(ulps):.2f} ulps off"
    special = np.array([0.0, -0.0, np.inf, -np.inf, NAN, 30.0, -30.0])
    np.testing.assert_array_equal(getattr(Tensor(special), name)().numpy(), getattr(torch, name)(torch.tensor(special)).numpy())
  assert np.signbit(Tensor(np.array([-0.0])).erf().numpy()).all()


def test_float64_lgamma_within_a_few_ulps_of_mpmath():
  """nbgrad's own float64 lgamma (Stirling's series from 10, a Chebyshev fit on [3/2, 5/2) and logs of products
  below): within 3 ulps of mpmath but about the minimum at 1.46 (9: two terms of a third its size cancel), relative
  accuracy kept at the roots 1 and 2; below 0 (the reflection) within 1e-15 absolutely (the C library's too), since
  the value there passes through zero; the poles and infinities inf, as torch's."""
  mpmath.mp.prec = 120
  rng = np.random.default_rng(26)
  x = np.concatenate([rng.uniform(0, 12, 1200), rng.uniform(0.9, 2.1, 400), 1 + rng.uniform(-1e-7, 1e-7, 100), 2 + rng.uniform(-1e-7, 1e-7, 100),
                      10.0 ** rng.uniform(-300, 300, 300), [0.5, 1.5, 2.5, 9.999999999999998, 10.0, 1e-300, 2.5e305]])
  got = Tensor(x).lgamma().numpy()
  exact = [mpmath.loggamma(v).real for v in x.tolist()]
  ulps = np.array([abs(float((g - e) / float(np.spacing(abs(float(e)))))) for g, e in zip(got.tolist(), exact)])
  limit = np.where((x > 1.3) & (x < 1.6), 9.0, 3.0)
  assert (ulps <= limit).all(), f"lgamma({x[np.argmax(ulps - limit)]!r}) is {ulps[np.argmax(ulps - limit)]:.2f} ulps off"
  negative = -rng.uniform(0, 30, 1500)
  got = Tensor(negative).lgamma().numpy()
  exact = np.array([float(mpmath.loggamma(v).real) for v in negative.tolist()])
  assert (np.abs(got - exact) <= 1e-15 * np.maximum(1, np.abs(exact))).all()
  special = np.array([0.0, -0.0, -1.0, -7.0, INF, -INF, NAN])
  np.testing.assert_array_equal(Tensor(special).lgamma().numpy(), torch.lgamma(torch.tensor(special)).numpy())


def test_bools_compute_in_float32():
  np.testing.assert_allclose(Tensor([True, False]).lgamma().numpy(), [0.0, INF])


def _float32_steps(center, count):
  """center and the count float32s on each side of it."""
  center = np.float32(center)
  return center + np.arange(-count, count + 1) * np.spacing(center)


_RANDOM = np.random.default_rng(7)
# the regions of float32 lgamma's pieces and its hard spots: the roots 1 and 2 and the negative roots (cancellation),
# the poles, the seams of the shifts and of Stirling's series at 8, tiny and huge inputs
LGAMMA_REGIONS = {
  "random in (0, 50)": _RANDOM.uniform(0, 50, 2000),
  "shifted, (0, 8)": _RANDOM.uniform(0, 8, 1000),
  "huge": np.append(10 ** _RANDOM.uniform(1, 30, 500), [1e30, np.finfo(np.float32).max]),
  "tiny": 10 ** _RANDOM.uniform(-38, -3, 500),
  "steps about 1 and 2": np.concatenate([_float32_steps(c, 40) for c in (1.0, 2.0)]),
  "within 1e-3 of 1 and 2": np.concatenate([c + _RANDOM.uniform(-1e-3, 1e-3, 500) for c in (1.0, 2.0)]),
  "seams": np.concatenate([_float32_steps(c, 3) for c in (0.9375, 1.9375, 2.9375, 7.9375, 8.0)]),
  "negative in (-50, 0)": _RANDOM.uniform(-50, 0, 2000),
  "near negative integers": np.concatenate([-n + _RANDOM.uniform(-1e-3, 1e-3, 40) for n in range(1, 30)] +
                                           [_float32_steps(-n, 5) for n in range(1, 12)]),
  "negative roots": np.concatenate([_float32_steps(c, 20) for c in (-2.4570247, -2.7476826, -3.1435122, -3.9552667)]),
}


def test_float32_lgamma_correctly_rounded():
  x = np.concatenate(list(LGAMMA_REGIONS.values())).astype(np.float32)
  x = x[(x > 0) | (x != np.round(x))]   # the poles are the special values' test
  with mpmath.workdps(40):
    exact = [mpmath.log(abs(mpmath.gamma(mpmath.mpf(float(v))))) for v in x]
  with np.errstate(over="ignore"):   # float32 max's lgamma is past float32's range: inf
    expected = np.array([float(v) for v in exact]).astype(np.float32)
  got = Tensor(x).lgamma().numpy()
  wrong = got != expected
  assert not wrong.any(), list(zip(x[wrong], got[wrong], expected[wrong]))


@pytest.mark.parametrize("name", ONE_OF_EACH_KIND)
def test_zero_size_scalar_and_strided_views(name):
  ours = FUNCTIONS[name][0]
  assert ours(Tensor(np.zeros((0, 3), np.float32))).shape == (0, 3)
  scalar = ours(Tensor(0.75))
  assert scalar.shape == () and scalar.dtype == dtypes.float32
  np.testing.assert_allclose(scalar.numpy(), reference(name, np.array([0.75], np.float32).astype(np.float64))[0], rtol=2 * ULP["float32"])
  grid = np.linspace(0.05, 0.95, 12).reshape(3, 4).astype(np.float32)
  view = ours(Tensor(grid).T[::2])
  np.testing.assert_allclose(view.numpy(), reference(name, grid.T[::2].astype(np.float64)), rtol=2 * ULP["float32"])


GRADIENT_INPUTS = {"erfinv": [-0.9, -0.3, 0.0, 0.4, 0.99], "mvlgamma1": [0.3, 1.2, 2.5, 7.0], "mvlgamma3": [1.2, 1.7, 2.5, 7.0],
                   "i1": [-3.0, 0.0, 0.5, 25.0], "i1e": [-3.0, 0.0, 0.5, 25.0]}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_gradients_as_torch(name):
  """torch's gradients in float64: digamma's is torch's trigamma, good to 1e-9 only."""
  ours, theirs = FUNCTIONS[name][:2]
  x = np.array(GRADIENT_INPUTS.get(name, [-2.7, -0.3, 0.5, 1.5, 4.0, 12.0]))
  leaf, reference_leaf = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
  ours(leaf).sum().backward()
  theirs(reference_leaf).sum().backward()
  np.testing.assert_allclose(leaf.grad.numpy(), reference_leaf.grad.numpy(), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("call,message", [(lambda t: t.polygamma(-1), "polygamma n must be at least 0, got -1"),
                                          (lambda t: t.mvlgamma(0), "mvlgamma p must be at least 1, got 0")])
def test_negative_orders_are_value_errors(call, message):
  with pytest.raises(ValueError, match=message): call(Tensor([1.0]))
  with pytest.raises(TypeError, match="must be an int"): Tensor([1.0]).polygamma(1.5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sinc_gradient_near_zero_within_a_few_ulps_of_mpmath(dtype):
  """pi (a cos a - sin a) / a^2 (a = pi x) cancels near 0 (float32's was 0 at 1e-5, as torch's): its series there."""
  near, far = [0.0, 1e-10, -1e-5, 1e-4, 3e-3, 0.05, -0.15, 0.159], [0.16, 0.4, -1.0, 2.5]
  t = Tensor(np.array(near + far, dtype=dtype), requires_grad=True)
  t.sinc().sum().backward()

  def exact(v):
    a = mpmath.pi * mpmath.mpf(float(v))
    return float(mpmath.pi * (a * mpmath.cos(a) - mpmath.sin(a)) / a ** 2) if v else 0.0
  with mpmath.workdps(40): expected = np.array([exact(v) for v in t.numpy().tolist()])
  got = t.grad.numpy()
  np.testing.assert_allclose(got[:len(near)], expected[:len(near)], rtol=4 * ULP[dtype], atol=1e-300)
  np.testing.assert_allclose(got[len(near):], expected[len(near):], rtol=2e-5 if dtype == "float32" else 1e-13)   # as torch's
