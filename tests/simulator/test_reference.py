"""The reference interpreter (vdla.simulator.reference) against numpy, on small hand-written programs.

Expected values come from numpy formulas written here from SPEC §3 (np.pad for padding, int64
matmul then two's-complement wrap) and the lane-wise ALU of vdla.hw.alu_ops, never from the
code under test: the reference's own statement of the ALU is checked against vdla.hw's here.
"""
import numpy as np
import pytest

from vdla.hw import load_config
from vdla.hw.alu_ops import LANE_OPS, IMM_MAX, IMM_MIN, SHIFT_BITS, SHR_MAX, SHR_MIN, lane_op
from vdla.hw.isa import AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop
from vdla.simulator.reference import (ReferenceDeadlock, ReferenceHazardError, ReferenceMemoryError,
                                      ReferenceStreamError, ReferenceTokenError, reference_run)

CFG = load_config("pynq")
N = CFG.block  # 16 lanes; batch 1
IN, UOPS, OUT, INSNS, SIZE = 0x0, 0x8000, 0xA000, 0xC000, 0x10000


def wrap32(x):
    return ((np.asarray(x, dtype=np.int64) + 2**31) % 2**32) - 2**31


def low8(x):
    return (np.asarray(x, dtype=np.int64) & 0xFF).astype(np.uint8).view(np.int8)


def load(mt, sram, dram_elem, y, x, stride=None, pads=(0, 0, 0, 0), **flags):
    y0, y1, x0, x1 = pads
    return MemInsn(opcode=Opcode.LOAD, memory_type=mt, sram_base=sram, dram_base=dram_elem, y_size=y, x_size=x,
                   x_stride=x if stride is None else stride, y_pad_0=y0, y_pad_1=y1, x_pad_0=x0, x_pad_1=x1,
                   **flags)


def store(sram, out_elem, y, x, stride=None, **flags):
    return MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=sram, dram_base=OUT // 16 + out_elem,
                   y_size=y, x_size=x, x_stride=x if stride is None else stride, **flags)


def uop_load(uops, sram=0, **flags):
    return MemInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, sram_base=sram, dram_base=UOPS // 4,
                   y_size=1, x_size=len(uops), x_stride=len(uops), **flags)


def run(insns, data: bytes = b"", uops=()):
    """DRAM image: data at IN, micro-ops at UOPS, instructions at INSNS; returns the DRAM after the run."""
    dram = np.zeros(SIZE, dtype=np.uint8)
    dram[IN:IN + len(data)] = np.frombuffer(data, dtype=np.uint8)
    if uops:
        words = CFG.isa.encode_uops(uops)
        dram[UOPS:UOPS + 4 * len(words)] = words.view(np.uint8)
    stream = CFG.isa.encode_stream(insns)
    dram[INSNS:INSNS + stream.size] = stream
    return reference_run(CFG, dram, INSNS, len(insns))


def out_elems(dram, first, count):
    return dram[OUT + 16 * first: OUT + 16 * (first + count)].view(np.int8).reshape(count, N)


# A store that waits for compute, and a compute FINISH that waits for the store.
def stored_after_compute(compute_insns, store_insn):
    compute_insns[-1] = compute_insns[-1].replace(push_next=True)
    return compute_insns + [store_insn.replace(pop_prev=True, push_prev=True), FinishInsn(pop_next=True)]


def test_matmul_with_loops_matches_numpy(rng):
    m, kb = 6, 3  # 6 rows of 16 inputs x (3*16 in) -> 16 out
    a = rng.integers(-128, 128, (m, kb, N), dtype=np.int8)
    w = rng.integers(-128, 128, (kb, N, N), dtype=np.int8)  # [block][out][in]
    data = a.tobytes().ljust(512, b"\0") + w.tobytes()  # weights at element 2 (256-B units)
    uops = [Uop(dst=0, src=0, wgt=0)]
    # i over k-blocks (src +1, wgt +1), j over rows (dst +1, src +kb): dst repeats only m apart
    insns = [load(MemType.INP, 0, 0, 1, m * kb),
             load(MemType.WGT, 0, 2, 1, kb, push_next=True),
             uop_load(uops, pop_prev=True),
             GemmInsn(reset=True, uop_begin=0, uop_end=1, iter_out=1, iter_in=m, dst_factor_in=1),
             GemmInsn(uop_begin=0, uop_end=1, iter_out=kb, iter_in=m, dst_factor_out=0, dst_factor_in=1,
                      src_factor_out=1, src_factor_in=kb, wgt_factor_out=1, wgt_factor_in=0)]
    dram = run(stored_after_compute(insns, store(0, 0, 1, m)), data, uops)
    full = np.einsum("mki,koi->mo", a.astype(np.int64), w.astype(np.int64))
    np.testing.assert_array_equal(out_elems(dram, 0, m), low8(wrap32(full)))


@pytest.mark.parametrize("mt", [MemType.ACC, MemType.ACC_8BIT])
def test_acc_loads_pad_and_sign_extend(rng, mt):
    y, x, pads = 2, 3, (1, 2, 2, 1)
    if mt == MemType.ACC:
        src = rng.integers(-2**31, 2**31, (y, x, N), dtype=np.int64).astype(np.int32)
    else:
        src = rng.integers(-128, 128, (y, x, N), dtype=np.int8)
    rows, cols = y + pads[0] + pads[1], x + pads[2] + pads[3]
    total = rows * cols
    uops = [Uop(dst=0, src=0)]
    # MAX with the most negative immediate leaves every value above it alone and clamps the rest
    insns = [load(mt, 0, 0, y, x, pads=pads),
             AluInsn(uop_begin=0, uop_end=1, iter_out=1, iter_in=total, dst_factor_in=1,
                     alu_opcode=AluOp.MAX, use_imm=True, imm=IMM_MIN)]
    insns = [uop_load(uops)] + insns
    dram = run(stored_after_compute(insns, store(0, 0, 1, total)), src.tobytes(), uops)
    padded = np.pad(src.astype(np.int64), ((pads[0], pads[1]), (pads[2], pads[3]), (0, 0)))
    expect = np.maximum(padded.reshape(total, N), IMM_MIN)
    np.testing.assert_array_equal(out_elems(dram, 0, total), low8(expect))


@pytest.mark.parametrize("mt", [MemType.INP, MemType.WGT])
def test_inp_wgt_loads_pad_strided_rows(rng, mt):
    """Padded, strided load of INP (or WGT), observed through a GEMM against a known operand."""
    y, x, stride, pads = 2, 2, 5, (1, 1, 1, 2)
    rows, cols = y + 2, x + 3
    total = rows * cols
    if mt == MemType.INP:
        dram_src = rng.integers(-128, 128, (y * stride, N), dtype=np.int8)       # INP elements
        other = rng.integers(-128, 128, (N, N), dtype=np.int8)                  # one weight
        data = dram_src.tobytes() + bytes(256 - (dram_src.nbytes % 256 or 256)) + other.tobytes()
        other_at = -(-dram_src.nbytes // 256)
        insns = [load(MemType.INP, 0, 0, y, x, stride, pads),
                 load(MemType.WGT, 0, other_at, 1, 1, push_next=True)]
        uops = [Uop(dst=0, src=0, wgt=0)]
        loop = dict(iter_out=1, iter_in=total, dst_factor_in=1, src_factor_in=1)
    else:
        dram_src = rng.integers(-128, 128, (y * stride, N, N), dtype=np.int8)    # WGT elements
        other = rng.integers(-128, 128, (1, N), dtype=np.int8)                  # one input
        data = dram_src.tobytes() + other.tobytes()
        insns = [load(MemType.WGT, 0, 0, y, x, stride, pads),
                 load(MemType.INP, 0, dram_src.nbytes // 16, 1, 1, push_next=True)]
        uops = [Uop(dst=0, src=0, wgt=0)]
        loop = dict(iter_out=1, iter_in=total, dst_factor_in=1, wgt_factor_in=1)
    insns += [uop_load(uops, pop_prev=True),
              GemmInsn(uop_begin=0, uop_end=1, **loop)]
    dram = run(stored_after_compute(insns, store(0, 0, 1, total)), data, uops)
    rows_read = dram_src.reshape(y, stride, *dram_src.shape[1:])[:, :x]
    pad_spec = ((pads[0], pads[1]), (pads[2], pads[3])) + ((0, 0),) * (dram_src.ndim - 1)
    sram = np.pad(rows_read.astype(np.int64), pad_spec).reshape(total, *dram_src.shape[1:])
    if mt == MemType.INP:
        expect = sram @ other.astype(np.int64).T
    else:
        expect = np.einsum("i,toi->to", other[0].astype(np.int64), sram)
    np.testing.assert_array_equal(out_elems(dram, 0, total), low8(expect))


def acc_program(values: np.ndarray, alu_insns, n_out: int):
    uops = [Uop(dst=0, src=1), Uop(dst=2, src=3)]
    insns = [uop_load(uops), load(MemType.ACC, 0, 0, 1, len(values))] + alu_insns
    return run(stored_after_compute(insns, store(0, 0, 1, n_out)), values.astype("<i4").tobytes(), uops)


# LUT reads the table, not the operand: the random programs (test_random_programs_agree...) load
# tables and run it against the reference model
@pytest.mark.parametrize("op", [op for op in LANE_OPS if op != AluOp.LUT])
def test_alu_tensor_operand(rng, op):
    values = rng.integers(-2**31, 2**31, (4, N), dtype=np.int64)
    if op == AluOp.SHR:  # shift amounts of both signs and both ends across the lanes, random high bits
        amounts = np.r_[SHR_MIN:-16, -8:0, 0:SHR_MAX:4]
        amounts[-1] = SHR_MAX
        low = (amounts & (1 << SHIFT_BITS) - 1).reshape(2, N)
        values[[1, 3]] = (values[[1, 3]] >> SHIFT_BITS << SHIFT_BITS) | low
    dram = acc_program(values, [AluInsn(uop_begin=0, uop_end=2, alu_opcode=op)], 4)
    got = out_elems(dram, 0, 4)
    np.testing.assert_array_equal(got[0], low8(lane_op(op, values[0], values[1])))
    np.testing.assert_array_equal(got[2], low8(lane_op(op, values[2], values[3])))
    np.testing.assert_array_equal(got[[1, 3]], np.zeros((2, N), np.int8))  # never written by GEMM/ALU


@pytest.mark.parametrize("use_imm", [True, False])
@pytest.mark.parametrize("pad_min", [False, True])
def test_lut_load_with_padding_then_lookups(rng, use_imm, pad_min):
    """A table loaded as 2 rows of 2 elements inside one padding element on each side (16
    elements of 16 entries), then ALU LUT over values inside and beyond int8."""
    table_rows = rng.integers(-128, 128, (2, 2, N), dtype=np.int8)
    values = rng.integers(-300, 300, (4, N), dtype=np.int64)
    values[0, :4] = [-2**31, -129, 128, 2**31 - 1]
    acc_at = table_rows.nbytes         # the ACC values right after the table (64 B: one ACC element)
    data = table_rows.tobytes() + values.astype("<i4").tobytes()
    insns = [uop_load([Uop(dst=0, src=1), Uop(dst=2, src=3)]),
             load(MemType.LUT, 0, 0, 2, 2, pads=(1, 1, 1, 1), pad_min=pad_min),
             load(MemType.ACC, 0, acc_at // 64, 1, 4),
             AluInsn(uop_begin=0, uop_end=2, alu_opcode=AluOp.LUT, use_imm=use_imm, imm=7)]
    dram = run(stored_after_compute(insns, store(0, 0, 1, 4)), data, [Uop(dst=0, src=1), Uop(dst=2, src=3)])
    entries = np.pad(table_rows.astype(np.int64), ((1, 1), (1, 1), (0, 0)),
                     constant_values=-128 if pad_min else 0).reshape(-1)
    assert entries.size == 256
    got = out_elems(dram, 0, 4)
    for row in (0, 2):
        expect = [entries[min(max(int(v), -128), 127) + 128] for v in values[row]]
        np.testing.assert_array_equal(got[row], expect)


@pytest.mark.parametrize("op,imm", [(AluOp.MIN, -5), (AluOp.MAX, 7), (AluOp.ADD, IMM_MIN), (AluOp.ADD, IMM_MAX),
                                    (AluOp.MUL, -3), (AluOp.MUL, IMM_MAX), (AluOp.SHR, 3), (AluOp.SHR, -31),
                                    (AluOp.SHR, -1), (AluOp.SHR, SHR_MAX), (AluOp.SHR, 0)])
def test_alu_immediate(rng, op, imm):
    values = rng.integers(-2**31, 2**31, (4, N), dtype=np.int64)
    values[0, :4] = [-1, 0, 2**31 - 1, -2**31]
    dram = acc_program(values, [AluInsn(uop_begin=0, uop_end=2, alu_opcode=op, use_imm=True, imm=imm)], 4)
    got = out_elems(dram, 0, 4)
    np.testing.assert_array_equal(got[0], low8(lane_op(op, values[0], imm)))
    np.testing.assert_array_equal(got[2], low8(lane_op(op, values[2], imm)))


def test_alu_reads_its_own_earlier_writes_in_order(rng):
    """Micro-ops run one by one: a later micro-op sees an earlier one's result (2 steps apart)."""
    values = rng.integers(-1000, 1000, (4, N), dtype=np.int64)
    uops = [Uop(dst=1, src=0), Uop(dst=2, src=3), Uop(dst=3, src=1)]  # ACC3 += (ACC1 + ACC0)
    insns = [uop_load(uops), load(MemType.ACC, 0, 0, 1, 4),
             AluInsn(uop_begin=0, uop_end=3, alu_opcode=AluOp.ADD)]
    dram = run(stored_after_compute(insns, store(0, 0, 1, 4)), values.astype("<i4").tobytes(), uops)
    np.testing.assert_array_equal(out_elems(dram, 3, 1)[0], low8(values[3] + values[1] + values[0]))


def test_reset_zeroes_acc_and_out_and_store_is_strided(rng):
    values = rng.integers(-2**31, 2**31, (3, N), dtype=np.int64)
    uops = [Uop(dst=0), Uop(dst=1), Uop(dst=2)]
    insns = [uop_load(uops), load(MemType.ACC, 0, 0, 1, 3),
             AluInsn(uop_begin=0, uop_end=3, alu_opcode=AluOp.ADD, use_imm=True, imm=1),
             GemmInsn(reset=True, uop_begin=1, uop_end=2)]
    dram = run(stored_after_compute(insns, store(0, 0, 3, 1, stride=2)), values.astype("<i4").tobytes(), uops)
    np.testing.assert_array_equal(out_elems(dram, 0, 1)[0], low8(values[0] + 1))
    np.testing.assert_array_equal(out_elems(dram, 2, 1)[0], np.zeros(N, np.int8))
    np.testing.assert_array_equal(out_elems(dram, 4, 1)[0], low8(values[2] + 1))
    np.testing.assert_array_equal(out_elems(dram, 1, 1)[0], np.zeros(N, np.int8))  # stride gap untouched


# ---- errors -----------------------------------------------------------------------------
FIN = FinishInsn()
FIN_AFTER_LOAD = FinishInsn(pop_prev=True)

# (stream, reference error, words in its message, the fast simulator's error class)
ERROR_CASES = [
    ([load(MemType.INP, 0, 0, 1, 1), GemmInsn(uop_begin=0, uop_end=1, pop_prev=True), FIN],
     ReferenceDeadlock, "compute at instruction 1 waits on l2c", "DeadlockError"),
    ([GemmInsn(reset=True, uop_begin=0, uop_end=1, push_prev=True), FIN], ReferenceTokenError,
     r"tokens left in queues at FINISH: \{'c2l': 1\}", "TokenError"),
    ([load(MemType.INP, 0, 0, 1, 1), FIN], ReferenceTokenError, "not ordered before FINISH", "StreamError"),
    ([load(MemType.INP, 0, 0, 1, 1, pop_prev=True), FIN], ReferenceTokenError, "pop_prev", "TokenError"),
    ([load(MemType.INP, CFG.inp_depth - 1, 0, 1, 2, push_next=True), FIN_AFTER_LOAD], ReferenceMemoryError,
     "outside the buffer", "MemoryAccessError"),
    ([load(MemType.WGT, 0, SIZE // 256, 1, 1, push_next=True), FIN_AFTER_LOAD], ReferenceMemoryError,
     "beyond the DRAM size", "MemoryAccessError"),
    ([GemmInsn(uop_begin=0, uop_end=1, iter_in=2), FIN], ReferenceHazardError, "steps 0 and 1", "HazardError"),
    ([GemmInsn(uop_begin=0, uop_end=1, iter_in=3, dst_factor_in=1, src_factor_in=CFG.inp_depth // 2), FIN],
     ReferenceMemoryError, "GEMM input", "MemoryAccessError"),
    ([load(MemType.OUT, 0, 0, 1, 1), FIN], ReferenceStreamError, "memory_type OUT", "StreamError"),
    ([GemmInsn(uop_begin=0, uop_end=1)], ReferenceStreamError, "no FINISH", "StreamError"),
    ([FIN, GemmInsn(uop_begin=0, uop_end=1)], ReferenceStreamError, "follow FINISH", "StreamError"),
]


@pytest.mark.parametrize("insns,error,words", [case[:3] for case in ERROR_CASES])
def test_errors_name_the_problem(insns, error, words):
    with pytest.raises(error, match=words):
        run(insns, bytes(64))


def test_deadlock_between_two_modules_names_both():
    insns = [load(MemType.INP, 0, 0, 1, 1, pop_next=True, push_next=True),
             GemmInsn(uop_begin=0, uop_end=1, pop_prev=True, push_prev=True), FIN]
    with pytest.raises(ReferenceDeadlock) as info:
        run(insns)
    assert "load at instruction 0 waits on c2l" in str(info.value)
    assert "compute at instruction 1 waits on l2c" in str(info.value)


@pytest.mark.parametrize("insns,sim_error", [(case[0], case[3]) for case in ERROR_CASES])
def test_simulator_rejects_the_same_streams(insns, sim_error):
    """The fast simulator rejects every stream the reference rejects (the error classes differ
    only where the simulator's verdict is about time: a load still running at FINISH)."""
    import vdla.simulator as sim
    dram = np.zeros(SIZE, dtype=np.uint8)
    stream = CFG.isa.encode_stream(insns)
    dram[INSNS:INSNS + stream.size] = stream
    with pytest.raises(getattr(sim, sim_error)):
        sim.Simulator(CFG).run(dram, INSNS, len(insns))
