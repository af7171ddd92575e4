"""conv2d (1-D/2-D/3-D), conv_transpose2d, avg/max pooling, gather and einsum: forward and backward against torch (CPU)."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from nbgrad import Tensor, dtypes

# nbgrad runs in float32; the torch oracle runs in float64 on the same float32 values
TOL = dict(rtol=1e-4, atol=1e-4)


def randn(shape, seed):
  return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def nb_leaf(a):
  return Tensor(a, requires_grad=True)


def th_leaf(a):
  return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def weighted_backward(nb_out, th_out, seed):
  """Compare forward values, then backprop (out * g).sum() with random g through both."""
  assert nb_out.shape == tuple(th_out.shape), (nb_out.shape, tuple(th_out.shape))
  np.testing.assert_allclose(nb_out.numpy(), th_out.detach().numpy(), **TOL)
  g = randn(tuple(th_out.shape), seed)
  (nb_out * Tensor(g)).sum().backward()
  (th_out * torch.tensor(g, dtype=torch.float64)).sum().backward()


def check_grads(nb_leaves, th_leaves):
  for i, (a, b) in enumerate(zip(nb_leaves, th_leaves)):
    assert a.grad is not None, f"input {i} got no gradient"
    assert a.grad.shape == tuple(b.grad.shape), (i, a.grad.shape, tuple(b.grad.shape))
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), err_msg=f"gradient of input {i}", **TOL)


# ---------------------------------------------------------------- conv2d
# id -> (x shape, weight shape, bias?, kwargs for nbgrad conv2d)
# padding: an int, one value per spatial dim (torch order), or 4 values (left, right, top, bottom) as pad2d takes them
CONV_CASES = {
  "1d_stride2_bias": ((2, 2, 6), (3, 2, 3), True, dict(stride=2)),
  "2d_pad_int_bias": ((2, 2, 5, 5), (3, 2, 3, 3), True, dict(padding=1)),
  "2d_groups2_stride_tuple_pad_tuple": ((1, 4, 5, 5), (4, 2, 2, 2), False, dict(groups=2, stride=(2, 1), padding=(1, 0))),
  "2d_depthwise_dilation2": ((1, 3, 6, 6), (3, 1, 3, 3), True, dict(groups=3, dilation=2, padding=2)),
  "2d_pad4_ltrb": ((1, 2, 5, 4), (2, 2, 2, 3), False, dict(padding=(1, 0, 2, 1))),
  "2d_pad4_negative": ((1, 2, 5, 5), (2, 2, 2, 2), True, dict(padding=(-1, 1, 0, -1))),
  "2d_noncontig_dilation_tuple": ((2, 2, 5, 6), (2, 2, 2, 2), False, dict(stride=(1, 2), dilation=(2, 1))),
  "3d_pad_tuple": ((1, 2, 4, 3, 4), (2, 2, 2, 2, 2), True, dict(padding=(1, 0, 1))),
  "2d_k3_stride2_pad1": ((2, 3, 7, 8), (4, 3, 3, 3), False, dict(stride=2, padding=1)),
  "2d_k3_stride2_dilation2": ((1, 2, 9, 10), (2, 2, 3, 3), True, dict(stride=2, dilation=2, padding=1)),
  "2d_k2_stride3_gaps": ((1, 2, 8, 7), (2, 2, 2, 2), False, dict(stride=3)),
  "3d_k3_pad1": ((1, 2, 4, 5, 4), (2, 2, 3, 3, 3), False, dict(padding=1)),
  "2d_k7_pad3_many_offsets": ((1, 2, 9, 9), (2, 2, 7, 7), False, dict(padding=3)),
  # more offsets than one kernel sums at once: the input gradient is summed one dim at a time
  "2d_k5_stride_dilation_by_dim": ((2, 3, 11, 12), (4, 3, 5, 5), True, dict(stride=(2, 1), dilation=(1, 2), padding=1)),
  "1d_k17_one_reduce": ((1, 2, 30), (2, 2, 17), False, dict()),
}


def torch_conv(x, w, b, groups=1, stride=1, dilation=1, padding=0):
  dims = w.ndim - 2
  fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dims]
  if isinstance(padding, (tuple, list)) and len(padding) == 2 * dims:
    x = F.pad(x, tuple(padding))   # F.pad takes (left, right, top, bottom, ...): last dim first, like pad2d
    padding = 0
  return fn(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)


@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv2d(case):
  xs, ws, has_bias, kw = CONV_CASES[case]
  xv, wv = randn(xs, 1), randn(ws, 2)
  bv = randn((ws[0],), 3) if has_bias else None
  if case.startswith("2d_noncontig"):
    # the input is a permuted view of an (N, H, W, C) buffer
    base = nb_leaf(np.ascontiguousarray(xv.transpose(0, 2, 3, 1)))
    nb_x = base.permute(0, 3, 1, 2)
  else:
    base = nb_x = nb_leaf(xv)
  nb_w = nb_leaf(wv)
  nb_b = nb_leaf(bv) if has_bias else None
  th_x, th_w = th_leaf(xv), th_leaf(wv)
  th_b = th_leaf(bv) if has_bias else None
  weighted_backward(nb_x.conv2d(nb_w, nb_b, **kw), torch_conv(th_x, th_w, th_b, **kw), 4)
  nb_leaves, th_leaves = [nb_w] + ([nb_b] if has_bias else []), [th_w] + ([th_b] if has_bias else [])
  check_grads(nb_leaves, th_leaves)
  assert base.grad is not None
  gx = base.grad.numpy()
  if case.startswith("2d_noncontig"): gx = gx.transpose(0, 3, 1, 2)
  np.testing.assert_allclose(gx, th_x.grad.numpy(), err_msg="gradient of x", **TOL)


# 2-D convolutions on the CPU run an image at a time (linalg.DirectConv): each case below checks that
# they did (the kernel's name) and compares values and both gradients with torch
DIRECT_CONV_CASES = {
  "plain": ((3, 4, 9, 8), (6, 4, 3, 3), dict()),
  "groups_stride_dilation_pad": ((3, 4, 9, 8), (6, 2, 3, 2), dict(groups=2, stride=(2, 1), dilation=(1, 2), padding=(2, 1))),
  "depthwise_stride3": ((2, 3, 10, 11), (3, 1, 2, 3), dict(groups=3, stride=3)),
  "pad4_ltrb": ((4, 2, 7, 9), (5, 2, 3, 3), dict(padding=(1, 2, 0, 3))),
  "k5_pad_same": ((2, 3, 7, 6), (4, 3, 5, 5), dict(padding="same")),
  "k1x1": ((5, 6, 4, 3), (2, 6, 1, 1), dict()),
  "padding_wider_than_the_image": ((2, 1, 2, 3), (2, 1, 3, 3), dict(padding=3, dilation=2)),
  # a single image's output rows are cut into blocks that the threads share
  "single_image": ((1, 3, 9, 7), (4, 3, 3, 3), dict(padding=1)),
  "single_image_groups_stride": ((1, 4, 9, 8), (6, 2, 3, 2), dict(groups=2, stride=(2, 1), dilation=(1, 2), padding=(2, 1))),
  "single_image_one_row": ((1, 2, 1, 7), (3, 2, 1, 3), dict()),
}


@pytest.mark.parametrize("layout", ["contiguous", "permuted_input_transposed_weight"])
@pytest.mark.parametrize("case", list(DIRECT_CONV_CASES))
def test_batched_conv2d_an_image_at_a_time(case, layout):
  xs, ws, kw = DIRECT_CONV_CASES[case]
  xv, wv, bv = randn(xs, 11), randn(ws, 12), randn((ws[0],), 13)
  if layout == "contiguous": base_x, base_w = nb_leaf(xv), nb_leaf(wv)
  else:   # views: x from an (N, H, W, C) buffer, w from a (KW, KH, Cin, Cout) one
    base_x, base_w = nb_leaf(np.ascontiguousarray(xv.transpose(0, 2, 3, 1))), nb_leaf(np.ascontiguousarray(wv.transpose(3, 2, 1, 0)))
  nb_x = base_x if layout == "contiguous" else base_x.permute(0, 3, 1, 2)
  nb_w = base_w if layout == "contiguous" else base_w.permute(3, 2, 1, 0)
  nb_b = nb_leaf(bv)
  out = nb_x.conv2d(nb_w, nb_b, **kw)
  assert any(k.name.startswith("conv_forward") for k in out.schedule())
  th_x, th_w, th_b = th_leaf(xv), th_leaf(wv), th_leaf(bv)
  padding = kw.get("padding", 0)
  th_in = F.pad(th_x, padding) if isinstance(padding, tuple) and len(padding) == 4 else th_x
  th_kw = {k: v for k, v in kw.items() if k != "padding" or not isinstance(v, tuple) or len(v) == 2}
  weighted_backward(out, F.conv2d(th_in, th_w, th_b, **th_kw), 14)
  gx, gw = base_x.grad.numpy(), base_w.grad.numpy()
  if layout != "contiguous": gx, gw = gx.transpose(0, 3, 1, 2), gw.transpose(3, 2, 1, 0)
  np.testing.assert_allclose(gx, th_x.grad.numpy(), err_msg="gradient of x", **TOL)
  np.testing.assert_allclose(gw, th_w.grad.numpy(), err_msg="gradient of w", **TOL)
  np.testing.assert_allclose(nb_b.grad.numpy(), th_b.grad.numpy(), err_msg="gradient of b", **TOL)


@pytest.mark.parametrize("grad_of", ["x", "w"])
def test_batched_conv2d_float64_and_one_gradient(grad_of):
  rng = np.random.default_rng(15)
  xv, wv = rng.standard_normal((3, 2, 6, 7)), rng.standard_normal((4, 2, 3, 2))
  x, w = Tensor(xv, requires_grad=grad_of == "x"), Tensor(wv, requires_grad=grad_of == "w")
  out = x.conv2d(w, stride=(1, 2), padding=1)
  assert out.dtype == dtypes.float64 and any(k.name.startswith("conv_forward") for k in out.schedule())
  g = rng.standard_normal(out.shape)
  (out * Tensor(g)).sum().backward()
  tx, tw = torch.tensor(xv, requires_grad=grad_of == "x"), torch.tensor(wv, requires_grad=grad_of == "w")
  (F.conv2d(tx, tw, stride=(1, 2), padding=1) * torch.tensor(g)).sum().backward()
  np.testing.assert_allclose(out.numpy(), F.conv2d(tx, tw, stride=(1, 2), padding=1).detach().numpy(), rtol=1e-12, atol=1e-12)
  leaf, oracle = (x, tx) if grad_of == "x" else (w, tw)
  np.testing.assert_allclose(leaf.grad.numpy(), oracle.grad.numpy(), rtol=1e-12, atol=1e-12)
  assert (w if grad_of == "x" else x).grad is None


# ---------------------------------------------------------------- conv_transpose2d
# id -> (x shape, weight shape (Cin, Cout/groups, *K), bias?, kwargs)
CONVT_CASES = {
  "stride2_pad1_outpad1_bias": ((1, 2, 3, 3), (2, 3, 2, 2), True, dict(stride=2, padding=1, output_padding=1)),
  "groups2": ((1, 4, 3, 3), (4, 1, 2, 2), True, dict(groups=2)),
  "dilation2_pad1": ((2, 2, 3, 3), (2, 2, 3, 3), False, dict(dilation=2, padding=1)),
  "k3_stride2": ((1, 2, 4, 4), (2, 3, 3, 3), False, dict(stride=2)),
  "stride_pad_outpad_tuples": ((1, 2, 3, 4), (2, 2, 2, 3), False, dict(stride=(2, 1), padding=(0, 1), output_padding=(1, 0))),
  "stride2_groups4_dilation2": ((2, 4, 6, 5), (4, 1, 3, 3), True, dict(stride=2, padding=1, dilation=2, output_padding=1, groups=4)),
  "stride3_k1_outpad2": ((2, 2, 4, 4), (2, 3, 1, 1), False, dict(stride=3, output_padding=2)),
  "outpad_from_dilation": ((1, 2, 3, 3), (2, 2, 3, 3), False, dict(stride=2, padding=1, dilation=3, output_padding=2)),   # past the stride
}


@pytest.mark.parametrize("case", list(CONVT_CASES))
def test_conv_transpose2d(case):
  xs, ws, has_bias, kw = CONVT_CASES[case]
  xv, wv = randn(xs, 5), randn(ws, 6)
  groups = kw.get("groups", 1)
  bv = randn((ws[1] * groups,), 7) if has_bias else None
  nb_in = [nb_leaf(xv), nb_leaf(wv)] + ([nb_leaf(bv)] if has_bias else [])
  th_in = [th_leaf(xv), th_leaf(wv)] + ([th_leaf(bv)] if has_bias else [])
  nb_out = nb_in[0].conv_transpose2d(nb_in[1], nb_in[2] if has_bias else None, **kw)
  th_out = F.conv_transpose2d(th_in[0], th_in[1], th_in[2] if has_bias else None, **kw)
  weighted_backward(nb_out, th_out, 8)
  check_grads(nb_in, th_in)


# a convolution's result has the dtype of a sum of its products (tinygrad's rule): ints widen to (u)int32,
# an acc_dtype is kept, half stays half. Values from torch in float64 (exact for these small ints).
CONV_DTYPE_ROWS = [
  ("int8", np.int8, {}, "int32"), ("uint8", np.uint8, {}, "uint32"), ("int16", np.int16, {}, "int32"),
  ("bool", np.bool_, {}, "int32"), ("int8_acc_int16", np.int8, dict(acc_dtype=dtypes.int16), "int16"),
  ("float32_acc_float64", np.float32, dict(acc_dtype=dtypes.float64), "float64"), ("float16", np.float16, {}, "float16"),
]


@pytest.mark.parametrize("name,npdt,kw,out", CONV_DTYPE_ROWS, ids=[r[0] for r in CONV_DTYPE_ROWS])
def test_conv_result_dtype_is_the_sums(name, npdt, kw, out):
  rng = np.random.default_rng(3)
  xv = (rng.integers(0, 2, (2, 3, 5, 5)) if npdt == np.bool_ else rng.integers(0, 60, (2, 3, 5, 5))).astype(npdt)
  wv = rng.integers(0, 2, (4, 3, 3, 3)).astype(npdt)
  bv = np.ones(4, npdt)
  expected = F.conv2d(torch.tensor(xv.astype(np.float64)), torch.tensor(wv.astype(np.float64)), torch.tensor(bv.astype(np.float64)), padding=1)
  got = Tensor(xv).conv2d(Tensor(wv), Tensor(bv), padding=1, **kw)
  assert got.dtype == getattr(dtypes, out)
  np.testing.assert_array_equal(got.numpy(), expected.numpy().astype(got.dtype.np))
  if "acc_dtype" not in kw:
    expected_t = F.conv_transpose2d(torch.tensor(xv[:, :3].astype(np.float64)), torch.tensor(wv[:3].astype(np.float64)))
    got_t = Tensor(xv[:, :3]).conv_transpose2d(Tensor(wv[:3]))
    assert got_t.dtype == getattr(dtypes, out)
    np.testing.assert_array_equal(got_t.numpy(), expected_t.numpy().astype(got_t.dtype.np))


# ---------------------------------------------------------------- pooling
def torch_avg_pool(x, kernel_size, stride=None, dilation=1):
  """torch's avg_pool2d has no dilation: a per-channel conv with a uniform kernel does the same."""
  k = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
  n, c = x.shape[:2]
  w = torch.full((1, 1, *k), 1.0 / (k[0] * k[1]), dtype=x.dtype)
  out = F.conv2d(x.reshape(n * c, 1, *x.shape[2:]), w, stride=k if stride is None else stride, dilation=dilation)
  return out.reshape(n, c, *out.shape[2:])


def torch_max_pool(x, kernel_size, stride=None, dilation=1):
  return F.max_pool2d(x, kernel_size, stride=kernel_size if stride is None else stride, dilation=dilation)


# id -> (op, x shape, kwargs)
POOL_CASES = {
  "avg_k2_default_stride": ("avg_pool2d", (2, 2, 4, 6), dict(kernel_size=2)),
  "avg_k3_stride2": ("avg_pool2d", (1, 2, 7, 7), dict(kernel_size=3, stride=2)),
  "avg_k23_stride1_dilation2": ("avg_pool2d", (1, 2, 6, 6), dict(kernel_size=(2, 3), stride=1, dilation=2)),
  "max_k2_default_stride": ("max_pool2d", (2, 2, 6, 6), dict(kernel_size=(2, 2))),
  "max_k2_1x1x4x4": ("max_pool2d", (1, 1, 4, 4), dict(kernel_size=2)),
  "max_k32_stride_dilation_tuples": ("max_pool2d", (1, 2, 6, 5), dict(kernel_size=(3, 2), stride=(1, 2), dilation=(2, 1))),
  "max_k13_stride1_dilation12": ("max_pool2d", (1, 2, 5, 6), dict(kernel_size=(1, 3), stride=1, dilation=(1, 2))),
  "max_k2_stride3_gaps": ("max_pool2d", (1, 1, 8, 7), dict(kernel_size=2, stride=3)),
  "max_k3_stride2_overlapping": ("max_pool2d", (2, 2, 9, 8), dict(kernel_size=3, stride=2)),
}


@pytest.mark.parametrize("case", list(POOL_CASES))
def test_pool(case):
  op, xs, kw = POOL_CASES[case]
  xv = randn(xs, 9)   # continuous random values: no ties inside a max window
  nb_x, th_x = nb_leaf(xv), th_leaf(xv)
  ref = torch_avg_pool if op == "avg_pool2d" else torch_max_pool
  weighted_backward(getattr(nb_x, op)(**kw), ref(th_x, **kw), 10)
  check_grads([nb_x], [th_x])


def test_max_pool_of_a_centered_input_gives_every_window_its_gradient():
  """Batchnorm then max-pool: the gradient's mask compares the input, recomputed in another kernel, with the
  stored window maximum. Both must round alike (no multiply-add contraction in one and not the other)."""
  values = randn((8, 16, 6, 6), 40)
  x, ref = nb_leaf(values), th_leaf(values)
  weighted_backward((x - x.mean(axis=(0, 2, 3)).reshape(1, -1, 1, 1)).max_pool2d(2),
                    F.max_pool2d(ref - ref.mean(dim=(0, 2, 3)).reshape(1, -1, 1, 1), 2), 41)
  check_grads([x], [ref])


@pytest.mark.parametrize("op,kw", [("max_pool2d", dict(kernel_size=2)), ("avg_pool2d", dict(kernel_size=3, stride=1))])
def test_pool_big_enough_for_the_parallel_window_kernels(op, kw):
  """Pooling over 280K inputs: the parallel kernels (built in the background, waited for here) unroll their
  window; forward, gradient, and a NaN that must reach its window's output."""
  from nbgrad.jit import finish_builds
  xv = randn((4, 16, 66, 66), 4)
  with_nan = xv.copy()
  with_nan[1, 3, 10, 20] = np.nan
  ref = torch_avg_pool if op == "avg_pool2d" else torch_max_pool
  for _ in range(2):   # the first call may run the serial build while the parallel one compiles
    nb_x, th_x = nb_leaf(xv), th_leaf(xv)
    weighted_backward(getattr(nb_x.relu(), op)(**kw), ref(torch.relu(th_x), **kw), 10)
    check_grads([nb_x], [th_x])
    np.testing.assert_allclose(getattr(Tensor(with_nan), op)(**kw).numpy(), ref(torch.tensor(with_nan), **kw).numpy(), **TOL)
    finish_builds()


# ---------------------------------------------------------------- gather
# id -> (x shape, dim, index shape, index dtype, view of x)
GATHER_CASES = {
  "dim0_int32": ((4, 3), 0, (2, 3), np.int32, None),
  "dim1_smaller_index_repeats_int64": ((3, 5), 1, (2, 4), np.int64, None),
  "dim_neg1_3d_transposed_input": ((2, 4, 3), -1, (2, 3, 2), np.int32, "transpose"),
}


@pytest.mark.parametrize("case", list(GATHER_CASES))
def test_gather(case):
  xs, dim, idx_shape, idx_dtype, view = GATHER_CASES[case]
  xv = randn(xs, 11)
  base, th_base = nb_leaf(xv), th_leaf(xv)
  nb_x, th_x = (base.transpose(1, 2), th_base.transpose(1, 2)) if view == "transpose" else (base, th_base)
  n = nb_x.shape[dim]
  idx = np.random.default_rng(12).integers(0, n, size=idx_shape)
  if case.startswith("dim1"): idx[0, :2] = 1   # a repeated index: its gradient accumulates
  nb_out = nb_x.gather(dim, Tensor(idx.astype(idx_dtype)))
  th_out = torch.gather(th_x, dim, torch.tensor(idx, dtype=torch.int64))
  weighted_backward(nb_out, th_out, 13)
  check_grads([base], [th_base])


# ---------------------------------------------------------------- einsum
# id -> (formula, operand shapes)
EINSUM_CASES = {
  "matmul": ("ij,jk->ik", [(3, 4), (4, 2)]),
  "implicit_output": ("ij,jk", [(2, 3), (3, 4)]),
  "transpose": ("ij->ji", [(3, 5)]),
  "batched_matmul": ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
  "dot": ("i,i->", [(5,), (5,)]),
  "outer": ("i,j->ij", [(3,), (4,)]),
  "trace": ("ii->", [(3, 3)]),
  "implicit_trace": ("ii", [(4, 4)]),
  "diagonal": ("ii->i", [(3, 3)]),
  "batched_diagonal_kept_axis_first": ("iij->ji", [(3, 3, 2)]),
  "repeat_apart_times_matrix": ("iji,jk->ik", [(2, 3, 2), (3, 4)]),
  "three_times_repeated": ("iii->i", [(2, 2, 2)]),
  "empty_trace": ("ii->", [(0, 0)]),
  # '...': the dims it covers, aligned from the right across operands (broadcasting), as torch
  "ellipsis_batched_matmul": ("...ij,jk->...ik", [(2, 3, 4, 5), (5, 2)]),
  "ellipsis_broadcast_batches": ("...ij,...jk->...ik", [(2, 3, 4, 5), (3, 5, 2)]),
  "ellipsis_implicit_output_first": ("...ij,jk", [(2, 4, 5), (5, 3)]),
  "ellipsis_summed_when_left_out": ("b...,b...->b", [(2, 3, 4), (2, 3, 4)]),
  "ellipsis_at_the_end": ("ij...->j...i", [(2, 3, 4)]),
  "ellipsis_diagonal": ("...ii->...i", [(2, 3, 3)]),
  "ellipsis_covering_nothing": ("...i,...i->...", [(4,), (4,)]),
  # float operands of one dtype contract a pair at a time as matrix products
  "three_operands": ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
  "letter_of_one_operand_summed_first": ("ij,jk->i", [(2, 3), (3, 4)]),
  "several_inner_letters": ("ijk,jkl->li", [(2, 3, 4), (3, 4, 5)]),
  "batch_letters_apart_output_permuted": ("ibj,jbk->kbi", [(2, 3, 4), (4, 3, 5)]),
  "letter_kept_for_a_later_operand": ("ij,jk,ik->k", [(2, 3), (3, 4), (2, 4)]),
  "batched_dot": ("bi,bi->b", [(3, 4), (3, 4)]),
  "batched_outer": ("bi,bj->bij", [(3, 2), (3, 4)]),
  "size_one_letter_broadcast": ("ij,jk->ik", [(2, 1), (4, 3)]),
  "empty_inner": ("ij,jk->ik", [(2, 0), (0, 3)]),
  "empty_rows": ("bij,bjk->bik", [(2, 0, 3), (2, 3, 4)]),
}


@pytest.mark.parametrize("case", list(EINSUM_CASES))
def test_einsum(case):
  formula, shapes = EINSUM_CASES[case]
  values = [randn(s, 20 + i) for i, s in enumerate(shapes)]
  nb_in, th_in = [nb_leaf(v) for v in values], [th_leaf(v) for v in values]
  weighted_backward(Tensor.einsum(formula, *nb_in), torch.einsum(formula, *th_in), 30)
  check_grads(nb_in, th_in)


def test_float_einsum_runs_as_matrix_products():
  a, b, c = Tensor(randn((2, 3, 4), 42)), Tensor(randn((2, 4, 5), 43)), Tensor(randn((5, 6), 44))
  assert [k.name for k in Tensor.einsum("bij,bjk->bik", a, b).schedule()] == ["matmul_2_3_4_5"]
  assert [k.name for k in Tensor.einsum("bij,bjk,kl->bil", a, b, c).schedule()] == ["matmul_2_3_4_5", "matmul_1_6_5_6"]


def test_einsum_float64_and_mixed_dtypes():
  a, b = randn((3, 4), 40).astype(np.float64), randn((4, 5), 41)
  np.testing.assert_allclose(Tensor.einsum("ij,jk->ik", Tensor(a), Tensor(b.astype(np.float64))).numpy(), a @ b, rtol=1e-12)
  mixed = Tensor.einsum("ij,jk->ik", Tensor(a), Tensor(b))
  assert mixed.dtype == dtypes.float64
  np.testing.assert_allclose(mixed.numpy(), a @ b.astype(np.float64), rtol=1e-6)


def test_einsum_acc_dtype():
  """The products stay int8; their sum runs in the accumulation dtype (200 does not fit int8)."""
  out = Tensor.einsum("i,i->", Tensor(np.array([100, 100], np.int8)), Tensor(np.array([1, 1], np.int8)), acc_dtype=dtypes.int64)
  assert out.dtype == dtypes.int64 and out.item() == 200


# ---------------------------------------------------------------- bad input
def _conv_channel_mismatch():
  Tensor(randn((1, 3, 5, 5), 0)).conv2d(Tensor(randn((2, 2, 3, 3), 0)))


def _conv_group_mismatch():
  Tensor(randn((1, 4, 5, 5), 0)).conv2d(Tensor(randn((4, 2, 3, 3), 0)), groups=3)


def _gather_wrong_rank():
  Tensor(randn((3, 4), 0)).gather(1, Tensor(np.zeros((3,), dtype=np.int32)))


def _einsum_operand_count():
  Tensor.einsum("ij,jk->ik", Tensor(randn((2, 3), 0)))


def _einsum_diagonal_of_unequal_axes():
  Tensor.einsum("ii->i", Tensor(randn((2, 3), 0)))


def _einsum_two_dots():
  Tensor.einsum("..ij->ij", Tensor(randn((2, 3), 0)))


def _einsum_ellipsis_past_the_dims():
  Tensor.einsum("...ijk->ij", Tensor(randn((2, 3), 0)))


BAD_CASES = {
  "einsum_two_dots": (_einsum_two_dots, ValueError),
  "einsum_ellipsis_past_the_dims": (_einsum_ellipsis_past_the_dims, ValueError),
  "conv_channel_mismatch": (_conv_channel_mismatch, ValueError),
  "conv_group_mismatch": (_conv_group_mismatch, ValueError),
  "gather_index_wrong_rank": (_gather_wrong_rank, IndexError),
  "einsum_operand_count": (_einsum_operand_count, ValueError),
  "einsum_diagonal_of_unequal_axes": (_einsum_diagonal_of_unequal_axes, ValueError),
}


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_bad_input(case):
  fn, exc = BAD_CASES[case]
  with pytest.raises(exc):
    fn()



@pytest.mark.parametrize("padding,kernel,dilation", [("same", (4, 3), (1, 2)), ("same", (3, 3), (2, 1)), ("valid", (3, 2), (1, 1))])
def test_conv2d_padding_words_as_torch(padding, kernel, dilation):
  """torch's padding="same" (an odd total's extra on the right) and "valid", forward and both gradients."""
  rng = np.random.default_rng(4)
  x, w = rng.standard_normal((2, 3, 7, 6)).astype(np.float32), rng.standard_normal((4, 3) + kernel).astype(np.float32)
  nx, nw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
  tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
  out = nx.conv2d(nw, padding=padding, dilation=dilation)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # torch warns that an even kernel needs a padded copy
    want = F.conv2d(tx, tw, padding=padding, dilation=dilation)
  np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)
  out.sum().backward()
  want.sum().backward()
  np.testing.assert_allclose(nx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(nw.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-4)
