"""Human-readable listing of an instruction stream: one line per instruction.

Token flags are shown as the queue they act on: `-l2c` pops from load->compute, `+c2s`
pushes to compute->store (SPEC §4), so a reader can follow the dependence protocol. The
reset bit is shown on both opcodes that carry it: `GEMM reset` zeroes, while an ALU with
the bit set says `reset(ignored)`, since ALU always computes (vdla.hw.isa). An instruction
whose OUT writes go through the requantizer (vdla.hw.requantizer) ends with `out=requant`.
"""
from __future__ import annotations

from .isa import AluInsn, DepthwiseInsn, FinishInsn, GemmInsn, Insn, MemInsn, Opcode


def _tokens(insn: Insn) -> str:
    parts = [f"-{q}" for q in insn.pops()] + [f"+{q}" for q in insn.pushes()]
    return (" [" + " ".join(parts) + "]") if parts else ""


def format_insn(insn: Insn) -> str:
    if isinstance(insn, MemInsn):
        name = f"{Opcode(insn.opcode).name:<5} {insn.memory_type.name:<8}"
        if insn.is_nop:
            return f"{name} nop" + _tokens(insn)
        text = (f"{name} sram={insn.sram_base} dram={insn.dram_base} "
                f"y={insn.y_size} x={insn.x_size} stride={insn.x_stride}")
        pads = (insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1)
        if any(pads):
            text += " pad(y0,y1,x0,x1)=({},{},{},{})".format(*pads)
            if insn.pad_min:
                text += " pad=min"
        return text + _tokens(insn)
    if isinstance(insn, (GemmInsn, AluInsn)):
        if isinstance(insn, GemmInsn):
            if isinstance(insn, DepthwiseInsn):
                name = "DEPTHWISE" + (" reset" if insn.reset else "")
            else:
                name = "GEMM " + ("reset   " if insn.reset else "        ")
            factors = (f"dst=({insn.dst_factor_out},{insn.dst_factor_in}) "
                       f"src=({insn.src_factor_out},{insn.src_factor_in}) "
                       f"wgt=({insn.wgt_factor_out},{insn.wgt_factor_in})")
        else:
            operand = f"imm={insn.imm}" if insn.use_imm else "tensor"
            name = f"ALU   {insn.alu_opcode.name:<3} {operand:<9}"
            factors = (f"dst=({insn.dst_factor_out},{insn.dst_factor_in}) "
                       f"src=({insn.src_factor_out},{insn.src_factor_in})")
        ignored = " reset(ignored)" if isinstance(insn, AluInsn) and insn.reset else ""
        requant = " out=requant" if insn.requant else ""
        return (f"{name} uop=[{insn.uop_begin},{insn.uop_end}) "
                f"iter={insn.iter_out}x{insn.iter_in} {factors}{ignored}{requant}" + _tokens(insn))
    if isinstance(insn, FinishInsn):
        return "FINISH" + _tokens(insn)
    raise TypeError(f"not an instruction: {insn!r}")


def disassemble(insns: list[Insn]) -> str:
    width = len(str(max(len(insns) - 1, 0)))
    return "\n".join(f"{i:>{width}}  {insn.module().name.lower():<7} {format_insn(insn)}"
                     for i, insn in enumerate(insns))
