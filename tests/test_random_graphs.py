"""Random graphs of movement, elementwise, product, concatenation, reduce and scan ops, some values realized
midway, against torch (float64) forward and backward: the scheduler's cuts, the fused kernels' index arithmetic
and the backward graphs meet op orders that no hand-written test lists. A seed fixes each graph."""
import os
import numpy as np
import pytest
import torch
from nbgrad import Tensor, dtypes

GRAPHS = int(os.environ.get("RANDOM_GRAPHS", 24))   # each compiles a few kernels; RANDOM_GRAPHS=2000 for a long hunt
STEPS = int(os.environ.get("RANDOM_GRAPH_STEPS", 7))


class Pair:
  """A value in both libraries: nbgrad's tensor and torch's float64 one."""
  def __init__(self, ours: Tensor, theirs: torch.Tensor): self.ours, self.theirs = ours, theirs
  @property
  def shape(self): return tuple(self.ours.shape)


def random_shape(rng, ndim=None):
  ndim = int(rng.integers(1, 5)) if ndim is None else ndim
  return tuple(int(s) for s in rng.choice([1, 2, 3, 4, 5], ndim, p=[0.2, 0.3, 0.2, 0.2, 0.1]))


def leaf(rng, shape, leaves):
  values = rng.uniform(-2, 2, shape).astype(np.float32)
  pair = Pair(Tensor(values, requires_grad=True), torch.tensor(values, dtype=torch.float64, requires_grad=True))
  leaves.append(pair)
  return pair


def broadcastable_to(rng, shape):
  """A shape that broadcasts to shape: some dims 1, maybe fewer dims."""
  dims = [1 if rng.random() < 0.4 else s for s in shape]
  return tuple(dims[int(rng.integers(0, len(dims) + 1)):]) if rng.random() < 0.3 else tuple(dims)


def unary(rng, x: Pair) -> Pair:
  name = rng.choice(["neg", "relu", "tanh", "sigmoid", "sin", "abs", "square", "exp_tanh", "sqrt_abs", "scale"])
  if name == "exp_tanh": return Pair(x.ours.tanh().exp(), x.theirs.tanh().exp())
  if name == "sqrt_abs": return Pair((x.ours.abs() + 0.5).sqrt(), (x.theirs.abs() + 0.5).sqrt())
  if name == "scale":
    c = float(rng.choice([-1.5, 0.5, 2.0]))
    return Pair(x.ours * c, x.theirs * c)
  if name == "square": return Pair(x.ours.square().tanh(), x.theirs.square().tanh())   # bounded
  return Pair(getattr(x.ours, name)(), getattr(torch, name)(x.theirs))


def binary(rng, x: Pair, values: list, leaves: list) -> Pair:
  same = [v for v in values if v.shape == x.shape and v is not x]
  other = same[int(rng.integers(0, len(same)))] if same and rng.random() < 0.5 else leaf(rng, broadcastable_to(rng, x.shape), leaves)
  name = rng.choice(["add", "sub", "mul", "maximum", "where", "matmul", "cat"])
  if name == "matmul":   # with a fresh (k, n) matrix: x's last dim is k
    w = leaf(rng, (x.shape[-1] if x.shape else 1, int(rng.integers(1, 5))), leaves)
    if not x.shape: return Pair(x.ours.reshape(1, 1) @ w.ours, x.theirs.reshape(1, 1) @ w.theirs)
    return Pair((x.ours @ w.ours).tanh(), (x.theirs @ w.theirs).tanh())
  if name == "cat" and not x.shape: name = "add"
  if name == "cat":
    axis = int(rng.integers(0, len(x.shape)))
    piece = leaf(rng, tuple(int(rng.integers(1, 4)) if d == axis else s for d, s in enumerate(x.shape)), leaves)
    return Pair(x.ours.cat(piece.ours, dim=axis), torch.cat([x.theirs, piece.theirs], axis))
  if name == "where":
    return Pair((x.ours > other.ours).where(x.ours, other.ours * 0.5), torch.where(x.theirs > other.theirs, x.theirs, other.theirs * 0.5))
  if name == "maximum": return Pair(x.ours.maximum(other.ours), torch.maximum(x.theirs, other.theirs))
  op = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: (a * b).tanh()}[name]
  return Pair(op(x.ours, other.ours), op(x.theirs, other.theirs))


def movement(rng, x: Pair) -> Pair:
  shape, ndim = x.shape, len(x.shape)
  name = rng.choice(["permute", "flip", "shrink", "pad", "reshape", "expand", "unsqueeze", "index"])
  if name == "permute" and ndim > 1:
    order = [int(i) for i in rng.permutation(ndim)]
    return Pair(x.ours.permute(order), x.theirs.permute(order))
  if name == "flip":
    axes = [a for a in range(ndim) if rng.random() < 0.5] or [0]
    return Pair(x.ours.flip(axes), x.theirs.flip(axes))
  if name == "shrink" and any(s > 1 for s in shape):
    bounds = []
    for s in shape:
      start = int(rng.integers(0, s))
      bounds.append((start, int(rng.integers(start + 1, s + 1))))
    theirs = x.theirs
    for d, (a, b) in enumerate(bounds): theirs = theirs.narrow(d, a, b - a)
    return Pair(x.ours.shrink(tuple(bounds)), theirs)
  if name == "index":   # ints, slices with steps (torch's are positive) and new dims; the last dim stays a dim
    index = []
    for d, s in enumerate(shape):
      if d < ndim - 1 and rng.random() < 0.2: index.append(int(rng.integers(-s, s)))
      else:
        start = int(rng.integers(0, s))
        index.append(slice(start, int(rng.integers(start + 1, s + 1)), int(rng.choice([1, 1, 2, 3]))))
      if rng.random() < 0.15: index.append(None)
    return Pair(x.ours[tuple(index)], x.theirs[tuple(index)])
  if name == "pad":
    pads = [(int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in shape]
    flat = [p for pair in reversed(pads) for p in pair]   # torch's order: last dim first
    value = float(rng.choice([0.0, 0.0, -1.5])) if x.ours.dtype == dtypes.float32 else int(rng.choice([0, 3]))   # ints keep their dtype
    return Pair(x.ours.pad(tuple(pads), value=value), torch.nn.functional.pad(x.theirs, flat, value=value))
  if name == "reshape":
    total = int(np.prod(shape))
    factors = [f for f in (1, 2, 3, 4, 5, 6) if total % f == 0]
    first = int(rng.choice(factors))
    new = (first, total // first) if rng.random() < 0.7 else (total,)
    return Pair(x.ours.reshape(new), x.theirs.reshape(new))
  if name == "expand" and 1 in shape:
    new = tuple(int(rng.integers(2, 4)) if s == 1 else s for s in shape)
    return Pair(x.ours.expand(new), x.theirs.expand(new))
  if ndim < 5:
    axis = int(rng.integers(0, ndim + 1))
    return Pair(x.ours.unsqueeze(axis), x.theirs.unsqueeze(axis))
  return x


def reduce(rng, x: Pair) -> Pair:
  axis, keepdim = int(rng.integers(0, len(x.shape))), bool(rng.random() < 0.5)
  name = rng.choice(["sum", "max", "mean", "softmax", "cumsum"])
  if name == "sum": return Pair(x.ours.sum(axis, keepdim=keepdim), x.theirs.sum(axis, keepdim=keepdim))
  if name == "mean": return Pair(x.ours.mean(axis, keepdim=keepdim), x.theirs.mean(axis, keepdim=keepdim))
  if name == "max": return Pair(x.ours.max(axis, keepdim=keepdim), x.theirs.amax(axis, keepdim=keepdim))   # ties split evenly
  if name == "softmax": return Pair(x.ours.softmax(axis), x.theirs.softmax(axis))
  return Pair(x.ours.cumsum(axis), x.theirs.cumsum(axis))


def random_graph(seed: int):
  """(output, leaves) of a graph of STEPS random ops on a random leaf; some values realized on the way."""
  rng = np.random.default_rng(seed)
  leaves = []
  x = leaf(rng, random_shape(rng), leaves)
  values = [x]
  for _ in range(STEPS):
    kind = rng.choice(["unary", "binary", "movement", "reduce"], p=[0.25, 0.3, 0.3, 0.15])
    if kind == "reduce" and x.ours.ndim == 0: kind = "unary"
    if kind == "unary": x = unary(rng, x)
    elif kind == "binary": x = binary(rng, x, values, leaves)
    elif kind == "movement" and x.ours.ndim: x = movement(rng, x)
    elif kind == "reduce": x = reduce(rng, x)
    if rng.random() < 0.15: x.ours.realize()
    values.append(x)
  return x, leaves


@pytest.mark.parametrize("seed", range(GRAPHS))
def test_random_graph_forward_and_backward_match_torch(seed):
  out, leaves = random_graph(seed)
  np.testing.assert_allclose(out.ours.numpy(), out.theirs.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=f"forward, seed {seed}")
  weights = np.random.default_rng(seed + 1).uniform(-1, 1, out.shape)
  (out.ours * Tensor(weights.astype(np.float32))).sum().backward()
  (out.theirs * torch.from_numpy(weights)).sum().backward()
  for n, pair in enumerate(leaves):
    ours = pair.ours.grad.numpy() if pair.ours.grad is not None else np.zeros(pair.shape, np.float32)
    theirs = pair.theirs.grad.numpy() if pair.theirs.grad is not None else np.zeros(pair.shape)
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-4, err_msg=f"gradient of leaf {n} {pair.shape}, seed {seed}")


# ---- integer graphs, forward against numpy: wrap-around arithmetic, casts, comparisons and sums in every int dtype
INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
SUM_DTYPES = {"int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32"}   # ints sum in at least 32 bits


def int_leaf(rng, shape, dtype):
  values = rng.integers(-100, 100, shape).astype(dtype)   # negative values wrap into the unsigned dtypes
  return Pair(Tensor(values), values)


def int_step(rng, x: Pair) -> Pair:
  dtype = x.theirs.dtype.name
  kind = rng.choice(["arith", "arith", "compare", "cast", "movement", "reduce"])
  if kind == "arith":
    other = int_leaf(rng, broadcastable_to(rng, x.shape), dtype) if rng.random() < 0.7 else None
    name = rng.choice(["add", "sub", "mul", "maximum", "minimum", "xor", "where"])
    b_ours, b_theirs = (other.ours, other.theirs) if other is not None else (7, np.array(7, dtype))
    if name == "where": return Pair((x.ours > b_ours).where(x.ours, b_ours), np.where(x.theirs > b_theirs, x.theirs, b_theirs))
    ours = {"add": lambda: x.ours + b_ours, "sub": lambda: x.ours - b_ours, "mul": lambda: x.ours * b_ours, "maximum": lambda: x.ours.maximum(b_ours),
            "minimum": lambda: x.ours.minimum(b_ours), "xor": lambda: x.ours ^ b_ours}[name]()
    theirs = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum, "xor": np.bitwise_xor}[name](x.theirs, b_theirs)
    return Pair(ours, theirs.astype(dtype))
  if kind == "compare":   # back to an int through a cast of the bool
    return Pair((x.ours < 3).cast(x.ours.dtype) + x.ours, ((x.theirs < 3).astype(dtype) + x.theirs).astype(dtype))
  if kind == "cast":
    target = str(rng.choice(INT_DTYPES))
    return Pair(x.ours.cast(target), x.theirs.astype(target))
  if kind == "movement" and x.ours.ndim:
    moved = movement(rng, Pair(x.ours, torch.from_numpy(x.theirs.astype(np.int64))))   # torch mirrors the view
    return Pair(moved.ours, moved.theirs.numpy().astype(dtype))
  if x.ours.ndim == 0: return x
  axis = int(rng.integers(0, x.ours.ndim))
  if rng.random() < 0.5: return Pair(x.ours.max(axis), x.theirs.max(axis))
  return Pair(x.ours.sum(axis), x.theirs.sum(axis, dtype=SUM_DTYPES.get(dtype, dtype)))


@pytest.mark.parametrize("seed", range(GRAPHS // 2))
def test_random_integer_graph_matches_numpy(seed):
  rng = np.random.default_rng(1000 + seed)
  x = int_leaf(rng, random_shape(rng), str(rng.choice(INT_DTYPES)))
  for _ in range(STEPS):
    x = int_step(rng, x)
    if rng.random() < 0.15: x.ours.realize()
  assert x.ours.dtype.name == x.theirs.dtype.name, f"seed {seed}"
  np.testing.assert_array_equal(x.ours.numpy(), x.theirs, err_msg=f"seed {seed}")
