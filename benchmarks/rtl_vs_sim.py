"""The RTL under Verilator against the cycle-exact simulator: agreement and speed.

Runs `--programs` seeded random programs (vdla.simulator.random_program) and a compiled 3x3 conv
layer through the runtime on both. Every program's DRAM image after the run is compared
byte for byte and its cycle count (the RTL's CYCLES register against the simulator's
cycles); speed is simulated accelerator cycles per wall-clock second of each, side by side
(RTL: time inside the simulation process, AXI-lite control included, process start-up
excluded and reported separately). With --json the last line is one JSON object:
programs, data_mismatches, cycle_mismatches, cycle_max_rel_err, rtl_cycles_per_s,
sim_cycles_per_s, rtl_startup_s (per task), tasks, failed_tasks, hosts, design ("rtl" or
"yosys netlist"), and on the RTL conv_cycles, conv_rtl_cycles_per_s, conv_sim_cycles_per_s.

--netlist runs the random programs on the Yosys netlist instead of the RTL
(vdla.hw.rtl.sim.netlist: synth_xilinx up to its fine-grained mapping, with the DSP and RAM
primitives; one simulator process per program, the netlist has no sim_clear) and leaves
out the conv layer (the runtime's RtlDevice runs the RTL): it checks that the design the
resource figures come from behaves like the tested one.

The random programs run in this process by default; --workers N spreads them over local
processes and --ray ADDRESS over a Ray cluster ("local" starts one here), in chunks of
--chunk seeds, through the executor the DSE uses (vdla.compiler.dse.workers): a campaign of
many thousand programs goes to as many machines as the cluster has.

    python benchmarks/rtl_vs_sim.py [--config pynq] [--programs 200] [--ray ADDRESS | --workers N] [--netlist] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time

import numpy as np

from vdla.compiler.dse.workers import InlinePool, WorkerFailure, make_pool
from vdla.compiler.topi.vdla import ConvKnobs, ConvLayer, Epilogue, compile_conv2d
from vdla.driver.devices.rtl import RtlDevice
from vdla.driver.devices.rtl_bench import run_jobs
from vdla.driver.devices.simulator import SimulatorDevice
from vdla.driver.runtime import run_program
from vdla.driver.runtime.layout import pack_activation, pack_conv_weight
from vdla.hw import DEFAULT_PRESET, load_config
from vdla.hw.rtl.sim.build import build
from vdla.hw.rtl.sim.netlist import build_netlist
from vdla.simulator import Simulator
from vdla.simulator.random_program import describe_mismatch, random_program


def check_programs(seeds: list[int], common: dict) -> dict:
    """One task of the campaign: the random programs of `seeds` on the simulator and on the RTL
    (one Verilator process for all of them, built or reused on this machine; on the netlist one
    process each); what differed."""
    config = load_config(common["config"])
    netlist = build_netlist(config) if common.get("netlist") else None
    if netlist is None:
        build(config)
    progs, launches, expected = [], [], []
    sim_s = 0.0
    with tempfile.TemporaryDirectory(prefix="vdla-rtl-vs-sim-") as workdir:
        for seed in seeds:
            p = random_program(config, seed)
            dram = p.fresh_dram()
            t0 = time.perf_counter()
            result = Simulator(config).run(dram, p.insn_addr, p.insn_count)
            sim_s += time.perf_counter() - t0
            path = os.path.join(workdir, f"dram{seed}.bin")
            p.fresh_dram().tofile(path)
            progs.append(p)
            expected.append((dram, result.cycles))
            launches.append({"dram": path, "insn_addr": p.insn_addr, "insn_count": p.insn_count,
                             "max_cycles": 4 * result.cycles + 10_000})
        t0 = time.perf_counter()
        if netlist is None:
            records = run_jobs(config, launches, os.path.join(workdir, "sim"))
        else:
            records = [netlist_launch(config, launch, os.path.join(workdir, f"sim{k}"), netlist)
                       for k, launch in enumerate(launches)]
        process_s = time.perf_counter() - t0
        data_bad, cycle_bad, rel_err, rtl_s, cycles = [], [], 0.0, 0.0, 0
        for p, (dram, sim_cycles), launch, rec in zip(progs, expected, launches, records):
            got = np.fromfile(launch["dram"], dtype=np.uint8)
            problem = describe_mismatch(p, dram, got) if rec["error"] is None else f"RTL error: {rec['error']}"
            if problem:
                data_bad.append(f"seed {p.seed}: {problem}")
            if rec["cycles"] != sim_cycles:
                cycle_bad.append(f"seed {p.seed}: simulator {sim_cycles}, RTL {rec['cycles']}")
                rel_err = max(rel_err, abs((rec["cycles"] or 0) - sim_cycles) / sim_cycles)
            rtl_s += rec["wall_s"]
            cycles += sim_cycles
    return dict(programs=len(seeds), data_bad=data_bad, cycle_bad=cycle_bad, rel_err=rel_err, rtl_s=rtl_s,
                sim_s=sim_s, process_s=process_s, cycles=cycles, host=socket.gethostname())


def netlist_launch(config, launch: dict, workdir: str, netlist) -> dict:
    """One launch in a simulation of its own (only a fresh process starts the netlist from
    zeroed SRAMs); a simulation that stops is that launch's error."""
    try:
        return run_jobs(config, [launch], workdir, build_dir=netlist)[0]
    except RuntimeError as exc:
        return {"error": str(exc), "cycles": None, "stats": None, "wall_s": 0.0}


def random_programs(config, count: int, pool=None, chunk: int | None = None, netlist: bool = False) -> dict:
    """Seeds 0..count-1 in chunks over the pool (this process by default: one chunk), the
    same executor the DSE uses (vdla.compiler.dse.workers), then the figures of them all."""
    pool = pool or InlinePool()
    if chunk is None:   # one Verilator process per chunk: few chunks in one process, ~4 per worker in a pool
        chunk = count if pool.workers == 1 else max(1, -(-count // (4 * pool.workers)))
    chunks = [list(range(k, min(k + chunk, count))) for k in range(0, count, chunk)]
    parts, failures = [], []
    for index, outcome in pool.map(check_programs, chunks, {"config": config.to_dict(), "netlist": netlist}):
        if isinstance(outcome, WorkerFailure):
            failures.append(f"seeds {chunks[index][0]}..{chunks[index][-1]}: {outcome}")
        else:
            parts.append(outcome)
    data_bad = [line for part in parts for line in part["data_bad"]] + failures
    cycle_bad = [line for part in parts for line in part["cycle_bad"]]
    rtl_s, sim_s = sum(p["rtl_s"] for p in parts), sum(p["sim_s"] for p in parts)
    cycles = sum(p["cycles"] for p in parts)
    return dict(programs=sum(p["programs"] for p in parts), data_mismatches=len(data_bad),
                cycle_mismatches=len(cycle_bad), cycle_max_rel_err=max([p["rel_err"] for p in parts], default=0.0),
                rtl_cycles_per_s=cycles / rtl_s if rtl_s else 0.0, sim_cycles_per_s=cycles / sim_s if sim_s else 0.0,
                rtl_startup_s=max(sum(p["process_s"] for p in parts) - rtl_s, 0.0) / max(len(parts), 1),
                cycles=cycles, tasks=len(chunks), failed_tasks=len(failures),
                hosts=len({p["host"] for p in parts}), details=(data_bad + cycle_bad)[:5])


def conv_layer(config) -> dict:
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 32, 14, 14), dtype=np.int8)
    w = rng.integers(-128, 128, (32, 32, 3, 3), dtype=np.int8)
    layer = ConvLayer(1, -(-32 // config.block), 14, 14, -(-32 // config.block))
    prog, _ = compile_conv2d(config, layer, Epilogue(shift=9), ConvKnobs(1, 4, 14, 0, 2, "oc"))
    inputs = [pack_activation(x, config.batch, config.block), pack_conv_weight(w, config.block)]
    out = {}
    for name, make in (("rtl", RtlDevice), ("sim", SimulatorDevice)):
        with make(config) as device:
            t0 = time.perf_counter()
            y, result = run_program(device, prog, inputs)
            wall = time.perf_counter() - t0
            if name == "rtl":
                wall = device.last_record["wall_s"]
        out[name] = (y, result.cycles, wall)
    (y_r, c_r, s_r), (y_s, c_s, s_s) = out["rtl"], out["sim"]
    return dict(conv_cycles=c_s, conv_cycle_match=c_r == c_s, conv_data_match=bool(np.array_equal(y_r, y_s)),
                conv_rtl_cycles_per_s=c_r / s_r, conv_sim_cycles_per_s=c_s / s_s)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=DEFAULT_PRESET, help="hardware config (preset or JSON); default %(default)s")
    ap.add_argument("--programs", type=int, default=200, help="random programs to compare")
    ap.add_argument("--ray", default=None, metavar="ADDRESS",
                    help='spread the random programs over a Ray cluster ("local": a Ray instance here); every '
                         "node needs vdla[dev,ray] and builds (or reuses) the RTL itself")
    ap.add_argument("--workers", type=int, default=None, help="local worker processes (default: this process)")
    ap.add_argument("--chunk", type=int, default=None, help="random programs per task (default: 4 tasks a worker)")
    ap.add_argument("--netlist", action="store_true",
                    help="run the random programs on the Yosys netlist (vdla.hw.rtl.sim.netlist) instead of the RTL; "
                         "no conv layer")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    args = ap.parse_args(argv)
    config = load_config(args.config)
    t0 = time.perf_counter()
    build_netlist(config) if args.netlist else build(config)
    build_s = time.perf_counter() - t0
    if args.ray and args.workers:
        ap.error("--workers sizes the local pool; with --ray the cluster's CPUs do the work")
    if (args.chunk is not None and args.chunk < 1) or (args.workers is not None and args.workers < 1):
        ap.error("--chunk and --workers must be at least 1")
    with make_pool(args.ray, args.workers or 1) as pool:
        figures = random_programs(config, args.programs, pool, args.chunk, args.netlist)
        where = pool.where
    if not args.netlist:
        figures.update(conv_layer(config))
    figures["build_or_cache_s"] = build_s
    figures["design"] = "yosys netlist" if args.netlist else "rtl"
    print(f"config {config.name} ({figures['design']}): {figures['programs']} random programs, "
          f"{figures['cycles']} cycles in all, "
          f"{figures['tasks']} task(s) on {where} ({figures['hosts']} host(s))")
    print(f"  data mismatches   {figures['data_mismatches']}")
    print(f"  cycle mismatches  {figures['cycle_mismatches']} (max relative error {figures['cycle_max_rel_err']:.3g})")
    for line in figures["details"]:
        print(f"    {line}")
    ratio = figures["sim_cycles_per_s"] / figures["rtl_cycles_per_s"] if figures["rtl_cycles_per_s"] else float("nan")
    print(f"  speed, cycles/s   {figures['design']} (Verilator+cocotb) {figures['rtl_cycles_per_s']:,.0f}   "
          f"simulator {figures['sim_cycles_per_s']:,.0f}   (simulator/{figures['design']} {ratio:.1f}x)")
    print(f"  {figures['design']} process start-up {figures['rtl_startup_s']:.2f} s; "
          f"build (or cache hit) {build_s:.1f} s")
    ok = figures["data_mismatches"] == 0 and figures["cycle_mismatches"] == 0
    if not args.netlist:
        print(f"3x3 conv 1x32x14x14 -> 32: {figures['conv_cycles']} cycles, "
              f"cycles equal: {figures['conv_cycle_match']}, data equal: {figures['conv_data_match']}")
        print(f"  speed, cycles/s   RTL {figures['conv_rtl_cycles_per_s']:,.0f}   "
              f"simulator {figures['conv_sim_cycles_per_s']:,.0f}")
        ok = ok and figures["conv_cycle_match"] and figures["conv_data_match"]
    if args.json:
        figures.pop("details")
        print(json.dumps(figures))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
