"""advisor calibrate and the roofline classification that reads its keys."""
import json
import os
import warnings

from numba.core.errors import NumbaPerformanceWarning

from numba_metal.tools.advisor import calibrate, roofline
from numba_metal.tools.advisor.schema import (CAL_BANDWIDTH_GBPS, CAL_COMPUTE_GFLOPS, CAL_LAUNCH_OVERHEAD_US,
                                        CAL_LAUNCH_ROUNDTRIP_US, CAL_RIDGE, CALIBRATION_KEYS, ROOFLINE_KEYS,
                                        validate)


def test_calibrate_writes_every_key_the_roofline_reads(run_cli, run_json, monkeypatch):
    code, _, err = run_cli("calibrate", "--show")
    assert code == 2 and "no calibration stored" in err
    monkeypatch.setenv("NUMBA_METAL_LOW_OCCUPANCY_WARNINGS", "1")   # its small calibration grids do not warn
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaPerformanceWarning)
        code, doc, _ = run_json("calibrate", "--quick")
    assert code == 0
    validate(doc)
    path = doc["path"]
    assert os.path.exists(path) and path.startswith(os.environ["XDG_CACHE_HOME"])
    stored = json.load(open(path))
    assert set(stored["values"]) == set(CALIBRATION_KEYS)
    assert set(ROOFLINE_KEYS) <= set(stored["values"])
    assert all(v > 0 for v in stored["values"].values())
    # The compute kernel really is compute-bound: its FLOPs per byte are far above the measured ridge.
    check = next(c for c in doc["checks"] if c["name"] == "compute kernel intensity far above the ridge")
    assert check["ok"], check
    assert doc["values"][CAL_RIDGE] == doc["values"][CAL_COMPUTE_GFLOPS] / doc["values"][CAL_BANDWIDTH_GBPS]
    # The classifier finds and reads this very file.
    loaded = calibrate.load()
    assert loaded["path"] == path
    r = roofline.classify(loaded, 1.0, 1, 1.0, flops=1e6, nbytes=1e3)
    assert r["regime"] == "compute-bound" and r["calibration_file"] == path
    assert set(r["keys_used"]) <= set(ROOFLINE_KEYS)
    code, out, _ = run_cli("calibrate", "--show", "--format", "text")
    assert code == 0 and "compute_gflops" in out and "not a GPU" in out


CAL = {"path": "cal.json", "values": {CAL_LAUNCH_OVERHEAD_US: 5.0, CAL_LAUNCH_ROUNDTRIP_US: 20.0,
                                      CAL_BANDWIDTH_GBPS: 100.0, CAL_COMPUTE_GFLOPS: 1000.0, CAL_RIDGE: 10.0}}


def test_roofline_rules():
    assert roofline.classify(None, 1e-3, 1)["regime"] == "unknown"
    # 10 launches: 20 + 9 * 5 = 65 us of fixed cost in a 100 us call.
    assert roofline.classify(CAL, 100e-6, 10)["regime"] == "launch-bound"
    assert roofline.classify(CAL, 1.0, 1)["regime"] == "unknown"  # no flops/bytes declared
    mem = roofline.classify(CAL, 1.0, 1, 0.5, flops=1e9, nbytes=1e9)
    assert mem["regime"] == "memory-bound" and mem["achieved_gbps"] == 2.0  # device time is the basis
    comp = roofline.classify(CAL, 1.0, 1, None, flops=1e11, nbytes=1e9)
    assert comp["regime"] == "compute-bound" and comp["achieved_gflops"] == 100.0
