"""Builds the Swift runtime library and stages it in numba_metal/_lib/.

``python -m numba_metal.tools.build`` rebuilds in place (used by setup.py's build_py for ``pip install .`` and
``pip install -e .``). It first checks the Metal backend's use of Apple's API against the package's
deployment target (``check_availability``; ``--availability`` prints the table and stops), then runs
``swift build -c release`` with the Swift standard library linked statically on Linux (so an installed
wheel needs no Swift runtime), then copies the library, the C ABI header and the Metal shim headers into
``numba_metal/_lib/``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The CPU device's Metal standard library (headers), staged as _lib/shim.
SHIM = Path("Sources", "MetalRuntime", "CPUDevice", "shim")
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
    problems = check_availability(root)
    if problems:
        raise SystemExit("numba-metal: the Metal backend uses Apple API newer than the package allows "
                         "(it would not build, or not run, on a Mac):\n  " + "\n  ".join(problems))
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
    shutil.copytree(root / SHIM, shim_dest)
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


# MARK: - availability of Apple's API

# Swift's `@available` rules only apply when compiling for Apple platforms, so on Linux a use of an API newer
# than the deployment target would compile. This check does what the Swift compiler does on a Mac, from the
# `@available` annotations of Sources/MetalSimulator (Apple's declarations, written from Apple's docs):
#  - run time: a symbol introduced after Package.swift's macOS deployment target must be used inside
#    `if #available(macOS N, *)` (or `guard #available`, or code marked `@available(macOS N, *)`), N >= its version;
#  - compile time: a symbol that first appeared in an SDK newer than the oldest one the package builds
#    with (the SDK of the Xcode that ships its swift-tools-version) must be inside an SDK test,
#    `#if canImport(Metal, _version: N)` with N a Metal module version of an SDK that has it (METAL_MODULE_SDK),
#    or `#if compiler(>=V)`, V a Swift version whose Xcode ships such an SDK. `#available` does not help there.

# The macOS SDK of the first Xcode release with each Swift version (Xcode 15.0: 5.9, SDK 14.0; 15.3: 5.10,
# SDK 14.4; 16.0: 6.0, SDK 15.0; 16.3: 6.1, SDK 15.4; 26.0: 6.2, SDK 26.0).
SWIFT_SDK = {(5, 9): (14, 0), (5, 10): (14, 4), (6, 0): (15, 0), (6, 1): (15, 4), (6, 2): (26, 0)}
# The macOS SDK whose Metal module first has each version `#if canImport(Metal, _version: N)` tests (the
# Metal framework's version: 366.x is macOS 15's, e.g. 366.12.1 in build 24A5289g, per blacktop/ipsw-diffs).
METAL_MODULE_SDK = {366: (15, 0)}
# What SwiftPM targets when Package.swift declares no macOS platform.
SWIFTPM_DEFAULT_MACOS = (10, 13)

_TOKEN = re.compile(r'//[^\n]*|"(?:\\.|[^"\\\n])*"|[#@]?[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)*|\S')


def _version(text: str) -> tuple:
    return tuple(int(x) for x in text.split("."))


def _show(v: tuple) -> str:
    return ".".join(map(str, v if len(v) > 1 else v + (0,)))


def _lines(text: str):
    """(token, line) pairs, with preprocessor directives as one ('#if', condition text) token each."""
    for number, raw in enumerate(text.split("\n"), 1):
        stripped = raw.strip()
        if stripped.startswith(("#if", "#elseif", "#else", "#endif")):
            word = stripped.split()[0]
            yield (word, stripped[len(word):].split("//")[0].strip()), number
            continue
        for m in _TOKEN.finditer(raw):
            tok = m.group()
            if tok.startswith("//"):
                break
            yield tok, number


def _strip_block_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)


def _available_args(toks: list, i: int) -> tuple[tuple | None, int]:
    """The macOS version of `@available(...)`/`#available(...)` whose '(' is toks[i], and the index after ')'."""
    depth, j, version = 0, i, None
    args = []
    while j < len(toks):
        t = toks[j][0]
        if t == "(":
            depth += 1
        elif t == ")":
            depth -= 1
            if depth == 0:
                break
        else:
            args.append(t)
        j += 1
    for k, a in enumerate(args):
        if a == "macOS":
            if k + 1 < len(args) and re.fullmatch(r"\d+(\.\d+)*", args[k + 1]):
                version = _version(args[k + 1])
            elif "introduced" in args[k:]:
                n = args.index("introduced", k)
                version = _version(args[n + 2])
    return version, j + 1


def availability_table(root: Path = ROOT) -> dict[str, tuple]:
    """Metal symbol -> the macOS version it appeared in, from the simulator's `@available` annotations
    (a member without one has its enclosing type's)."""
    table: dict[str, tuple] = {}
    for path in sorted((root / "Sources" / "MetalSimulator").glob("*.swift")):
        toks = [t for t in _lines(_strip_block_comments(path.read_text())) if not isinstance(t[0], tuple)]
        # Per brace scope: its availability, and whether its members are Apple's (public, or a protocol's).
        scopes: list[tuple] = [(None, True)]
        pending: tuple | None = None
        opener: tuple = (None, False)  # what the next '{' opens
        public = False
        i = 0
        while i < len(toks):
            t = toks[i][0]
            if t == "@available":
                pending, i = _available_args(toks, i + 1)
                continue
            if t in ("public", "open"):
                public = True
            elif t in ("case", "var", "let", "func", "class", "struct", "enum", "protocol", "typealias", "init"):
                name = toks[i + 1][0]
                version = max([v for v in (pending, scopes[-1][0]) if v], default=None)
                apple = public or (scopes[-1][1] and t == "case") or scopes[-1][1] == "protocol"
                if version and apple and t != "init" and re.fullmatch(r"[A-Za-z_]\w*", name):
                    table[name] = max(table.get(name, version), version)
                opener = (version, "protocol" if t == "protocol" else apple)
                pending, public = None, False
            elif t == "{":
                scopes.append(opener if opener[0] else (scopes[-1][0], opener[1]))
                opener = (None, False)
            elif t == "}":
                scopes.pop()
            i += 1
    return table


def _deployment_and_sdk(root: Path) -> tuple[tuple, tuple, str]:
    package = (root / "Package.swift").read_text()
    tools = re.search(r"swift-tools-version:\s*(\d+)\.(\d+)", package)
    tools_version = (int(tools.group(1)), int(tools.group(2)))
    platform = re.search(r"\.macOS\(\s*\.v(\d+)(?:_(\d+))?", _strip_block_comments(
        "\n".join(l.split("//")[0] for l in package.split("\n"))))
    deployment = (int(platform.group(1)), int(platform.group(2) or 0)) if platform else SWIFTPM_DEFAULT_MACOS
    sdk = SWIFT_SDK.get(tools_version, min(SWIFT_SDK.values()))
    return deployment, sdk, f"{tools_version[0]}.{tools_version[1]}"


def _condition(text: str) -> tuple[bool, tuple | None]:
    """Whether a Mac build compiles the `#if` branch, and the SDK its `compiler(>=V)` test guarantees."""
    if re.fullmatch(r"!\s*canImport\((Metal|Darwin|ObjectiveC)\)|canImport\(Glibc\)|os\(Linux\)", text):
        return False, None
    m = re.fullmatch(r"compiler\(\s*>=\s*(\d+)\.(\d+)\s*\)", text)
    if m:
        swift = (int(m.group(1)), int(m.group(2)))
        return True, max((sdk for v, sdk in SWIFT_SDK.items() if v <= swift), default=None)
    # An SDK test (the second clause is false on a Mac: it admits the simulated Metal API elsewhere).
    m = re.fullmatch(r"canImport\(\s*Metal\s*,\s*_version:\s*(\d+)\s*\)(\s*\|\|\s*!\s*canImport\(Metal\))?", text)
    if m:
        return True, max((sdk for v, sdk in METAL_MODULE_SDK.items() if v <= int(m.group(1))), default=None)
    return True, None


def check_availability(root: Path = ROOT) -> list[str]:
    """Every use, in the Metal backend, of an Apple symbol newer than the package allows without a guard."""
    table = availability_table(root)
    deployment, base_sdk, tools = _deployment_and_sdk(root)
    problems = []
    for path in sorted((root / "Sources").rglob("*.swift")):
        text = path.read_text()
        if "MetalSimulator" in path.parts or not re.search(r"^\s*import Metal\s*$", text, re.M):
            continue
        toks = list(_lines(_strip_block_comments(text)))
        # Conditional compilation: a stack of (compiled on a Mac, SDK guaranteed, other-branch state).
        branches: list[tuple[bool, tuple | None, tuple | None]] = []
        scopes: list[tuple] = [deployment]     # run-time availability in each brace scope
        pending_if: tuple | None = None        # an `if #available` whose block the next '{' opens
        pending_guard: list = []               # per scope: (brace depth of its else block, version)
        attribute: tuple | None = None
        i = 0
        while i < len(toks):
            t, line = toks[i]
            if isinstance(t, tuple):
                word, cond = t
                if word == "#if":
                    compiled, sdk = _condition(cond)
                    branches.append((compiled, sdk, (not compiled, None)))
                elif word in ("#else", "#elseif"):
                    compiled, sdk, other = branches.pop()
                    branches.append((other[0] if word == "#else" else _condition(cond)[0], other[1], (compiled, sdk)))
                elif word == "#endif":
                    branches.pop()
                i += 1
                continue
            if not all(b[0] for b in branches):
                i += 1
                continue
            if t in ("#available", "@available"):
                version, i = _available_args(toks, i + 1)
                if version and t == "@available":
                    attribute = version
                elif version and i < len(toks) and toks[i - 1][0] == ")" and _previous_keyword(toks, i) == "guard":
                    pending_guard.append((len(scopes), version))
                elif version:
                    pending_if = version
                continue
            if t == "{":
                version = max([v for v in (pending_if, attribute, scopes[-1]) if v])
                scopes.append(version)
                pending_if = attribute = None
            elif t == "}":
                scopes.pop()
                # The end of a `guard #available(...) else { }`: the rest of the scope has the version.
                while pending_guard and pending_guard[-1][0] >= len(scopes):
                    depth, version = pending_guard.pop()
                    if depth == len(scopes):
                        scopes[-1] = max(scopes[-1], version)
            elif t in table:
                needed = table[t]
                sdk = max([b[1] for b in branches if b[1]] + [base_sdk])
                where = f"{path.relative_to(root)}:{line}"
                if needed > scopes[-1]:
                    problems.append(f"{where}: '{t}' is available from macOS {_show(needed)}, but Package.swift targets "
                                    f"macOS {_show(deployment)} and this use is not inside `if #available(macOS "
                                    f"{_show(needed)}, *)`")
                if needed > sdk:
                    metal = min((v for v, s in METAL_MODULE_SDK.items() if s >= needed), default=None)
                    swift = min((v for v, s in SWIFT_SDK.items() if s >= needed), default=None)
                    guard = (f"`#if canImport(Metal, _version: {metal})`" if metal else
                             f"`#if compiler(>={swift[0]}.{swift[1]})`" if swift else "a compile-time guard")
                    problems.append(f"{where}: '{t}' first appeared in the macOS {_show(needed)} SDK, but the package "
                                    f"builds with Swift {tools} (whose Xcode has the macOS {_show(base_sdk)} SDK) and "
                                    f"`#available` is checked at run time only: put this use inside {guard}")
            i += 1
    return problems


def _previous_keyword(toks: list, i: int) -> str | None:
    """The `if`/`guard`/`while` that the condition ending just before toks[i] belongs to."""
    j = i - 1
    depth = 0
    while j >= 0:
        t = toks[j][0]
        if t == ")":
            depth += 1
        elif t == "(":
            depth -= 1
        elif depth == 0 and t in ("if", "guard", "while", "{", "}", ";"):
            return t
        j -= 1
    return None


if __name__ == "__main__":
    if "--availability" in sys.argv:
        deployment, sdk, tools = _deployment_and_sdk(ROOT)
        print(f"Package.swift: macOS {_show(deployment)} deployment target, Swift {tools} (macOS {_show(sdk)} SDK)")
        for name, version in sorted(availability_table().items(), key=lambda kv: (kv[1], kv[0])):
            print(f"  macOS {_show(version):6} {name}")
        found = check_availability()
        print("\n".join(found) if found else "every use is within the deployment target or guarded")
        sys.exit(1 if found else 0)
    build()
