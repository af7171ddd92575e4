"""Matrix products and a training step: nbgrad against numpy and torch (CPU), in one run.

`matmul`: square float32 products, a fresh lazy product of realized inputs realized on every call.
`train`: one SGD step (forward, backward, update) of an MLP 784-512-512-10 with cross-entropy on a
batch of 256, nbgrad against torch. Each library runs once before timing (nbgrad compiles then) and
its answer is checked against numpy's product, or against torch's first loss and updated weights.
Run: python -m pytest benchmarks/ --benchmark-json=/tmp/bench.json && python benchmarks/report.py /tmp/bench.json
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

LIBS = ["nbgrad", "numpy", "torch"]


def nbgrad_tensor(array):
    from nbgrad import Tensor
    return Tensor(array, device="CPU").realize()


def finish_nbgrad_warm_up(benchmark, call):
    """Waits for background parallel builds, then records the kernels one call runs."""
    from nbgrad.helpers import GlobalCounters
    from nbgrad.jit import finish_builds
    finish_builds()
    GlobalCounters.reset()
    call()
    benchmark.extra_info["kernels_per_call"] = GlobalCounters.kernel_count


# ---------------------------------------------------------------------------------------------
# matmul: (n, n) @ (n, n) float32
# ---------------------------------------------------------------------------------------------

@pytest.mark.benchmark(group="matmul")
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("n", [512, 1024, 2048])
def test_matmul_square(benchmark, lib, n):
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    if lib == "numpy":
        def call(): return a @ b
    elif lib == "torch":
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        def call(): return ta @ tb
    else:
        na, nb = nbgrad_tensor(a), nbgrad_tensor(b)
        def call(): return (na @ nb).realize()
    result = np.asarray(call().numpy() if lib != "numpy" else call())
    np.testing.assert_allclose(result, a @ b, rtol=1e-4, atol=1e-2, err_msg=f"{lib} matmul differs from numpy")
    if lib == "nbgrad": finish_nbgrad_warm_up(benchmark, call)
    benchmark(call)


# ---------------------------------------------------------------------------------------------
# train: one SGD step of an MLP 784-512-512-10, batch 256, sparse categorical cross-entropy
# ---------------------------------------------------------------------------------------------

LAYERS = [784, 512, 512, 10]
BATCH = 256
LEARNING_RATE = 0.01


def mlp_data():
    """Weights (out, in) and biases as torch's Linear initializes them, a batch of inputs and labels."""
    rng = np.random.default_rng(0)
    params = []
    for fan_in, fan_out in zip(LAYERS, LAYERS[1:]):
        bound = fan_in ** -0.5
        params += [rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32),
                   rng.uniform(-bound, bound, fan_out).astype(np.float32)]
    x = rng.standard_normal((BATCH, LAYERS[0]), dtype=np.float32)
    y = rng.integers(0, LAYERS[-1], BATCH).astype(np.int32)
    return params, x, y


def nbgrad_step(params, x, y):
    from nbgrad import Tensor
    weights = [Tensor(p, device="CPU", requires_grad=True).realize() for p in params]
    inputs, labels = nbgrad_tensor(x), nbgrad_tensor(y)

    def step():
        h = inputs
        for i in range(0, len(weights) - 2, 2): h = h.linear(weights[i].T, weights[i + 1]).relu()
        loss = h.linear(weights[-2].T, weights[-1]).sparse_categorical_crossentropy(labels)
        for w in weights: w.grad = None
        loss.backward()
        for w in weights: w.assign(w.detach() - LEARNING_RATE * w.grad)
        return loss.realize(*weights)
    return step, weights


def torch_step(params, x, y):
    weights = [torch.tensor(p, requires_grad=True) for p in params]
    inputs, labels = torch.from_numpy(x), torch.from_numpy(y).long()

    def step():
        h = inputs
        for i in range(0, len(weights) - 2, 2): h = torch.relu(F.linear(h, weights[i], weights[i + 1]))
        loss = F.cross_entropy(F.linear(h, weights[-2], weights[-1]), labels)
        for w in weights: w.grad = None
        loss.backward()
        with torch.no_grad():
            for w in weights: w -= LEARNING_RATE * w.grad
        return loss
    return step, weights


_torch_first_step = {}


def torch_first_step():
    """torch's loss and updated weights after one step from the initial weights: the reference."""
    if not _torch_first_step:
        params, x, y = mlp_data()
        step, weights = torch_step(params, x, y)
        _torch_first_step["loss"] = step().item()
        _torch_first_step["weights"] = [w.detach().numpy().copy() for w in weights]
    return _torch_first_step


@pytest.mark.benchmark(group="train")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_train_mlp_sgd_step(benchmark, lib):
    params, x, y = mlp_data()
    step, weights = (nbgrad_step if lib == "nbgrad" else torch_step)(params, x, y)
    reference = torch_first_step()
    assert abs(step().item() - reference["loss"]) < 1e-4, f"{lib} first loss differs from torch"
    for got, want in zip(weights, reference["weights"]):
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-4, atol=1e-5, err_msg=f"{lib} update differs")
    if lib == "nbgrad": finish_nbgrad_warm_up(benchmark, step)
    benchmark(step)
