"""MobileNetV2's depthwise 3x3 layers on the cycle-exact simulator, two ways in the same process:
by DEPTHWISE rows (vdla.hw.depthwise: a micro-op per output and kernel row, two at stride 2) and
as GEMMs on diagonal weight blocks (a micro-op per tap, 1 useful product in BLOCK), both with the
models' epilogue on OUT's write-back requantizer; per layer the cycles of each, their ratio,
the GEMM bound (MACs / (BATCH x BLOCK x BLOCK)), micro-ops, and whether both outputs equal numpy.

Last line with --json: one JSON object with layers (name, rows_cycles, diagonal_cycles,
speedup, bound_cycles, rows_gemm_uops, diagonal_gemm_uops), total_rows_cycles,
total_diagonal_cycles, speedup and mismatches.

    python benchmarks/vdla_depthwise.py [--config pynq] [--json]
"""
from __future__ import annotations

import argparse
import json

import numpy as np

from vdla.compiler.topi.vdla import Epilogue, run_conv
from vdla.driver.devices import SimulatorDevice
from vdla.hw import DEFAULT_PRESET, load_config
from vdla.hw.requantizer import pack_ctrl, requantize

# MobileNetV2 (224x224): channels, input side and stride of each distinct depthwise layer, and
# how often the network has it
LAYERS = [(32, 112, 1, 1), (144, 56, 1, 1), (96, 112, 2, 1), (144, 56, 2, 1), (192, 28, 1, 2), (192, 28, 2, 1),
          (384, 14, 1, 4), (576, 14, 1, 2), (576, 14, 2, 1), (960, 7, 1, 3)]


def depthwise_reference(x, w, ep, bias, mult, stride=1):
    """numpy: the 3x3 depthwise conv (padding 1, `stride`) of x (1, C, H, W) int8 by w (C, 1, 3, 3),
    int32 accumulators, then vdla.hw's statement of the requantizer with ep's shift, zero and clip."""
    _, c, h, wd = x.shape
    oh, ow = (h - 1) // stride + 1, (wd - 1) // stride + 1
    padded = np.pad(x[0].astype(np.int64), ((0, 0), (1, 1), (1, 1)))
    acc = sum(padded[:, ky:ky + stride * (oh - 1) + 1:stride, kx:kx + stride * (ow - 1) + 1:stride]
              * w[:, 0, ky, kx, None, None].astype(np.int64) for ky in range(3) for kx in range(3))
    acc = ((acc + 2**31) % 2**32 - 2**31).transpose(1, 2, 0)              # (H, W, C) int32
    ctrl = pack_ctrl(ep.shift, ep.zero, ep.lo, ep.hi)
    return requantize(acc, bias, mult, ctrl).transpose(2, 0, 1)[None].astype(np.int8)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=DEFAULT_PRESET, help="hardware config (preset or JSON); default %(default)s")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    args = ap.parse_args(argv)
    config = load_config(args.config)
    rng = np.random.default_rng(0)
    ep = Epilogue(requantizer=True, shift=20, lo=0, hi=127)          # ReLU6-like clip, as the models
    print(f"MobileNetV2 depthwise 3x3 layers on {config.name} (cycles, one inference each)")
    print(f"{'layer':<16}{'x':>3}{'rows':>11}{'diagonal':>11}{'speedup':>9}{'bound':>9}{'rows/bound':>12}")
    rows_out, total = [], {"rows": 0, "diagonal": 0}
    mismatches = 0
    for c, side, stride, repeat in LAYERS:
        x = rng.integers(-128, 128, (1, c, side, side), dtype=np.int8)
        w = rng.integers(-128, 128, (c, 1, 3, 3), dtype=np.int8)
        bias = rng.integers(-3000, 3000, c, dtype=np.int32)
        mult = rng.integers(1 << 10, 1 << 14, c, dtype=np.int32)
        want = depthwise_reference(x, w, ep, bias, mult, stride)
        got = {}
        for way, rows in (("rows", True), ("diagonal", False)):
            dev = SimulatorDevice(config, dram_bytes=1 << 26)
            y, result, _ = run_conv(dev, x, w, stride, 1, ep, None, bias, None, True, scale=mult, rows=rows)
            mismatches += int(not np.array_equal(y, want))
            got[way] = result
            total[way] += repeat * result.cycles
        out_side = (side - 1) // stride + 1
        bound = c * out_side * out_side * 9 // (config.batch * config.block * config.block)
        r, d = got["rows"].cycles, got["diagonal"].cycles
        name = f"{c}x{side}x{side}/{stride}"
        print(f"{name:<16}{repeat:>3}{r:>11,}{d:>11,}{d / r:>8.2f}x{bound:>9,}{r / bound:>12.2f}")
        rows_out.append({"name": name, "repeat": repeat, "rows_cycles": r, "diagonal_cycles": d,
                         "speedup": round(d / r, 3), "bound_cycles": bound,
                         "rows_gemm_uops": got["rows"].stats["gemm_uops"],
                         "diagonal_gemm_uops": got["diagonal"].stats["gemm_uops"]})
    speedup = total["diagonal"] / total["rows"]
    print(f"{'network total':<19}{total['rows']:>11,}{total['diagonal']:>11,}{speedup:>8.2f}x")
    if mismatches:
        print(f"ERROR: {mismatches} outputs differ from numpy")
    if args.json:
        print(json.dumps({"layers": rows_out, "total_rows_cycles": total["rows"],
                          "total_diagonal_cycles": total["diagonal"], "speedup": round(speedup, 3),
                          "mismatches": mismatches}))
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
