"""LazyBuffer: a node of the lazy graph. A base node holds an op (and, once realized, a buffer); a view
node is a base seen through a View. Building nodes never computes anything."""
from __future__ import annotations
import functools
import math
from typing import Optional
from nbgrad.dtype import DType, dtypes, cast_scalar
from nbgrad.graph.ops import UnaryOps, TernaryOps, ReduceOps, LoadOps, CMP_OPS, CAST_OPS
from nbgrad.graph.view import View
from nbgrad.helpers import add_weak_reference


def _folded(op: ReduceOps, value, count: int):
  """The reduce of count copies of value, in Python numbers (cast_scalar then takes ints into the dtype's range)."""
  if op is ReduceOps.SUM: return value * count
  if op is not ReduceOps.PROD: return value
  if not isinstance(value, float): return pow(value, count, 1 << 64)
  try: return value ** count
  except OverflowError: return -math.inf if value < 0 and count % 2 else math.inf


@functools.lru_cache(maxsize=4096)
def _scalar_broadcast(shape: tuple[int, ...]) -> View:
  """The view of a 0-d node broadcast to shape (what reshape to all ones and expand make, in one step)."""
  return View.contiguous(()).reshape((1,) * len(shape)).expand(shape)


class LazyBuffer:
  def __init__(self, device: str, shape: tuple[int, ...], dtype: DType, op=None, srcs: tuple = (), arg=None,
               base: Optional[LazyBuffer] = None, view: Optional[View] = None, buffer=None):
    self.device, self.shape, self.dtype = device, tuple(shape), dtype
    if base is None:   # a base node
      self._base, self.op, self.srcs, self.arg = None, op, tuple(srcs), arg
      self.view = View.contiguous(self.shape)
      self.buffer = buffer     # the device buffer, once realized
      self.readers: Optional[list] = None   # weak references to base nodes built on this one (see pending_readers)
      self.depth = 0   # the longest chain of ops down to buffers that were computed when this node was built
      self.writes = 0  # in-place writes into the buffer so far (setitem): a gradient must not read values written later
      self.replaced_by = None   # a weak reference to the tensor that held this buffer and was then assigned other values
      self.assigned = False   # a tensor's assigned value: any realize that reads it stores it (see create_schedule)
      self.assigned_over = None   # (a weak reference to that tensor, the node it held before) until computed
      self.view_nodes: Optional[list] = None   # weak references to the view nodes of this one (see copied_out)
      for s in self.srcs:
        src = s.base
        if src.readers is None: src.readers = []
        add_weak_reference(src.readers, self)
        if src.buffer is None: self.depth = max(self.depth, src.depth + 1)
    else:
      assert base.base is base
      self._base, self.view = base, view

  @property
  def base(self) -> LazyBuffer: return self if self._base is None else self._base

  def __getstate__(self) -> dict:
    """Pickled (within a TinyJit's recording) without its weak references to other nodes and tensors."""
    weak = ("readers", "view_nodes", "replaced_by", "assigned_over", "derived_nodes")
    return {key: None if key in weak[:4] else value for key, value in vars(self).items() if key not in weak[4:]}

  def pending_readers(self) -> list[LazyBuffer]:
    """The nodes built on this one that are not computed yet: an in-place write into this buffer computes them
    first, so that they see the values they were built from (as in eager mode)."""
    return [r for r in (ref() for ref in self.readers or ()) if r is not None and r.buffer is None]

  @property
  def realized(self) -> bool: return self.base.buffer is not None
  def stored_anyway(self) -> bool:
    """Whether this base node's values are in a buffer (computed, or made by a node of its own: no producer to fuse with)."""
    return self.buffer is not None or self.op in (LoadOps.CUSTOM, LoadOps.CONTIGUOUS, LoadOps.COPY)
  @property
  def size(self) -> int: return math.prod(self.shape)

  def __repr__(self):
    if self._base is not None: return f"<LB view of {self.base!r} as {self.shape}>"
    return f"<LB {self.device} {self.shape} {self.dtype} {'realized' if self.buffer is not None else self.op}>"

  # ---- constructors
  @staticmethod
  def from_buffer(buffer, shape, dtype, device) -> LazyBuffer:
    return LazyBuffer(device, shape, dtype, LoadOps.BUFFER, buffer=buffer)

  @staticmethod
  def load(op: LoadOps, shape, dtype, device, arg=None, srcs=()) -> LazyBuffer:
    return LazyBuffer(device, shape, dtype, op, srcs, arg)

  @staticmethod
  def full(value, shape, dtype: DType, device: str) -> LazyBuffer:
    """A constant: one scalar node broadcast to shape (no memory)."""
    scalar = LazyBuffer(device, (), dtype, LoadOps.CONST, arg=cast_scalar(value, dtype))
    shape = tuple(shape)
    return LazyBuffer(device, shape, dtype, base=scalar, view=_scalar_broadcast(shape)) if shape else scalar

  def const(self, value, shape=None) -> LazyBuffer:
    return LazyBuffer.full(value, self.shape if shape is None else shape, self.dtype, self.device)

  def const_value(self):
    """The scalar if this node is a broadcast constant (and every element is valid), else None."""
    base = self.base
    if base.op is LoadOps.CONST and base.buffer is None and not self.view.has_conditions(): return base.arg
    return None

  def contiguous(self) -> LazyBuffer:
    """These values in a buffer of their own, laid out in order (a copy node)."""
    return LazyBuffer.load(LoadOps.CONTIGUOUS, self.shape, self.dtype, self.device, srcs=(self,))

  def unshared(self) -> LazyBuffer:
    """These values as a node no tensor holds yet (what assign binds its target to, so that a later write into
    either tensor leaves the other): a twin of an op not computed yet, which computes the same values (only the
    twin runs unless the original is computed too), else a copy of the buffer or view."""
    if self._base is None and self.buffer is None: return LazyBuffer(self.device, self.shape, self.dtype, self.op, self.srcs, self.arg)
    return self.contiguous()

  def in_flat_order(self) -> LazyBuffer:
    """These values as a node whose base buffer holds them in order, as custom kernels read their sources: itself
    when its view reads the base in order (a reshape at most), else a contiguous copy."""
    return self if self.base.op is not LoadOps.CONST and self.view.is_flat_order() else self.contiguous()

  def copy_to(self, device: str) -> LazyBuffer:
    """These values on another device (a copy node; contiguous first where the view needs it)."""
    src = self if self is self.base or self.view.is_flat_order() else self.contiguous()
    return LazyBuffer.load(LoadOps.COPY, self.shape, self.dtype, device, srcs=(src,))

  # ---- compute
  def alu(self, op, *others: LazyBuffer, arg=None) -> LazyBuffer:
    srcs = (self,) + others
    for s in others:
      assert s.shape == self.shape, f"alu shapes {self.shape} {s.shape}"
    # tuples and types made once: an Enum member read from its class (TernaryOps.WHERE) costs a Python call in 3.11
    if op in CMP_OPS: out_dtype = dtypes.bool
    elif op in CAST_OPS: out_dtype = arg
    elif type(op) is TernaryOps: out_dtype = others[0].dtype   # WHERE
    else: out_dtype = self.dtype
    return LazyBuffer(self.device, self.shape, out_dtype, op, srcs, arg)

  def cast(self, dtype: DType, bitcast=False) -> LazyBuffer:
    if dtype == self.dtype: return self
    if not bitcast and (value := self.const_value()) is not None: return LazyBuffer.full(value, self.shape, dtype, self.device)
    return self.alu(UnaryOps.BITCAST if bitcast else UnaryOps.CAST, arg=dtype)

  def reduce(self, op: ReduceOps, axes: tuple[int, ...]) -> LazyBuffer:
    """Reduce over axes, keeping them as size 1. Over size-1 axes only, the result is a node of its own still
    (an elementwise copy, fused into its readers): as a view of its input, it would see a later in-place write into
    the input, and a write into it would change the input."""
    axes = tuple(sorted(a for a in axes if self.shape[a] != 1))
    if not axes: return self.alu(UnaryOps.CAST, arg=self.dtype)
    new_shape = tuple(1 if i in axes else s for i, s in enumerate(self.shape))
    if (value := self.const_value()) is not None and all(self.shape[a] for a in axes):   # a broadcast constant: no loop
      count = math.prod(self.shape[a] for a in axes)   # (zeros(2**31, 2**31).sum() looped 4.6e18 times)
      return LazyBuffer.full(_folded(op, value, count), new_shape, self.dtype, self.device)
    return LazyBuffer(self.device, new_shape, self.dtype, op, (self,), axes)

  # ---- movement: only the view changes
  def _moved(self, view: View) -> LazyBuffer:
    base = self.base
    if view.is_identity() and view.shape == base.shape: return base
    return base._view_node(view)

  def _view_node(self, view: View) -> LazyBuffer:
    """A node reading this base node through view, known to it (live_views)."""
    moved = LazyBuffer(self.device, view.shape, self.dtype, base=self, view=view)
    if self.view_nodes is None: self.view_nodes = []
    add_weak_reference(self.view_nodes, moved)
    return moved

  def own_node(self) -> LazyBuffer:
    """These elements read through a view node of their own: a copy op that moved nothing, or view steps that came
    back to a base node, give a tensor a node no other tensor holds, so a write into the other tensor copies it out
    (live_views) instead of showing through it."""
    return self.base._view_node(self.view)

  def live_views(self) -> list[LazyBuffer]:
    return [v for v in (ref() for ref in self.view_nodes or ()) if v is not None and v._base is self]

  def copied_out(self, copy: LazyBuffer):
    """This view node reads copy (its values, computed) from now on, not its base: an in-place write into the base
    leaves it as it was, as the copy torch's flip, pad or repeat made would be."""
    self._base, self.view = copy.base, copy.view

  def reads(self, copy: LazyBuffer):
    """This view node reads the same places of copy, a copy of its base (computed), from now on: see copied_out."""
    self._base = copy

  def reshape(self, shape) -> LazyBuffer:
    shape = tuple(shape)
    return self if shape == self.shape else self._moved(self.view.reshape(shape))

  def permute(self, order) -> LazyBuffer:
    order = tuple(order)
    return self if order == tuple(range(len(order))) else self._moved(self.view.permute(order))

  def expand(self, shape) -> LazyBuffer:
    shape = tuple(shape)
    return self if shape == self.shape else self._moved(self.view.expand(shape))

  def broadcast(self, shape) -> LazyBuffer:
    """Ones put before the shape and expanded to shape, as one view node."""
    shape = tuple(shape)
    if shape == self.shape: return self
    ones = (1,) * (len(shape) - len(self.shape)) + self.shape
    return self._moved(self.view.reshape(ones).expand(shape))

  def shrink(self, arg) -> LazyBuffer:
    if all(a == 0 and b == s for (a, b), s in zip(arg, self.shape)): return self
    return self._moved(self.view.shrink(tuple(arg)))

  def sliced(self, starts, steps, counts, shape) -> LazyBuffer:
    """counts[d] elements of each dim d from starts[d], steps[d] apart (negative: backwards), reshaped to shape
    (dims of 1 dropped or added): a basic index, as one view node."""
    return self._moved(self.view.sliced(starts, steps, counts).reshape(shape))

  def pad(self, arg) -> LazyBuffer:
    if all(a == 0 and b == 0 for a, b in arg): return self
    return self._moved(self.view.pad(tuple(arg)))

  def windows(self, kernel, stride, dilation) -> LazyBuffer:
    """(..., *spatial) -> (..., *out, *kernel): every sliding window, as one strided view."""
    return self._moved(self.view.windows(tuple(kernel), tuple(stride), tuple(dilation)))

  def mapped(self, top) -> LazyBuffer:
    """These elements read through the affine map top (a diagonal, a strided window of the flat elements)."""
    return self._moved(self.view.mapped(top))

  def flip(self, axes) -> LazyBuffer:
    axes = tuple(a for a in axes if self.shape[a] > 1)
    return self._moved(self.view.flip(axes)) if axes else self
