"""Errors as numba.cuda raises them (numba_metal/errors.py): numba-metal's error for a misuse is also an
instance of the class numba.cuda raises for it, and stays in the NumbaMetalError family."""

import pickle

import numpy as np
import pytest
from numba.core.errors import TypingError

from numba_metal import metal
from numba_metal.errors import (KernelCompilationError, KernelLaunchError, LaunchArgumentError, NumbaMetalError,
                                UnsupportedFeatureError, typing_error)


@metal.jit
def store_one(a):
    a[0] = 1


def test_a_kernel_called_without_a_launch_configuration_is_a_value_error():
    with pytest.raises(ValueError, match="launch configuration") as info:
        store_one(np.zeros(1, np.float32))
    assert isinstance(info.value, KernelLaunchError)


def test_a_launch_type_error_is_a_type_error_and_a_launch_error():
    assert issubclass(LaunchArgumentError, TypeError) and issubclass(LaunchArgumentError, KernelLaunchError)


def test_a_wrong_shared_array_dtype_is_a_typing_error():
    def k(out):
        s = metal.shared.array(4, "float32x")
        out[0] = s[0]

    with pytest.raises(TypingError, match="Invalid NumPy dtype specified") as info:
        metal.compile_msl(k, "void(float32[:])")
    assert isinstance(info.value, UnsupportedFeatureError)
    assert ":" in str(info.value).split(" ")[0]  # file:line first
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is type(info.value) and str(again) == str(info.value)


def test_a_call_numba_cannot_type_is_a_typing_error_and_a_compilation_error():
    def k(out):
        out[0] = metal.popc(out)

    with pytest.raises(TypingError) as info:
        metal.compile_msl(k, "void(int32[:])")
    assert isinstance(info.value, NumbaMetalError)
    assert "\x1b[" not in str(info.value)  # no terminal highlighting


def test_typing_error_keeps_class_message_and_location():
    e = KernelCompilationError("bad", ("k.py", 3))
    t = typing_error(e)
    assert isinstance(t, KernelCompilationError) and isinstance(t, TypingError)
    assert str(t) == str(e) and t.location == ("k.py", 3)
    assert typing_error(t) is t


@pytest.fixture
def numba_highlights(monkeypatch):
    """Numba's messages as an installation with colorama gives them: wrapped in terminal escape codes
    (numba.core.errors.termcolor() is a HighlightColorScheme only when colorama imports)."""
    from numba.core import errors as numba_errors

    class Bold:
        def __getattr__(self, name):
            return lambda text: f"\x1b[1m{text}\x1b[0m"

    monkeypatch.setattr(numba_errors, "_termcolor_inst", Bold())


def test_a_message_quoting_numba_keeps_its_words_without_its_terminal_highlighting(numba_highlights):
    def k(out):
        s = metal.local.array(4, "int33")
        out[0] = s[0]

    with pytest.raises(TypingError) as info:
        metal.compile_msl(k, "void(int32[:])")
    assert "metal.local.array(shape, dtype): Invalid NumPy dtype specified: 'int33'; use a Numba type" \
        in str(info.value)
    assert "\x1b" not in str(info.value) and "\x1b" not in info.value.message
    assert NumbaMetalError("\x1b[1mbold\x1b[0m and plain").message == "bold and plain"
