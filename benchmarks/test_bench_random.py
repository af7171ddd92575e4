"""Random benchmarks: 16M float32 draws from nbgrad's threefry generator, numpy's default_rng and torch.

Each library draws once before timing (nbgrad compiles or loads its generator kernel then). nbgrad's
draw is realized on every call, so the bits are really generated each time.
Run: python -m pytest benchmarks/ --benchmark-json=/tmp/bench.json && python benchmarks/report.py /tmp/bench.json
"""
import numpy as np
import pytest
import torch

N = 1 << 24
LIBS = ["nbgrad", "numpy", "torch"]


def draw(lib: str, kind: str):
    if lib == "numpy":
        rng = np.random.default_rng(0)
        return (lambda: rng.random(N, dtype=np.float32)) if kind == "rand" else \
               (lambda: rng.standard_normal(N, dtype=np.float32))
    if lib == "torch":
        torch.manual_seed(0)
        return (lambda: torch.rand(N)) if kind == "rand" else (lambda: torch.randn(N))
    from nbgrad import Tensor
    Tensor.manual_seed(0)
    return (lambda: Tensor.rand(N).realize()) if kind == "rand" else (lambda: Tensor.randn(N).realize())


def check(lib: str, kind: str, values):
    """A fast wrong answer must not pass: the warm-up draw is checked for range and moments."""
    values = values.numpy() if lib in ("nbgrad", "torch") else values
    assert values.shape == (N,) and values.dtype == np.float32
    if kind == "rand":
        assert 0.0 <= values.min() and values.max() < 1.0 and abs(values.mean() - 0.5) < 1e-3
    else:
        assert abs(values.mean()) < 1e-3 and abs(values.std() - 1.0) < 1e-3


@pytest.mark.benchmark(group="random")
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("kind", ["rand", "randn"])
def test_random_16M(benchmark, lib, kind):
    call = draw(lib, kind)
    check(lib, kind, call())
    benchmark(call)
