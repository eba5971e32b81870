"""The advisor's bad-input corpus: files and scripts that once crashed, hung or fooled a command.

The kernel corpus (tests/robustness/corpus.py) is Python source that must raise a NumbaMetalError when
loaded and launched; the advisor's bad inputs are instead things on disk handed to a command (a FIFO, a
link to a device, a 30,000-term expression, a workload that exits), each with the documented outcome:

* :data:`SCAN`: one bad entry beside good files; the scan lists it under ``errors`` with its ``reason``
  and keeps every other result;
* :data:`DOCUMENTS`: a file given to ``report``: exit code 2 with a message, never a hang or a traceback.

``make(directory)`` creates the entry in ``directory`` and returns its display name.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Callable

from numba_metal.advisor.sourcefile import MAX_FILE_BYTES


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
