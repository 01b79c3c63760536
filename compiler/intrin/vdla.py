"""VDLA accelerator intrinsics, declared for tensorize (emitted as IntrinsicStmt; the VDLA
backend turns them into GEMM instructions and micro-ops).

gemm(batch, block_in, block_out): acc[b, o] += sum_i int32(inp[b, i]) * int32(wgt[o, i]),
operands in the accelerator's on-chip buffers (scopes vdla.inp, vdla.wgt, vdla.acc), each
tile contiguous (the on-chip buffers hold whole tiles).
"""
from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import stmt as S
from .declaration import declare_intrin

SCOPE_INP, SCOPE_WGT, SCOPE_ACC = "vdla.inp", "vdla.wgt", "vdla.acc"


def gemm(batch=1, block_in=16, block_out=16):
    inp = te.placeholder((batch, block_in), "int8", "inp")
    wgt = te.placeholder((block_out, block_in), "int8", "wgt")
    k = te.reduce_axis((0, block_in), "k")
    acc = te.compute((batch, block_out), lambda b, o: te.sum(
        te.cast("int32", inp[b, k.var]) * te.cast("int32", wgt[o, k.var]), axis=k), name="acc")

    def emit(ins, out, accumulate):
        return S.IntrinsicStmt("vdla.gemm", [_view(r) for r in ins] + [_view(out)],
                               {"reset": not accumulate, "offsets": [str(r.offset) for r in ins + [out]]})

    return declare_intrin(f"vdla_gemm_{batch}x{block_in}x{block_out}", acc, emit,
                          scopes={"inp": (SCOPE_INP,), "wgt": (SCOPE_WGT,), "acc": (SCOPE_ACC,)},
                          strides={"inp": (block_in, 1), "wgt": (block_in, 1), "acc": (block_out, 1)},
                          doc="int8 x int8 -> int32 GEMM tile on the VDLA core")


def _view(region):
    return S.Buffer(region.operand, region.shape, region.dtype, scope=region.scope,
                    strides=region.strides, elem_offset=region.offset, data=region.buffer)


ALU_OPS = {
    "min": lambda a, b: E.Min(a, b),
    "max": lambda a, b: E.Max(a, b),
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
}


def alu(op, batch=1, block_out=16, imm=None):
    """VDLA ALU on an accumulator tile: dst[b, o] = op(src[b, o], imm or other[b, o]),
    int32 lane-wise in scope vdla.acc (SPEC: MIN, MAX, ADD, MUL; SHR is `alu_shr`).
    With `imm` the declaration holds that constant, so a stage matches only the same value."""
    if op not in ALU_OPS:
        raise ValueError(f"VDLA ALU op {op!r}: expected one of {sorted(ALU_OPS)} (or alu_shr)")
    src = te.placeholder((batch, block_out), "int32", "src")
    if imm is None:
        other = te.placeholder((batch, block_out), "int32", "other")
        dst = te.compute((batch, block_out), lambda b, o: ALU_OPS[op](src[b, o], other[b, o]), name="dst")
    else:
        dst = te.compute((batch, block_out), lambda b, o: ALU_OPS[op](src[b, o], E.Const(int(imm), "int32")),
                         name="dst")
    return _declare_alu(f"vdla_alu_{op}" + ("" if imm is None else f"_imm{imm}"), dst, op, imm, batch, block_out)


def alu_shr(shift, batch=1, block_out=16):
    """Arithmetic shift right by a positive immediate, i.e. floor division by 2**shift."""
    if not 0 < shift < 32:
        raise ValueError(f"alu_shr: shift {shift} outside 1..31")
    src = te.placeholder((batch, block_out), "int32", "src")
    dst = te.compute((batch, block_out), lambda b, o: src[b, o] // (1 << shift), name="dst")
    return _declare_alu(f"vdla_alu_shr_imm{shift}", dst, "shr", shift, batch, block_out)


def _declare_alu(name, dst, op, imm, batch, block_out):
    def emit(ins, out, accumulate):
        return S.IntrinsicStmt("vdla.alu", [_view(r) for r in ins] + [_view(out)],
                               {"op": op, "imm": imm})
    names = [t.name for t in dst.op.input_tensors] + ["dst"]
    return declare_intrin(name, dst, emit, scopes={n: (SCOPE_ACC,) for n in names},
                          strides={n: (block_out, 1) for n in names},
                          doc=f"VDLA ALU {op} on an accumulator tile")
