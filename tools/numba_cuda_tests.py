"""Run numba-cuda 0.30.4's own tests, unchanged, on numba-metal (issue 27, "Measure it as users would").

    python tools/numba_cuda_tests.py [--tier 1|2|3|all] [--module NAME] [--json OUT] [--timeout S] [--cache DIR]

Downloads numba-cuda's wheel from the package index (``pip download``), unpacks only its ``numba/cuda/tests``
into a cache directory (numba-cuda's code is never part of this repository), and runs each listed module in its
own ``nice``d pytest child process on the CPU reference device (``NUMBA_METAL_DEVICE=cpu``), with a timeout per
module, through the ``numba.cuda`` stand-in in ``tools/numba_cuda_standin`` (``numba.cuda`` → ``numba_metal.metal``).
Tests that cannot exist on Metal are skipped with their reason (``numba_cuda_standin/impossible.py``).

Prints, per module: passed, failed, errors, skipped as impossible, the tests' own skips and expected failures, and
the ratio passed / (passed + failed + errors); then the failures grouped by their message. Not part of the
default test run (tests/tools/test_numba_cuda_runner.py checks the parts that need no download).
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import zipfile

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TOOLS)

from numba_cuda_standin import impossible  # noqa: E402

DISTRIBUTION = "numba-cuda"
VERSION = "0.30.4"
#: the wheel's folder holding the ``numba`` package (numba-cuda's wheel: ``numba_cuda/numba/cuda/...``)
WHEEL_ROOT = "numba_cuda/"
TESTS_IN_WHEEL = WHEEL_ROOT + "numba/cuda/tests/"

#: tier → [(folder under numba/cuda/tests, module)], issue 27's lists
TIERS = {
    "1": [("cudapy", m) for m in (
        "test_sm test_sync test_sm_creation test_atomics test_intrinsics test_warp_ops test_localmem "
        "test_constmem test_random test_array_args test_gufunc test_gufunc_scalar test_device_array_capture "
        "test_stream_api test_forall test_iterators test_cuda_jit_no_types test_enums test_errors "
        "test_exception test_freevar test_globals test_nondet test_py2_div_issue test_userexc test_slicing "
        "test_idiv test_array_methods").split()],
    "2": [("cudapy", m) for m in (
        "test_math test_ufuncs test_vectorize test_vectorize_decor test_vectorize_scalar_arg "
        "test_vectorize_device test_reduction test_array test_record_dtype test_ssa "
        "test_make_function_to_jit_function test_dispatcher test_print").split()]
         + [("doc_examples", m) for m in (
             "test_vecadd test_matmul test_random test_montecarlo test_reduction test_ufunc test_globals "
             "test_laplace test_sessionize test_cpu_gpu_compat").split()]
         + [("cudadrv", m) for m in (
             "test_cuda_ndarray test_cuda_array_slicing test_array_attr test_events test_pinned "
             "test_streams").split()],
    # issue 27's "then widen it": the rest of cudapy/'s user-facing modules (not NVIDIA's toolchain: debug
    # info, line info, PTX linking, IPC, multi-GPU, the CUDA array interface, FFI/cffi, NRT, fp8/bfloat16
    # bindings, compiler internals such as test_ir or test_analysis)
    "3": [("cudapy", m) for m in (
        "test_alignment test_array_alignment test_array_reductions test_blackscholes test_boolean test_casting "
        "test_complex test_complex_kernel test_const_string test_datetime test_device_func test_fastmath "
        "test_flow_control test_frexp_ldexp test_inline test_inspect test_lang test_laplace test_libdevice "
        "test_mandel test_matmul test_minmax test_montecarlo test_multithreads test_operator test_powi "
        "test_serialize test_transpose test_vector_type test_vectorize_complex test_warning test_cache_hints "
        "test_caching test_recursion test_overload test_extending test_gufunc_scheduling "
        "test_retrieve_autoconverted_arrays test_cooperative_groups").split()],
}

OUTCOMES = ("passed", "failed", "errors", "impossible", "skipped", "xfailed")
TIMED_OUT = "timed out (the module was stopped)"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=("1", "2", "3", "all"), default="all",
                        help="which modules (default: all, issue 27's tiers 1 and 2; 3 is the widened list)")
    parser.add_argument("--module", action="append", default=[],
                        help="run only this module (e.g. test_sm or cudapy/test_sm); repeatable")
    parser.add_argument("--json", metavar="OUT", help="also write the results to this JSON file")
    parser.add_argument("--from-json", metavar="IN",
                        help="run nothing: report again from the events of an earlier --json file (with the "
                             "impossible table as it is now)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per module (default: 900)")
    parser.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "numba-metal",
                                                         f"numba-cuda-{VERSION}-tests"),
                        help="where the wheel and its unpacked tests are kept")
    return parser.parse_args(argv)


def select_modules(tier: str, names: list[str]) -> list[tuple[str, str, str]]:
    """[(tier, folder, module)] for ``tier``, narrowed to ``names`` (``test_sm`` or ``cudapy/test_sm``).

    Raises:
        SystemExit: a name is in no tier's list.
    """
    wanted = ("1", "2") if tier == "all" else (tier,)     # "all": issue 27's two tiers, whose ratio is its goal
    chosen = [(t, folder, m) for t in sorted(TIERS) if t in wanted for folder, m in TIERS[t]]
    if not names:
        return chosen
    picked = [c for c in chosen if c[2] in names or f"{c[1]}/{c[2]}" in names]
    unknown = set(names) - {c[2] for c in picked} - {f"{c[1]}/{c[2]}" for c in picked}
    if unknown:
        raise SystemExit(f"numba_cuda_tests: {sorted(unknown)} not in tier {tier}'s modules; see TIERS in "
                         f"{__file__}")
    return picked


def fetch_tests(cache: str) -> str:
    """Download numba-cuda's wheel (once) and unpack its ``numba/cuda/tests``; return the folder holding
    ``numba/``."""
    root = os.path.join(cache, "unpacked")
    marker = os.path.join(root, ".complete")
    if os.path.exists(marker):
        return root
    wheels = os.path.join(cache, "wheel")
    found = glob.glob(os.path.join(wheels, f"numba_cuda-{VERSION}-*.whl"))
    if not found:
        # the tests are pure Python: any of the version's wheels has them, so take a fixed one
        subprocess.run([sys.executable, "-m", "pip", "download", f"{DISTRIBUTION}=={VERSION}", "--no-deps",
                        "--only-binary=:all:", "--python-version", "3.11",
                        "--platform", "manylinux_2_28_x86_64", "-d", wheels], check=True)
        found = glob.glob(os.path.join(wheels, f"numba_cuda-{VERSION}-*.whl"))
    with zipfile.ZipFile(found[0]) as wheel:
        for name in wheel.namelist():
            if name.startswith(TESTS_IN_WHEEL):
                wheel.extract(name, root)
    unpacked = os.path.join(root, WHEEL_ROOT)
    # empty package markers so pytest names the test modules numba.cuda.tests.*; the stand-in is numba.cuda
    for package in ("numba", os.path.join("numba", "cuda")):
        open(os.path.join(unpacked, package, "__init__.py"), "a").close()
    with open(os.path.join(unpacked, "pytest.ini"), "w") as f:
        f.write("[pytest]\n")
    open(marker, "w").close()
    return root


def run_module(tests_root: str, folder: str, module: str, timeout: float) -> dict:
    """Run one module in a child pytest; return its per-test outcomes (see ``summarize``)."""
    events = tempfile.NamedTemporaryFile(prefix="numba-cuda-events-", suffix=".jsonl", delete=False)
    events.close()
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu", NUMBA_CUDA_TESTS_ROOT=tests_root,
               NUMBA_CUDA_TESTS_EVENTS=events.name,
               PYTHONPATH=os.pathsep.join(filter(None, [TOOLS, os.path.join(TOOLS, "numba_cuda_standin", "site"),
                                                        os.environ.get("PYTHONPATH")])))
    # run from the folder above tests_root: with ``-m``, the working directory comes first on sys.path, and
    # tests_root's empty numba/__init__.py must not hide Numba (pytest puts tests_root on sys.path itself,
    # once the stand-in has imported Numba)
    cmd = ["nice", "-n", "10", sys.executable, "-m", "pytest", "-q", "-p", "numba_cuda_standin.plugin",
           "-p", "no:cacheprovider", "-c", os.path.join(tests_root, "pytest.ini"), "--rootdir", tests_root,
           os.path.join(tests_root, "numba", "cuda", "tests", folder, f"{module}.py")]
    proc = subprocess.Popen(cmd, cwd=os.path.dirname(tests_root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    stopped = None
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        stopped = TIMED_OUT
    if stopped is None and proc.returncode not in (0, 1, 5):     # pytest's: passed, failed, nothing collected
        stopped = f"the test process ended with exit status {proc.returncode}"
    with open(events.name) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    os.unlink(events.name)
    result = summarize(lines, stopped)
    if not lines and stopped:
        result["module_error"] = output.strip().splitlines()[-1:] or [stopped]
        result["counts"]["errors"] += 1
    return result


def summarize(events: list[dict], stopped: str | None = None) -> dict:
    """Per-test outcomes from the plugin's events: ``counts`` (``OUTCOMES``), ``impossible`` (by reason) and
    ``failures`` ([(test, message)]). ``stopped`` says why the module's process did not finish (``TIMED_OUT``,
    a crash): the test it was running is then an error with that message."""
    tests: dict[str, tuple[str, str]] = {}
    started = None
    collect_errors = []
    for event in events:
        if "collect_error" in event:
            collect_errors.append((event["collect_error"], event["message"]))
        elif "start" in event:
            started = event["start"]
        elif "test" in event:
            outcome = _outcome(event)
            if outcome is None:
                continue
            previous = tests.get(event["test"])
            if previous is None or previous[0] == "passed":
                tests[event["test"]] = (outcome, event.get("message", ""))
            if event["when"] == "teardown":
                started = None
    hung = started if stopped and started and started not in tests else None
    counts = dict.fromkeys(OUTCOMES, 0)
    by_reason: dict[str, int] = collections.Counter()
    failures = []
    for test, (outcome, message) in tests.items():
        # a test the table lists counts as impossible even in events recorded before the row was added (it
        # would have been skipped before running)
        key = impossible.reason_for(test) or (impossible.parse_skip_reason(message) if outcome == "skipped"
                                              else None)
        if key is not None:
            outcome = "impossible"
            by_reason[key] += 1
        counts[outcome] += 1
        if outcome in ("failed", "errors"):
            failures.append((test, message))
    for test, message in collect_errors:
        counts["errors"] += 1
        failures.append((test, "module does not import: " + message))
    if hung:
        counts["errors"] += 1
        failures.append((hung, stopped))
    return {"counts": counts, "impossible": dict(by_reason), "failures": failures, "stopped": stopped,
            "timed_out": stopped == TIMED_OUT, "events": events}


def _outcome(event: dict) -> str | None:
    if event.get("xfail"):
        return "xfailed" if event["outcome"] == "skipped" else "failed"
    if event["outcome"] == "skipped":
        return "skipped"
    if event["outcome"] == "failed":
        return "failed" if event["when"] == "call" else "errors"
    return "passed" if event["when"] == "call" else None


def ratio(counts: dict) -> float | None:
    """passed / (passed + failed + errors): of the tests that ran, neither skipped as impossible nor skipped or
    expected to fail by the test itself, the share that passed."""
    ran = counts["passed"] + counts["failed"] + counts["errors"]
    return counts["passed"] / ran if ran else None


def format_table(results: dict) -> str:
    """A Markdown table, one row per module and a total per tier."""
    head = ("| tier | module | passed | failed | errors | impossible on Metal | own skips / xfail | ratio |\n"
            "|---|---|---|---|---|---|---|---|")
    rows = [head]
    totals: dict[str, collections.Counter] = {}
    for key, r in results.items():
        tier, name = key.split(":", 1)
        c = r["counts"]
        totals.setdefault(tier, collections.Counter()).update(c)
        why = ", ".join(f"{n} {k}" for k, n in sorted(r["impossible"].items()))
        rows.append(f"| {tier} | {name}{' (timed out)' if r.get('timed_out') else ''} | {c['passed']} | "
                    f"{c['failed']} | {c['errors']} | {c['impossible']}{f' ({why})' if why else ''} | "
                    f"{c['skipped']} / {c['xfailed']} | {_percent(ratio(c))} |")
    for tier, c in sorted(totals.items()):
        c = dict(c)
        rows.append(f"| **{tier}** | **total** | **{c['passed']}** | **{c['failed']}** | **{c['errors']}** | "
                    f"**{c['impossible']}** | **{c['skipped']} / {c['xfailed']}** | **{_percent(ratio(c))}** |")
    return "\n".join(rows)


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def cause(message: str) -> str:
    """A failure's message as its cause: the first line, without the exception's module, the ``file:line:``
    numba-metal's errors start with, numbers or addresses, cut at 160 characters."""
    first = (message.strip().splitlines() or [""])[0]
    first = re.sub(r"^[\w.]+\.(?=\w+(Error|Exception|Warning)\b)", "", first)     # numba_metal.errors.X -> X
    first = re.sub(r"(?<=: )\S+(\.py|>):\d+: ", "", first)                      # X: /path/f.py:12: msg
    return re.sub(r"0x[0-9a-fA-F]+|\d+", "N", first)[:160]


def failure_causes(results: dict, top: int = 25) -> list[tuple[int, str, list[str]]]:
    """The failures grouped by their ``cause``, largest group first:
    [(count, message, [test ids])]."""
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for r in results.values():
        for test, message in r["failures"]:
            groups[cause(message)].append(test)
    ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
    return [(len(tests), message, tests) for message, tests in ordered[:top]]


def main(argv=None) -> int:
    args = parse_args(argv)
    modules = select_modules(args.tier, args.module)
    if args.from_json:
        with open(args.from_json) as f:
            earlier = json.load(f)["results"]
    else:
        tests_root = os.path.join(fetch_tests(args.cache), WHEEL_ROOT.rstrip("/"))
    results = {}
    for tier, folder, module in modules:
        if args.from_json:
            old = earlier.get(f"{tier}:{folder}/{module}")
            if old is None:
                continue
            result = summarize(old["events"], old.get("stopped", TIMED_OUT if old["timed_out"] else None))
            if old.get("module_error"):
                result["module_error"] = old["module_error"]
            if old.get("module_error"):
                result["counts"]["errors"] += 1
        else:
            result = run_module(tests_root, folder, module, args.timeout)
        results[f"{tier}:{folder}/{module}"] = result
        c = result["counts"]
        print(f"tier {tier} {folder}/{module}: " + ", ".join(f"{k} {c[k]}" for k in OUTCOMES)
              + (f" ({result['stopped']})" if result["stopped"] else ""), flush=True)
        if args.json:   # after every module, so a long run that is stopped keeps what it measured
            _write_json(args.json, results)
    print()
    print(format_table(results))
    print()
    for count, message, tests in failure_causes(results):
        print(f"{count:4d}  {message}  (e.g. {tests[0]})")
    return 0


def _write_json(path: str, results: dict) -> None:
    with open(path, "w") as f:
        json.dump({"distribution": DISTRIBUTION, "version": VERSION, "results": results}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
