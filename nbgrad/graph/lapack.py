"""Dense linear algebra on batches of matrices as custom graph nodes: LAPACK's factorizations (through numpy.linalg
on the CPU), which no fused loop nest expresses. A node reads contiguous buffers and fills its own; a routine with
several results packs them into one buffer, which its readers slice."""
from __future__ import annotations
import math
from dataclasses import dataclass
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps


@dataclass(frozen=True)
class Factorized:
  """op on batch matrices of rows x cols: "inv" their inverses, "det" their determinants, "slogdet" (sign, log |det|)
  pairs, "solve" X with A X = B for a second source B of batch rows x k matrices, "cholesky" the lower factors L of
  A = L L^T, "eigh" the eigenvalues (ascending) over the eigenvectors (columns) of symmetric matrices (read from the
  lower triangle) in rows + 1 rows, "svd" U^T, S and Vh of the reduced singular value decomposition side by side
  (min(rows, cols) rows of rows + 1 + cols), "qr" Q^T and R of the reduced QR decomposition side by side."""
  op: str
  batch: int
  rows: int
  cols: int
  k: int = 0

  @property
  def name(self) -> str: return f"{self.op}_{self.batch}x{self.rows}x{self.cols}" + (f"_by_{self.k}" if self.op == "solve" else "")

  def run(self, out, a, b=None):
    from nbgrad.jit.lapack import factorized   # the CPU routine: the graph layer does not load a device's code
    factorized(out, a, b, self)


def _factorized(op: str, a: LazyBuffer, shape: tuple[int, ...], b: LazyBuffer = None) -> LazyBuffer:
  arg = Factorized(op, math.prod(a.shape[:-2]), a.shape[-2], a.shape[-1], 0 if b is None else b.shape[-1])
  srcs = (a.in_flat_order(),) if b is None else (a.in_flat_order(), b.in_flat_order())
  return LazyBuffer.load(LoadOps.CUSTOM, shape, a.dtype, a.device, arg=arg, srcs=srcs)


def inverse(a: LazyBuffer) -> LazyBuffer: return _factorized("inv", a, a.shape)
def determinant(a: LazyBuffer) -> LazyBuffer: return _factorized("det", a, a.shape[:-2])
def sign_and_log_determinant(a: LazyBuffer) -> LazyBuffer: return _factorized("slogdet", a, a.shape[:-2] + (2,))
def cholesky(a: LazyBuffer) -> LazyBuffer: return _factorized("cholesky", a, a.shape)
def eigh(a: LazyBuffer) -> LazyBuffer: return _factorized("eigh", a, a.shape[:-2] + (a.shape[-1] + 1, a.shape[-1]))


def svd(a: LazyBuffer) -> LazyBuffer:
  rows, cols = a.shape[-2:]
  return _factorized("svd", a, a.shape[:-2] + (min(rows, cols), rows + 1 + cols))


def qr(a: LazyBuffer) -> LazyBuffer:
  rows, cols = a.shape[-2:]
  return _factorized("qr", a, a.shape[:-2] + (min(rows, cols), rows + cols))


def solve(a: LazyBuffer, b: LazyBuffer) -> LazyBuffer:
  """X with a X = b, for a (*batch, n, n) and b (*batch, n, k)."""
  return _factorized("solve", a, b.shape, b)
