"""nbgrad.nn.functional against torch.nn.functional (CPU): each row of a table is one call written once and run on
both modules (`f` is F or torch's), so it uses torch's positional order; values and the gradients of every float
input are compared. Then the Tensor methods in tinygrad's order, the running statistics, dropout's statistics,
inplace=, and bad input."""
import math
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import nbgrad.nn.functional as F
from nbgrad import Tensor, dtypes, nn
from against_torch import grads_match


def randn(*shape, seed=0):
  return np.random.default_rng(seed).standard_normal(shape)


def const(f, values):
  """values as a tensor of f's library, outside the gradient check (indices, targets, running statistics)."""
  return Tensor(values) if f is F else torch.tensor(values)


def dtype_of(f, name: str):
  return name if f is F else getattr(torch, name)


# a few shapes, reused so that kernels are shared: (N, C, H, W), (N, C, L), (N, C, D, H, W), logits (N, C), vectors
X4, X3, X5, X2, X1 = randn(2, 6, 4, 4), randn(2, 6, 8, seed=1), randn(1, 2, 3, 4, 4, seed=2), randn(3, 6, seed=3), randn(6, seed=4)
W6, B6, W8 = randn(6, seed=5) + 1, randn(6, seed=6), randn(8, seed=7) + 1
TARGETS, RUNNING_MEAN, RUNNING_VAR = np.array([1, 0, 5]), randn(6, seed=8), np.abs(randn(6, seed=9)) + 0.5
PROBABILITIES = np.random.default_rng(10).dirichlet(np.ones(6), 3)
X_IMAGE = randn(1, 2, 13, 17, seed=41)
INDICES = np.array([[0, 2, 6], [2, 2, 1]])


def row(name, call, *arrays, tol=1e-6):
  """call(f, *leaves) on F and on torch.nn.functional."""
  return pytest.param(call, arrays, tol, id=name)


FUNCTIONS = [
  # activations (torch's defaults: gelu exact, softplus with its threshold), float64 and float32, a strided view
  row("relu", lambda f, x: f.relu(x), X2),
  row("relu6", lambda f, x: f.relu6(x * 4), X2),
  row("elu", lambda f, x: f.elu(x, 0.5), X2),
  row("selu", lambda f, x: f.selu(x), X2),
  row("celu", lambda f, x: f.celu(x, 1.5), X2),
  row("leaky_relu", lambda f, x: f.leaky_relu(x, 0.2), X2),
  row("gelu_exact", lambda f, x: f.gelu(x), X2),
  row("gelu_tanh", lambda f, x: f.gelu(x, approximate="tanh"), X2),
  row("silu", lambda f, x: f.silu(x), X2),
  row("mish", lambda f, x: f.mish(x), X2),
  row("softplus_threshold", lambda f, x: f.softplus(x * 8, 2, 5), X2),
  row("hardtanh", lambda f, x: f.hardtanh(x, -0.5, 0.7), X2),
  row("hardswish", lambda f, x: f.hardswish(x * 4), X2),
  row("hardsigmoid", lambda f, x: f.hardsigmoid(x * 4), X2),
  row("sigmoid", lambda f, x: f.sigmoid(x), X2),
  row("tanh", lambda f, x: f.tanh(x), X2),
  row("logsigmoid", lambda f, x: f.logsigmoid(x), X2),
  row("softsign", lambda f, x: f.softsign(x), X2),
  row("tanhshrink", lambda f, x: f.tanhshrink(x), X2),
  row("softshrink", lambda f, x: f.softshrink(x, 0.3), X2),
  row("hardshrink", lambda f, x: f.hardshrink(x, 0.3), X2),
  row("threshold", lambda f, x: f.threshold(x, 0.1, -2.0), X2),
  row("rrelu_evaluation", lambda f, x: f.rrelu(x, 0.1, 0.3), X2),
  row("glu_dim1", lambda f, x: f.glu(x, 1), X3),
  row("glu_vector", lambda f, x: f.glu(x), X1),
  row("prelu_per_channel", lambda f, x, w: f.prelu(x, w), X4, W6),
  row("softmax", lambda f, x: f.softmax(x, -1), X2),
  row("softmax_dim1_strided", lambda f, x: f.softmax(x.transpose(1, 3), dim=1), X4),
  row("softmax_dtype", lambda f, x: f.softmax(x, 1, dtype=dtype_of(f, "float64")), X2.astype(np.float32)),
  row("log_softmax", lambda f, x: f.log_softmax(x, 1), X2),
  row("softmin", lambda f, x: f.softmin(x, 0), X2),
  row("relu_float32", lambda f, x: f.relu(x), X2.astype(np.float32), tol=1e-5),
  row("gelu_float32", lambda f, x: f.gelu(x), X2.astype(np.float32), tol=1e-5),
  row("silu_strided", lambda f, x: f.silu(x[:, ::2]), X2),
  # the norms
  row("group_norm", lambda f, x, w, b: f.group_norm(x, 3, w, b), X4, W6, B6),
  row("group_norm_no_affine", lambda f, x: f.group_norm(x, 2), X3),
  row("group_norm_size_1_height", lambda f, x, w, b: f.group_norm(x[:, :, :1], 6, w, b), X4, W6, B6),
  row("group_norm_strided", lambda f, x: f.group_norm(x.transpose(-1, -2), 3, None, None, 1e-3), X4),
  row("group_norm_float32", lambda f, x, w, b: f.group_norm(x, 3, w, b), X4.astype(np.float32), W6.astype(np.float32),
      B6.astype(np.float32), tol=1e-4),
  row("layer_norm_two_dims", lambda f, x, w, b: f.layer_norm(x, (4, 4), w, b), X4, randn(4, 4, seed=11), randn(4, 4, seed=12)),
  row("layer_norm_last_dim", lambda f, x: f.layer_norm(x, [8]), X3),
  row("layer_norm_vector", lambda f, x, w: f.layer_norm(x, [6], w, None, 1e-3), X1, W6),
  row("layer_norm_float32", lambda f, x: f.layer_norm(x, (8,)), X3.astype(np.float32), tol=1e-4),
  row("rms_norm", lambda f, x, w: f.rms_norm(x, [8], w), X3, W8),
  row("rms_norm_dtype_eps", lambda f, x: f.rms_norm(x, (4, 4)), X4),
  row("rms_norm_float32", lambda f, x: f.rms_norm(x, (8,), None, 1e-2), X3.astype(np.float32), tol=1e-4),
  row("batch_norm_training", lambda f, x, w, b: f.batch_norm(x, None, None, w, b, True), X4, W6, B6),
  row("batch_norm_training_1d", lambda f, x: f.batch_norm(x, None, None, None, None, True, 0.1, 1e-3), X2),
  row("batch_norm_evaluation", lambda f, x, w, b: f.batch_norm(x, const(f, RUNNING_MEAN), const(f, RUNNING_VAR), w, b), X3, W6, B6),
  row("instance_norm", lambda f, x: f.instance_norm(x), X4),
  row("instance_norm_affine", lambda f, x, w, b: f.instance_norm(x, None, None, w, b, eps=1e-3), X3, W6, B6),
  row("instance_norm_running", lambda f, x, w: f.instance_norm(x, const(f, RUNNING_MEAN), const(f, RUNNING_VAR), w, None, False), X4, W6),
  row("local_response_norm", lambda f, x: f.local_response_norm(x, 3), X4),
  row("local_response_norm_3d", lambda f, x: f.local_response_norm(x, 4, 0.1, 0.5, 2.0), X3),
  row("local_response_norm_5d", lambda f, x: f.local_response_norm(x, 2, 0.3), X5),
  row("normalize", lambda f, x: f.normalize(x), X4),
  row("normalize_l1_last", lambda f, x: f.normalize(x, 1.0, -1), X3),
  # linear and convolutions, torch's positional order
  row("linear", lambda f, x, w, b: f.linear(x, w, b), X3, randn(5, 8, seed=13), randn(5, seed=14)),
  row("linear_vector_input", lambda f, x, w: f.linear(x, w), X1, randn(3, 6, seed=13)),
  row("linear_vector_weight", lambda f, x, w: f.linear(x, w), X3, W8),
  row("conv1d", lambda f, x, w, b: f.conv1d(x, w, b, 2, 1), X3, randn(4, 6, 3, seed=15), randn(4, seed=16)),
  row("conv1d_one_sample", lambda f, x, w: f.conv1d(x[0], w), X3, randn(4, 6, 3, seed=15)),
  row("conv2d", lambda f, x, w, b: f.conv2d(x, w, b, 1, 1), X4, randn(4, 6, 3, 3, seed=17), randn(4, seed=16)),
  row("conv2d_grouped_dilated", lambda f, x, w: f.conv2d(x, w, None, 1, 2, 2, 2), X4, randn(4, 3, 3, 3, seed=18)),
  row("conv2d_same", lambda f, x, w: f.conv2d(x, w, padding="same"), X4, randn(4, 6, 2, 3, seed=19)),
  row("conv2d_one_sample", lambda f, x, w: f.conv2d(x[1], w, None, 2), X4, randn(4, 6, 3, 3, seed=17)),
  row("conv3d", lambda f, x, w, b: f.conv3d(x, w, b, 1, 1), X5, randn(3, 2, 2, 2, 2, seed=20), randn(3, seed=21)),
  row("conv_transpose1d", lambda f, x, w, b: f.conv_transpose1d(x, w, b, 2, 1, 1), X3, randn(6, 2, 3, seed=22), randn(2, seed=23)),
  row("conv_transpose2d_grouped", lambda f, x, w: f.conv_transpose2d(x, w, None, 2, 1, 1, 2), X4, randn(6, 2, 3, 3, seed=24)),
  row("conv_transpose3d", lambda f, x, w, b: f.conv_transpose3d(x, w, b, 2), X5, randn(2, 3, 2, 2, 2, seed=25), randn(3, seed=21)),
  # pools, torch's positional order (padding before dilation)
  row("max_pool2d", lambda f, x: f.max_pool2d(x, 2), X4),
  row("max_pool2d_padded", lambda f, x: f.max_pool2d(x, 3, 2, 1), X4),
  row("max_pool2d_dilated", lambda f, x: f.max_pool2d(x, 2, 1, 0, 2), X4),
  row("max_pool2d_ceil_indices", lambda f, x: f.max_pool2d(x, 3, 2, 1, 1, True, True), X4),
  row("max_pool2d_one_sample", lambda f, x: f.max_pool2d(x[0], 2), X4),
  row("max_pool1d", lambda f, x: f.max_pool1d(x, 3, 2, 1), X3),
  row("max_pool3d", lambda f, x: f.max_pool3d(x, 2), X5),
  row("avg_pool2d_ceil_no_pad_count", lambda f, x: f.avg_pool2d(x, 3, 2, 1, True, False), X4),
  row("avg_pool2d_divisor", lambda f, x: f.avg_pool2d(x, 2, divisor_override=3), X4),
  row("avg_pool1d", lambda f, x: f.avg_pool1d(x, 3, 2, 1), X3),
  row("avg_pool3d", lambda f, x: f.avg_pool3d(x, 2, 1), X5),
  row("adaptive_avg_pool1d", lambda f, x: f.adaptive_avg_pool1d(x, 3), X3),
  row("adaptive_avg_pool2d", lambda f, x: f.adaptive_avg_pool2d(x, (3, 2)), X4),
  row("adaptive_avg_pool3d", lambda f, x: f.adaptive_avg_pool3d(x, (2, 3, 3)), X5),
  row("adaptive_max_pool1d", lambda f, x: f.adaptive_max_pool1d(x, 5), X3),
  row("adaptive_max_pool2d_indices", lambda f, x: f.adaptive_max_pool2d(x, 3, True), X4),
  row("adaptive_max_pool3d", lambda f, x: f.adaptive_max_pool3d(x, 2), X5),
  row("lp_pool2d", lambda f, x: f.lp_pool2d(x, 2, 2), X4),
  row("lp_pool1d_ceil", lambda f, x: f.lp_pool1d(x.abs(), 3, 3, 2, True), X3),
  row("lp_pool2d_inf", lambda f, x: f.lp_pool2d(x, math.inf, 2), X4),
  row("lp_pool3d", lambda f, x: f.lp_pool3d(x, 2, 2), X5),
  row("max_unpool2d", lambda f, x: f.max_unpool2d(*f.max_pool2d(x, 2, return_indices=True), 2), X4),
  # resampling, padding, shuffles, lookups, attention
  row("interpolate_nearest", lambda f, x: f.interpolate(x, size=(6, 3)), X4),
  row("interpolate_nearest_exact", lambda f, x: f.interpolate(x, size=5, mode="nearest-exact"), X3),
  row("interpolate_bilinear_scale", lambda f, x: f.interpolate(x, scale_factor=2, mode="bilinear"), X4),
  row("interpolate_bilinear_corners", lambda f, x: f.interpolate(x, (7, 5), mode="bilinear", align_corners=True), X4),
  row("interpolate_linear", lambda f, x: f.interpolate(x, 11, mode="linear"), X3),
  row("interpolate_trilinear", lambda f, x: f.interpolate(x, scale_factor=(1, 0.5, 2), mode="trilinear"), X5),
  row("interpolate_area", lambda f, x: f.interpolate(x, size=(3, 2), mode="area"), X4),
  row("interpolate_int_size_every_dim", lambda f, x: f.interpolate(x, 3), X4),
  row("interpolate_uneven_scale", lambda f, x: f.interpolate(x, scale_factor=1.3, mode="bilinear"), X4),
  row("interpolate_nearest_uneven_scale", lambda f, x: f.interpolate(x, scale_factor=0.7), X3),
  row("interpolate_bicubic", lambda f, x: f.interpolate(x, (5, 7), mode="bicubic", align_corners=True), X4),
  # antialiased downscales: windows of several samples (and one of a single sample, the upscaled dim)
  row("interpolate_antialias_bilinear", lambda f, x: f.interpolate(x, (5, 7), mode="bilinear", antialias=True), X_IMAGE),
  row("interpolate_antialias_bilinear_corners_upscale", lambda f, x: f.interpolate(x, (4, 20), mode="bilinear", align_corners=True,
      antialias=True), X_IMAGE),
  row("interpolate_antialias_bicubic_scale", lambda f, x: f.interpolate(x, scale_factor=0.3, mode="bicubic", antialias=True), X_IMAGE),
  row("interpolate_antialias_bicubic_corners", lambda f, x: f.interpolate(x, (1, 6), mode="bicubic", align_corners=True, antialias=True),
      X_IMAGE.astype(np.float64)),
  row("unfold", lambda f, x: f.unfold(x, 2, 1, 1, 2), X4),
  row("fold", lambda f, x: f.fold(x, (4, 5), 2, 1, 0, 1), randn(2, 8, 12, seed=32)),
  row("affine_grid_grid_sample", lambda f, x, theta: f.grid_sample(x, f.affine_grid(theta, [2, 6, 3, 5], False), align_corners=False), X4,
      np.array([[[0.9, 0.2, 0.1], [-0.1, 0.8, 0.05]], [[1.1, 0.0, -0.2], [0.3, 0.7, 0.1]]])),
  row("pad_constant", lambda f, x: f.pad(x, (1, 2), value=0.5), X3),
  row("pad_reflect", lambda f, x: f.pad(x, (1, 1, 2, 0), mode="reflect"), X4),
  row("pad_replicate", lambda f, x: f.pad(x, (2, 1), "replicate"), X3),
  row("pad_circular", lambda f, x: f.pad(x, (1, 2, 1, 1), mode="circular"), X4),
  # negative sides crop: circular wraps what is left, reflect and replicate read the whole dim
  row("pad_reflect_negative", lambda f, x: f.pad(x, (-1, 3, 2, -3), mode="reflect"), X4),
  row("pad_replicate_negative", lambda f, x: f.pad(x, (3, -2), "replicate"), X3),
  row("pad_circular_negative", lambda f, x: f.pad(x, (-2, 1, 2, -1), mode="circular"), X4),
  row("channel_shuffle", lambda f, x: f.channel_shuffle(x, 3), X4),
  row("pixel_shuffle_strided", lambda f, x: f.pixel_shuffle(x[:, :4], 2), X4),
  row("pixel_unshuffle", lambda f, x: f.pixel_unshuffle(x, 2), X4),
  row("embedding_padding_idx", lambda f, w: f.embedding(const(f, INDICES), w, 2), randn(7, 3, seed=26)),
  row("embedding_negative_padding_idx", lambda f, w: f.embedding(const(f, INDICES), w, padding_idx=-1), randn(7, 3, seed=26)),
  row("embedding_scale_grad_by_freq", lambda f, w: f.embedding(const(f, INDICES), w, scale_grad_by_freq=True), randn(7, 3, seed=26)),
  row("embedding_scale_grad_by_freq_padding", lambda f, w: f.embedding(const(f, INDICES), w, 6, scale_grad_by_freq=True), randn(7, 3, seed=26)),
  row("cosine_similarity", lambda f, a, b: f.cosine_similarity(a, b), X4, randn(2, 6, 4, 4, seed=27)),
  row("scaled_dot_product_attention", lambda f, q, k, v: f.scaled_dot_product_attention(q, k, v, None, 0.0, True), X3[:, :, :4],
      randn(2, 6, 4, seed=28), randn(2, 6, 3, seed=29)),
  row("dropout_evaluation", lambda f, x: f.dropout(x, 0.5, False), X2),
  row("dropout2d_evaluation", lambda f, x: f.dropout2d(x, 0.3, training=False), X4),
  row("alpha_dropout_default", lambda f, x: f.alpha_dropout(x, 0.5), X2),
  # losses: torch's order, with its deprecated size_average and reduce
  row("cross_entropy", lambda f, x: f.cross_entropy(x, const(f, TARGETS)), X2),
  row("cross_entropy_positional", lambda f, x: f.cross_entropy(x, const(f, TARGETS), const(f, W6), None, 1, None, "sum"), X2),
  row("cross_entropy_probabilities", lambda f, x: f.cross_entropy(x, const(f, PROBABILITIES), label_smoothing=0.2), X2),
  row("cross_entropy_size_average", lambda f, x: f.cross_entropy(x, const(f, TARGETS), size_average=False), X2),
  row("cross_entropy_one_sample", lambda f, x: f.cross_entropy(x, const(f, np.array(4))), X1),
  row("nll_loss_positional", lambda f, x: f.nll_loss(f.log_softmax(x, 1), const(f, TARGETS), None, None, 5), X2),
  row("nll_loss_reduce_false", lambda f, x: f.nll_loss(x, const(f, TARGETS), reduce=False), X2),
  # read at each sample's class: an ignored class that scores -inf adds nothing (no nan), class weights, classes in
  # dim 1 of images (a view with the classes last), a transposed input
  row("nll_loss_ignored_class_at_minus_inf", lambda f, x: f.nll_loss(x.clamp(-1.0, 1.0).masked_fill(const(f, np.arange(6) == 5), -math.inf),
                                                                      const(f, TARGETS), const(f, W6), ignore_index=5), X2),
  row("nll_loss_images_weighted_none", lambda f, x: f.nll_loss(x, const(f, INDICES[:, None, :] % 6 * np.ones((2, 4, 1), np.int64)),
                                                                 const(f, W6), reduction="none"), X4[:, :, :, :3]),
  row("nll_loss_transposed", lambda f, x: f.nll_loss(x.T, const(f, np.array([2, 0, 1, 1, 0, 2])), reduction="sum"), X2),
  row("mse_loss", lambda f, a, b: f.mse_loss(a, b), X2, randn(3, 6, seed=30)),
  row("l1_loss_size_average", lambda f, a, b: f.l1_loss(a, b, size_average=False), X2, randn(3, 6, seed=30)),
  row("smooth_l1_loss", lambda f, a, b: f.smooth_l1_loss(a, b, beta=0.5), X2, randn(3, 6, seed=30)),
  row("huber_loss", lambda f, a, b: f.huber_loss(a, b, reduction="sum", delta=0.5), X2, randn(3, 6, seed=30)),
  row("kl_div", lambda f, a: f.kl_div(f.log_softmax(a, 1), const(f, PROBABILITIES), reduction="batchmean"), X2),
  row("binary_cross_entropy", lambda f, a: f.binary_cross_entropy(f.sigmoid(a), const(f, PROBABILITIES)), X2),
  row("binary_cross_entropy_with_logits", lambda f, a: f.binary_cross_entropy_with_logits(a, const(f, PROBABILITIES)), X2),
  # every argument positional, size_average and reduce among them in torch's order
  row("mse_loss_positional", lambda f, a, b: f.mse_loss(a, b, None, None, "sum"), X2, randn(3, 6, seed=30)),
  row("l1_loss_positional_weight", lambda f, a, b: f.l1_loss(a, b, None, None, "none", const(f, np.abs(X2))), X2, randn(3, 6, seed=30)),
  row("smooth_l1_loss_positional", lambda f, a, b: f.smooth_l1_loss(a, b, False, None, "mean", 0.5), X2, randn(3, 6, seed=30)),
  row("huber_loss_positional", lambda f, a, b: f.huber_loss(a, b, "sum", 0.5), X2, randn(3, 6, seed=30)),
  row("kl_div_positional", lambda f, a: f.kl_div(f.log_softmax(a, 1), const(f, np.log(PROBABILITIES)), None, None, "batchmean", True), X2),
  row("binary_cross_entropy_positional", lambda f, a: f.binary_cross_entropy(f.sigmoid(a), const(f, PROBABILITIES), const(f, W6), None, False), X2),
  row("binary_cross_entropy_with_logits_positional",
      lambda f, a: f.binary_cross_entropy_with_logits(a, const(f, PROBABILITIES), None, None, None, "sum", const(f, W6)), X2),
  row("poisson_nll_loss_positional", lambda f, a, b: f.poisson_nll_loss(a, b, True, True, None, 1e-6, None, "sum"), X2, np.abs(randn(3, 6, seed=30))),
  row("hinge_embedding_loss_positional", lambda f, a: f.hinge_embedding_loss(a, const(f, np.sign(randn(3, 6, seed=31))), 0.5, False), X2),
  row("margin_ranking_loss_positional", lambda f, a, b: f.margin_ranking_loss(a, b, const(f, np.sign(randn(3, 6, seed=31))), 0.2, None, False),
      X2, randn(3, 6, seed=30)),
  row("soft_margin_loss_positional", lambda f, a: f.soft_margin_loss(a, const(f, np.sign(randn(3, 6, seed=31))), None, None, "sum"), X2),
  row("multi_margin_loss_positional", lambda f, a: f.multi_margin_loss(a, const(f, TARGETS), 2, 0.5, const(f, W6), False), X2),
  row("cosine_embedding_loss_positional", lambda f, a, b: f.cosine_embedding_loss(a, b, const(f, np.array([1, -1, 1])), 0.1, None, None, "sum"),
      X2, randn(3, 6, seed=30)),
  row("triplet_margin_loss_positional", lambda f, a, b, c: f.triplet_margin_loss(a, b, c, 0.5, 1, 1e-6, True, None, False),
      X2, randn(3, 6, seed=30), randn(3, 6, seed=32)),
  row("margin_ranking_loss_keywords", lambda f, a, b: f.margin_ranking_loss(input1=a, input2=b, target=const(f, np.sign(randn(3, 6, seed=31)))),
      X2, randn(3, 6, seed=30)),
  row("triplet_margin_loss_keywords", lambda f, a, b, c: f.triplet_margin_loss(anchor=a, positive=b, negative=c), X2, randn(3, 6, seed=30), randn(3, 6, seed=32)),
  row("triplet_margin_with_distance_loss", lambda f, a, b, c: f.triplet_margin_with_distance_loss(a, b, c, swap=True, margin=0.5),
      X2, randn(3, 6, seed=30), randn(3, 6, seed=32)),
  row("triplet_margin_with_distance_loss_cosine",
      lambda f, a, b, c: f.triplet_margin_with_distance_loss(a, b, c, distance_function=lambda u, v: 1 - f.cosine_similarity(u, v), reduction="none"),
      X2, randn(3, 6, seed=30), randn(3, 6, seed=32)),
  row("scaled_dot_product_attention_gqa", lambda f, q, k, v: f.scaled_dot_product_attention(q, k, v, enable_gqa=True), randn(2, 4, 3, 5, seed=33),
      randn(2, 2, 6, 5, seed=34), randn(2, 2, 6, 3, seed=35)),
  row("pairwise_distance", lambda f, a, b: f.pairwise_distance(a, b), X2, randn(3, 6, seed=30)),
  row("pdist", lambda f, a: f.pdist(a), X2),
]


@pytest.mark.filterwarnings("ignore::UserWarning")   # torch's for size_average and reduce
@pytest.mark.parametrize("call, arrays, tol", FUNCTIONS)
def test_function_matches_torch(call, arrays, tol):
  grads_match(lambda *leaves: call(F, *leaves), lambda *leaves: call(TF, *leaves), *arrays, tol=tol)


# ---- the Tensor methods keep tinygrad's order: conv1d(weight, bias, groups, stride, dilation, padding)
METHODS = [
  ("conv1d", lambda x, w, b: x.conv1d(w, b, 1, 2, 1, 1), lambda x, w, b: TF.conv1d(x, w, b, 2, 1, 1, 1),
   (X3, randn(4, 6, 3, seed=15), randn(4, seed=16))),
  ("conv3d", lambda x, w: x.conv3d(w, None, 1, 1, 1, 1), lambda x, w: TF.conv3d(x, w, None, 1, 1), (X5, randn(3, 2, 2, 2, 2, seed=20))),
  ("conv_transpose1d", lambda x, w: x.conv_transpose1d(w, None, 1, 2, 1, 1, 1), lambda x, w: TF.conv_transpose1d(x, w, None, 2, 1, 1),
   (X3, randn(6, 2, 3, seed=22))),
  ("conv_transpose3d", lambda x, w: x.conv_transpose3d(w, None, 1, 2), lambda x, w: TF.conv_transpose3d(x, w, None, 2),
   (X5, randn(2, 3, 2, 2, 2, seed=25))),
  ("group_norm", lambda x, w, b: x.group_norm(3, w, b), lambda x, w, b: TF.group_norm(x, 3, w, b), (X4, W6, B6)),
  ("layer_norm", lambda x: x.layer_norm(8), lambda x: TF.layer_norm(x, [8]), (X3,)),
  ("rms_norm", lambda x: x.rms_norm(8, eps=1e-3), lambda x: TF.rms_norm(x, [8], eps=1e-3), (X3,)),
  ("batch_norm", lambda x: x.batch_norm(None, None, training=True), lambda x: TF.batch_norm(x, None, None, training=True), (X3,)),
  ("instance_norm", lambda x: x.instance_norm(), lambda x: TF.instance_norm(x), (X3,)),
  ("local_response_norm", lambda x: x.local_response_norm(3), lambda x: TF.local_response_norm(x, 3), (X4,)),
  ("channel_shuffle", lambda x: x.channel_shuffle(2), lambda x: TF.channel_shuffle(x, 2), (X3,)),
  ("embedding", lambda w: Tensor(INDICES).embedding(w, padding_idx=0), lambda w: TF.embedding(torch.tensor(INDICES), w, 0), (randn(7, 3, seed=26),)),
  ("lp_pool2d_stride", lambda x: x.lp_pool2d(3, 2, 1), lambda x: TF.lp_pool2d(x, 3, 2, 1), (np.abs(X4),)),
]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
def test_embedding_max_norm_renormalizes_the_rows_it_reads_in_place_as_torch(norm_type):
  """The rows read (0, 2, 5 and 1 here, not 3, 4 or 6) whose norm exceeds max_norm are scaled in place before the
  lookup; the gradient reaches the scaled rows. An out-of-range index (tinygrad's zeros) renormalizes nothing."""
  w_val = randn(7, 3, seed=40) * 2
  indices = np.array([[0, 2, 2], [5, 1, 0]])
  w, w_ref = Tensor(w_val, requires_grad=True), torch.tensor(w_val, requires_grad=True)
  out = F.embedding(Tensor(indices), w, max_norm=1.5, norm_type=norm_type)
  out_ref = TF.embedding(torch.tensor(indices), w_ref, max_norm=1.5, norm_type=norm_type)
  np.testing.assert_allclose(w.detach().numpy(), w_ref.detach().numpy(), rtol=1e-6)
  np.testing.assert_array_equal(w.detach().numpy()[[3, 4, 6]], w_val[[3, 4, 6]])
  np.testing.assert_allclose(out.numpy(), out_ref.detach().numpy(), rtol=1e-6)
  (out * out).sum().backward()
  (out_ref * out_ref).sum().backward()
  np.testing.assert_allclose(w.grad.numpy(), w_ref.grad.numpy(), rtol=1e-5)
  kept = Tensor(w_val)
  F.embedding(Tensor([-1, 7]), kept, max_norm=0.1)
  np.testing.assert_array_equal(kept.numpy(), w_val)


@pytest.mark.parametrize("ours, theirs, arrays", [m[1:] for m in METHODS], ids=[m[0] for m in METHODS])
def test_tensor_method_matches_torch(ours, theirs, arrays):
  grads_match(ours, theirs, *arrays)


def test_group_norm_is_the_one_fused_kernel_of_nn_group_norm():
  x, w, b = Tensor(X4).realize(), Tensor(W6).realize(), Tensor(B6).realize()
  layer = nn.GroupNorm(3, 6)
  layer.weight, layer.bias = w, b
  assert len(x.group_norm(3, w, b).schedule()) == len(layer(x).schedule()) == 1


# ---- running statistics: moved in place toward the batch's (the variance unbiased), in their own dtype
RUNNING = [
  ("batch_norm", lambda f, x, mean, var: f.batch_norm(x, mean, var, None, None, True, 0.3), np.float64),
  ("batch_norm_float32_statistics", lambda f, x, mean, var: f.batch_norm(x, mean, var, training=True), np.float32),
  ("instance_norm", lambda f, x, mean, var: f.instance_norm(x, mean, var, momentum=0.2), np.float64),
]


@pytest.mark.parametrize("call, statistics_dtype", [r[1:] for r in RUNNING], ids=[r[0] for r in RUNNING])
def test_running_statistics_move_as_torch(call, statistics_dtype):
  ours = [Tensor(RUNNING_MEAN.astype(statistics_dtype)), Tensor(RUNNING_VAR.astype(statistics_dtype))]
  theirs = [torch.tensor(RUNNING_MEAN.astype(statistics_dtype)), torch.tensor(RUNNING_VAR.astype(statistics_dtype))]
  x = X4 if statistics_dtype == np.float64 else X4.astype(np.float32)
  out, expected = call(F, Tensor(x), *ours), call(TF, torch.tensor(x), *theirs)
  np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)
  for mine, reference in zip(ours, theirs):
    assert mine.dtype == dtypes.from_np(np.dtype(statistics_dtype))
    np.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-6, atol=1e-6)


# ---- dropout while training: statistics, not bits (nbgrad's generator is not torch's)
def kept_channels(out: np.ndarray, feature_dims: int) -> np.ndarray:
  """Whether each channel (an index of the first feature_dims dims) of a dropout of nonzero values was kept,
  checking that each was kept or dropped whole."""
  channels = (out != 0).reshape(*out.shape[:feature_dims], -1)
  assert np.all(channels.all(-1) | ~channels.any(-1)), "a channel was partly dropped"
  return channels.all(-1)


DROPOUTS = [   # (name, call, input shape, the dims a draw covers)
  ("dropout", lambda x: F.dropout(x, 0.3), (40, 500), 2),
  ("dropout1d", lambda x: F.dropout1d(x, 0.3), (20, 200, 3), 2),
  ("dropout1d_one_sample", lambda x: F.dropout1d(x, 0.3), (4000, 3), 1),
  ("dropout2d", lambda x: F.dropout2d(x, 0.3), (20, 200, 2, 2), 2),
  ("dropout3d", lambda x: F.dropout3d(x, 0.3), (20, 200, 1, 2, 2), 2),
  ("dropout3d_one_sample", lambda x: F.dropout3d(x, 0.3), (4000, 1, 2, 2), 1),
]


@pytest.mark.parametrize("call, shape, feature_dims", [d[1:] for d in DROPOUTS], ids=[d[0] for d in DROPOUTS])
def test_dropout_zeroes_whole_channels_and_scales_the_rest(call, shape, feature_dims):
  x = Tensor(np.full(shape, 2.0), requires_grad=True)
  out = call(x)
  values = out.numpy()
  kept = kept_channels(values, feature_dims)
  assert abs(1 - kept.mean() - 0.3) < 0.03
  np.testing.assert_allclose(values[values != 0], 2.0 / 0.7)
  out.sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), np.where(values != 0, 1 / 0.7, 0.0))


ALPHA_DROPOUTS = [("alpha_dropout", lambda x: F.alpha_dropout(x, 0.2, True), False),
                  ("feature_alpha_dropout", lambda x: F.feature_alpha_dropout(x, 0.2, True), True)]


@pytest.mark.parametrize("call, whole_channels", [d[1:] for d in ALPHA_DROPOUTS], ids=[d[0] for d in ALPHA_DROPOUTS])
def test_alpha_dropout_keeps_a_zero_mean_and_unit_variance(call, whole_channels):
  p, limit = 0.2, 1.7580993408473766
  scale = 1 / math.sqrt((limit * limit * p + 1) * (1 - p))
  x = Tensor(randn(400, 20, 10, seed=31), requires_grad=True)
  out = call(x)
  values, dropped_value = out.numpy(), limit * scale * (p - 1)
  dropped = np.isclose(values, dropped_value, rtol=0, atol=1e-12)
  if whole_channels: assert np.all(dropped.all(-1) | ~dropped.any(-1)), "a channel was partly dropped"
  assert abs(dropped.mean() - p) < 0.02 and abs(values.mean()) < 0.03 and abs(values.std() - 1) < 0.03
  out.sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), np.where(dropped, 0.0, scale))


def test_dropout_follows_its_training_argument_and_the_methods_tensor_training():
  x = Tensor(np.ones((50, 50, 2)))
  with Tensor.train(False): assert (F.dropout(x, 0.5).numpy() == 0).any()
  with Tensor.train(True): np.testing.assert_array_equal(F.dropout(x, 0.5, training=False).numpy(), 1.0)
  for method in (x.dropout1d, x.dropout2d, x.alpha_dropout, x.feature_alpha_dropout):
    np.testing.assert_array_equal(method(0.5).numpy(), 1.0)


# ---- inplace=: the input holds the result where no gradient flows through it; otherwise the result is returned
def test_inplace_writes_an_input_outside_a_gradient_graph():
  plain = Tensor(X2)
  assert F.elu(plain, 0.5, True) is plain and F.hardtanh(plain, -0.5, 0.5, True) is plain and F.dropout(plain, 0.5, False, True) is plain
  np.testing.assert_allclose(plain.numpy(), np.clip(TF.elu(torch.tensor(X2), 0.5).numpy(), -0.5, 0.5))


def test_inplace_in_a_gradient_graph_returns_the_result_with_its_gradient():
  x = Tensor(X2, requires_grad=True)
  y = F.hardtanh(F.relu(x * 2, inplace=True), -0.5, 0.5, True)
  np.testing.assert_allclose(y.numpy(), np.clip(X2 * 2, 0, 0.5))
  y.sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), np.where((X2 * 2 > 0) & (X2 * 2 < 0.5), 2.0, 0.0))


def test_implicit_softmax_dim_is_torchs_with_its_warning():
  for x in (X1, X3, X4):
    with pytest.warns(UserWarning, match="Implicit dimension"): out = F.softmax(Tensor(x))
    with pytest.warns(UserWarning): expected = TF.softmax(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12)


@pytest.mark.parametrize("num_classes", [-1, 7])
def test_one_hot_is_int64_as_torch(num_classes):
  out, expected = F.one_hot(Tensor(INDICES), num_classes), TF.one_hot(torch.tensor(INDICES), num_classes)
  assert out.dtype == dtypes.int64
  np.testing.assert_array_equal(out.numpy(), expected.numpy())


def test_functions_are_made_for_the_tensor_methods_that_exist():
  for name, method in [(name, name) for name in F.SAME_ORDER] + list(F.RENAMED.items()):
    assert hasattr(F, name) == hasattr(Tensor, method), name
  assert F.group_norm.__name__ == "group_norm" and "num_groups" in F.group_norm.__doc__


@pytest.mark.parametrize("name", list(F.LOSSES))
def test_losses_take_torch_s_parameters_in_torch_s_order(name):
  """Each loss's positional parameters are torch's, and its Tensor method takes each by name (but size_average and
  reduce, which become reduction)."""
  import inspect
  torch_parameters = list(inspect.signature(getattr(TF, name)).parameters)
  assert tuple(torch_parameters[1:len(F.LOSSES[name]) + 1]) == F.LOSSES[name]
  method_parameters = inspect.signature(getattr(Tensor, name)).parameters
  assert all(p in method_parameters for p in F.LOSSES[name] if p not in ("size_average", "reduce"))
  with pytest.raises(TypeError, match="at most"): getattr(F, name)(Tensor.ones(2), *[None] * (len(F.LOSSES[name]) + 1))


def test_scaled_dot_product_attention_drops_out_outside_training_as_torch():
  """torch's F applies dropout_p whatever the mode (Tensor's method only when Tensor.training, as tinygrad's): about
  half the weights dropped, the kept scaled by 2, so each output row's sum is about twice a kept fraction."""
  q = Tensor(randn(2, 64, 8, seed=36))
  assert not Tensor.training
  ones = Tensor.ones(2, 64, 1)
  dropped = F.scaled_dot_product_attention(q, q, ones, dropout_p=0.5).numpy()
  assert set(np.unique(np.round(dropped, 6))) != {1.0} and abs(dropped.mean() - 1) < 0.1
  np.testing.assert_allclose(F.scaled_dot_product_attention(q, q, ones).numpy(), 1, rtol=1e-6)
  assert not Tensor.training


# ---- bad input: (id, call, error, message)
ONES4 = Tensor.ones(2, 6, 4, 4)
ERRORS = [
  ("sdpa_mask_and_causal", lambda: F.scaled_dot_product_attention(ONES4, ONES4, ONES4, Tensor.ones(4, 4), is_causal=True), ValueError, "not both"),
  ("sdpa_gqa_groups", lambda: F.scaled_dot_product_attention(Tensor.ones(1, 3, 2, 4), Tensor.ones(1, 2, 2, 4), Tensor.ones(1, 2, 2, 4), enable_gqa=True),
   ValueError, "3 query heads to be a multiple of the 2 key heads"),
  ("triplet_distance_margin", lambda: F.triplet_margin_with_distance_loss(ONES4, ONES4, ONES4, margin=0), ValueError, "greater than 0"),
  ("not_a_tensor", lambda: F.relu(X2), TypeError, "takes a Tensor"),
  ("group_norm_groups", lambda: F.group_norm(ONES4, 4), ValueError, "num_groups=4 must divide the 6 channels"),
  ("group_norm_vector", lambda: F.group_norm(Tensor.ones(6), 3), ValueError, r"at least 2 dims, got shape \(6,\)"),
  ("group_norm_weight", lambda: F.group_norm(ONES4, 3, Tensor.ones(4)), ValueError, r"weight of shape \(4,\).*needs \(6,\)"),
  ("layer_norm_shape", lambda: F.layer_norm(ONES4, (5,)), ValueError, r"over \(5,\) got an input of shape \(2, 6, 4, 4\)"),
  ("layer_norm_empty_shape", lambda: F.layer_norm(ONES4, ()), ValueError, "at least one dim"),
  ("rms_norm_shape", lambda: F.rms_norm(ONES4, (6, 4)), ValueError, r"last dims must be \(6, 4\)"),
  ("batch_norm_evaluation_without_statistics", lambda: F.batch_norm(ONES4, None, None), ValueError, "needs running_mean"),
  ("batch_norm_one_value_per_channel", lambda: F.batch_norm(Tensor.ones(1, 6), None, None, training=True), ValueError, "more than 1 value"),
  ("batch_norm_statistics_shape", lambda: F.batch_norm(ONES4, Tensor.ones(3), Tensor.ones(3)), ValueError, r"running_mean of shape \(3,\)"),
  ("batch_norm_one_statistic", lambda: F.batch_norm(ONES4, Tensor.ones(6), None, training=True), ValueError, "both"),
  ("instance_norm_one_element", lambda: F.instance_norm(Tensor.ones(2, 6, 1)), ValueError, "more than 1 spatial element"),
  ("local_response_norm_2d", lambda: F.local_response_norm(Tensor.ones(2, 6), 2), ValueError, "at least 3 dims"),
  ("local_response_norm_size", lambda: F.local_response_norm(ONES4, 0), ValueError, "at least 1"),
  ("conv1d_of_4d", lambda: F.conv1d(ONES4, Tensor.ones(2, 6, 3)), ValueError, r"input of 3 dims \(or 2 for one sample\)"),
  ("conv2d_weight_rank", lambda: F.conv2d(ONES4, Tensor.ones(2, 6, 3)), ValueError, r"weight of 4 dims, got shape \(2, 6, 3\)"),
  ("conv_transpose3d_weight_rank", lambda: ONES4.conv_transpose3d(Tensor.ones(6, 2, 3, 3)), ValueError, "weight of 5 dims"),
  ("linear_weight_rank", lambda: F.linear(ONES4, Tensor.ones(1, 2, 4)), ValueError, r"1 or 2 dims, got shape \(1, 2, 4\)"),
  ("channel_shuffle_groups", lambda: F.channel_shuffle(ONES4, 4), ValueError, "C a multiple of 4"),
  ("embedding_float_indices", lambda: F.embedding(Tensor([0.0, 1.0]), Tensor.ones(3, 2)), TypeError, "int tensor"),
  ("embedding_weight_rank", lambda: F.embedding(Tensor([0, 1]), Tensor.ones(3)), ValueError, r"got shape \(3,\)"),
  ("embedding_padding_idx", lambda: F.embedding(Tensor([0, 1]), Tensor.ones(3, 2), 3), ValueError, "padding_idx 3 is out of range for 3 rows"),
  ("embedding_max_norm_negative", lambda: F.embedding(Tensor([0, 1]), Tensor.ones(3, 2), max_norm=-1.0), ValueError, "max_norm must be a number >= 0, got -1.0"),
  ("dropout_probability", lambda: F.dropout(ONES4, 1.5), ValueError, "1.5"),
  ("dropout1d_rank", lambda: F.dropout1d(ONES4, 0.5), ValueError, r"2 or 3 dims, got shape \(2, 6, 4, 4\)"),
  ("dropout3d_rank", lambda: F.dropout3d(Tensor.ones(2, 6, 4), 0.5), ValueError, "4 or 5 dims"),
  ("alpha_dropout_probability", lambda: F.alpha_dropout(ONES4, -0.1, True), ValueError, "-0.1"),
  ("interpolate_size_and_scale", lambda: F.interpolate(ONES4, 3, 2.0), ValueError, "exactly one of size and scale_factor"),
  ("interpolate_mode_rank", lambda: F.interpolate(Tensor.ones(2, 6, 4), 3, mode="bilinear"), ValueError, "needs a 4-D input"),
  ("interpolate_corners_nearest", lambda: F.interpolate(ONES4, 3, align_corners=True), ValueError, "align_corners"),
  ("interpolate_size_count", lambda: F.interpolate(ONES4, (3, 3, 3)), ValueError, "one per spatial dim"),
  ("interpolate_antialias_nearest", lambda: F.interpolate(ONES4, 3, antialias=True), ValueError, "antialias is an option of the modes"),
  ("interpolate_rank", lambda: F.interpolate(Tensor.ones(6, 4), 3), ValueError, r"3 to 5 dims, got shape \(6, 4\)"),
  ("one_hot_floats", lambda: F.one_hot(Tensor([1.0]), 3), TypeError, "int class indices"),
  ("one_hot_negative", lambda: F.one_hot(Tensor([1, -2])), ValueError, "non-negative, got -2"),
  ("softmax_dim", lambda: F.softmax(ONES4, 4), IndexError, "axis 4"),
  ("lp_pool_norm_0", lambda: F.lp_pool2d(ONES4, 0, 2), ValueError, "must not be 0"),
  ("inplace_leaf", lambda: F.relu(Tensor.ones(3, requires_grad=True), inplace=True), RuntimeError, "leaf tensor of shape"),
  ("cross_entropy_reduction", lambda: F.cross_entropy(Tensor(X2), Tensor(TARGETS), reduction="avg"), ValueError, "'avg'"),
  ("cross_entropy_probabilities_ignore_index", lambda: F.cross_entropy(Tensor(X2), Tensor(PROBABILITIES), ignore_index=1), ValueError,
   "ignore_index=1"),
  ("group_norm_one_value_a_group", lambda: F.group_norm(Tensor([[2.0, 3.0]]), 2), ValueError, r"more than 1 value per group.*\(1, 2\)"),
]


@pytest.mark.parametrize("call, error, match", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_bad_input_raises_a_clear_error(call, error, match):
  with pytest.raises(error, match=match): call()


@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch_forward_and_backward(bias):
  rng = np.random.default_rng(11)
  arrays = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (2, 3, 5), (6, 4, 5), (6,))]
  ours = [Tensor(a, requires_grad=True) for a in arrays]
  theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
  mine = F.bilinear(*ours[:3], ours[3] if bias else None)
  reference = TF.bilinear(*theirs[:3], theirs[3] if bias else None)
  np.testing.assert_allclose(mine.numpy(), reference.detach().numpy(), rtol=1e-5, atol=1e-5)
  mine.square().sum().backward()
  reference.square().sum().backward()
  for o, t in zip(ours[:4 if bias else 3], theirs): np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)
  with pytest.raises(ValueError, match="bilinear"): F.bilinear(ours[0], ours[0], ours[2])
