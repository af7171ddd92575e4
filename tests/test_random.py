"""Tensor's random API (API.md, section Random): manual_seed, rand, randn, uniform, randint, normal,
scaled_uniform, glorot_uniform, kaiming_uniform, kaiming_normal, multinomial, dropout.

Oracles:
* the reference outputs of tinygrad 0.9.0 (shared/testdata/threefry_tinygrad090.json), replayed
  through ``Tensor`` in fresh subprocesses (lazy and eager) and compared bit for bit;
* an independent numpy implementation of the threefry2x32 generator written from the spec;
* torch for dtype casts and the normal CDF; closed-form distributions for the statistics.
"""
import ast
import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch

import nbgrad
from nbgrad import Tensor, dtypes, nn
from threefry_oracle import oracle_bits, first_counter

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "testdata" / "threefry_tinygrad090.json"
REF = json.loads(DATA.read_text())
CASES = REF["cases"]
SUMS_KEY = "manual_seed(42); rand(1001): sum and sum of squares in float64"

M32 = 0xFFFFFFFF
KS_CRIT = 1.63     # asymptotic Kolmogorov-Smirnov critical value (times 1/sqrt(n)) at alpha = 0.01


# ---------------------------------------------------------------------------------------------
# independent oracle: the generator of the spec in numpy uint32 arithmetic
# ---------------------------------------------------------------------------------------------

def oracle_rand(seed, counter, shape):
    """float32 uniform values of a Tensor draw of prod(shape) words with the generator's counter at counter."""
    n = math.prod(shape)
    u = (oracle_bits(seed, first_counter(counter, n), n) >> np.uint32(8)).astype(np.float32) / np.float32(2 ** 24)
    return u.reshape(shape)


def oracle_randn64(seed, counter, shape):
    """Box-Muller on rand(2, *shape) (float32 uniforms and float32 argument rounding), in float64."""
    u = oracle_rand(seed, counter, (2, *shape))
    arg = (np.float32(2 * math.pi) * u[0]).astype(np.float64)
    return np.cos(arg) * np.sqrt(-2.0 * np.log((np.float32(1) - u[1]).astype(np.float64)))


def f32_bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return (a.dtype == b.dtype == np.float32 and a.shape == b.shape
            and np.array_equal(a.view(np.uint32), b.view(np.uint32)))


def ks_statistic(x, cdf):
    """Two-sided Kolmogorov-Smirnov statistic of sample x against the vectorized cdf."""
    x = np.sort(np.asarray(x, np.float64).ravel())
    n = x.size
    f = cdf(x)
    i = np.arange(1, n + 1, dtype=np.float64)
    return max(np.max(i / n - f), np.max(f - (i - 1) / n))


def normal_cdf(x):
    return torch.special.ndtr(torch.from_numpy(np.asarray(x, np.float64))).numpy()


def test_oracle_matches_reference_rand_cases():
    # the numpy oracle reproduces the plain rand rows of the reference json (sanity of the oracle)
    assert f32_bits_equal(oracle_rand(42, 0, (2, 3)), np.array(CASES[0]["values"], np.float32))
    assert f32_bits_equal(oracle_rand(42, 6, (5,)), np.array(CASES[1]["values"], np.float32))
    assert f32_bits_equal(oracle_rand(0, 0, (7,)), np.array(CASES[2]["values"], np.float32))


# ---------------------------------------------------------------------------------------------
# the reference json, replayed through Tensor in a fresh process (lazy and eager)
# ---------------------------------------------------------------------------------------------

REPLAY_SCRIPT = r'''
import ast, json, sys
import numpy as np
from nbgrad import Tensor, dtypes

ref = json.loads(open(sys.argv[1]).read())

def parse(stmt):
    node = ast.parse(stmt.strip(), mode="eval").body
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {}
    for kw in node.keywords:
        kwargs[kw.arg] = getattr(dtypes, kw.value.id) if isinstance(kw.value, ast.Name) else ast.literal_eval(kw.value)
    return node.func.id, args, kwargs

from nbgrad.helpers import eager_enabled
out = {"cases": [], "eager": bool(eager_enabled())}
for case in ref["cases"]:
    result = None
    for stmt in case["calls"].split("->")[0].split(";"):
        if stmt.strip():
            name, args, kwargs = parse(stmt)
            result = getattr(Tensor, name)(*args, **kwargs)
    arr = result.numpy()
    out["cases"].append({"calls": case["calls"], "tdtype": result.dtype.name, "dtype": str(arr.dtype),
                         "shape": list(arr.shape), "hex": np.ascontiguousarray(arr).tobytes().hex()})

Tensor.manual_seed(42)
u = Tensor.rand(1001).numpy().astype(np.float64)
out["np_sums"] = [float(u.sum()), float((u * u).sum())]
Tensor.manual_seed(42)
r = Tensor.rand(1001).cast(dtypes.float64)
out["tensor_sums"] = [r.sum().item(), (r * r).sum().item()]
print("@@" + json.dumps(out))
'''

_replays = {}


def replay(mode):
    if mode not in _replays:
        env = dict(os.environ)
        env.pop("NBGRAD_EAGER", None)
        if mode == "eager":
            env["NBGRAD_EAGER"] = "1"
        proc = subprocess.run([sys.executable, "-c", REPLAY_SCRIPT, str(DATA)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-4000:]
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@")][-1]
        _replays[mode] = json.loads(line[2:])
    return _replays[mode]


def _check_case(case, got):
    assert got["calls"] == case["calls"]
    ref = np.array(case["values"], dtype=np.dtype(case["dtype"]))
    assert got["tdtype"] == case["dtype"]
    arr = np.frombuffer(bytes.fromhex(got["hex"]), dtype=np.dtype(got["dtype"])).reshape(got["shape"])
    assert arr.dtype == ref.dtype
    if "first" in case["calls"].split("->")[-1]:     # "-> first 16 values"
        arr = arr.reshape(-1)[:ref.size]
    assert arr.shape == ref.shape
    if ref.dtype == np.float32:
        assert f32_bits_equal(arr, ref), (arr, ref)
    else:
        assert np.array_equal(arr.view(np.uint8), ref.view(np.uint8)), (arr, ref)


@pytest.mark.parametrize("mode", ["lazy", "eager"])
@pytest.mark.parametrize("idx", range(len(CASES)), ids=[c["calls"] for c in CASES])
def test_reference_case_fresh_process(mode, idx):
    out = replay(mode)
    assert out["eager"] == (mode == "eager")
    assert len(out["cases"]) == len(CASES)
    _check_case(CASES[idx], out["cases"][idx])


@pytest.mark.parametrize("mode", ["lazy", "eager"])
def test_reference_sum_and_sum_of_squares(mode):
    s, ss = REF[SUMS_KEY]
    out = replay(mode)
    # the values are k / 2**24, so their float64 sum is exact whatever the order
    assert out["np_sums"][0] == s
    np.testing.assert_allclose(out["np_sums"][1], ss, rtol=1e-13, atol=0)
    # the same draw cast and reduced by nbgrad
    np.testing.assert_allclose(out["tensor_sums"], [s, ss], rtol=1e-12, atol=0)


# ---------------------------------------------------------------------------------------------
# counter bookkeeping, seeds, lazy vs eager vs fused
# ---------------------------------------------------------------------------------------------

def test_counter_continues_across_calls():
    Tensor.manual_seed(42)
    a = Tensor.rand(2, 3).numpy()
    b = Tensor.rand(5).numpy()
    assert f32_bits_equal(a, np.array(CASES[0]["values"], np.float32))
    assert f32_bits_equal(b, np.array(CASES[1]["values"], np.float32))
    # a third call continues at counter 11; randn takes 2 * n words
    c = Tensor.randn(3).numpy()
    np.testing.assert_allclose(c, oracle_randn64(42, 11, (3,)), rtol=2e-5, atol=2e-5)
    d = Tensor.rand(4).numpy()
    assert f32_bits_equal(d, oracle_rand(42, 17, (4,)))


def _sequence():
    return [Tensor.rand(3, 2).numpy(), Tensor.randn(4).numpy(), Tensor.randint(5, low=-3, high=9).numpy(),
            Tensor.uniform(2, 2, low=1, high=4).numpy(), Tensor.normal(3, mean=2, std=0.5).numpy()]


def test_same_seed_same_sequence_different_seed_differs():
    Tensor.manual_seed(2024)
    first = _sequence()
    Tensor.manual_seed(2024)
    second = _sequence()
    Tensor.manual_seed(2025)
    third = _sequence()
    for a, b in zip(first, second):
        assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))
    assert not np.array_equal(first[0], third[0])
    assert not np.array_equal(first[1], third[1])
    assert not np.array_equal(first[4], third[4])


def test_manual_seed_resets_counter_and_reduces_mod_2_32():
    Tensor.manual_seed(5)
    Tensor.rand(10).realize()
    Tensor.manual_seed(5)
    a = Tensor.rand(9).numpy()
    Tensor.manual_seed(2 ** 32 + 5)
    b = Tensor.rand(9).numpy()
    assert f32_bits_equal(a, oracle_rand(5, 0, (9,)))
    assert f32_bits_equal(b, oracle_rand(5, 0, (9,)))


def test_default_seed_argument_is_zero():
    Tensor.manual_seed()
    assert f32_bits_equal(Tensor.rand(7).numpy(), np.array(CASES[2]["values"], np.float32))


@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (2,), (3,), (4, 1, 3), (17,), (5, 7), (1, 1000)])
def test_rand_shapes_bit_exact(shape):
    Tensor.manual_seed(77)
    t = Tensor.rand(*shape)
    assert t.shape == shape and t.dtype == dtypes.float32
    got = t.numpy()
    assert got.shape == shape
    assert f32_bits_equal(got, oracle_rand(77, 0, shape))
    # the counter advanced by prod(shape) (1 for a 0-d draw)
    assert f32_bits_equal(Tensor.rand(3).numpy(), oracle_rand(77, math.prod(shape), (3,)))


def test_draws_of_one_or_two_values_are_tinygrads():
    """Values printed by tinygrad 0.9.0 (THREEFRY=1): a draw of one or two words starts at the advanced counter."""
    Tensor.manual_seed(0)
    assert Tensor.rand(1).tolist() == [0.32367265224456787]
    Tensor.manual_seed(0)
    assert Tensor.rand(2).tolist() == [0.7466410398483276, 0.523730993270874]
    Tensor.manual_seed(5)
    assert [Tensor.rand(1).tolist(), Tensor.rand(2).tolist(), Tensor.rand(3).tolist()] == [
        [0.7295240163803101], [0.17328715324401855, 0.47296494245529175], [0.2784230709075928, 0.2539779543876648, 0.39785295724868774]]
    np.testing.assert_allclose(Tensor.randn(1).numpy(), [-0.5143445730209351], rtol=1e-5)
    Tensor.manual_seed(0)
    assert nn.Linear(4, 1).bias.tolist() == [0.24787938594818115]
    Tensor.manual_seed(0)
    assert Tensor([[0.3, 0.3, 0.4]]).multinomial().tolist() == [[1]]


def test_rand_tuple_shape_argument():
    Tensor.manual_seed(3)
    got = Tensor.rand((2, 5)).numpy()
    assert f32_bits_equal(got, oracle_rand(3, 0, (2, 5)))


@pytest.mark.parametrize("fn", ["rand", "randn", "uniform", "randint", "normal"])
@pytest.mark.parametrize("shape", [(0,), (2, 0, 3)])
def test_zero_size_draw_gives_empty_and_keeps_counter(fn, shape):
    Tensor.manual_seed(42)
    t = getattr(Tensor, fn)(*shape)
    assert t.shape == shape
    assert t.numpy().shape == shape
    # an empty draw does not advance the counter
    assert f32_bits_equal(Tensor.rand(2, 3).numpy(), np.array(CASES[0]["values"], np.float32))


def test_counter_taken_when_the_op_is_built_not_when_realized():
    Tensor.manual_seed(42)
    a = Tensor.rand(2, 3)
    b = Tensor.rand(5)
    bv = b.numpy()                 # realize the later draw first
    av = a.numpy()
    assert f32_bits_equal(av, np.array(CASES[0]["values"], np.float32))
    assert f32_bits_equal(bv, np.array(CASES[1]["values"], np.float32))


def test_eager_context_gives_same_bits():
    with nbgrad.eager():
        Tensor.manual_seed(42)
        a = Tensor.rand(2, 3).numpy()
        b = Tensor.rand(5).numpy()
        Tensor.manual_seed(1337)
        c = Tensor.uniform(4, low=-2, high=3).numpy()
    assert f32_bits_equal(a, np.array(CASES[0]["values"], np.float32))
    assert f32_bits_equal(b, np.array(CASES[1]["values"], np.float32))
    assert f32_bits_equal(c, np.array(CASES[6]["values"], np.float32))


def _case(prefix):
    return next(c for c in CASES if c["calls"].startswith(prefix))


# (seed, builder, oracle applied to the json values of the named case)
FUSED_ROWS = [
    ("manual_seed(42); rand(2,3)", lambda: Tensor.rand(2, 3) * 2, lambda v: v * np.float32(2)),
    ("manual_seed(42); rand(2,3)", lambda: (Tensor.rand(2, 3) + 1).T, lambda v: (v + np.float32(1)).T),
    ("manual_seed(0); rand(7)", lambda: Tensor.rand(7).flip(0)[1:6], lambda v: v[::-1][1:6]),
    ("manual_seed(0); rand(7)", lambda: Tensor.rand(7).max().reshape(1), lambda v: v.max(keepdims=True)),
    ("manual_seed(42); randn(2,3)", lambda: Tensor.randn(2, 3).relu(), lambda v: np.maximum(v, np.float32(0))),
    ("manual_seed(42); randn(2,3)", lambda: Tensor.randn(2, 3) - Tensor.zeros(2, 3), lambda v: v),
    ("manual_seed(1337); uniform(4,low=-2,high=3)", lambda: Tensor.uniform(4, low=-2, high=3) * 1, lambda v: v),
    ("manual_seed(42); randint(2,3,low=5,high=10)", lambda: Tensor.randint(2, 3, low=5, high=10) + 1,
     lambda v: v + np.int32(1)),
    ("manual_seed(5); normal(2,2,mean=10,std=2)", lambda: -Tensor.normal(2, 2, mean=10, std=2), lambda v: -v),
    ("manual_seed(9); kaiming_uniform(3,4)", lambda: Tensor.kaiming_uniform(3, 4).abs(), np.abs),
]


@pytest.mark.parametrize("prefix,build,post", FUSED_ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(FUSED_ROWS)])
def test_draw_fused_with_other_work(prefix, build, post):
    case = _case(prefix)
    seed = int(prefix.split("manual_seed(")[1].split(")")[0])
    ref = post(np.array(case["values"], dtype=np.dtype(case["dtype"])))
    Tensor.manual_seed(seed)
    got = build().numpy()
    assert got.dtype == ref.dtype and got.shape == ref.shape
    assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(ref).view(np.uint8)), (got, ref)


def test_two_draws_in_one_realize():
    Tensor.manual_seed(42)
    got = (Tensor.rand(2, 3).reshape(6)[:5] + Tensor.rand(5)).numpy()
    ref = np.array(CASES[0]["values"], np.float32).reshape(6)[:5] + np.array(CASES[1]["values"], np.float32)
    assert f32_bits_equal(got, ref)


# ---------------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------------

N_STAT = 1_000_000


def test_rand_large_bit_exact_range_and_ks():
    Tensor.manual_seed(11)
    u = Tensor.rand(N_STAT).numpy()
    assert f32_bits_equal(u, oracle_rand(11, 0, (N_STAT,)))
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.002
    assert ks_statistic(u, lambda x: np.clip(x, 0, 1)) < KS_CRIT / math.sqrt(N_STAT)


def test_randn_moments_ks_and_oracle():
    Tensor.manual_seed(12)
    z = Tensor.randn(N_STAT).numpy()
    assert z.dtype == np.float32 and z.shape == (N_STAT,)
    assert np.isfinite(z).all()
    np.testing.assert_allclose(z, oracle_randn64(12, 0, (N_STAT,)), rtol=2e-5, atol=2e-5)
    assert abs(z.mean()) < 0.005 and abs(z.std() - 1) < 0.005
    assert ks_statistic(z, normal_cdf) < KS_CRIT / math.sqrt(N_STAT)
    # randn consumed 2 * n words
    assert f32_bits_equal(Tensor.rand(3).numpy(), oracle_rand(12, 2 * N_STAT, (3,)))


def test_box_muller_sin_and_log2_are_libms_on_every_argument():
    """randn's kernel computes sinf and log2f inline (nbgrad.random.libm); tinygrad's values come from libm's.
    Box-Muller takes sin(fma(-u, 2pi, pi/2)) and log2(1 - u) for u = k / 2^24: all 2^24 of each are checked
    against libm (numba's math.sin and math.log2 on float32 call sinf and log2f), and log2 also on positive
    normal float32 values of every exponent."""
    import numba
    from nbgrad.random.libm import fma, log2f_of_normal, sinf_below_120

    @numba.njit
    def compare(sin_args, log_args, out):
        for i in range(sin_args.size):
            out[0, i], out[1, i] = math.sin(sin_args[i]), sinf_below_120(sin_args[i])
        for i in range(log_args.size):
            out[2, i], out[3, i] = math.log2(log_args[i]), log2f_of_normal(log_args[i])

    @numba.njit
    def box_muller_arguments(u):
        return np.array([fma(-v, np.float32(6.283185307179586), np.float32(1.5707963267948966)) for v in u])

    u = np.arange(2 ** 24, dtype=np.uint32).astype(np.float32) * np.float32(2.0 ** -24)
    sin_args = box_muller_arguments(u)
    rng = np.random.default_rng(3)
    log_args = np.concatenate([np.float32(1) - u, np.exp2(rng.uniform(-125.9, 127.9, 2 ** 22)).astype(np.float32),
                               rng.uniform(1.1755e-38, 3.4e38, 2 ** 22).astype(np.float32)])
    out = np.empty((4, log_args.size), np.float32)
    compare(sin_args, log_args, out)
    assert f32_bits_equal(out[1, :u.size], out[0, :u.size]) and f32_bits_equal(out[3], out[2])


@pytest.mark.parametrize("low,high", [(0.0, 1.0), (-2, 3), (-5.5, -1.25), (10, 1000), (0.0, 1e-3)])
def test_uniform_range_and_ks(low, high):
    n = N_STAT // 4
    Tensor.manual_seed(13)
    x = Tensor.uniform(n, low=low, high=high).numpy()
    assert x.dtype == np.float32
    exact = (high - low) * oracle_rand(13, 0, (n,)).astype(np.float64) + low
    ulp = np.spacing(np.float32(max(abs(low), abs(high))))
    assert np.max(np.abs(x - exact)) <= ulp
    assert x.min() >= np.float32(low) and x.max() <= np.float32(high)
    assert ks_statistic(x, lambda v: np.clip((v - low) / (high - low), 0, 1)) < KS_CRIT / math.sqrt(n)


@pytest.mark.parametrize("low,high,dtype", [
    (0, 10, None), (-3, 4, None), (5, 6, None), (-100, 100, dtypes.int32), (0, 7, dtypes.int8),
    (-20, 20, dtypes.int16), (0, 200, dtypes.uint8), (-1000, 1000, dtypes.int64), (3, 40, dtypes.uint32)])
def test_randint_bit_exact_range_and_evenness(low, high, dtype):
    n = 200_000
    Tensor.manual_seed(14)
    t = Tensor.randint(n, low=low, high=high) if dtype is None else Tensor.randint(n, low=low, high=high, dtype=dtype)
    want_dt = dtypes.int32 if dtype is None else dtype
    assert t.dtype == want_dt
    x = t.numpy()
    assert x.dtype == want_dt.np
    u = oracle_rand(14, 0, (n,))
    ref = (np.float32(high - low) * u).astype(np.int64) + low      # truncate, then shift
    assert np.array_equal(x.astype(np.int64), ref)
    assert x.min() >= low and x.max() < high
    k = high - low
    counts = np.bincount(x.astype(np.int64) - low, minlength=k)
    assert counts.size == k and (k > n // 50 or counts.min() > 0)
    expected = n / k
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < k + 6 * math.sqrt(2 * k) + 10     # well above the 0.999 quantile of chi2(k - 1)


@pytest.mark.parametrize("low,high,dtype", [(-2**31, 2**31 - 1, dtypes.int32), (-2**63, 2**63 - 1, dtypes.int64),
                                             (0, 2**64 - 1, dtypes.uint64), (-2**31, 2**31, dtypes.int64)])
def test_randint_over_the_dtype_s_whole_range_wraps_as_tinygrad(low, high, dtype):
  """tinygrad's randint is int(span * u) + low with the int cast wrapping past the dtype (THREEFRY=1 gives
  1629445376, 1470841600, ... for seed 0 over int32): spread over the whole range, not stuck at the cast's limit."""
  n = 20_000
  Tensor.manual_seed(0)
  x = Tensor.randint(n, low=low, high=high, dtype=dtype).numpy()
  v = np.minimum(np.float32(high - low) * oracle_rand(0, 0, (n,)), np.float32(2.0**64) - np.float32(2.0**40))
  ref = (v.astype(np.uint64) + np.uint64(low % 2**64)).astype(dtype.np)   # wraps modulo 2^64, then to the dtype's bits
  np.testing.assert_array_equal(x, ref)
  if dtype == dtypes.int32: np.testing.assert_array_equal(x[:3], [1629445376, 1470841600, 466709248])
  assert x.min() >= low and x.max() < high
  assert 0.45 < ((x.astype(np.float64) - low) / (high - low) < 0.5).mean() < 0.55   # as many in each half


@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (10, 2), (-3.5, 0.25), (1e3, 50.0)])
def test_normal_moments_and_oracle(mean, std):
    n = N_STAT // 4
    Tensor.manual_seed(15)
    x = Tensor.normal(n, mean=mean, std=std).numpy()
    assert x.dtype == np.float32
    ref = std * oracle_randn64(15, 0, (n,)) + mean
    np.testing.assert_allclose(x, ref, rtol=2e-5, atol=2e-5 * std)
    assert abs(x.mean() - mean) < 0.01 * std and abs(x.std() - std) < 0.01 * std
    assert ks_statistic((x.astype(np.float64) - mean) / std, normal_cdf) < KS_CRIT / math.sqrt(n)


INIT_SHAPES = [(64, 32), (16, 3, 3, 3), (7, 1), (200, 50)]


def _bounds(kind, shape, a):
    fan_in = math.prod(shape[1:])
    if kind == "scaled_uniform":
        return math.prod(shape) ** -0.5
    if kind == "glorot_uniform":
        return (6 / (shape[0] + fan_in)) ** 0.5
    return math.sqrt(3.0) * math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(fan_in)     # kaiming_uniform


@pytest.mark.parametrize("kind", ["scaled_uniform", "glorot_uniform", "kaiming_uniform"])
@pytest.mark.parametrize("shape", INIT_SHAPES)
def test_uniform_initializers(kind, shape):
    a = 0.01
    bound = _bounds(kind, shape, a)
    Tensor.manual_seed(16)
    t = getattr(Tensor, kind)(*shape)
    assert t.shape == shape and t.dtype == dtypes.float32
    x = t.numpy()
    u = oracle_rand(16, 0, shape).astype(np.float64)
    np.testing.assert_allclose(x, (2 * u - 1) * bound, rtol=1e-6, atol=1e-6 * bound)
    assert np.abs(x).max() <= bound * (1 + 1e-6)
    if x.size >= 1000:
        assert np.abs(x).max() > 0.99 * bound
        assert abs(x.std() - bound / math.sqrt(3)) < 0.05 * bound


@pytest.mark.parametrize("a", [0.0, 0.01, 1.0, math.sqrt(5)])
def test_kaiming_uniform_slope(a):
    shape = (128, 20)
    Tensor.manual_seed(17)
    x = Tensor.kaiming_uniform(*shape, a=a).numpy()
    bound = _bounds("kaiming_uniform", shape, a)
    u = oracle_rand(17, 0, shape).astype(np.float64)
    np.testing.assert_allclose(x, (2 * u - 1) * bound, rtol=1e-6, atol=1e-6 * bound)


@pytest.mark.parametrize("shape,a", [((256, 64), 0.01), ((100, 4, 5, 5), 0.0), ((1000, 9), 1.0)])
def test_kaiming_normal(shape, a):
    std = math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(math.prod(shape[1:]))
    Tensor.manual_seed(18)
    t = Tensor.kaiming_normal(*shape, a=a)
    assert t.shape == shape and t.dtype == dtypes.float32
    x = t.numpy()
    np.testing.assert_allclose(x, std * oracle_randn64(18, 0, shape), rtol=2e-5, atol=2e-5 * std)
    assert abs(x.std() - std) < 0.02 * std and abs(x.mean()) < 0.02 * std


# ---------------------------------------------------------------------------------------------
# multinomial
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("weights", [[1.0, 2.0, 3.0, 4.0], [0.0, 5.0, 0.0, 1.0, 4.0], [7.0], [2, 1, 1]])
def test_multinomial_1d_with_replacement_frequencies(weights):
    n = 100_000
    w = np.array(weights, np.float64)
    p = w / w.sum()
    Tensor.manual_seed(19)
    t = Tensor(weights).multinomial(n, replacement=True)
    assert t.shape == (n,) and t.dtype == dtypes.int32
    x = t.numpy()
    assert x.min() >= 0 and x.max() < len(weights)
    freq = np.bincount(x, minlength=len(weights)) / n
    assert np.all(freq[p == 0] == 0)
    np.testing.assert_allclose(freq, p, atol=0.006)


def test_multinomial_2d_with_replacement_frequencies():
    w = np.array([[1.0, 0.0, 1.0, 2.0], [5.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 3.0]], np.float32)
    n = 50_000
    Tensor.manual_seed(20)
    t = Tensor(w).multinomial(n, replacement=True)
    assert t.shape == (3, n) and t.dtype == dtypes.int32
    x = t.numpy()
    for r in range(3):
        freq = np.bincount(x[r], minlength=4) / n
        p = w[r] / w[r].sum()
        assert np.all(freq[p == 0] == 0)
        np.testing.assert_allclose(freq, p, atol=0.01)


def test_multinomial_noncontiguous_weights():
    # a transposed view: row r of w.T is column r of w
    w = np.array([[1.0, 8.0], [3.0, 0.0], [4.0, 2.0]], np.float32)
    n = 40_000
    Tensor.manual_seed(21)
    x = Tensor(w).T.multinomial(n, replacement=True).numpy()
    assert x.shape == (2, n)
    for r in range(2):
        p = w[:, r] / w[:, r].sum()
        np.testing.assert_allclose(np.bincount(x[r], minlength=3) / n, p, atol=0.01)


def test_multinomial_integer_weights():
    n = 40_000
    Tensor.manual_seed(22)
    x = Tensor([1, 3], dtype=dtypes.int32).multinomial(n, replacement=True).numpy()
    np.testing.assert_allclose(np.bincount(x, minlength=2) / n, [0.25, 0.75], atol=0.01)


@pytest.mark.parametrize("weights,num_samples", [
    ([1.0, 2.0, 3.0, 4.0], 1), ([1.0, 2.0, 3.0, 4.0], 2), ([1.0, 2.0, 3.0, 4.0], 4),
    ([[1.0, 1.0, 1.0], [9.0, 0.5, 0.25]], 3), ([[2.0, 1.0, 1.0, 5.0, 3.0]], 5), ([[3.0, 4.0]], 1),
    ([[5.0]], 1)])
def test_multinomial_without_replacement_distinct(weights, num_samples):
    Tensor.manual_seed(23)
    t = Tensor(weights).multinomial(num_samples, replacement=False)
    w = np.array(weights)
    want_shape = (num_samples,) if w.ndim == 1 else (w.shape[0], num_samples)
    assert t.shape == want_shape and t.dtype == dtypes.int32
    x = t.numpy().reshape(-1, num_samples)
    for row in x:
        assert len(set(row.tolist())) == num_samples
        assert row.min() >= 0 and row.max() < w.shape[-1]
    if num_samples == w.shape[-1]:
        assert np.all(np.sort(x, axis=1) == np.arange(num_samples))


def test_multinomial_without_replacement_pair_distribution():
    # many independent rows of the same weights: the ordered pair (first, second) has probability
    # w_i / W * w_j / (W - w_i)
    w = np.array([1.0, 2.0, 3.0, 4.0])
    rows = 40_000
    Tensor.manual_seed(24)
    x = Tensor(np.tile(w.astype(np.float32), (rows, 1))).multinomial(2, replacement=False).numpy()
    assert x.shape == (rows, 2)
    assert np.all(x[:, 0] != x[:, 1])
    W = w.sum()
    counts = np.zeros((4, 4))
    np.add.at(counts, (x[:, 0], x[:, 1]), 1)
    expected = np.array([[0 if i == j else w[i] / W * w[j] / (W - w[i]) for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(counts / rows, expected, atol=0.008)
    np.testing.assert_allclose(np.bincount(x[:, 0], minlength=4) / rows, w / W, atol=0.008)


def test_multinomial_without_replacement_takes_zero_weights_last():
    # torch's rule: once the positive weights are used up, the zero-weight categories follow; a permutation
    Tensor.manual_seed(25)
    x = Tensor([[0.1, 0.0, 0.6, 0.3], [0.0, 1.0, 0.0, 0.0]] * 50).multinomial(4, replacement=False).numpy()
    assert np.all(np.sort(x, axis=1) == np.arange(4))
    assert set(x[0::2, 3].tolist()) == {1}   # the only zero weight of the first rows comes last
    assert set(x[1::2, 0].tolist()) == {1}


def test_multinomial_takes_a_numpy_int_count():
    Tensor.manual_seed(26)
    assert Tensor([1.0, 2.0]).multinomial(np.int64(3), replacement=True).shape == (3,)


# ---------------------------------------------------------------------------------------------
# dropout
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.1, 0.25, 0.5, 0.9])
def test_dropout_training_keep_rate_scale_and_grad(p):
    shape = (300, 200)
    base = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    old = Tensor.training
    try:
        Tensor.training = True
        x = Tensor(base, requires_grad=True)
        Tensor.manual_seed(25)
        y = x.dropout(p)
        out = y.numpy()
        y.sum().backward()
        grad = x.grad.numpy()
    finally:
        Tensor.training = old
    keep = oracle_rand(25, 0, shape) >= np.float32(p)
    assert abs(keep.mean() - (1 - p)) < 0.01
    scale = 1 / (1 - p)
    assert np.all(out[~keep] == 0)
    np.testing.assert_allclose(out[keep], base[keep] * scale, rtol=1e-6, atol=0)
    assert grad.shape == shape
    assert np.all(grad[~keep] == 0)
    np.testing.assert_allclose(grad[keep], np.float32(scale), rtol=1e-6)


def test_dropout_noncontiguous_input():
    base = np.arange(1, 61, dtype=np.float32).reshape(6, 10)
    old = Tensor.training
    try:
        Tensor.training = True
        Tensor.manual_seed(26)
        out = Tensor(base).T.dropout(0.5).numpy()
    finally:
        Tensor.training = old
    keep = oracle_rand(26, 0, (10, 6)) >= np.float32(0.5)
    np.testing.assert_allclose(out, np.where(keep, base.T * 2, 0), rtol=1e-6)


@pytest.mark.parametrize("p", [0.0, 0.5, 0.99])
def test_dropout_not_training_is_identity(p):
    base = np.random.default_rng(1).standard_normal((40, 30)).astype(np.float32)
    assert Tensor.training is False
    Tensor.manual_seed(27)
    x = Tensor(base, requires_grad=True)
    y = x.dropout(p)
    assert np.array_equal(y.numpy(), base)
    y.sum().backward()
    assert np.array_equal(x.grad.numpy(), np.ones_like(base))
    # no random words were drawn
    assert f32_bits_equal(Tensor.rand(4).numpy(), oracle_rand(27, 0, (4,)))


def test_dropout_training_p0_identity_p1_zero():
    base = np.random.default_rng(2).standard_normal((10, 10)).astype(np.float32)
    old = Tensor.training
    try:
        Tensor.training = True
        assert np.array_equal(Tensor(base).dropout(0.0).numpy(), base)
        assert np.array_equal(Tensor(base).dropout(1.0).numpy(), np.zeros_like(base))
    finally:
        Tensor.training = old


def test_dropout_keeps_nan_where_it_drops():
    # the mask multiplies, as in torch: nan * 0 is nan; kept values are scaled
    values = np.tile(np.array([np.nan, 1.0, -2.0, 3.0], np.float32), 200)
    with Tensor.train():
        out = Tensor(values).dropout(0.5).numpy()
    th = torch.nn.functional.dropout(torch.from_numpy(values), 0.5).numpy()
    assert np.isnan(out[0::4]).all() and np.isnan(th[0::4]).all()
    kept = out[1::4] != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_array_equal(out[1::4][kept], np.float32(2.0))


# ---------------------------------------------------------------------------------------------
# dtypes: the float32 draw, cast
# ---------------------------------------------------------------------------------------------

TORCH_DT = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
SHAPE_DT = (64, 65)


def _as_f64(t):
    return t.float().numpy().astype(np.float64) if t.dtype == dtypes.bfloat16 else t.numpy().astype(np.float64)


def _torch_cast64(a32, name):
    return torch.from_numpy(np.ascontiguousarray(a32)).to(TORCH_DT[name]).to(torch.float64).numpy()


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float64"])
def test_rand_dtype_is_float32_draw_cast(name):
    dt = getattr(dtypes, name)
    Tensor.manual_seed(28)
    t = Tensor.rand(*SHAPE_DT, dtype=dt)
    assert t.dtype == dt and t.shape == SHAPE_DT
    if name != "bfloat16":
        assert t.numpy().dtype == dt.np
    got = _as_f64(t)
    assert np.array_equal(got, _torch_cast64(oracle_rand(28, 0, SHAPE_DT), name))
    assert got.min() >= 0 and got.max() <= 1


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float64"])
def test_randn_dtype_is_float32_draw_cast(name):
    dt = getattr(dtypes, name)
    Tensor.manual_seed(29)
    t = Tensor.randn(*SHAPE_DT, dtype=dt)
    assert t.dtype == dt and t.shape == SHAPE_DT
    got = _as_f64(t)
    Tensor.manual_seed(29)
    z32 = Tensor.randn(*SHAPE_DT).numpy()
    np.testing.assert_allclose(z32, oracle_randn64(29, 0, SHAPE_DT), rtol=2e-5, atol=2e-5)
    assert np.array_equal(got, _torch_cast64(z32, name))


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float64"])
@pytest.mark.parametrize("low,high", [(-2, 3), (0.5, 1.5)])
def test_uniform_dtype(name, low, high):
    # ((high - low) * rand(shape)).cast(dtype) + low
    dt = getattr(dtypes, name)
    Tensor.manual_seed(30)
    t = Tensor.uniform(*SHAPE_DT, low=low, high=high, dtype=dt)
    assert t.dtype == dt and t.shape == SHAPE_DT
    got = _as_f64(t)
    scaled = torch.from_numpy(np.float32(high - low) * oracle_rand(30, 0, SHAPE_DT)).to(TORCH_DT[name])
    ref = (scaled + torch.tensor(low, dtype=TORCH_DT[name])).to(torch.float64).numpy()
    assert np.array_equal(got, ref)
    assert got.min() >= low and got.max() <= high


# tinygrad 0.9.0's own outputs (THREEFRY=1, its CLANG device) for normal draws with a std that is not a power
# of two, where the order of its fused kernel, (std * cos) * sqrt + mean with one rounding, shows in the bits
NORMAL_REF = json.loads((ROOT / "tests" / "data" / "tinygrad090_normal.json").read_text())


@pytest.mark.parametrize("case", list(NORMAL_REF))
def test_normal_bits_equal_tinygrads(case):
    seed, call = case.split("; ")
    Tensor.manual_seed(int(seed[len("manual_seed("):-1]))
    got = eval("Tensor." + call).numpy().reshape(-1)
    np.testing.assert_array_equal(got.view(np.uint32), np.array(NORMAL_REF[case], np.uint32))


@pytest.mark.parametrize("fn", ["uniform", "normal"])
def test_int_dtype_with_float_parameters_gives_float(fn):
    # tinygrad: ((high - low) * rand).cast(dtype) + low and std * randn(dtype) + mean; the float scalar
    # added to the int tensor makes the result float32
    Tensor.manual_seed(32)
    kw = dict(low=-1.5, high=2.0) if fn == "uniform" else dict(mean=0.5, std=2.0)
    t = getattr(Tensor, fn)(64, dtype=dtypes.int16, **kw)
    assert t.dtype == dtypes.float32
    if fn == "uniform":
        ref = (np.float32(3.5) * oracle_rand(32, 0, (64,))).astype(np.int16).astype(np.float32) - np.float32(1.5)
        np.testing.assert_array_equal(t.numpy(), ref)


@pytest.mark.parametrize("name", ["float16", "float64"])
def test_normal_dtype(name):
    # std * randn(dtype) + mean, in the dtype
    dt = getattr(dtypes, name)
    Tensor.manual_seed(31)
    t = Tensor.normal(2000, mean=3.0, std=0.5, dtype=dt)
    assert t.dtype == dt
    got = t.numpy().astype(np.float64)
    z = torch.from_numpy(oracle_randn64(31, 0, (2000,))).to(TORCH_DT[name])
    ref = (0.5 * z + 3.0).to(torch.float64).numpy()
    tol = 4e-3 if name == "float16" else 2e-5
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [dict(low=0.5, high=3), dict(low=0, high=3.0), dict(low=1.0, high=2.0),
                                    dict(low="0", high=3), dict(low=0, high=None)])
def test_randint_non_integer_bounds(kwargs):
    with pytest.raises(TypeError):
        Tensor.randint(4, **kwargs)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_randint_float_dtype(name):
    with pytest.raises(TypeError):
        Tensor.randint(4, low=0, high=5, dtype=getattr(dtypes, name))


def test_multinomial_too_many_samples_without_replacement():
    with pytest.raises(ValueError):
        Tensor([1.0, 2.0, 3.0]).multinomial(4, replacement=False)
    with pytest.raises(ValueError):
        Tensor([[1.0, 2.0], [3.0, 4.0]]).multinomial(3)


@pytest.mark.parametrize("build", [lambda: Tensor(1.0), lambda: Tensor.ones(2, 2, 3)], ids=["0d", "3d"])
@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_bad_rank(build, replacement):
    with pytest.raises(ValueError):
        build().multinomial(1, replacement=replacement)


@pytest.mark.parametrize("weights", [[1.0, -0.5, 2.0], [[1.0, 1.0], [-1.0, 3.0]]])
@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_negative_weights(weights, replacement):
    with pytest.raises(ValueError):
        Tensor(weights).multinomial(1, replacement=replacement)


@pytest.mark.parametrize("build", [lambda: Tensor.ones(0), lambda: Tensor([0.0, 0.0]), lambda: Tensor([[1.0, 2.0], [0.0, 0.0]])],
                         ids=["no_categories", "all_zero", "a_zero_row"])
@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_without_a_positive_weight_raises(build, replacement):
    with pytest.raises(ValueError):
        build().multinomial(1, replacement=replacement)


def test_multinomial_nonpositive_num_samples():
    for k in (0, -1):
        with pytest.raises(ValueError):
            Tensor([1.0, 2.0]).multinomial(k, replacement=True)


@pytest.mark.parametrize("fn", ["rand", "randn", "uniform", "randint", "normal",
                                "scaled_uniform", "glorot_uniform", "kaiming_uniform", "kaiming_normal"])
@pytest.mark.parametrize("shape", [(-1,), (2, -3), (-2, 0)])
def test_negative_size(fn, shape):
    with pytest.raises(ValueError):
        getattr(Tensor, fn)(*shape)


# (name, nbgrad call, torch call) on a 3-element float32 tensor: parameters torch refuses, refused when built
BAD_DISTRIBUTIONS = [
  ("random_low_above_high", lambda t: t.random_(5, 2), lambda t: t.random_(5, 2)),
  ("exponential_negative_rate", lambda t: t.exponential_(-1.0), lambda t: t.exponential_(-1.0)),
  ("cauchy_negative_scale", lambda t: t.cauchy_(0.0, -1.0), lambda t: t.cauchy_(0.0, -1.0)),
  ("log_normal_negative_std", lambda t: t.log_normal_(0.0, -1.0), lambda t: t.log_normal_(0.0, -1.0)),
  ("normal_negative_std", lambda t: t.normal_(0.0, -1.0), lambda t: t.normal_(0.0, -1.0)),
  ("uniform_low_above_high", lambda t: t.uniform_(1.0, 0.0), lambda t: t.uniform_(1.0, 0.0)),
  ("bernoulli_past_1", lambda t: t.bernoulli_(1.5), lambda t: t.bernoulli_(1.5)),
  ("bernoulli_below_0", lambda t: t.bernoulli_(-0.5), lambda t: t.bernoulli_(-0.5)),
]


@pytest.mark.parametrize("ours, theirs", [row[1:] for row in BAD_DISTRIBUTIONS], ids=[row[0] for row in BAD_DISTRIBUTIONS])
def test_a_distribution_parameter_torch_refuses_raises_and_leaves_the_tensor(ours, theirs):
    import torch
    with pytest.raises(RuntimeError): theirs(torch.zeros(3))
    t = Tensor([1.0, 2.0, 3.0]).realize()
    with pytest.raises(ValueError): ours(t)
    assert t.tolist() == [1.0, 2.0, 3.0]


def test_distribution_parameters_at_their_bounds_are_taken():
    assert Tensor.normal(3, std=0.0, mean=2.0).tolist() == [2.0] * 3
    assert Tensor.uniform(3, low=1.5, high=1.5).tolist() == [1.5] * 3
    assert Tensor.zeros(4).contiguous().bernoulli_(1.0).tolist() == [1.0] * 4
    with pytest.raises(TypeError, match="ints"): Tensor.zeros(2).contiguous().random_(float("nan"))


def test_randperm_is_a_permutation_drawn_from_the_seeded_generator():
    Tensor.manual_seed(3)
    first = Tensor.randperm(50).tolist()
    Tensor.manual_seed(3)
    assert Tensor.randperm(50).tolist() == first and sorted(first) == list(range(50)) and first != list(range(50))
    assert Tensor.randperm(0).shape == (0,) and Tensor.randperm(4, dtype=dtypes.int64).dtype == dtypes.int64
    with pytest.raises(ValueError, match="randperm n"): Tensor.randperm(-1)


def test_rand_like_and_randn_like_take_the_shape_and_float_dtype_as_torch():
    import torch
    for make in ("rand_like", "randn_like"):
        for values, dtype in (([[1.0, 2.0]], dtypes.float16), ([[1.0, 2.0]], dtypes.float64)):
            ours, theirs = getattr(Tensor(values, dtype=dtype), make)(), getattr(torch, make)(torch.tensor(values, dtype=getattr(torch, dtype.name)))
            assert ours.shape == tuple(theirs.shape) and ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    draws = Tensor.zeros(1000, 10).rand_like().numpy()
    assert 0 <= draws.min() and draws.max() < 1 and abs(draws.mean() - 0.5) < 0.02
