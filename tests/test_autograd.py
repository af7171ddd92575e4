"""Autograd: requires_grad and its propagation, .grad after backward, accumulation, backward's errors, detach,
the no_grad / inference_mode / train modes, and the gradient (with the forward value) of every differentiable
op in API.md against torch (CPU, float64 on the same float32 values): unary ops and activations, binary ops
and pow, maximum / minimum / where / masked_fill / clip / lerp, reductions and the softmax family, movement
ops, triu / tril, shared subgraphs, and edge shapes (0-d, zero-size, size-1 broadcasting, strided views)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from nbgrad import Tensor, dtypes

# nbgrad computes in float32, torch in float64 on the same float32 values: float32 rounding of a few ops in a
# row stays well inside these
TOL = dict(rtol=1e-4, atol=1e-5)
SHAPE = (3, 4)   # most rows share one shape, so rows of one op family share compiled kernels


# --- input domains: (generator, shape) -> values ----------------------------------------------------------
def U(lo, hi): return lambda g, shape: g.uniform(lo, hi, shape)
def NORMAL(g, shape): return g.standard_normal(shape)
def NONZERO(g, shape): return g.uniform(0.3, 2.0, shape) * g.choice([-1.0, 1.0], shape)
def HALVES(g, shape): return g.integers(-3, 4, shape) * 0.5   # exact zeros among the values
def TIES(g, shape): return g.integers(-1, 2, shape) * 0.5    # three values: equal maxima in most rows
def POSITIVE(g, shape): return g.uniform(0.3, 3.0, shape)


def sample(shape, domain=NORMAL, seed=0) -> np.ndarray:
  return np.asarray(domain(np.random.default_rng(seed), shape), dtype=np.float32)


def as_tuple(out): return out if isinstance(out, tuple) else (out,)


def check_grads(fn, ref, inputs, tol=TOL):
  """fn on nbgrad leaves against ref (fn itself when None) on torch float64 leaves made of the same values:
  each output's shape and values, then the gradient of sum(out * w) for every input, with a random w so
  that each output element weighs differently. inputs: a list of (shape, domain)."""
  ref = ref or fn
  values = [sample(shape, domain, seed) for seed, (shape, domain) in enumerate(inputs)]
  ours = [Tensor(v, requires_grad=True) for v in values]
  theirs = [torch.tensor(v.astype(np.float64), requires_grad=True) for v in values]
  our_outs, their_outs = as_tuple(fn(*ours)), as_tuple(ref(*theirs))
  assert len(our_outs) == len(their_outs), (len(our_outs), len(their_outs))
  our_loss, their_loss = None, None
  for i, (out, expected) in enumerate(zip(our_outs, their_outs)):
    assert out.shape == tuple(expected.shape), f"output {i}: shape {out.shape}, expected {tuple(expected.shape)}"
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), err_msg=f"output {i}", **tol)
    w = sample(out.shape, NORMAL, seed=100 + i)
    our_term, their_term = (out * Tensor(w)).sum(), (expected * torch.from_numpy(w.astype(np.float64))).sum()
    our_loss = our_term if our_loss is None else our_loss + our_term
    their_loss = their_term if their_loss is None else their_loss + their_term
  our_loss.backward()
  their_loss.backward()
  for i, (leaf, expected) in enumerate(zip(ours, theirs)):
    assert leaf.grad is not None, f"input {i} got no gradient"
    assert leaf.grad.shape == leaf.shape and leaf.grad.dtype == dtypes.float32, (i, leaf.grad.shape, leaf.grad.dtype)
    np.testing.assert_allclose(leaf.grad.numpy(), expected.grad.numpy(), err_msg=f"gradient of input {i}", **tol)


def one_input(shape, domain=NORMAL): return [(shape, domain)]


def rows(table):
  """pytest params from rows (id, fn, ref, inputs)."""
  return [pytest.param(fn, ref, inputs, id=name) for name, fn, ref, inputs in table]


# --- 1. autograd semantics -------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def restore_modes():
  """A failing test of the mode flags must not leave them set for the tests after it."""
  saved = Tensor.training, Tensor.no_grad
  yield
  Tensor.training, Tensor.no_grad = saved


def test_requires_grad_default_and_explicit():
  x = sample(SHAPE)
  assert Tensor(x).requires_grad is None
  assert Tensor(x, requires_grad=True).requires_grad is True
  assert Tensor(x, requires_grad=False).requires_grad is False


# tinygrad's rule: True if any input requires grad, else None if any input is undecided, else False
PROPAGATION = [(True, None, True), (True, False, True), (None, None, None), (None, False, None), (False, False, False)]


@pytest.mark.parametrize("left,right,expected", PROPAGATION, ids=[f"{a}-{b}" for a, b, _ in PROPAGATION])
def test_requires_grad_propagates_to_results(left, right, expected):
  a, b = Tensor(sample(SHAPE), requires_grad=left), Tensor(sample(SHAPE, seed=1), requires_grad=right)
  assert (a * b).requires_grad is expected
  assert (b + a).sum().requires_grad is expected
  assert a.exp().requires_grad is left
  assert a.tanh().requires_grad is left and a.erf().requires_grad is left   # results carrying their derivative


def test_grad_after_backward_has_shape_dtype_and_values():
  x_val, w_val, v_val = sample(SHAPE), sample(SHAPE, seed=1), sample(SHAPE, seed=2)
  x, w, v = Tensor(x_val, requires_grad=True), Tensor(w_val), Tensor(v_val, requires_grad=False)
  (x * w * v).sum().backward()
  assert x.grad.shape == SHAPE and x.grad.dtype == dtypes.float32
  assert not x.grad.requires_grad
  np.testing.assert_allclose(x.grad.numpy(), w_val * v_val, **TOL)   # d/dx sum(x * w * v) = w * v
  assert w.grad is None and v.grad is None   # neither asked for a gradient


def test_gradient_accumulates_over_backward_calls():
  x_val, w_val, v_val = sample(SHAPE), sample(SHAPE, seed=1), sample(SHAPE, seed=2)
  x = Tensor(x_val, requires_grad=True)
  ref = torch.tensor(x_val.astype(np.float64), requires_grad=True)
  for xs, lib in ((x, Tensor), (ref, torch.tensor)):
    (xs.exp() * lib(w_val)).sum().backward()
    (xs.sin() * lib(v_val)).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy(), **TOL)


def test_backward_on_non_scalar_raises_naming_the_shape():
  x = Tensor(sample((2, 3)), requires_grad=True)
  with pytest.raises(RuntimeError, match=r"\(2, 3\)"):
    (x * 2).backward()


@pytest.mark.parametrize("requires_grad", [None, False])
def test_backward_of_a_tensor_with_no_graph_sets_only_its_own_grad_as_tinygrad(requires_grad):
  """tinygrad walks an empty graph (torch raises): the loss's own grad is 1, no input gets one."""
  x, n = Tensor(sample(SHAPE), requires_grad=requires_grad), Tensor([1, 2])
  loss = (x * 2).sum() + (n + n).mean()
  assert loss.backward() is loss
  np.testing.assert_array_equal(loss.grad.numpy(), 1.0)
  assert x.grad is None and n.grad is None


CUT_LOSSES = {   # losses that reach the tensor requiring grad only through ops without a gradient
  "lt": lambda x: (x < 0.5).sum(),
  "eq_float_mean": lambda x: (x == x.max()).float().mean(),
  "argmax_accuracy": lambda x: (x.argmax(1) == 1).float().mean(),
  "cast_int": lambda x: x.int().sum(),
  "mask_scaled": lambda x: ((x > 0).float() * 2).sum(),
  "mask_tanh": lambda x: (x > 0).float().tanh().sum(),
}


@pytest.mark.parametrize("loss", CUT_LOSSES.values(), ids=CUT_LOSSES.keys())
def test_backward_from_a_loss_no_gradient_reaches_raises_as_torch(loss):
  ref = torch.tensor(sample(SHAPE), requires_grad=True)
  with pytest.raises(RuntimeError):
    loss(ref).backward()
  x = Tensor(sample(SHAPE), requires_grad=True)
  with pytest.raises(RuntimeError, match="no gradient reaches"):
    loss(x).backward()
  assert x.grad is None
  (x * (x < 0.5)).sum().backward()   # a mask beside a differentiable path: the path carries the gradient
  (ref * (ref < 0.5)).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), ref.grad.numpy())


def test_in_place_op_on_a_mask_cut_from_the_graph_is_allowed():
  x = Tensor(sample(SHAPE), requires_grad=True)
  mask = x < 0
  mask |= x > 1
  np.testing.assert_array_equal(mask.numpy(), (sample(SHAPE) < 0) | (sample(SHAPE) > 1))


def test_backward_through_a_graph_already_used_raises_and_keeps_the_gradients():
  """As in torch: the first backward frees the graph; a second one through it would silently lose the
  contribution of the freed part, so it raises before touching any gradient."""
  x = Tensor(sample(SHAPE), requires_grad=True)
  hidden = x * 2
  first, second = hidden.sum(), (hidden * hidden).sum()
  first.backward()
  kept = x.grad.numpy()
  for loss in (second, first):
    with pytest.raises(RuntimeError, match="already used|used and freed"):
      loss.backward()
  np.testing.assert_array_equal(x.grad.numpy(), kept)
  np.testing.assert_array_equal(kept, np.full(SHAPE, 2.0, np.float32))


def test_backward_with_a_gradient_seeds_a_non_scalar_tensor_as_torch():
  """backward(gradient) is a vector-Jacobian product; retain_graph keeps the graph for a second backward."""
  x_val, seed_val = sample(SHAPE), sample(SHAPE, seed=1)
  x, ref = Tensor(x_val, requires_grad=True), torch.tensor(x_val.astype(np.float64), requires_grad=True)
  y, y_ref = x.sin() * x, ref.sin() * ref
  y.backward(Tensor(seed_val), retain_graph=True)
  y_ref.backward(torch.tensor(seed_val.astype(np.float64)), retain_graph=True)
  np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy(), **TOL)
  y.sum().backward()   # through the retained graph: accumulates
  y_ref.sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy(), **TOL)
  with pytest.raises(RuntimeError, match="used and freed"):
    y.sum().backward()
  s = Tensor(x_val[0, 0], requires_grad=True)
  (s * 3).backward(2.0)   # a scalar seed given as a Python number
  np.testing.assert_allclose(s.grad.numpy(), 6.0)


@pytest.mark.parametrize("seed, error", [(np.ones((4, 3), np.float32), ValueError), (np.ones(SHAPE, np.int32), TypeError)],
                         ids=["wrong_shape", "int_seed"])
def test_backward_with_a_bad_gradient_raises_and_computes_nothing(seed, error):
  x = Tensor(sample(SHAPE), requires_grad=True)
  y = x * 2
  with pytest.raises(error, match="backward\\(gradient\\)"):
    y.backward(Tensor(seed))
  assert x.grad is None
  y.backward(Tensor(np.ones(SHAPE, np.float32)))   # the graph was not used up
  np.testing.assert_array_equal(x.grad.numpy(), np.full(SHAPE, 2.0, np.float32))


def test_backward_after_an_in_place_write_into_a_kept_input_raises_as_torch():
  """Mul keeps x for w's gradient: writing into x after the forward would make the gradient read the new values."""
  w = Tensor(np.ones(3, np.float32), requires_grad=True)
  x = Tensor(np.array([1, 2, 3], np.float32)).realize()
  loss = (w * x).sum()
  x[0] = 100.0
  assert loss.item() == 6.0   # the forward still reads the values it was built from
  with pytest.raises(RuntimeError, match="written in place"):
    loss.backward()
  wt = torch.ones(3, requires_grad=True)
  xt = torch.tensor([1.0, 2.0, 3.0])
  lt = (wt * xt).sum()
  xt[0] = 100.0
  with pytest.raises(RuntimeError, match="inplace"):
    lt.backward()


def test_backward_after_an_in_place_write_into_an_input_no_gradient_reads():
  """Add keeps nothing: the write changes no gradient, and backward runs (as in torch)."""
  w = Tensor(np.ones(3, np.float32), requires_grad=True)
  x = Tensor(np.array([1, 2, 3], np.float32)).realize()
  loss = (w + x).sum()
  x[0] = 100.0
  loss.backward()
  np.testing.assert_array_equal(w.grad.numpy(), np.ones(3, np.float32))


@pytest.mark.parametrize("name", ["relu", "maximum", "minimum", "clip", "abs"])
def test_an_infinite_gradient_gives_the_losing_side_zero_as_torch(name):
  """The gradient is selected, not multiplied by a 0/1 mask: sqrt's infinite gradient at 0 must not turn the masked
  side into nan (0 * inf)."""
  ops = {"relu": lambda t, lib: t.relu(), "maximum": lambda t, lib: t.maximum(torch.zeros(()) if lib is torch else 0.0),
         "minimum": lambda t, lib: (-t).minimum(torch.zeros(()) if lib is torch else 0.0) * -1,
         "clip": lambda t, lib: t.clamp(0, 1) if lib is torch else t.clip(0, 1), "abs": lambda t, lib: t.abs() - 1}
  a = np.array([-1.0, 2.0, 0.5, 0.25], np.float32)   # none at clip's bounds, where the API splits the gradient
  x = Tensor(a, requires_grad=True)
  ops[name](x, None).sqrt().sum().backward()
  xt = torch.tensor(a, requires_grad=True)
  ops[name](xt, torch).sqrt().sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


def test_detach_cuts_the_graph():
  x_val = sample(SHAPE)
  x = Tensor(x_val, requires_grad=True)
  assert x.detach().requires_grad is False
  y = x.exp()
  (y.detach() * y).sum().backward()   # the detached factor is a constant: d/dx = exp(x) * exp(x)
  np.testing.assert_allclose(x.grad.numpy(), np.exp(2.0 * x_val.astype(np.float64)), **TOL)


def test_backward_from_a_result_made_under_inference_mode_raises_as_torch():
  """It keeps tinygrad's requires_grad, but no graph reaches x: backward() raised nothing and left x.grad None."""
  x = Tensor(sample(SHAPE), requires_grad=True)
  with Tensor.inference_mode(): loss = (x * x).sum()
  assert loss.requires_grad
  with pytest.raises(RuntimeError, match="no_grad or Tensor.inference_mode"): loss.backward()
  assert x.grad is None
  with pytest.raises(RuntimeError): (torch.tensor(sample(SHAPE)) * 2).sum().backward()   # torch: no graph, an error


def test_backward_inside_the_inference_mode_block_fills_nothing_as_tinygrad_s():
  """tinygrad's own tests call backward() of a result inside the block that made it without a graph: no gradient
  and no error."""
  x, w = Tensor(sample(SHAPE), requires_grad=True), Tensor(sample(SHAPE), requires_grad=True)
  with Tensor.inference_mode():
    loss = (x * w).relu().sum()
    assert loss.backward() is loss
  assert x.grad is None and w.grad is None and x.requires_grad and loss.grad.item() == 1.0   # its own, as tinygrad's

  @Tensor.inference_mode()
  def step(): (x * w).sum().backward()
  step()
  assert x.grad is None and w.grad is None


def test_a_parameter_made_under_inference_mode_trains_as_a_leaf():
  """Its first optimizer step must not take the detached update's requires_grad (its second step found no gradient)."""
  from nbgrad.nn import optim
  with Tensor.inference_mode(): w = Tensor.ones(3, requires_grad=True) * 0.5
  opt = optim.SGD([w], lr=0.1)
  with Tensor.train():
    for _ in range(2):
      opt.zero_grad()
      (w * w).sum().backward()
      opt.step()
  assert w.requires_grad and w.is_leaf
  np.testing.assert_allclose(w.numpy(), np.full(3, 0.32), rtol=1e-6)   # 0.5 - 0.1 * 1.0, then 0.4 - 0.1 * 0.8


def test_inference_mode_records_no_graph():
  x = Tensor(sample(SHAPE), requires_grad=True)
  assert Tensor.no_grad is False
  with Tensor.inference_mode():
    assert Tensor.no_grad is True
    y = x * 2
    with Tensor.inference_mode(False):
      assert Tensor.no_grad is False
      z = x * 3
    assert Tensor.no_grad is True
  assert Tensor.no_grad is False
  (y.sum() + z.sum()).backward()
  np.testing.assert_array_equal(x.grad.numpy(), np.full(SHAPE, 3.0, np.float32))   # only z's graph was recorded


def test_inference_mode_as_decorator():
  @Tensor.inference_mode()
  def doubled(t): return Tensor.no_grad, t * 2
  x = Tensor(sample(SHAPE), requires_grad=True)
  flag, y = doubled(x)
  assert flag is True and Tensor.no_grad is False
  y.sum().backward()
  assert x.grad is None


def test_no_grad_flag_set_directly():
  x = Tensor(sample(SHAPE), requires_grad=True)
  Tensor.no_grad = True
  try:
    y = x * 2
  finally:
    Tensor.no_grad = False
  y.sum().backward()
  assert x.grad is None


def test_train_as_context_manager_and_decorator():
  assert Tensor.training is False
  with Tensor.train():
    assert Tensor.training is True
    with Tensor.train(False):
      assert Tensor.training is False
    assert Tensor.training is True
  assert Tensor.training is False

  @Tensor.train()
  def in_training(): return Tensor.training
  assert in_training() is True and Tensor.training is False


@pytest.mark.parametrize("mode,flag", [(Tensor.train, "training"), (Tensor.inference_mode, "no_grad")],
                         ids=["train", "inference_mode"])
def test_mode_decorator_on_recursive_function(mode, flag):
  @mode()
  def flags_down_to(depth): return [getattr(Tensor, flag)] + (flags_down_to(depth - 1) if depth else [])
  assert flags_down_to(2) == [True, True, True]
  assert getattr(Tensor, flag) is False   # the outermost call restores the flag it found, not an inner one's


class Boom(Exception): pass


def _raise_in_train(): raise Boom
def _raise_in_inference(): raise Boom


def _run_in(mode):
  with mode: raise Boom


MODE_EXITS = {  # id -> (call that raises inside the mode, flag name)
  "train_with": (lambda: _run_in(Tensor.train()), "training"),
  "train_decorator": (Tensor.train()(_raise_in_train), "training"),
  "inference_with": (lambda: _run_in(Tensor.inference_mode()), "no_grad"),
  "inference_decorator": (Tensor.inference_mode()(_raise_in_inference), "no_grad"),
}


@pytest.mark.parametrize("case", list(MODE_EXITS))
def test_mode_flag_restored_after_exception(case):
  call, flag = MODE_EXITS[case]
  with pytest.raises(Boom):
    call()
  assert getattr(Tensor, flag) is False


# shared subgraphs: a node reached along several paths gets every path's contribution
def _diamond(x):
  a = x * 2
  return a.exp() * a.sin()


def _reused_intermediate(x, y):
  s = (x * y).sigmoid()
  return s * x + s * y + s


GRAPHS = [
  ("diamond", _diamond, None, one_input(SHAPE, U(-1, 1))),
  ("x_times_x", lambda x: x * x, None, one_input(SHAPE)),
  ("reused_intermediate", _reused_intermediate, None, [(SHAPE, NORMAL), (SHAPE, NORMAL)]),
  ("maximum_of_x_and_x", lambda x: x.maximum(x), lambda x: torch.maximum(x, x), one_input(SHAPE)),   # all ties
  ("comparison_mask_has_no_grad", lambda x: x * (x > 0), None, one_input(SHAPE)),
]


@pytest.mark.parametrize("fn,ref,inputs", rows(GRAPHS))
def test_graph_gradient(fn, ref, inputs):
  check_grads(fn, ref, inputs)


# --- 2. gradients of unary ops and activations -----------------------------------------------------------
MASK = np.random.default_rng(7).random(SHAPE) < 0.5   # condition of where / masked_fill
END = sample(SHAPE, seed=8)                            # end of lerp
# id -> nbgrad fn, torch reference (None: the same call works on a torch tensor), input domain
UNARY = [
  ("neg", lambda t: t.neg(), None, NORMAL),
  ("log", lambda t: t.log(), None, POSITIVE),
  ("log2", lambda t: t.log2(), None, POSITIVE),
  ("exp", lambda t: t.exp(), None, U(-3, 3)),
  ("exp2", lambda t: t.exp2(), None, U(-3, 3)),
  ("relu_zero_grad_at_0", lambda t: t.relu(), None, HALVES),
  ("sigmoid", lambda t: t.sigmoid(), None, U(-5, 5)),
  ("sqrt", lambda t: t.sqrt(), None, POSITIVE),
  ("rsqrt", lambda t: t.rsqrt(), None, POSITIVE),
  ("sin", lambda t: t.sin(), None, U(-4, 4)),
  ("cos", lambda t: t.cos(), None, U(-4, 4)),
  ("tan", lambda t: t.tan(), None, U(-1.2, 1.2)),
  ("square", lambda t: t.square(), None, NORMAL),
  ("abs_incl_0", lambda t: t.abs(), None, HALVES),   # torch and tinygrad: zero gradient at 0
  ("sign_zero_grad", lambda t: t.sign(), None, HALVES),
  ("reciprocal", lambda t: t.reciprocal(), None, NONZERO),
  ("tanh", lambda t: t.tanh(), None, U(-3, 3)),
  ("sinh", lambda t: t.sinh(), None, U(-3, 3)),
  ("cosh", lambda t: t.cosh(), None, U(-3, 3)),
  ("atanh", lambda t: t.atanh(), None, U(-0.9, 0.9)),
  ("asinh", lambda t: t.asinh(), None, U(-3, 3)),
  ("acosh", lambda t: t.acosh(), None, U(1.5, 4)),
  ("elu", lambda t: t.elu(), F.elu, NORMAL),
  ("elu_at_0", lambda t: t.elu(), F.elu, HALVES),   # alpha = 1: smooth at 0, slope 1 from both sides
  ("elu_alpha", lambda t: t.elu(0.5), lambda t: F.elu(t, 0.5), NORMAL),
  ("celu", lambda t: t.celu(), F.celu, NORMAL),
  ("celu_at_0", lambda t: t.celu(), F.celu, HALVES),   # alpha = 1: smooth at 0, slope 1
  ("celu_alpha", lambda t: t.celu(0.7), lambda t: F.celu(t, 0.7), NORMAL),
  ("swish", lambda t: t.swish(), F.silu, U(-4, 4)),
  ("silu", lambda t: t.silu(), F.silu, U(-4, 4)),
  ("relu6", lambda t: t.relu6(), F.relu6, U(-2, 8)),
  ("hardswish", lambda t: t.hardswish(), F.hardswish, U(-5, 5)),
  ("hardtanh", lambda t: t.hardtanh(), F.hardtanh, U(-2, 2)),
  ("hardtanh_bounds", lambda t: t.hardtanh(-0.5, 1.5), lambda t: F.hardtanh(t, -0.5, 1.5), U(-2, 2)),
  ("gelu", lambda t: t.gelu(), lambda t: F.gelu(t, approximate="tanh"), U(-4, 4)),
  ("quick_gelu", lambda t: t.quick_gelu(), lambda t: t * torch.sigmoid(1.702 * t), U(-4, 4)),
  ("leakyrelu", lambda t: t.leakyrelu(), F.leaky_relu, NORMAL),
  ("leakyrelu_slope", lambda t: t.leakyrelu(0.2), lambda t: F.leaky_relu(t, 0.2), NORMAL),
  ("mish", lambda t: t.mish(), F.mish, U(-4, 4)),
  ("softplus", lambda t: t.softplus(), F.softplus, U(-4, 4)),
  ("softplus_at_0", lambda t: t.softplus(), F.softplus, HALVES),   # smooth at 0: slope 1/2
  ("softplus_beta", lambda t: t.softplus(2), lambda t: F.softplus(t, beta=2), U(-4, 4)),
  ("softsign", lambda t: t.softsign(), F.softsign, NORMAL),
  # Python scalars on either side
  ("scalar_minus_x", lambda t: 2.5 - t, None, NORMAL),
  ("scalar_div_x", lambda t: 2.5 / t, None, NONZERO),
  # pow with a Python exponent: the special cases (2, 0.5, 0) and the general path, positive and negative bases
  ("pow_2", lambda t: t ** 2, None, NORMAL),
  ("pow_half", lambda t: t ** 0.5, None, POSITIVE),
  ("pow_fraction_positive_base", lambda t: t ** 2.5, None, POSITIVE),
  ("pow_negative_fraction_positive_base", lambda t: t ** -1.5, None, POSITIVE),
  ("pow_even_int_negative_base", lambda t: t ** 4, None, NONZERO),
  ("pow_odd_int_negative_base", lambda t: t ** 5, None, NONZERO),
  ("pow_negative_odd_int_negative_base", lambda t: t ** -3, None, NONZERO),
  ("pow_0_incl_zero_base", lambda t: t ** 0, None, HALVES),   # 0 ** 0 = 1, gradient 0 (torch and tinygrad)
  ("pow_int_at_zero_base", lambda t: t ** 4, None, HALVES),   # 4 * 0 ** 3 = 0 (torch; tinygrad squares twice)
  ("pow_tensor_int_exponents_negative_base", lambda t: t ** Tensor([2.0, 3.0, -1.0, 4.0]),
   lambda t: t ** torch.tensor([2.0, 3.0, -1.0, 4.0], dtype=torch.float64), NONZERO),
  ("reflected_pow_2", lambda t: 2 ** t, None, U(-3, 3)),
  ("reflected_pow_fraction", lambda t: 0.5 ** t, None, U(-3, 3)),
  # maximum / minimum / clip against constants, away from the bounds (where torch and tinygrad differ)
  ("maximum_scalar", lambda t: t.maximum(0.3), lambda t: torch.clamp(t, min=0.3), NORMAL),
  ("clip", lambda t: t.clip(-0.5, 0.5), lambda t: torch.clamp(t, -0.5, 0.5), NORMAL),
  ("clip_min_only", lambda t: t.clip(-0.5), lambda t: torch.clamp(t, min=-0.5), NORMAL),
  ("masked_fill", lambda t: t.masked_fill(Tensor(MASK), -1.5), lambda t: t.masked_fill(torch.from_numpy(MASK), -1.5), NORMAL),
  ("where_scalar_branch", lambda t: Tensor(MASK).where(t, 0.5), lambda t: torch.where(torch.from_numpy(MASK), t, 0.5), NORMAL),
  ("triu", lambda t: t.triu(), torch.triu, NORMAL),
  ("triu_k1", lambda t: t.triu(1), lambda t: torch.triu(t, 1), NORMAL),
  ("tril", lambda t: t.tril(), torch.tril, NORMAL),
  ("tril_k_minus1", lambda t: t.tril(-1), lambda t: torch.tril(t, -1), NORMAL),
]


@pytest.mark.parametrize("fn,ref,domain", [pytest.param(fn, ref, domain, id=name) for name, fn, ref, domain in UNARY])
def test_unary_gradient(fn, ref, domain):
  check_grads(fn, ref, [(SHAPE, domain)])


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_gradient_of_a_broadcast_half_tensor_sums_in_float32(name):
  """A broadcast's gradient sums over the broadcast dims in float32, as sum() and torch do: 2048 terms of 0.25 next
  to 512 lost every 0.25 when added in float16 (32768 instead of 33280)."""
  x = np.tile(np.array([512.0] + [0.25] * 31, np.float32), 64).reshape(2, 1024)
  b, tb = Tensor(np.ones((1, 1)), dtype=name, requires_grad=True), torch.ones((1, 1), dtype=getattr(torch, name), requires_grad=True)
  (b * Tensor(x, dtype=name)).sum().backward()
  (tb * torch.tensor(x, dtype=getattr(torch, name))).sum().backward()
  assert b.grad.dtype == b.dtype
  np.testing.assert_array_equal(b.grad.float().numpy(), tb.grad.float().numpy())


# inputs where the value is nan or infinite: the gradient is still torch's closed form (tinygrad's test_ops checks
# acosh at -300 to -297, and atanh at +-300)
EDGE_GRADIENTS = {"acosh": [-300.0, -1.0, 0.5, 1.0, 1.5, 300.0, 1e30], "atanh": [-300.0, -1.0, 0.0, 0.5, 1.0, 300.0],
                  "asinh": [-1e30, -300.0, 0.0, 1e-8, 300.0]}


@pytest.mark.parametrize("name", list(EDGE_GRADIENTS))
def test_inverse_hyperbolic_gradients_at_and_beyond_their_domain(name):
  values = np.array(EDGE_GRADIENTS[name], np.float32)
  x, tx = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  getattr(x, name)().sum().backward()
  getattr(tx, name)().sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-12, equal_nan=True)   # asinh(-1e30): 1e-30, torch 0


@pytest.mark.parametrize("name,fn,ref", [("celu", lambda t: t.celu(), torch.nn.functional.celu),
                                          ("celu_alpha", lambda t: t.celu(0.5), lambda t: torch.nn.functional.celu(t, 0.5)),
                                          ("elu", lambda t: t.elu(), torch.nn.functional.elu)])
def test_exponential_units_at_large_inputs_have_finite_gradients(name, fn, ref):
  values = np.array([90.0, 200.0, 1e30, -200.0], np.float32)   # exp(x / alpha) alone overflows to inf
  x, tx = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  fn(x).sum().backward()
  ref(tx).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_relu6_gradient_at_its_corners():
  # tinygrad's relu6 is relu(x) - relu(x - 6): relu's zero gradient at 0 makes the slope 0 at x = 0 and 1 at x = 6
  x = Tensor([-1.0, 0.0, 3.0, 6.0, 7.0], requires_grad=True)
  x.relu6().sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), np.array([0, 0, 1, 1, 0], np.float32))


# --- binary ops with broadcasting ------------------------------------------------------------------------
BROADCASTS = {"same": (SHAPE, SHAPE), "row": (SHAPE, (4,)), "col_by_row": ((3, 1), (1, 4)), "scalar_tensor": ((), SHAPE)}
# each op on equal shapes and on one broadcast pattern (a broadcast input's gradient is summed over the broadcast axes)
ARITHMETIC = {"add": (lambda a, b: a + b, "row"), "sub": (lambda a, b: a - b, "col_by_row"),
              "mul": (lambda a, b: a * b, "scalar_tensor"), "div": (lambda a, b: a / b, "row")}


def _arithmetic_rows():
  table = []
  for op_name, (op, broadcast) in ARITHMETIC.items():
    divisor = NONZERO if op_name == "div" else NORMAL
    for shape_name in ("same", broadcast):
      left, right = BROADCASTS[shape_name]
      table.append((f"{op_name}-{shape_name}", op, None, [(left, NORMAL), (right, divisor)]))
  return table


BINARY = _arithmetic_rows() + [
  ("pow_tensor_tensor", lambda a, b: a ** b, None, [(SHAPE, POSITIVE), (SHAPE, U(-2, 2))]),
  ("maximum", lambda a, b: a.maximum(b), torch.maximum, [(SHAPE, NORMAL), (SHAPE, NORMAL)]),
  ("minimum", lambda a, b: a.minimum(b), torch.minimum, [(SHAPE, NORMAL), (SHAPE, NORMAL)]),
  # ties split the gradient evenly between both inputs (API.md; torch does the same)
  ("maximum_ties", lambda a, b: a.maximum(b), torch.maximum, [(SHAPE, TIES), (SHAPE, TIES)]),
  ("minimum_ties", lambda a, b: a.minimum(b), torch.minimum, [(SHAPE, TIES), (SHAPE, TIES)]),
  ("where", lambda a, b: Tensor(MASK).where(a, b), lambda a, b: torch.where(torch.from_numpy(MASK), a, b),
   [(SHAPE, NORMAL), (SHAPE, NORMAL)]),
  ("where_broadcast", lambda a, b: Tensor(MASK[:, :1]).where(a, b), lambda a, b: torch.where(torch.from_numpy(MASK[:, :1]), a, b),
   [((1, 4), NORMAL), ((3, 1), NORMAL)]),
  ("lerp", lambda a, b: a.lerp(b, 0.25), lambda a, b: torch.lerp(a, b, 0.25), [(SHAPE, NORMAL), (SHAPE, NORMAL)]),
  ("lerp_tensor_weight", lambda a, b, w: a.lerp(b, w), torch.lerp, [(SHAPE, NORMAL), (SHAPE, NORMAL), (SHAPE, U(0, 1))]),
  # gradients 1 and -floor(a / b), as torch.remainder's
  ("mod", lambda a, b: a % b, torch.remainder, [(SHAPE, U(-20, 20)), ((4,), U(0.5, 3))]),
]


@pytest.mark.parametrize("fn,ref,inputs", rows(BINARY))
def test_binary_gradient(fn, ref, inputs):
  check_grads(fn, ref, inputs)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_and_minimum_with_nan_give_both_inputs_the_gradient_as_torch(op):
  nan = float("nan")
  a, b = [nan, 1.0, 2.0, 3.0, -1.0], [1.0, nan, 2.0, 1.0, nan]
  ours = [Tensor(v, requires_grad=True) for v in (a, b)]
  theirs = [torch.tensor(v, requires_grad=True) for v in (a, b)]
  getattr(ours[0], op)(ours[1]).sum().backward()
  getattr(torch, op)(*theirs).sum().backward()
  for mine, reference in zip(ours, theirs): np.testing.assert_array_equal(mine.grad.numpy(), reference.grad.numpy())


def test_pow_zero_to_the_zero():
  """0 ** 0 is 1 for tensor operands too."""
  out = Tensor([0.0, 0.0, 2.0, -2.0]) ** Tensor([0.0, 1.0, 0.0, 0.0])
  np.testing.assert_array_equal(out.numpy(), np.array([1.0, 0.0, 1.0, 1.0], np.float32))


# --- reductions and the softmax family -------------------------------------------------------------------
REDUCE = [
  ("sum_all", lambda t: t.sum(), None, one_input(SHAPE)),
  ("sum_axes_tuple", lambda t: t.sum((0, 1)), None, one_input(SHAPE)),
  ("sum_axis1_keepdim", lambda t: t.sum(1, keepdim=True), None, one_input(SHAPE)),
  ("mean_axis0_keepdim", lambda t: t.mean(0, keepdim=True), None, one_input(SHAPE)),
  ("max_all", lambda t: t.max(), lambda t: t.amax(), one_input(SHAPE)),
  ("max_axis1", lambda t: t.max(1), lambda t: t.amax(1), one_input(SHAPE)),
  # ties: the gradient is split evenly among the maxima (API.md; torch's amax/amin and full max do the same)
  ("max_all_ties", lambda t: t.max(), None, one_input(SHAPE, TIES)),
  ("max_axis1_ties", lambda t: t.max(1), lambda t: t.amax(1), one_input(SHAPE, TIES)),
  ("max_axes_tuple_keepdim_ties", lambda t: t.max((0, 1), keepdim=True), lambda t: t.amax((0, 1), keepdim=True),
   one_input(SHAPE, TIES)),
  ("min_axis_neg1_ties", lambda t: t.min(-1), lambda t: t.amin(-1), one_input(SHAPE, TIES)),
  ("prod_all", lambda t: t.prod(), None, one_input(SHAPE, NONZERO)),
  ("prod_axis1_keepdim", lambda t: t.prod(1, keepdim=True), None, one_input(SHAPE, NONZERO)),
  ("prod_axis0_with_zeros", lambda t: t.prod(0), None, one_input(SHAPE, HALVES)),
  ("var_axis1", lambda t: t.var(1), None, one_input(SHAPE)),
  ("std_axis0_keepdim_correction0", lambda t: t.std(0, keepdim=True, correction=0), None, one_input(SHAPE)),
  ("softmax", lambda t: t.softmax(), lambda t: t.softmax(-1), one_input(SHAPE)),
  ("log_softmax", lambda t: t.log_softmax(), lambda t: t.log_softmax(-1), one_input(SHAPE)),
  ("logsumexp_axis_neg1_keepdim", lambda t: t.logsumexp(-1, keepdim=True), None, one_input(SHAPE)),
]


@pytest.mark.parametrize("fn,ref,inputs", rows(REDUCE))
def test_reduce_gradient(fn, ref, inputs):
  check_grads(fn, ref, inputs)


# --- movement ops ----------------------------------------------------------------------------------------
SHAPE3 = (2, 3, 4)

MOVEMENT = [
  ("reshape", lambda t: t.reshape(4, 6), None, one_input(SHAPE3)),
  ("reshape_minus1", lambda t: t.reshape(-1), None, one_input(SHAPE3)),
  ("view", lambda t: t.view(6, 4), None, one_input(SHAPE3)),
  ("permute", lambda t: t.permute(2, 0, 1), None, one_input(SHAPE3)),
  ("transpose", lambda t: t.transpose(0, 2), None, one_input(SHAPE3)),
  ("flatten", lambda t: t.flatten(1), None, one_input(SHAPE3)),
  ("unflatten", lambda t: t.unflatten(2, (2, 2)), None, one_input(SHAPE3)),
  ("expand", lambda t: t.expand(2, 3, 4), None, one_input((3, 1))),
  ("pad", lambda t: t.pad(((1, 2), (0, 1))), lambda t: F.pad(t, (0, 1, 1, 2)), one_input(SHAPE)),
  ("pad_value", lambda t: t.pad(((1, 0), (2, 1)), value=1.5), lambda t: F.pad(t, (2, 1, 1, 0), value=1.5), one_input(SHAPE)),
  ("pad_negative", lambda t: t.pad(((-1, 1), (2, -2))), lambda t: F.pad(t, (2, -2, -1, 1)), one_input(SHAPE)),
  ("pad2d", lambda t: t.pad2d((1, 0, 0, 2)), lambda t: F.pad(t, (1, 0, 0, 2)), one_input(SHAPE)),
  ("shrink", lambda t: t.shrink((None, (1, 3), (0, 2))), lambda t: t[:, 1:3, 0:2], one_input(SHAPE3)),
  ("flip0", lambda t: t.flip(0), None, one_input(SHAPE)),
  ("flip_both", lambda t: t.flip((0, 1)), None, one_input(SHAPE)),
  ("index_steps", lambda t: t[::2, 1:], None, one_input((5, 6))),
  ("index_negative_steps", lambda t: t[::-1, ::-2], lambda t: t.flip((0, 1))[:, ::2], one_input((5, 6))),
  ("index_int_and_step", lambda t: t[1, ::3], None, one_input((5, 6))),
  ("index_none_ellipsis_int", lambda t: t[None, ..., 2], None, one_input(SHAPE3)),
  ("index_negative_int", lambda t: t[-1, 1:-1], None, one_input(SHAPE3)),
  ("index_same_element_twice", lambda t: t[1:3] + t[2:4], None, one_input((5, 6))),
  ("squeeze", lambda t: t.squeeze(1), None, one_input((3, 1, 4))),
  ("squeeze_all", lambda t: t.squeeze(), None, one_input((3, 1, 4, 1))),
  ("unsqueeze", lambda t: t.unsqueeze(-1), None, one_input(SHAPE)),
  ("repeat_new_dim", lambda t: t.repeat(2, 1, 3), None, one_input(SHAPE)),
  ("cat_dim0", lambda a, b: a.cat(b), lambda a, b: torch.cat([a, b]), [((2, 4), NORMAL), (SHAPE, NORMAL)]),
  ("cat_dim1_three", lambda a, b, c: a.cat(b, c, dim=1), lambda a, b, c: torch.cat([a, b, c], dim=1),
   [((3, 2), NORMAL), (SHAPE, NORMAL), ((3, 1), NORMAL)]),
  ("cat_same_tensor_twice", lambda a: a.cat(a, dim=-1), lambda a: torch.cat([a, a], dim=-1), one_input(SHAPE)),
  ("stack", lambda a, b: a.stack(b), lambda a, b: torch.stack([a, b]), [(SHAPE, NORMAL), (SHAPE, NORMAL)]),
  ("split_sizes", lambda t: t.split([1, 3], dim=1), None, one_input(SHAPE)),
  ("split_int", lambda t: t.split(2), None, one_input((5, 6))),
  ("chunk", lambda t: tuple(t.chunk(3, dim=1)), None, one_input((5, 6))),
  # more slices than one fused kernel takes: their gradients are joined along the sliced dim (zeros between)
  ("many_column_slices_with_gaps", lambda t: t[:, 1:20:2].unsqueeze(0).split(1, dim=2), None, one_input((3, 24))),
  ("rnn_steps", lambda x, w: _rnn(x, w, lambda h: h.tanh()), lambda x, w: _rnn(x, w, torch.tanh),
   [((2, 12, 3), NORMAL), ((3, 3), U(-0.5, 0.5))]),
  # overlapping windows and slices across two dims are added as padded tensors
  ("many_overlapping_windows", lambda t: tuple(t[i:i + 3] for i in range(10)), None, one_input((12, 2))),
  ("many_slices_in_two_dims", lambda t: tuple(t[i, 1:3] for i in range(10)), None, one_input((10, 4))),
  ("many_repeated_slices", lambda t: tuple(t[2:4] * i for i in range(10)), None, one_input((6, 2))),
]


def _rnn(x, w, tanh):
  """A recurrence over x's dim 1, slice by slice, as an RNN's Python loop over time steps."""
  h = x[:, 0] * 0
  for t in range(x.shape[1]): h = tanh(x[:, t] + h @ w)
  return h


@pytest.mark.parametrize("fn,ref,inputs", rows(MOVEMENT))
def test_movement_gradient(fn, ref, inputs):
  check_grads(fn, ref, inputs)


# --- 3. edge shapes: 0-d, zero-size, size-1 axes, strided views of a realized tensor -----------------------
EDGES = [
  ("0d_exp", lambda t: t.exp(), None, one_input(())),
  ("0d_mul", lambda a, b: a * b, None, [((), NORMAL), ((), NORMAL)]),
  ("0d_times_matrix", lambda a, b: a * b, None, [((), NORMAL), (SHAPE, NORMAL)]),
  ("0d_sum", lambda t: t.sum(), None, one_input(())),
  ("0d_max", lambda t: t.max(), None, one_input(())),
  ("0d_reshape", lambda t: t.reshape(1, 1), None, one_input(())),
  ("0d_expand", lambda t: t.expand(3, 4), None, one_input(())),
  ("empty_exp", lambda t: t.exp(), None, one_input((0, 4))),
  ("empty_mul_broadcast", lambda a, b: a * b, None, [((0, 4), NORMAL), ((4,), NORMAL)]),
  ("empty_sum_axis0", lambda t: t.sum(0), None, one_input((0, 4))),
  ("empty_sum_all", lambda t: t.sum(), None, one_input((0, 4))),
  ("empty_max_axis1", lambda t: t.max(1), lambda t: t.amax(1), one_input((0, 4))),
  ("empty_softmax", lambda t: t.softmax(-1), None, one_input((0, 4))),
  ("empty_cat", lambda a, b: a.cat(b), lambda a, b: torch.cat([a, b]), [((0, 4), NORMAL), (SHAPE, NORMAL)]),
  ("size1_broadcast_both", lambda a, b: a * b, None, [((1, 4), NORMAL), ((3, 1), NORMAL)]),
  ("size1_sum_keepdim", lambda t: t.sum(1, keepdim=True), None, one_input((3, 1, 4))),
  ("size1_max_axis", lambda t: t.max(1), lambda t: t.amax(1), one_input((3, 1, 4))),
  # the three copies tie for each column's max: their thirds add back up to the whole gradient
  ("size1_expand_then_reduce", lambda t: t.expand(3, 4).max(0), lambda t: t.expand(3, 4).amax(0), one_input((1, 4))),
  ("transposed_exp", lambda t: t.T.exp(), None, one_input((4, 3))),
  ("sliced_mul", lambda a, b: a[::2, 1:5] * b, None, [((6, 6), NORMAL), (SHAPE, NORMAL)]),
  ("permuted_sum", lambda t: t.permute(2, 0, 1).sum(1), None, one_input(SHAPE3)),
  ("sliced_sum", lambda t: t[1:, ::2].sum(1), None, one_input((4, 8))),
]


@pytest.mark.parametrize("fn,ref,inputs", rows(EDGES))
def test_edge_shape_gradient(fn, ref, inputs):
  check_grads(fn, ref, inputs)


def test_grad_of_zero_size_leaf_is_empty_array():
  x = Tensor(np.zeros((0, 4), np.float32), requires_grad=True)
  (x.exp() * 2).sum().backward()
  grad = x.grad.numpy()
  assert grad.shape == (0, 4) and grad.dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_division_gradient_past_the_range_of_the_divisors_square(dtype):
  """d(x/y)/dy = -(x/y)/y: y*y overflows for |y| > 255 in half and for |y| > 1.8e19 in float32."""
  big = 300.0 if dtype == np.float16 else 1e25
  xs, ys = np.array([1.0, 1.0, 2.0], dtype), np.array([big, -big, 2.0], dtype)
  x, y = Tensor(xs, requires_grad=True), Tensor(ys, requires_grad=True)
  tx, ty = torch.tensor(xs, requires_grad=True), torch.tensor(ys, requires_grad=True)
  (x / y).sum().backward()
  (tx / ty).sum().backward()
  for got, want in ((x.grad, tx.grad), (y.grad, ty.grad)):
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.double().numpy(), rtol=2e-3 if dtype == np.float16 else 1e-6)


def test_pow_of_a_negative_base_to_a_fraction_has_nan_gradients_as_torch():
  bases, exponents = np.array([-2.0, 2.0, -28.0], np.float32), np.array([0.5, 0.5, 0.2], np.float32)
  b, e = Tensor(bases, requires_grad=True), Tensor(exponents, requires_grad=True)
  tb, te = torch.tensor(bases, requires_grad=True), torch.tensor(exponents, requires_grad=True)
  (b ** e).sum().backward()
  (tb ** te).sum().backward()
  np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6)   # nan where torch has nan
  np.testing.assert_allclose(e.grad.numpy(), te.grad.numpy(), rtol=1e-6)



def test_relu_gradient_at_special_values_matches_torch():
  """0 at 0 and below, 1 above, and the gradient passes through nan as in torch."""
  values = np.array([-np.inf, -1.0, -0.0, 0.0, 1e-30, 1.0, np.inf, np.nan], np.float32)
  x, tx = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  x.relu().sum().backward()
  torch.relu(tx).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("axis,keepdim,correction", [(1, False, 1), (0, True, 0), (None, False, 1)])
def test_std_gradient_where_nothing_deviates_is_zero_as_torch(axis, keepdim, correction):
  values = np.array([[2.0, 2.0, 2.0, 2.0], [1.0, -1.0, 0.5, 3.0], [0.0, 0.0, 0.0, 0.0]], np.float32)
  if axis is None: values = np.full((3, 4), 1.5, np.float32)
  x, tx = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  x.std(axis, keepdim=keepdim, correction=correction).sum().backward()
  tx.std(axis, keepdim=keepdim, correction=correction).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_softmax_family_gradients_do_not_go_through_the_shift(name):
  """The max subtracted for stability cancels out; its gradient is exactly 0 (sent through it, it left ~2e-7 on each
  row's maximum, 8% of log_softmax's gradient on inputs of 0.01)."""
  x = np.random.default_rng(21).uniform(1e-6, 1e-2, (64, 100)).astype(np.float32)
  w = np.random.default_rng(22).standard_normal((64, 100) if name != "logsumexp" else (64,)).astype(np.float32)
  nx, tx = Tensor(x, requires_grad=True), torch.tensor(x, dtype=torch.float64, requires_grad=True)
  (getattr(nx, name)(-1) * Tensor(w)).sum().backward()
  (getattr(torch, name)(tx, -1) * torch.tensor(w, dtype=torch.float64)).sum().backward()
  want = tx.grad.numpy()
  # 10-65x less than the leak was. logsumexp's gradient is softmax * w, about 0.02 here: float32's rounding of a
  # row's 100-term sum moves it by up to about 5e-7 of that (seen once: 4.5e-7), still 9x less than the leak
  scale = 1e-6 if name == "logsumexp" else 2.5e-7
  np.testing.assert_allclose(nx.grad.numpy(), want, rtol=0, atol=scale * np.abs(want).max())


def test_no_gradient_flows_through_a_cast_to_int_or_bool():
  """As in torch, where int tensors cannot require grad (through the cast it came back truncated: 1.5 gave 2)."""
  x = Tensor([1.5, -2.0], requires_grad=True)
  (x.cast(dtypes.int32) * x + x.cast(dtypes.bool) * x + x.cast(dtypes.float16) * x).sum().backward()
  tx = torch.tensor([1.5, -2.0], requires_grad=True)
  (tx.detach().to(torch.int32) * tx + tx.detach().to(torch.bool) * tx + tx.to(torch.float16) * tx).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())

POW_SPECIAL_BASES = [-0.0, 0.0, -1.0, 1.0, -2.5, 2.5, -np.inf, np.inf, np.nan, 0.5, -0.5]
POW_SPECIAL_EXPONENTS = [-3.0, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, np.inf, -np.inf, np.nan]


def test_pow_of_tensors_at_special_values_matches_torch_forward_and_backward():
  """Every pair of special bases and exponents: values bit for bit (the sign of -0 ** 3 too), and torch's gradients
  e * b ** (e - 1) (0 where e == 0) and b ** e * log(b) (0 where b == 0 <= e), nan and inf where torch has them."""
  grid = np.array(np.meshgrid(POW_SPECIAL_BASES, POW_SPECIAL_EXPONENTS)).reshape(2, -1).astype(np.float32)
  b, e = Tensor(grid[0], requires_grad=True), Tensor(grid[1], requires_grad=True)
  tb, te = torch.tensor(grid[0], requires_grad=True), torch.tensor(grid[1], requires_grad=True)
  out, want = b ** e, tb ** te
  got, expected = out.numpy(), want.detach().numpy()
  np.testing.assert_array_equal(got, expected)
  numbers = ~np.isnan(expected)   # a nan's sign bit is not part of the result
  np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(expected[numbers]))
  out.sum().backward()
  want.sum().backward()
  np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6)
  np.testing.assert_allclose(e.grad.numpy(), te.grad.numpy(), rtol=1e-6)


def test_assign_replaces_the_gradient_graph_as_torch_copy():
  """y.assign(v) leaves y's history (its gradient flowed through the overwritten values), and a value that requires
  grad brings its own graph along (it was dropped); a parameter's update keeps it a leaf."""
  x, tx = Tensor([1.0, -2.0, 3.0], requires_grad=True), torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
  y, ty = (x * 1).contiguous(), tx * 1
  y.assign(Tensor([7.0, 7.0, 7.0]))
  ty.copy_(torch.tensor([7.0, 7.0, 7.0]))
  (y * x).sum().backward()
  (ty * tx).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())

  p, z, w = Tensor([5.0, 5.0], requires_grad=True), Tensor([1.0, 2.0], requires_grad=True), Tensor([0.0, 0.0])
  tp, tz, tw = torch.tensor([5.0, 5.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True), torch.zeros(2)
  w.assign(z * 2)
  tw.copy_(tz * 2)
  (w * 3 * p).sum().backward()
  (tw * 3 * tp).sum().backward()
  np.testing.assert_array_equal(z.grad.numpy(), tz.grad.numpy())
  np.testing.assert_array_equal(p.grad.numpy(), tp.grad.numpy())

  leaf = Tensor([1.0, 2.0], requires_grad=True)
  leaf.assign(leaf - 0.5 * Tensor([1.0, 1.0]))
  assert leaf.requires_grad and leaf._ctx is None
  (leaf * leaf).sum().backward()
  np.testing.assert_array_equal(leaf.grad.numpy(), [1.0, 3.0])


def test_assign_into_a_view_of_a_computed_tensor_that_requires_grad_raises():
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  y = (x * 1).realize()
  with pytest.raises(NotImplementedError, match=r"shape \(3,\) computed from tensors that require grad"):
    y[0:1].assign(Tensor([10.0]))
  np.testing.assert_array_equal(y.numpy(), [1.0, 2.0, 3.0])
