"""The VDLA instruction set: opcodes, instruction records, bit layouts, encode and decode.

Instructions are 128-bit little-endian words (low 64-bit word first in memory); micro-ops
are 32-bit. Load/store layouts are fixed; GEMM/ALU and micro-op field widths follow the
SRAM depths of the configuration, packed from bit 0 upwards with the rule that no field
straddles bit 64 (for the default config this is VTA's layout bit for bit; SPEC §2).

The reset bit (bit 7) is shared by GEMM and ALU in the encoding but only GEMM honours it:
GEMM with reset=1 zeroes its destination accumulators; ALU ignores the bit and always
computes. This follows VTA, whose three implementations (HLS, Chisel, the functional
simulator) all ignore reset on ALU; VDLA's simulator, reference model and RTL do the same
(decision of issue 11).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import IntEnum
from functools import cached_property

import numpy as np

from .depthwise import depthwise_problem
from .errors import ArtifactError


# Instruction and micro-op word sizes; every byte count, alignment and stride of a stream
# derives from these.
INSN_BITS = 128
INSN_BYTES = INSN_BITS // 8
UOP_BITS = 32
UOP_BYTES = UOP_BITS // 8

# Width of the ALU's signed immediate (its range and meaning: vdla.hw.alu_ops).
IMM_BITS = 16


class InsnDecodeError(ArtifactError):
    """Bytes that are not an instruction of this ISA instance. `insn_index` names the
    instruction in the stream (None when decoding a single word); `reason` is the message
    without the index, for callers that report the index their own way."""

    def __init__(self, reason: str, insn_index: int | None = None):
        super().__init__(reason if insn_index is None else f"instruction {insn_index}: {reason}")
        self.reason = reason
        self.insn_index = insn_index


class Opcode(IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4
    DEPTHWISE = 5   # a GEMM whose micro-ops slide a window along a row: a VDLA extension


class MemType(IntEnum):
    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4
    ACC_8BIT = 5
    LUT = 6     # the ALU's lookup table (vdla.hw.alu_ops): a VDLA extension


class AluOp(IntEnum):
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4
    LUT = 5     # x -> the lookup table's entry for x saturated to int8: a VDLA extension
    SETQ = 6    # the requantizer's register d <- ACC[s]: a VDLA extension (vdla.hw.alu_ops)
    FLUSH = 7   # OUT[d] <- ACC[d] + operand (written back), ACC[d] <- 0: a VDLA extension


class Module(IntEnum):
    """The three executing modules, in pipeline order (fetch only routes)."""
    LOAD = 0
    COMPUTE = 1
    STORE = 2


# The four token queues and, per module, which queue each dependence flag refers to
# (SPEC §4). A flag that maps to None must be 0 on that module.
TOKEN_QUEUES = ("l2c", "c2l", "c2s", "s2c")
DEP_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")
FLAG_QUEUE = {
    Module.LOAD: {"pop_prev": None, "pop_next": "c2l", "push_prev": None, "push_next": "l2c"},
    Module.COMPUTE: {"pop_prev": "l2c", "pop_next": "s2c", "push_prev": "c2l", "push_next": "c2s"},
    Module.STORE: {"pop_prev": "c2s", "pop_next": None, "push_prev": "s2c", "push_next": None},
}


@dataclass
class Insn:
    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False

    def module(self) -> Module:
        raise NotImplementedError

    def pops(self) -> list[str]:
        table = FLAG_QUEUE[self.module()]
        return [table[f] for f in ("pop_prev", "pop_next") if getattr(self, f)]

    def pushes(self) -> list[str]:
        table = FLAG_QUEUE[self.module()]
        return [table[f] for f in ("push_prev", "push_next") if getattr(self, f)]

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


@dataclass
class MemInsn(Insn):
    """LOAD or STORE: a 2-D strided DMA between DRAM and one SRAM."""
    opcode: Opcode = Opcode.LOAD
    memory_type: MemType = MemType.INP
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 1
    x_size: int = 0
    x_stride: int = 0
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0
    # LOAD padding value: False = zeros (VTA's only choice), True = the most negative value of
    # the element's lanes (int8 -128, int32 -2^31) -- the zero point of a tensor quantized
    # with zero point -128, and the identity of max pooling. A vdla extension in bit 58,
    # which VTA's encoding leaves zero.
    pad_min: bool = False

    def module(self) -> Module:
        if self.opcode == Opcode.STORE:
            return Module.STORE
        if self.memory_type in (MemType.INP, MemType.WGT):
            return Module.LOAD
        return Module.COMPUTE

    @property
    def is_nop(self) -> bool:
        return self.x_size == 0

    @property
    def pad_value(self) -> int:
        """What a LOAD writes into its padding, per lane: 0, or with pad_min the most negative
        value of the element's lanes (int32 for ACC, int8 for every other type)."""
        if not self.pad_min:
            return 0
        return -(1 << 31) if self.memory_type == MemType.ACC else -(1 << 7)   # LUT: int8 entries


@dataclass
class UopLoopInsn(Insn):
    """GEMM or ALU: a two-level loop over a range of micro-ops, each iteration offsetting the
    micro-ops' indices by the loop factors. `reset` is honoured by GEMM only; an ALU
    instruction always computes (VTA's semantics; see the module docstring)."""
    reset: bool = False
    uop_begin: int = 0
    uop_end: int = 1
    iter_out: int = 1
    iter_in: int = 1
    # OUT write-back through the requantizer (vdla.hw.requantizer) instead of the low bits: a
    # VDLA extension in the bit after iter_in (bit 63 for the default config, which VTA's
    # encoding leaves zero)
    requant: bool = False
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0

    def module(self) -> Module:
        return Module.COMPUTE


@dataclass
class GemmInsn(UopLoopInsn):
    wgt_factor_out: int = 0
    wgt_factor_in: int = 0
    opcode = Opcode.GEMM


@dataclass
class DepthwiseInsn(GemmInsn):
    """DEPTHWISE: GEMM's fields and loop nest, but each micro-op multiplies lane by lane a
    window of the row's last inputs by the taps in its weight tile (vdla.hw.depthwise). A
    GemmInsn to every rule that does not look at the arithmetic: routing, timing, tokens."""
    opcode = Opcode.DEPTHWISE


@dataclass
class AluInsn(UopLoopInsn):
    alu_opcode: AluOp = AluOp.ADD
    use_imm: bool = False
    imm: int = 0
    opcode = Opcode.ALU


@dataclass
class FinishInsn(Insn):
    opcode = Opcode.FINISH

    def module(self) -> Module:
        return Module.COMPUTE


@dataclass(frozen=True)
class Uop:
    dst: int
    src: int = 0
    wgt: int = 0


@dataclass(frozen=True)
class Field:
    name: str
    lsb: int
    width: int
    signed: bool = False

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def range(self) -> tuple[int, int]:
        if self.signed:
            return -(1 << (self.width - 1)), (1 << (self.width - 1)) - 1
        return 0, self.mask


def _pack(fields: list[tuple[str, int] | tuple[str, int, bool]], total: int, what: str) -> tuple[Field, ...]:
    """Lay fields out LSB-first; a field that would straddle bit 64 starts at bit 64."""
    out, pos = [], 0
    for spec in fields:
        name, width = spec[0], spec[1]
        signed = spec[2] if len(spec) > 2 else False
        if pos < 64 < pos + width:
            pos = 64
        out.append(Field(name, pos, width, signed))
        pos += width
    if pos > total:
        raise ValueError(f"{what} fields need {pos} bits but the format has {total}; "
                         "reduce the SRAM sizes in the config")
    return tuple(out)


_HEADER = [("opcode", 3), ("pop_prev", 1), ("pop_next", 1), ("push_prev", 1), ("push_next", 1)]


def _log2(n: int) -> int:
    return n.bit_length() - 1


_BOOL_FIELDS = DEP_FLAGS + ("reset", "use_imm", "requant")


def _enum_field(enum, name: str, fields: dict, opcode: Opcode):
    try:
        return enum(fields[name])
    except ValueError:
        raise InsnDecodeError(f"unknown {name} {fields[name]} in {Opcode(opcode).name} instruction "
                          f"(valid: {', '.join(f'{v.name} {int(v)}' for v in enum)})") from None


def _record(opcode: Opcode, cls: type, fields: dict) -> Insn:
    """The instruction record of one word's raw field values (`fields` is consumed); one
    statement of the decoding for `Isa.decode` and `Isa.decode_stream`."""
    fields.pop("opcode")
    for name in _BOOL_FIELDS:
        if name in fields:
            fields[name] = bool(fields[name])
    if cls is MemInsn:
        fields["opcode"] = Opcode(opcode)
        fields["memory_type"] = _enum_field(MemType, "memory_type", fields, opcode)
    elif cls is AluInsn:
        fields["alu_opcode"] = _enum_field(AluOp, "alu_opcode", fields, opcode)
    return cls(**fields)


class Isa:
    """Layouts, encoder and decoder for one configuration (use `config.isa`)."""

    def __init__(self, config):
        self.config = config
        log_uop, log_inp = _log2(config.uop_depth), _log2(config.inp_depth)
        log_wgt, log_acc = _log2(config.wgt_depth), _log2(config.acc_depth)
        if min(log_uop, log_inp, log_wgt, log_acc) < 1:
            raise ValueError(f"config {config.name}: every SRAM must hold at least 2 elements")
        if max(config.inp_depth, config.wgt_depth, config.acc_depth, config.uop_depth) > 1 << 16:
            raise ValueError(f"config {config.name}: SRAM depths above 65536 elements do not fit "
                             "the 16-bit sram_base field")
        self.mem = _pack(_HEADER + [
            ("memory_type", 3), ("sram_base", 16), ("dram_base", 32), ("pad_min", 1),
            ("y_size", 16), ("x_size", 16), ("x_stride", 16),
            ("y_pad_0", 4), ("y_pad_1", 4), ("x_pad_0", 4), ("x_pad_1", 4)], INSN_BITS, "LOAD/STORE")
        loop = [("reset", 1), ("uop_begin", log_uop), ("uop_end", log_uop + 1),
                ("iter_out", 14), ("iter_in", 14), ("requant", 1),
                ("dst_factor_out", log_acc), ("dst_factor_in", log_acc)]
        self.gemm = _pack(_HEADER + loop + [
            ("src_factor_out", log_inp), ("src_factor_in", log_inp),
            ("wgt_factor_out", log_wgt), ("wgt_factor_in", log_wgt)], INSN_BITS, "GEMM")
        self.alu = _pack(_HEADER + loop + [
            ("src_factor_out", log_acc), ("src_factor_in", log_acc),
            ("alu_opcode", 3), ("use_imm", 1), ("imm", IMM_BITS, True)], INSN_BITS, "ALU")
        self.finish = _pack(_HEADER, INSN_BITS, "FINISH")
        self.uop = _pack([("dst", log_acc), ("src", max(log_acc, log_inp)), ("wgt", log_wgt)],
                         UOP_BITS, "micro-op")
        self._by_opcode = {Opcode.LOAD: (self.mem, MemInsn), Opcode.STORE: (self.mem, MemInsn),
                           Opcode.GEMM: (self.gemm, GemmInsn), Opcode.ALU: (self.alu, AluInsn),
                           Opcode.FINISH: (self.finish, FinishInsn)}
        if depthwise_problem(config) is None:
            self._by_opcode[Opcode.DEPTHWISE] = (self.gemm, DepthwiseInsn)

    @cached_property
    def max_pad(self) -> int:
        """The most padding elements a LOAD adds on one side (the pad fields' range)."""
        return next(f for f in self.mem if f.name == "y_pad_0").mask

    # ---- instructions -------------------------------------------------------------------
    def layout(self, insn: Insn) -> tuple[Field, ...]:
        return self._by_opcode[Opcode(insn.opcode)][0]

    def encode(self, insn: Insn) -> int:
        """The 128-bit value of one instruction; raises if a field does not fit."""
        word = 0
        kind = Opcode(insn.opcode).name
        if Opcode(insn.opcode) not in self._by_opcode:
            raise ValueError(depthwise_problem(self.config))
        for f in self.layout(insn):
            value = int(getattr(insn, f.name))
            lo, hi = f.range()
            if not lo <= value <= hi:
                raise ValueError(f"{kind} field {f.name!r} = {value} does not fit in {f.width} "
                                 f"bits ({lo}..{hi}) for config {self.config.name}")
            word |= (value & f.mask) << f.lsb
        return word

    def decode(self, word: int | bytes) -> Insn:
        if isinstance(word, (bytes, bytearray, memoryview, np.ndarray)):
            word = int.from_bytes(bytes(word), "little")
        try:
            opcode = Opcode(word & 0x7)
        except ValueError:
            raise InsnDecodeError(f"unknown opcode {word & 0x7} in instruction 0x{word:032x}") from None
        if opcode not in self._by_opcode:
            raise InsnDecodeError(f"{depthwise_problem(self.config)} (instruction 0x{word:032x})")
        layout, cls = self._by_opcode[opcode]
        values = {}
        for f in layout:
            v = (word >> f.lsb) & f.mask
            if f.signed and v >> (f.width - 1):
                v -= 1 << f.width
            values[f.name] = v
        try:
            return _record(opcode, cls, values)
        except InsnDecodeError as exc:
            raise InsnDecodeError(f"{exc.reason}: 0x{word:032x}") from None

    def encode_stream(self, insns: list[Insn]) -> np.ndarray:
        """Instructions as the bytes fetch reads from DRAM (uint8, INSN_BYTES per instruction)."""
        out = bytearray()
        for i, insn in enumerate(insns):
            try:
                out += self.encode(insn).to_bytes(INSN_BYTES, "little")
            except ValueError as exc:
                raise ValueError(f"instruction {i}: {exc}") from None
        return np.frombuffer(bytes(out), dtype=np.uint8).copy()

    def decode_stream(self, data) -> list[Insn]:
        """Decode a whole stream; fields are extracted with numpy, one column per field."""
        raw = np.frombuffer(bytes(data), dtype=np.uint8) if isinstance(data, (bytes, bytearray)) \
            else np.ascontiguousarray(data, dtype=np.uint8)
        if raw.size % INSN_BYTES:
            raise InsnDecodeError(f"an instruction stream is a multiple of {INSN_BYTES} bytes, got {raw.size}",
                              raw.size // INSN_BYTES)
        words = raw.view("<u8").reshape(-1, INSN_BYTES // 8)
        lo, hi = words[:, 0], words[:, 1]
        opcodes = (lo & 7).astype(np.int64)
        bad = np.flatnonzero(~np.isin(opcodes, [int(o) for o in self._by_opcode]))
        if bad.size:
            i = int(bad[0])
            if int(opcodes[i]) in set(Opcode):
                raise InsnDecodeError(depthwise_problem(self.config), i)
            raise InsnDecodeError(f"unknown opcode {int(opcodes[i])} (bits [2:0]; valid: "
                              f"{', '.join(f'{o.name} {int(o)}' for o in Opcode)})", i)
        out: list = [None] * len(opcodes)
        for opcode, (layout, cls) in self._by_opcode.items():
            rows = np.flatnonzero(opcodes == opcode)
            if not rows.size:
                continue
            columns = {}
            for f in layout:
                src, shift = (hi, f.lsb - 64) if f.lsb >= 64 else (lo, f.lsb)
                col = ((src[rows] >> np.uint64(shift)) & np.uint64(f.mask)).astype(np.int64)
                if f.signed:
                    col = np.where(col >> (f.width - 1), col - (1 << f.width), col)
                columns[f.name] = col.tolist()
            names = list(columns)
            for k, values in enumerate(zip(*columns.values())):
                i = int(rows[k])
                try:
                    out[i] = _record(opcode, cls, dict(zip(names, values)))
                except InsnDecodeError as exc:
                    raise InsnDecodeError(exc.reason, i) from None
        return out

    # ---- micro-ops ----------------------------------------------------------------------
    def encode_uop(self, uop: Uop) -> int:
        word = 0
        for f in self.uop:
            value = int(getattr(uop, f.name))
            if not 0 <= value <= f.mask:
                raise ValueError(f"micro-op field {f.name!r} = {value} does not fit in {f.width} "
                                 f"bits (0..{f.mask}) for config {self.config.name}")
            word |= value << f.lsb
        return word

    def decode_uop(self, word: int) -> Uop:
        return Uop(*((int(word) >> f.lsb) & f.mask for f in self.uop))

    def encode_uops(self, uops) -> np.ndarray:
        """The words of many micro-ops at once (what encode_uop gives each, and its error for
        the first that does not fit)."""
        fields = np.array([[getattr(u, f.name) for f in self.uop] for u in uops], dtype=np.int64)
        fields = fields.reshape(-1, len(self.uop))
        masks = np.array([f.mask for f in self.uop], dtype=np.int64)
        bad = np.flatnonzero(((fields < 0) | (fields > masks)).any(axis=1))
        if bad.size:
            self.encode_uop(uops[int(bad[0])])          # raises, naming the field
        shifts = np.array([f.lsb for f in self.uop], dtype=np.int64)
        return (fields << shifts).sum(axis=1).astype(np.uint32)

    def decode_uop_fields(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Vectorised decode: (dst, src, wgt) index arrays from an array of uop words."""
        w = np.asarray(words, dtype=np.uint32).astype(np.int64)
        return tuple((w >> f.lsb) & f.mask for f in self.uop)
