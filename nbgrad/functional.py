"""Neural-network functionals at the Tensor level: batch normalization, the classification losses (tinygrad's binary
and sparse categorical cross-entropy, torch's nll_loss and cross_entropy), cosine similarity and scaled dot-product
attention."""
from __future__ import annotations
import math
from typing import Optional
import numpy as np
from nbgrad.dtype import bfloat16_bits_to_float32, dtypes, HALF_FLOATS, index_dtype, least_upper_dtype
from nbgrad.helpers import ShapeMismatch
from nbgrad.indexing import read_positions



def batchnorm(x, weight, bias, mean, invstd, axis=1):
  from nbgrad.tensor import resolve_axis
  weight, bias = x._operand(weight, "weight", optional=True), x._operand(bias, "bias", optional=True)
  mean, invstd = x._operand(mean, "mean"), x._operand(invstd, "invstd")
  axes = tuple(resolve_axis(a, x.ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
  shape = tuple(s if i in axes else 1 for i, s in enumerate(x.shape))
  out = x - mean.reshape(shape)
  if weight is not None: out = out * weight.reshape(shape)
  out = out * (invstd.reshape(shape) if invstd.ndim == len(axes) else invstd)
  return out if bias is None else out + bias.reshape(shape)


def binary_crossentropy(x, y):
  """Mean of -(y log p + (1 - y) log(1 - p)) (see binary_cross_entropy_terms)."""
  return binary_cross_entropy_terms(*x._broadcasted(x._operand(y, "target"))).mean()


def binary_cross_entropy_terms(p, target):
  """-(y log p + (1 - y) log(1 - p)) of each element of probabilities p and targets y (of one shape and dtype), each
  log no lower than -100 (torch's clamp: no nan at 0 or 1), with torch's gradients: (p - y) / max(p (1 - p), 1e-12)
  by p, log(1 - p) - log(p) (not clamped) by y."""
  from nbgrad.tensor import _with_derivatives
  probability, label = p.detach(), target.detach()
  log_p, log_q = _log_at_least(probability, -100), _log_at_least(1 - probability, -100)
  losses = -label * log_p - (1 - label) * log_q
  return _with_derivatives((p, target), losses, (lambda: (probability - label) / ((1 - probability) * probability).maximum(1e-12),
                                                 lambda: (1 - probability).log() - probability.log()))


def logit_cross_entropy_terms(x, target, pos_weight=None):
  """The binary cross-entropy of each logit x against its target y, without overflow: (1 - y) x + l softplus(-x),
  l = 1 + (pos_weight - 1) y (1 without pos_weight)."""
  positive_scale = 1 if pos_weight is None else 1 + (pos_weight - 1) * target
  return (1 - target) * x - positive_scale * x.logsigmoid()


def _log_at_least(x, floor: float):
  """log, no lower than floor: the floor at 0 and below."""
  positive = x > 0
  return positive.where(positive.where(x, 1).log().maximum(floor), floor)


def sparse_categorical_crossentropy(x, Y, ignore_index: int = -1, label_smoothing: float = 0.0):
  """Mean cross-entropy of logits (..., classes) against integer labels Y, skipping ignore_index."""
  from nbgrad.tensor import Tensor
  Y = x._operand(Y, "labels")
  if Y.shape != x.shape[:-1]: raise ValueError(f"labels of shape {Y.shape} do not match logits of shape {x.shape}")
  if dtypes.is_float(Y.dtype): Y = _class_numbers(Y)
  check_class_indices(Y, x.shape[-1], ignore_index)
  if not 0.0 <= label_smoothing <= 1.0: raise ValueError(f"label_smoothing must lie in [0, 1], got {label_smoothing}")
  log_probs, counted = x.log_softmax(), (Y != ignore_index)
  classes = Tensor.arange(x.shape[-1], device=x.device).reshape((1,) * Y.ndim + (x.shape[-1],))
  target = (Y.unsqueeze(-1) == classes) & counted.unsqueeze(-1)
  total = target.where(log_probs, 0).sum()   # selected, not multiplied: a -inf logit elsewhere adds no nan
  if label_smoothing:   # skipped, not multiplied by 0, without smoothing; ignored rows selected out, not multiplied
    total = (1 - label_smoothing) * total + label_smoothing * counted.where(log_probs.mean(-1), 0).sum()
  return -total / counted.sum()


def _class_numbers(labels):
  """Float labels as the int classes they name, as tinygrad reads them (compared with the class numbers: 3.0 is
  class 3). One that names no class (2.5, nan, inf) raises where the labels are computed already, and elsewhere
  becomes int32's minimum, which picks no class."""
  if (values := known_values(labels)) is not None and not (whole := np.isfinite(values) & (values == np.trunc(values))).all():
    raise ValueError(f"float class labels must be whole numbers, got {values[~whole].flat[0]}")
  named = (labels == labels.trunc()) & (labels.abs() < 2 ** 31)
  return named.where(labels.cast(dtypes.int32), -2 ** 31)


def nll_loss(x, target, weight=None, ignore_index: int = -100, reduction: str = "mean"):
  """torch's nll_loss: -weight[c] * x[n, c] for log-probabilities (N, C, ...) (or (C,)) and class indices c =
  target[n, ...]; targets equal to ignore_index count for nothing, and the mean divides by the weights counted."""
  scores, target = _classes_last(x, target, reduction, "nll_loss")
  return _class_loss(scores, target, weight, ignore_index, reduction, 0.0)


def cross_entropy(x, target, weight=None, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0):
  """torch's cross_entropy of logits (N, C, ...) (or (C,)): target is class indices (N, ...) or class probabilities
  of the logits' shape; label_smoothing mixes in the uniform distribution over the C classes."""
  from nbgrad.tensor import _check_number
  scores, target = _classes_last(x, target, reduction, "cross_entropy")
  _check_number("cross_entropy label_smoothing", label_smoothing)
  if not 0.0 <= label_smoothing <= 1.0: raise ValueError(f"label_smoothing must lie in [0, 1], got {label_smoothing}")
  log_probs = scores.log_softmax(-1)
  if not dtypes.is_float(target.dtype): return _class_loss(log_probs, target, weight, ignore_index, reduction, label_smoothing)
  if target.shape != x.shape: raise ShapeMismatch(f"cross_entropy class probabilities of shape {target.shape} do not match logits of shape {x.shape}")
  if ignore_index != -100: raise ValueError(f"cross_entropy ignores no class of probability targets (torch refuses it too): got ignore_index={ignore_index}")
  probabilities = (target if target.ndim == 1 else target.movedim(1, -1)) * (1 - label_smoothing) + label_smoothing / scores.shape[-1]
  losses = -(log_probs * probabilities * _class_weights(log_probs, weight)).sum(-1)
  return reduced(losses, reduction)


def check_reduction(name: str, reduction: str, allowed: tuple = ("mean", "sum", "none")):
  """ValueError naming the op and the value unless reduction is one of allowed (torch's 'mean', 'sum' and 'none')."""
  if reduction not in allowed:
    choices = ", ".join(repr(a) for a in allowed[:-1]) + f" or {allowed[-1]!r}"
    raise ValueError(f"{name} reduction must be {choices}, got {reduction!r}")


def reduced(losses, reduction: str):
  """Per-element losses reduced as torch's reduction= says: their mean, their sum, or themselves ('none')."""
  return losses.mean() if reduction == "mean" else losses.sum() if reduction == "sum" else losses


def _classes_last(x, target, reduction: str, name: str):
  """The scores with torch's class dim (1, or 0 for one sample) moved last, and the target as a tensor."""
  check_reduction(name, reduction)
  if x.ndim == 0: raise ShapeMismatch(f"{name} needs scores with a class dim, got shape ()")
  return (x if x.ndim == 1 else x.movedim(1, -1)), x._operand(target, f"{name} target")


def _class_weights(x, weight):
  if weight is None: return type(x).ones(x.shape[-1], dtype=x.dtype, device=x.device)
  weight = x._operand(weight, "class weight")
  if weight.shape != (x.shape[-1],): raise ShapeMismatch(f"class weight of shape {weight.shape} does not match {x.shape[-1]} classes")
  return weight


def known_values(t) -> Optional[np.ndarray]:
  """t's values when they are computed already on the CPU, read where they lie (without a kernel), else None: what
  a check of argument values (as torch's) reads without computing a graph when the op is built."""
  if (values := t._realized_array()) is None: return None   # labels[:, t] of a batch: read where they lie
  return bfloat16_bits_to_float32(values) if t.dtype == dtypes.bfloat16 else values


def check_class_indices(target, classes: int, ignore_index=None) -> Optional[np.ndarray]:
  """Class indices are ints in [0, classes) (or ignore_index): IndexError, as torch's, for one outside where they
  are computed already (known_values), whose values it returns. Indices still to be computed are not computed for
  it when the loss is built (None): one out of range picks no class there."""
  if dtypes.is_float(target.dtype) or target.dtype == dtypes.bool: raise TypeError(f"class indices must be ints, got {target.dtype}")
  if (values := known_values(target)) is None: return None
  outside = ((values < 0) | (values >= classes)) & (values != ignore_index if ignore_index is not None else True)
  if outside.any(): raise IndexError(f"class index {values[outside].flat[0]} is out of bounds for {classes} classes")
  return values


def _class_loss(x, target, weight, ignore_index: int, reduction: str, label_smoothing: float):
  """The loss of log-probabilities (..., C) at class indices target (...), checked by check_class_indices."""
  values = check_class_indices(target, x.shape[-1], ignore_index)
  if target.shape != x.shape[:-1]:
    raise ShapeMismatch(f"class indices of shape {target.shape} do not match scores of shape {x.shape} (classes in dim 1)")
  if values is not None and weight is None: return _known_class_loss(x, values, ignore_index, reduction, label_smoothing)
  weights, counted = None if weight is None else _class_weights(x, weight), target != ignore_index
  # the score at each sample's class, read where it lies (one element a sample, not a pass over every class); a
  # sample ignored or with a class out of range reads 0 and weighs 0
  scored = counted & (target >= 0) & (target < x.shape[-1])
  samples = type(x).arange(target.numel(), dtype=index_dtype(x.numel()), device=x.device).reshape(target.shape)
  picked = read_positions(x, samples * x.shape[-1] + target, scored)
  sample_weight = scored.cast(x.dtype) if weights is None else scored.where(weights[scored.where(target, 0)], 0)
  losses = -picked * sample_weight
  if label_smoothing:   # torch's: the mean over classes of the weighted log-probabilities, of counted samples
    uniform = counted.where(-(x if weights is None else x * weights).sum(-1) / x.shape[-1], 0)
    losses = (1 - label_smoothing) * losses + label_smoothing * uniform
  if reduction == "mean":   # no weight counted (every target ignored): nan, and torch's gradient 0, not nan
    total = sample_weight.sum()
    return (total == 0).where(math.nan, losses.sum() / (total == 0).where(1, total))
  return losses.sum() if reduction == "sum" else losses


def _known_class_loss(x, values: np.ndarray, ignore_index: int, reduction: str, label_smoothing: float):
  """_class_loss without class weights, of class indices known when the loss is built (all in range or ignored):
  the positions read and the samples counted are worked out here, not in the graph (a classifier's loss and its
  gradient were 15 ops more to build and schedule)."""
  from nbgrad.autograd import Take
  counted = values != ignore_index
  flat = np.arange(values.size).reshape(values.shape) * x.shape[-1] + values
  positions = type(x)(np.where(counted, flat, -1).astype(index_dtype(x.numel()).np), device=x.device)
  losses = -Take.apply(x, positions, row_dims=0)   # an ignored sample reads 0
  if label_smoothing:
    uniform = type(x)(counted, device=x.device).where(-x.sum(-1) / x.shape[-1], 0)
    losses = (1 - label_smoothing) * losses + label_smoothing * uniform
  if reduction != "mean": return losses.sum() if reduction == "sum" else losses
  total = int(counted.sum())
  return losses.sum() / total if total else losses.sum() * 0 + math.nan   # every sample ignored: nan, gradient 0 as torch's


def cosine_similarity(x, other, dim: int = 1, eps: float = 1e-8):
  """torch's F.cosine_similarity: the dot product along dim over the product of the norms, each norm no smaller than
  eps."""
  a, b = x._broadcasted(other)
  a, b = a._float_input(), b._float_input()
  if a.dtype in HALF_FLOATS:
    from nbgrad.tensor import in_float32_rounded_to
    return in_float32_rounded_to(a.dtype, cosine_similarity, a, b, dim, eps)
  return (a * b).sum(dim) / (a.norm(dim=dim).maximum(eps) * b.norm(dim=dim).maximum(eps))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False, scale=None,
                                 enable_gqa: bool = False):
  """enable_gqa (torch's): each of the key's and value's heads (dim -3) serves its group of the query's heads."""
  key, value = query._operand(key, "key"), query._operand(value, "value")
  if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and key.shape[-3] != query.shape[-3]:
    heads, kv_heads = query.shape[-3], key.shape[-3]
    if heads % kv_heads: raise ValueError(f"scaled_dot_product_attention enable_gqa needs the {heads} query heads to be a multiple of the {kv_heads} key heads")
    key, value = key.repeat_interleave(heads // kv_heads, -3), value.repeat_interleave(heads // kv_heads, -3)
  attn_mask = query._operand(attn_mask, "attn_mask", optional=True)
  if (common := least_upper_dtype(query.dtype, key.dtype, value.dtype)) in HALF_FLOATS:
    from nbgrad.tensor import in_float32_rounded_to
    return in_float32_rounded_to(common, lambda q, k, v: scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale),
                                 query, key, value)   # a bool mask stays one
  if is_causal:
    attn_mask = type(query).ones(query.shape[-2], key.shape[-2], dtype=dtypes.bool, device=query.device).tril(0).cast(dtypes.bool)
  scores = (query @ key.transpose(-2, -1)) * (1 / math.sqrt(query.shape[-1]) if scale is None else scale)   # as torch scales
  if attn_mask is not None:
    scores = attn_mask.where(scores, -float("inf")) if attn_mask.dtype == dtypes.bool else scores + attn_mask
  weights = scores._softmax_of(-1, empty_rows_zero=True)   # a query that may attend to nothing gets zeros, as torch's
  return weights.dropout(dropout_p) @ value
