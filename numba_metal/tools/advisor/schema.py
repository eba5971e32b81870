"""The advisor's JSON documents: their kinds, JSON Schemas, a validator, and the calibration keys.

Every ``--format json`` output and every file written by ``--output`` is one document::

    {"schema": "numba-metal-advisor/<kind>", "version": 1, ...}

with ``<kind>`` one of ``scan``, ``compare``, ``profile``, ``calibration``. The schemas below are the
single source of truth; docs/advisor.md describes them and ``numba-metal advisor schema KIND`` prints
them. Calibration keys are defined here once: ``calibrate`` writes them and the roofline classifier
(:mod:`numba_metal.tools.advisor.roofline`) reads them through these same constants.
"""

from __future__ import annotations

SCHEMA_VERSION = 1
KINDS = ("scan", "compare", "profile", "calibration")


def schema_id(kind: str) -> str:
    return f"numba-metal-advisor/{kind}"


def new_document(kind: str, **fields) -> dict:
    """A document of ``kind`` with its header fields first."""
    doc = {"schema": schema_id(kind), "version": SCHEMA_VERSION}
    doc.update(fields)
    return doc


# ---------------------------------------------------------------------------------------------
# Calibration keys (written by `calibrate`, read by the roofline classifier)
# ---------------------------------------------------------------------------------------------

#: Host time of one asynchronous launch call of a one-thread kernel (median), microseconds.
CAL_LAUNCH_OVERHEAD_US = "launch_overhead_us"
#: One launch of a one-thread kernel followed by metal.synchronize() (median), microseconds.
CAL_LAUNCH_ROUNDTRIP_US = "launch_roundtrip_us"
#: First compile of a new kernel (Python typing + MSL generation), milliseconds.
CAL_COMPILE_PYTHON_MS = "compile_python_ms"
#: First device compile of that kernel's MSL into a pipeline, milliseconds.
CAL_COMPILE_PIPELINE_MS = "compile_pipeline_ms"
#: metal.device_array of 4 KiB (median), microseconds.
CAL_ALLOC_US = "alloc_us"
#: metal.to_device of a 64 MiB array, GB/s (10^9 bytes per second).
CAL_H2D_GBPS = "h2d_gbps"
#: DeviceNDArray.copy_to_host of a 64 MiB array, GB/s.
CAL_D2H_GBPS = "d2h_gbps"
#: Achieved memory bandwidth of a copy kernel (bytes read + written per device second), GB/s.
CAL_BANDWIDTH_GBPS = "bandwidth_gbps"
#: Achieved float32 throughput of the compute-bound kernel, GFLOP/s (an FMA counts as 2 FLOPs).
CAL_COMPUTE_GFLOPS = "compute_gflops"
#: FLOPs per byte of memory traffic of the compute kernel (fixed by its code).
CAL_COMPUTE_KERNEL_INTENSITY = "compute_kernel_flops_per_byte"
#: How the compute kernel's device time grew when its FLOPs per element doubled (≈2 when compute-bound).
CAL_COMPUTE_SCALING = "compute_time_ratio_at_2x_flops"
#: compute_gflops / bandwidth_gbps: the arithmetic intensity where the roofline bends, FLOPs per byte.
CAL_RIDGE = "ridge_flops_per_byte"

CALIBRATION_KEYS = (
    CAL_LAUNCH_OVERHEAD_US, CAL_LAUNCH_ROUNDTRIP_US, CAL_COMPILE_PYTHON_MS, CAL_COMPILE_PIPELINE_MS,
    CAL_ALLOC_US, CAL_H2D_GBPS, CAL_D2H_GBPS, CAL_BANDWIDTH_GBPS, CAL_COMPUTE_GFLOPS,
    CAL_COMPUTE_KERNEL_INTENSITY, CAL_COMPUTE_SCALING, CAL_RIDGE,
)

#: The keys the roofline classifier reads; `calibrate` must write every one of them (tested).
ROOFLINE_KEYS = (CAL_LAUNCH_OVERHEAD_US, CAL_LAUNCH_ROUNDTRIP_US, CAL_BANDWIDTH_GBPS, CAL_COMPUTE_GFLOPS,
                 CAL_RIDGE)


#: Why scan could not analyse a file (or one function of it): the ``reason`` of a scan error.
SCAN_ERROR_REASONS = {
    "syntax-error": "not valid Python",
    "encoding": "its bytes are not text in the encoding it declares, or it declares a codec scan does not use",
    "not-regular": "a FIFO, device, socket or directory named *.py (or a link to one): skipped unread",
    "too-large": "larger than the file size limit: skipped unread",
    "unreadable": "the file or a directory could not be read (permissions, a broken link...)",
    "too-complex": "nested too deeply for Python's own parser or for the analysis (recursion limit)",
}


# ---------------------------------------------------------------------------------------------
# JSON Schemas (draft 2020-12 subset: type, properties, required, items, enum, additionalProperties)
# ---------------------------------------------------------------------------------------------

_NUM = {"type": "number"}
_INT = {"type": "integer"}
_STR = {"type": "string"}
_BOOL = {"type": "boolean"}
_NULLABLE_NUM = {"type": ["number", "null"]}
_NULLABLE_STR = {"type": ["string", "null"]}


def _obj(required: dict, optional: dict | None = None, extra: bool = False) -> dict:
    props = dict(required)
    props.update(optional or {})
    return {"type": "object", "properties": props, "required": sorted(required),
            "additionalProperties": extra}


def _arr(items: dict) -> dict:
    return {"type": "array", "items": items}


def _header(kind: str) -> dict:
    return {"schema": {"type": "string", "enum": [schema_id(kind)]},
            "version": {"type": "integer", "enum": [SCHEMA_VERSION]}}


DEVICE = _obj({"name": _STR, "kind": {"type": "string", "enum": ["metal", "cpu"]},
               "is_gpu": _BOOL, "note": _STR})

STATS = _obj({"n": _INT, "median_s": _NUM, "min_s": _NUM, "max_s": _NUM, "spread": _NUM, "mean_s": _NUM,
              "ci_low_s": _NULLABLE_NUM, "ci_high_s": _NULLABLE_NUM, "samples_s": _arr(_NUM)})

_LOCATED = _obj({"line": _INT, "rule": _STR, "message": _STR})

SCAN_CANDIDATE = _obj({
    "rank": _INT, "score": _INT,
    "score_parts": _obj({"parallelism": _INT, "work": _INT, "compatibility": _INT, "blockers": _INT}),
    "file": _STR, "line": _INT, "qualname": _STR,
    "decorator": _NULLABLE_STR,
    "tags": _arr({"type": "string", "enum": ["existing-kernel", "cuda-kernel", "array-loop",
                                             "elementwise-math", "nested-loops", "reduction", "stencil",
                                             "monte-carlo", "prange", "vectorize", "guvectorize"]}),
    "reasons": _arr(_STR),
    "blockers": _arr(_LOCATED),
    "changes": _arr(_LOCATED),
    "compile_check": _obj({
        "status": {"type": "string", "enum": ["compiles", "compiles-as-float32", "fails", "unable",
                                              "not-checked"]},
        "signature": _NULLABLE_STR,
        "as_device_function": _BOOL,
        "detail": _STR,
        "error": _NULLABLE_STR,
        "error_line": {"type": ["integer", "null"]},
    }),
})

SCAN = _obj({**_header("scan"),
             "root": _STR, "files_scanned": _INT, "functions_examined": _INT,
             "compile_check": _obj({"enabled": _BOOL, "method": _STR}),
             "candidates": _arr(SCAN_CANDIDATE),
             "errors": _arr(_obj({"file": _STR, "line": {"type": ["integer", "null"]},
                                  "reason": {"type": "string", "enum": list(SCAN_ERROR_REASONS)},
                                  "message": _STR})),
             "unknowns": _arr(_STR),
             "score_formula": _STR})

ROOFLINE = _obj({"regime": {"type": "string", "enum": ["launch-bound", "memory-bound", "compute-bound",
                                                       "unknown"]},
                 "reason": _STR,
                 "calibration_file": _NULLABLE_STR,
                 "keys_used": _arr(_STR),
                 "achieved_gbps": _NULLABLE_NUM, "achieved_gflops": _NULLABLE_NUM,
                 "intensity_flops_per_byte": _NULLABLE_NUM})

_SIDE_COLD = _obj({"cpu_s": _NUM, "metal_s": _NUM,
                   "compiles": _arr(_obj({"name": _STR, "stage": _STR, "ms": _NUM, "from_cache": _BOOL}))})

_SIDES = _obj({"cpu": STATS, "metal": STATS})
_PER_CALL = _obj({"launches": _INT, "compiles": _INT, "copies": _INT, "copy_bytes": _INT, "allocs": _INT,
                  "waits": _INT, "device_s": _NULLABLE_NUM})

COMPARE = _obj({**_header("compare"),
                "workload": _STR, "script": _STR, "device": DEVICE,
                "settings": _obj({"atol": _NUM, "rtol": _NUM, "warmup": _INT, "repeats": _INT,
                                  "steady_batches": _INT, "steady_calls": _INT, "cold_runs": _INT,
                                  "timeout_s": _NUM}),
                "correctness": _obj({"status": {"type": "string", "enum": ["pass", "fail"]},
                                     "compared": _arr(_obj({"name": _STR, "shape": _arr(_INT),
                                                            "cpu_dtype": _STR, "metal_dtype": _STR,
                                                            "mismatched": _INT, "total": _INT,
                                                            "max_abs_err": _NULLABLE_NUM,
                                                            "max_rel_err": _NULLABLE_NUM,
                                                            "ok": _BOOL, "note": _STR})),
                                     "message": _STR}),
                "cold": _arr(_SIDE_COLD),
                "cold_stats": {**_SIDES, "type": ["object", "null"]},
                "warm": {**_SIDES, "type": ["object", "null"]},
                "steady": {**_SIDES, "type": ["object", "null"]},
                "per_call": {**_PER_CALL, "type": ["object", "null"]},
                "compiles_after_warmup": _INT,
                "speedup": _NULLABLE_NUM,
                "speedup_interval": {"type": ["array", "null"], "items": _NULLABLE_NUM},
                "break_even_calls": {"type": ["integer", "null"]},
                "roofline": {**ROOFLINE, "type": ["object", "null"]},
                "recommendation": _obj({"verdict": {"type": "string", "enum": ["USE_METAL", "KEEP_CPU",
                                                                               "INCONCLUSIVE",
                                                                               "DO_NOT_USE_METAL"]},
                                        "rule": {"type": "string", "enum": ["results-differ", "faster-and-correct",
                                                                            "slower", "within-margin",
                                                                            "intervals-overlap"]},
                                        "why": _STR, "rounds_needed": {"type": ["integer", "null"]}}),
                "notes": _arr(_STR)})

_EVENT = _obj({"kind": {"type": "string", "enum": ["compile", "launch", "copy", "alloc", "wait"]},
               "start_ns": _INT, "end_ns": _INT},
              {"name": _STR, "stage": _STR, "from_cache": _BOOL, "direction": _STR, "nbytes": _INT,
               "what": _STR, "device_start_ns": {"type": ["integer", "null"]},
               "device_end_ns": {"type": ["integer", "null"]}, "grid": _arr(_INT), "block": _arr(_INT),
               "argtypes": _STR, "emulated_float64": _BOOL})

_RUN = _obj({"label": _STR, "role": {"type": "string", "enum": ["baseline", "metal"]},
             "command": _STR, "exit_code": _INT, "wall_ns": _INT, "interval_ms": _NUM,
             "frames": _arr(_STR),
             "samples": _arr(_obj({"stack": _arr(_INT), "count": _INT, "weight_ns": _INT})),
             "sample_times_ns": _arr(_INT),
             "sample_top": _arr(_INT),
             "sample_where": _arr({"type": "string", "enum": ["host", "numba-metal"]}),
             "events": _arr(_EVENT),
             "device_timestamps": _STR})

PROFILE = _obj({**_header("profile"),
                "target": _STR, "mode": {"type": "string", "enum": ["script", "workload", "pytest"]},
                "device": DEVICE, "runs": _arr(_RUN), "roofline": {"type": ["object", "null"]},
                "notes": _arr(_STR)})

CALIBRATION = _obj({**_header("calibration"),
                    "device": DEVICE, "created": _STR, "path": _NULLABLE_STR,
                    "values": _obj({k: _NUM for k in CALIBRATION_KEYS}),
                    "method": _obj({k: _STR for k in CALIBRATION_KEYS}),
                    "checks": _arr(_obj({"name": _STR, "ok": _BOOL, "detail": _STR}))})

SCHEMAS = {"scan": SCAN, "compare": COMPARE, "profile": PROFILE, "calibration": CALIBRATION}


def json_schema(kind: str) -> dict:
    """The JSON Schema document of ``kind``."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": schema_id(kind),
            "title": f"numba-metal advisor {kind} document", **SCHEMAS[kind]}


class SchemaError(ValueError):
    pass


_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _type_ok(value, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[name])


def validate(doc, schema: dict | None = None, path: str = "$") -> None:
    """Raise SchemaError if ``doc`` does not follow ``schema`` (by default its own kind's schema)."""
    if schema is None:
        kind = str(doc.get("schema", "")).rpartition("/")[2] if isinstance(doc, dict) else ""
        if kind not in SCHEMAS:
            raise SchemaError(f"{path}: not a numba-metal advisor document (schema field {doc.get('schema')!r})"
                              if isinstance(doc, dict) else f"{path}: not a JSON object")
        schema = SCHEMAS[kind]
    want = schema.get("type")
    if want is not None:
        names = want if isinstance(want, list) else [want]
        if not any(_type_ok(doc, n) for n in names):
            raise SchemaError(f"{path}: expected {' or '.join(names)}, got {type(doc).__name__}")
    if "enum" in schema and doc not in schema["enum"]:
        raise SchemaError(f"{path}: {doc!r} is not one of {schema['enum']}")
    if isinstance(doc, dict) and "properties" in schema:
        for key in schema.get("required", ()):
            if key not in doc:
                raise SchemaError(f"{path}: missing field {key!r}")
        for key, value in doc.items():
            sub = schema["properties"].get(key)
            if sub is None:
                if not schema.get("additionalProperties", True):
                    raise SchemaError(f"{path}: unexpected field {key!r}")
                continue
            validate(value, sub, f"{path}.{key}")
    if isinstance(doc, list) and "items" in schema:
        for i, item in enumerate(doc):
            validate(item, schema["items"], f"{path}[{i}]")
