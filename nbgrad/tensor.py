"""Tensor: the public API. Argument checking, dtype promotion and broadcasting happen here; every op is
a composition of the differentiable primitives of nbgrad.autograd."""
from __future__ import annotations
import contextlib
import functools
import inspect
import math
import string
import threading
import weakref
from typing import Optional, Sequence, Union
import numpy as np
from nbgrad import autograd as F, device as devices, winograd
from nbgrad.device import Device, realize as realize_nodes
from nbgrad.dtype import DType, dtypes, to_dtype, least_upper_dtype, least_upper_float, sum_acc_dtype, bfloat16_bits_to_float32, \
  float32_to_bfloat16_bits, index_dtype, int_dtype_holding, check_storable, largest_finite, smallest_normal, signed_int_of_size, HALF_FLOATS
from nbgrad.graph.dot import graph_dot
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import UnaryOps, BinaryOps, ReduceOps, LoadOps
from nbgrad.graph.view import contiguous_strides
from nbgrad.graph.concat import CAT_FUSED_MAX, copied_apart
from nbgrad import dense, dense_solve, functional, ordering, scatter
from nbgrad import hooks, special
from nbgrad import pooling
from nbgrad.graph.scan import running
from nbgrad.graph.schedule import create_schedule
from nbgrad.helpers import ShapeMismatch, DTypeMismatch, InPlaceNeedsGradient, IndexMismatch, ItemSizeMismatch, ValueOutOfRange, \
  UnsupportedDType, \
  NotAScalar, NotOneElement, NoAxisToJoin, eager_enabled, add_weak_reference
from nbgrad.jit.blas import strided_view
from nbgrad.indexing import basic_index, set_index, index_positions, along_axis, kernel_index, whole_float_indices, foreign_array
from nbgrad.linalg import BLAS_DTYPES, DIRECT_CONV_DTYPES
from nbgrad.random.draw import GeneratorState

Scalar = Union[bool, int, float]


# ---- argument checking shared by many ops
class ElementCount(int):
  """t.size: the number of elements, as numpy's attribute (np.size(t), range(t.size)); called, it is tinygrad's and
  torch's method: t.size() is the shape, t.size(dim) one dim's size."""
  def __new__(cls, shape: tuple[int, ...]):
    count = super().__new__(cls, math.prod(shape))
    count.shape = shape
    return count

  def __call__(self, dim: Optional[int] = None):
    return self.shape if dim is None else self.shape[resolve_axis(dim, len(self.shape))]


def resolve_axis(axis: int, ndim: int, extra: int = 0) -> int:
  """axis in [-ndim-extra, ndim+extra) normalized; IndexError naming both otherwise."""
  if type(axis) is int and 0 <= axis < ndim + extra: return axis
  if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
    raise TypeError(f"axis must be an int, got {axis!r}")
  n = ndim + extra
  if not -max(n, 1) <= axis < max(n, 1): raise IndexError(f"axis {axis} is out of range for a tensor with {ndim} dims")
  return int(axis) % max(n, 1)


def _tensors(first, others: tuple, op: str) -> tuple:
  for t in others:
    if not isinstance(t, Tensor): raise TypeError(f"{op} takes tensors, got {type(t).__name__}")
  return (first,) + others


def _check_number(name: str, value):
  """TypeError unless value is a real number (an int, float or numpy scalar of one)."""
  if isinstance(value, complex) or not isinstance(value, (int, float, np.integer, np.floating)):
    raise TypeError(f"{name} must be a real number, got {value!r}")


_FLOAT_INT_LIMIT = 2 ** 1024   # the ints a float operand takes (a name: Python computes 2 ** 1024 anew each time it is written)

MVLGAMMA_TERMS_SUMMED = 64   # mvlgamma's terms added one by one up to this p, as torch adds them


def _check_parameter(name: str, value, holds, rule: str):
  """A distribution's parameter: a real number for which holds(value), else ValueError naming the rule (as torch's)."""
  _check_number(name, value)
  if not holds(value): raise ValueError(f"{name} must be {rule}, got {value!r}")


def _is_int(value) -> bool: return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_int(name: str, value, low: Optional[int] = 0, within=None):
  """TypeError unless value is an int; ValueError when it is below low (None: no bound). within: the argument
  value came from, named in the message (formatted only then)."""
  if _is_int(value) and (low is None or value >= low): return
  if within is not None: name = f"{name} in {within}"
  if not _is_int(value): raise TypeError(f"{name} must be an int, got {value!r}")
  raise ValueError(f"{name} must be at least {low}, got {value}")


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
  ndim = max(len(s) for s in shapes)
  padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
  out = []
  for sizes in zip(*padded):
    non_one = {s for s in sizes if s != 1}
    if len(non_one) > 1: raise ValueError(f"shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be broadcast together")
    out.append(non_one.pop() if non_one else 1)
  return tuple(out)


def _sizes_read(sizes: tuple) -> tuple:
  """sizes with each 0-d int tensor among them as its value (torch takes them as sizes); any other tensor raises."""
  for s in sizes:
    if isinstance(s, Tensor) and (s.ndim or not dtypes.is_int(s.dtype)):
      raise TypeError(f"sizes are ints or 0-d int tensors, got a tensor of shape {s.shape} and dtype {s.dtype} among {sizes}")
  return tuple(s.item() if isinstance(s, Tensor) else s for s in sizes)


def shape_arg(shape, *rest) -> tuple[int, ...]:
  """Accepts f(2, 3) and f((2, 3)), not a mix of the two; rejects negative sizes."""
  if isinstance(shape, (tuple, list, np.ndarray)):
    if rest: raise ShapeMismatch(f"a shape is ints or one tuple, not both: got {(shape,) + tuple(rest)}")
    dims = _sizes_read(tuple(shape))
  else: dims = _sizes_read((shape,) + tuple(rest))
  if len(dims) == 1 and dims[0] is None: return ()
  for d in dims:
    if not _is_int(d): raise TypeError(f"shape {dims} must hold ints")
    if d < 0: raise ShapeMismatch(f"shape {dims} has a negative size")
  return check_element_count(tuple(int(d) for d in dims))


UINT64_BELOW_2_64_F32 = float(np.nextafter(np.float32(2.0**64), np.float32(0)))   # the largest float32 a uint64 holds
MAX_ELEMENTS = 2**63 - 1   # each element's index must fit an int64, as numpy's and the kernels' indices do


def check_element_count(shape: tuple[int, ...]) -> tuple[int, ...]:
  if (count := math.prod(shape)) > MAX_ELEMENTS:
    raise ValueError(f"shape {shape} has {count} elements, more than the {MAX_ELEMENTS} an int64 index reaches")
  return shape


def _blas_dtype(out_dtype: DType, acc_dtype) -> Optional[DType]:
  """The dtype a float product accumulates in when BLAS can do it (the half types in float32), else None."""
  if not dtypes.is_float(out_dtype): return None
  if acc_dtype is not None: acc = to_dtype(acc_dtype)
  else: acc = dtypes.float32 if out_dtype in HALF_FLOATS else out_dtype
  return acc if acc in BLAS_DTYPES else None


def in_float32_rounded_to(dtype: DType, fn, *values):
  """fn of values, the tensors among them in float32, its result rounded to dtype (a 16-bit float type) once: for ops
  whose intermediate values leave float16's range (300 * 300) or lose its precision where the result does not."""
  return fn(*(v.cast(dtypes.float32) if isinstance(v, Tensor) else v for v in values)).cast(dtype)


def _in_float32(fn):
  """fn computed in float32 for the 16-bit float types and rounded to the type once, at the end, as torch does:
  a composite op (silu is x * sigmoid(x), tan is sin / cos) otherwise rounds every step to half, and float16
  silu came out 16% off (cos, then sin(pi/2 - x), 54%). Int and bool inputs are computed in float32 from the start:
  in their own dtype, softsign's 1 + |x| and hardswish's x * relu6(x + 3) wrapped around (int8 127 gave 0)."""
  @functools.wraps(fn)
  def computed(self, *args, **kwargs):
    if self.dtype in HALF_FLOATS: return fn(self.cast(dtypes.float32), *args, **kwargs).cast(self.dtype)
    if not dtypes.is_float(self.dtype): return fn(self._float_input(), *args, **kwargs)
    return fn(self, *args, **kwargs)
  return computed


# (a cos a - sin a) / a^2 = sum over n >= 1 of (-1)^n 2n / (2n + 1)! a^(2n - 1): the coefficients of a times powers of
# a^2, to a^17 (below float64's rounding for |a| < 1/2)
SINC_SLOPE_SERIES = tuple((-1) ** n * 2 * n / math.factorial(2 * n + 1) for n in range(1, 10))


def _odd_series(*coefficients: float):
  """x * (1 + c1 x^2 + c2 x^4 + ...) evaluated by Horner's rule, as a function of a tensor x."""
  def series(x):
    square, total = x * x, coefficients[-1]
    for c in reversed(coefficients[:-1]): total = c + square * total
    return x * (1 + square * total)
  return series


def _half_exp_sum(x: Tensor, sign: int) -> Tensor:
  """(exp(x) + sign * exp(-x)) / 2 (cosh, or sinh for sign -1), for x not in a graph. Past the |x| where exp(|x|)
  overflows and the result does not yet (88.7 to 89.4 in float32), as exp(|x|/2) * exp(|x|/2) / 2 with x's sign
  for sinh: sinh(89) was inf. Nearer 0 the plain sum (within 2.3 ulps in float32; the product was 5.9 off there),
  but float64's sinh as (E + E / (E + 1)) / 2 for E = expm1(|x|) with x's sign: the difference of exponentials
  cancelled to 370 ulps near 0.001 (its series ends there), and this takes no longer (4M: 10 ms either way)."""
  limit = 709.0 if x.dtype == dtypes.float64 else 88.0
  far = x.abs() > limit
  near = far.where(0, x)
  half = (far.where(x.abs(), limit) * 0.5).exp()
  beyond = half * (half * 0.5)
  if sign < 0 and x.dtype == dtypes.float64:
    e = near.abs().expm1()
    near_value = near.sign() * ((e + e / (e + 1)) * 0.5)
  else:
    near_value = (near.exp() + sign * near.neg().exp()) / 2
  return far.where(x.sign() * beyond if sign < 0 else beyond, near_value)


def _with_derivatives(inputs: tuple, result: Tensor, derivatives: tuple) -> Tensor:
  """result, computed without gradient from inputs, put in the graph with its derivative by each input: the
  callables of derivatives build them, each only when a gradient will flow to its input. Without an input that
  requires grad there is no graph to put it in: the result is what WithDerivatives would give, without its node
  (tanh of such a tensor was built in 2.6 times the instructions of a negation)."""
  needs = [t.requires_grad for t in inputs]
  if not any(needs): return Tensor(result.lazydata, requires_grad=None if None in needs else False)._cut_from(*inputs)._after_op()
  built = tuple(d().lazydata if t.requires_grad and not Tensor.no_grad else None for t, d in zip(inputs, derivatives))
  return F.WithDerivatives.apply(*inputs, result=result.lazydata, derivatives=built)


def _root_of_powers(total: Tensor, p: float = 2) -> Tensor:
  """The p-th root of a sum of p-th powers, with torch's gradient 0 where the sum is 0 (the root's own is inf there,
  and times the powers' gradient 0 it made nan): std of equal values, norm of zeros."""
  root = total.detach().sqrt() if p == 2 else total.detach().pow(1 / p)
  return _with_derivatives((total,), root, (lambda: (root == 0).where(0.0, root / (p * total.detach())),))


def scalar_dtype(value) -> DType:
  if isinstance(value, bool): return dtypes.bool
  if isinstance(value, int): return dtypes.default_int
  return dtypes.default_float


def filled_dtype(value) -> DType:
  """The dtype of a tensor made of a Python scalar: API.md's defaults, an int widened as in a list."""
  if isinstance(value, np.generic): value = value.item()
  if isinstance(value, int) and not isinstance(value, bool): return int_dtype_holding(value, value)
  return scalar_dtype(value)


def _np_to_lazy(array: np.ndarray, dtype: Optional[DType], device: str, fresh: bool = False) -> LazyBuffer:
  """Host data becomes a buffer of a CPU device, and a (lazy) copy from the CPU on a GPU. The buffer is a copy of
  the array unless the array is fresh (made for this tensor, nobody else holds it) and already laid out as one."""
  if dtype is None: dtype = dtypes.from_np(array.dtype)
  if dtype == dtypes.bfloat16: flat = float32_to_bfloat16_bits(array.astype(np.float32).reshape(-1))
  elif fresh: flat = np.ascontiguousarray(array, dtype=dtype.storage).reshape(-1)
  else: flat = np.array(array, dtype=dtype.storage, copy=True, order="C").reshape(-1)
  if devices.is_cpu(device): return LazyBuffer.from_buffer(flat, array.shape, dtype, device)
  return LazyBuffer.from_buffer(flat, array.shape, dtype, "CPU").copy_to(device)


def _tensors_as_arrays(data):
  """A (nested) list with Tensors in it, their values in their place: Tensor([Tensor(1.0), Tensor(2.0)])."""
  if isinstance(data, Tensor): return data.numpy()
  if isinstance(data, (list, tuple)): return [_tensors_as_arrays(d) for d in data]
  return data


def _list_to_array(data, dtype: Optional[DType] = None) -> np.ndarray:
  """The list's values read at full precision, then cast to dtype (or to API.md's default dtypes)."""
  try:   # numpy reads most lists at once, Tensors in them through __array__ (walking the list first took 10x as long)
    array = np.array(data)
  except ValueError:   # ragged, or with Tensors numpy cannot read in a list (bool ones)
    array = None
  if array is None or array.dtype.kind == "O":
    data = _tensors_as_arrays(data)
    try:
      array = np.array(data)
    except ValueError as e:
      raise ValueError(f"cannot make a tensor from a ragged or inhomogeneous list: {e}") from None
  huge_ints = array.dtype.kind == "O" and all(isinstance(v, (bool, int, float)) for v in array.flat)   # past 64 bits
  if array.dtype.kind not in "biuf" and not huge_ints:
    raise TypeError(f"cannot make a tensor from a list holding {array.dtype} values")
  if dtype is not None and dtype != dtypes.bfloat16:
    try:
      return np.array(data, dtype=dtype.np)   # exact: numpy reads [2**64 - 1, 5] alone as float64
    except (OverflowError, ValueError) as e:   # 300 as uint8, nan as int32: stored, not cast, so not wrapped
      raise ValueOutOfRange(f"a list value does not fit in {dtype.name}: {e}") from None
  if huge_ints:
    if dtype is None and not any(isinstance(v, float) for v in array.flat):
      raise ValueError("a list's ints span more than int64 and uint64 hold; give a float dtype to store them as floats")
    array = np.array(data, dtype=np.float64)
  elif array.dtype == np.float64 and array.size and np.abs(array).max() >= 2.0 ** 63:   # [2**64 - 1, 5] again
    values = np.array(data, dtype=object)
    if all(isinstance(v, (int, np.integer)) for v in values.flat):   # np.uint64(2**64 - 1) too
      array = values.astype(int_dtype_holding(int(values.min()), int(values.max())).np)
  if array.dtype.kind in "iu":
    if array.size == 0: return array.astype(dtypes.default_int.np)
    return array.astype(int_dtype_holding(int(array.min()), int(array.max())).np)
  return array.astype(dtypes.default_float.np) if array.dtype.kind == "f" else array


def _ufunc_inputs_in(ufunc, inputs: tuple, dtype: np.dtype, casting: str) -> tuple:
  """A ufunc's inputs cast to its dtype= argument (it computes in that dtype), where numpy's casting rule allows."""
  for i, x in enumerate(inputs):
    if isinstance(x, Tensor): source = np.float32 if x.dtype == dtypes.bfloat16 else x.dtype.np   # numpy has no bfloat16
    else: source = np.result_type(x)
    if not np.can_cast(source, dtype, casting):
      raise TypeError(f"np.{ufunc.__name__}: cannot cast input {i} from {np.dtype(source)} to {dtype} with casting rule {casting!r}")
  return tuple(x.cast(to_dtype(dtype)) if isinstance(x, Tensor) else np.asarray(x, dtype) for x in inputs)


# the keywords of a ufunc call nbgrad's op of it takes (order= lays out only numpy's own results)
_UFUNC_KEYWORDS = {"dtype", "casting", "order"}
# numpy ufunc -> the Tensor method (unary), or (method, reflected method) when the tensor is the second operand
_UFUNC_OPS = {
  np.negative: "neg", np.exp: "exp", np.exp2: "exp2", np.log: "log", np.log2: "log2", np.sqrt: "sqrt", np.sin: "sin",
  np.cos: "cos", np.tan: "tan", np.tanh: "tanh", np.absolute: "abs", np.sign: "sign", np.floor: "floor", np.ceil: "ceil",
  np.trunc: "trunc", np.square: "square", np.reciprocal: "reciprocal", np.sinh: "sinh", np.cosh: "cosh", np.arcsinh: "asinh",
  np.arccosh: "acosh", np.arctanh: "atanh", np.arctan: "atan", np.arcsin: "asin", np.arccos: "acos", np.rint: "round", np.logical_not: "logical_not", np.invert: "__invert__",
  np.positive: "__pos__", np.isnan: "isnan", np.isinf: "isinf", np.isfinite: "isfinite", np.log1p: "log1p", np.expm1: "expm1", np.log10: "log10",
  np.signbit: "signbit", np.deg2rad: "deg2rad", np.radians: "deg2rad", np.rad2deg: "rad2deg", np.degrees: "rad2deg", np.fabs: "abs",
  np.fmax: ("fmax", "fmax"), np.fmin: ("fmin", "fmin"), np.hypot: ("hypot", "hypot"), np.logaddexp: ("logaddexp", "logaddexp"),
  np.logaddexp2: ("logaddexp2", "logaddexp2"),
  np.add: ("__add__", "__radd__"), np.subtract: ("__sub__", "__rsub__"), np.multiply: ("__mul__", "__rmul__"),
  np.true_divide: ("__truediv__", "__rtruediv__"), np.power: ("__pow__", "__rpow__"), np.matmul: ("__matmul__", "__rmatmul__"),
  np.maximum: ("maximum", "maximum"), np.minimum: ("minimum", "minimum"),
  np.less: ("__lt__", "__gt__"), np.less_equal: ("__le__", "__ge__"), np.greater: ("__gt__", "__lt__"),
  np.greater_equal: ("__ge__", "__le__"), np.equal: ("__eq__", "__eq__"), np.not_equal: ("__ne__", "__ne__"),
  np.floor_divide: ("__floordiv__", "__rfloordiv__"), np.remainder: ("__mod__", "__rmod__"),
  np.bitwise_and: ("__and__", "__rand__"), np.bitwise_or: ("__or__", "__ror__"), np.bitwise_xor: ("__xor__", "__rxor__"),
  np.arctan2: ("atan2", "_reflected_atan2"), np.logical_and: ("logical_and", "logical_and"), np.logical_or: ("logical_or", "logical_or"),
  np.logical_xor: ("logical_xor", "logical_xor"), np.left_shift: ("__lshift__", "__rlshift__"), np.right_shift: ("__rshift__", "__rrshift__"),
}


def _listed_with_dim(first, others: tuple, dim) -> tuple:
  """torch's Tensor.cat([a, b], 1): a list of tensors, then the dim as a positional argument."""
  if isinstance(first, (list, tuple)) and len(others) == 1 and isinstance(others[0], (int, np.integer)) and not isinstance(others[0], bool):
    return first, (), others[0]
  return first, others, dim


def _leading_tensor(first, others: tuple, name: str) -> tuple:
  """Tensor.cat(a, b) and, as torch writes it, Tensor.cat([a, b]): the first tensor and the others."""
  if isinstance(first, (list, tuple)):
    if not first: raise ValueError(f"{name} needs at least one tensor")
    first, others = first[0], tuple(first[1:]) + others
  leading = next((t for t in (first,) + others if isinstance(t, Tensor)), None)
  if leading is None: raise TypeError(f"{name} takes tensors, got {type(first).__name__}")
  first, *rest = [leading._operand(t, f"{name} operand") for t in (first,) + others]   # numpy arrays as tensors
  return first, tuple(rest)


def _diagonal(k: int, diagonal: Optional[int]) -> int:
  """triu's and tril's diagonal, as tinygrad's k or as torch's diagonal."""
  if diagonal is None: return k
  if k != 0: raise TypeError(f"triu/tril got both k={k} and diagonal={diagonal}")
  return diagonal


def _torch_dim(fn):
  """The reduction (or softmax, cumsum) also takes torch's name for its axis: t.sum(dim=1), t.softmax(dim=-1)."""
  @functools.wraps(fn)
  def with_dim(self, *args, dim=None, **kwargs):
    if dim is not None:
      if args or "axis" in kwargs: raise TypeError(f"Tensor.{fn.__name__} got both axis and dim")
      kwargs["axis"] = dim
    return fn(self, *args, **kwargs)
  return with_dim


def _values_and_indices(fn):
  """The op's (values, indices) as a ValuesIndices (r.values, r.indices, as torch's); a single tensor as it is."""
  @functools.wraps(fn)
  def named(self, *args, **kwargs):
    result = fn(self, *args, **kwargs)
    return ordering.ValuesIndices(*result) if type(result) is tuple else result
  return named


def _numpy_axis(fn):
  """The op along a dim also takes numpy's name for it, as torch's do: t.sort(axis=0), t.median(axis=1). Giving both
  raises a TypeError."""
  dim_position = list(inspect.signature(fn).parameters).index("dim") - 1   # after self
  @functools.wraps(fn)
  def with_axis(self, *args, axis=None, **kwargs):
    if axis is not None:
      if "dim" in kwargs or len(args) > dim_position:
        raise TypeError(f"Tensor.{fn.__name__} got both dim={kwargs.get('dim', args[dim_position] if len(args) > dim_position else None)} and axis={axis}")
      kwargs["dim"] = axis
    return fn(self, *args, **kwargs)
  return with_axis


_NO_INITIAL = object()


def _numpy_reduction(fn):
  """The reduction also takes numpy's keywords, so np.sum(t), np.mean(t, axis=0, keepdims=True) and np.std(t)
  call it: keepdims, ddof (numpy's default 0, where the Tensor's correction is 1; torch's unbiased too), a dtype
  the input is cast to and the result given in, and for sum, max, min, any and all (mean: where only) an initial
  value and a where= mask of the elements taken; an out= array is refused."""
  name = fn.__name__
  @functools.wraps(fn)
  def reduction(self, *args, out=None, dtype=None, keepdims=None, ddof=None, unbiased=None, initial=_NO_INITIAL, where=True, **kwargs):
    if out is None and dtype is None and keepdims is None and ddof is None and unbiased is None and initial is _NO_INITIAL and where is True:
      return fn(self, *args, **kwargs)   # the common call, with none of numpy's keywords
    if out is not None: raise TypeError(f"Tensor.{name} returns a new Tensor; it writes no out= array")
    if keepdims is not None: kwargs["keepdim"] = keepdims
    given = [k for k, v in (("ddof", ddof), ("unbiased", unbiased), ("correction", kwargs.get("correction"))) if v is not None]
    if len(given) > 1: raise TypeError(f"Tensor.{name} takes one of ddof, unbiased and correction, got {' and '.join(given)}")
    if ddof is not None: kwargs["correction"] = ddof
    if unbiased is not None: kwargs["correction"] = int(unbiased)   # torch's older keyword
    x = self if dtype is None else self.cast(dtype)
    if (where is not True and name not in _MASKED_IDENTITY) or (initial is not _NO_INITIAL and name not in _WITH_INITIAL):
      raise TypeError(f"Tensor.{name} takes no {'where' if where is not True else 'initial'}= (sum, prod, max and min take initial= "
                      "and where=, any, all and mean where=)")
    if where is not True:
      taken = (where if isinstance(where, Tensor) else Tensor(np.asarray(where), device=x.device)).cast(dtypes.bool)
      taken = taken._broadcast_to(broadcast_shape(taken.shape, x.shape))
      if name == "mean": return fn(taken.where(x, 0), *args, **kwargs) / fn(taken, *args, **kwargs)   # over the taken ones
      x = taken.where(x, _MASKED_IDENTITY[name](x.dtype))
    result = fn(x, *args, **kwargs)
    if initial is not _NO_INITIAL: result = _WITH_INITIAL[name](result, initial)
    return result if dtype is None else result.cast(dtype)
  return reduction


# what numpy's where= puts in place of the elements left out (mean: a sum over the taken ones, divided by their count)
_MASKED_IDENTITY = {"sum": lambda dtype: 0, "prod": lambda dtype: 1, "max": dtypes.min, "min": dtypes.max, "any": lambda dtype: False,
                    "all": lambda dtype: True, "mean": None}
_WITH_INITIAL = {"sum": lambda r, initial: r + initial, "prod": lambda r, initial: r * initial, "max": lambda r, initial: r.maximum(initial),
                 "min": lambda r, initial: r.minimum(initial)}


def _rebuilt(values: np.ndarray, dtype: DType, device: str, requires_grad) -> Tensor:
  return Tensor(values, device=device, dtype=dtype, requires_grad=requires_grad)


# backward() on several threads into one leaf (losses sharing a parameter): each adds its part to what is there
_GRAD_ACCUMULATION = threading.Lock()


class _FlagBlocks(threading.local):
  """The values that the running with-blocks (and decorated calls) of Tensor.train and Tensor.inference_mode set on
  this thread, innermost last. A block sets its flag for its own thread, as torch's grad mode is per thread (a thread
  evaluating under inference_mode left another thread's training step without gradients); an assignment outside
  every block (Tensor.training = True, tinygrad's way) sets it for all threads, and one inside a block for the block."""
  def __init__(self): self.stacks = {"training": [], "no_grad": []}


_flag_blocks = _FlagBlocks()
_flag_values = {"training": False, "no_grad": False}


def _flag(name: str) -> property:
  def get(_) -> bool:
    stack = _flag_blocks.stacks[name]
    return stack[-1] if stack else _flag_values[name]

  def set_(_, value: bool):
    stack = _flag_blocks.stacks[name]
    if stack: stack[-1] = value
    else: _flag_values[name] = value
  return property(get, set_)


class _TensorType(type):
  """Tensor.training and Tensor.no_grad read and set as class attributes (tinygrad's), through _flag."""
  training, no_grad = _flag("training"), _flag("no_grad")


class _ClassFlag(contextlib.ContextDecorator):
  """Sets a flag of Tensor (_FlagBlocks) for a with-block or a decorated function, then restores it."""
  attribute = ""

  def __init__(self, mode: bool = True): self.mode = mode
  def __enter__(self): _flag_blocks.stacks[self.attribute].append(self.mode)   # a stack: a decorated function may call itself
  def __exit__(self, *exc): _flag_blocks.stacks[self.attribute].pop()


class _Train(_ClassFlag): attribute = "training"
class _InferenceMode(_ClassFlag): attribute = "no_grad"


def _einsum_diagonal(term: str, x: Tensor) -> tuple[str, Tensor]:
  """An einsum term with a repeated letter ('ii', 'iij') and its operand, as the term with each letter once and the
  operand's diagonal over the repeated axes (a strided view, no copy): 'ii' of a 3x3 reads elements 0, 4 and 8."""
  for first, letter in enumerate(term):
    if (second := term.find(letter, first + 1)) < 0: continue
    n = x.shape[first]
    if x.shape[second] != n:
      raise ShapeMismatch(f"einsum letter {letter!r} repeats in term {term!r} over axes of sizes {n} and {x.shape[second]}")
    rest = [i for i in range(x.ndim) if i not in (first, second)]
    flat = x.permute(rest + [first, second]).reshape(tuple(x.shape[i] for i in rest) + (n * n,))
    return _einsum_diagonal("".join(term[i] for i in rest) + letter, flat[..., ::n + 1])
  return term, x


def _einsum_ellipsis(terms: list[str], output: str, explicit: bool, operands) -> tuple[list[str], str]:
  """The terms and output with each '...' spelled out in letters the formula does not use, one per dim it covers,
  aligned from the right across the terms as broadcasting aligns them (as in torch). Without '->' the output
  starts with them."""
  for term in terms + [output]:
    if term.replace("...", "", 1).count("."):
      raise ValueError(f"einsum term {term!r}: an ellipsis is '...', at most once a term")
  covered = [x.ndim - (len(term) - 3) if "..." in term else 0 for term, x in zip(terms, operands)]
  for term, x, n in zip(terms, operands, covered):
    if n < 0: raise ShapeMismatch(f"einsum term {term!r} names {len(term) - 3} dims besides '...' for a tensor of shape {x.shape}")
  unused = [c for c in string.ascii_letters if c not in "".join(terms) + output]
  letters = "".join(unused[:max(covered)])
  spelled = [term.replace("...", letters[len(letters) - n:] if n else "") for term, n in zip(terms, covered)]
  return spelled, output.replace("...", letters) if explicit else letters


def _einsum_by_products(terms, operands, output: str, sizes: dict) -> Tensor:
  """A float einsum of several operands contracted a pair at a time, left to right (as torch does), each pair as one
  batched matrix product: the letters both share and keep are the batch, the ones they share and sum are the inner
  size, the rest are the rows and the columns. A letter only one operand has and nothing later needs is summed
  first. A pair with no rows, columns or inner letters (a dot, an outer product) stays a fused multiply and sum.
  The broadcast multiply and sum took 7.2 ms for 64x128x256 'bij,bjk->bik' 64x256x128, the product 3.6."""
  term, x = terms[0], operands[0]
  for number in range(1, len(operands)):
    later = output + "".join(terms[number + 1:])
    y_term, y = terms[number], operands[number]
    term, x = _einsum_sum_unused(term, x, y_term + later)
    y_term, y = _einsum_sum_unused(y_term, y, term + later)
    batch = [c for c in term if c in y_term and c in later]
    inner = [c for c in term if c in y_term and c not in later]
    rows, cols = [c for c in term if c not in y_term], [c for c in y_term if c not in term]
    size = lambda letters: math.prod(sizes[c] for c in letters)
    a = x.permute([term.index(c) for c in batch + rows + inner]).reshape(size(batch), size(rows), size(inner))
    b = y.permute([y_term.index(c) for c in batch + inner + cols]).reshape(size(batch), size(inner), size(cols))
    if rows and cols and inner: product = a @ b
    else: product = (a.reshape(a.shape + (1,)) * b.reshape(b.shape[:1] + (1,) + b.shape[1:])).sum(2)   # fused, memory-bound
    term, x = "".join(batch + rows + cols), product.reshape(tuple(sizes[c] for c in batch + rows + cols))
  term, x = _einsum_sum_unused(term, x, output)
  return x.permute([term.index(c) for c in output])


def _einsum_as_products(terms, operands, sizes: dict, acc_dtype) -> bool:
  """Whether an einsum can be contracted by matrix products: float32 or float64 operands of one dtype summed in it,
  whose shared letters have one size (a size-1 axis against a longer one broadcasts: the sum path takes those)."""
  dtype = operands[0].dtype
  return (dtype in (dtypes.float32, dtypes.float64) and all(x.dtype == dtype for x in operands) and
          acc_dtype in (None, dtype) and all(x.shape[term.index(c)] == sizes[c] for term, x in zip(terms, operands) for c in term))


def _einsum_sum_unused(term: str, x: Tensor, needed: str) -> tuple[str, Tensor]:
  """The term without the letters `needed` lacks, and x summed over their axes."""
  unused = tuple(i for i, c in enumerate(term) if c not in needed)
  if not unused: return term, x
  return "".join(c for c in term if c in needed), x.sum(unused)


def _not_a_value(x) -> bool:
  """None and text: operands that == and != leave to Python (identity), as torch does."""
  return x is None or isinstance(x, (str, bytes))


class Tensor(metaclass=_TensorType):
  """A lazily computed n-dimensional array with automatic differentiation."""
  training, no_grad = _flag("training"), _flag("no_grad")   # t.no_grad reads Tensor.no_grad
  train = _Train                    # with Tensor.train(): ... / @Tensor.train()
  inference_mode = _InferenceMode   # with Tensor.inference_mode(): ... (no graph is recorded)
  __slots__ = ("lazydata", "requires_grad", "_grad", "_ctx", "_view_of", "_views", "__weakref__")

  def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
    """numpy on tensors: a ufunc nbgrad has (np.exp(t), np.float32(2) * t, array + t) is the Tensor's own op and
    keeps the graph; any other ufunc, ufunc method or an out= array runs in numpy on the values."""
    if any(isinstance(o, Tensor) for o in kwargs.get("out", ())):   # numpy would call back here without end
      raise TypeError(f"np.{ufunc.__name__}(..., out=tensor) is not supported: assign the result instead (t.assign(...) or t[...] = ...)")
    if method == "at" and isinstance(inputs[0], Tensor):   # numpy writes into the read-only view __array__ gives
      raise TypeError(f"np.{ufunc.__name__}.at(tensor, ...) would write into the tensor behind nbgrad's back: use "
                      "t.index_put_(indices, values, accumulate=True) or t.index_add_(dim, index, source) for np.add.at")
    op = _UFUNC_OPS.get(ufunc) if method == "__call__" and kwargs.keys() <= _UFUNC_KEYWORDS else None
    inputs = tuple(np.asarray(i) if isinstance(i, (list, tuple)) else i for i in inputs)   # np.add(t, [1, 2]) as numpy reads it
    if op is not None and kwargs.get("dtype") is not None:
      if all(loop.endswith("?") for loop in ufunc.types if "O" not in loop): op = None   # a comparison's dtype is its result's: numpy's
      else: inputs = _ufunc_inputs_in(ufunc, inputs, np.dtype(kwargs["dtype"]), kwargs.get("casting", "same_kind"))
    if op is not None and len(inputs) == 1: return getattr(inputs[0], op)()
    if op is not None:
      a, b = inputs
      return getattr(a, op[0])(b) if isinstance(a, Tensor) else getattr(b, op[1])(a)
    values = lambda x: np.asarray(x) if isinstance(x, Tensor) else x   # where=tensor too: numpy would call back here without end
    return getattr(ufunc, method)(*map(values, inputs), **{k: values(v) for k, v in kwargs.items()})

  def __array_function__(self, func, types, args, kwargs):
    """numpy's functions on tensors run as numpy runs them on anything else (calling the tensor's methods or reading
    its values), but for np.nonzero (and np.argwhere, which calls it), whose tuple of index arrays numpy's
    a.nonzero() gives and torch's t.nonzero() does not."""
    if func is np.nonzero: return np.nonzero(*(np.asarray(a) if isinstance(a, Tensor) else a for a in args), **kwargs)
    return func._implementation(*args, **kwargs)

  def __init__(self, data=None, device: Optional[str] = None, dtype=None, requires_grad: Optional[bool] = None):
    if dtype is None and isinstance(data, LazyBuffer):   # every op's result: kept short, it runs per op
      if requires_grad and (requires_grad is not True or data.dtype.kind != "f"): _check_requires_grad(requires_grad, data.dtype)
      self.lazydata, self.requires_grad, self._grad, self._ctx, self._view_of, self._views = data, requires_grad, None, None, None, None
      return
    dtype = None if dtype is None else to_dtype(dtype)
    if isinstance(data, Tensor):   # a new leaf with the values of its own, as torch copies; on data's device unless given
      lazy = data.lazydata.cast(dtype or data.dtype).unshared()
      device = data.device if device is None else Device.canonicalize(device)
      data = lazy if lazy.device == device else lazy.copy_to(device)
    device = Device.canonicalize(device)
    if isinstance(data, (range, memoryview)): data = list(data) if isinstance(data, range) else np.asarray(data)
    else:
      if dtype is None and str(getattr(data, "dtype", "")) == "torch.bfloat16": dtype = dtypes.bfloat16
      data = foreign_array(data)   # a torch tensor, ...
    if isinstance(data, LazyBuffer):
      lazy = data.cast(dtype or data.dtype)
    elif data is None:
      lazy = _np_to_lazy(np.zeros(0, dtype=(dtype or dtypes.default_float).np), dtype or dtypes.default_float, device)
    elif isinstance(data, (bool, int, float)) and (isinstance(data, float) or not isinstance(data, np.generic)):
      data = float(data) if isinstance(data, float) else data   # np.float64 is a Python float: float32, as in tinygrad
      if dtype is not None: check_storable(data, dtype)
      lazy = LazyBuffer.full(data, (), dtype or filled_dtype(data), device)
    elif isinstance(data, (list, tuple)):
      array = _list_to_array(data, dtype)   # floats as dtypes.default_float (bfloat16 arrives as float32)
      lazy = _np_to_lazy(array, dtype or (dtypes.default_float if array.dtype.kind == "f" else None), device, fresh=True)
    elif isinstance(data, (bytes, bytearray)):   # a bytearray copied first: it may change after
      lazy = _np_to_lazy(np.frombuffer(bytes(data), dtype=np.uint8), dtype, device)
    elif isinstance(data, memoryview):   # its elements in its format, as numpy reads them (a copy)
      lazy = _np_to_lazy(np.array(data), dtype, device)
    elif isinstance(data, (np.ndarray, np.generic)):
      lazy = _np_to_lazy(np.asarray(data), dtype, device)
    else:
      raise TypeError(f"cannot make a tensor from {type(data).__name__}; expected a scalar, list, tuple, numpy array (or an object numpy converts), bytes, bytearray, memoryview or None")
    if requires_grad is not None: _check_requires_grad(requires_grad, lazy.dtype)
    self.lazydata: LazyBuffer = lazy
    self.requires_grad: Optional[bool] = requires_grad
    self._grad: Optional[Tensor] = None
    self._ctx = None
    self._view_of: Optional[tuple] = None   # (source tensor, view Function, its arguments) for a view made by one
    self._views: Optional[list] = None      # weak references to the views made of this tensor (see _rebind)

  def _record_view(self, source: Tensor, function, arguments: dict):
    """self is function(source, **arguments), a view: it follows source when source is given other values."""
    self._view_of = (source, function, arguments)
    if source._views is None: source._views = []
    add_weak_reference(source._views, self)

  @property
  def grad(self) -> Optional[Tensor]: return self._grad

  @grad.setter
  def grad(self, value: Optional[Tensor]):
    """None or a tensor of this tensor's shape, as torch checks (a wrong shape otherwise failed at the next backward)."""
    if value is not None and not isinstance(value, Tensor):
      raise TypeError(f"grad must be None or a Tensor of shape {self.shape}, got {type(value).__name__}")
    if value is not None and value.shape != self.shape:
      raise ValueError(f"grad must be None or a Tensor of shape {self.shape}, got {value.shape}")
    if value is not None and value.device != self.device:
      raise ValueError(f"grad must be on the tensor's device {self.device}, got one on {value.device}")
    if value is not None and dtypes.is_float(self.dtype) and not dtypes.is_float(value.dtype):
      raise TypeError(f"the grad of a {self.dtype.name} tensor must be a float tensor, got {value.dtype.name}")
    self._grad = value

  def _after_op(self) -> Tensor:
    if eager_enabled(): self.realize()
    return self

  # ---- properties
  @property
  def shape(self) -> tuple[int, ...]: return self.lazydata.shape
  @property
  def dtype(self) -> DType: return self.lazydata.dtype
  @property
  def device(self) -> str: return self.lazydata.device
  @property
  def ndim(self) -> int: return len(self.shape)
  @property
  def T(self) -> Tensor: return self.transpose()
  @property
  def mT(self) -> Tensor: return self.transpose(-2, -1)   # torch's: the last two dims swapped
  # the conjugate transposes and the real part are the tensor's own: nbgrad's dtypes are real
  @property
  def mH(self) -> Tensor: return self.mT
  @property
  def H(self) -> Tensor:
    if self.ndim not in (0, 2): raise ValueError(f"H is the transpose of a matrix, got shape {self.shape}; mH transposes batches")
    return self.transpose() if self.ndim == 2 else self
  def adjoint(self) -> Tensor: return self.mT
  @property
  def real(self) -> Tensor: return self
  def conj(self) -> Tensor: return self
  resolve_conj = resolve_neg = conj
  def isreal(self) -> Tensor: return self.ones_like(dtype=dtypes.bool)

  def numel(self) -> int: return math.prod(self.shape)
  def dim(self) -> int: return self.ndim   # torch's names
  ndimension, nelement = dim, numel
  def element_size(self) -> int: return self.dtype.itemsize
  def nbytes(self) -> int: return self.numel() * self.element_size()
  def is_floating_point(self) -> bool: return dtypes.is_float(self.dtype)
  def is_signed(self) -> bool: return not (dtypes.is_unsigned(self.dtype) or self.dtype == dtypes.bool)
  def is_complex(self) -> bool: return False   # nbgrad has no complex dtype
  @property
  def itemsize(self) -> int: return self.dtype.itemsize
  @property
  def is_cuda(self) -> bool: return self.device.startswith("CUDA")
  @property
  def is_cpu(self) -> bool: return self.device.startswith("CPU")
  def get_device(self) -> int:
    """torch's: -1 on the CPU, the GPU's index on CUDA."""
    return int(self.device.partition(":")[2] or 0) if self.is_cuda else -1
  @property
  def is_leaf(self) -> bool: return not self.requires_grad or not self._in_graph()   # torch's: made by the user, or with no graph
  def _in_graph(self) -> bool: return self._ctx is not None and self._ctx is not F.NO_GRAPH   # made by an op that recorded it
  def retain_grad(self) -> Tensor:
    """Nothing to do: backward() keeps the gradient of every tensor it passes through, not only of leaves. A tensor
    that takes no gradient has none to keep: an error, as torch's."""
    if not self.requires_grad: raise RuntimeError(f"retain_grad of a tensor that does not require grad (shape {self.shape}): it gets no gradient")
    return self
  def equal(self, other) -> bool:
    """Whether other has self's shape and values (torch.equal): a Python bool."""
    other = self._operand(other, "equal operand")
    return self.shape == other.shape and bool((self == other).all().item())
  def is_same_size(self, other: Tensor) -> bool: return self.shape == self._operand(other, "is_same_size operand").shape
  def is_nonzero(self) -> bool:
    if self.numel() != 1: raise RuntimeError(f"is_nonzero needs a tensor of one element, got shape {self.shape}")
    return bool(self.item())
  @property
  def size(self) -> ElementCount: return ElementCount(self.shape)

  def __len__(self): return self.shape[0] if self.shape else 1   # tinygrad's: a 0-d tensor has length 1

  def __iter__(self):
    if not self.shape: raise TypeError("iteration over a 0-d tensor")
    return (self[i] for i in range(self.shape[0]))

  # a one-element tensor converts as numpy's and torch's do: float(loss), int(count), f"{loss:.3f}"
  def __float__(self) -> float: return float(self._one_value("float()"))
  def __int__(self) -> int: return int(self._one_value("int()"))
  def __format__(self, spec: str) -> str: return format(self._one_value(f"format spec {spec!r}"), spec) if spec else str(self)
  def _one_value(self, what: str) -> Scalar:
    if self.numel() != 1: raise NotOneElement(f"{what} needs a tensor with one element, got shape {self.shape}")
    return self.item()

  def __reduce__(self):
    """Pickled as its values, dtype, device and requires_grad; the graph is not kept."""
    return _rebuilt, (self.numpy(), self.dtype, self.device, self.requires_grad)

  def __deepcopy__(self, memo):
    """As pickled, and with a copy of the gradient, as torch's deepcopy."""
    copied = memo[id(self)] = _rebuilt(self.numpy(), self.dtype, self.device, self.requires_grad)
    if self.grad is not None: copied.grad = self.grad.__deepcopy__(memo)
    return copied

  def __bool__(self): raise TypeError("the truth value of a Tensor is ambiguous; use .item() or .numpy()")
  def __hash__(self): return id(self)
  def __repr__(self): return f"<Tensor shape={self.shape} dtype={self.dtype} device={self.device!r}>"   # computes nothing

  def __str__(self) -> str:
    """The values, as print() shows them in numpy and torch (this computes the tensor); repr() stays lazy."""
    prefix = "Tensor("
    values = np.array2string(self.numpy(), separator=", ", prefix=prefix)
    shape = f", shape={self.shape}" if self.numel() == 0 and self.ndim > 1 else ""   # as numpy: [] alone hides it
    grad = ", requires_grad=True" if self.requires_grad else ""
    return f"{prefix}{values}{shape}, dtype={self.dtype}, device={self.device!r}{grad})"

  # ---- realizing and reading data
  def schedule(self, *others: Tensor, seen=None) -> list:   # seen: tinygrad's parameter, unused here
    """The kernels a realize would run, in order. Runs nothing and changes nothing."""
    return create_schedule([t.lazydata for t in _tensors(self, others, "schedule")])
  def schedule_with_vars(self, *others: Tensor, seen=None) -> tuple[list, dict]:
    """tinygrad's: the schedule and the values of its symbolic variables, of which nbgrad has none."""
    return self.schedule(*others, seen=seen), {}

  def to_dot(self, *others: Tensor, path=None) -> str:
    """Graphviz dot source of the graph a realize would compute, its nodes framed by kernel (nbgrad/graph/dot.py),
    written to path too when one is given. Runs nothing and changes nothing; GRAPH=1 writes each realize's."""
    source = graph_dot(self.schedule(*others))
    if path is not None:
      with open(path, "w") as f: f.write(source)
    return source

  def realize(self, *others: Tensor, do_update_stats=True) -> Tensor:   # counters are always updated
    realize_nodes([t.lazydata for t in _tensors(self, others, "realize")])
    return self

  def _realized_array(self) -> Optional[np.ndarray]:
    """The CPU buffer's elements as an array of this tensor's shape, read where they lie (a read-only view for any
    but the whole buffer in order), if it is realized and the tensor is one strided window of it (not padded): x[i]
    of a computed x read this way took 3 us, computed into a buffer of its own 90."""
    lazy = self.lazydata
    if not devices.is_cpu(self.device) or lazy.base.buffer is None: return None
    if lazy is lazy.base or lazy.view.is_flat_order(): return lazy.base.buffer.reshape(self.shape)
    return None if (window := lazy.view.strided()) is None else strided_view(lazy.base.buffer, lazy.shape, *window)

  def numpy(self) -> np.ndarray:
    """A numpy copy of the values."""
    if self.numel() == 0: return np.zeros(self.shape, dtype=self.dtype.np)
    if not devices.is_cpu(self.device): return self.to("CPU").numpy()
    array = self._realized_array()   # computed already (it reads self's node once)
    if array is None:
      if (constant := self.lazydata.const_value()) is not None:   # a filled tensor (a setitem's number): no kernel
        return np.full(self.shape, constant, np.float32 if self.dtype == dtypes.bfloat16 else self.dtype.np)
      # computed and read through a tensor of this call's own: another thread's assign may rebind self meanwhile
      array = _detached(self).contiguous().realize()._realized_array()
    if self.dtype == dtypes.bfloat16: return bfloat16_bits_to_float32(array).reshape(self.shape)
    return array.copy()

  def __array__(self, dtype=None, copy=None):
    """The values for numpy: a realized contiguous tensor's buffer itself, read-only (a write behind the graph's
    back would change results built from it but not computed yet; Tensor.assign and setitem write in place), else a
    copy."""
    array = None
    if self.dtype != dtypes.bfloat16 and self.numel() > 0:
      self.realize()
      array = self._realized_array()
    if array is None or not array.flags.c_contiguous:   # a strided window of a buffer (x.T, x[::2]): a copy, writable
      if copy is False and self.dtype == dtypes.bfloat16: raise ValueError("numpy has no bfloat16: np.asarray gives a float32 copy")
      if copy is False: raise ValueError("this tensor's values are not laid out in one buffer: np.asarray needs a copy")
      array = self.numpy()
    elif not copy and (dtype is None or np.dtype(dtype) == array.dtype):
      array = array.view()
      array.flags.writeable = False
      return array
    if dtype is not None and np.dtype(dtype) != array.dtype:
      if copy is False: raise ValueError(f"converting {self.dtype} to {np.dtype(dtype)} needs a copy")
      return array.astype(dtype)
    return array.copy() if copy else array

  def item(self) -> Scalar:
    if self.numel() != 1: raise ShapeMismatch(f"item() needs a tensor with one element, got shape {self.shape}")
    lazy = self.lazydata
    if devices.is_cpu(lazy.device) and lazy.dtype != dtypes.bfloat16 and lazy.base.buffer is not None and (window := lazy.view.strided()):
      return lazy.base.buffer[window[1]].item()   # read where it lies (x[i].item() of a realized x: 19 -> 12.7 us)
    return self.numpy().reshape(-1)[0].item()

  def tolist(self): return self.numpy().tolist()
  def data(self) -> memoryview: return memoryview(self.numpy())

  def detach(self) -> Tensor:
    """The same values outside the graph. Of a tensor whose values are stored (computed, a parameter, a view, given
    by an in-place op) it is a view, as torch's shares the storage: an in-place op on it writes into the tensor (torch's w.detach().normal_()
    of a parameter). Of a result not computed yet it is a tensor of its own: a parameter made as
    (Tensor.randn(n) * 0.01).detach() is updated by rebinding (a write from Python would keep TinyJit from replaying
    its training step); it reads the result's values through a node of its own, so a write into either leaves the
    other."""
    out = _detached(self)
    base = self.lazydata.base
    if self._view_of is not None or (self.requires_grad and not self._in_graph()) or base.buffer is not None or base.assigned:
      out._record_view(self, _MadeBy, {"make": _detached})
    else: out.lazydata = out.lazydata.own_node()
    return out

  def contiguous(self) -> Tensor:
    lazy = self.lazydata
    if lazy is lazy.base or (lazy.base.op is not LoadOps.CONST and lazy.view.is_flat_order()): return self
    return F.Contiguous.apply(self)

  def _buffer_window(self) -> tuple[tuple[int, ...], int]:
    """(strides, offset) in elements of the buffer window a view reads (0 along expanded dims), else the contiguous
    strides of the shape: a computed tensor is stored so, and torch copies where a view would need padding or
    negative strides (a flip)."""
    lazy = self.lazydata if self._view_of is None else self._view_of_stored_root().lazydata
    window = None if lazy is lazy.base or lazy.base.op is LoadOps.CONST else lazy.view.strided()
    return window if window is not None and min(window[0], default=0) >= 0 else (contiguous_strides(self.shape), 0)
  def _view_of_stored_root(self) -> Tensor:
    """self, or its view steps taken again from a stand-in for its root (the tensor it is a view of that is no view)
    stored in order: as torch stores a root, and so its strides are torch's also while the root's node reads another
    tensor's buffer (x.flip(1), Tensor.zeros(3, 4)). self itself where the root holds its own buffer in order."""
    steps, root = [], self
    while root._view_of is not None:
      steps.append(root._view_of[1:])
      root = root._view_of[0]
    held = root.lazydata
    if held is held.base or (held.size == held.base.size and held.view.is_flat_order()): return self   # Tensor.rand's too
    stand_in = type(root).empty(*root.shape, dtype=root.dtype, device=root.device)
    for function, arguments in reversed(steps): stand_in = function.apply(stand_in, **arguments)
    return stand_in
  def stride(self, dim: Optional[int] = None):
    strides = self._buffer_window()[0]
    return strides if dim is None else strides[resolve_axis(dim, self.ndim)]
  def storage_offset(self) -> int: return self._buffer_window()[1]
  def is_contiguous(self) -> bool:
    """Whether the strides are the contiguous ones, dims of size 1 aside (as torch's)."""
    return all(n == 1 or s == c for n, s, c in zip(self.shape, self.stride(), contiguous_strides(self.shape)))

  def contiguous_backward(self) -> Tensor: return F.ContiguousBackward.apply(self)
  def clone(self) -> Tensor: return F.Contiguous.apply(self)   # torch's: a buffer of its own, the gradient flows back
  def copy(self) -> Tensor: return self.clone()                 # numpy's

  def assign(self, x) -> Tensor:
    """Replaces the values in place (same Tensor object); shape, dtype and device must match."""
    return self._write(x)

  def _write(self, x, fills: bool = False) -> Tensor:
    """assign; a fill (fills) may also write the places an expanded view shares (torch's fill_)."""
    if not isinstance(x, Tensor): x = Tensor(x, device=self.device, dtype=self.dtype)
    if x.shape != self.shape: raise ShapeMismatch(f"assign shape mismatch: {self.shape} <- {x.shape}")
    if x.dtype != self.dtype: raise DTypeMismatch(f"assign dtype mismatch: {self.dtype} <- {x.dtype}")
    if x.device != self.device: raise ValueError(f"assign device mismatch: {self.device} <- {x.device}")
    # a view of another tensor writes into that tensor's buffer (w[1:3].assign(v)); any other tensor is rebound to
    # the new values (a write from Python would keep TinyJit from replaying a training step)
    if self._view_of is not None:
      written = self
      while written._view_of is not None: written = written._view_of[0]
      if written.requires_grad and written._in_graph():
        raise NotImplementedError(f"assign into a view of a tensor of shape {written.shape} computed from tensors that require grad "
                                  "is not supported: its gradient would still flow through the overwritten elements")
      set_index(self, Ellipsis, x, fills)   # as in tinygrad, also when w requires grad
      return self
    if x.lazydata is self.lazydata: return self
    if (recorder := devices.recording.recorder) is not None: recorder.assigning(self, self.lazydata)
    held_before = (self.lazydata, self._ctx, self.requires_grad)   # what a failed computation of the value gives back
    if (self.requires_grad and not self._in_graph()) or not x.requires_grad:   # a parameter's update (w - lr * g) keeps it a leaf
      value = x.lazydata.unshared()   # x and self share no buffer: a write into one leaves the other, as torch's copy_
      if self._in_graph(): self._ctx, self.requires_grad = None, x.requires_grad   # its history is overwritten
      elif self._ctx is F.NO_GRAPH: self._ctx = None   # made under no_grad: now a leaf with new values
    else:   # a tensor given a value that requires grad takes x's graph, as torch's copy_
      carried = F.Assigned.apply(x)
      value, self._ctx, self.requires_grad = carried.lazydata, carried._ctx, carried.requires_grad
    value.base.assigned = True
    if value is value.base and value.buffer is None: value.assigned_over = (weakref.ref(self), *held_before)   # see device.realize
    self._rebind(value)
    return self._after_op()

  def replace(self, x: Tensor) -> Tensor:
    if not isinstance(x, Tensor): raise TypeError(f"replace takes a Tensor, got {type(x).__name__}")
    if x.shape != self.shape: raise ShapeMismatch(f"replace shape mismatch: {self.shape} <- {x.shape}")
    self._rebind(x.lazydata)
    return self

  def _rebind(self, lazy: LazyBuffer):
    """self holds lazy from now on. A buffer it held is marked as left for other values: a TinyJit whose recorded
    kernels read that buffer copies the new values into it before it replays (opt.lr.assign(...) outside a jitted
    step changes the rate its replays use, as tinygrad's assign into the buffer does)."""
    old = self.lazydata
    if old.base.buffer is not None and old.size == old.base.size and old.view.is_flat_order():   # the whole buffer
      old.base.replaced_by = weakref.ref(self)
    self.lazydata = lazy
    # the views made of self show its new values, as numpy's and torch's views of an array written in place do
    # (row = x[1]; x *= 2 doubles row too); what was computed from self before keeps the values it was built from
    for ref in list(self._views or ()):
      view = ref()
      if view is not None and view._view_of is not None and view._view_of[0] is self:
        _, function, arguments = view._view_of
        view._rebind(function.apply(self, **arguments).lazydata)

  def to(self, device: Optional[str] = None, dtype=None) -> Tensor:
    """These values on another device; gradients flow back through the copy. A gradient already collected comes
    along, as in tinygrad. As torch's, a dtype (t.to(dtypes.float16), t.to(np.float32), t.to("float16"), or dtype=)
    casts."""
    if isinstance(device, Tensor): return self.to(device.device, device.dtype if dtype is None else dtype)   # torch's t.to(other)
    if isinstance(device, (tuple, list)):
      raise NotImplementedError(f"to({device!r}): spreading a tensor over several devices (tinygrad's sharding) is not supported yet")
    if device is not None and (not isinstance(device, str) or device in dtypes.fields()):
      if dtype is not None: raise TypeError(f"Tensor.to got two dtypes: {device!r} and {dtype!r}")
      device, dtype = None, device
    if dtype is not None: return (self if device is None else self.to(device)).cast(dtype)
    device = Device.canonicalize(device)
    if device == self.device: return self
    moved = F.Copy.apply(self, device=device)
    if self.grad is not None: moved.grad = self.grad.to(device)
    return moved

  def cpu(self) -> Tensor: return self.to("CPU")
  def clang(self) -> Tensor: return self.to("CLANG")   # tinygrad's names of CPU devices
  def llvm(self) -> Tensor: return self.to("LLVM")
  def cuda(self) -> Tensor: return self.to("CUDA")
  def llvm_bf16_cast(self, dtype) -> Tensor:
    """tinygrad's: a bfloat16 tensor's values in dtype (its widening by bits, which nbgrad's cast does on every device)."""
    if self.dtype != dtypes.bfloat16: raise TypeError(f"llvm_bf16_cast needs a bfloat16 tensor, got {self.dtype}")
    return self.cast(dtype)

  def to_(self, device: Optional[str]) -> Tensor:
    moved = self.to(device)
    self.lazydata, self.grad = moved.lazydata, moved.grad
    return self

  def cast(self, dtype) -> Tensor:
    if dtype is self.dtype: return self   # the most common call (a product's operands are cast to its dtype), at once
    dtype = to_dtype(dtype)
    if dtype == self.dtype: return self
    # ints and bools carry no gradient, as in torch (flowing back through the cast it came out truncated)
    return F.Cast.apply(self, dtype=dtype) if dtypes.is_float(dtype) else F.Cast.apply(self.detach(), dtype=dtype)._cut_from(self)

  def bitcast(self, dtype) -> Tensor:
    dtype = to_dtype(dtype)
    if dtype.itemsize != self.dtype.itemsize:
      raise ItemSizeMismatch(f"bitcast needs equal item sizes: {self.dtype} is {self.dtype.itemsize} bytes, {dtype} is {dtype.itemsize}")
    if self.requires_grad: raise RuntimeError("bitcast has no gradient: detach() the tensor first")
    return self if dtype == self.dtype else F.Cast.apply(self, dtype=dtype, bitcast=True)

  def float(self) -> Tensor: return self.cast(dtypes.float32)
  def half(self) -> Tensor: return self.cast(dtypes.float16)
  def int(self) -> Tensor: return self.cast(dtypes.int32)
  def bool(self) -> Tensor: return self.cast(dtypes.bool)
  def double(self) -> Tensor: return self.cast(dtypes.float64)   # torch's
  def long(self) -> Tensor: return self.cast(dtypes.int64)       # torch's
  def short(self) -> Tensor: return self.cast(dtypes.int16)      # torch's
  def char(self) -> Tensor: return self.cast(dtypes.int8)        # torch's
  def byte(self) -> Tensor: return self.cast(dtypes.uint8)       # torch's
  def bfloat16(self) -> Tensor: return self.cast(dtypes.bfloat16)
  def astype(self, dtype) -> Tensor: return self.cast(dtype)      # numpy's: t.astype(np.float32)

  # ---- autograd
  def _toposort(self) -> list[Tensor]:
    order, seen, stack = [], set(), [(self, False)]
    while stack:
      node, expanded = stack.pop()
      if expanded:
        order.append(node)
        continue
      if id(node) in seen: continue
      seen.add(id(node))
      stack.append((node, True))
      if node._ctx is not None:
        stack.extend((parent, False) for parent in node._ctx.parents if id(parent) not in seen)
    return order

  def backward(self, gradient: Optional[Tensor] = None, retain_graph: bool = False) -> Tensor:
    """Fills .grad of every leaf that requires it with d(self)/d(leaf); grads accumulate across calls. A tensor
    computed from no tensor that requires grad has no graph: as in tinygrad, only its own .grad (1) is set. One
    computed from them only through ops without a gradient raises, as in torch (tinygrad leaves the grads None); so
    does one computed under Tensor.no_grad or inference_mode, but for a backward inside that block (tinygrad's).
    As torch's: `gradient` (self's shape) seeds a non-scalar self (a vector-Jacobian product); retain_graph keeps
    the graph for another backward through it, which otherwise raises."""
    if gradient is None:
      if self.shape != () and self.numel() != 1:
        raise NotAScalar(f"backward() needs a scalar (one-element) tensor, got shape {self.shape}; pass gradient= for others")
      seed = Tensor(LazyBuffer.full(1.0, self.shape, self.dtype, self.device), requires_grad=False)
    else:
      seed = self._backward_seed(gradient)
    if self._ctx is F.CUT:
      raise RuntimeError("backward() from a tensor no gradient reaches: it was computed from the tensors that require grad only "
                         "through ops without a gradient (comparisons, casts to int or bool, integer ops)")
    if self._ctx is F.NO_GRAPH:
      if Tensor.no_grad:   # still inside the no_grad block, as tinygrad's tests call it: only self's own .grad, as tinygrad's
        self.grad = seed
        return self
      raise RuntimeError("backward() from a tensor computed under Tensor.no_grad or Tensor.inference_mode(): it has no graph")
    nodes = self._toposort()
    if any(node._ctx is F.RELEASED for node in nodes):
      raise RuntimeError("backward() through a graph an earlier backward() used and freed: compute the result again")
    if any(node._ctx is F.REPLAYED for node in nodes):
      raise RuntimeError("backward() from the result of a TinyJit replay, which runs the recorded kernels and builds no graph: "
                         "call backward() inside the jitted function (as a training step does)")
    self.grad = hooks.hooked_gradient(self, seed)
    hooks.gradient_accumulated(self)
    # each node's gradient parts, summed when its turn comes (after all its users); only this pass's sum flows on
    # (a .grad kept from an earlier backward through a retained graph does not)
    contributions: dict[int, list] = {id(self): []}
    for node in reversed(nodes):
      if (parts := contributions.pop(id(node), None)) is None: continue
      if node is self: total = self.grad
      else:
        total = hooks.hooked_gradient(node, Tensor(F.summed_gradient(parts, node.shape), device=self.device, requires_grad=False))
        with _GRAD_ACCUMULATION:
          node.grad = total if node.grad is None else node.grad + total
        hooks.gradient_accumulated(node)
      if node._ctx is None or node._ctx is F.NO_GRAPH: continue   # a leaf, or made under no_grad: no graph behind it
      node._ctx.check_inputs_unwritten()
      grads = node._ctx.backward(total.lazydata)
      grads = grads if isinstance(grads, tuple) else (grads,)
      for parent, grad in zip(node._ctx.parents, grads):
        if grad is None or not parent.requires_grad: continue
        if not isinstance(grad, F.SliceGradient) and grad.shape != parent.shape:
          raise RuntimeError(f"internal: grad shape {grad.shape} for {parent.shape}")
        contributions.setdefault(id(parent), []).append(grad)
      if not retain_graph: node._ctx = F.RELEASED   # the graph is freed as it is used, as in PyTorch
    return self

  def _backward_seed(self, gradient) -> Tensor:
    if not isinstance(gradient, Tensor): gradient = Tensor(gradient, dtype=self.dtype, device=self.device)
    if gradient.shape != self.shape:
      raise ValueError(f"backward(gradient): the gradient's shape {gradient.shape} differs from the tensor's {self.shape}")
    if gradient.device != self.device:
      raise RuntimeError(f"backward(gradient): the gradient is on {gradient.device}, the tensor on {self.device}")
    if not dtypes.is_float(gradient.dtype):
      raise TypeError(f"backward(gradient): the gradient must be floating point, got {gradient.dtype}")
    return gradient.detach().cast(self.dtype)

  # ---- creation
  @staticmethod
  def empty(*shape, dtype=None, device=None, **kwargs) -> Tensor:
    dtype = to_dtype(dtype) if dtype is not None else dtypes.default_float
    lazy = LazyBuffer.load(LoadOps.EMPTY, shape_arg(*shape) if shape else (), dtype, Device.canonicalize(device))
    return Tensor(lazy, **kwargs)

  @staticmethod
  def full(shape, fill_value: Scalar, dtype=None, device=None, **kwargs) -> Tensor:
    shape = shape_arg(shape)
    if not isinstance(fill_value, (bool, int, float, np.generic)): raise TypeError(f"fill value must be a number, got {fill_value!r}")
    dtype = to_dtype(dtype) if dtype is not None else filled_dtype(fill_value)
    check_storable(fill_value, dtype, "fill value")
    return Tensor(LazyBuffer.full(fill_value, shape, dtype, Device.canonicalize(device)), **kwargs)

  @staticmethod
  def zeros(*shape, dtype=None, **kwargs) -> Tensor:
    return Tensor.full(shape_arg(*shape) if shape else (), 0.0, dtype=dtype or dtypes.default_float, **kwargs)

  @staticmethod
  def ones(*shape, dtype=None, **kwargs) -> Tensor:
    return Tensor.full(shape_arg(*shape) if shape else (), 1.0, dtype=dtype or dtypes.default_float, **kwargs)

  @staticmethod
  def arange(start, stop=None, step=1, dtype=None, device=None, **kwargs) -> Tensor:
    if stop is None: start, stop = 0, start
    start, stop, step = (v.item() if isinstance(v, Tensor) and v.ndim == 0 else v for v in (start, stop, step))   # as torch takes them
    for v in (start, stop, step):
      if not isinstance(v, (int, float, np.integer, np.floating)): raise TypeError(f"arange bounds must be numbers, got {v!r}")
    if step == 0: raise ValueError("arange step must not be 0")
    if not all(math.isfinite(v) for v in (start, stop, step)): raise ValueError(f"arange bounds must be finite, got {start}, {stop}, {step}")
    floats = any(isinstance(v, (float, np.floating)) for v in (start, stop, step))
    exact = math.ceil((stop - start) / step) if floats else -(-(int(stop) - int(start)) // int(step))   # ints past 2**53 too
    count = check_element_count((max(0, exact),))[0]
    if dtype is None:   # ints past int32 widen to int64, as Tensor(2**40) does
      dtype = dtypes.default_float if floats else int_dtype_holding(*sorted((int(start), int(start) + (max(count, 1) - 1) * int(step))))
    dtype = to_dtype(dtype)
    lazy = LazyBuffer.load(LoadOps.ARANGE, (count,), dtype, Device.canonicalize(device), arg=(start, step))
    return Tensor(lazy, **kwargs)

  @staticmethod
  def linspace(start, end, steps: int, dtype=None, device=None, **kwargs) -> Tensor:
    """steps evenly spaced values from start to end, both included (torch's linspace): the first half counted from
    start and the second from end, so both ends are exact. As torch: the bounds and the step in float32 for float32
    (else float64), each value with one rounding (torch's fused multiply-add; float64 here, exact for float32)."""
    _check_int("linspace steps", steps)
    for v in (start, end): _check_number("linspace bound", v)
    dtype = to_dtype(dtype) if dtype is not None else dtypes.default_float
    if not dtypes.is_float(dtype): start, end = int(start), int(end)   # torch's: the bounds as ints, then the steps
    number = np.float32 if dtype == dtypes.float32 else np.float64
    start, end = number(start), number(end)
    step = float((end - start) / number(steps - 1)) if steps > 1 else 0.0
    start, end = float(start), float(end)
    i = Tensor.arange(steps, dtype=dtypes.float64, device=device)
    values = (i < max(steps // 2, 1)).where(start + i * step, end - (steps - 1 - i) * step)   # one step: start
    return Tensor(values.cast(dtype).lazydata, **kwargs)

  @staticmethod
  def logspace(start, end, steps: int, base: float = 10.0, dtype=None, device=None, **kwargs) -> Tensor:
    """base ** linspace(start, end, steps) (torch's logspace)."""
    exponents = Tensor.linspace(start, end, steps, dtype=dtypes.float64, device=device)
    return Tensor(exponents.pow(base, reverse=True).cast(to_dtype(dtype) if dtype is not None else dtypes.default_float).lazydata, **kwargs)

  @staticmethod
  def eye(dim: int, m: Optional[int] = None, dtype=None, device=None, **kwargs) -> Tensor:
    m = dim if m is None else m
    shape_arg(dim, m)
    rows = Tensor.arange(dim, device=device).reshape(dim, 1)
    cols = Tensor.arange(m, device=device).reshape(1, m)
    return Tensor((rows == cols).cast(dtype or dtypes.default_float).lazydata, **kwargs)

  # ---- random (threefry, bit-identical to tinygrad 0.9.0)
  @staticmethod
  def manual_seed(seed: int = 0):
    """Seeds the generator and resets its counter."""
    if not _is_int(seed): raise TypeError(f"manual_seed takes an int seed, got {seed!r}")
    GeneratorState.manual_seed(seed)

  @staticmethod
  def _draw(kind: str, shape, a: float, b: float, device, **kwargs) -> Tensor:
    """One fused threefry kernel: float32 values of a rand/randn draw, with the affine step fused in."""
    shape = shape_arg(*shape) if shape else ()
    n = math.prod(shape)
    if n == 0: return Tensor.zeros(shape, device=device, **kwargs)
    lazy = LazyBuffer.load(LoadOps.CUSTOM, (n,), dtypes.float32, Device.canonicalize(device),
                           arg=GeneratorState.draw(kind, n, a, b))
    return Tensor(lazy.reshape(shape), **kwargs)._after_op()

  @staticmethod
  def rand(*shape, dtype=None, device=None, **kwargs) -> Tensor:
    out = Tensor._draw("rand", shape, 0.0, 1.0, device)
    return Tensor(out.cast(dtype or dtypes.default_float).lazydata, **kwargs)

  @staticmethod
  def randn(*shape, dtype=None, device=None, **kwargs) -> Tensor:
    out = Tensor._draw("randn", shape, 0.0, 1.0, device)
    return Tensor(out.cast(dtype or dtypes.default_float).lazydata, **kwargs)

  @staticmethod
  def uniform(*shape, low=0.0, high=1.0, dtype=None, device=None, **kwargs) -> Tensor:
    _check_number("uniform low", low)
    _check_parameter("uniform high", high, lambda v: v >= low, f"at least low={low}")
    dtype = to_dtype(dtype) if dtype is not None else dtypes.default_float
    if dtype == dtypes.float32: return Tensor(Tensor._draw("rand", shape, low, high, device).lazydata, **kwargs)
    scaled = (high - low) * Tensor.rand(*shape, device=device)
    if dtypes.is_int(dtype) and all(isinstance(b, (int, np.integer)) and not isinstance(b, bool) for b in (low, high)):
      # tinygrad's int cast of the scaled draw wraps where it passes the dtype's range (randint over all of int32), and
      # low added then wraps back: so in uint64 (the draw kept under 2^64), cast to the dtype (its low bits) last
      out = (scaled.minimum(UINT64_BELOW_2_64_F32).cast(dtypes.uint64) + int(low) % 2**64).cast(dtype)
    else: out = scaled.cast(dtype) + low   # int dtype, float low: float
    return Tensor(out.lazydata, **kwargs)

  @staticmethod
  def randint(*shape, low=0, high=10, dtype=None, device=None, **kwargs) -> Tensor:
    if len(shape) > 1 and isinstance(shape[-1], (tuple, list)):   # torch's randint(low, high, size)
      raise TypeError(f"randint takes the shape, then low= and high= (Tensor.randint(*size, low=..., high=...)), got {shape}")
    for bound in (low, high):
      if not isinstance(bound, (int, np.integer)) or isinstance(bound, bool):
        raise TypeError(f"randint bounds must be ints, got low={low!r} high={high!r}")
    dtype = to_dtype(dtype) if dtype is not None else dtypes.int32
    if not dtypes.is_int(dtype): raise TypeError(f"randint needs an int dtype, got {dtype}")
    if low >= high: raise ValueError(f"randint needs low < high, got low={low} high={high}")
    if low < dtypes.min(dtype) or high - 1 > dtypes.max(dtype): raise ValueError(f"randint bounds [{low}, {high}) do not fit {dtype}")
    return Tensor.uniform(*shape, low=low, high=high, dtype=dtype, device=device, **kwargs)

  @staticmethod
  def normal(*shape, mean=0.0, std=1.0, dtype=None, device=None, **kwargs) -> Tensor:
    _check_number("normal mean", mean)
    _check_parameter("normal std", std, lambda v: v >= 0, "at least 0")
    dtype = to_dtype(dtype) if dtype is not None else dtypes.default_float
    if dtype == dtypes.float32: return Tensor(Tensor._draw("randn", shape, mean, std, device).lazydata, **kwargs)
    return Tensor((std * Tensor.randn(*shape, dtype=dtype, device=device) + mean).lazydata, **kwargs)

  @staticmethod
  def scaled_uniform(*shape, **kwargs) -> Tensor:
    dims = shape_arg(*shape) if shape else ()
    return Tensor.uniform(*dims, low=-1.0, high=1.0, **kwargs).mul(max(math.prod(dims), 1) ** -0.5)   # zero-size: no scale

  @staticmethod
  def glorot_uniform(*shape, **kwargs) -> Tensor:
    dims = shape_arg(*shape) if shape else ()
    if not dims: raise ValueError("glorot_uniform needs a shape of at least one dim")
    return Tensor.uniform(*dims, low=-1.0, high=1.0, **kwargs).mul((6 / max(dims[0] + math.prod(dims[1:]), 1)) ** 0.5)

  @staticmethod
  def kaiming_uniform(*shape, a: float = 0.01, **kwargs) -> Tensor:
    dims = shape_arg(*shape) if shape else ()
    _check_number("kaiming_uniform a", a)
    bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(max(math.prod(dims[1:]), 1))
    return Tensor.uniform(*dims, low=-bound, high=bound, **kwargs)

  @staticmethod
  def kaiming_normal(*shape, a: float = 0.01, **kwargs) -> Tensor:
    dims = shape_arg(*shape) if shape else ()
    _check_number("kaiming_normal a", a)
    std = math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(max(math.prod(dims[1:]), 1))
    return Tensor.normal(*dims, mean=0.0, std=std, **kwargs)

  @staticmethod
  def randperm(n: int, dtype=None, device=None, **kwargs) -> Tensor:
    """torch's randperm: the numbers 0..n-1 in an order drawn from the generator (the argsort of n uniform draws),
    int32 by default, as nbgrad's other indices."""
    _check_int("randperm n", n, 0)
    return Tensor(Tensor.rand(n, device=device).argsort().cast(dtype or dtypes.int32).lazydata, **kwargs)

  def multinomial(self, num_samples: int = 1, replacement: bool = False) -> Tensor:
    """Samples category indices (int32) from 1-D or 2-D weights; without replacement each draw removes
    the category it picked, and once a row's remaining weights are all zero its remaining categories are
    taken uniformly (as torch does)."""
    if not 1 <= self.ndim <= 2: raise ShapeMismatch(f"multinomial needs 1-D or 2-D weights, got shape {self.shape}")
    if not isinstance(num_samples, (int, np.integer)) or isinstance(num_samples, bool) or num_samples < 1:
      raise ShapeMismatch(f"num_samples must be a positive int, got {num_samples!r}")
    num_samples, categories = int(num_samples), self.shape[-1]
    if categories == 0: raise ShapeMismatch(f"multinomial needs at least one category, got shape {self.shape}")
    if not replacement and num_samples > categories:
      raise ShapeMismatch(f"cannot take {num_samples} samples without replacement from {categories} categories")
    weight = (self.unsqueeze(0) if self.ndim == 1 else self).float()
    negative, empty_row, not_finite = Tensor.stack((self < 0).max(), (weight.sum(1) <= 0).max(),
                                                   ((weight != weight) | (weight.abs() == math.inf)).max()).tolist()
    if not_finite: raise ValueError("multinomial weights must be finite (no nan or inf)")
    if negative: raise ValueError("multinomial weights must be non-negative")
    if empty_row: raise ValueError("multinomial weights must have a positive sum in every row")
    rows = weight.shape[0]
    picks, remaining = [], Tensor.ones(rows, categories, device=self.device)
    for _ in range(1 if replacement else num_samples):
      if picks: weight = (weight.sum(1, keepdim=True) > 0).where(weight, remaining)
      cdf = weight.cumsum(1)
      cdf = cdf / cdf[:, -1:]
      count = num_samples if replacement else 1
      u = Tensor.rand(count, rows, 1, device=self.device)
      # the categories whose cumulative share is at most u, counted by a binary search in the (sorted) cdf
      pick = cdf.searchsorted(u.reshape(count, rows).permute(1, 0), right=True).minimum(categories - 1)
      picks.append(pick)
      if not replacement:
        chosen = pick.reshape(rows, 1) == Tensor.arange(categories, device=self.device).reshape(1, categories)
        weight, remaining = chosen.where(0.0, weight), chosen.where(0.0, remaining)
    out = picks[0].cat(*picks[1:], dim=1) if len(picks) > 1 else picks[0]
    return (out.squeeze(0) if self.ndim == 1 else out).cast(dtypes.int32)

  def dropout(self, p: float = 0.5) -> Tensor:
    """Zeroes each element with probability p and scales the rest by 1/(1-p), only when Tensor.training.
    A multiply by the mask, so a dropped nan or inf stays nan (as in torch)."""
    _check_number("dropout probability", p)
    if not 0 <= p <= 1: raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    if not Tensor.training or p == 0: return self
    keep = Tensor.rand(*self.shape, device=self.device) >= p
    return self * keep * (1 / (1 - p)) if p < 1 else self * 0

  def full_like(self, fill_value: Scalar, dtype=None, device=None, **kwargs) -> Tensor:
    return Tensor.full(self.shape, fill_value, dtype=dtype or self.dtype, device=device or self.device, **kwargs)
  def rand_like(self, dtype=None, device=None, **kwargs) -> Tensor:   # torch's, drawn as Tensor.rand draws
    return Tensor.rand(*self.shape, dtype=dtype or self._float_dtype(), device=device or self.device, **kwargs)
  def randn_like(self, dtype=None, device=None, **kwargs) -> Tensor:
    return Tensor.randn(*self.shape, dtype=dtype or self._float_dtype(), device=device or self.device, **kwargs)
  def _float_dtype(self) -> DType: return self.dtype if dtypes.is_float(self.dtype) else dtypes.default_float
  def zeros_like(self, **kwargs) -> Tensor: return self.full_like(0, **kwargs)
  def ones_like(self, **kwargs) -> Tensor: return self.full_like(1, **kwargs)
  # torch's new_*: a tensor of the given shape with self's dtype and device unless given
  def new_full(self, size, fill_value: Scalar, dtype=None, device=None, **kwargs) -> Tensor:
    return Tensor.full(shape_arg(size), fill_value, dtype=dtype or self.dtype, device=device or self.device, **kwargs)
  def new_zeros(self, *size, **kwargs) -> Tensor: return self.new_full(shape_arg(*size), 0, **kwargs)
  def new_ones(self, *size, **kwargs) -> Tensor: return self.new_full(shape_arg(*size), 1, **kwargs)
  def new_empty(self, *size, **kwargs) -> Tensor: return self.new_full(shape_arg(*size), 0, **kwargs)
  def new_tensor(self, data, dtype=None, device=None, requires_grad=None) -> Tensor:
    return Tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
  def type_as(self, other: Tensor) -> Tensor: return self.cast(self._operand(other, "type_as operand").dtype)

  # ---- movement (views: no data moves)
  def reshape(self, shape, *args) -> Tensor:
    shape = tuple(shape) + args if isinstance(shape, (tuple, list, np.ndarray)) else (shape,) + args
    new = shape
    if not all(type(s) is int and s >= 0 for s in shape):   # plain sizes, the common case, skip this (a step makes hundreds)
      shape = _sizes_read(shape)
      if any(s is None for s in shape[self.ndim:]):
        raise ShapeMismatch(f"reshape {shape}: None keeps a dim of {self.shape}, which has only {self.ndim}")
      new = [self.shape[i] if s is None else s for i, s in enumerate(shape)]
      if sum(1 for s in new if s == -1) > 1: raise ShapeMismatch(f"reshape {shape}: only one dimension can be -1")
      if any(not isinstance(s, (int, np.integer)) or s < -1 for s in new): raise ShapeMismatch(f"reshape to invalid shape {shape}")
      if -1 in new:
        known = math.prod(s for s in new if s != -1)
        if known == 0 or self.numel() % known: raise ShapeMismatch(f"cannot reshape {self.shape} to {shape}")
        new = [self.numel() // known if s == -1 else s for s in new]
      new = tuple(int(s) for s in new)
    if math.prod(new) != self.numel(): raise ShapeMismatch(f"cannot reshape {self.shape} ({self.numel()} elements) to {new}")
    return self if new == self.shape else F.Reshape.apply(self, shape=new)

  def view(self, shape, *args) -> Tensor:
    """reshape; given a dtype instead (torch's view(dtype)), the same bits read as that dtype: of another item size,
    the last dim holds as many more or fewer elements (float32 (2, 3) as int8 is (2, 12)), a new tensor."""
    if not args and _is_dtype_like(shape): return self._bits_as(to_dtype(shape))
    return self.reshape(shape, *args)

  def _bits_as(self, dtype: DType) -> Tensor:
    if dtype.itemsize == self.dtype.itemsize: return self.bitcast(dtype)
    if self.requires_grad: raise RuntimeError("view(dtype) has no gradient: detach() the tensor first")
    if self.ndim == 0 or self.shape[-1] * self.dtype.itemsize % dtype.itemsize:
      raise ValueError(f"view({dtype}) of a {self.dtype} tensor of shape {self.shape}: its last dim of {self.dtype.itemsize}-byte "
                       f"elements must hold a whole number of {dtype.itemsize}-byte ones")
    unsigned = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}
    bits = self.bitcast(unsigned[self.dtype.itemsize]).numpy().view(unsigned[dtype.itemsize].np)
    return Tensor(bits, device=self.device).bitcast(dtype)

  def broadcast_to(self, shape) -> Tensor:
    """numpy's and torch's broadcast_to: self's dims matched from the right, size-1 dims stretched, new ones in front."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if len(shape) < self.ndim or broadcast_shape(self.shape, shape) != shape: raise ValueError(f"cannot broadcast {self.shape} to {shape}")
    return self._broadcast_to(shape)

  def tile(self, reps, *args) -> Tensor:
    """numpy's and torch's tile: repeat with reps (a sequence, or torch's ints) padded in front with 1s when shorter
    than the dims."""
    reps = tuple(reps) + args if isinstance(reps, (tuple, list)) else (reps,) + args
    return self.repeat((1,) * (self.ndim - len(reps)) + reps)

  def expand(self, shape, *args) -> Tensor:
    shape = tuple(shape) + args if isinstance(shape, (tuple, list)) else (shape,) + args
    if len(shape) == self.ndim and all(type(s) is int and (s == o or o == 1 and s >= 0) for s, o in zip(shape, self.shape)):
      x, new = self, shape   # the common case, checked in one pass
    else:
      shape = _sizes_read(shape)
      if len(shape) < self.ndim: raise ValueError(f"cannot expand {self.shape} to fewer dims {shape}")
      if any(s in (-1, None) for s in shape[:len(shape) - self.ndim]):
        raise ValueError(f"cannot expand {self.shape} to {shape}: -1 keeps a size, and a new leading dim has none")
      old = (1,) * (len(shape) - self.ndim) + self.shape
      new = tuple(o if s in (-1, None) else s for o, s in zip(old, shape))
      for s in new: _check_int("expand size", s, within=shape)
      new = tuple(int(s) for s in new)   # numpy ints too: a view made with them would be cached for plain ints
      for o, s in zip(old, new):
        if o != s and o != 1: raise ValueError(f"cannot expand {self.shape} to {shape}")
      x = self.reshape(old) if old != self.shape else self
    check_element_count(new)
    return x if new == x.shape else F.Expand.apply(x, shape=new)

  def permute(self, order, *args) -> Tensor:
    order = tuple(order) + args if isinstance(order, (tuple, list, np.ndarray)) else (order,) + args
    resolved = tuple(resolve_axis(o, self.ndim) for o in order)
    if sorted(resolved) != list(range(self.ndim)): raise ShapeMismatch(f"permute order {order} is not a permutation of {self.ndim} dims")
    return self if resolved == tuple(range(self.ndim)) else F.Permute.apply(self, order=resolved)

  def movedim(self, source, destination) -> Tensor:
    """Dims source moved to positions destination, the others keeping their order (torch's movedim, numpy's moveaxis)."""
    source = tuple(source) if isinstance(source, (tuple, list)) else (source,)
    destination = tuple(destination) if isinstance(destination, (tuple, list)) else (destination,)
    if len(source) != len(destination): raise ValueError(f"movedim needs as many destinations as sources: {source} and {destination}")
    moved = [resolve_axis(d, self.ndim) for d in source]
    places = [resolve_axis(d, self.ndim) for d in destination]
    if len(set(moved)) != len(moved) or len(set(places)) != len(places): raise ValueError(f"movedim dims repeat: {source} to {destination}")
    rest = iter(d for d in range(self.ndim) if d not in moved)
    to_place = dict(zip(places, moved))
    return self.permute([to_place[i] if i in to_place else next(rest) for i in range(self.ndim)])
  moveaxis = movedim

  def expand_as(self, other: Tensor) -> Tensor: return self.expand(self._operand(other, "expand_as operand").shape)
  def reshape_as(self, other: Tensor) -> Tensor: return self.reshape(self._operand(other, "reshape_as operand").shape)
  view_as = reshape_as

  def flip(self, axis=None, *args, dims=None) -> Tensor:
    """The elements in reverse order along the axes (or torch's dims=)."""
    if (axis is None) == (dims is None): raise TypeError("flip takes the axes to reverse, as axis or as torch's dims, once")
    axis = dims if axis is None else axis
    axes = tuple(axis) + args if isinstance(axis, (tuple, list)) else (axis,) + args
    resolved = tuple(resolve_axis(a, self.ndim) for a in axes)
    if len(set(resolved)) != len(resolved): raise ValueError(f"flip axes {axes} repeat a dim")
    if not self.ndim or all(self.shape[a] == 1 for a in resolved): return F.CopyOf.apply(self)   # nothing moves (a 0-d tensor's axis 0): a copy all the same
    return F.Flip.apply(self, axes=resolved)

  def shrink(self, arg) -> Tensor:
    if len(arg) != self.ndim: raise ShapeMismatch(f"shrink {arg} needs one entry per dim of {self.shape}")
    resolved = tuple((0, s) if a is None else tuple(a) for a, s in zip(arg, self.shape))
    for (a, b), s in zip(resolved, self.shape):
      _check_int("shrink bound", a, None, within=arg), _check_int("shrink bound", b, None, within=arg)
      if not 0 <= a <= b <= s: raise ShapeMismatch(f"shrink {arg} is out of range for shape {self.shape}")
    resolved = tuple((int(a), int(b)) for a, b in resolved)
    if all(a == 0 and b == s for (a, b), s in zip(resolved, self.shape)): return self
    return F.Shrink.apply(self, arg=resolved)

  def pad(self, arg, value: Scalar = 0.0, mode: str = "constant") -> Tensor:
    """(before, after) elements added along each dim (None: none), value in them; negative counts crop. torch's other
    modes fill them from the tensor itself: "reflect" (mirrored, the edge not repeated), "replicate" (the edge
    repeated) and "circular" (wrapped around). A flat sequence of ints pads as torch's F.pad: (before, after) pairs
    from the last dim backwards, t.pad((1, 1)) widening the last dim by 2."""
    if len(arg) and all(_is_int(a) for a in arg): return self.pad2d(arg, value, mode)
    if len(arg) != self.ndim: raise ShapeMismatch(f"pad {arg} needs one entry per dim of {self.shape}")
    for a in arg:
      if a is not None and (not isinstance(a, (tuple, list)) or len(a) != 2 or
                            not all(_is_int(v) for v in a)):
        raise ValueError(f"pad {arg}: each entry must be None or a (before, after) pair of ints, got {a!r}")
    resolved = tuple((0, 0) if a is None else (int(a[0]), int(a[1])) for a in arg)
    if mode != "constant": return self._pad_from_self(resolved, mode)
    if any(b < 0 or a < 0 for b, a in resolved):   # negative padding crops
      for (b, a), size in zip(resolved, self.shape):
        if -min(b, 0) - min(a, 0) > size: raise ShapeMismatch(f"pad {arg} crops more than the {size} elements of a dim of {self.shape}")
      x = self.shrink(tuple((-min(b, 0), s + min(a, 0)) for (b, a), s in zip(resolved, self.shape)))
      return x.pad(tuple((max(b, 0), max(a, 0)) for b, a in resolved), value)
    if all(b == 0 and a == 0 for b, a in resolved): return F.CopyOf.apply(self)   # a copy all the same
    if isinstance(value, int): check_storable(value, self.dtype, "pad value")   # a float value makes the result float
    check_element_count(tuple(b + size + a for (b, a), size in zip(resolved, self.shape)))
    padded = F.Pad.apply(self, arg=resolved)
    if value == 0 and math.copysign(1, value) > 0: return padded   # the pads read +0 (-0.0 takes the where below)
    inside = Tensor(LazyBuffer.full(True, self.shape, dtypes.bool, self.device)).pad(resolved)
    return inside.where(padded, value)

  def pad2d(self, padding: Sequence[int], value: Scalar = 0.0, mode: str = "constant") -> Tensor:
    """torch's F.pad order: (before, after) pairs from the last dim backwards."""
    if len(padding) % 2: raise ValueError(f"pad2d needs (before, after) pairs, got {len(padding)} values: {tuple(padding)}")
    pairs = [(padding[i], padding[i + 1]) for i in range(0, len(padding), 2)]
    if len(pairs) > self.ndim: raise ValueError(f"pad2d {padding} pads more dims than {self.shape} has")
    return self.pad(tuple([None] * (self.ndim - len(pairs)) + pairs[::-1]), value, mode)

  def _pad_from_self(self, resolved, mode: str) -> Tensor:
    if mode not in ("reflect", "replicate", "circular"): raise ValueError(f"pad mode must be constant, reflect, replicate or circular, got {mode!r}")

    def grown(t: Tensor, dim: int, before: int, after: int) -> Tensor:
      """t with before and after elements taken from itself along dim, as mode takes them."""
      if before == after == 0: return t
      size = t.shape[dim]
      most = {"reflect": size - 1, "replicate": math.inf if size else 0, "circular": size}[mode]
      if max(before, after) > most:
        raise ValueError(f"{mode} pad {(before, after)} of dim {dim} of {self.shape}: each side takes at most {most} elements")
      def part(start, end): return t.shrink(tuple((start, end) if d == dim else None for d in range(t.ndim)))
      def edge(start, count): return part(start, start + 1).expand(tuple(count if d == dim else s for d, s in enumerate(t.shape)))
      def backwards(piece): return piece.flip(dim) if piece.shape[dim] > 1 else piece   # (flip copies even a dim of 1, as torch's)
      if mode == "reflect": left, right = backwards(part(1, before + 1)), backwards(part(size - after - 1, size - 1))
      elif mode == "replicate": left, right = edge(0, before), edge(size - 1, after)
      else: left, right = part(size - before, size), part(0, after)
      return Tensor.cat(*[p for p in (left, t, right) if p.shape[dim]], dim=dim)

    out = self
    for dim, (before, after) in enumerate(resolved):
      if before == after == 0: continue
      if -min(before, 0) - min(after, 0) > out.shape[dim]:
        raise ShapeMismatch(f"{mode} pad {(before, after)} crops more than the {out.shape[dim]} elements of dim {dim} of {self.shape}")
      def cropped(t, start=-min(before, 0), end=min(after, 0)):
        return t.shrink(tuple((start, t.shape[dim] + end) if d == dim else None for d in range(t.ndim)))
      # negative sides crop, as torch's: circular wraps the values left, reflect and replicate read the whole dim
      if mode == "circular": out = grown(cropped(out), dim, max(before, 0), max(after, 0))
      else: out = cropped(grown(out, dim, max(before, 0), max(after, 0)))
    return out

  def interpolate(self, size=None, mode: str = "linear", align_corners: bool = False, scale_factor=None,
                  recompute_scale_factor=None, antialias: bool = False) -> Tensor:
    """Resampled to size along the last len(size) dims, one dim at a time (torch's F.interpolate of those dims, the
    leading ones kept): "nearest", "nearest-exact" (the nearest source sample by position), "linear" (also named
    "bilinear" and "trilinear" for 2 and 3 dims; align_corners puts the corner samples of input and output on each
    other), "bicubic" (torch's cubic convolution, separable, of any number of dims) or "area" (adaptive average
    pooling); "linear" by default, where torch's F.interpolate (nbgrad.nn.functional's too) takes "nearest". Or
    scaled by scale_factor (one number: the dims after (N, C); or one per last dim): torch's sizes
    floor(size * factor), the factor mapping positions unless recompute_scale_factor. Positions are computed as
    torch computes them: Tensor.ones(1, 1, 2).interpolate(scale_factor=2).shape == (1, 1, 4). antialias (bilinear
    and bicubic, as torch's): a downscale filters over the whole span of input each output covers. An integer image
    (uint8) keeps its dtype, rounded and clamped after each dim as torch's uint8 kernels do."""
    return sampling.interpolate(self, size, mode, align_corners, scale_factor, recompute_scale_factor, antialias)

  def transpose(self, dim0: int = 1, dim1: int = 0) -> Tensor:
    """dim0 and dim1 swapped (tinygrad's and torch's); given one order of all dims (numpy's a.transpose(order), which
    np.moveaxis calls), permuted by it."""
    if isinstance(dim0, (list, tuple)): return self.permute(dim0)
    a, b = resolve_axis(dim0, self.ndim), resolve_axis(dim1, self.ndim)
    if self.ndim == 0: return self   # axes 0 and -1 of a 0-d tensor, as torch allows
    order = list(range(self.ndim))
    order[a], order[b] = order[b], order[a]
    return self.permute(order)

  def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    start, end = resolve_axis(start_dim, self.ndim), resolve_axis(end_dim, self.ndim)   # 0-d: axes 0 and -1
    if self.ndim == 0: return self.reshape(1)
    if start > end: raise ValueError(f"flatten start_dim {start_dim} comes after end_dim {end_dim} for shape {self.shape}")
    return self.reshape(self.shape[:start] + (math.prod(self.shape[start:end + 1]),) + self.shape[end + 1:])

  def ravel(self) -> Tensor: return self.flatten()   # numpy's and torch's
  def swapaxes(self, axis0: int, axis1: int) -> Tensor: return self.transpose(axis0, axis1)   # numpy's and torch's
  swapdims = swapaxes
  def t(self) -> Tensor:
    """The transpose of a matrix; a 0-d or 1-D tensor is itself (torch's t)."""
    if self.ndim > 2: raise ValueError(f"t() transposes tensors of at most 2 dims, got shape {self.shape}; use transpose or mT")
    return self.transpose() if self.ndim == 2 else self

  def narrow(self, dim: int, start: int, length: int) -> Tensor:
    """The length elements from start along dim, a view (torch's narrow; a negative start counts from the end; start
    may be a 0-d int tensor, as torch's)."""
    dim = resolve_axis(dim, self.ndim)
    if isinstance(start, Tensor) and start.ndim == 0 and dtypes.is_int(start.dtype): start = int(start.item())
    _check_int("narrow start", start, low=None)
    _check_int("narrow length", length)
    size = self.shape[dim]
    first = start + size if start < 0 else start
    if not 0 <= first <= size or first + length > size:
      raise IndexError(f"narrow of {length} elements from {start} is out of range for dim {dim} of shape {self.shape}")
    return self.shrink(tuple((first, first + length) if d == dim else None for d in range(self.ndim)))

  def select(self, dim: int, index: int) -> Tensor:
    """The slice at index along dim, without that dim (torch's select): t.select(1, 0) is t[:, 0]."""
    return self[(slice(None),) * resolve_axis(dim, self.ndim) + (index,)]

  def unflatten(self, dim: int, sizes) -> Tensor:
    dim = resolve_axis(dim, self.ndim)
    return self.reshape(self.shape[:dim] + tuple(sizes) + self.shape[dim + 1:])

  def squeeze(self, dim: Optional[int] = None, axis=None) -> Tensor:
    if axis is not None:   # numpy's name (np.squeeze(t, axis=0)), one axis or several
      if dim is not None: raise TypeError("squeeze takes dim or axis, not both")
      axes = sorted({resolve_axis(a, max(self.ndim, 1)) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))}, reverse=True)
      for a in axes:
        if self.ndim and self.shape[a] != 1: raise ValueError(f"cannot squeeze axis {a} of size {self.shape[a]} in shape {self.shape}")
      return functools.reduce(lambda t, a: t.squeeze(a), axes, self)
    if dim is None: return self.reshape(tuple(s for s in self.shape if s != 1))
    if isinstance(dim, (tuple, list)):   # torch's: those of size 1 go, the others stay
      dims = {resolve_axis(d, max(self.ndim, 1)) for d in dim}
      return self.reshape(tuple(s for i, s in enumerate(self.shape) if not (i in dims and s == 1)))
    if self.ndim == 0: resolve_axis(dim, 1)
    else: dim = resolve_axis(dim, self.ndim)
    return self if self.ndim == 0 or self.shape[dim] != 1 else self.reshape(self.shape[:dim] + self.shape[dim + 1:])

  def unsqueeze(self, dim: int) -> Tensor:
    dim = resolve_axis(dim, self.ndim, extra=1)
    return self.reshape(self.shape[:dim] + (1,) + self.shape[dim:])

  def repeat(self, repeats, *args) -> Tensor:
    repeats = tuple(repeats) + args if isinstance(repeats, (tuple, list)) else (repeats,) + args
    if len(repeats) < self.ndim: raise ValueError(f"repeat {repeats} needs at least {self.ndim} entries")
    for r in repeats: _check_int("repeat entry", r, within=repeats)
    base = self.reshape((1,) * (len(repeats) - self.ndim) + self.shape)
    interleaved = [d for s in base.shape for d in (1, s)]
    expanded = [d for r, s in zip(repeats, base.shape) for d in (r, s)]
    out = base.reshape(interleaved).expand(expanded).reshape(tuple(r * s for r, s in zip(repeats, base.shape)))
    return out if out._view_of is None else F.CopyOf.apply(out)   # a copy, as torch's, where strides could express it

  def repeat_interleave(self, repeats, dim: Optional[int] = None) -> Tensor:
    """Each element repeated in place along dim (along the flattened tensor without one), as torch's
    repeat_interleave and numpy's np.repeat: repeats is one count for all, or a count for each element along dim."""
    x = self.flatten() if dim is None else self
    dim = 0 if dim is None else resolve_axis(dim, self.ndim)
    counts = np.asarray(repeats.numpy() if isinstance(repeats, Tensor) else repeats)
    if counts.dtype.kind not in "iu" or counts.ndim > 1 or (counts < 0).any():
      raise ValueError(f"repeat_interleave repeats must be counts >= 0 (an int or one per element), got {repeats!r}")
    if counts.size == 1:
      x = x.unsqueeze(dim + 1)
      return x.expand(x.shape[:dim + 1] + (int(counts.reshape(())),) + x.shape[dim + 2:]).flatten(dim, dim + 1)
    if counts.size != x.shape[dim]:
      raise ValueError(f"repeat_interleave got {counts.size} repeats for the {x.shape[dim]} elements along dim {dim} of {x.shape}")
    return x[(slice(None),) * dim + (Tensor(np.repeat(np.arange(counts.size), counts), device=self.device),)]

  def unfold(self, dim: int, size: int, step: int) -> Tensor:
    """The windows of size elements along dim, step apart, as a new last dim (torch's Tensor.unfold): a view."""
    _check_int("unfold size", size)
    _check_int("unfold step", step, low=1)
    dim = resolve_axis(dim, self.ndim)
    length = self.shape[dim] if self.ndim else 1
    if size > length: raise ValueError(f"unfold size {size} is more than the {length} elements along dim {dim} of {self.shape}")
    if self.ndim == 0: return self.reshape(1)   # torch: a 0-d tensor's one window
    if size == 0:   # length // step + 1 empty windows, one at each start from 0 to length
      starts = self.movedim(dim, -1).pad(((0, 0),) * (self.ndim - 1) + ((0, 1),))[..., ::step]
      return starts.unsqueeze(-1)[..., :0].movedim(-2, dim)
    return self.movedim(dim, -1)._windows((size,), (step,), (1,)).movedim(-2, dim)

  def rot90(self, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotated k quarter turns in the plane of dims, from the first dim toward the second (numpy's and torch's rot90)."""
    _check_int("rot90 k", k, low=None)
    if len(dims) != 2: raise ValueError(f"rot90 needs two dims, got {dims}")
    first, second = resolve_axis(dims[0], self.ndim), resolve_axis(dims[1], self.ndim)
    if first == second: raise ValueError(f"rot90 dims must differ, got {dims}")
    k %= 4
    if k == 0: return self.clone()
    if k == 2: return self.flip((first, second))
    return self.flip(second).transpose(first, second) if k == 1 else self.transpose(first, second).flip(second)
  def fliplr(self) -> Tensor: return self.flip(1)
  def flipud(self) -> Tensor: return self.flip(0)

  def roll(self, shifts, dims=None) -> Tensor:
    """Elements shifted along dims, those pushed past the end coming back at the start (torch's and numpy's roll);
    without dims, along the flattened tensor."""
    if dims is None:
      if isinstance(shifts, (tuple, list)): raise ValueError(f"roll without dims takes one shift, got {shifts}")
      return self.flatten().roll(shifts, 0).reshape(self.shape)
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(shifts) != len(dims): raise ValueError(f"roll needs one shift per dim: shifts {shifts}, dims {dims}")
    out = self
    for shift, dim in zip(shifts, dims):
      _check_int("roll shift", shift, low=None)
      dim, size = resolve_axis(dim, self.ndim), self.shape[resolve_axis(dim, self.ndim)]
      if size == 0 or shift % size == 0: continue
      before, cut = (slice(None),) * dim, size - shift % size
      out = out[before + (slice(cut, None),)].cat(out[before + (slice(None, cut),)], dim=dim)
    return self.clone() if out is self else out

  def cat(self, *others: Tensor, dim: int = 0) -> Tensor:
    self, others, dim = _listed_with_dim(self, others, dim)
    self, others = _leading_tensor(self, others, "cat")
    tensors = (self,) + others
    if any(t.ndim == 0 for t in tensors):
      raise NoAxisToJoin(f"cat cannot join 0-d tensors (shapes {[t.shape for t in tensors]}): stack them, or reshape them to (1,)")
    dim = resolve_axis(dim, self.ndim)
    for t in others:
      if t.ndim != self.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, self.shape)) if i != dim):
        raise ShapeMismatch(f"cat needs equal shapes except in dim {dim}: {self.shape} and {t.shape}")
    dtype = least_upper_dtype(*(t.dtype for t in tensors))
    if len(tensors) == 1: return F.Assigned.apply(self.cast(dtype))   # a tensor of its own, as torch's (stack([x]) is no view of x)
    # copied into their slots when there are many or big ones, or when all are stored in buffers anyway (computed
    # already, or made by a node of their own: no producer to fuse with): a fused kernel tests every piece at every
    # element (8 realized (64, 128, 32) pieces on the last dim: 14.3 -> 2.0 ms)
    if len(tensors) > CAT_FUSED_MAX or copied_apart(len(tensors), sum(t.numel() for t in tensors), self.device) \
        or all(t.lazydata.base.stored_anyway() for t in tensors):
      return F.Concatenate.apply(*[t.cast(dtype) for t in tensors], dim=dim)
    total = sum(t.shape[dim] for t in tensors)
    out, before = None, 0
    for t in tensors:
      arg = [None] * self.ndim
      arg[dim] = (before, total - before - t.shape[dim])
      piece = t.cast(dtype).pad(tuple(arg))
      if out is None: out = piece
      else:   # each piece chosen in its slot, not added to the others' padding: -0.0 + 0.0 would be 0.0
        out = Tensor(LazyBuffer.full(True, t.shape, dtypes.bool, self.device)).pad(tuple(arg)).where(piece, out)
      before += t.shape[dim]
    return out

  def stack(self, *others: Tensor, dim: int = 0) -> Tensor:
    self, others, dim = _listed_with_dim(self, others, dim)
    self, others = _leading_tensor(self, others, "stack")
    tensors = (self,) + others
    dim = resolve_axis(dim, self.ndim, extra=1)
    for t in others:
      if t.shape != self.shape: raise ShapeMismatch(f"stack needs equal shapes: {self.shape} and {t.shape}")
    if dim == self.ndim or self.shape[dim] == 0: return tensors[0].unsqueeze(dim).cat(*[t.unsqueeze(dim) for t in tensors[1:]], dim=dim)
    # joined along dim, then that dim split in (tensor, its own length): one reshape, not one per tensor
    joined = tensors[0].cat(*tensors[1:], dim=dim)
    return joined.reshape(self.shape[:dim] + (len(tensors), self.shape[dim]) + self.shape[dim + 1:])

  def split(self, sizes, dim: int = 0) -> tuple[Tensor, ...]:
    dim = resolve_axis(dim, self.ndim)
    n = self.shape[dim]
    if not (_is_int(sizes) or isinstance(sizes, (list, tuple)) and all(_is_int(v) for v in sizes)):
      raise TypeError(f"split sizes must be an int or a list of ints, got {sizes!r}")
    if _is_int(sizes):
      sizes = int(sizes)
      if sizes < 0 or (sizes == 0 and n > 0):
        raise ShapeMismatch(f"split size must be positive (0 only for an empty dim), got {sizes} for dim {dim} of {self.shape}")
      sizes = [min(sizes, n - i) for i in range(0, n, sizes)] if n else [0]
    if any(s < 0 for s in sizes): raise ValueError(f"split sizes {list(sizes)} must not be negative")
    if sum(sizes) != n: raise ShapeMismatch(f"split sizes {list(sizes)} do not add up to {n} (dim {dim} of {self.shape})")
    out, start = [], 0
    for s in sizes:
      arg = [None] * self.ndim
      arg[dim] = (start, start + s)
      out.append(self.shrink(tuple(arg)))
      start += s
    return tuple(out)

  def split_with_sizes(self, split_sizes, dim: int = 0) -> tuple[Tensor, ...]: return self.split(list(split_sizes), dim)
  unsafe_split, unsafe_split_with_sizes = split, split_with_sizes   # torch's names for the same parts

  def tensor_split(self, indices_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """Parts along dim (torch's tensor_split, numpy's array_split): n sections of sizes differing by at most one (the
    first ones larger), or the parts between the given indices, read as slice bounds."""
    dim = resolve_axis(dim, self.ndim)
    n = self.shape[dim]
    if isinstance(indices_or_sections, Tensor): indices_or_sections = indices_or_sections.tolist()
    if _is_int(indices_or_sections):
      if indices_or_sections < 1: raise ValueError(f"tensor_split needs at least 1 section, got {indices_or_sections}")
      size, larger = divmod(n, indices_or_sections)
      return self.split([size + 1] * larger + [size] * (indices_or_sections - larger), dim)
    if not all(_is_int(i) for i in indices_or_sections):
      raise TypeError(f"tensor_split takes a number of sections or a list of int indices, got {indices_or_sections!r}")
    bounds = [0, *indices_or_sections, n]
    parts = []
    for start, stop in zip(bounds, bounds[1:]):
      first, last, _ = slice(start, stop).indices(n)
      parts.append(self.shrink(tuple((first, max(first, last)) if d == dim else None for d in range(self.ndim))))
    return tuple(parts)

  def _split_along(self, sections, dim: int, name: str, min_ndim: int) -> tuple[Tensor, ...]:
    if self.ndim < min_ndim: raise ValueError(f"{name} needs a tensor of at least {min_ndim} dims, got shape {self.shape}")
    if _is_int(sections) and (sections < 1 or self.shape[dim] % sections):
      raise ValueError(f"{name} cannot split dim {dim} of {self.shape} into {sections} equal parts")
    return self.tensor_split(sections, dim)
  def hsplit(self, sections) -> tuple[Tensor, ...]: return self._split_along(sections, 1 if self.ndim > 1 else 0, "hsplit", 1)
  def vsplit(self, sections) -> tuple[Tensor, ...]: return self._split_along(sections, 0, "vsplit", 2)
  def dsplit(self, sections) -> tuple[Tensor, ...]: return self._split_along(sections, 2, "dsplit", 3)

  def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along dim, each without it (torch's unbind)."""
    dim = resolve_axis(dim, self.ndim)
    return tuple(self[(slice(None),) * dim + (i,)] for i in range(self.shape[dim]))

  def chunk(self, chunks: int, dim: int = 0) -> list[Tensor]:   # a list, as tinygrad's (split gives a tuple)
    _check_int("chunk count", chunks, None)
    if chunks < 1: raise ShapeMismatch(f"chunk count must be at least 1, got {chunks}")
    dim = resolve_axis(dim, self.ndim)
    if self.shape[dim] == 0: return list(self.split([0] * chunks, dim))
    return list(self.split(math.ceil(self.shape[dim] / chunks), dim))
  unsafe_chunk = chunk

  def __getitem__(self, indices) -> Tensor: return basic_index(self, indices)

  def __setitem__(self, indices, value):
    # a parameter is written under Tensor.no_grad (torch's w[0] = 0 in torch.no_grad()); its gradient is not tracked
    if self.requires_grad and not (Tensor.no_grad and not self._in_graph()):
      raise NotImplementedError(f"setitem on a tensor of shape {self.shape} that requires grad is not supported (but for a leaf, "
                                "under Tensor.no_grad or Tensor.inference_mode)")
    set_index(self, indices, value)

  # ---- elementwise: broadcasting and promotion
  def _const_like(self, value: Scalar, shape: tuple = ()) -> Tensor:
    """A Python scalar as a tensor of shape (a broadcast constant), typed by API.md's scalar rules."""
    if self.dtype.kind == "f" and (type(value) is float or (type(value) is int and -_FLOAT_INT_LIMIT < value < _FLOAT_INT_LIMIT)):
      return Tensor(LazyBuffer.full(value, shape, self.dtype, self.device), requires_grad=False)   # the common case, first
    if isinstance(value, (complex, np.complexfloating)): raise TypeError(f"complex operand {value!r}: nbgrad has no complex dtype")
    if not isinstance(value, (bool, int, float, np.generic)):
      raise TypeError(f"unsupported operand {value!r} ({type(value).__name__}): ops take numbers, Tensors and numpy arrays")
    if isinstance(value, np.generic): value = value.item()
    own = scalar_dtype(value)
    keeps_tensor_dtype = dtypes.is_float(self.dtype) or (dtypes.is_int(self.dtype) and own == dtypes.default_int)
    if isinstance(value, int) and abs(value) >= _FLOAT_INT_LIMIT and dtypes.is_float(self.dtype):
      raise ValueOutOfRange(f"the Python int {value} is too big for a float operand (as Python's float() refuses it)")
    dtype = self.dtype if keeps_tensor_dtype else own
    return Tensor(LazyBuffer.full(value, shape, dtype, self.device), requires_grad=False)   # t * 2 keeps t's False

  def _broadcasted(self, y, reverse: bool = False, match_dtype: bool = True) -> tuple[Tensor, Tensor]:
    x = self
    y = x._from_numpy_operand(y)
    if not isinstance(y, Tensor): y = x._const_like(y, x.shape)
    x._check_same_device(y)
    if match_dtype and x.dtype != y.dtype:
      dtype = least_upper_dtype(x.dtype, y.dtype)
      x, y = x.cast(dtype), y.cast(dtype)
    if reverse: x, y = y, x
    if x.shape == y.shape: return x, y
    shape = broadcast_shape(x.shape, y.shape)
    return x._broadcast_to(shape), y._broadcast_to(shape)

  def _from_numpy_operand(self, y):
    """A numpy operand as torch takes it: an array is a tensor of its dtype on this device, a 0-d one a scalar (so is
    another library's array, a torch CPU tensor)."""
    if isinstance(y, (Tensor, float, int)): return y   # the common operands, without foreign_array's tests
    y = foreign_array(y)
    if not isinstance(y, np.ndarray): return y
    return y.item() if y.ndim == 0 else self._operand(y, "operand")

  def _operand(self, y, name: str, optional=False) -> Optional[Tensor]:
    """A tensor argument of an op; a numpy array (a numpy user's habit, or another library's array read through
    numpy) becomes a tensor of its dtype here."""
    if isinstance(y, Tensor) or (optional and y is None): return y
    y = foreign_array(y)
    if isinstance(y, np.ndarray): return Tensor(y, device=self.device)
    raise TypeError(f"{name} must be a Tensor or a numpy array, got {type(y).__name__}")

  def _check_same_device(self, other: Tensor):
    if self.device != other.device: raise ValueError(f"operands are on different devices: {self.device} and {other.device}")

  def _broadcast_to(self, shape: tuple[int, ...]) -> Tensor:
    shape = tuple(shape)
    if self.shape == shape: return self
    lead = len(shape) - self.ndim
    if lead < 0 or any(o != s and o != 1 for o, s in zip(self.shape, shape[lead:])):
      raise ValueError(f"cannot broadcast shape {self.shape} to {shape}")
    return F.Broadcast.apply(self, shape=shape)

  def _nondiff(self, op, *others: Tensor) -> Tensor:
    for other in others: self._check_same_device(other)
    out = Tensor(self.lazydata.alu(op, *[o.lazydata for o in others]), device=self.device)
    return out._cut_from(self, *others)._after_op()

  def _cut_from(self, *inputs: Tensor) -> Tensor:
    """self, computed without a gradient from inputs, marked as cut from the graph when one of them is in it."""
    if not Tensor.no_grad:
      for t in inputs:   # a plain loop: this runs per op, and a generator costs more
        if t.requires_grad or t._ctx is F.CUT:
          self._ctx = F.CUT
          break
    return self

  def _float_input(self) -> Tensor: return self.cast(least_upper_float(self.dtype))

  def _flat(self, result: Tensor) -> Tensor:
    """result (computed from self without gradient) with a zero gradient to self: the op is flat almost everywhere."""
    return F.ZeroGradient.apply(self, result=result.lazydata)

  # unary
  def neg(self) -> Tensor: return self.logical_not() if self.dtype == dtypes.bool else F.Neg.apply(self)
  def logical_not(self) -> Tensor: return self.cast(dtypes.bool)._nondiff(UnaryOps.NOT)
  def log(self) -> Tensor: return F.Log.apply(self._float_input())
  @_in_float32
  def log2(self) -> Tensor: return F.Log2.apply(self)
  @_in_float32
  def log10(self) -> Tensor:
    """The base-10 logarithm, exact at powers of 10 (numpy's and torch's); its gradient is 1 / (x ln 10)."""
    x = self.detach()
    return _with_derivatives((self,), x._nondiff(UnaryOps.LOG10), (lambda: 1 / (x * math.log(10)),))
  def exp(self) -> Tensor: return F.Exp.apply(self._float_input())
  @_in_float32
  def exp2(self) -> Tensor: return F.Exp2.apply(self)
  def relu(self) -> Tensor: return F.Relu.apply(self)
  @_in_float32
  def sigmoid(self) -> Tensor: return F.Sigmoid.apply(self)
  def sqrt(self) -> Tensor: return F.Sqrt.apply(self._float_input())
  @_in_float32
  def rsqrt(self) -> Tensor: return self.sqrt().reciprocal()
  def sin(self) -> Tensor: return F.Sin.apply(self._float_input())
  @_in_float32
  def cos(self) -> Tensor: return F.Cos.apply(self)
  @_in_float32
  def tan(self) -> Tensor: return self.sin() / self.cos()
  # Where an op changes no value of the dtype (the rounding of ints, abs of unsigned ints) it gives a copy, as torch's.
  def _rounding(self, op) -> Tensor: return self._flat(self._nondiff(op)) if dtypes.is_float(self.dtype) else F.CopyOf.apply(self)
  def trunc(self) -> Tensor: return self._rounding(UnaryOps.TRUNC)
  def ceil(self) -> Tensor: return self._rounding(UnaryOps.CEIL)
  def floor(self) -> Tensor: return self._rounding(UnaryOps.FLOOR)
  def round(self, decimals: int = 0) -> Tensor:
    """Half to even; with decimals (numpy's and torch's), to that many digits after the point (before it, if negative)."""
    _check_int("round decimals", decimals, low=None)
    if decimals == 0 or (decimals > 0 and not dtypes.is_float(self.dtype)): return self._rounding(UnaryOps.RINT)
    scale = 10.0 ** abs(decimals)
    values = self if dtypes.is_float(self.dtype) else self.cast(dtypes.float64)
    rounded = (values * scale).round() / scale if decimals > 0 else (values / scale).round() * scale
    return rounded.cast(self.dtype)
  def square(self) -> Tensor: return self * self
  def sign(self) -> Tensor:
    if self.dtype == dtypes.bool: return F.CopyOf.apply(self)
    signs = (self > 0).cast(self.dtype) - (self < 0).cast(self.dtype)
    return self._flat(signs if not dtypes.is_float(self.dtype) else (self != self).where(self, signs))   # nan stays nan, as numpy
  def abs(self) -> Tensor:
    if self.dtype == dtypes.bool or dtypes.is_unsigned(self.dtype): return F.CopyOf.apply(self)
    if dtypes.is_int(self.dtype): return (self < 0).where(-self, self)   # the minimum stays itself, as in numpy
    # the sign bit cleared: one AND, where relu(x) + relu(-x) took two NaN-aware maxima, a negation and an addition
    # (built on the nodes: as tensor ops, the two bitcasts and the AND took three times a negation's building)
    raw = self.lazydata.cast(signed_int_of_size(self.dtype), bitcast=True)
    magnitude = raw.alu(BinaryOps.AND, raw.const((1 << (8 * self.dtype.itemsize - 1)) - 1)).cast(self.dtype, bitcast=True)
    return _with_derivatives((self,), Tensor(magnitude), (lambda: self.detach().sign(),))
  def reciprocal(self) -> Tensor: return F.Reciprocal.apply(self._float_input())
  def isnan(self) -> Tensor: return self != self
  def isinf(self, detect_positive=True, detect_negative=True) -> Tensor:
    if not dtypes.is_float(self.dtype) or not (detect_positive or detect_negative): return self.zeros_like(dtype=dtypes.bool)
    magnitude = self.abs() if detect_positive and detect_negative else self if detect_positive else -self
    return magnitude == math.inf
  def isfinite(self) -> Tensor: return (self - self) == 0 if dtypes.is_float(self.dtype) else self.ones_like(dtype=dtypes.bool)
  def nan_to_num(self, nan: float = 0.0, posinf: Optional[float] = None, neginf: Optional[float] = None) -> Tensor:
    """NaN, inf and -inf replaced (numpy's and torch's): by default with 0 and the dtype's largest and lowest finite
    values. The gradient passes where the value is kept."""
    if not dtypes.is_float(self.dtype): return self.clone()
    largest = largest_finite(self.dtype)
    out = (self == math.inf).where(largest if posinf is None else posinf, self)
    out = (self == -math.inf).where(-largest if neginf is None else neginf, out)
    return self.isnan().where(nan, out)
  def isposinf(self) -> Tensor: return self.isinf(detect_negative=False)
  def isneginf(self) -> Tensor: return self.isinf(detect_positive=False)
  def signbit(self) -> Tensor:
    """Whether the sign bit is set (numpy's and torch's): True for -0.0 and negative NaNs too."""
    if not dtypes.is_float(self.dtype): return self < 0 if self.is_signed() else self.zeros_like(dtype=dtypes.bool)
    return self.detach().bitcast(signed_int_of_size(self.dtype)) < 0
  def positive(self) -> Tensor:
    if self.dtype == dtypes.bool: raise TypeError("positive needs a number tensor, got bool (as torch)")
    return self
  def frac(self) -> Tensor: return self - self.trunc()   # the gradient is 1, as torch's
  @_in_float32
  def deg2rad(self) -> Tensor: return self * (math.pi / 180)
  @_in_float32
  def rad2deg(self) -> Tensor: return self * (180 / math.pi)
  @_in_float32
  def sinc(self) -> Tensor:
    """sin(pi x) / (pi x), 1 at 0 (numpy's and torch's normalized sinc). The gradient pi (a cos a - sin a) / a^2 (a = pi x)
    is its series below |a| = 1/2, where the difference cancelled (float32's was 0 at 1e-5, 2x off at 1e-4, as torch's)."""
    x = self.detach()
    zero = x == 0
    angle = zero.where(1.0, x) * math.pi   # 0 kept out of the division

    def derivative():
      small = x * math.pi
      near = small.abs() < 0.5
      a = near.where(0.5, angle)
      return math.pi * near.where(small * special.horner(small * small, SINC_SLOPE_SERIES), (a * a.cos() - a.sin()) / (a * a))
    return _with_derivatives((self,), zero.where(1.0, angle.sin() / angle), (derivative,))
  @_in_float32
  def logit(self, eps: Optional[float] = None) -> Tensor:
    """log(p / (1 - p)), p clamped to [eps, 1 - eps] first when eps is given (torch's logit). The gradient is torch's
    1 / (p (1 - p)), 0 outside [eps, 1 - eps] (NaN outside [0, 1] without eps, where the value is NaN): inf at 0 and
    1, where the chain through the division gave inf * 0."""
    x = self.detach()
    p = x if eps is None else x.clip(eps, 1 - eps)

    def derivative():
      slope = 1 / (x * (1 - x))
      return ((x < 0) | (x > 1)).where(math.nan, slope) if eps is None else ((x < eps) | (x > 1 - eps)).where(0, slope)
    return _with_derivatives((self,), (p / (1 - p)).log(), (derivative,))

  # activations
  @_in_float32
  def elu(self, alpha: float = 1.0) -> Tensor:
    positive = self > 0   # expm1 only of the non-positive part: exp(100) = inf would make the gradient nan
    return positive.where(self, alpha * positive.where(0, self).expm1())
  @_in_float32
  def celu(self, alpha: float = 1.0) -> Tensor:
    positive = self > 0   # as elu: expm1 only of the non-positive part
    return positive.where(self, alpha * (positive.where(0, self) / alpha).expm1())
  @_in_float32
  def selu(self) -> Tensor:
    """scale * elu(x, alpha) with torch's constants, those of self-normalizing networks."""
    return 1.0507009873554804934193349852946 * self.elu(1.6732632423543772848170429916717)
  @_in_float32
  def hardsigmoid(self) -> Tensor:
    """relu6(x + 3) / 6 with torch's gradient, 1/6 only strictly between -3 and 3."""
    return (self <= -3).where(0, (self >= 3).where(1, (self + 3) / 6))
  def threshold(self, threshold, value) -> Tensor:
    """x where x > threshold, else value (torch's threshold), in x's dtype."""
    return (self > threshold).where(self, dtypes.as_const(value, self.dtype))
  def rrelu(self, lower: float = 1 / 8, upper: float = 1 / 3, training: bool = False) -> Tensor:
    """torch's randomized leaky relu: in training each element at or below 0 takes its own slope drawn uniformly from
    [lower, upper] (the gradient is that slope); in evaluation leakyrelu with the slope (lower + upper) / 2."""
    if lower > upper: raise ValueError(f"rrelu needs lower <= upper, got lower={lower}, upper={upper}")
    if not training: return self.leakyrelu((lower + upper) / 2)
    slopes = Tensor.uniform(*self.shape, low=lower, high=upper, device=self.device).cast(least_upper_float(self.dtype))
    return (self > 0).where(self, self * slopes)
  def glu(self, dim: int = -1) -> Tensor:
    """The first half of dim gated by the sigmoid of the second half (torch's glu)."""
    axis = resolve_axis(dim, self.ndim)
    if self.ndim == 0 or self.shape[axis] % 2: raise ValueError(f"glu halves dim {dim}: it needs an even size there, got {self.shape}")
    first, second = self.chunk(2, axis)
    return first * second.sigmoid()
  @_in_float32
  def swish(self) -> Tensor: return self * self.sigmoid()
  def silu(self) -> Tensor: return self.swish()
  def relu6(self) -> Tensor: return (self > 6).where(6, self.relu())   # slope 1 at 6, as tinygrad's relu(x) - relu(x-6)
  @_in_float32
  def hardswish(self) -> Tensor: return self * ((self + 3).relu6() * (1 / 6))   # x * 6 first overflowed at 3e38
  @_in_float32
  def expm1(self) -> Tensor:
    """exp(x) - 1 without losing a small x (a primitive: exp(x) - 1 made elu(-1.5e-6) 2% off and elu(-1e-10) 0).
    Its gradient is exp(x), the result + 1."""
    x = self._float_input().detach()
    y = x._nondiff(UnaryOps.EXPM1)
    return _with_derivatives((self,), y, (lambda: y + 1,))
  # tinygrad's formulas (tanh from sigmoid, sinh from exp, ...) cancel near 0: tanh(1e-6) came out 7% off. A
  # Taylor series takes |x| below a limit where its first left-out term is under 1e-7 of the value.
  @_in_float32
  def tanh(self) -> Tensor:
    """One op (nbgrad/jit/runtime.py tanh_f32, tanh_f64): a series near 0, e^(-2|x|) past it; the gradient is
    1 - tanh^2, as torch's."""
    y = self.detach()._nondiff(UnaryOps.TANH)
    return _with_derivatives((self,), y, (lambda: 1 - y * y,))
  @_in_float32
  def sinh(self) -> Tensor:
    x = self
    v = x.detach()   # float64 needs no series: _half_exp_sum keeps its small values
    y = _half_exp_sum(v, -1) if v.dtype == dtypes.float64 else v._by_magnitude(0.25, _odd_series(1 / 6, 1 / 120, 1 / 5040),
                                                                                lambda near: _half_exp_sum(near, -1))
    return _with_derivatives((x,), y, (lambda: x.detach().cosh(),))
  @_in_float32
  def cosh(self) -> Tensor:   # its gradient is sinh, which keeps small x (the difference of exps lost it)
    x = self
    return _with_derivatives((x,), _half_exp_sum(x.detach(), 1), (lambda: x.detach().sinh(),))
  @_in_float32
  def atanh(self) -> Tensor:
    def beyond_series(x):   # from |x|, where log1p's argument 2|x| / (1 - |x|) is not near -1
      magnitude = (2 * x.abs() / (1 - x.abs())).log1p() / 2
      return (x < 0).where(-magnitude, magnitude)
    x = self.detach()   # the gradient is torch's 1 / (1 - x^2): inf at +-1, where the formula's gradient was nan
    return _with_derivatives((self,), x._by_magnitude(0.15, _odd_series(1 / 3, 1 / 5, 1 / 7), beyond_series), (lambda: 1 / (1 - x * x),))
  @_in_float32
  def asinh(self) -> Tensor:
    x = self
    negative = x < 0
    a = negative.where(-x, x)   # asinh is odd: computed for |x|, where log(x + sqrt(x^2 + 1)) does not cancel
    big = a > 1                 # past 1 as log(a) + log(1 + sqrt(1 + 1/a^2)): no a^2 to overflow
    moderate, large = big.where(1, a), big.where(a, 2)   # each formula fed only its own range (finite gradients)
    beyond_series = big.where(large.log() + (1 + (1 + large.reciprocal().square()).sqrt()).log(),
                              (moderate + moderate.square() / (1 + (moderate.square() + 1).sqrt())).log1p())
    out = a._by_magnitude(0.05, _odd_series(-1 / 6, 3 / 40, -5 / 112), lambda _: beyond_series)
    return negative.where(-out, out)
  @_in_float32
  def acosh(self) -> Tensor:
    x = self.detach()
    big = x > 2                 # past 2 as log(x) + log(1 + sqrt(1 - 1/x^2)); below, log1p of (x-1) + sqrt(x^2 - 1)
    near_one, large = big.where(1.5, x), big.where(x, 4)
    value = big.where(large.log() + (1 + (1 - large.reciprocal().square()).sqrt()).log(),
                      ((near_one - 1) + ((near_one - 1) * (near_one + 1)).sqrt()).log1p())
    value = (x < 1).where(math.nan, value)   # below 1 the formula's square can overflow to inf, not nan (x = -1e30)
    # the gradient is torch's 1 / sqrt(x^2 - 1) everywhere, as if the value were not nan below 1
    return _with_derivatives((self,), value, (lambda: (x * x - 1).rsqrt(),))

  @_in_float32
  def erf(self) -> Tensor:
    x = self.detach()   # the gradient is 2 / sqrt(pi) * exp(-x^2)
    return _with_derivatives((self,), x._nondiff(UnaryOps.ERF), (lambda: (-(x * x)).exp() * (2 / math.sqrt(math.pi)),))
  @_in_float32
  def erfc(self) -> Tensor:
    """1 - erf(x) without the cancellation: erfc(10) is 2.1e-45 in float64, not 0."""
    x = self.detach()
    return _with_derivatives((self,), x._nondiff(UnaryOps.ERFC), (lambda: (-(x * x)).exp() * (-2 / math.sqrt(math.pi)),))
  @_in_float32
  def erfinv(self) -> Tensor:
    """The y with erf(y) = x: inf at 1, -inf at -1, nan past them. Its gradient is sqrt(pi)/2 exp(y^2)."""
    x = self.detach()
    y = special.erfinv(x)
    return _with_derivatives((self,), y, (lambda: (y * y).exp() * (math.sqrt(math.pi) / 2),))
  @_in_float32
  def lgamma(self) -> Tensor:
    """log|gamma(x)|: inf at the poles, 0 and the negative integers. Its gradient is digamma."""
    x = self.detach()
    return _with_derivatives((self,), x._nondiff(UnaryOps.LGAMMA), (lambda: x.digamma(),))
  def digamma(self) -> Tensor:
    """The derivative of lgamma, psi(x): -inf at +0, inf at -0 and nan at the negative integers, as torch's."""
    return self.polygamma(0)
  def igamma(self, other) -> Tensor: return special.igamma(self, other, upper=False)
  def igammac(self, other) -> Tensor: return special.igamma(self, other, upper=True)
  @_in_float32
  def polygamma(self, n: int) -> Tensor:
    """The n-th derivative of digamma, torch.polygamma(n, x); the poles are in nbgrad.special.polygamma."""
    _check_int("polygamma n", n)
    x = self.detach()
    return _with_derivatives((self,), special.polygamma(x, n), (lambda: x.polygamma(n + 1),))
  @_in_float32
  def mvlgamma(self, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension p, sum_j<p lgamma(x - j/2) + p(p-1)/4 log(pi). As
    torch's, it does not check x > (p-1)/2: below that it is the same sum, inf where a term is at a pole."""
    _check_int("mvlgamma p", p, 1)
    if p <= MVLGAMMA_TERMS_SUMMED: total = sum((self - j / 2).lgamma() for j in reversed(range(p)))   # torch's order of the terms
    else:   # one reduce, not a graph of p terms (p = 10**6 took a minute to build)
      halves = Tensor.arange(p, device=self.device).cast(self.dtype) / 2
      total = (self.unsqueeze(-1) - halves).lgamma().sum(-1)
    return total + p * (p - 1) / 4 * math.log(math.pi)
  @_in_float32
  def i0(self) -> Tensor:
    """The modified Bessel function of the first kind of order 0. Its gradient is i1."""
    x = self.detach()
    return _with_derivatives((self,), special.bessel(x, 0, False), (lambda: special.bessel(x, 1, False),))
  @_in_float32
  def i0e(self) -> Tensor:
    """i0(x) exp(-|x|), finite for every x."""
    x = self.detach()
    y = special.bessel(x, 0, True)
    return _with_derivatives((self,), y, (lambda: special.bessel(x, 1, True) - x.sign() * y,))
  @_in_float32
  def i1(self) -> Tensor:
    """The modified Bessel function of the first kind of order 1. Its gradient is i0(x) - i1(x)/x, 1/2 at 0 and below
    the smallest normal float, where i1(x) ~ x/2 keeps too few bits for the quotient."""
    x = self.detach()
    y = special.bessel(x, 1, False)
    return _with_derivatives((self,), y, (lambda: x._near_zero().where(0.5, special.bessel(x, 0, False) - y / x),))
  @_in_float32
  def i1e(self) -> Tensor:
    """i1(x) exp(-|x|), finite for every x."""
    x = self.detach()
    y = special.bessel(x, 1, True)
    return _with_derivatives((self,), y, (lambda: x._near_zero().where(0.5, special.bessel(x, 0, True) - y * (x.sign() + x.reciprocal())),))
  def _near_zero(self) -> Tensor: return self.abs() < smallest_normal(self.dtype)   # 0 and the subnormals
  @_in_float32
  def atan(self) -> Tensor:
    x = self.detach()
    return _with_derivatives((self,), x._nondiff(BinaryOps.ATAN2, x.ones_like()), (lambda: 1 / (1 + x * x),))
  # asin and acos as angles of the point (sqrt(1 - x^2), x): (1 - x)(1 + x) keeps the digits 1 - x^2 loses near
  # +-1; the gradients are torch's, inf at +-1 and nan past them
  @_in_float32
  def asin(self) -> Tensor:
    x = self.detach()
    side = ((1 - x) * (1 + x)).sqrt()
    return _with_derivatives((self,), x._nondiff(BinaryOps.ATAN2, side), (lambda: 1 / side,))
  @_in_float32
  def acos(self) -> Tensor:
    x = self.detach()
    side = ((1 - x) * (1 + x)).sqrt()
    return _with_derivatives((self,), side._nondiff(BinaryOps.ATAN2, x), (lambda: -1 / side,))

  def _by_magnitude(self, limit: float, small, large) -> Tensor:
    """small(x) where |x| < limit, large(x) elsewhere. Each branch is fed only inputs in its range (the other
    entries get the limit or 0), so the branch not taken has a finite gradient that where() can zero. The
    limits are set for float32's precision; float64 needs the series only much closer to 0."""
    if self.dtype == dtypes.float64: limit /= 256
    near = self.abs() < limit
    return near.where(small(near.where(self, 0)), large(near.where(limit, self)))
  def hardtanh(self, min_val: float = -1, max_val: float = 1) -> Tensor: return self.clip(min_val, max_val)
  @_in_float32
  def gelu(self, approximate: str = "tanh") -> Tensor:
    """tinygrad's tanh approximation by default (0.5 x (1 + tanh(u)), computed as x sigmoid(2u): no cancellation for
    negative x); approximate="none" is torch's default, x (1 + erf(x / sqrt 2)) / 2."""
    if approximate == "none": return self * (1 + (self * (1 / math.sqrt(2))).erf()) * 0.5
    if approximate != "tanh": raise ValueError(f"gelu approximate must be 'tanh' or 'none', got {approximate!r}")
    return self * (self * (2 * 0.7978845608) * (1 + 0.044715 * self * self)).sigmoid()
  @_in_float32
  def quick_gelu(self) -> Tensor: return self * (self * 1.702).sigmoid()
  def leakyrelu(self, neg_slope: float = 0.01) -> Tensor: return (self > 0).where(self, self * neg_slope)   # any slope, as torch
  @_in_float32
  def mish(self) -> Tensor: return self * self.softplus().tanh()
  @_in_float32
  def softplus(self, beta: float = 1) -> Tensor:
    _check_number("softplus beta", beta)
    if beta == 0: raise ValueError("softplus beta must not be 0")
    # max(beta*x, 0) / beta taken as max(x, 0) (min for beta < 0): beta*x may overflow where x does not
    linear = self.maximum(0) if beta > 0 else self.minimum(0)   # maximum: gradient 1/2 at 0
    return linear + (-(self * beta).abs()).exp().log1p() * (1 / beta)
  @_in_float32
  def log1p(self) -> Tensor:
    """log(1 + x) for x > -1 without losing a small x (softplus(-20) is 2e-9, not 0): Kahan's log(u) * x / (u - 1)
    for u = 1 + x, whose rounding of u cancels out (a five-term series below 0.1 was 21 ulps off in softplus), with
    x / (u - 1) (about 1) taken first: log(u) * x overflowed past 4e36 in float32. Its gradient is 1 / u."""
    x = self.detach()
    u = 1 + x
    exact, infinite = u == 1, u == math.inf
    value = exact.where(x, infinite.where(u, u.log() * (x / (exact | infinite).where(1.0, u - 1))))
    return _with_derivatives((self,), value, (lambda: 1 / u,))
  @_in_float32
  def softsign(self) -> Tensor: return self / (1 + self.abs())
  # 0 within lambd of 0, NaN kept, as torch's
  def hardshrink(self, lambd: float = 0.5) -> Tensor: return (self.abs() <= lambd).where(0, self)
  def softshrink(self, lambd: float = 0.5) -> Tensor:
    """x moved lambd toward 0, and 0 within lambd of it (torch's softshrink)."""
    return (self.abs() <= lambd).where(0, self - self.sign() * lambd)
  @_in_float32
  def tanhshrink(self) -> Tensor: return self - self.tanh()

  # binary
  def add(self, x, reverse=False, *, alpha=1) -> Tensor:
    """self + x (torch's alpha: self + alpha * x)."""
    a, b = self._broadcasted(x if alpha == 1 else self._operand_or_number(x) * alpha, reverse)
    return F.Add.apply(a, b)
  def sub(self, x, reverse=False, *, alpha=1) -> Tensor:
    """self - x (torch's alpha: self - alpha * x)."""
    a, b = self._broadcasted(x if alpha == 1 else self._operand_or_number(x) * alpha, reverse)
    return F.Sub.apply(a, b)
  def mul(self, x, reverse=False) -> Tensor:
    a, b = self._broadcasted(x, reverse)
    return F.Mul.apply(a, b)

  def div(self, x, reverse=False, upcast=True, *, rounding_mode: Optional[str] = None) -> Tensor:
    """self / x; torch's rounding_mode "trunc" or "floor" rounds the quotient toward 0 or down, in the operands' dtype."""
    if rounding_mode is not None: return self._rounded_division(x, reverse, rounding_mode)
    if upcast and not dtypes.is_float(self.dtype) and isinstance(x, (int, np.integer)) and not isinstance(x, bool):
      return self._float_input().div(x, reverse)   # the int goes to the float result as it is, not wrapped to self's dtype
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype): return F.Div.apply(a, b)
    if upcast: return F.Div.apply(a._float_input(), b._float_input())
    if a.dtype == dtypes.bool: a, b = a.cast(dtypes.int32), b.cast(dtypes.int32)
    return a._nondiff(BinaryOps.IDIV, b)

  def _rounded_division(self, x, reverse: bool, rounding_mode: str) -> Tensor:
    if rounding_mode == "floor": return self.floordiv(x, reverse)
    if rounding_mode != "trunc": raise ValueError(f"div rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    a, b = self._broadcasted(x, reverse)
    return a.div(b).trunc() if dtypes.is_float(a.dtype) else a.div(b, upcast=False)

  def floordiv(self, x, reverse=False) -> Tensor:
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype): return a._flat(a._nondiff(BinaryOps.IDIV, b))   # as Python, numpy and torch
    if a.dtype == dtypes.bool: a, b = a.cast(dtypes.int32), b.cast(dtypes.int32)
    quotient = a._nondiff(BinaryOps.IDIV, b)
    remainder = a - quotient * b   # from the quotient: one division, not two (0 where b is 0, as the quotient)
    rounds_down = (remainder != 0) & ((remainder < 0) != (b < 0)) & (b != 0)
    return quotient - rounds_down.cast(a.dtype)

  def mod(self, x, reverse=False) -> Tensor:
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype): return F.Mod.apply(a, b)   # as Python, numpy and torch: the sign of b
    if a.dtype == dtypes.bool: a, b = a.cast(dtypes.int32), b.cast(dtypes.int32)
    remainder = a._nondiff(BinaryOps.MOD, b)
    wrong_sign = (remainder != 0) & ((remainder < 0) != (b < 0))
    return wrong_sign.where(remainder + b, remainder)

  remainder = mod   # torch's name: the sign of the divisor

  def atan2(self, x, reverse=False) -> Tensor:
    """The angle of the point (x, self) in (-pi, pi], as C's atan2(self, x), numpy's arctan2 and torch's atan2 (with
    its gradients, 0 at the origin)."""
    y, x = self._broadcasted(x, reverse)
    if not dtypes.is_float(y.dtype): y, x = y._float_input(), x._float_input()
    if y.dtype in HALF_FLOATS: return in_float32_rounded_to(y.dtype, Tensor.atan2, y, x)
    a, b = y.detach(), x.detach()
    radius = a * a + b * b
    return _with_derivatives((y, x), a._nondiff(BinaryOps.ATAN2, b), (lambda: (radius == 0).where(0.0, b / radius),
                                                                       lambda: (radius == 0).where(0.0, -a / radius)))

  def _reflected_atan2(self, y) -> Tensor: return self.atan2(y, reverse=True)

  def fmod(self, x) -> Tensor:
    """The remainder of the division truncated toward 0, with the sign of the dividend (C's fmod, numpy's and
    torch's; mod takes the divisor's sign). The gradients are torch's: 1 and -trunc(a / b)."""
    a, b = self._broadcasted(x)
    if a.dtype == dtypes.bool: a, b = a.cast(dtypes.int32), b.cast(dtypes.int32)
    if not dtypes.is_float(a.dtype): return a._nondiff(BinaryOps.MOD, b)   # the int op truncates, as C
    dividend, divisor = a.detach(), b.detach()
    magnitude = dividend.abs()._nondiff(BinaryOps.MOD, divisor.abs())   # of two magnitudes mod and fmod agree
    value = ((dividend < 0) | (1 / dividend < 0)).where(-magnitude, magnitude)   # 1 / -0 tells -0 from 0
    return _with_derivatives((a, b), value, (lambda: dividend.ones_like(), lambda: -(dividend / divisor).trunc()))

  def copysign(self, x) -> Tensor:
    """|self| with the sign of x, signed zeros and NaNs included (torch's copysign: ints give floats); x gets no gradient."""
    a, b = self._broadcasted(x)
    if not dtypes.is_float(a.dtype): a, b = a._float_input(), b._float_input()
    flips = b.signbit() != a.signbit()
    return _with_derivatives((a, b), flips.where(-a.detach(), a.detach()), (lambda: flips.where(-1.0, 1.0) * (a != 0), b.zeros_like))

  def heaviside(self, values) -> Tensor:
    """0 below 0, 1 above, values at 0 (torch's heaviside: a NaN gives 0); without a gradient, as torch's."""
    x, at_zero = self._broadcasted(values)
    return (x == 0).where(at_zero, (x > 0).cast(x.dtype)).detach()

  def fmax(self, x) -> Tensor:
    """The larger of each pair, a NaN losing to a number (numpy's and torch's fmax)."""
    a, b = self._broadcasted(x)
    return (b.isnan() | (a >= b)).where(a, b)   # a tie (two NaNs too) is self's, its gradient too (torch's)
  def fmin(self, x) -> Tensor:
    a, b = self._broadcasted(x)
    return (b.isnan() | (a <= b)).where(a, b)

  def float_power(self, x) -> Tensor:
    """self ** x in float64 (torch's float_power)."""
    x = self._from_numpy_operand(x)
    return self.cast(dtypes.float64).pow(x.cast(dtypes.float64) if isinstance(x, Tensor) else float(x))

  def ldexp(self, x) -> Tensor:
    """self * 2 ** x (torch's ldexp: a float result)."""
    x = self._from_numpy_operand(x)
    mantissas = self._float_input()
    exponents = x if isinstance(x, Tensor) else mantissas.full_like(float(x))
    dtype = least_upper_dtype(mantissas.dtype, exponents.dtype) if dtypes.is_float(exponents.dtype) else mantissas.dtype
    wide = dtypes.float64 if dtype == dtypes.float64 else dtypes.float32   # 2 ** -20 is past float16's range, its product not
    return (mantissas.cast(wide) * exponents.cast(wide).exp2()).cast(dtype)

  def nextafter(self, x) -> Tensor:
    """The next value of self's float dtype after self toward x (numpy's and torch's nextafter); no gradient."""
    a, b = self._broadcasted(x)
    if not dtypes.is_float(a.dtype): raise TypeError(f"nextafter needs float tensors, got {a.dtype}")
    a, b = a.detach(), b.detach()
    bits = signed_int_of_size(a.dtype)
    away_from_zero = (b > a) == (a > 0)   # one up in the magnitude's bits, else one down
    moved = (a.bitcast(bits) + away_from_zero.where(1, -1).cast(bits)).bitcast(a.dtype)
    tiny = Tensor(LazyBuffer.full(1, (), bits, a.device)).bitcast(a.dtype)   # the smallest subnormal
    out = (a == 0).where((b < 0).where(-tiny, tiny), moved)
    return (a == b).where(b, (a.isnan() | b.isnan()).where(math.nan, out))

  def logaddexp(self, x) -> Tensor:
    """log(exp(self) + exp(x)) without overflow: the larger plus log1p(exp(-|difference|)) (numpy's and torch's)."""
    return self._log_add(x, base2=False)
  def logaddexp2(self, x) -> Tensor:
    """log2(2 ** self + 2 ** x) without overflow (numpy's and torch's)."""
    return self._log_add(x, base2=True)
  def _log_add(self, x, base2: bool) -> Tensor:
    a, b = self._broadcasted(x)
    a, b = a._float_input(), b._float_input()
    top = a.maximum(b)
    difference = (a - b).abs()
    finite = difference == difference   # equal infinities: their difference is nan, and the larger is the answer
    below = finite.where(-difference, -math.inf)
    return top + (below.exp2().log1p() * (1 / math.log(2)) if base2 else below.exp().log1p())

  def hypot(self, x) -> Tensor:
    """sqrt(self^2 + x^2) without overflow or underflow in the squares: the larger magnitude times sqrt(1 + r^2) for
    the ratio r of the two (inf where either is, NaN or not, as C's hypot); torch's gradients self / h and x / h."""
    a, b = self._broadcasted(x)
    a, b = a._float_input(), b._float_input()
    p, q = a.detach().abs(), b.detach().abs()
    big, small = p.maximum(q), p.minimum(q)
    ratio = (big == 0).where(0.0, small / big)
    h = ((p == math.inf) | (q == math.inf)).where(math.inf, big * (1 + ratio * ratio).sqrt())
    return _with_derivatives((a, b), h, (lambda: a.detach() / h, lambda: b.detach() / h))

  def xlogy(self, x) -> Tensor:
    """self * log(x), 0 where self is 0 (unless x is NaN), with torch's gradients: log(x) (0 where self is 0 and x is
    not positive) and self / x."""
    a, b = self._broadcasted(x)
    a, b = a._float_input(), b._float_input()
    p, q = a.detach(), b.detach()
    value = ((p == 0) & (q == q)).where(0.0, p * q.log())
    return _with_derivatives((a, b), value, (lambda: ((p == 0) & (q <= 0)).where(0.0, q.log()), lambda: p / q))

  def pow(self, x, reverse=False) -> Tensor:
    """self ** x (x ** self when reverse). An integer exponent of an int tensor multiplies (exact, wrapping like
    repeated products), as does one from -3 to 3 of a float tensor (an ulp or two). Other float powers are |b| ** e
    (the POW op, within an ulp) with the sign of a negative base to an odd power, nan for a negative base to a
    non-integer power, and IEEE's special cases.
    16-bit floats compute in float32 and round once, as torch does."""
    if isinstance(x, (int, float)) and not isinstance(x, bool) and self.dtype in HALF_FLOATS:
      return self.cast(dtypes.float32).pow(x, reverse).cast(self.dtype)
    if not reverse and isinstance(x, (int, float)) and not isinstance(x, bool):
      if x == 0.5 and dtypes.is_float(self.dtype): return self.sqrt()
      if isinstance(x, int) and self.dtype == dtypes.float32 and abs(x) >= 2 ** 24:   # not exact as a float32 exponent: odd ones lost their sign
        return self.cast(dtypes.float64).pow(x).cast(self.dtype)
      exact_int = isinstance(x, int) and not dtypes.is_float(self.dtype)   # any size: its bits are multiplied
      # a float base multiplies for small powers only: each squaring doubles the error (x ** 1000 was 200 ulps off)
      small = abs(x) <= 3 or not dtypes.is_float(self.dtype)
      if math.isfinite(x) and x == int(x) and ((small and abs(x) < 2 ** 31) or exact_int):
        base = self._broadcasted(x if abs(x) < 2 ** 31 else 1)[0]   # a huge exponent stored in the base's dtype would wrap
        if base.dtype == dtypes.bool: base = base.cast(dtypes.int32)
        # past 64 bits: an even base's power is 0 from the 64th on, an odd one's repeats with period 2**62 (mod 2**64)
        if x > 2 ** 64: x = 64 + (x - 64) % 2 ** 62
        if x >= 0: return base._pow_by_squaring(int(x))
        return base.reciprocal()._pow_by_squaring(-int(x))   # an int base gives floats, as tinygrad's: 2 ** -1 is 0.5
    base, exponent = self._broadcasted(x, reverse)
    if base.dtype in HALF_FLOATS:
      return base.cast(dtypes.float32).pow(exponent.cast(dtypes.float32)).cast(base.dtype)
    if base.dtype == dtypes.bool: base, exponent = base.cast(dtypes.int32), exponent.cast(dtypes.int32)
    if not dtypes.is_float(base.dtype): return base._int_pow(exponent)
    if reverse and isinstance(x, (int, float)) and x > 0 and x != 1 and math.isfinite(x):
      return F.Pow.apply(base, exponent)   # a positive constant base: no sign or special case to handle
    return base._float_pow(exponent)

  def _pow_by_squaring(self, n: int) -> Tensor:
    if n == 0: return self._flat(self.ones_like())
    result, power = None, self
    while True:
      if n & 1: result = power if result is None else result * power
      n >>= 1
      if not n: return self * 1 if result is self else result   # x ** 1 is a new tensor, not x
      power = power * power

  def _int_pow(self, exponent: Tensor) -> Tensor:
    """Exact integer powers, one bit of the exponent at a time; a negative exponent gives 1 / base rounded
    toward zero (0 unless the base is 1 or -1)."""
    result, power = self.ones_like(), self
    for bit in range(exponent.dtype.itemsize * 8 - (0 if dtypes.is_unsigned(exponent.dtype) else 1)):
      if bit: power = power * power
      result = ((exponent & (1 << bit)) != 0).where(result * power, result)
    if dtypes.is_unsigned(exponent.dtype): return result
    odd = (exponent & 1) != 0
    unit = (self == 1) | ((self == -1) & odd.logical_not())
    return (exponent < 0).where(unit.where(1, (self == -1).where(-1, 0)).cast(self.dtype), result)

  def _float_pow(self, exponent: Tensor) -> Tensor:
    """Float powers with torch's gradients, at the special cases too: exponent * self ** (exponent - 1) by the
    base (0 where the exponent is 0), result * log(self) by the exponent (0 where the base is 0 and the exponent
    is not negative)."""
    base, power = self.detach(), exponent.detach()
    result = base._pow_values(power)
    return _with_derivatives((self, exponent), result, (lambda: (power == 0).where(0.0, power * base._pow_values(power - 1)),
                                                        lambda: ((base == 0) & (power >= 0)).where(0.0, result * base.log())))

  def _pow_values(self, exponent: Tensor) -> Tensor:
    """self ** exponent for floats, without gradient: |b| ** e (the POW op) with the sign of a negative base to an
    odd integer power, nan for a negative base to a non-integer power, and IEEE's special cases."""
    b, e = self, exponent
    e_is_int = e.trunc() == e
    e_is_odd = e_is_int & ((e * 0.5).trunc() != e * 0.5)
    # the cases POW does not answer as IEEE says run as 1 ** 0 and are replaced
    one = ((e == 0) & ((b == 0) | (b.abs() == math.inf) | (b != b))) | ((b.abs() == 1) & (e.abs() == math.inf)) \
      | ((b == 1) & (e != e))
    zero_base = (b == 0) & (e != 0) & (e == e)
    safe = one | zero_base
    magnitude = safe.where(1.0, b).abs()._nondiff(BinaryOps.POW, safe.where(0.0, e))
    negative = b < 0
    result = (negative & e_is_odd).where(-magnitude, magnitude)
    result = (negative & e_is_int.logical_not() & (b != -math.inf)).where(math.nan, result)   # -inf ** 0.5 is inf
    # 0 to a power is 0 or inf; -0 to an odd integer power keeps its sign (1 / -0 tells -0 from 0)
    zero_power = (e > 0).where(0.0, math.inf).cast(self.dtype)
    zero_power = (e_is_odd & ((1.0 / b) < 0)).where(-zero_power, zero_power)
    return one.where(1.0, zero_base.where(zero_power, result))

  # An int scalar past an int tensor's dtype range is wrapped into it first, as in arithmetic (tinygrad's and torch's
  # rule: uint8 maximum(-1) is 255, uint8 > -1 is False); clip alone keeps its bounds' values.
  def maximum(self, x) -> Tensor:
    a, b = self._broadcasted(x)
    if dtypes.is_float(a.dtype): return F.Maximum.apply(a, b)
    return a._nondiff(BinaryOps.MAX, b)

  def minimum(self, x) -> Tensor:
    a, b = self._broadcasted(x)
    if dtypes.is_float(a.dtype): return F.Minimum.apply(a, b)
    return a._nondiff(BinaryOps.MIN, b)

  def _bitwise(self, op, x, reverse=False) -> Tensor:
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype): raise TypeError(f"{op.name.lower()} needs int or bool tensors, got {a.dtype}")
    return a._nondiff(op, b)
  def xor(self, x, reverse=False) -> Tensor: return self._bitwise(BinaryOps.XOR, x, reverse)
  def bitwise_and(self, x, reverse=False) -> Tensor: return self._bitwise(BinaryOps.AND, x, reverse)
  def bitwise_or(self, x, reverse=False) -> Tensor: return self._bitwise(BinaryOps.OR, x, reverse)
  def _logical(self, op, x) -> Tensor:
    a, b = self._broadcasted(x)
    return a.cast(dtypes.bool)._nondiff(op, b.cast(dtypes.bool))
  def logical_and(self, x) -> Tensor: return self._logical(BinaryOps.AND, x)
  def logical_or(self, x) -> Tensor: return self._logical(BinaryOps.OR, x)
  def logical_xor(self, x) -> Tensor: return self._logical(BinaryOps.XOR, x)

  def _shift(self, op, x) -> Tensor:
    x = self._from_numpy_operand(x)
    if isinstance(x, np.integer): x = int(x)
    if isinstance(x, Tensor):   # shifted in the promoted dtype, as torch's (int8 << an int16 tensor is int16; bools count as ints)
      dtype = least_upper_dtype(self.dtype, x.dtype)
      if not dtypes.is_int(dtype):
        raise DTypeMismatch(f"shifts need int tensors, got {self.dtype} shifted by {x.dtype}")
      a, b = self._broadcasted(x, match_dtype=False)
      return a.cast(dtype)._nondiff(op, b.cast(dtype))
    if not dtypes.is_int(self.dtype): raise DTypeMismatch(f"shifts need an int tensor, got {self.dtype}")
    if not isinstance(x, int) or isinstance(x, bool) or x < 0: raise ValueError(f"shift amount must be an int >= 0, got {x!r}")
    # the count is held in the tensor's dtype: 64 (which means the same as any larger count) fits every int dtype
    return self._nondiff(op, Tensor(LazyBuffer.full(min(x, 64), self.shape, self.dtype, self.device)))
  def lshift(self, x) -> Tensor: return self._shift(BinaryOps.SHL, x)
  def rshift(self, x) -> Tensor: return self._shift(BinaryOps.SHR, x)

  def lerp(self, end, weight) -> Tensor:
    """self + weight * (end - self), as torch computes it: from end's side for weights of 1/2 and more (exact at 1),
    the 16-bit types in float32 (each step rounded to float16 was 12.8 ulp off where end - self cancels)."""
    common = least_upper_dtype(self.dtype, *(v.dtype for v in (end, weight) if isinstance(v, Tensor)))
    if common in HALF_FLOATS: return in_float32_rounded_to(common, Tensor.lerp, self, end, weight)
    difference = end - self
    if not isinstance(weight, Tensor): return self + difference * weight if abs(weight) < 0.5 else end - difference * (1 - weight)
    return (weight.abs() < 0.5).where(self + difference * weight, end - difference * (1 - weight))
  def addcmul(self, tensor1, tensor2, value=1) -> Tensor: return self + value * self._operand_or_number(tensor1) * tensor2
  def addcdiv(self, tensor1, tensor2, value=1) -> Tensor: return self + value * self._operand_or_number(tensor1) / tensor2
  def clip(self, min_=None, max_=None, out=None, *, min=None, max=None) -> Tensor:   # noqa: A002
    """Values below min_ raised to it, above max_ lowered to it; torch's keywords min= and max= name the bounds
    too, and numpy's np.clip(t, lo, hi) calls this (out= is refused)."""
    if out is not None: raise TypeError("Tensor.clip returns a new Tensor; it writes no out= array")
    for name, bound, keyword in (("min", min_, min), ("max", max_, max)):
      if bound is not None and keyword is not None: raise TypeError(f"clip got its {name} bound twice ({bound!r} and {name}={keyword!r})")
    min_, max_ = min if min_ is None else min_, max if max_ is None else max_
    if min_ is None and max_ is None: raise ValueError("clip needs min_ or max_")
    min_, max_ = self._clip_bound(min_), self._clip_bound(max_)
    out = self if min_ is None else self.maximum(min_)
    return out if max_ is None else out.minimum(max_)

  def clamp(self, min=None, max=None, out=None) -> Tensor:  # noqa: A002
    """clip's values with torch's gradient (clip, as tinygrad's maximum and minimum, splits it at a tie): self takes
    all of it where min <= self <= max; a tensor bound takes it where self is past it, and max wherever max < min."""
    values = self.clip(min=min, max=max, out=out)
    if Tensor.no_grad or not any(isinstance(t, Tensor) and t.requires_grad for t in (self, min, max)): return values
    x, lo, hi = (t.detach().cast(values.dtype)._broadcast_to(values.shape) if isinstance(t, Tensor) else t for t in (self, min, max))
    def within(): return (x >= lo if hi is None else x <= hi if lo is None else (x >= lo) & (x <= hi)).cast(values.dtype)
    def to_min(): return (x < lo if hi is None else (x < lo) & (lo < hi)).cast(values.dtype)
    def to_max(): return (x > hi if lo is None else (x > hi) | (hi < lo)).cast(values.dtype)
    # by position: one tensor given twice (x.clamp(min=x)) takes both derivatives, summed
    operands = [(t, d) for t, d in ((self, within), (min, to_min), (max, to_max)) if isinstance(t, Tensor)]
    return _with_derivatives(tuple(t.cast(values.dtype)._broadcast_to(values.shape) for t, _ in operands), values.detach(),
                             tuple(d for _, d in operands))

  def _clip_bound(self, bound):
    """An int bound past an int tensor's dtype range taken as the end of the range: clipping to it is the same, and
    the bound does not wrap around into the range (int8 clip(-1000, 1000) changes nothing)."""
    if not dtypes.is_int(self.dtype) or not _is_int(bound): return bound
    return min(max(int(bound), dtypes.min(self.dtype)), dtypes.max(self.dtype))

  def where(self, x, y) -> Tensor:
    cond = self.cast(dtypes.bool)
    x, y = self._from_numpy_operand(x), self._from_numpy_operand(y)
    for v in (x, y):
      if not isinstance(v, (Tensor, bool, int, float, np.number, np.bool_)):
        raise TypeError(f"where takes Tensors and numbers for both values, got {v!r} ({type(v).__name__})")
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):   # two numbers: a dtype that holds both (1 and 2**40: int64)
      x = Tensor(LazyBuffer.full(x, (), least_upper_dtype(filled_dtype(x), filled_dtype(y)), self.device))
    if isinstance(x, Tensor): x, y = x._broadcasted(y)
    else: y, x = y._broadcasted(x)
    shape = broadcast_shape(cond.shape, x.shape)
    return F.Where.apply(cond._broadcast_to(shape), x._broadcast_to(shape), y._broadcast_to(shape))

  def masked_fill(self, mask: Tensor, value) -> Tensor:
    if _is_int(value): check_storable(value, self.dtype, "masked_fill value")   # a float value makes the result float
    return self._operand(mask, "mask").where(value, self)
  def index_select(self, dim: int, index: Tensor) -> Tensor:
    """The slices along dim at the positions of a 1-D int index (torch's index_select)."""
    index = self._operand(index, "index_select index")
    if index.ndim > 1 or dtypes.is_float(index.dtype) or index.dtype == dtypes.bool:
      raise IndexError(f"index_select needs a 1-D int index, got shape {index.shape} of {index.dtype}")
    if self.ndim == 0:   # torch's: a 0-d tensor's only element, for an index of one value
      resolve_axis(dim, 1)
      if index.numel() != 1: raise IndexError(f"index_select of a 0-d tensor takes an index of one value, got shape {index.shape}")
      return self.reshape(1).index_select(0, index).reshape(())
    return self[(slice(None),) * resolve_axis(dim, self.ndim) + (index.reshape(-1),)]

  def masked_select(self, mask: Tensor) -> Tensor:
    """The elements where mask (broadcast with self) is True, in flat order: a 1-D tensor (torch's masked_select)."""
    mask = self._operand(mask, "mask")
    if mask.dtype != dtypes.bool: raise TypeError(f"masked_select needs a bool mask, got {mask.dtype}")
    shape = broadcast_shape(self.shape, mask.shape)
    if not shape: return self.reshape(1)[mask.reshape(1)]   # 0-d: a mask of one element
    return self._broadcast_to(shape)[mask._broadcast_to(shape)]

  # comparisons
  def _compare(self, op, x, reverse=False) -> Tensor:
    x = self._from_numpy_operand(x)   # numpy hands its scalars to __array_ufunc__ as 0-d arrays
    if self.dtype == dtypes.bool and _is_int(x) and not isinstance(x, (bool, np.bool_)):
      # bools against an int compare as the numbers 0 and 1, exactly (torch's); an int past int64 as int64's end
      return self.cast(dtypes.int64)._compare(op, min(max(int(x), dtypes.min(dtypes.int64)), dtypes.max(dtypes.int64)), reverse)
    a, b = self._broadcasted(x, reverse)
    return a._nondiff(op, b)
  def __lt__(self, x) -> Tensor: return self._compare(BinaryOps.CMPLT, x)
  def __gt__(self, x) -> Tensor: return self._compare(BinaryOps.CMPLT, x, reverse=True)
  def __le__(self, x) -> Tensor: return self._compare(BinaryOps.CMPLT, x) | self._compare(BinaryOps.CMPEQ, x)
  def __ge__(self, x) -> Tensor: return self._compare(BinaryOps.CMPLT, x, reverse=True) | self._compare(BinaryOps.CMPEQ, x)
  # t == None and t == "name" are False (and != True) as in torch, so `t in [None, t]` and sentinel checks work
  def __eq__(self, x) -> Tensor: return NotImplemented if _not_a_value(x) else self._compare(BinaryOps.CMPEQ, x)  # type: ignore[override]
  def __ne__(self, x) -> Tensor: return NotImplemented if _not_a_value(x) else self._compare(BinaryOps.CMPNE, x)  # type: ignore[override]

  # torch's names of the comparisons
  def eq(self, x) -> Tensor: return self._compare(BinaryOps.CMPEQ, x)
  def ne(self, x) -> Tensor: return self._compare(BinaryOps.CMPNE, x)
  def lt(self, x) -> Tensor: return self < x
  def le(self, x) -> Tensor: return self <= x
  def gt(self, x) -> Tensor: return self > x
  def ge(self, x) -> Tensor: return self >= x
  less, less_equal, greater, greater_equal, not_equal = lt, le, gt, ge, ne

  def isclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """|self - other| <= atol + rtol * |other| elementwise (numpy's and torch's isclose); equal infinities are
    close, and NaNs are close to each other when equal_nan."""
    for name, tolerance in (("rtol", rtol), ("atol", atol)):
      if not tolerance >= 0: raise ValueError(f"isclose {name} must be >= 0, got {tolerance}")
    a, b = self._broadcasted(other)
    close = (a == b) | (((a - b).abs() <= atol + rtol * b.abs()) & b.isfinite())   # inf is close to itself only
    return close | (a.isnan() & b.isnan()) if equal_nan else close
  def allclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    return bool(self.isclose(other, rtol, atol, equal_nan).all().item())

  # operators
  def __neg__(self) -> Tensor: return self.neg()
  def __invert__(self) -> Tensor:
    if dtypes.is_float(self.dtype): raise TypeError(f"~ (bitwise not) needs an int or bool tensor, got {self.dtype}")
    return self.logical_not() if self.dtype == dtypes.bool else self.xor(-1 if not dtypes.is_unsigned(self.dtype) else
                                                                        dtypes.max(self.dtype))
  def __abs__(self) -> Tensor: return self.abs()
  def __pos__(self) -> Tensor: return self
  def __round__(self, ndigits=None) -> Tensor: return self.round() if ndigits is None else self.round(ndigits)   # half to even
  def __index__(self) -> int:   # a one-element int tensor as a list index or range bound, as in torch
    if dtypes.is_float(self.dtype) or self.numel() != 1: raise TypeError(f"only one-element integer tensors can be an index, got {self.dtype} {self.shape}")
    return int(self.item())
  def __contains__(self, value) -> bool:   # `3 in t`, as in torch
    if _not_a_value(value): raise TypeError(f"`value in tensor` takes a number or a tensor, got {type(value).__name__}")
    return (self == value).sum().item() > 0
  def __add__(self, x) -> Tensor: return self.add(x)
  def __radd__(self, x) -> Tensor: return self.add(x, True)
  def __sub__(self, x) -> Tensor: return self.sub(x)
  def __rsub__(self, x) -> Tensor: return self.sub(x, True)
  def __mul__(self, x) -> Tensor: return self.mul(x)
  def __rmul__(self, x) -> Tensor:   # a sequence times a one-element int tensor repeats the sequence, as torch's
    return NotImplemented if isinstance(x, (list, tuple, str, bytes)) else self.mul(x, True)
  def __truediv__(self, x) -> Tensor: return self.div(x)
  def __rtruediv__(self, x) -> Tensor: return self.div(x, True)
  def __floordiv__(self, x) -> Tensor: return self.floordiv(x)
  def __rfloordiv__(self, x) -> Tensor: return self.floordiv(x, True)
  def __mod__(self, x) -> Tensor: return self.mod(x)
  def __rmod__(self, x) -> Tensor: return self.mod(x, True)
  def __divmod__(self, x) -> tuple[Tensor, Tensor]: return self.floordiv(x), self.mod(x)   # numpy's
  def __rdivmod__(self, x) -> tuple[Tensor, Tensor]: return self.floordiv(x, True), self.mod(x, True)
  def __pow__(self, x) -> Tensor: return self.pow(x)
  def __rpow__(self, x) -> Tensor: return self.pow(x, True)
  def __matmul__(self, x) -> Tensor: return self.matmul(x)
  def __rmatmul__(self, x) -> Tensor: return Tensor(x, device=self.device).matmul(self) if not isinstance(x, Tensor) else x.matmul(self)
  def __xor__(self, x) -> Tensor: return self.xor(x)
  def __rxor__(self, x) -> Tensor: return self.xor(x, True)
  def __and__(self, x) -> Tensor: return self.bitwise_and(x)
  def __rand__(self, x) -> Tensor: return self.bitwise_and(x, True)
  def __or__(self, x) -> Tensor: return self.bitwise_or(x)
  def __ror__(self, x) -> Tensor: return self.bitwise_or(x, True)
  def __lshift__(self, x) -> Tensor: return self.lshift(x)
  def __rshift__(self, x) -> Tensor: return self.rshift(x)
  def __rlshift__(self, x) -> Tensor: return self._operand_or_number(x).lshift(self)
  def __rrshift__(self, x) -> Tensor: return self._operand_or_number(x).rshift(self)
  def _operand_or_number(self, x) -> Tensor:
    """x as a tensor: a numpy array or scalar as a tensor op reads it, a Python number as a constant of self's kind."""
    x = self._from_numpy_operand(x)
    return x if isinstance(x, Tensor) else self._const_like(x)
  def __iadd__(self, x) -> Tensor: return self._in_place(self.add(x))
  def __isub__(self, x) -> Tensor: return self._in_place(self.sub(x))
  def __imul__(self, x) -> Tensor: return self._in_place(self.mul(x))
  def __itruediv__(self, x) -> Tensor: return self._in_place(self.div(x))
  def __ipow__(self, x) -> Tensor: return self._in_place(self.pow(x))
  def __imatmul__(self, x) -> Tensor: return self._in_place(self.matmul(x))
  def __ixor__(self, x) -> Tensor: return self._in_place(self.xor(x))
  def __iand__(self, x) -> Tensor: return self._in_place(self.bitwise_and(x))
  def __ior__(self, x) -> Tensor: return self._in_place(self.bitwise_or(x))
  def __ilshift__(self, x) -> Tensor: return self._in_place(self.lshift(x))
  def __irshift__(self, x) -> Tensor: return self._in_place(self.rshift(x))
  def __ifloordiv__(self, x) -> Tensor: return self._in_place(self.floordiv(x))
  def __imod__(self, x) -> Tensor: return self._in_place(self.mod(x))

  def _in_place(self, result: Tensor, fills: bool = False) -> Tensor:
    """self op= x: the result stored in self, in self's dtype (float32 += a float64 array stays float32, as in torch and
    numpy); a float result cannot go into an int tensor, nor a non-bool into a bool one. A result that is part of a
    gradient graph raises, as in tinygrad (torch raises for a leaf): the graph would go on reading self as it was,
    and the gradients came out wrong. Under Tensor.no_grad (an optimizer's w -= lr * w.grad) no graph is made."""
    if result.requires_grad and result._in_graph():
      raise InPlaceNeedsGradient(f"in-place op on a tensor of shape {self.shape} whose result needs a gradient: write x = x + y, not x += y "
                         "(or detach(), or run it under `with Tensor.inference_mode():` or Tensor.no_grad = True)")
    if result.dtype != self.dtype:
      if (dtypes.is_float(result.dtype) and not dtypes.is_float(self.dtype)) or (self.dtype == dtypes.bool):
        raise DTypeMismatch(f"in-place op: its {result.dtype} result cannot be stored in a {self.dtype} tensor")
      result = result.cast(self.dtype)
    return self._write(result, fills)

  # torch's in-place methods: the result stored back as x += y stores it (see _in_place), the tensor returned
  def add_(self, x, alpha=1) -> Tensor: return self._in_place(self.add(x, alpha=alpha))
  def sub_(self, x, alpha=1) -> Tensor: return self._in_place(self.sub(x, alpha=alpha))
  def mul_(self, x) -> Tensor: return self._in_place(self.mul(x))
  def div_(self, x) -> Tensor: return self._in_place(self.div(x))
  def clamp_(self, min=None, max=None) -> Tensor: return self._in_place(self.clamp(min, max))  # noqa: A002
  def fill_(self, value) -> Tensor:
    """Every element set to value: a number, or a 0-d tensor (torch's)."""
    if isinstance(value, Tensor):
      if value.ndim: raise ValueError(f"fill_ takes a number or a 0-d tensor, got a tensor of shape {value.shape}")
      return self._in_place(value.cast(self.dtype).expand(self.shape))   # a copy in torch: no fill of shared places
    return self._in_place(self.full_like(value), fills=True)
  def zero_(self) -> Tensor: return self.fill_(0)
  # The fills below write into a view only the elements they pick, as torch's: into an expanded view, every place one
  # of them shares (a whole result written in order left a shared place the last element's value)
  def masked_fill_(self, mask, value) -> Tensor:
    """value where mask is True, in self's dtype (torch's: an int tensor takes 1.5 as 1)."""
    if not isinstance(value, Tensor): check_storable(value, self.dtype, "masked_fill_ value")
    if self._view_of is None or self.requires_grad: return self._in_place(self.masked_fill(mask, value).cast(self.dtype))
    set_index(self, self._operand(mask, "mask").cast(dtypes.bool)._broadcast_to(self.shape), value, fills=True)
    return self
  def index_fill_(self, dim: int, index: Tensor, value) -> Tensor:
    if self._view_of is None or self.requires_grad: return self._in_place(self.index_fill(dim, index, value))
    set_index(self, (slice(None),) * resolve_axis(dim, self.ndim) + (self._operand(index, "index").reshape(-1),), value, fills=True)
    return self
  def uniform_(self, a: float = 0.0, b: float = 1.0) -> Tensor:
    return self._in_place(Tensor.uniform(*self.shape, low=a, high=b, dtype=self.dtype, device=self.device))
  def normal_(self, mean: float = 0.0, std: float = 1.0) -> Tensor:
    return self._in_place(Tensor.normal(*self.shape, mean=mean, std=std, dtype=self.dtype, device=self.device))
  # torch's other random fills, from uniform draws u in [0, 1) by the inverse of each distribution's CDF
  def _uniform_draws(self) -> Tensor: return Tensor.rand(*self.shape, device=self.device)
  def exponential_(self, lambd: float = 1.0) -> Tensor:
    _check_parameter("exponential_ lambd", lambd, lambda v: v > 0, "above 0")
    return self._in_place(-(1 - self._uniform_draws()).log() / lambd)
  def cauchy_(self, median: float = 0.0, sigma: float = 1.0) -> Tensor:
    _check_number("cauchy_ median", median)
    _check_parameter("cauchy_ sigma", sigma, lambda v: v > 0, "above 0")
    return self._in_place(median + sigma * (math.pi * (self._uniform_draws() - 0.5)).tan())
  def log_normal_(self, mean: float = 1.0, std: float = 2.0) -> Tensor:
    _check_parameter("log_normal_ std", std, lambda v: v > 0, "above 0")
    return self._in_place(Tensor.normal(*self.shape, mean=mean, std=std, device=self.device).exp())
  def geometric_(self, p: float) -> Tensor:
    """The number of trials up to the first success of probability p in (0, 1) (1, 2, ...), as torch's geometric_."""
    _check_parameter("geometric_ p", p, lambda v: 0 < v < 1, "in (0, 1)")
    return self._in_place(((1 - self._uniform_draws()).log() / math.log1p(-p)).ceil().maximum(1))
  def bernoulli_(self, p: float = 0.5) -> Tensor:
    if not isinstance(p, Tensor): _check_parameter("bernoulli_ p", p, lambda v: 0 <= v <= 1, "in [0, 1]")
    return self._in_place(self._uniform_draws() < p)
  def random_(self, low: int = 0, high: Optional[int] = None) -> Tensor:
    """Integers drawn evenly from [low, high); random_(high) from [0, high), random_() from 0 to the largest integer
    up to which the dtype holds all of them (torch's random_)."""
    for bound in (low, high):
      if bound is not None and not _is_int(bound): raise TypeError(f"random_ bounds must be ints, got {bound!r}")
    if high is not None and low >= high: raise ValueError(f"random_ needs low < high, got low={low} high={high}")
    if high is None:
      mantissa_bits = {dtypes.float16: 11, dtypes.bfloat16: 8, dtypes.float32: 24, dtypes.float64: 53}
      low, high = (0, low) if low else (0, 2 ** mantissa_bits[self.dtype] + 1 if dtypes.is_float(self.dtype) else dtypes.max(self.dtype) + 1)
    draws = Tensor.uniform(*self.shape, low=low, high=high, dtype=dtypes.int64, device=self.device)
    return self._in_place(draws.cast(self.dtype))
  def copy_(self, src) -> Tensor:
    """src's values (broadcast to self's shape, cast to its dtype as torch's copy_ casts, floats to ints too) in self,
    brought from src's device as torch's copy_ brings them."""
    src = self._operand_or_number(src)
    if src.device != self.device: src = src.to(self.device)
    return self.assign(src.cast(self.dtype)._broadcast_to(broadcast_shape(src.shape, self.shape)))

  # torch's and numpy's other names
  absolute, negative, sgn, fix = abs, neg, sign, trunc
  arccos, arcsin, arctan, arctan2, arccosh, arcsinh, arctanh = acos, asin, atan, atan2, acosh, asinh, atanh
  multiply, subtract, divide, true_divide, floor_divide = mul, sub, div, div, floordiv
  bitwise_not, bitwise_xor, bitwise_left_shift, bitwise_right_shift = __invert__, xor, lshift, rshift
  def clamp_min(self, min) -> Tensor: return self.clamp(min=min)  # noqa: A002
  def clamp_max(self, max) -> Tensor: return self.clamp(max=max)  # noqa: A002

  # ---- reductions
  def _reduce_axes(self, axis) -> tuple[int, ...]:
    if axis is None: return tuple(range(self.ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    resolved = tuple(resolve_axis(a, self.ndim) for a in axes)   # a 0-d tensor has axes 0 and -1
    if len(set(resolved)) != len(resolved): raise ValueError(f"axis {axis} repeats a dim")
    return tuple(a for a in resolved if self.ndim)

  def _reduce(self, fn, axis=None, keepdim=False) -> Tensor:
    axes = self._reduce_axes(axis)
    return fn.apply(self, axes=axes, shape=None if keepdim else tuple(s for i, s in enumerate(self.shape) if i not in axes))

  def _summed(self, out: Tensor) -> Tensor:
    """A sum's result in the dtype the API gives it: half types return their own dtype."""
    return out.cast(self.dtype) if self.dtype in HALF_FLOATS else out

  @_torch_dim
  @_numpy_reduction
  def sum(self, axis=None, keepdim=False, acc_dtype=None) -> Tensor:
    acc = sum_acc_dtype(self.dtype) if acc_dtype is None else to_dtype(acc_dtype)
    return self._summed(self.cast(acc)._reduce(F.Sum, axis, keepdim))

  @_torch_dim
  @_numpy_reduction
  def prod(self, axis=None, keepdim=False) -> Tensor:
    """Product of the elements over axis (1 over none), in the dtype sum gives: Tensor([1, 2, 3]).prod() is 6."""
    x = self.cast(sum_acc_dtype(self.dtype))
    if not dtypes.is_float(x.dtype): return x._nondiff_reduce(ReduceOps.PROD, axis, keepdim)
    return self._summed(x._reduce(F.Prod, axis, keepdim))

  # over an empty axis max is the dtype's lowest value and min its highest (-inf and inf for floats), as tinygrad's
  # identities (torch and numpy raise)
  @_torch_dim
  @_numpy_reduction
  def max(self, axis=None, keepdim=False) -> Tensor: return self._max(axis, keepdim)

  @_torch_dim
  @_numpy_reduction
  def min(self, axis=None, keepdim=False) -> Tensor: return self._min(axis, keepdim)
  amax, amin = max, min   # torch's names; tied extremes share the gradient as torch's amax and amin do

  @_torch_dim
  @_numpy_reduction
  def any(self, axis=None, keepdim=False) -> Tensor: return self.bool()._max(axis, keepdim)   # over no element: False
  @_torch_dim
  @_numpy_reduction
  def all(self, axis=None, keepdim=False) -> Tensor: return self.logical_not().any(axis, keepdim).logical_not()

  # without the numpy-style arguments, for internal uses
  def _max(self, axis=None, keepdim=False) -> Tensor:
    if dtypes.is_float(self.dtype): return self._reduce(F.Max, axis, keepdim)
    return self._nondiff_reduce(ReduceOps.MAX, axis, keepdim)

  def _min(self, axis=None, keepdim=False) -> Tensor:
    if dtypes.is_float(self.dtype): return -((-self)._max(axis, keepdim))
    return self._nondiff_reduce(ReduceOps.MIN, axis, keepdim)

  def _nondiff_reduce(self, op, axis, keepdim) -> Tensor:
    axes = self._reduce_axes(axis)
    out = Tensor(self.lazydata.reduce(op, axes), device=self.device)._cut_from(self)._after_op()
    return out if keepdim else out.reshape(tuple(s for i, s in enumerate(self.shape) if i not in axes))

  @_torch_dim
  @_numpy_reduction
  def mean(self, axis=None, keepdim=False) -> Tensor:
    axes = self._reduce_axes(axis)
    count = math.prod(self.shape[a] for a in axes)
    if dtypes.is_float(self.dtype): total = self.cast(sum_acc_dtype(self.dtype))._reduce(F.Sum, axis, keepdim)   # half types divide before they round back
    else:   # ints sum exactly in 64 bits (in float32 or int32, [-2**31, 2, 5, 2**31 - 1] came out 0), then divide in float32;
      # 64-bit ints sum in float64, whose range their sum cannot leave ([2**62, 2**62] wrapped to a negative mean)
      acc = dtypes.float64 if self.dtype.itemsize == 8 else dtypes.uint64 if self.dtype.kind == "u" else dtypes.int64
      total = self.cast(acc)._reduce(F.Sum, axis, keepdim).cast(dtypes.float32)
    out_dtype = least_upper_float(self.dtype)
    return (total / count if count else total * float("nan")).cast(out_dtype)   # divided, as numpy and torch: 127000 * (1 / 1000) is 127.00001 in float32

  @_torch_dim
  @_numpy_reduction
  @_in_float32
  def var(self, axis=None, keepdim=False, correction=1) -> Tensor:
    x = self
    axes = self._reduce_axes(axis)
    count = math.prod(self.shape[a] for a in axes)
    squares = (x - x.mean(axis, keepdim=True)).square().sum(axis, keepdim)
    return squares / max(0, count - correction)

  @_torch_dim
  @_numpy_reduction
  @_in_float32
  def std(self, axis=None, keepdim=False, correction=1) -> Tensor:
    return _root_of_powers(self.var(axis, keepdim, correction))   # 0 where nothing deviates

  @_torch_dim
  def var_mean(self, axis=None, keepdim=False, correction=1) -> tuple[Tensor, Tensor]:
    return self.var(axis, keepdim, correction), self.mean(axis, keepdim)

  @_torch_dim
  def std_mean(self, axis=None, keepdim=False, correction=1) -> tuple[Tensor, Tensor]:
    return self.std(axis, keepdim, correction), self.mean(axis, keepdim)

  @_in_float32
  def norm(self, p="fro", dim=None, keepdim=False) -> Tensor:
    """torch's Tensor.norm: the p-norm of the elements over dim (all of them by default), p = 2 (or "fro"), 1, inf,
    -inf, 0 (the count of nonzero elements) or any other number."""
    if p == "fro": p = 2
    if p == "nuc": return self.matrix_norm("nuc", (-2, -1) if dim is None else dim, keepdim)
    axis = None if isinstance(dim, (tuple, list)) and not dim else dim   # dim=(): every dim, as torch's
    _check_number("norm p", p)
    magnitude = self.abs()
    if p == 2: return _root_of_powers(self.square().sum(axis, keepdim))   # gradient 0 at a zero vector, as torch's
    if p == 1: return magnitude.sum(axis, keepdim)
    if abs(p) == math.inf and any(self.shape[d] == 0 for d in self._reduce_axes(axis)):
      raise ValueError(f"norm with p={p} of shape {self.shape} over dims {self._reduce_axes(axis)}: an empty dim has no {'largest' if p > 0 else 'smallest'} magnitude (torch and numpy raise)")
    if p == math.inf: return magnitude.max(axis, keepdim)
    if p == -math.inf: return magnitude.min(axis, keepdim)
    if p == 0: return self._flat((self != 0).cast(self.dtype)).sum(axis, keepdim)   # a count: its gradient is 0
    powers = magnitude.pow(p)
    if p < 1:   # |x|^p's slope is infinite at 0; torch's gradient there is 0 (the power's own input kept away from 0)
      zero = magnitude == 0
      powers = zero.where(0.0 if p > 0 else math.inf, zero.where(1, magnitude).pow(p))
    return _root_of_powers(powers.sum(axis, keepdim), p)

  def dist(self, other, p=2) -> Tensor: return (self - other).norm(p)

  def renorm(self, p, dim: int, maxnorm: float) -> Tensor:
    """Each slice along dim scaled down to a p-norm of maxnorm where its norm is above that (torch's renorm)."""
    if self.ndim < 2: raise ShapeMismatch(f"renorm needs at least 2 dims (torch's rule), got shape {self.shape}")
    dim = resolve_axis(dim, self.ndim)
    norms = self.norm(p, dim=tuple(d for d in range(self.ndim) if d != dim), keepdim=True)
    return self * (norms > maxnorm).where(maxnorm / (norms + 1e-7), 1.0)   # torch's 1e-7 too

  @_torch_dim
  def nansum(self, axis=None, keepdim=False) -> Tensor:
    """The sum of the elements that are not NaN (numpy's and torch's nansum)."""
    return self.isnan().where(0, self).sum(axis, keepdim) if dtypes.is_float(self.dtype) else self.sum(axis, keepdim)

  @_torch_dim
  def nanmean(self, axis=None, keepdim=False) -> Tensor:
    """The mean of the elements that are not NaN (NaN where all are), as numpy's and torch's nanmean."""
    if not dtypes.is_float(self.dtype): return self.mean(axis, keepdim)
    counted = self.isnan().logical_not().sum(axis, keepdim)
    return self.nansum(axis, keepdim) / counted.cast(self.dtype)

  def aminmax(self, dim: Optional[int] = None, keepdim: bool = False) -> tuple[Tensor, Tensor]:
    """(min, max) over dim, or over all elements (torch's aminmax)."""
    return self.min(dim, keepdim), self.max(dim, keepdim)

  def sum_to_size(self, *size) -> Tensor:
    """The sum over the dims that broadcasting would expand from size to self's shape: the gradient of an expand."""
    size = shape_arg(*size) if size else ()
    if len(size) > self.ndim or any(s not in (1, t) for s, t in zip(size, self.shape[self.ndim - len(size):])):
      raise ShapeMismatch(f"sum_to_size: {size} does not expand to {self.shape}")
    lead = self.ndim - len(size)
    summed = self.sum(tuple(range(lead)) + tuple(lead + d for d, s in enumerate(size) if s == 1 and self.shape[lead + d] != 1), keepdim=True)
    return summed.reshape(size)

  def cov(self, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    """The covariance matrix of the variables in the rows (observations in the columns), torch's cov: with integer
    frequency and float importance weights of the observations, and correction subtracted from their count."""
    if self.ndim > 2: raise ValueError(f"cov needs a 1-D or 2-D tensor (variables x observations), got shape {self.shape}")
    x = self._float_input().reshape(-1, self.shape[-1] if self.ndim else 1)
    given = {}
    for name, w in (("fweights", fweights), ("aweights", aweights)):
      if w is None: continue
      w = given[name] = self._operand(w, f"cov {name}").cast(x.dtype)
      if w.shape != (x.shape[1],): raise ShapeMismatch(f"cov {name} must have one weight per observation ({x.shape[1]}), got shape {w.shape}")
    weights = math.prod(given.values(), start=x.ones_like()[0])
    total = weights.sum()
    mean = (x * weights).sum(1, keepdim=True) / total
    # correction observations taken off the count; with importance weights, their weighted analogue (torch's)
    scale = total - correction if aweights is None else total - correction * (weights * given["aweights"]).sum() / total
    scale = scale.maximum(0)
    centered = x - mean
    out = (centered * weights) @ centered.T / scale
    return out.reshape(()) if self.ndim < 2 else out

  def corrcoef(self) -> Tensor:
    """Pearson's correlation coefficients of the rows' variables, within [-1, 1] (torch's corrcoef)."""
    c = self.cov()
    if c.ndim == 0: return c / c
    spread = c.diagonal().sqrt()
    return (c / spread.reshape(-1, 1) / spread.reshape(1, -1)).clip(-1, 1)

  def _arg_extreme(self, extreme: Tensor, axis, keepdim) -> Tensor:
    if self.ndim == 0:   # a 0-d tensor's only element, along its axis 0 or -1 as for the other reductions
      if axis is not None: resolve_axis(axis, 1)
      return Tensor.zeros((), dtype=dtypes.int32, device=self.device)
    if (self.numel() if axis is None else self.shape[resolve_axis(axis, self.ndim)]) == 0:
      raise ValueError(f"argmax/argmin of an empty axis: the tensor has shape {self.shape}")
    if axis is None:
      return self.flatten()._arg_extreme(extreme.flatten(), 0, False).reshape((1,) * self.ndim if keepdim else ())
    axis = resolve_axis(axis, self.ndim)
    n = self.shape[axis]
    hit = (self == extreme) | (self != self)
    countdown = Tensor.arange(n, 0, -1, device=self.device).reshape((n,) + (1,) * (self.ndim - axis - 1))
    first = (hit.cast(dtypes.int32) * countdown).max(axis, keepdim)
    return (n - first).cast(index_dtype(n))

  @_torch_dim
  @_numpy_reduction
  def argmax(self, axis=None, keepdim=False) -> Tensor:
    if axis is None: return self._arg_extreme(self._max(None, True) if self.ndim else self, None, keepdim)
    return self._arg_extreme(self._max(axis, keepdim=True), axis, keepdim)

  @_torch_dim
  @_numpy_reduction
  def argmin(self, axis=None, keepdim=False) -> Tensor:
    if axis is None: return self._arg_extreme(self._min(None, True) if self.ndim else self, None, keepdim)
    return self._arg_extreme(self._min(axis, keepdim=True), axis, keepdim)

  def _softmax(self, axis):
    x = self._float_input()
    shifted = x - x._max(axis, keepdim=True).detach()   # the shift cancels: its gradient is 0, computed as 0
    exps = shifted.exp()
    return shifted, exps, exps.sum(axis=axis, keepdim=True)

  @_torch_dim
  def softmax(self, axis=-1) -> Tensor: return self._softmax_of(axis)

  @_in_float32
  def _softmax_of(self, axis, empty_rows_zero: bool = False) -> Tensor:
    """softmax along axis with torch's gradient y * (g - sum(g * y)), which reads the result y (stored where a product
    reads it, as attention's weights are), so that the backward pass neither finds each row's maximum nor takes the
    exponentials again (causal attention of 8x8x256x64, forward and backward on one thread: the softmax kernels
    17.4 -> 6.8 ms). empty_rows_zero: a row of -inf only (a query that may attend to nothing) gives 0s, not nan."""
    x = self.detach()
    top = x._max(axis, keepdim=True)
    empty = top == -float("inf") if empty_rows_zero else None
    exps = (x - top if empty is None else empty.where(0.0, x - top)).exp()
    y = exps * exps.sum(axis=axis, keepdim=True).reciprocal()   # one division per row, not per element
    if empty is not None: y = empty.where(0.0, y)
    return F.custom(lambda _: y.lazydata, lambda _, out, grad: (out * (grad - (grad * out).sum(axis=axis, keepdim=True)),), self)

  @_torch_dim
  @_in_float32
  def log_softmax(self, axis=-1) -> Tensor:
    shifted, _, total = self._softmax(axis)
    return shifted - total.log()

  @_torch_dim
  @_in_float32
  def logsumexp(self, axis=None, keepdim=False) -> Tensor:
    x = self
    top = x._max(axis, keepdim=True).detach()   # the shift cancels, as in _softmax
    top = (top - top == 0).where(top, 0)   # an infinite maximum is not subtracted: rows of -inf give -inf, not nan
    out = (x - top).exp().sum(axis=axis, keepdim=True).log() + top
    if keepdim: return out
    axes = self._reduce_axes(axis)
    return out.reshape(tuple(s for i, s in enumerate(self.shape) if i not in axes))

  def trapezoid(self, x=None, dx: float = 1.0, dim: int = -1) -> Tensor:
    """The integral of samples self along dim by the trapezoidal rule (numpy's and torch's trapezoid): at points x (a
    1-D tensor along dim, or of self's shape) or dx apart."""
    dim = resolve_axis(dim, self.ndim)
    n = self.shape[dim]
    def part(t, start, end): return t.shrink(tuple((start, end) if d == dim else None for d in range(t.ndim)))
    pairs = (part(self, 1, n) + part(self, 0, max(n - 1, 0))) * 0.5
    if x is None: return (pairs * dx).sum(dim)
    x = self._operand(x, "trapezoid x")
    if x.ndim == 1: x = x.reshape(tuple(-1 if d == dim else 1 for d in range(self.ndim)))
    if x.shape[dim] != n: raise ShapeMismatch(f"trapezoid x of shape {x.shape} does not give one point per sample along dim {dim} of {self.shape}")
    return (pairs * (part(x, 1, n) - part(x, 0, max(n - 1, 0)))).sum(dim)

  # ---- scans and masks
  @_torch_dim
  def cumsum(self, axis: int = 0, dtype=None) -> Tensor:
    """Running sum along axis, in the dtype sum gives: Tensor([1, 2, 3]).cumsum() is [1, 3, 6]. As torch's, a dtype
    casts the input to it first, and the sums come out in it."""
    if dtype is not None: return self.cast(dtype).cumsum(axis).cast(dtype)
    axis = resolve_axis(axis, self.ndim)   # a 0-d tensor has axes 0 and -1, as in torch
    if self.ndim == 0: return self.sum()
    return self._summed(F.CumSum.apply(self.cast(sum_acc_dtype(self.dtype)), axis=axis))

  @_torch_dim
  def cumprod(self, axis: int = 0, dtype=None) -> Tensor:
    """Running product along axis, in the dtype sum gives, with torch's gradient where elements are 0 (a dtype as
    cumsum's)."""
    if dtype is not None: return self.cast(dtype).cumprod(axis).cast(dtype)
    axis = resolve_axis(axis, self.ndim)
    if self.ndim == 0: return self.prod()
    x = self.cast(sum_acc_dtype(self.dtype))
    if not dtypes.is_float(x.dtype): return Tensor(running(x.lazydata, axis, "prod"), device=self.device)._cut_from(self)._after_op()
    return self._summed(F.CumProd.apply(x, axis=axis))

  @_torch_dim
  def logcumsumexp(self, axis: int = 0) -> Tensor:
    """log(cumsum(exp(self))) along axis, a running logaddexp: nothing overflows or underflows (torch's logcumsumexp)."""
    axis = resolve_axis(axis, self.ndim)
    x = self._float_input()
    if self.ndim == 0: return x * 1
    if x.dtype in HALF_FLOATS: return x.cast(dtypes.float32).logcumsumexp(axis).cast(x.dtype)
    return F.custom(lambda v: running(v.in_flat_order(), axis, "logaddexp"), self._logcumsumexp_gradient(axis), x)

  @staticmethod
  def _logcumsumexp_gradient(axis: int):
    def gradient(x, out, grad):
      """sum over i >= j of grad_i exp(x_j - out_i), from the running logaddexp from the end of log(+-grad_i) - out_i: the
      positive and negative parts apart, each without overflow."""
      def from_end(t): return t.flip(axis).logcumsumexp(axis).flip(axis)
      def part(g):
        positive = g > 0
        return (x + from_end(positive.where(positive.where(g, 1).log(), -math.inf) - out)).exp()
      return part(grad) - part(-grad)
    return gradient

  @_torch_dim
  @_values_and_indices
  def cummax(self, axis: int = 0) -> tuple[Tensor, Tensor]:
    """(values, int32 indices) of the running maximum along axis (torch's cummax: the last of equal values, and
    NaN once one is seen); the values pass the gradient to the elements they come from."""
    return self._running_extreme("argmax", axis)

  @_torch_dim
  @_values_and_indices
  def cummin(self, axis: int = 0) -> tuple[Tensor, Tensor]: return self._running_extreme("argmin", axis)

  def _running_extreme(self, op: str, axis: int) -> tuple[Tensor, Tensor]:
    axis = resolve_axis(axis, self.ndim)
    if self.ndim == 0: return self * 1, Tensor.zeros((), dtype=dtypes.int32, device=self.device)
    keys = self.cast(dtypes.float32) if self.dtype in HALF_FLOATS else self   # the same order
    indices = Tensor(running(keys.lazydata, axis, op), device=self.device)._cut_from(self)._after_op()
    return self.gather(axis, indices), indices

  def diff(self, n: int = 1, dim: int = -1) -> Tensor:
    """The differences of neighbours along dim, taken n times (torch's and numpy's diff; bools: not equal)."""
    _check_int("diff n", n)
    if self.ndim == 0: raise ValueError("diff needs at least one dim, got a 0-d tensor")
    axis = resolve_axis(dim, self.ndim)
    out = self
    for _ in range(min(n, self.shape[axis])):
      size = out.shape[axis]
      later = out.shrink(tuple((1, size) if d == axis else None for d in range(self.ndim)))
      earlier = out.shrink(tuple((0, size - 1) if d == axis else None for d in range(self.ndim)))
      out = later != earlier if self.dtype == dtypes.bool else later - earlier
    if n > self.shape[axis]: out = out.shrink(tuple((0, 0) if d == axis else None for d in range(self.ndim)))
    return out if n else self.clone()

  def _check_matrices(self, op: str):
    if self.ndim < 2: raise ValueError(f"{op} needs a tensor of at least 2 dims (matrices), got shape {self.shape}")

  def triu(self, k: int = 0, diagonal: Optional[int] = None) -> Tensor: return self._triangle("triu", _diagonal(k, diagonal), upper=True)
  def tril(self, k: int = 0, diagonal: Optional[int] = None) -> Tensor: return self._triangle("tril", _diagonal(k, diagonal), upper=False)

  def _triangle(self, op: str, k: int, upper: bool) -> Tensor:
    """The elements on and above (upper) or below the k-th diagonal of the last two dims, zeros elsewhere, in self's
    dtype (False for bool, which 0 would make int32)."""
    self._check_matrices(op)
    _check_int(f"{op} k", k, low=None)
    rows, cols = self.shape[-2], self.shape[-1]
    row, col = Tensor.arange(rows, device=self.device).reshape(rows, 1) + k, Tensor.arange(cols, device=self.device).reshape(1, cols)
    return (row <= col if upper else row >= col).where(self, False if self.dtype == dtypes.bool else 0)

  # ---- torch.nn.functional's norms (nbgrad/normalization.py), convolutions by rank, channel dropout, embedding
  def group_norm(self, num_groups: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Each of num_groups groups of channels (dim 1) normalized over its channels and spatial dims (torch's group_norm)."""
    return normalization.group_norm(self, num_groups, weight, bias, eps)
  def layer_norm(self, normalized_shape, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Normalized over the last dims, which have normalized_shape (torch's layer_norm)."""
    return normalization.layer_norm(self, normalized_shape, weight, bias, eps)
  def batch_norm(self, running_mean: Optional[Tensor], running_var: Optional[Tensor], weight: Optional[Tensor] = None,
                 bias: Optional[Tensor] = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Each channel normalized by the batch's statistics (training, moving the running ones in place) or the running
    ones (torch's batch_norm)."""
    return normalization.batch_norm(self, running_mean, running_var, weight, bias, training, momentum, eps)
  def instance_norm(self, running_mean: Optional[Tensor] = None, running_var: Optional[Tensor] = None, weight: Optional[Tensor] = None,
                    bias: Optional[Tensor] = None, use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Each channel of each sample normalized over its spatial dims (torch's instance_norm)."""
    return normalization.instance_norm(self, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)
  def rms_norm(self, normalized_shape, weight: Optional[Tensor] = None, eps: Optional[float] = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the last dims, which have normalized_shape (torch's rms_norm)."""
    return normalization.rms_norm(self, normalized_shape, weight, eps)
  def local_response_norm(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """x over (k + alpha * the mean square of size neighbouring channels)^beta (torch's local_response_norm)."""
    return normalization.local_response_norm(self, size, alpha, beta, k)

  def _conv_of_rank(self, dims: int, transposed: bool, weight: Tensor, **options) -> Tensor:
    """conv2d (or conv_transpose2d) as torch's conv{dims}d: a weight of dims + 2 dims, an input (N, C, *spatial) or
    one sample (C, *spatial)."""
    weight, name = self._operand(weight, "weight"), f"conv{'_transpose' if transposed else ''}{dims}d"
    if weight.ndim != dims + 2: raise ValueError(f"{name} needs a weight of {dims + 2} dims, got shape {weight.shape}")
    if self.ndim not in (dims + 1, dims + 2):
      raise ValueError(f"{name} needs an input of {dims + 2} dims (or {dims + 1} for one sample), got shape {self.shape}")
    convolve = Tensor.conv_transpose2d if transposed else Tensor.conv2d
    if self.ndim == dims + 1: return convolve(self.unsqueeze(0), weight, **options).squeeze(0)
    return convolve(self, weight, **options)
  # tinygrad's argument order (weight, bias, groups, stride, dilation, padding), as conv2d's
  def conv1d(self, weight: Tensor, bias: Optional[Tensor] = None, groups: int = 1, stride=1, dilation=1, padding=0, acc_dtype=None) -> Tensor:
    """conv2d over one spatial dim: x (N, Cin, L) or (Cin, L), weight (Cout, Cin/groups, K)."""
    return self._conv_of_rank(1, False, weight, bias=bias, groups=groups, stride=stride, dilation=dilation, padding=padding, acc_dtype=acc_dtype)
  def conv3d(self, weight: Tensor, bias: Optional[Tensor] = None, groups: int = 1, stride=1, dilation=1, padding=0, acc_dtype=None) -> Tensor:
    """conv2d over three spatial dims: x (N, Cin, D, H, W) or (Cin, D, H, W), weight (Cout, Cin/groups, *K)."""
    return self._conv_of_rank(3, False, weight, bias=bias, groups=groups, stride=stride, dilation=dilation, padding=padding, acc_dtype=acc_dtype)
  def conv_transpose1d(self, weight: Tensor, bias: Optional[Tensor] = None, groups: int = 1, stride=1, dilation=1, padding=0,
                       output_padding=0) -> Tensor:
    """conv_transpose2d over one spatial dim: x (N, Cin, L) or (Cin, L), weight (Cin, Cout/groups, K)."""
    return self._conv_of_rank(1, True, weight, bias=bias, groups=groups, stride=stride, dilation=dilation, padding=padding,
                              output_padding=output_padding)
  def conv_transpose3d(self, weight: Tensor, bias: Optional[Tensor] = None, groups: int = 1, stride=1, dilation=1, padding=0,
                       output_padding=0) -> Tensor:
    """conv_transpose2d over three spatial dims: x (N, Cin, D, H, W) or (Cin, D, H, W), weight (Cin, Cout/groups, *K)."""
    return self._conv_of_rank(3, True, weight, bias=bias, groups=groups, stride=stride, dilation=dilation, padding=padding,
                              output_padding=output_padding)

  def channel_shuffle(self, groups: int) -> Tensor:
    """(N, C, ...) with its channels dealt out group by group: channel g * (C / groups) + i goes to i * groups + g."""
    _check_int("channel_shuffle groups", groups, 1)
    if self.ndim < 3 or self.shape[1] % groups:
      raise ValueError(f"channel_shuffle into {groups} groups needs (N, C, ...) with C a multiple of {groups}, got shape {self.shape}")
    return self.reshape(self.shape[0], groups, self.shape[1] // groups, *self.shape[2:]).transpose(1, 2).reshape(self.shape)

  def embedding(self, weight: Tensor, padding_idx: Optional[int] = None, scale_grad_by_freq: bool = False) -> Tensor:
    """The rows of weight (num_embeddings, embedding_dim) at these int indices: shape self.shape + (embedding_dim,).
    The row at padding_idx gets no gradient. An index outside [0, num_embeddings) reads zeros, as tinygrad's Embedding.
    scale_grad_by_freq, as torch's: the gradient each read brings its row is divided by how many times these indices
    read that row."""
    weight = self._operand(weight, "embedding weight")
    if weight.ndim != 2: raise ValueError(f"embedding needs a weight (num_embeddings, embedding_dim), got shape {weight.shape}")
    if not dtypes.is_int(self.dtype): raise TypeError(f"embedding indices must be an int tensor, got {self.dtype}")
    rows, indices = weight.shape[0], self
    if not dtypes.is_unsigned(self.dtype):   # -1 reads zeros, not the last row; rows past the dtype's range: wider ints
      indices = (self < 0).where(rows, self.cast(least_upper_dtype(self.dtype, int_dtype_holding(0, rows))))
    if padding_idx is not None:
      _check_int("embedding padding_idx", padding_idx, None)
      if not -rows <= padding_idx < rows: raise ValueError(f"embedding padding_idx {padding_idx} is out of range for {rows} rows")
      is_padding = Tensor.arange(rows, device=weight.device).reshape(rows, 1) == padding_idx % rows
      weight = is_padding.where(weight.detach(), weight)
    rows_read = weight[indices]
    if not scale_grad_by_freq or not rows_read.requires_grad: return rows_read
    outside = (indices < 0) | (indices >= rows)   # reads no row: its count is kept apart, in an extra slot
    slots = outside.where(rows, indices).cast(index_dtype(rows))
    counts = Tensor.zeros(rows + 1, dtype=weight.dtype, device=weight.device).scatter_add(0, slots.flatten(), Tensor.ones(slots.numel(), dtype=weight.dtype, device=weight.device))
    return _with_derivatives((rows_read,), rows_read.detach(), (lambda: (1 / counts[slots]).unsqueeze(-1).expand(rows_read.shape),))

  def _dropped_features(self, p: float, feature_dims: int, alpha: bool = False, op: str = "dropout") -> Tensor:
    """torch's feature dropout when Tensor.training: one draw per index of the first feature_dims dims (each element
    for feature_dims = ndim), each kept with probability 1 - p. Plain: the dropped are 0, the kept scaled by 1/(1-p).
    alpha (for selu networks): the dropped go to selu's negative limit, then all are scaled and shifted to keep a zero
    mean and unit variance. A multiply by the mask, as torch's: a dropped nan stays nan."""
    _check_number(f"{op} probability", p)
    if not 0 <= p <= 1: raise ValueError(f"{op} probability must be in [0, 1], got {p}")
    if not Tensor.training or p == 0 or self.numel() == 0: return self
    if p == 1: return self * 0
    kept = Tensor.rand(*self.shape[:feature_dims], *(1,) * (self.ndim - feature_dims), device=self.device) >= p
    kept = kept.cast(least_upper_float(self.dtype))   # the shift below in self's float type, not in a bool's float32
    if not alpha: return self * kept * (1 / (1 - p))
    limit = 1.7580993408473766   # -selu(-inf): selu's scale times its alpha
    scale = 1 / math.sqrt((limit * limit * p + 1) * (1 - p))
    return self * kept * scale + (kept * (limit * scale) + limit * scale * (p - 1))

  def _with_dims(self, op: str, low: int, high: Optional[int] = None) -> Tensor:
    """self, if it has low to high dims (high None: no limit)."""
    if self.ndim < low or (high is not None and self.ndim > high):
      raise ValueError(f"{op} needs an input of {low} {'or more' if high is None else f'or {high}'} dims, got shape {self.shape}")
    return self
  def dropout1d(self, p: float = 0.5) -> Tensor:
    """Whole channels of (N, C, L) (or (C, L)) zeroed with probability p, the rest scaled by 1/(1-p), when Tensor.training."""
    return self._with_dims("dropout1d", 2, 3)._dropped_features(p, self.ndim - 1, op="dropout1d")
  def dropout2d(self, p: float = 0.5) -> Tensor:
    """Whole channels of (N, C, H, W) zeroed with probability p, the rest scaled by 1/(1-p), when Tensor.training. As
    torch's, a 3-D input is (N, C, L)."""
    return self._with_dims("dropout2d", 2)._dropped_features(p, 2, op="dropout2d")
  def dropout3d(self, p: float = 0.5) -> Tensor:
    """Whole channels of (N, C, D, H, W) (or (C, D, H, W)) zeroed with probability p, the rest scaled by 1/(1-p), when
    Tensor.training."""
    return self._with_dims("dropout3d", 4, 5)._dropped_features(p, self.ndim - 3, op="dropout3d")
  def alpha_dropout(self, p: float = 0.5) -> Tensor:
    """Dropout for selu networks, when Tensor.training: each element dropped with probability p to selu's negative
    limit, then scaled and shifted to keep a zero mean and unit variance (torch's alpha_dropout)."""
    return self._dropped_features(p, self.ndim, alpha=True, op="alpha_dropout")
  def feature_alpha_dropout(self, p: float = 0.5) -> Tensor:
    """alpha_dropout of whole channels of (N, C, ...), when Tensor.training (torch's feature_alpha_dropout)."""
    return self._with_dims("feature_alpha_dropout", 2)._dropped_features(p, 2, alpha=True, op="feature_alpha_dropout")

  def _lp_pool(self, dims: int, norm_type, kernel_size, stride, ceil_mode: bool) -> Tensor:
    """(sum of x^p over each window)^(1/p), the sum taken as the window mean times the kernel's size, as torch's;
    p = inf is the largest |x|. The gradient is 0 where a window's sum is 0, as torch's."""
    _check_number("lp_pool norm_type", norm_type)
    if norm_type == 0: raise ValueError("lp_pool norm_type must not be 0")
    if math.isinf(norm_type):
      largest = pooling.max_pool(self.abs() if norm_type > 0 else -self.abs(), dims, kernel_size, stride, ceil_mode=ceil_mode)
      return largest if norm_type > 0 else -largest
    kernel = self._pool_args(kernel_size, stride, 1, dims)[0]
    window_sums = pooling.avg_pool(self.pow(norm_type), dims, kernel_size, stride, ceil_mode=ceil_mode) * math.prod(kernel)
    return _root_of_powers(window_sums, norm_type)
  def lp_pool1d(self, norm_type, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """The p-norm (p = norm_type) of each window over the last dim (torch's lp_pool1d)."""
    return self._lp_pool(1, norm_type, kernel_size, stride, ceil_mode)
  def lp_pool2d(self, norm_type, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """The p-norm (p = norm_type) of each window over the last two dims (torch's lp_pool2d)."""
    return self._lp_pool(2, norm_type, kernel_size, stride, ceil_mode)
  def lp_pool3d(self, norm_type, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """The p-norm (p = norm_type) of each window over the last three dims (torch's lp_pool3d)."""
    return self._lp_pool(3, norm_type, kernel_size, stride, ceil_mode)

  # ---- sorting, ranking, counting and binning (nbgrad/ordering.py); the ops along a dim also take numpy's axis=
  @_numpy_axis
  def argsort(self, dim: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    return ordering.argsort(self, dim, descending, stable)
  @_numpy_axis
  @_values_and_indices
  def sort(self, dim: int = -1, descending: bool = False, stable: bool = True) -> tuple[Tensor, Tensor]:
    return ordering.sort(self, dim, descending, stable)
  def msort(self) -> Tensor: return self.sort(0)[0]
  @_numpy_axis
  @_values_and_indices
  def mode(self, dim: int = -1, keepdim: bool = False) -> tuple[Tensor, Tensor]: return ordering.mode(self, dim, keepdim)
  @_numpy_axis
  @_values_and_indices
  def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple[Tensor, Tensor]:  # noqa: A002
    return ordering.topk(self, k, dim, largest, sorted)
  @_numpy_axis
  @_values_and_indices
  def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False) -> tuple[Tensor, Tensor]: return ordering.kthvalue(self, k, dim, keepdim)
  @_numpy_axis
  @_values_and_indices
  def median(self, dim: Optional[int] = None, keepdim: bool = False): return ordering.median(self, dim, keepdim)
  @_numpy_axis
  @_values_and_indices
  def nanmedian(self, dim: Optional[int] = None, keepdim: bool = False): return ordering.nanmedian(self, dim, keepdim)
  @_numpy_axis
  def quantile(self, q, dim: Optional[int] = None, keepdim: bool = False, interpolation: str = "linear") -> Tensor:
    return ordering.quantile(self, q, dim, keepdim, interpolation)
  @_numpy_axis
  def nanquantile(self, q, dim: Optional[int] = None, keepdim: bool = False, interpolation: str = "linear") -> Tensor:
    return ordering.nanquantile(self, q, dim, keepdim, interpolation)
  def searchsorted(self, values, right: bool = False, side: Optional[str] = None) -> Tensor: return ordering.searchsorted(self, values, right, side)
  def bucketize(self, boundaries, right: bool = False) -> Tensor: return ordering.bucketize(self, boundaries, right)
  def nonzero(self, as_tuple: bool = False): return ordering.nonzero(self, as_tuple)
  def argwhere(self) -> Tensor: return self.nonzero()
  def unique(self, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None):  # noqa: A002
    return ordering.unique(self, sorted, return_inverse, return_counts, dim)
  def unique_consecutive(self, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None):
    return ordering.unique_consecutive(self, return_inverse, return_counts, dim)
  def histc(self, bins: int = 100, min: float = 0, max: float = 0) -> Tensor: return ordering.histc(self, bins, min, max)  # noqa: A002
  def histogram(self, bins=100, range=None, weight=None, density: bool = False) -> tuple[Tensor, Tensor]:  # noqa: A002
    return ordering.histogram(self, bins, range, weight, density)
  def bincount(self, weights=None, minlength: int = 0) -> Tensor: return ordering.bincount(self, weights, minlength)

  @_torch_dim
  def count_nonzero(self, axis=None) -> Tensor: return (self != 0).sum(axis)

  # ---- gather, einsum
  def gather(self, dim: int, index: Tensor) -> Tensor:
    """out[..., i, ...] = self[..., index[..., i, ...], ...] along dim (torch.gather)."""
    index = self._operand(index, "gather index")
    if index.ndim != self.ndim: raise IndexMismatch(f"gather index has {index.ndim} dims, the tensor {self.ndim} ({index.shape} vs {self.shape})")
    if dtypes.is_float(index.dtype): index = whole_float_indices(index)
    if not dtypes.is_int(index.dtype): raise IndexError(f"gather index must be an int or float tensor, got {index.dtype}")
    if self.ndim == 0: return self.reshape(1).gather(resolve_axis(dim, 1), index.reshape(1)).reshape(())   # as torch
    dim = resolve_axis(dim, self.ndim)
    for d, (i, s) in enumerate(zip(index.shape, self.shape)):
      if d != dim and i > s: raise IndexMismatch(f"gather index shape {index.shape} exceeds {self.shape} in dim {d}")
    # the kernel reads dims other than dim whole: a smaller index reads the part of self it covers
    x = self.shrink(tuple(None if d == dim or i == s else (0, i) for d, (i, s) in enumerate(zip(index.shape, self.shape))))
    return F.TakeAlong.apply(x, kernel_index(index, self.shape[dim]), axis=dim, shared=False, wrap=False)

  def _positions_along(self, dim: int, index: Tensor) -> tuple[Tensor, Tensor]:
    """The flat positions in self (contiguous) of [..., index[..., i, ...], ...] along dim, for every element of index,
    and whether each is in range (a negative index is not, as in torch; as tinygrad's, it reads 0)."""
    strides = contiguous_strides(self.shape)
    flat, inside = index_positions(index, self.shape[dim], self.device, negative_from_end=False)
    flat = flat * strides[dim]
    for d in range(self.ndim):
      if d != dim: flat = flat + along_axis(index.shape[d], strides[d], d, self.ndim, self.device)
    return flat, inside

  # writes at gathered positions (nbgrad/scatter.py): gather's adjoints
  def scatter_add(self, dim: int, index: Tensor, src: Tensor) -> Tensor: return scatter.scatter_add(self, dim, index, src)
  def scatter(self, dim: int, index: Tensor, src, reduce: Optional[str] = None) -> Tensor: return scatter.scatter(self, dim, index, src, reduce)
  def scatter_reduce(self, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool = True) -> Tensor:
    return scatter.scatter_reduce(self, dim, index, src, reduce, include_self)
  def index_add(self, dim: int, index: Tensor, source: Tensor, alpha=1) -> Tensor: return scatter.index_add(self, dim, index, source, alpha)
  def index_reduce(self, dim: int, index: Tensor, source: Tensor, reduce: str, include_self: bool = True) -> Tensor:
    return scatter.index_reduce(self, dim, index, source, reduce, include_self)
  def index_copy(self, dim: int, index: Tensor, source: Tensor) -> Tensor: return scatter.index_copy(self, dim, index, source)
  def index_fill(self, dim: int, index: Tensor, value) -> Tensor: return scatter.index_fill(self, dim, index, value)
  def index_put(self, indices, values, accumulate: bool = False) -> Tensor: return scatter.index_put(self, indices, values, accumulate)
  def put(self, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor: return scatter.put(self, index, source, accumulate)
  def masked_scatter(self, mask: Tensor, source: Tensor) -> Tensor: return scatter.masked_scatter(self, mask, source)
  def select_scatter(self, src: Tensor, dim: int, index: int) -> Tensor:
    return scatter.into_view(self, src, lambda t: t.select(dim, index), "select_scatter")
  def slice_scatter(self, src: Tensor, dim: int = 0, start: Optional[int] = None, end: Optional[int] = None, step: int = 1) -> Tensor:
    return scatter.into_view(self, src, lambda t: t[(slice(None),) * resolve_axis(dim, self.ndim) + (slice(start, end, step),)], "slice_scatter")
  def diagonal_scatter(self, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return scatter.into_view(self, src, lambda t: t.diagonal(offset, dim1, dim2), "diagonal_scatter")

  def take(self, index: Tensor) -> Tensor:
    """The elements of the flattened tensor at index, in index's shape (torch's take; negative indices count from the end)."""
    return self.flatten()[self._operand(index, "take index")]

  def take_along_dim(self, indices: Tensor, dim: Optional[int] = None) -> Tensor:
    """gather with the dims other than dim broadcast between self and indices (torch's take_along_dim, numpy's
    take_along_axis); without dim, of the flattened tensors."""
    indices = self._operand(indices, "take_along_dim indices")
    if dim is None: return self.flatten().gather(0, indices.flatten())
    dim = resolve_axis(dim, self.ndim)
    if indices.ndim != self.ndim: raise IndexMismatch(f"take_along_dim needs indices of self's rank, got {indices.shape} for {self.shape}")
    batch = broadcast_shape(*[tuple(1 if d == dim else s for d, s in enumerate(t.shape)) for t in (self, indices)])
    spread = lambda t: t.expand(tuple(t.shape[d] if d == dim else s for d, s in enumerate(batch)))
    return spread(self).gather(dim, spread(indices))

  def as_strided(self, size, stride, storage_offset: int = 0) -> Tensor:
    """The elements at storage_offset + sum(i_k * stride_k) of the contiguous (flattened) tensor, in shape size
    (torch's as_strided over a contiguous tensor): a view, which in-place ops write through; the gradient adds up where
    positions repeat."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride) or not all(_is_int(v) and v >= 0 for v in size + stride + (storage_offset,)):
      raise ValueError(f"as_strided needs sizes and strides of one length, ints >= 0, got {size}, {stride} and offset {storage_offset}")
    if math.prod(size) and storage_offset + sum((n - 1) * st for n, st in zip(size, stride)) >= self.numel():
      raise IndexError(f"as_strided of size {size}, stride {stride} and offset {storage_offset} reads past the {self.numel()} elements of {self.shape}")
    return F.AsStrided.apply(self, size=size, stride=stride, storage_offset=storage_offset)

  # ---- sampling at positions (nbgrad/sampling.py): torch's F.unfold, F.fold, F.grid_sample, F.affine_grid
  def im2col(self, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Every sliding block of (N, C, *spatial) as a column, (N, C * kernel elements, blocks), the kernel elements
    channel by channel (torch's F.unfold; an int kernel_size is 2-D, a tuple gives the spatial dims; (C, *spatial)
    without N as torch). Tensor.ones(1, 2, 4, 4).im2col(2, stride=2).shape == (1, 8, 4)."""
    return sampling.im2col(self, kernel_size, dilation, padding, stride)

  def col2im(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col's adjoint (torch's F.fold): the columns (N, C * kernel elements, blocks) added back into
    (N, C, *output_size) where im2col read them, overlapping elements summed."""
    return sampling.col2im(self, output_size, kernel_size, dilation, padding, stride)

  def grid_sample(self, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros", align_corners: bool = False) -> Tensor:
    """self (N, C, H, W) read at the points of grid (N, Ho, Wo, 2), each (x, y) from -1 to 1 across the input, giving
    (N, C, Ho, Wo); or (N, C, D, H, W) at (N, Do, Ho, Wo, 3) points (x, y, z). torch's F.grid_sample: modes
    "bilinear" (trilinear for volumes), "nearest" and "bicubic" (4-D), padding_mode "zeros", "border" or
    "reflection", gradients to self and to the grid."""
    return sampling.grid_sample(self, grid, mode, padding_mode, align_corners)

  def affine_grid(self, size, align_corners: bool = False) -> Tensor:
    """The points of the affine maps self, theta (N, 2, 3) or (N, 3, 4), over an output of size (N, C, H, W) or
    (N, C, D, H, W): grid_sample's grid (N, H, W, 2) or (N, D, H, W, 3) (torch's F.affine_grid(theta, size))."""
    return sampling.affine_grid(self, size, align_corners)

  def gumbel_softmax(self, tau: float = 1, hard: bool = False, dim: int = -1) -> Tensor:
    """softmax((self + g) / tau) along dim, g drawn from the standard Gumbel distribution (torch's F.gumbel_softmax);
    hard gives the one-hot of each row's largest value, with the soft values' gradient (straight through)."""
    _check_number("gumbel_softmax tau", tau)
    if not tau > 0: raise ValueError(f"gumbel_softmax tau must be positive, got {tau}")
    logits = self._float_input()
    dim = resolve_axis(dim, self.ndim)
    # -log of an exponential draw -log(u); a draw u = 0 gives -inf, a probability of 0
    gumbels = -(-Tensor.rand(*self.shape, dtype=logits.dtype, device=self.device).log()).log()
    soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard: return soft
    positions = Tensor.arange(self.shape[dim], device=self.device).reshape([-1 if d == dim else 1 for d in range(self.ndim)])
    one_hot = (soft.argmax(dim, keepdim=True) == positions).cast(soft.dtype)
    return one_hot - soft.detach() + soft

  @staticmethod
  def einsum(formula: str, *operands: Tensor, acc_dtype=None) -> Tensor:
    """Einstein summation over named axes ('ij,jk->ik'); without '->' the output is the letters used once, sorted."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)): operands = tuple(operands[0])
    leading = next((x for x in operands if isinstance(x, Tensor)), None)
    if leading is None: raise TypeError("einsum needs at least one Tensor operand")
    operands = tuple(leading._operand(x, "einsum operand") for x in operands)
    if not isinstance(formula, str): raise TypeError(f"einsum formula must be a string such as 'ij,jk->ik', got {formula!r}")
    if (common := least_upper_dtype(*(x.dtype for x in operands))) in HALF_FLOATS and acc_dtype is None:
      return in_float32_rounded_to(common, lambda *wide: Tensor.einsum(formula, *wide), *operands)   # as matmul takes them
    formula = formula.replace(" ", "")
    if (bad := next((c for c in formula.replace("->", "").replace("...", "") if not (c.isascii() and c.isalpha()) and c != ","), None)):
      raise ValueError(f"einsum formula {formula!r}: subscripts are the letters a-z and A-Z, got {bad!r}")
    inputs, arrow, output = formula.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
      raise ShapeMismatch(f"einsum formula {formula!r} names {len(terms)} operands, got {len(operands)}")
    if "." in formula: terms, output = _einsum_ellipsis(terms, output, bool(arrow), operands)
    counts: dict = {}
    for term, x in zip(terms, operands):
      if len(term) != x.ndim: raise ShapeMismatch(f"einsum term {term!r} has {len(term)} letters for a tensor of shape {x.shape}")
      for letter in term: counts[letter] = counts.get(letter, 0) + 1
    if not arrow: output += "".join(sorted(letter for letter, c in counts.items() if c == 1 and letter not in output))
    if (unknown := [letter for letter in output if letter not in counts]):
      raise ShapeMismatch(f"einsum output letter(s) {''.join(unknown)!r} of {formula!r} appear in no input term")
    if len(set(output)) != len(output): raise ValueError(f"einsum output {output!r} of {formula!r} repeats a letter")
    terms, operands = zip(*(_einsum_diagonal(term, x) for term, x in zip(terms, operands)))
    letters = sorted(counts)
    sizes: dict = {}
    for term, x in zip(terms, operands):
      for letter, size in zip(term, x.shape):
        if sizes.setdefault(letter, size) != size and size != 1 and sizes[letter] != 1:
          raise ShapeMismatch(f"einsum letter {letter!r} has sizes {sizes[letter]} and {size}")
        sizes[letter] = max(sizes[letter], size)
    if len(operands) > 1 and _einsum_as_products(terms, operands, sizes, acc_dtype): return _einsum_by_products(terms, operands, output, sizes)
    product = None
    for term, x in zip(terms, operands):
      order = sorted(range(len(term)), key=lambda i: letters.index(term[i]))
      moved = x.permute(order) if order else x
      shape = tuple(x.shape[term.index(letter)] if letter in term else 1 for letter in letters)
      moved = moved.reshape(shape)
      product = moved if product is None else product * moved
    product = product._broadcast_to(tuple(sizes[letter] for letter in letters))
    summed_axes = tuple(i for i, letter in enumerate(letters) if letter not in output)
    kept = [letter for letter in letters if letter in output]
    if summed_axes: out = product.sum(summed_axes, acc_dtype=acc_dtype)
    else: out = product if acc_dtype is None else product.cast(acc_dtype)
    return out.permute([kept.index(letter) for letter in output]) if output else out

  # ---- pooling and convolution
  def _windows(self, kernel: tuple, stride: tuple, dilation: tuple) -> Tensor:
    """(..., *spatial) -> (..., *out, *kernel): every sliding window, as one strided view (no copy)."""
    self._check_window_fits(kernel, dilation)
    return F.Windows.apply(self, kernel=kernel, stride=stride, dilation=dilation)

  def _check_window_fits(self, kernel: tuple, dilation: tuple):
    spatial = self.shape[-len(kernel):]
    if any(size < d * (k - 1) + 1 for size, k, d in zip(spatial, kernel, dilation)):
      raise ValueError(f"kernel {kernel} (dilation {dilation}) is larger than the input {spatial}")

  def _pool_args(self, kernel_size, stride, dilation, dims: Optional[int] = None):
    kernel = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * (dims or 2)
    stride = kernel if stride is None else (tuple(stride) if isinstance(stride, (tuple, list)) else (stride,) * len(kernel))
    dilation = tuple(dilation) if isinstance(dilation, (tuple, list)) else (dilation,) * len(kernel)
    if len(kernel) > self.ndim: raise ValueError(f"a {len(kernel)}-D kernel needs at least {len(kernel)} dims, got {self.shape}")
    for name, values in (("kernel size", kernel), ("stride", stride), ("dilation", dilation)):
      if len(values) != len(kernel) or not all(_is_int(v) and v >= 1 for v in values):
        raise ValueError(f"{name} {values} must be {len(kernel)} positive int(s)")
    return tuple(map(int, kernel)), tuple(map(int, stride)), tuple(map(int, dilation))   # numpy ints would reach shapes

  # torch's pools (nbgrad/pooling.py) over the last len(kernel_size) dims, 2 for an int kernel_size. Past tinygrad's
  # (kernel_size, stride, dilation) the arguments are keywords: torch's positional order puts padding before dilation.
  def avg_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, *, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None) -> Tensor:
    """Window means, as torch's avg_pool2d (and with dilation): the zero padding counted unless count_include_pad is
    False, divisor_override in place of the count. Int inputs give float32, as mean."""
    return pooling.avg_pool(self, None, kernel_size, stride, dilation, padding, ceil_mode, count_include_pad, divisor_override)
  def avg_pool1d(self, kernel_size, stride=None, **options) -> Tensor: return pooling.avg_pool(self, 1, kernel_size, stride, **options)
  def avg_pool3d(self, kernel_size, stride=None, **options) -> Tensor: return pooling.avg_pool(self, 3, kernel_size, stride, **options)

  def max_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, *, padding=0, ceil_mode=False, return_indices=False):
    """Window maxima, as torch's max_pool2d, the padding never winning. The gradient is shared evenly among a window's
    maxima; return_indices adds torch's int64 indices (flat in each plane) of each window's first maximum."""
    return pooling.max_pool(self, None, kernel_size, stride, dilation, padding, ceil_mode, return_indices)
  def max_pool1d(self, kernel_size, stride=None, **options): return pooling.max_pool(self, 1, kernel_size, stride, **options)
  def max_pool3d(self, kernel_size, stride=None, **options): return pooling.max_pool(self, 3, kernel_size, stride, **options)

  def max_unpool2d(self, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """max_pool2d's values (self) back at their indices in a zero plane, as torch's max_unpool2d."""
    return pooling.max_unpool(self, indices, None, kernel_size, stride, padding, output_size)
  def max_unpool1d(self, indices: Tensor, kernel_size, stride=None, **options) -> Tensor:
    return pooling.max_unpool(self, indices, 1, kernel_size, stride, **options)
  def max_unpool3d(self, indices: Tensor, kernel_size, stride=None, **options) -> Tensor:
    return pooling.max_unpool(self, indices, 3, kernel_size, stride, **options)

  def adaptive_avg_pool2d(self, output_size) -> Tensor:
    """Means over output_size windows spread over the input as torch's are (None keeps a dim's size)."""
    return pooling.adaptive_avg_pool(self, output_size, None)
  def adaptive_avg_pool1d(self, output_size) -> Tensor: return pooling.adaptive_avg_pool(self, output_size, 1)
  def adaptive_max_pool2d(self, output_size, return_indices=False):
    """Maxima over output_size windows spread over the input as torch's are, and their indices as max_pool2d's."""
    return pooling.adaptive_max_pool(self, output_size, None, return_indices)
  def adaptive_max_pool1d(self, output_size, return_indices=False): return pooling.adaptive_max_pool(self, output_size, 1, return_indices)

  def pixel_shuffle(self, upscale_factor: int) -> Tensor:
    """(..., C r^2, H, W) -> (..., C, H r, W r): each r^2 channels become r x r neighbours (torch's pixel_shuffle)."""
    _check_int("pixel_shuffle upscale_factor", upscale_factor, 1)
    r, lead = int(upscale_factor), self.ndim - 3
    if self.ndim < 3 or self.shape[-3] % (r * r): raise ValueError(f"pixel_shuffle by {r} needs (..., C * {r * r}, H, W), got {self.shape}")
    channels, height, width = self.shape[-3:]
    x = self.reshape(*self.shape[:-3], channels // (r * r), r, r, height, width)
    x = x.permute(*range(lead), lead, lead + 3, lead + 1, lead + 4, lead + 2)
    return x.reshape(*self.shape[:-3], channels // (r * r), height * r, width * r)

  def pixel_unshuffle(self, downscale_factor: int) -> Tensor:
    """(..., C, H r, W r) -> (..., C r^2, H, W), pixel_shuffle's inverse (torch's pixel_unshuffle)."""
    _check_int("pixel_unshuffle downscale_factor", downscale_factor, 1)
    r, lead = int(downscale_factor), self.ndim - 3
    if self.ndim < 3 or self.shape[-2] % r or self.shape[-1] % r:
      raise ValueError(f"pixel_unshuffle by {r} needs (..., C, H * {r}, W * {r}), got {self.shape}")
    channels, height, width = self.shape[-3:]
    x = self.reshape(*self.shape[:-3], channels, height // r, r, width // r, r)
    x = x.permute(*range(lead), lead, lead + 2, lead + 4, lead + 1, lead + 3)
    return x.reshape(*self.shape[:-3], channels * r * r, height // r, width // r)

  @staticmethod
  def _conv_padding(padding, kernel: tuple, stride: tuple, dilation: tuple) -> list:
    """Padding as pad2d takes it: an int, one per spatial dim, two per spatial dim (last dim first), or torch's
    "valid" (none) and "same" (the output as big as the input, an odd total's extra on the right; stride 1 only)."""
    dims = len(kernel)
    if isinstance(padding, str):
      if padding == "valid": return [0] * (2 * dims)
      if padding != "same": raise ValueError(f"padding {padding!r} must be 'valid', 'same', an int or a sequence of ints")
      if any(s != 1 for s in stride): raise ValueError(f"padding='same' needs stride 1, got stride {stride}")
      totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
      return [p for total in reversed(totals) for p in (total // 2, total - total // 2)]
    if isinstance(padding, (int, np.integer)): return [int(padding)] * (2 * dims)
    if not isinstance(padding, (list, tuple)): raise TypeError(f"padding {padding!r} must be 'valid', 'same', an int or a sequence of ints")
    if not all(_is_int(p) for p in padding):
      raise ValueError(f"padding {padding} must hold ints")
    padding = [int(p) for p in padding]
    if len(padding) == 2 * dims: return padding
    if len(padding) == dims: return [p for p in reversed(padding) for _ in range(2)]
    raise ValueError(f"padding {padding} must be an int, {dims} values or {2 * dims} values")

  def conv2d(self, weight: Tensor, bias: Optional[Tensor] = None, groups: int = 1, stride=1, dilation=1, padding=0,
             acc_dtype=None) -> Tensor:
    """Convolution over the last weight.ndim-2 dims (1-D, 2-D, 3-D...): x (N, Cin, *S), weight (Cout, Cin/groups, *K);
    an unbatched x (Cin, *S) gives (Cout, *S'), as torch's."""
    weight, bias = self._operand(weight, "weight"), self._operand(bias, "bias", optional=True)
    if weight.ndim >= 3 and self.ndim == weight.ndim - 1:
      return self.unsqueeze(0).conv2d(weight, bias, groups, stride, dilation, padding, acc_dtype).squeeze(0)
    dims = weight.ndim - 2
    if dims < 1 or self.ndim != weight.ndim:
      raise ValueError(f"conv2d needs input and weight of equal rank >= 3, got {self.shape} and {weight.shape}")
    self._check_same_device(weight)
    batch, cin = self.shape[:2]
    cout, cin_group = weight.shape[:2]
    _check_int("conv2d groups", groups, 1)
    if cin % groups or cout % groups or cin // groups != cin_group:
      raise ShapeMismatch(f"input channels {cin} and weight {weight.shape} do not fit groups={groups}")
    if bias is not None and bias.shape != (cout,): raise ValueError(f"conv2d bias of shape {bias.shape} does not fit weight {weight.shape}: it needs ({cout},)")
    kernel, stride, dilation = self._pool_args(weight.shape[2:], stride, dilation, dims)
    pads = self._conv_padding(padding, kernel, stride, dilation)
    x = self.pad2d(pads)
    if winograd.eligible(x, weight, stride, dilation, acc_dtype) and winograd.chosen(x.shape, weight.shape, groups, x.device):
      x._check_window_fits(kernel, dilation)
      out = winograd.conv(x, weight, groups)
      return out if bias is None else out + bias.reshape(1, cout, *([1] * dims))
    if self._direct_conv_applies(weight, pads, acc_dtype):
      x._check_window_fits(kernel, dilation)
      out_size = tuple((n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(x.shape[2:], kernel, stride, dilation))
      geometry = (cin, *self.shape[2:], cout, groups, *kernel, *stride, *dilation, pads[2], pads[0], *out_size)
      out = F.DirectConv.apply(self, weight, geometry=geometry, out_shape=(batch, cout, *out_size))
      return out if bias is None else out + bias.reshape(1, cout, 1, 1)
    windows = x._windows(kernel, stride, dilation)                       # (N, Cin, *out, *kernel)
    out_shape = windows.shape[2:2 + dims]
    # one matrix product per group: (Cout/G, Cin/G * kernel) @ (Cin/G * kernel, N * out positions). The
    # columns are copied out in that order, which walks the input along its rows (no index division).
    windows = windows.reshape(batch, groups, cin_group, *out_shape, *kernel)
    columns = windows.permute(1, 2, *range(3 + dims, 3 + 2 * dims), 0, *range(3, 3 + dims)).contiguous()  # (G, Cin/G, *kernel, N, *out)
    columns = columns.reshape(groups, cin_group * math.prod(kernel), batch * math.prod(out_shape))
    w = weight.reshape(groups, cout // groups, cin_group * math.prod(kernel))
    # in the dtype of a sum of the products, as tinygrad's conv2d: int8 inputs give int32
    out = w._product(columns, acc_dtype).reshape(groups, cout // groups, batch, *out_shape)
    if bias is not None: out = out + bias.reshape(groups, cout // groups, *([1] * (1 + dims)))
    # the output gradient is copied once into this layout, where both gradient products and the bias's sum read it
    out = out.contiguous_backward()
    return out.permute(2, 0, 1, *range(3, 3 + dims)).reshape(batch, cout, *out_shape)

  def _direct_conv_applies(self, weight: Tensor, pads: list, acc_dtype) -> bool:
    """Whether a convolution runs an image at a time (linalg.DirectConv): 2-D, on the CPU, a dtype OpenBLAS
    multiplies, padding but no cropping. (conv5x5 benchmark, 128 x 32 x 24 x 24, both gradients: 77.6 -> 36.3 ms;
    the columns of the whole batch no longer go out to memory.)"""
    return self.ndim == 4 and devices.is_cpu(self.device) and self.dtype == weight.dtype and \
      self.dtype in DIRECT_CONV_DTYPES and acc_dtype in (None, self.dtype) and min(pads) >= 0 and \
      self.numel() > 0 and weight.numel() > 0

  def conv_transpose2d(self, weight: Tensor, bias: Optional[Tensor] = None, groups: int = 1, stride=1, dilation=1,
                       padding=0, output_padding=0) -> Tensor:
    """The gradient of conv2d with respect to its input, as a layer: x (N, Cin, *S), weight (Cin, Cout/groups, *K); an
    unbatched x (Cin, *S) gives (Cout, *S'), as torch's."""
    weight, bias = self._operand(weight, "weight"), self._operand(bias, "bias", optional=True)
    if weight.ndim >= 3 and self.ndim == weight.ndim - 1:
      return self.unsqueeze(0).conv_transpose2d(weight, bias, groups, stride, dilation, padding, output_padding).squeeze(0)
    dims = weight.ndim - 2
    if dims < 1 or self.ndim != weight.ndim:
      raise ValueError(f"conv_transpose2d needs input and weight of equal rank >= 3, got {self.shape} and {weight.shape}")
    self._check_same_device(weight)
    cin, cout_group = weight.shape[:2]
    _check_int("conv_transpose2d groups", groups, 1)
    if self.shape[1] != cin or cin % groups:
      raise ValueError(f"input channels {self.shape[1]} do not match weight {weight.shape} with groups={groups}")
    if bias is not None and bias.shape != (cout_group * groups,):
      raise ValueError(f"conv_transpose2d bias of shape {bias.shape} does not fit weight {weight.shape} with groups={groups}: it needs ({cout_group * groups},)")
    kernel, stride, dilation = self._pool_args(weight.shape[2:], stride, dilation, dims)
    if not isinstance(padding, (int, list, tuple)): raise TypeError(f"conv_transpose2d padding {padding!r} must be an int or a sequence of ints")
    pads = [padding] * dims if isinstance(padding, int) else list(padding)
    if len(pads) != dims: raise ValueError(f"conv_transpose2d padding {padding} must be an int or {dims} value(s), one per spatial dim")
    extra = [output_padding] * dims if isinstance(output_padding, int) else list(output_padding)
    if len(extra) != dims or any(not 0 <= e < max(s, d) for e, s, d in zip(extra, stride, dilation)):
      raise ValueError(f"output_padding {output_padding} must be {dims} value(s), each below its stride {stride} or dilation {dilation}")
    out_size = [(n - 1) * s - 2 * p + d * (k - 1) + e + 1 for n, s, p, d, k, e in zip(self.shape[2:], stride, pads, dilation, kernel, extra)]
    if any(size < 1 for size in out_size):
      raise ValueError(f"conv_transpose2d of input {self.shape} with weight {weight.shape}, stride {stride}, padding {pads}, "
                       f"dilation {dilation} and output_padding {extra} gives an output size {tuple(out_size)}, below 1")
    if any(s > 1 for s in stride) and all(e < s for e, s in zip(extra, stride)) and self._direct_conv_applies(weight, pads, None):
      # a convolution's input gradient reads no zeros: 8 x 32 x 32 x 32 to 16 channels, 3x3, stride 2, forward in
      # 8.2-12.3 ms with zeros put between the inputs, 1.3-1.8 ms so (fastest of 9, another process busy)
      geometry = (cout_group * groups, *out_size, cin, groups, *kernel, *stride, *dilation, *pads, *self.shape[2:])
      out = F.ConvTranspose.apply(self, weight, geometry=geometry, out_shape=(self.shape[0], cout_group * groups, *out_size))
      return out if bias is None else out + bias.reshape(1, -1, 1, 1)
    x = self
    for axis, s in enumerate(stride):   # put s-1 zeros between neighbouring inputs
      if s == 1: continue
      d = 2 + axis
      n = x.shape[d]
      x = x.unsqueeze(d + 1).pad(tuple((0, s - 1) if i == d + 1 else None for i in range(x.ndim + 1)))
      x = x.reshape(*x.shape[:d], n * s, *x.shape[d + 2:]).shrink(
        tuple((0, (n - 1) * s + 1) if i == d else None for i in range(x.ndim - 1)))
    w = weight.reshape(groups, cin // groups, cout_group, *kernel).transpose(1, 2)
    w = w.reshape(groups * cout_group, cin // groups, *kernel).flip(tuple(range(2, 2 + dims)))
    pad2d = []
    for k, d, p, e in reversed(list(zip(kernel, dilation, pads, extra))):
      pad2d += [d * (k - 1) - p, d * (k - 1) - p + e]
    return x.conv2d(w, bias, groups=groups, dilation=dilation, padding=pad2d)

  # ---- neural-network functionals (the longer ones in nbgrad/functional.py)
  def linear(self, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    weight, bias = self._operand(weight, "weight"), self._operand(bias, "bias", optional=True)
    out = self * weight if weight.ndim == 1 else self.dot(weight)
    return out if bias is None else out + bias

  def sequential(self, ll) -> Tensor:
    out = self
    for layer in ll: out = layer(out)
    return out

  @_in_float32
  def layernorm(self, axis=-1, eps: float = 1e-5) -> Tensor:
    centered = self - self.mean(axis, keepdim=True)
    return centered * (centered * centered).mean(axis, keepdim=True).add(eps).rsqrt()

  def batchnorm(self, weight: Optional[Tensor], bias: Optional[Tensor], mean: Tensor, invstd: Tensor, axis=1) -> Tensor:
    return functional.batchnorm(self, weight, bias, mean, invstd, axis)

  def one_hot(self, num_classes: int) -> Tensor:
    """1 where the last axis's position equals the value (float labels too, as in tinygrad: 2.0 is class 2, 2.5 none)."""
    _check_int("one_hot num_classes", num_classes)
    return (self.unsqueeze(-1) == Tensor.arange(num_classes, device=self.device)).where(1, 0)

  def binary_crossentropy(self, y: Tensor) -> Tensor: return functional.binary_crossentropy(self, y)
  def binary_crossentropy_logits(self, y: Tensor) -> Tensor:
    return functional.logit_cross_entropy_terms(*self._broadcasted(self._operand(y, "target"))).mean()

  def sparse_categorical_crossentropy(self, Y: Tensor, ignore_index: int = -1, label_smoothing: float = 0.0) -> Tensor:
    return functional.sparse_categorical_crossentropy(self, Y, ignore_index, label_smoothing)
  def nll_loss(self, target: Tensor, weight: Optional[Tensor] = None, ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    return functional.nll_loss(self, target, weight, ignore_index, reduction)
  def cross_entropy(self, target: Tensor, weight: Optional[Tensor] = None, ignore_index: int = -100, reduction: str = "mean",
                    label_smoothing: float = 0.0) -> Tensor:
    return functional.cross_entropy(self, target, weight, ignore_index, reduction, label_smoothing)

  def normalize(self, p=2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """torch's F.normalize: self over its p-norm along dim, that norm no smaller than eps."""
    return self / self.norm(p, dim=dim, keepdim=True).maximum(eps)

  def cosine_similarity(self, other, dim: int = 1, eps: float = 1e-8) -> Tensor: return functional.cosine_similarity(self, other, dim, eps)

  def bernoulli(self) -> Tensor:
    """1 with probability self, else 0, drawn from the generator, in self's float dtype. A probability outside [0, 1]
    (or nan) raises where the values are computed already (as torch's); one still to be computed is not computed
    for it, and draws 1 above 1 and 0 below 0."""
    p = self._float_input().detach()
    if (values := functional.known_values(p)) is not None and not ((values >= 0) & (values <= 1)).all():
      raise ValueError(f"bernoulli needs probabilities in [0, 1], got {values[~((values >= 0) & (values <= 1))].flat[0]}")
    return (Tensor.rand(*p.shape, device=self.device) < p).cast(p.dtype)

  def logsigmoid(self) -> Tensor: return -(-self).softplus()   # log(sigmoid(x)) without its overflow and cancellation

  def scaled_dot_product_attention(self, key: Tensor, value: Tensor, attn_mask: Optional[Tensor] = None,
                                   dropout_p: float = 0.0, is_causal: bool = False, scale: Optional[float] = None,
                                   enable_gqa: bool = False) -> Tensor:
    return functional.scaled_dot_product_attention(self, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)

  # ---- torch.nn.functional's losses and distances (nbgrad/losses.py): each function there takes the tensor first, so
  # it is the method itself
  from nbgrad.losses import mse_loss, l1_loss, huber_loss, smooth_l1_loss, kl_div, gaussian_nll_loss, poisson_nll_loss, \
    binary_cross_entropy, binary_cross_entropy_with_logits, soft_margin_loss, multilabel_soft_margin_loss, \
    margin_ranking_loss, hinge_embedding_loss, cosine_embedding_loss, triplet_margin_loss, pairwise_distance, pdist, \
    multi_margin_loss, multilabel_margin_loss, softmin, ctc_loss

  # ---- linear algebra
  def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The elements (i, i + offset) of the matrices that dims dim1 and dim2 hold, along a new last dim (numpy's and
    torch's diagonal): a view, which in-place ops write through (x.diagonal().add_(1))."""
    _check_int("diagonal offset", offset, low=None)
    if self.ndim < 2: raise ValueError(f"diagonal needs at least 2 dims, got shape {self.shape}")
    first, second = resolve_axis(dim1, self.ndim), resolve_axis(dim2, self.ndim)
    if first == second: raise ValueError(f"diagonal dims must differ, got {dim1} and {dim2}")
    return F.Diagonal.apply(self, offset=offset, dim1=first, dim2=second)

  def diag(self, diagonal: int = 0) -> Tensor:
    """A 1-D tensor put on the given diagonal of a square matrix of zeros, or a matrix's diagonal (torch.diag, np.diag)."""
    _check_int("diag diagonal", diagonal, low=None)
    if self.ndim == 2: return self.diagonal(diagonal)
    if self.ndim != 1: raise ValueError(f"diag needs a 1-D or 2-D tensor, got shape {self.shape}")
    return self.diag_embed(diagonal)

  def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Square matrices of zeros with the last dim's vectors on their offset-th diagonal, the matrices in the new dims
    dim1 and dim2 (torch's diag_embed)."""
    _check_int("diag_embed offset", offset, low=None)
    first, second = resolve_axis(dim1, self.ndim + 1), resolve_axis(dim2, self.ndim + 1)
    if first == second: raise ValueError(f"diag_embed dims must differ, got {dim1} and {dim2}")
    x = self
    lead, n, k = x.shape[:-1], x.shape[-1], abs(offset)
    # each vector as a column padded with n zeros: read n * n of it flat, the elements fall on the diagonal
    square = x.reshape(lead + (n, 1)).pad(((0, 0),) * len(lead) + ((0, 0), (0, n))).flatten(-2)
    square = square.shrink(tuple((0, s) for s in lead) + ((0, n * n),)).reshape(lead + (n, n))
    matrices = square.pad(((0, 0),) * len(lead) + (((0, k), (k, 0)) if offset >= 0 else ((k, 0), (0, k))))
    return matrices.movedim((-2, -1), (first, second))

  def diagflat(self, offset: int = 0) -> Tensor: return self.flatten().diag_embed(offset)

  def trace(self) -> Tensor:
    if self.ndim != 2: raise ValueError(f"trace needs a matrix, got shape {self.shape}")
    return self.diagonal().sum()

  # dense linear algebra (nbgrad/dense.py): LAPACK's factorizations with torch's gradients
  def inverse(self) -> Tensor: return dense.inverse(self)
  def det(self) -> Tensor: return dense.det(self)
  def slogdet(self) -> tuple[Tensor, Tensor]: return dense.slogdet(self)
  def logdet(self) -> Tensor: return dense.logdet(self)
  def solve(self, b, *, left: bool = True) -> Tensor: return dense.solve(self, b, left=left)
  def cholesky(self, upper: bool = False) -> Tensor:
    """The lower factor L of self = L L^T, or with upper (torch's Tensor.cholesky) its transpose U, self = U^T U."""
    lower = dense.cholesky(self)
    return lower.transpose(-2, -1) if upper else lower
  def eigh(self, UPLO: str = "L") -> tuple[Tensor, Tensor]: return dense.eigh(self, UPLO)
  def svd(self, some: bool = True, compute_uv: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """torch's Tensor.svd: (U, S, V) with self = U diag(S) V^T, V itself (linalg.svd's Vh is its transpose), S
    descending; some=False gives the full U (m x m) and V (n x n); compute_uv=False gives U and V of zeros."""
    if not compute_uv:
      values = dense.svdvals(self)   # checks the shape
      u, v = (Tensor.zeros(*self.shape[:-2], n, n, dtype=self.dtype, device=self.device) for n in self.shape[-2:])
      return u, values, v
    u, s, vh = dense.svd(self, full_matrices=not some)
    return u, s, vh.transpose(-2, -1)
  def qr(self, mode="reduced", *, some: Optional[bool] = None) -> tuple[Tensor, Tensor]:
    """torch.linalg.qr's mode, or torch's Tensor.qr(some): some=False is mode "complete" (a bool mode is some)."""
    if isinstance(mode, bool): mode, some = "reduced", mode
    return dense.qr(self, mode if some is None else "reduced" if some else "complete")
  def pinv(self, rtol: Optional[float] = None, *, atol: Optional[float] = None, hermitian: bool = False) -> Tensor:
    return dense.pinv(self, rtol, atol=atol, hermitian=hermitian)
  def matrix_power(self, n: int) -> Tensor: return dense.matrix_power(self, n)
  def pinverse(self, rcond: float = 1e-15) -> Tensor: return dense.pinverse(self, rcond)
  def lstsq(self, b, rcond: Optional[float] = None, *, driver: Optional[str] = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    return dense.lstsq(self, b, rcond, driver=driver)
  def eigvalsh(self, UPLO: str = "L") -> Tensor: return dense.eigvalsh(self, UPLO)
  def svdvals(self) -> Tensor: return dense.svdvals(self)
  def eig(self) -> tuple[Tensor, Tensor]: return dense.eig(self)
  def eigvals(self) -> Tensor: return dense.eig(self)
  def matrix_exp(self) -> Tensor: return dense.matrix_exp(self)
  def matrix_norm(self, ord="fro", dim=(-2, -1), keepdim: bool = False) -> Tensor: return dense.matrix_norm(self, ord, dim, keepdim)
  def vector_norm(self, ord=2, dim=None, keepdim: bool = False) -> Tensor: return dense.vector_norm(self, ord, dim, keepdim)
  def lu(self, *, pivot: bool = True) -> tuple[Tensor, Tensor, Tensor]: return dense_solve.lu(self, pivot=pivot)
  def lu_factor(self, *, pivot: bool = True) -> tuple[Tensor, Tensor]: return dense_solve.lu_factor(self, pivot=pivot)
  def lu_solve(self, LU_data, LU_pivots, *, left: bool = True, adjoint: bool = False) -> Tensor:
    return dense_solve.lu_solve(self, LU_data, LU_pivots, left=left, adjoint=adjoint)
  def solve_triangular(self, B, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    return dense_solve.solve_triangular(self, B, upper, left, unitriangular)
  def triangular_solve(self, A, upper: bool = True, transpose: bool = False, unitriangular: bool = False) -> tuple[Tensor, Tensor]:
    return dense_solve.triangular_solve(self, A, upper, transpose, unitriangular)
  def cholesky_solve(self, L, upper: bool = False) -> Tensor: return dense_solve.cholesky_solve(self, L, upper)
  def cholesky_inverse(self, upper: bool = False) -> Tensor: return dense_solve.cholesky_inverse(self, upper)

  def cross(self, other, dim: int = -1) -> Tensor:
    """The cross products of 3-vectors along dim (torch's linalg.cross), batch dims broadcast."""
    a, b = self._broadcasted(self._operand(other, "cross operand"))
    dim = resolve_axis(dim, a.ndim)
    if a.shape[dim] != 3: raise ShapeMismatch(f"cross needs vectors of 3 along dim {dim}, got shapes {self.shape} and {other.shape}")
    x, y = [t.unbind(dim) for t in (a, b)]
    return Tensor.stack(x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0], dim=dim)

  def kron(self, other) -> Tensor:
    """The Kronecker product (numpy's and torch's kron): each element of self times all of other, in blocks."""
    other = self._operand(other, "kron operand")
    ndim = max(self.ndim, other.ndim)
    a, b = self.reshape((1,) * (ndim - self.ndim) + self.shape), other.reshape((1,) * (ndim - other.ndim) + other.shape)
    spread_a = a.reshape(tuple(d for s in a.shape for d in (s, 1)))
    spread_b = b.reshape(tuple(d for s in b.shape for d in (1, s)))
    return (spread_a * spread_b).reshape(tuple(s * t for s, t in zip(a.shape, b.shape)))

  def tensordot(self, other, dims=2) -> Tensor:
    """The sum over paired dims of self and other (numpy's and torch's tensordot): dims an int (self's last dims with
    other's first) or two lists of dims."""
    other = self._operand(other, "tensordot operand")
    if _is_int(dims): mine, theirs = list(range(self.ndim - dims, self.ndim)), list(range(dims))
    else: mine, theirs = [resolve_axis(d, self.ndim) for d in dims[0]], [resolve_axis(d, other.ndim) for d in dims[1]]
    if len(mine) != len(theirs) or any(self.shape[i] != other.shape[j] for i, j in zip(mine, theirs)):
      raise ShapeMismatch(f"tensordot pairs dims {mine} of {self.shape} with dims {theirs} of {other.shape}: their sizes differ")
    keep_mine, keep_theirs = [d for d in range(self.ndim) if d not in mine], [d for d in range(other.ndim) if d not in theirs]
    summed = math.prod(self.shape[d] for d in mine)
    left = self.permute(keep_mine + mine).reshape(math.prod(self.shape[d] for d in keep_mine), summed)
    right = other.permute(theirs + keep_theirs).reshape(summed, math.prod(other.shape[d] for d in keep_theirs))
    return (left @ right).reshape(tuple(self.shape[d] for d in keep_mine) + tuple(other.shape[d] for d in keep_theirs))

  def outer(self, other: Tensor) -> Tensor:
    """out[i, j] = self[i] * other[j] for 1-D tensors (torch.outer)."""
    other = self._operand(other, "outer operand")
    if self.ndim != 1 or other.ndim != 1: raise ValueError(f"outer needs 1-D tensors, got {self.shape} and {other.shape}")
    return self.reshape(-1, 1) * other.reshape(1, -1)
  ger = outer

  # torch's products of fixed ranks: the same product as matmul, with the ranks checked
  def _ranked_product(self, other, op: str, ranks: tuple[int, int]) -> Tensor:
    other = self._operand(other, f"{op} operand")
    if (self.ndim, other.ndim) != ranks: raise ShapeMismatch(f"{op} needs {ranks[0]}-D and {ranks[1]}-D tensors, got {self.shape} and {other.shape}")
    if op == "bmm" and self.shape[0] != other.shape[0]: raise ShapeMismatch(f"bmm needs equal batch sizes, got {self.shape} and {other.shape}")
    return self.matmul(other)
  def mm(self, mat2) -> Tensor: return self._ranked_product(mat2, "mm", (2, 2))
  def bmm(self, mat2) -> Tensor: return self._ranked_product(mat2, "bmm", (3, 3))
  def mv(self, vec) -> Tensor: return self._ranked_product(vec, "mv", (2, 1))
  def vdot(self, other) -> Tensor: return self._ranked_product(other, "vdot", (1, 1))

  def inner(self, other) -> Tensor:
    """The sums of products over the last dims (numpy's and torch's inner): shape self.shape[:-1] + other.shape[:-1]."""
    other = self._operand(other, "inner operand")
    if self.ndim == 0 or other.ndim == 0: return self * other
    return self.tensordot(other, ([-1], [-1]))

  def _plus_product(self, product: Tensor, beta, alpha) -> Tensor:
    """beta * self + alpha * product, self broadcast to the product's shape; with beta 0 self is not read (its NaNs
    stay out), as in torch."""
    scaled = product if alpha == 1 else product * alpha
    if beta == 0: return scaled + self._flat(self.zeros_like())._broadcast_to(scaled.shape)   # a gradient of 0, as torch's
    return scaled + (self if beta == 1 else self * beta)._broadcast_to(scaled.shape)
  def addmm(self, mat1, mat2, beta=1, alpha=1) -> Tensor: return self._plus_product(self._operand(mat1, "addmm mat1").mm(mat2), beta, alpha)
  def addmv(self, mat, vec, beta=1, alpha=1) -> Tensor: return self._plus_product(self._operand(mat, "addmv mat").mv(vec), beta, alpha)
  def addr(self, vec1, vec2, beta=1, alpha=1) -> Tensor: return self._plus_product(self._operand(vec1, "addr vec1").outer(vec2), beta, alpha)
  def baddbmm(self, batch1, batch2, beta=1, alpha=1) -> Tensor:
    return self._plus_product(self._operand(batch1, "baddbmm batch1").bmm(batch2), beta, alpha)
  def addbmm(self, batch1, batch2, beta=1, alpha=1) -> Tensor:
    return self._plus_product(self._operand(batch1, "addbmm batch1").bmm(batch2).sum(0), beta, alpha)

  def dot(self, w: Tensor, acc_dtype=None) -> Tensor:
    """Matrix product with numpy's rules for 1-D and batched operands: Tensor([1., 2.]).dot(Tensor([3., 4.])) is 11."""
    w = self._operand(w, "matmul operand")
    shape, w_shape = self.shape, w.shape
    if not shape or not w_shape: raise ShapeMismatch(f"dot needs at least 1-D tensors, got {shape} and {w_shape}")
    if shape[-1] != w_shape[-min(len(w_shape), 2)]: raise ShapeMismatch(f"matmul inner sizes differ: {shape} @ {w_shape}")
    if len(shape) > 2 or len(w_shape) > 2:
      try: broadcast_shape(self.shape[:-2], w.shape[:-2])
      except ValueError: raise ShapeMismatch(f"matmul batch dims do not broadcast: {self.shape} @ {w.shape}") from None
    self._check_same_device(w)
    return self._product(w, acc_dtype).cast(least_upper_dtype(self.dtype, w.dtype))

  def _product(self, w: Tensor, acc_dtype) -> Tensor:
    """self @ w in the dtype a sum of the products has (ints widen; conv2d keeps it, dot casts back)."""
    out_dtype = least_upper_dtype(self.dtype, w.dtype)
    blas_dtype = _blas_dtype(out_dtype, acc_dtype)
    # two vectors: one multiply-and-sum kernel costs less to build and run than a product's (1024 float32: 38 against
    # 79 us)
    if blas_dtype is None or self.ndim == w.ndim == 1:
      if out_dtype in HALF_FLOATS and acc_dtype is None: return in_float32_rounded_to(out_dtype, Tensor._dot_by_sum, self, w, None)
      return self._dot_by_sum(w, acc_dtype)
    out = self.cast(blas_dtype)._blas_matmul(w.cast(blas_dtype))
    return out.cast(out_dtype) if out_dtype in HALF_FLOATS else out

  def _blas_matmul(self, w: Tensor) -> Tensor:
    """A 1-D self is one row and a 1-D w one column; batch dims broadcast, except that a matrix w takes
    all of self's rows in one product (and its gradient is then one product too, not a sum of many)."""
    if self.ndim == w.ndim == 2: return F.Matmul.apply(self, w)   # the common case, none of the reshapes below
    x = self.reshape(1, self.shape[0]) if self.ndim == 1 else self
    m = w.reshape(w.shape[0], 1) if w.ndim == 1 else w
    batch = broadcast_shape(x.shape[:-2], m.shape[:-2])
    out_shape = batch + self.shape[-2:-1] + (w.shape[-1:] if w.ndim > 1 else ())
    if m.ndim == 2 and x.ndim > 2: out = F.Matmul.apply(x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), m)
    else: out = F.Matmul.apply(x._broadcast_to(batch + x.shape[-2:]), m._broadcast_to(batch + m.shape[-2:]))
    return out.reshape(out_shape)

  def _dot_by_sum(self, w: Tensor, acc_dtype) -> Tensor:
    """The product as a broadcast multiply and a sum: any dtype, any accumulation dtype. A matrix w is summed
    over its rows (the second-to-last axis), not read transposed: the kernel then adds a row of x's element
    times a row of w to a row of accumulators, contiguous loops LLVM vectorizes (benchmark matmul_int32_512:
    183 -> 4.4 ms; torch 12)."""
    if w.ndim == 1: return (self * w).sum(-1, acc_dtype=acc_dtype)
    x = self.reshape(self.shape + (1,))
    if self.ndim > 1: w = w.reshape(w.shape[:-2] + (1,) + w.shape[-2:])
    return (x * w).sum(-2, acc_dtype=acc_dtype)

  def matmul(self, x: Tensor, reverse=False, acc_dtype=None) -> Tensor:
    x = self._operand(x, "matmul operand")
    return x.dot(self, acc_dtype=acc_dtype) if reverse else self.dot(x, acc_dtype=acc_dtype)

  def requires_grad_(self, requires_grad: bool = True) -> Tensor:
    _check_requires_grad(requires_grad, self.dtype)
    self.requires_grad = requires_grad
    return self

  def detach_(self) -> Tensor:
    self._ctx, self.requires_grad = None, False
    return self

  # ---- torch's remaining methods: gcd and lcm, frexp, in-place shape changes, type names, gradient hooks, small ones
  def _int_operands(self, other, op: str) -> tuple[Tensor, Tensor]:
    a, b = self._broadcasted(other)
    if not dtypes.is_int(a.dtype): raise UnsupportedDType(f"{op} takes integer tensors; {self.dtype} and the other operand promote to {a.dtype}")
    return a, b
  def gcd(self, other) -> Tensor:
    """The greatest common divisor of the magnitudes, elementwise (torch's gcd): never negative, gcd(0, 0) = 0."""
    a, b = self._int_operands(other, "gcd")
    return a._nondiff(BinaryOps.GCD, b)
  def lcm(self, other) -> Tensor:
    """The least common multiple of the magnitudes, elementwise (torch's lcm): |a / gcd(a, b) * b|, 0 where gcd is 0."""
    a, b = self._int_operands(other, "lcm")
    divisor = a._nondiff(BinaryOps.GCD, b)
    wide = a.dtype if a.dtype.itemsize >= 4 else dtypes.int32   # as torch's C++: 8- and 16-bit products wrap after the abs
    multiple = (a._nondiff(BinaryOps.IDIV, divisor).cast(wide) * b.cast(wide)).abs().cast(a.dtype)
    return (divisor == 0).where(0, multiple)

  def frexp(self) -> tuple[Tensor, Tensor]:
    """(mantissa, int32 exponent) with self = mantissa * 2 ** exponent and 0.5 <= |mantissa| < 1 (torch's frexp); 0, inf
    and nan are their own mantissa, with exponent 0. The mantissa's gradient is 2 ** -exponent."""
    if not dtypes.is_float(self.dtype): raise UnsupportedDType(f"frexp needs a float tensor, got {self.dtype}")
    x, fraction_bits = self.detach(), _FRACTION_BITS[self.dtype]
    exponent_bits = 8 * self.dtype.itemsize - 1 - fraction_bits
    bias = (1 << (exponent_bits - 1)) - 1
    subnormal = x.abs() < 2.0 ** (1 - bias)   # scaled up by 2 ** (fraction_bits + 1) into the normal range first
    bits = subnormal.where(x * 2.0 ** (fraction_bits + 1), x).bitcast(signed_int_of_size(self.dtype))
    field = (bits >> fraction_bits) & ((1 << exponent_bits) - 1)
    exponent = field.cast(dtypes.int32) - (bias - 1) - subnormal.where(fraction_bits + 1, 0)
    mantissa = ((bits & ~(((1 << exponent_bits) - 1) << fraction_bits)) | ((bias - 1) << fraction_bits)).bitcast(self.dtype)
    special = (x == 0) | ~x.isfinite()
    exponent = special.where(0, exponent)
    return _with_derivatives((self,), special.where(x, mantissa), (lambda: (-exponent).cast(self.dtype).exp2(),)), exponent

  def angle(self) -> Tensor:
    """The angle of each value as a complex number (torch's angle of a real tensor): pi where negative, else 0, nan where
    nan; ints and bools give floats. Its gradient is 0."""
    x = self._float_input()
    return x._flat(x.isnan().where(x, (x < 0).where(math.pi, x.zeros_like())))

  def prelu(self, weight) -> Tensor:
    """self where it is positive, else weight * self, with one weight or one per channel (dim 1) (torch's prelu)."""
    weight = self._operand(weight, "prelu weight")
    if not dtypes.is_float(self.dtype): raise UnsupportedDType(f"prelu needs a float tensor, got {self.dtype}")
    channels = self.shape[1] if self.ndim >= 2 else 1
    if weight.ndim > 1 or weight.numel() not in (1, channels):
      raise ShapeMismatch(f"prelu needs one weight or one per channel ({channels} for shape {self.shape}) in a 1-D tensor, got shape {weight.shape}")
    weight = weight.reshape((channels,) + (1,) * (self.ndim - 2)) if weight.numel() > 1 else weight.reshape(())
    return (self > 0).where(self, weight * self)

  # in-place shape changes: the tensor object itself takes the new shape (see _view_in_place)
  def unsqueeze_(self, dim: int) -> Tensor: return self._view_in_place("unsqueeze_", lambda t: t.unsqueeze(dim))
  def squeeze_(self, dim=None) -> Tensor: return self._view_in_place("squeeze_", lambda t: t.squeeze(dim))
  def t_(self) -> Tensor: return self._view_in_place("t_", lambda t: t.t())
  def transpose_(self, dim0: int, dim1: int) -> Tensor: return self._view_in_place("transpose_", lambda t: t.transpose(dim0, dim1))
  swapaxes_ = swapdims_ = transpose_
  def as_strided_(self, size, stride, storage_offset: int = 0) -> Tensor:
    """self becomes self.as_strided(...), which counts positions in self's flattened elements (torch's in its storage)."""
    return self._view_in_place("as_strided_", lambda t: t.as_strided(size, stride, storage_offset))
  def resize_(self, *sizes) -> Tensor:
    """self in shape sizes, its elements read in order from where it starts in the buffer it is stored in (torch's
    resize_; the same shape changes nothing). Grown past that buffer's end, the new elements are 0 (torch's are unset)."""
    shape = shape_arg(*sizes)
    if self.requires_grad: raise RuntimeError(f"cannot resize a tensor that requires grad (shape {self.shape}), as in torch")
    return self if shape == self.shape else self._view_in_place("resize_", lambda t: t._stored_prefix(shape))
  def resize_as_(self, other) -> Tensor: return self.resize_(self._operand(other, "resize_as_ operand").shape)

  def _stored_prefix(self, shape: tuple[int, ...]) -> Tensor:
    """The prod(shape) elements from storage_offset() on of the buffer stride() counts in (self's own elements when it is
    stored apart), zeros past its end, in shape."""
    lazy = self.lazydata
    window = self._buffer_window()
    reads_base = lazy is not lazy.base and lazy.base.op is not LoadOps.CONST and lazy.view.strided() == window
    storage, offset = (Tensor(lazy.base).flatten(), window[1]) if reads_base else (self.flatten(), 0)
    count = math.prod(shape)
    taken = storage[offset:offset + count]
    return taken.pad(((0, count - taken.numel()),)).reshape(shape)

  def _view_in_place(self, op: str, make) -> Tensor:
    """self becomes make(self), its elements in another shape or order, and is returned. Its history stays behind a
    stand-in that make reads, so the gradient flows back through make; tensors that shared self's elements (views of it,
    or the one it is a view of) share them with it still, and a .grad is changed as self is."""
    if self.requires_grad and not self._in_graph() and not Tensor.no_grad:
      raise RuntimeError(f"{op}: a leaf tensor that requires grad (shape {self.shape}) cannot be changed in place, as in torch; "
                         "detach() it, or change it under Tensor.inference_mode()")
    before = Tensor(self.lazydata, requires_grad=self.requires_grad)
    before._ctx = self._ctx
    after = make(before)
    if after is before: return self
    before._view_of, before._views = self._view_of, self._views
    if before._view_of is not None: add_weak_reference(before._view_of[0]._views, before)
    for ref in before._views or ():
      view = ref()
      if view is not None and view._view_of is not None and view._view_of[0] is self: view._view_of = (before,) + view._view_of[1:]
    self.lazydata, self._ctx, self.requires_grad, self._view_of, self._views = after.lazydata, after._ctx, after.requires_grad, None, None
    if before._view_of is not None or before._views: self._record_view(before, _MadeBy, {"make": make})
    if self._grad is not None: self._grad = make(self._grad.detach())
    return self

  def type(self, dtype=None, non_blocking: bool = False, **kwargs):
    """Without dtype, torch's name of the tensor's type ('torch.FloatTensor', 'torch.cuda.LongTensor'); with a dtype (a
    DType, a numpy dtype, a name such as 'float16' or 'torch.HalfTensor'), the tensor cast to it (itself if it has it)."""
    if dtype is None: return f"torch.{'cuda.' if self.is_cuda else ''}{_TORCH_TYPE_NAMES[self.dtype]}Tensor"
    name = str(dtype) if type(dtype).__module__ == "torch" else dtype   # a torch.dtype, torch.float64
    if not (isinstance(name, str) and name.startswith("torch.")): return self.cast(dtype)
    on_gpu, name = name.startswith("torch.cuda."), name.rpartition(".")[2]
    if not name.endswith("Tensor"): return self.cast(name)   # torch.float16's name
    kind = name[:-len("Tensor")]
    if kind not in _TORCH_TYPE_DTYPES: raise TypeError(f"unknown tensor type {dtype!r}; known: {', '.join(_TORCH_TYPE_DTYPES)}")
    return (self if on_gpu == self.is_cuda else self.to("CUDA" if on_gpu else "CPU")).cast(_TORCH_TYPE_DTYPES[kind])

  # gradient hooks (nbgrad/hooks.py): backward() passes each tensor's gradient through them
  def register_hook(self, hook) -> hooks.RemovableHandle:
    """hook(grad) is called with the gradient that reaches this tensor in each backward; a Tensor it returns takes the
    gradient's place (torch's register_hook). The handle's remove() takes the hook off."""
    if not self.requires_grad: raise RuntimeError(f"cannot register a hook on a tensor that doesn't require grad (shape {self.shape})")
    return hooks.add_hook(self, "gradient", hook)
  def register_post_accumulate_grad_hook(self, hook) -> hooks.RemovableHandle:
    """hook(tensor) is called after each backward has added to this leaf's .grad (torch's)."""
    if not self.requires_grad: raise RuntimeError(f"cannot register a hook on a tensor that doesn't require grad (shape {self.shape})")
    if not self.is_leaf: raise RuntimeError(f"post accumulate grad hooks cannot be registered on non-leaf tensors (shape {self.shape})")
    return hooks.add_hook(self, "accumulated", hook)
  @property
  def retains_grad(self) -> bool:
    """Whether backward keeps this non-leaf's gradient in .grad: nbgrad keeps every one's (see retain_grad)."""
    return bool(self.requires_grad) and self._in_graph()
  def fill_diagonal_(self, fill_value, wrap: bool = False) -> Tensor:
    """fill_value on the main diagonal, in place (torch's): of a matrix, or of a tensor whose dims are all one length;
    with wrap, a tall matrix's diagonal starts again below a row left out."""
    if self.ndim < 2 or (self.ndim > 2 and len(set(self.shape)) > 1):
      raise ShapeMismatch(f"fill_diagonal_ needs a matrix or a tensor whose dims are all one length, got shape {self.shape}")
    step = sum(contiguous_strides(self.shape))   # from one diagonal element to the next, in flat positions
    end = self.numel() if wrap and self.ndim == 2 else min(self.shape) * step
    flat = Tensor.arange(self.numel(), dtype=int_dtype_holding(0, self.numel()), device=self.device).reshape(self.shape)
    return self._in_place(((flat % step == 0) & (flat < end)).where(self.full_like(fill_value), self))

  def narrow_copy(self, dim: int, start: int, length: int) -> Tensor:
    """narrow's elements in a tensor of their own (torch's narrow_copy)."""
    return self.narrow(dim, start, length).clone()
  def new_empty_strided(self, size, stride, **kwargs) -> Tensor:
    """new_empty(size) (torch's new_empty_strided: nbgrad lays out every new tensor contiguously, whatever the strides)."""
    if len(tuple(size)) != len(tuple(stride)): raise ValueError(f"new_empty_strided needs as many strides as sizes, got {size} and {stride}")
    return self.new_empty(tuple(size), **kwargs)
  def nonzero_static(self, *, size: int, fill_value: int = -1) -> Tensor:
    """nonzero's first size rows, padded with rows of fill_value up to size (torch's nonzero_static)."""
    _check_int("nonzero_static size", size)
    found = self.nonzero()
    if found.shape[0] >= size: return found[:size]
    return found.cat(Tensor.full((size - found.shape[0], self.ndim), fill_value, dtype=found.dtype, device=self.device))
  def as_strided_scatter(self, src, size, stride, storage_offset: int = 0) -> Tensor:
    """self with src written where as_strided(size, stride, storage_offset) reads (torch's as_strided_scatter)."""
    return scatter.into_view(self, src, lambda t: t.as_strided(size, stride, storage_offset), "as_strided_scatter")
  def pin_memory(self) -> Tensor: return self   # CPU buffers need no pinning here
  def is_inference(self) -> bool: return False   # inference_mode stops recording the graph; it makes no other tensors
  def is_neg(self) -> bool: return False   # nbgrad keeps no lazy negation bit
  def is_conj(self) -> bool: return False   # nor a conjugation bit: it has no complex dtype


_FRACTION_BITS = {dtypes.float16: 10, dtypes.bfloat16: 7, dtypes.float32: 23, dtypes.float64: 52}   # stored mantissa bits
_TORCH_TYPE_NAMES = {dtypes.bool: "Bool", dtypes.int8: "Char", dtypes.uint8: "Byte", dtypes.int16: "Short", dtypes.uint16: "UInt16",
                     dtypes.int32: "Int", dtypes.uint32: "UInt32", dtypes.int64: "Long", dtypes.uint64: "UInt64",
                     dtypes.float16: "Half", dtypes.bfloat16: "BFloat16", dtypes.float32: "Float", dtypes.float64: "Double"}
_TORCH_TYPE_DTYPES = {name: dtype for dtype, name in _TORCH_TYPE_NAMES.items()}


def _check_requires_grad(requires_grad, dtype: DType):
  """requires_grad is a bool, True only for a float tensor (torch's rule: an int's gradient came out truncated)."""
  if not isinstance(requires_grad, bool): raise TypeError(f"requires_grad must be True, False or None, got {requires_grad!r}")
  if requires_grad and not dtypes.is_float(dtype):
    raise UnsupportedDType(f"only tensors of a float dtype can require gradients, got {dtype.name}")


class _MadeBy:
  """A view step Tensor._view_of records as the callable that makes the view: a tensor given another shape in place
  (Tensor._view_in_place), a parameter's detach()."""
  @staticmethod
  def apply(tensor, make): return make(tensor)


def _is_dtype_like(x) -> bool:
  """A DType, a numpy dtype or scalar type, or a torch dtype: what view() reads as a dtype, not a shape."""
  return isinstance(x, (DType, np.dtype)) or (isinstance(x, type) and issubclass(x, np.generic)) or \
    (type(x).__module__ == "torch" and type(x).__name__ == "dtype")


def _detached(t: Tensor) -> Tensor: return Tensor(t.lazydata, device=t.device, requires_grad=False)


from nbgrad import normalization, sampling   # noqa: E402  (they build on Tensor, so they load once the class exists)


def _in_place_variant(op: str):
  def in_place(self, *args, **kwargs) -> Tensor: return self._in_place(getattr(self, op)(*args, **kwargs))
  in_place.__name__ = in_place.__qualname__ = f"{op}_"
  in_place.__doc__ = f"{op}, its result stored back in the tensor in the tensor's dtype, and the tensor returned (torch's {op}_)."
  return in_place


# torch's in-place forms of the ops that keep the shape (add_, clamp_ and the random fills are written out above)
for _op in ("abs absolute neg negative sign sgn sqrt rsqrt square reciprocal exp exp2 expm1 log log2 log10 log1p sin cos tan sinh "
            "cosh tanh asin acos atan asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh atan2 arctan2 sigmoid relu "
            "erf erfc erfinv lgamma digamma polygamma mvlgamma igamma igammac i0 logit sinc deg2rad rad2deg floor ceil trunc fix frac round "
            "nan_to_num clip clamp_min clamp_max pow float_power fmod remainder hypot xlogy copysign nextafter ldexp heaviside lerp "
            "addcmul addcdiv addmm addmv addr baddbmm addbmm multiply subtract divide true_divide floor_divide "
            "bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift logical_and logical_or "
            "logical_xor logical_not eq ne lt le gt ge greater greater_equal less less_equal not_equal cumsum cumprod renorm "
            "tril triu masked_fill masked_scatter index_add index_copy index_fill index_put put scatter scatter_add "
            "scatter_reduce gcd lcm index_reduce").split():
  if hasattr(Tensor, _op) and not hasattr(Tensor, f"{_op}_"): setattr(Tensor, f"{_op}_", _in_place_variant(_op))


# An in-place op reads the tensor and writes the result back: they run one at a time, or two threads' x += 1 could
# both read x before either wrote it, and a count was lost (torch's and numpy's each run in one call the interpreter
# does not interrupt). setitem too: x[1:3] += 1 ends in x[1:3] = v with v a view of x already added to, whose values
# setitem reads and writes back, and another thread's add between the two was lost; and getitem, whose new view of x
# another thread's setitem could find half registered and copy out (with the GIL switching every microsecond, two
# threads' 300 x[1:3] += 1 lost counts in 30 runs of 30 unlocked, in 5 with setitem alone locked, in none so)
_IN_PLACE_LOCK = threading.RLock()
_IN_PLACE_OPERATORS = ("__getitem__", "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__", "__imatmul__", "__ixor__", "__iand__",
                       "__ior__", "__ilshift__", "__irshift__", "__ifloordiv__", "__imod__")


def _one_at_a_time(method):
  @functools.wraps(method)
  def locked(self, *args, **kwargs):
    with _IN_PLACE_LOCK: return method(self, *args, **kwargs)
  return locked


for _name in [n for n in vars(Tensor) if (n.endswith("_") and not n.startswith("_")) or n in _IN_PLACE_OPERATORS]:
  setattr(Tensor, _name, _one_at_a_time(getattr(Tensor, _name)))
