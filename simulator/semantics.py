"""Functional semantics of each instruction (SPEC §3), vectorised with numpy.

`execute(insn, index, state, dram)` applies one instruction to the on-chip state and the
DRAM image. Data never influences timing, so the scheduler decides *when* and this module
decides *what*.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from vdla.hw.isa import AluInsn, AluOp, GemmInsn, MemInsn, MemType, Opcode
from vdla.hw.timing import dram_elem_bytes

from .errors import HazardError, MemoryAccessError, StreamError

_INT32_MIN, _INT32_SPAN = -(1 << 31), 1 << 32


def wrap_int32(values: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of int64 values into int32."""
    return ((values - _INT32_MIN) % _INT32_SPAN + _INT32_MIN).astype(np.int32)


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
            MemType.ACC_8BIT: state.acc}[mt]
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
    rows = _dram_rows(dram, insn, cfg.out_elem_bytes, index, "STORE OUT")
    src = state.out[insn.sram_base:insn.sram_base + count]
    rows[...] = src.reshape(insn.y_size, -1).view(np.uint8)


def _loop_indices(insn, state, index: int):
    """Flattened (dst, src, wgt) indices of a GEMM/ALU loop nest, in execution order."""
    cfg = state.config
    if insn.uop_end > cfg.uop_depth or insn.uop_begin > insn.uop_end:
        raise MemoryAccessError(f"micro-op range [{insn.uop_begin}, {insn.uop_end}) (fields uop_begin/"
                                f"uop_end) is not inside the micro-op buffer of depth {cfg.uop_depth}", index)
    u = slice(insn.uop_begin, insn.uop_end)
    i = np.arange(insn.iter_out, dtype=np.int64)[:, None, None]
    j = np.arange(insn.iter_in, dtype=np.int64)[None, :, None]
    dst = (state.uop_dst[u][None, None, :] + i * insn.dst_factor_out + j * insn.dst_factor_in).ravel()
    src = (state.uop_src[u][None, None, :] + i * insn.src_factor_out + j * insn.src_factor_in).ravel()
    wgt = None
    if isinstance(insn, GemmInsn):
        wgt = (state.uop_wgt[u][None, None, :] + i * insn.wgt_factor_out + j * insn.wgt_factor_in).ravel()
    return dst, src, wgt


def _check_index(name: str, field: str, values: np.ndarray, depth: int, index: int) -> None:
    if values.size and values.max() >= depth:
        pos = int(np.argmax(values >= depth))
        raise MemoryAccessError(f"{name} index {int(values[pos])} (micro-op field {field}, loop step "
                                f"{pos}) exceeds the buffer depth {depth}", index)


def _check_hazard(dst: np.ndarray, min_distance: int, index: int, what: str) -> None:
    for d in range(1, min_distance):
        if dst.size > d:
            clash = np.flatnonzero(dst[d:] == dst[:-d])
            if clash.size:
                p = int(clash[0])
                raise HazardError(f"{what} updates accumulator entry {int(dst[p])} at micro-op steps {p} and "
                                  f"{p + d}, closer than the pipeline's minimum distance {min_distance}", index)


def _gemm(insn: GemmInsn, index: int, state) -> int:
    cfg = state.config
    dst, src, wgt = _loop_indices(insn, state, index)
    _check_index("GEMM accumulator", "dst", dst, cfg.acc_depth, index)
    if insn.reset:
        state.acc[dst] = 0
        state.out[dst] = 0
        return 0
    _check_index("GEMM input", "src", src, cfg.inp_depth, index)
    _check_index("GEMM weight", "wgt", wgt, cfg.wgt_depth, index)
    _check_hazard(dst, cfg.timing.acc_raw_min_distance, index, "GEMM")
    if dst.size == 0:
        return 0
    # Products grouped by weight: one exact float32 GEMM per distinct weight element
    # (int8 x int8 sums over a block stay below 2^24, so float32 is exact).
    order = np.argsort(wgt, kind="stable")
    w_sorted = wgt[order]
    cuts = np.flatnonzero(np.diff(w_sorted)) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [w_sorted.size]))
    b, n = cfg.batch, cfg.block
    products = np.empty((dst.size, b * n), dtype=np.float64)
    inp = state.inp
    for s, e in zip(starts.tolist(), ends.tolist()):
        rows = order[s:e]
        x = inp[src[rows]].reshape(-1, n).astype(np.float32)
        w = state.wgt[w_sorted[s]].astype(np.float32)
        products[rows] = (x @ w.T).reshape(e - s, b * n)
    # Accumulate per destination entry; float64 sums of these products are exact.
    unique, inverse = np.unique(dst, return_inverse=True)
    sums = np.empty((unique.size, b * n), dtype=np.int64)
    for lane in range(b * n):
        sums[:, lane] = np.bincount(inverse, weights=products[:, lane], minlength=unique.size).astype(np.int64)
    new = wrap_int32(state.acc[unique].reshape(unique.size, -1).astype(np.int64) + sums)
    state.acc[unique] = new.reshape(unique.size, b, n)
    state.out[unique] = state.acc[unique].astype(np.int8)
    return int(dst.size)


def _alu_apply(op: AluOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Lane-wise op on int64 copies of int32 values; result wrapped to int32."""
    if op == AluOp.MIN:
        return np.minimum(a, b).astype(np.int32)
    if op == AluOp.MAX:
        return np.maximum(a, b).astype(np.int32)
    if op == AluOp.ADD:
        return wrap_int32(a + b)
    if op == AluOp.MUL:
        return wrap_int32(a * b)
    if op == AluOp.SHR:
        amount = ((b & 63) ^ 32) - 32  # low 6 bits, signed
        right = a >> np.clip(amount, 0, 63)
        left = (a << np.clip(-amount, 0, 63)) & 0xFFFFFFFF
        return np.where(amount >= 0, wrap_int32(right), wrap_int32(left))
    raise ValueError(f"unknown ALU opcode {op}")


def _alu(insn: AluInsn, index: int, state) -> int:
    cfg = state.config
    dst, src, _ = _loop_indices(insn, state, index)
    _check_index("ALU destination", "dst", dst, cfg.acc_depth, index)
    if insn.reset:
        state.acc[dst] = 0
        state.out[dst] = 0
        return 0
    if not insn.use_imm:
        _check_index("ALU source", "src", src, cfg.acc_depth, index)
    _check_hazard(dst, cfg.timing.acc_raw_min_distance, index, "ALU")
    if dst.size == 0:
        return 0
    acc = state.acc
    unique_dst = np.unique(dst).size == dst.size
    if insn.use_imm:
        reads_own_writes = False
    else:
        # a source entry written earlier in the same instruction makes the order observable
        first_write = np.full(cfg.acc_depth, dst.size, dtype=np.int64)
        np.minimum.at(first_write, dst, np.arange(dst.size))
        reads_own_writes = bool(np.any(first_write[src] < np.arange(dst.size)))
    if unique_dst and not reads_own_writes:
        a = acc[dst].astype(np.int64)
        b = np.int64(insn.imm) if insn.use_imm else acc[src].astype(np.int64)
        acc[dst] = _alu_apply(insn.alu_opcode, a, b)
    else:
        for k in range(dst.size):
            a = acc[dst[k]].astype(np.int64)
            b = np.int64(insn.imm) if insn.use_imm else acc[src[k]].astype(np.int64)
            acc[dst[k]] = _alu_apply(insn.alu_opcode, a, b)
    state.out[dst] = acc[dst].astype(np.int8)
    return int(dst.size)


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
    if isinstance(insn, GemmInsn):
        return _gemm(insn, index, state)
    if isinstance(insn, AluInsn):
        return _alu(insn, index, state)
    return 0
