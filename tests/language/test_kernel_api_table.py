"""docs/supported-features.md's numba.cuda kernel-API table agrees with the kernel API's index
(numba_metal/kernel_api/__init__.py) and with numba.cuda's documented kernel API: every name numba.cuda
documents for kernels has a row; a row says supported (or supported with a difference) exactly when
`metal.<name>` exists; every name of the index is numba.cuda's (a row) or one of numba-metal's own Metal
spellings; every proving test exists."""

import os
import re

import pytest

from numba_metal import kernel_api, metal
from numba_metal import random as metal_random
from numba_metal.kernel_api.libdevice_signatures import SIGNATURES as LIBDEVICE_SIGNATURES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "supported-features.md")

#: numba.cuda's kernel-side names (numba-cuda 0.30: its stubs, intrinsics, cudadecl, fp16, vector types,
#: random), as `cuda.<name>`; vector types are added below.
NUMBA_CUDA_KERNEL_API = """
threadIdx blockIdx blockDim gridDim grid gridsize warpsize laneid shared.array local.array const.array_like
syncthreads syncthreads_count syncthreads_and syncthreads_or syncwarp threadfence threadfence_block
threadfence_system nanosleep cg.this_grid cg.GridGroup.sync activemask lanemask_lt all_sync any_sync eq_sync
ballot_sync shfl_sync shfl_up_sync shfl_down_sync shfl_xor_sync match_any_sync match_all_sync popc brev clz
ffs selp fma cbrt atomic.add atomic.sub atomic.and_ atomic.or_ atomic.xor atomic.inc atomic.dec atomic.exch
atomic.max atomic.min atomic.nanmax atomic.nanmin atomic.compare_and_swap atomic.cas ldca ldcg ldcs ldlu ldcv
stcg stcs stwb stwt literal_unroll print raise assert
fp16.habs fp16.hadd fp16.hsub fp16.hmul fp16.hdiv fp16.hfma fp16.hneg fp16.hmax fp16.hmin fp16.heq fp16.hne
fp16.hge fp16.hgt fp16.hle fp16.hlt fp16.hceil fp16.hfloor fp16.htrunc fp16.hrint fp16.hsqrt fp16.hrsqrt
fp16.hrcp fp16.hexp fp16.hexp2 fp16.hexp10 fp16.hlog fp16.hlog2 fp16.hlog10 fp16.hsin fp16.hcos fp16.htanh
fp16.htanh_approx
random.create_xoroshiro128p_states random.init_xoroshiro128p_states random.xoroshiro128p_uniform_float32
random.xoroshiro128p_uniform_float64 random.xoroshiro128p_normal_float32 random.xoroshiro128p_normal_float64
random.xoroshiro128p_next random.xoroshiro128p_jump random.xoroshiro128p_dtype
int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64 complex64 complex128 boolean void
intp uintp
""".split()
_VECTOR_ELEMENTS = {"int8": "char", "int16": "short", "int32": "int", "int64": "long", "uint8": "uchar",
                    "uint16": "ushort", "uint32": "uint", "uint64": "ulong", "float32": "float", "float64": "double"}
NUMBA_CUDA_KERNEL_API += [f"{e}x{n}" for e in _VECTOR_ELEMENTS for n in range(1, 5)]
NUMBA_CUDA_KERNEL_API += [f"{a}{n}" for a in (*_VECTOR_ELEMENTS.values(), "longlong", "ulonglong") for n in range(1, 5)]

#: numba.cuda's cuda.libdevice functions (the checked-in list, equal to numba.cuda's own table:
#: language/test_libdevice_float.py::test_the_checked_in_list_is_numba_cudas).
NUMBA_CUDA_KERNEL_API += ["libdevice." + name for name, _, _ in LIBDEVICE_SIGNATURES]
#: The CUDA-C spellings numba.cuda's cuda.fp16 exports (numba-cuda's fp16.py, bound to cuda_fp16.h).
NUMBA_CUDA_KERNEL_API += ["fp16." + n for n in """
__double2half __float2half __float2half_rd __float2half_rn __float2half_ru __float2half_rz __int2half_rd
__int2half_rn __int2half_ru __int2half_rz __ll2half_rd __ll2half_rn __ll2half_ru __ll2half_rz __short2half_rd
__short2half_rn __short2half_ru __short2half_rz __uint2half_rd __uint2half_rn __uint2half_ru __uint2half_rz
__ull2half_rd __ull2half_rn __ull2half_ru __ull2half_rz __ushort2half_rd __ushort2half_rn __ushort2half_ru
__ushort2half_rz __half2char_rz __half2float __half2int_rd __half2int_rn __half2int_ru __half2int_rz __half2ll_rd
__half2ll_rn __half2ll_ru __half2ll_rz __half2short_rd __half2short_rn __half2short_ru __half2short_rz
__half2uchar_rz __half2uint_rd __half2uint_rn __half2uint_ru __half2uint_rz __half2ull_rd __half2ull_rn
__half2ull_ru __half2ull_rz __half2ushort_rd __half2ushort_rn __half2ushort_ru __half2ushort_rz __short_as_half
__ushort_as_half __half_as_short __half_as_ushort __habs __hadd __hadd_rn __hadd_sat __hdiv __heq __hequ __hfma
__hfma_relu __hfma_sat __hge __hgeu __hgt __hgtu __hisinf __hisnan __hle __hleu __hlt __hltu __hmax __hmax_nan
__hmin __hmin_nan __hmul __hmul_rn __hmul_sat __hne __hneg __hneu __hsub __hsub_rn __hsub_sat atomicAdd
""".split()]

#: Names that are Python syntax or Python/Numba functions, not `metal.<name>`.
PYTHON_LEVEL = {"print", "raise", "assert", "literal_unroll", "abs"}

#: numba-metal's own (Metal-flavoured or earlier numba-metal) spellings in the index, which numba.cuda lacks.
METAL_SPELLINGS = {
    "simd_sum", "simd_product", "simd_max", "simd_min", "simd_prefix_exclusive_sum", "simd_prefix_inclusive_sum",
    "simd_shuffle", "simd_shuffle_up", "simd_shuffle_down", "simd_shuffle_xor", "simd_broadcast", "simd_all",
    "simd_any", "simd_ballot", "simd_lane_id", "simd_group_id", "barrier", "simdgroup_barrier",
    "threadgroup_position", "thread_in_threadgroup", "threads_per_threadgroup", "threadgroups_per_grid",
    "atomic_add", "atomic_sub", "atomic_max", "atomic_min", "atomic_exchange", "atomic_compare_exchange",
    "shared_array", "local_array",
    "simdgroup",   # SIMD-group matrices (kernel_api/simdgroup.py): beyond numba.cuda
}

_IDENT = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*$")


def _rows():
    text = open(DOC, encoding="utf-8").read()
    start = text.index("### numba.cuda's kernel API, name by name")
    section = text[start:text.index("\n### ", start + 1)]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("numba.cuda", "---"):
            continue
        names = [n for n in re.findall(r"`([^`]+)`", cells[0]) if _IDENT.match(n)]
        rows.append((names, cells[1], cells[3]))
    assert rows, "the numba.cuda kernel-API table is missing from docs/supported-features.md"
    return rows


ROWS = _rows()
STATUSES = ("supported", "difference", "impossible", "not yet")


def _resolve(name):
    if name.startswith("random."):
        return getattr(metal_random, name.split(".", 1)[1], None)
    obj = metal
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def test_every_status_is_one_of_the_four():
    assert {status for _, status, _ in ROWS} <= set(STATUSES)


def test_every_documented_numba_cuda_kernel_name_has_a_row():
    listed = {n for names, _, _ in ROWS for n in names}
    missing = [n for n in NUMBA_CUDA_KERNEL_API if n not in listed and n not in ("print", "raise", "assert",
                                                                                 "literal_unroll")]
    assert not missing, f"numba.cuda kernel names without a row: {missing}"


@pytest.mark.parametrize("names,status,proof", [r for r in ROWS if r[1] in ("supported", "difference")],
                         ids=lambda v: v[0] if isinstance(v, list) and v else None)
def test_a_supported_name_exists_in_metal(names, status, proof):
    missing = [n for n in names if n not in PYTHON_LEVEL and _resolve(n) is None]
    assert not missing, f"rows say {status} but these do not exist: {missing}"


def test_a_name_not_yet_supported_is_not_in_the_metal_namespace():
    stale = [n for names, status, _ in ROWS if status == "not yet" for n in names
             if not n.startswith("random.") and _resolve(n) is not None]
    assert not stale, f"rows say 'not yet' but these exist (update the table): {stale}"


def test_every_name_of_the_index_is_numba_cudas_or_a_metal_spelling():
    in_table = {n.split(".")[0] for names, status, _ in ROWS if status != "not yet" for n in names}
    unexplained = sorted(set(kernel_api.index()) - in_table - METAL_SPELLINGS)
    assert not unexplained, f"kernel-API names in neither the numba.cuda table nor METAL_SPELLINGS: {unexplained}"
    assert not METAL_SPELLINGS & set(NUMBA_CUDA_KERNEL_API)


def _tests_named(proof):
    """(file, test name or None) for each test a proof cell names (`::name` continues the previous file)."""
    found, current = [], None
    for ref in re.findall(r"`([^`]+)`", proof):
        path, _, name = ref.partition("::")
        current = path or current
        found.append((current, name or None))
    return found


@pytest.mark.parametrize("names,status,proof", [r for r in ROWS if r[1] != "not yet" or r[2]],
                         ids=lambda v: v[0] if isinstance(v, list) and v else None)
def test_every_proving_test_exists(names, status, proof):
    refs = _tests_named(proof)
    assert refs, f"the row for {names} names no test"
    for path, name in refs:
        full = os.path.join(ROOT, "tests", path)
        assert os.path.exists(full), f"{path} does not exist"
        if name:
            assert re.search(rf"^def {re.escape(name)}\(", open(full, encoding="utf-8").read(), re.M), \
                f"{path} has no test {name}"
