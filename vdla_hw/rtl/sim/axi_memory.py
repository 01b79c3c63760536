"""The DRAM behind vdla_top's four AXI4 masters, timed by the config's timing parameters.

The model of vdla_hw/timing.py: a read request accepted in cycle c can return its first
beat in cycle c + dram_read_latency, and then one bus word per cycle while the master holds
RREADY (requests of one master are served in order, back to back, any number outstanding;
a beat the master is not ready for is held); a write burst's response comes
dram_write_latency cycles after its last data beat. The memory is always ready (AR, AW, W),
so the master is what limits the requests in flight. Accesses outside
the DRAM image are answered with SLVERR, which the RTL turns into its DRAM error bit. A
burst that crosses a 4 KiB boundary (illegal in AXI4) fails the simulation.

Signals are sampled and driven at the falling edge: what the RTL shows in cycle c is read
mid-cycle, and what the model drives is seen by the RTL at the rising edge ending cycle c.
"""
from __future__ import annotations

from collections import deque

import numpy as np
from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge

from ...rtl_params import AXI_BOUNDARY_BYTES, AXI_RESP_OKAY as OKAY, AXI_RESP_SLVERR as SLVERR
READ_PORTS = ("m_fetch", "m_load", "m_comp")   # bits 0..2 of mem_req
AW_BIT, W_BIT = 1 << 3, 1 << 4


class _ReadPort:
    def __init__(self, dut, prefix: str):
        self.arvalid = getattr(dut, f"{prefix}_arvalid")
        self.araddr = getattr(dut, f"{prefix}_araddr")
        self.arlen = getattr(dut, f"{prefix}_arlen")
        self.rvalid = getattr(dut, f"{prefix}_rvalid")
        self.rdata = getattr(dut, f"{prefix}_rdata")
        self.rresp = getattr(dut, f"{prefix}_rresp")
        self.rlast = getattr(dut, f"{prefix}_rlast")
        self.rready = getattr(dut, f"{prefix}_rready")
        getattr(dut, f"{prefix}_arready").value = 1
        self.rvalid.value = 0
        self.rlast.value = 0
        self.rresp.value = 0
        self.rdata.value = 0
        self.bursts = deque()   # [first cycle a beat may come, byte address, beats, beats taken]
        self.driving = False


class AxiMemory:
    def __init__(self, dut, dram: np.ndarray, config, period_steps: int | None = None):
        if dram.dtype != np.uint8 or dram.ndim != 1:
            raise TypeError("the DRAM image must be a 1-D uint8 array")
        self.dut, self.dram, self.config = dut, dram, config
        t = config.timing
        self.read_latency, self.write_latency = t.dram_read_latency, t.dram_write_latency
        self.bus = config.bus_bytes
        self.ports = [_ReadPort(dut, p) for p in READ_PORTS]
        dut.m_store_awready.value = 1
        dut.m_store_wready.value = 1
        dut.m_store_bvalid.value = 0
        dut.m_store_bresp.value = 0
        self.aw = deque()        # [byte address, beats, beats received, error]
        self.b = deque()         # [cycle, resp]
        self.b_driving = False
        self.period = period_steps     # clock period in simulator steps: enables idle skipping
        self.cycle = 0
        self.reads = self.writes = 0   # beats served, for statistics

    def _check_burst(self, kind: str, addr: int, beats: int) -> None:
        if addr % self.bus or (addr % AXI_BOUNDARY_BYTES) + beats * self.bus > AXI_BOUNDARY_BYTES:
            raise AssertionError(f"cycle {self.cycle}: {kind} burst of {beats} beats at 0x{addr:x} is unaligned "
                                 "or crosses a 4 KiB boundary (AXI4 forbids it)")

    def _beat(self, addr: int) -> tuple[int, int]:
        if addr < 0 or addr + self.bus > self.dram.size:
            return 0, SLVERR
        return int.from_bytes(self.dram[addr:addr + self.bus].tobytes(), "little"), OKAY

    def _idle(self) -> bool:
        return not (self.b or self.aw or self.b_driving
                    or any(p.bursts or p.driving for p in self.ports))

    async def run(self) -> None:
        dut = self.dut
        mem_req = dut.mem_req
        falling = FallingEdge(dut.clk)
        while True:
            if self.period and self._idle() and not int(mem_req.value):
                # nothing in flight and no request: sleep until a master raises one
                await mem_req.value_change
            await falling
            if self.period:
                self.cycle = get_sim_time("step") // self.period
            else:
                self.cycle += 1
            c = self.cycle
            req = int(mem_req.value)
            for bit, port in enumerate(self.ports):
                if req >> bit & 1:
                    beats, addr = int(port.arlen.value) + 1, int(port.araddr.value)
                    self._check_burst(READ_PORTS[bit], addr, beats)
                    port.bursts.append([c + self.read_latency, addr, beats, 0])
                if port.bursts and port.bursts[0][0] <= c:
                    # RREADY comes from the master's registers, so its value now holds for
                    # the whole cycle: the beat driven now is taken at the edge iff it is 1
                    burst = port.bursts[0]
                    data, resp = self._beat(burst[1] + burst[3] * self.bus)
                    port.rdata.value = data
                    port.rresp.value = resp
                    port.rlast.value = int(burst[3] + 1 == burst[2])
                    port.rvalid.value = 1
                    port.driving = True
                    if int(port.rready.value):
                        burst[3] += 1
                        self.reads += 1
                        if burst[3] == burst[2]:
                            port.bursts.popleft()
                elif port.driving:
                    port.rvalid.value = 0
                    port.rlast.value = 0
                    port.driving = False
            if req & AW_BIT:
                addr, beats = int(dut.m_store_awaddr.value), int(dut.m_store_awlen.value) + 1
                self._check_burst("store", addr, beats)
                self.aw.append([addr, beats, 0, False])
            if req & W_BIT:
                if not self.aw:
                    raise AssertionError(f"cycle {c}: store W beat without a write address")
                burst = self.aw[0]
                addr = burst[0] + burst[2] * self.bus
                if 0 <= addr and addr + self.bus <= self.dram.size:
                    value = int(dut.m_store_wdata.value)
                    self.dram[addr:addr + self.bus] = np.frombuffer(value.to_bytes(self.bus, "little"), np.uint8)
                else:
                    burst[3] = True
                burst[2] += 1
                self.writes += 1
                if burst[2] == burst[1]:
                    if not int(dut.m_store_wlast.value):
                        raise AssertionError(f"cycle {c}: store burst of {burst[1]} beats ended without wlast")
                    self.aw.popleft()
                    self.b.append([c + self.write_latency, SLVERR if burst[3] else OKAY])
            if self.b and self.b[0][0] == c:
                dut.m_store_bresp.value = self.b.popleft()[1]
                dut.m_store_bvalid.value = 1
                self.b_driving = True
            elif self.b_driving:
                dut.m_store_bvalid.value = 0
                self.b_driving = False
