"""Design-space exploration of ResNet-18 (224x224, batch 1, the test suite's builder) over a
board's sweep: --board pynq (the default) is benchmarks/dse_resnet18.json (BLOCK 8, 16 and 32,
BATCH 2, smaller buffers, a 128-bit bus, and 100 / 200 MHz clocks); kv260 and aup_zu3 are
dse_kv260.json and dse_aup_zu3.json (GEMM shapes and SRAMs around their presets, at 100 MHz).
Every point is compiled for the accelerator, simulated cycle-exactly, and synthesized with
Yosys with the flow of the board's part (one run per distinct RTL; a BLOCK 32 GEMM core makes
that one the slow part); points and syntheses are cached in --out, so a rerun only computes what
changed. Prints the table and the fastest point that fits the board's part, with its MobileNetV2
time (compiled and simulated for that config only). --json's last line is one JSON object:
points (each: id, label, config, status, cycles, ms, lut, ff, dsp, bram36, uram, fits_xc7z020,
fits_part, part_memory: the RAMB36 / URAM288 split it fits the part with, smallest_part,
synth_seconds: its Yosys run's, cached or not), base (the sweep's base config), pareto (the
points on the front of latency, LUT, FF, DSP, BRAM36 and URAM), png (the Pareto plots),
evaluated, synthesized, wall_s, board, part, fastest_fitting (the point with clock_mhz,
clock_basis, resnet18_ms and mobilenetv2_ms; null when none fits).

    python benchmarks/dse.py [--board pynq|kv260|aup_zu3] [--out DIR] [--workers N | --ray ADDRESS]
                             [--json] [--results FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from e2e_cpu import _builders as model_builders
from vdla.compiler.dse import explore, load_sweep, make_pool
from results_file import save

HERE = Path(__file__).resolve().parent
BOARD_SWEEPS = {"pynq": "dse_resnet18.json", "kv260": "dse_kv260.json", "aup_zu3": "dse_aup_zu3.json"}
SWEEP = HERE / BOARD_SWEEPS["pynq"]


def default_out(board: str = "pynq") -> Path:
    name = "dse-resnet18" if board == "pynq" else f"dse-{board}"
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "vdla" / name


def summary(row: dict) -> dict:
    config = {k: v for k, v in row["config"].items() if k not in ("timing", "TARGET")}
    return {"id": row["id"], "label": row["label"], "config": config, "status": row["status"],
            "cycles": row.get("cycles"), "ms": row.get("ms"),
            **{k: row.get(k) for k in ("lut", "ff", "dsp", "bram36", "uram", "synth_seconds")},
            "fits_xc7z020": row.get("fits_xc7z020"), "fits_part": row.get("fits_part"),
            "part_memory": row.get("part_memory"), "smallest_part": row.get("smallest_part")}


def mobilenetv2_time(config_doc: dict) -> dict:
    """MobileNetV2 (224x224) compiled for one config and simulated once: its cycles and ms."""
    from vdla.compiler.compile_model import compile_model
    from vdla.compiler.dse.point import sample_inputs, simulate
    from vdla.hw import load_config
    config = load_config(config_doc)
    model = model_builders().mobilenetv2()
    calibration, inputs = sample_inputs(model, None)
    artifact = compile_model(model, target="vdla", hw_config=config, calibration=calibration)
    figures = simulate(artifact, config, inputs)
    return {"cycles": figures["cycles"], "ms": figures["ms"]}


def fastest_summary(result) -> dict | None:
    """The board's fastest fitting point with its clock, ResNet-18 and MobileNetV2 times."""
    if result.fastest is None:
        return None
    row = result.row(result.fastest)
    mobilenet = mobilenetv2_time(row["config"])
    return {**summary(row), "clock_mhz": row["config"]["clock_mhz"],
            "clock_basis": row["clock_basis"], "resnet18_ms": row["ms"], "mobilenetv2_ms": mobilenet["ms"],
            "mobilenetv2_cycles": mobilenet["cycles"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--board", choices=sorted(BOARD_SWEEPS), default="pynq",
                    help="whose sweep (and default --out): pynq, kv260 or aup_zu3 (default pynq)")
    ap.add_argument("--out", default=None, help="folder for the table, plots and cache (default: per board)")
    ap.add_argument("--workers", type=int, default=None, help="local worker processes (default: the CPU cores)")
    ap.add_argument("--ray", default=None, metavar="ADDRESS", help='a Ray cluster ("local": one on this machine)')
    ap.add_argument("--sweep", default=None, help="sweep file (default: the board's, beside this script)")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    ap.add_argument("--results", metavar="FILE", help="also save that object there, with this host, and the "
                                                       "Pareto PNG beside it (README's DSE tables and plots: "
                                                       "benchmarks/results/dse_BOARD.json)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    model = model_builders().resnet18()
    sweep = load_sweep(args.sweep or str(HERE / BOARD_SWEEPS[args.board]))
    with make_pool(args.ray, args.workers) as pool:
        result = explore(model, sweep, args.out or str(default_out(args.board)), pool=pool)
    fastest = fastest_summary(result)
    wall = time.perf_counter() - started
    print("\n".join(result.summary_lines()))
    if fastest is not None:
        print(f"  MobileNetV2 on {fastest['id']}: {fastest['mobilenetv2_ms']:.2f} ms "
              f"({fastest['mobilenetv2_cycles']:,} cycles at {fastest['clock_mhz']} MHz, {fastest['clock_basis']})")
    print(f"wall {wall:.1f} s (the model built, the sweep explored)")
    points = [summary(r) for r in result.rows]
    figures = {"points": points, "pareto": [p for p in points if p["id"] in result.pareto],
               "png": result.files["png"], "evaluated": result.evaluated, "synthesized": result.synthesized,
               "wall_s": round(wall, 1), "board": args.board, "part": result.part, "fastest_fitting": fastest,
               "base": {k: v for k, v in sweep.base.to_dict().items() if k not in ("timing", "TARGET")}}
    if args.results:
        save(args.results, figures)
        shutil.copyfile(result.files["png"], Path(args.results).with_suffix(".png"))   # README shows it
    if args.json:
        print(json.dumps(figures))
    return 0 if all(r["status"] == "ok" and r["synth_status"] in ("ok", "unsupported") for r in result.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
