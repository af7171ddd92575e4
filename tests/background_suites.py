"""Suites that run in a child process of their own (the CUDA device under numba's simulator). The simulator
holds one core for about 100 s while the main suite, which compiles kernels one at a time, mostly holds the
other; so such a child starts as soon as collection has selected the test that reads its result, and that
test is moved to the end of the run, where it waits for the child."""
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


def result(name: str) -> tuple[int, str, str]:
  """The suite's exit code, stdout and stderr, once it has finished (started now if it was not)."""
  stdout, stderr = start(name).communicate()
  return _running[name].returncode, stdout, stderr


def stop_all():
  for process in _running.values():
    if process.poll() is None:   # the session ended before the test read it
      process.kill()
      process.communicate()
