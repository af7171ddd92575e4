"""Renders a scheduled Kernel as the Python source of a numba.cuda kernel.

Expressions, views and parameters are rendered exactly as for the CPU (nbgrad/jit/render.py); only the
loop nest differs. Four shapes:
- elementwise: grid-stride over the outputs, UNROLL of them per thread and round (render_elementwise);
- threads: one thread per output element, grid-stride over the outputs; a reduce, if any, is a loop in
  the thread (short reduce axes, and column reduces, where neighbouring threads read neighbouring memory);
- blocks: one block per output element, grid-stride over the outputs; each thread accumulates a strided
  share of the reduced elements, then the block combines the shares in a shared-memory tree (long rows,
  softmax's stages). A full kernel (softmax) then writes its row with the whole block;
- split: a long reduce into few outputs (a sum of everything) is cut into chunks, one block each, and a
  second kernel combines the chunks' partial results."""
from __future__ import annotations
import re
from nbgrad.dtype import DType
from nbgrad.graph.ops import UnaryOps, BinaryOps
from nbgrad.graph.schedule import Kernel
from nbgrad.jit.render import Renderer, BINARY, REDUCE_COMBINE, reduce_identity, compute_type, in_dtype, store_to_storage, unsigned
from nbgrad.cuda.runtime import SIMULATOR

# a reduce over at least this many elements per output is shared by a block of threads
BLOCK_REDUCE_MIN = 256


def uses_block_reduce(kernel: Kernel) -> bool:
  """Long reduces whose innermost loop dim is reduced: a block per output reads that row together."""
  n = len(kernel.loop_shape)
  if not kernel.stages or (n - 1) not in kernel.reduce_axes: return False
  reduced = 1
  for d in kernel.reduce_axes: reduced *= kernel.loop_shape[d]
  return reduced >= BLOCK_REDUCE_MIN


# a lone reduce of at least this many elements into fewer outputs than the GPU has block slots is split:
# blocks first reduce chunks of each output's elements into partials, then a second kernel combines them
SPLIT_MIN_REDUCE, SPLIT_MIN_CHUNK = (1 << 10, 256) if SIMULATOR else (1 << 16, 4096)   # the simulator is slow
SPLIT_MAX_OUTPUTS = 256
SPLIT_BLOCKS = 2048


COLUMN_MIN_CHUNK = 64       # rows per thread of a split column reduce
RESIDENT_THREADS = 1 << 18  # about what a large GPU keeps running at once (132 SMs x 2048 on an H100/H200)


def split_chunks(kernel: Kernel) -> int:
  """How many chunks each output's reduce is split into (0: not split): a lone long reduce whose outputs
  alone do not give the GPU enough blocks (rows) or threads (columns) to work with."""
  if len(kernel.stages) != 1 or kernel.full: return 0
  reduced = outputs = 1
  for d, s in enumerate(kernel.loop_shape):
    if d in kernel.reduce_axes: reduced *= s
    else: outputs *= s
  if reduced < SPLIT_MIN_REDUCE: return 0
  if uses_block_reduce(kernel):
    return 0 if outputs > SPLIT_MAX_OUTPUTS else max(2, min(SPLIT_BLOCKS // outputs, reduced // SPLIT_MIN_CHUNK))
  return 0 if outputs * 2 > RESIDENT_THREADS else max(2, min(RESIDENT_THREADS // outputs, reduced // COLUMN_MIN_CHUNK))


_TEMPORARY_NAME = re.compile(r"\bt\d+\b")
UNROLL = 4   # outputs of an elementwise kernel a thread loads the inputs of before it stores any


def outputs_per_thread(kernel: Kernel) -> int:
  """How many outputs a thread takes per round of its grid-stride loop: UNROLL in an elementwise kernel
  (render_elementwise), else one."""
  return 1 if kernel.stages else UNROLL


def _suffixed(text: str, suffix: str) -> str: return _TEMPORARY_NAME.sub(rf"\g<0>_{suffix}", text)


def _scalar_type(dt: DType) -> str:
  return "nb_types.boolean" if dt.kind == "b" else compute_type(dt).replace("np.", "nb_types.")


def _unfused_multiply(dt: DType, a: str, b: str) -> str:
  """A float product the GPU compiler may not fuse with a following addition into one multiply-add: the
  scheduler recomputes an elementwise node in each kernel that reads it, and a*b+c contracted in one kernel
  and not in another gives two values (a max's gradient compares such a recomputed input with the stored
  maximum). The CPU kernels are compiled without contraction; CUDA's compiler contracts by default."""
  if dt.kind != "f": return BINARY[BinaryOps.MUL](dt, a, b)
  return in_dtype(dt, f"{'dmul_rn' if dt.itemsize == 8 else 'fmul_rn'}({a}, {b})")


class CudaRenderer(Renderer):
  MATH = {
    UnaryOps.SQRT: ("sqrtf", "sqrt"), UnaryOps.EXP: ("expf", "exp"), UnaryOps.EXP2: ("exp2f", "exp2"),
    UnaryOps.LOG: ("logf", "log"), UnaryOps.LOG2: ("log2f", "log2"), UnaryOps.SIN: ("sinf", "sin"), UnaryOps.COS: ("cosf", "cos"), UnaryOps.TRUNC: ("truncf", "trunc"),
    UnaryOps.FLOOR: ("floorf", "floor"), UnaryOps.CEIL: ("ceilf", "ceil"), UnaryOps.RINT: ("rintf", "rint"),
    UnaryOps.ERF: ("erff", "erf"), UnaryOps.ERFC: ("erfcf", "erfc"), UnaryOps.LGAMMA: ("lgammaf", "lgamma"),
    UnaryOps.LOG10: ("log10f", "log10"), UnaryOps.EXPM1: ("expm1f", "expm1"),
    UnaryOps.TANH: ("tanhf", "tanh"),
  }
  BINARY = {**BINARY, BinaryOps.MUL: _unfused_multiply,
            BinaryOps.POW: lambda dt, a, b: f"pow({a}, {b})" if dt.itemsize == 8 else in_dtype(dt, f"powf({a}, {b})"),
            BinaryOps.ATAN2: lambda dt, a, b: f"atan2({a}, {b})" if dt.itemsize == 8 else in_dtype(dt, f"atan2f({a}, {b})")}

  def __init__(self, kernel: Kernel, threads: int, phase: str = "", chunks: int = 0):
    """phase "partials" or "combine" renders one of the two kernels of a split reduce (split_chunks)."""
    super().__init__(kernel, parallel=False)
    self.threads, self.phase, self.chunks = threads, phase, chunks
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
    if self.phase == "partials": self.render_partials(outer, reduce)
    elif self.phase == "combine": self.render_combine(outer, reduce)
    elif not k.stages: self.render_elementwise(outer)
    elif uses_block_reduce(k): self.render_blocks(outer, reduce)
    else: self.render_threads(outer, reduce)
    buffers = (["out"] + (["partials"] if self.phase else []) + [f"b{i}" for i in range(len(k.inputs))] +
               [f"also{i}" for i in range(len(k.also_exprs))])
    head = [f"def {fn_name}({', '.join(buffers)}, ip, fp):"] + ["  " + h for h in self.header]
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

  def render_elementwise(self, outer):
    """A thread computes UNROLL outputs a grid apart, and stores them only once all their inputs are loaded:
    for all the compiler knows a store may change what a later load reads, so one output at a time leaves a
    thread one load in flight, too few to keep the GPU's memory busy. Past the last output a thread computes
    the last one again and does not store it, so no load needs a guard. The body is rendered once (its
    parameters too) and written out per output, its temporaries renamed."""
    k = self.kernel
    lines, memo = [], {}
    values = [store_to_storage(k.output.dtype, self.render_expr(k.out_expr, lines, memo))]
    values += [store_to_storage(e.dtype, memo[id(e)]) for e in k.also_exprs]   # computed on the way: in the memo
    offset, _ = self.buffer_offset(k.out_view, lines)
    offset = unsigned(offset)
    targets = ["out"] + [f"also{i}" for i in range(len(k.also_exprs))]
    self.emit(1, "step = cuda.gridsize(1)")
    self.emit(1, f"for xb in range(cuda.grid(1), n_outer, step * {UNROLL}):")
    for u in range(UNROLL):
      self.unflatten(2, f"min(xb + {u} * step, n_outer - 1)" if u else "xb", outer)
      for line in lines: self.emit(2, _suffixed(line, str(u)))
      self.emit(2, f"offset{u} = {_suffixed(offset, str(u))}")
      for number, value in enumerate(values): self.emit(2, f"value{u}_{number} = {_suffixed(value, str(u))}")
    for u in range(UNROLL):
      guard = f"if xb + {u} * step < n_outer: " if u else ""
      for number, target in enumerate(targets): self.emit(2, f"{guard}{target}[offset{u}] = value{u}_{number}")

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

  def open_block(self):
    self.emit(1, "tid = cuda.threadIdx.x")
    for number, (_, expr) in enumerate(self.kernel.stages):
      self.emit(1, f"shared{number} = cuda.shared.array({self.threads}, {_scalar_type(expr.dtype)})")

  def combine_block(self, depth: int, number: int, op, dt: DType):
    """acc<number> of every thread combined in a shared-memory tree; every thread gets the total."""
    acc, shared = f"acc{number}", f"shared{number}"
    self.emit(depth, f"{shared}[tid] = {acc}")
    self.emit(depth, "cuda.syncthreads()")
    self.emit(depth, f"step = {self.threads // 2}")
    self.emit(depth, "while step > 0:")
    self.emit(depth + 1, "if tid < step:")
    self.emit(depth + 2, f"{shared}[tid] = {BINARY[REDUCE_COMBINE[op]](dt, f'{shared}[tid]', f'{shared}[tid + step]')}")
    self.emit(depth + 1, "cuda.syncthreads()")
    self.emit(depth + 1, "step //= 2")
    self.emit(depth, f"{acc} = {shared}[0]")
    self.emit(depth, "cuda.syncthreads()")   # every thread has read the total before shared is used again

  def render_partials(self, outer, reduce):
    """partials[chunk * n_outer + output]: rows are reduced by a block per (output, chunk), columns by a
    thread per (output, chunk) (neighbouring threads read neighbouring columns)."""
    (op, expr), = self.kernel.stages
    blocks = uses_block_reduce(self.kernel)
    if blocks: self.open_block()
    self.emit(1, f"chunks = {self.int_param(self.chunks)}")
    self.emit(1, "per_chunk = (n_reduce + chunks - 1) // chunks")
    first, step = ("cuda.blockIdx.x", "cuda.gridDim.x") if blocks else ("cuda.grid(1)", "cuda.gridsize(1)")
    self.emit(1, f"for xp in range({first}, n_outer * chunks, {step}):")
    self.unflatten(2, "xp % n_outer", outer)
    self.emit(2, "start = xp // n_outer * per_chunk")
    self.emit(2, f"acc0 = {reduce_identity(op, expr.dtype)}")
    if blocks: self.emit(2, f"for xr in range(start + tid, min(start + per_chunk, n_reduce), {self.threads}):")
    else: self.emit(2, "for xr in range(start, min(start + per_chunk, n_reduce)):")
    self.unflatten(3, "xr", reduce)
    self.accumulate(3, op, expr, "acc0")
    if blocks:
      self.combine_block(2, 0, op, expr.dtype)
      self.emit(2, "if tid == 0:")
      self.emit(3, "partials[xp] = acc0")
    else: self.emit(2, "partials[xp] = acc0")

  def render_combine(self, outer, reduce):
    (op, expr), = self.kernel.stages
    self.emit(1, f"chunks = {self.int_param(self.chunks)}")
    self.emit(1, "for xo in range(cuda.grid(1), n_outer, cuda.gridsize(1)):")
    self.unflatten(2, "xo", outer)
    self.emit(2, f"acc0 = {reduce_identity(op, expr.dtype)}")
    self.emit(2, "for xc in range(chunks):")
    self.emit(3, f"acc0 = {BINARY[REDUCE_COMBINE[op]](expr.dtype, 'acc0', 'partials[xc * n_outer + xo]')}")
    self.store_reduced(2, reduce)

  def render_blocks(self, outer, reduce):
    k, threads = self.kernel, self.threads
    self.open_block()
    self.emit(1, "for xo in range(cuda.blockIdx.x, n_outer, cuda.gridDim.x):")
    self.unflatten(2, "xo", outer)
    for number, (op, expr) in enumerate(k.stages):
      acc = f"acc{number}"
      self.emit(2, f"{acc} = {reduce_identity(op, expr.dtype)}")
      self.emit(2, f"for xr in range(tid, n_reduce, {threads}):")
      self.unflatten(3, "xr", reduce)
      self.accumulate(3, op, expr, acc)
      self.combine_block(2, number, op, expr.dtype)
    if k.full:
      self.emit(2, f"for xr in range(tid, n_reduce, {threads}):")
      self.unflatten(3, "xr", reduce)
      self.store(3)
    else:
      self.emit(2, "if tid == 0:")
      self.store_reduced(3, reduce)
