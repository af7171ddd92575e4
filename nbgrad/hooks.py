"""Gradient hooks (Tensor.register_hook, register_post_accumulate_grad_hook): kept per tensor for as long as it lives,
and called by backward() as each tensor's gradient is summed."""
from __future__ import annotations
import weakref

_HOOKS: dict[tuple[int, str], dict] = {}   # (id(tensor), "gradient" or "accumulated") -> {handle id: hook}, in order


class RemovableHandle:
  """What register_hook returns: remove() takes its hook off (again: nothing), as leaving a with block does."""
  next_id = 0

  def __init__(self, hooks: dict, hook):
    self.hooks, self.id = hooks, RemovableHandle.next_id
    RemovableHandle.next_id += 1
    hooks[self.id] = hook

  def remove(self): self.hooks.pop(self.id, None)
  def __enter__(self): return self
  def __exit__(self, *exc): self.remove()


def add_hook(tensor, kind: str, hook) -> RemovableHandle:
  """hook kept for tensor as long as tensor lives."""
  if not callable(hook): raise TypeError(f"a hook must be callable, got {hook!r}")
  key = (id(tensor), kind)
  if key not in _HOOKS:
    _HOOKS[key] = {}
    weakref.finalize(tensor, _HOOKS.pop, key, None)
  return RemovableHandle(_HOOKS[key], hook)


def hooked_gradient(tensor, gradient):
  """gradient passed through tensor's gradient hooks, in the order they were registered; a Tensor a hook returns takes
  its place."""
  if not _HOOKS: return gradient   # backward asks at every node
  for hook in list(_HOOKS.get((id(tensor), "gradient"), {}).values()):
    changed = hook(gradient)
    if changed is None: continue
    if type(changed) is not type(gradient):
      raise TypeError(f"gradient hook {hook!r} returned a {type(changed).__name__}, not a Tensor or None")
    if (changed.shape, changed.dtype, changed.device) != (gradient.shape, gradient.dtype, gradient.device):
      raise RuntimeError(f"gradient hook {hook!r} changed the gradient's shape, dtype or device: "
                         f"{gradient.shape} {gradient.dtype} {gradient.device} -> {changed.shape} {changed.dtype} {changed.device}")
    gradient = changed.detach()
  return gradient


def gradient_accumulated(tensor):
  """Calls the leaf tensor's post-accumulate hooks, after backward has added to its .grad."""
  for hook in list(_HOOKS.get((id(tensor), "accumulated"), {}).values()) if _HOOKS else (): hook(tensor)
