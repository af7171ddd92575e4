"""Elementwise ops: unary, activations, binary, comparisons, where / masked_fill / clip / lerp.

Forward values against torch (CPU, float64) or numpy; result dtypes per API.md's promotion rules;
broadcasting, Python scalars on either side, in-place operators, special values, edge shapes."""
import json
import math
import operator
import os
import subprocess
import sys
import zlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from against_torch import grads_match
from nbgrad import Tensor, dtypes

NAMES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
         "float16", "bfloat16", "float32", "float64"]
DT = {n: getattr(dtypes, n) for n in NAMES}
NP = {n: np.dtype(n) for n in NAMES if n != "bfloat16"}
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
INTS = ["int8", "int16", "int32", "int64"] + UNSIGNED
FLOATS = ["float16", "bfloat16", "float32", "float64"]
NAN, INF = float("nan"), float("inf")

# (rtol, atol) by kind of op and dtype of the result
TOL = {
  "exact": {"float32": (0, 0), "float64": (0, 0), "float16": (2e-3, 1e-3), "bfloat16": (1e-2, 1e-2)},
  "near": {"float32": (3e-7, 0), "float64": (1e-15, 0), "float16": (2e-3, 1e-3), "bfloat16": (1e-2, 1e-2)},
  "trans": {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-12), "float16": (1e-2, 1e-2), "bfloat16": (4e-2, 4e-2)},
}


# --- helpers -------------------------------------------------------------------------------------
def rng_for(*key):
  return np.random.default_rng(zlib.crc32(repr(key).encode()))


def round_bf16(x):
  return torch.from_numpy(np.array(x, dtype=np.float64, order="C")).to(torch.bfloat16).double().numpy()


def stored(vals, name):
  """The values a tensor of dtype `name` holds: ints/bool in their numpy dtype, floats as float64."""
  vals = np.asarray(vals)
  with np.errstate(all="ignore"):
    if name == "bfloat16": return round_bf16(vals.astype(np.float64))
    if name in FLOATS: return vals.astype(NP[name]).astype(np.float64)
    return vals.astype(NP[name])


def make(vals, name):
  """A tensor of dtype `name` holding vals (0-d stays 0-d)."""
  vals = np.asarray(vals)
  if name == "bfloat16": return Tensor(np.array(vals, dtype=np.float32, order="C")).cast(dtypes.bfloat16)
  return Tensor(np.array(vals, dtype=NP[name], order="C"))


def values(t):
  return t.cast(dtypes.float32).numpy() if t.dtype == dtypes.bfloat16 else t.numpy()


def check(out, expected, name, kind="exact"):
  """out must have dtype `name`, expected's shape, and expected's values (floats: rounded to `name`, then tolerance)."""
  assert out.dtype == DT[name], f"dtype {out.dtype}, expected {name}"
  expected = np.asarray(expected)
  assert tuple(out.shape) == expected.shape, f"shape {out.shape}, expected {expected.shape}"
  got = values(out)
  assert got.shape == expected.shape
  if name not in FLOATS:
    assert got.dtype == NP[name]
    np.testing.assert_array_equal(got, expected.astype(NP[name]))
    return
  if name != "bfloat16": assert got.dtype == NP[name]
  rtol, atol = TOL[kind][name]
  np.testing.assert_allclose(got.astype(np.float64), stored(expected.astype(np.float64), name), rtol=rtol, atol=atol,
                             equal_nan=True)


def torch_ref(fn, *xs):
  """fn applied in float64 by torch to numpy inputs."""
  ts = [torch.from_numpy(np.array(x, dtype=np.float64, order="C")) for x in xs]
  with torch.no_grad():
    return fn(*ts).numpy()


# movement ops applied identically to the nbgrad tensor and the numpy array
MOVES = {
  "id": (lambda t: t, lambda a: a),
  "T": (lambda t: t.T, lambda a: a.T),
  "slice": (lambda t: t[::2, 1:4], lambda a: a[::2, 1:4]),
  "step2": (lambda t: t[:, ::2], lambda a: a[:, ::2]),
  "flip0": (lambda t: t.flip(0), lambda a: a[::-1]),
  "flip1": (lambda t: t.flip(1), lambda a: a[:, ::-1]),
  "expand34": (lambda t: t.expand(3, 4), lambda a: np.broadcast_to(a, (3, 4))),
  "permute": (lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
}
# layout name -> (base shape, move)
LAYOUTS = {"contig": ((3, 4), "id"), "0d": ((), "id"), "empty": ((0, 4), "id"), "size1": ((1, 4, 1), "id"),
           "transposed": ((4, 3), "T"), "sliced": ((6, 5), "slice"), "flipped": ((3, 4), "flip1"),
           "expanded": ((1, 4), "expand34"), "permuted": ((2, 3, 4), "permute")}


def laid_out(raw, name, layout_move):
  x = stored(raw, name)
  nb_move, np_move = MOVES[layout_move]
  return nb_move(make(x, name)), np_move(x)


# --- domains -------------------------------------------------------------------------------------
def U(lo, hi): return lambda rng, shape: rng.uniform(lo, hi, shape)
def I(lo, hi): return lambda rng, shape: rng.integers(lo, hi + 1, shape)
def HALVES(rng, shape): return rng.integers(-20, 21, shape) * 0.25        # exact .25/.5/.75 fractions and ties
def NONZERO(rng, shape): return rng.uniform(0.2, 3, shape) * rng.choice([-1.0, 1.0], shape)
def INZ(rng, shape): return rng.choice([-5, -3, -2, -1, 1, 2, 4, 5], shape)
def ZEROS(rng, shape): return rng.integers(-2, 3, shape) * 1.5             # many exact zeros


# --- unary ops -----------------------------------------------------------------------------------
# name: (nbgrad fn, torch reference (float64), float domain, int domain, numpy int reference or None, kind)
# kind "trans": int/bool inputs compute in float32; anything else keeps the input dtype (logical_not -> bool)
UNARY = {
  "neg": (lambda t: t.neg(), torch.neg, U(-5, 5), I(-10, 10), np.negative, "exact"),
  "-x": (lambda t: -t, torch.neg, U(-5, 5), I(-10, 10), np.negative, "exact"),
  "logical_not": (lambda t: t.logical_not(), torch.logical_not, ZEROS, I(-2, 2), np.logical_not, "exact"),
  "log": (lambda t: t.log(), torch.log, U(0.1, 10), I(1, 20), None, "trans"),
  "log2": (lambda t: t.log2(), torch.log2, U(0.1, 10), I(1, 20), None, "trans"),
  "exp": (lambda t: t.exp(), torch.exp, U(-5, 5), I(-5, 5), None, "trans"),
  "exp2": (lambda t: t.exp2(), torch.exp2, U(-5, 5), I(-5, 5), None, "trans"),
  "relu": (lambda t: t.relu(), torch.relu, U(-5, 5), I(-10, 10), lambda x: np.maximum(x, 0), "exact"),
  "sigmoid": (lambda t: t.sigmoid(), torch.sigmoid, U(-6, 6), I(-6, 6), None, "trans"),
  "sqrt": (lambda t: t.sqrt(), torch.sqrt, U(0, 10), I(0, 20), None, "trans"),
  "rsqrt": (lambda t: t.rsqrt(), torch.rsqrt, U(0.1, 10), I(1, 20), None, "trans"),
  "sin": (lambda t: t.sin(), torch.sin, U(-6, 6), I(-10, 10), None, "trans"),
  "cos": (lambda t: t.cos(), torch.cos, U(-6, 6), I(-10, 10), None, "trans"),
  "tan": (lambda t: t.tan(), torch.tan, U(-1.2, 1.2), I(-3, 3), None, "trans"),
  "trunc": (lambda t: t.trunc(), torch.trunc, HALVES, I(-10, 10), lambda x: x, "exact"),
  "ceil": (lambda t: t.ceil(), torch.ceil, HALVES, I(-10, 10), lambda x: x, "exact"),
  "floor": (lambda t: t.floor(), torch.floor, HALVES, I(-10, 10), lambda x: x, "exact"),
  "round": (lambda t: t.round(), torch.round, HALVES, None, None, "exact"),
  "square": (lambda t: t.square(), torch.square, U(-5, 5), I(-10, 10), lambda x: x * x, "exact"),
  "sign": (lambda t: t.sign(), torch.sign, ZEROS, I(-3, 3), np.sign, "exact"),
  "abs": (lambda t: t.abs(), torch.abs, U(-5, 5), I(-10, 10), np.abs, "exact"),
  "reciprocal": (lambda t: t.reciprocal(), torch.reciprocal, NONZERO, INZ, None, "trans"),
}
TRANSCENDENTAL = [n for n, row in UNARY.items() if row[5] == "trans"]
EXACT_INT_UNARY = {"int32", "uint8", "int8"}
ROUNDING = ("trunc", "ceil", "floor")


# Layouts that cost the engine a kernel variant of their own (0-d, strided) run on a representative
# subset of ops; the others (empty, size-1, flipped, expanded, permuted) run on every op.
SHARED_LAYOUTS = ("contig", "empty", "size1", "flipped", "expanded", "permuted")
ALL_LAYOUT_UNARY = ("neg", "logical_not", "exp", "sqrt", "sign", "round", "relu")
INT_TRANSPOSED_UNARY = ("neg", "exp")


def _unary_cases():
  cases = []
  for op, row in UNARY.items():
    for layout in (LAYOUTS if op in ALL_LAYOUT_UNARY else SHARED_LAYOUTS):
      cases.append(pytest.param(op, "float32", layout, id=f"{op}-float32-{layout}"))
    for name in ("float64", "float16", "bfloat16"): cases.append(pytest.param(op, name, "contig", id=f"{op}-{name}"))
    if row[3] is None: continue
    if op in TRANSCENDENTAL:
      names = ["int32", "bool"] + (["uint8", "int64"] if op in ("sqrt", "exp") else [])
    elif op in ROUNDING: names = ["int32"]
    elif op == "logical_not": names = ["int32", "uint8", "bool"]
    else: names = [n for n in ("int32", "int8", "uint8") if n in EXACT_INT_UNARY]
    for name in names:
      cases.append(pytest.param(op, name, "contig", id=f"{op}-{name}"))
      if name == "int32" and op in INT_TRANSPOSED_UNARY:
        cases.append(pytest.param(op, name, "transposed", id=f"{op}-{name}-transposed"))
  return cases


def _int_domain(op, name, rng, shape):
  if name == "bool": return rng.integers(0, 2, shape).astype(bool)
  raw = UNARY[op][3](rng, shape)
  if name in UNSIGNED: raw = np.abs(raw) + (raw == 0) * (op in ("log", "log2", "rsqrt", "reciprocal"))
  return raw


@pytest.mark.parametrize("op,name,layout", _unary_cases())
def test_unary(op, name, layout):
  fn, ref, fdom, _, npref, kind = UNARY[op]
  shape, move = LAYOUTS[layout]
  rng = rng_for(op, name, layout)
  raw = fdom(rng, shape) if name in FLOATS else _int_domain(op, name, rng, shape)
  t, x = laid_out(raw, name, move)
  out = fn(t)
  if op == "logical_not":
    check(out, np.logical_not(x), "bool")
  elif name in FLOATS:
    check(out, torch_ref(ref, x), name, kind)
  elif kind == "trans":  # int / bool inputs compute in float32
    check(out, torch_ref(ref, x.astype(np.float64)), "float32", "trans")
  else:
    with np.errstate(all="ignore"):
      check(out, npref(x), name)


# (op, inputs, float32 reference) special values as torch defines them
SPECIAL_UNARY = [
  ("log", [0.0, -0.0, -1.0, INF, NAN, -INF]), ("log2", [0.0, -1.0, INF, NAN]),
  ("exp", [INF, -INF, NAN, 100.0, -200.0]), ("exp2", [INF, -INF, NAN, 200.0, -200.0]),
  ("sqrt", [-1.0, 0.0, INF, NAN, -INF]), ("rsqrt", [0.0, INF, -1.0]),
  ("reciprocal", [0.0, -0.0, INF, -INF, NAN]), ("sigmoid", [INF, -INF, 100.0, -100.0, NAN]),
  ("sin", [NAN, INF, -INF]), ("cos", [NAN, INF]), ("neg", [INF, -INF, NAN]), ("abs", [-INF, INF, NAN]),
  ("relu", [INF, -INF, NAN]), ("square", [INF, -INF, NAN]), ("sign", [INF, -INF, 0.0, -0.0]),
  ("trunc", [INF, -INF, NAN]), ("ceil", [INF, -INF, NAN]), ("floor", [INF, -INF, NAN]), ("round", [INF, -INF, NAN]),
]
SPECIAL_ACT = [
  ("tanh", lambda t: t.tanh(), torch.tanh, [INF, -INF, 100.0, -100.0, NAN]),
  ("relu6", lambda t: t.relu6(), F.relu6, [INF, -INF]),
  ("hardtanh", lambda t: t.hardtanh(), F.hardtanh, [INF, -INF]),
  ("elu", lambda t: t.elu(), F.elu, [INF, -INF]),
  ("acosh_below_1", lambda t: t.acosh(), torch.acosh, [-1e30, -40000.0, -3.0, 0.5, -INF]),   # x^2 overflowed: inf, not nan
  ("hardswish_huge", lambda t: t.hardswish(), lambda x: (x.double() * F.relu6(x.double() + 3) / 6).float(), [3e38, -3e38, 1e30]),
]


# activations on int inputs compute in float32 (API.md): in the int dtype, 1 + |x| and x * relu6(x + 3) wrapped around
INT_ACTIVATIONS = {"softsign": F.softsign, "hardswish": F.hardswish, "gelu": lambda x: F.gelu(x, approximate="tanh"),
                   "swish": F.silu, "softplus": F.softplus, "mish": F.mish, "acosh": torch.acosh}


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32])
@pytest.mark.parametrize("name", list(INT_ACTIVATIONS))
def test_activations_of_int_inputs_compute_in_float32(name, dtype):
  info = np.iinfo(dtype)
  a = np.array([v for v in (info.min, info.min + 1, -8, -1, 0, 1, 3, 100, info.max - 1, info.max) if info.min <= v <= info.max], dtype)
  out = getattr(Tensor(a), name)()
  assert out.dtype == dtypes.float32
  expected = INT_ACTIVATIONS[name](torch.from_numpy(a.astype(np.float64))).numpy()
  np.testing.assert_allclose(out.numpy(), expected, rtol=2e-6, atol=1e-6)


# values near 0, where the exp/sigmoid formulas cancel, and far out, where x * x overflows: relative accuracy
# against torch in float64 (torch's own float32 tanh(1e-6) is exact; nbgrad's once was 7% off)
WIDE = np.concatenate([np.geomspace(1e-30, 1e30, 241), [0.0, 0.1, 0.2499, 0.25, 0.2501, 0.9, 1.0, 3.0]]).astype(np.float32)
PRECISION_ROWS = [
  ("tanh", lambda t: t.tanh(), torch.tanh, np.concatenate([WIDE, -WIDE])),
  ("sinh", lambda t: t.sinh(), torch.sinh, np.concatenate([WIDE[WIDE < 80], -WIDE[WIDE < 80]])),
  ("asinh", lambda t: t.asinh(), torch.asinh, np.concatenate([WIDE, -WIDE])),
  ("atanh", lambda t: t.atanh(), torch.atanh, np.concatenate([WIDE[WIDE < 1], -WIDE[WIDE < 1]])),
  ("acosh", lambda t: t.acosh(), torch.acosh, 1 + WIDE),
  ("softplus", lambda t: t.softplus(), F.softplus, np.concatenate([WIDE[WIDE < 1e4], -WIDE[WIDE < 80]])),
  ("softplus_beta_past_float32", lambda t: t.softplus(4), lambda x: F.softplus(x, beta=4),   # 4 * 3e38 overflows
   np.concatenate([WIDE, [1e38, 3e38], -WIDE[WIDE < 20]]).astype(np.float32)),
  ("gelu", lambda t: t.gelu(), lambda x: x * torch.sigmoid(x * (2 * 0.7978845608) * (1 + 0.044715 * x * x)),
   np.concatenate([WIDE[WIDE < 1e4], -WIDE[WIDE < 9]])),
]


@pytest.mark.parametrize("name,low,high", [("exp", -87.3, 88.72), ("exp2", -126.0, 127.99)])
def test_float32_exp_and_exp2_within_two_ulps_over_their_whole_range(name, low, high):
  """exp(x) as exp2(x * log2 e) was up to 62 ulps off near 88 (the product's rounding), and exp2(x) as exp(x * ln 2)
  34 ulps; torch's are within an ulp."""
  x = np.concatenate([np.linspace(low, high, 200_001), [high, low, 0.0, 1e-7, -1e-7]]).astype(np.float32)
  got = getattr(Tensor(x), name)().numpy().astype(np.float64)
  exact = getattr(np, name)(x.astype(np.float64))
  ulps = np.abs(got - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)
  assert ulps.max() <= 2, f"{name}({x[np.argmax(ulps)]}) is {ulps.max():.1f} ulps off"
  special = [np.inf, -np.inf, np.nan, 129.0, -160.0]
  np.testing.assert_array_equal(getattr(Tensor(special), name)().numpy(), getattr(torch, name)(torch.tensor(special)).numpy())


@pytest.mark.parametrize("name,low,high", [("exp", -745.1, 709.78), ("exp2", -1074.0, 1023.99)])
def test_float64_exp_and_exp2_within_an_ulp_over_their_whole_range(name, low, high):
  """float64 exponentials come from nbgrad's own series (libm's exp per element keeps loops from vectorizing): within
  an ulp of numpy's for normal results, within the smallest subnormal below them, and numpy's inf, 0 and nan."""
  rng = np.random.default_rng(21)
  x = np.concatenate([np.linspace(low, high, 100_001), rng.uniform(-1, 1, 50_000), [high, low, 0.0, -0.0, 1e-300, -1e-300]])
  got, want = getattr(Tensor(x), name)().numpy(), getattr(np, name)(x)
  normal = want >= np.finfo(np.float64).tiny
  ulps = np.abs(got - want)[normal] / np.spacing(want[normal])
  assert ulps.max() <= 1, f"{name}({x[normal][np.argmax(ulps)]!r}) is {ulps.max():.1f} ulps off"
  assert np.abs(got - want)[~normal].max(initial=0) <= 5e-324
  special = np.array([np.inf, -np.inf, np.nan, 710.0, 1025.0, -746.0, -1080.0, 1e308, -1e308])
  with np.errstate(over="ignore"): np.testing.assert_array_equal(getattr(Tensor(special), name)().numpy(), getattr(np, name)(special))


def test_float64_log_log2_and_log10_within_an_ulp_or_two():
  """float64 logarithms come from nbgrad's own series too: log10 within an ulp of the exact value, log within 1.5 and
  log2 within two (1.16, 1.67 and 0.69 at most here), from the smallest subnormal to the largest float; log(1) is 0,
  log10 of a power of 10 is exact, and the special values are numpy's. The exact values are numpy's in long double
  (the C library's): numpy's own float64 ones depend on the CPU (log10 1.58 ulps off on one without AVX-512)."""
  rng = np.random.default_rng(22)
  x = np.concatenate([np.exp(rng.uniform(np.log(5e-324), np.log(1.7e308), 100_000)), rng.uniform(0.5, 2.0, 100_000),
                      1 + rng.uniform(-1e-6, 1e-6, 20_000), [1.0, 2.0, 0.5, 5e-324, 1e-310, np.finfo(np.float64).max]])
  powers = 10.0 ** np.arange(-20, 23)
  np.testing.assert_array_equal(Tensor(powers).log10().numpy(), np.arange(-20, 23))
  for name, limit in (("log", 1.5), ("log2", 2), ("log10", 1)):
    got, want = getattr(Tensor(x), name)().numpy(), getattr(np, name)(x.astype(np.longdouble))
    assert got[x == 1.0].tolist() == [0.0]
    nonzero = want != 0
    ulps = np.abs(got - want)[nonzero] / np.spacing(np.abs(want[nonzero]).astype(np.float64))
    assert ulps.max() <= limit, f"{name}({x[nonzero][np.argmax(ulps)]!r}) is {ulps.max():.1f} ulps off"
    special = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan])
    with np.errstate(all="ignore"): np.testing.assert_array_equal(getattr(Tensor(special), name)().numpy(), getattr(np, name)(special))


def test_float32_log_and_log2_within_an_ulp():
  """Their series runs in float64 and each rounds once (float32 arithmetic and log2 * ln 2 were 4 ulps off near 1)."""
  rng = np.random.default_rng(13)
  x = np.concatenate([np.exp(rng.uniform(np.log(1e-44), np.log(3e38), 100_000)), rng.uniform(0.9, 1.1, 100_000)]).astype(np.float32)
  for name, got, want in (("log", Tensor(x).log(), np.log(x.astype(np.float64))), ("log2", Tensor(x).log2(), np.log2(x.astype(np.float64)))):
    got = got.numpy().astype(np.float64)
    ulps = np.abs(got - want) / np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert ulps.max() <= 1, f"{name}: {ulps.max():.1f} ulps at {x[np.argmax(ulps)]!r}"


def test_log1p_based_ops_within_a_few_ulps():
  """softplus, mish, acosh near 1, asinh and atanh take log1p by Kahan's method (a five-term series was 21, 25 and 22
  ulps off in the first three; asinh's series up to 0.25 was 8 ulps off at its end)."""
  rng = np.random.default_rng(14)
  rows = [("softplus", lambda t: t.softplus(), lambda x: np.logaddexp(0, x), rng.uniform(-20, 10, 100_000)),
          ("mish", lambda t: t.mish(), lambda x: x * np.tanh(np.logaddexp(0, x)), rng.uniform(-10, 10, 100_000)),
          ("acosh", lambda t: t.acosh(), np.arccosh, rng.uniform(1.0, 2.0, 100_000)),
          ("asinh", lambda t: t.asinh(), np.arcsinh, rng.uniform(-1.0, 1.0, 100_000)),
          ("atanh", lambda t: t.atanh(), np.arctanh, rng.uniform(-0.999, 0.999, 100_000))]
  for name, fn, ref, values in rows:
    x = values.astype(np.float32)
    want = ref(x.astype(np.float64))
    ulps = np.abs(fn(Tensor(x)).numpy().astype(np.float64) - want) / np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert ulps.max() <= 5, f"{name}: {ulps.max():.1f} ulps at {x[np.argmax(ulps)]!r}"


def test_float32_pow_within_an_ulp_for_large_exponents():
  """|b| ** e as exp(e * log|b|) in float32 lost up to 70 ulps (the product's rounding); torch's is within one."""
  rng = np.random.default_rng(11)
  b, e = rng.uniform(0.1, 100, 50_000).astype(np.float32), rng.uniform(-15, 15, 50_000).astype(np.float32)
  b64, e64 = b.astype(np.float64), e.astype(np.float64)
  cases = [("tensor ** tensor", Tensor(b) ** Tensor(e), np.power(b64, e64)),
           ("negative base", (-Tensor(b)) ** Tensor(np.round(e)), np.power(-b64, np.round(e64))),
           ("constant ** tensor", 2.5 ** Tensor(e), 2.5 ** e64)]
  for name, got, want in cases:
    got = got.numpy().astype(np.float64)
    keep = (np.abs(want) > 1.2e-38) & (np.abs(want) < 3e38)
    ulps = np.abs(got[keep] - want[keep]) / np.spacing(np.abs(want[keep]).astype(np.float32)).astype(np.float64)
    assert ulps.max() <= 1, f"{name}: {ulps.max():.1f} ulps"


@pytest.mark.parametrize("exponent", [4, 7, -5, 1000, 2**20 + 1, -(10**6), 2**24 + 1, 2**31 - 1])
@pytest.mark.parametrize("npdt", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_a_float_to_a_python_int_power_within_an_ulp_as_torch(npdt, exponent):
  """Past 3 a float to an int power is the POW op: multiplying by squares lost up to 200 ulps (float32 ** 1000) and
  1e5 (float64 ** (2 ** 20 + 1)); the sign of a negative base to an odd power is the exact power's (torch's float32
  power takes 2 ** 24 + 1 as 2 ** 24 on a CPU without AVX-512, and its infinities then lose their sign), and the
  gradient stays torch's."""
  values = np.concatenate([1 + np.linspace(-1e-3, 1e-3, 101), -1 - np.linspace(0, 1e-4, 11), [0.0, -0.0, 2.0, 0.5]]).astype(npdt)
  got = (Tensor(values) ** exponent).numpy()
  with np.errstate(over="ignore", divide="ignore"): expected = np.power(values.astype(np.longdouble), exponent)
  finite = np.isfinite(expected) & (np.abs(expected) > np.finfo(npdt).tiny) & (np.abs(expected) < np.finfo(npdt).max)
  ulps = np.abs(got[finite] - expected[finite]) / np.spacing(np.abs(expected[finite]).astype(npdt))
  assert ulps.max() <= 1, f"{ulps.max():.1f} ulps at {values[finite][np.argmax(ulps)]!r}"
  np.testing.assert_array_equal(np.signbit(got[~finite]), np.signbit(expected[~finite]))
  if abs(exponent) < 100:
    grads_match(lambda t: t ** exponent, lambda t: t ** exponent, values[values != 0].astype(np.float64))


def test_float32_sigmoid_far_out_relative_to_torch():
  x = np.linspace(-87, 87, 20_001).astype(np.float32)
  expected = torch.sigmoid(torch.from_numpy(x).double()).numpy()
  np.testing.assert_allclose(Tensor(x).sigmoid().numpy(), expected, rtol=5e-7, atol=0)


@pytest.mark.parametrize("fn,ref,values", [pytest.param(*r[1:], id=r[0]) for r in PRECISION_ROWS])
def test_float32_relative_accuracy_near_zero_and_far_out(fn, ref, values):
  got = fn(Tensor(values)).numpy().astype(np.float64)
  expected = ref(torch.from_numpy(values).double()).numpy().astype(np.float32).astype(np.float64)
  np.testing.assert_allclose(got, expected, rtol=1e-5, atol=0)


HALF_ROWS = [   # (name, nbgrad op, torch op, spread of the inputs)
  ("cos", lambda t: t.cos(), torch.cos, 4), ("tan", lambda t: t.tan(), torch.tan, 1),
  ("sigmoid", lambda t: t.sigmoid(), torch.sigmoid, 4), ("tanh", lambda t: t.tanh(), torch.tanh, 4),
  ("silu", lambda t: t.silu(), F.silu, 4), ("elu", lambda t: t.elu(), F.elu, 4), ("softplus", lambda t: t.softplus(), F.softplus, 4),
  ("mish", lambda t: t.mish(), F.mish, 4), ("gelu", lambda t: t.gelu(), lambda t: F.gelu(t, approximate="tanh"), 4),
  ("exp2", lambda t: t.exp2(), torch.exp2, 4), ("asinh", lambda t: t.asinh(), torch.asinh, 4),
  ("softmax", lambda t: t.softmax(-1), lambda t: torch.softmax(t, -1), 4),
  ("layernorm", lambda t: t.layernorm(), lambda t: F.layer_norm(t, t.shape[-1:]), 4),
  ("std_past_the_half_range_of_squares", lambda t: t.std(-1), lambda t: t.std(-1), 300),
  ("pow_fraction", lambda t: t.abs() ** 1.5, lambda t: t.abs() ** 1.5, 20), ("pow_integer", lambda t: t ** 3, lambda t: t ** 3, 6),
  ("pow_tensor", lambda t: t.abs() ** (t * 0.25), lambda t: t.abs() ** (t * 0.25), 3), ("rpow", lambda t: 3 ** t, lambda t: 3 ** t, 2),
]


@pytest.mark.parametrize("fn,ref,spread", [pytest.param(*r[1:], id=r[0]) for r in HALF_ROWS])
def test_float16_composites_round_once(fn, ref, spread):
  """A composite op on float16 is computed in float32 and rounded once, as torch does: within a couple of half
  ulps of the exact value (each step rounded to half gave cos 54% off, silu 16%)."""
  values = (np.random.default_rng(44).standard_normal((40, 50)) * spread).astype(np.float16)
  out = fn(Tensor(values))
  assert out.dtype == dtypes.float16
  exact = ref(torch.from_numpy(values).double()).numpy()
  np.testing.assert_allclose(out.numpy().astype(np.float64), exact, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("op,inputs", SPECIAL_UNARY, ids=[s[0] for s in SPECIAL_UNARY])
def test_unary_special_values(op, inputs):
  fn, ref, *_ = UNARY[op]
  x = np.array(inputs, np.float32)
  with torch.no_grad():
    expected = ref(torch.from_numpy(x)).numpy().astype(np.float64)
  check(fn(Tensor(x)), expected, "float32", UNARY[op][5])


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("op", ["sin", "tan", "neg", "sqrt", "trunc"])
def test_signed_zeros_keep_their_sign(op, name):
  """f(-0.0) is -0.0 for the odd functions, as torch gives it (float32 sin(-0.0) came out 0.0)."""
  x = np.array([-0.0, 0.0], np.float32)
  with torch.no_grad():
    expected = getattr(torch, op)(torch.tensor(x, dtype=getattr(torch, name))).float().numpy()
  got = getattr(Tensor(x, dtype=name), op)().float().numpy()
  np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


@pytest.mark.parametrize("name,fn,ref,inputs", SPECIAL_ACT, ids=[s[0] for s in SPECIAL_ACT])
def test_activation_special_values(name, fn, ref, inputs):
  x = np.array(inputs, np.float32)
  with torch.no_grad():
    expected = ref(torch.from_numpy(x)).numpy().astype(np.float64)
  check(fn(Tensor(x)), expected, "float32", "trans")


def test_logical_not_special_values():
  x = np.array([NAN, INF, 0.0, -0.0, -INF], np.float32)
  check(Tensor(x).logical_not(), np.array([False, False, True, True, False]), "bool")


def test_round_half_to_even():
  x = np.array([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, -3.5, 0.49999997, 2.5000002, -3.7, 4.0, 1e7 + 0.5], np.float32)
  check(Tensor(x).round(), torch.round(torch.from_numpy(x)).numpy(), "float32")
  np.testing.assert_array_equal(Tensor(x).round().numpy()[:8], np.array([0, 2, 2, 4, 0, -2, -2, -4], np.float32))


# --- activations ---------------------------------------------------------------------------------
# name: (nbgrad fn, torch reference (float64), domain); formulas follow tinygrad 0.9.0
ACTIVATIONS = {
  "elu": (lambda t: t.elu(), F.elu, U(-4, 4)),
  "elu(alpha=0.5)": (lambda t: t.elu(alpha=0.5), lambda x: F.elu(x, alpha=0.5), U(-4, 4)),
  "celu": (lambda t: t.celu(), F.celu, U(-4, 4)),
  "celu(alpha=2)": (lambda t: t.celu(alpha=2.0), lambda x: F.celu(x, alpha=2.0), U(-4, 4)),
  "swish": (lambda t: t.swish(), F.silu, U(-6, 6)),
  "silu": (lambda t: t.silu(), F.silu, U(-6, 6)),
  "relu6": (lambda t: t.relu6(), F.relu6, U(-4, 10)),
  "hardswish": (lambda t: t.hardswish(), F.hardswish, U(-5, 5)),
  "tanh": (lambda t: t.tanh(), torch.tanh, U(-4, 4)),
  "sinh": (lambda t: t.sinh(), torch.sinh, U(-3, 3)),
  "cosh": (lambda t: t.cosh(), torch.cosh, U(-3, 3)),
  "atanh": (lambda t: t.atanh(), torch.atanh, U(-0.9, 0.9)),
  "asinh": (lambda t: t.asinh(), torch.asinh, U(-3, 3)),
  "acosh": (lambda t: t.acosh(), torch.acosh, U(1.1, 5)),
  "hardtanh": (lambda t: t.hardtanh(), F.hardtanh, U(-3, 3)),
  "hardtanh(-2,3)": (lambda t: t.hardtanh(min_val=-2, max_val=3), lambda x: F.hardtanh(x, -2.0, 3.0), U(-4, 4)),
  "gelu": (lambda t: t.gelu(), lambda x: F.gelu(x, approximate="tanh"), U(-4, 4)),
  "quick_gelu": (lambda t: t.quick_gelu(), lambda x: x * torch.sigmoid(1.702 * x), U(-4, 4)),
  "leakyrelu": (lambda t: t.leakyrelu(), lambda x: F.leaky_relu(x, 0.01), U(-4, 4)),
  "leakyrelu(0.2)": (lambda t: t.leakyrelu(neg_slope=0.2), lambda x: F.leaky_relu(x, 0.2), U(-4, 4)),
  "mish": (lambda t: t.mish(), F.mish, U(-4, 4)),
  "softplus": (lambda t: t.softplus(), F.softplus, U(-8, 8)),
  "softplus(beta=2)": (lambda t: t.softplus(beta=2), lambda x: F.softplus(x, beta=2), U(-4, 4)),
  "softsign": (lambda t: t.softsign(), F.softsign, U(-5, 5)),
}


ALL_LAYOUT_ACTIVATIONS = ("gelu", "silu", "tanh", "softplus", "elu")
PIECEWISE_LINEAR = ("relu6", "hardtanh", "leakyrelu")


def _activation_cases():
  cases = []
  for op in ACTIVATIONS:
    layouts = ("contig", "0d", "empty", "transposed", "sliced", "expanded") if op in ALL_LAYOUT_ACTIVATIONS else \
      ("contig", "empty", "expanded", "flipped")
    for layout in layouts:
      cases.append(pytest.param(op, "float32", layout, id=f"{op}-float32-{layout}"))
    # non-default parameters: float32 and float64; piecewise-linear ones: float32 and the half types
    names = ("float64",) if "(" in op else ("float16", "bfloat16") if op in PIECEWISE_LINEAR else ("float64", "float16", "bfloat16")
    for name in names: cases.append(pytest.param(op, name, "contig", id=f"{op}-{name}"))
  return cases


@pytest.mark.parametrize("op,name,layout", _activation_cases())
def test_activation(op, name, layout):
  fn, ref, dom = ACTIVATIONS[op]
  shape, move = LAYOUTS[layout]
  t, x = laid_out(dom(rng_for(op, name, layout), shape), name, move)
  check(fn(t), torch_ref(ref, x), name, "trans")


# --- binary ops ----------------------------------------------------------------------------------
# name: (nbgrad fn, numpy reference, kind, family, role of the right operand's values)
BINARY = {
  "add": (lambda a, b: a.add(b), np.add, "exact", "arith", "any"),
  "+": (lambda a, b: a + b, np.add, "exact", "arith", "any"),
  "sub": (lambda a, b: a.sub(b), np.subtract, "exact", "arith", "any"),
  "-": (lambda a, b: a - b, np.subtract, "exact", "arith", "any"),
  "mul": (lambda a, b: a.mul(b), np.multiply, "exact", "arith", "any"),
  "*": (lambda a, b: a * b, np.multiply, "exact", "arith", "any"),
  "maximum": (lambda a, b: a.maximum(b), np.maximum, "exact", "arith", "any"),
  "minimum": (lambda a, b: a.minimum(b), np.minimum, "exact", "arith", "any"),
  "div": (lambda a, b: a.div(b), np.true_divide, "near", "div", "nonzero"),
  "/": (lambda a, b: a / b, np.true_divide, "near", "div", "nonzero"),
  "pow": (lambda a, b: a.pow(b), np.power, "trans", "pow", "any"),
  "**": (lambda a, b: a ** b, np.power, "trans", "pow", "any"),
  "xor": (lambda a, b: a.xor(b), np.bitwise_xor, "exact", "xor", "any"),
  "^": (lambda a, b: a ^ b, np.bitwise_xor, "exact", "xor", "any"),
}
# (left dtype, right dtype, result dtype read off the lattice); the first row is also run on every layout
COMBOS = {
  "arith": [("float32", "float32", "float32"), ("int32", "int32", "int32"), ("uint8", "uint8", "uint8"),
            ("int8", "uint8", "int16"), ("uint32", "int32", "int64"), ("uint32", "uint32", "uint32"),
            ("int64", "int64", "int64"), ("bool", "int32", "int32"), ("int32", "float32", "float32"),
            ("float64", "float32", "float64"), ("uint8", "float16", "float16"), ("float16", "float16", "float16"),
            ("bfloat16", "bfloat16", "bfloat16"), ("float16", "bfloat16", "float32"), ("uint16", "int16", "int32")],
  "div": [("float32", "float32", "float32"), ("int32", "int32", "float32"), ("uint8", "uint8", "float32"),
          ("int64", "int64", "float32"), ("int32", "float32", "float32"), ("bool", "float32", "float32"),
          ("float64", "float64", "float64"), ("float16", "float16", "float16"), ("bfloat16", "bfloat16", "bfloat16"),
          ("int8", "float16", "float16")],
  "pow": [("float32", "float32", "float32"), ("float64", "float64", "float64"), ("float16", "float16", "float16"),
          ("bfloat16", "bfloat16", "bfloat16")],
  "xor": [("int32", "int32", "int32"), ("bool", "bool", "bool"), ("uint8", "uint8", "uint8"), ("int8", "uint8", "int16"),
          ("uint32", "uint32", "uint32"), ("int64", "int64", "int64"), ("uint64", "uint64", "uint64"),
          ("int16", "int16", "int16")],
}
# layout name -> ((left base shape, move), (right base shape, move))
BINARY_LAYOUTS = {
  "same": (((3, 4), "id"), ((3, 4), "id")), "row": (((3, 4), "id"), ((4,), "id")),
  "outer": (((3, 1), "id"), ((1, 4), "id")), "rank3": (((2, 1, 3), "id"), ((4, 1), "id")),
  "scalar_0d": (((), "id"), ((3, 4), "id")), "both_0d": (((), "id"), ((), "id")),
  "empty": (((0, 4), "id"), ((4,), "id")), "empty_bcast": (((0, 1), "id"), ((1, 4), "id")),
  "transposed": (((4, 3), "T"), ((3, 4), "id")), "flip_step": (((3, 4), "flip0"), ((3, 8), "step2")),
  "expanded": (((1, 4), "expand34"), ((3, 1), "expand34")),
}


def gen(rng, name, shape, role="any"):
  if name == "bool": return rng.integers(0, 2, shape).astype(bool)
  if name in UNSIGNED:
    v = rng.integers(0, np.iinfo(NP[name]).max, shape, dtype=NP[name], endpoint=True)
    if role == "nonzero": v[v == 0] = 1
    return v
  if name in INTS:
    v = rng.integers(-20, 21, shape)
    if role == "nonzero": v[v == 0] = 7
    return v.astype(NP[name])
  if role == "nonzero": return rng.uniform(0.5, 3, shape) * rng.choice([-1.0, 1.0], shape)
  if role == "positive": return rng.uniform(0.5, 3, shape)
  return rng.uniform(-3, 3, shape)


def binary_ref(npfn, a, b, out):
  with np.errstate(all="ignore"):
    if out in FLOATS: return npfn(a.astype(np.float64), b.astype(np.float64))
    return npfn(a.astype(NP[out]), b.astype(NP[out]))


ALL_LAYOUT_BINARY = ("add", "+", "mul", "div", "^")  # every layout on the first dtype combo
SOME_LAYOUTS = ("same", "outer", "transposed", "empty", "expanded")


def _binary_cases():
  cases = []
  for op, (_, _, _, family, _) in BINARY.items():
    for i, combo in enumerate(COMBOS[family]):
      if i > 0: layouts = ("same",)
      else: layouts = BINARY_LAYOUTS if op in ALL_LAYOUT_BINARY else SOME_LAYOUTS
      for layout in layouts:
        cases.append(pytest.param(op, combo, layout, id=f"{op}-{combo[0]}-{combo[1]}-{layout}"))
  return cases


@pytest.mark.parametrize("op,combo,layout", _binary_cases())
def test_binary(op, combo, layout):
  fn, npfn, kind, family, role = BINARY[op]
  left, right, out = combo
  (sa, ma), (sb, mb) = BINARY_LAYOUTS[layout]
  rng = rng_for(op, combo, layout)
  a, xa = laid_out(gen(rng, left, sa, "positive" if family == "pow" else "any"), left, ma)
  b, xb = laid_out(gen(rng, right, sb, role if family != "pow" else "any"), right, mb)
  check(fn(a, b), binary_ref(npfn, xa, xb, out), out, kind)


# special values as torch defines them: (name, nbgrad fn, torch fn, left, right)
SPECIAL_BINARY = [
  ("maximum_nan", lambda a, b: a.maximum(b), torch.maximum, [NAN, 1.0, NAN, INF, -INF, -0.0], [1.0, NAN, NAN, 1.0, 1.0, 0.0]),
  ("minimum_nan", lambda a, b: a.minimum(b), torch.minimum, [NAN, 1.0, NAN, INF, -INF, 0.0], [1.0, NAN, NAN, 1.0, 1.0, -0.0]),
  ("div_zero_inf", lambda a, b: a / b, torch.div, [1.0, -1.0, 0.0, INF, 1.0, NAN], [0.0, 0.0, 0.0, INF, INF, 1.0]),
  ("add_inf", lambda a, b: a + b, torch.add, [INF, INF, -INF, NAN], [-INF, 1.0, -1.0, 1.0]),
  ("sub_inf", lambda a, b: a - b, torch.sub, [INF, INF, NAN], [INF, 1.0, 1.0]),
  ("mul_inf", lambda a, b: a * b, torch.mul, [0.0, INF, -INF, NAN], [INF, 2.0, 2.0, 0.0]),
  ("pow_edges", lambda a, b: a ** b, torch.pow, [0.0, 0.0, -2.0, -8.0, 0.0, -3.0, 2.0, 4.0, -2.0],
   [0.0, 2.0, 3.0, 0.5, -1.0, 2.0, -2.0, 0.5, -1.0]),
  ("pow_ieee", lambda a, b: a ** b, torch.pow, [1.0, -1.0, -1.0, NAN, INF, 0.0, -0.5, 2.0, 0.5, -INF, -INF, -INF],
   [NAN, INF, -INF, 0.0, 0.0, -1.5, INF, -INF, -INF, 1.5, -1.5, 3.0]),
  ("mod_inf", lambda a, b: a % b, torch.remainder, [3.0, -3.0, 0.0, 3.0, -3.0, INF], [INF, INF, INF, -INF, -INF, INF]),
  ("floordiv_inf", lambda a, b: a // b, torch.floor_divide, [INF, -INF, 3.0, 3.0, -3.0, 0.0, 7.0, NAN, INF],
   [2.0, 2.0, -INF, INF, INF, INF, -2.0, 1.0, INF]),
  # a large quotient and a remainder that a - floor(a / b) * b would round: both exact, as torch computes them
  ("mod_exact", lambda a, b: a % b, torch.remainder, [3.0, -3.0, 1000.3, -1000.3, 5.3, 1e30, 7.5],
   [1e-8, 1e-8, 6.2831855, 6.2831855, -0.1, 3.0, 0.0]),
  ("floordiv_exact", lambda a, b: a // b, torch.floor_divide, [3.0, -3.0, 1000.3, -1000.3, 5.3, 1e30, 7.5, -7.5],
   [1e-8, -1e-8, 6.2831855, 6.2831855, -0.1, 3.0, 0.0, 0.0]),
]


# integer powers are exact (wrapping like repeated products), float ones within a rounding or two of torch
INT_POW_ROWS = [
  ("int32_scalar", lambda: Tensor([7, 5, -3, 0]) ** 11, torch.tensor([7, 5, -3, 0]).int() ** 11),
  ("int32_tensor", lambda: Tensor([7, 2, -3, 1, -1, -1, 5]) ** Tensor([7, 30, 5, -2, -3, -2, -1]),
   torch.tensor([823543, 2**30, -243, 1, -1, 1, 0])),
  ("reflected_int", lambda: 2 ** Tensor([30, 0, 3]), torch.tensor([2**30, 1, 8])),
  ("int64_wraps", lambda: Tensor([3], dtype=dtypes.int64) ** 39, torch.tensor([3], dtype=torch.int64) ** 39),
  ("float_integer_exponent", lambda: Tensor([3.0, 10.0, -2.0]) ** 10, torch.tensor([3.0, 10.0, -2.0]) ** 10),
]


@pytest.mark.parametrize("name,fn,expected", INT_POW_ROWS, ids=[r[0] for r in INT_POW_ROWS])
def test_integer_powers(name, fn, expected):
  out = fn()
  assert out.dtype == (dtypes.float32 if name.startswith("float") else dtypes.int64 if "int64" in name else dtypes.int32)
  np.testing.assert_array_equal(out.numpy().astype(np.float64), expected.numpy().astype(np.float64))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "bool"])
@pytest.mark.parametrize("exponent", [2**31, 2**40 + 1, 2**64 + 3, 2**100 + 7])
def test_integer_powers_to_exponents_past_int32_are_exact_modulo_the_dtype(dtype, exponent):
  """Python's pow modulo 2**bits is the oracle: the exponent's bits are multiplied (stored in the base's dtype it
  wrapped, so int8 ** 2**40 was 1 everywhere)."""
  values = [0, 1, 2, 3, -5, 7] if dtype not in ("uint8", "bool") else [0, 1, 2, 3, 7][: 2 if dtype == "bool" else 5]
  bits = 32 if dtype == "bool" else np.dtype(dtype).itemsize * 8
  out = Tensor(np.array(values, dtype)) ** exponent
  expected = [pow(v % 2**bits, exponent, 2**bits) for v in values]
  signed = dtype != "uint8"
  expected = [e - 2**bits if signed and e >= 2**(bits - 1) else e for e in expected]
  assert out.dtype == (dtypes.int32 if dtype == "bool" else getattr(dtypes, dtype)) and out.tolist() == expected


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_sign_of_nan_is_nan_as_numpy(dtype):
  out = Tensor([float("nan"), -2.0, -0.0, 0.0, 3.0], dtype=getattr(dtypes, dtype)).sign().float().numpy()
  np.testing.assert_array_equal(out, np.sign(np.array([np.nan, -2.0, -0.0, 0.0, 3.0], np.float32)))


def test_where_of_two_numbers_takes_a_dtype_holding_both():
  c = Tensor([True, False])
  for x, y, dtype in ((1, 2**40, dtypes.int64), (2**40, 1, dtypes.int64), (1, 2**31, dtypes.int64), (1, 2, dtypes.int32),
                      (1, 2.5, dtypes.float32), (True, False, dtypes.bool)):
    out = c.where(x, y)
    assert out.dtype == dtype and out.tolist() == [x, y], (x, y, out.dtype, out.tolist())


def test_int_base_to_a_negative_integer_constant_is_float_as_tinygrad():
  """tinygrad takes b ** -n as (1 / b) ** n with the reciprocal in float: 2 ** -1 is 0.5, not an integer 0."""
  for values, dtype, n in [([2, -4, 1, 3], dtypes.int32, 1), ([2, -4, 5], dtypes.int8, 3), ([True, False], dtypes.bool, 2)]:
    out = Tensor(values, dtype=dtype) ** -n
    assert out.dtype == dtypes.float32
    expected = (1 / np.array(values, np.float64)) ** n if values[1] is not False else np.array([1.0, np.inf])
    np.testing.assert_allclose(out.numpy(), expected.astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("fn,ref", [
  (lambda t: t ** INF, lambda x: x ** INF), (lambda t: t ** NAN, lambda x: x ** NAN), (lambda t: t ** -INF, lambda x: x ** -INF),
  (lambda t: 1.0 ** t, lambda x: 1.0 ** x), (lambda t: INF ** t, lambda x: INF ** x), (lambda t: 0.0 ** t, lambda x: 0.0 ** x),
], ids=["x**inf", "x**nan", "x**-inf", "1**x", "inf**x", "0**x"])
def test_pow_with_a_python_special_value(fn, ref):
  values = np.array([0.0, 0.5, 1.0, -1.0, 2.0, -2.0, INF, NAN], np.float32)
  check(fn(Tensor(values)), ref(torch.from_numpy(values)).numpy().astype(np.float64), "float32", "exact")


def test_numpy_operand_on_the_left_keeps_a_tensor_and_its_gradient():
  w = Tensor([1.0, -2.0], requires_grad=True)
  out = np.float32(3) * w - np.int64(1)
  assert isinstance(out, Tensor) and out.dtype == dtypes.float32
  out.sum().backward()
  np.testing.assert_array_equal(out.numpy(), np.array([2.0, -7.0], np.float32))
  np.testing.assert_array_equal(w.grad.numpy(), np.array([3.0, 3.0], np.float32))
  exp = np.exp(w)   # a ufunc nbgrad has is the Tensor's op: the gradient flows through it
  assert isinstance(exp, Tensor)
  exp.sum().backward()
  np.testing.assert_allclose(w.grad.numpy(), np.array([3.0, 3.0], np.float32) + np.exp([1.0, -2.0]).astype(np.float32), rtol=1e-6)


def test_long_chains_on_broadcast_values_compile_and_match_torch(tmp_path):
  """A value that does not change along a loop (a broadcast input and what is computed from it) is computed
  before the loop: LLVM never finished optimizing kernels computing softplus or pow of a broadcast scalar in
  every iteration. Run in a child with a fresh kernel cache, so the kernels really compile, under a time limit."""
  script = (
    "import json, numpy as np, nbgrad\n"
    "from nbgrad import Tensor\n"
    "column = Tensor(np.array([[0.5], [-2.0], [30.0]], np.float32))\n"
    "print(json.dumps([Tensor([4.0]).expand(2).softplus().tolist(), (Tensor([2.0]).expand(3) ** Tensor([1.5])).tolist(),\n"
    "  (column.expand(3, 5).softplus() * Tensor(np.ones((3, 5), np.float32))).sum(1).tolist()]))\n")
  run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "NBGRAD_CACHE_DIR": str(tmp_path)})
  assert run.returncode == 0, run.stderr
  softplus, power, rows = json.loads(run.stdout)
  column = torch.tensor([[0.5], [-2.0], [30.0]])
  np.testing.assert_allclose(softplus, F.softplus(torch.tensor([4.0])).expand(2).numpy(), rtol=1e-6)
  np.testing.assert_allclose(power, (torch.tensor([2.0]) ** 1.5).expand(3).numpy(), rtol=1e-6)
  np.testing.assert_allclose(rows, (F.softplus(column).expand(3, 5)).sum(1).numpy(), rtol=1e-6)


def test_sin_cos_of_large_arguments_stay_in_range():
  x = np.array([1e7, 1e18, 3e38, -5e9], np.float32)
  np.testing.assert_allclose(Tensor(x).sin().numpy(), np.sin(x.astype(np.float64)), atol=1e-6)
  np.testing.assert_allclose(Tensor(x).cos().numpy(), np.cos(x.astype(np.float64)), atol=1e-6)


def test_float32_tanh_within_three_ulps():
  """The series to 0.4, then (1 - u) / (1 + u) for u = exp(-2|x|); torch's is within an ulp. Dense around the series'
  limit, where 1 - u cancels most, and out to where tanh is 1."""
  rng = np.random.default_rng(14)
  x = np.concatenate([rng.uniform(-0.6, 0.6, 300_000), rng.uniform(-10, 10, 300_000), np.geomspace(1e-30, 40, 2000)]).astype(np.float32)
  want = np.tanh(x.astype(np.float64))
  ulps = np.abs(Tensor(x).tanh().numpy().astype(np.float64) - want) / np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
  assert ulps.max() <= 3, f"tanh({x[np.argmax(ulps)]!r}) is {ulps.max():.2f} ulps off"


def test_float32_sin_and_cos_within_an_ulp_at_every_exponent():
  """Past 1e6 the argument is reduced by the bits of 2/pi its exponent needs (Payne and Hanek), with no call of
  numpy's sin in a branch: that branch kept every loop over sin or cos from vectorizing. Against numpy's float64
  sin and cos of the same float32 values, up to the largest float32."""
  rng = np.random.default_rng(13)
  magnitudes = np.ldexp(rng.uniform(1, 2, 200_000), rng.integers(-30, 128, 200_000)).astype(np.float32)
  edges = np.array([1e6, 999999.94, 1048576.0, 3.4028235e38, 16777216.0, 1.5707964, 1e-30], np.float32)
  x = np.concatenate([magnitudes, -magnitudes[:50_000], edges, -edges])
  for name, reference in (("sin", np.sin), ("cos", np.cos)):
    got = getattr(Tensor(x), name)().numpy().astype(np.float64)
    want = reference(x.astype(np.float64))
    ulps = np.abs(got - want) / np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert ulps.max() <= 1, f"{name}({x[np.argmax(ulps)]!r}) is {ulps.max():.2f} ulps off"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_sin_and_cos_of_small_arguments_have_the_bits_they_have_beside_large_ones(monkeypatch, parallel, dtype):
  """A kernel computes a block of elements (4096 in the parallel build, all in the serial one) with the small-angle
  sin and cos, and again with the whole-range ones when an argument of the block is 1e6 or more, inf or nan. Blocks
  of small arguments only give the bits those arguments get in a block with a large one, within an ulp of numpy."""
  import nbgrad.jit as jit
  from nbgrad.jit.render import BLOCK, Renderer
  if parallel: monkeypatch.setattr(jit, "PARALLEL_MIN_ELEMENTS", 0)
  rng = np.random.default_rng(15)
  edges = np.array([np.nextafter(dtype(1e6), dtype(0)), -np.nextafter(dtype(1e6), dtype(0)), 0.0, -0.0, 1e-30, 1.5707964, 3.1415927], dtype)
  small = np.concatenate([edges, rng.uniform(-1e6, 1e6, BLOCK), rng.uniform(-10, 10, BLOCK - len(edges))]).astype(dtype)
  large = np.array([1e7, np.inf, -np.inf, np.nan, 1e6, 3e38], dtype)
  mixed = np.concatenate([small, large])   # the first blocks small only, the last one with the large arguments
  suffix, bits = ("f32", np.uint32) if dtype == np.float32 else ("f64", np.uint64)
  for name, reference in (("sin", np.sin), ("cos", np.cos)):
    (kernel,) = getattr(Tensor(mixed), name)().schedule()
    assert f"{name}_{suffix}_small_angle(" in Renderer(kernel, parallel).render("kernel")
    getattr(Tensor(mixed), name)().realize()
    jit.finish_builds()
    got = getattr(Tensor(mixed), name)().numpy()
    beside_large = np.concatenate([getattr(Tensor(np.append(small[i:i + 64], 1e7).astype(dtype)), name)().numpy()[:-1]
                                   for i in range(0, len(small), 64)])
    np.testing.assert_array_equal(got[:len(small)].view(bits), beside_large.view(bits))
    want = reference(small.astype(np.float64))
    ulps = np.abs(got[:len(small)] - want) / np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
    assert ulps.max() <= 1, f"{name}({small[np.argmax(ulps)]!r}) is {ulps.max():.2f} ulps off"
    with np.errstate(invalid="ignore"): want = reference(large.astype(np.float64))   # nan for inf, as ours
    np.testing.assert_allclose(got[len(small):], want, atol=1e-6)


def test_float64_sin_and_cos_within_an_ulp_below_1e6_and_the_c_librarys_beyond():
  """Below 1e6 float64 sine and cosine are nbgrad's (a reduction by pi/2 in four parts, then their series), within an
  ulp of mpmath's exact values: random arguments, the doubles nearest multiples of pi/2 (where the reduction cancels
  all but a few bits) and their neighbours, tiny ones. From 1e6 on, and at inf and nan, numpy's bits."""
  import mpmath
  mpmath.mp.prec = 200
  rng = np.random.default_rng(23)
  near = rng.integers(-600_000, 600_000, 800) * (np.pi / 2)
  x = np.concatenate([rng.uniform(-10, 10, 2000), rng.uniform(-1e6, 1e6, 2000), near, np.nextafter(near, np.inf),
                      np.nextafter(near, -np.inf), np.arange(-300, 300) * (np.pi / 2), [np.pi, 1e-300, 5e-324, np.nextafter(1e6, 0)]])
  for name in ("sin", "cos"):
    got = getattr(Tensor(x), name)().numpy()
    exact = [getattr(mpmath, name)(mpmath.mpf(float(v))) for v in x]
    ulps = np.array([abs(float((mpmath.mpf(float(g)) - e) / float(np.spacing(float(abs(e)))))) for g, e in zip(got, exact)])
    assert ulps.max() < 1, f"{name}({x[np.argmax(ulps)]!r}) is {ulps.max():.2f} ulps off"
  assert np.signbit(Tensor(np.array([-0.0])).sin().numpy()).all()
  beyond = np.array([1e6, -1e6, 3e9, 1e300, -1e300, np.inf, -np.inf, np.nan])
  for name in ("sin", "cos"):
    with np.errstate(invalid="ignore"):
      np.testing.assert_array_equal(getattr(Tensor(beyond), name)().numpy(), getattr(np, name)(beyond))


def test_cos_tan_and_sin_gradient_near_the_zeros_of_cos_and_far_out():
  """cos reduces x itself (sin(pi/2 - x) rounded pi/2 - x first: 2e9 ulps off near its zeros, wrong signs past
  10); tan and sin's gradient follow. Relative to the float64 values of the float32 inputs."""
  rng = np.random.default_rng(12)
  zeros = (np.arange(-40, 40) + 0.5) * np.pi
  x = np.concatenate([zeros, rng.uniform(1, 10, 200), rng.uniform(100, 1e4, 200), rng.uniform(1e4, 9e5, 200)]).astype(np.float32)
  exact = x.astype(np.float64)
  np.testing.assert_allclose(Tensor(x).cos().numpy(), np.cos(exact), rtol=2e-7, atol=0)
  np.testing.assert_allclose(Tensor(x).tan().numpy(), np.tan(exact), rtol=1e-6, atol=0)
  t = Tensor(x, requires_grad=True)
  t.sin().sum().backward()
  np.testing.assert_allclose(t.grad.numpy(), np.cos(exact), rtol=2e-7, atol=0)
  t64 = Tensor(exact, requires_grad=True)
  t64.cos().sum().backward()
  np.testing.assert_allclose(Tensor(exact).cos().numpy(), np.cos(exact), rtol=1e-15, atol=0)
  np.testing.assert_allclose(t64.grad.numpy(), -np.sin(exact), rtol=1e-15, atol=0)


@pytest.mark.parametrize("name,fn,ref,left,right", SPECIAL_BINARY, ids=[s[0] for s in SPECIAL_BINARY])
def test_binary_special_values(name, fn, ref, left, right):
  a, b = np.array(left, np.float32), np.array(right, np.float32)
  expected = ref(torch.from_numpy(a), torch.from_numpy(b)).numpy().astype(np.float64)
  check(fn(Tensor(a), Tensor(b)), expected, "float32", "trans" if name.startswith("pow") else "exact")


# --- Python scalars on either side: (id, input dtype, input values, fn, result dtype, expected, kind) ---
U32 = 2**32
SCALAR_ROWS = [
  ("i32*1.5", "int32", [1, -2, 3], lambda t: t * 1.5, "float32", [1.5, -3.0, 4.5], "exact"),
  ("1.5*i32", "int32", [1, -2, 3], lambda t: 1.5 * t, "float32", [1.5, -3.0, 4.5], "exact"),
  ("i32+1", "int32", [1, -2, 3], lambda t: t + 1, "int32", [2, -1, 4], "exact"),
  ("1-i32", "int32", [1, -2, 3], lambda t: 1 - t, "int32", [0, 3, -2], "exact"),
  ("i32-0.5", "int32", [1, -2, 3], lambda t: t - 0.5, "float32", [0.5, -2.5, 2.5], "exact"),
  ("0.5-i32", "int32", [1, -2, 3], lambda t: 0.5 - t, "float32", [-0.5, 2.5, -2.5], "exact"),
  ("i32/2", "int32", [1, -2, 3], lambda t: t / 2, "float32", [0.5, -1.0, 1.5], "near"),
  ("2/i32", "int32", [1, -2, 3], lambda t: 2 / t, "float32", [2.0, -1.0, 2 / 3], "near"),
  ("bool+1", "bool", [True, False], lambda t: t + 1, "int32", [2, 1], "exact"),
  ("1+bool", "bool", [True, False], lambda t: 1 + t, "int32", [2, 1], "exact"),
  ("bool*1.5", "bool", [True, False], lambda t: t * 1.5, "float32", [1.5, 0.0], "exact"),
  ("2.5-bool", "bool", [True, False], lambda t: 2.5 - t, "float32", [1.5, 2.5], "exact"),
  ("u8+10_wraps", "uint8", [250, 5], lambda t: t + 10, "uint8", [4, 15], "exact"),
  ("1-u8_wraps", "uint8", [2, 0], lambda t: 1 - t, "uint8", [255, 1], "exact"),
  ("u8*2_wraps", "uint8", [200, 3], lambda t: t * 2, "uint8", [144, 6], "exact"),
  ("u8*0.5", "uint8", [200, 3], lambda t: t * 0.5, "float32", [100.0, 1.5], "exact"),
  ("i8+100_wraps", "int8", [100, -100], lambda t: t + 100, "int8", [-56, 0], "exact"),
  ("u32+1_wraps", "uint32", [U32 - 1, 5], lambda t: t + 1, "uint32", [0, 6], "exact"),
  ("0-u32_wraps", "uint32", [1, 0], lambda t: 0 - t, "uint32", [U32 - 1, 0], "exact"),
  ("u32*3_wraps", "uint32", [2**31 + 1, 7], lambda t: t * 3, "uint32", [2**31 + 3, 21], "exact"),
  ("u32-u32_wraps", "uint32", [3, 0], lambda t: t - Tensor(np.array([5, 1], np.uint32)), "uint32",
   [U32 - 2, U32 - 1], "exact"),
  ("i64+1", "int64", [2**40, -3], lambda t: t + 1, "int64", [2**40 + 1, -2], "exact"),
  ("f16*2.5", "float16", [1.5, -2.0], lambda t: t * 2.5, "float16", [3.75, -5.0], "exact"),
  ("1+f16", "float16", [1.5, -2.0], lambda t: 1 + t, "float16", [2.5, -1.0], "exact"),
  ("bf16*3", "bfloat16", [1.5, -2.0], lambda t: t * 3, "bfloat16", [4.5, -6.0], "exact"),
  ("f64*0.1_keeps_float64", "float64", [1.0, 3.0], lambda t: t * 0.1, "float64", [0.1, 3 * 0.1], "exact"),
  ("f32+1", "float32", [1.5, -2.0], lambda t: t + 1, "float32", [2.5, -1.0], "exact"),
  ("2-f32", "float32", [1.5, -2.0], lambda t: 2 - t, "float32", [0.5, 4.0], "exact"),
  ("2*f32", "float32", [1.5, -2.0], lambda t: 2 * t, "float32", [3.0, -4.0], "exact"),
  ("3/f32", "float32", [1.5, -2.0], lambda t: 3 / t, "float32", [2.0, -1.5], "near"),
  ("2**f32", "float32", [0.0, 1.0, 3.0, -1.0], lambda t: 2 ** t, "float32", [1.0, 2.0, 8.0, 0.5], "trans"),
  ("f32**2", "float32", [-1.5, 2.0, 3.0], lambda t: t ** 2, "float32", [2.25, 4.0, 9.0], "near"),
  ("f32**3", "float32", [-1.5, 2.0], lambda t: t ** 3, "float32", [-3.375, 8.0], "near"),
  ("f32**0.5", "float32", [4.0, 2.25, -1.0], lambda t: t ** 0.5, "float32", [2.0, 1.5, NAN], "trans"),
  ("f32**-1", "float32", [4.0, -2.0], lambda t: t ** -1, "float32", [0.25, -0.5], "near"),
  ("f32**-2", "float32", [2.0, -4.0], lambda t: t ** -2, "float32", [0.25, 0.0625], "near"),
  ("f32**0", "float32", [5.0, -2.0, 0.0], lambda t: t ** 0, "float32", [1.0, 1.0, 1.0], "exact"),
  ("f32**2.5", "float32", [4.0, 1.0], lambda t: t ** 2.5, "float32", [32.0, 1.0], "trans"),
  ("f32.pow(3)", "float32", [-2.0, 0.5], lambda t: t.pow(3), "float32", [-8.0, 0.125], "near"),
  ("i32**2", "int32", [3, -4], lambda t: t ** 2, "int32", [9, 16], "exact"),
  ("i32**3", "int32", [3, -4], lambda t: t ** 3, "int32", [27, -64], "exact"),
  ("i32^5", "int32", [1, 6], lambda t: t ^ 5, "int32", [4, 3], "exact"),
  ("3^i32", "int32", [1, 6], lambda t: 3 ^ t, "int32", [2, 5], "exact"),
  ("i32^-1", "int32", [5, 0], lambda t: t ^ -1, "int32", [-6, -1], "exact"),
  ("bool^True", "bool", [True, False], lambda t: t ^ True, "bool", [False, True], "exact"),
  ("u8^255", "uint8", [0, 15], lambda t: t ^ 255, "uint8", [255, 240], "exact"),
  ("f32.maximum(0.5)", "float32", [0.0, 1.0], lambda t: t.maximum(0.5), "float32", [0.5, 1.0], "exact"),
  ("i32.maximum(0.5)", "int32", [0, 1], lambda t: t.maximum(0.5), "float32", [0.5, 1.0], "exact"),
  ("i32.minimum(2)", "int32", [0, 5], lambda t: t.minimum(2), "int32", [0, 2], "exact"),
  ("u8.minimum(100)", "uint8", [0, 250], lambda t: t.minimum(100), "uint8", [0, 100], "exact"),
  # comparisons with scalars, both sides
  ("f32<0.5", "float32", [0.0, 1.0, 0.5], lambda t: t < 0.5, "bool", [True, False, False], "exact"),
  ("0.5<f32", "float32", [0.0, 1.0, 0.5], lambda t: 0.5 < t, "bool", [False, True, False], "exact"),
  ("0.5>=f32", "float32", [0.0, 1.0, 0.5], lambda t: 0.5 >= t, "bool", [True, False, True], "exact"),
  ("i32<1.5", "int32", [1, 2], lambda t: t < 1.5, "bool", [True, False], "exact"),
  ("i32==2", "int32", [2, 3], lambda t: t == 2, "bool", [True, False], "exact"),
  ("2==i32", "int32", [2, 3], lambda t: 2 == t, "bool", [True, False], "exact"),
  ("i32!=2", "int32", [2, 3], lambda t: t != 2, "bool", [False, True], "exact"),
  ("u8>200", "uint8", [255, 100, 200], lambda t: t > 200, "bool", [True, False, False], "exact"),
  ("i32>=-1", "int32", [-1, -2, 0], lambda t: t >= -1, "bool", [True, False, True], "exact"),
  ("f32<=1", "float32", [1.0, 1.5, -3.0], lambda t: t <= 1, "bool", [True, False, True], "exact"),
  ("bool==True", "bool", [True, False], lambda t: t == True, "bool", [True, False], "exact"),  # noqa: E712
  # shifts (unsigned dtypes, Python int shift >= 0)
  ("u8<<3_wraps", "uint8", [200, 1], lambda t: t << 3, "uint8", [64, 8], "exact"),
  ("u8>>3", "uint8", [200, 255], lambda t: t >> 3, "uint8", [25, 31], "exact"),
  ("u8.lshift(1)", "uint8", [128, 3], lambda t: t.lshift(1), "uint8", [0, 6], "exact"),
  ("u8.rshift(7)", "uint8", [128, 127], lambda t: t.rshift(7), "uint8", [1, 0], "exact"),
  ("u16<<0", "uint16", [65535, 3], lambda t: t << 0, "uint16", [65535, 3], "exact"),
  ("u32<<4_wraps", "uint32", [U32 - 1, 1], lambda t: t << 4, "uint32", [U32 - 16, 16], "exact"),
  ("u32>>4", "uint32", [U32 - 1, 16], lambda t: t >> 4, "uint32", [0x0FFFFFFF, 1], "exact"),
  ("u64<<8_wraps", "uint64", [2**60, 3], lambda t: t << 8, "uint64", [0, 768], "exact"),
  ("u64>>60", "uint64", [2**63 + 5, 7], lambda t: t >> 60, "uint64", [8, 0], "exact"),
  # signed ints: left shifts, and right shifts of non-negative values (the sign rule for negatives is unspecified)
  ("i32<<2", "int32", [-3, 5, 1000], lambda t: t << 2, "int32", [-12, 20, 4000], "exact"),
  ("i32>>1", "int32", [7, 1000, 0], lambda t: t >> 1, "int32", [3, 500, 0], "exact"),
  ("i8.lshift(1)", "int8", [-3, 60], lambda t: t.lshift(1), "int8", [-6, 120], "exact"),
  ("i64>>3", "int64", [2**40, 9], lambda t: t.rshift(3), "int64", [2**37, 1], "exact"),
]


@pytest.mark.parametrize("name,vals,fn,out,expected,kind", [pytest.param(*r[1:], id=r[0]) for r in SCALAR_ROWS])
def test_python_scalar_operand(name, vals, fn, out, expected, kind):
  check(fn(make(np.array(vals, dtype=np.float32 if name == "bfloat16" else NP[name]), name)),
        np.array(expected, dtype=np.float64 if out in FLOATS else NP[out]), out, kind)


# --- comparisons ---------------------------------------------------------------------------------
COMPARISONS = {"<": (operator.lt, np.less), ">": (operator.gt, np.greater), "<=": (operator.le, np.less_equal),
               ">=": (operator.ge, np.greater_equal), "==": (operator.eq, np.equal), "!=": (operator.ne, np.not_equal)}
# small pools so that equal values occur; extremes catch a wrong common dtype
POOLS = {"bool": [False, True], "int8": [-128, -3, -1, 0, 1, 3, 127], "uint8": [0, 1, 3, 127, 128, 200, 255],
         "int32": [-3, -1, 0, 1, 3, 1000], "uint32": [0, 1, 3, 2**31 + 1, U32 - 1],
         "float16": [-1.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.5]}
POOLS["float32"] = POOLS["float64"] = POOLS["bfloat16"] = POOLS["float16"]
CMP_COMBOS = [("float32", "float32", "float32"), ("int32", "int32", "int32"), ("uint8", "int8", "int16"),
              ("int32", "float32", "float32"), ("uint32", "int32", "int64"), ("float16", "float16", "float16"),
              ("bfloat16", "bfloat16", "bfloat16"), ("float64", "float16", "float64")]
CMP_BOOL = [("bool", "bool", "bool")]


def _cmp_cases():
  cases = []
  for op in COMPARISONS:
    full = op in ("<", "==")
    combos = (CMP_COMBOS if full else CMP_COMBOS[:3]) + (CMP_BOOL if op in ("==", "!=") else [])
    for i, combo in enumerate(combos):
      if i > 0: layouts = ("same",)
      elif full: layouts = ("same", "row", "outer", "scalar_0d", "empty", "transposed", "flip_step", "expanded")
      else: layouts = ("same", "outer", "transposed")
      for layout in layouts: cases.append(pytest.param(op, combo, layout, id=f"{op}-{combo[0]}-{combo[1]}-{layout}"))
  return cases


@pytest.mark.parametrize("op,combo,layout", _cmp_cases())
def test_comparison(op, combo, layout):
  pyop, npop = COMPARISONS[op]
  left, right, common = combo
  (sa, ma), (sb, mb) = BINARY_LAYOUTS[layout]
  rng = rng_for(op, combo, layout)
  a, xa = laid_out(rng.choice(np.array(POOLS[left], dtype=object), sa), left, ma)
  b, xb = laid_out(rng.choice(np.array(POOLS[right], dtype=object), sb), right, mb)
  cast = np.float64 if common in FLOATS else NP[common]
  check(pyop(a, b), npop(xa.astype(cast), xb.astype(cast)), "bool")


@pytest.mark.parametrize("op", list(COMPARISONS))
def test_comparison_nan(op):
  pyop, npop = COMPARISONS[op]
  a = np.array([NAN, NAN, 1.0, NAN, INF, -INF], np.float32)
  b = np.array([1.0, NAN, NAN, INF, INF, INF], np.float32)
  check(pyop(Tensor(a), Tensor(b)), npop(a, b), "bool")
  check(pyop(Tensor(a), 1.0), npop(a, np.float32(1.0)), "bool")


# --- integer division, shifts --------------------------------------------------------------------
INT_DIV_ROWS = [
  # truncation toward zero, as tinygrad 0.9.0's integer division (C semantics) does
  ("i32_tensor", "int32", [7, -7, 7, -7, 0, 9, 1], "int32", [2, 2, -2, -2, 3, 3, 5], "int32", [3, -3, -3, 3, 0, 3, 0]),
  ("u8_tensor", "uint8", [200, 7, 255], "uint8", [3, 2, 1], "uint8", [66, 3, 255]),
  ("u32_tensor", "uint32", [U32 - 1, 10], "uint32", [2, 3], "uint32", [2**31 - 1, 3]),
  ("i64_tensor", "int64", [2**40 + 1, -9], "int64", [2, 4], "int64", [2**39, -2]),
  ("i8_u8_tensor", "int8", [-100, 100], "uint8", [200, 3], "int16", [0, 33]),
  ("i32_scalar", "int32", [7, -7, 1], None, 2, "int32", [3, -3, 0]),
  ("f32_no_upcast_is_true_div", "float32", [1.0, -3.0], "float32", [4.0, 2.0], "float32", [0.25, -1.5]),
]


@pytest.mark.parametrize("name,a,b_name,b,out,expected", [pytest.param(*r[1:], id=r[0]) for r in INT_DIV_ROWS])
def test_integer_division(name, a, b_name, b, out, expected):
  lhs = make(np.array(a, NP[name]), name)
  rhs = b if b_name is None else make(np.array(b, NP[b_name]), b_name)
  check(lhs.div(rhs, upcast=False), np.array(expected, NP[out]), out)


@pytest.mark.parametrize("name", ["int32", "int64", "uint8", "int16", "uint32"])
def test_integer_division_by_zero_is_zero_as_in_numpy(name):
  a = np.array([5, 0, 1, np.iinfo(NP[name]).min, np.iinfo(NP[name]).max], NP[name])
  zero = np.zeros_like(a)
  with np.errstate(divide="ignore"):
    for op in (operator.floordiv, operator.mod):
      check(op(Tensor(a), Tensor(zero)), op(a, zero), name)
  check(Tensor(a).div(Tensor(zero), upcast=False), zero, name)


@pytest.mark.parametrize("name", ["int8", "uint16", "int32", "uint32", "int64", "uint64"])
def test_integer_division_over_the_whole_range_matches_numpy(name):
  """Ints of up to 32 bits, and 64-bit dividends of magnitude below 2**53, divide in float64, truncated: exact for
  every pair, which random pairs over the whole range (64-bit ones around 2**53 too, and small divisors of either
  sign) check against numpy."""
  info, rng = np.iinfo(NP[name]), np.random.default_rng(11)
  a = rng.integers(info.min, info.max, 20000, endpoint=True, dtype=NP[name])
  if info.bits == 64:
    near = np.concatenate([2**53 + np.arange(-3, 4), 2**53 * rng.random(2000)]).astype(np.int64)
    a[:len(near)] = near.astype(NP[name])
    a[len(near):2 * len(near)] = (-near).astype(NP[name])
  b = np.concatenate([rng.integers(info.min, info.max, 10000, endpoint=True, dtype=NP[name]),
                      rng.integers(-9 if info.min else 1, 10, 10000).astype(NP[name])])
  b[b == 0] = 1
  with np.errstate(over="ignore"):
    check(Tensor(a) // Tensor(b), a // b, name)
    check(Tensor(a) % Tensor(b), a % b, name)
    check(Tensor(a) // 7, a // np.array(7, NP[name]), name)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8", "uint64", "uint32"])
def test_integer_division_and_abs_at_the_limits_of_the_type(name):
  """The minimum of a signed type has no positive counterpart: -128 // 2 is -64 and abs(-128) is -128."""
  info = np.iinfo(NP[name])
  signed = info.min < 0
  a = np.array([info.min, info.min, info.min + 1, info.max, info.max, -7 if signed else 7, 0], NP[name])
  b = np.array([2, -1 if signed else 1, -3 if signed else 3, 3, info.max, 2, 5], NP[name])
  lhs, rhs = Tensor(a), Tensor(b)
  with np.errstate(over="ignore"):
    check(lhs // rhs, a // b, name)
    check(lhs % rhs, a % b, name)
    truncated = [(abs(x) // abs(y)) * (-1 if (x < 0) != (y < 0) else 1) for x, y in zip(a.tolist(), b.tolist())]
    wrapped = [(q - int(info.min)) % 2**info.bits + int(info.min) for q in truncated]   # -min // -1 wraps to min
    check(lhs.div(rhs, upcast=False), np.array(wrapped, NP[name]), name)
    check(lhs.abs(), np.abs(a), name)


@pytest.mark.parametrize("name", ["int8", "int32", "int64", "uint32", "uint64"])
@pytest.mark.parametrize("size", [2, 70000])   # a scalar loop, a vectorized parallel one
def test_a_sum_that_wraps_compares_as_the_wrapped_value_in_the_same_kernel(name, size):
  """a + b > a where a + b wraps: False. Fused with the comparison, int64's sum was taken as never overflowing and
  (A + 1 > A) was True at int64's maximum (the compiler turned a < a + b into 0 < b)."""
  info = np.iinfo(NP[name])
  a = np.resize(np.array([info.max, info.min, 5, info.max - 1, info.min + 1], NP[name]), size)
  b = np.resize(np.array([1, 1, 1, 3, 2], NP[name]), size)
  lhs, rhs = Tensor(a), Tensor(b)
  with np.errstate(over="ignore"):
    check((lhs + rhs) > lhs, (a + b) > a, "bool")
    check((lhs - rhs) < lhs, (a - b) < a, "bool")
    check((lhs * rhs * 2) > lhs, (a * b * 2) > a, "bool")
    check(((lhs + rhs) > lhs).where(lhs + rhs, lhs - rhs), np.where((a + b) > a, a + b, a - b), name)
    assert ((lhs + 1) > lhs).all().item() == bool(((a + 1) > a).all())


@pytest.mark.parametrize("dtype", [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64])
def test_float_abs_clears_only_the_sign_and_its_gradient_is_the_sign(dtype):
  """abs(-0.0) is +0.0 and abs(-nan) a nan, as numpy's; the gradient is torch's: sign(x), 0 at both zeros."""
  x = np.array([-0.0, 0.0, -2.5, 3.0, -np.inf, np.nan, -np.nan, -1e-30], np.float64)
  rounded = Tensor(x, dtype=dtype).numpy().astype(np.float64)   # -1e-30 is -0.0 in float16
  t = Tensor(x, dtype=dtype, requires_grad=True)
  got = t.abs()
  assert got.dtype == dtype
  values = got.numpy().astype(np.float64)
  np.testing.assert_array_equal(values, np.abs(rounded))
  assert not np.signbit(values).any()
  (got * Tensor(np.arange(1, 9, dtype=np.float64), dtype=dtype)).sum().backward()
  tt = torch.tensor(rounded, requires_grad=True)
  (tt.abs() * torch.arange(1, 9, dtype=torch.float64)).sum().backward()
  numbers = ~np.isnan(x)
  np.testing.assert_array_equal(t.grad.numpy().astype(np.float64)[numbers], tt.grad.numpy()[numbers])


BAD_SHIFTS = [
  ("float32_lshift", lambda: Tensor(np.array([1.0], np.float32)).lshift(1)),
  ("negative_shift", lambda: Tensor(np.array([1, 2], np.uint8)).lshift(-1)),
  ("negative_rshift", lambda: Tensor(np.array([1, 2], np.uint8)).rshift(-2)),
  ("float_shift", lambda: Tensor(np.array([1, 2], np.uint8)).rshift(1.5)),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in BAD_SHIFTS])
def test_shift_bad_arguments_raise(fn):
  with pytest.raises((TypeError, ValueError)):
    fn()


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "uint64"])
@pytest.mark.parametrize("size", [1, 4, 70000])   # a scalar loop, a vectorized one, a parallel kernel
def test_shifts_by_the_width_or_more_as_torch(dtype, size):
  """A count of 64 or more gives 0 to the left, the sign to the right (it was undefined: 5 << 64 was 5 or 0 by size)."""
  values = np.resize(np.array([5, 250] if dtype.startswith("u") else [5, -7]), size).astype(dtype)
  counts = np.resize(np.array([0, 3, 7, 31, 63, 64, 65, 200]), size).astype(dtype)
  torch_values = torch.from_numpy(values.astype(np.int64) if dtype == "uint64" else values)
  for count in (3, 63, 64, 65, 200):
    for op in ("__lshift__", "__rshift__"):
      got = getattr(Tensor(values), op)(count).numpy()
      want = np.zeros_like(values) if dtype == "uint64" and count >= 64 else getattr(torch_values, op)(count).numpy().astype(dtype)
      np.testing.assert_array_equal(got, want, err_msg=f"{op} {count}")
  if dtype != "uint64":
    for op in ("__lshift__", "__rshift__"):
      np.testing.assert_array_equal(getattr(Tensor(values), op)(Tensor(counts)).numpy(),
                                    getattr(torch_values, op)(torch.from_numpy(counts)).numpy())


@pytest.mark.parametrize("left, right", [("int8", "int16"), ("int16", "int8"), ("bool", "int8"), ("int8", "bool"), ("uint8", "int32"),
                                         ("int64", "int32")])
def test_shifts_by_a_tensor_take_the_promoted_dtype_as_torch(left, right):
  """An int8 tensor shifted by an int16 tensor shifts in int16 (it kept int8: 1 << 7 was -128); bools count as ints."""
  a, b = np.array([1, 0, 1, 3]).astype(left), np.array([7, 1, 0, 2]).astype(right)
  for op in ("__lshift__", "__rshift__"):
    got, want = getattr(Tensor(a), op)(Tensor(b)), getattr(torch.from_numpy(a), op)(torch.from_numpy(b))
    assert got.dtype == DT[str(want.dtype).split(".")[1]]
    np.testing.assert_array_equal(got.numpy(), want.numpy())
  with pytest.raises(TypeError, match="shifts need int tensors"): Tensor([True]) << Tensor([True])
  with pytest.raises(TypeError, match="shifts need int tensors"): Tensor([1]) << Tensor([1.0])


def test_true_division_of_ints_by_an_int_outside_their_range_as_torch():
  """The Python int goes to the float result as it is (it was wrapped to the tensor's dtype first: 1 / 2**40 was inf)."""
  rows = [(np.array([1, 50, -3], np.int32), 2**40, False), (np.array([1, 50], np.int8), 200, False),
          (np.array([5], np.uint8), -2, False), (np.array([1, 50], np.int8), 1000, True)]
  for values, scalar, reverse in rows:
    got = (scalar / Tensor(values)) if reverse else (Tensor(values) / scalar)
    want = (scalar / torch.from_numpy(values)) if reverse else (torch.from_numpy(values) / scalar)
    assert got.dtype == dtypes.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype, low, high", [(np.float32, 87.0, 89.41), (np.float64, 708.0, 710.47)])
def test_sinh_and_cosh_reach_the_largest_finite_values(dtype, low, high):
  """exp(|x|) overflows a little before sinh(x) and cosh(x) do (sinh(89) fits in float32): they were inf there.
  Values and gradients (cosh and sinh) against numpy's long double (x86's 80-bit floats reach past float64)."""
  x = np.concatenate([np.linspace(low, high, 2001), -np.linspace(low, high, 2001)]).astype(dtype)
  wide = x.astype(np.longdouble)
  for op, derivative in (("sinh", np.cosh), ("cosh", np.sinh)):
    t = Tensor(x, requires_grad=True)
    value = getattr(t, op)()
    value.sum().backward()
    for got, exact in ((value.numpy(), getattr(np, op)(wide)), (t.grad.numpy(), derivative(wide))):
      assert np.isfinite(got).all(), f"{op}: {x[~np.isfinite(got)][:3]}"
      ulps = np.abs(got.astype(np.longdouble) - exact) / np.spacing(np.abs(exact).astype(dtype)).astype(np.longdouble)
      assert ulps.max() <= 4, f"{op} {ulps.max():.1f} ulps off"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elu_tanh_cosh_keep_small_arguments(dtype):
  """exp(x) - 1 and the other differences of near-equal exponentials lost a small x: elu(-1.5e-6) was 2% off (0 below
  1e-8), float64 tanh near 0.001 1016 ulps and float64 sinh there 370, cosh's gradient near 0 and sinh far off.
  Relative to float64 references."""
  rng = np.random.default_rng(31)
  x = (np.exp(rng.uniform(np.log(1e-12), np.log(3.0), 4000)) * rng.choice([-1, 1], 4000)).astype(dtype)
  exact = x.astype(np.float64)
  rtol = 6e-7 if dtype == np.float32 else 1e-15
  np.testing.assert_allclose(Tensor(x).elu().numpy(), np.where(exact > 0, exact, np.expm1(exact)), rtol=rtol, atol=0)
  np.testing.assert_allclose(Tensor(x).celu(0.5).numpy(), np.where(exact > 0, exact, 0.5 * np.expm1(exact / 0.5)), rtol=rtol, atol=0)
  np.testing.assert_allclose(Tensor(x).tanh().numpy(), np.tanh(exact), rtol=rtol, atol=0)
  np.testing.assert_allclose(Tensor(x).sinh().numpy(), np.sinh(exact), rtol=rtol, atol=0)
  # 1 - tanh^2 (torch's formula too) loses digits as tanh nears 1: checked below |x| = 1
  inner = np.abs(exact) < 1
  for op, derivative in (("cosh", np.sinh(exact)), ("tanh", 1 - np.tanh(exact) ** 2), ("elu", np.where(exact > 0, 1.0, np.exp(exact)))):
    t = Tensor(x, requires_grad=True)
    getattr(t, op)().sum().backward()
    np.testing.assert_allclose(t.grad.numpy()[inner], derivative[inner], rtol=2e-6 if dtype == np.float32 else 1e-13, atol=0,
                               err_msg=f"gradient of {op}")


def test_broadcast_mismatch_raises():
  with pytest.raises(ValueError):
    Tensor(np.zeros((3, 4), np.float32)) + Tensor(np.zeros((2, 4), np.float32))
  with pytest.raises(ValueError):
    Tensor(np.zeros((3,), np.float32)) < Tensor(np.zeros((4,), np.float32))


# --- in-place operators (through assign) ---------------------------------------------------------
_r = np.random.default_rng(7)
A34 = _r.uniform(-3, 3, (3, 4)).astype(np.float32)
B34 = _r.uniform(0.5, 3, (3, 4)).astype(np.float32)
B4 = _r.uniform(-3, 3, (4,)).astype(np.float32)
I34 = _r.integers(-20, 21, (3, 4)).astype(np.int32)
J34 = _r.integers(-20, 21, (3, 4)).astype(np.int32)
U8 = np.array([[250, 3, 128, 0]], np.uint8)
U32V = np.array([U32 - 1, 16, 2**31], np.uint32)

INPLACE_ROWS = [
  ("f32+=tensor", A34, operator.iadd, lambda: Tensor(B34), A34 + B34),
  ("f32+=broadcast", A34, operator.iadd, lambda: Tensor(B4), A34 + B4),
  ("f32-=scalar", A34, operator.isub, lambda: 1.5, A34 - np.float32(1.5)),
  ("f32*=tensor", A34, operator.imul, lambda: Tensor(B34), A34 * B34),
  ("f32/=tensor", A34, operator.itruediv, lambda: Tensor(B34), A34 / B34),
  ("f32**=2", A34, operator.ipow, lambda: 2, A34 * A34),
  ("i32*=3", I34, operator.imul, lambda: 3, I34 * np.int32(3)),
  ("i32-=tensor", I34, operator.isub, lambda: Tensor(J34), I34 - J34),
  ("i32^=tensor", I34, operator.ixor, lambda: Tensor(J34), I34 ^ J34),
  ("u8+=10_wraps", U8, operator.iadd, lambda: 10, U8 + np.uint8(10)),
  ("u8<<=2_wraps", U8, operator.ilshift, lambda: 2, U8 << np.uint8(2)),
  ("u32>>=3", U32V, operator.irshift, lambda: 3, U32V >> np.uint32(3)),
]


@pytest.mark.parametrize("start,iop,other,expected", [pytest.param(*r[1:], id=r[0]) for r in INPLACE_ROWS])
def test_inplace_operator(start, iop, other, expected):
  a = Tensor(start.copy()).realize()
  before = a
  a = iop(a, other())  # what `a += b` does
  assert a is before
  assert a.dtype == DT[start.dtype.name] and a.shape == start.shape
  if start.dtype.kind == "f":
    np.testing.assert_allclose(a.numpy(), expected, rtol=3e-7, atol=0)
  else:
    np.testing.assert_array_equal(a.numpy(), expected)
  a = iop(a, other())  # a second update starts from the first one's result
  assert a is before
  with np.errstate(all="ignore"):
    again = {operator.iadd: np.add, operator.isub: np.subtract, operator.imul: np.multiply,
             operator.itruediv: np.true_divide, operator.ixor: np.bitwise_xor}.get(iop)
  if again is not None:
    o = other()
    o = o.numpy() if isinstance(o, Tensor) else np.array(o, dtype=start.dtype)
    with np.errstate(all="ignore"):
      expected2 = again(expected, o).astype(start.dtype)
    np.testing.assert_allclose(a.numpy(), expected2, rtol=3e-7 if start.dtype.kind == "f" else 0, atol=0)


def test_inplace_operator_updates_tensor_in_a_statement():
  a = Tensor(A34.copy()).realize()
  alias = a
  a += Tensor(B34)
  a *= 2
  assert a is alias
  np.testing.assert_allclose(alias.numpy(), (A34 + B34) * np.float32(2), rtol=3e-7)


INPLACE_BAD = [
  ("int32/=2_changes_dtype", lambda a: operator.itruediv(a, 2)),
  ("int32+=1.5_changes_dtype", lambda a: operator.iadd(a, 1.5)),
  ("shape_grows", lambda a: operator.iadd(a, Tensor(np.zeros((2, 3, 4), np.int32)))),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in INPLACE_BAD])
def test_inplace_mismatch_raises_and_keeps_value(fn):
  a = Tensor(I34.copy()).realize()
  with pytest.raises((TypeError, ValueError)):
    fn(a)
  np.testing.assert_array_equal(a.numpy(), I34)
  assert a.dtype == dtypes.int32


# --- where / masked_fill / clip / lerp -----------------------------------------------------------
C34 = _r.integers(0, 2, (3, 4)).astype(bool)
C31 = _r.integers(0, 2, (3, 1)).astype(bool)
C43 = _r.integers(0, 2, (4, 3)).astype(bool)
X14 = _r.uniform(-3, 3, (1, 4)).astype(np.float32)
Z34 = (_r.integers(-1, 2, (3, 4)) * 2).astype(np.int32)  # zeros and non-zeros
FZ34 = np.array([[0.0, -0.0, 1.5, -2.0], [0.0, 3.0, 0.0, 0.25], [-1.0, 0.0, 0.0, 7.0]], np.float32)
I8 = _r.integers(-128, 128, (3, 4)).astype(np.int8)
U8_34 = _r.integers(0, 256, (3, 4)).astype(np.uint8)
NAN34 = np.where(C34, np.float32(NAN), A34).astype(np.float32)

WHERE_ROWS = [
  ("bool_tensors", lambda: Tensor(C34).where(Tensor(A34), Tensor(B34)), lambda: np.where(C34, A34, B34), "float32"),
  ("broadcast_scalar_other", lambda: Tensor(C31).where(Tensor(X14), 0.0), lambda: np.where(C31, X14, 0.0), "float32"),
  ("float_scalars", lambda: Tensor(C34).where(1.0, -1.0), lambda: np.where(C34, 1.0, -1.0), "float32"),
  ("int_scalars", lambda: Tensor(C34).where(1, 0), lambda: np.where(C34, 1, 0), "int32"),
  ("float_scalar_int_tensor", lambda: Tensor(C34).where(2.5, Tensor(I34)), lambda: np.where(C34, 2.5, I34), "float32"),
  ("int_condition", lambda: Tensor(Z34).where(Tensor(A34), Tensor(B34)), lambda: np.where(Z34 != 0, A34, B34), "float32"),
  ("float_condition", lambda: Tensor(FZ34).where(Tensor(A34), Tensor(B34)), lambda: np.where(FZ34 != 0, A34, B34),
   "float32"),
  ("int_and_float", lambda: Tensor(C34).where(Tensor(I34), Tensor(A34)), lambda: np.where(C34, I34, A34), "float32"),
  ("int8_and_uint8", lambda: Tensor(C34).where(Tensor(I8), Tensor(U8_34)),
   lambda: np.where(C34, I8.astype(np.int16), U8_34.astype(np.int16)), "int16"),
  ("int_tensors", lambda: Tensor(C34).where(Tensor(I34), Tensor(J34)), lambda: np.where(C34, I34, J34), "int32"),
  ("transposed_condition", lambda: Tensor(C43).T.where(Tensor(A34), Tensor(B34)), lambda: np.where(C43.T, A34, B34),
   "float32"),
  ("flipped_values", lambda: Tensor(C34).where(Tensor(A34).flip(0), Tensor(B34)[:, ::-1]),
   lambda: np.where(C34, A34[::-1], B34[:, ::-1]), "float32"),
  ("0d_condition", lambda: Tensor(np.array(True)).where(Tensor(A34), Tensor(B34)), lambda: A34, "float32"),
  ("empty", lambda: Tensor(np.zeros((0, 4), bool)).where(Tensor(np.zeros((0, 4), np.float32)), 1.0),
   lambda: np.zeros((0, 4)), "float32"),
  ("nan_passes_through", lambda: Tensor(~C34).where(Tensor(NAN34), Tensor(B34)), lambda: np.where(~C34, NAN34, B34),
   "float32"),
]


@pytest.mark.parametrize("fn,ref,out", [pytest.param(*r[1:], id=r[0]) for r in WHERE_ROWS])
def test_where(fn, ref, out):
  check(fn(), ref(), out)


MASKED_FILL_ROWS = [
  ("float_-inf", lambda: Tensor(A34).masked_fill(Tensor(C34), -INF), lambda: np.where(C34, -INF, A34), "float32"),
  ("broadcast_mask", lambda: Tensor(A34).masked_fill(Tensor(C34[:1]), 0.5), lambda: np.where(C34[:1], 0.5, A34),
   "float32"),
  ("int", lambda: Tensor(I34).masked_fill(Tensor(C34), 7), lambda: np.where(C34, 7, I34), "int32"),
  ("transposed_self", lambda: Tensor(A34).T.masked_fill(Tensor(C43), 2.0), lambda: np.where(C43, 2.0, A34.T), "float32"),
  ("float16", lambda: Tensor(A34.astype(np.float16)).masked_fill(Tensor(C34), 1.0),
   lambda: np.where(C34, 1.0, A34.astype(np.float16)), "float16"),
]


@pytest.mark.parametrize("fn,ref,out", [pytest.param(*r[1:], id=r[0]) for r in MASKED_FILL_ROWS])
def test_masked_fill(fn, ref, out):
  check(fn(), ref(), out)


CLIP_ROWS = [
  ("float", lambda: Tensor(A34).clip(-1, 1), lambda: np.clip(A34, -1, 1), "float32"),
  ("float_bounds", lambda: Tensor(A34).clip(-0.5, 2.25), lambda: np.clip(A34, np.float32(-0.5), np.float32(2.25)),
   "float32"),
  ("nan_stays_nan", lambda: Tensor(NAN34).clip(-1, 1), lambda: np.clip(NAN34, -1, 1), "float32"),
  ("inf", lambda: Tensor(np.array([INF, -INF, 0.5], np.float32)).clip(-1, 1), lambda: np.array([1.0, -1.0, 0.5]),
   "float32"),
  ("int", lambda: Tensor(I34).clip(-1, 2), lambda: np.clip(I34, -1, 2), "int32"),
  ("uint8", lambda: Tensor(U8_34).clip(10, 200), lambda: np.clip(U8_34, 10, 200), "uint8"),
  # bounds past the dtype's range bound nothing (they must not wrap around into it)
  ("int8_bounds_past_the_range", lambda: Tensor(I34.astype(np.int8)).clip(-1000, 1000), lambda: I34.astype(np.int8), "int8"),
  ("uint8_negative_min", lambda: Tensor(U8_34).clip(-3, 100), lambda: np.clip(U8_34, 0, 100), "uint8"),
  ("int16_numpy_int_bounds", lambda: Tensor(I34.astype(np.int16)).clip(np.int64(-70000), np.int64(2)),
   lambda: np.clip(I34.astype(np.int16), -32768, 2), "int16"),
  ("transposed", lambda: Tensor(A34).T.clip(-1, 1), lambda: np.clip(A34.T, -1, 1), "float32"),
  ("float16", lambda: Tensor(A34.astype(np.float16)).clip(-0.5, 0.5), lambda: np.clip(A34.astype(np.float16), -0.5, 0.5),
   "float16"),
  ("0d", lambda: Tensor(np.array(3.5, np.float32)).clip(-1, 1), lambda: np.array(1.0), "float32"),
  ("empty", lambda: Tensor(np.zeros((0, 3), np.float32)).clip(-1, 1), lambda: np.zeros((0, 3)), "float32"),
]


@pytest.mark.parametrize("fn,ref,out", [pytest.param(*r[1:], id=r[0]) for r in CLIP_ROWS])
def test_clip(fn, ref, out):
  check(fn(), ref(), out)


def wrapped(values, dtype) -> np.ndarray: return np.asarray(values, np.int64).astype(dtype)   # two's complement


# an int scalar past the dtype's range is wrapped into it first, as in arithmetic (tinygrad's and torch's rule)
EXTREME_ROWS = [
  ("maximum_below", lambda t: t.maximum(-1), lambda a: np.maximum(a, wrapped(-1, a.dtype))),
  ("maximum_above", lambda t: t.maximum(300), lambda a: np.maximum(a, wrapped(300, a.dtype))),
  ("minimum_below", lambda t: t.minimum(-1), lambda a: np.minimum(a, wrapped(-1, a.dtype))),
  ("minimum_above", lambda t: t.minimum(300), lambda a: np.minimum(a, wrapped(300, a.dtype))),
  ("maximum_numpy_int", lambda t: t.maximum(np.int64(-7)), lambda a: np.maximum(a, wrapped(-7, a.dtype))),
]


@pytest.mark.parametrize("fn,ref", [pytest.param(*r[1:], id=r[0]) for r in EXTREME_ROWS])
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_maximum_and_minimum_with_an_int_past_the_dtype_range_wrap_it_first(fn, ref, dtype):
  a = U8_34.astype(dtype)
  check(fn(Tensor(a)), ref(a), dtype)


TRIANGLE_SOURCES = {"float32": A34, "int32": I34, "uint8": U8_34, "bool": I34 > 0}


@pytest.mark.parametrize("name", list(TRIANGLE_SOURCES))
@pytest.mark.parametrize("k", [0, 1, -2])
def test_triu_and_tril_keep_the_dtype_as_numpy(name, k):
  a = TRIANGLE_SOURCES[name]
  check(Tensor(a).triu(k), np.triu(a, k), name)
  check(Tensor(a).tril(k), np.tril(a, k), name)
  stacked = np.stack([a, a[::-1]])
  check(Tensor(stacked).transpose(1, 2).tril(k), np.tril(stacked.transpose(0, 2, 1), k), name)   # batched, a view


W34 = _r.uniform(0, 1, (3, 4)).astype(np.float32)
LERP_ROWS = [
  ("scalar_weight", lambda: Tensor(A34).lerp(Tensor(B34), 0.3), lambda: torch_ref(lambda a, b: torch.lerp(a, b, 0.3), A34, B34),
   "float32"),
  ("tensor_weight", lambda: Tensor(A34).lerp(Tensor(B34), Tensor(W34)), lambda: torch_ref(torch.lerp, A34, B34, W34),
   "float32"),
  ("broadcast_end", lambda: Tensor(A34).lerp(Tensor(B4), 0.75), lambda: torch_ref(lambda a, b: torch.lerp(a, b, 0.75), A34, B4),
   "float32"),
  ("transposed", lambda: Tensor(A34).T.lerp(Tensor(B34).T, Tensor(W34).T),
   lambda: torch_ref(torch.lerp, A34.T, B34.T, W34.T), "float32"),
  ("0d", lambda: Tensor(np.array(1.0, np.float32)).lerp(Tensor(np.array(3.0, np.float32)), 0.25), lambda: np.array(1.5), "float32"),
  ("float16", lambda: Tensor(A34.astype(np.float16)).lerp(Tensor(B34.astype(np.float16)), 0.25),
   lambda: torch_ref(lambda a, b: torch.lerp(a, b, 0.25), A34.astype(np.float16), B34.astype(np.float16)), "float16"),
]


@pytest.mark.parametrize("fn,ref,out", [pytest.param(*r[1:], id=r[0]) for r in LERP_ROWS])
def test_lerp(fn, ref, out):
  check(fn(), ref(), out, "trans")


def test_lerp_is_exact_at_both_ends_as_torch():
  """From end's side for weights of 1/2 and more, as torch computes it: a weight of 1 gives end itself (it gave
  self + (end - self), 0.0999999 for 3 -> 0.1)."""
  start, end = np.array([3.0, -1.5, 1e30, 7.0], np.float32), np.array([0.1, 2.5, -1e30, 1e-8], np.float32)
  np.testing.assert_array_equal(Tensor(start).lerp(Tensor(end), 1.0).numpy(), end)
  np.testing.assert_array_equal(Tensor(start).lerp(Tensor(end), 0.0).numpy(), start)
  weights = np.array([1.0, 0.0, 1.0, 0.0], np.float32)
  np.testing.assert_array_equal(Tensor(start).lerp(Tensor(end), Tensor(weights)).numpy(), np.where(weights == 1, end, start))


def test_ops_leave_inputs_unchanged():
  a, b = Tensor(A34.copy()), Tensor(B34.copy())
  ((a * b + a).relu() - b.exp()).realize()
  np.testing.assert_array_equal(a.numpy(), A34)
  np.testing.assert_array_equal(b.numpy(), B34)


def test_chained_elementwise_matches_torch():
  # a fused chain mixing dtypes and broadcasting
  a, b, i = Tensor(A34), Tensor(B4), Tensor(I34)
  out = ((a * b + i).sigmoid() * 2 - (a / 3).tanh()).maximum(i.float() * 0.1)
  ta, tb, ti = (torch.from_numpy(x.astype(np.float64)) for x in (A34, B4, I34))
  ref = torch.maximum(torch.sigmoid(ta * tb + ti) * 2 - torch.tanh(ta / 3), ti * 0.1).numpy()
  check(out, ref, "float32", "trans")
  assert math.isfinite(float(out.numpy().sum()))


@pytest.mark.parametrize("decimals", [3, 2, 1, -1, -2])
def test_round_to_decimals_as_numpy_and_torch(decimals):
  """numpy's and torch's round(x, decimals): x scaled by 10^decimals, rounded half to even, scaled back; ints round to
  tens and hundreds for negative decimals (numpy) and are left for positive ones."""
  a = np.array([1.2345, -2.5551, 0.125, 1234.5678, 0.5, 1.5, 2.5, 2.675, 1e30, np.nan, -np.inf, -0.0], np.float32)
  expected = torch.round(torch.from_numpy(a), decimals=decimals).numpy()
  np.testing.assert_array_equal(Tensor(a).round(decimals).numpy(), expected)
  np.testing.assert_array_equal(expected, np.round(a, decimals))
  i = np.array([1234, 1250, -1350, 7, 50], np.int32)
  out = Tensor(i).round(decimals)
  assert out.dtype == dtypes.int32
  np.testing.assert_array_equal(out.numpy(), np.round(i, decimals))
