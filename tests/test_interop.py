"""What numpy, torch and tinygrad users reach for besides the ops: numpy ufuncs and scalars, Python operators and
protocols, in-place operators, and tinygrad 0.9.0's smaller API surface (Device, dtypes, keyword names).
References: numpy, torch (CPU), and tinygrad 0.9.0's documented behavior where it differs."""
import operator
import re
import numpy as np
import pytest
import torch

from nbgrad import Tensor, Device, dtypes

A = np.array([[1.5, -2.0, 0.25], [3.0, 0.5, -1.0]], np.float32)
INTS = np.array([[7, -5, 3], [6, 9, -8]], np.int32)   # no zeros: dividing by 0 is left to each library


# ---- numpy ufuncs: the ones nbgrad has run as tensor ops (and keep the gradient), on either side
UNARY_UFUNCS = [np.sinh, np.cosh, np.arcsinh, np.rint, np.positive, np.negative, np.exp]
BINARY_INT_UFUNCS = [np.floor_divide, np.remainder, np.bitwise_and, np.bitwise_or, np.bitwise_xor]


@pytest.mark.parametrize("ufunc", UNARY_UFUNCS, ids=lambda u: u.__name__)
def test_unary_ufunc_is_the_tensor_op_with_its_gradient(ufunc):
  x = Tensor(A, requires_grad=True)
  out = ufunc(x)
  assert isinstance(out, Tensor)
  np.testing.assert_allclose(out.numpy(), ufunc(A), rtol=1e-6)
  xt = torch.tensor(A, dtype=torch.float64, requires_grad=True)
  reference = {np.sinh: torch.sinh, np.cosh: torch.cosh, np.arcsinh: torch.asinh, np.rint: torch.round,
               np.positive: lambda t: +t, np.negative: torch.neg, np.exp: torch.exp}[ufunc]
  (out * Tensor(A)).sum().backward()
  (reference(xt) * torch.from_numpy(A)).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize("ufunc", BINARY_INT_UFUNCS, ids=lambda u: u.__name__)
def test_binary_int_ufunc_with_an_array_on_either_side(ufunc):
  other = np.array([3, 2, -4], np.int32)
  for out, expected in [(ufunc(Tensor(INTS), other), ufunc(INTS, other)), (ufunc(other, Tensor(INTS)), ufunc(other, INTS))]:
    assert isinstance(out, Tensor)
    np.testing.assert_array_equal(out.numpy(), expected)
  assert isinstance(INTS % Tensor(other), Tensor) and isinstance(np.int64(7) % Tensor(other), Tensor)


def test_ufunc_into_a_tensor_out_raises_a_type_error():
  """numpy would call the tensor back without end (the interpreter crashed)."""
  with pytest.raises(TypeError, match="out="):
    np.add(A, 1, out=Tensor(A))


def test_ufunc_at_into_a_tensor_raises_and_changes_nothing():
  """np.add.at wrote into the read-only array __array__ gives (numpy's 1-d fast path ignores the flag), behind the
  back of results built from the tensor before; torch refuses it with a TypeError too."""
  t = Tensor([1.0, 2.0, 3.0]).realize()
  later = t * 10
  for call in (lambda: np.add.at(t, [0, 0], 1), lambda: np.maximum.at(t, (np.array([1]),), 5.0)):
    with pytest.raises(TypeError, match="index_put_"): call()
  np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])
  np.testing.assert_array_equal(later.numpy(), [10.0, 20.0, 30.0])


def test_a_tensor_as_a_ufuncs_where_is_read_as_its_values():
  """np.sum(a, where=mask) with an nbgrad mask: numpy called the tensor back without end (the interpreter crashed)."""
  mask = np.array([True, False, True])
  assert np.sum(np.ones(3), where=Tensor(mask)) == np.sum(np.ones(3), where=mask) == 2.0
  np.testing.assert_array_equal(np.add(np.ones(2), 1, out=np.zeros(2), where=Tensor([True, False])), [2.0, 0.0])
  np.testing.assert_array_equal(np.multiply(A, 2, out=np.ones_like(A), where=Tensor(A > 0)), np.where(A > 0, A * 2, 1))


def test_a_ufunc_with_dtype_computes_in_it_and_keeps_the_gradient():
  """np.exp(t, dtype=np.float32) gave a numpy array: the gradient through it was lost without a word."""
  x, xt = Tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
  out = np.exp(x, dtype=np.float64)
  assert isinstance(out, Tensor) and out.dtype == dtypes.float64
  np.testing.assert_allclose(out.numpy(), np.exp(A, dtype=np.float64), rtol=1e-12)
  (out + x).sum().backward()
  (torch.exp(xt.double()) + xt).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
  summed = np.add(Tensor(INTS, dtype=dtypes.int8), 120, dtype=np.int16, order="C")
  assert summed.dtype == dtypes.int16
  np.testing.assert_array_equal(summed.numpy(), np.add(INTS.astype(np.int8), 120, dtype=np.int16))
  with pytest.raises(TypeError, match="same_kind"): np.add(Tensor(A), 1, dtype=np.int32)   # as numpy refuses
  with pytest.raises(TypeError): np.add(A, 1, dtype=np.int32)
  np.testing.assert_array_equal(np.add(Tensor(A), 1, dtype=np.int32, casting="unsafe").numpy(), np.add(A, 1, dtype=np.int32, casting="unsafe"))
  assert np.less(Tensor(A), 1, dtype=bool).tolist() == np.less(A, 1, dtype=bool).tolist()


# ---- numpy scalars
def test_numpy_integer_scalars_stay_integers():
  big = np.int64(2**24 + 1)   # not exact in float32
  assert Tensor.full((2,), big).dtype == dtypes.int32 and Tensor.full((2,), big).tolist() == [2**24 + 1] * 2
  chosen = Tensor([True, False]).where(big, 0)
  assert chosen.dtype == dtypes.int32 and chosen.tolist() == [2**24 + 1, 0]


def test_a_numpy_float64_scalar_is_a_python_float_as_in_tinygrad():
  assert Tensor(np.float64(0.5)).dtype == dtypes.float32
  assert (Tensor([1.0, 2.0]) * Tensor(np.sqrt(2.0))).dtype == dtypes.float32
  assert Tensor(np.float32(0.5)).dtype == dtypes.float32 and Tensor(np.int64(3)).dtype == dtypes.int64


# ---- Python operators and protocols
def test_operators_numpy_and_torch_have():
  t, tt = Tensor(INTS), torch.from_numpy(INTS)
  np.testing.assert_array_equal((1 << Tensor([1, 2, 3])).numpy(), 1 << np.array([1, 2, 3]))
  np.testing.assert_array_equal((64 >> Tensor([1, 2, 3])).numpy(), 64 >> np.array([1, 2, 3]))
  np.testing.assert_array_equal((+t).numpy(), INTS)
  np.testing.assert_array_equal(round(Tensor([0.5, 1.5, 2.5, -0.5])).numpy(), np.round([0.5, 1.5, 2.5, -0.5]))
  np.testing.assert_allclose(round(Tensor(A), 1).numpy(), np.round(A, 1))
  np.testing.assert_array_equal(round(Tensor(INTS), -1).numpy(), np.round(INTS, -1))
  assert (9 in t) == (9 in tt) and (4 in t) == (4 in tt)
  for not_a_number in ("a", None):   # == leaves these to Python; torch raises too
    with pytest.raises(TypeError, match="value in tensor"): not_a_number in t
  assert [10, 20, 30][Tensor(2)] == 30 and list(range(Tensor([3])))[-1] == 2
  with pytest.raises(TypeError):
    [10, 20][Tensor(1.0)]
  assert [0] * Tensor(3) == [0] * tt[0, 2].item() == [0, 0, 0] and "ab" * Tensor([2]) == "abab" and (1,) * Tensor(2) == (1, 1)
  with pytest.raises(TypeError, match="one-element integer"): [0] * Tensor([1, 2])


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_divmod_and_astype_as_numpy(dtype):
  a, b = np.array([7, -7, 7, -7, 0], dtype), np.array([2, 2, -2, -3, 5], dtype)
  for got, want in ((divmod(Tensor(a), Tensor(b)), divmod(a, b)), (divmod(Tensor(a), 3), divmod(a, dtype(3))),
                    (divmod(9, Tensor(b)), divmod(dtype(9), b))):
    for g, w in zip(got, want):
      assert g.dtype.np == w.dtype
      np.testing.assert_array_equal(g.numpy(), w)
  converted = Tensor(a).astype(np.float16)
  assert converted.dtype == dtypes.float16 and converted.numpy().tolist() == a.astype(np.float16).tolist()


def test_numpy_functions_on_tensors_answer_as_on_arrays():
  """np.nonzero gives numpy's tuple of index arrays (t.nonzero() is torch's (n, ndim) tensor), so np.argwhere, which
  calls it, is numpy's too; np.moveaxis calls a.transpose(order); the rest still reach the tensor's methods."""
  a = np.array([[3.0, 0.0, 2.0], [0.0, 5.0, 4.0]], np.float32)
  t = Tensor(a)
  rows, cols = np.nonzero(t)
  np.testing.assert_array_equal(rows, np.nonzero(a)[0])
  np.testing.assert_array_equal(cols, np.nonzero(a)[1])
  assert len(np.nonzero(Tensor([0, 3, 0, 4]))) == 1
  np.testing.assert_array_equal(np.argwhere(t), np.argwhere(a))
  np.testing.assert_array_equal(np.moveaxis(t, 0, 1), np.moveaxis(a, 0, 1))
  np.testing.assert_array_equal(t.transpose([1, 0]).numpy(), a.transpose([1, 0]))
  assert isinstance(np.sum(t, axis=0), Tensor) and t.nonzero().shape == (4, 2)


def test_numpy_s_ravel_swapaxes_and_copy():
  a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  t = Tensor(a, requires_grad=True)
  np.testing.assert_array_equal(t.ravel().numpy(), a.ravel())
  np.testing.assert_array_equal(t.swapaxes(0, 2).numpy(), a.swapaxes(0, 2))
  np.testing.assert_array_equal(t.swapaxes(-1, 1).numpy(), a.swapaxes(-1, 1))
  copied = t.copy()
  (copied * t.swapaxes(1, 1)).sum().backward()   # d/dt sum(t * t) through the copy and the view
  np.testing.assert_array_equal(t.grad.numpy(), 2 * a)
  source = Tensor(a.copy())
  kept = source.copy().realize()
  source[0] = 0
  np.testing.assert_array_equal(kept.numpy(), a)


def test_len_of_a_0d_tensor_is_1_as_in_tinygrad():
  assert len(Tensor(3.0)) == 1 and len(Tensor([[1, 2]])) == 1


# ---- in-place operators
def test_in_place_ops_keep_the_left_dtype():
  t = Tensor(A.copy())
  t += np.array([1.0, 2.0, 3.0])   # float64 array into float32, as torch and numpy do
  assert t.dtype == dtypes.float32
  np.testing.assert_allclose(t.numpy(), A + np.array([1.0, 2.0, 3.0], np.float32))
  u = Tensor([250, 3], dtype=dtypes.uint8)
  u += Tensor([10])                 # int32 into uint8: wraps, as torch
  assert u.dtype == dtypes.uint8 and u.tolist() == (torch.tensor([250, 3], dtype=torch.uint8) + 10).tolist()
  with pytest.raises(TypeError, match="cannot be stored"):
    i = Tensor([1, 2])
    i /= 2


def test_floor_division_and_modulo_in_place_write_through_a_view():
  x = Tensor(INTS.copy()).realize()
  row = x[1]
  row //= 4
  x[0] %= 4
  expected = INTS.copy()
  expected[1] //= 4
  expected[0] %= 4
  np.testing.assert_array_equal(x.numpy(), expected)


def test_in_place_op_in_a_gradient_graph_raises_and_leaves_the_tensor():
  """y += x with y in a graph made x's gradient wrong (2 where torch gives 3): it raises, as tinygrad's assert does."""
  x = Tensor([1.0, 2.0], requires_grad=True)
  y = x * 2
  with pytest.raises(RuntimeError, match="x = x \\+ y"):
    y += x
  np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
  with pytest.raises(RuntimeError):
    x -= 1
  Tensor.no_grad = True   # an optimizer's update: no graph is made, the leaf takes the new values
  try:
    x -= 1
  finally:
    Tensor.no_grad = False
  np.testing.assert_array_equal(x.numpy(), [0.0, 1.0])


# ---- tinygrad 0.9.0's surface
def test_device_handle_default_and_shortcuts():
  name = Device[Device.DEFAULT]
  assert name == "CPU" and isinstance(name, str)
  name.synchronize()
  previous = Device.DEFAULT
  try:
    Device.DEFAULT = "cpu"
    assert Device.DEFAULT == "CPU" and Tensor([1]).device == "CPU"
  finally:
    Device._default = None
  assert Device.DEFAULT == previous
  assert Tensor([1.0]).cpu().device == "CPU"
  t = Tensor([1.0, 2.0], device="CPU:1")
  for moved in (t.cpu(), t.clang(), t.llvm()):   # tinygrad's names of the CPU device
    assert moved.device == "CPU" and moved.tolist() == [1.0, 2.0]


def test_like_constructors_take_a_device_and_dtype():
  t = Tensor(A)
  for made in (t.zeros_like(device="CPU"), t.ones_like(device="CPU", dtype=dtypes.int8), t.full_like(2, device="CPU")):
    assert made.shape == A.shape and made.device == "CPU"
  assert t.ones_like(device="CPU", dtype=dtypes.int8).dtype == dtypes.int8


def test_tinygrad_keyword_names_and_return_types():
  t = Tensor(A)
  assert isinstance(t.chunk(2, dim=1), list) and isinstance(t.split(1), tuple)
  np.testing.assert_allclose(t.sequential(ll=[lambda x: x * 2, lambda x: x + 1]).numpy(), A * 2 + 1)
  assert t.realize(do_update_stats=False) is t and isinstance(t.schedule(seen=None), list)
  schedule, variables = (t * 2).schedule_with_vars(t + 1)
  assert [k.name for k in schedule] == [k.name for k in (t * 2).schedule(t + 1)] and len(schedule) == 2 and variables == {}
  halves = Tensor([1.5, -2.0, 3.25]).cast(dtypes.bfloat16)
  widened = halves.llvm_bf16_cast(dtypes.float32)
  assert widened.dtype == dtypes.float32 and widened.tolist() == [1.5, -2.0, 3.25]
  with pytest.raises(TypeError, match="bfloat16"): t.llvm_bf16_cast(dtypes.float32)


def test_the_package_names_nn_as_tinygrad_s_does():
  import nbgrad
  assert nbgrad.nn.Linear(2, 3).weight.shape == (3, 2) and callable(nbgrad.nn.optim.Adam) and "nn" in nbgrad.__all__


def test_dtypes_surface():
  assert dtypes.from_py(1.0) == dtypes.default_float and dtypes.from_py(True) == dtypes.bool and dtypes.from_py(3) == dtypes.default_int
  assert dtypes.as_const(2.7, dtypes.int32) == 2 and dtypes.as_const(1, dtypes.float32) == 1.0 and dtypes.as_const(2, dtypes.bool) is True
  assert dtypes.fields()["half"] == dtypes.float16 and dtypes.fields()["float32"] == dtypes.float32
  assert dtypes.float32.fmt == "f" and dtypes.int64.fmt == np.dtype(np.int64).char and dtypes.bfloat16.fmt is None
  assert dtypes.float16.count == 1 and dtypes.float16.scalar() == dtypes.float16
  assert Tensor([1, 2]).data().format == dtypes.int32.fmt
  # tinygrad's keyword names and module-level names
  assert dtypes.as_const(val=2.7, dtype=dtypes.int32) == 2 and dtypes.is_float(x=dtypes.half) and dtypes.is_unsigned(x=dtypes.uint8)
  from nbgrad.dtype import DTYPES_DICT, sum_acc_dtype
  assert DTYPES_DICT["float"] == dtypes.float32 and DTYPES_DICT["uint16"] == dtypes.uint16
  # as API.md's sum rule: ints in at least int32, unsigned in at least uint32, bool in int32, half types in float32
  accumulators = {dtypes.bool: dtypes.int32, dtypes.int8: dtypes.int32, dtypes.uint8: dtypes.uint32, dtypes.int16: dtypes.int32,
                  dtypes.uint16: dtypes.uint32, dtypes.int32: dtypes.int32, dtypes.uint32: dtypes.uint32, dtypes.int64: dtypes.int64,
                  dtypes.uint64: dtypes.uint64, dtypes.float16: dtypes.float32, dtypes.bfloat16: dtypes.float32,
                  dtypes.float32: dtypes.float32, dtypes.float64: dtypes.float64}
  assert {dt: sum_acc_dtype(dt) for dt in accumulators} == accumulators


@pytest.mark.parametrize("name", ["bool", "int8", "uint16", "int32", "uint64", "float16", "float32", "float64"])
def test_a_dtype_equals_numpy_s_spellings_of_it_as_numpy_s_dtypes_do(name):
  """t.dtype == np.float32 and == "float32" hold as np.dtype's comparisons do (they were False, so a numpy script's
  branch on the dtype went the wrong way); other types and unknown names compare unequal."""
  dt = getattr(dtypes, name)
  for spelling in (getattr(np, name if name != "bool" else "bool_"), name, np.dtype(name)):
    assert dt == spelling and not dt != spelling and (np.dtype(name) == spelling)
  assert dt != (np.float16 if name != "float16" else np.float32) and dt != "no_such_type" and dt != 3 and dt != None  # noqa: E711


@pytest.mark.parametrize("name", ["bool", "int8", "uint16", "int32", "uint64", "float16", "bfloat16", "float32", "float64"])
def test_numpy_reads_a_dtype_and_numpy_s_codes_name_one(name):
  """np.dtype(t.dtype), np.zeros(n, dtype=t.dtype), astype and np.finfo take nbgrad's dtypes (the dtype numpy()
  gives: float32 for bfloat16), and numpy's codes ('f4', '<i8') name nbgrad's."""
  dtype = getattr(dtypes, name)
  expected = np.float32 if name == "bfloat16" else np.dtype(name)
  assert np.dtype(dtype) == expected == Tensor([1, 0], dtype=dtype).numpy().dtype
  assert np.zeros(2, dtype=dtype).dtype == expected and np.arange(3).astype(Tensor([1], dtype=dtype).dtype).dtype == expected
  if name != "bfloat16":
    assert Tensor([1, 0], dtype=np.dtype(name).str).dtype == dtype and Tensor([1]).cast(np.dtype(name).char).dtype == dtype
  assert np.finfo(dtypes.float16).eps == np.finfo(np.float16).eps
  with pytest.raises(TypeError, match="unknown dtype 'c8'"): Tensor([1], dtype="c8")


def test_construction_from_ranges_memoryviews_and_tensors_as_torch():
  assert Tensor(range(2, 5)).tolist() == torch.tensor(range(2, 5)).tolist() and Tensor(range(3)).dtype == dtypes.int32
  values = np.arange(4, dtype=np.float32)
  assert Tensor(memoryview(values)).dtype == dtypes.float32 and Tensor(memoryview(values)).tolist() == values.tolist()
  source = Tensor([1.0, 2.0], requires_grad=True)
  copy = Tensor(source, dtype=dtypes.float64)
  assert copy.dtype == dtypes.float64 and copy.tolist() == [1.0, 2.0] and copy._ctx is None


@pytest.mark.parametrize("dtype", [None, dtypes.float32])
@pytest.mark.parametrize("lazy", [False, True])
def test_a_tensor_from_a_tensor_is_a_copy_of_its_own_as_torch(dtype, lazy):
  """Tensor(t) had dtype None (numpy() failed); Tensor(t, dtype=t.dtype) shared t's buffer (a write into one changed
  the other). torch.tensor(t) copies."""
  source = Tensor([1.0, 2.0]) * 2 if lazy else Tensor([1.0, 2.0]).realize()
  copy = Tensor(source, dtype=dtype)
  assert copy.dtype == dtypes.float32 and copy.device == source.device
  copy[0] = 9.0
  expected = torch.tensor([1.0, 2.0]) * (2 if lazy else 1)
  assert source.tolist() == expected.tolist() and copy.tolist() == [9.0, expected[1].item()]
  assert Tensor(Tensor(3)).item() == 3 and Tensor(Tensor([1, 2])).dtype == dtypes.int32
  assert Tensor(source, device="CPU:1").device == "CPU:1" and Tensor(source.to("CPU:1")).device == "CPU:1"


class ArrayLike:
  """An object numpy converts through __array__ (as it does torch CPU tensors and pandas columns)."""
  def __array__(self, dtype=None, copy=None): return np.array([[1, 2], [3, 4]], np.int16)


def test_construction_from_torch_tensors_and_other_array_likes_as_numpy_converts_them():
  for source, dtype in ((torch.tensor([[1.5, 2.0]], dtype=torch.float16), dtypes.float16), (torch.arange(3), dtypes.int64),
                        (ArrayLike(), dtypes.int16)):
    t = Tensor(source)
    assert t.dtype == dtype and t.tolist() == np.asarray(source).tolist()
  assert Tensor(torch.arange(3), dtype=dtypes.float32).tolist() == [0.0, 1.0, 2.0]


def test_a_torch_tensor_that_requires_grad_or_is_bfloat16_is_read_as_its_values():
  """numpy cannot read either (torch raised "Can't call numpy() on Tensor that requires grad" and "unsupported
  ScalarType BFloat16"): its values are read detached, bfloat16 as bfloat16."""
  source = torch.tensor([1.5, -2.25, 3.0], requires_grad=True)
  for t in (Tensor(source), Tensor([0.0, 0.0, 0.0]) + source):
    assert t.dtype == dtypes.float32 and t.tolist() == source.tolist() and not t.requires_grad
  halves = Tensor(source.bfloat16())
  assert halves.dtype == dtypes.bfloat16 and halves.tolist() == source.bfloat16().float().tolist()
  ours = Tensor.zeros(3).contiguous().realize()
  ours[torch.tensor([2, 0])] = source[:2]
  assert ours.tolist() == [-2.25, 0.0, 1.5]


def test_a_constant_past_the_half_range_is_inf_without_a_warning():
  with np.errstate(all="raise"):
    assert (Tensor([1.0], dtype=dtypes.float16) + 1e5).tolist() == (torch.tensor([1.0], dtype=torch.float16) + 1e5).tolist()


def test_reductions_of_a_broadcast_constant_run_no_loop():
  """zeros(2**31, 2**31).sum() looped over 4.6e18 elements; a constant's sum is its value times the count."""
  assert Tensor.zeros(2**31, 2**31).sum().item() == 0.0
  assert Tensor.full((3, 4), 200, dtype=dtypes.uint8).sum().item() == 2400   # in uint32, as any uint8 sum
  np.testing.assert_array_equal(Tensor.full((2, 3), 2.5).max(0).numpy(), [2.5, 2.5, 2.5])
  np.testing.assert_array_equal(Tensor.ones(0, 3).sum(0).numpy(), [0.0, 0.0, 0.0])


def test_a_python_number_does_not_make_a_result_need_grad():
  """tinygrad's rule: t * 2 keeps t's requires_grad=False (an optimizer takes None as trainable)."""
  frozen = Tensor([1.0, 2.0], requires_grad=False)
  assert (frozen * 2).requires_grad is False and (2 - frozen).requires_grad is False
  assert Tensor.scaled_uniform(2, 2, requires_grad=False).requires_grad is False
  assert (Tensor([1.0]) * 2).requires_grad is None and (Tensor([1.0], requires_grad=True) * 2).requires_grad is True


def wrapped(value: int, name: str) -> int:
  """value taken into the int dtype name as two's complement wrap-around."""
  info = np.iinfo(name)
  bits = 8 * np.dtype(info.dtype).itemsize
  return (int(value) - info.min) % 2**bits + info.min


@pytest.mark.parametrize("name", ["int8", "uint8", "int32", "uint32", "int64", "uint64"])
def test_comparing_with_an_int_beyond_the_dtype_wraps_it_first(name):
  """A Python int takes an int tensor's dtype in comparisons as in arithmetic, wrapped into it as tinygrad and torch
  do (uint8 > -1 is False, uint8 == -1 True at 255), whatever its size; int64's and uint64's extremes stay exact."""
  extremes = [int(np.iinfo(name).min), int(np.iinfo(name).max)]
  a = np.array([5, 0, 100] + extremes, getattr(np, name))
  t = Tensor(a)
  for big in (2**40, -(2**40), 2**63, -(2**63) - 1, 2**64, 2**70, -(2**70), 300, -1, np.uint64(2**63), np.int64(-1)):
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
      expected = getattr(a.astype(object), op)(wrapped(big, name)).astype(bool)
      assert getattr(t, op)(big).tolist() == expected.tolist(), (name, big, op)


@pytest.mark.parametrize("name", ["int8", "uint8", "int32", "int64"])
def test_comparisons_maximum_and_minimum_with_ints_past_the_dtype_as_torch(name):
  """torch wraps the scalar too (its clamp refuses one, so maximum and minimum are checked against the wrapped
  value's); clip keeps its bounds' values: int8 clip(-1000, 1000) changes nothing."""
  a = np.array([5, 0, 100, -3 if name != "uint8" else 3], getattr(np, name))
  t, tt = Tensor(a), torch.tensor(a)
  for big in (300, -1, 256, -200, 2**40):
    for op in (operator.lt, operator.gt, operator.eq, operator.ne, operator.le, operator.ge):
      assert op(t, big).tolist() == op(tt, big).tolist(), (name, big, op)
      assert op(big, t).tolist() == op(big, tt).tolist(), (name, big, op)
    w = torch.tensor(wrapped(big, name), dtype=tt.dtype)
    np.testing.assert_array_equal(t.maximum(big).numpy(), torch.maximum(tt, w).numpy())
    np.testing.assert_array_equal(t.minimum(big).numpy(), torch.minimum(tt, w).numpy())
  np.testing.assert_array_equal(Tensor(a).clip(-1000, 1000).numpy(), a)


def test_bools_against_an_int_compare_as_0_and_1_as_torch():
  b, bt = Tensor([False, True]), torch.tensor([False, True])
  for big in (2, 1, 0, -1, 2**40, -(2**40), 2**70):
    for op in (operator.lt, operator.gt, operator.eq, operator.ne, operator.le, operator.ge):
      expected = op(np.array([0, 1], dtype=object), big).astype(bool).tolist()
      assert op(b, big).tolist() == expected and op(big, b).tolist() == op(big, np.array([0, 1], dtype=object)).astype(bool).tolist()
      if abs(big) < 2**63: assert op(b, big).tolist() == op(bt, big).tolist()


def test_comparing_with_numpy_integers_on_either_side_wraps_them_as_python_ints():
  """numpy hands a scalar on the left (np.int64(256) > t) to the tensor as a 0-d array; either side it is an int."""
  u8, i32 = np.array([0, 255], np.uint8), np.array([0, 1], np.int32)
  for a, big in ((u8, np.int64(256)), (u8, np.int64(-1)), (i32, np.int64(2**40)), (i32, np.array(2**40))):
    w = wrapped(big, a.dtype.name)
    for op in (operator.lt, operator.gt, operator.eq, operator.ne):
      assert op(Tensor(a), big).tolist() == op(a.astype(object), w).astype(bool).tolist()
      assert op(big, Tensor(a)).tolist() == op(w, a.astype(object)).astype(bool).tolist()


def test_equality_with_none_or_text_is_python_s_as_in_torch():
  """t == None is False and t != None True (torch's answers), so sentinel checks and `in` over lists holding None
  work; ordering against None still raises, as in torch."""
  t, tt = Tensor([1, 2]), torch.tensor([1, 2])
  for other in (None, "a", b"a"):
    assert (t == other) is (tt == other) is False and (other == t) is (other == tt) is False
    assert (t != other) is (tt != other) is True
  assert t in [None, "x", t] and (t in [None, "x"]) is (tt in [None, "x"]) is False
  assert (t == Tensor([1, 3])).tolist() == [True, False]
  with pytest.raises(TypeError): t < None
  with pytest.raises(TypeError): tt < None


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "argmax", "argmin", "std", "var", "softmax", "log_softmax",
                                  "logsumexp", "cumsum", "any", "all"])
def test_reductions_take_torch_s_dim_keyword(name):
  """t.sum(dim=1, keepdim=True) as a torch user writes it: dim is the axis (torch's max and min give the values)."""
  a = np.random.default_rng(1).standard_normal((3, 4, 2)).astype(np.float32)
  t, tt = Tensor(a), torch.from_numpy(a)
  for dim in (1, -1):
    got, ref = getattr(t, name)(dim=dim), getattr(tt, name)(dim=dim)
    ref = ref[0] if isinstance(ref, tuple) else ref
    assert got.shape == tuple(ref.shape)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
  if name not in ("softmax", "log_softmax", "cumsum"): assert getattr(t, name)(dim=0, keepdim=True).shape == (1, 4, 2)
  with pytest.raises(TypeError, match="both axis and dim"): getattr(t, name)(0, dim=1)


def test_numpy_integers_as_sizes_give_shapes_of_python_ints():
  """A view made with numpy ints kept them in its shape, and a cache of views handed that shape to later calls with
  plain ints (safe_save then failed to write the shape as JSON)."""
  Tensor.ones(1, 4).expand(np.int64(3), 4)
  Tensor.arange(6).shrink(((np.int64(1), np.int64(4)),))
  shapes = [Tensor.ones(1, 4).expand(3, 4).shape, Tensor.arange(6)[1:4].shape, Tensor.ones(4).split(np.int64(2))[0].shape]
  assert shapes == [(3, 4), (3,), (2,)] and all(type(s) is int for shape in shapes for s in shape)
  with pytest.raises(TypeError, match="shrink bound"): Tensor.arange(6).shrink(((1.0, 2),))
  x, w = np.ones((1, 1, 5, 5), np.float32), np.ones((1, 1, 3, 3), np.float32)
  for stride, padding in ((np.int64(2), np.int64(1)), ((np.int32(2), 2), (np.int64(1), 1)), (1, [np.int64(1)] * 4)):
    out = Tensor(x).conv2d(Tensor(w), stride=stride, padding=padding)
    pooled = Tensor(x).max_pool2d(kernel_size=np.int64(2), stride=stride)
    expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=1 if stride == 1 else 2, padding=1)
    assert out.shape == tuple(expected.shape) and all(type(s) is int for s in out.shape + pooled.shape)
    np.testing.assert_allclose(out.numpy(), expected.numpy())


def test_shifts_take_numpy_integers_and_arrays_on_either_side():
  s = np.array([1, 2, 3], np.int32)
  for amount in (np.int64(2), np.array([1, 2, 3]), np.array(1)):
    assert (Tensor(s) << amount).tolist() == (s << amount).tolist() and (Tensor(s) >> amount).tolist() == (s >> amount).tolist()
  assert (np.array([1, 2, 3]) << Tensor(s)).tolist() == (np.array([1, 2, 3]) << s).tolist()
  assert (np.uint32(2) << Tensor(s)).tolist() == (2 << s).tolist()


def test_assigning_a_grad_of_the_wrong_shape_raises_at_once():
  """torch checks .grad on assignment; a wrong shape here failed only at the next backward()."""
  x = Tensor([1.0, 2.0], requires_grad=True)
  with pytest.raises(ValueError, match="\\(2,\\)"):
    x.grad = Tensor([1.0, 2.0, 3.0])
  with pytest.raises(TypeError, match="list"):   # as torch's
    x.grad = [1.0, 2.0]
  x.grad = Tensor([5.0, 5.0])   # a gradient set by hand accumulates as torch's does
  (x * x).sum().backward()
  assert x.grad.tolist() == [7.0, 9.0]


@pytest.mark.parametrize("view", [lambda t: t, lambda t: t.T, lambda t: t[:, 1:]], ids=["whole", "transposed", "sliced"])
def test_clone_is_a_copy_of_its_own_that_passes_the_gradient_back_as_torch(view):
  ours, theirs = Tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
  mine, reference = view(ours).clone(), view(theirs).clone()
  (mine * mine).sum().backward()
  (reference * reference).sum().backward()
  np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
  copy = view(Tensor(A)).clone()
  copy[0, 0] = 100.0   # writes the copy only
  np.testing.assert_array_equal(copy.numpy(), np.where(np.arange(copy.numel()).reshape(copy.shape) == 0, 100.0, view(A)))
  np.testing.assert_array_equal(mine.numpy(), view(A))


def test_tinygrad_helpers_context_timing_prod_and_flatten(capsys):
  from nbgrad import Context
  from nbgrad.helpers import Timing, prod, flatten, DEBUG
  x = Tensor([1.0, 2.0]).realize()
  capsys.readouterr()
  with Context(DEBUG=2): (x + 41).numpy()
  assert "schedule of 1 kernel(s)" in capsys.readouterr().out and DEBUG.value == 0
  (x + 41).numpy()
  assert capsys.readouterr().out == ""   # restored
  with Timing("step "): (x * 2).numpy()
  assert re.fullmatch(r"step +\d+\.\d\d ms\n", capsys.readouterr().out)
  assert prod((2, 3, 4)) == 24 and prod(()) == 1 and flatten([[1], [2, 3], []]) == [1, 2, 3]
  with pytest.raises(ValueError, match="BEAM"): Context(BEAM=2)
