"""The kernel ABI: how a numba-metal kernel receives its arguments. This module is its one owner.

It decides the layout (:func:`layout`): each array argument is a ``device`` buffer at the next
``[[buffer(i)]]`` slot; its shape, strides (in elements) and, for layout 'A', an origin (the element
offset of ``a[0, ..., 0]`` from the bound byte offset) go into one packed argument struct with the
scalar arguments (tuples flattened, complex numbers as their two parts) and, when the kernel uses
dynamic threadgroup memory, its length; the struct is bound with ``setBytes`` at the slot after the
arrays; a ``debug=True`` kernel gets an error-record buffer after it, and a kernel that prints a print
buffer after that (both formats: :mod:`.kernel_io`); dynamic threadgroup memory is
``[[threadgroup(0)]]``; then the built-in inputs. The struct's members are the arrays' (all 8 bytes, in argument order) and then the others by
decreasing size, so it has no padding inside; its size is rounded up to its alignment. Metal's limits on
these are checked at compile time: 31 buffers and 4 KB of arguments here, 32 KB of threadgroup memory
and numba-metal's 8 KB of local arrays per thread (this module's limits) by the code generator as
shared and local arrays are declared.

A :class:`KernelABI` is data: its parameter list, which the runtime receives with every compile
(:attr:`KernelABI.params`, the C ABI's ``nm_kernel_abi``), its arrays and struct members with where each
value comes from, and the form the disk cache stores (:meth:`KernelABI.to_json`,
:meth:`KernelABI.from_json`). Its users write the rest from it where they live: the MSL kernel signature
and argument struct where MSL is written (:mod:`.interface`), the argument encoder in the host layer
(:mod:`numba_metal.host.encoder`). What a launch needs of this module loads fast and imports neither Numba
nor the MSL spelling module (imported where names and types are spelt, at compile time): a process whose
kernels come from the disk cache launches them without either.
"""

# No ``from __future__ import annotations`` here: the NamedTuples' annotations stay types, not strings each
# compiled into a ForwardRef when the class is made, which was a quarter of this module's import on the
# warm-cache path.

import struct
from typing import NamedTuple

from numba_metal.errors import UnsupportedFeatureError
from numba_metal.runtime import (PARAM_ARGUMENT_BLOCK, PARAM_BUFFER, PARAM_BUILTIN, PARAM_THREADGROUP,
                                 KernelParam)
from numba_metal.runtime.digests import sha1

from .kernel_io import RaiseSite

#: Metal's limits (Apple4 and later): buffer-table entries, bytes of setBytes, threadgroup memory.
MAX_BUFFER_SLOTS = 31
MAX_ARGUMENT_BYTES = 4096
MAX_THREADGROUP_MEMORY = 32 * 1024
#: numba-metal's limit on the local arrays of one thread (a kernel and its device functions together).
#: Apple documents none; WebGPU, whose conformance tests showed larger function-scope arrays failing
#: on Metal on Apple silicon, settled on 8 KB for the same memory (gpuweb/gpuweb#4545, #4578), so
#: kernels within it run on every Apple GPU.
MAX_LOCAL_MEMORY = 8 * 1024

#: Byte size and struct-module code of each MSL scalar type in the argument struct.
SCALAR_LAYOUT = {
    "bool": (1, "?"), "char": (1, "b"), "short": (2, "h"), "int": (4, "i"), "long": (8, "q"),
    "uchar": (1, "B"), "ushort": (2, "H"), "uint": (4, "I"), "ulong": (8, "Q"), "half": (2, "e"),
    "float": (4, "f"), "nm_f64": (8, "d"),
}

#: The built-in inputs every kernel declares, as (kernel-environment member, MSL type, attribute).
BUILTINS = (
    ("gid", "uint3", "thread_position_in_grid"),
    ("gsize", "uint3", "threads_per_grid"),
    ("tgid", "uint3", "threadgroup_position_in_grid"),
    ("ngroups", "uint3", "threadgroups_per_grid"),
    ("tid", "uint3", "thread_position_in_threadgroup"),
    ("tsize", "uint3", "threads_per_threadgroup"),
    ("lane", "uint", "thread_index_in_simdgroup"),
    ("sgid", "uint", "simdgroup_index_in_threadgroup"),
)

#: Names of the kernel's parameters and of the argument struct's members.
ARGS_PARAM = "nm_args"
ERROR_RECORD_PARAM = "nm_err"
PRINT_BUFFER_PARAM = "nm_out"
DYNAMIC_MEMORY_PARAM = "nm_dynshared"
DYNAMIC_MEMORY_FIELD = "nm_dynshared_bytes"


def struct_name(entry_name: str) -> str:
    """The name of a kernel's argument struct."""
    return "nm_args_" + entry_name


def array_param(arg: int) -> str:
    """The parameter of array argument ``arg`` (its data pointer)."""
    from . import msl
    return msl.numbered("nm_p", arg)


def builtin_param(member: str) -> str:
    return "nm_b_" + member


def shape_field(arg: int, axis: int) -> str:
    from . import msl
    return msl.join_names(msl.numbered("a", arg), msl.numbered("shape", axis))


def stride_field(arg: int, axis: int) -> str:
    from . import msl
    return msl.join_names(msl.numbered("a", arg), msl.numbered("stride", axis))


def origin_field(arg: int) -> str:
    from . import msl
    return msl.join_names(msl.numbered("a", arg), "origin")


#: A complex scalar argument travels as two fields, its parts, which the host reads as these attributes.
COMPLEX_PARTS = ("real", "imag")


def scalar_field(arg: int, path: tuple) -> str:
    """The member holding scalar argument ``arg`` (``path``: the indices of a (nested) tuple item, and a
    part of COMPLEX_PARTS for a complex number)."""
    from . import msl
    return msl.join_names(msl.numbered("s", arg), *path)


class RecordField(NamedTuple):
    """A field of a record: its byte offset, MSL element type and (nested array) shape; ``packed``: its
    offset or the record's size is not a multiple of the element's size, so it is read and written a
    byte at a time (Metal requires aligned loads)."""

    offset: int
    element: str
    size: int
    shape: tuple
    packed: bool


class RecordLayout(NamedTuple):
    """A NumPy structured dtype in MSL: a struct of exactly ``size`` bytes (so that arrays of it have
    NumPy's stride) whose fields are read at their NumPy byte offsets, aligned dtypes (``align=True``)
    and packed ones alike."""

    struct: str
    size: int
    fields: dict      # name -> RecordField


def record_layout(size: int, fields) -> RecordLayout:
    """The layout of a record of ``size`` bytes with ``fields``: (name, offset, MSL element type,
    element size, shape) each, as NumPy places them."""
    laid = {name: RecordField(offset, element, esize, tuple(shape), offset % esize != 0 or size % esize != 0)
            for name, offset, element, esize, shape in fields}
    digest = sha1(repr((size, sorted(laid.items()))).encode()).hexdigest()[:10]
    return RecordLayout("nm_rec_" + digest, size, laid)


class ArrayArgument(NamedTuple):
    """An array argument, bound to a ``[[buffer(slot)]]``. A record argument is an array argument of
    no dimensions (numba.cuda passes records by reference: the kernel's writes reach the host)."""

    arg: int          # the Python argument's index
    slot: int
    name: str         # the Python parameter's name (debug reports)
    element: str      # MSL element type
    ndim: int
    layout: str       # 'C', 'F' or 'A' (which carries an origin)
    coherent: bool    # declared coherent(device): the kernel fences device memory across threadgroups
    written_at: str   # "file:line" of a statement that may write it ("" if the kernel only reads it)
    read_only: bool = False   # declared ``device const T*``: the kernel only reads it (a hint Metal may use)


class ScalarArgument(NamedTuple):
    """A scalar argument (or one item of a tuple argument): what :func:`layout` needs of it.
    ``attribute``: the host passes this attribute of the value (``"value"`` of an ``Enum`` member)."""

    arg: int
    path: tuple
    msl_type: str
    attribute: str = ""


#: Attributes of an argument the host may pass instead of the argument (``ScalarArgument.attribute``: an
#: Enum member's value) or in its place (a complex number's parts).
SCALAR_ATTRIBUTES = ("value",) + COMPLEX_PARTS


class Field(NamedTuple):
    """One member of the argument struct and where the host takes its value: ``("array", arg)`` (one of
    an array's shape, strides and origin), ``("scalar", arg, *path)`` or ``("sharedmem",)``."""

    name: str
    msl_type: str
    source: tuple

    @property
    def size(self) -> int:
        return SCALAR_LAYOUT[self.msl_type][0]


class KernelABI(NamedTuple):
    """How one kernel receives its arguments (see the module docstring)."""

    entry_name: str
    params: tuple            # KernelParam, in declaration order: what the runtime receives
    arrays: tuple            # ArrayArgument, in argument order
    fields: tuple            # Field, in struct order
    arg_size: int            # the bytes the host packs: the struct's size
    error_slot: int | None   # debug=True: the error record's [[buffer(i)]]
    dynamic_threadgroup_memory: bool
    static_threadgroup_memory: int   # bytes of threadgroup memory the kernel declares
    array_names: tuple = ()  # debug reports: array id -> the array's name
    language_version: int = 0        # the MSL version (x 100) its code needs; 0: MSL 3.0 suffices
    print_slot: int | None = None    # the kernel prints: the print buffer's [[buffer(i)]]
    print_formats: tuple = ()        # the descriptions of its print() calls (kernel_io.describe)
    raise_sites: tuple = ()          # debug=True: kernel_io.RaiseSite per raise/assert, by index
    sanitizer_sites: tuple = ()      # sanitizing: sanitize.Site per instrumented access, by id

    @property
    def arg_slot(self) -> int | None:
        """The argument struct's [[buffer(i)]], None without fields."""
        return len(self.arrays) if self.fields else None


    @property
    def arg_format(self) -> str:
        """The struct-module format of the argument struct (little-endian, no padding inside)."""
        return "<" + "".join(SCALAR_LAYOUT[f.msl_type][1] for f in self.fields)

    # -- the disk cache's form ------------------------------------------------------------------

    def to_json(self) -> dict:
        data = self._json()
        if self.sanitizer_sites:
            data["sanitizer_sites"] = [list(s) for s in self.sanitizer_sites]
        return data

    def _json(self) -> dict:
        return {"entry_name": self.entry_name, "params": [list(p) for p in self.params],
                "arrays": [list(a) for a in self.arrays], "fields": [[f.name, f.msl_type, list(f.source)]
                                                                  for f in self.fields],
                "arg_size": self.arg_size, "error_slot": self.error_slot,
                "dynamic_threadgroup_memory": self.dynamic_threadgroup_memory,
                "static_threadgroup_memory": self.static_threadgroup_memory,
                "array_names": list(self.array_names), "language_version": self.language_version,
                "print_slot": self.print_slot, "print_formats": list(self.print_formats),
                "raise_sites": [list(r[:2]) + [list(r.args)] + list(r[3:]) for r in self.raise_sites]}

    @classmethod
    def from_json(cls, data: dict) -> "KernelABI":
        """The ABI stored by :meth:`to_json` (raises ValueError, KeyError or TypeError for anything else)."""
        params = tuple(KernelParam(int(kind), int(index), int(size), str(type_), str(name),
                                   None if builtin is None else str(builtin))
                       for kind, index, size, type_, name, builtin in data["params"])
        arrays = tuple(ArrayArgument(int(arg), int(slot), str(name), str(element), int(ndim), str(layout),
                                     bool(coherent), str(written_at), bool(read_only[0]) if read_only else False)
                       for arg, slot, name, element, ndim, layout, coherent, written_at, *read_only
                       in data["arrays"])
        fields = tuple(Field(str(name), str(msl_type), tuple(source)) for name, msl_type, source in data["fields"])
        for f in fields:
            if f.msl_type not in SCALAR_LAYOUT or not f.source or f.source[0] not in ("array", "scalar", "sharedmem"):
                raise ValueError(f"not an argument-struct field: {f}")
            if f.source[0] == "scalar" and not all(type(i) is int or i in SCALAR_ATTRIBUTES for i in f.source[1:]):
                raise ValueError(f"not a scalar argument's source: {f}")
        if any(p.kind not in (PARAM_BUFFER, PARAM_ARGUMENT_BLOCK, PARAM_THREADGROUP, PARAM_BUILTIN) for p in params):
            raise ValueError("not a kernel parameter kind")
        sites = tuple(RaiseSite(str(m), str(q), tuple(args), str(f), int(line), str(fn))
                      for m, q, args, f, line, fn in data["raise_sites"])
        print_slot = data["print_slot"]
        abi = cls(str(data["entry_name"]), params, arrays, fields, int(data["arg_size"]), data["error_slot"],
                  bool(data["dynamic_threadgroup_memory"]), int(data["static_threadgroup_memory"]),
                  tuple(str(n) for n in data["array_names"]), int(data["language_version"]),
                  None if print_slot is None else int(print_slot), tuple(str(d) for d in data["print_formats"]),
                  sites, _sanitizer_sites(data.get("sanitizer_sites", ())))
        if abi.arg_size != struct_size(fields) or abi.arg_size > MAX_ARGUMENT_BYTES:
            raise ValueError(f"an argument struct of {abi.arg_size} bytes is not the one its fields make")
        slots = [p.index for p in params if p.kind in (PARAM_BUFFER, PARAM_ARGUMENT_BLOCK)]
        if (not 0 <= abi.static_threadgroup_memory <= MAX_THREADGROUP_MEMORY or len(set(slots)) != len(slots)
                or any(not 0 <= i < MAX_BUFFER_SLOTS for i in slots)):
            raise ValueError("the ABI is outside Metal's limits")
        if struct.calcsize(abi.arg_format) > abi.arg_size:
            raise ValueError("the argument struct is larger than its size")
        return abi


def struct_size(fields) -> int:
    """The bytes of an argument struct of these members (no padding between them: ``layout`` orders them by
    decreasing size), rounded up to its alignment as MSL's ``sizeof`` is."""
    size = sum(f.size for f in fields)
    if fields:
        alignment = max(f.size for f in fields)
        size = (size + alignment - 1) // alignment * alignment
    return size


def layout(entry_name: str, kernel_name: str, arguments, *, debug: bool, dynamic_threadgroup_memory: bool,
           static_threadgroup_memory: int, array_names=(), language_version: int = 0, print_formats=(),
           raise_sites=(), where=None, sanitizer_sites=()) -> KernelABI:
    """The ABI of kernel ``kernel_name`` (MSL name ``entry_name``) whose arguments are ``arguments``, in
    argument order: an ArrayArgument (its ``slot`` is assigned here) or a ScalarArgument per scalar and
    tuple item. ``print_formats``: the kernel prints (it gets a print buffer); ``raise_sites``: its
    raise statements. ``where`` is the kernel's (file, line), for errors."""
    from . import msl
    arrays, array_fields, scalar_fields = [], [], []
    for a in arguments:
        if isinstance(a, ScalarArgument):
            source = ("scalar", a.arg) + tuple(a.path) + ((a.attribute,) if a.attribute else ())
            scalar_fields.append(Field(scalar_field(a.arg, a.path), a.msl_type, source))
            continue
        arrays.append(a._replace(slot=len(arrays)))
        array_fields += [Field(shape_field(a.arg, k), "long", ("array", a.arg)) for k in range(a.ndim)]
        array_fields += [Field(stride_field(a.arg, k), "long", ("array", a.arg)) for k in range(a.ndim)]
        if a.layout == "A":
            array_fields.append(Field(origin_field(a.arg), "long", ("array", a.arg)))
    if dynamic_threadgroup_memory:
        scalar_fields.append(Field(DYNAMIC_MEMORY_FIELD, "uint", ("sharedmem",)))
    # Decreasing sizes (stable): no padding between members, so the host packs them back to back.
    fields = tuple(array_fields + sorted(scalar_fields, key=lambda f: -f.size))
    params = [KernelParam(PARAM_BUFFER, a.slot, 0, msl.pointer("device", a.element, a.coherent, a.read_only),
                          array_param(a.arg))
              for a in arrays]
    size = struct_size(fields)
    if fields:
        params.append(KernelParam(PARAM_ARGUMENT_BLOCK, len(params), size,
                                  msl.reference("constant", struct_name(entry_name)), ARGS_PARAM))
    error_slot = None
    if debug:
        error_slot = len(params)
        # coherent(device) like the arrays of a kernel that fences device memory (its records are written
        # under atomics by every threadgroup)
        params.append(KernelParam(PARAM_BUFFER, error_slot, 0,
                                  msl.pointer("device", "uint", any(a.coherent for a in arrays)), ERROR_RECORD_PARAM))
    print_slot = None
    if print_formats:
        print_slot = len(params)
        params.append(KernelParam(PARAM_BUFFER, print_slot, 0, msl.pointer("device", "uint"), PRINT_BUFFER_PARAM))
    if len(params) > MAX_BUFFER_SLOTS:
        raise UnsupportedFeatureError(
            f"kernel {kernel_name}() needs {len(arrays)} array buffers plus its argument block, more than Metal's "
            f"{MAX_BUFFER_SLOTS} buffer slots; pass fewer arrays (e.g. stack them into one 2-D array)", where)
    if size > MAX_ARGUMENT_BYTES:
        raise UnsupportedFeatureError(
            f"kernel {kernel_name}() has {size} bytes of scalar arguments, shapes and strides, more than the "
            f"{MAX_ARGUMENT_BYTES} Metal passes with a kernel; pass the scalars in an array", where)
    if dynamic_threadgroup_memory:
        params.append(KernelParam(PARAM_THREADGROUP, 0, 0, msl.pointer("threadgroup", "uchar"), DYNAMIC_MEMORY_PARAM))
    params += [KernelParam(PARAM_BUILTIN, 0, 0, msl_type, builtin_param(member), attribute)
               for member, msl_type, attribute in BUILTINS]
    return KernelABI(entry_name, tuple(params), tuple(arrays), fields, size, error_slot, dynamic_threadgroup_memory,
                     static_threadgroup_memory, tuple(array_names), language_version, print_slot,
                     tuple(print_formats), tuple(raise_sites) if debug else (), tuple(sanitizer_sites))


def _sanitizer_sites(items) -> tuple:
    if not items:
        return ()   # a plain kernel's: loading it from the disk cache imports nothing of the sanitizer (nor msl)
    from .sanitize import Site
    return tuple(Site(int(kind), str(array), str(filename), int(line), str(space))
                 for kind, array, filename, line, space in items)


class CompiledKernel(NamedTuple):
    """What the compiler makes of a kernel for one tuple of argument types: the MSL, its ABI, the
    typed IR it was lowered from (None when its owner rebuilt it without typing, e.g. from a disk
    cache entry), and the hand-written MSL files the MSL holds: (path, digest of the contents read),
    see linking.py."""

    source: str
    abi: KernelABI
    typed: object = None
    linked: tuple = ()
