"""Typed Numba IR → MSL source: the lowering of functions.

``FunctionLowering`` turns one typed function into MSL, inside the translation unit a
:class:`~.module_builder.ModuleBuilder` collects (which spells types); its interface (signature, the
kernel's ABI and environment, its arguments) comes from :mod:`.interface`. It structures the control-flow
graph (``structurize``), declares one MSL local per IR variable (the IR is not in SSA form, so there
is nothing to destroy) and lowers each statement. Syntax comes from :mod:`.msl`; operators from
:mod:`.operators`' table; calls, attributes and values of the kernel API from :mod:`.lowering`'s
registry, which the kernel-API families fill.

The methods of ``FunctionLowering`` that do not start with an underscore are what the lowerings of the
kernel-API families use (they receive it as ``lc``).
"""

from __future__ import annotations

from collections import Counter

from numba.core import ir, types

from numba_metal.errors import KernelCompilationError, UnsupportedFeatureError

from . import (abi, arrays, barriers, calls, constants, conversions, index32, interface, kernel_io, msl, operators,
               ranges, records)
from . import iterators, slicing
from .arraytypes import RECORD_WORD
from .devicefn import DeviceFunctionBase
from .frontend import TypedFunction, loc_of
from .lowering import Value, registry as lowerings
from .module_builder import ModuleBuilder, function_name
from .structurize import (Break, Code, Continue, DoOnce, FunctionEnd, If, IfFlag, Loop, Seq, SetFlag,
                          StructureError, skip_empty_blocks, structurize)


class FunctionLowering(index32.IndexFacts):
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
        self.index32: frozenset = frozenset()   # integer variables computed in 32 bits (index32.py)
        self._ranges32: dict = {}                 # range loops iterated in 32 bits: {variable: MSL type}
        self._strides: dict = {}                  # {array expression or variable: its constant strides}
        self._row_offsets: dict = {}              # arrays.py's shared row offsets in this block: {key: temp}
        self._block, self._position, self._assignments = None, 0, None   # for defined_here
        self._index32_idents: set = set()

    # -- what the kernel-API lowerings use --------------------------------------------------

    @property
    def is_kernel(self) -> bool:
        return self.kind == "kernel"

    @property
    def debug(self) -> bool:
        return self.module.debug

    def error(self, message: str, cls=UnsupportedFeatureError):
        raise cls(message, loc_of(self.loc) or self.tf.location)

    def need(self, name: str, first_type: str | None = None) -> None:
        """Include the MSL library's definition of ``name`` (a function...: ModuleBuilder.need)."""
        self.module.need(name, first_type)

    def library_call(self, function: str, *args: str) -> str:
        """A call of an entry point of the emulated float64, float64 math or complex library (its
        section is included)."""
        self.module.need(function)
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

    def open_block(self, header: str) -> None:
        """Emit ``header`` (an ``if (...) {``) and indent the lines emitted until ``close_block``."""
        self.emit(header)
        self._indent += 1

    def close_block(self) -> None:
        self._indent -= 1
        self.emit(msl.END)

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

    def definition(self, var: ir.Var):
        """What the only assignment of ``var`` assigns, through plain copies (None if it has several)."""
        for _ in range(8):
            try:
                d = self.func_ir.get_definition(var)
            except (KeyError, ir.NotDefinedError):
                return None
            if not isinstance(d, ir.Var):
                return d
            var = d
        return None

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

    def local_array(self, element: str, length: int, nbytes: int, words: bool = False) -> str:
        """A zero-initialised array of ``length`` elements private to each thread; returns its name (with
        ``words``, a pointer to it held in 16-byte words: records, read at their fields' alignments)."""
        try:
            self.module.reserve_local_memory(nbytes)
        except UnsupportedFeatureError as e:
            self.error(e.message)
        name = self.fresh_name("nm_local")
        if words:
            self.declare(msl.declare_array(RECORD_WORD, name, -(-nbytes // 16), zero=True))
            return msl.pointer_cast(msl.pointer("thread", element), name)
        self.declare(msl.declare_array(element, name, length, zero=True))
        if self.module.sanitize:
            from . import sanitize
            sanitize.local_shadow(self, name, nbytes)
        return name

    def shared_array(self, element: str, length: int, nbytes: int, words: bool = False) -> str:
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
        if words:
            # Records: 16-byte words, so that every field is as aligned as in device memory.
            self.declare(msl.declare_array(RECORD_WORD, name, -(-nbytes // 16), space="threadgroup"))
            return msl.pointer_cast(msl.pointer("threadgroup", element), name)
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

    def barrier_fences_device_memory(self) -> bool:
        """The barrier call being lowered must fence device memory too (barriers.py): always in a device
        function, whose callers are unknown."""
        return not self.is_kernel or id(self.call) not in barriers.threadgroup_only(self.tf)

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
        self.index32 = index32.narrowed(self.tf, lambda ty, var: arrays.narrow_access(self, ty, var),
                                        ranges.bounds(self.tf))
        self._ranges32 = index32.narrow_ranges(self.tf, ranges.bounds(self.tf)) if not self.debug else {}
        self._index32_idents = {self.var(name) for name in self.index32}
        self._declare_variables()
        self._emit_tree(tree)
        if self.is_kernel:
            self.abi = interface.kernel_abi(self)
            header = interface.kernel_signature(self.abi)
            struct_definition = interface.argument_struct(self.abi)
            if struct_definition is not None:
                self.module.define(struct_definition)
            entry = ["    " + line for line in interface.kernel_environment(self)]
        else:
            header = interface.device_function_header(self)
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
            tname = "uint" if name in self.index32 else self._ranges32.get(name, tname)
            self._decls.append(msl.declare(tname, self.var(name)))

    def _raise_at_definition(self, name, exc):
        for block in self.func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and stmt.target.name == name:
                    raise UnsupportedFeatureError(exc.message, loc_of(stmt.loc)) from None
        raise exc

    # -- structured control flow -----------------------------------------------------------

    def _emit_tree(self, node) -> None:
        if isinstance(node, Seq):
            for item in node.items:
                self._emit_tree(item)
        elif isinstance(node, Code):
            self._row_offsets = {}
            self._block = self.func_ir.blocks[node.label].body
            for self._position, stmt in enumerate(self._block[:-1]):
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
        if self._row_offsets:
            ident = self.var(target.name)
            self._row_offsets = {k: v for k, v in self._row_offsets.items() if ident != k[0] and ident not in k[1]}
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
        if target.name in self.index32:
            self.emit(msl.assign(self.var(target.name), index32.lower_assigned(self, value, target)))
            return
        result = self.lower_value(value, target)
        if result is None:
            return
        if result.expr in self._strides and self.definition(target) is not None:
            self._strides[self.var(target.name)] = self._strides[result.expr]
        if isinstance(tty, types.RangeType) and target.name in self._ranges32:
            self.emit(msl.assign(self.var(target.name), msl.call("nm_range32", result.expr)))
            return
        self.emit(msl.assign(self.var(target.name), self.cast(result, tty)))

    def lower_value(self, value, target) -> Value | None:
        if isinstance(value, ir.Var):
            return self.value(value)
        if isinstance(value, ir.Arg):
            omitted = self.tf.argtypes[value.index]
            if isinstance(omitted, types.Omitted):   # a parameter's default value (devicefn.fold)
                return self.lower_constant(omitted.value, self.typemap[target.name])
            return interface.lower_argument(self, value)
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
            for rewrite in lowerings.find_rewrites(fn):
                result = rewrite(self, expr)
                if result is not None:
                    return result
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
            if isinstance(bty, types.EnumClass):   # Color['red']: the member, a constant (as Color.red)
                key = expr.index if op == "static_getitem" else self.typemap[expr.index.name]
                key = getattr(key, "literal_value", key)
                if not isinstance(key, str):
                    self.error(f"an Enum class is indexed with a constant member name, not {key}")
                return self.lower_constant(bty.instance_class[key], self.typemap[target.name])
            return arrays.lower_getitem(self, expr, target)
        if op == "build_tuple":
            tty = self.typemap[target.name]
            items = [msl.cast(self.msl_type(t), self.var(v.name)) if v.name in self.index32
                     else self.cast(self.value(v), t) for v, t in zip(expr.items, tty.types)]
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
        return self.getiter(self.value(expr.value), self.typemap[target.name])

    def getiter(self, src: Value, tty) -> Value:
        """``iter(src)``: an iterator of type ``tty`` (iterators.py)."""
        return iterators.lower_getiter(self, src, tty)

    def lower_iternext(self, expr, target) -> Value:
        return self.iternext(self.value(expr.value), self.typemap[target.name])

    def iternext(self, it: Value, tty) -> Value:
        """``next(it)``: a pair (item, valid) of type ``tty``; the iterator ``it`` (an lvalue) advances
        (iterators.py)."""
        return iterators.lower_iternext(self, it, tty)

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
            if isinstance(self.tf.argtypes[d.index], types.Omitted):   # a parameter's default value
                return self.tf.argtypes[d.index].value
            # A device function passed as an argument: its type (one per function) names it.
            key = interface.function_of_type(self.tf.argtypes[d.index])
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
        if isinstance(base.type, types.Array) and isinstance(base.type.dtype, types.Record) \
                and expr.attr in base.type.dtype.fields:
            return records.field_view(self, base, expr.attr, tty)
        if isinstance(base.type, types.Array):
            return arrays.lower_array_attribute(self, base, expr.attr, tty)
        if isinstance(base.type, types.BaseTuple) and self.module.type_name(tty) is None:
            return None
        self.error(f"attribute '{expr.attr}' of {base.type} is not supported in Metal kernels")

    # -- calls -----------------------------------------------------------------------------

    def _device_function(self, devfn: DeviceFunctionBase, argtypes) -> tuple[str, types.Type]:
        """Lower a device function for ``argtypes`` into the module (once); returns (name, return type)."""
        key = (devfn, tuple(argtypes))
        known = self.module.lowered_device_function(key)
        if known is not None:
            return known
        tf = devfn.typed(tuple(argtypes))
        lowering = FunctionLowering(self.module, tf, kind="device",
                                    name=self.module.unique_function_name(function_name(tf)))
        text = lowering.lower()
        return self.module.add_device_function(key, lowering.name, tf.return_type, text, lowering.raises)

    def lower_device_call(self, devfn: DeviceFunctionBase, argtypes, args: list[Value]) -> Value | None:
        """A call of a device function (lowered into this module once per argument types)."""
        name, rtype = self._device_function(devfn, argtypes)
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


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def lower_kernel(tf: TypedFunction, *, debug: bool = False,
                 exact_float64: bool = False) -> tuple[str, abi.KernelABI]:
    """MSL source and ABI of a kernel (``exact_float64``: see ``ModuleBuilder``)."""
    source, kernel_abi, _ = lower_kernel_linked(tf, debug=debug, exact_float64=exact_float64)
    return source, kernel_abi


def lower_kernel_linked(tf: TypedFunction, *, debug: bool = False, exact_float64: bool = False,
                        link=(), sanitize: frozenset = frozenset()) -> tuple[str, abi.KernelABI, tuple]:
    """MSL source, ABI and linked files ((path, digest) of each) of a kernel; ``link``: (path, text,
    digest) of each MSL file the kernel links itself (``@metal.jit(link=...)``), placed first.

    A kernel whose code (or a device function it calls) fences device memory across threadgroups is
    lowered a second time with every device pointer ``coherent(device)``: the fence is found while
    lowering, after types are already spelt.
    """
    source, kernel_abi, module = _lower_kernel(tf, debug, False, exact_float64, link, sanitize)
    if module.fences_device_memory:
        source, kernel_abi, module = _lower_kernel(tf, debug, True, exact_float64, link, sanitize)
    return source, kernel_abi, tuple(module.linked)


def _lower_kernel(tf, debug, coherent, exact_float64, link, sanitize=frozenset()):
    module = ModuleBuilder(tf.name, debug=debug, coherent=coherent, exact_float64=exact_float64, sanitize=sanitize)
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
