"""Child processes beside the main test session.

- Suites that run in a process of their own (the CUDA device under numba's simulator). The simulator holds one
  core for about 100 s while the main suite, which compiles kernels one at a time, mostly holds the other; so
  such a child starts as soon as collection has selected the test that reads its result, and that test is moved
  to the end of the run, where it waits for the child.
- A cache warmer: when a session runs whole test files, a second, lower-priority pytest runs the same files in
  reverse order and throws its results away. Both fill the shared kernel disk cache (built for concurrent
  writers), so the main session loads in milliseconds what the warmer compiled first: a cold run's compiles are
  spread over both cores. The main session still runs and reports every test itself."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CUDA_SIMULATOR = "cuda_simulator"
# name -> (the test that reads the result, the command, extra environment)
SUITES = {
  CUDA_SIMULATOR: ("test_cuda.py::test_cuda_suite_under_the_simulator",
                   [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore::RuntimeWarning",
                    os.path.join(HERE, "cuda_suite.py")],
                   {"NUMBA_ENABLE_CUDASIM": "1"}),
}
_running: dict = {}


def start(name: str) -> subprocess.Popen:
  if name not in _running:
    _, command, env = SUITES[name]
    _running[name] = subprocess.Popen(command, env=dict(os.environ, **env), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
  return _running[name]


def _test_id(item) -> str: return item.nodeid.split("/")[-1]   # the same whichever folder pytest runs from


def readers_last(items):
  readers = {test for test, _, _ in SUITES.values()}
  items.sort(key=lambda item: _test_id(item) in readers)   # stable: the rest keep their order


def start_selected(items):
  selected = {_test_id(item) for item in items}
  for name, (test, _, _) in SUITES.items():
    if test in selected: start(name)


WARMER_ENV = "NBGRAD_CACHE_WARMER"
WARMER_SKIPS = ("test_cache.py", "test_cuda.py")   # processes of their own, or no kernels to share


def start_cache_warmer(session):
  """Starts the warmer when the session runs whole files (no -k, -m or single tests) of more than one file."""
  option = session.config.option
  if option.keyword or option.markexpr or any("::" in arg for arg in session.config.args): return
  files = sorted({str(item.path) for item in session.items if item.path.name not in WARMER_SKIPS}, reverse=True)
  if len(files) < 2: return
  command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore", *files]
  _running["cache_warmer"] = subprocess.Popen(command, env=dict(os.environ, **{WARMER_ENV: "1"}), stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL, preexec_fn=_yield_to_the_session)


def _yield_to_the_session():
  """In the warmer's process: the scheduler and, short of memory, the kernel's OOM killer pick it first."""
  os.nice(10)
  try:
    with open("/proc/self/oom_score_adj", "w") as f: f.write("1000")
  except OSError:
    pass


def result(name: str) -> tuple[int, str, str]:
  """The suite's exit code, stdout and stderr, once it has finished (started now if it was not)."""
  stdout, stderr = start(name).communicate()
  return _running[name].returncode, stdout, stderr


def stop_all():
  for process in _running.values():
    if process.poll() is None:   # the cache warmer, or a suite whose reader did not run
      process.kill()
      process.communicate()
