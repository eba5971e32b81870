"""The C header's constants the binding uses (status codes, device kinds, math modes, kernel parameter
kinds, simulated-device actions), as Python integers, so that errors are raised and options passed
without cffi lookups."""

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

# How long one call of nm_queue_wait_bounded may block: the latency of a KeyboardInterrupt during a wait.
WAIT_SLICE_NS = 50_000_000

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

# Kinds of kernel parameters (nm_kernel_param.kind).
PARAM_BUFFER = 1
PARAM_ARGUMENT_BLOCK = 2
PARAM_THREADGROUP = 3
PARAM_BUILTIN = 4
