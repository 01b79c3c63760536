"""What the VDLA passes put into the loop IR: a DMA copy nest and a micro-op kernel nest,
carried by IntrinsicStmt("vdla.dma") / IntrinsicStmt("vdla.uops") as attrs["node"].

Indices are Affine forms in element units (one element = the lanes an SRAM entry holds);
loops are (Var, extent) outer to inner. Emission binds the enclosing loops' values and
turns a node into LOAD/STORE instructions or one GEMM/ALU instruction per remaining
instruction-level iteration."""
from __future__ import annotations

from dataclasses import dataclass, field

from vdla.hw import AluOp, MemType
from vdla.hw.requantizer import REGISTERS

from ...tir import stmt as S
from .affine import Affine

# (vdla.req: the requantizer's registers, which ALU SETQ addresses like a three-entry SRAM)
SCOPE_MEM = {"vdla.inp": "inp", "vdla.wgt": "wgt", "vdla.acc": "acc", "vdla.lut": "lut", "vdla.req": "req"}


def scope_lanes(config, scope: str) -> int:
    """Scalars per SRAM element of a scope (vdla.hw's element shapes)."""
    return {"vdla.inp": config.batch * config.block, "vdla.wgt": config.block * config.block,
            "vdla.acc": config.batch * config.block, "vdla.lut": config.batch * config.block,
            "vdla.req": config.batch * config.block}[scope]


def sram_depth(config, scope: str) -> int:
    return {"vdla.inp": config.inp_depth, "vdla.wgt": config.wgt_depth, "vdla.acc": config.acc_depth,
            "vdla.lut": config.lut_depth, "vdla.req": len(REGISTERS)}[scope]


@dataclass
class DmaCopy:
    kind: str                      # "load" (DRAM -> SRAM) or "store" (OUT -> DRAM)
    mem_type: MemType
    sram: S.Buffer                 # the scoped buffer (an Allocate's)
    dram: S.Buffer                 # a kernel parameter
    loops: list                    # [(Var, extent)] outer -> inner, element lanes excluded
    sram_index: Affine
    dram_index: Affine
    guard: list = field(default_factory=list)   # Affine forms that must be >= 0 (else padding / skip)
    pad_min: bool = False                        # pad with the lanes' most negative value, not zeros

    def __repr__(self):
        return (f"{self.kind} {self.mem_type.name} {self.dram.name}[{self.dram_index!r}] <-> "
                f"{self.sram.name}[{self.sram_index!r}] over "
                f"{[(v.name, e) for v, e in self.loops]}" + (f" if {self.guard!r} >= 0" if self.guard else ""))


@dataclass
class UopNest:
    mode: str                      # "gemm" or "alu"
    loops: list                    # [(Var, extent)] outer -> inner
    dst: tuple                     # (Buffer, Affine) accumulator operand
    src: tuple | None = None       # (Buffer, Affine): input (GEMM) or accumulator (ALU tensor op)
    wgt: tuple | None = None       # (Buffer, Affine): weights (GEMM)
    reset: bool = False
    alu_op: AluOp | None = None
    imm: int | None = None
    n_hw: int = 0                  # loops[n_inst : n_inst + n_hw] are the instruction's loop levels
    n_inst: int = 0                # loops[:n_inst] repeat the instruction; the rest are micro-ops
    name: str = ""
    requant: bool = False          # OUT written through the requantizer
    # DEPTHWISE (vdla.hw.depthwise): (outputs, input step, accumulator step, output stride, zero
    # tile step) of the one row of a sliding window the micro-ops are; src/dst are the row's first
    # input and output, wgt its weight tile (emit's window rows)
    window: tuple | None = None

    def operands(self):
        return [(k, getattr(self, k)) for k in ("dst", "src", "wgt") if getattr(self, k) is not None]

    def __repr__(self):
        what = "reset" if self.reset else self.mode if self.mode == "gemm" else f"alu.{self.alu_op.name}"
        if self.window is not None:
            what = f"depthwise(row of {self.window[0]})"
        if self.imm is not None:
            what += f"(imm={self.imm})"
        if self.requant:
            what += " out=requant"
        ops = ", ".join(f"{k}={b.name}[{a!r}]" for k, (b, a) in self.operands())
        loops = [(v.name, e) for v, e in self.loops]
        return (f"{what} {ops} inst={loops[:self.n_inst]} hw={loops[self.n_inst:self.n_inst + self.n_hw]} "
                f"uops={loops[self.n_inst + self.n_hw:]}")
