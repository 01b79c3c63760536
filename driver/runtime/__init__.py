"""The instruction-stream runtime (SPEC §6): command queue, micro-op kernels and their cache,
dependence tokens, synchronize. Compiled VDLA kernels and vdla.driver.programs target it."""
from .command_queue import DEFAULT_TIMEOUT_CYCLES, CommandQueue
from .errors import DependenceError, KernelError, RuntimeStreamError
from .insn_queue import Stage, check_token_balance
from .race_check import Race, find_races
from .uop_cache import UopSramCache
from .uop_kernel import KernelMode, LoopLevel, UopKernel
from .program import KernelProgram, ProgramParam, ProgramRunner, run_program

__all__ = ["CommandQueue", "DEFAULT_TIMEOUT_CYCLES", "DependenceError", "KernelError",
           "RuntimeStreamError", "Stage", "check_token_balance", "Race", "find_races", "UopSramCache",
           "KernelMode", "LoopLevel", "UopKernel", "KernelProgram", "ProgramParam", "ProgramRunner",
           "run_program"]
