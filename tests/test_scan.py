"""cumsum, cumprod, cummax and cummin: forward against torch for each dtype and edge shape, backward against
torch (cumprod's at zeros too), and the scans' structure (one O(n) kernel, not a masked reduce)."""
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes

TOL = dict(rtol=1e-5, atol=1e-4)


def sample(shape, np_dtype, seed=0):
  rng = np.random.default_rng(seed)
  if np_dtype == np.bool_: return np.asarray(rng.random(shape) < 0.5)
  if np.issubdtype(np_dtype, np.integer): return rng.integers(-50, 50, shape).astype(np_dtype)
  return rng.standard_normal(shape).astype(np_dtype)


# id -> (shape, axis, how the input is viewed)
CASES = {
  "1d": ((7,), 0, None),
  "2d_axis0": ((5, 6), 0, None),
  "2d_axis1": ((5, 6), 1, None),
  "3d_middle": ((3, 4, 5), 1, None),
  "3d_negative_axis": ((3, 4, 5), -1, None),
  "3d_wide_inner": ((2, 3, 1100), 1, None),   # more inner columns than one work item holds
  "size1_axis": ((4, 1, 3), 1, None),
  "zero_size_other_axis": ((0, 3), 1, None),
  "zero_size_scan_axis": ((3, 0), 1, None),
  "0d": ((), 0, None),
  "transposed": ((6, 4), 0, "transpose"),
  "strided_slice": ((8, 6), 1, "slice"),
  "long_axis": ((100_000,), 0, None),
  "long_axis_0_of_2d": ((3000, 40), 0, None),
  "long_rows": ((7, 20_000), 1, None),   # rows scanned four side by side on threads, three left over
}
DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "bool": np.bool_}


def viewed(x, how):
  if how == "transpose": return x.transpose(1, 0)
  if how == "slice": return x[1::2, ::2]
  return x


FORWARD_ROWS = [(case, dtype) for case in CASES for dtype in DTYPES if not case.startswith("long") or dtype == "float32"]


@pytest.mark.parametrize("case,dtype", FORWARD_ROWS)
def test_cumsum_forward(case, dtype):
  shape, axis, how = CASES[case]
  value = sample(shape, DTYPES[dtype])
  ours = viewed(Tensor(value), how).cumsum(axis)
  ref = viewed(torch.from_numpy(value), how).cumsum(axis)
  assert ours.shape == tuple(ref.shape)
  assert ours.dtype == {torch.float32: dtypes.float32, torch.float64: dtypes.float64, torch.int32: dtypes.int32,
                        torch.int64: dtypes.int32}[ref.dtype]   # torch sums bool to int64, tinygrad to int32
  if dtype == "float32" and case.startswith("long"):
    # float32 running sums of 1e5 normals drift in the last bits (torch accumulates in double)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-4, atol=2e-3)
  else:
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), **TOL)


def test_cumsum_int_wraps():
  x = Tensor(np.array([2**31 - 1, 1, 5], np.int32))
  assert x.cumsum().numpy().tolist() == [2**31 - 1, -2**31, -2**31 + 5]


@pytest.mark.parametrize("dtype,expected", [(dtypes.float16, dtypes.float16), (dtypes.uint8, dtypes.uint32),
                                            (dtypes.int8, dtypes.int32), (dtypes.int64, dtypes.int64)])
def test_cumsum_dtype_follows_sum(dtype, expected):
  x = Tensor([[1, 2], [3, 4]], dtype=dtype)
  assert x.cumsum(1).dtype == expected == x.sum(1).dtype
  assert x.cumsum(1).numpy().tolist() == [[1, 3], [3, 7]]


@pytest.mark.parametrize("case", ["1d", "2d_axis0", "3d_middle", "3d_negative_axis", "transposed", "strided_slice",
                                  "size1_axis", "0d"])
def test_cumsum_backward(case):
  shape, axis, how = CASES[case]
  value, weight = sample(shape, np.float32, 1), sample(shape, np.float32, 2)
  ours = Tensor(value, requires_grad=True)
  ref = torch.tensor(value, requires_grad=True)
  out_ours, out_ref = viewed(ours, how).cumsum(axis), viewed(ref, how).cumsum(axis)
  (out_ours * Tensor(np.ascontiguousarray(viewed(weight, how)))).sum().backward()
  (out_ref * torch.from_numpy(np.ascontiguousarray(viewed(weight, how)))).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), ref.grad.numpy(), **TOL)


def test_cumsum_of_expression_is_linear_in_work():
  """The input expression is one kernel and the scan another, whatever the axis length."""
  x = Tensor(sample((64, 64), np.float32))
  kernels = ((x * 2 + 1).cumsum(1)).schedule()
  assert len(kernels) == 2 and kernels[-1].name.startswith("scan_sum")


@pytest.mark.parametrize("shape, axis", [((1 << 20,), 0), ((6, 200_000), 1), ((3000, 700), 0)], ids=["long_row", "rows_side_by_side", "columns"])
def test_long_float32_running_sums_keep_float64_precision_as_torch(shape, axis):
  """float32 sums added in float32 drift (a million 0.1s came to 100958.34); torch and nbgrad add in float64 and round
  each output once."""
  value = np.full(shape, 0.1, np.float32) + sample(shape, np.float32, 3) * np.float32(1e-3)
  exact = np.cumsum(value.astype(np.float64), axis).astype(np.float32)
  np.testing.assert_array_equal(Tensor(value).cumsum(axis).numpy(), exact)
  np.testing.assert_array_equal(torch.cumsum(torch.from_numpy(value), axis).numpy(), exact)


# ---- cumprod, cummax, cummin: values near 1 keep long running products finite
def near_one(shape, np_dtype, seed=0):
  if np_dtype == np.bool_: return sample(shape, np_dtype, seed)
  if np.issubdtype(np_dtype, np.integer): return np.asarray(sample(shape, np_dtype, seed) % 3).astype(np_dtype)
  return np.asarray(1 + 0.01 * sample(shape, np.float64, seed)).astype(np_dtype)


@pytest.mark.parametrize("case,dtype", FORWARD_ROWS)
def test_cumprod_forward(case, dtype):
  shape, axis, how = CASES[case]
  value = near_one(shape, DTYPES[dtype])
  ours = viewed(Tensor(value), how).cumprod(axis)
  ref = viewed(torch.from_numpy(value), how).cumprod(axis)
  assert ours.shape == tuple(ref.shape) and ours.dtype == viewed(Tensor(value), how).cumsum(axis).dtype
  np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-4 if case.startswith("long") else 1e-6)


@pytest.mark.parametrize("np_dtype", [np.uint64, np.int64, np.uint32])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumprod_of_ints_past_half_the_range_wraps_as_numpy(np_dtype, axis):
  """uint64 values of 2**63 and more at a row's start became 2**63 (they passed through a float64)."""
  info = np.iinfo(np_dtype)
  value = np.random.default_rng(1).integers(info.min, info.max, (40, 300), dtype=np_dtype, endpoint=True)
  value[:2] = np.array([info.max, info.max - 2 if info.min == 0 else info.min], np_dtype)[:, None]
  np.testing.assert_array_equal(Tensor(value).cumprod(axis).numpy(), np.cumprod(value, axis, dtype=np_dtype))


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("case,dtype", FORWARD_ROWS)
def test_cummax_cummin_forward(op, case, dtype):
  shape, axis, how = CASES[case]
  value = sample(shape, DTYPES[dtype]) // (1 if dtype == "bool" else 8)   # ties
  if shape == (): expected_values, expected_indices = value, np.zeros((), np.int64)
  else: expected_values, expected_indices = getattr(torch, op)(viewed(torch.from_numpy(value), how), axis)
  values, indices = getattr(viewed(Tensor(value), how), op)(axis)
  assert indices.dtype == dtypes.int32 and values.dtype == Tensor(value).dtype
  np.testing.assert_array_equal(values.numpy(), np.asarray(expected_values))
  np.testing.assert_array_equal(indices.numpy(), np.asarray(expected_indices))


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("name", ["float16", "bfloat16", "uint8", "int64"])
def test_cummax_cummin_of_nan_and_narrow_dtypes_as_torch(op, name):
  value = np.array([[1.0, 3.0, 3.0, 2.0, np.nan, 5.0, np.nan, -1.0], [0.0, -2.0, 4.0, 4.0, 1.0, 0.0, 7.0, 7.0]])
  if name in ("uint8", "int64"): value = np.nan_to_num(value, nan=6.0) + 2
  t = Tensor(value).cast(getattr(dtypes, name))
  ref = torch.tensor(value).to(getattr(torch, name))
  values, indices = getattr(t, op)(1)
  expected_values, expected_indices = getattr(torch, op)(ref, 1)
  np.testing.assert_array_equal(values.cast(dtypes.float64).numpy(), expected_values.double().numpy())
  np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())


ZEROS = np.array([[2.0, 0.0, 3.0, 0.0, 4.0], [1.5, -2.0, 0.5, 3.0, -1.0], [0.0, 0.0, 2.0, 1.0, 5.0], [3.0, 2.0, 0.0, 1.0, 2.0]])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("view", [None, "transpose"])
def test_cumprod_backward_with_zeros_as_torch(axis, view):
  """No division: zeros, one or several in a row, get the product of the others."""
  ours, ref = Tensor(ZEROS, requires_grad=True), torch.tensor(ZEROS, requires_grad=True)
  out_ours, out_ref = viewed(ours, view).cumprod(axis), viewed(ref, view).cumprod(axis)
  weight = sample(tuple(out_ref.shape), np.float64, 5)
  (out_ours * Tensor(weight)).sum().backward()
  (out_ref * torch.from_numpy(weight)).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), ref.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("case", ["3d_wide_inner", "long_axis_0_of_2d", "size1_axis", "0d", "zero_size_scan_axis"])
def test_cumprod_backward_of_long_wide_and_empty_axes(case):
  shape, axis, _ = CASES[case]
  value, weight = near_one(shape, np.float64, 1), sample(shape, np.float64, 2)
  ours, ref = Tensor(value, requires_grad=True), torch.tensor(value, requires_grad=True)
  (ours.cumprod(axis) * Tensor(weight)).sum().backward()
  (ref.cumprod(axis) * torch.from_numpy(weight)).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), ref.grad.numpy(), rtol=1e-9)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_backward_as_torch(op):
  value = np.array([[1.0, 3.0, 3.0, 2.0, 5.0], [4.0, 4.0, -1.0, 0.0, 4.0]])
  ours, ref = Tensor(value, requires_grad=True), torch.tensor(value, requires_grad=True)
  weight = sample((2, 5), np.float64, 6)
  (getattr(ours, op)(dim=1)[0] * Tensor(weight)).sum().backward()
  (getattr(ref, op)(dim=1)[0] * torch.from_numpy(weight)).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), ref.grad.numpy(), rtol=1e-12)
  assert not ours.cummax(0)[1].requires_grad


def test_generic_scans_of_many_rows_run_in_parallel_as_numpy():
  """Enough rows (work items) and elements for the parallel loop, each thread with its own running values."""
  value = near_one((300, 1000), np.float64, 7)
  np.testing.assert_allclose(Tensor(value).cumprod(1).numpy(), np.cumprod(value, 1), rtol=1e-12)
  np.testing.assert_array_equal(Tensor(value).cummax(1)[0].numpy(), np.maximum.accumulate(value, 1))
  np.testing.assert_array_equal(Tensor(value).cummin(0)[0].numpy(), np.minimum.accumulate(value, 0))


def test_positions_along_an_axis_longer_than_int32_are_int64():
  """Only built, never computed (2**31 values): int32 positions would wrap to negative ones there."""
  x = Tensor.empty(2**31 + 8, dtype=dtypes.uint8)
  assert x.cummax(0)[1].dtype == x.cummin(0)[1].dtype == x.argsort().dtype == x.topk(2)[1].dtype == dtypes.int64
  assert x.searchsorted(Tensor([1], dtype=dtypes.uint8)).dtype == dtypes.int64
  assert x[:10].cummax(0)[1].dtype == x[:10].argsort().dtype == dtypes.int32
