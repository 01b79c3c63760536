"""Functional semantics of each instruction (SPEC §3), vectorised with numpy.

`execute(insn, index, state, dram)` applies one instruction to the on-chip state and the
DRAM image. Data never influences timing, so the scheduler decides *when* and this module
decides *what*. LOAD and STORE live here; GEMM and ALU, whose loop nests reach 2^40 steps
at the ISA's limits, have engines of their own (gemm.py, depthwise.py, alu.py) that work in bounded
memory and fold repeated loops, so every legal instruction ends.

Reset: GEMM with reset=1 zeroes its destination accumulators (and OUT). ALU ignores the
reset bit and always computes, as all three VTA implementations do (HLS, Chisel and the
functional simulator); the reference model and the RTL follow the same rule (issue 11).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from vdla.hw.isa import AluInsn, DepthwiseInsn, GemmInsn, MemInsn, MemType, Opcode
from vdla.hw.timing import dram_elem_bytes

from .alu import execute_alu
from .depthwise import execute_depthwise
from .errors import MemoryAccessError, StreamError
from .gemm import execute_gemm
from .work_limit import WorkMeter


def _dram_rows(dram: np.ndarray, insn: MemInsn, elem_bytes: int, index: int, what: str) -> np.ndarray:
    """A (y_size, x_size*elem_bytes) strided view of DRAM rows, bounds-checked."""
    row_bytes = insn.x_size * elem_bytes
    start = insn.dram_base * elem_bytes
    last = start + ((insn.y_size - 1) * insn.x_stride * elem_bytes if insn.y_size else 0) + row_bytes
    if insn.y_size and last > dram.size:
        raise MemoryAccessError(
            f"{what} reads/writes DRAM bytes up to {last} but DRAM holds {dram.size} bytes "
            f"(field dram_base={insn.dram_base}, x_stride={insn.x_stride}, y_size={insn.y_size}, "
            f"x_size={insn.x_size}, element {elem_bytes} B)", index)
    if insn.y_size > 1 and insn.x_stride < insn.x_size and what.startswith("STORE"):
        raise MemoryAccessError(f"{what}: x_stride {insn.x_stride} < x_size {insn.x_size} makes rows overlap", index)
    return as_strided(dram[start:], shape=(insn.y_size, row_bytes),
                      strides=(insn.x_stride * elem_bytes, 1), writeable=True)


def _check_sram(what: str, field: str, first: int, count: int, depth: int, index: int) -> None:
    if first < 0 or first + count > depth:
        raise MemoryAccessError(f"{what}: SRAM range [{first}, {first + count}) from field "
                                f"{field} exceeds the buffer depth {depth}", index)


def _load(insn: MemInsn, index: int, state, dram: np.ndarray) -> None:
    cfg = state.config
    mt = insn.memory_type
    what = f"LOAD {mt.name}"
    if mt == MemType.OUT:
        raise StreamError("LOAD cannot target the OUT buffer (memory_type 4); use STORE", index)
    eb = dram_elem_bytes(cfg, mt)
    if mt == MemType.UOP:
        _check_sram(what, "sram_base", insn.sram_base, insn.x_size, cfg.uop_depth, index)
        start, end = insn.dram_base * eb, (insn.dram_base + insn.x_size) * eb
        if end > dram.size:
            raise MemoryAccessError(f"{what} reads DRAM bytes up to {end} but DRAM holds {dram.size} "
                                    f"(field dram_base={insn.dram_base}, x_size={insn.x_size})", index)
        words = dram[start:end].view(np.uint32)
        dst, src, wgt = cfg.isa.decode_uop_fields(words)
        sl = slice(insn.sram_base, insn.sram_base + insn.x_size)
        state.uop_dst[sl], state.uop_src[sl], state.uop_wgt[sl] = dst, src, wgt
        return
    rows = insn.y_pad_0 + insn.y_size + insn.y_pad_1
    cols = insn.x_pad_0 + insn.x_size + insn.x_pad_1
    sram = {MemType.INP: state.inp, MemType.WGT: state.wgt, MemType.ACC: state.acc,
            MemType.ACC_8BIT: state.acc, MemType.LUT: state.lut}[mt]
    _check_sram(what, "sram_base", insn.sram_base, rows * cols, sram.shape[0], index)
    data = _dram_rows(dram, insn, eb, index, what)
    lanes = sram.shape[1:]
    if mt == MemType.ACC:
        elems = np.ascontiguousarray(data).view("<i4").reshape(insn.y_size, insn.x_size, *lanes)
    elif mt == MemType.ACC_8BIT:
        elems = np.ascontiguousarray(data).view(np.int8).reshape(insn.y_size, insn.x_size, *lanes).astype(np.int32)
    else:
        elems = np.ascontiguousarray(data).view(np.int8).reshape(insn.y_size, insn.x_size, *lanes)
    block = np.full((rows, cols, *lanes), insn.pad_value, dtype=sram.dtype)
    block[insn.y_pad_0:insn.y_pad_0 + insn.y_size, insn.x_pad_0:insn.x_pad_0 + insn.x_size] = elems
    sram[insn.sram_base:insn.sram_base + rows * cols] = block.reshape(rows * cols, *lanes)


def _store(insn: MemInsn, index: int, state, dram: np.ndarray) -> None:
    cfg = state.config
    if insn.memory_type != MemType.OUT:
        raise StreamError(f"STORE must read the OUT buffer (memory_type 4), got {insn.memory_type.name}", index)
    count = insn.y_size * insn.x_size
    _check_sram("STORE OUT", "sram_base", insn.sram_base, count, cfg.out_depth, index)
    if count == 0:   # y_size = 0: no rows, nothing moves (x_size = 0 never gets here)
        return
    rows = _dram_rows(dram, insn, cfg.out_elem_bytes, index, "STORE OUT")
    src = state.out[insn.sram_base:insn.sram_base + count]
    rows[...] = src.reshape(insn.y_size, -1).view(np.uint8)


def execute(insn, index: int, state, dram: np.ndarray) -> int:
    """Apply one instruction; returns the number of GEMM/ALU micro-ops it executed."""
    if isinstance(insn, MemInsn):
        if insn.x_size == 0:
            return 0
        if insn.opcode == Opcode.STORE:
            _store(insn, index, state, dram)
        else:
            _load(insn, index, state, dram)
        return 0
    if isinstance(insn, DepthwiseInsn):
        state.meter = WorkMeter(state.max_insn_work, index, "DEPTHWISE")
        return execute_depthwise(insn, index, state)
    if isinstance(insn, GemmInsn):
        state.meter = WorkMeter(state.max_insn_work, index, "GEMM")
        return execute_gemm(insn, index, state)
    if isinstance(insn, AluInsn):
        state.meter = WorkMeter(state.max_insn_work, index, f"ALU {insn.alu_opcode.name}")
        return execute_alu(insn, index, state)
    return 0
