"""The VDLA RTL: SystemVerilog sources (this folder) and their parameter package.

`source_files(config, gen_dir)` writes the generated `vdla_pkg.sv` for `config` into
`gen_dir` and returns every source in compile order. `sim` builds and runs the design
under Verilator with cocotb (imported lazily: it needs cocotb).
"""
from __future__ import annotations

import os
from pathlib import Path

from .. import rtl_params

RTL_DIR = Path(__file__).resolve().parent
TOP = "vdla_top"
# compile order: leaves first, the top last
SOURCES = ("vdla_sram.sv", "vdla_burst_len.sv", "vdla_cmd_fifo.sv", "vdla_token_queue.sv", "vdla_perf.sv",
           "vdla_issue.sv", "vdla_uop_loop.sv",
           "vdla_dma_rd.sv", "vdla_dma_wr.sv", "vdla_fetch.sv", "vdla_load.sv", "vdla_store.sv",
           "vdla_gemm.sv", "vdla_lut.sv", "vdla_alu_lane.sv", "vdla_alu.sv", "vdla_requant.sv", "vdla_compute.sv", "vdla_ctrl.sv", "vdla_top.sv")


def source_files(config, gen_dir: str | os.PathLike) -> list[Path]:
    package = Path(rtl_params.write_package(config, gen_dir))
    return [package] + [RTL_DIR / name for name in SOURCES]
