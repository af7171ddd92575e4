"""numba's thread pool: which one nbgrad's parallel kernels run on, and parallel kernels launched from many Python
threads at once. Each case runs in a process of its own, since the pool is chosen once per process."""
import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))


def run_python(source: str, **env) -> str:
  """stdout of source run by a fresh interpreter (the tests' environment, plus env)."""
  done = subprocess.run([sys.executable, "-c", textwrap.dedent(source)], env=dict(os.environ, **env), cwd=HERE,
                        capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
  return done.stdout.strip()


FIRST_KERNEL = """
from nbgrad import Tensor
(Tensor.rand(1 << 17) * 2).sum().realize()   # a parallel kernel: numba starts its pool
print(numba.threading_layer())
"""


def test_torch_imported_first_gets_numba_s_own_pool():
  """torch's OpenMP runtime, loaded first, ignores nbgrad's wait policy: its idle workers would spin."""
  assert run_python("import torch, numba\nimport nbgrad\n" + FIRST_KERNEL) == "workqueue"


def test_a_pool_the_user_chose_is_kept():
  env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
  env["NUMBA_THREADING_LAYER"] = "omp"
  done = subprocess.run([sys.executable, "-c", "import torch, numba\nimport nbgrad\n" + FIRST_KERNEL], env=env, cwd=HERE,
                        capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stderr
  assert done.stdout.strip() == "omp"


def test_parallel_kernels_from_many_threads_at_once():
  """Every parallel routine (fused kernels, products, scans, indexed reads, random draws) launched from four
  threads at once, on the pool that allows one launch at a time: each thread's results equal a serial run's. A
  product is cut by how busy the cores are (BLAS's threads, or parts on threads of nbgrad's), and each cut sums
  in its own order, so products are compared to float32 rounding, the rest bit for bit."""
  out = run_python("""
    import torch, threading
    import numpy as np
    import nbgrad
    from nbgrad import Tensor
    from nbgrad.random import uniform_float32, normal_float32
    from nbgrad.jit import PARALLEL_MIN_ELEMENTS
    assert PARALLEL_MIN_ELEMENTS <= 1 << 21, PARALLEL_MIN_ELEMENTS   # the kernels below run in parallel

    def work(seed):
      x = Tensor(np.random.default_rng(seed).standard_normal((2048, 1024), dtype=np.float32))  # 2^21: parallel
      index = Tensor(np.random.default_rng(seed).integers(0, 2048 * 1024, 1 << 21))
      return [((x * 2 + 1).relu().sum(1)).numpy(), (x @ x[:256].T).numpy(), x.reshape(-1).cumsum().numpy(),
              x.reshape(-1)[index].numpy(), uniform_float32(seed, 0, 1 << 17), normal_float32(seed, 0, 1 << 17)]

    serial = [work(seed) for seed in range(4)]
    threaded = [None] * 4
    def run(seed): threaded[seed] = work(seed)
    threads = [threading.Thread(target=run, args=(seed,)) for seed in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    for a, b in zip(serial, threaded):
      for i, (x, y) in enumerate(zip(a, b)):
        if i == 1: np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-4)
        else: np.testing.assert_array_equal(x, y)
    import numba
    print(numba.threading_layer())
  """)
  assert out == "workqueue"


def test_threads_assigning_to_one_tensor_at_once_do_not_break_the_engine():
  """Four threads each assign w + 1 to the same tensor, switching every microsecond: a realize in one thread
  turned nodes another was scheduling into buffers, and the scheduler failed (KeyError, AttributeError). As in
  torch, updates may be lost (read, add, write are not one step), but every step computes and the tensor stays whole."""
  out = run_python("""
    import sys, threading
    sys.setswitchinterval(1e-6)
    from nbgrad import Tensor
    w, errors = Tensor.zeros(4).contiguous().realize(), []
    def add_ones():
      try:
        for _ in range(200): w.assign(w + 1).realize()
      except Exception as e: errors.append(repr(e))
    threads = [threading.Thread(target=add_ones) for _ in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    values = w.numpy()
    assert not errors, errors
    assert (values == values[0]).all() and 200 <= values[0] <= 800, values
    print("ok")
  """)
  assert out == "ok"
