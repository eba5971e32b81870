"""Which clang the CPU device compiles with (Sources/MetalRuntime/CPUDevice/ClangToolchain.swift): every
candidate is probed once (its version, then a compile with the kernels' flags), a too-old or unusable one
is skipped with a note, the first that works is used, and when none does the error names each one tried
and why. Issue 29: Debian 12's clang++ 14 ahead of the Swift toolchain's on PATH made every kernel fail
with "unknown argument: '-ffloat16-excess-precision=none'"."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from numba_metal import runtime

#: Runs a kernel on the CPU device and prints what nm_cpu_compiler_info says, or the error, as JSON.
CHILD = textwrap.dedent("""
    import json, numpy as np
    from numba_metal import metal, runtime
    out = {}
    try:
        out["info"] = runtime.cpu_compiler_info()
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {e}"
    try:
        @metal.jit
        def twice(a, b):
            i = metal.grid(1)
            if i < b.size:
                b[i] = 2 * a[i]
        a = np.arange(64, dtype=np.float32)
        b = metal.device_array_like(a)
        twice[1, 64](metal.to_device(a), b)
        out["ran"] = bool(np.array_equal(b.copy_to_host(), 2 * a))
    except Exception as e:
        out["launch_error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(out))
""")


def _fake(directory, name, script):
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(script))
    path.chmod(0o755)
    return path


def _old_clang(directory, log):
    """A clang++ that says it is Debian 12's clang 14 and refuses the shim's flag, as that one does; each run
    is logged."""
    return _fake(directory, "clang++", f"""
        echo "$@" >> {log}
        case "$1" in --version) echo "Debian clang version 14.0.6"; echo "Target: x86_64-pc-linux-gnu"; exit 0;; esac
        echo "clang: error: unknown argument: '-ffloat16-excess-precision=none'" >&2; exit 1
        """)


def _good_clang(directory):
    """The clang this process's CPU device uses, as clang++ in directory."""
    directory.mkdir(exist_ok=True)
    real = runtime.cpu_compiler_info().split("\n")[0].split(" (")[0]
    link = directory / "clang++"
    link.symlink_to(os.path.realpath(real))
    return link


#: Where clang finds the linker; clangs there come after those a test puts first.
SYSTEM_PATH = ["/usr/bin", "/bin"]


def _run(tmp_path, path_dirs, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_METAL_")}
    full.update(PATH=os.pathsep.join(str(d) for d in [*path_dirs, *SYSTEM_PATH]), NUMBA_METAL_DEVICE="cpu",
                NUMBA_METAL_CACHE_DIR=str(tmp_path / "cache"), NUMBA_METAL_LOW_OCCUPANCY_WARNINGS="0")
    full.update(env)
    done = subprocess.run([sys.executable, "-c", CHILD], env=full, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_old_clang_ahead_of_a_good_one_on_path_is_skipped_with_a_note(tmp_path):
    log = tmp_path / "old.log"
    old = _old_clang(tmp_path / "old", log)
    good = _good_clang(tmp_path / "good")
    out = _run(tmp_path, [old.parent, good.parent])
    assert out.get("ran") is True, out
    chosen, *skipped = out["info"].split("\n")
    assert chosen.startswith(f"{good} (clang ") and "clang++ on PATH" in chosen, out
    assert skipped == [f"skipped {old} (clang++ on PATH): clang 14.0.6 is older than clang 16, the oldest the CPU "
                       "device's Metal shim works with (it needs -ffloat16-excess-precision=none)"], out
    assert log.read_text().split("\n") == ["--version", ""]  # the old one never compiled anything


def test_a_probe_is_run_once_then_remembered_in_the_disk_cache(tmp_path):
    log = tmp_path / "old.log"
    old = _old_clang(tmp_path / "old", log)
    good = _good_clang(tmp_path / "good")
    first = _run(tmp_path, [old.parent, good.parent])
    second = _run(tmp_path, [old.parent, good.parent])
    assert first["info"] == second["info"] and second.get("ran") is True, second
    assert log.read_text().count("--version") == 1  # the second process read the first one's outcome


def test_a_new_enough_clang_that_cannot_compile_the_shims_needs_is_skipped_with_its_error(tmp_path):
    broken = _fake(tmp_path / "broken", "clang++", """
        case "$1" in --version) echo "clang version 17.0.1"; exit 0;; esac
        echo "clang: error: unsupported option '-fstack-clash-protection' for target 'wasm32'" >&2; exit 1
        """)
    good = _good_clang(tmp_path / "good")
    out = _run(tmp_path, [broken.parent, good.parent])
    assert out.get("ran") is True, out
    assert out["info"].split("\n")[1:] == [
        f"skipped {broken} (clang++ on PATH): clang 17.0.1 cannot compile what the CPU device's Metal shim needs: "
        "clang: error: unsupported option '-fstack-clash-protection' for target 'wasm32'"], out


def test_when_no_clang_works_the_error_names_each_one_tried_why_and_how_to_get_one(tmp_path):
    old = _old_clang(tmp_path / "old", tmp_path / "old.log")
    out = _run(tmp_path, [old.parent], NUMBA_METAL_CLANG=str(old))
    for error in (out["error"], out["launch_error"]):
        assert error.startswith(f"UnsupportedPlatformError: the CPU device cannot compile MSL with NUMBA_METAL_CLANG={old}"), out
        assert f"{old} (NUMBA_METAL_CLANG): clang 14.0.6 is older than clang 16" in error, out
        assert "Point NUMBA_METAL_CLANG at a clang++ 16 or newer, or unset it" in error, out
    assert "ran" not in out


def test_a_missing_override_is_named_and_not_replaced_by_another_clang(tmp_path):
    out = _run(tmp_path, [tmp_path], NUMBA_METAL_CLANG=str(tmp_path / "no-such-clang++"))
    assert f"{tmp_path / 'no-such-clang++'} (NUMBA_METAL_CLANG): it does not exist" in out["error"], out
    assert "ran" not in out and "UnsupportedPlatformError" in out["launch_error"], out


@pytest.mark.parametrize("text, expected", [
    ("Debian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu", (14, "clang 14.0.6", False)),
    ("clang version 21.0.0 (https://github.com/swiftlang/llvm-project.git 11673e6)", (21, "clang 21.0.0", False)),
    ("Apple clang version 15.0.0 (clang-1500.3.9.4)\nTarget: arm64-apple-darwin23.4.0", (15, "Apple clang 15.0.0", True)),
    ("Ubuntu clang version 18.1.3 (1ubuntu1)", (18, "clang 18.1.3", False)),
])
def test_version_lines_of_the_clangs_people_have(text, expected, tmp_path):
    """Apple's clang numbers its versions apart from LLVM's (Apple clang 15 is LLVM 16): it is never refused
    by its number, only by the compile probe."""
    fake = _fake(tmp_path / "v", "clang++", f"""
        case "$1" in --version) printf '%s\\n' "{text}"; exit 0;; esac
        echo "clang: error: probe refused" >&2; exit 1
        """)
    out = _run(tmp_path, [tmp_path], NUMBA_METAL_CLANG=str(fake))
    major, version, apple = expected
    if major < 16 and not apple:
        assert f"{version} is older than clang 16" in out["error"], out
    else:
        assert f"{version} cannot compile what the CPU device's Metal shim needs: clang: error: probe refused" in out["error"], out
