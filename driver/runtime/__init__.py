"""The instruction-stream runtime (SPEC §6): command queue, micro-op kernels and their cache,
dependence tokens, synchronize; the KernelProgram format of compiled VDLA kernels and its replay;
the SPEC §7 DRAM layouts (layout.py)."""
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
