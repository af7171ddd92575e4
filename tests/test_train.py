"""End to end: autograd through a small MLP against torch, and SGD training written with Tensor ops."""
import numpy as np
import torch
from nbgrad import Tensor


def circles(n: int, seed: int = 0):
    """Two concentric rings: not linearly separable."""
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, 2 * np.pi, n)
    radius = np.where(np.arange(n) % 2 == 0, 0.4, 1.0) + rng.normal(0, 0.05, n)
    points = np.stack([radius * np.cos(angle), radius * np.sin(angle)], 1).astype(np.float32)
    return points, (np.arange(n) % 2).astype(np.int32)


def test_mlp_gradients_match_torch():
    rng = np.random.default_rng(1)
    x, y = circles(64)
    w1, b1 = rng.standard_normal((2, 16)).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    w2, b2 = rng.standard_normal((16, 2)).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    ours = [Tensor(a, requires_grad=True) for a in (w1, b1, w2, b2)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (w1, b1, w2, b2)]
    loss = Tensor(x).linear(ours[0], ours[1]).relu().linear(ours[2], ours[3]).sparse_categorical_crossentropy(Tensor(y))
    loss.backward()
    ref = torch.nn.functional.cross_entropy(
        torch.relu(torch.tensor(x) @ theirs[0] + theirs[1]) @ theirs[2] + theirs[3], torch.tensor(y).long())
    ref.backward()
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-5)
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_sgd_trains_mlp_on_circles_above_95_percent():
    x, y = circles(400)
    X, Y = Tensor(x), Tensor(y)
    Tensor.manual_seed(0)
    params = [Tensor.kaiming_uniform(2, 32, requires_grad=True), Tensor.zeros(32, requires_grad=True),
              Tensor.kaiming_uniform(32, 2, requires_grad=True), Tensor.zeros(2, requires_grad=True)]

    def model(inputs):
        return inputs.linear(params[0], params[1]).relu().linear(params[2], params[3])

    first_loss = None
    for _ in range(150):
        loss = model(X).sparse_categorical_crossentropy(Y)
        for p in params: p.grad = None
        loss.backward()
        for p in params: p.assign((p - 0.5 * p.grad).detach())
        Tensor.realize(*params)
        first_loss = loss.item() if first_loss is None else first_loss
    predictions = model(X).argmax(-1).numpy()
    assert loss.item() < first_loss / 2
    assert (predictions == y).mean() > 0.95
