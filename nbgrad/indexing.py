"""Basic indexing (ints, slices, None, Ellipsis) as views, and setitem on realized buffers."""
from __future__ import annotations
import numpy as np


def _normalize(indices, ndim: int) -> list:
  # a list of ints is one index array; any other list is a tuple of indices (x[[t, 1]] is x[t, 1]), as in tinygrad
  if isinstance(indices, list) and not all(isinstance(i, (int, np.integer)) for i in indices): indices = tuple(indices)
  if not isinstance(indices, tuple): indices = (indices,)
  if sum(1 for i in indices if i is Ellipsis) > 1: raise IndexError("an index can only have one ellipsis (...)")
  consumed = sum(1 for i in indices if i is not None and i is not Ellipsis)
  if consumed > ndim: raise IndexError(f"too many indices: {consumed} for a tensor with {ndim} dims")
  out = []
  for i in indices:
    if i is Ellipsis: out.extend([slice(None)] * (ndim - consumed))
    else: out.append(i)
  if not any(i is Ellipsis for i in indices): out.extend([slice(None)] * (ndim - consumed))
  return out


def basic_index(tensor, indices):
  from nbgrad.tensor import Tensor
  items = _normalize(indices, tensor.ndim)
  for i in items:
    if isinstance(i, (Tensor, list, tuple, np.ndarray)): return advanced_index(tensor, items)
    if not (i is None or isinstance(i, (slice, int, np.integer))) or isinstance(i, bool):
      raise IndexError(f"unsupported index {i!r}: use ints, slices, None, ... or integer tensors")
  x, dim = tensor, 0
  shrink, flips, strides, final_shape = [], [], [], []
  for i in items:
    if i is None:
      final_shape.append(1)
      continue
    size = tensor.shape[dim]
    if isinstance(i, (int, np.integer)):
      if not -size <= i < size: raise IndexError(f"index {i} is out of range for dim {dim} with size {size}")
      i = int(i) % size
      shrink.append((i, i + 1)); flips.append(False); strides.append(1)  # noqa: E702
    else:
      start, stop, step = i.indices(size)   # raises ValueError for step 0
      count = len(range(start, stop, step))
      if count == 0: shrink.append((0, 0)); flips.append(False); strides.append(1)  # noqa: E702
      elif step > 0: shrink.append((start, start + (count - 1) * step + 1)); flips.append(False); strides.append(step)  # noqa: E702
      else:
        last = start + (count - 1) * step
        shrink.append((last, start + 1)); flips.append(True); strides.append(-step)  # noqa: E702
      final_shape.append(count)
    dim += 1
  x = x.shrink(tuple(shrink))
  flip_axes = tuple(d for d, f in enumerate(flips) if f)
  if flip_axes: x = x.flip(flip_axes)
  if any(s != 1 for s in strides):
    # take every s-th element: pad to a multiple of s, split the dim into (n, s), keep column 0
    padded = x.pad(tuple((0, (-n) % s) for n, s in zip(x.shape, strides)))
    split = padded.reshape(tuple(d for n, s in zip(padded.shape, strides) for d in (n // s, s)))
    kept = split.shrink(tuple(r for n, s in zip(padded.shape, strides) for r in ((0, n // s), (0, 1))))
    x = kept.reshape(tuple(n // s for n, s in zip(padded.shape, strides)))
  return x.reshape(tuple(final_shape))


def _index_tensor(index, size: int, device: str):
  from nbgrad.tensor import Tensor
  from nbgrad.dtype import dtypes
  if not isinstance(index, Tensor):
    array = np.asarray(index)
    if array.dtype.kind not in "iu" and array.size: raise IndexError(f"index {index!r} must hold integers, not {array.dtype}")
    index = Tensor(array.astype(np.int32), device=device)
  if not dtypes.is_int(index.dtype): raise IndexError(f"index tensors must be integer, got {index.dtype}")
  return (index < 0).where(index + size, index)


def advanced_index(tensor, items: list):
  """Integer tensor / list indices mixed with basic ones, with numpy's placement rules. Each indexed dim
  becomes a one-hot comparison against arange, so an out-of-range index selects nothing and reads 0."""
  from nbgrad.tensor import Tensor, broadcast_shape
  basic, positions, index_items, dim = [], [], [], 0
  for i in items:
    is_tensor = isinstance(i, (Tensor, list, tuple, np.ndarray))
    basic.append(slice(None) if is_tensor else i)
    if is_tensor:
      positions.append(dim)
      index_items.append(i)
    if is_tensor or i is None or isinstance(i, slice): dim += 1   # the dims basic indexing keeps
  x = basic_index(tensor, tuple(basic))
  indices = [_index_tensor(i, x.shape[d], x.device) for d, i in zip(positions, index_items)]
  batch = broadcast_shape(*[i.shape for i in indices])
  rest = [d for d in range(x.ndim) if d not in positions]
  moved = x.permute(rest + positions)
  rest_shape, sizes = tuple(x.shape[d] for d in rest), tuple(x.shape[d] for d in positions)
  mask = None
  for k, (index, size) in enumerate(zip(indices, sizes)):
    spread = [1] * len(sizes)
    spread[k] = size
    hit = index.reshape(index.shape + (1,) * len(sizes))._broadcast_to(batch + (1,) * len(sizes)) == \
      Tensor.arange(size, device=x.device).reshape(tuple(spread))
    mask = hit if mask is None else mask & hit
  picked = mask.reshape((1,) * len(rest_shape) + mask.shape).where(
    moved.reshape(rest_shape + (1,) * len(batch) + sizes), 0)
  axes = tuple(range(len(rest_shape) + len(batch), picked.ndim))
  out = picked._max(axes) if picked.dtype.kind == "b" else picked.sum(axes).cast(x.dtype)
  adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
  front = sum(1 for d in rest if d < positions[0]) if adjacent else 0
  order = list(range(len(rest_shape)))
  order = order[:front] + list(range(len(rest_shape), len(rest_shape) + len(batch))) + order[front:]
  return out.permute(order)


def _strided_window(lazy):
  """(shape, strides, offset) of the elements lazy reads in its realized base buffer, when it reads each of them
  at most once through one strided window (x, x[1:], x.T); None otherwise (padded, expanded, lazy tensors)."""
  if lazy.base.buffer is None or (window := lazy.view.strided()) is None: return None
  strides, offset = window
  if any(s == 0 and n > 1 for s, n in zip(strides, lazy.shape)): return None
  return lazy.shape, strides, offset


def is_window_of_a_buffer(tensor) -> bool:
  """Whether tensor is a view (x[1:], x.T) reading a realized buffer it shares with another tensor, so that
  writing into it in place must reach that buffer."""
  lazy = tensor.lazydata
  return lazy is not lazy.base and _strided_window(lazy) is not None


def set_basic_index(tensor, indices, value):
  """t[indices] = value for basic indices. A tensor reading a realized buffer through a strided window (x[1:],
  x.T) writes through to that buffer, as in numpy and torch; any other first gets a contiguous buffer of its own."""
  from nbgrad.tensor import Tensor
  from nbgrad.device import backend
  from nbgrad.dtype import dtypes, float32_to_bfloat16_bits
  from nbgrad.jit.blas import strided_view
  from nbgrad.linalg import forget_derived_nodes
  from nbgrad.device import realize
  if tensor.requires_grad: raise NotImplementedError("setitem on a tensor that requires grad is not supported")
  if isinstance(value, Tensor) and value.requires_grad:
    raise NotImplementedError("setitem with a value that requires grad is not supported (its gradient would be lost); detach() it")
  items = indices if isinstance(indices, tuple) else (indices,)
  if any(isinstance(i, (Tensor, list, tuple, np.ndarray)) for i in items):
    raise NotImplementedError("setitem with tensor, list or tuple indices (advanced indexing) is not supported")
  target = tensor[indices]   # checks the indices before anything changes
  if not isinstance(value, (Tensor, bool, int, float, list, tuple, np.ndarray, np.generic)):
    raise TypeError(f"cannot assign a {type(value).__name__} to tensor elements; give a number, a sequence, an array or a Tensor")
  if not isinstance(value, Tensor): value = Tensor(value, dtype=tensor.dtype, device=tensor.device)
  extra = value.ndim - target.ndim
  if extra > 0 and all(s == 1 for s in value.shape[:extra]): value = value.reshape(value.shape[extra:])   # as numpy and torch
  values = value.cast(tensor.dtype)._broadcast_to(target.shape).numpy()
  if values.size == 0: return   # no element to write (an empty tensor or slot), as in numpy
  if (pending := tensor.lazydata.base.pending_readers()): realize(pending)
  if (window := _strided_window(tensor.lazydata)) is None:
    tensor.replace(tensor.contiguous().realize())
    window = _strided_window(tensor.lazydata)
  base, device = tensor.lazydata.base, backend(tensor.device)
  flat = device.to_host(base.buffer, tensor.dtype)   # the buffer itself on the CPU; a host copy on other devices
  strided_view(flat, *window, writeable=True)[indices] = float32_to_bfloat16_bits(values) if tensor.dtype == dtypes.bfloat16 else values
  forget_derived_nodes(base)   # nodes computed from the old values must not be shared
  base.writes += 1
  if flat is not base.buffer: base.buffer = device.from_host(flat, tensor.dtype)
