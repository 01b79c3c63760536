"""Functional semantics of each instruction (SPEC §3) against numpy written in the test (the
ALU's lanes against vdla.hw.alu_ops, itself checked against the reference model)."""
import numpy as np
import pytest

from vdla.hw import AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop, load_config
from vdla.hw.alu_ops import CLEARING_OPS, LANE_OPS, lane_op
from vdla.simulator.semantics import execute
from vdla.simulator.state import OnChipState

from .streams import put, run_stream

CFG = load_config("pynq")


def fresh():
    return OnChipState(CFG), np.zeros(1 << 20, dtype=np.uint8)


@pytest.mark.parametrize("mt", [MemType.INP, MemType.WGT, MemType.ACC, MemType.ACC_8BIT])
def test_load_2d_with_padding_every_memory_type(mt, rng):
    state, dram = fresh()
    lanes = {MemType.INP: (1, 16), MemType.WGT: (16, 16), MemType.ACC: (1, 16), MemType.ACC_8BIT: (1, 16)}[mt]
    dtype = np.int32 if mt == MemType.ACC else np.int8
    y, x, stride = 3, 5, 7
    src = rng.integers(-100, 100, size=(y, stride, *lanes)).astype(dtype)
    elem = src[0, 0].nbytes
    base = 4096 // elem
    put(dram, base * elem, src)
    insn = MemInsn(memory_type=mt, sram_base=10, dram_base=base + 1, y_size=y, x_size=x, x_stride=stride,
                   y_pad_0=1, y_pad_1=2, x_pad_0=2, x_pad_1=1)
    execute(insn, 0, state, dram)
    expect = np.zeros((1 + y + 2, 2 + x + 1, *lanes), dtype=np.int64)
    expect[1:1 + y, 2:2 + x] = src[:, 1:1 + x]
    sram = {MemType.INP: state.inp, MemType.WGT: state.wgt}.get(mt, state.acc)
    got = sram[10:10 + expect.shape[0] * expect.shape[1]].reshape(expect.shape)
    np.testing.assert_array_equal(got, expect)
    assert not sram[:10].any() and not sram[10 + got.shape[0] * got.shape[1]:].any()


def test_gemm_loop_nest_matches_numpy(rng):
    state, _ = fresh()
    state.inp[:64] = rng.integers(-128, 128, size=(64, 1, 16))
    state.wgt[:8] = rng.integers(-128, 128, size=(8, 16, 16))
    state.acc[:32] = rng.integers(-1000, 1000, size=(32, 1, 16))
    before = state.acc.copy()
    uops = [(0, 0, 0), (1, 3, 1), (2, 5, 2)]
    for k, (d, s, w) in enumerate(uops):
        state.uop_dst[k], state.uop_src[k], state.uop_wgt[k] = d, s, w
    insn = GemmInsn(uop_begin=0, uop_end=3, iter_out=2, iter_in=4, dst_factor_out=12, dst_factor_in=3,
                    src_factor_out=20, src_factor_in=1, wgt_factor_out=4, wgt_factor_in=1)
    execute(insn, 0, state, None)
    expect = before.astype(np.int64)
    for i in range(2):
        for j in range(4):
            for d, s, w in uops:
                a, x, ww = d + 12 * i + 3 * j, s + 20 * i + j, w + 4 * i + j
                expect[a] += state.inp[x].astype(np.int64) @ state.wgt[ww].astype(np.int64).T
    np.testing.assert_array_equal(state.acc, expect)
    written = sorted({d + 12 * i + 3 * j for i in range(2) for j in range(4) for d, _, _ in uops})
    np.testing.assert_array_equal(state.out[written], expect[written].astype(np.int8))
    assert not np.delete(state.out, written, axis=0).any()  # OUT changes only where ACC was written


def test_gemm_accumulates_with_int32_wraparound():
    state, _ = fresh()
    state.acc[0] = 2**31 - 10
    state.inp[0] = 127
    state.wgt[0] = 127
    execute(GemmInsn(uop_begin=0, uop_end=1), 0, state, None)
    total = (2**31 - 10) + 16 * 127 * 127
    assert state.acc[0, 0, 0] == total - 2**32
    assert state.out[0, 0, 0] == np.int8(np.uint8(total & 0xFF).view(np.int8))


def test_gemm_reset_zeroes_acc_and_out():
    state, _ = fresh()
    state.acc[:4] = 7
    state.out[:4] = 7
    execute(GemmInsn(reset=True, uop_begin=0, uop_end=1, iter_out=4, dst_factor_out=1), 0, state, None)
    assert not state.acc[:4].any() and not state.out[:4].any()


@pytest.mark.parametrize("op", LANE_OPS)
@pytest.mark.parametrize("use_imm", [True, False])
def test_alu_every_opcode(op, use_imm, rng):
    state, _ = fresh()
    state.acc[:64] = rng.integers(-2**31, 2**31, size=(64, 1, 16))
    state.lut[:] = rng.integers(-128, 128, state.lut.shape)
    if op == AluOp.LUT:
        state.acc[:32] = rng.integers(-200, 200, size=(32, 1, 16))   # mostly inside the table
    if op == AluOp.SHR and not use_imm:
        state.acc[32:64] = rng.integers(-40, 40, size=(32, 1, 16))  # shift amounts, both signs
    before = state.acc.copy()
    imm = {AluOp.SHR: -5, AluOp.MUL: -3}.get(op, 12345)
    state.uop_dst[0], state.uop_src[0] = 0, 32
    insn = AluInsn(uop_begin=0, uop_end=1, iter_out=4, iter_in=8, dst_factor_out=8, dst_factor_in=1,
                   src_factor_out=8, src_factor_in=1, alu_opcode=op, use_imm=use_imm, imm=imm)
    execute(insn, 0, state, None)
    operand = imm if use_imm else before[32:64]
    expect = lane_op(op, before[:32], operand, table=state.lut.reshape(-1))
    np.testing.assert_array_equal(state.acc[:32], 0 if op in CLEARING_OPS else expect)    # FLUSH: written back
    np.testing.assert_array_equal(state.acc[32:], before[32:])
    np.testing.assert_array_equal(state.out[:32], expect.astype(np.int8))


def test_alu_shift_left_by_32_gives_zero():
    state, _ = fresh()
    state.acc[0] = 12345
    execute(AluInsn(uop_begin=0, uop_end=1, alu_opcode=AluOp.SHR, use_imm=True, imm=-32), 0, state, None)
    assert not state.acc[0].any()


def test_alu_reading_its_own_earlier_writes_is_sequential():
    # dst 1 <- dst 1 + acc[0]; then dst 2 <- acc[2] + acc[1] must see the updated acc[1]
    state, _ = fresh()
    state.acc[0], state.acc[1], state.acc[2] = 1, 10, 100
    for k, (d, s) in enumerate([(1, 0), (2, 1)]):
        state.uop_dst[k], state.uop_src[k] = d, s
    execute(AluInsn(uop_begin=0, uop_end=2, alu_opcode=AluOp.ADD), 0, state, None)
    assert state.acc[1, 0, 0] == 11 and state.acc[2, 0, 0] == 111


def test_uop_load_and_store_through_a_whole_stream(rng):
    """LOAD INP/WGT/UOP, GEMM, ALU clip, STORE with a row stride; checked in DRAM."""
    dram = np.zeros(2 << 20, dtype=np.uint8)
    a = rng.integers(-128, 128, size=(6, 16), dtype=np.int8)
    w = rng.integers(-128, 128, size=(16, 16), dtype=np.int8)
    put(dram, 0x1000, a)
    put(dram, 0x2000, w)
    uops = CFG.isa.encode_uops([Uop(dst=r, src=r, wgt=0) for r in range(6)])
    put(dram, 0x3000, uops)
    insns = [
        MemInsn(memory_type=MemType.INP, sram_base=0, dram_base=0x1000 // 16, y_size=1, x_size=6, x_stride=6),
        MemInsn(memory_type=MemType.WGT, sram_base=0, dram_base=0x2000 // 256, y_size=1, x_size=1, x_stride=1,
                push_next=True),
        MemInsn(memory_type=MemType.UOP, sram_base=100, dram_base=0x3000 // 4, x_size=6, pop_prev=True),
        GemmInsn(reset=True, uop_begin=100, uop_end=106),
        GemmInsn(uop_begin=100, uop_end=106),
        AluInsn(uop_begin=100, uop_end=106, alu_opcode=AluOp.SHR, use_imm=True, imm=6),
        AluInsn(uop_begin=100, uop_end=106, alu_opcode=AluOp.MIN, use_imm=True, imm=127),
        AluInsn(uop_begin=100, uop_end=106, alu_opcode=AluOp.MAX, use_imm=True, imm=-128, push_next=True),
        # rows of 2 elements written every 3 elements: a gap stays untouched
        MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=0, dram_base=0x4000 // 16, y_size=3,
                x_size=2, x_stride=3, pop_prev=True, push_prev=True),
        FinishInsn(pop_next=True),
    ]
    result = run_stream(insns, dram)
    expect = np.clip((a.astype(np.int32) @ w.astype(np.int32).T) >> 6, -128, 127).astype(np.int8)
    got = dram[0x4000:0x4000 + 9 * 16].view(np.int8).reshape(3, 3, 16)
    np.testing.assert_array_equal(got[:, :2].reshape(6, 16), expect)
    assert not got[:, 2].any()
    assert result.stats.gemm_uops == 6 and result.stats.alu_uops == 18
    assert result.stats.load_bytes["INP"] == 96 and result.stats.store_bytes == 96


def test_a_config_of_more_lanes_than_table_entries_has_no_lookup_table():
    from vdla.hw import HwConfig
    from vdla.simulator.errors import StreamError
    wide = HwConfig.from_dict({"LOG_BATCH": 3, "LOG_BLOCK": 6, "LOG_INP_BUFF_SIZE": 16, "LOG_WGT_BUFF_SIZE": 18,
                               "LOG_ACC_BUFF_SIZE": 18})
    assert wide.lut_depth == 0 and load_config("pynq").lut_depth * 16 == 256
    state = OnChipState(wide)
    with pytest.raises(StreamError, match="has no lookup table"):
        execute(AluInsn(uop_begin=0, uop_end=1, alu_opcode=AluOp.LUT, use_imm=True), 3, state, None)
