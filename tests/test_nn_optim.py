"""nbgrad.nn.optim against torch.optim (SGD, Adam, AdamW) and against the update rules written out in numpy (LARS,
LAMB): the same starting weights, each library's own gradients of the same loss, parameters compared after each
step. Also: the learning rate as a tensor, groups, TinyJit, and misuse."""
import numpy as np
import pytest
import torch

from nbgrad import Tensor, TinyJit, dtypes, nn
from nbgrad.nn import optim

STEPS = 3


def start(dtype=np.float32):
  rng = np.random.default_rng(0)
  return [rng.standard_normal((4, 3)).astype(dtype), rng.standard_normal(3).astype(dtype)], \
    rng.standard_normal((5, 4)).astype(dtype), rng.standard_normal((5, 3)).astype(dtype)


def loss_of(x, w, b, target): return ((x @ w + b - target) ** 2).mean()


def nbgrad_trajectory(make_optimizer, dtype=np.float32):
  values, x, target = start(dtype)
  params = [Tensor(v, requires_grad=True) for v in values]
  opt = make_optimizer(params)
  seen = []
  with Tensor.train():
    for _ in range(STEPS):
      opt.zero_grad()
      loss_of(Tensor(x), *params, Tensor(target)).backward()
      opt.step()
      seen.append([p.numpy() for p in params])
  return seen


def torch_trajectory(make_optimizer, dtype=np.float32):
  values, x, target = start(dtype)
  params = [torch.tensor(v, requires_grad=True) for v in values]
  opt = make_optimizer(params)
  seen = []
  for _ in range(STEPS):
    opt.zero_grad()
    loss_of(torch.from_numpy(x), *params, torch.from_numpy(target)).backward()
    opt.step()
    seen.append([p.detach().numpy().copy() for p in params])
  return seen


AGAINST_TORCH = [
  ("sgd", lambda p: optim.SGD(p, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
  ("sgd_momentum", lambda p: optim.SGD(p, lr=0.1, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
  ("sgd_nesterov_weight_decay", lambda p: optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
   lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
  ("adam", lambda p: optim.Adam(p, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01)),
  ("adam_betas_eps", lambda p: optim.Adam(p, lr=0.02, b1=0.8, b2=0.99, eps=1e-6),
   lambda p: torch.optim.Adam(p, lr=0.02, betas=(0.8, 0.99), eps=1e-6)),
  ("adamw", lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1), lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1)),
]


@pytest.mark.parametrize("ours, theirs", [row[1:] for row in AGAINST_TORCH], ids=[row[0] for row in AGAINST_TORCH])
def test_optimizer_steps_match_torch(ours, theirs):
  for step, (mine, reference) in enumerate(zip(nbgrad_trajectory(ours), torch_trajectory(theirs))):
    for got, want in zip(mine, reference):
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"step {step + 1}")


@pytest.mark.parametrize("ours, theirs", [row[1:] for row in AGAINST_TORCH], ids=[row[0] for row in AGAINST_TORCH])
def test_float64_parameters_step_in_float64(ours, theirs):
  """Rates, moments and momenta of float64 weights are float64: torch's float64 steps to 12 digits."""
  for step, (mine, reference) in enumerate(zip(nbgrad_trajectory(ours, np.float64), torch_trajectory(theirs, np.float64))):
    for got, want in zip(mine, reference):
      assert got.dtype == np.float64
      np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14, err_msg=f"step {step + 1}")


def numpy_gradients(w, b, x, target):
  residual = 2 * (x @ w + b - target) / target.size
  return [x.T @ residual, residual.sum(0)]


def numpy_trajectory(update):
  """update(params, grads, state, step) -> new params, with the loss's gradients written out by hand."""
  params, x, target = start()
  params, state, seen = [p.astype(np.float64) for p in params], {}, []
  for step in range(1, STEPS + 1):
    params = update(params, numpy_gradients(*params, x, target), state, step)
    seen.append(params)
  return seen


def lars_update(lr, momentum, wd, tcoef, classic):
  def update(params, grads, state, step):
    new = []
    for i, (w, g) in enumerate(zip(params, grads)):
      w_norm, g_norm = np.linalg.norm(w), np.linalg.norm(g)
      ratio = tcoef * w_norm / (g_norm + wd * w_norm) if w_norm > 0 and g_norm > 0 else 1.0
      g = g + wd * w
      if classic: g = g * ratio * lr
      state[i] = momentum * state.get(i, 0) + g
      g = state[i]
      if not classic: g = g * ratio * lr
      new.append(w - g)
    return new
  return update


def lamb_update(lr, b1, b2, eps, wd):
  def update(params, grads, state, step):
    new = []
    for i, (w, g) in enumerate(zip(params, grads)):
      m = state[("m", i)] = b1 * state.get(("m", i), 0) + (1 - b1) * g
      v = state[("v", i)] = b2 * state.get(("v", i), 0) + (1 - b2) * g * g
      change = (m / (1 - b1 ** step)) / (np.sqrt(v / (1 - b2 ** step)) + eps) + wd * w
      w_norm, change_norm = np.linalg.norm(w), np.linalg.norm(change)
      new.append(w - lr * (w_norm / change_norm if w_norm > 0 and change_norm > 0 else 1.0) * change)
    return new
  return update


AGAINST_NUMPY = [
  ("lars", lambda p: optim.LARS(p, lr=0.1), lars_update(0.1, 0.9, 1e-4, 0.001, True)),
  ("lars_popular_momentum", lambda p: optim.LARS(p, lr=0.1, momentum=0.5, weight_decay=0.01, classic=False, tcoef=0.01),
   lars_update(0.1, 0.5, 0.01, 0.01, False)),
  ("lamb", lambda p: optim.LAMB(p, lr=0.01), lamb_update(0.01, 0.9, 0.999, 1e-6, 0.0)),
  ("lamb_weight_decay", lambda p: optim.LAMB(p, lr=0.02, weight_decay=0.1), lamb_update(0.02, 0.9, 0.999, 1e-6, 0.1)),
]


@pytest.mark.parametrize("ours, update", [row[1:] for row in AGAINST_NUMPY], ids=[row[0] for row in AGAINST_NUMPY])
def test_trust_ratio_optimizers_follow_their_update_rules(ours, update):
  for step, (mine, reference) in enumerate(zip(nbgrad_trajectory(ours), numpy_trajectory(update))):
    for got, want in zip(mine, reference):
      np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6, err_msg=f"step {step + 1}")


SET_RATE = {"assign": lambda opt, lr: opt.lr.assign(Tensor([lr])), "number": lambda opt, lr: setattr(opt, "lr", lr),
            "tensor": lambda opt, lr: setattr(opt, "lr", Tensor(lr))}


@pytest.mark.parametrize("how", SET_RATE)
def test_learning_rate_is_a_tensor_that_can_change_between_steps(how):
  """opt.lr.assign(...), or opt.lr = a number or a tensor of one value, as tinygrad's (a number raised)."""
  w = Tensor([1.0, 2.0], requires_grad=True)
  opt = optim.SGD([w], lr=0.5)
  assert opt.lr.shape == (1,) and opt.lr.dtype == dtypes.float32
  with Tensor.train():
    for lr in (0.5, 0.25):
      SET_RATE[how](opt, lr)
      assert opt.lr.shape == (1,) and opt.lr.tolist() == [lr]
      opt.zero_grad()
      (w * w).sum().backward()   # gradient 2w
      opt.step()
  np.testing.assert_allclose(w.numpy(), np.array([1.0, 2.0]) * (1 - 2 * 0.5) * (1 - 2 * 0.25))


def test_a_learning_rate_that_is_no_one_nonnegative_number_raises():
  opt = optim.SGD([Tensor([1.0], requires_grad=True)], lr=0.5)
  with pytest.raises(ValueError, match="learning rate -1"): opt.lr = -1
  with pytest.raises(ValueError, match=r"shape \(2,\)"): opt.lr = Tensor([1.0, 2.0])
  with pytest.raises(TypeError): opt.lr = "fast"
  assert opt.lr.tolist() == [0.5]


def test_a_learning_rate_given_as_a_tensor_of_one_value_as_torch():
  w = Tensor([1.0, 2.0], requires_grad=True)
  for lr in (Tensor([0.5]), Tensor(0.5, dtype=dtypes.float64)):
    assert optim.SGD([w], lr=lr).lr.tolist() == [0.5]
  with pytest.raises(ValueError, match=r"shape \(2,\)"): optim.Adam([w], lr=Tensor([0.1, 0.2]))


def test_zero_dimensional_parameters_stay_zero_dimensional():
  w = Tensor(3.0, requires_grad=True)
  opt = optim.Adam([w], lr=0.1)
  with Tensor.train():
    (w * w).backward()
    opt.step()
  assert w.shape == ()
  np.testing.assert_allclose(w.item(), 3.0 - 0.1, rtol=1e-6)   # Adam's first step moves by lr


def test_optimizer_group_steps_each_part_at_its_own_rate():
  a, b = Tensor([1.0], requires_grad=True), Tensor([1.0], requires_grad=True)
  opt = optim.OptimizerGroup(optim.SGD([a], lr=0.1), optim.SGD([b], lr=0.3))
  with Tensor.train():
    opt.zero_grad()
    (a + b).sum().backward()
    opt.step()
  assert a.grad is not None and opt[1].params == [b]
  np.testing.assert_allclose([a.item(), b.item()], [0.9, 0.7], rtol=1e-6)


def test_parameters_with_requires_grad_none_are_trained_and_buffers_realized():
  layer = nn.BatchNorm2d(2)
  params = nn.state.get_parameters(layer)
  opt = optim.SGD(params, lr=0.1)
  assert layer.weight.requires_grad and layer.weight in opt.params and layer.running_mean in opt.buffers
  with Tensor.train():
    layer(Tensor(np.arange(16, dtype=np.float32).reshape(2, 2, 2, 2))).sum().backward()
    opt.step()
  assert layer.running_mean.lazydata.realized


def test_a_tinyjit_training_step_matches_eager_steps():
  def run(jit: bool):
    Tensor.manual_seed(0)
    layer = nn.Linear(3, 2)
    opt = optim.Adam(nn.state.get_parameters(layer), lr=0.05)
    x, y = Tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10), Tensor(np.ones((4, 2), np.float32))

    def step(x, y):
      opt.zero_grad()
      loss = ((layer(x) - y) ** 2).mean()
      loss.backward()
      opt.step()
      return loss.realize()
    step = TinyJit(step) if jit else step
    with Tensor.train(): losses = [step(x, y).item() for _ in range(5)]
    return losses, layer.weight.numpy()
  eager, jitted = run(False), run(True)
  np.testing.assert_allclose(jitted[0], eager[0], rtol=1e-6)
  np.testing.assert_allclose(jitted[1], eager[1], rtol=1e-6)
  assert eager[0][-1] < eager[0][0]


def test_half_precision_parameters_keep_their_dtype_with_float32_moments():
  w = Tensor(np.array([1.0, -2.0], np.float16), requires_grad=True)
  opt = optim.Adam([w], lr=0.1)
  with Tensor.train():
    (w * w).sum().backward()
    opt.step()
  assert w.dtype == dtypes.float16 and opt.m[0].dtype == dtypes.float32
  np.testing.assert_allclose(w.numpy().astype(np.float32), [0.9, -1.9], rtol=1e-3)


@pytest.mark.parametrize("make", [lambda p: optim.LARS(p, lr=0.1), lambda p: optim.SGD(p, lr=0.1, momentum=0.9),
                                  lambda p: optim.LAMB(p, lr=0.1), lambda p: optim.Adam(p, lr=0.1)], ids=["lars", "sgd", "lamb", "adam"])
def test_parameters_of_mixed_dtypes_share_one_optimizer(make):
  """Each parameter keeps its dtype and moves as a lone float64 parameter would, to its own precision."""
  start_value = np.array([1.0, -2.0])
  mixed = [Tensor(start_value.astype(dt), requires_grad=True) for dt in (np.float16, np.float32, np.float64)]
  alone = Tensor(start_value, requires_grad=True)
  for params in (mixed, [alone]):
    opt = make(params)
    with Tensor.train():
      for _ in range(2):
        opt.zero_grad()
        sum((p.cast(dtypes.float64) ** 2).sum() for p in params).backward()
        opt.step()
  for p, dtype, rtol in zip(mixed, (dtypes.float16, dtypes.float32, dtypes.float64), (2e-3, 1e-6, 1e-12)):
    assert p.dtype == dtype
    np.testing.assert_allclose(p.numpy().astype(np.float64), alone.numpy(), rtol=rtol)


MISUSE = [
  ("no_parameters", lambda: optim.SGD([], lr=0.1), ValueError, "at least one parameter"),
  ("only_frozen_parameters", lambda: optim.Adam([Tensor([1.0], requires_grad=False)]), ValueError, "at least one parameter"),
  ("not_a_tensor", lambda: optim.SGD([np.ones(2)]), TypeError, "list of Tensors"),
  ("mixed_devices", lambda: optim.SGD([Tensor([1.0], requires_grad=True), Tensor([1.0], device="CPU:1", requires_grad=True)]),
   ValueError, r"one device, got tensors on \['CPU', 'CPU:1'\]"),
  ("negative_lr", lambda: optim.SGD([Tensor([1.0], requires_grad=True)], lr=-0.1), ValueError, "invalid learning rate -0.1"),
  ("nan_lr", lambda: optim.Adam([Tensor([1.0], requires_grad=True)], lr=float("nan")), ValueError, "invalid learning rate nan"),
  ("lr_not_a_number", lambda: optim.Adam([Tensor([1.0], requires_grad=True)], lr="0.1"), TypeError, "learning rate must be a number"),
  ("negative_momentum", lambda: optim.SGD([Tensor([1.0], requires_grad=True)], momentum=-0.5), ValueError, "invalid momentum"),
  ("negative_weight_decay", lambda: optim.AdamW([Tensor([1.0], requires_grad=True)], weight_decay=-1), ValueError, "invalid weight_decay"),
  ("b1_of_one_or_more", lambda: optim.Adam([Tensor([1.0], requires_grad=True)], b1=2), ValueError, r"invalid b1 2: it must be in \[0.0, 1.0\)"),
  ("negative_b2", lambda: optim.LAMB([Tensor([1.0], requires_grad=True)], b2=-0.1), ValueError, "invalid b2"),
  ("negative_eps", lambda: optim.Adam([Tensor([1.0], requires_grad=True)], eps=-1e-8), ValueError, "invalid eps"),
]


@pytest.mark.parametrize("call, error, match", [row[1:] for row in MISUSE], ids=[row[0] for row in MISUSE])
def test_misuse_raises_a_clear_error(call, error, match):
  with pytest.raises(error, match=match): call()


def test_step_outside_training_or_before_backward_raises_and_changes_nothing():
  w = Tensor([1.0, 2.0], requires_grad=True)
  opt = optim.SGD([w], lr=0.1)
  with pytest.raises(RuntimeError, match="Tensor.training"): opt.step()
  with Tensor.train():
    with pytest.raises(RuntimeError, match=r"parameter 0 \(shape \(2,\)\) has no gradient"): opt.step()
  np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])


def test_an_int_tensor_among_the_parameters_is_a_buffer_not_a_parameter():
  """get_parameters of a model holding an int tensor (a step count, indices): it cannot require grad (torch's rule),
  so the optimizer keeps it as it keeps BatchNorm's statistics (its step raised: no gradient)."""
  w, count = Tensor([1.0, 2.0]), Tensor([3])
  opt = optim.SGD([w, count], lr=0.5)
  assert w.requires_grad is True and count.requires_grad is False
  with Tensor.train():
    (w * w).sum().backward()
    opt.step()
  assert w.tolist() == [0.0, 0.0] and count.tolist() == [3]


def test_the_rate_keeps_its_state_dict_name_and_a_group_sets_every_part_s():
  from nbgrad.nn.state import get_state_dict
  w, v = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0], requires_grad=True)
  adam = optim.Adam([w], lr=0.1)
  assert "lr" in get_state_dict(adam) and get_state_dict(adam)["lr"].tolist() == pytest.approx([0.1])
  group = optim.OptimizerGroup(optim.SGD([w], lr=0.1), optim.Adam([v], lr=0.01))
  group.lr = 0.5
  assert group[0].lr.tolist() == group[1].lr.tolist() == [0.5]
  for bad in (Tensor(-1.0), Tensor([float("nan")])):
    with pytest.raises(ValueError, match="learning rate"): adam.lr = bad
