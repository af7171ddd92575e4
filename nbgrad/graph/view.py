"""Views: how an index of a tensor maps to an index of the buffer (or graph node) under it.

A view never moves data. Each movement op (reshape, permute, expand, pad, shrink, flip) changes the
map only. The map is affine: base_index[j] = const[j] + sum_d coeff[j][d] * index[d], and an element
is valid (else it reads as 0, which is how pad works) where every condition lo <= const + coeff . index < hi
holds. A reshape that no affine map can express (merging dims that are not laid out one after the
other) pushes a second level: its index is flattened and unflattened into the level below.
"""
from __future__ import annotations
import functools
from dataclasses import dataclass
from typing import Optional
from nbgrad.helpers import prod

Row = tuple[tuple[int, ...], int]                 # (coefficients per view dim, constant)
Cond = tuple[tuple[int, ...], int, int, int]      # (coefficients, constant, lo, hi)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
  strides, acc = [], 1
  for s in reversed(shape):
    strides.append(acc)
    acc *= s
  return tuple(reversed(strides))


def reshape_groups(old_shape, new_shape):
  """Pairs (old dims, new dims) of equal element count, in order; size-1 dims belong to no group.
  None when either shape has no elements."""
  if prod(old_shape) == 0 or prod(new_shape) == 0: return None
  old_dims = [d for d, n in enumerate(old_shape) if n != 1]
  new_dims = [d for d, n in enumerate(new_shape) if n != 1]
  groups, i, j = [], 0, 0
  while i < len(old_dims):
    group_old, group_new = [old_dims[i]], [new_dims[j]]
    p_old, p_new = old_shape[old_dims[i]], new_shape[new_dims[j]]
    i, j = i + 1, j + 1
    while p_old != p_new:
      if p_old < p_new:
        group_old.append(old_dims[i]); p_old *= old_shape[old_dims[i]]; i += 1  # noqa: E702
      else:
        group_new.append(new_dims[j]); p_new *= new_shape[new_dims[j]]; j += 1  # noqa: E702
    groups.append((group_old, group_new))
  return groups


def _affine_range(coeffs, const, shape) -> tuple[int, int]:
  lo = hi = const
  for c, s in zip(coeffs, shape):
    lo += min(0, c * (s - 1))
    hi += max(0, c * (s - 1))
  return lo, hi


@dataclass(frozen=True)
class Affine:
  shape: tuple[int, ...]        # the view's shape
  base_shape: tuple[int, ...]   # the shape of the space its rows index into
  rows: tuple[Row, ...]         # one per base dim
  conds: tuple[Cond, ...] = ()

  @staticmethod
  @functools.lru_cache(maxsize=4096)
  def identity(shape: tuple[int, ...]) -> Affine:
    n = len(shape)
    return Affine(shape, shape, tuple((tuple(int(d == j) for d in range(n)), 0) for j in range(n)))

  # views are dictionary keys all through scheduling: their hash is computed once
  def __post_init__(self): object.__setattr__(self, "_hash", hash((self.shape, self.base_shape, self.rows, self.conds)))
  def __hash__(self) -> int: return self._hash

  @functools.cached_property
  def identity_map(self) -> bool:
    return self.shape == self.base_shape and self == Affine.identity(self.shape)

  def is_identity(self) -> bool: return self.identity_map

  @functools.cached_property
  def canonical(self) -> Affine:
    """The same map with the coefficients of size-1 dims set to 0: their index is always 0."""
    ones = [n == 1 for n in self.shape]
    if not any(ones): return self
    def zero(c): return tuple(0 if one else x for x, one in zip(c, ones))
    return Affine(self.shape, self.base_shape, tuple((zero(c), k) for c, k in self.rows),
                  tuple((zero(c), k, lo, hi) for c, k, lo, hi in self.conds))

  # movement ops: each returns the map of the moved view
  def _map_coeffs(self, shape, fn) -> Affine:
    """Rebuild every row and condition by fn(coeffs, const) -> (coeffs, const)."""
    rows = tuple(fn(c, k) for c, k in self.rows)
    conds = tuple(fn(c, k) + (lo, hi) for c, k, lo, hi in self.conds)
    return Affine(tuple(shape), self.base_shape, rows, conds).simplified()

  def permute(self, order) -> Affine:
    return self._map_coeffs([self.shape[o] for o in order], lambda c, k: (tuple(c[o] for o in order), k))

  def expand(self, shape) -> Affine:
    broadcast = [old == 1 and new != 1 for old, new in zip(self.shape, shape)]
    return self._map_coeffs(shape, lambda c, k: (tuple(0 if b else x for x, b in zip(c, broadcast)), k))

  def shrink(self, arg) -> Affine:
    starts = [a for a, _ in arg]
    return self._map_coeffs([b - a for a, b in arg], lambda c, k: (c, k + sum(x * s for x, s in zip(c, starts))))

  def sliced(self, starts, steps, counts) -> Affine:
    """counts[d] elements of each dim d from starts[d], steps[d] apart (negative: backwards)."""
    return self._map_coeffs(counts, lambda c, k: (tuple(x * s for x, s in zip(c, steps)), k + sum(x * a for x, a in zip(c, starts))))

  def flip(self, axes) -> Affine:
    def fn(c, k):
      return (tuple(-x if d in axes else x for d, x in enumerate(c)),
              k + sum(c[d] * (self.shape[d] - 1) for d in axes))
    return self._map_coeffs(self.shape, fn)

  def pad(self, arg) -> Affine:
    befores = [b for b, _ in arg]
    new_shape = [s + b + a for s, (b, a) in zip(self.shape, arg)]
    moved = self._map_coeffs(new_shape, lambda c, k: (c, k - sum(x * b for x, b in zip(c, befores))))
    n = len(self.shape)
    new_conds = tuple((tuple(int(e == d) for e in range(n)), -b, 0, self.shape[d])
                      for d, (b, a) in enumerate(arg) if b or a)
    return Affine(moved.shape, moved.base_shape, moved.rows, moved.conds + new_conds).simplified()

  def reshape(self, new_shape) -> Optional[Affine]:
    """The reshaped map, or None when no affine map expresses it."""
    new_shape = tuple(new_shape)
    n_new = len(new_shape)
    if prod(self.shape) == 0:
      zero = tuple(0 for _ in new_shape)
      return Affine(new_shape, self.base_shape, tuple((zero, k) for _, k in self.rows),
                    tuple((zero, k, lo, hi) for _, k, lo, hi in self.conds))
    all_coeffs = [c for c, _ in self.rows] + [c for c, *_ in self.conds]
    new_coeffs = [[0] * n_new for _ in all_coeffs]
    for group_old, group_new in reshape_groups(self.shape, new_shape):
      for coeffs, out in zip(all_coeffs, new_coeffs):
        for a, b in zip(group_old, group_old[1:]):
          if coeffs[a] != coeffs[b] * self.shape[b]: return None
        step = coeffs[group_old[-1]]
        for e in reversed(group_new):
          out[e] = step
          step *= new_shape[e]
    rows = tuple((tuple(c), k) for c, (_, k) in zip(new_coeffs, self.rows))
    conds = tuple((tuple(c), k, lo, hi) for c, (_, k, lo, hi) in zip(new_coeffs[len(self.rows):], self.conds))
    return Affine(new_shape, self.base_shape, rows, conds).simplified()

  def read_as(self, new_base_shape) -> Optional[Affine]:
    """The same map into new_base_shape, a reshape of the base (the base index flattened and unflattened, as
    between two levels), or None when no affine map expresses it: each dim's step must be a whole step of one
    new dim, and no coordinate may carry into the next."""
    shape, n_new = self.shape, len(new_base_shape)
    if prod(shape) == 0 or prod(new_base_shape) == 0: return None
    strides, offset = self.strides_into(contiguous_strides(self.base_shape))
    new_strides = contiguous_strides(tuple(new_base_shape))
    if not 0 <= offset < prod(new_base_shape): return None
    coeffs = [[0] * len(shape) for _ in range(n_new)]
    for d, step in enumerate(strides):
      if step == 0 or shape[d] == 1: continue
      dims = [j for j in range(n_new) if abs(step) % new_strides[j] == 0 and abs(step) // new_strides[j] < new_base_shape[j]]
      if not dims: return None
      coeffs[dims[0]][d] = step // new_strides[dims[0]]
    rows = []
    for c, st, n in zip(coeffs, new_strides, new_base_shape):
      const = offset // st % n
      lo, hi = _affine_range(c, const, shape)
      if lo < 0 or hi >= n: return None
      rows.append((tuple(c), const))
    return Affine(shape, tuple(new_base_shape), tuple(rows), self.conds)

  def windows(self, kernel, stride, dilation) -> Affine:
    """Sliding windows over the last len(kernel) dims: (..., *out, *kernel), where window position o and
    kernel offset k of a dim read its element o * stride + k * dilation."""
    lead, dims = len(self.shape) - len(kernel), len(kernel)
    out = [(n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(self.shape[lead:], kernel, stride, dilation)]
    new_shape = self.shape[:lead] + tuple(out) + tuple(kernel)
    rows = [(tuple(int(d == j) for d in range(len(new_shape))), 0) for j in range(lead)]
    for j, (s, d) in enumerate(zip(stride, dilation)):
      rows.append((tuple(s if e == lead + j else d if e == lead + dims + j else 0 for e in range(len(new_shape))), 0))
    return Affine(new_shape, self.shape, tuple(rows)).then(self)

  @staticmethod
  def diagonal(shape, offset: int, first: int, second: int) -> Affine:
    """Elements (i, i + offset) of the matrices in dims first and second of shape, along a new last dim after the
    other dims (numpy's diagonal)."""
    lead = [d for d in range(len(shape)) if d not in (first, second)]
    top, left = min(max(0, -offset), shape[first]), min(max(0, offset), shape[second])
    count = max(0, min(shape[first] - top, shape[second] - left))
    out_shape = tuple(shape[d] for d in lead) + (count,)
    def row(d):
      if d in (first, second): return tuple(int(e == len(lead)) for e in range(len(out_shape))), top if d == first else left
      return tuple(int(e == lead.index(d)) for e in range(len(out_shape))), 0
    return Affine(out_shape, tuple(shape), tuple(row(d) for d in range(len(shape))))

  def then(self, other: Affine) -> Affine:
    """This map followed by other (other.shape == self.base_shape)."""
    if other.identity_map: return self
    if self.identity_map: return other
    def compose(c2, k2):
      coeffs = tuple(sum(c2[j] * self.rows[j][0][d] for j in range(len(c2))) for d in range(len(self.shape)))
      return coeffs, k2 + sum(c2[j] * self.rows[j][1] for j in range(len(c2)))
    rows = tuple(compose(c, k) for c, k in other.rows)
    conds = self.conds + tuple(compose(c, k) + (lo, hi) for c, k, lo, hi in other.conds)
    return Affine(self.shape, other.base_shape, rows, conds).simplified()

  def simplified(self) -> Affine:
    """Drops conditions that every index of the view satisfies."""
    if prod(self.shape) == 0: return self
    conds = []
    for c, k, lo, hi in self.conds:
      mn, mx = _affine_range(c, k, self.shape)
      if not (lo <= mn and mx < hi): conds.append((c, k, lo, hi))
    conds = tuple(dict.fromkeys(conds))
    return self if conds == self.conds else Affine(self.shape, self.base_shape, self.rows, conds)

  def strides_into(self, base_strides) -> tuple[tuple[int, ...], int]:
    """(strides, offset) of this map into a buffer laid out with base_strides."""
    strides = tuple(sum(bs * c[d] for bs, (c, _) in zip(base_strides, self.rows)) for d in range(len(self.shape)))
    return strides, sum(bs * k for bs, (_, k) in zip(base_strides, self.rows))


def _sequence_step(shape, strides) -> Optional[int]:
  """k when the strides read element offset + k * i at flat (row-major) index i of shape, else None."""
  sized = [(st, c) for st, c, n in zip(strides, contiguous_strides(shape), shape) if n != 1]
  if not sized: return 1
  step = sized[-1][0] // sized[-1][1]
  return step if all(st == step * c for st, c in sized) else None


@dataclass(frozen=True)
class View:
  """A chain of affine maps from the tensor's index (levels[0]) down to its base (levels[-1]).
  Between two levels the index is flattened and unflattened into the next level's shape."""
  levels: tuple[Affine, ...]

  @staticmethod
  @functools.lru_cache(maxsize=4096)
  def contiguous(shape) -> View: return View((Affine.identity(tuple(shape)),))

  @property
  def shape(self) -> tuple[int, ...]: return self.levels[0].shape
  @property
  def base_shape(self) -> tuple[int, ...]: return self.levels[-1].base_shape

  def __post_init__(self): object.__setattr__(self, "_hash", hash(self.levels))
  def __hash__(self) -> int: return self._hash

  def is_identity(self) -> bool: return len(self.levels) == 1 and self.levels[0].is_identity()
  def has_conditions(self) -> bool: return any(level.conds for level in self.levels)   # padding: some reads are 0

  def strided(self) -> Optional[tuple[tuple[int, ...], int]]:
    """(strides, offset) into the flat base buffer when the view is one strided window of it; None when it is
    not (padding, or a reshape of a permute that no single set of strides expresses)."""
    return self._strided

  @functools.cached_property
  def _strided(self) -> Optional[tuple[tuple[int, ...], int]]:
    flat = self.flattened()
    if len(flat.levels) != 1 or flat.levels[0].conds: return None
    (strides, offset), = flat.levels[0].rows
    return strides, offset

  def same_map(self, other: View) -> bool:
    """Both views read the same element for every index (they may differ in the coefficients of size-1 dims)."""
    return len(self.levels) == len(other.levels) and all(a.canonical == b.canonical for a, b in zip(self.levels, other.levels))

  def is_flat_order(self) -> bool: return self._is_flat_order

  @functools.cached_property
  def _is_flat_order(self) -> bool:
    """True when the view reads its base in order with no gaps: reshapes at most, also where no single level
    expresses them ((16, 8, 25088) read as (16, 64, 56, 56): GroupNorm's output) (asked on every numpy())."""
    flat = self.flattened()
    if len(flat.levels) != 1 or flat.levels[0].conds or prod(self.shape) != prod(self.base_shape): return False
    (strides, offset), = flat.levels[0].rows
    return offset == 0 and all(s == c for s, c, n in zip(strides, contiguous_strides(self.shape), self.shape) if n != 1)

  def _top(self, new_top: Affine) -> View: return View((new_top,) + self.levels[1:])

  # movement ops are pure functions of (view, argument), and every step of a training loop repeats them
  @functools.lru_cache(maxsize=1 << 14)
  def permute(self, order) -> View: return self._top(self.levels[0].permute(order))
  @functools.lru_cache(maxsize=1 << 14)
  def expand(self, shape) -> View: return self._top(self.levels[0].expand(shape))
  @functools.lru_cache(maxsize=1 << 14)
  def shrink(self, arg) -> View: return self._top(self.levels[0].shrink(arg))
  @functools.lru_cache(maxsize=1 << 14)
  def sliced(self, starts, steps, counts) -> View: return self._top(self.levels[0].sliced(starts, steps, counts))
  @functools.lru_cache(maxsize=1 << 14)
  def flip(self, axes) -> View: return self._top(self.levels[0].flip(axes))
  @functools.lru_cache(maxsize=1 << 14)
  def pad(self, arg) -> View: return self._top(self.levels[0].pad(arg))
  def windows(self, kernel, stride, dilation) -> View: return self._top(self.levels[0].windows(kernel, stride, dilation))
  def mapped(self, top: Affine) -> View:
    """The view that reads this one's elements through top (top.base_shape == self.shape)."""
    return self._top(top.then(self.levels[0]))

  @functools.lru_cache(maxsize=1 << 14)
  def reshape(self, shape) -> View:
    shape = tuple(shape)
    if shape == self.shape: return self
    moved = self.levels[0].reshape(shape)
    if moved is not None: return self._top(moved)
    # dims that merge in the buffer's strides but not in the base's dims (x[..., :2] of (2, 3, 4) as (6, 2)): the
    # reshape of the one row of strides, over the base read in order
    flat = self.flattened()
    if len(flat.levels) == 1 and not flat.levels[0].conds and (moved := flat.levels[0].reshape(shape)) is not None:
      return View((moved, Affine.identity(self.base_shape)))
    if len(self.levels) > 1 and self.levels[0].is_identity():  # reshaping a pure reshape: replace it
      return View((Affine.identity(shape),) + self.levels[1:])
    return View((Affine.identity(shape),) + self.levels)

  def flattened(self) -> View: return self._flattened

  @functools.cached_property
  def _flattened(self) -> View:
    """The same map into the flat buffer under the base: one row of strides. Kernels read buffers this
    way, and neighbouring loop dims then merge whenever the strides line up. Where a level reads the
    buffer as one arithmetic sequence (in order with no gaps, backwards after a flip of every dim, or every
    k-th element), the level above it (a reshape of it, then any movement) folds into one row too, so a
    transpose of a reshaped buffer, or a reshape of a flipped one, is still one set of strides."""
    last = self.levels[-1]
    shape, levels, conds = last.shape, self.levels[:-1], last.conds
    strides, offset = last.strides_into(contiguous_strides(last.base_shape))
    while levels and not conds and (step := _sequence_step(shape, strides)) is not None:
      upper, levels = levels[-1], levels[:-1]
      upper_strides, upper_offset = upper.strides_into(contiguous_strides(upper.base_shape))
      strides, offset = tuple(step * s for s in upper_strides), offset + step * upper_offset
      shape, conds = upper.shape, upper.conds
    flat = Affine(shape, (prod(last.base_shape),), ((strides, offset),), conds)
    return View(levels + (flat,))

  def conditions_only(self) -> View:
    """The map with its coordinates dropped: what remains says only which elements are valid."""
    last = self.levels[-1]
    return View(self.levels[:-1] + (Affine(last.shape, (), (), last.conds),))

  @functools.lru_cache(maxsize=1 << 14)
  def then(self, other: View) -> View:
    """This view followed by other: other maps this view's base index space to its own base."""
    joined, below = self.levels[-1].then(other.levels[0]), other.levels[1:]
    # a reshape's level folds into the map above it where their composition is affine (a loop over a
    # refinement of both shapes reads either through plain strides)
    while below and (folded := joined.read_as(below[0].shape)) is not None:
      joined, below = folded.then(below[0]), below[1:]
    return View(self.levels[:-1] + (joined,) + below)
