"""advisor profile and report: runs on sample programs, and byte-identical re-rendering."""
import json
import os

import pytest

from numba_metal.tools.advisor.schema import validate

from advisor_paths import GOLDEN, sample

SAMPLE_PROFILE = sample("profile_match.json")


def test_report_matches_the_golden_file_and_is_byte_identical(run_cli):
    code1, out1, _ = run_cli("report", SAMPLE_PROFILE, "--format", "text", "--width", "80")
    code2, out2, _ = run_cli("report", SAMPLE_PROFILE, "--format", "text", "--width", "80")
    assert code1 == code2 == 0
    assert out1 == out2
    with open(os.path.join(GOLDEN, "report_match.txt"), encoding="utf-8") as fh:
        assert out1 == fh.read()
    for line in out1.splitlines():
        assert len(line) <= 80 and line.isascii()


def test_report_json_is_the_profile(run_json):
    code, doc, _ = run_json("report", SAMPLE_PROFILE)
    assert code == 0
    validate(doc)
    assert doc == json.load(open(SAMPLE_PROFILE))


def test_report_rendering_options(run_cli, tmp_path):
    _, deep, _ = run_cli("report", SAMPLE_PROFILE, "--format", "text")
    _, shallow, _ = run_cli("report", SAMPLE_PROFILE, "--format", "text", "--max-depth", "1")
    _, coarse, _ = run_cli("report", SAMPLE_PROFILE, "--format", "text", "--min-percent", "50")
    _, nogaps, _ = run_cli("report", SAMPLE_PROFILE, "--format", "text", "--gap-ms", "1000")
    assert len(shallow.splitlines()) < len(deep.splitlines())
    assert len(coarse.splitlines()) < len(deep.splitlines())
    assert "No device idle gap of 1000 ms" in nogaps
    code, _, _ = run_cli("report", SAMPLE_PROFILE, "--output", tmp_path, "--format", "json")
    assert code == 0 and (tmp_path / "profile.txt").read_text().startswith("numba-metal advisor profile")


def test_report_refuses_other_documents(run_cli, tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"schema": "numba-metal-advisor/scan", "version": 1}')
    code, _, err = run_cli("report", bad)
    assert code == 2 and "not a numba-metal advisor profile" in err


def test_profile_script_with_baseline_and_arguments(run_json):
    code, doc, _ = run_json("profile", sample("profile", "pipeline.py"), "--interval-ms", "1", "--", "3")
    assert code == 0
    validate(doc)
    assert doc["mode"] == "script" and [r["role"] for r in doc["runs"]] == ["baseline", "metal"]
    base, metal = doc["runs"]
    assert base["command"] == "pipeline.py 3" and base["interval_ms"] == 1.0
    assert not [e for e in base["events"] if e["kind"] == "launch"]  # the program honours the baseline variable
    launches = [e for e in metal["events"] if e["kind"] == "launch"]
    assert len(launches) == 3 and all(e["device_end_ns"] >= e["device_start_ns"] > 0 for e in launches)
    assert {e["kind"] for e in metal["events"]} >= {"compile", "launch", "copy", "alloc", "wait"}
    assert "CPU reference device" in metal["device_timestamps"]


def test_profile_workload_text(run_cli):
    code, out, _ = run_cli("profile", sample("compare", "slower.py"), "--repeats", "2", "--format", "text")
    assert code == 0
    for heading in ("Flame graph: CPU baseline", "Flame graph: numba-metal run", "Differential flame graph",
                    "CPU/GPU timeline", "not a GPU"):
        assert heading in out
    assert "metal() x 2" in out


def test_profile_pytest_without_baseline(run_json):
    code, doc, _ = run_json("profile", "--pytest", sample("profile", "check_kernels.py"), "--no-baseline")
    assert code == 0 and doc["mode"] == "pytest"
    assert [r["role"] for r in doc["runs"]] == ["metal"]
    assert sum(e["kind"] == "launch" for e in doc["runs"][0]["events"]) == 2
    assert "No baseline run (--no-baseline)." in doc["notes"]


def test_profile_usage_errors(run_cli):
    assert run_cli("profile")[0] == 2
    assert run_cli("profile", sample("profile", "pipeline.py"), "--pytest", sample("profile"))[0] == 2
    assert run_cli("profile", sample("profile", "missing.py"))[0] == 2
