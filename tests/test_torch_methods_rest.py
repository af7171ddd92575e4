"""The last of torch's Tensor methods nbgrad lacked: gcd and lcm, frexp, the in-place shape changes (unsqueeze_, t_,
resize_, ...), type(), gradient hooks, and fill_diagonal_, prelu, angle, nonzero_static and their kin. Values, dtypes,
gradients and errors against torch (CPU)."""
import math
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes
from against_torch import grads_match

INF, NAN = math.inf, math.nan


def torch_dtype_name(t) -> str: return str(t.dtype).split(".")[1]


def assert_as_torch(got: Tensor, expected: torch.Tensor):
  """Same shape, dtype and values (NaN where torch has NaN, and signed zeros) as torch's result."""
  assert got.shape == tuple(expected.shape) and got.dtype.name == torch_dtype_name(expected), (got.shape, got.dtype, expected)
  ours, theirs = got.numpy(), expected.detach().float().numpy() if expected.dtype == torch.bfloat16 else expected.detach().numpy()
  np.testing.assert_array_equal(ours, theirs)
  if ours.dtype.kind == "f": np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


# ---- gcd and lcm
A = np.array([[0, -4, 4, -4, 0, 6, 12, -7, 35, 1]])
B = np.array([[0], [6], [-6], [-5], [21]])
GCD_ROWS = [  # (a, b, a's dtype, b's dtype): broadcasting, promotion, 0-size, 0-d, a transposed input
  (A, B, "int32", "int32"), (A, B, "int64", "int64"), (A, B, "int8", "int8"), (A, B, "int16", "int16"),
  (np.abs(A), np.abs(B), "uint8", "uint8"), (A, B, "int8", "int16"), (np.abs(A), B, "uint8", "int8"),
  (A[:, :0], B, "int32", "int32"), (np.array(-12), np.array(18), "int32", "int32"), (A[:, :5] * B, B.T, "int64", "int64"),
]


@pytest.mark.parametrize("op", ["gcd", "lcm"])
@pytest.mark.parametrize("a,b,a_dtype,b_dtype", GCD_ROWS, ids=[f"{r[2]}-{r[3]}-{np.shape(r[0])}-{np.shape(r[1])}" for r in GCD_ROWS])
def test_gcd_and_lcm_as_torch(op, a, b, a_dtype, b_dtype):
  ours, theirs = Tensor(a.astype(a_dtype)), torch.tensor(a.astype(a_dtype))
  if ours.ndim == 2 and ours.shape[0] == ours.shape[1]: ours, theirs = ours.T, theirs.T   # read transposed
  assert_as_torch(getattr(ours, op)(Tensor(b.astype(b_dtype))), getattr(theirs, op)(torch.tensor(b.astype(b_dtype))))


def test_gcd_and_lcm_in_place_and_with_a_number():
  t, reference = Tensor(A.astype("int32")), torch.tensor(A.astype("int32"))
  assert t.gcd_(Tensor(B[1].astype("int32"))) is t
  assert_as_torch(t, reference.gcd_(torch.tensor(B[1].astype("int32"))))
  assert_as_torch(t.lcm_(Tensor(np.int32(4))), reference.lcm_(torch.tensor(4, dtype=torch.int32)))
  assert Tensor([12, -18]).gcd(8).tolist() == [4, 2]   # torch takes tensors only; a number is one here too


@pytest.mark.parametrize("a,b", [([1.0, 2.0], [2.0, 4.0]), ([1, 2], [0.5, 4.0]), ([True], [False])], ids=["float", "int-float", "bool"])
def test_gcd_and_lcm_refuse_floats_and_bools(a, b):
  for op in ("gcd", "lcm"):
    with pytest.raises(TypeError, match=f"{op} takes integer tensors.*(float32|bool)"): getattr(Tensor(a), op)(Tensor(b))
    with pytest.raises(RuntimeError): getattr(torch.tensor(a), op)(torch.tensor(b))


# ---- frexp
FREXP_VALUES = np.array([0.0, -0.0, 1.0, -3.5, 0.1, 1e-40, -5e-45, 6e-8, 3e-5, 65504.0, 1e30, 1e-310, INF, -INF, NAN])


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_frexp_as_torch_bit_for_bit(name):
  """Zeros, subnormals of each type, its largest values, infinities and NaN: numbers out of a type's range become inf or 0."""
  with np.errstate(over="ignore"): wide = FREXP_VALUES.astype(np.float32 if name == "bfloat16" else name)
  ours = Tensor(wide).cast(dtypes.bfloat16) if name == "bfloat16" else Tensor(wide)
  theirs = torch.tensor(wide).bfloat16() if name == "bfloat16" else torch.tensor(wide)
  for got, expected in zip(ours.frexp(), torch.frexp(theirs)): assert_as_torch(got, expected)
  for got, expected in zip(ours.reshape(3, 5).T.frexp(), torch.frexp(theirs.reshape(3, 5).T)): assert_as_torch(got, expected)


def test_frexp_edge_shapes_gradient_and_errors():
  for values in (np.zeros((0, 3)), np.array(-0.75)):
    for got, expected in zip(Tensor(values).frexp(), torch.frexp(torch.tensor(values))): assert_as_torch(got, expected)
  grads_match(lambda x: x.frexp(), torch.frexp, np.array([[1.5, -20.0, 0.0], [3e-310, 0.3, INF]]))
  with pytest.raises(TypeError, match="frexp needs a float tensor, got dtypes.int32"): Tensor([1, 2]).frexp()
  with pytest.raises(RuntimeError): torch.frexp(torch.tensor([1, 2]))


# ---- in-place shape changes: the tensor itself takes the new shape, and the gradient flows back through it
VIEW_ROWS = [  # (method, arguments, input shape)
  ("unsqueeze_", (0,), (2, 3)), ("unsqueeze_", (-1,), (2, 3)), ("unsqueeze_", (0,), ()), ("squeeze_", (), (1, 3, 1)),
  ("squeeze_", (0,), (1, 3, 1)), ("squeeze_", (1,), (1, 3, 1)), ("squeeze_", ((0, 2),), (1, 3, 1)), ("t_", (), (2, 3)),
  ("t_", (), (3,)), ("t_", (), ()), ("transpose_", (0, 2), (2, 3, 1)), ("swapaxes_", (1, -1), (2, 3, 1)), ("swapdims_", (0, 1), (2, 3)),
  ("as_strided_", ((2, 2), (1, 2), 1), (2, 3)), ("unsqueeze_", (1,), (0, 3)), ("t_", (), (0, 3)),
]


# also read transposed, where the input has two dims (not as_strided_: torch's counts in the storage, nbgrad's in the elements)
VIEW_CASES = [row + (False,) for row in VIEW_ROWS] + [row + (True,) for row in VIEW_ROWS if len(row[2]) >= 2 and row[0] != "as_strided_"]


@pytest.mark.parametrize("op,args,shape,transposed", VIEW_CASES, ids=[f"{r[0]}{r[1]}-{r[2]}{'-T' if r[3] else ''}" for r in VIEW_CASES])
def test_in_place_shape_changes_as_torch(op, args, shape, transposed):
  """y = x * 1 (a tensor in the graph, not a leaf), y.op_(...) in place, then y's values and x's gradient."""
  values = np.arange(1.0, math.prod(shape) + 1).reshape(shape)
  x, reference = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  y, expected = (x.mT * 1, (reference * 1).mT) if transposed else (x * 1, reference * 1)
  assert getattr(y, op)(*args) is y
  getattr(expected, op)(*args)
  assert_as_torch(y, expected)
  weights = np.arange(2.0, y.numel() + 2).reshape(y.shape)
  (y * Tensor(weights)).sum().backward()
  (expected * torch.tensor(weights)).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), reference.grad.numpy())


def test_in_place_shape_change_errors_leave_the_tensor_as_it_was():
  x = Tensor(np.ones((2, 3)), requires_grad=True)
  with pytest.raises(RuntimeError, match="unsqueeze_: a leaf tensor that requires grad"): x.unsqueeze_(0)
  with pytest.raises(RuntimeError): torch.ones(2, 3, requires_grad=True).unsqueeze_(0)
  y = x * 1
  for call, error in [(lambda: y.unsqueeze_(3), IndexError), (lambda: y.transpose_(0, 2), IndexError), (lambda: y.squeeze_(5), IndexError),
                      (lambda: y.as_strided_((4,), (2,)), IndexError), (lambda: y.unsqueeze_(0).t_(), ValueError)]:
    with pytest.raises(error): call()
  with pytest.raises(RuntimeError, match="expects a tensor with <= 2 dimensions"): (torch.ones(2, 3, requires_grad=True) * 1).unsqueeze_(0).t_()
  assert x.shape == (2, 3) and y.shape == (1, 2, 3) and x.grad is None   # the unsqueeze_ before the failed t_ stays done
  y.sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))


def test_in_place_shape_changes_keep_shared_elements_shared():
  """Views made before (a row) and the tensor a view was taken of see the writes that follow, as in torch."""
  for make in (lambda lib: lib.arange(6.0), lambda lib: lib.arange(6.0).reshape(2, 3)[1]):
    b, reference = make(Tensor).realize(), make(torch)
    row, reference_row = b[1], reference[1]
    b.unsqueeze_(0)
    reference.unsqueeze_(0)
    b += 10
    reference += 10
    assert_as_torch(b, reference)
    assert_as_torch(row, reference_row)
  source, reference_source = Tensor.arange(6.0).realize(), torch.arange(6.0)
  part, reference_part = source[2:], reference_source[2:]
  part.t_().unsqueeze_(1)
  reference_part.t_().unsqueeze_(1)
  part[0] = -1.0
  reference_part[0] = -1.0
  assert_as_torch(source, reference_source)
  assert_as_torch(part, reference_part)


def test_a_leaf_changed_under_no_grad_keeps_its_gradient_in_its_shape():
  """torch keeps the old gradient's shape (its next backward then fails); nbgrad changes .grad as the tensor."""
  w = Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
  (w * 2).sum().backward()
  with Tensor.inference_mode(): w.t_()
  assert w.shape == (3, 2) and w.grad.shape == (3, 2) and w.is_leaf and w.requires_grad
  (w * Tensor(np.arange(6.0).reshape(3, 2))).sum().backward()
  np.testing.assert_array_equal(w.grad.numpy(), 2 + np.arange(6.0).reshape(3, 2))


RESIZE_ROWS = [  # (how the tensor is made, new shape): the same count, fewer, more (from its buffer), 0-d, 0-size
  (lambda lib: lib.arange(6.0).reshape(2, 3), (3, 2)), (lambda lib: lib.arange(6.0).reshape(2, 3), (4,)),
  (lambda lib: lib.arange(6.0).reshape(2, 3), (2, 3)), (lambda lib: lib.arange(6.0).reshape(2, 3).t(), (4,)),
  (lambda lib: lib.arange(6.0).reshape(2, 3).t(), (3, 2)), (lambda lib: lib.arange(6.0)[2:], (2, 2)),
  (lambda lib: lib.arange(6.0)[2:4], (3,)), (lambda lib: lib.arange(6.0)[::2], (2,)), (lambda lib: lib.arange(6.0)[2:4], (6,)),
  (lambda lib: lib.ones(()), (1, 1)), (lambda lib: lib.ones(2), ()), (lambda lib: lib.ones(2), (0, 3)),
]


@pytest.mark.parametrize("make,shape", RESIZE_ROWS, ids=[f"{i}-{r[1]}" for i, r in enumerate(RESIZE_ROWS)])
def test_resize_as_torch(make, shape):
  """The elements from where the tensor starts in its buffer, in order (a transposed tensor's buffer order)."""
  ours, reference = make(Tensor).realize(), make(torch)
  assert ours.resize_(shape) is ours
  reference.resize_(shape)
  if 6 in shape: ours, reference = ours[:4], reference[:4]   # grown past the buffer: torch leaves the rest unset, nbgrad 0
  assert_as_torch(ours, reference)


def test_resize_as_and_resize_errors():
  t = Tensor(np.arange(6.0))
  assert t.resize_as_(Tensor(np.ones((3, 2)))) is t and t.tolist() == torch.arange(6.0).resize_as_(torch.ones(3, 2)).tolist()
  t.resize_(2, 1).resize_([1, 2])
  assert t.tolist() == [[0.0, 1.0]]
  for leaf in (Tensor(np.ones(3), requires_grad=True), Tensor(np.ones(3), requires_grad=True) * 1):
    with pytest.raises(RuntimeError, match="cannot resize a tensor that requires grad"): leaf.resize_(2)
    assert leaf.shape == (3,)
  with pytest.raises(RuntimeError): torch.ones(3, requires_grad=True).resize_(2)
  with pytest.raises(ValueError, match="negative"): Tensor(np.ones(3)).resize_(-1)


# ---- type()
TYPE_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("name", TYPE_DTYPES)
def test_type_names_and_casts_as_torch(name):
  ours, reference = Tensor([1, 0]).cast(getattr(dtypes, name)), torch.tensor([1, 0]).to(getattr(torch, name))
  assert ours.type() == reference.type()
  cast = Tensor([1.5, -2.0]).type(reference.type())
  assert cast.dtype == getattr(dtypes, name) and cast.tolist() == torch.tensor([1.5, -2.0]).type(reference.type()).tolist()
  for dtype in (getattr(dtypes, name), name, getattr(torch, name)) + ((np.dtype(name),) if name != "bfloat16" else ()):
    assert ours.type(dtype) is ours and Tensor([1.5]).type(dtype).dtype == getattr(dtypes, name)


def test_type_refuses_unknown_names():
  with pytest.raises(TypeError, match="unknown tensor type 'torch.ComplexFloatTensor'"): Tensor([1.0]).type("torch.ComplexFloatTensor")
  with pytest.raises(TypeError, match="unknown dtype"): Tensor([1.0]).type("float128")


# ---- gradient hooks: each scenario runs the same on nbgrad and torch (lib) and returns the log and the leaf
def leaf_and_intermediate(lib, log):
  x = lib.tensor([1.0, 2.0], requires_grad=True)
  y = x * 3
  y.register_hook(lambda g: log.append(("y", g.tolist())))
  x.register_hook(lambda g: log.append(("x", g.tolist())))
  (y * y).sum().backward()
  return x


def doubling_hooks_chain_in_order(lib, log):
  x = lib.tensor([[1.0, -2.0]], requires_grad=True)
  y = x.exp()
  y.retain_grad()
  y.register_hook(lambda g: (log.append(("first", g.tolist())), g * 2)[1])
  y.register_hook(lambda g: log.append(("second", g.tolist())))
  y.register_hook(lambda g: g + 1)
  x.register_hook(lambda g: g * 10)
  (y * lib.tensor([[1.0, 3.0]])).sum().backward()
  log.append(("y.grad", y.grad.tolist()))
  return x


def removed_hooks(lib, log):
  x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
  kept = x.register_hook(lambda g: log.append(("kept", g.tolist())))
  removed = x.register_hook(lambda g: g * 100)
  removed.remove()
  removed.remove()   # a second time: nothing
  with x.register_hook(lambda g: g * 1000): pass
  (x * x).sum().backward()
  kept.remove()
  (x * 2).sum().backward()
  return x


def post_accumulate_sees_the_sum(lib, log):
  x = lib.tensor([1.0, 2.0], requires_grad=True)
  x.register_post_accumulate_grad_hook(lambda t: log.append(("post", t.grad.tolist())))
  x.register_hook(lambda g: log.append(("pre", g.tolist())))
  for _ in range(2): (x * x).sum().backward()
  return x


def hook_on_the_root_and_a_shared_node(lib, log):
  x = lib.tensor([0.5, -1.5], requires_grad=True)
  y = x.sin()
  y.retain_grad()
  y.register_hook(lambda g: (log.append(("y", g.tolist())), g * -1)[1])
  loss = (y * y).sum() + y.sum()
  loss.register_hook(lambda g: (log.append(("loss", g.tolist())), g * 3)[1])
  loss.backward()
  log.append(("retains", [y.retains_grad, x.retains_grad]))
  return x


def zero_size_and_scalar(lib, log):
  x = lib.tensor(2.0, requires_grad=True)
  empty = lib.tensor([[1.0], [2.0]], requires_grad=True)[:, :0]
  empty.register_hook(lambda g: log.append(("empty", list(g.shape))))
  x.register_hook(lambda g: (log.append(("x", g.tolist())), g * 2)[1])
  ((x * x) + (empty * x).sum()).backward()
  return x


HOOK_SCENARIOS = [leaf_and_intermediate, doubling_hooks_chain_in_order, removed_hooks, post_accumulate_sees_the_sum,
                  hook_on_the_root_and_a_shared_node, zero_size_and_scalar]


class _Tensors:
  """nbgrad as the scenarios call torch: tensor(data, requires_grad=...)."""
  @staticmethod
  def tensor(data, requires_grad=None): return Tensor(np.array(data, dtype=np.float32), requires_grad=requires_grad)


@pytest.mark.parametrize("scenario", HOOK_SCENARIOS, ids=[s.__name__ for s in HOOK_SCENARIOS])
def test_gradient_hooks_as_torch(scenario):
  ours, theirs = [], []
  x, reference = scenario(_Tensors, ours), scenario(torch, theirs)
  assert sorted(ours) == sorted(theirs)   # in the order each tensor calls them; tensors apart in any order the graph allows
  np.testing.assert_allclose(x.grad.numpy(), reference.grad.numpy(), rtol=1e-6)


def test_hook_errors():
  x = Tensor([1.0, 2.0], requires_grad=True)
  for register in ("register_hook", "register_post_accumulate_grad_hook"):
    with pytest.raises(RuntimeError, match="doesn't require grad"): getattr(Tensor([1.0]), register)(print)
    with pytest.raises(RuntimeError, match="doesn't require grad"): getattr(torch.ones(1), register)(print)
  with pytest.raises(RuntimeError, match="non-leaf"): (x * 2).register_post_accumulate_grad_hook(print)
  with pytest.raises(TypeError, match="callable"): x.register_hook(3)
  for hook, error, message in [(lambda g: g.reshape(2, 1), RuntimeError, r"\(2,\) dtypes.float32 CPU -> \(2, 1\)"),
                               (lambda g: g.cast(dtypes.float64), RuntimeError, "dtype"), (lambda g: 2.0, TypeError, "returned a float")]:
    w = Tensor([1.0, 2.0], requires_grad=True)
    w.register_hook(hook)
    with pytest.raises(error, match=message): (w * 2).sum().backward()


def test_every_non_leaf_retains_its_gradient():
  """torch keeps a non-leaf's gradient after retain_grad() only; nbgrad keeps every one's, and says so."""
  x = Tensor([1.0], requires_grad=True)
  y = x * 2
  assert y.retains_grad and not x.retains_grad and not Tensor([1.0]).retains_grad
  assert y.retain_grad() is y and y.retains_grad
  y.sum().backward()
  assert y.grad.tolist() == [1.0]


# ---- fill_diagonal_
DIAGONAL_ROWS = [((3, 3), False, "float32"), ((7, 3), False, "float32"), ((7, 3), True, "float32"), ((3, 7), True, "float32"),
                 ((7, 2), True, "int32"), ((2, 2, 2), False, "float32"), ((0, 0), False, "float32"), ((1, 1), True, "bool"),
                 ((4, 4), False, "int32")]


@pytest.mark.parametrize("shape,wrap,name", DIAGONAL_ROWS, ids=[f"{r[0]}-{r[1]}-{r[2]}" for r in DIAGONAL_ROWS])
def test_fill_diagonal_as_torch(shape, wrap, name):
  values = (np.arange(math.prod(shape)).reshape(shape) % 3).astype(name)
  ours, reference = Tensor(values), torch.tensor(values)
  if shape == (4, 4): ours, reference = ours.T, reference.T   # written through the transpose
  assert ours.fill_diagonal_(2.7, wrap=wrap) is ours
  assert_as_torch(ours, reference.fill_diagonal_(2.7, wrap=wrap))


@pytest.mark.parametrize("shape", [(3,), (), (2, 3, 2)])
def test_fill_diagonal_needs_a_matrix_or_a_cube(shape):
  with pytest.raises(ValueError, match=rf"fill_diagonal_ needs .*{shape}"): Tensor(np.zeros(shape)).fill_diagonal_(1)
  with pytest.raises(RuntimeError): torch.zeros(shape).fill_diagonal_(1)


# ---- prelu
PRELU_ROWS = [((2, 3), (3,)), ((2, 3), (1,)), ((2, 3), ()), ((4,), (1,)), ((2, 3, 2, 2), (3,)), ((0, 3), (3,)), ((), (1,))]


@pytest.mark.parametrize("shape,weight_shape", PRELU_ROWS, ids=[f"{r[0]}-{r[1]}" for r in PRELU_ROWS])
def test_prelu_values_and_gradients_as_torch(shape, weight_shape):
  x = np.arange(math.prod(shape)).reshape(shape) % 5 - 2.0   # zeros among them: their gradient is the weight's
  weights = np.linspace(0.1, 0.7, math.prod(weight_shape)).reshape(weight_shape)
  grads_match(lambda t, w: t.prelu(w), lambda t, w: t.prelu(w), x, weights)
  if len(shape) == 2: grads_match(lambda t, w: t.T.T.prelu(w), lambda t, w: t.T.T.prelu(w), x.T.copy().T, weights)


@pytest.mark.parametrize("shape,weight_shape", [((2, 2), (3,)), ((2, 2), (1, 1)), ((2,), (2,))])
def test_prelu_refuses_weights_that_do_not_fit(shape, weight_shape):
  with pytest.raises(ValueError, match=rf"prelu needs one weight or one per channel.*{weight_shape}"):
    Tensor(np.ones(shape)).prelu(Tensor(np.ones(weight_shape)))
  with pytest.raises(RuntimeError): torch.ones(shape).prelu(torch.ones(weight_shape))
  with pytest.raises(TypeError, match="prelu needs a float tensor"): Tensor([1, 2]).prelu(Tensor([1]))


# ---- angle, and the small ones
@pytest.mark.parametrize("name", ["float16", "float32", "float64", "int32", "bool"])
def test_angle_as_torch(name):
  values = np.array([[1.5, -2.0, 0.0, -0.0], [INF, -INF, NAN, -1e-30]]) if name.startswith("float") else np.array([[1, 0], [-3, 5]])
  values = values.astype(name) if name != "bool" else values > 0
  assert_as_torch(Tensor(values).angle(), torch.tensor(values).angle())
  assert_as_torch(Tensor(values).T.angle(), torch.tensor(values).T.angle())
  if name == "float64": grads_match(lambda t: t.angle(), lambda t: t.angle(), values[:, :2])


def test_narrow_copy_new_empty_strided_and_as_strided_scatter():
  x = np.arange(12.0).reshape(3, 4)
  grads_match(lambda t: t.narrow_copy(1, -3, 2), lambda t: t.narrow_copy(1, -3, 2), x)
  grads_match(lambda t: t.T.narrow_copy(0, 1, 2), lambda t: t.T.narrow_copy(0, 1, 2), x)
  copy = Tensor(x)
  assert copy.narrow_copy(0, 0, 0).shape == (0, 4) and copy.narrow_copy(0, 1, 1).lazydata.base is not copy.lazydata.base
  for ours, theirs in [(Tensor(x).new_empty_strided((2, 3), (1, 2)), torch.tensor(x).new_empty_strided((2, 3), (1, 2))),
                       (Tensor(x).new_empty_strided((), (), dtype=dtypes.int32), torch.tensor(x).new_empty_strided((), (), dtype=torch.int32))]:
    assert ours.shape == tuple(theirs.shape) and ours.dtype.name == torch_dtype_name(theirs)
  with pytest.raises(ValueError, match="as many strides as sizes"): Tensor(x).new_empty_strided((2, 3), (1,))
  source = np.arange(-1.0, -5.0, -1).reshape(2, 2)
  ours, theirs = Tensor(x, requires_grad=True), Tensor(source, requires_grad=True)
  scattered = ours.as_strided_scatter(theirs, (2, 2), (1, 3), 1)
  assert_as_torch(scattered, torch.tensor(x).as_strided_scatter(torch.tensor(source), (2, 2), (1, 3), 1))
  # torch 2.13 gives x the gradient of the written elements, not of the kept ones: the reference is written out
  (scattered * Tensor(np.arange(12.0).reshape(3, 4))).sum().backward()
  written = np.zeros(12, bool)
  written[[1, 2, 4, 5]] = True
  np.testing.assert_array_equal(ours.grad.numpy(), np.where(written, 0, np.arange(12.0)).reshape(3, 4))
  np.testing.assert_array_equal(theirs.grad.numpy(), [[1.0, 4.0], [2.0, 5.0]])
  with pytest.raises(ValueError, match=r"as_strided_scatter needs src of shape \(2, 2\)"): Tensor(x).as_strided_scatter(Tensor([1.0]), (2, 2), (1, 3))


NONZERO_ROWS = [(np.array([[0, 1, 0], [2, 0, 3]]), 2, -1), (np.array([[0, 1, 0], [2, 0, 3]]), 5, -7), (np.array([[0, 1, 0], [2, 0, 3]]), 0, -1),
                (np.array(3.0), 2, -1), (np.array(0.0), 1, 4), (np.zeros((0, 2)), 2, 9)]


@pytest.mark.parametrize("values,size,fill_value", NONZERO_ROWS, ids=[f"{r[0].shape}-{r[1]}-{r[2]}" for r in NONZERO_ROWS])
def test_nonzero_static_as_torch(values, size, fill_value):
  """The same rows; their dtype is nonzero's int32 (torch's int64)."""
  got = Tensor(values).nonzero_static(size=size, fill_value=fill_value)
  expected = torch.tensor(values).nonzero_static(size=size, fill_value=fill_value)
  assert got.shape == tuple(expected.shape) and got.dtype == dtypes.int32
  np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_nonzero_static_size_errors_and_flags_as_torch():
  with pytest.raises(ValueError, match="nonzero_static size must be at least 0, got -1"): Tensor([1]).nonzero_static(size=-1)
  with pytest.raises(TypeError, match="nonzero_static size must be an int"): Tensor([1]).nonzero_static(size=1.5)
  ours, theirs = Tensor([1.0, -2.0]), torch.tensor([1.0, -2.0])
  assert ours.pin_memory() is ours
  for flag in ("is_inference", "is_neg", "is_conj"): assert getattr(ours, flag)() is getattr(theirs, flag)() is False


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
def test_index_reduce_in_place_as_torch():
  values, source = np.arange(1.0, 7.0).reshape(3, 2), np.array([[2.0, 3.0], [4.0, 5.0]])
  ours, theirs = Tensor(values), torch.tensor(values)
  assert ours.index_reduce_(0, Tensor([2, 0]), Tensor(source), "prod") is ours
  assert_as_torch(ours, theirs.index_reduce_(0, torch.tensor([2, 0]), torch.tensor(source), "prod"))


@pytest.mark.filterwarnings("ignore::UserWarning")   # torch's: its reduce= is deprecated
@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_with_torch_s_reduce(reduce):
  values, index, src = np.arange(12.0).reshape(3, 4) + 1, np.array([[0, 1, 2, 0], [2, 0, 0, 1]]), np.arange(8.0).reshape(2, 4) + 2
  got = Tensor(values).scatter(0, Tensor(index), Tensor(src), reduce=reduce)
  np.testing.assert_array_equal(got.numpy(), torch.tensor(values).scatter(0, torch.tensor(index), torch.tensor(src), reduce=reduce).numpy())
  got = Tensor(values).scatter(1, Tensor(index), 2.0, reduce=reduce)
  np.testing.assert_array_equal(got.numpy(), torch.tensor(values).scatter(1, torch.tensor(index), 2.0, reduce=reduce).numpy())
  with pytest.raises(ValueError, match="'add' or 'multiply'"): Tensor(values).scatter(0, Tensor(index), 1.0, reduce="sum")


@pytest.mark.parametrize("values", [[3.0, 1.0, 2.0, 2.0], [1.0, math.nan, 2.0, math.nan], [5.0, 5.0, 5.0], [[1.0, 2.0], [2.0, 3.0]]],
                         ids=["ties", "nan", "all_equal", "matrix"])
@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_of_all_elements_shares_its_gradient_among_ties_as_torch(values, op):
  x, xt = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  getattr(x, op)().backward()
  getattr(xt, op)().backward()
  np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("op", ["fmax", "fmin"])
def test_fmax_and_fmin_give_a_tie_s_gradient_to_self_as_torch(op):
  a, b = [1.0, math.nan, 2.0, 3.0, math.nan], [math.nan, 1.0, 2.0, 1.0, math.nan]
  x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  xt, yt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
  getattr(x, op)(y).sum().backward()
  getattr(xt, op)(yt).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
  np.testing.assert_array_equal(y.grad.numpy(), yt.grad.numpy())


def test_torch_s_argument_forms():
  """torch tensors as operands, indices and assigned values (read through __array__), torch dtypes, t.to(other),
  fill_ of a 0-d tensor, narrow from a 0-d tensor, norm('nuc'), masked_select of a 0-d tensor."""
  a = np.arange(12.0).reshape(3, 4)
  t, tt = Tensor(a), torch.tensor(a)
  np.testing.assert_array_equal(t[torch.tensor([0, 2])].numpy(), tt[torch.tensor([0, 2])].numpy())
  np.testing.assert_array_equal((t * torch.ones(4, dtype=torch.float64)).numpy(), (tt * torch.ones(4, dtype=torch.float64)).numpy())
  written = Tensor(a.copy())
  written[1] = torch.full((4,), 7.0)
  assert written.numpy()[1].tolist() == [7.0] * 4
  assert t.to(torch.float32).dtype == dtypes.float32 and t.to(Tensor([1], dtype=dtypes.int16)).dtype == dtypes.int16
  assert Tensor(a.copy()).fill_(Tensor(2.5)).numpy().tolist() == tt.clone().fill_(torch.tensor(2.5)).numpy().tolist()
  np.testing.assert_array_equal(t.narrow(1, Tensor(1), 2).numpy(), tt.narrow(1, torch.tensor(1), 2).numpy())
  np.testing.assert_array_equal((t @ torch.eye(4, dtype=torch.float64)).numpy(), a)
  np.testing.assert_allclose(t.norm("nuc").item(), tt.norm("nuc").item(), rtol=1e-12)
  assert Tensor(0.5).masked_select(Tensor(True)).tolist() == torch.tensor(0.5).masked_select(torch.tensor(True)).tolist()
  with pytest.raises(ValueError, match="0-d tensor"): Tensor(a).fill_(Tensor([1.0, 2.0]))
  with pytest.raises(ValueError, match="rtol must be >= 0"): t.isclose(t, rtol=-1)
  with pytest.raises(TypeError, match="one of ddof, unbiased and correction"): t.std(unbiased=True, correction=0)


def test_torch_s_keyword_names_and_a_list_then_its_dim():
  """triu/tril(diagonal=), flip(dims=), cumsum/cumprod(dtype=), Tensor.cat([a, b], 1) and stack([a, b], 1), and the
  method's scaled_dot_product_attention(enable_gqa=True), as torch spells them."""
  a = np.arange(-6, 6).reshape(3, 4)
  t, tt = Tensor(a), torch.tensor(a)
  assert_as_torch(t.triu(diagonal=1), tt.triu(diagonal=1))
  assert_as_torch(t.tril(diagonal=-1), tt.tril(diagonal=-1))
  assert_as_torch(t.flip(dims=[0]), tt.flip(dims=[0]))
  assert_as_torch(t.flip(dims=(0, 1)), tt.flip(dims=(0, 1)))
  small = Tensor([1, 2, 100, 30], dtype=dtypes.int8)
  assert_as_torch(small.cumsum(0, dtype=dtypes.int8), torch.tensor([1, 2, 100, 30], dtype=torch.int8).cumsum(0, dtype=torch.int8))
  assert_as_torch(t.cumsum(dim=1, dtype=dtypes.float32), tt.cumsum(dim=1, dtype=torch.float32))
  assert_as_torch(t.cumprod(1, dtype=dtypes.float64), tt.cumprod(1, dtype=torch.float64))
  assert_as_torch(Tensor.cat([t, t], 1), torch.cat([tt, tt], 1))
  assert_as_torch(Tensor.stack([t, t], 1), torch.stack([tt, tt], 1))
  q, k = np.random.default_rng(4).standard_normal((2, 1, 4, 3, 5)).astype(np.float32)
  kv = k[:, :2]
  got = Tensor(q).scaled_dot_product_attention(Tensor(kv), Tensor(kv), enable_gqa=True)
  expected = torch.nn.functional.scaled_dot_product_attention(torch.tensor(q), torch.tensor(kv), torch.tensor(kv), enable_gqa=True)
  np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
  with pytest.raises(TypeError, match="both k=1 and diagonal=2"): t.triu(1, diagonal=2)
  with pytest.raises(TypeError, match="flip takes the axes"): t.flip()


@pytest.mark.parametrize("op", ["sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin"])
def test_values_and_indices_come_named_as_torch_s(op):
  a = np.array([[3.0, 1.0, 2.0, 1.0], [0.0, 5.0, 4.0, 5.0]], np.float32)
  call = {"sort": lambda t: t.sort(dim=1), "topk": lambda t: t.topk(2, dim=1), "kthvalue": lambda t: t.kthvalue(2, dim=1),
          "median": lambda t: t.median(dim=1), "nanmedian": lambda t: t.nanmedian(dim=1), "mode": lambda t: t.mode(dim=1),
          "cummax": lambda t: t.cummax(dim=1), "cummin": lambda t: t.cummin(dim=1)}[op]
  got, expected = call(Tensor(a)), call(torch.tensor(a))
  np.testing.assert_array_equal(got.values.numpy(), expected.values.numpy())
  np.testing.assert_array_equal(got.indices.numpy(), expected.indices.numpy())
  values, indices = got   # a tuple still
  assert values is got.values and indices is got[1]


def test_view_of_a_dtype_reads_the_bits_as_torch():
  values = np.array([1.0, -2.0, 0.5, np.inf], np.float32)
  for ours, theirs in ((dtypes.int32, torch.int32), (np.int32, torch.int32), (torch.int32, torch.int32)):
    np.testing.assert_array_equal(Tensor(values).view(ours).numpy(), torch.tensor(values).view(theirs).numpy())
  assert Tensor(values).view(2, 2).shape == (2, 2) and Tensor(values).view((4, 1)).shape == (4, 1)
  assert Tensor(values).view(torch.Size([2, 2])).shape == (2, 2)


@pytest.mark.parametrize("source, target", [("float32", "int8"), ("float32", "float16"), ("int8", "float32"), ("float32", "bfloat16"),
                                            ("bfloat16", "uint8"), ("bool", "int16"), ("float64", "uint8"), ("uint8", "float64")])
def test_view_of_a_dtype_of_another_item_size_resizes_the_last_dim_as_torch(source, target):
  """torch's view(dtype) of another item size: the last dim holds the same bytes as more or fewer elements."""
  base = torch.tensor([[1.5, -2.0, 3.0, 0.0, 1e-3, float("inf"), -0.0, 7.25]]).repeat(2, 1)
  if source == "bool": base = base > 0
  elif source in ("int8", "uint8"): base = torch.arange(-8, 8).reshape(2, 8) % 100
  theirs = base.to(getattr(torch, source))
  ours = Tensor(base.float().numpy() if source == "bfloat16" else theirs.numpy(), dtype=getattr(dtypes, source))
  got, expected = ours.view(getattr(dtypes, target)), theirs.view(getattr(torch, target))
  assert got.shape == tuple(expected.shape) and got.dtype == getattr(dtypes, target)
  np.testing.assert_array_equal(got.numpy(), expected.float().numpy() if target == "bfloat16" else expected.numpy())


def test_view_of_a_dtype_of_another_item_size_needs_a_last_dim_of_whole_elements():
  with pytest.raises(ValueError, match=r"shape \(3,\).*whole number of 8-byte"): Tensor([1.0, 2.0, 3.0]).view(dtypes.float64)
  with pytest.raises(ValueError, match=r"shape \(\)"): Tensor(1.0).view(dtypes.int8)
  with pytest.raises(RuntimeError, match="no gradient"): Tensor([1.0], requires_grad=True).view(dtypes.int8)
