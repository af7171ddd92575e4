"""Matrix products and a training step: nbgrad against numpy and torch (CPU), in one run.

`matmul`: square float32 products, one int32 product and a batched float32 einsum, a fresh lazy product of realized inputs realized on every call.
`train`: one SGD step (forward, backward, update) with cross-entropy of an MLP 784-512-512-10 on a batch
of 256 and of a small CNN on 32 28x28 images, nbgrad against torch. Each library runs once before timing (nbgrad compiles then) and
its answer is checked against numpy's product, or against torch's first loss and updated weights.
`optim`: one Adam step of 4M float32 parameters, nbgrad against torch.optim.Adam.
`conv_transpose`: forward and both gradients of a stride-2 3x3 transposed convolution (a decoder's upsampling:
batch 8, 32 to 16 channels, 32x32 to 64x64).
`conv5x5`: forward and both gradients of a 5x5 convolution (the second layer of tinygrad's MNIST example:
batch 128, 32 to 32 channels, 24x24), whose 25 kernel offsets take a different input-gradient path than 3x3.
`train-busy-core`: the same steps while another process keeps one core busy (a user's machine is rarely idle;
BUSY_CORES=2 keeps two busy).
Run: python -m pytest benchmarks/ --benchmark-json=/tmp/bench.json && python benchmarks/report.py /tmp/bench.json
"""
import os
import subprocess
import sys
import numpy as np
import pytest
import torch
import torch.nn.functional as F

LIBS = ["nbgrad", "numpy", "torch"]


def nbgrad_tensor(array, device="CPU"):
    from nbgrad import Tensor
    return Tensor(array, device=device).realize()


def torch_device(device: str) -> str:
    """torch's name for an nbgrad device (the GPU benchmarks reuse these workloads on "CUDA")."""
    return "cuda" if device.upper().startswith("CUDA") else "cpu"


def finish_nbgrad_warm_up(benchmark, call):
    """Brings the call's kernels to the builds a long run uses (the parallel builds, then the ones specialized
    after SPECIALIZE_AFTER launches), then records the kernels one call runs."""
    from nbgrad.helpers import GlobalCounters
    from nbgrad.jit import finish_builds, SPECIALIZE_AFTER
    finish_builds()
    for _ in range(SPECIALIZE_AFTER): call()
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
    bench_product(benchmark, lib, a, b, lambda result: np.testing.assert_allclose(
        result, a @ b, rtol=1e-4, atol=1e-2, err_msg=f"{lib} matmul differs from numpy"))


def bench_product(benchmark, lib, a, b, check):
    """Times lib's a @ b of realized inputs, once check has passed on its first answer."""
    if lib == "numpy":
        def call(): return a @ b
    elif lib == "torch":
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        def call(): return ta @ tb
    else:
        na, nb = nbgrad_tensor(a), nbgrad_tensor(b)
        def call(): return (na @ nb).realize()
    check(np.asarray(call().numpy() if lib != "numpy" else call()))
    if lib == "nbgrad": finish_nbgrad_warm_up(benchmark, call)
    benchmark(call)


@pytest.mark.benchmark(group="matmul")
@pytest.mark.parametrize("lib", LIBS)
def test_matmul_vector_dot(benchmark, lib):
    """(1, 1024) @ (1024, 1) float32: a product too small for threads, where the call's own cost shows."""
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((1, 1024), dtype=np.float32), rng.standard_normal((1024, 1), dtype=np.float32)
    bench_product(benchmark, lib, a, b, lambda result: np.testing.assert_allclose(
        result, a @ b, rtol=1e-4, atol=1e-3, err_msg=f"{lib} dot differs from numpy"))


@pytest.mark.benchmark(group="matmul")
@pytest.mark.parametrize("lib", LIBS)
def test_matmul_vectors_1d(benchmark, lib):
    """The dot product of two 4M-element float32 vectors (1-D @ 1-D), a pass over 32 MiB."""
    rng = np.random.default_rng(11)
    a, b = (rng.standard_normal(1 << 22, dtype=np.float32) for _ in range(2))
    bench_product(benchmark, lib, a, b, lambda result: np.testing.assert_allclose(
        result, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, err_msg=f"{lib} dot differs from numpy"))


@pytest.mark.benchmark(group="matmul")
@pytest.mark.parametrize("lib", LIBS)
def test_matmul_int32_512(benchmark, lib):
    """An integer product (no BLAS has one): 512x512 int32 values in [-100, 100), sums wrapping as numpy's."""
    rng = np.random.default_rng(5)
    a, b = (rng.integers(-100, 100, (512, 512)).astype(np.int32) for _ in range(2))
    bench_product(benchmark, lib, a, b, lambda result: np.testing.assert_array_equal(
        result, a @ b, err_msg=f"{lib} int32 matmul differs from numpy"))


@pytest.mark.benchmark(group="matmul")
@pytest.mark.parametrize("lib", LIBS)
def test_matmul_einsum_batched(benchmark, lib):
    """einsum('bij,bjk->bik') of 64 128x256 by 256x128 float32 matrices (numpy's einsum with its contraction
    planner, which calls BLAS)."""
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((64, 128, 256), dtype=np.float32), rng.standard_normal((64, 256, 128), dtype=np.float32)
    if lib == "numpy":
        def call(): return np.einsum("bij,bjk->bik", a, b, optimize=True)
    elif lib == "torch":
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        def call(): return torch.einsum("bij,bjk->bik", ta, tb)
    else:
        from nbgrad import Tensor
        na, nb = nbgrad_tensor(a), nbgrad_tensor(b)
        def call(): return Tensor.einsum("bij,bjk->bik", na, nb).realize()
    result = call()
    np.testing.assert_allclose(result if lib == "numpy" else result.numpy(), a @ b, rtol=1e-4, atol=1e-3,
                               err_msg=f"{lib} einsum differs from numpy's product")
    if lib == "nbgrad": finish_nbgrad_warm_up(benchmark, call)
    benchmark(call)


@pytest.mark.benchmark(group="optim")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_optim_adam_step(benchmark, lib):
    """One Adam step of four 1024x1024 and four 1024 float32 parameters with fixed gradients (torch: its default,
    multi-tensor implementation); the parameters after a first step are checked against numpy's update."""
    rng = np.random.default_rng(7)
    values = [rng.standard_normal(shape, dtype=np.float32) for shape in [(1024, 1024)] * 4 + [(1024,)] * 4]
    grads = [rng.standard_normal(v.shape, dtype=np.float32) for v in values]
    expected = [v - 1e-3 * g / (np.abs(g) + 1e-8) for v, g in zip(values, grads)]   # Adam's first step: m = g, v = g^2
    if lib == "torch":
        params = [torch.tensor(v, requires_grad=True) for v in values]
        for p, g in zip(params, grads): p.grad = torch.from_numpy(g)
        opt = torch.optim.Adam(params, lr=1e-3)
        step = opt.step
    else:
        from nbgrad import Tensor
        from nbgrad.nn import optim
        params = [Tensor(v, requires_grad=True) for v in values]
        for p, g in zip(params, grads): p.grad = nbgrad_tensor(g)
        opt = optim.Adam(params, lr=1e-3)

        def step():
            with Tensor.train(): opt.step()
    step()
    for p, want in zip(params, expected):
        np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-5, atol=1e-6, err_msg=f"{lib} Adam step differs")
    if lib == "nbgrad": finish_nbgrad_warm_up(benchmark, step)
    benchmark(step)


# ---------------------------------------------------------------------------------------------
# train: one SGD step (sparse categorical cross-entropy) of an MLP 784-512-512-10 on a batch of 256,
# and of a small CNN (conv 32 3x3, relu, max-pool 2, conv 64 3x3, relu, max-pool 2, linear to 10) on
# a batch of 32x1x28x28
# ---------------------------------------------------------------------------------------------

LEARNING_RATE = 0.01


def uniform_layer(rng, shape, fan_in):
    """A weight or bias drawn as torch's Linear and Conv2d initialize them."""
    bound = fan_in ** -0.5
    return rng.uniform(-bound, bound, shape).astype(np.float32)


def mlp_data():
    """Weights (out, in) and biases, a batch of 256 inputs and labels."""
    rng = np.random.default_rng(0)
    layers = [784, 512, 512, 10]
    params = []
    for fan_in, fan_out in zip(layers, layers[1:]):
        params += [uniform_layer(rng, (fan_out, fan_in), fan_in), uniform_layer(rng, fan_out, fan_in)]
    return params, rng.standard_normal((256, 784), dtype=np.float32), rng.integers(0, 10, 256).astype(np.int32)


def cnn_data():
    """Two conv layers (Cout, Cin, 3, 3) and a linear layer (10, 64*5*5) with biases, 32 images and labels."""
    rng = np.random.default_rng(3)
    params = []
    for shape in [(32, 1, 3, 3), (64, 32, 3, 3), (10, 64 * 5 * 5)]:
        fan_in = int(np.prod(shape[1:]))
        params += [uniform_layer(rng, shape, fan_in), uniform_layer(rng, shape[0], fan_in)]
    return params, rng.standard_normal((32, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, 32).astype(np.int32)


HEADS = 4


def transformer_data():
    """A tied token embedding (512 tokens x 128) with learned positions, one pre-norm transformer block (causal
    attention of 4 heads, a 4x MLP with tanh GELU) and the logits, for 8 sequences of 64 tokens and each token's next."""
    rng = np.random.default_rng(5)
    vocab, length, width = 512, 64, 128
    params = [rng.standard_normal((vocab, width)).astype(np.float32) * np.float32(0.02),
              rng.standard_normal((length, width)).astype(np.float32) * np.float32(0.02)]
    for fan_out, fan_in in [(3 * width, width), (width, width), (4 * width, width), (width, 4 * width)]:
        params += [uniform_layer(rng, (fan_out, fan_in), fan_in), uniform_layer(rng, fan_out, fan_in)]
    tokens = rng.integers(0, vocab, (8, length + 1)).astype(np.int32)
    return params, tokens[:, :-1], tokens[:, 1:].reshape(-1)


def nbgrad_transformer(h, weights):
    emb, pos, w_qkv, b_qkv, w_out, b_out, w_up, b_up, w_down, b_down = weights
    batch, length = h.shape
    x = emb[h] + pos
    q, k, v = (t.reshape(batch, length, HEADS, -1).transpose(1, 2) for t in x.layernorm().linear(w_qkv.T, b_qkv).chunk(3, dim=-1))
    x = x + q.scaled_dot_product_attention(k, v, is_causal=True).transpose(1, 2).reshape(batch, length, -1).linear(w_out.T, b_out)
    x = x + x.layernorm().linear(w_up.T, b_up).gelu().linear(w_down.T, b_down)
    return x.layernorm().linear(emb.T).reshape(batch * length, -1)


def torch_transformer(h, weights):
    emb, pos, w_qkv, b_qkv, w_out, b_out, w_up, b_up, w_down, b_down = weights
    batch, length = h.shape
    x = emb[h] + pos
    normed = F.layer_norm(x, x.shape[-1:])
    q, k, v = (t.reshape(batch, length, HEADS, -1).transpose(1, 2) for t in F.linear(normed, w_qkv, b_qkv).chunk(3, dim=-1))
    attended = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(batch, length, -1)
    x = x + F.linear(attended, w_out, b_out)
    x = x + F.linear(F.gelu(F.linear(F.layer_norm(x, x.shape[-1:]), w_up, b_up), approximate="tanh"), w_down, b_down)
    return F.linear(F.layer_norm(x, x.shape[-1:]), emb).reshape(batch * length, -1)


def nbgrad_mlp(h, weights):
    for i in range(0, len(weights) - 2, 2): h = h.linear(weights[i].T, weights[i + 1]).relu()
    return h.linear(weights[-2].T, weights[-1])


def torch_mlp(h, weights):
    for i in range(0, len(weights) - 2, 2): h = torch.relu(F.linear(h, weights[i], weights[i + 1]))
    return F.linear(h, weights[-2], weights[-1])


def nbgrad_cnn(h, weights):
    h = h.conv2d(weights[0], weights[1]).relu().max_pool2d(2)
    h = h.conv2d(weights[2], weights[3]).relu().max_pool2d(2)
    return h.flatten(1).linear(weights[4].T, weights[5])


def torch_cnn(h, weights):
    h = F.max_pool2d(torch.relu(F.conv2d(h, weights[0], weights[1])), 2)
    h = F.max_pool2d(torch.relu(F.conv2d(h, weights[2], weights[3])), 2)
    return F.linear(h.flatten(1), weights[4], weights[5])


# model -> (data, nbgrad forward, torch forward)
MODELS = {"mlp": (mlp_data, nbgrad_mlp, torch_mlp), "cnn": (cnn_data, nbgrad_cnn, torch_cnn),
          "transformer": (transformer_data, nbgrad_transformer, torch_transformer)}


def nbgrad_step(model, device="CPU"):
    from nbgrad import Tensor
    data, forward, _ = MODELS[model]
    params, x, y = data()
    weights = [Tensor(p, device=device, requires_grad=True).realize() for p in params]
    inputs, labels = nbgrad_tensor(x, device), nbgrad_tensor(y, device)

    def step():
        loss = forward(inputs, weights).sparse_categorical_crossentropy(labels)
        for w in weights: w.grad = None
        loss.backward()
        for w in weights: w.assign(w.detach() - LEARNING_RATE * w.grad)
        return loss.realize(*weights)
    return step, weights


def torch_step(model, device="CPU"):
    data, _, forward = MODELS[model]
    params, x, y = data()
    weights = [torch.tensor(p, device=torch_device(device), requires_grad=True) for p in params]
    inputs, labels = torch.from_numpy(x).to(torch_device(device)), torch.from_numpy(y).long().to(torch_device(device))

    def step():
        loss = F.cross_entropy(forward(inputs, weights), labels)
        for w in weights: w.grad = None
        loss.backward()
        with torch.no_grad():
            for w in weights: w -= LEARNING_RATE * w.grad
        return loss
    return step, weights


_torch_first_step = {}


def torch_first_step(model):
    """torch's loss and updated weights after one step from the initial weights: the reference."""
    if model not in _torch_first_step:
        step, weights = torch_step(model)
        _torch_first_step[model] = step().item(), [w.detach().numpy().copy() for w in weights]
    return _torch_first_step[model]


def benchmark_train_step(benchmark, model, lib, tinyjit=False):
    step, weights = (nbgrad_step if lib == "nbgrad" else torch_step)(model)
    reference_loss, reference_weights = torch_first_step(model)
    assert abs(step().item() - reference_loss) < 1e-4, f"{lib} first {model} loss differs from torch"
    for got, want in zip(weights, reference_weights):
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-4, atol=1e-5, err_msg=f"{lib} {model} update differs")
    if lib == "nbgrad" and tinyjit:
        from nbgrad import TinyJit
        step = TinyJit(step)
    if lib == "nbgrad": finish_nbgrad_warm_up(benchmark, step)
    benchmark(step)


@pytest.mark.benchmark(group="train")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
@pytest.mark.parametrize("model", list(MODELS))
def test_train_sgd_step(benchmark, model, lib):
    benchmark_train_step(benchmark, model, lib)


@pytest.mark.benchmark(group="train")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
@pytest.mark.parametrize("model", list(MODELS))
def test_train_sgd_step_tinyjit(benchmark, model, lib):
    """The same steps, nbgrad's wrapped in TinyJit (its kernels recorded once, then replayed); torch's as above."""
    benchmark_train_step(benchmark, model, lib, tinyjit=True)


@pytest.fixture
def busy_core():
    """Other processes spinning on BUSY_CORES cores (default 1) while the benchmark runs, and only then: scoped to
    the module, they kept spinning through the benchmarks defined after these (conv5x5 took twice its time)."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(int(os.getenv("BUSY_CORES", "1")))]
    yield
    for spinner in spinners:
        spinner.kill()
        spinner.wait()


@pytest.mark.benchmark(group="train-busy-core")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
@pytest.mark.parametrize("model", list(MODELS))
def test_train_sgd_step_with_a_busy_core(benchmark, busy_core, model, lib):
    step, _ = (nbgrad_step if lib == "nbgrad" else torch_step)(model)
    step()
    if lib == "nbgrad": finish_nbgrad_warm_up(benchmark, step)
    benchmark(step)


CONV5_SHAPES = ((128, 32, 24, 24), (32, 32, 5, 5))


@pytest.mark.benchmark(group="conv_transpose")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_conv_transpose_stride2_forward_backward(benchmark, lib):
    rng = np.random.default_rng(8)
    x_data, w_data = rng.standard_normal((8, 32, 32, 32), dtype=np.float32), rng.standard_normal((32, 16, 3, 3), dtype=np.float32)
    args = dict(stride=2, padding=1, output_padding=1)
    if lib == "nbgrad":
        from nbgrad import Tensor
        x, w = Tensor(x_data, requires_grad=True).realize(), Tensor(w_data, requires_grad=True).realize()

        def step():
            x.grad = w.grad = None
            x.conv_transpose2d(w, **args).square().sum().backward()
            return Tensor.realize(x.grad, w.grad)
    else:
        x, w = torch.tensor(x_data, requires_grad=True), torch.tensor(w_data, requires_grad=True)

        def step():
            x.grad = w.grad = None
            F.conv_transpose2d(x, w, **args).square().sum().backward()
    step()
    tx, tw = torch.tensor(x_data, requires_grad=True), torch.tensor(w_data, requires_grad=True)
    F.conv_transpose2d(tx, tw, **args).square().sum().backward()
    for got, want in zip((x.grad.numpy(), w.grad.numpy()), (tx.grad.numpy(), tw.grad.numpy())):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-2)
    if lib == "nbgrad": finish_nbgrad_warm_up(benchmark, step)
    benchmark(step)


@pytest.mark.benchmark(group="conv5x5")
@pytest.mark.parametrize("lib", ["nbgrad", "torch"])
def test_conv5x5_forward_backward(benchmark, lib):
    rng = np.random.default_rng(5)
    x_data, w_data = (rng.standard_normal(shape).astype(np.float32) for shape in CONV5_SHAPES)
    if lib == "nbgrad":
        from nbgrad import Tensor
        x, w = Tensor(x_data, requires_grad=True).realize(), Tensor(w_data, requires_grad=True).realize()

        def step():
            x.grad = w.grad = None
            x.conv2d(w).sum().backward()
            return Tensor.realize(x.grad, w.grad)
        grads = lambda: (x.grad.numpy(), w.grad.numpy())
    else:
        x, w = torch.tensor(x_data, requires_grad=True), torch.tensor(w_data, requires_grad=True)

        def step():
            x.grad = w.grad = None
            F.conv2d(x, w).sum().backward()
        grads = lambda: (x.grad.numpy(), w.grad.numpy())
    step()
    tx, tw = torch.tensor(x_data, requires_grad=True), torch.tensor(w_data, requires_grad=True)
    F.conv2d(tx, tw).sum().backward()
    for got, want in zip(grads(), (tx.grad.numpy(), tw.grad.numpy())):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-2)
    if lib == "nbgrad": finish_nbgrad_warm_up(benchmark, step)
    benchmark(step)
