"""The CPU routines of the connectionist temporal classification loss: per sample, the log-probability of every
alignment of its labels to its frames, summed in log space by the forward (alpha) recursion over the extended label
sequence (a blank, each label followed by a blank); its gradient adds the backward (beta) recursion. Samples run in
parallel, each in float64."""
from __future__ import annotations
import math
import numpy as np
from numba import njit, prange
from nbgrad.jit.compiler import LAUNCH_LOCK, CachedEntry


@njit(cache=True, nogil=True, forceinline=True)
def _log_add(a, b):
  if a == -np.inf: return b
  if b == -np.inf: return a
  return max(a, b) + math.log1p(math.exp(-abs(a - b)))


@njit(cache=True, nogil=True, forceinline=True)
def _label(targets, start, s, blank):
  """The label at position s of the extended sequence: even positions are blanks."""
  return blank if s % 2 == 0 else targets[start + s // 2]


@njit(cache=True, nogil=True)
def _can_skip(targets, start, s):
  """Whether position s may be reached from s - 2: a label differing from the one before it (not a blank)."""
  return s >= 2 and s % 2 == 1 and targets[start + s // 2] != targets[start + s // 2 - 1]


@njit(cache=True, nogil=True, forceinline=True)
def _log_add3(a, b, c):
  """log(exp(a) + exp(b) + exp(c)) with one log."""
  top = max(a, b, c)
  if top == -np.inf: return top
  return top + math.log(math.exp(a - top) + math.exp(b - top) + math.exp(c - top))


@njit(cache=True, nogil=True, forceinline=True)
def _combined(shifted, top, a, b, c, s, before, skip):
  """log(exp(a) + exp(b) + exp(c)) for a = previous[s], b = previous[s - 1] (if before), c = previous[s - 2] (if skip),
  from shifted = exp(previous - top): one log where some term is within ~690 of top (the terms that underflowed are
  then below float64's precision of the sum), else exactly."""
  total = shifted[s] + (shifted[s - 1] if before else 0.0) + (shifted[s - 2] if skip else 0.0)
  if total > 1e-300: return top + math.log(total)
  return _log_add3(a, b if before else -np.inf, c if skip else -np.inf)


@njit(cache=True, nogil=True)
def _alphas(log_probs, n, targets, start, frames, length, blank):
  """alpha[t, s]: the log-probability of the alignments of frames 0..t that end at extended position s."""
  positions = 2 * length + 1
  alpha = np.full((max(frames, 1), positions), -np.inf)
  if frames == 0: return alpha
  alpha[0, 0] = log_probs[0, n, blank]
  if length > 0: alpha[0, 1] = log_probs[0, n, targets[start]]
  shifted = np.empty(positions)
  for t in range(1, frames):
    previous = alpha[t - 1]
    top = previous.max()
    if top == -np.inf: break
    for s in range(positions): shifted[s] = math.exp(previous[s] - top)
    for s in range(positions):
      skip = _can_skip(targets, start, s)
      total = _combined(shifted, top, previous[s], previous[s - 1], previous[s - 2], s, s >= 1, skip)
      alpha[t, s] = total + log_probs[t, n, _label(targets, start, s, blank)]
  return alpha


@njit(cache=True, nogil=True)
def _negative_log_likelihood(alpha, frames, length):
  if frames == 0: return 0.0 if length == 0 else np.inf
  last = alpha[frames - 1, 2 * length]
  if length > 0: last = _log_add(last, alpha[frames - 1, 2 * length - 1])
  return -last


@CachedEntry
@njit(cache=True, nogil=True, parallel=True)
def ctc_losses(out, log_probs, targets, starts, input_lengths, target_lengths, blank):
  """out[n] = -log p(targets of n | log_probs[:input_lengths[n], n])."""
  for n in prange(out.shape[0]):
    alpha = _alphas(log_probs, n, targets, starts[n], input_lengths[n], target_lengths[n], blank)
    out[n] = _negative_log_likelihood(alpha, input_lengths[n], target_lengths[n])


@CachedEntry
@njit(cache=True, nogil=True, parallel=True)
def ctc_gradient(out, log_probs, targets, starts, input_lengths, target_lengths, losses, upstream, blank, zero_infinity):
  """out[t, n, c] = upstream[n] * (exp(lp) - exp(log(sum of alpha * beta over the positions of label c) + loss - lp)),
  the gradient with respect to the logits that log_softmax turned into log_probs (the form torch gives for
  log_probs itself); zero past a sample's frames, and for an impossible sample under zero_infinity."""
  classes = log_probs.shape[2]
  for n in prange(log_probs.shape[1]):
    frames, length, start = input_lengths[n], target_lengths[n], starts[n]
    out[:, n, :] = 0
    if frames == 0 or (zero_infinity and losses[n] == np.inf): continue
    positions = 2 * length + 1
    alpha = _alphas(log_probs, n, targets, start, frames, length, blank)
    beta = np.full((frames, positions), -np.inf)
    beta[frames - 1, positions - 1] = log_probs[frames - 1, n, blank]
    if length > 0: beta[frames - 1, positions - 2] = log_probs[frames - 1, n, targets[start + length - 1]]
    shifted = np.empty(positions)
    for t in range(frames - 2, -1, -1):
      following = beta[t + 1]
      top = following.max()
      if top == -np.inf: break
      for s in range(positions): shifted[positions - 1 - s] = math.exp(following[s] - top)   # read from the end
      for s in range(positions):
        mirrored = positions - 1 - s
        skip = s + 2 < positions and _can_skip(targets, start, s + 2)
        total = _combined(shifted, top, following[s], following[min(s + 1, positions - 1)], following[min(s + 2, positions - 1)],
                          mirrored, s + 1 < positions, skip)
        beta[t, s] = total + log_probs[t, n, _label(targets, start, s, blank)]
    by_class = np.empty(classes)
    for t in range(frames):
      by_class[:] = -np.inf
      for s in range(positions):
        label = _label(targets, start, s, blank)
        by_class[label] = _log_add(by_class[label], alpha[t, s] + beta[t, s])
      for c in range(classes):
        lp = log_probs[t, n, c]
        out[t, n, c] = upstream[n] * (math.exp(lp) - math.exp(by_class[c] + losses[n] - lp))


def run_ctc_losses(*args):
  with LAUNCH_LOCK: ctc_losses(*args)


def run_ctc_gradient(*args):
  with LAUNCH_LOCK: ctc_gradient(*args)
