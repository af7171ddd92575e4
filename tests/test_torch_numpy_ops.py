"""Ops a torch or numpy user reaches for beyond tinygrad's API: log1p, expm1, erf, atan, asin, acos, atan2, the value tests (isnan, isinf,
isfinite, nan_to_num, isclose), logical and fmod ops, clamp's keywords, amax and amin, var_mean and std_mean, norm,
roll, diagonal, diag, trace, outer, repeat_interleave and masked_select. Values and gradients against torch (CPU)."""
import math
import mpmath
import numpy as np
import pytest
import torch

import nbgrad
from nbgrad import Tensor, dtypes
from against_torch import grads_match

INF, NAN = math.inf, math.nan
X = np.array([[1.5, -2.0, 0.25, 3.0], [0.0, 0.5, -1.0, 4.0], [-0.75, 2.5, 1.0, -3.5]])
CUBE = np.arange(24.0).reshape(2, 3, 4) * 0.5 - 5.75


# ---- log1p and expm1: no digits lost near 0
SMALL_AND_LARGE = np.array([1e-10, -1e-7, 3e-5, -0.25, 0.5, 3.0, 20.0, -0.9])


@pytest.mark.parametrize("op", ["log1p", "expm1"])
@pytest.mark.parametrize("name,rtol", [("float32", 2e-7), ("float64", 1e-15), ("float16", 1e-3)])
def test_log1p_expm1_keep_small_values(op, name, rtol):
  values = SMALL_AND_LARGE.astype(name)
  got = getattr(Tensor(values), op)()
  assert got.dtype == getattr(dtypes, name)
  expected = getattr(torch, op)(torch.tensor(values.astype(np.float64))).numpy()
  if name == "float16":   # what one rounding to float16 gives (expm1(20) is past its range)
    with np.errstate(over="ignore"): expected = expected.astype(np.float16).astype(np.float64)
  np.testing.assert_allclose(got.numpy().astype(np.float64), expected, rtol=rtol, atol=0)


@pytest.mark.parametrize("op", ["log1p", "expm1"])
def test_log1p_expm1_gradients_ints_and_numpy_ufuncs(op):
  grads_match(lambda t: getattr(t, op)(), lambda t: getattr(torch, op)(t), SMALL_AND_LARGE[:-2])
  ints = getattr(Tensor([0, 1, 2]), op)()
  assert ints.dtype == dtypes.float32
  np.testing.assert_allclose(ints.numpy(), getattr(np, op)(np.array([0.0, 1.0, 2.0])), rtol=1e-6)
  ufunc = getattr(np, op)(Tensor(np.abs(X)))
  assert isinstance(ufunc, Tensor)
  np.testing.assert_allclose(ufunc.numpy(), getattr(np, op)(np.abs(X)), rtol=1e-12)


def test_expm1_within_an_ulp_over_its_whole_range():
  """expm1 is a primitive (float32 rounds the float64 one): float64 within an ulp of mpmath's exact values from
  where it is -1 to where it overflows, float32 within half an ulp of float64's; -0.0, infinities and NaN as torch."""
  import mpmath
  mpmath.mp.prec = 120
  rng = np.random.default_rng(25)
  x = np.concatenate([rng.uniform(-1, 1, 1500), rng.uniform(-45, 709.78, 1500), 10.0 ** rng.uniform(-310, 0, 300) * rng.choice([-1, 1], 300),
                      [0.34657359, -0.34657359, 0.6931471805599453, 37.0, 38.5, 709.78]])
  got = Tensor(x).expm1().numpy()
  exact = [mpmath.expm1(v) for v in x.tolist()]
  ulps = [abs(float((g - e) / float(np.spacing(abs(float(e)))))) for g, e in zip(got.tolist(), exact)]
  assert max(ulps) < 1, f"expm1({x[int(np.argmax(ulps))]!r}) is {max(ulps):.2f} ulps off"
  x32 = np.concatenate([rng.uniform(-1, 1, 20000), rng.uniform(-20, 88.7, 20000), 10.0 ** rng.uniform(-45, 0, 2000)]).astype(np.float32)
  want = np.expm1(x32.astype(np.float64))
  assert (np.abs(Tensor(x32).expm1().numpy() - want) / np.spacing(np.abs(want).astype(np.float32))).max() <= 0.5 + 1e-9
  special = np.array([-0.0, 0.0, INF, -INF, NAN, 710.0, -800.0])
  with np.errstate(over="ignore"):
    np.testing.assert_array_equal(Tensor(special).expm1().numpy(), torch.expm1(torch.tensor(special)).numpy())
  assert np.signbit(Tensor(np.array([-0.0])).expm1().numpy()).all()


def test_log1p_at_and_below_minus_one():
  np.testing.assert_array_equal(Tensor([-1.0, -2.0, INF, NAN]).log1p().numpy(), torch.log1p(torch.tensor([-1.0, -2.0, INF, NAN])).numpy())


@pytest.mark.parametrize("dt,values", [(np.float32, [1e30, 4e36, 1e37, 1e38, 3.4e38]), (np.float64, [1e300, 1e306, 1e308, 1.7e308])])
def test_log1p_of_the_largest_finite_values_is_finite(dt, values):
  x = np.array(values, dt)
  np.testing.assert_allclose(Tensor(x).log1p().numpy(), torch.log1p(torch.tensor(x.astype(np.float64))).numpy(), rtol=np.finfo(dt).eps * 2)


# ---- erf and the inverse trigonometric functions: within an ulp or two of float64's values
ANGLE_INPUTS = {"erf": np.array([-6.0, -1.5, -1e-20, 0.0, 1e-6, 0.3, 0.9, 2.0, 4.5, INF, NAN]),
                "atan": np.array([-INF, -1e30, -3.0, -1e-20, 0.0, 1e-7, 0.5, 1.0, 7.0, INF, NAN]),
                "asin": np.array([-1.0, -0.999999, -0.5, -1e-9, 0.0, 0.25, 0.7, 0.9999, 1.0, 1.5, NAN]),
                "acos": np.array([-1.0, -0.999999, -0.5, -1e-9, 0.0, 0.25, 0.7, 0.9999, 1.0, -1.5, NAN])}
ULP = {"float32": 2 ** -23, "float64": 2 ** -52, "float16": 2 ** -10, "bfloat16": 2 ** -7}


@pytest.mark.parametrize("op", list(ANGLE_INPUTS))
@pytest.mark.parametrize("name", list(ULP))
def test_erf_and_inverse_trigonometry_as_torch(op, name):
  values = ANGLE_INPUTS[op]
  t = Tensor(values).cast(getattr(dtypes, name))
  stored = t.cast(dtypes.float64).numpy()   # the inputs as the dtype holds them
  got = getattr(t, op)()
  assert got.dtype == getattr(dtypes, name)
  expected = getattr(torch, op)(torch.tensor(stored)).numpy()
  smallest = 2.0 ** -24 if name == "float16" else 1e-300   # float16's subnormals hold erf(1e-6) to that step
  np.testing.assert_allclose(got.cast(dtypes.float64).numpy(), expected, rtol=2 * ULP[name], atol=smallest)
  ufunc = {"erf": None, "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos}[op]
  if ufunc is not None and name == "float64":
    with np.errstate(invalid="ignore"): np.testing.assert_allclose(ufunc(Tensor(stored)).numpy(), ufunc(stored), rtol=2 * ULP[name])


@pytest.mark.parametrize("op", ["erf", "erfc"])
def test_float32_erf_and_erfc_within_an_ulp_everywhere(op):
  """float32's erf and erfc are polynomials fitted to float64's (nbgrad/jit/runtime.py): checked on a dense grid across
  both of their pieces, the tails where erfc underflows, and the signed zeros."""
  grid = np.concatenate([np.linspace(-11, 11, 400_001), [0.0, -0.0, 1e-30, -1e-30, 2.0, -2.0, 10.05, 10.06]]).astype(np.float32)
  got = getattr(Tensor(grid), op)().numpy().astype(np.float64)
  expected = getattr(torch, op)(torch.tensor(grid.astype(np.float64))).numpy()
  ulp = np.spacing(np.abs(expected).astype(np.float32)).astype(np.float64)
  assert np.max(np.abs(got - expected) / ulp) <= 1.0
  np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


@pytest.mark.parametrize("op", list(ANGLE_INPUTS))
def test_erf_and_inverse_trigonometry_gradients_as_torch(op):
  values = ANGLE_INPUTS[op][np.isfinite(ANGLE_INPUTS[op])]   # at +-1 asin's and acos's are inf, past them nan
  grads_match(lambda t: getattr(t, op)(), lambda t: getattr(torch, op)(t), values, tol=1e-9)   # torch's 1 - x^2 loses digits near 1
  assert getattr(Tensor([0, 1]), op)().dtype == dtypes.float32


ATAN2_Y = np.array([0.0, 0.0, -0.0, -0.0, 1.0, -1.0, INF, INF, -INF, 2.0, -3.0, NAN, 1e-30, 5.0])
ATAN2_X = np.array([0.0, -0.0, 0.0, -0.0, 0.0, -0.0, INF, -INF, 1.0, INF, -INF, 1.0, -1e30, 2.0])


@pytest.mark.parametrize("name", list(ULP))
def test_atan2_as_numpy_at_every_special_case(name):
  y, x = Tensor(ATAN2_Y).cast(getattr(dtypes, name)), Tensor(ATAN2_X).cast(getattr(dtypes, name))
  got = y.atan2(x)
  assert got.dtype == getattr(dtypes, name)
  expected = np.arctan2(y.cast(dtypes.float64).numpy(), x.cast(dtypes.float64).numpy())
  got = got.cast(dtypes.float64).numpy()
  np.testing.assert_allclose(got, expected, rtol=2 * ULP[name], atol=0)
  np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))   # the signed zeros too


def test_atan2_within_an_ulp_in_every_octant_and_magnitude():
  """float64 against mpmath within 2 ulp, float32 (computed in float64) as the float64 result rounded once: points in
  every octant, from 1e-300 to 1e300 (up to overflow's edge, where n + d is halved), and either side of tan(pi/8)."""
  rng = np.random.default_rng(7)
  y = rng.standard_normal(600) * 10.0 ** rng.uniform(-300, 300, 600)
  x = rng.standard_normal(600) * 10.0 ** rng.uniform(-300, 300, 600)
  tan_eighth = math.sqrt(2) - 1
  y = np.concatenate([y, [tan_eighth, np.nextafter(tan_eighth, 1), 1.7e308, -1e308, 3.0, 1e-320]])
  x = np.concatenate([x, [1.0, 1.0, 1.7e308, 1.5e308, -3.0, 2e-320]])
  exact = np.array([float(mpmath.atan2(mpmath.mpf(a), mpmath.mpf(b))) for a, b in zip(y, x)])
  np.testing.assert_allclose(Tensor(y).atan2(Tensor(x)).numpy(), exact, rtol=2 ** -51, atol=0)
  with np.errstate(over="ignore"): y32, x32 = y.astype(np.float32), x.astype(np.float32)   # the largest become inf
  finite = np.isfinite(y32) & np.isfinite(x32)
  got = Tensor(y32[finite]).atan2(Tensor(x32[finite])).numpy()
  np.testing.assert_array_equal(got, np.arctan2(y32[finite].astype(np.float64), x32[finite].astype(np.float64)).astype(np.float32))


def test_atan2_gradients_broadcasting_ints_and_numpy():
  grads_match(lambda y, x: y.atan2(x), torch.atan2, X, X[:1] - 0.5, tol=1e-12)
  grads_match(lambda y, x: y.atan2(x), torch.atan2, np.zeros(3), np.array([0.0, -1.0, 2.0]), tol=1e-12)   # 0 at the origin
  np.testing.assert_allclose(Tensor([1, -1]).atan2(0).numpy(), np.arctan2([1.0, -1.0], 0.0).astype(np.float32))
  assert isinstance(np.arctan2(Tensor(X), X.T[:1].T), Tensor) and isinstance(np.arctan2(X, Tensor(X)), Tensor)
  np.testing.assert_allclose(np.arctan2(X, Tensor(X + 1)).numpy(), np.arctan2(X, X + 1), rtol=1e-15)


# ---- value tests
SPECIALS = np.array([[0.0, -0.0, 1.5, INF], [-INF, NAN, -3.0, 65504.0]])


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
def test_isnan_isinf_isfinite_as_torch(name):
  t, ref = Tensor(SPECIALS).cast(getattr(dtypes, name)), torch.tensor(SPECIALS).to(getattr(torch, name))
  for ours, theirs in [(t.isnan(), torch.isnan(ref)), (t.isinf(), torch.isinf(ref)), (t.isfinite(), torch.isfinite(ref)),
                       (t.isinf(detect_negative=False), torch.isposinf(ref)), (t.isinf(detect_positive=False), torch.isneginf(ref)),
                       (t.isinf(False, False), torch.zeros_like(ref, dtype=torch.bool))]:
    assert ours.dtype == dtypes.bool
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("name", ["int32", "uint8", "bool"])
def test_value_tests_of_ints_and_bools(name):
  t = Tensor(np.array([[0, 1, 5]]).astype(name))
  np.testing.assert_array_equal(t.isnan().numpy(), np.zeros((1, 3), bool))
  np.testing.assert_array_equal(t.isinf().numpy(), np.zeros((1, 3), bool))
  np.testing.assert_array_equal(t.isfinite().numpy(), np.ones((1, 3), bool))
  np.testing.assert_array_equal(np.isfinite(t).numpy(), np.ones((1, 3), bool))


def test_value_tests_of_empty_scalar_and_strided_tensors():
  assert Tensor.zeros(0, 3).isnan().shape == (0, 3)
  assert Tensor(NAN).isnan().item() is True and Tensor(1.0).isinf().item() is False
  strided = Tensor(SPECIALS).T[::2]
  np.testing.assert_array_equal(strided.isfinite().numpy(), np.isfinite(SPECIALS.T[::2]))
  np.testing.assert_array_equal(np.isinf(Tensor(SPECIALS)).numpy(), np.isinf(SPECIALS))


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("kwargs", [{}, {"nan": 2.0, "posinf": 7.0, "neginf": -9.0}, {"posinf": 1e3}], ids=["defaults", "all", "posinf"])
def test_nan_to_num_as_torch(name, kwargs):
  got = Tensor(SPECIALS).cast(getattr(dtypes, name)).nan_to_num(**kwargs)
  expected = torch.nan_to_num(torch.tensor(SPECIALS).to(getattr(torch, name)), **kwargs)
  assert got.dtype == getattr(dtypes, name)
  np.testing.assert_array_equal(got.cast(dtypes.float64).numpy(), expected.double().numpy())


def test_nan_to_num_gradient_and_ints():
  grads_match(lambda t: (t / 0.5).log().nan_to_num(), lambda t: torch.nan_to_num((t / 0.5).log()), np.array([[-1.0, 0.0, 2.0]]))
  ints = Tensor([1, -2])
  out = ints.nan_to_num()
  assert out is not ints and out.dtype == dtypes.int32 and out.tolist() == [1, -2]


ISCLOSE_A = np.array([1.0, 1.0 + 1e-6, 1.0, INF, INF, NAN, 0.0, 1e-9])
ISCLOSE_B = np.array([1.0, 1.0, 1.1, INF, -INF, NAN, 1e-9, 0.0])


@pytest.mark.parametrize("kwargs", [{}, {"equal_nan": True}, {"rtol": 0.2}, {"atol": 1e-12, "rtol": 0.0}], ids=str)
def test_isclose_and_allclose_as_torch(kwargs):
  got = Tensor(ISCLOSE_A).isclose(Tensor(ISCLOSE_B), **kwargs)
  expected = torch.isclose(torch.tensor(ISCLOSE_A), torch.tensor(ISCLOSE_B), **kwargs)
  np.testing.assert_array_equal(got.numpy(), expected.numpy())
  assert Tensor(ISCLOSE_A[:4]).allclose(Tensor(ISCLOSE_B[:4]), **kwargs) == torch.allclose(torch.tensor(ISCLOSE_A[:4]), torch.tensor(ISCLOSE_B[:4]), **kwargs)
  assert Tensor(X).allclose(X + 1e-9) is True   # a numpy array as the other side, broadcast rules as in arithmetic


# ---- logical ops, fmod and remainder
@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_as_torch(op):
  a = np.array([[0.0, 1.5, -2.0, NAN]])
  b = np.array([[0], [3]], np.int32)
  got = getattr(Tensor(a), op)(Tensor(b))
  assert got.dtype == dtypes.bool and got.shape == (2, 4)
  np.testing.assert_array_equal(got.numpy(), getattr(torch, op)(torch.tensor(a), torch.tensor(b)).numpy())
  np.testing.assert_array_equal(getattr(Tensor([True, False]), op)(True).numpy(), getattr(np, op)([True, False], True))
  ufunc = getattr(np, op)(a, Tensor(b))   # the tensor on the right
  assert isinstance(ufunc, Tensor)
  np.testing.assert_array_equal(ufunc.numpy(), getattr(np, op)(a, b))


FMOD_A = np.array([5.0, -5.0, 5.0, -5.0, 7.5, -0.0, 3.0, INF, 2.0, -1e-3])
FMOD_B = np.array([3.0, 3.0, -3.0, -3.0, 2.0, 2.0, 0.0, 2.0, INF, 7.0])


def test_fmod_of_floats_as_torch():
  got = Tensor(FMOD_A).fmod(Tensor(FMOD_B)).numpy()
  expected = torch.fmod(torch.tensor(FMOD_A), torch.tensor(FMOD_B)).numpy()
  np.testing.assert_array_equal(got, expected)
  numbers = ~np.isnan(expected)
  np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(expected[numbers]))   # -0.0 keeps its sign
  for name in ["float32", "float16"]:
    np.testing.assert_array_equal(Tensor(FMOD_A.astype(name)).fmod(2.5).numpy(), torch.fmod(torch.tensor(FMOD_A.astype(name)), 2.5).numpy())


@pytest.mark.parametrize("name", ["int8", "int32", "int64", "uint8"])
def test_fmod_and_remainder_of_ints_as_torch(name):
  a = np.array([7, -7, 7, -7, 0, 5]) if name != "uint8" else np.array([7, 0, 9, 1, 0, 5])
  b = np.array([3, 3, -3, -3, 4, 5]) if name != "uint8" else np.array([3, 3, 4, 1, 4, 5])
  a, b = a.astype(name), b.astype(name)
  assert Tensor([True, False]).fmod(True).tolist() == [0, 0]   # bools as int32, as mod takes them (torch has no bool fmod)
  for op in ("fmod", "remainder"):
    got = getattr(Tensor(a), op)(Tensor(b))
    expected = getattr(torch, op)(torch.tensor(a), torch.tensor(b))
    np.testing.assert_array_equal(got.numpy(), expected.numpy().astype(got.numpy().dtype))


def test_fmod_and_remainder_gradients_as_torch():
  a, b = np.array([[5.5, -5.5, 0.0, 2.0]]), np.array([[2.0], [-3.0]])
  grads_match(lambda x, y: x.fmod(y), torch.fmod, a, b)
  grads_match(lambda x, y: x.remainder(y), torch.remainder, a, b)


# ---- clamp's keywords
def test_clamp_takes_torch_s_keywords_and_numpy_s_clip():
  values = X.astype(np.float32)
  t, ref = Tensor(values), torch.tensor(values)
  for ours, theirs in [(t.clamp(min=0), ref.clamp(min=0)), (t.clamp(max=1), ref.clamp(max=1)), (t.clip(min=-1, max=1), ref.clip(-1, 1)),
                       (t.clamp(-1, max=2), ref.clamp(-1, max=2))]:
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  clipped = np.clip(Tensor(values, requires_grad=True), 0, 1)
  assert isinstance(clipped, Tensor) and clipped.requires_grad
  np.testing.assert_array_equal(clipped.numpy(), np.clip(values, 0, 1))
  with pytest.raises(TypeError, match="min bound twice"): t.clip(0, min=1)
  with pytest.raises(TypeError, match="out="): t.clip(0, 1, out=np.zeros(3))
  with pytest.raises(ValueError, match="needs min_ or max_"): t.clamp()


# ---- reductions
@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dim,keepdim", [((0, 1), False), (1, True), (-2, False)])
def test_amax_amin_as_torch(op, dim, keepdim):
  ties = np.array([[1.0, 3.0, 3.0], [-2.0, -2.0, 0.5]])
  grads_match(lambda t: getattr(t, op)(dim=dim, keepdim=keepdim), lambda t: getattr(torch, op)(t, dim=dim, keepdim=keepdim), ties)


@pytest.mark.parametrize("op", ["var_mean", "std_mean"])
@pytest.mark.parametrize("dim,keepdim,correction", [(1, False, 1), (0, True, 0), (None, False, 1)])
def test_var_mean_and_std_mean_as_torch(op, dim, keepdim, correction):
  grads_match(lambda t: sum_pair(getattr(t, op)(dim=dim, keepdim=keepdim, correction=correction)),
              lambda t: sum_pair(getattr(torch, op)(t, dim=dim, keepdim=keepdim, correction=correction)), X)
  first, second = getattr(Tensor(X), op)(dim=dim, keepdim=keepdim, correction=correction)
  ref_first, ref_second = getattr(torch, op)(torch.tensor(X), dim=dim, keepdim=keepdim, correction=correction)
  np.testing.assert_allclose(first.numpy(), ref_first.numpy(), rtol=1e-12)
  np.testing.assert_allclose(second.numpy(), ref_second.numpy(), rtol=1e-12)


def sum_pair(pair): return pair[0] * 3 + pair[1]


@pytest.mark.parametrize("p", ["fro", 2, 1, INF, -INF, 0, 3, 0.5])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (0, True), ((0, 1), False)])
def test_norm_as_torch(p, dim, keepdim):
  grads_match(lambda t: t.norm(p, dim=dim, keepdim=keepdim), lambda t: t.norm(p, dim=dim, keepdim=keepdim),
              X + 0.125, tol=1e-9)


@pytest.mark.parametrize("p", [0.5, -1.0, 3])
def test_norm_with_zero_elements_as_torch(p):
  """|x| ** p has an infinite slope at 0 for p < 1: torch's gradient there is 0, and so is ours (not nan)."""
  grads_match(lambda t: t.norm(p, dim=1), lambda t: t.norm(p, dim=1), np.array([[0.0, 1.0, -2.0], [0.0, 0.0, 0.5]]), tol=1e-12)


def test_norm_of_zeros_ints_and_halves():
  zeros = Tensor.zeros(2, 3, requires_grad=True)
  zeros.norm(dim=1).sum().backward()
  np.testing.assert_array_equal(zeros.grad.numpy(), np.zeros((2, 3), np.float32))   # torch's 0, not nan
  ints = Tensor([[3, 4], [0, 0]]).norm(dim=1)
  assert ints.dtype == dtypes.float32 and ints.tolist() == [5.0, 0.0]
  half = Tensor(np.full(4096, 2.0, np.float16)).norm()
  assert half.dtype == dtypes.float16 and half.item() == 128.0   # summed in float32: float16 would stop at 2048 terms
  assert Tensor.zeros(0).norm().item() == 0.0
  with pytest.raises(TypeError, match="norm p"): Tensor(X).norm("nuclear")   # "fro" and "nuc" are the named ones


# ---- movement: roll, diagonal, diag, trace, outer, repeat_interleave, masked_select
@pytest.mark.parametrize("shifts,dims", [(1, 0), (-1, 1), (6, 1), ((1, -2), (0, 1)), (2, None), (-13, None), (0, 0), ((1, 1), (1, 1))])
def test_roll_as_torch(shifts, dims):
  grads_match(lambda t: t.roll(shifts, dims), lambda t: torch.roll(t, shifts, dims), X)


def test_roll_of_views_empty_and_0d_tensors():
  np.testing.assert_array_equal(Tensor(X).T.roll(1, 0).numpy(), np.roll(X.T, 1, 0))
  assert Tensor.zeros(0, 3).roll(2, 0).shape == (0, 3)
  empty = np.zeros((2, 0, 4), np.float32)
  assert Tensor(empty).roll(1, 2).numpy().shape == (2, 0, 4)   # along a dim of another empty tensor (eager: it raised)
  with nbgrad.eager(): assert Tensor(empty).roll(1, 2).numpy().shape == (2, 0, 4)
  assert Tensor(5.0).roll(3).item() == 5.0
  t = Tensor([1, 2, 3])
  assert t.roll(3) is not t and t.roll(3).tolist() == [1, 2, 3]
  with pytest.raises(ValueError, match="one shift per dim"): t.roll((1, 2), 0)
  with pytest.raises(IndexError): t.roll(1, 1)
  with pytest.raises(TypeError): t.roll(1.5, 0)


@pytest.mark.parametrize("offset,dim1,dim2", [(0, 0, 1), (1, 0, 1), (-2, 0, 1), (3, 0, 1), (-5, 0, 1), (0, 1, 0), (1, -1, -2)])
def test_diagonal_as_torch(offset, dim1, dim2):
  grads_match(lambda t: t.diagonal(offset, dim1, dim2), lambda t: torch.diagonal(t, offset, dim1, dim2), X)


@pytest.mark.parametrize("make", [lambda t: t.permute(2, 0, 1).diagonal(1, 0, 2), lambda t: t.transpose(1, 2).diagonal(-1, 2, 0),
                                  lambda t: t[:, 1:].diagonal(0, -1, -2), lambda t: t.unfold(2, 2, 1).diagonal(0, 1, 3)], ids=range(4))
def test_diagonal_of_views_of_a_cube_as_torch(make):
  grads_match(make, make, CUBE)


def test_diagonal_of_batches_views_and_errors():
  cube = np.arange(60.0).reshape(3, 4, 5)
  for args in [(0, 0, 2), (1, 2, 1), (-1, 1, 2), (0, 0, 1)]:
    np.testing.assert_array_equal(Tensor(cube).diagonal(*args).numpy(), torch.diagonal(torch.tensor(cube), *args).numpy())
  np.testing.assert_array_equal(Tensor(cube)[:, ::2, 1:].diagonal(0, 1, 2).numpy(), np.diagonal(cube[:, ::2, 1:], 0, 1, 2))
  assert Tensor.zeros(0, 3).diagonal().shape == (0,)
  with pytest.raises(ValueError, match="at least 2 dims"): Tensor([1.0]).diagonal()
  with pytest.raises(ValueError, match="must differ"): Tensor(X).diagonal(0, 1, -1)


@pytest.mark.parametrize("k", [0, 2, -1])
def test_diag_and_trace_as_torch(k):
  grads_match(lambda t: t.diag(k), lambda t: torch.diag(t, k), X[0])
  grads_match(lambda t: t.diag(k), lambda t: torch.diag(t, k), X)
  grads_match(lambda t: t.trace(), torch.trace, X)
  assert Tensor([True, False]).diag().dtype == dtypes.bool
  np.testing.assert_array_equal(Tensor([True, False]).diag(k).numpy(), torch.diag(torch.tensor([True, False]), k).numpy())
  assert Tensor.zeros(0).diag(k).shape == (abs(k), abs(k))
  with pytest.raises(ValueError, match="1-D or 2-D"): Tensor.zeros(2, 2, 2).diag()
  with pytest.raises(ValueError, match="matrix"): Tensor.zeros(3).trace()


def test_outer_as_torch():
  grads_match(lambda a, b: a.outer(b), torch.outer, X[0], X[1, :3])
  assert Tensor([1, 2]).outer(np.array([3, 4])).tolist() == [[3, 4], [6, 8]]
  with pytest.raises(ValueError, match="1-D"): Tensor(X).outer(Tensor(X[0]))


@pytest.mark.parametrize("repeats,dim", [(2, 0), (3, -1), (2, None), ([1, 0, 2], 0), ([2, 1, 0, 3], 1), ([0, 0, 0], 0), (0, 1)])
def test_repeat_interleave_as_torch(repeats, dim):
  grads_match(lambda t: t.repeat_interleave(repeats, dim), lambda t: torch.repeat_interleave(t, torch.tensor(repeats), dim), X)


def test_repeat_interleave_takes_a_tensor_of_counts_and_refuses_bad_ones():
  np.testing.assert_array_equal(Tensor([5, 6]).repeat_interleave(Tensor([2, 1])).numpy(), np.repeat([5, 6], [2, 1]))
  np.testing.assert_array_equal(Tensor(7).repeat_interleave(3).numpy(), [7, 7, 7])
  with pytest.raises(ValueError, match="3 repeats for the 4 elements"): Tensor(X).repeat_interleave([1, 2, 3], 1)
  with pytest.raises(ValueError, match="counts >= 0"): Tensor(X).repeat_interleave(-1)
  with pytest.raises(ValueError, match="counts >= 0"): Tensor(X).repeat_interleave(1.5)


def test_masked_select_as_torch():
  mask = X[:1] > 0   # broadcast over the rows
  grads_match(lambda t: t.masked_select(Tensor(mask)), lambda t: torch.masked_select(t, torch.tensor(mask)), X)
  assert Tensor(X).masked_select(Tensor(np.zeros((3, 4), bool))).shape == (0,)
  np.testing.assert_array_equal(Tensor(X).T.masked_select(X.T > 1).numpy(), X.T[X.T > 1])
  with pytest.raises(TypeError, match="bool mask"): Tensor(X).masked_select(Tensor(X))


# ---- losses with torch's signatures
LOSS_OPTIONS = [{}, {"reduction": "sum"}, {"reduction": "none"}, {"weight": True}, {"ignore_index": 1},
                {"label_smoothing": 0.2}, {"weight": True, "label_smoothing": 0.3, "ignore_index": 2}]


@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2), (4,)], ids=str)
@pytest.mark.parametrize("options", LOSS_OPTIONS, ids=str)
@pytest.mark.parametrize("op", ["cross_entropy", "nll_loss"])
def test_class_index_losses_as_torch(op, options, shape):
  if op == "nll_loss" and "label_smoothing" in options: return   # nll_loss has no smoothing
  gen = np.random.default_rng(3)
  scores = gen.standard_normal(shape)
  target = gen.integers(0, 4, shape[:1] + shape[2:] if len(shape) > 1 else ())
  class_weight = gen.uniform(0.5, 2.0, 4)
  kwargs = {k: v for k, v in options.items() if k != "weight"}
  ours = lambda s: getattr(s, op)(Tensor(target), weight=Tensor(class_weight) if "weight" in options else None, **kwargs)
  theirs = lambda s: getattr(torch.nn.functional, op)(s, torch.tensor(target), weight=torch.tensor(class_weight) if "weight" in options else None, **kwargs)
  grads_match(ours, theirs, scores, tol=1e-12)


@pytest.mark.parametrize("options", [{}, {"label_smoothing": 0.1, "reduction": "none"}, {"weight": True, "reduction": "sum"}], ids=str)
def test_cross_entropy_of_class_probabilities_as_torch(options):
  gen = np.random.default_rng(4)
  scores, probabilities = gen.standard_normal((3, 5, 2)), gen.random((3, 5, 2))
  probabilities /= probabilities.sum(1, keepdims=True)
  class_weight = gen.uniform(0.5, 2.0, 5)
  kwargs = {k: v for k, v in options.items() if k != "weight"}
  grads_match(lambda s, p: s.cross_entropy(p, weight=Tensor(class_weight) if "weight" in options else None, **kwargs),
              lambda s, p: torch.nn.functional.cross_entropy(s, p, weight=torch.tensor(class_weight) if "weight" in options else None, **kwargs),
              scores, probabilities, tol=1e-12)


def test_losses_refuse_bad_input():
  scores = Tensor.zeros(4, 3)
  with pytest.raises(ValueError, match="reduction"): scores.cross_entropy(Tensor([0, 1, 2, 0]), reduction="avg")
  with pytest.raises(ValueError, match=r"class indices of shape \(3,\) do not match"): scores.cross_entropy(Tensor([0, 1, 2]))
  with pytest.raises(ValueError, match="class probabilities"): scores.cross_entropy(Tensor.zeros(4, 2))
  with pytest.raises(TypeError, match="ints"): scores.nll_loss(Tensor([True, False, True, True]))
  with pytest.raises(ValueError, match="class weight"): scores.nll_loss(Tensor([0, 1, 2, 0]), weight=Tensor.ones(4))
  with pytest.raises(ValueError, match="label_smoothing"): scores.cross_entropy(Tensor([0, 1, 2, 0]), label_smoothing=1.5)
  with pytest.raises(ValueError, match="class dim"): Tensor(1.0).cross_entropy(Tensor(0))


def test_logsigmoid_as_torch():
  values = np.array([-800.0, -30.0, -1.0, 0.0, 2.5, 40.0, 800.0])
  grads_match(lambda t: t.logsigmoid(), torch.nn.functional.logsigmoid, values, tol=1e-12)


# ---- shapes: movedim, expand_as, reshape_as, unbind, index_select, diff, count_nonzero
@pytest.mark.parametrize("source,destination", [(0, 2), (-1, 0), ((0, 1), (2, 0)), ((2, 0), (0, 1)), (1, 1)])
def test_movedim_as_torch(source, destination):
  values = np.arange(24.0).reshape(2, 3, 4)
  grads_match(lambda t: t.movedim(source, destination), lambda t: torch.movedim(t, source, destination), values)
  np.testing.assert_array_equal(Tensor(values).moveaxis(source, destination).numpy(), np.moveaxis(values, source, destination))
  with pytest.raises(ValueError, match="as many"): Tensor(values).movedim((0, 1), 2)
  with pytest.raises(ValueError, match="repeat"): Tensor(values).movedim((0, 0), (1, 2))


def test_expand_as_reshape_as_view_as_and_unbind():
  t, other = Tensor([[1.0], [2.0]]), Tensor.zeros(2, 3)
  assert t.expand_as(other).tolist() == [[1.0] * 3, [2.0] * 3]
  assert other.reshape_as(Tensor.zeros(3, 2)).shape == (3, 2) and other.view_as(np.zeros((6,))).shape == (6,)
  grads_match(lambda x: x.unbind(1)[1] * 2 + x.unbind(1)[0], lambda x: x.unbind(1)[1] * 2 + x.unbind(1)[0], X)
  assert [u.shape for u in Tensor(X).unbind(-2)] == [(4,)] * 3 and Tensor.zeros(0, 2).unbind() == ()


def test_index_select_as_torch():
  index = np.array([2, 0, 2, -1])
  grads_match(lambda t: t.index_select(1, Tensor(index)), lambda t: torch.index_select(t, 1, torch.tensor(index % 4)), X)
  assert Tensor(X).index_select(0, Tensor(np.zeros(0, np.int64))).shape == (0, 4)
  with pytest.raises(IndexError, match="1-D int index"): Tensor(X).index_select(0, Tensor([[0]]))
  with pytest.raises(IndexError, match="1-D int index"): Tensor(X).index_select(0, Tensor([0.0]))
  for dim, index in ((0, [0]), (-1, 0)):   # a 0-d tensor's only element, as torch's
    grads_match(lambda t: t.index_select(dim, Tensor(index)), lambda t: torch.index_select(t, dim, torch.tensor(index)), np.array(2.5))
  with pytest.raises(IndexError, match="one value"): Tensor(2.5).index_select(0, Tensor([0, 0]))
  with pytest.raises(IndexError): Tensor(2.5).index_select(1, Tensor([0]))


@pytest.mark.parametrize("n,dim", [(1, -1), (2, 1), (1, 0), (3, 0), (5, 0), (0, 1)])
def test_diff_as_torch(n, dim):
  grads_match(lambda t: t.diff(n, dim=dim), lambda t: torch.diff(t, n, dim=dim), X)
  flags = X > 0
  np.testing.assert_array_equal(Tensor(flags).diff(n, dim).numpy(), np.diff(flags, n, dim))
  np.testing.assert_array_equal(Tensor(np.arange(6, dtype=np.uint8)).diff().numpy(), np.diff(np.arange(6, dtype=np.uint8)))
  with pytest.raises(ValueError, match="0-d"): Tensor(1.0).diff()


def test_count_nonzero_as_torch():
  values = np.array([[0.0, 1.0, -0.0, NAN], [2.0, 0.0, 0.0, 3.0]])
  for dim in (None, 0, 1, (0, 1)):
    expected = torch.count_nonzero(torch.tensor(values), dim=dim).numpy()
    np.testing.assert_array_equal(Tensor(values).count_nonzero(dim=dim).numpy(), expected)
  assert Tensor.zeros(0, 3).count_nonzero().item() == 0


# ---- torch's in-place methods
def test_in_place_methods_as_torch():
  ours, theirs = Tensor(X), torch.tensor(X)
  for step in [lambda t: t.add_(2.0), lambda t: t.sub_(np.ones(4) if isinstance(t, Tensor) else torch.ones(4, dtype=torch.float64), alpha=3),
               lambda t: t.mul_(-0.5), lambda t: t.div_(4.0), lambda t: t.clamp_(min=-0.5), lambda t: t.clamp_(max=0.25),
               lambda t: t.add_(t if isinstance(t, Tensor) else t.clone(), alpha=2)]:
    assert step(ours) is ours
    step(theirs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
  assert ours.zero_().tolist() == [[0.0] * 4] * 3 and ours.fill_(7).tolist() == [[7.0] * 4] * 3


def test_in_place_methods_on_views_write_through():
  t = Tensor(np.arange(12.0).reshape(3, 4)).realize()
  t[1].zero_()
  t[:, 0].fill_(-1)
  expected = np.arange(12.0).reshape(3, 4)
  expected[1] = 0
  expected[:, 0] = -1
  np.testing.assert_array_equal(t.numpy(), expected)


def test_copy_casts_and_broadcasts_as_torch():
  ints, reference = Tensor([1, 2, 3]), torch.tensor([1, 2, 3], dtype=torch.int32)
  ints.copy_(np.array([1.7, -2.2, 9.9]))
  reference.copy_(torch.tensor([1.7, -2.2, 9.9]))
  assert ints.dtype == dtypes.int32 and ints.tolist() == reference.tolist()
  grid = Tensor.zeros(2, 3)
  assert grid.copy_(Tensor([1.0, 2.0, 3.0])).tolist() == [[1.0, 2.0, 3.0]] * 2
  assert grid.copy_(5).tolist() == [[5.0] * 3] * 2
  with pytest.raises(ValueError): grid.copy_(Tensor.ones(4))


def test_random_in_place_fills():
  w = Tensor.zeros(200, 50, requires_grad=True)
  assert w.uniform_(-0.5, 0.25) is w and w.requires_grad and w.grad is None
  values = w.numpy()
  assert values.min() >= -0.5 and values.max() < 0.25 and abs(values.mean() + 0.125) < 0.01
  values = Tensor.zeros(200, 50, dtype=dtypes.float64).normal_(3.0, 2.0).numpy()
  assert abs(values.mean() - 3.0) < 0.1 and abs(values.std() - 2.0) < 0.1
  with pytest.raises(TypeError): Tensor([1, 2]).uniform_()   # a float draw cannot go into an int tensor
  with pytest.raises(TypeError): Tensor([1, 2]).add_(0.5)


# ---- more of torch's and numpy's names: new_*, type_as, broadcast_to, tile, logaddexp, hypot, xlogy, addcmul, addcdiv
def test_new_tensors_type_as_broadcast_to_and_tile():
  t = Tensor([1.0, 2.0, 3.0], dtype=dtypes.float16)
  for made, shape in [(t.new_zeros(2, 3), (2, 3)), (t.new_ones((2,)), (2,)), (t.new_full((2, 2), 7), (2, 2)), (t.new_empty(3), (3,)),
                      (t.new_tensor([[1, 2]]), (1, 2))]:
    assert made.shape == shape and made.dtype == dtypes.float16 and made.device == t.device
  assert t.new_ones(2).tolist() == [1.0, 1.0] and t.new_full((1,), 7).tolist() == [7.0] and t.new_zeros(2, dtype=dtypes.int8).dtype == dtypes.int8
  assert Tensor([1, 2]).type_as(t).dtype == dtypes.float16
  np.testing.assert_array_equal(Tensor(X[0]).broadcast_to((2, 4)).numpy(), np.broadcast_to(X[0], (2, 4)))
  with pytest.raises(ValueError, match="broadcast"): Tensor(X).broadcast_to((4, 4))
  with pytest.raises(ValueError, match="broadcast"): Tensor(X).broadcast_to((1, 4))
  for reps in [2, (2, 1), (1, 2, 3)]:
    np.testing.assert_array_equal(Tensor(X).tile(reps).numpy(), np.tile(X, reps))
    np.testing.assert_array_equal(Tensor(X).tile(reps).numpy(), torch.tensor(X).tile(reps if isinstance(reps, tuple) else (reps,)).numpy())
  np.testing.assert_array_equal(Tensor(X).tile(2, 1, 3).numpy(), torch.tensor(X).tile(2, 1, 3).numpy())   # torch's ints


BINARY_A = np.array([-1000.0, 0.0, 1000.0, 3.0, -2.5, 1e-300, 7.0, 0.5])
BINARY_B = np.array([-1000.0, 1.0, 999.0, 4.0, 2.5, 1e-300, -1e-3, 0.5])


@pytest.mark.parametrize("op", ["logaddexp", "hypot"])
def test_logaddexp_and_hypot_as_torch(op):
  grads_match(lambda a, b: getattr(a, op)(b), getattr(torch, op), BINARY_A, BINARY_B, tol=1e-12)
  specials_a = np.array([INF, -INF, INF, NAN, 3e200, INF])
  specials_b = np.array([INF, -INF, -INF, 1.0, 4e200, NAN])
  np.testing.assert_array_equal(getattr(Tensor(specials_a), op)(Tensor(specials_b)).numpy(), getattr(torch, op)(torch.tensor(specials_a), torch.tensor(specials_b)).numpy())
  assert getattr(Tensor([1, 2]), op)(Tensor([3, 4])).dtype == dtypes.float32
  assert getattr(Tensor([1.0, 2.0], dtype=dtypes.float16), op)(1.0).dtype == dtypes.float16


def test_xlogy_as_torch():
  a, b = np.array([0.0, 0.0, 1.5, 2.0, 0.0, -3.0]), np.array([0.0, NAN, 2.0, 0.0, INF, 0.5])
  np.testing.assert_array_equal(Tensor(a).xlogy(Tensor(b)).numpy(), torch.xlogy(torch.tensor(a), torch.tensor(b)).numpy())
  grads_match(lambda x, y: x.xlogy(y), torch.xlogy, np.array([0.0, 1.5, -2.0, 0.0]), np.array([0.5, 2.0, 3.0, -1.0]), tol=1e-12)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addcmul_and_addcdiv_as_torch(op):
  grads_match(lambda s, a, b: getattr(s, op)(a, b, value=0.5), lambda s, a, b: getattr(torch, op)(s, a, b, value=0.5), X, X + 5, X[:1] + 7)


# ---- torch's F.pad modes and F.interpolate
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", [(2, 1), (1, 2, 0, 3), (0, 0, 2, 2), (3, 3, 1, 1)], ids=str)
def test_pad_modes_as_torch(mode, padding):
  images = np.random.default_rng(20).standard_normal((2, 3, 4, 5) if len(padding) == 4 else (3, 4, 5))   # the ranks torch takes
  grads_match(lambda t: t.pad2d(padding, mode=mode), lambda t: torch.nn.functional.pad(t, padding, mode=mode), images)


def test_pad_modes_refuse_too_much_and_unknown_modes():
  t = Tensor.ones(1, 3)
  with pytest.raises(ValueError, match="reflect pad"): t.pad2d((3, 0), mode="reflect")
  with pytest.raises(ValueError, match="circular pad"): t.pad2d((0, 4), mode="circular")
  with pytest.raises(ValueError, match="replicate pad"): Tensor.ones(1, 0).pad2d((1, 1), mode="replicate")
  with pytest.raises(ValueError, match="pad mode"): t.pad2d((1, 1), mode="wrap")
  assert t.pad(((0, 0), (1, 1)), mode="replicate").tolist() == [[1.0] * 5]


INTERPOLATIONS = [((1, 2, 5), (8,)), ((1, 2, 9), (4,)), ((2, 1, 4, 6), (7, 3)), ((1, 1, 3, 4, 5), (6, 2, 9)), ((2, 3, 5), (5,))]


@pytest.mark.parametrize("mode,align_corners", [("linear", False), ("linear", True), ("nearest", False), ("nearest-exact", False)])
@pytest.mark.parametrize("shape,size", INTERPOLATIONS, ids=str)
def test_interpolate_as_torch(shape, size, mode, align_corners):
  torch_mode = {1: "linear", 2: "bilinear", 3: "trilinear"}[len(size)] if mode == "linear" else mode
  kwargs = {"align_corners": align_corners} if mode == "linear" else {}
  values = np.random.default_rng(21).standard_normal(shape).astype(np.float32)
  ours, theirs = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  out = ours.interpolate(size, mode=mode, align_corners=align_corners)
  expected = torch.nn.functional.interpolate(theirs, size=size, mode=torch_mode, **kwargs)
  np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
  weights = np.random.default_rng(22).standard_normal(tuple(expected.shape)).astype(np.float32)
  (out * Tensor(weights)).sum().backward()
  (expected * torch.tensor(weights)).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_interpolate_of_ints_same_sizes_and_bad_input():
  pixels = np.arange(12, dtype=np.uint8).reshape(1, 1, 3, 4)
  np.testing.assert_array_equal(Tensor(pixels).interpolate((6, 8), mode="nearest").numpy(),
                                torch.nn.functional.interpolate(torch.tensor(pixels), size=(6, 8), mode="nearest").numpy())
  linear = Tensor(pixels).interpolate((6, 8))   # of ints: the image's dtype, rounded as torch's uint8 bilinear
  assert linear.dtype == dtypes.uint8
  theirs = torch.nn.functional.interpolate(torch.tensor(pixels), size=(6, 8), mode="bilinear").numpy()
  assert np.abs(linear.numpy().astype(np.int64) - theirs).max() <= 1
  same = Tensor(X)
  assert same.interpolate((4,)) is not same and same.interpolate((4,)).tolist() == X.tolist()
  with pytest.raises(ValueError, match="mode"): same.interpolate((5,), mode="cubic")
  with pytest.raises(ValueError, match="at least 3 dims"): same.interpolate((2, 2, 2))
  with pytest.raises(ValueError, match="no elements"): Tensor.zeros(2, 0).interpolate((3,))


# ---- unfold, normalize, cosine_similarity
@pytest.mark.parametrize("dim,size,step", [(0, 2, 1), (1, 3, 1), (1, 2, 2), (-1, 4, 3), (0, 3, 5)])
def test_unfold_as_torch(dim, size, step):
  grads_match(lambda t: t.unfold(dim, size, step), lambda t: t.unfold(dim, size, step), X)


@pytest.mark.parametrize("dim,size,step", [(0, 2, 1), (1, 2, 1), (2, 3, 2), (-1, 1, 1)])
def test_unfold_of_a_cube_as_torch(dim, size, step):
  grads_match(lambda t: t.unfold(dim, size, step).unfold(0, 1, 1), lambda t: t.unfold(dim, size, step).unfold(0, 1, 1), CUBE)


def test_unfold_into_empty_windows_as_torch():
  grads_match(lambda t: t.unfold(1, 0, 2), lambda t: t.unfold(1, 0, 2), X)


def test_unfold_of_0d_and_bad_sizes():
  assert Tensor(3.0).unfold(0, 1, 1).tolist() == [3.0]
  with pytest.raises(ValueError, match="size 5 is more"): Tensor(X).unfold(0, 5, 1)
  with pytest.raises(ValueError, match="step"): Tensor(X).unfold(0, 1, 0)


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1)])
def test_normalize_and_cosine_similarity_as_torch(p, dim):
  values = np.vstack([X, np.zeros((1, 4))])   # a zero row: the eps floor
  grads_match(lambda t: t.normalize(p, dim), lambda t: torch.nn.functional.normalize(t, p=p, dim=dim), values)
  other = np.random.default_rng(23).standard_normal(values.shape)
  grads_match(lambda a, b: a.cosine_similarity(b, dim), lambda a, b: torch.nn.functional.cosine_similarity(a, b, dim), values + 0.5, other)


# ---- kthvalue, rot90, flips, cross, kron, tensordot
@pytest.mark.parametrize("k,dim,keepdim", [(1, 1, False), (2, -1, True), (3, 0, False)])
def test_kthvalue_as_torch(k, dim, keepdim):
  values = np.array([[3.0, 1.0, 2.0, 2.0], [0.0, 5.0, 4.0, -1.0], [7.0, 7.0, 6.0, 8.0]])
  ours, indices = Tensor(values).kthvalue(k, dim, keepdim)
  expected, expected_indices = torch.kthvalue(torch.tensor(values), k, dim, keepdim)
  np.testing.assert_array_equal(ours.numpy(), expected.numpy())
  np.testing.assert_array_equal(np.take_along_axis(values, np.expand_dims(indices.numpy(), dim) if not keepdim else indices.numpy(), dim),
                                np.expand_dims(expected.numpy(), dim) if not keepdim else expected.numpy())   # ties: any equal one
  grads_match(lambda t: t.kthvalue(k, dim, keepdim)[0], lambda t: torch.kthvalue(t, k, dim, keepdim)[0], X)
  with pytest.raises(ValueError, match="k=9"): Tensor(values).kthvalue(9)


@pytest.mark.parametrize("k,dims", [(1, (0, 1)), (2, (0, 1)), (-1, (0, 1)), (3, (1, 0)), (4, (0, 1)), (1, (2, 0))])
def test_rot90_and_flips_as_numpy(k, dims):
  values = np.arange(24.0).reshape(2, 3, 4)
  np.testing.assert_array_equal(Tensor(values).rot90(k, dims).numpy(), np.rot90(values, k, dims))
  grads_match(lambda t: t.rot90(k, dims), lambda t: torch.rot90(t, k, dims), values)
  np.testing.assert_array_equal(Tensor(values).fliplr().numpy(), np.fliplr(values))
  np.testing.assert_array_equal(Tensor(values).flipud().numpy(), np.flipud(values))
  with pytest.raises(ValueError, match="differ"): Tensor(values).rot90(1, (1, 1))


def test_cross_kron_and_tensordot_as_torch():
  gen = np.random.default_rng(24)
  a, b = gen.standard_normal((4, 3)), gen.standard_normal((1, 3))
  grads_match(lambda x, y: x.cross(y), lambda x, y: torch.linalg.cross(x, y), a, b)
  grads_match(lambda x, y: x.cross(y, dim=0), lambda x, y: torch.linalg.cross(x, y, dim=0), a.T.copy(), gen.standard_normal((3, 4)))
  with pytest.raises(ValueError, match="vectors of 3"): Tensor(X).cross(Tensor(X))
  grads_match(lambda x, y: x.kron(y), torch.kron, gen.standard_normal((2, 3)), gen.standard_normal((3, 2)))
  grads_match(lambda x, y: x.kron(y), torch.kron, gen.standard_normal((2,)), gen.standard_normal((2, 2)))
  for dims, shapes in [(2, ((2, 3, 4), (3, 4, 5))), (([1, 2], [1, 0]), ((2, 3, 4), (4, 3))), (0, ((2,), (3,))), (1, ((2, 3), (3, 2)))]:
    grads_match(lambda x, y: x.tensordot(y, dims), lambda x, y: torch.tensordot(x, y, dims=dims), *[gen.standard_normal(s) for s in shapes])
  with pytest.raises(ValueError, match="sizes differ"): Tensor.zeros(2, 3).tensordot(Tensor.zeros(2, 3), 1)


# ---- torch's small names: to(dtype), byte/char/short/bfloat16, dim, nelement, mT, squeeze of dims, unbiased
def test_torch_s_conversions_and_shape_names():
  t = Tensor(np.arange(6.0).reshape(2, 1, 3))
  assert t.to(dtypes.float16).dtype == dtypes.float16 and t.to(np.int32).dtype == dtypes.int32 and t.to("float64").dtype == dtypes.float64
  assert t.to("CPU", dtype="int8").dtype == dtypes.int8 and t.to("CPU") is t
  with pytest.raises(TypeError, match="two dtypes"): t.to(dtypes.int8, dtype=dtypes.int16)
  for method, name in [("byte", "uint8"), ("char", "int8"), ("short", "int16"), ("bfloat16", "bfloat16")]:
    assert getattr(t, method)().dtype == getattr(dtypes, name) == getattr(dtypes, name)
  assert t.dim() == t.ndimension() == 3 and t.nelement() == 6
  np.testing.assert_array_equal(t.mT.numpy(), torch.tensor(np.arange(6.0).reshape(2, 1, 3)).mT.numpy())
  assert t.squeeze((0, 1)).shape == tuple(torch.zeros(2, 1, 3).squeeze((0, 1)).shape) == (2, 3)


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("unbiased", [True, False])
def test_var_and_std_take_torch_s_unbiased(op, unbiased):
  np.testing.assert_allclose(getattr(Tensor(X), op)(1, unbiased=unbiased).numpy(), getattr(torch.tensor(X), op)(1, unbiased=unbiased).numpy(), rtol=1e-12)


# ---- histc, trapezoid, bernoulli
def test_histc_as_torch():
  values = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, -1.0, 6.0, NAN, 4.999, 0.2])
  for kwargs in [dict(bins=5, min=0, max=5), dict(bins=4), dict(bins=7, min=-0.5, max=3.25)]:
    data = values if "min" in kwargs else values[~np.isnan(values)]   # torch finds no range with a NaN among them
    np.testing.assert_array_equal(Tensor(data).histc(**kwargs).numpy(), torch.histc(torch.tensor(data, dtype=torch.float32), **kwargs).numpy())
  for bad in ([1.0, NAN, 2.0], [1.0, np.inf]):   # its own range not finite: torch and numpy raise
    with pytest.raises(ValueError, match="not finite"): Tensor(bad).histc(4)
    with pytest.raises(ValueError, match="not finite"): Tensor(bad).histogram(4)
    with pytest.raises(RuntimeError, match="not finite"): torch.histc(torch.tensor(bad), 4)
  with pytest.raises(ValueError, match="not finite"): Tensor([1.0]).histc(3, min=0, max=np.inf)
  np.testing.assert_array_equal(Tensor([2.0, 2.0]).histc(3).numpy(), torch.histc(torch.tensor([2.0, 2.0]), bins=3).numpy())
  assert Tensor([1, 2, 2]).histc(2).dtype == dtypes.float32 and Tensor(np.zeros(0)).histc(3).tolist() == [0.0, 0.0, 0.0]
  with pytest.raises(ValueError, match="min <= max"): Tensor([1.0]).histc(3, min=2, max=1)


@pytest.mark.parametrize("how", ["dx", "points_1d", "points_full", "dim0"])
def test_trapezoid_as_torch(how):
  y = np.random.default_rng(25).standard_normal((3, 5))
  points = np.cumsum(np.random.default_rng(26).uniform(0.1, 1.0, 5))
  if how == "dx": grads_match(lambda t: t.trapezoid(dx=0.5), lambda t: torch.trapezoid(t, dx=0.5), y)
  elif how == "points_1d": grads_match(lambda t, x: t.trapezoid(x), lambda t, x: torch.trapezoid(t, x), y, points)
  elif how == "points_full": grads_match(lambda t, x: t.trapezoid(x), lambda t, x: torch.trapezoid(t, x), y, np.tile(points, (3, 1)))
  else: grads_match(lambda t: t.trapezoid(dim=0), lambda t: torch.trapezoid(t, dim=0), y)


def test_bernoulli_draws_ones_with_the_given_probability():
  Tensor.manual_seed(7)
  p = Tensor(np.repeat([[0.0, 0.25, 1.0]], 20000, axis=0).astype(np.float32))
  draws = p.bernoulli()
  assert draws.dtype == dtypes.float32 and set(np.unique(draws.numpy())) <= {0.0, 1.0}
  means = draws.mean(0).numpy()
  assert means[0] == 0.0 and means[2] == 1.0 and abs(means[1] - 0.25) < 0.01
  Tensor.manual_seed(7)
  np.testing.assert_array_equal(p.bernoulli().numpy(), draws.numpy())   # the generator's draws: seeded, repeatable


@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float16, dtypes.bfloat16])
@pytest.mark.parametrize("bad", [1.5, -0.25, float("nan")])
def test_bernoulli_of_computed_probabilities_outside_0_1_raises_as_torch_s(bad, dtype):
  values = [[0.5, bad], [0.0, 1.0]]
  with pytest.raises(RuntimeError): torch.tensor(values).bernoulli()
  with pytest.raises(ValueError, match=r"bernoulli needs probabilities in \[0, 1\], got"): Tensor(values, dtype=dtype).bernoulli()
  with pytest.raises(ValueError, match="bernoulli needs"): Tensor(values, dtype=dtype)[:, 1].bernoulli()   # a view reads its own
  assert Tensor(values, dtype=dtype)[1].bernoulli().numpy().tolist() == [0.0, 1.0]   # the row without it draws


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_approximations_as_torch(approximate):
  values = np.array([-8.0, -3.0, -1.0, -1e-3, 0.0, 0.5, 2.0, 6.0])
  grads_match(lambda t: t.gelu(approximate=approximate), lambda t: torch.nn.functional.gelu(t, approximate=approximate), values, tol=1e-9)
  assert Tensor(values).gelu().tolist() == Tensor(values).gelu("tanh").tolist()   # tinygrad's default
  with pytest.raises(ValueError, match="approximate"): Tensor(values).gelu("erf")


def test_attention_takes_torch_s_scale():
  gen = np.random.default_rng(27)
  q, k, v = (gen.standard_normal((2, 3, 4)) for _ in range(3))
  grads_match(lambda a, b, c: a.scaled_dot_product_attention(b, c, scale=0.3),
              lambda a, b, c: torch.nn.functional.scaled_dot_product_attention(a, b, c, scale=0.3), q, k, v)
