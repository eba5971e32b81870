"""Roofline classification: launch-bound, memory-bound or compute-bound, from calibrated figures.

Reads exactly the keys :data:`~numba_metal.tools.advisor.schema.ROOFLINE_KEYS` that ``calibrate`` writes
(the same constants), for the device in use. Rules, in order:

1. no calibration stored for this device -> ``unknown``;
2. the fixed cost of the call's launches (one launch round trip plus the host overhead of each
   further launch) is at least half of the call's wall time -> ``launch-bound``;
3. the workload declares no ``flops`` and ``bytes`` -> ``unknown``;
4. arithmetic intensity (flops / bytes) below the calibrated ridge -> ``memory-bound``, otherwise
   ``compute-bound``; the achieved GB/s or GFLOP/s (over the device's busy time when the device
   reported timestamps, else the wall time) are given as a share of the calibrated ceiling.
"""

from __future__ import annotations

from .schema import (CAL_BANDWIDTH_GBPS, CAL_COMPUTE_GFLOPS, CAL_LAUNCH_OVERHEAD_US, CAL_LAUNCH_ROUNDTRIP_US,
                     CAL_RIDGE, ROOFLINE_KEYS)

LAUNCH_BOUND_SHARE = 0.5


def _result(regime, reason, path=None, keys=(), gbps=None, gflops=None, intensity=None) -> dict:
    return {"regime": regime, "reason": reason, "calibration_file": path, "keys_used": list(keys),
            "achieved_gbps": gbps, "achieved_gflops": gflops, "intensity_flops_per_byte": intensity}


def classify(calibration: dict | None, seconds: float, launches: int, device_seconds: float | None = None,
             flops: float | None = None, nbytes: float | None = None) -> dict:
    """Classify one call that took ``seconds`` (wall), made ``launches`` kernel launches and kept the
    device busy ``device_seconds`` (None if unknown; achieved rates then use the wall time)."""
    if calibration is None:
        return _result("unknown", "no calibration stored for this device; run `numba-metal advisor calibrate`")
    values = calibration["values"]
    path = calibration.get("path")
    missing = [k for k in ROOFLINE_KEYS if k not in values]
    if missing:
        return _result("unknown", f"the stored calibration lacks {', '.join(missing)}; run calibrate again", path)
    if launches > 0 and seconds > 0:
        fixed = (values[CAL_LAUNCH_ROUNDTRIP_US] + (launches - 1) * values[CAL_LAUNCH_OVERHEAD_US]) * 1e-6
        if fixed >= LAUNCH_BOUND_SHARE * seconds:
            return _result(
                "launch-bound",
                f"{launches} launch(es) cost about {fixed * 1e6:.0f} us of fixed overhead (calibrated "
                f"round trip {values[CAL_LAUNCH_ROUNDTRIP_US]:.1f} us, "
                f"{values[CAL_LAUNCH_OVERHEAD_US]:.1f} us per further launch), "
                f"{100 * fixed / seconds:.0f}% of the {seconds * 1e6:.0f} us call: give each launch more work",
                path, (CAL_LAUNCH_ROUNDTRIP_US, CAL_LAUNCH_OVERHEAD_US))
    if not flops or not nbytes:
        return _result("unknown", "the workload declares no 'flops' and 'bytes' per metal() call, so its "
                       "arithmetic intensity is unknown", path, (CAL_LAUNCH_ROUNDTRIP_US, CAL_LAUNCH_OVERHEAD_US))
    intensity = flops / nbytes
    basis = device_seconds if device_seconds else seconds
    gbps = nbytes / basis / 1e9
    gflops = flops / basis / 1e9
    ridge = values[CAL_RIDGE]
    keys = (CAL_LAUNCH_ROUNDTRIP_US, CAL_LAUNCH_OVERHEAD_US, CAL_RIDGE)
    if intensity < ridge:
        share = gbps / values[CAL_BANDWIDTH_GBPS]
        return _result("memory-bound", f"{intensity:.2f} FLOP/byte is below the ridge of {ridge:.2f}: "
                       f"{gbps:.2f} GB/s achieved, {100 * share:.0f}% of the calibrated "
                       f"{values[CAL_BANDWIDTH_GBPS]:.2f} GB/s", path, keys + (CAL_BANDWIDTH_GBPS,),
                       gbps, gflops, intensity)
    share = gflops / values[CAL_COMPUTE_GFLOPS]
    return _result("compute-bound", f"{intensity:.2f} FLOP/byte is at or above the ridge of {ridge:.2f}: "
                   f"{gflops:.2f} GFLOP/s achieved, {100 * share:.0f}% of the calibrated "
                   f"{values[CAL_COMPUTE_GFLOPS]:.2f} GFLOP/s", path, keys + (CAL_COMPUTE_GFLOPS,),
                   gbps, gflops, intensity)
