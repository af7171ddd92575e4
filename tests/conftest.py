# nbgrad before numpy, as the README advises: its thread settings (nbgrad/__init__.py) must be in place when
# numpy's BLAS starts, or BLAS workers spinning after each product slow the kernels that follow.
import nbgrad  # noqa: F401
import os
from background_suites import WARMER_ENV, readers_last, start_cache_warmer, start_selected, stop_all


def pytest_collection_modifyitems(items):
  readers_last(items)


def pytest_collection_finish(session):
  if session.config.option.collectonly or os.environ.get(WARMER_ENV): return
  start_selected(session.items)
  start_cache_warmer(session)


def pytest_sessionfinish(session):
  stop_all()
