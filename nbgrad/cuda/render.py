"""Renders a scheduled Kernel as the Python source of a numba.cuda kernel.

Expressions, views and parameters are rendered exactly as for the CPU (nbgrad/jit/render.py); only the
loop nest differs. Two shapes:
- threads: one thread per output element, grid-stride over the outputs; a reduce, if any, is a loop in
  the thread (short reduce axes, and column reduces, where neighbouring threads read neighbouring memory);
- blocks: one block per output element, grid-stride over the outputs; each thread accumulates a strided
  share of the reduced elements, then the block combines the shares in a shared-memory tree (long rows,
  softmax's stages). A full kernel (softmax) then writes its row with the whole block."""
from __future__ import annotations
from nbgrad.dtype import DType
from nbgrad.graph.ops import UnaryOps
from nbgrad.graph.schedule import Kernel
from nbgrad.jit.render import Renderer, BINARY, REDUCE_COMBINE, reduce_identity, compute_type

# a reduce over at least this many elements per output is shared by a block of threads
BLOCK_REDUCE_MIN = 256


def uses_block_reduce(kernel: Kernel) -> bool:
  """Long reduces whose innermost loop dim is reduced: a block per output reads that row together."""
  n = len(kernel.loop_shape)
  if not kernel.stages or (n - 1) not in kernel.reduce_axes: return False
  reduced = 1
  for d in kernel.reduce_axes: reduced *= kernel.loop_shape[d]
  return reduced >= BLOCK_REDUCE_MIN


def _scalar_type(dt: DType) -> str:
  return "nb_types.boolean" if dt.kind == "b" else compute_type(dt).replace("np.", "nb_types.")


class CudaRenderer(Renderer):
  MATH = {
    UnaryOps.SQRT: ("sqrtf", "sqrt"), UnaryOps.EXP2: ("exp2f", "exp2"), UnaryOps.LOG2: ("log2f", "log2"),
    UnaryOps.SIN: ("sinf", "sin"), UnaryOps.TRUNC: ("truncf", "trunc"), UnaryOps.FLOOR: ("floorf", "floor"),
    UnaryOps.CEIL: ("ceilf", "ceil"), UnaryOps.RINT: ("rintf", "rint"),
  }

  def __init__(self, kernel: Kernel, threads: int):
    super().__init__(kernel, parallel=False)
    self.threads = threads
    self.column = False   # accumulators are always scalars here

  def render(self, fn_name: str) -> str:
    k = self.kernel
    n = len(k.loop_shape)
    self.sizes = [self.int_param(s) for s in k.loop_shape]
    outer = [d for d in range(n) if d not in k.reduce_axes]
    reduce = [d for d in range(n) if d in k.reduce_axes]
    self.code = []
    self.emit(1, f"n_outer = {self.count(outer)}")
    self.emit(1, f"n_reduce = {self.count(reduce)}")
    if uses_block_reduce(k): self.render_blocks(outer, reduce)
    else: self.render_threads(outer, reduce)
    inputs = ", ".join(f"b{i}" for i in range(len(k.inputs)))
    head = [f"def {fn_name}(out, {inputs + ', ' if inputs else ''}ip, fp):"] + ["  " + h for h in self.header]
    return "\n".join(head + self.code) + "\n"

  def count(self, dims) -> str: return " * ".join(self.sizes[d] for d in dims) or "1"

  def unflatten(self, depth: int, linear: str, dims):
    """Sets x<d> for dims (row-major) from a linear index over them."""
    if not dims: return
    self.emit(depth, f"rest = {linear}")
    for d in reversed(dims[1:]):
      self.emit(depth, f"x{d} = rest % {self.sizes[d]}")
      self.emit(depth, f"rest = rest // {self.sizes[d]}")
    self.emit(depth, f"x{dims[0]} = rest")

  def accumulate(self, depth: int, op, expr, target: str):
    value = self.emit_body(depth, expr)
    self.emit(depth, f"{target} = {BINARY[REDUCE_COMBINE[op]](expr.dtype, target, value)}")

  def store_reduced(self, depth: int, reduce):
    for d in reduce: self.emit(depth, f"x{d} = 0")
    self.store(depth)

  def render_threads(self, outer, reduce):
    k = self.kernel
    self.emit(1, "for xo in range(cuda.grid(1), n_outer, cuda.gridsize(1)):")
    self.unflatten(2, "xo", outer)
    for number, (op, expr) in enumerate(k.stages):
      self.emit(2, f"acc{number} = {reduce_identity(op, expr.dtype)}")
      self.emit(2, "for xr in range(n_reduce):")
      self.unflatten(3, "xr", reduce)
      self.accumulate(3, op, expr, f"acc{number}")
    if k.full and reduce:
      self.emit(2, "for xr in range(n_reduce):")
      self.unflatten(3, "xr", reduce)
      self.store(3)
    else: self.store_reduced(2, reduce)

  def render_blocks(self, outer, reduce):
    k, threads = self.kernel, self.threads
    self.emit(1, "tid = cuda.threadIdx.x")
    for number, (_, expr) in enumerate(k.stages):
      self.emit(1, f"shared{number} = cuda.shared.array({threads}, {_scalar_type(expr.dtype)})")
    self.emit(1, "for xo in range(cuda.blockIdx.x, n_outer, cuda.gridDim.x):")
    self.unflatten(2, "xo", outer)
    for number, (op, expr) in enumerate(k.stages):
      acc, shared = f"acc{number}", f"shared{number}"
      self.emit(2, f"{acc} = {reduce_identity(op, expr.dtype)}")
      self.emit(2, f"for xr in range(tid, n_reduce, {threads}):")
      self.unflatten(3, "xr", reduce)
      self.accumulate(3, op, expr, acc)
      self.emit(2, f"{shared}[tid] = {acc}")
      self.emit(2, "cuda.syncthreads()")
      self.emit(2, f"step = {threads // 2}")
      self.emit(2, "while step > 0:")
      self.emit(3, "if tid < step:")
      self.emit(4, f"{shared}[tid] = {BINARY[REDUCE_COMBINE[op]](expr.dtype, f'{shared}[tid]', f'{shared}[tid + step]')}")
      self.emit(3, "cuda.syncthreads()")
      self.emit(3, "step //= 2")
      self.emit(2, f"{acc} = {shared}[0]")
      self.emit(2, "cuda.syncthreads()")   # every thread has read the total before the next row reuses shared
    if k.full:
      self.emit(2, f"for xr in range(tid, n_reduce, {threads}):")
      self.unflatten(3, "xr", reduce)
      self.store(3)
    else:
      self.emit(2, "if tid == 0:")
      self.store_reduced(3, reduce)
