"""The launch state's argument encoder (numba_metal/host/encoder.py), generated from a kernel's ABI: it packs
the argument struct in the ABI's layout, skips arrays identical to the previous launch's, and leaves any
argument that is not a device array to the general path."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.compiler.driver import compile_kernel
from numba_metal.host.encoder import encoder

f32 = types.float32


class _State:
    """The launch state's side of the encoder's interface, recording what it is asked."""

    def __init__(self, kabi, arrays):
        self.view = bytearray(max(kabi.arg_size, 1))
        self.last = (None,) * len(kabi.arrays)
        self.values = ()
        self.shared_length = None
        self.arrays = arrays
        self.bound = []

    def bind(self, j, a):
        self.bound.append(j)
        return self.arrays.get(id(a))

    def set_shared_length(self, n):
        self.shared_length = n


class _Config:
    sharedmem = 100
    shared_length = 112


def test_the_generated_encoder_packs_the_layout_and_skips_unchanged_arrays():
    def k(a, n, x):
        s = metal.shared.array(0, np.float32)
        s[0] = x
        a[0, 0] = n

    kabi = compile_kernel(k, (f32[:, ::1], types.int16, f32)).abi
    encode, encode_bound = encoder(kabi)
    a, other = object(), object()
    state = _State(kabi, {id(a): (3, 4, 4, 1)})
    assert encode(state, (a, 7, 2.5), _Config)
    assert state.bound == [0] and state.shared_length == 112
    expected = struct.pack(kabi.arg_format, 3, 4, 4, 1, 2.5, 100, 7)
    assert bytes(state.view[:len(expected)]) == expected
    assert encode(state, (a, 8, 2.5), _Config) and state.bound == [0]  # the same array: not bound again
    assert not encode(state, (other, 8, 2.5), _Config)                  # not a device array: general path
    state.view[:] = bytes(len(state.view))
    encode_bound(state, (5, 6, 6, 1), (other, 9, 1.0), _Config)
    assert bytes(state.view[:len(expected)]) == struct.pack(kabi.arg_format, 5, 6, 6, 1, 1.0, 100, 9)
    with pytest.raises(struct.error):
        encode(state, (a, 2 ** 20, 1.0), _Config)


def test_the_arrays_members_are_packed_when_arrays_are_bound_and_kept_while_they_are_the_same():
    """The encoder packs an array's shape and strides when it binds the array; while the same arrays come
    back only the scalars are packed again, and after the general path (whose caller forgets the bound
    arrays) the next launch binds and packs its arrays again."""
    def k(a, b, x):
        a[0] = b[0, 0] + x

    kabi = compile_kernel(k, (f32[::1], f32[:, :], types.int32)).abi
    encode, encode_bound = encoder(kabi)
    a, b, host = object(), object(), object()
    state = _State(kabi, {id(a): (5, 1), id(b): (2, 3, 3, 1, 4)})   # b: layout 'A', with an origin
    assert encode(state, (a, b, 7), _Config)
    assert bytes(state.view[:struct.calcsize(kabi.arg_format)]) == struct.pack(kabi.arg_format, 5, 1, 2, 3, 3, 1, 4, 7)
    assert encode(state, (a, b, -9), _Config) and state.bound == [0, 1]
    assert bytes(state.view[:struct.calcsize(kabi.arg_format)]) == struct.pack(kabi.arg_format, 5, 1, 2, 3, 3, 1, 4, -9)
    state.last = (None, None)   # what LaunchState._encode_general does before binding other arrays
    encode_bound(state, (64, 1, 8, 8, 8, 1, 0), (host, host, 1), _Config)
    assert bytes(state.view[:struct.calcsize(kabi.arg_format)]) == struct.pack(kabi.arg_format, 64, 1, 8, 8, 8, 1, 0, 1)
    assert encode(state, (a, b, 2), _Config) and state.bound == [0, 1, 0, 1]
    assert bytes(state.view[:struct.calcsize(kabi.arg_format)]) == struct.pack(kabi.arg_format, 5, 1, 2, 3, 3, 1, 4, 2)
