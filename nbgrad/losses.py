"""torch.nn.functional's losses (regression, divergence, binary, ranking, embedding and margin losses) and the
distances they measure with, as Tensor methods: each takes the input tensor first, then its other tensors and options
under torch's names and defaults, and reduces the per-element losses as torch's reduction= says. Shapes that do not fit
raise ShapeMismatch (a ValueError) naming them, when the loss is built; checks of the values (probabilities in [0, 1],
class indices in range, variances not negative) are not made, as that would compute the inputs."""
from __future__ import annotations
import math
import numpy as np
from nbgrad.dtype import least_upper_dtype, least_upper_float
from nbgrad.functional import binary_cross_entropy_terms, check_class_indices, check_reduction, cosine_similarity, \
  logit_cross_entropy_terms, reduced, _class_weights
from nbgrad.helpers import ShapeMismatch


# ---- shapes and dtypes shared by the losses
def _check_broadcast(name: str, shapes: dict) -> tuple[int, ...]:
  """The shape that the named shapes broadcast to; ShapeMismatch naming the op and each of them where they do not."""
  from nbgrad.tensor import broadcast_shape
  try:
    return broadcast_shape(*shapes.values())
  except ValueError:
    listed = ", ".join(f"{what} of shape {shape}" for what, shape in shapes.items())
    raise ShapeMismatch(f"{name}: {listed} do not broadcast together") from None


def _floats(name: str, x, **operands) -> tuple:
  """x and the named operands (tensors or numpy arrays) cast to their common float dtype, after checking that their
  shapes broadcast together: an int or bool target counts as its float value."""
  tensors = {"input": x, **{what: x._operand(t, f"{name} {what}") for what, t in operands.items()}}
  _check_broadcast(name, {what: t.shape for what, t in tensors.items()})
  dtype = least_upper_float(least_upper_dtype(*(t.dtype for t in tensors.values())))
  return tuple(t.cast(dtype) for t in tensors.values())


def _check_same_shape(name: str, x, target):
  """The target as a tensor, which must have the input's shape (torch's binary cross-entropies do not broadcast)."""
  target = x._operand(target, f"{name} target")
  if target.shape != x.shape: raise ShapeMismatch(f"{name}: target of shape {target.shape} does not match the input's shape {x.shape}")
  return target


def _weight_within(name: str, what: str, x, weight):
  """weight as a tensor (None stays None), which must broadcast to x's shape without widening it."""
  if weight is None: return None
  weight = x._operand(weight, f"{name} {what}")
  if _check_broadcast(name, {"input": x.shape, what: weight.shape}) != x.shape:
    raise ShapeMismatch(f"{name}: {what} of shape {weight.shape} would widen the input's shape {x.shape}")
  return weight


def _times_weight(name: str, losses, weight):
  """losses scaled by weight (None: not scaled), which broadcasts to their shape."""
  weight = _weight_within(name, "weight", losses, weight)
  return losses if weight is None else losses * weight


def _samples_by_class(name: str, x) -> tuple:
  """A score vector (C,) or matrix (N, C) (or one 0-d score) as a float (N, C) matrix, with N and C."""
  if x.ndim > 2 or (x.ndim and x.shape[-1] == 0):
    raise ShapeMismatch(f"{name} needs a 1-D or 2-D input (samples x classes) with at least one class, got shape {x.shape}")
  samples, classes = (x.shape[0] if x.ndim == 2 else 1), (x.shape[-1] if x.ndim else 1)
  return x._float_input().reshape(samples, classes), samples, classes


def _at_least(x, low):
  """max(x, low) with torch's clamp_min gradient: 1 where x equals low too (maximum splits it there), and NaN kept."""
  return (x < low).where(low, x)


def _check_positive(name: str, value, allow_zero: bool):
  from nbgrad.tensor import _check_number
  _check_number(name, value)
  if value < 0 or (value == 0 and not allow_zero):
    raise ValueError(f"{name} must be {'at least' if allow_zero else 'greater than'} 0, got {value}")


# ---- differences between input and target
def _difference_loss(name: str, x, target, reduction: str, weight, loss_of, weights_divide_mean: bool):
  """loss_of(input - target), broadcast together; weight, of the input's own shape, scales each loss, and the mean
  then divides by the weights' sum when weights_divide_mean (mse and l1) or by the count (huber)."""
  check_reduction(name, reduction)
  input_shape = x.shape
  x, target = _floats(name, x, target=target)
  losses = loss_of(x - target)
  if weight is None: return reduced(losses, reduction)
  weight = x._operand(weight, f"{name} weight")
  if weight.shape != input_shape: raise ShapeMismatch(f"{name}: weight of shape {weight.shape} does not match the input's shape {input_shape}")
  losses = losses * weight
  return losses.sum() / weight.sum() if reduction == "mean" and weights_divide_mean else reduced(losses, reduction)


def _huber(difference, delta: float):
  """0.5 d^2 where |d| < delta, delta (|d| - delta / 2) from there: quadratic near 0, linear with slope delta beyond."""
  size = difference.abs()
  return (size < delta).where(0.5 * difference.square(), delta * (size - 0.5 * delta))


def mse_loss(x, target, *, reduction: str = "mean", weight=None):
  """torch's F.mse_loss: the squared differences of input and target (broadcast together)."""
  return _difference_loss("mse_loss", x, target, reduction, weight, lambda d: d.square(), True)


def l1_loss(x, target, *, reduction: str = "mean", weight=None):
  """torch's F.l1_loss: the absolute differences of input and target (broadcast together)."""
  return _difference_loss("l1_loss", x, target, reduction, weight, lambda d: d.abs(), True)


def huber_loss(x, target, reduction: str = "mean", delta: float = 1.0, weight=None):
  """torch's F.huber_loss: the squared difference halved within delta of the target, linear with slope delta out there."""
  _check_positive("huber_loss delta", delta, allow_zero=False)
  return _difference_loss("huber_loss", x, target, reduction, weight, lambda d: _huber(d, delta), False)


def smooth_l1_loss(x, target, *, reduction: str = "mean", beta: float = 1.0):
  """torch's F.smooth_l1_loss: huber_loss with delta beta, divided by beta (slope 1 far out); the l1 loss for beta 0."""
  _check_positive("smooth_l1_loss beta", beta, allow_zero=True)
  loss_of = (lambda d: d.abs()) if beta == 0 else (lambda d: _huber(d, beta) / beta)
  return _difference_loss("smooth_l1_loss", x, target, reduction, None, loss_of, False)


def kl_div(x, target, *, reduction: str = "mean", log_target: bool = False):
  """torch's F.kl_div of log-probabilities x from target (probabilities; log-probabilities with log_target):
  target (log(target) - x) each, 0 where target is 0; 'batchmean' divides the sum by the input's first dim."""
  check_reduction("kl_div", reduction, ("mean", "batchmean", "sum", "none"))
  batch = x.shape[0] if x.ndim else 1
  x, target = _floats("kl_div", x, target=target)
  losses = target.exp() * (target - x) if log_target else target.xlogy(target) - target * x
  return losses.sum() / batch if reduction == "batchmean" else reduced(losses, reduction)


def gaussian_nll_loss(x, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
  """torch's F.gaussian_nll_loss: (log(var) + (input - target)^2 / var) / 2, var no smaller than eps (its gradient
  passes that floor unchanged, as torch's), plus log(2 pi) / 2 with full. var is a number, of the input's shape, of
  that shape without its last dim, or with a 1 in the one dim where it differs."""
  from nbgrad.tensor import _with_derivatives
  check_reduction("gaussian_nll_loss", reduction)
  if isinstance(var, (int, float)):
    _check_positive("gaussian_nll_loss var", var, allow_zero=True)
    var = x._float_input().full_like(var)
  var = x._operand(var, "gaussian_nll_loss var")
  if var.shape != x.shape:
    if var.shape == x.shape[:-1]: var = var.unsqueeze(-1)
    elif not (var.ndim == x.ndim and sum(v for s, v in zip(x.shape, var.shape) if s != v) == 1):
      raise ShapeMismatch(f"gaussian_nll_loss: var of shape {var.shape} does not fit the input's shape {x.shape} (the same, "
                          "without the last dim, or 1 in the one dim where they differ)")
  x, target, var = _floats("gaussian_nll_loss", x, target=target, var=var)
  floored = _with_derivatives((var,), var.detach().maximum(eps), (lambda: var.detach().ones_like(),))
  losses = 0.5 * (floored.log() + (x - target).square() / floored)
  return reduced(losses + 0.5 * math.log(2 * math.pi) if full else losses, reduction)


def poisson_nll_loss(x, target, log_input: bool = True, full: bool = False, *, eps: float = 1e-8, reduction: str = "mean"):
  """torch's F.poisson_nll_loss of rates (their logs with log_input): exp(input) - target input, or input - target
  log(input + eps); full adds Stirling's approximation of log(target!) where target > 1."""
  check_reduction("poisson_nll_loss", reduction)
  x, target = _floats("poisson_nll_loss", x, target=target)
  losses = x.exp() - target * x if log_input else x - target * (x + eps).log()
  if full:
    stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
    losses = losses + (target > 1).where(stirling, 0)
  return reduced(losses, reduction)


# ---- binary targets
def binary_cross_entropy(x, target, weight=None, *, reduction: str = "mean"):
  """torch's F.binary_cross_entropy of probabilities against targets of the same shape, each log no lower than -100;
  weight broadcasts to the input's shape."""
  check_reduction("binary_cross_entropy", reduction)
  p, target = _floats("binary_cross_entropy", x, target=_check_same_shape("binary_cross_entropy", x, target))
  return reduced(_times_weight("binary_cross_entropy", binary_cross_entropy_terms(p, target), weight), reduction)


def binary_cross_entropy_with_logits(x, target, weight=None, *, reduction: str = "mean", pos_weight=None):
  """torch's F.binary_cross_entropy_with_logits: the binary cross-entropy of sigmoid(input) without its overflow;
  pos_weight scales the loss of the positive targets (by class, broadcast from the last dim), weight every loss."""
  name = "binary_cross_entropy_with_logits"
  check_reduction(name, reduction)
  x, target = _floats(name, x, target=_check_same_shape(name, x, target))
  pos_weight = _weight_within(name, "pos_weight", x, pos_weight)
  return reduced(_times_weight(name, logit_cross_entropy_terms(x, target, pos_weight), weight), reduction)


def soft_margin_loss(x, target, *, reduction: str = "mean"):
  """torch's F.soft_margin_loss: log(1 + exp(-target input)) for targets 1 and -1, without its overflow."""
  check_reduction("soft_margin_loss", reduction)
  x, target = _floats("soft_margin_loss", x, target=target)
  return reduced(-(target * x).logsigmoid(), reduction)


def multilabel_soft_margin_loss(x, target, weight=None, *, reduction: str = "mean"):
  """torch's F.multilabel_soft_margin_loss: the binary cross-entropy of the logits (..., C) against 0/1 targets,
  weight scaling each class, averaged over the classes of each sample."""
  name = "multilabel_soft_margin_loss"
  check_reduction(name, reduction)
  if x.ndim == 0: raise ShapeMismatch(f"{name} needs an input with a class dim, got shape ()")
  class_dim, classes = x.ndim - 1, x.shape[-1]
  x, target = _floats(name, x, target=target)
  losses = _times_weight(name, logit_cross_entropy_terms(x, target), weight)
  return reduced(losses.sum(class_dim) / classes, reduction)


# ---- ranking and embeddings
def margin_ranking_loss(x, input2, target, margin: float = 0.0, *, reduction: str = "mean"):
  """torch's F.margin_ranking_loss: max(0, margin - target (input1 - input2)), target 1 where input1 should rank
  higher, -1 where input2 should; the three have the same number of dims and broadcast together."""
  check_reduction("margin_ranking_loss", reduction)
  operands = {"input": x, "input2": x._operand(input2, "margin_ranking_loss input2"), "target": x._operand(target, "margin_ranking_loss target")}
  if len({t.ndim for t in operands.values()}) > 1:
    listed = ", ".join(f"{what} of shape {t.shape}" for what, t in operands.items())
    raise ShapeMismatch(f"margin_ranking_loss needs inputs with the same number of dims, got {listed}")
  x, input2, target = _floats("margin_ranking_loss", x, input2=input2, target=target)
  return reduced(_at_least(margin - target * (x - input2), 0), reduction)


def hinge_embedding_loss(x, target, margin: float = 1.0, *, reduction: str = "mean"):
  """torch's F.hinge_embedding_loss of distances: the input where target is 1, max(0, margin - input) where it is -1
  (both summed for any other target value, as torch's)."""
  check_reduction("hinge_embedding_loss", reduction)
  x, target = _floats("hinge_embedding_loss", x, target=target)
  return reduced((target != 1).where(_at_least(margin - x, 0), 0) + (target != -1).where(x, 0), reduction)


def cosine_embedding_loss(x, input2, target, margin: float = 0.0, *, reduction: str = "mean"):
  """torch's F.cosine_embedding_loss of vectors (D,) with a 0-d target, or of rows (N, D) with targets (N,): 1 - cos
  where the target is 1, max(0, cos - margin) where it is -1 (0 elsewhere)."""
  name = "cosine_embedding_loss"
  check_reduction(name, reduction)
  input2, target = x._operand(input2, f"{name} input2"), x._operand(target, f"{name} target")
  if target.ndim > 1 or x.ndim != target.ndim + 1 or input2.ndim != target.ndim + 1:
    raise ShapeMismatch(f"{name} needs inputs (D,) with a 0-d target or inputs (N, D) with a target (N,), got inputs of "
                        f"shapes {x.shape} and {input2.shape} and a target of shape {target.shape}")
  rows = _check_broadcast(name, {"input": x.shape, "input2": input2.shape})[:-1]
  _check_broadcast(name, {"rows of the inputs": rows, "target": target.shape})
  x, input2 = _floats(name, x, input2=input2)
  cosine, target = _floats(name, cosine_similarity(x, input2, dim=-1), target=target)
  return reduced((target == 1).where(1 - cosine, 0) + (target == -1).where(_at_least(cosine - margin, 0), 0), reduction)


def triplet_margin_loss(x, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6, swap: bool = False, *,
                        reduction: str = "mean"):
  """torch's F.triplet_margin_loss: max(0, margin + d(anchor, positive) - d(anchor, negative)) in pairwise_distance's
  p-norm along the last dim; swap measures the negative from the nearer of anchor and positive."""
  name = "triplet_margin_loss"
  check_reduction(name, reduction)
  _check_positive(f"{name} margin", margin, allow_zero=False)
  positive, negative = x._operand(positive, f"{name} positive"), x._operand(negative, f"{name} negative")
  if not x.ndim == positive.ndim == negative.ndim:
    raise ShapeMismatch(f"{name} needs anchor, positive and negative with the same number of dims, got shapes {x.shape}, "
                        f"{positive.shape} and {negative.shape}")
  to_positive, to_negative = pairwise_distance(x, positive, p, eps), pairwise_distance(x, negative, p, eps)
  if swap: to_negative = to_negative.minimum(pairwise_distance(positive, negative, p, eps))
  return reduced(_at_least(margin + to_positive - to_negative, 0), reduction)


def pairwise_distance(x, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
  """torch's F.pairwise_distance: the p-norm of input - x2 + eps along the last dim (both broadcast together)."""
  x, x2 = _floats("pairwise_distance", x, x2=x2)
  difference = x - x2 + eps
  return difference.norm(p, dim=-1 if difference.ndim else None, keepdim=keepdim)


def pdist(x, p: float = 2):
  """torch.pdist: the p-norm distances between the rows of a matrix (N, M), pair (i, j) for each i < j in row-major
  order, N (N - 1) / 2 of them."""
  if x.ndim != 2: raise ShapeMismatch(f"pdist needs a 2-D input (rows of points), got shape {x.shape}")
  _check_positive("pdist p", p, allow_zero=True)
  first, second = np.triu_indices(x.shape[0], 1)
  x = x._float_input()
  return (x[first] - x[second]).norm(p, dim=1)


# ---- margins between classes
def multi_margin_loss(x, target, p: int = 1, margin: float = 1.0, weight=None, *, reduction: str = "mean"):
  """torch's F.multi_margin_loss of scores (C,) or (N, C) at one class index per sample: the mean over the other
  classes of max(0, margin - score[target] + score)^p (p 1 or 2), times weight[target]."""
  name = "multi_margin_loss"
  check_reduction(name, reduction)
  if p not in (1, 2): raise ValueError(f"{name} p must be 1 or 2, got {p!r}")
  target = x._operand(target, f"{name} target")
  scores, samples, classes = _samples_by_class(name, x)
  check_class_indices(target, classes)
  if target.ndim > 1 or target.numel() != samples:
    raise ShapeMismatch(f"{name}: target of shape {target.shape} does not hold one class index for each of the {samples} samples of the input of shape {x.shape}")
  chosen = target.reshape(samples, 1) == type(x).arange(classes, device=x.device)
  margins = (margin - chosen.where(scores, 0).sum(-1, keepdim=True) + scores).relu()
  margins = chosen.where(0, margins if p == 1 else margins.square())
  if weight is not None: margins = margins * chosen.where(_class_weights(scores, weight), 0).sum(-1, keepdim=True)
  return reduced((margins.sum(-1) / classes).reshape(target.shape), reduction)


def multilabel_margin_loss(x, target, *, reduction: str = "mean"):
  """torch's F.multilabel_margin_loss of scores (C,) or (N, C): each sample's target classes are the indices in its
  target row before the first -1, and its loss the sum over them and over the classes not among them of
  max(0, 1 - (score[target class] - score[other class])), divided by C."""
  name = "multilabel_margin_loss"
  check_reduction(name, reduction)
  target = x._operand(target, f"{name} target")
  scores, samples, classes = _samples_by_class(name, x)
  check_class_indices(target, classes, ignore_index=-1)
  fits = target.shape == x.shape if x.ndim == 2 else (target.ndim <= 1 and target.numel() == classes)
  if not fits:
    raise ShapeMismatch(f"{name}: target of shape {target.shape} does not match the input's shape {x.shape}")
  labels = target.reshape(samples, classes)
  listed = (labels == -1).cumsum(-1) == 0   # the places before the first -1
  names_class = listed.unsqueeze(-1) & (labels.unsqueeze(-1) == type(x).arange(classes, device=x.device))   # (N, place, class)
  target_scores = names_class.where(scores.unsqueeze(1), 0).sum(-1)
  counted = listed.unsqueeze(-1) & names_class.any(1).logical_not().unsqueeze(1)   # (a listed place, a class not listed)
  margins = (1 - target_scores.unsqueeze(-1) + scores.unsqueeze(1)).relu()
  losses = counted.where(margins, 0).sum((1, 2)) / classes
  return reduced(losses if x.ndim == 2 else losses.reshape(()), reduction)


def softmin(x, dim=None, dtype=None):
  """torch's F.softmin: softmax of -input along dim (torch's old default without one: dim 0 for 0-, 1- and 3-D
  inputs, else 1), the input cast to dtype first when given."""
  if dtype is not None: x = x.cast(dtype)
  if dim is None: dim = 0 if x.ndim in (0, 1, 3) else 1
  return (-x).softmax(dim)


def ctc_loss(x, targets, input_lengths, target_lengths, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
  """torch's F.ctc_loss (connectionist temporal classification) of log-probabilities x (frames, batch, classes), or
  (frames, classes) for one sample: each sample's loss is -log of the summed probability of every alignment of its
  labels (never blank) to its first input_lengths frames, class blank between and around them. targets are the
  labels, (batch, longest) padded or all samples' one after another; 'mean' divides each loss by its label count
  (at least 1) before the mean over the batch. An impossible alignment costs inf (0 with zero_infinity). The
  gradient with respect to x is torch's: that with respect to the logits x came from through log_softmax."""
  from nbgrad.autograd import custom
  from nbgrad.dtype import dtypes
  from nbgrad.graph.ctc import ctc_losses, ctc_gradient
  name = "ctc_loss"
  check_reduction(name, reduction)
  if not dtypes.is_float(x.dtype): raise TypeError(f"{name} needs float log-probabilities, got {x.dtype}")
  if x.dtype.itemsize < 4: return ctc_loss(x.float(), targets, input_lengths, target_lengths, blank, reduction, zero_infinity).cast(x.dtype)
  if x.ndim not in (2, 3): raise ShapeMismatch(f"{name} needs log_probs of shape (frames, batch, classes) or (frames, classes), got {x.shape}")
  one_sample = x.ndim == 2
  log_probs = x.unsqueeze(1) if one_sample else x
  frames, batch, classes = log_probs.shape
  if not 0 <= blank < classes: raise ValueError(f"{name} blank {blank} is not a class of the {classes} in log_probs of shape {x.shape}")
  labels = _whole_numbers(name, "targets", targets)
  frame_counts = _whole_numbers(name, "input_lengths", input_lengths).reshape(-1)
  label_counts = _whole_numbers(name, "target_lengths", target_lengths).reshape(-1)
  for what, counts in (("input_lengths", frame_counts), ("target_lengths", label_counts)):
    if counts.shape != (batch,): raise ShapeMismatch(f"{name} needs {batch} {what} (one per sample), got {counts.size}")
  if frame_counts.min(initial=0) < 0 or frame_counts.max(initial=0) > frames:
    raise ValueError(f"{name} input_lengths must be in [0, {frames}] (the frames of log_probs), got {frame_counts.tolist()}")
  if label_counts.min(initial=0) < 0: raise ValueError(f"{name} target_lengths must be >= 0, got {label_counts.tolist()}")
  if labels.ndim == 2 and not one_sample:
    if labels.shape[0] != batch or label_counts.max(initial=0) > labels.shape[1]:
      raise ShapeMismatch(f"{name}: padded targets of shape {labels.shape} do not hold target_lengths {label_counts.tolist()} for a batch of {batch}")
    starts = np.arange(batch) * labels.shape[1]
  elif labels.ndim == 1:
    if label_counts.sum() > labels.size:
      raise ShapeMismatch(f"{name}: {labels.size} targets are fewer than target_lengths {label_counts.tolist()} add up to")
    starts = np.cumsum(label_counts) - label_counts
  else: raise ShapeMismatch(f"{name} needs targets of 1 dim{'' if one_sample else ' or 2 dims (batch, longest)'}, got shape {labels.shape}")
  labels = labels.reshape(-1)
  used = labels[np.concatenate([np.arange(s, s + n) for s, n in zip(starts, label_counts)] + [np.zeros(0, np.int64)])]
  if used.size and (used.min() < 0 or used.max() >= classes): raise IndexError(f"{name} target labels must be in [0, {classes}), got {used.tolist()}")
  sources = tuple(type(x)(a.astype(np.int64), device=x.device) for a in (labels, starts, frame_counts, label_counts))

  def gradient(log_probs, *rest):
    *sources, losses, upstream = rest
    grad = ctc_gradient(log_probs.lazydata, [s.lazydata for s in sources], losses.lazydata, upstream.lazydata, blank, zero_infinity)
    return (type(x)(grad),) + (None,) * len(sources)
  losses = custom(lambda lp, *labels: ctc_losses(lp, labels, blank), gradient, log_probs, *sources)
  if zero_infinity: losses = (losses == math.inf).where(0, losses)
  if reduction == "mean": return (losses / sources[3].clamp(1).cast(losses.dtype)).mean()
  return losses.sum() if reduction == "sum" else losses.reshape(()) if one_sample else losses


def _whole_numbers(name: str, what: str, value) -> np.ndarray:
  """A tensor, array, sequence or number of whole numbers as an int64 array (read now: the loss checks them when it
  is built)."""
  array = np.asarray(value.numpy() if hasattr(value, "numpy") and not isinstance(value, np.ndarray) else value)
  if array.dtype.kind == "f" and np.all(np.mod(array, 1) == 0): array = array.astype(np.int64)
  if array.dtype.kind not in "iu": raise TypeError(f"{name} {what} must be whole numbers, got {array.dtype}")
  return array.astype(np.int64)
