"""VDLA accelerator intrinsics, declared for tensorize (emitted as IntrinsicStmt; the VDLA
backend turns them into GEMM instructions and micro-ops).

gemm(batch, block_in, block_out): acc[b, o] += sum_i int32(inp[b, i]) * int32(wgt[o, i]),
operands in the accelerator's on-chip buffers (scopes vdla.inp, vdla.wgt, vdla.acc), each
tile contiguous (the on-chip buffers hold whole tiles).
"""
from __future__ import annotations

from .. import te
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
