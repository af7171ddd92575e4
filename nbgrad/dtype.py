"""Dtypes: names, sizes, the promotion lattice and the numpy mapping. Every dtype fact lives here."""
from __future__ import annotations
import functools
import math
import os
import struct
import sys
from dataclasses import dataclass
import numpy as np
from nbgrad.helpers import ValueOutOfRange


@functools.total_ordering   # ordered by promotion priority, as tinygrad's dtypes compare
@dataclass(frozen=True)
class DType:
  priority: int      # order used to break ties in promotion
  itemsize: int
  name: str
  kind: str          # 'b' bool, 'i' signed int, 'u' unsigned int, 'f' float
  storage: str       # numpy dtype name of the buffer that holds it (bfloat16 is kept as its uint16 bits)

  @property
  def np(self) -> type:
    """The numpy scalar type values of this type come out as (bfloat16 comes out as float32), e.g. np.float32."""
    return np.float32 if self.name == "bfloat16" else np.dtype(self.storage).type

  @property
  def dtype(self) -> np.dtype:
    """numpy's dtype of the values (float32 for bfloat16), which np.dtype(), np.zeros(3, dtype=t.dtype) and
    array.astype(t.dtype) read."""
    return np.dtype(self.np)

  @property
  def fmt(self):
    """The struct / memoryview format character (None for bfloat16, which has none), as tinygrad's DType.fmt."""
    return None if self.name == "bfloat16" else np.dtype(self.storage).char
  count = 1   # a scalar type (tinygrad's vector dtypes have count > 1)
  def scalar(self) -> DType: return self

  def __repr__(self): return f"dtypes.{self.name}"
  def __lt__(self, other: DType): return self.priority < other.priority
  # kept: kernel and graph keys hash a dtype per node (a frozen dataclass would hash its five fields each time)
  def __post_init__(self):
    object.__setattr__(self, "_hash", hash((self.priority, self.itemsize, self.name, self.kind, self.storage)))
    object.__setattr__(self, "storage_dtype", np.dtype(self.storage))   # numpy parses a dtype's name on every np.empty
  def __hash__(self) -> int: return self._hash
  # a string's hash differs between processes: a pickled dtype is made again, its hash this process's
  def __reduce__(self): return DType, (self.priority, self.itemsize, self.name, self.kind, self.storage)
  # the fields are compared only when two distinct objects hash alike: the dataclass's comparison of all five
  # fields cost about 0.5 us, and a training step compares dtypes thousands of times
  def __eq__(self, other) -> bool:
    if self is other: return True
    if not isinstance(other, DType):
      # numpy's spellings compare as numpy compares them with its dtypes: t.dtype == np.float32, == "float32"
      if not isinstance(other, (str, np.dtype)) and not (isinstance(other, type) and issubclass(other, np.generic)): return NotImplemented
      try: other = to_dtype(other)
      except (TypeError, ValueError): return False
    return self._hash == other._hash and (self.priority, self.itemsize, self.name, self.kind, self.storage) == \
      (other.priority, other.itemsize, other.name, other.kind, other.storage)


class dtypes:
  bool = DType(0, 1, "bool", "b", "bool")
  int8 = DType(1, 1, "int8", "i", "int8")
  uint8 = DType(2, 1, "uint8", "u", "uint8")
  int16 = DType(3, 2, "int16", "i", "int16")
  uint16 = DType(4, 2, "uint16", "u", "uint16")
  int32 = DType(5, 4, "int32", "i", "int32")
  uint32 = DType(6, 4, "uint32", "u", "uint32")
  int64 = DType(7, 8, "int64", "i", "int64")
  uint64 = DType(8, 8, "uint64", "u", "uint64")
  float16 = DType(9, 2, "float16", "f", "float16")
  bfloat16 = DType(10, 2, "bfloat16", "f", "uint16")
  float32 = DType(11, 4, "float32", "f", "float32")
  float64 = DType(12, 8, "float64", "f", "float64")
  # aliases, as tinygrad names them
  half, float, double = float16, float32, float64
  char, uchar, short, ushort = int8, uint8, int16, uint16
  int, uint, long, ulong = int32, uint32, int64, uint64
  default_float = float32
  default_int = int32

  @staticmethod
  def is_float(x: DType) -> bool: return x.kind == "f"   # the parameter named as tinygrad's
  @staticmethod
  def is_int(x: DType) -> bool: return x.kind in "iu"
  @staticmethod
  def is_unsigned(x: DType) -> bool: return x.kind == "u"
  @staticmethod
  def is_bool(x: DType) -> bool: return x.kind == "b"

  @staticmethod
  def from_np(np_dtype) -> DType:
    if (known := _BY_NUMPY_DTYPE.get(np_dtype)) is not None: return known   # an array's dtype, without its name (2 us)
    name = np.dtype(np_dtype).name
    if name not in DTYPES_BY_NAME: raise TypeError(f"numpy dtype {name} is not supported")
    return DTYPES_BY_NAME[name]

  @staticmethod
  def fields() -> dict[str, DType]: return {**DTYPES_BY_NAME, **_ALIASES}   # with the aliases, as tinygrad's

  @staticmethod
  def from_py(x) -> DType:
    """The dtype of a Python scalar: default_float for a float, bool for a bool, default_int otherwise."""
    return dtypes.default_float if isinstance(x, float) else dtypes.bool if isinstance(x, bool) else dtypes.default_int

  @staticmethod
  def as_const(val, dtype: DType):
    """val as the Python scalar type of dtype (int, float or bool)."""
    return int(val) if dtypes.is_int(dtype) else float(val) if dtypes.is_float(dtype) else bool(val)

  @staticmethod
  def min(dt: DType): return dtype_limits(dt)[0]
  @staticmethod
  def max(dt: DType): return dtype_limits(dt)[1]


ALL_DTYPES = (dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32,
              dtypes.int64, dtypes.uint64, dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
DTYPES_BY_NAME = {dt.name: dt for dt in ALL_DTYPES}
_BY_NUMPY_DTYPE = {np.dtype(dt.name): dt for dt in ALL_DTYPES if dt.name != "bfloat16"}
HALF_FLOATS = (dtypes.float16, dtypes.bfloat16)   # stored in 16 bits, computed in float32 by the ops that need the range
_ALIASES = {"half": dtypes.half, "float": dtypes.float, "double": dtypes.double, "char": dtypes.char, "uchar": dtypes.uchar,
            "short": dtypes.short, "ushort": dtypes.ushort, "int": dtypes.int, "uint": dtypes.uint, "long": dtypes.long,
            "ulong": dtypes.ulong}
DTYPES_DICT = dtypes.fields()   # tinygrad's name for it

_env_default_float = os.getenv("DEFAULT_FLOAT", "")   # DEFAULT_FLOAT=half makes float16 the default, as in tinygrad
if _env_default_float:
  dtypes.default_float = DTYPES_BY_NAME.get(_env_default_float.lower()) or _ALIASES.get(_env_default_float.lower())
  if dtypes.default_float is None or not dtypes.is_float(dtypes.default_float):
    raise ValueError(f"DEFAULT_FLOAT={_env_default_float!r} is not a float dtype; known: float16, bfloat16, float32, float64")


def to_dtype(x) -> DType:
  """Accepts a DType, a dtype name ('float32', 'half'), a numpy dtype / type or a torch dtype (torch.float64)."""
  if isinstance(x, DType): return x
  if x is None: raise TypeError("a dtype is needed, got None")
  if type(x).__module__ == "torch" and str(x).startswith("torch."): x = str(x)[len("torch."):]   # torch need not be loaded here
  if isinstance(x, str):
    if x in DTYPES_BY_NAME: return DTYPES_BY_NAME[x]
    if x in _ALIASES: return _ALIASES[x]
    try:
      return dtypes.from_np(np.dtype(x))   # numpy's codes: 'f4', '<i8', '?'
    except (TypeError, ValueError):
      raise TypeError(f"unknown dtype {x!r}; known: {', '.join(DTYPES_BY_NAME)}") from None
  try:
    return dtypes.from_np(np.dtype(x))
  except (TypeError, ValueError):
    raise TypeError(f"unknown dtype {x!r}; expected a DType such as dtypes.float32") from None


# each dtype points at the types that can hold all its values
_PROMOTION_PARENTS = {
  dtypes.bool: (dtypes.int8, dtypes.uint8), dtypes.int8: (dtypes.int16,), dtypes.int16: (dtypes.int32,),
  dtypes.int32: (dtypes.int64,), dtypes.int64: (dtypes.float16, dtypes.bfloat16),
  dtypes.uint8: (dtypes.int16, dtypes.uint16), dtypes.uint16: (dtypes.int32, dtypes.uint32),
  dtypes.uint32: (dtypes.int64, dtypes.uint64), dtypes.uint64: (dtypes.float16, dtypes.bfloat16),
  dtypes.float16: (dtypes.float32,), dtypes.bfloat16: (dtypes.float32,), dtypes.float32: (dtypes.float64,),
  dtypes.float64: ()}


@functools.lru_cache(None)
def _ancestors(dt: DType) -> frozenset:
  return frozenset({dt}).union(*(_ancestors(p) for p in _PROMOTION_PARENTS[dt]))


@functools.lru_cache(None)   # asked for at every binary op
def least_upper_dtype(*dts: DType) -> DType:
  """The smallest dtype every argument promotes to."""
  return min(frozenset.intersection(*(_ancestors(d) for d in dts)))


def least_upper_float(dt: DType) -> DType:
  return dt if dtypes.is_float(dt) else least_upper_dtype(dt, dtypes.float32)


def sum_acc_dtype(dt: DType) -> DType:
  """The dtype a sum accumulates in: ints in at least int32, unsigned in at least uint32, bool in int32, half types
  in float32."""
  if dt == dtypes.bool: return dtypes.int32
  if dtypes.is_unsigned(dt): return least_upper_dtype(dt, dtypes.uint32)
  if dtypes.is_int(dt): return least_upper_dtype(dt, dtypes.int32)
  return least_upper_dtype(dt, dtypes.float32)


def dtype_limits(dt: DType):
  if dt.kind == "b": return False, True
  if dt.kind == "f": return -float("inf"), float("inf")
  info = np.iinfo(np.dtype(dt.storage))
  return int(info.min), int(info.max)


def int_dtype_holding(low: int, high: int) -> DType:
  """The dtype of ints from low to high: dtypes.default_int, widened to int64 (uint64 past 2**63 - 1) where the
  values need it, as Tensor(2**40) and Tensor([1, 2**40]) do."""
  for dt in (dtypes.default_int, dtypes.int64, dtypes.uint64):
    limits = dtype_limits(dt)
    if limits[0] <= low and high <= limits[1]: return dt
  raise ValueError(f"ints from {low} to {high} do not fit in int64 or uint64; give a float dtype to store them as floats")


def index_dtype(largest: int) -> DType:
  """The dtype of positions up to largest: int32, the API's (tinygrad's) index dtype, or int64 past its range."""
  return dtypes.int32 if largest < 2**31 else dtypes.int64


def signed_int_of_size(dt: DType) -> DType:
  """The signed int dtype as wide as dt: a float's bits read as an int (its sign bit the int's)."""
  return {1: dtypes.int8, 2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[dt.itemsize]


_LARGEST = {2: 65504.0, 4: 3.4028234663852886e38}   # float16's and float32's largest finite values
_PACKINGS = {2: struct.Struct("e"), 4: struct.Struct("f")}   # a Python float to float16's or float32's bytes and back


def largest_finite(dt: DType) -> float:
  """A float dtype's largest finite value."""
  if dt.name == "bfloat16": return 3.3895313892515355e38
  return _LARGEST.get(dt.itemsize, sys.float_info.max)


def float_epsilon(dt: DType) -> float:
  """The gap between 1 and the next float of dt (float32's for the int and bool types, which compute in float32)."""
  return {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float64": 2.0 ** -52}.get(dt.name, 2.0 ** -23)


def smallest_normal(dt: DType) -> float:
  """A float dtype's smallest positive normal value (below it, subnormals keep fewer bits)."""
  return {"float16": 2.0 ** -14, "float64": 2.0 ** -1022}.get(dt.name, 2.0 ** -126)


def check_storable(value, dt: DType, what: str = "value"):
  """Raises ValueOutOfRange where an int dtype cannot hold a number (stored, not cast: a cast wraps)."""
  if isinstance(value, np.generic): value = value.item()
  if dt.kind not in "iu" or isinstance(value, bool): return
  if isinstance(value, float):
    if not math.isfinite(value): raise ValueOutOfRange(f"{what} {value} cannot be stored in {dt.name}: it has no int value")
    value = int(value)   # as a cast: toward zero
  low, high = dtype_limits(dt)
  if not low <= value <= high: raise ValueOutOfRange(f"{what} {value} does not fit in {dt.name} ({low} to {high})")


def cast_scalar(value, dt: DType):
  """A Python scalar converted to the value it has in dtype dt (ints wrap, floats round)."""
  if dt.kind == "b": return bool(value)
  if dt.kind == "f":
    value = float(value)
    if dt.name == "bfloat16": return float(_round_bfloat16(np.array([_f64_to_f32_odd(value)], np.float32))[0])
    if dt.itemsize == 8: return value
    if -_LARGEST[dt.itemsize] <= value <= _LARGEST[dt.itemsize]:   # cannot overflow: rounded as C's cast (numpy's) rounds
      packing = _PACKINGS[dt.itemsize]
      return packing.unpack(packing.pack(value))[0]
    with np.errstate(over="ignore"): return float(np.array(value, dtype=dt.storage))   # past the range: inf, as torch
  bits = 8 * dt.itemsize
  if isinstance(value, float):   # as kernels convert: truncated in 32 (or 64) bits, NaN and values past them the minimum
    wide = 1 << (63 if bits == 64 else 31)   # (x86's, numpy's and torch's); unsigned ones from half their range up less it
    high = dt.kind == "u" and bits >= 32 and value >= wide
    value = value - wide if high else value
    value = (int(value) if -wide <= value < wide else -wide) ^ (-wide if high else 0)
  value = int(value) & ((1 << bits) - 1)
  if dt.kind == "i" and value >= 1 << (bits - 1): value -= 1 << bits
  return value


def _f64_to_f32_odd(value: float) -> np.float32:
  """value in float32 rounded to odd (toward zero, the last bit set when inexact), as the kernels' f64_to_f32_odd:
  rounded on to bfloat16, that gives what rounding value there directly would (through plain float32, 1 + 2**-8 +
  2**-30 rounded twice, to 1.0)."""
  with np.errstate(over="ignore"): rounded = np.float32(value)
  if value != value or float(rounded) == value: return rounded
  bits = np.array(rounded).view(np.uint32)
  if abs(float(rounded)) > abs(value): bits = bits - np.uint32(1)   # rounded away from zero: one step back
  return (bits | np.uint32(1)).view(np.float32)


def _round_bfloat16(f32: np.ndarray) -> np.ndarray:
  """float32 values rounded to the nearest bfloat16 (ties to even), returned as float32."""
  return bfloat16_bits_to_float32(float32_to_bfloat16_bits(f32))


def float32_to_bfloat16_bits(f32: np.ndarray) -> np.ndarray:
  """f32 rounded to bfloat16 (to nearest, ties to even), as the kernels' cast rounds: a NaN keeps its sign and the
  top of its payload, quieted when none of the payload's top bits is set."""
  bits = np.ascontiguousarray(f32, dtype=np.float32).view(np.uint32).astype(np.uint64)
  rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
  top = (bits >> 16).astype(np.uint16)
  nan = np.where(top & 0x7F, top, top | np.uint16(0x40))
  return np.where(np.isnan(f32), nan, rounded).astype(np.uint16).reshape(np.shape(f32))


def bfloat16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
  return (np.ascontiguousarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(np.shape(bits))
