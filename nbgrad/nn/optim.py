"""Optimizers (tinygrad 0.9.0's): each step assigns new values to its parameters (and its state tensors), so a
step is lazy graph work like any other and fuses, and a TinyJit-wrapped training step replays it.

The learning rate is a tensor (opt.lr, shape (1,)): changing it (opt.lr = 0.01, or opt.lr.assign(...)) changes no
kernel.
SGD is LARS without its trust ratio; Adam and AdamW are LAMB without it."""
from __future__ import annotations
import numbers
from nbgrad.helpers import NotReadyToStep
from nbgrad.dtype import dtypes, least_upper_dtype
from nbgrad.tensor import Tensor


def _unique(tensors) -> list[Tensor]: return list({id(t): t for t in tensors}.values())   # in order, each once


def _check_hyperparameter(name: str, value, low: float = 0.0, below: float = float("inf")):
  """value in [low, below), as torch's optimizers check (NaN is in no range)."""
  if isinstance(value, bool) or not isinstance(value, numbers.Real): raise TypeError(f"{name} must be a number, got {value!r}")
  if not low <= value < below: raise ValueError(f"invalid {name} {value!r}: it must be in [{low}, {below})")


def _state_dtype(t: Tensor):
  """The dtype of parameter t's state (momentum, moments) and of the gradient it is computed from: float32, or t's dtype
  where that is wider (a float16 gradient of 1e-4 squared in float16 is 0)."""
  return least_upper_dtype(t.dtype, dtypes.float32)


def _zeros_state(t: Tensor) -> Tensor:
  return Tensor.zeros(*t.shape, dtype=_state_dtype(t), device=t.device, requires_grad=False).contiguous()


class Optimizer:
  """params: the tensors to update (those with requires_grad None are made to require it); the ones that do not
  require grad (a BatchNorm's running statistics) are realized with each step."""
  def __init__(self, params: list[Tensor], lr: float):
    if isinstance(params, Tensor): raise TypeError(f"an optimizer takes a list of Tensors, got one Tensor (shape {params.shape}): pass [t]")
    params = list(params)
    for t in params:
      if not isinstance(t, Tensor): raise TypeError(f"an optimizer takes a list of Tensors, got a {type(t).__name__}")
      if t.requires_grad is None: t.requires_grad = dtypes.is_float(t.dtype)   # an int tensor is a buffer
    self.params = _unique(t for t in params if t.requires_grad)
    if not self.params: raise ValueError("an optimizer needs at least one parameter that requires grad")
    self.device = self.params[0].device
    if len(devices := list(dict.fromkeys(t.device for t in params))) > 1:
      raise ValueError(f"an optimizer's tensors must be on one device, got tensors on {devices}: move them with .to() first")
    self.buffers = _unique(t for t in params if not t.requires_grad)
    # float32 at least, wider where a parameter is (float64 weights get float64 rates and moments)
    self.state_dtype = least_upper_dtype(dtypes.default_float, dtypes.float32, *(t.dtype for t in self.params))
    self.lr = lr

  def __setattr__(self, name: str, value):
    """opt.lr = 0.01, or a Tensor of one value: the rate is set in the tensor opt.lr holds (of shape (1,)), so a
    TinyJit step replayed later reads it too."""
    if name != "lr": return super().__setattr__(name, value)
    if isinstance(value, Tensor):
      if value.numel() != 1: raise ValueError(f"a learning rate is one value, got a tensor of shape {value.shape}")
      _check_hyperparameter("learning rate", value.item())
      rate = value.detach().reshape(1).to(self.device).cast(self.state_dtype)
    else:
      _check_hyperparameter("learning rate", value)
      rate = Tensor([value], device=self.device, dtype=self.state_dtype)
    if "lr" in vars(self): self.lr.assign(rate).realize()
    else: super().__setattr__("lr", rate.contiguous().realize())

  def zero_grad(self):
    for t in self.params: t.grad = None

  def step(self):
    """One update of every parameter, computed now."""
    Tensor.realize(*self.schedule_step())

  def schedule_step(self) -> list[Tensor]:
    """The tensors a step writes (not yet realized): state, parameters, buffers."""
    if not Tensor.training:
      raise NotReadyToStep("an optimizer step needs Tensor.training: set Tensor.training = True, or step inside `with Tensor.train():`")
    for i, t in enumerate(self.params):
      if t.grad is None:
        raise NotReadyToStep(f"parameter {i} (shape {t.shape}) has no gradient: call backward() on a loss that uses it before step()")
    return self._step() + self.params + self.buffers

  def _step(self) -> list[Tensor]: raise NotImplementedError(type(self).__name__)

  def _update(self, t: Tensor, change: Tensor):
    """t -= lr * change, in t's dtype (the learning rate is a 0-d view of opt.lr, so 0-d parameters stay 0-d)."""
    t.assign((t.detach() - self.lr.reshape(()) * change).cast(t.dtype))


class OptimizerGroup(Optimizer):
  """Several optimizers (say, one per group of parameters with its own learning rate) stepped as one."""
  def __init__(self, *optimizers: Optimizer):   # the parts hold the learning rates and the state
    for o in optimizers:
      if not isinstance(o, Optimizer): raise TypeError(f"OptimizerGroup takes optimizers, got a {type(o).__name__}")
    self.optimizers = optimizers
    self.params = [t for o in optimizers for t in o.params]
    self.buffers = [t for o in optimizers for t in o.buffers]

  def __setattr__(self, name: str, value):   # group.lr = 0.01 sets every part's rate
    if name != "lr": return object.__setattr__(self, name, value)
    for o in self.optimizers: o.lr = value

  def __getitem__(self, i: int) -> Optimizer: return self.optimizers[i]
  def zero_grad(self):
    for o in self.optimizers: o.zero_grad()
  def _step(self) -> list[Tensor]: return [t for o in self.optimizers for t in o._step()]


class LARS(Optimizer):
  """SGD with momentum and weight decay, each parameter's step scaled by the trust ratio
  tcoef * |w| / (|g| + weight_decay * |w|) (1 where a norm is 0). classic=True applies the learning rate before the
  momentum, False after it (PyTorch's SGD)."""
  def __init__(self, params: list[Tensor], lr=0.001, momentum=0.9, weight_decay=1e-4, nesterov=False, classic=True, tcoef=0.001):
    super().__init__(params, lr)
    for name, value in (("momentum", momentum), ("weight_decay", weight_decay), ("tcoef", tcoef)): _check_hyperparameter(name, value)
    if nesterov and not momentum: raise ValueError("nesterov=True needs a momentum above 0 (as torch's)")
    self.momentum, self.wd, self.nesterov, self.classic, self.tcoef = momentum, weight_decay, nesterov, classic, tcoef
    self.b = [_zeros_state(t) for t in self.params] if momentum else []

  def _step(self) -> list[Tensor]:
    for i, t in enumerate(self.params):
      g = t.grad.cast(_state_dtype(t)).contiguous()   # half gradients in float32: their squares neither vanish nor overflow
      if self.tcoef != 0:
        w_norm, g_norm = t.detach().cast(_state_dtype(t)).square().sum().sqrt(), g.square().sum().sqrt()
        ratio = (w_norm > 0).where((g_norm > 0).where(self.tcoef * w_norm / (g_norm + self.wd * w_norm), 1.0), 1.0)
      else: ratio = 1.0
      g = g + self.wd * t.detach()
      if self.classic: g = g * ratio * self.lr.reshape(())
      if self.momentum:
        self.b[i].assign((self.momentum * self.b[i] + g).cast(self.b[i].dtype))   # zeros at first: no special case
        g = g + self.momentum * self.b[i] if self.nesterov else self.b[i]
      if self.classic: t.assign((t.detach() - g).cast(t.dtype))
      else: self._update(t, g * ratio)
    return self.b


def SGD(params: list[Tensor], lr=0.001, momentum=0.0, weight_decay=0.0, nesterov=False, classic=False) -> LARS:
  """Stochastic gradient descent: w -= lr * g, with PyTorch's momentum (b = momentum * b + g) and weight decay."""
  return LARS(params, lr, momentum, weight_decay, nesterov, classic, tcoef=0.0)


class LAMB(Optimizer):
  """Adam's moments with decoupled weight decay, each parameter's step scaled by the trust ratio
  |w| / |step| (1 where a norm is 0); adam=True leaves the ratio out (AdamW)."""
  def __init__(self, params: list[Tensor], lr=0.001, b1=0.9, b2=0.999, eps=1e-6, weight_decay=0.0, adam=False):
    super().__init__(params, lr)
    for name, value in (("b1", b1), ("b2", b2)): _check_hyperparameter(name, value, below=1.0)
    for name, value in (("eps", eps), ("weight_decay", weight_decay)): _check_hyperparameter(name, value)
    self.b1, self.b2, self.eps, self.wd, self.adam = b1, b2, eps, weight_decay, adam
    self.b1_t, self.b2_t = (Tensor([1], dtype=self.state_dtype, device=self.device, requires_grad=False).realize() for _ in range(2))
    self.m, self.v = ([_zeros_state(t) for t in self.params] for _ in range(2))

  def _step(self) -> list[Tensor]:
    self.b1_t.assign(self.b1_t * self.b1)
    self.b2_t.assign(self.b2_t * self.b2)
    b1_power, b2_power = self.b1_t.reshape(()), self.b2_t.reshape(())
    for i, t in enumerate(self.params):
      g, w = t.grad.cast(_state_dtype(t)), t.detach().cast(_state_dtype(t))
      self.m[i].assign(self.b1 * self.m[i] + (1.0 - self.b1) * g)
      self.v[i].assign(self.b2 * self.v[i] + (1.0 - self.b2) * (g * g))
      m_hat, v_hat = self.m[i] / (1.0 - b1_power), self.v[i] / (1.0 - b2_power)
      change = m_hat / (v_hat.sqrt() + self.eps) + self.wd * w
      if not self.adam:
        w_norm, change_norm = w.square().sum().sqrt(), change.square().sum().sqrt()
        change = change * (w_norm > 0).where((change_norm > 0).where(w_norm / change_norm, 1.0), 1.0)
      self._update(t, change)
    return [self.b1_t, self.b2_t] + self.m + self.v


def AdamW(params: list[Tensor], lr=0.001, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01) -> LAMB:
  """Adam with decoupled weight decay: w -= lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * w)."""
  return LAMB(params, lr, b1, b2, eps, weight_decay, adam=True)


def Adam(params: list[Tensor], lr=0.001, b1=0.9, b2=0.999, eps=1e-8) -> LAMB:
  return LAMB(params, lr, b1, b2, eps, 0.0, adam=True)
