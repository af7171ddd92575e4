"""Linear-algebra kernel kinds: the matrix product, and a small constant matrix applied along some axes
(Winograd's tile transforms). Each is a custom graph node whose descriptor says how each operand is read
from its flat buffer (shape, strides, offset), so each device can hand it to an optimized routine.
The scheduler realizes the operands' base nodes first; these never go through the code generator."""
from __future__ import annotations
import functools
import itertools
import math
import weakref
from dataclasses import dataclass
import numpy as np
from nbgrad.dtype import DType, dtypes
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps
from nbgrad.graph.view import contiguous_strides
from nbgrad.jit import blas

BLAS_DTYPES = (dtypes.float32, dtypes.float64)
# the dtypes the CPU's direct convolution takes: those with a gemm reachable through numpy's OpenBLAS
DIRECT_CONV_DTYPES = tuple(dt for dt in BLAS_DTYPES if np.dtype(dt.np) in blas.OPENBLAS_GEMMS)


@dataclass(frozen=True)
class StridedOperand:
  """An operand of shape (*batch, rows, cols): element i sits at offset + sum(i * strides) of the buffer."""
  shape: tuple[int, ...]
  strides: tuple[int, ...]
  offset: int

  @functools.cached_property
  def in_order(self) -> bool:
    """Whether the operand is the first elements of its buffer, in order."""
    return self.offset == 0 and self.strides == contiguous_strides(self.shape)

  def of(self, buffer: np.ndarray) -> np.ndarray:
    """The operand's elements in buffer, read in place; one in order by a reshape (a product of small matrices
    spent 4 of its 11 us making the two views the general way)."""
    if self.in_order: return buffer[:math.prod(self.shape)].reshape(self.shape)
    return blas.strided_view(buffer, self.shape, self.strides, self.offset)


@dataclass(frozen=True)
class Matmul:
  """out (*batch, M, N), contiguous = a (*batch, M, K) @ b (*batch, K, N), all of one float dtype."""
  dtype: DType
  a: StridedOperand
  b: StridedOperand

  @property
  def out_shape(self) -> tuple[int, ...]: return self.a.shape[:-1] + self.b.shape[-1:]
  @property
  def name(self) -> str: return "matmul_" + "_".join(str(d) for d in self.a.shape + self.b.shape[-1:])

  def run(self, out: np.ndarray, a: np.ndarray, b: np.ndarray):
    """The CPU routine; out, a and b are the flat buffers."""
    blas.matmul(out.reshape(self.out_shape), self.a.of(a), self.b.of(b))

  def run_cuda(self, backend, out, a, b) -> bool:
    """The GPU routine: the tiled kernel of nbgrad/cuda/matmul.py, one launch per index of the batch dims
    before the last one (the last batch dim is the kernel's own)."""
    from nbgrad.cuda.matmul import matmul as cuda_matmul
    *batch, m, k = self.a.shape
    n = self.b.shape[-1]
    if m * n == 0: return True
    batch = batch or [1]
    a_strides, b_strides = (list(self.a.strides[:-2]) or [0]), (list(self.b.strides[:-2]) or [0])
    per_launch = batch[-1] * m * n
    for number, lead in enumerate(itertools.product(*[range(size) for size in batch[:-1]])):
      a_offset = self.a.offset + sum(i * st for i, st in zip(lead, a_strides))
      b_offset = self.b.offset + sum(i * st for i, st in zip(lead, b_strides))
      cuda_matmul(backend, out[number * per_launch:], a, b, self.dtype, batch[-1], m, n, k,
                  (a_offset, a_strides[-1], *self.a.strides[-2:]), (b_offset, b_strides[-1], *self.b.strides[-2:]))
    return True


def matmul(a: LazyBuffer, b: LazyBuffer) -> LazyBuffer:
  """The node of a (*batch, M, K) @ b (*batch, K, N) with equal batch dims and an equal float dtype."""
  assert a.dtype == b.dtype and a.dtype in BLAS_DTYPES and a.shape[:-2] == b.shape[:-2] and a.shape[-1] == b.shape[-2]
  (a, a_read), (b, b_read) = _in_one_buffer(a), _in_one_buffer(b)
  arg = Matmul(a.dtype, a_read, b_read)
  return LazyBuffer.load(LoadOps.CUSTOM, arg.out_shape, a.dtype, a.device, arg=arg, srcs=(a, b))


@dataclass(frozen=True)
class AxisTransform:
  """y = x with matrix (rows, cols) applied along each of axes: y[..., a1, .., ak, ...] = sum over c1..ck of
  matrix[a1][c1] * ... * matrix[ak][ck] * x[..., c1, .., ck, ...]. The buffer holds y contiguous with its
  axes in the order `layout` (buffer dim i is y's axis layout[i]), so a consumer can read it in order."""
  dtype: DType
  matrix: tuple[tuple[float, ...], ...]
  axes: tuple[int, ...]
  layout: tuple[int, ...]
  x: StridedOperand

  @property
  def y_shape(self) -> tuple[int, ...]:
    return tuple(len(self.matrix) if i in self.axes else s for i, s in enumerate(self.x.shape))
  @property
  def out_shape(self) -> tuple[int, ...]: return tuple(self.y_shape[i] for i in self.layout)
  @property
  def name(self) -> str: return f"axis_transform_{len(self.matrix)}x{len(self.matrix[0])}_" + "_".join(map(str, self.x.shape))

  def run(self, out: np.ndarray, x: np.ndarray):
    from nbgrad.jit.transform import axis_transform   # the CPU routine
    y_strides = [0] * len(self.layout)
    for stride, axis in zip(contiguous_strides(self.out_shape), self.layout): y_strides[axis] = stride
    # the batch dims are walked in the buffer's order, so the writes stream through it
    batch = sorted((i for i in range(len(self.x.shape)) if i not in self.axes), key=lambda i: -y_strides[i])
    axis_transform(out, x, self.matrix, [self.x.shape[i] for i in batch], [self.x.strides[i] for i in batch],
                   [y_strides[i] for i in batch], [self.x.strides[i] for i in self.axes],
                   [y_strides[i] for i in self.axes], self.x.offset)


def axis_transform(x: LazyBuffer, matrix: tuple, axes: tuple[int, ...], layout=None) -> LazyBuffer:
  """The node of AxisTransform, seen in x's axis order whatever its buffer's layout (default: that order).
  A node made from the same view of the same realized or lazy base is made once and shared (Winograd's
  transformed weights are then computed once per weight, not once per use)."""
  assert x.dtype in BLAS_DTYPES and all(x.shape[a] == len(matrix[0]) for a in axes)
  layout = tuple(range(len(x.shape))) if layout is None else tuple(layout)
  shared = x.base.__dict__.setdefault("derived_nodes", weakref.WeakValueDictionary())
  key = (x.view, matrix, axes, layout)
  if (node := shared.get(key)) is None:
    source, read = _in_one_buffer(x)
    arg = AxisTransform(x.dtype, matrix, axes, layout, read)
    node = shared[key] = LazyBuffer.load(LoadOps.CUSTOM, arg.out_shape, x.dtype, x.device, arg=arg, srcs=(source,))
  return node.permute(tuple(layout.index(axis) for axis in range(len(layout))))


@dataclass(frozen=True)
class OverlapAdd:
  """The gradient of overlapping tiles: out (N, *S, C), contiguous channels last, is zero plus, for every tile
  index t and tile element e of x (N, C, *tiles, *tile), x[n, c, *t, *e] added at out[n, *(step * t + e), c]."""
  dtype: DType
  out_shape: tuple[int, ...]
  step: int
  x: StridedOperand

  @property
  def name(self) -> str: return "overlap_add_" + "_".join(map(str, self.x.shape))

  def run(self, out: np.ndarray, x: np.ndarray):
    from nbgrad.jit.transform import overlap_add   # the CPU routine
    dims = len(self.out_shape) - 2
    out_strides = contiguous_strides(self.out_shape)
    tiles, tile = self.x.shape[2:2 + dims], self.x.shape[2 + dims:]
    overlap_add(out, x, self.out_shape[0], self.out_shape[-1], tiles, tile, self.step, self.x.strides, self.x.offset,
                out_strides[1:1 + dims], out_strides[0])


def overlap_add(x: LazyBuffer, spatial: tuple[int, ...], step: int) -> LazyBuffer:
  """The node of OverlapAdd: x (N, C, *tiles, *tile) summed into (N, *spatial, C)."""
  assert x.dtype in BLAS_DTYPES
  source, read = _in_one_buffer(x)
  arg = OverlapAdd(x.dtype, (x.shape[0], *spatial, x.shape[1]), step, read)
  return LazyBuffer.load(LoadOps.CUSTOM, arg.out_shape, x.dtype, x.device, arg=arg, srcs=(source,))


@dataclass(frozen=True)
class DirectConv:
  """A 2-D convolution on the CPU, or one of its gradients, an image at a time (nbgrad/jit/conv.py). kind
  "forward": out (N, Cout, OH, OW) from x (N, C, H, W), read through its strides, and w (Cout, C/groups, KH, KW);
  "input_grad": out (N, C, H, W) from the output gradient g and w; "weight_grad": out (Cout, C/groups, KH, KW)
  from x and g. g and w come in flat order. geometry is conv.py's."""
  kind: str
  dtype: DType
  geometry: tuple[int, ...]
  out_shape: tuple[int, ...]
  batch: int
  x: StridedOperand = None

  @property
  def name(self) -> str: return f"conv_{self.kind}_" + "_".join(map(str, self.out_shape))

  def run(self, out: np.ndarray, first: np.ndarray, second: np.ndarray):
    from nbgrad.jit import conv   # the CPU routine
    geometry = np.array(self.geometry, np.int64)
    if self.kind == "input_grad":
      conv.input_grad(out, first, second, geometry, self.batch)
      return
    x_strides = np.array(self.x.strides, np.int64)
    if self.kind == "forward": conv.forward(out, first, x_strides, self.x.offset, second, geometry, self.batch)
    else: conv.weight_grad(out, first, x_strides, self.x.offset, second, geometry, self.batch)


def direct_conv(kind: str, first: LazyBuffer, second: LazyBuffer, geometry: tuple, out_shape: tuple) -> LazyBuffer:
  """The node of DirectConv: first is x (forward, weight_grad) or g (input_grad), second w or g."""
  first, read = (first.in_flat_order(), None) if kind == "input_grad" else _in_one_buffer(first)
  arg = DirectConv(kind, first.dtype, tuple(geometry), tuple(out_shape), first.shape[0], read)
  return LazyBuffer.load(LoadOps.CUSTOM, arg.out_shape, first.dtype, first.device, arg=arg, srcs=(first, second.in_flat_order()))


def forget_derived_nodes(base: LazyBuffer):
  """Called when base's buffer is overwritten in place: the shared nodes computed from it are stale."""
  base.__dict__.pop("derived_nodes", None)


def matrix_transpose(x: LazyBuffer) -> LazyBuffer:
  order = list(range(len(x.shape)))
  order[-2:] = order[-1], order[-2]
  return x.permute(order)


def column_major(x: LazyBuffer) -> bool:
  """Whether x's matrices are stored transposed: a strided view whose rows are adjacent in memory."""
  window = x.view.strided()
  if window is None or len(x.shape) < 2 or x.shape[-1] == 1: return False
  strides, _ = window
  return strides[-2] == 1 and strides[-1] >= x.shape[-2]


# made once per reading: a frozen dataclass takes about 0.6 us to make, and a product makes two each time it is built
_strided_operand = functools.lru_cache(maxsize=4096)(StridedOperand)


def _in_one_buffer(x: LazyBuffer) -> tuple[LazyBuffer, StridedOperand]:
  """x if it is a strided view of its base (a transpose, a broadcast, a slice), else a contiguous copy of it (a
  view through a reshape of a permute, or one with padding, has no single set of strides); and how it reads its
  base's buffer."""
  window = x.view.strided()
  if window is None: x, window = x.contiguous(), (contiguous_strides(x.shape), 0)
  return x, _strided_operand(x.shape, *window)

