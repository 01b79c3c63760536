"""A CUDA GPU through the driver API, from Python: cuda-bindings (`pip install 'vdla[gpu]'`).

One device: its primary context, one stream for every copy and launch (so kernels run in the
order they are launched, each after the copies before it), PTX modules loaded (the driver
compiles them for the GPU), linear device memory. What gpu_program.GpuRunner calls. Every CUDA
error is a DeviceError naming the call and CUDA's description; no GPU, no driver or no
cuda-bindings is a DeviceError saying which.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..device import DeviceError


@dataclass(frozen=True)
class CudaBuffer:
    ptr: int
    nbytes: int


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError:
        raise DeviceError("the CUDA device needs cuda-bindings: pip install 'vdla[gpu]'") from None
    return driver


class CudaDevice:
    def __init__(self, ordinal: int = 0):
        self._cu = cu = _driver()
        try:
            self._call("cuInit", 0)
        except DeviceError as exc:  # e.g. CUDA_ERROR_NO_DEVICE
            raise DeviceError(f"no CUDA device: {exc}") from None
        except Exception as exc:    # cuda-bindings raises its own error when libcuda is missing
            raise DeviceError(f"no CUDA device: the NVIDIA driver cannot be loaded ({type(exc).__name__}: {exc})") \
                from None
        count = self._call("cuDeviceGetCount")
        if not 0 <= ordinal < count:
            raise DeviceError(f"no CUDA device {ordinal}: this machine has {count}")
        self._dev = self._call("cuDeviceGet", ordinal)
        attr = cu.CUdevice_attribute
        major = self._call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self._dev)
        minor = self._call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self._dev)
        self.arch = f"sm_{major}{minor}"
        self.name = self._call("cuDeviceGetName", 256, self._dev).split(b"\0")[0].decode()
        self._ctx = self._call("cuDevicePrimaryCtxRetain", self._dev)
        self._call("cuCtxSetCurrent", self._ctx)
        self._stream = self._call("cuStreamCreate", 0)
        self._modules, self._functions = [], {}

    def _call(self, name, *args):
        """cuda-bindings returns (CUresult, values...): the values, or a DeviceError."""
        out = getattr(self._cu, name)(*args)
        err, values = out[0], out[1:]
        if err != self._cu.CUresult.CUDA_SUCCESS:
            _, text = self._cu.cuGetErrorString(err)
            raise DeviceError(f"CUDA {name} failed: {err.name}: {text.decode() if text else 'unknown error'}")
        return values[0] if len(values) == 1 else values if values else None

    def __repr__(self):
        return f"CudaDevice({self.name}, {self.arch})"

    # -- memory -----------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> CudaBuffer:
        return CudaBuffer(int(self._call("cuMemAlloc", max(1, int(nbytes)))), int(nbytes))

    def view(self, buf: CudaBuffer, offset: int, nbytes: int) -> CudaBuffer:
        """Bytes [offset, offset + nbytes) of `buf` (not to be freed on their own)."""
        if offset < 0 or offset + nbytes > buf.nbytes:
            raise DeviceError(f"view [{offset}, {offset + nbytes}) of a device buffer of {buf.nbytes} bytes")
        return CudaBuffer(buf.ptr + offset, nbytes)

    def free(self, buf: CudaBuffer) -> None:
        self._call("cuMemFree", self._cu.CUdeviceptr(buf.ptr))

    def write(self, buf: CudaBuffer, data: np.ndarray) -> None:
        data = np.ascontiguousarray(data)
        if data.nbytes > buf.nbytes:
            raise DeviceError(f"write of {data.nbytes} bytes into a device buffer of {buf.nbytes}")
        self._call("cuMemcpyHtoDAsync", self._cu.CUdeviceptr(buf.ptr), data.ctypes.data, data.nbytes, self._stream)
        self.synchronize()   # `data` may be a temporary: the copy must finish before it goes

    def read(self, buf: CudaBuffer, dtype, shape) -> np.ndarray:
        out = np.empty(shape, dtype)
        if out.nbytes > buf.nbytes:
            raise DeviceError(f"read of {out.nbytes} bytes from a device buffer of {buf.nbytes}")
        self._call("cuMemcpyDtoHAsync", out.ctypes.data, self._cu.CUdeviceptr(buf.ptr), out.nbytes, self._stream)
        self.synchronize()
        return out

    # -- code -------------------------------------------------------------------------------
    def load_module(self, ptx: str):
        module = self._call("cuModuleLoadData", ptx.encode() + b"\0")
        self._modules.append(module)
        return module

    def launch(self, module, kernel: str, grid, block, buffers, shared_bytes: int = 0) -> None:
        key = (id(module), kernel)
        if key not in self._functions:
            self._functions[key] = self._call("cuModuleGetFunction", module, kernel.encode())
        # kernelParams: an array of pointers, each to one argument's value (a device pointer)
        values = np.array([b.ptr for b in buffers], dtype=np.uint64)
        pointers = np.array([values.ctypes.data + 8 * k for k in range(len(buffers))], dtype=np.uint64)
        self._call("cuLaunchKernel", self._functions[key], *grid, *block, shared_bytes, self._stream,
                   pointers.ctypes.data, 0)

    def synchronize(self) -> None:
        self._call("cuStreamSynchronize", self._stream)

    def close(self) -> None:
        for module in self._modules:
            self._call("cuModuleUnload", module)
        self._modules, self._functions = [], {}
        self._call("cuStreamDestroy", self._stream)
        self._call("cuDevicePrimaryCtxRelease", self._dev)
