"""The CUDA device without a GPU: tests/cuda_suite.py under numba's simulator, and device names and errors."""
import pytest
import background_suites
from nbgrad import Tensor, Device
from nbgrad import cuda as cuda_device


def test_cuda_suite_under_the_simulator():
  """tests/cuda_suite.py under NUMBA_ENABLE_CUDASIM=1, started in the background at collection (conftest.py)."""
  returncode, stdout, stderr = background_suites.result(background_suites.CUDA_SIMULATOR)
  assert returncode == 0, stdout[-6000:] + stderr[-3000:]
  assert " passed" in stdout and "failed" not in stdout


def test_asking_for_a_missing_cuda_device():
  count = cuda_device.device_count()
  if count == 0:   # no GPU and no simulator in this process
    with pytest.raises(RuntimeError, match="no CUDA device is available"):
      Tensor([1.0], device="CUDA")
  else:
    with pytest.raises(RuntimeError, match=f"CUDA:{count}.*does not exist.*CUDA"):
      Tensor([1.0], device=f"CUDA:{count}")


def test_without_numba_cuda_no_gpu_is_used_and_the_message_says_what_to_install(monkeypatch):
  """numba's built-in numba.cuda does not compile nbgrad's kernels: a GPU is used only through numba-cuda."""
  monkeypatch.setattr(cuda_device, "numba_cuda_installed", lambda: False)
  monkeypatch.setattr(cuda_device.config, "ENABLE_CUDASIM", False)
  cuda_device.device_count.cache_clear()
  try:
    assert cuda_device.device_count() == 0
    with pytest.raises(RuntimeError, match=r"no CUDA device is available.*pip install nbgrad\[cuda\]"):
      Tensor([1.0], device="CUDA")
  finally:
    cuda_device.device_count.cache_clear()


@pytest.mark.parametrize("name", ["TPU", "CUDA:x", "CPU:-1", "CLANG:one", "DISK"])
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


def test_a_malformed_device_variable_names_itself(monkeypatch):
  monkeypatch.delenv("DEVICE", raising=False)
  monkeypatch.setenv("CPU", "yes")
  with pytest.raises(ValueError, match="CPU='yes'"):
    Device.DEFAULT
