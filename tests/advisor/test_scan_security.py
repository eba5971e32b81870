"""``scan`` runs nothing of the files it reads: not through Numba's signature strings, not through the
definition the compile check executes, not through imports, codecs or pickle (issue 17, item 1)."""
import json
import os
import subprocess
import sys

import pytest
from numba.core import sigutils

from numba_metal.tools.advisor import signatures
from numba_metal.tools.advisor.compat import definition_only

import hostile
from advisor_paths import HERE

# -- the signature reader --------------------------------------------------------------------------

VALID = ["float32(float32)", "void(float32[:], float32[:])", "void(float32[:, ::1], int64)", "(float32, int32)",
         "float32[::1](float32[:, :])", "void()", "f4(f8)", "void(float32[:, :, ::1])", "(float32[::1],)",
         " void(int32) ", "uint8(boolean, intp, float64[:])", "void(float32[::1, :])"]


@pytest.mark.parametrize("text", VALID)
def test_the_signature_reader_builds_what_numba_would(text):
    # These strings are the test's own, so letting Numba evaluate them is safe.
    assert sigutils.normalize_signature(signatures.parse(text)) == sigutils.normalize_signature(text)


REFUSED = [
    "__import__('os').system('true') or float32(float32)",  # the reported exploit
    "float32.__class__.__base__.__subclasses__()",
    "(float32, __import__('os'))",
    "float32(float32) if __import__('os') else void()",
    "[float32](float32)", "float32(x=float32)", "float32(*args)", "float32(1)", "float32('a')",
    "float32", "float32[:]", "float32[0](float32)", "void(float32[1:])", "void(float32[::2])",
    "void(float32[::True])", "void(float32[:][:])", "Array(float32, 1, 'C')(float32)", "void(_private)",
    "void(numba)", "void(os)", "void(eval)", "lambda: void()", "void((lambda: float32)())", "(x := void())",
    "void(float32)(float32)", "f'{void}'", "", "void(float32", "void(\x00)", "void(" + "float32, " * 400 + ")",
]


@pytest.mark.parametrize("text", REFUSED)
def test_the_signature_reader_refuses_everything_else_without_evaluating_it(text, monkeypatch):
    import builtins

    def forbidden(*args, **kwargs):
        raise AssertionError("evaluated")
    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    monkeypatch.setattr(builtins, "__import__", forbidden)
    with pytest.raises(signatures.SignatureError):
        signatures.parse(text)


def test_the_definition_the_compile_check_executes_evaluates_nothing():
    """Only constant defaults survive; every annotation and decorator is gone."""
    import ast
    src = ("@dec(x)\ndef f(a: A, /, b: B = 1, *c: C, d: D = 2, **e: E) -> R:\n    return a\n")
    module = definition_only(ast.parse(src).body[0])
    evaluated = [n for n in ast.walk(module) if isinstance(n, (ast.Name, ast.Call))
                 and not any(n is d for d in ast.walk(module.body[0].body[0]))]
    assert evaluated == [], ast.dump(module)
    with pytest.raises(ValueError):
        definition_only(ast.parse("def f(a=g()):\n    pass\n").body[0])


# -- the whole scan, audited -----------------------------------------------------------------------

#: What the top level of the definition the compile check executes may do: load constants, make the
#: function, bind its name. Nothing that looks a name up, calls or imports.
DEFINITION_OPS = {"RESUME", "NOP", "CACHE", "LOAD_CONST", "BUILD_TUPLE", "BUILD_CONST_KEY_MAP", "MAKE_FUNCTION",
                  "STORE_NAME", "RETURN_VALUE", "RETURN_CONST"}


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    project, markers, lib = base / "project", base / "markers", base / "lib"
    for d in (project, markers, lib):
        d.mkdir()
    for name, src in hostile.files(str(markers)).items():
        (project / name).write_text(src, encoding="utf-8")
    (lib / f"{hostile.CANARY_MODULE}.py").write_text(hostile.CANARY_MODULE_SOURCE)
    out = base / "audit.json"
    env = dict(os.environ, ADVISOR_MARKERS=str(markers), NUMBA_METAL_DEVICE="cpu",
               PYTHONPATH=os.pathsep.join([str(lib), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "audited_scan.py"), str(project), str(out),
                           str(markers)], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out, encoding="utf-8") as fh:
        result = json.load(fh)
    result["markers"] = sorted(os.listdir(markers))
    return result


def test_no_payload_ran(audited):
    assert audited["markers"] == []


def test_every_route_was_in_the_scanned_files(audited):
    sources = "".join(hostile.files("M").values())
    for route in hostile.ROUTES:
        assert os.path.join("M", route) in sources, route


def test_nothing_from_the_scanned_text_was_executed_but_bare_definitions(audited):
    for e in audited["seen"]["exec"]:
        assert e["filename"].endswith(".py") and os.path.basename(e["filename"]) in hostile.files("M"), e
        assert set(e["ops"]) <= DEFINITION_OPS, e


def test_the_compile_check_did_define_and_compile_the_functions_with_hostile_annotations(audited):
    status = {c["qualname"]: c["compile_check"]["status"] for c in audited["doc"]["candidates"]}
    for name in hostile.DEFINED_AND_COMPILED:
        assert status[name] in ("compiles", "fails"), (name, status[name])
    assert len(audited["seen"]["exec"]) >= len(hostile.DEFINED_AND_COMPILED)


def test_hostile_signatures_are_reported_as_unreadable(audited):
    by_name = {c["qualname"]: c["compile_check"] for c in audited["doc"]["candidates"]}
    for name in ("sig_njit", "sig_jit_list", "sig_vectorize", "sig_guvectorize", "sig_metal_jit", "sig_metal_device",
                 "sig_cuda_jit", "sig_cfunc", "sig_float64", "sig_subclasses", "sig_in_tuple", "sig_second_of_list"):
        cc = by_name[name]
        assert cc["status"] == "unable" and "never evaluates a signature string" in cc["detail"], (name, cc)


def test_no_import_pickle_or_process_came_from_the_scanned_text(audited):
    seen = audited["seen"]
    assert seen["dangerous"] == []
    assert "imported_canary_module" not in audited["markers"]
    assert not [m for m in seen["imports"] if "canary" in m]
    assert not [c for c in seen["codecs"] if "canary" in c]


def test_a_file_in_a_codec_scan_does_not_know_is_reported(audited):
    (err,) = [e for e in audited["doc"]["errors"] if e["file"] == "coding.py"]
    assert hostile.CANARY_CODEC in err["message"] and "standard library" in err["message"]
