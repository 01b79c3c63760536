"""Running the RTL under Verilator with cocotb: build, AXI memory model, AXI-lite master.

Only `build` is importable without a simulator running; `axi_memory` and `axi_lite` are
cocotb models used inside a simulation.
"""
