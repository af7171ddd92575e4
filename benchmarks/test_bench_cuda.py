"""GPU benchmarks: nbgrad on CUDA against torch on CUDA, in one run (benchmarks/gpu_check.sh runs them).

Every timed call ends with a device synchronize, so the GPU work is inside the time. Each row records the
bandwidth (GB/s, bytes read + written) or arithmetic rate (GFLOP/s) it reached; the elementwise group has a
torch device-to-device copy of the same size as the bandwidth reference.

Run: python -m pytest benchmarks/test_bench_cuda.py --benchmark-json=/tmp/bench_cuda.json
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from nbgrad import Tensor, Device, TinyJit
from nbgrad import cuda as cuda_device
from test_bench_conv import conv_calls, conv_flops
from test_bench_linalg import MODELS, nbgrad_step, torch_step

if cuda_device.simulator_enabled() or not cuda_device.gpu_visible() or not torch.cuda.is_available():
  pytest.skip("needs an NVIDIA GPU that both numba.cuda and torch can use", allow_module_level=True)

GPU = "CUDA"
ROUNDS = dict(rounds=20, iterations=1, warmup_rounds=2)
BIG = 1 << 28              # 256M float32 = 1 GiB per array
SQUARE = (16384, 16384)    # 1 GiB


def nbgrad_sync(): Device.synchronize(GPU)


def run(benchmark, lib, fn, *, bytes_moved=0, flops=0):
  """Times fn (which returns what it computed) with the device synchronized, and records its rates."""
  sync = torch.cuda.synchronize if lib == "torch" else nbgrad_sync

  def call():
    out = fn()
    sync()
    return out
  call()
  if lib == "nbgrad": benchmark.extra_info["kernels_per_call"] = kernels_per_call(call)
  benchmark.pedantic(call, **ROUNDS)
  if benchmark.stats is None: return   # --benchmark-disable: the answers are checked, nothing is timed
  median = benchmark.stats.stats.median
  if bytes_moved: benchmark.extra_info["GB/s"] = round(bytes_moved / median / 1e9, 1)
  if flops: benchmark.extra_info["GFLOP/s"] = round(flops / median / 1e9, 1)


def kernels_per_call(call) -> int:
  from nbgrad.helpers import GlobalCounters
  GlobalCounters.reset()
  call()
  return GlobalCounters.kernel_count


def inputs(lib, *shapes, seed=0):
  arrays = [np.random.default_rng(seed + i).standard_normal(s, dtype=np.float32) for i, s in enumerate(shapes)]
  if lib == "torch": return [torch.from_numpy(a).cuda() for a in arrays]
  return [Tensor(a, device=GPU).realize() for a in arrays]


def check(nbgrad_value, torch_value, rtol=1e-4, atol=1e-4):
  np.testing.assert_allclose(nbgrad_value.numpy(), torch_value.cpu().numpy(), rtol=rtol, atol=atol)


# ---- elementwise
@pytest.mark.benchmark(group="cuda-elementwise")
@pytest.mark.parametrize("size", [1 << 24, BIG], ids=["16M", "256M"])
@pytest.mark.parametrize("lib", ["nbgrad", "torch", "torch_copy"])
def test_cuda_elementwise_fma_relu(benchmark, lib, size):
  x, y, z = inputs("torch" if lib.startswith("torch") else lib, size, size, size)
  if lib == "torch_copy":   # the bandwidth reference: read one array, write one
    out = torch.empty_like(x)
    run(benchmark, lib, lambda: out.copy_(x), bytes_moved=2 * 4 * size)
  elif lib == "torch": run(benchmark, lib, lambda: torch.relu(x * y + z), bytes_moved=4 * 4 * size)
  else: run(benchmark, lib, lambda: (x * y + z).relu().realize(), bytes_moved=4 * 4 * size)


@pytest.mark.benchmark(group="cuda-elementwise")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_cuda_elementwise_gelu(benchmark, lib):
  (x,) = inputs(lib, BIG)
  fn = (lambda: F.gelu(x, approximate="tanh")) if lib == "torch" else (lambda: x.gelu().realize())
  run(benchmark, lib, fn, bytes_moved=2 * 4 * BIG)


# ---- reductions
REDUCES = {
  "sum_all": ((BIG,), lambda x: x.sum(), lambda x: x.sum(), 1),
  "sum_axis1": (SQUARE, lambda x: x.sum(1), lambda x: x.sum(1), 1),
  "max_axis0": (SQUARE, lambda x: x.max(0), lambda x: x.amax(0), 1),
  "softmax": (SQUARE, lambda x: x.softmax(-1), lambda x: torch.softmax(x, -1), 2),
}


@pytest.mark.benchmark(group="cuda-reduce")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
@pytest.mark.parametrize("name", REDUCES)
def test_cuda_reduce(benchmark, lib, name):
  shape, nbgrad_fn, torch_fn, passes = REDUCES[name]
  (x,) = inputs(lib, shape)
  fn = (lambda: torch_fn(x)) if lib == "torch" else (lambda: nbgrad_fn(x).realize())
  run(benchmark, lib, fn, bytes_moved=passes * 4 * int(np.prod(shape)))


def test_cuda_reduce_values_match_torch():
  for name, (shape, nbgrad_fn, torch_fn, _) in REDUCES.items():
    shape = tuple(min(s, 4096) for s in shape)
    (a,), (b,) = inputs("nbgrad", shape), inputs("torch", shape)
    check(nbgrad_fn(a), torch_fn(b), rtol=1e-3, atol=1e-2 if name == "sum_all" else 1e-4)


# ---- matmul
@pytest.mark.benchmark(group="cuda-matmul")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
@pytest.mark.parametrize("n", [1024, 2048, 4096])
def test_cuda_matmul(benchmark, lib, n):
  a, b = inputs(lib, (n, n), (n, n))
  fn = (lambda: a @ b) if lib == "torch" else (lambda: (a @ b).realize())
  run(benchmark, lib, fn, flops=2 * n ** 3)


def test_cuda_matmul_matches_torch():
  (a, b), (ta, tb) = inputs("nbgrad", (512, 300), (300, 700)), inputs("torch", (512, 300), (300, 700))
  check(a @ b, ta @ tb, rtol=1e-4, atol=1e-3)


# ---- convolution and training: the CPU benchmarks' workloads (test_bench_conv.py, test_bench_linalg.py), on the GPU


@pytest.mark.benchmark(group="cuda-conv")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
@pytest.mark.parametrize("mode", ["forward", "forward_backward"])
def test_cuda_conv(benchmark, lib, mode):
  call, _ = conv_calls(lib, mode, GPU)
  run(benchmark, lib, call, flops=conv_flops() * (1 if mode == "forward" else 3))


@pytest.mark.benchmark(group="cuda-train")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
@pytest.mark.parametrize("model", list(MODELS))
def test_cuda_train_step(benchmark, lib, model):
  step, _ = (nbgrad_step if lib == "nbgrad" else torch_step)(model, GPU)
  run(benchmark, lib, step)


@pytest.mark.benchmark(group="cuda-train")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
@pytest.mark.parametrize("model", list(MODELS))
def test_cuda_train_step_tinyjit(benchmark, lib, model):
  """The same steps, nbgrad's under TinyJit (its kernels launched again without its Python); torch's as above."""
  step, _ = (nbgrad_step if lib == "nbgrad" else torch_step)(model, GPU)
  run(benchmark, lib, TinyJit(step) if lib == "nbgrad" else step)


def test_cuda_train_losses_match_torch():
  for model in MODELS:
    for jitted in (False, True):
      (ours, _), (theirs, _) = nbgrad_step(model, GPU), torch_step(model, GPU)
      if jitted: ours = TinyJit(ours)
      for _ in range(4): np.testing.assert_allclose(ours().numpy(), theirs().item(), rtol=1e-3)
