"""Scalar helpers the generated CUDA kernels call, under the names the shared templates use.

The integer and bit helpers are the CPU runtime's own Python bodies (nbgrad/jit/runtime.py) compiled as
device functions; float math and half-precision conversions are libdevice's. Under numba's simulator
(NUMBA_ENABLE_CUDASIM=1) kernels run as Python, libdevice is not there, and numpy stands in."""
import math
import operator
import types as python_types
import numpy as np
from numba import cuda, config
from nbgrad.jit import runtime as cpu_runtime

SIMULATOR = bool(config.ENABLE_CUDASIM)
_INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")

if SIMULATOR:
  types = python_types.SimpleNamespace(**{n: getattr(np, n) for n in _INT_TYPES + ("float32", "float64")}, boolean=np.bool_)

  def reinterpret(value, target):
    target = np.dtype(target)
    value = np.asarray(value)
    if value.dtype.kind in "iub" and value.dtype.itemsize != target.itemsize:
      value = value.astype(np.dtype(f"u{target.itemsize}"))   # cut or extend to the target's width
    return value.view(target)[()]

  def _numpy_math(fn, dtype):
    return lambda x: dtype(fn(dtype(x)))
  expf, exp2f, logf, log2f, sinf, cosf, sqrtf, truncf, floorf, ceilf, rintf = (
    _numpy_math(fn, np.float32) for fn in (np.exp, np.exp2, np.log, np.log2, np.sin, np.cos, np.sqrt, np.trunc, np.floor, np.ceil, np.rint))
  exp, exp2, log, log2, sin, cos, sqrt, trunc, floor, ceil, rint = (
    _numpy_math(fn, np.float64) for fn in (np.exp, np.exp2, np.log, np.log2, np.sin, np.cos, np.sqrt, np.trunc, np.floor, np.ceil, np.rint))

  erff, erf = _numpy_math(np.vectorize(math.erf), np.float32), _numpy_math(np.vectorize(math.erf), np.float64)
  erfcf, erfc = _numpy_math(np.vectorize(math.erfc), np.float32), _numpy_math(np.vectorize(math.erfc), np.float64)
  log10f, log10 = _numpy_math(np.log10, np.float32), _numpy_math(np.log10, np.float64)
  expm1f, expm1 = _numpy_math(np.expm1, np.float32), _numpy_math(np.expm1, np.float64)
  tanhf, tanh = _numpy_math(np.tanh, np.float32), _numpy_math(np.tanh, np.float64)

  def _lgamma(x):   # C's lgamma: inf at the poles and at -inf, where Python's raises
    return math.inf if math.isinf(x) or (x <= 0 and x == math.floor(x)) else math.lgamma(x)
  lgammaf, lgamma = _numpy_math(np.vectorize(_lgamma), np.float32), _numpy_math(np.vectorize(_lgamma), np.float64)
  def atan2f(a, b): return np.float32(np.arctan2(np.float32(a), np.float32(b)))
  def atan2(a, b): return np.float64(np.arctan2(np.float64(a), np.float64(b)))
  def powf(a, b): return np.float32(np.power(np.float32(a), np.float32(b)))
  def pow(a, b): return np.float64(np.power(np.float64(a), np.float64(b)))   # noqa: A001 (libdevice's name)
  def fmul_rn(a, b): return np.float32(np.float32(a) * np.float32(b))
  def dmul_rn(a, b): return np.float64(a) * np.float64(b)

  def _wrapping(operation):
    return lambda a, b: np.int64((operation(int(a), int(b)) + 2 ** 63) % 2 ** 64 - 2 ** 63)
  wrapping_add, wrapping_sub, wrapping_mul = (_wrapping(op) for op in (operator.add, operator.sub, operator.mul))

  def f16_to_f32(h): return np.float32(np.uint16(h).view(np.float16))
  def f32_to_f16(f): return np.float32(f).astype(np.float16).view(np.uint16)
else:
  if not hasattr(np, "row_stack"):   # numba-cuda 0.30 registers this alias of vstack, which numpy 2.5 removed
    np.row_stack = np.vstack
  try:   # numba-cuda carries its own copies of these; numba's built-in numba.cuda uses numba's
    from numba.cuda import types
    from numba.cuda.extending import intrinsic
  except ImportError:
    from numba import types
    from numba.extending import intrinsic
  if not hasattr(types, "uint32"):   # the built-in numba.cuda's `types` holds only CUDA's own (Dim3, GridGroup)
    from numba import types
  from numba.cuda.libdevice import (expf, exp2f, logf, log2f, sinf, cosf, sqrtf, truncf, floorf, ceilf, rintf,  # noqa: F401
                                    exp, exp2, log, log2, sin, cos, sqrt, trunc, floor, ceil, rint, fmul_rn, dmul_rn, powf, pow,
                                    erff, erf, erfcf, erfc, lgammaf, lgamma, log10f, log10, expm1f, expm1, tanhf, tanh,
                                    atan2f, atan2)
  from numba.cuda.libdevice import half2float as f16_to_f32, float2half_rn as f32_to_f16  # noqa: F401
  reinterpret = intrinsic(cpu_runtime.reinterpret_typing)
  wrapping_add, wrapping_sub, wrapping_mul = (intrinsic(cpu_runtime.wrapping_typing(op)) for op in ("add", "sub", "mul"))

nb_types = types   # the name generated sources use for scalar types


def device_function(cpu_module, name: str, namespace: dict):
  """The numba CPU function `name` of cpu_module compiled for the GPU: the same body, looking its globals
  up in namespace (where the helpers it calls are device functions too)."""
  body = getattr(cpu_module, name).py_func
  return cuda.jit(device=True)(python_types.FunctionType(body.__code__, namespace, name))


bf16_to_f32 = device_function(cpu_runtime, "bf16_to_f32", globals())
f32_to_bf16 = device_function(cpu_runtime, "f32_to_bf16", globals())
f64_to_f32_odd = device_function(cpu_runtime, "f64_to_f32_odd", globals())
round_f16 = device_function(cpu_runtime, "round_f16", globals())
round_bf16 = device_function(cpu_runtime, "round_bf16", globals())
idiv = device_function(cpu_runtime, "idiv", globals())
imod = device_function(cpu_runtime, "imod", globals())
udiv = device_function(cpu_runtime, "udiv", globals())
umod = device_function(cpu_runtime, "umod", globals())
idiv32 = device_function(cpu_runtime, "idiv32", globals())
imod32 = device_function(cpu_runtime, "imod32", globals())
float_to_i32 = device_function(cpu_runtime, "float_to_i32", globals())
float_to_i64 = device_function(cpu_runtime, "float_to_i64", globals())
float_to_u32 = device_function(cpu_runtime, "float_to_u32", globals())
float_to_u64 = device_function(cpu_runtime, "float_to_u64", globals())
gcd_magnitude = device_function(cpu_runtime, "gcd_magnitude", globals())
fmax = device_function(cpu_runtime, "fmax", globals())
fmin = device_function(cpu_runtime, "fmin", globals())

