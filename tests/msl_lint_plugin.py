"""pytest plugin: lints every MSL source the test session compiles (msl_lint.py) and fails the test that
compiled a source breaking a rule, naming the rule and the MSL line.

It wraps ``numba_metal.runtime.Device.compile`` for the whole session and lints each source the runtime
accepted, with the language version and parameter layout it was compiled with. Findings made outside any
test (at collection) fail the session. Sources compiled in subprocesses the tests start are not seen.

A rule whose findings today come from a fix that belongs to the Python compiler is listed in
``EXPECTED_TO_FAIL`` with a pointer to that fix: its findings are counted and reported instead of failing
tests, and once the fix lands (a kernel the rule applies to passes it) the session fails until the entry
is removed.
"""

from __future__ import annotations

import hashlib
import time

import pytest

import msl_lint

def _generated(source: str) -> bool:
    """Whether numba-metal's code generator wrote the source (hand-written test kernels get no excuse)."""
    return "struct nm_ctx {" in source


#: rule -> (why it fails today and what fixes it, which sources it applies to: kernels the code generator
#: wrote for which the fix is pending).
EXPECTED_TO_FAIL: dict[str, tuple[str, object]] = {
    "coherent-device": (
        "the code generator does not yet declare coherent(device) on the buffers (and device-function pointers) of "
        "kernels that call metal.threadfence(); issue 11, known defect 5 (numba_metal/kernel_api/sync.py and codegen)",
        lambda source: _generated(source) and "atomic_thread_fence" in source and "mem_device" in source),
    "language-version": (
        "the dispatcher compiles every kernel without a language version, so threadfence kernels (MSL 3.2) are not "
        "requested as MSL 3.2; the fix passes language_version=320 for them from the code generator's launch plan "
        "(issue 11, with known defect 5)",
        lambda source: _generated(source) and "atomic_thread_fence" in source),
}


class LintFailure(AssertionError):
    """A compiled MSL source breaks a rule of MSL."""


def _compile_arguments(device, source, kernel_name, fast_math=False, language_version=0, params=None, **_):
    """Device.compile's parameters, as the runtime binding declares them."""
    return source, kernel_name, language_version or 0, params


class MSLLintPlugin:
    def __init__(self):
        self.pending: list[tuple[str, msl_lint.Finding]] = []
        self.orphans: list[tuple[str, msl_lint.Finding]] = []
        self.compiles = 0
        self.sources: set[str] = set()
        self.seconds = 0.0
        self.expected: dict[str, set[str]] = {rule: set() for rule in EXPECTED_TO_FAIL}
        self.applicable: dict[str, set[str]] = {rule: set() for rule in EXPECTED_TO_FAIL}
        self.original = None

    def pytest_sessionstart(self, session):
        from numba_metal import runtime
        self.original = original = runtime.Device.compile
        plugin = self

        def compile(device, *args, **kwargs):
            pipeline = original(device, *args, **kwargs)
            plugin.check(*_compile_arguments(device, *args, **kwargs))
            return pipeline

        compile.__doc__ = original.__doc__
        runtime.Device.compile = compile

    def pytest_unconfigure(self, config):
        if self.original is not None:
            from numba_metal import runtime
            runtime.Device.compile = self.original

    def check(self, source: str, kernel_name: str, language_version: int, params):
        start = time.perf_counter()
        self.compiles += 1
        key = hashlib.sha256(source.encode()).hexdigest()
        self.sources.add(key)
        findings = msl_lint.lint(source, language_version, params)
        excused = {rule for rule, (_, applies) in EXPECTED_TO_FAIL.items() if applies(source)}
        for rule in excused:
            self.applicable[rule].add(key)
        for f in findings:
            if f.rule in excused:
                self.expected[f.rule].add(key)
            else:
                self.pending.append((kernel_name, f))
        self.seconds += time.perf_counter() - start

    def _raise_pending(self, when: str):
        found, self.pending = self.pending, []
        if found:
            lines = [f"kernel '{k}': {f}" for k, f in dict.fromkeys(found)]
            raise LintFailure(f"MSL lint ({when}): {len(lines)} finding(s) in MSL this test compiled\n" + "\n".join(lines))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item):
        self.orphans += self.pending
        self.pending = []
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        result = yield
        self._raise_pending("setup and call")
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        result = yield
        self._raise_pending("teardown")
        return result

    def unexpectedly_passing(self) -> list[str]:
        return [rule for rule in EXPECTED_TO_FAIL if self.applicable[rule] and not self.expected[rule]]

    def pytest_sessionfinish(self, session, exitstatus):
        self.orphans += self.pending
        self.pending = []
        if self.orphans or self.unexpectedly_passing():
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        tr.write_sep("-", "MSL lint")
        tr.write_line(f"{self.compiles} compiles linted ({len(self.sources)} distinct sources) in {self.seconds:.2f} s; "
                      f"rules: {', '.join(msl_lint.RULES)}")
        for rule, (why, _) in EXPECTED_TO_FAIL.items():
            if self.expected[rule]:
                tr.write_line(f"expected to fail: [{rule}] in {len(self.expected[rule])} of "
                              f"{len(self.applicable[rule])} sources it applies to: {why}")
        for rule in self.unexpectedly_passing():
            tr.write_line(f"[{rule}] is listed as expected to fail but passed on {len(self.applicable[rule])} "
                          f"sources: remove it from EXPECTED_TO_FAIL in tests/msl_lint_plugin.py", red=True)
        for kernel, f in dict.fromkeys(self.orphans):
            tr.write_line(f"outside any test: kernel '{kernel}': {f}", red=True)
