"""Typed Numba IR → MSL source.

``ModuleBuilder`` is one MSL translation unit (prelude sections, type definitions, device functions,
the kernel). ``FunctionLowering`` turns one typed function into MSL: it structures the control-flow
graph (``structurize``), declares one MSL local per IR variable (the IR is not in SSA form, so there
is nothing to destroy) and lowers each statement. Spellings come from :mod:`.msl`; calls and
attributes of the kernel API come from :mod:`.lowering`'s registry.
"""

from __future__ import annotations

import hashlib
import operator

from numba.core import ir, types

from numba_metal.errors import KernelCompilationError, UnsupportedFeatureError

from . import msl
from .frontend import TypedFunction, loc_of
from .conversions import cast_expr, truth, tuple_item  # noqa: F401  (re-exported)
from .lowering import Value, registry as lowerings
from .msl import MAX_THREADGROUP_MEMORY
from .plan import ArgField, ArrayBinding, LaunchPlan
from .structurize import (Break, Code, Continue, DoOnce, FunctionEnd, If, IfFlag, Loop, Seq, SetFlag,
                          StructureError, skip_empty_blocks, structurize)

#: Numba types that never exist at run time: modules, functions, classes, strings used as keywords.
_COMPILE_TIME_ONLY = (types.Module, types.Function, types.NumberClass, types.Dispatcher,
                      types.BoundFunction, types.DType, types.StringLiteral, types.UnicodeType,
                      types.Omitted, types.Dummy, types.NoneType, types.TypeRef,
                      types.Opaque, types.EnumClass, types.Callable)


class ModuleBuilder:
    """Collects everything one MSL translation unit needs, then renders it in dependency order."""

    def __init__(self, *, debug: bool = False, fastmath: bool = False):
        self.debug = debug
        self.fastmath = fastmath
        self.snippets: set[str] = {"base", "ctx"}
        self.uses_mathlib = False
        self._type_names: dict = {}
        self._struct_defs: list[str] = []
        self._constants: dict = {}
        self._functions: list[str] = []
        self._device_functions: dict = {}
        self._in_progress: set = set()
        self.kernel_text = ""
        self.uses_threadgroup_counter = False
        self.uses_dynamic_shared = False
        self.pool_bytes = 0   # shared arrays of device functions, in one threadgroup pool
        self.array_names: list[str] = []
        self.lines: dict[int, tuple[str, int]] = {}

    # -- prelude ---------------------------------------------------------------------------

    def need(self, snippet: str) -> None:
        if snippet in msl.MATHLIB_FUNCTIONS or snippet == "mathlib":
            self.uses_mathlib = True
        else:
            self.snippets.add(snippet)

    # -- types -----------------------------------------------------------------------------

    def type_name(self, ty) -> str | None:
        """MSL spelling of a Numba type, defining a struct for it if needed; None if the type has no
        run-time representation (modules, functions, classes...)."""
        if isinstance(ty, types.Literal) and not isinstance(ty, types.StringLiteral):
            ty = ty.literal_type
        name = msl.scalar_type(ty)
        if name is not None:
            return name
        if isinstance(ty, _COMPILE_TIME_ONLY) or _is_kernel_api_type(ty):
            return None
        if isinstance(ty, types.SliceType):
            raise UnsupportedFeatureError("slicing is not supported inside Metal kernels (integer and tuple "
                                          "indexing are); slice device arrays on the host instead")
        if isinstance(ty, types.BaseTuple):
            ty = canonical_tuple(ty)
        key = ty
        if key in self._type_names:
            return self._type_names[key]
        if isinstance(ty, types.Array):
            self.need("array")
            elem = self.element_type_name(ty.dtype, ty)
            name = f"nm_arr<{msl.pointer(array_space(ty), elem)}, {ty.ndim}>"
        elif isinstance(ty, types.BaseTuple):
            members = [self.type_name(t) for t in ty.types]
            if any(m is None for m in members):
                raise UnsupportedFeatureError(f"a tuple holding {ty} cannot be used at run time in a kernel")
            name = f"nm_tuple{len(self._struct_defs)}"
            fields = "".join(f" {m} f{i};" for i, m in enumerate(members))
            self._struct_defs.append(f"struct {name} {{{fields} }};")
        elif isinstance(ty, types.Pair):
            self.need("pair")
            name = f"nm_pair<{self.require_type(ty.first_type)}, {self.require_type(ty.second_type)}>"
        elif isinstance(ty, types.RangeType):
            self.need("range")
            name = f"nm_range<{self.require_type(ty.dtype)}>"
        elif isinstance(ty, types.RangeIteratorType):
            self.need("range")
            name = f"nm_range_iter<{self.require_type(ty.yield_type)}>"
        elif isinstance(ty, types.UniTupleIter):
            tup = self.require_type(ty.container)
            name = f"nm_tupleiter{len(self._struct_defs)}"
            self._struct_defs.append(f"struct {name} {{ {tup} t; long i; }};")
        else:
            raise UnsupportedFeatureError(f"values of type {ty} are not supported in Metal kernels")
        self._type_names[key] = name
        return name

    def require_type(self, ty) -> str:
        name = self.type_name(ty)
        if name is None:
            raise UnsupportedFeatureError(f"values of type {ty} cannot be used at run time in a kernel")
        return name

    def element_type_name(self, dtype, arrty=None) -> str:
        name = msl.scalar_type(dtype)
        if name is None or dtype == types.float64:
            what = f"arrays of {dtype}"
            hint = "; use float32" if dtype == types.float64 else ""
            raise UnsupportedFeatureError(f"{what} are not supported on Metal (Apple GPUs have no float64)"
                                          f"{hint}" if dtype == types.float64 else
                                          f"{what} are not supported in Metal kernels")
        return name

    # -- functions -------------------------------------------------------------------------

    def device_function(self, devfn, argtypes) -> tuple[str, types.Type]:
        """Lower a device function for ``argtypes`` into this module (once); returns (name, return type)."""
        key = (devfn, tuple(argtypes))
        if key in self._device_functions:
            return self._device_functions[key]
        tf = devfn.typed(tuple(argtypes))
        name = "nm_f_" + _mangle(tf.name, argtypes)
        lowering = FunctionLowering(self, tf, kind="device", name=name)
        text = lowering.lower()
        self._device_functions[key] = (name, tf.return_type)
        self._functions.append(text)
        return name, tf.return_type

    def allocate_shared_pool(self, nbytes: int) -> int:
        """Byte offset of a device function's shared array in the kernel's threadgroup pool."""
        offset = self.pool_bytes
        self.pool_bytes = offset + (nbytes + 15) // 16 * 16
        return offset

    def constant_array(self, elem: str, values: list[str]) -> str:
        """Define a program-scope constant array and return its name."""
        body = ", ".join(values)
        key = (elem, body)
        if key in self._constants:
            return self._constants[key]
        name = f"nm_const{len(self._struct_defs)}"
        self._constants[key] = name
        self._struct_defs.append(f"constant {elem} {name}[{len(values)}] = {{{body}}};")
        return name

    def render(self) -> str:
        parts = [msl.HEADER]
        for snippet in msl.PRELUDE.closure(self.snippets):
            parts.append(msl.PRELUDE.text(snippet))
        if self.uses_mathlib:
            parts.append(_mathlib_text())
        parts.extend(d + "\n" for d in self._struct_defs)
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


def _mathlib_text() -> str:
    import os
    with open(os.path.join(os.path.dirname(__file__), "mathlib.metal"), encoding="utf-8") as f:
        return f.read()


def array_space(ty) -> str:
    """Address space of an array type's data: kernel-API array types say theirs; read-only arrays are
    module globals baked in as constants; the others are device buffers."""
    space = getattr(ty, "address_space", None)
    if space is not None:
        return space
    return "device" if ty.mutable else "constant"


def _is_kernel_api_type(ty) -> bool:
    return getattr(ty, "compile_time_only", False)


def _mangle(name: str, argtypes) -> str:
    digest = hashlib.sha1(repr(tuple(str(t) for t in argtypes)).encode()).hexdigest()[:8]
    return msl.identifier(name, prefix="") + "_" + digest


# ---------------------------------------------------------------------------------------------


_BINOPS = {
    operator.add: "+", operator.iadd: "+", operator.sub: "-", operator.isub: "-",
    operator.mul: "*", operator.imul: "*", operator.truediv: "/", operator.itruediv: "/",
    operator.floordiv: "//", operator.ifloordiv: "//", operator.mod: "%", operator.imod: "%",
    operator.pow: "**", operator.ipow: "**", operator.lshift: "<<", operator.ilshift: "<<",
    operator.rshift: ">>", operator.irshift: ">>", operator.and_: "&", operator.iand: "&",
    operator.or_: "|", operator.ior: "|", operator.xor: "^", operator.ixor: "^",
    operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.eq: "==",
    operator.ne: "!=",
}

_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.not_: "not"}


class FunctionLowering:
    """Lowers one typed function (a kernel or a device function) to MSL text."""

    def __init__(self, module: ModuleBuilder, tf: TypedFunction, *, kind: str, name: str,
                 plan: LaunchPlan | None = None):
        self.module = module
        self.tf = tf
        self.kind = kind
        self.name = name
        self.plan = plan
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
        self._params: list[str] = []
        self._entry: list[str] = []
        self.callee = None
        self.current_call = None

    # -- the lowering-context API used by kernel-API lowerings -------------------------------

    @property
    def is_kernel(self) -> bool:
        return self.kind == "kernel"

    @property
    def debug(self) -> bool:
        return self.module.debug

    def error(self, message: str, cls=UnsupportedFeatureError):
        raise cls(message, loc_of(self.loc) or self.tf.location)

    def need(self, snippet: str) -> None:
        self.module.need(snippet)

    def msl_type(self, ty) -> str:
        try:
            return self.module.require_type(ty)
        except UnsupportedFeatureError as e:
            self.error(e.message)

    def ctx(self, field: str) -> str:
        return f"{msl.CTX_PARAM}.{field}"

    def emit(self, line: str) -> None:
        self._lines.append("    " * self._indent + line)

    def tmp(self, ty, init: str | None = None) -> str:
        self._tmp_count += 1
        name = f"nm_t{self._tmp_count}"
        self._decls.append(f"{self.msl_type(ty)} {name}{{}};")
        if init is not None:
            self.emit(f"{name} = {init};")
        return name

    def declare(self, decl: str) -> None:
        """A declaration at the top of the function body (e.g. a threadgroup array)."""
        self._decls.append(decl)

    def fresh_name(self, prefix: str) -> str:
        self._tmp_count += 1
        return f"{prefix}{self._tmp_count}"

    def require_dynamic_shared(self) -> None:
        """The kernel uses dynamic threadgroup memory (sized by the launch's ``sharedmem``)."""
        self.module.uses_dynamic_shared = True

    def threadgroup_counter(self) -> str:
        """A ``threadgroup atomic_int*`` shared by the threadgroup (declared by the kernel)."""
        self.module.uses_threadgroup_counter = True
        return self.ctx("tgcount")

    def resolve_argument_value(self, i: int):
        """The compile-time Python value of argument ``i`` of the call being lowered."""
        return self.resolve(self.current_call.args[i])

    def line(self) -> int:
        return self.loc.line if self.loc is not None else 0

    def cast(self, value: Value, to) -> str:
        return cast_expr(self, value, to)

    def resolve_current_callee(self):
        """The Python object whose call is being lowered (for lowerings shared by several stubs)."""
        return self.callee

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
        succs = skip_empty_blocks(entry, succs, empty)
        reachable = set(succs)
        self._check_statements(reachable)
        try:
            tree = structurize(entry, succs)
        except StructureError as e:
            self.error(f"control flow of {self.tf.name}() could not be structured: {e}", KernelCompilationError)
        self._declare_variables()
        self._emit_tree(tree)
        signature = self._signature()
        body = []
        body.extend(self._entry)
        body.extend("    " + d for d in self._decls)
        if self._uses_flag:
            body.append(f"    int {msl.FLAG_VAR} = 0;")
        body.extend(self._lines)
        return signature + " {\n" + "\n".join(body) + "\n}\n"

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
        argnames = set(self.tf.arg_names)
        for name in sorted(self.typemap):
            ty = self.typemap[name]
            self.loc = None
            try:
                tname = self.module.type_name(ty)
            except UnsupportedFeatureError as e:
                self._raise_at_definition(name, e)
            if tname is None:
                continue
            self._decls.append(f"{tname} {self.var(name)}{{}};")
        del argnames

    def _raise_at_definition(self, name, exc):
        for block in self.func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and stmt.target.name == name:
                    raise UnsupportedFeatureError(exc.message, loc_of(stmt.loc)) from None
        raise exc

    # -- signature -------------------------------------------------------------------------

    def _signature(self) -> str:
        if self.is_kernel:
            return self._kernel_signature()
        params = [f"thread const {msl.CTX_TYPE}& {msl.CTX_PARAM}"]
        for i, (argname, ty) in enumerate(zip(self.tf.arg_names, self.tf.argtypes)):
            tname = self.module.type_name(ty)
            if tname is None:
                continue
            params.append(f"{tname} p{i}")
        rty = self.tf.return_type
        rname = "void" if isinstance(rty, types.NoneType) else self.msl_type(rty)
        return f"{msl.DEVICE_FUNCTION_QUALIFIER} {rname} {self.name}({', '.join(params)})"

    def _kernel_signature(self) -> str:
        plan = self.plan
        params = []
        slot = 0
        fields: list[ArgField] = []
        for i, (argname, ty) in enumerate(zip(self.tf.arg_names, self.tf.argtypes)):
            if isinstance(ty, types.Array):
                elem = self.module.element_type_name(ty.dtype, ty)
                params.append(f"{msl.pointer('device', elem)} nm_p{i} {msl.buffer_attribute(slot)}")
                plan.arrays.append(ArrayBinding(i, slot, argname, str(ty.dtype), ty.ndim, ty.layout))
                slot += 1
                for k in range(ty.ndim):
                    fields.append(ArgField(f"a{i}_shape{k}", i, ("shape", k), "long", 8, "q"))
                for k in range(ty.ndim):
                    fields.append(ArgField(f"a{i}_stride{k}", i, ("stride", k), "long", 8, "q"))
                if ty.layout not in ("C", "F"):
                    fields.append(ArgField(f"a{i}_origin", i, ("origin",), "long", 8, "q"))
            else:
                for path, sty in _flatten_scalars(ty):
                    if sty == types.float64:
                        raise UnsupportedFeatureError(
                            f"argument '{argname}' is float64, which Apple GPUs do not have; pass "
                            "np.float32 (a Python float is passed as float32)", self.tf.location)
                    mtype = msl.scalar_type(sty)
                    if mtype is None:
                        raise UnsupportedFeatureError(
                            f"argument '{argname}' of type {ty} is not supported by Metal kernels",
                            self.tf.location)
                    size, code = msl.SCALAR_LAYOUT[types.unliteral(sty)]
                    suffix = "".join(f"_{p}" for p in path)
                    what = ("item",) + path if path else ("value",)
                    fields.append(ArgField(f"s{i}{suffix}", i, what, mtype, size, code))
        if slot + (1 if fields else 0) + (1 if self.debug else 0) > msl_max_buffers():
            raise UnsupportedFeatureError(
                f"kernel {self.tf.name}() needs {slot} array buffers plus its argument block, more "
                f"than Metal's {msl_max_buffers()} buffer slots; pass fewer arrays (e.g. stack them "
                "into one 2-D array)", self.tf.location)
        if self.module.uses_dynamic_shared:
            plan.dynamic_threadgroup_memory = True
            fields.append(ArgField("nm_dynshared_bytes", -1, ("dynshared",), "uint", 4, "I"))
        if self.module.pool_bytes:
            plan.static_threadgroup_memory += self.module.pool_bytes
            if plan.static_threadgroup_memory > MAX_THREADGROUP_MEMORY:
                raise UnsupportedFeatureError(
                    f"shared arrays of kernel {self.tf.name}() and its device functions need "
                    f"{plan.static_threadgroup_memory} bytes of threadgroup memory, more than Metal's "
                    f"{MAX_THREADGROUP_MEMORY}; use smaller arrays", self.tf.location)
        # Largest fields first: the struct then has no padding, so host and MSL agree on the layout.
        fields.sort(key=lambda f: -f.size)
        if fields:
            plan.arg_slot = slot
            slot += 1
            struct_name = f"nm_args_{self.name}"
            members = "\n".join(f"    {f.msl_type} {f.name};" for f in fields)
            self.module._struct_defs.append(f"struct {struct_name} {{\n{members}\n}};")
            params.append(f"constant {struct_name}& {msl.ARGS_PARAM} {msl.buffer_attribute(plan.arg_slot)}")
            plan.fields = fields
            plan.arg_format = "<" + "".join(f.code for f in fields)
            size = sum(f.size for f in fields)
            plan.arg_size = (size + 7) // 8 * 8 if any(f.size == 8 for f in fields) else size
        if self.debug:
            plan.error_slot = slot
            params.append(f"device uint* nm_err {msl.buffer_attribute(slot)}")
            slot += 1
        if plan.dynamic_threadgroup_memory:
            params.append(f"threadgroup uchar* nm_dynshared {msl.threadgroup_attribute(0)}")
        for fieldname, mtype, attr in msl.KERNEL_BUILTINS:
            params.append(f"{mtype} nm_b_{fieldname} {msl.builtin_attribute(attr)}")
        entry = [f"    {msl.CTX_TYPE} {msl.CTX_PARAM};"]
        for fieldname, _, _ in msl.KERNEL_BUILTINS:
            entry.append(f"    {msl.CTX_PARAM}.{fieldname} = nm_b_{fieldname};")
        entry.append(f"    {msl.CTX_PARAM}.err = {'nm_err' if self.debug else 'nullptr'};")
        if self.module.uses_threadgroup_counter:
            entry.append("    threadgroup atomic_int nm_tgcount;")
            entry.append(f"    {msl.CTX_PARAM}.tgcount = &nm_tgcount;")
        else:
            entry.append(f"    {msl.CTX_PARAM}.tgcount = nullptr;")
        if self.module.pool_bytes:
            entry.append(f"    threadgroup float4 nm_tgpool[{self.module.pool_bytes // 16}];")
            entry.append(f"    {msl.CTX_PARAM}.tgpool = (threadgroup uchar*)nm_tgpool;")
        else:
            entry.append(f"    {msl.CTX_PARAM}.tgpool = nullptr;")
        if plan.dynamic_threadgroup_memory:
            entry.append(f"    {msl.CTX_PARAM}.dynshared = nm_dynshared;")
            entry.append(f"    {msl.CTX_PARAM}.dynshared_bytes = {msl.ARGS_PARAM}.nm_dynshared_bytes;")
        else:
            entry.append(f"    {msl.CTX_PARAM}.dynshared = nullptr;")
            entry.append(f"    {msl.CTX_PARAM}.dynshared_bytes = 0u;")
        self._entry = entry
        self._kernel_fields = fields
        return f"{msl.KERNEL_QUALIFIER} {self.name}({', '.join(params)})"

    # -- arguments -------------------------------------------------------------------------

    def lower_arg(self, arg: ir.Arg) -> Value:
        i = arg.index
        ty = self.tf.argtypes[i]
        if not self.is_kernel:
            return Value(f"p{i}", ty)
        if isinstance(ty, types.Array):
            tname = self.msl_type(ty)
            data = f"nm_p{i}"
            if ty.layout not in ("C", "F"):
                data = f"(nm_p{i} + {msl.ARGS_PARAM}.a{i}_origin)"
            shape = ", ".join(f"{msl.ARGS_PARAM}.a{i}_shape{k}" for k in range(ty.ndim))
            strides = ", ".join(f"{msl.ARGS_PARAM}.a{i}_stride{k}" for k in range(ty.ndim))
            return Value(f"{tname}{{{data}, {{{shape}}}, {{{strides}}}}}", ty)
        return Value(self._rebuild_scalar_arg(i, ty, ()), ty)

    def _rebuild_scalar_arg(self, i, ty, path) -> str:
        if isinstance(ty, types.BaseTuple):
            tname = self.msl_type(ty)
            items = [self._rebuild_scalar_arg(i, t, path + (k,)) for k, t in enumerate(ty.types)]
            return f"{tname}{{{', '.join(items)}}}"
        suffix = "".join(f"_{p}" for p in path)
        return f"{msl.ARGS_PARAM}.s{i}{suffix}"

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
            cond = truth(self, self.value(term.cond))
            if not node.then.items and node.else_.items:
                self.emit(f"if (!{cond}) {{")
                self._nested(node.else_)
                self.emit("}")
                return
            self.emit(f"if ({cond}) {{")
            self._nested(node.then)
            if node.else_.items:
                self.emit("} else {")
                self._nested(node.else_)
            self.emit("}")
        elif isinstance(node, Loop):
            self.emit("while (true) {")
            self._nested(node.body)
            self.emit("}")
        elif isinstance(node, DoOnce):
            self.emit("do {")
            self._nested(node.body)
            self.emit("} while (false);")
        elif isinstance(node, Break):
            self.emit("break;")
        elif isinstance(node, Continue):
            self.emit("continue;")
        elif isinstance(node, SetFlag):
            self._uses_flag = True
            self.emit(f"{msl.FLAG_VAR} = {node.value};")
        elif isinstance(node, IfFlag):
            self._uses_flag = True
            self.emit(f"if ({msl.FLAG_VAR} == {node.value}) {{")
            self._nested(node.then)
            if node.else_.items:
                self.emit("} else {")
                self._nested(node.else_)
            self.emit("}")
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
                self.emit("return;")
            else:
                self.emit(f"return {self.cast(self.value(term.value), rty)};")
        else:
            self.error("`raise` is not supported in Metal kernels")

    # -- statements ------------------------------------------------------------------------

    def lower_stmt(self, stmt) -> None:
        if isinstance(stmt, ir.Assign):
            self._lower_assign(stmt)
        elif isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
            from .arrays import lower_setitem
            lower_setitem(self, stmt)
        elif isinstance(stmt, ir.Del):
            pass
        else:
            self.error(f"the statement `{stmt}` is not supported in Metal kernels")

    def _lower_assign(self, stmt: ir.Assign) -> None:
        target = stmt.target
        tty = self.typemap[target.name]
        tname = self.module.type_name(tty)
        value = stmt.value
        if tname is None:
            # A compile-time-only value (a module, a function, a class): nothing to emit. Calls
            # that return nothing still have to run.
            if isinstance(value, ir.Expr) and value.op == "call":
                result = self.lower_expr(value, target)
                if result is not None and result.expr:
                    self.emit(f"{result.expr};")
            return
        result = self.lower_value(value, target)
        if result is None:
            return
        self.emit(f"{self.var(target.name)} = {self.cast(result, tty)};")

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
        from .constants import lower_constant
        return lower_constant(self, pyvalue, ty)

    # -- expressions -----------------------------------------------------------------------

    def lower_expr(self, expr: ir.Expr, target) -> Value | None:
        from . import arrays, operators
        op = expr.op
        if op in ("binop", "inplace_binop"):
            fn = expr.fn if op == "binop" else expr.immutable_fn
            sig = self.calltypes[expr]
            return operators.lower_binop(self, _BINOPS.get(fn, fn), sig, self.value(expr.lhs),
                                         self.value(expr.rhs))
        if op == "unary":
            sig = self.calltypes[expr]
            fn = _UNARY.get(expr.fn, expr.fn)
            return operators.lower_unary(self, fn, sig, self.value(expr.value))
        if op == "call":
            return self.lower_call(expr, target)
        if op == "getattr":
            return self.lower_getattr(expr, target)
        if op in ("getitem", "static_getitem", "typed_getitem"):
            return arrays.lower_getitem(self, expr, target)
        if op == "build_tuple":
            tty = self.typemap[target.name]
            items = [self.cast(self.value(v), t) for v, t in zip(expr.items, tty.types)]
            return Value(f"{self.msl_type(tty)}{{{', '.join(items)}}}", tty)
        if op == "exhaust_iter":
            return self.value(expr.value)
        if op == "pair_first":
            return Value(f"{self.var(expr.value.name)}.first", self.typemap[expr.value.name].first_type)
        if op == "pair_second":
            return Value(f"{self.var(expr.value.name)}.second", self.typemap[expr.value.name].second_type)
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
            return Value(f"nm_getiter({src.expr})", tty)
        if isinstance(src.type, types.UniTuple):
            return Value(f"{self.msl_type(tty)}{{{src.expr}, 0l}}", tty)
        self.error(f"iterating over {src.type} is not supported in Metal kernels; iterate over a "
                   "range() or a tuple")

    def lower_iternext(self, expr, target) -> Value:
        it = self.value(expr.value)
        tty = self.typemap[target.name]
        if isinstance(it.type, types.RangeIteratorType):
            return Value(f"nm_iternext({it.expr})", tty)
        if isinstance(it.type, types.UniTupleIter):
            n = it.type.container.count
            pair = self.tmp(tty)
            self.emit(f"{pair}.second = {it.expr}.i < {n}l;")
            self.emit(f"if ({pair}.second) {{")
            self._indent += 1
            item = tuple_item(self, Value(f"{it.expr}.t", it.type.container), f"{it.expr}.i")
            self.emit(f"{pair}.first = {item};")
            self.emit(f"{it.expr}.i += 1l;")
            self._indent -= 1
            self.emit("}")
            return Value(pair, tty)
        self.error(f"iterating over {it.type} is not supported in Metal kernels")

    def resolve(self, var: ir.Var):
        """The compile-time Python object a variable holds (a function, module, stub), or raise."""
        defs = self.func_ir._definitions.get(var.name, [])
        if len(defs) != 1:
            self.error(f"cannot tell at compile time which function '{var.name}' is")
        d = defs[0]
        if isinstance(d, ir.Var):
            return self.resolve(d)
        if isinstance(d, (ir.Global, ir.FreeVar, ir.Const)):
            return d.value
        if isinstance(d, ir.Expr) and d.op == "getattr":
            base = self.resolve(d.value)
            return getattr(base, d.attr)
        self.error(f"cannot tell at compile time which function '{var.name}' is; call functions by name")

    def lower_call(self, expr: ir.Expr, target) -> Value | None:
        from .calls import lower_call
        return lower_call(self, expr, target)

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
        fn = lowerings.find_attribute(base.type, expr.attr)
        if fn is not None:
            return fn(self, base, expr.attr, tty)
        if isinstance(base.type, types.Array):
            from .arrays import lower_array_attribute
            return lower_array_attribute(self, base, expr.attr, tty)
        if isinstance(base.type, types.BaseTuple) and self.module.type_name(tty) is None:
            return None
        self.error(f"attribute '{expr.attr}' of {base.type} is not supported in Metal kernels")


def msl_max_buffers() -> int:
    return msl.MAX_BUFFER_SLOTS


def _flatten_scalars(ty, path=()):
    if isinstance(ty, types.BaseTuple):
        for k, t in enumerate(ty.types):
            yield from _flatten_scalars(t, path + (k,))
    else:
        yield path, types.unliteral(ty)


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def lower_kernel(tf: TypedFunction, *, debug: bool = False, fastmath: bool = False,
                 entry_name: str | None = None) -> tuple[str, LaunchPlan]:
    """MSL source and launch plan of a kernel."""
    module = ModuleBuilder(debug=debug, fastmath=fastmath)
    name = entry_name or ("nm_" + _mangle(tf.name, tf.argtypes))
    plan = LaunchPlan(entry_name=name)
    lowering = FunctionLowering(module, tf, kind="kernel", name=name, plan=plan)
    text = lowering.lower()
    module.kernel_text = text
    plan.array_names = module.array_names
    plan.lines = module.lines
    return module.render(), plan


def lower_device_function(tf: TypedFunction, devfn=None, *, fastmath: bool = False) -> str:
    """MSL source of a device function on its own (for `compile_msl(..., device=True)`)."""
    module = ModuleBuilder(fastmath=fastmath)
    name = "nm_f_" + _mangle(tf.name, tf.argtypes)
    lowering = FunctionLowering(module, tf, kind="device", name=name)
    module._functions.append(lowering.lower())
    return module.render()
