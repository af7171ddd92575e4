"""A test helper: an nbgrad function against its torch counterpart, values and gradients, in float64."""
import numpy as np
import torch
from nbgrad import Tensor


def grads_match(fn, ref, *arrays, tol=1e-6):
  """fn on nbgrad float64 leaves against ref on torch float64 leaves: the values of its output (or outputs, a tuple),
  and the gradients of a weighted sum of the float outputs torch computes gradients for."""
  ours = [Tensor(a, requires_grad=True) for a in arrays]
  theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
  outs, expected = fn(*ours), ref(*theirs)
  outs, expected = (outs, expected) if isinstance(outs, tuple) else ((outs,), (expected,))
  loss, torch_loss = 0, 0
  for out, reference in zip(outs, expected):
    assert out.shape == tuple(reference.shape), (out.shape, tuple(reference.shape))
    np.testing.assert_allclose(out.numpy(), reference.detach().numpy(), rtol=tol, atol=tol)
    if reference.dtype.is_floating_point and reference.requires_grad:
      weights = np.arange(1.0, reference.numel() + 1).reshape(tuple(reference.shape))
      loss, torch_loss = loss + (out * Tensor(weights)).sum(), torch_loss + (reference * torch.from_numpy(weights)).sum()
  loss.backward()
  torch_loss.backward()
  for i, (leaf, reference) in enumerate(zip(ours, theirs)):   # torch leaves no gradient where it is 0 by construction (norm 0)
    expected_grad = np.zeros(leaf.shape) if reference.grad is None else reference.grad.numpy(force=True)
    np.testing.assert_allclose(leaf.grad.numpy(), expected_grad, rtol=tol, atol=tol, err_msg=f"gradient of input {i}")
