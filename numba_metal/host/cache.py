"""The disk cache of compiled kernels (``@metal.jit(cache=True)``): never stale, safe to share between
processes, and never a way to plant code. It belongs to the dispatcher, which asks it for a compiled
kernel (:func:`load`) before compiling and gives it what it compiled (:func:`store`); the compiler
never sees it.

What an entry holds: what a new process needs to skip typing and MSL generation, i.e. the kernel's MSL
source and its ABI (compiler/abi.py), plus the fingerprints of everything the compile read from outside the
function's code (below). The device's own compiled form is cached by the runtime: the CPU device keeps
hash-checked objects in ``<cache>/cpu-objects``; on Metal the OS shader cache answers for identical source.

The key (SHA-256) covers: this format; the Python, NumPy, Numba and numba-metal versions and a digest of
numba-metal's compiler sources (``compiler/*.py``, ``compiler/mslib/*``, ``kernel_api/*.py``, ``metal.py``, this
module and ``arguments.py``), so any upgrade or edit of numba-metal starts afresh; the function's code
object (bytecode, constants including nested code, names, line table, file and qualified name), its
default values and the values of its closure cells; the canonical argument types; the options (``debug``,
``fastmath``, ``float64``) and the kernel's own linked MSL files (``link``: each path with the SHA-256 of its
contents). The MSL is a pure function of these and the values below, whatever the device (the compiler
never asks the device anything), so one entry serves every device; device-specific products are keyed by
the device in the runtime's cache.

Never stale: the compile also depends on values the code only names: the globals it loads, module
attributes it reads (``cfg.N``), closure values, and device functions (with, recursively, everything they
depend on). The entry records a fingerprint of each (numbers, strings, NumPy arrays by content, modules by
name, device functions by code and dependencies...); loading re-fingerprints them from the live function's
globals and closure and recompiles (overwriting the entry) on any difference. A kernel depending on a value
that has no reliable fingerprint (an arbitrary object) is simply not cached; the reason is logged at debug
level on the ``numba_metal.cache`` logger. Hand-written MSL is checked by content: the entry records the
path and SHA-256 of every linked file the MSL holds (the kernel's own and those of ``metal.declare_device``
functions it calls, as the compiler read them, ``CompiledKernel.linked``), and loading re-reads each file
and misses on any difference, so an edited ``.metal`` file is never served stale; an entry is not written
if a file changed while the kernel compiled.

Safety: entries are written to a temporary file and renamed (concurrent writers are safe; readers see a
whole old or new entry); an entry is ``NMKC1 <sha256 of payload>\\n`` + a JSON payload (never pickle:
loading must not execute anything), and one that is truncated, corrupt, unparsable, for another key, or
whose contents cannot be used (any failure reading it: JSON nested too deeply, a value of the wrong kind, an
ABI outside Metal's limits, MSL the device's compiler refuses) is ignored and rebuilt. The directory is
``<cache>/kernels`` where ``<cache>`` is the runtime's (:func:`numba_metal.runtime.cache_root`, the one rule:
``NUMBA_METAL_CACHE_DIR``, else ``$NUMBA_CACHE_DIR/numba-metal``, else ``$XDG_CACHE_HOME/numba-metal``, else
``$HOME/.cache/numba-metal``). The rules for what is trusted are the runtime's for its compiled objects
(ObjectCache.swift), so that the two caches are on or off together: ``<cache>`` and ``<cache>/kernels`` are
created 0700 and opened without following a symlink in their place (symlinks further up the path are
followed), and used only if owned by the user and not writable by group or others; entries are opened
relative to the directory's descriptor, without following a symlink or blocking on a FIFO, and used only if
they are regular files owned by the user, not writable by group or others, and at most 256 MB (the MSL of
an entry is compiled and run, so only the user may write entries). A directory that fails these checks turns
the disk cache off with a NumbaMetalWarning naming it and saying why.
"""

from __future__ import annotations

import dis
import enum
import importlib.util
import json
import os
import stat
import sys
import threading
import types as pytypes

import numpy as np

from numba_metal._version import __version__
from numba_metal.errors import NumbaMetalWarning
from numba_metal.compiler.devicefn import DeviceFunctionBase
from numba_metal.compiler.captures import is_captured
from numba_metal.compiler.abi import CompiledKernel, KernelABI
from numba_metal.runtime import cache_root
from numba_metal.runtime.digests import blake2b
from numba_metal.runtime.digests import sha256 as _sha256



class _Log:
    """Debug messages to ``logging.getLogger("numba_metal.cache")``. Without the logging module imported
    nobody can have asked for debug messages, and importing it is a measurable part of a warm start."""

    def debug(self, *args):
        logging = sys.modules.get("logging")
        if logging is None:
            return
        logger = logging.getLogger("numba_metal.cache")
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(*args)


_log = _Log()

FORMAT = 2
_MAGIC = b"NMKC1 "
_HEADER = len(_MAGIC) + 64 + 1


class Unfingerprintable(Exception):
    """A value whose fingerprint could not change when it changes (such kernels are not cached)."""


# ---------------------------------------------------------------------------------------------
# Location
# ---------------------------------------------------------------------------------------------

_dirs: dict = {}
_dirs_lock = threading.Lock()


class _Unsafe(Exception):
    """A cache directory that must not be used (the message says why)."""


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _open_private_directory(path: str, name: str, dir_fd=None) -> int:
    """A descriptor of directory ``name`` (relative to ``dir_fd``; ``path`` names it in messages) that is not
    a symlink and is owned by this user and not writable by group or others: the runtime's rule for its
    object cache (ObjectCache.swift), on the open descriptor. Raises _Unsafe."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as e:
        try:
            is_link = stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
        except OSError:
            is_link = False
        raise _Unsafe(f"{path} is a symbolic link" if is_link else f"{path} cannot be opened: {e.strerror}") from None
    st = os.fstat(fd)
    problem = ("is owned by another user" if st.st_uid != os.geteuid() else
               "is writable by group or others" if st.st_mode & 0o022 else None)
    if problem is not None:
        os.close(fd)
        raise _Unsafe(f"{path} {problem}")
    return fd


def _makedirs(path: str) -> None:
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if parent and parent != path:
        _makedirs(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass


def _directory() -> tuple[str, int] | None:
    """(``<cache>/kernels``, its open descriptor: entries are opened relative to it), created private; None
    (and a warning, once per directory) when it cannot be used safely: then nothing is cached here, and
    the runtime, which applies the same rules to ``<cache>``, caches no compiled objects there either."""
    root = cache_root()
    if root is None:
        return None
    found = _dirs.get(root)
    if found is not None:
        return found or None
    with _dirs_lock:
        found = _dirs.get(root)
        if found is not None:
            return found or None
        path = os.path.join(root, "kernels")
        try:
            _makedirs(root)
            root_fd = _open_private_directory(root, root)
            try:
                try:
                    os.mkdir("kernels", 0o700, dir_fd=root_fd)
                except FileExistsError:
                    pass
                fd = _open_private_directory(path, "kernels", root_fd)
            finally:
                os.close(root_fd)
        except (_Unsafe, OSError) as e:
            reason = str(e) if isinstance(e, _Unsafe) else f"{root} cannot be created: {e.strerror}"
            import warnings
            warnings.warn(f"numba-metal's disk cache is off: {reason}. Kernels are compiled but not cached (nor "
                          "are the CPU device's compiled objects); set NUMBA_METAL_CACHE_DIR to a directory "
                          "of your own that only you can write, not a symbolic link", NumbaMetalWarning,
                          stacklevel=5)
            _dirs[root] = ()
            return None
        _dirs[root] = (path, fd)
        return path, fd


def kernels_dir() -> str | None:
    """``<cache>/kernels``, created private; None (nothing is cached) if it is missing or not safe."""
    found = _directory()
    return found[0] if found else None


# ---------------------------------------------------------------------------------------------
# Fingerprints
# ---------------------------------------------------------------------------------------------

#: Packages whose functions and classes are identified by name: their versions are in the key.
_LIBRARIES = frozenset(["builtins", "math", "cmath", "operator", "numpy", "numba", "numba_metal"])


def _library(module_name) -> bool:
    return isinstance(module_name, str) and module_name.split(".", 1)[0] in _LIBRARIES


def fingerprint(value) -> str:
    """A text that changes whenever ``value`` changes in a way a compile could see.

    Device functions get a shallow fingerprint here (name and code); their dependencies are checked by
    the entry's dependency records. Raises Unfingerprintable for anything else.
    """
    t = type(value)
    if is_captured(value):
        # A device array the kernel captures: bound at every launch (its type is in the key), never its address.
        return "captured-array"
    if value is None or value is Ellipsis or t in (bool, int, float, complex, str, bytes):
        return f"{t.__name__}:{value!r}"
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise Unfingerprintable("an array of Python objects")
        data = np.ascontiguousarray(value)
        # A structured dtype's str is only its size ('|V16'): its repr names its fields and offsets.
        dtype = value.dtype.str if value.dtype.names is None else repr(value.dtype)
        return (f"ndarray:{dtype}:{value.shape}:"
                f"{_sha256(data.view(np.uint8).reshape(-1) if data.size else b'').hexdigest()}")
    if isinstance(value, np.generic):
        if value.dtype.hasobject:
            raise Unfingerprintable("a NumPy object scalar")
        return f"npscalar:{value.dtype.str}:{value.tobytes().hex()}"
    if t is tuple or t is list:
        return t.__name__ + "(" + ",".join(fingerprint(v) for v in value) + ")"
    if t is frozenset or t is set:
        return t.__name__ + "(" + ",".join(sorted(fingerprint(v) for v in value)) + ")"
    if isinstance(value, pytypes.ModuleType):
        return f"module:{value.__name__}"
    if isinstance(value, DeviceFunctionBase):
        return f"devfn:{_qualname(value.py_func)}:{_devfn_digest(value)}"
    if isinstance(value, enum.Enum):
        cls = type(value)
        return f"enum:{cls.__module__}.{cls.__qualname__}.{value.name}={fingerprint(value.value)}"
    if isinstance(value, type):
        if _library(value.__module__):
            return f"class:{value.__module__}.{value.__qualname__}"
        raise Unfingerprintable(f"the class {value.__module__}.{value.__qualname__}")
    if isinstance(value, (pytypes.BuiltinFunctionType, pytypes.FunctionType)):
        owner = getattr(value, "__self__", None)
        module = getattr(value, "__module__", None)
        if module is None and isinstance(owner, pytypes.ModuleType):
            module = owner.__name__
        if (owner is None or isinstance(owner, pytypes.ModuleType)) and _library(module):
            return f"function:{module}.{value.__qualname__}"
        raise Unfingerprintable(f"the function {module}.{getattr(value, '__qualname__', '?')}")
    if isinstance(value, np.ufunc):
        return f"ufunc:{value.__name__}"
    cls_module = t.__module__
    if cls_module == "numba_metal.kernel_api.external":
        # A function of hand-written MSL (its files' contents are checked through the entry's "linked").
        return value.cache_fingerprint()
    if cls_module.startswith("numba.core.types") or cls_module.startswith("numba_metal.kernel_api") \
            or cls_module.startswith("numba_metal.compiler"):
        # Numba types (``numba.float32``) and kernel-API objects (``metal.threadIdx``): their meaning is
        # numba-metal's and Numba's code, whose versions are in the key; name them.
        name = getattr(value, "name", None) or getattr(value, "path", None) or getattr(value, "__name__", None)
        if isinstance(name, str):
            return f"object:{cls_module}.{t.__qualname__}:{name}"
    raise Unfingerprintable(f"a {cls_module}.{t.__qualname__} object")


def _devfn_digest(devfn) -> str:
    """A device function's code digest and options."""
    options = getattr(devfn, "options", None)
    fields = sorted(options._asdict().items()) if options is not None else []
    return function_digest(devfn.py_func) + ":" + fingerprint(fields)


def _qualname(fn) -> str:
    return f"{getattr(fn, '__module__', None)}.{getattr(fn, '__qualname__', getattr(fn, '__name__', '?'))}"


_CODE_FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_flags", "co_names",
                "co_varnames", "co_freevars", "co_cellvars", "co_filename", "co_name", "co_qualname",
                "co_firstlineno")
_CODE_BYTES = ("co_code", "co_linetable", "co_exceptiontable")


def _code_digest(code, h) -> None:
    for name in _CODE_FIELDS:
        if hasattr(code, name):
            h.update(f"{name}={getattr(code, name)!r};".encode())
    for name in _CODE_BYTES:
        data = getattr(code, name, None)
        if isinstance(data, bytes):
            h.update(name.encode() + b"=" + len(data).to_bytes(8, "little") + data)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            h.update(b"code{")
            _code_digest(const, h)
            h.update(b"}")
        else:
            h.update(fingerprint(const).encode() + b";")


def function_digest(fn) -> str:
    """SHA-256 of a function's code object (recursively), defaults and closure values (shallow)."""
    h = _sha256()
    _code_digest(fn.__code__, h)
    h.update(f"defaults={fingerprint(fn.__defaults__)};".encode())
    h.update(f"kwdefaults={fingerprint(sorted((fn.__kwdefaults__ or {}).items()))};".encode())
    for cell in fn.__closure__ or ():
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell
            h.update(b"cell:empty;")
        else:
            h.update(f"cell:{fingerprint(contents)};".encode())
    return h.hexdigest()


# -- the versions and sources the key covers ----------------------------------------------------

_environment: str | None = None


def _package_dir() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _compiler_sources() -> list[tuple[str, str]]:
    """(name relative to the package, path) of every file the compiler's output depends on."""
    pkg = _package_dir()
    found = []
    for sub, exts in (("compiler", (".py",)), ("compiler/mslib", (".py", ".metal")), ("kernel_api", (".py",))):
        d = os.path.join(pkg, *sub.split("/"))
        found.extend((f"{sub}/{n}", os.path.join(d, n)) for n in sorted(os.listdir(d)) if n.endswith(exts))
    found += [(name, os.path.join(pkg, *name.split("/")))
              for name in ("metal.py", "host/cache.py", "host/arguments.py")]
    return found


def _numba_version() -> str:
    # Without importing Numba (a process whose kernels all come from the cache never does).
    spec = importlib.util.find_spec("numba")
    if spec is None or not spec.submodule_search_locations:
        return "numba:missing"
    path = os.path.join(list(spec.submodule_search_locations)[0], "_version.py")
    try:
        with open(path, "rb") as f:
            return "numba:" + _sha256(f.read()).hexdigest()
    except OSError:
        from importlib import metadata
        return "numba:" + metadata.version("numba")


def environment_digest() -> str:
    """Digest of the Python, NumPy, Numba and numba-metal versions and of the compiler's sources."""
    global _environment
    if _environment is None:
        h = _sha256()
        h.update(f"format={FORMAT};python={sys.version};{sys.implementation.cache_tag};"
                 f"numpy={np.__version__};{_numba_version()};numba_metal={__version__};".encode())
        # Each file's contents by BLAKE2b (about 4x SHA-256's speed here: this reads the compiler's ~0.9 MB
        # of sources at every process's first cached kernel).
        for name, path in _compiler_sources():
            with open(path, "rb") as f:
                data = f.read()
            h.update(name.encode() + b"\0" + blake2b(data, digest_size=32).digest())
        _environment = h.hexdigest()
    return _environment


def entry_key(pyfunc, argtypes: list[str], debug: bool, fastmath: bool, float64: str | None = None,
              link=()) -> str:
    """The key of a kernel's entry (raises Unfingerprintable when it cannot have one). ``link``: the
    kernel's linked MSL files (``@metal.jit(link=...)``) with the digests of their contents now."""
    fields = [environment_digest(), _qualname(pyfunc), function_digest(pyfunc), list(argtypes),
              bool(debug), bool(fastmath)]
    if float64 is not None:
        fields.append(float64)
    if link:
        fields.append([[path, _linked_digest(path)] for path in link])
    text = json.dumps(fields)
    return _sha256(text.encode()).hexdigest()


def _linked_digest(path: str) -> str:
    from numba_metal.compiler import linking
    found = linking.file_digest(path)
    if found is None:
        raise Unfingerprintable(f"the linked file {path!r}, which cannot be read")
    return found


def linked_match(linked) -> bool:
    """True if every hand-written MSL file an entry's MSL holds still has the recorded contents."""
    if not isinstance(linked, list):
        return False
    try:
        return all(isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)
                   and _linked_digest(item[0]) == item[1] for item in linked)
    except Unfingerprintable:
        return False


# ---------------------------------------------------------------------------------------------
# Dependencies: values the compile read through names
# ---------------------------------------------------------------------------------------------

_GLOBAL_OPS = frozenset(["LOAD_GLOBAL", "LOAD_NAME"])
_DEREF_OPS = frozenset(["LOAD_DEREF", "LOAD_CLASSDEREF"])


def _code_names(code, globals_: set, freevars: set, top_freevars) -> None:
    for ins in dis.get_instructions(code):
        if ins.opname in _GLOBAL_OPS:
            globals_.add(ins.argval)
        elif ins.opname in _DEREF_OPS and ins.argval in top_freevars:
            freevars.add(ins.argval)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            _code_names(const, globals_, freevars, top_freevars)


_MISSING = "missing"


def _lookup_global(fn, name):
    g = fn.__globals__
    if name in g:
        return g[name]
    builtins = g.get("__builtins__", __builtins__)
    if isinstance(builtins, pytypes.ModuleType):
        builtins = builtins.__dict__
    if name in builtins:
        return builtins[name]
    return _MISSING


def _lookup_freevar(fn, name):
    try:
        return fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents
    except (ValueError, IndexError, TypeError):
        return _MISSING


def _lookup_module_attr(module_name: str, attr: str):
    # Only modules already imported: validating never imports (and never runs) anything.
    module = sys.modules.get(module_name)
    if module is None:
        parts = module_name.split(".")
        for i in range(len(parts) - 1, 0, -1):
            module = sys.modules.get(".".join(parts[:i]))
            if module is not None:
                for p in parts[i:]:
                    module = getattr(module, p, None)
                break
    if not isinstance(module, pytypes.ModuleType) or module.__name__ != module_name:
        return _MISSING
    return getattr(module, attr, _MISSING)


def _value_record(value, seen: dict):
    if value is _MISSING:
        return _MISSING
    if isinstance(value, DeviceFunctionBase):
        record = {"devfn": _qualname(value.py_func), "code": _devfn_digest(value)}
        if id(value) in seen:  # already recorded (or being recorded) elsewhere in this tree
            record["deps"] = None
        else:
            seen[id(value)] = value
            record["deps"] = _dependencies(value.py_func, value.typed_functions(), seen)
        return record
    return fingerprint(value)


def _dependencies(fn, typed_functions, seen: dict) -> list:
    globals_, freevars = set(), set()
    _code_names(fn.__code__, globals_, freevars, fn.__code__.co_freevars)
    deps = []
    for name in sorted(globals_):
        deps.append(["g", name, _value_record(_lookup_global(fn, name), seen)])
    for name in sorted(freevars):
        deps.append(["f", name, _value_record(_lookup_freevar(fn, name), seen)])
    attrs = set()
    for tf in typed_functions:
        attrs |= _module_attributes(tf)
    for module_name, attr in sorted(attrs):
        deps.append(["m", module_name, attr, _value_record(_lookup_module_attr(module_name, attr), seen)])
    return deps


def _kernel_api_module(name: str) -> bool:
    # ``metal`` and its namespaces (``metal.atomic``...): kernel-API objects defined by the sources the
    # key covers. (Reading their attributes again would import the kernel API, and with it Numba.)
    return name == "numba_metal.metal" or name.startswith(("numba_metal.metal.", "numba_metal.kernel_api"))


def _module_attributes(tf) -> set:
    """(module name, attribute) of every ``module.attr`` the typed function reads, except the kernel API
    (its contents are numba-metal's source, which the key covers)."""
    from numba.core import ir, types
    out = set()
    for block in tf.func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "getattr":
                base = tf.typemap.get(stmt.value.value.name)
                if isinstance(base, types.Module):
                    name = base.pymod.__name__
                    if not _kernel_api_module(name):
                        out.add((name, stmt.value.attr))
    return out


def record_dependencies(pyfunc, typed) -> list:
    """The dependency records of a kernel compiled from ``typed`` (raises Unfingerprintable)."""
    return _dependencies(pyfunc, [typed] if typed is not None else [], {})


def dependencies_match(pyfunc, deps) -> bool:
    """True if every recorded dependency still has its recorded fingerprint."""
    try:
        return _match(pyfunc, deps)
    except Unfingerprintable:
        return False


def _match(fn, deps) -> bool:
    if not isinstance(deps, list):
        return False
    for dep in deps:
        kind = dep[0]
        if kind == "g":
            value = _lookup_global(fn, dep[1])
        elif kind == "f":
            value = _lookup_freevar(fn, dep[1])
        elif kind == "m":
            value = _lookup_module_attr(dep[1], dep[2])
        else:
            return False
        if not _value_matches(value, dep[-1]):
            _log.debug("kernel cache: %s of %s changed", "/".join(map(str, dep[:-1])), _qualname(fn))
            return False
    return True


def _value_matches(value, record) -> bool:
    if record == _MISSING:
        return value is _MISSING
    if value is _MISSING:
        return False
    if isinstance(record, dict):
        if not isinstance(value, DeviceFunctionBase):
            return False
        if record.get("code") != _devfn_digest(value):
            return False
        return record.get("deps") is None or _match(value.py_func, record["deps"])
    return fingerprint(value) == record


# ---------------------------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------------------------


#: Larger entries are not read (the runtime's limit for its objects).
MAX_ENTRY_BYTES = 256 << 20
_ENTRY_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
_ENTRY_WRITE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                      | getattr(os, "O_CLOEXEC", 0))


def _entry_name(pyfunc, key: str) -> str:
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in getattr(pyfunc, "__qualname__", "kernel"))
    return f"{name[:60]}-{key}.nmk"


def _read_private_file(name: str, dir_fd: int) -> bytes | None:
    """The bytes of entry ``name`` if it is a regular file of this user that group and others cannot write
    (opened without following a symlink and without blocking on a FIFO), else None."""
    try:
        fd = os.open(name, _ENTRY_READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022
                or st.st_size > MAX_ENTRY_BYTES):
            _log.debug("kernel cache: ignoring %s (not a private file of this user)", name)
            return None
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _decode(data: bytes | None, key: str):
    if data is None or len(data) < _HEADER or not data.startswith(_MAGIC) or data[_HEADER - 1:_HEADER] != b"\n":
        return None
    payload = data[_HEADER:]
    if _sha256(payload).hexdigest().encode() != data[len(_MAGIC):_HEADER - 1]:
        return None
    try:
        entry = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != key or entry.get("format") != FORMAT:
        return None
    return entry


def _write_atomically(name: str, dir_fd: int, data: bytes) -> None:
    """Write entry ``name`` as a private temporary file renamed over it (readers see a whole entry)."""
    tmp = f".tmp-{os.urandom(8).hex()}.nmk"
    fd = os.open(tmp, _ENTRY_WRITE_FLAGS, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


# -- the dispatcher's interface -----------------------------------------------------------------


def load(pyfunc, argtypes: list[str], debug: bool, fastmath: bool, float64: str | None = None, link=()):
    """The cached compile of ``pyfunc`` for canonical ``argtypes`` (a CompiledKernel without typed IR), or
    None (a miss, a stale or a bad entry)."""
    directory = _directory()
    if directory is None:
        return None
    try:
        key = entry_key(pyfunc, argtypes, debug, fastmath, float64, link)
    except Unfingerprintable as e:
        _log.debug("kernel cache: %s is not cached: it uses %s", _qualname(pyfunc), e)
        return None
    name = _entry_name(pyfunc, key)
    try:
        compiled = _compiled_of(pyfunc, _decode(_read_private_file(name, directory[1]), key))
    except Exception as e:  # noqa: BLE001 - any entry that cannot be used is a miss (deeply nested JSON...)
        _log.debug("kernel cache: ignoring %s: %s: %s", name, type(e).__name__, e)
        return None
    if compiled is not None:
        _log.debug("kernel cache: hit %s", os.path.join(directory[0], name))
    return compiled


def _compiled_of(pyfunc, entry):
    """The CompiledKernel an entry holds, or None; raises for an entry that is not one (the caller's miss)."""
    if entry is None:
        return None
    if not dependencies_match(pyfunc, entry.get("deps")) or not linked_match(entry.get("linked")):
        return None
    kernel_abi = KernelABI.from_json(entry["abi"])
    source = entry["msl"]
    if not isinstance(source, str):
        return None
    return CompiledKernel(source, kernel_abi, None, tuple(tuple(item) for item in entry["linked"]))


def store(pyfunc, argtypes: list[str], debug: bool, fastmath: bool, compiled, float64: str | None = None,
          link=()) -> bool:
    """Write the entry for a compile; False (and nothing written) if it cannot be cached safely."""
    directory = _directory()
    if directory is None:
        return False
    try:
        key = entry_key(pyfunc, argtypes, debug, fastmath, float64, link)
        deps = record_dependencies(pyfunc, compiled.typed)
        linked = [list(item) for item in compiled.linked]
        if not linked_match(linked):
            # A linked file changed while the kernel compiled: the MSL holds the old contents.
            raise Unfingerprintable("a linked file that changed while the kernel compiled")
        entry = {"format": FORMAT, "key": key, "kernel": _qualname(pyfunc), "argtypes": list(argtypes),
                 "msl": compiled.source, "abi": compiled.abi.to_json(), "deps": deps, "linked": linked}
    except Unfingerprintable as e:
        _log.debug("kernel cache: %s is not cached: it uses %s", _qualname(pyfunc), e)
        return False
    payload = json.dumps(entry, separators=(",", ":")).encode("utf-8")
    data = _MAGIC + _sha256(payload).hexdigest().encode() + b"\n" + payload
    try:
        _write_atomically(_entry_name(pyfunc, key), directory[1], data)
    except OSError as e:
        _log.debug("kernel cache: could not write an entry for %s: %s", _qualname(pyfunc), e)
        return False
    return True


__all__ = ["load", "store", "kernels_dir", "cache_root", "entry_key", "fingerprint", "function_digest",
           "dependencies_match", "record_dependencies", "Unfingerprintable"]
