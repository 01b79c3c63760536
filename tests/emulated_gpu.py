"""A GPU device for tests on machines without one: the methods the runtime calls on a CUDA
device (vdla.driver.devices.cuda), over host memory, where a launch runs the kernel's CPU
emulation (vdla.compiler.codegen.nvptx.emulate). It is given the kernels in launch form by name,
as the compiler lowered them (record_gpu_kernels catches them during a compile).

gpu_for_tests is what the GPU-path tests run artifacts on: this emulation, or with
VDLA_TESTS_ON_GPU=1 (benchmarks/gpu_device_check.sh sets it on a GPU machine) the real CUDA GPU."""
from __future__ import annotations

import contextlib
import os

import numpy as np

from vdla.compiler.codegen.nvptx import build as nvptx_build
from vdla.compiler.codegen.nvptx.emulate import build_emulation
from vdla.compiler.schedule.gpu import GpuFunction


class EmulatedGpu:
    arch = "sm_90"

    def __init__(self, kernels: dict):
        self.kernels = kernels                 # name -> GpuKernel, as record_gpu_kernels fills it
        self._emulations = {}
        self._modules = []
        self.launched, self.writes, self.reads, self.freed = [], 0, 0, 0

    def load_module(self, ptx):
        """The kernels compiled into this PTX (record_gpu_kernels keeps them by module), else the
        ones compiled so far: a later compile may reuse a name (g0_...) for another kernel."""
        assert ".entry" in ptx
        own = getattr(self.kernels, "by_ptx", {}).get(ptx)
        self._modules.append(dict(own if own is not None else self.kernels))
        return len(self._modules) - 1

    def alloc(self, nbytes):
        return np.zeros(nbytes, np.uint8)

    def view(self, buf, offset, nbytes):
        return buf[offset:offset + nbytes]

    def free(self, buf):
        self.freed += 1

    def write(self, buf, data):
        buf[:data.nbytes] = data.reshape(-1).view(np.uint8)
        self.writes += 1

    def read(self, buf, dtype, shape):
        self.reads += 1
        return buf.view(dtype)[:int(np.prod(shape))].reshape(shape).copy()

    def launch(self, module, kernel, grid, block, buffers, shared_bytes=0):
        k = self._modules[module][kernel]
        if (module, kernel) not in self._emulations:
            same = next((key for key, (kk, _) in self._emulations.items() if kk is k), None)
            run = self._emulations[same][1] if same else build_emulation(GpuFunction(k.name, k.params, [], [k]))
            self._emulations[(module, kernel)] = (k, run)
        assert (tuple(grid), tuple(block)) == (k.grid, k.block) and len(buffers) == len(k.params)
        self._emulations[(module, kernel)][1](*[b.view(p.dtype)[:p.size()].reshape(p.shape) for b, p in zip(buffers, k.params)])
        self.launched.append(kernel)

    def synchronize(self):
        pass


class RecordedKernels(dict):
    """name -> GpuKernel of everything compiled, and `by_ptx`: each module's own kernels."""

    def __init__(self):
        super().__init__()
        self.by_ptx = {}


@contextlib.contextmanager
def record_gpu_kernels(monkeypatch):
    """Every kernel build_cuda compiles meanwhile, by name (and by the PTX it went into)."""
    kernels = RecordedKernels()
    original = nvptx_build.codegen_cuda

    def recording(gf, *args, **kwargs):
        kernels.update({k.name: k for k in gf.kernels})
        module = original(gf, *args, **kwargs)
        kernels.by_ptx[module.ptx] = {k.name: k for k in gf.kernels}
        return module
    monkeypatch.setattr(nvptx_build, "codegen_cuda", recording)
    yield kernels


ON_GPU = os.environ.get("VDLA_TESTS_ON_GPU") == "1"
_cuda = []


def gpu_for_tests(kernels: dict):
    """The emulated GPU over `kernels`, or with VDLA_TESTS_ON_GPU=1 the CUDA GPU (opened once;
    a DeviceError where there is none: that run asked for a GPU)."""
    if not ON_GPU:
        return EmulatedGpu(kernels)
    if not _cuda:
        from vdla.driver.devices.cuda import CudaDevice
        _cuda.append(CudaDevice())
    return _cuda[0]
