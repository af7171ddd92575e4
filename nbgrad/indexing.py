"""Indexing: basic indices (ints, slices, None, Ellipsis) as views, integer and boolean array indices as indexed
reads, and setitem on realized buffers."""
from __future__ import annotations
import math
from typing import Optional
import numpy as np
from nbgrad import device as devices
from nbgrad.autograd import NO_GRAPH, Slice, Take, TakeAlong
from nbgrad.dtype import cast_scalar, check_storable, dtypes, float32_to_bfloat16_bits, index_dtype
from nbgrad.graph.view import contiguous_strides
from nbgrad.jit.blas import strided_view
from nbgrad.linalg import forget_derived_nodes


def whole_float_indices(index):
  """Float index values read as tinygrad reads them, comparing them with the positions: 3.0 is position 3, and a value
  no position equals (2.5, -1.0, nan) becomes int32's minimum, an index past every dim, which reads 0."""
  whole = (index >= 0) & (index == index.trunc())
  return whole.where(index, -2**31).cast(dtypes.int32)


def _is_int_tensor(i) -> bool:
  from nbgrad.tensor import Tensor
  return isinstance(i, Tensor) and dtypes.is_int(i.dtype)


def foreign_array(x):
  """An array of another library (a torch tensor: anything numpy can read through __array__ that is not a Tensor,
  a numpy array or a number) as a numpy array; anything else as it is. A torch tensor is read detached from its
  graph, from its device, and bfloat16 as float32 (numpy has no bfloat16)."""
  from nbgrad.tensor import Tensor
  if not hasattr(x, "__array__") or isinstance(x, (Tensor, np.ndarray, np.generic)): return x
  if hasattr(x, "detach") and hasattr(x, "cpu"):
    x = x.detach().cpu()
    if str(x.dtype) == "torch.bfloat16": x = x.float()
  return np.asarray(x)


def _is_array_index(i) -> bool:
  from nbgrad.tensor import Tensor
  return isinstance(i, (Tensor, list, tuple, np.ndarray))


def _bool_mask(i) -> Optional[np.ndarray]:
  """i's values if it is a boolean mask (a bool tensor, array or list with at least one dim), else None."""
  from nbgrad.tensor import Tensor
  if isinstance(i, Tensor): return i.numpy() if i.dtype == dtypes.bool and i.ndim else None
  if isinstance(i, (list, tuple, np.ndarray)) and (array := np.asarray(i)).dtype == np.bool_ and array.ndim: return array
  return None


def _index_items(indices) -> tuple:
  """indices as a tuple of index items. A list of ints or bools is one index array; any other list is a tuple of
  indices (x[[t, 1]] is x[t, 1]), as in tinygrad. A 0-d integer tensor is an int, as in torch and tinygrad."""
  from nbgrad.tensor import Tensor
  if isinstance(indices, list) and not all(isinstance(i, (int, np.integer, bool, np.bool_)) for i in indices): indices = tuple(indices)
  if not isinstance(indices, tuple): indices = (indices,)
  indices = tuple(np.asarray(i) if isinstance(i, range) else foreign_array(i) for i in indices)   # a range: numpy's index array
  # a 0-d int or bool tensor or array is an int or bool, as in numpy and torch
  return tuple(int(i.item()) if isinstance(i, Tensor) and i.ndim == 0 and dtypes.is_int(i.dtype) else
               bool(i.item()) if isinstance(i, Tensor) and i.ndim == 0 and i.dtype == dtypes.bool else
               i.item() if isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype.kind in "biu" else i for i in indices)


def _normalize(indices, shape: tuple[int, ...]) -> list:
  """The index items, one per dim of shape (None adds one): the Ellipsis and the dims left out become full
  slices, and a boolean mask becomes the integer arrays of its True positions, one per dim it covers (numpy's
  rule: x[mask] is x[mask.nonzero()])."""
  indices = _index_items(indices)
  if sum(1 for i in indices if i is Ellipsis) > 1: raise IndexError("an index can only have one ellipsis (...)")
  masks = [_bool_mask(i) for i in indices]
  adds_a_dim = [i is None or isinstance(i, (bool, np.bool_)) for i in indices]   # None, and numpy's x[True] and x[False]
  consumed = sum(1 if m is None else m.ndim for i, m, new in zip(indices, masks, adds_a_dim) if not new and i is not Ellipsis)
  if consumed > len(shape): raise IndexError(f"too many indices: {consumed} for a tensor with {len(shape)} dims")
  out, dim = [], 0
  for i, mask, new in zip(indices, masks, adds_a_dim):
    if i is Ellipsis:
      out.extend([slice(None)] * (len(shape) - consumed))
      dim += len(shape) - consumed
    elif mask is not None:
      if mask.shape != shape[dim:dim + mask.ndim]:
        raise IndexError(f"boolean index of shape {mask.shape} does not match the indexed dims {shape[dim:dim + mask.ndim]} "
                         f"of the tensor of shape {shape} (from dim {dim})")
      out.extend(mask.nonzero())
      dim += mask.ndim
    else:
      out.append(i)
      if not new: dim += 1
  if not any(i is Ellipsis for i in indices): out.extend([slice(None)] * (len(shape) - consumed))
  return out


def _plain_items(indices, ndim: int) -> Optional[list]:
  """The index items, one per dim (None adds one), when indices are only ints, slices, None and at most one Ellipsis
  (x[3], x[:, 1:5], x[..., 0], x[None]: the common cases, which need none of _normalize's rules), else None."""
  items = indices if type(indices) is tuple else (indices,)
  ellipsis, given = None, 0
  for position, i in enumerate(items):
    if i is Ellipsis:
      if ellipsis is not None: return None   # two: _normalize says so
      ellipsis = position
    elif i is not None:
      if type(i) is not slice and type(i) is not int and not isinstance(i, np.integer): return None   # not bool: numpy's x[True]
      given += 1
  if given > ndim: return None   # too many: _normalize says so
  if ellipsis is None: return list(items) + [slice(None)] * (ndim - given)
  return list(items[:ellipsis]) + [slice(None)] * (ndim - given) + list(items[ellipsis + 1:])


def basic_index(tensor, indices):
  if _is_int_tensor(indices) and indices.ndim and tensor.ndim: return _read_rows(tensor, indices, 0)   # x[idx], the common case
  if isinstance(indices, (type(tensor), np.ndarray)) and (mask := _bool_mask(indices)) is not None and mask.ndim > 1 and \
     mask.shape == tensor.shape[:mask.ndim]:
    # x[mask] over its leading dims: those dims as one, read at the flat mask's positions (one index array, not one
    # per dim: 8x faster for a 1000x1000 mask)
    return basic_index(tensor.reshape((-1,) + tensor.shape[mask.ndim:]), mask.reshape(-1))
  items = _plain_items(indices, tensor.ndim)
  if items is None:
    items = _normalize(indices, tensor.shape)
    if any(isinstance(i, (bool, np.bool_)) for i in items): return _scalar_bool_index(tensor, items)
    for i in items:
      if _is_array_index(i): return advanced_index(tensor, items)
      if not (i is None or isinstance(i, (slice, int, np.integer))) or isinstance(i, bool):
        raise IndexError(f"unsupported index {i!r}: use ints, slices, None, ... or integer tensors")
  starts, steps, counts, final_shape, dim = [], [], [], [], 0
  for i in items:
    if i is None:
      final_shape.append(1)
      continue
    size = tensor.shape[dim]
    if type(i) is slice:
      start, stop, step = i.indices(size)   # raises ValueError for step 0
      count = len(range(start, stop, step))
      starts.append(start if count else 0); steps.append(step); counts.append(count); final_shape.append(count)  # noqa: E702
    else:
      if not -size <= i < size: raise IndexError(f"index {i} is out of range for dim {dim} with size {size}")
      starts.append(int(i) % size); steps.append(1); counts.append(1)  # noqa: E702
    dim += 1
  final_shape = tuple(final_shape)
  if final_shape == tensor.shape and tuple(counts) == tensor.shape and not any(starts) and all(s == 1 or n <= 1 for s, n in zip(steps, counts)):
    return tensor
  return Slice.apply(tensor, starts=tuple(starts), steps=tuple(steps), counts=tuple(counts), shape=final_shape)


def _scalar_bool_index(tensor, items):
  """numpy's x[True] and x[False]: each a 0-d mask, a new dim of 1 read at [0] or at no position. One alone among
  basic indices is a view, a dim of 1 or 0 where it stands; several, or one beside index arrays, are index arrays that
  broadcast with the others (x[True, True] has one new dim, x[True, [0, 1]] reads two rows)."""
  def is_bool(i): return isinstance(i, (bool, np.bool_))
  if sum(map(is_bool, items)) > 1 or any(_is_array_index(i) for i in items):
    widened = basic_index(tensor, tuple(None if i is None or is_bool(i) else slice(None) for i in items))
    return basic_index(widened, tuple(np.arange(int(i)) if is_bool(i) else slice(None) if i is None else i for i in items))
  out = basic_index(tensor, tuple(None if is_bool(i) else i for i in items))
  dims, dim = [], 0
  for i in items:
    if is_bool(i) and not i: dims.append(dim)
    if not isinstance(i, (int, np.integer)) or is_bool(i): dim += 1
  return out.shrink(tuple((0, 0) if d in dims else None for d in range(out.ndim))) if dims else out


def index_tensor(index, device: str):
  """An integer index (tensor, list or array) as an integer tensor; IndexError for any other kind."""
  from nbgrad.tensor import Tensor
  if not isinstance(index, Tensor):
    array = np.asarray(index)
    if array.dtype.kind not in "iu" and array.size: raise IndexError(f"index {index!r} must hold integers, not {array.dtype}")
    index = Tensor(array.astype(np.int64), device=device)
  if not dtypes.is_int(index.dtype): raise IndexError(f"index tensors must be integer (or boolean masks), got {index.dtype}")
  return index


def check_known_index(index, size: int, negative_from_end=True):
  """IndexError, as numpy's and torch's, for a list or array index with a value out of range for a dim of size (its
  values are known when the op is built; a tensor's out of range read 0, as tinygrad's)."""
  from nbgrad.tensor import Tensor
  if isinstance(index, Tensor) or not (values := np.asarray(index)).size or values.dtype.kind not in "iu": return
  low = -size if negative_from_end else 0
  if values.min() < low or values.max() >= size:
    raise IndexError(f"index {values[(values < low) | (values >= size)].flat[0]} is out of range for a dim of size {size}")


def index_positions(index, size: int, device: str, negative_from_end=True):
  """An integer index (tensor, list or array) into a dim of size as int64, negative values counted from the end
  (or out of range), and whether each one is in range."""
  check_known_index(index, size, negative_from_end)
  index = _as_int64(index_tensor(index, device), size)
  if not negative_from_end: return index, (index >= 0) & (index < size)
  return (index < 0).where(index + size, index), (index >= -size) & (index < size)


def along_axis(size: int, stride: int, axis: int, ndim: int, device: str):
  """arange(size) * stride (int64) laid along axis of an ndim-dim shape, size 1 elsewhere: a dim's flat offsets."""
  from nbgrad.tensor import Tensor
  place = [1] * ndim
  place[axis] = size
  return (Tensor.arange(size, dtype=dtypes.int64, device=device) * stride).reshape(place)


def read_positions(x, flat, inside, row_dims=0):
  """Reads the rows of x's last row_dims dims at flat positions (into x seen as contiguous), 0 where inside is
  False."""
  positions = inside.where(flat, -1).cast(index_dtype(x.numel()))
  return Take.apply(x, positions, row_dims=row_dims)


def advanced_index(tensor, items: list):
  """Integer tensor / list indices mixed with basic ones. The broadcast index dims replace the indexed dims
  where those are adjacent, else they come first (numpy's rule; ints count as basic here, as in torch). An out-of-
  range index reads 0. The dims after the last indexed one are read as whole rows."""
  from nbgrad.tensor import broadcast_shape
  basic, positions, index_items, dim = [], [], [], 0
  for i in items:
    is_array = _is_array_index(i)
    basic.append(slice(None) if is_array else i)
    if is_array:
      positions.append(dim)
      index_items.append(i)
    if is_array or i is None or isinstance(i, slice): dim += 1   # the dims basic indexing keeps
  x = tensor if all(b == slice(None) for b in basic) else basic_index(tensor, tuple(basic))
  for d, i in zip(positions, index_items): check_known_index(i, x.shape[d])
  if len(positions) == 1: return _read_rows(x, index_tensor(index_items[0], x.device), positions[0])
  known = _known_index_values(index_items, x.device)
  wrapped = None if known is not None else [index_positions(i, x.shape[d], x.device) for d, i in zip(positions, index_items)]
  shapes = [v.shape for v in known] if known is not None else [index.shape for index, _ in wrapped]
  try: batch = broadcast_shape(*shapes)
  except ValueError: raise IndexError(f"index arrays of shapes {shapes} cannot be broadcast together") from None
  row_dims = x.ndim - 1 - positions[-1]
  rest = [d for d in range(x.ndim - row_dims) if d not in positions]
  adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
  front = sum(1 for d in rest if d < positions[0]) if adjacent else 0
  out_shape = tuple(x.shape[d] for d in rest[:front]) + batch + tuple(x.shape[d] for d in rest[front:])
  strides = contiguous_strides(x.shape)

  def flat_positions(wrapped, along):
    """The flat position in x that each output element reads, and whether its indices are in range (both
    broadcastable to out_shape); along(size, stride, axis) lays a kept dim's offsets along an output axis."""
    flat, inside = None, None
    for (index, in_range), d in zip(wrapped, positions):
      place = (1,) * front + (1,) * (len(batch) - index.ndim) + tuple(index.shape) + (1,) * (len(rest) - front)
      flat = (index * strides[d]).reshape(place) if flat is None else flat + (index * strides[d]).reshape(place)
      inside = in_range.reshape(place) if inside is None else inside & in_range.reshape(place)
    for k, d in enumerate(rest):   # each kept dim walks its own output axis
      flat = flat + along(x.shape[d], strides[d], k if k < front else k + len(batch))
    return flat, inside

  out_ndim = len(rest) + len(batch)
  if known is not None and math.prod(out_shape) <= KNOWN_INDEX_ELEMENTS:
    from nbgrad.tensor import Tensor
    flat, inside = flat_positions([_known_positions(v, x.shape[d]) for v, d in zip(known, positions)],
                                  lambda size, stride, axis: (np.arange(size) * stride).reshape(_placed(size, axis, out_ndim)))
    flat = np.where(inside, flat, -1)
    if flat.shape != out_shape: flat = np.broadcast_to(flat, out_shape)
    return Take.apply(x, Tensor(flat.astype(index_dtype(x.numel()).np), device=x.device), row_dims=row_dims)
  wrapped = wrapped or [index_positions(i, x.shape[d], x.device) for d, i in zip(positions, index_items)]
  flat, inside = flat_positions(wrapped, lambda size, stride, axis: along_axis(size, stride, axis, out_ndim, x.device))
  return read_positions(x, flat._broadcast_to(out_shape), inside._broadcast_to(out_shape), row_dims)


# An advanced index whose values are known (lists, arrays, realized CPU tensors) and whose result has at most this many
# elements gets its read positions from numpy: m[:, idx] of a 10x10 m otherwise builds ~35 graph nodes and 2 kernels
KNOWN_INDEX_ELEMENTS = 1 << 14


def _known_index_values(index_items, device: str) -> Optional[list]:
  """The index items as int64 arrays (uint64 values past int64's range, out of range anyway, clipped) when each is
  a list, an array or a realized tensor, on the CPU; else None."""
  from nbgrad.tensor import Tensor
  if device != "CPU": return None
  values = []
  for i in index_items:
    if isinstance(i, Tensor) and not i.lazydata.realized: return None
    array = index_tensor(i, device).numpy() if isinstance(i, Tensor) else np.asarray(i)   # IndexError for float tensors
    if array.dtype.kind not in "iu" and array.size: return None   # the lazy path raises its error
    values.append(np.minimum(array, np.iinfo(np.int64).max).astype(np.int64) if array.dtype == np.uint64 else array.astype(np.int64))
  return values


def _known_positions(values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
  """index_positions of known values: negative ones counted from the end, and which are in range."""
  return np.where(values < 0, values + size, values), (values >= -size) & (values < size)


def _placed(size: int, axis: int, ndim: int) -> tuple[int, ...]: return tuple(size if a == axis else 1 for a in range(ndim))


def _read_rows(x, index, dim: int):
  """x[..., index, ...] for one index tensor on x's dim: the take kernel counts negative indices from the end and
  reads 0 out of range itself. On the first dim, a plain take, which also reads a first dim that steps through its
  buffer in place; on a later one, the same rows of each group of the dims before it."""
  index = kernel_index(index, x.shape[dim])
  if dim == 0: return Take.apply(x, index, row_dims=x.ndim - 1, dim_size=x.shape[0])
  return TakeAlong.apply(x, index, axis=dim, shared=True, wrap=True)


def kernel_index(index, size: int):
  """An integer index tensor into a dim of size as a take reads it: int32 as it is, else int64."""
  return index if index.dtype == dtypes.int32 else _as_int64(index, size)


def _as_int64(index, size: int):
  """An integer index tensor as int64. uint64 indices past int64's range would turn negative: like every index from
  size on they are out of range, so they become size first."""
  if index.dtype == dtypes.uint64: index = index.minimum(size)
  return index.cast(dtypes.int64)


def _strided_window(lazy, repeats: bool = False):
  """(shape, strides, offset) of the elements lazy reads in its realized base buffer, when it reads them through one
  strided window (x, x[1:], x.T), each at most once unless repeats (expanded); None otherwise (padded, lazy)."""
  if lazy.base.buffer is None or (window := lazy.view.strided()) is None: return None
  strides, offset = window
  if not repeats and _repeats(strides, lazy.shape): return None
  return lazy.shape, strides, offset


def _repeats(strides, shape) -> bool: return any(s == 0 and n > 1 for s, n in zip(strides, shape))


def writable_window(tensor):
  """The window of a realized buffer that a write into tensor goes to, its pending readers computed first and the
  other views of that buffer copied out. A view of another tensor (x[0], x.T, x[0][1], x.expand(2, 3)[1]) writes
  into that tensor's buffer, as in numpy and torch, even when the tensor was lazy (Tensor.zeros(2, 2)[0][1] = 9): the
  tensor is computed into a buffer and the view taken again (an expanded view's window repeats places: the caller
  checks them). Any other tensor, a view whose source has been given other values since, or a result that reads
  another tensor's buffer without being a view of it (a flip, a pad: copies in torch), gets a buffer of its own."""
  taken_again = _taken_again(tensor)
  if taken_again is not None and taken_again.view.strided() is not None: tensor.lazydata = taken_again
  if _strided_window(tensor.lazydata, repeats=True) is None: tensor.replace(tensor.contiguous().realize())
  base = tensor.lazydata.base
  if (pending := base.pending_readers()): devices.realize(pending)
  family = _view_family(tensor)
  if len(others := [v for v in base.live_views() if id(v) not in family]) == 1:
    copy = others[0].contiguous()
    devices.realize([copy])
    others[0].copied_out(copy)
  elif others:   # a copy and views of it, say: all go on reading one copy of the buffer, views of the copy still views of it
    whole = base.contiguous()
    devices.realize([whole])
    for view in others: view.reads(whole)
  return _strided_window(tensor.lazydata, repeats=True)


def _overlapping(shape) -> RuntimeError:
  return RuntimeError(f"unsupported operation: elements of the written-to tensor (shape {shape}) refer to a single memory "
                      "location (an expanded view); clone() it first")


def _taken_again(tensor):
  """tensor's view steps taken again from the tensor they start from, which is computed into a buffer first: the
  node that reads that buffer as tensor reads it. None for a tensor that is no view (one that reads a buffer without
  being a view of it is given a buffer of its own), or whose source has been given other values since."""
  if tensor._view_of is None:
    lazy = tensor.lazydata
    if lazy is not lazy.base: tensor.replace(tensor.clone().realize())   # it reads another tensor's buffer (a copy in order, too)
    elif _strided_window(lazy) is None: tensor.replace(tensor.contiguous().realize())
    return tensor.lazydata
  source, view, arguments = tensor._view_of
  if not _same_view(view.apply(source, **arguments), tensor) or _taken_again(source) is None: return None
  return view.apply(source, **arguments).lazydata


def _view_family(tensor) -> set:
  """The ids of the nodes of the tensors that are views of one another with tensor (they share its buffer)."""
  root = tensor
  while root._view_of is not None: root = root._view_of[0]
  family, stack = set(), [root]
  while stack:
    t = stack.pop()
    family.add(id(t.lazydata))
    stack.extend(v for v in (ref() for ref in t._views or ()) if v is not None and v._view_of is not None and v._view_of[0] is t)
  return family


def _same_view(derived, tensor) -> bool:
  return derived.lazydata.base is tensor.lazydata.base and derived.lazydata.view == tensor.lazydata.view


def _assigned_index(item):
  """An index item of an assignment as numpy takes it: an index tensor, list or array as its int or bool values."""
  from nbgrad.tensor import Tensor
  if not _is_array_index(item): return item
  values = item.numpy() if isinstance(item, Tensor) else np.asarray(item)
  if values.size == 0 and values.dtype.kind == "f": values = values.astype(np.int64)   # [] is no position
  if values.dtype.kind not in "iub": raise IndexError(f"setitem index arrays must hold ints or bools, got {values.dtype}")
  return values


_PLAIN_ITEMS = (int, slice, type(None), type(Ellipsis))   # index items numpy takes as they are (not bool: x[True])
_ONE_BYTE = np.zeros(1, np.bool_)   # the storage of a stand-in array whose every element is this one byte


def _wrote_one_element(tensor, indices, value) -> bool:
  """t[i] = number (t[i, j] = ..., one int per dim, in range) into a CPU buffer that the tensor's own node holds, with
  no other tensor viewing it and no node built on it waiting to be computed: written straight into the buffer (the
  general path below finds the same window in about 15 us more). False, nothing done, for any other write."""
  if type(value) not in (float, int, bool): return False
  items, lazy = indices if type(indices) is tuple else (indices,), tensor.lazydata
  if len(items) != len(lazy.shape) or tensor._view_of is not None or lazy._base is not None or lazy.buffer is None \
     or lazy.dtype == dtypes.bfloat16 or not devices.is_cpu(lazy.device) or devices.recording.recorder is not None \
     or lazy.live_views() or lazy.pending_readers():
    return False
  place = 0
  for i, size in zip(items, lazy.shape):
    if type(i) is not int or not -size <= i < size: return False
    place = place * size + (i + size if i < 0 else i)
  check_storable(value, lazy.dtype)
  lazy.buffer[place] = cast_scalar(value, lazy.dtype)
  forget_derived_nodes(lazy)
  lazy.writes += 1
  return True


def set_index(tensor, indices, value, fills: bool = False):
  """t[indices] = value, as numpy assigns: basic indices, and int and bool arrays (of a repeated position the last
  value stays; a position out of range raises IndexError before anything is written). A tensor reading a realized
  buffer through a strided window (x[1:], x.T) writes through to that buffer, as in numpy and torch; any other
  first gets a contiguous buffer of its own."""
  if _wrote_one_element(tensor, indices, value): return
  from nbgrad.tensor import Tensor
  # a value made under no_grad carries no graph, and none is recorded under it (torch's w[1:] *= 2 in torch.no_grad())
  if isinstance(value, Tensor) and value.requires_grad and value._ctx is not NO_GRAPH and not Tensor.no_grad:
    raise NotImplementedError("writing a value that requires grad into a tensor's elements (setitem, assign into a view) is not supported (its gradient would be lost); detach() it")
  items = indices if type(indices) is tuple else (indices,)
  indices = items if all(type(i) in _PLAIN_ITEMS for i in items) else tuple(_assigned_index(i) for i in _index_items(indices))
  # the shape the indices pick, found by numpy on a stand-in whose elements all lie in one byte, which raises IndexError
  # for a position out of range before anything changes (reading tensor[indices] computed the elements: a mask's took
  # 8 ms of 1M)
  target_shape = np.ndarray(tensor.shape, np.bool_, _ONE_BYTE, 0, (0,) * tensor.ndim)[indices].shape
  value = foreign_array(value)
  if isinstance(value, (bool, int, float)):   # a Python number (np.float64 is one): its value in the dtype, no kernel run
    check_storable(value, tensor.dtype)
    values = np.array(cast_scalar(value, tensor.dtype), np.float32 if tensor.dtype == dtypes.bfloat16 else tensor.dtype.np)
  else:
    if not isinstance(value, (Tensor, list, tuple, np.ndarray, np.generic)):
      raise TypeError(f"cannot assign a {type(value).__name__} to tensor elements; give a number, a sequence, an array or a Tensor")
    if not isinstance(value, Tensor): value = Tensor(value, dtype=tensor.dtype, device=tensor.device)
    extra = value.ndim - len(target_shape)
    if extra > 0 and all(s == 1 for s in value.shape[:extra]): value = value.reshape(value.shape[extra:])   # as numpy and torch
    if len(value.shape) > len(target_shape) or any(v not in (1, t) for v, t in zip(reversed(value.shape), reversed(target_shape))):
      raise ValueError(f"cannot assign values of shape {value.shape} to the elements of shape {target_shape} the index picks")
    values = None
  if math.prod(target_shape) == 0: return   # no element to write (an empty tensor or slot), as in numpy
  if values is None: values = value.cast(tensor.dtype).numpy()   # numpy's assignment broadcasts them
  window = writable_window(tensor)
  if _repeats(window[1], window[0]) and not fills:   # an expanded view
    # as torch's: elements that share a place are written by a fill (fill_, masked_fill_, index_fill_: the last
    # element's value stays) and by nothing else (e[1] = v writes one row; e += 1, e[:, 1] = 7 and e.copy_(v) raise)
    if any(_is_array_index(i) for i in indices): raise _overlapping(tensor.shape)
    written = np.lib.stride_tricks.as_strided(np.empty(1, np.uint8), window[0], window[1])[indices]   # reads no element
    if _repeats(written.strides, written.shape): raise _overlapping(tensor.shape)
  if (recorder := devices.recording.recorder) is not None: recorder.refuse("it writes into a buffer from Python (setitem or assign into a view)")
  base, device = tensor.lazydata.base, devices.backend(tensor.device)
  flat = device.to_host(base.buffer, tensor.dtype)   # the buffer itself on the CPU; a host copy on other devices
  strided_view(flat, *window, writeable=True)[indices] = float32_to_bfloat16_bits(values) if tensor.dtype == dtypes.bfloat16 else values
  forget_derived_nodes(base)   # nodes computed from the old values must not be shared
  base.writes += 1
  if flat is not base.buffer: base.buffer = device.from_host(flat, tensor.dtype)
