"""Round trips with PyTorch (CPU wheels) and MLX (its Linux CPU build) where they are installed: zero-copy
where the memory allows it, values checked otherwise. ``.ci/run`` installs both."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from numba_metal import metal

ON_CPU_DEVICE = metal.get_device_info().kind == "cpu"


@metal.jit
def times_two(a):
    i = metal.grid(1)
    if i < a.size:
        a[i] *= 2


def page_aligned(n, dtype=np.float32) -> np.ndarray:
    return np.frombuffer(mmap.mmap(-1, n * np.dtype(dtype).itemsize), dtype=dtype, count=n)


# -- PyTorch ----------------------------------------------------------------------------------


def test_numba_metal_to_torch_is_zero_copy():
    torch = pytest.importorskip("torch")
    d = metal.to_device(np.arange(12, dtype=np.float32).reshape(3, 4))
    t = torch.from_dlpack(d)
    if not ON_CPU_DEVICE:
        # kDLMetal: PyTorch makes an MPS tensor over the MTLBuffer (its data pointer is the MTLBuffer).
        assert t.device.type == "mps" and t.data_ptr() == d.buffer.native_handle()
        if not torch.backends.mps.is_available():
            return   # (PyTorch without its MPS backend, e.g. on the simulated Metal device, cannot read it)
        assert t.cpu().tolist() == d.copy_to_host().tolist()
        return
    assert t.data_ptr() == d.buffer.address and t.shape == (3, 4)
    times_two[1, 16](d.ravel())
    metal.synchronize()
    assert t.tolist() == (np.arange(12).reshape(3, 4) * 2).tolist()
    t[0, 0] = 100                                   # and writes go the other way
    assert d.copy_to_host()[0, 0] == 100
    assert torch.from_dlpack(d.T).tolist() == d.copy_to_host().T.tolist()
    assert torch.from_dlpack(d[:, ::2]).tolist() == d.copy_to_host()[:, ::2].tolist()   # (PyTorch aborts the process on negative strides, NumPy's too)
    assert tuple(torch.from_dlpack(metal.device_array((0, 5), np.int32)).shape) == (0, 5)


def test_torch_to_numba_metal_zero_copy_when_page_aligned():
    torch = pytest.importorskip("torch")
    host = page_aligned(1024)
    t = torch.from_numpy(host)
    t[:] = torch.arange(1024, dtype=torch.float32)
    d = metal.from_dlpack(t)
    assert d.buffer.address == t.data_ptr()
    times_two[4, 256](d)
    metal.synchronize()
    assert torch.equal(t, torch.arange(1024, dtype=torch.float32) * 2)
    assert metal.as_metal_array(t.view(32, 32).T).shape == (32, 32)


def test_torch_tensors_of_any_alignment_and_dtype():
    torch = pytest.importorskip("torch")
    for dtype in (torch.float32, torch.int64, torch.float16, torch.uint8, torch.bool, torch.float64):
        t = (torch.arange(1, 26) % 7).to(dtype)[1:].reshape(4, 6)
        d = metal.from_dlpack(t)                    # copied unless page-aligned
        np.testing.assert_array_equal(d.copy_to_host(), t.numpy())
    unaligned = torch.arange(10, dtype=torch.float32)[1:]
    with pytest.raises(metal.DLPackError, match="page size"):
        metal.from_dlpack(unaligned, copy=False)
    with pytest.raises(metal.DLPackError, match="refused.*gradient"):
        metal.from_dlpack(torch.zeros(3, requires_grad=True))
    with pytest.raises(metal.DLPackError, match="bfloat16"):
        metal.from_dlpack(torch.zeros(3, dtype=torch.bfloat16))


def test_kernels_take_torch_tensors():
    torch = pytest.importorskip("torch")
    for t in (torch.arange(300, dtype=torch.float32), torch.from_numpy(page_aligned(300))):
        t[:] = torch.arange(300, dtype=torch.float32)
        times_two[2, 256](t)
        assert torch.equal(t, torch.arange(300, dtype=torch.float32) * 2)
    with pytest.raises(metal.KernelLaunchError, match="argument 0"):
        times_two[1, 1](torch.zeros(3, requires_grad=True))


# -- MLX ------------------------------------------------------------------------------------------


def test_mlx_round_trip():
    mx = pytest.importorskip("mlx.core")
    a = mx.arange(10, dtype=mx.float32) * 3
    d = metal.from_dlpack(a)
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(10) * 3)
    times_two[1, 16](d)
    try:
        back = mx.from_dlpack(d)                   # kDLCPU on the CPU device, kDLMetal on a Metal device
    except ValueError as e:
        if ON_CPU_DEVICE or "Metal DLPack import is not available" not in str(e):
            raise
        pytest.skip(f"this MLX build cannot import Metal buffers: {e}")
    assert back.tolist() == (np.arange(10) * 6).tolist()
    m2 = mx.array(np.asarray(metal.to_device(np.eye(3, dtype=np.float32))))
    assert m2.tolist() == np.eye(3).tolist()


def test_kernels_take_mlx_arrays():
    mx = pytest.importorskip("mlx.core")
    a = mx.arange(8, dtype=mx.int32)
    mx.eval(a)
    times_two[1, 8](a)       # MLX exports writable host memory: the kernel updates it in place (or via a copy)
    assert a.tolist() == [2 * i for i in range(8)]
