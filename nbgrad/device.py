"""Devices: names, buffers, copies, and running a schedule."""
from __future__ import annotations
import os
import sys
import time
import weakref
import numpy as np
from nbgrad.dtype import DType
from nbgrad.graph.ops import LoadOps
from nbgrad.graph.schedule import Kernel
from nbgrad.helpers import GlobalCounters, DEBUG
from nbgrad.jit import run_kernel

KNOWN_DEVICES = ("CPU",)


class _DeviceRegistry:
  @property
  def DEFAULT(self) -> str:
    if os.getenv("DEVICE"): return self.canonicalize(os.environ["DEVICE"])
    return "CPU"

  def canonicalize(self, name) -> str:
    if name is None: return self.DEFAULT
    if not isinstance(name, str): raise TypeError(f"device must be a string such as 'CPU', got {name!r}")
    upper = name.upper()
    kind = upper.split(":")[0]
    if kind == "CPU": return "CPU"
    if kind == "CUDA": raise RuntimeError(f"device {name!r}: no CUDA device is available (known devices: {', '.join(KNOWN_DEVICES)})")
    raise ValueError(f"unknown device {name!r}; known devices: {', '.join(KNOWN_DEVICES)}")

  def __getitem__(self, name): return self.canonicalize(name)


Device = _DeviceRegistry()


# ---- buffers: flat numpy arrays; freed large ones are kept for reuse (fresh pages cost page faults)
_POOL: dict[tuple, list] = {}
_POOL_LIMIT_BYTES = 1 << 30
_pool_bytes = 0
POOL_MIN_BYTES = 1 << 20


def allocate(size: int, dtype: DType) -> np.ndarray:
  global _pool_bytes
  key = (size, dtype.storage)
  if size * dtype.itemsize >= POOL_MIN_BYTES and _POOL.get(key):
    buffer = _POOL[key].pop()
    _pool_bytes -= buffer.nbytes
    return buffer
  return np.empty(size, dtype=dtype.storage)


def _release(buffer: np.ndarray):
  """Takes back the buffer of a collected node unless something else still holds it (a numpy array
  handed to the user keeps a reference, and then the memory is never reused)."""
  global _pool_bytes
  if buffer.nbytes < POOL_MIN_BYTES or _pool_bytes + buffer.nbytes > _POOL_LIMIT_BYTES: return
  if sys.getrefcount(buffer) > _UNSHARED_REFCOUNT or buffer.base is not None: return
  _POOL.setdefault((buffer.size, buffer.dtype.name), []).append(buffer)
  _pool_bytes += buffer.nbytes


def _measure_unshared_refcount() -> int:
  """The reference count _release sees for a buffer only the collected node held."""
  seen = []
  class Node: pass
  node, buffer = Node(), np.empty(1)
  node.buffer = buffer
  weakref.finalize(node, lambda b: seen.append(sys.getrefcount(b)), buffer)
  del buffer, node
  return seen[0]   # the probe is called the way _release is, so it sees the same references


_UNSHARED_REFCOUNT = _measure_unshared_refcount()


def run_schedule(schedule: list[Kernel]):
  if DEBUG >= 2 and schedule:
    print(f"schedule of {len(schedule)} kernel(s): " + ", ".join(k.name for k in schedule))
  for kernel in schedule:
    base = kernel.output
    if base.buffer is not None: continue
    out = allocate(base.size, base.dtype)
    start = time.perf_counter()
    if kernel.kind == "custom":
      base.arg.run(out, *[src.buffer for src in kernel.inputs])   # custom kernels fill their buffer themselves
    elif kernel.kind == "compute" and base.size > 0:
      run_kernel(kernel, out, [src.buffer for src in kernel.inputs])
    elapsed = time.perf_counter() - start
    if kernel.kind != "empty":
      GlobalCounters.kernel_count += 1
      GlobalCounters.time_sum_s += elapsed
      GlobalCounters.global_mem += out.nbytes + sum(src.buffer.nbytes for src in kernel.inputs)
      GlobalCounters.global_ops += base.size
      if DEBUG >= 1: print(f"*** {kernel.name:40s} {elapsed * 1e3:9.3f} ms")
    base.buffer = out
    if out.nbytes >= POOL_MIN_BYTES: weakref.finalize(base, _release, out)
    base.op, base.srcs, base.arg = LoadOps.BUFFER, (), None
