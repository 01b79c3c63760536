"""The CUDA target: LLVM's NVPTX backend for one GPU architecture (sm_80, sm_90)."""
from __future__ import annotations

from vdla.driver import gpu_limits as limits

from ...target import TargetError, _init_llvm

TRIPLE = "nvptx64-nvidia-cuda"


class CudaTarget:
    """What LLVMCodegen and emit.optimize ask of a target, for NVPTX: kernels have no thread
    pool (threads = 1: a parallel loop is a plain loop) and 64-bit pointers."""

    triple = llvm_triple = TRIPLE
    threads = 1
    pointer_bits = 64
    hard_float = False

    def __init__(self, arch: str = limits.DEFAULT_ARCH):
        if arch not in limits.ARCHS:
            raise TargetError(f"CUDA architecture {arch!r} is not one vdla emits PTX for; known: "
                              f"{', '.join(limits.ARCHS)}")
        self.arch = self.cpu = arch
        self.features = ""

    def target_machine(self, opt=3):
        import llvmlite.binding as llvm
        _init_llvm()
        return llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=self.arch, opt=opt)

    def __repr__(self):
        return f"CudaTarget({self.arch!r})"
