"""The build's availability check: every Apple API the Metal backend uses, against Package.swift's macOS
deployment target (run time) and the SDK its Swift tools version implies (compile time), so that a newer
API used without a guard fails the Linux build the way it would fail, or crash, on a Mac."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from numba_metal.tools import build as _build

ROOT = Path(_build.ROOT)


def tree(tmp_path: Path, backend: str | None = None, package_edit=None) -> Path:
    """A copy of what the check reads: Package.swift, the simulator's declarations, the Metal backend."""
    shutil.copytree(ROOT / "Sources" / "MetalSimulator", tmp_path / "Sources" / "MetalSimulator")
    shutil.copytree(ROOT / "Sources" / "MetalRuntime" / "MetalDevice", tmp_path / "Sources" / "MetalRuntime" / "MetalDevice")
    package = (ROOT / "Package.swift").read_text()
    (tmp_path / "Package.swift").write_text(package_edit(package) if package_edit else package)
    if backend is not None:
        (tmp_path / "Sources" / "MetalRuntime" / "MetalDevice" / "Extra.swift").write_text(
            "#if canImport(Metal)\nimport Metal\n#else\nimport MetalSimulator\n#endif\n" + textwrap.dedent(backend))
    return tmp_path


def test_the_backend_uses_nothing_newer_than_it_guards():
    assert _build.check_availability(ROOT) == []


def test_the_table_has_apples_versions():
    table = _build.availability_table(ROOT)
    expected = {"hasUnifiedMemory": (10, 15), "gpuStartTime": (10, 15), "gpuEndTime": (10, 15), "supportsFamily": (10, 15),
                "makeSharedEvent": (10, 14), "encodeSignalEvent": (10, 14), "encodeWaitForEvent": (10, 14),
                "signaledValue": (10, 14), "staticThreadgroupMemoryLength": (10, 13), "version3_0": (13, 0),
                "version3_1": (14, 0), "version3_2": (15, 0), "mathMode": (15, 0), "mathFloatingPointFunctions": (15, 0),
                "makeCommandQueue": (10, 11), "setThreadgroupMemoryLength": (10, 11)}
    assert {k: table.get(k) for k in expected} == expected


def test_a_package_without_a_deployment_target_fails(tmp_path):
    # SwiftPM's default is macOS 10.13: hasUnifiedMemory (10.15), shared events (10.14) become errors.
    root = tree(tmp_path, package_edit=lambda p: "\n".join(l for l in p.split("\n") if "platforms:" not in l))
    problems = "\n".join(_build.check_availability(root))
    for name in ("hasUnifiedMemory", "makeSharedEvent", "encodeWaitForEvent", "gpuStartTime", "version3_0"):
        assert f"'{name}' is available from macOS" in problems
    assert "targets macOS 10.13" in problems


@pytest.mark.parametrize("code, expected", [
    ("func f(o: MTLCompileOptions) { o.mathMode = .safe }", ["is available from macOS 15.0", "first appeared in the macOS 15.0 SDK"]),
    ("func f(o: MTLCompileOptions) { if #available(macOS 15.0, *) { o.mathMode = .safe } }", ["first appeared in the macOS 15.0 SDK"]),
    ("func f(o: MTLCompileOptions) {\n#if compiler(>=6.0)\no.mathMode = .safe\n#endif\n}", ["is available from macOS 15.0"]),
    ("func f(o: MTLCompileOptions) {\n#if compiler(>=6.0)\nif #available(macOS 15.0, *) { o.mathMode = .safe }\n#endif\n}", []),
    ("func f(o: MTLCompileOptions) {\n#if compiler(>=6.0)\nguard #available(macOS 15.0, *) else { return }\n"
     "o.mathMode = .safe\n#endif\n}", []),
    ("func f(o: MTLCompileOptions) {\n#if compiler(>=6.0)\nif #available(macOS 14.0, *) { o.mathMode = .safe }\n#endif\n}",
     ["is available from macOS 15.0"]),
    ("func f() -> MTLLanguageVersion { if #available(macOS 14.0, *) { return .version3_1 }; return .version3_0 }", []),
    ("#if !canImport(Metal)\nfunc f(o: MTLCompileOptions) { o.mathMode = .safe }\n#endif", []),  # Linux-only code
    # The SDK test by the Metal module's version (366: macOS 15's), as the backend writes it.
    ("func f(o: MTLCompileOptions) {\n#if canImport(Metal, _version: 366) || !canImport(Metal)\n"
     "if #available(macOS 15.0, *) { o.mathMode = .safe }\n#endif\n}", []),
    ("func f(o: MTLCompileOptions) {\n#if canImport(Metal, _version: 366)\no.mathMode = .safe\n#endif\n}",
     ["is available from macOS 15.0"]),
    ("func f(o: MTLCompileOptions) {\n#if canImport(Metal, _version: 341)\nif #available(macOS 15.0, *) { o.mathMode = .safe }\n"
     "#endif\n}", ["first appeared in the macOS 15.0 SDK"]),
])
def test_newer_api_needs_both_guards(tmp_path, code, expected):
    found = [p for p in _build.check_availability(tree(tmp_path, backend=code)) if "Extra.swift" in p]
    kinds = {k for k in ("is available from macOS 15.0", "first appeared in the macOS 15.0 SDK") if any(k in p for p in found)}
    assert kinds == set(expected) and len(found) == 2 * len(expected), found  # mathMode and .safe each


def test_the_build_runs_the_check_before_swift(tmp_path):
    root = tree(tmp_path, backend="func f(o: MTLCompileOptions) { o.mathMode = .safe }")
    with pytest.raises(SystemExit, match="newer than the package allows"):
        _build.build(root=root, dest=tmp_path / "lib", verbose=False)
