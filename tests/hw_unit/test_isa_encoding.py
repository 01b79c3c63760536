"""Instruction and micro-op encoding.

The fixed-value tests build each expected 128-bit word from the bit positions written in
SPEC §2 (not from vdla.hw's layout tables), so they check the tables against the spec.
"""
import numpy as np
import pytest

from vdla.hw import (PRESETS, AluInsn, AluOp, DepthwiseInsn, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop,
                     disassemble, load_config)
from vdla.hw.depthwise import TAPS


def bits(value, lsb):
    return value << lsb


def test_load_inp_matches_spec_bit_positions():
    insn = MemInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, sram_base=0x123, dram_base=0x89ABCDE,
                   y_size=7, x_size=58, x_stride=3136, y_pad_0=1, y_pad_1=2, x_pad_0=3, x_pad_1=4,
                   pop_next=True, push_next=True)
    expected = (0 | bits(1, 4) | bits(1, 6) | bits(2, 7) | bits(0x123, 10) | bits(0x89ABCDE, 26)
                | bits(7, 64) | bits(58, 80) | bits(3136, 96)
                | bits(1, 112) | bits(2, 116) | bits(3, 120) | bits(4, 124))
    isa = load_config("pynq").isa
    assert isa.encode(insn) == expected
    assert isa.decode(expected) == insn


def test_store_hand_computed_hex():
    # STORE (1) | push_prev (bit 5 -> 0x20) | OUT (4 << 7 = 0x200) | sram_base 1 (<< 10 = 0x400)
    # | dram_base 2 (<< 26 = 0x8000000); high word: y_size 1, x_size 3 (<< 16), x_stride 5 (<< 32)
    insn = MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=1, dram_base=2,
                   y_size=1, x_size=3, x_stride=5, push_prev=True)
    word = load_config("pynq").isa.encode(insn)
    assert word == 0x0000000500030001_0000000008000621
    raw = load_config("pynq").isa.encode_stream([insn])
    assert raw[:8].tobytes() == (0x0000000008000621).to_bytes(8, "little")  # low word first


def test_gemm_matches_spec_bit_positions():
    insn = GemmInsn(reset=True, uop_begin=8191, uop_end=8192, iter_out=16383, iter_in=5,
                    dst_factor_out=2047, dst_factor_in=3, src_factor_out=9, src_factor_in=2047,
                    wgt_factor_out=1023, wgt_factor_in=17, pop_prev=True, push_prev=True)
    expected = (2 | bits(1, 3) | bits(1, 5) | bits(1, 7) | bits(8191, 8) | bits(8192, 21)
                | bits(16383, 35) | bits(5, 49) | bits(2047, 64) | bits(3, 75) | bits(9, 86)
                | bits(2047, 97) | bits(1023, 108) | bits(17, 118))
    isa = load_config("pynq").isa
    assert isa.encode(insn) == expected
    assert isa.decode(expected) == insn


def test_alu_matches_spec_bit_positions_with_negative_immediate():
    insn = AluInsn(uop_begin=1, uop_end=2, iter_out=3, iter_in=4, dst_factor_out=5, dst_factor_in=6,
                   src_factor_out=7, src_factor_in=8, alu_opcode=AluOp.SHR, use_imm=True, imm=-3,
                   push_next=True)
    expected = (4 | bits(1, 6) | bits(1, 8) | bits(2, 21) | bits(3, 35) | bits(4, 49) | bits(5, 64)
                | bits(6, 75) | bits(7, 86) | bits(8, 97) | bits(3, 108) | bits(1, 111)
                | bits(0xFFFD, 112))
    isa = load_config("pynq").isa
    assert isa.encode(insn) == expected
    assert isa.decode(expected) == insn


def test_finish_and_uop_positions():
    isa = load_config("pynq").isa
    assert isa.encode(FinishInsn(pop_next=True)) == 3 | bits(1, 4)
    assert isa.encode_uop(Uop(dst=2047, src=5, wgt=1023)) == 2047 | bits(5, 11) | bits(1023, 22)


def _random_insn(rng, isa, kind):
    def rand(layout, name):
        f = next(f for f in layout if f.name == name)
        lo, hi = f.range()
        return int(rng.integers(lo, hi + 1))
    flags = {k: bool(rng.integers(2)) for k in ("pop_prev", "pop_next", "push_prev", "push_next")}
    if kind in ("load", "store"):
        fields = {f.name: rand(isa.mem, f.name) for f in isa.mem if f.name not in flags and f.name not in ("opcode", "memory_type")}
        return MemInsn(opcode=Opcode.LOAD if kind == "load" else Opcode.STORE,
                       memory_type=MemType(int(rng.integers(0, 6))), **fields, **flags)
    if kind == "gemm":
        fields = {f.name: rand(isa.gemm, f.name) for f in isa.gemm if f.name not in flags and f.name != "opcode"}
        fields["reset"] = bool(fields["reset"])
        return GemmInsn(**fields, **flags)
    if kind == "alu":
        fields = {f.name: rand(isa.alu, f.name) for f in isa.alu if f.name not in flags and f.name != "opcode"}
        fields.update(reset=bool(fields["reset"]), use_imm=bool(fields["use_imm"]),
                      alu_opcode=AluOp(fields["alu_opcode"] % 5))
        return AluInsn(**fields, **flags)
    return FinishInsn(**flags)


@pytest.mark.parametrize("preset", [*PRESETS, "small-block"])
def test_round_trip_random_fields_every_type(preset, rng):
    if preset == "small-block":
        config = load_config({**load_config("pynq").to_dict(), "LOG_BLOCK": 3, "LOG_BATCH": 1,
                              "LOG_ACC_BUFF_SIZE": 15, "LOG_UOP_BUFF_SIZE": 12})
    else:
        config = load_config(preset)
    isa = config.isa
    insns = [_random_insn(rng, isa, kind) for kind in ("load", "store", "gemm", "alu", "finish") * 40]
    stream = isa.encode_stream(insns)
    assert stream.dtype == np.uint8 and stream.size == 16 * len(insns)
    assert isa.decode_stream(stream) == insns
    uops = [Uop(*(int(rng.integers(0, f.mask + 1)) for f in isa.uop)) for _ in range(100)]
    words = isa.encode_uops(uops)
    assert [isa.decode_uop(w) for w in words] == uops
    dst, src, wgt = isa.decode_uop_fields(words)
    assert [Uop(int(a), int(b), int(c)) for a, b, c in zip(dst, src, wgt)] == uops


def test_field_overflow_names_the_field():
    isa = load_config("pynq").isa
    with pytest.raises(ValueError, match="GEMM field 'iter_out' = 16384 does not fit in 14 bits"):
        isa.encode(GemmInsn(iter_out=16384))
    with pytest.raises(ValueError, match="'imm' = 40000"):
        isa.encode(AluInsn(imm=40000))
    with pytest.raises(ValueError, match="instruction 1: LOAD field 'x_pad_0'"):
        isa.encode_stream([FinishInsn(), MemInsn(x_pad_0=16)])
    with pytest.raises(ValueError, match="micro-op field 'wgt' = 1024"):
        isa.encode_uop(Uop(dst=0, src=0, wgt=1024))


def test_decode_rejects_unknown_opcode_and_memory_type():
    isa = load_config("pynq").isa
    with pytest.raises(ValueError, match="unknown opcode 7"):
        isa.decode(7)
    with pytest.raises(ValueError, match="unknown memory_type 7"):
        isa.decode(7 << 7)


def test_disassembler_one_line_per_instruction_with_token_queues():
    insns = [MemInsn(memory_type=MemType.INP, sram_base=0, dram_base=16, y_size=2, x_size=4, x_stride=8,
                     x_pad_0=1, pop_next=True),
             MemInsn(memory_type=MemType.WGT, x_size=0, push_next=True),
             GemmInsn(uop_begin=0, uop_end=9, iter_out=2, iter_in=3, pop_prev=True, push_next=True),
             AluInsn(alu_opcode=AluOp.MAX, use_imm=True, imm=0),
             MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, y_size=1, x_size=4, x_stride=4,
                     pop_prev=True, push_prev=True),
             FinishInsn()]
    lines = disassemble(insns).splitlines()
    assert len(lines) == len(insns)
    # load pops compute->load, a WGT NOP pushes load->compute, GEMM pops l2c and pushes c2s, store pops c2s / pushes s2c
    assert lines[0].startswith("0  load") and "pad(y0,y1,x0,x1)=(0,0,1,0)" in lines[0] and lines[0].endswith("[-c2l]")
    assert "nop [+l2c]" in lines[1]
    assert "iter=2x3" in lines[2] and lines[2].endswith("[-l2c +c2s]")
    assert "ALU   MAX imm=0" in lines[3]
    assert lines[4].startswith("4  store") and lines[4].endswith("[-c2s +s2c]")
    assert lines[5].endswith("FINISH")


def test_decode_stream_names_the_bad_instruction():
    isa = load_config("pynq").isa
    good = isa.encode(FinishInsn()).to_bytes(16, "little")
    with pytest.raises(ValueError, match="instruction 1: unknown memory_type 7"):
        isa.decode_stream(good + (7 << 7).to_bytes(16, "little"))
    with pytest.raises(ValueError, match="instruction 2: unknown opcode 6"):
        isa.decode_stream(good + good + (6).to_bytes(16, "little"))
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        isa.decode_stream(good[:8])


def test_decode_errors_are_their_own_class_with_the_index():
    from vdla.hw.isa import InsnDecodeError
    isa = load_config("pynq").isa
    good = isa.encode(FinishInsn()).to_bytes(16, "little")
    with pytest.raises(InsnDecodeError) as err:
        isa.decode_stream(good * 3 + (7 << 7 | 0).to_bytes(16, "little"))
    assert err.value.insn_index == 3 and "unknown memory_type 7" in err.value.reason
    assert isinstance(err.value, ValueError)   # callers that caught ValueError still do
    with pytest.raises(InsnDecodeError) as err:
        isa.decode(6)
    assert err.value.insn_index is None


def test_disassembler_shows_the_reset_bit_of_gemm_and_alu():
    lines = disassemble([GemmInsn(reset=True), AluInsn(reset=True, use_imm=True, imm=1), AluInsn()]).splitlines()
    assert "GEMM reset" in lines[0]
    assert "reset(ignored)" in lines[1]          # ALU computes regardless (VTA's semantics)
    assert "reset" not in lines[2]


@pytest.mark.parametrize("word", [7 << 7 | int(Opcode.LOAD), 7 << 7 | int(Opcode.STORE)])  # (ALU opcodes: all 8 defined)
def test_decode_and_decode_stream_give_one_reason_with_the_valid_values(word):
    from vdla.hw.isa import InsnDecodeError
    isa = load_config("pynq").isa
    with pytest.raises(InsnDecodeError) as single:
        isa.decode(word)
    with pytest.raises(InsnDecodeError) as stream:
        isa.decode_stream(word.to_bytes(16, "little"))
    assert single.value.reason.startswith(stream.value.reason)
    assert "(valid: " in stream.value.reason and f"0x{word:032x}" in single.value.reason


def test_gemm_and_alu_records_keep_their_field_order():
    # positional construction and dataclasses.fields() follow the encoding's order
    import dataclasses
    header = ["pop_prev", "pop_next", "push_prev", "push_next", "reset", "uop_begin", "uop_end",
              "iter_out", "iter_in", "requant", "dst_factor_out", "dst_factor_in", "src_factor_out", "src_factor_in"]
    assert [f.name for f in dataclasses.fields(GemmInsn)] == header + ["wgt_factor_out", "wgt_factor_in"]
    assert [f.name for f in dataclasses.fields(AluInsn)] == header + ["alu_opcode", "use_imm", "imm"]


def test_depthwise_has_gemms_layout_and_needs_two_rows_of_taps_per_row_pair():
    isa = load_config("pynq").isa
    insn = DepthwiseInsn(uop_begin=3, uop_end=40, iter_out=5, iter_in=7, requant=True, dst_factor_out=9,
                         src_factor_in=2, wgt_factor_out=4, pop_prev=True)
    word = isa.encode(insn)
    assert word & 7 == Opcode.DEPTHWISE == 5
    assert word >> 3 == isa.encode(GemmInsn(**{k: v for k, v in vars(insn).items()})) >> 3   # the same fields
    assert isa.decode(word) == insn and type(isa.decode(word)) is DepthwiseInsn
    assert isa.decode_stream(isa.encode_stream([insn, FinishInsn()]))[0] == insn
    assert disassemble([insn]).split()[2] == "DEPTHWISE"
    # BLOCK 4: the row pair's 4 multipliers cannot hold 2 x 3 taps; the opcode does not exist there
    small = load_config({"LOG_BLOCK": 2, "LOG_INP_BUFF_SIZE": 12, "LOG_WGT_BUFF_SIZE": 12,
                         "LOG_ACC_BUFF_SIZE": 12}).isa
    with pytest.raises(ValueError, match=f"DEPTHWISE needs BLOCK >= {2 * TAPS}"):
        small.encode(insn)
    with pytest.raises(ValueError, match=f"DEPTHWISE needs BLOCK >= {2 * TAPS}"):
        small.decode(word)
    with pytest.raises(ValueError, match=f"instruction 0: DEPTHWISE needs BLOCK >= {2 * TAPS}"):
        small.decode_stream(word.to_bytes(16, "little"))
