"""The CUDA device against the CPU device (itself tested against torch and numpy elsewhere).

Runs on whatever CUDA device numba sees: a real GPU (benchmarks/gpu_check.sh runs it there), or numba's
simulator, which tests/test_cuda.py starts in a subprocess with NUMBA_ENABLE_CUDASIM=1. The simulator runs
every GPU thread as a Python thread, so shapes stay small."""
import math
import os
import subprocess
import sys
import numpy as np
import pytest
from nbgrad import Tensor, Device, dtypes
from nbgrad.device import backend
from nbgrad.helpers import GlobalCounters

GPU = "CUDA"
rng = np.random.default_rng(0)


def on_both(build, *arrays, dtype=None):
  """build(*tensors) on the CPU and on the GPU; returns both results as numpy arrays."""
  results = []
  for device in ("CPU", GPU):
    tensors = [Tensor(a, device=device, dtype=dtype) for a in arrays]
    out = build(*tensors)
    assert out.device == device
    results.append(out.numpy())
  return results


def assert_same(cpu, gpu, exact=False):
  assert cpu.shape == gpu.shape and cpu.dtype == gpu.dtype
  if exact or cpu.dtype.kind in "biu": np.testing.assert_array_equal(gpu, cpu)
  else: np.testing.assert_allclose(gpu.astype(np.float64), cpu.astype(np.float64), rtol=2e-3 if cpu.dtype.itemsize == 2 else 1e-5, atol=1e-6)


# ---- copies keep every bit
COPY_DTYPES = [dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32,
               dtypes.int64, dtypes.uint64, dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]


UINT = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}


@pytest.mark.parametrize("dt", COPY_DTYPES, ids=str)
def test_copy_round_trip_keeps_bits(dt):
  bits = rng.integers(0, 256, size=24 * dt.itemsize, dtype=np.uint8)   # any bit pattern, NaN payloads too
  if dt == dtypes.bool: bits &= 1
  raw = bits.tobytes()
  cpu = Tensor(np.frombuffer(raw, dtype=UINT[dt.itemsize].np)).bitcast(dt) if dt != dtypes.bool else Tensor(bits.astype(bool))
  gpu = cpu.to(GPU)
  assert gpu.device == Device.canonicalize(GPU)
  back = gpu.to("CPU").realize()
  assert back.device == "CPU" and back.dtype == dt
  assert (back.cast(dtypes.uint8) if dt == dtypes.bool else back.bitcast(UINT[dt.itemsize])).numpy().tobytes() == raw


def test_numpy_item_tolist_from_gpu():
  t = Tensor([[1.5, -2.0], [3.0, 4.25]], device=GPU)
  np.testing.assert_array_equal(t.numpy(), [[1.5, -2.0], [3.0, 4.25]])
  assert t[1, 1].item() == 4.25 and t.tolist() == [[1.5, -2.0], [3.0, 4.25]]
  assert np.asarray(t).dtype == np.float32


# ---- elementwise, broadcasting, views
FLOAT_OPS = {
  "add_mul_relu": lambda a, b: (a * b + a).relu(), "div": lambda a, b: a / b, "sub_max": lambda a, b: (a - b).maximum(b),
  "exp_log": lambda a, b: a.exp() + (b.abs() + 1).log(), "sqrt_sin": lambda a, b: a.abs().sqrt() + b.sin(),
  "tanh_gelu": lambda a, b: a.tanh() + b.gelu(), "sigmoid": lambda a, b: a.sigmoid() * b, "expm1_elu": lambda a, b: a.expm1() + b.elu(),
  "where_cmp": lambda a, b: (a < b).where(a, b) + (a == b) + (a != b), "floor_ceil_round": lambda a, b: (a * 3).floor() + (b * 3).ceil() + (a * 3).round(),
  "pow_clip": lambda a, b: a.abs().pow(b) + a.clip(-0.5, 0.5), "neg_recip": lambda a, b: -a + (b.abs() + 0.5).reciprocal(),
  "erf_atan2": lambda a, b: a.erf() + a.atan2(b) + (a * 0.3).asin() + (b * 0.3).acos() + b.atan(),
  "erfc_lgamma_log10": lambda a, b: a.erfc() + (b.abs() + 0.5).lgamma() + (b * 3).lgamma() + (a.abs() + 0.5).log10(),
  "special": lambda a, b: a.digamma() + (b * 0.3).erfinv() + a.i0() + b.polygamma(1) + (a * 3).i1e(),
}


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float16, dtypes.float64], ids=str)
@pytest.mark.parametrize("name", FLOAT_OPS)
def test_float_elementwise(name, dt):
  a, b = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
  assert_same(*on_both(FLOAT_OPS[name], a, b, dtype=dt))


INT_OPS = {
  "arith": lambda a, b: a * b + a - b, "idiv_mod": lambda a, b: a // b + a % b, "bits": lambda a, b: (a & b) | (a ^ 3) + (a << 2) + (a >> 1),
  "cmp_where": lambda a, b: (a < b).where(a, -b) + (a == b).cast(a.dtype), "max_min": lambda a, b: a.maximum(b) - a.minimum(b),
  "gcd_lcm": lambda a, b: a.gcd(b) + a.lcm(-b),
}


@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.int8, dtypes.uint32, dtypes.int64], ids=str)
@pytest.mark.parametrize("name", INT_OPS)
def test_int_elementwise(name, dt):
  a, b = rng.integers(1, 50, (4, 6)), rng.integers(1, 9, (4, 6))
  assert_same(*on_both(INT_OPS[name], a, b, dtype=dt))


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float16, dtypes.int32], ids=str)
def test_elementwise_whole_rounds_and_a_remainder(dt):
  """Enough outputs that each thread takes several per round of its grid-stride loop, and some are left over."""
  a, b = rng.integers(-20, 20, (3, 701)), rng.integers(-20, 20, 701)
  assert_same(*on_both(lambda x, y: x.T * y[:, None] - x.flip(1).T, a, b, dtype=dt), exact=True)
  assert_same(*on_both(lambda x, y: (x.T < y[:, None]) | (x.T == 0), a, b, dtype=dt), exact=True)


def test_broadcasting_and_scalars():
  assert_same(*on_both(lambda a, b: a + b * 2 - 1, rng.standard_normal((3, 1)), rng.standard_normal((1, 4))))
  assert_same(*on_both(lambda a, b: a * b, rng.standard_normal(()), rng.standard_normal((2, 3))))
  assert_same(*on_both(lambda a: a + 1, np.zeros((0, 3), np.float32)))


VIEWS = {
  "transpose": lambda x: x.T + 1, "flip": lambda x: x.flip(0) * 2, "pad": lambda x: x.pad(((1, 2), (0, 1)), value=-1.0),
  "shrink_step": lambda x: x[1:, ::2] - 1, "expand": lambda x: x[:, :1].expand(4, 6) + x, "reshape_of_permute": lambda x: x.T.reshape(2, 12) * 3,
  "cat_stack": lambda x: x.cat(x * 2, dim=1).stack(x.cat(x, dim=1)), "repeat": lambda x: x.repeat(2, 1),
  "roll_and_circular_pad": lambda x: x.realize().roll((1, -2), (0, 1)).pad(((1, 1), (2, 0)), mode="circular"),
  "reflect_and_replicate_pads": lambda x: x.realize().pad(((2, 1), (1, 2)), mode="reflect").pad(((1, 0), (0, 2)), mode="replicate"),
}


@pytest.mark.parametrize("name", VIEWS)
def test_views(name):
  assert_same(*on_both(VIEWS[name], rng.standard_normal((4, 6))), exact=True)


@pytest.mark.parametrize("src,dst", [(dtypes.float32, dtypes.int32), (dtypes.int32, dtypes.float16), (dtypes.float32, dtypes.bfloat16),
                                     (dtypes.float16, dtypes.float64), (dtypes.float32, dtypes.bool), (dtypes.int64, dtypes.uint8),
                                     (dtypes.bfloat16, dtypes.float32), (dtypes.bool, dtypes.int32)], ids=str)
def test_cast(src, dst):
  values = rng.standard_normal(9) * 100
  assert_same(*on_both(lambda x: x.cast(dst), values, dtype=src), exact=True)


@pytest.mark.parametrize("src,dst", [(dtypes.float32, dtypes.int32), (dtypes.int32, dtypes.float32), (dtypes.float16, dtypes.int16),
                                     (dtypes.float64, dtypes.uint64), (dtypes.uint32, dtypes.int32)], ids=str)
def test_bitcast(src, dst):
  assert_same(*on_both(lambda x: x.bitcast(dst), rng.standard_normal(7) * 100, dtype=src), exact=True)


# ---- reductions: short rows (a loop per thread), long rows (a block per row), columns, everything
REDUCES = {
  "sum": lambda x: x.sum(-1), "sum_cols": lambda x: x.sum(0), "sum_all": lambda x: x.sum(), "max": lambda x: x.max(-1),
  "min_cols": lambda x: x.min(0), "mean_keepdim": lambda x: x.mean(-1, keepdim=True), "std": lambda x: x.std(-1),
  "argmax": lambda x: x.argmax(-1), "argmin_cols": lambda x: x.argmin(0), "softmax": lambda x: x.softmax(-1),
  "log_softmax": lambda x: x.log_softmax(-1), "logsumexp": lambda x: x.logsumexp(-1), "max_all": lambda x: x.max(),
  "prod": lambda x: (x * 0.1 + 1).prod(-1), "prod_cols": lambda x: (x * 0.1 + 1).prod(0),
}


@pytest.mark.parametrize("cols", [7, 300], ids=["short", "long"])
@pytest.mark.parametrize("name", REDUCES)
def test_float_reduce(name, cols):
  assert_same(*on_both(REDUCES[name], rng.standard_normal((3, cols))))


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 6, 100)], ids=["short", "long"])
def test_group_statistics_read_back_through_a_reshape(shape):
  """GroupNorm's shape of kernel: sums over (N, groups, rest) and the values over (N, C, W) in one loop nest."""
  def group_norm(x, w): return x.reshape(shape[0], 2, -1).layernorm().reshape(shape) * w.reshape(1, -1, 1)
  assert_same(*on_both(group_norm, rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape[1]).astype(np.float32)))


@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.bool, dtypes.float16, dtypes.uint8], ids=str)
def test_reduce_dtypes(dt):
  values = rng.integers(0, 3, (3, 260))
  for build in (lambda x: x.sum(-1), lambda x: x.max(-1), lambda x: x.min(0), lambda x: x.sum()):
    assert_same(*on_both(build, values, dtype=dt))


def test_reduce_nan_and_empty():
  values = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]], np.float32)
  assert_same(*on_both(lambda x: x.max(-1), values))
  assert_same(*on_both(lambda x: x.sum(0), np.zeros((0, 3), np.float32)))


def test_float64_arange_and_linspace_take_the_cpu_s_values():
  """start + i * step unfused: the GPU's compiler contracted it into a multiply-add, one rounding fewer."""
  for build in (lambda: Tensor.arange(0.3, 50, 0.1, dtype=dtypes.float64, device=GPU), lambda: Tensor.linspace(-1.3, 7.1, 301, dtype=dtypes.float64, device=GPU)):
    gpu = build().numpy()
    cpu = (Tensor.arange(0.3, 50, 0.1, dtype=dtypes.float64) if gpu.size == 497 else Tensor.linspace(-1.3, 7.1, 301, dtype=dtypes.float64)).numpy()
    np.testing.assert_array_equal(gpu, cpu)


def test_copy_brings_values_from_the_other_device():
  target = Tensor.zeros(2, 3, device=GPU).contiguous().realize()
  target.copy_(Tensor([1.5, -2.0, 3.0]))
  np.testing.assert_array_equal(target.numpy(), np.tile([1.5, -2.0, 3.0], (2, 1)).astype(np.float32))
  back = Tensor.zeros(3).contiguous().realize().copy_(target[1])
  assert back.device == "CPU" and back.tolist() == [1.5, -2.0, 3.0]


# ---- linear algebra, convolution, indexing
@pytest.mark.parametrize("shapes", [((5, 7), (7, 3)), ((2, 4, 6), (6, 5)), ((9,), (9, 2)), ((3, 1, 4, 5), (2, 5, 3)),
                                    ((17, 13), (13, 19))], ids=str)
def test_matmul(shapes):
  a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
  assert_same(*on_both(lambda x, y: x @ y, a, b))
  assert_same(*on_both(lambda x, y: (x.transpose(-1, -2) if x.ndim > 1 else x) @ y, a.swapaxes(-1, -2) if a.ndim > 1 else a, b))


def test_matmul_takes_the_small_tiling_for_few_tiles(monkeypatch):
  """A product with fewer large tiles than the GPU has multiprocessors runs on small tiles; a bigger one on large."""
  from nbgrad.cuda import matmul
  used = []
  source = matmul._source
  monkeypatch.setattr(matmul, "_source", lambda dt, tiling: used.append(tiling) or source(dt, tiling))
  side, per_side = matmul.LARGE.tile, math.isqrt(backend(GPU).multiprocessors - 1) + 1   # per_side ** 2 tiles: enough
  for m in (side, per_side * side + 1):
    assert_same(*on_both(lambda x, y: x @ y, rng.standard_normal((m, 7)), rng.standard_normal((7, m))))
  assert used == [matmul.SMALL, matmul.LARGE]


def test_conv2d_and_pooling():
  x, w, bias = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
  assert_same(*on_both(lambda x, w, b: x.conv2d(w, b, padding=1).relu().max_pool2d(), x, w, bias))
  assert_same(*on_both(lambda x, w: x.conv2d(w, stride=2, groups=1).avg_pool2d(kernel_size=(1, 1)), x, w))


def test_winograd_conv2d_forced(monkeypatch):
  """WINO=1 on the GPU: the tile transforms have no GPU routine yet and run on host copies."""
  monkeypatch.setenv("WINO", "1")
  x, w = rng.standard_normal((2, 3, 7, 6)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
  cpu, gpu = on_both(lambda x, w: x.conv2d(w, padding=1), x, w)
  # Winograd's float32 tolerance: the GPU's products sum in another order, and the output transform scales by 8
  np.testing.assert_allclose(gpu, cpu, rtol=1e-4, atol=1e-5 * np.abs(cpu).max())


def test_indexing():
  x = rng.standard_normal((4, 5))
  assert_same(*on_both(lambda t: t[1:3, ::-2], x), exact=True)
  assert_same(*on_both(lambda t: t[Tensor([2, 0, -1], device=t.device)], x), exact=True)
  assert_same(*on_both(lambda t: t[:, 1][Tensor([2, 0, -1, 9], device=t.device)], x), exact=True)   # a column, read in place
  assert_same(*on_both(lambda t: t[[0, 3], 1:], x), exact=True)
  assert_same(*on_both(lambda t: t.gather(1, Tensor([[0, 4], [1, 1], [2, 3], [4, 0]], device=t.device)), x), exact=True)



@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float16, dtypes.int64, dtypes.bool], ids=str)
def test_index_reads_and_their_gradients_run_on_the_gpu(dt):
  """x[idx] (repeats, negative and out-of-range indices), row reads (an embedding), the same columns of every row,
  a gather along the first dim and a boolean mask, all by the GPU's take kernel; the float gradients by its atomic
  scatter-add, where repeated indices collide."""
  x = rng.standard_normal((6, 5)) > 0 if dt == dtypes.bool else rng.standard_normal((6, 5)) * 4
  index = np.array([[2, 2, -1], [0, 7, 2]])   # 7 is out of range: reads 0
  reads = [lambda t: t[Tensor(index, device=t.device)],
           lambda t: t[:, Tensor([4, 4, 0], device=t.device)],
           lambda t: t[Tensor([1, 1, 3], device=t.device), Tensor([0, 2, 2], device=t.device)],
           lambda t: t.gather(0, Tensor([[1, 5, 0, 2, 9], [3, 3, -1, 0, 5]], device=t.device)),   # a lane per column
           lambda t: t[t.cast(dtypes.float32) > 0]]
  for read in reads: assert_same(*on_both(read, x, dtype=dt), exact=True)
  if dt in (dtypes.float32, dtypes.float16):
    results = []
    for device in ("CPU", GPU):
      t = Tensor(x, device=device, dtype=dt, requires_grad=True)
      sum(read(t).cast(dtypes.float32).sum() * (i + 1) for i, read in enumerate(reads[:4])).backward()
      results.append(t.grad.numpy())
    assert_same(*results)


@pytest.mark.parametrize("mode, antialias", [("bilinear", False), ("bicubic", True)])
def test_interpolation_and_its_gradient_run_on_the_gpu(mode, antialias):
  """Weighted taps along each axis by the GPU's taps kernel, the gradient through the transposed tables."""
  x, results = rng.standard_normal((2, 3, 5, 4)), []
  for device in ("CPU", GPU):
    t = Tensor(x, device=device, dtype=dtypes.float32, requires_grad=True)
    out = t.interpolate(size=(8, 3), mode=mode, antialias=antialias)
    (out * Tensor(np.arange(out.numel(), dtype=np.float32).reshape(out.shape), device=device)).sum().backward()
    results.append((out.numpy(), t.grad.numpy()))
  for ours, cpu in zip(results[1], results[0]): assert_same(cpu, ours)


def test_concatenation_of_many_pieces_and_its_gradient():
  """cat and stack of more than 8 pieces copy each into its slot by a GPU kernel; the gradient of many slices of
  one dim is joined the same way."""
  pieces = [rng.standard_normal((2, i % 3 + 1, 3)).astype(np.float32) for i in range(11)]
  assert_same(*on_both(lambda *ts: ts[0].cat(*ts[1:], dim=1), *pieces), exact=True)
  assert_same(*on_both(lambda *ts: Tensor.stack(*[t[:, :1] for t in ts], dim=0), *pieces), exact=True)
  results = []
  for device in ("CPU", GPU):
    t = Tensor(rng.standard_normal((3, 12)).astype(np.float32) if device == "CPU" else results[0][0], device=device,
               requires_grad=True)
    out = Tensor.stack(*[t[:, i] * (i + 1) for i in range(12)], dim=1)
    (out * out).sum().backward()
    results.append((t.numpy(), out.numpy(), t.grad.numpy()))
  for cpu, gpu in zip(results[0], results[1]): assert_same(cpu, gpu)


def test_setitem():
  results = []
  for device in ("CPU", GPU):
    t = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=device).contiguous().realize()
    t[1, 1:3] = 5.0
    t[2] = Tensor([9.0, 8.0, 7.0, 6.0], device=device)
    results.append(t.numpy())
  assert_same(*results, exact=True)


# ---- random: the same bits on both devices
@pytest.mark.parametrize("draw", ["rand", "randn", "randint", "dropout"])
def test_random_bits_equal_cpu(draw):
  results = []
  for device in ("CPU", GPU):
    Tensor.manual_seed(1234)
    if draw == "rand": out = Tensor.rand(5, 7, device=device)
    elif draw == "randn": out = Tensor.randn(33, device=device)
    elif draw == "randint": out = Tensor.randint(4, 5, low=-3, high=100, device=device)
    else:
      with Tensor.train(): out = Tensor.ones(6, 6, device=device).dropout(0.5)
    results.append(out.numpy())
  assert_same(*results, exact=True)


# ---- autograd: a small MLP's gradients and one SGD step
def test_mlp_gradients_and_step():
  x, y = rng.standard_normal((8, 4)).astype(np.float32), rng.integers(0, 3, 8)
  w1, w2 = rng.standard_normal((4, 16)).astype(np.float32), rng.standard_normal((16, 3)).astype(np.float32)
  results = []
  for device in ("CPU", GPU):
    p1, p2 = Tensor(w1, device=device, requires_grad=True), Tensor(w2, device=device, requires_grad=True)
    loss = (Tensor(x, device=device) @ p1).relu().matmul(p2).sparse_categorical_crossentropy(Tensor(y, device=device))
    loss.backward()
    grads = (p1.grad.numpy(), p2.grad.numpy())
    with Tensor.inference_mode(): p1.assign(p1 - p1.grad * 0.1).realize()
    results.append((loss.numpy(), *grads, p1.numpy()))
  for cpu, gpu in zip(*results): assert_same(cpu, gpu)



def test_jitted_sgd_steps_replay_on_the_gpu():
  """TinyJit's replay on the GPU: launches, argument buffers swapped in, assigned weights copied back."""
  from nbgrad import TinyJit
  w = rng.standard_normal((4, 3)).astype(np.float32)
  batches = [(rng.standard_normal((8, 4)).astype(np.float32), rng.integers(0, 3, 8)) for _ in range(4)]
  results = []
  for device in ("CPU", GPU):
    p = Tensor(w, device=device, requires_grad=True).realize()

    @TinyJit
    def step(x, y):
      loss = (x @ p).sparse_categorical_crossentropy(y)
      p.grad = None
      loss.backward()
      p.assign(p.detach() - 0.1 * p.grad)
      return loss
    losses = [step(Tensor(x, device=device), Tensor(y, device=device)).item() for x, y in batches]
    results.append((np.array(losses, np.float32), p.numpy()))
  for cpu, gpu in zip(*results): assert_same(cpu, gpu)

@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float16, dtypes.int8], ids=str)
def test_values_realized_together_are_stored_by_one_kernel(dt):
  """b = a * 3 - x and c = b + a realized with a: one kernel stores all three, as on the CPU (UNROLL outputs a thread,
  sizes past a whole round: the stores of every value keep the last round's guard)."""
  x, y = ((rng.standard_normal(1029) * 20).astype(np.float32) for _ in range(2))
  results = []
  for device in ("CPU", GPU):
    tx, ty = Tensor(x, device=device).cast(dt).realize(), Tensor(y, device=device).cast(dt).realize()
    a = tx * ty
    b = a * 3 - tx
    c = b + a
    (kernel,) = Tensor.schedule(a, b, c)
    assert len(kernel.also) == 2
    Tensor.realize(a, b, c)
    results.append([t.numpy() for t in (a, b, c)])
  for cpu, gpu in zip(*results): assert_same(cpu, gpu, exact=dt != dtypes.float16)


def test_adam_steps_on_the_gpu():
  """Adam's moments stored by the kernel of the parameter's update, on the GPU as on the CPU."""
  from nbgrad.nn import optim
  w, grads = rng.standard_normal((5, 7)).astype(np.float32), [rng.standard_normal((5, 7)).astype(np.float32) for _ in range(3)]
  results = []
  for device in ("CPU", GPU):
    p = Tensor(w, device=device, requires_grad=True)
    opt = optim.Adam([p], lr=0.05)
    with Tensor.train():
      for g in grads:
        p.grad = Tensor(g, device=device)
        opt.step()
    results.append((p.numpy(), opt.m[0].numpy(), opt.v[0].numpy()))
  for cpu, gpu in zip(*results): assert_same(cpu, gpu)


def test_max_pool_after_a_normalization_gives_every_window_its_gradient():
  """The gradient's mask compares the input, recomputed in another kernel, with the stored window maximum:
  both kernels must round a*b+c alike (the GPU compiler would fuse it into one multiply-add in one of them)."""
  x = Tensor(rng.standard_normal((8, 16, 6, 6)).astype(np.float32), device=GPU, requires_grad=True)
  centered = x - x.mean(axis=(0, 2, 3)).reshape(1, -1, 1, 1).detach()
  (centered * 1.5 + 0.3).max_pool2d(2).sum().backward()
  per_window = x.grad.numpy().reshape(8, 16, 3, 2, 3, 2).sum(axis=(3, 5))
  np.testing.assert_array_equal(per_window, np.full((8, 16, 3, 3), 1.5, np.float32))


def test_gradient_crosses_devices():
  w = Tensor([1.0, 2.0, 3.0], device="CPU", requires_grad=True)
  (w.to(GPU) * Tensor([4.0, 5.0, 6.0], device=GPU)).sum().backward()
  assert w.grad.device == "CPU"
  np.testing.assert_array_equal(w.grad.numpy(), [4.0, 5.0, 6.0])


# ---- bad input and device names
MIXED_DEVICE_OPS = {
  "add": lambda a, other: a + a.to(other), "matmul": lambda a, other: a @ a.to(other),
  "conv2d": lambda a, other: a.conv2d(Tensor(np.ones((1, 1, 2, 2), np.float32), device=other)),
  "compare": lambda a, other: a < a.to(other),
  "where_value": lambda a, other: (a > 0).where(a.to(other), 0), "where_condition": lambda a, other: (a > 0).to(other).where(a, 0),
  "masked_fill": lambda a, other: a.masked_fill((a > 0).to(other), 0),
  "index_tensor": lambda a, other: a[Tensor([0, 0], device=other)],
  "gather": lambda a, other: a.gather(3, Tensor(np.zeros((1, 1, 3, 1), np.int32), device=other)),
}


@pytest.mark.parametrize("first", ["CPU", GPU])
@pytest.mark.parametrize("op", list(MIXED_DEVICE_OPS))
def test_mixing_devices_names_both(op, first):
  """Every op taking several tensors, either way round (where, indexing and gather once mixed devices silently)."""
  a = Tensor(np.ones((1, 1, 3, 3), np.float32), device=first)
  with pytest.raises(ValueError, match="CPU.*CUDA|CUDA.*CPU"):
    MIXED_DEVICE_OPS[op](a, GPU if first == "CPU" else "CPU")


def test_out_of_range_device_names_those_that_exist():
  with pytest.raises(RuntimeError, match="CUDA:7.*CUDA"):
    Tensor([1.0], device="CUDA:7")
  assert Device.canonicalize("cuda:0") == "CUDA"


def test_second_process_compiles_nothing(tmp_path):
  script = ("from nbgrad import Tensor\nfrom nbgrad.helpers import GlobalCounters\n"
            "x = Tensor.arange(1000, device='CUDA').float()\n((x * 2 + 1).relu().sum() + x.softmax(-1).max()).item()\n"
            "print(GlobalCounters.compile_count)\n")
  env = dict(os.environ, NBGRAD_CACHE_DIR=str(tmp_path))
  runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True) for _ in range(2)]
  for run in runs: assert run.returncode == 0, run.stderr
  assert int(runs[0].stdout.split()[-1]) > 0
  if os.getenv("NUMBA_ENABLE_CUDASIM", "0") == "0":   # the simulator compiles nothing, so there is no cache to test
    assert int(runs[1].stdout.split()[-1]) == 0


def test_counters_count_gpu_kernels():
  GlobalCounters.reset()
  Tensor([1.0, 2.0], device=GPU).add(1).realize()
  assert GlobalCounters.kernel_count >= 2   # the copy to the GPU and the add


@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum(axis):
  assert_same(*on_both(lambda x: x.cumsum(axis) * 2, rng.standard_normal((5, 6))))


def test_inverse_det_and_solve():
  matrices = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
  assert_same(*on_both(lambda a: a.inverse() * 2, matrices))
  assert_same(*on_both(lambda a: a.det() + a.slogdet()[1], matrices))
  assert_same(*on_both(lambda a, b: a.solve(b), matrices, rng.standard_normal((2, 3))))
  symmetric = matrices @ np.swapaxes(matrices, -1, -2)
  assert_same(*on_both(lambda a: a.cholesky() + a.eigh()[1] * a.eigh()[0].unsqueeze(-2), symmetric))
  assert_same(*on_both(lambda a: a.svd()[0] * a.svd()[1].unsqueeze(-2) + a.qr()[1], matrices))
  assert_same(*on_both(lambda a: a.lu_factor()[0] + a.solve_triangular(a, upper=True) + a.transpose(-1, -2).lu_solve(*a.lu_factor()), matrices))


def test_scatter_add_and_its_gradient():
  index = rng.integers(0, 4, (6, 3))
  assert_same(*on_both(lambda x, s: x.scatter_add(0, Tensor(index, device=x.device), s) * 2, rng.standard_normal((4, 3)), rng.standard_normal((6, 3))))
  for reduce in ("prod", "amax", "mean"):
    assert_same(*on_both(lambda x, s: x.scatter_reduce(0, Tensor(index, device=x.device), s, reduce), rng.standard_normal((4, 3)), rng.standard_normal((6, 3))))
  rows = rng.integers(0, 4, 5)   # whole slices of a middle dim, repeated ones adding up
  assert_same(*on_both(lambda x, s: x.index_add(1, Tensor(rows, device=x.device), s) * 2, rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 5, 3))))


@pytest.mark.parametrize("axis", [0, 1])
def test_cumprod_and_cummax(axis):
  assert_same(*on_both(lambda x: (x * 0.1 + 1).cumprod(axis) * 2, rng.standard_normal((5, 6))))
  assert_same(*on_both(lambda x: x.cummax(axis)[0] + x.cummin(axis)[1], rng.integers(-3, 3, (5, 6)).astype(np.float32)))
  assert_same(*on_both(lambda x: x.logcumsumexp(axis), rng.standard_normal((5, 6)) * 30))


@pytest.mark.parametrize("axis", [0, 1])
def test_sort_and_topk(axis):
  values = rng.integers(-4, 4, (5, 30)).astype(np.float32)   # ties: the order among equals must match too
  assert_same(*on_both(lambda x: x.argsort(axis, descending=True), values))
  assert_same(*on_both(lambda x: x.sort(axis)[0] * 2, values))
  assert_same(*on_both(lambda x: x.topk(3, axis)[1], values))


SPLIT = (1 << 10) if os.getenv("NUMBA_ENABLE_CUDASIM", "0") != "0" else (1 << 16)   # reduces this long are split


@pytest.mark.parametrize("shape,axis", [((2 * SPLIT,), None), ((3, SPLIT + 5), 1), ((SPLIT, 2), 0)], ids=["all", "rows", "cols"])
def test_long_reduce_into_few_outputs(shape, axis):
  values = rng.standard_normal(shape)
  for build in (lambda x: x.sum(axis), lambda x: x.max(axis) * 2, lambda x: x.mean(axis) + 1):
    assert_same(*on_both(build, values))
  assert_same(*on_both(lambda x: (x > 0).sum(axis), values))


@pytest.mark.parametrize("shapes", [((2, 3, 4, 5), (3, 5, 2)), ((2, 1, 4, 5), (1, 3, 5, 6)), ((0, 3), (3, 4)), ((3, 0), (0, 2))], ids=str)
def test_batched_and_empty_matmul(shapes):
  a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
  assert_same(*on_both(lambda x, y: x @ y, a, b))
  assert_same(*on_both(lambda x, y: x @ y, a, b, dtype=dtypes.float64))


def test_constants_differing_only_in_the_sign_of_zero():
  """Kernels share parameter arrays by value: 0.0 and -0.0 compare equal but multiply differently."""
  x = rng.standard_normal(4).astype(np.float32)
  for zero in (-0.0, 0.0, -0.0):
    cpu, gpu = on_both(lambda t: t * zero, x)
    np.testing.assert_array_equal(np.signbit(gpu), np.signbit(cpu))


def test_constant_outputs():
  assert_same(*on_both(lambda x: Tensor.full((5,), 2.5, device=x.device).contiguous() + x * 0, rng.standard_normal(5)))
  results = [Tensor.full((3, 2), -1.5, device=d).contiguous().numpy() for d in ("CPU", GPU)]
  assert_same(*results, exact=True)


@pytest.mark.parametrize("n,low,high", [(1, 0.0, 1.0), (2, 0.0, 1.0), (77, 0.0, 1.0), (300, -2.0, 3.5)])
def test_uniform_draws_made_on_the_gpu(n, low, high):
  results = []
  for device in ("CPU", GPU):
    Tensor.manual_seed(7)
    Tensor.rand(3, device=device).realize()   # moves the counter
    results.append(Tensor.uniform(n, low=low, high=high, device=device).numpy())
  assert_same(*results, exact=True)
