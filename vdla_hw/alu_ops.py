"""The tensor ALU, one lane at a time (SPEC §3): what each opcode computes and which
immediates a program may give it. Stated here once; everything else reads it.

An ALU step updates one accumulator lane x with an operand b -- the instruction's immediate
or the same lane of ACC[src]:

  MIN  min(x, b)       MAX  max(x, b)          (signed)
  ADD  x + b           MUL  x * b              (the low 32 bits of the exact result)
  SHR  b's low SHIFT_BITS read as a signed amount a: a >= 0 shifts x right (arithmetic),
       a < 0 shifts it left by -a (the low 32 bits; -32 leaves 0)
  LUT  TABLE[clamp(x, TABLE_MIN, TABLE_MAX) - TABLE_MIN], sign-extended: x saturated to int8
       indexes the lookup table; b is read (a tensor operand costs its cycle) and ignored
  FLUSH x + b is written back to OUT (its low bits, or with the requant bit through the
       requantizer) and the accumulator lane is left 0: the last step of an epilogue, which
       also clears the tile's accumulators for the next tile's GEMMs (no reset pass there)

The lookup table (a VDLA extension, like MUL) holds TABLE_ENTRIES int8 entries, one copy per
lane so that every lane looks up in the same cycle. LOAD LUT writes it (SPEC §3's LOAD, with
ACC_8BIT's element of BATCH x BLOCK_OUT int8: element e holds entries e*lanes .. e*lanes +
lanes - 1, lane k entry e*lanes + k; HwConfig.lut_depth elements). It is the int8 -> int8 map
an epilogue ends with: requantization's saturation, and after it any activation (SiLU,
sigmoid, GELU, HardSwish) as one step instead of a chain or a trip to the CPU. Its contents
at launch are whatever the last launch left (like every SRAM): a stream loads it before use.

Readers: the simulator (its engines compose these steps in closed form: alu_algebra), the
runtime's kernel checks, the compiler's ALU intrinsics and epilogues, the RTL test programs
and the tests. The independent reference model (vdla.simulator.reference) states the lane
operations again on purpose: it is the oracle this statement is tested against.
"""
from __future__ import annotations

import numpy as np

from .isa import IMM_BITS, AluOp

# The accumulator lane every ALU operation computes on (the config allows int32 only).
LANE_BITS = 32
LANE_MIN, LANE_MAX = -(1 << (LANE_BITS - 1)), (1 << (LANE_BITS - 1)) - 1

# The signed immediate field's range.
IMM_MIN, IMM_MAX = -(1 << (IMM_BITS - 1)), (1 << (IMM_BITS - 1)) - 1

# The lookup table: indexed by int8 codes, holding int8 codes.
TABLE_BITS = 8
TABLE_ENTRIES = 1 << TABLE_BITS
TABLE_MIN, TABLE_MAX = -(1 << (TABLE_BITS - 1)), (1 << (TABLE_BITS - 1)) - 1

# SHR reads only the operand's low SHIFT_BITS, so these are the shifts it can express; an
# immediate outside the range would silently alias to another shift.
SHIFT_BITS = 6
SHR_MIN, SHR_MAX = -(1 << (SHIFT_BITS - 1)), (1 << (SHIFT_BITS - 1)) - 1
_SHIFT_MASK = (1 << SHIFT_BITS) - 1


def wrap(values) -> np.ndarray:
    """The low LANE_BITS bits of integer values, as int32 (two's complement wrap)."""
    return np.asarray(values).astype(np.uint64).astype(np.uint32).view(np.int32)


def shift_amount(operand):
    """The signed shift amount SHR reads from an operand (>= 0 right, < 0 left)."""
    return ((operand & _SHIFT_MASK) ^ (-SHR_MIN)) + SHR_MIN


def _shr(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = shift_amount(b)
    # |x| < 2^31 and a left shift is at most 32: the int64 result is exact before the wrap
    return np.where(a >= 0, x >> np.maximum(a, 0), x << np.maximum(-a, 0))


# op -> the exact result on int64 lanes holding int32 values, before the wrap to LANE_BITS
_EXACT = {
    AluOp.MIN: np.minimum,
    AluOp.MAX: np.maximum,
    AluOp.ADD: np.add,
    AluOp.MUL: np.multiply,    # |x * b| <= 2^62: exact in int64
    AluOp.SHR: _shr,
    AluOp.FLUSH: np.add,       # the value written back; the accumulator keeps 0 (CLEARING_OPS)
}

# The opcodes after which the accumulator lane holds 0 whatever they computed (written back).
CLEARING_OPS = frozenset({AluOp.FLUSH})


# The opcodes that compute on accumulator lanes: all but SETQ, which loads the requantizer's
# registers (vdla.hw.requantizer) and writes no accumulator.
LANE_OPS = tuple(op for op in AluOp if op != AluOp.SETQ)


def table_index(x) -> np.ndarray:
    """The table entry LUT reads for accumulator values x: x saturated to int8, offset to 0..255."""
    return np.clip(np.asarray(x, dtype=np.int64), TABLE_MIN, TABLE_MAX) - TABLE_MIN


def table_lookup(x, table) -> np.ndarray:
    """LUT on int32 lanes x with the TABLE_ENTRIES-entry int8 table (entry i for code i +
    TABLE_MIN), as int32. `table` may carry leading lane axes that broadcast against x's last
    axes (the hardware's per-lane copies), the entries last."""
    table = np.asarray(table, dtype=np.int8)
    if table.shape[-1] != TABLE_ENTRIES:
        raise ValueError(f"a lookup table has {TABLE_ENTRIES} entries, got {table.shape[-1]}")
    idx = table_index(x)
    if table.ndim == 1:
        return table[idx].astype(np.int32)
    return np.take_along_axis(np.broadcast_to(table, idx.shape + (TABLE_ENTRIES,)),
                              idx[..., None], axis=-1)[..., 0].astype(np.int32)


def lane_op(op: AluOp, x, operand, table=None) -> np.ndarray:
    """op(x, operand) lane-wise on integer arrays (or ints) of int32 values, as int32: the
    value the step writes back to OUT (and, unless op is in CLEARING_OPS, to the accumulator).
    The operand broadcasts against x (an immediate is a scalar). LUT needs the table."""
    try:
        op = AluOp(op)
    except ValueError:
        raise ValueError(f"ALU opcode {op!r} does not exist; valid: "
                         f"{', '.join(f'{o.name} {int(o)}' for o in AluOp)}") from None
    if op == AluOp.SETQ:
        raise ValueError("ALU SETQ loads the requantizer's registers (vdla.hw.requantizer); it is no lane operation")
    if op == AluOp.LUT:
        if table is None:
            raise ValueError("ALU LUT reads the lookup table: pass table=")
        return table_lookup(x, table)
    return wrap(_EXACT[op](np.asarray(x, dtype=np.int64), np.asarray(operand, dtype=np.int64)))


def immediate_error(op: AluOp, imm: int) -> str | None:
    """Why `imm` is not an immediate a program may give `op`, or None if it is. Callers raise
    it as their own error class, prefixed with what they were building."""
    op = AluOp(op)
    if not IMM_MIN <= imm <= IMM_MAX:
        return (f"{op.name} immediate {imm} does not fit the ALU's {IMM_BITS}-bit signed field "
                f"({IMM_MIN}..{IMM_MAX})")
    if op == AluOp.SHR and not SHR_MIN <= imm <= SHR_MAX:
        return (f"SHR immediate {imm} is outside {SHR_MIN}..{SHR_MAX}; the hardware reads the low "
                f"{SHIFT_BITS} bits as a signed amount, so it would shift by {int(shift_amount(imm))}")
    return None
