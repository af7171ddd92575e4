"""Layers: callable objects that hold their parameters as Tensors (tinygrad 0.9.0's nn). A model is any object
whose attributes are layers and tensors; nbgrad.nn.state finds its parameters, nbgrad.nn.optim updates them.

Weights start as tinygrad's do: Linear and the convolutions draw kaiming_uniform(a=sqrt(5)) weights and
uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) biases (what torch draws, from nbgrad's generator), Embedding draws
glorot_uniform, the norms start at weight 1 and bias 0, LSTMCell draws every weight and bias from
uniform(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch's."""
from __future__ import annotations
import math
from typing import Optional, Union
import numpy as np
from nbgrad import normalization
from nbgrad.dtype import dtypes
from nbgrad.indexing import whole_float_indices
from nbgrad.tensor import Tensor, shape_arg
from nbgrad.nn import optim, state  # noqa: F401  (nbgrad.nn.optim and nbgrad.nn.state, as in tinygrad)


def _sizes(value, dims: int, name: str) -> tuple[int, ...]:
  """An int or a tuple of dims positive ints, as a tuple."""
  sizes = (value,) * dims if isinstance(value, int) else tuple(value)
  if len(sizes) != dims or not all(isinstance(s, int) and s > 0 for s in sizes):
    raise ValueError(f"{name} must be a positive int or {dims} of them, got {value!r}")
  return sizes


def _input(layer, x, weight: Optional[Tensor]) -> Tensor:
  """A layer's input: a Tensor, or a numpy array (a numpy user's habit) as a tensor on the device of the layer's
  weight (the default device for a layer without one)."""
  if isinstance(x, Tensor): return x
  if isinstance(x, np.ndarray): return Tensor(x, device=None if weight is None else weight.device)
  raise TypeError(f"{type(layer).__name__} takes a Tensor (or a numpy array), got {type(x).__name__}")


def _uniform_bias(size: int, fan_in: int) -> Tensor:
  bound = 1 / math.sqrt(max(fan_in, 1))
  return Tensor.uniform(size, low=-bound, high=bound)


class Linear:
  """y = x @ weight.T + bias, weight (out_features, in_features)."""
  def __init__(self, in_features: int, out_features: int, bias: bool = True):
    self.weight = Tensor.kaiming_uniform(out_features, in_features, a=math.sqrt(5))
    self.bias = _uniform_bias(out_features, in_features) if bias else None

  def __call__(self, x: Tensor) -> Tensor: return _input(self, x, self.weight).linear(self.weight.transpose(), self.bias)


PADDING_MODES = {"zeros": "constant", "reflect": "reflect", "replicate": "replicate", "circular": "circular"}   # torch's -> pad's


class Conv2d:
  """A convolution over as many spatial dims as kernel_size has (two for an int): weight (out, in/groups, *kernel).
  padding_mode, as torch's: what the padding holds ("zeros", or the input "reflect"ed, "replicate"d or "circular")."""
  def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
               bias: bool = True, padding_mode: str = "zeros"):
    self.kernel_size = _sizes(kernel_size, 2 if isinstance(kernel_size, int) else len(kernel_size), "kernel_size")
    if groups < 1 or in_channels % groups or out_channels % groups:
      raise ValueError(f"groups={groups} must divide in_channels={in_channels} and out_channels={out_channels}")
    if padding_mode not in PADDING_MODES: raise ValueError(f"padding_mode {padding_mode!r} must be one of {list(PADDING_MODES)}")
    self.stride, self.padding, self.dilation, self.groups, self.padding_mode = stride, padding, dilation, groups, padding_mode
    dims = len(self.kernel_size)
    self.pads = Tensor._conv_padding(padding, self.kernel_size, _sizes(stride, dims, "stride"), _sizes(dilation, dims, "dilation"))
    self.weight = self.initialize_weight(out_channels, in_channels, groups)
    self.bias = _uniform_bias(out_channels, math.prod(self.weight.shape[1:])) if bias else None

  def initialize_weight(self, out_channels: int, in_channels: int, groups: int) -> Tensor:
    return Tensor.kaiming_uniform(out_channels, in_channels // groups, *self.kernel_size, a=math.sqrt(5))

  def __call__(self, x: Tensor) -> Tensor:
    x, padding = _input(self, x, self.weight), self.padding
    if self.padding_mode != "zeros": x, padding = x.pad(tuple(self.pads), mode=PADDING_MODES[self.padding_mode]), 0
    return x.conv2d(self.weight, self.bias, groups=self.groups, stride=self.stride, dilation=self.dilation, padding=padding)


class ConvTranspose2d(Conv2d):
  """The transposed convolution (the gradient of Conv2d by its input): weight (in, out/groups, *kernel)."""
  def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, dilation=1,
               groups: int = 1, bias: bool = True):
    super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)
    self.output_padding = output_padding

  def initialize_weight(self, out_channels: int, in_channels: int, groups: int) -> Tensor:
    return Tensor.kaiming_uniform(in_channels, out_channels // groups, *self.kernel_size, a=math.sqrt(5))

  def __call__(self, x: Tensor) -> Tensor:
    return _input(self, x, self.weight).conv_transpose2d(self.weight, self.bias, groups=self.groups, stride=self.stride,
                                                         dilation=self.dilation, padding=self.padding, output_padding=self.output_padding)


def Conv1d(in_channels: int, out_channels: int, kernel_size: int, stride=1, padding=0, dilation=1, groups: int = 1,
           bias: bool = True, padding_mode: str = "zeros") -> Conv2d:
  return Conv2d(in_channels, out_channels, _sizes(kernel_size, 1, "kernel_size"), stride, padding, dilation, groups, bias, padding_mode)


def ConvTranspose1d(in_channels: int, out_channels: int, kernel_size: int, stride=1, padding=0, output_padding=0, dilation=1,
                    groups: int = 1, bias: bool = True) -> ConvTranspose2d:
  return ConvTranspose2d(in_channels, out_channels, _sizes(kernel_size, 1, "kernel_size"), stride, padding, output_padding,
                         dilation, groups, bias)


class BatchNorm:
  """Normalizes each channel (axis 1) over the batch and every other axis. While Tensor.training it uses the batch's
  statistics, and with track_running_stats moves the running ones toward them (running_var takes the unbiased
  variance, as in torch); otherwise it uses the running statistics (as tinygrad does, also without
  track_running_stats, where torch would use the batch's). momentum=None makes them torch's cumulative average, the
  mean of every batch's statistics so far."""
  def __init__(self, sz: int, eps: float = 1e-5, affine: bool = True, track_running_stats: bool = True, momentum: Optional[float] = 0.1):
    if momentum is not None and not isinstance(momentum, (int, float)):
      raise TypeError(f"BatchNorm momentum must be a number or None, got {type(momentum).__name__}")
    self.eps, self.track_running_stats, self.momentum = eps, track_running_stats, momentum
    self.weight, self.bias = (Tensor.ones(sz), Tensor.zeros(sz)) if affine else (None, None)
    self.running_mean, self.running_var = Tensor.zeros(sz, requires_grad=False), Tensor.ones(sz, requires_grad=False)
    self.num_batches_tracked = Tensor.zeros(1, requires_grad=False)

  def __call__(self, x: Tensor) -> Tensor:
    x, channels = _input(self, x, self.running_mean), self.running_mean.shape[0]
    if x.ndim < 2 or x.shape[1] != channels:
      raise ValueError(f"BatchNorm of {channels} channels got an input of shape {x.shape}: axis 1 must be {channels}")
    if not Tensor.training: return x.batch_norm(self.running_mean, self.running_var, self.weight, self.bias, eps=self.eps)
    normalization.check_values_per_channel(x, "BatchNorm")
    running = (self.running_mean, self.running_var) if self.track_running_stats else (None, None)
    if self.track_running_stats: self.num_batches_tracked.assign(self.num_batches_tracked + 1)
    momentum = 1 / self.num_batches_tracked if self.momentum is None else self.momentum
    return normalization.normalized_by_batch(x, *running, self.weight, self.bias, momentum, self.eps)


BatchNorm1d = BatchNorm2d = BatchNorm3d = BatchNorm


def _normalized_input(layer, x) -> Tensor:
  """x for a norm over its last dims, which must be the layer's normalized_shape."""
  x, shape = _input(layer, x, layer.weight), layer.normalized_shape
  if x.shape[x.ndim - len(shape):] != shape:
    raise ValueError(f"{type(layer).__name__} over {shape} got an input of shape {x.shape}: its last dims must be {shape}")
  return x


class LayerNorm:
  """Normalizes over the last len(normalized_shape) axes, then scales and shifts by weight and bias of that shape."""
  def __init__(self, normalized_shape: Union[int, tuple[int, ...]], eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True):
    self.normalized_shape = shape_arg(normalized_shape)   # an int or a tuple of ints
    self.axis = tuple(-1 - i for i in range(len(self.normalized_shape)))
    self.eps, self.elementwise_affine = eps, elementwise_affine
    self.weight = Tensor.ones(*self.normalized_shape) if elementwise_affine else None
    self.bias = Tensor.zeros(*self.normalized_shape) if elementwise_affine and bias else None   # bias=False: torch's

  def __call__(self, x: Tensor) -> Tensor:
    return _normalized_input(self, x).layer_norm(self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm:
  """x / sqrt(mean(x^2) + eps) over the last len(dim) axes (the last one for an int), times weight (ones) of that
  shape: no centering and no bias. The 16-bit types compute in float32, as torch's."""
  def __init__(self, dim: Union[int, tuple[int, ...]], eps: float = 1e-6, elementwise_affine: bool = True):
    self.normalized_shape = shape_arg(dim)
    self.axis = tuple(-1 - i for i in range(len(self.normalized_shape)))
    self.eps, self.elementwise_affine = eps, elementwise_affine
    self.weight = Tensor.ones(*self.normalized_shape) if elementwise_affine else None

  def __call__(self, x: Tensor) -> Tensor:
    return _normalized_input(self, x).rms_norm(self.normalized_shape, self.weight, self.eps)


class LayerNorm2d(LayerNorm):
  """LayerNorm over the channels (axis 1) of an (N, C, H, W) input."""
  def __call__(self, x: Tensor) -> Tensor: return super().__call__(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class GroupNorm:
  """Normalizes each of num_groups groups of channels over its channels and the spatial axes."""
  def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True):
    if num_groups < 1 or num_channels % num_groups: raise ValueError(f"num_groups={num_groups} must divide num_channels={num_channels}")
    self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
    self.weight, self.bias = (Tensor.ones(num_channels), Tensor.zeros(num_channels)) if affine else (None, None)

  def __call__(self, x: Tensor) -> Tensor:
    x = _input(self, x, self.weight)
    if x.ndim < 2 or x.shape[1] != self.num_channels:
      raise ValueError(f"{type(self).__name__} of {self.num_channels} channels got an input of shape {x.shape}")
    return x.group_norm(self.num_groups, self.weight, self.bias, self.eps)


class InstanceNorm(GroupNorm):
  """Normalizes each channel of each sample over the spatial axes (a GroupNorm with a group per channel)."""
  def __init__(self, num_features: int, eps: float = 1e-5, affine: bool = True):
    super().__init__(num_features, num_features, eps, affine)
    self.num_features = num_features


class Embedding:
  """Rows of weight (vocab_size, embed_size) picked by a tensor of indices: out shape idx.shape + (embed_size,).
  An index outside [0, vocab_size) reads a row of zeros and sends no gradient."""
  def __init__(self, vocab_size: int, embed_size: int):
    self.vocab_sz, self.embed_sz = vocab_size, embed_size
    self.weight = Tensor.glorot_uniform(vocab_size, embed_size)

  def __call__(self, idx: Tensor) -> Tensor:
    if not isinstance(idx, Tensor): idx = Tensor(idx, device=self.weight.device)
    if dtypes.is_float(idx.dtype): idx = whole_float_indices(idx)   # as tinygrad: 2.5 reads zeros
    if not dtypes.is_int(idx.dtype): raise TypeError(f"Embedding indices must be an int or float tensor, got {idx.dtype}")
    return idx.embedding(self.weight)   # as tinygrad: -1 reads zeros, not the last row


class LSTMCell:
  """One step of an LSTM: (h, c) = cell(x, (h, c)) for x (batch, input_size) or a single (input_size,) and the state
  of the last step (zeros where hc is None). The gates are torch's, in its order i, f, g, o down weight_ih
  (4 hidden_size, input_size) and weight_hh (4 hidden_size, hidden_size): c = sigmoid(f) c + sigmoid(i) tanh(g),
  h = sigmoid(o) tanh(c)."""
  def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
    for name, size in (("input_size", input_size), ("hidden_size", hidden_size)):
      if not isinstance(size, int) or size < 1: raise ValueError(f"LSTMCell {name} must be a positive int, got {size!r}")
    self.input_size, self.hidden_size = input_size, hidden_size
    bound = 1 / math.sqrt(hidden_size)
    self.weight_ih = Tensor.uniform(4 * hidden_size, input_size, low=-bound, high=bound)
    self.weight_hh = Tensor.uniform(4 * hidden_size, hidden_size, low=-bound, high=bound)
    self.bias_ih, self.bias_hh = (Tensor.uniform(4 * hidden_size, low=-bound, high=bound),
                                  Tensor.uniform(4 * hidden_size, low=-bound, high=bound)) if bias else (None, None)

  def __call__(self, x: Tensor, hc: Optional[tuple[Tensor, Tensor]] = None) -> tuple[Tensor, Tensor]:
    x = _input(self, x, self.weight_ih)
    if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
      raise ValueError(f"LSTMCell of input_size {self.input_size} takes x of shape (batch, {self.input_size}) or ({self.input_size},), got {x.shape}")
    state_shape = x.shape[:-1] + (self.hidden_size,)
    if hc is None: h = c = Tensor.zeros(*state_shape, dtype=x.dtype, device=x.device)
    else:
      if not isinstance(hc, (tuple, list)) or len(hc) != 2: raise TypeError(f"LSTMCell hc must be a pair (h, c) or None, got {type(hc).__name__}")
      h, c = (_input(self, t, self.weight_hh) for t in hc)
      if h.shape != state_shape or c.shape != state_shape:
        raise ValueError(f"LSTMCell state for x of shape {x.shape} must be two tensors of shape {state_shape}, got {h.shape} and {c.shape}")
    gates = x.linear(self.weight_ih.transpose(), self.bias_ih) + h.linear(self.weight_hh.transpose(), self.bias_hh)
    i, f, g, o = gates.chunk(4, dim=-1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c
