"""The VTA-compatibility check on hand-made streams: each finding class is reported where it
occurs (with the instruction index) and not where it does not; the never-written check
follows loop nests, micro-ops from DRAM and token order."""
from dataclasses import replace

import numpy as np
import pytest

from vdla.hw import AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop, load_config
from vdla.simulator import DeadlockError, MemoryAccessError
from vdla.simulator.vta_check import check_vta, check_vta_image

from .streams import INSN_BASE, put, run_stream

CFG = load_config("pynq")
UOP_AT = 8192          # byte address of the micro-ops in the images


def image(uops=(Uop(0, 0, 0), Uop(0, 4, 0))):
    dram = np.zeros(2 << 20, np.uint8)
    put(dram, UOP_AT, CFG.isa.encode_uops(uops))
    return dram


def load(mt, sram, x, **fields):
    return MemInsn(opcode=Opcode.LOAD, memory_type=mt, sram_base=sram, dram_base=fields.pop("dram_base", 0),
                   y_size=1, x_size=x, x_stride=x, **fields)


def load_uops(count, sram=0):
    return load(MemType.UOP, sram, count, dram_base=UOP_AT // 4)


def gemm_reset():
    return GemmInsn(reset=True, uop_begin=0, uop_end=1, iter_out=1, iter_in=4, dst_factor_in=1)


def gemm(**fields):
    return GemmInsn(**{**dict(uop_begin=0, uop_end=1, iter_out=1, iter_in=4, dst_factor_in=1, src_factor_in=1),
                       **fields})


def alu(op, imm=None, uop=1, **fields):
    """ALU over accumulators 0..3; micro-op 1 reads source 4 (a bias), micro-op 0 the same entry."""
    return AluInsn(**{**dict(uop_begin=uop, uop_end=uop + 1, iter_out=1, iter_in=4, dst_factor_in=1,
                             alu_opcode=op, use_imm=imm is not None, imm=imm or 0), **fields})


def store(x=4, **fields):
    return MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=0, dram_base=1024, y_size=1,
                   x_size=x, x_stride=x, **fields)


def conv_like():
    """A VTA-compatible stream: inputs and weights, reset, GEMM, bias add, shift, ReLU, store."""
    return [
        load(MemType.INP, 0, 4),
        load(MemType.WGT, 0, 1, push_next=True),
        load_uops(2),
        gemm_reset(),
        gemm(pop_prev=True),
        load(MemType.ACC, 4, 1),
        alu(AluOp.ADD),
        alu(AluOp.SHR, imm=15, uop=0),
        alu(AluOp.MAX, imm=0, uop=0, push_next=True),
        store(pop_prev=True, push_prev=True),
        FinishInsn(pop_next=True),
    ]


def kinds(insns, dram="image"):
    dram = image() if isinstance(dram, str) else dram
    return [(f.index, f.kind) for f in check_vta(insns, dram, CFG)]


def test_a_compatible_stream_has_no_findings_and_runs():
    insns = conv_like()
    assert kinds(insns) == []
    run_stream(insns, image(), CFG)          # the hand-made stream is a valid one


@pytest.mark.parametrize("insn,kind", [
    (alu(AluOp.MUL, imm=3, uop=0), "alu_mul"),
    (alu(AluOp.MUL, uop=1), "alu_mul"),
    (alu(AluOp.LUT, imm=0, uop=0), "alu_lut"),
    (alu(AluOp.SHR, imm=16, uop=0), "shr_range"),
    (alu(AluOp.SHR, imm=-17, uop=0), "shr_range"),
    (alu(AluOp.SHR, uop=1), "shr_tensor"),
    (alu(AluOp.ADD, imm=1, uop=0, reset=True), "alu_reset"),
])
def test_alu_findings(insn, kind):
    insns = conv_like()
    insns[7] = insn
    assert kinds(insns) == [(7, kind)]


@pytest.mark.parametrize("imm", [-16, -1, 0, 1, 15])
def test_shifts_in_vta_range_are_compatible(imm):
    insns = conv_like()
    insns[7] = alu(AluOp.SHR, imm=imm, uop=0)
    assert kinds(insns) == []


def test_shift_message_says_what_each_machine_does():
    insns = conv_like()
    insns[7] = alu(AluOp.SHR, imm=20, uop=0)
    (f,) = check_vta(insns, image(), CFG)
    assert str(f).startswith("instruction 7: ALU SHR by immediate 20")
    assert "would shift left by 12" in f.message and "VDLA shifts right by 20" in f.message


@pytest.mark.parametrize("index,insn,kind", [
    (5, load(MemType.ACC_8BIT, 4, 1), "acc_8bit"),
    (5, load(MemType.LUT, 4, 1), "lut"),
    (1, load(MemType.WGT, 0, 1, push_next=True, x_pad_1=1), "padded_load"),
    (2, replace(load_uops(2), y_pad_0=1), "padded_load"),
    (0, load(MemType.INP, 0, 2, x_pad_0=1, x_pad_1=1, pad_min=True), "pad_min"),
    (5, load(MemType.ACC, 4, 1, x_pad_1=1, pad_min=True), "pad_min"),
])
def test_load_findings(index, insn, kind):
    insns = conv_like()
    insns[index] = insn
    assert kinds(insns) == [(index, kind)]


@pytest.mark.parametrize("index,insn", [
    (0, load(MemType.INP, 0, 2, x_pad_0=1, x_pad_1=1)),          # VTA pads INP with zeros too
    (5, load(MemType.ACC, 4, 1, y_pad_1=1)),                      # ... and ACC
    (0, load(MemType.INP, 0, 4, pad_min=True)),                   # pad_min without padding changes nothing
    (5, load(MemType.ACC, 4, 0, x_pad_0=3, pad_min=True)),        # a NOP moves no data
])
def test_loads_that_vta_does_the_same(index, insn):
    insns = conv_like()
    insns[index] = insn
    if index == 5 and insn.x_size == 0:
        insns.insert(5, load(MemType.ACC, 4, 1))
    assert kinds(insns) == []


def test_never_written_entries_are_named_per_memory():
    insns = conv_like()
    insns[0] = load(MemType.INP, 0, 2)                 # inputs 2, 3 never loaded
    del insns[5]                                       # no bias: ALU source 4 never written
    del insns[3]                                       # no reset: the GEMM accumulates onto garbage
    found = check_vta(insns, image(), CFG)
    assert [(f.index, f.kind) for f in found] == [(3, "uninitialized_read")] * 2 + [(4, "uninitialized_read")]
    text = [str(f) for f in found]
    assert "GEMM reads ACC entries 0, 1, 2, 3 that nothing wrote before" in text[0]
    assert "GEMM reads INP entries 2, 3 " in text[1]
    assert "ALU ADD reads source ACC entry 4 " in text[2] and "VTA does not zero its SRAMs" in text[2]


def test_micro_ops_never_loaded_and_out_never_written():
    insns = [load_uops(1), GemmInsn(reset=True, uop_begin=0, uop_end=2, iter_in=2, dst_factor_in=2),
             store(x=6), FinishInsn()]
    found = check_vta(insns, image(), CFG)
    assert [(f.index, f.kind) for f in found] == [(1, "uninitialized_read"), (2, "uninitialized_read"),
                                                  (2, "reset_out")]
    assert "reads micro-op entry 1 that no LOAD UOP wrote" in found[0].message
    assert "reads OUT entries 1, 3, 4, 5 " in found[1].message
    assert "entries 0, 2 last written by a GEMM reset" in found[2].message


def test_the_loop_nest_is_followed_exactly():
    """iter 2x2 with dst factors (8, 1) writes 0, 1, 8, 9 only; a store of 0..1 and 8..9 is
    clean, one of 0..2 is not."""
    nest = GemmInsn(reset=True, uop_begin=0, uop_end=1, iter_out=2, iter_in=2, dst_factor_out=8, dst_factor_in=1)
    ok = [load_uops(1), replace(nest, push_next=True),
          replace(store(x=2), pop_prev=True), replace(store(x=2), sram_base=8), FinishInsn()]
    assert [k for _, k in kinds(ok)] == ["reset_out", "reset_out"]
    bad = [load_uops(1), replace(nest, push_next=True), replace(store(x=3), pop_prev=True), FinishInsn()]
    found = check_vta(bad, image(), CFG)
    assert "OUT entry 2 that no GEMM or ALU wrote" in found[0].message


def test_a_write_ordered_by_tokens_counts_even_later_in_the_stream():
    """compute waits (pop l2c) for a load that comes after it in the stream."""
    ordered = [load_uops(1), gemm_reset(), gemm(pop_prev=True), load(MemType.INP, 0, 4),
               load(MemType.WGT, 0, 1, push_next=True), FinishInsn()]
    assert kinds(ordered) == []
    unordered = [replace(i, pop_prev=False, push_next=False) for i in ordered]
    assert [k for _, k in kinds(unordered)] == ["uninitialized_read", "uninitialized_read"]


def test_an_alu_source_written_by_an_earlier_step_of_the_same_instruction():
    uops = (Uop(1, 0), Uop(2, 1))                      # step 1 reads what step 0 wrote
    first = [load_uops(2), load(MemType.ACC, 0, 1),
             AluInsn(uop_begin=0, uop_end=2, alu_opcode=AluOp.ADD)]
    assert [k for _, k in kinds(first + [FinishInsn()], image(uops))] == ["uninitialized_read"]   # dst 1, 2
    first.insert(2, load(MemType.ACC, 1, 2))
    assert kinds(first + [FinishInsn()], image(uops)) == []
    backwards = (Uop(2, 1), Uop(1, 0))                 # now entry 1 is read before it is written
    stream = [load_uops(2), load(MemType.ACC, 0, 1), load(MemType.ACC, 2, 1),
              AluInsn(uop_begin=0, uop_end=2, alu_opcode=AluOp.ADD), FinishInsn()]
    found = check_vta(stream, image(backwards), CFG)
    assert len(found) == 2 and "reads ACC entry 1" in found[0].message and "source ACC entry 1" in found[1].message


def test_without_dram_only_the_fields_are_checked():
    insns = conv_like()
    del insns[3]
    insns[7] = alu(AluOp.MUL, imm=3, uop=0)
    assert [(f.index, f.kind) for f in check_vta(insns, None, CFG)] == [(7, "alu_mul")]


def test_the_config_is_an_hwconfig_not_a_name_or_a_default():
    for wrong in ("pynq", None):
        with pytest.raises(TypeError, match="^config must be an HwConfig"):
            check_vta(conv_like(), None, wrong)
        with pytest.raises(TypeError, match="^config must be an HwConfig"):
            check_vta_image(image(), INSN_BASE, 1, wrong)


def test_a_stream_in_a_dram_image():
    dram = image()
    insns = conv_like()
    insns[6] = alu(AluOp.ADD, reset=True)
    put(dram, INSN_BASE, CFG.isa.encode_stream(insns))
    found = check_vta_image(dram, INSN_BASE, len(insns), CFG)
    assert [(f.index, f.kind) for f in found] == [(6, "alu_reset")]


def test_instructions_after_finish_are_not_checked():
    insns = conv_like() + [alu(AluOp.MUL, imm=2, uop=0)]
    assert kinds(insns) == []


def test_a_deadlock_is_an_error_naming_the_waiting_module():
    insns = [load_uops(2), gemm(pop_prev=True), FinishInsn()]
    with pytest.raises(DeadlockError, match="compute at instruction 1 waits for l2c"):
        check_vta(insns, image(), CFG)


def test_out_of_range_indices_are_errors_with_the_instruction():
    insns = [load_uops(1), GemmInsn(reset=True, uop_begin=0, uop_end=1, iter_in=3, dst_factor_in=1500),
             FinishInsn()]
    with pytest.raises(MemoryAccessError, match="instruction 1: GEMM: accumulator index 3000 .micro-op field dst 0"):
        check_vta(insns, image(), CFG)
    with pytest.raises(MemoryAccessError, match="instruction 0: LOAD UOP reads DRAM bytes"):
        check_vta([load_uops(4)], np.zeros(64, np.uint8), CFG)


def test_huge_loop_nests_are_checked_without_listing_their_steps():
    """16383 x 16383 iterations (2.7e8 steps per micro-op): the touched entries come from
    shifted index masks, not from the steps."""
    import time
    big = dict(iter_out=16383, iter_in=16383)
    insns = [load_uops(2), GemmInsn(reset=True, uop_begin=0, uop_end=1, **big),
             load(MemType.ACC, 4, 1), AluInsn(uop_begin=1, uop_end=2, alu_opcode=AluOp.MAX, **big),
             AluInsn(uop_begin=0, uop_end=1, iter_out=1000, iter_in=1000, dst_factor_in=1, src_factor_in=1,
                     alu_opcode=AluOp.ADD, **{}), FinishInsn()]
    start = time.perf_counter()
    found = check_vta(insns, image(), CFG)
    assert time.perf_counter() - start < 10          # must not hang; it takes milliseconds
    assert [(f.index, f.kind) for f in found] == [(4, "uninitialized_read"), (4, "uninitialized_read")]
    assert "reads ACC entries 1, 2, 3, 5, ... (998 entries)" in found[0].message


def test_depthwise_is_a_vdla_extension():
    from vdla.hw import DepthwiseInsn
    found = check_vta([GemmInsn(uop_end=3), DepthwiseInsn(uop_end=3), FinishInsn()], None, CFG)
    assert [(f.index, f.kind) for f in found] == [(1, "depthwise")] and "VDLA extension" in found[0].message
