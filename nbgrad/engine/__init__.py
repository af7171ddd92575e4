"""tinygrad's import path for the jit (from tinygrad.engine.jit import TinyJit), so that its scripts import unchanged."""
