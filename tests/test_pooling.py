"""torch's pools (padding, ceil_mode, count_include_pad, divisor_override, return_indices, the 1-D and 3-D forms),
the adaptive pools, max_unpool, pixel_shuffle and a few activations: values and gradients against
torch.nn.functional, in float64. Dilation without padding is tests/test_nn_ops.py's."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from against_torch import grads_match
from nbgrad import Tensor, dtypes


def values(shape, seed=0):
  return np.random.default_rng(seed).standard_normal(shape)


# view applied to the input first, on both sides: a transposed or sliced tensor is not contiguous
VIEWS = {None: lambda x: x, "transpose": lambda x: x.transpose(-1, -2), "slice": lambda x: x[..., 1:, ::2]}

# id -> (nbgrad method, torch function, input shape, view, kwargs): the same keywords on both sides
POOL_CASES = {
  "max_k3_s2_pad1_ceil": ("max_pool2d", F.max_pool2d, (2, 3, 7, 6), None, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
  "max_ceil_last_window_dropped": ("max_pool2d", F.max_pool2d, (2, 3, 5, 5), None, dict(kernel_size=2, stride=2, padding=1, ceil_mode=True)),
  "max_ceil_partial_window": ("max_pool2d", F.max_pool2d, (2, 3, 7, 6), None, dict(kernel_size=2, stride=2, ceil_mode=True)),
  "max_pad1_dilation2": ("max_pool2d", F.max_pool2d, (2, 3, 7, 6), None, dict(kernel_size=3, stride=1, padding=1, dilation=2)),
  "max_pad_per_dim": ("max_pool2d", F.max_pool2d, (2, 3, 7, 6), None, dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0))),
  "max_indices": ("max_pool2d", F.max_pool2d, (2, 3, 7, 6), None, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True)),
  "max_no_batch_dim": ("max_pool2d", F.max_pool2d, (3, 7, 6), None, dict(kernel_size=3, stride=2, padding=1, return_indices=True)),
  "max_batch_1_size_1_dim": ("max_pool2d", F.max_pool2d, (1, 3, 1, 5), None, dict(kernel_size=(1, 3), stride=2, padding=(0, 1), ceil_mode=True)),
  "max_transposed_input": ("max_pool2d", F.max_pool2d, (2, 3, 6, 7), "transpose", dict(kernel_size=3, stride=2, padding=1, return_indices=True)),
  "max_sliced_input": ("max_pool2d", F.max_pool2d, (2, 3, 8, 12), "slice", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
  "max1d_indices": ("max_pool1d", F.max_pool1d, (2, 3, 9), None, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True)),
  "max3d_indices": ("max_pool3d", F.max_pool3d, (1, 2, 4, 5, 3), None, dict(kernel_size=2, stride=2, padding=1, ceil_mode=True, return_indices=True)),
  "avg_pad1_counted": ("avg_pool2d", F.avg_pool2d, (2, 3, 7, 6), None, dict(kernel_size=3, stride=2, padding=1)),
  "avg_pad1_ceil_counted": ("avg_pool2d", F.avg_pool2d, (2, 3, 7, 6), None, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
  "avg_pad1_ceil_not_counted": ("avg_pool2d", F.avg_pool2d, (2, 3, 7, 6), None,
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
  "avg_ceil_last_window_dropped": ("avg_pool2d", F.avg_pool2d, (2, 3, 5, 5), None, dict(kernel_size=2, stride=2, padding=1, ceil_mode=True)),
  "avg_divisor_override": ("avg_pool2d", F.avg_pool2d, (2, 3, 7, 6), None, dict(kernel_size=3, stride=2, padding=1, divisor_override=4)),
  "avg_no_batch_dim_transposed": ("avg_pool2d", F.avg_pool2d, (3, 6, 7), "transpose", dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
  "avg_batch_1_size_1_dim": ("avg_pool2d", F.avg_pool2d, (1, 3, 1, 5), None, dict(kernel_size=(1, 3), stride=2, padding=(0, 1), ceil_mode=True)),
  "avg1d_not_counted": ("avg_pool1d", F.avg_pool1d, (2, 3, 9), None, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
  "avg3d_ceil": ("avg_pool3d", F.avg_pool3d, (1, 2, 4, 5, 3), None, dict(kernel_size=2, stride=2, padding=1, ceil_mode=True)),
}


@pytest.mark.parametrize("case", list(POOL_CASES))
def test_pool_matches_torch(case):
  op, ref, shape, view, kw = POOL_CASES[case]
  grads_match(lambda x: getattr(VIEWS[view](x), op)(**kw), lambda x: ref(VIEWS[view](x), **kw), values(shape))


@pytest.mark.parametrize("dtype", ["float32", "int32", "int8", "uint8"])
def test_max_pool_of_each_dtype_matches_torch(dtype):
  """Values and indices; the padding loses to every value, the dtype's minimum included."""
  x = np.random.default_rng(1).integers(0 if dtype == "uint8" else -128, 128, (2, 3, 7, 6)).astype(dtype)
  x[0, 0, 0, :3] = -np.inf if dtype == "float32" else np.iinfo(dtype).min
  kw = dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True)
  got, got_indices = Tensor(x).max_pool2d(**kw)
  want, want_indices = F.max_pool2d(torch.from_numpy(x), **kw)
  assert got.dtype == getattr(dtypes, dtype) and got_indices.dtype == dtypes.int64
  np.testing.assert_array_equal(got.numpy(), want.numpy())
  np.testing.assert_array_equal(got_indices.numpy(), want_indices.numpy())


def test_max_pool_ties_index_the_first_maximum_and_share_the_gradient():
  """At ties the index is torch's (the window's first maximum); the gradient is nbgrad's max rule, shared evenly
  among a window's maxima (torch gives it all to the indexed one)."""
  x = np.random.default_rng(2).integers(0, 2, (1, 2, 5, 5)).astype(np.float64)
  leaf = Tensor(x, requires_grad=True)
  pooled, indices = leaf.max_pool2d(2, 1, return_indices=True)
  np.testing.assert_array_equal(indices.numpy(), F.max_pool2d(torch.from_numpy(x), 2, 1, return_indices=True)[1].numpy())
  weights = np.arange(1.0, pooled.numel() + 1).reshape(pooled.shape)
  (pooled * Tensor(weights)).sum().backward()
  expected = np.zeros_like(x)
  for n, c, i, j in np.ndindex(*pooled.shape):
    window = x[n, c, i:i + 2, j:j + 2]
    at_max = window == window.max()
    expected[n, c, i:i + 2, j:j + 2] += at_max * weights[n, c, i, j] / at_max.sum()
  np.testing.assert_allclose(leaf.grad.numpy(), expected)


def test_max_pool_passes_a_nan_on_and_indexes_it():
  x = values((1, 1, 4, 4))
  x[0, 0, 1, 2] = np.nan
  got, indices = Tensor(x).max_pool2d(2, return_indices=True)
  want, want_indices = F.max_pool2d(torch.from_numpy(x), 2, return_indices=True)
  np.testing.assert_array_equal(got.numpy(), want.numpy())
  np.testing.assert_array_equal(indices.numpy(), want_indices.numpy())


def test_avg_pool_of_ints_is_float32():
  """Deliberately as mean, not torch's truncating int result."""
  x = np.arange(2 * 7 * 6, dtype=np.int32).reshape(1, 2, 7, 6)
  got = Tensor(x).avg_pool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=False)
  assert got.dtype == dtypes.float32
  np.testing.assert_allclose(got.numpy(), F.avg_pool2d(torch.from_numpy(x).double(), 3, 2, padding=1, ceil_mode=True,
                                                       count_include_pad=False).numpy(), rtol=1e-6)


@pytest.mark.parametrize("npdt, shape", [(np.float32, (4, 16, 25, 23)), (np.float16, (2, 4, 9, 11))], ids=["float32", "float16"])
def test_overlapping_windows_gradient_is_added_back_by_one_routine_on_all_threads(monkeypatch, npdt, shape):
  """On the CPU, float32 (and float64) gradients of overlapping windows (stride below the kernel) are added back
  into the input by the window-sums routine, a plane per work item (here 64 planes on all threads); float16 takes the
  fused kernel. Values and gradients against torch in float32 (distinct values: no ties, whose gradient torch gives
  to one element and nbgrad shares)."""
  from nbgrad.jit import window_sums
  monkeypatch.setattr(window_sums, "PARALLEL_MIN_ELEMENTS", 0)
  x = np.random.default_rng(0).permutation(np.prod(shape)).reshape(shape).astype(npdt)
  if npdt == np.float32: x = x / np.float32(1000)
  out_shape = shape[:2] + tuple((n + 1) // 2 for n in shape[2:])
  weights = values(out_shape, seed=1).astype(np.float32)
  ours = Tensor(x, requires_grad=True)
  (ours.max_pool2d(3, 2, padding=1).cast(dtypes.float32) * Tensor(weights)).sum().backward()
  assert ("window_sums_3x3" in [k.name for k in ours.grad.schedule()]) == (npdt == np.float32)
  theirs = torch.tensor(x.astype(np.float32), requires_grad=True)
  (F.max_pool2d(theirs, 3, 2, padding=1) * torch.from_numpy(weights)).sum().backward()
  np.testing.assert_allclose(ours.grad.numpy().astype(np.float32), theirs.grad.numpy(), *((1e-3, 2e-3) if npdt == np.float16 else (1e-6, 1e-6)))


# id -> (nbgrad method, torch function, input shape, output_size, extra kwargs)
ADAPTIVE_CASES = {
  "avg_divisible": ("adaptive_avg_pool2d", F.adaptive_avg_pool2d, (2, 3, 7, 6), (7, 3), {}),
  "avg_uneven_windows": ("adaptive_avg_pool2d", F.adaptive_avg_pool2d, (2, 3, 7, 6), (4, 5), {}),
  "avg_none_keeps_a_dim": ("adaptive_avg_pool2d", F.adaptive_avg_pool2d, (2, 3, 7, 6), (None, 4), {}),
  "avg_int_size_no_batch_dim": ("adaptive_avg_pool2d", F.adaptive_avg_pool2d, (3, 7, 6), 4, {}),
  "avg_global": ("adaptive_avg_pool2d", F.adaptive_avg_pool2d, (2, 3, 7, 6), 1, {}),
  "avg_larger_than_input": ("adaptive_avg_pool2d", F.adaptive_avg_pool2d, (1, 3, 1, 5), (2, 7), {}),
  "avg1d": ("adaptive_avg_pool1d", F.adaptive_avg_pool1d, (2, 3, 9), 4, {}),
  "avg_uneven_transposed": ("adaptive_avg_pool2d", F.adaptive_avg_pool2d, (2, 3, 6, 7), (4, 5), {}),
  "max_divisible_indices": ("adaptive_max_pool2d", F.adaptive_max_pool2d, (2, 3, 7, 6), (7, 3), dict(return_indices=True)),
  "max_uneven_windows_indices": ("adaptive_max_pool2d", F.adaptive_max_pool2d, (2, 3, 7, 6), (4, 5), dict(return_indices=True)),
  "max_none_keeps_a_dim_transposed": ("adaptive_max_pool2d", F.adaptive_max_pool2d, (2, 3, 6, 7), (None, 4), dict(return_indices=True)),
  "max_larger_than_input": ("adaptive_max_pool2d", F.adaptive_max_pool2d, (1, 3, 1, 5), (2, 7), {}),
  "max1d_indices": ("adaptive_max_pool1d", F.adaptive_max_pool1d, (2, 3, 9), 4, dict(return_indices=True)),
}


@pytest.mark.parametrize("case", list(ADAPTIVE_CASES))
def test_adaptive_pool_matches_torch(case):
  op, ref, shape, size, kw = ADAPTIVE_CASES[case]
  view = VIEWS["transpose" if "transposed" in case else None]
  grads_match(lambda x: getattr(view(x), op)(size, **kw), lambda x: ref(view(x), size, **kw), values(shape))


@pytest.mark.parametrize("npdt", [np.float16, np.float64, np.int32], ids=lambda d: np.dtype(d).name)
def test_adaptive_avg_pool_of_uneven_windows_keeps_the_float_dtype(npdt):
  """Uneven windows are summed dim by dim in float32 at least and rounded once to the input's float dtype (float32
  for an int input, which torch refuses), as torch's float16 and float64 means; an empty batch pools to empty."""
  x = (values((2, 3, 7, 6)) * 4).astype(npdt)
  got = Tensor(x).adaptive_avg_pool2d((4, 5))
  expected = F.adaptive_avg_pool2d(torch.from_numpy(x.astype(np.float64)), (4, 5)).numpy()
  assert got.dtype == (dtypes.float32 if npdt == np.int32 else dtypes.from_np(npdt))
  np.testing.assert_allclose(got.numpy(), expected.astype(got.numpy().dtype), rtol=1e-3 if npdt == np.float16 else 1e-6)
  assert Tensor(x[:0]).adaptive_avg_pool2d((4, 5)).shape == (0, 3, 4, 5)


# id -> (input shape, pool kwargs, unpool output_size): the unpool gets the pool's kernel_size, stride and padding
UNPOOL_CASES = {
  "k2": ((2, 3, 6, 6), dict(kernel_size=2), None),
  "k3_s2_pad1_output_size": ((2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1), (7, 6)),
  "overlapping_windows_full_output_size": ((1, 3, 5, 5), dict(kernel_size=3, stride=1), (1, 3, 5, 5)),
  "no_batch_dim": ((3, 6, 6), dict(kernel_size=2), None),
}


@pytest.mark.parametrize("case", list(UNPOOL_CASES))
def test_max_unpool_matches_torch(case):
  shape, kw, size = UNPOOL_CASES[case]
  def ours(x):
    pooled, indices = x.max_pool2d(**kw, return_indices=True)
    return pooled.max_unpool2d(indices, **kw, output_size=size)
  def theirs(x):
    return F.max_unpool2d(*F.max_pool2d(x, **kw, return_indices=True), **kw, output_size=size)
  grads_match(ours, theirs, values(shape))


def test_max_unpool_1d_and_3d():
  for dims, pool, unpool in ((1, F.max_pool1d, F.max_unpool1d), (3, F.max_pool3d, F.max_unpool3d)):
    x = values((2, 3) + (4,) * dims, dims)
    pooled, indices = getattr(Tensor(x), f"max_pool{dims}d")(2, return_indices=True)
    got = getattr(pooled, f"max_unpool{dims}d")(indices, 2)
    np.testing.assert_array_equal(got.numpy(), unpool(*pool(torch.from_numpy(x), 2, return_indices=True), 2).numpy())


# id -> (nbgrad function, torch function, input shape)
SHUFFLE_CASES = {
  "shuffle_by_2": (lambda x: x.pixel_shuffle(2), lambda x: F.pixel_shuffle(x, 2), (2, 8, 3, 2)),
  "shuffle_by_3_no_batch_dim": (lambda x: x.pixel_shuffle(3), lambda x: F.pixel_shuffle(x, 3), (9, 2, 3)),
  "shuffle_two_batch_dims_transposed": (lambda x: x.transpose(-1, -2).pixel_shuffle(2),
                                        lambda x: F.pixel_shuffle(x.transpose(-1, -2), 2), (2, 1, 4, 3, 2)),
  "unshuffle_by_2": (lambda x: x.pixel_unshuffle(2), lambda x: F.pixel_unshuffle(x, 2), (2, 3, 4, 6)),
  "unshuffle_by_3_no_batch_dim": (lambda x: x.pixel_unshuffle(3), lambda x: F.pixel_unshuffle(x, 3), (2, 3, 6)),
  "unshuffle_by_1": (lambda x: x.pixel_unshuffle(1), lambda x: F.pixel_unshuffle(x, 1), (2, 3, 4, 6)),
}


@pytest.mark.parametrize("case", list(SHUFFLE_CASES))
def test_pixel_shuffle_matches_torch(case):
  ours, theirs, shape = SHUFFLE_CASES[case]
  grads_match(ours, theirs, values(shape))


# -3, 3 and 0 are where hardsigmoid's, threshold's and the relus' pieces meet
ACTIVATION_INPUT = np.concatenate([np.linspace(-5, 5, 21), [-3.0, 3.0, 0.0, 1e-3, -1e-3, 0.5]]).reshape(3, 9)

# id -> (nbgrad function, torch function)
ACTIVATION_CASES = {
  "selu": (lambda x: x.selu(), F.selu),
  "hardsigmoid": (lambda x: x.hardsigmoid(), F.hardsigmoid),
  "threshold": (lambda x: x.threshold(0.4, -2.0), lambda x: F.threshold(x, 0.4, -2.0)),
  "rrelu_eval": (lambda x: x.rrelu(), lambda x: F.rrelu(x)),
  "rrelu_eval_bounds": (lambda x: x.rrelu(0.1, 0.7), lambda x: F.rrelu(x, 0.1, 0.7)),
  "glu_last_dim": (lambda x: x[:, 1:].glu(), lambda x: F.glu(x[:, 1:])),
  "glu_dim0": (lambda x: x[1:].glu(0), lambda x: F.glu(x[1:], 0)),
  "softsign": (lambda x: x.softsign(), F.softsign),
  "logsigmoid": (lambda x: x.logsigmoid(), F.logsigmoid),
}


@pytest.mark.parametrize("case", list(ACTIVATION_CASES))
def test_activation_matches_torch(case):
  ours, theirs = ACTIVATION_CASES[case]
  grads_match(ours, theirs, ACTIVATION_INPUT)


@pytest.mark.parametrize("op", ["selu", "hardsigmoid", "softsign"])
def test_activation_keeps_float32(op):
  x = ACTIVATION_INPUT.astype(np.float32)
  got = getattr(Tensor(x), op)()
  assert got.dtype == dtypes.float32
  np.testing.assert_allclose(got.numpy(), getattr(F, op)(torch.from_numpy(x)).numpy(), rtol=1e-6, atol=1e-6)


def test_threshold_keeps_an_int_dtype():
  x = np.arange(-3, 4, dtype=np.int32)
  got = Tensor(x).threshold(1, 7)
  assert got.dtype == dtypes.int32
  np.testing.assert_array_equal(got.numpy(), F.threshold(torch.from_numpy(x), 1, 7).numpy())


def test_rrelu_training_draws_a_slope_per_element_in_its_bounds_and_its_gradient_is_that_slope():
  """torch's draws cannot be matched bit for bit: the oracle is the definition. Negative elements get slopes in
  [lower, upper] spread over the range (their mean near the middle), positive ones pass, and the gradient of each
  negative element is its own slope (output / input), as torch's."""
  lower, upper = 0.1, 0.4
  x_val = -np.linspace(0.5, 2.0, 4000, dtype=np.float32).reshape(40, 100)
  x_val[::2] *= -1   # every other row positive
  x = Tensor(x_val, requires_grad=True)
  out = x.rrelu(lower, upper, training=True)
  out.sum().backward()
  got, grad = out.numpy(), x.grad.numpy()
  np.testing.assert_array_equal(got[::2], x_val[::2])
  np.testing.assert_array_equal(grad[::2], 1.0)
  slopes = got[1::2] / x_val[1::2]
  assert slopes.min() >= lower - 1e-6 and slopes.max() <= upper + 1e-6
  assert abs(slopes.mean() - (lower + upper) / 2) < 0.01 and slopes.std() > 0.08   # uniform: std 0.087
  np.testing.assert_allclose(grad[1::2], slopes, rtol=1e-6)
  fixed = Tensor(x_val).rrelu(0.25, 0.25, training=True)   # equal bounds: torch's leaky relu of that slope
  np.testing.assert_allclose(fixed.numpy(), F.rrelu(torch.from_numpy(x_val), 0.25, 0.25, training=True).numpy(), rtol=1e-6)


def t(*shape): return Tensor(np.zeros(shape, np.float32))


# id -> (call, exception, words the message names)
ERROR_CASES = {
  "padding_over_half_the_kernel": (lambda: t(1, 1, 6, 6).max_pool2d(3, padding=2), ValueError, ["padding (2, 2)", "(3, 3)"]),
  "negative_padding": (lambda: t(1, 1, 6, 6).avg_pool2d(3, padding=-1), ValueError, ["padding -1"]),
  "output_below_1": (lambda: t(1, 1, 2, 6).max_pool2d(3), ValueError, ["(1, 1, 2, 6)", "(0, 2)"]),
  "empty_pooled_dim": (lambda: t(1, 1, 0, 6).max_pool2d(2, padding=1), ValueError, ["(1, 1, 0, 6)"]),
  "kernel_length_of_a_1d_pool": (lambda: t(1, 1, 6).max_pool1d((2, 2)), ValueError, ["1-D", "(2, 2)"]),
  "unknown_keyword": (lambda: t(1, 1, 6).avg_pool1d(2, pad=1), TypeError, ["pad"]),
  "divisor_override_zero": (lambda: t(1, 1, 6, 6).avg_pool2d(2, divisor_override=0), ValueError, ["divisor_override", "0"]),
  "adaptive_output_zero": (lambda: t(1, 1, 6, 6).adaptive_avg_pool2d((0, 2)), ValueError, ["output_size (0, 2)"]),
  "adaptive_too_few_dims": (lambda: t(6).adaptive_max_pool2d(2), ValueError, ["(6,)"]),
  "adaptive_1d_two_sizes": (lambda: t(1, 6).adaptive_avg_pool1d((2, 2)), ValueError, ["(2, 2)"]),
  "unpool_indices_shape": (lambda: t(1, 1, 3, 3).max_unpool2d(Tensor(np.zeros((1, 1, 3, 2), np.int64)), 2), ValueError,
                           ["(1, 1, 3, 3)", "(1, 1, 3, 2)"]),
  "unpool_float_indices": (lambda: t(1, 1, 3, 3).max_unpool2d(t(1, 1, 3, 3), 2), TypeError, ["float32"]),
  "unpool_output_size_too_far": (lambda: t(1, 1, 3, 3).max_unpool2d(Tensor(np.zeros((1, 1, 3, 3), np.int64)), 2, output_size=(8, 6)),
                                 ValueError, ["(8, 6)", "(6, 6)"]),
  "pixel_shuffle_channels": (lambda: t(1, 6, 2, 2).pixel_shuffle(2), ValueError, ["(1, 6, 2, 2)", "C * 4"]),
  "pixel_shuffle_2d_input": (lambda: t(4, 2).pixel_shuffle(2), ValueError, ["(4, 2)"]),
  "pixel_unshuffle_height": (lambda: t(1, 1, 3, 4).pixel_unshuffle(2), ValueError, ["(1, 1, 3, 4)"]),
  "pixel_shuffle_factor_zero": (lambda: t(1, 4, 2, 2).pixel_shuffle(0), ValueError, ["upscale_factor", "0"]),
  "glu_odd_dim": (lambda: t(2, 3).glu(), ValueError, ["(2, 3)"]),
  "glu_scalar": (lambda: Tensor(1.0).glu(), ValueError, ["()"]),
  "rrelu_bounds_crossed": (lambda: t(3).rrelu(0.5, 0.2, training=True), ValueError, ["lower=0.5", "upper=0.2"]),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_bad_arguments_raise_when_the_op_is_built(case):
  call, error, words = ERROR_CASES[case]
  with pytest.raises(error) as info: call()
  for word in words: assert word in str(info.value), (word, str(info.value))
