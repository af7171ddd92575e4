"""nbgrad.nn.RMSNorm and nbgrad.nn.LSTMCell against torch.nn (CPU): torch's module gets the nbgrad layer's
parameters, then outputs and the gradients of the inputs and of every parameter are compared; initialization,
state dicts, dtypes, shapes and bad input."""
import math
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes, nn
from nbgrad.nn.state import get_parameters, get_state_dict


def rand(*shape, seed=0, dtype=np.float32):
  return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def copy_into(ours, theirs, names):
  with torch.no_grad():
    for name in names:
      if getattr(ours, name) is not None: getattr(theirs, name).copy_(torch.from_numpy(getattr(ours, name).numpy()))


# ---- RMSNorm: (id, constructor arguments, torch's, input shape, input dtype)
RMSNORMS = [
  ("last_axis", (6,), {}, (3, 4, 6), np.float32),
  ("two_axes", ((4, 6),), {}, (2, 4, 6), np.float32),
  ("eps_no_affine", (6,), {"eps": 1e-2, "elementwise_affine": False}, (3, 6), np.float32),
  ("float64", (5,), {}, (2, 5), np.float64),
  ("one_dim_of_size_1", (1,), {}, (4, 1), np.float32),
  ("vector", (6,), {}, (6,), np.float32),
  ("empty_batch", (6,), {}, (0, 6), np.float32),
]


@pytest.mark.parametrize("args, kwargs, shape, dtype", [row[1:] for row in RMSNORMS], ids=[row[0] for row in RMSNORMS])
def test_rmsnorm_as_torch(args, kwargs, shape, dtype):
  ours = nn.RMSNorm(*args, **kwargs)
  theirs = torch.nn.RMSNorm(args[0], eps=kwargs.get("eps", 1e-6), elementwise_affine=kwargs.get("elementwise_affine", True))
  if dtype == np.float64: theirs = theirs.double()
  if ours.weight is not None:
    ours.weight = Tensor(rand(*ours.weight.shape, seed=1, dtype=dtype) * 0.5 + 1)   # float64 as torch's double()
    ours.weight.requires_grad = True
    copy_into(ours, theirs, ["weight"])
  x, out_grad = rand(*shape, seed=2, dtype=dtype), rand(*shape, seed=3, dtype=dtype)
  mine_x, their_x = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
  out, expected = ours(mine_x), theirs(their_x)
  assert out.shape == tuple(expected.shape) and out.dtype == dtypes.from_np(np.dtype(dtype))
  tol = 1e-12 if dtype == np.float64 else 1e-5
  np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=tol, atol=tol)
  (out * Tensor(out_grad)).sum().backward()
  (expected * torch.from_numpy(out_grad)).sum().backward()
  np.testing.assert_allclose(mine_x.grad.numpy(), their_x.grad.numpy(), rtol=tol, atol=tol)
  if ours.weight is not None: np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=tol, atol=tol)


def test_rmsnorm_starts_at_ones_and_lists_its_weight():
  layer = nn.RMSNorm(4)
  assert layer.weight.numpy().tolist() == [1.0] * 4 and layer.eps == 1e-6
  assert list(get_state_dict(layer)) == ["weight"] and len(get_parameters(nn.RMSNorm(4, elementwise_affine=False))) == 0


def test_rmsnorm_of_half_types_computes_in_float32():
  """x^2 of float16 overflows from 256 on: the mean is taken in float32, as torch's, and rounded once."""
  x = np.array([[300.0, -400.0, 2.0]], np.float32)
  out = nn.RMSNorm(3, elementwise_affine=False)(Tensor(x).cast(dtypes.float16))
  assert out.dtype == dtypes.float16
  expected = torch.nn.functional.rms_norm(torch.tensor(x), (3,), eps=1e-6).half().float().numpy()
  np.testing.assert_array_equal(out.cast(dtypes.float32).numpy(), expected)


def test_rmsnorm_refuses_an_input_of_other_last_dims():
  with pytest.raises(ValueError, match=r"RMSNorm over \(4,\) got an input of shape \(2, 3\)"): nn.RMSNorm(4)(Tensor.zeros(2, 3))


# ---- LSTMCell
def lstm_pair(input_size, hidden_size, bias=True, double=False):
  ours, theirs = nn.LSTMCell(input_size, hidden_size, bias), torch.nn.LSTMCell(input_size, hidden_size, bias)
  if double:
    theirs = theirs.double()
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
      if getattr(ours, name) is not None: setattr(ours, name, getattr(ours, name).cast(dtypes.float64))
  copy_into(ours, theirs, ["weight_ih", "weight_hh", "bias_ih", "bias_hh"])
  return ours, theirs


# (id, input_size, hidden_size, bias, batch shape of x (() for a single one), whether hc is given, float64)
LSTMS = [
  ("batch", 3, 5, True, (4,), False, False),
  ("given_state", 3, 5, True, (2,), True, False),
  ("no_bias", 4, 2, False, (3,), True, False),
  ("single_input", 3, 4, True, (), True, False),
  ("hidden_size_1", 2, 1, True, (3,), False, False),
  ("float64", 3, 5, True, (2,), True, True),
]


@pytest.mark.parametrize("input_size, hidden_size, bias, batch, given, double", [row[1:] for row in LSTMS], ids=[row[0] for row in LSTMS])
def test_lstm_cell_steps_and_gradients_as_torch(input_size, hidden_size, bias, batch, given, double):
  """Three steps, each feeding the last (h, c) back, and the gradients of a weighted sum of every h and the last c
  to the inputs, the first state and every weight."""
  dtype = np.float64 if double else np.float32
  ours, theirs = lstm_pair(input_size, hidden_size, bias, double)
  names = [n for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh") if getattr(ours, n) is not None]
  for name in names: getattr(ours, name).requires_grad = True
  xs = [rand(*batch, input_size, seed=10 + step, dtype=dtype) for step in range(3)]
  mine_xs, their_xs = [Tensor(x, requires_grad=True) for x in xs], [torch.tensor(x, requires_grad=True) for x in xs]
  start = [rand(*batch, hidden_size, seed=20 + i, dtype=dtype) for i in range(2)]
  mine_start, their_start = [Tensor(s, requires_grad=True) for s in start], [torch.tensor(s, requires_grad=True) for s in start]
  mine_state, their_state = (tuple(mine_start) if given else None), (tuple(their_start) if given else None)
  mine_loss, their_loss = 0, 0
  for step, (mine_x, their_x) in enumerate(zip(mine_xs, their_xs)):
    mine_state, their_state = ours(mine_x, mine_state), theirs(their_x, their_state)
    weights = rand(*batch, hidden_size, seed=30 + step, dtype=dtype)
    tol = 1e-12 if double else 1e-5
    for mine, their in zip(mine_state, their_state):
      assert mine.shape == tuple(their.shape) and mine.dtype == dtypes.from_np(np.dtype(dtype))
      np.testing.assert_allclose(mine.numpy(), their.detach().numpy(), rtol=tol, atol=tol)
    mine_loss = mine_loss + (mine_state[0] * Tensor(weights)).sum()
    their_loss = their_loss + (their_state[0] * torch.from_numpy(weights)).sum()
  (mine_loss + mine_state[1].sum()).backward()
  (their_loss + their_state[1].sum()).backward()
  leaves = list(zip(mine_xs, their_xs)) + (list(zip(mine_start, their_start)) if given else [])
  leaves += [(getattr(ours, n), getattr(theirs, n)) for n in names]
  for mine, their in leaves: np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), rtol=tol * 10, atol=tol * 10)


def test_lstm_cell_weights_as_torch_lays_them_out():
  cell = nn.LSTMCell(3, 5)
  state = get_state_dict(cell)
  assert list(state) == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
  assert [t.shape for t in state.values()] == [(20, 3), (20, 5), (20,), (20,)]
  assert get_parameters(cell) == list(state.values())
  bound = 1 / math.sqrt(5)
  for t in state.values():
    values = t.numpy()
    assert values.dtype == np.float32 and np.abs(values).max() <= bound and np.abs(values).max() > bound / 2
  assert list(get_state_dict(nn.LSTMCell(3, 5, bias=False))) == ["weight_ih", "weight_hh"]
  torch_cell = torch.nn.LSTMCell(3, 5)   # a torch state dict loads as is
  nn.state.load_state_dict(cell, {k: Tensor(v.detach().numpy()) for k, v in torch_cell.state_dict().items()})
  np.testing.assert_array_equal(cell.weight_hh.numpy(), torch_cell.weight_hh.detach().numpy())


def test_lstm_cell_state_defaults_to_zeros_and_takes_numpy_input():
  cell = nn.LSTMCell(2, 3)
  x = rand(4, 2)
  h, c = cell(x)
  h_zero, c_zero = cell(Tensor(x), (Tensor.zeros(4, 3), Tensor.zeros(4, 3)))
  np.testing.assert_array_equal(h.numpy(), h_zero.numpy())
  np.testing.assert_array_equal(c.numpy(), c_zero.numpy())
  assert cell(Tensor(np.zeros((0, 2), np.float32)))[0].shape == (0, 3)


@pytest.mark.parametrize("call, error, message", [
  (lambda cell: cell(Tensor.zeros(4, 3)), ValueError, r"takes x of shape \(batch, 2\) or \(2,\), got \(4, 3\)"),
  (lambda cell: cell(Tensor.zeros(1, 4, 2)), ValueError, r"got \(1, 4, 2\)"),
  (lambda cell: cell(Tensor.zeros(4, 2), (Tensor.zeros(4, 3), Tensor.zeros(2, 3))), ValueError, r"shape \(4, 3\), got \(4, 3\) and \(2, 3\)"),
  (lambda cell: cell(Tensor.zeros(4, 2), Tensor.zeros(4, 3)), TypeError, "a pair"),
  (lambda cell: nn.LSTMCell(0, 3), ValueError, "input_size must be a positive int, got 0"),
  (lambda cell: nn.LSTMCell(2, 2.5), ValueError, "hidden_size must be a positive int, got 2.5"),
], ids=["wrong_input_size", "3d_input", "wrong_state_shape", "state_not_a_pair", "zero_input_size", "float_hidden_size"])
def test_lstm_cell_bad_input_raises_when_built(call, error, message):
  with pytest.raises(error, match=message): call(nn.LSTMCell(2, 3))
