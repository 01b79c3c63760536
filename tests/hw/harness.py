"""Run programs on the RTL and on the simulator and say precisely where they differ."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from vdla.driver.devices.rtl_bench import run_jobs
from vdla.hw.isa import Module
from vdla.simulator import Simulator

STAT_KEYS = ("busy_cycles", "token_stall_cycles", "fetch_stall_cycles", "gemm_uops", "alu_uops",
             "load_bytes", "store_bytes")


@dataclass
class Case:
    name: str
    dram: np.ndarray        # the DRAM image before the run (not modified)
    insn_addr: int
    insn_count: int
    insns: list | None = None
    out_elem_bytes: int = 16


@dataclass
class Outcome:
    case: Case
    sim_dram: np.ndarray
    sim: object             # SimResult
    rtl_dram: np.ndarray
    record: dict


def run_cases(config, cases: list[Case], workdir, trace: bool = False, netlist=None) -> list[Outcome]:
    """Simulate every case, then run them all on the RTL in one simulation (or on the Yosys
    netlist built in the folder `netlist`, vdla.hw.rtl.sim.netlist: one simulation each)."""
    os.makedirs(workdir, exist_ok=True)
    sims, launches = [], []
    for k, case in enumerate(cases):
        sim_dram = case.dram.copy()
        sim = Simulator(config).run(sim_dram, case.insn_addr, case.insn_count)
        sims.append((sim_dram, sim))
        path = os.path.join(workdir, f"dram{k}.bin")
        case.dram.tofile(path)
        launches.append({"dram": path, "insn_addr": case.insn_addr, "insn_count": case.insn_count,
                         "max_cycles": 4 * sim.cycles + 10_000, "trace": trace})
    records = (run_jobs(config, launches, os.path.join(workdir, "sim")) if netlist is None
               else netlist_jobs(config, launches, os.path.join(workdir, "netlist"), netlist))
    return [Outcome(case, sim_dram, sim, np.fromfile(launch["dram"], dtype=np.uint8), record)
            for case, (sim_dram, sim), launch, record in zip(cases, sims, launches, records)]


def netlist_jobs(config, launches: list[dict], workdir, build_dir) -> list[dict]:
    """Each launch in a simulation of its own (the netlist has no sim_clear: only a fresh
    process starts it from zeroed SRAMs); one that stops the simulation is that launch's error."""
    records = []
    for k, launch in enumerate(launches):
        where = os.path.join(workdir, str(k))
        try:
            records += run_jobs(config, [launch], where, build_dir=build_dir)
        except RuntimeError as exc:
            records.append({"error": f"{exc}{_log_error(where)}", "cycles": None, "stats": None})
    return records


def _log_error(workdir) -> str:
    """The simulation log's last error line, if it has one."""
    try:
        with open(os.path.join(workdir, "sim.log")) as f:
            lines = [line.strip() for line in f if "Error" in line]
    except OSError:
        return ""
    return f": {lines[-1]}" if lines else ""


def compare_cases(config, cases: list[Case], workdir, netlist=None) -> list[str]:
    """All differences over `cases`; cases that differ are re-run traced to name the first
    instruction whose start cycle differs (on the RTL; the flat netlist cannot trace)."""
    outcomes = run_cases(config, cases, workdir, netlist=netlist)
    bad = [o.case for o in outcomes if problems(o)]
    if not bad:
        return []
    if netlist is not None:
        return [p for o in outcomes for p in problems(o)]
    traced = run_cases(config, bad, os.path.join(workdir, "traced"), trace=True)
    return [p for o in traced for p in problems(o)]


def first_data_difference(outcome: Outcome) -> str | None:
    a, b = outcome.sim_dram, outcome.rtl_dram
    if np.array_equal(a, b):
        return None
    diff = np.flatnonzero(a != b)
    at = int(diff[0])
    return (f"DRAM differs at {diff.size} bytes, first at 0x{at:x}: simulator {a[at]:#04x}, RTL {b[at]:#04x}"
            + _store_writing(outcome.case, at))


def _store_writing(case: Case, addr: int) -> str:
    """Name the last STORE whose rows cover `addr` (the DRAM write that went wrong)."""
    if not case.insns:
        return ""
    from vdla.hw.isa import MemInsn, Opcode
    last = None
    for i, insn in enumerate(case.insns):
        if isinstance(insn, MemInsn) and insn.opcode == Opcode.STORE and insn.x_size:
            eb = case.out_elem_bytes
            for y in range(insn.y_size):
                lo = (insn.dram_base + y * insn.x_stride) * eb
                if lo <= addr < lo + insn.x_size * eb:
                    last = i
    return "" if last is None else f" (written by STORE instruction {last}: {case.insns[last]})"


def problems(outcome: Outcome) -> list[str]:
    """Every way the RTL's launch differs from the simulator's, most telling first."""
    out = []
    rec, sim = outcome.record, outcome.sim
    if rec["error"]:
        out.append(f"RTL error: {rec['error']}")
    else:
        if rec["cycles"] != sim.cycles:
            out.append(f"cycles: simulator {sim.cycles}, RTL {rec['cycles']}" + first_timing_difference(outcome))
        expected = sim.stats.to_dict()
        for key in STAT_KEYS:
            if rec["stats"][key] != expected[key]:
                out.append(f"counter {key}: simulator {expected[key]}, RTL {rec['stats'][key]}")
    data = first_data_difference(outcome)
    if data:
        out.append(data)
    return [f"{outcome.case.name}: {p}" for p in out]


def first_timing_difference(outcome: Outcome) -> str:
    """With a traced run: the first instruction whose start cycle differs."""
    starts = outcome.record.get("starts")
    if not starts or outcome.case.insns is None:
        return " (run with trace=True to locate the first differing instruction)"
    modules = [insn.module() for insn in outcome.case.insns]
    seen = {m: 0 for m in Module}
    for i, m in enumerate(modules):
        rtl = starts[m.name.lower()]
        k = seen[m]
        seen[m] += 1
        want = int(outcome.sim.insn_times[i, 0])
        got = rtl[k] if k < len(rtl) else None
        if got != want:
            return (f"; first differing instruction {i} ({outcome.case.insns[i]}) on {m.name.lower()}: "
                    f"simulator starts it at cycle {want}, RTL at {got}")
    return ""
