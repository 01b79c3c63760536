"""The SystemVerilog package of the RTL, generated from a HwConfig (never written by hand).

`package_text(config)` returns `vdla_pkg.sv`, the one place the RTL learns a fact about the
hardware; the modules in vdla_hw/rtl read it and state none themselves (a config change
reaches the RTL through this package alone; tests/hw_unit/test_rtl_facts.py checks the
sources for restatements). It holds:

* sizes: element lanes and bytes, SRAM depths, bus geometry, instruction and micro-op width,
  the ALU lookup table's entry width and depth in LOAD LUT elements;
* the requantizer on OUT's write-back (vdla.hw.requantizer): its registers' indices, the
  multiplier's width and CTRL's fields;
* the timing parameters (vdla.hw.timing);
* the ISA (vdla.hw.isa): opcodes, memory types and ALU opcodes as enums, every field's
  position and width as localparams, and each instruction format as a packed struct
  (`insn_t` is the union of the formats, `uop_t` the micro-op), generated from the field
  tables so the structs are the encoding bit for bit;
* the register block (vdla.hw.regmap): offsets, CONTROL bits, ERROR_CAUSE bits and width,
  performance-counter indices, the ID register;
* the AXI port bundles as packed structs plus macros that declare and connect a bundle's
  flat ports (the top keeps flat, conventionally named ports for cocotb and Vivado).

`check_supported(config)` names the configurations this RTL cannot build and why.
"""
from __future__ import annotations

import os
from enum import IntEnum

from . import regmap, requantizer
from .alu_ops import SHIFT_BITS, TABLE_BITS, TABLE_ENTRIES
from .depthwise import TAPS as DEPTHWISE_TAPS
from .depthwise import depthwise_problem
from .isa import INSN_BITS, UOP_BITS, AluOp, MemType, Opcode
from .timing import dram_elem_bytes

PACKAGE_NAME = "vdla_pkg"
PACKAGE_FILE = "vdla_pkg.sv"

# AXI4 as the accelerator's masters use it.
AXI_ADDR_BITS = 32          # byte addresses (the Zynq's HP/ACP ports)
AXI_LEN_BITS = 8            # AxLEN = beats - 1
AXI_MAX_BEATS = 256         # the longest INCR burst
AXI_BOUNDARY_BYTES = 4096   # no burst may cross a 4 KiB boundary
AXI_RESP_BITS = 2
AXI_RESP_OKAY = 0
AXI_RESP_SLVERR = 2
AXI_SIZE_BITS = 3
AXI_BURST_BITS = 2
AXI_BURST_INCR = 1

# Port bundles: (signal, width, driven by the master, read by the RTL), in port order. A
# signal the RTL never reads is declared as a port but left out of the bundle's structs.
AXI_READ = (("arvalid", "1", True, True), ("arready", "1", False, True),
            ("araddr", "AXI_ADDR_BITS", True, True), ("arlen", "AXI_LEN_BITS", True, True),
            ("rvalid", "1", False, True), ("rdata", "BUS_BITS", False, True),
            ("rresp", "AXI_RESP_BITS", False, True),
            ("rlast", "1", False, False),   # bursts are counted in beats
            ("rready", "1", True, True))
AXI_WRITE = (("awvalid", "1", True, True), ("awready", "1", False, True),
             ("awaddr", "AXI_ADDR_BITS", True, True), ("awlen", "AXI_LEN_BITS", True, True),
             ("wvalid", "1", True, True), ("wready", "1", False, True),
             ("wdata", "BUS_BITS", True, True), ("wstrb", "BUS_BYTES", True, True),
             ("wlast", "1", True, True), ("bvalid", "1", False, True),
             ("bresp", "AXI_RESP_BITS", False, True), ("bready", "1", True, True))
AXI_LITE = (("awvalid", "1", True, True), ("awready", "1", False, True),
            ("awaddr", "REG_ADDR_BITS", True, True),
            ("wvalid", "1", True, True), ("wready", "1", False, True),
            ("wdata", "REG_BITS", True, True),
            ("wstrb", "REG_BYTES", True, False),   # registers take whole words
            ("bvalid", "1", False, True), ("bready", "1", True, True),
            ("bresp", "AXI_RESP_BITS", False, True),
            ("arvalid", "1", True, True), ("arready", "1", False, True),
            ("araddr", "REG_ADDR_BITS", True, True),
            ("rvalid", "1", False, True), ("rready", "1", True, True),
            ("rdata", "REG_BITS", False, True), ("rresp", "AXI_RESP_BITS", False, True))
# bundle -> (struct and macro stem, the role vdla_top plays on it)
BUNDLES = {"AXI_RD": (AXI_READ, "master"), "AXI_WR": (AXI_WRITE, "master"), "AXIL": (AXI_LITE, "slave")}

# A full AXI4 master port has signals vdla_top leaves implicit: one transaction ID (it issues
# in order and takes responses in order), every burst full-width INCR (vdla_top's common
# m_axi_size / m_axi_burst ports) and cache / protection / lock / QoS attributes, which are
# the board port's business, not the accelerator's. Only the board wrapper
# (vdla.hw.board_wrapper) declares them, for Vivado's interface inference; the package and the
# RTL never see them. Their widths, beside the package's AXI_SIZE_BITS / AXI_BURST_BITS:
BOARD_AXI_WIDTHS = {"AXI_ID_BITS": 1, "AXI_CACHE_BITS": 4, "AXI_PROT_BITS": 3, "AXI_LOCK_BITS": 1,
                    "AXI_QOS_BITS": 4}
# the address channel's attributes, named after the channel prefix (ar / aw)
AXI_ADDR_ATTRS = (("id", "AXI_ID_BITS"), ("size", "AXI_SIZE_BITS"), ("burst", "AXI_BURST_BITS"),
                  ("cache", "AXI_CACHE_BITS"), ("prot", "AXI_PROT_BITS"), ("lock", "AXI_LOCK_BITS"),
                  ("qos", "AXI_QOS_BITS"))
# each AXI4 master bundle's address channel prefix and its response channel's ID
AXI_CHANNELS = {"AXI_RD": ("ar", "rid"), "AXI_WR": ("aw", "bid")}
# bundle -> its board-only signals, (signal, width, driven by the master) as in the bundles
# (the AXI4-Lite slave has none)
BOARD_ONLY = {stem: (*((f"{addr}{attr}", width, True) for attr, width in AXI_ADDR_ATTRS),
                     (response_id, "AXI_ID_BITS", False))
              for stem, (addr, response_id) in AXI_CHANNELS.items()}

# The enums of the ISA and the instruction field each one is the type of.
ENUMS = ((Opcode, "opcode_e", "OP", "opcode"), (MemType, "mem_type_e", "MEM", "memory_type"),
         (AluOp, "alu_op_e", "ALU", "alu_opcode"))


def _log2(n: int) -> int:
    return n.bit_length() - 1


def check_supported(config) -> None:
    """Raise ValueError naming the first parameter this RTL implementation cannot realise."""
    t = config.timing
    bus = config.bus_bytes
    insn_bytes = INSN_BITS // 8
    problems = []
    for what, nbytes in (("INP element", config.inp_elem_bytes), ("OUT element", config.out_elem_bytes),
                         ("ACC_8BIT element", dram_elem_bytes(config, MemType.ACC_8BIT)),
                         ("LUT element", dram_elem_bytes(config, MemType.LUT))):
        if nbytes % bus:
            problems.append(f"{what} ({nbytes} B) is not a multiple of the bus width ({bus} B): "
                            "the DMA moves whole bus words per element")
    lanes = config.batch * config.block
    if dram_elem_bytes(config, MemType.LUT) * 8 != lanes * TABLE_BITS or config.lut_depth * lanes != TABLE_ENTRIES:
        problems.append(f"a LOAD LUT element must hold one {TABLE_BITS}-bit table entry per lane and the "
                        f"{TABLE_ENTRIES}-entry table whole elements ({lanes} lanes)")
    if bus > insn_bytes:
        problems.append(f"bus width {config.bus_width_bits} bits exceeds one instruction ({INSN_BITS} bits); "
                        "fetch assumes whole beats per instruction")
    if t.dispatch_delay != 1:
        problems.append("dispatch_delay must be 1 (the command queue is a plain registered FIFO)")
    if t.dma_setup_cycles < 2:
        problems.append("dma_setup_cycles must be >= 2 (decode + first OUT read of a store)")
    if t.gemm_setup_cycles < 2 or t.alu_setup_cycles < 2:
        problems.append("gemm/alu setup cycles must be >= 2 (accept + decode of the loop fields)")
    if t.gemm_pipeline_depth < 4:
        problems.append("gemm_pipeline_depth must be >= 4 (uop read, operand read, multiply, accumulate)")
    if t.alu_pipeline_depth < 2:
        problems.append("alu_pipeline_depth must be >= 2 (the last write lands 2 cycles after the issue phase)")
    if t.alu_tensor_cycles_per_uop < 2:
        problems.append("alu_tensor_cycles_per_uop must be >= 2 (two reads of the one accumulator read port)")
    if t.acc_raw_min_distance < 2:
        problems.append("acc_raw_min_distance must be >= 2: the accumulator pipelines do not forward")
    if t.dram_read_latency < 1 or t.dram_write_latency < 1:
        problems.append("DRAM latencies must be >= 1 cycle")
    if -(-t.fetch_burst_insns * insn_bytes // bus) > AXI_MAX_BEATS:
        problems.append(f"a fetch burst must fit one AXI burst ({AXI_MAX_BEATS} beats)")
    clip = {name: width for name, _, width, _ in requantizer.CTRL_FIELDS if name not in ("shift", "table")}
    if any(width != config.out_bits for width in clip.values()):
        problems.append(f"the requantizer's zero point and clip bounds ({clip}) must be OUT lanes "
                        f"({config.out_bits} bits): its result is one")
    if problems:
        raise ValueError(f"the RTL does not support config {config.name} ({config.target}): "
                         + "; ".join(problems))


# ---- scalars ------------------------------------------------------------------------------
def _sizes(config) -> dict[str, int]:
    bus = config.bus_bytes
    acc8_bytes = dram_elem_bytes(config, MemType.ACC_8BIT)
    lanes = config.batch * config.block
    elem = {"INP": config.inp_elem_bytes, "WGT": config.wgt_elem_bytes, "ACC": config.acc_elem_bytes,
            "OUT": config.out_elem_bytes, "ACC8": acc8_bytes, "LUT": dram_elem_bytes(config, MemType.LUT)}
    p = {"BATCH": config.batch, "BLOCK": config.block,
         # bits of one lane of each element (ACC8: the int8 lanes an ACC_8BIT load reads)
         "INP_BITS": config.inp_bits, "WGT_BITS": config.wgt_bits, "ACC_BITS": config.acc_bits,
         "OUT_BITS": config.out_bits, "ACC8_BITS": acc8_bytes * 8 // lanes,
         # the ALU's lookup table: TABLE_BITS-bit entries indexed by TABLE_BITS-bit codes,
         # LUT_DEPTH LOAD LUT elements (LUT_BEATS bus words each)
         "TABLE_BITS": TABLE_BITS, "LUT_DEPTH": config.lut_depth,
         "LUT_ADDR_BITS": max(1, _log2(config.lut_depth)),   # a one-element table still has an address
         "INP_ELEM_BITS": config.inp_elem_bytes * 8, "WGT_ELEM_BITS": config.wgt_elem_bytes * 8,
         "ACC_ELEM_BITS": config.acc_elem_bytes * 8, "OUT_ELEM_BITS": config.out_elem_bytes * 8,
         "INSN_WIDTH": INSN_BITS, "LOG_INSN_BYTES": _log2(INSN_BITS // 8),
         "UOP_WIDTH": UOP_BITS, "LOG_UOP_BYTES": _log2(config.uop_elem_bytes),
         "UOP_DEPTH": config.uop_depth, "INP_DEPTH": config.inp_depth,
         "WGT_DEPTH": config.wgt_depth, "ACC_DEPTH": config.acc_depth, "OUT_DEPTH": config.out_depth,
         "LOG_UOP_DEPTH": _log2(config.uop_depth), "LOG_INP_DEPTH": _log2(config.inp_depth),
         "LOG_WGT_DEPTH": _log2(config.wgt_depth), "LOG_ACC_DEPTH": _log2(config.acc_depth),
         "BUS_BITS": config.bus_width_bits, "BUS_BYTES": bus, "LOG_BUS_BYTES": _log2(bus)}
    for name, nbytes in elem.items():
        p[f"{name}_BEATS"] = nbytes // bus
    for name, nbytes in elem.items():
        p[f"LOG_{name}_BEATS"] = _log2(nbytes // bus)
    for name, nbytes in elem.items():
        p[f"LOG_{name}_ELEM_BYTES"] = _log2(nbytes)
    uops_per_beat = bus // config.uop_elem_bytes
    p.update({"UOPS_PER_BEAT": uops_per_beat, "LOG_UOPS_PER_BEAT": _log2(uops_per_beat),
              "LOG_UOP_ROWS": _log2(config.uop_depth) - _log2(uops_per_beat),
              "INSN_BEATS": INSN_BITS // 8 // bus, "LOG_INSN_BEATS": _log2(INSN_BITS // 8 // bus),
              "ALU_SHIFT_BITS": SHIFT_BITS,
              # DEPTHWISE (vdla.hw.depthwise): its window's taps, and whether the config has it
              "DEPTHWISE_TAPS": DEPTHWISE_TAPS, "DEPTHWISE_OK": int(depthwise_problem(config) is None)})
    return p


def _timing(config) -> dict[str, int]:
    t = config.timing
    return {"DRAM_READ_LATENCY": t.dram_read_latency, "DRAM_WRITE_LATENCY": t.dram_write_latency,
            "FETCH_BURST_INSNS": t.fetch_burst_insns, "CMD_QUEUE_DEPTH": t.cmd_queue_depth,
            "TOKEN_QUEUE_DEPTH": t.token_queue_depth, "TOKEN_DELAY": t.token_delay,
            "DMA_SETUP_CYCLES": t.dma_setup_cycles, "GEMM_SETUP_CYCLES": t.gemm_setup_cycles,
            "GEMM_PIPELINE_DEPTH": t.gemm_pipeline_depth, "ALU_SETUP_CYCLES": t.alu_setup_cycles,
            "ALU_PIPELINE_DEPTH": t.alu_pipeline_depth, "ALU_TENSOR_CYCLES_PER_UOP": t.alu_tensor_cycles_per_uop,
            "ALU_IMM_CYCLES_PER_UOP": t.alu_imm_cycles_per_uop, "NOP_CYCLES": t.nop_cycles,
            "FINISH_CYCLES": t.finish_cycles, "REQUANT_PIPELINE_DEPTH": t.requant_pipeline_depth}


# The CTRL fields vdla_requant.sv implements, as (name, signed): the right shift (unsigned), the
# table bit, and the zero point and the clip bounds (signed). Their positions and widths come
# from the statement.
_REQUANT_CTRL = (("shift", False), ("table", False), ("zero", True), ("lo", True), ("hi", True))


def _requant() -> dict[str, int]:
    """The requantizer (vdla.hw.requantizer): register indices (SETQ's destination), the
    multiplier's width, CTRL's fields."""
    fields = tuple((name, signed) for name, _, _, signed in requantizer.CTRL_FIELDS)
    if fields != _REQUANT_CTRL:
        raise ValueError(f"vdla.hw.requantizer.CTRL_FIELDS {fields} are not the fields the RTL implements "
                         f"{_REQUANT_CTRL}: change vdla_requant.sv with them")
    p = {"REQUANT_REGS": len(requantizer.REGISTERS),
         "REQUANT_INDEX_BITS": max(1, (len(requantizer.REGISTERS) - 1).bit_length())}
    p.update({f"REQUANT_{name.upper()}": index for index, name in enumerate(requantizer.REGISTERS)})
    p["REQUANT_MUL_BITS"] = requantizer.MUL_BITS
    for name, lsb, width, _ in requantizer.CTRL_FIELDS:
        p[f"REQUANT_{name.upper()}_LSB"] = lsb
        p[f"REQUANT_{name.upper()}_W"] = width
    return p


def _axi() -> dict[str, int]:
    return {"AXI_ADDR_BITS": AXI_ADDR_BITS, "AXI_LEN_BITS": AXI_LEN_BITS, "AXI_MAX_BEATS": AXI_MAX_BEATS,
            "AXI_BOUNDARY_BYTES": AXI_BOUNDARY_BYTES, "LOG_AXI_BOUNDARY_BYTES": _log2(AXI_BOUNDARY_BYTES),
            "AXI_RESP_BITS": AXI_RESP_BITS, "AXI_SIZE_BITS": AXI_SIZE_BITS, "AXI_BURST_BITS": AXI_BURST_BITS}


def _registers() -> dict[str, int]:
    p = {"REG_ADDR_BITS": regmap.ADDR_BITS, "REG_BITS": regmap.REG_BITS, "REG_BYTES": regmap.REG_BITS // 8,
         "LOG_REG_BYTES": _log2(regmap.REG_BITS // 8), "NUM_COUNTERS": len(regmap.COUNTERS)}
    p.update({f"CTRL_{name}_BIT": _log2(mask) for name, mask in regmap.CONTROL_BITS.items()})
    p.update({f"{name}_BIT": _log2(mask) for name, mask in _error_bits().items()})
    p["ERR_W"] = max(_log2(mask) for mask in regmap.ERROR_CAUSES) + 1
    # counter k is read at BUSY_LOAD + 4k (regmap.COUNTERS order)
    p.update({f"CNT_{name}": k for k, name in enumerate(regmap.COUNTERS)})
    return p


def localparams(config) -> dict[str, int]:
    """The package's integer localparams by name: what a width in the bundle tables means for
    `config`, for generators that write plain Verilog (vdla.hw.board_wrapper)."""
    return {**_sizes(config), **_timing(config), **_requant(), **_axi(), **_registers()}


def _error_bits() -> dict[str, int]:
    names = {getattr(regmap, n): n for n in dir(regmap) if n.startswith("ERR_")}
    return {names[mask]: mask for mask in regmap.ERROR_CAUSES}


# ---- the ISA --------------------------------------------------------------------------
def _enum(enum: type[IntEnum], type_name: str, prefix: str, width: int) -> str:
    if max(enum) >= 1 << width:
        raise ValueError(f"{enum.__name__} {max(enum).name} = {int(max(enum))} does not fit its {width}-bit field")
    members = ", ".join(f"{prefix}_{m.name} = {width}'d{int(m)}" for m in enum)
    return f"  typedef enum logic [{width - 1}:0] {{{members}}} {type_name};"


def _field_params(prefix: str, layout) -> list[str]:
    lines = []
    for f in layout:
        name = f"{prefix}_{f.name.upper()}"
        lines.append(f"  localparam int {name}_LSB = {f.lsb};")
        lines.append(f"  localparam int {name}_W = {f.width};")
    return lines


def _struct(type_name: str, layout, total: int, types: dict[str, str]) -> list[str]:
    """A packed struct laying out `layout` in `total` bits, MSB first; gaps and the unused top
    become `unused_<lsb>` members, so the struct's bits are the encoding's."""
    def logic(name: str, width: int) -> str:
        return f"logic {name};" if width == 1 else f"logic [{width - 1}:0] {name};"

    members, pos = [], 0
    for f in sorted(layout, key=lambda f: f.lsb):
        if f.lsb > pos:
            members.append(logic(f"unused_{pos}", f.lsb - pos))
        members.append(f"{types[f.name]} {f.name};" if f.name in types else logic(f.name, f.width))
        pos = f.lsb + f.width
    if pos < total:
        members.append(logic(f"unused_{pos}", total - pos))
    return ([f"  typedef struct packed {{   // {total} bits, bit 0 last"]
            + [f"    {m}" for m in reversed(members)] + [f"  }} {type_name};"])


def _isa(config) -> list[str]:
    isa = config.isa
    header = {(f.name, f.lsb, f.width) for f in isa.finish}
    for name, layout in (("LOAD/STORE", isa.mem), ("GEMM", isa.gemm), ("ALU", isa.alu)):
        if not header <= {(f.name, f.lsb, f.width) for f in layout}:
            raise ValueError(f"the {name} format does not start with the common header the RTL decodes "
                             f"before knowing the opcode")
    widths = {field: next(f.width for f in isa.mem + isa.alu if f.name == field) for *_, field in ENUMS}
    lines = [_enum(enum, type_name, prefix, widths[field]) for enum, type_name, prefix, field in ENUMS]
    for prefix, layout in (("HDR", isa.finish), ("MEM", isa.mem), ("GEMM", isa.gemm), ("ALU", isa.alu),
                           ("UOP", isa.uop)):
        lines += _field_params(prefix, layout)
    types = {field: type_name for _, type_name, _, field in ENUMS}
    for type_name, layout in (("insn_hdr_t", isa.finish), ("mem_insn_t", isa.mem), ("gemm_insn_t", isa.gemm),
                              ("alu_insn_t", isa.alu)):
        lines += _struct(type_name, layout, INSN_BITS, types)
    lines += ["  // one instruction word, read as any format (FINISH is the header alone)",
              "  typedef union packed {", "    insn_hdr_t hdr;", "    mem_insn_t mem;", "    gemm_insn_t gemm;",
              "    alu_insn_t alu;", "  } insn_t;"]
    lines += _struct("uop_t", isa.uop, UOP_BITS, {})
    return lines


# ---- AXI bundles --------------------------------------------------------------------------
def _bundle_structs(stem: str, signals) -> list[str]:
    lines = []
    for suffix, from_master in (("req", True), ("rsp", False)):
        members = [(name, width) for name, width, by_master, used in signals if used and by_master == from_master]
        lines.append("  typedef struct packed {")
        lines += [f"    logic {name};" if width == "1" else f"    logic [{width}-1:0] {name};"
                  for name, width in members]
        lines.append(f"  }} {stem.lower()}_{suffix}_t;")
    return lines


def _bundle_macros(stem: str, signals, role: str) -> list[str]:
    """`VDLA_<stem>_PORTS(p)`: the flat ports p_<signal> as vdla_top declares them (each
    followed by a comma: not the last ports of a list). `VDLA_<stem>_CONNECT(p, req, rsp)`:
    drives the ports from / the structs from the ports, inside vdla_top."""
    ports, connect = [], []
    for name, width, by_master, used in signals:
        outward = by_master == (role == "master")   # vdla_top drives the port
        vector = "" if width == "1" else f"[{width}-1:0] "
        ports.append(f"  {'output' if outward else 'input '} logic {vector}p``_{name},")
        struct = "req" if by_master else "rsp"
        if not used:
            connect.append(f"  logic p``_unused_{name}; assign p``_unused_{name} = ^p``_{name};")
        elif outward:
            connect.append(f"  assign p``_{name} = {struct}.{name};")
        else:
            connect.append(f"  assign {struct}.{name} = p``_{name};")
    return ([f"`define VDLA_{stem}_PORTS(p) \\"] + [line + " \\" for line in ports[:-1]] + [ports[-1]]
            + [f"`define VDLA_{stem}_CONNECT(p, req, rsp) \\"] + [line + " \\" for line in connect[:-1]]
            + [connect[-1]])


# ---- the package ----------------------------------------------------------------------
def package_text(config) -> str:
    check_supported(config)
    lines = [f"// Generated by vdla.hw.rtl_params from config {config.name} (target {config.target}).",
             "// Do not edit: regenerate from the HwConfig.",
             "// The package states every fact of the config; no module uses all of them.",
             "/* verilator lint_off UNUSEDPARAM */",
             f"package {PACKAGE_NAME};"]
    for group in (_sizes(config), _timing(config), _requant(), _axi(), _registers()):
        lines += [f"  localparam int {k} = {v};" for k, v in group.items()]
    lines += [f"  localparam logic [AXI_RESP_BITS-1:0] AXI_RESP_OKAY = {AXI_RESP_BITS}'d{AXI_RESP_OKAY};",
              f"  localparam logic [AXI_BURST_BITS-1:0] AXI_BURST_INCR = {AXI_BURST_BITS}'d{AXI_BURST_INCR};",
              f"  localparam logic [REG_BITS-1:0] HW_ID = {regmap.REG_BITS}'h{config.hash32:08x};"]
    lines += _isa(config)
    for r in regmap.REGISTERS:
        lines.append(f"  localparam logic [REG_ADDR_BITS-1:0] REG_{r.name} = {regmap.ADDR_BITS}'h{r.offset:02x};")
    for stem, (signals, _) in BUNDLES.items():
        lines += _bundle_structs(stem, signals)
    lines.append("endpackage")
    lines.append("/* verilator lint_on UNUSEDPARAM */")
    lines.append("// The AXI bundles' flat ports (vdla_top's boundary) and their connection to the structs")
    for stem, (signals, role) in BUNDLES.items():
        lines += _bundle_macros(stem, signals, role)
    return "\n".join(lines) + "\n"


def write_package(config, directory: str | os.PathLike) -> str:
    """Write vdla_pkg.sv for `config` into `directory` (only if changed); return its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(os.fspath(directory), PACKAGE_FILE)
    text = package_text(config)
    try:
        with open(path) as f:
            if f.read() == text:
                return path
    except OSError:
        pass
    with open(path, "w") as f:
        f.write(text)
    return path
