"""Hand-written programs for the directed RTL benches, with numpy expectations.

Each builder returns (Case, expected) where `expected` maps a DRAM byte range to the bytes
numpy says must be there after the run; the simulator is the oracle for cycles.
"""
from __future__ import annotations

import numpy as np

from vdla.hw.alu_ops import IMM_MAX, SHR_MAX, SHR_MIN, TABLE_ENTRIES, lane_op
from vdla.hw.isa import INSN_BYTES, AluInsn, AluOp, DepthwiseInsn, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop
from vdla.hw.requantizer import (BIAS, CTRL, MUL, MUL_BITS, MUL_MAX, MUL_MIN, ctrl_field, multiplier, pack_ctrl,
                                 requantize)

from .harness import Case


class Image:
    """A DRAM image under construction: data placed at aligned addresses, then the stream."""

    def __init__(self, config, size: int = 1 << 20):
        self.config = config
        self.dram = np.zeros(size, dtype=np.uint8)
        self.top = 0x1000

    def place(self, data: np.ndarray, align: int = 64) -> int:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        addr = -(-self.top // align) * align
        self.dram[addr:addr + raw.size] = raw
        self.top = addr + raw.size
        return addr

    def reserve(self, nbytes: int, align: int = 64) -> int:
        return self.place(np.zeros(nbytes, dtype=np.uint8), align)

    def case(self, name: str, insns: list) -> Case:
        addr = self.place(self.config.isa.encode_stream(insns), INSN_BYTES)
        return Case(name, self.dram, addr, len(insns), insns, self.config.out_elem_bytes)


def low_bytes(values: np.ndarray) -> np.ndarray:
    """OUT = low 8 bits of each int32 lane (SPEC §3: truncation)."""
    return (np.asarray(values, dtype=np.int64) & 0xFF).astype(np.uint8)


def _load(mt, sram, dram_base, y, x, stride, pads=(0, 0, 0, 0), **flags):
    return MemInsn(opcode=Opcode.LOAD, memory_type=mt, sram_base=sram, dram_base=dram_base, y_size=y,
                   x_size=x, x_stride=stride, y_pad_0=pads[0], y_pad_1=pads[1], x_pad_0=pads[2],
                   x_pad_1=pads[3], **flags)


def _store(sram, dram_base, y, x, stride, **flags):
    return MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=sram, dram_base=dram_base,
                   y_size=y, x_size=x, x_stride=stride, **flags)


def _uops(img: Image, uops: list[Uop], align: int = 4) -> int:
    return img.place(img.config.isa.encode_uops(uops), align) // 4


def _pad(block: np.ndarray, pads, value=0) -> np.ndarray:
    """numpy's view of a padded 2-D DMA: (rows, cols, lanes) with borders of `value`."""
    y0, y1, x0, x1 = pads
    return np.pad(block, ((y0, y1), (x0, x1)) + ((0, 0),) * (block.ndim - 2), constant_values=value)


def padded_loads_min(config, rng):
    """The same loads padding with the lanes' most negative value (LOAD pad_min): -128 in
    INP and ACC_8BIT, -2^31 in ACC (made visible in OUT by an arithmetic shift right by 24)."""
    return padded_loads(config, rng, pad_min=True)


PADDED_X = 4   # data elements per row of padded_loads' loads


def padded_loads_past_latency(config, rng):
    """The same loads with more padding before their first data row (four rows and three
    elements) than the DRAM read latency lasts: the rows' beats, requested after setup, wait
    in the memory until the padding is written (timing.duration's max(latency, padding))."""
    pads = (4, 1, 3, 2)
    before_data = pads[0] * (pads[2] + PADDED_X + pads[3]) + pads[2]
    assert before_data > config.timing.dram_read_latency
    return padded_loads(config, rng, pads=pads)


def padded_loads(config, rng, pad_min=False, pads=(2, 1, 3, 2)):
    """INP (through an identity GEMM), ACC and ACC_8BIT loads with all four paddings."""
    n = config.batch * config.block
    img = Image(config)
    y, x, stride = 3, PADDED_X, 5
    rows, cols = y + pads[0] + pads[1], x + pads[2] + pads[3]
    count = rows * cols
    inp = rng.integers(-128, 128, (y, stride, n), dtype=np.int8)
    acc = rng.integers(-2**31, 2**31, (y, stride, n), dtype=np.int64).astype(np.int32)
    acc8 = rng.integers(-128, 128, (y, stride, n), dtype=np.int8)
    eye = np.eye(config.block, dtype=np.int8)
    a_inp = img.place(inp, config.inp_elem_bytes)
    a_acc = img.place(acc, config.acc_elem_bytes)
    a_acc8 = img.place(acc8, n)
    a_wgt = img.place(eye, config.wgt_elem_bytes)
    # micro-op 0 walks ACC/INP from 0 (GEMM), micro-op 1 walks ACC from `count` (ALU copy)
    u_base = _uops(img, [Uop(0, 0, 0), Uop(count, 0, 0)])
    out = img.reserve(3 * count * config.out_elem_bytes, config.out_elem_bytes)
    ob = out // config.out_elem_bytes
    loop = dict(iter_out=count, iter_in=1, dst_factor_out=1, src_factor_out=1)
    flag = dict(pad_min=True) if pad_min else {}
    shift = [AluInsn(alu_opcode=AluOp.SHR, use_imm=True, imm=24, uop_begin=1, uop_end=2, iter_out=count,
                     iter_in=1, dst_factor_out=1)] if pad_min else []
    insns = [
        _load(MemType.INP, 0, a_inp // config.inp_elem_bytes, y, x, stride, pads, **flag),
        _load(MemType.WGT, 0, a_wgt // config.wgt_elem_bytes, 1, 1, 1, push_next=True),
        _load(MemType.UOP, 0, u_base, 1, 2, 2),
        _load(MemType.ACC, count, a_acc // config.acc_elem_bytes, y, x, stride, pads, **flag),
        _load(MemType.ACC_8BIT, 2 * count, a_acc8 // n, y, x, stride, pads, **flag),
        GemmInsn(reset=True, uop_begin=0, uop_end=1, **loop),
        GemmInsn(pop_prev=True, uop_begin=0, uop_end=1, **loop),
        *shift,
        # OUT = low byte of ACC for the two accumulator regions (ADD 0 writes OUT)
        AluInsn(alu_opcode=AluOp.ADD, use_imm=True, imm=0, uop_begin=1, uop_end=2,
                iter_out=2 * count, iter_in=1, dst_factor_out=1, push_next=True),
        _store(0, ob, 1, 3 * count, 3 * count, pop_prev=True, push_prev=True),
        FinishInsn(pop_next=True),
    ]
    low8, low32 = (-128, -(1 << 31)) if pad_min else (0, 0)
    acc_region = _pad(acc[:, :x].astype(np.int64), pads, low32)
    expected = np.concatenate([
        _pad(inp[:, :x], pads, low8).view(np.uint8).reshape(-1),
        low_bytes(acc_region >> 24 if pad_min else acc_region).reshape(-1),
        _pad(acc8[:, :x], pads, low8).view(np.uint8).reshape(-1)])
    name = ("padded INP/ACC/ACC_8BIT loads" + (" (pad_min)" if pad_min else "")
            + (f" {pads}" if pads != (2, 1, 3, 2) else ""))
    return img.case(name, insns), {out: expected}


def gemm_with_bias(config, rng, m=4, k=3, n=3, extremes=False):
    """C = bias + A @ B over a two-level loop nest (reduction innermost-but-one)."""
    blk, b = config.block, config.batch
    img = Image(config)
    if extremes:   # the corners of int8 products (the GEMM packs two products per multiplier)
        pick = np.array([-128, -127, -1, 0, 1, 126, 127], dtype=np.int8)
        a = rng.choice(pick, (m, k, b, blk))
        w = rng.choice(pick, (n, k, blk, blk))
        a[0], w[0] = -128, -128
    else:
        a = rng.integers(-128, 128, (m, k, b, blk), dtype=np.int8)        # INP elements m*k + kk
        w = rng.integers(-128, 128, (n, k, blk, blk), dtype=np.int8)      # WGT elements n*k + kk, [out][in]
    bias = rng.integers(-2**20, 2**20, (m, n, b, blk), dtype=np.int64).astype(np.int32)
    a_inp = img.place(a, config.inp_elem_bytes)
    a_wgt = img.place(w, config.wgt_elem_bytes)
    a_bias = img.place(bias, config.acc_elem_bytes)
    # micro-op n walks the accumulators for the ALU pass that exposes bits 8..15
    uops = _uops(img, [Uop(nn, 0, nn * k) for nn in range(n)] + [Uop(0, 0, 0)])
    out = img.reserve(m * n * config.out_elem_bytes, config.out_elem_bytes)
    shift = 8 if extremes else 0
    insns = [
        _load(MemType.INP, 0, a_inp // config.inp_elem_bytes, 1, m * k, m * k),
        _load(MemType.WGT, 0, a_wgt // config.wgt_elem_bytes, 1, n * k, n * k, push_next=True),
        _load(MemType.UOP, 0, uops, 1, n + 1, n + 1),
        _load(MemType.ACC, 0, a_bias // config.acc_elem_bytes, 1, m * n, m * n),
        GemmInsn(pop_prev=True, uop_begin=0, uop_end=n, iter_out=m, iter_in=k, dst_factor_out=n,
                 dst_factor_in=0, src_factor_out=k, src_factor_in=1, wgt_factor_out=0, wgt_factor_in=1),
        AluInsn(alu_opcode=AluOp.SHR, use_imm=True, imm=shift, uop_begin=n, uop_end=n + 1,
                iter_out=m * n, iter_in=1, dst_factor_out=1, push_next=True),
        _store(0, out // config.out_elem_bytes, 1, m * n, m * n, pop_prev=True, push_prev=True),
        FinishInsn(pop_next=True),
    ]
    acc = bias.astype(np.int64) + np.einsum("mkbi,nkoi->mnbo", a.astype(np.int64), w.astype(np.int64))
    name = "GEMM with bias, two loop levels" + (", extreme operands, bits 8..15" if extremes else "")
    return img.case(name, insns), {out: low_bytes(acc >> shift).reshape(-1)}


def gemm_extreme_operands(config, rng):
    return gemm_with_bias(config, rng, extremes=True)


ALU_CASES = [(AluOp.MIN, None), (AluOp.MAX, None), (AluOp.ADD, None), (AluOp.SHR, None), (AluOp.MUL, None),
             (AluOp.MIN, -5), (AluOp.MAX, 7), (AluOp.ADD, -1234), (AluOp.SHR, 3), (AluOp.SHR, 24),
             (AluOp.SHR, -4), (AluOp.SHR, SHR_MIN), (AluOp.SHR, SHR_MAX), (AluOp.MUL, -3), (AluOp.MUL, IMM_MAX),
             (AluOp.FLUSH, None), (AluOp.FLUSH, -77)]     # OUT: the sum's low bytes (flush checks the ACC)


def alu_ops(config, rng, count: int = 6):
    """Every ALU opcode with a tensor and with immediate operands (SHR both directions,
    shift by 31 and by -32), applied to fresh copies of one accumulator block. Every other
    instruction sets the reset bit, which ALU ignores (VTA's rule): numpy's expectation is
    the computed value all the same."""
    img = Image(config)
    lanes = (config.batch, config.block)
    a = rng.integers(-2**31, 2**31, (count, *lanes), dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, (count, *lanes), dtype=np.int64).astype(np.int32)
    a[0] = 2**31 - 1  # extremes: overflow on ADD/MUL, sign on SHR
    a[1] = -2**31
    a_a = img.place(a, config.acc_elem_bytes)
    a_b = img.place(b, config.acc_elem_bytes)
    regions = len(ALU_CASES)
    # micro-op r: destination region r, source = the b block at the end
    b_base = regions * count
    uops = _uops(img, [Uop(r * count, b_base, 0) for r in range(regions)])
    out = img.reserve(regions * count * config.out_elem_bytes, config.out_elem_bytes)
    eb = config.acc_elem_bytes
    insns = [_load(MemType.UOP, 0, uops, 1, regions, regions),
             _load(MemType.ACC, b_base, a_b // eb, 1, count, count)]
    insns += [_load(MemType.ACC, r * count, a_a // eb, 1, count, count) for r in range(regions)]
    expected = []
    for r, (op, imm) in enumerate(ALU_CASES):
        insns.append(AluInsn(alu_opcode=op, use_imm=imm is not None, imm=imm or 0, uop_begin=r, uop_end=r + 1,
                             iter_out=count, iter_in=1, dst_factor_out=1, src_factor_out=1, reset=r % 2 == 1))
        expected.append(low_bytes(lane_op(op, a, b if imm is None else imm)))
    insns[-1] = insns[-1].replace(push_next=True)
    insns += [_store(0, out // config.out_elem_bytes, 1, regions * count, regions * count,
                     pop_prev=True, push_prev=True),
              FinishInsn(pop_next=True)]
    return img.case("every ALU opcode, tensor and immediate", insns), {out: np.concatenate(expected).reshape(-1)}


def long_rows(config, rng):
    """Rows longer than one AXI burst (WGT load, STORE) and a micro-op load that starts
    mid-bus-word and spills into one more beat."""
    img = Image(config)
    blk, b = config.block, config.batch
    wgt_beats = config.wgt_elem_bytes // config.bus_bytes
    kw = 256 // wgt_beats + 2                        # weight elements in one row: > 256 beats
    m = 300 // (config.out_elem_bytes // config.bus_bytes) + 1   # OUT elements in one row: > 256 beats
    a = rng.integers(-128, 128, (1, b, blk), dtype=np.int8)
    w = rng.integers(-128, 128, (kw, blk, blk), dtype=np.int8)
    a_inp = img.place(a, config.inp_elem_bytes)
    a_wgt = img.place(w, config.wgt_elem_bytes)
    # micro-op words at an odd 4-byte address: the load starts mid bus word
    upb = config.bus_bytes // 4
    base = img.reserve(4 * (kw + upb + 1), config.bus_bytes) // 4 + (1 if upb > 1 else 0)
    uops = config.isa.encode_uops([Uop(j, 0, j) for j in range(kw)])
    img.dram[base * 4:base * 4 + uops.nbytes] = uops.view(np.uint8)
    out = img.reserve(m * config.out_elem_bytes, config.out_elem_bytes)
    insns = [
        _load(MemType.INP, 0, a_inp // config.inp_elem_bytes, 1, 1, 1),
        _load(MemType.WGT, 0, a_wgt // config.wgt_elem_bytes, 1, kw, kw, push_next=True),
        _load(MemType.UOP, 3, base, 1, kw, kw),
        GemmInsn(reset=True, uop_begin=0, uop_end=1, iter_out=m, iter_in=1, dst_factor_out=1),
        GemmInsn(pop_prev=True, uop_begin=3, uop_end=3 + kw, push_next=True),
        _store(0, out // config.out_elem_bytes, 1, m, m, pop_prev=True, push_prev=True),
        FinishInsn(pop_next=True),
    ]
    acc = np.zeros((m, b, blk), dtype=np.int64)
    acc[:kw] = np.einsum("bi,joi->jbo", a[0].astype(np.int64), w.astype(np.int64))
    return img.case("multi-burst rows and an unaligned micro-op load", insns), {out: low_bytes(acc).reshape(-1)}


def full_command_queue(config, rng):
    """Compute blocks on a token from a long load while fetch keeps dispatching compute
    instructions: its command queue fills and fetch stalls (cycles only)."""
    img = Image(config)
    rows = 12
    data = rng.integers(-128, 128, (rows, 8, config.batch, config.block), dtype=np.int8)
    a_inp = img.place(data, config.inp_elem_bytes)
    nops = config.timing.cmd_queue_depth + 9
    insns = [_load(MemType.INP, 0, a_inp // config.inp_elem_bytes, rows, 8, 8, push_next=True),
             _load(MemType.UOP, 0, 0, 1, 0, 0, pop_prev=True)]
    insns += [_load(MemType.UOP, 0, 0, 1, 0, 0) for _ in range(nops)]
    insns += [_load(MemType.INP, 0, a_inp // config.inp_elem_bytes, 1, 2, 2, push_next=True),
              FinishInsn(pop_prev=True)]
    return img.case("full command queue", insns), {}


def page_crossing(config, rng):
    """Input rows, output rows and the instruction stream straddle 4 KiB boundaries, which
    AXI4 bursts may not cross: the DMA and fetch split them (the memory model fails any
    burst that crosses) without changing the timing."""
    img = Image(config, size=1 << 16)
    n = 8
    inp = rng.integers(-128, 128, (n, config.batch, config.block), dtype=np.int8)
    eye = np.eye(config.block, dtype=np.int8)
    img.top = 0x2000 - 4 * config.inp_elem_bytes
    a_inp = img.place(inp, config.inp_elem_bytes)
    a_wgt = img.place(eye, config.wgt_elem_bytes)
    u = _uops(img, [Uop(0, 0, 0)])
    img.top = 0x3000 - 3 * config.out_elem_bytes
    out = img.reserve(n * config.out_elem_bytes, config.out_elem_bytes)
    loop = dict(uop_begin=0, uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1, src_factor_out=1)
    insns = [
        _load(MemType.INP, 0, a_inp // config.inp_elem_bytes, 1, n, n),
        _load(MemType.WGT, 0, a_wgt // config.wgt_elem_bytes, 1, 1, 1, push_next=True),
        _load(MemType.UOP, 0, u, 1, 1, 1),
        GemmInsn(reset=True, **loop),
        GemmInsn(pop_prev=True, push_next=True, **loop),
        _store(0, out // config.out_elem_bytes, 1, n, n, pop_prev=True, push_prev=True),
        FinishInsn(pop_next=True),
    ]
    img.top = 0x4000 - 3 * 16      # the first fetch burst crosses into the next page
    return img.case("4 KiB page crossings", insns), {out: inp.view(np.uint8).reshape(-1)}


def lookup_table(config, rng):
    """The ALU's lookup table (vdla.hw.alu_ops): two LOAD LUT with strided rows and all four
    paddings, one padding with zeros, one with pad_min (-128), fill the table; ALU LUT then
    looks up every int8 code and values that saturate (+-2^31 included) with an immediate
    and with a tensor operand (read and ignored), and once more on its own results (negative
    entries index the table sign-extended)."""
    n = config.batch * config.block
    depth = config.lut_depth
    if depth < 16:
        raise ValueError(f"the lookup-table program needs at least 16 table elements, {config.name} has {depth}")
    img = Image(config)
    # LOAD 1 (zeros): 2 rows of x data elements between x pads, filling elements 0 .. depth/2 - 1;
    # LOAD 2 (pad_min): a pad row, then a pad element and x2 data elements, filling the rest
    x1, pads1 = depth // 4 - 2, (0, 0, 1, 1)
    x2, pads2 = depth // 4 - 1, (1, 0, 1, 0)
    data1 = rng.integers(-128, 128, (2, x1 + 3, n), dtype=np.int8)     # stride x1 + 3
    data2 = rng.integers(-128, 128, (1, x2, n), dtype=np.int8)
    table = np.concatenate([_pad(data1[:, :x1], pads1, 0).reshape(-1, n),
                            _pad(data2, pads2, -128).reshape(-1, n)]).reshape(-1).astype(np.int64)
    assert table.size == 256 == depth * n
    # accumulator values: every int8 code once, then values beyond int8 on both sides
    codes = rng.permutation(256) - 128
    beyond = np.concatenate([[2**31 - 1, -2**31, 128, -129, 1000, -1000],
                             rng.integers(-2**31, 2**31, 2 * n - 6)])
    beyond = np.where(rng.random(beyond.size) < 0.5, beyond, -beyond)   # sign mixed (-(-2^31) wraps back)
    values = np.concatenate([codes, beyond]).astype(np.int64).astype(np.int32).reshape(-1, config.batch,
                                                                                      config.block)
    count = values.shape[0]
    other = rng.integers(-2**31, 2**31, (count, config.batch, config.block), dtype=np.int64).astype(np.int32)
    a_lut1, a_lut2 = img.place(data1, n), img.place(data2, n)
    a_val, a_other = img.place(values, config.acc_elem_bytes), img.place(other, config.acc_elem_bytes)
    # region r at r * count: r = 0 immediate, 1 tensor, 2 immediate then tensor; the operand at 3 * count
    uops = _uops(img, [Uop(r * count, 3 * count, 0) for r in range(3)])
    out = img.reserve(3 * count * config.out_elem_bytes, config.out_elem_bytes)
    eb = config.acc_elem_bytes
    loop = dict(iter_out=count, iter_in=1, dst_factor_out=1, src_factor_out=1)

    def lut(region, use_imm, **flags):
        return AluInsn(alu_opcode=AluOp.LUT, use_imm=use_imm, imm=-77 if use_imm else 0, uop_begin=region,
                       uop_end=region + 1, **loop, **flags)
    insns = [_load(MemType.LUT, 0, a_lut1 // n, 2, x1, x1 + 3, pads1),
             _load(MemType.LUT, depth // 2, a_lut2 // n, 1, x2, x2, pads2, pad_min=True),
             _load(MemType.UOP, 0, uops, 1, 3, 3),
             _load(MemType.ACC, 3 * count, a_other // eb, 1, count, count)]
    insns += [_load(MemType.ACC, r * count, a_val // eb, 1, count, count) for r in range(3)]
    insns += [lut(0, True), lut(1, False), lut(2, True), lut(2, False, push_next=True),
              _store(0, out // config.out_elem_bytes, 1, 3 * count, 3 * count, pop_prev=True, push_prev=True),
              FinishInsn(pop_next=True)]

    def looked_up(x):   # numpy's reading of SPEC: x saturated to int8 indexes the table
        return table[np.clip(x, -128, 127) + 128]
    once = looked_up(values.astype(np.int64))
    expected = np.concatenate([low_bytes(once), low_bytes(once), low_bytes(looked_up(once))])
    return img.case("lookup table: padded LOAD LUT, ALU LUT immediate and tensor", insns), {out: expected.reshape(-1)}


# Per-lane requantizer settings of the directed program, cycled over the lanes: (shift, zero
# point, lo, hi, MUL word, BIAS). Shifts 0 (no rounding), 1 and 3 (ties either way), up to 63;
# the multiplier's extremes and MUL words whose bits above the multiplier are set (ignored);
# biases that carry x + b past 32 bits; clips narrow, full, and with lo > hi (the result is hi).
def _mul_word(high: int, low: int) -> int:
    """A MUL word of `low` (a MUL_BITS-bit signed multiplier) under junk bits `high`, as int32."""
    word = (high << MUL_BITS) | (low & ((1 << MUL_BITS) - 1))
    return int(np.array(word & 0xFFFFFFFF, dtype=np.uint32).view(np.int32))


REQUANT_LANES = [
    (0, 0, -128, 127, 1, 0),
    (1, 0, -128, 127, 1, 0),
    (1, -7, -100, 90, -1, 3),
    (3, 5, -128, 127, 3, -17),
    (8, 10, -128, 127, -7, -1000),
    (16, 0, -128, 127, MUL_MAX, 2**31 - 1),
    (20, -128, -128, 127, MUL_MIN, -2**31),
    (31, 3, -128, 127, MUL_MIN, 0),
    (12, 127, 0, 127, 4096, 0),
    (48, 0, -128, 127, MUL_MIN, -2**31),
    (49, -1, -128, 127, MUL_MAX, 2**31 - 1),
    (63, 4, -128, 127, MUL_MAX, 2**31 - 1),
    (0, 0, 20, -20, 1, 0),
    (2, 0, -5, 5, 1, 0),
    (5, 0, -128, 127, _mul_word(0x1555, 3), 0),
    (50, 0, -128, 127, _mul_word(0x2AAA, MUL_MIN), 2**31 - 1),
]


def requantizer(config, rng, rows: int = 8):
    """The requantizer on OUT's write-back (vdla.hw.requantizer). SETQ loads BIAS and MUL from
    accumulator rows (one setting per lane) and CTRL twice in one instruction (a decoy row,
    then the real one: the later step wins); a GEMM, a reset GEMM, an ALU ADD with an immediate
    and an ALU MIN with a tensor operand then write OUT through it. An ALU without the bit
    writes the low bytes again; SETQ with immediates (and the requant bit, which only lengthens
    it) sets BIAS and MUL in every lane for a last ALU pass. The accumulators include +-2^31 and
    small odd values, so that rounding ties of both signs, both clip bounds, the 33-bit x + b
    and the large shifts are met (checked below); numpy (vdla.hw.requantizer.requantize,
    vdla.hw.alu_ops.lane_op) gives the expected bytes."""
    n, lanes = config.batch * config.block, (config.batch, config.block)
    img = Image(config)
    table = np.array([REQUANT_LANES[k % len(REQUANT_LANES)] for k in range(n)], dtype=np.int64)
    shift, zero, lo, hi, mul, bias = table.T
    ctrl = pack_ctrl(shift, zero, lo, hi).reshape(lanes)
    decoy = pack_ctrl((shift + 7) % 64, -zero // 2, lo // 2, hi // 2).reshape(lanes)
    bias1, mul1 = bias.astype(np.int32).reshape(lanes), mul.astype(np.int32).reshape(lanes)

    def acc_values(k):
        """k accumulator rows: the int32 extremes, small values of both signs, then random ones."""
        v = rng.integers(-2**31, 2**31, (k, *lanes), dtype=np.int64)
        v[0], v[1] = 2**31 - 1, -2**31
        v[2] = rng.integers(-9, 10, lanes)
        v[3] = rng.integers(-2**12, 2**12, lanes)
        v[4] = -v[2] - 1
        return v.astype(np.int32)
    # ACC rows: P parameters (bias, mul, decoy ctrl, ctrl), G GEMM, Z reset GEMM, A ADD, T MIN
    # and O its operand, A2 the last pass
    P, G = 0, 4
    Z = G + rows
    A = Z + 1
    T, O = A + rows, A + 2 * rows
    A2 = O + rows
    total = A2 + rows
    params = np.stack([bias1, mul1, decoy, ctrl])
    init = acc_values(rows)
    init[5:] = rng.integers(-2**20, 2**20, (rows - 5, *lanes))        # GEMM sums that carry into OUT
    a, t, o, a2 = acc_values(rows), acc_values(rows), acc_values(rows), acc_values(rows)
    z = rng.integers(-2**31, 2**31, (1, *lanes), dtype=np.int64).astype(np.int32)
    acc = np.concatenate([params, init, z, a, t, o, a2])
    inp = rng.integers(-128, 128, (rows, *lanes), dtype=np.int8)
    inp[0] = 127
    inp[1] = -128
    wgt = rng.integers(-128, 128, (1, config.block, config.block), dtype=np.int8)
    a_inp, a_wgt = img.place(inp, config.inp_elem_bytes), img.place(wgt, config.wgt_elem_bytes)
    a_acc = img.place(acc, config.acc_elem_bytes)
    uops = _uops(img, [Uop(BIAS, P, 0), Uop(MUL, P + 1, 0), Uop(CTRL, P + 2, 0), Uop(G, 0, 0), Uop(Z, 0, 0),
                       Uop(A, 0, 0), Uop(T, O, 0), Uop(O, 0, 0), Uop(MUL, 0, 0), Uop(BIAS, 0, 0), Uop(A2, 0, 0)])
    stored = total - G
    out = img.reserve(stored * config.out_elem_bytes, config.out_elem_bytes)
    rows_loop = dict(iter_out=rows, iter_in=1, dst_factor_out=1)
    setq = dict(alu_opcode=AluOp.SETQ)
    add_imm = -1234
    bias2, mul2 = 12345, -3
    insns = [
        _load(MemType.INP, 0, a_inp // config.inp_elem_bytes, 1, rows, rows),
        _load(MemType.WGT, 0, a_wgt // config.wgt_elem_bytes, 1, 1, 1, push_next=True),
        _load(MemType.UOP, 0, uops, 1, 11, 11),
        _load(MemType.ACC, 0, a_acc // config.acc_elem_bytes, 1, total, total),
        AluInsn(**setq, uop_begin=0, uop_end=2),                                  # BIAS, MUL <- rows P, P + 1
        AluInsn(**setq, uop_begin=2, uop_end=3, iter_out=2, src_factor_out=1),  # CTRL <- row P + 2, then P + 3
        GemmInsn(pop_prev=True, requant=True, uop_begin=3, uop_end=4, src_factor_out=1, **rows_loop),
        GemmInsn(reset=True, requant=True, uop_begin=4, uop_end=5),
        AluInsn(alu_opcode=AluOp.ADD, use_imm=True, imm=add_imm, requant=True, uop_begin=5, uop_end=6, **rows_loop),
        AluInsn(alu_opcode=AluOp.MIN, requant=True, uop_begin=6, uop_end=7, src_factor_out=1, **rows_loop),
        AluInsn(alu_opcode=AluOp.ADD, use_imm=True, imm=0, uop_begin=7, uop_end=8, **rows_loop),   # low bytes
        AluInsn(**setq, use_imm=True, imm=mul2, requant=True, uop_begin=8, uop_end=9),
        AluInsn(**setq, use_imm=True, imm=bias2, uop_begin=9, uop_end=10),
        AluInsn(alu_opcode=AluOp.ADD, use_imm=True, imm=0, requant=True, uop_begin=10, uop_end=11, push_next=True,
                **rows_loop),
        _store(G, out // config.out_elem_bytes, 1, stored, stored, pop_prev=True, push_prev=True),
        FinishInsn(pop_next=True),
    ]
    gemm = lane_op(AluOp.ADD, init, np.einsum("rbi,oi->rbo", inp.astype(np.int64), wgt[0].astype(np.int64)))
    inputs = [gemm, np.zeros((1, *lanes), dtype=np.int32), lane_op(AluOp.ADD, a, add_imm), lane_op(AluOp.MIN, t, o)]
    expected = [requantize(x, bias1, mul1, ctrl).view(np.uint8) for x in inputs]
    expected += [low_bytes(o), requantize(a2, bias2, mul2, ctrl).view(np.uint8)]

    # the program meets what it is for: ties of both signs, both clip bounds, x + b beyond int32
    xs = np.concatenate(inputs).astype(np.int64)
    s = ctrl_field(ctrl, "shift")
    scaled = (xs + bias1) * multiplier(mul1)
    tie = (s > 0) & (scaled & ((1 << s) - 1) == np.left_shift(1, np.maximum(s - 1, 0)))
    assert (tie & (scaled > 0)).any() and (tie & (scaled < 0)).any(), "no rounding tie of each sign"
    got = requantize(xs, bias1, mul1, ctrl).astype(np.int64)
    unclipped = ((scaled + np.where(s > 0, np.left_shift(1, np.maximum(s - 1, 0)), 0)) >> s) + ctrl_field(ctrl, "zero")
    assert ((got == ctrl_field(ctrl, "lo")) & (unclipped < got)).any(), "nothing clipped at lo"
    assert ((got == ctrl_field(ctrl, "hi")) & (unclipped > got)).any(), "nothing clipped at hi"
    assert (np.abs(xs + bias1) >= 2**31).any(), "x + b never leaves int32"
    assert ((s >= 48) & (got != ctrl_field(ctrl, "zero")) & (got == unclipped)).any(), "large shifts round to 0"
    return (img.case("requantizer: SETQ from ACC and immediates, GEMM and ALU with requant", insns),
            {out: np.concatenate(expected).reshape(-1)})


def flush(config, rng, rows: int = 6):
    """ALU FLUSH (vdla.hw.alu_ops): OUT gets ACC[d] + the operand, ACC[d] is left 0. Region X:
    with a tensor operand, low bytes; region Z: flushed by an immediate, then a GEMM
    accumulates into it, so OUT shows the bare product only if the flush zeroed ACC; region R:
    with the requant bit, through registers SETQ loaded, whose CTRL sets the table bit on every
    other lane (those lanes write the lookup table's entry for their code); region K: one instruction run twice
    whose later steps read entries earlier steps flushed (as destination, and as the tensor
    operand two steps later), which must read 0. numpy gives the expected bytes."""
    lanes = (config.batch, config.block)
    img = Image(config)

    def values(k, lo=-2**31, hi=2**31):
        return rng.integers(lo, hi, (k, *lanes), dtype=np.int64).astype(np.int32)
    n = config.batch * config.block
    ctrl = pack_ctrl(np.arange(n) % 20 + 4, np.arange(n) % 7 - 3, np.full(n, -100), np.full(n, 110),
                     np.arange(n) % 2).reshape(lanes)
    table = rng.integers(-128, 128, TABLE_ENTRIES).astype(np.int8)
    bias, mul = values(1, -2**20, 2**20)[0], values(1, -2**16, 2**16)[0]
    # ACC rows: P params (bias, mul, ctrl); stored: X, Z, R, K (3 rows); operands: XO, RO, KO
    P, X = 0, 3
    Z, R, K = X + rows, X + 2 * rows, X + 3 * rows
    XO = K + 3
    RO, KO = XO + rows, XO + 2 * rows
    x, z, r, k, xo, ro, ko = values(rows), values(rows), values(rows), values(3), values(rows), values(rows), values(1)
    acc = np.concatenate([np.stack([bias, mul, ctrl]), x, z, r, k, xo, ro, ko])
    inp = rng.integers(-128, 128, (rows, *lanes), dtype=np.int8)
    wgt = rng.integers(-128, 128, (1, config.block, config.block), dtype=np.int8)
    a_inp, a_wgt = img.place(inp, config.inp_elem_bytes), img.place(wgt, config.wgt_elem_bytes)
    a_acc = img.place(acc, config.acc_elem_bytes)
    lut_eb = config.batch * config.block
    a_lut = img.place(table, lut_eb)
    uops = _uops(img, [Uop(BIAS, P, 0), Uop(X, XO, 0), Uop(Z, 0, 0), Uop(R, RO, 0),
                       Uop(K + 1, KO, 0), Uop(K + 2, KO, 0), Uop(K, K + 1, 0)])
    stored = XO - X
    out = img.reserve(stored * config.out_elem_bytes, config.out_elem_bytes)
    rows_loop = dict(iter_out=rows, iter_in=1, dst_factor_out=1, src_factor_out=1)
    fl = dict(alu_opcode=AluOp.FLUSH)
    insns = [
        _load(MemType.INP, 0, a_inp // config.inp_elem_bytes, 1, rows, rows),
        _load(MemType.WGT, 0, a_wgt // config.wgt_elem_bytes, 1, 1, 1, push_next=True),
        _load(MemType.UOP, 0, uops, 1, 7, 7),
        _load(MemType.ACC, 0, a_acc // config.acc_elem_bytes, 1, XO + 2 * rows + 1, XO + 2 * rows + 1),
        _load(MemType.LUT, 0, a_lut // lut_eb, 1, config.lut_depth, config.lut_depth),
        AluInsn(alu_opcode=AluOp.SETQ, uop_begin=0, uop_end=1, iter_out=3, dst_factor_out=1, src_factor_out=1),
        AluInsn(**fl, uop_begin=1, uop_end=2, **rows_loop),
        AluInsn(**fl, use_imm=True, imm=999, uop_begin=2, uop_end=3, iter_out=rows, dst_factor_out=1),
        GemmInsn(pop_prev=True, uop_begin=2, uop_end=3, iter_out=rows, dst_factor_out=1, src_factor_out=1),
        AluInsn(**fl, requant=True, uop_begin=3, uop_end=4, **rows_loop),
        # pass 1: K+1 <- k1 + ko, K+2 <- k2 + ko (both left 0), K <- k0 + ACC[K+1] = k0 + 0;
        # pass 2 reads 0 for every destination and for the operand K+1
        AluInsn(**fl, uop_begin=4, uop_end=7, iter_out=2, push_next=True),
        _store(X, out // config.out_elem_bytes, 1, stored, stored, pop_prev=True, push_prev=True),
        FinishInsn(pop_next=True),
    ]
    product = np.einsum("rbi,oi->rbo", inp.astype(np.int64), wgt[0].astype(np.int64))
    expected = [low_bytes(lane_op(AluOp.ADD, x, xo)), low_bytes(lane_op(AluOp.ADD, 0, product)),
                requantize(lane_op(AluOp.ADD, r, ro), bias, mul, ctrl, table).view(np.uint8),
                low_bytes(np.concatenate([np.zeros_like(ko), ko, ko]))]
    plain = requantize(lane_op(AluOp.ADD, r, ro), bias, mul, ctrl & ~(1 << 6))
    assert (plain.reshape(rows, -1)[:, 1::2] != requantize(lane_op(AluOp.ADD, r, ro), bias, mul, ctrl, table)
            .reshape(rows, -1)[:, 1::2]).mean() > 0.9, "the table lanes must show the table"
    return (img.case("ALU FLUSH: write back, leave zero, later steps read the zeros", insns),
            {out: np.concatenate([e.reshape(-1) for e in expected])})


def depthwise(config, rng, h: int = 3, w: int = 5):
    """DEPTHWISE (vdla.hw.depthwise): a 3x3 depthwise conv of a full-range int8 image, padded
    by the DMA, as rows of a sliding window (kernel rows on the outer loop, image rows on the
    inner) into four accumulator regions holding random int32 starts: A stores the sums' low
    bytes, B, C, D the bytes above after ALU SHR by 8, 16 and 24, so all 32 bits are checked.
    Every row's two priming micro-ops point into region S, which must keep what ALU ADD 0
    wrote to its OUT beforehand. Weight lanes past the taps hold noise. numpy gives the bytes."""
    from vdla.hw.depthwise import TAPS
    lanes = (config.batch, config.block)
    img = Image(config)
    n = h * w
    regions = 5                                   # A, B, C, D, then S
    image = rng.integers(-128, 128, (h, w, *lanes), dtype=np.int8)
    taps = rng.integers(-128, 128, (config.block, 3, 3), dtype=np.int8)
    tiles = rng.integers(-128, 128, (3, config.block, config.block), dtype=np.int8)
    tiles[:, :, :TAPS] = taps.transpose(1, 0, 2)
    start = rng.integers(-2**31, 2**31, (regions * n, *lanes), dtype=np.int64).astype(np.int32)
    a_inp, a_wgt = img.place(image, config.inp_elem_bytes), img.place(tiles, config.wgt_elem_bytes)
    a_acc = img.place(start, config.acc_elem_bytes)
    S = 4 * n
    row = [Uop(S + u if u < TAPS - 1 else r * n + u - (TAPS - 1), u, 0)
           for r in range(4) for u in range(w + TAPS - 1)]
    starts = [Uop(S), Uop(n), Uop(2 * n), Uop(3 * n)]     # ALU passes over S, B, C, D
    uops = _uops(img, row + starts)
    per, k = w + TAPS - 1, len(row)
    out = img.reserve(regions * n * config.out_elem_bytes, config.out_elem_bytes)
    insns = [
        _load(MemType.INP, 0, a_inp // config.inp_elem_bytes, h, w, w, pads=(1, 1, 1, 1)),
        _load(MemType.WGT, 0, a_wgt // config.wgt_elem_bytes, 1, 3, 3, push_next=True),
        _load(MemType.UOP, 0, uops, 1, len(row) + len(starts), len(row) + len(starts)),
        _load(MemType.ACC, 0, a_acc // config.acc_elem_bytes, 1, regions * n, regions * n),
        AluInsn(alu_opcode=AluOp.ADD, use_imm=True, imm=0, uop_begin=k, uop_end=k + 1, iter_out=n, dst_factor_out=1),
    ]
    for r in range(4):
        insns.append(DepthwiseInsn(pop_prev=r == 0, uop_begin=r * per, uop_end=(r + 1) * per, iter_out=3, iter_in=h,
                                   src_factor_out=w + 2, src_factor_in=w + 2, dst_factor_in=w, wgt_factor_out=1))
    for r, shift in ((1, 8), (2, 16), (3, 24)):
        insns.append(AluInsn(alu_opcode=AluOp.SHR, use_imm=True, imm=shift, uop_begin=k + r, uop_end=k + r + 1,
                             iter_out=n, dst_factor_out=1, push_next=r == 3))
    insns += [_store(0, out // config.out_elem_bytes, 1, regions * n, regions * n, pop_prev=True, push_prev=True),
              FinishInsn(pop_next=True)]
    padded = np.pad(image.astype(np.int64), ((1, 1), (1, 1), (0, 0), (0, 0)))
    conv = np.zeros((h, w, *lanes), dtype=np.int64)
    for ky in range(3):
        for kx in range(3):
            conv += padded[ky:ky + h, kx:kx + w] * taps[:, ky, kx].astype(np.int64)
    acc = lane_op(AluOp.ADD, start[:4 * n].reshape(4, n, *lanes), conv.reshape(1, n, *lanes))
    expected = [low_bytes(acc[0])] + [low_bytes(lane_op(AluOp.SHR, acc[r], s)) for r, s in ((1, 8), (2, 16), (3, 24))]
    expected.append(low_bytes(start[S:S + n]))
    return (img.case("DEPTHWISE: a 3x3 depthwise conv by sliding windows, priming writes nothing", insns),
            {out: np.concatenate([e.reshape(-1) for e in expected])})
