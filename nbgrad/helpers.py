"""Settings read from the environment, counters, and small shared helpers."""
from __future__ import annotations
import contextlib
import os


def getenv(key: str, default=0):
  value = os.getenv(key, default)
  try:
    return type(default)(value)
  except ValueError:
    raise ValueError(f"environment variable {key}={value!r} is not a valid {type(default).__name__}") from None


DEBUG = getenv("DEBUG", 0)


class HashedKey:
  """A big nested tuple used as a dict key again and again (a kernel's structure, a graph's): Python does not
  keep a tuple's hash, so this keeps it, and a key compared with itself is equal at once."""
  __slots__ = ("value", "_hash")

  def __init__(self, value: tuple):
    self.value, self._hash = value, hash(value)

  def __hash__(self) -> int: return self._hash
  def __eq__(self, other) -> bool:
    return self is other or (isinstance(other, HashedKey) and self._hash == other._hash and self.value == other.value)


class GlobalCounters:
  kernel_count = 0      # kernels run
  compile_count = 0     # numba compiles done
  disk_cache_hits = 0   # kernels loaded compiled from the disk cache
  global_ops = 0        # estimated arithmetic operations
  global_mem = 0        # bytes read and written by kernels
  time_sum_s = 0.0      # seconds spent running kernels
  mem_used = 0          # bytes of the buffers kernels made that are alive now
  mem_peak = 0          # the most mem_used has been since reset()

  @staticmethod
  def reset():
    GlobalCounters.kernel_count = GlobalCounters.compile_count = GlobalCounters.disk_cache_hits = 0
    GlobalCounters.global_ops = GlobalCounters.global_mem = 0
    GlobalCounters.time_sum_s = 0.0
    GlobalCounters.mem_peak = GlobalCounters.mem_used


class _Eager:
  enabled = bool(getenv("NBGRAD_EAGER", 0))


def eager_enabled() -> bool: return _Eager.enabled


@contextlib.contextmanager
def eager(enabled: bool = True):
  """Realize every op as soon as it is created (same kernels as lazy mode)."""
  previous, _Eager.enabled = _Eager.enabled, enabled
  try:
    yield
  finally:
    _Eager.enabled = previous


def cache_dir() -> str:
  default = os.path.join(os.getenv("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "nbgrad")
  return os.getenv("NBGRAD_CACHE_DIR", default)


# Bad arguments raise the Python exception a numpy or torch user expects, which is also an instance of what
# tinygrad's own checks raise there (AssertionError, or torch's RuntimeError), so code written for either catches it.
class ShapeMismatch(ValueError, AssertionError):
  """Shapes, ranks or counts that do not fit together (matmul, einsum, reshape, multinomial)."""


class IndexMismatch(IndexError, AssertionError):
  """An index tensor that does not fit the tensor it indexes (gather)."""


class JitArgumentMismatch(ValueError, AssertionError):
  """Tensor arguments a TinyJit cannot run with: shapes, dtypes or layouts other than the recorded call's, or one
  buffer passed as two arguments."""


class MissingStateKeys(KeyError, RuntimeError):
  """Model tensors a state dict has no entry for (load_state_dict with strict)."""
  def __str__(self): return str(self.args[0])   # KeyError's own would quote the message


class ValueOutOfRange(OverflowError, ValueError):
  """A number that the dtype it is stored in cannot hold (300 as uint8, nan as int32), as numpy raises."""


class ItemSizeMismatch(ValueError, RuntimeError):
  """A bitcast between dtypes of different sizes."""
