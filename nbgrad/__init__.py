"""nbgrad: a lazy, fusing array library with automatic differentiation, compiled with numba."""
from nbgrad.dtype import dtypes, DType
from nbgrad.device import Device
from nbgrad.tensor import Tensor
from nbgrad.helpers import eager, GlobalCounters
from nbgrad import helpers

__all__ = ["Tensor", "Device", "dtypes", "DType", "eager", "GlobalCounters", "helpers"]
