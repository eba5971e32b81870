#!/usr/bin/env bash
# CI on a Mac (Apple silicon): build the runtime with SwiftPM, compile every MSL source the test suite
# generates with Apple's Metal compiler, then run the test suite on the Metal GPU. The steps that need no
# Mac run anywhere, in order, and the script stops before the first one that does when it is not on macOS
# (tests/runtime/test_ci_scripts.py runs it that far on Linux).
#
# Environment:
#   NUMBA_METAL_CI_TESTS    pytest arguments of the suite to collect MSL from and run (default: tests)
#   NUMBA_METAL_CI_MSL_DIR  where the collected MSL goes (default: .build/ci-msl)
#   NUMBA_METAL_CI_GPU      required (default): fail without a usable Metal GPU; optional: report and stop
#                           (GitHub's hosted runners: their paravirtual GPU is not of Apple family 7)
#   NUMBA_METAL_CI_INSTALL  1 (default): install the test dependencies; 0: use the packages already installed
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
tests=(${NUMBA_METAL_CI_TESTS:-tests})
msl_dir="${NUMBA_METAL_CI_MSL_DIR:-$PWD/.build/ci-msl}"
step() { printf '\n== %s ==\n' "$*"; }

step "toolchain"
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then export PATH="/opt/swift/usr/bin:$PATH"; fi
uname -sm
swift --version
python --version

step "test dependencies (the test and torch extras)"
# What .ci/run installs, so that the Mac run has the same coverage: the test extra (Dask, MLX) and PyTorch.
# On macOS PyPI's torch wheel is the CPU + MPS build (.ci/run takes PyTorch's CPU index only to avoid
# PyPI's Linux CUDA wheel). A missing package fails here rather than skipping its tests.
if [ "${NUMBA_METAL_CI_INSTALL:-1}" = 0 ]; then
    echo "NUMBA_METAL_CI_INSTALL=0: using the packages already installed"
else
    python -m pip install --quiet -e ".[test,torch]"
    python -c "import dask.distributed, mlx.core, torch; print('dask', dask.__version__, 'mlx', mlx.core.__version__, 'torch', torch.__version__)"
fi

step "availability of Apple's API (Package.swift's deployment target)"
python -m numba_metal.tools.build --availability | tail -n 1

step "build (SwiftPM, release)"
python -m numba_metal.tools.build

step "collect the MSL the test suite compiles (CPU reference device)"
rm -rf "$msl_dir"
mkdir -p "$msl_dir"
NUMBA_METAL_DEVICE=cpu NUMBA_METAL_MSL_DUMP_DIR="$msl_dir" python -m pytest -q -p no:cacheprovider "${tests[@]}"
count=$(find "$msl_dir" -name '*.metal' | wc -l | tr -d ' ')
echo "$count MSL sources in $msl_dir"
if [ "$count" -eq 0 ]; then echo "error: the test suite compiled no MSL" >&2; exit 1; fi

if [ "$(uname -s)" != Darwin ]; then
    echo
    echo "macos.sh: stopping before the first macOS-only step (Apple's Metal compiler) on $(uname -s)"
    exit 0
fi

step "Apple's Metal compiler on every collected source (xcrun -sdk macosx metal -c)"
xcrun -sdk macosx metal --version
failed=0
for f in "$msl_dir"/*.metal; do
    # numba-metal asks for MSL 3.0 by default (macOS 13); hand-written test kernels may ask for 3.2.
    if ! xcrun -sdk macosx metal -std=metal3.0 -c "$f" -o /dev/null 2>"$f.log" \
       && ! xcrun -sdk macosx metal -std=metal3.2 -c "$f" -o /dev/null 2>>"$f.log"; then
        echo "Apple's compiler refused $f:" >&2
        cat "$f.log" >&2
        failed=$((failed + 1))
    fi
done
echo "$failed of $count sources refused"
if [ "$failed" -ne 0 ]; then exit 1; fi

step "the test suite on the Metal GPU"
if ! python -c "import sys; from numba_metal import runtime as rt; sys.exit(0 if any(d.kind == 'metal' for d in rt.list_devices()) else 1)"; then
    echo "no Metal GPU numba-metal can use (Apple family 7 or later) on this machine:"
    system_profiler SPDisplaysDataType | sed -n '1,12p' || true
    if [ "${NUMBA_METAL_CI_GPU:-required}" = optional ]; then
        echo "NUMBA_METAL_CI_GPU=optional: the Metal-device run is left to a runner with an Apple GPU"
        exit 0
    fi
    exit 1
fi
NUMBA_METAL_DEVICE=metal python -m pytest -q -p no:cacheprovider "${tests[@]}"
