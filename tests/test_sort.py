"""sort, argsort and topk against torch (CPU): every dtype, NaN, inf and -0.0, ties (a stable order), both
directions, every axis, views, empty and 0-d tensors, rows short enough for insertion and long enough for the
radix passes, and the gradient of the sorted values."""
import math
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes
from nbgrad.jit import PARALLEL_MIN_ELEMENTS
from nbgrad.jit.sort import INSERTION_MAX, LONG_ROW

rng = np.random.default_rng(0)
DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
          "float32", "float64"]


def values_of(name: str, shape) -> np.ndarray:
  """Values with many ties and each dtype's extremes, as a numpy array of that dtype (float32 for bfloat16)."""
  if name == "bool": return rng.random(shape) < 0.5
  if name in ("float16", "bfloat16", "float32", "float64"):
    pool = np.array([-math.inf, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, math.inf, math.nan])
    return rng.choice(pool, shape).astype("float32" if name == "bfloat16" else name)
  info = np.iinfo(name)
  pool = np.array([info.min, info.min + 1, 0, 1, 2, info.max - 1, info.max] + ([-1, -7] if info.min < 0 else [7]), dtype=name)
  return rng.choice(pool, shape)


def tensor_of(values: np.ndarray, name: str) -> Tensor:
  return Tensor(values, dtype=getattr(dtypes, name))


def torch_order(values: np.ndarray, name: str, dim: int, descending: bool) -> np.ndarray:
  """torch's stable sort indices (unsigned dtypes torch lacks sort as int64 or by their order keys)."""
  if name in ("uint16", "uint32"): values = values.astype(np.int64)
  if name == "uint64": values = (values ^ np.uint64(1 << 63)).view(np.int64)   # the same order, signed
  reference = torch.tensor(values)
  if name == "bfloat16": reference = reference.to(torch.bfloat16)
  return torch.sort(reference, dim=dim, descending=descending, stable=True)[1].numpy()


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_of_every_dtype_as_torch(name, descending):
  for shape, dim in [((4, 9), 1), ((40, 3), 0), ((2, INSERTION_MAX + 40, 3), 1), ((300,), 0)]:
    values = values_of(name, shape)
    got = tensor_of(values, name).argsort(dim, descending=descending)
    assert got.dtype == dtypes.int32 and got.shape == shape
    np.testing.assert_array_equal(got.numpy(), torch_order(values, name, dim, descending), err_msg=f"{shape} dim {dim}")


@pytest.mark.parametrize("name", ["float32", "int32", "float64", "uint8"])
def test_sort_values_and_indices_as_torch(name):
  values = values_of(name, (3, 50))
  sorted_values, indices = tensor_of(values, name).sort(-1, descending=True)
  assert sorted_values.dtype == getattr(dtypes, name)
  np.testing.assert_array_equal(sorted_values.numpy(), np.take_along_axis(values, indices.numpy(), -1))
  np.testing.assert_array_equal(indices.numpy(), torch_order(values, name, 1, True))


def test_sort_of_long_rows_in_parallel_matches_numpy():
  """A sort big enough to run its rows on all threads, and one long row (float keys across all 4 bytes)."""
  values = rng.standard_normal((64, PARALLEL_MIN_ELEMENTS // 32)).astype(np.float32)
  np.testing.assert_array_equal(Tensor(values).argsort(1).numpy(), np.argsort(values, 1, kind="stable"))
  np.testing.assert_array_equal(Tensor(values).argsort(0).numpy(), np.argsort(values, 0, kind="stable"))
  row = rng.integers(-(1 << 60), 1 << 60, 200_000)
  np.testing.assert_array_equal(Tensor(row).sort()[0].numpy(), np.sort(row))


@pytest.mark.parametrize("name", ["uint8", "int16", "float32", "float64"])
def test_one_long_row_sorts_on_every_thread_as_torch(name):
  """A row of LONG_ROW values or more sorts with each radix pass split among the threads: ties keep their order
  across the parts, keys of 8 bytes sort by both halves, both directions, and a topk of more than a quarter."""
  values = values_of(name, (LONG_ROW + 999,))
  for descending in (False, True):
    got = tensor_of(values, name).argsort(descending=descending).numpy()
    np.testing.assert_array_equal(got, torch_order(values, name, 0, descending), err_msg=f"descending={descending}")
  top = tensor_of(values, name).topk(LONG_ROW // 2)[1].numpy()
  np.testing.assert_array_equal(top, torch_order(values, name, 0, True)[:LONG_ROW // 2])


def test_a_sort_refuses_rows_of_2_to_the_32_values_when_built():
  with pytest.raises(ValueError, match="fewer than 2\\*\\*32 values a row, got 4294967296"): Tensor.zeros(1 << 32, dtype=dtypes.uint8).argsort()


@pytest.mark.parametrize("view", ["transposed", "stepped", "expanded", "lazy"])
def test_sort_of_views_and_computed_values(view):
  base = rng.integers(-5, 5, (6, 8)).astype(np.float32)
  build = {"transposed": (lambda t: t.T, lambda a: a.T), "stepped": (lambda t: t[::2, 1::3], lambda a: a[::2, 1::3]),
           "expanded": (lambda t: t[:1].expand(4, 8), lambda a: np.broadcast_to(a[:1], (4, 8))),
           "lazy": (lambda t: (t * 2 - 1).relu(), lambda a: np.maximum(a * 2 - 1, 0))}[view]
  t, a = build[0](Tensor(base)), np.ascontiguousarray(build[1](base))
  for dim in (0, 1):
    np.testing.assert_array_equal(t.argsort(dim).numpy(), np.argsort(a, dim, kind="stable"))


def test_sort_of_empty_0d_and_size1_tensors():
  assert Tensor.zeros(0, 3).argsort(0).shape == (0, 3)
  values, indices = Tensor.zeros(2, 0).sort(1)
  assert values.shape == indices.shape == (2, 0)
  values, indices = Tensor(4.0).sort()
  assert values.shape == indices.shape == () and values.item() == 4.0 and indices.item() == 0
  assert Tensor([[3.0], [1.0]]).argsort(1).tolist() == [[0], [0]]
  assert Tensor(7).topk(1)[0].item() == 7


@pytest.mark.parametrize("k,dim,largest", [(3, 1, True), (1, 0, False), (5, -1, False), (0, 1, True), (12, 1, True)])
def test_topk_as_torch(k, dim, largest):
  values = rng.permutation(36).reshape(3, 12).astype(np.float64)   # distinct: torch's order among ties is its own
  got_values, got_indices = Tensor(values).topk(k, dim, largest=largest)
  expected_values, expected_indices = torch.topk(torch.tensor(values), k, dim, largest=largest)
  np.testing.assert_array_equal(got_values.numpy(), expected_values.numpy())
  np.testing.assert_array_equal(got_indices.numpy(), expected_indices.numpy())


@pytest.mark.parametrize("name", ["float32", "int8", "uint64", "float64"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_is_the_start_of_the_stable_sort(name, largest):
  """Selected before sorted: among ties at the k-th value, the first ones come, as in the full sort."""
  values = values_of(name, (3, 200, 2))
  full = tensor_of(values, name).argsort(1, descending=largest).numpy()
  for k in (1, 7, 60, 199):
    np.testing.assert_array_equal(tensor_of(values, name).topk(k, 1, largest=largest)[1].numpy(), full[:, :k], err_msg=f"k={k}")


@pytest.mark.parametrize("name", DTYPES)
def test_a_topk_of_up_to_a_quarter_of_the_row_is_the_start_of_the_stable_sort(name):
  """More than the 64 kept as the row streams by, up to a quarter of it: the k-th key is found a byte at a time and
  the keys up to it sorted (with every dtype's extremes, NaN, -0.0 and ties at the k-th value)."""
  values = values_of(name, (2, 2000))
  values[1, ::3] = values[1, 0]   # a third of the row one value
  for largest in (True, False):
    full = tensor_of(values, name).argsort(1, descending=largest).numpy()
    for k in (65, 300, 500):
      got_values, got_indices = tensor_of(values, name).topk(k, 1, largest=largest)
      np.testing.assert_array_equal(got_indices.numpy(), full[:, :k], err_msg=f"k={k} largest={largest}")
      np.testing.assert_array_equal(got_values.numpy(), np.take_along_axis(tensor_of(values, name).numpy(), full[:, :k], 1))


def test_topk_of_a_long_row_as_torch():
  values = rng.standard_normal(1 << 18).astype(np.float32)
  got_values, got_indices = Tensor(values).topk(1000)
  expected_values, expected_indices = torch.topk(torch.from_numpy(values), 1000)
  np.testing.assert_array_equal(got_values.numpy(), expected_values.numpy())
  np.testing.assert_array_equal(got_indices.numpy(), expected_indices.numpy())


@pytest.mark.parametrize("name", ["float32", "int8", "uint64", "float16", "float64"])
@pytest.mark.parametrize("layout", ["random", "ascending", "descending", "one_value"])
def test_topk_of_one_long_row_gathered_under_a_sampled_bound_is_the_start_of_torchs_stable_sort(name, layout):
  """One row of SAMPLED_SELECT_MIN or more: the keys under a bound from a sample are gathered by the threads and
  sorted. Sorted rows put every candidate in one thread's part, and a row of one value puts all of them under the
  bound (more than a part has room for): the serial selection then."""
  from nbgrad.jit.sort import SAMPLED_SELECT_MIN
  n = SAMPLED_SELECT_MIN * 2
  values = values_of(name, n) if name in ("int8", "uint64") else rng.standard_normal(n).astype(name)
  if name in ("float32", "float64"): values[rng.integers(0, n, 50)] = [math.nan, -0.0, math.inf, -math.inf, 0.0] * 10
  if layout != "random": values = np.sort(values)[::-1 if layout == "descending" else 1].copy()
  if layout == "one_value": values[:] = values[n // 2]
  for largest in (True, False):
    expected = torch_order(values, name, 0, largest)
    for k in (1, 100, n // 16):
      got_values, got_indices = tensor_of(values, name).topk(k, largest=largest)
      np.testing.assert_array_equal(got_indices.numpy(), expected[:k], err_msg=f"k={k} largest={largest}")
      np.testing.assert_array_equal(got_values.numpy(), values[expected[:k]])


def test_topk_refuses_a_k_past_the_axis():
  with pytest.raises(ValueError, match="k=5 is more than the 4 elements"): Tensor.ones(3, 4).topk(5)
  with pytest.raises(ValueError): Tensor.ones(3, 4).topk(-1)
  with pytest.raises(IndexError): Tensor.ones(3, 4).topk(1, dim=2)


GRADIENT_CASES = {   # (ours, torch's stable order); topk's values are distinct, as torch orders ties its own way there
  "sort": (lambda t: t.sort(1)[0], lambda t: torch.sort(t, dim=1, stable=True)[0], True),
  "sort_descending": (lambda t: t.sort(0, descending=True)[0], lambda t: torch.sort(t, dim=0, descending=True, stable=True)[0], True),
  "topk": (lambda t: t.topk(3)[0], lambda t: torch.topk(t, 3)[0], False),
}


@pytest.mark.parametrize("op", list(GRADIENT_CASES))
def test_gradient_of_sorted_values_as_torch(op):
  ours_fn, torch_fn, with_tie = GRADIENT_CASES[op]
  values = np.random.default_rng(7).standard_normal((4, 7))
  if with_tie: values[1, 2] = values[1, 5] = values[0, 2]   # each tied element still gets its own position's gradient
  ours, theirs = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  out, expected = ours_fn(ours), torch_fn(theirs)
  weights = np.random.default_rng(8).standard_normal(tuple(expected.shape))
  (out * Tensor(weights)).sum().backward()
  (expected * torch.tensor(weights)).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
  assert not ours.argsort().requires_grad


# ---- median and quantile (built on the sort)
MIDDLE_VALUES = np.array([[1.0, math.nan, 3.0, math.nan, 0.5], [4.0, 2.0, 3.0, 1.0, 2.0], [math.nan] * 5, [5.0, -1.0, 5.0, 0.0, 7.0]])


@pytest.mark.parametrize("op", ["median", "nanmedian"])
@pytest.mark.parametrize("dim,keepdim", [(1, False), (0, True), (-1, True)])
def test_median_and_nanmedian_along_a_dim_as_torch(op, dim, keepdim):
  values, indices = getattr(Tensor(MIDDLE_VALUES), op)(dim, keepdim)
  expected_values, expected_indices = getattr(torch.tensor(MIDDLE_VALUES), op)(dim, keepdim)
  assert indices.dtype == dtypes.int32
  np.testing.assert_array_equal(values.numpy(), expected_values.numpy())
  # torch's index where a row is all NaN comes from its selection's internal order: nbgrad gives the first NaN's
  decided = ~np.isnan(MIDDLE_VALUES).all(axis=dim, keepdims=keepdim) if op == "nanmedian" else np.ones(values.shape, bool)
  np.testing.assert_array_equal(indices.numpy()[decided], expected_indices.numpy()[decided])


def test_median_of_everything_ints_0d_and_empty():
  assert math.isnan(Tensor(MIDDLE_VALUES).median().item())
  assert Tensor(MIDDLE_VALUES).nanmedian().item() == torch.tensor(MIDDLE_VALUES).nanmedian().item()
  assert Tensor([3, 1, 2, 4]).median().item() == 2 and Tensor([3, 1, 2, 4]).median(keepdim=True).shape == (1,)
  assert Tensor(5.0).median(0)[0].item() == 5.0 and Tensor(5.0).median(0)[1].item() == 0
  with pytest.raises(ValueError, match="empty dim"): Tensor.zeros(2, 0).median(1)


def test_median_gradient_as_torch():
  values = np.array([[3.0, 1.0, 2.0, 2.0], [0.5, -1.0, 4.0, 9.0]])
  ours, theirs = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  (ours.median(1)[0] * Tensor([2.0, 3.0])).sum().backward()
  (theirs.median(1)[0] * torch.tensor([2.0, 3.0], dtype=torch.float64)).sum().backward()
  np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


QUANTILE_VALUES = np.random.default_rng(11).standard_normal((4, 9))


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("q", [0.5, 0.0, 1.0, [0.1, 0.375, 0.9]], ids=str)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (1, False), (0, True)])
def test_quantile_as_torch(interpolation, q, dim, keepdim):
  qs = torch.tensor(q, dtype=torch.float64) if isinstance(q, list) else q
  ours, theirs = Tensor(QUANTILE_VALUES, requires_grad=True), torch.tensor(QUANTILE_VALUES, requires_grad=True)
  out = ours.quantile(q, dim=dim, keepdim=keepdim, interpolation=interpolation)
  expected = torch.quantile(theirs, qs, dim=dim, keepdim=keepdim, interpolation=interpolation)
  assert out.shape == tuple(expected.shape)
  np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12)
  weights = np.random.default_rng(12).standard_normal(tuple(expected.shape))
  (out * Tensor(weights)).sum().backward()
  (expected * torch.tensor(weights)).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("interpolation", ["linear", "nearest"])
def test_float32_quantile_ranks_in_float32_as_torch(interpolation):
  """torch works out the rank q * (n - 1) in the values' dtype: in float32, 0.1 * 5 is 0.5 and rounds to 0 (in
  float64 it is just above 0.5), whether q is a number or a tensor of them."""
  qs = [0.1, 0.3, 0.7, 0.9, 0.15, 0.35]
  for n in (6, 11, 21):
    values = np.random.default_rng(n).permutation(n).astype(np.float32)
    expected = torch.quantile(torch.tensor(values), torch.tensor(qs), interpolation=interpolation).numpy()
    np.testing.assert_array_equal(Tensor(values).quantile(Tensor(qs), interpolation=interpolation).numpy(), expected)
    np.testing.assert_array_equal([Tensor(values).quantile(q, interpolation=interpolation).item() for q in qs], expected)


@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
def test_quantile_and_nanquantile_with_nan_as_torch(op):
  for q in (0.3, [0.25, 0.5, 1.0]):
    qs = torch.tensor(q, dtype=torch.float64) if isinstance(q, list) else q
    got = getattr(Tensor(MIDDLE_VALUES), op)(q, dim=1)
    expected = getattr(torch, op)(torch.tensor(MIDDLE_VALUES), qs, dim=1)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
  assert getattr(Tensor(np.float32(2.5)), op)(0.5).item() == 2.5


@pytest.mark.parametrize("interpolation", ["linear", "midpoint"])
@pytest.mark.parametrize("name", ["float32", "float64"])
def test_quantile_between_values_near_the_largest_as_torch(name, interpolation):
  """Interpolated as torch's lerp: (lower + upper) / 2 of two values near the dtype's largest overflowed to inf."""
  top = np.finfo(name).max
  values = np.array([top, top, top * 0.75, -top, -top, top], name)
  for q in (0.0, 0.3, 0.5, 0.95, 1.0):
    expected = torch.quantile(torch.from_numpy(values), q, interpolation=interpolation).numpy()
    np.testing.assert_array_equal(Tensor(values).quantile(q, interpolation=interpolation).numpy(), expected, err_msg=f"q={q}")


def test_quantile_refuses_bad_input():
  with pytest.raises(ValueError, match=r"in \[0, 1\]"): Tensor([1.0, 2.0]).quantile(1.5)
  with pytest.raises(ValueError, match=r"in \[0, 1\]"): Tensor([1.0, 2.0]).quantile([[0.5]])
  with pytest.raises(ValueError, match="interpolation"): Tensor([1.0, 2.0]).quantile(0.5, interpolation="cubic")
  with pytest.raises(TypeError, match="float tensor"): Tensor([1, 2]).quantile(0.5)
  with pytest.raises(ValueError, match="no values"): Tensor.zeros(0).quantile(0.5)


# ---- searchsorted, bucketize, nonzero, unique, bincount
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize_as_torch(right):
  sequence = np.array([1.0, 3.0, 3.0, 5.0, 7.0])
  values = np.array([[0.0, 3.0, 4.0], [7.0, 9.0, -1.0]])
  got = Tensor(sequence).searchsorted(Tensor(values), right=right)
  assert got.dtype == dtypes.int32
  np.testing.assert_array_equal(got.numpy(), torch.searchsorted(torch.tensor(sequence), torch.tensor(values), right=right).numpy())
  np.testing.assert_array_equal(Tensor(values).bucketize(Tensor(sequence), right=right).numpy(),
                                torch.bucketize(torch.tensor(values), torch.tensor(sequence), right=right).numpy())
  rows = np.sort(np.random.default_rng(13).integers(0, 6, (3, 7)), axis=1)
  points = np.random.default_rng(14).integers(-1, 7, (3, 4))
  np.testing.assert_array_equal(Tensor(rows).searchsorted(Tensor(points), right=right).numpy(),
                                torch.searchsorted(torch.tensor(rows), torch.tensor(points), right=right).numpy())
  assert Tensor(sequence).searchsorted(4.0, side="right" if right else "left").item() == np.searchsorted(sequence, 4.0, side="right" if right else "left")


def test_searchsorted_sorts_nan_last_as_numpy_and_refuses_bad_input():
  sequence, values = np.array([1.0, 2.0, np.nan]), np.array([np.nan, 2.0, 0.5, np.inf])
  for side in ("left", "right"):
    np.testing.assert_array_equal(Tensor(sequence).searchsorted(Tensor(values), side=side).numpy(), np.searchsorted(sequence, values, side=side))
  with pytest.raises(ValueError, match="side"): Tensor(sequence).searchsorted(1.0, side="middle")
  with pytest.raises(ValueError, match="leading dims"): Tensor.zeros(2, 3).searchsorted(Tensor.zeros(3, 1))
  with pytest.raises(ValueError, match="1-D boundaries"): Tensor([1.0]).bucketize(Tensor.zeros(2, 2))
  # right is a bool (a string went into the kernel and failed there; 2 was read as False), and side does not contradict it
  for right in ("x", None, 2):
    with pytest.raises(TypeError, match="right must be a bool"): Tensor(sequence).searchsorted(Tensor([2.0]), right=right)
    with pytest.raises(TypeError, match="right must be a bool"): Tensor([2.0]).bucketize(Tensor(sequence), right=right)
  with pytest.raises(ValueError, match="contradict"): Tensor(sequence).searchsorted(Tensor([2.0]), side="left", right=True)
  assert Tensor(sequence).searchsorted(Tensor([2.0]), side="right", right=False).tolist() == [2]   # torch's: side decides
  assert Tensor(sequence).searchsorted(Tensor([2.0]), right=np.bool_(True)).tolist() == [2]


@pytest.mark.parametrize("name", ["float32", "int16", "uint8", "float64"])
def test_searchsorted_of_many_values_in_lockstep_groups_as_numpy(name):
  """Values searched GROUP at a time, on one thread or in parallel (past PARALLEL_MIN_ELEMENTS // 16 values):
  counts that leave a partial group, rows of every length from 0 up to past a few halvings, ties, NaN among the
  values and at the end of the rows, both sides."""
  from nbgrad.jit.sort import GROUP
  for rows, length, count in [(1, 5000, PARALLEL_MIN_ELEMENTS // 16 + 7), (3, 33, GROUP * 5 + 3), (4, 1, 40), (2, 0, 9),
                              (1, 1 << 15, GROUP - 1)]:
    if name.startswith("float"):
      sequence = np.sort(rng.choice(np.array([-np.inf, -1.0, 0.0, 0.5, 2.0, np.inf, np.nan], name), (rows, length)), axis=1)
      values = rng.choice(np.array([-np.inf, -1.5, -1.0, -0.0, 0.5, 3.0, np.inf, np.nan], name), (rows, count))
    else:
      sequence = np.sort(values_of(name, (rows, length)), axis=1)
      values = values_of(name, (rows, count))
    for side in ("left", "right"):
      got = tensor_of(sequence, name).searchsorted(tensor_of(values, name), side=side).numpy()
      want = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(sequence, values)])
      np.testing.assert_array_equal(got, want, err_msg=f"{(rows, length, count)} {side}")


def test_nonzero_argwhere_as_torch():
  values = np.array([[0.0, 1.5, -2.0], [3.0, 0.0, np.nan]])
  np.testing.assert_array_equal(Tensor(values).nonzero().numpy(), torch.tensor(values).nonzero().numpy())
  for ours, theirs in zip(Tensor(values).nonzero(as_tuple=True), torch.tensor(values).nonzero(as_tuple=True)):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  assert Tensor(values).argwhere().shape == (4, 2) and Tensor.zeros(3).nonzero().shape == (0, 1)
  assert Tensor(5.0).nonzero().shape == (1, 0) == tuple(torch.tensor(5.0).nonzero().shape)
  np.testing.assert_array_equal(Tensor(values > 0).cast(dtypes.bfloat16).nonzero().numpy(), np.argwhere(values > 0))


@pytest.mark.parametrize("name", ["int32", "float32", "bfloat16"])
def test_unique_as_torch(name):
  values = np.array([[3, 1, 2], [3, 1, 1]])
  t = Tensor(values).cast(getattr(dtypes, name))
  reference = torch.tensor(values).to(getattr(torch, name))
  ours, theirs = t.unique(return_inverse=True, return_counts=True), torch.unique(reference, return_inverse=True, return_counts=True)
  assert ours[0].dtype == getattr(dtypes, name)
  for a, b in zip(ours, theirs): np.testing.assert_array_equal(a.cast(dtypes.float64).numpy(), b.double().numpy())
  rows, row_inverse = t.unique(dim=1, return_inverse=True)
  expected_rows, expected_inverse = torch.unique(reference, dim=1, return_inverse=True)
  np.testing.assert_array_equal(rows.cast(dtypes.float64).numpy(), expected_rows.double().numpy())
  np.testing.assert_array_equal(row_inverse.numpy(), expected_inverse.numpy())


def test_bincount_as_torch():
  values = np.array([1, 1, 3, 0, 1])
  np.testing.assert_array_equal(Tensor(values).bincount().numpy(), torch.bincount(torch.tensor(values)).numpy())
  np.testing.assert_array_equal(Tensor(values).bincount(minlength=7).numpy(), torch.bincount(torch.tensor(values), minlength=7).numpy())
  weights = np.array([0.5, 1.0, 2.0, -1.0, 0.25])
  ours = Tensor(weights, requires_grad=True)
  out = Tensor(values).bincount(ours)
  np.testing.assert_allclose(out.numpy(), torch.bincount(torch.tensor(values), torch.tensor(weights)).numpy())
  bin_weights = np.array([1.0, 2.0, 3.0, 4.0])
  (out * Tensor(bin_weights)).sum().backward()   # each weight's gradient is its bin's (torch has no derivative here)
  np.testing.assert_allclose(ours.grad.numpy(), bin_weights[values])
  assert Tensor(np.zeros(0, np.int64)).bincount().shape == (0,)
  with pytest.raises(ValueError, match=">= 0"): Tensor([1, -2]).bincount()
  with pytest.raises(ValueError, match="1-D int"): Tensor([1.0]).bincount()
