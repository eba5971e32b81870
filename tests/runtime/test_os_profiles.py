"""The MSL version is pinned and the simulated OS profiles (issue 26 item 5), on the simulated Metal device.

The Metal backend always sets ``MTLCompileOptions.languageVersion``: MSL 3.0 for a kernel that needs nothing
newer (language_version 0), the kernel's own version otherwise; left unset it would be the OS's newest (MSL
4.0 on macOS 26), which nothing here compiles. ``NUMBA_METAL_SIM_OS`` (13, 14, 15, 26) makes the simulator
behave as that macOS: its compiler's default MSL version and the newest it compiles are that OS's, and the
backend's ``#available`` checks answer for it (MetalDevice.os(atLeast:)), so the fallbacks for older
macOS versions run here. The simulator reports a compile whose version was left unset as version 0."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import available_kinds, run_isolated
from numba_metal import runtime as rt

pytestmark = pytest.mark.skipif("metal-sim" not in available_kinds(),
                                reason="the simulated Metal device exists only in builds without Metal")

CHILD = textwrap.dedent("""
    import json
    from numba_metal import runtime as rt
    from numba_metal.errors import NumbaMetalError
    KERNEL = "#include <metal_stdlib>\\nusing namespace metal;\\nkernel void k(device int* x [[buffer(0)]]) { x[0] = 1; }\\n"
    info = [d for d in rt.list_devices(include_simulated=True) if d.kind == "metal-sim"][0]
    dev = rt.open_device(info.index)
    seen = {}
    for version in (0, 300, 310, 320, 400):
        for mode in (rt.MATH_SAFE, rt.MATH_RELAXED):
            try:
                dev.compile(KERNEL + f"// {version} {mode}\\n", "k", fast_math=mode, language_version=version)
                s = dev.sim_stats()
                seen[f"{version}/{mode}"] = [s["last_language_version"], s["last_math_mode"], s["last_math_functions"]]
            except NumbaMetalError as e:
                seen[f"{version}/{mode}"] = str(e)
    print(json.dumps(seen))
""")

# The newest MSL (x 100) each simulated macOS compiles.
NEWEST = {13: 300, 14: 310, 15: 320, 26: 400}


@pytest.mark.parametrize("os_major", sorted(NEWEST))
def test_every_compile_sets_the_msl_version_and_older_macos_takes_the_fallbacks(os_major):
    out = run_isolated(CHILD, env={"NUMBA_METAL_SIM_OS": str(os_major)})
    assert out.returncode == 0, out.stdout + out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    # A kernel that needs nothing newer compiles as MSL 3.0 on every OS: never 0 (the OS default).
    assert seen[f"0/{rt.MATH_SAFE}"][0] == 300, seen
    for version in (300, 310, 320, 400):
        result = seen[f"{version}/{rt.MATH_SAFE}"]
        if version <= NEWEST[os_major]:
            assert result[0] == version, seen
        else:  # refused by the backend's #available fallback, with the versions it can request
            assert isinstance(result, str) and f"language_version {version} is not an MSL version" in result, seen
    # MTLCompileOptions.mathMode exists from macOS 15: before it the relaxed mode falls back to safe
    # (fastMathEnabled = false: MTLMathMode.safe, precise functions).
    relaxed = seen[f"300/{rt.MATH_RELAXED}"][1:]
    assert relaxed == ([1, 0] if os_major >= 15 else [0, 1]), seen


def test_an_unknown_simulated_os_is_refused_by_name():
    code = textwrap.dedent("""
        from numba_metal import runtime as rt
        from numba_metal.errors import NumbaMetalError
        try:
            info = [d for d in rt.list_devices(include_simulated=True) if d.kind == "metal-sim"]
            dev = rt.open_device(info[0].index) if info else None
            print("OPENED" if dev else "NOT LISTED")
        except NumbaMetalError as e:
            print("REFUSED", e)
    """)
    out = run_isolated(code, env={"NUMBA_METAL_SIM_OS": "12"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "REFUSED NUMBA_METAL_SIM_OS=12 is not a simulated macOS version; use one of 13, 14, 15, 26" in out.stdout, out.stdout
