"""threefry2x32 counter-based generator (bit-exact with tinygrad 0.9.0) and its distributions."""
from nbgrad.random.threefry import (  # noqa: F401
    PARALLEL_THRESHOLD, BLOCK_PAIRS,
    threefry_bits, uniform_float32, normal_float32,
    rand_numpy, randn_numpy, uniform_numpy, randint_numpy, normal_numpy, kaiming_uniform_numpy,
    Threefry,
)

__all__ = [
    "PARALLEL_THRESHOLD", "BLOCK_PAIRS",
    "threefry_bits", "uniform_float32", "normal_float32",
    "rand_numpy", "randn_numpy", "uniform_numpy", "randint_numpy", "normal_numpy",
    "kaiming_uniform_numpy", "Threefry",
]
