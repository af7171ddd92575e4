"""The CPU backend: kernels rendered as numba source, compiled, cached and run on numpy buffers."""
from __future__ import annotations
import time
from typing import Optional
import numba
import numba.np.ufunc.parallel as numba_threads   # its unchecked thread-count calls: 0.6 us a launch, the public ones 3
import numpy as np
from nbgrad.graph.schedule import Kernel, structure_key
from nbgrad.graph.view import prod
from nbgrad.jit.compiler import CompiledKernel, get_kernel, finish_builds, parallel_loops_work, LAUNCH_LOCK
from nbgrad.jit.render import Renderer

# Below this many loop iterations a kernel runs serially. On OpenMP's pool, measured for relu(x*y+z) (float32,
# 2 cores, per call): 2^14 589 us serial vs 563 us parallel, 2^16 757 vs 673, 2^18 1184 vs 904, 2^20 3268 vs 1730.
# Threads start paying at about 2^16, and a serial compile is about four times cheaper than a parallel one.
# numba's workqueue pool (nbgrad/__init__.py picks it when torch is imported first) wakes sleeping workers for each
# launch and the calling thread only waits: a launch costs about 50 us, and relu(x+y) (numba functions, 2 cores)
# took 2^16 16 us serial vs 78 parallel, 2^20 222 vs 363, 2^22 3036 vs 2377. In the MLP training step (benchmarks/
# group train) its parallel kernels also slowed the products that followed them.
# Which build runs is fixed by this threshold rather than timed per kernel (as a big take chooses its threads):
# timing each kernel's serial and parallel builds and keeping the faster put some of the CNN training step's
# elementwise kernels on one core, which made the parallel kernels after them slower (their data sat in the other
# core's cache, or its workers slept), and the step took 1.3-1.5 ms longer on a 2-core AMD EPYC VM. Only the thread
# count of a parallel build is timed (below), which changes neither the build nor the values.
PARALLEL_MIN_ELEMENTS = 1 << 21 if numba.config.THREADING_LAYER == "workqueue" else 1 << 16

# Waking the pool's sleeping workers costs a launch 30-60 us on a 2-core AMD EPYC VM (numba functions, x * 2 in
# parallel on all threads / on one: 2^16 elements 51 / 10 us, 2^18 62 / 29, 2^20 95 / 96). So the first
# 2 * THREAD_TIMINGS launches of a parallel build below ALWAYS_PARALLEL_ELEMENTS alternate between one thread and
# all, and it keeps all from then on only if their fastest launch beat one thread's fastest. A model of the gain
# (t on one thread against t / T + the wake on T) misjudged memory-bound kernels that the first launches ran cold:
# -x of 512x1024 float32 took 47-85 us on one thread and 69 on two, and its first two launches, faulting in fresh
# pages, put it on two threads in 3 processes of 4 (a realize of it 121-126 us, on one thread 82). Each thread
# computes whole prange iterations, so the values do not depend on the thread count. Kernels of the training steps
# (benchmarks/ group train, serial build / parallel build on all threads): the MLP's bias-and-relu of 256x512 15 /
# 56 us, its weight update of 784x512 52 / 81 us; the CNN's max-pool backward of 32x32x26x26 1325 / 595 us.
ALWAYS_PARALLEL_ELEMENTS = 1 << 22
THREAD_TIMINGS = 3

__all__ = ["run_kernel", "finish_builds"]

_EMPTY_INTS, _EMPTY_FLOATS = np.zeros(0, np.int64), np.zeros(0, np.float64)


def _as_kernel_arrays(buffers) -> list[np.ndarray]:
  """The buffers as the kernel takes them: numba has no float16, such buffers go in as their uint16 bits."""
  return [b.view(np.uint16) if b.dtype.char == "e" else b for b in buffers]


# After this many launches of one parallel kernel, a build with its integer parameters (sizes, strides, bounds)
# written in as constants compiles in the background and takes over: LLVM then folds the index arithmetic
# (a pooling view's division by 2 becomes a shift) and vectorizes more. In the CNN training step (benchmarks/
# group train; medians, both builds interleaved in one process): col2im sum 0.99 -> 0.61 ms, relu and max-pool
# backward 1.36 -> 0.80 ms, max-pool tie count 0.99 -> 0.56 ms; the step 17.3 -> 14.3 ms. A kernel run this often
# is worth one more compile; most kernels of the test suite run a few times and never get one.
SPECIALIZE_AFTER = 16


class _Rendered:
  """A kernel structure's compiled kernel and parameter arrays, kept so a kernel seen before is not rendered
  again (rendering costs more than running a small kernel); for a parallel kernel also its launch count and,
  once launched SPECIALIZE_AFTER times, its build with constant parameters, and whether its threads pay (None
  until its launches timed each way tell)."""
  __slots__ = ("compiled", "int_params", "float_params", "launches", "specialized", "threads_pay", "one_thread_seconds",
               "all_threads_seconds")

  def __init__(self, kernel: Kernel, parallel: bool):
    renderer = Renderer(kernel, parallel)
    self.compiled = get_kernel(renderer.render("kernel"), parallel, kernel.name)
    self.int_params = np.array(renderer.int_params, np.int64) if renderer.int_params else _EMPTY_INTS
    self.float_params = np.array(renderer.float_params, np.float64) if renderer.float_params else _EMPTY_FLOATS
    self.launches = 0
    self.specialized: Optional[CompiledKernel] = None
    self.threads_pay: Optional[bool] = True if prod(kernel.loop_shape) >= ALWAYS_PARALLEL_ELEMENTS else None
    self.one_thread_seconds: list[float] = []
    self.all_threads_seconds: list[float] = []

  def next_on_one_thread(self) -> bool:
    """Whether the next launch runs on one thread: while timed, every other one (the first, which may hold a load
    from disk, among them); then where the threads did not pay."""
    return self.threads_pay is False or len(self.one_thread_seconds) <= len(self.all_threads_seconds)

  def timed(self, seconds: float, on_one_thread: bool, threads: int):
    """Counts a launch timed on one thread or on all threads (the fastest of each way counts)."""
    (self.one_thread_seconds if on_one_thread else self.all_threads_seconds).append(seconds)
    if threads == 1: self.threads_pay = False
    elif len(self.all_threads_seconds) >= THREAD_TIMINGS: self.threads_pay = min(self.all_threads_seconds) < min(self.one_thread_seconds)

  def fastest(self, kernel: Kernel, arrays: list[np.ndarray]) -> CompiledKernel:
    """The parallel build to launch: the specialized one when it is ready, else the generic one."""
    if self.specialized is None:
      self.launches += 1
      if self.launches < SPECIALIZE_AFTER: return self.compiled
      self.specialized = get_kernel(Renderer(kernel, True, constants=True).render("kernel"), True, kernel.name)
      if not self.specialized.on_disk(): self.specialized.build_in_background(*arrays, self.int_params, self.float_params)
    return self.specialized if self.specialized.ready or self.specialized.background is None else self.compiled


_rendered_cache: dict[tuple, _Rendered] = {}
RENDERED_CACHE_LIMIT = 4096


def _rendered(kernel: Kernel, parallel: bool) -> _Rendered:
  key = (structure_key(kernel), parallel)
  found = _rendered_cache.get(key)
  if found is None:
    if len(_rendered_cache) >= RENDERED_CACHE_LIMIT: _rendered_cache.clear()
    found = _rendered_cache[key] = _Rendered(kernel, parallel)
  return found


def run_kernel(kernel: Kernel, out: np.ndarray, inputs: list[np.ndarray]):
  """Runs a kernel. A big kernel runs its parallel build once that is ready (or in the disk cache), on one thread
  or on all (see ALWAYS_PARALLEL_ELEMENTS); until then the serial build runs and the parallel one compiles on a
  background thread, so a first call never waits for a parallel compile."""
  arrays = _as_kernel_arrays((out, *inputs))
  if prod(kernel.loop_shape) >= PARALLEL_MIN_ELEMENTS and parallel_loops_work():
    parallel = _rendered(kernel, parallel=True)
    if parallel.compiled.ready or parallel.compiled.on_disk():
      launch = parallel.fastest(kernel, arrays)
      with LAUNCH_LOCK:
        if parallel.threads_pay:
          launch(*arrays, parallel.int_params, parallel.float_params)
          return
        threads = numba.get_num_threads() if not numba_threads._is_initialized else numba_threads._get_num_threads()
        on_one_thread = parallel.next_on_one_thread()
        if on_one_thread: numba_threads._set_num_threads(1)
        try:
          start = time.perf_counter()
          launch(*arrays, parallel.int_params, parallel.float_params)
          if parallel.threads_pay is None: parallel.timed(time.perf_counter() - start, on_one_thread, threads)
        finally:
          if on_one_thread: numba_threads._set_num_threads(threads)
      return
    serial = _rendered(kernel, parallel=False)
    with LAUNCH_LOCK: serial.compiled(*arrays, serial.int_params, serial.float_params)
    parallel.compiled.build_in_background(*arrays, parallel.int_params, parallel.float_params)
    return
  serial = _rendered(kernel, parallel=False)
  with LAUNCH_LOCK: serial.compiled(*arrays, serial.int_params, serial.float_params)
