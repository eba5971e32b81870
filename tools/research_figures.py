"""Derives the figures of docs/research-report.md that no benchmark prints directly (the roofline's rates
and ridge, ratios) from the committed results, into docs/data/research-figures.json.

    python tools/research_figures.py            # rewrite docs/data/research-figures.json
    python tools/research_figures.py --check    # exit 1 if it differs from what the results give

Everything here is arithmetic on benchmarks/results/*.json: rerunning the benchmarks and then this
script refreshes the report's figures, and tests/docs/test_figures.py checks both the JSON and every
figure the report cites from it.
"""

from __future__ import annotations

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
OUT = os.path.join(ROOT, "docs", "data", "research-figures.json")


def _load(name: str) -> dict:
    with open(os.path.join(RESULTS, name), encoding="utf-8") as f:
        return json.load(f)


def _program(doc: dict, name: str) -> dict:
    return next(p for p in doc["programs"] if p["name"] == name)


def controlled_roofline(sweep_doc: dict, bandwidth: dict, peak: dict) -> dict:
    """The roofline of the CPU reference device from three runs on one machine: the sweep's large
    variant, the vector add's bandwidth and the measured float32 peak (benchmarks/perf_peak_flops.py).
    The memory roof is the vector add's rate at the size nearest the sweep's, whose working set is
    alike; the rate at the largest size (beyond the caches) is kept beside it."""
    machines = {sweep_doc["machine"]["cpu"], bandwidth["machine"]["cpu"], peak["machine"]["cpu"]}
    if len(machines) != 1:
        raise ValueError(f"the roofline's three runs come from different machines: {sorted(machines)}")
    sweep = _program(sweep_doc, "arithmetic_intensity_sweep")
    cases = [c for c in sweep["cases"] if c["variant"] == "large"]
    n = cases[0]["params"]["n"]
    near = min(bandwidth["results"], key=lambda r: abs(r["n"] - n))
    largest = max(bandwidth["results"], key=lambda r: r["n"])
    peak_gflop_s = peak["peak"]["gflop_s"]
    bw = near["metal_gb_s"]
    one_chain = next(r for r in peak["results"]["mul_add"] if r["chains"] == 1)
    out: dict = {
        "machine": peak["machine"]["cpu"],
        "sources": ["benchmarks/results/roofline_sweep.json", "benchmarks/results/roofline_bandwidth.json",
                    "benchmarks/results/peak_flops.json"],
        "peak_gflop_s": peak_gflop_s, "peak_form": peak["peak"]["form"], "peak_chains": peak["peak"]["chains"],
        "one_chain_gflop_s": one_chain["gflop_s"],
        "fma_best_gflop_s": max(r["gflop_s"] for r in peak["results"]["fma"]),
        "bandwidth": {"n": near["n"], "metal_gb_s": bw, "numpy_gb_s": near["numpy_gb_s"],
                      "largest_n": largest["n"], "largest_metal_gb_s": largest["metal_gb_s"],
                      "largest_numpy_gb_s": largest["numpy_gb_s"]},
        "ridge_flops_per_byte": peak_gflop_s / bw,
        "sweep": {},
    }
    for case in cases:
        p = case["params"]
        ns = case["timings"]["metal_kernel"]["median_ns"]
        rate = p["n"] * p["flops_per_element"] / ns
        roof = min(peak_gflop_s, p["flops_per_byte"] * bw)
        par_ns = case["timings"]["numba_parallel"]["median_ns"]
        out["sweep"][f"R={p['reps']}"] = {
            "flops_per_byte": p["flops_per_byte"], "median_ms": ns / 1e6, "gflop_s": rate,
            "gb_s": p["n"] * p["bytes_per_element"] / ns, "roof_gflop_s": roof, "share_of_roof": rate / roof,
            "share_of_peak": rate / peak_gflop_s,
            "numba_parallel_gflop_s": p["n"] * p["flops_per_element"] / par_ns}
    out["n"] = n
    return out


def compile_and_launch(full: dict, launch: dict, compile_: dict, startup: dict) -> dict:
    cache = _program(full, "device_function_compile_cache")["cases"][0]["timings"]
    three = next(r for r in launch["results"] if r["arrays"] == 3)
    return {
        "thirty_kernels_over_njit": cache["metal_shared"]["median_ns"] / cache["numba_njit"]["median_ns"],
        "thirty_kernels_disk_cache_speedup": cache["metal_shared"]["median_ns"] / cache["metal_disk_cache"]["median_ns"],
        "launch_3_arrays_over_njit_call": three["launch_us"]["median"] / three["njit_call_us"]["median"],
        "pipeline_over_numba_metal_compile": (compile_["device_pipeline_ms"]["median"]
                                              / compile_["numba_metal_compile_ms"]["median"]),
        "warm_over_cold_first_launch": startup["warm_over_cold_first_launch"],
    }


def figures() -> dict:
    full = _load("full_cpu_device.json")
    return {"controlled_roofline": controlled_roofline(_load("roofline_sweep.json"), _load("roofline_bandwidth.json"),
                                                       _load("peak_flops.json")),
            "compile_and_launch": compile_and_launch(full, _load("launch.json"), _load("compile.json"),
                                                     _load("startup.json"))}


def render() -> str:
    return json.dumps(figures(), indent=1, sort_keys=True) + "\n"


def main(argv) -> int:
    text = render()
    if "--check" in argv:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text:
                print("docs/data/research-figures.json is out of date: run `python tools/research_figures.py`",
                      file=sys.stderr)
                return 1
        return 0
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
