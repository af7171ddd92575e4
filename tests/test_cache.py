"""The compiled-kernel disk cache (NBGRAD_CACHE_DIR): reuse across processes, self-healing, concurrent writers,
and one compile for kernels that differ only in size."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# A small program: three distinct kernels (fused elementwise+reduce, elementwise+max, a copy of a permuted view).
PROGRAM = textwrap.dedent("""
  import json
  import numpy as np
  from nbgrad import Tensor
  from nbgrad.helpers import GlobalCounters
  a = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 4)
  b = Tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
  values = [
    (a * b + 1.5).relu().sum(1).numpy().tolist(),
    (a.exp2() - b).max(0).numpy().tolist(),
    (a.reshape(4, 3).T * 2).contiguous().numpy().tolist(),
  ]
  print(json.dumps({"values": values, "compile_count": GlobalCounters.compile_count,
                    "disk_cache_hits": GlobalCounters.disk_cache_hits}))
""")


def expected_values():
  a = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
  b = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
  return [np.maximum(a * b + 1.5, 0).sum(1), (np.exp2(a) - b).max(0), a.reshape(4, 3).T * 2]


def env_for(cache_dir, **extra):
  env = dict(os.environ)
  env["NBGRAD_CACHE_DIR"] = str(cache_dir)
  env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  env.pop("NBGRAD_EAGER", None)
  env.pop("NUMBA_CACHE_DIR", None)   # numba's machine code then sits beside the kernel files, where these tests look
  env.update(extra)
  return env


def start(script, cache_dir):
  return subprocess.Popen([sys.executable, str(script)], env=env_for(cache_dir), cwd=str(script.parent),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=240):
  out, err = proc.communicate(timeout=timeout)
  assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{out}\nstderr:\n{err[-4000:]}"
  return json.loads(out.strip().splitlines()[-1])


def run(script, cache_dir): return finish(start(script, cache_dir))


def check_values(result):
  for got, want in zip(result["values"], expected_values(), strict=True):
    np.testing.assert_allclose(np.array(got, dtype=np.float32), want, rtol=1e-6, atol=1e-6)


def cache_files(cache_dir): return [p for p in Path(cache_dir).rglob("*") if p.is_file()]


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
  """A cache filled by one run of PROGRAM, and the results of that run and of a second one."""
  root = tmp_path_factory.mktemp("nbgrad_cache")
  script = root / "program.py"
  script.write_text(PROGRAM)
  cache_dir = root / "cache"
  first = run(script, cache_dir)
  second = run(script, cache_dir)
  return script, cache_dir, first, second


def test_first_run_compiles_and_fills_the_cache(warm_cache):
  script, cache_dir, first, _ = warm_cache
  check_values(first)
  assert first["compile_count"] > 0
  assert len(cache_files(cache_dir)) > 0


def test_second_process_compiles_nothing(warm_cache):
  _, _, first, second = warm_cache
  assert second["compile_count"] == 0
  assert second["disk_cache_hits"] > 0
  check_values(second)
  assert second["values"] == first["values"]


@pytest.mark.parametrize("damage", ["garbage", "truncate", "garbage_compiled_only"])
def test_corrupt_cache_is_rebuilt(warm_cache, tmp_path, damage):
  script, warm_dir, _, _ = warm_cache
  cache_dir = tmp_path / "cache"
  shutil.copytree(warm_dir, cache_dir)
  files = cache_files(cache_dir)
  if damage == "garbage_compiled_only": files = [p for p in files if p.suffix == ".nbc"]  # the index still looks valid
  assert files
  for path in files: path.write_bytes(b"" if damage == "truncate" else b"garbage")
  rebuilt = run(script, cache_dir)
  check_values(rebuilt)
  healed = run(script, cache_dir)  # the broken entries were replaced: nothing to compile again
  check_values(healed)
  assert healed["compile_count"] == 0


def test_two_processes_fill_an_empty_cache_at_once(tmp_path):
  script = tmp_path / "program.py"
  script.write_text(PROGRAM)
  cache_dir = tmp_path / "cache"
  procs = [start(script, cache_dir), start(script, cache_dir)]
  results = [finish(p) for p in procs]
  for result in results: check_values(result)
  after = run(script, cache_dir)
  check_values(after)
  assert after["compile_count"] == 0


SIZES_PROGRAM = textwrap.dedent("""
  import json
  import numpy as np
  from nbgrad import Tensor
  from nbgrad.helpers import GlobalCounters
  deltas, values = [], []
  for shape in [(5, 3), (7, 4), (9, 2)]:
    a = Tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 8).realize()
    b = Tensor(np.full(shape, 0.25, dtype=np.float32)).realize()
    before = GlobalCounters.compile_count
    out = (a * 3 - b).exp2().realize()
    deltas.append(GlobalCounters.compile_count - before)
    values.append(out.numpy().tolist())
  print(json.dumps({"deltas": deltas, "values": values}))
""")


def test_kernels_differing_only_in_size_compile_once(tmp_path):
  script = tmp_path / "sizes.py"
  script.write_text(SIZES_PROGRAM)
  result = run(script, tmp_path / "cache")
  first, second, third = result["deltas"]
  assert first >= 1, "the first shape must compile in an empty cache"
  assert second <= 1, f"second shape compiled {second} kernels"
  assert third == 0, f"third shape compiled {third} kernels"
  for shape, got in zip([(5, 3), (7, 4), (9, 2)], result["values"]):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 8
    np.testing.assert_allclose(np.array(got, dtype=np.float32), np.exp2(a * 3 - 0.25), rtol=1e-6)


def test_a_built_kernel_is_found_on_disk_by_its_exact_name(tmp_path, monkeypatch):
  """run_kernel asks whether a parallel build sits in the disk cache; the answer names numba's index file
  rather than listing the folder, so it must match the name numba writes."""
  from nbgrad.jit import compiler
  monkeypatch.setenv("NBGRAD_CACHE_DIR", str(tmp_path))
  monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
  kernel = compiler.CompiledKernel(compiler.module_source("def kernel(out, ip, fp):\n  out[0] = ip[0]\n", parallel=False), "probe")
  assert not kernel.on_disk()
  kernel(np.zeros(1, np.int64), np.array([7], np.int64), np.zeros(0, np.float64))
  assert kernel.on_disk()


def test_a_background_build_waits_while_an_on_demand_build_waits_or_runs(tmp_path, monkeypatch):
  """A first call must not queue behind background builds (it waited 13 s behind a few after a pause): those
  start only once no on-demand build has waited, run or ended for QUIET_BEFORE_BACKGROUND_BUILD seconds."""
  import time
  from nbgrad.jit import compiler
  monkeypatch.setenv("NBGRAD_CACHE_DIR", str(tmp_path))
  kernel = compiler.CompiledKernel(compiler.module_source("def kernel(out, ip, fp):\n  out[0] = ip[0] + 1\n", parallel=False), "probe")
  args = np.zeros(1, np.int64), np.array([7], np.int64), np.zeros(0, np.float64)
  compiler._DemandBuilds.begin()   # an on-demand build waiting for the lock
  try:
    kernel.build_in_background(*args)
    time.sleep(3 * compiler.QUIET_BEFORE_BACKGROUND_BUILD)
    assert not kernel.ready
  finally: compiler._DemandBuilds.end()
  kernel.background.join(timeout=120)
  assert kernel.ready
  kernel.fn(*args)
  assert args[0][0] == 8


def test_a_cache_folder_that_cannot_be_made_falls_back_with_a_warning(tmp_path):
  """NBGRAD_CACHE_DIR naming a file: the process warns, naming the variable, and still computes."""
  script = tmp_path / "program.py"
  script.write_text(PROGRAM)
  not_a_folder = tmp_path / "a_file"
  not_a_folder.write_text("")
  proc = start(script, not_a_folder)
  out, err = proc.communicate(timeout=240)
  assert proc.returncode == 0, err[-4000:]
  assert "NBGRAD_CACHE_DIR" in err and "RuntimeWarning" in err
  check_values(json.loads(out.strip().splitlines()[-1]))


# Loads big (parallel) cached kernels, then needs a kernel the cache does not hold yet (a new unary op each run).
CACHED_THEN_NEW_PROGRAM = textwrap.dedent("""
  import json, sys
  import numpy as np
  from nbgrad import Tensor
  from nbgrad.helpers import GlobalCounters
  x = Tensor(np.linspace(-2, 2, 1 << 20, dtype=np.float32))
  cached = [float((x * 3 - 1).relu().sum().item()), float(x.exp().max().item())]
  loaded_before_new = GlobalCounters.disk_cache_hits
  new = float(getattr(x.abs(), sys.argv[1])().sum().item())
  print(json.dumps({"cached": cached, "new": new, "loaded_before_new": loaded_before_new,
                    "compile_count": GlobalCounters.compile_count}))
""")


def test_a_process_running_cached_kernels_still_compiles_new_ones(tmp_path):
  """Machine code from the disk cache is loaded without numba's compiler set-up; a kernel compiled after that
  in the same process must still build and agree."""
  script = tmp_path / "cached_then_new.py"
  script.write_text(CACHED_THEN_NEW_PROGRAM)
  x = np.linspace(-2, 2, 1 << 20, dtype=np.float32).astype(np.float64)
  for op, fills_cache in (("sqrt", True), ("exp2", False)):
    proc = subprocess.run([sys.executable, str(script), op], env=env_for(tmp_path / "cache"),
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(result["cached"], [np.maximum(x * 3 - 1, 0).sum(), np.exp(x).max()], rtol=1e-5)
    np.testing.assert_allclose(result["new"], getattr(np, op)(np.abs(x)).sum(), rtol=1e-5)
    assert result["compile_count"] > 0
    assert (result["loaded_before_new"] == 0) == fills_cache


# Calls each numba function of nbgrad's modules that Python calls directly (not kernels built from source): the
# random generator's, cumsum's (serial and parallel), and the product parts' (a batched product).
PACKAGED_FUNCTIONS_PROGRAM = textwrap.dedent("""
  import json
  import numpy as np
  from numba.core.registry import cpu_target
  from nbgrad import Tensor
  Tensor.manual_seed(3)
  a = np.linspace(-1, 1, 4 * 128 * 128, dtype=np.float32).reshape(4, 128, 128)
  values = [Tensor.rand(5).numpy().tolist(), Tensor.randn(4).numpy().tolist(), Tensor.rand(70000).sum().item(),
            Tensor.arange(6).cumsum().numpy().tolist(), Tensor(a).cumsum(1).sum().item(), (Tensor(a) @ Tensor(a)).sum().item()]
  print(json.dumps({"values": values, "registries": len(cpu_target.typing_context._registries)}))
""")


def test_a_second_process_loads_the_packaged_numba_functions_without_the_compiler(tmp_path):
  """With their machine code cached, calling them installs none of numba's typing registries (its own first call
  of a cached function does: about 200 ms)."""
  script = tmp_path / "packaged.py"
  script.write_text(PACKAGED_FUNCTIONS_PROGRAM)
  first, second = run(script, tmp_path / "cache"), run(script, tmp_path / "cache")
  assert second["registries"] == 0
  assert second["values"] == first["values"]
  a = np.linspace(-1, 1, 4 * 128 * 128, dtype=np.float32).reshape(4, 128, 128).astype(np.float64)
  assert second["values"][3] == [0, 1, 3, 6, 10, 15]
  np.testing.assert_allclose(second["values"][4:], [a.cumsum(1).sum(), (a @ a).sum()], rtol=1e-4)
