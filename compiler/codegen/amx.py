"""Intel AMX tile GEMMs (AMX-INT8, tir/tile_gemm.py's calls) as LLVM functions a kernel calls.

The LLVM backend configures the tile registers itself (the `.internal` intrinsics carry their
shapes; it places `ldtilecfg` where they are used and releases the tiles on return). Linux gives
a process the tile registers only once it has asked (driver/machine.py, request_amx).
"""
from __future__ import annotations

from llvmlite import ir

from ..tir.tile_gemm import TILE_BYTES_PER_ROW, TileGemm
from .llvm_types import I64, PTR

I16 = ir.IntType(16)


class _AmxTile(ir.Type):
    """LLVM's x86_amx, the type of a tile register (llvmlite.ir does not spell it)."""

    def _to_string(self):
        return "x86_amx"

    def __eq__(self, other):
        return isinstance(other, _AmxTile)

    def __hash__(self):
        return hash("x86_amx")


AMX = _AmxTile()


def _declare(module, name, ret, args):
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, args), name=name)


def tile_gemm_function(module: ir.Module, spec: TileGemm) -> ir.Function:
    """The function void f(ptr a, ptr b, ptr c) of `spec` in `module` (written once per spec)."""
    if spec.name in module.globals:
        return module.globals[spec.name]
    load = _declare(module, "llvm.x86.tileloadd64.internal", AMX, [I16, I16, PTR, I64])
    zero = _declare(module, "llvm.x86.tilezero.internal", AMX, [I16, I16])
    dot = _declare(module, "llvm.x86.tdpbusd.internal", AMX, [I16, I16, I16, AMX, AMX, AMX])
    store = _declare(module, "llvm.x86.tilestored64.internal", ir.VoidType(), [I16, I16, PTR, I64, AMX])
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR]), name=spec.name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    a, bw, c = fn.args
    i16 = lambda v: ir.Constant(I16, v)   # noqa: E731
    i64 = lambda v: ir.Constant(I64, v)   # noqa: E731
    entry, loop, done = (fn.append_basic_block(x) for x in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    rows, out_cols = i16(spec.rows), i16(TILE_BYTES_PER_ROW)

    def c_tile(t):
        return b.gep(c, [i64(t * spec.c_block_bytes)], source_etype=ir.IntType(8))
    if spec.accumulate:
        init = [b.call(load, [rows, out_cols, c_tile(t), i64(spec.c_row_bytes)]) for t in range(spec.tiles)]
    else:
        init = [b.call(zero, [rows, out_cols]) for _ in range(spec.tiles)]
    b.branch(loop)
    b.position_at_end(loop)
    step = b.phi(I64, "step")
    step.add_incoming(i64(0), entry)
    acc = []
    for t in range(spec.tiles):
        phi = b.phi(AMX, f"acc{t}")
        phi.add_incoming(init[t], entry)
        acc.append(phi)
    # the step's place in each reduction loop (innermost last), and its A and B offsets
    a_off, b_off, rest = i64(0), i64(0), step
    for k, (extent, a_step, b_step) in enumerate(reversed(spec.loops)):
        last = k == len(spec.loops) - 1
        idx = rest if last else b.urem(rest, i64(extent))
        if not last:
            rest = b.udiv(rest, i64(extent))
        a_off = b.add(a_off, b.mul(idx, i64(a_step)))
        b_off = b.add(b_off, b.mul(idx, i64(b_step)))
    ta = b.call(load, [rows, i16(spec.colsb), b.gep(a, [a_off], source_etype=ir.IntType(8)), i64(spec.a_row_bytes)])
    nxt = []
    for t in range(spec.tiles):
        pb = b.gep(bw, [b.add(b_off, i64(t * spec.b_block_bytes))], source_etype=ir.IntType(8))
        tb = b.call(load, [i16(spec.colsb // 4), out_cols, pb, i64(TILE_BYTES_PER_ROW)])
        nxt.append(b.call(dot, [rows, out_cols, i16(spec.colsb), acc[t], ta, tb]))
    step1 = b.add(step, i64(1))
    for t in range(spec.tiles):
        acc[t].add_incoming(nxt[t], loop)
    step.add_incoming(step1, loop)
    b.cbranch(b.icmp_unsigned(">=", step1, i64(spec.steps)), done, loop)
    b.position_at_end(done)
    for t in range(spec.tiles):
        b.call(store, [rows, out_cols, c_tile(t), i64(spec.c_row_bytes), nxt[t]])
    b.ret_void()
    return fn
