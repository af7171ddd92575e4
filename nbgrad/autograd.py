"""Differentiable primitives. Each Function computes its forward on graph nodes (LazyBuffers) and its
backward from the same primitives, so backward graphs fuse and cache like forward ones."""
from __future__ import annotations
import itertools
import math
import numpy as np
from dataclasses import dataclass
from nbgrad import linalg
from nbgrad.dtype import DType, dtypes, index_dtype
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.view import Affine
from nbgrad.graph.ops import UnaryOps, BinaryOps, TernaryOps, ReduceOps, ALU_OPS
from nbgrad.graph.scan import cumsum, running
from nbgrad.graph.take import scatter_add, scatter_add_rows, take, take_along
from nbgrad.graph.taps import axis_taps
from nbgrad.graph.concat import concatenate, copied_apart, CAT_FUSED_MAX
from nbgrad.graph.window_sums import MAX_DIMS as WINDOW_SUMS_MAX_DIMS, window_sums as window_sums_node


def computed_once(x: LazyBuffer) -> LazyBuffer:
  """x stored in a buffer if it is computed (an elementwise node), so the kernels reading it many times load
  it rather than compute it again each time."""
  return x.contiguous() if isinstance(x.base.op, ALU_OPS) else x


class Function:
  # a view's result reads its input's elements in place (reshape, permute, shrink, expand): it remembers that input,
  # so that a write into it reaches the input as in numpy (indexing.writable_window)
  is_view = False

  def __init__(self, device: str, *tensors):
    self.device = device
    self.needs_input_grad = [t.requires_grad for t in tensors]
    self.requires_grad = True if any(self.needs_input_grad) else (None if None in self.needs_input_grad else False)
    if self.requires_grad: self.parents = tensors

  @staticmethod
  def keeps_elements(source, out: LazyBuffer) -> bool:
    """Whether out (of the source tensor) reads source's elements where they are stored (always, for a view op but
    reshape)."""
    return True

  def forward(self, *args, **kwargs) -> LazyBuffer: raise NotImplementedError(type(self).__name__)
  def backward(self, grad: LazyBuffer): raise RuntimeError(f"{type(self).__name__} has no gradient")

  @classmethod
  def apply(cls, *tensors, **kwargs):
    device = tensors[0].lazydata.device
    for t in tensors:
      if t.lazydata.device != device: tensors[0]._check_same_device(t)   # where(), indexing and gather too, not only arithmetic
    for t in tensors:
      # A parameter made by zeros/ones is stored before its first use: folded in as a constant, it would make the
      # first step's kernels differ from every later step's (which read its updated values), and compile twice.
      if t.requires_grad and t._ctx is None and t.lazydata.const_value() is not None: t.lazydata = t.lazydata.contiguous()
    ctx = cls(device, *tensors)
    lazy = ctx.forward(*[t.lazydata for t in tensors], **kwargs)
    for t in tensors:
      if t.lazydata._base is lazy:   # view steps back to the base node another tensor holds (x.flip(0).flip(0), x.pad(1)[1:-1])
        lazy = lazy.own_node()
        break
    out = type(tensors[0])(lazy, requires_grad=ctx.requires_grad)
    if ctx.requires_grad and not out.no_grad:
      out._ctx = ctx
      ctx.input_writes = [(t.lazydata.base, t.lazydata.base.writes) for t in tensors]
    elif not out.no_grad:
      for t in tensors:
        if t._ctx is CUT:
          out._ctx = CUT
          break
    elif ctx.requires_grad: out._ctx = NO_GRAPH
    if cls.is_view and cls.keeps_elements(tensors[0], out.lazydata): out._record_view(tensors[0], cls, kwargs)
    return out._after_op()

  def check_inputs_unwritten(self):
    """RuntimeError, as torch raises, when an input this function kept for its backward has been written in place
    (setitem) since the forward: the gradient would read the new values."""
    for base, writes in self.input_writes:
      if base.writes != writes and any(isinstance(v, LazyBuffer) and v.base is base for v in vars(self).values()):
        raise RuntimeError(f"backward(): an input of shape {base.shape} that {type(self).__name__} keeps for its gradient was written "
                           "in place (setitem) after the forward used it; compute the forward again after the write, or write into a copy")


class Released:
  """The Function of a node whose graph a backward() has used and freed: nothing to go back through."""
  parents = ()


RELEASED = Released()


class Replayed:
  """The Function of a TinyJit replay's result: the replay ran the recorded kernels and built no graph, so
  backward() from it (or through it) raises rather than follow the recorded call's graph to that call's inputs."""
  parents = ()


REPLAYED = Replayed()


class Cut:
  """The Function of a node computed without a gradient (a comparison, an integer op) from tensors that require one,
  and of every node computed from it alone: backward() from it raises, as in torch, since no gradient can reach them."""
  parents = ()


CUT = Cut()


class NoGraph:
  """The Function of a node computed under Tensor.no_grad (inference_mode) from tensors that require grad: it keeps
  tinygrad's requires_grad, but has no graph, so backward() from it raises, as torch's does."""
  parents = ()


NO_GRAPH = NoGraph()


# ---- unary
class Contiguous(Function):
  def forward(self, x): return x.contiguous()
  def backward(self, grad): return grad


class Assigned(Function):
  """x's values in a node no tensor holds (what assign binds its target to), the gradient passed back to x."""
  def forward(self, x): return x.unshared()
  def backward(self, grad): return grad


class CopyOf(Function):
  """x's values as a copy that moves nothing (torch's flip of size-1 dims, a repeat of ones): it reads x's elements
  through a node of its own until a write into x copies them out, or one into it gives it a buffer of its own."""
  def forward(self, x): return x.own_node()
  def backward(self, grad): return grad


class ContiguousBackward(Function):
  def forward(self, x): return x
  def backward(self, grad): return grad.contiguous()


class ZeroGradient(Function):
  """A result computed apart from its input (sign, rounding) that stays in the graph with a zero gradient."""
  def forward(self, x, result: LazyBuffer):
    self.x = x
    return result
  def backward(self, grad): return self.x.const(0)


class WithDerivatives(Function):
  """A result computed apart from its inputs (selects around special cases) that carries its derivative by each
  input, computed beside it (None for an input without gradient): the gradient is grad times that derivative."""
  def forward(self, *inputs, result: LazyBuffer, derivatives: tuple):
    self.derivatives = derivatives
    return result
  def backward(self, grad): return tuple(None if d is None else grad.alu(BinaryOps.MUL, d) for d in self.derivatives)


class Cast(Function):
  def forward(self, x, dtype: DType, bitcast=False):
    self.input_dtype, self.bitcast = x.dtype, bitcast
    return x.cast(dtype, bitcast)
  def backward(self, grad):
    if self.bitcast: raise RuntimeError("bitcast has no gradient")
    return grad.cast(self.input_dtype)


class Neg(Function):
  def forward(self, x): return x.alu(UnaryOps.NEG)
  def backward(self, grad): return grad.alu(UnaryOps.NEG)


class Reciprocal(Function):
  def forward(self, x):
    self.ret = x.alu(UnaryOps.RECIP)
    return self.ret
  def backward(self, grad): return grad.alu(UnaryOps.NEG).alu(BinaryOps.MUL, self.ret).alu(BinaryOps.MUL, self.ret)


class Sin(Function):
  def forward(self, x):
    self.x = x
    return x.alu(UnaryOps.SIN)
  def backward(self, grad): return self.x.alu(UnaryOps.COS).alu(BinaryOps.MUL, grad)


class Cos(Function):
  def forward(self, x):
    self.x = x
    return x.alu(UnaryOps.COS)
  def backward(self, grad): return self.x.alu(UnaryOps.SIN).alu(UnaryOps.NEG).alu(BinaryOps.MUL, grad)


class Relu(Function):
  def forward(self, x):
    self.ret = x.alu(BinaryOps.MAX, x.const(0))
    return self.ret
  def backward(self, grad):   # ret != 0: where x > 0, and where x is nan (as torch: the gradient passes)
    return self.ret.alu(BinaryOps.CMPNE, self.ret.const(0)).alu(TernaryOps.WHERE, grad, grad.const(0))


class Log(Function):
  def forward(self, x):
    self.x = x
    return x.alu(UnaryOps.LOG)
  def backward(self, grad): return grad.alu(BinaryOps.DIV, self.x)


class Log2(Function):
  def forward(self, x):
    self.x = x
    return x.alu(UnaryOps.LOG2)
  def backward(self, grad): return grad.alu(BinaryOps.DIV, self.x.alu(BinaryOps.MUL, self.x.const(math.log(2))))


class Exp(Function):
  def forward(self, x):
    self.ret = x.alu(UnaryOps.EXP)
    return self.ret
  def backward(self, grad): return self.ret.alu(BinaryOps.MUL, grad)


class Exp2(Function):
  def forward(self, x):
    self.ret = x.alu(UnaryOps.EXP2)
    return self.ret
  def backward(self, grad): return self.ret.alu(BinaryOps.MUL, grad).alu(BinaryOps.MUL, grad.const(math.log(2)))


class Pow(Function):
  """c ** e for a constant base c > 0 (2 ** x): no sign or special case to handle, and no gradient for c."""
  def forward(self, c, e):
    self.c = c
    self.ret = c.alu(BinaryOps.POW, e)
    return self.ret
  def backward(self, grad): return None, grad.alu(BinaryOps.MUL, self.ret).alu(BinaryOps.MUL, self.c.alu(UnaryOps.LOG))


class Sqrt(Function):
  def forward(self, x):
    self.ret = x.alu(UnaryOps.SQRT)
    return self.ret
  def backward(self, grad): return grad.alu(BinaryOps.DIV, self.ret.alu(BinaryOps.MUL, self.ret.const(2)))


class Sigmoid(Function):
  def forward(self, x):
    exp_neg = x.alu(UnaryOps.NEG).alu(UnaryOps.EXP)
    self.ret = x.const(1).alu(BinaryOps.DIV, x.const(1).alu(BinaryOps.ADD, exp_neg))
    return self.ret
  def backward(self, grad):
    return self.ret.alu(BinaryOps.MUL, self.ret.const(1).alu(BinaryOps.SUB, self.ret)).alu(BinaryOps.MUL, grad)


# ---- binary
class Add(Function):
  def forward(self, x, y): return x.alu(BinaryOps.ADD, y)
  def backward(self, grad):
    return (grad if self.needs_input_grad[0] else None), (grad if self.needs_input_grad[1] else None)


class Sub(Function):
  def forward(self, x, y): return x.alu(BinaryOps.SUB, y)
  def backward(self, grad):
    return (grad if self.needs_input_grad[0] else None), (grad.alu(UnaryOps.NEG) if self.needs_input_grad[1] else None)


class Mul(Function):
  def forward(self, x, y):
    self.x, self.y = x, y
    return x.alu(BinaryOps.MUL, y)
  def backward(self, grad):
    return (self.y.alu(BinaryOps.MUL, grad) if self.needs_input_grad[0] else None), \
           (self.x.alu(BinaryOps.MUL, grad) if self.needs_input_grad[1] else None)


class Div(Function):
  def forward(self, x, y):
    self.x, self.y = x, y
    return x.alu(BinaryOps.DIV, y)
  def backward(self, grad):
    dx = grad.alu(BinaryOps.DIV, self.y) if self.needs_input_grad[0] else None
    # -grad * (x / y) / y, as torch: y * y would overflow (half: |y| > 255) or underflow to 0
    dy = grad.alu(UnaryOps.NEG).alu(BinaryOps.MUL, self.x.alu(BinaryOps.DIV, self.y).alu(BinaryOps.DIV, self.y)) \
      if self.needs_input_grad[1] else None
    return dx, dy


class Mod(Function):
  """Float a % b = a - floor(a / b) * b, computed from the exact remainder; floor has no gradient."""
  def forward(self, x, y):
    self.x, self.y = x, y
    return x.alu(BinaryOps.MOD, y)
  def backward(self, grad):
    dx = grad if self.needs_input_grad[0] else None
    dy = grad.alu(BinaryOps.MUL, self.x.alu(BinaryOps.IDIV, self.y)).alu(UnaryOps.NEG) \
      if self.needs_input_grad[1] else None
    return dx, dy


class Maximum(Function):
  """Elementwise max; where both inputs are equal each gets half the gradient, and where one is NaN (no order)
  both get all of it, as in torch. The gradient is selected, not multiplied by 0/1 shares: an infinite gradient
  gives the losing side 0, as in torch (0 * inf is nan)."""
  op = BinaryOps.MAX
  def forward(self, x, y):
    self.x, self.y = x, y
    return x.alu(self.op, y)
  def backward(self, grad):
    tie, half, zero = self.x.alu(BinaryOps.CMPEQ, self.y), grad.alu(BinaryOps.MUL, grad.const(0.5)), grad.const(0)
    def share(loses): return loses.alu(TernaryOps.WHERE, zero, tie.alu(TernaryOps.WHERE, half, grad))
    dx = share(self.beats(self.y, self.x)) if self.needs_input_grad[0] else None
    dy = share(self.beats(self.x, self.y)) if self.needs_input_grad[1] else None
    return dx, dy
  @staticmethod
  def beats(a, b): return b.alu(BinaryOps.CMPLT, a)   # where a wins over b


class Minimum(Maximum):
  """Elementwise min, its gradient shared as Maximum's (what -max(-x, -y) computes, in one op)."""
  op = BinaryOps.MIN
  @staticmethod
  def beats(a, b): return a.alu(BinaryOps.CMPLT, b)


class Where(Function):
  def forward(self, cond, x, y):
    self.cond = cond
    return cond.alu(TernaryOps.WHERE, x, y)
  def backward(self, grad):
    zero = grad.const(0)
    return None, (self.cond.alu(TernaryOps.WHERE, grad, zero) if self.needs_input_grad[1] else None), \
                 (self.cond.alu(TernaryOps.WHERE, zero, grad) if self.needs_input_grad[2] else None)


# ---- reduce
def sum_dtype(dt: DType) -> DType:
  """Half types sum in float32, as sum() does: in float16 a count stops growing at 2048."""
  return dtypes.float32 if dt.kind == "f" and dt.itemsize == 2 else dt


def summed_over(grad: LazyBuffer, axes: tuple[int, ...]) -> LazyBuffer:
  """grad summed over axes (kept as size 1): what an input broadcast along them gets back."""
  return grad.cast(sum_dtype(grad.dtype)).reduce(ReduceOps.SUM, axes).cast(grad.dtype)


# A reduce keeps the reduced axes as size 1, or gives its result the shape without them (shape): one Function for
# both, where a reshape after it made a second one.
class Sum(Function):
  def forward(self, x, axes, shape=None):
    self.input_shape = x.shape
    kept = x.reduce(ReduceOps.SUM, axes)
    self.kept_shape = kept.shape
    return kept if shape is None else kept.reshape(shape)
  def backward(self, grad): return grad.reshape(self.kept_shape).expand(self.input_shape)


class Max(Function):
  """Reduce max; tied maxima share the gradient evenly."""
  def forward(self, x, axes, shape=None):
    self.x, self.axes = x, axes
    self.ret = x.reduce(ReduceOps.MAX, axes)
    return self.ret if shape is None else self.ret.reshape(shape)
  def backward(self, grad):
    grad = grad.reshape(self.ret.shape)
    is_max = self.x.alu(BinaryOps.CMPEQ, self.ret.expand(self.x.shape)).cast(sum_dtype(grad.dtype))
    count = is_max.reduce(ReduceOps.SUM, self.axes).expand(self.x.shape)
    # the gradient is read once per element of the window it is broadcast over (a max-pool after a conv gets the
    # conv's nine-term input gradient: its kernel in the CNN training step 16.4 -> 5.8 + 1.4 ms)
    grad = computed_once(grad)
    return is_max.alu(BinaryOps.DIV, count).cast(grad.dtype).alu(BinaryOps.MUL, grad.expand(self.x.shape))


class Prod(Function):
  """Reduce product. Each input's derivative is the product of the others: the result over the input where its
  group holds no 0, the product of the group's nonzero elements at a lone 0, and 0 wherever two or more are 0."""
  def forward(self, x, axes, shape=None):
    self.x, self.axes = x, axes
    self.ret = x.reduce(ReduceOps.PROD, axes)
    return self.ret if shape is None else self.ret.reshape(shape)
  def backward(self, grad):
    x, shape = self.x, self.x.shape
    zero = x.const(0)
    is_zero = x.alu(BinaryOps.CMPEQ, zero)
    zeros = is_zero.cast(sum_dtype(x.dtype)).reduce(ReduceOps.SUM, self.axes).expand(shape)
    nonzero_product = is_zero.alu(TernaryOps.WHERE, x.const(1), x).reduce(ReduceOps.PROD, self.axes).expand(shape)
    at_zero = zeros.alu(BinaryOps.CMPEQ, zeros.const(1)).alu(TernaryOps.WHERE, nonzero_product, zero)
    elsewhere = zeros.alu(BinaryOps.CMPEQ, zeros.const(0)).alu(TernaryOps.WHERE, self.ret.expand(shape).alu(BinaryOps.DIV, x), zero)
    return is_zero.alu(TernaryOps.WHERE, at_zero, elsewhere).alu(BinaryOps.MUL, grad.reshape(self.ret.shape).expand(shape))


def _shifted(x: LazyBuffer, axis: int, step: int) -> LazyBuffer:
  """x moved one place along axis, later (step 1) or earlier (step -1), with a 0 coming in."""
  n = x.shape[axis]
  kept = tuple(((0, n - 1) if step > 0 else (1, n)) if d == axis else (0, s) for d, s in enumerate(x.shape))
  return x.shrink(kept).pad(tuple(((1, 0) if step > 0 else (0, 1)) if d == axis else (0, 0) for d in range(len(x.shape))))


class CumProd(Function):
  """Running product along an axis. Input i's gradient is the product of the inputs before it times S_i, the sum
  over outputs j >= i of grad_j * x_{i+1} * ... * x_j, which the recurrence S_i = grad_i + x_{i+1} * S_{i+1} gives
  from the far end: no division, so zeros get theirs exactly."""
  def forward(self, x, axis):
    self.x, self.axis = x, axis
    self.ret = running(x, axis, "prod")
    return self.ret
  def backward(self, grad):
    x, axis = self.x, self.axis
    if x.shape[axis] == 0: return grad
    first = LazyBuffer.full(1, tuple(1 if d == axis else s for d, s in enumerate(x.shape)), x.dtype, x.device)
    before = _shifted(self.ret, axis, 1).alu(BinaryOps.ADD, first.pad(tuple((0, x.shape[axis] - 1) if d == axis else (0, 0) for d in range(len(x.shape)))))
    reverse = (axis,)
    after = running(grad.flip(reverse), axis, "recurrence", factors=_shifted(x, axis, -1).flip(reverse)).flip(reverse)
    return before.alu(BinaryOps.MUL, after)


class CumSum(Function):
  """Running sum along an axis; each input feeds every output at or after it, so its gradient is the
  running sum of the gradient taken from the far end."""
  def forward(self, x, axis):
    self.axis = axis
    return cumsum(x, axis)
  def backward(self, grad): return cumsum(grad.flip((self.axis,)), self.axis).flip((self.axis,))


class Take(Function):
  """Rows of x's last row_dims dims at flat positions (-1 reads 0); each gradient row goes back to the position it
  read."""
  def forward(self, x, positions, row_dims, dim_size=-1):
    self.positions, self.shape, self.row_dims, self.dim_size = positions, x.shape, row_dims, dim_size
    return take(x, positions, row_dims, dim_size)
  def backward(self, grad): return scatter_add(grad, self.positions, self.shape, self.row_dims, self.dim_size), None


class TakeAlong(Function):
  """x's rows along axis at index (graph/take.py's take_along: x[:, idx] when shared, else a gather); each gradient
  row goes back to the row it read."""
  def forward(self, x, index, axis, shared, wrap):
    out = take_along(x, index, axis, shared, wrap)
    self.index, self.shape, self.rows = index, x.shape, out.arg.rows   # the gradient adds back where the take read
    return out
  def backward(self, grad): return scatter_add_rows(grad, self.index, self.shape, self.rows), None


class ScatterAddRows(Function):
  """Rows of x added into zeros of shape at flat positions (-1 adds nothing), Take's adjoint: each row's gradient
  is read back from the position it went to."""
  def forward(self, x, positions, shape, row_dims):
    self.positions, self.row_dims = positions, row_dims
    return scatter_add(x, positions, shape, row_dims)
  def backward(self, grad): return take(grad, self.positions, self.row_dims), None


class Concatenate(Function):
  """Many tensors joined along dim; each gets back its slot of the gradient (a view)."""
  def forward(self, *pieces, dim):
    self.dim, self.sizes = dim, [p.shape[dim] for p in pieces]
    return concatenate(list(pieces), dim)
  def backward(self, grad):
    grads, start = [], 0
    for size, needed in zip(self.sizes, self.needs_input_grad):
      grads.append(grad.shrink(tuple((start, start + size) if d == self.dim else (0, n) for d, n in enumerate(grad.shape))) if needed else None)
      start += size
    return tuple(grads)


# ---- matrix product
class Matmul(Function):
  """a (*batch, M, K) @ b (*batch, K, N) with equal batch dims (Tensor.dot broadcasts them, so the
  gradient of a broadcast operand is summed by Expand's backward)."""
  def forward(self, a, b):
    self.a, self.b = a, b
    return linalg.matmul(a, b)
  def backward(self, grad):
    grad_a = linalg.matmul(grad, linalg.matrix_transpose(self.b)) if self.needs_input_grad[0] else None
    if not self.needs_input_grad[1]: return grad_a, None
    # b read transposed (a weight used as w.T) gets its gradient made in w's own layout: (grad^T a)^T, not
    # a^T grad, so the update w - lr * grad reads it in order
    if linalg.column_major(self.b): return grad_a, linalg.matrix_transpose(linalg.matmul(linalg.matrix_transpose(grad), self.a))
    return grad_a, linalg.matmul(linalg.matrix_transpose(self.a), grad)


class Custom(Function):
  """A node make(*inputs) builds, whose gradient a Tensor-level function computes from the inputs, the result and its
  gradient: ops whose gradient formulas take other ops (the factorizations of nbgrad/dense.py, the scatters)."""
  def forward(self, *inputs, make, gradient):
    self.inputs, self.gradient = inputs, gradient
    self.ret = make(*inputs)
    return self.ret
  def backward(self, grad): return self.gradient(*self.inputs, self.ret, grad)


def custom(make, gradient, *inputs):
  """Custom on tensors: gradient(*inputs, result, grad) takes and gives tensors (one per input, None for one with no
  gradient)."""
  wrap = type(inputs[0])

  def lazy_gradient(*lazies):
    grads = gradient(*[wrap(lazy) for lazy in lazies])
    return tuple(None if g is None else g.lazydata for g in grads) if isinstance(grads, tuple) else grads.lazydata
  return Custom.apply(*inputs, make=make, gradient=lazy_gradient)


class DirectConv(Function):
  """A 2-D convolution computed an image at a time (linalg.DirectConv), with its two gradients computed that way."""
  def forward(self, x, w, geometry, out_shape):
    out = linalg.direct_conv("forward", x, w, geometry, out_shape)
    (self.x, self.w), self.geometry = out.srcs, geometry   # as the forward reads them: the gradients copy nothing again
    return out
  def backward(self, grad):
    grad = grad.in_flat_order()   # both gradients read it: copied once, if at all
    grad_x = linalg.direct_conv("input_grad", grad, self.w, self.geometry, self.x.shape) if self.needs_input_grad[0] else None
    grad_w = linalg.direct_conv("weight_grad", self.x, grad, self.geometry, self.w.shape) if self.needs_input_grad[1] else None
    return grad_x, grad_w


class ConvTranspose(Function):
  """A 2-D transposed convolution computed as DirectConv's input gradient (no zeros put between the inputs of a
  strided one), its gradients as DirectConv's forward and weight gradient; geometry is that of the convolution it
  transposes, whose input is this one's output."""
  def forward(self, x, w, geometry, out_shape):
    out = linalg.direct_conv("input_grad", x, w, geometry, out_shape)
    (self.x, self.w), self.geometry = out.srcs, geometry
    return out
  def backward(self, grad):
    grad_x = linalg.direct_conv("forward", grad, self.w, self.geometry, self.x.shape) if self.needs_input_grad[0] else None
    grad_w = linalg.direct_conv("weight_grad", grad, self.x, self.geometry, self.w.shape) if self.needs_input_grad[1] else None
    return grad_x, grad_w


class AxisTransform(Function):
  """A constant matrix applied along some axes: a linear map whose gradient is the transposed matrix
  applied along the same axes. layout orders the forward's buffer and grad_layout the gradient's (both
  default to x's axis order)."""
  def forward(self, x, matrix, axes, layout=None, grad_layout=None):
    self.transposed, self.axes, self.grad_layout = tuple(zip(*matrix)), axes, grad_layout
    return linalg.axis_transform(x, matrix, axes, layout)
  def backward(self, grad): return linalg.axis_transform(grad, self.transposed, self.axes, self.grad_layout)


class AxisTaps(Function):
  """Weighted taps along an axis (graph/taps.py), a linear map: the gradient goes back through the transposed
  table, which adjoint() makes (taps and weights nodes) only when a backward needs it."""
  def forward(self, x, taps, weights, axis, adjoint):
    self.axis, self.adjoint = axis, adjoint
    return axis_taps(x, taps, weights, axis)
  def backward(self, grad): return axis_taps(grad, *self.adjoint(), self.axis), None, None


class Tiles(Function):
  """x (N, *spatial, C), channels last, seen as overlapping tiles (N, C, *tiles, *tile) a step apart: a view,
  whose gradient adds the tiles' gradients back where they overlap, channels last (one custom kernel)."""
  def forward(self, x, tile, step):
    self.spatial, self.step = x.shape[1:-1], step
    dims = len(tile)
    return x.permute((0, dims + 1, *range(1, dims + 1))).windows(tile, (step,) * dims, (1,) * dims)
  def backward(self, grad): return linalg.overlap_add(grad, self.spatial, self.step)


# ---- movement
class Reshape(Function):
  is_view = True
  @staticmethod
  def keeps_elements(source, out: LazyBuffer) -> bool:
    """A reshape of a view that no strides express (x.T.reshape(12)) is a copy, as torch's: strides in the view's
    root stored in order (Tensor._view_of_stored_root)."""
    if source._view_of is None: return True
    stand_in = source._view_of_stored_root()
    if stand_in is source: return out.view.strided() is not None
    return stand_in.reshape(out.shape).lazydata.view.strided() is not None
  def forward(self, x, shape):
    self.input_shape = x.shape
    return x.reshape(shape)
  def backward(self, grad): return grad.reshape(self.input_shape)


class Expand(Function):
  is_view = True
  def forward(self, x, shape):
    self.axes = tuple(i for i, (a, b) in enumerate(zip(x.shape, shape)) if a != b)
    return x.expand(shape)
  def backward(self, grad): return summed_over(grad, self.axes)


class Broadcast(Function):
  """x with ones put before its shape and expanded to shape (what a binary op of two shapes does to each operand):
  one node and one Function, where a reshape and an expand made two of each."""
  def forward(self, x, shape):
    self.input_shape = x.shape
    ones = (1,) * (len(shape) - len(x.shape)) + x.shape
    self.axes = tuple(i for i, (a, b) in enumerate(zip(ones, shape)) if a != b)
    return x.broadcast(shape)
  def backward(self, grad):
    if self.axes: grad = summed_over(grad, self.axes)
    return grad.reshape(self.input_shape)


class Permute(Function):
  is_view = True
  def forward(self, x, order):
    self.order = order
    return x.permute(order)
  def backward(self, grad):
    inverse = [0] * len(self.order)
    for i, o in enumerate(self.order): inverse[o] = i
    return grad.permute(inverse)


class Pad(Function):
  def forward(self, x, arg):
    self.arg = tuple((b, b + s) for (b, _), s in zip(arg, x.shape))
    return x.pad(arg)
  def backward(self, grad): return grad.shrink(self.arg)


class Shrink(Function):
  is_view = True
  def forward(self, x, arg):
    self.arg = tuple((a, s - b) for (a, b), s in zip(arg, x.shape))
    return x.shrink(arg)
  def backward(self, grad): return SliceGradient(grad, self.arg)


@dataclass(frozen=True)
class SliceGradient:
  """The gradient of a slice: grad padded with zeros by padding (per dim, before and after). Kept apart until the
  input's gradient contributions are summed (summed_gradient), so that many slices can be joined, not added."""
  grad: LazyBuffer
  padding: tuple

  def padded(self) -> LazyBuffer: return self.grad.pad(self.padding)


def summed_gradient(parts: list, shape: tuple) -> LazyBuffer:
  """The sum of a tensor's gradient contributions (LazyBuffers and SliceGradients). The gradients of slices that
  cover disjoint ranges of one dim are joined by one concatenation when they are more than one fused kernel takes
  (x[:, t] for every step t of an RNN: added as padded tensors, every element tested every slice, and 600 slices took
  seconds to compile and one pass over the input per 32 slices to run), or when each is stored anyway or they are
  big, as cat joins tensors (attention's q, k and v cut from one product by chunk: their gradients, heads moved back,
  were added as padded tensors in 1.6 ms, and are copied and joined in 0.43, 8x128x768 float32 on one thread)."""
  slices = [p for p in parts if isinstance(p, SliceGradient)]
  stored = all(s.grad.base.stored_anyway() for s in slices)
  copied = len(slices) > 1 and (stored or copied_apart(len(slices), math.prod(shape), slices[0].grad.device))
  if (len(slices) > CAT_FUSED_MAX or copied) and (joined := _joined(slices, shape)) is not None:
    parts = [p for p in parts if not isinstance(p, SliceGradient)] + [joined]
  lazies = [p.padded() if isinstance(p, SliceGradient) else p for p in parts]
  total = lazies[0]
  for lazy in lazies[1:]: total = total.alu(BinaryOps.ADD, lazy)
  return total


def _joined(slices: list[SliceGradient], shape: tuple):
  """The slices' gradients laid side by side along their one padded dim, zeros between (gradients of the same slice
  added first); None when they pad several dims or overlap in part."""
  dims = {d for s in slices for d, (before, after) in enumerate(s.padding) if before or after}
  if len(dims) != 1: return None
  dim = dims.pop()
  ranges: dict = {}
  for s in slices:
    start = s.padding[dim][0]
    key = (start, start + s.grad.shape[dim])
    ranges[key] = s.grad if key not in ranges else ranges[key].alu(BinaryOps.ADD, s.grad)
  first = slices[0].grad
  def zeros(size): return LazyBuffer.full(0, shape[:dim] + (size,) + shape[dim + 1:], first.dtype, first.device)
  pieces, at = [], 0
  for (start, end), grad in sorted(ranges.items()):
    if start < at: return None
    if start > at: pieces.append(zeros(start - at))
    pieces.append(grad)
    at = end
  if at < shape[dim]: pieces.append(zeros(shape[dim] - at))
  return concatenate(pieces, dim)


class Slice(Function):
  """A basic index as one op: counts[d] elements of each dim d from starts[d], steps[d] apart (negative: backwards),
  reshaped to shape (indexed dims dropped, new dims of 1), as one view node: as a shrink, a flip, a step and a
  reshape, each an op of its own, x[:, ::2] of a 16x32 tensor took 65 us to build, 21 as one."""
  is_view = True
  def forward(self, x, starts, steps, counts, shape):
    self.input_shape, self.starts, self.steps, self.counts = x.shape, starts, steps, counts
    return x.sliced(starts, steps, counts, shape)
  def backward(self, grad):
    grad = grad.reshape(self.counts)
    strides = tuple(abs(s) if n > 1 else 1 for s, n in zip(self.steps, self.counts))
    if any(s != 1 for s in strides):   # the gradient spread out: steps - 1 zeros after each element but the last
      columns = grad.reshape(tuple(d for n in self.counts for d in (n, 1)))
      spread = columns.pad(tuple(p for s in strides for p in ((0, 0), (0, s - 1))))
      grad = spread.reshape(tuple(n * s for n, s in zip(self.counts, strides)))
      grad = grad.shrink(tuple((0, max(0, (n - 1) * s + 1)) for n, s in zip(self.counts, strides)))
    backwards = tuple(d for d, (s, n) in enumerate(zip(self.steps, self.counts)) if s < 0 and n > 1)
    if backwards: grad = grad.flip(backwards)
    firsts = [a if s > 0 or n == 0 else a + (n - 1) * s for a, s, n in zip(self.starts, self.steps, self.counts)]
    padding = tuple((first, size - first - span) for first, size, span in zip(firsts, self.input_shape, grad.shape))
    return SliceGradient(grad, padding) if any(a or b for a, b in padding) else grad


class Flip(Function):   # a copy, as torch's (a flip of a buffer reads it in place, but a write into it does not reach it)
  def forward(self, x, axes):
    self.axes = axes
    return x.flip(axes)
  def backward(self, grad): return grad.flip(self.axes)


class Copy(Function):
  def forward(self, x, device: str):
    self.source_device = x.device
    return x.copy_to(device)
  def backward(self, grad): return grad.copy_to(self.source_device)


class Windows(Function):
  """Every sliding window over the last len(kernel) dims, as one strided view: (..., *spatial) -> (..., *out, *kernel)."""
  is_view = True
  def forward(self, x, kernel, stride, dilation):
    self.input_shape, self.args = x.shape, (kernel, stride, dilation)
    return x.windows(kernel, stride, dilation)
  def backward(self, grad):
    if shifted_terms(*self.args) > 1 and window_sums_routine_takes(grad, self.args[0]): return window_sums_node(grad, self.input_shape, *self.args)
    if shifted_terms(*self.args) > MAX_SHIFTED_TERMS: return window_sums_by_dim(grad, self.input_shape, *self.args)
    return one_window_sum(grad, self.input_shape, *self.args)


class Diagonal(Function):
  """The elements (i, i + offset) of the matrices in dims dim1 and dim2, along a new last dim: a view; its gradient
  is zeros with grad on that diagonal."""
  is_view = True
  def forward(self, x, offset, dim1, dim2):
    self.input_shape, self.args = x.shape, (offset, dim1, dim2)
    return x.mapped(Affine.diagonal(x.shape, offset, dim1, dim2))
  def backward(self, grad):
    offset, first, second = self.args
    rows, cols, (*lead, count) = self.input_shape[first], self.input_shape[second], grad.shape
    if count == 0: return LazyBuffer.full(0, self.input_shape, grad.dtype, grad.device)
    keep = ((0, 0),) * len(lead)
    # each diagonal element followed by cols zeros, laid from the first one's flat position on: the next lands
    # one row down and one column right
    spread = grad.reshape((*lead, count, 1)).pad(keep + ((0, 0), (0, cols))).reshape((*lead, count * (cols + 1)))
    start = max(0, -offset) * cols + max(0, offset)
    spread = spread.shrink(tuple((0, n) for n in lead) + ((0, min(count * (cols + 1), rows * cols - start)),))
    matrices = spread.pad(keep + ((start, rows * cols - start - spread.shape[-1]),)).reshape((*lead, rows, cols))
    order = [d for d in range(len(self.input_shape)) if d not in (first, second)] + [first, second]
    return matrices.permute(tuple(order.index(d) for d in range(len(order))))


class AsStrided(Function):
  """The elements at storage_offset + sum(i_k * stride_k) of x's flattened elements, in shape size: a view; each
  gradient element goes back to the position it read (summed where positions repeat)."""
  is_view = True
  def forward(self, x, size, stride, storage_offset):
    self.input_shape, self.args = x.shape, (size, stride, storage_offset)
    flat = x.reshape((math.prod(x.shape),))
    return flat.mapped(Affine(size, flat.shape, ((stride, storage_offset),)))
  def backward(self, grad):
    size, stride, offset = self.args
    positions = offset + sum(np.arange(n).reshape((-1,) + (1,) * (len(size) - k - 1)) * st for k, (n, st) in enumerate(zip(size, stride)))
    flat = np.ascontiguousarray(np.broadcast_to(positions, size), index_dtype(math.prod(self.input_shape)).np).reshape(-1)
    positions = LazyBuffer.from_buffer(flat, size, dtypes.from_np(flat.dtype), "CPU")
    if positions.device != grad.device: positions = positions.copy_to(grad.device)
    return scatter_add(grad, positions, (math.prod(self.input_shape),), 0).reshape(self.input_shape)


# Each term of the shifted sum is a padded load in the kernel that adds them, and compile time grows with
# them: measured cold, 9 terms (3x3) 1.9 s, 25 terms (5x5) 3.9 s, 27 terms (3x3x3) 11 s. Past this many terms the
# dims are summed one at a time (5 + 5 terms for 5x5); a dim of more is left to window_sums, one reduce over
# repeats of the input (1.3-1.8 s to compile, but its index arithmetic divides: 5x5 windows of a 128x32x24x24
# input took 0.6 s to run, one dim at a time 0.05 s).
MAX_SHIFTED_TERMS = 16


def window_sums_routine_takes(grad: LazyBuffer, kernel: tuple) -> bool:
  """Whether the window-sums node adds overlapping windows back (its CPU routine: float32 or float64, up to
  WINDOW_SUMS_MAX_DIMS dims); elsewhere the sums are fused kernels of padded views."""
  from nbgrad.device import is_cpu
  return is_cpu(grad.device) and grad.dtype in (dtypes.float32, dtypes.float64) and len(kernel) <= WINDOW_SUMS_MAX_DIMS


def shifted_terms(kernel, stride, dilation) -> int:
  """The padded views shifted_window_sums adds up."""
  return math.prod(len(offset_runs(k, s, d)) for k, s, d in zip(kernel, stride, dilation))


def one_window_sum(grad: LazyBuffer, input_shape, kernel, stride, dilation) -> LazyBuffer:
  terms = shifted_terms(kernel, stride, dilation)
  if terms > MAX_SHIFTED_TERMS: return window_sums(grad, input_shape, kernel, stride, dilation)
  # read once per term: a pooling gradient inlined into four terms compiled in 9.7 s, not 2
  if terms > 1: grad = computed_once(grad)
  return shifted_window_sums(grad, input_shape, kernel, stride, dilation)


def window_sums_by_dim(grad: LazyBuffer, input_shape, kernel, stride, dilation) -> LazyBuffer:
  """The window sums one spatial dim at a time: the sum over windows and kernel offsets that reach an input
  position splits into independent sums along each dim. grad is (..., *out, *kernel); each pass moves one dim's
  (out, kernel) pair last and sums it into that dim's input positions."""
  dims = len(kernel)
  lead = len(grad.shape) - 2 * dims
  names = [("lead", i) for i in range(lead)] + [("out", j) for j in range(dims)] + [("kernel", j) for j in range(dims)]
  for j in reversed(range(dims)):
    others = [name for name in names if name not in (("out", j), ("kernel", j))]
    grad = grad.permute(tuple(names.index(name) for name in others + [("out", j), ("kernel", j)]))
    grad = one_window_sum(grad, grad.shape[:-2] + (input_shape[lead + j],), (kernel[j],), (stride[j],), (dilation[j],))
    if j: grad = computed_once(grad)   # stored in the order just computed, before the next pass permutes it
    names = others + [("input", j)]
  return grad.permute(tuple(names.index(name) for name in [("lead", i) for i in range(lead)] + [("input", j) for j in range(dims)]))


def offset_runs(size: int, stride: int, dilation: int) -> list[tuple[int, int]]:
  """Kernel offsets along one dim, in runs [start, stop) whose gradients form one padded view: undilated
  offsets q * stride ... q * stride + stride - 1 read the consecutive positions of one stride-long block of
  the input, so they go together; dilated offsets go one by one."""
  step = stride if dilation == 1 else 1
  return [(k, min(k + step, size)) for k in range(0, size, step)]


def shifted_window_sums(grad: LazyBuffer, input_shape, kernel, stride, dilation) -> LazyBuffer:
  """Each input element's sum of the window gradients that read it, as an elementwise sum of padded views
  of the gradient (one per run of kernel offsets), with no reduce and no index division. Along a dim,
  input position p is held as (block, phase) = divmod(p, stride): window o of offset k reads block
  o + k * dilation // stride at phase k * dilation % stride."""
  dims = len(kernel)
  lead = grad.shape[:-2 * dims]
  spatial = input_shape[-dims:]
  out = grad.shape[len(lead):len(lead) + dims]
  blocks = [-(-n // s) for n, s in zip(spatial, stride)]
  keep = [(0, 0)] * len(lead)
  interleaved = [len(lead) + a for j in range(dims) for a in (j, dims + j)]   # (..., o1, k1, o2, k2, ...)
  total = None
  for runs in itertools.product(*(offset_runs(k, s, d) for k, s, d in zip(kernel, stride, dilation))):
    term = grad.shrink(tuple([(0, n) for n in lead + out] + list(runs)))
    term = term.permute(tuple(range(len(lead))) + tuple(interleaved))
    pads = []
    for o, (start, stop), s, d, b in zip(out, runs, stride, dilation, blocks):
      block, phase = divmod(start * d, s)
      pads += [(block, b - o - block), (phase, s - phase - (stop - start))]
    term = term.pad(tuple(keep + pads))
    total = term if total is None else total.alu(BinaryOps.ADD, term)
  total = total.reshape(lead + tuple(b * s for b, s in zip(blocks, stride)))
  return total.shrink(tuple([(0, n) for n in lead] + [(0, n) for n in spatial]))


def window_sums(grad: LazyBuffer, input_shape, kernel, stride, dilation) -> LazyBuffer:
  """Each input element's sum of the window gradients that read it, from movement ops and one reduce. Along a
  dim of size n: kernel offset j's gradients go to a row of n + dilation positions (window o at column
  o * stride), the rows laid end to end go to repeats of the input, and the repeats are summed; row j then
  starts at input element j * dilation."""
  dims = len(kernel)
  lead = grad.shape[:-2 * dims]
  spatial = input_shape[-dims:]
  out = grad.shape[len(lead):len(lead) + dims]
  keep = [(0, 0)] * len(lead)
  interleaved = [len(lead) + a for j in range(dims) for a in (dims + j, j)]
  x = grad.permute(tuple(range(len(lead))) + tuple(interleaved))   # (..., k1, o1, k2, o2, ...)
  x = x.reshape(lead + tuple(e for k, o in zip(kernel, out) for e in (k, o, 1)))
  x = x.pad(tuple(keep + [p for s in stride for p in ((0, 0), (0, 0), (0, s - 1))]))
  x = x.reshape(lead + tuple(e for k, o, s in zip(kernel, out, stride) for e in (k, o * s)))
  row_ends = [n + d - o * s for n, o, s, d in zip(spatial, out, stride, dilation)]   # > 0: pad, < 0: crop
  x = x.pad(tuple(keep + [p for end in row_ends for p in ((0, 0), (0, max(end, 0)))]))
  x = x.shrink(tuple([(0, n) for n in lead] + [r for k, n, d in zip(kernel, spatial, dilation) for r in ((0, k), (0, n + d))]))
  repeats = [math.ceil(k * (n + d) / n) for k, n, d in zip(kernel, spatial, dilation)]
  x = x.reshape(lead + tuple(k * (n + d) for k, n, d in zip(kernel, spatial, dilation)))
  x = x.pad(tuple(keep + [(0, e * n - k * (n + d)) for e, k, n, d in zip(repeats, kernel, spatial, dilation)]))
  x = x.reshape(lead + tuple(e for r, n in zip(repeats, spatial) for e in (r, n)))
  summed = x.reduce(ReduceOps.SUM, tuple(len(lead) + 2 * j for j in range(dims)))
  return summed.reshape(input_shape)
