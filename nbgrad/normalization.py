"""Normalization functionals at the Tensor level, with torch.nn.functional's signatures: group, layer, batch,
instance, RMS and local response normalization. Each normalizes over some dims by their own statistics (or, for
batch_norm and instance_norm in evaluation, by running statistics), then scales by an optional weight and shifts by
an optional bias. The norms of nbgrad.nn call these."""
from __future__ import annotations
import math
from nbgrad.dtype import dtypes, float_epsilon, HALF_FLOATS
from nbgrad.helpers import ShapeMismatch
# tensor.py imports this module after its Tensor class, so the import below finds Tensor complete
from nbgrad.tensor import Tensor, _check_int, _check_number, _in_float32, shape_arg


def _parameter(x, value, shape: tuple, name: str, op: str):
  """An optional weight, bias or running statistic as a tensor of the given shape (or None)."""
  value = x._operand(value, f"{op} {name}", optional=True)
  if value is not None and value.shape != shape:
    raise ShapeMismatch(f"{op} {name} of shape {value.shape} does not fit an input of shape {x.shape}: it needs {shape}")
  return value


def _weight_and_bias(x, weight, bias, shape: tuple, op: str) -> tuple:
  return _parameter(x, weight, shape, "weight", op), _parameter(x, bias, shape, "bias", op)


def _channels(x, op: str) -> int:
  if x.ndim < 2: raise ValueError(f"{op} needs an input (N, C, ...) of at least 2 dims, got shape {x.shape}")
  return x.shape[1]


def _scaled_and_shifted(x, weight, bias, shape: tuple):
  """x * weight + bias, each reshaped to shape first (either may be None)."""
  if weight is not None: x = x * weight.reshape(shape)
  return x if bias is None else x + bias.reshape(shape)


def _per_channel(x) -> tuple: return (1, -1) + (1,) * (x.ndim - 2)


def group_norm(x, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
  """Each sample's channels (dim 1) split into num_groups groups, each normalized over its channels and the
  spatial dims; weight and bias are per channel. One fused kernel."""
  _check_int("group_norm num_groups", num_groups, 1)
  channels = _channels(x, "group_norm")
  if channels % num_groups: raise ValueError(f"group_norm num_groups={num_groups} must divide the {channels} channels of shape {x.shape}")
  weight, bias = _weight_and_bias(x, weight, bias, (channels,), "group_norm")
  if x.shape[0] * channels // num_groups * math.prod(x.shape[2:]) == 1:   # torch's check: one sample of one value a group
    raise ValueError(f"group_norm needs more than 1 value per group, got an input of shape {x.shape} in {num_groups} groups")
  normalized = x.reshape(x.shape[0], num_groups, math.prod(x.shape[1:]) // num_groups).layernorm(eps=eps).reshape(x.shape)
  return _scaled_and_shifted(normalized, weight, bias, _per_channel(x))


def _normalized_axes(x, normalized_shape, op: str) -> tuple[tuple, tuple]:
  """(normalized_shape as a tuple, the axes it covers): x's last dims, which must have that shape."""
  shape = shape_arg(normalized_shape)
  if not shape: raise ValueError(f"{op} needs a normalized_shape of at least one dim, got {normalized_shape!r}")
  if len(shape) > x.ndim or x.shape[x.ndim - len(shape):] != shape:
    raise ShapeMismatch(f"{op} over {shape} got an input of shape {x.shape}: its last dims must be {shape}")
  return shape, tuple(range(-len(shape), 0))


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
  """Normalized over the last len(normalized_shape) dims, then weight and bias of normalized_shape applied."""
  shape, axes = _normalized_axes(x, normalized_shape, "layer_norm")
  weight, bias = _weight_and_bias(x, weight, bias, shape, "layer_norm")
  return _scaled_and_shifted(x.layernorm(axis=axes, eps=eps), weight, bias, shape)


def rms_norm(x, normalized_shape, weight=None, eps=None):
  """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims, times weight; eps by default the epsilon of
  x's dtype, as torch's. The 16-bit types compute in float32."""
  shape, axes = _normalized_axes(x, normalized_shape, "rms_norm")
  weight = _parameter(x, weight, shape, "weight", "rms_norm")
  return _scaled_and_shifted(_rms_normalized(x, axes, float_epsilon(x.dtype) if eps is None else eps), weight, None, shape)


@_in_float32
def _rms_normalized(x, axes: tuple, eps: float): return x * (x * x).mean(axes, keepdim=True).add(eps).rsqrt()


def _update_running(running, batch_value, momentum: float):
  """running moved toward batch_value, in place and outside the graph, in running's own dtype (float64 batches move
  float32 statistics)."""
  with Tensor.inference_mode():
    running.assign(((1 - momentum) * running + momentum * batch_value.detach()).cast(running.dtype))


def _running_statistics(x, running_mean, running_var, channels: int, op: str):
  running_mean = _parameter(x, running_mean, (channels,), "running_mean", op)
  running_var = _parameter(x, running_var, (channels,), "running_var", op)
  if (running_mean is None) != (running_var is None): raise ValueError(f"{op} needs both running_mean and running_var, or neither")
  return running_mean, running_var


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training: bool = False, momentum: float = 0.1, eps: float = 1e-5):
  """Each channel (dim 1) normalized over the batch and the spatial dims. Training: by the batch's statistics, the
  running ones (if given) moved toward them in place, the variance unbiased; otherwise by the running ones."""
  _check_number("batch_norm momentum", momentum)
  channels = _channels(x, "batch_norm")
  running_mean, running_var = _running_statistics(x, running_mean, running_var, channels, "batch_norm")
  weight, bias = _weight_and_bias(x, weight, bias, (channels,), "batch_norm")
  if not training:
    if running_mean is None: raise ValueError("batch_norm in evaluation (training=False) needs running_mean and running_var")
    return x.batchnorm(weight, bias, running_mean, running_var.add(eps).rsqrt())
  check_values_per_channel(x, "batch_norm")
  return normalized_by_batch(x, running_mean, running_var, weight, bias, momentum, eps)


def check_values_per_channel(x, op: str):
  """ValueError, as torch raises, for a batch of one value per channel: its variance has no meaning."""
  if x.shape[0] * math.prod(x.shape[2:]) == 1:
    raise ValueError(f"{op} in training needs more than 1 value per channel, got an input of shape {x.shape}")


def normalized_by_batch(x, running_mean, running_var, weight, bias, momentum: float, eps: float):
  """batch_norm in training, its input checked by the caller. The 16-bit types take their statistics in float32, as
  torch's: a float16 deviation of 300 squared is inf (the variance, 46656, is not)."""
  axes = tuple(i for i in range(x.ndim) if i != 1)
  wide = x.cast(dtypes.float32) if x.dtype in HALF_FLOATS else x
  mean = wide.mean(axis=axes)
  centered = wide - mean.detach().reshape(_per_channel(x))   # the variance's gradient through the mean is 0
  var = (centered * centered).mean(axis=axes)
  if running_mean is not None and (count := x.numel() // x.shape[1]):   # an empty batch leaves them, as torch's
    _update_running(running_mean, mean, momentum)
    _update_running(running_var, var * (count / max(count - 1, 1)), momentum)
  return wide.batchnorm(weight, bias, mean, var.add(eps).rsqrt()).cast(x.dtype)


def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5):
  """Each channel of each sample normalized over the spatial dims (use_input_stats), the running statistics (if
  given) moved toward the batch's mean of the samples' (unbiased) ones; or, without use_input_stats, by the running
  statistics, as batch_norm in evaluation."""
  _check_number("instance_norm momentum", momentum)
  channels = _channels(x, "instance_norm")
  running_mean, running_var = _running_statistics(x, running_mean, running_var, channels, "instance_norm")
  if not use_input_stats: return batch_norm(x, running_mean, running_var, weight, bias, False, momentum, eps)
  if math.prod(x.shape[2:]) == 1:
    raise ValueError(f"instance_norm needs more than 1 spatial element per channel, got an input of shape {x.shape}")
  if running_mean is not None and x.shape[0]:   # an empty batch leaves them, as batch_norm's
    spatial = x.detach().reshape(x.shape[0], channels, -1)
    _update_running(running_mean, spatial.mean(-1).mean(0), momentum)
    _update_running(running_var, spatial.var(-1).mean(0), momentum)
  return group_norm(x, channels, weight, bias, eps)


def local_response_norm(x, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
  """x / (k + alpha * mean(x^2 over size neighbouring channels))^beta, the window zero-padded at the ends of dim 1
  (size // 2 channels before, (size - 1) // 2 after)."""
  _check_int("local_response_norm size", size, 1)
  if x.ndim < 3: raise ValueError(f"local_response_norm needs an input (N, C, ...) of at least 3 dims, got shape {x.shape}")
  if x.numel() == 0: return x
  squares = (x * x).movedim(1, -1).pad2d((size // 2, (size - 1) // 2))
  window_means = squares.avg_pool1d(size, 1).movedim(-1, 1)
  return x / (window_means * alpha + k).pow(beta)
