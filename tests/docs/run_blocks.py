"""Runs the code blocks of one page, in order, in this process: ``python run_blocks.py PAGE``.

Python blocks share one namespace and run as ``__main__``; each is compiled under the page's name with
its own line numbers, so a traceback points at the page. Every MSL source a Python block compiles is
linted against MSL's rules (tests/msl_lint.py), as the test session lints its own. Shell blocks run with
``bash -euo pipefail`` from the repository root. The first failure stops the run (exit 1) naming the
block.
"""

import inspect
import os
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import doc_pages  # noqa: E402
import msl_lint  # noqa: E402


def _lint_compiles(findings: list) -> None:
    """Lints what every Device.compile of this process compiles, appending (kernel, finding) pairs."""
    from numba_metal import runtime
    original = runtime.Device.compile
    parameters = inspect.signature(original)

    def compile(*args, **kwargs):
        pipeline = original(*args, **kwargs)
        call = parameters.bind(*args, **kwargs)
        call.apply_defaults()
        a = call.arguments
        findings.extend((a["kernel_name"], f) for f in msl_lint.lint(a["source"], a["language_version"] or 0,
                                                                     a["params"]))
        return pipeline

    runtime.Device.compile = compile


def main(page: str) -> int:
    namespace = {"__name__": "__main__"}
    findings: list = []
    _lint_compiles(findings)
    for block in doc_pages.blocks(page):
        if block.kind not in ("python", "sh"):
            continue
        print(f"--- running {block.kind} block {block.where}", flush=True)
        if block.kind == "python":
            # a block marked unsanitized runs without NUMBA_METAL_SANITIZE (the sanitized suite run)
            sanitize = os.environ.pop("NUMBA_METAL_SANITIZE", None) if block.unsanitized else None
            try:
                exec(compile("\n" * block.line + block.code, os.path.join(doc_pages.ROOT, page), "exec"), namespace)
            except BaseException:  # noqa: BLE001 - any failure of a documented example is reported
                traceback.print_exc()
                print(f"FAILED: the python block at {block.where}", flush=True)
                return 1
            finally:
                if sanitize is not None:
                    os.environ["NUMBA_METAL_SANITIZE"] = sanitize
            if findings:
                print("\n".join(f"kernel '{k}': {f}" for k, f in findings))
                print(f"FAILED: the python block at {block.where} compiled MSL that breaks MSL's rules", flush=True)
                return 1
        else:
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=doc_pages.ROOT)
            if done.returncode != 0:
                print(f"FAILED: the sh block at {block.where} exited with {done.returncode}", flush=True)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
