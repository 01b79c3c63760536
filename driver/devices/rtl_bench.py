"""Inside the Verilator simulation: run a batch of launches on vdla_top through the control
sequence that a board uses (vdla.driver.control), with the AXI memory model as DRAM.

This module is a cocotb test module, started by `run_jobs` (host side) in a separate
simulator process. The job file (JSON, path in VDLA_RTL_JOB) names the config and, per
launch, a raw DRAM image file (memory-mapped and modified in place), the instruction
address and count and a cycle budget; the results file gets, per launch, the cycle
counter, the counters in SimStats form and any error. Every launch starts from reset with
zeroed SRAMs, as the simulator does.
"""
from __future__ import annotations

import json
import os
import time

import numpy as np

CLOCK_NS = 10   # simulation time only: cycles are what the benches compare


async def run_control(sequence, axil, dut):
    """Asynchronous executor of a vdla.driver.control sequence over the AXI-lite master."""
    from cocotb.triggers import ClockCycles, First, RisingEdge

    from vdla.hw import regmap

    from ..control import Read, WaitDone, Write
    answer = None
    while True:
        try:
            op = sequence.send(answer)
        except StopIteration as stop:
            return stop.value
        if isinstance(op, Read):
            answer = await axil.read(op.offset)
        elif isinstance(op, Write):
            await axil.write(op.offset, op.value)
            answer = None
        elif isinstance(op, WaitDone):
            if not int(dut.irq.value):
                done = RisingEdge(dut.irq)
                if op.max_cycles is None:
                    await done
                else:
                    fired = await First(done, ClockCycles(dut.clk, op.max_cycles + 1))
                    if fired is not done and not int(dut.irq.value):
                        answer = None
                        continue
            answer = await axil.read(regmap.OFFSET["CONTROL"])
        else:  # pragma: no cover
            raise TypeError(f"unknown control operation {op!r}")


async def _trace_starts(dut, starts: dict) -> None:
    """Record the cycle at which each module accepts (starts) each instruction, in order."""
    from cocotb.triggers import FallingEdge
    accepts = {"load": dut.u_load.accept, "compute": dut.u_compute.accept, "store": dut.u_store.accept}
    cycles, running = dut.u_ctrl.cycles, dut.u_ctrl.running
    while True:
        await FallingEdge(dut.clk)
        if int(running.value):
            for name, signal in accepts.items():
                if int(signal.value):
                    starts[name].append(int(cycles.value))


async def _reset(dut, cycles: int = 3):
    from cocotb.triggers import FallingEdge
    await FallingEdge(dut.clk)
    dut.rst.value = 1
    dut.sim_clear.value = 1
    await FallingEdge(dut.clk)
    dut.sim_clear.value = 0
    for _ in range(cycles):
        await FallingEdge(dut.clk)
    dut.rst.value = 0


def _cocotb_test():
    import cocotb

    @cocotb.test()
    async def run_launches(dut):
        from cocotb.clock import Clock
        from cocotb.simtime import convert

        from vdla.hw.config import HwConfig
        from vdla.hw.rtl.sim.axi_lite import AxiLiteMaster
        from vdla.hw.rtl.sim.axi_memory import AxiMemory

        from ..control import HardwareError, launch_sequence
        from ..device import DeviceError

        with open(os.environ["VDLA_RTL_JOB"]) as f:
            job = json.load(f)
        config = HwConfig.from_dict(job["config"])
        Clock(dut.clk, CLOCK_NS, unit="ns").start()
        period = int(convert(CLOCK_NS, "ns", to="step"))
        dut.rst.value = 1
        dut.sim_clear.value = 0
        axil = AxiLiteMaster(dut)
        results = []
        for launch in job["launches"]:
            dram = np.memmap(launch["dram"], dtype=np.uint8, mode="r+")
            memory = AxiMemory(dut, dram, config, period_steps=period)
            task = cocotb.start_soon(memory.run())
            await _reset(dut)
            t0 = time.perf_counter()
            record = {"cycles": None, "stats": None, "error": None, "error_cause": 0}
            tracer = None
            if launch.get("trace"):
                record["starts"] = {"load": [], "compute": [], "store": []}
                tracer = cocotb.start_soon(_trace_starts(dut, record["starts"]))
            try:
                counters = await run_control(
                    launch_sequence(config, launch["insn_addr"], launch["insn_count"], launch.get("max_cycles")),
                    axil, dut)
                record["cycles"], record["stats"] = counters.cycles, counters.stats()
            except HardwareError as exc:
                record.update(cycles=exc.result.cycles, stats=exc.result.stats(), error=str(exc),
                              error_cause=exc.cause, error_type="HardwareError")
            except DeviceError as exc:
                record.update(error=str(exc), error_type=type(exc).__name__)
            record["wall_s"] = time.perf_counter() - t0
            task.cancel()
            if tracer is not None:
                tracer.cancel()
            dram.flush()
            del dram
            results.append(record)
            with open(job["results"], "w") as f:   # rewritten each time: survives a crash
                json.dump(results, f)

    return run_launches


if os.environ.get("VDLA_RTL_JOB"):
    run_launches = _cocotb_test()


def run_jobs(config, launches: list[dict], workdir: str, build_root=None, build_dir=None) -> list[dict]:
    """Host side: run `launches` (dicts with dram path, insn_addr, insn_count, max_cycles)
    in one simulation of the (shared, cached) Verilator build; returns one record each.

    A launch with "trace": true also records, per module, the cycle each instruction
    started ("starts"), to locate the first instruction whose timing differs.
    build_dir: run this built design instead of the RTL (the Yosys netlist of
    vdla.hw.rtl.sim.netlist; it cannot trace)."""
    from vdla.hw.rtl.sim.build import build, run
    build_dir = build_dir or build(config, build_root)
    os.makedirs(workdir, exist_ok=True)
    job_path = os.path.join(workdir, "job.json")
    results_path = os.path.join(workdir, "results.json")
    if os.path.exists(results_path):
        os.remove(results_path)
    with open(job_path, "w") as f:
        json.dump({"config": config.to_dict(), "launches": launches, "results": results_path}, f)
    run(build_dir, __name__, {"VDLA_RTL_JOB": job_path}, workdir)
    try:
        with open(results_path) as f:
            results = json.load(f)
    except FileNotFoundError:
        results = []
    if len(results) != len(launches):
        raise RuntimeError(f"the RTL simulation ended after {len(results)} of {len(launches)} launches; "
                           f"see {os.path.join(workdir, 'sim.log')}")
    return results
