"""Views against numpy: a chain of movement ops on a view reads, at every index, the base element numpy's same chain
on an arange reads; and composing two views (View.then, which folds a reshape's level into the map above it where
that is affine) reads what applying both chains does."""
import itertools
import random
import numpy as np
import pytest
import torch

from nbgrad import Tensor
from nbgrad.graph.view import View, contiguous_strides, prod

PADDED = -1   # numpy's value for an element the view reads as padding


def flat_index(view: View, index):
  """The flat base element view reads at index, or PADDED: the levels' maps applied one after another, the
  coordinates flattened and unflattened between two levels."""
  coords = list(index)
  for number, level in enumerate(view.levels):
    if any(not lo <= k + sum(a * b for a, b in zip(c, coords)) < hi for c, k, lo, hi in level.conds): return PADDED
    base = [k + sum(a * b for a, b in zip(c, coords)) for c, k in level.rows]
    flat = sum(b * s for b, s in zip(base, contiguous_strides(level.base_shape)))
    if number + 1 == len(view.levels): return flat
    below = view.levels[number + 1].shape
    coords = [flat // s % n for s, n in zip(contiguous_strides(below), below)]


def random_chain(rng: random.Random, shape):
  """A few movement ops that apply to shape, as (View method, numpy function, argument) triples."""
  ops = []
  for _ in range(rng.randint(1, 4)):
    n = len(shape)
    kind = rng.choice(["reshape", "permute", "flip", "pad", "shrink", "expand"])
    if kind == "reshape":
      size, new = prod(shape), []
      while size > 1:
        d = rng.choice([f for f in range(2, size + 1) if size % f == 0])
        new.append(d)
        size //= d
      rng.shuffle(new)
      new = tuple(new + [1] * rng.randint(0, 1)) or (1,)
      ops.append(("reshape", lambda a, s=new: a.reshape(s), new))
      shape = new
    elif kind == "permute":
      order = tuple(rng.sample(range(n), n))
      ops.append(("permute", lambda a, o=order: a.transpose(o), order))
      shape = tuple(shape[d] for d in order)
    elif kind == "flip":
      axes = tuple(d for d in range(n) if rng.random() < 0.5)
      ops.append(("flip", lambda a, x=axes: np.flip(a, x), axes))
    elif kind == "pad":
      arg = tuple((rng.randint(0, 1), rng.randint(0, 1)) for _ in range(n))
      ops.append(("pad", lambda a, p=arg: np.pad(a, p, constant_values=PADDED), arg))
      shape = tuple(s + b + e for s, (b, e) in zip(shape, arg))
    elif kind == "shrink":
      arg = tuple((rng.randint(0, 1) if s > 1 else 0, s) for s in shape)
      ops.append(("shrink", lambda a, r=arg: a[tuple(slice(b, e) for b, e in r)], arg))
      shape = tuple(e - b for b, e in arg)
    else:
      new = tuple(rng.choice([2, 3]) if s == 1 else s for s in shape)
      ops.append(("expand", lambda a, s=new: np.broadcast_to(a, s), new))
      shape = new
  return ops, shape


def apply(view: View, array: np.ndarray, ops):
  for method, numpy_fn, arg in ops:
    view, array = getattr(view, method)(arg), numpy_fn(array)
  return view, array


def assert_reads_as_numpy(view: View, expected: np.ndarray):
  assert view.shape == expected.shape
  for index in itertools.product(*map(range, view.shape)):
    assert flat_index(view, index) == expected[index], (view, index)


@pytest.mark.parametrize("seed", range(8))
def test_composed_views_read_what_numpy_reads(seed):
  rng = random.Random(seed)
  for _ in range(60):
    base = tuple(rng.choice([1, 2, 3, 4, 6]) for _ in range(rng.randint(1, 3)))
    array = np.arange(prod(base)).reshape(base)
    lower_ops, lower_shape = random_chain(rng, base)
    lower, lower_array = apply(View.contiguous(base), array, lower_ops)
    assert_reads_as_numpy(lower, lower_array)
    upper_ops, _ = random_chain(rng, lower_shape)
    upper, expected = apply(View.contiguous(lower_shape), lower_array, upper_ops)
    assert_reads_as_numpy(upper.then(lower), expected)


def test_a_loop_over_a_refinement_reads_a_reshaped_mean_through_strides():
  """GroupNorm's mean, (N, groups, 1) broadcast over (N, groups, C / groups * H * W) and reshaped to (N, C, H, W),
  read from a loop over (N, groups, C / groups, H, W): one level of plain strides."""
  mean = View.contiguous((2, 3, 1)).expand((2, 3, 40)).reshape((2, 6, 4, 5))
  assert len(mean.levels) == 2   # no single map reads it from (N, C, H, W)
  loop = View.contiguous((2, 6, 4, 5)).reshape((2, 3, 2, 4, 5))
  read = loop.then(mean)
  assert len(read.levels) == 1 and read.strided() == ((3, 1, 0, 0, 0), 0)
  assert_reads_as_numpy(read, np.broadcast_to(np.arange(6).reshape(2, 3, 1, 1, 1), (2, 3, 2, 4, 5)))


# ---- kernels over a refinement of their shape and a reshaped read's (graph/schedule.py refine_loop_dims)

def _tensor_ops(ops):
  """random_chain's ops as Tensor methods (pad reads 0 where numpy's chain reads PADDED)."""
  calls = {"reshape": Tensor.reshape, "permute": Tensor.permute, "flip": lambda t, axes: t.flip(axes) if axes else t,
           "pad": Tensor.pad, "shrink": Tensor.shrink, "expand": Tensor.expand}
  return [lambda t, f=calls[method], a=arg: f(t, a) for method, _, arg in ops]


@pytest.mark.parametrize("seed", range(4))
def test_elementwise_kernels_read_movement_chains_as_numpy_does(seed):
  """Random chains of movement ops (reshapes of permuted, flipped, padded, expanded views among them) read by an
  elementwise kernel, some of which loop over a refinement of two shapes: the values of numpy's same chain."""
  from nbgrad import Tensor
  rng = random.Random(100 + seed)
  for _ in range(25):
    base = tuple(rng.choice([1, 2, 3, 4, 6]) for _ in range(rng.randint(1, 3)))
    ops, shape = random_chain(rng, base)
    ops += random_chain(rng, shape)[0]
    array = np.arange(1, prod(base) + 1).reshape(base).astype(np.float32)
    expected = array
    for _, numpy_fn, _ in ops: expected = numpy_fn(expected)
    t = Tensor(array).realize()
    for op in _tensor_ops(ops): t = op(t)
    np.testing.assert_array_equal((t + 0.5).numpy(), np.where(expected == PADDED, 0, expected) + 0.5)


REFINED = {   # name -> (input shape, the Tensor chain, numpy's, the kernel's loop shape)
  "heads_merged": ((2, 4, 3, 2), lambda t: t.transpose(1, 2).reshape(2, 3, 8),
                   lambda a: a.transpose(0, 2, 1, 3).reshape(2, 3, 8), (2, 3, 4, 2)),
  "repeat": ((2, 3, 5), lambda t: t.repeat((1, 2, 3)), lambda a: np.tile(a, (1, 2, 3)), (2, 2, 3, 3, 5)),
  "flatten_of_a_transpose": ((6, 4), lambda t: t.T.reshape(24), lambda a: a.T.reshape(24), (4, 6)),
  # a reduce whose kernel also writes every element (softmax) loops over the refinement too; its reduced dim's parts
  # are reduced (a lone sum keeps its loop: with its reduced dim cut in two, 0.60 -> 0.88 ms for 16x256x8x64)
  "softmax_of_heads_merged": ((2, 4, 3, 2), lambda t: t.transpose(1, 2).reshape(2, 3, 8).softmax(-1),
                              lambda a: _np_softmax(a.transpose(0, 2, 1, 3).reshape(2, 3, 8)), (2, 3, 4, 2)),
}


def _np_softmax(a):
  e = np.exp(a - a.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("name", list(REFINED))
def test_a_reshaped_read_loops_over_the_refinement_without_division(name):
  from nbgrad import Tensor
  from nbgrad.jit.render import Renderer
  shape, build, numpy_build, loop = REFINED[name]
  array = np.arange(prod(shape), dtype=np.float32).reshape(shape)
  out = build(Tensor(array).realize()).contiguous()
  (kernel,) = out.schedule()
  assert kernel.loop_shape == loop
  per_element = [line for line in Renderer(kernel, False).render("kernel").splitlines() if line.strip().startswith("t")]
  assert not any(op in line for line in per_element for op in ("//", "%", ">>")), per_element
  np.testing.assert_allclose(out.numpy(), numpy_build(array), rtol=1e-6, atol=0)


def test_a_reshape_no_single_level_expresses_still_reads_its_buffer_in_order():
  """(2, 4, 6) read as (2, 8, 3) takes a second level (a row of the base cannot say dim 1 // 2), yet it reads the
  buffer in order: numpy() and contiguous() copy nothing (GroupNorm's output ran a 12.8 MB copy kernel for numpy())."""
  from nbgrad import Tensor, GlobalCounters
  values = np.arange(48, dtype=np.float32).reshape(2, 4, 6)
  y = (Tensor(values) + 1).realize().reshape(2, 8, 3)
  assert len(y.lazydata.view.levels) == 2 and y.lazydata.view.is_flat_order()
  assert not View.contiguous((2, 4, 6)).permute((0, 2, 1)).reshape((2, 8, 3)).is_flat_order()
  kernels = GlobalCounters.kernel_count
  np.testing.assert_array_equal(y.numpy(), (values + 1).reshape(2, 8, 3))
  assert y.contiguous() is y and GlobalCounters.kernel_count == kernels


@pytest.mark.parametrize("shape, offset, dims", [((4, 4), 0, (0, 1)), ((4, 4), 1, (0, 1)), ((3, 5), -2, (0, 1)), ((5, 3), 2, (0, 1)),
                                                 ((2, 3, 4), 1, (-2, -1)), ((2, 3, 4), -1, (1, 2))], ids=str)
def test_in_place_ops_on_a_diagonal_write_into_the_matrix_as_torch(shape, offset, dims):
  """diagonal() is a view of the matrix (of its buffer, a window with a stride of cols + 1): x.diagonal().add_(1)
  changes x, as in torch (the write went to a copy)."""
  values = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
  x, xt = Tensor(values.copy()).realize(), torch.tensor(values.copy())
  np.testing.assert_array_equal(x.diagonal(offset, *dims).numpy(), np.diagonal(values, offset, *dims))
  x.diagonal(offset, *dims).mul_(-2).add_(0.5)
  xt.diagonal(offset, *dims).mul_(-2).add_(0.5)
  np.testing.assert_array_equal(x.numpy(), xt.numpy())


# views of views: each takes the view of the one before, in nbgrad and in torch
VIEW_CHAINS = {
  "diagonal of a transpose": lambda x: x.T.diagonal(),
  "diagonal of a slice": lambda x: x[:, 1:].diagonal(),
  "diagonal of a transposed slice": lambda x: x[1:, 1:].T.diagonal(-1),
  "diagonal over permuted dims": lambda x: x.reshape(2, 2, 6).permute(2, 0, 1).diagonal(0, 1, 2),
  "diagonal of every other row": lambda x: x[::2].diagonal(1),
  "unfold of columns": lambda x: x.unfold(1, 2, 2),
  "unfold of rows of a transpose": lambda x: x.T.unfold(1, 3, 1)[:, ::3],
  "as_strided": lambda x: x.as_strided((2, 2), (1, 6), 1),
  "as_strided of a reshape": lambda x: x.reshape(3, 8).as_strided((3, 2), (5, 2), 2),   # offsets count from the buffer's start in torch
}


@pytest.mark.parametrize("name", VIEW_CHAINS)
def test_in_place_ops_on_diagonal_unfold_and_as_strided_views_write_into_the_source_as_torch(name):
  """diagonal(), unfold() and as_strided() of any strided view are views too: writes into them reach the tensor
  they came from (they went to a copy where the source was not a contiguous matrix)."""
  values = np.arange(24, dtype=np.float32).reshape(4, 6)
  x, xt = Tensor(values.copy()), torch.tensor(values.copy())
  view, view_t = VIEW_CHAINS[name](x), VIEW_CHAINS[name](xt)
  np.testing.assert_array_equal(view.numpy(), view_t.numpy())
  view.mul_(-2).add_(0.5)
  view_t.mul_(-2).add_(0.5)
  np.testing.assert_array_equal(x.numpy(), xt.numpy())
  np.testing.assert_array_equal(view.numpy(), view_t.numpy())


def test_overlapping_unfold_windows_are_written_through_and_read_back_after_a_write():
  values = np.arange(6, dtype=np.float32)
  x, xt = Tensor(values.copy()), torch.tensor(values.copy())
  windows, windows_t = x.unfold(0, 3, 1), xt.unfold(0, 3, 1)
  x[2] = 100.0
  xt[2] = 100.0
  np.testing.assert_array_equal(windows.numpy(), windows_t.numpy())
  windows.zero_()
  windows_t.zero_()
  np.testing.assert_array_equal(x.numpy(), xt.numpy())


def _x(lib):
  return Tensor.arange(12).reshape(3, 4).float().realize() if lib == "nbgrad" else torch.arange(12).reshape(3, 4).float()


def _x3(lib):
  return Tensor.arange(24).reshape(2, 3, 4).float().realize() if lib == "nbgrad" else torch.arange(24).reshape(2, 3, 4).float()


def _ints(lib, dtype):
  values = np.array([3, 0, 5, 1]).astype(dtype)
  return Tensor(values).realize() if lib == "nbgrad" else torch.tensor(values)


def _pad(x, lib): return x.pad(((0, 0), (1, 1))) if lib == "nbgrad" else torch.nn.functional.pad(x, (1, 1))


def _view_of_a_flip(lib):
  x = _x(lib)
  f = x.flip(1)
  r = f.reshape(-1)
  f[0, 0] = 50
  return r, f, x


def _view_of_a_view_of_a_flip(lib):
  x = _x(lib)
  rows = x.flip(1)[1:3]
  r = rows.reshape(8)
  rows[0, 0] = 50
  return r, rows, x


def _sibling_views_of_a_flip(lib):
  x = _x(lib)
  f = x.flip(1)
  r1, r2 = f.reshape(-1), f.reshape(4, 3)
  r1[0] = 7
  return r2, f, x


def _view_of_a_copy_written_after_the_tensor(copy):
  """A view of a copy, taken before a write into the tensor, writes into the copy after it (the write into the tensor
  copied the copy and the view out apart, and the view's writes no longer reached the copy)."""
  def program(lib):
    x = _x(lib)
    y = copy(x, lib)
    z = y[1]
    x[2] = 0
    z += 100
    return y, z, x
  return program


def _reshape_of_a_transposed_zeros(lib):
  z = Tensor.zeros(3, 4) if lib == "nbgrad" else torch.zeros(3, 4)
  r = z.T.reshape(12)
  z[0, 0] = 1
  return r, z


# programs of views and writes: each returns the tensors whose values torch and nbgrad must agree on afterwards
ALIASING = {
  # views: writes through them reach the tensor, writes into it show in them
  "view merging strided dims": lambda lib: (lambda y: (y[..., :2].view(6, 2).fill_(-1), y)[1:])(_x3(lib)),
  "flatten of a slice": lambda lib: (lambda y: (y[:, 1:].flatten(0, 1).fill_(-1), y)[1:])(_x3(lib)),
  "expanded row written": lambda lib: (lambda x: (lambda e: (e.__setitem__(1, 5), x, e)[1:])(x[0:1].expand(2, 4)))(_x(lib)),
  "expanded view follows": lambda lib: (lambda x: (lambda e: (x.add_(1), e)[1:])(x[0:1].expand(2, 4)))(_x(lib)),
  "expanded view filled": lambda lib: (lambda x: (lambda e: (e.fill_(3), x, e)[1:])(x[0:1].expand(2, 4)))(_x(lib)),
  "detach shares": lambda lib: (lambda x: (x.detach().add_(1), x)[1:])(_x(lib)),
  "view of a flip": _view_of_a_flip,   # the flip is a copy: its views share its elements, not x's
  "view of a view of a flip": _view_of_a_view_of_a_flip,
  "sibling views of a flip": _sibling_views_of_a_flip,
  # copies: neither a write into them reaches the tensor nor one into the tensor shows in them
  "reshape of a transpose": lambda lib: (lambda x: (lambda v: (x.add_(1), v)[1:])(x.T.reshape(12)))(_x(lib)),
  "reshape of a transpose written": lambda lib: (lambda x: (lambda v: (v.mul_(-1), x)[1:])(x.T.reshape(12)))(_x(lib)),
  "pad": lambda lib: (lambda x: (lambda p: (x.__setitem__(0, -1), p)[1:])(_pad(x, lib)))(_x(lib)),
  "repeat": lambda lib: (lambda x: (lambda r: (x.__setitem__(0, -1), r)[1:])(x.repeat(2, 1)))(_x(lib)),
  "tile": lambda lib: (lambda x: (lambda r: (x.__setitem__(0, -1), r)[1:])(x.tile((2, 1))))(_x(lib)),
  "flip written": lambda lib: (lambda x: (lambda f: (f.mul_(-1), x)[1:])(x.flip(0)))(_x(lib)),
  "flip after add_": lambda lib: (lambda x: (lambda f: (x.add_(1), f)[1:])(x.flip(0)))(_x(lib)),
  "flip after setitem": lambda lib: (lambda x: (lambda f: (x.__setitem__(0, -1), f)[1:])(x.flip(0)))(_x(lib)),
  "rot90 written": lambda lib: (lambda x: (lambda f: (f.mul_(-1), x)[1:])(x.rot90()))(_x(lib)),
  "flip over a dim of 1 written": lambda lib: (lambda x: (lambda f: (f.__setitem__((0, 0), 5), x)[1:])(x[:1].flip(0)))(_x(lib)),
  "detach after an in-place op": lambda lib: (lambda x: (x.add_(1), x.detach().add_(100), x)[2:])(_x(lib)),
  "stack of one written": lambda lib: (lambda x: (lambda s: (s.mul_(-1), x)[1:])((Tensor.stack if lib == "nbgrad" else torch.stack)([x])))(_x(lib)),
  "reshape of a transposed zeros": _reshape_of_a_transposed_zeros,
  # copies that move nothing, or whose view steps come back to the tensor's own (they shared its node)
  "pad of nothing": lambda lib: (lambda x: (lambda p: (x.__setitem__(0, -1), p)[1:])(x.pad(((0, 0), (0, 0))) if lib == "nbgrad" else torch.nn.functional.pad(x, (0, 0))))(_x(lib)),
  "pad of nothing written": lambda lib: (lambda x: (lambda p: (p.__setitem__(0, -1), x)[1:])(x.pad(((0, 0), (0, 0))) if lib == "nbgrad" else torch.nn.functional.pad(x, (0, 0))))(_x(lib)),
  "negative pad": lambda lib: (lambda x: (lambda p: (x.__setitem__((0, 1), -1), p)[1:])(x.pad((None, (-1, 0))) if lib == "nbgrad" else torch.nn.functional.pad(x, (-1, 0))))(_x(lib)),
  "repeat of ones": lambda lib: (lambda x: (lambda r: (x.__setitem__(0, -1), r)[1:])(x.repeat(1, 1)))(_x(lib)),
  "repeat of ones written": lambda lib: (lambda x: (lambda r: (r.__setitem__(0, -1), x)[1:])(x.repeat(1, 1)))(_x(lib)),
  "repeat of a row": lambda lib: (lambda x: (lambda r: (x.__setitem__((0, 0), -1), r)[1:])(x[:1].repeat(3, 1)))(_x(lib)),
  "flip of a flip": lambda lib: (lambda x: (lambda f: (x.__setitem__(0, -1), f)[1:])(x.flip(0).flip(0)))(_x(lib)),
  "flip of a flip written": lambda lib: (lambda x: (lambda f: (f.__setitem__(0, -1), x)[1:])(x.flip(0).flip(0)))(_x(lib)),
  "abs of uint8 written": lambda lib: (lambda x: (lambda y: (y.__setitem__(0, 0), x)[1:])(x.abs()))(_ints(lib, "uint8")),
  "floor of int32 written": lambda lib: (lambda x: (lambda y: (y.__setitem__(0, 0), x)[1:])(x.floor()))(_ints(lib, "int32")),
  "round of int32 after a write": lambda lib: (lambda x: (lambda y: (x.__setitem__(0, 0), y)[1:])(x.round()))(_ints(lib, "int32")),
  "sign of bool written": lambda lib: (lambda x: (lambda y: (y.__setitem__(0, False), x)[1:])(x.sign()))(_ints(lib, "bool")),
  "view of a flip after a write": _view_of_a_copy_written_after_the_tensor(lambda x, lib: x.flip(0)),
  "view of a pad after a write": _view_of_a_copy_written_after_the_tensor(_pad),
  "view of a repeat of ones after a write": _view_of_a_copy_written_after_the_tensor(lambda x, lib: x.repeat(1, 1)),
  "slice of a pad": lambda lib: (lambda x: (lambda s: (x.__setitem__(0, -1), s)[1:])(_pad(x, lib)[:, 1:5]))(_x(lib)),
  "expanded then reshaped": lambda lib: (lambda x: (lambda r: (x.__setitem__(0, -1), r)[1:])(x[..., None].expand(3, 4, 2).reshape(3, 8)))(_x(lib)),
}


def test_detach_of_a_result_not_computed_yet_is_a_tensor_of_its_own():
  """README: detach of a computed tensor is a view (torch's), of a result not computed yet a tensor of its own; they
  shared the result's node, so a write into either showed in the other."""
  x = Tensor([1.0, 2.0, 3.0])
  y = x * 2
  d = y.detach()
  d[0] = 5
  y[1] = 7
  assert y.tolist() == [2.0, 7.0, 6.0] and d.tolist() == [5.0, 4.0, 6.0]
  computed = (x * 2).realize()
  view = computed.detach()
  view[0] = 5
  assert computed.tolist() == [5.0, 4.0, 6.0]


@pytest.mark.parametrize("name", ALIASING)
def test_which_results_share_the_tensor_s_elements_as_torch(name):
  """torch's views (slices, view and reshape where strides allow, expand, detach) share the tensor's elements both
  ways; its copies (flip, rot90, pad, repeat, tile, stack, a reshape no strides express) share nothing. A copy here
  still reads the tensor's buffer until the tensor is written: the write copies it out first (flip(0) then x[0] = -1
  kept -1 in the flip; a write into the flip changed x)."""
  ours, theirs = ALIASING[name]("nbgrad"), ALIASING[name]("torch")
  for got, expected in zip(ours, theirs): np.testing.assert_array_equal(got.numpy(), expected.numpy())


EXPANDED_WRITES = {
  "a row": lambda e, lib: e.__setitem__(1, 5.0),
  "fill_": lambda e, lib: e.fill_(3.0),
  "zero_": lambda e, lib: e.zero_(),
  "masked_fill_": lambda e, lib: e.masked_fill_(_made(lib, [[True, False, True, True]] * 2), 2.0),
  "index_fill_": lambda e, lib: e.index_fill_(1, _made(lib, [1, 3]), -1.0),
  "masked_fill_ of one row's places": lambda e, lib: e.masked_fill_(_made(lib, [[True, False, False, True], [False, True, False, False]]), 9.0),
  "index_fill_ of a row": lambda e, lib: e.index_fill_(0, _made(lib, [1]), -1.0),
  "fill_ with a 0-d tensor": lambda e, lib: e.fill_(_made(lib, 2.0)),
  "add_": lambda e, lib: e.add_(1.0),
  "+=": lambda e, lib: e.__iadd__(1.0),
  "clamp_": lambda e, lib: e.clamp_(0.0, 1.0),
  "copy_": lambda e, lib: e.copy_(_made(lib, [1.0, 2.0, 3.0, 4.0])),
  "a column": lambda e, lib: e.__setitem__((slice(None), 1), 7.0),
  "all of it": lambda e, lib: e.__setitem__(Ellipsis, 7.0),
  "rows 0:2": lambda e, lib: e.__setitem__(slice(0, 2), 7.0),
}


def _made(lib, values): return Tensor(values) if lib == "nbgrad" else torch.tensor(values)


@pytest.mark.filterwarnings("ignore:Use of")
@pytest.mark.parametrize("name", EXPANDED_WRITES)
def test_an_expanded_view_takes_the_writes_torch_s_takes(name):
  """torch's rule: a write reaching one place through two elements of an expanded view raises, but for a fill, which
  writes the places of the elements it picks; nothing is written when it raises."""
  results = []
  for lib in ("nbgrad", "torch"):
    x = _x(lib)
    try:
      EXPANDED_WRITES[name](x[0:1].expand(2, 4), lib)
      results.append(("written", x.numpy().copy()))
    except RuntimeError as error:
      assert "single memory location" in str(error)
      results.append(("refused", x.numpy().copy()))
  (ours, ours_x), (theirs, theirs_x) = results
  assert ours == theirs
  np.testing.assert_array_equal(ours_x, theirs_x)


def test_an_expanded_view_refuses_index_array_writes():
  x = _x("nbgrad")
  with pytest.raises(RuntimeError, match=r"written-to tensor \(shape \(2, 4\)\) refer to a single memory location"):
    x[0:1].expand(2, 4)[[0, 1], 1] = 5.0
  np.testing.assert_array_equal(x.numpy(), _x("torch").numpy())


def test_a_result_that_read_a_tensor_before_a_write_into_it_keeps_its_gradient_as_torch():
  """The flip the forward read is copied out before the write: the gradient uses the values the forward used
  (it raised, since the input was written in place)."""
  w, x = Tensor([1.0, 2.0, 3.0], requires_grad=True), Tensor([4.0, 5.0, 6.0]).realize()
  y = (w * x.flip(0)).sum()
  x[0] = 50.0
  y.backward()
  assert w.grad.tolist() == [6.0, 5.0, 4.0] and x.tolist() == [50.0, 5.0, 6.0]
