"""`vdla tune MODEL.onnx --target vdla|cpu -o TUNING.json`: search the schedules of the model's
distinct kernels and write the best of each into a tuning log; `vdla compile --tuning
TUNING.json` applies it to this or any other model with the same kernels on the same hardware.

--target vdla: the accelerator's conv and dense kernels, measured on the cycle-exact simulator
in parallel (--cpu-kernels: the CPU kernels beside them too). --target cpu (host, or this
machine's triple): the CPU kernels whose schedules have knobs (direct, depthwise and Winograd
convolutions, dense), compiled in parallel and timed one at a time on this host."""
from __future__ import annotations

import sys

from ..options import OptionError


def add_parser(sub):
    p = sub.add_parser("tune", help="tune kernel schedules: VDLA's on the cycle-exact simulator, the CPU's on this "
                                    "host (vdla compile --tuning applies the log)")
    p.add_argument("model", help="ONNX model file")
    p.add_argument("-o", "--output", required=True, metavar="TUNING.json",
                   help="tuning log to write; the records already in it are kept, and its kernels not tuned again; "
                        "each kernel's record is added as its search ends (an interrupted run keeps them) and merged "
                        "with the file under TUNING.json.lock, so runs may share a log")
    p.add_argument("--target", default="vdla",
                   help="vdla: the accelerator's conv and dense schedules; cpu (or host, or this machine's triple): "
                        "the CPU kernels' schedules, timed on this host")
    p.add_argument("--hw-config", default=None, help="--target vdla: hardware config (preset name or JSON), default "
                                                     "pynq")
    p.add_argument("--trials", type=int, default=32,
                   help="schedules measured per kernel (default 32; one more where the fastest has two virtual "
                        "threads and its one-thread twin was not measured)")
    p.add_argument("--jobs", type=int, default=None,
                   help="processes: measuring on the simulator (--target vdla), compiling candidates (CPU kernels; "
                        "they are timed one at a time); default one per core")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU kernels: the threads they run with, as vdla compile --threads (default: every core)")
    p.add_argument("--cpu-kernels", action="store_true",
                   help="--target vdla: also tune the CPU kernels beside the accelerator (on this host)")
    p.add_argument("--calibrate", default=None, metavar="CALIB.npz",
                   help="--target vdla: calibration samples as for vdla compile (default: seeded random samples; the "
                        "layers and epilogue kinds records are keyed by do not depend on them)")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="fix a symbolic input shape (repeatable)")
    p.add_argument("--host-triple", default=None, metavar="TRIPLE",
                   help="--target vdla: the CPU beside the accelerator, as for vdla compile (it decides what is "
                        "offloaded)")
    p.add_argument("--vta-compat", action="store_true", help="tune the VTA-mode kernels (vdla compile --vta-compat)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search and of the probe data")
    p.add_argument("--retune", action="store_true", help="search kernels again that the log already has")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (there is none where stderr is not "
                                                                  "a terminal)")
    return p


def run(args) -> int:
    from .compile import _shape_arg
    shapes = dict(_shape_arg(s) for s in args.input_shape)
    progress = False if args.no_progress else None
    if args.target != "vdla":
        return _tune_cpu(args, shapes, progress)
    from vdla.compiler.tune import tune_model   # lazy: the runtime needs no compiler
    calibration = None
    if args.calibrate:
        import numpy as np
        with np.load(args.calibrate) as data:
            calibration = {k: data[k] for k in data.files}
    if args.cpu_kernels and args.host_triple:
        from vdla.compiler.tune.cpu_tune_model import tune_target
        tune_target(args.host_triple)       # refused unless it is this machine: its kernels are timed here
    summary = tune_model(args.model, args.hw_config or "pynq", trials=args.trials, jobs=args.jobs,
                         output=args.output, calibration=calibration, input_shapes=shapes,
                         vta_compat=args.vta_compat, host_triple=args.host_triple, seed=args.seed,
                         retune=args.retune, progress=progress, log=print)
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
    if args.cpu_kernels:
        from vdla.compiler.tune.cpu_tune_model import tune_cpu_kernels, tune_target, vdla_fallback_kernels
        target = tune_target(args.host_triple or "cpu", args.threads)
        kernels = vdla_fallback_kernels(args.model, args.hw_config or "pynq", calibration, shapes, args.vta_compat,
                                        args.seed)
        _report_cpu(args, tune_cpu_kernels(kernels, target, args.trials, args.jobs, args.output, args.seed,
                                           args.retune, progress, print))
    return 0


def _tune_cpu(args, shapes, progress) -> int:
    given = [flag for flag, on in (("--hw-config", args.hw_config), ("--calibrate", args.calibrate),
                                   ("--host-triple", args.host_triple), ("--vta-compat", args.vta_compat),
                                   ("--cpu-kernels", args.cpu_kernels)) if on]
    if given:
        raise OptionError(f"{', '.join(given)}: for --target vdla; --target {args.target} tunes the CPU kernels of a "
                          "CPU compile")
    from vdla.compiler.tune.cpu_tune_model import tune_cpu_model
    summary = tune_cpu_model(args.model, args.target, args.threads, shapes, trials=args.trials, jobs=args.jobs,
                             output=args.output, seed=args.seed, retune=args.retune, progress=progress, log=print)
    _report_cpu(args, summary)
    return 0


def _report_cpu(args, summary) -> None:
    from vdla.compiler.tune.cpu_search import MARGIN
    results = summary.results
    width = max([len(r.kernel.name) for r in results] + [6])
    print(f"{'CPU kernel':<{width}} {'nodes':>5} {'default ms':>10} {'tuned ms':>9} {'speedup':>8} {'trials':>6}  "
          "knobs")
    for r in results:
        if r.record is None:
            print(f"{r.kernel.name:<{width}} {len(r.kernel.nodes):>5}  not tuned: {r.problem}")
            continue
        rec = r.record
        knobs = "default" if rec.knobs == rec.default_knobs else _knobs(rec.knobs)
        print(f"{r.kernel.name:<{width}} {len(r.kernel.nodes):>5} {rec.default_ms:>10.4f} {rec.ms:>9.4f} "
              f"{rec.default_ms / rec.ms:>7.3f}x {'(log)' if r.reused else rec.trials:>6}  {knobs}")
        if r.mismatched:
            print(f"warning: {len(r.mismatched)} schedule(s) of {r.kernel.name} computed another output than the "
                  f"default schedule and were not recorded (a compiler bug; please report): {r.mismatched[0]}",
                  file=sys.stderr)
    done = [r for r in results if r.record is not None]
    default = sum(r.record.default_ms * len(r.kernel.nodes) for r in done)
    tuned = sum(r.record.ms * len(r.kernel.nodes) for r in done)
    ratio = f" ({default / tuned:.3f}x)" if tuned else ""
    t = summary.target
    print(f"CPU kernels (each times its nodes): {default:.3f} -> {tuned:.3f} ms{ratio} on {t.triple} "
          f"({t.cpu or 'generic'}, {t.threads} thread(s)); a record replaces a default only {MARGIN:.0%} faster in a "
          f"paired timing; {summary.trials} schedules measured in {summary.seconds:.1f} s; wrote {args.output} "
          f"({len(summary.log)} records)")


def _knobs(knobs) -> str:
    from dataclasses import asdict
    return " ".join(f"{k}={v}" for k, v in asdict(knobs).items())


def _print_table(summary) -> None:
    width = max([len(r.kernel.name) for r in summary.results] + [6])
    print(f"{'kernel':<{width}} {'nodes':>5} {'default':>12} {'tuned':>12} {'speedup':>8} {'trials':>7}")
    for r in summary.results:
        rec = r.record
        trials = "(log)" if r.reused else str(rec.trials)
        print(f"{r.kernel.name:<{width}} {len(r.kernel.nodes):>5} {rec.default_cycles:>12,} {rec.cycles:>12,} "
              f"{rec.default_cycles / rec.cycles:>7.3f}x {trials:>7}")
