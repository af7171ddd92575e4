"""The CUDA device: the scheduler's kernels rendered for numba.cuda and run on NVIDIA GPUs, or on numba's
simulator (NUMBA_ENABLE_CUDASIM=1). Importing this package is cheap: numba.cuda is imported on first use,
and only where an NVIDIA driver (or the simulator) is present."""
from __future__ import annotations
import functools
import os
import sys
from importlib import metadata
from numba import config


def simulator_enabled() -> bool: return bool(config.ENABLE_CUDASIM)


def numba_cuda_installed() -> bool:
  """The numba-cuda package (nbgrad[cuda]) is there. numba's own built-in numba.cuda, which it replaces, does not
  compile nbgrad's kernels (its max() of two scalars, its scalar types), so a GPU is used only through numba-cuda."""
  try:
    metadata.version("numba-cuda")
    return True
  except metadata.PackageNotFoundError:
    return False


@functools.cache
def device_count() -> int:
  """GPUs numba.cuda can use (one under the simulator); 0 when numba-cuda, the driver or a GPU is missing."""
  if not simulator_enabled() and not numba_cuda_installed(): return 0
  try:
    from numba import cuda
    return len(cuda.gpus) if cuda.is_available() else 0
  except Exception:   # no numba.cuda, or a driver it cannot load
    return 0


@functools.cache
def gpu_visible() -> bool:
  """A real GPU is there. The driver's files are looked for first, so CPU-only machines never import numba.cuda."""
  if simulator_enabled(): return False
  if sys.platform.startswith("linux") and not (os.path.exists("/proc/driver/nvidia") or os.path.exists("/dev/nvidiactl")):
    return False
  return device_count() > 0


@functools.cache
def backend(index: int):
  """The buffers, copies and launches of GPU `index` (created once)."""
  from nbgrad.cuda.device import CudaBackend
  return CudaBackend(index)
