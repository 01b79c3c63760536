"""The distinct ResNet-18 conv layers after the stem, compiled by the VDLA backend of the
compiler, on the cycle-exact simulator: per layer cycles, GEMM utilization, the physical
bound (MACs / (BATCH x BLOCK x BLOCK) cycles) and today's hand-written program side by
side, each output checked against numpy.

Last line with --json: one JSON object with network_cycles, bound_cycles, ratio_to_bound,
util, min_layer_util (3x3 layers), mismatches, compile_s, sim_cycles_per_s, and the
hand-written programs' handwritten_cycles.

    python benchmarks/vdla_ops.py [--config pynq] [--json] [--no-handwritten]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from handwritten import Requant, run_conv2d
from resnet18_convs import LAYERS, numpy_conv, random_layer
from vdla.compiler.topi.vdla import ConvLayer, Epilogue, compile_conv2d, run_conv_program
from vdla.driver.devices import SimulatorDevice
from vdla.hw import DEFAULT_PRESET


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=DEFAULT_PRESET, help="hardware config (preset or JSON); default %(default)s")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    ap.add_argument("--no-handwritten", action="store_true", help="skip the hand-written programs")
    args = ap.parse_args(argv)
    device = SimulatorDevice(args.config, dram_bytes=1 << 26)
    cfg = device.config
    net = bound = gemm = hand = 0
    compile_s = sim_s = 0.0
    simulated = 0
    mismatches = 0
    min_util = 1.0
    print(f"ResNet-18 conv layers (batch 1) compiled for {cfg.name} @ {cfg.clock_mhz} MHz")
    print(f"{'layer':<26}{'x':>3}{'cycles':>12}{'bound':>11}{'ratio':>7}{'util':>7}{'hand-written':>14}"
          f"{'vs hand':>8}  knobs")
    for name, c, hw, o, k, stride, pad, repeat in LAYERS:
        x, w, shift = random_layer(len(name), c, hw, o, k)
        layer = ConvLayer(1, -(-c // cfg.block), hw, hw, -(-o // cfg.block), k, k, stride, (pad,) * 4)
        t0 = time.perf_counter()
        prog, knobs = compile_conv2d(cfg, layer, Epilogue(shift=shift))
        compile_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        y, result = run_conv_program(device, prog, layer, x, w, check_races=True)
        sim_s += time.perf_counter() - t0
        simulated += result.cycles
        if not np.array_equal(y, numpy_conv(x, w, stride, pad, shift)):
            mismatches += 1
            print(f"ERROR: {name} differs from numpy", file=sys.stderr)
        b = layer.gemm_bound(cfg)
        util = result.stats["gemm_uops"] / result.cycles
        if k == 3:
            min_util = min(min_util, util)
        hand_cycles = 0
        if not args.no_handwritten:
            _, hres = run_conv2d(device, x, w, stride, pad, virtual_threads=2, requant=Requant(shift=shift))
            hand_cycles = hres.cycles
            hand += repeat * hand_cycles
        net += repeat * result.cycles
        bound += repeat * b
        gemm += repeat * result.stats["gemm_uops"]
        kn = (f"oc{knobs.tile_oc} h{knobs.tile_h} w{knobs.tile_w} ic{knobs.ic_chunk or layer.c} "
              f"vt{knobs.vthreads}{knobs.vthread_axis if knobs.vthreads > 1 else ''}")
        print(f"{name:<26}{repeat:>3}{result.cycles:>12,}{b:>11,}{result.cycles / b:>7.2f}{util:>7.1%}"
              f"{hand_cycles:>14,}{(hand_cycles / result.cycles if hand_cycles else 0):>8.2f}  {kn}")
    rate = simulated / sim_s
    print(f"{'network':<29}{net:>12,}{bound:>11,}{net / bound:>7.2f}{gemm / net:>7.1%}{hand:>14,}"
          f"{(hand / net if hand else 0):>8.2f}")
    print(f"compile {compile_s:.2f} s for {len(LAYERS)} layers; simulator {rate / 1e6:.2f} M cycles/s; "
          f"{mismatches} mismatches against numpy")
    if args.json:
        print(json.dumps({"network_cycles": net, "bound_cycles": bound, "ratio_to_bound": round(net / bound, 4),
                          "util": round(gemm / net, 4), "min_layer_util": round(min_util, 4),
                          "mismatches": mismatches, "compile_s": round(compile_s, 3),
                          "sim_cycles_per_s": round(rate), "handwritten_cycles": hand}))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
