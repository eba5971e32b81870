"""Checks the sdist and wheels `python -m build` made against the source tree they were built from.

    python tools/check_dist.py dist/                   # every .tar.gz and .whl in dist/
    python tools/check_dist.py --manylinux dist/*.whl  # a repaired Linux wheel must carry a manylinux tag

A wheel must be `numba_metal-VERSION-py3-none-PLATFORM.whl` (VERSION from numba_metal/_version.py; PLATFORM
linux_/manylinux_ x86_64 or aarch64, or macosx_13_0_arm64 for Package.swift's `.macOS(.v13)`), not pure,
and hold the prebuilt runtime library, its C header and cffi module, every file of the Metal shim, every
`.metal` file and Python module of the package, the `.pth` file and `_numba_metal_target`, the entry points
pyproject.toml declares, the metadata's version, Python range and dependencies, and no tests. The sdist must
hold what building the wheel needs (Package.swift, Sources/, setup.py, the Swift test target's sources) and
no built library or Python tests.
Prints one line per finding; exit status 1 if there is any.
"""

from __future__ import annotations

import argparse
import configparser
import email.parser
import re
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIM = Path("Sources", "MetalRuntime", "CPUDevice", "shim")
#: The Swift test target Package.swift declares: SwiftPM refuses a package whose target directory is missing.
SWIFT_TESTS = "tests/runtime/swift/"
LIBRARIES = {"linux": "libNumbaMetalRuntime.so", "macosx": "libNumbaMetalRuntime.dylib"}
WHEEL_NAME = re.compile(r"^numba_metal-(?P<version>[^-]+)-(?P<python>[^-]+)-(?P<abi>[^-]+)-(?P<platform>[^-]+)\.whl$")


def _tomllib():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib


def source_facts(root: Path = ROOT) -> dict:
    """What the tree says the distributions must hold."""
    project = _tomllib().loads((root / "pyproject.toml").read_text())["project"]
    version = re.search(r'__version__\s*=\s*"([^"]+)"', (root / "numba_metal" / "_version.py").read_text()).group(1)
    macos = re.search(r"\.macOS\(\.v(\d+)(?:_(\d+))?\)", (root / "Package.swift").read_text())
    package = root / "numba_metal"
    modules = sorted(p.relative_to(root).as_posix() for p in package.rglob("*.py")
                     if "_lib" not in p.relative_to(package).parts and "__pycache__" not in p.parts)
    return {
        "version": version,
        "requires_python": project["requires-python"],
        "dependencies": project["dependencies"],
        "scripts": project.get("scripts", {}),
        "entry_points": project.get("entry-points", {}),
        "macos": f"{macos.group(1)}_{macos.group(2) or 0}",
        "metal": sorted(p.relative_to(root).as_posix() for p in package.rglob("*.metal")),
        "modules": modules,
        "shim": sorted(p.relative_to(root / SHIM).as_posix() for p in (root / SHIM).rglob("*") if p.is_file()),
    }


def _platform_ok(platform: str, facts: dict, manylinux: bool) -> str | None:
    """None if the platform tag is one numba-metal ships, else why not."""
    if platform.startswith("macosx_"):
        want = f"macosx_{facts['macos']}_arm64"
        return None if platform == want else f"macOS wheels must be {want} (Package.swift's deployment target, Apple silicon)"
    m = re.fullmatch(r"(?:(manylinux_\d+_\d+|manylinux\d+)|linux)_(x86_64|aarch64)", platform.split(".")[0])
    if not m or any(re.fullmatch(r"(?:manylinux_\d+_\d+|manylinux\d+|linux)_(?:x86_64|aarch64)", p) is None
                    for p in platform.split(".")):
        return "Linux wheels must be tagged linux_/manylinux_ x86_64 or aarch64"
    if manylinux and not m.group(1):
        return "not repaired: a Linux wheel for the package index needs a manylinux tag (auditwheel repair)"
    return None


def check_wheel(path: Path, facts: dict, manylinux: bool = False) -> list[str]:
    """Findings about one wheel (empty when it is right)."""
    problems = []
    m = WHEEL_NAME.match(path.name)
    if not m:
        return [f"{path.name}: not a numba_metal wheel name (numba_metal-VERSION-PYTHON-ABI-PLATFORM.whl)"]
    if m["version"] != facts["version"]:
        problems.append(f"version {m['version']} in the name, numba_metal/_version.py says {facts['version']}")
    if (m["python"], m["abi"]) != ("py3", "none"):
        problems.append(f"tags {m['python']}-{m['abi']}: the library uses no Python ABI, the wheel must be py3-none")
    why = _platform_ok(m["platform"], facts, manylinux)
    if why:
        problems.append(f"platform {m['platform']}: {why}")
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        info = f"numba_metal-{m['version']}.dist-info"
        read = lambda name: z.read(f"{info}/{name}").decode() if f"{info}/{name}" in names else ""  # noqa: E731
        wheel_meta, metadata, entry_points = read("WHEEL"), read("METADATA"), read("entry_points.txt")
    if "Root-Is-Purelib: false" not in wheel_meta:
        problems.append("WHEEL says Root-Is-Purelib is not false: a wheel with a native library is a platform wheel")
    if f"Tag: {m['python']}-{m['abi']}-{m['platform'].split('.')[0]}" not in wheel_meta:
        problems.append("WHEEL's Tag lines do not match the file name")
    library = LIBRARIES["macosx" if m["platform"].startswith("macosx") else "linux"]
    wanted = ([f"numba_metal/_lib/{library}", "numba_metal/_lib/numba_metal_runtime.h", "numba_metal/_lib/_nm_ffi.py",
               "numba_metal/_lib/_nm_ffi.sha256", "_numba_metal_target.py", "numba_metal_target.pth"]
              + [f"numba_metal/_lib/shim/{f}" for f in facts["shim"]] + facts["metal"] + facts["modules"])
    problems += [f"missing {name}" for name in wanted if name not in names]
    problems += [f"holds a test file {name}" for name in sorted(names)
                 if name.startswith("tests/") or "/tests/" in name or Path(name).name.startswith(("test_", "conftest"))]
    problems += _metadata_problems(metadata, facts)
    problems += _entry_point_problems(entry_points, facts)
    return [f"{path.name}: {p}" for p in problems]


def _metadata_problems(text: str, facts: dict) -> list[str]:
    if not text:
        return ["no METADATA"]
    meta = email.parser.Parser().parsestr(text)
    problems = []
    if meta["Version"] != facts["version"]:
        problems.append(f"METADATA Version {meta['Version']}, numba_metal/_version.py says {facts['version']}")
    bounds = lambda spec: sorted(re.sub(r"\s", "", spec).split(","))  # noqa: E731
    if bounds(meta["Requires-Python"] or "") != bounds(facts["requires_python"]):
        problems.append(f"METADATA Requires-Python {meta['Requires-Python']}, pyproject.toml says {facts['requires_python']}")
    have = {re.sub(r"\s", "", d) for d in meta.get_all("Requires-Dist") or [] if "extra ==" not in d}
    for dep in facts["dependencies"]:
        name = re.match(r"[A-Za-z0-9_.-]+", dep).group()
        spec = sorted(re.sub(r"\s", "", dep)[len(name):].split(","))
        if not any(h.startswith(name) and sorted(h[len(name):].split(",")) == spec for h in have):
            problems.append(f"METADATA lacks Requires-Dist {dep}")
    for classifier in ("Operating System :: MacOS", "Operating System :: POSIX :: Linux", "Environment :: GPU"):
        if classifier not in (meta.get_all("Classifier") or []):
            problems.append(f"METADATA lacks the classifier {classifier}")
    return problems


def _entry_point_problems(text: str, facts: dict) -> list[str]:
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str
    parser.read_string(text)
    got = {section: {k: v.strip() for k, v in parser[section].items()} for section in parser.sections()}
    wanted = {"console_scripts": facts["scripts"], **facts["entry_points"]}
    return [f"entry_points.txt: [{group}] is {got.get(group, {})}, pyproject.toml declares {points}"
            for group, points in wanted.items() if got.get(group, {}) != points]


def check_sdist(path: Path, facts: dict) -> list[str]:
    """Findings about the sdist."""
    stem = f"numba_metal-{facts['version']}"
    if path.name != f"{stem}.tar.gz":
        return [f"{path.name}: the sdist of numba_metal/_version.py's version is {stem}.tar.gz"]
    with tarfile.open(path) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    wanted = ["Package.swift", "setup.py", "pyproject.toml", "MANIFEST.in", "LICENSE", "README.md",
              "numba_metal_target.pth", "_numba_metal_target.py", "Sources/CPUEngine/include/numba_metal_runtime.h",
              "numba_metal/tools/build.py", "PKG-INFO"] + [f"{SHIM.as_posix()}/{f}" for f in facts["shim"]] + facts["metal"]
    problems = [f"missing {n}" for n in wanted if n not in names]
    problems += [f"holds {n}" for n in sorted(names)
                 if n.startswith(("tests/", "numba_metal/_lib/", ".build/"))
                 and not (n.startswith(SWIFT_TESTS) or SWIFT_TESTS.startswith(n + "/"))
                 or n.endswith((".so", ".dylib", ".pyc"))]
    return [f"{path.name}: {p}" for p in problems]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="a dist/ directory, or sdists and wheels")
    parser.add_argument("--manylinux", action="store_true", help="Linux wheels must carry a manylinux tag")
    args = parser.parse_args(argv)
    files = [f for p in args.paths for f in (sorted(p.iterdir()) if p.is_dir() else [p])
             if f.name.endswith((".whl", ".tar.gz"))]
    if not files:
        print("check_dist: no sdist or wheel found in " + " ".join(map(str, args.paths)))
        return 1
    facts = source_facts()
    problems = []
    for f in files:
        found = check_wheel(f, facts, args.manylinux) if f.name.endswith(".whl") else check_sdist(f, facts)
        problems += found
        print(f"{'FAIL' if found else 'ok  '}  {f.name}")
    for p in problems:
        print(f"  {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
