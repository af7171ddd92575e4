"""A test helper: an nbgrad result equal to a numpy reference in shape, dtype and every value."""
import numpy as np
from nbgrad import Tensor, dtypes

NP_DTYPES = {"bool": dtypes.bool, "int8": dtypes.int8, "uint8": dtypes.uint8, "int16": dtypes.int16, "uint16": dtypes.uint16,
             "int32": dtypes.int32, "uint32": dtypes.uint32, "int64": dtypes.int64, "uint64": dtypes.uint64,
             "float16": dtypes.float16, "float32": dtypes.float32, "float64": dtypes.float64}
NB_OF = {np.dtype(name): dt for name, dt in NP_DTYPES.items()}


def check_same(out: Tensor, ref):
  ref = np.asarray(ref)
  assert isinstance(out.shape, tuple) and all(type(s) is int for s in out.shape), out.shape
  assert out.shape == ref.shape, (out.shape, ref.shape)
  assert out.dtype == NB_OF[ref.dtype], (out.dtype, ref.dtype)
  got = out.numpy()
  assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, got.dtype, ref.shape, ref.dtype)
  np.testing.assert_array_equal(got, ref)
