import os

# Tests run on the CPU reference device unless told otherwise.
os.environ.setdefault("NUMBA_METAL_DEVICE", "cpu")


def pytest_configure(config):
    # Every MSL source the session compiles is linted against MSL's rules (tests/msl_lint.py).
    # `-p no:msl-lint` turns it off.
    if not config.pluginmanager.is_blocked("msl-lint"):
        import msl_lint_plugin
        config.pluginmanager.register(msl_lint_plugin.MSLLintPlugin(), "msl-lint")

# numba.cuda's test suite turns its performance warnings off (numba.cuda.testing); so do these tests,
# except those of the warnings themselves.
os.environ.setdefault("NUMBA_METAL_LOW_OCCUPANCY_WARNINGS", "0")
os.environ.setdefault("NUMBA_METAL_WARN_ON_IMPLICIT_COPY", "0")
