"""Convolutions: ResNet-style 3x3 layers (stride 1, padding 1, float32), nbgrad with Winograd forced (WINO=1),
with the direct convolution forced (WINO=0) and with its own choice, against torch, in one run.

Layers: a batch of 16 with 64 channels at 56x56, 128 at 28x28 and 256 at 14x14, and a batch of 1 with 64
channels at 56x56. Each is timed forward, and forward with the gradients of input and weight of out.sum().
Every row records its effective rate (`gflops`: the direct convolution's FLOPs over the time, three
products per forward+backward) and, for nbgrad forward, `extra_memory_ratio`: the bytes the realize's buffers
reach at their peak besides its output, over the layer's input plus output bytes.
Run: python -m pytest benchmarks/test_bench_conv.py --benchmark-json=/tmp/bench.json && python benchmarks/report.py /tmp/bench.json
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from test_bench_linalg import finish_nbgrad_warm_up, torch_device

LAYERS = {"b16-c64-56": (16, 64, 56), "b16-c128-28": (16, 128, 28), "b16-c256-14": (16, 256, 14), "b1-c64-56": (1, 64, 56)}
DEFAULT_LAYER = "b16-c64-56"
CHOICES = {"nbgrad": -1, "nbgrad-wino": 1, "nbgrad-direct": 0}   # the WINO setting of each nbgrad row (-1: its own choice)
ROUNDS = 30   # fixed; with 15 the fastest call of one path still moved by 20% between rows on this shared machine


def conv_data(layer=DEFAULT_LAYER):
    batch, channels, size = LAYERS[layer]
    rng = np.random.default_rng(2)
    bound = (channels * 9) ** -0.5
    return rng.standard_normal((batch, channels, size, size), dtype=np.float32), \
        rng.uniform(-bound, bound, (channels, channels, 3, 3)).astype(np.float32)


def conv_flops(layer=DEFAULT_LAYER) -> int:
    batch, channels, size = LAYERS[layer]
    return 2 * batch * channels * channels * 9 * size * size


def conv_calls(lib, passes, device="CPU", layer=DEFAULT_LAYER):
    """The timed call of each library and a function giving its answer as numpy arrays: the output, and
    with a backward pass the gradients of the input and the weight of out.sum()."""
    backward = passes == "forward_backward"
    x, w = conv_data(layer)
    if lib == "torch":
        tx, tw = (torch.tensor(a, device=torch_device(device), requires_grad=backward) for a in (x, w))
        def call():
            out = F.conv2d(tx, tw, padding=1)
            if backward:
                tx.grad = tw.grad = None
                out.sum().backward()
            return out
        return call, lambda out: [out.detach().cpu().numpy()] + ([tx.grad.cpu().numpy(), tw.grad.cpu().numpy()] if backward else [])
    from nbgrad import Tensor
    nx, nw = (Tensor(a, device=device, requires_grad=backward).realize() for a in (x, w))
    def call():
        out = nx.conv2d(nw, padding=1)
        if not backward: return out.realize()
        nx.grad = nw.grad = None
        out.sum().backward()
        return out.realize(nx.grad, nw.grad)
    return call, lambda out: [out.numpy()] + ([nx.grad.numpy(), nw.grad.numpy()] if backward else [])


def extra_memory_ratio(layer) -> float:
    """The forward realize's peak of live buffers besides its output (GlobalCounters.mem_peak), over the
    layer's input plus output bytes."""
    from nbgrad import Tensor, GlobalCounters
    x, w = conv_data(layer)
    nx, nw = Tensor(x).realize(), Tensor(w).realize()
    GlobalCounters.reset()
    before = GlobalCounters.mem_used
    out = nx.conv2d(nw, padding=1).realize()
    return (GlobalCounters.mem_peak - before - out.nbytes()) / (x.nbytes + out.nbytes())


def chosen_path(layer, passes) -> str:
    """The path nbgrad's own rule takes for this layer (the default row is one of the two forced rows)."""
    from nbgrad import winograd
    batch, channels, size = LAYERS[layer]
    padded, weight = (batch, channels, size + 2, size + 2), (channels, channels, 3, 3)
    return "Winograd" if winograd.chosen(padded, weight, 1, "CPU") else "direct"


@pytest.mark.benchmark(group="conv")
@pytest.mark.parametrize("lib", [*CHOICES, "torch"])
@pytest.mark.parametrize("passes", ["forward", "forward_backward"])
@pytest.mark.parametrize("layer", list(LAYERS))
def test_conv2d_3x3(benchmark, monkeypatch, lib, passes, layer):
    if lib in CHOICES:
        from nbgrad.helpers import WINO
        monkeypatch.setattr(WINO, "value", CHOICES[lib])
    call, answers = conv_calls("nbgrad" if lib in CHOICES else lib, passes, layer=layer)
    reference_call, reference_answers = conv_calls("torch", passes, layer=layer)
    for got, want in zip(answers(call()), reference_answers(reference_call())):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max(), err_msg=f"{lib} conv2d differs from torch")
    if lib in CHOICES:
        if CHOICES[lib] == -1: benchmark.extra_info["path"] = chosen_path(layer, passes)
        finish_nbgrad_warm_up(benchmark, call)
        if passes == "forward": benchmark.extra_info["extra_memory_ratio"] = round(extra_memory_ratio(layer), 2)
    benchmark.pedantic(call, rounds=ROUNDS, warmup_rounds=1)
    if benchmark.stats is None: return   # --benchmark-disable: the answers are checked, nothing is timed
    benchmark.extra_info["gflops"] = round(conv_flops(layer) * (3 if passes == "forward_backward" else 1) / benchmark.stats.stats.min / 1e9, 1)
