"""torch.nn.functional for nbgrad tensors: `import nbgrad.nn.functional as F`, then F.relu(x), F.conv2d(x, w, b,
padding=1), F.cross_entropy(logits, y). Each function takes torch's arguments, in torch's positional order and with
torch's defaults, and computes with the Tensor method that does the job.

The functions whose Tensor method takes torch's arguments in torch's order are made from the lists of names at the
end (those Tensor has when this module loads); the others are small wrappers. inplace=True (activations, dropouts)
stores the result into the input with Tensor.assign and returns the input, as torch's, where no gradient flows through
the result. Where one does, the result is returned and the input is left as it was (x = F.relu(x, inplace=True)
works; code that reads x after F.relu(x, inplace=True) without its result sees the old values); as in torch, a
leaf tensor that requires grad cannot be written in place."""
from __future__ import annotations
import warnings
from nbgrad import pooling
from nbgrad.dtype import dtypes
from nbgrad.functional import check_reduction, reduced
from nbgrad.tensor import Tensor


def _tensor(value, op: str) -> Tensor:
  if not isinstance(value, Tensor): raise TypeError(f"F.{op} takes a Tensor as input, got {type(value).__name__}")
  return value


def _stored(input: Tensor, result: Tensor, inplace: bool) -> Tensor:
  """result, or with inplace the input holding it. A result that needs a gradient is returned, the input left as it
  was: assign would rebind the input, which the result's own graph reads, and cut the gradient."""
  if not inplace: return result
  if input.requires_grad and input.is_leaf and not Tensor.no_grad:
    raise RuntimeError(f"inplace=True on a leaf tensor of shape {input.shape} that requires grad: its gradient would be lost")
  return result if result.requires_grad and not Tensor.no_grad else input.assign(result)


def _reduction(size_average, reduce, reduction: str) -> str:
  """torch's deprecated size_average and reduce (None: True), when either is given, as a reduction."""
  if size_average is None and reduce is None: return reduction
  if reduce is not None and not reduce: return "none"
  return "mean" if size_average is None or size_average else "sum"


# ---- activations
def relu(input, inplace=False): return _stored(input, _tensor(input, "relu").relu(), inplace)
def relu6(input, inplace=False): return _stored(input, _tensor(input, "relu6").relu6(), inplace)
def elu(input, alpha=1.0, inplace=False): return _stored(input, _tensor(input, "elu").elu(alpha), inplace)
def selu(input, inplace=False): return _stored(input, _tensor(input, "selu").selu(), inplace)
def celu(input, alpha=1.0, inplace=False): return _stored(input, _tensor(input, "celu").celu(alpha), inplace)
def leaky_relu(input, negative_slope=0.01, inplace=False):
  return _stored(input, _tensor(input, "leaky_relu").leakyrelu(negative_slope), inplace)
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
  return _stored(input, _tensor(input, "hardtanh").hardtanh(min_val, max_val), inplace)
def hardswish(input, inplace=False): return _stored(input, _tensor(input, "hardswish").hardswish(), inplace)
def hardsigmoid(input, inplace=False): return _stored(input, _tensor(input, "hardsigmoid").hardsigmoid(), inplace)
def silu(input, inplace=False): return _stored(input, _tensor(input, "silu").silu(), inplace)
def mish(input, inplace=False): return _stored(input, _tensor(input, "mish").mish(), inplace)
def threshold(input, threshold, value, inplace=False):
  return _stored(input, _tensor(input, "threshold").threshold(threshold, value), inplace)
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
  return _stored(input, _tensor(input, "rrelu").rrelu(lower, upper, training), inplace)


def gelu(input, approximate="none"):
  """torch's default, the exact x (1 + erf(x / sqrt 2)) / 2 (Tensor.gelu defaults to tinygrad's tanh form)."""
  return _tensor(input, "gelu").gelu(approximate)


def softplus(input, beta=1.0, threshold=20.0):
  """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold, as torch's."""
  x = _tensor(input, "softplus")
  return (x * beta > threshold).where(x, x.softplus(beta))


def _along(input, op: str, dim, dtype) -> tuple[Tensor, int]:
  """The input cast to dtype (when given), and dim: torch's implicit choice, with its warning, when None."""
  x = _tensor(input, op)
  if dim is None:
    warnings.warn(f"Implicit dimension choice for {op} has been deprecated. Change the call to include dim=X as an argument.", stacklevel=3)
    dim = 0 if x.ndim in (0, 1, 3) else 1
  return (x if dtype is None else x.cast(dtype)), dim


def softmax(input, dim=None, _stacklevel=3, dtype=None):
  x, dim = _along(input, "softmax", dim, dtype)
  return x.softmax(dim)
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
  x, dim = _along(input, "log_softmax", dim, dtype)
  return x.log_softmax(dim)
def softmin(input, dim=None, _stacklevel=3, dtype=None):
  x, dim = _along(input, "softmin", dim, dtype)
  return (-x).softmax(dim)


# ---- linear layers and convolutions
def linear(input, weight, bias=None):
  """input @ weight.T + bias for weight (out_features, in_features); a 1-D weight takes a dot product with the last
  dim. (Tensor.linear takes tinygrad's weight (in_features, out_features).)"""
  x = _tensor(input, "linear")
  weight = x._operand(weight, "linear weight")
  if weight.ndim not in (1, 2): raise ValueError(f"linear needs a weight of 1 or 2 dims, got shape {weight.shape}")
  out = x.matmul(weight.transpose() if weight.ndim == 2 else weight)
  return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
  """torch's F.bilinear: y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]."""
  x1, x2, weight = _tensor(input1, "bilinear"), _tensor(input2, "bilinear"), _tensor(weight, "bilinear")
  if weight.ndim != 3 or x1.shape[-1:] != weight.shape[1:2] or x2.shape[-1:] != weight.shape[2:] or x1.shape[:-1] != x2.shape[:-1]:
    raise ValueError(f"bilinear takes inputs (..., {weight.shape[1] if weight.ndim == 3 else 'in1'}) and (..., "
                     f"{weight.shape[2] if weight.ndim == 3 else 'in2'}) of the same leading dims and a weight (out, in1, in2), "
                     f"got {x1.shape}, {x2.shape} and {weight.shape}")
  out = (x1.unsqueeze(-2).unsqueeze(-1) * weight * x2.unsqueeze(-2).unsqueeze(-2)).sum((-2, -1))
  return out if bias is None else out + bias


def _convolved(input, dims: int, weight, bias, stride, padding, dilation, groups, output_padding=None) -> Tensor:
  """torch's conv{dims}d, or with output_padding its conv_transpose{dims}d, by Tensor.conv2d / conv_transpose2d."""
  transposed = output_padding is not None
  x = _tensor(input, f"conv{'_transpose' if transposed else ''}{dims}d")
  options = dict(bias=bias, groups=groups, stride=stride, dilation=dilation, padding=padding)
  if transposed: options["output_padding"] = output_padding
  return x._conv_of_rank(dims, transposed, weight, **options)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
  return _convolved(input, 1, weight, bias, stride, padding, dilation, groups)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
  return _convolved(input, 2, weight, bias, stride, padding, dilation, groups)
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
  return _convolved(input, 3, weight, bias, stride, padding, dilation, groups)
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
  return _convolved(input, 1, weight, bias, stride, padding, dilation, groups, output_padding)
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
  return _convolved(input, 2, weight, bias, stride, padding, dilation, groups, output_padding)
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
  return _convolved(input, 3, weight, bias, stride, padding, dilation, groups, output_padding)


# ---- pools (torch's positional order puts padding before dilation; Tensor.max_pool2d takes tinygrad's)
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
  return pooling.max_pool(_tensor(input, "max_pool1d"), 1, kernel_size, stride, dilation, padding, ceil_mode, return_indices)
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
  return pooling.max_pool(_tensor(input, "max_pool2d"), 2, kernel_size, stride, dilation, padding, ceil_mode, return_indices)
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
  return pooling.max_pool(_tensor(input, "max_pool3d"), 3, kernel_size, stride, dilation, padding, ceil_mode, return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
  return pooling.avg_pool(_tensor(input, "avg_pool1d"), 1, kernel_size, stride, 1, padding, ceil_mode, count_include_pad)
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
  return pooling.avg_pool(_tensor(input, "avg_pool2d"), 2, kernel_size, stride, 1, padding, ceil_mode, count_include_pad, divisor_override)
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
  return pooling.avg_pool(_tensor(input, "avg_pool3d"), 3, kernel_size, stride, 1, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool1d(input, output_size): return pooling.adaptive_avg_pool(_tensor(input, "adaptive_avg_pool1d"), output_size, 1)
def adaptive_avg_pool2d(input, output_size): return pooling.adaptive_avg_pool(_tensor(input, "adaptive_avg_pool2d"), output_size, 2)
def adaptive_avg_pool3d(input, output_size): return pooling.adaptive_avg_pool(_tensor(input, "adaptive_avg_pool3d"), output_size, 3)
def adaptive_max_pool1d(input, output_size, return_indices=False):
  return pooling.adaptive_max_pool(_tensor(input, "adaptive_max_pool1d"), output_size, 1, return_indices)
def adaptive_max_pool2d(input, output_size, return_indices=False):
  return pooling.adaptive_max_pool(_tensor(input, "adaptive_max_pool2d"), output_size, 2, return_indices)
def adaptive_max_pool3d(input, output_size, return_indices=False):
  return pooling.adaptive_max_pool(_tensor(input, "adaptive_max_pool3d"), output_size, 3, return_indices)


# ---- dropout: F's training argument in place of Tensor.training
def _dropped(input, op: str, p, training, inplace) -> Tensor:
  with Tensor.train(bool(training)): result = getattr(_tensor(input, op), op)(p)
  return _stored(input, result, inplace)


def dropout(input, p=0.5, training=True, inplace=False): return _dropped(input, "dropout", p, training, inplace)
def dropout1d(input, p=0.5, training=True, inplace=False): return _dropped(input, "dropout1d", p, training, inplace)
def dropout2d(input, p=0.5, training=True, inplace=False): return _dropped(input, "dropout2d", p, training, inplace)
def dropout3d(input, p=0.5, training=True, inplace=False): return _dropped(input, "dropout3d", p, training, inplace)
def alpha_dropout(input, p=0.5, training=False, inplace=False): return _dropped(input, "alpha_dropout", p, training, inplace)
def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
  return _dropped(input, "feature_alpha_dropout", p, training, inplace)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
  """torch's: dropout_p applies whether or not Tensor.training (Tensor's method follows tinygrad, training only)."""
  query = _tensor(query, "scaled_dot_product_attention")
  if is_causal and attn_mask is not None: raise ValueError("scaled_dot_product_attention takes attn_mask or is_causal=True, not both")
  with Tensor.train(Tensor.training or dropout_p > 0):
    return query.scaled_dot_product_attention(key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


# ---- resampling, padding, lookups
_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None, antialias=False):
  """Resampled over the spatial dims of (N, C, *spatial) by Tensor.interpolate; an int size or scale_factor covers
  every spatial dim, as torch's (Tensor.interpolate's int size covers the last dim)."""
  x = _tensor(input, "interpolate")
  dims = x.ndim - 2
  if dims not in (1, 2, 3): raise ValueError(f"interpolate needs an input (N, C, *spatial) of 3 to 5 dims, got shape {x.shape}")
  if _MODE_DIMS.get(mode, dims) != dims:
    raise ValueError(f"interpolate mode {mode!r} needs a {_MODE_DIMS[mode] + 2}-D input, got shape {x.shape}")
  for name, value in (("size", size), ("scale_factor", scale_factor)):
    if isinstance(value, (tuple, list)) and len(value) != dims:
      raise ValueError(f"interpolate {name} {value} needs {dims} entries, one per spatial dim of {x.shape}")
  if size is not None and not isinstance(size, (tuple, list)): size = (size,) * dims
  return x.interpolate(size, mode, align_corners, scale_factor, recompute_scale_factor, antialias)


def pad(input, pad, mode="constant", value=None):
  """(before, after) pairs from the last dim backwards, as torch's F.pad; mode constant, reflect, replicate or circular."""
  return _tensor(input, "pad").pad(tuple(pad), 0 if value is None else value, mode)


def one_hot(tensor, num_classes=-1):
  """int64 (*, num_classes), 1 at each index; num_classes -1 is the largest index + 1. (An index outside
  [0, num_classes) gives a row of zeros, where torch raises.)"""
  t = _tensor(tensor, "one_hot")
  if not dtypes.is_int(t.dtype): raise TypeError(f"one_hot needs a tensor of int class indices, got {t.dtype}")
  if num_classes == -1:
    if t.numel() == 0: raise ValueError(f"one_hot cannot infer num_classes from an empty tensor of shape {t.shape}")
    if (lowest := int(t.min().item())) < 0: raise ValueError(f"one_hot class indices must be non-negative, got {lowest}")
    num_classes = int(t.max().item()) + 1
  return t.one_hot(num_classes).cast(dtypes.int64)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
  """The rows of weight at the indices of input; sparse=True gives the same dense gradient. With max_norm, as torch,
  the rows input reads whose norm_type-norm exceeds max_norm are first scaled in place to max_norm / (norm + 1e-7)."""
  indices = _tensor(input, "embedding")
  if max_norm is not None: _renorm_read_rows(indices, weight, max_norm, norm_type)
  return indices.embedding(weight, padding_idx, scale_grad_by_freq)


def _renorm_read_rows(indices: Tensor, weight: Tensor, max_norm, norm_type):
  if not isinstance(weight, Tensor) or weight.ndim != 2: raise ValueError("F.embedding's max_norm needs a weight Tensor (num_embeddings, embedding_dim)")
  if not isinstance(max_norm, (int, float)) or max_norm < 0: raise ValueError(f"F.embedding's max_norm must be a number >= 0, got {max_norm!r}")
  rows = weight.shape[0]
  flat = indices.flatten()
  read = Tensor.zeros(rows, dtype=dtypes.bool, device=weight.device).scatter(0, flat, True).reshape(rows, 1)   # out of range: none
  kept = weight.detach()
  norms = kept.norm(norm_type, dim=1, keepdim=True)
  weight.assign((read & (norms > max_norm)).where(kept * (max_norm / (norms + 1e-7)), kept)).realize()


# ---- losses with torch's deprecated size_average and reduce among their positional arguments
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
  return _tensor(input, "nll_loss").nll_loss(target, weight, ignore_index, _reduction(size_average, reduce, reduction))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0):
  return _tensor(input, "cross_entropy").cross_entropy(target, weight, ignore_index, _reduction(size_average, reduce, reduction), label_smoothing)


# ---- the rest: F.name(input, *args, **kwargs) is input.name(*args, **kwargs)
SAME_ORDER = ("sigmoid", "tanh", "logsigmoid", "softsign", "tanhshrink", "softshrink", "hardshrink", "glu", "prelu",
              "group_norm", "layer_norm", "batch_norm", "instance_norm", "rms_norm", "local_response_norm", "normalize",
              "cosine_similarity", "pairwise_distance", "pdist", "pixel_shuffle",
              "pixel_unshuffle", "channel_shuffle", "max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool1d", "lp_pool2d",
              "lp_pool3d", "grid_sample", "affine_grid")
# torch's name -> the Tensor method of the same arguments (Tensor.unfold is torch's other unfold, of one dim)
RENAMED = {"unfold": "im2col", "fold": "col2im"}
# losses: torch's positional parameters after the first input, in its order, deprecated size_average and reduce
# among them; the Tensor method of the same name takes the others by these names
LOSSES = {
  "mse_loss": ("target", "size_average", "reduce", "reduction", "weight"),
  "l1_loss": ("target", "size_average", "reduce", "reduction", "weight"),
  "smooth_l1_loss": ("target", "size_average", "reduce", "reduction", "beta"),
  "huber_loss": ("target", "reduction", "delta", "weight"),
  "kl_div": ("target", "size_average", "reduce", "reduction", "log_target"),
  "binary_cross_entropy": ("target", "weight", "size_average", "reduce", "reduction"),
  "binary_cross_entropy_with_logits": ("target", "weight", "size_average", "reduce", "reduction", "pos_weight"),
  "poisson_nll_loss": ("target", "log_input", "full", "size_average", "eps", "reduce", "reduction"),
  "gaussian_nll_loss": ("target", "var", "full", "eps", "reduction"),
  "hinge_embedding_loss": ("target", "margin", "size_average", "reduce", "reduction"),
  "margin_ranking_loss": ("input2", "target", "margin", "size_average", "reduce", "reduction"),
  "soft_margin_loss": ("target", "size_average", "reduce", "reduction"),
  "multilabel_soft_margin_loss": ("target", "weight", "size_average", "reduce", "reduction"),
  "multilabel_margin_loss": ("target", "size_average", "reduce", "reduction"),
  "multi_margin_loss": ("target", "p", "margin", "weight", "size_average", "reduce", "reduction"),
  "cosine_embedding_loss": ("input2", "target", "margin", "size_average", "reduce", "reduction"),
  "triplet_margin_loss": ("positive", "negative", "margin", "p", "eps", "swap", "size_average", "reduce", "reduction"),
  "ctc_loss": ("targets", "input_lengths", "target_lengths", "blank", "reduction", "zero_infinity"),
}


def _from_method(name: str, method: str):
  def function(input, *args, **kwargs):
    return getattr(_tensor(input, name), method)(*args, **kwargs)
  function.__name__ = function.__qualname__ = name
  function.__doc__ = f"input.{method}(*args, **kwargs): {getattr(Tensor, method).__doc__ or ''}"
  return function


# the name torch gives a loss's first input, where it is not input (it may come as a keyword)
FIRST_INPUT = {"margin_ranking_loss": "input1", "cosine_embedding_loss": "input1", "triplet_margin_loss": "anchor", "ctc_loss": "log_probs"}


def _loss_from_method(name: str, parameters: tuple):
  first = FIRST_INPUT.get(name, "input")

  def function(*args, **kwargs):
    if not args and first not in kwargs: raise TypeError(f"F.{name} needs its first input ({first})")
    input, args = (args[0], args[1:]) if args else (kwargs.pop(first), ())
    if len(args) > len(parameters): raise TypeError(f"F.{name} takes at most {len(parameters) + 1} positional arguments, got {len(args) + 1}")
    for parameter, value in zip(parameters, args):
      if parameter in kwargs: raise TypeError(f"F.{name} got two values for {parameter!r}")
      kwargs[parameter] = value
    if "size_average" in kwargs or "reduce" in kwargs:
      kwargs["reduction"] = _reduction(kwargs.pop("size_average", None), kwargs.pop("reduce", None), kwargs.get("reduction", "mean"))
    return getattr(_tensor(input, name), name)(**kwargs)
  function.__name__ = function.__qualname__ = name
  function.__doc__ = f"input.{name}(...), torch's arguments in its order {parameters}: {getattr(Tensor, name).__doc__ or ''}"
  return function


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
  """torch's: max(0, margin + d(anchor, positive) - d(anchor, negative)) for distance_function d (pairwise_distance
  by default); swap measures the negative from the nearer of anchor and positive."""
  check_reduction("triplet_margin_with_distance_loss", reduction)
  if not margin > 0: raise ValueError(f"triplet_margin_with_distance_loss margin must be greater than 0, got {margin}")
  distance = distance_function or (lambda a, b: a.pairwise_distance(b))
  to_positive, to_negative = distance(_tensor(anchor, "triplet_margin_with_distance_loss"), positive), distance(anchor, negative)
  if swap: to_negative = to_negative.minimum(distance(positive, negative))
  return reduced((margin + to_positive - to_negative).relu(), reduction)


for _name, _method in [(name, name) for name in SAME_ORDER] + list(RENAMED.items()):
  if hasattr(Tensor, _method): globals()[_name] = _from_method(_name, _method)
for _name, _parameters in LOSSES.items(): globals()[_name] = _loss_from_method(_name, _parameters)
