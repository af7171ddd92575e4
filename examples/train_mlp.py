"""Trains a two-layer MLP with plain SGD, written with nbgrad Tensor ops alone, on a synthetic two-spiral
data set (not linearly separable). Prints the loss falling, the final accuracy, and how many kernels were
compiled, loaded from the disk cache, or reused from memory."""
import numpy as np
from nbgrad import Tensor
from nbgrad.helpers import GlobalCounters


def two_spirals(n_per_class: int, seed: int = 0):
  rng = np.random.default_rng(seed)
  t = np.sqrt(rng.uniform(0.05, 1, n_per_class)) * 3 * np.pi
  arm = np.stack([t * np.cos(t), t * np.sin(t)], 1) / (3 * np.pi)
  points = np.concatenate([arm, -arm]) + rng.normal(0, 0.02, (2 * n_per_class, 2))
  labels = np.concatenate([np.zeros(n_per_class), np.ones(n_per_class)]).astype(np.int32)
  return points.astype(np.float32), labels


x_np, y_np = two_spirals(500)
X, Y = Tensor(x_np), Tensor(y_np)
Tensor.manual_seed(0)
w1, b1 = Tensor.kaiming_uniform(2, 64, requires_grad=True), Tensor.zeros(64, requires_grad=True)
w2, b2 = Tensor.kaiming_uniform(64, 64, requires_grad=True), Tensor.zeros(64, requires_grad=True)
w3, b3 = Tensor.kaiming_uniform(64, 2, requires_grad=True), Tensor.zeros(2, requires_grad=True)
params = [w1, b1, w2, b2, w3, b3]


def model(x: Tensor) -> Tensor:
  return x.linear(w1, b1).relu().linear(w2, b2).relu().linear(w3, b3)


learning_rate = 0.5
GlobalCounters.reset()
for step in range(301):
  loss = model(X).sparse_categorical_crossentropy(Y)
  for p in params: p.grad = None
  loss.backward()
  for p in params: p.assign((p - learning_rate * p.grad).detach())
  Tensor.realize(*params)
  if step % 50 == 0: print(f"step {step:3d}  loss {loss.item():.4f}")

accuracy = (model(X).argmax(-1) == Y).float().mean().item()
runs = GlobalCounters.kernel_count
built = GlobalCounters.compile_count + GlobalCounters.disk_cache_hits
print(f"accuracy {accuracy:.3f}")
print(f"kernels: {GlobalCounters.compile_count} compiled, {GlobalCounters.disk_cache_hits} loaded from the disk cache, "
      f"{runs - built} runs reused a kernel already in memory ({runs} runs in all)")
