"""The scheduler: cuts a lazy graph into kernels. All fusion rules live here.

Rules:
- elementwise work is always inlined into the kernel that consumes it (a view of it is composed into
  the consumer's index arithmetic);
- a reduce is the core of a kernel; the elementwise work feeding it is fused into its loop, and the
  elementwise work consuming its result is fused after it ("post" kernel), or, when the consumer
  reads it broadcast back over the reduced axes, the consumer is fused as a loop after the reduce
  loop ("full" kernel: softmax is one kernel this way), also through a reshape (GroupNorm's statistics over
  (N, groups, rest) normalizing (N, C, H, W)), with a loop over a refinement of both shapes;
- several reduces over the same loop space and axes share one kernel, one stage each, when each reads
  the earlier ones broadcast back, unless an earlier kernel realizes one already; any other reduce is
  realized by a kernel of its own first;
- realized buffers, tensors being realized in the same call, contiguous(), custom, copy and empty
  nodes are loaded, never recomputed; so is any node an earlier kernel of the same schedule stores (a
  gradient that a matrix product reads and a bias gradient sums).
"""
from __future__ import annotations
import itertools
import math
import operator
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Optional
from nbgrad.dtype import DType, dtypes
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import UnaryOps, BinaryOps, TernaryOps, ReduceOps, LoadOps, ALU_OPS
from nbgrad.graph.view import View, contiguous_strides, prod, reshape_groups
from nbgrad.helpers import HashedKey


@dataclass(frozen=True)
class Expr:
  """A node of a kernel's expression tree. op is an ALU op or one of the leaf kinds below."""
  op: Any
  dtype: DType
  srcs: tuple = ()
  arg: Any = None


# leaf kinds
LOAD = "LOAD"      # arg: (input number, View from the loop index to the buffer's index)
CONST = "CONST"    # arg: the value
INDEX = "INDEX"    # arg: (View to a 1-D index space, start, step): start + step * index
VALID = "VALID"    # arg: View; True where the view's conditions hold (padding)
ACC = "ACC"        # arg: stage number; the stage's accumulated value


@dataclass
class Kernel:
  kind: str                       # "compute", "empty", "custom" or "copy"
  output: LazyBuffer              # the base node this kernel realizes
  inputs: list = field(default_factory=list)      # base nodes read, realized before this kernel runs
  loop_shape: tuple = ()
  reduce_axes: tuple = ()
  stages: tuple = ()              # ((ReduceOps, Expr), ...) accumulated in order
  out_expr: Optional[Expr] = None
  out_view: Optional[View] = None  # loop index -> output index (reduce axes read as 0 unless full)
  full: bool = True               # the output covers the whole loop space (else: the reduced space)
  name: str = ""
  structure: Optional[HashedKey] = None   # structure_key, once computed (a reused schedule carries it)
  # elementwise nodes this kernel computes on the way and also stores, each into a buffer of its own at the
  # output's index (store_alongside), and their expressions (subexpressions of out_expr)
  also: list = field(default_factory=list)
  also_exprs: tuple = ()

  def __repr__(self): return f"<Kernel {self.name}>"

  def instance(self, output: LazyBuffer, inputs: list, also: list) -> Kernel:
    """This kernel (a reused schedule's template) realizing other nodes: a copy of its fields, without
    dataclasses.replace's call of __init__ (a training step instantiates every kernel of its schedule)."""
    kernel = object.__new__(Kernel)
    kernel.__dict__.update(self.__dict__, output=output, inputs=inputs, also=also)
    return kernel


def map_views(expr: Expr, fn, memo=None) -> Expr:
  """expr with every view v replaced by fn(v)."""
  memo = {} if memo is None else memo
  if id(expr) in memo: return memo[id(expr)]
  if expr.op == LOAD: new = replace(expr, arg=(expr.arg[0], fn(expr.arg[1])))
  elif expr.op == INDEX: new = replace(expr, arg=(fn(expr.arg[0]),) + expr.arg[1:])
  elif expr.op == VALID: new = replace(expr, arg=fn(expr.arg))
  else: new = replace(expr, srcs=tuple(map_views(s, fn, memo) for s in expr.srcs))
  memo[id(expr)] = new
  return new


# An elementwise node is inlined into the kernels that read it, once per distinct view it is read through.
# Past this many views in one kernel (convolution windows, pooling backward) it gets a kernel of its own.
MAX_INLINED_VIEWS = 4
# A chain of elementwise ops deeper than this is cut: the node at that depth gets a kernel of its own. A
# thousand-op chain (x = x * 1.001 in a loop, a running total) made one kernel whose source took seconds to
# compile, and walking it recursed past Python's limit.
MAX_FUSED_DEPTH = 32
# A kernel holds at most about this many computed nodes; past it, a node it would inline gets a kernel of its
# own. The gradient of an LSTM cell (slices of one tensor, padded back and summed) inlined the same cell
# once per slice and time step: one kernel of thousands of lines whose compile ran for minutes.
MAX_KERNEL_NODES = 192
# Reduces sharing one loop nest become stages of one kernel (softmax: a max and a sum) up to this many; a sum of
# hundreds of reductions (a running total) made one kernel whose compile took seconds.
MAX_STAGES = 4
# The graph walks (scheduling, rendering) recurse once per op of a kernel and a few times per kernel of a chain
# of kernels: room for chains of thousands of ops (tinygrad raises the limit to 10000 the same way).
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))


class KernelBuilder:
  def __init__(self, root: LazyBuffer, targets: set, planned: set, schedule_base):
    self.root, self.targets, self.planned, self.schedule_base = root, targets, planned, schedule_base
    self.inputs: list[LazyBuffer] = []
    self.stages: list = []
    self.stage_of: dict[int, int] = {}
    self.memo: dict = {}
    self.views_of: dict[int, set] = {}
    self.valids: dict[View, Expr] = {}
    self.depth = 0   # of elementwise ops inlined above the node being built
    self.nodes = 0   # computed nodes inlined so far

  def build(self) -> Kernel:
    root = self.root
    if root.op in ReduceOps:
      self.loop_shape, self.axes = root.srcs[0].shape, root.arg
      out_view, full = View.contiguous(root.shape).expand(self.loop_shape), False
      out_expr = Expr(ACC, root.dtype, arg=self.stage(root))
    else:
      found = self.find_primary_reduce(root, View.contiguous(root.shape), set())
      if found is None:
        self.loop_shape, self.axes, full = root.shape, (), True
        out_view = View.contiguous(root.shape)
      elif found[1] == "post":
        red = found[0]
        self.loop_shape, self.axes, full = red.srcs[0].shape, red.arg, False
        out_view = View.contiguous(red.shape).expand(self.loop_shape).then(View.contiguous(root.shape).reshape(red.shape))
      else:
        (self.loop_shape, self.axes), full = found[2], True
        out_view = View.contiguous(root.shape).reshape(self.loop_shape)
      out_expr = self.expr(root, out_view)
    return Kernel("compute", root, self.inputs, self.loop_shape, self.axes, tuple(self.stages), out_expr,
                  out_view.flattened(), full)

  def find_primary_reduce(self, base: LazyBuffer, view: View, seen: set, depth: int = 0):
    """A reduce the root can be fused onto, within the depth the kernel inlines: read in flat order (post), or
    broadcast back (full, with the loop space and reduce axes to run it over)."""
    if depth >= MAX_FUSED_DEPTH: return None
    for src in base.srcs:
      sbase, sview = src.base, view.then(src.view)
      if self.is_loaded(sbase) or (id(sbase), sview) in seen: continue
      seen.add((id(sbase), sview))
      if sbase.op in ReduceOps:
        if sbase.size == self.root.size and sview.is_flat_order(): return sbase, "post"
        if sbase.srcs[0].shape == self.root.shape: loop = (self.root.shape, sbase.arg)
        else: loop = reduce_loop(sbase.srcs[0].shape, sbase.arg, self.root.shape)
        if loop is not None and View.contiguous(self.root.shape).reshape(loop[0]).then(sview).same_map(broadcast_back(sbase, loop[0])):
          return sbase, "full", loop
      elif isinstance(sbase.op, ALU_OPS):
        if (found := self.find_primary_reduce(sbase, sview, seen, depth + 1)) is not None: return found
    return None

  def is_loaded(self, base: LazyBuffer) -> bool:
    """Read from a buffer rather than computed here; that includes a node some earlier kernel of the schedule
    computes already (a max-pool's maximum, which its gradient's tie count and mask read again; a gradient a
    matrix product reads, which a bias gradient sums)."""
    return base.buffer is not None or base.op in (LoadOps.BUFFER, LoadOps.EMPTY, LoadOps.CUSTOM, LoadOps.CONTIGUOUS, LoadOps.COPY) \
      or (base is not self.root and (id(base) in self.targets or id(base) in self.planned))

  def stage(self, red: LazyBuffer) -> int:
    if id(red) not in self.stage_of:
      src = red.srcs[0]
      body = self.expr(src.base, View.contiguous(src.shape).reshape(self.loop_shape).then(src.view))
      self.stage_of[id(red)] = len(self.stages)
      self.stages.append((red.op, body))
    return self.stage_of[id(red)]

  def reduces_over_loop(self, red: LazyBuffer) -> bool:
    """Whether red sums (or takes the max) over this kernel's reduce axes of its loop, so it can be a stage."""
    if red.srcs[0].shape == self.loop_shape: return red.arg == self.axes
    return reduce_loop(red.srcs[0].shape, red.arg, self.loop_shape) == (self.loop_shape, self.axes)

  def load(self, base: LazyBuffer, view: View) -> Expr:
    self.schedule_base(base)
    if not any(b is base for b in self.inputs): self.inputs.append(base)
    number = next(i for i, b in enumerate(self.inputs) if b is base)
    return Expr(LOAD, base.dtype, arg=(number, view.flattened()))

  def expr(self, base: LazyBuffer, view: View, masked: bool = False) -> Expr:
    """base's value read through view. masked: a node above already zeroes every element view's conditions
    rule out, so this one need not (a padded gradient piece would otherwise test its mask at every node)."""
    key = (id(base), view, masked)
    if key not in self.memo: self.memo[key] = self._expr(base, view, masked)
    return self.memo[key]

  def _expr(self, base: LazyBuffer, view: View, masked: bool) -> Expr:
    if self.is_loaded(base): return self.load(base, view)
    if base.op is LoadOps.CONST: value = Expr(CONST, base.dtype, arg=base.arg)
    elif base.op is LoadOps.ARANGE: value = Expr(INDEX, base.dtype, arg=(view,) + tuple(base.arg))
    elif base.op in ReduceOps:
      fusable = self.reduces_over_loop(base) and id(base) not in self.targets \
        and view.same_map(broadcast_back(base, self.loop_shape)) \
        and (id(base) in self.stage_of or len(self.stages) < MAX_STAGES)
      return Expr(ACC, base.dtype, arg=self.stage(base)) if fusable else self.load(base, view)
    else:
      views = self.views_of.setdefault(id(base), set())
      views.add(view)
      if (len(views) > MAX_INLINED_VIEWS or self.depth >= MAX_FUSED_DEPTH or self.nodes >= MAX_KERNEL_NODES) \
          and base is not self.root:
        self.targets.add(id(base))   # read through many views, deep or past the size: a kernel of its own
        return self.load(base, view)
      self.nodes += 1
      self.depth += 1
      # a source read through a view without conditions of its own is valid where this node is
      covered = masked or view.has_conditions()
      srcs = tuple(self.expr(s.base, view.then(s.view), covered and not s.view.has_conditions()) for s in base.srcs)
      self.depth -= 1
      value = Expr(base.op, base.dtype, srcs, base.arg)
    if view.has_conditions() and not masked:
      # a padded True (a cat's choice of its slot) is the view's conditions themselves, a test LLVM can fold
      if base.op is LoadOps.CONST and base.dtype == dtypes.bool and base.arg: return self.valid(view)
      value = Expr(TernaryOps.WHERE, base.dtype, (self.valid(view), value, Expr(CONST, base.dtype, arg=0)))
    return value

  def valid(self, view: View) -> Expr:
    """One VALID node per set of conditions: the nodes under a padded view all test the same ones."""
    conditions = view.conditions_only()
    if conditions not in self.valids: self.valids[conditions] = Expr(VALID, dtypes.bool, arg=conditions)
    return self.valids[conditions]


def reduce_loop(src_shape, axes, shape) -> Optional[tuple[tuple, tuple]]:
  """(loop shape, reduce axes) of a kernel that reduces a tensor of src_shape over axes and computes values of
  shape (as many elements) from the result, as GroupNorm's (the means over (N, groups, C / groups * H * W), the
  values over (N, C, H, W)): the loop is the shapes' common refinement, each of whose dims lies within one dim of
  either, so that both are read through strides. None where there is none, or where no loop dim is reduced."""
  groups = reshape_groups(src_shape, shape) if prod(src_shape) == prod(shape) else None
  if groups is None: return None
  loop: list[int] = []
  loop_axes: list[int] = []
  for src_dims, dims in groups:
    src_sizes = [src_shape[d] for d in src_dims]
    inner_spans = {1} | set(itertools.accumulate(reversed(src_sizes), operator.mul)) \
      | set(itertools.accumulate(reversed([shape[d] for d in dims]), operator.mul))
    spans = sorted(inner_spans, reverse=True)
    if any(outer % inner for outer, inner in zip(spans, spans[1:])): return None
    src_spans = contiguous_strides(tuple(src_sizes))
    for outer, inner in zip(spans, spans[1:]):
      loop.append(outer // inner)
      if next(d for d, span in zip(src_dims, src_spans) if span <= inner) in axes: loop_axes.append(len(loop) - 1)
  return (tuple(loop), tuple(loop_axes)) if loop_axes else None


def broadcast_back(red: LazyBuffer, loop_shape) -> View:
  """The view through which a kernel looping over loop_shape reads red's result broadcast over red's reduced dims."""
  src_shape = red.srcs[0].shape
  return View.contiguous(src_shape).reshape(loop_shape).then(View.contiguous(red.shape).expand(src_shape))


def merge_loop_dims(kernel: Kernel) -> Kernel:
  """Collapses size-1 loop dims and neighbouring dims every view walks in step, so that kernels of
  different shapes share one compiled loop nest."""
  shape, axes = list(kernel.loop_shape), set(kernel.reduce_axes)
  views = collect_views(kernel)

  def reshaped(view: View, new_shape) -> Optional[View]:
    top = view.levels[0].reshape(new_shape)
    return None if top is None else View((top,) + view.levels[1:])

  def apply(new_shape, new_axes) -> bool:
    nonlocal shape, axes, views
    new_views = {v: reshaped(v, new_shape) for v in views}
    if any(v is None for v in new_views.values()): return False
    shape, axes, views = list(new_shape), new_axes, set(new_views.values())
    maps.append(new_views)
    return True

  maps: list = []
  if prod(shape) != 0:
    keep = [d for d, s in enumerate(shape) if s != 1]
    if len(keep) != len(shape):
      apply([shape[d] for d in keep], {keep.index(a) for a in axes if a in keep})
    d = 0
    while d + 1 < len(shape):
      if (d in axes) == (d + 1 in axes):
        new_shape = shape[:d] + [shape[d] * shape[d + 1]] + shape[d + 2:]
        new_axes = {a if a <= d else a - 1 for a in axes}
        if apply(new_shape, new_axes): continue
      d += 1
  if not shape:   # a scalar loops once over a 1-D space, so it shares the 1-D kernel
    new_views = {v: reshaped(v, (1,)) for v in views}
    maps.append(new_views)
    shape = [1]
  if not maps: return kernel

  def remap(view: View) -> View:
    for m in maps: view = m[view]
    return view
  return _with_views(kernel, shape, axes, remap)


def refine_loop_dims(kernel: Kernel) -> Kernel:
  """An elementwise kernel that reads a buffer through a reshape no strides express (a repeat, the flatten of a
  transpose, attention's heads merged back: x.transpose(1, 2).reshape(B, T, H * D)) loops over the common
  refinement of its shape and the reshaped one's, where the read is plain strides: no division and remainder per
  element. merge_loop_dims then joins back the dims every view walks in step. So does a reduce whose kernel writes
  every element (softmax, layernorm over merged heads, 16x256x8x64: 6.2 -> 1.5 and 1.70 -> 1.30 ms), its reduced
  dim's parts all reduced; a lone reduce keeps its loop (a sum over merged heads took 0.60 ms, 0.88 refined)."""
  if kernel.stages and not kernel.full: return kernel
  views = collect_views(kernel)
  shape = kernel.loop_shape
  for view in views:
    if len(view.levels) > 1 and view.levels[0].is_identity(): shape = _common_refinement(shape, view.levels[1].shape) or shape
  if shape == kernel.loop_shape: return kernel
  refined = {}
  for view in views:
    top = view.levels[0].reshape(shape)
    if top is None: return kernel
    levels = (top,) + view.levels[1:]
    while len(levels) > 1 and (folded := levels[0].read_as(levels[1].shape)) is not None:
      levels = (folded.then(levels[1]),) + levels[2:]
    refined[view] = View(levels)
  if all(len(refined[view].levels) == len(view.levels) for view in views): return kernel
  axes = [d for group, parts in reshape_groups(kernel.loop_shape, shape) if group[0] in kernel.reduce_axes for d in parts]
  if kernel.reduce_axes and not axes: return kernel   # only size-1 dims were reduced
  return _with_views(kernel, shape, axes, refined.__getitem__)


def _common_refinement(a: tuple, b: tuple) -> Optional[tuple]:
  """The shape whose dims split both a's and b's (each of their dims a product of neighbouring ones), if any."""
  if prod(a) != prod(b) or prod(a) == 0: return None
  bounds = sorted(set(itertools.accumulate(a, operator.mul)) | set(itertools.accumulate(b, operator.mul)))
  if any(high % low for low, high in zip(bounds, bounds[1:])): return None
  return tuple(high // low for low, high in zip([1] + bounds, bounds))


def _with_views(kernel: Kernel, loop_shape, reduce_axes, remap) -> Kernel:
  """kernel over another loop space: every view it reads and writes through replaced by remap(view)."""
  memo: dict = {}
  return replace(kernel, loop_shape=tuple(loop_shape), reduce_axes=tuple(sorted(reduce_axes)), out_view=remap(kernel.out_view),
                 stages=tuple((op, map_views(e, remap, memo)) for op, e in kernel.stages),
                 out_expr=map_views(kernel.out_expr, remap, memo))


def order_loop_dims(kernel: Kernel) -> Kernel:
  """A reduce kernel walks innermost the loop dim that most of its buffer reads step along one element at a time,
  when that is not the last dim already: x.T.sum(1) then runs as a sum over rows into a row of accumulators, and
  x.T.sum(0) as sums along contiguous rows, instead of reading a column per output (4096x4096 float32: benchmark
  reduce sum_transposed_axis1 145 -> 5.7 ms, numpy 4.7; x.T.sum(0) 34 -> 4.9 ms in a probe)."""
  n = len(kernel.loop_shape)
  if not kernel.reduce_axes or n < 2: return kernel
  contiguous_reads = [0] * n
  for strides in read_strides(kernel):
    for d, c in enumerate(strides): contiguous_reads[d] += abs(c) == 1
  best = max(range(n), key=contiguous_reads.__getitem__)
  if contiguous_reads[best] <= contiguous_reads[-1]: return kernel
  order = tuple(d for d in range(n) if d != best) + (best,)
  moved = _with_views(kernel, [kernel.loop_shape[d] for d in order], [order.index(a) for a in kernel.reduce_axes],
                      lambda view: view.permute(order))
  return merge_loop_dims(moved)


def read_strides(kernel: Kernel) -> list[tuple[int, ...]]:
  """The strides, per loop dim, of each buffer read that one set of strides expresses."""
  flats = [view.flattened() for view in collect_views(kernel, loads_only=True)]
  return [flat.levels[0].rows[0][0] for flat in flats if len(flat.levels) == 1]


def collect_views(kernel: Kernel, loads_only: bool = False) -> set:
  """The views the kernel reads and writes through (only those of its buffer reads, with loads_only)."""
  views, seen = set() if loads_only else {kernel.out_view}, set()

  def walk(e: Expr):
    if id(e) in seen: return
    seen.add(id(e))
    if e.op == LOAD: views.add(e.arg[1])
    elif e.op == INDEX and not loads_only: views.add(e.arg[0])
    elif e.op == VALID and not loads_only: views.add(e.arg)
    for s in e.srcs: walk(s)
  for _, e in kernel.stages: walk(e)
  walk(kernel.out_expr)
  return views


def structure_key(kernel: Kernel) -> HashedKey:
  """Everything a kernel's rendered source and launch parameters depend on: kernels with equal keys
  render alike, so a device can keep what it rendered (and the parameter arrays) under this key."""
  if kernel.structure is not None: return kernel.structure
  number: dict = {}
  records: list = []   # one per node, sources by number: a node read twice (x * x) is hashed once, not twice

  def key(e: Expr) -> int:
    if id(e) not in number:
      arg = e.arg
      if e.op == CONST and isinstance(arg, float): arg = (arg, math.copysign(1.0, arg))   # 0.0 == -0.0
      record = (e.op, e.dtype, arg, tuple(key(s) for s in e.srcs))
      number[id(e)] = len(records)
      records.append(record)
    return number[id(e)]
  stages, out = tuple((op, key(e)) for op, e in kernel.stages), key(kernel.out_expr)
  also = tuple(key(e) for e in kernel.also_exprs)
  kernel.structure = HashedKey((kernel.loop_shape, kernel.reduce_axes, kernel.full, kernel.output.dtype, kernel.out_view,
                                stages, out, also, tuple(records)))
  return kernel.structure


def kernel_name(kernel: Kernel) -> str:
  ops, seen = [], set()

  def walk(e: Expr):
    if id(e) in seen: return
    seen.add(id(e))
    for s in e.srcs: walk(s)
    if isinstance(e.op, (UnaryOps, BinaryOps, TernaryOps)) and e.op.name.lower() not in ops: ops.append(e.op.name.lower())
  for op, e in kernel.stages:
    walk(e)
    ops.append(op.name.lower())
  walk(kernel.out_expr)
  kind = "r" if kernel.stages else "e"
  words = "_".join(ops[:4]) or "copy"
  return f"{kind}_{words}_{'_'.join(str(s) for s in kernel.loop_shape) or '1'}"


class _Scheduler:
  """Orders the kernels of one realize. (A class rather than a recursive closure: a closure that
  refers to itself is a reference cycle, and it would keep every buffer alive until the next gc.)"""
  def __init__(self, outs: list[LazyBuffer], stored: list[LazyBuffer]):
    self.schedule: list[Kernel] = []
    self.planned: set = set()
    self.targets = {id(o.base) for o in outs} | {id(node) for node in stored}

  def schedule_base(self, base: LazyBuffer):
    if base.buffer is not None or id(base) in self.planned: return
    self.planned.add(id(base))
    if base.op is LoadOps.EMPTY:
      self.schedule.append(Kernel("empty", base, name=f"empty_{base.size}"))
      return
    if base.op is LoadOps.CUSTOM:
      for s in base.srcs: self.schedule_base(s.base)
      self.schedule.append(Kernel("custom", base, [s.base for s in base.srcs], name=base.arg.name))
      return
    if base.op is LoadOps.COPY:
      src = base.srcs[0].base
      self.schedule_base(src)
      self.schedule.append(Kernel("copy", base, [src], name=f"copy_{base.size}_{src.device}_to_{base.device}".lower()))
      return
    builder = KernelBuilder(base, self.targets, self.planned, self.schedule_base)
    if base.op is LoadOps.CONTIGUOUS:  # a copy of the source into a buffer of its own
      builder.loop_shape, builder.axes = base.shape, ()
      src = base.srcs[0]
      built = Kernel("compute", base, builder.inputs, base.shape, (), (), builder.expr(src.base, src.view),
                     View.contiguous(base.shape).flattened(), True)
    else:
      built = builder.build()
    built = order_loop_dims(merge_loop_dims(refine_loop_dims(built)))
    built.name = kernel_name(built)
    self.schedule.append(built)


def create_schedule(outs: list[LazyBuffer], structure: Optional[tuple] = None) -> list[Kernel]:
  """The kernels that realize outs, in an order where each kernel's inputs come first. A graph of the same
  structure as one scheduled before (a training step repeats its graph every step) reuses that schedule:
  its kernels are the same but for the nodes they realize and read.
  A tensor's assigned value that outs read is stored too, as the tensor's buffer: a loop of b.assign(f(b)) whose
  steps read b only inside other kernels (p = x + b; p.numpy()) would otherwise compute b's whole history again
  in every step, in a kernel growing with it. structure: graph_structure(outs), when the caller has it."""
  nodes, key = structure or graph_structure(outs)
  template = _templates.get(key) if key is not None else None
  if template is not None:
    return [kernel.instance(nodes[output], [nodes[i] for i in inputs], [nodes[i] for i in also]) for kernel, output, inputs, also in template]
  scheduler = _Scheduler(outs, [node for node in nodes if node.buffer is None and node.assigned])
  for out in outs: scheduler.schedule_base(out.base)
  schedule = store_alongside(scheduler.schedule)
  if key is not None:
    number = {id(node): i for i, node in enumerate(nodes)}
    if len(_templates) >= TEMPLATE_LIMIT: _templates.clear()
    _templates[key] = [(replace(k, output=None, inputs=[], also=[], structure=structure_key(k) if k.kind == "compute" else None),
                        number[id(k.output)], [number[id(i)] for i in k.inputs], [number[id(i)] for i in k.also]) for k in schedule]
  return schedule


_templates: dict = {}
TEMPLATE_LIMIT = 1024


def scheduled_before(key: Optional[HashedKey]) -> bool: return key is not None and key in _templates

# An elementwise kernel stored alongside another holds at most this many expression nodes, and the two together at
# most MAX_KERNEL_NODES: its expression is written into the other kernel's, whose source must stay quick to compile
ALONGSIDE_MAX_NODES = 64


def store_alongside(schedule: list[Kernel]) -> list[Kernel]:
  """The schedule with each elementwise kernel whose node a later elementwise kernel reads element for element
  (the same loop, the same index) computed and stored by that later kernel instead, when no kernel between the
  two reads the node. An optimizer's step stores a moment that the parameter's update reads: Adam's moments and
  parameter updated in one kernel read the gradient and the moments once, not twice (benchmark optim_adam_step, 4M
  parameters: 7.55 -> 5.77-6.11 ms)."""
  position = {id(k.output): i for i, k in enumerate(schedule)}
  for j, kernel in enumerate(schedule):
    if not _elementwise(kernel): continue
    while (source := _source_to_store(schedule, position, j)) is not None:
      schedule[position[id(source.output)]] = None
      schedule[j] = _with_stored(schedule[j], source)
  return [k for k in schedule if k is not None]


def _source_to_store(schedule: list, position: dict, j: int) -> Optional[Kernel]:
  """An earlier kernel whose nodes schedule[j] can compute and store alongside its output, if any."""
  reader = schedule[j]
  for node in reader.inputs:
    i = position.get(id(node), j)
    if i < j and schedule[i] is not None and _stores_alongside(schedule[i], reader, schedule[i + 1:j]): return schedule[i]
  return None


def _elementwise(kernel: Kernel) -> bool: return kernel.kind == "compute" and not kernel.stages


def _stores_alongside(source: Kernel, reader: Kernel, between: list) -> bool:
  """Whether reader can compute and store source's nodes (its output and those it stores alongside): both elementwise
  over one loop with one output index, reader reading the nodes only at that index, and no kernel between them
  reading them."""
  if not _elementwise(source) or source.output.device != reader.output.device: return False
  if source.loop_shape != reader.loop_shape or source.out_view != reader.out_view or source.out_expr.dtype != source.output.dtype: return False
  stored = {id(node) for node in [source.output] + source.also}
  if any(k is not None and any(id(i) in stored for i in k.inputs) for k in between): return False
  numbers = {n for n, i in enumerate(reader.inputs) if id(i) in stored}
  views, count = set(), [0]

  def walk(e: Expr, seen: set):
    if id(e) in seen: return
    seen.add(id(e))
    count[0] += 1
    if e.op == LOAD and e.arg[0] in numbers: views.add(e.arg[1])
    for s in e.srcs: walk(s, seen)
  walk(reader.out_expr, set())
  if views != {source.out_view}: return False
  reader_nodes, count[0] = count[0], 0
  walk(source.out_expr, set())
  return count[0] <= ALONGSIDE_MAX_NODES and reader_nodes + count[0] <= MAX_KERNEL_NODES


def _with_stored(reader: Kernel, source: Kernel) -> Kernel:
  """reader with source's expressions in place of its reads of source's nodes, and those nodes stored alongside."""
  stored = [source.output] + source.also
  inputs = [i for i in reader.inputs if not any(i is node for node in stored)]
  inputs += [i for i in source.inputs if not any(i is j for j in inputs)]
  number = {id(i): n for n, i in enumerate(inputs)}
  source_numbers, source_memo = [number[id(i)] for i in source.inputs], {}
  values = [_renumbered(e, source_numbers, {}, source_memo) for e in (source.out_expr,) + source.also_exprs]
  value_of = {id(node): value for node, value in zip(stored, values)}
  read = {n: value_of[id(i)] for n, i in enumerate(reader.inputs) if id(i) in value_of}
  numbers, memo = [number.get(id(i), -1) for i in reader.inputs], {}
  kernel = replace(reader, inputs=inputs, out_expr=_renumbered(reader.out_expr, numbers, read, memo), structure=None,
                   also=reader.also + stored, also_exprs=tuple(_renumbered(e, numbers, read, memo) for e in reader.also_exprs) + tuple(values))
  kernel.name = kernel_name(kernel)
  return kernel


def _renumbered(expr: Expr, numbers: list, read: dict, memo: dict) -> Expr:
  """expr with input n read as input numbers[n], and the loads of the inputs in read replaced by read[input]."""
  if id(expr) in memo: return memo[id(expr)]
  if expr.op == LOAD: new = read[expr.arg[0]] if expr.arg[0] in read else replace(expr, arg=(numbers[expr.arg[0]], expr.arg[1]))
  elif expr.srcs: new = replace(expr, srcs=tuple(_renumbered(s, numbers, read, memo) for s in expr.srcs))
  else: new = expr
  memo[id(expr)] = new
  return new


def graph_structure(outs: list[LazyBuffer]) -> tuple[list, Optional[HashedKey]]:
  """The base nodes reachable from outs (realized ones are leaves), numbered, and a key equal for graphs the
  scheduler cuts alike: every node's op, argument, dtype, shape and device, each source's number and view, and
  whether it is a tensor's assigned value.
  The key is None when an argument cannot be hashed (such a graph is scheduled afresh)."""
  nodes, number, stack = [], {}, [o.base for o in reversed(outs)]
  while stack:   # plain loops and list comprehensions: this runs on every realize, and generators cost more
    base = stack.pop()
    if id(base) in number: continue
    number[id(base)] = len(nodes)
    nodes.append(base)
    if base.buffer is None: stack += [s.base for s in reversed(base.srcs)]
  records = []
  for base in nodes:
    if base.buffer is not None:
      records.append((base.dtype, base.shape, base.device))
      continue
    arg = ("float", repr(base.arg)) if isinstance(base.arg, float) else base.arg   # repr tells -0.0 and nan apart
    records.append((base.op, arg, base.dtype, base.shape, base.device, tuple([(number[id(s.base)], s.view) for s in base.srcs]),
                    base.assigned))
  try: return nodes, HashedKey((tuple(records), tuple([number[id(o.base)] for o in outs])))
  except TypeError: return nodes, None
