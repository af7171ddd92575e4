# nbgrad before numpy, as the README advises: its thread settings (nbgrad/__init__.py) must be in place when
# numpy's BLAS starts, or BLAS workers spinning after each product slow the kernels that follow.
import nbgrad  # noqa: F401
from background_suites import readers_last, start_selected, stop_all


def pytest_collection_modifyitems(items):
  readers_last(items)


def pytest_collection_finish(session):
  if not session.config.option.collectonly: start_selected(session.items)


def pytest_sessionfinish(session):
  stop_all()
