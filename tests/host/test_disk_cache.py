"""The disk cache (``@metal.jit(cache=True)``): hits in new processes, never stale, robust, private.

Fresh processes are real subprocesses (a cache is for the next process); each runs ``driver.py`` below,
which imports a kernel module written by the test and prints what happened as JSON.
"""

import json
import os
import stat
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.compiler.abi import CompiledKernel
from numba_metal.errors import NumbaMetalWarning
from numba_metal.host import cache

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: Every test here checks the disk cache, which a sanitizing kernel never enters (docs/sanitizer.md).
pytestmark = pytest.mark.unsanitized("checks the disk cache, which a sanitizing kernel never enters")

DRIVER = r"""
import json, sys
import numpy as np
from numba_metal import metal
import kmod
out = kmod.run()
k = kmod.kernel
kernels = list(k._by_key.values())
print(json.dumps({"result": [float(v) for v in out], "from_cache": [kk.from_cache for kk in kernels],
                  "numba_imported": "numba" in sys.modules}))
"""

KERNEL_MODULE = """
import numpy as np
from numba_metal import metal
import kcfg
SCALE = {scale}

@metal.jit(device=True)
def helper(x):
    return x * SCALE + {helper_extra}

@metal.jit(cache=True)
def kernel(a, out, x):
    i = metal.grid(1)
    if i < out.size:
        out[i] = helper(a[i]) + x + kcfg.OFFSET + {kernel_extra}

def run():
    a = metal.to_device(np.arange(4, dtype=np.float32))
    out = metal.device_array(4, np.float32)
    kernel[1, 32](a, out, np.float32(0.5))
    return out.copy_to_host()
"""


def _env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_METAL_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(NUMBA_METAL_DEVICE="cpu", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(tmp_path / "src"), REPO]),
               NUMBA_METAL_CACHE_DIR=str(tmp_path / "cache"))
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


def _write_kernel(tmp_path, scale=2.0, helper_extra=0.0, kernel_extra=0.0, offset=0.0):
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "kmod.py").write_text(KERNEL_MODULE.format(scale=scale, helper_extra=helper_extra,
                                                      kernel_extra=kernel_extra))
    (src / "kcfg.py").write_text(f"OFFSET = {offset}\n")
    (src / "driver.py").write_text(DRIVER)


def _run(tmp_path, **env):
    res = subprocess.run([sys.executable, str(tmp_path / "src" / "driver.py")], env=_env(tmp_path, **env),
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def _expected(scale=2.0, helper_extra=0.0, kernel_extra=0.0, offset=0.0):
    return [float(np.float32(i * scale + helper_extra + 0.5 + offset + kernel_extra)) for i in range(4)]


def _entries(directory):
    return sorted(p for p in os.listdir(directory) if p.endswith(".nmk"))


def test_a_new_process_launches_from_the_cache_without_importing_numba(tmp_path):
    _write_kernel(tmp_path)
    first = _run(tmp_path)
    assert first == {"result": _expected(), "from_cache": [False], "numba_imported": True}
    second = _run(tmp_path)
    assert second == {"result": _expected(), "from_cache": [True], "numba_imported": False}
    assert len(_entries(tmp_path / "cache" / "kernels")) == 1


def test_an_edit_anywhere_the_kernel_depends_on_is_recompiled(tmp_path):
    _write_kernel(tmp_path)
    assert _run(tmp_path)["result"] == _expected()
    assert _run(tmp_path)["from_cache"] == [True]
    edits = {}
    for edit in ({"kernel_extra": 100.0},    # the kernel's own code
                 {"scale": 3.0},             # a global a device function reads
                 {"helper_extra": 7.0},      # a device function's code
                 {"offset": 1000.0}):        # a module attribute (kcfg.OFFSET) the kernel reads
        edits.update(edit)
        _write_kernel(tmp_path, **edits)
        after = _run(tmp_path)
        assert after["result"] == _expected(**edits), edit
        assert after["from_cache"] == [False], edit
    assert _run(tmp_path) == {"result": _expected(**edits), "from_cache": [True], "numba_imported": False}


def test_a_corrupt_entry_is_ignored_and_rebuilt(tmp_path):
    _write_kernel(tmp_path)
    _run(tmp_path)
    kernels = tmp_path / "cache" / "kernels"
    (name,) = _entries(kernels)
    path = kernels / name
    for damage in ("truncate", "flip", "empty", "garbage"):
        data = path.read_bytes()
        if damage == "truncate":
            data = data[: len(data) // 2]
        elif damage == "flip":
            i = len(data) - 40
            data = data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:]
        elif damage == "empty":
            data = b""
        else:
            data = b"\x80\x04\x95 not an entry at all"
        path.write_bytes(data)
        rebuilt = _run(tmp_path)
        assert rebuilt["result"] == _expected() and rebuilt["from_cache"] == [False], damage
    assert _run(tmp_path)["from_cache"] == [True]   # the rebuilt entry is good


def test_concurrent_processes_writing_the_same_entry(tmp_path):
    _write_kernel(tmp_path)
    procs = [subprocess.Popen([sys.executable, str(tmp_path / "src" / "driver.py")], env=_env(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["result"] == _expected()
    kernels = tmp_path / "cache" / "kernels"
    assert len(_entries(kernels)) == 1
    assert not [n for n in os.listdir(kernels) if n.startswith(".tmp")]   # no temporary files left
    assert _run(tmp_path)["from_cache"] == [True]


def test_numba_cache_dir_and_xdg_cache_home_are_honoured(tmp_path):
    _write_kernel(tmp_path)
    _run(tmp_path, NUMBA_METAL_CACHE_DIR=None, NUMBA_CACHE_DIR=str(tmp_path / "nc"))
    assert len(_entries(tmp_path / "nc" / "numba-metal" / "kernels")) == 1
    assert _run(tmp_path, NUMBA_METAL_CACHE_DIR=None, NUMBA_CACHE_DIR=str(tmp_path / "nc"))["from_cache"] == [True]
    _run(tmp_path, NUMBA_METAL_CACHE_DIR=None, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert len(_entries(tmp_path / "xdg" / "numba-metal" / "kernels")) == 1


def test_one_rule_places_every_cache(tmp_path, monkeypatch):
    """The runtime owns the rule (ObjectCache.root()): the kernels' cache is under the directory it names, for each
    of the rule's four cases, and there is none without a home."""
    from numba_metal import runtime
    for name in ("NUMBA_METAL_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cases = [(None, str(tmp_path / "home" / ".cache" / "numba-metal"))]
    for name, value, want in (("XDG_CACHE_HOME", "xdg", "xdg/numba-metal"), ("NUMBA_CACHE_DIR", "nc", "nc/numba-metal"),
                              ("NUMBA_METAL_CACHE_DIR", "mine", "mine")):
        cases.append(((name, str(tmp_path / value)), str(tmp_path / want)))
    for setting, want in cases:
        if setting:
            monkeypatch.setenv(*setting)
        assert runtime.cache_root() == want
        assert cache.kernels_dir().startswith(want + os.sep)
    monkeypatch.setenv("NUMBA_METAL_CACHE_DIR", str(tmp_path / ("x" * 5000)))   # longer than the first buffer
    assert runtime.cache_root() == str(tmp_path / ("x" * 5000))
    for name in ("NUMBA_METAL_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name)
    assert runtime.cache_root() is None


# ---------------------------------------------------------------------------------------------
# In this process: each test gets its own cache directory.
# ---------------------------------------------------------------------------------------------


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("NUMBA_METAL_CACHE_DIR", str(root))
    return root


def _module(name, source, **values):
    """A kernel module made from source (a fresh module, as an import would make it)."""
    mod = types.ModuleType(name)
    mod.__file__ = f"<{name}>"
    mod.__dict__.update(values)
    mod.__dict__["metal"] = metal
    sys.modules[name] = mod
    exec(compile(textwrap.dedent(source), f"<{name}>", "exec"), mod.__dict__)
    return mod


def _launch(pyfunc, *args, cache=True):
    k = metal.jit(cache=cache)(pyfunc)
    out = metal.device_array(4, np.float32)
    k[1, 32](out, *args)
    return out.copy_to_host(), list(k.specializations.values())[0]


SRC = """
def fill(out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = LIMIT + i
"""


def test_cache_directories_and_entries_are_private(cache_dir):
    mod = _module("nm_cache_private", SRC, LIMIT=1.0)
    _launch(mod.fill)
    kernels = cache_dir / "kernels"
    for d in (cache_dir, kernels):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    (name,) = _entries(kernels)
    assert stat.S_IMODE(os.stat(kernels / name).st_mode) == 0o600
    data = (kernels / name).read_bytes()
    assert data.startswith(b"NMKC1 ")
    entry = json.loads(data.split(b"\n", 1)[1])   # JSON, not pickle: loading executes nothing
    assert "kernel void" in entry["msl"] and entry["key"] in name


def test_a_directory_others_can_write_is_not_used(tmp_path, monkeypatch):
    root = tmp_path / "shared"
    root.mkdir()
    os.chmod(root, 0o777)
    monkeypatch.setenv("NUMBA_METAL_CACHE_DIR", str(root))
    mod = _module("nm_cache_shared", SRC, LIMIT=1.0)
    with pytest.warns(NumbaMetalWarning, match="disk cache is off: .*shared is writable by group or others"):
        out, kernel = _launch(mod.fill)
    np.testing.assert_array_equal(out, [1, 2, 3, 4])
    assert not (root / "kernels").exists()
    assert cache.kernels_dir() is None


def test_a_symlinked_cache_directory_is_refused_alike_by_the_kernel_cache_and_the_runtime(tmp_path):
    # The runtime opens <cache> with O_NOFOLLOW: a symlink in its place means no compiled objects are
    # cached. The kernel cache applies the same rule and says so; a symlink further up is followed by both
    # (an ordinary ~/.cache on another disk). New processes: the runtime opens its cache once.
    _write_kernel(tmp_path)
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    for _ in range(2):
        res = subprocess.run([sys.executable, str(tmp_path / "src" / "driver.py")], capture_output=True, text=True,
                             env=_env(tmp_path, NUMBA_METAL_CACHE_DIR=str(tmp_path / "link")), timeout=300)
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout.splitlines()[-1])["from_cache"] == [False]
        assert "NumbaMetalWarning: numba-metal's disk cache is off: " in res.stderr
        assert "link is a symbolic link" in res.stderr
        assert os.listdir(real) == []
    below = str(tmp_path / "link" / "below")
    assert _run(tmp_path, NUMBA_METAL_CACHE_DIR=below)["from_cache"] == [False]
    assert _run(tmp_path, NUMBA_METAL_CACHE_DIR=below)["from_cache"] == [True]
    assert sorted(os.listdir(real / "below")) == ["cpu-objects", "kernels"]
    assert os.listdir(real / "below" / "cpu-objects") and _entries(real / "below" / "kernels")


def test_a_fifo_in_place_of_an_entry_does_not_block(cache_dir):
    mod = _module("nm_cache_fifo", SRC, LIMIT=1.0)
    _launch(mod.fill)
    kernels = cache_dir / "kernels"
    (name,) = _entries(kernels)
    os.unlink(kernels / name)
    os.mkfifo(kernels / name, 0o600)
    out, kernel = _launch(mod.fill)   # opened without blocking, refused, replaced by a new entry
    np.testing.assert_array_equal(out, [1, 2, 3, 4])
    assert not kernel.from_cache and stat.S_ISREG(os.stat(kernels / name).st_mode)
    assert _launch(mod.fill)[1].from_cache


def test_entries_that_are_links_or_writable_by_others_are_ignored(cache_dir):
    mod = _module("nm_cache_links", SRC, LIMIT=1.0)
    _launch(mod.fill)
    kernels = cache_dir / "kernels"
    (name,) = _entries(kernels)
    os.chmod(kernels / name, 0o666)
    assert not _launch(mod.fill)[1].from_cache       # ignored, rewritten (0600)
    assert _launch(mod.fill)[1].from_cache
    target = cache_dir / "elsewhere.nmk"
    os.replace(kernels / name, target)
    os.symlink(target, kernels / name)
    assert not _launch(mod.fill)[1].from_cache       # a symbolic link is never followed
    if os.geteuid() == 0:
        os.chown(kernels / name, 65534, 65534)       # an entry owned by someone else
        assert not _launch(mod.fill)[1].from_cache


def test_changed_global_in_the_same_process_is_seen(cache_dir):
    mod = _module("nm_cache_global", SRC, LIMIT=1.0)
    out, k = _launch(mod.fill)
    np.testing.assert_array_equal(out, [1, 2, 3, 4])
    out, k = _launch(mod.fill)
    assert k.from_cache
    mod.LIMIT = 10.0
    out, k = _launch(mod.fill)
    np.testing.assert_array_equal(out, [10, 11, 12, 13])
    assert not k.from_cache


def test_closures_with_different_values_get_their_own_entries(cache_dir):
    def make(c):
        def fill(out):
            i = metal.grid(1)
            if i < out.size:
                out[i] = c + i
        return fill
    for c in (1.0, 5.0, 1.0, 5.0):
        out, k = _launch(make(c))
        np.testing.assert_array_equal(out, c + np.arange(4))
    assert len(_entries(cache_dir / "kernels")) == 2
    assert k.from_cache


def test_a_kernel_depending_on_an_unfingerprintable_value_is_not_cached(cache_dir):
    class Config:
        limit = 3.0
    mod = _module("nm_cache_object", """
        def fill(out):
            i = metal.grid(1)
            if i < out.size:
                out[i] = i
            if i == 100000:
                CONFIG.limit
        """, CONFIG=Config())
    assert not cache.store(mod.fill, ["A(float32,1,C)"], False, False, CompiledKernel("", None, None))
    kernels = cache_dir / "kernels"
    assert not kernels.exists() or not _entries(kernels)


def test_options_and_argument_types_are_part_of_the_key(cache_dir):
    mod = _module("nm_cache_options", SRC, LIMIT=1.0)
    keys = {cache.entry_key(mod.fill, ["A(float32,1,C)"], debug, fastmath)
            for debug in (False, True) for fastmath in (False, True)}
    keys.add(cache.entry_key(mod.fill, ["A(int32,1,C)"], False, False))
    assert len(keys) == 5


def test_inspection_of_a_kernel_loaded_from_the_cache_retypes_it(cache_dir):
    mod = _module("nm_cache_inspect", SRC, LIMIT=1.0)
    _launch(mod.fill)
    k = metal.jit(cache=True)(mod.fill)
    out = metal.device_array(4, np.float32)
    k[1, 32](out)
    (spec,) = k._by_key.values()
    assert spec.from_cache and spec.compiled.typed is None
    assert "fill" in str(spec.typed.func_ir.func_id.func_name)
    (sig,) = k.specializations
    assert str(sig[0]) == "array(float32, 1d, C, index32)"   # a small array: 32-bit indices (issue 28)
    assert "kernel void" in k.inspect_msl(sig)


def test_a_debug_kernel_from_the_cache_reports_bounds_errors_with_its_file(cache_dir):
    mod = _module("nm_cache_debug", """
        def oob(out):
            i = metal.grid(1)
            out[i + 100] = 1.0
        """)
    for _ in range(2):
        k = metal.jit(cache=True, debug=True)(mod.oob)
        out = metal.device_array(4, np.float32)
        with pytest.raises(metal.KernelBoundsError, match="out of bounds") as info:
            k[1, 4](out)
        assert "<nm_cache_debug>" in str(info.value)
    assert list(k._by_key.values())[0].from_cache


def test_a_device_function_read_as_a_module_attribute_is_tracked(cache_dir):
    lib = _module("nm_cache_lib", """
        @metal.jit(device=True)
        def shift(x):
            return x + 1.0
        """)
    mod = _module("nm_cache_user", """
        def fill(out):
            i = metal.grid(1)
            if i < out.size:
                out[i] = nm_cache_lib.shift(i)
        """, nm_cache_lib=lib)
    np.testing.assert_array_equal(_launch(mod.fill)[0], [1, 2, 3, 4])
    assert _launch(mod.fill)[1].from_cache
    exec(compile("@metal.jit(device=True)\ndef shift(x):\n    return x + 5.0\n", "<nm_cache_lib>", "exec"),
         lib.__dict__)
    out, k = _launch(mod.fill)
    np.testing.assert_array_equal(out, [5, 6, 7, 8])
    assert not k.from_cache


LINKED_MODULE = """
import json
import numpy as np
from numba_metal import metal

by_declaration = metal.declare_device("scaled", "float32(float32)", link=["declared.metal"])
by_kernel = metal.declare_device("shifted", "float32(float32)")

@metal.jit(cache=True)
def declared(out):
    out[0] = by_declaration(np.float32(2.0))

@metal.jit(cache=True, link=["kernel.metal"])
def linked(out):
    out[0] = by_kernel(np.float32(2.0))

results = {}
for k in (declared, linked):
    out = np.zeros(1, np.float32)
    k[1, 1](out)
    results[k.__name__] = [float(out[0]), [kk.from_cache for kk in k._by_key.values()]]
print(json.dumps(results))
"""


def test_kernels_calling_hand_written_msl_are_cached_and_an_edit_of_the_msl_is_never_stale(tmp_path):
    # Both ways of linking: declare_device(link=...) and @metal.jit(link=...). Relative paths: the
    # processes run in the source directory, as a project's scripts do.
    src = tmp_path / "src"
    src.mkdir()
    (src / "linked_kernels.py").write_text(LINKED_MODULE)

    def write(declared_factor, kernel_shift):
        (src / "declared.metal").write_text(f"float scaled(float x) {{ return x * {declared_factor}.0f; }}\n")
        (src / "kernel.metal").write_text(f"float shifted(float x) {{ return x + {kernel_shift}.0f; }}\n")

    def run():
        res = subprocess.run([sys.executable, "linked_kernels.py"], env=_env(tmp_path), cwd=src,
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout.strip().splitlines()[-1])

    write(3, 10)
    assert run() == {"declared": [6.0, [False]], "linked": [12.0, [False]]}
    assert run() == {"declared": [6.0, [True]], "linked": [12.0, [True]]}
    write(5, 10)    # the declared function's file: only that kernel is compiled again
    assert run() == {"declared": [10.0, [False]], "linked": [12.0, [True]]}
    write(5, 20)    # the kernel's own linked file
    assert run() == {"declared": [10.0, [True]], "linked": [22.0, [False]]}
    assert run() == {"declared": [10.0, [True]], "linked": [22.0, [True]]}
    os.remove(src / "kernel.metal")
    res = subprocess.run([sys.executable, "linked_kernels.py"], env=_env(tmp_path), cwd=src,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode != 0 and "cannot read the linked file 'kernel.metal'" in res.stderr
