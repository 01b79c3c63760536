"""`vdla disasm FILE --check vta`: one line per finding and exit status 1, or 0 for a
compatible stream; the micro-ops come from a DRAM image (--dram, or FILE with --insn-addr)."""
import numpy as np

from vdla.driver.cli import main
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.hw.errors import ConfigError
from vdla.hw import AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop, load_config

CFG = load_config("pynq")
UOP_AT, INSN_AT = 4096, 8192


def _stream(*middle):
    """Micro-op load, accumulator reset, `middle`, FINISH."""
    return [MemInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, dram_base=UOP_AT // 4, x_size=1, x_stride=1),
            GemmInsn(reset=True, uop_end=1, iter_in=4, dst_factor_in=1), *middle, FinishInsn()]


def _image(insns=None):
    dram = np.zeros(1 << 16, np.uint8)
    words = CFG.isa.encode_uops([Uop(0)]).view(np.uint8)
    dram[UOP_AT:UOP_AT + words.size] = words
    if insns is not None:
        raw = CFG.isa.encode_stream(insns)
        dram[INSN_AT:INSN_AT + raw.size] = raw
    return dram


def test_findings_one_line_each_and_exit_status_1(tmp_path, capsys):
    insns = _stream(MemInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, x_size=2, x_stride=2, x_pad_0=1,
                            pad_min=True),
                    AluInsn(uop_end=1, iter_in=4, dst_factor_in=1, alu_opcode=AluOp.MUL, use_imm=True, imm=3))
    path = tmp_path / "stream.bin"
    path.write_bytes(CFG.isa.encode_stream(insns).tobytes())
    assert main(["disasm", str(path), "--check", "vta"]) == 1
    out, err = capsys.readouterr()
    lines = out.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("instruction 2: LOAD INP with pad_min (bit 58)")
    assert lines[1].startswith("instruction 3: ALU MUL: VTA's ALU has no MUL opcode")
    assert "not checked" in err and "--dram" in err


def test_a_compatible_stream_in_a_dram_image_exits_0(tmp_path, capsys):
    insns = _stream(AluInsn(uop_end=1, iter_in=4, dst_factor_in=1, alu_opcode=AluOp.SHR, use_imm=True, imm=15))
    path = tmp_path / "dram.bin"
    _image(insns).tofile(path)
    assert main(["disasm", str(path), "--insn-addr", hex(INSN_AT), "--check", "vta"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == f"VTA-compatible: {len(insns)} instructions, no findings" and err == ""
    assert main(["disasm", str(path), "--insn-addr", str(INSN_AT)]) == 0       # a listing of the same stream
    assert len(capsys.readouterr().out.strip().splitlines()) == len(insns)


def test_dram_gives_the_micro_ops_for_the_never_written_check(tmp_path, capsys):
    insns = _stream(MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, x_size=6, x_stride=6))
    stream, dram = tmp_path / "stream.bin", tmp_path / "dram.bin"
    stream.write_bytes(CFG.isa.encode_stream(insns).tobytes())
    _image().tofile(dram)
    assert main(["disasm", str(stream), "--check", "vta", "--dram", str(dram)]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("instruction 2: STORE reads OUT entries 4, 5 that no GEMM or ALU wrote before")
    assert lines[1].startswith("instruction 2: STORE reads OUT entries 0, 1, 2, 3 last written by a GEMM reset")


def test_bad_stream_positions_are_one_line_errors(tmp_path, capsys):
    path = tmp_path / "dram.bin"
    _image().tofile(path)
    assert main(["disasm", str(path), "--insn-addr", "8"]) == EXIT_CODES[ConfigError]
    assert "not a 16-byte aligned address" in capsys.readouterr().err
    assert main(["disasm", str(path), "--insn-addr", hex(INSN_AT)]) == EXIT_CODES[ConfigError]
    assert "no FINISH after byte 0x2000" in capsys.readouterr().err
    assert main(["disasm", str(path), "--insn-count", "3"]) == EXIT_CODES[ConfigError]
    assert "--insn-count needs --insn-addr" in capsys.readouterr().err
