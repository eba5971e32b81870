"""Importing this file would create a marker file and fail: `advisor scan` must never import it."""
import os

open(os.environ.get("ADVISOR_SCAN_MARKER", "/tmp/advisor_scan_marker"), "w").write("imported")
raise SystemExit("advisor scan imported a file it should only have parsed")


def loop(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * a[i]
