"""A parallel kernel launched often gets a second build with its integer parameters written in as constants
(nbgrad.jit.SPECIALIZE_AFTER); it must compute the same bits as the generic build, and a parallel build the same bits
on one thread as on all."""
import numba
import numpy as np
import torch
import nbgrad.jit as jit
from nbgrad import Tensor


def specialized_kernels() -> set:
  return {id(entry) for entry in jit._rendered_cache.values() if entry.specialized is not None and entry.specialized.ready}


def test_a_kernel_launched_often_switches_to_its_specialized_build_with_equal_results():
  x = np.random.default_rng(7).standard_normal((2, 8, 62, 62)).astype(np.float32)
  want = torch.nn.functional.max_pool2d(torch.nn.functional.pad(torch.from_numpy(x), (1, 1, 1, 1)) * 3, 2).numpy()
  before = specialized_kernels()
  results = []
  for _ in range(jit.SPECIALIZE_AFTER + 2):
    results.append((Tensor(x).pad2d((1, 1, 1, 1)) * 3).max_pool2d(2).numpy())
    jit.finish_builds()   # the parallel build, then the specialized one, compile in the background
  assert specialized_kernels() - before, f"no kernel was specialized after {len(results)} launches"
  for got in results: np.testing.assert_array_equal(got, want)
  assert np.array_equal(results[0].view(np.uint32), results[-1].view(np.uint32))


def parallel_entry_of(kernel_count_before: int):
  """The parallel build's entry made since the cache held kernel_count_before entries."""
  entries = [entry for key, entry in list(jit._rendered_cache.items())[kernel_count_before:] if key[1]]
  assert len(entries) == 1, f"expected one parallel kernel, found {len(entries)}"
  return entries[0]


def test_a_parallel_build_computes_the_same_bits_on_one_thread_and_on_all():
  """Below ALWAYS_PARALLEL_ELEMENTS a parallel build runs on one thread until its timings show that all threads pay;
  the switch must not change a value (row sums and softmax of 512x1024, elementwise over 2^18)."""
  x = np.random.default_rng(11).standard_normal((512, 1024)).astype(np.float32)
  t = Tensor(x).realize()
  for name, op, want in [("row sums", lambda v: (v * 2 + 1).relu().sum(1), np.maximum(x * 2 + 1, 0).sum(1)),
                         ("softmax", lambda v: v.softmax(1), torch.from_numpy(x).softmax(1).numpy()),
                         ("elementwise", lambda v: (v * 3).exp() - v, np.exp(x * 3) - x)]:
    before = len(jit._rendered_cache)
    op(t).realize()
    jit.finish_builds()
    entry = parallel_entry_of(before)
    results = []
    while entry.threads_pay is None and len(results) < 2 * jit.THREAD_TIMINGS:   # timed on one thread and on all in turn
      results.append(op(t).numpy())
    timings = (jit.THREAD_TIMINGS, jit.THREAD_TIMINGS) if numba.get_num_threads() > 1 else (1, 0)   # one thread: nothing to compare
    assert (len(entry.one_thread_seconds), len(entry.all_threads_seconds)) == timings, name
    for threads_pay in (False, True, True):   # then each way forced
      entry.threads_pay = threads_pay
      results.append(op(t).numpy())
    np.testing.assert_allclose(results[0], want, rtol=1e-4, atol=1e-4, err_msg=name)
    for got in results[1:]: assert np.array_equal(got.view(np.uint32), results[0].view(np.uint32)), name


def test_a_row_sum_keeps_its_row_length_a_parameter_in_its_specialized_build():
  """Written in, the row length let LLVM unroll a row's vectorized sum whole in the cached machine code, which then
  ran 2x slower; the specialized build reads it from the parameter array and gives the generic build's bits."""
  x = np.random.default_rng(5).standard_normal((300, 4100)).astype(np.float32)
  t = Tensor(x).realize()
  before = len(jit._rendered_cache)
  results = []
  for _ in range(jit.SPECIALIZE_AFTER + 2):
    results.append(t.sum(1).numpy())
    jit.finish_builds()
  entry = parallel_entry_of(before)
  assert entry.specialized is not None and entry.specialized.ready
  row_length = entry.int_params.tolist().index(4100)
  assert f"i{row_length} = ip[{row_length}]" in entry.specialized.source
  assert "i0 = 300" in entry.specialized.source   # the kept dim's size is still written in
  np.testing.assert_allclose(results[-1], x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)
  for got in results[1:]: assert np.array_equal(got.view(np.uint32), results[0].view(np.uint32))


def test_a_max_over_short_rows_gives_the_same_bits_in_every_build():
  """A reduce of at most SMALL_WINDOW elements compares floats in the serial build as in the parallel one (unrolled),
  not order keys: max of [0.0, -0.0] was 0.0 from the serial build and -0.0 from the parallel one, a NaN's bits
  changed too. Each build is run here, whatever the disk cache holds."""
  rows = np.tile(np.array([[0.0, -0.0, -1.0, 0.5], [-0.0, 0.0, -2.0, -0.0], [1.0, np.nan, 3.0, 2.0]], np.float32), (1 << 15, 1))
  t = Tensor(rows).realize()
  for op, reference in (("max", torch.amax), ("min", torch.amin)):
    [kernel] = getattr(t, op)(1).schedule()
    serial, parallel = jit._rendered(kernel, parallel=False), jit._rendered(kernel, parallel=True)
    specialized = jit.get_kernel(jit.Renderer(kernel, True, constants=True).render("kernel"), True, kernel.name)
    results = [np.empty(len(rows), np.float32) for _ in range(3)]
    for out, build, params in zip(results, (serial.compiled, parallel.compiled, specialized), (serial, parallel, parallel)):
      build(out, rows.reshape(-1), params.int_params, params.float_params)
    np.testing.assert_array_equal(results[0], reference(torch.from_numpy(rows), 1).numpy())   # as numbers (0.0 == -0.0)
    for got in results[1:]: assert np.array_equal(got.view(np.uint32), results[0].view(np.uint32)), op
