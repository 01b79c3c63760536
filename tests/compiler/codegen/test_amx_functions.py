"""AMX tile GEMM functions (codegen/amx.py): the machine code LLVM makes of a spec for an AMX
CPU (on any machine with LLVM's x86 backend)."""
from __future__ import annotations

from llvmlite import ir

from vdla.compiler.codegen import amx
from vdla.compiler.codegen.emit import optimize, parse
from vdla.compiler.target import Target
from vdla.compiler.tir.tile_gemm import TileGemm

SPR = "x86_64-unknown-linux-gnu"


# a 3x3 conv's tile: 14 pixels x 2 blocks over 8 input-channel blocks and 3 kernel rows
SPEC = TileGemm(rows=14, tiles=2, colsb=48, a_row_bytes=16, loops=((8, 14400, 2304), (3, 480, 768)),
                b_block_bytes=18432, c_row_bytes=64, c_block_bytes=896)


def test_an_amx_cpu_gets_tile_instructions():
    target = Target(SPR, "sapphirerapids", "+avx512f,+avx512bw,+amx-tile,+amx-int8", 1)
    module = ir.Module("amx_test")
    module.triple = target.llvm_triple
    module.data_layout = str(target.target_machine().target_data)
    fn = amx.tile_gemm_function(module, SPEC)
    assert amx.tile_gemm_function(module, SPEC) is fn      # one function per spec
    fn.linkage = "external"                                  # keep it: nothing calls it here
    mod = optimize(parse(str(module)), target)
    asm = target.target_machine().emit_assembly(mod)
    for instruction in ("ldtilecfg", "tilezero", "tileloadd", "tdpbusd", "tilestored", "tilerelease"):
        assert instruction in asm, instruction
