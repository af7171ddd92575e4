"""Settings read from the environment, counters, and small shared helpers."""
from __future__ import annotations
import contextlib
import math
import os
import time


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


class TimedChoice:
  """The faster of several ways to run the same work (a big take, serially or in parallel), found by timing each on
  the first calls and kept from then on: which one wins depends on the machine and the size (on a 2-core AMD EPYC
  VM, 100k single elements of 1M: 128 us serially, 213 in parallel; 8192 rows of 256: 419 and 265). It suits work
  whose time does not depend on what runs around it: products and fused kernels chose this way made the parallel
  kernels after them slower (see jit/__init__.py and jit/blas.py)."""
  __slots__ = ("best_times", "calls", "chosen")
  # Timed calls of each way, in a row: the fastest of them counts, so one call slowed by another process does not
  # decide. In a row rather than taking turns, since a way's speed depends on where the ways before it left the
  # data: x[100k indices] took 128 us serially after serial calls and 296 after parallel ones, which then won.
  TRIALS = 3

  def __init__(self, ways: int):
    self.best_times, self.calls, self.chosen = [math.inf] * ways, 0, None

  def next_way(self) -> int:
    """The way to run the next call: each in turn for TRIALS calls while timing, then the fastest."""
    return self.chosen if self.chosen is not None else self.calls // self.TRIALS

  def timed(self, way: int, seconds: float):
    self.best_times[way] = min(self.best_times[way], seconds)
    self.calls += 1
    if self.calls >= self.TRIALS * len(self.best_times): self.chosen = self.best_times.index(min(self.best_times))

  def run(self, *ways):
    """Calls one of ways (functions of no arguments, in this choice's order): the next to time, or the chosen one."""
    way = self.next_way()
    if self.chosen is not None: return ways[way]()
    start = time.perf_counter()
    result = ways[way]()
    self.timed(way, time.perf_counter() - start)
    return result


class TimedChoices:
  """A TimedChoice for each key (a take's size), made on first use; at most `limit` are kept, then they start
  again."""
  def __init__(self, ways: int, limit: int = 4096):
    self.ways, self.limit, self.by_key = ways, limit, {}

  def __getitem__(self, key) -> TimedChoice:
    choice = self.by_key.get(key)
    if choice is None:
      if len(self.by_key) >= self.limit: self.by_key.clear()
      choice = self.by_key[key] = TimedChoice(self.ways)
    return choice


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


class ItemSizeMismatch(ValueError, RuntimeError):
  """A bitcast between dtypes of different sizes."""
