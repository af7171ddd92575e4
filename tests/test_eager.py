"""Eager mode: `with nbgrad.eager():` and NBGRAD_EAGER=1 realize each op when it is created."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import nbgrad
from nbgrad import Tensor, dtypes
from nbgrad.helpers import GlobalCounters

REPO_ROOT = Path(__file__).resolve().parents[1]


def arrays(seed=0):
  rng = np.random.default_rng(seed)
  return (rng.random((3, 4)) + 0.5).astype(np.float32), (rng.standard_normal((3, 4))).astype(np.float32)


def np_softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


# name, nbgrad fn, numpy fn, whether the op computes (runs a kernel) or only changes the view
OPS = [
  ("add", lambda a, b: a + b, lambda a, b: a + b, True),
  ("mul_relu", lambda a, b: (a * b).relu(), lambda a, b: np.maximum(a * b, 0), True),
  ("exp_sub", lambda a, b: a.exp() - b, lambda a, b: np.exp(a) - b, True),
  ("sum_axis", lambda a, b: a.sum(1), lambda a, b: a.sum(1), True),
  ("max_axis", lambda a, b: (a - b).max(0), lambda a, b: (a - b).max(0), True),
  ("mean", lambda a, b: b.mean(), lambda a, b: b.mean(), True),
  ("softmax", lambda a, b: b.softmax(-1), lambda a, b: np_softmax(b), True),
  ("matmul", lambda a, b: a @ b.T, lambda a, b: a @ b.T, True),
  ("compare", lambda a, b: a < b, lambda a, b: a < b, True),
  ("cast_int", lambda a, b: (b * 4).cast(dtypes.int32), lambda a, b: (b * 4).astype(np.int32), True),
  ("where", lambda a, b: (b > 0).where(a, b), lambda a, b: np.where(b > 0, a, b), True),
  ("reshape", lambda a, b: a.reshape(4, 3), lambda a, b: a.reshape(4, 3), False),
  ("permute_flip", lambda a, b: a.permute(1, 0).flip(0), lambda a, b: a.T[::-1], False),
  ("slice_then_add", lambda a, b: a[::2, 1:] + 1, lambda a, b: a[::2, 1:] + 1, True),
]
OP_IDS = [row[0] for row in OPS]


def close(got, want):
  if got.dtype == np.bool_ or np.issubdtype(got.dtype, np.integer): np.testing.assert_array_equal(got, want)
  else: np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,nb_fn,np_fn,computes", OPS, ids=OP_IDS)
def test_eager_context_realizes_on_creation(name, nb_fn, np_fn, computes):
  x, y = arrays()
  with nbgrad.eager():
    a, b = Tensor(x), Tensor(y)
    assert len(a.schedule()) == 0 and len(b.schedule()) == 0
    before = GlobalCounters.kernel_count
    out = nb_fn(a, b)
    ran = GlobalCounters.kernel_count - before
    assert len(out.schedule()) == 0, f"{name}: result still has kernels to run"
    if computes: assert ran >= 1
    eager_value = out.numpy()
  lazy_value = nb_fn(Tensor(x), Tensor(y)).numpy()
  close(eager_value, np_fn(x, y))
  close(lazy_value, np_fn(x, y))
  close(eager_value, lazy_value)


def test_each_intermediate_is_realized():
  x, y = arrays(1)
  with nbgrad.eager():
    a, b = Tensor(x), Tensor(y)
    steps = [a * b]
    steps.append(steps[-1] + 1)
    steps.append(steps[-1].relu())
    steps.append(steps[-1].sum(0))
    for step in steps: assert len(step.schedule()) == 0
  np.testing.assert_allclose(steps[-1].numpy(), np.maximum(x * y + 1, 0).sum(0), rtol=1e-5)
  np.testing.assert_allclose(steps[0].numpy(), x * y, rtol=1e-6)


def test_lazy_again_after_the_context():
  x, y = arrays(2)
  a, b = Tensor(x).realize(), Tensor(y).realize()
  with nbgrad.eager():
    assert len((a + b).schedule()) == 0
  lazy = a + b
  assert len(lazy.schedule()) >= 1
  with pytest.raises(ZeroDivisionError):
    with nbgrad.eager():
      1 / 0
  lazy = a * b
  assert len(lazy.schedule()) >= 1
  np.testing.assert_allclose(lazy.numpy(), x * y, rtol=1e-6)


def test_eager_backward_matches_torch():
  x, y = arrays(3)
  with nbgrad.eager():
    a, b = Tensor(x, requires_grad=True), Tensor(y, requires_grad=True)
    loss = ((a * b).relu() + a.exp()).sum()
    assert len(loss.schedule()) == 0
    loss.backward()
  ta, tb = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
  tloss = ((ta * tb).relu() + ta.exp()).sum()
  tloss.backward()
  np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
  np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-6)


ENV_PROGRAM = textwrap.dedent("""
  import json
  import numpy as np
  from nbgrad import Tensor
  from nbgrad.helpers import GlobalCounters
  x = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
  y = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
  a, b = Tensor(x), Tensor(y)
  a.realize(), b.realize()
  report = {"pending": [], "ran": [], "values": []}
  for make in [lambda: a + b, lambda: (a * b).relu(), lambda: a.sum(1), lambda: (a - b).max(0), lambda: b.softmax(-1)]:
    before = GlobalCounters.kernel_count
    out = make()
    report["ran"].append(GlobalCounters.kernel_count - before)
    report["pending"].append(len(out.schedule()))
    report["values"].append(out.numpy().tolist())
  print(json.dumps(report))
""")


@pytest.mark.parametrize("eager", [True, False])
def test_env_variable(tmp_path, eager):
  script = tmp_path / "program.py"
  script.write_text(ENV_PROGRAM)
  env = dict(os.environ)
  env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  env.pop("NBGRAD_EAGER", None)
  if eager: env["NBGRAD_EAGER"] = "1"
  proc = subprocess.run([sys.executable, str(script)], env=env, cwd=str(tmp_path), capture_output=True, text=True,
                        timeout=240)
  assert proc.returncode == 0, proc.stderr[-4000:]
  report = json.loads(proc.stdout.strip().splitlines()[-1])
  if eager:
    assert report["pending"] == [0] * 5
    assert all(ran >= 1 for ran in report["ran"])
  else:
    assert all(pending >= 1 for pending in report["pending"])
    assert report["ran"] == [0] * 5
  x = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
  y = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
  expected = [x + y, np.maximum(x * y, 0), x.sum(1), (x - y).max(0), np_softmax(y)]
  for got, want in zip(report["values"], expected, strict=True):
    np.testing.assert_allclose(np.array(got, dtype=np.float32), want, rtol=1e-5, atol=1e-6)


def _built_then_overwritten():
  """Results built from a realized tensor, then the tensor written in place (setitem, a view's assign)."""
  a = Tensor(np.array([1.0, 2.0, 3.0, 4.0], np.float32)).realize()
  doubled, total, shifted = a * 2, a.sum(), (a[1:] + 1).exp2()
  a[0] = 10.0
  a[2:].assign(Tensor(np.array([-1.0, -2.0], np.float32)))
  return [t.numpy() for t in (doubled, total, shifted, a)]


def test_results_built_before_an_in_place_write_keep_their_values_as_in_eager_mode():
  """A lazy result computes from the values it was built from (torch and numpy compute at once)."""
  lazy = _built_then_overwritten()
  with nbgrad.eager():
    eager = _built_then_overwritten()
  values = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
  expected = [values * 2, values.sum(), np.exp2(values[1:] + 1), np.array([10.0, 2.0, -1.0, -2.0], np.float32)]
  for got_lazy, got_eager, want in zip(lazy, eager, expected):
    np.testing.assert_array_equal(got_lazy, want)
    np.testing.assert_array_equal(got_eager, want)
