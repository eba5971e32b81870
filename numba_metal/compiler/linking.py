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


class LinkableCode:
    """numba.cuda's linkable code held in memory (``cuda.CUSource(source)``, ``cuda.PTXSource``...): every kind
    is NVIDIA's code, which Metal cannot run. The object holds ``data`` and ``name`` as numba.cuda's does, so a
    program that makes one still imports; linking it (``link=[...]``) raises ``UnsupportedFeatureError``
    saying to port the function to MSL."""

    #: what the subclass holds, in words
    kind = "NVIDIA code"
    default_name = "<unnamed>"

    def __init_subclass__(cls, kind: str, default_name: str, **options):
        super().__init_subclass__(**options)
        cls.kind, cls.default_name = kind, default_name
        cls.__doc__ = ("numba.cuda's ``%s``: %s in memory, held as numba.cuda holds it.\n\n    Raises:\n        "
                       "nothing: making one only stores it; linking it (``link=``) raises "
                       "UnsupportedFeatureError.\n    ") % (cls.__name__, kind)

    def __init__(self, data, name=None, setup_callback=None, teardown_callback=None, nrt=False):
        self._data = data
        self._name = name
        self.setup_callback = setup_callback
        self.teardown_callback = teardown_callback
        self.nrt = nrt

    @property
    def name(self) -> str:
        return self._name or self.default_name

    @property
    def data(self):
        return self._data.getvalue() if hasattr(self._data, "getvalue") else self._data


class CUSource(LinkableCode, kind="CUDA C/C++ source", default_name="<unnamed-cu>"):
    pass


class PTXSource(LinkableCode, kind="PTX", default_name="<unnamed-ptx>"):
    pass


class Fatbin(LinkableCode, kind="a CUDA fat binary", default_name="<unnamed-fatbin>"):
    pass


class Cubin(LinkableCode, kind="a CUDA cubin", default_name="<unnamed-cubin>"):
    pass


class Archive(LinkableCode, kind="an archive of CUDA objects", default_name="<unnamed-archive>"):
    pass


class Object(LinkableCode, kind="a CUDA object file", default_name="<unnamed-object>"):
    pass


class LTOIR(LinkableCode, kind="NVIDIA LTO-IR", default_name="<unnamed-ltoir>"):
    pass


#: numba.cuda's kinds of linkable code in memory, by class name (``metal.CUSource``...)
LINKABLE_CODE = {cls.__name__: cls for cls in (CUSource, PTXSource, Fatbin, Cubin, Archive, Object, LTOIR)}


def paths(link, caller: str, name: str | None = None) -> tuple:
    """``link`` (a path or a list of paths) as a tuple of path strings; ``caller`` and ``name`` (the
    declared function's) name the caller in errors. Refuses anything that is not a path, and numba.cuda's
    non-MSL code."""
    if isinstance(link, (str, os.PathLike, LinkableCode)):
        link = [link]
    try:
        items = list(link or ())
    except TypeError:
        raise NumbaMetalError(f"{_who(caller, name)}: link must be a list of .metal file paths, not {link!r}") from None
    found = []
    for p in items:
        if isinstance(p, LinkableCode):
            raise UnsupportedFeatureError(
                f"{_who(caller, name)}: {type(p).__name__} {p.name!r} holds {p.kind}, which Metal cannot run; port "
                "the function to Metal Shading Language in a .metal file, link that file, and declare the function "
                "with metal.declare_device(name, signature)")
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
