"""Dtypes: the promotion lattice, the numpy mapping, casts between every pair, bitcast, bad dtypes.

Every expected value comes from API.md's text (re-implemented here), numpy or torch."""
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes
from nbgrad.dtype import cast_scalar, least_upper_dtype

NAMES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
         "float16", "bfloat16", "float32", "float64"]
ALL = [getattr(dtypes, n) for n in NAMES]
BY_NAME = dict(zip(NAMES, ALL))
NP = {n: np.dtype(n) for n in NAMES if n != "bfloat16"}
INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]

# --- the lattice, transcribed from API.md's "Dtype promotion" paragraph --------------------------
LATTICE_TEXT = """bool -> int8, uint8; int8 -> int16; int16 -> int32; int32 -> int64; int64 -> float16, bfloat16;
uint8 -> int16, uint16; uint16 -> int32, uint32; uint32 -> int64, uint64; uint64 -> float16, bfloat16;
float16 -> float32; bfloat16 -> float32; float32 -> float64"""
PRIORITY = NAMES  # "ties go to the lower-priority type in the order bool, int8, ..., float64"


def _parse_lattice(text):
  up = {n: set() for n in NAMES}
  for rule in text.replace("\n", " ").split(";"):
    src, dsts = rule.split("->")
    up[src.strip()] |= {d.strip() for d in dsts.split(",")}
  return up


UP = _parse_lattice(LATTICE_TEXT)


def _upper_set(name):
  """name and every type reachable from it along the arrows."""
  seen, todo = set(), [name]
  while todo:
    n = todo.pop()
    if n not in seen:
      seen.add(n)
      todo.extend(UP[n])
  return seen


def ref_lub(*names):
  """Least upper bound: the minimal common upper bounds, ties broken by the priority order."""
  common = set.intersection(*(_upper_set(n) for n in names))
  minimal = [c for c in common if not any(d != c and c in _upper_set(d) for d in common)]
  return min(minimal, key=PRIORITY.index)


def test_reference_lattice_matches_hand_picked_pairs():
  # guards the oracle itself: values read off the API.md text by hand
  hand = {("int8", "uint8"): "int16", ("int64", "uint64"): "float16", ("float16", "bfloat16"): "float32",
          ("bool", "bool"): "bool", ("uint32", "int8"): "int64", ("uint64", "int8"): "float16",
          ("uint16", "int16"): "int32", ("bool", "float64"): "float64", ("uint8", "uint16"): "uint16",
          ("int32", "uint32"): "int64", ("bfloat16", "int64"): "bfloat16", ("bool", "uint8"): "uint8"}
  assert {k: ref_lub(*k) for k in hand} == hand


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)), ids=lambda n: n)
def test_least_upper_dtype_every_pair(a, b):
  assert least_upper_dtype(BY_NAME[a], BY_NAME[b]) == BY_NAME[ref_lub(a, b)]


@pytest.mark.parametrize("names", [("int8",), ("bfloat16",), ("int8", "uint8", "bool"), ("uint8", "int8", "float16"),
                                   ("uint16", "int8", "uint32"), ("float16", "int64", "bfloat16"),
                                   ("bool", "bool", "bool"), ("uint64", "int64", "float64")], ids=str)
def test_least_upper_dtype_many_args(names):
  assert least_upper_dtype(*(BY_NAME[n] for n in names)) == BY_NAME[ref_lub(*names)]


# pairs where torch.promote_types agrees with the lattice
TORCH_PAIRS = [("bool", "int8"), ("bool", "uint8"), ("int8", "uint8"), ("uint8", "int16"), ("int16", "int32"),
               ("int32", "int64"), ("int8", "float16"), ("int64", "float16"), ("int32", "bfloat16"),
               ("float16", "bfloat16"), ("float16", "float32"), ("bfloat16", "float64"), ("uint8", "float32"),
               ("bool", "float64"), ("int64", "float32"), ("uint8", "int64")]


@pytest.mark.parametrize("a,b", TORCH_PAIRS, ids=lambda n: n)
def test_least_upper_dtype_vs_torch(a, b):
  expected = str(torch.promote_types(getattr(torch, a), getattr(torch, b))).replace("torch.", "")
  assert ref_lub(a, b) == expected
  assert least_upper_dtype(BY_NAME[a], BY_NAME[b]) == BY_NAME[expected]


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)), ids=lambda n: n)
def test_binary_op_result_dtype_every_pair(a, b):
  # the dtype is known when the op is built; nothing needs to run
  x, y = Tensor.zeros(3, dtype=BY_NAME[a]), Tensor.zeros(3, dtype=BY_NAME[b])
  assert (x + y).dtype == BY_NAME[ref_lub(a, b)]
  assert (x < y).dtype == dtypes.bool


# --- classification, aliases, numpy mapping ------------------------------------------------------
ITEMSIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
            "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


@pytest.mark.parametrize("name", NAMES)
def test_dtype_facts(name):
  dt = BY_NAME[name]
  assert dt.itemsize == ITEMSIZE[name]
  assert dtypes.is_float(dt) == (name in FLOATS)
  assert dtypes.is_int(dt) == (name in INTS)
  assert dtypes.is_unsigned(dt) == (name in UNSIGNED)
  assert hash(dt) == hash(BY_NAME[name]) and dt == BY_NAME[name]
  assert len({d for d in ALL if d == dt}) == 1


def test_aliases_and_defaults():
  assert dtypes.half == dtypes.float16 and dtypes.float == dtypes.float32 and dtypes.double == dtypes.float64
  assert dtypes.int == dtypes.int32 and dtypes.long == dtypes.int64
  assert dtypes.default_float == dtypes.float32 and dtypes.default_int == dtypes.int32


@pytest.mark.parametrize("name", [n for n in NAMES if n != "bfloat16"])
def test_numpy_mapping(name):
  dt = BY_NAME[name]
  assert np.dtype(dt.np) == NP[name]
  vals = np.array([0, 1, 0, 1, 1], dtype=NP[name]) if name == "bool" else np.array([0, 1, 2, 100, 7], dtype=NP[name])
  t = Tensor(vals)
  assert t.dtype == dt
  out = t.numpy()
  assert out.dtype == NP[name]
  np.testing.assert_array_equal(out, vals)
  # dtype= on list data
  t2 = Tensor(vals.tolist(), dtype=dt)
  assert t2.dtype == dt
  assert t2.numpy().dtype == NP[name]
  np.testing.assert_array_equal(t2.numpy(), vals)


def test_bfloat16_from_list():
  t = Tensor([1.5, -2.0, 3.0], dtype=dtypes.bfloat16)
  assert t.dtype == dtypes.bfloat16
  np.testing.assert_array_equal(t.cast(dtypes.float32).numpy(), np.array([1.5, -2.0, 3.0], np.float32))


@pytest.mark.parametrize("data,expected", [(1.5, "float32"), (1, "int32"), (True, "bool"), ([1, 2], "int32"),
                                           ([1, 2.5], "float32"), ([True, False], "bool"), ([[1.0], [2.0]], "float32")],
                         ids=str)
def test_default_dtypes_from_python(data, expected):
  assert Tensor(data).dtype == BY_NAME[expected]


# --- casts between every pair --------------------------------------------------------------------
SRC_VALUES = {
  "bool": [True, False, True, True, False],
  "int8": [0, 1, -1, 5, -7, 127, -128],
  "uint8": [0, 1, 5, 127, 128, 200, 255],
  "int16": [0, 1, -1, 5, -7, 127, -128, 300, -200, 32767, -32768],
  "uint16": [0, 1, 5, 127, 200, 300, 65535],
  "int32": [0, 1, -1, 5, -7, 127, -128, 300, -200, 70000, -70000, 2**31 - 1, -2**31],
  "uint32": [0, 1, 5, 200, 300, 70000, 2**31, 2**32 - 1],
  "int64": [0, 1, -1, 5, -7, 300, -200, 70000, -70000, 2**31 + 3, -(2**40)],
  "uint64": [0, 1, 5, 200, 65535, 2**32 + 5],
  "float16": [0.0, -0.0, 0.3, -1.5, 2.7, -2.7, 100.25, 255.5, 1000.5, 65504.0, float("nan"), float("inf"), -float("inf")],
  "float32": [0.0, -0.0, 0.3, -0.3, 1.5, -1.5, 2.7, -2.7, 100.25, -100.9, 127.9, 255.5, 1000.5, 65504.0, 7e4, 1e10,
              -1e10, float("nan"), float("inf"), -float("inf")],
  "float64": [0.0, -0.0, 0.3, -0.3, 1.5, -1.5, 2.7, -2.7, 100.25, -100.9, 127.9, 255.5, 1000.5, 65504.0, 7e4, 1e10,
              -1e10, 1e300, float("nan"), float("inf"), -float("inf")],
}
SRC_VALUES["bfloat16"] = SRC_VALUES["float32"]


def _source_array(src):
  """The values a `src` tensor holds, as a numpy array (bfloat16: float32 values rounded by torch)."""
  if src == "bfloat16":
    return torch.tensor(SRC_VALUES[src], dtype=torch.float32).to(torch.bfloat16).float().numpy()
  return np.array(SRC_VALUES[src], dtype=NP[src])


def _keep_for(vals, src, dst):
  """float -> int casts are only defined when the truncated value fits the target."""
  if src not in FLOATS or dst not in INTS: return vals
  info = np.iinfo(NP[dst])
  v = vals.astype(np.float64)
  with np.errstate(invalid="ignore"):
    ok = np.isfinite(v) & (np.trunc(v) >= int(info.min)) & (np.trunc(v) <= int(info.max))
    if dst in UNSIGNED: ok &= v >= 0
    if dst in ("int64", "uint64"): ok &= np.abs(v) < 2.0**62
  return vals[ok]


def _make(vals, name):
  if name == "bfloat16": return Tensor(vals.astype(np.float32)).cast(dtypes.bfloat16)
  return Tensor(vals)


def _values(t):
  return t.cast(dtypes.float32).numpy() if t.dtype == dtypes.bfloat16 else t.numpy()


def _expected_cast(vals, src, dst):
  with np.errstate(all="ignore"):
    if dst == "bfloat16":
      if src in INTS: vals = vals.astype(np.float64)  # exact for these values
      if src == "bool": vals = vals.astype(np.float32)
      return torch.from_numpy(np.ascontiguousarray(vals)).to(torch.bfloat16).float().numpy()
    return vals.astype(NP[dst])


@pytest.mark.parametrize("src,dst", list(itertools.product(NAMES, NAMES)), ids=lambda n: n)
def test_cast_every_pair(src, dst):
  vals = _keep_for(_source_array(src), src, dst)
  assert len(vals) >= 3
  out = _make(vals, src).cast(BY_NAME[dst])
  assert out.dtype == BY_NAME[dst]
  assert out.shape == (len(vals),)
  got = _values(out)
  if dst != "bfloat16": assert got.dtype == NP[dst]
  expected = _expected_cast(vals, src, dst)
  np.testing.assert_array_equal(got, expected)
  if dst in FLOATS:  # sign of zero survives float casts
    np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(expected[expected == 0]))


def test_float_to_int_truncates_toward_zero():
  x = Tensor(np.array([2.9, -2.9, 0.5, -0.5, 7.0, -7.999], np.float32))
  np.testing.assert_array_equal(x.cast(dtypes.int32).numpy(), np.array([2, -2, 0, 0, 7, -7], np.int32))
  np.testing.assert_array_equal(x.cast(dtypes.int8).numpy(), np.array([2, -2, 0, 0, 7, -7], np.int8))


@pytest.mark.parametrize("n", [2, 64], ids=["short", "long"])   # a serial kernel and a vectorized one
def test_out_of_range_float_to_int_converts_like_torch_in_every_kernel(n):
  """NaN, infinities and values past the type's range: what torch's and numpy's casts give on x86 (the int32
  or int64 minimum, small types wrapping the int32 value, unsigned ones shifted by half their range)."""
  values = np.resize(np.array([200.7, 300.2, -129.5, 65535.9, 3e9, -3e9, 1e10, 1e20, -1e20, 1.8e19, np.nan, np.inf,
                               -np.inf, -1.0], np.float32), n)
  for dt in (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64):
    for source in (np.float32, np.float64):
      expected = torch.from_numpy(values.astype(source)).to(getattr(torch, dt.name)).numpy()
      np.testing.assert_array_equal(Tensor(values.astype(source)).cast(dt).numpy(), expected, err_msg=f"{source} -> {dt.name}")


def test_a_constant_casts_to_an_int_as_the_kernels_cast():
  """A cast of a constant is folded, not run: NaN and values past the range were 0 or wrapped (Tensor(1e10) as int32
  1410065408) where the kernels, torch and numpy give the int32 minimum."""
  values = np.array([200.7, 300.2, -129.5, 65535.9, 3e9, -3e9, 1e10, 1e20, -1e20, 1.8e19, np.nan, np.inf, -np.inf, -1.0, -0.0])
  for dt in (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64):
    in_kernel = Tensor(np.resize(values, 64).astype(np.float32)).cast(dt).tolist()[:len(values)]   # checked against torch above
    assert [Tensor(v).cast(dt).item() for v in values] == [Tensor.full((2,), v).cast(dt).tolist()[0] for v in values] == in_kernel, dt
  for dt in (dtypes.int32, dtypes.int64):   # torch's own unsigned conversions past the range differ by position
    assert [Tensor(v).cast(dt).item() for v in values] == torch.from_numpy(values).to(getattr(torch, dt.name)).tolist()


def test_uint64_constants_past_int64():
  x = Tensor([0, 5], dtype=dtypes.uint64)
  assert (~x).tolist() == [2**64 - 1, 2**64 - 6]
  assert (x + 2**63).tolist() == [2**63, 2**63 + 5]
  assert Tensor.full((2,), 2**64 - 1, dtype=dtypes.uint64).tolist() == [2**64 - 1] * 2


# (source dtype, value, 16-bit float): rounding through float32 first rounded twice and missed by one half ulp
DOUBLE_ROUNDING_ROWS = [
  ("float64", 1 + 2**-11 + 2**-40, "float16", 1 + 2**-10),
  ("float64", -(1 + 2**-11 + 2**-40), "float16", -(1 + 2**-10)),
  ("float64", 1 + 2**-8 + 2**-40, "bfloat16", 1 + 2**-7),
  ("int64", 2**24 + 2**16 + 1, "bfloat16", 2**24 + 2**17),
  ("int32", 2**24 + 2**16 + 1, "bfloat16", 2**24 + 2**17),
  ("uint32", 2**31 + 2**23 + 1, "bfloat16", 2**31 + 2**24),
  ("float64", 2.0**-30, "float16", 0.0),   # under half of float16's smallest subnormal
  ("float64", 1e300, "float16", float("inf")),
]


@pytest.mark.parametrize("src,value,dst,expected", DOUBLE_ROUNDING_ROWS)
def test_casts_to_16_bit_floats_round_once(src, value, dst, expected):
  out = Tensor([value], dtype=getattr(dtypes, src)).cast(getattr(dtypes, dst))
  assert out.item() == expected, (out.item(), expected)
  folded = Tensor.full((2,), value, dtype=getattr(dtypes, src)).cast(getattr(dtypes, dst))   # a constant, cast without a kernel
  assert folded.tolist() == [expected] * 2, (folded.tolist(), expected)


def test_bool_casts():
  x = Tensor(np.array([0.0, -0.0, 0.1, -3.0, np.nan, np.inf], np.float32))
  np.testing.assert_array_equal(x.cast(dtypes.bool).numpy(), np.array([False, False, True, True, True, True]))
  y = Tensor(np.array([0, 2, -1, 256], np.int32))
  np.testing.assert_array_equal(y.cast(dtypes.bool).numpy(), np.array([False, True, True, True]))
  b = Tensor(np.array([True, False]))
  np.testing.assert_array_equal(b.cast(dtypes.float32).numpy(), np.array([1.0, 0.0], np.float32))
  np.testing.assert_array_equal(b.cast(dtypes.uint8).numpy(), np.array([1, 0], np.uint8))


BF16_ROUNDING = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, 1 - 2**-9, -(1 + 2**-8), -(1 + 3 * 2**-8),
                          3.0, 0.1, 1e-40, 3.4028234e38, 65504.0, -1e-3, 2**-126], np.float32)


def test_bfloat16_round_to_nearest_even():
  ref = torch.from_numpy(BF16_ROUNDING).to(torch.bfloat16)
  out = Tensor(BF16_ROUNDING).cast(dtypes.bfloat16)
  np.testing.assert_array_equal(out.cast(dtypes.float32).numpy(), ref.float().numpy())
  ref_bits = ref.view(torch.int16).numpy().view(np.uint16)
  np.testing.assert_array_equal(out.bitcast(dtypes.uint16).numpy(), ref_bits)


def test_bfloat16_nan_inf():
  out = Tensor(np.array([np.nan, np.inf, -np.inf, -0.0], np.float32)).cast(dtypes.bfloat16).cast(dtypes.float32).numpy()
  assert np.isnan(out[0]) and out[1] == np.inf and out[2] == -np.inf and out[3] == 0 and np.signbit(out[3])


NAN_BITS = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FA10000], np.uint32)


def test_bfloat16_nan_bits_alike_on_host_and_in_kernels():
  """A float32 NaN made bfloat16 keeps its sign and the top of its payload (quieted when that is all zero), whether
  the host rounds it (a tensor made with dtype=bfloat16) or a kernel casts it."""
  expected = np.array([0x7FC0, 0xFFC0, 0x7FC0, 0xFFC0, 0x7FFF, 0xFFFF, 0x7FA1], np.uint16)
  on_host = Tensor(NAN_BITS.view(np.float32), dtype=dtypes.bfloat16)
  in_kernel = Tensor(NAN_BITS).bitcast(dtypes.float32).cast(dtypes.bfloat16)
  np.testing.assert_array_equal(on_host.bitcast(dtypes.uint16).numpy(), expected)
  np.testing.assert_array_equal(in_kernel.bitcast(dtypes.uint16).numpy(), expected)


def test_bfloat16_from_torch_keeps_every_bit():
  bits = np.array([0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x3F80, 0x8000, 0x0001, 0xFF80], np.uint16)
  out = Tensor(torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16))
  assert out.dtype == dtypes.bfloat16
  np.testing.assert_array_equal(out.bitcast(dtypes.uint16).numpy(), bits)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "flipped", "expanded", "0d", "empty"])
def test_cast_non_contiguous_and_edge_shapes(layout):
  base = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) * 1.25
  t = Tensor(base)
  nb, ref = {"transposed": (lambda: t.T, lambda: base.T), "sliced": (lambda: t[::2, 1:], lambda: base[::2, 1:]),
             "flipped": (lambda: t.flip(1), lambda: base[:, ::-1]),
             "expanded": (lambda: t[1:2].expand(4, 4), lambda: np.broadcast_to(base[1:2], (4, 4))),
             "0d": (lambda: Tensor(np.array(-2.75, np.float32)), lambda: np.array(-2.75, np.float32)),
             "empty": (lambda: Tensor(np.zeros((0, 3), np.float32)), lambda: np.zeros((0, 3), np.float32))}[layout]
  for dst in ("int32", "float16", "float64", "uint8" if layout == "empty" else "int8"):
    out = nb().cast(BY_NAME[dst])
    expected = ref().astype(NP[dst])
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_cast_shorthands_as_torch_names_them():
  values = np.array([1.5, -2.5, 300.0], np.float32)
  for method, reference in (("float", torch.float32), ("half", torch.float16), ("double", torch.float64),
                            ("int", torch.int32), ("long", torch.int64), ("bool", torch.bool)):
    out, expected = getattr(Tensor(values), method)(), getattr(torch.from_numpy(values), method)().numpy()
    assert out.numpy().dtype == expected.dtype, method
    np.testing.assert_array_equal(out.numpy(), expected)


# --- bitcast -------------------------------------------------------------------------------------
BIT_PATTERNS = {
  "float32": np.array([0.0, -0.0, 1.0, -2.5, 3.4e38, 1e-40, np.inf, -np.inf], np.float32),
  "int32": np.array([0, 1, -1, 0x3F800000, -2**31, 2**31 - 1, 0x00800001], np.int32),
  "uint32": np.array([0, 1, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0x00000001], np.uint32),
  "float16": np.array([0.0, -0.0, 1.0, -2.5, 65504.0, 6e-8, np.inf], np.float16),
  "int16": np.array([0, 1, -1025, 0x3C00, -0x4000, 0x7BFF], np.int16),
  "uint16": np.array([0, 1, 0x3C00, 0xC000, 0x7BFF, 0x8001], np.uint16),
  "float64": np.array([0.0, -0.0, 1.0, -2.5, 1e300, 5e-324, np.inf], np.float64),
  "int64": np.array([0, 1, -1, 0x3FF0000000000000, -2**63, 2**63 - 1], np.int64),
  "uint64": np.array([0, 1, 0x3FF0000000000000, 0xBFF0000000000000, 2**64 - 1], np.uint64),
  "int8": np.array([0, 1, -1, 127, -128], np.int8),
  "uint8": np.array([0, 1, 127, 128, 255], np.uint8),
  "bool": np.array([True, False, True]),
}
BITCAST_PAIRS = [("float32", "int32"), ("float32", "uint32"), ("int32", "float32"), ("uint32", "float32"),
                 ("int32", "uint32"), ("uint32", "int32"), ("float16", "int16"), ("float16", "uint16"),
                 ("int16", "float16"), ("uint16", "float16"), ("int16", "uint16"), ("uint16", "int16"),
                 ("float64", "int64"), ("float64", "uint64"), ("int64", "float64"), ("uint64", "float64"),
                 ("int64", "uint64"), ("uint64", "int64"), ("int8", "uint8"), ("uint8", "int8"),
                 ("bool", "uint8"), ("bool", "int8"), ("float32", "float32")]


@pytest.mark.parametrize("src,dst", BITCAST_PAIRS, ids=lambda n: n)
def test_bitcast_same_itemsize(src, dst):
  vals = BIT_PATTERNS[src]
  out = Tensor(vals).bitcast(BY_NAME[dst])
  assert out.dtype == BY_NAME[dst]
  got = out.numpy()
  assert got.dtype == NP[dst]
  np.testing.assert_array_equal(got.view(np.uint8), vals.view(NP[dst]).view(np.uint8))


def _half_conversions():
  """(name, to float32, from float32) for each implementation of the kernels' float16 conversions on this CPU."""
  from nbgrad.jit import runtime
  found = [("bit arithmetic", runtime.soft_f16_to_f32, runtime.soft_f32_to_f16)]
  if runtime.HARDWARE_HALF: found.append(("instructions", runtime.hard_f16_to_f32, runtime.hard_f32_to_f16))
  return found


@pytest.mark.parametrize("name,to_f32,from_f32", _half_conversions(), ids=lambda v: v if isinstance(v, str) else "")
def test_float16_conversions_give_numpy_s_bits(name, to_f32, from_f32):
  """Every float16 bit pattern to float32 and back, and float32 values around every float16 boundary (rounding ties,
  the subnormals, overflow to inf), as numpy converts them; a NaN keeps its sign and the payload bits the narrower
  type holds, signaling or not (one left with no payload bits becomes the quiet NaN)."""
  from numba import njit
  @njit
  def convert(fn, values, out):
    for i in range(values.size): out[i] = fn(values[i])
    return out
  halves = np.arange(1 << 16, dtype=np.uint16)
  widened = convert(to_f32, halves, np.empty(halves.size, np.float32))
  np.testing.assert_array_equal(widened.view(np.uint32), halves.view(np.float16).astype(np.float32).view(np.uint32))
  np.testing.assert_array_equal(convert(from_f32, widened, np.empty(halves.size, np.uint16)), halves)
  steps = widened.view(np.uint32)[np.isfinite(widened)].astype(np.int64)
  near = np.concatenate([steps + d for d in (-4097, -4096, -4095, -1, 1, 4095, 4096, 4097)])
  near = near[(near >= 0) & (near < 1 << 32)].astype(np.uint32).view(np.float32)
  near = near[~np.isnan(near)]
  with np.errstate(over="ignore"):
    np.testing.assert_array_equal(convert(from_f32, near, np.empty(near.size, np.uint16)), near.astype(np.float16).view(np.uint16))
  signaling = np.array([0x7F800001, 0xFF802000, 0x7FA00000], np.uint32).view(np.float32)   # top payload bits kept, quiet bit off
  np.testing.assert_array_equal(convert(from_f32, signaling, np.empty(3, np.uint16)), np.array([0x7E00, 0xFC01, 0x7D00], np.uint16))


def test_bitcast_non_contiguous_input():
  base = np.arange(12, dtype=np.float32).reshape(3, 4) * -1.5
  out = Tensor(base).T.bitcast(dtypes.int32)
  assert out.shape == (4, 3)
  np.testing.assert_array_equal(out.numpy(), np.ascontiguousarray(base.T).view(np.int32))


def test_bitcast_bfloat16():
  bits = np.array([0x3F80, 0xC020, 0x0000, 0x8000, 0x7F80, 0x4049, 0x0001], np.uint16)
  as_f32 = (bits.astype(np.uint32) << 16).view(np.float32)
  bf = Tensor(bits).bitcast(dtypes.bfloat16)
  assert bf.dtype == dtypes.bfloat16
  np.testing.assert_array_equal(bf.cast(dtypes.float32).numpy(), as_f32)
  back = Tensor(as_f32).cast(dtypes.bfloat16).bitcast(dtypes.uint16)
  assert back.dtype == dtypes.uint16
  np.testing.assert_array_equal(back.numpy(), bits)
  np.testing.assert_array_equal(Tensor(bits.view(np.int16)).bitcast(dtypes.bfloat16).bitcast(dtypes.int16).numpy(),
                                bits.view(np.int16))


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("int32", "int64"), ("uint8", "uint16"),
                                     ("float64", "float32"), ("bfloat16", "float32"), ("bool", "int32"),
                                     ("float16", "float32"), ("int64", "int32")], ids=lambda n: n)
def test_bitcast_different_itemsize_raises(src, dst):
  t = Tensor.zeros(4, dtype=BY_NAME[src])
  with pytest.raises((ValueError, TypeError, RuntimeError)):
    t.bitcast(BY_NAME[dst])


# --- unknown dtypes ------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["not_a_dtype", "complex64", object(), 3.5, np.complex64], ids=repr)
def test_unknown_dtype_raises(bad):
  with pytest.raises((TypeError, ValueError)):
    Tensor([1.0, 2.0], dtype=bad)
  with pytest.raises((TypeError, ValueError)):
    Tensor([1.0, 2.0]).cast(bad)


def test_unsupported_numpy_dtype_raises():
  with pytest.raises((TypeError, ValueError)):
    Tensor(np.array([1 + 2j, 3j], dtype=np.complex64))


def test_dtypes_are_ordered_by_promotion_priority_and_name_numpy_scalar_types():
  assert dtypes.int16 >= dtypes.int8 and dtypes.float16 <= dtypes.float32 and not dtypes.float32 < dtypes.float16
  assert sorted([dtypes.float64, dtypes.bool, dtypes.int32]) == [dtypes.bool, dtypes.int32, dtypes.float64]
  assert dtypes.float32.np is np.float32 and dtypes.uint8.np is np.uint8 and issubclass(dtypes.int64.np, np.integer)


@pytest.mark.parametrize("default_float,default_int", [(dtypes.float16, dtypes.int64), (dtypes.bfloat16, dtypes.int16)])
def test_lists_follow_the_default_dtypes(default_float, default_int):
  saved = dtypes.default_float, dtypes.default_int
  try:
    dtypes.default_float, dtypes.default_int = default_float, default_int
    assert Tensor([1.5, 2.0]).dtype == default_float and Tensor([]).dtype == default_float
    assert Tensor([[1, 2]]).dtype == default_int
    np.testing.assert_array_equal(Tensor([1.5, -2.25]).float().numpy(), np.array([1.5, -2.25], np.float32))
    assert Tensor([1, 2**40]).dtype == (dtypes.int64 if default_int.itemsize < 8 else default_int)   # widened to hold it
  finally:
    dtypes.default_float, dtypes.default_int = saved


def test_default_float_from_the_environment():
  code = "import nbgrad; from nbgrad import Tensor; print(Tensor([1.5]).dtype, Tensor.rand(2).dtype, Tensor(2.0).dtype)"
  out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "DEFAULT_FLOAT": "HALF"},
                       capture_output=True, text=True, timeout=120)
  assert out.stdout.split() == ["dtypes.float16"] * 3, out.stderr[-2000:]
  bad = subprocess.run([sys.executable, "-c", "import nbgrad"], env={**os.environ, "DEFAULT_FLOAT": "int8"},
                       capture_output=True, text=True, timeout=120)
  assert bad.returncode != 0 and "DEFAULT_FLOAT" in bad.stderr


def test_numpy_arrays_as_operands_follow_torch():
  """An array operand (either side) is a tensor of its dtype, as torch takes it; a 0-d array is a scalar."""
  values = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]], np.float32)
  row32, row64 = np.array([1.0, 2.0, 4.0], np.float32), np.array([1.0, 2.0, 4.0])
  t, tt = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
  cases = [(lambda x: x + row32, lambda x: x + torch.from_numpy(row32)),
           (lambda x: row32 * x, lambda x: torch.from_numpy(row32) * x),
           (lambda x: row64 - x, lambda x: torch.from_numpy(row64) - x),
           (lambda x: x / np.array(2.0), lambda x: x / torch.tensor(2.0, dtype=torch.float64)),
           (lambda x: (x > 0).where(row32, x), lambda x: torch.where(x > 0, torch.from_numpy(row32), x))]
  total, total_t = None, None
  for fn, ref in cases:
    out = fn(t)
    expected = ref(tt)
    assert isinstance(out, Tensor) and out.dtype.name == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-6)
    total = out.sum() if total is None else total + out.sum()
    total_t = expected.sum() if total_t is None else total_t + expected.sum()
  total.backward()
  total_t.backward()
  np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-6)


def test_numpy_arrays_as_tensor_arguments_of_ops():
  """Ops whose arguments are tensors (matmul, linear, conv2d, gather, masked_fill, losses, attention, einsum) take
  numpy arrays too, as torch's functional API takes tensors made from them; the gradient reaches the Tensor."""
  rng = np.random.default_rng(5)
  x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3), (3, 4), (4,)))
  image, kernel = rng.standard_normal((1, 2, 5, 5)).astype(np.float32), rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
  index, mask, labels = np.array([[0, 2], [1, 1]]), np.array([[True, False, True], [False, False, True]]), np.array([1, 3])
  cases = [(lambda t: t @ w, lambda t: t @ torch.from_numpy(w)), (lambda t: t.dot(w), lambda t: t @ torch.from_numpy(w)),
           (lambda t: t.linear(w, b), lambda t: t @ torch.from_numpy(w) + torch.from_numpy(b)),
           (lambda t: t.gather(1, index), lambda t: t.gather(1, torch.from_numpy(index))),
           (lambda t: t.masked_fill(mask, 0.5), lambda t: t.masked_fill(torch.from_numpy(mask), 0.5)),
           (lambda t: (t @ w).sparse_categorical_crossentropy(labels), lambda t: torch.nn.functional.cross_entropy(t @ torch.from_numpy(w), torch.from_numpy(labels))),
           (lambda t: Tensor.einsum("ij,jk->ik", t, w), lambda t: torch.einsum("ij,jk->ik", t, torch.from_numpy(w))),
           (lambda t: t.scaled_dot_product_attention(x, x), lambda t: torch.nn.functional.scaled_dot_product_attention(t, *[torch.from_numpy(x)] * 2))]
  for fn, ref in cases:
    t, tt = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = fn(t), ref(tt)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-5, atol=1e-6)
  conv = Tensor(image).conv2d(kernel, b[:3], padding=1)
  np.testing.assert_allclose(conv.numpy(), torch.nn.functional.conv2d(torch.from_numpy(image), torch.from_numpy(kernel), torch.from_numpy(b[:3]), padding=1).numpy(), rtol=1e-5, atol=1e-5)
  with pytest.raises(TypeError, match="list"):
    Tensor(x).dot([[1.0], [2.0], [3.0]])


def test_numpy_functions_on_tensors():
  """A numpy script handed a Tensor: ufuncs nbgrad has and numpy's reductions give Tensors (keeping the graph),
  with numpy's keywords and defaults (np.std: ddof=0); other ufuncs run in numpy on the values."""
  values = np.array([[1.0, -2.0, 3.5], [4.0, 0.5, -7.0]], np.float32)
  t = Tensor(values, requires_grad=True)
  pairs = [(np.exp(t), np.exp(values)), (np.sqrt(np.abs(t)), np.sqrt(np.abs(values))), (np.float32(2) * t, 2 * values),
           (np.subtract(1, t), 1 - values), (np.maximum(t, 0.5), np.maximum(values, 0.5)), (values[0] - t, values[0] - values),
           (np.sum(t), np.sum(values)), (np.mean(t, axis=0, keepdims=True), np.mean(values, axis=0, keepdims=True)),
           (np.max(t, axis=1), np.max(values, axis=1)), (np.std(t), np.std(values)), (np.var(t, axis=1, ddof=1), np.var(values, axis=1, ddof=1)),
           (np.argmax(t), np.argmax(values)), (np.less(0.7, t), np.less(0.7, values))]
  for got, want in pairs:
    assert isinstance(got, Tensor)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
  np.testing.assert_allclose(np.arctan(t), np.arctan(values), rtol=1e-6)   # no Tensor op: numpy's result
  (np.float32(3) * t).sum().backward()
  np.testing.assert_array_equal(t.grad.numpy(), np.full(values.shape, 3, np.float32))
  with pytest.raises(TypeError, match="out="):
    np.sum(t, out=np.zeros(()))


def test_numpy_reductions_take_dtype_initial_and_where_as_numpy():
  values = np.array([[1.0, -2.0, 3.5], [4.0, 0.5, -7.0]], np.float32)
  t, u8 = Tensor(values), np.array([200, 100, 7], np.uint8)
  mask, row_mask = values > 0, np.array([True, False, True])
  pairs = [(np.sum(Tensor(u8), dtype=np.uint8), np.sum(u8, dtype=np.uint8)), (np.sum(t, dtype=np.float64), np.sum(values, dtype=np.float64)),
           (np.max(t, initial=10), np.max(values, initial=10)), (np.min(t, axis=0, initial=0), np.min(values, axis=0, initial=0)),
           (np.sum(t, axis=1, initial=5), np.sum(values, axis=1, initial=5)), (np.sum(t, where=mask), np.sum(values, where=mask)),
           (np.sum(t, axis=0, where=row_mask), np.sum(values, axis=0, where=row_mask)),
           (np.max(t, axis=1, where=mask, initial=-1), np.max(values, axis=1, where=mask, initial=-1)),
           (np.mean(t, axis=1, where=mask), np.mean(values, axis=1, where=mask)), (np.any(t > 3, where=mask), np.any(values > 3, where=mask)),
           (np.all(t > 0, axis=0, where=Tensor(mask)), np.all(values > 0, axis=0, where=mask)),
           (np.squeeze(Tensor(values[None, :, None]), axis=(0, 2)), np.squeeze(values[None, :, None], axis=(0, 2))),
           (np.add(t, [1.0, 2.0, 3.0]), np.add(values, [1.0, 2.0, 3.0]))]
  for got, want in pairs:
    assert isinstance(got, Tensor) and got.dtype.np == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
  with pytest.raises(TypeError, match="Tensor.std takes no where="): np.std(t, where=mask)
  with pytest.raises(TypeError, match="Tensor.mean takes no initial="): t.mean(initial=1)
  with pytest.raises(ValueError, match="cannot squeeze axis 1 of size 3"): np.squeeze(t, axis=1)


# Python floats at the edges of float32's and float16's rounding: halfway between neighbours (ties to even), just
# off halfway, subnormals and their halfway points, the largest finite values and just past them (inf, as numpy)
_F32_ONE_ULP = float(np.spacing(np.float32(1)))
ROUNDING_EDGES = [1 + _F32_ONE_ULP / 2, 1 + 3 * _F32_ONE_ULP / 2, 1 + _F32_ONE_ULP / 2 * (1 + 1e-9), 0.1, 1 / 3, -2.5e-38,
                  1e-45, 7e-46, 7.1e-46, 2.9802322387695312e-08, 5.960464477539063e-08, 8.940696716308594e-08,
                  1.0009765625 / 2 + 1 / 2, 2049.0, 2051.0, -2050.0000001, 65504.0, 65519.99, 65520.0,
                  3.4028234663852886e38, 3.4028235677973366e38, -1e39, -0.0, 1e-320]


@pytest.mark.parametrize("name", ["float32", "float16"])
def test_python_float_operands_round_as_numpy_casts(name):
  values = np.array(ROUNDING_EDGES)
  with np.errstate(over="ignore"): expected = values.astype(name)
  got = np.array([Tensor.full((), v, dtype=BY_NAME[name]).numpy() for v in ROUNDING_EDGES])
  np.testing.assert_array_equal(got, expected)
  assert (np.signbit(got) == np.signbit(expected)).all()
  scaled = Tensor.ones(len(ROUNDING_EDGES), dtype=BY_NAME[name]) * Tensor(values).cast(BY_NAME[name])
  np.testing.assert_array_equal(scaled.numpy(), expected)
  products = [(Tensor.ones(1, dtype=BY_NAME[name]) * v).numpy()[0] for v in ROUNDING_EDGES]   # the scalar operand path
  np.testing.assert_array_equal(np.array(products), expected)
  folded = np.array([cast_scalar(v, BY_NAME[name]) for v in ROUNDING_EDGES])   # the value a constant node holds
  np.testing.assert_array_equal(folded, expected.astype(np.float64))
  assert (np.signbit(folded) == np.signbit(expected)).all()
