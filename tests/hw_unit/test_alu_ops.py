"""vdla.hw.alu_ops, the one statement of the ALU's lane operations and legal immediates,
against the independent reference model's own statement (vdla.simulator.reference._alu_op,
written from the SPEC on Python integers) and against the ISA's field layout."""
import re

import numpy as np
import pytest

from vdla.hw import PRESETS, AluInsn, AluOp, load_config
from vdla.hw.alu_ops import (LANE_OPS, IMM_MAX, IMM_MIN, LANE_MAX, LANE_MIN, SHIFT_BITS, SHR_MAX, SHR_MIN,
                             TABLE_ENTRIES, TABLE_MAX, TABLE_MIN, immediate_error, lane_op, shift_amount,
                             table_lookup, wrap)
from vdla.hw.isa import IMM_BITS, INSN_BITS, INSN_BYTES
from vdla.simulator.reference import _alu_op as reference_alu_op

EDGES = [LANE_MIN, LANE_MIN + 1, -65536, -33, -32, -1, 0, 1, 31, 32, 63, 64, 65535, LANE_MAX - 1, LANE_MAX]


# The reference model states the two-operand ops one lane at a time; LUT reads the table instead
BINARY = [op for op in LANE_OPS if op != AluOp.LUT]


def reference(op: AluOp, x: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([reference_alu_op(int(op), int(p), int(q)) for p, q in zip(x.ravel(), b.ravel())],
                    dtype=np.int64).reshape(x.shape)


@pytest.mark.parametrize("op", BINARY, ids=[op.name for op in BINARY])
def test_lane_op_agrees_with_the_reference_model_on_random_and_edge_operands(op, rng):
    x = rng.integers(LANE_MIN, LANE_MAX + 1, 4000, dtype=np.int64)
    b = rng.integers(LANE_MIN, LANE_MAX + 1, 4000, dtype=np.int64)
    ex, eb = np.meshgrid(EDGES, EDGES)
    x, b = np.concatenate([x, ex.ravel()]), np.concatenate([b, eb.ravel()])
    got = lane_op(op, x.astype(np.int32), b.astype(np.int32))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, reference(op, x, b))


@pytest.mark.parametrize("op", BINARY, ids=[op.name for op in BINARY])
def test_lane_op_with_every_immediate_agrees_with_the_reference_model(op, rng):
    """Every value the immediate field holds (SHR: also the amounts that alias), one scalar
    broadcast over random lanes."""
    imms = np.arange(IMM_MIN, IMM_MAX + 1, 97 if op != AluOp.SHR else 1)
    x = rng.integers(LANE_MIN, LANE_MAX + 1, (imms.size, 4), dtype=np.int64)
    x[:, 0] = LANE_MIN
    x[:, 1] = LANE_MAX
    got = np.stack([lane_op(op, row, int(imm)) for row, imm in zip(x, imms)])
    np.testing.assert_array_equal(got, reference(op, x, np.repeat(imms[:, None], 4, axis=1)))


def test_lut_saturates_to_int8_then_reads_the_entry_of_that_code(rng):
    table = rng.integers(TABLE_MIN, TABLE_MAX + 1, TABLE_ENTRIES).astype(np.int8)
    x = np.concatenate([rng.integers(LANE_MIN, LANE_MAX + 1, 2000), np.array(EDGES), np.arange(-300, 300)])
    expected = [int(table[min(max(int(v), -128), 127) + 128]) for v in x]     # restated from the docstring
    got = lane_op(AluOp.LUT, x.astype(np.int32), rng.integers(LANE_MIN, LANE_MAX, x.size), table=table)
    assert got.dtype == np.int32 and got.tolist() == expected
    # per-lane copies broadcast: each lane reads its own copy
    copies = np.stack([table, -table.astype(np.int16)]).clip(TABLE_MIN, TABLE_MAX).astype(np.int8)
    pair = table_lookup(np.array([[5, 5]]), copies)
    assert pair.tolist() == [[int(table[5 + 128]), int(copies[1][5 + 128])]]
    with pytest.raises(ValueError, match="table"):
        lane_op(AluOp.LUT, x, 0)


def test_shift_amounts_are_the_operand_low_bits_signed():
    operands = np.arange(-300, 300)
    amounts = shift_amount(operands)
    assert amounts.min() == SHR_MIN and amounts.max() == SHR_MAX
    assert np.array_equal(amounts % (1 << SHIFT_BITS), operands % (1 << SHIFT_BITS))
    assert lane_op(AluOp.SHR, 12345, SHR_MIN) == 0                      # a left shift by 32 clears
    assert lane_op(AluOp.SHR, -12345, SHR_MAX) == -1                    # by 31: the sign remains


def test_wrap_keeps_the_low_lane_bits():
    assert wrap(np.array([LANE_MAX + 1, LANE_MIN - 1, 1 << 40, -1])).tolist() == [LANE_MIN, LANE_MAX, 0, -1]


@pytest.mark.parametrize("preset", PRESETS)
def test_immediate_range_is_the_encoded_field(preset):
    isa = load_config(preset).isa
    field = next(f for f in isa.alu if f.name == "imm")
    assert (field.width, field.signed) == (IMM_BITS, True)
    assert field.range() == (IMM_MIN, IMM_MAX)
    for imm in (IMM_MIN, IMM_MAX):
        assert isa.decode(isa.encode(AluInsn(alu_opcode=AluOp.ADD, use_imm=True, imm=imm))).imm == imm
    with pytest.raises(ValueError, match="'imm'"):
        isa.encode(AluInsn(alu_opcode=AluOp.ADD, use_imm=True, imm=IMM_MAX + 1))


@pytest.mark.parametrize("op,imm,problem", [
    (AluOp.ADD, IMM_MAX + 1, r"ADD immediate 32768 does not fit the ALU's 16-bit signed field \(-32768..32767\)"),
    (AluOp.MIN, IMM_MIN - 1, "MIN immediate -32769 does not fit"),
    (AluOp.SHR, SHR_MAX + 1, r"SHR immediate 32 is outside -32..31; .* would shift by -32"),
    (AluOp.SHR, IMM_MAX, "SHR immediate 32767 is outside"),
])
def test_immediate_error_names_the_op_the_value_and_the_range(op, imm, problem):
    message = immediate_error(op, imm)
    assert message is not None and re.search(problem, message), message


@pytest.mark.parametrize("op,imm", [(AluOp.ADD, IMM_MIN), (AluOp.MUL, IMM_MAX), (AluOp.SHR, SHR_MIN),
                                    (AluOp.SHR, SHR_MAX), (AluOp.MAX, 0)])
def test_immediates_in_range_are_legal(op, imm):
    assert immediate_error(op, imm) is None


def test_an_unknown_opcode_is_named():
    with pytest.raises(ValueError, match="ALU opcode 8 does not exist; valid: MIN 0, MAX 1, ADD 2, SHR 3, MUL 4"):
        lane_op(8, 1, 1)


def test_instruction_size_is_derived_from_the_width():
    cfg = load_config("pynq")
    assert INSN_BYTES * 8 == INSN_BITS and cfg.insn_bytes == INSN_BYTES
    assert cfg.isa.encode_stream([AluInsn(), AluInsn()]).size == 2 * INSN_BYTES
