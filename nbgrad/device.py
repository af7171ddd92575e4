"""Devices: names, buffers, copies, and running a schedule."""
from __future__ import annotations
import itertools
import os
import sys
import tempfile
import threading
import time
import weakref
from typing import Optional
import numpy as np
from nbgrad.dtype import DType
from nbgrad.graph.ops import LoadOps
from nbgrad.graph.dot import graph_dot
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.schedule import Kernel, create_schedule, graph_structure, scheduled_before
from nbgrad.helpers import GlobalCounters, DEBUG, GRAPH, getenv, held_across_fork
from nbgrad.jit import run_kernel
from nbgrad import cuda as cuda_device


class DeviceName(str):
  """A canonical device name, as Device[name] gives it: a string that can also wait for its device
  (Device[Device.DEFAULT].synchronize(), as tinygrad programs time their kernels)."""
  def synchronize(self): Device.synchronize(str(self))


# tinygrad's names for its CPU backends: programs written for it run here unchanged
CPU_ALIASES = ("CPU", "CLANG", "LLVM")


class _DeviceRegistry:
  """Device names: "CPU" (= "CPU:0"), and "CUDA" (= "CUDA:0"), "CUDA:1", ... for NVIDIA GPUs. "CPU:1", "CPU:2", ...
  are further CPU devices, as in tinygrad: the same cores and memory, but each its own device, so that code for
  several devices (copies between them, the error for mixing them) runs on one machine."""
  def __init__(self): self._default: Optional[str] = None

  @property
  def DEFAULT(self) -> str:
    if self._default is not None: return self._default
    if os.getenv("DEVICE"): return self.canonicalize(os.environ["DEVICE"])
    if getenv("CPU", 0): return "CPU"
    if getenv("CUDA", 0) or cuda_device.gpu_visible(): return self.canonicalize("CUDA")
    return "CPU"

  def canonicalize(self, name) -> str:
    if name is None: return self.DEFAULT
    if not isinstance(name, str): raise TypeError(f"device must be a string such as 'CPU' or 'CUDA:0', got {name!r}")
    kind, colon, number = name.upper().partition(":")
    if kind not in CPU_ALIASES and kind != "CUDA":
      raise ValueError(f"unknown device {name!r}; devices are named 'CPU', 'CPU:<index>', 'CUDA' or 'CUDA:<index>'")
    if colon and not number.isdigit(): raise ValueError(f"device {name!r}: the device index must be a non-negative integer")
    if kind in CPU_ALIASES: return "CPU" if int(number or 0) == 0 else f"CPU:{int(number)}"
    index, count = int(number or 0), cuda_device.device_count()
    if count == 0:
      needs = "" if cuda_device.numba_cuda_installed() else "; GPUs are used through the numba-cuda package: pip install nbgrad[cuda]"
      raise RuntimeError(f"device {name!r}: no CUDA device is available (no NVIDIA GPU with a driver numba.cuda can use "
                         f"was found{needs}; numba's simulator is enabled with NUMBA_ENABLE_CUDASIM=1)")
    if index >= count:
      raise RuntimeError(f"device {name!r} does not exist; the CUDA devices are {', '.join(cuda_name(i) for i in range(count))}")
    return cuda_name(index)

  @DEFAULT.setter
  def DEFAULT(self, name: str):   # Device.DEFAULT = "CPU", as tinygrad allows: the device of tensors made after it
    self._default = self.canonicalize(name)

  def __getitem__(self, name) -> DeviceName: return DeviceName(self.canonicalize(name))

  def synchronize(self, name=None):
    """Waits until every kernel launched on the device has finished (GPU launches return at once)."""
    backend(self.canonicalize(name)).synchronize()


def cuda_name(index: int) -> str: return "CUDA" if index == 0 else f"CUDA:{index}"


Device = _DeviceRegistry()


# ---- buffers: flat numpy arrays; freed large ones are kept for reuse (fresh pages cost page faults). A buffer the
# pool has kept for POOL_KEEP_SECONDS without a taker goes back to the system: a training step takes its sizes again
# within milliseconds, and a big tensor deleted for good held its memory for the rest of the process.
_POOL: dict[tuple, list[tuple[float, np.ndarray]]] = {}   # (size, dtype) -> (time released, buffer), oldest first
_POOL_LIMIT_BYTES = 1 << 30
POOL_MIN_BYTES = 1 << 20
POOL_KEEP_SECONDS = 2.0
# Releases come from finalizers, on any thread and in the middle of any code, an allocate's on the same thread too:
# one that finds the lock taken lets its buffer go rather than wait (which could be for itself).
_POOL_LOCK = held_across_fork(threading.Lock())
_pool_bytes = 0
_oldest_release = float("inf")


def _drop_stale(now: float):
  """Lets go of the buffers kept too long (the pool lock held)."""
  global _pool_bytes, _oldest_release
  if now - _oldest_release < POOL_KEEP_SECONDS: return
  for key in list(_POOL):
    kept = [e for e in _POOL[key] if now - e[0] < POOL_KEEP_SECONDS]
    if kept: _POOL[key] = kept
    else: del _POOL[key]
  _pool_bytes = sum(buffer.nbytes for entries in _POOL.values() for _, buffer in entries)
  _oldest_release = min((entries[0][0] for entries in _POOL.values()), default=float("inf"))


def allocate(size: int, dtype: DType) -> np.ndarray:
  global _pool_bytes
  if size * dtype.itemsize >= POOL_MIN_BYTES and _POOL:
    with _POOL_LOCK:
      _drop_stale(time.monotonic())
      entries = _POOL.get((size, dtype.storage))
      if entries:
        _, buffer = entries.pop()
        if not entries: del _POOL[(size, dtype.storage)]
        _pool_bytes -= buffer.nbytes
        return buffer
  return np.empty(size, dtype=dtype.storage_dtype)


def _release(buffer: np.ndarray):
  """Takes back the buffer of a collected node unless something else still holds it (a numpy array
  handed to the user keeps a reference, and then the memory is never reused)."""
  global _pool_bytes, _oldest_release
  if buffer.nbytes < POOL_MIN_BYTES or sys.getrefcount(buffer) > _UNSHARED_REFCOUNT or buffer.base is not None: return
  if not _POOL_LOCK.acquire(blocking=False): return
  try:
    now = time.monotonic()
    _drop_stale(now)
    if _pool_bytes + buffer.nbytes > _POOL_LIMIT_BYTES: return
    _POOL.setdefault((buffer.size, buffer.dtype.name), []).append((now, buffer))
    _pool_bytes += buffer.nbytes
    _oldest_release = min(_oldest_release, now)
  finally:
    _POOL_LOCK.release()


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


class CPUBackend:
  """CPU buffers are flat numpy arrays; kernels are numba functions (nbgrad/jit)."""
  allocate = staticmethod(allocate)

  @staticmethod
  def from_host(array: np.ndarray, dt: DType) -> np.ndarray: return array

  @staticmethod
  def to_host(buffer: np.ndarray, dt: DType) -> np.ndarray: return buffer

  @staticmethod
  def synchronize(): pass

  @staticmethod
  def run_compute(kernel: Kernel, out, inputs): run_kernel(kernel, out, inputs)

  @staticmethod
  def run_custom(kernel: Kernel, routine, out, inputs): routine.run(out, *inputs)   # fills its buffer itself

  @staticmethod
  def copy_into(target: np.ndarray, source: np.ndarray): np.copyto(target, source)

  @staticmethod
  def keep_for_reuse(node, buffer: np.ndarray):
    if buffer.nbytes >= POOL_MIN_BYTES: weakref.finalize(node, _release, buffer)


def is_cpu(device: str) -> bool: return device == "CPU" or device.startswith("CPU:")


def backend(device: str):
  if is_cpu(device): return CPUBackend
  return cuda_device.backend(int(device.partition(":")[2] or 0))


def _run(kernel: Kernel, backend_):
  """The buffer that realizes kernel.output."""
  base = kernel.output
  if kernel.kind == "copy":
    src = kernel.inputs[0]
    host = backend(src.device).to_host(src.buffer, src.dtype)
    if host is src.buffer: host = host.copy()   # between CPU devices: each keeps a buffer of its own
    return backend_.from_host(host, base.dtype)
  out = backend_.allocate(base.size, base.dtype)
  also = [backend_.allocate(node.size, node.dtype) for node in kernel.also]
  run_into(kernel, base.arg, backend_, out, [src.buffer for src in kernel.inputs] + also)
  for node, buffer in zip(kernel.also, also): _realized(node, buffer, backend_)
  return out


def _realized(node: LazyBuffer, buffer, backend_):
  """node computed into buffer: from now on a leaf of every graph that reads it."""
  node.buffer = buffer
  _count_memory(node, buffer.nbytes)
  backend_.keep_for_reuse(node, buffer)
  node.op, node.srcs, node.arg, node.assigned_over = LoadOps.BUFFER, (), None, None


def run_into(kernel: Kernel, routine, backend_, out, inputs: list):
  """Runs a compute or custom kernel (routine: its custom routine) into out, reading inputs (after the kernel's
  inputs come the buffers of the nodes it also stores, kernel.also, which it writes)."""
  if kernel.kind == "custom": backend_.run_custom(kernel, routine, out, inputs)
  elif kernel.kind == "compute" and kernel.output.size > 0: backend_.run_compute(kernel, out, inputs)


# the bytes of each realized node's buffer that GlobalCounters.mem_used counts, under a weak reference to the node
# whose callback takes them off when the node is collected (a finalize object costs about three times as much,
# once per kernel run)
_counted_nodes: dict = {}


def _count_memory(node, nbytes: int):
  GlobalCounters.mem_used += nbytes
  if GlobalCounters.mem_used > GlobalCounters.mem_peak: GlobalCounters.mem_peak = GlobalCounters.mem_used
  _counted_nodes[weakref.ref(node, _uncount_memory)] = nbytes


def _uncount_memory(reference: weakref.ref): GlobalCounters.mem_used -= _counted_nodes.pop(reference)


# The graph walks of scheduling and rendering recurse about once per op: a deeper graph is computed in stages
DEPTH_STAGE = 500


# One realize at a time: a realize turns the nodes it computes into buffers, and another thread scheduling a graph
# that shares them must not see them half changed (4 threads assigning w + 1 to one tensor failed inside the
# scheduler). The kernels take turns anyway (LAUNCH_LOCK); building graphs stays free.
# A fork waits for a realize running on another thread; it takes this lock before the compiler's (registered
# first), in the order a realize takes them.
REALIZE_LOCK = held_across_fork(threading.RLock())


def realize(outs: list[LazyBuffer]):
  """Computes outs. A graph deeper than DEPTH_STAGE ops (x = x * 1.001 a thousand times) is computed in stages:
  its nodes at every multiple of that depth first, shallowest first, so no walk goes deeper than one stage."""
  depth = -1   # of the deepest node to compute; -1: all are computed already (numpy() of a result asks again)
  for o in outs:   # a plain loop: this runs on every realize
    base = o.base
    if base.buffer is None and base.depth > depth: depth = base.depth
  if depth < 0: return
  with REALIZE_LOCK:
    try:
      structure = None
      if depth > DEPTH_STAGE:
        # a graph scheduled whole before needs no stages; another is counted (its depths may count sources computed since)
        structure = graph_structure(outs)
        if not scheduled_before(structure[1]) and _counted_depth(outs) > DEPTH_STAGE:
          for node in _stage_nodes(outs): run_schedule(create_schedule([node]))
          structure = None   # the stages' nodes are computed now: another graph
      run_schedule(create_schedule(outs, structure))
    except BaseException:
      _undo_uncomputed_assigns(outs)
      raise


def _undo_uncomputed_assigns(outs: list[LazyBuffer]):
  """After a realize failed (a singular matrix, no memory, an interrupt): a tensor assigned a value this realize
  left uncomputed holds what it held before again (its values, and its place in the gradient graph), back past
  every value assigned it that this realize left uncomputed too, so that reading it does not fail from now on (as
  torch's assign of a value that raised leaves the tensor)."""
  seen, stack, assigned = set(), [o.base for o in outs], []
  while stack:
    node = stack.pop()
    if id(node) in seen or node.buffer is not None: continue
    seen.add(id(node))
    if node.assigned_over is not None: assigned.append(node)
    stack.extend(s.base for s in node.srcs)
  for node in assigned:
    tensor = node.assigned_over[0]()
    if tensor is None or tensor.lazydata is not node: continue
    before = node.assigned_over
    while (held := before[1]) is held.base and held.buffer is None and id(held) in seen and held.assigned_over is not None:
      before = held.assigned_over
    tensor._rebind(before[1])
    tensor._ctx, tensor.requires_grad = before[2], before[3]


def _counted_depth(outs: list[LazyBuffer]) -> int:
  """The depth of outs' deepest node, every node's depth counted again over the nodes not computed now, and kept.
  A node's depth is counted when it is built, so it also counts the sources computed since: in a loop of lazy
  assigns (w.assign(w - lr * w.grad), then loss.item()) it grew every step, its graphs were staged at other nodes
  each time, and each staging was scheduled anew."""
  depth: dict = {}
  stack = [(o.base, False) for o in outs]
  while stack:
    node, sources_counted = stack.pop()
    if node.buffer is not None or (not sources_counted and id(node) in depth): continue
    if sources_counted:
      node.depth = depth[id(node)] = max([depth[id(s.base)] + 1 for s in node.srcs if s.base.buffer is None], default=0)
    else:
      depth[id(node)] = None
      stack.append((node, True))
      stack.extend((s.base, False) for s in node.srcs if s.base.buffer is None and id(s.base) not in depth)
  return max((depth[id(o.base)] for o in outs if o.base.buffer is None), default=0)


def _stage_nodes(outs: list[LazyBuffer]) -> list[LazyBuffer]:
  found, seen, stack = [], set(), [o.base for o in outs]
  while stack:
    node = stack.pop()
    if id(node) in seen or node.buffer is not None: continue
    seen.add(id(node))
    if node.depth and node.depth % DEPTH_STAGE == 0: found.append(node)
    stack.extend(s.base for s in node.srcs)
  return sorted(found, key=lambda n: n.depth)


_graphs_written = itertools.count()


def _write_graph(schedule: list[Kernel]):
  path = os.path.join(tempfile.gettempdir(), f"nbgrad_graph_{os.getpid()}_{next(_graphs_written)}.dot")
  with open(path, "w") as f: f.write(graph_dot(schedule))
  print(f"graph of {len(schedule)} kernel(s) written to {path}", file=sys.stderr)


class _Recording(threading.local):
  """The recorder of the kernels launched on this thread (TinyJit's recorded call), else None: another thread's
  kernels (a data loader's) are not part of the call."""
  recorder = None


recording = _Recording()


def run_schedule(schedule: list[Kernel]):
  debug = DEBUG.value
  if debug >= 2 and schedule:
    print(f"schedule of {len(schedule)} kernel(s): " + ", ".join(k.name for k in schedule))
  if GRAPH and schedule: _write_graph(schedule)
  for index, kernel in enumerate(schedule):
    schedule[index] = None   # the list must not keep buffers alive: each is freed once nothing reads it
    base = kernel.output
    if base.buffer is not None: continue
    backend_ = backend(base.device)
    start = time.perf_counter()
    out = _run(kernel, backend_)
    if (recorder := recording.recorder) is not None: recorder.ran(kernel, out, backend_)
    if debug >= 1: backend_.synchronize()
    elapsed = time.perf_counter() - start
    if kernel.kind != "empty":
      GlobalCounters.kernel_count += 1
      GlobalCounters.time_sum_s += elapsed
      moved = out.nbytes
      for node in kernel.inputs: moved += node.buffer.nbytes
      for node in kernel.also: moved += node.buffer.nbytes
      GlobalCounters.global_mem += moved
      GlobalCounters.global_ops += base.size
      if debug >= 1: print(f"*** {base.device:6s} {kernel.name:40s} {elapsed * 1e3:9.3f} ms")
    _realized(base, out, backend_)
