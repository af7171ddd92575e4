"""torch.nn.functional's losses and distances as Tensor methods (input.method(target, ...)): values and gradients
against torch (CPU, float64), the shapes of reduction='none', float32 results, and the errors torch raises for shapes
that do not fit. Each row is (method, positional arguments, keyword arguments): a float64 array is a leaf whose
gradient is compared, a Transposed array such a leaf given as a transposed view (not contiguous), a Const an argument
without a gradient (int targets, and those torch takes no gradient by)."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from against_torch import grads_match
from nbgrad import Tensor, dtypes
import nbgrad.nn.functional as F_nb


class Const:
  """An argument that is not a gradient leaf; torch_float gives torch the values as floats (it refuses int targets
  where nbgrad takes them)."""
  def __init__(self, array, torch_float=False):
    self.array, self.torch_float = np.asarray(array), torch_float

  def nbgrad(self): return Tensor(self.array)
  def torch(self): return torch.tensor(self.array, dtype=torch.float64 if self.torch_float else None)


class Transposed:
  """A gradient leaf that the method gets transposed: a view whose strides are not the contiguous ones."""
  def __init__(self, array): self.array = array


def leaves_of(args, kwargs):
  return [a.array if isinstance(a, Transposed) else a for a in (*args, *kwargs.values()) if isinstance(a, (np.ndarray, Transposed))]


def normal(*shape, seed=0): return np.random.default_rng(seed).standard_normal(shape)
def positive(*shape, seed=1): return np.random.default_rng(seed).uniform(0.2, 2.5, shape)
def probability(*shape, seed=2): return np.random.default_rng(seed).uniform(0.05, 0.95, shape)
def signs(*shape, seed=3): return np.where(np.random.default_rng(seed).random(shape) < 0.5, -1.0, 1.0)
def labels(*shape, classes=4, seed=4): return np.random.default_rng(seed).integers(0, classes, shape)


def call(method, args, kwargs, leaves, convert, fn=None):
  """method called on args and kwargs with each array replaced by the next leaf (transposed for a Transposed) and each
  Const converted."""
  leaves = iter(leaves)
  def arg(a):
    if isinstance(a, (np.ndarray, Transposed)): return next(leaves).T if isinstance(a, Transposed) else next(leaves)
    return convert(a) if isinstance(a, Const) else a
  positional, keywords = [arg(a) for a in args], {k: arg(v) for k, v in kwargs.items()}
  if fn is not None: return fn(*positional, **keywords)
  return getattr(positional[0], method)(*positional[1:], **keywords)


def check_against_torch(method, args, kwargs):
  leaves = leaves_of(args, kwargs)
  def ours(*tensors):
    with warnings.catch_warnings():
      warnings.simplefilter("error")   # no warning where torch warns of a broadcast target or kl_div's mean
      return call(method, args, kwargs, tensors, Const.nbgrad)
  def theirs(*tensors):
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      return call(method, args, kwargs, tensors, Const.torch, getattr(F, method))
  grads_match(ours, theirs, *leaves)


def rows(table):
  return pytest.mark.parametrize("method, args, kwargs", list(table.values()), ids=list(table))


X, Y, W = normal(3, 4), normal(3, 4, seed=5), positive(3, 4)
X_T = Transposed(normal(4, 3, seed=8))   # a (3, 4) input as a transposed view
EMPTY = np.zeros((0, 4))

DIFFERENCES = {
  "mse": ("mse_loss", (X, Y), {}),
  "mse_target_broadcast_none": ("mse_loss", (X, normal(4)), {"reduction": "none"}),
  "mse_size_1_dim_sum": ("mse_loss", (normal(3, 1), Y), {"reduction": "sum"}),
  "mse_weight_mean_over_weights": ("mse_loss", (X, Y), {"weight": W}),
  "mse_0d": ("mse_loss", (normal(), normal(seed=5)), {}),
  "mse_empty_batch_nan": ("mse_loss", (EMPTY, EMPTY), {}),
  "mse_int_target": ("mse_loss", (X, Const(labels(3, 4))), {}),
  "mse_transposed_none": ("mse_loss", (X_T, Y), {"reduction": "none"}),
  "l1_sum": ("l1_loss", (X, Y), {"reduction": "sum"}),
  "l1_weight_none": ("l1_loss", (X, Y), {"reduction": "none", "weight": W}),
  "l1_1d": ("l1_loss", (normal(4), normal(4, seed=5)), {}),
  "huber": ("huber_loss", (X, Y), {"delta": 0.5}),
  "huber_weight_mean_over_count": ("huber_loss", (X, Y), {"delta": 2.0, "weight": W}),
  "huber_none": ("huber_loss", (X, Y), {"reduction": "none"}),
  "smooth_l1": ("smooth_l1_loss", (X, Y), {"beta": 0.5}),
  "smooth_l1_beta_0_is_l1": ("smooth_l1_loss", (X, Y), {"beta": 0.0, "reduction": "none"}),
  "huber_transposed_target": ("huber_loss", (X, X_T), {"reduction": "sum"}),
  "smooth_l1_int_target_sum": ("smooth_l1_loss", (X, Const(labels(3, 4))), {"reduction": "sum"}),
}


@rows(DIFFERENCES)
def test_difference_losses_as_torch(method, args, kwargs):
  check_against_torch(method, args, kwargs)


LIKELIHOODS = {
  "kl_div_mean": ("kl_div", (X, positive(3, 4)), {}),
  "kl_div_batchmean": ("kl_div", (X, positive(3, 4)), {"reduction": "batchmean"}),
  "kl_div_log_target_none": ("kl_div", (X, Y), {"log_target": True, "reduction": "none"}),
  "kl_div_batchmean_by_input_rows": ("kl_div", (normal(4), positive(3, 4)), {"reduction": "batchmean"}),
  "kl_div_0d_batchmean": ("kl_div", (normal(), positive()), {"reduction": "batchmean"}),
  "kl_div_empty_batchmean_nan": ("kl_div", (EMPTY, EMPTY + 0.5), {"reduction": "batchmean"}),
  "kl_div_int_target": ("kl_div", (X, Const(labels(3, 4), torch_float=True)), {"reduction": "sum"}),
  "kl_div_transposed": ("kl_div", (X_T, positive(3, 4)), {"reduction": "batchmean"}),
  "gaussian_nll": ("gaussian_nll_loss", (X, Y, W), {}),
  "gaussian_nll_var_without_last_dim": ("gaussian_nll_loss", (X, Y, positive(3)), {"reduction": "none"}),
  "gaussian_nll_var_size_1_dim_full": ("gaussian_nll_loss", (X, Y, positive(3, 1)), {"full": True}),
  "gaussian_nll_var_number": ("gaussian_nll_loss", (X, Y, 0.7), {"reduction": "sum"}),
  "gaussian_nll_var_under_eps": ("gaussian_nll_loss", (X, Y, W), {"eps": 1.0}),
  "gaussian_nll_1d_0d_var": ("gaussian_nll_loss", (normal(4), normal(4, seed=5), positive()), {"reduction": "none"}),
  "gaussian_nll_transposed_var": ("gaussian_nll_loss", (X, Y, Transposed(positive(4, 3))), {}),
  "gaussian_nll_int_target": ("gaussian_nll_loss", (X, Const(labels(3, 4)), W), {}),
  "poisson_nll": ("poisson_nll_loss", (X, positive(3, 4)), {}),
  "poisson_nll_rates_none": ("poisson_nll_loss", (positive(3, 4, seed=5), positive(3, 4)), {"log_input": False, "reduction": "none"}),
  "poisson_nll_full": ("poisson_nll_loss", (X, positive(3, 4)), {"full": True, "reduction": "sum"}),
  "poisson_nll_int_counts_full": ("poisson_nll_loss", (X, Const(labels(3, 4))), {"full": True}),
  "poisson_nll_target_broadcast": ("poisson_nll_loss", (W, positive(4)), {"eps": 0.1, "log_input": False, "reduction": "none"}),
}


@rows(LIKELIHOODS)
def test_divergence_and_likelihood_losses_as_torch(method, args, kwargs):
  check_against_torch(method, args, kwargs)


P, Q = probability(3, 4), probability(3, 4, seed=5)
BINARY = {
  "bce": ("binary_cross_entropy", (P, Q), {}),
  "bce_weight_by_class_sum": ("binary_cross_entropy", (P, Q), {"weight": Const(positive(4)), "reduction": "sum"}),
  "bce_0d": ("binary_cross_entropy", (probability(), probability(seed=5)), {}),
  "bce_empty_batch_nan": ("binary_cross_entropy", (EMPTY + 0.5, EMPTY), {}),
  "bce_int_target_none": ("binary_cross_entropy", (P, Const(labels(3, 4, classes=2), torch_float=True)), {"reduction": "none"}),
  "bce_logits": ("binary_cross_entropy_with_logits", (X, Q), {}),
  "bce_logits_weights": ("binary_cross_entropy_with_logits", (X, Q), {"weight": Const(positive(3, 1)), "pos_weight": Const(positive(4))}),
  "bce_logits_large_1d_none": ("binary_cross_entropy_with_logits", (np.array([-60.0, -3.0, 0.5, 80.0]), probability(4)),
                               {"reduction": "none", "pos_weight": Const(positive(4))}),
  "bce_logits_int_target": ("binary_cross_entropy_with_logits", (X, Const(labels(3, 4, classes=2), torch_float=True)), {"reduction": "sum"}),
  "bce_logits_transposed": ("binary_cross_entropy_with_logits", (X_T, Transposed(probability(4, 3))), {"reduction": "none"}),
  "soft_margin": ("soft_margin_loss", (X, Const(signs(3, 4))), {}),
  "soft_margin_target_broadcast_none": ("soft_margin_loss", (X, Const(signs(4))), {"reduction": "none"}),
  "soft_margin_int_target_0d": ("soft_margin_loss", (normal(), Const(np.array(-1))), {}),
  "multilabel_soft_margin": ("multilabel_soft_margin_loss", (X, Q), {}),
  "multilabel_soft_margin_weight_none": ("multilabel_soft_margin_loss", (X, Q), {"weight": positive(4), "reduction": "none"}),
  "multilabel_soft_margin_1d": ("multilabel_soft_margin_loss", (normal(4), probability(4)), {}),
  "multilabel_soft_margin_int_target_sum": ("multilabel_soft_margin_loss", (X, Const(labels(3, 4, classes=2))), {"reduction": "sum"}),
}


@rows(BINARY)
def test_binary_losses_as_torch(method, args, kwargs):
  check_against_torch(method, args, kwargs)


RANKING = {
  "margin_ranking": ("margin_ranking_loss", (X, Y, signs(3, 4)), {}),
  "margin_ranking_broadcast_none": ("margin_ranking_loss", (X, normal(1, 4), signs(3, 1)), {"margin": 0.5, "reduction": "none"}),
  "margin_ranking_0d": ("margin_ranking_loss", (normal(), normal(seed=5), signs()), {"margin": 0.5}),
  "margin_ranking_int_target_sum": ("margin_ranking_loss", (normal(4), normal(4, seed=5), Const([1, -1, -1, 1])), {"reduction": "sum"}),
  "margin_ranking_empty_nan": ("margin_ranking_loss", (np.zeros(0), np.zeros(0), np.zeros(0)), {}),
  "hinge_embedding": ("hinge_embedding_loss", (X, Const(signs(3, 4))), {}),
  "hinge_embedding_other_targets_none": ("hinge_embedding_loss", (X, Const(labels(3, 4, classes=3) - 1.0)), {"margin": 0.5, "reduction": "none"}),
  "hinge_embedding_at_the_margin": ("hinge_embedding_loss", (np.array([1.0, 0.25, 2.0]), Const([-1, -1, 1])), {"reduction": "sum"}),
  "hinge_embedding_0d": ("hinge_embedding_loss", (normal(), Const(np.array(-1.0))), {}),
  "cosine_embedding": ("cosine_embedding_loss", (X, Y, Const(signs(3))), {}),
  "cosine_embedding_margin_broadcast_none": ("cosine_embedding_loss", (X, normal(1, 4, seed=6), Const(signs(3))), {"margin": -0.3, "reduction": "none"}),
  "cosine_embedding_1d": ("cosine_embedding_loss", (normal(4), normal(4, seed=5), Const(np.array(-1.0))), {"margin": -0.5}),
  "cosine_embedding_int_target_sum": ("cosine_embedding_loss", (X, Y, Const([1, -1, 1])), {"reduction": "sum"}),
  "cosine_embedding_empty_nan": ("cosine_embedding_loss", (EMPTY, EMPTY, Const(np.zeros(0))), {}),
  "cosine_embedding_transposed": ("cosine_embedding_loss", (X_T, Y, Const(signs(3))), {"reduction": "none"}),
  "triplet": ("triplet_margin_loss", (X, Y, normal(3, 4, seed=6)), {}),
  "triplet_swap_p1_none": ("triplet_margin_loss", (X, Y, normal(3, 4, seed=6)), {"swap": True, "p": 1, "reduction": "none"}),
  "triplet_broadcast_p3": ("triplet_margin_loss", (X, normal(1, 4, seed=5), normal(3, 4, seed=6)), {"p": 3, "margin": 2.0}),
  "triplet_transposed": ("triplet_margin_loss", (X_T, Y, Transposed(normal(4, 3, seed=6))), {"swap": True}),
  "triplet_1d": ("triplet_margin_loss", (normal(4), normal(4, seed=5), normal(4, seed=6)), {"margin": 3.0, "eps": 0.1}),
  "triplet_0d_sum": ("triplet_margin_loss", (normal(), normal(seed=5), normal(seed=6)), {"margin": 3.0, "reduction": "sum"}),
}


@rows(RANKING)
def test_ranking_and_embedding_losses_as_torch(method, args, kwargs):
  check_against_torch(method, args, kwargs)


DISTINCT_ROWS = normal(4, 3, seed=7)
DISTANCES = {
  "pairwise_distance": ("pairwise_distance", (X, Y), {}),
  "pairwise_distance_keepdim_p1": ("pairwise_distance", (X, Y), {"p": 1, "keepdim": True}),
  "pairwise_distance_inf_broadcast": ("pairwise_distance", (X, normal(4, seed=5)), {"p": np.inf}),
  "pairwise_distance_p3_eps": ("pairwise_distance", (X, Y), {"p": 3.0, "eps": 0.5}),
  "pairwise_distance_negative_p": ("pairwise_distance", (X, Y), {"p": -1.0}),
  "pairwise_distance_1d": ("pairwise_distance", (normal(4), normal(4, seed=5)), {}),
  "pairwise_distance_0d_keepdim": ("pairwise_distance", (normal(), normal(seed=5)), {"keepdim": True}),
  "pairwise_distance_empty_last_dim": ("pairwise_distance", (np.zeros((3, 0)), np.zeros((3, 0))), {}),
  "pdist": ("pdist", (DISTINCT_ROWS,), {}),
  "pdist_p1": ("pdist", (DISTINCT_ROWS,), {"p": 1}),
  "pdist_inf": ("pdist", (DISTINCT_ROWS,), {"p": np.inf}),
  "pdist_p_half": ("pdist", (DISTINCT_ROWS,), {"p": 0.5}),
  "pdist_equal_rows": ("pdist", (np.array([[1.0, 2.0], [1.0, 2.0], [0.5, -1.0]]),), {}),
  "pdist_transposed": ("pdist", (X_T,), {}),
  "pdist_one_row": ("pdist", (normal(1, 3),), {}),
  "pdist_no_columns": ("pdist", (np.zeros((4, 0)),), {}),
  "softmin": ("softmin", (X, 1), {}),
  "softmin_dim0": ("softmin", (X,), {"dim": 0}),
  "softmin_transposed": ("softmin", (X_T, 1), {}),
  "softmin_0d": ("softmin", (normal(), 0), {}),
}


@rows(DISTANCES)
def test_distances_and_softmin_as_torch(method, args, kwargs):
  check_against_torch(method, args, kwargs)


def test_softmin_without_dim_takes_torch_s_old_default():
  for shape in ((4,), (3, 4), (2, 3, 4)):
    x = normal(*shape)
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      expected = F.softmin(torch.tensor(x)).numpy()
    np.testing.assert_allclose(Tensor(x).softmin().numpy(), expected, rtol=1e-9)


MULTILABEL = np.array([[0, 3, -1, 1], [2, 2, -1, 0], [-1, 0, 0, 0]])
CLASS_MARGINS = {
  "multi_margin": ("multi_margin_loss", (X, Const(labels(3))), {}),
  "multi_margin_p2_weight_none": ("multi_margin_loss", (X, Const(labels(3))), {"p": 2, "margin": 0.5, "weight": Const(positive(4)), "reduction": "none"}),
  "multi_margin_1d_0d_target": ("multi_margin_loss", (normal(4), Const(np.array(2))), {"reduction": "none"}),
  "multi_margin_1d_1_target": ("multi_margin_loss", (normal(4), Const([1])), {"reduction": "none", "margin": 2.0}),
  "multi_margin_0d": ("multi_margin_loss", (normal(), Const(np.array(0))), {}),
  "multi_margin_transposed": ("multi_margin_loss", (X_T, Const(labels(3))), {"p": 2}),
  "multi_margin_empty_batch_none": ("multi_margin_loss", (EMPTY, Const(np.zeros(0, dtype=np.int64))), {"reduction": "none"}),
  "multilabel_margin": ("multilabel_margin_loss", (X, Const(MULTILABEL)), {}),
  "multilabel_margin_none": ("multilabel_margin_loss", (X, Const(MULTILABEL)), {"reduction": "none"}),
  "multilabel_margin_transposed": ("multilabel_margin_loss", (X_T, Const(MULTILABEL)), {}),
  "multilabel_margin_1d_repeated_label": ("multilabel_margin_loss", (normal(4), Const([3, 3, 0, -1])), {}),
  "multilabel_margin_0d": ("multilabel_margin_loss", (normal(), Const(np.array(0))), {"reduction": "sum"}),
}


@rows(CLASS_MARGINS)
def test_class_margin_losses_as_torch(method, args, kwargs):
  check_against_torch(method, args, kwargs)


# the methods and arguments of a (3, 4) input in float32, with torch's float32 results as the reference
FLOAT32 = {name: DIFFERENCES[name] for name in ("mse", "l1_sum", "huber", "smooth_l1")}
FLOAT32.update({name: table[name] for table, name in ((LIKELIHOODS, "kl_div_batchmean"), (LIKELIHOODS, "gaussian_nll"),
  (LIKELIHOODS, "poisson_nll"), (BINARY, "bce"), (BINARY, "bce_logits_weights"), (BINARY, "soft_margin"),
  (BINARY, "multilabel_soft_margin"), (RANKING, "margin_ranking"), (RANKING, "hinge_embedding"),
  (RANKING, "cosine_embedding"), (RANKING, "triplet"), (DISTANCES, "pairwise_distance"), (DISTANCES, "pdist"),
  (DISTANCES, "softmin"), (DISTANCES, "pdist_transposed"), (CLASS_MARGINS, "multi_margin_p2_weight_none"), (CLASS_MARGINS, "multilabel_margin"))})


def float32(a):
  if isinstance(a, np.ndarray): return a.astype(np.float32)
  if isinstance(a, Transposed): return Transposed(a.array.astype(np.float32))
  if isinstance(a, Const) and a.array.dtype == np.float64: return Const(a.array.astype(np.float32))
  return a


@rows(FLOAT32)
def test_float32_inputs_give_float32_results(method, args, kwargs):
  args, kwargs = [float32(a) for a in args], {k: float32(v) for k, v in kwargs.items()}
  leaves = leaves_of(args, kwargs)
  ours = call(method, args, kwargs, [Tensor(a) for a in leaves], Const.nbgrad)
  expected = call(method, args, kwargs, [torch.tensor(a) for a in leaves], Const.torch, getattr(F, method))
  assert ours.dtype == dtypes.float32 and expected.dtype == torch.float32
  np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=2e-5, atol=2e-6)


def test_a_float64_target_promotes_a_float32_input_as_torch():
  x, target = Tensor(X.astype(np.float32)), Tensor(Y)
  assert x.mse_loss(target).dtype == x.l1_loss(target, reduction="none").dtype == dtypes.float64
  assert Tensor(labels(3)).pairwise_distance(Tensor(labels(3, seed=5))).dtype == dtypes.float32   # ints: the default float


ERRORS = {
  "mse_shapes": ("mse_loss", (X, normal(3)), {}, ValueError, r"\(3, 4\).*\(3,\)"),
  "mse_weight_shape": ("mse_loss", (X, Y), {"weight": positive(4)}, ValueError, r"weight of shape \(4,\).*\(3, 4\)"),
  "huber_delta_0": ("huber_loss", (X, Y), {"delta": 0.0}, ValueError, "delta"),
  "smooth_l1_negative_beta": ("smooth_l1_loss", (X, Y), {"beta": -1.0}, ValueError, "beta"),
  "kl_div_reduction": ("kl_div", (X, Y), {"reduction": "avg"}, ValueError, "'batchmean'.*'avg'"),
  "bce_target_shape": ("binary_cross_entropy", (P, probability(4)), {}, ValueError, r"\(4,\).*\(3, 4\)"),
  "bce_weight_widens": ("binary_cross_entropy", (P, Q), {"weight": positive(2, 3, 4)}, ValueError, r"\(2, 3, 4\).*\(3, 4\)"),
  "bce_logits_target_shape": ("binary_cross_entropy_with_logits", (normal(4), probability(3, 4)), {}, ValueError, r"\(3, 4\).*\(4,\)"),
  "bce_logits_pos_weight": ("binary_cross_entropy_with_logits", (X, Q), {"pos_weight": positive(3)}, ValueError, r"\(3, 4\).*\(3,\)"),
  "soft_margin_shapes": ("soft_margin_loss", (normal(3), signs(4)), {}, ValueError, r"\(3,\).*\(4,\)"),
  "margin_ranking_dims": ("margin_ranking_loss", (X, normal(4), signs(3, 4)), {}, ValueError, r"\(3, 4\).*\(4,\)"),
  "cosine_embedding_2d_target": ("cosine_embedding_loss", (X, Y, signs(3, 1)), {}, ValueError, r"\(3, 1\)"),
  "cosine_embedding_0d_target_of_rows": ("cosine_embedding_loss", (X, Y, signs()), {}, ValueError, r"\(3, 4\)"),
  "cosine_embedding_target_rows": ("cosine_embedding_loss", (X, Y, signs(2)), {}, ValueError, r"\(3,\).*\(2,\)"),
  "triplet_margin_0": ("triplet_margin_loss", (X, Y, Y), {"margin": 0.0}, ValueError, "margin"),
  "triplet_dims": ("triplet_margin_loss", (X, normal(4), Y), {}, ValueError, r"\(3, 4\).*\(4,\)"),
  "gaussian_nll_var_shape": ("gaussian_nll_loss", (X, Y, positive(4)), {}, ValueError, r"\(4,\).*\(3, 4\)"),
  "gaussian_nll_negative_var": ("gaussian_nll_loss", (X, Y, -0.5), {}, ValueError, "var"),
  "poisson_nll_reduction": ("poisson_nll_loss", (X, Y), {"reduction": "batchmean"}, ValueError, "'batchmean'"),
  "multilabel_soft_margin_0d": ("multilabel_soft_margin_loss", (normal(), probability()), {}, (ValueError, IndexError), r"\(\)"),
  "multi_margin_p3": ("multi_margin_loss", (X, labels(3)), {"p": 3}, ValueError, "p"),
  "multi_margin_float_target": ("multi_margin_loss", (X, normal(3)), {}, TypeError, "class indices"),
  "multi_margin_target_shape": ("multi_margin_loss", (X, labels(2)), {}, ValueError, r"\(2,\).*\(3, 4\)"),
  "multi_margin_3d": ("multi_margin_loss", (normal(2, 3, 4), labels(2)), {}, ValueError, r"\(2, 3, 4\)"),
  "multi_margin_no_classes": ("multi_margin_loss", (np.zeros((3, 0)), labels(3)), {}, ValueError, r"\(3, 0\)"),
  "multi_margin_weight": ("multi_margin_loss", (X, labels(3)), {"weight": positive(3)}, ValueError, r"\(3,\)"),
  "multilabel_margin_target_shape": ("multilabel_margin_loss", (X, labels(3)), {}, ValueError, r"\(3,\).*\(3, 4\)"),
  "pdist_1d": ("pdist", (normal(3),), {}, ValueError, r"\(3,\)"),
  "pdist_negative_p": ("pdist", (X,), {"p": -1.0}, ValueError, "p"),
}


@pytest.mark.parametrize("method, args, kwargs, error, message", list(ERRORS.values()), ids=list(ERRORS))
def test_shapes_and_options_that_torch_refuses(method, args, kwargs, error, message):
  with pytest.raises(Exception), warnings.catch_warnings():   # the reference: torch refuses them too
    warnings.simplefilter("ignore")
    getattr(F, method)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args],
             **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})
  with pytest.raises(error, match=message):
    getattr(Tensor(args[0]), method)(*[Tensor(a) if isinstance(a, np.ndarray) else a for a in args[1:]],
                                     **{k: Tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})


CALLS = {
  "mse_loss": (Y,), "l1_loss": (Y,), "huber_loss": (Y,), "smooth_l1_loss": (Y,), "kl_div": (Y,),
  "gaussian_nll_loss": (Y, W), "poisson_nll_loss": (Y,), "binary_cross_entropy": (Q,), "binary_cross_entropy_with_logits": (Q,),
  "soft_margin_loss": (Y,), "multilabel_soft_margin_loss": (Q,), "margin_ranking_loss": (Y, Y), "hinge_embedding_loss": (Y,),
  "cosine_embedding_loss": (Y, normal(3)), "triplet_margin_loss": (Y, Y), "multi_margin_loss": (labels(3),),
  "multilabel_margin_loss": (MULTILABEL,),
}


@pytest.mark.parametrize("method", list(CALLS))
def test_an_unknown_reduction_names_the_loss_and_the_value(method):
  with pytest.raises(ValueError, match=f"{method} reduction must be .*'average'"):
    getattr(Tensor(P), method)(*[Tensor(a) for a in CALLS[method]], reduction="average")


# ---- connectionist temporal classification
def _ctc_case(frames=12, batch=4, classes=6, longest=5, seed=0):
  """Log-probabilities (frames, batch, classes), padded labels (with repeats, which need a blank between them) and
  lengths: full, shorter, and one sample whose labels cannot fit its frames."""
  rng = np.random.default_rng(seed)
  logits = rng.normal(size=(frames, batch, classes))
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  labels = rng.integers(1, classes, size=(batch, longest))
  labels[0, 1] = labels[0, 2]
  input_lengths = np.array([frames, frames - 3, 2, frames][:batch])
  target_lengths = np.array([longest, 3, 2, 0][:batch])
  labels[2, :2] = 3   # two equal labels in 2 frames: impossible
  return log_probs, labels, input_lengths, target_lengths


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_and_its_gradient_as_torch(reduction, zero_infinity):
  log_probs, labels, input_lengths, target_lengths = _ctc_case()
  def ours(x): return x.ctc_loss(Tensor(labels), Tensor(input_lengths), target_lengths.tolist(), 0, reduction, zero_infinity)
  def theirs(x): return F.ctc_loss(x, torch.tensor(labels), torch.tensor(input_lengths), torch.tensor(target_lengths), 0, reduction, zero_infinity)
  if zero_infinity: grads_match(ours, theirs, log_probs)
  else:   # the impossible sample: inf, and a nan gradient over its frames, as torch's
    x, xt = Tensor(log_probs, requires_grad=True), torch.tensor(log_probs, requires_grad=True)
    loss, expected = ours(x), theirs(xt)
    np.testing.assert_allclose(loss.numpy(), expected.detach().numpy(), rtol=1e-9)
    loss.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_ctc_loss_of_concatenated_targets_one_sample_another_blank_and_float32_as_torch():
  log_probs, labels, input_lengths, target_lengths = _ctc_case(seed=1)
  concatenated = np.concatenate([row[:n] for row, n in zip(labels, target_lengths)])
  grads_match(lambda x: F_nb.ctc_loss(x, Tensor(concatenated), tuple(input_lengths), tuple(target_lengths), zero_infinity=True, reduction="sum"),
              lambda x: F.ctc_loss(x, torch.tensor(concatenated), tuple(input_lengths), tuple(target_lengths), zero_infinity=True, reduction="sum"),
              log_probs)
  grads_match(lambda x: x.ctc_loss(Tensor(labels[0]), Tensor(12), Tensor(5)),
              lambda x: F.ctc_loss(x, torch.tensor(labels[0]), torch.tensor(12), torch.tensor(5)), log_probs[:, 0])
  moved = np.roll(log_probs, 1, axis=-1)   # class 5 as the blank, which no label is
  labels = np.where(labels == 5, 0, labels)
  grads_match(lambda x: x.ctc_loss(Tensor(labels), input_lengths, target_lengths, blank=5, zero_infinity=True),
              lambda x: F.ctc_loss(x, torch.tensor(labels), torch.tensor(input_lengths), torch.tensor(target_lengths), blank=5, zero_infinity=True), moved)
  single = Tensor(log_probs.astype(np.float32)).ctc_loss(Tensor(labels), input_lengths, target_lengths, zero_infinity=True, reduction="none")
  expected = F.ctc_loss(torch.tensor(log_probs, dtype=torch.float32), torch.tensor(labels), torch.tensor(input_lengths),
                        torch.tensor(target_lengths), zero_infinity=True, reduction="none")
  assert single.dtype == dtypes.float32
  np.testing.assert_allclose(single.numpy(), expected.numpy(), rtol=1e-5)


def test_ctc_loss_trains_logits_through_log_softmax_as_torch():
  """torch's gradient with respect to log_probs is the one with respect to the logits behind a log_softmax (not the
  true derivative), so chained through log_softmax both give the logits' true gradient."""
  log_probs, labels, input_lengths, target_lengths = _ctc_case(seed=2)
  grads_match(lambda x: x.log_softmax(-1).ctc_loss(Tensor(labels), input_lengths, target_lengths, zero_infinity=True),
              lambda x: F.ctc_loss(x.log_softmax(-1), torch.tensor(labels), torch.tensor(input_lengths), torch.tensor(target_lengths), zero_infinity=True),
              log_probs * 3)


def test_ctc_loss_of_a_model_sure_of_the_blank_is_finite_as_torch():
  """Labels at log-probability -900 (a model that predicts blanks, as early in training): the alignments differ by
  far more than float64's range from one another, and the loss is still torch's finite value, not inf."""
  log_probs = np.full((30, 2, 5), -900.0)
  log_probs[:, :, 0] = 0.0
  log_probs[::3, 1, :] = -5.0
  labels = np.array([[1, 2, 3, 4, 1, 2], [2, 2, 2, 3, 3, 1]])
  grads_match(lambda x: x.ctc_loss(Tensor(labels), [30, 25], [6, 6], reduction="none"),
              lambda x: F.ctc_loss(x, torch.tensor(labels), torch.tensor([30, 25]), torch.tensor([6, 6]), reduction="none"), log_probs, tol=1e-9)


def test_ctc_loss_refuses_bad_shapes_lengths_and_labels():
  log_probs, labels, input_lengths, target_lengths = _ctc_case()
  x = Tensor(log_probs)
  with pytest.raises(ValueError, match=r"input_lengths must be in \[0, 12\]"): x.ctc_loss(labels, [13, 1, 1, 1], target_lengths)
  with pytest.raises(ValueError, match="target_lengths must be >= 0"): x.ctc_loss(labels, input_lengths, [1, -1, 1, 1])
  with pytest.raises(ValueError, match="needs 4 input_lengths"): x.ctc_loss(labels, [1, 1], target_lengths)
  with pytest.raises(ValueError, match="do not hold target_lengths"): x.ctc_loss(labels, input_lengths, [6, 1, 1, 1])
  with pytest.raises(ValueError, match="fewer than target_lengths"): x.ctc_loss(labels[0], input_lengths, [3, 3, 0, 0])
  with pytest.raises(IndexError, match=r"labels must be in \[0, 6\)"): x.ctc_loss(labels + 3, input_lengths, target_lengths)
  with pytest.raises(ValueError, match="blank 6 is not a class"): x.ctc_loss(labels, input_lengths, target_lengths, blank=6)
  with pytest.raises(TypeError, match="whole numbers"): x.ctc_loss(labels * 0.5, input_lengths, target_lengths)
  with pytest.raises(TypeError, match="float log-probabilities"): Tensor(labels).ctc_loss(labels, input_lengths, target_lengths)
  with pytest.raises(ValueError, match="reduction"): x.ctc_loss(labels, input_lengths, target_lengths, reduction="max")
  with pytest.raises(ValueError, match=r"got \(12,\)"): Tensor(log_probs[:, 0, 0]).ctc_loss(labels, input_lengths, target_lengths)


# (name, nbgrad loss, torch loss) of 2 samples x 4 classes with a class index torch refuses
OUT_OF_RANGE_CLASSES = [
  ("cross_entropy", lambda x, t: F_nb.cross_entropy(x, t), lambda x, t: F.cross_entropy(x, t), [0, 5]),
  ("nll_loss_negative", lambda x, t: F_nb.nll_loss(x, t), lambda x, t: F.nll_loss(x, t), [0, -3]),
  ("multi_margin_loss", lambda x, t: F_nb.multi_margin_loss(x, t), lambda x, t: F.multi_margin_loss(x, t), [0, 9]),
  ("multilabel_margin_loss", lambda x, t: F_nb.multilabel_margin_loss(x, t),
   lambda x, t: F.multilabel_margin_loss(x, t), [[0, -1, 7, 2], [1, 2, -1, 0]]),
]


@pytest.mark.parametrize("ours, theirs, target", [r[1:] for r in OUT_OF_RANGE_CLASSES], ids=[r[0] for r in OUT_OF_RANGE_CLASSES])
def test_a_class_index_out_of_range_raises_as_torch(ours, theirs, target):
  """Labels computed already (a batch from numpy) are read when the loss is built (they counted for nothing)."""
  x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
  with pytest.raises((IndexError, RuntimeError)): theirs(torch.from_numpy(x), torch.tensor(target))
  with pytest.raises(IndexError, match="out of bounds for 4 classes"): ours(Tensor(x), Tensor(target))


def test_sparse_categorical_crossentropy_refuses_a_label_out_of_range_but_its_ignore_index():
  x = Tensor(np.random.default_rng(4).standard_normal((2, 4)).astype(np.float32))
  with pytest.raises(IndexError, match="class index 4"): x.sparse_categorical_crossentropy(Tensor([0, 4]))
  np.testing.assert_allclose(x.sparse_categorical_crossentropy(Tensor([0, -1])).item(), -x.log_softmax()[0, 0].item(), rtol=1e-6)
