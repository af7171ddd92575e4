"""TinyJit: a function's kernels recorded on one call and replayed on the later ones, so its graph is not built,
differentiated or scheduled again (a training step spends about as long on that Python as on its small kernels).

As tinygrad's TinyJit: the first call runs the function as it is (its kernels compile), the second runs it while
recording every kernel launched, with the buffers each reads and writes, and from the third on those kernels run
again and the function's Python does not. Tensor arguments are swapped in for the recorded call's; the return
value is the recorded call's own, its buffers now holding the new values. So the function must launch the same
kernels on every call, and what it reads from Python (item(), a learning rate in a variable, a Tensor made from
numpy inside it) keeps the recorded call's values: data that changes comes in as Tensor arguments (a changed number,
string or array argument warns once, and so does a call in the other Tensor.training mode). A replay's return value
has no gradient graph: backward() goes inside the function. Random draws inside it take new values from the
generator on each replay. A tensor it computes but neither returns nor assigns (a w.grad read by the optimizer
inside) keeps the recorded call's values.

`w.assign(new)` rebinds w to the buffer its new values are computed into; a replay computes them into that
buffer again, then copies them into the buffer w held before, which the recorded kernels read. A tensor the
function reads and that is assigned outside it (opt.lr) has its new values copied into its old buffer before
the next replay. A call that
cannot be replayed (setitem, an assign to a Tensor argument or a copy between devices inside the function)
warns and then calls the function every time."""
from __future__ import annotations
import functools
import threading
import warnings
from typing import Any, Callable, Optional
import numpy as np
from nbgrad import autograd as F, device as devices
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.ops import LoadOps
from nbgrad.graph.schedule import Kernel
from nbgrad.helpers import GlobalCounters, JitArgumentMismatch
from nbgrad.indexing import foreign_array
from nbgrad.tensor import Tensor


class NothingRecorded(RuntimeError, AssertionError):
  """A TinyJit's function launched no kernel on the call meant to be recorded."""


class _Launch:
  """One recorded kernel: the kernel, its custom routine if any, its buffers, and where arguments go in."""
  __slots__ = ("kernel", "routine", "out", "inputs", "backend", "argument_slots")

  def __init__(self, kernel: Kernel, out, backend):
    self.kernel, self.out, self.backend = kernel, out, backend
    self.routine = kernel.output.arg if kernel.kind == "custom" else None
    self.inputs = [src.buffer for src in kernel.inputs] + [node.buffer for node in kernel.also]   # the latter written
    self.argument_slots: list[tuple[int, int]] = []   # (input position, argument number)

  def take_arguments_at(self, argument_slots: list[tuple[int, int]]):
    """The inputs at these positions are arguments, each call's own: the recorded call's buffers are let go (a
    batch of inputs held for as long as the TinyJit lives), a node without a buffer in each one's place."""
    self.argument_slots = argument_slots
    if not argument_slots: return
    nodes = list(self.kernel.inputs)
    for position, _ in argument_slots:
      self.inputs[position] = None
      node = nodes[position]
      nodes[position] = LazyBuffer(node.device, node.shape, node.dtype, LoadOps.BUFFER)
    self.kernel = self.kernel.instance(self.kernel.output, nodes, self.kernel.also)

  def run(self, arguments: list):
    inputs = self.inputs
    if self.argument_slots:
      inputs = list(inputs)
      for position, number in self.argument_slots: inputs[position] = arguments[number]
    routine = self.routine.redrawn() if hasattr(self.routine, "redrawn") else self.routine
    devices.run_into(self.kernel, routine, self.backend, self.out, inputs)


class _Recorder:
  """Collects the kernels run_schedule launches (when keeping them: they hold their buffers), the tensors assign
  rebinds, and what rules a replay out."""
  def __init__(self, keeps_launches: bool):
    self.keeps_launches = keeps_launches
    self.launches: list[_Launch] = []
    self.assigned: dict[int, tuple[Tensor, LazyBuffer]] = {}   # id(tensor) -> (tensor, its node before the call)
    self.refusal: Optional[str] = None

  def ran(self, kernel: Kernel, out, backend):
    if kernel.kind == "copy": self.refuse(f"it copies between devices ({kernel.inputs[0].device} to {kernel.output.device})")
    elif kernel.kind != "empty" and self.keeps_launches: self.launches.append(_Launch(kernel, out, backend))

  def assigning(self, tensor: Tensor, before: LazyBuffer): self.assigned.setdefault(id(tensor), (tensor, before))

  def refuse(self, why: str):
    if self.refusal is None: self.refusal = why


class _Replay:
  """The recorded call, ready to run again."""
  def __init__(self, recorder: _Recorder, arguments: list[Tensor]):
    self.launches = recorder.launches
    self.signature = [_signature(t) for t in arguments]
    argument_numbers = {id(t.lazydata.base.buffer): number for number, t in enumerate(arguments)}
    # (tensor, its node after the call, buffer written, buffer the kernels read, its backend) for each rebound tensor
    self.rebound = [(tensor, tensor.lazydata, tensor.lazydata.base.buffer, before.buffer, devices.backend(tensor.device))
                    for tensor, before in recorder.assigned.values() if tensor.lazydata.base.buffer is not before.buffer]
    # buffers computed before the call that no argument, rebound tensor or recorded kernel fills: weights, opt.lr
    filled = (set(argument_numbers) | {id(read) for *_, read, _ in self.rebound} | {id(launch.out) for launch in self.launches} |
              {id(node.buffer) for launch in self.launches for node in launch.kernel.also})
    self.read_from_outside = list({id(node): node for launch in self.launches for node in launch.kernel.inputs
                                   if id(node.buffer) not in filled}.values())
    for launch in self.launches:
      launch.take_arguments_at([(position, argument_numbers[id(b)]) for position, b in enumerate(launch.inputs)
                                if id(b) in argument_numbers])
    self.refreshed: dict[int, LazyBuffer] = {}   # id(node) -> what its replacing tensor held when last copied in
    self.copy_back()

  def __setstate__(self, state: dict):   # pickled by TinyJit, its rebound tensors as _Held
    vars(self).update(state, rebound=[(held.tensor(), *rest) for held, *rest in state["rebound"]])

  def refresh_replaced_inputs(self) -> bool:
    """The values of tensors assigned outside the function since the call was recorded, copied into the buffers
    they held, which the recorded kernels read. False where a new value cannot take that buffer's place."""
    for node in self.read_from_outside:
      tensor = node.replaced_by() if node.replaced_by is not None else None
      if tensor is None or tensor.lazydata is self.refreshed.get(id(node)): continue
      if (tensor.shape, tensor.dtype, tensor.device) != (node.shape, node.dtype, node.device): return False
      self.refreshed[id(node)] = tensor.lazydata
      devices.backend(node.device).copy_into(node.buffer, tensor.contiguous().realize().lazydata.base.buffer)
    return True

  def copy_back(self):
    """The rebound tensors' new values into the buffers the recorded kernels read."""
    for *_, written, read, backend in self.rebound: backend.copy_into(read, written)
    self.copied_back = True

  def still_valid(self) -> bool:
    """False when a rebound tensor was given other values outside the function since."""
    return all(tensor.lazydata is after for tensor, after, *_ in self.rebound)

  def run(self, arguments: list[Tensor]):
    signature = [_signature(t) for t in arguments]
    if signature != self.signature: raise JitArgumentMismatch(_mismatch(self.signature, signature))
    buffers = [t.lazydata.base.buffer for t in arguments]
    if not self.copied_back: self.copy_back()   # an interrupt stopped the last call's
    self.copied_back = False
    try:
      for launch in self.launches: launch.run(buffers)
    finally:   # after an interrupt too: the next call starts from what the tensors show (else it lost the update)
      self.copy_back()
    GlobalCounters.kernel_count += len(self.launches)


def _signature(t: Tensor) -> tuple:
  """What a replay needs the same of a Tensor argument: its shape, dtype, device, and where in its buffer its
  elements lie (None: all of it, in order, as Tensor.rand(10, 10) reshaped from its draw of 100)."""
  lazy = t.lazydata
  in_order = lazy is lazy.base or (lazy.size == lazy.base.size and lazy.view.is_flat_order())
  return t.shape, t.dtype, t.device, None if in_order else (lazy.base.shape, lazy.view)


def _described(signature: tuple) -> str:
  shape, dtype, device, layout = signature
  held = "in a buffer of its own" if layout is None else f"a view of a buffer of shape {layout[0]}"
  return f"shape {shape}, {dtype.name} on {device}, {held}"


def _mismatch(recorded: list, given: list) -> str:
  if len(recorded) != len(given):
    return f"TinyJit: the call was recorded with {len(recorded)} Tensor argument(s), and this call passes {len(given)}"
  changed = [f"argument {i}: {_described(r)} when recorded, now " + (_described(g) if _described(g) != _described(r) else "another view of it")
             for i, (r, g) in enumerate(zip(recorded, given)) if r != g]
  return "TinyJit: Tensor arguments differ from the recorded call's (a replay runs the recorded kernels): " + "; ".join(changed)


def _leaves(value) -> list:
  """The values inside value's lists, tuples and dicts, in order (value itself when it is none of those)."""
  if isinstance(value, (list, tuple)): return [leaf for v in value for leaf in _leaves(v)]
  if isinstance(value, dict): return [leaf for v in value.values() for leaf in _leaves(v)]
  return [value]


def _tensors_in(value) -> list[Tensor]: return [leaf for leaf in _leaves(value) if isinstance(leaf, Tensor)]


def _plain_values_in(value) -> list:
  """The numbers, strings, booleans, Nones and arrays (numpy's, a torch tensor: a numpy copy) among the arguments, in
  order: a replay keeps the recorded call's, so a change in them is worth a warning."""
  return [np.array(foreign_array(leaf)) if _is_array(leaf) else leaf for leaf in _leaves(value)
          if isinstance(leaf, (bool, int, float, str, type(None))) or _is_array(leaf)]


def _is_array(value) -> bool: return not isinstance(value, Tensor) and hasattr(value, "__array__")


def _same_values(recorded: list, given: list) -> bool:
  def same(a, b) -> bool:
    if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray): return type(a) is type(b) and a == b
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
  return len(recorded) == len(given) and all(same(a, b) for a, b in zip(recorded, given))


def _shown(values: list) -> str:
  """The values for a warning: an array's own when it has a few, else its shape and dtype."""
  def shown(v) -> str:
    if not isinstance(v, np.ndarray): return repr(v)
    return f"array({v.tolist()}, {v.dtype})" if v.size <= 8 else f"an array of shape {v.shape} ({v.dtype})"
  return "[" + ", ".join(map(shown, values)) + "]"


class _Held:
  """A tensor in a pickled TinyJit: its node, whose buffer the recorded kernels write (a pickled Tensor holds a
  copy of its values). One per tensor, so that a tensor both returned and assigned is one tensor when loaded."""
  def __init__(self, tensor: Tensor): self.lazydata, self.requires_grad = tensor.lazydata, tensor.requires_grad
  def __getstate__(self) -> dict: return {"lazydata": self.lazydata, "requires_grad": self.requires_grad}

  def tensor(self) -> Tensor:
    if "loaded" not in vars(self): self.loaded = Tensor(self.lazydata, requires_grad=self.requires_grad)
    return self.loaded


def _with_nodes(value, held: dict):
  """value with the tensors in it as _Held, one per tensor (held: id(tensor) -> _Held)."""
  if isinstance(value, Tensor): return held.setdefault(id(value), _Held(value))
  if isinstance(value, (list, tuple)): return type(value)(_with_nodes(v, held) for v in value)
  if isinstance(value, dict): return {k: _with_nodes(v, held) for k, v in value.items()}
  return value


def _with_tensors(value):
  if isinstance(value, _Held): return value.tensor()
  if isinstance(value, (list, tuple)): return type(value)(_with_tensors(v) for v in value)
  if isinstance(value, dict): return {k: _with_tensors(v) for k, v in value.items()}
  return value


class TinyJit:
  """Wraps a function (a training step) whose Tensor work is the same on every call: see the module's text."""
  def __init__(self, fxn: Callable):
    self.fxn, self._calls = fxn, threading.RLock()
    functools.update_wrapper(self, fxn)
    self.reset()

  def reset(self):
    """Forgets the recording: the next call runs the function as it is, the one after records it again."""
    self.cnt, self.ret, self._replay, self._plain = 0, None, None, False
    self._recorded_values, self._recorded_training, self._warned_values, self._warned_training = None, None, False, False

  @property
  def _name(self) -> str: return getattr(self, "__name__", "the function")

  def __getstate__(self) -> dict:
    """As tinygrad's: a TinyJit whose function was deleted (del jit.fxn) pickles with its recorded kernels and their
    buffers, and the loaded one replays them (on the CPU)."""
    state, held = {key: value for key, value in vars(self).items() if key not in ("__wrapped__", "_calls")}, {}
    state["ret"] = _with_nodes(self.ret, held)
    if (replay := self._replay) is not None:
      if any(not devices.is_cpu(launch.kernel.output.device) for launch in replay.launches):
        raise TypeError("pickling a TinyJit is supported for kernels recorded on the CPU only")
      state["_replay"] = pickled = object.__new__(_Replay)
      vars(pickled).update(vars(replay), rebound=[(_with_nodes(tensor, held), *rest) for tensor, *rest in replay.rebound])
    return state

  def __setstate__(self, state: dict):
    vars(self).update(state, ret=_with_tensors(state["ret"]), _calls=threading.RLock())
    if "fxn" in state: self.__wrapped__ = self.fxn

  @property
  def jit_cache(self) -> list:
    """The recorded kernels, in launch order."""
    return [] if self._replay is None else [launch.kernel for launch in self._replay.launches]

  def __get__(self, obj, objtype=None):   # a decorated method is called with its instance
    return self if obj is None else functools.partial(self.__call__, obj)

  def __call__(self, *args, **kwargs) -> Any:
    if devices.recording.recorder is not None: return self.fxn(*args, **kwargs)   # inside another's call: that one records
    with self._calls:   # calls from several threads take turns: the count of calls and the recording are shared
      return self._call(args, kwargs)

  def _call(self, args: tuple, kwargs: dict) -> Any:
    given = list(args) + [value for _, value in sorted(kwargs.items())]
    arguments = _tensors_in(given)
    if arguments: Tensor.realize(*arguments)
    buffers = [id(t.lazydata.base.buffer) for t in arguments]
    if len(set(buffers)) != len(buffers):
      raise JitArgumentMismatch("TinyJit: two Tensor arguments share a buffer; the recorded kernels could not tell them apart")
    stale = self._replay is not None
    if stale:
      if self._replay.still_valid() and self._replay.refresh_replaced_inputs():
        self._warn_of_changed_values(given)
        self._replay.run(arguments)
        for tensor in _tensors_in(self.ret):
          if tensor._ctx is not None: tensor._ctx = F.REPLAYED
        return self.ret
      self.cnt, self._replay = 0, None   # stale: the next calls run and record the function again
    if not hasattr(self, "fxn"):
      why = "a tensor it assigns was given other values outside it" if stale else \
            "it was pickled before it had a recording it could replay (pickle it after its second call)"
      raise RuntimeError(f"TinyJit: {self._name} was pickled without its function and has no recording to replay: {why}")
    if self._plain: return self.fxn(*args, **kwargs)
    ret, recorder = self._run_recording(args, kwargs, keeps_launches=self.cnt == 1)
    self.cnt += 1
    if self.cnt < 2: return ret
    self.ret = ret
    refusal = recorder.refusal or _rebinding_problem(recorder, set(buffers))
    if refusal is None and not recorder.launches:
      self.reset()
      raise NothingRecorded(f"TinyJit: {self._name} launched no kernel on its recorded "
                            f"call, so there is nothing to replay (Tensor arguments are computed before the call)")
    if refusal is not None:
      warnings.warn(f"TinyJit: {self._name} runs as it is on every call, its kernels "
                    f"cannot be replayed: {refusal}", stacklevel=2)
      self._plain = True
    else:
      self._replay, self._recorded_values = _Replay(recorder, arguments), _plain_values_in(given)
      self._recorded_training = Tensor.training
    return ret

  def _warn_of_changed_values(self, given: list):
    if not self._warned_training and Tensor.training != self._recorded_training:
      self._warned_training = True
      warnings.warn(f"TinyJit: {self._name} was recorded with Tensor.training={self._recorded_training} and is now called with "
                    f"Tensor.training={Tensor.training}; a replay runs the recorded kernels, in the recorded mode (dropout and "
                    "batch statistics as recorded): use another TinyJit for each mode", stacklevel=3)
    if self._warned_values or _same_values(self._recorded_values, values := _plain_values_in(given)): return
    self._warned_values = True
    warnings.warn(f"TinyJit: {self._name} was recorded with the plain arguments {_shown(self._recorded_values)} and is now called with "
                  f"{_shown(values)}; a replay runs the recorded kernels, which keep the recorded values (pass "
                  "values that change as Tensors)", stacklevel=3)

  def _run_recording(self, args, kwargs, keeps_launches: bool) -> tuple[Any, _Recorder]:
    """Runs the function, recording what it does, then computes what it returns and the tensors it assigned (so
    the next call finds them computed)."""
    recorder = devices.recording.recorder = _Recorder(keeps_launches)
    try:
      ret = self.fxn(*args, **kwargs)
      outputs = _tensors_in(ret) + [tensor for tensor, _ in recorder.assigned.values()]
      if outputs: Tensor.realize(*outputs)
    finally:
      devices.recording.recorder = None
    return ret, recorder


def _rebinding_problem(recorder: _Recorder, argument_buffers: set[int]) -> Optional[str]:
  """Why the tensors assigned in the recorded call cannot be refilled on a replay, or None."""
  written = {id(launch.out) for launch in recorder.launches}
  for tensor, before in recorder.assigned.values():
    after = tensor.lazydata
    if id(before.base.buffer) in argument_buffers: return f"a Tensor argument (shape {tensor.shape}) is assigned in it"
    if before is not before.base or before.buffer is None or id(before.buffer) in written:
      return f"a tensor of shape {tensor.shape} assigned in it was not a whole buffer computed before the call"
    if after is not after.base: return f"a tensor of shape {tensor.shape} was assigned a view"
  return None
