"""vdla.hw: the single source of truth for the VDLA hardware contract.

Configuration (presets and JSON files, validated), the ISA (encode/decode/disassemble), the
ALU's lane semantics and legal immediates (alu_ops), and the timing parameters the simulator
and the RTL share. Imports nothing else of vdla.
"""
from .config import DEFAULT_PRESET, PRESETS, HwConfig, load_config, require_config
from .disasm import disassemble, format_insn
from .isa import (DEP_FLAGS, FLAG_QUEUE, INSN_BYTES, TOKEN_QUEUES, AluInsn, AluOp, DepthwiseInsn, FinishInsn,
                  GemmInsn, Insn, Isa, MemInsn, MemType, Module, Opcode, Uop)
from .timing import Timing

__all__ = [
    "DEFAULT_PRESET", "PRESETS", "HwConfig", "load_config", "require_config", "disassemble", "format_insn",
    "DEP_FLAGS", "FLAG_QUEUE", "INSN_BYTES", "TOKEN_QUEUES", "AluInsn", "AluOp", "DepthwiseInsn", "FinishInsn",
    "GemmInsn", "Insn", "Isa", "MemInsn", "MemType", "Module", "Opcode", "Uop", "Timing",
]
