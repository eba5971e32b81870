"""Typed Numba IR → MSL source.

``ModuleBuilder`` is one MSL translation unit (prelude sections, type definitions, device functions,
the kernel). ``FunctionLowering`` turns one typed function into MSL: it structures the control-flow
graph (``structurize``), declares one MSL local per IR variable (the IR is not in SSA form, so there
is nothing to destroy) and lowers each statement. Syntax comes from :mod:`.msl`; operators from
:mod:`.operators`' table; calls, attributes and values of the kernel API from :mod:`.lowering`'s
registry, which the kernel-API families fill.

The methods of ``FunctionLowering`` that do not start with an underscore are what the lowerings of the
kernel-API families use (they receive it as ``lc``).
"""

from __future__ import annotations

import hashlib

from numba.core import ir, types

from numba_metal.errors import KernelCompilationError, UnsupportedFeatureError

from . import abi, arrays, calls, constants, conversions, effects, kernel_io, libraries, msl, operators, records
from .devicefn import DeviceFunctionBase
from .frontend import TypedFunction, loc_of
from .lowering import Value, registry as lowerings
from .structurize import (Break, Code, Continue, DoOnce, FunctionEnd, If, IfFlag, Loop, Seq, SetFlag,
                          StructureError, skip_empty_blocks, structurize)
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
                 exact_float64: bool = False):
        self.kernel_name = kernel_name
        self.debug = debug
        self.coherent = coherent
        self.exact_float64 = exact_float64
        self.library_sections: set[str] = set()   # sections of msl.FLOAT64_LIBRARY the code calls
        self.fences_device_memory = False
        self.language_version = msl.ANY_VERSION   # the newest MSL version its code needs
        self.snippets: set[str] = {"base", "env"}
        self.uses_mathlib = False
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

    # -- prelude ---------------------------------------------------------------------------

    def need(self, snippet: str) -> None:
        self.snippets.add(snippet)

    def need_mathlib(self) -> None:
        self.uses_mathlib = True

    def need_library_function(self, function: str) -> None:
        """Include the section of the emulated float64 library (or its math and complex libraries) that
        defines ``function``."""
        self.library_sections.add(libraries.section_of(function))

    def is_float64(self, ty) -> bool:
        """True if ``ty`` is float64 computed exactly (the emulated library's ``nm_f64``)."""
        return self.exact_float64 and types.unliteral(ty) == types.float64

    # -- types -----------------------------------------------------------------------------

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
            self.need_library_function("nm_f64_from_bits")
            return msl.FLOAT64
        if ty == types.complex128:
            self.need_library_function("nm_c128_make")
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
            raise UnsupportedFeatureError("slicing is not supported inside Metal kernels (integer and tuple "
                                          "indexing are); slice device arrays on the host instead")
        if isinstance(ty, types.BaseTuple):
            ty = canonical_tuple(ty)
        if ty in self._type_names:
            return self._type_names[ty]
        if isinstance(ty, types.Array):
            self.need("array")
            elem = self.element_type_name(ty.dtype)
            space = array_space(ty)
            name = msl.template("nm_arr", msl.pointer(space, elem, self.coherent and space == "device"), ty.ndim)
        elif isinstance(ty, types.BaseTuple):
            members = [self.type_name(t) for t in ty.types]
            if any(m is None for m in members):
                raise UnsupportedFeatureError(f"a tuple holding {ty} cannot be used at run time in a kernel")
            name = msl.numbered("nm_tuple", len(self._definitions))
            self._definitions.append(msl.struct_definition(
                name, [(m, msl.tuple_field(i)) for i, m in enumerate(members)]))
        elif isinstance(ty, types.Pair):
            self.need("pair")
            name = msl.template("nm_pair", self.require_type(ty.first_type), self.require_type(ty.second_type))
        elif isinstance(ty, types.RangeType):
            self.need("range")
            name = msl.template("nm_range", self.require_type(ty.dtype))
        elif isinstance(ty, types.RangeIteratorType):
            self.need("range")
            name = msl.template("nm_range_iter", self.require_type(ty.yield_type))
        elif isinstance(ty, types.Record):
            # A record is a reference to its bytes (records.py).
            name = msl.pointer("device", self.record_layout(ty).struct, self.coherent)
        elif isinstance(ty, VectorType):
            element = self.require_type(ty.element)
            if ty.native:
                name = msl.vector_type(element, ty.count)
            else:
                name = msl.numbered("nm_vec", len(self._definitions))
                self._definitions.append(msl.struct_definition(name, [(element, a) for a in ty.attributes]))
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
        known = self._records.get(rec)
        if known is None:
            try:
                known = records.layout(rec)
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
            self.need_library_function("nm_f64_from_bits")
            return msl.FLOAT64_STORAGE
        if dtype == types.complex128:
            self.need_library_function("nm_c128_make")
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

    def device_function(self, devfn, argtypes) -> tuple[str, types.Type]:
        """Lower a device function for ``argtypes`` into this module (once); returns (name, return type)."""
        key = (devfn, tuple(argtypes))
        if key in self._device_functions:
            return self._device_functions[key]
        tf = devfn.typed(tuple(argtypes))
        name = function_name(tf)
        lowering = FunctionLowering(self, tf, kind="device", name=name)
        text = lowering.lower()
        if lowering.raises:
            self._raising.add(name)
        self._device_functions[key] = (name, tf.return_type)
        self._functions.append(text)
        return name, tf.return_type

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
        for snippet in msl.PRELUDE.closure(self.snippets):
            parts.append(msl.PRELUDE.text(snippet))
        library = msl.FLOAT64_LIBRARY.closure(self.library_sections)
        if self.uses_mathlib or msl.MATHLIB_SECTION in library:
            parts.append(msl.mathlib_text())
        for section in library:
            if section != msl.MATHLIB_SECTION:
                parts.append(msl.FLOAT64_LIBRARY.text(section))
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
    """Address space of an array type's data: kernel-API array types say theirs; read-only arrays are
    module globals baked in as constants; the others are device buffers."""
    space = getattr(ty, "address_space", None)
    if space is not None:
        return space
    return "device" if ty.mutable else "constant"


def function_name(tf: TypedFunction, prefix: str = "nm_f_") -> str:
    """The MSL name of a function typed for its argument types (a digest keeps overloads apart)."""
    digest = hashlib.sha1(repr(tuple(str(t) for t in tf.argtypes)).encode()).hexdigest()[:8]
    return prefix + msl.identifier(tf.name, prefix="") + "_" + digest


# ---------------------------------------------------------------------------------------------


class FunctionLowering:
    """Lowers one typed function (a kernel or a device function) to MSL text."""

    def __init__(self, module: ModuleBuilder, tf: TypedFunction, *, kind: str, name: str):
        self.module = module
        self.tf = tf
        self.kind = kind
        self.name = name
        self.abi: abi.KernelABI | None = None   # a kernel's, once lowered
        self.typemap = tf.typemap
        self.calltypes = tf.calltypes
        self.func_ir = tf.func_ir
        self.loc = None
        self._lines: list[str] = []
        self._indent = 1
        self._names: dict[str, str] = {}
        self._tmp_count = 0
        self._decls: list[str] = []
        self._uses_flag = False
        self.callee = None         # the Python object whose call is being lowered
        self.call = None           # and its ir.Expr
        self.raises = False        # the function raises, or calls a device function that may

    # -- what the kernel-API lowerings use --------------------------------------------------

    @property
    def is_kernel(self) -> bool:
        return self.kind == "kernel"

    @property
    def debug(self) -> bool:
        return self.module.debug

    def error(self, message: str, cls=UnsupportedFeatureError):
        raise cls(message, loc_of(self.loc) or self.tf.location)

    def need(self, snippet: str) -> None:
        """Include a prelude section (with its dependencies)."""
        self.module.need(snippet)

    def need_mathlib(self) -> None:
        """Include numba-metal's math library."""
        self.module.need_mathlib()

    def library_call(self, function: str, *args: str) -> str:
        """A call of an entry point of the emulated float64, float64 math or complex library (its
        section is included)."""
        self.module.need_library_function(function)
        return msl.call(function, *args)

    def is_float64(self, ty) -> bool:
        """True if values of ``ty`` are float64 computed exactly (``nm_f64``, the emulated library):
        float64 in a kernel that holds float64 data; elsewhere float64 is computed in float32."""
        return self.module.is_float64(ty)

    def op_kind(self, ty) -> str | None:
        """The kind of a scalar type that selects its row in the operation tables (operators.py, the
        math table): float64 computed in float32 takes float32's."""
        kind = operators.kind_of(ty)
        return "float32" if kind == "float64" and not self.module.exact_float64 else kind

    def element_type(self, dtype) -> str:
        """The MSL type an array of ``dtype`` holds in memory."""
        try:
            return self.module.element_type_name(dtype)
        except UnsupportedFeatureError as e:
            self.error(e.message)

    def load(self, dtype, stored: str) -> str:
        """The value of type ``dtype`` of an array element read as ``stored``."""
        if self.is_float64(dtype):
            return self.library_call("nm_f64_from_bits", stored)
        if types.unliteral(dtype) == types.complex128:
            parts = [self.library_call("nm_f64_from_bits", msl.member(stored, p)) for p in msl.COMPLEX64_PARTS]
            return self.library_call("nm_c128_make", *parts)
        return stored

    def store(self, dtype, value: str) -> str:
        """What an array of ``dtype`` holds for ``value`` (already of type ``dtype``)."""
        if self.is_float64(dtype):
            return msl.member(value, msl.FLOAT64_BITS)
        if types.unliteral(dtype) == types.complex128:
            z = self.tmp(types.complex128, value)
            return msl.call(msl.COMPLEX128_STORAGE, *(msl.member(msl.member(z, p), msl.FLOAT64_BITS)
                                                      for p in msl.COMPLEX128_PARTS))
        return value

    def msl_type(self, ty) -> str:
        try:
            return self.module.require_type(ty)
        except UnsupportedFeatureError as e:
            self.error(e.message)

    def pointer(self, space: str, element: str) -> str:
        """A pointer type into ``space`` as this module declares it (device memory may be coherent)."""
        return msl.pointer(space, element, self.module.coherent and space == "device")

    def env(self, name: str) -> str:
        """A member of the kernel environment (``nm_env``: built-in inputs and kernel-wide resources)."""
        return msl.env(name)

    def emit(self, line: str) -> None:
        self._lines.append("    " * self._indent + line)

    def tmp(self, ty, init: str | None = None) -> str:
        """A new temporary of type ``ty`` (declared at the top of the function), assigned ``init`` here."""
        name = self.fresh_name("nm_t")
        self._decls.append(msl.declare(self.msl_type(ty), name))
        if init is not None:
            self.emit(msl.assign(name, init))
        return name

    def declare(self, decl: str) -> None:
        """A declaration at the top of the function body (e.g. a threadgroup array)."""
        self._decls.append(decl)

    def fresh_name(self, prefix: str) -> str:
        self._tmp_count += 1
        return msl.numbered(prefix, self._tmp_count)

    def cast(self, value: Value, to) -> str:
        return conversions.cast_expr(self, value, to)

    def truth(self, value: Value) -> str:
        return conversions.truth(self, value)

    def line(self) -> int:
        return self.loc.line if self.loc is not None else 0

    def argument_value(self, i: int):
        """The compile-time Python value of argument ``i`` of the call being lowered."""
        return self.resolve(self.call.args[i])

    def argument_is_call_of(self, i: int, function) -> bool:
        """True if argument ``i`` of the call being lowered is the result of calling ``function`` with no
        arguments (directly or through plain assignments)."""
        var = self.call.args[i]
        for _ in range(8):
            try:
                d = self.func_ir.get_definition(var)
            except KeyError:
                return False
            if isinstance(d, ir.Var):
                var = d
                continue
            if isinstance(d, ir.Expr) and d.op == "call" and not d.args:
                try:
                    return self.resolve(d.func) is function
                except UnsupportedFeatureError:
                    return False
            return False
        return False

    def local_array(self, element: str, length: int, nbytes: int) -> str:
        """A zero-initialised array of ``length`` elements private to each thread; returns its name."""
        try:
            self.module.reserve_local_memory(nbytes)
        except UnsupportedFeatureError as e:
            self.error(e.message)
        name = self.fresh_name("nm_local")
        self.declare(msl.declare_array(element, name, length, zero=True))
        return name

    def shared_array(self, element: str, length: int, nbytes: int) -> str:
        """A static threadgroup array of ``length`` elements for this call site; returns a pointer
        expression to its data. A kernel declares it; a device function's array lives at a fixed offset
        of the kernel's threadgroup pool (one allocation per call site, the same for every call, as
        numba.cuda's)."""
        try:
            offset = self.module.reserve_threadgroup_memory(nbytes, in_pool=not self.is_kernel)
        except UnsupportedFeatureError as e:
            self.error(e.message)
        if not self.is_kernel:
            return msl.pointer_cast(msl.pointer("threadgroup", element),
                                    msl.binary("+", self.env("tgpool"), str(offset)))
        name = self.fresh_name("nm_shared")
        if length and nbytes // length < 4:
            # Narrow elements are stored in aligned 32-bit words, so that the word an atomic on a half
            # compares and swaps (fp16.atomicAdd) lies inside the array.
            self.declare(msl.declare_array("uint", name, -(-nbytes // 4), space="threadgroup"))
            return msl.pointer_cast(msl.pointer("threadgroup", element), name)
        self.declare(msl.declare_array(element, name, length, space="threadgroup"))
        return name

    def dynamic_shared_memory(self) -> tuple[str, str]:
        """(pointer, length in bytes) of the dynamic threadgroup memory sized by the launch's ``sharedmem``."""
        self.module.uses_dynamic_shared = True
        if self.is_kernel:
            return abi.DYNAMIC_MEMORY_PARAM, msl.member(abi.ARGS_PARAM, abi.DYNAMIC_MEMORY_FIELD)
        return self.env("dynshared"), self.env("dynshared_bytes")

    def threadgroup_counter(self) -> str:
        """A ``threadgroup atomic_int*`` shared by the threadgroup (declared by the kernel)."""
        self.module.uses_threadgroup_counter = True
        return self.env("tgcount")

    def require_language_version(self, version: int) -> None:
        """The function's code needs MSL ``version`` (``msl.VERSION_3_2``...): the kernel asks for it."""
        self.module.language_version = max(self.module.language_version, version)

    def fence_device_memory(self) -> None:
        """The function orders device memory across threadgroups (``threadfence``): the kernel's device
        memory must be declared ``coherent(device)`` (MSL 3.2) for the fence to make writes visible."""
        self.module.fences_device_memory = True
        self.require_language_version(msl.VERSION_3_2)

    def constant_array(self, element: str, values: list[str]) -> str:
        return self.module.constant_array(element, values)

    def array_id(self, name: str) -> int:
        """The number debug reports use for the array named ``name``."""
        names = self.module.array_names
        if name not in names:
            names.append(name)
        return names.index(name)

    # -- driver ----------------------------------------------------------------------------

    def lower(self) -> str:
        blocks = self.func_ir.blocks
        succs = {}
        for label, block in blocks.items():
            term = block.terminator
            if isinstance(term, ir.Jump):
                succs[label] = [term.target]
            elif isinstance(term, ir.Branch):
                succs[label] = [term.truebr, term.falsebr]
            else:
                succs[label] = []
        entry = min(blocks)
        # Blocks holding nothing but a jump (Numba makes one per loop with `continue`, and one per
        # `break`) are threaded through, so that `continue` in a nested `if` stays a plain continue.
        empty = [label for label, block in blocks.items()
                 if len(block.body) == 1 and isinstance(block.body[0], ir.Jump)]
        if not self.debug:
            self._compile_out_assertions(succs)
        succs = skip_empty_blocks(entry, succs, empty)
        self._check_statements(set(succs))
        try:
            tree = structurize(entry, succs)
        except StructureError as e:
            self.error(f"control flow of {self.tf.name}() could not be structured: {e}", KernelCompilationError)
        self._declare_variables()
        self._emit_tree(tree)
        if self.is_kernel:
            self.abi = self._kernel_abi()
            header = self.abi.signature()
            struct_definition = self.abi.struct_definition()
            if struct_definition is not None:
                self.module.define(struct_definition)
            entry = ["    " + line for line in self._environment()]
        else:
            header = self._device_function_header()
            entry = []
        body = entry
        body.extend("    " + d for d in self._decls)
        if self._uses_flag:
            body.append("    " + msl.declare("int", msl.FLAG_VAR, "0"))
        body.extend(self._lines)
        return msl.function(header, body)

    def _compile_out_assertions(self, succs) -> None:
        """Without debug=True, ``assert`` is compiled out (as in numba.cuda): branches to a block that
        only raises AssertionError go the other way, and such blocks are dropped."""
        dropped = kernel_io.compiled_out_assertions(self.func_ir)
        for label in list(succs):
            targets = succs[label]
            if len(targets) == 2 and (targets[0] in dropped) != (targets[1] in dropped):
                succs[label] = [t for t in targets if t not in dropped]
        reachable, work = set(), [min(succs)]
        while work:
            label = work.pop()
            if label not in reachable:
                reachable.add(label)
                work.extend(succs[label])
        for label in set(succs) - reachable:
            del succs[label]

    def return_after_raise(self) -> str:
        """The statement that leaves this function after a raise."""
        if self.is_kernel or isinstance(self.tf.return_type, types.NoneType):
            return msl.return_()
        return msl.RETURN_DEFAULT

    def _check_statements(self, labels) -> None:
        """Refuse what only typing reveals (constructs are checked before typing, in the frontend)."""
        if not self.is_kernel:
            return
        for label in labels:
            for stmt in self.func_ir.blocks[label].body:
                if isinstance(stmt, ir.Return):
                    rt = self.typemap.get(stmt.value.name)
                    if rt is not None and not isinstance(rt, types.NoneType):
                        self.loc = stmt.loc
                        self.error("a @metal.jit kernel cannot return a value; write results to an "
                                   "output array (device functions, @metal.jit(device=True), may return values)")
        self.loc = None

    # -- variables -------------------------------------------------------------------------

    def var(self, name: str) -> str:
        ident = self._names.get(name)
        if ident is None:
            ident = msl.identifier(name)
            while ident in self._names.values():
                ident += "_"
            self._names[name] = ident
        return ident

    def value(self, var: ir.Var) -> Value:
        return Value(self.var(var.name), self.typemap[var.name])

    def _declare_variables(self) -> None:
        for name in sorted(self.typemap):
            ty = self.typemap[name]
            self.loc = None
            try:
                tname = self.module.type_name(ty)
            except UnsupportedFeatureError as e:
                self._raise_at_definition(name, e)
            if tname is None:
                continue
            self._decls.append(msl.declare(tname, self.var(name)))

    def _raise_at_definition(self, name, exc):
        for block in self.func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and stmt.target.name == name:
                    raise UnsupportedFeatureError(exc.message, loc_of(stmt.loc)) from None
        raise exc

    # -- signatures ------------------------------------------------------------------------

    def _device_function_header(self) -> str:
        params = [msl.parameter(msl.reference("thread", msl.ENV_TYPE, const=True), msl.ENV_PARAM)]
        for i, ty in enumerate(self.tf.argtypes):
            tname = self.module.type_name(ty)
            if tname is not None:
                params.append(msl.parameter(tname, msl.numbered("p", i)))
        rty = self.tf.return_type
        rname = "void" if isinstance(rty, types.NoneType) else self.msl_type(rty)
        return msl.device_function_header(rname, self.name, params)

    def _kernel_abi(self) -> abi.KernelABI:
        """The kernel's ABI, from its argument types and what lowering its body needed."""
        arguments = []
        written = effects.written_arguments(self.tf)
        for i, (argname, ty) in enumerate(zip(self.tf.arg_names, self.tf.argtypes)):
            at = ":".join(map(str, written[i])) if i in written else ""
            if isinstance(ty, types.Record):
                arguments.append(abi.ArrayArgument(i, 0, argname, self.module.record_layout(ty).struct, 0, "C",
                                                   self.module.coherent, at))
                continue
            if _function_of_type(ty) is not None:
                continue  # a device function argument is known at compile time: nothing is passed
            if isinstance(ty, types.Array):
                arguments.append(abi.ArrayArgument(i, 0, argname, self.module.element_type_name(ty.dtype), ty.ndim,
                                                   ty.layout if ty.layout in ("C", "F") else "A", self.module.coherent,
                                                   at))
                continue
            for path, sty in _flatten_scalars(ty):
                # An Enum or IntEnum member is passed as its value (an IntEnum member is an int already).
                attribute = ""
                if isinstance(sty, types.EnumMember):
                    attribute = "" if isinstance(sty, types.IntEnumMember) else "value"
                    sty = sty.dtype
                mtype = msl.FLOAT64 if self.is_float64(sty) else msl.scalar_type(sty)
                if mtype is None:
                    raise UnsupportedFeatureError(
                        f"argument '{argname}' of type {ty} is not supported by Metal kernels", self.tf.location)
                arguments.append(abi.ScalarArgument(i, path, mtype, attribute))
        module = self.module
        return abi.layout(self.name, self.tf.name, arguments, debug=self.debug,
                          dynamic_threadgroup_memory=module.uses_dynamic_shared,
                          static_threadgroup_memory=module.shared_bytes + module.pool_bytes,
                          array_names=module.array_names,
                          language_version=module.language_version,
                          print_formats=module.print_formats, raise_sites=module.raise_sites,
                          where=self.tf.location)

    def _environment(self) -> list[str]:
        """The kernel's first statements: its ``nm_env`` value."""
        lines = [msl.declare(msl.ENV_TYPE, msl.ENV_PARAM)]
        for member, _, _ in abi.BUILTINS:
            lines.append(msl.assign(msl.env(member), abi.builtin_param(member)))
        lines.append(msl.assign(msl.env("err"), abi.ERROR_RECORD_PARAM if self.debug else msl.NULL))
        if self.abi.print_slot is not None:
            lines.append(msl.assign(msl.env("out"), abi.PRINT_BUFFER_PARAM))
        if self.module.uses_raise:
            lines.append(msl.declare("uint", "nm_raised"))
            lines.append(msl.assign(msl.env("raised"), msl.address_of("nm_raised")))
        if self.module.uses_threadgroup_counter:
            lines.append(msl.declare_uninitialized("threadgroup atomic_int", "nm_tgcount"))
            lines.append(msl.assign(msl.env("tgcount"), msl.address_of("nm_tgcount")))
        else:
            lines.append(msl.assign(msl.env("tgcount"), msl.NULL))
        if self.module.pool_bytes:
            lines.append(msl.declare_array("float4", "nm_tgpool", self.module.pool_bytes // 16, space="threadgroup"))
            lines.append(msl.assign(msl.env("tgpool"), msl.pointer_cast("threadgroup uchar*", "nm_tgpool")))
        else:
            lines.append(msl.assign(msl.env("tgpool"), msl.NULL))
        if self.abi.dynamic_threadgroup_memory:
            lines.append(msl.assign(msl.env("dynshared"), abi.DYNAMIC_MEMORY_PARAM))
            lines.append(msl.assign(msl.env("dynshared_bytes"), msl.member(abi.ARGS_PARAM, abi.DYNAMIC_MEMORY_FIELD)))
        else:
            lines.append(msl.assign(msl.env("dynshared"), msl.NULL))
            lines.append(msl.assign(msl.env("dynshared_bytes"), msl.uint_literal(0)))
        return lines

    # -- arguments -------------------------------------------------------------------------

    def lower_arg(self, arg: ir.Arg) -> Value:
        i = arg.index
        ty = self.tf.argtypes[i]
        if not self.is_kernel:
            return Value(msl.numbered("p", i), ty)
        args = abi.ARGS_PARAM
        if isinstance(ty, types.Record):
            return Value(abi.array_param(i), ty)
        if isinstance(ty, types.Array):
            data = abi.array_param(i)
            if ty.layout not in ("C", "F"):
                data = msl.binary("+", data, msl.member(args, abi.origin_field(i)))
            shape = [msl.member(args, abi.shape_field(i, k)) for k in range(ty.ndim)]
            strides = [msl.member(args, abi.stride_field(i, k)) for k in range(ty.ndim)]
            return arrays.array_value(self, ty, data, shape, strides)
        return Value(self._rebuild_scalar_arg(i, ty, ()), ty)

    def _rebuild_scalar_arg(self, i, ty, path) -> str:
        if isinstance(ty, types.BaseTuple):
            items = [self._rebuild_scalar_arg(i, t, path + (k,)) for k, t in enumerate(ty.types)]
            return msl.aggregate(self.msl_type(ty), items)
        if isinstance(ty, types.Complex):
            re, im = (self._rebuild_scalar_arg(i, ty.underlying_float, path + (p,)) for p in abi.COMPLEX_PARTS)
            if ty == types.complex128:
                return self.library_call("nm_c128_make", re, im)
            return msl.call(msl.COMPLEX64, re, im)
        field = msl.member(abi.ARGS_PARAM, abi.scalar_field(i, path))
        # A float64 is copied out of constant memory as its bits (the struct itself is not copied
        # across address spaces).
        value_type = ty.dtype if isinstance(ty, types.EnumMember) else ty   # a member is its value
        return self.load(value_type, msl.member(field, msl.FLOAT64_BITS)) if self.is_float64(value_type) else field

    # -- structured control flow -----------------------------------------------------------

    def _emit_tree(self, node) -> None:
        if isinstance(node, Seq):
            for item in node.items:
                self._emit_tree(item)
        elif isinstance(node, Code):
            for stmt in self.func_ir.blocks[node.label].body[:-1]:
                self.loc = stmt.loc
                self.lower_stmt(stmt)
        elif isinstance(node, If):
            term = self.func_ir.blocks[node.label].terminator
            self.loc = term.loc
            cond = self.truth(self.value(term.cond))
            if not node.then.items and node.else_.items:
                self.emit(msl.if_(msl.unary("!", cond)))
                self._nested(node.else_)
                self.emit(msl.END)
                return
            self.emit(msl.if_(cond))
            self._nested(node.then)
            if node.else_.items:
                self.emit(msl.ELSE)
                self._nested(node.else_)
            self.emit(msl.END)
        elif isinstance(node, Loop):
            self.emit(msl.LOOP)
            self._nested(node.body)
            self.emit(msl.END)
        elif isinstance(node, DoOnce):
            self.emit(msl.DO_ONCE)
            self._nested(node.body)
            self.emit(msl.DO_ONCE_END)
        elif isinstance(node, Break):
            self.emit(msl.BREAK)
        elif isinstance(node, Continue):
            self.emit(msl.CONTINUE)
        elif isinstance(node, SetFlag):
            self._uses_flag = True
            self.emit(msl.assign(msl.FLAG_VAR, str(node.value)))
        elif isinstance(node, IfFlag):
            self._uses_flag = True
            self.emit(msl.if_(msl.binary("==", msl.FLAG_VAR, str(node.value))))
            self._nested(node.then)
            if node.else_.items:
                self.emit(msl.ELSE)
                self._nested(node.else_)
            self.emit(msl.END)
        elif isinstance(node, FunctionEnd):
            term = self.func_ir.blocks[node.label].terminator
            self.loc = term.loc
            self._lower_exit(term)
        else:  # pragma: no cover - the structurizer's node set is closed
            raise KernelCompilationError(f"internal error: unknown structured node {node!r}")

    def _nested(self, seq) -> None:
        self._indent += 1
        self._emit_tree(seq)
        self._indent -= 1

    def _lower_exit(self, term) -> None:
        if isinstance(term, ir.Return):
            rty = self.tf.return_type
            if self.is_kernel or isinstance(rty, types.NoneType):
                self.emit(msl.return_())
            else:
                self.emit(msl.return_(self.cast(self.value(term.value), rty)))
        else:
            kernel_io.lower_raise(self, term)

    # -- statements ------------------------------------------------------------------------

    def lower_stmt(self, stmt) -> None:
        if isinstance(stmt, ir.Assign):
            self._lower_assign(stmt)
        elif isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
            self._lower_setitem(stmt)
        elif isinstance(stmt, ir.SetAttr):
            target = self.value(stmt.target)
            if not isinstance(types.unliteral(target.type), types.Record):
                self.error(f"setting attribute '{stmt.attr}' is not supported in Metal kernels (record fields "
                           "are)")
            records.set_field(self, target, stmt.attr, self.value(stmt.value))
        elif isinstance(stmt, ir.Del):
            pass
        elif isinstance(stmt, ir.Print):
            kernel_io.lower_print(self, stmt)
        else:
            self.error(f"the statement `{stmt}` is not supported in Metal kernels")

    def _lower_setitem(self, stmt) -> None:
        target = self.value(stmt.target)
        tty = types.unliteral(target.type)
        if isinstance(tty, types.Record) and isinstance(stmt, ir.StaticSetItem) and isinstance(stmt.index, (str, int)):
            records.set_field(self, target, records.field_name(self, target, stmt.index), self.value(stmt.value))
        elif isinstance(tty, types.Array) and isinstance(tty.dtype, types.Record):
            records.set_element(self, target, self._index_value(stmt), self.value(stmt.value))
        else:
            arrays.lower_setitem(self, stmt)

    def _index_value(self, node) -> Value:
        """The index of a (static) getitem or setitem as a value."""
        var = node.index_var if "static" in getattr(node, "op", type(node).__name__.lower()) else None
        if var is None and isinstance(node.index, ir.Var):
            var = node.index
        if var is not None and var.name in self.typemap:
            return self.value(var)
        const = node.index
        if isinstance(const, int):
            return Value(msl.long_literal(const), types.IntegerLiteral(const))
        self.error(f"index {const!r} is not supported in Metal kernels")

    def _lower_assign(self, stmt: ir.Assign) -> None:
        target = stmt.target
        tty = self.typemap[target.name]
        tname = self.module.type_name(tty)
        value = stmt.value
        if tname is None:
            # A compile-time-only value (a module, a function, a class): nothing to emit. Calls
            # that return nothing still have to run; an exception's construction is not one (raise
            # reads the constant arguments).
            if isinstance(value, ir.Expr) and value.op == "call" and not isinstance(tty, types.ExceptionInstance):
                result = self.lower_expr(value, target)
                if result is not None and result.expr:
                    self.emit(msl.statement(result.expr))
            return
        result = self.lower_value(value, target)
        if result is None:
            return
        self.emit(msl.assign(self.var(target.name), self.cast(result, tty)))

    def lower_value(self, value, target) -> Value | None:
        if isinstance(value, ir.Var):
            return self.value(value)
        if isinstance(value, ir.Arg):
            return self.lower_arg(value)
        if isinstance(value, (ir.Global, ir.FreeVar)):
            fn = lowerings.find_value(value.value)
            if fn is not None:
                return fn(self, self.typemap[target.name])
        if isinstance(value, (ir.Const, ir.Global, ir.FreeVar)):
            return self.lower_constant(value.value, self.typemap[target.name])
        if isinstance(value, ir.Expr):
            return self.lower_expr(value, target)
        self.error(f"`{value}` is not supported in Metal kernels")

    def lower_constant(self, pyvalue, ty) -> Value:
        return constants.lower_constant(self, pyvalue, ty)

    # -- expressions -----------------------------------------------------------------------

    def lower_expr(self, expr: ir.Expr, target) -> Value | None:
        op = expr.op
        if op in ("binop", "inplace_binop"):
            fn = expr.fn if op == "binop" else expr.immutable_fn
            sig = self.calltypes[expr]
            return operators.lower_binop(self, operators.BINARY_SYMBOLS.get(fn, fn), sig, self.value(expr.lhs),
                                         self.value(expr.rhs))
        if op == "unary":
            sig = self.calltypes[expr]
            fn = operators.UNARY_SYMBOLS.get(expr.fn, expr.fn)
            return operators.lower_unary(self, fn, sig, self.value(expr.value))
        if op == "call":
            return calls.lower_call(self, expr)
        if op == "getattr":
            return self.lower_getattr(expr, target)
        if op in ("getitem", "static_getitem", "typed_getitem"):
            base = self.value(expr.value)
            bty = types.unliteral(base.type)
            if isinstance(bty, types.Record) and op == "static_getitem" and isinstance(expr.index, (str, int)):
                name = records.field_name(self, base, expr.index)
                return records.get_field(self, base, name, self.typemap[target.name])
            if isinstance(bty, types.Array) and isinstance(bty.dtype, types.Record):
                return records.element(self, base, self._index_value(expr))
            return arrays.lower_getitem(self, expr, target)
        if op == "build_tuple":
            tty = self.typemap[target.name]
            items = [self.cast(self.value(v), t) for v, t in zip(expr.items, tty.types)]
            return Value(msl.aggregate(self.msl_type(tty), items), tty)
        if op == "exhaust_iter":
            return self.value(expr.value)
        if op == "pair_first":
            return Value(msl.member(self.var(expr.value.name), "first"), self.typemap[expr.value.name].first_type)
        if op == "pair_second":
            return Value(msl.member(self.var(expr.value.name), "second"),
                         self.typemap[expr.value.name].second_type)
        if op == "getiter":
            return self.lower_getiter(expr, target)
        if op == "iternext":
            return self.lower_iternext(expr, target)
        if op == "cast":
            return self.value(expr.value)
        self.error(f"the expression `{expr}` ({op}) is not supported in Metal kernels")

    def lower_getiter(self, expr, target) -> Value:
        src = self.value(expr.value)
        tty = self.typemap[target.name]
        if isinstance(src.type, types.RangeType):
            return Value(msl.call("nm_getiter", src.expr), tty)
        if isinstance(src.type, types.UniTuple):
            return Value(msl.aggregate(self.msl_type(tty), [src.expr, msl.long_literal(0)]), tty)
        self.error(f"iterating over {src.type} is not supported in Metal kernels; iterate over a "
                   "range() or a tuple")

    def lower_iternext(self, expr, target) -> Value:
        it = self.value(expr.value)
        tty = self.typemap[target.name]
        if isinstance(it.type, types.RangeIteratorType):
            return Value(msl.call("nm_iternext", it.expr), tty)
        if isinstance(it.type, types.UniTupleIter):
            n = it.type.container.count
            pair = self.tmp(tty)
            position = msl.member(it.expr, "i")
            self.emit(msl.assign(msl.member(pair, "second"), msl.binary("<", position, msl.long_literal(n))))
            self.emit(msl.if_(msl.member(pair, "second")))
            self._indent += 1
            item = conversions.tuple_item(self, Value(msl.member(it.expr, "t"), it.type.container), position)
            self.emit(msl.assign(msl.member(pair, "first"), item))
            self.emit(msl.add_assign(position, msl.long_literal(1)))
            self._indent -= 1
            self.emit(msl.END)
            return Value(pair, tty)
        self.error(f"iterating over {it.type} is not supported in Metal kernels")

    def resolve(self, var: ir.Var):
        """The compile-time Python object a variable holds (a function, module, stub), or raise."""
        try:
            d = self.func_ir.get_definition(var)
        except KeyError:
            self.error(f"cannot tell at compile time which function '{var.name}' is")
        if isinstance(d, ir.Var):
            return self.resolve(d)
        if isinstance(d, (ir.Global, ir.FreeVar, ir.Const)):
            return d.value
        if isinstance(d, ir.Expr) and d.op == "getattr":
            base = self.resolve(d.value)
            return getattr(base, d.attr)
        if isinstance(d, ir.Arg):
            # A device function passed as an argument: its type (one per function) names it.
            key = _function_of_type(self.tf.argtypes[d.index])
            if key is not None:
                return key
        self.error(f"cannot tell at compile time which function '{var.name}' is; call functions by name")

    def lower_getattr(self, expr: ir.Expr, target) -> Value | None:
        base = self.value(expr.value)
        tty = self.typemap[target.name]
        if isinstance(base.type, types.Module):
            obj = getattr(base.type.pymod, expr.attr)
            fn = lowerings.find_value(obj)
            if fn is not None:
                return fn(self, tty)
            if self.module.type_name(tty) is None:
                return None
            return self.lower_constant(obj, tty)
        if isinstance(base.type, types.Record):
            return records.get_field(self, base, expr.attr, tty)
        if isinstance(base.type, types.EnumClass):
            return self.lower_constant(getattr(base.type.instance_class, expr.attr), tty)
        fn = lowerings.find_attribute(base.type, expr.attr)
        if fn is not None:
            return fn(self, base, expr.attr, tty)
        if isinstance(base.type, types.Array):
            return arrays.lower_array_attribute(self, base, expr.attr, tty)
        if isinstance(base.type, types.BaseTuple) and self.module.type_name(tty) is None:
            return None
        self.error(f"attribute '{expr.attr}' of {base.type} is not supported in Metal kernels")

    # -- calls -----------------------------------------------------------------------------

    def lower_device_call(self, devfn: DeviceFunctionBase, argtypes, args: list[Value]) -> Value | None:
        """A call of a device function (lowered into this module once per argument types)."""
        name, rtype = self.module.device_function(devfn, argtypes)
        actual = [self.cast(a, t) for a, t in zip(args, argtypes) if self.module.type_name(t) is not None]
        call = msl.call(name, msl.ENV_PARAM, *actual)
        if self.module.may_raise(name):
            # The callee raised: leave this function too (as Numba's calling convention does).
            self.raises = True
            result = None
            if isinstance(rtype, types.NoneType):
                self.emit(msl.statement(call))
            else:
                result = Value(self.tmp(rtype, call), rtype)
            self.emit(msl.if_statement(msl.unary("*", self.env("raised")), self.return_after_raise()))
            return result
        if isinstance(rtype, types.NoneType):
            self.emit(msl.statement(call))
            return None
        return Value(call, rtype)


def _function_of_type(ty):
    """The device function a function type stands for (the key of its one template), or None."""
    templates = getattr(ty, "templates", None) if isinstance(ty, types.Function) else None
    if templates and len(templates) == 1 and isinstance(templates[0].key, DeviceFunctionBase):
        return templates[0].key
    return None


def _flatten_scalars(ty, path=()):
    """(path, type) of every scalar field a scalar argument is passed in: tuple items by index, a complex
    number as its parts (abi.COMPLEX_PARTS, read by attribute on the host)."""
    ty = types.unliteral(ty)
    if isinstance(ty, types.BaseTuple):
        for k, t in enumerate(ty.types):
            yield from _flatten_scalars(t, path + (k,))
    elif isinstance(ty, types.Complex):
        for part in abi.COMPLEX_PARTS:
            yield path + (part,), ty.underlying_float
    else:
        yield path, ty


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def lower_kernel(tf: TypedFunction, *, debug: bool = False,
                 exact_float64: bool = False) -> tuple[str, abi.KernelABI]:
    """MSL source and ABI of a kernel (``exact_float64``: see ``ModuleBuilder``)."""
    source, kernel_abi, _ = lower_kernel_linked(tf, debug=debug, exact_float64=exact_float64)
    return source, kernel_abi


def lower_kernel_linked(tf: TypedFunction, *, debug: bool = False, exact_float64: bool = False,
                        link=()) -> tuple[str, abi.KernelABI, tuple]:
    """MSL source, ABI and linked files ((path, digest) of each) of a kernel; ``link``: (path, text,
    digest) of each MSL file the kernel links itself (``@metal.jit(link=...)``), placed first.

    A kernel whose code (or a device function it calls) fences device memory across threadgroups is
    lowered a second time with every device pointer ``coherent(device)``: the fence is found while
    lowering, after types are already spelt.
    """
    source, kernel_abi, module = _lower_kernel(tf, debug, False, exact_float64, link)
    if module.fences_device_memory:
        source, kernel_abi, module = _lower_kernel(tf, debug, True, exact_float64, link)
    return source, kernel_abi, tuple(module.linked)


def _lower_kernel(tf, debug, coherent, exact_float64, link):
    module = ModuleBuilder(tf.name, debug=debug, coherent=coherent, exact_float64=exact_float64)
    for path, text, digest in link:
        module.link(path, text, digest)
    lowering = FunctionLowering(module, tf, kind="kernel", name=function_name(tf, prefix="nm_"))
    module.kernel_text = lowering.lower()
    return module.render(), lowering.abi, module


def lower_device_function(tf: TypedFunction, *, exact_float64: bool = False) -> str:
    """MSL source of a device function on its own (for `compile_msl(..., device=True)`)."""
    module = ModuleBuilder(tf.name, exact_float64=exact_float64)
    module.kernel_text = FunctionLowering(module, tf, kind="device", name=function_name(tf)).lower()
    return module.render()
