"""Run ``scan ROOT`` under a PEP 578 audit hook and write what it saw to OUT (JSON).

Usage: python audited_scan.py ROOT OUT MARKER [MARKER...]

Recorded while the scan runs:

* every code object executed (``exec`` events: ``exec()``, ``eval()``, running an imported module)
  that comes from a scanned file or holds a MARKER string among its constants, with the operations
  its top level executes;
* events that load objects or run programs (pickle, marshal with MARKER bytes, os.system, process
  creation);
* every module imported for the first time, and every codec looked up by a registered search
  function (a canary search function is registered first).

A hook cannot be removed, so this runs in its own process.
"""

import codecs
import dis
import json
import os
import sys

root, out_path, markers = sys.argv[1], sys.argv[2], sys.argv[3:]
root_abs = os.path.abspath(root)
seen = {"exec": [], "dangerous": [], "imports": [], "codecs": []}
recording = False

RUN_EVENTS = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "subprocess.Popen",
              "pickle.find_class", "ctypes.call_function")


def _strings(code, out):
    for c in code.co_consts:
        if isinstance(c, str):
            out.append(c)
        elif hasattr(c, "co_consts"):
            _strings(c, out)
    return out


def hook(event, args):
    if not recording:
        return
    if event == "exec" and hasattr(args[0], "co_consts"):
        code = args[0]
        marked = any(m in s for s in _strings(code, []) for m in markers)
        if marked or os.path.abspath(code.co_filename).startswith(root_abs):
            ops = sorted({i.opname for i in dis.get_instructions(code)})
            seen["exec"].append({"filename": code.co_filename, "marked": marked, "ops": ops})
    elif event.startswith(RUN_EVENTS):
        seen["dangerous"].append([event, repr(args)[:200]])
    elif event == "marshal.loads" and any(m.encode() in bytes(args[0]) for m in markers):
        seen["dangerous"].append([event, "data holding a marker"])
    elif event == "import":
        seen["imports"].append(str(args[0]))


def canary_codec_search(name):
    seen["codecs"].append(name)
    return None


codecs.register(canary_codec_search)
sys.addaudithook(hook)

from numba_metal.tools.advisor import scan  # noqa: E402

recording = True
doc = scan.scan(root)
recording = False
with open(out_path, "w", encoding="utf-8") as fh:
    json.dump({"seen": seen, "doc": doc}, fh)
