"""Fusion rules, stated as kernel counts of Tensor.schedule() on realized inputs, and schedule() leaving no trace."""
import os
import re
import gc
import numpy as np
import pytest

from nbgrad import Tensor, dtypes
from nbgrad.graph.ops import TernaryOps
from nbgrad.helpers import GlobalCounters


def inputs(*shapes, seed=0):
  """Realized float32 tensors and the numpy arrays they hold (positive, so sqrt/log stay real)."""
  rng = np.random.default_rng(seed)
  arrays = [(rng.random(shape) + 0.5).astype(np.float32) for shape in shapes]
  tensors = [Tensor(a).realize() for a in arrays]
  for t in tensors: assert len(t.schedule()) == 0
  return tensors, arrays


def np_softmax(x, axis=-1):
  e = np.exp(x - x.max(axis=axis, keepdims=True))
  return e / e.sum(axis=axis, keepdims=True)


def chain10(x, y, relu, sqrt, exp):
  """Ten elementwise ops."""
  z = x + y
  z = z * 2
  z = z - 1.5
  z = relu(z)
  z = z + x
  z = sqrt(z)
  z = z * y
  z = -z
  z = exp(z)
  return z / x


def np_chain10(x, y): return chain10(x, y, lambda a: np.maximum(a, 0), np.sqrt, np.exp)
def nb_chain10(x, y): return chain10(x, y, lambda t: t.relu(), lambda t: t.sqrt(), lambda t: t.exp())


# name, input shapes, nbgrad fn, numpy fn, kernel bound, exact (True: == bound, False: <= bound)
FUSION = [
  ("mul_add_relu_sum", [(4, 5), (4, 5), (4, 5)],
   lambda a, b, c: (a * b + c).relu().sum(1), lambda a, b, c: np.maximum(a * b + c, 0).sum(1), 1, True),
  ("mul_add_relu_sum_broadcast", [(4, 5), (4, 5), (5,)],
   lambda a, b, c: (a * b + c).relu().sum(1), lambda a, b, c: np.maximum(a * b + c, 0).sum(1), 1, True),
  ("elementwise_chain_10", [(3, 7), (3, 7)], nb_chain10, np_chain10, 1, True),
  ("elementwise_chain_10_broadcast", [(3, 7), (7,)], nb_chain10, np_chain10, 1, True),
  ("reduce_then_elementwise", [(4, 6)],
   lambda a: (a.sum(1) * 2).relu(), lambda a: np.maximum(a.sum(1) * 2, 0), 1, True),
  ("softmax", [(4, 6)], lambda a: a.softmax(-1), np_softmax, 3, False),
  ("softmax_axis0", [(4, 6)], lambda a: a.softmax(0), lambda a: np_softmax(a, 0), 3, False),
  ("center_by_mean", [(4, 6)], lambda a: a - a.mean(1, keepdim=True), lambda a: a - a.mean(1, keepdims=True), 2, False),
  ("normalize_by_sum", [(4, 6)], lambda a: a / a.sum(1, keepdim=True), lambda a: a / a.sum(1, keepdims=True), 2, False),
]


def np_group_norm(x, w, b, groups):
  g = x.reshape(x.shape[0], groups, -1)
  g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
  per_channel = (1, -1) + (1,) * (x.ndim - 2)
  return g.reshape(x.shape) * w.reshape(per_channel) + b.reshape(per_channel)


def nb_group_norm(x, w, b, groups):
  per_channel = (1, -1) + (1,) * (x.ndim - 2)
  return x.reshape(x.shape[0], groups, -1).layernorm().reshape(x.shape) * w.reshape(per_channel) + b.reshape(per_channel)


# statistics over a reshape of the values they normalize (GroupNorm's groups, InstanceNorm's images): the loop runs
# over a refinement of both shapes, so the sums and the values read from them are one kernel
FUSION += [
  ("group_norm", [(2, 6, 3, 5), (6,), (6,)], lambda x, w, b: nb_group_norm(x, w, b, 3),
   lambda x, w, b: np_group_norm(x, w, b, 3), 1, True),
  ("group_norm_batch_1_one_group", [(1, 4, 1, 6), (4,), (4,)], lambda x, w, b: nb_group_norm(x, w, b, 1),
   lambda x, w, b: np_group_norm(x, w, b, 1), 1, True),
  ("instance_norm", [(3, 4, 2, 5), (4,), (4,)], lambda x, w, b: nb_group_norm(x, w, b, 4),
   lambda x, w, b: np_group_norm(x, w, b, 4), 1, True),
  ("mean_of_outer_dim_read_back_through_reshape", [(6, 4, 5)],
   lambda a: a - a.reshape(6, 20).mean(0, keepdim=True).expand(6, 20).reshape(6, 4, 5),
   lambda a: a - a.reshape(6, 20).mean(0, keepdims=True).reshape(1, 4, 5), 1, True),
  ("softmax_of_groups_scaled", [(4, 6, 5)], lambda a: a.reshape(4, 2, 15).softmax(-1).reshape(4, 6, 5) * 2,
   lambda a: np_softmax(a.reshape(4, 2, 15)).reshape(4, 6, 5) * 2, 1, True),
]
FUSION_IDS = [row[0] for row in FUSION]


@pytest.mark.parametrize("name,shapes,nb_fn,np_fn,bound,exact", FUSION, ids=FUSION_IDS)
def test_kernel_count(name, shapes, nb_fn, np_fn, bound, exact):
  tensors, arrays = inputs(*shapes)
  out = nb_fn(*tensors)
  n = len(out.schedule())
  if exact: assert n == bound, f"{name}: {n} kernels, expected {bound}"
  else: assert 1 <= n <= bound, f"{name}: {n} kernels, expected at most {bound}"
  np.testing.assert_allclose(out.numpy(), np_fn(*arrays), rtol=1e-5, atol=1e-6)


MOVEMENT = [
  ("reshape", lambda t: t.reshape(6, 4), lambda a: a.reshape(6, 4)),
  ("reshape_flat", lambda t: t.reshape(-1), lambda a: a.reshape(-1)),
  ("permute", lambda t: t.permute(1, 0), lambda a: a.transpose(1, 0)),
  ("transpose_T", lambda t: t.T, lambda a: a.T),
  ("expand", lambda t: t.reshape(1, 4, 6).expand(3, 4, 6), lambda a: np.broadcast_to(a[None], (3, 4, 6))),
  ("shrink", lambda t: t.shrink(((1, 3), (2, 5))), lambda a: a[1:3, 2:5]),
  ("pad", lambda t: t.pad(((1, 0), (2, 1))), lambda a: np.pad(a, ((1, 0), (2, 1)))),
  ("flip", lambda t: t.flip(0), lambda a: a[::-1]),
  ("slice_step", lambda t: t[::2, ::-3], lambda a: a[::2, ::-3]),
  ("unsqueeze_squeeze", lambda t: t.unsqueeze(0).squeeze(0), lambda a: a),
  ("combined", lambda t: t.permute(1, 0).flip(1).reshape(2, 3, 4)[:, 1:, ::2],
   lambda a: a.transpose(1, 0)[:, ::-1].reshape(2, 3, 4)[:, 1:, ::2]),
]


@pytest.mark.parametrize("name,nb_fn,np_fn", MOVEMENT, ids=[row[0] for row in MOVEMENT])
def test_movement_after_realize_is_free(name, nb_fn, np_fn):
  (t,), (a,) = inputs((4, 6), seed=1)
  out = nb_fn(t)
  assert len(out.schedule()) == 0, f"{name} scheduled {len(out.schedule())} kernels"
  np.testing.assert_array_equal(out.numpy(), np_fn(a))


@pytest.mark.parametrize("name,shapes,nb_fn,np_fn,bound,exact", FUSION, ids=FUSION_IDS)
def test_schedule_then_realize_matches(name, shapes, nb_fn, np_fn, bound, exact):
  tensors, arrays = inputs(*shapes, seed=2)
  expected = np_fn(*arrays)
  scheduled = nb_fn(*tensors)
  count_before = GlobalCounters.kernel_count
  first = scheduled.schedule()
  second = scheduled.schedule()
  assert len(first) == len(second) >= 1
  assert GlobalCounters.kernel_count == count_before, "schedule() ran kernels"
  scheduled.realize()
  np.testing.assert_allclose(scheduled.numpy(), expected, rtol=1e-5, atol=1e-6)
  direct = nb_fn(*tensors).realize()
  np.testing.assert_allclose(direct.numpy(), expected, rtol=1e-5, atol=1e-6)
  for t, a in zip(tensors, arrays): np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("name,shapes,nb_fn,np_fn,bound,exact", FUSION, ids=FUSION_IDS)
def test_kernel_count_counter_matches_schedule(name, shapes, nb_fn, np_fn, bound, exact):
  tensors, arrays = inputs(*shapes, seed=3)
  out = nb_fn(*tensors)
  n = len(out.schedule())
  before = GlobalCounters.kernel_count
  out.realize()
  assert GlobalCounters.kernel_count - before == n
  assert len(out.schedule()) == 0
  before = GlobalCounters.kernel_count
  out.realize()  # already realized: nothing runs
  assert GlobalCounters.kernel_count == before
  np.testing.assert_allclose(out.numpy(), np_fn(*arrays), rtol=1e-5, atol=1e-6)


def test_schedule_of_several_outputs():
  (a, b), (x, y) = inputs((3, 5), (3, 5), seed=4)
  s, m = (a * b).sum(1), (a - b).max(0)
  n = len(s.schedule(m))
  assert 1 <= n <= len(s.schedule()) + len(m.schedule())
  before = GlobalCounters.kernel_count
  s.realize(m)
  assert GlobalCounters.kernel_count - before == n
  np.testing.assert_allclose(s.numpy(), (x * y).sum(1), rtol=1e-5)
  np.testing.assert_allclose(m.numpy(), (x - y).max(0), rtol=1e-6)


def test_intermediate_buffers_are_freed_during_the_realize():
  """A chain of kernels keeps at most its live buffers: each intermediate goes once its reader has run, and
  mem_used/mem_peak count the bytes."""
  x = Tensor(np.ones((256, 256), np.float32)).realize()   # from numpy: not made by a kernel, not counted
  gc.collect()   # buffers of earlier tests freed now, not in the middle of this one
  GlobalCounters.reset()
  before = GlobalCounters.mem_used
  step = x
  for _ in range(4): step = (step.sum(1, keepdim=True) + step).contiguous()   # four kernels, each reading the last
  step.realize()
  one = 256 * 256 * 4
  assert GlobalCounters.mem_used - before == one                   # only the result is left
  assert GlobalCounters.mem_peak - before <= 2 * one + 4 * 1024    # a kernel's input and output, never all four
  del step
  assert GlobalCounters.mem_used == before


def test_a_training_loop_of_lazy_assigns_reuses_its_schedule_every_step():
  """w.assign(w - lr * w.grad) left lazy, then loss.item(): each step's graph reads the last step's update. A
  node's depth counted sources computed since it was built, so it grew every step; past DEPTH_STAGE the graph was
  staged at other nodes each step and scheduled anew (one more cached schedule per step: memory grew, steps
  slowed). The graphs are the same now, and so are the values (against numpy's loop)."""
  from nbgrad.graph import schedule as schedule_module
  rng = np.random.default_rng(5)
  w0, x = rng.standard_normal((4, 4)).astype(np.float32) * 0.3, rng.standard_normal((3, 2, 4)).astype(np.float32)
  w, xs = Tensor(w0, requires_grad=True), Tensor(x)
  expected, counts = w0.astype(np.float64), []
  for step in range(30):
    h = Tensor.zeros(2, 4)
    for t in range(3): h = (xs[t] @ w + h).tanh()
    loss = h.square().sum()
    loss.backward()
    with Tensor.inference_mode(): w.assign(w - 0.01 * w.grad)
    w.grad = None
    loss.item()
    counts.append(len(schedule_module._templates))
    hs, grads = [np.zeros((2, 4))], []
    for t in range(3): hs.append(np.tanh(x[t] @ expected + hs[-1]))
    g, gw = 2 * hs[-1], np.zeros((4, 4))
    for t in reversed(range(3)):
      g = g * (1 - hs[t + 1] ** 2)
      gw, g = gw + x[t].T @ g, g
    expected = expected - 0.01 * gw
  assert counts[-1] == counts[10]
  np.testing.assert_allclose(w.numpy(), expected, rtol=1e-4, atol=1e-5)


def test_a_graph_of_the_same_structure_reuses_its_schedule_with_its_own_buffers():
  from nbgrad.graph import schedule as schedule_module
  a, b = (Tensor(np.full((4, 5), v, np.float32)).realize() for v in (1.0, 2.0))
  first = (a * 3 + 1).relu().sum(1)
  kernels = first.schedule()
  templates = len(schedule_module._templates)
  second = (b * 3 + 1).relu().sum(1)
  again = second.schedule()
  assert len(schedule_module._templates) == templates                      # found, not scheduled afresh
  assert [k.name for k in again] == [k.name for k in kernels] and again[0].inputs[0] is b.lazydata.base
  np.testing.assert_array_equal(second.numpy(), np.full(4, 35.0))
  np.testing.assert_array_equal(first.numpy(), np.full(4, 20.0))
  # a different constant (even -0.0 for 0.0) is a different graph
  np.testing.assert_array_equal((a * -0.0).numpy().view(np.uint32), np.full((4, 5), 0x80000000, np.uint32))
  np.testing.assert_array_equal((a * 0.0).numpy().view(np.uint32), np.zeros((4, 5), np.uint32))
  np.testing.assert_array_equal((b * 5 + 1).relu().sum(1).numpy(), np.full(4, 55.0))


def test_a_parameter_made_by_ones_or_zeros_runs_the_same_kernels_in_every_step():
  """A constant parameter is stored before its first use, so the first SGD step runs the kernels of the later
  ones (which read updated values) instead of kernels of its own; the values follow torch."""
  import torch
  from nbgrad.graph.schedule import structure_key
  x = np.random.default_rng(2).standard_normal((6, 7)).astype(np.float32)
  w, b = Tensor.ones(7, requires_grad=True), Tensor.zeros(7, requires_grad=True)
  tw, tb = torch.ones(7, requires_grad=True), torch.zeros(7, requires_grad=True)
  structures = []
  for _ in range(3):
    w.grad = b.grad = None
    loss = ((Tensor(x) * w + b).relu() ** 2).mean()
    loss.backward()
    w.assign(w.detach() - 0.1 * w.grad)
    b.assign(b.detach() - 0.1 * b.grad)
    structures.append({structure_key(k) for k in loss.schedule(w, b) if k.kind == "compute"})
    loss.realize(w, b)
    tw.grad = tb.grad = None
    ((torch.from_numpy(x) * tw + tb).relu() ** 2).mean().backward()
    with torch.no_grad():
      tw -= 0.1 * tw.grad
      tb -= 0.1 * tb.grad
  assert structures[1] <= structures[0] and structures[2] == structures[1]
  np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-6)
  np.testing.assert_allclose(b.numpy(), tb.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_a_buffer_read_by_many_short_lived_graphs_keeps_few_references_to_them():
  """Each node keeps weak references to the nodes built on it (an in-place write computes the pending ones first);
  those of nodes that are gone are dropped as the list grows, so a weight read every step holds no more."""
  w = Tensor(np.ones((3, 3), np.float32)).realize()
  for step in range(1000): (w * step).sum()
  gc.collect()
  assert len(w.lazydata.base.readers) < 128
  pending = w * 2
  w[0, 0] = 5.0   # the write computes the pending reader first, from the old values
  np.testing.assert_array_equal(pending.numpy(), np.full((3, 3), 2.0, np.float32))


def test_a_kept_schedule_keeps_no_buffer_alive():
  import weakref
  x = Tensor(np.ones((64, 64), np.float32)).realize()
  middle = (x + 1).contiguous()
  (middle * 2).realize()
  node = weakref.ref(middle.lazydata.base)
  del middle
  gc.collect()
  assert node() is None


def test_a_reduce_an_earlier_kernel_computes_is_read_not_recomputed():
  """A max-pool's window maximum is computed once: its gradient's tie count and mask read that buffer."""
  import torch
  from nbgrad.graph.ops import ReduceOps
  rng = np.random.default_rng(5)
  data = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
  data[0, 0, :2, :2] = 1.0                               # a tie: the window's gradient is split in four
  x = Tensor(data, requires_grad=True)
  pooled = x.max_pool2d(2)
  loss = (pooled * pooled).sum()
  loss.backward()
  kernels = loss.schedule(x.grad)      # the pooled tensor is no output here: a kernel of the loss computes it
  assert sum(op is ReduceOps.MAX for k in kernels for op, _ in k.stages) == 1
  loss.realize(x.grad)
  ref = torch.tensor(data, requires_grad=True)
  ref_pooled = torch.nn.functional.max_pool2d(ref, 2)
  (ref_pooled * ref_pooled).sum().backward()
  np.testing.assert_allclose(pooled.numpy(), ref_pooled.detach().numpy())
  expected = ref.grad.numpy().copy()
  expected[0, 0, :2, :2] = 2.0 / 4                       # torch gives the whole gradient to one of the tied
  np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_an_elementwise_node_an_earlier_kernel_stores_is_read_not_recomputed():
  """A log-softmax gradient that a matrix product reads is stored by a kernel of its own; the bias gradient
  sums that buffer rather than computing the gradient (and its row sums) again."""
  import torch
  rng = np.random.default_rng(6)
  x, w, b = (rng.standard_normal(s).astype(np.float32) for s in [(8, 5), (5, 4), (4,)])
  tw, tb = Tensor(w, requires_grad=True), Tensor(b, requires_grad=True)
  loss = (Tensor(x) @ tw + tb).log_softmax(-1)[:, 0].sum()
  loss.backward()
  kernels = loss.schedule(tw.grad, tb.grad)
  bias_step = next(k for k in kernels if k.output is tb.grad.lazydata.base)
  gradient = bias_step.inputs[0]
  assert len(bias_step.stages) == 1 and bias_step.inputs == [gradient] and any(k.output is gradient for k in kernels)
  loss.realize(tw.grad, tb.grad)
  rw, rb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
  torch.log_softmax(torch.tensor(x) @ rw + rb, -1)[:, 0].sum().backward()
  np.testing.assert_allclose(tw.grad.numpy(), rw.grad.numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(tb.grad.numpy(), rb.grad.numpy(), rtol=1e-5, atol=1e-6)


def kernel_ops(kernel) -> set:
  """The ops of a compute kernel's expressions (its stages', its output's and those it stores alongside); none for a custom one."""
  seen, ops, stack = set(), set(), [e for e in (kernel.out_expr, *kernel.also_exprs, *(e for _, e in kernel.stages)) if e is not None]
  while stack:
    e = stack.pop()
    if id(e) in seen: continue
    seen.add(id(e))
    ops.add(e.op)
    stack.extend(e.srcs)
  return ops


@pytest.mark.parametrize("attention", [False, True])
def test_a_softmax_stored_for_a_product_gives_its_gradient_without_finding_maxima_again(attention):
  """softmax's gradient y * (g - sum(g * y)) reads the stored result y: the backward pass has one reduce, a sum, and
  takes no exponential (attention's weights, 0 for a query that may attend to nothing, likewise)."""
  import torch
  from nbgrad.graph.ops import ReduceOps, UnaryOps
  rng = np.random.default_rng(12)
  q, k, v = (rng.standard_normal(shape).astype(np.float32) for shape in [(2, 5, 4), (2, 6, 4), (2, 6, 3)])
  mask = rng.random((5, 6)) < 0.7
  mask[2] = False   # query 2 sees nothing: zeros
  tq = Tensor(q, requires_grad=True)
  if attention: out = tq.scaled_dot_product_attention(Tensor(k), Tensor(v), attn_mask=Tensor(mask))
  else: out = (tq @ Tensor(k).transpose(-1, -2)).softmax(-1) @ Tensor(v)
  out.realize()
  out.sum().backward()
  kernels = tq.grad.schedule()
  assert [op for kernel in kernels for op, _ in kernel.stages] == [ReduceOps.SUM]
  assert not any(UnaryOps.EXP in kernel_ops(kernel) for kernel in kernels)
  rq = torch.tensor(q, requires_grad=True)
  if attention: ref = torch.nn.functional.scaled_dot_product_attention(rq, torch.from_numpy(k), torch.from_numpy(v), attn_mask=torch.from_numpy(mask))
  else: ref = (rq @ torch.from_numpy(k).transpose(-1, -2)).softmax(-1) @ torch.from_numpy(v)
  ref.sum().backward()
  np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(tq.grad.numpy(), rq.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_gradients_of_chunks_stored_anyway_are_joined_not_added_as_padded_pieces():
  """q, k and v cut by chunk from one product, each read with its heads moved: their gradients (products, stored
  anyway) are copied into one concatenation, as cat joins stored tensors, not added as padded pieces that every
  element tests."""
  import torch
  rng = np.random.default_rng(13)
  x, w = rng.standard_normal((2, 5, 4)).astype(np.float32), rng.standard_normal((4, 12)).astype(np.float32)
  weights = [rng.standard_normal((2, 2, 5, 2)).astype(np.float32) for _ in range(3)]

  def loss(xt, wt, lib):
    pieces = (xt @ wt).chunk(3, dim=-1)
    heads = [p.reshape(2, 5, 2, 2).transpose(1, 2) for p in pieces]
    return sum(((h @ (Tensor(g) if lib is Tensor else torch.from_numpy(g)).transpose(-1, -2)) ** 2).sum() for h, g in zip(heads, weights))
  tw = Tensor(w, requires_grad=True)
  loss(Tensor(x), tw, Tensor).backward()
  names = [k.name for k in tw.grad.schedule()]
  assert "concat_3" in names and not any(n.startswith("e_add") for n in names), names
  rw = torch.tensor(w, requires_grad=True)
  loss(torch.from_numpy(x), rw, torch).backward()
  np.testing.assert_allclose(tw.grad.numpy(), rw.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_a_reduce_read_back_through_size_1_dims_fuses_with_its_consumer():
  """A convolution's bias step sums over (batch 1, positions) and reshapes away the size-1 dims: one kernel."""
  (g, b), (ng, nb) = inputs((1, 4, 3, 5), (4,))
  out = b - 0.1 * g.sum((0, 2, 3), keepdim=True).reshape(4)
  kernels = out.schedule()
  assert len(kernels) == 1 and len(kernels[0].stages) == 1
  np.testing.assert_allclose(out.numpy(), nb - 0.1 * ng.sum((0, 2, 3)), rtol=1e-6)


def test_a_long_chain_is_cut_into_kernels_of_bounded_depth():
  """x = x * 1.001 two hundred times: kernels of at most MAX_FUSED_DEPTH ops (one kernel took seconds to compile)."""
  from nbgrad.graph.schedule import MAX_FUSED_DEPTH
  x = Tensor(np.array([1.0, 2.0], np.float32))
  for _ in range(200): x = x * 1.001
  assert 200 // MAX_FUSED_DEPTH <= len(x.schedule()) <= 200 // MAX_FUSED_DEPTH + 1


def test_graphs_thousands_of_ops_deep_compute_without_recursion_errors():
  values = np.array([1.0, 2.0], np.float32)
  w = Tensor(values, requires_grad=True)
  x, expected = w, values.copy()
  for _ in range(3000):
    x = x * np.float32(1.0001)
    expected = expected * np.float32(1.0001)
  np.testing.assert_allclose(x.numpy(), expected, rtol=1e-5)
  x.sum().backward()   # the gradient is a chain of 3000 products too
  np.testing.assert_allclose(w.grad.numpy(), np.full(2, np.float32(1.0001) ** 3000), rtol=1e-4)
  running = Tensor(0.0)   # a running total of reductions, as a training loop's loss sum without .item()
  for i in range(600): running = running + (w * (i % 7)).sum()
  assert running.item() == sum(i % 7 for i in range(600)) * 3.0


def expression_nodes(kernel) -> list:
  """Every distinct node of a kernel's expressions."""
  seen, stack = {}, [kernel.out_expr] + [e for _, e in kernel.stages]
  while stack:
    e = stack.pop()
    if id(e) not in seen:
      seen[id(e)] = e
      stack.extend(e.srcs)
  return list(seen.values())


def test_gradient_of_slices_stays_small_and_matches_torch():
  """Gates sliced from one tensor (an LSTM cell) and multiplied: each slice's gradient is padded back and summed.
  Only the node that adds a padding tests its mask, and a kernel holds a bounded number of nodes (one kernel
  of thousands of lines took minutes to compile)."""
  import torch
  from nbgrad.graph.schedule import MAX_KERNEL_NODES
  values = np.random.default_rng(5).standard_normal((4, 32)).astype(np.float32)
  z, zt = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  out, out_t = z[:, :8].sigmoid(), zt[:, :8].sigmoid()
  for k in range(1, 4):
    out, out_t = out * z[:, 8 * k:8 * (k + 1)].sigmoid(), out_t * zt[:, 8 * k:8 * (k + 1)].sigmoid()
  out.sum().backward()
  out_t.sum().backward()
  for kernel in z.grad.schedule():
    nodes = expression_nodes(kernel)
    assert len(nodes) <= 4 * MAX_KERNEL_NODES
    assert sum(e.op is TernaryOps.WHERE for e in nodes) <= 8   # one mask per padded piece, not one per node
  np.testing.assert_allclose(z.grad.numpy(), zt.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_half_math_on_a_finished_sum_leaves_the_output_loop():
  """A float16 sum, then math rounded to float16 at every step, broadcast over 300 outputs: computed in the loop over
  the outputs (its accumulator was never treated as known there), LLVM unswitched that loop on every rounding's
  conditions and did not finish compiling."""
  import torch
  x = np.linspace(-3, 3, 300).astype(np.float16)
  out = Tensor([3.0], dtype=dtypes.float16).expand(300) * (Tensor(x).sum().abs() + 1).sqrt()
  tx = torch.tensor(x)
  expected = torch.tensor([3.0], dtype=torch.float16).expand(300) * (tx.sum().abs() + 1).sqrt()
  np.testing.assert_array_equal(out.numpy(), expected.numpy())


def test_values_constant_along_the_inner_loop_are_computed_before_it():
  """hoist_invariants: a row index assigned in the loop body (x0_next) or after a loop (x0 = n - 1) is known from
  there, so what is computed from it alone leaves the column loop; an accumulator's readers stay in its loop, and
  leave the loops after it."""
  from nbgrad.jit.render import hoist_invariants
  code = ["for x0 in range(0, i0 - 1, 2):",
          "  x0_next = x0 + 1",
          "  for x2 in range(xstart, xend):",
          "    t1 = b0[x0_next * i1]",
          "    t2 = exp_f32(t1)",
          "    t3 = b1[x2] * t2",
          "    acc0[x2] = acc0[x2] + t3",
          "if i0 % 2 == 1:",
          "  x0 = i0 - 1",
          "  for x2 in range(xstart, xend):",
          "    t4 = b0[x0 * i1]",
          "    acc0[x2] = acc0[x2] + t4",
          "acc1 = 0",
          "for x3 in range(i2):",
          "  t5 = acc1 * f0",
          "  acc1 = acc1 + b0[x3]",
          "for x4 in range(i3):",
          "  t6 = acc1 * f1",
          "  out[x4] = t6 + b1[x4]"]
  assert hoist_invariants(code) == [
    "for x0 in range(0, i0 - 1, 2):",
    "  x0_next = x0 + 1",
    "  t1 = b0[x0_next * i1]",
    "  t2 = exp_f32(t1)",
    "  for x2 in range(xstart, xend):",
    "    t3 = b1[x2] * t2",
    "    acc0[x2] = acc0[x2] + t3",
    "if i0 % 2 == 1:",
    "  x0 = i0 - 1",
    "  t4 = b0[x0 * i1]",
    "  for x2 in range(xstart, xend):",
    "    acc0[x2] = acc0[x2] + t4",
    "acc1 = 0",
    "for x3 in range(i2):",
    "  t5 = acc1 * f0",
    "  acc1 = acc1 + b0[x3]",
    "t6 = acc1 * f1",   # the accumulator's loop is over: constant along the next one
    "for x4 in range(i3):",
    "  out[x4] = t6 + b1[x4]"]


def test_a_broadcast_gradient_summed_into_column_blocks_compiles_and_matches_torch():
  """Summing atanh(0.9 tanh(x))'s gradient (a long chain of selects) into a column block: with the chain left
  inside the column loop, LLVM did not finish optimizing the kernel in ten minutes."""
  import torch
  a = (np.random.default_rng(1).random((4, 4)) - 0.5).astype(np.float32)
  x = Tensor(a, requires_grad=True)
  ((x.tanh() * 0.9).atanh().reshape(4, 4, 1) * x.reshape(1, 4, 4)).sum(1).sum().backward()   # a product as a sum
  xt = torch.tensor(a.astype(np.float64), requires_grad=True)
  torch.einsum("ij,jk->ik", (xt.tanh() * 0.9).atanh(), xt).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_a_value_assigned_in_a_loop_is_stored_when_a_realize_reads_it():
  """b.assign(b - 0.1 * p.mean()) with p = x + b read only through p.numpy(): b's value is stored by the realize
  that reads it, so each step runs the same few kernels (b stayed lazy, and each step computed b's whole history
  again, in a kernel growing with it). Its values match numpy's loop."""
  (x,), (xs,) = inputs((64, 8))
  b, bn = Tensor.zeros(8).contiguous().realize(), np.zeros(8, np.float32)
  counts = []
  for _ in range(12):
    before = GlobalCounters.kernel_count
    p = x + b
    np.testing.assert_allclose(p.numpy(), xs + bn, rtol=1e-5, atol=1e-5)
    counts.append(GlobalCounters.kernel_count - before)
    b.assign(b - 0.1 * p.mean())
    bn = bn - np.float32(0.1) * (xs + bn).mean()
  assert counts[2:] == [counts[2]] * 10 and counts[2] <= 4, counts
  np.testing.assert_allclose(b.numpy(), bn, rtol=1e-5, atol=1e-5)


# ---- values realized together: an elementwise value a later elementwise kernel reads at the same index is computed
# and stored by that kernel (graph/schedule.py store_alongside)

@pytest.mark.parametrize("npdt", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_a_chain_realized_together_is_one_kernel_storing_every_value(npdt):
  """a = x * y, b = a + x, c = b * 3, d = c > a, realized together: one kernel stores all four, each as numpy computes
  it one op at a time (ints wrap, halfs round after every op)."""
  rng = np.random.default_rng(7)
  x, y = ((rng.standard_normal((4, 5)) * 60).astype(npdt) for _ in range(2))
  tx, ty = Tensor(x).realize(), Tensor(y).realize()
  a = tx * ty
  b = a + tx
  c = b * 3
  d = c > a
  (kernel,) = Tensor.schedule(a, b, c, d)
  assert kernel.output is d.lazydata.base and len(kernel.also) == 3
  Tensor.realize(a, b, c, d)
  with np.errstate(all="ignore"):
    ra = x * y
    rb = ra + x
    rc = rb * npdt(3)
    expected = [ra, rb, rc, rc > ra]
  for got, want in zip((a, b, c, d), expected):
    np.testing.assert_array_equal(got.numpy(), want)


def test_bfloat16_values_stored_alongside_round_as_torch():
  import torch
  rng = np.random.default_rng(8)
  x, y = (rng.standard_normal((3, 7)).astype(np.float32) for _ in range(2))
  tx, ty = Tensor(x).cast(dtypes.bfloat16).realize(), Tensor(y).cast(dtypes.bfloat16).realize()
  a = tx * ty + 1
  b = a * a - tx
  assert len(Tensor.schedule(a, b)) == 1
  rx, ry = torch.from_numpy(x).bfloat16(), torch.from_numpy(y).bfloat16()
  ra = rx * ry + 1
  for got, want in ((a, ra), (b, ra * ra - rx)):
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_a_value_is_not_stored_alongside_a_reader_of_another_index_or_after_another_reader():
  """b reads a transposed, and s (a sum) reads a between a's kernel and c's: each keeps a kernel of its own."""
  (x,), (xs,) = inputs((3, 3))
  a = x + 1
  b = a.T * 2
  assert len(Tensor.schedule(a, b)) == 2
  a2 = x * 3
  s, c = a2.sum(), a2 - 1
  assert len(Tensor.schedule(a2, s, c)) == 3
  Tensor.realize(a, b, a2, s, c)
  np.testing.assert_allclose(b.numpy(), (xs + 1).T * 2, rtol=1e-6)
  np.testing.assert_allclose(s.numpy(), (xs * 3).sum(), rtol=1e-6)
  np.testing.assert_allclose(c.numpy(), xs * 3 - 1, rtol=1e-6)


def test_adam_updates_each_parameter_and_its_moments_in_one_kernel():
  """The moments Adam assigns are stored by the kernel of the parameter's update: besides the two scalar bias
  corrections, one kernel per parameter. Its moments and parameters after three steps are torch's."""
  import torch
  from nbgrad.nn import optim
  rng = np.random.default_rng(9)
  values = [rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal(6).astype(np.float32)]
  grads = [[rng.standard_normal(v.shape).astype(np.float32) for v in values] for _ in range(3)]
  params = [Tensor(v, requires_grad=True) for v in values]
  opt = optim.Adam(params, lr=0.1)
  theirs = [torch.tensor(v, requires_grad=True) for v in values]
  their_opt = torch.optim.Adam(theirs, lr=0.1)
  with Tensor.train():
    for step in grads:
      for p, g in zip(params, step): p.grad = Tensor(g)
      for p, g in zip(theirs, step): p.grad = torch.from_numpy(g)
      written = opt.schedule_step()
      kernels = Tensor.schedule(*written)
      assert len([k for k in kernels if k.also]) == len(params) and len(kernels) == len(params) + 2
      Tensor.realize(*written)   # what opt.step() does
      their_opt.step()
  for p, m, v, t in zip(params, opt.m, opt.v, theirs):
    state = their_opt.state[t]
    np.testing.assert_allclose(m.numpy(), state["exp_avg"].numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(v.numpy(), state["exp_avg_sq"].numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)   # float32 steps of 0.1 each


def test_a_tinyjit_replay_refills_values_stored_alongside():
  """A momentum step (buf assigned, then read by the parameter's update) under TinyJit: the replayed kernel writes
  both buffers each call, as the eager loop in numpy does."""
  from nbgrad import TinyJit
  (g,), (gs,) = inputs((5,))
  buf, w = Tensor.zeros(5).contiguous().realize(), Tensor.ones(5).contiguous().realize()

  @TinyJit
  def step(grad):
    buf.assign(buf * 0.9 + grad)
    w.assign(w - 0.1 * buf)
    return w.realize(buf)
  rbuf, rw = np.zeros(5, np.float32), np.ones(5, np.float32)
  for _ in range(5):
    step(g)
    rbuf = rbuf * np.float32(0.9) + gs
    rw = rw - np.float32(0.1) * rbuf
  np.testing.assert_allclose(buf.numpy(), rbuf, rtol=1e-6)
  np.testing.assert_allclose(w.numpy(), rw, rtol=1e-6)


def _dot_parts(source: str):
  """The clusters' labels with their nodes' labels, the other nodes' labels, and the edges as label pairs, read
  back from dot source."""
  label_of = dict(re.findall(r'^ +(n\d+) \[label="([^"]*)"', source, re.M))
  clusters = [(name, [label_of[n] for n in re.findall(r'^ +(n\d+) \[', body, re.M)])
              for name, body in re.findall(r'label="([^"]*)"; color=gray;\n(.*?)\n  }', source, re.S)]
  edges = {(label_of[a], label_of[b]) for a, b in re.findall(r'(n\d+) -> (n\d+)', source)}
  return clusters, label_of, edges


def test_to_dot_draws_each_kernel_with_the_nodes_it_computes_and_computes_nothing(tmp_path):
  a = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).realize()
  b = (a * 2 + 1).relu().sum(1)
  source = b.to_dot(path=tmp_path / "graph.dot")
  assert (tmp_path / "graph.dot").read_text() == source and b.lazydata.base.buffer is None
  clusters, labels, edges = _dot_parts(source)
  assert clusters == [("r_mul_add_max_sum_2_3", ["SUM (1,)\\n(2, 1) float32", "MAX\\n(2, 3) float32", "CONST 0.0\\n() float32",
                                                  "ADD\\n(2, 3) float32", "CONST 1.0\\n() float32", "MUL\\n(2, 3) float32", "CONST 2.0\\n() float32"])]
  assert "buffer (2, 3) float32" in labels.values()
  assert edges == {("MAX\\n(2, 3) float32", "SUM (1,)\\n(2, 1) float32"), ("ADD\\n(2, 3) float32", "MAX\\n(2, 3) float32"),
                   ("CONST 0.0\\n() float32", "MAX\\n(2, 3) float32"), ("MUL\\n(2, 3) float32", "ADD\\n(2, 3) float32"),
                   ("CONST 1.0\\n() float32", "ADD\\n(2, 3) float32"), ("buffer (2, 3) float32", "MUL\\n(2, 3) float32"),
                   ("CONST 2.0\\n() float32", "MUL\\n(2, 3) float32")}
  np.testing.assert_array_equal(b.numpy(), np.maximum(np.arange(6).reshape(2, 3) * 2 + 1, 0).sum(1))


def test_graph_setting_writes_each_realize_s_graph(capsys):
  from nbgrad import Context
  x = Tensor(np.ones((4, 4), dtype=np.float32)).realize()
  y = (x @ x).exp().sum(0)
  expected = [k.name for k in y.schedule()]
  capsys.readouterr()
  with Context(GRAPH=1): y.realize()
  message = capsys.readouterr().err
  path = re.fullmatch(r"graph of 2 kernel\(s\) written to (\S+)\n", message).group(1)
  clusters, _, edges = _dot_parts(open(path).read())
  os.remove(path)
  assert [name for name, _ in clusters] == expected and len(clusters[0][1]) == 1 and clusters[0][1][0].startswith("CUSTOM matmul")
  assert any(a.startswith("CUSTOM matmul") and b.startswith("EXP") for a, b in edges)
  np.testing.assert_allclose(y.numpy(), np.full(4, 4 * np.exp(4.0)), rtol=1e-6)
