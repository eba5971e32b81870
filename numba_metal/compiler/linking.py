"""Hand-written MSL linked into kernels: the files of ``@metal.jit(link=[...])`` and of
``metal.declare_device(..., link=[...])``, in the place of numba.cuda's PTX and CUDA C linking.

A linked file is Metal Shading Language source, placed verbatim (once) before the generated functions of
every kernel that links it. numba.cuda's other kinds of linkable code (CUDA C/C++, PTX, cubins, fat
binaries, objects, archives, LTO-IR) cannot run on Metal: such a file is refused by its suffix, with an
error saying to port the function to MSL. The compiler records the SHA-256 of each file's contents as it
read them (``CompiledKernel.linked``), so that the disk cache can tell when one has changed.
"""

from __future__ import annotations

import os

from numba_metal.errors import NumbaMetalError, UnsupportedFeatureError

#: Suffixes of numba.cuda's linkable code that is not MSL (numba.cuda's linker picks the kind by suffix).
CUDA_SUFFIXES = (".cu", ".cuh", ".ptx", ".cubin", ".fatbin", ".o", ".a", ".lib", ".ltoir")


def paths(link, caller: str, name: str | None = None) -> tuple:
    """``link`` (a path or a list of paths) as a tuple of path strings; ``caller`` and ``name`` (the
    declared function's) name the caller in errors. Refuses anything that is not a path, and numba.cuda's
    non-MSL code."""
    if isinstance(link, (str, os.PathLike)):
        link = [link]
    try:
        items = list(link or ())
    except TypeError:
        raise NumbaMetalError(f"{_who(caller, name)}: link must be a list of .metal file paths, not {link!r}") from None
    found = []
    for p in items:
        if not isinstance(p, (str, os.PathLike)):
            raise NumbaMetalError(f"{_who(caller, name)}: link must be a list of .metal file paths; {p!r} is not a path "
                                  "(numba.cuda's PTXSource/CUSource objects hold CUDA code, which Metal cannot run)")
        p = os.fspath(p)
        if p.lower().endswith(CUDA_SUFFIXES):
            raise UnsupportedFeatureError(
                f"{_who(caller, name)}: {p!r} is CUDA code ({os.path.splitext(p)[1]}), which Metal cannot run; port the "
                "function to Metal Shading Language in a .metal file, link that file, and declare the "
                "function with metal.declare_device(name, signature)")
        found.append(p)
    return tuple(found)


def read(path: str, caller: str, name: str | None = None) -> tuple[str, str]:
    """(text, digest) of the linked file ``path``: its text and the SHA-256 of its bytes (an error naming
    the caller, as for :func:`paths`, and the file if it cannot be read)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        return data.decode("utf-8"), _digest(data)
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) else "it is not UTF-8 text"
        raise NumbaMetalError(f"{_who(caller, name)}: cannot read the linked file {path!r} ({reason})") from None


def file_digest(path: str) -> str | None:
    """The digest :func:`read` gives of ``path``'s current contents, or None if it cannot be read."""
    try:
        with open(path, "rb") as f:
            return _digest(f.read())
    except OSError:
        return None


def _who(caller: str, name: str | None) -> str:
    return caller if name is None else caller + "(" + repr(name) + ")"


def _digest(data: bytes) -> str:
    import hashlib   # here: most processes never link a file, and hashlib loads OpenSSL
    return hashlib.sha256(data).hexdigest()
