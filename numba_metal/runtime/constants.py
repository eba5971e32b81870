"""The C header's constants the binding uses (status codes, device kinds, math modes, kernel parameter
kinds, simulated-device actions), as Python integers, so that errors are raised and options passed
without cffi lookups.

The header (Sources/CPUEngine/include/numba_metal_runtime.h) owns every value: ``HEADER_NAMES`` maps each
constant here (a device kind by its name) to the ``#define`` it copies, and tests/test_architecture.py
checks that every one equals the header's."""

# Status codes (nm_status).
NM_OK = 0
NM_ERR_INVALID_ARGUMENT = 1
NM_ERR_UNAVAILABLE = 2
NM_ERR_OUT_OF_MEMORY = 3
NM_ERR_COMPILE = 4
NM_ERR_LIMIT = 5
NM_ERR_EXECUTION = 6
NM_ERR_INTERNAL = 7
NM_ERR_FORKED = 8
NM_ERR_DEVICE_LOST = 9

# Device kinds (nm_device_info.kind) by their names in numba-metal (NUMBA_METAL_DEVICE).
DEVICE_KINDS = {1: "metal", 2: "cpu", 3: "metal-sim"}

# Math modes (nm_compile_options.fast_math). True means MATH_RELAXED: what @jit(fastmath=True) asks for.
MATH_SAFE = 0       # safe math, precise functions: IEEE-like
MATH_RELAXED = 1    # fast-math optimisations that keep Inf and NaN
MATH_FAST = 2       # also assumes no Inf or NaN

# Actions of the simulated Metal device (nm_sim_control).
SIM_FAIL_NEXT_COMMAND_BUFFER = 1
SIM_WATCHDOG_NEXT_COMMAND_BUFFER = 2
SIM_HOLD_GPU = 3
SIM_STRICT_NO_COPY = 4
SIM_PENALTY_BOX_AFTER = 5
SIM_INTERACTIVITY_NEXT_COMMAND_BUFFER = 6
SIM_UNTRACKED_NEXT_BUFFER = 7
SIM_FAIL_NEXT_ALLOCATION = 8
SIM_OUT_OF_BOUNDS_READS_RETURN_ZERO = 9
SIM_FAIL_AT_DISPATCH_OF_NEXT_COMMAND_BUFFER = 10
SIM_SHARED_COMPLETION_THREAD = 11

# Kinds of kernel parameters (nm_kernel_param.kind).
PARAM_BUFFER = 1
PARAM_ARGUMENT_BLOCK = 2
PARAM_THREADGROUP = 3
PARAM_BUILTIN = 4

#: Each constant above (a device kind by its name) -> the header's ``#define`` that owns its value.
HEADER_NAMES: dict[str, str] = {
    **{name: name for name in ("NM_OK", "NM_ERR_INVALID_ARGUMENT", "NM_ERR_UNAVAILABLE", "NM_ERR_OUT_OF_MEMORY",
                               "NM_ERR_COMPILE", "NM_ERR_LIMIT", "NM_ERR_EXECUTION", "NM_ERR_INTERNAL",
                               "NM_ERR_FORKED", "NM_ERR_DEVICE_LOST")},
    **{name: "NM_" + name for name in ("MATH_SAFE", "MATH_RELAXED", "MATH_FAST", "SIM_FAIL_NEXT_COMMAND_BUFFER",
                                       "SIM_WATCHDOG_NEXT_COMMAND_BUFFER", "SIM_HOLD_GPU", "SIM_STRICT_NO_COPY",
                                       "SIM_PENALTY_BOX_AFTER", "SIM_INTERACTIVITY_NEXT_COMMAND_BUFFER",
                                       "SIM_UNTRACKED_NEXT_BUFFER", "SIM_FAIL_NEXT_ALLOCATION",
                                       "SIM_OUT_OF_BOUNDS_READS_RETURN_ZERO", "SIM_FAIL_AT_DISPATCH_OF_NEXT_COMMAND_BUFFER",
                                       "SIM_SHARED_COMPLETION_THREAD",
                                       "PARAM_BUFFER",
                                       "PARAM_ARGUMENT_BLOCK", "PARAM_THREADGROUP", "PARAM_BUILTIN")},
    "metal": "NM_DEVICE_METAL", "cpu": "NM_DEVICE_CPU", "metal-sim": "NM_DEVICE_METAL_SIM",
}

# numba-metal's own, not the header's: how long one call of nm_queue_wait_bounded may block (the latency of a
# KeyboardInterrupt during a wait).
WAIT_SLICE_NS = 50_000_000
