"""matmul / dot: forward and both gradients against torch (CPU, float64 on the same values), for 1-D,
2-D, batched and broadcast operands, non-contiguous views, size-1 and zero-size dims, float and int
dtypes and acc_dtype. Float products run as one BLAS kernel; int products keep the multiply-and-sum path."""
import numba
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes

DTYPES = {"float32": (dtypes.float32, np.float32, dict(rtol=1e-5, atol=1e-5)),
          "float64": (dtypes.float64, np.float64, dict(rtol=1e-12, atol=1e-12)),
          "float16": (dtypes.float16, np.float16, dict(rtol=1e-2, atol=1e-2)),
          "int32": (dtypes.int32, np.int32, dict(rtol=0, atol=0))}


# How an operand is made from a contiguous leaf, the same way in both libraries, and the leaf's shape
# for an operand shape.
def _transposed(x): return x.transpose(-1, -2)
def _every_other_column(x): return x[..., ::2]
def _broadcast_rows(x): return x.expand(*x.shape[:-2], 3, x.shape[-1])
def _flipped(x): return x.flip(-1)
def _padded_rows(x): return x.pad(((1, 1), (0, 0))) if isinstance(x, Tensor) else torch.nn.functional.pad(x, (0, 0, 1, 1))


VIEWS = {
  None: (lambda x: x, lambda shape: shape),
  "T": (_transposed, lambda shape: shape[:-2] + (shape[-1], shape[-2])),
  "step": (_every_other_column, lambda shape: shape[:-1] + (2 * shape[-1],)),
  "rows": (_broadcast_rows, lambda shape: shape[:-2] + (1, shape[-1])),
  "flip": (_flipped, lambda shape: shape),
  "pad": (_padded_rows, lambda shape: (shape[0] - 2, shape[1])),
  "cols": (lambda x: x[..., 1:], lambda shape: shape[:-1] + (shape[-1] + 1,)),   # all but the first column
}

# id -> (a shape, b shape, view of a, view of b)
CASES = {
  "vec_vec": ((4,), (4,), None, None),
  "vec_mat": ((4,), (4, 3), None, None),
  "mat_vec": ((3, 4), (4,), None, None),
  "mat_mat": ((3, 4), (4, 2), None, None),
  "batched": ((2, 3, 4), (2, 4, 2), None, None),
  "batched_broadcast": ((2, 1, 3, 4), (5, 4, 2), None, None),
  "batched_times_mat": ((2, 3, 4), (4, 2), None, None),
  "mat_times_batched": ((3, 4), (2, 4, 2), None, None),
  "vec_times_batched": ((4,), (2, 4, 2), None, None),
  "batched_times_vec": ((2, 3, 4), (4,), None, None),
  "a_transposed": ((3, 4), (4, 2), "T", None),
  "b_transposed": ((3, 4), (4, 2), None, "T"),
  "both_transposed_batched": ((2, 3, 4), (2, 4, 2), "T", "T"),
  "a_step_slice": ((3, 4), (4, 2), "step", None),
  "a_broadcast_rows": ((3, 4), (4, 2), "rows", None),
  "b_flipped": ((3, 4), (4, 2), None, "flip"),
  "a_padded": ((5, 4), (4, 2), "pad", None),
  "size1_k": ((3, 1), (1, 2), None, None),
  "size1_m_n": ((1, 4), (4, 1), None, None),
  "size1_vec": ((1,), (1,), None, None),
  "zero_k": ((3, 0), (0, 2), None, None),
  "zero_m": ((0, 4), (4, 2), None, None),
  "zero_n": ((3, 4), (4, 0), None, None),
  "zero_batch": ((0, 3, 4), (4, 2), None, None),
  "zero_k_b_sliced": ((3, 0), (0, 3), None, "cols"),   # a window past the end of an empty buffer: zeros, as torch's
}


def leaves(case, dtype_name, seed=0):
  """(nbgrad leaves, torch float64 leaves, nbgrad operands, torch operands) for one case."""
  a_shape, b_shape, a_view, b_view = CASES[case]
  dtype, np_dtype, _ = DTYPES[dtype_name]
  rng = np.random.default_rng(seed)
  grad = dtypes.is_float(dtype)
  nb, th, nb_ops, th_ops = [], [], [], []
  for shape, view in ((a_shape, a_view), (b_shape, b_view)):
    apply, leaf_shape = VIEWS[view]
    values = rng.integers(-3, 4, leaf_shape(shape)) if not grad else rng.standard_normal(leaf_shape(shape))
    values = values.astype(np_dtype)
    nb.append(Tensor(values, dtype=dtype, requires_grad=grad))
    th.append(torch.tensor(values.astype(np.float64), requires_grad=grad))
    nb_ops.append(apply(nb[-1]))
    th_ops.append(apply(th[-1]))
  return nb, th, nb_ops, th_ops


def assert_close(got, want, tol):
  np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64), **tol)


@pytest.mark.parametrize("dtype_name", list(DTYPES))
@pytest.mark.parametrize("case", list(CASES))
def test_matmul_matches_torch(case, dtype_name):
  dtype, np_dtype, tol = DTYPES[dtype_name]
  nb, th, (a, b), (ta, tb) = leaves(case, dtype_name)
  out, want = a @ b, ta @ tb
  assert out.shape == tuple(want.shape) and out.dtype == dtype
  assert_close(out.numpy(), want.detach().numpy(), tol)
  if not dtypes.is_float(dtype): return
  g = np.random.default_rng(1).standard_normal(out.shape).astype(np_dtype)
  (out * Tensor(g, dtype=dtype)).sum().backward()
  (want * torch.tensor(g.astype(np.float64))).sum().backward()
  for i, (x, tx) in enumerate(zip(nb, th)):
    assert x.grad is not None and x.grad.shape == x.shape and x.grad.dtype == dtype, f"gradient of input {i}"
    assert_close(x.grad.numpy(), tx.grad.numpy(), tol)


@pytest.mark.parametrize("case", ["mat_mat", "batched_broadcast"])
def test_float_products_run_one_matmul_kernel(case):
  _, _, (a, b), _ = leaves(case, "float32")
  kernels = (a @ b).schedule()
  assert [k.kind for k in kernels] == ["custom"] and kernels[0].name.startswith("matmul_")


def test_the_dot_product_of_vectors_is_one_multiply_and_sum_kernel():
  _, _, (a, b), _ = leaves("vec_vec", "float32")
  assert [k.kind for k in (a @ b).schedule()] == ["compute"]


def test_int_products_keep_the_multiply_and_sum_path():
  _, _, (a, b), _ = leaves("mat_mat", "int32")
  assert all(k.kind == "compute" for k in (a @ b).schedule())


@pytest.mark.parametrize("a_shape,b_shape,npdt", [((3, 37, 301), (301, 1100), np.int32), ((5, 301), (2, 301, 9), np.int64),
                                                  ((301,), (4, 301, 7), np.int32), ((6, 301), (301,), np.int64)])
def test_int_products_wrap_as_numpy(a_shape, b_shape, npdt):
  """Big values whose sums wrap around: the same bits as numpy's for every layout (more columns than one block of
  accumulators, an odd inner size, a 1-D operand on either side)."""
  rng = np.random.default_rng(11)
  bound = 1 << (20 if npdt == np.int32 else 40)
  a, b = rng.integers(-bound, bound, a_shape).astype(npdt), rng.integers(-bound, bound, b_shape).astype(npdt)
  np.testing.assert_array_equal((Tensor(a) @ Tensor(b[..., ::-1, :] if b.ndim > 1 else b[::-1])).numpy(),
                                a @ (b[..., ::-1, :] if b.ndim > 1 else b[::-1]))


def test_transposed_operand_is_read_in_place():
  """x.T @ g, as in a linear layer's backward, copies nothing before the product."""
  x, g = Tensor(np.ones((5, 3), np.float32)).realize(), Tensor(np.ones((5, 2), np.float32)).realize()
  assert [k.kind for k in (x.T @ g).schedule()] == ["custom"]


@pytest.mark.parametrize("a_shape,b_shape,transpose", [((4, 20001), (20001, 3), False), ((2, 3, 9000), (2, 9000, 5), True),
                                                      ((3, 8192), (1, 8192, 2), False)])
def test_products_with_a_long_inner_size_against_torch(a_shape, b_shape, transpose):
  """K far larger than the output (a convolution's weight gradient): cut along K, a remainder piece too,
  with transposed and broadcast operands, forward and both gradients."""
  rng = np.random.default_rng(7)
  a_data, b_data = rng.standard_normal(a_shape).astype(np.float32), rng.standard_normal(b_shape).astype(np.float32)
  if transpose: b_data = np.ascontiguousarray(np.swapaxes(b_data, -1, -2))
  a, b = Tensor(a_data, requires_grad=True), Tensor(b_data, requires_grad=True)
  ta, tb = torch.tensor(a_data, dtype=torch.float64, requires_grad=True), torch.tensor(b_data, dtype=torch.float64, requires_grad=True)
  out = a @ (b.transpose(-1, -2) if transpose else b)
  ref = ta @ (tb.transpose(-1, -2) if transpose else tb)
  weights = rng.standard_normal(ref.shape).astype(np.float32)
  (out * Tensor(weights)).sum().backward()
  (ref * torch.tensor(weights, dtype=torch.float64)).sum().backward()
  scale = float(np.sqrt(a_shape[-1]))
  np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-5 * scale)
  np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-4, atol=1e-5 * scale)
  np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("busy", [True, False], ids=["cores_busy", "cores_free"])
@pytest.mark.parametrize("a_shape,b_shape,dtype", [((6, 200, 200), (6, 200, 200), np.float32), ((600, 200), (200, 200), np.float32),
                                                   ((1, 8, 900), (1, 900, 2400), np.float32), ((4, 1, 140, 64), (1, 3, 64, 160), np.float32),
                                                   ((600, 200), (200, 200), np.float64), ((6, 100, 200), (6, 200, 100), np.float32)],
                         ids=["batch", "rows", "columns", "broadcast_batch", "rows_float64", "batch_below_parts"])
def test_big_products_on_blas_threads_or_in_parts_against_torch(a_shape, b_shape, dtype, busy, monkeypatch):
  """A big product (PARTS_MIN_MULTIPLY_ADDS) runs in parts (along the batch, the rows or the columns), each on a
  thread with BLAS at one thread, when other processes want the cores, or when it has few rows or terms, or when
  it is cut along a batch; else on BLAS's own threads. The thread count numpy's BLAS had is set back afterwards."""
  from nbgrad.jit import blas
  before = blas._OPENBLAS[0]() if blas._OPENBLAS else None
  in_parts = []
  monkeypatch.setattr(blas, "_cores_busy_elsewhere", lambda parts: busy)
  for route in ("_on_worker_threads", "_on_numba_threads"):
    monkeypatch.setattr(blas, route, lambda first, *rest, run=getattr(blas, route): in_parts.append(len(first) if isinstance(first, list) else rest[-1]) or run(first, *rest))
  rng = np.random.default_rng(3)
  a_data, b_data = rng.standard_normal(a_shape).astype(dtype), rng.standard_normal(b_shape).astype(dtype)
  a, b = Tensor(a_data, requires_grad=True), Tensor(b_data, requires_grad=True)
  ta, tb = torch.tensor(a_data, dtype=torch.float64, requires_grad=True), torch.tensor(b_data, dtype=torch.float64, requires_grad=True)
  out, ref = a @ b, ta @ tb
  out.realize()
  forward_in_parts = list(in_parts)
  out.sum().backward()
  ref.sum().backward()
  for got, want in ((out, ref), (a.grad, ta.grad), (b.grad, tb.grad)):
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)
  if before is not None:
    assert blas._OPENBLAS[0]() == before
    if numba.get_num_threads() > 1:
      few_rows_or_terms = min(a_shape[-2], a_shape[-1]) < blas.BLAS_THREADS_MIN_SIDE
      along_batch = len(a_shape) > 2 and a_shape[0] > 1
      big = np.prod(np.broadcast_shapes(a_shape[:-1], b_shape[:-2] + (1,))) * b_shape[-1] * a_shape[-1] >= blas.PARTS_MIN_MULTIPLY_ADDS
      assert bool(forward_in_parts) == (big and (busy or few_rows_or_terms or along_batch))
      if forward_in_parts: assert forward_in_parts[0] > 1


def test_products_from_several_python_threads_leave_numpy_blas_threads_as_they_were():
  import threading
  from nbgrad.jit import blas
  before = blas._OPENBLAS[0]() if blas._OPENBLAS else None
  a = np.random.default_rng(4).standard_normal((400, 300)).astype(np.float32)   # big enough to run in parts
  results = [None] * 4

  def work(i):
    results[i] = (Tensor(a) @ Tensor(a.T) * (i + 1)).numpy()
  threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
  for t in threads: t.start()
  for t in threads: t.join()
  for i, got in enumerate(results): np.testing.assert_allclose(got, (a.astype(np.float64) @ a.T) * (i + 1), rtol=1e-4, atol=1e-3)
  if before is not None: assert blas._OPENBLAS[0]() == before


# id -> (input dtype, acc_dtype, whether BLAS can honour it)
ACC_CASES = {
  "float16_acc_float32": ("float16", dtypes.float32, True),
  "float32_acc_float64": ("float32", dtypes.float64, True),
  "float64_acc_float32": ("float64", dtypes.float32, True),
  "float32_acc_float16": ("float32", dtypes.float16, False),
  "int32_acc_int64": ("int32", dtypes.int64, False),
}


@pytest.mark.parametrize("acc", list(ACC_CASES))
def test_acc_dtype(acc):
  dtype_name, acc_dtype, blas = ACC_CASES[acc]
  dtype, _, tol = DTYPES[dtype_name]
  _, _, (a, b), (ta, tb) = leaves("batched", dtype_name)
  out = a.matmul(b, acc_dtype=acc_dtype)
  assert out.dtype == dtype and out.shape == (2, 3, 2)
  assert any(k.kind == "custom" for k in out.schedule()) == blas
  loose = dict(rtol=1e-2, atol=1e-2) if dtypes.float16 in (dtype, acc_dtype) else dict(rtol=1e-5, atol=1e-5)
  assert_close(out.numpy(), (ta @ tb).detach().numpy(), tol if dtype_name == "int32" else loose)


def test_dot_acc_dtype_and_reverse_matmul():
  _, _, (a, b), (ta, tb) = leaves("mat_mat", "float32")
  assert_close(a.dot(b, acc_dtype=dtypes.float64).numpy(), (ta @ tb).detach().numpy(), DTYPES["float32"][2])
  assert_close(b.matmul(a, reverse=True).numpy(), (ta @ tb).detach().numpy(), DTYPES["float32"][2])


def test_gradients_accumulate_over_two_backward_calls():
  nb, th, (a, b), (ta, tb) = leaves("batched_broadcast", "float32")
  for _ in range(2):
    (a @ b).relu().sum().backward()
    (ta @ tb).relu().sum().backward()
  for x, tx in zip(nb, th): assert_close(x.grad.numpy(), tx.grad.numpy(), DTYPES["float32"][2])


def test_mixed_int_and_float_operands_promote():
  a, b = Tensor(np.arange(12, dtype=np.int32).reshape(3, 4)), Tensor(np.ones((4, 2), np.float32))
  out = a @ b
  assert out.dtype == dtypes.float32
  assert_close(out.numpy(), np.arange(12).reshape(3, 4) @ np.ones((4, 2)), DTYPES["float32"][2])


@pytest.mark.parametrize("a_shape,b_shape", [((3, 4), (3, 4)), ((4,), (3,)), ((2, 3, 4), (2, 5, 2)), ((3,), ())])
def test_bad_shapes_raise_at_the_call(a_shape, b_shape):
  a, b = Tensor.ones(*a_shape), Tensor.ones(*b_shape)
  with pytest.raises(ValueError) as error:
    a @ b
  assert str(a_shape) in str(error.value) and str(b_shape) in str(error.value)
