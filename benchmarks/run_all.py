"""Run the numba-metal benchmark programs and print a text report; optionally write the JSON document
that ``benchmarks/report.py`` turns into an HTML page.

    python benchmarks/run_all.py                       # every program, full sizes (long on a CPU device)
    python benchmarks/run_all.py --quick               # small sizes: a few minutes
    python benchmarks/run_all.py --only mandelbrot --only heat_diffusion --json out.json
    python benchmarks/run_all.py --list

Progress goes to stderr (one line per step, with the elapsed time); the report goes to stdout. The exit
status is 1 when any implementation failed its correctness check.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_common as bc  # noqa: E402

PROGRAMS = ("vector_polynomial", "mandelbrot", "heat_diffusion", "monte_carlo_paths", "pairwise_distance",
            "cyclist_aerodynamics", "implied_volatility", "asian_option_pricing",
            "device_function_compile_cache", "arithmetic_intensity_sweep")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bc.add_common_arguments(ap)
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="run only this program (repeatable, or comma-separated); see --list")
    ap.add_argument("--list", action="store_true", help="list the programs and exit")
    args = ap.parse_args(argv)
    if args.list:
        for name in PROGRAMS:
            prog = bc.load_program(os.path.join(bc.HERE, name + ".py"))
            print(f"{name:32} {prog.title}")
        return 0
    only = [n.strip() for item in args.only for n in item.split(",") if n.strip()]
    unknown = [n for n in only if n not in PROGRAMS]
    if unknown:
        ap.error(f"unknown program(s) {', '.join(unknown)}; choose from {', '.join(PROGRAMS)}")
    names = [n for n in PROGRAMS if not only or n in only]

    opts = bc.options_from(args)
    if args.quick and args.budget is None:
        opts.policy.budget_s = 0.5
    say = opts.progress
    t0 = time.perf_counter()
    device = bc.choose_device(opts.device)
    if not device["is_gpu"]:
        say(f"no Metal GPU in use: measuring numba-metal's CPU reference device ({device['name']}); "
            f"these figures are not GPU figures")
    doc = bc.new_document(opts, device, ["benchmarks/run_all.py"] + list(argv if argv is not None else sys.argv[1:]))
    for i, name in enumerate(names):
        prog = bc.load_program(os.path.join(bc.HERE, name + ".py"))
        opts.progress = (lambda msg, i=i: say(f"({i + 1}/{len(names)}) {msg}"))
        doc["programs"].append(bc.run_program(prog, opts))
        if args.json:  # keep what is done if a later program is interrupted
            bc.write_json(bc.finish_document(dict(doc), t0), args.json)
    opts.progress = say
    bc.finish_document(doc, t0)
    problems = bc.validate_document(doc)
    print(bc.text_report(doc))
    if problems:
        print("SCHEMA PROBLEMS:\n  " + "\n  ".join(problems))
    if args.json:
        bc.write_json(doc, args.json)
        say(f"wrote {args.json}")
    failed = [f"{p['name']}/{c['id']}" for p in doc["programs"] for c in p["cases"] if not c.get("correct")]
    if failed:
        print(f"NOT CORRECT: {', '.join(failed)}")
    say(f"finished in {time.perf_counter() - t0:.0f} s")
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
