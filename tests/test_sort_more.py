"""sort, argsort, topk, mode, kthvalue, median and quantile take numpy's axis= for dim=, as torch's do: the same results as torch given either name,
and an error given both."""
import numpy as np
import pytest
import torch

from nbgrad import Tensor

values = np.random.default_rng(0).standard_normal((3, 4, 2)).astype(np.float32)

# (op, ours, torch's), each given the dim by name: dim= or axis=
CALLS = [
  ("sort", lambda t, **dim: t.sort(**dim)[0], lambda t, **dim: torch.sort(t, **dim)[0]),
  ("sort_descending", lambda t, **dim: t.sort(descending=True, **dim)[1], lambda t, **dim: torch.sort(t, descending=True, **dim)[1]),
  ("argsort", lambda t, **dim: t.argsort(**dim), lambda t, **dim: torch.argsort(t, **dim)),
  ("topk", lambda t, **dim: t.topk(1, **dim)[0], lambda t, **dim: torch.topk(t, 1, **dim)[0]),
  ("topk_smallest", lambda t, **dim: t.topk(1, largest=False, **dim)[1], lambda t, **dim: torch.topk(t, 1, largest=False, **dim)[1]),
  ("mode", lambda t, **dim: t.mode(**dim)[0], lambda t, **dim: torch.mode(t, **dim)[0]),
  ("kthvalue", lambda t, **dim: t.kthvalue(2, **dim)[1], lambda t, **dim: torch.kthvalue(t, 2, **dim)[1]),
  ("median", lambda t, **dim: t.median(**dim)[0], lambda t, **dim: torch.median(t, **dim)[0]),
  ("nanmedian", lambda t, **dim: t.nanmedian(**dim)[1], lambda t, **dim: torch.nanmedian(t, **dim)[1]),
  ("quantile", lambda t, **dim: t.quantile(0.3, **dim), lambda t, **dim: torch.quantile(t, 0.3, **dim)),
  ("nanquantile", lambda t, **dim: t.nanquantile(0.7, **dim), lambda t, **dim: torch.nanquantile(t, 0.7, **dim)),
]


@pytest.mark.parametrize("axis", [0, 1, -1], ids=str)
@pytest.mark.parametrize("ours, theirs", [row[1:] for row in CALLS], ids=[row[0] for row in CALLS])
def test_axis_is_dim_as_torch(ours, theirs, axis):
  expected = theirs(torch.tensor(values), axis=axis).numpy()
  np.testing.assert_array_equal(expected, theirs(torch.tensor(values), dim=axis).numpy())
  for got in (ours(Tensor(values), axis=axis), ours(Tensor(values), dim=axis)):   # quantile's interpolation may round apart
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_axis_of_0d_and_empty_tensors_and_the_gradient():
  assert Tensor(2.0).sort(axis=0)[0].item() == 2.0 and Tensor(2.0).argsort(axis=-1).item() == 0
  assert Tensor(np.zeros((2, 0))).sort(axis=1)[0].shape == (2, 0)
  leaf = Tensor(values, requires_grad=True)
  (leaf.sort(axis=1)[0] * Tensor(np.arange(24.0).reshape(3, 4, 2))).sum().backward()
  reference = torch.tensor(values, requires_grad=True)
  (torch.sort(reference, axis=1)[0] * torch.arange(24.0).reshape(3, 4, 2)).sum().backward()
  np.testing.assert_array_equal(leaf.grad.numpy(), reference.grad.numpy())


@pytest.mark.parametrize("call", [lambda t: t.sort(0, axis=1), lambda t: t.argsort(1, axis=0), lambda t: t.topk(1, 0, axis=1),
                                  lambda t: t.median(dim=0, axis=1), lambda t: t.quantile(0.5, 1, axis=0)],
                         ids=["sort", "argsort", "topk", "median", "quantile"])
def test_dim_and_axis_together_raise(call):
  with pytest.raises(TypeError, match="got both dim=.* and axis="): call(Tensor(values))


def test_axis_out_of_range_raises():
  with pytest.raises(IndexError): Tensor(values).sort(axis=3)
  with pytest.raises(IndexError): Tensor(values).topk(1, axis=-4)


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_searchsorted_of_many_values_in_a_long_sequence_as_numpy(right, dtype):
  """A binary search per value (the count of the elements before each was O(length) per value: 100k values in 1M
  took 6 s): numpy's positions, ties and NaN included."""
  rng = np.random.default_rng(11)
  sequence = np.sort(rng.integers(-500, 500, 200_000)).astype(dtype)
  values = rng.integers(-600, 600, 30_000).astype(dtype)
  if dtype != "int64": sequence[-3:], values[:2] = np.nan, np.nan
  side = "right" if right else "left"
  np.testing.assert_array_equal(Tensor(sequence).searchsorted(Tensor(values), side=side).numpy(), np.searchsorted(sequence, values, side=side))


def test_searchsorted_of_empty_rows_or_no_rows_as_torch():
  for rows, values in (((0, 4), (0, 3)), ((2, 0), (2, 3)), ((3,), (0,)), ((0,), (2, 2))):
    got = Tensor(np.zeros(rows, np.float32)).searchsorted(Tensor(np.zeros(values, np.float32)))
    expected = torch.searchsorted(torch.zeros(rows), torch.zeros(values))
    assert got.shape == tuple(expected.shape) and got.numpy().tolist() == expected.numpy().tolist()
