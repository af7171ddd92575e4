"""torch's other Tensor methods: its names for ops nbgrad has (arccos, multiply, eq, mm, swapdims, ...), and the
elementwise ops, products, views, writes and reductions a torch user reaches for (copysign, nextafter, addmm,
narrow, tensor_split, diag_embed, index_put, masked_scatter, logcumsumexp, cov, histogram, linspace, ...).
Values and gradients against torch (CPU)."""
import math
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes
from against_torch import grads_match

INF, NAN = math.inf, math.nan
X = np.array([[1.5, -2.0, 0.25, 3.0], [0.0, 0.5, -1.0, 4.0], [-0.75, 2.5, 1.0, -3.5]])
POSITIVE = np.abs(X) + 0.5
UNIT = np.array([[0.1, -0.5, 0.9], [0.0, 0.3, -0.7]])
TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "int32": torch.int32}


# ---- torch's names of ops nbgrad has: the same values and gradients
SAME_OPS = [("absolute", X, ()), ("negative", X, ()), ("sgn", X, ()), ("fix", X * 1.7, ()), ("arccos", UNIT, ()),
            ("arcsin", UNIT, ()), ("arctan", X, ()), ("arccosh", POSITIVE + 1, ()), ("arcsinh", X, ()), ("arctanh", UNIT, ()),
            ("multiply", X, (2.5,)), ("subtract", X, (1.5,)), ("divide", X, (4.0,)), ("true_divide", X, (3.0,)),
            ("clamp_min", X, (0.3,)), ("clamp_max", X, (0.3,)), ("swapdims", X, (0, 1)), ("t", X, ()), ("msort", X, ()),
            ("frac", X * 1.3, ()), ("deg2rad", X, ()), ("rad2deg", X, ()), ("sinc", X, ()), ("logit", UNIT.clip(0.05, 0.95), ()),
            ("logit", UNIT, (0.2,)), ("logit", np.array([[0.0, 1.0, 0.5], [0.2, 0.8, 1e-3]]), ()),   # gradient inf at 0 and 1
            ("logit", np.array([[0.0, 1.0, 0.5], [0.2, 0.8, 0.1]]), (0.2,)), ("hardshrink", X, (0.6,)), ("positive", X, ()),
            ("logcumsumexp", X, (1,)), ("logcumsumexp", X, (0,)), ("nansum", X, ()), ("nanmean", X, (1,)),
            ("diag_embed", X, ()), ("diag_embed", X, (1, 0, 2)), ("diagflat", X, (-1,)), ("renorm", X, (2, 0, 3.0)),
            ("renorm", X, (1, 1, 2.0)), ("narrow", X, (1, 1, 2)), ("narrow", X, (0, -2, 2)), ("select", X, (1, -1)),
            ("cov", X, ()), ("corrcoef", X, ()), ("sum_to_size", X, (1, 4)), ("adjoint", X, ()), ("conj", X, ())]


@pytest.mark.parametrize("op,values,args", SAME_OPS, ids=[f"{op}{args}" for op, _, args in SAME_OPS])
def test_method_as_torch(op, values, args):
  grads_match(lambda t: getattr(t, op)(*args), lambda t: getattr(t, op)(*args), values, tol=1e-9)


def test_shrinks_as_torch_functional():
  grads_match(lambda t: t.softshrink(0.7), lambda t: torch.nn.functional.softshrink(t, 0.7), X)
  grads_match(lambda t: t.tanhshrink(), torch.nn.functional.tanhshrink, X)


SHRINK_EDGES = np.array([np.inf, -np.inf, 0.7, -0.7, -0.2, 0.0, -0.0, 2.0])


def test_shrinks_keep_nan_as_torch():
  """A NaN stays NaN (where it compared as within lambd and gave 0); the edges' values and gradients are torch's."""
  for ours, theirs in ((lambda t: t.hardshrink(0.7), lambda t: torch.nn.functional.hardshrink(t, 0.7)),
                       (lambda t: t.softshrink(0.7), lambda t: torch.nn.functional.softshrink(t, 0.7))):
    grads_match(ours, theirs, SHRINK_EDGES)
    assert np.isnan(ours(Tensor([np.nan, 1.0])).numpy()[0]) and np.isnan(theirs(torch.tensor([np.nan, 1.0])).numpy()[0])


def test_logit_gradient_is_nan_where_its_value_is():
  grads_match(lambda t: t.logit(), lambda t: t.logit(), np.array([-0.5, 2.0, 0.3, 0.0, 1.0, np.nan]))


@pytest.mark.parametrize("op", ["i1", "i1e"])
def test_bessel_i1_gradient_at_subnormals_as_torch(op):
  """i1(x) / x at a subnormal x kept too few bits: the gradient is its limit 1/2 there, as torch's."""
  grads_match(lambda t: getattr(t, op)(), getattr(torch.special, op), np.array([1e-320, -1e-315, 0.0, 2e-308, 2.0, -3.0]))
  ours = Tensor(np.array([1e-45, -1e-40, 0.0, 2.0], np.float32), requires_grad=True)
  getattr(ours, op)().sum().backward()
  theirs = torch.tensor([1e-45, -1e-40, 0.0, 2.0], requires_grad=True)
  getattr(torch.special, op)(theirs).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize("name", ["float32", "float16", "int32"])
@pytest.mark.parametrize("op", ["sinc", "deg2rad", "rad2deg", "frac", "logit"])
def test_float_methods_of_other_dtypes_as_torch(op, name):
  values = (UNIT.clip(0.05, 0.95) if op == "logit" else X * 1.3) if name != "int32" else np.array([[0, 1, 2], [-3, 4, 0]])
  if name == "int32" and op in ("frac", "logit"): return   # torch refuses them for ints
  got = getattr(Tensor(values.astype(name)), op)()
  expected = getattr(torch.tensor(values.astype(name)), op)()
  assert got.dtype == getattr(dtypes, str(expected.dtype).split(".")[1])
  tol = {"float16": 2e-3, "float32": 3e-7}.get(str(expected.dtype).split(".")[1], 1e-12)
  np.testing.assert_allclose(got.numpy().astype(np.float64), expected.double().numpy(), rtol=tol, atol=tol)


# ---- comparisons under torch's names
@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal"])
def test_comparison_methods_as_torch(op):
  a, b = np.array([[1.0, NAN, 2.0, -0.0]]), np.array([[1.0], [0.0], [NAN]])
  for other, torch_other in ((Tensor(b), torch.tensor(b)), (2.0, 2.0)):
    got = getattr(Tensor(a), op)(other)
    assert got.dtype == dtypes.bool
    np.testing.assert_array_equal(got.numpy(), getattr(torch.tensor(a), op)(torch_other).numpy())
  for big in (2**40, 2**32 + 1, -(2**33) + 5):   # an int past int32 wraps into it, as in torch's int32 comparisons
    assert getattr(Tensor([1, 2**31 - 1]), op)(big).tolist() == getattr(torch.tensor([1, 2**31 - 1], dtype=torch.int32), op)(big).tolist()


# ---- elementwise ops of two tensors
EDGES = np.array([0.0, -0.0, 1.5, -2.5, INF, -INF, NAN, 1e-40, 3.0])
OTHERS = np.array([-1.0, 2.0, -0.0, NAN, 0.0, 5.0, 1.0, -INF, 3.0])


@pytest.mark.parametrize("name", ["float32", "float64", "float16"])
@pytest.mark.parametrize("op", ["copysign", "fmax", "fmin", "nextafter", "heaviside", "float_power", "ldexp"])
def test_binary_methods_as_torch_at_special_values(op, name):
  a, b = EDGES.astype(name), OTHERS.astype(name)
  if op == "ldexp": b = np.array([1, -2, 3, 0, -1, 2, 5, 4, 0], np.int32)
  if op == "float_power": a = np.abs(a)
  got = getattr(Tensor(a), op)(Tensor(b))
  expected = getattr(torch.tensor(a), op)(torch.tensor(b))
  assert got.dtype == getattr(dtypes, str(expected.dtype).split(".")[1])
  got, expected = got.numpy().astype(np.float64), expected.double().numpy()
  np.testing.assert_array_equal(got, expected)
  numbers = ~np.isnan(expected)
  np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(expected[numbers]))   # signed zeros kept


def test_binary_methods_of_ints_broadcasting_and_gradients():
  assert Tensor([1, -2]).copysign(Tensor([-1, 1])).dtype == dtypes.float32
  np.testing.assert_array_equal(Tensor([1, -2]).copysign(-1).numpy(), torch.tensor([1, -2]).copysign(-1).numpy())
  np.testing.assert_array_equal(Tensor([3, 1]).fmax(Tensor([2, 5])).numpy(), [3, 5])
  assert Tensor([2, 3]).float_power(2).dtype == dtypes.float64
  grads_match(lambda x, y: x.copysign(y), torch.copysign, X, -X.T[:1].T)
  grads_match(lambda x, y: x.fmax(y), torch.fmax, X, X[:1] * 0.5)
  grads_match(lambda x, y: x.fmin(y), torch.fmin, X, X[:1] * 0.5)
  grads_match(lambda x: x.float_power(1.5), lambda x: x.float_power(1.5), POSITIVE)
  # non-negative exponents: torch's gradient takes 2 ** e in ints, 0 for e < 0
  grads_match(lambda x: x.ldexp(Tensor([[3], [1], [0]])), lambda x: x.ldexp(torch.tensor([[3], [1], [0]])), X)
  with pytest.raises(TypeError, match="nextafter needs float"): Tensor([1]).nextafter(Tensor([2]))


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("name", ["float32", "int32", "int64"])
def test_div_rounding_mode_as_torch(mode, name):
  a, b = np.array([7, -7, 7, -7, 0, 9]).astype(name), np.array([2, 2, -2, -2, 3, 3]).astype(name)
  got = Tensor(a).div(Tensor(b), rounding_mode=mode)
  expected = torch.div(torch.tensor(a), torch.tensor(b), rounding_mode=mode)
  assert got.dtype == getattr(dtypes, str(expected.dtype).split(".")[1])
  np.testing.assert_array_equal(got.numpy(), expected.numpy())
  assert Tensor(a).divide(3, rounding_mode=mode).tolist() == torch.tensor(a).divide(3, rounding_mode=mode).tolist()
  with pytest.raises(ValueError, match="rounding_mode"): Tensor(a).div(2, rounding_mode="round")


def test_rounded_division_has_no_gradient_as_torch():
  grads_match(lambda x: x.div(0.7, rounding_mode="floor") + x, lambda x: x.div(0.7, rounding_mode="floor") + x, X)


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "int32", "uint8", "bool"])
def test_value_tests_as_torch(name):
  values = SPECIAL.astype(name) if name.startswith("float") else np.array([0, 1, 5, 0]).astype(name)
  t, ref = Tensor(values), torch.tensor(values)
  for op in ["signbit", "isposinf", "isneginf", "isreal"]:
    got = getattr(t, op)()
    assert got.dtype == dtypes.bool
    np.testing.assert_array_equal(got.numpy(), getattr(ref, op)().numpy(), err_msg=op)
  assert t.is_signed() == ref.is_signed() and t.itemsize == ref.itemsize and t.is_complex() is False


SPECIAL = np.array([0.0, -0.0, 1.5, -2.0, INF, -INF, NAN, -NAN])


# ---- properties
def test_leaf_device_and_conjugate_properties_as_torch():
  leaf = Tensor(X, requires_grad=True)
  computed = leaf * 2
  assert leaf.is_leaf and Tensor(X).is_leaf and not computed.is_leaf
  assert computed.retain_grad() is computed
  computed.sum().backward()
  np.testing.assert_array_equal(computed.grad.numpy(), np.ones(X.shape))   # kept for tensors other than leaves too
  t = Tensor(X)
  assert t.is_cpu and not t.is_cuda and t.get_device() == -1
  for ours, theirs in [(t.H, torch.tensor(X).H), (t.mH, torch.tensor(X).mH), (t.adjoint(), torch.tensor(X).adjoint()),
                       (t.real, torch.tensor(X).real), (t.conj(), torch.tensor(X).conj()), (Tensor(2.0).H, torch.tensor(2.0))]:
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  with pytest.raises(ValueError, match="H is the transpose of a matrix"): Tensor([1.0, 2.0]).H
  with pytest.raises(ValueError, match="t\\(\\) transposes"): Tensor.zeros(2, 2, 2).t()


def test_equal_is_same_size_and_is_nonzero():
  assert Tensor(X).equal(Tensor(X.copy())) and not Tensor(X).equal(Tensor(X.T))   # shapes differ: False, not an error
  assert not Tensor([NAN]).equal(Tensor([NAN])) and Tensor([1, 2]).equal(Tensor([1.0, 2.0]))
  assert Tensor(X).is_same_size(Tensor(X + 1)) and not Tensor(X).is_same_size(Tensor(X[0]))
  assert Tensor([0.5]).is_nonzero() is True and Tensor(0).is_nonzero() is False
  with pytest.raises(RuntimeError, match="one element"): Tensor([1, 2]).is_nonzero()


# ---- products of fixed ranks
R = np.random.default_rng(5)
M34, M45, M35, V4, V3 = R.normal(size=(3, 4)), R.normal(size=(4, 5)), R.normal(size=(3, 5)), R.normal(size=4), R.normal(size=3)
B234, B245 = R.normal(size=(2, 3, 4)), R.normal(size=(2, 4, 5))
PRODUCTS = [("mm", (M34, M45), {}), ("bmm", (B234, B245), {}), ("mv", (M34, V4), {}), ("vdot", (V4, V4 * 2), {}),
            ("inner", (M34, R.normal(size=(2, 4))), {}), ("inner", (V4, B234), {}), ("ger", (V3, V4), {}),
            ("addmm", (M35, M34, M45), {"beta": 0.5, "alpha": 2.0}), ("addmm", (V4[:1], M34, M34.T), {}),
            ("addmv", (V3, M34, V4), {"alpha": -1.0}), ("addr", (M34, V3, V4), {"beta": 2.0}),
            ("baddbmm", (M35, B234, B245), {}), ("addbmm", (M35, B234, B245), {"beta": 0.0, "alpha": 0.5})]


@pytest.mark.parametrize("op,arrays,kwargs", PRODUCTS, ids=[f"{op}{i}" for i, (op, _, _) in enumerate(PRODUCTS)])
def test_products_as_torch(op, arrays, kwargs):
  grads_match(lambda *t: getattr(t[0], op)(*t[1:], **kwargs), lambda *t: getattr(t[0], op)(*t[1:], **kwargs), *arrays, tol=1e-10)


def test_beta_zero_leaves_self_out_and_ranks_are_checked():
  got = Tensor(np.full((3, 5), NAN)).addmm(Tensor(M34), Tensor(M45), beta=0)
  np.testing.assert_allclose(got.numpy(), M34 @ M45, rtol=1e-12)   # torch's: NaN in self does not leak
  with pytest.raises(ValueError, match="mm needs 2-D and 2-D"): Tensor(M34).mm(Tensor(V4))
  with pytest.raises(ValueError, match="bmm needs equal batch"): Tensor(B234).bmm(Tensor(B245[:1]))
  with pytest.raises(ValueError, match="mv needs 2-D and 1-D"): Tensor(M34).mv(Tensor(M45))
  assert Tensor([1, 2]).vdot(Tensor([3, 4])).item() == 11 and Tensor(3.0).inner(Tensor(V4)).shape == (4,)


# ---- views
CUBE = np.arange(24.0).reshape(2, 3, 4) - 11.5


@pytest.mark.parametrize("split,dim", [(3, 2), (4, 2), (5, 1), ([1, 3], 2), ([-1], 2), ([2, 1], 2), ([0, 9], 1), (Tensor([1, 2]), 1)])
def test_tensor_split_as_torch(split, dim):
  ours, theirs = Tensor(CUBE).tensor_split(split, dim), torch.tensor(CUBE).tensor_split(torch.tensor(split.tolist()) if isinstance(split, Tensor) else split, dim)
  assert len(ours) == len(theirs)
  for a, b in zip(ours, theirs): np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("op,sections", [("hsplit", 3), ("hsplit", [1]), ("vsplit", 2), ("dsplit", [1, 3]), ("dsplit", 2)])
def test_hsplit_vsplit_dsplit_as_torch(op, sections):
  for a, b in zip(getattr(Tensor(CUBE), op)(sections), getattr(torch.tensor(CUBE), op)(sections)): np.testing.assert_array_equal(a.numpy(), b.numpy())
  assert [p.shape for p in Tensor(V4).hsplit(2)] == [(2,), (2,)]
  with pytest.raises(ValueError, match="equal parts"): Tensor(CUBE).dsplit(3)
  with pytest.raises(ValueError, match="at least 3 dims"): Tensor(M34).dsplit(2)


def test_split_with_sizes_narrow_and_select_errors():
  assert [p.shape for p in Tensor(CUBE).split_with_sizes([1, 2], 1)] == [(2, 1, 4), (2, 2, 4)]
  with pytest.raises(IndexError, match="narrow of 3 elements from 2"): Tensor(M34).narrow(0, 2, 3)
  with pytest.raises(IndexError): Tensor(M34).select(1, 4)
  assert Tensor(M34).T.narrow(0, 1, 2).shape == (2, 3)


@pytest.mark.parametrize("dim", [None, 0, 2, -2])
def test_take_along_dim_as_torch(dim):
  indices = np.array([[[3, 0, 1, 1]], [[2, 2, 0, 3]]]) if dim in (2, None) else np.array([[[1, 0, 0, 1]]]) if dim == 0 else np.array([[[2], [0]]])
  if dim == -2: indices = np.array([[[2, 0, 1, 1], [0, 0, 0, 2]]])
  grads_match(lambda t: t.take_along_dim(Tensor(indices), dim), lambda t: t.take_along_dim(torch.tensor(indices), dim), CUBE)


def test_take_and_as_strided_as_torch():
  index = np.array([[0, -1], [5, 5]])
  grads_match(lambda t: t.take(Tensor(index)), lambda t: t.take(torch.tensor(index)), M34)   # repeated: gradients add
  for size, stride, offset in [((2, 2), (1, 2), 1), ((3, 3), (4, 1), 0), ((4,), (0,), 3), ((), (), 5), ((2, 0), (1, 1), 0)]:
    grads_match(lambda t: t.as_strided(size, stride, offset), lambda t: t.as_strided(size, stride, offset), M34)
  with pytest.raises(IndexError, match="reads past the 12 elements"): Tensor(M34).as_strided((3, 3), (4, 2))
  with pytest.raises(ValueError, match="one length"): Tensor(M34).as_strided((3,), (1, 1))


# ---- writes out of place, with gradients to both sides
INDEX = np.array([2, 0])
WRITES = [("index_copy", lambda t, s: t.index_copy(1, Tensor(INDEX), s), lambda t, s: t.index_copy(1, torch.tensor(INDEX), s), (3, 2)),
          ("index_fill", lambda t, s: t.index_fill(1, Tensor(np.array([3, 0])), s.sum()),
           lambda t, s: t.index_fill(1, torch.tensor([3, 0]), s.sum()), ()),
          ("index_put", lambda t, s: t.index_put((Tensor([0, 2]), Tensor([1, 3])), s), lambda t, s: t.index_put((torch.tensor([0, 2]), torch.tensor([1, 3])), s), (2,)),
          ("index_put_accumulate", lambda t, s: t.index_put((Tensor([0, 0, 1]),), s, accumulate=True),
           lambda t, s: t.index_put((torch.tensor([0, 0, 1]),), s, accumulate=True), (4,)),
          ("index_put_mask", lambda t, s: t.index_put((Tensor(X > 0),), s), lambda t, s: t.index_put((torch.tensor(X > 0),), s), (1,)),
          ("put", lambda t, s: t.put(Tensor([[0, -1], [5, 6]]), s), lambda t, s: t.put(torch.tensor([[0, -1], [5, 6]]), s), (2, 2)),
          ("put_accumulate", lambda t, s: t.put(Tensor([1, 1, 2]), s, accumulate=True), lambda t, s: t.put(torch.tensor([1, 1, 2]), s, accumulate=True), (3,)),
          ("masked_scatter", lambda t, s: t.masked_scatter(Tensor(X < 1), s), lambda t, s: t.masked_scatter(torch.tensor(X < 1), s), (3, 4)),
          ("masked_scatter_row", lambda t, s: t.masked_scatter(Tensor([[True, False, False, True]]), s),
           lambda t, s: t.masked_scatter(torch.tensor([[True, False, False, True]]), s), (7,)),
          ("select_scatter", lambda t, s: t.select_scatter(s, 1, -1), lambda t, s: t.select_scatter(s, 1, -1), (3,)),
          ("slice_scatter", lambda t, s: t.slice_scatter(s, 1, 1, None, 2), lambda t, s: t.slice_scatter(s, 1, 1, None, 2), (3, 2)),
          ("diagonal_scatter", lambda t, s: t.diagonal_scatter(s, -1), lambda t, s: t.diagonal_scatter(s, -1), (2,))]


@pytest.mark.parametrize("name,ours,theirs,src_shape", WRITES, ids=[w[0] for w in WRITES])
def test_writes_as_torch(name, ours, theirs, src_shape):
  grads_match(ours, theirs, X, R.normal(size=src_shape))


def test_writes_keep_the_dtype_and_check_their_arguments():
  ints = Tensor(np.arange(6).reshape(2, 3))
  assert ints.index_fill(0, Tensor([1]), 2.7).tolist() == torch.arange(6).reshape(2, 3).index_fill(0, torch.tensor([1]), 2.7).tolist()
  assert ints.index_put((Tensor([0]),), 9.5).tolist() == [[9, 9, 9], [3, 4, 5]]
  assert Tensor([-1, 2]).index_fill(0, Tensor([-1]), 0).tolist() == [-1, 0]   # a negative index counts from the end (torch refuses it)
  with pytest.raises(IndexError, match="1-D int index"): ints.index_fill(0, Tensor([[1]]), 0)
  with pytest.raises(ValueError, match="needs src of shape"): ints.select_scatter(Tensor([1, 2]), 0, 0)
  with pytest.raises(ValueError, match="needs 4 source elements"): ints.masked_scatter(Tensor(np.arange(6).reshape(2, 3) > 1), Tensor([1, 2]))
  with pytest.raises(TypeError, match="bool mask"): ints.masked_scatter(Tensor([1, 0, 1]), Tensor([1, 2]))
  with pytest.raises(ValueError, match="as many source elements"): ints.put(Tensor([0, 1]), Tensor([5]))


def test_index_put_of_a_position_out_of_range_writes_nothing_as_scatter():
  """torch raises for it; nbgrad's tensor indices are not read when the op is built, so a position out of range
  writes nothing and takes no gradient, as scatter's (it wrote into element 0)."""
  x, v = Tensor.zeros(4, requires_grad=True), Tensor([1.0, 2.0, 3.0], requires_grad=True)
  out = x.index_put((Tensor([7, 1, -5]),), v)
  assert out.tolist() == [0, 2, 0, 0]
  (out * Tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
  assert x.grad.tolist() == [1, 0, 3, 4] and v.grad.tolist() == [0, 2, 0]
  assert Tensor.zeros(2, 3).index_put((Tensor([0, 1]), Tensor([5, -1])), 9.0, accumulate=True).tolist() == [[0, 0, 0], [0, 0, 9]]
  # in range, negative indices count from the end, as torch's
  ref = torch.zeros(4).index_put((torch.tensor([-1, 0]),), torch.tensor([5.0, 6.0]))
  assert Tensor.zeros(4).index_put((Tensor([-1, 0]),), Tensor([5.0, 6.0])).tolist() == ref.tolist()


# ---- reductions
def test_nan_reductions_aminmax_and_dist_as_torch():
  holes = X.copy()
  holes[0, 1] = holes[2, :] = NAN
  for dim, keepdim in [(None, False), (1, True), (0, False)]:
    kwargs = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    for op in ("nansum", "nanmean"):
      np.testing.assert_allclose(getattr(Tensor(holes), op)(**kwargs).numpy(), getattr(torch.tensor(holes), op)(**kwargs).numpy(), rtol=1e-12)
  grads_match(lambda t: t.nanmean(1), lambda t: t.nanmean(1), holes[:2])
  all_nan = Tensor(holes, requires_grad=True)
  all_nan.nanmean(1).sum().backward()   # a row of NaNs only: its mean is NaN, and its gradient 0 (torch's is NaN)
  np.testing.assert_array_equal(all_nan.grad.numpy()[2], np.zeros(4))
  assert Tensor([1, 2]).nansum().item() == 3 and Tensor([1, 2]).nanmean().item() == 1.5
  low, high = Tensor(X).aminmax(dim=1, keepdim=True)
  ref = torch.tensor(X).aminmax(dim=1, keepdim=True)
  np.testing.assert_array_equal(low.numpy(), ref.min.numpy())
  np.testing.assert_array_equal(high.numpy(), ref.max.numpy())
  grads_match(lambda a, b: a.dist(b, 3), lambda a, b: a.dist(b, 3), X, X[::-1] * 0.5)


@pytest.mark.parametrize("kwargs", [{}, {"correction": 0}, {"fweights": "f"}, {"aweights": "a"}, {"fweights": "f", "aweights": "a", "correction": 2}],
                         ids=["default", "biased", "fweights", "aweights", "both"])
def test_cov_as_torch(kwargs):
  weights = {"f": np.array([1, 3, 2, 1]), "a": np.array([0.5, 1.0, 0.25, 2.0])}
  arg = lambda wrap: {k: wrap(weights[v]) if isinstance(v, str) else v for k, v in kwargs.items()}
  grads_match(lambda t: t.cov(**arg(Tensor)), lambda t: t.cov(**arg(torch.tensor)), X, tol=1e-12)
  np.testing.assert_allclose(Tensor(X[0]).cov(**arg(Tensor)).numpy(), torch.tensor(X[0]).cov(**arg(torch.tensor)).numpy(), rtol=1e-12)
  with pytest.raises(ValueError, match="one weight per observation"): Tensor(X).cov(fweights=Tensor([1, 2]))


def test_logcumsumexp_keeps_far_apart_values_and_infinities():
  values = np.array([[-1000.0, 0.0, 1000.0, -INF, 1e-3], [INF, 0.0, -INF, NAN, 2.0], [-INF, -INF, -INF, 5.0, 5.0]])
  got = Tensor(values).logcumsumexp(1).numpy()
  np.testing.assert_allclose(got, torch.tensor(values).logcumsumexp(1).numpy(), rtol=1e-14)
  for name in ("float32", "float16"):
    half = Tensor(X.astype(name)).logcumsumexp(0)
    assert half.dtype == getattr(dtypes, name)
    np.testing.assert_allclose(half.numpy(), torch.tensor(X.astype(name)).logcumsumexp(0).numpy(), rtol=1e-3 if name == "float16" else 1e-6)
  assert Tensor([1, 2]).logcumsumexp(0).dtype == dtypes.float32
  assert Tensor(2.0).logcumsumexp(0).item() == 2.0 and Tensor.zeros(0, 3).logcumsumexp(1).shape == (0, 3)
  grads_match(lambda t: t.logcumsumexp(1), lambda t: t.logcumsumexp(1), np.array([[-800.0, 1.0, 800.0, 2.0]]))


def test_renorm_sum_to_size_and_corrcoef_edges():
  np.testing.assert_array_equal(Tensor(X).sum_to_size(3, 1).numpy(), torch.tensor(X).sum_to_size(3, 1).numpy())
  assert Tensor(X).sum_to_size(4).shape == (4,) and Tensor(X).sum_to_size(()).shape == ()
  with pytest.raises(ValueError, match="does not expand"): Tensor(X).sum_to_size(2, 4)
  np.testing.assert_array_equal(Tensor(X[0]).corrcoef().numpy(), torch.tensor(X[0]).corrcoef().numpy())
  with pytest.raises(ValueError, match="1-D or 2-D"): Tensor(CUBE).cov()


@pytest.mark.parametrize("values", [np.array([1, 1, 2, 2, 3, 1, 1, 2]), np.array([]), np.array([4]), np.array([[1, 1], [1, 1], [2, 0]])])
@pytest.mark.parametrize("dim", [None, 0])
def test_unique_consecutive_as_torch(values, dim):
  ours = Tensor(values).unique_consecutive(return_inverse=True, return_counts=True, dim=dim)
  theirs = torch.tensor(values).unique_consecutive(return_inverse=True, return_counts=True, dim=dim)
  for a, b in zip(ours, theirs): np.testing.assert_array_equal(a.numpy(), b.numpy())
  assert ours[0].dtype == Tensor(values).dtype


HIST = np.array([0.5, 2.0, 1.0, 2.5, NAN, 7.0, -1.0, 3.0, 2.999])


@pytest.mark.parametrize("bins,kwargs", [(4, {}), (3, {"range": (0.0, 3.0)}), (5, {"range": (1.0, 2.0), "density": True}),
                                         (np.array([0.0, 1.0, 2.5, 3.0]), {"weight": "w"}), (2, {"weight": "w", "density": True})],
                         ids=["own-range", "range", "density", "edges-weights", "weights-density"])
@pytest.mark.parametrize("name", ["float32", "float64"])
def test_histogram_as_torch(bins, kwargs, name):
  values = HIST if "range" in kwargs else HIST[~np.isnan(HIST)]   # torch's own range comes from the values: NaN would make it NaN
  values = values.astype(name)
  w = np.linspace(0.5, 2.0, values.size).astype(name)
  def args(wrap): return {k: (wrap(w) if v == "w" else v) for k, v in kwargs.items()}
  hist, edges = Tensor(values).histogram(Tensor(bins.astype(name)) if isinstance(bins, np.ndarray) else bins, **args(Tensor))
  ref = torch.histogram(torch.tensor(values), torch.tensor(bins.astype(name)) if isinstance(bins, np.ndarray) else bins, **args(torch.tensor))
  assert hist.dtype == getattr(dtypes, name)
  np.testing.assert_allclose(edges.numpy(), ref.bin_edges.numpy(), rtol=1e-6)
  np.testing.assert_allclose(hist.numpy(), ref.hist.numpy(), rtol=1e-6)


def test_histogram_edge_cases():
  hist, edges = Tensor([2.0, 2.0]).histogram(3)
  np.testing.assert_allclose(edges.numpy(), np.histogram([2.0, 2.0], 3)[1], rtol=1e-6)
  assert hist.tolist() == [0.0, 2.0, 0.0]
  assert Tensor.zeros(0).histogram(2)[0].tolist() == [0.0, 0.0]
  with pytest.raises(TypeError, match="float tensor"): Tensor([1, 2]).histogram(2)
  with pytest.raises(ValueError, match="at least 2 edges"): Tensor([1.0]).histogram([1.0])


# ---- creation
@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-3.3, 7.1, 11), (2, 2, 1), (0, 1, 1), (0, 1, 0), (1, -1, 4), (1, -1, 7), (0, 1e6, 1001)])
@pytest.mark.parametrize("name", ["float32", "float64", "int32"])
def test_linspace_as_torch(start, end, steps, name):
  got, expected = Tensor.linspace(start, end, steps, dtype=getattr(dtypes, name)), torch.linspace(start, end, steps, dtype=TORCH_DTYPES[name])
  assert got.shape == tuple(expected.shape) and got.dtype == getattr(dtypes, name)
  # torch's fused multiply-add rounds once; float64's here rounds the product too: an ulp of the span apart
  np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6 if name == "float32" else 1e-12, atol=1e-15 * abs(end - start))
  if steps > 1: assert got.numpy()[-1] == expected.numpy()[-1]   # the end is exact


def test_logspace_and_linspace_defaults():
  np.testing.assert_allclose(Tensor.logspace(-2, 3, 6).numpy(), torch.logspace(-2, 3, 6).numpy(), rtol=1e-6)
  np.testing.assert_allclose(Tensor.logspace(0, 4, 5, base=2).numpy(), [1, 2, 4, 8, 16])
  t = Tensor.linspace(0, 1, 3, requires_grad=True)
  assert t.dtype == dtypes.float32 and t.requires_grad
  with pytest.raises(ValueError): Tensor.linspace(0, 1, -1)


# ---- in-place forms
@pytest.mark.parametrize("op,args", [("sqrt_", ()), ("clamp_min_", (0.5,)), ("index_fill_", (1, Tensor(np.array([0, 2])), -1.0)),
                                     ("masked_fill_", (Tensor(X > 1), 0.0)), ("addcmul_", (Tensor(X), Tensor(X))),
                                     ("eq_", (1.5,)), ("lerp_", (Tensor(X * 2), 0.25)), ("tril_", (-1,))])
def test_in_place_forms_as_torch(op, args):
  ours, theirs = Tensor(POSITIVE), torch.tensor(POSITIVE)
  torch_args = tuple(torch.tensor(a.numpy()) if isinstance(a, Tensor) else a for a in args)
  assert getattr(ours, op)(*args) is ours
  getattr(theirs, op)(*torch_args)
  assert ours.dtype == dtypes.float64
  np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-15)


def test_fills_in_place_cast_the_value_to_an_int_tensor_as_torch():
  mask = np.array([True, False, True])
  for value in (1.5, -2.7):
    ours, theirs = Tensor([1, 2, 3]), torch.tensor([1, 2, 3], dtype=torch.int32)
    ours.masked_fill_(Tensor(mask), value)
    theirs.masked_fill_(torch.from_numpy(mask), value)
    assert ours.dtype == dtypes.int32 and ours.tolist() == theirs.tolist()
    assert Tensor([1, 2]).fill_(value).tolist() == torch.tensor([1, 2]).fill_(value).tolist()


def test_in_place_forms_refuse_what_torch_refuses():
  with pytest.raises(TypeError, match="cannot be stored in a dtypes.int32"): Tensor([1, 4]).sqrt_()
  with pytest.raises(RuntimeError, match="needs a gradient"): Tensor([1.0], requires_grad=True).exp_()
  assert Tensor.exp_.__name__ == "exp_" and "exp" in Tensor.exp_.__doc__
  leaf = Tensor([1.0, 2.0]).requires_grad_()
  assert leaf.requires_grad and leaf.is_leaf
  computed = leaf * 2
  assert computed.detach_() is computed and not computed.requires_grad and computed.is_leaf


@pytest.mark.parametrize("make", [lambda: Tensor.empty(3, 4, requires_grad=True), lambda: Tensor(POSITIVE, requires_grad=True),
                                  lambda: Tensor.zeros(3, 4, requires_grad=True)], ids=["empty", "from_numpy", "zeros"])
def test_in_place_ops_on_a_detached_parameter_write_into_it_as_torch(make):
  """torch's detach shares the parameter's storage (w.detach().normal_() initializes w); the parameter stays a leaf
  that requires grad, and the detached tensor follows its later updates."""
  w = make()
  w.detach().fill_(3.0)
  assert w.numpy().tolist() == np.full(w.shape, 3.0).tolist() and w.requires_grad and w.is_leaf
  w.detach().mul_(2).add_(1)
  w.detach().detach().add_(0)   # a view of the view writes through too
  detached = w.detach()
  np.testing.assert_array_equal(w.numpy(), np.full(w.shape, 7.0))
  (w * w).sum().backward()
  np.testing.assert_array_equal(w.grad.numpy(), np.full(w.shape, 14.0))
  with Tensor.inference_mode(): w.assign(w - 0.5 * w.grad)
  np.testing.assert_array_equal(detached.numpy(), np.zeros(w.shape))


@pytest.mark.parametrize("call", [lambda t: t.clamp(min=0.0), lambda t: t.clamp(-1.0, 1.0), lambda t: t.clamp(max=1.0),
                                  lambda t: t.clamp_min(0.0), lambda t: t.clamp_max(2.0), lambda t: t.clamp(2.0, 0.5)],
                         ids=["min", "both", "max", "clamp_min", "clamp_max", "min_above_max"])
def test_clamp_gives_torch_s_gradient_at_its_bounds(call):
  """All of the gradient where a value equals a bound, as torch's clamp (tinygrad's clip splits it there)."""
  values = np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0])
  x, xt = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  weights = np.arange(1.0, 8.0)
  (call(x) * Tensor(weights)).sum().backward()
  (call(xt) * torch.tensor(weights)).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
  np.testing.assert_array_equal(call(x).numpy(), call(xt).detach().numpy())


@pytest.mark.parametrize("call", [lambda x, lo, hi: x.clamp(lo, hi), lambda x, lo, hi: x.clamp(min=lo), lambda x, lo, hi: x.clamp(max=hi),
                                  lambda x, lo, hi: x.clamp(lo[1:2], hi), lambda x, lo, hi: x[2:3].clamp(lo, hi),
                                  lambda x, lo, hi: x.clamp(min=x), lambda x, lo, hi: x.clamp(lo, lo), lambda x, lo, hi: lo.clamp(x, lo)],
                         ids=["both", "min", "max", "broadcast_min", "broadcast_self", "self_as_min", "min_as_max", "self_as_max"])
def test_clamp_by_tensor_bounds_gives_torch_s_gradients(call):
  """Ties with either bound, a min above its max, a nan: self's gradient where lo <= self <= hi, a bound's where
  self is past it, max's wherever max < min, each summed over a broadcast bound."""
  values, lows, highs = (np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, np.nan]), np.array([0.0, -1.0, 0.5, 0.5, 2.0, 1.0, 3.0, 0.0]),
                         np.array([1.0, 0.0, 0.0, 0.5, 1.0, 1.5, 2.0, 1.0]))
  ours, theirs = [Tensor(a, requires_grad=True) for a in (values, lows, highs)], [torch.tensor(a, requires_grad=True) for a in (values, lows, highs)]
  weights = np.arange(1.0, 9.0)
  (call(*ours) * Tensor(weights)).sum().backward()
  (call(*theirs) * torch.tensor(weights)).sum().backward()
  np.testing.assert_array_equal(call(*ours).numpy(), call(*theirs).detach().numpy())
  for mine, ref in zip(ours, theirs):
    assert (mine.grad is None) == (ref.grad is None)
    if ref.grad is not None: np.testing.assert_array_equal(mine.grad.numpy(), ref.grad.numpy())


def test_clamp_of_an_int_tensor_by_a_float_tensor_bound_gives_the_bound_its_gradient():
  x, lo = np.array([-3, 0, 2, 5]), np.array([-1.0, 0.0, 2.5, 1.0])
  bound, bound_t = Tensor(lo, requires_grad=True), torch.tensor(lo, requires_grad=True)
  result, result_t = Tensor(x).clamp(min=bound), torch.tensor(x).clamp(min=bound_t)
  assert result.dtype == dtypes.float64 and result_t.dtype == torch.float64
  result.sum().backward(); result_t.sum().backward()
  np.testing.assert_array_equal(result.numpy(), result_t.detach().numpy())
  np.testing.assert_array_equal(bound.grad.numpy(), bound_t.grad.numpy())


def test_add_and_sub_take_torch_s_alpha():
  a, b = np.array([1.0, -2.0, 3.5]), np.array([0.5, 4.0, -1.0])
  x, xt = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
  y, yt = Tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
  (x.add(y, alpha=2) * x.sub(y, alpha=-0.5)).sum().backward()
  (xt.add(yt, alpha=2) * xt.sub(yt, alpha=-0.5)).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
  np.testing.assert_array_equal(y.grad.numpy(), yt.grad.numpy())
  np.testing.assert_array_equal(Tensor(a).add(3, alpha=2).numpy(), torch.tensor(a).add(3, alpha=2).numpy())


def test_random_fills_draw_their_distributions():
  Tensor.manual_seed(3)
  t = Tensor.zeros(200_000)
  assert abs(t.exponential_(2.0).mean().item() - 0.5) < 0.01 and t.min().item() >= 0
  assert abs(t.cauchy_(1.0, 2.0).median().item() - 1.0) < 0.05
  assert abs(t.log_normal_(0.5, 0.25).log().mean().item() - 0.5) < 0.01
  geometric = t.geometric_(0.25)
  assert abs(geometric.mean().item() - 4.0) < 0.05 and geometric.min().item() == 1 and (geometric == geometric.round()).all().item()
  assert abs(t.bernoulli_(0.3).mean().item() - 0.3) < 0.01
  ints = Tensor.zeros(50_000, dtype=dtypes.int32).random_(5, 10)
  assert ints.min().item() == 5 and ints.max().item() == 9 and ints.dtype == dtypes.int32
  assert Tensor.zeros(1000).random_(3).max().item() == 2 and Tensor.zeros(1000, dtype=dtypes.uint8).random_().max().item() > 200
  for p in (0, 1.0, 1.5, -0.5):   # torch's geometric_ refuses p = 1 too
    with pytest.raises(ValueError, match=r"geometric_ p must be in \(0, 1\)"): t.geometric_(p)
    with pytest.raises(RuntimeError): torch.zeros(3).geometric_(p)


VIEWS = [lambda t: t, lambda t: t.permute(2, 0, 1), lambda t: t[:, 1:, ::2], lambda t: t[1], lambda t: t[:, None].expand(2, 5, 3, 4),
         lambda t: t.flip(0), lambda t: t + 1, lambda t: t.transpose(0, 1)[0], lambda t: t[:, :1], lambda t: t.reshape(6, 4)[2:]]


ROOTS = {"computed": lambda lib: lib.tensor(CUBE) if lib is torch else Tensor(CUBE).realize(), "constant": lambda lib: lib.ones(2, 3, 4),
         "to_compute": lambda lib: (lib.tensor(CUBE) if lib is torch else Tensor(CUBE)) * 2, "flipped": lambda lib: lib.ones(2, 3, 4).flip(1)}


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("view", range(len(VIEWS)))
def test_strides_offsets_and_contiguity_as_torch(view, root):
  """Also of views of a tensor not computed yet: their strides in it as it will be stored, as torch's."""
  ours, theirs = VIEWS[view](ROOTS[root](Tensor)), VIEWS[view](ROOTS[root](torch))
  assert ours.stride() == theirs.stride() and ours.stride(-1) == theirs.stride(-1)
  assert ours.storage_offset() == theirs.storage_offset() and ours.is_contiguous() == theirs.is_contiguous()


@pytest.mark.filterwarnings("ignore:index_reduce")   # torch calls it beta
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_as_torch(reduce, include_self):
  index = np.array([2, 0, 2])
  source = np.array([[1.5, -2.0, 4.0], [0.5, 3.0, -1.0], [2.0, 2.0, 0.25]])
  grads_match(lambda t, s: t.index_reduce(1, Tensor(index), s, reduce, include_self=include_self),
              lambda t, s: t.index_reduce(1, torch.tensor(index), s, reduce, include_self=include_self), X[:, :3] + 0.125, source)
  # (no value of self equals one of source: torch's gradient then loses a share when include_self is False)


def test_logaddexp2_and_unsafe_names_as_torch():
  a, b = np.array([0.0, -INF, INF, 1000.0, -3.0, NAN]), np.array([0.0, -INF, INF, 999.0, 40.0, 1.0])
  np.testing.assert_allclose(Tensor(a).logaddexp2(Tensor(b)).numpy(), torch.tensor(a).logaddexp2(torch.tensor(b)).numpy(), rtol=1e-15)
  with np.errstate(invalid="ignore"): np.testing.assert_allclose(np.logaddexp2(a, Tensor(b)).numpy(), np.logaddexp2(a, b), rtol=1e-15)
  grads_match(lambda x, y: x.logaddexp2(y), torch.logaddexp2, X, X[::-1].copy())
  assert [p.shape for p in Tensor(CUBE).unsafe_chunk(2, 2)] == [(2, 3, 2), (2, 3, 2)]
  assert [p.shape for p in Tensor(CUBE).unsafe_split(2, 1)] == [(2, 2, 4), (2, 1, 4)]
  with pytest.raises(ValueError, match="reduce must be one of"): Tensor(X).index_reduce(0, Tensor([0]), Tensor(X[:1]), "sum")


@pytest.mark.parametrize("values,dim", [([1, 2, 2, 1, 3], -1), ([3.0, 1, 2, 2, 1, NAN, NAN, NAN], 0), ([[5, 5, 1], [2, 3, 3]], 1),
                                        ([[5, 5, 1], [2, 3, 3]], 0), ([7, 1, 7, 1, 1, 7], 0), (4.0, 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_mode_as_torch(values, dim, keepdim):
  ours, theirs = Tensor(values).mode(dim, keepdim), torch.tensor(values).mode(dim, keepdim)
  np.testing.assert_array_equal(ours[0].numpy(), theirs.values.numpy())
  np.testing.assert_array_equal(ours[1].numpy(), theirs.indices.numpy())


def test_mode_gradient_and_empty_dim():
  grads_match(lambda t: t.mode(1)[0], lambda t: t.mode(1).values, np.array([[1.5, 2.0, 1.5], [0.0, -1.0, -1.0]]))
  with pytest.raises(ValueError, match="mode of an empty dim"): Tensor.zeros(2, 0).mode(1)


@pytest.mark.parametrize("name", ["float64", "float32", "float16", "int32"])
def test_log10_exact_at_powers_of_ten_as_torch(name):
  values = np.array([1000.0, 1e-5, 0.0, -1.0, INF, NAN, 2.0, 1e30, 100.0, 0.001]) if name != "int32" else np.array([1, 10, 1000, 7, 0])
  with np.errstate(over="ignore"): values = values.astype(name)
  got, expected = Tensor(values).log10(), torch.tensor(values).log10()
  assert got.dtype == getattr(dtypes, str(expected.dtype).split(".")[1])
  np.testing.assert_array_equal(got.numpy(), expected.numpy())
  if name == "float64":
    assert isinstance(np.log10(Tensor(values)), Tensor)
    grads_match(lambda t: t.log10(), torch.log10, POSITIVE)
