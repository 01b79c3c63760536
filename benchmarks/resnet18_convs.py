"""Every ResNet-18 conv layer that VTA offloads (all but the first), compiled by the VDLA
backend with one and with two virtual threads (same tiles), on the cycle-exact simulator
device and checked against numpy.

Prints per-layer cycles and GEMM utilization and the whole-network totals side by side with
the single-virtual-thread schedule, and how fast the simulator ran (SPEC §8: VTA's RTL
simulation needed 228 s for one inference, its functional simulator 1 s). With --json the
last line is one JSON object: cycles_1, cycles_2, util_1, util_2, sim_cycles_per_s, wall_s.

    python benchmarks/resnet18_convs.py [--config pynq] [--no-check] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace

import numpy as np

from vdla.compiler.topi.vdla import ConvLayer, Epilogue, compile_conv2d, run_conv_program
from vdla.driver.devices import SimulatorDevice
from vdla.hw import DEFAULT_PRESET

# (name, C, H=W, O, kernel, stride, pad, how many times the layer occurs in the network)
LAYERS = [
    ("layer1 3x3 64->64", 64, 56, 64, 3, 1, 1, 4),
    ("layer2 3x3 64->128 /2", 64, 56, 128, 3, 2, 1, 1),
    ("layer2 1x1 64->128 /2", 64, 56, 128, 1, 2, 0, 1),
    ("layer2 3x3 128->128", 128, 28, 128, 3, 1, 1, 3),
    ("layer3 3x3 128->256 /2", 128, 28, 256, 3, 2, 1, 1),
    ("layer3 1x1 128->256 /2", 128, 28, 256, 1, 2, 0, 1),
    ("layer3 3x3 256->256", 256, 14, 256, 3, 1, 1, 3),
    ("layer4 3x3 256->512 /2", 256, 14, 512, 3, 2, 1, 1),
    ("layer4 1x1 256->512 /2", 256, 14, 512, 1, 2, 0, 1),
    ("layer4 3x3 512->512", 512, 7, 512, 3, 1, 1, 3),
]


def random_layer(seed, c, hw, o, k):
    """Random int8 data and a shift that keeps the int8 outputs spread over their range."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (1, c, hw, hw), dtype=np.int8)
    w = rng.integers(-128, 128, (o, c, k, k), dtype=np.int8)
    return x, w, max(int(np.log2(74.0 * 74.0 * np.sqrt(c * k * k) / 64.0)), 0)


def numpy_conv(x, w, stride, pad, shift):
    """The oracle: int8 conv (NCHW), arithmetic shift, clip to int8."""
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k = w.shape[2]
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    acc = np.einsum("nchwij,ocij->nohw", win, w.astype(np.int64)).astype(np.int32).astype(np.int64)
    return np.clip(acc >> shift, -128, 127).astype(np.int8)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=DEFAULT_PRESET, help="hardware config (preset or JSON); default %(default)s")
    ap.add_argument("--no-check", action="store_true", help="skip the numpy comparison")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    device = SimulatorDevice(args.config)
    cfg = device.config
    totals = {1: [0, 0], 2: [0, 0]}   # threads -> [cycles, gemm uops] over the whole network
    sim_s = 0.0
    simulated = 0                     # cycles actually simulated (each distinct layer once)
    print(f"ResNet-18 conv layers (batch 1) on {cfg.name} @ {cfg.clock_mhz} MHz")
    print(f"{'layer':<26}{'x':>3}{'cycles 1 vt':>13}{'util':>7}{'cycles 2 vt':>13}{'util':>7}{'ratio':>7}")
    for name, c, hw, o, k, stride, pad, repeat in LAYERS:
        x, w, shift = random_layer(len(name), c, hw, o, k)
        expected = None if args.no_check else numpy_conv(x, w, stride, pad, shift)
        layer = ConvLayer(1, -(-c // cfg.block), hw, hw, -(-o // cfg.block), k, k, stride, (pad,) * 4)
        prog2, knobs = compile_conv2d(cfg, layer, Epilogue(shift=shift))
        progs = {2: prog2, 1: compile_conv2d(cfg, layer, Epilogue(shift=shift), replace(knobs, vthreads=1))[0]}
        row = {}
        for t in (1, 2):
            t0 = time.perf_counter()
            y, result = run_conv_program(device, progs[t], layer, x, w)
            sim_s += time.perf_counter() - t0
            if expected is not None and not np.array_equal(y, expected):
                print(f"ERROR: {name} with {t} virtual thread(s) differs from numpy", file=sys.stderr)
                return 1
            row[t] = result
            simulated += result.cycles
            totals[t][0] += repeat * result.cycles
            totals[t][1] += repeat * result.stats["gemm_uops"]
        print(f"{name:<26}{repeat:>3}{row[1].cycles:>13,}{row[1].gemm_utilization:>7.1%}"
              f"{row[2].cycles:>13,}{row[2].gemm_utilization:>7.1%}{row[1].cycles / row[2].cycles:>7.2f}")
    wall = time.perf_counter() - start
    util = {t: totals[t][1] / totals[t][0] for t in (1, 2)}
    ms = {t: totals[t][0] / (cfg.clock_mhz * 1e3) for t in (1, 2)}
    print(f"{'network total':<29}{totals[1][0]:>13,}{util[1]:>7.1%}{totals[2][0]:>13,}{util[2]:>7.1%}"
          f"{totals[1][0] / totals[2][0]:>7.2f}")
    rate = simulated / sim_s
    print(f"one inference: {ms[1]:.1f} ms (1 vt) vs {ms[2]:.1f} ms (2 vt) of accelerator time")
    print(f"runtime + simulator: {simulated / 1e6:.1f} M cycles (each distinct layer once per schedule) in "
          f"{sim_s:.2f} s = {rate / 1e6:.2f} M cycles/s, so one {totals[2][0] / 1e6:.1f} M-cycle inference "
          f"simulates in ~{totals[2][0] / rate:.1f} s; total wall {wall:.2f} s"
          + ("" if args.no_check else "; all layers equal numpy"))
    if args.json:
        print(json.dumps({"cycles_1": totals[1][0], "cycles_2": totals[2][0], "util_1": round(util[1], 4),
                          "util_2": round(util[2], 4), "sim_cycles_per_s": round(rate),
                          "wall_s": round(wall, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
