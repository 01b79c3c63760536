"""AXI-lite master for vdla_top's control block, driven and sampled at falling edges.

A write holds AW and W valid until the write response appears, a read holds AR valid until
read data appears; the control block accepts a request only while no response is pending,
so each request is taken exactly once.
"""
from __future__ import annotations

from cocotb.triggers import FallingEdge


class AxiLiteMaster:
    def __init__(self, dut, prefix: str = "s_axil"):
        self.dut = dut
        self.s = {name: getattr(dut, f"{prefix}_{name}") for name in (
            "awvalid", "awaddr", "wvalid", "wdata", "wstrb", "bvalid", "bready",
            "arvalid", "araddr", "rvalid", "rready", "rdata", "bresp", "rresp")}
        for name in ("awvalid", "wvalid", "bready", "arvalid", "rready", "awaddr", "araddr", "wdata"):
            self.s[name].value = 0
        self.s["wstrb"].value = 0xF

    async def write(self, offset: int, value: int) -> None:
        s = self.s
        await FallingEdge(self.dut.clk)
        s["awaddr"].value = offset
        s["wdata"].value = value & 0xFFFFFFFF
        s["awvalid"].value = 1
        s["wvalid"].value = 1
        while True:
            await FallingEdge(self.dut.clk)
            if int(s["bvalid"].value):
                break
        s["awvalid"].value = 0
        s["wvalid"].value = 0
        resp = int(s["bresp"].value)
        s["bready"].value = 1
        await FallingEdge(self.dut.clk)
        s["bready"].value = 0
        if resp:
            raise IOError(f"AXI-lite write to 0x{offset:02x} answered with response {resp}")

    async def read(self, offset: int) -> int:
        s = self.s
        await FallingEdge(self.dut.clk)
        s["araddr"].value = offset
        s["arvalid"].value = 1
        while True:
            await FallingEdge(self.dut.clk)
            if int(s["rvalid"].value):
                break
        s["arvalid"].value = 0
        value, resp = int(s["rdata"].value), int(s["rresp"].value)
        s["rready"].value = 1
        await FallingEdge(self.dut.clk)
        s["rready"].value = 0
        if resp:
            raise IOError(f"AXI-lite read of 0x{offset:02x} answered with response {resp}")
        return value
