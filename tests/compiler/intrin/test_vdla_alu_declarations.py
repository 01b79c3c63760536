"""The VDLA ALU intrinsics declare what the hardware computes: each declaration's loop-IR
expression, compiled for the CPU and run on random int32 lanes (extremes included), equals
vdla.hw's statement of the lane operation (vdla.hw.alu_ops.lane_op). Their legality is
vdla.hw's too: immediates and shifts outside what an ALU instruction can express are refused."""
import numpy as np
import pytest

from vdla.compiler import build
from vdla.compiler.intrin import vdla
from vdla.compiler.schedule import create_schedule
from vdla.hw import AluOp, load_config
from vdla.hw.alu_ops import IMM_MAX, IMM_MIN, LANE_MAX, LANE_MIN, SHR_MAX, lane_op
from vdla.hw.requantizer import BIAS, CTRL, MUL, pack_ctrl, requantize
from vdla.compiler.topi.vdla import Epilogue, apply_epilogue
from vdla.compiler import te

CFG = load_config("pynq")
# SHR is declared by immediate only (alu_shr), LUT with its table (alu_lut); SETQ (setq) and the
# requantizer's pass (alu_requant, a FLUSH) have tests of their own
TENSOR_OPS = [op for op in AluOp if op not in (AluOp.SHR, AluOp.LUT, AluOp.SETQ, AluOp.FLUSH)]


def lanes(rng, count: int) -> np.ndarray:
    x = rng.integers(LANE_MIN, LANE_MAX + 1, (count, CFG.batch, CFG.block), dtype=np.int64)
    x[0, 0, :4] = [LANE_MIN, LANE_MAX, -1, 0]
    return x.astype(np.int32)


def run_declaration(intrin, *inputs: np.ndarray) -> np.ndarray:
    """The declaration's compute, built for the CPU, on one (batch, block) tile at a time."""
    kernel = build(create_schedule(intrin.output), intrin.inputs + [intrin.output], name="decl").load()
    outs = []
    for tile in zip(*inputs):
        out = np.zeros(tile[0].shape, np.int32)
        kernel.run("decl", [*tile, out])
        outs.append(out)
    return np.stack(outs)


@pytest.mark.parametrize("op", TENSOR_OPS, ids=[op.name for op in TENSOR_OPS])
def test_tensor_operand_declaration_is_the_lane_operation(op, rng):
    a, b = lanes(rng, 8), lanes(rng, 8)
    b[0, 0, :4] = [LANE_MIN, LANE_MAX, LANE_MAX, -1]
    got = run_declaration(vdla.alu(op.name.lower(), CFG), a, b)
    np.testing.assert_array_equal(got, lane_op(op, a, b))


def test_lut_declaration_is_the_lane_operation(rng):
    """The lookup as a gather from the table in LOAD LUT's layout, on values inside int8 and
    beyond it (saturated), built for the CPU."""
    a = lanes(rng, 16)
    a[8:] = rng.integers(-200, 200, a[8:].shape)
    table = rng.integers(-128, 128, (CFG.lut_depth, CFG.batch, CFG.block), dtype=np.int8)
    intrin = vdla.alu_lut(CFG)
    operands = {"src": a, "table": np.broadcast_to(table, (len(a), *table.shape))}
    got = run_declaration(intrin, *(operands[t.name] for t in intrin.inputs))
    np.testing.assert_array_equal(got, lane_op(AluOp.LUT, a, 0, table=table.reshape(-1)))


@pytest.mark.parametrize("table", [False, True], ids=["codes", "table"])
@pytest.mark.parametrize("addend", [False, True], ids=["imm0", "tensor"])
@pytest.mark.parametrize("shift", [0, 1, 17, 40, 62])
def test_requant_declaration_is_the_requantizer(shift, addend, table, rng):
    """The pass through OUT's requantizer (ALU FLUSH: what it writes back, with an immediate 0 or
    a tensor operand added, wrapping like the lane operation), declared with its shift, against
    vdla.hw's statement on random accumulators, biases and multipliers (the multiplier's high
    bits ignored) and CTRL words that hold that shift with random zero points and clips (and
    with `table` the table bit: the lookup table's entry for the code)."""
    a, b = lanes(rng, 16), lanes(rng, 16)
    regs = rng.integers(LANE_MIN, LANE_MAX + 1, (16, 1, 3, CFG.batch, CFG.block), dtype=np.int64)
    ctrl = rng.integers(-128, 128, (3, 16, CFG.batch, CFG.block))
    lo, hi = np.minimum(ctrl[1], ctrl[2]), np.maximum(ctrl[1], ctrl[2])
    regs[:, 0, CTRL] = pack_ctrl(shift, ctrl[0], lo, hi, table)
    regs = regs.astype(np.int32)
    entries = rng.integers(-128, 128, (CFG.lut_depth, CFG.batch, CFG.block), dtype=np.int8)
    intrin = vdla.alu_requant(CFG, shift, addend=addend, table=table)
    operands = {"src": a, "other": b, "req": regs, "table": np.broadcast_to(entries, (len(a), *entries.shape))}
    got = run_declaration(intrin, *(operands[t.name] for t in intrin.inputs))
    written = lane_op(AluOp.FLUSH, a, b if addend else 0)
    want = requantize(written, regs[:, 0, BIAS], regs[:, 0, MUL], regs[:, 0, CTRL], entries)
    np.testing.assert_array_equal(got, want.astype(np.int32))


def test_setq_declaration_copies_an_accumulator_element(rng):
    a = lanes(rng, 4)
    np.testing.assert_array_equal(run_declaration(vdla.setq(CFG), a), a)


@pytest.mark.parametrize("op,imm", [(AluOp.MIN, -5), (AluOp.MAX, IMM_MIN), (AluOp.ADD, IMM_MAX),
                                    (AluOp.MUL, IMM_MIN), (AluOp.MUL, -3)])
def test_immediate_declaration_is_the_lane_operation(op, imm, rng):
    a = lanes(rng, 8)
    got = run_declaration(vdla.alu(op.name.lower(), CFG, imm=imm), a)
    np.testing.assert_array_equal(got, lane_op(op, a, imm))


@pytest.mark.parametrize("shift", [1, 7, vdla.MAX_SHIFT])
def test_shift_declaration_is_the_lane_operation(shift, rng):
    a = lanes(rng, 8)
    np.testing.assert_array_equal(run_declaration(vdla.alu_shr(shift, CFG), a), lane_op(AluOp.SHR, a, shift))


def test_declarations_refuse_what_an_alu_instruction_cannot_express():
    with pytest.raises(ValueError, match="VDLA ALU add: ADD immediate 32768 does not fit the ALU's 16-bit"):
        vdla.alu("add", CFG, imm=IMM_MAX + 1)
    with pytest.raises(ValueError, match=r"alu_shr: shift 31 outside 1..30 \(longer right shifts are two SHRs\)"):
        vdla.alu_shr(SHR_MAX, CFG)
    with pytest.raises(ValueError, match="VDLA ALU op 'shr'"):
        vdla.alu("shr", CFG)


@pytest.mark.parametrize("field", ["shift", "pre_shift"])
def test_an_epilogue_shift_of_31_is_two_declarable_shrs(field):
    """SHR by 31 is legal, but 2^31 is no int32 divisor: the epilogue takes it as 30 + 1
    (before, building the stage failed with "constant 2147483648 does not fit in int32")."""
    acc = te.placeholder((1, 1, CFG.batch, CFG.block), "int32", "acc")
    stages, _, _ = apply_epilogue(acc, Epilogue(lo=None, hi=None, **{field: SHR_MAX}), acc.shape)
    assert [st.op.attrs["vdla.alu"] for st in stages] == [("shr", vdla.MAX_SHIFT), ("shr", SHR_MAX - vdla.MAX_SHIFT)]
