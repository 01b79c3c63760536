"""Where VTA's hardware computes something other than VDLA's contract (SPEC §3).

VDLA's 128-bit encoding is VTA's for the default configuration, so a stream decodes the same
on both; these are the semantic differences, taken from VTA's HLS design (the published
PYNQ/Ultra96 bitstreams). The VTA-compatibility check (vdla.simulator.vta_check) flags
streams that depend on them, and the compiler's VTA mode avoids them.
"""
from __future__ import annotations

from .isa import AluOp, MemType

# The tensor ALU decodes MIN, MAX, ADD and SHR; MUL, LUT, SETQ and FLUSH are VDLA extensions.
ALU_OPS = frozenset({AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR})

# SHR reads the low SHIFT_BITS of its operand as a signed amount (VDLA reads
# alu_ops.SHIFT_BITS = 6), so only shifts in this range mean the same on both.
SHIFT_BITS = 5
SHR_MIN, SHR_MAX = -(1 << (SHIFT_BITS - 1)), (1 << (SHIFT_BITS - 1)) - 1

# LOAD memory types; ACC_8BIT (int8 sign-extended into the accumulator) and LUT (the ALU's lookup
# table) are VDLA extensions.
MEM_TYPES = frozenset({MemType.UOP, MemType.WGT, MemType.INP, MemType.ACC, MemType.OUT})

# The DMA writes the pad fields' rows and columns only for these; WGT and UOP loads copy
# y_size x x_size elements contiguously and ignore the pad fields.
PADDED_LOAD_TYPES = frozenset({MemType.INP, MemType.ACC})

# Padding is zeros only: bit 58 (VDLA's LOAD pad_min) is unused in VTA's layout.
PAD_VALUE = 0

# The ALU ignores the reset bit (only GEMM reads it). VDLA's ALU follows (vdla.hw.isa); the
# check still flags the bit, since a stream that sets it expects a zeroing neither machine does.
ALU_HONOURS_RESET = False

# A GEMM with reset zeroes the accumulators but still computes old accumulator + products and
# writes its int8 truncation to OUT: OUT after a reset is not zero (VDLA's contract: zero).
RESET_ZEROES_OUT = False

# On-chip SRAMs keep whatever they held (another launch's data, power-up noise): a stream
# must write every entry before reading it.
SRAM_ZEROED_AT_LAUNCH = False
