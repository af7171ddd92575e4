"""The 16-bit float types where an intermediate leaves float16's range (65504) but the result does not: the optimizers'
squared gradients, BatchNorm's squared deviations, the products of a dot product, einsum, cosine similarity and
attention are taken in float32, as torch's are. Checked against torch (float16 and bfloat16) and float64."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from nbgrad import Tensor, dtypes, nn
from nbgrad.nn import optim

HALVES = [(dtypes.float16, torch.float16), (dtypes.bfloat16, torch.bfloat16)]
IDS = ["float16", "bfloat16"]


def half(values, dt) -> Tensor: return Tensor(np.array(values, np.float32)).cast(dt)
def values(t: Tensor) -> np.ndarray: return t.cast(dtypes.float32).numpy().astype(np.float64)


@pytest.mark.parametrize("dt,tdt", HALVES, ids=IDS)
def test_products_beyond_the_half_range_sum_to_what_fits(dt, tdt):
  a, b = [300.0, -300.0, 2.0], [300.0, 300.0, 0.5]
  ta, tb = torch.tensor(a, dtype=tdt), torch.tensor(b, dtype=tdt)
  want = (ta.double() @ tb.double()).item()   # 1.0
  for got in (half(a, dt) @ half(b, dt), half(a, dt).dot(half(b, dt)), Tensor.einsum("i,i->", half(a, dt), half(b, dt)),
              Tensor.einsum("ij,jk->ik", half([a], dt), half(b, dt).reshape(3, 1)).reshape(())):
    assert got.dtype == dt and got.item() == want == (ta @ tb).item()
  rows = [[300.0, 400.0], [-3.0, 4.0]]
  got = half(rows, dt).cosine_similarity(half(rows, dt), dim=1)
  ref = F.cosine_similarity(torch.tensor(rows, dtype=tdt), torch.tensor(rows, dtype=tdt), dim=1)
  assert got.dtype == dt
  np.testing.assert_allclose(values(got), ref.double().numpy(), rtol=1e-2)


@pytest.mark.parametrize("dt,tdt", HALVES, ids=IDS)
def test_attention_scores_beyond_the_half_range(dt, tdt):
  q = [[[300.0, 1.0], [1.0, 2.0]]]
  got = half(q, dt).scaled_dot_product_attention(half(q, dt), half(q, dt), is_causal=True)
  tq = torch.tensor(q, dtype=torch.float64)
  ref = F.scaled_dot_product_attention(tq, tq, tq, is_causal=True)
  assert got.dtype == dt
  np.testing.assert_allclose(values(got), ref.numpy(), rtol=1e-2)
  mask = np.array([[False, True], [True, True]])   # a bool mask masks (it is not cast with the operands)
  got = half(q, dt).scaled_dot_product_attention(half(q, dt), half(q, dt), attn_mask=Tensor(mask))
  ref = F.scaled_dot_product_attention(tq, tq, tq, attn_mask=torch.tensor(mask))
  np.testing.assert_allclose(values(got), ref.numpy(), rtol=1e-2)


@pytest.mark.parametrize("dt,tdt", HALVES, ids=IDS)
def test_batchnorm_training_statistics_beyond_the_half_range(dt, tdt):
  x = [[-300.0], [0.0], [100.0], [200.0]]
  bn = nn.BatchNorm(1)
  for name in ("weight", "bias", "running_mean", "running_var"): setattr(bn, name, getattr(bn, name).cast(dt).contiguous())
  with Tensor.train(): out = bn(half(x, dt))
  ref_bn = torch.nn.BatchNorm1d(1).to(tdt)
  ref = ref_bn(torch.tensor(x, dtype=tdt))
  assert out.dtype == dt and bn.running_var.dtype == dt
  np.testing.assert_allclose(values(out), ref.detach().double().numpy(), rtol=1e-2, atol=1e-3)
  np.testing.assert_allclose(values(bn.running_var), ref_bn.running_var.double().numpy(), rtol=1e-2)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "LAMB"])
def test_adam_moments_of_small_half_gradients(name):
  """A float16 gradient of 1e-4 squared in float16 is 0: the step m / sqrt(v) came out 1e4 times too big."""
  w = Tensor([1.0, -0.5], dtype=dtypes.float16, requires_grad=True)
  opt = getattr(optim, name)([w], lr=1e-3)
  w64 = torch.tensor([1.0, -0.5], dtype=torch.float64, requires_grad=True)
  ref_opt = {"Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW, "LAMB": torch.optim.Adam}[name]([w64], lr=1e-3)
  for _ in range(3):
    with Tensor.train():
      opt.zero_grad()
      (w * 1e-4).sum().backward()
      opt.step()
    ref_opt.zero_grad()
    (w64 * 1e-4).sum().backward()
    ref_opt.step()
  if name == "LAMB":   # its trust ratio |w| / |step| scales the step: only check it stays a step of about lr
    assert np.all(np.abs(values(w) - [1.0, -0.5]) < 0.01)
  else:
    np.testing.assert_allclose(values(w), w64.detach().numpy(), atol=1e-3)   # float16's spacing near 1
  assert w.dtype == dtypes.float16 and opt.v[0].dtype == dtypes.float32


@pytest.mark.parametrize("weight", [0.3, 0.7])
def test_lerp_of_half_floats_rounds_once_as_torch(weight):
  """Each step rounded to float16 was 12.8 ulp off where end - x cancels (x = -0.3999, weight 0.3)."""
  x = np.linspace(-2, 2, 4001).astype(np.float16)
  got = Tensor(x).lerp(1, weight).numpy()
  exact = (x.astype(np.float64) + weight * (1 - x.astype(np.float64))).astype(np.float16)
  ref = torch.tensor(x).lerp(torch.tensor(1.0, dtype=torch.float16), weight).numpy()
  assert got.dtype == np.float16
  assert np.all(np.abs(got.astype(np.float64) - exact) <= np.spacing(np.abs(exact)))   # within an ulp of the exact
  assert (got != ref).sum() <= (ref != exact).sum()   # where it differs from torch, torch's is the rounded-twice one
