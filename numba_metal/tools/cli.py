"""The ``numba-metal`` command (also ``python -m numba_metal``, whose ``__main__`` calls :func:`main`).

Commands: ``numba-metal doctor`` (docs/installation.md), ``numba-metal advisor COMMAND ...``
(docs/advisor.md).
"""

from __future__ import annotations

import sys

USAGE = """usage: numba-metal doctor [--device metal|cpu|metal-sim] [--deep] [--json FILE]
       numba-metal advisor COMMAND [options]

`numba-metal doctor` checks that this machine can compile and run kernels (exit status 1 if not);
`--deep` adds the checks only a Mac can answer, each in a child process; `--json FILE` writes the report.

commands of `numba-metal advisor`:
  scan PATH              static analysis of Python files (imports and runs nothing)
  compare SCRIPT.py      measure a declared workload: CPU vs numba-metal
  profile SCRIPT.py [-- ARGS] | profile --pytest PATH
                         runtime events, sampled flame graphs, differential flame graph, timeline
  report PROFILE.json    re-render a saved profile (no device needed)
  calibrate              measure this device; the roofline classification reads the result
  schema KIND            print the JSON Schema of an advisor document

Run `numba-metal advisor COMMAND --help` for a command's options; docs/advisor.md has the details.
"""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0 if argv else 2
    if argv[0] == "--version":
        from numba_metal import __version__
        print(f"numba-metal {__version__}")
        return 0
    if argv[0] == "doctor":
        from numba_metal.tools.doctor import main as doctor_main
        return doctor_main(argv[1:])
    if argv[0] != "advisor":
        sys.stderr.write(f"numba-metal: unknown command {argv[0]!r}\n\n{USAGE}")
        return 2
    from numba_metal.tools.advisor.cli import main as advisor_main
    return advisor_main(argv[1:])
