"""The generator itself: it produces every construct the issue asks for, deterministically, and
only programs that CPython compiles. (Whether numba-metal runs them correctly is
test_differential.py's job.)"""

from __future__ import annotations

from collections import Counter

from . import gen as G
from .choosers import RandomChooser

#: Features that must appear in a sample of generated batches (names from Generator.feat).
REQUIRED = {
    # control flow
    "if": 50, "elif": 10, "else": 30, "for_range1": 10, "for_range2": 10, "for_range3": 10,
    "for_range_runtime_step": 5, "for_tuple": 5, "for_shape": 3, "for_range_int32": 2,
    "for_range_uint64": 2, "while_fuel": 10, "while_true": 10, "while_cond": 10, "loop_else": 10,
    "break_guarded": 20, "continue_guarded": 10, "break_bare": 3, "continue_bare": 3,
    "break_in_or": 20, "continue_in_or": 3, "break_in_and": 5, "return_guarded": 20,
    "return_in_loop": 5, "return_in_or": 5, "return_bare": 3, "cond_boolop": 50,
    "cond_truthiness": 10, "swap2": 5, "swap3": 2, "swap_fib": 5,
    # expressions
    "compare_chain": 5, "ternary": 10, "boolop_and": 10, "boolop_or": 10, "op_not": 10,
    "op_invert": 5, "float_to_int": 20, "round1": 3, "round2": 3, "shift_unmasked": 3,
    "pow_int_exp": 10, "pow_float": 3, "minmax_tuple": 3, "tuple_index": 3, "tuple_arg": 3,
    "neg_index": 10, "neg_index_literal": 10, "index_leaf": 20, "int_call": 3, "float_call": 3,
    "math_sqrt": 3, "math_exp": 3, "math_log": 3, "math_sin": 3, "math_atan2": 2, "math_pow": 2,
    "math_fmod": 2, "math_gamma": 2, "math_floor": 2, "math_isnan": 2, "math_hypot": 2,
    # data
    "read_in_float32": 10, "read_in_int64": 10, "read_in_uint64": 5, "read_in_float16": 5,
    "read_in_bool": 5, "read_in_int8": 5, "read_inout_float16": 2, "read_local_int32": 2,
    "local_array": 10, "local_write": 10, "write_W_f16": 3, "write_W_u8": 3, "augassign_array": 2,
    "pass_strided": 10, "pass_F": 5, "pass_numpy": 10,
    # functions
    "helper": 20, "helper_call": 20, "helper_calls_helper": 3, "helper_tuple_index": 2,
    "unpack_helper_tuple": 2, "unpack_tuple_arg": 3, "inline_case": 10,
    # kernel level
    "grid1d": 10, "grid2d": 5, "grid3d": 5, "block_nondivisible": 20, "cuda_style_index": 3,
    "kernel_return_or": 3, "shared_barrier": 10, "barrier_loop": 5, "shared_atomic": 5,
    "global_atomic_in_kernel": 3, "atomic_add": 3, "atomic_max": 2, "atomic_xor": 2,
    "atomic_u_inc": 1, "atomic_f_add": 1,
    # numba.cuda's integer intrinsics
    "bits_popc": 2, "bits_clz": 2, "bits_ffs": 2, "bits_brev": 1, "selp": 2, "libdevice_mulhi": 1,
    "libdevice_mul24": 1, "libdevice_popcll": 1, "libdevice_byte_perm": 1, "libdevice_umax": 1,
    "libdevice_llabs": 1, "libdevice_ullmax": 1, "libdevice_umul64hi": 1,
}


def _sample(n=160, cases=8):   # enough batches for the rarest required feature (swap3, ~1 in 100)
    feats = Counter()
    batches = []
    for seed in range(n):
        b = G.generate_batch(RandomChooser(10_000 + seed), cases)
        feats.update(b.features)
        batches.append(b)
    return feats, batches


def test_generator_covers_the_kernel_language():
    feats, _ = _sample()
    missing = {k: (feats.get(k, 0), v) for k, v in REQUIRED.items() if feats.get(k, 0) < v}
    assert not missing, f"features generated fewer times than required (got, want): {missing}"


def test_every_function_of_the_math_table_is_generated():
    """The math vocabulary is numba-metal's math table (a new row needs a guard in gen.MATH_GUARDS)."""
    from numba_metal.kernel_api.functions import MATH
    feats, _ = _sample()
    missing = [f.name for f in MATH if feats.get(f"math_{f.name}", 0) < 2]
    assert not missing, f"math functions the generator does not produce: {missing}"


def test_generator_is_deterministic_per_seed():
    a = G.generate_batch(RandomChooser(42), 8)
    b = G.generate_batch(RandomChooser(42), 8)
    assert a.source == b.source and a.griddim == b.griddim and a.data_seed == b.data_seed
    assert G.generate_batch(RandomChooser(43), 8).source != a.source


def test_generated_sources_compile_as_python_and_follow_the_batch_layout():
    _, batches = _sample(40)
    for b in batches:
        compile(b.source, "<generated>", "exec")
        assert "def kern(" in b.source
        assert b.threads >= 1 and all(g * t >= e for g, t, e in zip(b.griddim, b.blockdim, b.extent))
        for name, k in b.case_index.items():
            assert f"def {name}(tid, " in b.source and 1 <= k < b.ncases


def _thread_ids(b):
    """The thread id (``tid``) of every launched thread that passes the kernel's guard."""
    dims = next(int(f[4]) for f in b.features if f in ("grid1d", "grid2d", "grid3d"))
    nx, ny, nz = b.extent
    size = [g * t for g, t in zip(b.griddim, b.blockdim)]
    ids = []
    for gz in range(size[2]):
        for gy in range(size[1]):
            for gx in range(size[0]):
                if gx < nx and (dims < 2 or gy < ny) and (dims < 3 or gz < nz):
                    ids.append(gx if dims == 1 else gy * nx + gx if dims == 2 else (gz * ny + gy) * nx + gx)
    return ids


def test_no_two_threads_of_a_launch_share_a_thread_id():
    """Threads own the rows ``[case, tid]`` of the outputs: two threads with one id would race on them
    (the reference runs threadgroups one after another, the device in parallel), as spare threadgroups
    along the axes a 1-D kernel ignores once did (seed 1000001: W_i64[1, 0] ^= True run by four threads)."""
    for seed in [1_000_001, *range(20_000, 20_300)]:
        b = G.generate_batch(RandomChooser(seed), 8)
        ids = _thread_ids(b)
        assert len(ids) == len(set(ids)) == b.threads, (seed, b.griddim, b.blockdim, b.extent)
