"""Dense linear algebra on batches of square matrices as custom graph nodes: LU factorizations (LAPACK's, through
numpy.linalg on the CPU), which no fused loop nest expresses. A node reads contiguous buffers and fills its own."""
from __future__ import annotations
import math
from dataclasses import dataclass
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps


@dataclass(frozen=True)
class Factorized:
  """op on batch matrices of n x n: "inv" their inverses, "det" their determinants, "slogdet" (sign, log |det|)
  pairs, "solve" X with A X = B for a second source B of batch n x k matrices."""
  op: str
  batch: int
  n: int
  k: int = 0

  @property
  def name(self) -> str: return f"{self.op}_{self.batch}x{self.n}x{self.n}" + (f"_by_{self.k}" if self.op == "solve" else "")

  def run(self, out, a, b=None):
    from nbgrad.jit.lapack import factorized   # the CPU routine: the graph layer does not load a device's code
    factorized(out, a, b, self)


def _factorized(op: str, a: LazyBuffer, shape: tuple[int, ...], b: LazyBuffer = None) -> LazyBuffer:
  n = a.shape[-1]
  arg = Factorized(op, math.prod(a.shape[:-2]), n, 0 if b is None else b.shape[-1])
  srcs = (a.in_flat_order(),) if b is None else (a.in_flat_order(), b.in_flat_order())
  return LazyBuffer.load(LoadOps.CUSTOM, shape, a.dtype, a.device, arg=arg, srcs=srcs)


def inverse(a: LazyBuffer) -> LazyBuffer: return _factorized("inv", a, a.shape)
def determinant(a: LazyBuffer) -> LazyBuffer: return _factorized("det", a, a.shape[:-2])
def sign_and_log_determinant(a: LazyBuffer) -> LazyBuffer: return _factorized("slogdet", a, a.shape[:-2] + (2,))
def solve(a: LazyBuffer, b: LazyBuffer) -> LazyBuffer:
  """X with a X = b, for a (*batch, n, n) and b (*batch, n, k)."""
  return _factorized("solve", a, b.shape, b)
