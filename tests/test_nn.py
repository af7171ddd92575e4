"""nbgrad.nn layers against torch.nn: each layer's parameters are copied into the torch module, then the output and
the gradients of the input and of every parameter are compared; initialization bounds; bad input."""
import math
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes, nn


def rand(*shape, seed=0):
  return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def copy_parameters(ours, theirs):
  """torch module's parameters (and BatchNorm's running statistics) set to the nbgrad layer's values."""
  with torch.no_grad():
    for name in ("weight", "bias", "running_mean", "running_var"):
      mine = getattr(ours, name, None)
      if mine is not None and getattr(theirs, name) is not None: getattr(theirs, name).copy_(torch.from_numpy(mine.numpy()))


# (id, nbgrad layer maker, torch module maker, input shape)
LAYERS = [
  ("linear", lambda: nn.Linear(5, 3), lambda: torch.nn.Linear(5, 3), (4, 5)),
  ("linear_3d_input_no_bias", lambda: nn.Linear(5, 3, bias=False), lambda: torch.nn.Linear(5, 3, bias=False), (2, 4, 5)),
  ("conv2d", lambda: nn.Conv2d(3, 4, 3), lambda: torch.nn.Conv2d(3, 4, 3), (2, 3, 7, 7)),
  ("conv2d_stride_padding", lambda: nn.Conv2d(3, 4, (3, 2), stride=2, padding=1), lambda: torch.nn.Conv2d(3, 4, (3, 2), stride=2, padding=1), (2, 3, 7, 7)),
  ("conv2d_groups_dilation", lambda: nn.Conv2d(4, 6, 3, dilation=2, groups=2, bias=False),
   lambda: torch.nn.Conv2d(4, 6, 3, dilation=2, groups=2, bias=False), (1, 4, 8, 8)),
  ("conv1d", lambda: nn.Conv1d(3, 2, 3, padding=1), lambda: torch.nn.Conv1d(3, 2, 3, padding=1), (2, 3, 9)),
  ("conv_transpose2d", lambda: nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
   lambda: torch.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 5, 5)),
  ("conv_transpose2d_groups", lambda: nn.ConvTranspose2d(4, 6, 2, groups=2), lambda: torch.nn.ConvTranspose2d(4, 6, 2, groups=2), (1, 4, 3, 3)),
  ("conv_transpose1d", lambda: nn.ConvTranspose1d(2, 3, 4, stride=2), lambda: torch.nn.ConvTranspose1d(2, 3, 4, stride=2), (2, 2, 6)),
  ("conv2d_unbatched", lambda: nn.Conv2d(3, 4, 3, padding=1), lambda: torch.nn.Conv2d(3, 4, 3, padding=1), (3, 6, 5)),
  ("conv_transpose2d_unbatched", lambda: nn.ConvTranspose2d(3, 2, 3, stride=2), lambda: torch.nn.ConvTranspose2d(3, 2, 3, stride=2), (3, 4, 4)),
  *((f"conv2d_padding_mode_{mode}", lambda mode=mode: nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode),
     lambda mode=mode: torch.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode), (2, 2, 5, 6)) for mode in ("reflect", "replicate", "circular")),
  ("conv1d_circular_same_unbatched", lambda: nn.Conv1d(2, 3, 4, padding="same", padding_mode="circular"),
   lambda: torch.nn.Conv1d(2, 3, 4, padding="same", padding_mode="circular"), (2, 9)),
  ("conv2d_reflect_strided", lambda: nn.Conv2d(2, 2, 3, stride=2, padding=1, padding_mode="reflect"),
   lambda: torch.nn.Conv2d(2, 2, 3, stride=2, padding=1, padding_mode="reflect"), (1, 2, 7, 7)),
  ("layernorm", lambda: nn.LayerNorm(6), lambda: torch.nn.LayerNorm(6), (3, 4, 6)),
  ("layernorm_no_bias", lambda: nn.LayerNorm(6, bias=False), lambda: torch.nn.LayerNorm(6, bias=False), (3, 6)),
  ("layernorm_two_axes", lambda: nn.LayerNorm((4, 6)), lambda: torch.nn.LayerNorm((4, 6)), (3, 4, 6)),
  ("layernorm_no_affine", lambda: nn.LayerNorm(6, elementwise_affine=False), lambda: torch.nn.LayerNorm(6, elementwise_affine=False), (3, 6)),
  ("groupnorm", lambda: nn.GroupNorm(2, 6), lambda: torch.nn.GroupNorm(2, 6), (2, 6, 3, 3)),
  ("groupnorm_1d_no_affine", lambda: nn.GroupNorm(3, 6, affine=False), lambda: torch.nn.GroupNorm(3, 6, affine=False), (2, 6, 5)),
  ("instancenorm", lambda: nn.InstanceNorm(3), lambda: torch.nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
]


def randomize(layer, seed=1):
  """Parameters that are not all ones and zeros, so a weight and a bias cannot stand in for each other."""
  for name in ("weight", "bias"):
    p = getattr(layer, name, None)
    if p is not None: p.replace(Tensor(rand(*p.shape, seed=seed) * 0.5 + (1 if name == "weight" else 0)))
    seed += 1


@pytest.mark.parametrize("make_ours, make_theirs, shape", [row[1:] for row in LAYERS], ids=[row[0] for row in LAYERS])
def test_layer_forward_and_gradients_match_torch(make_ours, make_theirs, shape):
  ours, theirs = make_ours(), make_theirs()
  randomize(ours)
  copy_parameters(ours, theirs)
  x, out_grad = rand(*shape, seed=3), None
  mine_x, their_x = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
  mine, reference = ours(mine_x), theirs(their_x)
  out_grad = rand(*reference.shape, seed=4)
  np.testing.assert_allclose(mine.numpy(), reference.detach().numpy(), rtol=1e-4, atol=1e-4)
  params = [p for p in (getattr(ours, "weight", None), getattr(ours, "bias", None)) if p is not None]
  for p in params: p.requires_grad = True
  (ours(mine_x) * Tensor(out_grad)).sum().backward()
  (reference * torch.from_numpy(out_grad)).sum().backward()
  np.testing.assert_allclose(mine_x.grad.numpy(), their_x.grad.numpy(), rtol=1e-4, atol=1e-4)
  for name in ("weight", "bias"):
    if getattr(ours, name, None) is not None:
      np.testing.assert_allclose(getattr(ours, name).grad.numpy(), getattr(theirs, name).grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=name)


def test_layernorm2d_is_layernorm_over_channels():
  ours, theirs = nn.LayerNorm2d(3), torch.nn.LayerNorm(3)
  randomize(ours)
  copy_parameters(ours, theirs)
  x = rand(2, 3, 4, 5)
  reference = theirs(torch.from_numpy(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
  np.testing.assert_allclose(ours(Tensor(x)).numpy(), reference.detach().numpy(), rtol=1e-4, atol=1e-5)


# ---- BatchNorm: batch statistics and running statistics while training, the running ones after
BATCHNORMS = [
  ("2d", lambda: nn.BatchNorm2d(3), lambda: torch.nn.BatchNorm2d(3), (4, 3, 5, 5)),
  ("1d_on_a_matrix", lambda: nn.BatchNorm1d(3, momentum=0.3), lambda: torch.nn.BatchNorm1d(3, momentum=0.3), (6, 3)),
  ("1d_on_sequences", lambda: nn.BatchNorm1d(3, eps=1e-3), lambda: torch.nn.BatchNorm1d(3, eps=1e-3), (4, 3, 7)),
  ("3d_no_affine", lambda: nn.BatchNorm3d(2, affine=False), lambda: torch.nn.BatchNorm3d(2, affine=False), (2, 2, 3, 3, 3)),
  ("no_running_statistics", lambda: nn.BatchNorm2d(3, track_running_stats=False),
   lambda: torch.nn.BatchNorm2d(3, track_running_stats=False), (4, 3, 2, 2)),
  ("cumulative_average", lambda: nn.BatchNorm2d(3, momentum=None), lambda: torch.nn.BatchNorm2d(3, momentum=None), (4, 3, 2, 2)),
]


@pytest.mark.parametrize("make_ours, make_theirs, shape", [row[1:] for row in BATCHNORMS], ids=[row[0] for row in BATCHNORMS])
def test_batchnorm_training_then_evaluation_matches_torch(make_ours, make_theirs, shape):
  ours, theirs = make_ours(), make_theirs()
  randomize(ours)
  copy_parameters(ours, theirs)
  theirs.train()
  with Tensor.train():
    for step in range(2):
      x = rand(*shape, seed=10 + step) * 2 + 1
      mine_x, their_x = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
      mine, reference = ours(mine_x), theirs(their_x)
      np.testing.assert_allclose(mine.numpy(), reference.detach().numpy(), rtol=1e-4, atol=1e-4)
      out_grad = rand(*shape, seed=20 + step)
      (mine * Tensor(out_grad)).sum().backward()
      (reference * torch.from_numpy(out_grad)).sum().backward()
      np.testing.assert_allclose(mine_x.grad.numpy(), their_x.grad.numpy(), rtol=1e-4, atol=1e-4)
  if theirs.track_running_stats:
    np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-5, atol=1e-6)
    assert ours.num_batches_tracked.numpy().tolist() == [2.0]
  theirs.eval()
  x = rand(*shape, seed=30)
  # evaluation reads the running statistics, also without track_running_stats (as tinygrad; torch uses the batch's)
  reference = theirs(torch.from_numpy(x)) if theirs.track_running_stats else torch.nn.functional.batch_norm(
    torch.from_numpy(x), torch.zeros(shape[1]), torch.ones(shape[1]), theirs.weight, theirs.bias, eps=theirs.eps)
  np.testing.assert_allclose(ours(Tensor(x)).numpy(), reference.detach().numpy(), rtol=1e-4, atol=1e-4)


def test_batchnorm_of_float64_batches_moves_its_float32_statistics_as_torch():
  ours, theirs = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3).double()
  x = rand(4, 3, 2, 2).astype(np.float64) * 3 + 1
  with Tensor.train(): mine = ours(Tensor(x))
  reference = theirs(torch.from_numpy(x))
  assert mine.dtype == dtypes.float64 and ours.running_mean.dtype == dtypes.float32
  np.testing.assert_allclose(mine.numpy(), reference.detach().numpy(), rtol=1e-12, atol=1e-12)   # batch statistics
  np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), rtol=1e-6)
  np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-6)


@pytest.mark.parametrize("shape", [(1, 3), (1, 3, 1, 1)], ids=["1d", "2d"])
def test_batchnorm_training_on_one_value_per_channel_raises_as_torch_and_changes_nothing(shape):
  ours, theirs = nn.BatchNorm(3), torch.nn.BatchNorm2d(3) if len(shape) == 4 else torch.nn.BatchNorm1d(3)
  with pytest.raises(ValueError, match="more than 1 value per channel"): theirs(torch.ones(shape))
  with Tensor.train(), pytest.raises(ValueError, match=r"more than 1 value per channel, got an input of shape \(1, 3"):
    ours(Tensor.ones(*shape))
  assert ours.running_var.tolist() == [1.0] * 3 and ours.num_batches_tracked.tolist() == [0.0]


@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 2, 2)], ids=["1d", "2d"])
def test_batchnorm_of_an_empty_batch_leaves_its_running_statistics_as_torch(shape):
  """An empty batch has no statistics: torch leaves the running ones and counts the batch (they became NaN)."""
  ours, theirs = nn.BatchNorm(3), torch.nn.BatchNorm2d(3) if len(shape) == 4 else torch.nn.BatchNorm1d(3)
  with Tensor.train(): mine = ours(Tensor(np.zeros(shape, np.float32)))
  reference = theirs(torch.zeros(shape))
  assert mine.shape == tuple(reference.shape)
  for name in ("running_mean", "running_var", "num_batches_tracked"):
    np.testing.assert_array_equal(getattr(ours, name).numpy().reshape(-1), getattr(theirs, name).numpy().reshape(-1))


def test_batchnorm_momentum_must_be_a_number_or_none():
  with pytest.raises(TypeError, match="momentum must be a number or None, got str"): nn.BatchNorm(3, momentum="0.1")


@pytest.mark.parametrize("make_ours, make_theirs", [(lambda: nn.GroupNorm(1, 3), lambda: torch.nn.GroupNorm(1, 3)),
                                                    (lambda: nn.InstanceNorm(3), lambda: torch.nn.GroupNorm(3, 3))],   # torch's own fails
                         ids=["group_norm", "instance_norm"])
def test_group_and_instance_norm_of_an_empty_batch_are_empty_as_torch(make_ours, make_theirs):
  x = Tensor.zeros(0, 3, 4, requires_grad=True)
  out = make_ours()(x)
  assert out.shape == tuple(make_theirs()(torch.zeros(0, 3, 4)).shape) == (0, 3, 4)
  out.sum().backward()
  assert x.grad.shape == (0, 3, 4)


def test_batchnorm_gradients_of_weight_and_bias_match_torch():
  ours, theirs = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
  randomize(ours)
  copy_parameters(ours, theirs)
  ours.weight.requires_grad = ours.bias.requires_grad = True
  x, out_grad = rand(4, 3, 3, 3), rand(4, 3, 3, 3, seed=5)
  with Tensor.train(): (ours(Tensor(x)) * Tensor(out_grad)).sum().backward()
  (theirs(torch.from_numpy(x)) * torch.from_numpy(out_grad)).sum().backward()
  np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(ours.bias.grad.numpy(), theirs.bias.grad.numpy(), rtol=1e-4, atol=1e-4)


# ---- Embedding
def test_embedding_reads_rows_and_sums_their_gradients_like_torch():
  ours = nn.Embedding(7, 4)
  weight = ours.weight.numpy()
  tokens = np.array([[1, 3, 3], [6, 0, 1]], np.int32)
  ours.weight.requires_grad = True
  out = ours(Tensor(tokens))
  theirs = torch.tensor(weight, requires_grad=True)
  reference = torch.nn.functional.embedding(torch.from_numpy(tokens).long(), theirs)
  np.testing.assert_array_equal(out.numpy(), reference.detach().numpy())
  out_grad = rand(2, 3, 4)
  (out * Tensor(out_grad)).sum().backward()
  (reference * torch.from_numpy(out_grad)).sum().backward()
  np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_embedding_of_float_indices_reads_the_row_each_value_equals_as_tinygrad():
  """tinygrad 0.9.0 compares the values with the row numbers: 3.0 reads row 3; 2.5, -1.0, 7.0 (past the table) and
  nan read zeros. The weight's gradient goes to the rows read."""
  ours = nn.Embedding(5, 3)
  ours.weight.requires_grad = True
  weight = ours.weight.numpy()
  idx = np.array([[3.0, 2.5, 0.0], [-1.0, 7.0, np.nan]], np.float32)
  whole = (idx >= 0) & (idx < 5) & (idx == np.trunc(idx))
  expected = np.where(whole[..., None], weight[np.where(whole, idx, 0).astype(np.int64)], 0)
  out = ours(Tensor(idx))
  np.testing.assert_array_equal(out.numpy(), expected)
  out.sum().backward()
  np.testing.assert_array_equal(ours.weight.grad.numpy(), np.eye(5, dtype=np.float32)[[3, 0]].sum(0)[:, None].repeat(3, 1))


@pytest.mark.parametrize("vocab", [5, 300], ids=["small", "past_int8"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
def test_embedding_of_int_indices_outside_the_table_reads_zeros_as_tinygrad(dtype, vocab):
  """tinygrad 0.9.0 compares the indices with the row numbers, so -1 reads zeros, not the last row (torch raises);
  also where the table has more rows than the index dtype can count."""
  ours = nn.Embedding(vocab, 3)
  ours.weight.requires_grad = True
  weight = ours.weight.numpy()
  idx = np.array([4, 5, 0, -1, 100, -128, 127] if np.dtype(dtype).kind == "i" else [4, 5, 0, 255, 100, 2, 127], dtype)
  inside = (idx >= 0) & (idx < vocab)
  out = ours(Tensor(idx))
  np.testing.assert_array_equal(out.numpy(), np.where(inside[:, None], weight[np.where(inside, idx, 0)], 0))
  out.sum().backward()
  expected_grad = np.zeros((vocab, 3), np.float32)
  np.add.at(expected_grad, idx[inside].astype(np.int64), 1)
  np.testing.assert_array_equal(ours.weight.grad.numpy(), expected_grad)


def test_embedding_of_no_tokens_is_empty():
  assert nn.Embedding(5, 3)(Tensor(np.zeros((2, 0), np.int32))).shape == (2, 0, 3)


# ---- initialization: torch's bounds, drawn from nbgrad's seeded generator
@pytest.mark.parametrize("make, fan_in", [(lambda: nn.Linear(300, 200), 300), (lambda: nn.Conv2d(16, 32, 3), 16 * 9),
                                          (lambda: nn.ConvTranspose2d(16, 8, 3, groups=2), 4 * 9)],
                         ids=["linear", "conv2d", "conv_transpose2d"])
def test_weights_and_biases_are_uniform_within_torch_bounds(make, fan_in):
  Tensor.manual_seed(1)
  layer = make()
  bound = 1 / math.sqrt(fan_in)   # kaiming_uniform(a=sqrt(5)): sqrt(6 / ((1 + 5) * fan_in))
  weight, bias = np.abs(layer.weight.numpy()), np.abs(layer.bias.numpy())
  assert weight.max() <= bound and weight.max() > 0.95 * bound and abs(weight.mean() - bound / 2) < 0.05 * bound
  assert bias.max() <= bound and bias.min() >= 0
  Tensor.manual_seed(1)
  np.testing.assert_array_equal(make().weight.numpy(), layer.weight.numpy())


def test_new_norm_layers_start_at_identity():
  for layer in (nn.LayerNorm(4), nn.GroupNorm(2, 4), nn.InstanceNorm(4), nn.BatchNorm2d(4)):
    np.testing.assert_array_equal(layer.weight.numpy(), np.ones(4, np.float32))
    np.testing.assert_array_equal(layer.bias.numpy(), np.zeros(4, np.float32))
  assert nn.Embedding(10, 6).weight.shape == (10, 6)

@pytest.mark.parametrize("make_ours, make_theirs, shape", [row[1:] for row in LAYERS if row[0] in ("linear", "conv2d", "conv_transpose2d",
                         "layernorm_no_affine", "groupnorm")], ids=["linear", "conv2d", "conv_transpose2d", "layernorm_no_affine", "groupnorm"])
def test_a_layer_called_with_a_numpy_array_computes_what_torch_computes(make_ours, make_theirs, shape):
  ours, theirs = make_ours(), make_theirs()
  copy_parameters(ours, theirs)
  x = rand(*shape, seed=5)
  np.testing.assert_allclose(ours(x).numpy(), theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-4)


def test_a_batchnorm_called_with_a_numpy_array_computes_what_torch_computes():
  ours, theirs = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
  x = rand(4, 3, 2, 2, seed=6)
  with Tensor.train(): mine = ours(x)
  np.testing.assert_allclose(mine.numpy(), theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


# ---- bad input: raised when the layer is made or called, naming the sizes
BAD = [
  ("conv_groups", lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, "groups=2"),
  ("conv_kernel", lambda: nn.Conv2d(3, 4, 0), ValueError, "kernel_size"),
  ("groupnorm_groups", lambda: nn.GroupNorm(4, 6), ValueError, "num_groups=4"),
  ("layernorm_shape", lambda: nn.LayerNorm(5)(Tensor.ones(2, 4)), ValueError, r"\(5,\)"),
  ("batchnorm_channels", lambda: nn.BatchNorm2d(3)(Tensor.ones(2, 4, 2, 2)), ValueError, "axis 1 must be 3"),
  ("groupnorm_channels", lambda: nn.GroupNorm(2, 6)(Tensor.ones(2, 4, 2)), ValueError, "GroupNorm of 6 channels"),
  ("instancenorm_channels", lambda: nn.InstanceNorm(3)(Tensor.ones(2, 4, 2)), ValueError, "InstanceNorm of 3 channels"),
  ("linear_features", lambda: nn.Linear(5, 3)(Tensor.ones(2, 4)), ValueError, "5"),
  ("linear_of_a_list", lambda: nn.Linear(2, 3)([[1.0, 2.0]]), TypeError, "Linear takes a Tensor"),
  ("conv_of_a_number", lambda: nn.Conv2d(1, 1, 1)(3.0), TypeError, "Conv2d takes a Tensor"),
  ("layernorm_float_size", lambda: nn.LayerNorm(2.5), TypeError, r"\(2.5,\) must hold ints"),
]


@pytest.mark.parametrize("call, error, match", [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_bad_input_raises_a_clear_error(call, error, match):
  with pytest.raises(error, match=match): call()


def test_half_precision_layers_keep_their_dtype():
  layer = nn.Linear(4, 2)
  layer.weight, layer.bias = layer.weight.cast(dtypes.float16), layer.bias.cast(dtypes.float16)
  out = layer(Tensor(rand(3, 4)).cast(dtypes.float16))
  assert out.dtype == dtypes.float16
  np.testing.assert_allclose(out.numpy(), rand(3, 4) @ layer.weight.numpy().astype(np.float32).T + layer.bias.numpy(), rtol=1e-2, atol=1e-2)


def test_an_unknown_padding_mode_raises_naming_the_modes():
  with pytest.raises(ValueError, match=r"padding_mode 'mirror' must be one of \['zeros', 'reflect', 'replicate', 'circular'\]"):
    nn.Conv2d(1, 1, 3, padding_mode="mirror")
