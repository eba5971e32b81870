"""A sampling profiler in pure Python: a thread reads one thread's stack every interval.

Each sample is the target thread's stack from ``sys._current_frames()``, outermost first, as frame
labels ``qualname (file.py:firstline)``. Frames are tagged by where they live: ``[numba-metal]``,
``[numpy]``; a run of Numba/llvmlite compiler frames is folded into one ``numba compiler [numba]``
frame, and a run of importlib frames into ``import (importlib)``. Frames below the advisor's entry
point (the runner, runpy, pytest's plumbing) are cut, and stacks keep their outermost 48 frames.
Timestamps use ``numba_metal.profiling.now_ns()``, the clock of runtime events and device timestamps.
A sample stands for the time since the previous one (the sampler thread can be held up while the
target holds the GIL; the stack it then sees is the one that held it).
"""

from __future__ import annotations

import os
import sys
import threading

_SEP = os.sep


MAX_STACK_DEPTH = 48


def _tag(filename: str) -> str | None:
    f = filename.replace("\\", "/")
    if ("/numba_metal/" in f and "/numba_metal/tools/advisor/" not in f) or f.startswith("<numba_metal"):
        return "numba-metal"
    if "/numba/" in f or "/llvmlite/" in f:
        return "numba"
    if "/numpy/" in f:
        return "numpy"
    return None


def _hidden(filename: str) -> bool:
    f = filename.replace("\\", "/")
    return (f.startswith("<frozen runpy") or f.endswith("/runpy.py") or "/_pytest/" in f or "/pluggy/" in f
            or "/numba_metal/tools/advisor/" in f)


def frame_label(code) -> str:
    name = getattr(code, "co_qualname", code.co_name)
    tag = _tag(code.co_filename)
    label = f"{name} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
    return f"{label} [{tag}]" if tag else label


class Sampler:
    """Samples thread ``thread_id`` every ``interval_s`` seconds from below the frame running ``entry_code``."""

    def __init__(self, thread_id: int, interval_s: float, entry_code, clock):
        self.thread_id = thread_id
        self.interval_s = max(interval_s, 1e-4)
        self.entry_code = entry_code
        self.clock = clock
        self.samples: list[tuple[int, tuple[str, ...]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="numba-metal-advisor-sampler", daemon=True)

    def start(self) -> None:
        # A thread waiting for the GIL gets it only after the switch interval (5 ms by default); a
        # shorter one lets the sampler keep its interval while the target runs pure Python.
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch, self.interval_s / 5))
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        sys.setswitchinterval(self._switch)

    def _loop(self) -> None:
        wait = self._stop.wait
        while not wait(self.interval_s):
            frame = sys._current_frames().get(self.thread_id)
            if frame is not None:
                stack = self.stack(frame)
                if stack:
                    self.samples.append((self.clock(), stack))
            del frame

    def stack(self, frame) -> tuple[str, ...]:
        """The labels of the frames above ``entry_code`` (empty when the thread is not inside it)."""
        codes = []
        while frame is not None:
            if frame.f_code is self.entry_code:
                break
            codes.append(frame.f_code)
            frame = frame.f_back
        else:
            return ()
        codes.reverse()
        labels: list[str] = []
        for code in codes:
            if _hidden(code.co_filename):
                continue
            tag = _tag(code.co_filename)
            if tag == "numba" or code.co_filename.startswith("<frozen importlib"):
                folded = "numba compiler [numba]" if tag == "numba" else "import (importlib)"
                if not (labels and labels[-1] == folded):
                    labels.append(folded)
                continue
            labels.append(frame_label(code))
        return tuple(labels[:MAX_STACK_DEPTH])
