"""nbgrad/sampling.py against torch.nn.functional, values and gradients: im2col / col2im (F.unfold / F.fold),
grid_sample and affine_grid, interpolate's modes and scale_factor; and gumbel_softmax's distribution. Shapes repeat
across rows so that rows share compiled kernels."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from against_torch import grads_match
from nbgrad import Tensor, dtypes


def values(shape, seed=0, dtype=np.float64):
  return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# applied to the input on both sides first: a transposed tensor is not contiguous
VIEWS = {None: lambda x: x, "transpose": lambda x: x.transpose(-1, -2)}
TOLERANCE = {np.float64: 1e-9, np.float32: 1e-4}


# ---- im2col / col2im
# id -> (input shape, view, dtype, kwargs): the same keywords on both sides
BLOCK_CASES = {
  "k2x3": ((2, 3, 5, 6), None, np.float64, dict(kernel_size=(2, 3))),
  "k3_dilation2_pad1_stride2x1": ((1, 2, 6, 7), None, np.float64, dict(kernel_size=3, dilation=2, padding=1, stride=(2, 1))),
  "tiling_blocks": ((2, 1, 4, 4), None, np.float64, dict(kernel_size=2, stride=2)),
  "batch_1_size_1_dim": ((1, 2, 1, 5), None, np.float64, dict(kernel_size=(1, 2), padding=(0, 1))),
  "no_batch_dim": ((3, 5, 6), None, np.float64, dict(kernel_size=2, padding=1, stride=2)),
  "transposed_input": ((2, 3, 6, 5), "transpose", np.float64, dict(kernel_size=(2, 3))),
  "float32": ((2, 3, 5, 6), None, np.float32, dict(kernel_size=(2, 3))),
}


@pytest.mark.parametrize("case", BLOCK_CASES)
def test_im2col_as_torch_unfold(case):
  shape, view, dtype, kwargs = BLOCK_CASES[case]
  grads_match(lambda x: VIEWS[view](x).im2col(**kwargs), lambda x: F.unfold(VIEWS[view](x), **kwargs), values(shape, dtype=dtype),
              tol=TOLERANCE[dtype])


@pytest.mark.parametrize("case", BLOCK_CASES)
def test_col2im_as_torch_fold(case):
  shape, view, dtype, kwargs = BLOCK_CASES[case]
  image = VIEWS[view](torch.zeros(shape))   # the row's im2col input: its size is the output size
  output_size = tuple(image.shape[-2:])
  columns = values(tuple(VIEWS[view](F.unfold(image, **kwargs)).shape), seed=1, dtype=dtype)   # stored so that the view gives columns
  grads_match(lambda c: VIEWS[view](c).col2im(output_size, **kwargs), lambda c: F.fold(VIEWS[view](c), output_size, **kwargs), columns,
              tol=TOLERANCE[dtype])


def test_im2col_of_one_spatial_dim_is_torch_unfold_of_a_unit_height():
  x = values((2, 3, 7))
  grads_match(lambda t: t.im2col((3,), dilation=2, padding=1), lambda t: F.unfold(t.unsqueeze(2), (1, 3), dilation=(1, 2), padding=(0, 1)), x)
  columns = values((2, 6, 5))
  grads_match(lambda c: c.col2im(6, (2,), stride=1), lambda c: F.fold(c, (1, 6), (1, 2)).squeeze(2), columns)


def test_im2col_and_col2im_refuse_bad_shapes():
  x = Tensor.ones(1, 2, 3, 3)
  with pytest.raises(ValueError, match=r"gives \(0, 0\) blocks"): x.im2col(4)
  with pytest.raises(ValueError, match=r"\(N, C, \*spatial\) or \(C, \*spatial\)"): Tensor.ones(3, 3).im2col(2)
  with pytest.raises(ValueError, match="kernel_size"): x.im2col(0)
  with pytest.raises(ValueError, match="padding"): x.im2col(2, padding=-1)
  with pytest.raises(ValueError, match=r"multiple of the 4 elements"): Tensor.ones(1, 6, 4).col2im((3, 3), 2)
  with pytest.raises(ValueError, match=r"hold 5 blocks.*\(2, 2\), 4 blocks"): Tensor.ones(1, 8, 5).col2im((3, 3), 2)
  with pytest.raises(ValueError, match="columns"): Tensor.ones(1, 1, 8, 4).col2im((3, 3), 2)


# ---- grid_sample and affine_grid
GRID_MODES = [(mode, padding, align) for mode in ("bilinear", "nearest", "bicubic") for padding in ("zeros", "border", "reflection")
              for align in (False, True)]


def grid(shape, seed=2, reach=1.3, dtype=np.float64):
  """Points (x, y[, z]) up to reach: some outside [-1, 1], where the padding mode decides."""
  return np.random.default_rng(seed).uniform(-reach, reach, shape).astype(dtype)


@pytest.mark.parametrize("mode,padding_mode,align_corners", GRID_MODES)
def test_grid_sample_as_torch(mode, padding_mode, align_corners):
  options = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
  grads_match(lambda x, g: x.grid_sample(g, **options), lambda x, g: F.grid_sample(x, g, **options), values((2, 3, 5, 6)), grid((2, 4, 3, 2)))


# the points of an even grid, on element centres, edges and borders: ties of nearest, the clip's gradient on a border
ON_THE_LINES = np.stack(np.meshgrid(*[np.array([-1.5, -1, -0.5, 0, 0.5, 1, 1.25])] * 2, indexing="ij"), -1)[None]

# id -> (input shape, grid, view, dtype, kwargs)
GRID_EDGE_CASES = {
  "batch_1_size_1_height": ((1, 2, 1, 4), grid((1, 3, 5, 2)), None, np.float64, dict(padding_mode="border", align_corners=True)),
  "single_element_reflection": ((1, 2, 1, 1), grid((1, 3, 5, 2)), None, np.float64, dict(padding_mode="reflection", align_corners=True)),
  "points_on_the_lines_zeros": ((1, 2, 3, 4), ON_THE_LINES, None, np.float64, dict(align_corners=True)),
  "points_on_the_lines_border": ((1, 2, 3, 4), ON_THE_LINES, None, np.float64, dict(padding_mode="border")),
  "points_on_the_lines_reflection": ((1, 2, 3, 4), ON_THE_LINES, None, np.float64, dict(padding_mode="reflection", align_corners=True)),
  "nearest_points_on_the_lines": ((1, 2, 3, 4), ON_THE_LINES, None, np.float64, dict(mode="nearest", padding_mode="reflection")),
  "far_outside_reflection": ((2, 3, 5, 6), grid((2, 4, 3, 2), reach=9.0), None, np.float64, dict(padding_mode="reflection")),
  "transposed_input": ((2, 3, 6, 5), grid((2, 4, 3, 2)), "transpose", np.float64, dict(padding_mode="border")),
  "float32": ((2, 3, 5, 6), grid((2, 4, 3, 2), dtype=np.float32), None, np.float32, dict()),
  "volume_trilinear_zeros": ((2, 2, 3, 4, 5), grid((2, 2, 3, 2, 3)), None, np.float64, dict()),
  "volume_trilinear_reflection_aligned": ((2, 2, 3, 4, 5), grid((2, 2, 3, 2, 3)), None, np.float64, dict(padding_mode="reflection", align_corners=True)),
  "volume_nearest_aligned": ((1, 2, 3, 4, 1), grid((1, 2, 3, 2, 3)), None, np.float64, dict(mode="nearest", align_corners=True)),
}


@pytest.mark.parametrize("case", GRID_EDGE_CASES)
def test_grid_sample_edge_cases_as_torch(case):
  shape, points, view, dtype, kwargs = GRID_EDGE_CASES[case]
  kwargs = {"align_corners": False, **kwargs}   # torch warns when it is left out
  grads_match(lambda x, g: VIEWS[view](x).grid_sample(g, **kwargs), lambda x, g: F.grid_sample(VIEWS[view](x), g, **kwargs),
              values(shape, dtype=dtype), points, tol=TOLERANCE[dtype])


@pytest.mark.filterwarnings("ignore:Since version 1.3.0")   # torch's note on unit sizes with align_corners
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 6), (2, 3, 2, 1, 5)], ids=str)
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_as_torch(size, align_corners):
  dims = len(size) - 2
  grads_match(lambda theta: theta.affine_grid(size, align_corners=align_corners),
              lambda theta: F.affine_grid(theta, size, align_corners=align_corners), values((size[0], dims, dims + 1)))


def test_identity_affine_grid_samples_the_input_itself():
  x = values((2, 3, 4, 5))
  identity = Tensor(np.broadcast_to(np.eye(2, 3), (2, 2, 3)).copy())
  for align_corners in (False, True):
    points = identity.affine_grid((2, 3, 4, 5), align_corners=align_corners)
    np.testing.assert_allclose(Tensor(x).grid_sample(points, align_corners=align_corners).numpy(), x, atol=1e-12)


def test_grid_sample_and_affine_grid_refuse_bad_input():
  x = Tensor.ones(2, 3, 4, 5)
  with pytest.raises(ValueError, match=r"needs a grid of 4 dims, \(2, \*out, 2\), got \(2, 3, 3\)"): x.grid_sample(Tensor.zeros(2, 3, 3))
  with pytest.raises(ValueError, match=r"got \(1, 3, 3, 2\)"): x.grid_sample(Tensor.zeros(1, 3, 3, 2))
  with pytest.raises(ValueError, match=r"got \(2, 3, 3, 3\)"): x.grid_sample(Tensor.zeros(2, 3, 3, 3))
  with pytest.raises(ValueError, match=r"\(N, C, H, W\) or \(N, C, D, H, W\), got \(3, 4, 5\)"): x[0].grid_sample(Tensor.zeros(3, 3, 2))
  with pytest.raises(ValueError, match="mode must be one of bilinear, nearest, bicubic, got 'area'"): x.grid_sample(Tensor.zeros(2, 3, 3, 2), mode="area")
  with pytest.raises(ValueError, match="padding_mode must be one of"): x.grid_sample(Tensor.zeros(2, 3, 3, 2), padding_mode="wrap")
  with pytest.raises(ValueError, match="bicubic mode takes a 4-D input"): Tensor.ones(1, 1, 2, 2, 2).grid_sample(Tensor.zeros(1, 1, 1, 1, 3), mode="bicubic")
  with pytest.raises(ValueError, match="non-empty spatial dims"): Tensor.ones(2, 3, 0, 5).grid_sample(Tensor.zeros(2, 3, 3, 2))
  theta = Tensor.zeros(2, 2, 3)
  with pytest.raises(ValueError, match=r"theta of shape \(2, 3, 4\), got \(2, 2, 3\)"): theta.affine_grid((2, 1, 3, 4, 5))
  with pytest.raises(ValueError, match=r"theta of shape \(3, 2, 3\)"): theta.affine_grid((3, 1, 4, 5))
  with pytest.raises(ValueError, match="positive ints"): theta.affine_grid((2, 1, 0, 5))
  with pytest.raises(ValueError, match="positive ints"): theta.affine_grid((2, 1, 5))


# ---- interpolate
# id -> (input shape, dtype, kwargs): the same keywords on both sides
INTERPOLATE_CASES = {
  "bicubic_size": ((2, 3, 4, 5), np.float64, dict(size=(7, 3), mode="bicubic")),
  "bicubic_size_aligned": ((2, 3, 4, 5), np.float64, dict(size=(7, 3), mode="bicubic", align_corners=True)),
  "bicubic_factor": ((2, 3, 4, 5), np.float64, dict(scale_factor=1.7, mode="bicubic")),
  "bicubic_factors_aligned": ((2, 3, 4, 5), np.float64, dict(scale_factor=(0.6, 2.3), mode="bicubic", align_corners=True)),
  "bicubic_factor_recomputed": ((2, 3, 4, 5), np.float64, dict(scale_factor=1.7, mode="bicubic", recompute_scale_factor=True)),
  "bicubic_batch_1_size_1_dim": ((1, 2, 1, 5), np.float64, dict(size=(3, 2), mode="bicubic")),
  "bicubic_float32": ((2, 3, 4, 5), np.float32, dict(size=(7, 3), mode="bicubic")),
  "area_down": ((2, 3, 5, 7), np.float64, dict(size=(2, 3), mode="area")),
  "area_factor": ((2, 3, 5, 7), np.float64, dict(scale_factor=0.5, mode="area")),
  "area_1d_up": ((2, 3, 5), np.float64, dict(size=8, mode="area")),
  "bilinear_factor": ((2, 3, 4, 5), np.float64, dict(scale_factor=1.7, mode="bilinear")),
  "bilinear_factor_recomputed": ((2, 3, 4, 5), np.float64, dict(scale_factor=(1.7, 0.7), mode="bilinear", recompute_scale_factor=True)),
  "bilinear_factor_aligned": ((2, 3, 4, 5), np.float64, dict(scale_factor=1.7, mode="bilinear", align_corners=True)),
  "linear_factor_same_size_copies": ((2, 3, 5), np.float64, dict(scale_factor=1.1, mode="linear")),
  "trilinear_factor": ((1, 2, 2, 3, 4), np.float64, dict(scale_factor=(1.5, 0.7, 2.0), mode="trilinear")),
  "bilinear_2x_float32": ((2, 3, 4, 5), np.float32, dict(scale_factor=2, mode="bilinear")),
  "bilinear_antialias_down": ((2, 3, 9, 11), np.float64, dict(size=(4, 3), mode="bilinear", antialias=True)),
  "bicubic_antialias_down_and_up": ((1, 2, 9, 4), np.float64, dict(size=(3, 7), mode="bicubic", antialias=True)),
  "linear_down_one_output": ((2, 3, 6), np.float64, dict(size=1, mode="linear")),
  "nearest_factor_1d": ((2, 3, 8), np.float32, dict(scale_factor=2.683, mode="nearest")),
  "nearest_factor_2d_kept_and_doubled_dims": ((2, 3, 4, 4), np.float32, dict(scale_factor=(1.1, 2.144), mode="nearest")),
  "nearest_factor_2d": ((2, 3, 8, 4), np.float64, dict(scale_factor=(2.683, 1.3), mode="nearest")),
  "nearest_factor_3d": ((1, 2, 4, 3, 5), np.float64, dict(scale_factor=(1.3, 1.7, 0.6), mode="nearest")),
  "nearest_exact_factor": ((2, 3, 4, 5), np.float64, dict(scale_factor=(2.2, 0.7), mode="nearest-exact")),
}


@pytest.mark.parametrize("case", INTERPOLATE_CASES)
def test_interpolate_as_torch(case):
  shape, dtype, kwargs = INTERPOLATE_CASES[case]
  exact = kwargs["mode"].startswith("nearest")
  grads_match(lambda x: x.interpolate(**kwargs), lambda x: F.interpolate(x, **kwargs), values(shape, dtype=dtype), tol=0 if exact else TOLERANCE[dtype])


# id -> (input shape, dtype, kwargs). A factor that keeps a size (or doubles it, nearest) moves the points in torch's
# forward, but torch's backward copies the gradient there (halves the indices) as if it had not; and its float32
# nearest-exact forward rounds scale (i + 1/2) - 1/2 once (a fused multiply-add: 20.5 * (2 / 41) - 0.5 ties up to
# 0.5, read at 1), its backward twice (read at 0).
ADJOINT_CASES = {
  "bicubic_kept_size": ((1, 1, 4, 5), np.float64, dict(scale_factor=1.1, mode="bicubic")),
  "nearest_1d_doubled_size": ((1, 1, 2), np.float64, dict(scale_factor=2.17, mode="nearest")),
  "nearest_3d_kept_size": ((1, 1, 4, 3, 2), np.float64, dict(scale_factor=(1.1, 2.1, 0.6), mode="nearest")),
  "nearest_exact_float32_tie": ((1, 1, 2), np.float32, dict(size=41, mode="nearest-exact")),
}


@pytest.mark.parametrize("case", ADJOINT_CASES)
def test_interpolate_gradient_is_the_adjoint_of_torchs_forward(case):
  """The values as torch's; the gradient the transpose of the forward map, built from torch's forward of each unit input."""
  shape, dtype, options = ADJOINT_CASES[case]
  x = values(shape, dtype=dtype)
  ours = Tensor(x, requires_grad=True)
  out = ours.interpolate(**options)
  tol = 0 if options["mode"].startswith("nearest") else TOLERANCE[dtype]
  np.testing.assert_allclose(out.numpy(), F.interpolate(torch.tensor(x), **options).numpy(), rtol=tol, atol=tol)
  weights = values(out.shape, seed=1)
  (out * Tensor(weights)).sum().backward()
  columns = [F.interpolate(torch.tensor(unit.reshape(shape)), **options).numpy().reshape(-1) for unit in np.eye(x.size)]
  np.testing.assert_allclose(ours.grad.numpy().reshape(-1), np.stack(columns) @ weights.reshape(-1), rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def test_interpolate_of_half_images_sums_in_float32_and_rounds_once():
  """torch's: a 16-bit image's taps are weighed and added in float32, rounded to the type at the end."""
  x = values((2, 3, 5, 6)).astype(np.float16)
  ours = Tensor(x).interpolate(scale_factor=1.7, mode="bilinear")
  expected = F.interpolate(torch.tensor(x), scale_factor=1.7, mode="bilinear")
  assert ours.dtype == dtypes.float16
  np.testing.assert_array_equal(ours.numpy(), F.interpolate(torch.tensor(x).float(), scale_factor=1.7, mode="bilinear").half().numpy())
  np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.uint8])
def test_nearest_interpolation_copies_values_bit_for_bit(mode, dtype):
  """Nearest reads are copies, as torch's: -0.0 keeps its sign, infinities and NaN stay (floats are read as taps of
  weight 1, other dtypes gathered)."""
  special = [-0.0, 1.5, np.inf, -np.inf, np.nan, -2.0] if dtype != np.uint8 else [0, 255, 3, 128, 127, 5]
  x = np.array(special * 2, dtype).reshape(1, 2, 6)
  ours, theirs = Tensor(x).interpolate(size=11, mode=mode).numpy(), F.interpolate(torch.tensor(x), size=11, mode=mode).numpy()
  assert ours.dtype == theirs.dtype
  np.testing.assert_array_equal(ours.view(f"u{x.itemsize}"), theirs.view(f"u{x.itemsize}"))


def test_adjoint_taps_transpose_the_resampling_matrix():
  """The table a gradient goes back through is the transposed map, a tap of -1 (antialiasing's padding, none read)
  counting for nothing either way."""
  from nbgrad.sampling import adjoint_taps
  taps = np.array([[0, 1, -1], [1, 2, 3], [3, -1, -1]])
  weights = np.array([[0.5, 0.5, 9.0], [0.25, 0.5, 0.25], [1.0, 9.0, 9.0]])
  matrix = np.zeros((3, 5))
  for i, t in np.argwhere(taps >= 0): matrix[i, taps[i, t]] += weights[i, t]
  back_taps, back_weights = adjoint_taps(taps, weights, 5)
  transposed = np.zeros((5, 3))
  for j, t in np.argwhere(back_taps >= 0): transposed[j, back_taps[j, t]] += back_weights[j, t]
  np.testing.assert_array_equal(transposed, matrix.T)
  assert back_taps[4].tolist() == [-1, -1] and back_taps[1].tolist() == [0, 1]   # an input no output reads; output order


def test_interpolate_keeps_its_positional_form_and_int_types():
  pixels = np.arange(12, dtype=np.uint8).reshape(1, 1, 3, 4)
  expected = F.interpolate(torch.tensor(pixels), scale_factor=1.5, mode="nearest").numpy()
  np.testing.assert_array_equal(Tensor(pixels).interpolate(None, "nearest", False, 1.5).numpy(), expected)
  x = values((1, 2, 5))
  np.testing.assert_allclose(Tensor(x).interpolate((7,), "linear", True).numpy(),
                             F.interpolate(torch.tensor(x), size=7, mode="linear", align_corners=True).numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode, antialias, align_corners", [("bilinear", False, False), ("bilinear", True, False), ("bilinear", False, True),
                                                         ("bicubic", False, False), ("bicubic", True, False), ("bicubic", False, True)])
def test_interpolate_of_uint8_images_gives_uint8_as_torch(mode, antialias, align_corners):
  """An integer image keeps its dtype: resampled a dim at a time from the last, rounded (halves up) and clamped after
  each, as torch's uint8 kernels do in fixed point; their values differ from these by 1 at a few percent of the
  pixels at most. Other integer dtypes (which torch refuses) and the linear and area modes round the same way."""
  pixels = np.random.default_rng(3).integers(0, 256, (2, 3, 7, 9)).astype(np.uint8)
  for size in ((11, 5), (3, 13)):
    ours = Tensor(pixels).interpolate(size, mode, align_corners or None, antialias=antialias)
    theirs = F.interpolate(torch.tensor(pixels), size=size, mode=mode, align_corners=align_corners or None, antialias=antialias).numpy()
    assert ours.dtype == dtypes.uint8
    differences = np.abs(ours.numpy().astype(np.int64) - theirs)
    assert differences.max() <= 1 and (differences > 0).mean() < 0.05, (differences.max(), (differences > 0).mean())
  signal = np.array([[[-100, 27, 100]]], np.int8)
  resampled = Tensor(signal).interpolate((6,), "linear")
  expected = F.interpolate(torch.tensor(signal, dtype=torch.float64), size=6, mode="linear").numpy()
  assert resampled.dtype == dtypes.int8
  np.testing.assert_array_equal(resampled.numpy(), np.floor(expected + 0.5))
  assert Tensor(pixels).interpolate((3, 4), "area").dtype == dtypes.uint8


def test_interpolate_refuses_bad_arguments():
  x = Tensor.ones(1, 2, 4, 5)
  with pytest.raises(ValueError, match="exactly one of size and scale_factor"): x.interpolate()
  with pytest.raises(ValueError, match="exactly one of size and scale_factor"): x.interpolate((2, 2), scale_factor=2)
  for factor in (0, -1.5, float("inf"), True, "2"):
    with pytest.raises(ValueError, match="positive finite"): x.interpolate(scale_factor=factor)
  with pytest.raises(ValueError, match=r"gives the sizes \(0, 1\)"): x.interpolate(scale_factor=0.2)
  with pytest.raises(ValueError, match="single interpolate scale_factor"): Tensor.ones(4, 5).interpolate(scale_factor=2)
  with pytest.raises(ValueError, match="bilinear interpolation resamples 2 dims"): x.interpolate((3,), mode="bilinear")
  with pytest.raises(ValueError, match="trilinear interpolation resamples 3 dims"): x.interpolate(scale_factor=2, mode="trilinear")
  with pytest.raises(ValueError, match="align_corners is an option of the modes"): x.interpolate((3, 3), mode="nearest", align_corners=True)
  with pytest.raises(ValueError, match="mode must be one of"): x.interpolate((3, 3), mode="lanczos")
  with pytest.raises(TypeError, match="interpolate size"): x.interpolate((3.5, 3))


# ---- gumbel_softmax
def test_gumbel_softmax_soft_rows_are_distributions_and_hard_rows_their_one_hot_argmax():
  logits = Tensor(values((6, 5), dtype=np.float32), requires_grad=True)
  Tensor.manual_seed(3)
  soft = logits.gumbel_softmax(tau=0.5)
  Tensor.manual_seed(3)
  hard = logits.gumbel_softmax(tau=0.5, hard=True)
  assert soft.shape == hard.shape == (6, 5) and soft.dtype == hard.dtype == dtypes.float32
  np.testing.assert_allclose(soft.numpy().sum(-1), 1, rtol=1e-6)
  np.testing.assert_array_equal(hard.numpy(), np.eye(5, dtype=np.float32)[soft.numpy().argmax(-1)])
  # straight through: the one-hot rows carry the soft rows' gradient
  weights = Tensor(values((6, 5), seed=4))
  (soft * weights).sum().backward()
  soft_grad = logits.grad.numpy()
  logits.grad = None
  (hard * weights).sum().backward()
  np.testing.assert_allclose(logits.grad.numpy(), soft_grad, rtol=1e-6, atol=1e-7)


def test_gumbel_softmax_picks_classes_as_often_as_softmax_says():
  probabilities = np.array([0.5, 0.3, 0.15, 0.05])
  logits = Tensor(np.log(np.broadcast_to(probabilities[:, None], (4, 20000))).copy())   # the classes along dim 0
  Tensor.manual_seed(5)
  picks = logits.gumbel_softmax(tau=2.0, hard=True, dim=0).numpy()
  assert picks.dtype == np.float64 and (picks.sum(0) == 1).all()
  np.testing.assert_allclose(picks.mean(1), probabilities, atol=0.015)   # the argmax of logits + Gumbel noise: tau changes nothing


def test_gumbel_softmax_refuses_bad_tau_and_dim():
  with pytest.raises(ValueError, match="tau must be positive, got 0"): Tensor.ones(2, 3).gumbel_softmax(tau=0)
  with pytest.raises(TypeError, match="tau must be a real number"): Tensor.ones(2, 3).gumbel_softmax(tau="1")
  with pytest.raises(IndexError): Tensor.ones(2, 3).gumbel_softmax(dim=2)
