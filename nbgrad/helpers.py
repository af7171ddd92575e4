"""Settings read from the environment, counters, and small shared helpers."""
from __future__ import annotations
import contextlib
import cProfile
import hashlib
import math
import os
import pathlib
import platform
import pstats
import re
import shutil
import tempfile
import time
import urllib.request
import weakref
from typing import Optional, Union


def getenv(key: str, default=0):
  value = os.getenv(key, default)
  try:
    return type(default)(value)
  except ValueError:
    raise ValueError(f"environment variable {key}={value!r} is not a valid {type(default).__name__}") from None


class ContextVar:
  """A setting read from the environment at import, which Context(NAME=value) changes for a with-block (tinygrad's
  names). Compared as its value: DEBUG >= 2."""
  known: dict[str, ContextVar] = {}

  def __init__(self, key: str, default: int):
    self.key, self.value = key, getenv(key, default)
    ContextVar.known[key] = self

  def __bool__(self) -> bool: return bool(self.value)
  def __int__(self) -> int: return int(self.value)
  def __ge__(self, other) -> bool: return self.value >= other
  def __gt__(self, other) -> bool: return self.value > other
  def __le__(self, other) -> bool: return self.value <= other
  def __lt__(self, other) -> bool: return self.value < other
  def __repr__(self) -> str: return f"{self.key}={self.value}"


CI = os.getenv("CI", "") != ""
OSX = platform.system() == "Darwin"
DEBUG = ContextVar("DEBUG", 0)
GRAPH = ContextVar("GRAPH", 0)   # 1: each realize writes its graph as Graphviz dot source into the temporary folder
WINO = ContextVar("WINO", -1)   # 1 forces Winograd for every eligible convolution, 0 forbids it, -1 leaves the choice to nbgrad


class Context(contextlib.ContextDecorator):
  """with Context(DEBUG=2): ... sets settings for the block (or a decorated function), then restores them."""
  def __init__(self, **settings):
    unknown = [key for key in settings if key not in ContextVar.known]
    if unknown: raise ValueError(f"Context knows the settings {sorted(ContextVar.known)}, not {unknown}")
    if (wrong := {key: value for key, value in settings.items() if not isinstance(value, int)}):
      raise TypeError(f"Context settings are ints, got {wrong}")
    self.settings, self.previous = settings, []

  def __enter__(self):
    self.previous.append({key: ContextVar.known[key].value for key in self.settings})
    for key, value in self.settings.items(): ContextVar.known[key].value = value

  def __exit__(self, *exc):
    for key, value in self.previous.pop().items(): ContextVar.known[key].value = value


class Timing(contextlib.ContextDecorator):
  """Prints the seconds a block (or a decorated function) took, in ms after prefix; on_exit(elapsed ns) may add text."""
  def __init__(self, prefix: str = "", on_exit=None, enabled: bool = True):
    self.prefix, self.on_exit, self.enabled = prefix, on_exit, enabled

  def __enter__(self): self.start = time.perf_counter_ns()

  def __exit__(self, *exc):
    self.elapsed = time.perf_counter_ns() - self.start
    if self.enabled: print(f"{self.prefix}{self.elapsed * 1e-6:6.2f} ms" + (self.on_exit(self.elapsed) if self.on_exit else ""))


# the small helpers tinygrad's examples import from its helpers
class Profiling(contextlib.ContextDecorator):
  """with Profiling(): ... prints the top frac of the block's functions by sort (cProfile's columns), and writes
  the raw profile to fn when given."""
  def __init__(self, enabled: bool = True, sort: str = "cumtime", frac: float = 0.2, fn: Optional[str] = None, ts: float = 1):
    self.enabled, self.sort, self.frac, self.fn, self.ms = enabled, sort, frac, fn, 1e3 / ts

  def __enter__(self):
    self.profile = cProfile.Profile()
    if self.enabled: self.profile.enable()

  def __exit__(self, *exc):
    if not self.enabled: return
    self.profile.disable()
    if self.fn: self.profile.dump_stats(self.fn)
    stats = pstats.Stats(self.profile).strip_dirs().sort_stats(self.sort)
    for where in stats.fcn_list[:int(len(stats.fcn_list) * self.frac)]:
      _, calls, own, total, _ = stats.stats[where]
      print(f"n:{calls:8d}  tm:{own * self.ms:7.2f}ms  tot:{total * self.ms:7.2f}ms  {where[0]}:{where[1]}:{where[2]}")


def held_across_fork(lock):
  """lock, which a fork takes first (so it waits for a thread holding it) and lets go after it on both sides: a
  child forked while another thread held it inherited it held by a thread it does not have, and waited forever.
  Forks take such locks in the reverse of the order they were registered in."""
  os.register_at_fork(before=lock.acquire, after_in_parent=lock.release, after_in_child=lock.release)
  return lock


def prod(values) -> int: return math.prod(values)
def flatten(nested) -> list: return [item for inner in nested for item in inner]
def dedup(items) -> list: return list(dict.fromkeys(items))   # first occurrences, in order
def all_int(values) -> bool: return all(isinstance(v, int) for v in values)
def round_up(number: int, multiple: int) -> int: return -(-number // multiple) * multiple
def make_pair(x, count: int = 2) -> tuple: return (x,) * count if isinstance(x, int) else tuple(x)
def partition(items, predicate) -> tuple[list, list]:
  """(the items for which predicate holds, the others), each in order."""
  kept, rest = [], []
  for item in items: (kept if predicate(item) else rest).append(item)
  return kept, rest


def argfix(*args) -> tuple:
  """f(1, 2) and f((1, 2)) alike: one tuple or list argument stands for all of them."""
  if len(args) == 1 and isinstance(args[0], (tuple, list)): return tuple(args[0])
  return args


def fully_flatten(nested) -> list:
  """The leaves of nested lists and tuples, in order."""
  return [leaf for item in nested for leaf in (fully_flatten(item) if isinstance(item, (list, tuple)) else [item])]


def all_same(items) -> bool: return all(item == items[0] for item in items)
def argsort(values): return type(values)(sorted(range(len(values)), key=values.__getitem__))


def merge_dicts(dicts) -> dict:
  """One dict of all the given ones' items; a key given two different values raises."""
  merged: dict = {}
  for d in dicts:
    for key, value in d.items():
      if key in merged and merged[key] != value: raise ValueError(f"cannot merge: {key!r} is both {merged[key]!r} and {value!r}")
      merged[key] = value
  return merged


def get_child(obj, path: str):
  """What a dotted state-dict name ("layers.0.weight") names in obj: numbers index, other names are dict keys or
  attributes."""
  for part in path.split("."):
    obj = obj[int(part)] if part.isnumeric() else obj[part] if isinstance(obj, dict) else getattr(obj, part)
  return obj


_COLORS = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")


def colored(text, color: Optional[str], background: bool = False) -> str:
  """text in a terminal color (an upper-case name: its bright form), or as it is for color None."""
  if color is None: return text
  code = 30 + _COLORS.index(color.lower()) + (60 if color.isupper() else 0) + (10 if background else 0)
  return f"\x1b[{code}m{text}\x1b[0m"


def ansistrip(text: str) -> str: return re.sub(r"\x1b\[[0-9;]*m", "", text)
def ansilen(text: str) -> int: return len(ansistrip(text))


def fetch(url: str, name: Optional[Union[str, os.PathLike]] = None, allow_caching: bool = not getenv("DISABLE_HTTP_CACHE")) -> pathlib.Path:
  """The file at url, downloaded once into the cache folder (downloads/, named by the url's hash or by name) and
  its path returned; a local path or file:// url is returned as it is. allow_caching=False downloads it again."""
  if url.startswith(("/", ".")): return pathlib.Path(url)
  if url.startswith("file://"): return pathlib.Path(url[len("file://"):])
  path = pathlib.Path(name) if name is not None and os.path.isabs(name) else \
    pathlib.Path(cache_dir()) / "downloads" / (str(name) if name is not None else hashlib.md5(url.encode()).hexdigest())
  if path.is_file() and allow_caching: return path
  path.parent.mkdir(parents=True, exist_ok=True)
  with urllib.request.urlopen(url, timeout=60) as response:
    if response.status != 200: raise RuntimeError(f"fetch of {url} failed with HTTP status {response.status}")
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as part:   # renamed whole: no half file is cached
      try: shutil.copyfileobj(response, part)
      except BaseException:
        os.unlink(part.name)
        raise
  os.replace(part.name, path)
  return path


class HashedKey:
  """A big nested tuple used as a dict key again and again (a kernel's structure, a graph's): Python does not
  keep a tuple's hash, so this keeps it, and a key compared with itself is equal at once."""
  __slots__ = ("value", "_hash")

  def __init__(self, value: tuple):
    self.value, self._hash = value, hash(value)

  def __hash__(self) -> int: return self._hash
  def __reduce__(self): return HashedKey, (self.value,)   # hashed again when loaded: a string's hash is per process
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


def add_weak_reference(references: list, obj):
  """Appends a weak reference to obj, dropping the dead ones as the list reaches each power of two from 64 (a weight
  read by every training step would otherwise collect one per step): constant time per append on average, cheaper
  than a WeakSet's callback per reference."""
  references.append(weakref.ref(obj))
  if len(references) >= 64 and len(references) & (len(references) - 1) == 0:
    references[:] = [r for r in references if r() is not None]

# Bad arguments raise the Python exception a numpy or torch user expects, which is also an instance of what
# tinygrad's own checks raise there (AssertionError, or torch's RuntimeError), so code written for either catches it.
class ShapeMismatch(ValueError, AssertionError):
  """Shapes, ranks or counts that do not fit together (matmul, einsum, reshape, multinomial)."""


class DTypeMismatch(TypeError, AssertionError):
  """A dtype an op cannot take or store (assign of another dtype, an in-place op whose result is wider, shifts of
  floats)."""


class InPlaceNeedsGradient(RuntimeError, AssertionError):
  """An in-place op whose result needs a gradient (torch raises RuntimeError, tinygrad asserts)."""


class IndexMismatch(IndexError, AssertionError):
  """An index tensor that does not fit the tensor it indexes (gather)."""


class JitArgumentMismatch(ValueError, AssertionError):
  """Tensor arguments a TinyJit cannot run with: shapes, dtypes or layouts other than the recorded call's, or one
  buffer passed as two arguments."""


class NoAxisToJoin(IndexError, ValueError):
  """cat of 0-d tensors, which have no axis to join along (tinygrad raises IndexError, numpy ValueError)."""


class NotOneElement(ValueError, TypeError):
  """A tensor of more than one element turned into one Python number (float(t), int(t), f"{t:.3f}"): torch raises
  ValueError, numpy TypeError."""


class NotAScalar(RuntimeError, AssertionError):
  """backward() of a tensor with more than one element (torch raises RuntimeError, tinygrad asserts)."""


class NotReadyToStep(RuntimeError, AssertionError):
  """An optimizer step outside Tensor.training or before every parameter has a gradient (tinygrad asserts both)."""


class MissingStateKeys(KeyError, RuntimeError):
  """Model tensors a state dict has no entry for (load_state_dict with strict)."""
  def __str__(self): return str(self.args[0])   # KeyError's own would quote the message


class UnsupportedDType(TypeError, RuntimeError):
  """An op given a dtype it does not take (gcd of floats, frexp of ints): TypeError, and RuntimeError as torch raises."""


class ValueOutOfRange(OverflowError, ValueError):
  """A number that the dtype it is stored in cannot hold (300 as uint8, nan as int32), as numpy raises."""


class ItemSizeMismatch(ValueError, RuntimeError):
  """A bitcast between dtypes of different sizes."""
