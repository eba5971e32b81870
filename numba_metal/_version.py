"""numba-metal's version (the cache key includes it; pyproject.toml declares the same)."""

__version__ = "0.1.0"
