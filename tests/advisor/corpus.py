"""The advisor's bad-input corpus: files and scripts that once crashed, hung or fooled a command.

The kernel corpus (tests/robustness/corpus.py) is Python source that must raise a NumbaMetalError when
loaded and launched; the advisor's bad inputs are instead things on disk handed to a command (a FIFO, a
link to a device, a 30,000-term expression, a workload that exits), each with the documented outcome:

* :data:`SCAN`: one bad entry beside good files; the scan lists it under ``errors`` with its ``reason``
  and keeps every other result;
* :data:`DOCUMENTS`: a file given to ``report``: exit code 2 with a message, never a hang or a traceback;
* :data:`COMPARE`: a ``compare`` script whose workload raises, exits, crashes, hangs or does not parse:
  the exit code of its row in the exit-code table, and a message naming the step it failed in.

``make(directory)`` creates the entry in ``directory`` and returns its display name.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Callable

from numba_metal.tools.advisor.sourcefile import MAX_FILE_BYTES


@dataclass(frozen=True)
class BadScanEntry:
    id: str
    make: Callable[[str], str]
    reason: str
    match: str  # a regular expression the error message must match
    line: int | None = None


def _write(name: str, data: bytes | str):
    def make(directory: str) -> str:
        mode = "wb" if isinstance(data, bytes) else "w"
        with open(os.path.join(directory, name), mode) as fh:
            fh.write(data)
        return name
    return make


def _fifo(directory: str) -> str:
    os.mkfifo(os.path.join(directory, "fifo.py"))
    return "fifo.py"


def _link(name: str, target: str):
    def make(directory: str) -> str:
        os.symlink(target, os.path.join(directory, name))
        return name
    return make


def _link_to_fifo(directory: str) -> str:
    os.mkfifo(os.path.join(directory, "real_fifo"))
    os.symlink("real_fifo", os.path.join(directory, "fifo_link.py"))
    return "fifo_link.py"


def _socket(directory: str) -> str:
    path = os.path.join(directory, "sock.py")
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.close()  # the socket file stays
    return "sock.py"


def _link_to_directory(directory: str) -> str:
    os.mkdir(os.path.join(directory, "somedir"))
    os.symlink("somedir", os.path.join(directory, "dir_link.py"))
    return "dir_link.py"


def _sparse(directory: str) -> str:
    with open(os.path.join(directory, "huge.py"), "wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk space used
    return "huge.py"


LOOP = "def kept(a):\n    for i in range(len(a)):\n        a[i] = a[i] * 2\n"

SCAN: list[BadScanEntry] = [
    BadScanEntry("deep_expression", _write("deep.py", "x = " + "+".join(["1"] * 30000) + "\n"), "too-complex",
                 "nested too deeply"),
    BadScanEntry("deep_unary_chain", _write("unary.py", "x = " + "-" * 30000 + "1\n"), "too-complex",
                 "nested too deeply"),
    BadScanEntry("deep_expression_in_a_function",
                 _write("deep_fn.py", LOOP.replace("kept", "other") + "\n\ndef f(a):\n    for i in range(3):\n"
                        "        a[i] = " + "+".join(["a[i]"] * 2000) + "\n"),
                 "too-complex", "^f: nested too deeply.*other functions were analysed", line=6),
    BadScanEntry("fifo", _fifo, "not-regular", r"not a regular file \(a FIFO\)"),
    BadScanEntry("link_to_fifo", _link_to_fifo, "not-regular", r"\(a FIFO\)"),
    BadScanEntry("link_to_dev_zero", _link("zero.py", "/dev/zero"), "not-regular", r"\(a character device\)"),
    BadScanEntry("link_to_dev_urandom", _link("urandom.py", "/dev/urandom"), "not-regular", "character device"),
    BadScanEntry("socket", _socket, "not-regular", r"\(a socket\)"),
    BadScanEntry("link_to_directory", _link_to_directory, "not-regular", r"\(a directory\)"),
    BadScanEntry("oversized", _sparse, "too-large", "larger than 8 MiB"),
    BadScanEntry("broken_link", _link("broken.py", "no-such-target"), "unreadable", "No such file"),
    BadScanEntry("link_loop", _link("loop.py", "loop.py"), "unreadable", "symbolic links"),
    BadScanEntry("null_bytes", _write("nul.py", b"x = 1\x00\n"), "syntax-error", "null bytes"),
    BadScanEntry("invalid_utf8", _write("latin.py", b"x = '\xe9'\n"), "encoding", "line 1: not valid utf-8"),
    BadScanEntry("unknown_codec", _write("codec.py", b"# coding: no-such-codec\nx = 1\n"), "encoding",
                 "no-such-codec.*standard library"),
    BadScanEntry("binary_codec", _write("rot.py", b"# coding: rot13\nx = 1\n"), "encoding", "not a text encoding"),
    BadScanEntry("huge_integer", _write("bigint.py", "x = " + "9" * 5000 + "\n"), "syntax-error", "4300 digits",
                 line=1),
    BadScanEntry("nested_parentheses", _write("parens.py", "x = " + "(" * 300 + ")" * 300 + "\n"), "syntax-error",
                 "too many nested parentheses", line=1),
]


@dataclass(frozen=True)
class BadDocument:
    id: str
    make: Callable[[str], str]
    match: str


DOCUMENTS: list[BadDocument] = [
    BadDocument("fifo", _fifo, r"not a regular file \(a FIFO\)"),
    BadDocument("link_to_dev_zero", _link("zero.json", "/dev/zero"), "character device"),
    BadDocument("deeply_nested_json", _write("deep.json", "[" * 100000 + "]" * 100000), "not JSON: nested too deeply"),
    BadDocument("not_json", _write("x.json", "{"), "is not JSON"),
    BadDocument("binary", _write("b.json", b"\xff\xfe\x00"), "is not JSON"),
    BadDocument("another_document", _write("scan.json", '{"schema": "numba-metal-advisor/scan", "version": 1}'),
                "not a numba-metal advisor profile"),
    BadDocument("missing", lambda d: "missing.json", "No such file"),
]


@dataclass(frozen=True)
class BadWorkload:
    """A ``compare`` script and the documented outcome: ``exit`` names a row of EXIT_CODES, ``match``
    is a regular expression the error message must match."""
    id: str
    src: str
    exit: str
    match: str
    args: tuple = ()


def workload(cpu: str = "", metal: str = "", setup: str = "", top: str = "") -> str:
    """A correct workload (a kernel doubling 64 floats) with code inserted into its parts. The directory
    the test gives in $ADVISOR_TEST_DIR is ``HERE``."""
    return f"""import os
import subprocess
import sys
import time

import numpy as np

from numba_metal import metal

HERE = os.environ["ADVISOR_TEST_DIR"]
{top}

@metal.jit
def twice(a, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = 2 * a[i]


@metal.jit
def forever(c):
    # c[0] stays 0. The atomic keeps the loop alive: C++'s forward-progress rule lets a compiler delete
    # a loop that only reads and writes plain memory.
    while metal.atomic.add(c, 0, 0) >= 0:
        pass


def advisor_workload():
    a = np.arange(64, dtype=np.float32)
    d_a, d_out = metal.to_device(a), metal.device_array(64, np.float32)
    d_c = metal.to_device(np.zeros(1, np.int32))
    calls = []

    def setup():
        {setup or "pass"}

    def cpu():
        {cpu or "pass"}
        return 2 * a

    def run_metal():
        calls.append(1)
        {metal or "pass"}
        twice[1, 64](d_a, d_out)
        metal.synchronize()

    return {{"cpu": cpu, "metal": run_metal, "setup": setup, "metal_result": d_out.copy_to_host}}
"""


COMPARE: list[BadWorkload] = [
    BadWorkload("raises_in_cpu", workload(cpu="1 / 0"), "workload-failed",
                r"raised ZeroDivisionError: division by zero during cpu\(\) \(correctness call\)"),
    BadWorkload("raises_on_the_third_metal_call", workload(metal="if len(calls) == 3: raise RuntimeError('third')"),
                "workload-failed", r"RuntimeError: third during metal\(\) \(instrumented call"),
    BadWorkload("raises_at_import", workload(top="import no_such_module_for_the_advisor"), "workload-failed",
                r"ModuleNotFoundError.*during loading the script"),
    BadWorkload("raises_in_setup", workload(setup="raise ValueError('no data')"), "workload-failed",
                r"ValueError: no data during setup\(\)"),
    BadWorkload("raises_keyboard_interrupt", workload(cpu="raise KeyboardInterrupt"), "workload-failed",
                r"raised KeyboardInterrupt"),
    BadWorkload("kernel_does_not_compile", workload(metal="forever[1, 1](1.5)"), "workload-failed",
                r"raised \w+Error: .* during metal\(\) \(correctness call\)"),
    BadWorkload("fails_only_in_a_fresh_process",
                workload(setup="m = os.path.join(HERE, 'seen')\n"
                               "        if os.path.exists(m): raise RuntimeError('second process')\n"
                               "        open(m, 'w').close()"),
                "workload-failed", r"RuntimeError: second process during setup\(\) \(cold start\)"),
    BadWorkload("crashes", workload(metal="os.abort()"), "workload-failed",
                r"killed by SIGABRT during metal\(\) \(correctness call\)"),
    BadWorkload("syntax_error", workload().replace("def cpu():", "def cpu(:"), "syntax-error",
                r"syntax_error\.py:\d+:\d+: syntax error: .*nothing was run"),
    BadWorkload("exits_0_in_metal", workload(metal="sys.exit(0)"), "workload-exited",
                r"sys\.exit\(0\) during metal\(\) \(correctness call\)"),
    BadWorkload("exits_with_a_message", workload(cpu="sys.exit('bye')"), "workload-exited", r"sys\.exit\('bye'\)"),
    BadWorkload("exits_at_import", workload(top="sys.exit(0)"), "workload-exited",
                r"sys\.exit\(0\) during loading the script.*__name__ == \"__main__\""),
    BadWorkload("os_exit", workload(cpu="os._exit(0)"), "workload-exited",
                r"ended with status 0 during cpu\(\) \(correctness call\) without returning"),
    BadWorkload("kernel_never_ends",
                workload(setup="p = subprocess.Popen(['sleep', '300'])\n"
                               "        open(os.path.join(HERE, 'child.pid'), 'w').write(str(p.pid))",
                         metal="forever[1, 1](d_c)"),
                "timeout", r"stopped after 15 s \(--timeout\) during metal\(\) \(correctness call\)",
                args=("--timeout", "15")),
    BadWorkload("no_protocol", "x = 1\n", "usage", r"does not define advisor_workload\(\)"),
]
