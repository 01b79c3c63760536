"""ResNet-18's offloaded conv and dense layers (the test builder, 224x224, batch 1, pynq
config) tuned on the cycle-exact simulator with a fixed trial budget per layer, against the
default schedules lower_vdla compiles without a tuning log (the default knobs or their
one-thread twin, whichever is faster).

Prints one row per distinct layer (signature: shape, stride, padding, epilogue kind): the
nodes that share it, default and tuned cycles, speedup, the tuned cycles over the layer's
GEMM bound (one micro-op per cycle doing only useful work: the headroom left), schedules
measured, the default and tuned knobs. Totals count each layer once per node: the network's conv/dense accelerator cycles.
Exits 1 if any layer's tuned schedule is slower than its default (the tuner must never
record one). With --json the last line is one JSON object: default_cycles, tuned_cycles,
trials (schedules measured), tune_wall_s, trials_per_layer, jobs, layers (the rows).

    python benchmarks/tune_vdla.py [--trials 32] [--jobs N] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np

from e2e_cpu import _builders as model_builders
from results_file import save


def tune(trials: int, jobs: int, progress: bool) -> dict:
    from vdla.compiler.tune import tune_model
    from vdla.hw import load_config
    config = load_config("pynq")
    model = model_builders().resnet18()
    calib = {"input": np.random.default_rng(0).standard_normal((2, 1, 3, 224, 224)).astype(np.float32)}
    with tempfile.TemporaryDirectory() as d:
        summary = tune_model(model, config, trials=trials, jobs=jobs, output=os.path.join(d, "tuning.json"),
                             calibration=calib, progress=progress)
    rows = [{"layer": r.kernel.name, "nodes": len(r.kernel.nodes), "default_cycles": r.record.default_cycles,
             "tuned_cycles": r.record.cycles, "gemm_bound": r.kernel.spec.layer.gemm_bound(config),
             "trials": r.record.trials, "failed": r.failed,
             "mismatched": len(r.mismatched), "default_knobs": r.record.to_dict()["default_knobs"],
             "tuned_knobs": r.record.to_dict()["knobs"]} for r in summary.results]
    return {"default_cycles": sum(r["default_cycles"] * r["nodes"] for r in rows),
            "tuned_cycles": sum(r["tuned_cycles"] * r["nodes"] for r in rows),
            "trials": summary.trials, "tune_wall_s": round(summary.seconds, 1), "trials_per_layer": trials,
            "jobs": jobs, "layers": rows}


def _knobs(k: dict) -> str:
    if "tile_oc" in k:
        text = f"oc{k['tile_oc']} {k['tile_h']}x{k['tile_w']} ic{k['ic_chunk'] or 'all'} vt{k['vthreads']}"
        if k["vthreads"] > 1:
            text += f"/{k['vthread_axis']}"
        return text + (" px-outer" if k["order"] == "pixel_outer" else "")
    return f"m{k['tile_m']} n{k['tile_n']} k{k['k_chunk'] or 'all'} vt{k['vthreads']}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=32, help="schedules measured per layer")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="measuring processes")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    ap.add_argument("--results", metavar="FILE", help="also save the figures there, with this host (README's span: "
                                                       "benchmarks/results/tune_vdla.json, benchmarks/figures.py)")
    args = ap.parse_args(argv)
    f = tune(args.trials, args.jobs, progress=sys.stderr.isatty())
    if args.results:
        save(args.results, f)
    width = max(len(r["layer"]) for r in f["layers"])
    print(f"{'layer':<{width}} {'nodes':>5} {'default':>11} {'tuned':>11} {'speedup':>8} {'x bound':>8} {'trials':>6}  "
          f"{'default knobs':<26} tuned knobs")
    for r in f["layers"]:
        print(f"{r['layer']:<{width}} {r['nodes']:>5} {r['default_cycles']:>11,} {r['tuned_cycles']:>11,} "
              f"{r['default_cycles'] / r['tuned_cycles']:>7.3f}x {r['tuned_cycles'] / r['gemm_bound']:>8.2f} "
              f"{r['trials']:>6}  {_knobs(r['default_knobs']):<26} "
              f"{_knobs(r['tuned_knobs'])}")
    print(f"{'network (layer x nodes)':<{width}} {'':>5} {f['default_cycles']:>11,} {f['tuned_cycles']:>11,} "
          f"{f['default_cycles'] / f['tuned_cycles']:>7.3f}x {'':>8} {f['trials']:>6}")
    print(f"pynq config (1x16, 100 MHz) on the cycle-exact simulator; {args.trials} trials per layer on {args.jobs} "
          f"process(es) in {f['tune_wall_s']} s; every tuned schedule's output equals the default's bit for bit; "
          "channels count whole blocks of 16 (the first conv's 3 input channels are padded to 16)")
    worse = [r["layer"] for r in f["layers"] if r["tuned_cycles"] > r["default_cycles"]]
    if worse:
        print(f"error: tuned slower than the default on {', '.join(worse)}", file=sys.stderr)
    if args.json:
        print(json.dumps(f))
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
