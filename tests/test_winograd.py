"""Winograd F(4x4, 3x3) convolutions against torch's direct convolution: forward values and the gradients of
input, weight and bias, for every form of the layer the issue names; the WINO switch and the default rule;
the transformed weights computed once; errors identical to the direct path's."""
import gc
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from nbgrad import Context, Tensor, dtypes
from nbgrad.helpers import WINO

TORCH_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
RTOL, ATOL = 1e-4, 1e-5


def assert_close(got, want):
  """float32 tolerance: 1e-4 relative, 1e-5 absolute on the scale of the tensor (a weight gradient summed over
  many positions is large, and its small entries carry the rounding of the large sums)."""
  np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL * max(1.0, float(np.abs(want).max(initial=0))))


def kernel_names(t: Tensor) -> list[str]:
  return [k.name for k in t.schedule()]


def padded(x: np.ndarray, pads: list) -> np.ndarray:
  """x padded (negative: cropped) as pad2d reads pads: (before, after) pairs, last dim first."""
  for i, (before, after) in enumerate(zip(pads[::2], pads[1::2])):
    axis = x.ndim - 1 - i
    x = np.pad(x, [(max(before, 0), max(after, 0)) if a == axis else (0, 0) for a in range(x.ndim)])
    x = x[(slice(None),) * axis + (slice(-min(before, 0), x.shape[axis] + min(after, 0)),)]
  return x


def pad2d_list(padding, dims: int) -> list:
  if isinstance(padding, int): return [padding] * (2 * dims)
  if len(padding) == dims: return [p for p in reversed(padding) for _ in range(2)]
  return list(padding)


def compare_with_torch(x_shape, w_shape, groups=1, padding=0, bias=True, dtype=np.float32, seed=0):
  """Runs conv2d forward and backward of (out * r).sum() on nbgrad and torch; returns nbgrad's output."""
  rng = np.random.default_rng(seed)
  # a layer as torch initializes it, fed activations in [-1, 1): outputs of order 1, where the tolerance applies
  bound = float(np.prod(w_shape[1:])) ** -0.5
  x = rng.uniform(-1, 1, x_shape).astype(dtype)
  w, b = rng.uniform(-bound, bound, w_shape).astype(dtype), rng.uniform(-bound, bound, w_shape[0]).astype(dtype)
  dims = len(w_shape) - 2
  tw, tb = (torch.tensor(a, requires_grad=True) for a in (w, b))
  x_padded = torch.tensor(padded(x, pad2d_list(padding, dims)), requires_grad=True)
  ref = TORCH_CONV[dims](x_padded, tw, tb if bias else None, groups=groups)
  r = rng.standard_normal(tuple(ref.shape)).astype(dtype)
  (ref * torch.tensor(r)).sum().backward()
  nx, nw, nb = (Tensor(a, requires_grad=True) for a in (x, w, b))
  out = nx.conv2d(nw, nb if bias else None, groups=groups, padding=padding)
  assert out.shape == tuple(ref.shape) and out.dtype == (dtypes.float32 if dtype == np.float32 else dtypes.float64)
  (out * Tensor(r)).sum().backward()
  assert_close(out.numpy(), ref.detach().numpy())
  # the unpadded input's gradient: the padded input's, with the padding undone (a crop, or zeros where cropped)
  grad_x = Tensor(x_padded.grad.numpy()).pad2d([-p for p in pad2d_list(padding, dims)]).numpy()
  assert_close(nx.grad.numpy(), grad_x)
  assert_close(nw.grad.numpy(), tw.grad.numpy())
  if bias: assert_close(nb.grad.numpy(), tb.grad.numpy())
  return out


CASES = {
  "2d-padding-1": ((2, 3, 9, 7), (4, 3, 3, 3), 1, 1),
  "output-smaller-than-a-tile": ((1, 2, 4, 5), (3, 2, 3, 3), 1, 0),
  "one-input-channel": ((2, 1, 8, 8), (4, 1, 3, 3), 1, 1),
  "groups-2-per-dim-padding": ((2, 4, 10, 11), (6, 2, 3, 3), 2, (1, 2)),
  "depthwise": ((2, 4, 7, 6), (4, 1, 3, 3), 4, 1),
  "four-paddings": ((1, 3, 6, 9), (2, 3, 3, 3), 1, (1, 0, 2, 1)),
  "negative-padding": ((1, 2, 9, 8), (3, 2, 3, 3), 1, (-1, 2, 1, -1)),
  "batch-3-multiple-of-4": ((3, 2, 10, 10), (5, 2, 3, 3), 1, 0),
  "1d": ((2, 3, 10), (4, 3, 3), 1, 1),
  "3d": ((1, 2, 6, 5, 7), (3, 2, 3, 3, 3), 1, 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_winograd_matches_direct_forward_and_backward(case, monkeypatch):
  monkeypatch.setattr(WINO, "value", 1)
  x_shape, w_shape, groups, padding = CASES[case]
  out = compare_with_torch(x_shape, w_shape, groups, padding, bias=case != "one-input-channel")
  assert any(name.startswith("axis_transform") for name in kernel_names(Tensor.ones(*x_shape).conv2d(Tensor.ones(*w_shape), groups=groups, padding=padding)))
  assert out.numel() > 0


def test_winograd_float64(monkeypatch):
  monkeypatch.setattr(WINO, "value", 1)
  compare_with_torch((2, 3, 7, 9), (2, 3, 3, 3), padding=1, dtype=np.float64)


def test_winograd_empty_batch(monkeypatch):
  monkeypatch.setattr(WINO, "value", 1)
  out = Tensor.ones(0, 3, 8, 8).conv2d(Tensor.ones(4, 3, 3, 3), padding=1)
  assert out.shape == (0, 4, 8, 8) and out.numpy().shape == (0, 4, 8, 8)


def test_wino_0_forbids_and_ineligible_layers_stay_direct(monkeypatch):
  monkeypatch.setattr(WINO, "value", 0)
  assert not any(n.startswith("axis_transform") for n in kernel_names(Tensor.ones(1, 32, 8, 8).conv2d(Tensor.ones(32, 32, 3, 3))))
  monkeypatch.setattr(WINO, "value", 1)
  rng = np.random.default_rng(1)
  x, w = rng.standard_normal((1, 2, 9, 9)).astype(np.float32), rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
  for kwargs in ({"stride": 2}, {"dilation": 2}):   # not F(4x4, 3x3): computed directly, still right
    out = Tensor(x).conv2d(Tensor(w), **kwargs)
    assert not any(n.startswith("axis_transform") for n in kernel_names(out))
    assert_close(out.numpy(), F.conv2d(torch.tensor(x), torch.tensor(w), **kwargs).numpy())
  assert not any(n.startswith("axis_transform") for n in kernel_names(Tensor.ones(1, 2, 9, 9).conv2d(Tensor.ones(3, 2, 5, 5))))
  int_conv = Tensor.ones(1, 2, 6, 6, dtype=dtypes.int32).conv2d(Tensor.ones(3, 2, 3, 3, dtype=dtypes.int32))
  assert int_conv.dtype == dtypes.int32 and (int_conv.numpy() == 18).all()


def test_context_switches_winograd_for_a_block_as_tinygrad():
  def uses_winograd(): return any(n.startswith("axis_transform") for n in kernel_names(Tensor.ones(1, 32, 8, 8).conv2d(Tensor.ones(32, 32, 3, 3))))
  with Context(WINO=1):
    assert uses_winograd()
    with Context(WINO=0): assert not uses_winograd()
    assert uses_winograd()
  assert WINO.value == -1 and not uses_winograd()   # the default rule: too narrow


def test_default_rule_uses_winograd_for_wide_layers_with_big_products(monkeypatch):
  monkeypatch.setattr(WINO, "value", -1)
  def uses_winograd(x_shape, w_shape, needs_grad=True):
    out = Tensor.empty(*x_shape).conv2d(Tensor.empty(*w_shape, requires_grad=needs_grad), padding=1)
    return any(n.startswith("axis_transform") for n in kernel_names(out))
  for needs_grad in (True, False):
    assert uses_winograd((16, 64, 56, 56), (64, 64, 3, 3), needs_grad)
    assert uses_winograd((16, 128, 14, 14), (128, 128, 3, 3), needs_grad)
    assert not uses_winograd((16, 32, 28, 28), (32, 32, 3, 3), needs_grad)     # narrow
    assert not uses_winograd((1, 64, 56, 56), (64, 64, 3, 3), needs_grad)   # 196 tiles of 64 x 64 channels: 0.8M per product
  assert not uses_winograd((1, 64, 28, 28), (64, 64, 3, 3))      # 49 tiles


def test_transformed_weight_is_computed_once_per_realize(monkeypatch):
  monkeypatch.setattr(WINO, "value", 1)
  rng = np.random.default_rng(2)
  w = Tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32)).realize()
  a, b = (Tensor(rng.standard_normal((2, 3, 8, 8)).astype(np.float32)) for _ in range(2))
  total = a.conv2d(w, padding=1).sum() + b.conv2d(w, padding=1).sum()
  weight_transforms = [n for n in kernel_names(total) if n.startswith("axis_transform_6x3")]
  assert len(weight_transforms) == 1
  want = sum(F.conv2d(torch.tensor(t.numpy()), torch.tensor(w.numpy()), padding=1).sum().item() for t in (a, b))
  np.testing.assert_allclose(total.item(), want, rtol=1e-4)


def test_weight_written_in_place_is_transformed_again(monkeypatch):
  monkeypatch.setattr(WINO, "value", 1)
  x = Tensor.ones(1, 2, 6, 6)
  w = Tensor.ones(3, 2, 3, 3).contiguous().realize()
  first = x.conv2d(w)
  np.testing.assert_allclose(first.numpy(), np.full((1, 3, 4, 4), 18.0), rtol=RTOL)
  w[0] = 2.0
  np.testing.assert_allclose(x.conv2d(w).numpy()[0, :, 0, 0], [36.0, 18.0, 18.0], rtol=RTOL)


@pytest.mark.parametrize("wino", ["0", "1"])
def test_errors_are_those_of_the_direct_path(wino, monkeypatch):
  monkeypatch.setattr(WINO, "value", int(wino))
  with pytest.raises(ValueError, match="input channels 3") as channels:
    Tensor.ones(1, 3, 8, 8).conv2d(Tensor.ones(4, 2, 3, 3))
  with pytest.raises(ValueError, match="larger than the input") as too_big:
    Tensor.ones(1, 2, 2, 8).conv2d(Tensor.ones(4, 2, 3, 3))
  with pytest.raises(ValueError, match="groups=2"):
    Tensor.ones(1, 4, 8, 8).conv2d(Tensor.ones(3, 2, 3, 3), groups=2)
  for error in (channels, too_big):
    assert "wino" not in str(error.value).lower() and "tile" not in str(error.value).lower()


def test_winograd_peak_extra_memory_is_at_most_4x_input_plus_output(monkeypatch):
  from nbgrad import GlobalCounters
  monkeypatch.setattr(WINO, "value", 1)
  x, w = Tensor.ones(2, 16, 20, 20).contiguous().realize(), Tensor.ones(16, 16, 3, 3).contiguous().realize()
  gc.collect()   # buffers of earlier tests freed now, not in the middle of this one
  GlobalCounters.reset()
  before = GlobalCounters.mem_used
  out = x.conv2d(w, padding=1).realize()
  assert GlobalCounters.mem_peak - before - out.nbytes() <= 4 * (x.nbytes() + out.nbytes())


@pytest.mark.parametrize("batch,matrix_name", [((2, 1, 37, 5), "BT"), ((40, 3), "AT"), ((7,), "G")])
def test_axis_transform_routine_against_numpy(batch, matrix_name):
  """The CPU routine of the transforms, against einsum: runs of tiles longer than one call's chunk (and a
  partial last chunk), size-1 batch dims, a single batch dim, and strided input and output layouts."""
  from nbgrad import winograd
  from nbgrad.jit.transform import axis_transform
  matrix = np.array(getattr(winograd, matrix_name), np.float64)
  rows, cols = matrix.shape
  rng = np.random.default_rng(11)
  x = rng.standard_normal((*batch[:-1], cols, cols, batch[-1]))             # tile axes before the channels
  out = np.full((rows, rows, *batch), np.nan)                               # tile axes first
  item = x.itemsize
  x_strides = [s // item for s in x.strides]
  out_strides = [s // item for s in out.strides]
  axis_transform(out.reshape(-1), x.reshape(-1), tuple(map(tuple, matrix)), batch,
                 x_strides[:-3] + x_strides[-1:], out_strides[2:], x_strides[-3:-1], out_strides[:2], 0)
  letters = "klmn"[:len(batch) - 1]
  want = np.einsum(f"ai,bj,{letters}ijc->ab{letters}c", matrix, matrix, x)
  np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
