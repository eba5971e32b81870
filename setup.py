"""Build hook: compiles the Swift runtime library (numba_metal/tools/build.py) as part of build_py, so that
`pip install .`, `pip install -e .` and wheel builds all ship numba_metal/_lib/ (library, C header, shim)."""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parent


def _builder():
    # Load tools/build.py by path: importing the numba_metal package would need numba in the build environment.
    spec = importlib.util.spec_from_file_location("_numba_metal_build", ROOT / "numba_metal" / "tools" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: Installed at the top of site-packages: registers target='metal' with numba.vectorize at start-up.
PTH = "numba_metal_target.pth"


class BuildPyWithRuntime(build_py):
    """Builds the runtime into numba_metal/_lib/ (in the source tree), then copies package data as usual,
    and the .pth file that makes numba.vectorize(..., target='metal') work without importing numba_metal."""

    def run(self):
        _builder().build(ROOT)
        super().run()
        self.copy_file(str(ROOT / PTH), str(Path(self.build_lib) / PTH), preserve_mode=False)
        if self.editable_mode:
            # An editable wheel (PEP 660) maps only packages and modules to the source tree; the other files
            # it holds are those of its root, which is the install command's install_lib while setuptools
            # builds it. Numba runs extension entry points too late for target names (docs/limitations.md).
            root = Path(self.get_finalized_command("install").install_lib)
            self.copy_file(str(ROOT / PTH), str(root / PTH), preserve_mode=False)

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + [str(Path(self.build_lib) / PTH)]


class BinaryDistribution(Distribution):
    """The package ships a native library: wheels are platform-specific."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """Tags the wheel py3-none-PLATFORM: the runtime library is loaded with cffi's ABI mode and uses no
    Python C API of its own (the DLPack capsule destructor resolves the running interpreter's at run time),
    so one wheel per platform serves every Python that pyproject.toml's requires-python admits."""

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(cmdclass={"build_py": BuildPyWithRuntime, "bdist_wheel": PlatformWheel}, distclass=BinaryDistribution)
