"""CUDA buffers (flat numba device arrays), copies to and from the host, and kernel launches."""
from __future__ import annotations
import math
import weakref
import numpy as np
from numba import cuda, config
from nbgrad.dtype import DType
from nbgrad.graph.schedule import Kernel, structure_key
from nbgrad.cuda.render import CudaRenderer, uses_block_reduce, split_chunks, outputs_per_thread
from nbgrad.jit.render import compute_type
from nbgrad.cuda.compiler import get_kernel, target_folder
from nbgrad.cuda.runtime import SIMULATOR

# The simulator runs every thread as a Python thread and blocks one after another: few and small.
THREADS = 32 if SIMULATOR else 256
MAX_BLOCKS = 4 if SIMULATOR else 8192
_PARAM_CACHE_LIMIT = 4096
config.CUDA_LOW_OCCUPANCY_WARNINGS = False   # small tensors make small grids on purpose
POOL_LIMIT_BYTES = 16 << 30
SIMULATED_MULTIPROCESSORS = 4   # so that the simulator's small products take the paths a GPU's small products take


def device_storage(dt: DType) -> np.dtype:
  """Kernels see 16-bit floats as their uint16 bits (computed in float32), as on the CPU."""
  return np.dtype(np.uint16) if dt.kind == "f" and dt.itemsize == 2 else np.dtype(dt.storage)


class CudaBackend:
  def __init__(self, index: int):
    self.index, self.gpu = index, cuda.gpus[index]
    self.multiprocessors = SIMULATED_MULTIPROCESSORS if SIMULATOR else self.gpu.MULTIPROCESSOR_COUNT
    self.folder = target_folder(index)
    self.params: dict[tuple, tuple] = {}   # launch parameters stay on the device between calls
    self.prepared_kernels: dict[tuple, tuple] = {}
    self.pool: dict[tuple, list] = {}
    self.pooled_bytes = 0

  def allocate(self, size: int, dt: DType): return self._from_pool(size, device_storage(dt))

  def _from_pool(self, size: int, storage: np.dtype):
    free = self.pool.get((size, storage))
    if free:
      self.pooled_bytes -= free[-1].nbytes
      return free.pop()
    with self.gpu: return cuda.device_array(size, dtype=storage)

  def keep_for_reuse(self, node, buffer):
    """When node is collected its buffer waits in a pool for the next allocation of that size (a device
    allocation costs far more than a small kernel)."""
    weakref.finalize(node, self._release, buffer)

  def _release(self, buffer):
    if self.pooled_bytes + buffer.nbytes > POOL_LIMIT_BYTES: return
    self.pool.setdefault((buffer.size, buffer.dtype), []).append(buffer)
    self.pooled_bytes += buffer.nbytes

  def from_host(self, array: np.ndarray, dt: DType):
    with self.gpu: return cuda.to_device(np.ascontiguousarray(array).view(device_storage(dt)))

  def copy_into(self, target, source):
    with self.gpu: target.copy_to_device(source)

  def to_host(self, buffer, dt: DType) -> np.ndarray:
    with self.gpu: return buffer.copy_to_host().view(dt.storage)

  def synchronize(self):
    with self.gpu: cuda.synchronize()

  def device_params(self, ints: list, floats: list):
    key = (tuple(ints), np.array(floats, np.float64).tobytes())   # by bits: -0.0 == 0.0 but multiplies differently
    found = self.params.get(key)
    if found is None:
      if len(self.params) >= _PARAM_CACHE_LIMIT: self.params.clear()
      with self.gpu:
        found = self.params[key] = (cuda.to_device(np.array(ints or [0], np.int64)),
                                    cuda.to_device(np.array(floats or [0.0], np.float64)))
    return found

  def prepared(self, kernel: Kernel, phase: str = "", chunks: int = 0) -> tuple:
    """(compiled kernel, its parameters on the device), kept per kernel structure so that a kernel seen
    before is neither rendered nor given new parameter arrays again."""
    key = (structure_key(kernel), phase, chunks)
    found = self.prepared_kernels.get(key)
    if found is None:
      renderer = CudaRenderer(kernel, THREADS, phase, chunks)
      compiled = get_kernel(renderer.render("kernel"), kernel.name + (f"_{phase}" if phase else ""), self.folder)
      if len(self.prepared_kernels) >= _PARAM_CACHE_LIMIT: self.prepared_kernels.clear()
      found = self.prepared_kernels[key] = (compiled, *self.device_params(renderer.int_params, renderer.float_params))
    return found

  def launch(self, kernel: Kernel, blocks: int, buffers: list, phase: str = "", chunks: int = 0):
    compiled, ints, floats = self.prepared(kernel, phase, chunks)
    with self.gpu: compiled.launch(max(1, min(blocks, MAX_BLOCKS)), THREADS, buffers + [ints, floats])

  def run_compute(self, kernel: Kernel, out, inputs: list):
    outputs = math.prod(s for d, s in enumerate(kernel.loop_shape) if d not in kernel.reduce_axes)
    chunks = split_chunks(kernel)
    if chunks:
      partials = self._from_pool(outputs * chunks, np.dtype(compute_type(kernel.stages[0][1].dtype)[3:]))
      partial_blocks = outputs * chunks if uses_block_reduce(kernel) else -(-outputs * chunks // THREADS)
      self.launch(kernel, partial_blocks, [out, partials, *inputs], "partials", chunks)
      self.launch(kernel, -(-outputs // THREADS), [out, partials, *inputs], "combine", chunks)
      self._release(partials)   # free for the next launch: launches run in order, so it is read before any reuse
      return
    blocks = outputs if uses_block_reduce(kernel) else -(-outputs // (THREADS * outputs_per_thread(kernel)))
    self.launch(kernel, blocks, [out, *inputs])

  def run_custom(self, kernel: Kernel, routine, out, inputs: list):
    """A custom kernel runs its GPU routine when it has one (run_cuda, which returns False for a case it
    leaves to the host), else its host routine on copies."""
    if hasattr(routine, "run_cuda"):
      with self.gpu:
        if routine.run_cuda(self, out, *inputs) is not False: return
    dt = kernel.output.dtype
    host_out = np.empty(kernel.output.size, dtype=dt.storage)
    routine.run(host_out, *[self.to_host(b, src.dtype) for b, src in zip(inputs, kernel.inputs)])
    with self.gpu: out.copy_to_device(host_out.view(device_storage(dt)))
