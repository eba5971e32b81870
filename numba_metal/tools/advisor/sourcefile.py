"""Reading a file the user named or a scan found, without hanging on it or running what it names.

:func:`read_regular_file` reads only regular files (after following symbolic links) of bounded size:
a FIFO would block the reader forever, a device such as ``/dev/zero`` never ends, and an unbounded
read of a huge file exhausts memory. The file is opened non-blocking and checked again on the open
descriptor, so a file swapped for a FIFO between the check and the open is refused too.

Python decodes a source file with the codec its ``# coding:`` line names (PEP 263). Looking a codec
up by name asks every codec search function installed packages have registered, and such a
function can do anything; so a scanned file could choose code to run just by naming a codec.
:func:`decode_python` decodes only with the codecs of Python's standard library (found by the
standard library's own search function, which is consulted first) and refuses any other name.
"""

from __future__ import annotations

import codecs
import encodings
import encodings.aliases
import json
import os
import pkgutil
import re
import stat

# PEP 263 and tokenize.detect_encoding: a cookie on line 1, or on line 2 after a comment-only or blank line 1.
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
_BLANK = re.compile(rb"^[ \t\f]*(?:[#\r\n]|$)", re.ASCII)
_STDLIB_CODECS = frozenset(m.name for m in pkgutil.iter_modules(encodings.__path__)) - {"aliases"}


#: Larger files are not read (the largest hand-written Python files are a few hundred KB; generated
#: ones reach a few MB).
MAX_FILE_BYTES = 8 * 2**20
#: Larger JSON documents are not read (a ten-minute profile sampled every 2 ms is about 10 MB).
MAX_DOCUMENT_BYTES = 256 * 2**20

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class SourceError(ValueError):
    """The file is not one the advisor reads; ``reason`` is one of ``not-regular``, ``too-large``,
    ``unreadable``, ``encoding``."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def file_kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular_file(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path`` if it is a regular file (symbolic links followed) of at most ``limit`` bytes."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(f"not a regular file ({file_kind(st.st_mode)}): skipped", "not-regular")
        _check_size(st.st_size, limit)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise SourceError(f"not a regular file ({file_kind(st.st_mode)}): skipped", "not-regular")
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read(limit + 1)
        finally:
            os.close(fd)
    except OSError as e:
        raise SourceError(f"cannot read: {e.strerror or e}", "unreadable") from None
    _check_size(len(data), limit)
    return data


def read_json(path: str, limit: int = MAX_DOCUMENT_BYTES):
    """The JSON value in the file ``path``; SourceError if it cannot be read, ValueError if it is not JSON."""
    data = read_regular_file(path, limit)
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _check_size(size: int, limit: int) -> None:
    if size > limit:
        raise SourceError(f"larger than {limit // 2**20} MiB: skipped", "too-large")


def encoding_cookie(data: bytes) -> str | None:
    lines = data.split(b"\n", 2)[:2]
    for i, line in enumerate(lines):
        m = _COOKIE.match(line)
        if m:
            return m.group(1).decode("ascii")
        if i == 0 and not _BLANK.match(line):
            break
    return None


def stdlib_codec(name: str) -> str | None:
    """The standard library's codec module for ``name``, or None when it has none."""
    norm = encodings.normalize_encoding(name).lower()
    for candidate in (encodings.aliases.aliases.get(norm), encodings.aliases.aliases.get(norm.replace(".", "_")),
                      norm):
        if candidate in _STDLIB_CODECS:
            return candidate
    return None


def decode_python(data: bytes) -> str:
    """The text of Python source ``data`` (UTF-8 unless a BOM or a coding line says otherwise)."""
    if data.startswith(codecs.BOM_UTF8):
        data, name = data[len(codecs.BOM_UTF8):], "utf-8"
    else:
        name = encoding_cookie(data) or "utf-8"
    codec = stdlib_codec(name)
    if codec is None:
        raise SourceError(f"declares the source encoding {name!r}, which is not a codec of Python's standard "
                          "library; scan decodes only those (finding another codec by name can run code of "
                          "installed packages)", "encoding")
    try:
        return data.decode(codec)
    except LookupError:
        raise SourceError(f"declares the source encoding {name!r}, which is not a text encoding",
                          "encoding") from None
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise SourceError(f"line {line}: not valid {name}: {e.reason}", "encoding") from None
