"""TinyJit: a function's kernels recorded once and replayed, against torch and against running the function."""
import gc
import warnings
import weakref
import numpy as np
import pytest
import torch
from nbgrad import Tensor, TinyJit, GlobalCounters, nn
from nbgrad.nn import optim

rng = np.random.default_rng(7)
LR = 0.1


def mlp_params():
  return [rng.uniform(-0.5, 0.5, shape).astype(np.float32) for shape in ((16, 5), (16,), (3, 16), (3,))]


def nbgrad_training(params, x, y):
  weights = [Tensor(p, requires_grad=True).realize() for p in params]

  def step(inputs, labels):
    loss = inputs.linear(weights[0].T, weights[1]).relu().linear(weights[2].T, weights[3]).sparse_categorical_crossentropy(labels)
    for w in weights: w.grad = None
    loss.backward()
    for w in weights: w.assign(w.detach() - LR * w.grad)
    return loss
  return step, weights


def torch_training(params, batches):
  weights = [torch.tensor(p, requires_grad=True) for p in params]
  losses = []
  for x, y in batches:
    h = torch.relu(torch.nn.functional.linear(torch.tensor(x), weights[0], weights[1]))
    loss = torch.nn.functional.cross_entropy(torch.nn.functional.linear(h, weights[2], weights[3]), torch.tensor(y).long())
    for w in weights: w.grad = None
    loss.backward()
    with torch.no_grad():
      for w in weights: w -= LR * w.grad
    losses.append(loss.item())
  return losses, [w.detach().numpy() for w in weights]


def batches(n):
  return [(rng.standard_normal((8, 5)).astype(np.float32), rng.integers(0, 3, 8).astype(np.int32)) for _ in range(n)]


def test_jitted_sgd_steps_match_torch_and_the_plain_steps():
  params, data = mlp_params(), batches(6)
  jitted, jitted_weights = nbgrad_training(params, *data[0])
  plain, plain_weights = nbgrad_training(params, *data[0])
  step = TinyJit(jitted)
  losses, plain_losses = [], []
  for x, y in data:
    losses.append(step(Tensor(x), Tensor(y)).item())
    plain_losses.append(plain(Tensor(x), Tensor(y)).item())
  reference_losses, reference_weights = torch_training(params, data)
  np.testing.assert_allclose(losses, reference_losses, rtol=1e-5)
  for mine, reference in zip(jitted_weights, reference_weights): np.testing.assert_allclose(mine.numpy(), reference, rtol=1e-5, atol=1e-6)
  assert losses == plain_losses   # the replayed kernels are the plain call's kernels
  for mine, other in zip(jitted_weights, plain_weights): np.testing.assert_array_equal(mine.numpy(), other.numpy())
  assert len(step.jit_cache) > 0


def test_replays_launch_the_recorded_kernels_without_running_the_function():
  calls = []

  @TinyJit
  def f(a, b):
    calls.append(1)
    return (a * b + 1).sum(0)
  for i in range(5):
    a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    GlobalCounters.reset()
    out = f(Tensor(a), Tensor(b))
    np.testing.assert_allclose(out.numpy(), (a * b + 1).sum(0), rtol=1e-6)
    if i >= 2: assert GlobalCounters.kernel_count == len(f.jit_cache) > 0
  assert len(calls) == 2


def test_keyword_arguments_and_views_as_arguments():
  @TinyJit
  def f(x, *, scale): return (x * scale).sum()
  for _ in range(4):
    a, s = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    out = f(Tensor(a).T, scale=Tensor(s).T)   # transposed views of fresh buffers
    np.testing.assert_allclose(out.item(), (a.T * s.T).sum(), rtol=1e-5)


def test_the_recorded_calls_argument_buffers_are_let_go():
  """Each call brings its own arguments: a replay keeps none of the recorded call's (as tinygrad's jit empties their
  slots), a product's and an elementwise kernel's alike."""
  w = Tensor(rng.standard_normal((4, 4)).astype(np.float32)).realize()
  f = TinyJit(lambda x: (x @ w + 1).relu().realize())
  held = []
  for _ in range(5):
    a = rng.standard_normal((8, 4)).astype(np.float32)
    x = Tensor(a).realize()
    held.append(weakref.ref(x.lazydata.base.buffer))
    np.testing.assert_allclose(f(x).numpy(), np.maximum(a @ w.numpy() + 1, 0), rtol=1e-5, atol=1e-6)
  del x
  gc.collect()
  assert [ref() is None for ref in held] == [True] * 5


def test_changed_argument_shape_or_dtype_raises_naming_both():
  f = TinyJit(lambda x: x + 1)
  for _ in range(3): f(Tensor([1.0, 2.0]))
  with pytest.raises(ValueError, match=r"argument 0: shape \(2,\), float32.*now shape \(3,\), float32"): f(Tensor([1.0, 2.0, 3.0]))
  with pytest.raises(ValueError, match="now shape \\(2,\\), int32"): f(Tensor([1, 2]))
  with pytest.raises(ValueError, match="recorded with 1 Tensor argument"): f(Tensor([1.0, 2.0]), Tensor([1.0]))
  np.testing.assert_array_equal(f(Tensor([5.0, 6.0])).numpy(), [6.0, 7.0])   # still replays after the error


def test_a_changed_plain_argument_warns_once_that_replays_keep_the_recorded_value():
  """tinygrad's rule, kept: a number passed beside the tensors is part of the recorded kernels. A replay with another
  number warns (once) rather than giving the recorded call's result silently."""
  f = TinyJit(lambda x, k, options: x * k)
  with warnings.catch_warnings():
    warnings.simplefilter("error")   # equal plain arguments replay without a warning
    results = [f(Tensor([1.0, 2.0]), 3, {"mode": "a"}).numpy().copy() for _ in range(3)]
  np.testing.assert_array_equal(results[-1], [3.0, 6.0])
  with pytest.warns(UserWarning, match=r"recorded with the plain arguments \[3, 'a'\] and is now called with \[4, 'b'\]"):
    np.testing.assert_array_equal(f(Tensor([1.0, 2.0]), 4, {"mode": "b"}).numpy(), [3.0, 6.0])
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    f(Tensor([1.0, 2.0]), 5, {"mode": "c"})


@pytest.mark.parametrize("kind", ["numpy", "numpy_scalar", "torch"])
def test_a_changed_array_argument_warns_once_too(kind):
  """A numpy array (or scalar, or torch tensor) made into a Tensor inside the function is part of the recorded
  kernels as a number is: a replay with other values warns, naming both."""
  make = {"numpy": lambda i: np.full(2, i, np.float32), "numpy_scalar": lambda i: np.float32(i),
          "torch": lambda i: torch.full((2,), float(i))}[kind]
  f = TinyJit(lambda x: (Tensor(x) * 2).realize())
  with warnings.catch_warnings():
    warnings.simplefilter("error")   # equal arrays replay without a warning
    for _ in range(3): f(make(1))
  with pytest.warns(UserWarning, match=r"recorded with the plain arguments \[array\(.*1\.0.*\)\] and is now called with \[array\(.*2\.0.*\)\]"):
    np.testing.assert_array_equal(f(make(2)).numpy(), np.full(np.shape(make(1)), 2.0))
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    f(make(3))


def test_a_replay_in_the_other_training_mode_warns():
  f = TinyJit(lambda x: x.dropout(0.5).realize())
  with Tensor.train():
    for _ in range(3): f(Tensor.ones(4))
  with pytest.warns(UserWarning, match="recorded with Tensor.training=True and is now called with Tensor.training=False"):
    f(Tensor.ones(4))


def test_backward_from_a_replayed_result_raises():
  """A replay builds no graph: the recorded call's would send the gradient to that call's inputs (tinygrad's gives
  those stale gradients silently)."""
  w = Tensor([1.0, 2.0], requires_grad=True)
  f = TinyJit(lambda x: (x * w).sum().realize())
  f(Tensor([1.0, 0.0]))
  out = f(Tensor([1.0, 1.0]))   # the recorded call: its graph is the call's own
  out.backward()
  np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0])
  out = f(Tensor([1.0, 4.0]))
  assert out.item() == 9.0
  with pytest.raises(RuntimeError, match="result of a TinyJit replay"): out.backward()
  with pytest.raises(RuntimeError, match="result of a TinyJit replay"): (out * 2).backward()


def test_random_draws_take_new_values_on_each_replay():
  f = TinyJit(lambda: Tensor.rand(5) * 2)
  Tensor.manual_seed(3)
  jitted = [f().numpy().copy() for _ in range(4)]
  Tensor.manual_seed(3)
  plain = [(Tensor.rand(5) * 2).numpy() for _ in range(4)]
  for mine, other in zip(jitted, plain): np.testing.assert_array_equal(mine, other)
  assert len({tuple(v) for v in jitted}) == 4


def test_a_weight_assigned_outside_makes_it_record_again():
  w = Tensor([1.0, 2.0], requires_grad=True).realize()

  @TinyJit
  def f(x):
    w.assign(w.detach() + x)
    return w * 1
  for i in range(3): f(Tensor([1.0, 1.0]))
  np.testing.assert_array_equal(w.numpy(), [4.0, 5.0])
  w.assign(Tensor([10.0, 10.0])).realize()   # a new buffer the recording does not read
  for i in range(4): out = f(Tensor([1.0, 0.0]))
  np.testing.assert_array_equal(w.numpy(), [14.0, 10.0])
  np.testing.assert_array_equal(out.numpy(), [14.0, 10.0])


def test_setitem_inside_warns_and_calls_the_function_each_time():
  calls = []

  def f(x):
    calls.append(1)
    t = (x * 2).contiguous().realize()
    t[0] = 7.0
    return t + 1
  jitted = TinyJit(f)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    results = [jitted(Tensor([float(i), 1.0])).numpy() for i in range(4)]
  assert any("setitem" in str(w.message) for w in caught)
  assert len(calls) == 4
  for i, r in enumerate(results): np.testing.assert_array_equal(r, [8.0, 3.0])


def test_method_and_reset():
  class Model:
    def __init__(self): self.w = Tensor([2.0, 3.0])

    @TinyJit
    def __call__(self, x): return (x * self.w).sum()
  model = Model()
  for i in range(4): assert model(Tensor([float(i), 1.0])).item() == 2.0 * i + 3.0
  jitted = Model.__dict__["__call__"]
  assert len(jitted.jit_cache) > 0
  jitted.reset()
  assert jitted.jit_cache == [] and model(Tensor([1.0, 1.0])).item() == 5.0


def test_a_jitted_function_inside_another_runs_as_part_of_its_recording():
  inner = TinyJit(lambda x: x + 1)
  outer = TinyJit(lambda x: inner(x) * 2)
  for i in range(3): inner(Tensor([float(i)]))   # inner replays on its own
  for i in range(4): assert outer(Tensor([float(i)])).item() == 2.0 * (i + 1)
  assert inner(Tensor([5.0])).item() == 6.0


def test_one_buffer_passed_twice_raises_at_once():
  f = TinyJit(lambda a, b: a + b)
  a = Tensor([1.0, 2.0])
  with pytest.raises(ValueError, match="share a buffer"): f(a, a)
  np.testing.assert_array_equal(f(a, Tensor([1.0, 1.0])).numpy(), [2.0, 3.0])


def test_a_function_that_launches_no_kernel_raises_when_recorded():
  f = TinyJit(lambda a: None)
  f(Tensor([1.0]))
  with pytest.raises(RuntimeError, match="no kernel"): f(Tensor([1.0]))


@pytest.mark.parametrize("step", ["setitem", "assign"])
def test_a_function_whose_only_work_cannot_be_replayed_warns_and_runs_each_time(step):
  """A setitem into an argument, or an assign of one argument's buffer to another, launches no kernel: that is
  no reason to raise, the calls run as they are."""
  @TinyJit
  def f(t, a):
    if step == "setitem": t[2:4, 1:3] = a
    else: t.assign(a)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for i in range(1, 6):
      t = Tensor.zeros(6, 6).contiguous().realize()
      a = Tensor.full((2, 2) if step == "setitem" else (6, 6), float(i)).contiguous()
      f(t, a)
      expected = np.zeros((6, 6))
      if step == "setitem": expected[2:4, 1:3] = i
      else: expected[:] = i
      np.testing.assert_array_equal(t.numpy(), expected)
  assert any("runs as it is" in str(c.message) for c in caught)


def test_a_changed_view_of_an_argument_raises():
  f = TinyJit(lambda a: a + 1)
  base = Tensor(np.arange(20, dtype=np.float32).reshape(4, 5)).realize()
  for i in range(2): f(base[:, 1:3])
  np.testing.assert_array_equal(f(base[:, 1:3]).numpy(), np.arange(20).reshape(4, 5)[:, 1:3] + 1)
  with pytest.raises(ValueError, match=r"argument 0: shape \(4, 2\), float32 on CPU, a view of a buffer of shape \(4, 5\) when "
                                       "recorded, now another view of it"):
    f(base[:, 2:4])


def test_empty_and_constant_arguments():
  f = TinyJit(lambda x, y, z: x.sum() + y.sum() + z)
  for i in range(4): assert f(Tensor.zeros(0), Tensor.ones(0, 3), Tensor.full((2,), float(i))).tolist() == [float(i)] * 2


def test_an_assigned_argument_warns_and_runs_the_function_each_time():
  @TinyJit
  def f(w, x):
    w.assign(w.flip(0) + x)   # not elementwise: a replay writing into its own argument would read values it wrote
    return w
  w = Tensor([1.0, 2.0, 3.0]).realize()
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(4): f(w, Tensor([1.0, 0.0, 0.0]))
  assert any("argument" in str(c.message) for c in caught)
  expected = np.array([1.0, 2.0, 3.0])
  for _ in range(4): expected = expected[::-1] + [1.0, 0.0, 0.0]
  np.testing.assert_array_equal(w.numpy(), expected)


def test_kernels_another_thread_launches_meanwhile_are_not_recorded():
  import threading
  side_results = []

  def loader(): side_results.append((Tensor([1.0, 2.0]) * 3).numpy())

  @TinyJit
  def f(x):
    worker = threading.Thread(target=loader)
    worker.start()
    worker.join()
    return x + 1
  for i in range(4): np.testing.assert_array_equal(f(Tensor([float(i)])).numpy(), [i + 1.0])
  assert len(f.jit_cache) == 1 and len(side_results) == 2
  for r in side_results: np.testing.assert_array_equal(r, [3.0, 6.0])


def test_a_rate_or_weights_assigned_outside_reach_the_replayed_kernels():
  """opt.lr.assign(...) or opt.lr = x between jitted steps changes the rate the replays use, and weights loaded
  into a model change a jitted forward, as in eager calls (the replays read the buffers recorded, and kept the old
  values)."""
  def train(jitted: bool) -> list:
    w = Tensor([1.0, -2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)

    def step():
      opt.zero_grad()
      (w * w).sum().backward()
      opt.step()
      return w.realize()
    step = TinyJit(step) if jitted else step
    seen = []
    with Tensor.train():
      for i in range(7):
        if i == 3: opt.lr.assign(Tensor([0.5 / i]))
        if i == 5: opt.lr = 0.5 / i
        seen.append(step().numpy().copy())
    return seen
  for mine, eager in zip(train(True), train(False)): np.testing.assert_allclose(mine, eager, rtol=1e-6)

  layer = nn.Linear(2, 1)
  forward = TinyJit(lambda x: layer(x).realize())
  x = Tensor([[1.0, 2.0]])
  for _ in range(3): forward(x)
  nn.state.load_state_dict(layer, {"weight": Tensor([[3.0, 4.0]]), "bias": Tensor([0.5])})
  for _ in range(2): np.testing.assert_allclose(forward(Tensor([[1.0, 2.0]])).numpy(), [[11.5]])


def test_a_layer_whose_weights_were_computed_before_the_first_call_replays():
  """A Linear's weights realized before training read their initial draw through a reshape: the optimizer's
  updates rebind them, so the jitted step records and replays (a write from Python stopped it replaying)."""
  Tensor.manual_seed(3)
  layer = nn.Linear(5, 3)
  Tensor.realize(layer.weight, layer.bias)
  start = [layer.weight.numpy(), layer.bias.numpy()]
  opt = optim.SGD([layer.weight, layer.bias], lr=LR)

  @TinyJit
  def step(x, y):
    with Tensor.train():
      opt.zero_grad()
      loss = layer(x).sparse_categorical_crossentropy(y)
      loss.backward()
      opt.step()
    return loss.realize()
  data = batches(5)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    losses = [step(Tensor(x), Tensor(y)).item() for x, y in data]
  assert not [w for w in caught if "TinyJit" in str(w.message)] and len(step.jit_cache) > 0
  theirs = torch.nn.Linear(5, 3)
  with torch.no_grad(): theirs.weight.copy_(torch.from_numpy(start[0])), theirs.bias.copy_(torch.from_numpy(start[1]))
  their_opt = torch.optim.SGD(theirs.parameters(), lr=LR)
  for (x, y), loss in zip(data, losses):
    their_opt.zero_grad()
    reference = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(x)), torch.from_numpy(y).long())
    reference.backward()
    their_opt.step()
    np.testing.assert_allclose(loss, reference.item(), rtol=1e-5)


def test_an_argument_reshaped_in_order_from_its_buffer_is_one_in_a_buffer_of_its_own():
  """Tensor.rand(10, 10) reads its draw of 100 in order: a replay takes a tensor of its own in its place (it raised)."""
  add = TinyJit(lambda a, b: a + b + 1)
  for _ in range(3): add(Tensor.rand(10, 10), Tensor.rand(10, 10))
  out = add(Tensor.ones(10, 10).contiguous().realize(), Tensor(np.full((10, 10), 2.0, np.float32)))
  np.testing.assert_array_equal(out.numpy(), np.full((10, 10), 4.0, np.float32))


PICKLED_JIT_RUN = """
import pickle, sys, numpy as np
from nbgrad import Tensor
step = pickle.loads(sys.stdin.buffer.read())
data = np.load(sys.argv[1])
losses = [step(Tensor(data["x"][i]), Tensor(data["y"][i])).item() for i in range(len(data["x"]))]
print(" ".join(repr(loss) for loss in losses))
"""


def test_a_pickled_jit_replays_its_training_steps_in_another_process(tmp_path):
  """As tinygrad's: with its function deleted a TinyJit pickles with its recorded kernels and their buffers (the
  weights among them); loaded in another process (another string hash seed), it goes on training from there
  exactly as the original does."""
  import pickle
  import subprocess
  import sys
  import os
  params, data = mlp_params(), batches(7)
  jitted, _ = nbgrad_training(params, *data[0])
  step = TinyJit(jitted)
  for x, y in data[:3]: step(Tensor(x), Tensor(y))
  del step.fxn
  blob = pickle.dumps(step)
  later = data[3:]
  np.savez(tmp_path / "later.npz", x=np.stack([x for x, _ in later]), y=np.stack([y for _, y in later]))
  run = subprocess.run([sys.executable, "-c", PICKLED_JIT_RUN, str(tmp_path / "later.npz")], input=blob, capture_output=True,
                       env=dict(os.environ, PYTHONHASHSEED="12345"), check=True)
  there = [float(v) for v in run.stdout.split()]
  here = [step(Tensor(x), Tensor(y)).item() for x, y in later]
  assert there == here and len(here) == 4
  reference_losses, _ = torch_training(params, data)
  np.testing.assert_allclose(here, reference_losses[3:], rtol=1e-5)


def test_a_loaded_jit_without_its_function_says_so_when_it_cannot_replay():
  import pickle
  w = Tensor([1.0, 2.0]).realize()

  def scale(x):
    w.assign(w * x)
    return w
  step = TinyJit(scale)
  for _ in range(3): step(Tensor([2.0, 2.0]))
  del step.fxn
  loaded = pickle.loads(pickle.dumps(step))
  out = loaded(Tensor([3.0, 3.0]))
  np.testing.assert_array_equal(out.numpy(), [24.0, 48.0])
  loaded.ret.assign(Tensor([0.0, 0.0]))   # its weights given other values outside it: the recording is stale
  with pytest.raises(RuntimeError, match="pickled without its function .* was given other values outside it"): loaded(Tensor([3.0, 3.0]))


def test_a_jit_pickled_before_its_recording_says_so_when_loaded_and_called():
  import pickle
  step = TinyJit(lambda x: x * 2)
  step(Tensor([1.0]))
  del step.fxn
  with pytest.raises(RuntimeError, match="pickled before it had a recording"): pickle.loads(pickle.dumps(step))(Tensor([1.0]))


def test_tinyjit_imports_from_tinygrads_path_too():
  from nbgrad.engine.jit import TinyJit as from_engine
  assert from_engine is TinyJit
