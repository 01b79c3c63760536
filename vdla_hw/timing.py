"""Timing parameters of the VDLA hardware: the one place that defines how long things take.

The cycle-exact simulator (vdla.simulator) computes every instruction's start and end cycle
from these numbers, and the RTL (vdla_hw/rtl) is built from the same numbers, so the two
agree cycle for cycle. The model, in the RTL's terms:

* Every module (fetch, load, compute, store) is an in-order machine with its own AXI master,
  served by a memory whose read data arrives `dram_read_latency` cycles after the request
  and then streams one bus word per cycle; a write burst's response comes
  `dram_write_latency` cycles after its last data word. A LOAD or STORE requests all its
  rows' bursts back to back (AXI lets a master have several outstanding), so it pays each
  latency once, not once per row. (On a board the interconnect may add contention, and it
  accepts a bounded number of outstanding bursts, 8 commands per channel at the Zynq's HP
  ports, which holds back rows shorter than about latency / 7 beats; the accelerator itself never
  waits on another module's DMA.)
* fetch reads up to `fetch_burst_insns` instructions in one burst, then dispatches them
  one per cycle into the command queue of their module (`cmd_queue_depth` entries); a full
  queue stalls fetch. The next burst is requested the cycle after the last dispatch.
* A module can start an instruction one cycle after it was dispatched, not before its
  previous instruction ends, and only once every token it pops is visible. Tokens pushed
  by an instruction become visible `token_delay` cycles after it ends.
* How long each instruction occupies its module is `duration(insn, config)` below.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass


# Allowed range of every timing parameter: (lowest, highest, why). The ranges are what a
# build of the RTL can realise, and they bound the work one simulated instruction costs
# (acc_raw_min_distance is the span of the simulator's hazard check, for instance), so a
# config can neither describe impossible hardware nor make a legal stream crawl.
# vdla_hw/rtl_params.check_supported adds the stricter floors of this particular RTL.
LIMITS = {
    "dram_read_latency": (0, 4096, "cycles from a read request to its first data word; "
                          "a memory slower than 4096 cycles (41 us at 100 MHz) is not DRAM"),
    "dram_write_latency": (0, 4096, "cycles from a write burst's last word to its response"),
    "fetch_burst_insns": (1, 256, "instructions per fetch burst; fetch buffers a whole burst "
                          "(256 x 128-bit registers at most) and one AXI burst has <= 256 beats"),
    "cmd_queue_depth": (1, 1024, "entries of each command queue, 128-bit FIFO words: 1024 fill "
                        "4 block RAMs per queue"),
    "token_queue_depth": (1, 65535, "tokens a dependence queue holds (a 16-bit counter)"),
    "token_delay": (0, 64, "cycles a token travels (a shift register of this length)"),
    "dispatch_delay": (1, 64, "cycles from dispatch to the earliest start"),
    "dma_setup_cycles": (0, 64, "cycles a LOAD/STORE spends decoding before its first request"),
    "gemm_setup_cycles": (0, 64, "cycles GEMM spends decoding its loop fields"),
    "gemm_pipeline_depth": (0, 64, "pipeline stages of the GEMM core after issue"),
    "alu_setup_cycles": (0, 64, "cycles the ALU spends decoding its loop fields"),
    "alu_pipeline_depth": (0, 64, "pipeline stages of the tensor ALU after issue"),
    "requant_pipeline_depth": (1, 16, "stages of the requantizer on OUT's write-back path (a 33 x 18 "
                               "multiply, the rounding shift, the clip)"),
    "alu_tensor_cycles_per_uop": (1, 16, "cycles per ALU micro-op with a tensor operand"),
    "alu_imm_cycles_per_uop": (1, 16, "cycles per ALU micro-op with an immediate"),
    "nop_cycles": (1, 64, "cycles a dependence-only LOAD/STORE occupies its module"),
    "finish_cycles": (1, 64, "cycles FINISH occupies compute"),
    "acc_raw_min_distance": (0, 64, "micro-op steps between two updates of one accumulator "
                             "entry; no accumulator pipeline is deeper than 64 stages"),
}


@dataclass(frozen=True)
class Timing:
    dram_read_latency: int = 32
    dram_write_latency: int = 16
    fetch_burst_insns: int = 8
    cmd_queue_depth: int = 32
    token_queue_depth: int = 256
    token_delay: int = 1
    dispatch_delay: int = 1
    dma_setup_cycles: int = 2
    gemm_setup_cycles: int = 2
    gemm_pipeline_depth: int = 4
    alu_setup_cycles: int = 2
    alu_pipeline_depth: int = 3
    requant_pipeline_depth: int = 2
    alu_tensor_cycles_per_uop: int = 2
    alu_imm_cycles_per_uop: int = 1
    nop_cycles: int = 1
    finish_cycles: int = 1
    # Minimum distance, in the flattened micro-op order of one GEMM/ALU instruction, between
    # two read-modify-writes of the same accumulator entry (VTA's pipeline needs 2: no two
    # consecutive micro-ops may update the same entry). 0 would mean "no rule".
    acc_raw_min_distance: int = 2

    def __post_init__(self):
        # checked here rather than in from_dict so that no way of building a Timing skips it
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            lo, hi, why = LIMITS[f.name]
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"timing parameter {f.name!r} ({why}) must be an integer, got {value!r}")
            if not lo <= value <= hi:
                bound = f"at least {lo}" if value < lo else f"at most {hi}"
                raise ValueError(f"timing parameter {f.name!r} = {value} is out of range {lo}..{hi}: "
                                 f"it must be {bound} ({why})")

    @classmethod
    def from_dict(cls, values: dict) -> "Timing":
        known = {f.name for f in dataclasses.fields(cls)}
        for key in values:
            if key not in known:
                raise ValueError(
                    f"unknown timing parameter {key!r}; allowed: {', '.join(sorted(known))}")
        return cls(**values)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def dram_elem_bytes(config, memory_type) -> int:
    """Bytes of one DRAM element of a memory type (ACC_8BIT and LUT: int8 lanes of an ACC element)."""
    from .isa import MemType  # local: isa imports nothing from here, keep it that way
    return {MemType.UOP: config.uop_elem_bytes, MemType.INP: config.inp_elem_bytes,
            MemType.WGT: config.wgt_elem_bytes, MemType.ACC: config.acc_elem_bytes,
            MemType.OUT: config.out_elem_bytes,
            MemType.ACC_8BIT: config.batch * config.block, MemType.LUT: config.batch * config.block}[memory_type]


def dma_bytes(config, insn) -> int:
    """Bytes a LOAD/STORE moves over the bus, padding excluded (a micro-op load: x_size micro-ops)."""
    from .isa import MemType  # local, as in dram_elem_bytes
    if insn.memory_type == MemType.UOP:
        return insn.x_size * config.uop_elem_bytes
    return insn.x_size * insn.y_size * dram_elem_bytes(config, insn.memory_type)


def duration(insn, config) -> int:
    """Cycles an instruction occupies its module, from start to end (pops before, pushes after).

    LOAD  : dma_setup + every padding element (1 cycle each, zero written to SRAM)
            + ceil(row bytes / bus bytes) per DRAM row + the read latency, which overlaps
            the padding written before the first data row (the rows are requested from the
            first cycle after setup, their beats taken in order after each row's padding);
            LOAD UOP is one row of bus words from the one holding the first micro-op (an
            unaligned start adds one beat when the micro-ops spill into it).
    STORE : dma_setup + ceil(row bytes / bus bytes) per row + the write-response latency
            of the last burst.
    GEMM  : setup + one micro-op per cycle over the whole loop nest + pipeline drain.
    ALU   : setup + 1 (immediate) or 2 (tensor operand: two accumulator reads) cycles per
            micro-op + pipeline drain (SETQ reads a tensor operand).
    GEMM/ALU with the requant bit: also the requantizer's stages, which its last OUT write
            passes before the instruction ends.
    x_size = 0 LOAD/STORE (dependence-only NOP): nop_cycles. FINISH: finish_cycles.
    """
    from .isa import AluInsn, GemmInsn, MemInsn, MemType, Opcode
    t = config.timing
    bus = config.bus_bytes
    if isinstance(insn, MemInsn):
        if insn.x_size == 0:
            return t.nop_cycles
        row_bytes = insn.x_size * dram_elem_bytes(config, insn.memory_type)
        if insn.opcode == Opcode.STORE:
            return t.dma_setup_cycles + insn.y_size * _ceil_div(row_bytes, bus) + t.dram_write_latency
        if insn.memory_type == MemType.UOP:
            # micro-ops are 4-byte units: the burst starts at the bus word holding the first
            # one, so a load that starts mid-word reads one more beat when it spills over
            offset = insn.dram_base * config.uop_elem_bytes % bus
            return t.dma_setup_cycles + t.dram_read_latency + _ceil_div(offset + row_bytes, bus)
        row_len = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        pad_elems = (insn.y_pad_0 + insn.y_pad_1) * row_len + insn.y_size * (insn.x_pad_0 + insn.x_pad_1)
        if insn.y_size == 0:   # padding only: nothing is read
            return t.dma_setup_cycles + pad_elems
        pad_before_data = insn.y_pad_0 * row_len + insn.x_pad_0
        return (t.dma_setup_cycles + max(t.dram_read_latency, pad_before_data) + pad_elems - pad_before_data
                + insn.y_size * _ceil_div(row_bytes, bus))
    if isinstance(insn, GemmInsn):
        n = insn.iter_out * insn.iter_in * max(insn.uop_end - insn.uop_begin, 0)
        return t.gemm_setup_cycles + n + t.gemm_pipeline_depth + _requant_drain(insn, t)
    if isinstance(insn, AluInsn):
        n = insn.iter_out * insn.iter_in * max(insn.uop_end - insn.uop_begin, 0)
        per = t.alu_imm_cycles_per_uop if insn.use_imm else t.alu_tensor_cycles_per_uop
        return t.alu_setup_cycles + n * per + t.alu_pipeline_depth + _requant_drain(insn, t)
    return t.finish_cycles


def _requant_drain(insn, t: Timing) -> int:
    return t.requant_pipeline_depth if insn.requant else 0
