"""`vdla tune MODEL.onnx --target vdla -o TUNING.json`: search the schedules of the model's
distinct conv and dense kernels on the cycle-exact simulator (in parallel, with a progress
bar) and write the best of each into a tuning log; `vdla compile --tuning TUNING.json`
applies it to this or any other model with the same layers on the same hardware."""
from __future__ import annotations

import sys


def add_parser(sub):
    p = sub.add_parser("tune", help="tune VDLA schedules on the cycle-exact simulator (vdla compile --tuning "
                                    "applies the log)")
    p.add_argument("model", help="ONNX model file")
    p.add_argument("-o", "--output", required=True, metavar="TUNING.json",
                   help="tuning log to write; the records already in it are kept, and its kernels not tuned again")
    p.add_argument("--target", default="vdla",
                   help="vdla: the accelerator's conv and dense schedules (CPU kernels are not tuned)")
    p.add_argument("--hw-config", default=None, help="hardware config (preset name or JSON), default pynq")
    p.add_argument("--trials", type=int, default=32, help="schedules measured per kernel (default 32)")
    p.add_argument("--jobs", type=int, default=None, help="measuring processes (default: one per core)")
    p.add_argument("--calibrate", default=None, metavar="CALIB.npz",
                   help="calibration samples as for vdla compile (default: seeded random samples; the layers "
                        "and epilogue kinds records are keyed by do not depend on them)")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="fix a symbolic input shape (repeatable)")
    p.add_argument("--host-triple", default=None, metavar="TRIPLE",
                   help="the CPU beside the accelerator, as for vdla compile (it decides what is offloaded)")
    p.add_argument("--vta-compat", action="store_true", help="tune the VTA-mode kernels (vdla compile --vta-compat)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search and of the probe data")
    p.add_argument("--retune", action="store_true", help="search kernels again that the log already has")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (there is none where stderr is not "
                                                                  "a terminal)")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def run(args) -> int:
    from vdla.compiler.tune import tune_model   # lazy: the runtime needs no compiler

    from .compile import _shape_arg
    if args.target != "vdla":
        raise ValueError(f"--target {args.target}: vdla tune searches the accelerator's schedules (--target vdla); "
                         "CPU kernels keep their default schedules")
    calibration = None
    if args.calibrate:
        import numpy as np
        with np.load(args.calibrate) as data:
            calibration = {k: data[k] for k in data.files}
    shapes = dict(_shape_arg(s) for s in args.input_shape)
    summary = tune_model(args.model, args.hw_config or "pynq", trials=args.trials, jobs=args.jobs,
                         output=args.output, calibration=calibration, input_shapes=shapes,
                         vta_compat=args.vta_compat, host_triple=args.host_triple, seed=args.seed,
                         retune=args.retune, progress=False if args.no_progress else None, log=print)
    _print_table(summary)
    for r in summary.results:
        if r.mismatched:
            print(f"warning: {len(r.mismatched)} schedule(s) of {r.kernel.name} computed another output than the "
                  f"default schedule and were not recorded (a compiler bug; please report): {r.mismatched[0]}",
                  file=sys.stderr)
    default = sum(r.record.default_cycles * len(r.kernel.nodes) for r in summary.results)
    tuned = sum(r.record.cycles * len(r.kernel.nodes) for r in summary.results)
    ratio = f" ({default / tuned:.3f}x)" if tuned else ""
    print(f"model (each kernel times its nodes): {default:,} -> {tuned:,} cycles{ratio}; {summary.trials} "
          f"schedules measured in {summary.seconds:.1f} s; wrote {args.output} ({len(summary.log)} records)")
    return 0


def _print_table(summary) -> None:
    width = max([len(r.kernel.name) for r in summary.results] + [6])
    print(f"{'kernel':<{width}} {'nodes':>5} {'default':>12} {'tuned':>12} {'speedup':>8} {'trials':>7}")
    for r in summary.results:
        rec = r.record
        trials = "(log)" if r.reused else str(rec.trials)
        print(f"{r.kernel.name:<{width}} {len(r.kernel.nodes):>5} {rec.default_cycles:>12,} {rec.cycles:>12,} "
              f"{rec.default_cycles / rec.cycles:>7.3f}x {trials:>7}")
