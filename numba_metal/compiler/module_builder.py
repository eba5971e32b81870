"""One MSL translation unit and the spelling of Numba types in it.

``ModuleBuilder`` collects what a kernel's MSL needs (prelude and library sections, type definitions,
program-scope constants, linked files, device functions, the kernel) and renders it in dependency
order; it spells every Numba type as an MSL type (defining structs for tuples, vectors and records once)
and keeps the module-wide budgets (threadgroup and local memory) and facts (the MSL version, fences,
print formats, raise sites) that the kernel's ABI records. :mod:`.codegen` lowers functions into it.
"""

from __future__ import annotations

import hashlib

from numba.core import types

from numba_metal.errors import UnsupportedFeatureError

from . import abi, iterators, msl, mslib, records, slicing
from .arraytypes import plain_record
from .frontend import TypedFunction
from .matrixtypes import SimdgroupMatrix
from .vectortypes import VectorType

#: Numba types that never exist at run time: modules, functions, classes, strings used as keywords.
_COMPILE_TIME_ONLY = (types.Module, types.Function, types.NumberClass, types.Dispatcher,
                      types.BoundFunction, types.DType, types.StringLiteral, types.UnicodeType,
                      types.Omitted, types.Dummy, types.NoneType, types.TypeRef,
                      types.Opaque, types.EnumClass, types.Callable, types.ExceptionClass,
                      types.ExceptionInstance)

#: Threadgroup memory is allocated in multiples of 16 bytes (Metal's rule for its lengths).
_THREADGROUP_ALIGNMENT = 16


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


class ModuleBuilder:
    """Collects everything one MSL translation unit needs, then renders it in dependency order.

    ``coherent``: device memory is declared ``coherent(device)`` (a function of the module fences
    device memory across threadgroups; see ``lower_kernel``). ``exact_float64``: float64 values are
    IEEE binary64 computed by the emulated library (the kernel holds float64 data, or asked for it);
    otherwise they are float32 (see ``precision.py``).
    """

    def __init__(self, kernel_name: str, *, debug: bool = False, coherent: bool = False,
                 exact_float64: bool = False, sanitize: frozenset = frozenset()):
        self.kernel_name = kernel_name
        self.debug = debug
        self.sanitize = sanitize             # the sanitizer's checks (sanitize.py), CPU device only
        self.sanitizer_sites: list = []      # sanitize.Site of each instrumented access
        self._sanitizer_hooks = False
        self.coherent = coherent
        self.exact_float64 = exact_float64
        self.fences_device_memory = False
        self.language_version = msl.ANY_VERSION   # the newest MSL version its code needs
        self.sections: set[str] = {mslib.section_of("nm_env")}   # of the MSL library (compiler/mslib/)
        self._type_names: dict = {}
        self._spelt: dict = {}   # id(type) -> (type, type_name(type))
        self._definitions: list[str] = []   # structs and program-scope constants, in order
        self._constants: dict = {}
        self._functions: list[str] = []
        self._device_functions: dict = {}
        self.linked: list[tuple[str, str]] = []   # (path, digest) of each linked MSL file, in order
        self._linked_text: dict[str, str] = {}
        self.kernel_text = ""
        self.uses_threadgroup_counter = False
        self.uses_dynamic_shared = False
        self.shared_bytes = 0  # static shared arrays of the kernel itself
        self.pool_bytes = 0    # shared arrays of device functions, in one threadgroup pool
        self.local_bytes = 0   # local arrays of the kernel and its device functions, per thread
        self.array_names: list[str] = []
        self.print_formats: list[str] = []   # kernel_io descriptions of the print() calls
        self.raise_sites: list = []          # kernel_io.RaiseSite of each raise (debug=True)
        self.uses_raise = False
        self._raising: set = set()           # device functions that may raise
        self._records: dict = {}             # record type -> abi.RecordLayout

    @property
    def bounds_checked(self) -> bool:
        """Array accesses are bounds-checked: ``debug=True`` or the sanitizer's ``bounds``."""
        return self.debug or "bounds" in self.sanitize

    @property
    def error_record(self) -> bool:
        """The kernel gets the error-record buffer (debug reports, and the sanitizer's shadow memory)."""
        return self.debug or bool(self.sanitize)

    def need_sanitizer_hooks(self) -> None:
        if not self._sanitizer_hooks:
            from .sanitize import hooks
            self._sanitizer_hooks = True
            self.define(hooks())

    # -- prelude ---------------------------------------------------------------------------

    def need(self, name: str, first_type: str | None = None) -> None:
        """Include the MSL library's definition of ``name`` (a function, or a type, macro or table; an
        overloaded function defined in several sections, with ``first_type`` its first parameter's MSL type), with
        what it requires (compiler/mslib/)."""
        self.sections.add(mslib.section_of(name, first_type))

    def is_float64(self, ty) -> bool:
        """True if ``ty`` is float64 computed exactly (the emulated library's ``nm_f64``)."""
        return self.exact_float64 and types.unliteral(ty) == types.float64

    # -- types -----------------------------------------------------------------------------

    def data_pointer_type(self, ty) -> str:
        """The MSL type of the data pointer of arrays of type ``ty`` (an ``nm_arr``'s first member)."""
        space = array_space(ty)
        return msl.pointer(space, self.element_type_name(ty.dtype), self.coherent and space == "device",
                           const=space == "device" and not ty.mutable)

    def type_name(self, ty) -> str | None:
        """MSL spelling of a Numba type, defining a struct for it if needed; None if the type has no
        run-time representation (modules, functions, classes...)."""
        # Asked for every variable, value and conversion: remembered by identity (hashing a Numba type
        # computes its key), which is safe while the typed IR holding the type is alive.
        known = self._spelt.get(id(ty))
        if known is not None and known[0] is ty:
            return known[1]
        name = self._type_name(ty)
        self._spelt[id(ty)] = (ty, name)
        return name

    def _type_name(self, ty) -> str | None:
        if isinstance(ty, types.Literal) and not isinstance(ty, types.StringLiteral):
            ty = ty.literal_type
        if self.is_float64(ty):
            self.need("nm_f64_from_bits")
            return msl.FLOAT64
        if ty == types.complex128:
            self.need("nm_c128_make")
            return msl.COMPLEX128
        if ty == types.complex64:
            return msl.COMPLEX64
        name = msl.scalar_type(ty)
        if name is not None:
            return name
        if isinstance(ty, types.EnumMember):  # a member is its value
            return self.type_name(ty.dtype)
        if isinstance(ty, _COMPILE_TIME_ONLY) or getattr(ty, "compile_time_only", False):
            return None
        if isinstance(ty, types.SliceType):
            self.need("nm_slice")
            return "nm_slice"
        if isinstance(ty, types.BaseTuple) and slicing.is_compile_time_index(ty):
            return None
        if isinstance(ty, types.BaseTuple):
            ty = canonical_tuple(ty)
        if ty in self._type_names:
            return self._type_names[ty]
        if isinstance(ty, types.Array):
            self.need("nm_arr")
            elem = self.element_type_name(ty.dtype)
            space = array_space(ty)
            name = msl.template("nm_arr", self.data_pointer_type(ty), ty.ndim)
        elif isinstance(ty, types.BaseTuple):
            members = [self.type_name(t) for t in ty.types]
            if any(m is None for m in members):
                raise UnsupportedFeatureError(f"a tuple holding {ty} cannot be used at run time in a kernel")
            name = msl.numbered("nm_tuple", len(self._definitions))
            self._definitions.append(msl.struct_definition(
                name, [(m, msl.tuple_field(i)) for i, m in enumerate(members)]))
        elif isinstance(ty, types.Pair):
            self.need("nm_pair")
            name = msl.template("nm_pair", self.require_type(ty.first_type), self.require_type(ty.second_type))
        elif isinstance(ty, types.RangeType):
            self.need("nm_range")
            name = msl.template("nm_range", self.require_type(ty.dtype))
        elif isinstance(ty, types.RangeIteratorType):
            self.need("nm_range_iter")
            name = msl.template("nm_range_iter", self.require_type(ty.yield_type))
        elif isinstance(ty, types.Record):
            # A record is a reference to its bytes (records.py), in its address space.
            space = array_space(ty)
            name = msl.pointer(space, self.record_layout(ty).struct, self.coherent and space == "device")
        elif isinstance(ty, VectorType):
            element = self.require_type(ty.element)
            if ty.native:
                name = msl.vector_type(element, ty.count)
            else:
                name = msl.numbered("nm_vec", len(self._definitions))
                self._definitions.append(msl.struct_definition(name, [(element, a) for a in ty.attributes]))
        elif isinstance(ty, types.EnumerateType):
            name = msl.numbered("nm_enumerate", len(self._definitions))
            self._definitions.append(msl.struct_definition(name, [(self.require_type(ty.source_type), iterators.SOURCE),
                                                                  ("long", iterators.COUNT)]))
        elif isinstance(ty, types.ZipType):
            name = msl.numbered("nm_zip", len(self._definitions))
            self._definitions.append(msl.struct_definition(name, [(self.require_type(t), iterators.source_member(k))
                                                                  for k, t in enumerate(ty.source_types)]))
        elif isinstance(ty, types.ArrayIterator):
            name = msl.numbered("nm_arrayiter", len(self._definitions))
            self._definitions.append(msl.struct_definition(name, [(self.require_type(ty.array_type), "a"),
                                                                  ("long", "i")]))
        elif isinstance(ty, SimdgroupMatrix):
            name = msl.SIMDGROUP_MATRIX_TYPES[self.require_type(ty.dtype)]
        elif isinstance(ty, types.UniTupleIter):
            tup = self.require_type(ty.container)
            name = msl.numbered("nm_tupleiter", len(self._definitions))
            self._definitions.append(msl.struct_definition(name, [(tup, "t"), ("long", "i")]))
        else:
            raise UnsupportedFeatureError(f"values of type {ty} are not supported in Metal kernels")
        self._type_names[ty] = name
        return name

    def require_type(self, ty) -> str:
        name = self.type_name(ty)
        if name is None:
            raise UnsupportedFeatureError(f"values of type {ty} cannot be used at run time in a kernel")
        return name

    def record_layout(self, rec) -> abi.RecordLayout:
        """The layout of a record type, its MSL struct defined in this module (once)."""
        rec = plain_record(rec)
        known = self._records.get(rec)
        if known is None:
            try:
                known = records.layout(rec, self)
            except TypeError as e:
                raise UnsupportedFeatureError(str(e)) from None
            self._records[rec] = known
            self._definitions.append(msl.record_definition(known.struct, known.size))
        return known

    def element_type_name(self, dtype) -> str:
        """The MSL type an array of ``dtype`` holds in memory (float64: its bit pattern)."""
        if isinstance(dtype, types.Record):
            return self.record_layout(dtype).struct
        if self.is_float64(dtype):
            self.need("nm_f64_from_bits")
            return msl.FLOAT64_STORAGE
        if dtype == types.complex128:
            self.need("nm_c128_make")
            return msl.COMPLEX128_STORAGE
        if dtype == types.complex64:
            return msl.COMPLEX64
        name = msl.scalar_type(dtype)
        if name is None:
            raise UnsupportedFeatureError(f"arrays of {dtype} are not supported in Metal kernels")
        return name

    # -- functions -------------------------------------------------------------------------

    def may_raise(self, name: str) -> bool:
        """True if the device function ``name`` (lowered into this module) may raise."""
        return name in self._raising

    def lowered_device_function(self, key) -> tuple[str, types.Type] | None:
        """(name, return type) of the device function lowered into this module for ``key`` (the function
        and its argument types), or None."""
        return self._device_functions.get(key)

    def unique_function_name(self, name: str) -> str:
        """``name``, or ``name`` with a number if a device function of this module already has it (two
        functions of the same name, such as closures defined in different functions, typed alike)."""
        taken = {known for known, _ in self._device_functions.values()}
        unique, n = name, 1
        while unique in taken:
            n += 1
            unique = f"{name}_{n}"
        return unique

    def add_device_function(self, key, name: str, return_type, text: str, raises: bool) -> tuple[str, types.Type]:
        """Record a device function lowered into this module (``text``, placed after the functions it calls,
        which were added while it was lowered); returns (name, return type)."""
        if raises:
            self._raising.add(name)
        self._device_functions[key] = (name, return_type)
        self._functions.append(text)
        return name, return_type

    def reserve_threadgroup_memory(self, nbytes: int, in_pool: bool) -> int:
        """Reserve ``nbytes`` of static threadgroup memory for a shared array of the kernel or (``in_pool``)
        of a device function, whose arrays live in one pool; returns the offset in the pool. The kernel's
        total is checked against Metal's limit here, the one place it grows."""
        nbytes = _round_up(nbytes, _THREADGROUP_ALIGNMENT)
        offset = self.pool_bytes
        if in_pool:
            self.pool_bytes += nbytes
        else:
            self.shared_bytes += nbytes
        total = self.shared_bytes + self.pool_bytes
        if total > abi.MAX_THREADGROUP_MEMORY:
            raise UnsupportedFeatureError(
                f"shared arrays of kernel {self.kernel_name}() and its device functions need {total} bytes of "
                f"threadgroup memory, more than Metal's {abi.MAX_THREADGROUP_MEMORY}; use smaller arrays")
        return offset

    def reserve_local_memory(self, nbytes: int) -> None:
        """Count ``nbytes`` of a local array against the per-thread limit. A thread's private memory at any
        moment is at most that of the kernel and all its device functions together (MSL has no recursion),
        which is what is checked, here, the one place it grows."""
        self.local_bytes += nbytes
        if self.local_bytes > abi.MAX_LOCAL_MEMORY:
            raise UnsupportedFeatureError(
                f"local arrays of kernel {self.kernel_name}() and its device functions need {self.local_bytes} "
                f"bytes per thread, more than numba-metal's limit of {abi.MAX_LOCAL_MEMORY}; use smaller local "
                "arrays, or shared arrays or a device array for larger data")

    def constant_array(self, element: str, values: list[str]) -> str:
        """Define a program-scope constant array and return its name."""
        key = (element, tuple(values))
        if key in self._constants:
            return self._constants[key]
        name = msl.numbered("nm_const", len(self._definitions))
        self._constants[key] = name
        self._definitions.append(msl.constant_array_definition(element, name, values))
        return name

    def define(self, definition: str) -> None:
        """A program-scope definition (a struct) placed before the functions."""
        self._definitions.append(definition)

    def link(self, path: str, source: str, digest: str) -> None:
        """Hand-written MSL (a linked .metal file, ``digest`` the fingerprint of its contents: see
        linking.py), placed once before the functions that call it (once also when two paths name it)."""
        if path in self._linked_text:
            return
        if all(d != digest for _, d in self.linked):
            self._definitions.append(source)
        # Every path is recorded, so that the disk cache sees an edit of either of two identical files.
        self._linked_text[path] = source
        self.linked.append((path, digest))

    def linked_sources(self) -> dict[str, str]:
        """Path -> text of the MSL files linked so far."""
        return dict(self._linked_text)

    def render(self) -> str:
        parts = [msl.HEADER]
        parts.extend(mslib.text(section) for section in mslib.closure(self.sections))
        parts.extend(d + "\n" for d in self._definitions)
        parts.extend(f + "\n" for f in self._functions)
        parts.append(self.kernel_text)
        return "\n".join(p.rstrip("\n") for p in parts if p) + "\n"


def canonical_tuple(ty):
    """The tuple type with literal members replaced by their types (UniTuple when homogeneous): tuples
    that have the same layout get the same MSL struct."""
    members = tuple(canonical_tuple(t) if isinstance(t, types.BaseTuple) else types.unliteral(t)
                    for t in ty.types)
    if members and all(m == members[0] for m in members):
        return types.UniTuple(members[0], len(members))
    return types.Tuple(members)


def array_space(ty) -> str:
    """Address space of an array type's data: kernel-API array types say theirs (module globals baked in
    as constants are ``constant`` arrays); every other array, read-only or not, is a device buffer (a
    read-only one is ``device const``: a ``constant`` pointer cannot be initialised from the kernel's
    ``device`` buffer parameter)."""
    space = getattr(ty, "address_space", None)
    return "device" if space is None else space


def function_name(tf: TypedFunction, prefix: str = "nm_f_") -> str:
    """The MSL name of a function typed for its argument types (a digest keeps overloads apart)."""
    digest = hashlib.sha1(repr(tuple(str(t) for t in tf.argtypes)).encode()).hexdigest()[:8]
    return prefix + msl.identifier(tf.name, prefix="") + "_" + digest
