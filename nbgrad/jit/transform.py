"""The CPU kernel of the axis transform (nbgrad/linalg.py's AxisTransform): a small constant matrix applied
along each of k axes of every tile. The source is specialized on the matrix: its entries are literals, zero
terms are left out and products by +-1 are plain adds, so LLVM sees straight-line scalar code over
registers (a 6x6 tile of Winograd's Bt costs about 150 adds instead of 2 x 216 multiply-adds).

A work item is one index of the batch dims but the last (found by one division per dim) and walks the
last batch dim's tiles."""
from __future__ import annotations
import itertools
import numpy as np
from nbgrad.jit import PARALLEL_MIN_ELEMENTS
from nbgrad.jit.compiler import get_kernel, LAUNCH_LOCK


def _term(coefficient: float, name: str, literal) -> str:
  if coefficient == 1: return f"+ {name}"
  if coefficient == -1: return f"- {name}"
  return f"+ {literal(coefficient)} * {name}"


def _render(matrix: tuple, k: int, literal) -> str:
  """The kernel body: out tile = matrix applied along each of the k tile axes of the input tile."""
  rows, cols = len(matrix), len(matrix[0])
  tile_args = ", ".join(f"s{a}" for a in range(k)) + ", " + ", ".join(f"t{a}" for a in range(k))
  lines = [f"def kernel(out, x, sizes, divisors, in_strides, out_strides, offset, outer_count, {tile_args}):",
           "  last = len(sizes) - 1",
           "  for outer in prange(outer_count):",
           "    x_base, out_base = offset, 0",
           "    for d in range(last):",
           "      i = (outer // divisors[d]) % sizes[d]",
           "      x_base += i * in_strides[d]",
           "      out_base += i * out_strides[d]",
           "    for j in range(sizes[last]):",
           "      xb, ob = x_base + j * in_strides[last], out_base + j * out_strides[last]"]
  # stage a: values indexed by (rows for axes < a, cols for axes >= a); stage 0 is the loaded tile
  for index in itertools.product(range(cols), repeat=k):
    position = " + ".join(f"{i} * s{a}" for a, i in enumerate(index))
    lines.append(f"      v0_{'_'.join(map(str, index))} = x[xb + {position}]")
  for axis in range(k):
    shapes = [range(rows)] * (axis + 1) + [range(cols)] * (k - axis - 1)
    for index in itertools.product(*shapes):
      terms = []
      for c in range(cols):
        coefficient = matrix[index[axis]][c]
        if coefficient == 0: continue
        source = index[:axis] + (c,) + index[axis + 1:]
        terms.append(_term(coefficient, f"v{axis}_{'_'.join(map(str, source))}", literal))
      expression = " ".join(terms).removeprefix("+ ") if terms else literal(0.0)
      if expression.startswith("- "): expression = "-" + expression[2:]
      lines.append(f"      v{axis + 1}_{'_'.join(map(str, index))} = {expression}")
  for index in itertools.product(range(rows), repeat=k):
    position = " + ".join(f"{i} * t{a}" for a, i in enumerate(index))
    lines.append(f"      out[ob + {position}] = v{k}_{'_'.join(map(str, index))}")
  return "\n".join(lines) + "\n"


def _literal_for(dtype: np.dtype):
  """Constants in the buffers' own precision (a bare Python float would make numba compute in float64)."""
  name = np.dtype(dtype).name
  return lambda value: f"np.{name}({float(value)!r})"


def axis_transform(out: np.ndarray, x: np.ndarray, matrix: tuple, batch_sizes: tuple, in_strides: tuple,
                   out_strides: tuple, tile_in_strides: tuple, tile_out_strides: tuple, offset: int):
  """out[b, a1..ak] = sum over c1..ck of matrix[a1][c1]...matrix[ak][ck] * x[b, c1..ck], for every index b
  of the batch dims; the strides are in elements of the flat buffers out and x."""
  batch_sizes = tuple(batch_sizes) or (1,)
  in_strides, out_strides = tuple(in_strides) or (0,), tuple(out_strides) or (0,)
  tiles = int(np.prod(batch_sizes))
  if tiles == 0: return
  k = len(tile_in_strides)
  divisors = [int(np.prod(batch_sizes[d + 1:-1])) for d in range(len(batch_sizes) - 1)] + [1]   # the outer dims' index steps
  parallel = tiles * len(matrix) ** k >= PARALLEL_MIN_ELEMENTS and tiles // batch_sizes[-1] > 1
  name = f"axis_transform_{len(matrix)}x{len(matrix[0])}_{k}d"
  kernel = get_kernel(_render(matrix, k, _literal_for(x.dtype)), parallel, name)
  with LAUNCH_LOCK:
    kernel(out, x, np.array(batch_sizes, np.int64), np.array(divisors, np.int64), np.array(in_strides, np.int64), np.array(out_strides, np.int64),
           offset, tiles // batch_sizes[-1], *tile_in_strides, *tile_out_strides)
