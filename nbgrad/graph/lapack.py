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
  """op on batch matrices of rows x cols: "inv" their inverses ("inv_or_infinite" with infs and NaNs for a singular
  one, where "inv" raises), "det" their determinants, "slogdet" (sign, log |det|)
  pairs, "solve" X with A X = B for a second source B of batch rows x k matrices, "cholesky" the lower factors L of
  A = L L^T, "eigh" the eigenvalues (ascending) over the eigenvectors (columns) of symmetric matrices (read from the
  lower triangle) in rows + 1 rows, "svd" U^T, S and Vh of the reduced singular value decomposition side by side
  (min(rows, cols) rows of rows + 1 + cols), "svd_full" the full U, S and the full Vh flattened one after another,
  "qr" Q^T and R of the reduced QR decomposition side by side, "qr_complete" the same of the complete one (rows of
  rows + cols). "lu" and "lu_factor" give the LU factors with partial pivoting packed as LAPACK's (L's unit diagonal
  left out) and a column more of the 1-based pivots ("lu_factor" raises where U has a zero on its diagonal),
  "permutation" the int32 order that k pivots swap a matrix's rows into (its source the pivots, not matrices),
  "solve_lower" and "solve_upper" X with T X = B for T the lower or upper triangle of A (with ones on its diagonal
  when unit), and "exp" the matrix exponentials."""
  op: str
  batch: int
  rows: int
  cols: int
  k: int = 0
  unit: bool = False

  @property
  def name(self) -> str:
    by = f"_by_{self.k}" if self.op.startswith("solve") else ""
    return f"{self.op}{'_unit' if self.unit else ''}_{self.batch}x{self.rows}x{self.cols}{by}"

  def run(self, out, a, b=None):
    from nbgrad.jit.lapack import factorized   # the CPU routine: the graph layer does not load a device's code
    factorized(out, a, b, self)


def _factorized(op: str, a: LazyBuffer, shape: tuple[int, ...], b: LazyBuffer = None, unit: bool = False) -> LazyBuffer:
  arg = Factorized(op, math.prod(a.shape[:-2]), a.shape[-2], a.shape[-1], 0 if b is None else b.shape[-1], unit)
  srcs = (a.in_flat_order(),) if b is None else (a.in_flat_order(), b.in_flat_order())
  return LazyBuffer.load(LoadOps.CUSTOM, shape, a.dtype, a.device, arg=arg, srcs=srcs)


def inverse(a: LazyBuffer) -> LazyBuffer: return _factorized("inv", a, a.shape)
def inverse_or_infinite(a: LazyBuffer) -> LazyBuffer: return _factorized("inv_or_infinite", a, a.shape)
def determinant(a: LazyBuffer) -> LazyBuffer: return _factorized("det", a, a.shape[:-2])
def sign_and_log_determinant(a: LazyBuffer) -> LazyBuffer: return _factorized("slogdet", a, a.shape[:-2] + (2,))
def cholesky(a: LazyBuffer) -> LazyBuffer: return _factorized("cholesky", a, a.shape)
def eigh(a: LazyBuffer) -> LazyBuffer: return _factorized("eigh", a, a.shape[:-2] + (a.shape[-1] + 1, a.shape[-1]))
def exp(a: LazyBuffer) -> LazyBuffer: return _factorized("exp", a, a.shape)
def lu(a: LazyBuffer) -> LazyBuffer: return _factorized("lu", a, a.shape[:-1] + (a.shape[-1] + 1,))
def lu_factor(a: LazyBuffer) -> LazyBuffer: return _factorized("lu_factor", a, a.shape[:-1] + (a.shape[-1] + 1,))


def svd(a: LazyBuffer) -> LazyBuffer:
  rows, cols = a.shape[-2:]
  return _factorized("svd", a, a.shape[:-2] + (min(rows, cols), rows + 1 + cols))


def svd_full(a: LazyBuffer) -> LazyBuffer:
  rows, cols = a.shape[-2:]
  return _factorized("svd_full", a, a.shape[:-2] + (rows * rows + min(rows, cols) + cols * cols,))


def qr(a: LazyBuffer) -> LazyBuffer:
  rows, cols = a.shape[-2:]
  return _factorized("qr", a, a.shape[:-2] + (min(rows, cols), rows + cols))


def qr_complete(a: LazyBuffer) -> LazyBuffer:
  rows, cols = a.shape[-2:]
  return _factorized("qr_complete", a, a.shape[:-2] + (rows, rows + cols))


def solve(a: LazyBuffer, b: LazyBuffer) -> LazyBuffer:
  """X with a X = b, for a (*batch, n, n) and b (*batch, n, k)."""
  return _factorized("solve", a, b.shape, b)


def triangular_solve(a: LazyBuffer, b: LazyBuffer, upper: bool, unit: bool) -> LazyBuffer:
  """X with T X = b, T the upper or lower triangle of a (*batch, n, n) (ones on its diagonal when unit), b (*batch, n, k)."""
  return _factorized("solve_upper" if upper else "solve_lower", a, b.shape, b, unit)


def permutation(pivots: LazyBuffer, rows: int) -> LazyBuffer:
  """The int32 row order (*batch, rows) that LAPACK's 1-based int32 pivots (*batch, k) swap the rows into."""
  arg = Factorized("permutation", math.prod(pivots.shape[:-1]), rows, pivots.shape[-1])
  return LazyBuffer.load(LoadOps.CUSTOM, pivots.shape[:-1] + (rows,), pivots.dtype, pivots.device, arg=arg, srcs=(pivots.in_flat_order(),))
