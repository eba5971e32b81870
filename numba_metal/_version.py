"""numba-metal's version, its one source: pyproject.toml reads it for the distribution's metadata, and the
cache key includes it."""

__version__ = "0.1.0"
