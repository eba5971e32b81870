"""tools/check_dist.py, the check of the sdist and wheels (tools/check_wheel.sh builds real ones; here a
wheel is assembled from the tree so that each finding is shown to be made), and the version's one source."""

import importlib.util
import re
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _check_dist():
    spec = importlib.util.spec_from_file_location("check_dist", ROOT / "tools" / "check_dist.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_dist = _check_dist()
FACTS = check_dist.source_facts()
VERSION = FACTS["version"]


def _wheel(tmp_path, *, name=None, drop=(), add=(), version=VERSION, tag="py3-none-manylinux_2_28_x86_64"):
    """A wheel with what a right one holds, less `drop`, plus `add`."""
    path = tmp_path / (name or f"numba_metal-{version}-{tag}.whl")
    info = f"numba_metal-{version}.dist-info"
    deps = "".join(f"Requires-Dist: {d}\n" for d in FACTS["dependencies"])
    files = {
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n",
        f"{info}/METADATA": (f"Metadata-Version: 2.4\nName: numba-metal\nVersion: {version}\n"
                             f"Requires-Python: {FACTS['requires_python']}\n{deps}"
                             "Classifier: Environment :: GPU\nClassifier: Operating System :: MacOS\n"
                             "Classifier: Operating System :: POSIX :: Linux\n"),
        f"{info}/entry_points.txt": "".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
            for group, points in {"console_scripts": FACTS["scripts"], **FACTS["entry_points"]}.items()),
        "numba_metal/_lib/libNumbaMetalRuntime.so": "", "numba_metal/_lib/numba_metal_runtime.h": "",
        "numba_metal/_lib/_nm_ffi.py": "", "numba_metal/_lib/_nm_ffi.sha256": "",
        "_numba_metal_target.py": "", "numba_metal_target.pth": "",
        **{f"numba_metal/_lib/shim/{f}": "" for f in FACTS["shim"]},
        **{f: "" for f in FACTS["metal"] + FACTS["modules"]},
        **{f: "" for f in add},
    }
    with zipfile.ZipFile(path, "w") as z:
        for f, text in files.items():
            if f not in drop:
                z.writestr(f, text)
    return path


def test_the_tree_names_what_a_wheel_must_hold():
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", VERSION)
    assert "numba_metal/compiler/mslib/float64.metal" in FACTS["metal"] and "metal_stdlib" in FACTS["shim"]
    assert "numba_metal/tools/cli.py" in FACTS["modules"] and FACTS["macos"] == "13_0"
    assert FACTS["scripts"] == {"numba-metal": "numba_metal.tools.cli:main"}


def test_a_right_wheel_has_no_findings(tmp_path):
    assert check_dist.check_wheel(_wheel(tmp_path), FACTS, manylinux=True) == []


def test_each_missing_or_extra_file_is_named(tmp_path):
    wheel = _wheel(tmp_path, drop=["numba_metal/compiler/mslib/float64.metal", "numba_metal/_lib/shim/metal_stdlib",
                                   "numba_metal/_lib/libNumbaMetalRuntime.so"],
                   add=["tests/test_x.py", "numba_metal/tests/conftest.py"])
    found = check_dist.check_wheel(wheel, FACTS)
    assert [f.split(": ", 1)[1] for f in found] == [
        "missing numba_metal/_lib/libNumbaMetalRuntime.so", "missing numba_metal/_lib/shim/metal_stdlib",
        "missing numba_metal/compiler/mslib/float64.metal",
        "holds a test file numba_metal/tests/conftest.py", "holds a test file tests/test_x.py"]


@pytest.mark.parametrize("tag, finding", [
    ("cp311-cp311-linux_x86_64", "tags cp311-cp311: the library uses no Python ABI, the wheel must be py3-none"),
    ("py3-none-linux_x86_64", "needs a manylinux tag (auditwheel repair)"),
    ("py3-none-macosx_11_0_arm64", "macOS wheels must be macosx_13_0_arm64"),
    ("py3-none-win_amd64", "Linux wheels must be tagged"),
])
def test_wrong_tags_are_named(tmp_path, tag, finding):
    found = check_dist.check_wheel(_wheel(tmp_path, tag=tag), FACTS, manylinux=True)
    assert any(finding in f for f in found), found


def test_a_version_other_than_the_trees_is_named(tmp_path):
    found = check_dist.check_wheel(_wheel(tmp_path, version="9.9.9"), FACTS)
    assert f"version 9.9.9 in the name, numba_metal/_version.py says {VERSION}" in found[0]
    assert any("METADATA Version 9.9.9" in f for f in found)


def test_the_version_has_one_source_and_the_command_says_it():
    """pyproject.toml declares no version of its own; `numba-metal --version`, the installed metadata and
    numba_metal/_version.py agree."""
    pyproject = check_dist._tomllib().loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "numba_metal._version.__version__"}
    said = subprocess.run([sys.executable, "-m", "numba_metal", "--version"], capture_output=True, text=True,
                          cwd=ROOT, check=True).stdout.strip()
    assert said == f"numba-metal {VERSION}" == f"numba-metal {metadata.version('numba-metal')}"
