"""Renders a scheduled Kernel as the Python source of a numba function.

Sizes, strides, offsets, mask bounds and constants are not written into the source: they are read from
two parameter arrays (ints, floats), so kernels that differ only in those numbers share one source,
one compile and one cache entry. The source and the parameter values are produced together."""
from __future__ import annotations
import re
from typing import Optional
from nbgrad.dtype import DType, dtypes
from nbgrad.graph.ops import UnaryOps, BinaryOps, TernaryOps, ReduceOps
from nbgrad.graph.schedule import Kernel, Expr, LOAD, CONST, INDEX, VALID, ACC, read_strides
from nbgrad.graph.view import View, contiguous_strides, prod, reshape_groups

BLOCK = 4096        # elements per parallel work item of a 1-D loop
SPLIT_CHUNKS = 64   # partial results of a reduce that is parallelized along its reduced axis
SUM_BLOCK = 2048    # steps of the outer reduced dim a float sum adds up apart, as a block, before adding it to the total
COLUMN_SUM_BLOCK = 128   # the same for a column reduce, whose accumulators add each row in turn (not in vector lanes)
COLUMN = 1024       # accumulators per block of a column reduce: 4 KiB of float32 stays in L1 while rows stream by
TILE = 16           # side of the square blocks an elementwise kernel walks when it reads an input transposed


def compute_type(dt: DType) -> str:
  """The numba scalar type a value of dt is computed in (16-bit floats compute in float32)."""
  if dt.kind == "b": return "np.bool_"
  if dt.kind == "f" and dt.itemsize == 2: return "np.float32"
  return f"np.{dt.name}"


def typed(dt: DType, text: str, text_dtype: DType) -> str:
  """text, a value of text_dtype, as dt's compute type; without a conversion call where the types agree (each call is
  one more function numba types when it compiles the kernel)."""
  return text if compute_type(dt) == compute_type(text_dtype) else f"{compute_type(dt)}({text})"


def storage_type(dt: DType) -> str:
  return "np.uint16" if dt.kind == "f" and dt.itemsize == 2 else compute_type(dt)


def load_from_storage(dt: DType, text: str) -> str:
  if dt == dtypes.float16: return f"f16_to_f32({text})"
  if dt == dtypes.bfloat16: return f"bf16_to_f32({text})"
  return text


def store_to_storage(dt: DType, text: str) -> str:
  if dt == dtypes.float16: return f"f32_to_f16({text})"
  if dt == dtypes.bfloat16: return f"f32_to_bf16({text})"
  return text


ROUNDING = {dtypes.float16: "round_f16", dtypes.bfloat16: "round_bf16"}   # a float32 value to the nearest 16-bit float


def in_dtype(dt: DType, text: str) -> str:
  """Keeps a computed value in its dtype: small ints wrap, 16-bit floats round."""
  if dt.kind in "iu": return f"{compute_type(dt)}({text})"
  if dt in ROUNDING: return f"{ROUNDING[dt]}({text})"
  return text


def _cast(src: DType, dst: DType, a: str) -> str:
  if dst.kind == "b": return f"({a} != 0)"
  if dst.kind == "f" and dst.itemsize == 2:   # through float32, rounded to odd from a wider source (one rounding)
    return in_dtype(dst, f"f64_to_f32_odd(np.float64({a}))" if src.itemsize >= 4 and src != dtypes.float32 else f"np.float32({a})")
  if dst.kind == "f": return f"{compute_type(dst)}({a})"
  if src.kind == "f" and dst.kind in "iu":   # NaN and out-of-range values as numpy and torch convert them
    if dst.itemsize < 4: return f"{compute_type(dst)}(float_to_i32({a}))"
    return f"float_to_{dst.kind}{dst.itemsize * 8}({a})"
  return f"{compute_type(dst)}({a})"


def _bitcast(src: DType, dst: DType, a: str) -> str:
  if src.kind == "b" or dst.kind == "b": return _cast(src, dst, a)
  bits = store_to_storage(src, a) if src.itemsize == 2 and src.kind == "f" else a
  if dst.kind == "f" and dst.itemsize == 2: return load_from_storage(dst, f"np.uint16({bits})")
  return f"reinterpret({bits}, {compute_type(dst).replace('np.', 'nb_types.')})"


def _int_division(dt: DType, op: str) -> str:
  """The runtime's integer division or remainder for dt: in float64 up to 32 bits (idiv32), else in integers."""
  if dt.itemsize <= 4: return f"i{op}32"
  return f"{'u' if dt.kind == 'u' else 'i'}{op}"


# op -> template(dtype of the result or of the operands, *operand texts). One table for every device;
# only the float math functions (Renderer.MATH) and the CUDA float product (CudaRenderer.BINARY) differ.
UNARY = {
  UnaryOps.NEG: lambda dt, a: f"(not {a})" if dt.kind == "b" else in_dtype(dt, f"(-{a})"),
  UnaryOps.RECIP: lambda dt, a: in_dtype(dt, f"({compute_type(dt)}(1.0) / {a})"),
  UnaryOps.NOT: lambda dt, a: f"(not {a})",
}
SMALL_ANGLE_VERSIONS = {"sin_f32": "sin_f32_small_angle", "cos_f32": "cos_f32_small_angle",   # see store_elementwise
                        "sin_f64": "sin_f64_small_angle", "cos_f64": "cos_f64_small_angle"}
EXACT_ROUNDING = (UnaryOps.TRUNC, UnaryOps.FLOOR, UnaryOps.CEIL, UnaryOps.RINT)   # results need no re-rounding


def _arithmetic(dt: DType, operation: str, symbol: str, a: str, b: str) -> str:
  """a symbol b in dt; int64's wraps through the runtime's helper (the smaller ints compute in int64 and wrap when
  cut to their dtype, uint64's wraps as it is)."""
  return f"wrapping_{operation}({a}, {b})" if dt == dtypes.int64 else in_dtype(dt, f"({a} {symbol} {b})")


BINARY = {
  BinaryOps.ADD: lambda dt, a, b: f"({a} or {b})" if dt.kind == "b" else _arithmetic(dt, "add", "+", a, b),
  BinaryOps.SUB: lambda dt, a, b: f"({a} != {b})" if dt.kind == "b" else _arithmetic(dt, "sub", "-", a, b),
  BinaryOps.MUL: lambda dt, a, b: f"({a} and {b})" if dt.kind == "b" else _arithmetic(dt, "mul", "*", a, b),
  BinaryOps.DIV: lambda dt, a, b: in_dtype(dt, f"({a} / {b})"),
  # ints: C's truncating division; floats: Python's floor division (numba computes it as numpy and torch do, from
  # the exact remainder fmod gives, so 3 // 1e-8 or 1000.3 % 2pi keep every digit the format allows)
  BinaryOps.IDIV: lambda dt, a, b: in_dtype(dt, f"({a} // {b})" if dt.kind == "f" else f"{_int_division(dt, 'div')}({a}, {b})"),
  BinaryOps.MOD: lambda dt, a, b: in_dtype(dt, f"({a} % {b})" if dt.kind == "f" else f"{_int_division(dt, 'mod')}({a}, {b})"),
  BinaryOps.POW: lambda dt, a, b: f"({a} ** {b})" if dt.itemsize == 8 else in_dtype(dt, f"pow_f32({a}, {b})"),
  BinaryOps.ATAN2: lambda dt, a, b: f"atan2_f64({a}, {b})" if dt.itemsize == 8 else in_dtype(dt, f"atan2_f32({a}, {b})"),
  # bools: | and & (any() and all() reduce with them: vector ors, where max() of bools ran a branch per element)
  BinaryOps.MAX: lambda dt, a, b: f"fmax({a}, {b})" if dt.kind == "f" else f"({a} | {b})" if dt.kind == "b" else f"max({a}, {b})",
  BinaryOps.MIN: lambda dt, a, b: f"fmin({a}, {b})" if dt.kind == "f" else f"({a} & {b})" if dt.kind == "b" else f"min({a}, {b})",
  BinaryOps.CMPLT: lambda dt, a, b: f"({a} < {b})",
  BinaryOps.CMPEQ: lambda dt, a, b: f"({a} == {b})",
  BinaryOps.CMPNE: lambda dt, a, b: f"({a} != {b})",
  BinaryOps.AND: lambda dt, a, b: in_dtype(dt, f"({a} & {b})"),
  BinaryOps.OR: lambda dt, a, b: in_dtype(dt, f"({a} | {b})"),
  BinaryOps.XOR: lambda dt, a, b: in_dtype(dt, f"({a} ^ {b})"),
  # shifts compute in 64 bits, where a negative count or one of 64 or more is undefined (the results changed with the
  # tensor's size): as torch, such a left shift gives 0, a right shift the sign (0 or -1, and 0 for unsigned)
  BinaryOps.SHL: lambda dt, a, b: in_dtype(dt, f"(({a} << {b}) if 0 <= {b} < 64 else ({a} ^ {a}))"),
  BinaryOps.SHR: lambda dt, a, b: in_dtype(dt, f"(({a} >> {b}) if {b} < 64 else ({a} ^ {a}))" if dt.kind == "u"
                                           else f"({a} >> ({b} if 0 <= {b} < 63 else 63))"),
  BinaryOps.GCD: lambda dt, a, b: in_dtype(dt, f"gcd_magnitude({a}, {b})"),
}
REDUCE_COMBINE = {ReduceOps.SUM: BinaryOps.ADD, ReduceOps.PROD: BinaryOps.MUL, ReduceOps.MAX: BinaryOps.MAX, ReduceOps.MIN: BinaryOps.MIN}


def key_bits(dt: DType) -> int:
  """Width of the integer keys a float max/min compares (16-bit floats compute in float32)."""
  return 64 if dt.itemsize == 8 else 32


def reduce_identity(op: ReduceOps, dt: DType) -> str:
  t = compute_type(dt)
  if op is ReduceOps.SUM: return f"{t}(0)"
  if op is ReduceOps.PROD: return f"{t}(1)"
  if dt.kind == "b": return "False" if op is ReduceOps.MAX else "True"
  if dt.kind == "f": return f"{t}({'-' if op is ReduceOps.MAX else ''}np.inf)"
  if dt.kind == "u": return f"{t}(0)" if op is ReduceOps.MAX else f"{t}({(1 << 8 * dt.itemsize) - 1})"
  bits = 8 * dt.itemsize
  return f"{t}({-(1 << (bits - 1))})" if op is ReduceOps.MAX else f"{t}({(1 << (bits - 1)) - 1})"


# A reduce over at most this many elements per output (a pooling window) has its loop bounds written out, so
# LLVM unrolls it, and a float max compares floats directly (order keys only pay in a loop LLVM vectorizes).
# relu then max-pool 2x2 of 32x32x26x26 float32: 1.71 -> 0.45 ms. Only kernels big enough to run in parallel
# get it: each window size is a compile of its own (76 more in tests/test_reduce.py and test_nn_ops.py, whose
# kernels are small), and small kernels cost their call, not their loop.
SMALL_WINDOW = 16


def is_power_of_two(n: int) -> bool: return n > 0 and n & (n - 1) == 0


def unsigned(offset: str) -> str:
  """An index numba takes as it is: a signed one gets a wraparound for negative values, which keeps LLVM from
  vectorizing the loop (benchmarks/ group reduce, sum of 16M float32: 4.98 ms signed, 1.52 ms unsigned;
  fma_relu of 16M: 14.3 -> 10.1 ms)."""
  return f"np.uint64({offset})"


_TEMPORARY = re.compile(r"(t\d+) = (.+)")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b(?![\w(.])")   # a variable: not a function called or a module used
_PARAMETER = re.compile(r"[ifb]\d+|out|ip|fp|if|else|and|or|not|True|False")
_INDEX = re.compile(r"x\d+(_next)?|xstart|xend")   # loop indices and block bounds: each assignment defines them anew


def hoist_invariants(code: list[str]) -> list[str]:
  """The lines of a loop nest with each temporary computed in the outermost loop where its operands are known:
  a value that does not change along a loop (a load of a broadcast input and what is computed from it) is
  computed before that loop, once. Besides the work saved, LLVM never finished optimizing some kernels that computed
  a long chain of selects from such values inside the loop (it unswitches the loop on each invariant condition):
  softplus of a broadcast scalar; atanh's gradient summed into a column block; half-precision math on a finished
  sum, each result rounded to float16, in the loop over the outputs.
  A load taken out of a reduce loop that runs no times reads an element the loop would have read had it run
  (the loop's index does not enter its address), so it stays in bounds. Lines in `if` blocks stay in them. An
  index (loop variable, x0 = 0, xstart) is known from where it is assigned until its block ends. Another name
  assigned outside temporaries (an accumulator) is known from its first assignment, and a line reading it stays
  inside every block that assigns it (where it changes); after its loop, what is computed from it can leave the
  loops that follow."""
  assigned = [m.group(1) for line in code if (m := _TEMPORARY.fullmatch(line.strip()))]
  once = {name for name in assigned if assigned.count(name) == 1}
  changed_in = _names_changed_in_blocks(code)
  result: list[str] = []
  scopes: list[list] = []   # open blocks: [indent of the header line, is a for loop, position of the header in result, names it changes]
  level: dict[str, int] = {}   # name -> how many scopes enclose the place its value is known
  for number, line in enumerate(code):
    indent, text = len(line) - len(line.lstrip()), line.strip()
    while scopes and scopes[-1][0] >= indent: scopes.pop()
    depth = len(scopes)
    for name in [n for n, known in level.items() if known > depth]: del level[name]   # known only in a closed block
    if text.endswith(":"):
      loop = re.match(r"for (\w+) in ", text)
      if loop: level[loop.group(1)] = depth + 1
      result.append(line)
      scopes.append([indent, bool(loop), len(result) - 1, changed_in.get(number, set())])
      continue
    target = depth
    statement = _TEMPORARY.fullmatch(text)
    if statement and statement.group(1) in once:
      names = [n for n in _NAME.findall(statement.group(2)) if not _PARAMETER.fullmatch(n)]
      if all(n in level for n in names):
        floor = max((i + 1 for i, scope in enumerate(scopes) if not scope[1]), default=0)   # not out of an if block
        changing = max((i + 1 for i, scope in enumerate(scopes) for n in names if n in scope[3]), default=0)
        target = max([floor, changing] + [level[n] for n in names])
      level[statement.group(1)] = target
    elif _INDEX.fullmatch(assigned_name := text.split(" = ")[0]): level[assigned_name] = depth
    elif (base := _assigned_base(text)) is not None: level[base] = min(level.get(base, depth), depth)
    if target == depth:
      result.append(line)
      continue
    position = scopes[target][2]
    result.insert(position, " " * scopes[target][0] + text)
    for scope in scopes[target:]: scope[2] += 1
  return result


def _assigned_base(text: str):
  """The variable a line that is not a temporary assigns, or an element of (acc0 of acc0[x2 - xstart] = ...)."""
  if " = " not in text or _TEMPORARY.fullmatch(text): return None
  target = text.split(" = ")[0]
  return None if _INDEX.fullmatch(target) else re.match(r"\w+", target).group(0)


def _names_changed_in_blocks(code: list[str]) -> dict[int, set]:
  """For each block header (by line number), the names its lines assign other than temporaries and indices."""
  changed: dict[int, set] = {}
  open_blocks: list[tuple[int, int]] = []   # (indent, header line number)
  for number, line in enumerate(code):
    indent, text = len(line) - len(line.lstrip()), line.strip()
    while open_blocks and open_blocks[-1][0] >= indent: open_blocks.pop()
    if text.endswith(":"):
      open_blocks.append((indent, number))
      changed[number] = set()
    elif (base := _assigned_base(text)) is not None:
      for _, header in open_blocks: changed[header].add(base)
  return changed


class Renderer:
  # float math: op -> (function for 16/32-bit floats, function for 64-bit floats)
  MATH = {
    UnaryOps.SQRT: ("np.sqrt", "np.sqrt"), UnaryOps.EXP: ("exp_f32", "exp_f64"), UnaryOps.EXP2: ("exp2_f32", "exp2_f64"),
    UnaryOps.LOG: ("log_f32", "log_f64"), UnaryOps.LOG2: ("log2_f32", "log2_f64"), UnaryOps.SIN: ("sin_f32", "sin_f64"), UnaryOps.COS: ("cos_f32", "cos_f64"), UnaryOps.TRUNC: ("np.trunc", "np.trunc"),
    UnaryOps.FLOOR: ("np.floor", "np.floor"), UnaryOps.CEIL: ("np.ceil", "np.ceil"), UnaryOps.RINT: ("np.rint", "np.rint"),
    UnaryOps.ERF: ("erf_f32", "erf_f64"), UnaryOps.ERFC: ("erfc_f32", "erfc_f64"), UnaryOps.LGAMMA: ("lgamma_f32", "lgamma_f64"),
    UnaryOps.LOG10: ("log10_f32", "log10_f64"), UnaryOps.EXPM1: ("expm1_f32", "expm1_f64"),
    UnaryOps.TANH: ("tanh_f32", "tanh_f64"),
  }
  BINARY = BINARY

  def __init__(self, kernel: Kernel, parallel: bool, constants: bool = False):
    self.kernel, self.parallel = kernel, parallel
    self.constants = constants   # integer parameters written into the source (see jit.SPECIALIZE_AFTER)
    self.int_params: list[int] = []
    self.float_params: list[float] = []
    self.header: list[str] = []
    self.temporaries = 0
    self.loop_names: dict[int, str] = {}   # a loop dim read under another name (a second row in flight)
    self.window = False   # the reduce is a small window, unrolled (see SMALL_WINDOW)
    self.short = False   # the reduce is at most SMALL_WINDOW elements an output (see _keyed)
    self.angle_args: Optional[list[str]] = None   # collected while a loop body is rendered with small-angle sin and cos

  def tmp(self) -> str:
    self.temporaries += 1
    return f"t{self.temporaries}"

  # ---- parameters: numbers live in arrays, the source names them
  def int_param(self, value: int, runtime: bool = False) -> str:
    """A name for an integer parameter; runtime: read from the array even in a build with constants."""
    self.int_params.append(int(value))
    name = f"i{len(self.int_params) - 1}"
    self.header.append(f"{name} = {self.int_value(len(self.int_params) - 1, runtime)}")
    return name

  def int_value(self, index: int, runtime: bool = False) -> str:
    """Integer parameter `index` as the source reads it: from the array, or written out (a bare literal: LLVM
    folds it, where it kept np.int64(...) as a call and the kernels stayed as slow as the generic ones)."""
    return str(self.int_params[index]) if self.constants and not runtime else f"ip[{index}]"

  def const(self, value, dt: DType) -> str:
    if dt.kind == "f":
      self.float_params.append(float(value))
      name = f"f{len(self.float_params) - 1}"
      self.header.append(f"{name} = {typed(dt, f'fp[{len(self.float_params) - 1}]', dtypes.float64)}")
      return name
    value = int(value)
    name = self.int_param(value - (1 << 64) if value >= 1 << 63 else value)   # parameters are int64: uint64 wraps back
    stored = self.int_value(len(self.int_params) - 1)
    self.header[-1] = f"{name} = {stored + ' != 0' if dt.kind == 'b' else typed(dt, stored, dtypes.int64)}"
    return name

  def affine(self, coeffs, const, index_names) -> str:
    """Coefficients are parameters (a broadcast dim's 0 too, so broadcast and plain inputs share a kernel),
    except on the innermost loop dim, where 0 and 1 are written out: that lets LLVM vectorize the loop
    with plain or broadcast loads, which a benchmark shows pays. A size-1 dim's coordinate (named "0" by
    relink) adds no term."""
    terms = []
    for d, (c, n) in enumerate(zip(coeffs, index_names)):
      if n == "0" or (c == 0 and not n.startswith("x")): continue   # a coordinate a reshape made, not read here
      if d == len(coeffs) - 1 and n == f"x{d}" and c in (0, 1):
        if c == 1: terms.append(n)
      else: terms.append(f"{n} * {self.int_param(c)}")
    return " + ".join(terms + [self.int_param(const)])

  # ---- views: index arithmetic and padding conditions
  def view_index(self, view: View, lines: list[str], memo: Optional[dict] = None) -> tuple[list[str], list[str]]:
    """Statements appended to lines; returns (base coordinate names, condition texts). With a memo, the
    upper levels that views share (every read behind the same chain of reshapes) are computed once."""
    names = [self.loop_names.get(d, f"x{d}") for d in range(len(view.shape))]
    conds: list[str] = []
    for level_number, level in enumerate(view.levels):
      below = view.levels[level_number + 1].shape if level_number + 1 < len(view.levels) else None
      key = ("levels", view.levels[:level_number + 1], below)
      if below is not None and memo is not None and key in memo:
        names, shared_conds = memo[key]
        conds = list(shared_conds)   # a copy: the levels below append their own tests
        continue
      for coeffs, const, lo, hi in level.conds:
        conds.append(self.bounds_test(coeffs, const, lo, hi, names, lines, memo))
      coords = []
      for (coeffs, const), size in zip(level.rows, level.base_shape):
        if size == 1 and below is not None:   # always 0 where the view is valid, and relink never reads it
          coords.append("0")
          continue
        coords.append(self.affine_value(coeffs, const, names, lines, memo))
      if below is None:
        names = coords
        continue
      names = self.relink(coords, level.base_shape, below, lines)   # flatten, then unflatten into the next level's shape
      if memo is not None: memo[key] = (names, list(conds))
    return names, conds

  # Loads through views that share lower levels (a pooling gradient reads five buffers through one window
  # view) compute the same coordinates and padding tests: each is written once per body, under the memo
  # (keyed by value, so sizes that make two views' numbers equal give another source; that same gradient
  # kernel went from 3.97 to 1.5 ms).
  def affine_value(self, coeffs, const, names, lines: list[str], memo: Optional[dict]) -> str:
    key = ("affine", tuple(coeffs), const, tuple(names))
    if memo is not None and key in memo: return memo[key]
    c = self.tmp()
    lines.append(f"{c} = {self.affine(coeffs, const, names)}")
    if memo is not None: memo[key] = c
    return c

  def bounds_test(self, coeffs, const, lo, hi, names, lines: list[str], memo: Optional[dict]) -> str:
    key = ("bounds", tuple(coeffs), const, lo, hi, tuple(names))
    if memo is not None and key in memo: return memo[key]
    c = self.affine_value(coeffs, const, names, lines, memo)
    # tests joined by & rather than and: no short-circuit branches, which numba compiles slowly
    # (a pooling backward kernel compiled in 3.7 s instead of 4.9 s)
    test = f"(({self.int_param(lo)} <= {c}) & ({c} < {self.int_param(hi)}))"
    if memo is not None: memo[key] = test
    return test

  def relink(self, coords: list[str], old_shape, new_shape, lines: list[str]) -> list[str]:
    """Coordinates in new_shape of the element at coords in old_shape (same element order). Dims are
    matched in groups of equal size, so only the dims a reshape really merged and split pay a // or %."""
    groups = reshape_groups(old_shape, new_shape)
    if groups is None:   # a zero-size shape: no element is ever read
      return ["0"] * len(new_shape)
    names = ["0"] * len(new_shape)
    for old_dims, new_dims in groups:
      if len(old_dims) == 1 and len(new_dims) == 1:
        names[new_dims[0]] = coords[old_dims[0]]
        continue
      sub = self.tmp()
      strides = contiguous_strides(tuple(old_shape[d] for d in old_dims))
      lines.append(f"{sub} = " + " + ".join(f"{coords[d]} * {self.int_param(st)}" for d, st in zip(old_dims, strides)))
      new_strides = contiguous_strides(tuple(new_shape[d] for d in new_dims))
      for i, (d, st) in enumerate(zip(new_dims, new_strides)):
        c = self.tmp()
        text = sub if i == len(new_dims) - 1 else self.group_quotient([coords[o] for o in old_dims], strides, sub, st, lines)
        lines.append(f"{c} = {text if i == 0 else self.floor_modulo(text, new_shape[d])}")
        names[d] = c
    return names

  def group_quotient(self, coords: list[str], strides, flat: str, divisor: int, lines: list[str]) -> str:
    """flat // divisor, where flat = sum(coords * strides) over old dims in row-major order. When the old dims
    from some k on span P elements and P divides the divisor, that is (the sum over the dims before k) //
    (divisor / P): the inner coordinates drop out, and the division is hoisted out of their loops (GroupNorm
    reads its group's mean at c // channels_per_group, not at (c * h * w + y * w + x) // group_size)."""
    for k in range(1, len(coords)):
      span = strides[k - 1]
      if divisor % span: continue
      high = self.tmp()
      lines.append(f"{high} = " + " + ".join(f"{c} * {self.int_param(st // span)}" for c, st in zip(coords[:k], strides[:k])))
      return self.floor_divide(high, divisor // span) if divisor > span else high
    return self.floor_divide(flat, divisor)

  # A power of two divides by a shift and a mask, which equal Python's floor // and % for negative values too
  # and cost a cycle instead of a 64-bit division's 20-40. Such kernels compile apart from those of other
  # divisors, which pays: the relu and max-pool 2x2 gradient of a CNN training step, 6.97 -> 3.97 ms.
  def floor_divide(self, value: str, divisor: int) -> str:
    if is_power_of_two(divisor): return f"({value} >> {self.int_param(divisor.bit_length() - 1)})"
    return f"({value} // {self.int_param(divisor)})"

  def floor_modulo(self, value: str, modulus: int) -> str:
    if is_power_of_two(modulus): return f"({value} & {self.int_param(modulus - 1)})"
    return f"{value} % {self.int_param(modulus)}"

  def buffer_offset(self, view: View, lines: list[str], memo: Optional[dict] = None) -> tuple[str, list[str]]:
    """Views of buffers are flattened: their last level has one row, the offset into the flat buffer."""
    coords, conds = self.view_index(view, lines, memo)
    return coords[0], conds

  # ---- expressions
  def render_expr(self, expr: Expr, lines: list[str], memo: dict) -> str:
    if id(expr) in memo: return memo[id(expr)]
    op, dt = expr.op, expr.dtype
    if op == LOAD:
      number, view = expr.arg
      offset, conds = self.buffer_offset(view, lines, memo)
      name = self.tmp()
      if conds:   # the offset may be out of range where a condition fails: kept signed (wraps, never faults)
        lines.append(f"{name} = {load_from_storage(dt, f'b{number}[{offset}]')} if {' & '.join(conds)} else {typed(dt, '0.0', dtypes.float64)}")
      else: lines.append(f"{name} = {load_from_storage(dt, f'b{number}[{unsigned(offset)}]')}")
    elif op == CONST:
      name = self.const(expr.arg, dt)
    elif op == INDEX:
      view, start, step = expr.arg
      coords, _ = self.view_index(view, lines, memo)
      name = self.tmp()
      # floats in float64 and rounded once, as torch: arange(0, 1, 0.1)[9] is float32(0.9); the product is the
      # renderer's, which CUDA's compiler does not fuse with the sum (that changed 151 of 497 float64 values)
      if dt.kind == "f":
        product = self.BINARY[BinaryOps.MUL](dtypes.float64, f"np.float64({coords[0]})", self.const(step, dtypes.float64))
        lines.append(f"{name} = {compute_type(dt)}({self.const(start, dtypes.float64)} + {product})")
      else:
        lines.append(f"{name} = {self.const(start, dt)} + {compute_type(dt)}({coords[0]}) * {self.const(step, dt)}")
    elif op == VALID:
      _, conds = self.view_index(expr.arg, lines, memo)
      name = self.tmp()
      lines.append(f"{name} = {' & '.join(conds) or 'True'}")
    elif op == ACC:
      name = f"acc{expr.arg}[x{len(self.kernel.loop_shape) - 1} - xstart]" if self.column else f"acc{expr.arg}"
    else:
      srcs = [self.render_expr(s, lines, memo) for s in expr.srcs]
      name = self.tmp()
      if op is TernaryOps.WHERE: text = f"{srcs[1]} if {srcs[0]} else {srcs[2]}"
      elif op is UnaryOps.CAST: text = _cast(expr.srcs[0].dtype, dt, srcs[0])
      elif op is UnaryOps.BITCAST: text = _bitcast(expr.srcs[0].dtype, dt, srcs[0])
      elif op in self.MATH: text = self.math(op, dt, srcs[0])
      elif op in UNARY: text = UNARY[op](dt, srcs[0])
      else: text = self.BINARY[op](expr.srcs[0].dtype, *srcs)
      lines.append(f"{name} = {text}")
    memo[id(expr)] = name
    return name

  def math(self, op, dt: DType, a: str) -> str:
    function = self.MATH[op][dt.itemsize == 8]
    if self.angle_args is not None and function in SMALL_ANGLE_VERSIONS:
      self.angle_args.append(a)
      function = SMALL_ANGLE_VERSIONS[function]
    text = f"{function}({a})"
    return text if op in EXACT_ROUNDING else in_dtype(dt, text)

  def body(self, expr: Expr, known: Optional[dict] = None) -> tuple[list[str], str]:
    """Statements computing expr; known maps id(subexpression) to a name that already holds its value."""
    lines: list[str] = []
    name = self.render_expr(expr, lines, dict(known or {}))
    return lines, name

  # ---- the loop nest
  def render(self, fn_name: str) -> str:
    """Three shapes of loop nest:
    - row: the reduced dims are innermost; each stage is a scalar accumulator (elementwise kernels too);
    - column: the innermost dim is not reduced; accumulators are short arrays along it, so the reduced
      dims are walked with contiguous, vectorizable inner loops (a sum over axis 0);
    - split: nothing is left after reducing; the outermost reduced dim is cut into chunks, run in parallel
      in the parallel build and in turn in the serial one, so both builds of a kernel give the same sum."""
    k = self.kernel
    n = len(k.loop_shape)
    axes = set(k.reduce_axes)
    outer = [d for d in range(n) if d not in axes]
    reduce = [d for d in range(n) if d in axes]
    self.code: list[str] = []
    self.short = bool(reduce) and prod(k.loop_shape[d] for d in reduce) <= SMALL_WINDOW
    # a short reduce is a few loads an output, innermost: as columns, a block of accumulators set up for every 2 rows
    # cost more than the rows (the sum over axis 2 of 1024x56x2x28 float32: 7.6-9.1 -> 0.4-0.9 ms)
    self.column = bool(k.stages) and bool(outer) and outer[-1] == n - 1 and bool(reduce) and not self.short
    self.window = self.parallel and self.short and not self.column
    # A row's reduced dims keep their sizes as parameters in a build with constants too: with its trip count known,
    # the vectorized sum of a row was unrolled whole in the machine code numba caches (it optimizes a parallel
    # kernel's module once more before writing it), its loads walking the row backwards, and a kernel loaded from
    # the disk cache ran 2x slower than the one compiled in the process (4096x4096 sum(1), one thread: 5.4 vs 2.5 ms).
    runtime = set(reduce) if outer and not self.column and not self.window else set()
    self.sizes = [self.int_param(s, runtime=d in runtime) for d, s in enumerate(k.loop_shape)]
    if self.window:
      for d in reduce: self.sizes[d] = str(k.loop_shape[d])
    if not outer and reduce: self.render_split(reduce)
    elif self.column: self.render_column(outer, reduce)
    elif not reduce and self.reads_transposed(): self.render_tiles(outer)
    else: self.render_rows(outer, reduce)
    inputs = [f"b{i}" for i in range(len(k.inputs))] + [f"also{i}" for i in range(len(k.also_exprs))]
    head = [f"def {fn_name}(out, {''.join(name + ', ' for name in inputs)}ip, fp):"] + ["  " + h for h in self.header]
    return "\n".join(head + hoist_invariants(self.code)) + "\n"

  def emit(self, depth: int, text: str): self.code.append("  " * depth + text)

  def loops(self, depth: int, dims, parallel_first=False) -> int:
    for i, d in enumerate(dims):
      self.emit(depth + i, f"for x{d} in {'prange' if parallel_first and i == 0 else 'range'}({self.sizes[d]}):")
    return depth + len(dims)

  def emit_body(self, depth: int, expr: Expr, known: Optional[dict] = None) -> str:
    lines, value = self.body(expr, known)
    for line in lines: self.emit(depth, line)
    return value

  def out_offset(self, depth: int) -> str:
    lines: list[str] = []
    offset, _ = self.buffer_offset(self.kernel.out_view, lines)
    for line in lines: self.emit(depth, line)
    return offset

  def store(self, depth: int, known: Optional[dict] = None):
    memo, lines = dict(known or {}), []
    value = self.render_expr(self.kernel.out_expr, lines, memo)
    for line in lines: self.emit(depth, line)
    dt = self.kernel.output.dtype
    rounded = re.fullmatch(rf"(\s*{value} = ){ROUNDING[dt]}\((.+)\)", self.code[-1]) if dt in ROUNDING else None
    if rounded: self.code[-1] = rounded.group(1) + rounded.group(2)   # the store rounds to the 16-bit type anyway
    offset = unsigned(self.out_offset(depth))
    self.emit(depth, f"out[{offset}] = {store_to_storage(dt, value)}")
    for number, expr in enumerate(self.kernel.also_exprs):   # computed above: the memo holds their names
      self.emit(depth, f"also{number}[{offset}] = {store_to_storage(expr.dtype, memo[id(expr)])}")

  def store_elementwise(self, depth: int):
    """The output stored in the loop just opened (its header the last line). Where it computes a 32- or 16-bit sine
    or cosine, the loop runs with their small-angle versions while noting whether any argument is large, and runs
    again with the whole-range versions only if one was (runtime.is_large_angle). The whole-range versions compute
    the large-argument reduction for every element and keep it for few; benchmark elementwise_sin_cos
    (16M float32 sin(x) * cos(y)): 47.5 -> 17.9 ms, numpy 36.6."""
    header = self.code[-1].strip() if self.code else ""
    if not (header.startswith("for ") and "prange(" not in header and self.computes_angles()):   # a flag across a prange is a reduction
      self.store(depth)
      return
    self.code.pop()
    self.emit(depth - 1, "large = False")
    self.emit(depth - 1, header)
    self.angle_args = []
    self.store(depth)
    for argument in self.angle_args: self.emit(depth, f"large = large | is_large_angle({argument})")
    self.angle_args = None
    self.emit(depth - 1, "if large:")
    self.emit(depth, header)
    self.store(depth + 1)

  def computes_angles(self) -> bool:
    """Whether the output's expressions take a sine or cosine that has a small-angle version."""
    seen, stack = set(), [self.kernel.out_expr, *self.kernel.also_exprs]
    while stack:
      e = stack.pop()
      if id(e) in seen: continue
      seen.add(id(e))
      if e.op in self.MATH and self.MATH[e.op][e.dtype.itemsize == 8] in SMALL_ANGLE_VERSIONS: return True
      stack.extend(e.srcs)
    return False

  def reusable_stage_value(self) -> Optional[Expr]:
    """In a full kernel, the last stage's per-element value when the output uses it again (softmax's exp):
    the stage loop then parks it in the output buffer and the output loop reads it back, instead of
    computing it twice. Only where the output holds that value exactly (same dtype, 32/64-bit)."""
    k = self.kernel
    if not (k.full and k.stages) or self.column: return None
    value = k.stages[-1][1]
    if value.dtype != k.output.dtype or value.dtype.itemsize < 4 or value.op in (LOAD, CONST, ACC): return None
    seen, stack = set(), [k.out_expr]
    while stack:
      e = stack.pop()
      if e is value: return value
      if id(e) in seen: continue
      seen.add(id(e))
      stack.extend(e.srcs)
    return None

  def _keyed(self, op, dt: DType) -> bool:
    """A float max/min along a loop compares order-preserving integer keys and keeps a NaN flag: LLVM
    vectorizes that, not a float select. Across columns (an array of accumulators) the NaN-aware float
    select vectorizes as it is, and so does a short reduce's, which compares floats in every build alike (a max of
    [0.0, -0.0] was 0.0 in one build and -0.0 in another)."""
    return op in (ReduceOps.MAX, ReduceOps.MIN) and dt.kind == "f" and not self.column and not self.short

  def init_accumulator(self, depth: int, op, dt: DType, target: str):
    if self._keyed(op, dt):
      self.emit(depth, f"{target} = order_key{key_bits(dt)}({reduce_identity(op, dt)})")
      self.emit(depth, f"nan_{target} = False")
    else: self.emit(depth, f"{target} = {reduce_identity(op, dt)}")

  def accumulate(self, depth: int, op, expr: Expr, target: str) -> str:
    """One step; float sums along a loop go through runtime.radd, the one place reassociation is allowed,
    so the loop vectorizes while the expressions around it keep their order."""
    dt = expr.dtype
    value = self.emit_body(depth, expr)
    if self._keyed(op, dt):
      key = self.tmp()
      self.emit(depth, f"{key} = order_key{key_bits(dt)}({value})")
      self.emit(depth, f"{target} = {key} if {key} {'>' if op is ReduceOps.MAX else '<'} {target} else {target}")
      self.emit(depth, f"nan_{target} = nan_{target} | ({value} != {value})")
    elif dt.kind == "f" and op is ReduceOps.SUM and not self.column:
      self.emit(depth, f"{target} = {in_dtype(dt, f'radd({target}, {value})')}")
    else:
      self.emit(depth, f"{target} = {BINARY[REDUCE_COMBINE[op]](dt, target, value)}")
    return value

  def finish_accumulator(self, depth: int, op, dt: DType, target: str):
    if self._keyed(op, dt):
      value = f"from_order_key{key_bits(dt)}({target})"
      self.emit(depth, f"{target} = {compute_type(dt)}(np.nan) if nan_{target} else {compute_type(dt)}({value})")

  def open_outer(self, outer) -> int:
    """Loops over the kept dims; the outermost is parallel (in blocks when it is the only loop)."""
    depth = 1
    if self.parallel and outer:
      if len(outer) == 1 and not self.kernel.stages:
        d = outer[0]
        self.emit(depth, f"for xblock in prange(({self.sizes[d]} + {BLOCK - 1}) // {BLOCK}):")
        self.emit(depth + 1, f"for x{d} in range(xblock * {BLOCK}, min({self.sizes[d]}, xblock * {BLOCK} + {BLOCK})):")
        return depth + 2
      depth = self.loops(depth, outer[:1], parallel_first=True)
      outer = outer[1:]
    return self.loops(depth, outer)

  def reads_transposed(self) -> bool:
    """An input walked with a longer stride along the last loop dim than along the one before (a transpose):
    row by row, each of its cache lines would be loaded once per element it holds."""
    return len(self.kernel.loop_shape) >= 2 and any(0 < abs(s[-2]) < abs(s[-1]) for s in read_strides(self.kernel))

  def render_tiles(self, outer):
    """An elementwise kernel in square blocks of the last two dims: a block's rows of the output and of the
    transposed input both stay in cache while it is walked."""
    rows, cols = outer[-2], outer[-1]
    row_tiles = f"(({self.sizes[rows]} + {TILE - 1}) // {TILE})"
    if self.parallel and len(outer) > 2:
      # one parallel loop over the batch dims and the row tiles together: 16x64x3136 to 16x3136x64 took 1.13 ms
      # with the batch dim parallel, 0.67 this way (a lone matrix's row tiles in prange were 2x slower this way)
      self.emit(1, f"for xflat in prange({' * '.join([self.sizes[d] for d in outer[:-2]] + [row_tiles])}):")
      self.emit(2, f"xtile{rows} = xflat % {row_tiles}")
      self.emit(2, f"rest = xflat // {row_tiles}")
      for d in reversed(outer[1:-2]):
        self.emit(2, f"x{d} = rest % {self.sizes[d]}")
        self.emit(2, f"rest = rest // {self.sizes[d]}")
      self.emit(2, f"x{outer[0]} = rest")
      depth = 1
    else:
      depth = self.loops(1, outer[:-2])
      self.emit(depth, f"for xtile{rows} in {'prange' if self.parallel else 'range'}{row_tiles}:")
    self.emit(depth + 1, f"for xtile{cols} in range(({self.sizes[cols]} + {TILE - 1}) // {TILE}):")
    for i, d in enumerate((rows, cols)):
      self.emit(depth + 2 + i, f"for x{d} in range(xtile{d} * {TILE}, min({self.sizes[d]}, xtile{d} * {TILE} + {TILE})):")
    self.store_elementwise(depth + 4)

  def render_rows(self, outer, reduce):
    k = self.kernel
    depth = self.open_outer(outer)
    reused = self.reusable_stage_value()
    for number, (op, expr) in enumerate(k.stages):
      self.init_accumulator(depth, op, expr.dtype, f"acc{number}")
      if reduce and self.compensated(op, expr.dtype):   # a long float sum: blocks, added up with their rounding errors kept
        first, zero = reduce[0], reduce_identity(op, expr.dtype)
        self.emit(depth, f"error{number} = {zero}")
        self.emit(depth, f"for xpart in range(0, {self.sizes[first]}, {SUM_BLOCK}):")
        self.emit(depth + 1, f"block{number} = {zero}")
        self.emit(depth + 1, f"for x{first} in range(xpart, min(xpart + {SUM_BLOCK}, {self.sizes[first]})):")
        inner = self.loops(depth + 2, reduce[1:])
        self.accumulate_row(inner, op, expr, f"block{number}", expr is reused)
        self.emit(depth + 1, f"if xpart == 0: acc{number} = block{number}")   # a short row: one block, nothing more
        self.emit(depth + 1, "else:")
        self.add_compensated(depth + 2, f"acc{number}", f"block{number}", f"error{number}", f"rounded{number}")
        self.add_kept_error(depth, f"acc{number}", f"error{number}")
      else: self.accumulate_row(self.loops(depth, reduce), op, expr, f"acc{number}", expr is reused)
      self.finish_accumulator(depth, op, expr.dtype, f"acc{number}")
    if k.full and reused is not None:
      inner = self.loops(depth, reduce)
      self.emit(inner, f"parked = out[{unsigned(self.out_offset(inner))}]")
      self.store(inner, known={id(reused): "parked"})
    elif k.full and not reduce: self.store_elementwise(depth)
    elif k.full: self.store(self.loops(depth, reduce))
    else:
      for d in reduce: self.emit(depth, f"x{d} = 0")
      self.store(depth)

  def accumulate_row(self, depth: int, op, expr: Expr, target: str, stored: bool):
    """One step of a row's stage; a stored stage's values also go to the output, where the last pass reads them."""
    value = self.accumulate(depth, op, expr, target)
    if stored: self.emit(depth, f"out[{unsigned(self.out_offset(depth))}] = {value}")

  def render_column(self, outer, reduce):
    k = self.kernel
    inner = outer[-1]
    depth = self.open_outer(outer[:-1]) if len(outer) > 1 else 1
    parallel_blocks = self.parallel and len(outer) == 1
    size = self.sizes[inner]
    self.emit(depth, f"for xblock in {'prange' if parallel_blocks else 'range'}(({size} + {COLUMN - 1}) // {COLUMN}):")
    depth += 1
    self.emit(depth, f"xstart = xblock * {COLUMN}")
    self.emit(depth, f"xend = min({size}, xstart + {COLUMN})")
    for number, (op, expr) in enumerate(k.stages):
      self.emit(depth, f"acc{number} = np.empty({COLUMN}, dtype={compute_type(expr.dtype)})")
      self.emit(depth, f"for xi in range({COLUMN}):")
      self.emit(depth + 1, f"acc{number}[xi] = {reduce_identity(op, expr.dtype)}")
      if not self.compensated(op, expr.dtype):
        self.accumulate_columns(depth, reduce, inner, op, expr, f"acc{number}", "0", self.sizes[reduce[0]])
        continue
      # a long float sum: blocks of rows, each block's sums added to the totals with their rounding errors kept
      first = reduce[0]
      self.emit(depth, f"error{number} = np.zeros({COLUMN}, dtype={compute_type(expr.dtype)})")
      self.emit(depth, f"block{number} = np.empty({COLUMN}, dtype={compute_type(expr.dtype)})")
      self.emit(depth, f"for xpart in range(0, {self.sizes[first]}, {COLUMN_SUM_BLOCK}):")
      self.emit(depth + 1, f"for xi in range({COLUMN}):")
      self.emit(depth + 2, f"block{number}[xi] = {reduce_identity(op, expr.dtype)}")
      self.accumulate_columns(depth + 1, reduce, inner, op, expr, f"block{number}", "xpart", f"min(xpart + {COLUMN_SUM_BLOCK}, {self.sizes[first]})")
      self.emit(depth + 1, "for xi in range(xend - xstart):")
      self.add_compensated(depth + 2, f"acc{number}[xi]", f"block{number}[xi]", f"error{number}[xi]", f"rounded{number}")
      self.emit(depth, "for xi in range(xend - xstart):")
      self.add_kept_error(depth + 1, f"acc{number}[xi]", f"error{number}[xi]")
    if k.full:
      body = self.loops(depth, reduce)
    else:
      for d in reduce: self.emit(depth, f"x{d} = 0")
      body = depth
    self.emit(body, f"for x{inner} in range(xstart, xend):")
    self.store(body + 1)

  def accumulate_columns(self, depth: int, reduce, inner: int, op, expr: Expr, accumulators: str, start: str, end: str):
    """The rows from start to end of the first reduced dim (all of the others) added into the block of accumulators.
    Over one dim, two rows per pass: the accumulators are read and written half as often (a max over axis 0 is
    bound by that traffic, not by the rows it reads)."""
    target, first = f"{accumulators}[x{inner} - xstart]", reduce[0]
    if len(reduce) > 1:
      self.emit(depth, f"for x{first} in range({start}, {end}):")
      body = self.loops(depth + 1, reduce[1:])
      self.emit(body, f"for x{inner} in range(xstart, xend):")
      self.accumulate(body + 1, op, expr, target)
      return
    combine, dt = BINARY[REDUCE_COMBINE[op]], expr.dtype
    # a float max or min is a select, which stored back where it was read LLVM turns into a masked store (slow on AMD
    # CPUs: a max over axis 0 of a 4096x4096 float32 matrix took 7.2 ms on one thread); each pass writes a second
    # array instead, and the two trade places (4.8 ms)
    swap = f"{accumulators}_swap" if op in (ReduceOps.MAX, ReduceOps.MIN) and dt.kind == "f" else None
    if swap: self.emit(depth, f"{swap} = np.empty({COLUMN}, dtype={compute_type(dt)})")
    self.emit(depth, f"for x{first} in range({start}, {end} - 1, 2):")
    self.emit(depth + 1, f"x{first}_next = x{first} + 1")
    self.emit(depth + 1, f"for x{inner} in range(xstart, xend):")
    one = self.emit_body(depth + 2, expr)
    self.loop_names[first] = f"x{first}_next"
    other = self.emit_body(depth + 2, expr)
    del self.loop_names[first]
    self.emit(depth + 2, f"{f'{swap}[x{inner} - xstart]' if swap else target} = {combine(dt, target, combine(dt, one, other))}")
    if swap: self.emit(depth + 1, f"{accumulators}, {swap} = {swap}, {accumulators}")
    self.emit(depth, f"if ({end} - {start}) % 2 == 1:")   # the last row of an odd count
    self.emit(depth + 1, f"x{first} = {end} - 1")
    self.emit(depth + 1, f"for x{inner} in range(xstart, xend):")
    self.accumulate(depth + 2, op, expr, target)

  @staticmethod
  def compensated(op, dt: DType) -> bool:
    """Float sums (in float32 or float64) add up blocks with the rounding errors of those additions kept."""
    return op is ReduceOps.SUM and dt.kind == "f" and dt not in ROUNDING

  def combine_into(self, depth: int, op, dt: DType, total: str, value: str, error: Optional[str], rounded: str):
    """total combined with value by op; with an error variable, a compensated sum (add_compensated)."""
    if error is None: self.emit(depth, f"{total} = {BINARY[REDUCE_COMBINE[op]](dt, total, value)}")
    else: self.add_compensated(depth, total, value, error, rounded)

  def add_kept_error(self, depth: int, total: str, error: Optional[str]):
    """A compensated sum's kept rounding error added in at its end (left out when the sum is inf or nan)."""
    if error is not None: self.emit(depth, f"if {error} != 0 and np.isfinite({total}): {total} = {total} + {error}")

  def add_compensated(self, depth: int, total: str, value: str, error: str, rounded: str):
    """total += value with the rounding error of the sum kept in error (Neumaier's), rounded naming the rounded sum
    (one name per stage: stages of other dtypes do not share it). 1e8 float32 values added up as 763 blocks were
    off by 2e-7 of the sum, now within half an ulp as numpy's pairwise sum; an inf or nan makes the error nan, which
    the caller leaves out."""
    self.emit(depth, f"{rounded} = {total} + {value}")
    self.emit(depth, f"if abs({total}) >= abs({value}): {error} += ({total} - {rounded}) + {value}")
    self.emit(depth, f"else: {error} += ({value} - {rounded}) + {total}")
    self.emit(depth, f"{total} = {rounded}")

  def render_split(self, reduce):
    k = self.kernel
    depth = 1
    first, rest = reduce[0], reduce[1:]
    size = self.sizes[first]
    for number, (op, expr) in enumerate(k.stages):
      dt = expr.dtype
      # the serial build adds each chunk's result as it goes, in the order the parallel build combines them
      if self.parallel: self.emit(depth, f"part{number} = np.empty({SPLIT_CHUNKS}, dtype={compute_type(dt)})")
      else: self.emit(depth, f"acc{number} = {reduce_identity(op, dt)}")
      compensated = self.compensated(op, dt)
      error = f"error{number}" if compensated else None
      if compensated: self.emit(depth, f"{error} = {reduce_identity(op, dt)}")
      self.emit(depth, f"for xchunk in {'prange' if self.parallel else 'range'}({SPLIT_CHUNKS}):")
      self.init_accumulator(depth + 1, op, dt, "chunk_acc")
      start, end = f"xchunk * {size} // {SPLIT_CHUNKS}", f"(xchunk + 1) * {size} // {SPLIT_CHUNKS}"
      if dt.kind == "f" and op is ReduceOps.SUM:   # a float sum adds up blocks: rounding grows with the block, not the chunk
        chunk_error = "chunk_error" if compensated else None
        if compensated: self.emit(depth + 1, f"chunk_error = {reduce_identity(op, dt)}")
        self.emit(depth + 1, f"for xpart in range({start}, {end}, {SUM_BLOCK}):")
        self.emit(depth + 2, f"block_acc = {reduce_identity(op, dt)}")
        self.emit(depth + 2, f"for x{first} in range(xpart, min(xpart + {SUM_BLOCK}, {end})):")
        self.accumulate(self.loops(depth + 3, rest), op, expr, "block_acc")
        self.combine_into(depth + 2, op, dt, "chunk_acc", "block_acc", chunk_error, f"rounded_chunk{number}")
        self.add_kept_error(depth + 1, "chunk_acc", chunk_error)
      else:
        self.emit(depth + 1, f"for x{first} in range({start}, {end}):")
        self.accumulate(self.loops(depth + 2, rest), op, expr, "chunk_acc")
      self.finish_accumulator(depth + 1, op, dt, "chunk_acc")
      if not self.parallel: self.combine_into(depth + 1, op, dt, f"acc{number}", "chunk_acc", error, f"rounded{number}")
      else:
        self.emit(depth + 1, f"part{number}[xchunk] = chunk_acc")
        self.emit(depth, f"acc{number} = {reduce_identity(op, dt)}")
        self.emit(depth, f"for xchunk in range({SPLIT_CHUNKS}):")   # NaN-aware combine of the partials
        self.combine_into(depth + 1, op, dt, f"acc{number}", f"part{number}[xchunk]", error, f"rounded{number}")
      self.add_kept_error(depth, f"acc{number}", error)
    if k.full: self.store(self.loops(depth, reduce, parallel_first=True))
    else:
      for d in reduce: self.emit(depth, f"x{d} = 0")
      self.store(depth)
