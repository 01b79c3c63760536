"""Design-space exploration of ResNet-18 (224x224, batch 1, the test suite's builder) over the
configurations of benchmarks/dse_resnet18.json: BLOCK 8, 16 and 32, BATCH 2, smaller buffers,
a 128-bit bus, and 100 / 200 MHz clocks. Every point is compiled for the accelerator,
simulated cycle-exactly, and synthesized with Yosys (one run per distinct RTL; the BLOCK 32
GEMM core makes that one the slow part); points and syntheses are cached in --out, so a
rerun only computes what changed. Prints the table; --json's last line is one JSON object:
points (each: id, config, status, cycles, ms, lut, ff, dsp, bram36, fits_xc7z020), pareto
(the points on the front of latency, LUT, FF, DSP and BRAM36), png (the Pareto plots),
evaluated, synthesized, wall_s.

    python benchmarks/dse.py [--out DIR] [--workers N | --ray ADDRESS] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from e2e_cpu import _builders as model_builders
from vdla.compiler.dse import explore, make_pool

HERE = Path(__file__).resolve().parent
SWEEP = HERE / "dse_resnet18.json"


def default_out() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "vdla" / "dse-resnet18"


def summary(row: dict) -> dict:
    config = {k: v for k, v in row["config"].items() if k not in ("timing", "TARGET")}
    return {"id": row["id"], "config": config, "status": row["status"], "cycles": row.get("cycles"),
            "ms": row.get("ms"), **{k: row.get(k) for k in ("lut", "ff", "dsp", "bram36")},
            "fits_xc7z020": row.get("fits_xc7z020")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(default_out()), help="folder for the table, plots and cache")
    ap.add_argument("--workers", type=int, default=None, help="local worker processes (default: the CPU cores)")
    ap.add_argument("--ray", default=None, metavar="ADDRESS", help='a Ray cluster ("local": one on this machine)')
    ap.add_argument("--sweep", default=str(SWEEP), help="sweep file (default: dse_resnet18.json beside this)")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    model = model_builders().resnet18()
    with make_pool(args.ray, args.workers) as pool:
        result = explore(model, args.sweep, args.out, pool=pool)
    wall = time.perf_counter() - started
    print("\n".join(result.summary_lines()))
    print(f"wall {wall:.1f} s (the model built, the sweep explored)")
    if args.json:
        points = [summary(r) for r in result.rows]
        print(json.dumps({"points": points, "pareto": [p for p in points if p["id"] in result.pareto],
                          "png": result.files["png"], "evaluated": result.evaluated,
                          "synthesized": result.synthesized, "wall_s": round(wall, 1)}))
    return 0 if all(r["status"] == "ok" and r["synth_status"] in ("ok", "unsupported") for r in result.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
