"""The generator state shared by Tensor's random ops, and the custom kernel that fills a buffer with one
draw. A draw takes its counter when the op is built, so lazy and eager mode give the same bits."""
from __future__ import annotations
import threading
import time
from dataclasses import dataclass
from nbgrad.random.threefry import uniform_float32, normal_float32

_MASK32 = 0xFFFFFFFF
_TAKING = threading.Lock()


class GeneratorState:
  seed: int = int(time.time_ns()) & _MASK32   # without manual_seed, the clock seeds the generator
  counter: int = 0

  @classmethod
  def manual_seed(cls, seed: int = 0):
    with _TAKING: cls.seed, cls.counter = int(seed) & _MASK32, 0

  @classmethod
  def take(cls, n: int) -> tuple[int, int]:
    """(seed, first counter) of a draw of n words; advances the counter by n. A draw of one or two words (one
    counter pair) starts at the advanced counter, as in tinygrad 0.9.0: there arange(1) + counter folds into the
    counter's own buffer, which the counter's update then overwrites before the draw reads it."""
    with _TAKING:   # draws on several threads each take counters of their own
      start = cls.counter
      cls.counter = (start + n) & _MASK32
      return cls.seed, cls.counter if n <= 2 else start

  @classmethod
  def draw(cls, kind: str, n: int, low: float, high: float) -> RandomDraw:
    """The next draw of n values: randn's Box-Muller takes two words a value."""
    seed, counter = cls.take(2 * n if kind == "randn" else n)
    return RandomDraw(kind, seed, counter, n, low, high)


@dataclass(frozen=True)
class RandomDraw:
  """A float32 uniform ("rand", optionally fused into low + (high-low)*u) or normal ("randn", fused into
  mean + std*z) draw of n values."""
  kind: str
  seed: int
  counter: int
  n: int
  low: float = 0.0
  high: float = 1.0

  @property
  def name(self) -> str: return f"threefry_{self.kind}_{self.n}"

  def redrawn(self) -> RandomDraw:
    """This draw made again from the generator's current counter (a replayed kernel draws new values)."""
    return GeneratorState.draw(self.kind, self.n, self.low, self.high)

  def run(self, out):
    if self.kind == "rand": uniform_float32(self.seed, self.counter, self.n, out, low=self.low, high=self.high)
    else: normal_float32(self.seed, self.counter, self.n, out, mean=self.low, std=self.high)

  def run_cuda(self, backend, out) -> bool:
    """Fills a GPU buffer; False where the draw has no GPU routine (then it is made on the host and copied)."""
    if self.kind != "rand": return False
    from nbgrad.cuda.threefry import uniform_float32 as gpu_uniform_float32
    gpu_uniform_float32(backend, out, self.seed, self.counter, self.n, self.low, self.high)
    return True
