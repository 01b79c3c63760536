"""Requantization of int32 accumulators to int8 on the ALU: optional multiply, shift, clip.

The ALU runs it in place on a rectangle of accumulator entries; the truncating STORE then
writes the low 8 bits, which equal the clipped value when the clip range lies in int8.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vdla.hw import AluOp, Uop
from vdla.hw.alu_ops import immediate_error

from vdla.driver.runtime import LoopLevel, UopKernel


@dataclass(frozen=True)
class Requant:
    shift: int = 0            # arithmetic right shift; negative shifts left (vdla.hw.alu_ops SHR)
    lo: int | None = -128     # clip bounds (None: no clip on that side)
    hi: int | None = 127
    mul: int | None = None    # multiply by this immediate before the shift

    def __post_init__(self):
        for name, op in (("shift", AluOp.SHR), ("lo", AluOp.MAX), ("hi", AluOp.MIN), ("mul", AluOp.MUL)):
            value = getattr(self, name)
            if value is not None and (problem := immediate_error(op, value)):
                raise ValueError(f"requant {name}: {problem}")

    def steps(self) -> list[tuple[AluOp, int]]:
        out = []
        if self.mul is not None:
            out.append((AluOp.MUL, self.mul))
        if self.shift:
            out.append((AluOp.SHR, self.shift))
        if self.lo is not None:
            out.append((AluOp.MAX, self.lo))
        if self.hi is not None:
            out.append((AluOp.MIN, self.hi))
        return out


def requant_kernels(req: Requant, base: int, rows: int, cols: int) -> list[UopKernel]:
    """ALU kernels over the rows x cols accumulator entries starting at `base` (row-major).
    One micro-op walked by two loops: consecutive steps touch neighbouring entries, so the
    accumulator hazard rule holds whenever cols >= 2 or rows >= 2."""
    if cols == 1:
        loops = (LoopLevel(rows, dst=1, src=1),)
    else:
        loops = (LoopLevel(rows, dst=cols, src=cols), LoopLevel(cols, dst=1, src=1))
    return [UopKernel.alu(op, [Uop(base, base)], loops, imm=imm, name=f"requant {op.name}")
            for op, imm in req.steps()]


def emit_requant(cq, req: Requant, base: int, rows: int, cols: int) -> None:
    for kernel in requant_kernels(req, base, rows, cols):
        cq.push_alu(kernel)


def requant_reference(acc: np.ndarray, req: Requant) -> np.ndarray:
    """numpy oracle: int32 accumulators -> the int8 values the STORE writes."""
    x = np.asarray(acc, dtype=np.int64)
    if req.mul is not None:
        x = (x * req.mul).astype(np.int32).astype(np.int64)  # low 32 bits of the product
    if req.shift > 0:
        x = x >> req.shift
    elif req.shift < 0:
        x = (x << -req.shift).astype(np.int32).astype(np.int64)
    if req.lo is not None:
        x = np.maximum(x, req.lo)
    if req.hi is not None:
        x = np.minimum(x, req.hi)
    return x.astype(np.int32).astype(np.int8)
