"""Timeline PNGs of ResNet-18's C2 conv layer (1x64x56x56, 64 filters 3x3, pad 1, requantized
on the ALU) with one and with two virtual threads, the same tiles, on the cycle-exact
simulator: the load / compute / store lanes over time with the token waits hatched (VTA's
latency-hiding figure). Both zoom panels show the same cycle window, so the pictures compare.
The outputs are checked against numpy. With --json the last line is one JSON object: per
thread count the cycles and each lane's busy and token-wait fractions, and the PNG paths.

    python benchmarks/timeline_vthreads.py [-o DIR] [--config pynq] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace

import numpy as np

from latency_hiding import c2_layer_for, run_layer
from results_file import save
from vdla.driver.devices import SimulatorDevice
from vdla.driver.timeline import Segment, auto_window, draw_timeline
from vdla.hw import DEFAULT_PRESET


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", default=".", help="folder for timeline_1vt.png and timeline_2vt.png")
    ap.add_argument("--config", default=DEFAULT_PRESET, help="hardware config (preset or JSON); default %(default)s")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    ap.add_argument("--results", metavar="FILE", help="also save the figures there (README's spans: "
                                                       "benchmarks/results/timeline_vthreads.json)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    device = SimulatorDevice(args.config, trace=True)
    cfg = device.config
    x, w, ep, expected, _, knobs = c2_layer_for(cfg)
    segments = {}
    for threads in (1, 2):
        run = run_layer(device, x, w, ep, replace(knobs, vthreads=threads))
        if not np.array_equal(run["y"], expected):
            print(f"ERROR: {threads} virtual thread(s): result differs from numpy", file=sys.stderr)
            return 1
        segments[threads] = Segment(f"C2 conv, {threads} virtual thread(s)", 0, run["cycles"], run["trace"])
    window = auto_window([segments[1]]) or (0, segments[1].cycles)
    figures = {}
    for threads, segment in segments.items():
        path = os.path.join(args.out, f"timeline_{threads}vt.png")
        lanes = draw_timeline([segment], path, f"ResNet-18 C2 conv 1x64x56x56 * 64x64x3x3, tiles {knobs.tile_oc} "
                              f"ch blocks x {knobs.tile_h} x {knobs.tile_w}, {threads} virtual thread(s), "
                              f"{cfg.name} @ {cfg.clock_mhz} MHz", cfg.clock_mhz, window=window)
        figures[f"{threads}vt"] = {"cycles": segment.cycles, "png": path,
                                   **{f"{lane}_{k}": round(v[k], 4) for lane, v in lanes.items()
                                      for k in ("busy", "wait")}}
        print(f"{threads} virtual thread(s): {segment.cycles:,} cycles; " + ", ".join(
            f"{lane} busy {v['busy']:.1%} token wait {v['wait']:.1%}" for lane, v in lanes.items()) + f" -> {path}")
    print(f"zoom window: cycles {window[0]:,} to {window[1]:,} in both pictures; both results equal numpy")
    if args.results:
        save(args.results, {k: {n: v for n, v in f.items() if n != "png"} for k, f in figures.items()})
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
