"""CPU routine of the concatenation node (graph/concat.py): each source copied into its slot of the output."""
from __future__ import annotations
import numpy as np


def concatenate(out: np.ndarray, sources: tuple, outer: int, sizes: tuple[int, ...], inner: int):
  """out seen as (outer, sum(sizes), inner) takes source i, seen as (outer, sizes[i], inner), in its slot."""
  slots, start = out.reshape(outer, sum(sizes), inner), 0
  for size, source in zip(sizes, sources):
    slots[:, start:start + size] = source.reshape(outer, size, inner)
    start += size
