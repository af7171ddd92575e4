"""Data sets downloaded once into the cache folder (nbgrad.helpers.fetch), as uint8 tensors: tinygrad's mnist()."""
from __future__ import annotations
import gzip
import numpy as np
from nbgrad.helpers import fetch
from nbgrad.tensor import Tensor

MNIST_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
# an idx file's first 4 bytes: 0, 0, the type (8: unsigned bytes) and the number of dims
_IDX_MAGIC = {1: b"\x00\x00\x08\x01", 3: b"\x00\x00\x08\x03"}


def _idx(file: str, dims: int) -> np.ndarray:
  """The uint8 array in a gzipped idx file of MNIST_URL, checked against its header."""
  with gzip.open(fetch(MNIST_URL + file)) as f: data = f.read()
  header = 4 + 4 * dims
  if data[:4] != _IDX_MAGIC[dims]: raise ValueError(f"{file} is not an idx file of {dims}-d unsigned bytes (it starts {data[:4]!r})")
  shape = tuple(int(n) for n in np.frombuffer(data[4:header], ">u4"))
  if len(data) - header != int(np.prod(shape)):
    raise ValueError(f"{file} holds {len(data) - header} bytes after its header, its shape {shape} needs {int(np.prod(shape))}")
  return np.frombuffer(data, np.uint8, offset=header).reshape(shape)


def mnist() -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """MNIST's training images (60000, 1, 28, 28), training labels (60000,), test images (10000, 1, 28, 28) and
  test labels (10000,), all uint8."""
  def images(file): return Tensor(_idx(file, 3)).reshape(-1, 1, 28, 28)
  return (images("train-images-idx3-ubyte.gz"), Tensor(_idx("train-labels-idx1-ubyte.gz", 1)),
          images("t10k-images-idx3-ubyte.gz"), Tensor(_idx("t10k-labels-idx1-ubyte.gz", 1)))
