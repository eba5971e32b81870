"""How an advisor command ends: the exit-code table and the errors that stop a command.

:data:`EXIT_CODES` is the one list of exit codes: ``numba-metal advisor --help`` prints it and
docs/advisor.md quotes it (a test checks that both agree with it). Each :class:`AdvisorError`
subclass names its row, so the command line never chooses a code by itself.

This module imports nothing else of the advisor, so that every command module can raise these
errors without depending on the command line.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from numba_metal.errors import NumbaMetalError


@dataclass(frozen=True)
class ExitCode:
    code: int
    name: str
    meaning: str


EXIT_CODES = (
    ExitCode(0, "ok", "success; for compare: the results match and the report gives a verdict (USE_METAL, "
                      "KEEP_CPU or INCONCLUSIVE); for scan: the scan finished (files it could not analyse are "
                      "listed in its report)"),
    ExitCode(1, "results-differ", "compare: numba-metal's results do not match the CPU's (verdict "
                                  "DO_NOT_USE_METAL); nothing was timed"),
    ExitCode(2, "usage", "bad usage, a missing or unreadable input file, a script that does not follow the "
                         "compare protocol, or no usable device"),
    ExitCode(3, "workload-failed", "compare: the workload raised an exception, or its process was killed (a "
                                   "crash); profile: a profiled run exited with a non-zero status or crashed"),
    ExitCode(4, "syntax-error", "compare, profile: the script has a syntax error; nothing was run"),
    ExitCode(5, "workload-exited", "compare: the workload ended its process (sys.exit(), os._exit()) instead of "
                                   "returning, even with status 0"),
    ExitCode(6, "timeout", "compare: the workload did not finish within --timeout seconds; its processes were "
                           "killed"),
    # 70 is EX_SOFTWARE of BSD's sysexits.h, "internal software error".
    ExitCode(70, "internal-error", "a bug in the advisor itself: the traceback is printed; please report it"),
)

_BY_NAME = {row.name: row for row in EXIT_CODES}


def exit_code(name: str) -> int:
    return _BY_NAME[name].code


def exit_codes_text(width: int = 79) -> str:
    """The table as plain text, meanings wrapped to ``width`` columns (the command line's help)."""
    heads = [f"  {row.code} {row.name}" for row in EXIT_CODES]
    indent = " " * (max(map(len, heads)) + 2)
    rows = [textwrap.fill(row.meaning, width, initial_indent=head.ljust(len(indent)), subsequent_indent=indent)
            for head, row in zip(heads, EXIT_CODES)]
    return "exit codes:\n" + "\n".join(rows)


class AdvisorError(NumbaMetalError):
    """A command stopped without its report. Printed as ``error: <message>`` (then ``detail``, for
    example a workload's traceback), and the process exits with the code of row ``outcome``."""

    outcome = "usage"

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail

    @property
    def exit_code(self) -> int:
        return exit_code(self.outcome)


class UsageError(AdvisorError):
    """Bad input from the user: arguments, a missing or unreadable file, a script off the protocol."""

    outcome = "usage"


class WorkloadFailed(AdvisorError):
    """The workload raised an exception (``detail``: its traceback) or its process was killed."""

    outcome = "workload-failed"


class ScriptSyntaxError(AdvisorError):
    """The script is not valid Python."""

    outcome = "syntax-error"


class WorkloadExited(AdvisorError):
    """The workload left its process (``sys.exit()``, ``os._exit()``) instead of returning."""

    outcome = "workload-exited"


class WorkloadTimeout(AdvisorError):
    """The workload did not finish within ``--timeout`` seconds."""

    outcome = "timeout"
