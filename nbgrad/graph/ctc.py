"""The connectionist temporal classification loss as custom graph nodes: the per-sample losses, and their gradient
with respect to the log-probabilities (no fused loop nest expresses the recursion over frames)."""
from __future__ import annotations
from dataclasses import dataclass
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps


@dataclass(frozen=True)
class CTCLosses:
  """The loss of each sample. Sources: log_probs (frames, batch, classes), the labels of all samples one after
  another (int64), where each sample's labels start, its frame count and its label count."""
  frames: int
  batch: int
  classes: int
  blank: int

  @property
  def name(self) -> str: return f"ctc_losses_{self.frames}_{self.batch}_{self.classes}"

  def run(self, out, log_probs, targets, starts, input_lengths, target_lengths):
    from nbgrad.jit.ctc import run_ctc_losses   # the CPU routine: the graph layer does not load a device's code
    run_ctc_losses(out, log_probs.reshape(self.frames, self.batch, self.classes), targets, starts, input_lengths, target_lengths, self.blank)


@dataclass(frozen=True)
class CTCGradient(CTCLosses):
  """CTCLosses's gradient with respect to log_probs; its sources are CTCLosses's, the losses and their gradient."""
  zero_infinity: bool

  @property
  def name(self) -> str: return f"ctc_gradient_{self.frames}_{self.batch}_{self.classes}"

  def run(self, out, log_probs, targets, starts, input_lengths, target_lengths, losses, upstream):
    from nbgrad.jit.ctc import run_ctc_gradient
    shape = (self.frames, self.batch, self.classes)
    run_ctc_gradient(out.reshape(shape), log_probs.reshape(shape), targets, starts, input_lengths, target_lengths, losses, upstream,
                     self.blank, self.zero_infinity)


def ctc_losses(log_probs: LazyBuffer, labels: tuple, blank: int) -> LazyBuffer:
  """The (batch,) losses of log_probs (frames, batch, classes) given labels = (targets, starts, input_lengths,
  target_lengths), int64 nodes."""
  log_probs = log_probs.in_flat_order()
  node = CTCLosses(*log_probs.shape, blank)
  return LazyBuffer.load(LoadOps.CUSTOM, (log_probs.shape[1],), log_probs.dtype, log_probs.device, arg=node, srcs=(log_probs, *labels))


def ctc_gradient(log_probs: LazyBuffer, labels: tuple, losses: LazyBuffer, upstream: LazyBuffer, blank: int, zero_infinity: bool) -> LazyBuffer:
  log_probs = log_probs.in_flat_order()
  node = CTCGradient(*log_probs.shape, blank, zero_infinity)
  return LazyBuffer.load(LoadOps.CUSTOM, log_probs.shape, log_probs.dtype, log_probs.device, arg=node,
                         srcs=(log_probs, *labels, losses.in_flat_order(), upstream.in_flat_order()))
