"""The requantizer on the OUT write-back path (a VDLA extension): what it computes, its
registers and their packing. Stated here once; the simulator, the RTL's package, the
reference model (which restates it on purpose, as the oracle), the runtime and the compiler
read it.

Every GEMM or ALU write of ACC[a] also writes OUT[a], which STORE moves to DRAM. VTA keeps
the low 8 bits, so a conv's requantization (bias, per-channel scale, rounding, zero point,
clip) is a chain of ALU passes over its output before the store: about seven compute cycles
per output vector, more than a 1x1 conv's GEMM takes. With an instruction's `requant` bit
set, its writes go through this unit instead, in the write-back pipeline of the compute
module, so the chain costs no compute cycles at all: the conv's last GEMM leaves the int8
result in OUT.

Each lane has three 32-bit registers, loaded by ALU SETQ (register d <- ACC[s], per lane):

  BIAS  b: int32, added to the accumulator (exactly: 33 bits)
  MUL   m: the low MUL_BITS bits read as a signed number (two DSP48E1 per lane)
  CTRL  c: bits [5:0] the right shift s (0..63), [6] table, [15:8] the zero point z,
        [23:16] the clip's lo, [31:24] its hi (each a signed int8)

  requantize(x) = min(max((((x + b) * m + round) >> s) + z, lo), hi),  round = 2^(s-1) if
  s else 0, all exact (the product has 51 bits); >> is arithmetic (a floor), so the rounding
  is half up. With lo <= hi the result is in lo..hi; with lo > hi it is hi.

With CTRL's table bit the lane writes the ALU's lookup table's entry for that int8 result
instead (vdla.hw.alu_ops: the table LOAD LUT filled, the entry ALU LUT would read for it), so
an activation between two quantizations (SiLU, GELU, sigmoid) costs the epilogue nothing
either: the table reads a second port of each lane's copy, in the last stage.

The result is what OUT[a] holds; ACC[a] keeps the accumulator. One register set serves a
block of channels (one per lane), so a compiler sets them per output-channel block before
the instruction that writes that block's final values. Like every SRAM, the registers hold at
launch whatever the last launch left (the simulator starts from zeros): a stream runs SETQ
before its first instruction with the requant bit. SETQ with the requant bit set writes no
OUT but still takes the unit's drain (the bit is the instruction's, not the opcode's).
"""
from __future__ import annotations

import numpy as np

from .alu_ops import table_lookup

# The registers SETQ addresses (its destination index), in order.
REGISTERS = ("bias", "mul", "ctrl")
BIAS, MUL, CTRL = range(len(REGISTERS))

# The multiplier's width: 18 bits signed, one DSP48E1 input, so that (x + b) * m takes two
# DSP48E1 per lane (33 x 18 bits).
MUL_BITS = 18
MUL_MIN, MUL_MAX = -(1 << (MUL_BITS - 1)), (1 << (MUL_BITS - 1)) - 1

# CTRL's fields: (name, lowest bit, width, signed)
SHIFT_BITS = 6
CTRL_FIELDS = (("shift", 0, SHIFT_BITS, False), ("table", 6, 1, False), ("zero", 8, 8, True), ("lo", 16, 8, True),
               ("hi", 24, 8, True))
SHIFT_MAX = (1 << SHIFT_BITS) - 1


def pack_ctrl(shift, zero, lo, hi, table=False) -> np.ndarray:
    """CTRL words (int32) of shift 0..SHIFT_MAX, zero point and clip bounds in int8 and the
    table bit; arguments broadcast (one per lane, say)."""
    shift, zero, lo, hi, table = (np.asarray(v, dtype=np.int64) for v in (shift, zero, lo, hi, table))
    if np.any((shift < 0) | (shift > SHIFT_MAX)):
        raise ValueError(f"requantizer shift outside 0..{SHIFT_MAX}: {shift.min()}..{shift.max()}")
    for name, v in (("zero point", zero), ("lo", lo), ("hi", hi)):
        if np.any((v < -128) | (v > 127)):
            raise ValueError(f"requantizer {name} outside the int8 range: {v.min()}..{v.max()}")
    values = {"shift": shift, "table": table != 0, "zero": zero, "lo": lo, "hi": hi}
    word = sum((values[name] & ((1 << width) - 1)) << lsb for name, lsb, width, _ in CTRL_FIELDS)
    return np.asarray(word, dtype=np.int64).astype(np.uint32).view(np.int32)


def ctrl_field(ctrl, name: str) -> np.ndarray:
    """One field of CTRL words, as int64."""
    _, lsb, width, signed = next(f for f in CTRL_FIELDS if f[0] == name)
    v = (np.asarray(ctrl, dtype=np.int64) >> lsb) & ((1 << width) - 1)
    return v - ((v >> (width - 1)) << width) if signed else v


def multiplier(mul) -> np.ndarray:
    """The multiplier the unit reads from MUL words: their low MUL_BITS, signed."""
    v = np.asarray(mul, dtype=np.int64) & ((1 << MUL_BITS) - 1)
    return v - ((v >> (MUL_BITS - 1)) << MUL_BITS)


def requantize(x, bias, mul, ctrl, table=None) -> np.ndarray:
    """OUT's int8 values for accumulators x (int32) and registers broadcast against them
    (one per lane, on x's last axes); where CTRL's table bit is set, the entry of `table` (the
    lookup table's TABLE_ENTRIES int8 entries, vdla.hw.alu_ops.table_lookup) for the result."""
    x = np.asarray(x, dtype=np.int64)
    s = ctrl_field(ctrl, "shift")
    # (x + b) * m fits 51 bits, + round fits 52: exact in int64
    t = (x + np.asarray(bias, dtype=np.int64)) * multiplier(mul)
    r = (t + np.where(s > 0, np.left_shift(1, np.maximum(s - 1, 0)), 0)) >> s
    y = np.minimum(np.maximum(r + ctrl_field(ctrl, "zero"), ctrl_field(ctrl, "lo")), ctrl_field(ctrl, "hi"))
    looked = ctrl_field(ctrl, "table") != 0
    if table is not None and np.any(looked):
        y = np.where(looked, table_lookup(y, np.asarray(table).reshape(-1)), y)
    return y.astype(np.int8)
