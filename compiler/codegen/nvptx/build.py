"""build_cuda: GPU schedule -> kernels (schedule.gpu) -> NVPTX LLVM IR -> PTX, one module.

The pipeline for each kernel after lowering, in order: flatten_buffers, simplify; then code generation, LLVM's O3 pipeline for the architecture and PTX out. The
result is what the deploy runtime launches (vdla.driver.gpu_program.GpuProgram): the PTX, each
kernel's entry name, grid, block and buffers, and the temporaries to allocate in device memory.
"""
from __future__ import annotations

from dataclasses import dataclass

from vdla.driver import gpu_limits as limits
from vdla.driver.gpu_program import GpuLaunch, GpuProgram   # the format the runtime replays

from ...schedule.gpu import GpuFunction, GpuKernel, lower_gpu
from ...tir import dtype as dt
from ...tir import passes as T
from ...tir.verify import verify
from ..emit import optimize, parse
from .codegen import NVPTXCodegen
from .target import CudaTarget

KERNEL_PASSES = [
    ("flatten_buffers", T.flatten_buffers),
    ("simplify_flat", T.simplify_func),
]


@dataclass
class CudaModule(GpuProgram):
    """The deploy runtime's GpuProgram, with the IR it came from (for reading, not running)."""
    llvm_ir: str = ""
    loop_ir: str = ""


def kernel_ir(kernel: GpuKernel, check=False) -> GpuKernel:
    func = kernel.func
    for stage, fn in KERNEL_PASSES:
        func = fn(func)
        if check:
            verify(func, stage=stage)
    return kernel.with_func(func)


def codegen_cuda(gf: GpuFunction, arch: str = limits.DEFAULT_ARCH, check=False) -> CudaModule:
    target = CudaTarget(arch)
    cg = NVPTXCodegen(target, module_name=gf.name)
    every = gf.params + gf.temporaries
    kernels = []
    for k in gf.kernels:
        k = kernel_ir(k, check)
        cg.add_kernel(k)
        shared = sum(b.size() * dt.itemsize(b.dtype) for b in k.allocations("shared"))
        kernels.append(GpuLaunch(k.name, k.grid, k.block, [every.index(b) for b in k.params], shared))
    mod = optimize(parse(str(cg.module)), target)
    ptx = target.target_machine().emit_assembly(mod)
    spec = lambda b: (b.name, tuple(b.shape), b.dtype)  # noqa: E731
    return CudaModule(gf.name, arch, ptx, [spec(b) for b in gf.params], [spec(b) for b in gf.temporaries],
                      kernels, gf.num_outputs, str(mod), repr(gf))


def build_cuda(schedule, args, name="kernel", arch=limits.DEFAULT_ARCH, check=False) -> CudaModule:
    """Compile a GPU schedule; `args` are its tensors in order (inputs, then outputs)."""
    return codegen_cuda(lower_gpu(schedule, args, name, check=check), arch, check=check)
