#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: runs the CUDA test suite on the real device, then the GPU benchmark
# groups (nbgrad on CUDA against torch on CUDA), and writes their numbers into benchmarks/RESULTS.md.
# Logs, the benchmark JSON and the updated RESULTS.md also go to $OUT when it is set.
# Needs numba with numba.cuda (pip install nbgrad[cuda]), torch with CUDA, pytest and pytest-benchmark.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PYTHON=${PYTHON:-python3}
LOGS=${OUT:-/tmp/nbgrad_gpu_check}
mkdir -p "$LOGS"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
$PYTHON -c "import numba, numpy, torch; from importlib.metadata import version as v; print('numba', numba.__version__, '| numba-cuda', v('numba-cuda'), '| numpy', numpy.__version__, '| torch', torch.__version__)"

echo "== CUDA tests on the GPU"
timeout "${TEST_TIMEOUT:-300}" $PYTHON -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning tests/cuda_suite.py 2>&1 | tee "$LOGS/cuda_tests.log"
tests_status=${PIPESTATUS[0]}

echo "== GPU benchmarks"
per_test=$($PYTHON -c "import pytest_timeout" 2>/dev/null && echo "--timeout=${PER_BENCH_TIMEOUT:-120}")
timeout "${BENCH_TIMEOUT:-420}" $PYTHON -m pytest -q -p no:cacheprovider benchmarks/test_bench_cuda.py $per_test \
  --benchmark-json="$LOGS/bench_cuda.json" --benchmark-columns=median,rounds 2>&1 | tee "$LOGS/bench_cuda.log"
bench_status=${PIPESTATUS[0]}

if [ -s "$LOGS/bench_cuda.json" ]; then
  $PYTHON benchmarks/report.py --gpu "$LOGS/bench_cuda.json" benchmarks/RESULTS.md > "$LOGS/report.log"
  cp benchmarks/RESULTS.md "$LOGS/RESULTS.md"
  sed -n '/GPU results/,$p' benchmarks/RESULTS.md
fi
echo "tests exit $tests_status, benchmarks exit $bench_status"
[ "$tests_status" = 0 ] && [ "$bench_status" = 0 ]
