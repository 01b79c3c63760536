"""The VDLA backend: loop IR with accelerator scopes and tensorized intrinsics -> a
KernelProgram of runtime calls (vdla.driver.runtime.program). The passes, in the order
`vdla.compiler.build.vdla_passes` runs them, each live in a module of their own."""
from .errors import VdlaLoweringError, VtaCompatError
from .dma import inject_dma
from .uops import alias_alu_results, fold_uop_kernels, inject_acc_reset
from .vthread import interleave_virtual_threads
from .storage import check_storage
from .emit import emit_program

__all__ = ["VdlaLoweringError", "VtaCompatError", "inject_dma", "alias_alu_results", "fold_uop_kernels",
           "inject_acc_reset", "interleave_virtual_threads", "check_storage", "emit_program"]
