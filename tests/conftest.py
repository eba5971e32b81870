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
    config.addinivalue_line("markers", "unsanitized(reason): the test's kernels are compiled without "
                                       "NUMBA_METAL_SANITIZE (a deliberate bug the sanitizer would report, or a "
                                       "check of the plain variant's MSL or cache); the reason is required "
                                       "(docs/testing.md, the sanitized run)")
    # Every MSL source the session compiles is linted against MSL's rules (tests/msl_lint.py).
    # `-p no:msl-lint` turns it off.
    if not config.pluginmanager.is_blocked("msl-lint"):
        import msl_lint_plugin
        config.pluginmanager.register(msl_lint_plugin.MSLLintPlugin(), "msl-lint")

# numba.cuda's test suite turns its performance warnings off (numba.cuda.testing); so do these tests,
# except those of the warnings themselves.
os.environ.setdefault("NUMBA_METAL_LOW_OCCUPANCY_WARNINGS", "0")
os.environ.setdefault("NUMBA_METAL_WARN_ON_IMPLICIT_COPY", "0")


@pytest.fixture(autouse=True)
def _unsanitized(request):
    """A test marked ``unsanitized(reason)`` runs with ``NUMBA_METAL_SANITIZE`` unset, so the kernels it
    decorates are plain ones (a kernel decorated at import keeps what it got then: such a kernel says
    ``sanitize=False`` itself). The sanitized run of the suite (docs/testing.md) is clean without hiding a
    failure: these tests run, unsanitized, and say why."""
    marker = request.node.get_closest_marker("unsanitized")
    if marker is None:
        yield
        return
    reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
    if not str(reason).strip():
        pytest.fail("@pytest.mark.unsanitized needs a reason (why the sanitizer must not see this test's kernels)")
    if "NUMBA_METAL_SANITIZE" not in os.environ:
        yield
        return
    saved = os.environ.pop("NUMBA_METAL_SANITIZE")
    try:
        yield
    finally:
        os.environ["NUMBA_METAL_SANITIZE"] = saved
