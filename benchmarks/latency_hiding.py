"""Latency hiding with virtual threads on the ResNet-18 C2 conv layer (1x64x56x56, 64 filters
3x3, pad 1, requantized on the ALU), on the cycle-exact simulator device.

The same hand schedule (tiles of `--tile-h` output rows, all channels, DMA padding) runs with
one virtual thread (load and compute of consecutive tiles alternate) and with two (the
tiles alternate between two SRAM slots and dependence tokens let loads of one overlap the
GEMMs of the other). Both results are checked against numpy. Figures are printed side by
side; with --json the last line is one JSON object:
cycles_1, cycles_2, util_1, util_2 (GEMM utilization 0..1), sim_cycles_per_s, wall_s.

    python benchmarks/latency_hiding.py [--config pynq] [--tile-h 2] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from vdla.driver.devices import SimulatorDevice
from vdla.driver.programs import Conv2dShape, conv2d_program, conv2d_reference
from vdla.driver.programs.layout import pack_activation, pack_conv_weight, unpack_activation
from vdla.driver.programs.workloads import RESNET18_C2, random_conv_layer
from vdla.driver.runtime import CommandQueue

RESNET18_CYCLES = 31e6   # one ResNet-18 inference on VTA (SPEC §8), for the simulator-speed estimate


def run_layer(device, x, w, req, virtual_threads: int, tile_h: int) -> dict:
    cfg = device.config
    x_p, w_p = pack_activation(x, cfg.batch, cfg.block), pack_conv_weight(w, cfg.block)
    s = Conv2dShape(x_p.shape[0], x_p.shape[1], x.shape[2], x.shape[3], w_p.shape[0], 3, 3, 1, 1)
    out_shape = (s.n, s.o, s.out_h, s.out_w, cfg.batch, cfg.block)
    xb = device.alloc(x_p.nbytes, align=cfg.inp_elem_bytes)
    wb = device.alloc(w_p.nbytes, align=cfg.wgt_elem_bytes)
    ob = device.alloc(int(np.prod(out_shape)), align=cfg.out_elem_bytes)
    device.write(xb, x_p)
    device.write(wb, w_p)
    cq = CommandQueue(device)
    t0 = time.perf_counter()
    conv2d_program(cq, s, xb, wb, ob, virtual_threads=virtual_threads, tile_h=tile_h, requant=req)
    t1 = time.perf_counter()
    result = cq.synchronize()
    t2 = time.perf_counter()
    y = unpack_activation(device.read(ob, np.int8, out_shape), x.shape[0], w.shape[0])
    insns = len(cq.last_stream)
    cq.close()
    for buf in (xb, wb, ob):
        device.free(buf)
    return dict(y=y, cycles=result.cycles, util=result.gemm_utilization, stats=result.stats,
                insns=insns, jit_s=t1 - t0, launch_s=t2 - t1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=None, help="hardware config (preset or JSON); default pynq")
    ap.add_argument("--tile-h", type=int, default=2, help="output rows per tile (both runs)")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    args = ap.parse_args(argv)

    start = time.perf_counter()
    device = SimulatorDevice(args.config)
    cfg = device.config
    x, w, req = random_conv_layer(0, **RESNET18_C2)
    expected = conv2d_reference(x, w, pad=1, requant=req)
    runs = {t: run_layer(device, x, w, req, t, args.tile_h) for t in (1, 2)}
    wall = time.perf_counter() - start
    for t, r in runs.items():
        if not np.array_equal(r["y"], expected):
            print(f"ERROR: {t} virtual thread(s): result differs from numpy", file=sys.stderr)
            return 1

    macs = 64 * 64 * 56 * 56 * 9
    print(f"ResNet-18 C2 conv 1x64x56x56 * 64x64x3x3 (pad 1, requant shift {req.shift}) on {cfg.name} "
          f"@ {cfg.clock_mhz} MHz, tile {args.tile_h} rows; both results equal numpy")
    header = f"{'':<28}{'1 virtual thread':>18}{'2 virtual threads':>19}{'ratio 1/2':>11}"
    print(header)
    r1, r2 = runs[1], runs[2]

    def row(name, a, b, fmt="{:,}", ratio=True):
        text = f"{name:<28}{fmt.format(a):>18}{fmt.format(b):>19}"
        if ratio:
            text += f"{a / b:>11.2f}" if b else f"{'-':>11}"
        print(text)
    row("cycles", r1["cycles"], r2["cycles"])
    row("GEMM utilization", r1["util"], r2["util"], "{:.1%}", ratio=False)
    row("GOPS", 2 * macs * cfg.clock_mhz / r1["cycles"] / 1e3, 2 * macs * cfg.clock_mhz / r2["cycles"] / 1e3,
        "{:.1f}")
    for module in ("load", "compute", "store"):
        row(f"{module} busy cycles", r1["stats"]["busy_cycles"][module], r2["stats"]["busy_cycles"][module])
        row(f"{module} token stall cycles", r1["stats"]["token_stall_cycles"][module],
            r2["stats"]["token_stall_cycles"][module])
    row("instructions", r1["insns"], r2["insns"])
    row("runtime JIT wall ms", 1e3 * r1["jit_s"], 1e3 * r2["jit_s"], "{:.1f}")
    row("simulator wall ms", 1e3 * r1["launch_s"], 1e3 * r2["launch_s"], "{:.1f}")
    sim_rate = (r1["cycles"] + r2["cycles"]) / (r1["launch_s"] + r2["launch_s"])
    print(f"simulator speed {sim_rate / 1e6:.2f} M cycles/s: a {RESNET18_CYCLES / 1e6:.0f} M-cycle ResNet-18 "
          f"inference would take ~{RESNET18_CYCLES / sim_rate:.1f} s; total wall {wall:.2f} s")
    print("published VTA figures for comparison (SPEC §8): 52% -> 74% and 70% -> 88% utilization")
    if args.json:
        print(json.dumps({"cycles_1": r1["cycles"], "cycles_2": r2["cycles"],
                          "util_1": round(r1["util"], 4), "util_2": round(r2["util"], 4),
                          "sim_cycles_per_s": round(sim_rate), "wall_s": round(wall, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
