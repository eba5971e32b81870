"""``numba-metal advisor``: the command line (argument parsing, output formats, exit codes).

Every command builds one JSON document (:mod:`.schema`) and renders it; ``--format json`` prints the
document, ``--output DIR`` also writes ``DIR/<kind>.json`` and ``DIR/<kind>.txt``.

Exit codes come from :data:`.outcomes.EXIT_CODES`: a command that stops without its report raises an
:class:`.outcomes.AdvisorError` naming its row.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

from numba_metal.errors import UnsupportedPlatformError

from .console import DEFAULT_WIDTH, make_view, render_to_text
from .outcomes import AdvisorError, UsageError, exit_code, exit_codes_text


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _at_least_two(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be at least 2 (a confidence interval needs two), got {value}")
    return value


def _nonneg_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def _width(text: str) -> int:
    value = int(text)
    if not 40 <= value <= 400:
        raise argparse.ArgumentTypeError(f"must be between 40 and 400 columns, got {value}")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("output")
    g.add_argument("--format", choices=("terminal", "text", "json"), default="terminal",
                   help="terminal (colour, Unicode), text (plain ASCII) or json (the documented schema)")
    g.add_argument("--output", metavar="DIR", help="also write <kind>.json and <kind>.txt into DIR")
    g.add_argument("--width", type=_width, metavar="COLUMNS",
                   help=f"render width (default: the terminal's, else {DEFAULT_WIDTH})")
    g.add_argument("--no-color", action="store_true", help="no colour (the NO_COLOR variable does the same)")


def _render_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("profile rendering")
    g.add_argument("--min-percent", type=_nonneg_float, default=1.0, metavar="P",
                   help="hide flame-graph frames below P%% of their run (default 1)")
    g.add_argument("--max-depth", type=_positive_int, default=12, metavar="N",
                   help="flame-graph depth shown (default 12)")
    g.add_argument("--gap-ms", type=_nonneg_float, default=1.0, metavar="MS",
                   help="report device idle gaps of at least MS milliseconds (default 1)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="numba-metal advisor", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Which of my functions would actually benefit from numba-metal? Static scan, "
                    "measured comparison, profiles and device calibration. See docs/advisor.md.",
        epilog=exit_codes_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("scan", help="static analysis of Python files (imports and runs nothing)")
    p.add_argument("path", metavar="PATH", help="a .py file or a directory")
    p.add_argument("--no-compile-check", action="store_true",
                   help="skip compiling functions whose decorators give signatures")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="skip files or directories matching GLOB (repeatable)")
    p.add_argument("--top", type=_positive_int, metavar="N", help="detail only the N best candidates")
    _common(p)

    p = sub.add_parser("compare", help="measure a declared workload: CPU vs numba-metal")
    p.add_argument("script", metavar="SCRIPT.py", help="a script defining advisor_workload()")
    p.add_argument("--atol", type=_nonneg_float, default=1e-5, help="absolute tolerance (default 1e-5)")
    p.add_argument("--rtol", type=_nonneg_float, default=1e-4, help="relative tolerance (default 1e-4)")
    p.add_argument("--warmup", type=_positive_int, default=2, metavar="N", help="untimed warm-up calls (2)")
    p.add_argument("--repeats", type=_positive_int, default=7, metavar="N", help="timed warm calls (7)")
    p.add_argument("--steady-batches", type=_at_least_two, default=10, metavar="N",
                   help="steady-state rounds, each a batch of calls per side (10)")
    p.add_argument("--steady-calls", type=_positive_int, default=10, metavar="N",
                   help="back-to-back calls per steady-state batch (10)")
    p.add_argument("--cold-runs", type=_positive_int, default=1, metavar="N",
                   help="fresh processes measuring the first call (1)")
    p.add_argument("--timeout", type=_nonneg_float, default=600.0, metavar="SECONDS",
                   help="stop the workload after this long in all (default 600; 0: no limit)")
    _common(p)

    p = sub.add_parser("profile", help="run a program with runtime events and a sampling profiler")
    p.add_argument("script", metavar="SCRIPT.py", nargs="?", help="the program (arguments after --)")
    p.add_argument("--pytest", metavar="PATH", help="profile `pytest PATH` instead of a script")
    p.add_argument("--interval-ms", type=_nonneg_float, default=2.0, metavar="MS",
                   help="sampling interval (default 2 ms)")
    p.add_argument("--repeats", type=_positive_int, default=3, metavar="N",
                   help="calls of each side of an advisor_workload() script (3)")
    p.add_argument("--no-baseline", action="store_true",
                   help="skip the baseline run of a plain script or test suite")
    _render_options(p)
    _common(p)

    p = sub.add_parser("report", help="re-render a saved profile.json (no device needed)")
    p.add_argument("profile", metavar="PROFILE.json")
    _render_options(p)
    _common(p)

    p = sub.add_parser("calibrate", help="measure this device and store the figures in the user cache")
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats (less accurate)")
    p.add_argument("--show", action="store_true", help="print the stored calibration, measure nothing")
    _common(p)

    p = sub.add_parser("schema", help="print the JSON Schema of a document kind")
    p.add_argument("kind", choices=("scan", "compare", "profile", "calibration"))
    return parser


def _emit(doc: dict, render, args, kind: str) -> None:
    """Print ``doc`` in the chosen format and write it to --output."""
    width = args.width
    if args.format == "json":
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif args.format == "text":
        sys.stdout.write(render_to_text(render, doc, width) + "\n")
    else:
        render(doc, make_view("terminal", width, args.no_color))
    sys.stdout.flush()
    if args.output:
        os.makedirs(args.output, exist_ok=True)
        with open(os.path.join(args.output, f"{kind}.json"), "w", encoding="utf-8") as fh:
            fh.write(json.dumps(doc, indent=2) + "\n")
        with open(os.path.join(args.output, f"{kind}.txt"), "w", encoding="utf-8") as fh:
            fh.write(render_to_text(render, doc, width or DEFAULT_WIDTH) + "\n")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, script_args = argv[:i], argv[i + 1:]
    args = build_parser().parse_args(argv)
    prefix = f"numba-metal advisor {args.command}: error:"
    try:
        return _run(args, script_args)
    except AdvisorError as e:
        print(f"{prefix} {e}", file=sys.stderr)
        if e.detail:
            print(e.detail.rstrip("\n"), file=sys.stderr)
        return e.exit_code
    except UnsupportedPlatformError as e:
        print(f"{prefix} {e}", file=sys.stderr)
        return exit_code("usage")
    except Exception:  # noqa: BLE001 - any other exception is the advisor's own bug
        traceback.print_exc()
        print(f"{prefix} internal error: this is a bug in numba-metal advisor; please report it with the "
              "traceback above", file=sys.stderr)
        return exit_code("internal-error")


def _run(args, script_args: list[str]) -> int:
    cmd = args.command
    if script_args and cmd != "profile":
        raise UsageError("arguments after -- are only for `profile SCRIPT.py -- ARGS`")
    if cmd == "schema":
        from .schema import json_schema
        sys.stdout.write(json.dumps(json_schema(args.kind), indent=2) + "\n")
        return exit_code("ok")
    if cmd == "scan":
        from . import scan
        doc = scan.scan(args.path, check=not args.no_compile_check, excludes=args.exclude)
        _emit(doc, lambda d, v: scan.render(d, v, top=args.top), args, "scan")
        return exit_code("ok")
    if cmd == "compare":
        from . import compare
        doc = compare.run(args.script, atol=args.atol, rtol=args.rtol, warmup=args.warmup, repeats=args.repeats,
                          steady_batches=args.steady_batches, steady_calls=args.steady_calls,
                          cold_runs=args.cold_runs, timeout=args.timeout)
        _emit(doc, compare.render, args, "compare")
        return exit_code("results-differ" if doc["correctness"]["status"] == "fail" else "ok")
    if cmd == "profile":
        from . import profile, report
        if bool(args.script) == bool(args.pytest):
            raise UsageError("give either SCRIPT.py or --pytest PATH")
        if args.pytest and script_args:
            raise UsageError("arguments after -- go to SCRIPT.py; with --pytest put them in PATH's config")
        doc = profile.run(script=args.script, pytest_path=args.pytest, script_args=script_args,
                          interval_ms=args.interval_ms, repeats=args.repeats, baseline=not args.no_baseline)
        _emit(doc, report.renderer(args.min_percent, args.max_depth, args.gap_ms), args, "profile")
        failed = any(r["exit_code"] != 0 for r in doc["runs"])
        return exit_code("workload-failed" if failed else "ok")
    if cmd == "report":
        from . import report
        doc = report.load(args.profile)
        _emit(doc, report.renderer(args.min_percent, args.max_depth, args.gap_ms), args, "profile")
        return exit_code("ok")
    if cmd == "calibrate":
        from . import calibrate
        if args.show:
            doc = calibrate.load()
            if doc is None:
                raise UsageError(f"no calibration stored for this device at {calibrate.calibration_path()}; "
                                 "run `numba-metal advisor calibrate`")
        else:
            doc = calibrate.run(quick=args.quick)
        _emit(doc, calibrate.render, args, "calibration")
        return exit_code("ok")
    raise UsageError(f"unknown command {cmd!r}")
