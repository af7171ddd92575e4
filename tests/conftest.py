# nbgrad before numpy, as the README advises: its thread settings (nbgrad/__init__.py) must be in place when
# numpy's BLAS starts, or BLAS workers spinning after each product slow the kernels that follow.
import nbgrad  # noqa: F401
