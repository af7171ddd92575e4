"""Advanced indexing (integer tensors, lists, tuples mixed with basic indices), setitem and gather:
forward against numpy, gradients against torch (CPU, float64), bad input."""
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes, indexing

SHAPE = (4, 5, 6)   # one input shape for most rows: kernels that differ only in sizes share a compile
TOL = dict(rtol=1e-6, atol=1e-6)   # indexing only moves values (the gradient sums at most a few of them)


def make(shape, seed=0):
  """Distinct float32 values, so that a wrong index shows up as a wrong value."""
  n = int(np.prod(shape))
  return (np.random.default_rng(seed).permutation(n).reshape(shape) - n // 2).astype(np.float32) / 4 + 0.125


class T:
  """An index given as a tensor: nbgrad gets Tensor(array), numpy the array, torch an int64 tensor."""
  def __init__(self, values, dtype=np.int32): self.array = np.asarray(values, dtype=dtype)
  def __repr__(self): return f"T({self.array.tolist()})"


def convert(index, one):
  """Apply one() to each item of an index tuple; a lone index (t[[0, 1]], t[T]) stays lone, as the user writes it."""
  return tuple(one(i) for i in index) if isinstance(index, tuple) else one(index)


def for_nbgrad(index):
  return convert(index, lambda i: Tensor(i.array) if isinstance(i, T) else i)


def for_numpy(index):
  return convert(index, lambda i: i.array if isinstance(i, T) else i)


def for_torch(index):
  """torch reads a list or tuple inside an index tuple as numpy does, but an int64 tensor says it plainly."""
  def one(i):
    if isinstance(i, T): return torch.tensor(i.array.astype(np.int64))
    if isinstance(i, (list, tuple)): return torch.tensor(i, dtype=torch.bool if all(isinstance(v, bool) for v in i) else torch.int64)
    return i
  return convert(index, one)


def check_index_and_grad(a, nb_index, np_ref, th_index):
  """Forward of x[nb_index] against np_ref (array), then the gradient of (x[index] * g).sum() against torch."""
  x = Tensor(a, requires_grad=True)
  out = x[nb_index]
  assert out.shape == np_ref.shape, (out.shape, np_ref.shape)
  assert out.dtype == dtypes.float32, out.dtype
  np.testing.assert_array_equal(out.numpy(), np_ref)
  g = make(np_ref.shape, seed=1)
  (out * Tensor(g)).sum().backward()
  xt = torch.tensor(a, dtype=torch.float64, requires_grad=True)
  (xt[th_index] * torch.tensor(g, dtype=torch.float64)).sum().backward()
  assert x.grad is not None and x.grad.shape == a.shape
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), **TOL)


# ---------------------------------------------------------------- advanced indexing
@pytest.fixture(params=["known", "graph"])
def positions_path(request, monkeypatch):
  """Both ways an advanced index finds the positions it reads: from the index values in numpy (small results of
  known indices, the default here), or computed in the graph (big results, lazy index tensors)."""
  if request.param == "graph": monkeypatch.setattr(indexing, "KNOWN_INDEX_ELEMENTS", -1)


# id -> index into an array of SHAPE (4, 5, 6); T(...) marks an index tensor, lists and tuples stay Python sequences
ADVANCED_ROWS = {
  "tensor_1d": T([0, 2, 3, 1]),
  "tensor_2d_repeats": T([[0, 0], [3, 1]]),
  "tensor_negative": T([-1, 0, -4, 2]),
  "tensor_0d": T(2),
  "list": [3, 0, 3],
  "list_negative": [-1, -4, 0],
  "tuple_inside_index_tuple": (slice(None), (4, 0, -1)),
  "slice_then_tensor_keeps_place": (slice(None), T([4, 0])),
  "stepped_slices_around_tensor": (slice(None, None, 2), T([[1, 3, 3]]), slice(1, None, 2)),   # torch has no negative steps
  "ellipsis_then_tensor": (Ellipsis, T([[5, 0], [1, 1]])),
  "int_adjacent_to_tensor": (1, T([0, 4, 2])),
  "tensor_then_int_after_slice": (T([3, 1]), slice(None), -2),
  "two_adjacent_broadcast": (slice(None), T([[0], [2]]), T([1, 3, 5])),
  "two_adjacent_list_and_tensor": (slice(1, 3), [[4], [0]], T([2, 5, 1])),
  "two_separated_by_slice_go_front": (T([0, 3]), slice(None), T([[1], [2]])),
  "two_separated_by_none_go_front": (T([0, 1]), None, T([2, 3])),
  "two_separated_by_ellipsis_go_front": (T([[0, 1, 2]]), Ellipsis, T([2, 5, -1])),
  "none_before_adjacent_pair": (None, T([1, 2]), T([0, -1])),
  "three_tensors": (T([0, 1, 3]), T([1, 2, 4]), T([[2], [5]])),
  "list_separated_from_tensor": ([1, 2], slice(None), T([0, 0])),
  "0size_tensor": T(np.zeros((0,))),
  "0size_tensor_2d_middle": (slice(None), T(np.zeros((2, 0)))),
  "0size_broadcast_with_other": (T(np.zeros((0, 1))), T([1, 2])),
}


@pytest.mark.parametrize("row", list(ADVANCED_ROWS))
def test_advanced_index(row, positions_path):
  index = ADVANCED_ROWS[row]
  a = make(SHAPE)
  check_index_and_grad(a, for_nbgrad(index), a[for_numpy(index)], for_torch(index))


def test_a_list_holding_lists_or_tensors_is_a_tuple_of_indices():
  """tinygrad's rule, which torch follows too: x[[[1, 2], [0, 0]]] is x[[1, 2], [0, 0]] and x[[t, 1]] is x[t, 1];
  a list of ints alone is one index array."""
  a = make(SHAPE)
  check_index_and_grad(a, [[1, 2], [0, 0]], a[[1, 2], [0, 0]], (torch.tensor([1, 2]), torch.tensor([0, 0])))
  check_index_and_grad(a, [Tensor(np.array([0, 3], np.int32)), 1], a[[0, 3], 1], (torch.tensor([0, 3]), 1))
  check_index_and_grad(a, [[2]], a[[2]], (torch.tensor([2]),))


# index dtypes: the same pattern (x[i] with a 2-D index, negative values where the dtype has them) in several integer dtypes
INDEX_DTYPES = {"uint8": np.uint8, "int32": np.int32, "int64": np.int64}


@pytest.mark.parametrize("name", list(INDEX_DTYPES))
def test_index_tensor_dtypes(name):
  values = [[1, 3], [0, 2]] if name == "uint8" else [[1, -1], [0, -4]]
  index = T(values, INDEX_DTYPES[name])
  a = make(SHAPE)
  check_index_and_grad(a, for_nbgrad(index), a[for_numpy(index)], for_torch(index))


@pytest.mark.parametrize("lazy", [False, True], ids=["realized", "lazy"])
@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint64], ids=["int8", "int64", "uint64"])
def test_an_index_on_a_later_dim_wraps_negatives_and_reads_zero_out_of_range_in_every_dtype(dtype, lazy, positions_path):
  """x[:, idx]: uint64 values past int64's range and int64 ones past int32's read zeros, negative ones count from the
  end, whether the index values are known (a realized tensor) or computed in the same graph."""
  values = {np.int8: [3, -1, 7, -6], np.int64: [1, 2**40, -(2**40), -1], np.uint64: [0, 2**63 + 1, 2**64 - 1, 4]}[dtype]
  size, a = SHAPE[1], make(SHAPE)
  valid = np.array([-size <= v < size for v in values])
  ref = np.where(valid[None, :, None], a[:, [v % size if ok else 0 for v, ok in zip(values, valid)]], 0)
  index = Tensor(np.array(values, dtype))
  np.testing.assert_array_equal(Tensor(a)[:, index + 0 if lazy else index].numpy(), ref)


# one index tensor on the first dim: the take kernel itself counts negative indices from the end and reads 0 out of
# range, for every index dtype, from a source that is a window of its buffer, a lazy view, or has no rows at all
FIRST_DIM_SOURCES = {
  "realized": lambda a: a, "window_at_an_offset": lambda a: a[1:], "transposed": lambda a: a.permute(2, 1, 0) if isinstance(a, Tensor) else a.transpose(2, 1, 0),
  "no_rows": lambda a: a[:0],
}
FIRST_DIM_INDEX = {"int8": [3, -1, 7, -9], "int16": [0, -3, 300, -300], "uint16": [1, 0, 65535, 2], "int32": [2, -2, 4, -5],
                   "int64": [1, 2**40, -(2**40), -1], "uint64": [0, 2**63 + 1, 2**64 - 1, 2]}


@pytest.mark.parametrize("index_dtype", list(FIRST_DIM_INDEX))
@pytest.mark.parametrize("source", list(FIRST_DIM_SOURCES))
def test_first_dim_index_wraps_negatives_and_reads_zero_out_of_range(source, index_dtype):
  a = make(SHAPE)
  x = FIRST_DIM_SOURCES[source](a)
  idx = np.array(FIRST_DIM_INDEX[index_dtype], dtype=index_dtype)
  signed = idx.astype(np.int64) if idx.dtype.kind == "i" else np.where(idx > 2**62, -(2**62), idx).astype(np.int64)
  inside = (signed >= -len(x)) & (signed < len(x))
  rows = x[np.where(inside, signed, 0)] if len(x) else np.zeros((len(idx),) + x.shape[1:], x.dtype)
  expected = np.where(inside.reshape(-1, *[1] * (x.ndim - 1)), rows, 0)
  t = Tensor(a, requires_grad=True)
  out = FIRST_DIM_SOURCES[source](t)[Tensor(idx)]
  np.testing.assert_array_equal(out.numpy(), expected.astype(np.float32))
  out.sum().backward()
  grad = np.zeros_like(a)
  np.add.at(FIRST_DIM_SOURCES[source](grad), np.where(inside, signed, 0)[inside], 1)
  np.testing.assert_array_equal(t.grad.numpy(), grad)


@pytest.mark.parametrize("window", [slice(10, None), slice(4, 4), slice(0, 0)], ids=["at_the_end", "in_the_middle", "at_the_start"])
def test_single_element_reads_from_an_empty_window_of_a_buffer_are_zero(window):
  """The window has no elements, its buffer does: every index is out of range and reads 0 (the kernel reads no
  element for them, not even the window's first, which lies past the buffer for a window at its end)."""
  values = np.arange(10, dtype=np.int64) + 2**40
  out = Tensor(values).realize()[window][Tensor(np.array([0, -1, 3, 9]))]
  np.testing.assert_array_equal(out.numpy(), np.zeros(4, np.int64))


def test_timed_choice_keeps_the_way_whose_fastest_trial_was_fastest():
  """Each way runs TRIALS calls in a row; then the one with the fastest single call is kept, so one call slowed
  by another process does not decide."""
  from nbgrad.jit.take import TimedChoice
  choice = TimedChoice(2)
  times = {0: [1.0, 9.0, 1.1], 1: [1.5, 1.4, 1.6]}   # way 0 had one slow call but the fastest one
  turns = []
  for _ in range(2 * TimedChoice.TRIALS):
    way = choice.next_way()
    turns.append(way)
    choice.timed(way, times[way].pop(0))
  assert turns == [0] * TimedChoice.TRIALS + [1] * TimedChoice.TRIALS
  assert choice.chosen == 0 and [choice.next_way() for _ in range(3)] == [0, 0, 0]


# a big read of single elements runs serially and in parallel on its first calls, timed, then the faster way: every
# call gives numpy's values, 8-byte values keep every bit, and out-of-range indices read 0
BIG_TAKE_DTYPES = {"uint8": np.uint8, "float32": np.float32, "int64": np.int64}


@pytest.mark.parametrize("dtype", list(BIG_TAKE_DTYPES))
def test_big_single_element_reads_take_turns_then_keep_a_way(dtype):
  from nbgrad.jit import PARALLEL_MIN_ELEMENTS
  from nbgrad.jit.take import TimedChoice, take_choice
  rng = np.random.default_rng(11)
  values = (rng.integers(0, 2**62, 5000) + 2**62 + 1).astype(BIG_TAKE_DTYPES[dtype])
  idx = rng.integers(-6000, 6000, PARALLEL_MIN_ELEMENTS)
  inside = (idx >= -len(values)) & (idx < len(values))
  expected = np.where(inside, values[np.where(inside, idx, 0)], 0).astype(values.dtype)
  x, i = Tensor(values).realize(), Tensor(idx).realize()
  for _ in range(2 * TimedChoice.TRIALS + 1): np.testing.assert_array_equal(x[i].numpy(), expected)
  choice = take_choice(len(idx), 1, values.itemsize)
  assert choice.chosen is not None and choice.best_times[choice.chosen] == min(choice.best_times)



@pytest.mark.parametrize("index_dtype", [np.int32, np.uint64])
@pytest.mark.parametrize("row", [1, 3], ids=["single_elements", "rows_of_3"])
def test_big_column_reads_find_each_columns_place_once(row, index_dtype):
  """m[:, idx], each row reading the same columns (found once for all rows), big enough to be timed serially and
  in parallel: numpy's values on every call, negative columns counted from the end, out-of-range ones (and every
  unsigned one past the end) read 0; the gradient sums into each column once for every time it was read."""
  from nbgrad.jit import PARALLEL_MIN_ELEMENTS
  from nbgrad.jit.take import TimedChoice
  rng = np.random.default_rng(12)
  columns = 300
  m = rng.standard_normal((PARALLEL_MIN_ELEMENTS // (columns * row) + 1, 97, row)).astype(np.float32)
  idx = rng.integers(-120, 120, columns)
  idx[:3] = [-97, 96, 2**40 if index_dtype == np.uint64 else 97]
  signed = idx if index_dtype == np.int32 else np.where(idx < 0, 2**40, idx)   # as uint64, a negative is 2**64 - n
  inside = (signed >= -97) & (signed < 97)
  expected = np.where(inside[None, :, None], m[:, np.where(inside, signed, 0)], 0)
  x, i = Tensor(m, requires_grad=True).realize(), Tensor(idx.astype(index_dtype)).realize()
  for _ in range(2 * TimedChoice.TRIALS + 1): np.testing.assert_array_equal(x[:, i].numpy(), expected)
  (x[:, i] * 2).sum().backward()
  grad = np.zeros_like(m)
  np.add.at(grad, (slice(None), np.where(inside, signed, 0)[inside]), 2)
  np.testing.assert_array_equal(x.grad.numpy(), grad)

# out of range: API.md says the result is 0 there (no error), and no gradient reaches the input from those places
OUT_OF_RANGE_ROWS = {
  "past_end": (T([0, 4, 7]),),
  "before_start": (T([-5, 1, -100]),),
  "second_dim_mixed": (slice(None), T([[5, 1], [-6, 4]])),
}


@pytest.mark.parametrize("row", list(OUT_OF_RANGE_ROWS))
def test_out_of_range_index_tensor_reads_zero(row, positions_path):
  index = OUT_OF_RANGE_ROWS[row]
  a = make(SHAPE)
  dim = len(index) - 1
  idx = index[-1].array
  size = SHAPE[dim]
  valid = (idx >= -size) & (idx < size)
  clipped = T(np.where(valid, idx, 0))
  # numpy / torch raise on these indices: index with in-range stand-ins, then zero the out-of-range places
  keep = valid.reshape(idx.shape + (1,) * (len(SHAPE) - 1 - dim))
  ref = np.where(keep, a[for_numpy(index[:-1] + (clipped,))], 0).astype(np.float32)
  x = Tensor(a, requires_grad=True)
  out = x[for_nbgrad(index)]
  assert out.shape == ref.shape, (out.shape, ref.shape)
  np.testing.assert_array_equal(out.numpy(), ref)
  g = make(ref.shape, seed=1)
  (out * Tensor(g)).sum().backward()
  xt = torch.tensor(a, dtype=torch.float64, requires_grad=True)
  (xt[for_torch(index[:-1] + (clipped,))] * torch.tensor(g * keep, dtype=torch.float64)).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), **TOL)


# views read by x[idx]: one whose first dim steps through its buffer otherwise than row after row, its rows contiguous
# (a column, every other row, a slice of the second dim, an expanded row) is read in place, in one kernel; a flipped
# first dim (a negative step) or rows that are not contiguous are copied first
STRIDED_SOURCES = {
  "column": (lambda x: x[:, 1, 2], True),
  "every_other_row": (lambda x: x[::2], True),
  "slice_of_second_dim": (lambda x: x[:, 3], True),
  "expanded_row": (lambda x: x[1:2, 0].expand(7, 6), True),
  "flipped_first_dim": (lambda x: x.flip(0)[:, 2], False),
  "rows_not_contiguous": (lambda x: x[:, :, 1], False),
  "column_of_a_result_not_computed_yet": (lambda x: (x * 2)[:, 1, 2], False),   # the copy computes the column alone
}


@pytest.mark.parametrize("row", list(STRIDED_SOURCES))
def test_an_index_tensor_on_the_first_dim_of_a_strided_view(row):
  """Values against numpy (negative indices from the end, out-of-range ones read 0, as API.md says), the kernels
  scheduled, and the gradient against torch's of the same view (float64), where the indices are in range."""
  view, in_place = STRIDED_SOURCES[row]
  a = make(SHAPE)
  source = view(torch.from_numpy(a)).numpy()
  n = len(source)
  idx = np.array([2, -1, 0, n + 3, -n - 2, 1, 1, n, -n], np.int64)
  valid = (idx >= -len(source)) & (idx < len(source))
  keep = valid.reshape(idx.shape + (1,) * (source.ndim - 1))
  ref = np.where(keep, source[np.where(valid, idx, 0)], 0).astype(np.float32)
  x = Tensor(a, requires_grad=True)
  out = view(x)[Tensor(idx)]
  names = [k.name for k in out.schedule()]
  assert (names == [f"take_rows_of_{int(np.prod(source.shape[1:]))}"]) == in_place, names
  np.testing.assert_array_equal(out.numpy(), ref)
  g = make(ref.shape, seed=1)
  (out * Tensor(g)).sum().backward()
  xt = torch.tensor(a, dtype=torch.float64, requires_grad=True)
  (view(xt)[torch.from_numpy(np.where(valid, idx, 0))] * torch.tensor(g * keep, dtype=torch.float64)).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), **TOL)


# ---------------------------------------------------------------- boolean masks
MASK = make(SHAPE, seed=7) > 0   # about half True


class M:
  """A boolean mask index: nbgrad gets Tensor(mask), numpy the array, torch a bool tensor."""
  def __init__(self, mask): self.array = np.asarray(mask, np.bool_)


def mask_for(index, make_mask):
  return convert(index, lambda i: make_mask(i.array) if isinstance(i, M) else i)


# x[mask] is x[mask.nonzero()] (numpy, torch): the True positions in order, their dims replaced by one
MASK_ROWS = {
  "whole_shape": M(MASK),
  "first_two_dims": M(MASK[:, :, 0]),
  "first_dim": M(MASK[:, 0, 0]),
  "after_a_slice": (slice(None), M(MASK[0, :, 0])),
  "after_an_ellipsis": (Ellipsis, M(MASK[0, 0])),
  "beside_an_int_tensor": (T([2, 0, 1]), M([True, False, True, True, False])),
  "all_false": M(np.zeros(SHAPE[:2], np.bool_)),
  "bool_list": [True, False, False, True],
}


@pytest.mark.parametrize("row", list(MASK_ROWS))
def test_bool_mask_index(row, positions_path):
  index = MASK_ROWS[row]
  a = make(SHAPE)
  check_index_and_grad(a, for_nbgrad(mask_for(index, Tensor)), a[for_numpy(mask_for(index, lambda m: m))],
                       for_torch(mask_for(index, torch.from_numpy)))


# the dtypes an indexed read moves (by their bits) and, for the float ones, sums its gradient in
@pytest.mark.parametrize("name", ["bool", "uint8", "int16", "int64", "float16", "bfloat16", "float64"])
def test_advanced_index_keeps_the_source_dtype(name):
  a = make((6, 3), seed=8)
  x = Tensor(a, dtype=name, requires_grad=True if name in ("float16", "bfloat16", "float64") else None)
  reference = torch.tensor(x.numpy() if name != "bfloat16" else a, dtype=getattr(torch, name), requires_grad=x.requires_grad or False)
  index = np.array([[5, 0], [5, -1]])
  out = x[Tensor(index.astype(np.int32)), 1:]
  expected = reference[torch.from_numpy(index), 1:]
  assert out.dtype == dtypes.__dict__[name] and out.shape == tuple(expected.shape)
  np.testing.assert_array_equal(out.float().numpy(), expected.float().detach().numpy())
  if x.requires_grad:
    g = make(out.shape, seed=9)
    (out.float() * Tensor(g)).sum().backward()
    (expected.float() * torch.from_numpy(g)).sum().backward()
    assert x.grad.dtype == x.dtype
    np.testing.assert_allclose(x.grad.float().numpy(), reference.grad.float().numpy(), rtol=1e-2)


def test_large_index_reads_and_sums_per_index():
  """200k positions into 300k elements, and an embedding table read by a (16, 64) token grid: an index costs
  one read per element it returns (the repeated ones sum in the gradient)."""
  rng = np.random.default_rng(10)
  a = rng.standard_normal(300_000).astype(np.float32)
  idx = rng.integers(-300_000, 300_000, 200_000)
  x = Tensor(a, requires_grad=True)
  out = x[Tensor(idx.astype(np.int32))]
  np.testing.assert_array_equal(out.numpy(), a[idx])
  g = rng.standard_normal(idx.size).astype(np.float32)
  (out * Tensor(g)).sum().backward()
  expected = np.zeros(a.size, np.float64)
  np.add.at(expected, idx, g)
  np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-5)
  table = rng.standard_normal((5000, 32)).astype(np.float32)
  tokens = rng.integers(0, 5000, (16, 64))
  w = Tensor(table, requires_grad=True)
  looked_up = w[Tensor(tokens.astype(np.int32))]
  np.testing.assert_array_equal(looked_up.numpy(), table[tokens])
  looked_up.sum().backward()
  np.testing.assert_array_equal(w.grad.numpy(), np.bincount(tokens.ravel(), minlength=5000)[:, None] * np.ones((1, 32)))


# ---------------------------------------------------------------- bad indices
PLAIN_INDICES = [(Ellipsis, 0), (1, Ellipsis), (Ellipsis,), (1, Ellipsis, 2), (slice(None, None, -1), Ellipsis, slice(1, 3)),
                 (np.int64(1), 2, np.int32(-1), 4), (Ellipsis, 1, 2, 3, 4), (-1,), (), (slice(3, 0, -2), slice(None), 0), 1,
                 None, (None, 1, None), (slice(None, None, -3), None, Ellipsis, slice(4, 0, -2)), (slice(2, 2), 0, None),
                 (Ellipsis, None), (0, slice(None, None, 2), slice(-1, None), slice(5, None, -4)), (slice(None), slice(2, 0, -1), None, 3)]


@pytest.mark.parametrize("index", PLAIN_INDICES, ids=repr)
def test_ints_slices_none_and_one_ellipsis_read_as_numpy_reads_them_and_their_gradient_lands_where_they_read(index):
  a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
  x = Tensor(a, requires_grad=True)
  out = x[index]
  np.testing.assert_array_equal(out.numpy(), a[index])
  weights = np.asarray(np.random.default_rng(0).standard_normal(np.shape(a[index])), np.float32)
  (out * Tensor(weights)).sum().backward()
  expected = np.zeros_like(a)
  expected[index] = weights   # basic indices read each element at most once
  np.testing.assert_array_equal(x.grad.numpy(), expected)


BAD_INDEX_ROWS = {
  "float_tensor": (lambda: Tensor([0.0, 1.0]), IndexError),
  "float_list": (lambda: [0.0, 1.0], IndexError),
  "bool_mask_shorter_than_dim": (lambda: Tensor([True, False, True]), IndexError),
  "bool_list_longer_than_dim": (lambda: [True, False, True, False, True], IndexError),
  "bool_mask_of_the_wrong_shape": (lambda: np.ones((4, 6), np.bool_), IndexError),
  "bool_mask_beyond_the_last_dim": (lambda: (slice(None), slice(None), np.ones((6, 1), np.bool_)), IndexError),
  "float_tensor_beside_int_tensor": (lambda: (Tensor([0, 1]), Tensor([1.0, 2.0])), IndexError),
  "index_arrays_that_do_not_broadcast": (lambda: ([0, 1], [0, 1, 2]), IndexError),   # as numpy, torch and tinygrad
}


@pytest.mark.parametrize("row", list(BAD_INDEX_ROWS))
def test_bad_index_raises(row):
  make_index, exc = BAD_INDEX_ROWS[row]
  with pytest.raises(exc):
    Tensor(make(SHAPE))[make_index()].realize()


# ---------------------------------------------------------------- setitem with basic indices
# id -> (index, value: a Python scalar, or a shape for a tensor value that broadcasts into t[index])
SETITEM_ROWS = {
  "int_scalar": (1, 2.5),
  "negative_ints_scalar": ((-1, 2), -1.0),
  "stepped_slices_scalar": ((slice(None, None, 2), slice(1, 4, 2)), 7.0),
  "negative_step_scalar": ((slice(None, None, -2), slice(None), 5), 3.0),
  "ellipsis_int_scalar": ((Ellipsis, 1), 0.5),
  "everything_ellipsis_scalar": (Ellipsis, 9.0),
  "int_tensor_full_shape": (0, (5, 6)),
  "slice_tensor_broadcast_rows": (slice(1, 3), (1, 6)),
  "ellipsis_tensor_broadcast_last_dim": ((Ellipsis, slice(None, None, 3)), (2,)),
  "stepped_slice_tensor_broadcast_0d": ((slice(None), slice(4, 0, -2), 2), ()),
  "new_axis_int_tensor_with_extra_leading_ones": ((None, 1, 2), (1, 1, 1, 6)),   # numpy and torch drop them
}


@pytest.mark.parametrize("lazy", [False, True], ids=["realized", "lazy"])
@pytest.mark.parametrize("row", list(SETITEM_ROWS))
def test_setitem_basic(row, lazy):
  index, value = SETITEM_ROWS[row]
  a = make(SHAPE)
  if lazy:
    t = Tensor(a) * 2   # not realized yet
    expected = a * 2
  else:
    t = Tensor(a).realize()
    expected = a.copy()
  if isinstance(value, tuple):
    v = make(value, seed=3)
    t[index] = Tensor(v)
  else:
    v = value
    t[index] = v
  expected[index] = v
  assert t.shape == SHAPE and t.dtype == dtypes.float32
  np.testing.assert_array_equal(t.numpy(), expected)
  np.testing.assert_array_equal((t + 1).numpy(), expected + 1)   # later computations read the new values


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "uint64", "float16", "float32", "float64"])
def test_setitem_of_a_number_stores_it_as_numpy_does(dtype):
  """A number is stored in the tensor's dtype as numpy stores it (floats into ints toward zero, rounded to half
  precision); one numpy cannot store (past the int range, nan or inf into an int) raises and writes nothing."""
  for value in (2.7, -1, 300, 2**40, True, np.float32(1.5), -0.0, float("inf"), float("nan"), np.int64(-7)):
    expected = np.arange(4).astype(dtype)
    t = Tensor(expected.copy()).realize()
    try:
      with np.errstate(over="ignore"): expected[2] = value
    except (OverflowError, ValueError):
      with pytest.raises((OverflowError, ValueError)): t[2] = value
      np.testing.assert_array_equal(t.numpy(), np.arange(4).astype(dtype))
      continue
    t[2] = value
    np.testing.assert_array_equal(t.numpy(), expected)
    assert np.signbit(t.numpy()[2]) == np.signbit(expected[2])


def test_element_writes_keep_views_readers_and_products_right():
  """t[i, j] = number, a Python loop's write (straight into the buffer when nothing else reads it): a view taken
  before shows it, a result built before keeps the values it was built from, products computed before and after
  each read the values of their time."""
  a, w = make((3, 4)), make((4, 2), seed=1)
  t, weight = Tensor(a).realize(), Tensor(w).realize()
  row, before = t[1], t * 2
  t[1, -1] = 7.0
  expected = a.copy()
  expected[1, -1] = 7.0
  np.testing.assert_array_equal(row.numpy(), expected[1])
  np.testing.assert_array_equal(before.numpy(), a * 2)
  del row
  product, then = t @ weight, expected.copy()
  product.realize()
  t[-3, 0], t[2, 3] = -2, True
  expected[0, 0], expected[2, 3] = -2, 1
  np.testing.assert_array_equal(t.numpy(), expected)
  np.testing.assert_allclose(product.numpy(), then @ w, rtol=1e-6)
  np.testing.assert_allclose((t @ weight).numpy(), expected @ w, rtol=1e-6)
  with pytest.raises(IndexError): t[3, 0] = 1.0
  np.testing.assert_array_equal(t.numpy(), expected)


def test_a_0d_int_tensor_indexes_as_an_int_as_in_torch():
  a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  for index in [(Tensor(1),), (Tensor(0), slice(None), [0, 2]), (slice(None), Tensor(-1), Tensor([1, 3]))]:
    as_torch = tuple(torch.tensor(i.item()) if isinstance(i, Tensor) and i.ndim == 0 else
                     torch.from_numpy(i.numpy()) if isinstance(i, Tensor) else i for i in index)
    np.testing.assert_array_equal(Tensor(a)[index].numpy(), torch.from_numpy(a)[as_torch].numpy())
  t = Tensor(a).realize()
  t[Tensor(1), Tensor(2)] = -1.0
  expected = a.copy()
  expected[1, 2] = -1.0
  np.testing.assert_array_equal(t.numpy(), expected)


def test_setitem_with_a_list_of_ints_and_slices_is_the_tuple_as_in_getitem():
  a = make(SHAPE)
  t = Tensor(a).realize()
  t[[1, slice(None, None, 2)]] = 4.0
  expected = a.copy()
  expected[1, ::2] = 4.0
  np.testing.assert_array_equal(t.numpy(), expected)
  np.testing.assert_array_equal(t[[1, slice(None, None, 2)]].numpy(), expected[1, ::2])


def test_setitem_int_tensor_and_views_taken_after():
  a = np.arange(24, dtype=np.int32).reshape(4, 6)
  t = Tensor(a).realize()
  t[1:3, ::-2] = 100
  t[-1] = Tensor(np.arange(6, dtype=np.int32) * -1)
  expected = a.copy()
  expected[1:3, ::-2] = 100
  expected[-1] = np.arange(6) * -1
  assert t.dtype == dtypes.int32
  np.testing.assert_array_equal(t.numpy(), expected)
  np.testing.assert_array_equal(t.T[::2].numpy(), expected.T[::2])


# a view reading a realized buffer through a strided window writes through to it, as in numpy
WRITE_THROUGH_ROWS = {
  "slice": (lambda x: x[1:], (0, 2), 9.0),
  "transpose": (lambda x: x.T, (slice(None), 1), 7.0),
  "stepped_columns": (lambda x: x[:, ::2], Ellipsis, -1.0),
  "reshape": (lambda x: x.reshape(6, 5), 3, 5.0),
  "reshape_of_a_flip": (lambda x: x[::-1, ::-1].reshape(30), 4, 3.0),
  "reshape_of_every_other": (lambda x: x.reshape(30)[::2].reshape(3, 5), (1, 2), 8.0),
}


@pytest.mark.parametrize("row", list(WRITE_THROUGH_ROWS))
def test_setitem_on_a_view_writes_through_to_its_buffer(row):
  take, index, value = WRITE_THROUGH_ROWS[row]
  a = make((5, 6))
  t = Tensor(a).realize()
  view = take(t)
  view[index] = value
  expected = a.copy()
  take(expected)[index] = value
  np.testing.assert_array_equal(t.numpy(), expected)
  np.testing.assert_array_equal(view.numpy(), take(expected))


# writes through a view of a tensor not computed yet reach that tensor, as in numpy (they went into a private copy)
LAZY_VIEW_WRITES = {
  "chained_index_of_zeros": (lambda: Tensor.zeros(3, 4), lambda t: t[1].__setitem__(2, 9.0), lambda a: a[1].__setitem__(2, 9.0)),
  "transposed_row": (lambda: Tensor.zeros(3, 4), lambda t: t.T.__setitem__(1, 5.0), lambda a: a.T.__setitem__(1, 5.0)),
  "reshaped_arange": (lambda: Tensor.arange(12).reshape(3, 4).float(), lambda t: t.reshape(4, 3)[0].__setitem__(slice(None), -1.0),
                      lambda a: a.reshape(4, 3)[0].__setitem__(slice(None), -1.0)),
  "in_place_add_on_a_slice_of_a_computed_tensor": (lambda: Tensor.ones(3, 4) * 2, lambda t: t[0:2].__iadd__(5.0),
                                                   lambda a: a[0:2].__iadd__(5.0)),
  "flipped_slice": (lambda: Tensor.ones(3, 4) + 1, lambda t: t[::-1][0].__setitem__(slice(1, 3), 0.0),
                    lambda a: a[::-1][0].__setitem__(slice(1, 3), 0.0)),
  # a step takes every n-th element through padding, which is no view step of its own
  "stepped_slice": (lambda: Tensor.arange(8).float() * 1, lambda t: t[1::3].__setitem__(0, 9.0), lambda a: a[1::3].__setitem__(0, 9.0)),
  "negative_step_in_place": (lambda: Tensor.ones(4, 6) * 2, lambda t: t[::-2, 1::2].__iadd__(5.0), lambda a: a[::-2, 1::2].__iadd__(5.0)),
  "stepped_view_of_a_stepped_view": (lambda: Tensor.zeros(4, 6) + 1, lambda t: t[1::2, ::-3][0].__setitem__(1, 5.0),
                                     lambda a: a[1::2, ::-3][0].__setitem__(1, 5.0)),
  "step_past_the_only_element_of_a_mean": (lambda: Tensor([[1], [2], [6]]).mean(0), lambda t: t[-2::3].__iadd__(-1.5),
                                           lambda a: a[-2::3].__iadd__(-1.5)),
}


@pytest.mark.parametrize("row", list(LAZY_VIEW_WRITES))
def test_write_through_a_view_of_a_lazy_tensor_reaches_it(row):
  make_tensor, write, write_numpy = LAZY_VIEW_WRITES[row]
  t = make_tensor()
  before = t * 1   # built before the write: keeps the old values
  expected = make_tensor().numpy().copy()
  old = expected.copy()
  write(t)
  write_numpy(expected)
  np.testing.assert_array_equal(t.numpy(), expected)
  np.testing.assert_array_equal(before.numpy(), old)


def test_a_view_of_a_tensor_given_new_values_since_shows_them_and_writes_into_them():
  """README: views taken before a whole-tensor assign show the new values, as numpy's views; a write into one
  reaches the tensor."""
  y = Tensor([1.0, 2.0, 3.0])
  w = y[1:]
  y.assign(Tensor([7.0, 8.0, 9.0]))
  assert w.tolist() == [8.0, 9.0]
  w[0] = 0.0
  assert y.tolist() == [7.0, 0.0, 9.0] and w.tolist() == [0.0, 9.0]


@pytest.mark.parametrize("write", ["imul", "assign", "ellipsis_iadd", "realized_then_assign"])
def test_views_follow_in_place_ops_on_the_whole_tensor_and_computed_results_keep_their_values(write):
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  x = Tensor(a).realize()
  views = {"row": (x[1], lambda v: v[1]), "T": (x.T, lambda v: v.T), "flat": (x.reshape(12), lambda v: v.reshape(12)),
           "view_of_view": (x[::2][0][1:], lambda v: v[::2][0][1:]), "permuted_backwards": (x.T[::-1], lambda v: v.T[::-1])}
  z = x * 3   # computed from the old values: keeps them, as in eager mode
  if write == "imul": x *= 2
  elif write == "assign": x.assign(Tensor(a * 2))
  elif write == "ellipsis_iadd": x[...] += a
  else:
    x.realize()
    x.assign(x * 2).realize()
  for name, (view, ref) in views.items():
    np.testing.assert_array_equal(view.numpy(), ref(a * 2), err_msg=name)
  np.testing.assert_array_equal(z.numpy(), a * 3)


def test_a_view_of_a_parameter_follows_its_optimizer_updates():
  from nbgrad.nn.optim import SGD
  w = Tensor([1.0, 2.0], requires_grad=True)
  first = w[0:1]
  opt = SGD([w], lr=0.25)
  (w * w).sum().backward()
  with Tensor.train(): opt.step()
  np.testing.assert_array_equal(first.numpy(), [0.5])
  np.testing.assert_array_equal(w.numpy(), [0.5, 1.0])


def test_setitem_on_a_padded_view_gets_a_buffer_of_its_own():
  a = make((3,))
  t = Tensor(a).realize()
  padded = t.pad(((1, 1),))
  padded[0] = 5.0
  np.testing.assert_array_equal(padded.numpy(), np.concatenate([[5.0], a, [0.0]]).astype(np.float32))
  np.testing.assert_array_equal(t.numpy(), a)


# setitem into zero elements changes nothing and raises nothing, as in numpy: (tensor shape, view, index)
EMPTY_SETITEM_ROWS = {
  "tensor_with_an_empty_dim": ((2, 0), lambda x: x, 0),
  "empty_slice_of_a_full_tensor": ((2, 3), lambda x: x[:, 1:1], Ellipsis),
  "empty_slice_behind_a_new_axis": ((5, 1), lambda x: x[:, None, 1:1], Ellipsis),
  "int_indices_into_an_empty_tensor": ((1, 0, 5, 1), lambda x: x[0, :, 4, -1], Ellipsis),
}


@pytest.mark.parametrize("row", list(EMPTY_SETITEM_ROWS))
def test_setitem_into_no_elements_is_a_no_op(row):
  shape, take, index = EMPTY_SETITEM_ROWS[row]
  a = make(shape)
  t = Tensor(a).realize()
  view = take(t)
  view[index] = 5.0
  expected = a.copy()
  take(expected)[index] = 5.0
  np.testing.assert_array_equal(t.numpy(), expected)
  assert view.shape == take(expected).shape


# a reduction over size-1 axes is a new array in numpy and torch, not a view of its input
SIZE1_REDUCE_ROWS = {
  "sum": lambda x: x.sum(0), "max": lambda x: x.max(0), "mean": lambda x: x.mean(0),
  "sum_keepdim": lambda x: x.sum(0, keepdims=True), "min_of_a_0d": lambda x: x[0, 0].min(),
}


@pytest.mark.parametrize("row", list(SIZE1_REDUCE_ROWS))
def test_reduce_over_size1_axes_is_not_a_view_of_its_input(row):
  reduce = SIZE1_REDUCE_ROWS[row]
  a = make((1, 6))
  t = Tensor(a).realize()
  built_before = reduce(t)
  t[0, 0] = 100.0   # a result built before the write keeps the old values
  np.testing.assert_array_equal(built_before.numpy(), reduce(a))
  source = Tensor(a).realize()
  result = reduce(source)
  result[...] = -7.0   # a write into the result leaves the input alone
  np.testing.assert_array_equal(source.numpy(), a)
  np.testing.assert_array_equal(result.numpy(), np.full(reduce(a).shape, -7.0, np.float32))


# advanced-index setitem assigns as numpy does (torch's index_put_): int and bool arrays, lists and tensors
ADVANCED_SETITEM_ROWS = {   # id -> (index, whether the value is a tensor of the target's shape or a number)
  "tensor": ((Tensor([0, 1]),), True),
  "list": (([0, 2],), False),
  "int_and_list": ((1, [0, 2]), True),
  "slice_and_tensor": ((slice(None), Tensor([1, 3])), True),
  "tuple_inside_index_tuple": ((slice(None), (0, 2)), False),
  "two_arrays_paired": ((np.array([3, 0, 2]), Tensor([4, -1, 0])), True),
  "negative_and_repeated": ((Tensor([-1, 3, -1]),), False),
  "bool_mask_whole": ((make(SHAPE) > 0,), False),
  "bool_tensor_rows": ((Tensor([True, False, True, False]),), True),
  "ellipsis_and_list": ((Ellipsis, [5, 0]), True),
  "new_axis_and_array": ((None, [1, 2]), False),
  "empty_list": (([],), False),
}


@pytest.mark.parametrize("lazy", [False, True], ids=["realized", "lazy"])
@pytest.mark.parametrize("row", list(ADVANCED_SETITEM_ROWS))
def test_setitem_advanced_as_numpy(row, lazy):
  index, tensor_value = ADVANCED_SETITEM_ROWS[row]
  index = index[0] if len(index) == 1 else index
  a = make(SHAPE)
  t = Tensor(a) * 2 if lazy else Tensor(a).realize()
  expected = a * 2 if lazy else a.copy()
  as_numpy = tuple(i.numpy() if isinstance(i, Tensor) else i for i in (index if isinstance(index, tuple) else (index,)))
  as_numpy = as_numpy if isinstance(index, tuple) else as_numpy[0]
  value = make(expected[as_numpy].shape, seed=7) if tensor_value else np.float32(-3.5)
  t[index] = Tensor(value) if tensor_value else float(value)
  expected[as_numpy] = value
  np.testing.assert_array_equal(t.numpy(), expected)
  np.testing.assert_array_equal((t - 1).numpy(), expected - 1)   # later computations read the new values


def test_setitem_advanced_matches_torch_index_put_and_writes_through_views():
  a = np.arange(24, dtype=np.int64).reshape(4, 6)
  t, reference = Tensor(a).realize(), torch.from_numpy(a.copy())
  rows, cols = Tensor([0, 3, 1]), Tensor([5, 0, 0])
  t[rows, cols] = Tensor([-1, -2, -3])
  reference[torch.tensor([0, 3, 1]), torch.tensor([5, 0, 0])] = torch.tensor([-1, -2, -3])
  np.testing.assert_array_equal(t.numpy(), reference.numpy())
  view = t[1:]   # a window of t's buffer: the write lands in t
  view[[0, 2], 1] = 100
  reference[1:][[0, 2], 1] = 100
  np.testing.assert_array_equal(t.numpy(), reference.numpy())
  t[t > 20] = 0
  reference[reference > 20] = 0
  np.testing.assert_array_equal(t.numpy(), reference.numpy())


@pytest.mark.parametrize("index", [Tensor([0, 5]), [[0, 1], [2, 9]], Tensor([0.0, 1.0]), Tensor([[True, False]])], ids=["past_the_end", "second_array_past", "float_values", "mask_shape"])
def test_setitem_advanced_bad_index_raises_and_leaves_tensor_unchanged(index):
  a = make(SHAPE)
  t = Tensor(a).realize()
  with pytest.raises(IndexError):
    t[index] = 1.0
  np.testing.assert_array_equal(t.numpy(), a)


# ---------------------------------------------------------------- gather
# id -> (x shape, dim, index shape, index dtype); index sizes may be smaller than x's outside dim and anything along dim
GATHER_ROWS = {
  "dim_minus2_smaller_other_dims": ((2, 3, 4), -2, (1, 2, 3), np.int64),
  "dim1_2d_index_longer_than_dim": ((3, 5), 1, (3, 7), np.int32),
  "dim0_dims_after_it": ((4, 3, 5), 0, (6, 3, 5), np.int64),
  "dim1_dims_before_and_after": ((4, 3, 5), 1, (4, 2, 5), np.uint8),
  "last_dim_one_each": ((6, 9), -1, (6, 1), np.int16),
  "many_rows_one_each": ((70000, 3), 1, (70000, 1), np.int64),   # past PARALLEL_MIN_ELEMENTS, in one group
  "size1_dim": ((4, 1, 3), 1, (4, 2, 3), np.int64),
  "empty_index": ((4, 3), 1, (4, 0), np.int64),
}
# how the gathered tensor is given: a buffer of its own, a window of one at an offset, a transposed view, lazily
GATHER_SOURCES = {"realized": lambda t: t, "window": lambda t: t.pad(((1, 0),) + ((0, 0),) * (t.ndim - 1)).realize()[1:],
                  "transposed": lambda t: t.T.contiguous().T, "lazy": lambda t: t * 1}


@pytest.mark.parametrize("source", list(GATHER_SOURCES))
@pytest.mark.parametrize("row", list(GATHER_ROWS))
def test_gather(row, source):
  x_shape, dim, index_shape, index_dtype = GATHER_ROWS[row]
  a = make(x_shape, seed=4)
  idx = np.random.default_rng(5).integers(0, x_shape[dim], index_shape).astype(index_dtype)   # repeats accumulate
  x = Tensor(a, requires_grad=True)
  out = GATHER_SOURCES[source](x).gather(dim, Tensor(idx))
  xt = torch.tensor(a, dtype=torch.float64, requires_grad=True)
  ref = torch.gather(xt, dim, torch.tensor(idx, dtype=torch.int64))
  assert out.shape == tuple(ref.shape), (out.shape, tuple(ref.shape))
  np.testing.assert_array_equal(out.numpy(), ref.detach().numpy().astype(np.float32))
  g = make(index_shape, seed=6)
  (out * Tensor(g)).sum().backward()
  (ref * torch.tensor(g, dtype=torch.float64)).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), **TOL)


# ---------------------------------------------------------------- scatter_add, index_add (gather's adjoints)
# id -> (self shape, dim, index shape, src shape)
SCATTER_ROWS = {
  "dim0_repeats": ((3, 5), 0, (4, 5), (4, 5)),
  "dim1_index_smaller": ((4, 6), 1, (3, 4), (3, 4)),
  "dim_minus1_3d": ((2, 3, 4), -1, (2, 3, 7), (2, 3, 7)),
  "middle_dim": ((2, 3, 4), 1, (2, 5, 2), (2, 5, 2)),
  "empty_index": ((3, 4), 0, (0, 4), (0, 4)),
}


@pytest.mark.parametrize("name", ["float32", "float64", "float16"])
@pytest.mark.parametrize("row", list(SCATTER_ROWS))
def test_scatter_add_as_torch(row, name):
  shape, dim, index_shape, src_shape = SCATTER_ROWS[row]
  gen = np.random.default_rng(8)
  a, src = make(shape, seed=1).astype(name), make(src_shape, seed=2).astype(name)
  idx = gen.integers(0, shape[dim], index_shape)
  ours, our_src = Tensor(a, requires_grad=True), Tensor(src, requires_grad=True)
  theirs, their_src = torch.tensor(a, dtype=torch.float64, requires_grad=True), torch.tensor(src, dtype=torch.float64, requires_grad=True)
  out = ours.scatter_add(dim, Tensor(idx), our_src)
  expected = theirs.scatter_add(dim, torch.tensor(idx), their_src)
  assert out.dtype == getattr(dtypes, name)
  np.testing.assert_allclose(out.numpy().astype(np.float64), expected.detach().numpy(), rtol=2e-3 if name == "float16" else 1e-6, atol=1e-3 if name == "float16" else 1e-6)
  g = make(shape, seed=3)
  (out * Tensor(g.astype(name))).sum().backward()
  (expected * torch.tensor(g, dtype=torch.float64)).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy().astype(np.float64), theirs.grad.numpy(), rtol=2e-3, atol=1e-3)
  np.testing.assert_allclose(our_src.grad.numpy().astype(np.float64), their_src.grad.numpy(), rtol=2e-3, atol=1e-3)


def test_scatter_add_of_ints_a_larger_src_out_of_range_and_0d():
  counts = Tensor.zeros(5, dtype=dtypes.int32).scatter_add(0, Tensor([1, 1, 3, 1]), Tensor.ones(4, dtype=dtypes.int32))
  assert counts.dtype == dtypes.int32 and counts.tolist() == [0, 3, 0, 1, 0]
  src = make((3, 6), seed=4)
  out = Tensor.zeros(2, 6).scatter_add(0, Tensor([[1, 0, 1], [0, 0, 1]]), Tensor(src))   # src's elements outside index unused
  np.testing.assert_allclose(out.numpy(), torch.zeros(2, 6, dtype=torch.float64).scatter_add(0, torch.tensor([[1, 0, 1], [0, 0, 1]]), torch.tensor(src, dtype=torch.float64)).numpy(), rtol=1e-6)
  assert Tensor.zeros(3).scatter_add(0, Tensor([0, 7, -1]), Tensor([1.0, 2.0, 3.0])).tolist() == [1.0, 0.0, 0.0]   # out of range adds nothing
  assert Tensor(2.0).scatter_add(0, Tensor(0), Tensor(3.0)).item() == 5.0


def test_scatter_add_refuses_bad_input():
  with pytest.raises(IndexError, match="int tensor"): Tensor.zeros(3).scatter_add(0, Tensor([0.0]), Tensor([1.0]))
  with pytest.raises(IndexError, match="one rank"): Tensor.zeros(3, 2).scatter_add(0, Tensor([0]), Tensor([1.0]))
  with pytest.raises(IndexError, match="must fit"): Tensor.zeros(3, 2).scatter_add(0, Tensor([[0, 1, 1]]), Tensor([[1.0, 2.0]]))
  with pytest.raises(TypeError, match="bool"): Tensor([True]).scatter_add(0, Tensor([0]), Tensor([True]))


@pytest.mark.parametrize("dim,alpha", [(0, 1), (1, 2.5), (-1, -1)])
def test_index_add_as_torch(dim, alpha):
  a = make((4, 5), seed=5).astype(np.float64)
  index = np.array([3, 0, 3]) if dim == 0 else np.array([4, 4, 1])
  source = make((3, 5) if dim == 0 else (4, 3), seed=6).astype(np.float64)
  ours, our_source = Tensor(a, requires_grad=True), Tensor(source, requires_grad=True)
  theirs, their_source = torch.tensor(a, requires_grad=True), torch.tensor(source, requires_grad=True)
  out, expected = ours.index_add(dim, Tensor(index), our_source, alpha=alpha), theirs.index_add(dim, torch.tensor(index), their_source, alpha=alpha)
  np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12)
  (out * out).sum().backward()
  (expected * expected).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
  np.testing.assert_allclose(our_source.grad.numpy(), their_source.grad.numpy(), rtol=1e-12)
  with pytest.raises(IndexError, match="index_add needs"): Tensor(a).index_add(dim, Tensor([[0]]), Tensor(source))


@pytest.mark.parametrize("name", ["float32", "float16", "int32", "int64", "uint8"])
def test_index_add_of_a_middle_dim_and_other_dtypes_as_torch(name):
  np_dtype = {"float16": np.float16, "float32": np.float32, "int32": np.int32, "int64": np.int64, "uint8": np.uint8}[name]
  a, source = ((make(shape, seed=seed) * 3).astype(np_dtype) for shape, seed in (((2, 6, 3), 7), ((2, 4, 3), 8)))
  index = np.array([5, 0, 5, 2])
  out = Tensor(a)[:, ::-1].index_add(1, Tensor(index), Tensor(source))   # a view: read where it lies
  expected = torch.tensor(a).flip(1).index_add(1, torch.tensor(index), torch.tensor(source))
  assert out.dtype.name == name
  np.testing.assert_allclose(out.numpy().astype(np.float64), expected.numpy().astype(np.float64), rtol=1e-3 if name == "float16" else 0)


def test_index_add_of_a_0d_tensor_and_an_empty_index_as_torch():
  for index in (Tensor([0]), Tensor(0)):
    assert Tensor(5.0).index_add(0, index, Tensor(2.0)).item() == torch.tensor(5.0).index_add(0, torch.tensor(0), torch.tensor(2.0)).item() == 7.0
  assert Tensor(5.0).index_copy(0, Tensor([0]), Tensor(2.0)).item() == 2.0
  empty = Tensor.ones(3, 2).index_add(0, Tensor.zeros(0, dtype=dtypes.int32), Tensor.zeros(0, 2))
  assert empty.tolist() == [[1.0, 1.0]] * 3


def test_index_add_of_tensor_indices_out_of_range_adds_nothing():
  # tensor indices are not read when the op is built: one out of range lands nowhere, as a gather reads 0 for it
  out = Tensor.zeros(4, 2).index_add(0, Tensor([4, -1, 1]), Tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]))
  assert out.tolist() == [[0.0, 0.0], [3.0, 3.0], [0.0, 0.0], [0.0, 0.0]]
  past_int32 = Tensor(np.array([2**32 + 1, 0], np.int64))   # not wrapped into range by a narrower index type
  assert Tensor.zeros(3, 1).index_add(0, past_int32, Tensor([[1.0], [2.0]])).tolist() == [[2.0], [0.0], [0.0]]


BAD_GATHER_ROWS = {
  "index_more_dims": ((3, 4), 0, np.zeros((3, 4, 1), np.int32), IndexError),
  "index_fewer_dims": ((3, 4), -1, np.zeros((3,), np.int32), IndexError),
  "bool_index": ((3, 4), 1, np.zeros((3, 4), np.bool_), IndexError),
  "dim_out_of_range": ((3, 4), 2, np.zeros((3, 4), np.int32), IndexError),
}


def test_gather_of_float_indices_reads_the_position_each_value_equals_as_tinygrad():
  """tinygrad 0.9.0 compares the index values with the positions: 3.0 reads position 3; 2.5, -1.0, 9.0 and nan read 0
  (as its out-of-range ints do). The gradient goes to the positions read."""
  a = make((3, 4), seed=2)
  idx = np.array([[3.0, 2.5], [-1.0, 0.0], [np.nan, 9.0]], np.float32)
  whole = (idx >= 0) & (idx < 4) & (idx == np.trunc(idx))
  x = Tensor(a, requires_grad=True)
  out = x.gather(1, Tensor(idx))
  np.testing.assert_array_equal(out.numpy(), np.where(whole, np.take_along_axis(a, np.where(whole, idx, 0).astype(np.int64), 1), 0))
  out.sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), np.array([[0, 0, 0, 1], [1, 0, 0, 0], [0, 0, 0, 0]], np.float32))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float16], ids=["bool", "int8", "float16"])
def test_gather_keeps_the_source_dtype(dtype):
  a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
  idx = np.array([[3, 0], [1, 1], [0, 2]], np.int32)
  out = Tensor(a).gather(1, Tensor(idx))
  expected = torch.gather(torch.from_numpy(a), 1, torch.from_numpy(idx).long()).numpy()
  assert out.dtype.np == expected.dtype
  np.testing.assert_array_equal(out.numpy(), expected)



@pytest.mark.parametrize("size", [7, 1 << 17], ids=["serial", "parallel"])
@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.float64], ids=["int64", "uint64", "float64"])
def test_reads_of_single_elements_keep_every_bit_of_8_byte_dtypes(dtype, size):
  """Values past float64's 53-bit mantissa (and float64's low bits) come back exactly, whether the read is by
  x[idx], x[i, j] lists or gather."""
  bits = np.random.default_rng(3).integers(0, 2**63, size, dtype=np.int64) | (1 << 62) | 1
  a = bits.view(dtype) if dtype != np.float64 else np.random.default_rng(3).standard_normal(size)
  index = np.random.default_rng(4).integers(-size, size, size)
  np.testing.assert_array_equal(Tensor(a)[Tensor(index)].numpy(), a[index])
  rows, cols = index[:3] % size, np.zeros(3, np.int64)
  np.testing.assert_array_equal(Tensor(a.reshape(size, 1))[rows.tolist(), cols.tolist()].numpy(), a.reshape(size, 1)[rows, cols])
  gathered = Tensor(a).gather(0, Tensor(index % size)).numpy()
  np.testing.assert_array_equal(gathered, torch.gather(torch.from_numpy(a.view(np.int64) if dtype == np.uint64 else a), 0,
                                                       torch.from_numpy(index % size)).numpy().view(dtype))


def test_gather_reads_zero_for_indices_out_of_range_and_sends_them_no_gradient():
  """Negative indices and those past the dim read 0 (tinygrad's gather; torch raises), at every dim of a 3-D tensor."""
  a = make((3, 4, 5), seed=8)
  for dim in range(3):
    size = a.shape[dim]
    shape = tuple(6 if d == dim else n for d, n in enumerate(a.shape))
    idx = np.random.default_rng(dim).integers(-size - 2, size + 2, shape)
    inside = (idx >= 0) & (idx < size)
    expected = np.where(inside, np.take_along_axis(a, np.where(inside, idx, 0), dim), 0)
    x = Tensor(a, requires_grad=True)
    out = x.gather(dim, Tensor(idx))
    np.testing.assert_array_equal(out.numpy(), expected)
    out.sum().backward()
    counts = np.zeros(a.shape)   # how many in-range indices read each element
    np.add.at(counts, tuple(np.where(inside, idx, 0) if d == dim else np.indices(shape)[d] for d in range(3)), inside)
    np.testing.assert_array_equal(x.grad.numpy(), counts)


@pytest.mark.parametrize("row", list(BAD_GATHER_ROWS))
def test_gather_bad_input_raises(row):
  x_shape, dim, idx, exc = BAD_GATHER_ROWS[row]
  with pytest.raises(exc):
    Tensor(make(x_shape)).gather(dim, Tensor(idx)).realize()


# ---------------------------------------------------------------- scatter, scatter_reduce
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_as_torch(reduce, include_self):
  gen = np.random.default_rng(30)
  base = gen.integers(-2, 3, (4, 6)).astype(np.float64)   # ties and zeros: the shared and the zero-aware gradients
  src = gen.integers(-2, 3, (5, 6)).astype(np.float64)
  index = gen.integers(0, 3, (5, 6))   # row 3 is never written to
  if reduce in ("amax", "amin") and not include_self:
    base += 0.25   # torch then still counts a base value equal to the result among the ties, and gives src half
  ours, our_src = Tensor(base, requires_grad=True), Tensor(src, requires_grad=True)
  theirs, their_src = torch.tensor(base, requires_grad=True), torch.tensor(src, requires_grad=True)
  out = ours.scatter_reduce(0, Tensor(index), our_src, reduce, include_self=include_self)
  expected = theirs.scatter_reduce(0, torch.tensor(index), their_src, reduce, include_self=include_self)
  np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12)
  weights = gen.standard_normal((4, 6))
  (out * Tensor(weights)).sum().backward()
  (expected * torch.tensor(weights)).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(our_src.grad.numpy(), their_src.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["int32", "float16", "bool"])
def test_scatter_reduce_of_other_dtypes_as_torch(name):
  base, src, index = np.array([10, -10, 3, 1]), np.array([1, 2, 4, 7, 0]), np.array([0, 0, 1, 1, 3])
  for reduce in (["amax", "amin"] if name == "bool" else ["sum", "mean", "amax", "prod"]):
    t = Tensor(base).cast(getattr(dtypes, name))
    reference = torch.tensor(base).to(getattr(torch, name))
    out = t.scatter_reduce(0, Tensor(index), Tensor(src).cast(getattr(dtypes, name)), reduce)
    expected = reference.scatter_reduce(0, torch.tensor(index), torch.tensor(src).to(getattr(torch, name)), reduce)
    assert out.dtype == getattr(dtypes, name)
    np.testing.assert_array_equal(out.cast(dtypes.float64).numpy(), expected.double().numpy(), err_msg=reduce)


def test_scatter_as_torch_with_numbers_repeats_and_gradients():
  assert Tensor.zeros(3, 4).scatter(1, Tensor([[1], [0], [3]]), 1.0).tolist() == torch.zeros(3, 4).scatter(1, torch.tensor([[1], [0], [3]]), 1.0).tolist()
  base, src, index = make((3, 5), seed=31), make((2, 5), seed=32), np.array([[0, 1, 2, 0, 1], [2, 0, 1, 1, 0]])
  ours, our_src = Tensor(base, requires_grad=True), Tensor(src, requires_grad=True)
  theirs, their_src = torch.tensor(base, requires_grad=True), torch.tensor(src, requires_grad=True)
  out, expected = ours.scatter(0, Tensor(index), our_src), theirs.scatter(0, torch.tensor(index), their_src)
  np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
  weights = make((3, 5), seed=33)
  (out * Tensor(weights)).sum().backward()
  (expected * torch.tensor(weights)).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)
  np.testing.assert_allclose(our_src.grad.numpy(), their_src.grad.numpy(), rtol=1e-6)
  last = Tensor.zeros(2).scatter(0, Tensor([1, 1, 1]), Tensor([5.0, 6.0, 7.0]))   # of a repeated position the last stays
  assert last.tolist() == [0.0, 7.0]
  assert Tensor.zeros(2).scatter(0, Tensor([5, -1]), Tensor([1.0, 2.0])).tolist() == [0.0, 0.0]   # out of range: nowhere


def test_scatter_reduce_refuses_bad_input():
  with pytest.raises(ValueError, match="reduce must be one of"): Tensor.zeros(3).scatter_reduce(0, Tensor([0]), Tensor([1.0]), "max")
  with pytest.raises(TypeError, match="number tensor"): Tensor([True]).scatter_reduce(0, Tensor([0]), Tensor([True]), "sum")
  with pytest.raises(IndexError, match="must fit"): Tensor.zeros(3, 2).scatter(0, Tensor([[0, 1, 1]]), Tensor([[1.0, 2.0]]))


def test_scatter_reduce_maximum_without_self_shares_among_the_landed_only():
  """Without include_self a position's maximum is over what lands there: ties among those share its whole gradient,
  whatever the base held (torch halves it where the base equals the result)."""
  base, src = Tensor([5.0, 0.0], requires_grad=True), Tensor([5.0, 5.0, 1.0], requires_grad=True)
  out = base.scatter_reduce(0, Tensor([0, 0, 0]), src, "amax", include_self=False)
  assert out.tolist() == [5.0, 0.0]
  (out * Tensor([2.0, 3.0])).sum().backward()
  assert base.grad.tolist() == [0.0, 3.0] and src.grad.tolist() == [1.0, 1.0, 0.0]


@pytest.mark.parametrize("index", [True, False, (True, 1), (0, False), (Ellipsis, True), (slice(None), None, False), (np.True_, slice(1, 3))],
                         ids=["true", "false", "true_int", "int_false", "ellipsis_true", "none_false", "numpy_true"])
def test_a_scalar_bool_index_adds_a_dim_of_one_or_zero_as_numpy(index):
  """numpy's (and torch's) x[True] is x[None], x[False] the same dim with no element; a 0-d bool tensor too."""
  a = np.arange(12.0).reshape(3, 4)
  got = Tensor(a)[index]
  assert got.shape == a[index].shape
  np.testing.assert_array_equal(got.numpy(), a[index])
  assert Tensor(a)[Tensor(True)].shape == (1, 3, 4) and Tensor(a)[Tensor(False)].shape == (0, 3, 4)


@pytest.mark.parametrize("index", [range(2), (range(1, 3), 0), (slice(None), range(3, 0, -2)), np.array(True), np.array(False),
                                   np.array(2), (np.array(1), slice(1, None)), (np.int64(2), range(2))], ids=str)
def test_ranges_and_0d_arrays_index_as_numpy(index):
  """A range is an index array, a 0-d int or bool array an int or bool, as numpy reads them; so they write."""
  a = np.arange(12.0).reshape(3, 4)
  got = Tensor(a)[index]
  assert got.shape == a[index].shape
  np.testing.assert_array_equal(got.numpy(), a[index])
  written, expected = Tensor(a.copy()).realize(), a.copy()
  written[index] = -1.0
  expected[index] = -1.0
  np.testing.assert_array_equal(written.numpy(), expected)


@pytest.mark.parametrize("index", [(True, True), (True, 0, True), (False, True), (True, slice(None), True), (True, Ellipsis, False),
                                   (True, [2, 0]), (np.True_, None, [1, 0], True)], ids=str)
def test_several_scalar_bools_or_one_beside_index_arrays_broadcast_as_numpy(index):
  """Each True or False is a 0-d mask, an index array of one position or none on a new dim: several of them make one
  dim (numpy's and torch's x[True, True] is x[None]; it was a dim each) and one broadcasts with index arrays (it
  raised)."""
  a = make((3, 4))
  t = Tensor(a, requires_grad=True)
  got = t[index]
  np.testing.assert_array_equal(got.numpy(), a[index])
  (got * 2).sum().backward()
  expected = np.zeros_like(a)
  np.add.at(expected, index, 2.0)
  np.testing.assert_array_equal(t.grad.numpy(), expected)


@pytest.mark.parametrize("mask_dims", [2, 3])
@pytest.mark.parametrize("kind", ["tensor", "array"])
def test_a_mask_over_leading_dims_reads_and_writes_as_numpy(mask_dims, kind):
  """x[mask] with a mask of x's leading dims reads the flat positions of those dims at once (it was one index array
  per dim, 8x slower); its gradient and t[mask] = v (whose index shape numpy now finds) as numpy and torch."""
  a = make((4, 5, 6))
  mask = a.reshape(a.shape[:mask_dims] + (-1,))[..., 0] > 0
  index = Tensor(mask) if kind == "tensor" else mask
  t = Tensor(a, requires_grad=True)
  picked = t[index]
  np.testing.assert_array_equal(picked.numpy(), a[mask])
  picked.sum().backward()
  np.testing.assert_array_equal(t.grad.numpy(), np.broadcast_to(mask.reshape(mask.shape + (1,) * (3 - mask_dims)), a.shape).astype(a.dtype))
  written, expected = Tensor(a.copy()), a.copy()
  written[index] = 7.0
  expected[mask] = 7.0
  np.testing.assert_array_equal(written.numpy(), expected)
  assert Tensor(a)[np.zeros(mask.shape, bool)].shape == a[np.zeros(mask.shape, bool)].shape


@pytest.mark.parametrize("index", [[0, 5], [0, -4], np.array([[1], [3]])], ids=["past_the_end", "before_the_start", "array"])
def test_a_list_or_array_index_out_of_range_raises_as_numpy(index):
  """Its values are known when the op is built (a tensor index out of range reads 0, as tinygrad's)."""
  a = np.arange(6, dtype=np.float32).reshape(3, 2)
  with pytest.raises(IndexError): a[index]
  with pytest.raises(IndexError, match="out of range for a dim of size 3"): Tensor(a)[index]
  with pytest.raises(IndexError): a[:, [2]]
  with pytest.raises(IndexError, match="out of range for a dim of size 2"): Tensor(a)[:, [2]]
