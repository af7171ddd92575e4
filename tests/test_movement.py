"""Movement ops and basic indexing: shapes and values against numpy / torch, views that never copy, bad input."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from nbgrad import Tensor, dtypes
from same_values import NB_OF, check_same

# (name, nbgrad dtype, numpy dtype)
DTYPES = [("float32", dtypes.float32, np.float32), ("int32", dtypes.int32, np.int32), ("bool", dtypes.bool, np.bool_),
          ("float64", dtypes.float64, np.float64), ("uint8", dtypes.uint8, np.uint8)]


def make(shape, npdt=np.float32, seed=0):
  """Deterministic data with (mostly) distinct values, so a wrong index shows up as a wrong value."""
  rng = np.random.default_rng(seed)
  n = int(np.prod(shape, dtype=np.int64))
  npdt = np.dtype(npdt)
  if npdt == np.bool_: return (rng.random(n) < 0.5).reshape(shape)
  if npdt.kind == "f": return np.asarray((rng.permutation(n) - n // 2).astype(npdt).reshape(shape) / 4 + npdt.type(0.125), npdt)
  if npdt == np.uint8: return (rng.permutation(n) % 256).astype(npdt).reshape(shape)
  return (rng.permutation(n) - n // 2).astype(npdt).reshape(shape)


def via_torch(fn):
  """A reference computed by torch on a numpy array, returned as numpy."""
  return lambda a: fn(torch.from_numpy(np.array(a, order="C", copy=True))).numpy()


def _chain_nb(t):
  return t.permute(2, 0, 1).reshape(4, 6).pad(((1, 0), (2, 1))).flip(1).shrink(((1, 5), (3, 8))).reshape(4, 1, 5).expand(4, 3, 5)


def _chain_np(a):
  x = np.pad(a.transpose(2, 0, 1).reshape(4, 6), ((1, 0), (2, 1)))[:, ::-1][1:5, 3:8]
  return np.broadcast_to(x.reshape(4, 1, 5), (4, 3, 5))


# (id, input shape, nbgrad fn, numpy reference, pure view: True when the result needs no kernel on a realized input)
MOVE_ROWS = [
  # reshape / view
  ("reshape_args", (2, 3, 4), lambda t: t.reshape(6, 4), lambda a: a.reshape(6, 4), True),
  ("reshape_tuple", (2, 3, 4), lambda t: t.reshape((4, 6)), lambda a: a.reshape(4, 6), True),
  ("reshape_list", (2, 3, 4), lambda t: t.reshape([3, 8]), lambda a: a.reshape(3, 8), True),
  ("reshape_minus1_first", (2, 3, 4), lambda t: t.reshape(-1, 4), lambda a: a.reshape(-1, 4), True),
  ("reshape_minus1_last", (2, 3, 4), lambda t: t.reshape(2, -1), lambda a: a.reshape(2, -1), True),
  ("reshape_minus1_flat", (2, 3, 4), lambda t: t.reshape(-1), lambda a: a.reshape(-1), True),
  ("reshape_none_keeps", (2, 3, 4), lambda t: t.reshape(None, 12), lambda a: a.reshape(2, 12), True),
  ("reshape_none_middle", (2, 3, 4), lambda t: t.reshape(2, None, 2, 2), lambda a: a.reshape(2, 3, 2, 2), True),
  ("reshape_same", (2, 3), lambda t: t.reshape(2, 3), lambda a: a.reshape(2, 3), True),
  ("reshape_size1_axes", (6,), lambda t: t.reshape(1, 6, 1, 1), lambda a: a.reshape(1, 6, 1, 1), True),
  ("reshape_to_0d", (1, 1), lambda t: t.reshape(()), lambda a: a.reshape(()), True),
  ("reshape_from_0d", (), lambda t: t.reshape(1, 1, 1), lambda a: a.reshape(1, 1, 1), True),
  ("reshape_0size", (0, 6), lambda t: t.reshape(3, 0, 2), lambda a: a.reshape(3, 0, 2), True),
  ("reshape_0size_minus1", (0, 6), lambda t: t.reshape(2, -1), lambda a: a.reshape(2, -1), True),
  ("view_args", (2, 3, 4), lambda t: t.view(4, 6), lambda a: a.reshape(4, 6), True),
  ("view_minus1", (2, 3, 4), lambda t: t.view(-1), lambda a: a.reshape(-1), True),
  # expand
  ("expand_col", (3, 1), lambda t: t.expand(3, 4), lambda a: np.broadcast_to(a, (3, 4)), True),
  ("expand_tuple_new_dims", (1, 3), lambda t: t.expand((2, 4, 3)), lambda a: np.broadcast_to(a, (2, 4, 3)), True),
  ("expand_minus1_keeps", (3, 1), lambda t: t.expand(-1, 5), lambda a: np.broadcast_to(a, (3, 5)), True),
  ("expand_none_keeps", (3, 1, 2), lambda t: t.expand(None, 4, None), lambda a: np.broadcast_to(a, (3, 4, 2)), True),
  ("expand_same", (2, 3), lambda t: t.expand(2, 3), lambda a: a, True),
  ("expand_0d", (), lambda t: t.expand(2, 3), lambda a: np.broadcast_to(a, (2, 3)), True),
  ("expand_to_0size", (1, 3), lambda t: t.expand(0, 3), lambda a: np.broadcast_to(a, (0, 3)), True),
  ("expand_middle", (2, 1, 3), lambda t: t.expand(2, 4, 3), lambda a: np.broadcast_to(a, (2, 4, 3)), True),
  # permute
  ("permute_args", (2, 3, 4), lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), True),
  ("permute_tuple", (2, 3, 4), lambda t: t.permute((1, 2, 0)), lambda a: a.transpose(1, 2, 0), True),
  ("permute_negative", (2, 3, 4), lambda t: t.permute(-1, 0, -2), lambda a: a.transpose(2, 0, 1), True),
  ("permute_identity", (2, 3, 4), lambda t: t.permute(0, 1, 2), lambda a: a, True),
  ("permute_4d", (2, 1, 3, 2), lambda t: t.permute(3, 1, 0, 2), lambda a: a.transpose(3, 1, 0, 2), True),
  ("permute_0size", (2, 0, 3), lambda t: t.permute(2, 1, 0), lambda a: a.transpose(2, 1, 0), True),
  ("permute_0d", (), lambda t: t.permute(()), lambda a: a.transpose(()), True),
  # flip
  ("flip_int", (3, 4), lambda t: t.flip(0), lambda a: a[::-1], True),
  ("flip_negative", (3, 4), lambda t: t.flip(-1), lambda a: a[:, ::-1], True),
  ("flip_tuple", (2, 3, 4), lambda t: t.flip((0, 2)), lambda a: a[::-1, :, ::-1], True),
  ("flip_args", (2, 3, 4), lambda t: t.flip(1, 2), lambda a: a[:, ::-1, ::-1], True),
  ("flip_all", (2, 3, 4), lambda t: t.flip((0, 1, 2)), lambda a: a[::-1, ::-1, ::-1], True),
  ("flip_size1", (1, 5), lambda t: t.flip(0), lambda a: a[::-1], False),   # a copy: nothing moves, and a view would share t's elements
  ("flip_0size", (0, 3), lambda t: t.flip(1), lambda a: a[:, ::-1], True),
  # shrink
  ("shrink_both", (4, 5), lambda t: t.shrink(((1, 3), (0, 5))), lambda a: a[1:3, 0:5], True),
  ("shrink_none", (4, 5), lambda t: t.shrink((None, (2, 4))), lambda a: a[:, 2:4], True),
  ("shrink_3d", (3, 4, 5), lambda t: t.shrink(((0, 1), (1, 4), (3, 5))), lambda a: a[0:1, 1:4, 3:5], True),
  ("shrink_to_empty", (4, 5), lambda t: t.shrink(((2, 2), None)), lambda a: a[2:2], True),
  ("shrink_full", (4, 5), lambda t: t.shrink(((0, 4), (0, 5))), lambda a: a, True),
  # pad
  ("pad_both", (2, 3), lambda t: t.pad(((1, 2), (0, 1))), lambda a: np.pad(a, ((1, 2), (0, 1))), True),
  ("pad_none", (2, 3), lambda t: t.pad((None, (2, 0))), lambda a: np.pad(a, ((0, 0), (2, 0))), True),
  ("pad_3d", (2, 2, 2), lambda t: t.pad(((0, 1), (1, 1), (2, 0))), lambda a: np.pad(a, ((0, 1), (1, 1), (2, 0))), True),
  ("pad_0size", (0, 3), lambda t: t.pad(((1, 1), None)), lambda a: np.pad(a, ((1, 1), (0, 0))), True),
  ("pad_flat_torch_order", (2, 3), lambda t: t.pad((1, 0, 2, 1)), lambda a: np.pad(a, ((2, 1), (1, 0))), True),
  ("pad_flat_last_dim", (2, 3), lambda t: t.pad((0, 2), value=-1.0), lambda a: np.pad(a, ((0, 0), (0, 2)), constant_values=-1), False),
  ("pad_nothing", (2, 3), lambda t: t.pad(((0, 0), None)), lambda a: a, True),
  ("pad_value", (2, 3), lambda t: t.pad(((1, 0), (1, 2)), value=1.5), lambda a: np.pad(a, ((1, 0), (1, 2)), constant_values=1.5), False),
  ("pad_value_neg_inf", (2, 3), lambda t: t.pad((None, (1, 1)), value=float("-inf")),
   lambda a: np.pad(a, ((0, 0), (1, 1)), constant_values=-np.inf), False),
  # pad2d (torch F.pad order: last dim first, negative crops)
  ("pad2d_last", (2, 3, 4), lambda t: t.pad2d((1, 2)), via_torch(lambda x: F.pad(x, (1, 2))), True),
  ("pad2d_two", (2, 3, 4), lambda t: t.pad2d((1, 0, 2, 1)), via_torch(lambda x: F.pad(x, (1, 0, 2, 1))), True),
  ("pad2d_negative", (2, 3, 4), lambda t: t.pad2d((-1, 1, 0, -1)), via_torch(lambda x: F.pad(x, (-1, 1, 0, -1))), True),
  ("pad2d_value", (3, 4), lambda t: t.pad2d((1, 1, 1, 0), value=-2.0), via_torch(lambda x: F.pad(x, (1, 1, 1, 0), value=-2.0)), False),
  # transpose / T
  ("transpose_default", (2, 3), lambda t: t.transpose(), lambda a: a.T, True),
  ("transpose_0_2", (2, 3, 4), lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2), True),
  ("transpose_negative", (2, 3, 4), lambda t: t.transpose(-1, -2), lambda a: a.swapaxes(-1, -2), True),
  ("transpose_default_3d", (2, 3, 4), lambda t: t.transpose(), lambda a: a.swapaxes(0, 1), True),
  ("T_2d", (3, 4), lambda t: t.T, lambda a: a.T, True),
  ("T_size1", (1, 4), lambda t: t.T, lambda a: a.T, True),
  # flatten / unflatten
  ("flatten_all", (2, 3, 4), lambda t: t.flatten(), via_torch(lambda x: x.flatten()), True),
  ("flatten_start1", (2, 3, 4), lambda t: t.flatten(1), via_torch(lambda x: x.flatten(1)), True),
  ("flatten_0_1", (2, 3, 4), lambda t: t.flatten(0, 1), via_torch(lambda x: x.flatten(0, 1)), True),
  ("flatten_negative", (2, 3, 4, 2), lambda t: t.flatten(-3, -2), via_torch(lambda x: x.flatten(-3, -2)), True),
  ("flatten_same_dim", (2, 3, 4), lambda t: t.flatten(1, 1), via_torch(lambda x: x.flatten(1, 1)), True),
  ("flatten_0d", (), lambda t: t.flatten(), via_torch(lambda x: x.flatten()), True),
  ("flatten_0size", (2, 0, 3), lambda t: t.flatten(1), via_torch(lambda x: x.flatten(1)), True),
  ("unflatten_last", (2, 12), lambda t: t.unflatten(1, (3, 4)), via_torch(lambda x: x.unflatten(1, (3, 4))), True),
  ("unflatten_negative_dim", (2, 12), lambda t: t.unflatten(-1, (2, -1, 3)), via_torch(lambda x: x.unflatten(-1, (2, -1, 3))), True),
  ("unflatten_first_size1", (2, 12), lambda t: t.unflatten(0, (1, 2)), via_torch(lambda x: x.unflatten(0, (1, 2))), True),
  # squeeze / unsqueeze
  ("squeeze_all", (1, 3, 1, 2), lambda t: t.squeeze(), via_torch(lambda x: x.squeeze()), True),
  ("squeeze_dim0", (1, 3, 1, 2), lambda t: t.squeeze(0), via_torch(lambda x: x.squeeze(0)), True),
  ("squeeze_negative", (1, 3, 1, 2), lambda t: t.squeeze(-2), via_torch(lambda x: x.squeeze(-2)), True),
  ("squeeze_not1_noop", (1, 3, 1, 2), lambda t: t.squeeze(1), via_torch(lambda x: x.squeeze(1)), True),
  ("squeeze_to_0d", (1, 1), lambda t: t.squeeze(), via_torch(lambda x: x.squeeze()), True),
  ("squeeze_0d", (), lambda t: t.squeeze(), via_torch(lambda x: x.squeeze()), True),
  ("squeeze_0size", (1, 0, 1), lambda t: t.squeeze(), via_torch(lambda x: x.squeeze()), True),
  ("unsqueeze_0", (2, 3), lambda t: t.unsqueeze(0), via_torch(lambda x: x.unsqueeze(0)), True),
  ("unsqueeze_end", (2, 3), lambda t: t.unsqueeze(2), via_torch(lambda x: x.unsqueeze(2)), True),
  ("unsqueeze_minus1", (2, 3), lambda t: t.unsqueeze(-1), via_torch(lambda x: x.unsqueeze(-1)), True),
  ("unsqueeze_minus2", (2, 3), lambda t: t.unsqueeze(-2), via_torch(lambda x: x.unsqueeze(-2)), True),
  ("unsqueeze_minus3", (2, 3), lambda t: t.unsqueeze(-3), via_torch(lambda x: x.unsqueeze(-3)), True),
  ("unsqueeze_0d", (), lambda t: t.unsqueeze(0), via_torch(lambda x: x.unsqueeze(0)), True),
  ("unsqueeze_0d_minus1", (), lambda t: t.unsqueeze(-1), via_torch(lambda x: x.unsqueeze(-1)), True),
  # repeat
  ("repeat_rows", (2, 3), lambda t: t.repeat(2, 1), via_torch(lambda x: x.repeat(2, 1)), True),
  ("repeat_tuple_new_dim", (2, 3), lambda t: t.repeat((2, 1, 3)), via_torch(lambda x: x.repeat(2, 1, 3)), True),
  ("repeat_zero", (2, 3), lambda t: t.repeat(0, 2), via_torch(lambda x: x.repeat(0, 2)), True),
  ("repeat_0d", (), lambda t: t.repeat(3), via_torch(lambda x: x.repeat(3)), True),
  ("repeat_ones", (2, 3), lambda t: t.repeat(1, 1), via_torch(lambda x: x.repeat(1, 1)), True),
  # chains of views (several of them are not expressible as one strided view)
  ("chain_permute_reshape_pad_flip_shrink_expand", (2, 3, 4), _chain_nb, _chain_np, True),
  ("chain_T_reshape", (3, 4), lambda t: t.T.reshape(12), lambda a: a.T.reshape(12), True),
  ("chain_T_reshape_2d", (3, 4), lambda t: t.T.reshape(2, 6), lambda a: a.T.reshape(2, 6), True),
  ("chain_permute_reshape_permute_reshape", (2, 3, 4),
   lambda t: t.permute(2, 0, 1).reshape(4, 6).permute(1, 0).reshape(2, 3, 4),
   lambda a: a.transpose(2, 0, 1).reshape(4, 6).transpose(1, 0).reshape(2, 3, 4), True),
  ("chain_expand_reshape", (3, 1), lambda t: t.expand(3, 4).reshape(12), lambda a: np.broadcast_to(a, (3, 4)).reshape(12), True),
  ("chain_expand_reshape_split_axis", (1, 4), lambda t: t.expand(3, 4).reshape(2, 6),
   lambda a: np.broadcast_to(a, (3, 4)).reshape(2, 6), True),
  ("chain_flip_reshape", (4, 6), lambda t: t.flip(1).reshape(8, 3), lambda a: a[:, ::-1].reshape(8, 3), True),
  ("chain_stepslice_reshape", (4, 6), lambda t: t[1:3, ::2].reshape(6), lambda a: a[1:3, ::2].reshape(6), True),
  ("chain_pad_reshape", (2, 3), lambda t: t.pad(((1, 1), (1, 1))).reshape(-1), lambda a: np.pad(a, 1).reshape(-1), True),
  ("chain_pad_reshape_shrink", (2, 3), lambda t: t.pad(((1, 1), (0, 1))).reshape(2, 8)[:, 1:7],
   lambda a: np.pad(a, ((1, 1), (0, 1))).reshape(2, 8)[:, 1:7], True),
  ("chain_shrink_pad_shrink", (5, 5), lambda t: t.shrink(((1, 4), (2, 5))).pad(((2, 1), (1, 2))).shrink(((1, 5), (0, 5))),
   lambda a: np.pad(a[1:4, 2:5], ((2, 1), (1, 2)))[1:5, 0:5], True),
  ("chain_pad_T_reshape_T", (2, 3), lambda t: t.pad(((0, 1), (1, 0))).T.reshape(3, 4).T,
   lambda a: np.pad(a, ((0, 1), (1, 0))).T.reshape(3, 4).T, True),
  # split by powers of two (shifts and masks) below a padded, flipped level, where coordinates go negative
  ("chain_pow2_split_of_padded_flip", (3, 6), lambda t: t.pad(((3, 1), (2, 0))).flip(0).reshape(7, 4, 2)[::-1, 1:, :],
   lambda a: np.pad(a, ((3, 1), (2, 0)))[::-1].reshape(7, 4, 2)[::-1, 1:, :], True),
  ("chain_getitem_of_getitem", (4, 5, 6), lambda t: t[::-1][1:][:, ::2][..., None, 1::2],
   lambda a: a[::-1][1:][:, ::2][..., None, 1::2], True),
  ("chain_repeat_of_T", (2, 3), lambda t: t.T.repeat(2, 2), via_torch(lambda x: x.T.repeat(2, 2)), True),
  ("chain_flip_pad_flip", (3, 4), lambda t: t.flip(0).pad(((2, 0), (0, 1))).flip((0, 1)),
   lambda a: np.pad(a[::-1], ((2, 0), (0, 1)))[::-1, ::-1], True),
  ("chain_reshape_expand_reshape_permute", (2, 3), lambda t: t.reshape(2, 1, 3).expand(2, 2, 3).reshape(4, 3).permute(1, 0),
   lambda a: np.broadcast_to(a.reshape(2, 1, 3), (2, 2, 3)).reshape(4, 3).T, True),
  ("chain_flatten_unflatten_of_permute", (2, 3, 4), lambda t: t.permute(1, 2, 0).flatten(1).unflatten(1, (2, 4)),
   lambda a: a.transpose(1, 2, 0).reshape(3, 8).reshape(3, 2, 4), True),
  ("chain_0size", (0, 4), lambda t: t.T.reshape(2, 0, 2).flip(0).pad(((1, 0), None, None)),
   lambda a: np.pad(a.T.reshape(2, 0, 2)[::-1], ((1, 0), (0, 0), (0, 0))), True),
]
ROW_BY_ID = {row[0]: row for row in MOVE_ROWS}


@pytest.mark.parametrize("name,shape,fn,ref,_pure", MOVE_ROWS, ids=[r[0] for r in MOVE_ROWS])
def test_movement_float32(name, shape, fn, ref, _pure):
  a = make(shape, np.float32)
  check_same(fn(Tensor(a)), ref(a))


DTYPE_SWEEP_IDS = ["reshape_minus1_first", "reshape_0size", "expand_minus1_keeps", "expand_0d", "permute_negative", "flip_tuple",
                   "shrink_3d", "pad_3d", "pad2d_negative", "transpose_default", "flatten_start1", "squeeze_all", "unsqueeze_minus2",
                   "repeat_tuple_new_dim", "chain_permute_reshape_pad_flip_shrink_expand", "chain_T_reshape_2d",
                   "chain_pad_reshape_shrink", "chain_getitem_of_getitem"]


@pytest.mark.parametrize("dname,dt,npdt", DTYPES[1:], ids=[d[0] for d in DTYPES[1:]])
@pytest.mark.parametrize("row_id", DTYPE_SWEEP_IDS)
def test_movement_dtypes(row_id, dname, dt, npdt):
  _, shape, fn, ref, _ = ROW_BY_ID[row_id]
  a = make(shape, npdt, seed=1)
  out = fn(Tensor(a))
  assert out.dtype == dt
  check_same(out, ref(a))


PAD_VALUE_ROWS = [("float32", np.float32, 2.5), ("float64", np.float64, -0.75), ("int32", np.int32, 7), ("uint8", np.uint8, 200),
                  ("float32_0size", np.float32, 3.0)]


@pytest.mark.parametrize("name,npdt,value", PAD_VALUE_ROWS, ids=[r[0] for r in PAD_VALUE_ROWS])
def test_pad_value_dtypes(name, npdt, value):
  a = make((0, 2) if "0size" in name else (2, 3), npdt)
  check_same(Tensor(a).pad(((1, 1), (2, 0)), value=value), np.pad(a, ((1, 1), (2, 0)), constant_values=value))


def test_pad_with_negative_zero_pads_negative_zeros():
  a = np.array([-0.0, 1.0, 0.0], np.float32)
  for value in (-0.0, 0.0):
    got = Tensor(a).pad(((2, 1),), value=value).numpy()
    expected = np.pad(a, ((2, 1),), constant_values=value)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


@pytest.mark.parametrize("name,shape,fn,ref,pure", [r for r in MOVE_ROWS if r[4]], ids=[r[0] for r in MOVE_ROWS if r[4]])
def test_movement_of_realized_tensor_schedules_nothing(name, shape, fn, ref, pure):
  a = make(shape, np.float32)
  t = Tensor(a).realize()
  assert len(t.schedule()) == 0
  view = fn(t)
  kernels = view.schedule()
  assert len(kernels) == 0, [k.name for k in kernels]
  check_same(view, ref(a))
  np.testing.assert_array_equal(t.numpy(), a)


def test_split_chunk_getitem_of_realized_tensor_schedule_nothing():
  t = Tensor(make((6, 4))).realize()
  views = [*t.split(2), *t.split([1, 5], dim=0), *t.chunk(3, dim=1), t[1], t[::-2, 1:3], t[None, ..., -1], t.T[2:, None]]
  for v in views: assert len(v.schedule()) == 0, (v.shape, [k.name for k in v.schedule()])


def test_movement_chain_on_lazy_computation():
  a, b = make((2, 3, 4)), make((2, 3, 4), seed=3)
  out = _chain_nb(Tensor(a) * 2 + Tensor(b))
  np.testing.assert_allclose(out.numpy(), _chain_np(a * 2 + b), rtol=1e-6, atol=1e-6)
  assert out.shape == (4, 3, 5)


# ---------- basic indexing ----------

INDEX_ROWS = [
  ("int", 1), ("int_negative", -1), ("int_last", 3), ("ints", (1, 2)), ("ints_negative", (-1, -2, -3)), ("ints_all", (3, 4, 5)),
  ("slice_all", slice(None)), ("slice_range", slice(1, 3)), ("slice_step2", slice(None, None, 2)),
  ("slice_reverse", slice(None, None, -1)), ("slice_neg_step2", slice(3, 0, -2)), ("slice_neg_start", slice(-2, None)),
  ("slice_neg_start_neg_step", slice(-1, -4, -1)), ("slice_out_of_bounds", slice(-100, 100)), ("slice_empty", slice(10, 20)),
  ("slice_empty_backward", slice(3, 1)), ("slice_step_bigger_than_dim", slice(None, None, 7)),
  ("slice_neg_step3_each_axis", (slice(None, None, -3), slice(None, None, -2), slice(4, None, -3))),
  ("slice_then_int", (slice(None), 2)), ("int_slice_int", (0, slice(1, 4, 2), -1)),
  ("ellipsis", Ellipsis), ("ellipsis_int", (Ellipsis, 1)), ("int_ellipsis_int", (0, Ellipsis, 0)),
  ("ellipsis_slice", (Ellipsis, slice(None, None, -2))), ("none", None), ("none_int", (None, 0)),
  ("int_none_slice", (1, None, slice(None, None, -2))), ("ellipsis_none", (Ellipsis, None)),
  ("none_ellipsis_none", (None, Ellipsis, None)), ("slice_ellipsis_slice", (slice(1, None), Ellipsis, slice(None, None, -3))),
  ("empty_tuple", ()), ("many_none", (None, None, 1, None, slice(None, 2))), ("slice_empty_then_int", (slice(2, 2), 1)),
]


@pytest.mark.parametrize("idx", [r[1] for r in INDEX_ROWS], ids=[r[0] for r in INDEX_ROWS])
def test_basic_indexing_float32(idx):
  a = make((4, 5, 6))
  check_same(Tensor(a)[idx], a[idx])


INDEX_DTYPE_IDS = ["int_negative", "slice_neg_step3_each_axis", "int_slice_int", "none_ellipsis_none", "slice_empty"]


@pytest.mark.parametrize("dname,dt,npdt", DTYPES[1:], ids=[d[0] for d in DTYPES[1:]])
@pytest.mark.parametrize("idx_id", INDEX_DTYPE_IDS)
def test_basic_indexing_dtypes(idx_id, dname, dt, npdt):
  idx = dict(INDEX_ROWS)[idx_id]
  a = make((4, 5, 6), npdt, seed=2)
  check_same(Tensor(a)[idx], a[idx])


SPECIAL_INDEX_ROWS = [
  # (id, shape, view applied first (nbgrad, numpy), index)
  ("0d_empty_tuple", (), None, ()), ("0d_ellipsis", (), None, Ellipsis), ("0d_none", (), None, None),
  ("0d_none_ellipsis", (), None, (None, Ellipsis, None)),
  ("0size_int_last_axis", (0, 3), None, (Ellipsis, 1)), ("0size_slice", (0, 3), None, (slice(1, None), slice(None, None, -1))),
  ("size1_int", (1, 4), None, 0), ("size1_neg_step", (1, 4), None, (slice(None, None, -1), slice(None, None, -3))),
  ("of_permute", (2, 3, 4), (lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)), (slice(None, None, -2), 1)),
  ("of_flip", (4, 5), (lambda t: t.flip(0), lambda a: a[::-1]), (slice(1, None), slice(None, None, -2))),
  ("of_expand", (3, 1), (lambda t: t.expand(3, 4), lambda a: np.broadcast_to(a, (3, 4))), (slice(None, None, -1), slice(1, 3))),
  ("of_pad", (3, 3), (lambda t: t.pad(((1, 1), (2, 0))), lambda a: np.pad(a, ((1, 1), (2, 0)))), (slice(None, None, -2), -1)),
  ("of_T_reshape", (3, 4), (lambda t: t.T.reshape(2, 6), lambda a: a.T.reshape(2, 6)), (1, slice(None, None, -1))),
]


@pytest.mark.parametrize("name,shape,pre,idx", SPECIAL_INDEX_ROWS, ids=[r[0] for r in SPECIAL_INDEX_ROWS])
def test_basic_indexing_edge_inputs(name, shape, pre, idx):
  a = make(shape)
  t = Tensor(a)
  if pre is not None: t, a = pre[0](t), pre[1](a)
  check_same(t[idx], a[idx])


# ---------- cat / stack / split / chunk ----------

CAT_ROWS = [
  # (id, shapes, call on nbgrad tensors, torch reference on torch tensors)
  ("cat_dim0", [(2, 3), (4, 3)], lambda ts: ts[0].cat(ts[1]), lambda xs: torch.cat(xs, 0)),
  ("cat_dim1_three", [(2, 3), (2, 1), (2, 2)], lambda ts: ts[0].cat(ts[1], ts[2], dim=1), lambda xs: torch.cat(xs, 1)),
  ("cat_dim_negative", [(2, 2, 1), (2, 2, 3)], lambda ts: ts[0].cat(ts[1], dim=-1), lambda xs: torch.cat(xs, -1)),
  ("cat_static", [(1, 3), (2, 3)], lambda ts: Tensor.cat(ts[0], ts[1]), lambda xs: torch.cat(xs, 0)),
  ("cat_single", [(2, 3)], lambda ts: ts[0].cat(), lambda xs: torch.cat(xs, 0)),
  ("cat_0size_piece", [(2, 3), (0, 3), (1, 3)], lambda ts: ts[0].cat(ts[1], ts[2]), lambda xs: torch.cat(xs, 0)),
  ("cat_all_0size", [(0, 2), (0, 2)], lambda ts: ts[0].cat(ts[1]), lambda xs: torch.cat(xs, 0)),
  ("cat_1d", [(3,), (2,)], lambda ts: ts[0].cat(ts[1]), lambda xs: torch.cat(xs, 0)),
  ("cat_views", [(3, 2), (2, 2)], lambda ts: ts[0].T.cat(ts[1].flip(0), dim=1), lambda xs: torch.cat([xs[0].T, xs[1].flip(0)], 1)),
  ("stack_dim0", [(2, 3)] * 3, lambda ts: ts[0].stack(ts[1], ts[2]), lambda xs: torch.stack(xs, 0)),
  ("stack_dim1", [(2, 3)] * 2, lambda ts: ts[0].stack(ts[1], dim=1), lambda xs: torch.stack(xs, 1)),
  ("stack_dim_last", [(2, 3)] * 2, lambda ts: Tensor.stack(ts[0], ts[1], dim=2), lambda xs: torch.stack(xs, 2)),
  ("stack_dim_negative", [(2, 3)] * 2, lambda ts: ts[0].stack(ts[1], dim=-1), lambda xs: torch.stack(xs, -1)),
  ("stack_0d", [()] * 3, lambda ts: ts[0].stack(ts[1], ts[2]), lambda xs: torch.stack(xs, 0)),
  ("stack_0size", [(0, 2)] * 2, lambda ts: ts[0].stack(ts[1], dim=1), lambda xs: torch.stack(xs, 1)),
  ("stack_views", [(2, 3), (3, 2)], lambda ts: ts[0][:, ::-1].stack(ts[1].T), lambda xs: torch.stack([xs[0].flip(1), xs[1].T])),
  # more pieces than one fused kernel takes: each is copied into its slot
  ("cat_many_dim1_with_0size", [(2, i % 3, 2) for i in range(12)], lambda ts: Tensor.cat(*ts, dim=1), lambda xs: torch.cat(xs, 1)),
  ("stack_many_views", [(3, 2)] * 11, lambda ts: Tensor.stack(*[t.T for t in ts], dim=2), lambda xs: torch.stack([x.T for x in xs], 2)),
]


def dtype_params(rows, sweep_ids):
  """Every row on float32; the rows named in sweep_ids on every dtype."""
  return [pytest.param(*row, npdt, id=f"{row[0]}-{dname}") for row in rows for dname, _, npdt in DTYPES
          if dname == "float32" or row[0] in sweep_ids]


@pytest.mark.parametrize("name,shapes,fn,ref,npdt", dtype_params(CAT_ROWS, ("cat_dim1_three", "stack_dim1", "cat_views", "cat_many_dim1_with_0size")))
def test_cat_stack(name, shapes, fn, ref, npdt):
  arrays = [make(s, npdt, seed=i) for i, s in enumerate(shapes)]
  out = fn([Tensor(a) for a in arrays])
  check_same(out, ref([torch.from_numpy(a) for a in arrays]).numpy())


SPLIT_ROWS = [
  # (id, shape, nbgrad call, torch call)
  ("split_int_uneven", (7, 3), lambda t: t.split(3), lambda x: x.split(3)),
  ("split_int_even", (6, 3), lambda t: t.split(2), lambda x: x.split(2)),
  ("split_int_bigger", (7, 3), lambda t: t.split(10), lambda x: x.split(10)),
  ("split_list", (7, 3), lambda t: t.split([2, 5]), lambda x: x.split([2, 5])),
  ("split_list_zero_piece", (7, 3), lambda t: t.split([0, 3, 4]), lambda x: x.split([0, 3, 4])),
  ("split_dim1", (2, 5), lambda t: t.split(2, dim=1), lambda x: x.split(2, dim=1)),
  ("split_dim_negative", (2, 5), lambda t: t.split([1, 4], dim=-1), lambda x: x.split([1, 4], dim=-1)),
  ("split_0size", (0, 3), lambda t: t.split(2), lambda x: x.split(2)),
  ("split_size_0_of_0size", (0, 3), lambda t: t.split(0), lambda x: x.split(0)),
  ("split_of_view", (4, 6), lambda t: t.T.split([2, 4]), lambda x: x.T.split([2, 4])),
  ("chunk_uneven", (7, 3), lambda t: t.chunk(3), lambda x: x.chunk(3)),
  ("chunk_even", (6, 3), lambda t: t.chunk(2), lambda x: x.chunk(2)),
  ("chunk_more_than_size", (7, 3), lambda t: t.chunk(10), lambda x: x.chunk(10)),
  ("chunk_dim1", (2, 5), lambda t: t.chunk(2, dim=1), lambda x: x.chunk(2, dim=1)),
  ("chunk_one", (2, 5), lambda t: t.chunk(1, dim=-1), lambda x: x.chunk(1, dim=-1)),
  ("chunk_0size", (0, 3), lambda t: t.chunk(3), lambda x: x.chunk(3)),
  ("chunk_of_view", (4, 6), lambda t: t.flip(1).chunk(4, dim=1), lambda x: x.flip(1).chunk(4, dim=1)),
]


@pytest.mark.parametrize("name,shape,fn,ref,npdt", dtype_params(SPLIT_ROWS, ("split_list", "chunk_uneven", "chunk_of_view")))
def test_split_chunk(name, shape, fn, ref, npdt):
  a = make(shape, npdt)
  outs, refs = fn(Tensor(a)), ref(torch.from_numpy(a))
  assert len(outs) == len(refs), ([o.shape for o in outs], [r.shape for r in refs])
  for o, r in zip(outs, refs): check_same(o, r.numpy())


# ---------- elementwise ops on views of views ----------

ELEMENTWISE_ON_VIEW_ROWS = [
  # (id, shapes, nbgrad fn, numpy fn)
  # reshapes that split a dim the loop walks whole: each group's row index comes from the outer loop dims alone
  ("expand_reshape_like_groupnorm", [(2, 3, 1), (2, 6, 5, 2)], lambda a, b: a.expand(2, 3, 20).reshape(2, 6, 5, 2) * b,
   lambda a, b: np.broadcast_to(a, (2, 3, 20)).reshape(2, 6, 5, 2) * b),
  ("expand_reshape_uneven_groups", [(2, 3, 1), (2, 9, 4)], lambda a, b: a.expand(2, 3, 12).reshape(2, 9, 4) - b,
   lambda a, b: np.broadcast_to(a, (2, 3, 12)).reshape(2, 9, 4) - b),
  ("expand_reshape_not_aligned", [(2, 4, 1), (2, 3, 8)], lambda a, b: a.expand(2, 4, 6).reshape(2, 3, 8) + b,
   lambda a, b: np.broadcast_to(a, (2, 4, 6)).reshape(2, 3, 8) + b),
  ("T_reshape_split", [(20, 3), (6, 10)], lambda a, b: a.T.reshape(6, 10) + b, lambda a, b: a.T.reshape(6, 10) + b),
  ("T_flip_slice_plus_slice", [(3, 4), (4, 3)], lambda a, b: a.T.flip(0)[1:] + b[1:, ::-1], lambda a, b: a.T[::-1][1:] + b[1:, ::-1]),
  ("permute_reshape_slice_affine", [(2, 3, 4)], lambda a: a.permute(2, 0, 1).reshape(4, 6)[:, ::2] * 2 - 1,
   lambda a: a.transpose(2, 0, 1).reshape(4, 6)[:, ::2] * 2 - 1),
  ("pad_flip_times_expand", [(3, 4), (4,)], lambda a, b: a.pad(((1, 0), None))[::-1] * b.reshape(1, 4).expand(4, 4),
   lambda a, b: np.pad(a, ((1, 0), (0, 0)))[::-1] * np.broadcast_to(b.reshape(1, 4), (4, 4))),
  ("reshape_T_reshape_plus_T", [(6,), (2, 3)], lambda a, b: a.reshape(2, 3).T.reshape(6).reshape(3, 2) + b.T,
   lambda a, b: a.reshape(2, 3).T.reshape(6).reshape(3, 2) + b.T),
  ("strided_slices_maximum", [(4, 4)], lambda a: (a[::2, ::-2] + a[1::2, ::2]).maximum(a.T[:2, :2]),
   lambda a: np.maximum(a[::2, ::-2] + a[1::2, ::2], a.T[:2, :2])),
  ("expand_T_reshape_times_repeat", [(3, 1)], lambda a: a.expand(3, 4).T.reshape(2, 6) * a.reshape(3).repeat(4).reshape(2, 6),
   lambda a: np.broadcast_to(a, (3, 4)).T.reshape(2, 6) * np.tile(a.reshape(3), 4).reshape(2, 6)),
  ("computed_then_views_then_op", [(3, 4), (4, 3)], lambda a, b: ((a + 1).T[::-1] * b).reshape(-1)[::3],
   lambda a, b: ((a + 1).T[::-1] * b).reshape(-1)[::3]),
  ("views_broadcast_against_each_other", [(2, 3), (3,)], lambda a, b: a.flip(1)[:, None, :] - b[::-1].reshape(3, 1),
   lambda a, b: a[:, ::-1][:, None, :] - b[::-1].reshape(3, 1)),
  ("padded_terms_summed_then_T_reshape", [(3, 2)],
   lambda a: (a.pad(((1, 0), None)) + a.pad(((0, 1), None)) + a[:, :1].pad(((1, 0), (1, 0)))).T.reshape(8),
   lambda a: (np.pad(a, ((1, 0), (0, 0))) + np.pad(a, ((0, 1), (0, 0))) + np.pad(a[:, :1], ((1, 0), (1, 0)))).T.reshape(8)),
  ("0size_views", [(0, 3), (3,)], lambda a, b: a.T.flip(0) + b.reshape(3, 1), lambda a, b: a.T[::-1] + b.reshape(3, 1)),
]


@pytest.mark.parametrize("npdt", [np.float32, np.int32], ids=["float32", "int32"])
@pytest.mark.parametrize("name,shapes,fn,ref", ELEMENTWISE_ON_VIEW_ROWS, ids=[r[0] for r in ELEMENTWISE_ON_VIEW_ROWS])
def test_elementwise_on_views_of_views(name, shapes, fn, ref, npdt):
  arrays = [make(s, npdt, seed=i + 5) for i, s in enumerate(shapes)]
  out, expected = fn(*[Tensor(a) for a in arrays]), ref(*arrays)
  assert out.shape == expected.shape and out.dtype == NB_OF[expected.dtype], (out.shape, out.dtype, expected.shape, expected.dtype)
  np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)


# Elementwise kernels that read an input transposed walk square tiles (nbgrad.jit.render.TILE): shapes that end
# mid-tile, batch dims outside the tiles, padding and flips inside them, every build (the big rows run in parallel).
TILED_ROWS = [
  ("T_17x33", [(33, 17)], lambda a: a.T.contiguous(), lambda a: a.T),
  ("T_plus_contiguous", [(40, 19), (19, 40)], lambda a, b: a.T * 2 + b, lambda a, b: a.T * 2 + b),
  ("batched_permute", [(3, 18, 35)], lambda a: a.permute(0, 2, 1) - 1, lambda a: a.transpose(0, 2, 1) - 1),
  ("padded_flipped_T", [(20, 17)], lambda a: a.pad(((1, 2), (0, 3))).flip(0).T.contiguous(),
   lambda a: np.pad(a, ((1, 2), (0, 3)))[::-1].T),
  ("big_T", [(300, 261)], lambda a: a.T + a.T.flip(1), lambda a: a.T + a.T[:, ::-1]),
  ("big_batched", [(5, 130, 147)], lambda a: a.permute(0, 2, 1).contiguous(), lambda a: a.transpose(0, 2, 1)),
]


@pytest.mark.parametrize("dname,dt,npdt", [DTYPES[0], DTYPES[1], DTYPES[3]], ids=["float32", "int32", "float64"])
@pytest.mark.parametrize("name,shapes,fn,ref", TILED_ROWS, ids=[r[0] for r in TILED_ROWS])
def test_transposed_reads_walk_tiles(name, shapes, fn, ref, dname, dt, npdt):
  from nbgrad.jit import finish_builds
  from nbgrad.jit.render import Renderer
  arrays = [make(s, npdt, seed=i + 3) for i, s in enumerate(shapes)]
  tensors = [Tensor(a).realize() for a in arrays]
  kernel, = fn(*tensors).schedule()
  assert "xtile" in Renderer(kernel, parallel=False).render("kernel"), "the kernel does not walk tiles"
  expected = ref(*arrays)
  for _ in range(2):   # the first call may run the serial build of a big kernel while the parallel one compiles
    np.testing.assert_array_equal(fn(*tensors).numpy(), expected)
    finish_builds()


# ---------- bad input ----------

BAD_ROWS = [
  # (id, shape, call, exception)
  ("reshape_wrong_count", (2, 3), lambda t: t.reshape(4, 2), ValueError),
  ("reshape_minus1_not_divisible", (2, 3), lambda t: t.reshape(-1, 4), ValueError),
  ("reshape_two_minus1", (2, 3), lambda t: t.reshape(-1, -1), ValueError),
  ("reshape_negative_size", (2, 3), lambda t: t.reshape(-2, -3), ValueError),
  ("view_wrong_count", (2, 3), lambda t: t.view(5), ValueError),
  ("expand_non1_dim", (2, 3), lambda t: t.expand(4, 3), ValueError),
  ("expand_fewer_dims", (2, 3), lambda t: t.expand(3), ValueError),
  ("permute_too_short", (2, 3, 4), lambda t: t.permute(0, 1), ValueError),
  ("permute_repeated_axis", (2, 3, 4), lambda t: t.permute(0, 1, 1), ValueError),
  ("permute_axis_out_of_range", (2, 3, 4), lambda t: t.permute(0, 1, 3), IndexError),
  ("flip_axis_out_of_range", (2, 3, 4), lambda t: t.flip(3), IndexError),
  ("flip_negative_out_of_range", (2, 3), lambda t: t.flip(-3), IndexError),
  ("flip_repeated_axis", (2, 3), lambda t: t.flip((0, 0)), ValueError),
  ("shrink_past_end", (2, 3), lambda t: t.shrink(((0, 3), None)), ValueError),
  ("shrink_start_after_end", (2, 3), lambda t: t.shrink((None, (2, 1))), ValueError),
  ("transpose_axis_out_of_range", (2, 3), lambda t: t.transpose(0, 2), IndexError),
  ("flatten_axis_out_of_range", (2, 3), lambda t: t.flatten(2), IndexError),
  ("unflatten_wrong_sizes", (2, 12), lambda t: t.unflatten(1, (5, 2)), ValueError),
  ("squeeze_axis_out_of_range", (1, 3), lambda t: t.squeeze(2), IndexError),
  ("unsqueeze_axis_out_of_range", (2, 3), lambda t: t.unsqueeze(3), IndexError),
  ("unsqueeze_negative_out_of_range", (2, 3), lambda t: t.unsqueeze(-4), IndexError),
  ("repeat_fewer_than_dims", (2, 3), lambda t: t.repeat(2), ValueError),
  ("too_many_indices", (2, 3), lambda t: t[0, 0, 0], IndexError),
  ("too_many_indices_0d", (), lambda t: t[0], IndexError),
  ("index_out_of_range", (2, 3), lambda t: t[2], IndexError),
  ("index_negative_out_of_range", (2, 3), lambda t: t[-3], IndexError),
  ("index_out_of_range_axis1", (2, 3), lambda t: t[:, 3], IndexError),
  ("two_ellipsis", (2, 3), lambda t: t[..., 0, ...], IndexError),
  ("slice_step_zero", (2, 3), lambda t: t[::0], ValueError),
  ("slice_step_zero_axis1", (2, 3), lambda t: t[:, 1:2:0], ValueError),
  ("cat_mismatched_shape", (2, 3), lambda t: t.cat(Tensor.zeros(2, 4)), ValueError),
  ("cat_mismatched_ndim", (2, 3), lambda t: t.cat(Tensor.zeros(3)), ValueError),
  ("cat_axis_out_of_range", (2, 3), lambda t: t.cat(t, dim=2), IndexError),
  ("stack_mismatched_shape", (2, 3), lambda t: t.stack(Tensor.zeros(3, 2)), ValueError),
  ("split_sizes_wrong_sum", (5, 3), lambda t: t.split([2, 2]), ValueError),
  ("split_size_0_of_nonempty_dim", (5, 3), lambda t: t.split(0), ValueError),
  ("split_size_negative", (5, 3), lambda t: t.split(-2), ValueError),
  ("split_sizes_negative", (5, 3), lambda t: t.split([7, -2]), ValueError),
  ("chunk_zero", (5, 3), lambda t: t.chunk(0), ValueError),
]


@pytest.mark.parametrize("name,shape,call,exc", BAD_ROWS, ids=[r[0] for r in BAD_ROWS])
def test_bad_input_raises_and_leaves_tensor_intact(name, shape, call, exc):
  a = make(shape)
  t = Tensor(a)
  with pytest.raises(exc):
    call(t)
  assert t.shape == shape
  np.testing.assert_array_equal(t.numpy(), a)


def test_stack_of_many_rows_and_its_gradient():
  """600 rows split off one tensor, scaled and stacked back (a Python loop over a batch): forward and gradient
  against torch."""
  a = make((600, 4), np.float32, seed=3)
  x = Tensor(a, requires_grad=True)
  out = Tensor.stack(*[row * (i + 1) for i, row in enumerate(x.split(1))]).sum(0)
  xt = torch.tensor(a, dtype=torch.float64, requires_grad=True)
  ref = torch.stack([row * (i + 1) for i, row in enumerate(xt.split(1))]).sum(0)
  scale = np.abs(a * np.arange(1, 601)[:, None]).sum(0).max()   # float32 sums of 600 terms round to about this
  np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=0, atol=1e-6 * scale)
  (out * Tensor(a[:4])).sum().backward()
  (ref * torch.from_numpy(a[:4]).double()).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("pieces", [3, 11])
@pytest.mark.parametrize("npdt", [np.float32, np.float16, np.int64, np.uint8, np.bool_], ids=lambda d: np.dtype(d).name)
def test_cat_of_computed_pieces_copies_their_rows_on_all_threads_bit_for_bit(monkeypatch, npdt, pieces):
  """Computed pieces joined past their first dim are copied a block of an output row per work item (blocks of 16384
  elements across the slots of pieces of 3 * 7000 elements a row and more), eight pieces per launch (11: a launch of
  eight, then one of three), as unsigned ints: values against numpy, bit for bit (NaN payloads, -0.0)."""
  from nbgrad.jit import concat
  monkeypatch.setattr(concat, "PARALLEL_COPY_MIN_ELEMENTS", 0)
  with np.errstate(over="ignore"):   # float16 takes the larger values as inf: bits to copy as well as any
    arrays = [make((2, 3 + i, 7000), npdt, seed=i) for i in range(pieces)]
  if np.dtype(npdt).kind == "f": arrays[0].reshape(-1)[:3] = np.array([np.nan, -0.0, -np.nan], npdt)
  out = Tensor.cat(*[Tensor(a).realize() for a in arrays], dim=1)
  assert [k.name for k in out.schedule()] == [f"concat_{pieces}"]
  bits = f"u{np.dtype(npdt).itemsize}"
  np.testing.assert_array_equal(out.numpy().view(bits), np.concatenate(arrays, 1).view(bits))


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "float64"])
def test_a_fused_cat_keeps_every_bit_of_its_pieces(name):
  """Small pieces computed where they are joined are one kernel that chooses each element's piece: -0.0 stays -0.0
  (it was added to the other pieces' zero padding, giving 0.0) and NaN payloads stay as they are, in every slot, as
  in numpy's concatenate and torch's cat."""
  width = {"float64": 8}.get(name, 2 if "16" in name else 4)
  bits = np.dtype(f"u{width}")
  sign, quiet = 1 << (8 * width - 1), {2: 0x7E00 if name == "float16" else 0x7FC0, 4: 0x7FC00000, 8: 0x7FF8000000000000}[width]
  values = np.array([sign, sign | quiet | 3, quiet | 1, 0, 1], bits)   # -0.0, NaNs with payloads, 0.0, a subnormal
  pieces = [Tensor(np.roll(values, i)).bitcast(getattr(dtypes, name)) for i in range(3)]   # lazy: the fused cat
  for dim_pieces, axis in ((pieces, 0), ([p.reshape(1, -1) for p in pieces], 1), ([p.reshape(-1, 1) for p in pieces], 1)):
    out = Tensor.cat(*dim_pieces, dim=axis)
    assert len(out.schedule()) == 1
    expected = np.concatenate([np.roll(values, i).reshape(p.shape) for i, p in enumerate(dim_pieces)], axis)
    np.testing.assert_array_equal(out.bitcast(getattr(dtypes, f"uint{8 * width}")).numpy(), expected)


def test_big_computed_pieces_are_computed_then_copied_small_ones_fused():
  """A fused cat computes every piece at every element: on the CPU, pieces times elements from CAT_COPY_MIN_WORK on
  are computed by kernels of their own and copied into their slots; smaller ones stay one fused kernel. Both with
  torch's gradients."""
  import torch
  from nbgrad.graph.concat import CAT_COPY_MIN_WORK
  for rows in (CAT_COPY_MIN_WORK // 512, 8):   # two pieces of rows x 256 (and of rows x 256 on dim 0)
    a, b = (np.random.default_rng(seed).standard_normal((rows, 256)).astype(np.float32) for seed in (1, 2))
    for dim in (0, 1):
      x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
      out = Tensor.cat(x * 2 + 1, y.exp(), dim=dim)
      names = [k.name for k in out.schedule()]
      assert (names[-1] == "concat_2" and len(names) == 3) if rows > 8 else len(names) == 1, (rows, names)
      ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
      expected = torch.cat([ta * 2 + 1, tb.exp()], dim=dim)
      np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-6)
      weights = np.random.default_rng(3).standard_normal(expected.shape).astype(np.float32)
      (out * Tensor(weights)).sum().backward()
      (expected * torch.from_numpy(weights)).sum().backward()
      np.testing.assert_allclose(x.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
      np.testing.assert_allclose(y.grad.numpy(), tb.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("npdt", [np.float32, np.int64, np.uint8], ids=lambda d: np.dtype(d).name)
def test_cat_of_short_rows_copies_many_rows_per_work_item(monkeypatch, npdt):
  """Rows shorter than a work item's block (stack on a new last dim, cat of narrow columns) are copied many rows per
  work item, a slot narrower than SHORT_SLOT a column at a time: 5000 rows of 12 elements are 4 work items, the last
  one short."""
  from nbgrad.jit import concat
  monkeypatch.setattr(concat, "PARALLEL_COPY_MIN_ELEMENTS", 0)
  a, b, c = make((5000, 2), npdt, seed=1), make((5000, 9), npdt, seed=2), make((5000, 1), npdt, seed=3)
  x, y, z = (Tensor(v).realize() for v in (a, b, c))
  np.testing.assert_array_equal(Tensor.cat(x, y, z, dim=1).numpy(), np.concatenate([a, b, c], 1))
  np.testing.assert_array_equal(Tensor.stack(x[:, 0], y[:, 3], z[:, 0], dim=-1).numpy(), np.stack([a[:, 0], b[:, 3], c[:, 0]], -1))
  np.testing.assert_array_equal(Tensor.stack(x, x.flip(1), dim=2).numpy(), np.stack([a, a[:, ::-1]], 2))


@pytest.mark.parametrize("parallel", [False, True], ids=["small", "threads"])
@pytest.mark.parametrize("npdt", [np.float32, np.int64, np.uint8], ids=lambda d: np.dtype(d).name)
def test_cat_reads_windows_of_buffers_in_place(monkeypatch, npdt, parallel):
  """Pieces that are windows of a buffer whose dims past the joined one lie in order (column ranges of a matrix, slabs
  of a 3-d block, rows read backwards, a joined dim read backwards or repeated) are read where they are: roll and a
  circular, reflect or replicate pad of a computed tensor are one copy per dim (the pieces were copied out first, a
  kernel each), and the join of a concatenation's output does not fuse it into a padded sum."""
  from nbgrad.jit import concat
  if parallel: monkeypatch.setattr(concat, "PARALLEL_COPY_MIN_ELEMENTS", 0)
  a = make((6, 5, 40), npdt)
  x = Tensor(a).realize()
  for make_view, expected in [(lambda t: t.roll(3, 1), np.roll(a, 3, 1)), (lambda t: t.roll(-7), np.roll(a, -7)),
                              (lambda t: t[:, 1:4].cat(t[:, ::-1][:, :2], t.flip(0)[:, 3:], dim=1),
                               np.concatenate([a[:, 1:4], a[:, ::-1][:, :2], a[::-1][:, 3:]], 1)),
                              (lambda t: t.reshape(30, 40).T[3:6].cat(t.reshape(30, 40).T[:2]), np.concatenate([a.reshape(30, 40).T[3:6], a.reshape(30, 40).T[:2]]))]:
    np.testing.assert_array_equal(make_view(x).numpy(), expected)
  assert [k.name for k in x.roll(3, 1).schedule()] == ["concat_2"]
  assert [k.name for k in x.roll((1, 2), (0, 2)).schedule()] == ["concat_2", "concat_2"]
  for mode, numpy_mode in (("circular", "wrap"), ("reflect", "reflect"), ("replicate", "edge")):   # flipped and repeated edges too
    padded = x.pad(((0, 0), (1, 2), (3, 0)), mode=mode)
    assert [k.name for k in padded.schedule()] == ["concat_3", "concat_2"], mode
    np.testing.assert_array_equal(padded.numpy(), np.pad(a, ((0, 0), (1, 2), (3, 0)), mode=numpy_mode))


def test_cat_and_stack_take_a_list_as_torch_writes_them():
  a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((1, 3), np.float32)
  np.testing.assert_array_equal(Tensor.cat([Tensor(a), Tensor(b)]).numpy(), np.concatenate([a, b]))
  np.testing.assert_array_equal(Tensor.stack((Tensor(a), Tensor(a)), dim=1).numpy(), np.stack([a, a], axis=1))
  # numpy arrays among them become tensors, as other ops take arrays; anything else is refused
  np.testing.assert_array_equal(Tensor.cat([Tensor(a), b]).numpy(), np.concatenate([a, b]))
  np.testing.assert_array_equal(Tensor.stack([a, Tensor(a)]).numpy(), np.stack([a, a]))
  with pytest.raises(TypeError, match="cat operand"):
    Tensor.cat([Tensor(a), [1.0, 2.0, 3.0]])


def test_axis_0_of_a_0d_tensor_as_torch():
  """A 0-d tensor has axes 0 and -1 for transpose, flip and gather, as in torch: each gives the scalar back."""
  x, tx = Tensor(2.5), torch.tensor(2.5)
  assert x.transpose(0, -1).numpy() == tx.transpose(0, -1).numpy() == 2.5
  assert x.flip(0).numpy() == torch.flip(tx, (0,)).numpy() == 2.5
  assert x.gather(0, Tensor(0)).numpy() == torch.gather(tx, 0, torch.tensor(0)).numpy() == 2.5


@pytest.mark.parametrize("shape,order", [((3, 17, 33), (0, 2, 1)), ((2, 3, 19, 21), (1, 0, 3, 2)), ((2, 5, 3, 40), (0, 2, 3, 1))],
                         ids=["batch_1", "batch_2", "channels_last"])
def test_transposed_copy_with_batch_dims_on_all_threads(monkeypatch, shape, order):
  """A copy that reads its input transposed, with dims before the transposed pair, runs its parallel build as one
  parallel loop over those dims and the row tiles together (sizes not a multiple of the tile's 16): against numpy."""
  import nbgrad.jit as jit
  from nbgrad.jit.render import Renderer
  monkeypatch.setattr(jit, "PARALLEL_MIN_ELEMENTS", 0)
  a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
  x = Tensor(a).realize()
  (kernel,) = x.permute(order).contiguous().schedule()
  assert "for xflat in prange(" in Renderer(kernel, True).render("kernel")
  x.permute(order).contiguous().realize()
  jit.finish_builds()   # the first call ran the serial build while the parallel one compiled
  np.testing.assert_array_equal(x.permute(order).contiguous().numpy(), a.transpose(order))


def test_sizes_given_as_0_d_int_tensors_as_torch():
  x, ref = Tensor(np.arange(6.0)), torch.arange(6.0)
  assert x.reshape(Tensor(3), 2).shape == tuple(ref.reshape(torch.tensor(3), 2).shape) == (3, 2)
  assert x.reshape((Tensor(-1), Tensor(2))).shape == (3, 2)
  assert x.reshape(6, 1).expand(Tensor(6), Tensor(4)).shape == tuple(ref.reshape(6, 1).expand(torch.tensor(6), torch.tensor(4)).shape)
  assert Tensor.zeros(Tensor(2), 3).shape == (2, 3)
  for size in (Tensor(2.0), Tensor([3])):   # a float or one-element tensor is no size: named in the message
    with pytest.raises(TypeError, match="sizes are ints or 0-d int tensors"): x.reshape(size, -1)
