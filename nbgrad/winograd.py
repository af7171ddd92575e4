"""Winograd's minimal filtering F(4x4, 3x3) (Lavin & Gray 2015) for convolutions with 3-wide kernels, stride 1
and dilation 1, in any number of spatial dims. Every 6^d input tile (tiles overlap by 2) and every 3^d kernel
are transformed; the 6^d transformed positions are then 6^d independent matrix products over the channels;
the products are transformed back into 4^d output tiles. Per output, the products do (6/4)^d multiply-adds
per channel pair instead of 3^d: 2.25 instead of 9 in 2-D.

Everything is built from differentiable primitives (the transforms are nbgrad.linalg.AxisTransform nodes),
so the gradients of input, weight and bias come from autograd and run through the same kernels."""
from __future__ import annotations
import math
from typing import TYPE_CHECKING
from nbgrad import autograd as F
from nbgrad.dtype import dtypes
from nbgrad.helpers import WINO
from nbgrad.device import is_cpu

if TYPE_CHECKING: from nbgrad.tensor import Tensor

G = ((1 / 4, 0, 0), (-1 / 6, -1 / 6, -1 / 6), (-1 / 6, 1 / 6, -1 / 6), (1 / 24, 1 / 12, 1 / 6), (1 / 24, -1 / 12, 1 / 6), (0, 0, 1))
BT = ((4, 0, -5, 0, 1, 0), (0, -4, -4, 1, 1, 0), (0, 4, -4, -1, 1, 0), (0, -2, -1, 2, 1, 0), (0, 2, -1, -2, 1, 0), (0, 4, 0, -5, 0, 1))
AT = ((1, 1, 1, 1, 1, 0), (0, 1, -1, 2, -2, 0), (0, 1, 1, 4, 4, 0), (0, 1, -1, 8, -8, 1))
TILE_IN, TILE_OUT, KERNEL = 6, 4, 3


def eligible(x: Tensor, weight: Tensor, stride: tuple, dilation: tuple, acc_dtype) -> bool:
  """Whether F(4x4, 3x3) computes this convolution: 3-wide kernels, stride 1, dilation 1, and one float
  dtype the matrix product runs in (other dtypes and accumulation dtypes take the direct path)."""
  return all(k == KERNEL for k in weight.shape[2:]) and all(s == 1 for s in stride) and all(d == 1 for d in dilation) \
    and x.dtype == weight.dtype and x.dtype in (dtypes.float32, dtypes.float64) and acc_dtype in (None, x.dtype)


def chosen(x_shape: tuple, weight_shape: tuple, groups: int, device: str) -> bool:
  """WINO=1 (the environment, or Context(WINO=1)) forces Winograd for an eligible convolution and WINO=0
  forbids it; otherwise the measured rule.
  x_shape is the padded input's shape."""
  if WINO.value in (0, 1): return bool(WINO.value)
  return faster_than_direct(x_shape, weight_shape, groups, device)


# The rule, from benchmarks/test_bench_conv.py on the 2-core CPU (fastest of 30 calls, forward / forward+backward,
# ms; Intel Xeon, 2026-12-02, with the direct convolution an image at a time, nbgrad/jit/conv.py):
#   batch 16,  64 ch, 56x56: Winograd 15.5-19.8 / 48-57,      direct 21.7-24.4 / 65-72
#   batch 16, 128 ch, 28x28: Winograd  8.9-10.4 / 26-31,      direct 17.0-18.6 / 53-58
#   batch 16, 256 ch, 14x14: Winograd 11.7-12.3 / 27-30,      direct 16.9-18.4 / 53-57   (14 = 3.5 tiles: 30% of
#                            the products pad)
#   batch 1,   64 ch, 56x56: Winograd  2.8 / 6.7-6.9,         direct 1.7 / 5.8-5.9
# The tile transforms cost per channel and tile what the products save per channel pair: Winograd pays with
# wide layers (64 channels a group or more on both sides) and products big enough to run at speed: 4M multiply-
# adds or more each (Cin/G x Cout/G x tiles; 0.8M in the batch-1 layer, 12.8M-16.8M in the batch-16 ones).
# (With the direct convolution as one product over the whole batch's windows, Winograd won the batch-1 layer's
# forward+backward, and the rule took 0.5M there.)
# Other devices compute the direct convolution: the transforms have no GPU routine yet.
MIN_CHANNELS, MIN_PRODUCT = 64, 1 << 22


def faster_than_direct(x_shape: tuple, weight_shape: tuple, groups: int, device: str) -> bool:
  cin_group, cout_group = weight_shape[1], weight_shape[0] // groups
  tiles = x_shape[0] * math.prod(output_tiles(x_shape[2:])[1])
  return is_cpu(device) and min(cin_group, cout_group) >= MIN_CHANNELS and cin_group * cout_group * tiles >= MIN_PRODUCT


def output_tiles(spatial: tuple) -> tuple[list[int], list[int]]:
  """The output sizes of a padded input's spatial sizes, and the 4-wide tiles along each that cover them."""
  out_sizes = [s - KERNEL + 1 for s in spatial]
  return out_sizes, [-(-o // TILE_OUT) for o in out_sizes]


def conv(x: Tensor, weight: Tensor, groups: int) -> Tensor:
  """The convolution of the padded input x (N, Cin, *S) with weight (Cout, Cin/groups, 3, .., 3)."""
  dims = weight.ndim - 2
  batch, cout, cin_group = x.shape[0], weight.shape[0], weight.shape[1]
  out_sizes, tiles = output_tiles(x.shape[2:])
  # the tiles cover the output, so the input is padded on the far side to 4 * tiles + 2
  extra = [(0, TILE_OUT * t + KERNEL - 1 - s) for t, s in zip(tiles, x.shape[2:])]
  # Channels last: the transforms' loops then run along the channels, contiguous in every buffer they read and
  # write, and vectorize (nbgrad/jit/transform.py). Buffers: the padded input (N, *S, Cin); the transformed
  # tiles (*6, G, N, *tiles, Cin/G); the products (*6, G, N, *tiles, Cout/G); the output (N, *S, Cout).
  x = x.pad(((0, 0), (0, 0), *extra)).permute(0, *range(2, 2 + dims), 1).contiguous()
  tile_view = F.Tiles.apply(x, tile=(TILE_IN,) * dims, step=TILE_OUT)                   # (N, Cin, *tiles, *6)
  tile_view = tile_view.reshape(batch, groups, cin_group, *tiles, *(TILE_IN,) * dims)
  tile_axes, tile_counts = tuple(range(3 + dims, 3 + 2 * dims)), tuple(range(3, 3 + dims))
  v_layout = (*tile_axes, 1, 0, *tile_counts, 2)
  v = F.AxisTransform.apply(tile_view, matrix=BT, axes=tile_axes, layout=v_layout,
                            grad_layout=(0, *tile_counts, *tile_axes, 1, 2)).permute(*v_layout)
  v = v.reshape(TILE_IN ** dims * groups, batch * math.prod(tiles), cin_group)
  w = weight.reshape(groups, cout // groups, cin_group, *weight.shape[2:])
  kernel_axes = tuple(range(3, 3 + dims))
  u_layout = (*kernel_axes, 0, 1, 2)
  u = F.AxisTransform.apply(w, matrix=G, axes=kernel_axes, layout=u_layout).permute(*u_layout)
  u = u.reshape(TILE_IN ** dims * groups, cout // groups, cin_group)
  m = v.dot(u.transpose(1, 2)).reshape(*(TILE_IN,) * dims, groups, batch, *tiles, cout // groups)
  # (N, tiles_1, 4, tiles_2, 4, ..., G, Cout/G): each 4^d output tile lands in place
  y_layout = (dims + 1, *(axis for i in range(dims) for axis in (dims + 2 + i, i)), dims, 2 * dims + 2)
  y = F.AxisTransform.apply(m, matrix=AT, axes=tuple(range(dims)), layout=y_layout).permute(*y_layout)
  # the output's gradient is copied channels last once, so the transforms of the backward read along channels too
  y = y.reshape(batch, *(TILE_OUT * t for t in tiles), cout).contiguous_backward().permute(0, dims + 1, *range(1, dims + 1))
  return y.shrink(((0, batch), (0, cout), *((0, o) for o in out_sizes)))
