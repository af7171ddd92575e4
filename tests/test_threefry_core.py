"""The threefry2x32 generator core (nbgrad/random/threefry.py), checked against

* the reference outputs of tinygrad 0.9.0 (shared/testdata/threefry_tinygrad090.json), bit for bit;
* an independent numpy implementation of the algorithm of API.md (section Random), written
  directly from the spec with numpy uint32 arrays;
* itself across its serial and parallel kernels, which must give identical bits.
"""
import ast
import json
import math
import pathlib

import numpy as np
import pytest

from nbgrad.random import threefry as tf
from threefry_oracle import oracle_bits

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "testdata" / "threefry_tinygrad090.json"
REF = json.loads(DATA.read_text())
CASES = REF["cases"]
SUMS_KEY = "manual_seed(42); rand(1001): sum and sum of squares in float64"

M32 = 0xFFFFFFFF
TWO_BLOCKS = 2 * tf.BLOCK_PAIRS   # words in two full parallel blocks


# ---------------------------------------------------------------------------------------------
# independent oracle: the spec in numpy uint32 arrays
# ---------------------------------------------------------------------------------------------

def oracle_uniform(seed, counter, n):
    return (oracle_bits(seed, counter, n) >> np.uint32(8)).astype(np.float32) / np.float32(2 ** 24)


def f32_bits_equal(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


# ---------------------------------------------------------------------------------------------
# the reference json: every case, replayed call by call from its 'calls' string
# ---------------------------------------------------------------------------------------------

DTYPES = {"float16": np.float16, "half": np.float16, "float32": np.float32, "float": np.float32,
          "float64": np.float64, "double": np.float64, "int32": np.int32, "int64": np.int64}


def _parse_call(text):
    node = ast.parse(text.strip(), mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name), text
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {}
    for kw in node.keywords:
        if isinstance(kw.value, ast.Name):
            kwargs[kw.arg] = DTYPES[kw.value.id]
        else:
            kwargs[kw.arg] = ast.literal_eval(kw.value)
    return node.func.id, args, kwargs


def replay(calls):
    """Run a 'calls' string on a Threefry state; returns the final call's result."""
    g = tf.Threefry()
    result = None
    for stmt in calls.split("->")[0].split(";"):
        if not stmt.strip():
            continue
        name, args, kwargs = _parse_call(stmt)
        result = getattr(g, name)(*args, **kwargs)
    return result


@pytest.mark.parametrize("case", CASES, ids=[c["calls"] for c in CASES])
def test_reference_case(case):
    got = replay(case["calls"])
    ref_dtype = np.dtype(case["dtype"])
    ref = np.array(case["values"], dtype=ref_dtype)
    assert got.dtype == ref_dtype
    if "first" in case["calls"].split("->")[-1]:     # "-> first 16 values"
        got = got.reshape(-1)[:ref.size]
    assert got.shape == ref.shape
    if ref_dtype == np.float32:
        assert f32_bits_equal(got, ref), (got, ref)
    else:
        assert np.array_equal(got.view(np.uint8), ref.view(np.uint8)), (got, ref)


def test_reference_sum_and_sum_of_squares():
    s, ss = REF[SUMS_KEY]
    u = tf.Threefry(42).rand(1001).astype(np.float64)
    assert u.shape == (1001,)
    np.testing.assert_allclose([u.sum(), (u * u).sum()], [s, ss], rtol=1e-13, atol=0)


def test_reference_cases_are_all_known_calls():
    # every kind of call in the json is replayable (a new kind shows up here by name)
    names = {_parse_call(stmt)[0] for c in CASES for stmt in c["calls"].split("->")[0].split(";")
             if stmt.strip()}
    assert names <= {"manual_seed", "rand", "randn", "randint", "uniform", "normal", "kaiming_uniform"}


# ---------------------------------------------------------------------------------------------
# bits against the numpy oracle of the spec
# ---------------------------------------------------------------------------------------------

BITS_ROWS = [
    # (seed, counter, n)
    (0, 0, 0), (0, 0, 1), (0, 0, 2), (42, 0, 3), (42, 6, 5), (7, 0, 1000), (123456789, 0, 1001),
    (2 ** 32 - 1, 0, 17),                       # largest seed
    (2 ** 32 + 5, 0, 9),                        # seed reduced mod 2**32 (same as seed 5)
    (3, 2 ** 32 - 4, 11),                       # counter wraps inside c1 and c2
    (3, 2 ** 32 - 1, 2), (9, 2 ** 31, 33),
    (5, 12345, tf.PARALLEL_THRESHOLD + 1),      # first size of the parallel path (odd)
    (11, 2 ** 32 - 1000, TWO_BLOCKS + 2 * 17 + 1),   # crosses blocks and the counter wrap
]


@pytest.mark.parametrize("seed,counter,n", BITS_ROWS)
def test_bits_match_spec(seed, counter, n):
    ref = oracle_bits(seed, counter, n)
    got = tf.threefry_bits(seed, counter, n)
    assert got.dtype == np.uint32 and got.shape == (n,)
    assert np.array_equal(got, ref)
    u = tf.uniform_float32(seed, counter, n)
    assert u.dtype == np.float32 and u.shape == (n,)
    assert f32_bits_equal(u, oracle_uniform(seed, counter, n))
    if n:
        assert 0.0 <= u.min() and u.max() < 1.0


def test_seed_mod_2_32():
    assert np.array_equal(tf.threefry_bits(2 ** 32 + 5, 0, 9), tf.threefry_bits(5, 0, 9))
    assert np.array_equal(tf.threefry_bits(5, 2 ** 32 + 3, 9), tf.threefry_bits(5, 3, 9))


# ---------------------------------------------------------------------------------------------
# serial and parallel kernels give identical bits
# ---------------------------------------------------------------------------------------------

SIZES = [0, 1, 2, 3, 1001, TWO_BLOCKS - 1, TWO_BLOCKS, TWO_BLOCKS + 1, 3 * TWO_BLOCKS + 5]


@pytest.mark.parametrize("kind", ["bits", "uniform", "uniform_affine", "normal", "normal_affine"])
@pytest.mark.parametrize("n", SIZES)
def test_serial_parallel_identical(kind, n):
    seed, counter = 20240601, 2 ** 32 - 3 * tf.BLOCK_PAIRS   # the counter wraps in the big draws
    fn = {
        "bits": lambda **kw: tf.threefry_bits(seed, counter, n, **kw),
        "uniform": lambda **kw: tf.uniform_float32(seed, counter, n, **kw),
        "uniform_affine": lambda **kw: tf.uniform_float32(seed, counter, n, low=-2.5, high=7.0, **kw),
        "normal": lambda **kw: tf.normal_float32(seed, counter, n, **kw),
        "normal_affine": lambda **kw: tf.normal_float32(seed, counter, n, mean=3.0, std=0.3, **kw),
    }[kind]
    a, b = fn(parallel=False), fn(parallel=True)
    assert a.shape == b.shape == (n,)
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


# ---------------------------------------------------------------------------------------------
# the fused distributions against float64 numpy formulas on the oracle's uniforms
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 6, 999, TWO_BLOCKS + 3])
def test_normal_box_muller(n):
    seed, counter = 31337, 77
    u = oracle_uniform(seed, counter, 2 * n).astype(np.float64)
    ref = np.cos(2 * np.pi * u[:n]) * np.sqrt(-2 * np.log(1 - u[n:]))
    got = tf.normal_float32(seed, counter, n)
    assert got.dtype == np.float32 and got.shape == (n,)
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5)
    got2 = tf.normal_float32(seed, counter, n, mean=-4.0, std=2.5)
    np.testing.assert_allclose(got2, 2.5 * ref - 4.0, rtol=2e-5, atol=1e-4)


@pytest.mark.parametrize("low,high", [(0.0, 1.0), (-2.0, 3.0), (5.0, 5.5), (-1e3, -10.0), (1.0, 0.0)])
def test_uniform_affine_is_one_rounding(low, high):
    # float32 uniform = fma(float32(high-low), u, float32(low)): the product of two float32 is
    # exact in float64 and the sum of it and a float32 rounds once to the nearest float32 here
    seed, counter, n = 4, 10, 2001
    u = oracle_uniform(seed, counter, n).astype(np.float64)
    exact = np.float64(np.float32(high - low)) * u + np.float64(np.float32(low))
    got = tf.uniform_float32(seed, counter, n, low=low, high=high)
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(got.astype(np.float64) - exact) <= 0.5 * ulp)


def test_unit_interval_values():
    # u is k / 2**24 for an integer k < 2**24
    u = tf.uniform_float32(1, 0, 4096).astype(np.float64) * 2 ** 24
    assert np.array_equal(u, np.floor(u)) and u.min() >= 0 and u.max() < 2 ** 24


# ---------------------------------------------------------------------------------------------
# numpy-level distributions: shapes, dtypes, counter bookkeeping, argument errors
# ---------------------------------------------------------------------------------------------

def test_counter_advances_like_tinygrad():
    g = tf.Threefry(42)
    g.rand(2, 3)
    assert g.counter == 6
    g.randn(4)
    assert g.counter == 14
    g.rand(0)
    g.randn(3, 0)
    assert g.counter == 14
    g.uniform(5, low=1, high=2)
    g.randint(2, 2, low=0, high=3)
    g.normal(3)
    g.kaiming_uniform(2, 3)
    assert g.counter == 14 + 5 + 4 + 6 + 6
    g.manual_seed(7)
    assert (g.seed, g.counter) == (7, 0)
    # a call sequence equals explicit counters
    g = tf.Threefry(9)
    a, b, c = g.rand(3), g.randn(2), g.rand(4)
    assert f32_bits_equal(a, oracle_uniform(9, 0, 3))
    assert f32_bits_equal(b, tf.normal_float32(9, 3, 2))
    assert f32_bits_equal(c, oracle_uniform(9, 7, 4))


def test_counter_wraps():
    g = tf.Threefry(3, counter=2 ** 32 - 2)
    x = g.rand(5)
    assert g.counter == 3
    assert f32_bits_equal(x, oracle_uniform(3, 2 ** 32 - 2, 5))


@pytest.mark.parametrize("shape", [(), (0,), (1,), (2, 3), (3, 0, 2), (1, 1, 5)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_rand_randn_shapes_dtypes(shape, dtype):
    n = math.prod(shape)
    r = tf.rand_numpy(8, 0, shape, dtype)
    assert r.shape == shape and r.dtype == dtype
    assert np.array_equal(r.reshape(-1), oracle_uniform(8, 0, n).astype(dtype))
    z = tf.randn_numpy(8, 0, shape, dtype)
    assert z.shape == shape and z.dtype == dtype
    assert np.array_equal(z.reshape(-1), tf.normal_float32(8, 0, n).astype(dtype))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
def test_randint_range_and_formula(dtype):
    r = tf.randint_numpy(2, 0, (50, 4), 3, 9, dtype)
    assert r.shape == (50, 4) and r.dtype == dtype
    u = oracle_uniform(2, 0, 200).reshape(50, 4)
    assert np.array_equal(r, (np.trunc(np.float32(6) * u) + 3).astype(dtype))
    assert r.min() >= 3 and r.max() < 9


def test_uniform_other_dtypes():
    u = oracle_uniform(6, 0, 12).reshape(3, 4)
    r64 = tf.uniform_numpy(6, 0, (3, 4), -1.5, 2.0, np.float64)
    assert r64.dtype == np.float64
    assert np.array_equal(r64, (np.float32(3.5) * u).astype(np.float64) + (-1.5))
    r16 = tf.uniform_numpy(6, 0, (3, 4), -1.5, 2.0, np.float16)
    assert r16.dtype == np.float16
    assert np.array_equal(r16, (np.float32(3.5) * u).astype(np.float16) + np.float16(-1.5))


@pytest.mark.parametrize("low,high,dtype,exc", [
    (0.5, 10, np.int32, TypeError), (0, 10.0, np.int32, TypeError), (0, 10, np.float32, TypeError),
])
def test_randint_errors(low, high, dtype, exc):
    g = tf.Threefry(1)
    with pytest.raises(exc):
        g.randint(3, low=low, high=high, dtype=dtype)
    assert g.counter == 0


@pytest.mark.parametrize("call", [
    lambda: tf.threefry_bits(0, 0, -1),
    lambda: tf.uniform_float32(0, 0, 4, np.empty(3, np.float32)),
    lambda: tf.uniform_float32(0, 0, 4, np.empty(4, np.float64)),
    lambda: tf.normal_float32(0, 0, 4, np.empty((2, 2), np.float32)),
    lambda: tf.threefry_bits(0, 0, 4, np.empty(4, np.int32)),
    lambda: tf.rand_numpy(0, 0, (2, -1)),
])
def test_bad_arguments(call):
    with pytest.raises(ValueError):
        call()


def test_out_buffer_only_first_n_written():
    out = np.full(10, -7.0, np.float32)
    res = tf.uniform_float32(5, 0, 7, out)
    assert res is out
    assert f32_bits_equal(out[:7], oracle_uniform(5, 0, 7)) and np.all(out[7:] == -7.0)
    out = np.full(5, -7.0, np.float32)
    tf.normal_float32(5, 0, 0, out)
    assert np.all(out == -7.0)
    bits = np.zeros(4, np.uint32)
    tf.threefry_bits(5, 0, 3, bits)
    assert np.array_equal(bits[:3], oracle_bits(5, 0, 3)) and bits[3] == 0
