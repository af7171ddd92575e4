"""A parallel kernel launched often gets a second build with its integer parameters written in as constants
(nbgrad.jit.SPECIALIZE_AFTER); it must compute the same bits as the generic build."""
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
