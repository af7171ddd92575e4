"""Shared set-up for the benchmarks: thread counts, input data, machine facts for the JSON report."""
import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# nbgrad first, as the README advises: its thread settings (nbgrad/__init__.py) are read when numpy's BLAS and
# numba's thread pool start, and every library timed here runs in this one process under them.
import nbgrad  # noqa: E402,F401
import numpy as np
import pytest
import torch

# Every library gets the whole machine: numba's parallel kernels use all cores by default
# (NUMBA_NUM_THREADS), so torch must too or the comparison measures thread counts.
torch.set_num_threads(os.cpu_count())

VECTOR_SIZE = 1 << 24   # 16M float32 = 64 MiB per array
MATRIX_SHAPE = (4096, 4096)


@pytest.fixture(scope="session")
def vectors():
    """Three 16M-element float32 arrays drawn from a standard normal."""
    rng = np.random.default_rng(0)
    return tuple(rng.standard_normal(VECTOR_SIZE, dtype=np.float32) for _ in range(3))


@pytest.fixture(scope="session")
def matrix():
    """One 4096x4096 float32 array drawn from a standard normal (as a 1-tuple, like `vectors`)."""
    rng = np.random.default_rng(1)
    return (rng.standard_normal(MATRIX_SHAPE, dtype=np.float32),)


@pytest.fixture(scope="session")
def half_vectors():
    """Two 16M-element float16 arrays drawn from a standard normal."""
    rng = np.random.default_rng(5)
    return tuple(rng.standard_normal(VECTOR_SIZE, dtype=np.float32).astype(np.float16) for _ in range(2))


@pytest.fixture(scope="session")
def images():
    """A batch of 16 feature maps of 64 channels, 56x56 float32, drawn from a standard normal (as a 1-tuple)."""
    rng = np.random.default_rng(4)
    return (rng.standard_normal((16, 64, 56, 56), dtype=np.float32),)


@pytest.fixture(scope="session")
def heads():
    """Attention values of 16 sequences, 8 heads, 256 positions, 64 features per head, float32 (as a 1-tuple)."""
    rng = np.random.default_rng(6)
    return (rng.standard_normal((16, 8, 256, 64), dtype=np.float32),)


@pytest.fixture(scope="session")
def double_vectors():
    """16M float64 values drawn from a standard normal (as a 1-tuple): what numpy makes by default."""
    return (np.random.default_rng(7).standard_normal(VECTOR_SIZE),)


@pytest.fixture(scope="session")
def small_vectors():
    """Three 64K-element float32 arrays drawn from a standard normal: 256 KiB each, a size where a call's fixed
    costs (scheduling, waking threads) count more than its loop."""
    rng = np.random.default_rng(8)
    return tuple(rng.standard_normal(1 << 16, dtype=np.float32) for _ in range(3))


@pytest.fixture(scope="session")
def mid_vectors():
    """Three 512K-element float32 arrays drawn from a standard normal: 2 MiB each, a size where a loop on one core
    costs about what waking a second thread does."""
    rng = np.random.default_rng(12)
    return tuple(rng.standard_normal(1 << 19, dtype=np.float32) for _ in range(3))


@pytest.fixture(scope="session")
def small_recurrence():
    """A 4x16 float32 state and a 16x16 float32 weight (scaled to keep tanh's inputs in its working range)."""
    rng = np.random.default_rng(9)
    return rng.standard_normal((4, 16), dtype=np.float32), rng.standard_normal((16, 16), dtype=np.float32) * np.float32(0.3)


@pytest.fixture(scope="session")
def attention_inputs():
    """Queries, keys, values and the output's gradient of causal attention: 8 samples x 8 heads x 256 positions x 64,
    float32."""
    rng = np.random.default_rng(10)
    return tuple(rng.standard_normal((8, 8, 256, 64), dtype=np.float32) for _ in range(4))


@pytest.fixture(scope="session")
def int_vectors():
    """16M int32 numerators over +-1e6 and divisors in [-50, 50] without 0."""
    rng = np.random.default_rng(2)
    divisors = rng.integers(1, 51, VECTOR_SIZE, dtype=np.int32) * rng.choice(np.array([-1, 1], np.int32), VECTOR_SIZE)
    return rng.integers(-10**6, 10**6, VECTOR_SIZE, dtype=np.int32), divisors


@pytest.fixture(scope="session")
def pieces():
    """Eight 1024x512 float32 arrays drawn from a standard normal."""
    rng = np.random.default_rng(3)
    return tuple(rng.standard_normal((1024, 512), dtype=np.float32) for _ in range(8))


@pytest.fixture(scope="session")
def gather_inputs():
    """1M float32 values and 100k int64 indices into them (repeats and negative ones included)."""
    rng = np.random.default_rng(2)
    return rng.standard_normal(1 << 20, dtype=np.float32), rng.integers(-(1 << 20), 1 << 20, 100_000)


@pytest.fixture(scope="session")
def column_inputs():
    """A 1M x 16 float32 matrix and 100k int64 row indices into it (repeats and negative ones included)."""
    rng = np.random.default_rng(4)
    return rng.standard_normal((1 << 20, 16), dtype=np.float32), rng.integers(-(1 << 20), 1 << 20, 100_000)


@pytest.fixture(scope="session")
def matrix_indices():
    """A 1024x1024 float32 matrix; 512 int64 column indices (repeats included); a (1024, 1024) int64 order of each
    row's elements; a (1024, 1) int64 label of each row."""
    rng = np.random.default_rng(6)
    return (rng.standard_normal((1024, 1024), dtype=np.float32), rng.integers(0, 1024, 512),
            rng.permuted(np.tile(np.arange(1024), (1024, 1)), axis=1), rng.integers(0, 1024, (1024, 1)))


@pytest.fixture(scope="session")
def sort_inputs():
    """1M float32 values, and a 1024x1024 float32 matrix whose rows are sorted."""
    rng = np.random.default_rng(5)
    return rng.standard_normal(1 << 20, dtype=np.float32), rng.standard_normal((1024, 1024), dtype=np.float32)


@pytest.fixture(scope="session")
def search_inputs():
    """1M sorted float32 values, and 100k float32 values to place among them."""
    rng = np.random.default_rng(6)
    return np.sort(rng.standard_normal(1 << 20, dtype=np.float32)), rng.standard_normal(100_000, dtype=np.float32)


@pytest.fixture(scope="session")
def pool_images():
    """A ResNet stem's output (16x64x112x112 float32) and smaller maps (16x64x28x28 float32)."""
    rng = np.random.default_rng(9)
    return rng.standard_normal((16, 64, 112, 112), dtype=np.float32), rng.standard_normal((16, 64, 28, 28), dtype=np.float32)


@pytest.fixture(scope="session")
def small_matrix():
    """A 64x64 float32 matrix drawn from a standard normal (as a 1-tuple)."""
    return (np.random.default_rng(10).standard_normal((64, 64), dtype=np.float32),)


@pytest.fixture(scope="session")
def class_scores():
    """Log-probabilities of 512 samples over 1024 classes (float32) and each sample's class (int64)."""
    rng = np.random.default_rng(8)
    logits = rng.standard_normal((512, 1024), dtype=np.float32)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True)), rng.integers(0, 1024, 512)


@pytest.fixture(scope="session")
def ctc_inputs():
    """Speech-sized CTC: log-probabilities of 200 frames x 32 samples x 40 classes (float32), 32 padded label rows
    of 20 to 40 labels (int64, never the blank 0), and each sample's frame and label counts."""
    rng = np.random.default_rng(7)
    logits = rng.standard_normal((200, 32, 40)).astype(np.float32)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return log_probs, rng.integers(1, 40, (32, 40)), rng.integers(150, 201, 32), rng.integers(20, 41, 32)


@pytest.fixture(scope="session")
def embedding_inputs():
    """An embedding table (50000 x 256 float32), a (64, 128) grid of int64 tokens, and a gradient for the lookup."""
    rng = np.random.default_rng(3)
    return (rng.standard_normal((50_000, 256), dtype=np.float32), rng.integers(0, 50_000, (64, 128)),
            rng.standard_normal((64, 128, 256), dtype=np.float32))


@pytest.fixture(scope="session")
def graph_messages():
    """A graph's node features (10000 x 64 float32), 200000 edges' target nodes (int64) and a message per edge."""
    rng = np.random.default_rng(13)
    return (rng.standard_normal((10_000, 64), dtype=np.float32), rng.integers(0, 10_000, 200_000),
            rng.standard_normal((200_000, 64), dtype=np.float32))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or "unknown"


def library_versions():
    import numba
    versions = {"numpy": np.__version__, "torch": torch.__version__, "numba": numba.__version__}
    try:
        import nbgrad
        versions["nbgrad"] = getattr(nbgrad, "__version__", "unversioned")
    except ImportError as e:
        versions["nbgrad"] = f"not importable ({e})"
    return versions


def blas_kernel():
    """The kernel family numpy's OpenBLAS runs (it picks one for the CPU; OPENBLAS_CORETYPE forces another), which
    sets the speed of numpy's products and of nbgrad's, which call it: on an AMD EPYC (Zen 5) the Haswell kernels
    ran 2048x2048 float32 at 222 GFLOP/s, the SkylakeX ones OpenBLAS picks itself at 429."""
    import ctypes
    import glob
    forced = f" (OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']})" if os.getenv("OPENBLAS_CORETYPE") else ""
    for path in glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*")):
        library = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
            if hasattr(library, name):
                corename = getattr(library, name)
                corename.restype = ctypes.c_char_p
                return f"OpenBLAS {corename().decode()}{forced}"
    return "not OpenBLAS"


def pytest_benchmark_update_machine_info(config, machine_info):
    import numba
    machine_info["cpu_model"] = cpu_model()
    machine_info["blas"] = blas_kernel()
    machine_info["cores"] = os.cpu_count()
    machine_info["torch_threads"] = torch.get_num_threads()
    machine_info["numba_threads"] = numba.config.NUMBA_NUM_THREADS
    machine_info["libraries"] = library_versions()
    if torch.cuda.is_available():
        from importlib.metadata import version, PackageNotFoundError
        machine_info["gpu"] = torch.cuda.get_device_name(0)
        gpu_libraries = {"torch": torch.__version__, "numba": numba.__version__}
        try:
            gpu_libraries["numba-cuda"] = version("numba-cuda")
        except PackageNotFoundError:
            gpu_libraries["numba-cuda"] = "not installed (numba's built-in numba.cuda)"
        machine_info["gpu_libraries"] = gpu_libraries
