"""Programs that use nbgrad from several threads, from signal handlers and finalizers, across a fork, and with a
step interrupted: each thread's grad and training modes, gradients added from several threads, locks taken again on
the thread that holds them, a forked child's locks and workers, and a TinyJit replay stopped halfway."""
import sys
import threading
import numpy as np
import pytest
import torch

from nbgrad import Tensor, TinyJit
from nbgrad.nn import optim
from test_threads import run_python


def run_threads(*targets, timeout: float = 120):
  """Runs each target on a thread of its own; the first exception one raised is raised here."""
  errors = []

  def guarded(target):
    try: target()
    except BaseException as e: errors.append(e)
  threads = [threading.Thread(target=guarded, args=(t,)) for t in targets]
  for t in threads: t.start()
  for t in threads: t.join(timeout)
  assert not any(t.is_alive() for t in threads), "a thread did not finish (deadlock)"
  if errors: raise errors[0]


def test_a_with_block_of_inference_mode_or_train_sets_its_flag_for_its_own_thread_as_torch_s_grad_mode():
  entered, checked = threading.Event(), threading.Event()

  def evaluate():
    with Tensor.inference_mode(), Tensor.train(False):
      assert Tensor.no_grad and not Tensor.training
      entered.set()
      assert checked.wait(60)
      assert Tensor.no_grad and not Tensor.training   # the other thread's flags did not reach this one either

  def train():
    assert entered.wait(60)
    with Tensor.train():
      w = Tensor([1.0, 2.0], requires_grad=True)
      assert not Tensor.no_grad and Tensor.training
      (w * w).sum().backward()
      np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0])
    checked.set()

  done = {}

  def torch_evaluate():   # the oracle: torch's grad mode behaves so
    with torch.inference_mode():
      entered_t.set()
      assert checked_t.wait(60)

  def torch_train():
    assert entered_t.wait(60)
    done["enabled"] = torch.is_grad_enabled()
    checked_t.set()
  entered_t, checked_t = threading.Event(), threading.Event()
  run_threads(torch_evaluate, torch_train)
  assert done["enabled"]
  run_threads(evaluate, train)
  assert not Tensor.no_grad and not Tensor.training


def test_blocks_on_two_threads_ending_out_of_order_leave_each_flag_as_it_was():
  first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

  def first():
    with Tensor.inference_mode():
      first_in.set()
      assert second_in.wait(60)
    first_out.set()

  def second():
    assert first_in.wait(60)
    with Tensor.inference_mode():
      second_in.set()
      assert first_out.wait(60)   # leaves its block after the first thread left its own
  run_threads(first, second)
  assert Tensor.no_grad is False
  w = Tensor([3.0], requires_grad=True)
  (w * w).sum().backward()
  assert w.grad.tolist() == [6.0]


def test_an_assignment_outside_every_block_sets_the_flag_for_every_thread_as_tinygrad_s():
  seen = []
  Tensor.training = True
  try:
    run_threads(lambda: seen.append(Tensor.training))
    with Tensor.train(False):
      Tensor.training = True   # inside a block: for the block
      assert Tensor.training
    assert Tensor.training
  finally:
    Tensor.training = False
  assert seen == [True] and not Tensor.training


def test_dropout_of_f_with_training_false_on_one_thread_leaves_another_thread_training():
  import nbgrad.nn.functional as F
  stop, results = threading.Event(), []

  def evaluate():
    x = Tensor.ones(64)
    while not stop.is_set(): F.dropout(x, 0.5, training=False)

  def train():
    Tensor.manual_seed(1)
    x = Tensor.ones(4096)
    try:
      for _ in range(100): results.append(x.dropout(0.5).numpy())
    finally: stop.set()
  Tensor.training = True
  try: run_threads(evaluate, train)
  finally: Tensor.training = False
  assert all(0.3 < (r == 0).mean() < 0.7 for r in results)   # every step dropped about half


def test_backward_on_several_threads_into_one_parameter_adds_every_gradient():
  w, w_t = Tensor([1.0, 1.0], requires_grad=True), torch.ones(2, requires_grad=True)

  def losses(): [(w * 2).sum().backward() for _ in range(50)]
  run_threads(*[losses] * 4)
  for _ in range(200): (w_t * 2).sum().backward()
  np.testing.assert_array_equal(w.grad.numpy(), w_t.grad.numpy())


@pytest.mark.parametrize("how", ["add_", "+=", "view +="])
def test_in_place_ops_on_several_threads_lose_no_update(how):
  """Each in-place op reads the tensor and writes it back as one step, as torch's and numpy's: none is lost."""
  y = Tensor.zeros(4).contiguous().realize()

  def count():
    nonlocal y
    for _ in range(300):
      if how == "add_": y.add_(1)
      elif how == "+=": y += 1
      else: y[1:3] += 1
  run_threads(count, count)
  expected = np.array([0, 600, 600, 0] if how == "view +=" else [600] * 4, np.float32)
  np.testing.assert_array_equal(y.numpy(), expected)


def test_numpy_while_another_thread_assigns_returns_old_or_new_values():
  """numpy() read the tensor again after computing it, when the other thread's assign had rebound it already."""
  w = Tensor(np.zeros(1000, np.float32)).realize()
  stop, written, seen = threading.Event(), [0], []

  def writer():
    while not stop.is_set():
      w.assign(w + 1).realize()
      written[0] += 1

  def reader():
    try:
      for _ in range(300):
        values = w.numpy()
        seen.append(bool((values == values[0]).all()))
    finally: stop.set()
  run_threads(writer, reader)
  assert len(seen) == 300 and all(seen) and w.numpy()[0] == written[0]


def test_computing_on_a_thread_that_holds_the_launch_lock_finishes():
  """A finalizer or a signal handler runs between two bytecodes of a thread inside nbgrad, which may hold the lock:
  its own computation waited for the lock forever."""
  from nbgrad.jit.compiler import LAUNCH_LOCK
  result = []

  def nested():
    with LAUNCH_LOCK: result.append((Tensor(np.ones((8, 64), np.float32)) @ Tensor(np.ones((64, 8), np.float32))).sum().item())
  run_threads(nested, timeout=120)
  assert result == [4096.0]


def test_random_draws_on_several_threads_take_counters_of_their_own():
  from nbgrad.random.draw import GeneratorState
  Tensor.manual_seed(0)
  taken = []

  def draw(): taken.extend(GeneratorState.take(5)[1] for _ in range(2000))
  run_threads(*[draw] * 4)
  assert sorted(taken) == list(range(0, 5 * 8000, 5)) and GeneratorState.counter == 5 * 8000


def test_one_tinyjit_called_from_several_threads_records_once_and_replays():
  @TinyJit
  def double(x): return (x * 2).realize()
  inputs = [Tensor(np.full(16, i, np.float32)).realize() for i in range(8)]

  def calls():
    for x in inputs: double(x)
  run_threads(*[calls] * 4)
  for i, x in enumerate(inputs): np.testing.assert_array_equal(double(x).numpy(), np.full(16, 2 * i, np.float32))
  assert len(double.jit_cache) == 1


def _momentum_step():
  """A TinyJit SGD step with momentum on a loss of gradient 1: b' = 0.9 b + 1, w' = w - b'."""
  Tensor.training = True
  w = Tensor(np.zeros(4, np.float32), requires_grad=True)
  opt = optim.SGD([w], lr=1.0, momentum=0.9)
  x = Tensor(np.ones(4, np.float32)).realize()

  @TinyJit
  def step(x):
    opt.zero_grad()
    (w * x).sum().backward()
    opt.step()
    return w
  for _ in range(3): step(x)   # the third call replays
  return step, w, opt, x


@pytest.mark.parametrize("where", ["launch", "copy_back"])
def test_an_interrupted_tinyjit_replay_goes_on_from_the_values_the_tensors_show(where, monkeypatch):
  step, w, opt, x = _momentum_step()
  try:
    replay = step._replay
    if where == "launch":   # stopped after its first kernel
      launch = replay.launches[0]

      class Interrupted:
        def run(self, buffers):
          launch.run(buffers)
          replay.launches[0] = launch
          raise KeyboardInterrupt
      replay.launches[0] = Interrupted()
    else:   # stopped after copying back the first rebound tensor's values
      backend = replay.rebound[0][-1]
      real_copy = backend.copy_into
      copies = []

      def interrupted_copy(target, source):
        if len(copies) == 1:
          monkeypatch.setattr(backend, "copy_into", real_copy)
          raise KeyboardInterrupt
        copies.append(1)
        real_copy(target, source)
      monkeypatch.setattr(backend, "copy_into", interrupted_copy)
    with pytest.raises(KeyboardInterrupt): step(x)
    shown_w, shown_b = w.numpy()[0], opt.b[0].numpy()[0]
    step(x)
    expected_b = np.float32(0.9) * shown_b + np.float32(1)
    assert (w.numpy()[0], opt.b[0].numpy()[0]) == (shown_w - expected_b, expected_b)
  finally:
    Tensor.training = False


FORK = """
import multiprocessing, threading, time, numpy as np
from nbgrad import Tensor
from nbgrad.jit import blas
from nbgrad.jit.compiler import COMPILE_LOCK
a, b = np.ones((64, 256), np.float32), np.ones((256, 512), np.float32)
out = np.empty((64, 512), np.float32)
with blas.blas_threads(1): blas._on_worker_threads(blas._split(out, a, b, 2))   # the parent starts its product workers
held = threading.Event()
def build():   # a build on another thread holds the compile lock while the fork happens
  with COMPILE_LOCK:
    held.set()
    time.sleep(1.0)
threading.Thread(target=build).start()
held.wait()
def child(i):
  with blas.blas_threads(1): blas._on_worker_threads(blas._split(out, a, b, 2))
  return float(out.sum()) + (Tensor([float(i)]) * 3 + 1).item()   # a new kernel: a build
with multiprocessing.get_context("fork").Pool(2) as pool: print(pool.map(child, range(2)))
"""


FORK_DURING_REALIZE = """
import multiprocessing, threading, numpy as np
from nbgrad import Tensor
x = Tensor(np.ones((256, 256), np.float32)).realize()
stop = threading.Event()
def realize_in_a_loop():
  while not stop.is_set(): (x * 2 + 1).sum(0).numpy()
thread = threading.Thread(target=realize_in_a_loop)
thread.start()
def child(i): return (Tensor([float(i)]) + 1).item()
with multiprocessing.get_context("fork").Pool(2) as pool: print(sum(pool.map(child, range(10))))
stop.set()
thread.join()
"""


def test_a_child_forked_while_another_thread_realizes_computes():
  """It inherited the realize lock held by a thread it does not have, and waited forever (9 of 10 children)."""
  assert run_python(FORK_DURING_REALIZE) == "55.0"


def test_a_forked_child_builds_kernels_and_splits_products_of_its_own():
  """A child forked while another thread was building inherited the build's lock held by a thread it does not
  have, and the parent's product workers it does not have either: it waited forever."""
  assert run_python(FORK) == str([64 * 512 * 256 + 1.0, 64 * 512 * 256 + 4.0])


FORK_AFTER_OPENMP = """
import multiprocessing, numba, numpy as np
from nbgrad import Tensor
from nbgrad.jit.compiler import finish_builds
def work(_=None):   # a big input for each kind of parallel routine
  x = Tensor(np.linspace(-1, 1, 1 << 18, dtype=np.float32).reshape(64, 4096))
  Tensor.manual_seed(3)
  image, kernel = Tensor.ones(8, 16, 34, 34).contiguous(), Tensor.full((32, 16, 3, 3), 0.5).contiguous()
  results = [(x * 2 + 1).sum(1), x.sort(1, descending=True)[0][:, :3], Tensor.randn(1 << 18)[:5],
             image.conv2d(kernel).sum((0, 1)), x.cumsum(1)[:, -1], Tensor.cat(x, x, dim=1).sum(0)[:5]]
  return [r.numpy() for r in results]
work()
finish_builds()
expected = work()   # on the parallel builds: numba's OpenMP pool has run
with multiprocessing.get_context("fork").Pool(1) as pool: got = pool.map_async(work, [0]).get(timeout=200)[0]
print(numba.threading_layer(), all(np.allclose(a, b, rtol=1e-5, atol=1e-3) for a, b in zip(expected, got)))
"""


def test_a_child_forked_after_parallel_kernels_on_gnu_openmp_computes_big_inputs():
  """GNU OpenMP ended such a child at its first parallel loop, and the pool waited for it forever; it runs serial
  builds of the parallel routines now."""
  assert run_python(FORK_AFTER_OPENMP) == "omp True"


def test_view_adds_on_two_threads_lose_no_update_when_the_interpreter_switches_often():
  """x[1:3] += 1 is a getitem, an in-place add and a setitem: with the GIL handed over every microsecond, each of
  the three ran into another thread's and counts were lost (in every run of 300 adds per thread)."""
  previous = sys.getswitchinterval()
  sys.setswitchinterval(1e-6)
  try:
    for _ in range(3):
      y = Tensor.zeros(4).contiguous().realize()
      def count():
        for _ in range(300): y[1:3] += 1
      run_threads(count, count)
      np.testing.assert_array_equal(y.numpy(), [0, 600, 600, 0])
  finally: sys.setswitchinterval(previous)
