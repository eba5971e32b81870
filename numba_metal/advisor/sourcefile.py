"""Turning the bytes of a Python file into text without running anything the file names.

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
import pkgutil
import re

# PEP 263 and tokenize.detect_encoding: a cookie on line 1, or on line 2 after a comment-only or blank line 1.
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
_BLANK = re.compile(rb"^[ \t\f]*(?:[#\r\n]|$)", re.ASCII)
_STDLIB_CODECS = frozenset(m.name for m in pkgutil.iter_modules(encodings.__path__)) - {"aliases"}


class SourceError(ValueError):
    """The file's bytes are not Python source that scan decodes."""


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
                          "installed packages)")
    try:
        return data.decode(codec)
    except LookupError:
        raise SourceError(f"declares the source encoding {name!r}, which is not a text encoding") from None
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise SourceError(f"line {line}: not valid {name}: {e.reason}") from None
