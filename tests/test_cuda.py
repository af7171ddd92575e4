"""The CUDA device without a GPU: tests/cuda_suite.py under numba's simulator, and device names and errors."""
import os
import subprocess
import sys
import pytest
from nbgrad import Tensor, Device
from nbgrad import cuda as cuda_device

SUITE = os.path.join(os.path.dirname(__file__), "cuda_suite.py")


def test_cuda_suite_under_the_simulator():
  env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
  run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore::RuntimeWarning", SUITE],
                       env=env, capture_output=True, text=True)
  assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
  assert " passed" in run.stdout and "failed" not in run.stdout


def test_asking_for_a_missing_cuda_device():
  count = cuda_device.device_count()
  if count == 0:   # no GPU and no simulator in this process
    with pytest.raises(RuntimeError, match="no CUDA device is available"):
      Tensor([1.0], device="CUDA")
  else:
    with pytest.raises(RuntimeError, match=f"CUDA:{count}.*does not exist.*CUDA"):
      Tensor([1.0], device=f"CUDA:{count}")


@pytest.mark.parametrize("name", ["TPU", "CUDA:x", "CPU:3"])
def test_unknown_device_names(name):
  with pytest.raises(ValueError, match="device"):
    Device.canonicalize(name)


def test_default_device_follows_the_environment(monkeypatch):
  monkeypatch.delenv("DEVICE", raising=False)
  monkeypatch.delenv("CUDA", raising=False)
  monkeypatch.setenv("CPU", "1")
  assert Device.DEFAULT == "CPU"
  monkeypatch.delenv("CPU")
  monkeypatch.setenv("DEVICE", "cpu")
  assert Device.DEFAULT == "CPU" and Tensor([1]).device == "CPU"
  monkeypatch.delenv("DEVICE")
  assert Device.DEFAULT == ("CUDA" if cuda_device.gpu_visible() else "CPU")
