"""The differential-testing profiles outside pytest, seed by seed.

    python tools/differential_run.py --profile long          # >= 10,000 generated functions
    python tools/differential_run.py --profile long --jobs 2 # the same seeds on two worker processes
    python tools/differential_run.py --profile ci            # the CI size (300)
    python tools/differential_run.py --seed 1234             # rerun one batch (prints its reproducer)

Batch ``i`` of a run is generated from ``RandomChooser(seed_base + i)``, so every failure is
rerun by its seed. A failure is shrunk (the failing case isolated, then statements deleted while
the same failure persists) and its standalone reproducer is written to ``--failures`` (default
tests/differential/failures/). The run's summary (kernels, batches, time, failures, coverage) is
written as JSON to ``--summary``; docs/testing.md quotes the long run's summary,
docs/data/differential-long-run.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "differential")   # the generator, reference and harness it drives
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.differential import CASES_PER_BATCH, PROFILES  # noqa: E402


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform()}


def run_one(seed: int, cases: int, shrink: bool, failures_dir: str | None, log=print):
    from tests.differential import gen as G
    from tests.differential import harness as H
    from tests.differential import repro
    from tests.differential.choosers import RandomChooser
    batch = G.generate_batch(RandomChooser(seed), cases)
    t0 = time.perf_counter()
    out = H.run_batch(batch)
    dt = time.perf_counter() - t0
    record = {"seed": seed, "kind": out.kind, "time": round(dt, 3), "compared": out.compared,
              "skipped": out.skipped, "unstable": out.unstable, "functions": batch.generated_functions}
    if not out.ok:
        log(f"seed {seed}: {out.kind}: {out.message[:600]}")
        best, best_out = batch, out
        if shrink and out.kind not in ("generator_error", "model_mismatch"):
            best, best_out = H.shrink(batch, out, log=log)
        text = repro.reproducer(best, best_out, origin=f"Batch seed {seed} "
                                f"(rerun: python tools/differential_run.py --seed {seed}).")
        if failures_dir:
            os.makedirs(failures_dir, exist_ok=True)
            path = os.path.join(failures_dir, f"seed_{seed}_{out.kind}.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            record["reproducer"] = os.path.relpath(path, ROOT)
            log(f"  reproducer: {path}")
        else:
            log(text)
        record["message"] = out.message[:2000]
    return batch, out, record


def _run_seed(task):
    seed, cases, shrink, failures_dir = task
    batch, out, record = run_one(seed, cases, shrink, failures_dir)
    return out.kind, out.ok, batch.generated_functions, dict(batch.features), record


def _results(seed_base: int, args, more):
    """Results of batches seed_base, seed_base + 1, ... in seed order while more() is true; with --jobs N,
    N worker processes run rounds of batches ahead (a round's extra batches are not counted)."""
    task = lambda seed: (seed, args.cases, not args.no_shrink, args.failures)
    if args.jobs <= 1:
        seed = seed_base
        while more():
            yield _run_seed(task(seed))
            seed += 1
        return
    import multiprocessing
    seed = seed_base
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        while more():
            for result in pool.imap(_run_seed, [task(seed + k) for k in range(args.jobs * 2)]):
                if not more():
                    break
                yield result
            seed += args.jobs * 2


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", choices=sorted(PROFILES), default=None)
    ap.add_argument("--kernels", type=int, default=None, help="generated functions to test")
    ap.add_argument("--seed", type=int, default=None, help="run only this batch seed")
    ap.add_argument("--seed-base", type=int, default=None)
    ap.add_argument("--cases", type=int, default=CASES_PER_BATCH, help="generated functions per kernel")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--failures", default=os.path.join(HERE, "failures"))
    ap.add_argument("--summary", default=None)
    ap.add_argument("--jobs", type=int, default=1,
                    help="worker processes (batches are still consumed in seed order, so a run's seeds "
                         "and summary do not depend on it)")
    args = ap.parse_args(argv)
    os.environ.setdefault("NUMBA_METAL_DEVICE", "cpu")

    if args.seed is not None:
        _, out, record = run_one(args.seed, args.cases, not args.no_shrink, None)
        print(json.dumps({k: v for k, v in record.items() if k != "message"}))
        return 0 if out.ok else 1

    profile = args.profile or "ci"
    target = args.kernels or PROFILES[profile]
    seed_base = args.seed_base if args.seed_base is not None else {"ci": 1_000_000, "long": 2_000_000}[profile]
    summary_path = args.summary or (os.path.join(ROOT, "docs", "data", "differential-long-run.json")
                                    if profile == "long" else None)
    t_start = time.time()
    kinds = Counter()
    features = Counter()
    failures = []
    functions = batches = compared = skipped = 0
    for result in _results(seed_base, args, lambda: functions < target):
        kind, ok, generated, batch_features, record = result
        batches += 1
        functions += generated
        kinds[kind] += 1
        features.update(batch_features)
        compared += record["compared"]
        skipped += record["skipped"]
        if not ok:
            failures.append(record)
        if batches % 10 == 0:
            el = time.time() - t_start
            print(f"[{el:7.0f}s] {functions} functions in {batches} kernels; {dict(kinds)}", flush=True)
    elapsed = time.time() - t_start
    summary = {
        "profile": profile, "command": "python tools/differential_run.py --profile " + profile
        + (f" --jobs {args.jobs}" if args.jobs > 1 else ""),
        "functions": functions, "kernels_compiled": batches, "cases_per_kernel": args.cases,
        "seed_base": seed_base, "seconds": round(elapsed, 1), "outcomes": dict(kinds),
        "outputs_compared": compared, "outputs_not_compared_unstable": skipped,
        "failures": failures, "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "features": dict(sorted(features.items())),
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "features"}, indent=2))
    if summary_path:
        with open(summary_path, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
            f.write("\n")
        print(f"summary written to {summary_path}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
