"""Reductions (sum, prod, max, min, any, all, mean, var, std, argmax, argmin, softmax, log_softmax, logsumexp) against numpy / torch."""
import math
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes
from nbgrad.graph.schedule import read_strides
from nbgrad.jit import finish_builds

DTYPE_NAMES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
               "float16", "bfloat16", "float32", "float64"]
FLOAT_NAMES = {"float16", "bfloat16", "float32", "float64"}

# sum results: ints accumulate in at least int32 (unsigned: uint32), bool -> int32, half types come back as themselves
SUM_DTYPE = {"bool": "int32", "int8": "int32", "uint8": "uint32", "int16": "int32", "uint16": "uint32",
             "int32": "int32", "uint32": "uint32", "int64": "int64", "uint64": "uint64", "float16": "float16",
             "bfloat16": "bfloat16", "float32": "float32", "float64": "float64"}
MEAN_DTYPE = {name: (name if name in FLOAT_NAMES else "float32") for name in DTYPE_NAMES}

TOL = {"float16": dict(rtol=2e-3, atol=2e-3), "bfloat16": dict(rtol=1.6e-2, atol=1.6e-2),
       "float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-10, atol=1e-12)}


def make_values(shape, name, seed=0):
  """Values exactly representable in dtype `name`, as float64 (floats) or int64 (ints) numpy arrays."""
  rng = np.random.default_rng(seed)
  if name == "bool": return np.asarray(rng.random(shape) < 0.5)
  if name in FLOAT_NAMES: return np.asarray(rng.integers(-16, 16, size=shape) / 4, dtype=np.float64)
  if name.startswith("uint"): return np.asarray(rng.integers(0, 10, size=shape), dtype=np.int64)
  return np.asarray(rng.integers(-10, 10, size=shape), dtype=np.int64)


def to_nb(values, name):
  if name == "bfloat16": return Tensor(np.asarray(values, dtype=np.float32)).cast(dtypes.bfloat16)
  return Tensor(np.asarray(values).astype(np.dtype(name)))


def to_np(t):
  if t.dtype == dtypes.bfloat16: return t.cast(dtypes.float32).numpy()
  return t.numpy()


def check(out, expected, name):
  """Compare an nbgrad result with a float64/int64 numpy reference computed on the same values."""
  got = to_np(out)
  expected = np.asarray(expected)
  assert out.shape == expected.shape, (out.shape, expected.shape)
  assert got.shape == expected.shape
  if name in TOL:
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), **TOL[name])
  else:
    np.testing.assert_array_equal(got, expected.astype(got.dtype))


def np_axis(x, axis):
  """numpy refuses axis=0 on a 0-d array; torch and tinygrad allow it."""
  return None if np.ndim(x) == 0 else axis


# ---------------------------------------------------------------- non-contiguous inputs
# name -> (base shape, nbgrad view, numpy view)
VIEWS = {
  "transposed": ((4, 3), lambda t: t.T, lambda a: a.T),
  "permuted3d": ((2, 3, 4), lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
  "stepped": ((6, 8), lambda t: t[::2, 1::3], lambda a: a[::2, 1::3]),
  "negstep": ((5, 4), lambda t: t[::-2, :], lambda a: a[::-2, :]),
  "flipped": ((3, 4), lambda t: t.flip(1), lambda a: a[:, ::-1]),
  "expanded": ((3, 1), lambda t: t.expand(3, 4), lambda a: np.broadcast_to(a, (3, 4))),
  "shrunk": ((5, 6), lambda t: t.shrink(((1, 4), (2, 6))), lambda a: a[1:4, 2:6]),
  "padded": ((2, 3), lambda t: t.pad(((1, 1), (0, 2))), lambda a: np.pad(a, ((1, 1), (0, 2)))),
}


def view_inputs(view, name, seed=0):
  base_shape, nb_fn, np_fn = VIEWS[view]
  values = make_values(base_shape, name, seed)
  return nb_fn(to_nb(values, name)), np.ascontiguousarray(np_fn(values))


# ---------------------------------------------------------------- sum
@pytest.mark.parametrize("name", DTYPE_NAMES)
@pytest.mark.parametrize("axis", [None, 1])
def test_sum_result_dtype_and_values(name, axis):
  values = make_values((3, 4), name)
  out = to_nb(values, name).sum(axis)
  assert out.dtype == getattr(dtypes, SUM_DTYPE[name])
  check(out, np.sum(values.astype(np.float64 if name in FLOAT_NAMES else np.int64), axis=axis), SUM_DTYPE[name])


SUM_AXES = [
  ((), None, False), ((), 0, False), ((), -1, True), ((), None, True),
  ((5,), 0, False), ((5,), -1, True), ((5,), None, True),
  ((3, 4), 0, False), ((3, 4), 1, True), ((3, 4), -1, False), ((3, 4), -2, True), ((3, 4), (0, 1), False),
  ((3, 4), None, True), ((3, 4), (1, 0), True),
  ((2, 3, 4), (0, 2), False), ((2, 3, 4), (0, 2), True), ((2, 3, 4), (0, 1), False), ((2, 3, 4), (1, 2), True),
  ((2, 3, 4), -2, False), ((2, 3, 4), (-1, -3), False),
  ((2, 3, 2, 5), (1, 3), False), ((2, 3, 2, 5), (0, 2, 3), True), ((2, 3, 2, 5), None, False),
  ((1, 4), 0, False), ((3, 1, 2), 1, False), ((3, 1, 2), (0, 1), True), ((1, 1), None, False),
  ((0,), 0, False), ((0,), None, True), ((0, 3), 0, False), ((0, 3), 1, False), ((0, 3), None, False),
  ((2, 0, 3), 1, True), ((2, 0, 3), (0, 2), False),
]


@pytest.mark.parametrize("shape,axis,keepdim", SUM_AXES, ids=[f"{s}-{a}-{k}" for s, a, k in SUM_AXES])
def test_sum_axes(shape, axis, keepdim):
  values = make_values(shape, "float32", seed=1)
  out = to_nb(values, "float32").sum(axis=axis, keepdim=keepdim)
  expected = np.sum(values, axis=np_axis(values, axis), keepdims=keepdim)
  if np.ndim(values) == 0 and keepdim: expected = np.asarray(expected).reshape(())
  check(out, expected, "float32")
  assert out.dtype == dtypes.float32


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_sum_noncontiguous(view, axis):
  t, a = view_inputs(view, "float32", seed=2)
  check(t.sum(axis), np.sum(a, axis=axis), "float32")


TRANSPOSED_REDUCES = [
  ("T_sum1", (1100, 37), lambda t: t.T.sum(1), lambda a: a.T.sum(1)),
  ("T_sum0", (37, 1100), lambda t: t.T.sum(0), lambda a: a.T.sum(0)),
  ("T_max1_keepdim", (300, 261), lambda t: t.T.max(1, keepdim=True), lambda a: a.T.max(1, keepdims=True)),
  ("permuted_sum", (5, 260, 7), lambda t: t.permute(2, 0, 1).sum((1, 2)), lambda a: a.transpose(2, 0, 1).sum((1, 2))),
  ("T_times_T", (64, 40), lambda t: (t.T * t.T).sum(1), lambda a: (a.T * a.T).sum(1)),
]
TRANSPOSED_SOFTMAX = ("T_softmax", (1030, 9), lambda t: t.T.softmax(1),
                      lambda a: np.exp(a.T - a.T.max(1, keepdims=True)) / np.exp(a.T - a.T.max(1, keepdims=True)).sum(1, keepdims=True))


TRANSPOSED_CASES = [row + (name,) for row in TRANSPOSED_REDUCES for name in ("float32", "float64", "int32")] + \
                   [TRANSPOSED_SOFTMAX + (name,) for name in ("float32", "float64")]


@pytest.mark.parametrize("case,shape,fn,ref,name", TRANSPOSED_CASES, ids=[f"{c[0]}-{c[-1]}" for c in TRANSPOSED_CASES])
def test_reduces_of_transposed_reads_walk_them_contiguously(case, shape, fn, ref, name):
  """A reduce whose input is read transposed walks the input's contiguous dim innermost (the last loop dim is not
  the one read with a long stride), in blocks of columns past 1024 and in the parallel build; values as numpy's."""
  values = make_values(shape, name, seed=4)
  t = to_nb(values, name).realize()
  kernel = fn(t).schedule()[-1]
  strides = read_strides(kernel)
  assert any(abs(s[-1]) == 1 for s in strides), (kernel.loop_shape, strides)
  for _ in range(2):   # the first call of a big kernel may run its serial build while the parallel one compiles
    check(fn(t), ref(values), name)
    finish_builds()


def test_sum_of_empty_is_zero():
  for name in ["float32", "int32", "bool"]:
    out = to_nb(np.zeros((0,), dtype=np.float64), name).sum()
    assert out.shape == ()
    assert to_np(out).item() == 0


# input values, input dtype, acc_dtype, result dtype, exact result
SUM_ACC = [
  (np.full(10, 100), "int8", None, "int32", 1000),
  (np.full(10, 200), "uint8", None, "uint32", 2000),
  (np.full(4, 30000), "int16", None, "int32", 120000),
  (np.full(4, 60000), "uint16", None, "uint32", 240000),
  (np.array([True] * 7 + [False] * 3), "bool", None, "int32", 7),
  (np.ones(4096), "float16", None, "float16", 4096.0),      # float16 accumulation would stop at 2048
  (np.ones(1024), "bfloat16", None, "bfloat16", 1024.0),    # bfloat16 accumulation would stop at 256
  (np.full(4, 2 ** 30), "int32", "int64", "int64", 2 ** 32),
  (np.full(3, 255), "uint8", "uint64", "uint64", 765),
  (np.array([1e8, 1.0, -1e8]), "float32", "float64", "float64", 1.0),
  (np.full(6, 100), "int8", "int16", "int16", 600),
]


@pytest.mark.parametrize("values,name,acc,out_name,expected", SUM_ACC,
                         ids=[f"{n}-acc_{a}" for _, n, a, _, _ in SUM_ACC])
def test_sum_accumulation(values, name, acc, out_name, expected):
  t = to_nb(values, name)
  out = t.sum() if acc is None else t.sum(acc_dtype=getattr(dtypes, acc))
  assert out.dtype == getattr(dtypes, out_name)
  assert to_np(out).item() == expected


@pytest.mark.parametrize("seed", [0, 4])
def test_sum_large_float32(seed):
  rng = np.random.default_rng(seed)
  values = rng.random(100_000).astype(np.float32)
  ref = values.astype(np.float64).sum()
  got = Tensor(values).sum().item()
  assert abs(got - ref) <= 1e-5 * abs(ref), (got, ref)
  rows = values.reshape(100, 1000)
  np.testing.assert_allclose(Tensor(rows).sum(1).numpy(), rows.astype(np.float64).sum(1), rtol=1e-5)
  np.testing.assert_allclose(Tensor(rows).sum(0).numpy(), rows.astype(np.float64).sum(0), rtol=1e-5)


# ---------------------------------------------------------------- prod
@pytest.mark.parametrize("name", DTYPE_NAMES)
@pytest.mark.parametrize("axis", [None, 1])
def test_prod_result_dtype_and_values(name, axis):
  values = make_values((3, 4), name, seed=5)
  out = to_nb(values, name).prod(axis)
  assert out.dtype == getattr(dtypes, SUM_DTYPE[name])   # the dtype sum gives
  check(out, np.prod(values.astype(np.float64 if name in FLOAT_NAMES else np.int64), axis=axis), SUM_DTYPE[name])


@pytest.mark.parametrize("shape,axis,keepdim", SUM_AXES, ids=[f"{s}-{a}-{k}" for s, a, k in SUM_AXES])
def test_prod_axes(shape, axis, keepdim):
  values = make_values(shape, "float32", seed=6)
  out = to_nb(values, "float32").prod(axis=axis, keepdim=keepdim)
  expected = np.prod(values, axis=np_axis(values, axis), keepdims=keepdim)   # 1 over an empty axis
  if np.ndim(values) == 0 and keepdim: expected = np.asarray(expected).reshape(())
  check(out, expected, "float32")


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_prod_noncontiguous(view, axis):
  t, a = view_inputs(view, "float64", seed=7)
  check(t.prod(axis), np.prod(a, axis=axis), "float64")


def test_prod_of_long_rows_and_columns():
  """Long enough to run in parallel chunks, whose products are multiplied together."""
  values = 1 + np.random.default_rng(8).uniform(-1e-3, 1e-3, (1 << 17,))
  np.testing.assert_allclose(Tensor(values).prod().item(), np.prod(values), rtol=1e-12)
  grid = values.reshape(256, 512)
  np.testing.assert_allclose(Tensor(grid).prod(0).numpy(), np.prod(grid, axis=0), rtol=1e-12)
  np.testing.assert_allclose(Tensor(grid).prod(1).numpy(), np.prod(grid, axis=1), rtol=1e-12)
  np.testing.assert_allclose(Tensor(grid.astype(np.float32)).prod(1).numpy(), np.prod(grid, axis=1), rtol=1e-4)


def test_int_prod_wraps_as_numpy():
  values = np.array([3 ** 30, 3 ** 30, 7, -5], np.int64)
  assert Tensor(values).prod().item() == np.prod(values)
  assert Tensor(np.array([1 << 20, 1 << 20], np.int32)).prod().item() == 0   # int32 arithmetic, as sum's


# a product of copies of one constant is folded, never looped: it must equal the loop's result
FOLDED_PRODUCTS = [
  (3, (40,), "int64", np.prod(np.full(40, 3, np.int64))), (-2, (3, 5), "int32", -(2 ** 15)),
  (2.0, (10,), "float32", 1024.0), (10.0, (400,), "float32", float("inf")), (-10.0, (401,), "float64", -float("inf")),
  (0.5, (2000,), "float64", 0.0), (True, (4,), "bool", 1), (0, (1 << 40,), "int64", 0),
]


@pytest.mark.parametrize("value,shape,name,expected", FOLDED_PRODUCTS, ids=[f"{v}-{s}-{n}" for v, s, n, _ in FOLDED_PRODUCTS])
def test_prod_of_a_constant(value, shape, name, expected):
  out = Tensor.full(shape, value, dtype=getattr(dtypes, name)).prod()
  assert out.item() == expected


ZERO_GROUPS = np.array([[1.5, -2.0, 0.5, 3.0], [0.0, 2.0, -1.5, 0.5], [0.0, 0.0, 2.0, 1.0], [0.0, 0.0, 0.0, 0.0]])


@pytest.mark.parametrize("axis,keepdim", [(1, False), (0, True), (None, False), (-1, True)])
@pytest.mark.parametrize("name", ["float32", "float64"])
def test_prod_gradient_with_zeros_as_torch(axis, keepdim, name):
  """Rows with no zero, one zero, two zeros and all zeros: the gradient is the product of the others, not
  the result over the input (which divides 0 by 0)."""
  values = ZERO_GROUPS.astype(name)
  t = Tensor(values, requires_grad=True)
  ref = torch.tensor(values, requires_grad=True)
  out = t.prod(axis, keepdim=keepdim)
  expected = ref.prod() if axis is None else ref.prod(axis, keepdim=keepdim)
  weights = np.arange(1, expected.numel() + 1, dtype=name).reshape(tuple(expected.shape))
  (out * Tensor(weights)).sum().backward()
  (expected * torch.from_numpy(weights)).sum().backward()
  np.testing.assert_allclose(out.numpy(), expected.detach().numpy())
  np.testing.assert_allclose(t.grad.numpy(), ref.grad.numpy(), rtol=1e-6)
  assert t.grad.dtype == getattr(dtypes, name)


def test_prod_gradient_of_half_and_empty_inputs():
  half = Tensor(np.array([[1.5, 2.0, -0.5]], np.float16), requires_grad=True)
  half.prod(1).sum().backward()
  assert half.grad.dtype == dtypes.float16
  np.testing.assert_array_equal(half.grad.numpy(), np.array([[-1.0, -0.75, 3.0]], np.float16))
  empty = Tensor(np.zeros((0, 3), np.float32), requires_grad=True)
  out = empty.prod(0)
  out.sum().backward()
  np.testing.assert_array_equal(out.numpy(), np.ones(3, np.float32))
  assert empty.grad.shape == (0, 3)


def test_prod_by_numpy_and_torch_names():
  values = make_values((3, 4), "float64", seed=9)
  mask = np.array([True, False, True, True])
  t = Tensor(values)
  pairs = [(np.prod(t), np.prod(values)), (np.prod(t, axis=0, keepdims=True), np.prod(values, axis=0, keepdims=True)),
           (np.prod(t, axis=1, where=mask, initial=2.0), np.prod(values, axis=1, where=mask, initial=2.0)),
           (t.prod(dim=1, keepdim=True), np.prod(values, axis=1, keepdims=True))]
  for got, expected in pairs: check(got, expected, "float64")
  with pytest.raises(IndexError): t.prod(2)


# ---------------------------------------------------------------- max / min
MAXMIN_DTYPES = ["bool", "int8", "uint8", "int32", "int64", "uint32", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("name", MAXMIN_DTYPES)
@pytest.mark.parametrize("axis", [None, 1])
def test_maxmin_dtypes(op, name, axis):
  values = make_values((4, 5), name, seed=3)
  if name.startswith("uint"): values[0, 0] = 0  # a zero must survive min on unsigned types
  out = getattr(to_nb(values, name), op)(axis)
  assert out.dtype == getattr(dtypes, name)
  check(out, getattr(np, "max" if op == "max" else "min")(values, axis=axis), name)


MAXMIN_AXES = [((), None, False), ((), 0, True), ((5,), 0, False), ((3, 4), -1, True), ((2, 3, 4), (0, 2), False),
               ((2, 3, 4), (0, 1), True), ((2, 3, 2, 5), (1, 3), False), ((1, 4), 0, False), ((3, 1, 2), 1, True),
               ((0, 3), 1, False), ((2, 0, 3), 2, True)]


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("shape,axis,keepdim", MAXMIN_AXES, ids=[f"{s}-{a}-{k}" for s, a, k in MAXMIN_AXES])
def test_maxmin_axes(op, shape, axis, keepdim):
  values = make_values(shape, "float32", seed=4)
  out = getattr(to_nb(values, "float32"), op)(axis=axis, keepdim=keepdim)
  expected = getattr(np, "max" if op == "max" else "min")(values, axis=np_axis(values, axis), keepdims=keepdim)
  if np.ndim(values) == 0 and keepdim: expected = np.asarray(expected).reshape(())
  check(out, expected, "float32")


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_maxmin_noncontiguous(op, view, axis):
  t, a = view_inputs(view, "float32", seed=5)
  check(getattr(t, op)(axis), getattr(np, "max" if op == "max" else "min")(a, axis=axis), "float32")


NAN = float("nan")
INF = float("inf")
# rows chosen so that an accumulator that drops NaN, or starts from a finite value, gives a wrong answer
SPECIAL_ROWS = [
  [NAN, 1.0, 3.0], [1.0, NAN, 3.0], [1.0, 3.0, NAN], [NAN, NAN, NAN],
  [-INF, -INF, -INF], [INF, INF, INF], [-INF, 2.0, INF], [-3e38, -3e38, -3e38], [3e38, 1.0, 3e38],
]


@pytest.mark.parametrize("op", ["max", "min"])
def test_maxmin_nan_and_inf_like_torch(op):
  values = np.array(SPECIAL_ROWS, dtype=np.float32)
  ref = getattr(torch, "amax" if op == "max" else "amin")
  t = Tensor(values)
  np.testing.assert_array_equal(getattr(t, op)(1).numpy(), ref(torch.from_numpy(values), dim=1).numpy())
  np.testing.assert_array_equal(getattr(t, op)(0).numpy(), ref(torch.from_numpy(values), dim=0).numpy())
  assert np.isnan(getattr(t, op)().item())
  finite = np.array(SPECIAL_ROWS[4:], dtype=np.float32)
  assert getattr(Tensor(finite), op)().item() == ref(torch.from_numpy(finite)).item()


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
@pytest.mark.parametrize("rows", [40, 41])
def test_maxmin_down_long_columns_like_torch(op, name, rows):
  """Over the first axis of a tall matrix (accumulators for a block of columns, two rows a pass, an odd last row):
  NaN wins wherever it is in its column, infinities and signed zeros as torch's amax and amin."""
  values = make_values((rows, 1100), "float32", seed=9)
  for column, row in enumerate([0, 1, rows // 2, rows - 2, rows - 1]): values[row, column] = NAN
  values[3, 5:7], values[rows - 1, 7:9] = INF, -INF
  values[:, 9], values[rows // 2, 9] = 0.0, -0.0
  values = values.astype(name)
  ref = getattr(torch, "amax" if op == "max" else "amin")(torch.from_numpy(values).double(), dim=0).numpy().astype(name)
  out = getattr(to_nb(values, name), op)(0).numpy()
  np.testing.assert_array_equal(out, ref)
  np.testing.assert_array_equal(np.signbit(out[~np.isnan(ref)]), np.signbit(ref[~np.isnan(ref)]))


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("name", ["int8", "int32", "int64", "uint8", "uint32"])
def test_maxmin_integer_extremes(op, name):
  info = np.iinfo(np.dtype(name))
  for values in ([info.min, info.min], [info.max, info.max], [info.min, info.max, 0]):
    arr = np.array(values, dtype=name)
    got = getattr(Tensor(arr), op)().item()
    assert got == (arr.max() if op == "max" else arr.min()), (values, got)


EMPTY_EXTREMES = ["float32", "float16", "int8", "uint8", "int32", "int64", "uint64", "bool"]


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("name", EMPTY_EXTREMES)
def test_maxmin_over_an_empty_axis_is_the_identity(op, name):
  """tinygrad 0.9.0 gives the reduction's identity (torch and numpy raise): max is -inf or the dtype's lowest value,
  min inf or its highest. Reducing a non-empty axis of an empty tensor is empty."""
  dt = np.dtype(name)
  lowest, highest = (-INF, INF) if dt.kind == "f" else (False, True) if dt.kind == "b" else (np.iinfo(dt).min, np.iinfo(dt).max)
  fill = lowest if op == "max" else highest
  t = Tensor(np.zeros((3, 0), dtype=dt))
  out = getattr(t, op)(1)
  assert out.shape == (3,) and out.dtype.np == dt
  np.testing.assert_array_equal(out.numpy(), np.full(3, fill, dtype=dt))
  whole = getattr(t, op)()
  assert whole.shape == () and whole.item() == fill
  assert getattr(t, op)(0).shape == (0,)


def test_max_over_an_empty_axis_has_an_empty_gradient():
  x = Tensor.zeros(3, 0, requires_grad=True)
  x.max(1).sum().backward()
  assert x.grad.shape == (3, 0)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_max_gradient_counts_many_ties_in_float32(name):
  """10001 tied maxima share the gradient: counted in float16 the count would stop at 2048."""
  t = Tensor([5, -5], dtype=getattr(dtypes, name), requires_grad=True)
  t.reshape(2, 1).expand(2, 10001).max().backward()
  assert t.grad.dtype == t.dtype
  np.testing.assert_allclose(t.grad.float().numpy(), [1, 0], rtol=1e-3)


# ---------------------------------------------------------------- any / all
@pytest.mark.parametrize("op", ["any", "all"])
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_any_all_of_every_dtype(op, name):
  values = make_values((4, 5), name, seed=6)
  values[1] = 0   # a row of zeros, so that any(1) and all(1) both see each answer
  values[2] = 1
  for axis in (None, 0, 1, -1):
    out = getattr(to_nb(values, name), op)(axis)
    assert out.dtype == dtypes.bool
    check(out, getattr(np, op)(values, axis=axis), "bool")


@pytest.mark.parametrize("op", ["any", "all"])
@pytest.mark.parametrize("shape,axis,keepdim", MAXMIN_AXES, ids=[f"{s}-{a}-{k}" for s, a, k in MAXMIN_AXES])
def test_any_all_axes_and_empty_axes(op, shape, axis, keepdim):
  values = make_values(shape, "int32", seed=7) > 0   # over no element any is False and all True, as numpy
  out = getattr(to_nb(values, "bool"), op)(axis=axis, keepdim=keepdim)
  expected = getattr(np, op)(values, axis=np_axis(values, axis), keepdims=keepdim)
  if np.ndim(values) == 0 and keepdim: expected = np.asarray(expected).reshape(())
  check(out, expected, "bool")


@pytest.mark.parametrize("op", ["any", "all"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_any_all_noncontiguous(op, view):
  t, a = view_inputs(view, "float32", seed=8)
  check(getattr(t, op)(0), getattr(np, op)(a, axis=0), "bool")


def test_any_all_count_nan_as_true_and_take_numpy_calls():
  x = np.array([[np.nan, 0.0], [0.0, 0.0], [-0.0, 2.0]], np.float32)
  check(Tensor(x).any(1), np.any(x, axis=1), "bool")
  check(Tensor(x).all(0), np.all(x, axis=0), "bool")
  check(np.any(Tensor(x), axis=0, keepdims=True), np.any(x, axis=0, keepdims=True), "bool")
  assert np.all(Tensor(x) == Tensor(x)).item() is False and (Tensor(x[1]) == 0).all().item() is True


# ---------------------------------------------------------------- mean
@pytest.mark.parametrize("name", ["bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("axis", [None, (0, 2)])
def test_mean_dtypes(name, axis):
  values = make_values((3, 4, 2), name, seed=6)
  out = to_nb(values, name).mean(axis)
  assert out.dtype == getattr(dtypes, MEAN_DTYPE[name])
  check(out, np.mean(values.astype(np.float64), axis=axis), MEAN_DTYPE[name])


@pytest.mark.parametrize("name,values", [("int32", [-2**31, 2, 5, 2**31 - 1]), ("int64", [2**40, -2**40, 7, 0]),
                                         ("uint32", [2**32 - 1, 2**32 - 3, 4, 0]), ("int8", [-128, 127, 127, 1]),
                                         ("int64", [2**62, 2**62, 2**62, 1]), ("uint64", [2**64 - 1, 2**64 - 1, 3, 0])])
def test_int_mean_sums_exactly(name, values):
  """Ints sum exactly before the division (as numpy's float64 accumulator): in float32 the extremes cancelled to 0.
  64-bit ints sum in float64, as numpy's: in 64-bit ints, three 2**62s wrapped to a negative mean."""
  a = np.array(values, getattr(np, name))
  out = Tensor(a).mean()
  assert out.dtype == dtypes.float32
  np.testing.assert_allclose(out.item(), a.mean(), rtol=1e-7)
  np.testing.assert_allclose(Tensor(a.reshape(2, 2)).mean(1).numpy(), a.reshape(2, 2).mean(1), rtol=1e-7)


@pytest.mark.parametrize("np_dtype", [np.int8, np.int32, np.float32, np.float64])
def test_mean_of_an_exact_sum_is_its_correctly_rounded_quotient(np_dtype):
  """The sum divided by the count, as numpy and torch: times 1 / count it rounded twice (a thousand 127s gave
  127.00000762939453, numpy and torch 127.0)."""
  for count, value in [(1000, 127), (3, 7), (7, 5), (49, 3), (10, 100)]:
    a = np.full(count, value, np_dtype)
    expected = np.float32(np.float64(count * value) / count) if np_dtype != np.float64 else np.float64(count * value) / count
    assert Tensor(a).mean().item() == expected == torch.from_numpy(a).double().mean().to(torch.float64 if np_dtype == np.float64 else torch.float32).item()
    assert Tensor(np.tile(a, (2, 1))).mean(1).tolist() == [expected] * 2


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_mean_divides_before_rounding_back(name):
  """The float32 sum of two 40000s overflows float16; the mean (and var, layernorm, avg_pool) must not."""
  t = Tensor([40000.0, 40000.0]).cast(getattr(dtypes, name))
  value = t[0].item()   # 40000 in float16, 39936 in bfloat16
  assert t.mean().dtype == t.dtype and t.mean().item() == value
  assert t.var().item() == 0.0
  assert t.reshape(1, 1, 1, 2).avg_pool2d((1, 2)).item() == value


MEAN_AXES = [((), None, False), ((), 0, True), ((5,), 0, True), ((3, 4), -1, False), ((2, 3, 4), (0, 2), True),
             ((2, 3, 2, 5), (1, 3), False), ((1, 4), 0, False), ((3, 1, 2), 1, True), ((0, 3), 1, False),
             ((0, 3), 0, False)]


@pytest.mark.parametrize("shape,axis,keepdim", MEAN_AXES, ids=[f"{s}-{a}-{k}" for s, a, k in MEAN_AXES])
def test_mean_axes(shape, axis, keepdim):
  values = make_values(shape, "float32", seed=7)
  out = to_nb(values, "float32").mean(axis=axis, keepdim=keepdim)
  dim = 0 if np.ndim(values) == 0 else tuple(range(len(shape))) if axis is None else axis
  expected = torch.from_numpy(values).mean(dim=dim, keepdim=keepdim).numpy()
  assert out.shape == expected.shape
  np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-7)  # the 0-size rows are NaN in both


@pytest.mark.parametrize("view", list(VIEWS))
def test_mean_noncontiguous(view):
  t, a = view_inputs(view, "float32", seed=8)
  check(t.mean(0), np.mean(a, axis=0), "float32")
  check(t.mean(), np.mean(a), "float32")


# ---------------------------------------------------------------- var / std
VAR_ROWS = [  # dtype, shape, axis, keepdim, correction
  ("float32", (5,), None, False, 1), ("float32", (5,), 0, True, 0), ("float32", (3, 4), 1, False, 1),
  ("float32", (3, 4), 0, True, 2), ("float32", (3, 4), None, False, 0), ("float32", (2, 3, 4), (0, 2), False, 1),
  ("float32", (2, 3, 4), -1, True, 1), ("float32", (3, 1), 0, False, 1), ("float32", (1, 3), 1, False, 0),
  ("float32", (3, 1), 1, False, 1),   # divides 0 by 0 -> nan, as torch does
  ("float64", (3, 4), 1, False, 1), ("float64", (2, 3, 4), (0, 2), True, 0), ("float64", (5,), None, False, 1),
]


@pytest.mark.filterwarnings("ignore:.*degrees of freedom")
@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("name,shape,axis,keepdim,correction", VAR_ROWS,
                         ids=[f"{n}-{s}-{a}-{k}-c{c}" for n, s, a, k, c in VAR_ROWS])
def test_var_std(op, name, shape, axis, keepdim, correction):
  values = np.random.default_rng(9).standard_normal(shape).astype(name)
  out = getattr(Tensor(values), op)(axis=axis, keepdim=keepdim, correction=correction)
  dim = tuple(range(len(shape))) if axis is None else axis
  expected = getattr(torch, op)(torch.from_numpy(values), dim=dim, correction=correction, keepdim=keepdim).numpy()
  assert out.dtype == getattr(dtypes, name)
  assert out.shape == expected.shape
  np.testing.assert_allclose(out.numpy(), expected, **TOL[name])


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("view", ["transposed", "stepped", "flipped", "expanded", "padded"])
def test_var_std_noncontiguous(op, view):
  t, a = view_inputs(view, "float32", seed=10)
  expected = getattr(torch, op)(torch.from_numpy(a.astype(np.float32)), dim=0).numpy()
  np.testing.assert_allclose(getattr(t, op)(0).numpy(), expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- argmax / argmin
def tie_values(shape, name, seed):
  """Few distinct values, so ties are everywhere and the first occurrence matters."""
  rng = np.random.default_rng(seed)
  if name == "bool": return np.asarray(rng.random(shape) < 0.5)
  return np.asarray(rng.integers(0, 3, size=shape), dtype=np.float64 if name in FLOAT_NAMES else np.int64)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("name", ["bool", "int8", "uint8", "int32", "float16", "float32"])
@pytest.mark.parametrize("axis,keepdim", [(None, False), (0, False), (-1, True)])
def test_arg_reduce_dtypes_and_ties(op, name, axis, keepdim):
  values = tie_values((5, 6), name, seed=11)
  out = getattr(to_nb(values, name), op)(axis=axis, keepdim=keepdim)
  expected = getattr(np, op)(values, axis=axis, keepdims=keepdim)  # numpy returns the first occurrence
  assert out.dtype == dtypes.int32
  assert out.shape == np.shape(expected)
  np.testing.assert_array_equal(out.numpy(), expected)


ARG_SHAPES = [((), None), ((), 0), ((), -1), ((7,), 0), ((1,), 0), ((1, 4), 0), ((4, 1), 1), ((2, 3, 4), 1), ((2, 3, 4), None),
              ((2, 3, 4), -1), ((3, 1, 2), 1)]


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("shape,axis", ARG_SHAPES, ids=[f"{s}-{a}" for s, a in ARG_SHAPES])
def test_arg_reduce_shapes(op, shape, axis):
  values = tie_values(shape, "float32", seed=12)
  out = getattr(to_nb(values, "float32"), op)(axis)
  expected = getattr(np, op)(values, axis=np_axis(values, axis))
  assert out.shape == np.shape(expected)
  np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_arg_reduce_noncontiguous(op, view, axis):
  base_shape, nb_fn, np_fn = VIEWS[view]
  values = tie_values(base_shape, "float32", seed=13)
  out = getattr(nb_fn(Tensor(values.astype(np.float32))), op)(axis)
  expected = getattr(np, op)(np.ascontiguousarray(np_fn(values)), axis=axis)
  np.testing.assert_array_equal(out.numpy(), expected)


def test_arg_reduce_along_an_axis_longer_than_int32_gives_int64_positions():
  """int32 positions wrapped to negative ones (argmax gave -2147482651); no buffer holds the 2**31 + 8 values."""
  position = 2**31 + 3
  hit = Tensor.arange(2**31 + 8) == position
  for out in (hit.argmax(), hit.logical_not().argmin()):
    assert out.dtype == dtypes.int64 and out.item() == position
  assert hit[:16].argmax().dtype == dtypes.int32   # the API's int32 where it holds the positions


# ---------------------------------------------------------------- softmax / log_softmax / logsumexp
SOFTMAX_ROWS = [("float32", (5,), -1), ("float32", (3, 4), -1), ("float32", (3, 4), 0), ("float32", (2, 3, 4), 1),
                ("float32", (2, 3, 4), -1), ("float32", (3, 1), -1), ("float32", (1, 4), 0), ("float32", (2, 1, 3), 1),
                ("float32", (0, 4), -1), ("float64", (3, 4), -1), ("float64", (2, 3, 4), 1)]


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("name,shape,axis", SOFTMAX_ROWS, ids=[f"{n}-{s}-{a}" for n, s, a in SOFTMAX_ROWS])
def test_softmax(op, name, shape, axis):
  values = (np.random.default_rng(14).standard_normal(shape) * 3).astype(name)
  out = getattr(Tensor(values), op)(axis)
  expected = getattr(torch, op)(torch.from_numpy(values), dim=axis).numpy()
  assert out.dtype == getattr(dtypes, name)
  assert out.shape == expected.shape
  np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_extreme_values(op):
  values = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0], [-INF, 0.0, 1.0], [88.0, 89.0, -89.0]],
                    dtype=np.float32)
  expected = getattr(torch, op)(torch.from_numpy(values), dim=-1).numpy()
  np.testing.assert_allclose(getattr(Tensor(values), op)().numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("view", ["transposed", "stepped", "flipped", "expanded", "padded", "permuted3d"])
def test_softmax_noncontiguous(op, view):
  t, a = view_inputs(view, "float32", seed=15)
  expected = getattr(torch, op)(torch.from_numpy(a.astype(np.float32)), dim=-1).numpy()
  np.testing.assert_allclose(getattr(t, op)(-1).numpy(), expected, rtol=1e-5, atol=1e-6)


LSE_ROWS = [((5,), None, False), ((5,), 0, True), ((3, 4), 1, False), ((3, 4), 0, True), ((3, 4), None, False),
            ((2, 3, 4), 1, False), ((2, 3, 4), -1, True), ((3, 1), 1, False), ((1, 3), 0, True)]


@pytest.mark.parametrize("shape,axis,keepdim", LSE_ROWS, ids=[f"{s}-{a}-{k}" for s, a, k in LSE_ROWS])
def test_logsumexp(shape, axis, keepdim):
  values = (np.random.default_rng(16).standard_normal(shape) * 3).astype(np.float32)
  out = Tensor(values).logsumexp(axis, keepdim=keepdim)
  dim = tuple(range(len(shape))) if axis is None else axis
  expected = torch.logsumexp(torch.from_numpy(values), dim=dim, keepdim=keepdim).numpy()
  assert out.shape == expected.shape
  np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_logsumexp_large_values():
  values = np.array([[1000.0, 1000.0], [-1000.0, -1000.5], [-INF, 0.0], [-INF, -INF], [INF, 0.0], [INF, -INF]], dtype=np.float32)
  expected = torch.logsumexp(torch.from_numpy(values), dim=1).numpy()
  np.testing.assert_allclose(Tensor(values).logsumexp(1).numpy(), expected, rtol=1e-6)



def exact_sums(values: np.ndarray, axis) -> np.ndarray:
  """The exact sums over axis (None: all), as float64: math.fsum's."""
  axes = tuple(range(values.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
  columns = np.moveaxis(values, axes, tuple(range(len(axes))))
  kept = columns.shape[len(axes):]
  columns = columns.reshape(-1, int(np.prod(kept)))
  return np.array([math.fsum(columns[:, i]) for i in range(columns.shape[1])]).reshape(kept)


@pytest.mark.parametrize("shape, axis", [((1 << 22,), None), ((4, 1 << 20), 1), ((1 << 20, 4), 0), ((512, 512, 8), (0, 1)),
                                         ((3000, 40), 0)], ids=["all", "long_rows", "long_columns", "two_axes", "columns_of_3000"])
@pytest.mark.parametrize("name", ["float32", "float64"])
def test_long_float_sums_are_within_an_ulp_of_the_exact_sum(shape, axis, name):
  """Blocks of a long float sum are added up with their rounding errors kept: each result within one ulp of the
  exact sum (math.fsum), as numpy's pairwise sum along a row is. Straight accumulation was 12 ulps off along rows of
  4M float32 values and 400 down columns of 4M; inf and NaN still propagate."""
  values = (np.random.default_rng(7).random(shape) + 1).astype(name)
  exact = exact_sums(values, axis)
  got = Tensor(values).sum(axis).numpy()
  ulps = np.abs(got.astype(np.float64) - exact) / np.spacing(exact.astype(name))
  assert ulps.max() <= 1, ulps.max()
  if axis is None:
    values[5] = np.inf
    assert Tensor(values).sum().item() == np.inf
    values[7] = np.nan
    assert np.isnan(Tensor(values).sum().item())
