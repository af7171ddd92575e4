"""CPU devices beyond the first ("CPU:1", ...) and tinygrad's names for the CPU: each its own device on the same
machine, so that code written for several devices runs, and is checked, on one."""
import numpy as np
import pytest
import torch
from nbgrad import Tensor, Device


@pytest.mark.parametrize("name, canonical", [("CPU", "CPU"), ("cpu:0", "CPU"), ("CLANG", "CPU"), ("llvm", "CPU"),
                                             ("CPU:1", "CPU:1"), ("clang:2", "CPU:2"), ("CPU:01", "CPU:1")])
def test_cpu_names(name, canonical):
  assert Device.canonicalize(name) == canonical
  assert Tensor([1.0], device=name).device == canonical


def test_values_move_between_cpu_devices_into_buffers_of_their_own():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  a = Tensor(x).realize()
  b = a.to("CPU:1").realize()
  assert b.device == "CPU:1"
  np.testing.assert_array_equal(b.numpy(), x)
  b[0] = -1.0   # a setitem on one device's copy leaves the other's alone
  np.testing.assert_array_equal(a.numpy(), x)
  np.testing.assert_array_equal(b.to("CPU").numpy(), np.concatenate([np.full((1, 4), -1.0), x[1:]]))
  view = a.T[1:3].to("CPU:2")   # a strided view arrives in its own order
  np.testing.assert_array_equal(view.numpy(), x.T[1:3])


def test_copy_brings_the_values_from_another_device_as_torch_s_copy_():
  target = Tensor.zeros(2, 3, dtype="int32").contiguous().realize()
  source = Tensor(np.array([1.7, -2.2, 3.9], np.float32), device="CPU:1")
  assert target.copy_(source) is target and target.device == "CPU"
  expected = torch.zeros(2, 3, dtype=torch.int32).copy_(torch.tensor([1.7, -2.2, 3.9]))   # broadcast, cast toward zero
  np.testing.assert_array_equal(target.numpy(), expected.numpy())
  assert source.device == "CPU:1"


def test_ops_on_a_second_cpu_device_compute_there():
  rng = np.random.default_rng(0)
  x, w = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
  out = (Tensor(x, device="CPU:1") @ Tensor(w, device="CPU:1")).relu().sum(0)
  assert out.device == "CPU:1"
  np.testing.assert_allclose(out.numpy(), np.maximum(x @ w, 0).sum(0), rtol=1e-5, atol=1e-6)
  Tensor.manual_seed(3)
  here = Tensor.rand(7).numpy()
  Tensor.manual_seed(3)
  np.testing.assert_array_equal(Tensor.rand(7, device="CPU:1").numpy(), here)


def test_mixing_cpu_devices_raises_naming_both():
  with pytest.raises(ValueError, match="CPU and CPU:1"):
    Tensor([1.0]) + Tensor([2.0], device="CPU:1")
  with pytest.raises(ValueError, match="CPU:1"):
    Tensor([1.0]).assign(Tensor([2.0], device="CPU:1"))


def test_gradients_flow_back_across_cpu_devices():
  x = Tensor([1.0, -2.0, 3.0], requires_grad=True)
  ((x.to("CPU:1") * x.to("CPU:1")).sum().to("CPU") + x.sum()).backward()
  assert x.grad.device == "CPU"
  np.testing.assert_array_equal(x.grad.numpy(), 2 * np.array([1.0, -2.0, 3.0]) + 1)


def test_a_collected_gradient_moves_along():
  x = Tensor([1.0, 2.0], requires_grad=True)
  (x * 3).sum().backward()
  moved = x.to("CPU:1")
  assert moved.requires_grad and moved.grad.device == "CPU:1"
  np.testing.assert_array_equal(moved.grad.numpy(), [3.0, 3.0])
  assert Tensor([1.0]).to("CPU:1").grad is None
  x.to_("CPU:2")
  assert x.device == x.grad.device == "CPU:2"
  np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_a_gradient_on_another_device_is_refused():
  x = Tensor([1.0, 2.0], requires_grad=True)
  with pytest.raises(ValueError, match="device CPU, got one on CPU:1"):
    x.grad = Tensor([1.0, 1.0], device="CPU:1")
  assert x.grad is None


def test_a_freed_buffer_is_reused_soon_after_and_let_go_of_later(monkeypatch):
  """Freed buffers of 1 MiB and up are kept for a tensor of the same size (a training step's next one); one
  nothing took for POOL_KEEP_SECONDS goes back to the system (a deleted 1 GB tensor held its memory for good)."""
  import gc
  from nbgrad import device
  clock = [1000.0]
  monkeypatch.setattr(device.time, "monotonic", lambda: clock[0])
  monkeypatch.setattr(device, "_POOL", {})
  monkeypatch.setattr(device, "_pool_bytes", 0)
  monkeypatch.setattr(device, "_oldest_release", float("inf"))
  x = (Tensor.ones(1 << 19) + 1).realize()
  address = x.lazydata.base.buffer.ctypes.data
  del x
  gc.collect()
  assert device._pool_bytes == 4 << 19
  y = (Tensor.ones(1 << 19) * 3).realize()   # the same size soon after: the same memory
  assert y.lazydata.base.buffer.ctypes.data == address and (y.numpy() == 3).all()
  del y
  gc.collect()
  clock[0] += device.POOL_KEEP_SECONDS
  z = (Tensor.ones(1 << 18) * 2).realize()   # any buffer allocated later lets the stale one go
  assert device._pool_bytes == 0 and device._POOL == {} and (z.numpy() == 2).all()
