import os

import pytest

# Tests run on the CPU reference device unless told otherwise.
os.environ.setdefault("NUMBA_METAL_DEVICE", "cpu")


#: Why a test marked ``deliberate_faults`` is skipped on a Metal GPU (issue 26 item 10).
DELIBERATE_FAULTS = ("deliberately faults the GPU: on a Mac repeated faults can make macOS revoke the process's GPU "
                     "access (accessRevoked, the penalty box) and fail every later test; it runs on the CPU and "
                     "simulated devices, and tests/runtime/test_one_real_fault.py records one real fault in a child "
                     "process")


def pytest_collection_modifyitems(config, items):
    """Keeps tests that fault on purpose off a real Metal GPU: those parametrized with device 'metal', and the
    others when the session's device (NUMBA_METAL_DEVICE) is 'metal'."""
    for item in items:
        if item.get_closest_marker("deliberate_faults") is None:
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        kind = params.get("device") if isinstance(params.get("device"), str) else os.environ.get("NUMBA_METAL_DEVICE")
        if kind == "metal":
            item.add_marker(pytest.mark.skip(reason=DELIBERATE_FAULTS))


def pytest_configure(config):
    config.addinivalue_line("markers", "deliberate_faults: the test faults the device on purpose; skipped on a Metal "
                                       "GPU (conftest.DELIBERATE_FAULTS says why)")
    # Every MSL source the session compiles is linted against MSL's rules (tests/msl_lint.py).
    # `-p no:msl-lint` turns it off.
    if not config.pluginmanager.is_blocked("msl-lint"):
        import msl_lint_plugin
        config.pluginmanager.register(msl_lint_plugin.MSLLintPlugin(), "msl-lint")

# numba.cuda's test suite turns its performance warnings off (numba.cuda.testing); so do these tests,
# except those of the warnings themselves.
os.environ.setdefault("NUMBA_METAL_LOW_OCCUPANCY_WARNINGS", "0")
os.environ.setdefault("NUMBA_METAL_WARN_ON_IMPLICIT_COPY", "0")
