"""Latency hiding with virtual threads on the ResNet-18 C2 conv layer (1x64x56x56, 64 filters
3x3, pad 1, requantized on the ALU), on the cycle-exact simulator device.

The layer is compiled by the VDLA backend twice with the same tiles (the default schedule's,
or `--tile-h` output rows): with one virtual thread (load and compute of consecutive tiles
alternate) and with two (each thread has its own SRAM slots; the compiler interleaves
their instructions and its dependence tokens let loads of one overlap the GEMMs of the
other). Both results are checked against numpy. Figures are printed side by
side; with --json the last line is one JSON object:
cycles_1, cycles_2, util_1, util_2 (GEMM utilization 0..1), sim_cycles_per_s, wall_s.

    python benchmarks/latency_hiding.py [--config pynq] [--tile-h N] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace

import numpy as np

from resnet18_convs import numpy_conv, random_layer
from vdla.compiler.topi.vdla import ConvLayer, Epilogue, compile_conv2d, default_conv_knobs, run_conv_program
from vdla.driver.devices import SimulatorDevice
from vdla.hw import DEFAULT_PRESET

RESNET18_CYCLES = 31e6   # one ResNet-18 inference on VTA (SPEC §8), for the simulator-speed estimate


def c2_layer_for(cfg, seed: int = 0):
    """ResNet-18's C2 conv (1x64x56x56, 64 filters 3x3, pad 1) on `cfg` with random int8 data:
    (x, w, its requantizing epilogue, numpy's result, the ConvLayer, the compiler's default knobs)."""
    x, w, shift = random_layer(seed, 64, 56, 64, 3)
    ep = Epilogue(shift=shift)
    layer = ConvLayer(1, 64 // cfg.block, 56, 56, 64 // cfg.block)
    return x, w, ep, numpy_conv(x, w, 1, 1, shift), layer, default_conv_knobs(cfg, layer, ep)


def run_layer(device, x, w, ep, knobs) -> dict:
    cfg = device.config
    layer = ConvLayer(1, 64 // cfg.block, 56, 56, 64 // cfg.block)
    t0 = time.perf_counter()
    prog, _ = compile_conv2d(cfg, layer, ep, knobs)
    t1 = time.perf_counter()
    y, result = run_conv_program(device, prog, layer, x, w, ep)
    t2 = time.perf_counter()
    return dict(y=y, cycles=result.cycles, util=result.gemm_utilization, stats=result.stats,
                insns=result.stats["insn_count"], compile_s=t1 - t0, launch_s=t2 - t1, trace=result.trace)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=DEFAULT_PRESET, help="hardware config (preset or JSON); default %(default)s")
    ap.add_argument("--tile-h", type=int, default=None, help="output rows per tile (both runs); "
                    "default: the compiler's choice")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    args = ap.parse_args(argv)

    start = time.perf_counter()
    device = SimulatorDevice(args.config)
    cfg = device.config
    x, w, ep, expected, _, knobs = c2_layer_for(cfg)
    if args.tile_h:
        knobs = replace(knobs, tile_h=args.tile_h)
    runs = {t: run_layer(device, x, w, ep, replace(knobs, vthreads=t)) for t in (1, 2)}
    wall = time.perf_counter() - start
    for t, r in runs.items():
        if not np.array_equal(r["y"], expected):
            print(f"ERROR: {t} virtual thread(s): result differs from numpy", file=sys.stderr)
            return 1

    macs = 64 * 64 * 56 * 56 * 9
    print(f"ResNet-18 C2 conv 1x64x56x56 * 64x64x3x3 (pad 1, requant shift {ep.shift}) on {cfg.name} "
          f"@ {cfg.clock_mhz} MHz, compiled tiles {knobs.tile_oc} channel blocks x {knobs.tile_h} x "
          f"{knobs.tile_w}; both results equal numpy")
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
    row("compile wall ms", 1e3 * r1["compile_s"], 1e3 * r2["compile_s"], "{:.1f}")
    row("runtime JIT + simulator wall ms", 1e3 * r1["launch_s"], 1e3 * r2["launch_s"], "{:.1f}")
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
