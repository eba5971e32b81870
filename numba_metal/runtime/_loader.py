"""Finding and loading the numba-metal runtime library (cffi, ABI mode).

The library is loaded on first use, never at import. Its location: ``NUMBA_METAL_LIBRARY`` (a path to
the .so/.dylib), else ``numba_metal/_lib/libNumbaMetalRuntime.{so,dylib}`` (put there by the build, in
the source tree and in an installed package). The declarations are the region between ``BEGIN CDEF`` and
``END CDEF`` of the C header, read from ``numba_metal/_lib/numba_metal_runtime.h`` or, in a source tree,
from ``Sources/CNumbaMetal/include/``.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from numba_metal.errors import MetalRuntimeError

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_LIB_DIR = _PACKAGE_DIR / "_lib"
_SOURCE_HEADER = _PACKAGE_DIR.parent / "Sources" / "CNumbaMetal" / "include" / "numba_metal_runtime.h"
_LIB_NAME = "libNumbaMetalRuntime.dylib" if sys.platform == "darwin" else "libNumbaMetalRuntime.so"

_lock = threading.Lock()
_loaded = None  # (ffi, lib)


def _prebuilt_ffi(cdef: str):
    """The FFI the build generated from this very cdef (cffi's out-of-line ABI mode), or None.

    Loading it takes about 2 ms where parsing the declarations takes about 50 ms; it is used only when
    the hash recorded beside it matches the header's declarations.
    """
    module_path = _LIB_DIR / "_nm_ffi.py"
    digest_path = _LIB_DIR / "_nm_ffi.sha256"
    try:
        recorded = digest_path.read_text().strip()
    except OSError:
        return None
    if recorded != cdef_digest(cdef) or not module_path.is_file():
        return None
    import importlib.util
    spec = importlib.util.spec_from_file_location("numba_metal._lib._nm_ffi", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ffi


def cdef_digest(cdef: str) -> str:
    import hashlib
    return hashlib.sha256(cdef.encode()).hexdigest()


def _header_text() -> str:
    for candidate in (_LIB_DIR / "numba_metal_runtime.h", _SOURCE_HEADER):
        if candidate.is_file():
            text = candidate.read_text()
            begin = text.index("/* BEGIN CDEF */") + len("/* BEGIN CDEF */")
            end = text.index("/* END CDEF */")
            return text[begin:end]
    raise MetalRuntimeError(
        f"the C ABI header numba_metal_runtime.h was not found in {_LIB_DIR} or {_SOURCE_HEADER.parent}; "
        "rebuild the runtime with `python -m numba_metal._build` or reinstall numba-metal")


def library_path() -> Path:
    """The runtime library this process uses (or would use)."""
    env = os.environ.get("NUMBA_METAL_LIBRARY")
    return Path(env) if env else _LIB_DIR / _LIB_NAME


def load():
    """(ffi, lib) of the runtime library, loading it on first call."""
    global _loaded
    if _loaded is not None:
        return _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        path = library_path()
        if not path.is_file():
            raise MetalRuntimeError(
                f"the numba-metal runtime library was not found at {path}; build it with "
                "`python -m numba_metal._build` (needs Swift 6 on PATH), or reinstall with `pip install .`, "
                "or set NUMBA_METAL_LIBRARY to the path of libNumbaMetalRuntime")
        cdef = _header_text()
        ffi = _prebuilt_ffi(cdef)
        if ffi is None:
            import cffi
            ffi = cffi.FFI()
            ffi.cdef(cdef)
        try:
            lib = ffi.dlopen(str(path))
        except OSError as e:
            raise MetalRuntimeError(f"could not load the numba-metal runtime library {path}: {e}; rebuild it with "
                                    "`python -m numba_metal._build`") from e
        expected = int(lib.NM_ABI_VERSION)
        found = int(lib.nm_abi_version())
        if found != expected:
            raise MetalRuntimeError(
                f"the runtime library {path} implements C ABI version {found} but this numba-metal needs version "
                f"{expected}; rebuild it with `python -m numba_metal._build`")
        _loaded = (ffi, lib)
        return _loaded
