"""Builds the Swift runtime library and stages it in numba_metal/_lib/.

``python -m numba_metal._build`` rebuilds in place (used by setup.py's build_py for ``pip install .`` and
``pip install -e .``). It runs ``swift build -c release`` with the Swift standard library linked
statically on Linux (so an installed wheel needs no Swift runtime), then copies the library, the C ABI
header and the Metal shim headers into ``numba_metal/_lib/``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB_NAME = "libNumbaMetalRuntime.dylib" if sys.platform == "darwin" else "libNumbaMetalRuntime.so"


def find_swift() -> str:
    """The swift executable: $SWIFT, swift on PATH, or /opt/swift/usr/bin/swift."""
    for candidate in (os.environ.get("SWIFT"), shutil.which("swift"), "/opt/swift/usr/bin/swift"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit("numba-metal needs Swift 6 to build its runtime library: put `swift` on PATH "
                     "(or set SWIFT=/path/to/swift) and build again")


def build(root: Path = ROOT, dest: Path | None = None, verbose: bool = True) -> Path:
    """Builds the library in root and copies it with the header and shim into dest (default root/numba_metal/_lib)."""
    dest = dest or root / "numba_metal" / "_lib"
    swift = find_swift()
    # A build directory of our own: SwiftPM does not always relink when only -static-stdlib changes, so
    # sharing .build/ with an ad-hoc `swift build` could ship a library that needs libswiftCore.so.
    cmd = [swift, "build", "-c", "release", "--package-path", str(root),
           "--scratch-path", str(root / ".build" / "numba-metal")]
    if sys.platform.startswith("linux"):
        cmd += ["-Xswiftc", "-static-stdlib"]
    if verbose:
        print("numba-metal: " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)
    bin_dir = subprocess.run(cmd + ["--show-bin-path"], check=True, capture_output=True, text=True).stdout.strip()
    built = Path(bin_dir) / LIB_NAME
    if not built.is_file():
        raise SystemExit(f"swift build finished but {built} does not exist")
    if sys.platform.startswith("linux") and shutil.which("readelf"):
        dynamic = subprocess.run(["readelf", "-d", str(built)], capture_output=True, text=True).stdout
        if "libswift" in dynamic:
            raise SystemExit(f"{built} needs the Swift runtime libraries; it must be linked with -static-stdlib "
                             "(remove .build/numba-metal and build again)")
    dest.mkdir(parents=True, exist_ok=True)
    tmp = dest / (LIB_NAME + ".tmp")
    shutil.copy2(built, tmp)
    os.replace(tmp, dest / LIB_NAME)  # never overwrite a library a running process has mapped
    shutil.copy2(root / "Sources" / "CPUEngine" / "include" / "numba_metal_runtime.h", dest / "numba_metal_runtime.h")
    shim_dest = dest / "shim"
    if shim_dest.exists():
        shutil.rmtree(shim_dest)
    shutil.copytree(root / "shim", shim_dest)
    _emit_ffi(dest)
    if verbose:
        print(f"numba-metal: runtime staged in {dest}", file=sys.stderr)
    return dest / LIB_NAME


def _emit_ffi(dest: Path) -> None:
    """Generate cffi's out-of-line ABI module for the header's declarations, so that loading the runtime
    does not parse C at every process start (the loader checks the recorded hash)."""
    import cffi
    text = (dest / "numba_metal_runtime.h").read_text()
    cdef = text[text.index("/* BEGIN CDEF */") + len("/* BEGIN CDEF */"):text.index("/* END CDEF */")]
    builder = cffi.FFI()
    builder.cdef(cdef)
    builder.set_source("_nm_ffi", None)
    builder.emit_python_code(str(dest / "_nm_ffi.py"))
    import hashlib
    (dest / "_nm_ffi.sha256").write_text(hashlib.sha256(cdef.encode()).hexdigest() + "\n")


if __name__ == "__main__":
    build()
