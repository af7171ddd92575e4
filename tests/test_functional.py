"""Neural-network functionals (layernorm, batchnorm, one_hot, attention, cross-entropies, sequential, linear,
softmax over any axis): forward values and gradients against torch.nn.functional (CPU, float64)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from nbgrad import Tensor, dtypes

# nbgrad runs in float32; the torch oracle runs in float64 on the same float32 values
TOL = dict(rtol=1e-4, atol=1e-5)


def randn(shape, seed):
  return np.asarray(np.random.default_rng(seed).standard_normal(shape), dtype=np.float32)


def positive(shape, seed):
  return np.asarray(np.random.default_rng(seed).uniform(0.5, 2.0, shape), dtype=np.float32)


def probabilities(shape, seed):
  """Values in [0.05, 0.95]: away from 0 and 1, where torch's binary_cross_entropy clamps its logs."""
  return np.asarray(np.random.default_rng(seed).uniform(0.05, 0.95, shape), dtype=np.float32)


def labels(shape, classes, seed):
  return np.random.default_rng(seed).integers(0, classes, shape).astype(np.int32)


def nb_leaf(a, grad):
  return Tensor(a, requires_grad=True) if grad else Tensor(a)


def th_leaf(a, grad):
  a = np.asarray(a)
  if a.dtype.kind in "iu": return torch.tensor(a, dtype=torch.int64)
  if a.dtype == np.bool_: return torch.tensor(a)
  return torch.tensor(a, dtype=torch.float64, requires_grad=grad)


def check_forward_and_grads(values, grad_names, nb_fn, th_fn, seed=99, tol=TOL):
  """Run nb_fn / th_fn on leaves made from `values` (a dict); compare outputs, then backprop (out * g).sum()
  with a random g through both and compare the gradients of the leaves named in grad_names."""
  nb_in = {k: nb_leaf(v, k in grad_names) for k, v in values.items()}
  th_in = {k: th_leaf(v, k in grad_names) for k, v in values.items()}
  nb_out, th_out = nb_fn(nb_in), th_fn(th_in)
  assert nb_out.shape == tuple(th_out.shape), (nb_out.shape, tuple(th_out.shape))
  assert nb_out.dtype == dtypes.float32, nb_out.dtype
  np.testing.assert_allclose(nb_out.numpy(), th_out.detach().numpy(), err_msg="forward", **tol)
  if not grad_names: return
  g = randn(tuple(th_out.shape), seed)
  (nb_out * Tensor(g)).sum().backward()
  (th_out * torch.tensor(g, dtype=torch.float64)).sum().backward()
  for name in grad_names:
    nb_grad, th_grad = nb_in[name].grad, th_in[name].grad
    assert nb_grad is not None, f"{name} got no gradient"
    assert nb_grad.shape == tuple(th_grad.shape), (name, nb_grad.shape, tuple(th_grad.shape))
    np.testing.assert_allclose(nb_grad.numpy(), th_grad.numpy(), err_msg=f"gradient of {name}", **tol)


# ---------------------------------------------------------------- layernorm
def torch_layernorm(x, axis, eps=1e-5):
  """F.layer_norm normalizes trailing dims: move the normalized axes to the end and back."""
  axes = sorted(a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis))
  rest = [d for d in range(x.ndim) if d not in axes]
  moved = x.permute(*rest, *axes)
  out = F.layer_norm(moved, tuple(moved.shape[len(rest):]), eps=eps)
  return out.permute(*np.argsort(rest + axes).tolist())


# id -> (x shape, axis, eps)
LAYERNORM_CASES = {
  "last_axis": ((2, 3, 4), -1, 1e-5),
  "last_two_axes": ((2, 3, 4), (-2, -1), 1e-5),
  "middle_axis": ((2, 3, 4), 1, 1e-5),
  "first_and_last_axes": ((2, 3, 4), (0, 2), 1e-5),
  "big_eps_2d": ((3, 4), -1, 0.5),
}


@pytest.mark.parametrize("case", list(LAYERNORM_CASES))
def test_layernorm(case):
  shape, axis, eps = LAYERNORM_CASES[case]
  check_forward_and_grads({"x": randn(shape, 1) * 3 + 1}, ["x"],
                          lambda t: t["x"].layernorm(axis, eps), lambda t: torch_layernorm(t["x"], axis, eps))


# ---------------------------------------------------------------- batchnorm
def torch_batch_norm_eval(x, axes, running_mean, running_var, weight, bias):
  """F.batch_norm with the normalized axes moved to dims 1.. and flattened into its one channel dim."""
  channel_dims = list(range(1, 1 + len(axes)))
  moved = x.movedim(axes, channel_dims)
  flat = lambda t: None if t is None else t.reshape(-1)   # noqa: E731
  out = F.batch_norm(moved.reshape(moved.shape[0], running_mean.numel(), -1), flat(running_mean), flat(running_var),
                     flat(weight), flat(bias), training=False, eps=0.0)
  return out.reshape(moved.shape).movedim(channel_dims, axes)


# id -> (x shape, axis, has weight, has bias); mean, invstd, weight and bias have the shape of the axis dims
BATCHNORM_CASES = {
  "axis1_weight_bias": ((2, 3, 4), 1, True, True),
  "axis1_no_weight_no_bias": ((2, 3, 4), 1, False, False),
  "axis1_weight_only": ((2, 3, 4), 1, True, False),
  "axis1_bias_only": ((2, 3, 4), 1, False, True),
  "axis1_4d": ((2, 3, 2, 2), 1, True, True),
  "axis_negative": ((2, 3, 4), -2, True, True),
  "axis_tuple_1_2": ((2, 3, 4), (1, 2), True, True),
}


@pytest.mark.parametrize("case", list(BATCHNORM_CASES))
def test_batchnorm(case):
  shape, axis, has_weight, has_bias = BATCHNORM_CASES[case]
  axes = [a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)]
  stat_shape = tuple(shape[a] for a in axes)
  bshape = tuple(s if d in axes else 1 for d, s in enumerate(shape))   # where torch broadcasts the statistics
  values = {"x": randn(shape, 2), "mean": randn(stat_shape, 3), "invstd": positive(stat_shape, 4)}
  if has_weight: values["weight"] = randn(stat_shape, 5)
  if has_bias: values["bias"] = randn(stat_shape, 6)

  def nb_fn(t):
    return t["x"].batchnorm(t.get("weight"), t.get("bias"), t["mean"], t["invstd"], axis=axis)

  def th_fn(t):
    # the explicit formula, so that torch differentiates with respect to mean and invstd as well
    out = (t["x"] - t["mean"].reshape(bshape)) * t["invstd"].reshape(bshape)
    if has_weight: out = out * t["weight"].reshape(bshape)
    return out + t["bias"].reshape(bshape) if has_bias else out

  check_forward_and_grads(values, list(values), nb_fn, th_fn)
  # and the forward against F.batch_norm itself (eval mode, running_var = invstd**-2, eps 0)
  stats = {k: torch.tensor(v, dtype=torch.float64) for k, v in values.items()}
  ref = torch_batch_norm_eval(stats["x"], axes, stats["mean"], stats["invstd"] ** -2, stats.get("weight"), stats.get("bias"))
  np.testing.assert_allclose(nb_fn({k: Tensor(v) for k, v in values.items()}).numpy(), ref.numpy(), err_msg="F.batch_norm", **TOL)


# ---------------------------------------------------------------- one_hot
# id -> (label shape, num_classes)
ONE_HOT_CASES = {"1d": ((6,), 4), "2d": ((2, 3), 5), "0d": ((), 3), "0size": ((0, 2), 3), "one_class": ((4,), 1)}


@pytest.mark.parametrize("case", list(ONE_HOT_CASES))
def test_one_hot(case):
  shape, classes = ONE_HOT_CASES[case]
  y = labels(shape, classes, 7)
  out = Tensor(y).one_hot(classes)
  ref = F.one_hot(torch.tensor(y, dtype=torch.int64), classes).numpy()
  assert out.shape == ref.shape, (out.shape, ref.shape)
  assert out.dtype == dtypes.int32, out.dtype   # tinygrad 0.9.0: where(1, 0) gives the default int
  np.testing.assert_array_equal(out.numpy(), ref)


def test_one_hot_of_float_labels_marks_the_class_each_value_equals_as_tinygrad():
  """tinygrad 0.9.0 compares the values with the classes: 2.0 is class 2; 2.5, -1.0 and 7.0 are none."""
  y = np.array([[0.0, 2.0, 2.5], [-1.0, 7.0, 1.0]], np.float32)
  out = Tensor(y).one_hot(4)
  assert out.dtype == dtypes.int32
  np.testing.assert_array_equal(out.numpy(), (y[..., None] == np.arange(4)).astype(np.int32))


# ---------------------------------------------------------------- scaled_dot_product_attention
def bool_mask(shape, seed):
  """A random mask that keeps at least one key per query row (the cases with a row of no key set one apart)."""
  m = np.random.default_rng(seed).random(shape) < 0.6
  m[..., 0] = True
  return m


# id -> (q shape, kv shape, mask: None | "bool" | "float" | "float_grad", mask shape, is_causal)
SDPA_CASES = {
  "no_mask_batched_heads": ((2, 2, 3, 4), (2, 2, 5, 4), None, None, False),
  "no_mask_3d": ((2, 3, 4), (2, 5, 4), None, None, False),
  "bool_mask_2d": ((2, 2, 3, 4), (2, 2, 5, 4), "bool", (3, 5), False),
  "float_mask_with_grad": ((2, 2, 3, 4), (2, 2, 5, 4), "float_grad", (3, 5), False),
  "causal_square": ((2, 2, 5, 4), (2, 2, 5, 4), None, None, True),
  "causal_fewer_queries": ((2, 2, 3, 4), (2, 2, 5, 4), None, None, True),
  # a query that may attend to no key gets zeros (torch's safe softmax), with zero gradients
  "bool_mask_a_query_sees_nothing": ((2, 2, 3, 4), (2, 2, 5, 4), "bool_empty_row", (3, 5), False),
  "float_mask_a_query_sees_nothing": ((2, 2, 3, 4), (2, 2, 5, 4), "float_empty_row", (3, 5), False),
}


@pytest.mark.parametrize("case", list(SDPA_CASES))
def test_scaled_dot_product_attention(case):
  q_shape, kv_shape, mask_kind, mask_shape, causal = SDPA_CASES[case]
  values = {"q": randn(q_shape, 8), "k": randn(kv_shape, 9), "v": randn(kv_shape, 10)}
  grads = ["q", "k", "v"]
  if mask_kind == "bool": values["mask"] = bool_mask(mask_shape, 11)
  if mask_kind in ("float", "float_grad"): values["mask"] = randn(mask_shape, 11)
  if mask_kind == "float_grad": grads.append("mask")
  if mask_kind == "bool_empty_row": values["mask"] = bool_mask(mask_shape, 11) & (np.arange(mask_shape[0]) != 1)[:, None]
  if mask_kind == "float_empty_row": values["mask"] = np.where(np.arange(mask_shape[0])[:, None] == 1, -np.inf, randn(mask_shape, 11))
  check_forward_and_grads(
    values, grads,
    lambda t: t["q"].scaled_dot_product_attention(t["k"], t["v"], attn_mask=t.get("mask"), is_causal=causal),
    lambda t: F.scaled_dot_product_attention(t["q"], t["k"], t["v"], attn_mask=t.get("mask"), is_causal=causal))


# ---------------------------------------------------------------- binary cross-entropy
# id -> (method, shape, kind of targets)
BCE_CASES = {
  "probs_soft_targets": ("binary_crossentropy", (2, 3, 4), "soft"),
  "probs_hard_targets_1d": ("binary_crossentropy", (6,), "hard"),
  "logits_soft_targets": ("binary_crossentropy_logits", (2, 3, 4), "soft"),
  "logits_hard_targets_1d": ("binary_crossentropy_logits", (6,), "hard"),
  "logits_large_magnitudes": ("binary_crossentropy_logits", (6,), "large"),
}


@pytest.mark.parametrize("case", list(BCE_CASES))
def test_binary_crossentropy(case):
  method, shape, kind = BCE_CASES[case]
  if method == "binary_crossentropy": x = probabilities(shape, 12)
  elif kind == "large": x = np.array([-80.0, -30.0, -1.0, 0.0, 30.0, 80.0], dtype=np.float32)   # exp(80) overflows float32
  else: x = randn(shape, 12) * 2
  y = probabilities(shape, 13) if kind == "soft" else (np.arange(int(np.prod(shape))).reshape(shape) % 2).astype(np.float32)
  ref = F.binary_cross_entropy if method == "binary_crossentropy" else F.binary_cross_entropy_with_logits
  check_forward_and_grads({"x": x, "y": y}, ["x", "y"], lambda t: getattr(t["x"], method)(t["y"]), lambda t: ref(t["x"], t["y"]))


# ---------------------------------------------------------------- sparse categorical cross-entropy
# id -> (logits shape, labels to overwrite with ignore_index (flat positions), kwargs)
SCE_CASES = {
  "plain": ((6, 5), [], {}),
  "plain_batch_dims": ((2, 3, 5), [], {}),
  "ignore_default_minus1": ((6, 5), [1, 4], {}),
  "ignore_index_custom": ((6, 5), [0, 5], dict(ignore_index=2)),
  "ignore_batch_dims": ((2, 3, 5), [2, 3], dict(ignore_index=7)),
  "smoothing_0.1": ((6, 5), [], dict(label_smoothing=0.1)),
  "smoothing_1.0": ((6, 5), [], dict(label_smoothing=1.0)),
  "smoothing_batch_dims": ((2, 3, 5), [], dict(label_smoothing=0.25)),
  "smoothing_and_ignore": ((6, 5), [1, 2], dict(ignore_index=4, label_smoothing=0.3)),
  "smoothing_and_ignore_batch_dims": ((2, 3, 5), [0, 5], dict(label_smoothing=0.5)),
  "very_negative_logit": ((6, 5), [], {}),
  "very_negative_logit_and_ignore": ((2, 3, 5), [4], {}),
}


@pytest.mark.parametrize("case", list(SCE_CASES))
def test_sparse_categorical_crossentropy(case):
  shape, ignored, kw = SCE_CASES[case]
  classes, ignore_index = shape[-1], kw.get("ignore_index", -1)
  x = randn(shape, 14) * 2
  y = labels(shape[:-1], classes, 15)
  if ignore_index != -1: y[y == ignore_index] = (ignore_index + 1) % classes   # only the listed rows are ignored
  y.reshape(-1)[ignored] = ignore_index
  if case.startswith("very_negative"):
    # a hugely negative logit off the target class in every row: torch's loss and gradients stay finite
    flat_x, flat_y = x.reshape(-1, classes), y.reshape(-1)
    for row, label in enumerate(flat_y): flat_x[row, (max(label, 0) + 1) % classes] = -1e30

  def th_fn(t):
    return F.cross_entropy(t["x"].reshape(-1, classes), t["y"].reshape(-1), ignore_index=ignore_index,
                           label_smoothing=kw.get("label_smoothing", 0.0))

  check_forward_and_grads({"x": x, "y": y}, ["x"], lambda t: t["x"].sparse_categorical_crossentropy(t["y"], **kw), th_fn)


@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float16])
def test_sparse_categorical_crossentropy_reads_float_labels_as_the_classes_they_name(dtype):
  """tinygrad compares the labels with the class numbers, so float labels work: 3.0 is class 3 and -1.0 the
  ignored index; the loss and gradient are torch's with the int labels."""
  x = randn((4, 5), 16)
  y = np.array([3, -1, 0, 4])
  ours = Tensor(x, requires_grad=True)
  ours.sparse_categorical_crossentropy(Tensor(y.astype(np.float32), dtype=dtype)).backward()
  theirs = torch.tensor(x, requires_grad=True)
  F.cross_entropy(theirs, torch.tensor(y), ignore_index=-1).backward()
  np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_sparse_categorical_crossentropy_float_label_naming_no_class():
  """A float label that is not a whole number names no class: an error where the labels are known when the loss is
  built; one still to be computed picks no class, as in tinygrad (the row counts in the mean but adds nothing)."""
  x = randn((3, 4), 17)
  for bad in (2.5, float("nan"), float("inf")):
    with pytest.raises(ValueError, match="whole numbers"):
      Tensor(x).sparse_categorical_crossentropy(Tensor([1.0, bad, 0.0]))
  lazy_labels = Tensor([1.0, 2.5, 0.0]) * 1
  log_probs = torch.tensor(x).log_softmax(-1).numpy()
  expected = -(log_probs[0, 1] + log_probs[2, 0]) / 3
  np.testing.assert_allclose(Tensor(x).sparse_categorical_crossentropy(lazy_labels).item(), expected, rtol=1e-5)


def test_sparse_categorical_crossentropy_all_labels_ignored_gives_zero_gradient():
  """A batch of padding only: the loss is 0/0 (nan) as in torch, the gradient zeros as torch's, with or without
  smoothing (the smoothing term multiplied the ignored rows by 0, and 0 * inf was nan)."""
  for smoothing in (0.0, 0.1):
    x = Tensor.zeros(2, 5, requires_grad=True)
    x.sparse_categorical_crossentropy(Tensor([-1, -1]), label_smoothing=smoothing).backward()
    xt = torch.zeros(2, 5, requires_grad=True)
    F.cross_entropy(xt, torch.tensor([-1, -1]), ignore_index=-1, label_smoothing=smoothing).backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
def test_cross_entropy_and_nll_loss_with_every_target_ignored_give_nan_and_zero_gradient(name):
  """torch's: the mean over no counted sample is nan, its gradient zeros (0/0 made it nan everywhere)."""
  values = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]])
  x, xt = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  loss, loss_t = getattr(x, name)(Tensor([1, 1]), ignore_index=1), getattr(F, name)(xt, torch.tensor([1, 1]), ignore_index=1)
  loss.backward()
  loss_t.backward()
  assert np.isnan(loss.item()) and torch.isnan(loss_t)
  np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("computed", [False, True], ids=["known_targets", "computed_targets"])
def test_cross_entropy_of_targets_known_or_computed_when_built(reduction, computed):
  """Targets held in a buffer are read when the loss is built (positions and counts worked out on the host), computed
  ones in the graph: both as torch's, with classes in dim 1 of (N, C, d), an ignored target and label smoothing."""
  values, classes = randn((2, 5, 3), 16), np.array([[4, 2, 0], [1, 2, 3]])
  x, xt = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  target = Tensor(classes) + 0 if computed else Tensor(classes)
  loss = x.cross_entropy(target, ignore_index=2, reduction=reduction, label_smoothing=0.2)
  expected = F.cross_entropy(xt, torch.tensor(classes), ignore_index=2, reduction=reduction, label_smoothing=0.2)
  loss.sum().backward()
  expected.sum().backward()
  np.testing.assert_allclose(loss.numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
def test_a_computed_class_out_of_range_scores_nothing_and_weighs_nothing(name):
  """A class index still to be computed is not checked when the loss is built (torch raises for one it holds): one
  out of range, either side, picks no score and counts for nothing in the mean, as if it were ignored."""
  values, classes = randn((4, 3), 3), np.array([2, 7, 0, -4])
  x, kept = Tensor(values, requires_grad=True), torch.tensor(values[[0, 2]], requires_grad=True)
  weight = np.array([0.5, 2.0, 3.0], values.dtype)
  loss = getattr(x, name)(Tensor(classes) + 0, weight=Tensor(weight))
  expected = getattr(F, name)(kept, torch.tensor(classes[[0, 2]]), weight=torch.tensor(weight))
  loss.backward()
  expected.backward()
  np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-6)
  np.testing.assert_allclose(x.grad.numpy()[[0, 2]], kept.grad.numpy(), rtol=1e-5, atol=1e-7)
  np.testing.assert_array_equal(x.grad.numpy()[[1, 3]], 0)


def test_sparse_categorical_crossentropy_labels_shape_mismatch_raises():
  with pytest.raises(ValueError):
    Tensor(randn((6, 5), 0)).sparse_categorical_crossentropy(Tensor(labels((5,), 5, 0)))


# ---------------------------------------------------------------- sequential, linear
# id -> (input shapes by name, names with gradients, nbgrad fn, torch fn); nbgrad's linear takes weight as (in, out)
LAYER_CASES = {
  "linear_bias": ({"x": (2, 3, 4), "w": (4, 5), "b": (5,)},
                  lambda t: t["x"].linear(t["w"], t["b"]), lambda t: F.linear(t["x"], t["w"].T, t["b"])),
  "linear_no_bias": ({"x": (3, 4), "w": (4, 5)}, lambda t: t["x"].linear(t["w"]), lambda t: F.linear(t["x"], t["w"].T)),
  "linear_1d_input": ({"x": (4,), "w": (4, 5), "b": (5,)},
                      lambda t: t["x"].linear(t["w"], t["b"]), lambda t: F.linear(t["x"], t["w"].T, t["b"])),
  # a 1-D weight scales each feature (tinygrad 0.9.0's linear: self * weight when weight.ndim == 1)
  "linear_1d_weight_bias": ({"x": (2, 3, 4), "w": (4,), "b": (4,)},
                            lambda t: t["x"].linear(t["w"], t["b"]), lambda t: t["x"] * t["w"] + t["b"]),
  "linear_1d_weight_no_bias": ({"x": (3, 4), "w": (4,)}, lambda t: t["x"].linear(t["w"]), lambda t: t["x"] * t["w"]),
  "sequential_mlp": ({"x": (3, 4), "w": (4, 5), "b": (5,), "w2": (5, 2)},
                     lambda t: t["x"].sequential([lambda h: h.linear(t["w"], t["b"]), Tensor.relu, lambda h: h.linear(t["w2"])]),
                     lambda t: F.linear(F.relu(F.linear(t["x"], t["w"].T, t["b"])), t["w2"].T)),
  "sequential_order_matters": ({"x": (3, 4)}, lambda t: t["x"].sequential([lambda h: h + 1, lambda h: h * h, Tensor.tanh]),
                               lambda t: torch.tanh((t["x"] + 1) * (t["x"] + 1))),
  "sequential_empty": ({"x": (3, 4)}, lambda t: t["x"].sequential([]) * 1.0, lambda t: t["x"] * 1.0),
}


@pytest.mark.parametrize("case", list(LAYER_CASES))
def test_linear_and_sequential(case):
  shapes, nb_fn, th_fn = LAYER_CASES[case]
  values = {name: randn(shape, 20 + i) for i, (name, shape) in enumerate(shapes.items())}
  check_forward_and_grads(values, list(values), nb_fn, th_fn)


# ---------------------------------------------------------------- softmax / log_softmax over any axis
# id -> (method, x shape, axis)
SOFTMAX_CASES = {
  "softmax_axis0": ("softmax", (2, 3, 4), 0),
  "softmax_2d_axis0": ("softmax", (5, 3), 0),
  "softmax_axis_minus3": ("softmax", (2, 3, 4), -3),
  "log_softmax_axis1": ("log_softmax", (2, 3, 4), 1),
  "log_softmax_axis_minus2": ("log_softmax", (2, 3, 4), -2),
}


@pytest.mark.parametrize("case", list(SOFTMAX_CASES))
def test_softmax_over_non_last_axis(case):
  method, shape, axis = SOFTMAX_CASES[case]
  x = randn(shape, 30) * 3
  x.reshape(-1)[::5] += 60   # large logits: exp without the max shift would overflow float32
  ref = torch.softmax if method == "softmax" else torch.log_softmax
  check_forward_and_grads({"x": x}, ["x"], lambda t: getattr(t["x"], method)(axis), lambda t: ref(t["x"], dim=axis))


def test_binary_crossentropy_at_probabilities_0_and_1_clamps_the_log_as_torch():
  """The loss clamps each log at -100; the gradients are torch's: (p - y) / max(p (1 - p), 1e-12) by p (a saturated
  p = y = 1 gets 0), log(1 - p) - log(p) by y (inf at p = 0)."""
  p, y = np.array([0.0, 1.0, 0.3, 1e-30, 1.0, 0.999999], np.float32), np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0], np.float32)
  probabilities, targets = Tensor(p, requires_grad=True), Tensor(y, requires_grad=True)
  tp, ty = torch.tensor(p, requires_grad=True), torch.tensor(y, requires_grad=True)
  loss, want = probabilities.binary_crossentropy(targets), torch.nn.functional.binary_cross_entropy(tp, ty)
  np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-6)
  loss.backward()
  want.backward()
  np.testing.assert_allclose(probabilities.grad.numpy(), tp.grad.numpy(), rtol=1e-6)
  np.testing.assert_allclose(targets.grad.numpy(), ty.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("slope", [0.01, 0.3, -0.5, 2.0])
def test_leakyrelu_any_slope(slope):
  values = np.array([-3.0, -0.5, 0.25, 4.0], np.float32)
  x, tx = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  x.leakyrelu(slope).sum().backward()
  out = torch.nn.functional.leaky_relu(tx, slope)
  out.sum().backward()
  np.testing.assert_allclose(x.leakyrelu(slope).numpy(), out.detach().numpy(), rtol=1e-6)
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
