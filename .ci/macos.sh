#!/usr/bin/env bash
# CI on a Mac (Apple silicon): build the runtime with SwiftPM, run the test suite on the CPU device while
# collecting every MSL source it compiles, compile each with Apple's Metal compiler at every pinned MSL
# version it must compile at, then run the test suite on the Metal GPU, one test file per process (a process
# whose GPU access macOS revoked cannot fail the files after it). A failing step does not hide the later
# ones: each step's failure is counted and the script fails at the end. The steps that need no Mac run
# anywhere, in order, and the script stops before the first one that does when it is not on macOS
# (tests/runtime/test_ci_scripts.py runs it that far on Linux).
#
# Environment:
#   NUMBA_METAL_CI_TESTS    pytest arguments of the suite to collect MSL from and run (default: tests, and
#                           on the GPU each tests/**/test_*.py file in its own process)
#   NUMBA_METAL_CI_MSL_DIR  where the collected MSL goes (default: .build/ci-msl)
#   NUMBA_METAL_CI_GPU      required (default): fail without a usable Metal GPU; optional: report and stop
#                           (GitHub's hosted runners: their paravirtual GPU is not of Apple family 7)
#   NUMBA_METAL_CI_INSTALL  1 (default): install the test dependencies; 0: use the packages already installed
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
read -r -a tests <<< "${NUMBA_METAL_CI_TESTS:-tests}"
msl_dir="${NUMBA_METAL_CI_MSL_DIR:-$PWD/.build/ci-msl}"
step() { printf '\n== %s ==\n' "$*"; }
failures=()  # the steps that failed; the script goes on and fails at the end

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
# A failing CPU-device test is counted, not fatal: the MSL sweep below still runs on what was collected.
if ! NUMBA_METAL_DEVICE=cpu NUMBA_METAL_MSL_DUMP_DIR="$msl_dir" python -m pytest -q -p no:cacheprovider "${tests[@]}"; then
    failures+=("the test suite on the CPU device")
fi
count=$(find "$msl_dir" -name '*.metal' | wc -l | tr -d ' ')
echo "$count MSL sources in $msl_dir"
if [ "$count" -eq 0 ]; then echo "error: the test suite compiled no MSL" >&2; exit 1; fi

finish() {
    if [ "${#failures[@]}" -ne 0 ]; then
        printf 'failed: %s\n' "${failures[@]}" >&2
        exit 1
    fi
    exit 0
}

if [ "$(uname -s)" != Darwin ]; then
    echo
    echo "macos.sh: stopping before the first macOS-only step (Apple's Metal compiler) on $(uname -s)"
    finish
fi

step "Apple's Metal compiler on every collected source at each pinned MSL version (3.0, 3.2, 4.0)"
# Xcode 26 ships without the Metal toolchain (actions/runner-images#13094): download it when missing.
if ! xcrun -sdk macosx metal --version >/dev/null 2>&1; then
    xcodebuild -downloadComponent MetalToolchain
fi
xcrun -sdk macosx metal --version
# Each source compiles at every pinned version at or above the lowest it was compiled at (the
# <source>.std<V> markers NUMBA_METAL_MSL_DUMP_DIR writes; 300 is what the Metal backend pins by default).
refused=0
for f in "$msl_dir"/*.metal; do
    need=400
    for m in "$f".std*; do
        [ -e "$m" ] || continue
        v=${m##*.std}
        if [ "$v" -lt "$need" ]; then need=$v; fi
    done
    for v in 300 320 400; do
        [ "$v" -ge "$need" ] || continue
        std="metal$((v / 100)).$((v % 100 / 10))"
        if ! xcrun -sdk macosx metal -std="$std" -c "$f" -o /dev/null 2>"$f.$std.log"; then
            echo "Apple's compiler refused $f at -std=$std:" >&2
            cat "$f.$std.log" >&2
            refused=$((refused + 1))
        fi
    done
done
echo "$refused compiles of $count sources refused"
if [ "$refused" -ne 0 ]; then failures+=("Apple's Metal compiler ($refused compiles refused)"); fi

step "the test suite on the Metal GPU, one test file per process"
if ! python -c "import sys; from numba_metal import runtime as rt; sys.exit(0 if any(d.kind == 'metal' for d in rt.list_devices()) else 1)"; then
    echo "no Metal GPU numba-metal can use (Apple family 7 or later) on this machine:"
    system_profiler SPDisplaysDataType | sed -n '1,12p' || true
    if [ "${NUMBA_METAL_CI_GPU:-required}" != optional ]; then failures+=("no usable Metal GPU"); fi
    echo "NUMBA_METAL_CI_GPU=${NUMBA_METAL_CI_GPU:-required}: the Metal-device run needs a runner with an Apple GPU"
    finish
fi
if [ -n "${NUMBA_METAL_CI_TESTS:-}" ]; then
    runs=("${NUMBA_METAL_CI_TESTS}")
else
    runs=()
    while IFS= read -r f; do runs+=("$f"); done < <(find tests -name 'test_*.py' | sort)
fi
for run in "${runs[@]}"; do
    read -r -a args <<< "$run"
    if ! NUMBA_METAL_DEVICE=metal python -m pytest -q -p no:cacheprovider "${args[@]}"; then
        failures+=("the Metal GPU: $run")
    fi
done
finish
