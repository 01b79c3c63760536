"""The SystemVerilog package of the RTL, generated from a HwConfig (never written by hand).

`package_text(config)` returns `vdla_pkg.sv`: element sizes, SRAM depths, bus geometry,
timing parameters, every instruction and micro-op field position (from config.isa) and the
register offsets (from vdla.hw.regmap). `check_supported(config)` names the configurations
this RTL cannot build and why.
"""
from __future__ import annotations

import os

from . import regmap
from .isa import MemType

PACKAGE_NAME = "vdla_pkg"
PACKAGE_FILE = "vdla_pkg.sv"


def _log2(n: int) -> int:
    return n.bit_length() - 1


def check_supported(config) -> None:
    """Raise ValueError naming the first parameter this RTL implementation cannot realise."""
    t = config.timing
    bus = config.bus_bytes
    problems = []
    for what, nbytes in (("INP element", config.inp_elem_bytes), ("OUT element", config.out_elem_bytes),
                         ("ACC_8BIT element", config.batch * config.block)):
        if nbytes % bus:
            problems.append(f"{what} ({nbytes} B) is not a multiple of the bus width ({bus} B): "
                            "the DMA moves whole bus words per element")
    if bus > 16:
        problems.append(f"bus width {config.bus_width_bits} bits exceeds one instruction (128 bits); "
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
    if -(-t.fetch_burst_insns * 16 // bus) > 256:
        problems.append("a fetch burst must fit one AXI burst (256 beats)")
    if problems:
        raise ValueError(f"the RTL does not support config {config.name} ({config.target}): "
                         + "; ".join(problems))


def _fields(prefix: str, layout) -> list[str]:
    lines = []
    for f in layout:
        name = f"{prefix}_{f.name.upper()}"
        lines.append(f"  localparam int {name}_LSB = {f.lsb};")
        lines.append(f"  localparam int {name}_W = {f.width};")
    return lines


def package_text(config) -> str:
    check_supported(config)
    t = config.timing
    isa = config.isa
    bus = config.bus_bytes
    p = {
        "BATCH": config.batch, "BLOCK": config.block,
        "INP_ELEM_BITS": config.inp_elem_bytes * 8, "WGT_ELEM_BITS": config.wgt_elem_bytes * 8,
        "ACC_ELEM_BITS": config.acc_elem_bytes * 8, "OUT_ELEM_BITS": config.out_elem_bytes * 8,
        "UOP_DEPTH": config.uop_depth, "INP_DEPTH": config.inp_depth,
        "WGT_DEPTH": config.wgt_depth, "ACC_DEPTH": config.acc_depth, "OUT_DEPTH": config.out_depth,
        "LOG_UOP_DEPTH": _log2(config.uop_depth), "LOG_INP_DEPTH": _log2(config.inp_depth),
        "LOG_WGT_DEPTH": _log2(config.wgt_depth), "LOG_ACC_DEPTH": _log2(config.acc_depth),
        "BUS_BITS": config.bus_width_bits, "BUS_BYTES": bus, "LOG_BUS_BYTES": _log2(bus),
        "INP_BEATS": config.inp_elem_bytes // bus, "WGT_BEATS": config.wgt_elem_bytes // bus,
        "ACC_BEATS": config.acc_elem_bytes // bus, "OUT_BEATS": config.out_elem_bytes // bus,
        "ACC8_BEATS": config.batch * config.block // bus,
        "LOG_INP_BEATS": _log2(config.inp_elem_bytes // bus), "LOG_WGT_BEATS": _log2(config.wgt_elem_bytes // bus),
        "LOG_ACC_BEATS": _log2(config.acc_elem_bytes // bus), "LOG_OUT_BEATS": _log2(config.out_elem_bytes // bus),
        "LOG_ACC8_BEATS": _log2(config.batch * config.block // bus),
        "LOG_INP_ELEM_BYTES": _log2(config.inp_elem_bytes), "LOG_WGT_ELEM_BYTES": _log2(config.wgt_elem_bytes),
        "LOG_ACC_ELEM_BYTES": _log2(config.acc_elem_bytes), "LOG_OUT_ELEM_BYTES": _log2(config.out_elem_bytes),
        "LOG_ACC8_ELEM_BYTES": _log2(config.batch * config.block),
        "UOPS_PER_BEAT": bus // config.uop_elem_bytes, "LOG_UOPS_PER_BEAT": _log2(bus // config.uop_elem_bytes),
        "LOG_UOP_ROWS": _log2(config.uop_depth) - _log2(bus // config.uop_elem_bytes),
        "INSN_BEATS": 16 // bus, "LOG_INSN_BEATS": _log2(16 // bus),
        "DRAM_READ_LATENCY": t.dram_read_latency, "DRAM_WRITE_LATENCY": t.dram_write_latency,
        "FETCH_BURST_INSNS": t.fetch_burst_insns, "CMD_QUEUE_DEPTH": t.cmd_queue_depth,
        "TOKEN_QUEUE_DEPTH": t.token_queue_depth, "TOKEN_DELAY": t.token_delay,
        "DMA_SETUP_CYCLES": t.dma_setup_cycles, "GEMM_SETUP_CYCLES": t.gemm_setup_cycles,
        "GEMM_PIPELINE_DEPTH": t.gemm_pipeline_depth, "ALU_SETUP_CYCLES": t.alu_setup_cycles,
        "ALU_PIPELINE_DEPTH": t.alu_pipeline_depth, "ALU_TENSOR_CYCLES_PER_UOP": t.alu_tensor_cycles_per_uop,
        "ALU_IMM_CYCLES_PER_UOP": t.alu_imm_cycles_per_uop, "NOP_CYCLES": t.nop_cycles,
        "FINISH_CYCLES": t.finish_cycles,
        "REG_ADDR_BITS": regmap.ADDR_BITS,
        "NUM_COUNTERS": len(regmap.COUNTERS),
    }
    lines = [f"// Generated by vdla.hw.rtl_params from config {config.name} (target {config.target}).",
             "// Do not edit: regenerate from the HwConfig.",
             "// The package states every fact of the config; no module uses all of them.",
             "/* verilator lint_off UNUSEDPARAM */",
             f"package {PACKAGE_NAME};"]
    lines += [f"  localparam int {k} = {v};" for k, v in p.items()]
    lines.append(f"  localparam logic [31:0] HW_ID = 32'h{config.hash32:08x};")
    for mt in MemType:
        lines.append(f"  localparam logic [2:0] MEM_{mt.name} = 3'd{int(mt)};")
    lines += ["  localparam logic [2:0] OP_LOAD = 3'd0;", "  localparam logic [2:0] OP_STORE = 3'd1;",
              "  localparam logic [2:0] OP_GEMM = 3'd2;", "  localparam logic [2:0] OP_FINISH = 3'd3;",
              "  localparam logic [2:0] OP_ALU = 3'd4;",
              "  localparam logic [2:0] ALU_MIN = 3'd0;", "  localparam logic [2:0] ALU_MAX = 3'd1;",
              "  localparam logic [2:0] ALU_ADD = 3'd2;", "  localparam logic [2:0] ALU_SHR = 3'd3;",
              "  localparam logic [2:0] ALU_MUL = 3'd4;"]
    lines += _fields("MEM", isa.mem) + _fields("GEMM", isa.gemm) + _fields("ALU", isa.alu)
    lines += _fields("UOP", isa.uop)
    for r in regmap.REGISTERS:
        lines.append(f"  localparam logic [{regmap.ADDR_BITS - 1}:0] REG_{r.name} = {regmap.ADDR_BITS}'h{r.offset:02x};")
    for name in dir(regmap):
        if name.startswith("ERR_") and name != "ERROR_CAUSES":
            lines.append(f"  localparam int {name}_BIT = {getattr(regmap, name).bit_length() - 1};")
    lines.append("endpackage")
    lines.append("/* verilator lint_on UNUSEDPARAM */")
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
