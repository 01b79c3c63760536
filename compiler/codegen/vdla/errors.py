from vdla.hw.errors import CompileError


class VdlaLoweringError(CompileError, ValueError):
    """The loop IR cannot become VDLA instructions; the message names the statement or
    buffer and what the hardware needs instead."""


class VtaCompatError(VdlaLoweringError):
    """A kernel compiled in VTA mode would need a VDLA extension that VTA lacks (ALU MUL,
    LOAD ACC_8BIT, pad_min, ...); the message names the layer, the extension and what to
    change."""
