"""VTA compatibility of an instruction stream: every place where VTA's hardware would compute
something other than VDLA's contract (the differences are stated in vdla.hw.vta).

Two kinds of check:

- field checks, one instruction at a time, need only the stream: ALU MUL; SHR by an
  immediate outside -16..15 (and SHR by a tensor operand, whose amounts are accumulator data
  that no static check can see: flagged as unverifiable); LOAD ACC_8BIT; ALU with reset=1;
  WGT or UOP loads with padding; padded LOADs with pad_min.
- reads of SRAM never written (VTA does not zero its SRAMs between launches): every
  micro-op, INP, WGT and ACC entry read by a GEMM/ALU and every OUT entry read by a STORE
  must have been written earlier in the stream. The loop nests are followed exactly, with
  the micro-ops the stream's LOAD UOPs bring from DRAM, so this check takes the DRAM image
  (like the simulator). Also flagged: STOREs of OUT entries last written by a GEMM reset,
  which VTA fills with the truncated old accumulator plus products, not zeros.

Order. The modules run concurrently; only their queues and the dependence tokens order
them. The write check replays the stream in one order that respects both (each module in
its program order, a pop only after the matching push; among ready modules, the lowest
stream index first), so a write that a token orders before a read counts even when it comes
later in the stream. For streams whose cross-module SRAM conflicts are all ordered by
tokens (what vdla.driver.runtime.find_races proves), every legal execution sees the same
writes before each read, so the answer is exact; for a racy stream it is the answer of one
legal interleaving. Inside one GEMM/ALU, a micro-op step sees the writes of earlier steps
(for an ALU tensor operand, step by step up to _EXACT_STEPS steps; a bigger nest needs every
source entry written before it, which may flag it needlessly). The entries a loop nest
touches come from index masks, never from listing its steps, so any nest checks quickly.
A reset GEMM and an ALU with an immediate read no operand that matters (VTA reads and
discards them), so they are not flagged. The check stops at the first FINISH.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vdla.hw import (AluInsn, AluOp, DepthwiseInsn, FinishInsn, GemmInsn, MemInsn, MemType, Module, Opcode,
                     require_config)
from vdla.hw import vta
from vdla.hw.alu_ops import SHR_MAX, SHR_MIN, shift_amount
from vdla.hw.isa import INSN_BYTES
from vdla.hw.timing import dram_elem_bytes

from .errors import DeadlockError, MemoryAccessError, StreamError

_SHOWN = 4     # entry indices quoted per finding


@dataclass(frozen=True)
class VtaFinding:
    """One difference: the instruction (index in the stream), a short kind tag and what VTA
    would do differently."""
    index: int
    kind: str     # alu_mul, alu_lut, shr_range, shr_tensor, acc_8bit, lut, alu_reset, padded_load, pad_min,
    #               uninitialized_read, reset_out
    message: str

    def __str__(self) -> str:
        return f"instruction {self.index}: {self.message}"


def check_vta(insns, dram: np.ndarray | None, config) -> list[VtaFinding]:
    """All findings of `insns` (decoded instructions), in stream order. `dram` is the DRAM
    image the stream's LOAD UOPs read (uint8); None skips the never-written check, which
    needs the micro-ops."""
    config = require_config(config)
    insns = _until_finish(insns)
    found = field_findings(insns)
    if dram is not None:
        found += unwritten_reads(insns, dram, config)
    return sorted(found, key=lambda f: f.index)


def check_vta_image(dram: np.ndarray, insn_addr: int, insn_count: int, config) -> list[VtaFinding]:
    """check_vta for a stream of `insn_count` instructions at byte `insn_addr` of the image."""
    config = require_config(config)
    dram = _as_image(dram)
    end = insn_addr + INSN_BYTES * insn_count
    if insn_addr < 0 or insn_addr % INSN_BYTES or insn_count <= 0 or end > dram.size:
        raise StreamError(f"no stream of {insn_count} instructions at 0x{insn_addr:x} in a DRAM image of "
                          f"{dram.size} bytes (the address must be {INSN_BYTES}-byte aligned, the stream "
                          "inside the image)")
    return check_vta(config.isa.decode_stream(dram[insn_addr:end]), dram, config)


# ---- one instruction at a time --------------------------------------------------------------
def field_findings(insns) -> list[VtaFinding]:
    """The findings that each instruction's fields show on their own (no DRAM needed)."""
    out = []
    for i, insn in enumerate(insns):
        if isinstance(insn, (AluInsn, GemmInsn)) and insn.requant:
            kind = "GEMM" if isinstance(insn, GemmInsn) else f"ALU {insn.alu_opcode.name}"
            out.append(VtaFinding(i, "requant", f"{kind} with the requant bit: VTA has no requantizer on OUT's "
                                                "write-back and writes the accumulators' low 8 bits (requantize "
                                                "with ALU passes)"))
        if isinstance(insn, DepthwiseInsn):
            out.append(VtaFinding(i, "depthwise", "DEPTHWISE (opcode 5) is a VDLA extension: VTA's GEMM has no "
                                                  "window of inputs (a depthwise conv there is a GEMM per tap)"))
        if isinstance(insn, AluInsn):
            out += _alu_fields(i, insn)
        elif isinstance(insn, MemInsn) and insn.opcode == Opcode.LOAD:
            out += _load_fields(i, insn)
    return out


def _alu_fields(i: int, insn: AluInsn) -> list[VtaFinding]:
    out = []
    op = insn.alu_opcode
    if op not in vta.ALU_OPS:
        out.append(VtaFinding(i, f"alu_{op.name.lower()}", f"ALU {op.name}: VTA's ALU has no {op.name} opcode "
                                            f"(it has {', '.join(o.name for o in sorted(vta.ALU_OPS))}), "
                                            "so it would not compute this"))
    if op == AluOp.SHR and insn.use_imm and not vta.SHR_MIN <= insn.imm <= vta.SHR_MAX:
        out.append(VtaFinding(i, "shr_range", f"ALU SHR by immediate {insn.imm}: VTA reads the low "
                                              f"{vta.SHIFT_BITS} bits as a signed amount ({vta.SHR_MIN}.."
                                              f"{vta.SHR_MAX}) and would shift "
                                              f"{_describe_shift(_low_bits_signed(insn.imm, vta.SHIFT_BITS))}, "
                                              f"VDLA shifts {_describe_shift(int(shift_amount(insn.imm)))}"))
    if op == AluOp.SHR and not insn.use_imm:
        out.append(VtaFinding(i, "shr_tensor", "ALU SHR by a tensor operand: the amounts are accumulator data, which "
                                               "a static check cannot see; VTA honours only "
                                               f"{vta.SHR_MIN}..{vta.SHR_MAX} (VDLA {SHR_MIN}..{SHR_MAX}), so the stream is "
                                               "VTA-compatible only if every amount stays in that range"))
    if insn.reset and not vta.ALU_HONOURS_RESET:
        out.append(VtaFinding(i, "alu_reset", f"ALU {op.name} with reset=1: VTA's ALU (and VDLA's, which follows it) "
                                              f"ignores the reset bit and applies {op.name}; a stream that sets "
                                              "it expects zeroed accumulators, which neither machine gives "
                                              "(reset with a GEMM, clear the bit)"))
    return out


def _load_fields(i: int, insn: MemInsn) -> list[VtaFinding]:
    out = []
    mt = insn.memory_type
    if mt == MemType.LUT:
        out.append(VtaFinding(i, "lut", "LOAD LUT: VTA has no lookup table (nor the ALU LUT that reads it); "
                                        "compute the activation with MIN/MAX/ADD/SHR or on the CPU"))
    elif mt not in vta.MEM_TYPES:
        out.append(VtaFinding(i, "acc_8bit", f"LOAD {mt.name}: VTA has no {mt.name} memory type; load int32 "
                                             "accumulator data (LOAD ACC) or int8 data through INP and a GEMM"))
    if insn.is_nop:
        return out
    pads = (insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1)
    if any(pads) and mt in vta.MEM_TYPES and mt not in vta.PADDED_LOAD_TYPES:
        out.append(VtaFinding(i, "padded_load", f"LOAD {mt.name} with padding (y {pads[0]},{pads[1]} x "
                                                f"{pads[2]},{pads[3]}): VTA's DMA ignores the pad fields of "
                                                f"{mt.name} loads and writes the {insn.y_size * insn.x_size} "
                                                "elements contiguously from sram_base"))
    if any(pads) and insn.pad_value != vta.PAD_VALUE:
        out.append(VtaFinding(i, "pad_min", f"LOAD {mt.name} with pad_min (bit 58): VDLA pads with "
                                            f"{insn.pad_value}, VTA with {vta.PAD_VALUE} (it has no pad_min bit)"))
    return out


def _low_bits_signed(value: int, bits: int) -> int:
    half = 1 << (bits - 1)
    return ((value & ((1 << bits) - 1)) ^ half) - half


def _describe_shift(amount: int) -> str:
    return f"right by {amount}" if amount >= 0 else f"left by {-amount}"


# ---- entries read before any write --------------------------------------------------------------
_NEVER, _DEFINED, _AFTER_RESET = 0, 1, 2     # OUT entry states


class _Written:
    """Which SRAM entries the replay has written so far, and the micro-ops it has loaded."""

    def __init__(self, config):
        self.config = config
        self.inp = np.zeros(config.inp_depth, bool)
        self.wgt = np.zeros(config.wgt_depth, bool)
        self.acc = np.zeros(config.acc_depth, bool)
        self.out = np.full(config.out_depth, _NEVER, np.int8)
        self.uop = np.zeros(config.uop_depth, bool)
        self.uop_fields = np.zeros((3, config.uop_depth), np.int64)     # dst, src, wgt


def unwritten_reads(insns, dram: np.ndarray, config) -> list[VtaFinding]:
    """Reads of SRAM entries that nothing wrote before them (see the module docstring)."""
    config = require_config(config)
    dram = _as_image(dram)
    state = _Written(config)
    out: list[VtaFinding] = []
    for i in token_order(_until_finish(insns)):
        insn = insns[i]
        if isinstance(insn, MemInsn) and not insn.is_nop:
            if insn.opcode == Opcode.STORE:
                out += _store(i, insn, state)
            else:
                _load(i, insn, state, dram)
        elif isinstance(insn, (GemmInsn, AluInsn)):
            out += _compute(i, insn, state)
    return out


def token_order(insns) -> list[int]:
    """Stream indices in an order a VTA could execute them: each module's instructions in
    stream order, every pop after its push; among ready modules the lowest index first.
    Raises DeadlockError if some instruction waits for a token that is never pushed."""
    queues = {m: [i for i, insn in enumerate(insns) if insn.module() == m] for m in Module}
    head = dict.fromkeys(Module, 0)
    tokens: dict[str, int] = {}
    order = []
    while True:
        ready = []
        for m in Module:
            if head[m] < len(queues[m]):
                i = queues[m][head[m]]
                if all(tokens.get(q, 0) > 0 for q in insns[i].pops() if q):
                    ready.append(i)
        if not ready:
            break
        i = min(ready)
        insn = insns[i]
        for q in insn.pops():
            if q:
                tokens[q] -= 1
        for q in insn.pushes():
            if q:
                tokens[q] = tokens.get(q, 0) + 1
        head[insn.module()] += 1
        order.append(i)
    stuck = [{"module": m.name.lower(), "insn": queues[m][head[m]],
              "waits_for": [q for q in insns[queues[m][head[m]]].pops() if q and tokens.get(q, 0) == 0]}
             for m in Module if head[m] < len(queues[m])]
    if stuck:
        lines = "; ".join(f"{s['module']} at instruction {s['insn']} waits for {', '.join(s['waits_for'])}"
                          for s in stuck)
        raise DeadlockError(f"deadlock: {lines} (a token that no instruction pushes)", stuck)
    return order


def _load(i: int, insn: MemInsn, state: _Written, dram: np.ndarray) -> None:
    cfg = state.config
    mt = insn.memory_type
    if mt == MemType.UOP:
        first, count = insn.sram_base, insn.x_size
        _check_range(i, f"LOAD UOP: micro-op SRAM [{first}, {first + count})", first + count, cfg.uop_depth)
        eb = dram_elem_bytes(cfg, mt)
        start, end = insn.dram_base * eb, (insn.dram_base + count) * eb
        if end > dram.size:
            raise MemoryAccessError(f"LOAD UOP reads DRAM bytes up to {end} but the image holds {dram.size} "
                                    f"(field dram_base={insn.dram_base}, x_size={count})", i)
        words = dram[start:end].view("<u4")
        state.uop_fields[:, first:first + count] = np.stack(cfg.isa.decode_uop_fields(words))
        state.uop[first:first + count] = True
        return
    if mt == MemType.OUT:
        raise StreamError("LOAD cannot target the OUT buffer (memory_type 4); use STORE", i)
    sram = {MemType.INP: state.inp, MemType.WGT: state.wgt}.get(mt, state.acc)
    count = (insn.y_pad_0 + insn.y_size + insn.y_pad_1) * (insn.x_pad_0 + insn.x_size + insn.x_pad_1)
    _check_range(i, f"LOAD {mt.name}: SRAM [{insn.sram_base}, {insn.sram_base + count})",
                 insn.sram_base + count, sram.size)
    sram[insn.sram_base:insn.sram_base + count] = True


def _store(i: int, insn: MemInsn, state: _Written) -> list[VtaFinding]:
    if insn.memory_type != MemType.OUT:
        raise StreamError(f"STORE must read the OUT buffer (memory_type 4), got {insn.memory_type.name}", i)
    first, count = insn.sram_base, insn.y_size * insn.x_size
    _check_range(i, f"STORE OUT: SRAM [{first}, {first + count})", first + count, state.out.size)
    seen = state.out[first:first + count]
    out = []
    never = np.flatnonzero(seen == _NEVER) + first
    if never.size:
        out.append(_unwritten(i, "STORE", "OUT", never, "that no GEMM or ALU wrote before"))
    reset = np.flatnonzero(seen == _AFTER_RESET) + first
    if reset.size and not vta.RESET_ZEROES_OUT:
        out.append(VtaFinding(i, "reset_out", f"STORE reads OUT {_entries(reset)} last written by a GEMM reset: VTA "
                                              "writes there the int8 truncation of the old accumulator plus the "
                                              "products, not zeros (VDLA); write them with a GEMM or ALU first"))
    return out


def _compute(i: int, insn, state: _Written) -> list[VtaFinding]:
    cfg = state.config
    kind = "GEMM" if isinstance(insn, GemmInsn) else f"ALU {insn.alu_opcode.name}"
    if insn.uop_begin > insn.uop_end or insn.uop_end > cfg.uop_depth:
        raise MemoryAccessError(f"{kind}: micro-op range [{insn.uop_begin}, {insn.uop_end}) (fields uop_begin/"
                                f"uop_end) is not inside the micro-op buffer of depth {cfg.uop_depth}", i)
    out = []
    loaded = state.uop[insn.uop_begin:insn.uop_end]
    if not loaded.all():
        missing = np.flatnonzero(~loaded) + insn.uop_begin
        out.append(_unwritten(i, kind, "micro-op", missing, "that no LOAD UOP wrote before"))
    if insn.uop_begin == insn.uop_end:
        return out
    fields = state.uop_fields[:, insn.uop_begin:insn.uop_end]
    if isinstance(insn, AluInsn) and insn.alu_opcode == AluOp.SETQ:    # writes registers only
        if not insn.use_imm:
            src = _touched(i, kind, fields[1], insn, "src", "accumulator", cfg.acc_depth)
            out += _reads(i, kind, "ACC", state.acc, src, operand="source ")
        return out
    dst = _touched(i, kind, fields[0], insn, "dst", "accumulator", cfg.acc_depth)
    if isinstance(insn, GemmInsn) and insn.reset:
        state.acc[dst] = True
        state.out[dst] = _AFTER_RESET
        return out
    # the first step that touches an entry reads what was there before the instruction
    out += _reads(i, kind, "ACC", state.acc, dst)
    if isinstance(insn, GemmInsn):
        out += _reads(i, kind, "INP", state.inp, _touched(i, kind, fields[1], insn, "src", "input", cfg.inp_depth))
        out += _reads(i, kind, "WGT", state.wgt, _touched(i, kind, fields[2], insn, "wgt", "weight", cfg.wgt_depth))
    elif not insn.use_imm:
        src = _touched(i, kind, fields[1], insn, "src", "accumulator", cfg.acc_depth)
        out += _reads(i, kind, "ACC", state.acc, _sources_read_first(insn, fields, src), operand="source ")
    state.acc[dst] = True
    state.out[dst] = _DEFINED
    return out


def _touched(i, kind, base, insn, field, sram, depth) -> np.ndarray:
    """Sorted indices the loop nest reaches through `field`, without listing its steps (up to
    16383 x 16383 x 8192 of them): each loop level ORs shifted copies of the index mask."""
    fo, fi = getattr(insn, f"{field}_factor_out"), getattr(insn, f"{field}_factor_in")
    top = int(base.max()) + (insn.iter_out - 1) * fo + (insn.iter_in - 1) * fi
    if top >= depth:
        raise MemoryAccessError(f"{kind}: {sram} index {top} (micro-op field {field} {int(base.max())} + loop "
                                f"factors {fo}, {fi} over {insn.iter_out} x {insn.iter_in} iterations) exceeds the "
                                f"buffer depth {depth}", i)
    mask = np.zeros(depth, bool)
    mask[base] = True
    for count, factor in ((insn.iter_in, fi), (insn.iter_out, fo)):
        if count > 1 and factor:
            level = mask.copy()
            for k in range(1, count):      # k * factor < depth: the range check above
                level[k * factor:] |= mask[:depth - k * factor]
            mask = level
    return np.flatnonzero(mask)


_EXACT_STEPS = 1 << 22    # ALU nests up to this many steps are followed step by step


def _sources_read_first(insn: AluInsn, fields, sources: np.ndarray) -> np.ndarray:
    """Source entries some step reads before any step of this instruction writes them (a
    step reads its source, then writes its destination). Nests beyond _EXACT_STEPS steps
    count every source entry (conservative: a stream that big may be flagged needlessly)."""
    steps = insn.iter_out * insn.iter_in * fields.shape[1]
    if steps > _EXACT_STEPS:
        return sources
    dst, src = _steps(fields[0], insn, "dst"), _steps(fields[1], insn, "src")
    entries, first = np.unique(dst, return_index=True)
    first_write = np.full(int(max(dst.max(), src.max())) + 1, dst.size, np.int64)
    first_write[entries] = first
    return np.unique(src[first_write[src] >= np.arange(src.size)])


def _steps(base: np.ndarray, insn, field: str) -> np.ndarray:
    """The `field` index of every micro-op step of the loop nest, in execution order."""
    i = np.arange(insn.iter_out, dtype=np.int64)[:, None, None] * getattr(insn, f"{field}_factor_out")
    j = np.arange(insn.iter_in, dtype=np.int64)[None, :, None] * getattr(insn, f"{field}_factor_in")
    return (base[None, None, :] + i + j).ravel()


def _reads(i, kind, memory, written, entries, operand="") -> list[VtaFinding]:
    missing = entries[~written[entries]]
    if not missing.size:
        return []
    return [_unwritten(i, kind, f"{operand}{memory}", missing, "that nothing wrote before")]


def _unwritten(i, kind, memory, entries, why) -> VtaFinding:
    return VtaFinding(i, "uninitialized_read", f"{kind} reads {memory} {_entries(entries)} {why}: VTA does not "
                                               "zero its SRAMs, so it would read stale data (VDLA's simulator "
                                               "reads zeros)")


def _entries(entries: np.ndarray) -> str:
    shown = ", ".join(str(int(e)) for e in entries[:_SHOWN])
    more = f", ... ({entries.size} entries)" if entries.size > _SHOWN else ""
    return f"entr{'y' if entries.size == 1 else 'ies'} {shown}{more}"


def _check_range(i: int, what: str, end: int, depth: int) -> None:
    if end > depth:
        raise MemoryAccessError(f"{what} exceeds the buffer depth {depth}", i)


def _until_finish(insns) -> list:
    for k, insn in enumerate(insns):
        if isinstance(insn, FinishInsn):
            return list(insns[:k + 1])
    return list(insns)


def _as_image(dram) -> np.ndarray:
    dram = np.asarray(dram)
    if dram.dtype != np.uint8 or dram.ndim != 1:
        raise TypeError("dram must be a 1-D uint8 array (the DRAM image)")
    return dram
